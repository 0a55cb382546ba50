// Tokenizer parity: the wasm package (as shipped, Node entry) against the native oracle
// (PyPI `tokenizers`, `transformers` and `tiktoken`, see oracle.py) over the corpus of
// corpus.mjs.
//   node tests/tokenizer/parity.mjs EXPECTED_JSON
// For every family the oracle wrote (tokenizer.json files: Qwen3, Llama-3, DeepSeek V3,
// gpt-oss, DeepSeek V4.1; tiktoken vocabularies through Tokenizer.fromTiktoken: Qwen3.5/3.6,
// o200k_base, o200k_harmony), each engine that can load it (the fast path and the general
// engine) is checked for: the engine the file takes; vocab size; ids of every document;
// decode(ids) equal to the native decode, and to the text (NFC where the tokenizer
// normalises); add_special_tokens; texts with special and added tokens written in them,
// encoded with and without split_special_tokens (`encode_special_tokens = True`,
// `encode_ordinary`) and decoded with skip_special_tokens; decodes of short id windows that
// cut characters (U+FFFD); added tokens and token strings. For Qwen3 and Llama-3 also:
// applyChatTemplate and encodeChat against apply_chat_template; renderer prompts (and
// supervised examples) against the tokens of the HF rendering. And resolveTokenizerId for
// every model of tinker-cookbook's lineup against the Python SDK's rule.
import { readFileSync, existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Tokenizer, Renderer, resolveTokenizerId, tokenizerRevision } from '../../pkg/index.js';
import { buildCorpus, corpusBytes } from './corpus.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const expected = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const cases = JSON.parse(readFileSync(path.join(root, 'tests/tokenizer/chat_cases.json'), 'utf8'));
const docs = buildCorpus();
// The engine each family's file takes with engine 'auto' (the fast path where a hand-written
// split pattern exists; the general `tokenizers` engine otherwise).
const ENGINE = {
  qwen3: 'fast',
  llama3: 'fast',
  deepseek_v3: 'fast',
  gptoss: 'fast',
  deepseek_v4_1: 'fast',
  qwen3_5: 'fast',
  o200k_base: 'fast',
  o200k_harmony: 'fast',
};
const NFC = new Set(['qwen3', 'qwen3_5']);

let passed = 0;
let failed = 0;
const check = (ok, what) => {
  if (ok) passed++;
  else {
    failed++;
    if (failed <= 30) console.log(`not ok - ${what}`);
  }
};
const same = (a, b) => a.length === b.length && a.every((x, i) => x === b[i]);
const firstDiff = (a, b) => {
  let i = 0;
  while (i < a.length && a[i] === b[i]) i++;
  return i;
};
const totals = [];

console.log(`# corpus: ${docs.length} documents, ${(corpusBytes(docs) / 1e6).toFixed(2)} MB; oracle tokenizers ${expected.versions.tokenizers}, transformers ${expected.versions.transformers}, tiktoken ${expected.versions.tiktoken}`);
for (const family of Object.keys(ENGINE)) check(family in expected.models, `the oracle covers ${family}`);

/** Every check that does not depend on the chat template, for one loaded tokenizer. */
function checkEngine(family, label, tok, exp) {
  let nIds = 0;
  let docFails = 0;
  check(tok.vocabSize === exp.vocab_size, `${label}: vocabSize ${tok.vocabSize} vs ${exp.vocab_size}`);
  docs.forEach((doc, i) => {
    const ids = tok.encode(doc.text);
    nIds += ids.length;
    const want = exp.ids[i];
    const ok = same(ids, want);
    if (!ok) {
      docFails++;
      const at = firstDiff(ids, want);
      if (docFails <= 5) console.log(`# ${label} ${doc.name}: first difference at id ${at}: ours ${JSON.stringify([...ids.slice(at, at + 5)])} native ${JSON.stringify(want.slice(at, at + 5))} near ${JSON.stringify(tok.decode(want.slice(Math.max(0, at - 3), at + 3)))}`);
    }
    check(ok, `${label}: ids of ${doc.name}`);
    if (exp.ordinary_ids) {
      const ord = tok.encode(doc.text, { split_special_tokens: true });
      nIds += ord.length;
      check(same(ord, exp.ordinary_ids[i]), `${label}: encode_ordinary ids of ${doc.name}`);
    }
    const dec = tok.decode(want);
    check(dec === exp.decoded[i], `${label}: decode of ${doc.name} equals native decode`);
    const norm = NFC.has(family) ? doc.text.normalize('NFC') : doc.text;
    check(dec === norm, `${label}: decode(encode(${doc.name})) round-trips`);
  });
  (exp.special_ids ?? []).forEach((want, i) => {
    check(same(tok.encode(docs[i].text.slice(0, 200), { add_special_tokens: true }), want), `${label}: add_special_tokens on ${docs[i].name}`);
  });
  let textFails = 0;
  exp.special_texts.forEach((t, i) => {
    const a = tok.encode(t);
    const b = tok.encode(t, { split_special_tokens: true });
    nIds += a.length + b.length;
    const ok = same(a, exp.special_texts_ids[i]) && same(b, exp.special_texts_split_ids[i]);
    if (!ok) textFails++;
    check(same(a, exp.special_texts_ids[i]), `${label}: ids of text ${i} with special tokens ${JSON.stringify(t.slice(0, 60))}`);
    check(same(b, exp.special_texts_split_ids[i]), `${label}: split_special_tokens ids of text ${i} ${JSON.stringify(t.slice(0, 60))}\n  ours:   ${JSON.stringify([...b.slice(0, 20)])}\n  native: ${JSON.stringify(exp.special_texts_split_ids[i].slice(0, 20))}`);
    check(tok.decode(exp.special_texts_ids[i], { skip_special_tokens: true }) === exp.special_texts_decoded_skip[i], `${label}: skip_special_tokens decode of text ${i}`);
  });
  // encodeBatch takes the same options.
  const batch = tok.encodeBatch(exp.special_texts.slice(0, 5), { split_special_tokens: true });
  check(batch.every((b, i) => same(b, exp.special_texts_split_ids[i])), `${label}: encodeBatch with split_special_tokens`);
  let winFails = 0;
  exp.windows.forEach((w, i) => {
    const ok = tok.decode(w) === exp.windows_decoded[i];
    if (!ok) winFails++;
    check(ok, `${label}: decode of window ${JSON.stringify(w)}: ${JSON.stringify(tok.decode(w))} vs ${JSON.stringify(exp.windows_decoded[i])}`);
  });
  if (exp.added_tokens) {
    const got = tok.addedTokens().map((a) => [a.content, a.id, a.special]);
    check(JSON.stringify(got) === JSON.stringify(exp.added_tokens), `${label}: addedTokens`);
    let tokFails = 0;
    for (const [id, t] of exp.tokens) {
      const ok = (tok.idToToken(id) ?? null) === t;
      if (!ok) tokFails++;
      check(ok, `${label}: idToToken(${id}) ${JSON.stringify(tok.idToToken(id))} vs ${JSON.stringify(t)}`);
    }
    if (tokFails) console.log(`# ${label}: ${tokFails} token strings differ`);
  } else {
    // A tiktoken vocabulary: its special tokens are its added tokens.
    const want = Object.entries(exp.special_tokens).map(([c, id]) => [c, id, true]).sort((a, b) => a[1] - b[1]);
    check(JSON.stringify(tok.addedTokens().map((a) => [a.content, a.id, a.special])) === JSON.stringify(want), `${label}: addedTokens are the special tokens`);
    // An id two names share (o200k_harmony's 200018) decodes to the first one given.
    const first = new Map();
    for (const [c, id] of Object.entries(exp.special_tokens)) if (!first.has(id)) first.set(id, c);
    for (const [c, id] of Object.entries(exp.special_tokens)) check(tok.tokenToId(c) === id && tok.idToToken(id) === first.get(id), `${label}: special token ${c}`);
  }
  console.log(`# ${label}: ${nIds} ids compared over ${docs.length} documents and ${exp.special_texts.length} texts with special tokens; ${docFails} documents, ${textFails} texts, ${winFails} of ${exp.windows.length} decode windows differ`);
  totals.push({ label, nIds, fails: docFails + textFails + winFails });
}

for (const [family, exp] of Object.entries(expected.models)) {
  let tok;
  let gen;
  if (exp.kind === 'tokenizer.json') {
    const json = readFileSync(path.join(exp.dir, 'tokenizer.json'));
    const cfgPath = path.join(exp.dir, 'tokenizer_config.json');
    const config = existsSync(cfgPath) ? readFileSync(cfgPath) : undefined;
    tok = Tokenizer.fromJSON(json, { config });
    // The general engine (HuggingFace tokenizers, its own wasm module) on the same file.
    gen = tok.engine === 'fast' ? Tokenizer.fromJSON(json, { config, engine: 'general' }) : null;
    if (gen) check(gen.engine === 'general', `${family}: engine 'general' is honoured (got ${gen.engine})`);
  } else {
    const ranks = readFileSync(exp.ranks);
    const options = { pattern: exp.pattern, special_tokens: exp.special_tokens, nfc: exp.nfc };
    tok = Tokenizer.fromTiktoken(ranks, options);
    // The same pattern written so that no built-in splitter knows it: the general engine's
    // regex (fancy-regex, as tiktoken) splits.
    gen = Tokenizer.fromTiktoken(ranks, { ...options, pattern: `(?:${exp.pattern})` });
    check(gen.engine === 'general', `${family}: an unknown pattern is split by the general engine (got ${gen.engine})`);
  }
  check(tok.engine === ENGINE[family], `${family}: takes the ${ENGINE[family]} engine (got ${tok.engine})`);
  checkEngine(family, `${family} ${tok.engine}`, tok, exp);
  if (gen) checkEngine(family, `${family} general`, gen, exp);

  // Chat templates.
  if (!exp.chats?.length) continue;
  const chats = cases.filter((c) => (c.families ?? [family]).includes(family));
  chats.forEach((c, i) => {
    const want = exp.chats[i];
    const opts = { add_generation_prompt: c.add_generation_prompt, tools: c.tools, template_kwargs: c.kwargs };
    const got = tok.applyChatTemplate(c.messages, opts);
    check(got === want.rendered, `${family}: chat template "${c.name}"\n  ours:   ${JSON.stringify(got)}\n  native: ${JSON.stringify(want.rendered)}`);
    check(same(tok.encodeChat(c.messages, opts), want.ids), `${family}: encodeChat "${c.name}"`);
    const families = c.renderer_families ?? ['qwen3', 'llama3'];
    const tokensOf = (mi) => mi.chunks.flatMap((ch) => [...ch.tokens]);
    if (c.renderer && families.includes(family)) {
      const r = new Renderer(family, tok);
      const prompt = tokensOf(r.buildGenerationPrompt(c.messages));
      check(same(prompt, want.ids), `${family}: renderer prompt for "${c.name}" equals the HF template's tokens\n  ours:   ${JSON.stringify(tok.decode(prompt))}\n  native: ${JSON.stringify(want.rendered)}`);
    }
    if (c.supervised) {
      const r = new Renderer(family, tok);
      const d = r.buildSupervisedExample(c.messages);
      const full = tokensOf(d.model_input);
      const prefix = same(full, want.ids.slice(0, full.length));
      check(prefix, `${family}: supervised example for "${c.name}" is a prefix of the HF template's tokens\n  ours:   ${JSON.stringify(tok.decode(full))}\n  native: ${JSON.stringify(want.rendered)}`);
      const trained = tok.decode(full.filter((_, k) => d.weights[k] > 0));
      const last = c.messages.at(-1).content;
      const answer = last.includes('</think>') ? last.split('</think>').at(-1).trim() : last;
      check(trained.includes(answer) && !trained.includes(c.messages[0].content), `${family}: supervised weights cover the last assistant message only ("${c.name}": ${JSON.stringify(trained)})`);
    }
  });
}
// resolveTokenizerId (and tokenizerRevision) for every model of the cookbook's lineup, as
// the Python SDK's _load_tokenizer_from_model_info answers (the oracle ran it).
let idFails = 0;
for (const c of expected.tokenizer_ids) {
  let got;
  try {
    const id = resolveTokenizerId(c.model, c.server);
    got = { id, revision: tokenizerRevision(id) ?? null };
  } catch (e) {
    got = { error: e.message };
  }
  const want = 'error' in c ? { error: c.error } : { id: c.id, revision: c.revision };
  const ok = JSON.stringify(got) === JSON.stringify(want);
  if (!ok) idFails++;
  check(ok, `resolveTokenizerId(${JSON.stringify(c.model)}, ${JSON.stringify(c.server)}): ${JSON.stringify(got)} vs Python ${JSON.stringify(want)}`);
}
console.log(`# resolveTokenizerId: ${expected.tokenizer_ids.length} cases over the ${expected.tokenizer_ids[0].models} models of the lineup, ${idFails} differ`);

const allIds = totals.reduce((n, t) => n + t.nIds, 0);
console.log(`# ${totals.length} tokenizer/engine pairs, ${allIds} ids compared in all; ${totals.filter((t) => t.fails).map((t) => t.label).join(', ') || 'every one exact'}`);
console.log(`# tokenizer parity: ${passed} passed, ${failed} failed`);
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
