// The Node entry's credential chain (pkg/node-credentials.js), option by option, as the
// Python SDK 0.38 resolves them: TINKER_API_KEY, then TINKER_CREDENTIAL_CMD (run per
// credential), then ~/.tinker/credentials.json (only without a command); CF-Access headers;
// TINKER_TELEMETRY. No server: a recording fetch stands in for it.
import { test, beforeEach, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { withNodeCredentials, writeCredentials, readCredentials } from '../../pkg/node-credentials.js';

const saved = { ...process.env };
let home;
beforeEach(() => {
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'tinker-cred-'));
  for (const k of ['TINKER_API_KEY', 'TINKER_CREDENTIAL_CMD', 'CLOUDFLARE_ACCESS_CLIENT_ID', 'CLOUDFLARE_ACCESS_CLIENT_SECRET', 'TINKER_TELEMETRY']) delete process.env[k];
  process.env.HOME = home;
});
afterEach(() => {
  process.env = { ...saved };
  fs.rmSync(home, { recursive: true, force: true });
});

const store = (key) => writeCredentials({ version: 1, default: '7', keys: { 7: { type: 'manual', key, name: 'k', details: { org_details: { name: 'o' }, user_details: { email: 'e@x' } } } } });
const recorder = () => {
  const sent = [];
  const fetch = async (url, init) => {
    sent.push({ url, key: init.headers['X-API-Key'] });
    return new Response('{}', { status: 200, headers: { 'content-type': 'application/json' } });
  };
  return { sent, fetch };
};

test('TINKER_API_KEY first, then the command, then the stored default', async () => {
  store('tml-stored');
  assert.equal(withNodeCredentials({}).apiKey, 'tml-stored');
  process.env.TINKER_CREDENTIAL_CMD = 'echo tml-from-cmd';
  const { sent, fetch } = recorder();
  const o = withNodeCredentials({ fetch });
  assert.notEqual(o.apiKey, 'tml-stored', 'the stored key must not shadow the command');
  await o.fetch('http://x/api/v1/client/config', { method: 'POST', headers: { 'X-API-Key': o.apiKey } });
  assert.equal(sent[0].key, 'tml-from-cmd');
  process.env.TINKER_API_KEY = 'tml-env';
  assert.equal(withNodeCredentials({}).apiKey, 'tml-env');
  assert.equal(withNodeCredentials({ apiKey: 'tml-given' }).apiKey, 'tml-given');
});

test('credential_default_source: credential_cmd sends the command\'s output on the JWT exchange only', async () => {
  process.env.TINKER_API_KEY = 'tml-env';
  process.env.TINKER_CREDENTIAL_CMD = 'echo tml-from-cmd';
  const sent = [];
  const fetch = async (url, init) => {
    sent.push({ url, key: init.headers['x-api-key'] });
    const body = url.endsWith('/client/config') ? { pjwt_auth_enabled: true, credential_default_source: 'credential_cmd' } : { jwt: 'eyJx' };
    return new Response(JSON.stringify(body), { status: 200 });
  };
  const o = withNodeCredentials({ fetch });
  const config = await o.fetch('http://x/api/v1/client/config', { headers: { 'x-api-key': 'tml-env' } });
  assert.equal((await config.json()).credential_default_source, 'credential_cmd', 'the config still reaches the SDK');
  await o.fetch('http://x/api/v1/auth/token', { headers: { 'x-api-key': 'tml-env' } });
  await o.fetch('http://x/api/v1/training_runs', { headers: { 'x-api-key': 'eyJjwt' } });
  assert.deepEqual(sent.map((s) => s.key), ['tml-env', 'tml-from-cmd', 'eyJjwt']);
  // No command configured: a 401 saying what to do, not a request.
  delete process.env.TINKER_CREDENTIAL_CMD;
  const p = withNodeCredentials({ fetch });
  await p.fetch('http://x/api/v1/client/config', { headers: { 'x-api-key': 'tml-env' } });
  const r = await p.fetch('http://x/api/v1/auth/token', { headers: { 'x-api-key': 'tml-env' } });
  assert.equal(r.status, 401);
  assert.match((await r.json()).detail, /TINKER_CREDENTIAL_CMD/);
});

test('Cloudflare Access headers from the environment; the caller\'s headers win', () => {
  process.env.CLOUDFLARE_ACCESS_CLIENT_ID = 'id';
  process.env.CLOUDFLARE_ACCESS_CLIENT_SECRET = 'secret';
  assert.deepEqual(withNodeCredentials({ apiKey: 'tml-a' }).defaultHeaders, { 'CF-Access-Client-Id': 'id', 'CF-Access-Client-Secret': 'secret' });
  assert.deepEqual(withNodeCredentials({ apiKey: 'tml-a', defaultHeaders: { 'cf-access-client-id': 'mine' } }).defaultHeaders, { 'CF-Access-Client-Secret': 'secret', 'cf-access-client-id': 'mine' });
});

test('TINKER_TELEMETRY: on unless 1/true/yes/on (any case); an explicit option wins', () => {
  for (const [v, on] of [['0', false], ['false', false], ['off', false], ['', false], ['1', true], ['TRUE', true], ['Yes', true], ['on', true]]) {
    process.env.TINKER_TELEMETRY = v;
    assert.equal(withNodeCredentials({ apiKey: 'tml-a' }).telemetry, on ? undefined : false, `TINKER_TELEMETRY=${JSON.stringify(v)}`);
  }
  process.env.TINKER_TELEMETRY = '0';
  assert.equal(withNodeCredentials({ apiKey: 'tml-a', telemetry: true }).telemetry, true);
});

test('the credentials file: Python\'s shape, 0600 in a 0700 directory', () => {
  store('tml-stored');
  const file = path.join(home, '.tinker', 'credentials.json');
  assert.equal(fs.statSync(file).mode & 0o777, 0o600);
  assert.equal(fs.statSync(path.dirname(file)).mode & 0o777, 0o700);
  assert.deepEqual(Object.keys(JSON.parse(fs.readFileSync(file, 'utf8'))), ['version', 'default', 'keys']);
  assert.equal(readCredentials().keys[7].key, 'tml-stored');
});
