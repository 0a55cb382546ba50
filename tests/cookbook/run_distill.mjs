// Runs tinker-wasm/cookbook's distillation.trainOnPolicy in Node with the same datasets and
// arguments as tests/cookbook/run_distill.py runs tinker-cookbook's own
// distillation.train_on_policy.main, so that tests/cookbook/sft_differential.py can compare
// the two request logs.
import { ServiceClient, Tokenizer, distillation } from '../../pkg/cookbook/index.js';
import { localService } from './local-service.mjs';

const PROMPTS = [
  ['What is 4 + 5?', 'Name a prime number.', 'What colour is the sky?', 'Say hello in French.', 'What is the capital of Italy?', 'Count to three.'],
  [
    'Write one sentence about the sea and the ships that sail on it at night.',
    'Describe a cat in a few words, then describe a dog in a few more.',
    'Explain what a function is in programming to someone who has never coded.',
    'List three fruits that are red and one that is not.',
  ],
];

const argv = process.argv.slice(2);
const postKl = argv.includes('--compute-post-kl');
if (postKl) argv.splice(argv.indexOf('--compute-post-kl'), 1);
const withTest = argv.includes('--test');
if (withTest) argv.splice(argv.indexOf('--test'), 1);
const a = new Map();
for (let i = 0; i < argv.length; i += 2) a.set(argv[i].replace(/^--/, ''), argv[i + 1]);
const num = (k, d) => (a.has(k) ? Number(a.get(k)) : d);
const tokDir = a.get('tokenizer-dir');
const model = a.get('model') ?? 'Qwen/Qwen3-8B';
const groups = num('groups-per-batch', 2);

const service = localService({ ServiceClient, Tokenizer }, a.get('base-url'), tokDir);
/** @param {number} index @param {number | null} max_prompt_tokens */
const prompts = (index, max_prompt_tokens) => async ({ tokenizer, renderer }) => [
  new distillation.PromptOnlyDataset({ prompts: PROMPTS[index], batch_size: groups, group_size: num('group-size', 2), renderer, tokenizer, max_prompt_tokens, dataset_name: `prompts${index}` }),
  // The cookbook's PromptOnlyDatasetBuilder's test set: one sample per prompt.
  withTest && index === 0
    ? new distillation.PromptOnlyDataset({ prompts: PROMPTS[index].slice(0, 2), batch_size: groups, group_size: 1, renderer, tokenizer, max_prompt_tokens, dataset_name: `prompts${index}_test` })
    : null,
];
try {
  await distillation.trainOnPolicy(
    {
      learning_rate: 1e-3,
      dataset_configs: [
        { dataset_builder: prompts(0, null), teacher_config: { base_model: model, load_checkpoint_path: a.get('teacher-path') }, groups_per_batch: groups },
        { dataset_builder: prompts(1, num('max-prompt-tokens', 9)), teacher_config: { base_model: model }, groups_per_batch: groups },
      ],
      model_name: model,
      recipe_name: 'distill_local',
      renderer_name: a.get('renderer') ?? 'qwen3',
      max_tokens: num('max-tokens', 8),
      log_path: a.get('log-path'),
      save_every: num('save-every', 20),
      eval_every: num('eval-every', 20),
      compute_post_kl: postKl,
      kl_penalty_coef: num('kl-penalty-coef', 1.0),
      kl_discount_factor: num('kl-discount-factor', 0),
      ...(a.has('max-steps') ? { max_steps: num('max-steps') } : {}),
    },
    { service, onMetrics: (m) => console.error(`step ${m.step}: teacher_kl ${m.teacher_kl}`) },
  );
} finally {
  await service.close();
}
