// Runs tinker-wasm/cookbook's rl.train in Node with tinker-cookbook's arithmetic environment
// (recipes/math_rl/arithmetic_env.py) written in JS, with the same arguments as
// tests/cookbook/run_rl.py runs the cookbook's own rl.train.main, so that
// tests/cookbook/sft_differential.py can compare the two request logs.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { ServiceClient, Tokenizer, rl } from '../../pkg/cookbook/index.js';

const argv = process.argv.slice(2);
const a = new Map();
for (let i = 0; i < argv.length; i += 2) a.set(argv[i].replace(/^--/, ''), argv[i + 1]);
const num = (k, d) => (a.has(k) ? Number(a.get(k)) : d);
const tokDir = a.get('tokenizer-dir');
const model = a.get('model') ?? 'Qwen/Qwen3-8B';

/** numpy's RandomState (MT19937) as the arithmetic dataset seeds it, and its randint(0, 101). */
class RandomState {
  constructor(seed) {
    this.mt = new Uint32Array(624);
    this.mt[0] = seed >>> 0;
    for (let i = 1; i < 624; i++) {
      const p = this.mt[i - 1] ^ (this.mt[i - 1] >>> 30);
      this.mt[i] = (Math.imul(1812433253, p) + i) >>> 0;
    }
    this.i = 624;
  }

  next() {
    const mt = this.mt;
    if (this.i >= 624) {
      for (let k = 0; k < 624; k++) {
        const y = (mt[k] & 0x80000000) | (mt[(k + 1) % 624] & 0x7fffffff);
        mt[k] = mt[(k + 397) % 624] ^ (y >>> 1) ^ (y & 1 ? 0x9908b0df : 0);
      }
      this.i = 0;
    }
    let y = mt[this.i++];
    y ^= y >>> 11;
    y ^= (y << 7) & 0x9d2c5680;
    y ^= (y << 15) & 0xefc60000;
    y ^= y >>> 18;
    return y >>> 0;
  }

  randint101() {
    for (;;) {
      const v = this.next() & 127;
      if (v <= 100) return v;
    }
  }
}

class ArithmeticEnv extends rl.ProblemEnv {
  constructor(x, y, renderer, convo_prefix) {
    super(renderer, convo_prefix);
    [this.x, this.y] = [x, y];
  }

  getQuestion() {
    return `What is ${this.x} + ${this.y}?`;
  }

  checkAnswer(text) {
    const ints = text.replaceAll(',', '').match(/-?\d+/g);
    return ints !== null && BigInt(ints.at(-1)) === BigInt(this.x + this.y);
  }

  checkFormat() {
    return true;
  }

  getReferenceAnswer() {
    return String(this.x + this.y);
  }
}

const fewshot = [
  { role: 'user', content: 'What is 4 + 5?' },
  { role: 'assistant', content: '9' },
];

/** ArithmeticDatasetBuilder: each batch's problems drawn from a RandomState seeded with its index. */
const arithmetic = ({ batch_size, group_size, n_batches }) => async ({ renderer }) => [
  {
    length: n_batches,
    getBatch(index) {
      const rng = new RandomState(index);
      return Array.from({ length: batch_size }, () => {
        const [x, y] = [rng.randint101(), rng.randint101()];
        return new rl.ProblemGroupBuilder({ env_thunk: () => new ArithmeticEnv(x, y, renderer, fewshot), num_envs: group_size, dataset_name: 'problems' });
      });
    },
  },
];

const service = new ServiceClient({
  baseURL: a.get('base-url'),
  apiKey: process.env.TINKER_API_KEY ?? 'tml-local',
  telemetry: false,
  tokenizerLoader: () =>
    Tokenizer.fromJSON(fs.readFileSync(path.join(tokDir, 'tokenizer.json'), 'utf8'), {
      config: fs.readFileSync(path.join(tokDir, 'tokenizer_config.json'), 'utf8'),
    }),
});
try {
  await rl.train(
    {
      learning_rate: 1e-4,
      dataset_builder: arithmetic({ batch_size: num('batch-size', 2), group_size: num('group-size', 3), n_batches: num('n-batches', 3) }),
      model_name: model,
      recipe_name: 'rl_local',
      max_tokens: num('max-tokens', 5),
      log_path: a.get('log-path'),
      renderer_name: a.get('renderer') ?? 'qwen3',
      save_every: num('save-every', 20),
      num_substeps: num('num-substeps', 1),
      loss_fn: a.get('loss-fn') ?? 'importance_sampling',
      ...(a.has('max-steps') ? { max_steps: num('max-steps') } : {}),
    },
    { service, onMetrics: (m) => console.error(`step ${m.step}: reward ${m['env/all/reward/total']}`) },
  );
} finally {
  await service.close();
}
