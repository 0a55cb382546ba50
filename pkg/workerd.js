// tinker-wasm for Cloudflare Workers (workerd): Workers refuse to compile wasm
// bytes at run time, so the module arrives precompiled through a static import (wrangler
// and miniflare turn '*.wasm' imports into WebAssembly.Module) and is instantiated
// synchronously.
import * as glue from './gen/full/tinker_wasm.js';
import module from './gen/full/tinker_wasm_bg.wasm';
import generalModule from './gen/general/tokenizer_general_bg.wasm';
import { install, adminClient } from './extras.js';
import { rendererRegistry } from './renderers.js';
import { openaiHandler } from './openai.js';
import { generalHost } from './general-engine.js';

glue.initSync({ module });

// The general tokenizer engine (also a precompiled import), instantiated on first need.
glue.__setGeneralTokenizerHost(generalHost({ loadSync: () => generalModule }));

export const { ModelInput, TensorData, datumFromTokens } = install(glue);
export * from './gen/full/tinker_wasm.js';
export * from './errors.js';
export const { registerRenderer, unregisterRenderer, getRegisteredRendererNames, isRendererRegistered, getRenderer } = rendererRegistry(glue);
// The OpenAI-compatible handler (./openai.js): `new OpenAI({ baseURL, fetch: openaiFetch(service) })`.
export const openaiFetch = openaiHandler(glue);
export { PagePromise } from './extras.js';
export const AdminClient = adminClient(glue.RestClient);
