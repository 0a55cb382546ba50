// Progress bars as click draws them, on stdout and only when it is a terminal (nothing with
// --format json): `label  [#####-----]  1.2 MB/4.0 MB  30%  2.1 MB/s  00:00:03`. On a pipe,
// click writes the label once instead (`labelOnPipe`, for list paging and deletes, so the
// output matches Python's); downloads write nothing there.
import { formatSize } from './output.js';

/**
 * The line fitted to a terminal of `columns` (one column spare, so the cursor never wraps):
 * the bar narrows first (to nothing), then the label is cut with an ellipsis.
 * @param {string} label @param {number} filledFrac @param {string} tail @param {number} [columns]
 */
export function fitLine(label, filledFrac, tail, columns) {
  const room = columns > 0 ? columns - 1 : Infinity;
  const line = (lbl, w) => {
    const filled = Math.round(filledFrac * w);
    return `${lbl}  ${w > 0 ? `[${'#'.repeat(filled)}${'-'.repeat(w - filled)}]  ` : ''}${tail}`;
  };
  let width = 36;
  const bare = [...line(label, 0)].length;
  if (bare + 4 + width > room) width = Math.max(0, room - bare - 4);
  if (width < 4) width = 0;
  let text = line(label, width);
  const over = [...text].length - room;
  if (over > 0) {
    const chars = [...label];
    text = line(chars.slice(0, Math.max(0, chars.length - over - 1)).join('') + '…', 0);
  }
  return [...text].slice(0, Number.isFinite(room) ? room : undefined).join('');
}

/**
 * @param {{ length: number, label: string, hidden?: boolean, bytes?: boolean, labelOnPipe?: boolean, out?: { isTTY?: boolean, columns?: number, write(s: string): unknown } }} o
 * @returns {{ update(n: number): void, finish(): void }}
 */
export function progressBar({ length, label, hidden = false, bytes = false, labelOnPipe = false, out = process.stdout }) {
  if (hidden) return { update() {}, finish() {} };
  if (!out.isTTY) {
    if (labelOnPipe) out.write(`${label}\n`);
    return { update() {}, finish() {} };
  }
  const started = Date.now();
  let pos = 0;
  let last = 0;
  let drawn = false;
  const draw = (force) => {
    const now = Date.now();
    if (!force && now - last < 100) return;
    last = now;
    const frac = length > 0 ? Math.min(pos / length, 1) : 0;
    const elapsed = (now - started) / 1000;
    const rate = elapsed > 0 ? pos / elapsed : 0;
    const eta = rate > 0 && length > pos ? Math.round((length - pos) / rate) : 0;
    const hms = `${String(Math.floor(eta / 3600)).padStart(2, '0')}:${String(Math.floor(eta / 60) % 60).padStart(2, '0')}:${String(eta % 60).padStart(2, '0')}`;
    const posText = bytes ? `${formatSize(pos)}/${formatSize(length)}` : `${pos}/${length}`;
    const parts = [posText, `${Math.floor(frac * 100)}%`];
    if (bytes) parts.push(`${formatSize(Math.round(rate))}/s`);
    if (pos < length) parts.push(hms);
    out.write(`\r\x1b[K${fitLine(label, frac, parts.join('  '), out.columns)}`);
    drawn = true;
  };
  draw(true);
  return {
    update(n) {
      pos += n;
      draw(false);
    },
    finish() {
      draw(true);
      if (drawn) out.write('\n');
    },
  };
}

/**
 * A training run's progress line (tinker-wasm/cookbook in a Node terminal): step, loss and
 * ETA, drawn on `out` only when it is a terminal, redrawn at each step's metrics.
 * @param {{ isTTY?: boolean, columns?: number, write(s: string): unknown }} out
 * @param {() => number} [now] milliseconds
 * @returns {{ step(m: Record<string, any>): void, finish(): void }}
 */
export function stepProgress(out, now = Date.now) {
  if (!out?.isTTY) return { step() {}, finish() {} };
  const started = now();
  let drawn = false;
  return {
    step(m) {
      const frac = Math.min(Math.max(Number(m.progress) || 0, 0), 1);
      const elapsed = (now() - started) / 1000;
      const eta = frac > 0 ? Math.round((elapsed / frac) * (1 - frac)) : 0;
      const hms = `${String(Math.floor(eta / 3600)).padStart(2, '0')}:${String(Math.floor(eta / 60) % 60).padStart(2, '0')}:${String(eta % 60).padStart(2, '0')}`;
      const loss = typeof m.train_mean_nll === 'number' ? `  loss ${m.train_mean_nll.toFixed(4)}` : '';
      out.write(`\r\x1b[K${fitLine(`step ${m.step + 1}${loss}`, frac, `${Math.floor(frac * 100)}%  ETA ${hms}`, out.columns)}`);
      drawn = true;
    },
    finish() {
      if (drawn) out.write('\n');
    },
  };
}
