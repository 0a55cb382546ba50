// tinker-wasm's command line (pkg/cli, issue 22) against tinker-sim, with the Python SDK's
// `tinker` CLI 0.38.0 (tests/cli/tinker-py: as `pip install tinker` installs it, without the torch extra) as the oracle: every command in
// both formats on the same simulator state, outputs compared byte for byte (JSON, error
// messages, exit codes, downloaded files), credentials shared through the same file, and
// what --help / run list load. Expected outputs are never written here: Python's are.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startSim } from '../js/sim.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '../..');
const CLI = path.join(root, 'pkg/cli/main.js');
const PY = path.join(root, 'tests/conformance/.venv/bin/python');
const PY_CLI = path.join(here, 'tinker-py');
const KEY = 'tml-cli-test';
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'tinker-wasm-cli-'));

let sim;
let runId;
let sessionId;
let externalPath;
const home = path.join(tmp, 'home');

/** The environment both CLIs run in: a fresh HOME, the simulator, the key. */
function envFor(extra = {}) {
  const env = { PATH: process.env.PATH, HOME: home, TINKER_BASE_URL: sim.url, TINKER_API_KEY: KEY, TINKER_TELEMETRY: '0', COLUMNS: '100', ...extra };
  for (const [k, v] of Object.entries(env)) if (v === undefined) delete env[k];
  return env;
}

/** Runs one CLI; `{ code, stdout, stderr }`, where `code` names the signal if one ended it.
 * The oracle is run with Python's fault handler on, so a crash prints its traceback. A
 * Python CLI killed by a signal (seen in CI: billing usage, no output, no exit code) is
 * the oracle failing, not a difference: it is reported and run once more; a second crash, or
 * any difference after the rerun, fails the test. One crash is not rerun: an abort at
 * interpreter shutdown ("Fatal Python error: Aborted" with no Python frame, after the command
 * has run and printed, seen under load) with nothing else on stderr is the command's
 * successful run (rerunning a delete would find nothing left to delete). */
function run(which, args, { env = {}, cwd = tmp, input } = {}) {
  const [cmd, argv] = which === 'py' ? [PY, [PY_CLI, ...args]] : [process.execPath, [CLI, ...args]];
  const envs = envFor(which === 'py' ? { PYTHONFAULTHANDLER: '1', ...env } : env);
  for (let attempt = 1; ; attempt++) {
    const r = spawnSync(cmd, argv, { cwd, env: envs, input: input ?? '', encoding: 'utf8', timeout: 180_000 });
    if (r.error) throw r.error;
    const atExit = /^Fatal Python error: Aborted\n\nThread 0x[0-9a-f]+ \(most recent call first\):\n {2}<no Python frame>\n(\nExtension modules: [^\n]*\n)?$/;
    if (r.signal === 'SIGABRT' && which === 'py' && atExit.test(r.stderr)) {
      console.log(`# the Python CLI aborted at interpreter shutdown after \`${args.join(' ')}\` ran (stdout ${JSON.stringify(r.stdout)}); taken as its successful run`);
      return { code: 0, stdout: r.stdout, stderr: '' };
    }
    if (r.status === null && which === 'py' && attempt === 1) {
      console.log(`# the Python CLI was killed by ${r.signal} on \`${args.join(' ')}\` (stdout ${JSON.stringify(r.stdout)}, stderr ${JSON.stringify(r.stderr)}); running it once more`);
      continue;
    }
    return { code: r.status ?? r.signal, stdout: r.stdout, stderr: r.stderr };
  }
}
const ours = (args, o) => run('ours', args, o);
const py = (args, o) => run('py', args, o);

/** Our error output with our program name in Python's place. */
const asPython = (s) => s.replaceAll('tinker-wasm', 'tinker');

/** Both CLIs, same arguments: same exit code and stdout (and stderr, with our name swapped). */
function same(args, { stderr = true, ...o } = {}) {
  const a = ours(args, o);
  const b = py(args, o);
  assert.equal(a.code, b.code, `exit code of ${args.join(' ')}: ours ${a.code} (${a.stderr}), Python ${b.code} (${b.stderr})`);
  assert.equal(a.stdout, b.stdout, `stdout of ${args.join(' ')}`);
  if (stderr) assert.equal(asPython(a.stderr), b.stderr, `stderr of ${args.join(' ')}`);
  return a;
}

async function simStats() {
  return (await fetch(`${sim.url}/_sim/stats`)).json();
}
const apiRequests = async () => Object.entries((await simStats()).requests_by_path).filter(([k]) => k.includes('/api/v1/') && !k.includes('telemetry')).reduce((n, [, v]) => n + v, 0);

before(async () => {
  sim = await startSim(['--future-delay-ms', '0', '--seed', '7', ...(process.env.CLI_TEST_SIM_LOG ? ['--request-log', process.env.CLI_TEST_SIM_LOG] : [])]);
  fs.mkdirSync(home, { recursive: true });
  process.env.TINKER_TELEMETRY = '0';
  const { ServiceClient } = await import('tinker-wasm/lite');
  const sc = new ServiceClient({ apiKey: KEY, baseURL: sim.url, userMetadata: { suite: 'cli' }, telemetry: false });
  const tc = await sc.createLoraTrainingClient({ base_model: 'Qwen/Qwen3-8B', rank: 8, seed: 1, user_metadata: { note: 'ünïcode ✓', purpose: 'cli' } });
  await tc.saveState('first');
  await tc.saveState('second', { ttl_seconds: 7200 });
  for (const name of ['pub-a', 'pub-b', 'ttl-a', 'ttl-b', 'del-a', 'del-b', 'del-c', 'del-d']) await tc.saveState(name);
  await tc.saveWeightsForSampler('samp');
  externalPath = (await tc.saveWeightsExternal('ext')).path;
  runId = tc.modelId;
  sessionId = sc.sessionState().sessionId;
  // More runs than one page of Python's run list (100), in another session.
  const sc2 = new ServiceClient({ apiKey: KEY, baseURL: sim.url, telemetry: false });
  await Promise.all(Array.from({ length: 104 }, (_, i) => sc2.createLoraTrainingClient({ base_model: i % 2 ? 'Qwen/Qwen3-8B' : 'meta-llama/Llama-3.2-1B', rank: 4, seed: i })));
  await sc2.close();
  await sc.close();
});

after(async () => {
  await sim?.stop();
  fs.rmSync(tmp, { recursive: true, force: true });
});

test('read commands print the JSON Python prints, byte for byte', () => {
  const commands = [
    ['run', 'list'],
    ['run', 'list', '--limit', '0'],
    ['run', 'list', '--limit', '150'],
    ['run', 'list', '--limit', '3', '-c', 'id,owner,checkpoint,checkpoint_time'],
    ['run', 'info', runId],
    ['checkpoint', 'list'],
    ['checkpoint', 'list', '--limit', '2'],
    ['checkpoint', 'list', '--run-id', runId],
    ['checkpoint', 'info', `tinker://${runId}/weights/second`],
    ['checkpoint', 'info', `tinker://${runId}/sampler_weights/samp`],
    ['checkpoint', 'info', externalPath],
    ['model', 'list'],
    ['model', 'list', 'QWEN3-8'],
    ['billing', 'checkpoint-storage'],
    ['billing', 'usage', hour(-48), hour(1)],
  ];
  for (const c of commands) {
    const r = same(['--format', 'json', ...c]);
    assert.equal(r.code, 0, `${c.join(' ')}: ${r.stderr}`);
    JSON.parse(r.stdout);
  }
  // -f is --format.
  assert.equal(ours(['-f', 'json', 'run', 'info', runId]).stdout, ours(['--format', 'json', 'run', 'info', runId]).stdout);
});

const hour = (h) => new Date(Math.floor(Date.now() / 3_600_000) * 3_600_000 + h * 3_600_000).toISOString().replace('.000Z', 'Z');

test('tables: same text as Python (rich) at several terminal widths', () => {
  // Relative times ("just now") could differ across a minute boundary: compare commands
  // whose cells hold none, then the others with their time cells masked.
  for (const [columns, commands] of [
    ['40', [['run', 'info', runId], ['checkpoint', 'list', '--run-id', runId]]],
    ['100', [['model', 'list', 'llama-3.2'], ['billing', 'usage', hour(-48), hour(1)], ['run', 'list', '--limit', '150', '-c', 'id,model,lora,status']]],
    ['200', [['checkpoint', 'info', `tinker://${runId}/weights/first`], ['billing', 'checkpoint-storage']]],
  ]) {
    for (const c of commands) {
      // A relative time and the padding after it (it may wrap: "2 minutes" / "ago").
      const mask = (s) => s.replace(/(just now|in less than a minute|(in )?\d+ (second|minute|hour|day|week)s?)\s*/g, 'T');
      const a = ours(c, { env: { COLUMNS: columns } });
      const b = py(c, { env: { COLUMNS: columns } });
      assert.equal(a.code, 0, a.stderr);
      assert.equal(mask(a.stdout), mask(b.stdout), `${c.join(' ')} at ${columns} columns`);
    }
  }
});

test('version and help start without loading any wasm; run list loads the SDK\'s module, never the general tokenizer engine', () => {
  const log = path.join(tmp, 'loads.log');
  const load = (args) => {
    fs.rmSync(log, { force: true });
    const r = spawnSync(process.execPath, ['--import', path.join(here, 'record-loads.mjs'), CLI, ...args], { env: { ...envFor(), CLI_LOAD_LOG: log }, encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
    return fs.readFileSync(log, 'utf8');
  };
  for (const args of [['--help'], ['run', '--help'], ['checkpoint', 'download', '-h'], ['version']]) {
    const loaded = load(args);
    assert.doesNotMatch(loaded, /\/gen\//, `${args.join(' ')} loaded wasm glue:\n${loaded}`);
    assert.doesNotMatch(loaded, /\.wasm/);
  }
  const loaded = load(['run', 'list']);
  // The full module: lite does not run TINKER_CREDENTIAL_CMD or read the credentials file.
  assert.match(loaded, /gen\/full\/tinker_wasm_bg\.wasm/);
  assert.doesNotMatch(loaded, /gen\/lite|tokenizer_general_bg\.wasm/, loaded);
  assert.match(ours(['version']).stdout, /^tinker-wasm \d+\.\d+\.\d+/);
});

test('usage errors: Python\'s messages and exit code 2', () => {
  for (const c of [
    ['run', 'list', '--foo'],
    ['-f', 'xml', 'run', 'list'],
    ['run', 'list', '--limit', 'abc'],
    ['bogus'],
    ['run', 'info'],
    ['run', 'info', 'a', 'b'],
    ['checkpoint', 'set-ttl', 'tinker://x/weights/y', '--ttl'],
  ]) {
    const r = same(c);
    assert.equal(r.code, 2, c.join(' '));
  }
  // A group without a command prints its help and exits 2, as click does.
  assert.equal(ours(['run']).code, 2);
  assert.equal(py(['run']).code, 2);
});

test('bad input is rejected before any request, with Python\'s message and exit code', async () => {
  const cases = [
    ['run', 'list', '--columns', 'id,nope'],
    ['checkpoint', 'info', 'foo'],
    ['checkpoint', 'publish', 'http://x'],
    ['checkpoint', 'unpublish', 'weights/1'],
    ['checkpoint', 'set-ttl', `tinker://${runId}/weights/first`],
    ['checkpoint', 'set-ttl', `tinker://${runId}/weights/first`, '--ttl', '3600', '--remove'],
    ['checkpoint', 'delete'],
    ['checkpoint', 'delete', '--type', 'weights'],
    ['checkpoint', 'delete', 'tinker://a/weights/b', '--run-id', 'x'],
    ['checkpoint', 'download', `tinker://${runId}/sampler_weights/samp`],
    ['checkpoint', 'download', 'tinker://onlytwo/parts'],
    ['checkpoint', 'download', 'nope'],
  ];
  const n0 = await apiRequests();
  for (const c of cases) {
    const r = same(c);
    assert.equal(r.code, 1, c.join(' '));
    assert.match(r.stderr, /^Error: .+\n/);
  }
  // Ours also refuses ids and paths Python would send (it answers them with a 404 or worse).
  for (const c of [['run', 'info', 'a/b'], ['run', 'info', 'x?y'], ['checkpoint', 'info', 'tinker://r/weights/'], ['checkpoint', 'list', '--run-id', '../x'], ['session', 'export-trace', 'a b']]) {
    const r = ours(c);
    assert.equal(r.code, 1, c.join(' '));
    assert.match(r.stderr, /^Error: Invalid .+\n.+\n$/);
  }
  assert.equal(await apiRequests(), n0, 'no request for rejected input');
  // Server-side failures: same first line, exit 1, no stack trace.
  for (const c of [['run', 'info', 'nope'], ['checkpoint', 'info', `tinker://${runId}/weights/nope`]]) {
    const a = ours(c);
    const b = py(c);
    assert.equal(a.code, b.code);
    assert.equal(a.stderr.split('\n')[0], b.stderr.split('\n')[0]);
    assert.doesNotMatch(a.stderr, /\n\s+at /);
  }
  const debug = ours(['run', 'info', 'nope'], { env: { TINKER_DEBUG: '1' } });
  assert.match(debug.stderr, /^Error: Resource not found\n/);
});

test('no credential: Python\'s message and exit code, before any request', () => {
  const none = { TINKER_API_KEY: undefined };
  same(['run', 'list'], { env: none });
  same(['auth', 'status'], { env: none });
  same(['checkpoint', 'download', `tinker://${runId}/weights/first`, '-o', path.join(tmp, 'nocred')], { env: none, stderr: false });
  assert.ok(!fs.existsSync(path.join(tmp, 'nocred', `${runId}_weights_first`)));
});

test('mutations: publish, unpublish, set-ttl and delete do what Python\'s do', () => {
  const p = (name) => `tinker://${runId}/weights/${name}`;
  const info = (name) => JSON.parse(py(['-f', 'json', 'checkpoint', 'info', p(name)]).stdout);
  // Ours publishes a, Python b: same (empty) output, same state.
  assert.deepEqual([ours(['checkpoint', 'publish', p('pub-a')]).code, py(['checkpoint', 'publish', p('pub-b')]).code], [0, 0]);
  assert.equal(info('pub-a').public, true);
  // Publishing again is a 409: exit 1 at once. (Python's HTTP layer retries a 409 for
  // minutes before it gives up, so it is not asked here.)
  const again = ours(['checkpoint', 'publish', p('pub-a')]);
  assert.equal(again.code, 1);
  assert.match(again.stderr, /^Error: .*\b409\b/);
  // (Each CLI on its own checkpoint: a second unpublish is a 409, which Python retries for minutes.)
  const un = ours(['checkpoint', 'unpublish', p('pub-a')]);
  const unPy = py(['checkpoint', 'unpublish', p('pub-b')]);
  assert.deepEqual([un.code, un.stdout, un.stderr], [unPy.code, unPy.stdout, unPy.stderr]);
  assert.equal(info('pub-a').public, false);
  assert.equal(ours(['checkpoint', 'set-ttl', p('ttl-a'), '--ttl', '86400']).code, 0);
  assert.equal(py(['checkpoint', 'set-ttl', p('ttl-b'), '--ttl', '86400']).code, 0);
  assert.ok(info('ttl-a').expires_at);
  assert.equal(ours(['checkpoint', 'set-ttl', p('ttl-a'), '--remove']).code, 0);
  assert.equal(info('ttl-a').expires_at, null);
  // Delete: JSON summary as Python's, then gone.
  const del = ours(['-f', 'json', 'checkpoint', 'delete', '-y', p('del-a')]);
  const delPy = py(['-f', 'json', 'checkpoint', 'delete', '-y', p('del-b')]);
  assert.equal(del.stdout, delPy.stdout);
  assert.equal(del.code, 0);
  same(['checkpoint', 'info', p('del-a')], { stderr: true });
  // Without -y on a pipe: the prompt, then "no" cancels.
  const asked = same(['checkpoint', 'delete', p('del-c')], { input: 'n\n' });
  assert.match(asked.stdout, /Deletion cancelled/);
  // Table mode on a pipe: click's progress label, then the summary, as Python prints them.
  const d1 = ours(['checkpoint', 'delete', '-y', p('del-c')]);
  const d2 = py(['checkpoint', 'delete', '-y', p('del-d')]);
  assert.equal(d1.stdout, d2.stdout);
  assert.equal(d1.code, 0);
  const filtered = same(['-f', 'json', 'checkpoint', 'delete', '--run-id', runId, '--type', 'weights', '--before', '2000-01-01', '-y']);
  assert.match(filtered.stdout, /No checkpoints found/);
});

test('checkpoint download: same directory name, JSON and bytes as Python; refuses an existing directory; leaves nothing on failure', () => {
  for (const cp of [`tinker://${runId}/weights/first`, externalPath]) {
    const a = path.join(tmp, 'dl-ours');
    const b = path.join(tmp, 'dl-py');
    fs.mkdirSync(a, { recursive: true });
    fs.mkdirSync(b, { recursive: true });
    const ra = ours(['-f', 'json', 'checkpoint', 'download', cp, '-o', './out/'], { cwd: a });
    const rb = py(['-f', 'json', 'checkpoint', 'download', cp, '-o', './out/'], { cwd: b });
    assert.equal(ra.code, 0, ra.stderr);
    assert.equal(rb.code, 0, rb.stderr);
    assert.equal(ra.stdout, rb.stdout, 'JSON output');
    assert.equal(ra.stderr, '', 'nothing on stderr with --format json');
    const dir = JSON.parse(ra.stdout).destination;
    const files = fs.readdirSync(path.join(b, dir)).sort();
    assert.deepEqual(fs.readdirSync(path.join(a, dir)).sort(), files);
    assert.ok(files.includes('adapter_model.safetensors'));
    for (const f of files) assert.ok(fs.readFileSync(path.join(a, dir, f)).equals(fs.readFileSync(path.join(b, dir, f))), f);
    // Again: refused without --force (same message), replaced with it.
    same(['checkpoint', 'download', cp, '-o', './out/'], { cwd: a, stderr: true });
    const pyAgain = py(['checkpoint', 'download', cp, '-o', './out/'], { cwd: b });
    assert.equal(pyAgain.code, 1);
    const forced = ours(['checkpoint', 'download', cp, '-o', './out/', '--force'], { cwd: a });
    assert.equal(forced.code, 0, forced.stderr);
    assert.match(forced.stdout, /Checkpoint Download/);
    assert.doesNotMatch(forced.stdout, /\r|#####/, 'no progress bar on a pipe');
    fs.rmSync(a, { recursive: true });
    fs.rmSync(b, { recursive: true });
  }
  // A checkpoint that does not exist: error, exit 1, no directory left behind.
  const c = path.join(tmp, 'dl-missing');
  const r = ours(['checkpoint', 'download', `tinker://${runId}/weights/nope`, '-o', c]);
  assert.equal(r.code, 1);
  assert.deepEqual(fs.readdirSync(c), []);
});

test('checkpoint download: Ctrl-C leaves no partial directory and exits 130', async () => {
  const { spawn } = await import('node:child_process');
  const out = path.join(tmp, 'dl-int');
  // The simulator holds every training future for 3 s, so the export is in progress.
  await fetch(`${sim.url}/_sim/config`, { method: 'POST', body: JSON.stringify({ future_delay_ms: 3000 }) });
  try {
    const child = spawn(process.execPath, [CLI, 'checkpoint', 'download', `tinker://${runId}/weights/second`, '-o', out], { env: envFor(), stdio: ['ignore', 'pipe', 'pipe'] });
    let err = '';
    child.stderr.on('data', (c) => (err += c));
    // Wait until the export has started (its message is on stderr), then interrupt.
    await new Promise((resolve) => child.stderr.on('data', () => err.includes('Exporting') && resolve()));
    const dir = path.join(out, `${runId}_weights_second`);
    assert.ok(fs.existsSync(dir), 'the target directory exists while downloading');
    child.kill('SIGINT');
    const code = await new Promise((r) => child.on('exit', (c) => r(c)));
    assert.equal(code, 130, err);
    assert.ok(!fs.existsSync(dir), 'no partial directory');
  } finally {
    await fetch(`${sim.url}/_sim/config`, { method: 'POST', body: JSON.stringify({ future_delay_ms: 0 }) });
  }
});

test('session export-trace: same JSON as Python (the URL aside) and the same trace file', () => {
  const a = ours(['-f', 'json', 'session', 'export-trace', sessionId, '-o', path.join(tmp, 'ours.pftrace')]);
  const b = py(['-f', 'json', 'session', 'export-trace', sessionId, '-o', path.join(tmp, 'py.pftrace')]);
  assert.equal(a.code, 0, a.stderr);
  const ja = JSON.parse(a.stdout);
  const jb = JSON.parse(b.stdout);
  assert.deepEqual(Object.keys(ja), Object.keys(jb));
  assert.equal(ja.file_size_bytes, jb.file_size_bytes);
  assert.ok(fs.readFileSync(path.join(tmp, 'ours.pftrace')).equals(fs.readFileSync(path.join(tmp, 'py.pftrace'))));
  const u = ours(['-f', 'json', 'session', 'export-trace', sessionId, '--url-only']);
  const v = py(['-f', 'json', 'session', 'export-trace', sessionId, '--url-only']);
  assert.deepEqual(Object.keys(JSON.parse(u.stdout)), Object.keys(JSON.parse(v.stdout)));
  const bare = ours(['session', 'export-trace', sessionId, '--url-only']);
  assert.match(bare.stdout, /^http:\/\/127\.0\.0\.1:\d+\/_sim\/files\/.+\n$/);
  same(['session', 'export-trace', 'no-such-session'], { stderr: false });
});

test('auth: the same credentials file as Python\'s store; a login by either CLI serves both; status; logout; keys never printed', async () => {
  const noKey = { TINKER_API_KEY: undefined };
  const file = path.join(home, '.tinker', 'credentials.json');
  fs.rmSync(path.join(home, '.tinker'), { recursive: true, force: true });
  // Ours logs in (the key on stdin, as a pipe).
  const login = ours(['auth', 'login'], { env: noKey, input: `${KEY}\n` });
  assert.equal(login.code, 0, login.stderr);
  assert.match(login.stdout, /Logged in as .+@.+ \(.+\)\. Stored API key '.+' as the default credential\.\n$/);
  const oursFile = fs.readFileSync(file, 'utf8');
  assert.equal(fs.statSync(file).mode & 0o777, 0o600);
  assert.equal(fs.statSync(path.dirname(file)).mode & 0o777, 0o700);
  // Python's own `auth login` with the same key, in another HOME: the same output and the
  // same file, byte for byte.
  const pyHome = path.join(tmp, 'pyhome');
  const loginPy = py(['auth', 'login'], { env: { ...noKey, HOME: pyHome }, input: `${KEY}\n` });
  assert.equal(loginPy.code, 0, loginPy.stderr);
  assert.equal(login.stdout, loginPy.stdout);
  assert.equal(oursFile, fs.readFileSync(path.join(pyHome, '.tinker', 'credentials.json'), 'utf8'));
  // Our login serves Python; Python's file serves ours.
  same(['auth', 'status'], { env: noKey });
  same(['-f', 'json', 'checkpoint', 'list', '--run-id', runId], { env: noKey });
  same(['-f', 'json', 'run', 'info', runId], { env: { ...noKey, HOME: pyHome } });
  // The SDK itself finds the stored key too (the core's chain); lite does not read the file.
  const sdkWith = (entry) => spawnSync(process.execPath, ['--input-type=module', '-e', `import { RestClient } from '${entry}'; const r = new RestClient({ telemetry: false }); console.log((await r.getTrainingRun(${JSON.stringify(runId)})).training_run_id); await r.close();`], { cwd: root, env: envFor(noKey), encoding: 'utf8' });
  const sdk = sdkWith('tinker-wasm');
  assert.equal(sdk.stdout.trim(), runId, sdk.stderr);
  const lite = sdkWith('tinker-wasm/lite');
  assert.notEqual(lite.status, 0);
  assert.match(lite.stderr, /apiKey: an API key is required: pass apiKey or set TINKER_API_KEY/);
  // Logged in already: both refuse, alike.
  same(['auth', 'login'], { env: noKey, input: `${KEY}\n`, stderr: false });
  // Python logs out of our login (a manual key: it stays active); then both say there is nothing.
  const out = ours(['auth', 'logout'], { env: { ...noKey, HOME: pyHome } });
  const outPy = py(['auth', 'logout'], { env: noKey });
  assert.equal(out.code, 0, out.stderr);
  assert.equal(out.stdout, outPy.stdout);
  assert.match(out.stdout, /^Removed credential '.+'\. The API key is still active\./);
  same(['auth', 'logout'], { env: noKey });
  same(['auth', 'status'], { env: noKey });
  // An empty key: refused, nothing stored, exit 1 (tinker-sim takes any non-empty key).
  const bad = ours(['auth', 'login'], { env: noKey, input: '  \n' });
  assert.equal(bad.code, 1);
  assert.equal(bad.stderr, 'Paste your API key: \nError: The API key must not be empty\n');
  // Python's, after its getpass warnings about the missing terminal.
  const badPy = py(['auth', 'login'], { env: noKey, input: '  \n' });
  assert.equal(badPy.code, bad.code);
  assert.ok(badPy.stderr.endsWith(bad.stderr), badPy.stderr);
  assert.ok(!fs.existsSync(file) || !JSON.parse(fs.readFileSync(file, 'utf8')).default);
  for (const r of [login, loginPy, out, bad]) assert.ok(!(r.stdout + r.stderr).includes(KEY), 'the key is never printed');
  fs.rmSync(path.join(home, '.tinker'), { recursive: true, force: true });
});

test('credentials: TINKER_CREDENTIAL_CMD, credential_default_source and whoami on a JWT server', async () => {
  // Every distinct key is a distinct user of the simulator, so whoami tells which
  // credential the JWT exchange used.
  const jwtSim = await startSim(['--future-delay-ms', '0', '--client-config', JSON.stringify({ pjwt_auth_enabled: true, credential_default_source: 'credential_cmd' })]);
  try {
    const cmd = { TINKER_BASE_URL: jwtSim.url, TINKER_API_KEY: undefined, TINKER_CREDENTIAL_CMD: 'echo tml-from-cmd' };
    // Only the command: both CLIs authenticate with its output.
    const a = same(['-f', 'json', 'auth', 'whoami'], { env: cmd });
    assert.equal(a.code, 0, a.stderr);
    assert.match(JSON.parse(a.stdout).org_urn, /^tml:organization:/);
    same(['-f', 'json', 'run', 'list'], { env: cmd });
    // A plain key as well, the server asking for the command: the exchange uses the
    // command's output (the same user), as Python's does.
    const b = same(['-f', 'json', 'auth', 'whoami'], { env: { ...cmd, TINKER_API_KEY: 'tml-someone-else' } });
    assert.equal(b.stdout, a.stdout);
    // Without the command, that key is a different user.
    const c = same(['-f', 'json', 'auth', 'whoami'], { env: { ...cmd, TINKER_CREDENTIAL_CMD: undefined, TINKER_API_KEY: 'tml-someone-else' }, stderr: false });
    if (c.code === 0) assert.notEqual(c.stdout, a.stdout);
    // The command printing nothing: an error, exit 1, in both.
    const empty = { ...cmd, TINKER_CREDENTIAL_CMD: 'true' };
    assert.equal(ours(['run', 'list'], { env: empty }).code, 1);
    assert.equal(py(['run', 'list'], { env: empty }).code, 1);
  } finally {
    await jwtSim.stop();
  }
});

test('environment: CF-Access headers sent, TINKER_TELEMETRY=0 turns telemetry off', async () => {
  const logFile = path.join(tmp, 'requests.jsonl');
  const s = await startSim(['--future-delay-ms', '0', '--request-log', logFile]);
  try {
    const env = { TINKER_BASE_URL: s.url, CLOUDFLARE_ACCESS_CLIENT_ID: 'cf-id-123', CLOUDFLARE_ACCESS_CLIENT_SECRET: 'cf-secret-456' };
    assert.equal(ours(['run', 'list'], { env: { ...env, TINKER_TELEMETRY: '0' } }).code, 0);
    // A failed call is a telemetry event (user_error), as in Python.
    assert.equal(ours(['run', 'info', 'nope'], { env: { ...env, TINKER_TELEMETRY: 'off' } }).code, 1);
    const lines = fs.readFileSync(logFile, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
    const api = lines.filter((l) => l.path.startsWith('/api/v1/'));
    assert.ok(api.length > 0);
    for (const l of api) assert.equal(l.headers['cf-access-client-id'], 'cf-id-123', l.path);
    const telemetry = async () => (await (await fetch(`${s.url}/_sim/telemetry`)).json()).count;
    assert.equal(await telemetry(), 0, 'TINKER_TELEMETRY=0');
    assert.equal(ours(['run', 'info', 'nope'], { env: { ...env, TINKER_TELEMETRY: '1' } }).code, 1);
    assert.ok((await telemetry()) > 0, 'telemetry is on with TINKER_TELEMETRY=1');
  } finally {
    await s.stop();
  }
});

// Progress lines fit the terminal (issue 31, item 9): in a 100-column terminal a download's
// line used to wrap (`… 600.0 KB/600.0 KB  100%  293.0 MB/s` with `/s` on the next line).
test('progress lines fit the terminal: the bar narrows, then the label is cut', async () => {
  const { progressBar } = await import('../../pkg/cli/progress.js');
  const label = 'Downloading tinker://3f1c2b7e-7a41-4c55-9d0e-5b8e2f1a6c90:train:0/weights/final';
  for (const columns of [50, 60, 100, 120, 200]) {
    const writes = [];
    const out = { isTTY: true, columns, write: (s) => writes.push(s) };
    const bar = progressBar({ length: 614_400, label, bytes: true, out });
    bar.update(307_200);
    bar.update(307_200);
    bar.finish();
    const lines = writes.join('').split(/\r\x1b\[K|\n/).filter(Boolean);
    assert.ok(lines.length >= 2, `${columns}: ${JSON.stringify(writes)}`);
    for (const line of lines) assert.ok([...line].length <= columns - 1, `${columns} columns: ${[...line].length} characters: ${line}`);
    const last = lines.at(-1);
    assert.match(last, /600\.0 KB\/600\.0 KB {2}100%/, `${columns} columns: the numbers are kept: ${last}`);
    if (columns >= 200) assert.ok(last.startsWith(label) && last.includes(`[${'#'.repeat(36)}]`), `a wide terminal shows the whole label and bar: ${last}`);
  }
});

// A training run's progress in a terminal (tinker-wasm/cookbook, issue 33): step, loss and
// ETA on one line redrawn per step, fitted to the terminal; nothing on a pipe.
test('a training run draws step, loss and ETA on one line, only in a terminal', async () => {
  const { stepProgress } = await import('../../pkg/cli/progress.js');
  const writes = [];
  let t = 0;
  const bar = stepProgress({ isTTY: true, columns: 80, write: (s) => writes.push(s) }, () => t);
  for (const [step, progress, nll] of [[0, 0.25, 2.5], [1, 0.5, 1.25], [2, 0.75, 0.5], [3, 1, 0.25]]) {
    t += 2000;
    bar.step({ step, progress, train_mean_nll: nll });
  }
  bar.finish();
  const lines = writes.join('').split(/\r\x1b\[K|\n/).filter(Boolean);
  assert.equal(lines.length, 4);
  assert.match(lines[0], /^step 1 {2}loss 2\.5000 {2}\[#{9}-{27}\] {2}25% {2}ETA 00:00:06$/);
  assert.match(lines[1], /^step 2 {2}loss 1\.2500 .* 50% {2}ETA 00:00:04$/);
  assert.match(lines[3], /^step 4 {2}loss 0\.2500 {2}\[#{36}\] {2}100% {2}ETA 00:00:00$/);
  assert.ok(writes.at(-1) === '\n');
  for (const line of lines) assert.ok(line.length <= 79, line);
  const piped = [];
  const quiet = stepProgress({ isTTY: false, write: (s) => piped.push(s) });
  quiet.step({ step: 0, progress: 0.5, train_mean_nll: 1 });
  quiet.finish();
  assert.deepEqual(piped, []);
});
