// A SamplingClient restored from a handle runs a heartbeat and a config refresh on JS
// timers. Closed, or garbage-collected without close(), it clears them, so a Node server
// that restores a handle per request does not pile up timers (or keep the process alive).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import v8 from 'node:v8';
import vm from 'node:vm';

v8.setFlagsFromString('--expose-gc');
const gc = vm.runInNewContext('gc');

const timers = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
const turn = () => new Promise((r) => setImmediate(r));

test('a restored SamplingClient clears its timers on close() and when garbage-collected', async () => {
  const tinker = await import('tinker-wasm');
  const json = (body) => new Response(JSON.stringify(body), { status: 200, headers: { 'content-type': 'application/json' } });
  const fetch = async (url) => (url.endsWith('/create_session') ? json({ session_id: 's-gc', type: 'create_session' }) : json({}));
  const svc = new tinker.ServiceClient({ apiKey: 'tml-gc-test', baseURL: 'http://127.0.0.1:9', fetch, heartbeat: false, telemetry: false });
  const maker = await svc.samplingClient('s-gc:sample:0', { base_model: 'Qwen/Qwen3-8B' });
  const handle = maker.getSamplerHandle();
  const base = timers();
  const opts = { apiKey: 'tml-gc-test', fetch, telemetry: false };

  const closed = tinker.SamplingClient.fromSamplerHandle(handle, opts);
  await turn();
  assert.ok(timers() >= base + 2, `heartbeat and refresh timers: ${timers()} (before ${base})`);
  await closed.close();
  await turn();
  assert.equal(timers(), base, 'close() cleared them');

  (() => tinker.SamplingClient.fromSamplerHandle(handle, opts))(); // dropped at once
  await turn();
  assert.ok(timers() >= base + 2, `timers of the dropped client: ${timers()}`);
  // FinalizationRegistry callbacks run in a later task after the collection.
  for (let i = 0; i < 100 && timers() > base; i++) {
    gc();
    await turn();
  }
  assert.equal(timers(), base, 'garbage collection cleared them');
  await svc.close();
});
