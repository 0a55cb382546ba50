// Type declarations for tinker-wasm. Every runtime entry point exports the same API.
import type { RestClientLists } from './extras.js';
export * from './gen/full/tinker_wasm.js';
export * from './errors.js';
export * from './renderers.js';
export { PagePromise, ModelInput, TensorData, datumFromTokens, AdminClient } from './extras.js';
export type { NavigablePage, RestClientLists, DownloadProgress, DownloadedFile } from './extras.js';

declare module './gen/full/tinker_wasm.js' {
  interface RestClient extends RestClientLists {}
}
