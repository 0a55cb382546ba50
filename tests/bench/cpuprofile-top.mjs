// Self time per function (or per group) of a V8 .cpuprofile, as the profiles in
// tests/bench/NOTES-issue8.md were read:
//   node --cpu-prof --cpu-prof-dir=prof --cpu-prof-interval 100 tests/bench/driver.mjs sample URL 100 6000 500
//   node tests/bench/cpuprofile-top.mjs prof/*.cpuprofile [N] [--groups]
// --groups sums node internals, wasm, our inline JS, the wasm-bindgen glue, the node
// transport, idle and GC instead of listing functions. Wasm functions have names only in a
// build that kept its name section (see the notes: wasm-bindgen on the cargo output).
import { readFileSync } from 'node:fs';

const [file, ...rest] = process.argv.slice(2);
if (!file) {
  console.error('usage: node tests/bench/cpuprofile-top.mjs FILE.cpuprofile [N] [--groups]');
  process.exit(2);
}
const groups = rest.includes('--groups');
const n = Number(rest.find((a) => /^\d+$/.test(a)) ?? 30);
const p = JSON.parse(readFileSync(file, 'utf8'));
const time = new Map();
p.samples.forEach((id, i) => time.set(id, (time.get(id) ?? 0) + (p.timeDeltas[i] ?? 0)));

const group = ({ url, functionName: f }) => {
  if (url.startsWith('node:')) return 'node internals';
  if (url.includes('.wasm') || /::|wasm-function/.test(f)) return 'wasm';
  if (url.includes('snippets')) return 'our inline JS';
  if (url.includes('tinker_wasm.js')) return 'wasm-bindgen glue';
  if (url.includes('node-transport')) return 'pkg/node-transport.js';
  if (url) return url.split('/').pop();
  return f.startsWith('(') ? f : `native: ${f}`;
};
const name = ({ url, functionName: f }) => (f ? f.replace(/::h[0-9a-f]{16}$/, '') : `(anonymous ${url.split('/').pop()})`);

const sums = new Map();
let total = 0;
for (const node of p.nodes) {
  const t = time.get(node.id) ?? 0;
  total += t;
  const k = groups ? group(node.callFrame) : name(node.callFrame);
  sums.set(k, (sums.get(k) ?? 0) + t);
}
for (const [k, t] of [...sums].sort((a, b) => b[1] - a[1]).slice(0, n)) {
  console.log(`${((100 * t) / total).toFixed(1).padStart(5)} %  ${k.slice(0, 150)}`);
}
