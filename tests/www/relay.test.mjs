// The relay Worker (www/relay/worker.js) in miniflare's workerd, against tinker-sim (which
// accepts only the relay's key) and against a hostile upstream that echoes the key back
// everywhere it can. What it must do: refuse other origins (403) and other calls (403),
// refuse oversize bodies (413), and never let the key out, in any header or body, error
// answers and its own log included.
//   node --test tests/www/relay.test.mjs
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import * as tinker from 'tinker-wasm';
import { startRelay, randomKey } from '../../www/dev/stack.mjs';
import { matchRoute, rewriteClientConfig, scrubBytes, scrubText } from '../../www/relay/policy.js';
import { startSim } from '../js/sim.mjs';

const ORIGIN = 'http://playground.test';
const KEY = randomKey();
const LIMIT = 64 * 1024;

let sim;
let relay;
let echo;
let echoRelay;
/** Every response the relay sent in these tests: status, headers and body text. */
const seen = [];

async function record(res) {
  const body = Buffer.from(await res.clone().arrayBuffer()).toString('latin1');
  seen.push({ url: res.url, status: res.status, headers: [...res.headers], body });
  return res;
}

/** fetch through the relay, recording the response. */
async function call(base, path, { origin = ORIGIN, ...init } = {}) {
  const headers = new Headers(init.headers ?? {});
  if (origin !== null) headers.set('origin', origin);
  return record(await fetch(`${base}${path}`, { ...init, headers }));
}

/** The simulator's API request counts (its own admin calls left out). */
async function simStats() {
  const all = (await (await fetch(`${sim.url}/_sim/stats`)).json()).requests_by_path;
  return Object.fromEntries(Object.entries(all).filter(([k]) => !k.includes(' /_sim/')));
}

/** A hostile upstream: echoes the credential it got in headers and bodies, in several shapes. */
function startEcho() {
  const received = [];
  const server = http.createServer((req, res) => {
    const key = req.headers['x-api-key'] ?? '';
    received.push({ path: req.url, headers: { ...req.headers } });
    const url = new URL(req.url, 'http://x');
    const common = {
      'x-request-id': `req-${key}`,
      'www-authenticate': `Bearer error="invalid_token", key="${key}"`,
      'set-cookie': `session=${key}; HttpOnly`,
      'x-upstream-secret': key,
      'retry-after-ms': '5',
      'x-should-retry': 'false',
    };
    if (url.pathname === '/api/v1/client/config') {
      res.writeHead(200, { 'content-type': 'application/json', ...common });
      return res.end(JSON.stringify({ pjwt_auth_enabled: false, debug_key: key }));
    }
    if (url.pathname === '/api/v1/asample') {
      res.writeHead(500, { 'content-type': 'application/json', ...common });
      return res.end(JSON.stringify({ detail: `internal error for key ${key} (again: ${key})`, headers: req.headers }));
    }
    if (url.pathname === '/api/v1/forward_backward') {
      // Binary: the key's bytes inside a protobuf-like frame.
      const k = Buffer.from(key);
      res.writeHead(200, { 'content-type': 'application/x-protobuf', ...common });
      return res.end(Buffer.concat([Buffer.from([0x0a, k.length]), k, Buffer.from([0x10, 0x01])]));
    }
    if (url.pathname === '/api/v1/get_server_capabilities') {
      res.writeHead(401, { 'content-type': 'text/plain', ...common });
      return res.end(`401: bad key ${key}`);
    }
    res.writeHead(404, { 'content-type': 'application/json', ...common });
    res.end(JSON.stringify({ detail: `no route; your key is ${key}` }));
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve({ url: `http://127.0.0.1:${server.address().port}`, server, received })));
}

before(async () => {
  sim = await startSim(['--api-key', KEY, '--seed', '3']);
  relay = await startRelay({ apiKey: KEY, upstream: sim.url, origins: [ORIGIN, 'https://other-allowed.test'], maxBodyBytes: LIMIT });
  echo = await startEcho();
  echoRelay = await startRelay({ apiKey: KEY, upstream: echo.url, origins: [ORIGIN] });
});

after(async () => {
  await relay?.stop();
  await echoRelay?.stop();
  await sim?.stop();
  echo?.server.close();
});

test('policy: scrubbing finds every occurrence of every secret, in text and bytes', () => {
  const enc = (x) => new TextEncoder().encode(x);
  const dec = (x) => new TextDecoder().decode(x);
  assert.equal(dec(scrubBytes(enc('kkk|k|xkx'), ['k'])), '[redacted][redacted][redacted]|[redacted]|x[redacted]x');
  assert.equal(dec(scrubBytes(enc('aXYbXYXY'), ['XY', 'b'])), 'a[redacted][redacted][redacted][redacted]');
  assert.equal(dec(scrubBytes(enc('tml-abc tml-ab'), ['tml-abc'])), '[redacted] tml-ab');
  const same = enc('nothing here');
  assert.equal(scrubBytes(same, ['tml-abc', '']), same, 'no copy when nothing matches');
  assert.equal(scrubText('key=tml-1;tml-1', ['tml-1']), 'key=[redacted];[redacted]');
  const bin = new Uint8Array([0, 255, ...enc('tml-zz'), 7]);
  assert.deepEqual([...scrubBytes(bin, ['tml-zz'])], [0, 255, ...enc('[redacted]'), 7]);
});

test('policy: routes by method and exact path; client/config is rewritten for the page', () => {
  assert.equal(matchRoute('POST', '/api/v1/asample'), 'asample');
  assert.equal(matchRoute('GET', '/api/v1/asample'), null);
  assert.equal(matchRoute('POST', '/api/v1/asample/'), null);
  assert.equal(matchRoute('POST', '/x/api/v1/asample'), null);
  assert.equal(matchRoute('GET', '/api/v1/training_runs/s%3Atrain%3A0/checkpoints'), 'list_checkpoints');
  assert.equal(matchRoute('GET', '/api/v1/training_runs/a/b/checkpoints'), null);
  assert.equal(matchRoute('POST', '/api/v1/sessions/abc/finish'), 'session_finish');
  const c = rewriteClientConfig({ pjwt_auth_enabled: true, fwdbwd_max_chunk_bytes_count: 5_000_000, other: 1 }, 1_048_576);
  assert.deepEqual(c, { pjwt_auth_enabled: false, fwdbwd_max_chunk_bytes_count: 262_144, other: 1 });
});

test('preflight: an allowed origin gets CORS headers, any other origin 403 without them', async () => {
  const ok = await call(relay.url, '/api/v1/asample', {
    method: 'OPTIONS',
    headers: { 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type,x-api-key,x-idempotency-key' },
  });
  assert.equal(ok.status, 204);
  assert.equal(ok.headers.get('access-control-allow-origin'), ORIGIN);
  assert.match(ok.headers.get('access-control-allow-headers'), /x-api-key/);
  assert.match(ok.headers.get('access-control-allow-methods'), /POST/);
  assert.match(ok.headers.get('vary'), /Origin/);
  for (const origin of ['https://evil.test', 'http://playground.test.evil.test', 'null', ORIGIN.toUpperCase()]) {
    const r = await call(relay.url, '/api/v1/asample', { method: 'OPTIONS', origin, headers: { 'access-control-request-method': 'POST' } });
    assert.equal(r.status, 403, origin);
    assert.equal(r.headers.get('access-control-allow-origin'), null, origin);
  }
});

test('requests from an origin not on the list, or with none, are refused with 403 and never reach the API', async () => {
  const before = await simStats();
  const cases = [
    ['https://evil.test', 'GET', '/api/v1/get_server_capabilities'],
    ['null', 'POST', '/api/v1/asample'],
    [null, 'POST', '/api/v1/client/config'],
    ['https://evil.test', 'GET', '/relay/status'],
  ];
  for (const [origin, method, path] of cases) {
    const r = await call(relay.url, path, { origin, method, body: method === 'POST' ? '{}' : undefined, headers: { 'content-type': 'application/json' } });
    assert.equal(r.status, 403, `${origin} ${path}`);
    const body = await r.json();
    assert.equal(body.code, 'origin_not_allowed');
    assert.equal(r.headers.get('access-control-allow-origin'), null);
  }
  assert.deepEqual(await simStats(), before, 'nothing was forwarded');
  // The second allowed origin works.
  const r = await call(relay.url, '/api/v1/get_server_capabilities', { origin: 'https://other-allowed.test' });
  assert.equal(r.status, 200);
  assert.equal(r.headers.get('access-control-allow-origin'), 'https://other-allowed.test');
});

test('calls the playground does not make are refused with 403 and never reach the API', async () => {
  const before = await simStats();
  const refused = [
    ['POST', '/api/v1/auth/token'],
    ['DELETE', '/api/v1/auth/apikey/me'],
    ['GET', '/api/v1/auth/apikey/me'],
    ['DELETE', '/api/v1/training_runs/run/checkpoints/weights/x'],
    ['POST', '/api/v1/training_runs/run/checkpoints/weights/x/publish'],
    ['POST', '/api/v1/save_weights_external'],
    ['POST', '/api/v1/copy_weights'],
    ['POST', '/api/v1/telemetry'],
    ['GET', '/api/v1/sessions'],
    ['GET', '/api/v1/audit'],
    ['GET', '/api/v1/billing/usage/events'],
    ['GET', '/_sim/stats'],
    ['POST', '/_sim/config'],
    ['GET', '/api/v1/asample'],
    ['PUT', '/api/v1/asample'],
    ['GET', '/api/v1/training_runs/a%2F..%2F..%2Fauth%2Ftoken/checkpoints'],
    ['GET', '/api/v1/training_runs/%2e%2e'],
    ['GET', '/'],
  ];
  for (const [method, path] of refused) {
    const r = await call(relay.url, path, { method, body: ['GET', 'HEAD'].includes(method) ? undefined : '{}' });
    assert.equal(r.status, 403, `${method} ${path}`);
    const body = await r.json();
    assert.equal(body.code, 'path_not_allowed', `${method} ${path}`);
    // Refusals carry CORS headers, so the page can show them.
    assert.equal(r.headers.get('access-control-allow-origin'), ORIGIN);
  }
  assert.deepEqual(await simStats(), before, 'nothing was forwarded');
});

test('bodies over the limit are refused with 413 (declared or streamed), smaller ones pass', async () => {
  const before = await simStats();
  const big = JSON.stringify({ pad: 'x'.repeat(LIMIT) });
  const declared = await call(relay.url, '/api/v1/asample', { method: 'POST', body: big, headers: { 'content-type': 'application/json' } });
  assert.equal(declared.status, 413);
  assert.equal((await declared.json()).code, 'body_too_large');
  assert.equal(declared.headers.get('access-control-allow-origin'), ORIGIN);
  // Chunked, no content-length: counted while read.
  const chunk = new TextEncoder().encode('y'.repeat(16 * 1024));
  let sent = 0;
  const stream = new ReadableStream({
    pull(c) {
      if (sent++ < 8) c.enqueue(chunk);
      else c.close();
    },
  });
  const streamed = await call(relay.url, '/api/v1/forward_backward', { method: 'POST', body: stream, duplex: 'half', headers: { 'content-type': 'application/x-protobuf' } });
  assert.equal(streamed.status, 413);
  assert.equal((await streamed.json()).code, 'body_too_large');
  assert.deepEqual(await simStats(), before, 'nothing was forwarded');
  // Just under the limit is forwarded (the simulator answers it).
  const small = await call(relay.url, '/api/v1/client/config', { method: 'POST', body: JSON.stringify({ sdk_version: '0.38.0', pad: 'z'.repeat(LIMIT - 100) }), headers: { 'content-type': 'application/json' } });
  assert.equal(small.status, 200);
});

test('the SDK works through the relay with a placeholder key; the key appears in no response', async () => {
  const responses = [];
  const svc = new tinker.ServiceClient({
    apiKey: 'tml-placeholder-not-the-key',
    baseURL: relay.url,
    heartbeat: false,
    telemetry: false,
    defaultHeaders: { Origin: ORIGIN, Cookie: `k=${KEY}`, Authorization: `Bearer ${KEY}` },
    fetch: async (url, init) => {
      const r = await fetch(url, init);
      responses.push(await record(r));
      return r;
    },
  });
  const config = await (await call(relay.url, '/api/v1/client/config', { method: 'POST', body: '{"sdk_version":"0.38.0"}', headers: { 'content-type': 'application/json' } })).json();
  assert.equal(config.pjwt_auth_enabled, false);
  assert.ok(config.fwdbwd_max_chunk_bytes_count <= LIMIT / 4, 'forward_backward chunks stay under the relay limit');
  const sampler = await svc.createSamplingClient({ base_model: 'Qwen/Qwen3-8B' });
  const out = await sampler.sample({ prompt: [1, 2, 3], num_samples: 2, sampling_params: { max_tokens: 5, seed: 1 } });
  assert.equal(out.sequences.length, 2);
  const tc = await svc.createLoraTrainingClient({ base_model: 'Qwen/Qwen3-8B', rank: 4, seed: 1 });
  const data = [tinker.datumFromTokens([10, 20, 30, 40, 50], { prompt_length: 2 })];
  const losses = [];
  for (let i = 0; i < 3; i++) {
    const [o] = await Promise.all([tc.forwardBackward(data, 'cross_entropy'), tc.optimStep({ learning_rate: 0.1 })]);
    losses.push(o.metrics['loss:sum']);
  }
  assert.ok(losses[2] < losses[0], `loss falls: ${losses}`);
  const { path } = await tc.saveWeightsForSampler('relay-test');
  const tuned = await svc.createSamplingClient({ model_path: path });
  assert.equal(tuned.baseModel, 'Qwen/Qwen3-8B');
  await tuned.sample({ prompt: [10, 20], sampling_params: { max_tokens: 3 } });
  const rest = svc.restClient();
  const runs = [];
  for await (const run of rest.listTrainingRuns({ limit: 1 })) runs.push(run.training_run_id);
  assert.ok(runs.includes(tc.modelId));
  const mine = [];
  for await (const c of rest.listUserCheckpoints()) mine.push(c.tinker_path);
  assert.ok(mine.includes(path));
  // Error answers pass through (and are scrubbed like the rest).
  await assert.rejects(rest.getTrainingRun('no-such-run'), (e) => e instanceof tinker.NotFoundError);
  await assert.rejects(rest.deleteCheckpointFromTinkerPath(path), (e) => e instanceof tinker.PermissionDeniedError && /does not forward/.test(e.message));
  await assert.rejects(sampler.sample({ prompt: [1], sampling_params: { max_tokens: 40000 } }), (e) => e instanceof tinker.RequestFailedError || e instanceof tinker.BadRequestError);
  await svc.close();
  assert.ok(responses.length > 20, `${responses.length} responses`);
  const status = await call(relay.url, '/relay/status');
  assert.equal(status.status, 200);
  const s = await status.json();
  assert.equal(s.ok, true);
  assert.ok(s.models.includes('Qwen/Qwen3-8B'));
  assert.equal(s.sdkVersion, tinker.version());
});

test('a hostile upstream echoing the key in headers and bodies: nothing of it gets through', async () => {
  const status = (r) => r.status;
  const cfg = await call(echoRelay.url, '/api/v1/client/config', { method: 'POST', body: '{}', headers: { 'content-type': 'application/json', Cookie: 'a=b', Authorization: 'Bearer x' } });
  assert.equal(status(cfg), 200);
  assert.equal((await cfg.json()).debug_key, '[redacted]');
  const err = await call(echoRelay.url, '/api/v1/asample', { method: 'POST', body: '{}', headers: { 'content-type': 'application/json' } });
  assert.equal(err.status, 500);
  const errBody = await err.text();
  assert.match(errBody, /internal error for key \[redacted\] \(again: \[redacted\]\)/);
  assert.equal(err.headers.get('x-request-id'), 'req-[redacted]');
  assert.equal(err.headers.get('set-cookie'), null, 'cookies stay behind');
  assert.equal(err.headers.get('x-upstream-secret'), null, 'unknown headers stay behind');
  assert.equal(err.headers.get('retry-after-ms'), '5', 'retry headers pass');
  const bin = await call(echoRelay.url, '/api/v1/forward_backward', { method: 'POST', body: new Uint8Array([1, 2, 3]), headers: { 'content-type': 'application/x-protobuf' } });
  const bytes = Buffer.from(await bin.arrayBuffer());
  assert.ok(bytes.includes(Buffer.from('[redacted]')), 'binary bodies are scrubbed too');
  const unauth = await call(echoRelay.url, '/api/v1/get_server_capabilities');
  assert.equal(unauth.status, 401);
  assert.equal(await unauth.text(), '401: bad key [redacted]');
  const st = await call(echoRelay.url, '/relay/status');
  assert.equal(st.status, 502);
  assert.equal((await st.json()).ok, false);
  // What the upstream received: the relay's key, and none of the page's credentials.
  assert.ok(echo.received.length >= 4);
  for (const r of echo.received) {
    assert.equal(r.headers['x-api-key'], KEY);
    for (const h of ['cookie', 'authorization', 'origin', 'referer']) assert.equal(r.headers[h], undefined, `${h} is not forwarded`);
  }
});

test('the JWT mode: the relay exchanges the key itself; neither the key nor a JWT reaches the page', async () => {
  const jwtSim = await startSim(['--api-key', KEY, '--client-config', '{"pjwt_auth_enabled":true}']);
  const jwtRelay = await startRelay({ apiKey: KEY, upstream: jwtSim.url, origins: [ORIGIN] });
  try {
    const svc = new tinker.ServiceClient({
      apiKey: 'tml-placeholder',
      baseURL: jwtRelay.url,
      heartbeat: false,
      telemetry: false,
      defaultHeaders: { Origin: ORIGIN },
      fetch: async (url, init) => record(await fetch(url, init)),
    });
    const sampler = await svc.createSamplingClient({ base_model: 'meta-llama/Llama-3.2-1B' });
    const out = await sampler.sample({ prompt: [1, 2, 3], sampling_params: { max_tokens: 4 } });
    assert.equal(out.sequences.length, 1);
    await svc.close();
    const token = await call(jwtRelay.url, '/api/v1/auth/token', { method: 'POST', body: '{}' });
    assert.equal(token.status, 403);
    const stats = (await (await fetch(`${jwtSim.url}/_sim/stats`)).json()).requests_by_path;
    assert.ok(stats['POST /api/v1/auth/token'] >= 1, 'the relay exchanged the key');
    const logs = jwtRelay.logs.join('\n');
    assert.ok(!logs.includes(KEY));
    assert.doesNotMatch(logs, /eyJ[\w-]+\.[\w-]+\./);
  } finally {
    await jwtRelay.stop();
    await jwtSim.stop();
  }
});

test('no response and no log line of the relay ever held the key or a JWT', () => {
  assert.ok(seen.length > 40, `${seen.length} responses checked`);
  for (const r of seen) {
    const all = `${r.headers.map(([k, v]) => `${k}: ${v}`).join('\n')}\n${r.body}`;
    assert.ok(!all.includes(KEY), `the key leaked in ${r.url} (${r.status})`);
    assert.doesNotMatch(all, /eyJ[\w-]+\.[\w-]+\.[\w-]+/, `a JWT leaked in ${r.url}`);
  }
  const logs = [...relay.logs, ...echoRelay.logs].join('\n');
  assert.ok(logs.includes('[relay] POST /api/v1/asample asample'), 'the relay logs its requests');
  assert.ok(!logs.includes(KEY), 'the key is in no log line');
});
