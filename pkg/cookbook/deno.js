// tinker-wasm/cookbook for Deno: the whole SDK on the cookbook build of the module
// (pkg/gen/cookbook), and the cookbook's namespaces over it. Mirrors ../deno.js (the same
// permissions).
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as glue from '../gen/cookbook/tinker_wasm.js';
import source module from '../gen/cookbook/tinker_wasm_bg.wasm';
import { install, adminClient } from '../extras.js';
import { host } from '../host.js';
import { rendererRegistry } from '../renderers.js';
import { openaiHandler } from '../openai.js';
import { withNodeTransport } from '../node-transport.js';
import { generalHost } from '../general-engine.js';
import { cookbook } from './cookbook.js';

glue.initSync({ module });
// The environment, files and commands for the core's defaults (../host.js).
glue.__setHost(host);

// The general tokenizer engine, read and compiled synchronously on first need.
glue.__setGeneralTokenizerHost(
  generalHost({ loadSync: () => fs.readFileSync(new URL('../gen/general/tokenizer_general_bg.wasm', import.meta.url)) }),
);

export const { ModelInput, TensorData, datumFromTokens } = install(glue, { fs, path });
export * from '../gen/cookbook/tinker_wasm.js';
export * from '../errors.js';
export const { registerRenderer, unregisterRenderer, getRegisteredRendererNames, isRendererRegistered, getRenderer } = rendererRegistry(glue);
// The OpenAI-compatible handler (./openai.js): `new OpenAI({ baseURL, fetch: openaiFetch(service) })`.
export const openaiFetch = openaiHandler(glue);
// HTTP over node:http(s) keep-alive unless `options.fetch` is given (./node-transport.js).
export const { ServiceClient, RestClient, SamplingClient } = withNodeTransport(glue);
export { PagePromise } from '../extras.js';
export const AdminClient = adminClient(RestClient);

// tinker-cookbook's methods over this module's classes.
export const { supervised, preference, rl, distillation, hyperparams, checkpoints, completers, evaluators, memoryStore, indexedDbStore } = cookbook(
  { ...glue, ServiceClient },
  { fs, path },
);
