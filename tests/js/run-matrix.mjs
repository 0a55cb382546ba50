// The runtime × module matrix of the cross-runtime cases (tests/js/matrix.js), cell by cell,
// each against a fresh simulator, with `tinker-wasm` mapped to the module under test by the
// runtime's own mechanism; prints every result and a summary, and exits non-zero if any case
// fails or a cell runs no case.
//   node tests/js/run-matrix.mjs [CELL…]      CELL = RUNTIME[:MODULE], MODULE = full | lite
//                                             (both when left out); default: every cell
// `make test` runs the Bun and Deno cells through here (test-bun, test-deno), and the others
// through their own runners (node --test tests/js/node.test.mjs, run-browser.mjs,
// run-workerd.mjs), which this reuses:
//   node      run-cases.mjs in a child node; lite: a module resolve hook (node-lite.mjs)
//   browser   run-browser.mjs's page in Debian's chromium; lite: its import map
//   workerd   run-workerd.mjs's bundle in miniflare; lite: its esbuild resolve plugin
//   bun       the package from node_modules (`bun` condition); lite: tsconfig `paths` maps
//             `tinker-wasm` to the file Bun resolves `tinker-wasm/lite` to (--tsconfig-override)
//   deno      the package from node_modules (`deno` condition); lite: an import map
//             (`npm:tinker-wasm/lite`, resolved from node_modules)
//   deno-npm  `npm:tinker-wasm@VERSION` resolved by Deno's npm installer from the packed
//             tarball of pkg/ (deno.json `links`), as a user of the published package gets it
// Bun and Deno are the npm packages' binaries (node_modules/.bin). Deno runs with the
// permissions the README gives users and nothing else: --allow-net of the loopback host,
// --allow-env of the SDK's four variables, --allow-read of the package (plus read/write of
// one download directory for the case that downloads to disk); the cases get their
// configuration as an argument (tests/js/run-cases.mjs).
import { spawn, execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { report } from './harness.js';
import { MODULES, cellTag } from './matrix.js';
import { startStaticServer, launchChromium, runBrowserCases } from './run-browser.mjs';
import { runWorkerdCases } from './run-workerd.mjs';
import { startSim } from './sim.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '../..');
const work = path.join(root, 'target/js-matrix');
const BUN = path.join(root, 'node_modules/.bin/bun');
const DENO = path.join(root, 'node_modules/.bin/deno');
const RUN_CASES = path.join(here, 'run-cases.mjs');

/** What a Deno user of the package grants (README, Runtimes): the SDK reads these variables. */
export const DENO_ENV = ['TINKER_API_KEY', 'TINKER_BASE_URL', 'TINKER_PROJECT_ID', 'TINKER_TAGS'];
export const denoPermissions = ({ packageDir, host = '127.0.0.1', extraDir = null }) => [
  `--allow-net=${host}`,
  `--allow-env=${DENO_ENV.join(',')}`,
  `--allow-read=${[packageDir, extraDir].filter(Boolean).join(',')}`,
  ...(extraDir ? [`--allow-write=${extraDir}`] : []),
  '--no-prompt',
];

const RUNTIMES = ['node', 'browser', 'workerd', 'bun', 'deno', 'deno-npm'];

function parseCells(argv) {
  const cells = [];
  for (const arg of argv.length ? argv : RUNTIMES) {
    const [runtime, module] = arg.split(':');
    if (!RUNTIMES.includes(runtime)) throw new Error(`unknown runtime ${runtime} (expected ${RUNTIMES.join(', ')})`);
    if (module && !Object.hasOwn(MODULES, module)) throw new Error(`unknown module ${module} (expected ${Object.keys(MODULES).join(', ')})`);
    for (const m of module ? [module] : Object.keys(MODULES)) cells.push({ runtime, module: m });
  }
  return cells;
}

/** Runs `cmd`; resolves to its exit code and output (stdout and stderr are also echoed, except the results line). */
function run(cmd, args, { cwd = root, tag }) {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { cwd, env: process.env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (c) => (out += c));
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (c) => process.stderr.write(c.replace(/^(?=.)/gm, `# [${tag}] `)));
    child.on('error', reject);
    child.on('exit', (code, signal) => resolve({ code: code ?? signal, out }));
  });
}

/** The results a run-cases.mjs process printed, or one failed result saying why there are none. */
function parseResults({ code, out }, tag) {
  const lines = out.split('\n');
  const line = lines.find((l) => l.startsWith('RESULTS '));
  for (const l of lines) if (l && l !== line) console.log(`# [${tag}] ${l}`);
  if (!line) return [{ name: 'run-cases.mjs', ok: false, ms: 0, error: `exited ${code} without results` }];
  const results = JSON.parse(line.slice('RESULTS '.length));
  if (code !== 0) results.push({ name: 'run-cases.mjs', ok: false, ms: 0, error: `exited ${code}` });
  return results;
}

/** pkg/ packed by npm and unpacked: the files a user of the published package receives. */
function packedPackage() {
  const dir = path.join(work, 'packed');
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(path.join(dir, 'package'), { recursive: true });
  const [{ filename }] = JSON.parse(execFileSync('npm', ['pack', path.join(root, 'pkg'), '--json', '--pack-destination', dir], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] }));
  execFileSync('tar', ['xzf', path.join(dir, filename), '-C', path.join(dir, 'package'), '--strip-components=1']);
  return path.join(dir, 'package');
}

/** The command line of one cell (runtime × module); `cfg` goes to run-cases.mjs. */
function cellCommand({ runtime, module }, cfg) {
  const cellDir = path.join(work, `${runtime}-${module}`);
  rmSync(cellDir, { recursive: true, force: true });
  mkdirSync(cellDir, { recursive: true });
  const downloadDir = mkdtempSync(path.join(cellDir, 'downloads-'));
  const config = (extra) => JSON.stringify({ ...cfg, runtime: runtime.replace(/-npm$/, ''), module, downloadDir, ...extra });
  if (runtime === 'node') {
    const args = module === 'full' ? [] : ['--import', path.join(here, 'node-lite.mjs')];
    return { cmd: process.execPath, args: [...args, RUN_CASES, config()], cwd: root };
  }
  if (runtime === 'bun') {
    const args = [];
    if (module !== 'full') {
      // Bun's own mapping: tsconfig `paths`, to the file its `bun` condition picks for the module.
      const target = execFileSync(BUN, ['-e', `console.log(Bun.resolveSync(${JSON.stringify(MODULES[module])}, ${JSON.stringify(path.join(here, 'cases'))}))`], { encoding: 'utf8' }).trim();
      const tsconfig = path.join(cellDir, 'tsconfig.json');
      writeFileSync(tsconfig, JSON.stringify({ compilerOptions: { paths: { 'tinker-wasm': [target] } } }, null, 2));
      args.push(`--tsconfig-override=${tsconfig}`);
    }
    return { cmd: BUN, args: [...args, RUN_CASES, config()], cwd: root };
  }
  if (runtime === 'deno') {
    // The repository's package.json and node_modules: Deno resolves bare specifiers from
    // node_modules (its "manual" node_modules mode), as in any npm-installed project.
    const args = [];
    if (module !== 'full') {
      const map = path.join(cellDir, 'import-map.json');
      writeFileSync(map, JSON.stringify({ imports: { 'tinker-wasm': `npm:${MODULES[module]}` } }, null, 2));
      args.push(`--import-map=${map}`);
    }
    const packageDir = realpathSync(path.join(root, 'node_modules/tinker-wasm'));
    return { cmd: DENO, args: ['run', '--no-lock', ...denoPermissions({ packageDir, extraDir: downloadDir }), ...args, RUN_CASES, config()], cwd: root };
  }
  // deno-npm: a project whose deno.json links the packed package and maps `tinker-wasm`
  // to an npm: specifier of it; Deno installs it into the project's node_modules.
  const packed = packedPackage();
  const { version } = JSON.parse(readFileSync(path.join(packed, 'package.json'), 'utf8'));
  const spec = (sub) => `npm:tinker-wasm@${version}${sub}`;
  writeFileSync(
    path.join(cellDir, 'deno.json'),
    JSON.stringify({ nodeModulesDir: 'auto', links: [packed], imports: { 'tinker-wasm': spec(module === 'lite' ? '/lite' : ''), 'tinker-wasm/lite': spec('/lite'), 'tinker-wasm/cookbook': spec('/cookbook') } }, null, 2),
  );
  const packageDir = path.join(cellDir, `node_modules/.deno/tinker-wasm@${version}/node_modules/tinker-wasm`);
  return { cmd: DENO, args: ['run', '--config', path.join(cellDir, 'deno.json'), ...denoPermissions({ packageDir, extraDir: downloadDir }), RUN_CASES, config()], cwd: cellDir };
}

/** Runs one cell against a fresh simulator and file server; returns its results. */
export async function runCell(cell, filter = process.env.TEST_FILTER || null) {
  const tag = cellTag(cell.runtime, cell.module);
  if (cell.runtime === 'workerd') return runWorkerdCases(cell.module, filter);
  if (cell.runtime === 'browser') {
    const browser = await launchChromium();
    try {
      return await runBrowserCases(browser, cell.module, filter);
    } finally {
      await browser.close();
    }
  }
  const files = await startStaticServer();
  const sim = await startSim(['--cors', '--seed', '7']);
  try {
    const env = {
      ...Object.fromEntries(Object.entries(process.env).filter(([k]) => k.startsWith('TINKER_') || k.startsWith('SIM_'))),
      TINKER_TEST_FILES_URL: `http://127.0.0.1:${files.address().port}`,
      SIM_URL: sim.url,
    };
    const { cmd, args, cwd } = cellCommand(cell, { env, filter });
    return parseResults(await run(cmd, args, { cwd, tag }), tag);
  } finally {
    files.close();
    await sim.stop();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const cells = parseCells(process.argv.slice(2));
  let failed = 0;
  const summary = [];
  for (const cell of cells) {
    const t0 = performance.now();
    const results = await runCell(cell);
    const f = report(cellTag(cell.runtime, cell.module), results);
    failed += f;
    summary.push(`# ${cellTag(cell.runtime, cell.module).padEnd(14)} ${results.filter((r) => r.ok).length}/${results.length} passed (${((performance.now() - t0) / 1000).toFixed(1)} s)`);
    // The failures again under the summary, so the end of a CI log names them.
    for (const r of results.filter((x) => !x.ok)) summary.push(`#   not ok: ${r.name}: ${r.error.split('\n').slice(0, 3).join(' | ')}`);
  }
  console.log(summary.join('\n'));
  process.exit(failed ? 1 : 0);
}
