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

const good = () => tinker.datumFromTokens([100, 101, 102, 103], { prompt_length: 1 });
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
  ['fb unknown loss fn', ({ tc }) => tc.forwardBackward([good()], 'cross_entropyy'), RangeError, 'loss_fn', 'cross_entropyy'],
  ['fb loss fn not a string', ({ tc }) => tc.forwardBackward([good()], 7), TypeError, 'loss_fn', '7'],
  ['fb unknown param', ({ tc }) => tc.forwardBackward([good()], 'cross_entropy', { loss_fn_confg: {} }), TypeError, 'loss_fn_confg', 'unknown option'],
  ['fb camelCase param', ({ tc }) => tc.forwardBackward([good()], 'cross_entropy', { lossFnConfig: {} }), TypeError, 'lossFnConfig', 'expected one of: loss_fn_config'],
  ['fb request option among the params', ({ tc }) => tc.forwardBackward([good()], 'cross_entropy', { signal: new AbortController().signal }), TypeError, 'signal', 'go in the next argument'],
  ['fb loss_fn_config not an object', ({ tc }) => tc.forwardBackward([good()], 'ppo', { loss_fn_config: 0.2 }), TypeError, 'loss_fn_config', '0.2'],
  ['fb loss_fn_config NaN', ({ tc }) => tc.forwardBackward([good()], 'ppo', { loss_fn_config: { clip_low_threshold: NaN } }), RangeError, 'loss_fn_config.clip_low_threshold', 'NaN'],
  ['fb unknown request option', ({ tc }) => tc.forwardBackward([good()], 'cross_entropy', {}, { maxRetry: 1 }), TypeError, 'maxRetry', 'unknown option'],
  ['fb params not an object', ({ tc }) => tc.forwardBackward([good()], 'cross_entropy', 5), TypeError, 'forwardBackward params', '5'],
  ['fb request options not an object', ({ tc }) => tc.forwardBackward([good()], 'cross_entropy', {}, 5), TypeError, 'forwardBackward options', '5'],
  ['fb negative timeout', ({ tc }) => tc.forwardBackward([good()], 'cross_entropy', {}, { timeout: -5 }), RangeError, 'timeout', '-5'],
  ['fb NaN timeout', ({ tc }) => tc.forwardBackward([good()], 'cross_entropy', undefined, { timeout: NaN }), RangeError, 'timeout', 'NaN'],
  ['fb signal not a signal', ({ tc }) => tc.forwardBackward([good()], 'cross_entropy', {}, { signal: 'stop' }), TypeError, 'signal', 'stop'],
  ['forward bad datum', ({ tc }) => tc.forward([datum({ tokens: [1, -3, 2] })], 'cross_entropy'), RangeError, 'data[0].model_input.chunks[0].tokens[1]', '-3'],
  // forwardBackwardCustom
  ['fbc loss fn not a function', ({ tc }) => tc.forwardBackwardCustom([good()], 'cross_entropy'), TypeError, 'loss_fn', 'cross_entropy'],
  ['fbc bad datum', ({ tc }) => tc.forwardBackwardCustom([datum({ weights: [1, NaN, 1] })], () => ({})), RangeError, 'data[0].loss_fn_inputs.weights.data[1]', 'NaN'],
  ['fbc unknown option', ({ tc }) => tc.forwardBackwardCustom([good()], () => ({}), { loss_fn_config: {} }), TypeError, 'loss_fn_config', 'unknown option'],
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
  ['sample num_samples 0', ({ sc }) => sc.sample({ prompt: [1, 2], num_samples: 0, sampling_params: { max_tokens: 2 } }), RangeError, 'num_samples', '0'],
  ['sample num_samples -1', ({ sc }) => sc.sample({ prompt: [1, 2], num_samples: -1, sampling_params: { max_tokens: 2 } }), RangeError, 'num_samples', '-1'],
  ['sample num_samples 1e9', ({ sc }) => sc.sample({ prompt: [1, 2], num_samples: 1e9, sampling_params: { max_tokens: 2 } }), RangeError, 'num_samples', '1000000000'],
  ['sample num_samples NaN', ({ sc }) => sc.sample({ prompt: [1, 2], num_samples: NaN, sampling_params: { max_tokens: 2 } }), RangeError, 'num_samples', 'NaN'],
  ['sample num_samples 1.5', ({ sc }) => sc.sample({ prompt: [1, 2], num_samples: 1.5, sampling_params: { max_tokens: 2 } }), TypeError, 'num_samples', '1.5'],
  ['sample num_samples string', ({ sc }) => sc.sample({ prompt: [1, 2], num_samples: '2', sampling_params: { max_tokens: 2 } }), TypeError, 'num_samples', '"2"'],
  ['sample unknown sampling_params key', ({ sc }) => sc.sample({ prompt: [1, 2], sampling_params: { maxTokens: 2 } }), TypeError, 'sampling_params.maxTokens', 'unknown option'],
  ['sample max_tokens -1', ({ sc }) => sc.sample({ prompt: [1, 2], sampling_params: { max_tokens: -1 } }), RangeError, 'sampling_params.max_tokens', '-1'],
  ['sample max_tokens 2^32', ({ sc }) => sc.sample({ prompt: [1, 2], sampling_params: { max_tokens: 2 ** 32 } }), RangeError, 'sampling_params.max_tokens', '4294967296'],
  ['sample max_tokens NaN', ({ sc }) => sc.sample({ prompt: [1, 2], sampling_params: { max_tokens: NaN } }), RangeError, 'sampling_params.max_tokens', 'NaN'],
  ['sample temperature -1', ({ sc }) => sc.sample({ prompt: [1, 2], sampling_params: { max_tokens: 2, temperature: -1 } }), RangeError, 'sampling_params.temperature', '-1'],
  ['sample top_p 0', ({ sc }) => sc.sample({ prompt: [1, 2], sampling_params: { max_tokens: 2, top_p: 0 } }), RangeError, 'sampling_params.top_p', '0'],
  ['sample top_k 0', ({ sc }) => sc.sample({ prompt: [1, 2], sampling_params: { max_tokens: 2, top_k: 0 } }), RangeError, 'sampling_params.top_k', '0'],
  ['sample stop mixed', ({ sc }) => sc.sample({ prompt: [1, 2], sampling_params: { max_tokens: 2, stop: ['a', 3] } }), TypeError, 'sampling_params.stop[1]', '3'],
  ['sample sampling_params not an object', ({ sc }) => sc.sample({ prompt: [1, 2], sampling_params: 'greedy' }), TypeError, 'sampling_params', 'greedy'],
  ['sample prompt missing', ({ sc }) => sc.sample({ num_samples: 1, sampling_params: { max_tokens: 2 } }), TypeError, 'prompt', 'required'],
  ['sample prompt token -1', ({ sc }) => sc.sample({ prompt: [1, -1], sampling_params: { max_tokens: 2 } }), RangeError, 'prompt[1]', '-1'],
  ['sample huge prompt', ({ sc }) => sc.sample({ prompt: sparse(MAX_ELEMENTS + 1), sampling_params: { max_tokens: 2 } }), RangeError, 'prompt', String(MAX_ELEMENTS + 1)],
  ['sample unknown param', ({ sc }) => sc.sample({ prompt: [1, 2], numSamples: 2 }), TypeError, 'numSamples', 'expected one of: prompt, num_samples, sampling_params'],
  ['sample timeout among the params', ({ sc }) => sc.sample({ prompt: [1, 2], timeout: 5 }), TypeError, 'timeout', 'go in the next argument'],
  ['sample bad request option', ({ sc }) => sc.sample({ prompt: [1, 2] }, { timeout: 0 }), RangeError, 'timeout', '0'],
  ['sample retry_config in sample', ({ sc }) => sc.sample({ prompt: [1, 2], retry_config: {} }), TypeError, 'retry_config', 'unknown option'],
  ['sample include_prompt_logprobs not a boolean', ({ sc }) => sc.sample({ prompt: [1, 2], include_prompt_logprobs: 1 }), TypeError, 'include_prompt_logprobs', '1'],
  ['sample topk_prompt_logprobs negative', ({ sc }) => sc.sample({ prompt: [1, 2], topk_prompt_logprobs: -2 }), RangeError, 'topk_prompt_logprobs', '-2'],
  ['computeLogprobs bad prompt_logprobs_last_n', ({ sc }) => sc.computeLogprobs([1, 2], { prompt_logprobs_last_n: 1.5 }), TypeError, 'prompt_logprobs_last_n', '1.5'],
  ['sample params not an object', ({ sc }) => sc.sample([1, 2]), TypeError, 'sample params', 'an array'],
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
  ['datumFromTokens prompt_length too long', () => tinker.datumFromTokens([1, 2, 3], { prompt_length: 5 }), RangeError, 'prompt_length', '5'],
  ['datumFromTokens negative prompt_length', () => tinker.datumFromTokens([1, 2, 3], { prompt_length: -1 }), RangeError, 'prompt_length', '-1'],
  ['datumFromTokens unknown option', () => tinker.datumFromTokens([1, 2, 3], { promptLength: 1 }), TypeError, 'promptLength', 'unknown option'],
  ['TensorData.fromArray NaN float', () => tinker.TensorData.fromArray([1, NaN], { dtype: 'float32' }), RangeError, 'data.data[1]', 'NaN'],
  ['TensorData.fromArray shape mismatch', () => tinker.TensorData.fromArray([1, 2, 3], { dtype: 'int64', shape: [2, 2] }), RangeError, 'data.shape', '[2, 2]'],
  ['TensorData.fromArray bad dtype', () => tinker.TensorData.fromArray([1, 2], { dtype: 'bf16' }), TypeError, 'data.dtype', 'bf16'],
  ['TensorData.fromArray unknown option', () => tinker.TensorData.fromArray([1, 2], { dtype: 'int64', shapes: [2] }), TypeError, 'shapes', 'unknown option'],
  // REST
  ['rest bad tinker path', ({ rest }) => rest.getTrainingRunByTinkerPath('https://x/y'), TypeError, 'path', 'https://x/y'],
  ['rest path not a string', ({ rest }) => rest.getWeightsInfoByTinkerPath(42), TypeError, 'path', '42'],
  ['rest delete incomplete path', ({ rest }) => rest.deleteCheckpointFromTinkerPath('tinker://run-1/weights'), TypeError, 'path', 'tinker://run-1/weights'],
  ['rest publish bad kind', ({ rest }) => rest.publishCheckpointFromTinkerPath('tinker://run-1/bogus/ckpt'), TypeError, 'path', 'bogus'],
  ['rest negative ttl', ({ rest }) => rest.setCheckpointTtlFromTinkerPath('tinker://run-1/weights/ckpt', { ttl_seconds: -5 }), RangeError, 'ttl_seconds', '-5'],
  ['rest NaN ttl', ({ rest }) => rest.setCheckpointTtlFromTinkerPath('tinker://run-1/weights/ckpt', { ttl_seconds: NaN }), RangeError, 'ttl_seconds', 'NaN'],
  ['rest negative limit', ({ rest }) => rest.listTrainingRunsPage({ limit: -1 }), RangeError, 'limit', '-1'],
  ['rest limit NaN', ({ rest }) => rest.listTrainingRunsPage({ limit: NaN }), RangeError, 'limit', 'NaN'],
  ['rest negative offset', ({ rest }) => rest.listTrainingRunsPage({ offset: -10 }), RangeError, 'offset', '-10'],
  ['rest fractional offset', ({ rest }) => rest.listUserCheckpointsPage({ offset: 0.5 }), TypeError, 'offset', '0.5'],
  ['rest sessions negative limit', ({ rest }) => rest.listSessionsPage({ limit: -3 }), RangeError, 'limit', '-3'],
  ['rest unknown option', ({ rest }) => rest.listTrainingRunsPage({ lmit: 5 }), TypeError, 'lmit', 'unknown option'],
  ['rest camelCase accessScope', ({ rest }) => rest.listTrainingRunsPage({ accessScope: 'owned' }), TypeError, 'accessScope', 'expected one of: limit, offset, access_scope, project_id'],
  ['rest bad access_scope', ({ rest }) => rest.getTrainingRun('run-1', { access_scope: 'everyone' }), RangeError, 'access_scope', 'everyone'],
  ['rest assignSessionProject without project_id', ({ rest }) => rest.assignSessionProject('s-1', {}), TypeError, 'project_id', 'undefined'],
  ['rest getBillingUsage bad starting_on', ({ rest }) => rest.getBillingUsage({ starting_on: 5, ending_before: '2026-01-02T00:00:00Z' }), TypeError, 'starting_on', '5'],
  ['rest training run id not a string', ({ rest }) => rest.getTrainingRun(null), TypeError, 'training_run_id', 'null'],
  // service
  ['service unknown createLoraTrainingClient option', ({ svc }) => svc.createLoraTrainingClient({ base_model: 'Qwen/Qwen3-8B', ranks: 8 }), TypeError, 'ranks', 'unknown option'],
  ['service NaN rank', ({ svc }) => svc.createLoraTrainingClient({ base_model: 'Qwen/Qwen3-8B', rank: NaN }), RangeError, 'rank', 'NaN'],
  ['service unknown createSamplingClient option', ({ svc }) => svc.createSamplingClient({ baseModel: 'Qwen/Qwen3-8B' }), TypeError, 'baseModel', 'unknown option'],
  ['service createLoraTrainingClient without base_model', ({ svc }) => svc.createLoraTrainingClient({ rank: 8 }), TypeError, 'base_model', 'required'],
  ['service createLoraTrainingClient train_mlp not a boolean', ({ svc }) => svc.createLoraTrainingClient({ base_model: 'Qwen/Qwen3-8B', train_mlp: 'yes' }), TypeError, 'train_mlp', 'yes'],
  ['service createSamplingClient bad retry_config key', ({ svc }) => svc.createSamplingClient({ base_model: 'Qwen/Qwen3-8B', retry_config: { maxConnections: 2 } }), TypeError, 'maxConnections', 'unknown option'],
  ['service createSamplingClient max_connections 0', ({ svc }) => svc.createSamplingClient({ base_model: 'Qwen/Qwen3-8B', retry_config: { max_connections: 0 } }), RangeError, 'retry_config.max_connections', 'positive'],
  ['service saveState unknown option', ({ tc }) => tc.saveState('x', { ttl: 5 }), TypeError, 'ttl', 'unknown option'],
  ['service saveState ttl_seconds string', ({ tc }) => tc.saveState('x', { ttl_seconds: '5' }), TypeError, 'ttl_seconds', '"5"'],
  ['service saveState request option among params', ({ tc }) => tc.saveState('x', { timeout: 5 }), TypeError, 'timeout', 'go in the next argument'],
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
    const tc = await svc.createLoraTrainingClient({ base_model: 'Qwen/Qwen3-8B', rank: 8, seed: 5 });
    const sc = await svc.createSamplingClient({ base_model: 'Qwen/Qwen3-8B' });
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
    const r = await sc.sample({ prompt: [1, 2], num_samples: 2, sampling_params: { max_tokens: 2, seed: 1 } });
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
