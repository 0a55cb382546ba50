// workerd cold start (tests/bench/run.mjs): the first fetch creates a client, samples once
// from tinker-sim (env.SIM_URL) and answers. Importing the package instantiates its wasm.
import * as tinker from 'tinker-wasm';

export default {
  async fetch(request, env) {
    const svc = new tinker.ServiceClient({ apiKey: 'tml-bench', baseURL: env.SIM_URL });
    const s = await svc.createSamplingClient({ base_model: 'Qwen/Qwen3-8B' });
    const r = await s.sample({ prompt: [100, 200, 300, 400], sampling_params: { max_tokens: 4, seed: 0 } });
    await svc.close();
    return Response.json({ tokens: r.sequences[0].tokens.length });
  },
};
