// The relay's upstream credential: the API key itself, or, when the server asks clients
// to exchange it (`pjwt_auth_enabled` in `client/config`), a short-lived JWT obtained
// with it. Kept per isolate; strings only, so nothing request-bound outlives a request.

const SDK_VERSION = '0.38.0';
const CONFIG_TTL_MS = 5 * 60_000;
const REFRESH_BEFORE_S = 60;

const state = { configAt: 0, jwtMode: false, jwt: '', jwtExp: 0, previous: [] };

/** Forgets everything (tests; a new key). */
export function resetCredentialState() {
  Object.assign(state, { configAt: 0, jwtMode: false, jwt: '', jwtExp: 0, previous: [] });
}

/** Secrets that must never leave the relay: the key and the JWTs it has used (a late
 *  answer may echo the one before a refresh). */
export function secrets(config) {
  return [config.key, state.jwt, ...state.previous].filter(Boolean);
}

function jwtExpiry(jwt) {
  try {
    const payload = jwt.split('.')[1].replace(/-/g, '+').replace(/_/g, '/');
    const exp = JSON.parse(atob(payload + '='.repeat((4 - (payload.length % 4)) % 4))).exp;
    return typeof exp === 'number' ? exp : 0;
  } catch {
    return 0;
  }
}

async function post(config, path, body, credential) {
  const r = await fetch(`${config.baseURL}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json', 'x-api-key': credential },
    body: JSON.stringify(body),
  });
  if (!r.ok) {
    await r.body?.cancel();
    throw new UpstreamAuthError(path, r.status);
  }
  return r.json();
}

/** The relay could not authenticate upstream (the message never holds a secret). */
export class UpstreamAuthError extends Error {
  constructor(path, status) {
    super(`upstream ${path} answered HTTP ${status}`);
    this.status = status;
  }
}

/** Records a `client/config` answer the relay has just forwarded. */
export function noteClientConfig(json) {
  state.jwtMode = json?.pjwt_auth_enabled === true;
  state.configAt = Date.now();
}

async function refresh(config, force) {
  if (force || Date.now() - state.configAt > CONFIG_TTL_MS) {
    noteClientConfig(await post(config, '/api/v1/client/config', { sdk_version: SDK_VERSION }, config.key));
  }
  if (!state.jwtMode) return config.key;
  const now = Date.now() / 1000;
  if (!force && state.jwt && state.jwtExp - now > REFRESH_BEFORE_S) return state.jwt;
  const { jwt } = await post(config, '/api/v1/auth/token', {}, config.key);
  if (typeof jwt !== 'string' || !jwt) throw new UpstreamAuthError('/api/v1/auth/token', 502);
  if (state.jwt) state.previous = [state.jwt, ...state.previous].slice(0, 4);
  state.jwt = jwt;
  state.jwtExp = jwtExpiry(jwt) || now + 300;
  return jwt;
}

/**
 * The credential for an upstream call. `force` re-reads the server's config and
 * exchanges again (after the server rejected a JWT). Promises are never shared between
 * requests (workerd ties I/O to the request that started it), so two requests that find
 * the JWT stale at the same moment each exchange once.
 */
export async function credential(config, { force = false, route } = {}) {
  // client/config and the key-info endpoints always take the key itself.
  if (route === 'client_config') return config.key;
  if (!force && state.configAt && Date.now() - state.configAt <= CONFIG_TTL_MS) {
    if (!state.jwtMode) return config.key;
    if (state.jwt && state.jwtExp - Date.now() / 1000 > REFRESH_BEFORE_S) return state.jwt;
  }
  return refresh(config, force);
}
