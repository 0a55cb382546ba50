/**
 * `tinker-wasm`: the Tinker SDK (service, training, sampling and REST clients), the tokenizer,
 * tinker-cookbook's renderers and the OpenAI-compatible handler. Every runtime entry point
 * (Node, Bun, Deno, browsers, workerd) exports the same API.
 * @packageDocumentation
 * @module tinker-wasm
 */
import type { RestClientLists } from './extras.js';
export * from './gen/full/tinker_wasm.js';
export * from './errors.js';
export * from './renderers.js';
export { PagePromise, datumFromTokens, AdminClient } from './extras.js';
export type { NavigablePage, RestClientLists, DownloadProgress, DownloadedFile, DownloadCheckpointParams, DownloadOptions } from './extras.js';

declare module './gen/full/tinker_wasm.js' {
  interface RestClient extends RestClientLists {}
}

/**
 * The OpenAI-compatible handler: a function with `fetch`'s signature serving
 * `POST /v1/chat/completions`, `POST /v1/completions` and `GET /v1/models` from `service`,
 * in-process: `new OpenAI({ baseURL: 'http://tinker/v1', apiKey: 'unused', fetch: openaiFetch(service) })`.
 * `model` is a base model, a `tinker://…/sampler_weights/…` path, or `base;path`; prompts are
 * rendered with the model's recommended renderer (or the request's `renderer`), answers parsed
 * by it (`content`, `reasoning_content`, `tool_calls`), with real logprobs; `stream: true`
 * answers in OpenAI's chunks. Errors come back in OpenAI's shape and status.
 */
export declare function openaiFetch(service: import('./gen/full/tinker_wasm.js').ServiceClient, options?: import('./gen/full/tinker_wasm.js').OpenAIFetchOptions): (input: RequestInfo | URL, init?: RequestInit) => Promise<Response>;
