// Node runner: starts a fresh simulator and a loopback file server, then registers every
// cross-runtime case with node:test.   node --test tests/js/node.test.mjs
// TINKER_TEST_MODULE=lite runs them against tinker-wasm/lite (tests/js/matrix.js): a module
// hook maps the cases' `tinker-wasm` to it, and the tokenizer suites are left out by name.
import { test, after } from 'node:test';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { MODULES, selectCases, cellTag } from './matrix.js';
import { startStaticServer } from './run-browser.mjs';
import { startSim } from './sim.mjs';

const module = process.env.TINKER_TEST_MODULE || 'full';
if (!Object.hasOwn(MODULES, module)) throw new Error(`TINKER_TEST_MODULE=${module}: expected ${Object.keys(MODULES).join(' or ')}`);
if (module === 'lite') await import('./node-lite.mjs');
// Imported after the hook is in place.
const { default: suites } = await import('./cases/index.js');

// The repository on loopback, for cases that fetch fixture files (as the browser page does).
const files = await startStaticServer();
const sim = await startSim(['--cors', '--seed', '7']);
after(() => Promise.all([files.close(), sim.stop()]));

// Node-only capabilities for the few cases that test Node-only features (files on disk).
const ctx = { runtime: 'node', module, node: { fs, os, path }, env: { TINKER_TEST_FILES_URL: `http://127.0.0.1:${files.address().port}`, ...process.env, SIM_URL: sim.url } };
const filter = process.env.TEST_FILTER || null;
const tag = cellTag('node', module);

// A filter registers only the cases it matches (none skipped-as-passed), and a selection
// that is empty (a filter matching nothing, or no case left for the module) fails the run
// instead of passing it empty.
const selected = selectCases(suites, { module, filter });
// TINKER_COVERAGE_OUT=FILE: record which public members each case really uses
// (tests/js/access-recorder.mjs), for tests/js/coverage.mjs --accesses FILE.
const recorder = process.env.TINKER_COVERAGE_OUT ? await import('./access-recorder.mjs') : null;
if (recorder) {
  const { publicSurface } = await import('./coverage.mjs');
  recorder.instrument(await import('tinker-wasm'), publicSurface());
  after(() => recorder.save(process.env.TINKER_COVERAGE_OUT));
}
for (const { name, fn } of selected) {
  test(`[${tag}] ${name}`, { timeout: 120_000 }, async () => {
    recorder?.setCase(name);
    try {
      await fn(ctx);
    } finally {
      recorder?.setCase(null);
    }
  });
}
if (selected.length === 0) {
  test(`[${tag}] the selection has cases`, () => {
    throw new Error(`no case selected for module ${module}${filter ? ` with TEST_FILTER=${JSON.stringify(filter)}` : ''}`);
  });
}
