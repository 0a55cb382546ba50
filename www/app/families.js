// Which tokenizer family's files serve a model: pure functions over tinker-cookbook's
// catalogue, shared by the page (tokenizers.js) and the local site server
// (www/dev/static.mjs, whose /tokenizers/by-id/ routes the relay's TOKENIZER_BASE_URL uses).

/** The tokenizer family each cookbook renderer is made for (`role_colon`: any base model's). */
export const RENDERER_FAMILIES = [
  [/^qwen3_[58](_|$)/, 'qwen3_5'],
  [/^qwen3/, 'qwen3'],
  [/^llama3$/, 'llama3'],
  [/^deepseekv3/, 'deepseek_v3'],
  [/^deepseekv4_1/, 'deepseek_v4_1'],
  [/^glm5/, 'glm5'],
  [/^kimi_k2$/, 'kimi_k2'],
  [/^kimi_k(25|26|31)/, 'kimi_k25'],
  [/^nemotron3/, 'nemotron3'],
  [/^gpt_oss/, 'gpt_oss'],
  [/^tml_v0$/, 'o200k_base_chat'],
];

/** The family of a renderer: the first of `families` (`{ key, renderers }`) listing it, else
 *  RENDERER_FAMILIES' guess (null for `role_colon`). */
export function rendererFamily(name, families = []) {
  if (name === 'role_colon') return null;
  for (const f of families) if (f.renderers.includes(name)) return f.key;
  return RENDERER_FAMILIES.find(([re]) => re.test(name))?.[1] ?? null;
}

/**
 * The family of a model from its attributes (`getModelAttributes`): that of its recommended
 * renderers, or for a base model that of the chat models of its organisation and version
 * (Qwen3-8B-Base: Qwen3). `catalogue()` gives every model's attributes; `familyOf` a renderer's family.
 */
export function modelFamily(attrs, catalogue, familyOf) {
  const own = (a) => a.recommended_renderers.map(familyOf).find(Boolean) ?? null;
  const mine = own(attrs);
  if (mine) return mine;
  const chat = catalogue().filter((c) => c.organization === attrs.organization && own(c));
  const same = chat.find((c) => c.version_str === attrs.version_str) ?? chat[0];
  return same ? own(same) : null;
}
