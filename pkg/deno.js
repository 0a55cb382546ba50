// tinker-wasm for Deno: the wasm arrives through Deno's module loader as a compiled
// WebAssembly.Module (a source phase import, like workerd's precompiled module) and is
// instantiated synchronously, so importing needs no --allow-read and no init call. HTTP
// goes through node:http / node:https keep-alive (less client CPU per request in Deno than
// its fetch: BENCHMARKS.md); `options.fetch` wins.
// Permissions: --allow-net (the API host), --allow-env=TINKER_API_KEY,TINKER_BASE_URL,
// TINKER_PROJECT_ID,TINKER_TAGS for the defaults, and --allow-read of this package only to
// load the general tokenizer engine (tokenizer files the fast path does not specialise).
// The rest of the core's chain (TINKER_CREDENTIAL_CMD with --allow-run, the stored key with
// HOME and --allow-read of ~/.tinker, Cloudflare Access headers, TINKER_TELEMETRY) is read
// when granted and skipped, never prompted for, otherwise (./host.js).
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as glue from './gen/full/tinker_wasm.js';
import source module from './gen/full/tinker_wasm_bg.wasm';
import { install, adminClient } from './extras.js';
import { host } from './host.js';
import { rendererRegistry } from './renderers.js';
import { openaiHandler } from './openai.js';
import { withNodeTransport } from './node-transport.js';
import { generalHost } from './general-engine.js';

glue.initSync({ module });
// The environment, files and commands for the core's defaults (host.js).
glue.__setHost(host);

// The general tokenizer engine, read and compiled synchronously on first need.
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
