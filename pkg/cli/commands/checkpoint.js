// `tinker-wasm checkpoint list|info|publish|unpublish|set-ttl|delete|download`
// (Python: tinker/cli/commands/checkpoint.py; `push-hf` is left out).
import * as fs from 'node:fs';
import * as nodePath from 'node:path';
import * as api from '../api.js';
import { dump, Checkpoint, TrainingRun } from '../models.js';
import { printOutput, formatTimestamp, formatSize, formatBool, pyJson, parseDateTime } from '../output.js';
import { progressBar } from '../progress.js';
import { CliError, Interrupted } from '../errors.js';
import { checkCheckpointPath, checkId, parseTinkerPath } from './checks.js';

const moreNotShown = (total, shown) => {
  if (total == null || total <= shown) return '';
  const remaining = total - shown;
  return remaining === 1 ? ' (1 more not shown, use --limit to see more)' : ` (${remaining} more not shown, use --limit to see more)`;
};

const listRows = (cks) =>
  cks.map((c) => [
    c.checkpoint_id,
    c.checkpoint_type,
    c.size_bytes != null ? formatSize(c.size_bytes) : 'N/A',
    formatBool(c.public),
    formatTimestamp(c.time),
    c.expires_at ? formatTimestamp(c.expires_at) : 'Never',
    c.tinker_path,
  ]);

export async function list(ctx, opts) {
  let checkpoints;
  let total = null;
  const runId = opts.runId;
  if (runId) {
    checkId(runId, 'run ID');
    checkpoints = (await api.listCheckpoints(runId)).checkpoints;
  } else {
    const BATCH = 1000;
    const limit = opts.limit;
    const first = await api.listUserCheckpoints({ limit: limit > 0 ? Math.min(BATCH, limit) : BATCH, offset: 0 });
    checkpoints = [...first.checkpoints];
    total = first.cursor ? first.cursor.total_count : first.checkpoints.length;
    const target = Math.min(limit > 0 ? limit : total, total);
    if (checkpoints.length < target) {
      const bar = progressBar({ length: target, label: `Fetching ${limit === 0 ? 'all' : String(target)} checkpoints`, hidden: ctx.format !== 'table', labelOnPipe: true });
      bar.update(checkpoints.length);
      try {
        while (checkpoints.length < target) {
          const next = Math.min(BATCH, target - checkpoints.length);
          const page = await api.listUserCheckpoints({ limit: next, offset: checkpoints.length });
          checkpoints.push(...page.checkpoints);
          bar.update(page.checkpoints.length);
          if (page.checkpoints.length < next) break;
        }
      } finally {
        bar.finish();
      }
    }
  }
  const models = checkpoints.map((c) => dump(Checkpoint, c));
  const n = models.length;
  printOutput(
    {
      toDict: () => (runId ? { run_id: runId, checkpoints: models } : { checkpoints: models }),
      title: () => {
        if (runId) return n === 0 ? `No checkpoints found for run ${runId}` : `${n === 1 ? '1 checkpoint' : `${n} checkpoints`} for run ${runId}${moreNotShown(total, n)}`;
        return n === 0 ? 'No checkpoints found' : `${n === 1 ? '1 checkpoint' : `${n} checkpoints`}${moreNotShown(total, n)}`;
      },
      columns: () => ['Checkpoint ID', 'Type', 'Size', 'Public', 'Created', 'Expires', 'Path'],
      rows: () => listRows(models),
    },
    ctx.format,
  );
}

export async function info(ctx, opts, args) {
  const path = args.checkpoint_path;
  const parsed = checkCheckpointPath(path);
  let checkpoint = null;
  try {
    const all = (await api.listCheckpoints(parsed.runId)).checkpoints;
    checkpoint = all.find((c) => c.tinker_path === path) ?? null;
  } catch (e) {
    throw new CliError(`Failed to retrieve checkpoint: ${/** @type {Error} */ (e)?.message ?? e}`);
  }
  if (!checkpoint) throw new CliError(`Checkpoint not found: ${path}`);
  const c = dump(Checkpoint, checkpoint);
  const run = dump(TrainingRun, await api.getTrainingRun(parsed.runId));
  printOutput(
    {
      toDict: () => ({ ...c, is_lora: run.is_lora, lora_rank: run.lora_rank }),
      title: () => `Checkpoint: ${c.checkpoint_id}`,
      columns: () => ['Property', 'Value'],
      rows: () => {
        const rows = [
          ['Checkpoint ID', c.checkpoint_id],
          ['Type', c.checkpoint_type],
          ['Tinker Path', c.tinker_path],
        ];
        if (c.size_bytes != null) rows.push(['Size', formatSize(c.size_bytes)]);
        rows.push(['Public', formatBool(c.public)], ['Created', formatTimestamp(c.time)], ['Expires', c.expires_at ? formatTimestamp(c.expires_at) : 'Never']);
        if (c.tinker_path.startsWith('tinker://')) rows.push(['Training Run ID', c.tinker_path.slice(9).split('/')[0]]);
        rows.push(['LoRA', run.is_lora ? (run.lora_rank ? `Yes (Rank ${run.lora_rank})` : 'Yes') : 'No']);
        return rows;
      },
    },
    ctx.format,
  );
}

export async function publish(ctx, opts, args) {
  checkCheckpointPath(args.checkpoint_path);
  await api.publishCheckpoint(args.checkpoint_path);
}

export async function unpublish(ctx, opts, args) {
  checkCheckpointPath(args.checkpoint_path);
  await api.unpublishCheckpoint(args.checkpoint_path);
}

export async function setTtl(ctx, opts, args) {
  checkCheckpointPath(args.checkpoint_path);
  const hint = 'Use --ttl to set an expiration or --remove to clear it';
  if (opts.ttl === null && !opts.remove) throw new CliError('Must specify either --ttl <seconds> or --remove', hint);
  if (opts.ttl !== null && opts.remove) throw new CliError('Cannot specify both --ttl and --remove', hint);
  await api.setCheckpointTtl(args.checkpoint_path, opts.remove ? null : opts.ttl);
}

// ---- delete ----

/** Python's `_parse_date`: ISO 8601 date or datetime, UTC unless it says otherwise. */
function parseDate(value) {
  const v = value.trim();
  const d = parseDateTime(/^\d{4}-\d{2}-\d{2}$/.test(v) ? `${v}T00:00:00` : v);
  if (!d) throw new CliError(`Invalid date: ${v}`, 'Use ISO 8601 format: 2024-01-01, 2024-01-01T12:00:00Z');
  return d.ms;
}

const TYPE_MAP = { weights: 'training', sampler_weights: 'sampler', external_weights: 'external', training: 'training', sampler: 'sampler', external: 'external' };

/** Asks on the terminal; Python's `click.confirm` (default no). */
async function confirm(question) {
  process.stdout.write(`${question} [y/N]: `);
  const answer = await readLine();
  if (answer === null) {
    process.stdout.write('\n');
    throw new CliError('Aborted!', null, 1);
  }
  return /^(y|yes)$/i.test(answer.trim());
}

/** One line of stdin, or null at its end. */
export function readLine() {
  return new Promise((resolve) => {
    let buf = '';
    const stdin = process.stdin;
    const onData = (chunk) => {
      buf += chunk;
      const nl = buf.indexOf('\n');
      if (nl >= 0) {
        done();
        resolve(buf.slice(0, nl).replace(/\r$/, ''));
      }
    };
    const onEnd = () => {
      done();
      resolve(buf.length ? buf : null);
    };
    const done = () => {
      stdin.off('data', onData);
      stdin.off('end', onEnd);
      stdin.pause();
    };
    stdin.setEncoding('utf8');
    stdin.on('data', onData);
    stdin.on('end', onEnd);
    stdin.resume();
  });
}

function summary(paths, checkpoints) {
  const lines = [`Will delete ${paths.length} checkpoint(s):`];
  if (checkpoints) {
    let total = 0;
    for (const c of checkpoints) {
      total += c.size_bytes ?? 0;
      lines.push(`  - ${c.tinker_path} (${c.size_bytes != null ? formatSize(c.size_bytes) : 'N/A'}, created ${formatTimestamp(c.time)})`);
    }
    lines.push('', `Total size: ${formatSize(total)}`);
  } else {
    for (const p of paths) lines.push(`  - ${p}`);
    lines.push('');
  }
  lines.push('WARNING: This action is permanent and cannot be undone.');
  process.stdout.write(lines.join('\n') + '\n');
}

export async function delete_(ctx, opts, args) {
  const paths = args.checkpoint_paths;
  if (!paths.length && !opts.runId) {
    throw new CliError(
      'Must specify checkpoint paths or --run-id',
      'Examples:\n  tinker-wasm checkpoint delete tinker://run-id/weights/0001\n  tinker-wasm checkpoint delete --run-id <run-id>\n  tinker-wasm checkpoint delete --run-id <run-id> --type weights --before 2024-06-01',
    );
  }
  if (paths.length && opts.runId) throw new CliError('Cannot specify both checkpoint paths and --run-id', 'Use either explicit paths or --run-id with optional filters');
  if ((opts.type || opts.before || opts.after) && !opts.runId) {
    throw new CliError('--type, --before, and --after require --run-id', 'Example: tinker-wasm checkpoint delete --run-id <run-id> --type weights --before 2024-06-01');
  }
  let toDelete;
  if (opts.runId) {
    checkId(opts.runId, 'run ID');
    const before = opts.before ? parseDate(opts.before) : null;
    const after = opts.after ? parseDate(opts.after) : null;
    let mapped = null;
    if (opts.type) {
      mapped = TYPE_MAP[opts.type];
      if (!mapped) throw new CliError(`Invalid checkpoint type: ${opts.type}`, 'Valid types: weights, sampler_weights, external_weights');
    }
    let cks = (await api.listCheckpoints(opts.runId)).checkpoints.map((c) => dump(Checkpoint, c));
    if (mapped) cks = cks.filter((c) => c.checkpoint_type === mapped);
    if (before !== null) cks = cks.filter((c) => c.time.ms < before);
    if (after !== null) cks = cks.filter((c) => c.time.ms > after);
    if (!cks.length) {
      process.stdout.write(`No checkpoints found for run ${opts.runId} matching filters\n`);
      return;
    }
    toDelete = cks.map((c) => c.tinker_path);
    if (!opts.yes) {
      summary(toDelete, cks);
      if (!(await confirm(`Are you sure you want to delete ${toDelete.length} checkpoint(s)?`))) {
        process.stdout.write('Deletion cancelled.\n');
        return;
      }
    }
  } else {
    for (const p of paths) checkCheckpointPath(p);
    toDelete = [...paths];
    if (!opts.yes) {
      summary(toDelete, null);
      if (!(await confirm(`Are you sure you want to delete ${toDelete.length} checkpoint(s)?`))) {
        process.stdout.write('Deletion cancelled.\n');
        return;
      }
    }
  }
  let deleted = 0;
  /** @type {[string, string][]} */
  const failed = [];
  const bar = progressBar({ length: toDelete.length, label: 'Deleting checkpoints', hidden: ctx.format !== 'table', labelOnPipe: true });
  let next = 0;
  const worker = async () => {
    while (next < toDelete.length) {
      const p = toDelete[next++];
      try {
        await api.deleteCheckpoint(p);
        deleted++;
      } catch (e) {
        failed.push([p, /** @type {Error} */ (e)?.message ?? String(e)]);
      }
      bar.update(1);
    }
  };
  await Promise.all(Array.from({ length: Math.min(32, toDelete.length) }, worker));
  bar.finish();
  if (ctx.format === 'json') {
    process.stdout.write(pyJson({ deleted_count: deleted, failed: failed.map(([p, e]) => ({ tinker_path: p, error: e })) }, null) + '\n');
  } else {
    process.stdout.write(`Deleted ${deleted} checkpoint(s)\n`);
    if (failed.length) {
      process.stdout.write(`Failed to delete ${failed.length} checkpoint(s):\n`);
      for (const [p, e] of failed) process.stdout.write(`  - ${p}: ${e}\n`);
    }
  }
}
export { delete_ as delete };

// ---- download ----

const DOWNLOADABLE_HINT = 'Only training (tinker://run-id/weights/name) and external weights (tinker://run-id/external_weights/name) checkpoints can be downloaded.';
const EXPORT_TTL_SECONDS = 3600;

function parseDownloadable(path) {
  let parsed;
  try {
    parsed = parseTinkerPath(path);
  } catch (e) {
    throw new CliError(`Invalid checkpoint path: ${/** @type {Error} */ (e).message}`, DOWNLOADABLE_HINT);
  }
  if (parsed.type === 'sampler') throw new CliError(`Sampler checkpoints cannot be downloaded: ${path}`, DOWNLOADABLE_HINT);
  if (!parsed.runId || /[?#\s\x00-\x1f\x7f]/.test(path) || !parsed.checkpointId.split('/')[1]) throw new CliError(`Invalid checkpoint path: Invalid tinker path: ${path}`, DOWNLOADABLE_HINT);
  return parsed;
}

/** `str(Path(p))` as Python spells it (`./models/` → `models`). */
export function pyPath(p) {
  const abs = p.startsWith('/');
  const parts = p.split('/').filter((x) => x !== '' && x !== '.');
  return (abs ? '/' : '') + parts.join('/') || (abs ? '/' : '.');
}

/** `str(Path(output) / name)`. */
const pyPathJoin = (output, name) => {
  const base = pyPath(output);
  return base === '.' ? name : base.endsWith('/') ? base + name : `${base}/${name}`;
};

/** Removes a directory and everything in it (as `shutil.rmtree(…, ignore_errors=True)`). */
const rmrf = (dir) => {
  try {
    fs.rmSync(dir, { recursive: true, force: true });
  } catch {}
};

export async function download(ctx, opts, args) {
  const path = args.checkpoint_path;
  const parsed = parseDownloadable(path);
  const format = ctx.format;
  let outputDir;
  if (opts.output) {
    outputDir = opts.output;
    try {
      fs.mkdirSync(outputDir, { recursive: true });
    } catch (caught) {
      const e = /** @type {NodeJS.ErrnoException} */ (caught);
      throw new CliError(`Cannot create the output directory ${outputDir}: ${e.code ?? e.message}`, 'Choose a directory you can write to with --output.');
    }
  } else outputDir = process.cwd();
  const id = path.replace('tinker://', '').replaceAll('/', '_');
  const target = opts.output ? pyPathJoin(outputDir, id) : nodePath.join(outputDir, id);
  if (fs.existsSync(target)) {
    if (opts.force) fs.rmSync(target, { recursive: true, force: true });
    else throw new CliError(`Target directory already exists: ${target}`, 'Use --force to overwrite or choose a different output directory.');
  }
  // No credential: fail (with Python's message) before creating anything.
  await api.requireCredentials();

  fs.mkdirSync(target, { recursive: true });
  const abort = new AbortController();
  let interrupted = false;
  const onSigint = () => {
    interrupted = true;
    abort.abort(new Error('interrupted'));
  };
  process.on('SIGINT', onSigint);
  let total;
  try {
    total = await downloadCheckpoint(path, parsed, target, { format, signal: abort.signal, interrupted: () => interrupted });
  } catch (e) {
    rmrf(target);
    if (interrupted) throw new Interrupted('interrupted');
    throw e;
  } finally {
    process.off('SIGINT', onSigint);
  }
  printOutput(
    {
      toDict: () => {
        const r = { checkpoint_path: path, destination: target };
        if (total > 0) r.file_size_bytes = total;
        return r;
      },
      title: () => `Checkpoint Download: ${path}`,
      columns: () => ['Property', 'Value'],
      rows: () => {
        const rows = [['Checkpoint Path', path]];
        if (total > 0) rows.push(['Total Size', formatSize(total)]);
        rows.push(['Downloaded to', target]);
        return rows;
      },
    },
    format,
  );
}

/** Downloads `path` (exporting a training checkpoint first) into `dir`; resolves to the byte count. */
async function downloadCheckpoint(path, parsed, dir, { format, signal, interrupted }) {
  if (parsed.type === 'external') return downloadExternal(path, dir, { format, signal });
  if (format !== 'json') process.stderr.write(`Exporting ${path} as external weights (this starts a training session on the checkpoint's base model)...\n`);
  const { exportPath, close } = await api.exportAsExternalWeights(path, EXPORT_TTL_SECONDS, signal);
  /** @type {'success' | 'errored' | 'interrupted'} */
  let status = 'errored';
  try {
    let total;
    try {
      total = await downloadExternal(exportPath, dir, { format, signal, renewTtl: EXPORT_TTL_SECONDS });
    } finally {
      try {
        await api.deleteCheckpoint(exportPath);
      } catch (e) {
        process.stderr.write(`Warning: failed to delete the temporary export ${exportPath} (${/** @type {Error} */ (e)?.message ?? e}); it expires in ${EXPORT_TTL_SECONDS} seconds.\n`);
      }
    }
    status = 'success';
    return total;
  } finally {
    await close(interrupted() ? 'interrupted' : status).catch(() => {});
  }
}

/**
 * Downloads the files of the external weights checkpoint `path` into `dir` (first setting
 * its TTL to `renewTtl` seconds when given); resolves to the byte count.
 * @param {string} path @param {string} dir
 * @param {{ format: string, signal: AbortSignal, renewTtl?: number }} options
 * @returns {Promise<number>}
 */
async function downloadExternal(path, dir, { format, signal, renewTtl }) {
  const { urls } = await api.getExternalWeightsUrls(path);
  if (renewTtl !== undefined) await api.setCheckpointTtl(path, renewTtl);
  const names = Object.keys(urls ?? {});
  if (!names.length) throw new CliError(`External weights checkpoint has no files: ${path}`);
  const base = nodePath.resolve(dir);
  for (const name of names) {
    const dest = nodePath.resolve(dir, name);
    if (!dest.startsWith(base + nodePath.sep)) throw new CliError(`Unsafe file path in checkpoint: ${name}`, 'The checkpoint may be corrupted or malicious.');
  }
  /** @type {ReturnType<typeof progressBar> | null} */
  let bar = null;
  let current = null;
  let seen = 0;
  const show = format !== 'json';
  let result;
  try {
    result = await api.downloadCheckpointFiles(path, {
      directory: dir,
      signal,
      onProgress: ({ path: name, fileBytes, fileSize }) => {
        if (!show) return;
        if (current !== name) {
          bar?.finish();
          current = name;
          bar = progressBar({ length: fileSize ?? 0, label: name, bytes: true });
          seen = 0;
        }
        bar?.update(fileBytes - seen);
        seen = fileBytes;
      },
    });
  } catch (caught) {
    const e = /** @type {NodeJS.ErrnoException} */ (caught);
    if (e instanceof CliError || signal.aborted) throw e;
    if (e?.name === 'APIConnectionError' || e?.name === 'APIStatusError') throw new CliError(`Failed to download checkpoint: ${e.message}`, 'Please check your network connection and try again.');
    if (e?.code && typeof e.code === 'string') throw new CliError(`Failed to save checkpoint: ${e.message}`, `Please check that you have write permissions to ${dir}`);
    throw e;
  } finally {
    bar?.finish();
  }
  return result.bytes;
}
