// Preloaded with `node --import` by tests/cli: records every module URL the process
// resolves (to the file in $CLI_LOAD_LOG), and every file it reads synchronously, so a
// test can check what `tinker-wasm --help` / `run list` load.
import { register, syncBuiltinESMExports } from 'node:module';
import fs from 'node:fs';

const log = process.env.CLI_LOAD_LOG;
register('./load-hooks.mjs', import.meta.url, { data: { log } });
const readFileSync = fs.readFileSync;
fs.readFileSync = function (p, ...rest) {
  fs.appendFileSync(log, `read ${p instanceof URL ? p.href : String(p)}\n`);
  return readFileSync.call(this, p, ...rest);
};
syncBuiltinESMExports();
