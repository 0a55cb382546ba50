// What the Node entry reads from the environment (as the Python SDK does): TINKER_TAGS is
// split on commas, deduplicated and sorted before it reaches create_session.
import { test } from 'node:test';
import assert from 'node:assert/strict';

test('TINKER_TAGS reach create_session deduplicated and sorted', async () => {
  process.env.TINKER_TAGS = 'zeta,alpha,zeta,mid';
  const tinker = await import('tinker-wasm');
  let sessionBody;
  const fetch = async (url, init) => {
    if (/\/client\/(dynamic_)?config$/.test(url)) return new Response('{}', { status: 200, headers: { 'content-type': 'application/json' } });
    if (url.endsWith('/create_session')) sessionBody = JSON.parse(new TextDecoder().decode(init.body));
    return new Response('{"detail":"stop here"}', { status: 400, headers: { 'content-type': 'application/json' } });
  };
  const c = new tinker.ServiceClient({ apiKey: 'tml-env-test', baseURL: 'http://127.0.0.1:9', fetch, heartbeat: false, telemetry: false, maxRetries: 0 });
  delete process.env.TINKER_TAGS;
  await assert.rejects(c.createLoraTrainingClient({ base_model: 'Qwen/Qwen3-8B' }), tinker.BadRequestError);
  assert.deepEqual(sessionBody.tags, ['alpha', 'mid', 'zeta']);
});
