// Memory and lifetime (issue 9), in Node:
//  - wasm linear memory stays flat over many calls (builders, tokenizer, rejected bad
//    input, full REST calls through the HTTP/JSON pipeline with an in-process fetch,
//    clients created and freed); MEMORY_CALLS=100000 for the long run (tests/NOTES-issue9.md);
//  - free() / Symbol.dispose on a client while its call is in flight does not crash the
//    module: the call settles, other objects keep working.
//   node --test tests/js/memory.test.mjs
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import * as tinker from '../../pkg/index.js';
import { startSim } from './sim.mjs';
import { withTimeout } from './harness.js';

const CALLS = Number(process.env.MEMORY_CALLS ?? 20_000);
const WARMUP = 2_000;
const sim = await startSim(['--seed', '9']);
after(() => sim.stop());

async function admin(p, body) {
  const r = await fetch(`${sim.url}/_sim/${p}`, body ? { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) } : undefined);
  assert.ok(r.ok, `admin ${p}: ${r.status}`);
  return r.json();
}

test(`wasm memory is flat over ${CALLS} calls after a warm-up`, { timeout: 600_000 }, async () => {
  // An in-process server: every REST call goes through the whole HTTP and JSON path.
  const run = JSON.stringify({ training_run_id: 'run-1', base_model: 'Qwen/Qwen3-8B', model_owner: 'me', is_lora: true, lora_rank: 8, corrupted: false, last_request_time: '2026-01-01T00:00:00Z', last_checkpoint: null, last_sampler_checkpoint: null, user_metadata: { k: 'v'.repeat(200) } });
  const local = async () => new Response(run, { status: 200, headers: { 'content-type': 'application/json', 'x-request-id': 'r' } });
  const rest = new tinker.RestClient({ apiKey: 'tml-memory', baseURL: 'http://127.0.0.1:9', fetch: local, heartbeat: false, telemetry: false });
  // A small tokenizer (the fuzz seed's): loading a real one leaves megabytes of freed
  // heap behind, which would hide a leak from a page count.
  const tok = tinker.Tokenizer.fromJSON(readFileSync('fuzz/seeds/tiny_tokenizer.json'));
  const text = 'Hello world, tinker! Memory must stay flat: 12345 ';
  let checksum = 0;
  const one = async (i) => {
    const ids = tok.encode(text + i);
    checksum += tok.decode(ids).length;
    const d = tinker.datumFromTokens(Array.from(ids), { prompt_length: 2 });
    checksum += d.loss_fn_inputs.weights.data.length;
    checksum += tinker.ModelInput.fromInts(ids).chunks[0].tokens.length;
    try {
      tinker.ModelInput.fromInts([1, -i - 1]);
    } catch (e) {
      checksum += e.field.length;
    }
    await rest.listTrainingRunsPage({ limit: -1 }).catch((e) => (checksum += e.field.length));
    const r = await rest.getTrainingRun(`run-${i}`);
    checksum += r.training_run_id.length;
    if (i % 10 === 0) {
      // A client created and freed (what FinalizationRegistry does for a dropped one).
      const c = new tinker.ServiceClient({ apiKey: 'tml-memory', baseURL: 'http://127.0.0.1:9', fetch: local, heartbeat: false, telemetry: false });
      c.free();
    }
  };
  for (let i = 0; i < WARMUP; i++) await one(i);
  const before = tinker.__benchWasmMemoryBytes();
  const t0 = Date.now();
  for (let i = 0; i < CALLS; i++) await one(i);
  const afterBytes = tinker.__benchWasmMemoryBytes();
  console.log(`# wasm memory: ${before} bytes after ${WARMUP} warm-up iterations, ${afterBytes} after ${CALLS} more (${CALLS * 7} SDK calls, ${Date.now() - t0} ms)`);
  assert.ok(checksum > 0);
  assert.equal(afterBytes - before, 0, `wasm memory grew by ${afterBytes - before} bytes over ${CALLS} iterations`);
  rest.free();
  tok.free();
});

test('free() and Symbol.dispose while a call is in flight: the call settles, the module keeps working', { timeout: 120_000 }, async () => {
  const service = () => new tinker.ServiceClient({ apiKey: 'tml-lifetime', baseURL: sim.url, heartbeat: false, telemetry: false });
  const data = [tinker.datumFromTokens([5, 6, 7, 8], { prompt_length: 1 })];
  const svc = service();
  const tc = await svc.createLoraTrainingClient({ base_model: 'Qwen/Qwen3-8B', rank: 8, seed: 2 });
  const sampler = await svc.createSamplingClient({ base_model: 'Qwen/Qwen3-8B' });
  await admin('config', { future_delay_ms: 300 });
  const settled = (p) => withTimeout(p.then((v) => ({ ok: true, v }), (e) => ({ ok: false, e })), 30_000, 'the in-flight call');
  try {
    // A TrainingClient freed mid-call.
    const modelId = tc.modelId;
    const fb = tc.forwardBackward(data, 'cross_entropy');
    const opt = tc.optimStep({ learning_rate: 0.01 });
    tc.free();
    const [a, b] = await Promise.all([settled(fb), settled(opt)]);
    // The calls already made complete: free() drops the JS handle, not the requests.
    assert.ok(a.ok, `forwardBackward settled with ${a.e}`);
    assert.ok(Number.isFinite(a.v.metrics['loss:sum']), 'forwardBackward has a loss');
    assert.ok(b.ok, `optimStep settled with ${b.e}`);
    assert.equal(b.v.type, 'optim_step');
    const freed = await admin(`models/${encodeURIComponent(modelId)}`);
    assert.deepEqual(freed.applied.map((x) => x.seq_id), [0, 1, 2], 'both calls of the freed client reached the server, in order');
    // The freed object says so clearly (a JS Error), and nothing else is affected.
    assert.throws(() => tc.forwardBackward(data, 'cross_entropy'), (e) => e.constructor === Error && /null pointer passed to rust/.test(e.message));
    // A SamplingClient disposed mid-sample (Symbol.dispose = free).
    assert.equal(typeof sampler[Symbol.dispose], 'function');
    const s = sampler.sample({ prompt: [5, 6], num_samples: 2, sampling_params: { max_tokens: 3, seed: 1 } });
    sampler[Symbol.dispose]();
    const sr = await settled(s);
    assert.ok(sr.ok, `sample settled with ${sr.e}`);
    assert.equal(sr.v.sequences.length, 2);
    // The ServiceClient itself freed while one of its calls is in flight.
    const svc2 = service();
    const pending = svc2.createLoraTrainingClient({ base_model: 'Qwen/Qwen3-8B', rank: 8, seed: 3 });
    svc2[Symbol.dispose]();
    const pr = await settled(pending);
    assert.ok(pr.ok, `createLoraTrainingClient settled with ${pr.e}`);
    assert.ok(pr.v instanceof tinker.TrainingClient);
    const created = await admin(`models/${encodeURIComponent(pr.v.modelId)}`);
    assert.equal(created.applied.length, 1, 'the model was created on the server');
    pr.v.free();
  } finally {
    await admin('config', { future_delay_ms: 10 });
  }
  // The module and the other objects still work: a new training client trains, in order.
  const tc2 = await svc.createLoraTrainingClient({ base_model: 'Qwen/Qwen3-8B', rank: 8, seed: 4 });
  const [out] = await Promise.all([tc2.forwardBackward(data, 'cross_entropy'), tc2.optimStep({ learning_rate: 0.01 })]);
  assert.ok(Number.isFinite(out.metrics['loss:sum']));
  const model = await admin(`models/${encodeURIComponent(tc2.modelId)}`);
  assert.deepEqual(model.applied.map((x) => x.seq_id), [0, 1, 2]);
  await svc.close();
});
