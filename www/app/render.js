// Sampled text with per-token logprob colouring. Each token is a span carrying its id
// and logprob (data attributes); hovering a token, or moving through a sample with the
// arrow keys, shows its id, logprob, probability and the top alternatives.
import { h } from './ui.js';
import { pieces, visible } from './tokenizers.js';

let uid = 0;

/** Hue for a logprob: red (≤ −10) through yellow to green (0). */
export function hue(lp) {
  if (lp === null || lp === undefined || Number.isNaN(lp)) return 220;
  const t = Math.min(1, Math.max(0, 1 + lp / 10));
  return Math.round(120 * t);
}

const fmt = (lp) => (lp === null || lp === undefined ? 'n/a' : lp.toFixed(3));
const pct = (lp) => (lp === null || lp === undefined ? '' : `${(Math.exp(lp) * 100).toFixed(lp > -4.6 ? 1 : 3)}%`);

/**
 * A focusable token strip: `ids` with `logprobs[i]` (or null) and optional
 * `topk[i]` = [[id, logprob], …] alternatives.
 */
export function tokenStrip(tok, ids, logprobs, { topk = null, label = 'Tokens' } = {}) {
  const base = `t${++uid}`;
  const parts = pieces(tok, Array.from(ids));
  const strip = h('div.tokens', { role: 'listbox', tabindex: '0', 'aria-label': `${label}: arrow keys move between tokens` });
  parts.forEach((p, i) => {
    const lp = logprobs ? logprobs[i] ?? null : null;
    const span = h('span.tok', {
      id: `${base}-${i}`,
      role: 'option',
      'aria-selected': 'false',
      dataset: { i: String(i), tokenId: String(p.id), logprob: lp === null ? '' : String(lp) },
      style: { '--h': String(hue(lp)) },
    }, p.text);
    if (p.partial) span.classList.add('partial');
    if (p.special) span.classList.add('special-tok');
    span.setAttribute('aria-label', `${JSON.stringify(p.text)}, id ${p.id}${lp === null ? '' : `, logprob ${fmt(lp)}`}`);
    span._details = () => details(tok, p, i, lp, topk?.[i]);
    strip.append(span);
  });
  return strip;
}

function details(tok, p, i, lp, alts) {
  const lines = [
    `${JSON.stringify(visible(p.text || '(part of the next character)'))}`,
    `id ${p.id} · position ${i}${p.special ? ' · special' : ''}`,
  ];
  if (lp !== null) lines.push(`logprob ${fmt(lp)} · p ${pct(lp)}`);
  if (alts?.length) {
    lines.push('alternatives:');
    for (const [id, alp] of alts) lines.push(`  ${JSON.stringify(visible(tok.decode([id])))} ${fmt(alp)} (${pct(alp)})`);
  }
  return lines.join('\n');
}

/** One model's results: a header, optional prompt scores, and each sample. */
export function resultColumn({ key, title, subtitle, tok, promptIds, res, answer = null, elapsedMs }) {
  const col = h('section.col', { dataset: { model: key }, 'aria-label': `Results of ${title}` },
    h('h3', {}, title, subtitle ? h('small', {}, ` ${subtitle}`) : null));
  if (answer) {
    const mean = answer.logprobs.reduce((a, b) => a + b, 0) / Math.max(1, answer.logprobs.length);
    col.append(h('div.seq.answer-scores', { dataset: { meanLogprob: String(mean), tokens: String(answer.ids.length) } },
      h('header', {}, h('span', {}, 'Reference answer'), h('span', {}, `${answer.ids.length} tokens`),
        h('span', {}, `mean logprob ${mean.toFixed(3)}`), h('span', {}, `perplexity ${Math.exp(-mean).toFixed(1)}`)),
      tokenStrip(tok, answer.ids, answer.logprobs, { label: 'Reference answer tokens' }),
      h('div.inspector', { 'aria-live': 'polite' })));
  }
  if (res.prompt_logprobs) {
    const scored = res.prompt_logprobs.filter((x) => x !== null);
    const mean = scored.reduce((a, b) => a + b, 0) / Math.max(1, scored.length);
    col.append(h('div.seq.prompt-scores', { dataset: { promptTokens: String(promptIds.length) } },
      h('header', {}, h('span', {}, 'Prompt'), h('span', {}, `${promptIds.length} tokens`), h('span', {}, `mean logprob ${mean.toFixed(3)}`)),
      tokenStrip(tok, promptIds, res.prompt_logprobs, { topk: res.topk_prompt_logprobs, label: 'Prompt tokens' }),
      h('div.inspector', { 'aria-live': 'polite' })));
  }
  res.sequences.forEach((s, i) => {
    const lps = s.logprobs ? Array.from(s.logprobs) : null;
    const total = lps ? lps.reduce((a, b) => a + b, 0) : null;
    const mean = lps && lps.length ? total / lps.length : null;
    col.append(h('article.seq', {
      dataset: { sampleIndex: String(i), tokens: String(s.tokens.length), stopReason: s.stop_reason, meanLogprob: mean === null ? '' : String(mean) },
      'aria-label': `Sample ${i + 1}`,
    },
    h('header', {},
      h('span', {}, `#${i + 1}`),
      h('span', {}, `${s.tokens.length} tokens`),
      h('span', {}, `stop: ${s.stop_reason}`),
      mean === null ? null : h('span', {}, `mean logprob ${mean.toFixed(3)}`),
      mean === null ? null : h('span', {}, `perplexity ${Math.exp(-mean).toFixed(1)}`)),
    tokenStrip(tok, s.tokens, lps, { topk: s.topk_logprobs, label: `Sample ${i + 1}` }),
    h('div.inspector', { 'aria-live': 'polite' })));
  });
  if (elapsedMs !== undefined) col.dataset.elapsedMs = String(Math.round(elapsedMs));
  return col;
}

/** Hover and keyboard inspection for every token strip under `root`. */
export function installTokenInspector(root, tooltip) {
  let anchor = null;
  const show = (span) => {
    const strip = span.closest('.tokens');
    for (const t of strip.querySelectorAll('.tok.active')) {
      t.classList.remove('active');
      t.setAttribute('aria-selected', 'false');
    }
    span.classList.add('active');
    span.setAttribute('aria-selected', 'true');
    strip.setAttribute('aria-activedescendant', span.id);
    const text = span._details?.() ?? '';
    const inspector = strip.parentElement.querySelector('.inspector');
    if (inspector) inspector.textContent = text.replace(/\n/g, ' · ');
    tooltip.textContent = text;
    tooltip.hidden = false;
    anchor = span;
    place();
  };
  // Keeps the tooltip next to its token (scrolling moves the token, not the tooltip).
  const place = () => {
    if (!anchor || tooltip.hidden) return;
    const r = anchor.getBoundingClientRect();
    if (r.bottom < 0 || r.top > window.innerHeight) {
      tooltip.hidden = true;
      return;
    }
    const tw = tooltip.offsetWidth;
    const th = tooltip.offsetHeight;
    const left = Math.max(4, Math.min(window.innerWidth - tw - 4, r.left));
    const top = r.bottom + 6 + th > window.innerHeight ? r.top - th - 6 : r.bottom + 6;
    tooltip.style.left = `${left}px`;
    tooltip.style.top = `${Math.max(4, top)}px`;
  };
  const hide = () => {
    tooltip.hidden = true;
    anchor = null;
  };
  root.addEventListener('mouseover', (e) => {
    const span = e.target.closest?.('.tok');
    if (span) show(span);
  });
  root.addEventListener('mouseout', (e) => {
    if (e.target.closest?.('.tok') && !e.relatedTarget?.closest?.('.tok')) hide();
  });
  root.addEventListener('focusin', (e) => {
    if (!e.target.classList?.contains('tokens')) return;
    const active = e.target.querySelector('.tok.active') ?? e.target.querySelector('.tok');
    if (active) show(active);
  });
  root.addEventListener('focusout', (e) => {
    if (e.target.classList?.contains('tokens')) hide();
  });
  root.addEventListener('keydown', (e) => {
    const strip = e.target.closest?.('.tokens');
    if (!strip || e.target !== strip) return;
    const toks = [...strip.querySelectorAll('.tok')];
    if (!toks.length) return;
    const i = toks.findIndex((t) => t.classList.contains('active'));
    const to = { ArrowRight: i + 1, ArrowDown: i + 1, ArrowLeft: i - 1, ArrowUp: i - 1, Home: 0, End: toks.length - 1 }[e.key];
    if (e.key === 'Escape') {
      hide();
      e.stopPropagation();
      return;
    }
    if (to === undefined) return;
    e.preventDefault();
    const span = toks[Math.max(0, Math.min(toks.length - 1, to))];
    show(span);
    span.scrollIntoView({ block: 'nearest' });
  });
  window.addEventListener('scroll', place, { passive: true });
  window.addEventListener('resize', place);
}
