// The client surface without a server: options validation, bad input, builders, error
// classes. Runs in Node, Chromium and workerd.
import * as tinker from 'tinker-wasm';
import { assert } from '../harness.js';

const key = 'tml-test-key';
// A fetch that fails the test if anything is sent.
const noFetch = () => Promise.reject(new Error('no request may be sent by these cases'));
const client = (extra = {}) => new tinker.ServiceClient({ apiKey: key, baseURL: 'http://127.0.0.1:9', fetch: noFetch, dangerouslyAllowBrowser: true, heartbeat: false, telemetry: false, ...extra });

export default {
  'error classes form the openai-node hierarchy'() {
    assert.ok(new tinker.NotFoundError('x') instanceof tinker.APIStatusError);
    assert.ok(new tinker.APIStatusError('x') instanceof tinker.APIError);
    assert.ok(new tinker.APITimeoutError('x') instanceof tinker.APIConnectionError);
    assert.ok(new tinker.RequestFailedError('x') instanceof tinker.TinkerError);
    assert.equal(new tinker.RateLimitError('x').name, 'RateLimitError');
  },

  'rejects bad client options by name'() {
    assert.throws(() => new tinker.ServiceClient({ apiKey: 'sk-wrong', fetch: noFetch, dangerouslyAllowBrowser: true }), (e) => e instanceof TypeError && e.field === 'apiKey');
    assert.throws(() => client({ maxRetry: 3 }), (e) => e instanceof TypeError && e.field === 'maxRetry' && /unknown option/.test(e.message));
    assert.throws(() => client({ timeout: -1 }), (e) => e instanceof RangeError && e.field === 'timeout');
    assert.throws(() => client({ baseURL: 'ftp://x' }), (e) => e.field === 'baseURL');
  },

  'options inherited from a prototype or given by class getters are read too'() {
    // A bad timeout is only seen if the inherited option is read.
    const proto = { apiKey: key, fetch: noFetch, dangerouslyAllowBrowser: true, timeout: -1 };
    assert.throws(() => new tinker.ServiceClient(Object.create(proto)), (e) => e instanceof RangeError && e.field === 'timeout');
    class Options {
      get apiKey() {
        return key;
      }
      get timeout() {
        return -1;
      }
      get fetch() {
        return noFetch;
      }
      get dangerouslyAllowBrowser() {
        return true;
      }
    }
    assert.throws(() => new tinker.ServiceClient(new Options()), (e) => e instanceof RangeError && e.field === 'timeout');
  },

  async 'refuses a browser without dangerouslyAllowBrowser'(ctx) {
    if (ctx.runtime !== 'browser') {
      // Elsewhere the option is not needed: a client made without it works.
      const c = new tinker.ServiceClient({ apiKey: 'tml-js-tests', baseURL: ctx.env.SIM_URL, heartbeat: false, telemetry: false });
      const caps = await c.getServerCapabilities();
      assert.ok(caps.supported_models.some((m) => m.model_name === 'Qwen/Qwen3-8B'));
      await c.close();
      return;
    }
    assert.throws(() => new tinker.ServiceClient({ apiKey: key, fetch: noFetch }), /dangerouslyAllowBrowser/);
  },

  async 'rejects bad training-client options before sending anything'() {
    const c = client();
    await assert.rejects(c.createLoraTrainingClient({ base_model: 'Qwen/Qwen3-8B', rank: 12 }), (e) => e instanceof RangeError && e.field === 'rank');
    await assert.rejects(c.createLoraTrainingClient({ base_model: 'Qwen/Qwen3-8B', rank: -1 }), (e) => e instanceof RangeError && e.field === 'rank');
    await assert.rejects(c.createLoraTrainingClient({ rank: 8 }), (e) => e instanceof TypeError && e.field === 'base_model');
    await assert.rejects(c.createLoraTrainingClient({ base_model: 'Qwen/Qwen3-8B', train_mlp: false, train_attn: false, train_unembed: false }), (e) => e instanceof RangeError);
    await assert.rejects(c.createLoraTrainingClient({ base_model: 'm', rnak: 8 }), (e) => e.field === 'rnak');
    await assert.rejects(c.createSamplingClient({ model_path: 'https://x' }), (e) => e.field === 'model_path');
    await assert.rejects(c.createSamplingClient({}), (e) => e.field === 'model_path');
    await assert.rejects(c.createTrainingClientFromState('tinker://run/sampler_weights/x'), (e) => e.field === 'path');
  },

  async 'an already aborted signal rejects with APIUserAbortError and sends nothing'() {
    const c = client();
    const ac = new AbortController();
    ac.abort();
    await assert.rejects(c.createLoraTrainingClient({ base_model: 'Qwen/Qwen3-8B' }, { signal: ac.signal }), tinker.APIUserAbortError);
    await assert.rejects(c.createLoraTrainingClient({ base_model: 'Qwen/Qwen3-8B' }, { signal: 'nope' }), (e) => e.field === 'signal');
  },

  async 'bad REST arguments are rejected before connecting'() {
    let calls = 0;
    const counting = () => {
      calls++;
      return Promise.reject(new TypeError('fetch failed'));
    };
    const rest = new tinker.RestClient({ apiKey: key, baseURL: 'http://127.0.0.1:9', fetch: counting, dangerouslyAllowBrowser: true, heartbeat: false, telemetry: false });
    await assert.rejects(rest.getTrainingRunByTinkerPath('not-a-path'), (e) => e instanceof TypeError && e.field === 'path');
    await assert.rejects(rest.deleteCheckpointFromTinkerPath('tinker://run/weights'), (e) => e instanceof TypeError && e.field === 'path');
    await assert.rejects(rest.setCheckpointTtlFromTinkerPath('tinker://run/weights/x', { ttl_seconds: -5 }), (e) => e instanceof RangeError && e.field === 'ttl_seconds');
    await assert.rejects(rest.listTrainingRunsPage({ limit: 0 }), (e) => e.field === 'limit');
    assert.equal(calls, 0);
  },

  async 'a request outliving the timeout option is aborted by the SDK, then retried'() {
    // Config requests answer; every other request hangs until its signal aborts it, which
    // only the SDK's request timeout (60 ms here) can do.
    let started = 0;
    let aborted = 0;
    const hanging = (url, init) => {
      if (/\/client\/(dynamic_)?config$/.test(String(url))) return Promise.resolve(new Response('{}', { status: 200, headers: { 'content-type': 'application/json' } }));
      assert.equal(aborted, started, 'the previous request was aborted before the next one started');
      started++;
      return new Promise((_, reject) => {
        init.signal.addEventListener('abort', () => {
          aborted++;
          reject(Object.assign(new Error('aborted by the SDK'), { name: 'AbortError' }));
        });
      });
    };
    const c = client({ fetch: hanging, timeout: 60, maxRetries: 1 });
    await assert.rejects(c.createLoraTrainingClient({ base_model: 'Qwen/Qwen3-8B' }), (e) => e instanceof tinker.APITimeoutError && /create_session timed out/.test(e.message));
    assert.equal(started, 2, 'one try and one retry');
    assert.equal(aborted, 2, 'both were aborted');
  },

  'a default header with a line break is refused by name'() {
    assert.throws(() => client({ defaultHeaders: { 'x-note': 'a\nb' } }), (e) => e instanceof TypeError && e.field === 'defaultHeaders.x-note' && /line break/.test(e.message));
    assert.throws(() => client({ defaultHeaders: { 'x note': 'b' } }), (e) => e instanceof TypeError && e.field === 'defaultHeaders.x note');
  },

  'builders produce wire-shaped data'() {
    const mi = tinker.ModelInput.fromInts([1, 2, 3]);
    assert.equal(mi.chunks[0].type, 'encoded_text');
    assert.deepEqual(mi.chunks[0].tokens, new Uint32Array([1, 2, 3]));
    const d = tinker.datumFromTokens([10, 11, 12, 13], { prompt_length: 2 });
    assert.deepEqual(d.model_input.chunks[0].tokens, new Uint32Array([10, 11, 12]));
    assert.deepEqual(d.loss_fn_inputs.target_tokens.data, new Int32Array([11, 12, 13]));
    assert.deepEqual(d.loss_fn_inputs.weights.data, new Float32Array([0, 1, 1]));
    assert.equal(d.loss_fn_inputs.target_tokens.dtype, 'int64');
    const t = tinker.TensorData.fromArray([1, 2, 3, 4], { dtype: 'int64', shape: [2, 2] });
    assert.deepEqual(t.shape, [2, 2]);
    assert.throws(() => tinker.TensorData.fromArray([1, 2, 3], { dtype: 'int64', shape: [2, 2] }), (e) => e instanceof RangeError && e.field === 'data.shape');
    assert.throws(() => tinker.ModelInput.fromInts([1, -2]), (e) => e instanceof RangeError && e.field === 'tokens[1]');
    assert.throws(() => tinker.ModelInput.fromInts([1, '2']), (e) => e instanceof TypeError && e.field === 'tokens[1]');
    assert.throws(() => tinker.datumFromTokens([1]), (e) => e instanceof RangeError);
  },
};
