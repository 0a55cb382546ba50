// `make bench` (issue 8): tinker-wasm measured side by side with its peers in the same run,
// on the same machine, against the same tinker-sim build — the official Python SDK 0.38.0
// (tests/conformance/.venv), @lenml/tokenizers and native `tokenizers`, and plain-copy /
// plain-HTTP floors. Prints one table with absolute figures and ratios, and writes it, the
// details, the machine and the versions to BENCHMARKS.md (between the bench:run markers).
//   node tests/bench/run.mjs [--quick] [--only a,b] [--no-write] [--python PATH]
// Sections: size encode sample openai sft cookbook cold cli memory tokenizer. --quick: smaller counts (a smoke
// run; the figures are noisier). BENCHMARKS.md is written by full runs only (or with --write).
// Every client measurement runs in its own process against its own simulator process
// (`--future-delay-ms 0`), so "client CPU" is the client process's user + system time only.
// These are benchmarks, not tests: nothing here fails on a timing.
import { spawn, spawnSync, execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import { createHash } from 'node:crypto';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startSim } from '../js/sim.mjs';
import { measureSizes, report as sizeReport, BUDGETS } from './size-check.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '../..');
const argv = process.argv.slice(2);
const flag = (f) => argv.includes(f);
const opt = (f, d) => (argv.includes(f) ? argv[argv.indexOf(f) + 1] : d);
if (flag('--help')) {
  console.log(readFileSync(fileURLToPath(import.meta.url), 'utf8').split('\n').filter((l) => l.startsWith('//')).map((l) => l.slice(3)).join('\n'));
  process.exit(0);
}
const QUICK = flag('--quick');
const WRITE = flag('--write') || (!QUICK && !flag('--only') && !flag('--no-write'));
const ALL = ['size', 'encode', 'sample', 'openai', 'sft', 'cookbook', 'cold', 'cli', 'memory', 'tokenizer'];
const ONLY = opt('--only', ALL.join(',')).split(',');
const PY = opt('--python', path.join(root, 'tests/conformance/.venv/bin/python'));
const DRIVER = path.join(here, 'driver.mjs');
const PEER = path.join(here, 'peer_py.py');
const SIM_ARGS = ['--future-delay-ms', '0', '--seed', '1'];

const log = (...a) => console.error('[bench]', ...a);
// Interrupted: exit normally so the simulators' exit hooks (tests/js/sim.mjs) stop them.
for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => process.exit(130));
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const f = (x, d = 2) => (x == null || Number.isNaN(x) ? 'n/a' : x.toFixed(d));
const ms = (s) => `${f(s * 1e3, s < 0.01 ? 3 : 2)} ms`;
const kb = (b) => `${(b / 1000).toFixed(1)} KB`;
const mb = (b) => `${(b / 1e6).toFixed(2)} MB`;

/** Runs a command; resolves to its last stdout line as JSON, plus the wall time spawn → exit. */
function run(cmd, args, { env } = {}) {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const child = spawn(cmd, args, { cwd: root, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (c) => (out += c));
    child.stderr.on('data', (c) => (err += c));
    child.on('error', reject);
    child.on('exit', (code) => {
      const wall = performance.now() - t0;
      if (code !== 0) return reject(new Error(`${path.basename(cmd)} ${args.join(' ')} exited ${code}\n${err.slice(-3000)}`));
      const last = out.trim().split('\n').at(-1);
      try {
        resolve({ ...JSON.parse(last), spawn_to_exit_ms: wall, stdout: out });
      } catch {
        resolve({ spawn_to_exit_ms: wall, stdout: out });
      }
    });
  });
}
const node = (mode, ...a) => run(process.execPath, [DRIVER, mode, ...a.map(String)]);
// The same driver in Bun and Deno (both from npm, node_modules/.bin), each through its own
// entry of the package (`bun` / `deno` conditions) with its default transport.
const BUN = path.join(root, 'node_modules/.bin/bun');
const bun = (mode, ...a) => run(BUN, [DRIVER, mode, ...a.map(String)]);
const deno = (mode, ...a) => run(path.join(root, 'node_modules/.bin/deno'), ['run', '--allow-all', '--no-lock', DRIVER, mode, ...a.map(String)]);
/** A Bun or Deno figure against Node's (lower is better): "1.6× less than Node" / "1.2× Node's CPU". */
const vsNode = (x, nodeX, better, what) => (x <= nodeX ? `${f(nodeX / x, 2)}× ${better} than Node` : `${f(x / nodeX, 2)}× Node's ${what}`);
const runtimeVersion = (bin, args) => {
  try {
    return execFileSync(path.join(root, 'node_modules/.bin', bin), args, { encoding: 'utf8' }).split('\n')[0].trim();
  } catch {
    return '?';
  }
};
const py = (mode, ...a) => run(PY, [PEER, mode, ...a.map(String)]);

/** A fresh simulator for one measurement. */
async function withSim(fn, extra = []) {
  const sim = await startSim([...SIM_ARGS, ...extra]);
  try {
    return await fn(sim.url);
  } finally {
    await sim.stop();
  }
}

// Rows of the one table: [benchmark, tinker-wasm, peer, ratio, target, verdict].
const rows = [];
const details = [];
const targets = [];
const row = (bench, ours, peer, ratio, target = '—', ok = null) => {
  rows.push([bench, ours, peer, ratio, target, ok === null ? '' : ok ? 'met' : '**missed**']);
  // The summary's figure: the ratio, or the tinker-wasm column where a row gives its ratio there
  // (the tokenizer rows: `0.39× (4.30 vs 11.10 MB/s)`).
  if (ok !== null) targets.push({ bench, target, ok, ratio: ratio || ours });
};

// The package under test: if it changes during the run (a build elsewhere), say so.
const pkgDigest = () => {
  const h = createHash('sha256');
  for (const f0 of ['full/tinker_wasm_bg.wasm', 'lite/tinker_wasm_bg.wasm', 'general/tokenizer_general_bg.wasm']) {
    const f = path.join(root, `pkg/gen/${f0}`);
    if (existsSync(f)) h.update(readFileSync(f));
  }
  return h.digest('hex').slice(0, 12);
};
const digest0 = pkgDigest();
const load0 = os.loadavg();
const started = new Date();
const section = (name) => ONLY.includes(name);

// ---------------------------------------------------------------------------------------
// Size (deterministic)
if (section('size')) {
  log('size');
  const sizes = measureSizes();
  for (const s of sizes) {
    if (s.budget === null) {
      row(`size: \`${s.entry}\` wasm, gzip (raw)`, `${kb(s.wasm.gzip)} (${kb(s.wasm.raw)})`, '', '', s.name === 'cookbook' ? '— (no budget: loaded only by tinker-wasm/cookbook)' : '— (loaded only for other tokenizer files)');
      continue;
    }
    row(`size: \`${s.entry}\` wasm, gzip (raw)`, `${kb(s.wasm.gzip)} (${kb(s.wasm.raw)})`, `budget ${kb(s.budget)}`, `${f(s.wasm.gzip / s.budget)}× budget`, `≤ ${kb(s.budget)} gzip`, s.wasm.gzip <= s.budget);
    row(`size: \`${s.entry}\` JS glue, gzip (raw)`, `${kb(s.glue.gzip)} (${kb(s.glue.raw)})`, '', '', '—');
  }
  details.push(['Size', `Node's zlib at level 9 (deterministic); 1 KB = 1000 bytes. Glue = the generated \`tinker_wasm.js\` + the Node entry + \`extras.js\` + \`errors.js\` (full: + \`general-engine.js\` and the general engine's generated glue). The general tokenizer engine (HuggingFace \`tokenizers\` for tokenizer files other than Qwen2/Qwen3 and Llama-3) is its own module, fetched or compiled only when such a file is loaded. The same check runs in \`make test\` (\`node tests/bench/size-check.mjs\`).\n\n${sizeReport(sizes).table}`]);
}

// ---------------------------------------------------------------------------------------
// forward_backward request encoding
if (section('encode')) {
  const shapes = QUICK ? [[32, 2048], [256, 512]] : [[128, 2048], [1024, 512]];
  const reps = QUICK ? 10 : 40;
  const lines = ['| batch | proto bytes (ours / Python) | zstd bytes (ours / Python) | ours proto | ours proto+zstd | Python proto | Python proto+zstd | copy floor: slice / set |', '|---|---:|---:|---:|---:|---:|---:|---:|'];
  for (const [b, l] of shapes) {
    log(`encode ${b}×${l}`);
    const ours = await node('encode', b, l, reps);
    const pyr = await py('encode', b, l, Math.max(5, Math.round(reps / 3)));
    const name = `${b} × ${l}`;
    row(`forward_backward ${name} + weights: build + protobuf`, `${f(ours.proto_ms)} ms`, `Python: ${f(pyr.proto_ms)} ms`, `${f(pyr.proto_ms / ours.proto_ms, 1)}× faster`, '≥ 5× faster', pyr.proto_ms / ours.proto_ms >= 5);
    row(`forward_backward ${name}: build + protobuf + zstd`, `${f(ours.zstd_ms)} ms (${mb(ours.zstd_bytes)})`, `Python: ${f(pyr.zstd_ms)} ms (${mb(pyr.zstd_bytes)})`, `${f(pyr.zstd_ms / ours.zstd_ms, 1)}× faster`, '≥ 5× faster', pyr.zstd_ms / ours.zstd_ms >= 5);
    row(`forward_backward ${name}: build + protobuf vs a copy of its bytes`, `${f(ours.proto_ms)} ms`, `floor: ${f(ours.floor_ms, 3)} ms`, `${f(ours.proto_ms / ours.floor_ms, 1)}× the floor`, '≤ 2× the floor', ours.proto_ms / ours.floor_ms <= 2);
    lines.push(`| ${name} (${(b * l).toLocaleString('en')} tokens) | ${ours.proto_bytes.toLocaleString('en')} / ${pyr.proto_bytes.toLocaleString('en')} | ${ours.zstd_bytes.toLocaleString('en')} / ${pyr.zstd_bytes.toLocaleString('en')} | ${f(ours.proto_ms)} ms | ${f(ours.zstd_ms)} ms | ${f(pyr.proto_ms)} ms | ${f(pyr.zstd_ms)} ms | ${f(ours.floor_ms, 3)} / ${f(ours.floor_set_ms, 3)} ms |`);
  }
  details.push(['forward_backward encoding', `Each datum: LEN input tokens, LEN int64 target tokens, LEN float32 weights (the same values on both sides: ours built with \`datumFromTokens\`, Python's as numpy-backed \`TensorData\`), outside the timing. Timed: from the user's Datum list to the request body — ours \`__benchEncodeForwardBackward\` (src/wasm/bench.rs: the JS → core conversion and \`training::forward_backward_body\`, exactly what \`TrainingClient.forwardBackward\` runs: protobuf, then crates/support/src/zstd.rs: a greedy LZ77 pass, Huffman-coded literals and per-block FSE tables as libzstd writes them; the lite module leaves that entropy stage out), Python 0.38 \`types.ForwardBackwardRequest(…)\` + \`forward_backward_request_to_proto\` + \`SerializeToString()\` (+ \`zstandard.ZstdCompressor().compress\`, level 3, as \`AsyncTrainingResource.forward_backward\`). Best of ${reps} (Python: ${Math.max(5, Math.round(reps / 3))}) after a warm-up. Floor: one plain copy of as many bytes as the encoded request, best of ${Math.max(reps, 50)}: \`src.slice()\` (allocates and copies, as producing a new body does; the ratio uses this one) and, for reference, \`dst.set(src)\` into an existing cache-hot buffer (a pure memcpy bound).\n\n${lines.join('\n')}`]);
}

// ---------------------------------------------------------------------------------------
// sample(): client overhead
if (section('sample')) {
  const plan = QUICK
    ? [[1, 200, 50], [100, 500, 200], [1000, 1000, 1000]]
    : [[1, 1000, 200], [100, 3000, 500], [1000, 4000, 1000]];
  const lines = ['| concurrency | client | requests | wall | requests/s | client CPU / request |', '|---:|---|---:|---:|---:|---:|'];
  const diag = ['| concurrency | transport | client CPU / request | requests/s |', '|---:|---|---:|---:|'];
  const perReq = (r) => r.cpu_s / r.requests;
  const rps = (r) => r.requests / r.wall_s;
  for (const [n, total, warm] of plan) {
    log(`sample ×${n}`);
    const ours = await withSim((url) => node('sample', url, n, total, warm));
    const pyr = await withSim((url) => py('sample', url, n, total, warm));
    const oursBun = await withSim((url) => bun('sample', url, n, total, warm));
    const oursDeno = await withSim((url) => deno('sample', url, n, total, warm));
    row(`sample() ×${n} concurrent: client CPU per request`, ms(perReq(ours)), `Python: ${ms(perReq(pyr))}`, `${f(perReq(pyr) / perReq(ours), 1)}× less`, '≥ 10× less', perReq(pyr) / perReq(ours) >= 10);
    for (const [rt, r] of [['Bun', oursBun], ['Deno', oursDeno]]) {
      row(`sample() ×${n} concurrent: client CPU per request, ${rt}`, ms(perReq(r)), `Node: ${ms(perReq(ours))} · Python: ${ms(perReq(pyr))}`, `${vsNode(perReq(r), perReq(ours), 'less', 'CPU')} · ${f(perReq(pyr) / perReq(r), 1)}× less than Python`, '—');
    }
    row(`sample() ×${n} concurrent: requests/s`, f(rps(ours), 0), `Python: ${f(rps(pyr), 0)}`, `${f(rps(ours) / rps(pyr), 1)}×`, '—');
    for (const [who, r] of [['tinker-wasm (Node)', ours], ['tinker-wasm (Bun: its fetch)', oursBun], ['tinker-wasm (Deno: node:http)', oursDeno], ['Python SDK 0.38.0', pyr]]) {
      lines.push(`| ${n} | ${who} | ${r.requests} | ${f(r.wall_s)} s | ${f(rps(r), 0)} | ${ms(perReq(r))} |`);
    }
    // Diagnostics: where the time goes (see the notes): the same two HTTP requests per
    // sample with no SDK, and our SDK over the global fetch (undici) instead of its default
    // node:http transport.
    const floorFetch = await withSim((url) => node('floor', url, n, total, warm, 'fetch'));
    const floorHttp = await withSim((url) => node('floor', url, n, total, warm, 'http'));
    const oursFetch = await withSim((url) => node('sample', url, n, total, warm, 'fetch'));
    // The other transport in Bun and Deno, which is why each entry defaults to its own: Bun
    // through the Node entry (node:http), Deno with its fetch as options.fetch.
    const bunHttp = await withSim((url) => run(BUN, [DRIVER, 'sample', url, n, total, warm].map(String), { env: { TINKER_BENCH_PKG: path.join(root, 'pkg/index.js') } }));
    const denoFetch = await withSim((url) => deno('sample', url, n, total, warm, 'fetch'));
    for (const [who, r] of [
      ['tinker-wasm, default transport: node:http keep-alive (as above)', ours],
      ['tinker-wasm, `options.fetch` = the global fetch (undici)', oursFetch],
      ['tinker-wasm in Bun, default transport: its fetch (as above)', oursBun],
      ['tinker-wasm in Bun through the Node entry: node:http keep-alive', bunHttp],
      ['tinker-wasm in Deno, default transport: node:http keep-alive (as above)', oursDeno],
      ['tinker-wasm in Deno, `options.fetch` = its fetch', denoFetch],
      ['no SDK: the 2 requests with global fetch (undici)', floorFetch],
      ['no SDK: the 2 requests with node:http keep-alive', floorHttp],
      ['Python SDK 0.38.0 (as above)', pyr],
    ]) diag.push(`| ${n} | ${who} | ${ms(perReq(r))} | ${f(rps(r), 0)} |`);
  }
  details.push(['sample() client overhead', `One \`ServiceClient\` + \`SamplingClient\` (Qwen/Qwen3-8B), each call a 4-token prompt, \`max_tokens: 4\`, its own seed; rounds of N concurrent calls, awaited together, after a warm-up. Each sample is two HTTP requests (\`asample\`, then \`retrieve_future\`) for both SDKs. Bun and Deno run the same driver through their own entries and default transports (Bun: its \`fetch\`; Deno: \`node:http\` keep-alive, as Node). Client CPU = the client process's user + system time (Node's, Bun's and Deno's \`process.cpuUsage()\`, Python \`resource.getrusage\`, all threads) over the timed rounds; the simulator runs in its own process (a fresh one per row). Requests/s is bounded by the simulator (debug build, one process on the same 2 cores), so the CPU column is the client's figure.\n\n${lines.join('\n')}\n\nWhere the time goes (same run; the profile is in the notes):\n\n${diag.join('\n')}`]);
}

// ---------------------------------------------------------------------------------------
// SFT steps
// The OpenAI-compatible handler (issue 35): its own client CPU per chat request (JSON in,
// render, parse, JSON out) over the sample call alone on the same prompts, pre-rendered.
if (section('openai')) {
  for (const [n, total, warm] of QUICK ? [[1, 50, 10], [100, 200, 100]] : [[1, 400, 50], [100, 2000, 200]]) {
    log(`openai ×${n}`);
    const handler = await withSim((url) => node('openai', url, n, total, warm, 'handler'));
    const alone = await withSim((url) => node('openai', url, n, total, warm, 'sample'));
    const per = (r) => r.cpu_s / r.requests;
    row(`openaiFetch chat completion ×${n} concurrent: client CPU per request`, ms(per(handler)), `sample() alone: ${ms(per(alone))}`, `+${f((per(handler) - per(alone)) * 1e6, 0)} µs (${f(per(handler) / per(alone))}×)`, '—');
  }
}

if (section('sft')) {
  const [steps, batch, len] = QUICK ? [3, 8, 128] : [10, 8, 256];
  log(`sft ${steps} steps of ${batch}×${len}`);
  const ours = await withSim((url) => node('sft', url, steps, batch, len));
  const pyr = await withSim((url) => py('sft', url, steps, batch, len));
  const same = ours.first_loss === pyr.first_loss && ours.last_loss === pyr.last_loss;
  row(`SFT step (${batch} × ${len} tokens, forward_backward + optim_step): wall`, ms(ours.wall_s / steps), `Python: ${ms(pyr.wall_s / steps)}`, `${f(pyr.wall_s / ours.wall_s, 2)}× faster`, '—');
  row(`SFT step: client CPU`, ms(ours.cpu_s / steps), `Python: ${ms(pyr.cpu_s / steps)}`, `${f(pyr.cpu_s / ours.cpu_s, 1)}× less`, '—');
  details.push(['SFT steps', `${steps} pipelined steps (\`forwardBackward\` and \`optimStep\` submitted together, both awaited) after one warm-up step, ${batch} sequences × ${len} tokens with weights on the second half, AdamW lr 1e-3, LoRA rank 8, fresh simulator each. Wall time per step is mostly the simulator's compute (the same for both); the difference and the CPU are the client's. Same workload on both sides: losses ${same ? 'identical' : 'DIFFER'} (first ${ours.first_loss} / ${pyr.first_loss}, last ${ours.last_loss} / ${pyr.last_loss}).\n\n| client | wall / step | client CPU / step |\n|---|---:|---:|\n| tinker-wasm (Node) | ${ms(ours.wall_s / steps)} | ${ms(ours.cpu_s / steps)} |\n| Python SDK 0.38.0 | ${ms(pyr.wall_s / steps)} | ${ms(pyr.cpu_s / steps)} |`]);
}

// ---------------------------------------------------------------------------------------
// tinker-wasm/cookbook's supervised.train against tinker-cookbook's own loop (issue 33)
if (section('cookbook')) {
  const [rows_, batch, epochs] = QUICK ? [32, 8, 1] : [128, 8, 2];
  log(`cookbook supervised.train: ${rows_} conversations, batches of ${batch}, ${epochs} epochs`);
  const dir = mkdtempSync(path.join(os.tmpdir(), 'tinker-bench-cookbook-'));
  const jsonl = path.join(dir, 'data.jsonl');
  const facts = Array.from({ length: rows_ }, (_, i) => ({
    messages: [
      { role: 'user', content: `Question ${i}: what is ${i} times ${i + 3}, and why does it matter for the ${i % 7}th example of this set?` },
      { role: 'assistant', content: `${i} times ${i + 3} is ${i * (i + 3)}. It matters because example ${i % 7} checks multiplication of consecutive-ish numbers, which is a common arithmetic drill.` },
    ],
  }));
  writeFileSync(jsonl, facts.map((r) => JSON.stringify(r)).join('\n') + '\n');
  const args = (side) => ['--jsonl', jsonl, '--tokenizer-dir', path.join(root, 'target/renderer-parity/tokenizers/qwen3'), '--batch-size', batch, '--epochs', epochs, '--save-every', 0, '--eval-every', 0, '--log-path', path.join(dir, side), '--cpu-report'].map(String);
  const ours = await withSim((url) => run(process.execPath, [path.join(root, 'tests/cookbook/run_sft.mjs'), ...args('ours'), '--base-url', url]));
  const cb = await withSim((url) => run(PY, [path.join(root, 'tests/cookbook/run_sft.py'), ...args('cookbook'), '--base-url', url], { env: { HF_HUB_OFFLINE: '1', TINKER_API_KEY: 'tml-bench' } }));
  rmSync(dir, { recursive: true, force: true });
  const per = (r) => r.cpu_s / (r.steps - 1);
  row('supervised.train step (tinker-wasm/cookbook vs tinker-cookbook): client CPU', ms(per(ours)), `tinker-cookbook 0.6.1: ${ms(per(cb))}`, `${f(per(cb) / per(ours), 1)}× less`, '≥ 5× less', per(cb) / per(ours) >= 5);
  details.push(['supervised.train', `tinker-wasm/cookbook's \`supervised.train\` in Node (tests/cookbook/run_sft.mjs) and tinker-cookbook 0.6.1's own \`supervised.train.main\` (tests/cookbook/run_sft.py, its tokenizer registered from local files), the same ${rows_}-conversation JSONL, batches of ${batch}, ${epochs} epochs (${ours.steps} steps each), no saves or evaluation, each against its own simulator. Client CPU: the process's user + system time from the first step's metrics line to the last, over the steps between (start-up, imports and the first step left out): reading rows, rendering and tokenizing them into datums, building and encoding the requests, reading the results and writing the metrics.`]);
  // rl.train: the arithmetic environment (recipes/math_rl), the cookbook's own in Python, ours in JS.
  const [batches, groups, size] = QUICK ? [3, 4, 4] : [12, 8, 8];
  log(`cookbook rl.train: ${batches} steps of ${groups} groups of ${size}`);
  const rlArgs = ['--tokenizer-dir', path.join(root, 'target/renderer-parity/tokenizers/qwen3'), '--batch-size', groups, '--group-size', size, '--n-batches', batches, '--max-tokens', 16, '--save-every', 0, '--cpu-report'].map(String);
  const rlDir = mkdtempSync(path.join(os.tmpdir(), 'tinker-bench-rl-'));
  const rlOurs = await withSim((url) => run(process.execPath, [path.join(root, 'tests/cookbook/run_rl.mjs'), ...rlArgs, '--log-path', path.join(rlDir, 'ours'), '--base-url', url]));
  const rlCb = await withSim((url) => run(PY, [path.join(root, 'tests/cookbook/run_rl.py'), ...rlArgs, '--log-path', path.join(rlDir, 'cookbook'), '--base-url', url], { env: { HF_HUB_OFFLINE: '1', TINKER_API_KEY: 'tml-bench' } }));
  rmSync(rlDir, { recursive: true, force: true });
  row('rl.train step (tinker-wasm/cookbook vs tinker-cookbook): client CPU', ms(per(rlOurs)), `tinker-cookbook 0.6.1: ${ms(per(rlCb))}`, `${f(per(rlCb) / per(rlOurs), 1)}× less`, '—');
  details.push(['rl.train', `tinker-wasm/cookbook's \`rl.train\` in Node (tests/cookbook/run_rl.mjs, the arithmetic environment of examples/rl-arithmetic.mjs) and tinker-cookbook 0.6.1's own \`rl.train.main\` with its \`ArithmeticDatasetBuilder\` (tests/cookbook/run_rl.py), ${batches} steps of ${groups} groups of ${size} rollouts, \`max_tokens\` 16, no saves but the final one, each against its own simulator (the two runs send the same requests: the differential test's rl-basic compares them). Client CPU: the process's user + system time from the first step's metrics line to the last, over the steps between: each step's sampler, ${groups * size} rollouts (the sampling requests and their results, the environment's parsing and rewards), advantages and datums, the training request and its results, the metrics.`]);
}

// ---------------------------------------------------------------------------------------
// Cold start
// The command line (issue 22): start-up of `tinker-wasm --help` and `tinker-wasm run list`
// (spawn → exit, against a fresh simulator) beside the Python SDK's `tinker` CLI.
if (section('cli')) {
  const n = QUICK ? 1 : 5;
  const CLI = path.join(root, 'pkg/cli/main.js');
  // The Python CLI as `pip install tinker` installs it (torch is an extra): tests/cli/tinker-py.
  const TINKER_PY = [path.join(root, 'tests/cli/tinker-py')];
  const wall = (cmd, args, env) => {
    const t0 = performance.now();
    const r = spawnSync(cmd, args, { cwd: root, env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'pipe'] });
    if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} exited ${r.status}: ${r.stderr}`);
    return performance.now() - t0;
  };
  const times = { ours: { help: [], list: [] }, py: { help: [], list: [] } };
  log('cli start-up');
  for (let i = 0; i < n; i++) {
    await withSim(async (url) => {
      const env = { TINKER_BASE_URL: url, TINKER_API_KEY: 'tml-bench', TINKER_TELEMETRY: '0' };
      times.ours.help.push(wall(process.execPath, [CLI, '--help'], env));
      times.py.help.push(wall(PY, [...TINKER_PY, '--help'], env));
      times.ours.list.push(wall(process.execPath, [CLI, 'run', 'list'], env));
      times.py.list.push(wall(PY, [...TINKER_PY, 'run', 'list'], env));
    });
  }
  const m = (xs) => median(xs);
  row('CLI start-up: `tinker-wasm --help` (spawn → exit)', `${f(m(times.ours.help), 0)} ms`, `Python \`tinker --help\`: ${f(m(times.py.help), 0)} ms`, `${f(m(times.py.help) / m(times.ours.help), 1)}× faster`, '—');
  row('CLI start-up: `tinker-wasm run list` (spawn → exit, fresh simulator)', `${f(m(times.ours.list), 0)} ms`, `Python \`tinker run list\`: ${f(m(times.py.list), 0)} ms`, `${f(m(times.py.list) / m(times.ours.list), 1)}× faster`, '—');
  details.push(['CLI start-up', `Median of ${n} runs each, every one a fresh process (\`node pkg/cli/main.js …\` and \`tests/conformance/.venv/bin/tinker …\`) with \`TINKER_TELEMETRY=0\`; \`run list\` against a fresh simulator (no runs). tinker-wasm's \`--help\` loads no wasm; \`run list\` loads \`tinker-wasm/lite\` (no tokenizer).`]);
}

if (section('cold')) {
  const n = QUICK ? 1 : 3;
  const med = (xs, k) => median(xs.map((x) => x[k]));
  const series = async (fn) => {
    const out = [];
    for (let i = 0; i < n; i++) out.push(await withSim(fn));
    return out;
  };
  log('cold start: node');
  const full = await series((url) => node('cold', url));
  const lite = await series((url) => node('cold', url, 'lite'));
  log('cold start: bun, deno');
  const bunFull = await series((url) => bun('cold', url));
  const bunLite = await series((url) => bun('cold', url, 'lite'));
  const denoFull = await series((url) => deno('cold', url));
  const denoLite = await series((url) => deno('cold', url, 'lite'));
  log('cold start: python');
  const pyc = await series((url) => py('cold', url));
  log('cold start: workerd');
  const { bundleWorker } = await import('../js/run-workerd.mjs');
  const { Miniflare } = await import('miniflare');
  const workerd = async (entry) => {
    const bundle = await bundleWorker(path.join(here, 'workerd', entry), `bench-${path.basename(entry, '.js')}`);
    return series(async (url) => {
      const t0 = performance.now();
      const mf = new Miniflare({ ...bundle, compatibilityDate: '2026-04-01', cf: false, bindings: { SIM_URL: url } });
      try {
        await mf.ready;
        const t1 = performance.now();
        const res = await mf.dispatchFetch('http://localhost/');
        const body = await res.text();
        if (!res.ok) throw new Error(`worker: ${res.status} ${body.slice(0, 500)}`);
        const t2 = performance.now();
        return { startup_ms: t1 - t0, first_fetch_ms: t2 - t1, total_ms: t2 - t0 };
      } finally {
        await mf.dispose();
      }
    });
  };
  const wd = await workerd('cold.js');
  const bare = await workerd('bare.js');
  row('cold start, Node: import → first sample() done', `${f(med(full, 'first_request_ms'), 0)} ms`, `Python: ${f(med(pyc, 'first_request_ms'), 0)} ms`, `${f(med(pyc, 'first_request_ms') / med(full, 'first_request_ms'), 1)}× faster`, '—');
  row('cold start, Node: import of the package', `${f(med(full, 'import_ms'), 0)} ms (lite ${f(med(lite, 'import_ms'), 0)} ms)`, `Python: \`import tinker\` ${f(med(pyc, 'import_ms'), 0)} ms`, `${f(med(pyc, 'import_ms') / med(full, 'import_ms'), 1)}× faster`, '—');
  for (const [rt, full_, lite_] of [['Bun', bunFull, bunLite], ['Deno', denoFull, denoLite]]) {
    row(`cold start, ${rt}: import → first sample() done`, `${f(med(full_, 'first_request_ms'), 0)} ms`, `Node: ${f(med(full, 'first_request_ms'), 0)} ms`, vsNode(med(full_, 'first_request_ms'), med(full, 'first_request_ms'), 'faster', 'time'), '—');
    row(`cold start, ${rt}: import of the package`, `${f(med(full_, 'import_ms'), 0)} ms (lite ${f(med(lite_, 'import_ms'), 0)} ms)`, `Node: ${f(med(full, 'import_ms'), 0)} ms (lite ${f(med(lite, 'import_ms'), 0)} ms)`, vsNode(med(full_, 'import_ms'), med(full, 'import_ms'), 'faster', 'time'), '—');
  }
  row('cold start, workerd: first fetch → response (create client, sample)', `${f(med(wd, 'first_fetch_ms'), 0)} ms`, `plain fetch worker: ${f(med(bare, 'first_fetch_ms'), 0)} ms`, `+${f(med(wd, 'first_fetch_ms') - med(bare, 'first_fetch_ms'), 0)} ms`, '—');
  row('cold start, workerd: miniflare start → ready (loads the wasm)', `${f(med(wd, 'startup_ms'), 0)} ms`, `plain fetch worker: ${f(med(bare, 'startup_ms'), 0)} ms`, `+${f(med(wd, 'startup_ms') - med(bare, 'startup_ms'), 0)} ms`, '—');
  const t = (xs, k) => xs.map((x) => f(x[k], 0)).join(' / ');
  details.push(['Cold start', `Median of ${n} fresh processes, each against a fresh simulator. Node: \`node tests/bench/driver.mjs cold\` — from just before \`await import('tinker-wasm')\` (the Node entry reads and instantiates the wasm synchronously) to the first \`sample()\` resolved (Bun and Deno: the same driver, \`bun …\` and \`deno run --allow-all …\`, through their own entries: Bun reads the wasm it imports as a file, Deno's module loader compiles it from a source phase import), which includes creating the \`ServiceClient\` (client config, session) and the \`SamplingClient\`. Python: from just before \`import tinker\` to the first \`sample().result()\`, same requests. workerd: miniflare ${JSON.parse(readFileSync(path.join(root, 'node_modules/miniflare/package.json'))).version}, the worker bundled as wrangler does (tests/js/run-workerd.mjs \`bundleWorker\`), \`SIM_URL\` as a binding; "start → ready" covers starting workerd and loading the module (the precompiled wasm is instantiated at module evaluation), "first fetch → response" the request that creates a client and samples once. The plain worker makes one fetch to the simulator and no SDK.\n\n| runtime | import | first request done (from import) | spawn → exit |\n|---|---:|---:|---:|\n| Node, \`tinker-wasm\` | ${t(full, 'import_ms')} ms | ${t(full, 'first_request_ms')} ms | ${t(full, 'spawn_to_exit_ms')} ms |\n| Node, \`tinker-wasm/lite\` | ${t(lite, 'import_ms')} ms | ${t(lite, 'first_request_ms')} ms | ${t(lite, 'spawn_to_exit_ms')} ms |\n| Bun, \`tinker-wasm\` | ${t(bunFull, 'import_ms')} ms | ${t(bunFull, 'first_request_ms')} ms | ${t(bunFull, 'spawn_to_exit_ms')} ms |\n| Bun, \`tinker-wasm/lite\` | ${t(bunLite, 'import_ms')} ms | ${t(bunLite, 'first_request_ms')} ms | ${t(bunLite, 'spawn_to_exit_ms')} ms |\n| Deno, \`tinker-wasm\` | ${t(denoFull, 'import_ms')} ms | ${t(denoFull, 'first_request_ms')} ms | ${t(denoFull, 'spawn_to_exit_ms')} ms |\n| Deno, \`tinker-wasm/lite\` | ${t(denoLite, 'import_ms')} ms | ${t(denoLite, 'first_request_ms')} ms | ${t(denoLite, 'spawn_to_exit_ms')} ms |\n| Python 0.38.0 | ${t(pyc, 'import_ms')} ms | ${t(pyc, 'first_request_ms')} ms | ${t(pyc, 'spawn_to_exit_ms')} ms |\n\n| worker | miniflare start → ready | first fetch → response | total |\n|---|---:|---:|---:|\n| tinker-wasm | ${t(wd, 'startup_ms')} ms | ${t(wd, 'first_fetch_ms')} ms | ${t(wd, 'total_ms')} ms |\n| plain fetch | ${t(bare, 'startup_ms')} ms | ${t(bare, 'first_fetch_ms')} ms | ${t(bare, 'total_ms')} ms |`]);
}

// ---------------------------------------------------------------------------------------
// Memory over 100,000 sample() calls
if (section('memory')) {
  const [total, conc, every] = QUICK ? [10000, 100, 2000] : [100000, 100, 10000];
  log(`memory: ${total} sample() calls`);
  const r = await withSim((url) => run(process.execPath, ['--expose-gc', DRIVER, 'memory', url, total, conc, every].map(String)));
  const p = r.points;
  const warm = p[1];
  const last = p.at(-1);
  const growth = last.wasm_bytes - warm.wasm_bytes;
  row(`memory: wasm linear memory over ${total.toLocaleString('en')} sample() calls`, `${mb(warm.wasm_bytes)} after ${warm.calls.toLocaleString('en')} → ${mb(last.wasm_bytes)}`, '', `growth after warm-up: ${growth} bytes`, 'flat after warm-up', growth === 0);
  const lines = ['| sample() calls | wasm linear memory | Node heap used (after gc) | RSS |', '|---:|---:|---:|---:|', ...p.map((x) => `| ${x.calls.toLocaleString('en')} | ${x.wasm_bytes.toLocaleString('en')} B | ${mb(x.heap_bytes)} | ${mb(x.rss_bytes)} |`)];
  // Requests of varied sizes: the memory they leave behind against what the largest alone needs.
  const nv = QUICK ? 100 : 1000;
  const alone = await run(process.execPath, [DRIVER, 'varied', 'largest', nv].map(String));
  const varied = await run(process.execPath, [DRIVER, 'varied', 'all', nv].map(String));
  const ratio = varied.wasm_bytes / alone.wasm_bytes;
  row(`memory: wasm linear memory after ${nv.toLocaleString('en')} forward_backward bodies of varied sizes`, `${mb(varied.wasm_bytes)}`, `the largest (${alone.largest_tokens.toLocaleString('en')} tokens) alone: ${mb(alone.wasm_bytes)}`, `${f(ratio, 2)}× the largest alone`, '≤ 1.5× the largest alone', ratio <= 1.5);
  details.push(['Memory', `${total.toLocaleString('en')} \`sample()\` calls in rounds of ${conc} concurrent on one \`SamplingClient\` (Node, \`--expose-gc\`, \`gc()\` before each reading), ${f(r.wall_s, 1)} s. Wasm linear memory is read with the hidden \`__benchWasmMemoryBytes()\` export (it can only grow; the first interval is the warm-up).\n\n${lines.join('\n')}`]);
}

// ---------------------------------------------------------------------------------------
// Tokenizer: tests/bench/tokenizer.mjs (the tokenizer engineer's benchmark), run as is
if (section('tokenizer')) {
  log('tokenizer (tests/bench/tokenizer.mjs --memory)');
  const r = await run(process.execPath, [path.join(here, 'tokenizer.mjs'), '--python', PY, '--memory']);
  const lines = r.stdout.trim().split('\n');
  let data = null;
  try {
    data = JSON.parse(lines.at(-1));
  } catch {}
  // Issue 21's targets, as tokenizer.mjs measured them (cold, one call per document).
  for (const t of data?.targets ?? []) row(`tokenizer ${t.family}: ${t.what}`, t.value, '', '', t.goal, t.ok);
  for (const m of data?.memory ?? []) {
    const p = m.points;
    const growth = p.at(-1).wasm_bytes - p[1].wasm_bytes;
    row(`tokenizer ${m.family}: wasm memory over ${m.total_mb} MB of distinct text`, `${mb(p[1].wasm_bytes)} after 10 MB → ${mb(p.at(-1).wasm_bytes)}`, '', `growth after 10 MB: ${growth} bytes`, 'bounded (flat after warm-up)', growth === 0);
  }
  if (!data) row('tokenizer', 'see details', '', '', '—');
  details.push(['Tokenizer', `\`node tests/bench/tokenizer.mjs --memory\` (its own description is in the script), run as is in this run:\n\n${(data ? lines.slice(0, -1) : lines).join('\n').trim()}`]);
}

// ---------------------------------------------------------------------------------------
// Report
const load1 = os.loadavg();
let versions = {};
try {
  versions = JSON.parse(execFileSync(PY, ['-c', 'import json, sys, tinker, zstandard, tokenizers, numpy; from google.protobuf.internal import api_implementation as a; import google.protobuf as g; print(json.dumps({"python": sys.version.split()[0], "tinker": tinker.__version__, "protobuf": g.__version__ + " (" + a.Type() + ")", "zstandard": zstandard.__version__, "tokenizers": tokenizers.__version__, "numpy": numpy.__version__}))'], { encoding: 'utf8' }));
} catch (e) {
  versions = { python: `unavailable (${e.message.split('\n')[0]})` };
}
const pkgVersion = (p) => {
  try {
    return JSON.parse(readFileSync(path.join(root, 'node_modules', p, 'package.json'))).version;
  } catch {
    return '?';
  }
};
const git = (...a) => {
  try {
    return execFileSync('git', a, { cwd: root, encoding: 'utf8' }).trim();
  } catch {
    return '?';
  }
};
const commit = `${git('rev-parse', '--short', 'HEAD')}${git('status', '--porcelain', '--untracked-files=no') ? ' (with uncommitted changes)' : ''}`;
const cpu = os.cpus()[0]?.model ?? '?';
const cores = os.availableParallelism?.() ?? os.cpus().length;
const machine = [
  `- machine: ${cpu}, ${cores} cores, ${f(os.totalmem() / 2 ** 30, 1)} GiB, ${os.type()} ${os.release()}`,
  `- load average (1/5/15 min) at start ${load0.map((x) => f(x)).join(' / ')}, at end ${load1.map((x) => f(x)).join(' / ')} (the machine is shared; CPU-time figures are less sensitive to it than wall times)`,
  `- tinker-wasm ${JSON.parse(readFileSync(path.join(root, 'pkg/package.json'))).version} at ${commit}; Node ${process.version}; Bun ${runtimeVersion('bun', ['--version'])}; ${runtimeVersion('deno', ['--version'])}; miniflare ${pkgVersion('miniflare')} (workerd ${pkgVersion('workerd')}); @lenml/tokenizers ${pkgVersion('@lenml/tokenizers')}`,
  `- Python ${versions.python}: tinker ${versions.tinker}, protobuf ${versions.protobuf}, zstandard ${versions.zstandard}, tokenizers ${versions.tokenizers}, numpy ${versions.numpy}`,
  `- simulator: tinker-sim (\`target/debug/tinker-sim\`, tests/sim; its crate builds at opt-level 3) with \`${SIM_ARGS.join(' ')}\`, a fresh process per measurement`,
  `- wasm modules (sha256 of full + lite + general): ${digest0}${pkgDigest() === digest0 ? '' : ` at the start, ${pkgDigest()} at the end — **the package was rebuilt during the run; figures mix two builds**`}`,
  `- date: ${started.toISOString()}, ${f((Date.now() - started) / 1000, 0)} s`,
].join('\n');
const esc = (s) => String(s).replace(/\|/g, '\\|');
const table = ['| benchmark | tinker-wasm | peer (same run) | ratio | target | |', '|---|---:|---:|---:|---|---|', ...rows.map((r) => `| ${r.map(esc).join(' | ')} |`)].join('\n');
const missed = targets.filter((t) => !t.ok);
const summary = targets.length ? `Targets: ${targets.length - missed.length} of ${targets.length} met.${missed.length ? ` Missed: ${missed.map((t) => `${t.bench} (${t.ratio}; target ${t.target})`).join('; ')}. What dominates each miss and the next step: tests/bench/NOTES-issue8.md.` : ''}` : '';
const command = `node tests/bench/run.mjs${argv.length ? ' ' + argv.join(' ') : ''}`;
const md = [
  `One \`make bench\` run, ${started.toISOString().slice(0, 10)}, on ${cpu} (${cores} cores): every peer measured in the same run, ratios of the two. The sections after the table say what each row measures; the run's machine and versions follow it.`,
  '',
  table,
  '',
  summary,
  '',
  '### How to run it',
  '',
  `\`make bench\` (= \`${command}\`) rewrites this section. Budgets and the size check alone: \`make test-size\`. The run:`,
  '',
  machine,
  '',
  ...details.flatMap(([h, body]) => [`### ${h}`, '', body, '']),
].join('\n');
console.log(table);
console.log('');
console.log(summary);
console.log('');
console.log(machine);

if (WRITE) {
  const file = path.join(root, 'BENCHMARKS.md');
  const BEGIN = '<!-- bench:run begin (written by tests/bench/run.mjs; edits between these markers are overwritten) -->';
  const END = '<!-- bench:run end -->';
  const block = `${BEGIN}\n## tinker-wasm against its peers: the current figures\n\n${md}\n${END}`;
  let text = existsSync(file) ? readFileSync(file, 'utf8') : '# Benchmarks\n\n';
  const a = text.indexOf(BEGIN.slice(0, 22));
  const b = text.indexOf(END);
  text = a >= 0 && b > a ? text.slice(0, a) + block + text.slice(b + END.length) : `${text.trimEnd()}\n\n${block}\n`;
  writeFileSync(file, text);
  log(`wrote ${path.relative(process.cwd(), file)}`);
}
