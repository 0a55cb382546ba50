// A live loss chart as inline SVG: the training loss per step and, when the run evaluates,
// the held-out loss at the steps it was measured. The container carries the values it shows
// (`data-losses`, `data-evals`, `data-steps`) so tests and tools can read them without pixels.

const NS = 'http://www.w3.org/2000/svg';
const W = 600;
const H = 240;
const M = { l: 52, r: 16, t: 14, b: 30 };

function s(tag, attrs = {}, text) {
  const el = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  if (text !== undefined) el.textContent = text;
  return el;
}

const nice = (v) => (Math.abs(v) >= 100 ? v.toFixed(0) : Math.abs(v) >= 10 ? v.toFixed(1) : v.toFixed(2));

export function lossChart(container, { name = 'Loss' } = {}) {
  let losses = [];
  /** Held-out losses: [step index, loss]. */
  let evals = [];
  let steps = 0;
  let note = null;

  function draw() {
    if (!note) delete container.dataset.stopped;
    container.dataset.losses = JSON.stringify(losses.map((l) => Number(l.toFixed(6))));
    container.dataset.evals = JSON.stringify(evals.map(([i, l]) => [i, Number(l.toFixed(6))]));
    container.dataset.steps = String(steps);
    const svg = s('svg', { viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-label': label() });
    if (!losses.length) {
      svg.append(s('text', { x: W / 2, y: H / 2, 'text-anchor': 'middle', class: 'empty' }, note ?? (steps ? 'Waiting for the first step…' : 'No training yet')));
      container.replaceChildren(svg);
      return;
    }
    const all = [...losses, ...evals.map(([, l]) => l)];
    let lo = Math.min(...all);
    let hi = Math.max(...all);
    if (hi - lo < 1e-9) {
      lo -= 0.5;
      hi += 0.5;
    }
    const pad = (hi - lo) * 0.08;
    lo -= pad;
    hi += pad;
    const n = Math.max(steps, losses.length, ...evals.map(([i]) => i + 1), 2);
    const x = (i) => M.l + ((W - M.l - M.r) * i) / (n - 1);
    const y = (v) => M.t + ((H - M.t - M.b) * (hi - v)) / (hi - lo);
    for (let k = 0; k <= 4; k++) {
      const v = lo + ((hi - lo) * k) / 4;
      svg.append(s('line', { x1: M.l, x2: W - M.r, y1: y(v), y2: y(v), class: 'grid' }));
      svg.append(s('text', { x: M.l - 6, y: y(v) + 4, 'text-anchor': 'end' }, nice(v)));
    }
    svg.append(s('line', { x1: M.l, x2: M.l, y1: M.t, y2: H - M.b, class: 'axis' }));
    svg.append(s('line', { x1: M.l, x2: W - M.r, y1: H - M.b, y2: H - M.b, class: 'axis' }));
    const ticks = Math.min(n, 10);
    for (let k = 0; k < ticks; k++) {
      const i = Math.round(((n - 1) * k) / Math.max(1, ticks - 1));
      svg.append(s('text', { x: x(i), y: H - M.b + 18, 'text-anchor': 'middle' }, String(i + 1)));
    }
    svg.append(s('polyline', { class: 'line', points: losses.map((v, i) => `${x(i).toFixed(1)},${y(v).toFixed(1)}`).join(' ') }));
    losses.forEach((v, i) => {
      const c = s('circle', { cx: x(i), cy: y(v), r: 4, class: 'pt', 'data-step': i + 1, 'data-loss': v });
      c.append(s('title', {}, `step ${i + 1}: ${v.toFixed(4)}`));
      svg.append(c);
    });
    if (evals.length) {
      svg.append(s('polyline', { class: 'line eval', points: evals.map(([i, v]) => `${x(i).toFixed(1)},${y(v).toFixed(1)}`).join(' ') }));
      for (const [i, v] of evals) {
        const c = s('rect', { x: x(i) - 4, y: y(v) - 4, width: 8, height: 8, class: 'pt eval', 'data-step': i + 1, 'data-loss': v });
        c.append(s('title', {}, `held-out loss before step ${i + 1}: ${v.toFixed(4)}`));
        svg.append(c);
      }
    }
    container.replaceChildren(svg);
  }

  function label() {
    if (!losses.length) return `${name} chart: no steps yet`;
    return `${name} chart: ${losses.map((v, i) => `step ${i + 1} ${v.toFixed(3)}`).join(', ')}`;
  }

  draw();
  return {
    reset(total) {
      losses = [];
      evals = [];
      steps = total;
      note = null;
      draw();
    },
    /** Ends the run early: the steps so far stay; `message` shows if there were none. */
    stop(message) {
      note = message;
      container.dataset.stopped = 'true';
      draw();
    },
    add(v) {
      losses.push(v);
      draw();
    },
    /** A held-out loss, measured before step index `i` ran. */
    addEval(i, v) {
      evals.push([i, v]);
      draw();
    },
    get losses() {
      return losses.slice();
    },
  };
}
