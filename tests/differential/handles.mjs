// Sampler handles across SDKs, tinker-wasm side (driven by handles.py):
//
//   node tests/differential/handles.mjs   < {"handle", "apiKey", "prompt", "params"}
//
// Restores a SamplingClient from a handle the official Python SDK made, samples the
// prompt, and prints {"tokens", "handle"}: the restored client's own handle, for Python
// to restore in turn.
import * as tinker from 'tinker-wasm';

for (const v of ['TINKER_BASE_URL', 'TINKER_API_KEY']) delete process.env[v];
let input = '';
for await (const chunk of process.stdin) input += chunk;
const { handle, apiKey, prompt, params } = JSON.parse(input);
const sampler = tinker.SamplingClient.fromSamplerHandle(handle, { apiKey, heartbeat: false, telemetry: false });
const r = await sampler.sample({ prompt, sampling_params: params });
const own = sampler.getSamplerHandle();
await sampler.close();
process.stdout.write(JSON.stringify({ tokens: Array.from(r.sequences[0].tokens), baseModel: sampler.baseModel, handle: own }));
