// Encode throughput of one tokenizer build, round by round (issue 21's notes in
// BENCHMARKS.md): each round loads a fresh tokenizer from tokenizer.json and encodes the
// bench corpus one call per document twice, "cold" (every cache empty) then "warm" (every
// word cached). Round 1 is also the process's first use of the module's code (V8 runs it
// partly in its baseline tier); later rounds run optimized code. PKG points at another
// build's package to compare builds, e.g. the module at opt-level 3:
//   CARGO_PROFILE_RELEASE_OPT_LEVEL=3 CARGO_TARGET_DIR=target/wasm-o3 \
//     cargo build --release --target wasm32-unknown-unknown
//   wasm-bindgen --target web --weak-refs --out-dir /tmp/o3 --out-name tinker_wasm \
//     target/wasm-o3/wasm32-unknown-unknown/release/tinker_wasm.wasm
//   cp -r pkg /tmp/o3-pkg && rm -r /tmp/o3-pkg/gen/full && cp -r /tmp/o3 /tmp/o3-pkg/gen/full
//   PKG=/tmp/o3-pkg/index.js node tests/bench/tokenizer_rounds.mjs TOKENIZER_JSON [ROUNDS]
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { buildBenchCorpus } from '../tokenizer/corpus.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const pkg = process.env.PKG ?? path.join(root, 'pkg/index.js');
const { Tokenizer } = await import(pathToFileURL(pkg).href);
const [file, rounds = '3'] = process.argv.slice(2);
if (!file) {
  console.error('usage: [PKG=…/index.js] node tests/bench/tokenizer_rounds.mjs TOKENIZER_JSON [ROUNDS]');
  process.exit(2);
}
// Through JSON, as tests/bench/tokenizer.mjs reads the corpus (the builder's own strings,
// made by concatenation, gave slower and noisier figures here; not looked into yet).
const texts = JSON.parse(JSON.stringify(buildBenchCorpus().map((d) => d.text)));
const json = readFileSync(file);
const bytes = texts.reduce((n, s) => n + Buffer.byteLength(s), 0);
const pass = (t) => {
  const t0 = performance.now();
  for (const s of texts) t.encode(s);
  return performance.now() - t0;
};
for (let round = 1; round <= Number(rounds); round++) {
  const t = Tokenizer.fromJSON(json);
  const cold = pass(t);
  const warm = pass(t);
  t.free();
  const mbps = (ms) => (bytes / ms / 1e3).toFixed(2);
  console.log(`round ${round}: cold ${mbps(cold)} MB/s (${cold.toFixed(1)} ms), warm ${mbps(warm)} MB/s (${warm.toFixed(1)} ms)`);
}
