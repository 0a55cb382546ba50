// The client options a caller leaves unset, as the Python SDK 0.38 finds them, in Node, Bun
// and Deno alike (issue 32, part 2: the rules are the core's, crates/core/src/client/
// environment.rs; each runtime's entry only lends its environment, files and commands,
// pkg/host.js). A RestClient made with no options (tests/js/credentials-probe.mjs) asks a
// JWT simulator who it is: each key is a user of its own there, so the answer tells which
// credential the chain chose. The oracle is the same question asked with that key given
// explicitly.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { startSim } from './sim.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const PROBE = path.join(root, 'tests/js/credentials-probe.mjs');
const RUNTIMES = {
  node: { cmd: process.execPath, args: [], entry: 'pkg/index.js' },
  bun: { cmd: path.join(root, 'node_modules/.bin/bun'), args: ['run'], entry: 'pkg/bun.js' },
  deno: { cmd: path.join(root, 'node_modules/.bin/deno'), args: ['run', '-A', '--quiet'], entry: 'pkg/deno.js' },
};
const STORED = 'tml-stored-key';
const ENV_KEY = 'tml-env-key';
const CMD_KEY = 'tml-command-key';
const OTHER = 'tml-someone-else';

let sim;
let cmdSim;
let home;
before(async () => {
  const jwt = (source) => ['--future-delay-ms', '0', '--client-config', JSON.stringify({ pjwt_auth_enabled: true, credential_default_source: source })];
  const log = path.join(os.tmpdir(), `tinker-cred-${process.pid}.jsonl`);
  sim = await startSim([...jwt('api_key'), '--request-log', log]);
  sim.log = log;
  cmdSim = await startSim(jwt('credential_cmd'));
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'tinker-cred-home-'));
  fs.mkdirSync(path.join(home, '.tinker'), { mode: 0o700 });
  const file = { version: 1, default: '7', keys: { 7: { type: 'manual', key: STORED, name: 'k' } } };
  fs.writeFileSync(path.join(home, '.tinker', 'credentials.json'), JSON.stringify(file), { mode: 0o600 });
});
after(async () => {
  await sim?.stop();
  await cmdSim?.stop();
  fs.rmSync(home, { recursive: true, force: true });
  fs.rmSync(sim.log, { force: true });
});

/** Who the probe is on `url` in `runtime`, with only `env` (and PATH, HOME) set. */
function probe(runtime, url, env) {
  const r = RUNTIMES[runtime];
  const entry = pathToFileURL(path.join(root, r.entry)).href;
  const full = { PATH: process.env.PATH, HOME: home, TINKER_BASE_URL: url, TINKER_TELEMETRY: '0', ...env };
  return new Promise((resolve) => {
    execFile(r.cmd, [...r.args, PROBE, entry], { env: full, encoding: 'utf8', timeout: 60_000 }, (err, stdout, stderr) => {
      resolve({ code: err ? (err.code ?? 1) : 0, stdout, stderr, who: err ? null : JSON.parse(stdout.trim().split('\n').pop()) });
    });
  });
}

/** Who `key` is on `url` (the oracle: the key given explicitly, in this process). */
async function whoIs(url, key) {
  const { RestClient } = await import('../../pkg/index.js');
  const rest = new RestClient({ apiKey: key, baseURL: url, telemetry: false });
  try {
    return (await rest.whoami()).user_urn;
  } finally {
    await rest.close();
  }
}

for (const runtime of Object.keys(RUNTIMES)) {
  test(`${runtime}: TINKER_API_KEY, then TINKER_CREDENTIAL_CMD, then the stored default key`, async () => {
    const stored = await probe(runtime, sim.url, {});
    assert.equal(stored.code, 0, stored.stderr);
    assert.equal(stored.who.user_urn, await whoIs(sim.url, STORED), 'the stored default key');
    const env = await probe(runtime, sim.url, { TINKER_API_KEY: ENV_KEY });
    assert.equal(env.who?.user_urn, await whoIs(sim.url, ENV_KEY), `TINKER_API_KEY wins: ${env.stderr}`);
    const cmd = await probe(runtime, sim.url, { TINKER_CREDENTIAL_CMD: `echo ${CMD_KEY}` });
    assert.equal(cmd.who?.user_urn, await whoIs(sim.url, CMD_KEY), `the command, not the stored key: ${cmd.stderr}`);
    const empty = await probe(runtime, sim.url, { TINKER_CREDENTIAL_CMD: 'true' });
    assert.notEqual(empty.code, 0);
    assert.match(empty.stderr, /TINKER_CREDENTIAL_CMD: returned an empty credential/);
  });

  test(`${runtime}: credential_default_source credential_cmd: the exchange uses the command's output`, async () => {
    // The command alone, and with a plain key as well: the same user (the command's), and
    // another command's output is another user.
    const alone = await probe(runtime, cmdSim.url, { TINKER_CREDENTIAL_CMD: `echo ${CMD_KEY}` });
    const both = await probe(runtime, cmdSim.url, { TINKER_API_KEY: OTHER, TINKER_CREDENTIAL_CMD: `echo ${CMD_KEY}` });
    const another = await probe(runtime, cmdSim.url, { TINKER_API_KEY: OTHER, TINKER_CREDENTIAL_CMD: `echo ${OTHER}` });
    for (const r of [alone, both, another]) assert.equal(r.code, 0, r.stderr);
    assert.equal(both.who.user_urn, alone.who.user_urn);
    assert.notEqual(another.who.user_urn, alone.who.user_urn);
    const none = await probe(runtime, cmdSim.url, { TINKER_API_KEY: OTHER });
    assert.notEqual(none.code, 0);
    assert.match(none.stderr, /set TINKER_CREDENTIAL_CMD/);
  });

  test(`${runtime}: Cloudflare Access headers from the environment`, async () => {
    const before = fs.existsSync(sim.log) ? fs.readFileSync(sim.log, 'utf8').split('\n').length : 0;
    const r = await probe(runtime, sim.url, { TINKER_API_KEY: ENV_KEY, CLOUDFLARE_ACCESS_CLIENT_ID: `cf-${runtime}`, CLOUDFLARE_ACCESS_CLIENT_SECRET: 'cf-secret' });
    assert.equal(r.code, 0, r.stderr);
    const lines = fs.readFileSync(sim.log, 'utf8').trim().split('\n').slice(before - 1).filter(Boolean).map((l) => JSON.parse(l));
    const api = lines.filter((l) => l.path.startsWith('/api/v1/') && l.headers['cf-access-client-id'] === `cf-${runtime}`);
    assert.ok(api.length >= 2, `CF-Access-Client-Id on this run's requests: ${JSON.stringify(lines.map((l) => [l.path, l.headers['cf-access-client-id']]))}`);
  });
}
