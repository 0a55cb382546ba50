// Tokenizers for the models the playground knows, loaded from this site (never from a
// hub) and kept in the Cache API; what tinker-cookbook knows of each model (attributes,
// renderers, tokenizer family); chat renderers; per-token display pieces.
import { Tokenizer, Renderer, getModelAttributes, listModels, resolveTokenizerId } from 'tinker-wasm/cookbook';
import { modelFamily, rendererFamily } from './families.js';

let base = '/tokenizers/';

/** Where `index.json` and `<family>/tokenizer.json` + `tokenizer_config.json` are served. */
export function setTokenizerBase(url) {
  base = url.endsWith('/') ? url : `${url}/`;
  indexPromise = null;
}

/** Names of the tokenizer families (keys as the site's index and tinker-sim name them). */
export const FAMILY_NAMES = {
  qwen3: 'Qwen3',
  llama3: 'Llama 3',
  qwen3_5: 'Qwen3.5 / 3.6 / 3.8',
  deepseek_v3: 'DeepSeek V3.1',
  deepseek_v4_1: 'DeepSeek V4.1',
  glm5: 'GLM-5',
  kimi_k2: 'Kimi K2',
  kimi_k25: 'Kimi K2.5 / K2.6',
  nemotron3: 'Nemotron 3',
  gpt_oss: 'gpt-oss (o200k_harmony)',
  o200k_base_chat: 'Inkling (o200k_base_chat)',
};

export const familyName = (key) => FAMILY_NAMES[key] ?? key;

// ---- The site's tokenizer index: which families it has files for -------------------------

let indexPromise = null;
/** KEY → { key, name, renderers, kind, source, note } of the families this site serves. */
let siteFamilies = new Map();
let indexError = null;

/**
 * Loads `/tokenizers/index.json` (`{ families: { KEY: { renderers, kind?, source?, note? } } }`).
 * A site without one serves no tokenizer: models stay selectable, tokenizers are unavailable.
 */
export function loadTokenizerIndex() {
  indexPromise ??= (async () => {
    let families = {};
    indexError = null;
    try {
      const r = await fetch(new URL('index.json', new URL(base, location.href)), { cache: 'no-cache' });
      if (!r.ok) throw new Error(`HTTP ${r.status}`);
      families = (await r.json())?.families ?? {};
    } catch (e) {
      indexError = `${base}index.json: ${e.message}`;
    }
    siteFamilies = new Map(Object.entries(families).map(([key, v]) => [key, { key, name: v.name ?? familyName(key), renderers: v.renderers ?? [], kind: v.kind, source: v.source, note: v.note }]));
    infos.clear();
    return siteFamilies;
  })();
  return indexPromise;
}

/** The families this site has files for, in the index's order. */
export const siteFamilyList = () => [...siteFamilies.values()];
export const hasFamily = (key) => siteFamilies.has(key);
export const siteFamily = (key) => siteFamilies.get(key);

/** The family a renderer's tokenizer belongs to (null for `role_colon`). */
export function familyOfRenderer(name) {
  return rendererFamily(name, siteFamilies.values());
}

// ---- The cookbook's catalogue -------------------------------------------------------------

const infos = new Map();
let catalogue = null;

/**
 * What the page knows of a base model: `{ name, org, short, known, attrs, chat, vision,
 * audio, size, renderers, family, hasFiles }`. `known` is false for a model the cookbook
 * (tinker-cookbook 0.6.1) does not list: no renderer, no tokenizer. A base model's family
 * is that of the chat models of its organisation and version (e.g. Qwen3-8B-Base: Qwen3).
 */
export function modelInfo(name) {
  if (!infos.has(name)) {
    const slash = name.indexOf('/');
    const info = { name, org: slash > 0 ? name.slice(0, slash) : '(other)', short: name.slice(slash + 1), known: false, attrs: null, chat: null, vision: false, audio: false, size: '', renderers: [], family: null };
    try {
      const a = getModelAttributes(name);
      Object.assign(info, { known: true, attrs: a, org: a.organization, chat: a.is_chat, vision: a.is_vl, audio: a.is_audio_in, size: a.size_str, renderers: [...a.recommended_renderers] });
      info.family = modelFamily(a, () => (catalogue ??= listModels().map((m) => getModelAttributes(m))), familyOfRenderer);
    } catch {
      // Not in the cookbook's list: selectable, but nothing to render or tokenize with.
    }
    info.hasFiles = info.family !== null && siteFamilies.has(info.family);
    infos.set(name, info);
  }
  return infos.get(name);
}

/** A short description of a model's attributes: `chat · vision · 8B`. */
export function attributeText(info) {
  if (!info.known) return 'not in the cookbook\'s model list';
  return [info.chat ? 'chat' : 'base', info.vision && 'vision', info.audio && 'audio in', info.size].filter(Boolean).join(' · ');
}

// ---- Tokenizers ------------------------------------------------------------------------------

/** A tokenizer the site cannot provide (no files for the model's family, or an unknown model). */
export class NoTokenizerError extends Error {
  constructor(message, { model, family } = {}) {
    super(message);
    this.name = 'NoTokenizer';
    this.model = model;
    this.family = family;
  }
}

const loading = new Map();
const loaded = new Set();

/** Whether a family's tokenizer is loaded (else `loadTokenizer` fetches its files). */
export const isLoaded = (family) => loaded.has(family);

/** The tokenizer of a family (loaded once per page). */
export function loadTokenizer(family) {
  if (!siteFamilies.has(family)) {
    return Promise.reject(new NoTokenizerError(`this site has no tokenizer files for the ${familyName(family)} family (${base}${family}/)${indexError ? `; its tokenizer index could not be read (${indexError})` : ''}`, { family }));
  }
  if (!loading.has(family)) {
    const dir = new URL(`${base}${family}/`, location.href);
    const p = Tokenizer.fromURL(new URL('tokenizer.json', dir), { config_url: new URL('tokenizer_config.json', dir), cache: 'caches' in globalThis });
    p.then(() => loaded.add(family), () => loading.delete(family));
    loading.set(family, p);
  }
  return loading.get(family);
}

/** Why a model has no tokenizer here, or null when it has one. */
export function noTokenizerReason(baseModel) {
  const info = modelInfo(baseModel);
  if (!info.known) return `the playground does not know which tokenizer ${baseModel} uses: it is not in tinker-cookbook 0.6.1's model list`;
  if (!info.family) return `the playground does not know which tokenizer ${baseModel} uses`;
  if (!info.hasFiles) {
    return `this site has no tokenizer files for ${baseModel}: it needs the ${familyName(info.family)} tokenizer (${base}${info.family}/tokenizer.json)${indexError ? `, and the site's tokenizer index could not be read (${indexError})` : ''}. The model can still be picked, but prompts cannot be rendered nor samples read here`;
  }
  return null;
}

/** The tokenizer of a base model's family; rejects with a NoTokenizerError saying why not. */
export async function tokenizerFor(baseModel) {
  await loadTokenizerIndex();
  const why = noTokenizerReason(baseModel);
  if (why) throw new NoTokenizerError(why, { model: baseModel, family: modelInfo(baseModel).family });
  return loadTokenizer(modelInfo(baseModel).family);
}

/**
 * The tokenizer of a tokenizer id, from this site's files: the ServiceClient's
 * `tokenizerLoader` (a training client's getTokenizer, which supervised.train uses). The id
 * is a model's name or one that models share (resolveTokenizerId).
 */
export async function tokenizerForId(id) {
  const model = modelInfo(id).known ? id : listModels().find((m) => resolveTokenizerId(m) === id);
  if (!model) throw new NoTokenizerError(`no model of this site's lineup uses the tokenizer ${id}`, { model: id, family: null });
  return tokenizerFor(model);
}

/** A chat renderer: `auto` picks tinker-cookbook's choice for the model. */
export function rendererFor(baseModel, tok, name = 'auto') {
  return name === 'auto' ? Renderer.forModel(baseModel, tok) : new Renderer(name, tok);
}

const specials = new WeakMap();

/** Ids of the tokenizer's added tokens (shown as special: many families, e.g. DeepSeek's
 *  role markers, do not flag their control tokens `special`). */
export function specialIds(tok) {
  if (!specials.has(tok)) specials.set(tok, new Set(tok.addedTokens().map((t) => t.id)));
  return specials.get(tok);
}

/**
 * Display pieces of a token sequence: the text each token adds. A character split
 * over several byte-level tokens shows on its last token; the others are `partial`.
 */
export function pieces(tok, ids) {
  const sp = specialIds(tok);
  const out = [];
  let group = [];
  for (let i = 0; i < ids.length; i++) {
    group.push(ids[i]);
    const text = tok.decode(group);
    if (text.endsWith('\uFFFD') && i < ids.length - 1 && group.length < 4) continue;
    group.forEach((id, j) => {
      const last = j === group.length - 1;
      out.push({ id, text: last ? text : '', partial: !last, special: sp.has(id) });
    });
    group = [];
  }
  return out;
}

/** Renders `text` with visible whitespace (for token chips and tooltips). */
export function visible(text) {
  return text.replace(/ /g, '·').replace(/\n/g, '↵').replace(/\t/g, '→').replace(/\r/g, '␍');
}
