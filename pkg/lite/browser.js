// tinker-wasm/lite for browsers and bundlers (Vite, webpack, esbuild with a wasm asset
// loader): fetches and compiles the wasm with streaming compilation, then exports the SDK.
// Uses top-level await, so importing is enough, no init call.
import * as glue from '../gen/lite/tinker_wasm.js';
import { install, adminClient } from '../extras.js';

await glue.default({ module_or_path: new URL('../gen/lite/tinker_wasm_bg.wasm', import.meta.url) });

export const { ModelInput, TensorData, datumFromTokens } = install(glue);
export * from '../gen/lite/tinker_wasm.js';
export * from '../errors.js';
export { PagePromise } from '../extras.js';
export const AdminClient = adminClient(glue.RestClient);
