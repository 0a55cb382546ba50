// tinker-wasm/cookbook's RL environments: tinker-cookbook's `rl/types.py` and
// `rl/problem_env.py` as classes to extend (methods camelCase), and the rollouts that run
// them (`rl/rollouts.py`): what a user's code plugs into `rl.train`.
import { ProblemGroupBuilderParams, RetryOnFailureParams, MinViableGroupParams, InitialObservationOverflowParams, PromptOnlyDatasetParams, EnvFromMessageEnvParams, StepExtra } from './params.js';

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
  /** @param {import('../gen/cookbook-params.js').ProblemGroupBuilderParams} params */
  constructor(params) {
    super();
    const { env_thunk, num_envs, dataset_name = 'problems' } = ProblemGroupBuilderParams.read(params);
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

/** `AllTrajectoriesFailedError`: too few of a group's rollouts succeeded; the group is dropped. */
export class AllTrajectoriesFailedError extends Error {
  name = 'AllTrajectoriesFailedError';
}

/**
 * One rollout on `env`, cancelled and failed with a TimeoutError after `timeout` seconds
 * (0 or null: none).
 * @param {any} policy @param {Env} env @param {number | null} timeout
 */
async function timedRollout(policy, env, timeout) {
  if (!timeout) return rollout(env, policy);
  const ctl = new AbortController();
  const outer = policy.signal;
  const onAbort = () => ctl.abort(outer.reason);
  outer?.addEventListener('abort', onAbort, { once: true });
  /** @type {any} */
  let timer;
  try {
    const timedOut = new Promise((_, reject) => {
      timer = setTimeout(() => {
        const e = Object.assign(new Error(`the rollout took more than ${timeout} s`), { name: 'TimeoutError' });
        ctl.abort(e);
        reject(e);
      }, timeout * 1000);
    });
    return await Promise.race([rollout(env, Object.create(policy, { signal: { value: ctl.signal } })), timedOut]);
  } finally {
    clearTimeout(timer);
    outer?.removeEventListener('abort', onAbort);
  }
}

/**
 * The retrying strategies' loop: every env's rollout at once; a failure is recorded and,
 * while `retry(successes)` allows and the budget lasts, retried on a fresh env of the
 * builder (its first). Returns `{ trajectories, envs, errors }`; `onExhausted` decides what
 * a failure with no retry left does (throw it, or record it).
 * @param {EnvGroupBuilder} builder @param {any} policy @param {{ max_retries: number, timeout: number | null, retry: (n: number) => boolean, raiseWhenExhausted: boolean }} o
 */
async function withRetries(builder, policy, { max_retries, timeout, retry, raiseWhenExhausted }) {
  const envs = await builder.makeEnvs();
  /** @type {Map<Promise<any>, Env>} */
  const pending = new Map();
  const launch = (/** @type {Env} */ env) => {
    const p = timedRollout(policy, env, timeout).then((t) => ({ t }), (e) => ({ e }));
    pending.set(p, env);
  };
  envs.forEach(launch);
  const out = { trajectories: /** @type {any[]} */ ([]), envs: /** @type {Env[]} */ ([]), errors: /** @type {string[]} */ ([]) };
  let left = max_retries;
  while (pending.size) {
    const done = await Promise.race([...pending.keys()].map((p) => p.then((r) => [p, r])));
    const [p, r] = /** @type {[Promise<any>, any]} */ (done);
    const env = /** @type {Env} */ (pending.get(p));
    pending.delete(p);
    if (!('e' in r)) {
      out.trajectories.push(r.t);
      out.envs.push(env);
      continue;
    }
    out.errors.push(r.e?.name ?? 'Error');
    if (retry(out.trajectories.length) && left > 0) {
      left -= 1;
      launch((await builder.makeEnvs())[0]);
    } else if (raiseWhenExhausted) {
      throw r.e;
    }
  }
  return out;
}

/** `rl.FailFast`: any rollout's error fails the group (and the run). The default. */
export class FailFast {
  get catchesGroupErrors() {
    return false;
  }

  /** @param {EnvGroupBuilder} builder @param {any} policy */
  async execute(builder, policy) {
    const envs = await builder.makeEnvs();
    return { trajectories: await Promise.all(envs.map((env) => rollout(env, policy))), envs, errors: [] };
  }
}

/**
 * `rl.RetryOnFailure({ max_retries = 3, per_rollout_timeout = 0 })`: a failed or timed-out
 * rollout is retried on a fresh environment while the group's retry budget lasts; past it
 * the group is skipped (counted under `rollout_errors/`), not trained on incomplete.
 */
export class RetryOnFailure {
  /** @param {import('../gen/cookbook-params.js').RetryOnFailureParams} [params] */
  constructor(params) {
    const { max_retries = 3, per_rollout_timeout = 0 } = RetryOnFailureParams.read(params);
    this.max_retries = max_retries;
    this.per_rollout_timeout = per_rollout_timeout;
  }

  get catchesGroupErrors() {
    return true;
  }

  /** @param {EnvGroupBuilder} builder @param {any} policy */
  execute(builder, policy) {
    return withRetries(builder, policy, { max_retries: this.max_retries, timeout: this.per_rollout_timeout || null, retry: () => true, raiseWhenExhausted: true });
  }
}

/**
 * `rl.MinViableGroup({ min_successful = ceil(0.75 · group size), max_retries = 3,
 * per_rollout_timeout = null })`: failures are retried only while fewer than
 * `min_successful` rollouts have succeeded; a group reaching the floor is kept (smaller),
 * one that cannot is dropped.
 */
export class MinViableGroup {
  /** @param {import('../gen/cookbook-params.js').MinViableGroupParams} [params] */
  constructor(params) {
    const { min_successful = null, max_retries = 3, per_rollout_timeout = null } = MinViableGroupParams.read(params);
    this.min_successful = min_successful;
    this.max_retries = max_retries;
    this.per_rollout_timeout = per_rollout_timeout;
  }

  get catchesGroupErrors() {
    return true;
  }

  /** @param {EnvGroupBuilder} builder @param {any} policy */
  async execute(builder, policy) {
    let floor = this.min_successful ?? 0;
    const counting = Object.create(builder, {
      makeEnvs: {
        value: async () => {
          const envs = await builder.makeEnvs();
          if (this.min_successful === null && floor === 0) floor = Math.ceil(0.75 * envs.length);
          return envs;
        },
      },
    });
    const out = await withRetries(counting, policy, { max_retries: this.max_retries, timeout: this.per_rollout_timeout, retry: (n) => n < floor, raiseWhenExhausted: false });
    if (out.trajectories.length < floor) {
      throw new AllTrajectoriesFailedError(`only ${out.trajectories.length} rollouts of the group succeeded, under its minimum viable group size ${floor} (${out.errors.length} failures, max_retries=${this.max_retries}); dropping the group`);
    }
    return out;
  }
}

/**
 * `Config.effective_rollout_strategy`: unset → the model's default (MinViableGroup for
 * thinkingmachines/Inkling models, FailFast for the others); false → FailFast, true →
 * RetryOnFailure(), a strategy as is.
 * @param {unknown} v @param {string} modelName @returns {FailFast | RetryOnFailure | MinViableGroup}
 */
export function rolloutStrategy(v, modelName) {
  if (v === undefined || v === null) return String(modelName).split(':')[0].startsWith('thinkingmachines/Inkling') ? new MinViableGroup() : new FailFast();
  if (v === false) return new FailFast();
  if (v === true) return new RetryOnFailure();
  if (v instanceof FailFast || v instanceof RetryOnFailure || v instanceof MinViableGroup) return v;
  throw new TypeError('rollout_error_tolerance: must be true, false, or a rollout strategy (rl.FailFast, rl.RetryOnFailure, rl.MinViableGroup)');
}

/**
 * `do_group_rollout_and_filter_constant_reward` without the filter: the group's
 * rollouts as `strategy` runs them (concurrently, through `policy`: a TokenCompleter),
 * then its rewards. Returns the group in the form the state machine reads (`errors`: the
 * failures it survived), or null when the strategy drops it (its errors in `skipped`).
 * @param {EnvGroupBuilder} builder @param {any} policy @param {any} [strategy]
 */
export async function rolloutGroup(builder, policy, strategy = new FailFast()) {
  try {
    const { trajectories, envs, errors } = await strategy.execute(builder, policy);
    const rewards = await builder.computeGroupRewards(trajectories, envs);
    if (!Array.isArray(rewards) || rewards.length !== trajectories.length) {
      throw new TypeError(`computeGroupRewards: must return one [reward, metrics] per trajectory (${trajectories.length}), got ${Array.isArray(rewards) ? rewards.length : typeof rewards}`);
    }
    return {
      trajectories,
      final_rewards: rewards.map(([r]) => r),
      metrics: rewards.map(([, m]) => m ?? {}),
      tags: builder.loggingTags(),
      errors,
    };
  } catch (e) {
    if (policy.signal?.aborted || !(e instanceof AllTrajectoriesFailedError || strategy.catchesGroupErrors)) throw e;
    return null;
  }
}

/**
 * `rl.InitialObservationOverflow`: what `initialObservation()` returns instead of
 * `[observation, stop]` when the prompt alone is over the environment's token budget. The
 * rollout ends at once with one empty turn carrying `reward` and `metrics` (no datum; the
 * reward still counts in the group's mean).
 */
export class InitialObservationOverflow {
  /** @param {import('../gen/cookbook-params.js').InitialObservationOverflowParams} params */
  constructor(params) {
    const { reward, metrics = {}, logs = {} } = InitialObservationOverflowParams.read(params);
    this.reward = reward;
    this.metrics = metrics;
    this.logs = logs;
  }
}

/** `do_single_rollout`: one episode, turn by turn. @param {Env} env @param {any} policy */
async function rollout(env, policy) {
  const turns = [];
  const initial = await env.initialObservation();
  if (initial instanceof InitialObservationOverflow) {
    return [{ ob: [], ac: [], logprobs: [], sequence_id: null, reward: initial.reward, metrics: initial.metrics, cached: 0 }];
  }
  let [ob, stop] = initial;
  for (;;) {
    const ac = await policy.complete(ob, stop);
    const r = await /** @type {any} */ (env).step(ac.tokens, { stop_reason: ac.stop_reason });
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

/**
 * `distillation.PromptOnlyEnv`: a prompt and no reward (on-policy distillation's signal is
 * the teacher's KL, not the environment's): format and answer are not checked.
 */
export class PromptOnlyEnv extends ProblemEnv {
  /** @param {string} prompt @param {any} renderer @param {any[] | null} [convo_prefix] */
  constructor(prompt, renderer, convo_prefix = null) {
    super(renderer, convo_prefix, 0.0);
    if (typeof prompt !== 'string') throw new TypeError(`PromptOnlyEnv.prompt: must be a string, got ${typeof prompt}`);
    this.prompt = prompt;
  }

  getQuestion() {
    return this.prompt;
  }

  checkFormat() {
    return true;
  }

  checkAnswer() {
    return false;
  }

  getReferenceAnswer() {
    return '';
  }

  /** Zero reward, the episode over. @param {number[]} _action @returns {Promise<any>} */
  async step(_action) {
    return { reward: 0.0, episode_done: true, next_observation: { chunks: [] }, next_stop_condition: this.stopCondition, metrics: {} };
  }
}

/**
 * `distillation.PromptOnlyDataset({ prompts, batch_size, group_size, renderer, tokenizer,
 * max_prompt_tokens, convo_prefix, dataset_name })`: batches of prompts, each a group of
 * `group_size` PromptOnlyEnvs; prompts longer than `max_prompt_tokens` are cut to it.
 */
export class PromptOnlyDataset {
  /** @param {import('../gen/cookbook-params.js').PromptOnlyDatasetParams} params */
  constructor(params) {
    const { prompts, batch_size, group_size, renderer, tokenizer, max_prompt_tokens = null, convo_prefix = null, dataset_name = 'prompts' } = PromptOnlyDatasetParams.read(params);
    if (!Array.isArray(prompts) || prompts.some((p) => typeof p !== 'string')) throw new TypeError('PromptOnlyDataset.prompts: must be a list of strings');
    for (const [k, v] of /** @type {[string, unknown][]} */ ([['batch_size', batch_size], ['group_size', group_size]])) {
      if (!Number.isInteger(v) || /** @type {number} */ (v) < 1) throw new RangeError(`PromptOnlyDataset.${k}: must be a whole number from 1, got ${v}`);
    }
    this.prompts = prompts;
    this.batch_size = batch_size;
    this.group_size = group_size;
    this.renderer = renderer;
    this.tokenizer = tokenizer;
    this.max_prompt_tokens = max_prompt_tokens;
    this.convo_prefix = convo_prefix;
    this.dataset_name = dataset_name;
  }

  /** @param {string} prompt */
  truncatePrompt(prompt) {
    if (this.max_prompt_tokens === null) return prompt;
    const tokens = this.tokenizer.encode(prompt, { add_special_tokens: true });
    return tokens.length > this.max_prompt_tokens ? this.tokenizer.decode(tokens.slice(0, this.max_prompt_tokens)) : prompt;
  }

  /** @param {number} index */
  getBatch(index) {
    const start = index * this.batch_size;
    const end = Math.min((index + 1) * this.batch_size, this.prompts.length);
    if (!(start < end)) throw new RangeError(`PromptOnlyDataset.getBatch: batch ${index} is past the end (${this.length} batches)`);
    return this.prompts.slice(start, end).map((prompt) => {
      const text = this.truncatePrompt(prompt);
      return new ProblemGroupBuilder({ env_thunk: () => new PromptOnlyEnv(text, this.renderer, this.convo_prefix), num_envs: this.group_size, dataset_name: this.dataset_name });
    });
  }

  get length() {
    return Math.ceil(this.prompts.length / this.batch_size);
  }
}

/**
 * `rl.MessageEnv`: an environment at the level of messages. Extend it and implement
 * `initialObservation()` (the conversation so far) and `step(message)` (the assistant's
 * parsed reply → `{ reward, episode_done, next_messages, metrics?, next_stop_condition? }`);
 * `EnvFromMessageEnv` runs it as a token-level `Env`.
 */
export class MessageEnv {
  /** @returns {Promise<any[]>} */
  async initialObservation() {
    throw new Error(`${this.constructor.name}.initialObservation is not implemented`);
  }

  /** @param {any} _message @returns {Promise<{ reward: number, episode_done: boolean, next_messages: any[], metrics?: Record<string, number>, next_stop_condition?: any }>} */
  async step(_message) {
    throw new Error(`${this.constructor.name}.step is not implemented`);
  }

  /**
   * A reply cut at `max_tokens`, recorded without a step (`terminate_on_length: false`):
   * the conversation after it, or null (the default: the episode ends instead).
   * @param {any} _message @returns {Promise<any[] | null>}
   */
  async observeTruncatedResponse(_message) {
    return null;
  }
}

const STOP = 'stop/';

/**
 * `rl.EnvFromMessageEnv({ renderer, message_env, failed_parse_reward = -1,
 * terminate_on_parse_error = true, max_trajectory_tokens = null, max_generation_tokens = null,
 * context_overflow_reward = -0.1, terminate_on_length = true })`: a MessageEnv as a
 * token-level Env: each reply parsed with the renderer (a malformed one ends the episode
 * with `failed_parse_reward`), a reply cut at `max_tokens` ends it with
 * `context_overflow_reward`, and a conversation over `max_trajectory_tokens` (with room for
 * `max_generation_tokens`) is stopped, as the cookbook's adapter does.
 */
export class EnvFromMessageEnv extends Env {
  /** @param {import('../gen/cookbook-params.js').EnvFromMessageEnvParams} params */
  constructor(params) {
    super();
    const { renderer, message_env, failed_parse_reward = -1.0, terminate_on_parse_error = true, max_trajectory_tokens = null, max_generation_tokens = null, context_overflow_reward = -0.1, terminate_on_length = true } = EnvFromMessageEnvParams.read(params);
    if (renderer === null || typeof renderer !== 'object' || typeof renderer.parseResponse !== 'function') throw new TypeError('EnvFromMessageEnv.renderer: must be a Renderer');
    if (!(message_env instanceof MessageEnv)) throw new TypeError('EnvFromMessageEnv.message_env: must be a MessageEnv');
    this.renderer = renderer;
    this.message_env = message_env;
    this.failed_parse_reward = failed_parse_reward;
    this.terminate_on_parse_error = terminate_on_parse_error;
    this.max_trajectory_tokens = max_trajectory_tokens;
    this.max_generation_tokens = max_generation_tokens;
    this.context_overflow_reward = context_overflow_reward;
    this.terminate_on_length = terminate_on_length;
  }

  /** @param {number} length */
  exceeds(length) {
    return this.max_trajectory_tokens !== null && length + (this.max_generation_tokens ?? 0) > this.max_trajectory_tokens;
  }

  /** @param {Record<string, number>} metrics @returns {any} */
  end(metrics, reward = this.context_overflow_reward) {
    return { reward, episode_done: true, next_observation: { chunks: [] }, next_stop_condition: this.renderer.stopSequences, metrics };
  }

  /** @returns {Promise<any>} */
  async initialObservation() {
    const ob = this.renderer.buildGenerationPrompt(await this.message_env.initialObservation());
    const length = ob.chunks.reduce((/** @type {number} */ n, /** @type {any} */ c) => n + c.tokens.length, 0);
    if (this.exceeds(length)) {
      return new InitialObservationOverflow({ reward: this.context_overflow_reward, metrics: { max_tokens_reached: 1.0, [`${STOP}max_tokens`]: 1.0 } });
    }
    return [ob, this.renderer.stopSequences];
  }

  /** @param {number[]} action @param {{ stop_reason?: string }} [extra] @returns {Promise<any>} */
  async step(action, extra) {
    if ((StepExtra.read(extra).stop_reason ?? 'stop') === 'length') {
      const cont = this.terminate_on_length ? null : await this.continueAfterTruncation(action);
      return cont ?? this.end({ max_tokens_reached: 1.0, [`${STOP}max_tokens`]: 1.0 });
    }
    const { message, termination } = this.renderer.parseResponse(action);
    if (termination === 'malformed') {
      /** @type {Record<string, number>} */
      const metrics = { parse_error: 1.0 };
      if (this.terminate_on_parse_error) metrics[`${STOP}parse_error`] = 1.0;
      return { ...this.end(metrics, this.failed_parse_reward), episode_done: this.terminate_on_parse_error };
    }
    const r = await this.message_env.step(message);
    const next = this.renderer.buildGenerationPrompt(r.next_messages);
    const length = next.chunks.reduce((/** @type {number} */ n, /** @type {any} */ c) => n + c.tokens.length, 0);
    if (!r.episode_done && this.exceeds(length)) {
      return this.end({ ...(r.metrics ?? {}), context_overflow: 1.0, [`${STOP}context_overflow`]: 1.0 });
    }
    return { reward: r.reward, episode_done: r.episode_done, next_observation: next, next_stop_condition: r.next_stop_condition ?? this.renderer.stopSequences, metrics: r.metrics ?? {} };
  }

  /** @param {number[]} action */
  async continueAfterTruncation(action) {
    const { message } = this.renderer.parseResponse(action);
    const messages = await this.message_env.observeTruncatedResponse(message);
    if (messages === null) return null;
    const next = this.renderer.buildGenerationPrompt(messages);
    const length = next.chunks.reduce((/** @type {number} */ n, /** @type {any} */ c) => n + c.tokens.length, 0);
    if (this.exceeds(length)) return this.end({ context_overflow: 1.0, [`${STOP}context_overflow`]: 1.0 });
    return { reward: 0.0, episode_done: false, next_observation: next, next_stop_condition: this.renderer.stopSequences, metrics: {} };
  }
}
