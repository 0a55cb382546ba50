// Type-level usage of the published package, checked with `tsc --strict` in `make test`.
// It imports by package name, so it exercises package.json "exports" and "types".
import { version, normalizeAdamParams, sleep } from 'tinker-wasm';
import * as lite from 'tinker-wasm/lite';

const v: string = version();
const l: string = lite.version();
const done: Promise<void> = sleep(1);
normalizeAdamParams({ learning_rate: 1e-3 });
export { v, l, done };
