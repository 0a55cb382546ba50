// Size budget of the npm package (issue 8), run by `make test` (size is deterministic, so
// this is a test; timings are not, so they are only benchmarks). Measures each wasm module
// and the JS glue a runtime loads with it, raw and gzip -9, and fails if a wasm module is
// over its budget, saying by how much.
//   node tests/bench/size-check.mjs          table + verdict, exit 1 when over budget
// Budgets (gzip of the .wasm, 1 KB = 1000 bytes):
//   tinker-wasm/lite (the core, no tokenizer)  ≤ 200 KB
//   tinker-wasm      (with the tokenizer)       ≤ 700 KB
import { readFileSync, existsSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const KB = 1000;

export const BUDGETS = { lite: 200 * KB, full: 700 * KB };

const sizeOf = (files) => {
  const bufs = files.map((f) => readFileSync(path.join(root, f)));
  const all = Buffer.concat(bufs);
  return { files, raw: all.length, gzip: gzipSync(all, { level: 9 }).length };
};

/** Sizes of each variant: the wasm module, and the JS glue its Node entry loads. */
export function measureSizes() {
  const variants = [
    { name: 'full', entry: 'tinker-wasm', dir: 'pkg/gen/full', glue: ['pkg/index.js', 'pkg/extras.js', 'pkg/errors.js'] },
    { name: 'lite', entry: 'tinker-wasm/lite', dir: 'pkg/gen/lite', glue: ['pkg/lite/index.js', 'pkg/extras.js', 'pkg/errors.js'] },
  ];
  return variants.map((v) => {
    const wasmFile = `${v.dir}/tinker_wasm_bg.wasm`;
    if (!existsSync(path.join(root, wasmFile))) throw new Error(`${wasmFile} is missing: build the package first (make wasm)`);
    const wasm = sizeOf([wasmFile]);
    // scripts/build-wasm.sh strips the producers section with wasm-opt; a module that still
    // has it is wasm-pack's intermediate output (a build is under way, or it failed midway).
    const sections = WebAssembly.Module.customSections(new WebAssembly.Module(readFileSync(path.join(root, wasmFile))), 'producers');
    if (sections.length) throw new Error(`${wasmFile} is not the wasm-opt output (it has a producers section): a build is under way or did not finish; run make wasm`);
    const glue = sizeOf([`${v.dir}/tinker_wasm.js`, ...v.glue]);
    return { ...v, wasm, glue, budget: BUDGETS[v.name] };
  });
}

const kb = (n) => `${(n / KB).toFixed(1)} KB`;

/** The markdown table and one verdict line per budget. */
export function report(sizes = measureSizes()) {
  const lines = [
    '| variant | wasm raw | wasm gzip | JS glue raw | JS glue gzip | wasm gzip budget | verdict |',
    '|---|---:|---:|---:|---:|---:|---|',
  ];
  const verdicts = [];
  for (const s of sizes) {
    const over = s.wasm.gzip - s.budget;
    const verdict =
      over > 0
        ? `OVER by ${kb(over)} (${over} bytes, ${((100 * over) / s.budget).toFixed(0)}% over; must shrink to ${((100 * s.budget) / s.wasm.gzip).toFixed(0)}% of today)`
        : `ok, ${kb(-over)} under`;
    lines.push(`| \`${s.entry}\` | ${kb(s.wasm.raw)} | ${kb(s.wasm.gzip)} | ${kb(s.glue.raw)} | ${kb(s.glue.gzip)} | ${kb(s.budget)} | ${verdict} |`);
    verdicts.push({ name: s.name, entry: s.entry, over, ok: over <= 0, text: `${s.entry}: wasm ${s.wasm.gzip} bytes gzip, budget ${s.budget}: ${verdict}` });
  }
  return { table: lines.join('\n'), verdicts };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { table, verdicts } = report();
  console.log(table);
  console.log('');
  for (const v of verdicts) console.log(`${v.ok ? 'ok  ' : 'FAIL'} ${v.text}`);
  const failed = verdicts.filter((v) => !v.ok);
  if (failed.length) {
    console.log(`\nsize budget exceeded (${failed.map((v) => v.entry).join(', ')}): see issue 8; sizes are Node zlib level 9 of pkg/gen/*/tinker_wasm_bg.wasm, 1 KB = 1000 bytes`);
    process.exit(1);
  }
}
