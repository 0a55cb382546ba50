// Node runner: registers every cross-runtime case with node:test.
//   node --test tests/js/node.test.mjs
import { test } from 'node:test';
import suites from './cases/index.js';

const ctx = { runtime: 'node', env: { ...process.env } };
const filter = process.env.TEST_FILTER || null;

for (const [suite, cases] of Object.entries(suites)) {
  for (const [name, fn] of Object.entries(cases)) {
    const full = `${suite}: ${name}`;
    test(`[node] ${full}`, { skip: filter && !full.includes(filter) ? 'filtered' : false, timeout: 120_000 }, () => fn(ctx));
  }
}
