// The documents whose code blocks `make test-readme` runs or type-checks: the README and
// every guide of the documentation site (www/docs/guides, rendered with the API reference by
// `make docs`).
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const guides = 'www/docs/guides';

/** `[{ file, text }]`: README.md, then the guides in name order. */
export function docFiles() {
  const names = ['README.md', ...readdirSync(path.join(root, guides)).filter((f) => f.endsWith('.md')).sort().map((f) => `${guides}/${f}`)];
  return names.map((file) => ({ file, text: readFileSync(path.join(root, file), 'utf8') }));
}

/** The heading a position of `text` falls under (any level), for naming a block. */
export function headingAt(text, index) {
  return [...text.slice(0, index).matchAll(/^#{1,4} (.+)$/gm)].at(-1)?.[1] ?? 'top';
}

/** The 1-based line of a position. */
export const lineAt = (text, index) => text.slice(0, index).split('\n').length;
