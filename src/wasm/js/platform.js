function message(e) {
  const m = (e && typeof e.message === 'string' && e.message) || (typeof e === 'string' && e) || 'fetch failed';
  const c = e && e.cause && typeof e.cause.message === 'string' ? e.cause.message : undefined;
  return c !== undefined && !m.includes(c) ? `${m} (${c})` : m;
}
// pkg/node-transport.js's fetch accepts a plain object as its signal: cheaper than an
// AbortController per request.
const PLAIN_SIGNAL = Symbol.for('tinker-wasm.plainAbortSignal');
class PlainAbort {
  constructor() {
    this.signal = { aborted: false, reason: undefined, listener: undefined,
      addEventListener(type, f) { if (type === 'abort') this.listener = f; },
      removeEventListener(type, f) { if (type === 'abort' && this.listener === f) this.listener = undefined; } };
  }
  abort() {
    const s = this.signal;
    if (s.aborted) return;
    s.aborted = true;
    const e = new Error('This operation was aborted');
    e.name = 'AbortError';
    s.reason = e;
    if (s.listener) s.listener();
  }
}
// The core gives each request either one deadline over the whole exchange, body
// included (`deadlineMs`: the Python SDK's default transport, pyqwest), or per-phase
// timeouts as httpx's (`Timeout(60, connect=5.0)`: a request is not killed while it makes
// progress). A fetch that sees the phases (pkg/node-transport.js: connect, then socket
// inactivity, or the deadline) gets them in `init.timeouts` and reports a timeout with
// `tinkerTimeout`. Plain `fetch` keeps the deadline with one timer; it has no connect
// phase and shows no upload progress, so for per-phase timeouts the limit until the
// response headers is the read timeout plus the time the body takes at
// FLOOR_BYTES_PER_S, then the read timeout plus the response's announced length at that
// rate.
const PHASE_TIMEOUTS = Symbol.for('tinker-wasm.phaseTimeouts');
const FLOOR_BYTES_PER_S = 32768;
function arm(call, ac, ms) {
  if (call.timer !== undefined) clearTimeout(call.timer);
  call.timer = setTimeout(() => {
    call.timer = undefined;
    settle(call, { error: 'timed out', timeout: true });
    if (ac) ac.abort();
  }, Math.min(ms, 2147483647));
}
export function send_request(fetch, method, url, headerLines, body, hasBody, timeoutMs, connectMs, deadlineMs, id, notify) {
  const ac = fetch[PLAIN_SIGNAL] === true ? new PlainAbort() : typeof AbortController === 'function' ? new AbortController() : undefined;
  const call = { result: undefined, timer: undefined, settled: false, ac, id, notify };
  const headers = {};
  const h = headerLines.split('\n');
  for (let i = 0; i + 1 < h.length; i += 2) headers[h[i]] = h[i + 1];
  const init = { method, headers };
  if (hasBody) init.body = body.slice();
  if (ac) init.signal = ac.signal;
  const phases = fetch[PHASE_TIMEOUTS] === true;
  if (deadlineMs > 0) {
    if (phases) init.timeouts = { connect: connectMs, total: deadlineMs };
    else arm(call, ac, deadlineMs);
  } else if (timeoutMs > 0) {
    if (phases) init.timeouts = { connect: connectMs > 0 ? connectMs : timeoutMs, idle: timeoutMs };
    else arm(call, ac, timeoutMs + (hasBody ? (body.length * 1000) / FLOOR_BYTES_PER_S : 0));
  }
  let p;
  try {
    p = Promise.resolve(fetch(url, init));
  } catch (/** @type {any} */ e) {
    settle(call, { error: message(e), timeout: !!(e && e.tinkerTimeout) });
    return call;
  }
  p.then(async (r) => {
    let lines = '';
    const rh = r.headers;
    if (rh && typeof rh.forEach === 'function') rh.forEach((v, k) => { lines += `${k}\n${v}\n`; });
    if (timeoutMs > 0 && !phases && !call.settled) {
      const length = Number(rh && typeof rh.get === 'function' ? rh.get('content-length') : 0) || 0;
      arm(call, ac, timeoutMs + (length * 1000) / FLOOR_BYTES_PER_S);
    }
    const bytes = typeof r.bytes === 'function' ? await r.bytes() : new Uint8Array(await r.arrayBuffer());
    settle(call, { status: r.status, headers: lines, body: bytes });
  }).catch((e) => settle(call, { error: message(e), timeout: !!(e && e.tinkerTimeout) }));
  return call;
}
function settle(call, result) {
  if (call.settled) return;
  call.settled = true;
  if (call.timer !== undefined) clearTimeout(call.timer);
  call.timer = undefined;
  call.result = result;
  call.notify(call.id);
}
export function abort_request(call) {
  if (call.settled) return;
  settle(call, { error: 'aborted' });
  if (call.ac) call.ac.abort();
}
// What this runtime is, read off its globals in one call (src/wasm/platform.rs decides
// with it): `kind\nplatform\narch\nname\nversion`. kind: node (Node itself, not Deno or
// Bun), workerd, browser (a page or a browser worker) or js (anything else); then the
// OS, CPU, runtime name and version the X-Stainless headers report.
export function runtime_facts() {
  const g = globalThis;
  const p = g.process;
  const s = (x) => (typeof x === 'string' ? x : '');
  let kind = 'js';
  if (g.navigator?.userAgent === 'Cloudflare-Workers') kind = 'workerd';
  else if (typeof p?.versions?.node === 'string' && g.Deno === undefined && g.Bun === undefined) kind = 'node';
  else if (g.document !== undefined || g.WorkerGlobalScope !== undefined) kind = 'browser';
  let facts;
  if (g.Deno !== undefined) facts = [g.Deno.build?.os, g.Deno.build?.arch, 'deno', g.Deno.version?.deno];
  else if (g.Bun !== undefined) facts = [p?.platform, p?.arch, 'bun', g.Bun.version];
  else if (kind === 'workerd') facts = ['', '', 'workerd', ''];
  else facts = [p?.platform, p?.arch, kind, p?.version];
  return [kind, ...facts].map(s).join('\n');
}
