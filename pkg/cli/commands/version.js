// `tinker-wasm version`: the package's version (no wasm loaded).
import { readFileSync } from 'node:fs';

export async function version() {
  const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8'));
  process.stdout.write(`tinker-wasm ${pkg.version}\n`);
}
