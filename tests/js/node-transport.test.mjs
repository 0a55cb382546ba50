// The Node entry's default transport (pkg/node-transport.js) against a local node:http
// server: what the SDK relies on of a fetch Response, compressed bodies, aborts, errors.
// The end-to-end proof that the SDK uses it is the cross-runtime case "default transport"
// in tests/js/cases/sampling.js.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import * as http from 'node:http';
import * as zlib from 'node:zlib';
import { nodeFetch } from '../../pkg/node-transport.js';

let server;
let base;
const seen = [];
let hangArrived;
const hang = new Promise((r) => (hangArrived = r));

before(async () => {
  server = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      seen.push({ method: req.method, url: req.url, headers: req.headers, body });
      if (req.url === '/gzip') {
        res.setHeader('content-encoding', 'gzip');
        res.end(zlib.gzipSync(`gzip body, accept-encoding ${req.headers['accept-encoding']}`));
      } else if (req.url === '/deflate') {
        res.setHeader('content-encoding', 'deflate');
        res.end(zlib.deflateSync('deflate body'));
      } else if (req.url === '/corrupt') {
        res.setHeader('content-encoding', 'gzip');
        res.end('this is not gzip');
      } else if (req.url === '/echo') {
        res.statusCode = 201;
        res.setHeader('x-multi', ['a', 'b']);
        res.setHeader('content-type', 'application/octet-stream');
        res.end(body);
      } else if (req.url === '/hang') {
        hangArrived(); // and never answers: the caller must abort
      } else if (req.url === '/trickle') {
        // 8 bytes, one every 100 ms: slower in total than the idle timeout, never idle that long.
        res.writeHead(200, { 'content-length': '8' });
        let n = 0;
        const t = setInterval(() => {
          res.write('x');
          if (++n === 8) {
            clearInterval(t);
            res.end();
          }
        }, 100);
      } else if (req.url === '/stall') {
        res.writeHead(200, { 'content-length': '8' });
        res.write('x'); // then nothing
      } else if (req.url === '/cut') {
        res.writeHead(200, { 'content-length': '100' });
        res.write('only part of it');
        setImmediate(() => res.socket.destroy());
      } else {
        res.end('plain');
      }
    });
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${server.address().port}`;
});

after(() => {
  server.closeAllConnections();
  server.close();
});

const text = async (r) => Buffer.from(await r.arrayBuffer()).toString();

test('sends method, headers and body bytes; exposes status and headers like a Response', async () => {
  const body = new Uint8Array([0, 1, 2, 250, 255]);
  const r = await nodeFetch(`${base}/echo`, { method: 'POST', headers: { 'Content-Type': 'application/x-protobuf', 'X-Idempotency-Key': 'k1' }, body });
  assert.equal(r.status, 201);
  assert.equal(r.ok, true);
  assert.deepEqual(new Uint8Array(await r.arrayBuffer()), body);
  assert.equal(r.headers.get('X-Multi'), 'a, b');
  assert.equal(r.headers.get('absent'), null);
  assert.ok([...r.headers.entries()].some(([k, v]) => k === 'content-type' && v === 'application/octet-stream'));
  const got = seen.at(-1);
  assert.equal(got.method, 'POST');
  assert.equal(got.headers['content-type'], 'application/x-protobuf');
  assert.equal(got.headers['x-idempotency-key'], 'k1');
  assert.equal(got.headers['content-length'], '5');
});

test('frames every request as node:http would: host, content-length, no chunking; the caller\'s own headers win', async () => {
  const port = new URL(base).port;
  await nodeFetch(`${base}/plain`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"é":1}' });
  let got = seen.at(-1);
  assert.equal(got.headers.host, `127.0.0.1:${port}`);
  assert.equal(got.headers['content-length'], '8'); // bytes, not characters
  assert.equal(got.headers['transfer-encoding'], undefined);
  assert.equal(got.body.toString(), '{"é":1}');
  await nodeFetch(`${base}/plain`, { method: 'POST' });
  got = seen.at(-1);
  assert.equal(got.headers['content-length'], '0');
  assert.equal(got.headers['transfer-encoding'], undefined);
  for (const method of ['GET', 'DELETE']) {
    await nodeFetch(`${base}/plain`, { method });
    got = seen.at(-1);
    assert.equal(got.method, method);
    assert.equal(got.headers['content-length'], undefined);
    assert.equal(got.headers['transfer-encoding'], undefined);
  }
  await nodeFetch(`${base}/plain`, { method: 'PUT', headers: { Host: 'api.example', 'Content-Length': '2' }, body: 'ok' });
  got = seen.at(-1);
  assert.equal(got.headers.host, 'api.example');
  assert.equal(got.headers['content-length'], '2');
  await assert.rejects(nodeFetch(`${base}/plain`, { headers: { 'bad name': 'x' } }), (e) => e.code === 'ERR_INVALID_HTTP_TOKEN');
  await assert.rejects(nodeFetch(`${base}/plain`, { headers: { 'x-a': 'line\nbreak' } }), (e) => e.code === 'ERR_INVALID_CHAR');
});

test('asks for and decodes gzip and deflate bodies, as fetch and the Python SDK do', async () => {
  assert.equal(await text(await nodeFetch(`${base}/gzip`)), 'gzip body, accept-encoding gzip, deflate');
  assert.equal(await text(await nodeFetch(`${base}/deflate`)), 'deflate body');
  assert.equal(await text(await nodeFetch(`${base}/plain`)), 'plain');
  // The caller's accept-encoding wins.
  await nodeFetch(`${base}/plain`, { headers: { 'accept-encoding': 'identity' } });
  assert.equal(seen.at(-1).headers['accept-encoding'], 'identity');
});

test('a body that does not decode rejects with a TypeError saying so', async () => {
  await assert.rejects(nodeFetch(`${base}/corrupt`), (e) => e instanceof TypeError && /could not decode the gzip response body/.test(e.message));
});

test('an abort rejects with AbortError, before or during the request', async () => {
  const gone = new AbortController();
  gone.abort();
  await assert.rejects(nodeFetch(`${base}/plain`, { signal: gone.signal }), { name: 'AbortError' });
  const ac = new AbortController();
  const p = nodeFetch(`${base}/hang`, { signal: ac.signal });
  await hang; // the server has the request
  ac.abort();
  await assert.rejects(p, { name: 'AbortError' });
});

test('connection errors and cut responses reject (the SDK retries them as connection errors)', async () => {
  const closed = http.createServer();
  await new Promise((r) => closed.listen(0, '127.0.0.1', r));
  const port = closed.address().port;
  closed.close();
  await assert.rejects(nodeFetch(`http://127.0.0.1:${port}/`), /ECONNREFUSED/);
  // A body cut short is a failed request (fetch rejects too), never a short 200 body.
  await assert.rejects(nodeFetch(`${base}/cut`), (e) => e instanceof Error && e.name !== 'AbortError' && !e.tinkerTimeout && /closed before the response ended/.test(e.message));
});

test('refuses URLs it cannot send', async () => {
  await assert.rejects(nodeFetch('ftp://example.com/x'), (e) => e instanceof TypeError && /unsupported protocol ftp:/.test(e.message));
  await assert.rejects(nodeFetch('not a url'), TypeError);
});

test('keeps the path and query of every URL, also when the same URL is sent again', async () => {
  for (let i = 0; i < 2; i++) {
    const r = await nodeFetch(`${base}/runs?limit=5&offset=${i}`, { method: 'POST', body: new Uint8Array([i]) });
    assert.equal(new TextDecoder().decode(await r.bytes()), 'plain', 'bytes() is the body');
    assert.equal(seen.at(-1).url, `/runs?limit=5&offset=${i}`);
    assert.deepEqual([...seen.at(-1).body], [i]);
  }
});

test('takes a plain { aborted, reason, addEventListener, removeEventListener } object as its signal', async () => {
  const signal = {
    aborted: false,
    reason: undefined,
    listener: undefined,
    addEventListener(type, f) {
      this.listener = f;
    },
    removeEventListener(type, f) {
      if (this.listener === f) this.listener = undefined;
    },
  };
  const r = await nodeFetch(`${base}/plain`, { signal });
  assert.equal(await text(r), 'plain');
  assert.equal(signal.listener, undefined, 'the listener is removed once the response is in');
  const p = nodeFetch(`${base}/plain`, { signal });
  signal.aborted = true;
  signal.reason = Object.assign(new Error('stop'), { name: 'AbortError' });
  signal.listener();
  await assert.rejects(p, { name: 'AbortError', message: 'stop' });
});

// The Python SDK's httpx timeouts are per phase (`Timeout(60, connect=5.0)`): a response
// that keeps making progress is never cut, one that stops is, after `idle` ms of silence.
test('timeouts are per phase: progress keeps a request alive, silence ends it', async () => {
  assert.equal(nodeFetch[Symbol.for('tinker-wasm.phaseTimeouts')], true);
  const r = await nodeFetch(`${base}/trickle`, { timeouts: { connect: 5000, idle: 300 } });
  assert.equal(await text(r), 'xxxxxxxx');
  await assert.rejects(nodeFetch(`${base}/stall`, { timeouts: { connect: 5000, idle: 300 } }), (e) => e.tinkerTimeout === true && /read\/write timed out/.test(e.message));
});

// The Python SDK's default transport (pyqwest) keeps one deadline over the whole exchange,
// body included: a response that makes progress is still cut when the deadline passes.
test('a total deadline cuts a trickling response that per-phase timeouts would let finish', async () => {
  const t0 = Date.now();
  await assert.rejects(nodeFetch(`${base}/trickle`, { timeouts: { connect: 5000, total: 350 } }), (e) => e.tinkerTimeout === true && /request timed out/.test(e.message));
  // Rejected at all means cut (the trickle ends well after 800 ms); never before the deadline.
  assert.ok(Date.now() - t0 >= 340, `cut after ${Date.now() - t0} ms, before the deadline`);
  // A response within the deadline is read whole, and its timer does not outlive it.
  const r = await nodeFetch(`${base}/plain`, { timeouts: { connect: 5000, total: 60_000 } });
  assert.equal(await text(r), 'plain');
});
