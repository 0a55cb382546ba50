// tinker-wasm/cookbook for browsers and bundlers: the whole SDK on the cookbook build of the
// module (pkg/gen/cookbook), and the cookbook's namespaces over it. Mirrors ../browser.js.
import * as glue from '../gen/cookbook/tinker_wasm.js';
import { install, adminClient } from '../extras.js';
import { rendererRegistry } from '../renderers.js';
import { openaiHandler } from '../openai.js';
import { generalHost } from '../general-engine.js';
import { cookbook } from './cookbook.js';

await glue.default({ module_or_path: new URL('../gen/cookbook/tinker_wasm_bg.wasm', import.meta.url) });

// The general tokenizer engine: fetched on first need (fromURL, getTokenizer,
// Tokenizer.loadGeneralEngine()).
glue.__setGeneralTokenizerHost(
  generalHost({ load: () => new URL('../gen/general/tokenizer_general_bg.wasm', import.meta.url) }),
);

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
