// Runs tinker-wasm/cookbook's supervised.train in Node with the same arguments as
// tests/cookbook/run_sft.py runs tinker-cookbook's own supervised.train.main, so that
// tests/cookbook/sft_differential.py can compare the two request logs.
//
//   node tests/cookbook/run_sft.mjs --base-url URL --log-path DIR --jsonl FILE \
//       --tokenizer-dir DIR [--model M --renderer R --batch-size N …]
import { ServiceClient, Tokenizer, supervised } from '../../pkg/cookbook/index.js';
import { localService } from './local-service.mjs';

const argv = process.argv.slice(2);
// --cpu-report (make bench): the client CPU between the first and the last step's metrics.
const cpuReport = argv.includes('--cpu-report');
if (cpuReport) argv.splice(argv.indexOf('--cpu-report'), 1);
const asyncSaves = argv.includes('--async-periodic-saves');
if (asyncSaves) argv.splice(argv.indexOf('--async-periodic-saves'), 1);
const a = new Map();
for (let i = 0; i < argv.length; i += 2) a.set(argv[i].replace(/^--/, ''), argv[i + 1]);
const cpuMarks = [];
const num = (k, d) => (a.has(k) ? Number(a.get(k)) : d);
const tokDir = a.get('tokenizer-dir');
const model = a.get('model') ?? 'Qwen/Qwen3-8B';

const service = localService({ ServiceClient, Tokenizer }, a.get('base-url'), tokDir);
const config = {
  model_name: model,
  log_path: a.get('log-path'),
  dataset_builder: new supervised.FromConversationFileBuilder({
    file_path: a.get('jsonl'),
    test_size: num('test-size', 0),
    shuffle_seed: num('shuffle-seed', 0),
    common_config: {
      renderer_name: a.get('renderer') ?? 'qwen3',
      batch_size: num('batch-size', 4),
      max_length: a.has('max-length') ? num('max-length') : null,
      model_name_for_tokenizer: model,
    },
  }),
  learning_rate: num('learning-rate', 1e-4),
  lr_schedule: a.get('lr-schedule') ?? 'linear',
  num_epochs: num('epochs', 1),
  eval_every: num('eval-every', 10),
  save_every: num('save-every', 20),
  rolling_save_every: num('rolling-save-every', 0),
  async_periodic_saves: asyncSaves,
  submit_ahead: num('submit-ahead', 1),
  lora_rank: num('lora-rank', 32),
  ...(a.has('max-steps') ? { max_steps: num('max-steps') } : {}),
};
try {
  await supervised.train(config, {
    service,
    onMetrics: (m) => {
      if (cpuReport) {
        const u = process.cpuUsage();
        cpuMarks.push((u.user + u.system) / 1e6);
      }
      console.error(`step ${m.step}: train_mean_nll ${m.train_mean_nll}`);
    },
  });
  if (cpuReport) console.log(JSON.stringify({ steps: cpuMarks.length, cpu_s: cpuMarks.length > 1 ? cpuMarks.at(-1) - cpuMarks[0] : null }));
} finally {
  await service.close();
}
