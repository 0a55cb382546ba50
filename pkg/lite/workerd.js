// tinker-wasm/lite for Cloudflare Workers (workerd): Workers refuse to compile wasm
// bytes at run time, so the module arrives precompiled through a static import (wrangler
// and miniflare turn '*.wasm' imports into WebAssembly.Module) and is instantiated
// synchronously.
import * as glue from '../gen/lite/tinker_wasm.js';
import module from '../gen/lite/tinker_wasm_bg.wasm';
import { install, adminClient } from '../extras.js';

glue.initSync({ module });

export const { ModelInput, TensorData, datumFromTokens } = install(glue);
export * from '../gen/lite/tinker_wasm.js';
export * from '../errors.js';
export { PagePromise } from '../extras.js';
export const AdminClient = adminClient(glue.RestClient);
