// tinker-wasm/cookbook's RL environments: tinker-cookbook's `rl/types.py` and
// `rl/problem_env.py` as classes to extend (methods camelCase), and the rollouts that run
// them (`rl/rollouts.py`): what a user's code plugs into `rl.train`.

/** `rl.Env`: extend it and implement `initialObservation()` and `step(action)`. */
export class Env {
  /** @returns {Promise<[any, number[] | string[]]>} the first observation (a ModelInput) and its stop condition */
  async initialObservation() {
    throw new Error(`${this.constructor.name}.initialObservation is not implemented`);
  }

  /**
   * @param {number[]} _action the sampled tokens
   * @returns {Promise<{ reward: number, episode_done: boolean, next_observation?: any, next_stop_condition?: any, metrics?: Record<string, number | null> }>}
   */
  async step(_action) {
    throw new Error(`${this.constructor.name}.step is not implemented`);
  }
}

/** `rl.EnvGroupBuilder`: the environments of one group (one problem), and its group rewards. */
export class EnvGroupBuilder {
  /** @returns {Promise<Env[]>} */
  async makeEnvs() {
    throw new Error(`${this.constructor.name}.makeEnvs is not implemented`);
  }

  /**
   * The group's final rewards and metrics, one pair per trajectory (default: none).
   * @param {any[]} trajectories @param {Env[]} _envs
   * @returns {Promise<Array<[number, Record<string, number | null>]>>}
   */
  async computeGroupRewards(trajectories, _envs) {
    return trajectories.map(() => [0.0, {}]);
  }

  /** Tags the step's metrics are grouped under (`env/<tag>/…`). @returns {string[]} */
  loggingTags() {
    return [];
  }
}

/** The text of a parsed message's content (`get_text_content`). @param {any} message */
function textContent(message) {
  const c = message?.content;
  if (typeof c === 'string') return c;
  if (Array.isArray(c)) return c.filter((p) => p?.type === 'text').map((p) => p.text).join('');
  return '';
}

/**
 * `rl.ProblemEnv`: one question, one answer, a reward for the answer and a penalty for a
 * malformed one. Extend it and implement `getQuestion()`, `checkAnswer(text)`,
 * `checkFormat(text)` and `getReferenceAnswer()`.
 */
export class ProblemEnv extends Env {
  /**
   * @param {any} renderer the model's renderer
   * @param {any[] | null} [convo_prefix] messages before the question (few-shot examples)
   * @param {number} [format_coef] the penalty of a malformed answer (default 0.1)
   */
  constructor(renderer, convo_prefix = null, format_coef = 0.1) {
    super();
    if (renderer === null || typeof renderer !== 'object' || typeof renderer.parseResponse !== 'function') {
      throw new TypeError('ProblemEnv.renderer: must be a Renderer');
    }
    this.renderer = renderer;
    this.convo_prefix = convo_prefix;
    this.format_coef = format_coef;
  }

  /** @returns {string} */
  getQuestion() {
    throw new Error(`${this.constructor.name}.getQuestion is not implemented`);
  }

  /** @param {string} _text @returns {boolean} */
  checkAnswer(_text) {
    throw new Error(`${this.constructor.name}.checkAnswer is not implemented`);
  }

  /** @param {string} _text @returns {boolean} */
  checkFormat(_text) {
    throw new Error(`${this.constructor.name}.checkFormat is not implemented`);
  }

  /** @returns {string} */
  getReferenceAnswer() {
    throw new Error(`${this.constructor.name}.getReferenceAnswer is not implemented`);
  }

  /** The renderer's stop sequences. */
  get stopCondition() {
    return this.renderer.stopSequences;
  }

  async initialObservation() {
    const convo = [...(this.convo_prefix ?? []), { role: 'user', content: this.getQuestion() }];
    return /** @type {[any, any]} */ ([this.renderer.buildGenerationPrompt(convo), this.stopCondition]);
  }

  /** The answer's reward: `format_coef * (format - 1) + correct`. @param {number[]} action */
  async step(action) {
    const { message, termination } = this.renderer.parseResponse(action);
    const content = textContent(message);
    const format = termination === 'stop_sequence' && this.checkFormat(content) ? 1.0 : 0.0;
    const correct = this.checkAnswer(content) ? 1.0 : 0.0;
    return {
      reward: this.format_coef * (format - 1) + correct,
      episode_done: true,
      next_stop_condition: this.stopCondition,
      metrics: { format, correct },
    };
  }
}

/** `rl.ProblemGroupBuilder({ env_thunk, num_envs, dataset_name = 'problems' })`. */
export class ProblemGroupBuilder extends EnvGroupBuilder {
  /** @param {{ env_thunk: () => Env, num_envs: number, dataset_name?: string }} p */
  constructor({ env_thunk, num_envs, dataset_name = 'problems' }) {
    super();
    if (typeof env_thunk !== 'function') throw new TypeError(`ProblemGroupBuilder.env_thunk: must be a function that makes an Env, got ${typeof env_thunk}`);
    if (!Number.isInteger(num_envs) || num_envs < 1) throw new RangeError(`ProblemGroupBuilder.num_envs: must be a whole number from 1, got ${num_envs}`);
    this.env_thunk = env_thunk;
    this.num_envs = num_envs;
    this.dataset_name = dataset_name;
  }

  async makeEnvs() {
    return Array.from({ length: this.num_envs }, () => this.env_thunk());
  }

  loggingTags() {
    return [this.dataset_name];
  }
}

/**
 * `do_group_rollout`: the group's environments, each run to the end of its episode through
 * `policy` (a TokenCompleter), concurrently; then the group's rewards. Returns the group in
 * the form `rl.train`'s state machine reads.
 * @param {EnvGroupBuilder} builder @param {any} policy
 */
export async function rolloutGroup(builder, policy) {
  const envs = await builder.makeEnvs();
  const trajectories = await Promise.all(envs.map((env) => rollout(env, policy)));
  const rewards = await builder.computeGroupRewards(trajectories, envs);
  if (!Array.isArray(rewards) || rewards.length !== trajectories.length) {
    throw new TypeError(`computeGroupRewards: must return one [reward, metrics] per trajectory (${trajectories.length}), got ${Array.isArray(rewards) ? rewards.length : typeof rewards}`);
  }
  return {
    trajectories,
    final_rewards: rewards.map(([r]) => r),
    metrics: rewards.map(([, m]) => m ?? {}),
    tags: builder.loggingTags(),
  };
}

/** `do_single_rollout`: one episode, turn by turn. @param {Env} env @param {any} policy */
async function rollout(env, policy) {
  const turns = [];
  let [ob, stop] = await env.initialObservation();
  for (;;) {
    const ac = await policy.complete(ob, stop);
    const r = await env.step(ac.tokens);
    if (typeof r?.reward !== 'number' || !Number.isFinite(r.reward)) {
      throw new TypeError(`${env.constructor.name}.step: the reward must be a finite number, got ${r?.reward}`);
    }
    turns.push({
      ob: ob.chunks.flatMap((/** @type {any} */ c) => Array.from(c.tokens)),
      ac: ac.tokens,
      logprobs: ac.logprobs,
      sequence_id: ac.sequence_id,
      reward: r.reward,
      metrics: r.metrics ?? {},
      cached: ac.prompt_cache_hit_tokens,
    });
    if (r.episode_done) return turns;
    [ob, stop] = [r.next_observation, r.next_stop_condition];
  }
}
