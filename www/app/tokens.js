// The Tokens panel: live token boundaries, ids and count of the Sample prompt (as
// rendered for model A) or of any text, with any tokenizer family the site has files for
// (the model's by default).
import { $, h, showError } from './ui.js';
import { NoTokenizerError, familyName, loadTokenizer, loadTokenizerIndex, pieces, siteFamily, siteFamilyList, visible } from './tokenizers.js';

export function tokensPanel(app) {
  const el = {
    family: $('#tok-family'), ids: $('#tok-ids'), custom: $('#tok-custom'), customWrap: $('#tok-custom-wrap'),
    summary: $('#tok-summary'), note: $('#tok-source-note'), view: $('#tok-view'), idlist: $('#tok-idlist'), error: $('#tok-error'),
  };
  /** The Sample panel's last prompt: `{ model, family, ids, tok }`, or `{ model, family, error }`. */
  let lastPrompt = null;
  let seq = 0;

  const source = () => document.querySelector('input[name="tok-source"]:checked').value;

  let filledFrom = null;

  /** The family picker: "the model's" and every family the site serves (once per index). */
  async function fillFamilies() {
    const index = await loadTokenizerIndex();
    if (index === filledFrom) return;
    filledFrom = index;
    const keep = el.family.value;
    el.family.replaceChildren(
      h('option', { value: 'auto' }, 'the model\'s (auto)'),
      ...siteFamilyList().map((f) => h('option', { value: f.key }, f.name)),
    );
    el.family.value = [...el.family.options].some((o) => o.value === keep) ? keep : 'auto';
    el.family.dataset.families = String(siteFamilyList().length);
  }

  function clear(text) {
    el.summary.textContent = text;
    el.note.textContent = '';
    el.view.replaceChildren();
    el.view.dataset.count = '0';
    delete el.view.dataset.family;
    el.idlist.textContent = '';
  }

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
    const auto = el.family.value === 'auto' && lastPrompt?.model ? ` (${lastPrompt.model}'s)` : '';
    el.summary.textContent = `${ids.length} tokens · ${chars} characters · ${familyName(family)} tokenizer${auto} (${tok.engine} engine) · ${what}`;
    const f = siteFamily(family);
    el.note.textContent = f?.source ? `Files: ${f.kind ? `${f.kind} · ` : ''}${f.source}` : '';
    el.idlist.textContent = `[${Array.from(ids).join(', ')}]`;
  }

  /** The family to use: the picked one, or the Sample model's (null and why, when it has none here). */
  function family() {
    if (el.family.value !== 'auto') return { family: el.family.value };
    if (!lastPrompt) return { family: null, why: null };
    if (lastPrompt.error?.name === 'NoTokenizer' || !siteFamily(lastPrompt.family)) {
      return { family: null, why: lastPrompt.error ?? new NoTokenizerError(`this site has no tokenizer files for ${lastPrompt.model}`) };
    }
    return { family: lastPrompt.family };
  }

  async function update() {
    const n = ++seq;
    showError(el.error, null);
    el.customWrap.hidden = source() !== 'custom';
    try {
      await fillFamilies();
      if (n !== seq) return;
      const { family: fam, why } = family();
      if (why) {
        clear('The Sample model has no tokenizer here: pick a tokenizer family (and Custom text) to see tokens.');
        showError(el.error, why);
        return;
      }
      if (source() === 'prompt') {
        if (!lastPrompt) return clear('Connect and pick a model in Sample: its rendered prompt shows here. Or choose Custom text.');
        if (lastPrompt.error) {
          clear('The Sample prompt could not be rendered.');
          showError(el.error, lastPrompt.error);
          return;
        }
        if (fam === lastPrompt.family) return draw(lastPrompt.tok, fam, lastPrompt.ids, 'the Sample prompt, as rendered');
        // Another tokenizer: re-encode the rendered text.
        el.summary.textContent = `Loading the ${familyName(fam)} tokenizer…`;
        const tok = await loadTokenizer(fam);
        if (n !== seq) return;
        return draw(tok, fam, tok.encode(lastPrompt.tok.decode(lastPrompt.ids)), 'the Sample prompt\'s text, re-encoded');
      }
      const custom = fam ?? (siteFamily('qwen3') ? 'qwen3' : siteFamilyList()[0]?.key);
      if (!custom) return clear('This site serves no tokenizer files.');
      if (el.view.dataset.family !== custom) el.summary.textContent = `Loading the ${familyName(custom)} tokenizer…`;
      const tok = await loadTokenizer(custom);
      if (n !== seq) return;
      draw(tok, custom, tok.encode(el.custom.value), 'custom text');
    } catch (e) {
      if (n === seq) showError(el.error, e);
    }
  }

  app.bus.addEventListener('prompt', (e) => {
    lastPrompt = e.detail;
    update();
  });
  el.custom.addEventListener('input', update);
  el.family.addEventListener('change', update);
  el.ids.addEventListener('change', () => el.view.classList.toggle('no-ids', !el.ids.checked));
  for (const r of document.querySelectorAll('input[name="tok-source"]')) r.addEventListener('change', update);
  update();
  return { update };
}
