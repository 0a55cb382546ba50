// Size budget of the npm package (issues 8 and 20), run by `make test` (size is deterministic, so
// this is a test; timings are not, so they are only benchmarks). Measures each wasm module
// and the JS glue a runtime loads with it, raw and gzip -9, and says by how much a module
// is over its budget.
//   node tests/bench/size-check.mjs            table + verdicts; exit 1 over a ceiling
//   node tests/bench/size-check.mjs --strict   exit 1 over a budget (make test-size-strict)
// Budgets (issue 20, after the size hacks came out; gzip of the .wasm, 1 KB = 1000 bytes):
//   tinker-wasm/lite (the core, no tokenizer)                         ≤ 210 KB  (enforced)
//   tinker-wasm      (tokenizers, templates, the cookbook's renderers) ≤ 750 KB  (enforced)
// The general tokenizer engine (HuggingFace `tokenizers` for files other than Qwen2/Qwen3
// and Llama-3) is a third module that the full package loads only when a file needs it;
// it has no budget of its own and is reported next to the others.
// `make test` fails when a module is over a budget listed in ENFORCED, and holds a ratchet
// for every module: tests/bench/size-ceiling.json has a ceiling per module (the size
// measured when it was last lowered, plus 1 %), and any module that grows past it fails.
// Lower a ceiling whenever a module shrinks; never raise one without saying why in the
// commit. A budget joins ENFORCED once it is met.
import { readFileSync, existsSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const KB = 1000;

export const BUDGETS = { lite: 210 * KB, full: 750 * KB, cookbook: null, general: null };
/** Budgets that are met, so `make test` fails when they are exceeded. */
export const ENFORCED = ['full', 'lite'];
export const CEILINGS = JSON.parse(readFileSync(path.join(root, 'tests/bench/size-ceiling.json'), 'utf8')).ceilings;

const sizeOf = (files) => {
  const bufs = files.map((f) => readFileSync(path.join(root, f)));
  const all = Buffer.concat(bufs);
  return { files, raw: all.length, gzip: gzipSync(all, { level: 9 }).length };
};

/** Sizes of each module: the wasm, and the JS glue its Node entry loads with it. */
export function measureSizes() {
  const variants = [
    { name: 'full', entry: 'tinker-wasm', dir: 'pkg/gen/full', glue: ['pkg/index.js', 'pkg/extras.js', 'pkg/errors.js', 'pkg/general-engine.js', 'pkg/gen/general/tokenizer_general.js'] },
    { name: 'lite', entry: 'tinker-wasm/lite', dir: 'pkg/gen/lite', glue: ['pkg/lite/index.js', 'pkg/extras.js', 'pkg/errors.js'] },
    { name: 'cookbook', entry: 'tinker-wasm/cookbook', dir: 'pkg/gen/cookbook', glue: ['pkg/cookbook/index.js', 'pkg/cookbook/cookbook.js', 'pkg/extras.js', 'pkg/errors.js', 'pkg/general-engine.js', 'pkg/gen/general/tokenizer_general.js'], why: 'no budget: the full module and the cookbook\'s methods, loaded only by tinker-wasm/cookbook' },
    { name: 'general', entry: 'tinker-wasm (general tokenizer engine, on demand)', dir: 'pkg/gen/general', base: 'tokenizer_general', glue: [] },
  ];
  return variants.map((v) => {
    const base = v.base ?? 'tinker_wasm';
    const wasmFile = `${v.dir}/${base}_bg.wasm`;
    if (!existsSync(path.join(root, wasmFile))) throw new Error(`${wasmFile} is missing: build the package first (make wasm)`);
    const wasm = sizeOf([wasmFile]);
    // scripts/build-wasm.sh strips the producers section with wasm-opt; a module that still
    // has it is wasm-pack's intermediate output (a build is under way, or it failed midway).
    const sections = WebAssembly.Module.customSections(new WebAssembly.Module(readFileSync(path.join(root, wasmFile))), 'producers');
    if (sections.length) throw new Error(`${wasmFile} is not the wasm-opt output (it has a producers section): a build is under way or did not finish; run make wasm`);
    const glue = sizeOf(v.base ? v.glue : [`${v.dir}/${base}.js`, ...v.glue]);
    return { ...v, wasm, glue, budget: BUDGETS[v.name], ceiling: CEILINGS[v.name] };
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
    const over = s.budget === null ? -Infinity : s.wasm.gzip - s.budget;
    const verdict =
      s.budget === null
        ? (s.why ?? 'no budget: fetched only for tokenizer files the fast path does not take')
        : over > 0
          ? `OVER by ${kb(over)} (${over} bytes, ${((100 * over) / s.budget).toFixed(0)}% over; must shrink to ${((100 * s.budget) / s.wasm.gzip).toFixed(0)}% of today)`
          : `ok, ${kb(-over)} under`;
    const glue = s.glue.files.length ? [kb(s.glue.raw), kb(s.glue.gzip)] : ['(in the full row)', ''];
    lines.push(`| \`${s.entry}\` | ${kb(s.wasm.raw)} | ${kb(s.wasm.gzip)} | ${glue[0]} | ${glue[1]} | ${s.budget === null ? '—' : kb(s.budget)} | ${verdict} |`);
    const aboveCeiling = s.wasm.gzip - s.ceiling;
    const ratchet =
      aboveCeiling > 0
        ? `GREW past its ceiling ${s.ceiling} by ${aboveCeiling} bytes`
        : `within its ceiling ${s.ceiling} (${-aboveCeiling} bytes to spare${-aboveCeiling > 0.02 * s.ceiling ? '; it shrank: lower the ceiling in tests/bench/size-ceiling.json' : ''})`;
    verdicts.push({
      name: s.name,
      entry: s.entry,
      over,
      ok: over <= 0,
      budgeted: s.budget !== null,
      enforced: ENFORCED.includes(s.name),
      held: aboveCeiling <= 0,
      text: `${s.entry}: wasm ${s.wasm.gzip} bytes gzip, budget ${s.budget}: ${verdict}`,
      ratchet: `${s.entry}: ${ratchet}`,
    });
  }
  return { table: lines.join('\n'), verdicts };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const strict = process.argv.includes('--strict');
  const { table, verdicts } = report();
  console.log(table);
  console.log('');
  for (const v of verdicts.filter((v) => v.budgeted)) console.log(`${v.ok ? 'ok    ' : v.enforced ? 'FAIL  ' : 'MISSED'} budget:  ${v.text}`);
  for (const v of verdicts) console.log(`${v.held ? 'ok    ' : 'FAIL  '} ceiling: ${v.ratchet}`);
  const missed = verdicts.filter((v) => !v.ok);
  const broken = missed.filter((v) => v.enforced);
  const grew = verdicts.filter((v) => !v.held);
  if (missed.length) {
    console.log(`\nsize budget MISSED (${missed.map((v) => v.entry).join(', ')})${broken.length ? '' : ': see issue 20'}; sizes are Node zlib level 9 of pkg/gen/*/*_bg.wasm, 1 KB = 1000 bytes`);
  }
  if (broken.length) console.log(`\nFAIL: ${broken.map((v) => v.entry).join(', ')} is over its budget (enforced: it was met)`);
  if (grew.length) console.log(`\nFAIL: ${grew.map((v) => v.entry).join(', ')} grew past the ceiling in tests/bench/size-ceiling.json`);
  if (broken.length || grew.length || (strict && missed.length)) process.exit(1);
}
