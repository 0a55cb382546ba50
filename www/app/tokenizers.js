// Tokenizers for the models the playground knows, loaded from this site (never from a
// hub) and kept in the Cache API; chat renderers; per-token display pieces.
import { Tokenizer, Renderer } from 'tinker-wasm';

let base = '/tokenizers/';

/** Where `<family>/tokenizer.json` and `tokenizer_config.json` are served. */
export function setTokenizerBase(url) {
  base = url.endsWith('/') ? url : `${url}/`;
}

export const FAMILY_NAMES = { qwen3: 'Qwen3', llama3: 'Llama 3' };

/** The tokenizer family of a base model (null when the playground has no files for it). */
export function familyOf(baseModel) {
  if (/qwen/i.test(baseModel ?? '')) return 'qwen3';
  if (/llama/i.test(baseModel ?? '')) return 'llama3';
  return null;
}

const loading = new Map();

/** The tokenizer of a family (loaded once per page). */
export function loadTokenizer(family) {
  if (!FAMILY_NAMES[family]) return Promise.reject(new RangeError(`no tokenizer files for family ${family}`));
  if (!loading.has(family)) {
    const dir = new URL(`${base}${family}/`, location.href);
    const p = Tokenizer.fromURL(new URL('tokenizer.json', dir), { configURL: new URL('tokenizer_config.json', dir), cache: 'caches' in globalThis });
    p.catch(() => loading.delete(family));
    loading.set(family, p);
  }
  return loading.get(family);
}

/** The tokenizer of a base model's family; rejects with a clear error for unknown models. */
export function tokenizerFor(baseModel) {
  const family = familyOf(baseModel);
  if (!family) return Promise.reject(new RangeError(`the playground has no tokenizer for ${baseModel}`));
  return loadTokenizer(family);
}

/** A chat renderer: `auto` picks tinker-cookbook's choice for the model. */
export function rendererFor(baseModel, tok, name = 'auto') {
  return name === 'auto' ? Renderer.forModel(baseModel, tok) : new Renderer(name, tok);
}

const specials = new WeakMap();

/** Ids of the tokenizer's special tokens. */
export function specialIds(tok) {
  if (!specials.has(tok)) specials.set(tok, new Set(tok.addedTokens().filter((t) => t.special).map((t) => t.id)));
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
