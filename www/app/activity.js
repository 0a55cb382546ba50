// Long operations (sampling, training, saving): one entry each in the Activity list
// with its state, the server's queue state while it waits, elapsed time, and a Cancel
// button wired to the operation's AbortSignal.
import { h, isAbort, ms } from './ui.js';

let nextId = 1;

export class Operation {
  constructor(activity, { title, kinds = [] }) {
    this.id = nextId++;
    this.title = title;
    this.kinds = new Set(kinds);
    this.controller = new AbortController();
    this.signal = this.controller.signal;
    this.started = performance.now();
    this.polls = 0;
    this.queueState = null;
    this.state = 'running';
    this.listeners = new Set();
    this.cancelButton = h('button', { type: 'button', onclick: () => this.cancel(), 'aria-label': `Cancel ${title}` }, 'Cancel');
    this.phaseEl = h('div.meta.phase', {}, 'starting…');
    this.metaEl = h('div.meta.timing', {}, '');
    this.el = h('li.op', { dataset: { opId: String(this.id), state: 'running', polls: '0' } },
      h('div.op-row', {}, h('span.title', {}, title), this.cancelButton), this.phaseEl, this.metaEl);
    this.activity = activity;
  }

  /** Calls `fn(op)` on every state change. */
  onChange(fn) {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  #emit() {
    this.el.dataset.state = this.state;
    this.el.dataset.polls = String(this.polls);
    if (this.queueState) this.el.dataset.queueState = this.queueState;
    this.tick();
    for (const fn of this.listeners) fn(this);
  }

  get active() {
    return this.state === 'running' || this.state === 'waiting' || this.state === 'cancelling';
  }

  /** What the operation is doing now (shown under its title). */
  setPhase(text) {
    this.phase = text;
    this.phaseEl.textContent = text;
    this.#emit();
  }

  /** A poll of one of its futures answered "not yet" (`queueState` from the server). */
  notePoll(queueState) {
    if (!this.active) return;
    this.polls++;
    this.queueState = queueState ?? this.queueState;
    if (this.state === 'running') this.state = 'waiting';
    this.#emit();
  }

  /** A result arrived: back to running. */
  noteProgress() {
    if (this.state === 'waiting') {
      this.state = 'running';
      this.#emit();
    }
  }

  tick() {
    const t = ms(performance.now() - this.started);
    const wait = this.state === 'waiting' ? ` · waiting on the server${this.queueState ? ` (queue: ${this.queueState})` : ''}` : '';
    const polls = this.polls ? ` · ${this.polls} poll${this.polls > 1 ? 's' : ''}` : '';
    this.metaEl.textContent = this.active ? `${t}${wait}${polls}` : `${this.state} after ${t}${polls}`;
  }

  cancel() {
    if (!this.active) return;
    this.state = 'cancelling';
    this.phaseEl.textContent = 'cancelling…';
    this.controller.abort();
    this.#emit();
  }

  /** Throws if cancelled (between steps that take no signal). */
  check() {
    if (this.signal.aborted) throw Object.assign(new Error(`${this.title} was cancelled`), { name: 'AbortError' });
  }

  finish(text) {
    this.state = 'done';
    this.setPhase(text);
    this.#end();
  }

  /** Ends with `e`: cancelled if the user cancelled it or `e` is an abort, failed otherwise
   *  (an operation may abort its own signal after a failure, to stop its other calls). */
  fail(e) {
    this.state = isAbort(e) || this.state === 'cancelling' ? 'cancelled' : 'failed';
    this.setPhase(this.state === 'cancelled' ? 'cancelled' : `${e?.name ?? 'Error'}: ${e?.message ?? e}`);
    this.#end();
  }

  #end() {
    this.cancelButton.disabled = true;
    this.cancelButton.hidden = true;
    this.activity.ended(this);
    this.#emit();
  }
}

export class Activity {
  constructor(list, net) {
    this.list = list;
    this.net = net;
    this.ops = new Set();
    this.timer = null;
    this.inflight = 0;
    this.total = 0;
  }

  /** Starts an operation; `kinds` are the request types (`Sample`, `ForwardBackward`, …)
   *  whose polls count as its own. */
  start(opts) {
    const op = new Operation(this, opts);
    this.ops.add(op);
    this.list.prepend(op.el);
    while (this.list.children.length > 30) this.list.lastElementChild.remove();
    this.timer ??= setInterval(() => {
      for (const o of this.ops) o.tick();
    }, 500);
    return op;
  }

  ended(op) {
    this.ops.delete(op);
    if (this.ops.size === 0 && this.timer) {
      clearInterval(this.timer);
      this.timer = null;
    }
  }

  /** Network events from the connection's instrumented fetch. */
  onNetwork(ev) {
    if (ev.phase === 'start') {
      this.inflight++;
      this.total++;
    } else {
      this.inflight--;
      if (ev.requestType) {
        for (const op of this.ops) {
          if (!op.kinds.has(ev.requestType)) continue;
          if (ev.pending) op.notePoll(ev.queueState);
          else op.noteProgress();
        }
      }
    }
    const last = ev.phase === 'end' ? ` · last: ${ev.method} ${ev.route} → ${ev.status || 'no answer'}` : '';
    this.net.textContent = `${this.inflight} request${this.inflight === 1 ? '' : 's'} in flight · ${this.total} sent${last}`;
    this.net.dataset.inflight = String(this.inflight);
  }
}
