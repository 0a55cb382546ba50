// `tinker-wasm session export-trace` (Python: tinker/cli/commands/session.py).
import * as fs from 'node:fs';
import * as nodePath from 'node:path';
import * as api from '../api.js';
import { printOutput, formatSize } from '../output.js';
import { progressBar } from '../progress.js';
import { CliError, Interrupted } from '../errors.js';
import { checkId } from './checks.js';
import { pyPath } from './checkpoint.js';

export async function exportTrace(ctx, opts, args) {
  const sessionId = args.session_id;
  checkId(sessionId, 'session ID');
  const format = ctx.format;
  if (format !== 'json') process.stderr.write(`Exporting trace for session ${sessionId} (this may take a while)...\n`);
  const url = await api.exportSessionTrace(sessionId);
  if (opts.urlOnly) {
    if (format === 'json') printOutput({ toDict: () => ({ session_id: sessionId, url }), columns: () => [], rows: () => [] }, format);
    else process.stdout.write(`${url}\n`);
    return;
  }
  const tracePath = opts.output ? pyPath(opts.output) : nodePath.join(process.cwd(), `${sessionId}.pftrace`);
  const dir = nodePath.dirname(tracePath);
  if (dir !== '.') fs.mkdirSync(dir, { recursive: true });
  const abort = new AbortController();
  let interrupted = false;
  const onSigint = () => {
    interrupted = true;
    abort.abort(new Error('interrupted'));
  };
  process.on('SIGINT', onSigint);
  let written = 0;
  const tmp = `${tracePath}.part-${process.pid}`;
  try {
    const response = await api.fetchSignedUrl(url, abort.signal);
    if (!response.ok) throw new Error(`HTTP Error ${response.status}: ${response.statusText}`);
    const length = Number(response.headers.get('content-length') ?? 0);
    const bar = progressBar({ length, label: 'Downloading trace', bytes: true, hidden: format === 'json' });
    const out = fs.createWriteStream(tmp);
    try {
      for await (const chunk of response.body) {
        if (!out.write(chunk)) await /** @type {Promise<void>} */ (new Promise((r) => out.once('drain', r)));
        written += chunk.byteLength;
        bar.update(chunk.byteLength);
      }
    } finally {
      bar.finish();
      await new Promise((r) => out.end(r));
    }
    fs.renameSync(tmp, tracePath);
  } catch (caught) {
    const e = /** @type {NodeJS.ErrnoException} */ (caught);
    try {
      fs.rmSync(tmp, { force: true });
    } catch {}
    if (interrupted) throw new Interrupted('interrupted');
    if (e?.code && typeof e.code === 'string' && !/^UND_ERR|^ECONN|^ENOTFOUND|^ETIMEDOUT/.test(e.code)) throw new CliError(`Failed to save trace: ${e.message}`, `Please check that you have write permissions to ${dir}`);
    throw new CliError(`Failed to download trace: ${e?.message ?? e}`, 'The signed URL may have expired (it is valid for about an hour). Re-run the command to get a fresh one.');
  } finally {
    process.off('SIGINT', onSigint);
  }
  printOutput(
    {
      toDict: () => {
        const r = { session_id: sessionId, destination: tracePath };
        if (written > 0) r.file_size_bytes = written;
        return r;
      },
      title: () => `Trace Export: ${sessionId}`,
      columns: () => ['Property', 'Value'],
      rows: () => {
        const rows = [['Session ID', sessionId], ['Saved to', tracePath]];
        if (written > 0) rows.push(['Size', formatSize(written)]);
        return rows;
      },
    },
    format,
  );
}
