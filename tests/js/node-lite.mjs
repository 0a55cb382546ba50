// Maps the bare `tinker-wasm` to `tinker-wasm/lite` in this Node process (the lite cells of
// the case matrix, tests/js/matrix.js), through the hooks in node-hooks.mjs:
//   node --import ./tests/js/node-lite.mjs …      (or imported before the cases are)
import { register } from 'node:module';
import { MODULES } from './matrix.js';

register('./node-hooks.mjs', import.meta.url, { data: { target: MODULES.lite } });
