// tinker-wasm/cookbook for Cloudflare Workers: the whole SDK on the cookbook build of the
// module (pkg/gen/cookbook, a precompiled import), and the cookbook's namespaces over it.
// Mirrors ../workerd.js.
import * as glue from '../gen/cookbook/tinker_wasm.js';
import module from '../gen/cookbook/tinker_wasm_bg.wasm';
import generalModule from '../gen/general/tokenizer_general_bg.wasm';
import { install, adminClient } from '../extras.js';
import { rendererRegistry } from '../renderers.js';
import { openaiHandler } from '../openai.js';
import { generalHost } from '../general-engine.js';
import { cookbook } from './cookbook.js';

glue.initSync({ module });

// The general tokenizer engine (also a precompiled import), instantiated on first need.
glue.__setGeneralTokenizerHost(generalHost({ loadSync: () => generalModule }));

export const { ModelInput, TensorData, datumFromTokens } = install(glue);
export * from '../gen/cookbook/tinker_wasm.js';
export * from '../errors.js';
export const { registerRenderer, unregisterRenderer, getRegisteredRendererNames, isRendererRegistered, getRenderer } = rendererRegistry(glue);
// The OpenAI-compatible handler (./openai.js): `new OpenAI({ baseURL, fetch: openaiFetch(service) })`.
export const openaiFetch = openaiHandler(glue);
export { PagePromise } from '../extras.js';
export const AdminClient = adminClient(glue.RestClient);

// tinker-cookbook's methods over this module's classes.
export const { supervised, preference, rl, distillation, hyperparams, checkpoints, completers, evaluators, memoryStore, indexedDbStore } = cookbook(
  glue,
);
