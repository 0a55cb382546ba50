// workerd runner: bundles tests/js/worker.js the way wrangler does (esbuild, conditions
// 'workerd'/'worker'/'browser', each '*.wasm' import kept as a CompiledWasm module), then
// runs it in miniflare's workerd and reports the cases' results. With `--module lite`, an
// esbuild resolve plugin maps the cases' `tinker-wasm` to `tinker-wasm/lite`, resolved through
// the same conditions (tests/js/matrix.js).
//   node tests/js/run-workerd.mjs [--module full,lite]
import path from 'node:path';
import { mkdir, copyFile } from 'node:fs/promises';
import { createHash } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import * as esbuild from 'esbuild';
import { Miniflare } from 'miniflare';
import { report } from './harness.js';
import { MODULES, cellTag, modulesToTest } from './matrix.js';
import { startSim } from './sim.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));

/** Bundles a worker entry for workerd; returns miniflare module options. `module: 'lite'`
 *  maps the bare `tinker-wasm` to `tinker-wasm/lite` (tests/js/matrix.js). */
export async function bundleWorker(entry, outName, { module = 'full' } = {}) {
  const outdir = path.join(here, '.out', outName);
  await mkdir(outdir, { recursive: true });
  const wasmModules = [];
  const wasmPlugin = {
    name: 'compiled-wasm',
    setup(build) {
      build.onResolve({ filter: /\.wasm$/ }, async (args) => {
        const abs = path.resolve(args.resolveDir, args.path);
        const name = `${createHash('sha256').update(abs).digest('hex').slice(0, 8)}-${path.basename(abs)}`;
        await copyFile(abs, path.join(outdir, name));
        if (!wasmModules.includes(name)) wasmModules.push(name);
        return { path: `./${name}`, external: true };
      });
    },
  };
  // The module under test: `tinker-wasm` resolved as MODULES[module] is, conditions and all.
  const mapModule = {
    name: 'module-under-test',
    setup(build) {
      if (module === 'full') return;
      build.onResolve({ filter: /^tinker-wasm$/ }, (args) => build.resolve(MODULES[module], { kind: args.kind, resolveDir: args.resolveDir }));
    },
  };
  await esbuild.build({
    entryPoints: [entry],
    bundle: true,
    format: 'esm',
    platform: 'neutral',
    target: 'es2022',
    conditions: ['workerd', 'worker', 'browser'],
    mainFields: ['module', 'main'],
    outfile: path.join(outdir, 'worker.mjs'),
    plugins: [mapModule, wasmPlugin],
    logLevel: 'error',
  });
  return {
    modulesRoot: outdir,
    modules: [
      { type: 'ESModule', path: path.join(outdir, 'worker.mjs') },
      ...wasmModules.map((m) => ({ type: 'CompiledWasm', path: path.join(outdir, m) })),
    ],
  };
}

/** Runs the cases for `module` in a fresh miniflare against a fresh simulator; returns the results. */
export async function runWorkerdCases(module, filter = process.env.TEST_FILTER || null) {
  // The repository on loopback, for cases that fetch fixture files (as the browser page does).
  const { startStaticServer } = await import('./run-browser.mjs');
  const bundle = await bundleWorker(path.join(here, 'worker.js'), `cases-${module}`, { module });
  const files = await startStaticServer();
  const sim = await startSim(['--cors', '--seed', '7']);
  // The fresh simulator and file server win over the environment: an ambient SIM_URL
  // must not point the suite at some other server.
  const bindings = {
    ...Object.fromEntries(Object.entries(process.env).filter(([k]) => k.startsWith('TINKER_') || k.startsWith('SIM_'))),
    TINKER_TEST_FILES_URL: `http://127.0.0.1:${files.address().port}`,
    SIM_URL: sim.url,
  };
  const mf = new Miniflare({
    ...bundle,
    compatibilityDate: '2026-04-01',
    // No request.cf data: miniflare would otherwise fetch it from workers.cloudflare.com.
    cf: false,
    bindings,
  });
  try {
    const query = new URLSearchParams({ module, ...(filter ? { filter } : {}) });
    const res = await mf.dispatchFetch(`http://localhost/?${query}`);
    const text = await res.text();
    try {
      return JSON.parse(text);
    } catch {
      return [{ name: 'worker', ok: false, ms: 0, error: `HTTP ${res.status}: ${text.slice(0, 2000)}` }];
    }
  } finally {
    await mf.dispose();
    await sim.stop();
    files.close();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  let failed = 0;
  for (const module of modulesToTest(process.argv.slice(2), process.env.TINKER_TEST_MODULE)) failed += report(cellTag('workerd', module), await runWorkerdCases(module));
  process.exit(failed ? 1 : 0);
}
