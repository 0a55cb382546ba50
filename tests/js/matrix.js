// The runtime × module matrix of the cross-runtime cases (runtime-neutral: imported by the
// runners in Node, and by the cases' host in Chromium, workerd, Bun and Deno).
//
// The cases import the bare specifier `tinker-wasm`. Each runner maps it to the module under
// test with its runtime's own mechanism, so the very same case files test both modules:
//   full  `tinker-wasm` as the runtime resolves it (its export condition's entry)
//   lite  `tinker-wasm` → `tinker-wasm/lite`, the tokenizer suites left out by name
// `tinker-wasm/lite` itself (the smoke and tokenizer cases compare the two) stays what it is,
// and the first case of every selection checks that the mapping took effect.
//
//   runtime   runner (make target)                   lite mapping
//   node      node.test.mjs (test-node, -node-lite)  a module resolve hook (node-lite.mjs), TINKER_TEST_MODULE=lite
//   browser   run-browser.mjs (test-browser)         the page's import map, --module lite
//   workerd   run-workerd.mjs (test-workerd)         an esbuild resolve plugin in the bundle, --module lite
//   bun       run-matrix.mjs bun (test-bun)          tsconfig `paths` (--tsconfig-override)
//   deno      run-matrix.mjs deno (test-deno)        an import map (--import-map)
//   deno-npm  run-matrix.mjs deno-npm (test-deno)    deno.json `imports` (npm: specifiers of the packed tarball)

export const MODULES = { full: 'tinker-wasm', lite: 'tinker-wasm/lite' };

// Suites not run against tinker-wasm/lite: they test the tokenizer or the cookbook (full
// module only), which lite leaves out by design. An explicit list, never inferred from errors; every name must be a suite.
export const LITE_EXCLUDED_SUITES = ['get-tokenizer', 'surface-tokenizer', 'tokenizer', 'cookbook', 'openai'];

/**
 * The cases to run for `module` ('full' | 'lite'), in order, as `{ name, fn }`, the name
 * being `suite: case`, after one that checks the mapping (none at all when no case is
 * selected). `filter` keeps the names that contain it. Throws on an unknown module
 * or a stale exclusion; an empty selection is the caller's failure to report.
 */
export function selectCases(suites, { module = 'full', filter = null } = {}) {
  if (!Object.hasOwn(MODULES, module)) throw new Error(`unknown module ${JSON.stringify(module)} (expected ${Object.keys(MODULES).join(' or ')})`);
  for (const s of LITE_EXCLUDED_SUITES) {
    if (!Object.hasOwn(suites, s)) throw new Error(`LITE_EXCLUDED_SUITES names ${JSON.stringify(s)}, which is not a suite of tests/js/cases/index.js`);
  }
  const out = [];
  for (const [suite, cases] of Object.entries(suites)) {
    if (module === 'lite' && LITE_EXCLUDED_SUITES.includes(suite)) continue;
    for (const [name, fn] of Object.entries(cases)) {
      const full = `${suite}: ${name}`;
      if (filter && !full.includes(filter)) continue;
      out.push({ name: full, fn });
    }
  }
  // First, that the mapping took effect: a lite cell that silently tested the full module
  // (or the reverse) would pass for the wrong reason. Not when nothing else is selected.
  if (out.length === 0) return out;
  return [{ name: `matrix: \`tinker-wasm\` is the ${module} module`, fn: () => checkModule(module) }, ...out];
}

/** Throws unless the bare `tinker-wasm`, as this runtime maps it, is `module`'s entry. */
export async function checkModule(module) {
  const [mapped, lite] = await Promise.all([import('tinker-wasm'), import('tinker-wasm/lite')]);
  const isLite = mapped.ServiceClient === lite.ServiceClient;
  if (isLite !== (module === 'lite')) throw new Error(`\`tinker-wasm\` is the ${isLite ? 'lite' : 'full'} module here, not the ${module} one: the runner's mapping did not take effect`);
  if (module === 'full' && typeof mapped.Tokenizer !== 'function') throw new Error('the full module has no Tokenizer');
}

/** The tag a runner prints before each result: `node`, `browser/lite`, `deno-npm/lite`, … */
export const cellTag = (runtime, module) => (module === 'full' ? runtime : `${runtime}/${module}`);

/** The modules a runner tests: `--module full,lite` in `argv`, else `fallback` (e.g.
 *  TINKER_TEST_MODULE), else full. */
export function modulesToTest(argv = [], fallback = null) {
  const i = argv.indexOf('--module');
  const list = String(i >= 0 ? argv[i + 1] : fallback || 'full').split(',').filter(Boolean);
  for (const m of list) if (!Object.hasOwn(MODULES, m)) throw new Error(`unknown module ${JSON.stringify(m)} (expected ${Object.keys(MODULES).join(', ')})`);
  if (!list.length) throw new Error('no module to test');
  return list;
}
