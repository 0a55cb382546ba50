// Bad input from JS, table-driven (issue 9): wrong types, NaN/Infinity, out-of-range ids,
// huge arrays, mismatched lengths, unknown options. Every row must be a TypeError or
// RangeError whose `field` names the field and whose message shows the value, must send
// nothing (a counting fetch does not move), and must change nothing (the training client's
// next valid calls still land in seq order, with no gap or duplicate on the simulator).
// Runs in Node, Chromium and workerd against a fresh tinker-sim.
import * as tinker from 'tinker-wasm';
import { assert } from '../harness.js';

const MAX_ELEMENTS = 2 ** 24; // the SDK's cap on one token/tensor array (src/types)

async function admin(ctx, path) {
  const r = await fetch(`${ctx.env.SIM_URL}/_sim/${path}`);
  if (!r.ok) throw new Error(`admin ${path}: ${r.status} ${await r.text()}`);
  return r.json();
}

/** A sparse plain array of `n` holes (no memory): only its length is huge. */
const sparse = (n) => {
  const a = [];
  a.length = n;
  return a;
};

const good = () => tinker.datumFromTokens([100, 101, 102, 103], { promptLength: 1 });
/** A cross_entropy datum with the given raw parts (wire field names). */
const datum = ({ tokens = [100, 101, 102], target = [101, 102, 103], weights = [1, 1, 1], extra = {}, lfi = {} } = {}) => ({
  model_input: { chunks: [{ type: 'encoded_text', tokens }] },
  loss_fn_inputs: { target_tokens: { data: target, dtype: 'int64' }, weights: { data: weights, dtype: 'float32' }, ...lfi },
  ...extra,
});

/**
 * The table: [label, (clients) => call, ErrorClass, field, text the message must hold].
 * `call` may throw synchronously (builders) or return a promise (client methods).
 */
const TABLE = [
  // forwardBackward: data
  ['fb data not an array', ({ tc }) => tc.forwardBackward('data', 'cross_entropy'), TypeError, 'data', 'the string "data"'],
  ['fb datum not an object', ({ tc }) => tc.forwardBackward([42], 'cross_entropy'), TypeError, 'data[0]', '42'],
  ['fb unknown datum field', ({ tc }) => tc.forwardBackward([datum({ extra: { modelInput: 1 } })], 'cross_entropy'), TypeError, 'data[0].modelInput', 'unknown field'],
  ['fb negative token id', ({ tc }) => tc.forwardBackward([datum({ tokens: [1, -1, 2] })], 'cross_entropy'), RangeError, 'data[0].model_input.chunks[0].tokens[1]', '-1'],
  ['fb non-integer token id', ({ tc }) => tc.forwardBackward([datum({ tokens: [1, 2.5, 2] })], 'cross_entropy'), RangeError, 'data[0].model_input.chunks[0].tokens[1]', '2.5'],
  ['fb token id 2^32', ({ tc }) => tc.forwardBackward([datum({ tokens: [1, 2, 2 ** 32] })], 'cross_entropy'), RangeError, 'data[0].model_input.chunks[0].tokens[2]', '4294967296'],
  ['fb NaN token id', ({ tc }) => tc.forwardBackward([datum({ tokens: [NaN, 1, 2] })], 'cross_entropy'), RangeError, 'data[0].model_input.chunks[0].tokens[0]', 'NaN'],
  ['fb string token id', ({ tc }) => tc.forwardBackward([datum({ tokens: [1, '2', 3] })], 'cross_entropy'), TypeError, 'data[0].model_input.chunks[0].tokens[1]', '"2"'],
  ['fb NaN weight', ({ tc }) => tc.forwardBackward([datum({ weights: [1, NaN, 1] })], 'cross_entropy'), RangeError, 'data[0].loss_fn_inputs.weights.data[1]', 'NaN'],
  ['fb Infinity weight', ({ tc }) => tc.forwardBackward([datum({ weights: new Float32Array([1, 1, Infinity]) })], 'cross_entropy'), RangeError, 'data[0].loss_fn_inputs.weights.data[2]', 'Infinity'],
  ['fb non-integer target', ({ tc }) => tc.forwardBackward([datum({ target: [1, 2.5, 3] })], 'cross_entropy'), TypeError, 'data[0].loss_fn_inputs.target_tokens.data[1]', '2.5'],
  ['fb BigInt64Array target beyond 2^53', ({ tc }) => tc.forwardBackward([datum({ target: new BigInt64Array([101n, 2n ** 60n, 103n]) })], 'cross_entropy'), RangeError, 'data[0].loss_fn_inputs.target_tokens.data[1]', '1152921504606847000'],
  ['fb BigInt64Array token id negative', ({ tc }) => tc.forwardBackward([datum({ tokens: new BigInt64Array([100n, -1n, 102n]) })], 'cross_entropy'), RangeError, 'data[0].model_input.chunks[0].tokens[1]', '-1'],
  ['fb weights shorter than target_tokens', ({ tc }) => tc.forwardBackward([datum({ weights: [1, 1] })], 'cross_entropy'), RangeError, 'data[0].loss_fn_inputs.weights', '2 rows'],
  ['fb targets longer than the input', ({ tc }) => tc.forwardBackward([datum({ target: [1, 2, 3, 4], weights: [1, 1, 1, 1] })], 'cross_entropy'), RangeError, 'data[0].loss_fn_inputs.target_tokens', '4 rows'],
  ['fb missing target_tokens', ({ tc }) => tc.forwardBackward([{ model_input: tinker.ModelInput.fromInts([1, 2]), loss_fn_inputs: { weights: [1, 1] } }], 'cross_entropy'), TypeError, 'data[0].loss_fn_inputs.target_tokens', 'cross_entropy'],
  ['fb bad dtype', ({ tc }) => tc.forwardBackward([datum({ lfi: { weights: { data: [1, 1, 1], dtype: 'float16' } } })], 'cross_entropy'), TypeError, 'data[0].loss_fn_inputs.weights.dtype', 'float16'],
  // The per-object readers of src/wasm/convert.rs (issue 8): unknown keys and bad fields at each level.
  ['fb unknown chunk field', ({ tc }) => tc.forwardBackward([{ ...datum(), model_input: { chunks: [{ type: 'encoded_text', tokens: [1, 2, 3], token: 1 }] } }], 'cross_entropy'), TypeError, 'data[0].model_input.chunks[0].token', 'unknown field; expected one of: type, tokens'],
  ['fb unknown model_input field', ({ tc }) => tc.forwardBackward([{ ...datum(), model_input: { chunks: [], chunk: [] } }], 'cross_entropy'), TypeError, 'data[0].model_input.chunk', 'unknown field; expected one of: chunks'],
  ['fb unknown tensor field', ({ tc }) => tc.forwardBackward([datum({ lfi: { weights: { data: new Float32Array([1, 1, 1]), dtype: 'float32', shapes: [3] } } })], 'cross_entropy'), TypeError, 'data[0].loss_fn_inputs.weights.shapes', 'unknown field; expected one of: data, dtype, shape, sparse_crow_indices, sparse_col_indices'],
  ['fb dtype not a string', ({ tc }) => tc.forwardBackward([datum({ lfi: { weights: { data: [1, 1, 1], dtype: 32 } } })], 'cross_entropy'), TypeError, 'data[0].loss_fn_inputs.weights.dtype', 'must be "float32" or "int64", got 32'],
  ['fb shape element not a number', ({ tc }) => tc.forwardBackward([datum({ lfi: { weights: { data: [1, 1, 1], dtype: 'float32', shape: ['3'] } } })], 'cross_entropy'), TypeError, 'data[0].loss_fn_inputs.weights.shape[0]', 'must be a number, got the string "3"'],
  ['fb chunks not an array', ({ tc }) => tc.forwardBackward([{ ...datum(), model_input: { chunks: new Uint32Array(2) } }], 'cross_entropy'), TypeError, 'data[0].model_input.chunks', 'must be an array of chunks, got a Uint32Array'],
  ['fb chunk not an object', ({ tc }) => tc.forwardBackward([{ ...datum(), model_input: { chunks: [[1, 2]] } }], 'cross_entropy'), TypeError, 'data[0].model_input.chunks[0]', 'must be a chunk object, got an array'],
  ['fb Int32Array token -1', ({ tc }) => tc.forwardBackward([datum({ tokens: new Int32Array([1, -1, 2]) })], 'cross_entropy'), RangeError, 'data[0].model_input.chunks[0].tokens[1]', 'token id -1 is negative'],
  ['fb Uint32Array token 2^31', ({ tc }) => tc.forwardBackward([datum({ tokens: new Uint32Array([1, 2 ** 31, 2]) })], 'cross_entropy'), RangeError, 'data[0].model_input.chunks[0].tokens[1]', 'token id 2147483648 is out of range'],
  ['fb loss_fn_inputs not an object', ({ tc }) => tc.forwardBackward([{ model_input: [1, 2, 3], loss_fn_inputs: 'x' }], 'cross_entropy'), TypeError, 'data[0].loss_fn_inputs', 'must be an object of tensors, got the string "x"'],
  ['fb huge token array (typed)', ({ tc }) => tc.forwardBackward([datum({ tokens: new Uint32Array(MAX_ELEMENTS + 1) })], 'cross_entropy'), RangeError, 'data[0].model_input.chunks[0].tokens', String(MAX_ELEMENTS + 1)],
  ['fb huge token array (plain)', ({ tc }) => tc.forwardBackward([datum({ tokens: sparse(2 ** 32 - 1) })], 'cross_entropy'), RangeError, 'data[0].model_input.chunks[0].tokens', String(2 ** 32 - 1)],
  ['fb huge weights array', ({ tc }) => tc.forwardBackward([datum({ weights: sparse(MAX_ELEMENTS + 1) })], 'cross_entropy'), RangeError, 'data[0].loss_fn_inputs.weights.data', String(MAX_ELEMENTS + 1)],
  ['fb unknown loss fn', ({ tc }) => tc.forwardBackward([good()], 'cross_entropyy'), RangeError, 'lossFn', 'cross_entropyy'],
  ['fb loss fn not a string', ({ tc }) => tc.forwardBackward([good()], 7), TypeError, 'lossFn', '7'],
  ['fb unknown option', ({ tc }) => tc.forwardBackward([good()], 'cross_entropy', { lossFnConfg: {} }), TypeError, 'lossFnConfg', 'unknown option'],
  ['fb options not an object', ({ tc }) => tc.forwardBackward([good()], 'cross_entropy', 5), TypeError, 'options', '5'],
  ['fb negative timeout', ({ tc }) => tc.forwardBackward([good()], 'cross_entropy', { timeout: -5 }), RangeError, 'timeout', '-5'],
  ['fb NaN timeout', ({ tc }) => tc.forwardBackward([good()], 'cross_entropy', { timeout: NaN }), RangeError, 'timeout', 'NaN'],
  ['fb signal not a signal', ({ tc }) => tc.forwardBackward([good()], 'cross_entropy', { signal: 'stop' }), TypeError, 'signal', 'stop'],
  ['forward bad datum', ({ tc }) => tc.forward([datum({ tokens: [1, -3, 2] })], 'cross_entropy'), RangeError, 'data[0].model_input.chunks[0].tokens[1]', '-3'],
  // forwardBackwardCustom
  ['fbc loss fn not a function', ({ tc }) => tc.forwardBackwardCustom([good()], 'cross_entropy'), TypeError, 'lossFn', 'cross_entropy'],
  ['fbc bad datum', ({ tc }) => tc.forwardBackwardCustom([datum({ weights: [1, NaN, 1] })], () => ({})), RangeError, 'data[0].loss_fn_inputs.weights.data[1]', 'NaN'],
  ['fbc unknown option', ({ tc }) => tc.forwardBackwardCustom([good()], () => ({}), { lossFnConfig: {} }), TypeError, 'lossFnConfig', 'unknown option'],
  // optimStep (AdamParams)
  ['adam NaN learning_rate', ({ tc }) => tc.optimStep({ learning_rate: NaN }), RangeError, 'params.learning_rate', 'NaN'],
  ['adam Infinity learning_rate', ({ tc }) => tc.optimStep({ learning_rate: Infinity }), RangeError, 'params.learning_rate', 'Infinity'],
  ['adam negative learning_rate', ({ tc }) => tc.optimStep({ learning_rate: -0.001 }), RangeError, 'params.learning_rate', '-0.001'],
  ['adam beta1 = 1', ({ tc }) => tc.optimStep({ learning_rate: 1e-3, beta1: 1 }), RangeError, 'params.beta1', '1'],
  ['adam negative beta2', ({ tc }) => tc.optimStep({ beta2: -0.5 }), RangeError, 'params.beta2', '-0.5'],
  ['adam negative eps', ({ tc }) => tc.optimStep({ eps: -1e-8 }), RangeError, 'params.eps', '-1e-8'],
  ['adam -Infinity weight_decay', ({ tc }) => tc.optimStep({ weight_decay: -Infinity }), RangeError, 'params.weight_decay', '-Infinity'],
  ['adam negative grad_clip_norm', ({ tc }) => tc.optimStep({ grad_clip_norm: -1 }), RangeError, 'params.grad_clip_norm', '-1'],
  ['adam string learning_rate', ({ tc }) => tc.optimStep({ learning_rate: '1e-3' }), TypeError, 'params.learning_rate', '"1e-3"'],
  ['adam unknown key', ({ tc }) => tc.optimStep({ learningRate: 1e-3 }), TypeError, 'params.learningRate', 'unknown option'],
  ['adam params an array', ({ tc }) => tc.optimStep([1e-3]), TypeError, 'params', 'an array'],
  ['optimStep without params', ({ tc }) => tc.optimStep(), TypeError, 'params', 'undefined'],
  ['dimuon without learning_rate', ({ tc }) => tc.optimStep({ type: 'dimuon', beta1: 0.5 }), TypeError, 'optim_params.learning_rate', 'required'],
  ['dimuon beta1 = 1', ({ tc }) => tc.optimStep({ type: 'dimuon', learning_rate: 1e-3, beta1: 1 }), RangeError, 'optim_params.beta1', '1'],
  ['dimuon unknown key', ({ tc }) => tc.optimStep({ type: 'dimuon', learning_rate: 1e-3, beta2: 0.9 }), TypeError, 'optim_params.beta2', 'not a Dimuon parameter'],
  ['optimStep unknown option', ({ tc }) => tc.optimStep({ learning_rate: 1e-3 }, { timeOut: 5 }), TypeError, 'timeOut', 'unknown option'],
  // sample
  ['sample numSamples 0', ({ sc }) => sc.sample({ prompt: [1, 2], numSamples: 0, samplingParams: { max_tokens: 2 } }), RangeError, 'numSamples', '0'],
  ['sample numSamples -1', ({ sc }) => sc.sample({ prompt: [1, 2], numSamples: -1, samplingParams: { max_tokens: 2 } }), RangeError, 'numSamples', '-1'],
  ['sample numSamples 1e9', ({ sc }) => sc.sample({ prompt: [1, 2], numSamples: 1e9, samplingParams: { max_tokens: 2 } }), RangeError, 'numSamples', '1000000000'],
  ['sample numSamples NaN', ({ sc }) => sc.sample({ prompt: [1, 2], numSamples: NaN, samplingParams: { max_tokens: 2 } }), RangeError, 'numSamples', 'NaN'],
  ['sample numSamples 1.5', ({ sc }) => sc.sample({ prompt: [1, 2], numSamples: 1.5, samplingParams: { max_tokens: 2 } }), TypeError, 'numSamples', '1.5'],
  ['sample numSamples string', ({ sc }) => sc.sample({ prompt: [1, 2], numSamples: '2', samplingParams: { max_tokens: 2 } }), TypeError, 'numSamples', '"2"'],
  ['sample unknown samplingParams key', ({ sc }) => sc.sample({ prompt: [1, 2], samplingParams: { maxTokens: 2 } }), TypeError, 'samplingParams.maxTokens', 'unknown option'],
  ['sample max_tokens -1', ({ sc }) => sc.sample({ prompt: [1, 2], samplingParams: { max_tokens: -1 } }), RangeError, 'samplingParams.max_tokens', '-1'],
  ['sample max_tokens 2^32', ({ sc }) => sc.sample({ prompt: [1, 2], samplingParams: { max_tokens: 2 ** 32 } }), RangeError, 'samplingParams.max_tokens', '4294967296'],
  ['sample max_tokens NaN', ({ sc }) => sc.sample({ prompt: [1, 2], samplingParams: { max_tokens: NaN } }), RangeError, 'samplingParams.max_tokens', 'NaN'],
  ['sample temperature -1', ({ sc }) => sc.sample({ prompt: [1, 2], samplingParams: { max_tokens: 2, temperature: -1 } }), RangeError, 'samplingParams.temperature', '-1'],
  ['sample top_p 0', ({ sc }) => sc.sample({ prompt: [1, 2], samplingParams: { max_tokens: 2, top_p: 0 } }), RangeError, 'samplingParams.top_p', '0'],
  ['sample top_k 0', ({ sc }) => sc.sample({ prompt: [1, 2], samplingParams: { max_tokens: 2, top_k: 0 } }), RangeError, 'samplingParams.top_k', '0'],
  ['sample stop mixed', ({ sc }) => sc.sample({ prompt: [1, 2], samplingParams: { max_tokens: 2, stop: ['a', 3] } }), TypeError, 'samplingParams.stop[1]', '3'],
  ['sample samplingParams not an object', ({ sc }) => sc.sample({ prompt: [1, 2], samplingParams: 'greedy' }), TypeError, 'samplingParams', 'greedy'],
  ['sample prompt missing', ({ sc }) => sc.sample({ numSamples: 1, samplingParams: { max_tokens: 2 } }), TypeError, 'prompt', 'required'],
  ['sample prompt token -1', ({ sc }) => sc.sample({ prompt: [1, -1], samplingParams: { max_tokens: 2 } }), RangeError, 'prompt[1]', '-1'],
  ['sample huge prompt', ({ sc }) => sc.sample({ prompt: sparse(MAX_ELEMENTS + 1), samplingParams: { max_tokens: 2 } }), RangeError, 'prompt', String(MAX_ELEMENTS + 1)],
  ['sample unknown option', ({ sc }) => sc.sample({ prompt: [1, 2], num_samples: 2 }), TypeError, 'num_samples', 'unknown option'],
  ['sample options not an object', ({ sc }) => sc.sample([1, 2]), TypeError, 'sample options', 'an array'],
  ['computeLogprobs token 2^31', ({ sc }) => sc.computeLogprobs([1, 2 ** 31]), RangeError, 'prompt[1]', '2147483648'],
  // builders (synchronous)
  ['ModelInput.fromInts non-integer', () => tinker.ModelInput.fromInts([1, 0.5]), RangeError, 'tokens[1]', '0.5'],
  ['ModelInput.fromInts negative', () => tinker.ModelInput.fromInts([-7]), RangeError, 'tokens[0]', '-7'],
  ['ModelInput.fromInts 2^32', () => tinker.ModelInput.fromInts([2 ** 32]), RangeError, 'tokens[0]', '4294967296'],
  ['ModelInput.fromInts Infinity', () => tinker.ModelInput.fromInts([Infinity]), RangeError, 'tokens[0]', 'Infinity'],
  ['ModelInput.fromInts Int32Array negative', () => tinker.ModelInput.fromInts(new Int32Array([3, -2])), RangeError, 'tokens[1]', '-2'],
  ['ModelInput.fromInts not an array', () => tinker.ModelInput.fromInts('1,2'), TypeError, 'tokens', '"1,2"'],
  ['ModelInput.fromInts huge', () => tinker.ModelInput.fromInts(sparse(MAX_ELEMENTS + 1)), RangeError, 'tokens', String(MAX_ELEMENTS + 1)],
  ['datumFromTokens one token', () => tinker.datumFromTokens([1]), RangeError, 'tokens', '1'],
  ['datumFromTokens NaN token', () => tinker.datumFromTokens([1, NaN, 3]), RangeError, 'tokens[1]', 'NaN'],
  ['datumFromTokens promptLength too long', () => tinker.datumFromTokens([1, 2, 3], { promptLength: 5 }), RangeError, 'promptLength', '5'],
  ['datumFromTokens negative promptLength', () => tinker.datumFromTokens([1, 2, 3], { promptLength: -1 }), RangeError, 'promptLength', '-1'],
  ['datumFromTokens unknown option', () => tinker.datumFromTokens([1, 2, 3], { prompt_length: 1 }), TypeError, 'prompt_length', 'unknown option'],
  ['TensorData.fromArray NaN float', () => tinker.TensorData.fromArray([1, NaN], { dtype: 'float32' }), RangeError, 'data.data[1]', 'NaN'],
  ['TensorData.fromArray shape mismatch', () => tinker.TensorData.fromArray([1, 2, 3], { dtype: 'int64', shape: [2, 2] }), RangeError, 'data.shape', '[2, 2]'],
  ['TensorData.fromArray bad dtype', () => tinker.TensorData.fromArray([1, 2], { dtype: 'bf16' }), TypeError, 'data.dtype', 'bf16'],
  ['TensorData.fromArray unknown option', () => tinker.TensorData.fromArray([1, 2], { dtype: 'int64', shapes: [2] }), TypeError, 'shapes', 'unknown option'],
  // REST
  ['rest bad tinker path', ({ rest }) => rest.getTrainingRunByTinkerPath('https://x/y'), TypeError, 'path', 'https://x/y'],
  ['rest path not a string', ({ rest }) => rest.getWeightsInfoByTinkerPath(42), TypeError, 'path', '42'],
  ['rest delete incomplete path', ({ rest }) => rest.deleteCheckpointFromTinkerPath('tinker://run-1/weights'), TypeError, 'path', 'tinker://run-1/weights'],
  ['rest publish bad kind', ({ rest }) => rest.publishCheckpointFromTinkerPath('tinker://run-1/bogus/ckpt'), TypeError, 'path', 'bogus'],
  ['rest negative ttl', ({ rest }) => rest.setCheckpointTtlFromTinkerPath('tinker://run-1/weights/ckpt', -5), RangeError, 'ttlSeconds', '-5'],
  ['rest NaN ttl', ({ rest }) => rest.setCheckpointTtlFromTinkerPath('tinker://run-1/weights/ckpt', NaN), RangeError, 'ttlSeconds', 'NaN'],
  ['rest negative limit', ({ rest }) => rest.listTrainingRunsPage({ limit: -1 }), RangeError, 'limit', '-1'],
  ['rest limit NaN', ({ rest }) => rest.listTrainingRunsPage({ limit: NaN }), RangeError, 'limit', 'NaN'],
  ['rest negative offset', ({ rest }) => rest.listTrainingRunsPage({ offset: -10 }), RangeError, 'offset', '-10'],
  ['rest fractional offset', ({ rest }) => rest.listUserCheckpointsPage({ offset: 0.5 }), TypeError, 'offset', '0.5'],
  ['rest sessions negative limit', ({ rest }) => rest.listSessionsPage({ limit: -3 }), RangeError, 'limit', '-3'],
  ['rest unknown option', ({ rest }) => rest.listTrainingRunsPage({ lmit: 5 }), TypeError, 'lmit', 'unknown option'],
  ['rest training run id not a string', ({ rest }) => rest.getTrainingRun(null), TypeError, 'trainingRunId', 'null'],
  // service
  ['service unknown createLoraTrainingClient option', ({ svc }) => svc.createLoraTrainingClient({ baseModel: 'Qwen/Qwen3-8B', ranks: 8 }), TypeError, 'ranks', 'unknown option'],
  ['service NaN rank', ({ svc }) => svc.createLoraTrainingClient({ baseModel: 'Qwen/Qwen3-8B', rank: NaN }), RangeError, 'rank', 'NaN'],
  ['service unknown createSamplingClient option', ({ svc }) => svc.createSamplingClient({ base_model: 'Qwen/Qwen3-8B' }), TypeError, 'base_model', 'unknown option'],
  ['service saveState unknown option', ({ tc }) => tc.saveState('x', { ttl: 5 }), TypeError, 'ttl', 'unknown option'],
];

/** Calls `fn` and returns what it threw or how its promise rejected (or null if it did neither). */
async function outcome(fn, clients) {
  let p;
  try {
    p = fn(clients);
  } catch (e) {
    return { sync: true, error: e };
  }
  try {
    await p;
  } catch (e) {
    return { sync: false, error: e };
  }
  return null;
}

export default {
  async 'every bad input is a TypeError/RangeError naming the field, sends nothing and changes nothing'(ctx) {
    let requests = 0;
    const counting = (...args) => {
      requests++;
      return fetch(...args);
    };
    const svc = new tinker.ServiceClient({ apiKey: 'tml-bad-input', baseURL: ctx.env.SIM_URL, fetch: counting, dangerouslyAllowBrowser: true, heartbeat: false, telemetry: false });
    const tc = await svc.createLoraTrainingClient({ baseModel: 'Qwen/Qwen3-8B', rank: 8, seed: 5 });
    const sc = await svc.createSamplingClient({ baseModel: 'Qwen/Qwen3-8B' });
    const rest = svc.restClient();
    // One valid step before: the bad calls come in the middle of a real run.
    await Promise.all([tc.forwardBackward([good()], 'cross_entropy'), tc.optimStep({ learning_rate: 0.01 })]);
    const seqBefore = tc.nextSeqId;
    const sent = requests;
    const failures = [];
    for (const [label, fn, cls, field, shown] of TABLE) {
      const got = await outcome(fn, { tc, sc, rest, svc });
      const e = got?.error;
      const problem = !got
        ? 'was accepted'
        : !(e instanceof cls)
          ? `threw ${e?.name}: ${e?.message} (want ${cls.name})`
          : e.field !== field
            ? `field ${JSON.stringify(e.field)} (want ${JSON.stringify(field)}): ${e.message}`
            : !String(e.message).includes(shown)
              ? `message ${JSON.stringify(e.message)} does not show ${JSON.stringify(shown)}`
              : // Client methods reject (they never throw); builders throw.
                got.sync && fn.length > 0
                ? `threw synchronously instead of rejecting: ${e.message}`
                : requests !== sent
                  ? `sent ${requests - sent} request(s)`
                  : null;
      if (problem) failures.push(`${label}: ${problem}`);
    }
    assert.deepEqual(failures, [], `${failures.length} of ${TABLE.length} rows failed`);
    assert.equal(requests, sent, 'requests sent by bad calls');
    assert.equal(tc.nextSeqId, seqBefore, 'seq id after bad calls');
    // Changed nothing: the next valid calls run, in order, with no gap or duplicate.
    const [out] = await Promise.all([tc.forwardBackward([good(), good()], 'cross_entropy'), tc.optimStep({ learning_rate: 0.01 })]);
    assert.equal(out.loss_fn_outputs.length, 2);
    const r = await sc.sample({ prompt: [1, 2], numSamples: 2, samplingParams: { max_tokens: 2, seed: 1 } });
    assert.equal(r.sequences.length, 2);
    const model = await admin(ctx, `models/${encodeURIComponent(tc.modelId)}`);
    const seqs = model.applied.map((a) => a.seq_id);
    assert.deepEqual(seqs, Array.from({ length: seqs.length }, (_, i) => i), 'applied seq ids');
    assert.deepEqual(model.applied.slice(-4).map((a) => a.kind), ['forward_backward', 'optim_step', 'forward_backward', 'optim_step']);
    assert.deepEqual(model.failed, []);
    assert.equal(tc.nextSeqId, seqs.length);
    await svc.close();
  },
};
