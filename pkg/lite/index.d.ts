/**
 * `tinker-wasm/lite`: the same SDK without the tokenizer, the renderers and the handler, on a
 * wasm module of about 210 KB gzip. Every runtime entry point exports the same API.
 * @packageDocumentation
 * @module tinker-wasm/lite
 */
import type { RestClientLists } from '../extras.js';
export * from '../gen/lite/tinker_wasm.js';
export * from '../errors.js';
export { PagePromise, datumFromTokens, AdminClient } from '../extras.js';
export type { NavigablePage, RestClientLists, DownloadProgress, DownloadedFile, DownloadCheckpointParams, DownloadOptions } from '../extras.js';

declare module '../gen/lite/tinker_wasm.js' {
  interface RestClient extends RestClientLists {}
}
