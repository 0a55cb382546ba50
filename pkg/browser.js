// tinker-wasm for browsers and bundlers (Vite, webpack, esbuild with a wasm asset
// loader): fetches and compiles the wasm with streaming compilation, then exports the SDK.
// Uses top-level await, so importing is enough, no init call.
import * as glue from './gen/full/tinker_wasm.js';
import { install, adminClient } from './extras.js';
import { rendererRegistry } from './renderers.js';
import { openaiHandler } from './openai.js';
import { generalHost } from './general-engine.js';

await glue.default({ module_or_path: new URL('./gen/full/tinker_wasm_bg.wasm', import.meta.url) });

// The general tokenizer engine: fetched on first need (fromURL, getTokenizer,
// Tokenizer.loadGeneralEngine()).
glue.__setGeneralTokenizerHost(
  generalHost({ load: () => new URL('./gen/general/tokenizer_general_bg.wasm', import.meta.url) }),
);

export const { ModelInput, TensorData, datumFromTokens } = install(glue);
export * from './gen/full/tinker_wasm.js';
export * from './errors.js';
export const { registerRenderer, unregisterRenderer, getRegisteredRendererNames, isRendererRegistered, getRenderer } = rendererRegistry(glue);
// The OpenAI-compatible handler (./openai.js): `new OpenAI({ baseURL, fetch: openaiFetch(service) })`.
export const openaiFetch = openaiHandler(glue);
export { PagePromise } from './extras.js';
export const AdminClient = adminClient(glue.RestClient);
