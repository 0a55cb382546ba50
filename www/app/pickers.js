// The model and renderer pickers shared by the panels: every model the server reports,
// grouped by organisation with the cookbook's attributes; a model's recommended renderers
// (the first is the default) and raw text.
import { h } from './ui.js';
import { attributeText, familyName, modelInfo } from './tokenizers.js';
import { modelKey } from './connection.js';

/** The model picked when the current one is gone: the config's, else this, else the first chat model with a tokenizer here. */
export const DEFAULT_MODEL = 'Qwen/Qwen3-8B';

/** The value of the renderer pickers' raw text choice. */
export const RAW = 'raw';

function modelOption(m) {
  const info = modelInfo(m.model_name);
  const notes = [attributeText(info)];
  if (info.known && !info.hasFiles) notes.push('no tokenizer on this site');
  return h('option', {
    value: modelKey('base', m.model_name),
    title: m.model_name,
    dataset: { org: info.org, kind: info.known ? (info.chat ? 'chat' : 'base') : 'unknown', vision: String(info.vision), family: info.family ?? '', tokenizer: String(info.hasFiles) },
  }, `${info.short} · ${notes.join(' · ')}`);
}

/**
 * Fills a model <select> from the model lists: base models in one group per organisation
 * (the server's order), then the sampler checkpoints. Keeps the current choice if it is
 * still offered, else picks `prefer`, `DEFAULT_MODEL`, or the first chat model that has a
 * tokenizer here.
 */
export function fillModelSelect(select, models, { checkpoints = true, trainableOnly = false, prefer = null } = {}) {
  const keep = select.value;
  select.replaceChildren();
  const base = models.base.filter((m) => (trainableOnly ? m.trainable !== false : m.sampleable !== false));
  const groups = new Map();
  for (const m of base) {
    const org = modelInfo(m.model_name).org;
    if (!groups.has(org)) groups.set(org, []);
    groups.get(org).push(m);
  }
  for (const [org, ms] of groups) select.append(h('optgroup', { label: org }, ms.map(modelOption)));
  if (checkpoints && models.samplers.length) {
    select.append(h('optgroup', { label: 'Your sampler checkpoints' }, models.samplers.map((c) =>
      h('option', { value: modelKey('ckpt', c.path), title: c.path }, `${c.name} · ${c.baseModel ?? 'unknown base'} · ${c.runId.slice(0, 8)}…`))));
  }
  const offered = (v) => v && [...select.options].some((o) => o.value === v);
  const firstGood = base.find((m) => modelInfo(m.model_name).chat && modelInfo(m.model_name).hasFiles);
  const choice = [keep, prefer && modelKey('base', prefer), modelKey('base', DEFAULT_MODEL), firstGood && modelKey('base', firstGood.model_name)].find(offered);
  if (choice) select.value = choice;
}

/**
 * Fills a renderer <select> for a base model: its recommended renderers (the first,
 * marked, is the default) and, with `raw`, raw text. Keeps the current choice if offered.
 */
export function fillRendererSelect(select, baseModel, { raw = true } = {}) {
  const keep = select.value;
  const info = modelInfo(baseModel);
  select.replaceChildren(
    ...info.renderers.map((r, i) => h('option', { value: r }, i === 0 ? `${r} (recommended)` : r)),
    raw ? h('option', { value: RAW }, 'raw text (no template)') : null,
  );
  select.dataset.model = baseModel;
  if ([...select.options].some((o) => o.value === keep)) select.value = keep;
  else if (select.options.length) select.selectedIndex = 0;
}

/** The renderer a model uses for a choice made for another model (comparisons): the same one if it is among its renderers, else its recommended one. */
export function rendererOf(baseModel, choice) {
  if (choice === RAW) return RAW;
  const { renderers } = modelInfo(baseModel);
  return renderers.includes(choice) ? choice : renderers[0] ?? RAW;
}

/** One line about a base model: attributes, renderers, tokenizer. */
export function modelSummary(baseModel) {
  const info = modelInfo(baseModel);
  if (!info.known) return `${baseModel}: not in tinker-cookbook 0.6.1's model list, so the playground has no renderer or tokenizer for it.`;
  const a = info.attrs;
  const what = `${info.chat ? 'chat' : 'base'} model${info.vision ? ', vision' : ''}${info.audio ? ', audio input' : ''}`;
  const tok = info.hasFiles ? `${familyName(info.family)} tokenizer` : `no tokenizer on this site (needs ${familyName(info.family ?? '?')})`;
  return `${baseModel}: ${what} · ${a.organization} ${a.version_str} · ${info.size} · renderers: ${info.renderers.join(', ')} · ${tok}`;
}
