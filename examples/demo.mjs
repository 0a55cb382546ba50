// `make demo`: the main job of the SDK, end to end, against a local Tinker simulator.
// (Foundation stage: loads the package built from the Rust crate and exercises its wasm.)
import * as tinker from 'tinker-wasm';

console.log(`tinker-wasm ${tinker.version()} loaded in Node ${process.versions.node}`);
console.log('AdamParams defaults from the Rust core:', tinker.normalizeAdamParams({}));
const t0 = Date.now();
await tinker.sleep(50);
console.log(`slept ${Date.now() - t0} ms on a wasm-side timer`);
