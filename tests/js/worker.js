// workerd entry: runs every cross-runtime case inside a fetch handler (timers, fetch
// and randomness are only allowed inside a request in Workers).
import suites from './cases/index.js';
import { runSuites } from './harness.js';

export default {
  async fetch(request, env) {
    const filter = new URL(request.url).searchParams.get('filter');
    const results = await runSuites(suites, { runtime: 'workerd', env }, { filter });
    return Response.json(results);
  },
};
