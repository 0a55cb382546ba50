// Fault soak (issue 9): the same workload of N operations — pipelined forwardBackward +
// optimStep on several TrainingClients, sampling at 200 concurrency, REST calls — against
// two tinker-sims with the same seed, one fault-free and one injecting ~20 % faults of
// every kind it supports. Then, from the simulators' own records (admin endpoints and
// request logs), and from the client side:
//
//   * every training request applied exactly once, in seq order, nothing failed or pending;
//   * final weights (the simulator's digest of adapter + Adam state), every loss, every
//     per-token logprob and every sample identical to the fault-free run;
//   * every operation's promise settled exactly once with the expected outcome, none
//     pending, no unhandled rejection or uncaught exception;
//   * retries bounded by the policy (crates/core/src/client/retry.rs): per idempotency key, per logical
//     submission, per polled future, with the minimum waits the policy prescribes;
//   * after close(): no timer left, no fetch in flight, no request sent.
//
//   node tests/soak/soak.mjs [--ops 10000] [--seed 1] [--concurrency 200] [--out DIR]
//                            [--faults SPEC] [--deadline-s 1200]
// Exit status 0 only if every check passes. Artifacts (request logs, report.json) in --out.
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { startSim } from '../js/sim.mjs';
import { analyzeLog, readLog } from './analyze.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

// The package under test: pkg/ (`tinker-wasm`), or another build of it — the mutation
// check in tests/NOTES-issue9.md runs the soak against a deliberately broken build, whose
// mutations `globalThis.__SOAK_MUTATION` selects (unused by real builds).
const tinker = await import(process.env.SOAK_TINKER_WASM ? pathToFileURL(path.resolve(process.env.SOAK_TINKER_WASM)).href : 'tinker-wasm');
if (process.env.SOAK_MUTATION) globalThis.__SOAK_MUTATION = process.env.SOAK_MUTATION;

// ---------------------------------------------------------------------------------------
// Options

// Every fault kind tinker-sim has (tests/sim/README.md), ~20 % of API requests in all.
// 401 needs JWT auth, which is a separate configuration (the conformance suite covers
// it); `deprecation` is not a fault but a header, so neither is here. `malformed` is
// scoped where a client can recover from a truncated 200 (heartbeats; polls, which are
// idempotent): on a submit it is indistinguishable from a server bug and is an error.
export const DEFAULT_FAULTS = [
  '429:0.02:1', // Retry-After: 1 (seconds)
  '429ms:0.03:50', // retry-after-ms: 50
  '429date:0.01:1', // Retry-After: an HTTP date 1–2 s ahead
  '500:0.02',
  '502:0.02',
  '503:0.02',
  '408:0.015',
  'garbled:0.01', // 502 with a truncated HTML body
  'drop:0.02', // connection reset, request not applied
  'lost:0.03', // applied, then the connection reset (idempotent submits)
  'slow:0.02:300', // +300 ms
  'malformed:0.1@session_heartbeat',
  'malformed:0.01@retrieve_future$',
  'storm:0.05:10', // 10 immediate try_again polls
  'paused:0.02',
  'expire:0.03', // 410 on sampling futures: the client resubmits
].join(',');

function parseArgs(argv) {
  const o = { ops: 10000, seed: 1, concurrency: 200, out: path.join(root, 'target/soak'), faults: DEFAULT_FAULTS, deadlineS: 1200, mutate: null };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const v = () => {
      if (i + 1 >= argv.length) throw new Error(`${a} needs a value`);
      return argv[++i];
    };
    if (a === '--ops') o.ops = Number(v());
    else if (a === '--seed') o.seed = Number(v());
    else if (a === '--concurrency') o.concurrency = Number(v());
    else if (a === '--out') o.out = path.resolve(v());
    else if (a === '--faults') o.faults = v();
    else if (a === '--deadline-s') o.deadlineS = Number(v());
    else if (a === '--help' || a === '-h') {
      console.log('node tests/soak/soak.mjs [--ops N] [--seed N] [--concurrency N] [--out DIR] [--faults SPEC] [--deadline-s N]');
      process.exit(0);
    } else throw new Error(`unknown argument ${a}`);
  }
  if (!Number.isInteger(o.ops) || o.ops < 200) throw new Error('--ops must be an integer ≥ 200');
  return o;
}

// ---------------------------------------------------------------------------------------
// The plan: a fixed list of operations, the same for both runs.

const BASES = ['Qwen/Qwen3-8B', 'meta-llama/Llama-3.2-1B'];
const TRAINERS = 8;
const DEPTH = 4; // training steps in flight per client (fb + optim each, not awaited)

// A small deterministic PRNG (mulberry32).
function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export function makePlan(ops) {
  // Fixed per-client work, then REST and sampling fill the rest of the budget.
  const steps = Math.max(8, Math.round((ops * 0.25) / (TRAINERS * 2.15)));
  const evalEvery = 8;
  const saveEvery = 50;
  const trainer = (c) => {
    const list = [];
    for (let s = 0; s < steps; s++) {
      list.push({ kind: 'step', step: s });
      if (s % evalEvery === evalEvery - 1) list.push({ kind: 'forward', step: s });
      if (s % saveEvery === saveEvery - 1) list.push({ kind: 'save_state', step: s, name: `soak-c${c}-s${s}` });
    }
    return list;
  };
  const trainers = Array.from({ length: TRAINERS }, (_, c) => ({ base: BASES[c % BASES.length], rank: [4, 8, 16][c % 3], seed: 100 + c, ops: trainer(c) }));
  const trainingOps = trainers.reduce((n, t) => n + t.ops.reduce((m, o) => m + (o.kind === 'step' ? 2 : 1), 0), 0);
  const setupOps = TRAINERS + 2 + 1; // create training clients, two base samplers, one sampler on tc0's initial weights
  const finalOps = TRAINERS * (1 + 4); // saveWeightsAndGetSamplingClient + 4 samples each
  const rest = Math.round(ops * 0.1);
  const samples = ops - setupOps - trainingOps - finalOps - rest;
  if (samples < 100) throw new Error(`--ops ${ops} leaves only ${samples} samples`);
  return { ops, steps, trainers, rest, samples, setupOps, trainingOps, finalOps };
}

function batch(c, s) {
  const r = rng(1_000_003 * (c + 1) + s);
  return Array.from({ length: 4 }, () => {
    const toks = Array.from({ length: 6 }, () => 100 + Math.floor(r() * 20000));
    return tinker.datumFromTokens(toks, { prompt_length: 2 });
  });
}
const evalBatch = (c) => batch(c + 977, 0);

// ---------------------------------------------------------------------------------------
// Operation tracking: every promise the workload creates goes through `track`.

class Tracker {
  constructor(label) {
    this.label = label;
    this.ops = new Map();
    this.invalid = [];
  }
  /** `expect`: 'resolve', or a predicate an expected rejection must satisfy. */
  track(id, promise, expect = 'resolve') {
    if (this.ops.has(id)) throw new Error(`duplicate op id ${id}`);
    const rec = { id, expect, resolved: 0, rejected: 0, value: undefined, error: undefined, ms: 0 };
    const t0 = performance.now();
    this.ops.set(id, rec);
    return promise.then(
      (v) => {
        rec.resolved++;
        rec.value = v;
        rec.ms = performance.now() - t0;
        return v;
      },
      (e) => {
        rec.rejected++;
        rec.error = e;
        rec.ms = performance.now() - t0;
        throw e;
      },
    );
  }
  /** Tracks an op and hands its value to `use`; never rejects (rejections are recorded,
   *  and so is a value `use` finds wrong), so one failure does not stop the workload. */
  run(id, promise, use = () => {}, expect = 'resolve') {
    return this.track(id, promise, expect).then(
      (v) => {
        try {
          use(v);
        } catch (e) {
          this.invalid.push(`${this.label} ${id}: ${e.message}`);
        }
        return v;
      },
      () => undefined,
    );
  }
  problems() {
    const out = [...this.invalid];
    for (const r of this.ops.values()) {
      const n = r.resolved + r.rejected;
      if (n !== 1) out.push(`${this.label} ${r.id}: settled ${n} times`);
      else if (r.expect === 'resolve' && r.rejected) out.push(`${this.label} ${r.id}: rejected: ${r.error?.name}: ${r.error?.message}`);
      else if (r.expect !== 'resolve' && r.resolved) out.push(`${this.label} ${r.id}: resolved, expected a rejection`);
      else if (r.expect !== 'resolve' && !r.expect(r.error)) out.push(`${this.label} ${r.id}: unexpected rejection ${r.error?.name}: ${r.error?.message}`);
    }
    return out;
  }
  /** Latency per kind of operation (the op id up to its first colon), in ms. */
  latencies() {
    const by = {};
    for (const r of this.ops.values()) (by[r.id.split(':')[0]] ??= []).push(r.ms);
    const q = (a, f) => Math.round(a[Math.min(a.length - 1, Math.floor(f * a.length))]);
    return Object.fromEntries(
      Object.entries(by).map(([k, a]) => {
        a.sort((x, y) => x - y);
        return [k, { n: a.length, p50: q(a, 0.5), p99: q(a, 0.99), max: Math.round(a.at(-1)) }];
      }),
    );
  }
  pending() {
    return [...this.ops.values()].filter((r) => r.resolved + r.rejected === 0).map((r) => r.id);
  }
}

// A digest of an output that the two runs must agree on exactly (Float32 bits included).
function digestFwd(out) {
  const lp = out.loss_fn_outputs.map((o) => Array.from(o.logprobs.data));
  return JSON.stringify({ m: out.metrics, lp });
}
function digestSample(r) {
  return JSON.stringify({
    s: r.sequences.map((q) => [q.stop_reason, Array.from(q.tokens), q.logprobs ? Array.from(q.logprobs) : null]),
    p: r.prompt_logprobs ?? null,
  });
}

// ---------------------------------------------------------------------------------------
// One run of the workload against one simulator.

async function admin(url, p) {
  const r = await fetch(`${url}/_sim/${p}`);
  if (!r.ok) throw new Error(`admin ${p}: ${r.status} ${await r.text()}`);
  return r.json();
}

/** A `fetch` that counts requests in flight and notices any sent after its client closed. */
function watchedFetch(label) {
  const w = { label, inflight: 0, sent: 0, closed: false, afterClose: [] };
  w.fetch = async (url, init) => {
    if (w.closed) w.afterClose.push(`${init?.method ?? 'GET'} ${url}`);
    w.sent++;
    w.inflight++;
    try {
      return await fetch(url, init);
    } finally {
      w.inflight--;
    }
  };
  return w;
}

async function runWorkload(url, plan, opts, label) {
  const T = new Tracker(label);
  const logs = [];
  const logger = { debug() {}, info() {}, warn: (m) => logs.push(['warn', m]), error: (m) => logs.push(['error', m]) };
  const fTrain = watchedFetch(`${label}/train`);
  const fSample = watchedFetch(`${label}/sample`);
  // Background timers on (heartbeat, config refresh, telemetry): they must all stop at close().
  const common = { apiKey: 'tml-soak', baseURL: url, heartbeat: true, telemetry: true, logger, logLevel: 'warn' };
  const svcTrain = new tinker.ServiceClient({ ...common, fetch: fTrain.fetch });
  const svcSample = new tinker.ServiceClient({ ...common, fetch: fSample.fetch });
  const results = new Map(); // op id -> digest to compare across runs
  const t0 = performance.now();

  // Setup (without it there is no workload: a failure here ends the run).
  const setupFailed = (e) => {
    throw new Error(`${label}: setup failed: ${e?.name}: ${e?.message}`);
  };
  const trainers = await Promise.all(
    plan.trainers.map((t, c) => T.track(`create:${c}`, svcTrain.createLoraTrainingClient({ base_model: t.base, rank: t.rank, seed: t.seed }))),
  ).catch(setupFailed);
  const issued = trainers.map(() => ['create']); // request kinds in call order, per model
  issued[0].push('save_weights_for_sampler');
  const samplers = await Promise.all([
    T.track('sampler:qwen', svcSample.createSamplingClient({ base_model: BASES[0] })),
    T.track('sampler:llama', svcSample.createSamplingClient({ base_model: BASES[1] })),
    T.track('sampler:tc0-init', trainers[0].saveWeightsAndGetSamplingClient()),
  ]).catch(setupFailed);

  // Training: each client pipelines DEPTH steps (fb + optim, not awaited in between).
  const train = async (c) => {
    const tc = trainers[c];
    const inflight = [];
    for (const op of plan.trainers[c].ops) {
      if (op.kind === 'step') {
        const fb = T.run(`fb:${c}:${op.step}`, tc.forwardBackward(batch(c, op.step), 'cross_entropy'), (o) => results.set(`fb:${c}:${op.step}`, digestFwd(o)));
        const opt = T.run(`optim:${c}:${op.step}`, tc.optimStep({ learning_rate: 0.01 }), (o) => results.set(`optim:${c}:${op.step}`, JSON.stringify(o?.metrics ?? null)));
        issued[c].push('forward_backward', 'optim_step');
        inflight.push(Promise.all([fb, opt]));
      } else if (op.kind === 'forward') {
        issued[c].push('forward');
        inflight.push(T.run(`fwd:${c}:${op.step}`, tc.forward(evalBatch(c), 'cross_entropy'), (o) => results.set(`fwd:${c}:${op.step}`, digestFwd(o))));
      } else if (op.kind === 'save_state') {
        issued[c].push('save_weights');
        inflight.push(T.run(`save:${c}:${op.step}`, tc.saveState(op.name), (r) => results.set(`save:${c}:${op.step}`, r.path.split('/weights/')[1])));
      }
      while (inflight.length >= DEPTH) await inflight.shift();
    }
    await Promise.all(inflight);
    // The trained weights, through sampling.
    issued[c].push('save_weights_for_sampler');
    const s = await T.run(`final-sampler:${c}`, tc.saveWeightsAndGetSamplingClient());
    if (!s) return; // recorded; its samples are missing from the comparison
    await Promise.all(
      [0, 1, 2, 3].map((k) =>
        T.run(`final-sample:${c}:${k}`, s.sample({ prompt: batch(c, k)[0].model_input, num_samples: 2, sampling_params: { max_tokens: 6, seed: 31 * c + k, temperature: 1 } }), (r) =>
          results.set(`final-sample:${c}:${k}`, digestSample(r)),
        ),
      ),
    );
  };

  // Sampling: `concurrency` workers over `plan.samples` requests on three samplers.
  let nextSample = 0;
  const sampleWorker = async () => {
    while (nextSample < plan.samples) {
      const i = nextSample++;
      const r = rng(i + 7);
      const prompt = Array.from({ length: 1 + (i % 5) }, () => 100 + Math.floor(r() * 30000));
      const req = { prompt, num_samples: 1 + (i % 2), sampling_params: { max_tokens: 2 + (i % 5), seed: i, temperature: 1 }, include_prompt_logprobs: i % 10 === 0 && prompt.length > 1 };
      await T.run(`sample:${i}`, samplers[i % samplers.length].sample(req), (out) => results.set(`sample:${i}`, digestSample(out)));
    }
  };

  // REST: 8 workers; one call in 7 asks for a run that does not exist (an expected 404).
  const rest = svcTrain.restClient();
  const sessionId = () => svcTrain.sessionState()?.sessionId;
  let nextRest = 0;
  const restWorker = async () => {
    while (nextRest < plan.rest) {
      const j = nextRest++;
      const tc = trainers[j % trainers.length];
      const id = `rest:${j}`;
      switch (j % 7) {
        case 0:
          await T.run(id, rest.getServerCapabilities(), (v) => results.set(id, JSON.stringify(v)));
          break;
        case 1:
          await T.run(id, rest.listTrainingRunsPage({ limit: 5 }));
          break;
        case 2:
          await T.run(id, rest.getTrainingRun(tc.modelId), (v) => {
            if (v.training_run_id !== tc.modelId) throw new Error(`getTrainingRun(${tc.modelId}) answered ${v.training_run_id}`);
          });
          break;
        case 3:
          await T.run(id, rest.listCheckpoints(tc.modelId));
          break;
        case 4:
          await T.run(id, rest.getSession(sessionId()), (v) => {
            if (!JSON.stringify(v).includes(sessionId())) throw new Error(`getSession answered ${JSON.stringify(v)}`);
          });
          break;
        case 5:
          await T.run(id, rest.getTrainingRun(`soak-missing-${j}:train:0`), undefined, (e) => e instanceof tinker.NotFoundError);
          break;
        case 6:
          await T.run(id, rest.listUserCheckpointsPage({ limit: 3 }));
          break;
      }
    }
  };

  const work = Promise.all([
    ...trainers.map((_, c) => train(c)),
    ...Array.from({ length: opts.concurrency }, sampleWorker),
    ...Array.from({ length: 8 }, restWorker),
  ]);
  // A deadline, not a wait: if anything hangs, name what never settled.
  let deadline;
  const hung = new Promise((_, reject) => {
    deadline = setTimeout(() => reject(new Error(`${label}: not done after ${opts.deadlineS} s; unsettled: ${T.pending().slice(0, 20).join(', ')} (${T.pending().length} in all)`)), opts.deadlineS * 1000);
  });
  try {
    await Promise.race([work, hung]);
  } finally {
    clearTimeout(deadline);
  }
  const workMs = performance.now() - t0;

  // Records of the simulator, before closing.
  const models = await Promise.all(trainers.map((tc) => admin(url, `models/${encodeURIComponent(tc.modelId)}`)));
  const nextSeq = trainers.map((tc) => tc.nextSeqId);
  const modelIds = trainers.map((tc) => tc.modelId);

  const timersBefore = countTimeouts();
  await Promise.all([svcTrain.close(), svcSample.close()]);
  fTrain.closed = fSample.closed = true;
  return { T, results, models, nextSeq, modelIds, issued, fetches: [fTrain, fSample], logs, workMs, timersBefore };
}

function countTimeouts() {
  return process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
}

// ---------------------------------------------------------------------------------------
// Checks

function checkTraining(run, plan) {
  const problems = [];
  run.models.forEach((m, c) => {
    const seqs = m.applied.map((a) => a.seq_id);
    const expect = Array.from({ length: run.nextSeq[c] }, (_, i) => i);
    if (JSON.stringify(seqs) !== JSON.stringify(expect)) problems.push(`model ${c}: applied seq ids ${JSON.stringify(seqs)} ≠ 0..${run.nextSeq[c] - 1} once each, in order`);
    const kinds = m.applied.map((a) => a.kind);
    if (JSON.stringify(kinds) !== JSON.stringify(run.issued[c])) problems.push(`model ${c}: applied kinds differ from the calls made (first difference at ${kinds.findIndex((k, i) => k !== run.issued[c][i])})`);
    if (new Set(m.applied.map((a) => a.request_id)).size !== m.applied.length) problems.push(`model ${c}: a request id applied twice`);
    if (m.failed.length) problems.push(`model ${c}: ${m.failed.length} failed requests: ${JSON.stringify(m.failed.slice(0, 3))}`);
    if (m.pending_seq_ids.length) problems.push(`model ${c}: pending seq ids ${JSON.stringify(m.pending_seq_ids)}`);
    if (m.optim_steps !== plan.steps) problems.push(`model ${c}: ${m.optim_steps} optimizer steps, expected ${plan.steps}`);
  });
  return problems;
}

function compareRuns(clean, faulty) {
  const problems = [];
  clean.models.forEach((m, c) => {
    if (m.weights_digest !== faulty.models[c].weights_digest) problems.push(`model ${c}: weights digest ${faulty.models[c].weights_digest} ≠ fault-free ${m.weights_digest}`);
  });
  let compared = 0;
  for (const [id, v] of clean.results) {
    const w = faulty.results.get(id);
    if (w === undefined) problems.push(`${id}: no result in the faulted run`);
    else if (w !== v) problems.push(`${id}: differs from the fault-free run`);
    compared++;
  }
  if (faulty.results.size !== clean.results.size) problems.push(`result counts differ: ${faulty.results.size} vs ${clean.results.size}`);
  return { problems: problems.slice(0, 50), compared, differing: problems.length };
}

// ---------------------------------------------------------------------------------------

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  const plan = makePlan(opts.ops);
  rmSync(opts.out, { recursive: true, force: true });
  mkdirSync(opts.out, { recursive: true });
  const unhandled = [];
  process.on('unhandledRejection', (e) => unhandled.push(`unhandled rejection: ${e?.stack ?? e}`));
  process.on('uncaughtException', (e) => unhandled.push(`uncaught exception: ${e?.stack ?? e}`));

  const cleanLog = path.join(opts.out, 'clean.requests.jsonl');
  const faultyLog = path.join(opts.out, 'faulty.requests.jsonl');
  const common = ['--seed', String(opts.seed), '--threads', '1'];
  const [cleanSim, faultySim] = await Promise.all([startSim([...common, '--request-log', cleanLog]), startSim([...common, '--request-log', faultyLog, '--faults', opts.faults])]);
  console.log(`soak: ${opts.ops} operations per run (${plan.trainers.length} training clients × ${plan.steps} steps, ${plan.samples} samples at ${opts.concurrency} concurrency, ${plan.rest} REST calls); faults: ${opts.faults}`);
  const started = performance.now();
  let clean, faulty;
  try {
    [clean, faulty] = await Promise.all([runWorkload(cleanSim.url, plan, opts, 'clean'), runWorkload(faultySim.url, plan, opts, 'faulty')]);
  } catch (e) {
    // Setup failed or something hung past the deadline: that is the finding.
    await Promise.all([cleanSim.stop(), faultySim.stop()]);
    console.log(`FAIL ${e.message}`);
    console.log('soak: FAIL');
    process.exit(1);
  }
  const timersAfter = countTimeouts();
  const [statsClean, statsFaulty] = await Promise.all([admin(cleanSim.url, 'stats'), admin(faultySim.url, 'stats')]);
  await Promise.all([cleanSim.stop(), faultySim.stop()]);
  const totalMs = performance.now() - started;

  const report = { ops: opts.ops, seed: opts.seed, faults: opts.faults, plan: { steps: plan.steps, trainers: plan.trainers.length, samples: plan.samples, rest: plan.rest }, checks: {} };
  const fail = [];
  const check = (name, problems, detail) => {
    report.checks[name] = { ok: problems.length === 0, problems: problems.slice(0, 30), ...(detail ?? {}) };
    if (problems.length) fail.push(name);
    console.log(`${problems.length ? 'FAIL' : 'ok  '} ${name}${detail?.summary ? `: ${detail.summary}` : ''}`);
    for (const p of problems.slice(0, 10)) console.log(`       ${p}`);
  };

  for (const run of [clean, faulty]) {
    const n = run.T.ops.size;
    if (n !== opts.ops) fail.push(`op count ${run.T.label}`);
    check(`${run.T.label}: ${n} operations each settled exactly once, as expected`, [...(n === opts.ops ? [] : [`${n} operations tracked, planned ${opts.ops}`]), ...run.T.problems()], {
      summary: `${[...run.T.ops.values()].filter((r) => r.resolved).length} resolved, ${[...run.T.ops.values()].filter((r) => r.rejected).length} rejected (expected 404s) in ${(run.workMs / 1000).toFixed(1)} s`,
    });
    check(`${run.T.label}: every training request applied exactly once, in seq order`, checkTraining(run, plan), {
      summary: run.models.map((m) => m.applied.length).join(' + ') + ' applied',
    });
  }
  const cmp = compareRuns(clean, faulty);
  check('faulted run ends identical to the fault-free run (weights digests, losses, logprobs, samples)', cmp.problems, {
    summary: `${clean.models.length} weight digests and ${cmp.compared} results compared, ${cmp.differing} differ`,
  });
  check('no unhandled rejection or uncaught exception', unhandled);

  // The simulators' request logs.
  const faultyEntries = readLog(faultyLog);
  const cleanEntries = readLog(cleanLog);
  const samplesCalled = [...faulty.T.ops.keys()].filter((k) => k.includes('sample:')).length;
  const la = analyzeLog(faultyEntries, { maxRetries: 10, sampleCalls: samplesCalled, faults: opts.faults });
  report.faulty = { requests: faultyEntries.length, faultsByKind: statsFaulty.faults_injected, futures: statsFaulty.futures, duplicatesDeduped: statsFaulty.duplicates_deduped, ...la.figures };
  report.clean = { requests: cleanEntries.length, futures: statsClean.futures };
  check('retries bounded by the policy (request log of the faulted run)', la.problems, { summary: la.summary });
  const lc = analyzeLog(cleanEntries, { maxRetries: 10, sampleCalls: samplesCalled });
  // A lost response is a request applied whose answer never arrived: its retry (same
  // seq id, same body) must be recognised as the same request, every time.
  check('every lost response deduplicated on retry (duplicates = lost faults)', statsFaulty.duplicates_deduped === (statsFaulty.faults_injected.lost ?? 0) ? [] : [`${statsFaulty.duplicates_deduped} duplicates deduplicated, ${statsFaulty.faults_injected.lost ?? 0} lost responses`], {
    summary: `${statsFaulty.duplicates_deduped} deduplicated = ${statsFaulty.faults_injected.lost ?? 0} lost`,
  });
  check('fault-free run: no retries at all (request log)', [...lc.problems, ...(lc.figures.httpRetries + lc.figures.holderRetries + lc.figures.sampleResubmissions ? [`${lc.figures.httpRetries} HTTP retries, ${lc.figures.holderRetries} holder retries, ${lc.figures.sampleResubmissions} resubmissions without faults`] : [])], { summary: `${cleanEntries.length} requests` });
  const faultedRequests = la.figures.faultedRequests + (statsFaulty.faults_injected.slow ?? 0);
  const injectedRate = faultedRequests / la.figures.apiRequests;
  check('about 20 % of API requests faulted, every kind injected', [
    ...(injectedRate >= 0.15 && injectedRate <= 0.3 ? [] : [`${(injectedRate * 100).toFixed(1)} % of API requests faulted`]),
    ...opts.faults
      .split(',')
      .map((f) => f.split(':')[0])
      .filter((k, i, a) => a.indexOf(k) === i && !(statsFaulty.faults_injected[k] > 0))
      .map((k) => `fault kind ${k} never injected`),
  ], { summary: `${faultedRequests} of ${la.figures.apiRequests} API requests (${(injectedRate * 100).toFixed(1)} %): ${JSON.stringify(statsFaulty.faults_injected)}` });

  // close(): no timers, nothing in flight, nothing sent afterwards.
  const closeProblems = [];
  if (timersAfter !== 0) closeProblems.push(`${timersAfter} timers still active after close() (${process.getActiveResourcesInfo().join(', ')})`);
  for (const run of [clean, faulty]) {
    for (const f of run.fetches) {
      if (f.inflight) closeProblems.push(`${f.label}: ${f.inflight} fetches in flight after close()`);
      if (f.afterClose.length) closeProblems.push(`${f.label}: ${f.afterClose.length} requests after close(): ${f.afterClose.slice(0, 3).join(', ')}`);
    }
    if (run.timersBefore === 0) closeProblems.push(`${run.T.label}: no timers before close() (the check would be vacuous)`);
  }
  check('no timers, fetches or requests left after close()', closeProblems, { summary: `timers before close ${clean.timersBefore}/${faulty.timersBefore}, after ${timersAfter}` });

  report.durationS = { total: totalMs / 1000, clean: clean.workMs / 1000, faulty: faulty.workMs / 1000 };
  report.latencyMs = { clean: clean.T.latencies(), faulty: faulty.T.latencies() };
  report.clientLog = { faulty: faulty.logs.length, clean: clean.logs.length, sample: faulty.logs.slice(0, 5) };
  report.ok = fail.length === 0;
  writeFileSync(path.join(opts.out, 'report.json'), JSON.stringify(report, null, 2));
  console.log(`soak: ${report.ok ? 'PASS' : 'FAIL'} in ${(totalMs / 1000).toFixed(1)} s (fault-free run ${(clean.workMs / 1000).toFixed(1)} s, faulted run ${(faulty.workMs / 1000).toFixed(1)} s); report: ${path.relative(root, path.join(opts.out, 'report.json'))}`);
  // Exit explicitly: a client that leaks timers must not keep the soak alive too.
  process.exit(report.ok ? 0 : 1);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  main().catch((e) => {
    console.error(e);
    process.exit(1);
  });
}
