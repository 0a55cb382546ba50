// Writes the seeds of the tokenizer_prepared fuzz target into fuzz/seeds/tokenizer_prepared/
// (committed): the bodies (the form without its 24-byte header, which the target seals anew)
// of the prepared forms of the tiny tokenizer.json seeds of tokenizer_json, as the package's
// Tokenizer.fromURL puts them in its cache. Run from the repository root after `make build`:
//   node fuzz/make_prepared_seeds.mjs
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { Tokenizer } from '../pkg/index.js';

const out = 'fuzz/seeds/tokenizer_prepared';
mkdirSync(out, { recursive: true });
for (const name of ['tokenizer-qwen3', 'tokenizer-llama3']) {
  const json = readFileSync(`fuzz/seeds/tokenizer_json/${name}.json`).subarray(1); // after the flag byte
  const store = new Map();
  const cache = { match: async () => undefined, put: async (u, r) => void store.set(u, new Uint8Array(await r.arrayBuffer())) };
  const url = `https://seeds.invalid/${name}/tokenizer.json`;
  (await Tokenizer.fromURL(url, { cache, fetch: async () => new Response(json) })).free();
  const form = [...store].find(([u]) => u !== url)?.[1];
  if (!form) throw new Error(`${name}: no prepared form (not on the fast path?)`);
  writeFileSync(`${out}/${name}.body`, form.subarray(24));
  console.log(`${out}/${name}.body: ${form.length - 24} bytes`);
}
