// Module hooks of record-loads.mjs: appends each resolved URL to the log file.
import fs from 'node:fs';

let log = null;
export function initialize(data) {
  log = data.log;
}
export async function resolve(specifier, context, next) {
  const r = await next(specifier, context);
  if (log) fs.appendFileSync(log, `module ${r.url}\n`);
  return r;
}
