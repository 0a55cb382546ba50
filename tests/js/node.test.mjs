// Node runner: starts a fresh simulator and a loopback file server, then registers every
// cross-runtime case with node:test.   node --test tests/js/node.test.mjs
import { test, after } from 'node:test';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import suites from './cases/index.js';
import { startStaticServer } from './run-browser.mjs';
import { startSim } from './sim.mjs';

// The repository on loopback, for cases that fetch fixture files (as the browser page does).
const files = await startStaticServer();
const sim = await startSim(['--cors', '--seed', '7']);
after(() => Promise.all([files.close(), sim.stop()]));

// Node-only capabilities for the few cases that test Node-only features (files on disk).
const ctx = { runtime: 'node', node: { fs, os, path }, env: { TINKER_TEST_FILES_URL: `http://127.0.0.1:${files.address().port}`, ...process.env, SIM_URL: sim.url } };
const filter = process.env.TEST_FILTER || null;

// A filter registers only the cases it matches (none skipped-as-passed), and one that
// matches nothing fails the run instead of passing it empty.
let registered = 0;
for (const [suite, cases] of Object.entries(suites)) {
  for (const [name, fn] of Object.entries(cases)) {
    const full = `${suite}: ${name}`;
    if (filter && !full.includes(filter)) continue;
    registered++;
    test(`[node] ${full}`, { timeout: 120_000 }, () => fn(ctx));
  }
}
if (registered === 0) {
  test('[node] TEST_FILTER matches a case', () => {
    throw new Error(`TEST_FILTER=${JSON.stringify(filter)} matches no case`);
  });
}
