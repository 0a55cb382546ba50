// Where the Node entry points find credentials and environment settings when the caller
// gives none, as the Python SDK 0.38 does (tinker/lib/_auth_token_provider.py,
// credentials.py, internal_client_holder.py, telemetry.py):
//   1. TINKER_API_KEY;
//   2. else TINKER_CREDENTIAL_CMD, run through the shell for every credential it supplies
//      (stdout trimmed), as Python runs it on every token fetch;
//   3. else the default key of ~/.tinker/credentials.json (what `tinker auth login` and
//      `tinker-wasm auth login` write; only read when no TINKER_CREDENTIAL_CMD is set).
// When the server's client config says `credential_default_source: "credential_cmd"` (with
// JWT auth on), the JWT exchange authenticates with TINKER_CREDENTIAL_CMD's output rather
// than a plain `tml-` key, as Python's `resolve_auth_provider(…, enforce_cmd=True)`; a JWT
// key is used as it is.
// CLOUDFLARE_ACCESS_CLIENT_ID / _SECRET are sent as CF-Access-Client-Id / -Secret
// (`defaultHeaders` win), and TINKER_TELEMETRY outside 1/true/yes/on turns telemetry off
// (an explicit `telemetry` option wins).
// Only the Node entries (index.js, lite/index.js) use this: Deno's entries run with a
// narrow --allow-env / --allow-read and keep to TINKER_API_KEY.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { exec } from 'node:child_process';

/** The key the core authenticates with while the real credential comes from the command. */
const CMD_PLACEHOLDER = 'tml-from-TINKER_CREDENTIAL_CMD';

const env = (name) => {
  const v = process.env[name];
  return v === undefined || v === '' ? null : v;
};

/** `~/.tinker/credentials.json` ($HOME as Python's `expanduser`). */
export function credentialsPath() {
  return path.join(process.env.HOME || os.homedir(), '.tinker', 'credentials.json');
}

/**
 * One stored API key of the credentials file.
 * @typedef {{ type: 'manual' | 'generated', key: string, name: string, note?: string, details?: { org_details: { name: string }, user_details: { email: string } } }} StoredCredential
 */
/**
 * The credentials file: the default key's id and the keys by id.
 * @typedef {{ version: 1, default?: string | null, keys: Record<string, StoredCredential> }} CredentialStore
 */

/**
 * The stored credentials (`{ version: 1, default, keys }`), or an empty store.
 * @param {string} [file]
 * @returns {CredentialStore}
 */
export function readCredentials(file = credentialsPath()) {
  let raw;
  try {
    raw = fs.readFileSync(file, 'utf8');
  } catch (e) {
    if (/** @type {NodeJS.ErrnoException} */ (e)?.code === 'ENOENT') return { version: 1, default: null, keys: {} };
    throw e;
  }
  const data = JSON.parse(raw);
  if (data === null || typeof data !== 'object' || (data.version ?? 1) !== 1) throw new Error(`${file}: not a version 1 Tinker credentials file`);
  return { version: 1, default: data.default ?? null, keys: data.keys ?? {} };
}

/**
 * Writes the credentials file as Python's `JsonCredentialStore` does: the directory 0700,
 * the file 0600 through a temporary file renamed over it, fields without nulls.
 * @param {CredentialStore} creds
 * @param {string} [file]
 */
export function writeCredentials(creds, file = credentialsPath()) {
  const dir = path.dirname(file);
  if (!fs.existsSync(dir)) {
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
    fs.chmodSync(dir, 0o700);
  }
  const drop = (v) => {
    if (Array.isArray(v)) return v.map(drop);
    if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).filter(([, x]) => x !== null && x !== undefined).map(([k, x]) => [k, drop(x)]));
    return v;
  };
  const tmp = path.join(dir, `.${path.basename(file)}.${process.pid}.${Date.now()}`);
  try {
    fs.writeFileSync(tmp, JSON.stringify(drop({ version: 1, default: creds.default, keys: creds.keys }), null, 2), { mode: 0o600 });
    fs.chmodSync(tmp, 0o600);
    fs.renameSync(tmp, file);
  } catch (e) {
    try {
      fs.unlinkSync(tmp);
    } catch {}
    throw e;
  }
}

/**
 * The stored default key's record, or null.
 * @param {string} [file]
 * @returns {StoredCredential | null}
 */
export function storedDefaultKey(file) {
  const c = readCredentials(file);
  return c.default != null ? c.keys[c.default] ?? null : null;
}

/**
 * Where the credential comes from without any option: `{ source, apiKey }` with source
 * 'TINKER_API_KEY' | 'TINKER_CREDENTIAL_CMD' | 'credentials file', or null.
 */
export function resolveCredential() {
  const key = env('TINKER_API_KEY');
  if (key) return { source: 'TINKER_API_KEY', apiKey: key };
  if (env('TINKER_CREDENTIAL_CMD')) return { source: 'TINKER_CREDENTIAL_CMD', apiKey: null };
  const record = storedDefaultKey();
  return record ? { source: 'credentials file', apiKey: record.key } : null;
}

/**
 * Runs TINKER_CREDENTIAL_CMD; resolves to its trimmed stdout.
 * @param {string} cmd
 * @returns {Promise<string>}
 */
function runCredentialCmd(cmd) {
  return new Promise((resolve, reject) => {
    exec(cmd, { encoding: 'utf8', windowsHide: true, maxBuffer: 1 << 20 }, (err, stdout) => {
      const credential = String(stdout ?? '').trim();
      if (!credential) {
        reject(new Error(err ? `TINKER_CREDENTIAL_CMD failed: ${err.message.split('\n')[0]}` : 'TINKER_CREDENTIAL_CMD returned an empty credential.'));
        return;
      }
      resolve(credential);
    });
  });
}

/** A local 401 answer: the credential could not be obtained. */
const refused = (detail) => new Response(JSON.stringify({ detail }), { status: 401, headers: { 'content-type': 'application/json' } });

const headerName = (headers, name) => Object.keys(headers ?? {}).find((k) => k.toLowerCase() === name);

/**
 * A fetch that supplies TINKER_CREDENTIAL_CMD's output where the server wants it: in place
 * of the placeholder key, and (when the server asks for `credential_cmd`) on the JWT
 * exchange instead of the static key.
 */
function credentialFetch(inner, { cmd, placeholder }) {
  let cmdForExchange = false;
  const slow = async (input, init, url) => {
    const keyHeader = headerName(init.headers, 'x-api-key');
    const sent = keyHeader ? init.headers[keyHeader] : null;
    const exchange = url.endsWith('/api/v1/auth/token');
    const useCmd = sent !== null && ((placeholder && sent === CMD_PLACEHOLDER) || (exchange && cmdForExchange && !String(sent).startsWith('eyJ')));
    if (useCmd) {
      // No credential to send: answered here as the server would (401, not retried), with
      // what to do.
      if (!cmd) return refused('Your organization requires dynamic credentials — set TINKER_CREDENTIAL_CMD to a command that prints a valid credential.');
      let credential;
      try {
        credential = await runCredentialCmd(cmd);
      } catch (e) {
        // runCredentialCmd rejects with an Error only.
        return refused(/** @type {Error} */ (e).message);
      }
      init = { ...init, headers: { ...init.headers, [keyHeader]: credential } };
    }
    const response = await inner(input, init);
    if (url.endsWith('/api/v1/client/config') && response.ok) {
      try {
        const body = JSON.parse(new TextDecoder().decode(await response.arrayBuffer()));
        cmdForExchange = !!body?.pjwt_auth_enabled && body?.credential_default_source === 'credential_cmd';
        return new Response(JSON.stringify(body), { status: response.status, headers: Object.fromEntries(response.headers) });
      } catch {
        return response;
      }
    }
    return response;
  };
  // Every other request goes straight through (no extra promise on the hot path).
  const wrapped = (input, init = {}) => {
    const url = String(input);
    if (placeholder || url.endsWith('/api/v1/auth/token') || url.endsWith('/api/v1/client/config')) return slow(input, init, url);
    return inner(input, init);
  };
  // Keep what the SDK reads off its fetch (plain abort signals, phase timeouts): the
  // requests pass through unchanged.
  for (const sym of Object.getOwnPropertySymbols(inner)) wrapped[sym] = inner[sym];
  return wrapped;
}

const TRUTHY = new Set(['1', 'true', 'yes', 'on']);

/**
 * `target` seen through a layer of own properties that assignments to the view write to,
 * leaving `target` (and its prototype chain and getters) untouched.
 * @param {object} target
 */
function overlay(target) {
  /** @type {Record<string | symbol, unknown>} */
  const own = {};
  const has = (/** @type {string | symbol} */ k) => Object.prototype.hasOwnProperty.call(own, k);
  return new Proxy(target, {
    get: (t, k) => (has(k) ? own[k] : Reflect.get(t, k)),
    set: (_t, k, v) => {
      own[k] = v;
      return true;
    },
    has: (t, k) => has(k) || Reflect.has(t, k),
    ownKeys: (t) => [...new Set([...Reflect.ownKeys(t), ...Reflect.ownKeys(own)])],
    getOwnPropertyDescriptor: (t, k) => (has(k) ? { value: own[k], writable: true, enumerable: true, configurable: true } : Reflect.getOwnPropertyDescriptor(t, k)),
  });
}

/**
 * The client options with the environment's defaults filled in (see the top of this file).
 * Options that are not a plain object are returned as they are (the core rejects them).
 * @template T
 * @param {T} options
 * @param {{ keyOnly?: boolean }} [how] keyOnly: only the credential (for sampler handles)
 * @returns {T}
 */
export function withNodeCredentials(options, how = {}) {
  if (options === undefined) options = /** @type {any} */ ({});
  if (options === null || typeof options !== 'object' || Array.isArray(options)) return options;
  // The caller's options as they are (inherited and getter-defined ones included: a spread
  // would drop what the prototype chain holds), with our additions laid over them.
  const o = /** @type {any} */ (overlay(options));
  const cmd = env('TINKER_CREDENTIAL_CMD');
  let placeholder = false;
  if (o.apiKey === undefined) {
    const key = env('TINKER_API_KEY');
    if (key) o.apiKey = key;
    else if (cmd) {
      o.apiKey = CMD_PLACEHOLDER;
      placeholder = true;
    } else {
      try {
        const record = storedDefaultKey();
        if (record) o.apiKey = record.key;
      } catch {
        // An unreadable credentials file is as good as none (the core then names the options).
      }
    }
  }
  // Always on the Node transport: the server may ask for the command (credential_default_source).
  if (typeof o.fetch === 'function') o.fetch = credentialFetch(o.fetch, { cmd, placeholder });
  if (how.keyOnly) return o;
  const cf = {};
  const id = env('CLOUDFLARE_ACCESS_CLIENT_ID');
  const secret = env('CLOUDFLARE_ACCESS_CLIENT_SECRET');
  if (id) cf['CF-Access-Client-Id'] = id;
  if (secret) cf['CF-Access-Client-Secret'] = secret;
  if (id || secret) {
    const given = o.defaultHeaders && typeof o.defaultHeaders === 'object' ? o.defaultHeaders : {};
    const lower = new Set(Object.keys(given).map((k) => k.toLowerCase()));
    o.defaultHeaders = { ...Object.fromEntries(Object.entries(cf).filter(([k]) => !lower.has(k.toLowerCase()))), ...given };
  }
  const telemetry = process.env.TINKER_TELEMETRY;
  if (o.telemetry === undefined && telemetry !== undefined && !TRUTHY.has(telemetry.toLowerCase())) o.telemetry = false;
  return o;
}
