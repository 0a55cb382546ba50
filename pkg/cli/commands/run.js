// `tinker-wasm run list|info` (Python: tinker/cli/commands/run.py).
import * as api from '../api.js';
import { dump, TrainingRun } from '../models.js';
import { printOutput, formatTimestamp } from '../output.js';
import { progressBar } from '../progress.js';
import { CliError } from '../errors.js';
import { checkId } from './checks.js';

const lora = (r) => (r.is_lora && r.lora_rank ? `Rank ${r.lora_rank}` : r.is_lora ? 'Yes' : 'No');
/** @type {Record<string, [string, (r: any) => string]>} */
const COLUMNS = {
  id: ['Run ID', (r) => r.training_run_id],
  model: ['Base Model', (r) => r.base_model],
  owner: ['Owner', (r) => r.model_owner],
  lora: ['LoRA', lora],
  updated: ['Last Update', (r) => formatTimestamp(r.last_request_time)],
  status: ['Status', (r) => (r.corrupted ? 'Failed' : 'OK')],
  checkpoint: ['Last Checkpoint', (r) => (r.last_checkpoint ? r.last_checkpoint.checkpoint_id : 'None')],
  checkpoint_time: ['Checkpoint Time', (r) => (r.last_checkpoint ? formatTimestamp(r.last_checkpoint.time) : 'N/A')],
};
const DEFAULT_COLUMNS = ['id', 'model', 'lora', 'updated', 'status'];

const moreNotShown = (total, shown) => {
  if (total == null || total <= shown) return '';
  const remaining = total - shown;
  return remaining === 1 ? ' (1 more not shown, use --limit to see more)' : ` (${remaining} more not shown, use --limit to see more)`;
};

export async function list(ctx, opts) {
  let columns = DEFAULT_COLUMNS;
  if (opts.columns) {
    columns = opts.columns.split(',').map((c) => c.trim());
    const invalid = columns.filter((c) => !(c in COLUMNS));
    if (invalid.length) {
      // Python's CLI reports this click.BadParameter through its catch-all (exit 1).
      throw new CliError(`Unexpected error occurred: Unknown column(s): ${invalid.join(', ')}. Available: ${Object.keys(COLUMNS).join(', ')}`);
    }
  }
  const limit = opts.limit;
  const batch = 100;
  const first = await api.listTrainingRuns({ limit: limit > 0 ? Math.min(batch, limit) : batch, offset: 0 });
  const runs = [...first.training_runs];
  const total = first.cursor.total_count;
  const target = Math.min(limit > 0 ? limit : total, total);
  if (runs.length < target) {
    const bar = progressBar({ length: target, label: `Fetching ${limit === 0 ? 'all' : String(target)} training runs`, hidden: ctx.format !== 'table', labelOnPipe: true });
    bar.update(runs.length);
    try {
      while (runs.length < target) {
        const next = Math.min(batch, target - runs.length);
        const page = await api.listTrainingRuns({ limit: next, offset: runs.length });
        runs.push(...page.training_runs);
        bar.update(page.training_runs.length);
        if (page.training_runs.length < next) break;
      }
    } finally {
      bar.finish();
    }
  }
  const models = runs.map((r) => dump(TrainingRun, r));
  printOutput(
    {
      toDict: () => ({ runs: models }),
      title: () => (models.length === 0 ? 'No training runs found' : `${models.length === 1 ? '1 training run' : `${models.length} training runs`}${moreNotShown(total, models.length)}`),
      columns: () => columns.map((c) => COLUMNS[c][0]),
      rows: () => models.map((r) => columns.map((c) => COLUMNS[c][1](r))),
    },
    ctx.format,
  );
}

export async function info(ctx, opts, args) {
  checkId(args.run_id, 'run ID');
  const run = dump(TrainingRun, await api.getTrainingRun(args.run_id));
  printOutput(
    {
      toDict: () => run,
      title: () => `Training Run: ${run.training_run_id}`,
      columns: () => ['Property', 'Value'],
      rows: () => {
        const rows = [
          ['Run ID', run.training_run_id],
          ['Base Model', run.base_model],
          ['Owner', run.model_owner],
          ['LoRA', run.is_lora ? (run.lora_rank ? `Yes (Rank ${run.lora_rank})` : 'Yes') : 'No'],
          ['Last Update', formatTimestamp(run.last_request_time)],
          ['Status', run.corrupted ? 'Failed' : 'OK'],
        ];
        for (const [label, c] of [['Last Training Checkpoint', run.last_checkpoint], ['Last Sampler Checkpoint', run.last_sampler_checkpoint]]) {
          if (!c) continue;
          rows.push([label, c.checkpoint_id], ['  - Time', formatTimestamp(c.time)], ['  - Path', c.tinker_path]);
        }
        if (run.user_metadata && Object.keys(run.user_metadata).length) {
          rows.push(['Metadata', '']);
          for (const [k, v] of Object.entries(run.user_metadata)) rows.push([`  - ${k}`, v]);
        }
        return rows;
      },
    },
    ctx.format,
  );
}
