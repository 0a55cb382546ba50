// `tinker-wasm billing usage|checkpoint-storage` (Python: tinker/cli/commands/billing.py).
import * as fs from 'node:fs';
import * as api from '../api.js';
import { dump, BillingUsageResponse, BillingUsageEvent, CurrentCheckpointStorageUsageResponse } from '../models.js';
import { printOutput, pyStr, PyDateTime } from '../output.js';

const TOKEN_TYPES = new Set(['training', 'sampling_prefill', 'sampling_sample']);

/** Rows with `event_info` flattened in (Python's `_flat_dicts`). */
const flat = (rows) => rows.map((r) => (r.event_info && typeof r.event_info === 'object' ? { ...Object.fromEntries(Object.entries(r).filter(([k]) => k !== 'event_info')), ...r.event_info } : r));

/** Python's `_display_dicts`: unavailable applicable costs shown as `null`. */
function display(rows) {
  return flat(rows).map((r) => {
    const t = r.type;
    if (TOKEN_TYPES.has(t) || t === 'storage') {
      r = { ...r };
      if (r.estimated_cost_usd == null) r.estimated_cost_usd = 'null';
      const rate = t === 'storage' ? 'effective_rate_usd_per_gigabyte_month' : 'effective_rate_usd_per_million_tokens';
      if (r[rate] == null) r[rate] = 'null';
    }
    return r;
  });
}

const columnsOf = (rows) => {
  const cols = [];
  for (const r of rows) for (const k of Object.keys(r)) if (!cols.includes(k)) cols.push(k);
  return cols;
};
const cell = (v) => (v === null || v === undefined ? '' : pyStr(v));

/** Python's `csv.DictWriter` (excel dialect: \r\n, quoting as needed). */
function csvText(rows) {
  const cols = columnsOf(rows);
  const q = (v) => {
    const s = cell(v);
    return /[",\r\n]/.test(s) ? `"${s.replaceAll('"', '""')}"` : s;
  };
  return [cols.join(','), ...rows.map((r) => cols.map((c) => q(r[c])).join(','))].map((l) => l + '\r\n').join('');
}

function writeCsv(rows, path, count = rows.length) {
  const text = csvText(flat(rows));
  if (path === '-') process.stdout.write(text);
  else {
    fs.writeFileSync(path, text);
    process.stderr.write(`Wrote ${count} row(s) to ${path}\n`);
  }
}

export async function usage(ctx, opts, args) {
  const wire = await api.getBillingUsage(args.starting_on, args.ending_before);
  const response = dump(BillingUsageResponse, wire, '', 'json');
  const data = response.data;
  const sessions = response.sessions;
  if (opts.sessionsCsv !== null) {
    const rows = Object.entries(sessions).map(([sid, s]) => ({ session_id: sid, user_metadata: s.user_metadata == null ? null : JSON.stringify(s.user_metadata).replace(/","/g, '", "').replace(/":"/g, '": "') }));
    writeCsv(rows, opts.sessionsCsv);
  }
  if (opts.csv !== null) writeCsv(data, opts.csv);
  if (opts.csv === null && opts.sessionsCsv === null) {
    const shown = display(data);
    const through = wire.cost_data_through == null ? null : dump([['t', 'datetime']], { t: wire.cost_data_through }).t;
    printOutput(
      {
        toDict: () => ({ data, sessions, cost_data_through: through instanceof PyDateTime ? through.isoformat().replace('+00:00', 'Z') : null }),
        title: () => (data.length === 0 ? 'No billing usage in this window' : `${data.length} hourly usage row(s)`),
        columns: () => columnsOf(shown),
        rows: () => shown.map((r) => columnsOf(shown).map((c) => cell(r[c]))),
      },
      ctx.format,
    );
  }
}

export async function checkpointStorage(ctx, opts) {
  const response = dump(CurrentCheckpointStorageUsageResponse, await api.getCurrentCheckpointStorageUsage(opts.projectId), '', 'json');
  const rate = response.effective_rate_usd_per_gigabyte_month;
  const tableRows = response.data.map((r) => ({ effective_rate_usd_per_gigabyte_month: rate, ...r }));
  if (opts.csv !== null) {
    writeCsv(tableRows, opts.csv);
    return;
  }
  printOutput(
    {
      toDict: () => ({ effective_rate_usd_per_gigabyte_month: rate, data: response.data }),
      title: () => (response.data.length === 0 ? 'No active checkpoint storage' : 'Current checkpoint storage'),
      columns: () => columnsOf(tableRows),
      rows: () => tableRows.map((r) => columnsOf(tableRows).map((c) => cell(r[c]))),
    },
    ctx.format,
  );
}
