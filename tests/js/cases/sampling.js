// Sampling end to end against tinker-sim, in Node, Chromium and workerd.
import * as tinker from 'tinker-wasm';
import { assert } from '../harness.js';

const service = (ctx, extra = {}) =>
  new tinker.ServiceClient({ apiKey: 'tml-js-tests', baseURL: ctx.env.SIM_URL, dangerouslyAllowBrowser: true, heartbeat: false, telemetry: false, ...extra });

async function admin(ctx, path, body) {
  const r = await fetch(`${ctx.env.SIM_URL}/_sim/${path}`, body ? { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) } : undefined);
  if (!r.ok) throw new Error(`admin ${path}: ${r.status} ${await r.text()}`);
  return r.json();
}

const A = 4242;
const B = 777;

async function frequencyOfB(sampler) {
  const r = await sampler.sample({ prompt: [A], num_samples: 64, sampling_params: { max_tokens: 1, seed: 1 } });
  return r.sequences.filter((s) => s.tokens[0] === B).length / 64;
}

export default {
  async 'default transport: node:http(s) in Node and Deno, the global fetch elsewhere; options.fetch wins'(ctx) {
    const real = globalThis.fetch;
    let calls = 0;
    globalThis.fetch = (...args) => {
      calls += 1;
      return real(...args);
    };
    try {
      const once = async (extra) => {
        const svc = service(ctx, extra);
        const s = await svc.createSamplingClient({ base_model: 'Qwen/Qwen3-8B' });
        const r = await s.sample({ prompt: [1, 2, 3], sampling_params: { max_tokens: 2, seed: 5 } });
        assert.equal(r.sequences.length, 1);
        await svc.close();
      };
      await once({});
      // Node's and Deno's entries send over node:http keep-alive agents (pkg/node-transport.js):
      // less CPU per request than their fetch. Browsers, Workers and Bun use their fetch.
      if (ctx.runtime === 'node' || ctx.runtime === 'deno') assert.equal(calls, 0, `the ${ctx.runtime} entry used the global fetch`);
      else assert.ok(calls >= 4, `global fetch called ${calls} times`);
      const before = calls;
      await once({ fetch: (...args) => globalThis.fetch(...args) });
      assert.ok(calls - before >= 4, `options.fetch called ${calls - before} times`);
      // The SDK's own instances still pass instanceof on the exported classes.
      const svc = service(ctx);
      assert.ok(svc instanceof tinker.ServiceClient);
      assert.ok(svc.restClient() instanceof tinker.RestClient);
      await svc.close();
    } finally {
      globalThis.fetch = real;
    }
  },

  async 'training a pattern makes sampling produce it; computeLogprobs equals forward'(ctx) {
    const svc = service(ctx);
    const tc = await svc.createLoraTrainingClient({ base_model: 'Qwen/Qwen3-8B', rank: 8, seed: 1 });
    const before = await frequencyOfB(await tc.saveWeightsAndGetSamplingClient());
    const pair = { model_input: [A], loss_fn_inputs: { target_tokens: [B], weights: [1] } };
    const data = Array(8).fill(pair);
    for (let i = 0; i < 15; i++) await Promise.all([tc.forwardBackward(data, 'cross_entropy'), tc.optimStep({ learning_rate: 0.1 })]);
    const sampler = await tc.saveWeightsAndGetSamplingClient();
    const after = await frequencyOfB(sampler);
    assert.ok(after > 0.5 && after > before + 0.3, `before ${before}, after ${after}`);
    const seq = [A, B, 12, 13, 14];
    const lp = await sampler.computeLogprobs(seq);
    assert.equal(lp.length, 5);
    assert.equal(lp[0], null);
    const fwd = await tc.forward([{ model_input: seq.slice(0, 4), loss_fn_inputs: { target_tokens: seq.slice(1) } }], 'cross_entropy');
    const f = fwd.loss_fn_outputs[0].logprobs.data;
    for (let i = 0; i < 4; i++) assert.ok(Math.abs(lp[i + 1] - f[i]) < 1e-4, `position ${i + 1}: ${lp[i + 1]} vs ${f[i]}`);
    await svc.close();
  },

  async 'a client attached to a sampler in use gets answers to its own requests, not the creator\'s'(ctx) {
    const svc = service(ctx);
    const creator = await svc.createSamplingClient({ base_model: 'Qwen/Qwen3-8B' });
    const draw = async (s, prompt, max_tokens) => (await s.sample({ prompt, sampling_params: { max_tokens, seed: 3, stop: [] } })).sequences[0].tokens.length;
    assert.equal(await draw(creator, [100, 200, 300], 6), 6);
    const attached = await svc.samplingClient(creator.samplingSessionId);
    assert.equal(attached.baseModel, 'Qwen/Qwen3-8B');
    assert.equal(await draw(attached, [7, 8, 9, 10], 2), 2, 'its own answer (the creator asked for 6 tokens)');
    assert.equal(await draw(attached, [7, 8, 9, 10], 3), 3);
    assert.equal(await draw(creator, [1, 2], 4), 4);
    await svc.close();
  },

  async 'a sampler handle restores a new clone of the sampler elsewhere, with its own key and no credentials inside'(ctx) {
    const svc = service(ctx, { defaultHeaders: { 'x-team': 'blue' } });
    const creator = await svc.createSamplingClient({ base_model: 'Qwen/Qwen3-8B' });
    const handle = creator.getSamplerHandle();
    assert.equal(typeof handle, 'string');
    assert.match(handle, /^[A-Za-z0-9_-]+=*$/, 'URL-safe base64');
    const json = JSON.parse(atob(handle.replace(/-/g, '+').replace(/_/g, '/')));
    // Python 0.38's get_sampler_handle() layout, so handles cross between the two SDKs.
    assert.deepEqual(Object.keys(json), ['session_id', 'sampling_session_id', 'holder', 'base_model', 'record_stability_info']);
    assert.deepEqual(Object.keys(json.holder), ['base_url', 'default_headers_overrides', 'client_config', 'client_dynamic_config', 'api_key']);
    assert.equal(json.sampling_session_id, creator.samplingSessionId);
    assert.equal(json.session_id, svc.sessionState().sessionId);
    assert.equal(json.holder.base_url, ctx.env.SIM_URL);
    assert.deepEqual(json.holder.default_headers_overrides, { 'x-team': 'blue' });
    assert.equal(json.holder.api_key, null);
    assert.ok(!atob(handle.replace(/-/g, '+').replace(/_/g, '/')).includes('tml-js-tests'), 'no key in the handle');

    const draw = async (s, prompt, max_tokens) => Array.from((await s.sample({ prompt, sampling_params: { max_tokens, seed: 3, stop: [] } })).sequences[0].tokens);
    const mine = await draw(creator, [100, 200, 300], 6);
    const opts = { apiKey: 'tml-js-tests', dangerouslyAllowBrowser: true, heartbeat: false, telemetry: false };
    const restored = tinker.SamplingClient.fromSamplerHandle(handle, opts);
    assert.ok(restored instanceof tinker.SamplingClient);
    assert.equal(restored.samplingSessionId, creator.samplingSessionId);
    assert.equal(restored.baseModel, 'Qwen/Qwen3-8B');
    // Its own answers (a new clone: the creator's seq ids are not its), from the same sampler.
    assert.deepEqual(await draw(restored, [7, 8, 9], 2), (await draw(creator, [7, 8, 9], 2)));
    assert.deepEqual(await draw(restored, [100, 200, 300], 6), mine, 'same sampler, same seed, same tokens');
    const again = tinker.SamplingClient.fromSamplerHandle(restored.getSamplerHandle(), opts);
    assert.equal((await draw(again, [5, 6], 3)).length, 3);

    // close() stops the restored client, not the maker's session.
    await restored.close();
    await assert.rejects(restored.sample({ prompt: [1], sampling_params: { max_tokens: 1 } }), (e) => e.name === 'ClientClosedError');
    assert.equal((await draw(creator, [1, 2], 4)).length, 4);
    await creator.close(); // not restored: nothing to do
    assert.equal((await draw(creator, [1, 2], 1)).length, 1);
    await again.close();

    // Bad input: a TypeError naming what is wrong.
    assert.throws(() => tinker.SamplingClient.fromSamplerHandle(42, opts), (e) => e instanceof TypeError && /handle/.test(e.message) && /42/.test(e.message));
    assert.throws(() => tinker.SamplingClient.fromSamplerHandle('not a handle', opts), (e) => e instanceof TypeError && /handle/.test(e.message));
    assert.throws(() => tinker.SamplingClient.fromSamplerHandle(handle, { ...opts, baseURL: 'http://elsewhere' }), (e) => e instanceof TypeError && /baseURL/.test(e.message));
    await svc.close();
  },

  async 'seeds reproduce, stop tokens and strings stop, top-k logprobs have their shape'(ctx) {
    const svc = service(ctx);
    const s = await svc.createSamplingClient({ base_model: 'Qwen/Qwen3-8B' });
    const run = (samplingParams, extra = {}) => s.sample({ prompt: tinker.ModelInput.fromInts([1, 2, 3]), num_samples: 3, sampling_params: samplingParams, ...extra });
    // `stop: []` disables every stop token, EOS included: each sample runs to max_tokens.
    const [a, b, c] = await Promise.all([run({ max_tokens: 12, seed: 5, stop: [] }), run({ max_tokens: 12, seed: 5, stop: [] }), run({ max_tokens: 12, seed: 6, stop: [] })]);
    const toks = (r) => r.sequences.map((q) => Array.from(q.tokens));
    assert.deepEqual(toks(a), toks(b), 'same seed, same samples');
    assert.notEqual(JSON.stringify(toks(a)), JSON.stringify(toks(c)));
    assert.ok(a.sequences.every((q) => q.tokens.length === 12 && q.stop_reason === 'length'));
    const stopAt = a.sequences[0].tokens[3];
    const stopped = await run({ max_tokens: 12, seed: 5, stop: [stopAt] });
    assert.equal(stopped.sequences[0].stop_reason, 'stop');
    // It stops at (and includes) the stop token, or earlier at EOS, which an explicit stop list keeps.
    assert.ok(stopped.sequences[0].tokens.length <= Array.from(a.sequences[0].tokens).indexOf(stopAt) + 1);
    assert.deepEqual(Array.from(stopped.sequences[0].tokens), Array.from(a.sequences[0].tokens).slice(0, stopped.sequences[0].tokens.length), 'same seed, same prefix');
    // A stop string: decode the tokens the unconstrained run produced is the server's job;
    // stopping on any string that occurs must end the sequence early with stop_reason "stop".
    const many = await s.sample({ prompt: [1, 2, 3], num_samples: 8, sampling_params: { max_tokens: 40, seed: 3, stop: ['e'] } });
    assert.ok(many.sequences.some((q) => q.stop_reason === 'stop' && q.tokens.length < 40), 'a stop string ended some sequence');
    const r = await s.sample({ prompt: [10, 20, 30, 40], sampling_params: { max_tokens: 1 }, include_prompt_logprobs: true, topk_prompt_logprobs: 3 });
    assert.equal(r.prompt_logprobs.length, 4);
    assert.equal(r.prompt_logprobs[0], null);
    assert.equal(r.topk_prompt_logprobs.length, 4);
    assert.equal(r.topk_prompt_logprobs[0], null);
    const row = r.topk_prompt_logprobs[1];
    assert.equal(row.length, 3);
    assert.ok(row[0][1] >= row[1][1] && row[1][1] >= row[2][1], 'sorted by logprob');
    assert.ok(row[0][1] >= r.prompt_logprobs[1]);
    await assert.rejects(s.sample({ prompt: [1], sampling_params: { max_tokens: 1, top_p: 0 } }), (e) => e instanceof RangeError && e.field === 'sampling_params.top_p');
    await assert.rejects(s.sample({ prompt: [1], sampling_params: { max_tokens: 1, temperature: NaN } }), (e) => e instanceof RangeError && e.field === 'sampling_params.temperature');
    await assert.rejects(s.sample({ prompt: [1], sampling_params: { max_token: 1 } }), (e) => e instanceof TypeError && e.field === 'sampling_params.max_token');
    await svc.close();
  },

  async 'a thousand concurrent samples settle once each, under faults'(ctx) {
    const svc = service(ctx);
    const s = await svc.createSamplingClient({ base_model: 'meta-llama/Llama-3.2-1B' });
    const injected = async () => (await admin(ctx, 'stats')).faults_injected ?? {};
    const before = await injected();
    await admin(ctx, 'config', { faults: '503:0.05,drop:0.02,lost:0.03,storm:0.1:3,expire:0.03,malformed:0.03@retrieve_future,429:0.03@retrieve_future' });
    let settled = 0;
    let results;
    try {
      results = await Promise.allSettled(
        Array.from({ length: 1000 }, (_, i) => s.sample({ prompt: [(i % 1000) + 1, 2], sampling_params: { max_tokens: 3, seed: i } }).finally(() => settled++)),
      );
    } finally {
      await admin(ctx, 'config', { faults: '' });
    }
    // The simulator's own count says every configured kind of fault was injected.
    const after = await injected();
    for (const kind of ['503', 'drop', 'lost', 'storm', 'expire', 'malformed', '429']) {
      assert.ok((after[kind] ?? 0) > (before[kind] ?? 0), `fault ${kind} was injected (simulator stats: ${JSON.stringify(after)})`);
    }
    const failed = results.filter((r) => r.status === 'rejected');
    assert.equal(failed.length, 0, `every sample succeeded: ${failed.slice(0, 3).map((f) => f.reason?.message).join('; ')}`);
    assert.equal(settled, 1000);
    assert.ok(results.every((r) => r.value.sequences.length === 1 && r.value.sequences[0].tokens.length >= 1));
    const ids = new Set(results.map((r) => r.value.sequences[0].sequence_id));
    assert.equal(ids.size, 1000, 'sequence ids are unique');
    await svc.close();
  },

  async 'an aborted sample rejects and is cancelled on the server when enabled'(ctx) {
    const ac = new AbortController();
    const watching = (url, init) => {
      if (String(url).endsWith('/retrieve_future')) ac.abort();
      return fetch(url, init);
    };
    await admin(ctx, 'config', { dynamic_config: { sample_cancel_enabled: true }, future_delay_ms: 500 });
    try {
      const svc = service(ctx, { fetch: watching });
      const s = await svc.createSamplingClient({ base_model: 'Qwen/Qwen3-8B' });
      const before = (await admin(ctx, 'stats')).requests_by_path['POST /api/v1/cancel_future'] ?? 0;
      await assert.rejects(s.sample({ prompt: [5], sampling_params: { max_tokens: 2 } }, { signal: ac.signal }), tinker.APIUserAbortError);
      // The cancel is sent in the background: wait for it to reach the server.
      let after = before;
      for (let i = 0; i < 200 && after === before; i++) {
        await new Promise((r) => setTimeout(r, 10));
        after = (await admin(ctx, 'stats')).requests_by_path['POST /api/v1/cancel_future'] ?? 0;
      }
      assert.equal(after, before + 1);
      await svc.close();
    } finally {
      await admin(ctx, 'config', { dynamic_config: { sample_cancel_enabled: false }, future_delay_ms: 10 });
    }
  },
  async "backpressure: 'reject' sends once and fails with the sampler's 429, backoff or not; 'wait' (the default) sends again"(ctx) {
    const svc = service(ctx);
    const s = await svc.createSamplingClient({ base_model: 'Qwen/Qwen3-8B' });
    const req = { prompt: [5, 6], sampling_params: { max_tokens: 2 } };
    await assert.rejects(s.sample(req, { backpressure: 'never' }), (e) => e instanceof TypeError && e.field === 'backpressure' && e.message.includes("got 'never'"));
    const asamples = async () => (await admin(ctx, 'stats')).requests_by_path['POST /api/v1/asample'] ?? 0;
    await admin(ctx, 'config', { faults: '429:1:1@asample' });
    try {
      const before = await asamples();
      const rejected = (e) => e instanceof tinker.RateLimitError && e.status === 429 && e.headers['retry-after'] === '1';
      await assert.rejects(s.sample(req, { backpressure: 'reject' }), rejected);
      // The 429 started the client's backoff (1 s); a rejecting call sends all the same.
      await assert.rejects(s.sample(req, { backpressure: 'reject' }), rejected);
      assert.equal((await asamples()) - before, 2, 'one asample per call, none sent again');
      // Waiting: once the 429s stop, the same request goes through.
      const waiting = s.sample(req);
      await admin(ctx, 'config', { faults: '' });
      assert.equal((await waiting).sequences.length, 1);
    } finally {
      await admin(ctx, 'config', { faults: '' });
      await svc.close();
    }
  },
};
