// tinker-wasm/lite for Node.js (ESM, and require() on Node >= 20.19): loads the wasm synchronously
// from the file next to this one, so importing is enough, no init call.
import { readFileSync } from 'node:fs';
import { initSync } from '../gen/lite/tinker_wasm.js';

initSync({ module: readFileSync(new URL('../gen/lite/tinker_wasm_bg.wasm', import.meta.url)) });

export * from '../gen/lite/tinker_wasm.js';
