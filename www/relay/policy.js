// The relay's policy as pure functions over data: which calls it forwards, which
// headers cross it in each direction, which origins may use it, and how secrets are
// scrubbed from anything it sends back. No I/O here (tested directly and through the
// Worker in tests/www/relay.test.mjs).

/**
 * The Tinker API calls the playground makes, and nothing else. Everything that could
 * destroy or leak data (deleting or publishing checkpoints, revoking the key, exchanging
 * it for a JWT, exporting weights, copying weights, billing and audit logs) is absent.
 * `[method, pattern, name]`; `[^/]+` segments are ids.
 */
export const ROUTES = [
  // Session start-up and upkeep.
  ['POST', /^\/api\/v1\/client\/config$/, 'client_config'],
  ['POST', /^\/api\/v1\/client\/dynamic_config$/, 'dynamic_config'],
  ['POST', /^\/api\/v1\/create_session$/, 'create_session'],
  ['POST', /^\/api\/v1\/session_heartbeat$/, 'session_heartbeat'],
  ['POST', /^\/api\/v1\/sessions\/[^/]+\/finish$/, 'session_finish'],
  ['GET', /^\/api\/v1\/healthz$/, 'healthz'],
  ['GET', /^\/api\/v1\/get_server_capabilities$/, 'capabilities'],
  // Fine-tuning with supervised.train: a LoRA run, SFT steps, its checkpoints (training
  // state, to resume, and sampler weights), and a run resumed from its state.
  ['POST', /^\/api\/v1\/create_model$/, 'create_model'],
  ['POST', /^\/api\/v1\/get_info$/, 'get_info'],
  ['POST', /^\/api\/v1\/forward_backward$/, 'forward_backward'],
  ['POST', /^\/api\/v1\/optim_step$/, 'optim_step'],
  ['POST', /^\/api\/v1\/save_weights$/, 'save_weights'],
  ['POST', /^\/api\/v1\/save_weights_for_sampler$/, 'save_weights_for_sampler'],
  ['POST', /^\/api\/v1\/load_weights$/, 'load_weights'],
  // Sampling.
  ['POST', /^\/api\/v1\/create_sampling_session$/, 'create_sampling_session'],
  ['POST', /^\/api\/v1\/asample$/, 'asample'],
  ['GET', /^\/api\/v1\/samplers\/[^/]+$/, 'get_sampler'],
  ['POST', /^\/api\/v1\/weights_info$/, 'weights_info'],
  // Futures.
  ['POST', /^\/api\/v1\/retrieve_future$/, 'retrieve_future'],
  ['POST', /^\/api\/v1\/retrieve_futures$/, 'retrieve_futures'],
  ['POST', /^\/api\/v1\/cancel_future$/, 'cancel_future'],
  // Listings for the model picker (read-only).
  ['GET', /^\/api\/v1\/training_runs$/, 'list_training_runs'],
  ['GET', /^\/api\/v1\/training_runs\/[^/]+$/, 'get_training_run'],
  ['GET', /^\/api\/v1\/training_runs\/[^/]+\/checkpoints$/, 'list_checkpoints'],
  ['GET', /^\/api\/v1\/checkpoints$/, 'list_user_checkpoints'],
];

/** The route name of an allowed call, or null. Encoded slashes or backslashes and dot
 *  segments are refused outright (an upstream that decodes before routing must not see
 *  a different path than the one allowed here). */
export function matchRoute(method, pathname) {
  if (/%2f|%5c|\\|(^|\/)\.\.?(\/|$)|%2e/i.test(pathname)) return null;
  for (const [m, re, name] of ROUTES) if (m === method && re.test(pathname)) return name;
  return null;
}

/** Request headers forwarded upstream (lower case). The caller's `x-api-key`, cookies,
 *  `authorization`, `origin` and anything else are dropped. */
export const FORWARDED_REQUEST_HEADERS = new Set([
  'accept',
  'content-type',
  'content-encoding',
  'x-idempotency-key',
  'x-stainless-retry-count',
  'x-stainless-read-timeout',
  'x-sdk-version',
  'x-sdk-method',
  'x-tinker-request-type',
  'x-tinker-request-iteration',
  'x-tinker-create-promise-roundtrip-time',
  'x-tinker-sampling-backpressure',
]);

/** Headers a browser may send (what the SDK sends; `x-api-key` is accepted and replaced). */
export const ALLOWED_REQUEST_HEADERS = [...FORWARDED_REQUEST_HEADERS, 'x-api-key'];

/** Response headers passed back to the page (values scrubbed). Upstream cookies, servers'
 *  internal headers and anything unknown stay behind. */
export const FORWARDED_RESPONSE_HEADERS = [
  'content-type',
  'retry-after',
  'retry-after-ms',
  'x-should-retry',
  'x-request-id',
  'www-authenticate',
  'x-deprecation-note',
  'x-deprecation-level',
];

/** Reads the Worker's bindings into a config (throws on a missing key). */
export function readConfig(env) {
  const key = typeof env.TINKER_API_KEY === 'string' ? env.TINKER_API_KEY.trim() : '';
  if (!key) throw new Error('the relay has no TINKER_API_KEY secret');
  const origins = String(env.ALLOWED_ORIGINS ?? '')
    .split(',')
    .map((o) => o.trim().replace(/\/+$/, ''))
    .filter(Boolean);
  const maxBody = Number(env.MAX_BODY_BYTES ?? 1_048_576);
  return {
    key,
    baseURL: String(env.TINKER_BASE_URL || 'https://tinker.thinkingmachines.dev/services/tinker-prod').replace(/\/+$/, ''),
    origins,
    maxBodyBytes: Number.isFinite(maxBody) && maxBody > 0 ? Math.floor(maxBody) : 1_048_576,
    tokenizerBaseURL: env.TOKENIZER_BASE_URL ? String(env.TOKENIZER_BASE_URL).replace(/\/+$/, '') : null,
    clientKeys: String(env.OPENAI_CLIENT_KEYS ?? '')
      .split(',')
      .map((k) => k.trim())
      .filter(Boolean),
  };
}

/** Equal strings, compared in time that does not depend on where they differ. */
function sameSecret(a, b) {
  const x = encoder.encode(a);
  const y = encoder.encode(b);
  let diff = x.length ^ y.length;
  for (let i = 0; i < x.length; i++) diff |= x[i] ^ (y[i % Math.max(1, y.length)] ?? 0);
  return diff === 0;
}

/**
 * Who may use the OpenAI routes (`/v1/…`): a page on an allowed origin (`'origin'`), or any
 * client presenting one of OPENAI_CLIENT_KEYS as `Authorization: Bearer <key>` (`'key'`);
 * otherwise null. The relay's Tinker key is never a client key.
 */
export function openaiAccess(config, origin, authorization) {
  if (originAllowed(config, origin)) return 'origin';
  const m = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? '');
  if (m && config.clientKeys.some((k) => sameSecret(k, m[1]))) return 'key';
  return null;
}

/** Headers of a preflight for the OpenAI routes: the headers an OpenAI client asks for (its
 *  `authorization` and `x-stainless-*` ones) are allowed, since none is forwarded upstream. */
export function openaiPreflightHeaders(origin, requested) {
  const names = String(requested ?? '')
    .split(',')
    .map((h) => h.trim().toLowerCase())
    .filter((h) => /^[a-z0-9-]{1,64}$/.test(h));
  return {
    ...corsHeaders(origin),
    'access-control-allow-methods': 'GET, POST, OPTIONS',
    'access-control-allow-headers': [...new Set(['content-type', 'authorization', ...names])].join(', '),
    'access-control-max-age': '600',
  };
}

/** Whether `origin` (the request's `Origin` header) is on the allow-list (exact match). */
export function originAllowed(config, origin) {
  return typeof origin === 'string' && origin !== 'null' && config.origins.includes(origin);
}

/** CORS headers for an allowed origin. */
export function corsHeaders(origin) {
  return {
    'access-control-allow-origin': origin,
    'access-control-expose-headers': FORWARDED_RESPONSE_HEADERS.filter((h) => h !== 'content-type').join(', '),
    vary: 'Origin',
  };
}

/** Headers of a preflight answer for an allowed origin. */
export function preflightHeaders(origin) {
  return {
    ...corsHeaders(origin),
    'access-control-allow-methods': 'GET, POST, OPTIONS',
    'access-control-allow-headers': ALLOWED_REQUEST_HEADERS.join(', '),
    'access-control-max-age': '600',
  };
}

/** The upstream request headers: the allow-listed ones, then the relay's credential. */
export function upstreamHeaders(incoming, credential) {
  const out = new Headers();
  for (const [k, v] of incoming) if (FORWARDED_REQUEST_HEADERS.has(k.toLowerCase())) out.set(k, v);
  out.set('x-api-key', credential);
  return out;
}

const encoder = new TextEncoder();
const REDACTED = '[redacted]';

/** `text` with every secret replaced. */
export function scrubText(text, secrets) {
  let out = String(text);
  for (const s of secrets) if (s) out = out.split(s).join(REDACTED);
  return out;
}

/**
 * `bytes` with every occurrence of each secret's UTF-8 bytes replaced (any content
 * type: JSON, text, protobuf). Returns the input itself when nothing matched.
 */
export function scrubBytes(bytes, secrets) {
  let out = bytes;
  for (const s of secrets) {
    if (!s) continue;
    const needle = encoder.encode(s);
    const hits = findAll(out, needle);
    if (hits.length === 0) continue;
    const repl = encoder.encode(REDACTED);
    const next = new Uint8Array(out.length + hits.length * (repl.length - needle.length));
    let src = 0;
    let dst = 0;
    for (const h of hits) {
      next.set(out.subarray(src, h), dst);
      dst += h - src;
      next.set(repl, dst);
      dst += repl.length;
      src = h + needle.length;
    }
    next.set(out.subarray(src), dst);
    out = next;
  }
  return out;
}

function findAll(hay, needle) {
  const hits = [];
  const first = needle[0];
  const last = hay.length - needle.length;
  outer: for (let i = hay.indexOf(first); i !== -1 && i <= last; i = hay.indexOf(first, i + 1)) {
    for (let j = 1; j < needle.length; j++) if (hay[i + j] !== needle[j]) continue outer;
    hits.push(i);
    i += needle.length - 1;
  }
  return hits;
}

/**
 * The `client/config` answer as the page's SDK should see it: the relay authenticates
 * upstream itself (exchanging the key for a JWT when the server asks for one), so the
 * page never tries the exchange; forward_backward bodies are kept well under the relay's
 * size limit.
 */
export function rewriteClientConfig(config, maxBodyBytes) {
  const out = { ...config, pjwt_auth_enabled: false };
  const cap = Math.max(1024, Math.floor(maxBodyBytes / 4));
  const upstream = Number(out.fwdbwd_max_chunk_bytes_count);
  out.fwdbwd_max_chunk_bytes_count = Number.isFinite(upstream) && upstream > 0 ? Math.min(upstream, cap) : cap;
  return out;
}
