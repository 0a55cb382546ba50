// tinker-wasm for Node.js (ESM, and require() on Node >= 20.19): loads the wasm
// synchronously from the file next to this one, so importing is enough, no init call.
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as glue from './gen/full/tinker_wasm.js';
import { install, adminClient } from './extras.js';
import { rendererRegistry } from './renderers.js';
import { openaiHandler } from './openai.js';
import { withNodeTransport } from './node-transport.js';
import { host } from './host.js';
import { generalHost } from './general-engine.js';

glue.initSync({ module: fs.readFileSync(new URL('./gen/full/tinker_wasm_bg.wasm', import.meta.url)) });
// The environment, files and commands for the core's defaults (./host.js).
glue.__setHost(host);

// The general tokenizer engine, compiled synchronously on first need.
glue.__setGeneralTokenizerHost(
  generalHost({ loadSync: () => fs.readFileSync(new URL('./gen/general/tokenizer_general_bg.wasm', import.meta.url)) }),
);

export const { ModelInput, TensorData, datumFromTokens } = install(glue, { fs, path });
export * from './gen/full/tinker_wasm.js';
export * from './errors.js';
export const { registerRenderer, unregisterRenderer, getRegisteredRendererNames, isRendererRegistered, getRenderer } = rendererRegistry(glue);
// The OpenAI-compatible handler (./openai.js): `new OpenAI({ baseURL, fetch: openaiFetch(service) })`.
export const openaiFetch = openaiHandler(glue);
// HTTP over node:http(s) keep-alive unless `options.fetch` is given (./node-transport.js).
export const { ServiceClient, RestClient, SamplingClient } = withNodeTransport(glue);
export { PagePromise } from './extras.js';
export const AdminClient = adminClient(RestClient);
