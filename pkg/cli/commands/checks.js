// Checks of user input made before any request: ids and tinker:// paths.
import { CliError } from '../errors.js';

/**
 * Rejects an id that cannot name anything on the server (empty, or with a `/`, `?`, `#`,
 * whitespace or control character, which would change the request's URL).
 * @param {string} id @param {string} what e.g. 'run ID'
 */
export function checkId(id, what) {
  if (!id || /[\/?#\s\x00-\x1f\x7f]/.test(id)) {
    throw new CliError(`Invalid ${what}: ${JSON.stringify(id)}`, `A ${what} has no '/', '?', '#' or whitespace; copy it from '${what === 'run ID' ? 'tinker-wasm run list' : 'tinker-wasm run info'}'.`);
  }
}

const SEGMENTS = { weights: 'training', sampler_weights: 'sampler', external_weights: 'external' };

/**
 * Python's `ParsedCheckpointTinkerPath.from_tinker_path`: `{ runId, type, checkpointId }`;
 * throws an Error with Python's message ("Invalid tinker path: …").
 * @param {string} path
 */
export function parseTinkerPath(path) {
  if (!path.startsWith('tinker://')) throw new Error(`Invalid tinker path: ${path}`);
  const parts = path.slice(9).split('/');
  if (parts.length !== 3 || !(parts[1] in SEGMENTS)) throw new Error(`Invalid tinker path: ${path}`);
  return { runId: parts[0], type: SEGMENTS[parts[1]], checkpointId: parts.slice(1).join('/') };
}

/**
 * The check Python's checkpoint commands make (a `tinker://` prefix), then the full parse
 * (run id, kind, name), so a malformed path fails here rather than as a 404.
 * @param {string} path
 */
export function checkCheckpointPath(path) {
  const hint = 'Checkpoint path must be in the format: tinker://run-id/weights/0001';
  if (!path.startsWith('tinker://')) throw new CliError(`Invalid checkpoint path: ${path}`, hint);
  let parsed;
  try {
    parsed = parseTinkerPath(path);
  } catch (e) {
    throw new CliError(`Invalid checkpoint path: ${path}`, hint);
  }
  if (!parsed.runId || !parsed.checkpointId.split('/')[1] || /[?#\s\x00-\x1f\x7f]/.test(path)) throw new CliError(`Invalid checkpoint path: ${path}`, hint);
  return parsed;
}
