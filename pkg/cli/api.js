// Every call the tinker-wasm CLI makes into the SDK, in one place: the commands only call
// these functions, so a change to the SDK's method names or parameters is a change here.
// The SDK is the full tinker-wasm (lite does not run TINKER_CREDENTIAL_CMD or read the
// credentials file: its size budget), imported on first use, so `--help`, `version` and
// argument errors never load wasm at all.
// Credentials come from the core's chain (crates/core/src/client/environment.rs): TINKER_API_KEY,
// TINKER_CREDENTIAL_CMD, ~/.tinker/credentials.json, as the Python SDK finds them.

import { usePythonPrinting } from './output.js';

/** @type {Promise<typeof import('../index.js')> | null} */
let sdkPromise = null;
/** The SDK module (loaded once); the CLI's output prints through its Python printing. */
export function sdk() {
  sdkPromise ??= import('../index.js').then((m) => {
    usePythonPrinting(m);
    return m;
  });
  return sdkPromise;
}

const MISSING_API_KEY_MESSAGE =
  'The api_key client option must be set by passing api_key to the client, by setting the TINKER_API_KEY environment variable, or by storing a key with `tinker auth login`';

/**
 * Whether a credential is configured (Python's `tinker_has_credentials`: local only). The
 * core decides (crates/core/src/client/environment.rs): a client made with no options
 * either finds one or says that an API key is required; making it sends nothing.
 */
export async function hasCredentials() {
  const { RestClient } = await sdk();
  try {
    await new RestClient({ telemetry: false }).close();
    return true;
  } catch (e) {
    return !(e instanceof TypeError && /an API key is required/.test(e.message));
  }
}

/** Fails as Python's CLI does when no credential is configured. */
export async function requireCredentials() {
  if (!(await hasCredentials())) {
    const { CliError } = await import('./errors.js');
    throw new CliError(`Failed to connect to Tinker API: ${MISSING_API_KEY_MESSAGE}`, 'Please check your network connection and API configuration.');
  }
}

/** Options every client gets (after checking that a credential is configured). */
async function clientOptions(extra = {}) {
  await requireCredentials();
  return { ...extra };
}

/** @type {Promise<any> | null} */
let rest = null;
/** A RestClient on the environment's credentials (one per process). */
function restClient() {
  rest ??= (async () => new (await sdk()).RestClient(await clientOptions()))();
  return rest;
}

/** @type {Promise<any> | null} */
let admin = null;
function adminClient() {
  admin ??= (async () => new (await sdk()).AdminClient(await clientOptions()))();
  return admin;
}

/** Closes the clients this process made (stops their timers, flushes telemetry). */
export async function closeAll() {
  const made = [rest, admin].filter(Boolean);
  rest = admin = null;
  await Promise.all(made.map((p) => p.then((c) => c.close()).catch(() => {})));
}

// ---- REST ----

/** One page of training runs: the wire response `{ training_runs, cursor }`. */
export async function listTrainingRuns({ limit, offset }) {
  const page = await (await restClient()).listTrainingRunsPage({ limit, offset });
  return page.response;
}

/** One training run (wire JSON). */
export async function getTrainingRun(runId) {
  return (await restClient()).getTrainingRun(runId);
}

/** The checkpoints of one run: `{ checkpoints, cursor? }`. */
export async function listCheckpoints(runId) {
  return (await restClient()).listCheckpoints(runId);
}

/** One page of all the caller's checkpoints: `{ checkpoints, cursor }`. */
export async function listUserCheckpoints({ limit, offset }) {
  const page = await (await restClient()).listUserCheckpointsPage({ limit, offset });
  return page.response;
}

export async function publishCheckpoint(path) {
  await (await restClient()).publishCheckpointFromTinkerPath(path);
}

export async function unpublishCheckpoint(path) {
  await (await restClient()).unpublishCheckpointFromTinkerPath(path);
}

/** @param {string} path @param {number | null} ttlSeconds (null removes the expiry) */
export async function setCheckpointTtl(path, ttlSeconds) {
  await (await restClient()).setCheckpointTtlFromTinkerPath(path, { ttl_seconds: ttlSeconds });
}

export async function deleteCheckpoint(path) {
  await (await restClient()).deleteCheckpointFromTinkerPath(path);
}

/** `{ supported_models: [...] }`. */
export async function getServerCapabilities() {
  return (await restClient()).getServerCapabilities();
}

/** `{ user_urn, org_urn, email }` from the credential's JWT. */
export async function whoami() {
  return (await restClient()).whoami();
}

/** A signed URL of the session's Perfetto trace. */
export async function exportSessionTrace(sessionId) {
  return (await restClient()).exportSessionTrace(sessionId);
}

/** Signed URLs of an external weights checkpoint: `{ urls, expires }`. */
export async function getExternalWeightsUrls(path) {
  return (await restClient()).getExternalWeightsUrls(path);
}

/**
 * Downloads an external weights checkpoint's files into `directory` (streamed; sorted by
 * name). Resolves to `{ files, bytes }`.
 * @param {string} path
 * @param {{ directory: string, onProgress?: (p: { path: string, fileBytes: number, fileSize: number | null, bytes: number }) => void, signal?: AbortSignal }} options
 */
export async function downloadCheckpointFiles(path, { directory, onProgress, signal }) {
  return (await restClient()).downloadCheckpoint(path, { directory, on_progress: onProgress }, { signal });
}

/**
 * Fetches a signed URL (trace exports): the `Response`, its body streamed.
 * @param {string} url @param {AbortSignal} [signal]
 */
export async function fetchSignedUrl(url, signal) {
  return globalThis.fetch(url, { signal });
}

/**
 * Checks that Tinker is usable with the configured credential: one un-retried request to
 * the server capabilities (Python's `raise_if_tinker_not_accessible`).
 */
export async function checkAccessible() {
  const { RestClient } = await sdk();
  const c = new RestClient(await clientOptions({ maxRetries: 0 }));
  try {
    await c.getServerCapabilities();
  } finally {
    await c.close().catch(() => {});
  }
}

// ---- admin ----

export async function getBillingUsage(startingOn, endingBefore) {
  return (await adminClient()).getBillingUsage({ starting_on: startingOn, ending_before: endingBefore });
}

export async function getCurrentCheckpointStorageUsage(projectId) {
  return (await adminClient()).getCurrentCheckpointStorageUsage(projectId == null ? undefined : { project_id: projectId });
}

// ---- training (checkpoint download of a training checkpoint) ----

/**
 * Opens a session (user metadata as Python's CLI sets it), loads `path` into a new training
 * run and exports it as external weights with a TTL. Resolves to `{ exportPath, close }`;
 * `close(status)` finishes the session.
 * @param {string} path @param {number} ttlSeconds @param {AbortSignal} [signal]
 */
export async function exportAsExternalWeights(path, ttlSeconds, signal) {
  const { ServiceClient } = await sdk();
  const service = new ServiceClient(await clientOptions());
  const close = (/** @type {'success' | 'errored' | 'interrupted'} */ status) => service.close({ status });
  try {
    const training = await service.createTrainingClientFromState(path, { user_metadata: { created_by: 'tinker checkpoint download' } }, { signal });
    const saved = await training.saveWeightsExternal('download', { ttl_seconds: ttlSeconds }, { signal });
    return { exportPath: saved.path, close };
  } catch (e) {
    await close('errored').catch(() => {});
    throw e;
  }
}

// ---- auth (the CLI-only endpoints; Python's CLI calls them outside the SDK client too) ----

/** The base URL the SDK uses (TINKER_BASE_URL, else production). */
export function baseURL() {
  const v = process.env.TINKER_BASE_URL;
  return (v ? v : 'https://tinker.thinkingmachines.dev/services/tinker-prod').replace(/\/+$/, '');
}

/**
 * `GET` / `DELETE /api/v1/auth/apikey/me` authenticated with `key` itself, over the
 * package's Node transport. Resolves to the parsed body; rejects with a message like
 * Python's `AuthApiError`.
 * @param {'GET' | 'DELETE'} method @param {string} key
 */
export async function selfApiKey(method, key) {
  const { nodeFetch } = await import('../node-transport.js');
  const base = baseURL();
  const path = '/api/v1/auth/apikey/me';
  const headers = { 'X-API-Key': key, Accept: 'application/json' };
  const id = process.env.CLOUDFLARE_ACCESS_CLIENT_ID;
  const secret = process.env.CLOUDFLARE_ACCESS_CLIENT_SECRET;
  if (id) headers['CF-Access-Client-Id'] = id;
  if (secret) headers['CF-Access-Client-Secret'] = secret;
  let response;
  const timeout = AbortSignal.timeout(30_000);
  try {
    response = await nodeFetch(`${base}${path}`, { method, headers, signal: timeout });
  } catch (e) {
    throw new AuthApiError(`Could not reach the Tinker API at ${base}: ${/** @type {Error} */ (e)?.message ?? e}`);
  }
  const text = await response.text();
  let body = null;
  try {
    body = text ? JSON.parse(text) : null;
  } catch {}
  if (!response.ok) {
    const detail = body && typeof body.detail === 'string' && body.detail ? body.detail : 'Tinker API request failed';
    throw new AuthApiError(`${detail} (HTTP ${response.status} from ${path})`);
  }
  return body;
}

/** A call to the Tinker auth API failed. */
export class AuthApiError extends Error {}
