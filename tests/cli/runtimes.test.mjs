// The CLI under Bun and Deno (issue 25): the same commands print the same JSON as under
// Node, against one simulator. Deno runs with only what a Deno user of the CLI grants:
// the API host, the environment, and reading the package and the credentials directory.
//   node --test tests/cli/runtimes.test.mjs
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startSim } from '../js/sim.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const CLI = path.join(root, 'pkg/cli/main.js');
const KEY = 'tml-cli-runtimes';
const home = mkdtempSync(path.join(tmpdir(), 'tinker-cli-rt-'));
let sim;
let runId;

before(async () => {
  sim = await startSim(['--future-delay-ms', '0', '--seed', '5']);
  const { ServiceClient } = await import('tinker-wasm/lite');
  const sc = new ServiceClient({ apiKey: KEY, baseURL: sim.url, telemetry: false });
  const tc = await sc.createLoraTrainingClient({ base_model: 'Qwen/Qwen3-8B', rank: 4, seed: 1 });
  await tc.saveState('rt');
  runId = tc.modelId;
  await sc.close();
});
after(async () => {
  await sim?.stop();
  rmSync(home, { recursive: true, force: true });
});

const env = () => ({ PATH: process.env.PATH, HOME: home, TINKER_API_KEY: KEY, TINKER_BASE_URL: sim.url, TINKER_TELEMETRY: '0' });
const RUNTIMES = {
  node: () => [process.execPath, [CLI]],
  bun: () => [path.join(root, 'node_modules/.bin/bun'), [CLI]],
  deno: () => [path.join(root, 'node_modules/.bin/deno'), ['run', '--no-lock', '--no-prompt', '--allow-net=127.0.0.1', '--allow-env', `--allow-read=${path.join(root, 'pkg')},${home}`, '--allow-sys', CLI]],
};
function cli(runtime, args) {
  const [cmd, pre] = RUNTIMES[runtime]();
  const r = spawnSync(cmd, [...pre, ...args], { cwd: root, env: env(), encoding: 'utf8', timeout: 120_000 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

for (const args of [['version'], ['--format', 'json', 'run', 'list'], ['--format', 'json', 'checkpoint', 'list']]) {
  test(`tinker-wasm ${args.join(' ')}: the same output under Node, Bun and Deno`, () => {
    const want = cli('node', args);
    assert.equal(want.code, 0, want.stderr);
    if (args[0] === '--format') assert.ok(JSON.parse(want.stdout), 'JSON');
    for (const runtime of ['bun', 'deno']) {
      const got = cli(runtime, args);
      assert.equal(got.code, 0, `${runtime}: ${got.stderr}`);
      assert.equal(got.stdout, want.stdout, `${runtime} prints what Node prints`);
    }
  });
}

test('run info of a missing run fails the same way under each runtime', () => {
  const want = cli('node', ['--format', 'json', 'run', 'info', `${runId}-missing`]);
  assert.notEqual(want.code, 0);
  for (const runtime of ['bun', 'deno']) {
    const got = cli(runtime, ['--format', 'json', 'run', 'info', `${runId}-missing`]);
    assert.equal(got.code, want.code, `${runtime}: ${got.stderr}`);
    assert.equal(got.stderr, want.stderr);
  }
});
