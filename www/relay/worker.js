// tinker-relay: a Cloudflare Worker that lets the browser playground use the Tinker API
// without ever seeing the API key. The page's SDK points `baseURL` at this Worker and
// sends a placeholder key; the Worker
//   - answers only origins on ALLOWED_ORIGINS (preflights and requests; others: 403),
//   - forwards only the calls the playground makes (policy.js ROUTES; others: 403),
//   - refuses request bodies over MAX_BODY_BYTES (413),
//   - replaces X-API-Key with its secret (or a JWT it exchanged the secret for),
//   - passes back only known response headers, and scrubs the key (and its JWTs) from
//     every response header and body, errors included; it logs no header or body.
// `GET /relay/status` checks the upstream with the SDK itself (tinker-wasm in workerd).
// `/v1/…` is the OpenAI API (./openai.js: tinker-wasm's openaiFetch, run here with the key),
// for pages on the allowed origins and for any OpenAI client holding a client key.
//
// Bindings: TINKER_API_KEY (secret), ALLOWED_ORIGINS (comma-separated origins),
// TINKER_BASE_URL (default: the production API), MAX_BODY_BYTES (default 1 MiB),
// OPENAI_CLIENT_KEYS (secret, comma-separated: keys OpenAI clients send as their API key),
// TOKENIZER_BASE_URL (where `<tokenizer id>/tokenizer.json` files are, for `/v1/`).
import { RestClient, version } from 'tinker-wasm';
import { openaiRoute } from './openai.js';
import {
  FORWARDED_RESPONSE_HEADERS, ROUTES, corsHeaders, matchRoute, originAllowed, preflightHeaders, readConfig,
  rewriteClientConfig, scrubBytes, scrubText, upstreamHeaders,
} from './policy.js';
import { UpstreamAuthError, credential, noteClientConfig, secrets } from './upstream.js';

const NO_BODY_STATUS = new Set([101, 204, 205, 304]);
const TOO_LARGE = Symbol('too large');

function jsonResponse(status, body, headers = {}) {
  return new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json', ...headers } });
}

/** An error answer in the API's shape (`detail`), with a machine-readable `code`. */
function refuse(status, code, detail, headers = {}) {
  return jsonResponse(status, { detail, code }, { 'x-should-retry': 'false', ...headers });
}

/** The request body, or TOO_LARGE once it passes `max` bytes (declared or streamed). */
async function readBody(request, max) {
  const declared = request.headers.get('content-length');
  if (declared !== null && Number(declared) > max) {
    await request.body?.cancel();
    return TOO_LARGE;
  }
  if (!request.body) return null;
  const reader = request.body.getReader();
  const chunks = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > max) {
      await reader.cancel();
      return TOO_LARGE;
    }
    chunks.push(value);
  }
  const body = new Uint8Array(total);
  let at = 0;
  for (const c of chunks) {
    body.set(c, at);
    at += c.byteLength;
  }
  return body;
}

async function forward(request, url, route, config) {
  let body = null;
  if (request.method !== 'GET') {
    body = await readBody(request, config.maxBodyBytes);
    if (body === TOO_LARGE) return refuse(413, 'body_too_large', `request bodies are limited to ${config.maxBodyBytes} bytes by this relay`);
  }
  const target = `${config.baseURL}${url.pathname}${url.search}`;
  const send = (cred) => fetch(target, { method: request.method, headers: upstreamHeaders(request.headers, cred), body, redirect: 'manual' });
  let upstream;
  try {
    upstream = await send(await credential(config, { route }));
    const rejected = upstream.status === 401 && /invalid_token/.test(upstream.headers.get('www-authenticate') ?? '');
    if (rejected && route !== 'client_config') {
      // The JWT expired or the server switched to JWTs: authenticate again, replay once.
      await upstream.body?.cancel();
      upstream = await send(await credential(config, { route, force: true }));
    }
  } catch (e) {
    if (e instanceof UpstreamAuthError) {
      return refuse(502, 'upstream_auth_failed', `the relay could not authenticate with the Tinker API (HTTP ${e.status})`);
    }
    return refuse(502, 'upstream_unreachable', 'the relay could not reach the Tinker API');
  }
  let bytes = new Uint8Array(await upstream.arrayBuffer());
  if (route === 'client_config' && upstream.ok) {
    try {
      const json = JSON.parse(new TextDecoder().decode(bytes));
      noteClientConfig(json);
      bytes = new TextEncoder().encode(JSON.stringify(rewriteClientConfig(json, config.maxBodyBytes)));
    } catch {
      // Not JSON: passed on as is (scrubbed); the SDK reports the bad answer.
    }
  }
  const hidden = secrets(config);
  const headers = new Headers();
  for (const name of FORWARDED_RESPONSE_HEADERS) {
    const v = upstream.headers.get(name);
    if (v !== null) headers.set(name, scrubText(v, hidden));
  }
  const out = NO_BODY_STATUS.has(upstream.status) ? null : scrubBytes(bytes, hidden);
  return new Response(out, { status: upstream.status, headers });
}

// The status answer, per isolate for 30 s (plain data only).
let statusCache = { at: 0, status: 0, body: null };

async function relayStatus(config) {
  if (statusCache.body && Date.now() - statusCache.at < 30_000) return jsonResponse(statusCache.status, statusCache.body);
  const hidden = secrets(config);
  const log = (level) => (msg) => console[level](`[relay sdk] ${scrubText(msg, secrets(config))}`);
  const rest = new RestClient({
    apiKey: config.key,
    baseURL: config.baseURL,
    heartbeat: false,
    telemetry: false,
    maxRetries: 1,
    timeout: 15_000,
    logger: { warn: log('warn'), error: log('error') },
  });
  let status;
  let body;
  try {
    const caps = await rest.getServerCapabilities();
    status = 200;
    body = {
      ok: true,
      sdkVersion: version(),
      models: caps.supported_models.map((m) => m.model_name).filter(Boolean),
      maxBodyBytes: config.maxBodyBytes,
      routes: ROUTES.map(([m, , name]) => `${m} ${name}`),
    };
  } catch (e) {
    status = 502;
    body = { ok: false, sdkVersion: version(), error: { name: e?.name ?? 'Error', status: e?.status ?? null, message: scrubText(String(e?.message ?? e), hidden) } };
  } finally {
    await rest.close().catch(() => {});
  }
  statusCache = { at: Date.now(), status, body };
  return jsonResponse(status, body);
}

async function handle(request, config, ctx) {
  const url = new URL(request.url);
  if (url.pathname.startsWith('/v1/') && !/%2f|%5c|\\|(^|\/)\.\.?(\/|$)|%2e/i.test(url.pathname)) {
    return openaiRoute(request, config, { readBody, TOO_LARGE, waitUntil: (p) => ctx?.waitUntil(p) });
  }
  const origin = request.headers.get('origin');
  if (!originAllowed(config, origin)) {
    await request.body?.cancel();
    return { response: refuse(403, 'origin_not_allowed', 'this origin may not use this relay'), route: 'origin' };
  }
  const cors = corsHeaders(origin);
  if (request.method === 'OPTIONS') {
    return { response: new Response(null, { status: 204, headers: preflightHeaders(origin) }), route: 'preflight' };
  }
  let response;
  let route = null;
  if (url.pathname === '/relay/status' && request.method === 'GET') {
    route = 'status';
    response = await relayStatus(config);
  } else {
    route = matchRoute(request.method, url.pathname);
    if (!route) {
      await request.body?.cancel();
      response = refuse(403, 'path_not_allowed', `this relay does not forward ${request.method} ${url.pathname.slice(0, 200)}`);
    } else {
      response = await forward(request, url, route, config);
    }
  }
  for (const [k, v] of Object.entries(cors)) response.headers.set(k, v);
  return { response, route };
}

export default {
  async fetch(request, env, ctx) {
    const t0 = Date.now();
    let config;
    try {
      config = readConfig(env);
    } catch {
      console.error('[relay] TINKER_API_KEY is not set');
      return refuse(500, 'relay_misconfigured', 'the relay is not configured');
    }
    const { response, route } = await handle(request, config, ctx);
    // One line per request: never a header, a body, a query string or a secret.
    const path = scrubText(new URL(request.url).pathname.slice(0, 200), secrets(config));
    console.log(`[relay] ${request.method} ${path} ${route ?? '-'} ${response.status} ${Date.now() - t0}ms`);
    return response;
  },
};
