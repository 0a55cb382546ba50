// Runs tinker-wasm/cookbook's preference.trainDpo in Node with the same arguments as
// tests/cookbook/run_dpo.py runs tinker-cookbook's own preference.train_dpo.main, so that
// tests/cookbook/sft_differential.py can compare the two request logs.
//
//   node tests/cookbook/run_dpo.mjs --base-url URL --log-path DIR --train FILE [--test FILE] \
//       --tokenizer-dir DIR [--model M --renderer R --batch-size N …]
import { ServiceClient, Tokenizer, preference } from '../../pkg/cookbook/index.js';
import { localService } from './local-service.mjs';

const argv = process.argv.slice(2);
const a = new Map();
for (let i = 0; i < argv.length; i += 2) a.set(argv[i].replace(/^--/, ''), argv[i + 1]);
const num = (k, d) => (a.has(k) ? Number(a.get(k)) : d);
const tokDir = a.get('tokenizer-dir');
const model = a.get('model') ?? 'Qwen/Qwen3-8B';

const service = localService({ ServiceClient, Tokenizer }, a.get('base-url'), tokDir);
const config = {
  model_name: model,
  log_path: a.get('log-path'),
  renderer_name: a.get('renderer') ?? 'qwen3',
  dataset_builder: new preference.DPODatasetBuilderFromComparisons({
    comparison_builder: new preference.ComparisonBuilderFromJsonl({ train_path: a.get('train'), test_path: a.get('test') }),
    common_config: {
      renderer_name: a.get('renderer') ?? 'qwen3',
      batch_size: num('batch-size', 2),
      max_length: a.has('max-length') ? num('max-length') : null,
      model_name_for_tokenizer: model,
    },
  }),
  learning_rate: num('learning-rate', 1e-5),
  lr_schedule: a.get('lr-schedule') ?? 'linear',
  num_epochs: num('epochs', 1),
  dpo_beta: num('dpo-beta', 0.1),
  eval_every: num('eval-every', 10),
  save_every: num('save-every', 20),
  rolling_save_every: num('rolling-save-every', 0),
  ...(a.has('max-steps') ? { max_steps: num('max-steps') } : {}),
};
try {
  await preference.trainDpo(config, {
    service,
    onMetrics: (m) => console.error(`step ${m.step}: dpo_loss ${m.dpo_loss} accuracy ${m.accuracy}`),
  });
} finally {
  await service.close();
}
