// workerd entry: runs every cross-runtime case inside a fetch handler (timers, fetch
// and randomness are only allowed inside a request in Workers). `?module=lite` selects the
// lite cases; the bundle itself maps `tinker-wasm` to the module (run-workerd.mjs).
import suites from './cases/index.js';
import { runSuites } from './harness.js';

export default {
  async fetch(request, env) {
    const params = new URL(request.url).searchParams;
    const module = params.get('module') || 'full';
    const results = await runSuites(suites, { runtime: 'workerd', module, env }, { filter: params.get('filter'), module });
    return Response.json(results);
  },
};
