// tinker-wasm for Cloudflare Workers (workerd): Workers refuse to compile wasm bytes at run
// time, so the module arrives precompiled through a static import (wrangler and miniflare
// turn '*.wasm' imports into WebAssembly.Module) and is instantiated synchronously.
import { initSync } from './gen/full/tinker_wasm.js';
import module from './gen/full/tinker_wasm_bg.wasm';

initSync({ module });

export * from './gen/full/tinker_wasm.js';
