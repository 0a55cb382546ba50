// Secrets (issue 9): the API key and every JWT the SDK obtains never appear in error
// messages (401, 500, connection errors, timeouts, aborts, a hostile server echoing the
// key), in anything the SDK logs (logLevel 'debug', every level), in the telemetry it
// sends (the simulator keeps every batch), nor in the simulator's --request-log file.
// Node only (it reads the request log from disk).   node --test tests/js/secrets.test.mjs
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { inspect } from 'node:util';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import * as tinker from '../../pkg/index.js';
import { startSim } from './sim.mjs';

const KEY = 'tml-s3cr3t-5ecret-key-0123456789abcdef';
const dir = mkdtempSync(path.join(tmpdir(), 'tinker-secrets-'));
const requestLog = path.join(dir, 'requests.jsonl');
const sim = await startSim(['--seed', '3', '--api-key', KEY, '--request-log', requestLog, '--client-config', JSON.stringify({ pjwt_auth_enabled: true })]);
after(() => sim.stop());

// Every credential seen on the wire: the key, and each JWT the server handed out.
const secrets = new Set([KEY]);
let sentWithKey = 0;
/** A fetch that watches the credentials the SDK sends and the JWTs it receives. */
const watching = async (input, init) => {
  const h = new Headers(init?.headers ?? (input instanceof Request ? input.headers : undefined));
  const cred = h.get('x-api-key');
  if (cred === KEY) sentWithKey++;
  if (cred?.startsWith('eyJ')) secrets.add(cred);
  const res = await fetch(input, init);
  const url = typeof input === 'string' ? input : input.url ?? String(input);
  if (url.includes('/auth/token') && res.ok) {
    const { jwt } = await res.clone().json();
    if (jwt) secrets.add(jwt);
  }
  return res;
};

const logs = [];
const logger = Object.fromEntries(['debug', 'info', 'warn', 'error'].map((l) => [l, (msg) => logs.push(`${l}: ${msg}`)]));
const service = (extra = {}) => new tinker.ServiceClient({ apiKey: KEY, baseURL: sim.url, fetch: watching, heartbeat: false, telemetry: true, logger, logLevel: 'debug', ...extra });

/** Everything an error shows: name, message, stack, own props (headers, body, …), inspect. */
const everything = (e) => [String(e), e?.stack ?? '', JSON.stringify(e, Object.getOwnPropertyNames(e ?? {})), inspect(e, { depth: 8, showHidden: true })].join('\n');

/** The credentials (and each JWT's signature, the part that makes it usable) found in `text`. */
function leaks(text) {
  const found = [];
  for (const s of secrets) {
    if (text.includes(s)) found.push(s.slice(0, 12) + '…');
    const sig = s.startsWith('eyJ') ? s.split('.')[2] : null;
    if (sig && sig.length >= 16 && text.includes(sig)) found.push(`signature of ${s.slice(0, 12)}…`);
  }
  return found;
}

async function admin(p, body) {
  const r = await fetch(`${sim.url}/_sim/${p}`, body ? { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) } : undefined);
  assert.ok(r.ok, `admin ${p}: ${r.status}`);
  return r.json();
}

const errors = [];
/** Runs `fn`, which must fail; keeps the error for the leak checks. */
async function failing(label, fn, check) {
  if (process.env.DEBUG_SECRETS) console.error('#', label);
  try {
    await fn();
  } catch (e) {
    assert.ok(check(e), `${label}: unexpected ${e?.name}: ${e?.message}`);
    errors.push([label, e]);
    return;
  }
  assert.fail(`${label}: expected a failure`);
}

test('the key and JWTs never reach errors, logs, telemetry or the request log', { timeout: 120_000 }, async () => {
  // A real run in JWT mode, with faults that make the SDK refresh its JWT (401), retry
  // (500, 429), log (deprecation notes) and report (telemetry).
  // Every N-th matching request (1/N), so each kind is injected in every run.
  const kinds = { 401: '1/5', 500: '1/7', '429ms': '1/6:5', deprecation: '1/2' };
  const before = (await admin('stats')).faults_injected ?? {};
  await admin('config', { faults: Object.entries(kinds).map(([k, v]) => `${k}:${v}`).join(',') });
  const svc = service();
  const tc = await svc.createLoraTrainingClient({ base_model: 'Qwen/Qwen3-8B', rank: 8, seed: 1 });
  const data = [tinker.datumFromTokens([10, 11, 12, 13, 14], { prompt_length: 2 })];
  for (let i = 0; i < 3; i++) await Promise.all([tc.forwardBackward(data, 'cross_entropy'), tc.optimStep({ learning_rate: 0.01 })]);
  const sampler = await tc.saveWeightsAndGetSamplingClient();
  await sampler.sample({ prompt: [10, 11], num_samples: 2, sampling_params: { max_tokens: 4, seed: 1 } });
  const rest = svc.restClient();
  await rest.listTrainingRunsPage({ limit: 5 });
  await admin('config', { faults: '' });
  const after = (await admin('stats')).faults_injected ?? {};
  for (const kind of Object.keys(kinds)) assert.ok((after[kind] ?? 0) > (before[kind] ?? 0), `fault ${kind} was injected (simulator stats: ${JSON.stringify(after)})`);

  // Errors of every kind, with the credentials in play.
  await failing('401 (a wrong key)', () => new tinker.ServiceClient({ apiKey: 'tml-wrong-key', baseURL: sim.url, fetch: watching, heartbeat: false, telemetry: false, maxRetries: 0 }).createLoraTrainingClient({ base_model: 'Qwen/Qwen3-8B' }), (e) => e instanceof tinker.AuthenticationError);
  // 5xx and connection errors: most endpoints retry them for the Python SDK's 300 s
  // holder window; create_session does not (Python's neither), so with maxRetries 0 its
  // final error comes at once. A server that passes the config step, then answers 500
  // echoing the key, or whose connection fails with the key in the message.
  const afterConfig = (fail) => async (input, init) => {
    const url = typeof input === 'string' ? input : input.url ?? String(input);
    if (/\/client\/(dynamic_)?config|\/auth\/token/.test(url)) return watching(input, init);
    return fail(new Headers(init?.headers).get('x-api-key') ?? '');
  };
  const failingServer = (fail) => new tinker.ServiceClient({ apiKey: KEY, baseURL: sim.url, fetch: afterConfig(fail), heartbeat: false, telemetry: false, maxRetries: 0, logger, logLevel: 'debug' });
  await failing('500 echoing the key', () => failingServer((cred) => new Response(JSON.stringify({ detail: `internal error for ${cred}` }), { status: 500, headers: { 'content-type': 'application/json', 'x-echo-key': cred } })).createLoraTrainingClient({ base_model: 'Qwen/Qwen3-8B' }), (e) => e instanceof tinker.InternalServerError && e.status === 500);
  await failing('connection error naming the key', () => failingServer((cred) => Promise.reject(new TypeError(`fetch failed: connect ECONNREFUSED (key ${cred})`))).createLoraTrainingClient({ base_model: 'Qwen/Qwen3-8B' }), (e) => e instanceof tinker.APIConnectionError);
  await admin('config', { future_delay_ms: 400 });
  await failing('timeout (per call, while polling)', () => tc.optimStep({ learning_rate: 0.01 }, { timeout: 50 }), (e) => e instanceof tinker.APITimeoutError);
  await admin('config', { future_delay_ms: 10 });
  await failing('404', () => rest.getTrainingRun('no-such-run'), (e) => e instanceof tinker.NotFoundError);
  const ac = new AbortController();
  const pending = tc.forwardBackward(data, 'cross_entropy', {}, { signal: ac.signal });
  ac.abort();
  await failing('abort', () => pending, (e) => e instanceof tinker.APIUserAbortError);
  // A hostile server that echoes the credential in its headers and error body.
  const echo = (status) => async (input, init) => {
    const cred = new Headers(init?.headers).get('x-api-key') ?? '';
    return new Response(JSON.stringify({ detail: `bad key ${cred}`, key: cred }), { status, headers: { 'content-type': 'application/json', 'x-echo-key': cred, 'www-authenticate': `Bearer ${cred}` } });
  };
  const hostile = (status) => new tinker.ServiceClient({ apiKey: KEY, baseURL: 'http://127.0.0.1:9', fetch: echo(status), heartbeat: false, telemetry: false, maxRetries: 0, logger, logLevel: 'debug' });
  await failing('400 from a server echoing the key', () => hostile(400).createLoraTrainingClient({ base_model: 'Qwen/Qwen3-8B' }), (e) => e instanceof tinker.BadRequestError);
  await failing('401 from a server echoing the key', () => hostile(401).createLoraTrainingClient({ base_model: 'Qwen/Qwen3-8B' }), (e) => e instanceof tinker.AuthenticationError);
  await failing('403 from a server echoing the key', () => hostile(403).createLoraTrainingClient({ base_model: 'Qwen/Qwen3-8B' }), (e) => e instanceof tinker.PermissionDeniedError);

  await svc.close();

  // The credentials were really in play.
  assert.ok(sentWithKey > 0, 'the key was sent (to get a JWT)');
  assert.ok([...secrets].some((s) => s.startsWith('eyJ')), 'a JWT was issued');
  const failures = [];
  for (const [label, e] of errors) for (const l of leaks(everything(e))) failures.push(`error (${label}) shows ${l}`);
  assert.ok(logs.length > 0, 'the SDK logged something (deprecation notes)');
  for (const l of leaks(logs.join('\n'))) failures.push(`log shows ${l}`);
  const telemetry = await admin('telemetry');
  assert.ok(telemetry.count > 0, 'telemetry was sent');
  for (const l of leaks(JSON.stringify(telemetry))) failures.push(`telemetry shows ${l}`);
  const log = readFileSync(requestLog, 'utf8');
  assert.ok(log.includes('/api/v1/auth/token'), 'the request log has the JWT exchange');
  for (const l of leaks(log)) failures.push(`request log shows ${l}`);
  assert.deepEqual(failures, []);
});
