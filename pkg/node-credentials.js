// The credentials file as the Python SDK 0.38 keeps it (tinker/lib/credentials.py:
// ~/.tinker/credentials.json, what `tinker auth login` and `tinker-wasm auth login` write),
// for the CLI's `auth` commands and its "is a credential configured" check. The clients'
// credential chain itself (TINKER_API_KEY, TINKER_CREDENTIAL_CMD, this file's default key),
// the TINKER_* defaults, Cloudflare Access headers and TINKER_TELEMETRY are the core's
// (crates/core/src/client/environment.rs), in every runtime that has an environment.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

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
