// The cross-runtime cases inside Bun or Deno, started by tests/js/run-matrix.mjs (which
// maps `tinker-wasm` to the module under test, serves the fixture files and runs the
// simulator). Configuration comes as one JSON argument, not from the environment, so Deno
// runs with the permissions a user of the package grants and no more:
//   bun tests/js/run-cases.mjs CONFIG     deno run [permissions] tests/js/run-cases.mjs CONFIG
// CONFIG: { runtime, module, env: { SIM_URL, TINKER_TEST_FILES_URL, … }, filter, downloadDir }.
// Prints the results as one line `RESULTS <json>` (the runner reports them) and exits.
import * as fs from 'node:fs';
import * as path from 'node:path';
import suites from './cases/index.js';
import { runSuites } from './harness.js';

const cfg = JSON.parse((globalThis.Deno ? Deno.args : process.argv.slice(2))[0]);
const ctx = { runtime: cfg.runtime, module: cfg.module, env: cfg.env };
// Both runtimes have Node's fs: the case that downloads a checkpoint to a directory runs
// too, in a directory of the runner's (the only place Deno may write to).
if (cfg.downloadDir) ctx.node = { fs, path, os: { tmpdir: () => cfg.downloadDir } };
const results = await runSuites(suites, ctx, { filter: cfg.filter, module: cfg.module });
console.log(`RESULTS ${JSON.stringify(results)}`);
// Keep-alive sockets and the clients' timers must not keep the process up once reported.
process.exit(0);
