// The Node entry points' default transport: the SDK's HTTP requests go through node:http /
// node:https with keep-alive agents instead of Node's global `fetch` (undici). Same
// requests on the wire, a fraction of the CPU: undici's per-request Request/Response/
// stream objects cost more than the SDK itself (tests/bench/NOTES-issue8.md measured 2-3×
// less client CPU per sample() with node:http). Browsers and Workers keep `fetch`.
//
// Only when the caller gives no `fetch` option: `new ServiceClient({ fetch })` (any
// fetch-compatible function, e.g. `globalThis.fetch`) still wins.
import * as http from 'node:http';
import * as https from 'node:https';
import * as zlib from 'node:zlib';

// Idle connections kept for reuse: up to 1,024, so a burst of up to a thousand concurrent
// requests (the SDK lets that many samples run at once) reuses its connections instead of
// reconnecting most of them (Node's default keeps 256). LIFO reuse lets the surplus idle
// out on the server's keep-alive timeout.
/** @type {http.AgentOptions} */
const AGENT = { keepAlive: true, maxFreeSockets: 1024, scheduling: 'lifo' };
const agents = {
  'http:': new http.Agent(AGENT),
  'https:': new https.Agent(AGENT),
};

const abortError = (signal) => {
  const reason = signal?.reason;
  if (reason instanceof Error) return reason;
  const e = new Error('This operation was aborted');
  e.name = 'AbortError';
  return e;
};

const NO_BODY = new Set(['GET', 'HEAD', 'DELETE', 'OPTIONS', 'TRACE', 'CONNECT']);
const DECODERS = { gzip: zlib.gunzip, 'x-gzip': zlib.gunzip, deflate: zlib.inflate };
// What the Python SDK's httpx asks for (its `zstandard` dependency adds zstd), where this
// runtime can decode it (Node 22.15+, Bun, Deno); an older Node asks for what it decodes.
/** @type {any} */
const zstdDecompress = Reflect.get(zlib, 'zstdDecompress');
if (typeof zstdDecompress === 'function') DECODERS.zstd = zstdDecompress;
const ACCEPT_ENCODING = DECODERS.zstd ? 'gzip, deflate, zstd' : 'gzip, deflate';

/** The response headers as the SDK reads them (lower-case names, repeated values joined). */
class ResponseHeaders {
  #h;
  constructor(raw) {
    this.#h = raw;
  }
  get(name) {
    const v = this.#h[String(name).toLowerCase()];
    if (v === undefined) return null;
    return Array.isArray(v) ? v.join(', ') : String(v);
  }
  has(name) {
    return this.#h[String(name).toLowerCase()] !== undefined;
  }
  *entries() {
    for (const k of Object.keys(this.#h)) yield [k, this.get(k)];
  }
  [Symbol.iterator]() {
    return this.entries();
  }
  forEach(fn, thisArg) {
    for (const k of Object.keys(this.#h)) fn.call(thisArg, this.get(k), k, this);
  }
}

/** What the SDK reads of a Response: status, headers, the whole body. */
class NodeResponse {
  #body;
  constructor(res, body, url) {
    this.status = res.statusCode;
    this.statusText = res.statusMessage ?? '';
    this.ok = this.status >= 200 && this.status < 300;
    this.headers = new ResponseHeaders(res.headers);
    this.url = url;
    this.#body = body;
  }
  /** The body as bytes, without the copy `arrayBuffer()` makes (the SDK reads this one). */
  async bytes() {
    return this.#body;
  }
  async arrayBuffer() {
    const b = this.#body;
    return b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength);
  }
  async text() {
    return this.#body.toString('utf8');
  }
  async json() {
    return JSON.parse(this.#body.toString('utf8'));
  }
}

// Parsed request targets by URL string: the SDK sends to a handful of fixed URLs, so
// parsing each one once saves a URL parse and Node's URL → options conversion per request.
const targets = new Map();
function target(input) {
  const key = String(input);
  let t = targets.get(key);
  if (t === undefined) {
    let url;
    try {
      url = new URL(key);
    } catch (e) {
      return new TypeError(`invalid URL: ${input}`);
    }
    const lib = url.protocol === 'https:' ? https : url.protocol === 'http:' ? http : null;
    if (!lib) return new TypeError(`unsupported protocol ${url.protocol} in ${url.origin}`);
    t = {
      lib,
      href: url.href,
      host: url.host,
      protocol: url.protocol,
      hostname: url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname,
      port: url.port,
      path: url.pathname + url.search,
      auth: url.username || url.password ? `${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}` : undefined,
      agent: agents[url.protocol],
    };
    if (targets.size >= 256) targets.clear();
    targets.set(key, t);
  }
  return t;
}

/**
 * A fetch-shaped function over node:http(s) for the SDK's requests: `init.method`,
 * `init.headers` (a plain object), `init.body` (bytes or a string), `init.signal` (an
 * `AbortSignal`, or anything with `aborted`, `reason` and add/removeEventListener).
 * Redirects are not followed (the Tinker API does not redirect; a 3xx reaches the SDK
 * as a status).
 */
export function nodeFetch(input, init = {}) {
  return new Promise((resolve, reject) => {
    const t = target(input);
    if (t instanceof Error) {
      reject(t);
      return;
    }
    const signal = init.signal;
    if (signal?.aborted) {
      reject(abortError(signal));
      return;
    }
    // Like the Python SDK (httpx) and fetch: compressed responses are welcome, and decoded here.
    // The headers go to node:http as one flat [name, value, …] array: it then writes them
    // as given (validating each name and value as setHeader does) instead of storing each
    // through setHeader first; about 12 % less client CPU per sample() (interleaved A/B,
    // tests/bench/NOTES-issue8.md). In that form it adds no Host or Content-Length of its
    // own, so they are added here as it would (a body-less POST/PUT/PATCH says 0, as
    // node:http does, instead of being sent chunked).
    const method = init.method ?? 'GET';
    const body = init.body ?? undefined;
    const headers = [];
    let has = 0;
    for (const k in init.headers) {
      const l = k.toLowerCase();
      if (l === 'host') has |= 1;
      else if (l === 'content-length') has |= 2;
      else if (l === 'accept-encoding') has |= 4;
      headers.push(k, init.headers[k]);
    }
    if (!(has & 1)) headers.push('host', t.host);
    if (!(has & 4)) headers.push('accept-encoding', ACCEPT_ENCODING);
    if (!(has & 2) && (body !== undefined || !NO_BODY.has(method))) headers.push('content-length', String(body === undefined ? 0 : typeof body === 'string' ? Buffer.byteLength(body) : body.byteLength));
    const options = { protocol: t.protocol, hostname: t.hostname, port: t.port, path: t.path, auth: t.auth, method, headers, agent: t.agent };
    const req = t.lib.request(options, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('error', fail);
      res.on('aborted', () => fail(new Error('the connection closed before the response ended')));
      res.on('end', () => {
        if (settled) return;
        const raw = chunks.length === 1 ? chunks[0] : Buffer.concat(chunks);
        const decode = DECODERS[String(res.headers['content-encoding'] ?? '').trim().toLowerCase()];
        if (!decode || raw.length === 0) return done(res, raw);
        decode(raw, (e, body) => (e ? fail(new TypeError(`could not decode the ${res.headers['content-encoding']} response body: ${e.message}`)) : done(res, body)));
      });
    });
    let deadline;
    function done(res, body) {
      if (settled) return;
      settled = true;
      clearTimeout(deadline);
      signal?.removeEventListener('abort', onAbort);
      resolve(new NodeResponse(res, body, t.href));
    }
    let settled = false;
    function fail(e) {
      if (settled) return;
      settled = true;
      clearTimeout(deadline);
      signal?.removeEventListener('abort', onAbort);
      reject(e);
    }
    function onAbort() {
      const e = abortError(signal);
      fail(e);
      req.destroy(e);
    }
    signal?.addEventListener('abort', onAbort, { once: true });
    req.on('error', fail);
    // The connect phase's limit, then either one deadline over the whole exchange, body
    // included (`total` ms: the Python SDK's default transport, pyqwest), or socket
    // inactivity (nothing written or read for `idle` ms: httpx's per-phase timeouts, so a
    // large upload or a slow response is never cut while it makes progress).
    const timeouts = init.timeouts;
    if (timeouts) {
      const expire = (phase) => {
        const e = /** @type {Error & { tinkerTimeout?: boolean }} */ (new Error(`${phase} timed out`));
        e.tinkerTimeout = true;
        fail(e);
        req.destroy(e);
      };
      req.on('socket', (socket) => {
        if (socket.connecting && timeouts.connect > 0) {
          const t = setTimeout(() => expire('connect'), timeouts.connect);
          socket.once('connect', () => clearTimeout(t));
          socket.once('close', () => clearTimeout(t));
        }
      });
      if (timeouts.total > 0) deadline = setTimeout(() => expire('request'), timeouts.total);
      else if (timeouts.idle > 0) req.setTimeout(timeouts.idle, () => expire('read/write'));
    }
    req.end(body);
  });
}
// The SDK's request helper gives this fetch `init.timeouts = { connect, idle }` or
// `{ connect, total }` (ms) and leaves the timing to it.
nodeFetch[Symbol.for('tinker-wasm.phaseTimeouts')] = true;
// The SDK's request helper (src/wasm/platform.rs) may give this fetch a plain
// `{ aborted, reason, addEventListener, removeEventListener }` object as its signal
// instead of a new AbortController per request.
nodeFetch[Symbol.for('tinker-wasm.plainAbortSignal')] = true;

const withDefaultFetch = (options) =>
  options === undefined ? { fetch: nodeFetch } : options !== null && typeof options === 'object' && !Array.isArray(options) && options.fetch === undefined ? { ...options, fetch: nodeFetch } : options;

/**
 * `ServiceClient`, `RestClient` and `SamplingClient.fromSamplerHandle` of `glue` whose
 * default transport is {@link nodeFetch} (every other default is the core's).
 * Instances made by the SDK itself (e.g. `serviceClient.restClient()`) are still
 * `instanceof` these classes.
 * @param {typeof import('./gen/full/tinker_wasm.js') | typeof import('./gen/lite/tinker_wasm.js')} glue the wasm-bindgen module
 */
export function withNodeTransport(glue) {
  class ServiceClient extends glue.ServiceClient {
    constructor(options) {
      super(withDefaultFetch(options));
    }
    static [Symbol.hasInstance](o) {
      return o instanceof glue.ServiceClient;
    }
  }
  class RestClient extends glue.RestClient {
    constructor(options) {
      super(withDefaultFetch(options));
    }
    static [Symbol.hasInstance](o) {
      return o instanceof glue.RestClient;
    }
  }
  // Only for its static constructor: instances come from the SDK (glue.SamplingClient).
  class SamplingClient extends glue.SamplingClient {
    static fromSamplerHandle(handle, options) {
      return glue.SamplingClient.fromSamplerHandle(handle, withDefaultFetch(options));
    }
    static [Symbol.hasInstance](o) {
      return o instanceof glue.SamplingClient;
    }
  }
  return { ServiceClient, RestClient, SamplingClient };
}
