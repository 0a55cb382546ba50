// Small DOM helpers shared by the panels: element builder, error display, tabs.

export const $ = (sel, root = document) => root.querySelector(sel);

/** `h('div.cls', { attr: v, onclick }, ...children)`; strings become text nodes. */
export function h(tag, props = {}, ...children) {
  const [name, ...classes] = tag.split('.');
  const el = document.createElement(name);
  if (classes.length) el.className = classes.join(' ');
  for (const [k, v] of Object.entries(props ?? {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else if (k === 'dataset') Object.assign(el.dataset, v);
    else if (k === 'style' && typeof v === 'object') for (const [p, x] of Object.entries(v)) el.style.setProperty(p, x);
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children.flat()) if (c !== null && c !== undefined && c !== false) el.append(c instanceof Node ? c : String(c));
  return el;
}

/** Whether an error is the user's own cancellation. */
export const isAbort = (e) => e?.name === 'APIUserAbortError' || e?.name === 'AbortError';

/** A one-paragraph explanation of an SDK or relay error. */
export function describeError(e) {
  if (!e) return { title: 'Unknown error', detail: '' };
  const name = e.name ?? 'Error';
  const parts = [];
  if (e.status) parts.push(`HTTP ${e.status}`);
  if (e.category) parts.push(`category: ${e.category}`);
  if (e.field) parts.push(`field: ${e.field}`);
  const code = e.body?.code ?? e.error?.code;
  if (code) parts.push(`code: ${code}`);
  if (e.requestId) parts.push(`request ${e.requestId}`);
  let hint = '';
  if (code === 'origin_not_allowed') hint = 'The relay does not accept this page\'s origin: add it to ALLOWED_ORIGINS.';
  else if (code === 'path_not_allowed') hint = 'The relay only forwards the calls this playground makes.';
  else if (code === 'body_too_large') hint = 'The relay limits request sizes: use fewer or shorter examples.';
  else if (name === 'APIConnectionError') hint = 'No answer: is the server (or relay) running, and does it allow this origin (CORS)?';
  else if (name === 'AuthenticationError') hint = 'The API key was refused.';
  else if (name === 'APITimeoutError') hint = 'The call took longer than its timeout.';
  else if (name === 'NoTokenizer') hint = 'A site serves each tokenizer family\'s files under /tokenizers/ (see "Deploying the page" in the README); the Tokens tab lists the families this one has.';
  return { title: `${name}${parts.length ? ` (${parts.join(', ')})` : ''}`, detail: String(e.message ?? e), hint };
}

/** Shows `e` in an error box (or hides the box for null). */
export function showError(box, e) {
  box.replaceChildren();
  if (!e) {
    box.hidden = true;
    return;
  }
  const d = describeError(e);
  box.append(h('strong', {}, d.title), d.detail);
  if (d.hint) box.append(h('div.hint', {}, d.hint));
  box.dataset.errorName = e.name ?? 'Error';
  box.hidden = false;
}

/** Sets a status line's text and state (`idle`, `running`, `done`, `failed`, `cancelled`). */
export function setStatus(el, state, text) {
  el.dataset.state = state;
  el.textContent = text;
}

/** ARIA tabs with roving tabindex and arrow/Home/End keys. Returns `select(id)`. */
export function setupTabs(tablist) {
  const tabs = [...tablist.querySelectorAll('[role="tab"]')];
  const select = (tab, focus = false) => {
    for (const t of tabs) {
      const on = t === tab;
      t.setAttribute('aria-selected', String(on));
      t.tabIndex = on ? 0 : -1;
      document.getElementById(t.getAttribute('aria-controls')).hidden = !on;
    }
    if (focus) tab.focus();
    tablist.dispatchEvent(new CustomEvent('tabchange', { detail: tab.id }));
  };
  tablist.addEventListener('click', (e) => {
    const tab = e.target.closest('[role="tab"]');
    if (tab) select(tab);
  });
  tablist.addEventListener('keydown', (e) => {
    const i = tabs.indexOf(document.activeElement);
    if (i < 0) return;
    const to = { ArrowRight: i + 1, ArrowLeft: i - 1, Home: 0, End: tabs.length - 1 }[e.key];
    if (to === undefined) return;
    e.preventDefault();
    select(tabs[(to + tabs.length) % tabs.length], true);
  });
  return (id) => select(document.getElementById(id));
}

/** Reads a number input; `fallback` when empty; throws a RangeError naming the field. */
export function num(input, { integer = false, fallback } = {}) {
  const raw = input.value.trim();
  if (raw === '') {
    if (fallback !== undefined) return fallback;
    throw Object.assign(new RangeError(`${labelOf(input)} is required`), { field: input.id });
  }
  const v = Number(raw);
  const bad = !Number.isFinite(v) || (integer && !Number.isInteger(v)) || (input.min !== '' && v < Number(input.min)) || (input.max !== '' && v > Number(input.max));
  if (bad) {
    const range = [input.min && `≥ ${input.min}`, input.max && `≤ ${input.max}`].filter(Boolean).join(' and ');
    throw Object.assign(new RangeError(`${labelOf(input)} must be ${integer ? 'an integer' : 'a number'}${range ? ` ${range}` : ''} (got ${raw})`), { field: input.id });
  }
  return v;
}

function labelOf(input) {
  const l = input.closest('label');
  return l ? l.childNodes[0].textContent.trim() : input.id;
}

/** Formats milliseconds as `1.2 s` / `850 ms`. */
export const ms = (t) => (t >= 1000 ? `${(t / 1000).toFixed(1)} s` : `${Math.round(t)} ms`);
