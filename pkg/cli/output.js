// Output of the tinker-wasm CLI, as the Python SDK's CLI (tinker 0.38.0, tinker/cli/output.py)
// writes it: JSON exactly as Python's `json.dump(data, indent=2, default=str)` spells it
// (floats as Python's repr, non-ASCII as \uXXXX, datetimes as str(datetime)), tables as
// rich draws them (heavy head, widths fitted to the terminal the way rich collapses them),
// and the formatting helpers (sizes, relative times, Yes/No).
// Plain ESM, no dependencies: loaded for every command, including --help. Python's float
// repr and json.dumps are the module's (usePythonPrinting), as the chat templates' are.

/** A value Python holds as a float (printed as its repr: `1.0`, `1e-05`). */
export class PyFloat {
  /** @param {number} value */
  constructor(value) {
    this.value = value;
  }
}

/** A value Python holds as a datetime: printed by json's `default=str` as `str(datetime)`. */
export class PyDateTime {
  /**
   * @param {string} iso the wire text (RFC 3339)
   * @param {{ date: string, time: string, micro: number, offset: string | null }} parts
   */
  constructor(iso, parts) {
    this.iso = iso;
    this.parts = parts;
  }
  /** `str(datetime)`: `2026-01-01 00:00:00.123000+00:00`. */
  toString() {
    const { date, time, micro, offset } = this.parts;
    return `${date} ${time}${micro ? '.' + String(micro).padStart(6, '0') : ''}${offset ?? ''}`;
  }
  /** pydantic's `model_dump(mode="json")`: `2026-01-01T00:00:00.123000Z`. */
  toJSONString() {
    const { date, time, micro, offset } = this.parts;
    return `${date}T${time}${micro ? '.' + String(micro).padStart(6, '0') : ''}${offset === '+00:00' ? 'Z' : offset ?? ''}`;
  }
  /** `datetime.isoformat()`. */
  isoformat() {
    const { date, time, micro, offset } = this.parts;
    return `${date}T${time}${micro ? '.' + String(micro).padStart(6, '0') : ''}${offset ?? ''}`;
  }
  /** Milliseconds since the epoch (naive times as UTC, as the CLI treats them). */
  get ms() {
    const { date, time, micro, offset } = this.parts;
    const base = Date.parse(`${date}T${time}Z`);
    let off = 0;
    if (offset) {
      const m = /^([+-])(\d\d):(\d\d)$/.exec(offset);
      if (m) off = (m[1] === '-' ? -1 : 1) * (Number(m[2]) * 60 + Number(m[3])) * 60000;
    }
    return base - off + Math.floor(micro / 1000);
  }
}

const DT = /^(\d{4}-\d{2}-\d{2})[T t](\d{2}:\d{2})(?::(\d{2})(?:[.,](\d+))?)?\s*(Z|z|[+-]\d{2}(?::?\d{2})?)?$/;

/**
 * Parses an RFC 3339 / ISO 8601 time as pydantic does (fractions past microseconds are
 * truncated, `Z` is `+00:00`); null when it is not one.
 * @param {unknown} v
 * @returns {PyDateTime | null}
 */
export function parseDateTime(v) {
  if (v instanceof PyDateTime) return v;
  if (typeof v !== 'string') return null;
  const m = DT.exec(v.trim());
  if (!m) return null;
  const time = `${m[2]}:${m[3] ?? '00'}`;
  const micro = m[4] ? Number(m[4].slice(0, 6).padEnd(6, '0')) : 0;
  let offset = null;
  if (m[5]) {
    if (m[5] === 'Z' || m[5] === 'z') offset = '+00:00';
    else {
      const digits = m[5].replace(':', '');
      offset = `${digits.slice(0, 3)}:${digits.slice(3, 5) || '00'}`;
    }
  }
  return new PyDateTime(v, { date: m[1], time, micro, offset });
}

/**
 * The module's Python printing (src/wasm/python.rs: the `json.dumps` and `repr(float)` the
 * chat templates and renderers use), set by api.js when it loads the SDK: every command
 * that prints data has called the API, and so loaded it, first.
 * @type {{ __pyJsonDumps(text: string, indent?: number): string, __pyRepr(x: number): string } | null}
 */
let python = null;

/** Gives this file the SDK module's Python printing. @param {any} sdk */
export function usePythonPrinting(sdk) {
  python = sdk;
}

function py() {
  if (!python) throw new Error('tinker-wasm CLI: output needs the SDK module, which is not loaded (a bug: please report it)');
  return python;
}

/** Python's `repr(float)`. @param {number} x */
export function pyFloatRepr(x) {
  return py().__pyRepr(x);
}

/** A float as JSON text that reads back as a float (`1` as `1.0`). @param {number} x */
function floatText(x) {
  // JSON has no NaN or infinities, and the API's data (JSON) never holds one.
  if (!Number.isFinite(x)) return 'null';
  if (Object.is(x, -0)) return '-0.0';
  const s = String(x);
  return /[.eE]/.test(s) ? s : `${s}.0`;
}

/**
 * `value` as standard JSON text for the module, keeping what Python would print: a
 * `PyFloat` stays a float (`1.0`), a `PyDateTime` becomes `str(datetime)` (json's
 * `default=str`), other whole numbers are ints.
 * @param {unknown} v
 * @returns {string}
 */
function toJsonText(v) {
  if (v === null || v === undefined) return 'null';
  if (v === true || v === false) return String(v);
  if (v instanceof PyFloat) return floatText(v.value);
  if (v instanceof PyDateTime) return JSON.stringify(v.toString());
  // A whole number is an int to Python (JSON's int), however large: written out in full.
  if (typeof v === 'number') return Number.isInteger(v) ? BigInt(v).toString() : floatText(v);
  if (typeof v === 'bigint') return String(v);
  if (typeof v === 'string') return JSON.stringify(v);
  if (Array.isArray(v)) return `[${v.map(toJsonText).join(',')}]`;
  const o = /** @type {Record<string, unknown>} */ (v);
  return `{${Object.keys(o).map((k) => `${JSON.stringify(k)}:${toJsonText(o[k])}`).join(',')}}`;
}

/**
 * Python's `json.dumps(value, indent=indent, default=str)`; without `indent`, the compact
 * `", "` / `": "` separators Python uses then.
 * @param {unknown} value
 * @param {number | null} [indent]
 */
export function pyJson(value, indent = 2) {
  return py().__pyJsonDumps(toJsonText(value), indent ?? undefined);
}

/** Python's `str(value)` for a table cell. @param {unknown} v */
export function pyStr(v) {
  if (v === null || v === undefined) return 'None';
  if (v === true) return 'True';
  if (v === false) return 'False';
  if (v instanceof PyFloat) return pyFloatRepr(v.value);
  if (v instanceof PyDateTime) return v.toString();
  if (typeof v === 'number') return Number.isInteger(v) ? String(v) : pyFloatRepr(v);
  if (typeof v === 'string') return v;
  return JSON.stringify(v);
}

// ---- formatting helpers (tinker/cli/output.py) ----

/** `format_size`. @param {number} bytes */
export function formatSize(bytes) {
  if (bytes < 0) return 'N/A';
  let size = bytes;
  for (const unit of ['B', 'KB', 'MB', 'GB', 'TB', 'PB']) {
    if (size < 1024) return unit === 'B' ? `${Math.trunc(size)} ${unit}` : `${size.toFixed(1)} ${unit}`;
    size /= 1024;
  }
  return `${size.toFixed(1)} EB`;
}

/** `format_timestamp`: "2 hours ago", "in 1 hour", "just now", or the date. @param {unknown} dt */
export function formatTimestamp(dt, now = Date.now()) {
  if (!dt) return 'N/A';
  const d = parseDateTime(dt);
  if (!d) return String(dt);
  let delta = now - d.ms;
  const future = delta < 0;
  if (future) delta = -delta;
  const [prefix, suffix] = future ? ['in ', ''] : ['', ' ago'];
  const totalSeconds = Math.floor(delta / 1000);
  const days = Math.floor(totalSeconds / 86400);
  const plural = (n, w) => `${prefix}${n} ${w}${n > 1 ? 's' : ''}${suffix}`;
  if (days > 30) {
    // strftime("%Y-%m-%d") of the time in UTC.
    return new Date(d.ms).toISOString().slice(0, 10);
  }
  if (days > 7) return plural(Math.floor(days / 7), 'week');
  if (days > 0) return plural(days, 'day');
  if (totalSeconds > 3600) return plural(Math.floor(totalSeconds / 3600), 'hour');
  if (totalSeconds > 60) return plural(Math.floor(totalSeconds / 60), 'minute');
  return future ? 'in less than a minute' : 'just now';
}

/** `format_bool`. @param {unknown} v */
export const formatBool = (v) => (v ? 'Yes' : 'No');

/** `format_optional`. @param {unknown} v @param {(x: any) => string} [f] */
export const formatOptional = (v, f) => (v === null || v === undefined ? 'N/A' : f ? f(v) : pyStr(v));

// ---- the terminal ----

/** The console width as rich finds it: COLUMNS, else the terminal's, else 80. */
export function consoleWidth() {
  const env = process.env.COLUMNS;
  if (env && /^\d+$/.test(env) && Number(env) > 0) return Number(env);
  for (const s of [process.stdout, process.stderr]) {
    if (s.isTTY && s.columns) return s.columns;
  }
  return 80;
}

const useColor = () => process.stdout.isTTY && !process.env.NO_COLOR && process.env.TERM !== 'dumb';
const sgr = (code, s) => (useColor() && s ? `\x1b[${code}m${s}\x1b[0m` : s);

// Display width: East Asian wide and emoji code points take two cells.
const WIDE = /[\u1100-\u115f\u2e80-\u303e\u3041-\u33ff\u3400-\u4dbf\u4e00-\u9fff\ua000-\ua4cf\uac00-\ud7a3\uf900-\ufaff\ufe30-\ufe4f\uff00-\uff60\uffe0-\uffe6]|[\u{1f300}-\u{1f64f}\u{1f900}-\u{1f9ff}\u{20000}-\u{3fffd}]/u;
/** @param {string} s */
export function cellLen(s) {
  let n = 0;
  for (const ch of s) n += WIDE.test(ch) ? 2 : 1;
  return n;
}
/** The first `width` cells of `s`. */
function cut(s, width) {
  let out = '';
  let n = 0;
  for (const ch of s) {
    const w = WIDE.test(ch) ? 2 : 1;
    if (n + w > width) break;
    out += ch;
    n += w;
  }
  return out;
}

/** rich's `ratio_reduce` (Python's round: half to even). */
function ratioReduce(total, ratios, maximums, values) {
  ratios = ratios.map((r, i) => (maximums[i] ? r : 0));
  let totalRatio = ratios.reduce((a, b) => a + b, 0);
  if (!totalRatio) return values.slice();
  let remaining = total;
  return values.map((value, i) => {
    const ratio = ratios[i];
    if (ratio && totalRatio > 0) {
      const distributed = Math.min(maximums[i], roundHalfEven((ratio * remaining) / totalRatio));
      remaining -= distributed;
      totalRatio -= ratio;
      return value - distributed;
    }
    return value;
  });
}
function roundHalfEven(x) {
  const f = Math.floor(x);
  const d = x - f;
  if (d > 0.5) return f + 1;
  if (d < 0.5) return f;
  return f % 2 === 0 ? f : f + 1;
}

/** rich's `Table._collapse_widths`. */
function collapseWidths(widths, wrapable, maxWidth) {
  let total = widths.reduce((a, b) => a + b, 0);
  let excess = total - maxWidth;
  if (wrapable.some(Boolean)) {
    while (total && excess > 0) {
      const maxColumn = Math.max(...widths.filter((_, i) => wrapable[i]));
      const second = Math.max(...widths.map((w, i) => (wrapable[i] && w !== maxColumn ? w : 0)));
      const diff = maxColumn - second;
      const ratios = widths.map((w, i) => (w === maxColumn && wrapable[i] ? 1 : 0));
      if (!ratios.some(Boolean) || !diff) break;
      const maxReduce = widths.map(() => Math.min(excess, diff));
      widths = ratioReduce(excess, ratios, maxReduce, widths);
      total = widths.reduce((a, b) => a + b, 0);
      excess = total - maxWidth;
    }
  }
  return widths;
}

/** Words with their trailing whitespace, as rich's `divide_line` splits a line. */
const words = (line) => line.match(/\s*\S+\s*/g) ?? [];

/** rich's word wrap of one cell to `width` (overflow "ellipsis"; no_wrap keeps one line). */
function wrapCell(text, width, noWrap, fold = false) {
  if (width <= 0) return [''];
  const out = [];
  for (const line of String(text).split('\n')) {
    let lines;
    if (noWrap) lines = [line];
    else {
      lines = [];
      let cur = '';
      for (const w of words(line)) {
        const bare = w.trimEnd();
        if (cur && cellLen(cur) + cellLen(bare) > width) {
          lines.push(cur.trimEnd());
          cur = w.trimStart();
        } else cur += cur ? w : w.trimStart();
        // fold: a word longer than the line is cut into lines of `width` cells.
        while (fold && cellLen(cur.trimEnd()) > width) {
          const head = cut(cur, width);
          lines.push(head);
          cur = cur.slice(head.length);
        }
      }
      lines.push(cur.trimEnd());
    }
    for (const l of lines) out.push(cellLen(l) > width ? (width > 0 ? cut(l, width - 1) + '…' : '') : l);
  }
  return out;
}

/**
 * Draws a table as rich does with its defaults (box HEAVY_HEAD, padding 1, header bold
 * and bottom-aligned, the first column bright cyan and unwrapped, the title centred in
 * italics above), fitted to `width` cells.
 * @param {{ title?: string | null, columns: string[], rows: string[][] }} t
 */
export function renderTable({ title, columns, rows }, width = consoleWidth()) {
  const n = columns.length;
  const extra = n + 1; // borders
  const maxWidth = width - extra;
  const cells = (i) => [columns[i], ...rows.map((r) => r[i] ?? '')];
  const measure = (i, limit) => {
    let min = 1;
    let max = 0;
    for (const c of cells(i)) {
      for (const line of String(c).split('\n')) {
        max = Math.max(max, cellLen(line));
        for (const w of words(line)) min = Math.max(min, cellLen(w.trim()));
      }
    }
    if (i === 0) min = max; // no_wrap: measured at its full width
    min += 2;
    max += 2;
    return { min: Math.min(min, limit), max: Math.min(max, limit) };
  };
  let widths = columns.map((_, i) => measure(i, maxWidth).max || 1);
  let total = widths.reduce((a, b) => a + b, 0);
  if (total > maxWidth) {
    widths = collapseWidths(widths, columns.map((_, i) => i !== 0), maxWidth);
    total = widths.reduce((a, b) => a + b, 0);
    if (total > maxWidth) {
      widths = ratioReduce(total - maxWidth, widths.map(() => 1), widths, widths);
    }
    widths = widths.map((w, i) => measure(i, w).max || 0);
  }
  const tableWidth = widths.reduce((a, b) => a + b, 0) + extra;
  const lines = [];
  if (title) {
    for (const l of wrapCell(title, tableWidth, false, true)) {
      const left = Math.floor((tableWidth - cellLen(l)) / 2);
      const right = tableWidth - cellLen(l) - left;
      lines.push(' '.repeat(left) + sgr('3', l) + ' '.repeat(right));
    }
  }
  const bar = (l, fill, mid, r) => l + widths.map((w) => fill.repeat(w)).join(mid) + r;
  const row = (values, edge, header) => {
    const wrapped = values.map((v, i) => wrapCell(v, Math.max(widths[i] - 2, 0), i === 0));
    const h = Math.max(1, ...wrapped.map((c) => c.length));
    const out = [];
    for (let k = 0; k < h; k++) {
      out.push(
        edge +
          wrapped
            .map((c, i) => {
              const idx = header ? k - (h - c.length) : k;
              const text = idx >= 0 && idx < c.length ? c[idx] : '';
              const inner = Math.max(widths[i] - 2, 0);
              const padded = text + ' '.repeat(Math.max(inner - cellLen(text), 0));
              const styled = header ? sgr('1', text) + padded.slice(text.length) : i === 0 ? sgr('96', text) + padded.slice(text.length) : padded;
              return widths[i] >= 2 ? ` ${styled} ` : ' '.repeat(widths[i]);
            })
            .join(edge) +
          edge,
      );
    }
    return out;
  };
  lines.push(bar('┏', '━', '┳', '┓'));
  lines.push(...row(columns, '┃', true));
  lines.push(bar('┡', '━', '╇', '┩'));
  for (const r of rows) lines.push(...row(r, '│', false));
  lines.push(bar('└', '─', '┴', '┘'));
  return lines.join('\n') + '\n';
}

/**
 * What every command prints (Python's `OutputBase.print`): `toDict()` as JSON, or the
 * table of `columns()` / `rows()` under `title()`.
 * @param {{ toDict(): unknown, columns(): string[], rows(): string[][], title?(): string | null }} out
 * @param {'table' | 'json'} format
 */
export function printOutput(out, format) {
  if (format === 'json') process.stdout.write(pyJson(out.toDict()) + '\n');
  else process.stdout.write(renderTable({ title: out.title?.() ?? null, columns: out.columns(), rows: out.rows() }));
}
