// The relay's OpenAI-compatible routes (`/v1/…`): tinker-wasm's `openaiFetch` runs here, in
// the Worker, with the relay's own key, so a browser app on an allowed origin, or any OpenAI
// client holding one of the relay's client keys (`Authorization: Bearer …`), can use a model or
// a fine-tune through it. Nothing of the caller's request but its body reaches the handler.
import { ServiceClient, Tokenizer, openaiFetch } from 'tinker-wasm';
import { openaiAccess, openaiPreflightHeaders, corsHeaders, scrubBytes, scrubText } from './policy.js';
import { secrets } from './upstream.js';

/** Tokenizers by id, per isolate: a Tokenizer holds no I/O, so requests share it. */
const tokenizers = new Map();

/** An error in OpenAI's shape. */
function openaiError(status, message, code = null) {
  return Response.json({ error: { message, type: status === 401 ? 'authentication_error' : 'invalid_request_error', param: null, code } }, { status });
}

function tokenizerLoader(config) {
  return async (id) => {
    if (tokenizers.has(id)) return tokenizers.get(id);
    if (!config.tokenizerBaseURL) throw new Error(`this relay has no TOKENIZER_BASE_URL, so it cannot load the tokenizer ${id}`);
    const dir = `${config.tokenizerBaseURL}/${id}`;
    const tok = await Tokenizer.fromURL(`${dir}/tokenizer.json`, { config_url: `${dir}/tokenizer_config.json`, cache: true });
    tokenizers.set(id, tok);
    return tok;
  };
}

/**
 * One `/v1/…` request: `{ response, route }`. A session per request (a Worker may not carry
 * I/O from one request into another), closed after the answer; tokenizers are shared.
 */
export async function openaiRoute(request, config, { readBody, TOO_LARGE, waitUntil }) {
  const origin = request.headers.get('origin');
  if (request.method === 'OPTIONS') {
    if (openaiAccess(config, origin, null) !== 'origin') return { response: openaiError(403, 'this origin may not use this relay', 'origin_not_allowed'), route: 'openai-preflight' };
    return { response: new Response(null, { status: 204, headers: openaiPreflightHeaders(origin, request.headers.get('access-control-request-headers')) }), route: 'openai-preflight' };
  }
  const access = openaiAccess(config, origin, request.headers.get('authorization'));
  const cors = access === 'origin' ? corsHeaders(origin) : {};
  if (!access) {
    await request.body?.cancel();
    return { response: openaiError(401, 'this relay needs an allowed origin or one of its client keys (Authorization: Bearer …)', 'invalid_api_key'), route: 'openai' };
  }
  const body = request.method === 'GET' || request.method === 'HEAD' ? null : await readBody(request, config.maxBodyBytes);
  if (body === TOO_LARGE) return { response: withHeaders(openaiError(413, `request bodies are limited to ${config.maxBodyBytes} bytes by this relay`), cors), route: 'openai' };
  const hidden = secrets(config);
  const log = (level) => (msg) => console[level](`[relay openai] ${scrubText(msg, hidden)}`);
  const service = new ServiceClient({
    apiKey: config.key,
    baseURL: config.baseURL,
    tokenizerLoader: tokenizerLoader(config),
    logger: { warn: log('warn'), error: log('error') },
  });
  try {
    const url = new URL(request.url);
    const answer = await openaiFetch(service)(new Request(url, { method: request.method, headers: { 'content-type': 'application/json' }, body, signal: request.signal }));
    const bytes = scrubBytes(new Uint8Array(await answer.arrayBuffer()), hidden);
    const headers = { 'content-type': answer.headers.get('content-type') ?? 'application/json', ...cors };
    if (answer.headers.get('cache-control')) headers['cache-control'] = answer.headers.get('cache-control');
    return { response: new Response(bytes, { status: answer.status, headers }), route: 'openai' };
  } finally {
    waitUntil(service.close().catch(() => {}));
  }
}

function withHeaders(response, headers) {
  for (const [k, v] of Object.entries(headers)) response.headers.set(k, v);
  return response;
}
