// tinker-wasm for Bun: the wasm is imported as a file (`with { type: 'file' }`: a path on
// disk, or inside the executable that `bun build --compile` makes, which then embeds it),
// read and instantiated synchronously, so importing is enough (no init call, and require()
// works). HTTP goes through Bun's own fetch, which costs less client CPU per request in Bun
// than node:http (BENCHMARKS.md); `options.fetch` still wins.
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as glue from './gen/full/tinker_wasm.js';
import wasmPath from './gen/full/tinker_wasm_bg.wasm' with { type: 'file' };
import generalPath from './gen/general/tokenizer_general_bg.wasm' with { type: 'file' };
import { install, adminClient } from './extras.js';
import { host } from './host.js';
import { rendererRegistry } from './renderers.js';
import { openaiHandler } from './openai.js';
import { generalHost } from './general-engine.js';

glue.initSync({ module: fs.readFileSync(wasmPath) });
// The environment, files and commands for the core's defaults (host.js).
glue.__setHost(host);

// The general tokenizer engine, compiled synchronously on first need.
glue.__setGeneralTokenizerHost(generalHost({ loadSync: () => fs.readFileSync(generalPath) }));

export const { ModelInput, TensorData, datumFromTokens } = install(glue, { fs, path });
export * from './gen/full/tinker_wasm.js';
export * from './errors.js';
export const { registerRenderer, unregisterRenderer, getRegisteredRendererNames, isRendererRegistered, getRenderer } = rendererRegistry(glue);
// The OpenAI-compatible handler (./openai.js): `new OpenAI({ baseURL, fetch: openaiFetch(service) })`.
export const openaiFetch = openaiHandler(glue);
export { PagePromise } from './extras.js';
export const AdminClient = adminClient(glue.RestClient);
