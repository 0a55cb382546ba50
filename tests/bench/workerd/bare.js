// The baseline of the workerd cold start: the same round trip to tinker-sim with plain
// fetch and no SDK, so the difference is what importing and using tinker-wasm costs.
export default {
  async fetch(request, env) {
    const r = await fetch(`${env.SIM_URL}/_sim/health`);
    return Response.json(await r.json());
  },
};
