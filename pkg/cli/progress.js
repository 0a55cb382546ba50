// Progress bars as click draws them, on stdout and only when it is a terminal (nothing with
// --format json): `label  [#####-----]  1.2 MB/4.0 MB  30%  2.1 MB/s  00:00:03`. On a pipe,
// click writes the label once instead (`labelOnPipe`, for list paging and deletes, so the
// output matches Python's); downloads write nothing there.
import { formatSize } from './output.js';

/**
 * @param {{ length: number, label: string, hidden?: boolean, bytes?: boolean, labelOnPipe?: boolean }} o
 * @returns {{ update(n: number): void, finish(): void }}
 */
export function progressBar({ length, label, hidden = false, bytes = false, labelOnPipe = false }) {
  const out = process.stdout;
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
    const width = 36;
    const frac = length > 0 ? Math.min(pos / length, 1) : 0;
    const filled = Math.round(frac * width);
    const elapsed = (now - started) / 1000;
    const rate = elapsed > 0 ? pos / elapsed : 0;
    const eta = rate > 0 && length > pos ? Math.round((length - pos) / rate) : 0;
    const hms = `${String(Math.floor(eta / 3600)).padStart(2, '0')}:${String(Math.floor(eta / 60) % 60).padStart(2, '0')}:${String(eta % 60).padStart(2, '0')}`;
    const posText = bytes ? `${formatSize(pos)}/${formatSize(length)}` : `${pos}/${length}`;
    const parts = [posText, `${Math.floor(frac * 100)}%`];
    if (bytes) parts.push(`${formatSize(Math.round(rate))}/s`);
    if (pos < length) parts.push(hms);
    out.write(`\r\x1b[K${label}  [${'#'.repeat(filled)}${'-'.repeat(width - filled)}]  ${parts.join('  ')}`);
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
