// Node runner: registers every cross-runtime case with node:test.
//   node --test tests/js/node.test.mjs
import { test, after } from 'node:test';
import suites from './cases/index.js';
import { startStaticServer } from './run-browser.mjs';

// The repository on loopback, for cases that fetch fixture files (as the browser page does).
const files = await startStaticServer();
after(() => files.close());
const ctx = { runtime: 'node', env: { TINKER_TEST_FILES_URL: `http://127.0.0.1:${files.address().port}`, ...process.env } };
const filter = process.env.TEST_FILTER || null;

for (const [suite, cases] of Object.entries(suites)) {
  for (const [name, fn] of Object.entries(cases)) {
    const full = `${suite}: ${name}`;
    test(`[node] ${full}`, { skip: filter && !full.includes(filter) ? 'filtered' : false, timeout: 120_000 }, () => fn(ctx));
  }
}
