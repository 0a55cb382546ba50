// The parameter objects of the package's own JavaScript methods (pkg/extras.js), each
// declared once (pkg/declare.js): their readers, and their TypeScript in pkg/gen/params.d.ts.
import { declareParams } from './declare.js';

/** The types the generated declarations name, and the module (from pkg/gen/) that has them. */
export const TS_TYPES = { module: '../extras.js', names: ['DownloadProgress'] };

export const DownloadCheckpointParams = declareParams('DownloadCheckpointParams', 'downloadCheckpoint params', 'Parameters of `RestClient.downloadCheckpoint`.', {
  directory: ['?: string', 'Write the files under this directory (Node only); without it each file comes back as a `Blob`.'],
  on_progress: ['?: (p: DownloadProgress) => void', 'Called after each chunk with the download\'s progress.'],
});

export const DownloadOptions = declareParams('DownloadOptions', 'download options', 'Options of `RestClient.openCheckpointFiles` and `downloadCheckpoint` (the last argument).', {
  signal: ['?: AbortSignal', 'Aborts the download (`APIUserAbortError`).'],
  fetch: ['?: typeof fetch', 'Fetches the files\' signed URLs in place of the global `fetch`.'],
});
