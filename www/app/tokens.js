// The Tokens panel: live token boundaries, ids and count of the Sample prompt (as
// rendered for model A) or of any text, with either tokenizer.
import { $, h, showError } from './ui.js';
import { FAMILY_NAMES, loadTokenizer, pieces, visible } from './tokenizers.js';

export function tokensPanel(app) {
  const el = {
    family: $('#tok-family'), ids: $('#tok-ids'), custom: $('#tok-custom'), customWrap: $('#tok-custom-wrap'),
    summary: $('#tok-summary'), view: $('#tok-view'), idlist: $('#tok-idlist'), error: $('#tok-error'),
  };
  let lastPrompt = null;
  let seq = 0;

  const source = () => document.querySelector('input[name="tok-source"]:checked').value;

  function draw(tok, family, ids, what) {
    const parts = pieces(tok, ids);
    const chips = [];
    parts.forEach((p, i) => {
      const shown = p.partial ? '' : p.special ? p.text : visible(p.text);
      const chip = h('span.chip', {
        dataset: { id: String(p.id), i: String(i) },
        style: { '--h': String((i * 67) % 360) },
        title: `${JSON.stringify(p.text)} · id ${p.id}${p.special ? ' · special' : ''}`,
      }, h('span.text', {}, shown || '·'), h('small', {}, String(p.id)));
      if (p.special) chip.classList.add('special-tok');
      if (p.partial) chip.classList.add('partial');
      chips.push(chip);
      if (!p.special && p.text.endsWith('\n')) chips.push(h('span.break'));
    });
    el.view.replaceChildren(...chips);
    el.view.dataset.count = String(ids.length);
    el.view.dataset.family = family;
    el.view.classList.toggle('no-ids', !el.ids.checked);
    const chars = parts.reduce((a, p) => a + [...p.text].length, 0);
    el.summary.textContent = `${ids.length} tokens · ${chars} characters · ${FAMILY_NAMES[family]} tokenizer (${tok.engine} engine) · ${what}`;
    el.idlist.textContent = `[${Array.from(ids).join(', ')}]`;
  }

  async function update() {
    const n = ++seq;
    showError(el.error, null);
    el.customWrap.hidden = source() !== 'custom';
    try {
      if (source() === 'prompt') {
        if (!lastPrompt) {
          el.summary.textContent = 'Connect and pick a model in Sample: its rendered prompt shows here. Or choose Custom text.';
          el.view.replaceChildren();
          el.view.dataset.count = '0';
          return;
        }
        const family = el.family.value === 'auto' ? lastPrompt.family : el.family.value;
        if (family === lastPrompt.family) return draw(lastPrompt.tok, family, lastPrompt.ids, 'the Sample prompt, as rendered');
        // Another tokenizer: re-encode the rendered text.
        const tok = await loadTokenizer(family);
        if (n !== seq) return;
        return draw(tok, family, tok.encode(lastPrompt.tok.decode(lastPrompt.ids)), 'the Sample prompt\'s text, re-encoded');
      }
      const family = el.family.value === 'auto' ? lastPrompt?.family ?? 'qwen3' : el.family.value;
      if (!el.view.dataset.family || el.view.dataset.family !== family) el.summary.textContent = `Loading the ${FAMILY_NAMES[family]} tokenizer…`;
      const tok = await loadTokenizer(family);
      if (n !== seq) return;
      draw(tok, family, tok.encode(el.custom.value), 'custom text');
    } catch (e) {
      if (n === seq) showError(el.error, e);
    }
  }

  app.bus.addEventListener('prompt', (e) => {
    lastPrompt = e.detail;
    if (source() === 'prompt') update();
  });
  el.custom.addEventListener('input', update);
  el.family.addEventListener('change', update);
  el.ids.addEventListener('change', () => el.view.classList.toggle('no-ids', !el.ids.checked));
  for (const r of document.querySelectorAll('input[name="tok-source"]')) r.addEventListener('change', update);
  update();
  return { update };
}
