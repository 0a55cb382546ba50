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
export function send_request(fetch, method, url, headerLines, body, hasBody, timeoutMs, id, notify) {
  const ac = fetch[PLAIN_SIGNAL] === true ? new PlainAbort() : typeof AbortController === 'function' ? new AbortController() : undefined;
  const call = { result: undefined, timer: undefined, settled: false, ac, id, notify };
  const headers = {};
  const h = headerLines.split('\n');
  for (let i = 0; i + 1 < h.length; i += 2) headers[h[i]] = h[i + 1];
  const init = { method, headers };
  if (hasBody) init.body = body.slice();
  if (ac) init.signal = ac.signal;
  if (timeoutMs > 0) {
    call.timer = setTimeout(() => {
      call.timer = undefined;
      settle(call, { error: 'timed out', timeout: true });
      if (ac) ac.abort();
    }, timeoutMs);
  }
  let p;
  try {
    p = Promise.resolve(fetch(url, init));
  } catch (e) {
    settle(call, { error: message(e) });
    return call;
  }
  p.then(async (r) => {
    let lines = '';
    const rh = r.headers;
    if (rh && typeof rh.forEach === 'function') rh.forEach((v, k) => { lines += `${k}\n${v}\n`; });
    const bytes = typeof r.bytes === 'function' ? await r.bytes() : new Uint8Array(await r.arrayBuffer());
    settle(call, { status: r.status, headers: lines, body: bytes });
  }).catch((e) => settle(call, { error: message(e) }));
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
