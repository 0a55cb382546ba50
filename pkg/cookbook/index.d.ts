// Type declarations for tinker-wasm/cookbook: the SDK on the cookbook build of the module,
// and tinker-cookbook's training methods. Every runtime entry point exports the same API.
import type { ServiceClient, SamplingClient, TrainingClient, ModelInput, ChatMessage, Renderer, RendererLike } from '../index.js';
import type {
  SupervisedConfig,
  FromConversationFileBuilderParams,
  DpoConfig,
  DPODatasetBuilderFromComparisonsParams,
  ComparisonBuilderFromJsonlParams,
} from '../gen/cookbook/tinker_wasm.js';

// The whole SDK, as tinker-wasm exports it (the same classes, on the cookbook build of the
// module: use this entry's ServiceClient for the cookbook's methods).
export * from '../index.js';
export type {
  SupervisedConfig,
  FromConversationFileBuilderParams,
  ChatDatasetBuilderCommonConfig,
  DpoConfig,
  DPODatasetBuilderFromComparisonsParams,
  ComparisonBuilderFromJsonlParams,
  LabeledComparison,
} from '../gen/cookbook/tinker_wasm.js';

/** A run's files (`checkpoints.jsonl`, `metrics.jsonl`): a folder in Node (`log_path`), a store elsewhere. */
export interface RunStore {
  /** The file's text, or undefined when there is no such file. */
  read(name: string): Promise<string | undefined> | string | undefined;
  /** Appends to the file, creating it. */
  append(name: string, text: string): Promise<void> | void;
  /** Replaces the file. */
  write(name: string, text: string): Promise<void> | void;
}

/** A method's per-call options. */
export interface CookbookRunOptions {
  /** The client to train with (its options carry the key, base URL and tokenizer loading). */
  service: ServiceClient;
  /**
   * Stops the run cleanly: the steps in flight finish, then a checkpoint is saved where it
   * stopped. Aborted while the training client is still being created, the creation is
   * cancelled and the method rejects with the abort's reason (there is nothing to save).
   */
  signal?: AbortSignal;
  /** Receives each step's metrics line (the cookbook's names), after it is written. */
  onMetrics?: (metrics: Record<string, number>) => void;
  /** Where the run's files live when not in a `log_path` folder (browsers, Workers). */
  store?: RunStore;
  /** In a Node terminal, a progress line (step, loss, ETA) on stderr; `false` turns it off. */
  progress?: boolean;
}

/** How a run ended. */
export interface TrainResult {
  /** Whether the signal stopped it before its last step. */
  stopped: boolean;
  /** The step it stopped before (a restart on the same files resumes there), or null. */
  stopped_at_step: number | null;
}

/** A checkpoint record of `checkpoints.jsonl` (`checkpoint_utils.CheckpointRecord`). */
export interface CheckpointRecord {
  name: string;
  batch?: number;
  epoch?: number;
  final?: boolean;
  state_path?: string;
  sampler_path?: string;
  [key: string]: unknown;
}

export declare const supervised: {
  /**
   * `supervised.train.main(config)`: tinker-cookbook's supervised fine-tuning loop
   * (schedules, epochs, pipelining, evaluation, checkpoints, resume from the run's files).
   */
  train(config: SupervisedConfig, options: CookbookRunOptions): Promise<TrainResult>;
  /** The cookbook's conversation JSONL: `{"messages": [...]}` per line. */
  FromConversationFileBuilder: new (params: FromConversationFileBuilderParams) => FromConversationFileBuilderParams;
};

export declare const preference: {
  /**
   * `preference.train_dpo.main(config)`: direct preference optimization as tinker-cookbook
   * runs it. The reference is a sampler on the starting weights; each step scores its
   * chosen and rejected datums there, then trains on the DPO loss through
   * `forwardBackwardCustom`. Metrics per step: `dpo_loss`, `accuracy`, `margin`,
   * `chosen_reward`, `rejected_reward`, `num_pairs`, `num_tokens`, `learning_rate`, `progress`.
   */
  trainDpo(config: DpoConfig, options: CookbookRunOptions): Promise<TrainResult>;
  /** Each comparison of the files a chosen and a rejected datum (batches count comparisons). */
  DPODatasetBuilderFromComparisons: new (params: DPODatasetBuilderFromComparisonsParams) => DPODatasetBuilderFromComparisonsParams;
  /** Comparison files: `{"comparison": {prompt_conversation, completion_A, completion_B}, "label"}` per line. */
  ComparisonBuilderFromJsonl: new (params: ComparisonBuilderFromJsonlParams) => ComparisonBuilderFromJsonlParams;
};

/** A step's outcome in an environment (`rl.types.StepResult`). */
export interface StepResult {
  /** The step's reward (a finite number). */
  reward: number;
  /** Whether the episode is over. */
  episode_done: boolean;
  /** The next observation (a ModelInput), when the episode goes on. */
  next_observation?: ModelInput;
  /** The next turn's stop condition. */
  next_stop_condition?: number[] | string[];
  /** The step's metrics (`env/all/<name>` in the step's line; null: not measured). */
  metrics?: Record<string, number | null>;
}

/** `rl.types.Env`: extend it. */
declare class Env {
  /** The first observation and its stop condition (or an overflow: the prompt alone is over budget). */
  initialObservation(): Promise<[ModelInput, number[] | string[]] | InitialObservationOverflow>;
  /** The outcome of the sampled tokens (`extra.stop_reason`: "stop" or "length"). */
  step(action: number[], extra?: { stop_reason?: string }): Promise<StepResult>;
}

/** `rl.types.EnvGroupBuilder`: the environments of one group (one problem). */
declare class EnvGroupBuilder {
  makeEnvs(): Promise<Env[]>;
  /** The group's final rewards and metrics, one pair per trajectory (default: 0 and none). */
  computeGroupRewards(trajectories: unknown[], envs: Env[]): Promise<Array<[number, Record<string, number | null>]>>;
  /** Tags the step's metrics are grouped under (`env/<tag>/…`). */
  loggingTags(): string[];
}

/** `rl.problem_env.ProblemEnv`: one question and its answer; reward `format_coef * (format - 1) + correct`. */
declare class ProblemEnv extends Env {
  constructor(renderer: Renderer | RendererLike, convo_prefix?: ChatMessage[] | null, format_coef?: number);
  getQuestion(): string;
  checkAnswer(text: string): boolean;
  checkFormat(text: string): boolean;
  getReferenceAnswer(): string;
  readonly stopCondition: number[] | string[];
}

/** `rl.problem_env.ProblemGroupBuilder`: `num_envs` environments from `env_thunk`, tagged `dataset_name`. */
declare class ProblemGroupBuilder extends EnvGroupBuilder {
  constructor(params: { env_thunk: () => Env; num_envs: number; dataset_name?: string });
}

/** `rl.types.InitialObservationOverflow`: returned by `initialObservation()` when the prompt alone is over budget. */
declare class InitialObservationOverflow {
  constructor(params: { reward: number; metrics?: Record<string, number>; logs?: Record<string, unknown> });
  readonly reward: number;
  readonly metrics: Record<string, number>;
}

/** A message-level step's outcome (`rl.message_env.MessageStepResult`). */
export interface MessageStepResult {
  reward: number;
  episode_done: boolean;
  /** The whole conversation after the step (the next prompt is rendered from it). */
  next_messages: ChatMessage[];
  metrics?: Record<string, number>;
  next_stop_condition?: number[] | string[];
}

/** `rl.message_env.MessageEnv`: an environment at the level of messages; extend it. */
declare class MessageEnv {
  initialObservation(): Promise<ChatMessage[]>;
  step(message: ChatMessage): Promise<MessageStepResult>;
  /** A reply cut at max_tokens, kept without a step: the conversation after it, or null (default: the episode ends). */
  observeTruncatedResponse(message: ChatMessage): Promise<ChatMessage[] | null>;
}

/** `rl.message_env.EnvFromMessageEnv`: a MessageEnv run as a token-level Env (parsing, stop and overflow rules of the cookbook's adapter). */
declare class EnvFromMessageEnv extends Env {
  constructor(params: {
    renderer: Renderer | RendererLike;
    message_env: MessageEnv;
    /** Reward of a malformed reply (default -1). */
    failed_parse_reward?: number;
    /** A malformed reply ends the episode (default true). */
    terminate_on_parse_error?: boolean;
    /** The conversation's token budget, with room for `max_generation_tokens` (default: none). */
    max_trajectory_tokens?: number | null;
    max_generation_tokens?: number | null;
    /** Reward of a reply cut at max_tokens or a conversation over budget (default -0.1). */
    context_overflow_reward?: number;
    /** A reply cut at max_tokens ends the episode (default true; false: `observeTruncatedResponse`). */
    terminate_on_length?: boolean;
  });
  initialObservation(): Promise<[ModelInput, number[] | string[]] | InitialObservationOverflow>;
  step(action: number[], extra?: { stop_reason?: string }): Promise<StepResult>;
}

/** `rl.FailFast`: any rollout's error fails the run (the default, but for thinkingmachines/Inkling models). */
declare class FailFast {
  readonly catchesGroupErrors: false;
}

/** `rl.RetryOnFailure`: failed (or timed-out) rollouts retried on fresh environments within a budget; past it the group is dropped. */
declare class RetryOnFailure {
  constructor(params?: { max_retries?: number; per_rollout_timeout?: number });
  readonly catchesGroupErrors: true;
}

/** `rl.MinViableGroup`: a group is kept once `min_successful` (default ceil(0.75 · size)) rollouts succeed, dropped below it. */
declare class MinViableGroup {
  constructor(params?: { min_successful?: number | null; max_retries?: number; per_rollout_timeout?: number | null });
  readonly catchesGroupErrors: true;
}

/** A dataset of groups: `getBatch(index)` gives a step's group builders. */
export interface RLDataset {
  getBatch(index: number): EnvGroupBuilder[] | Promise<EnvGroupBuilder[]>;
  readonly length: number;
}

/** `KLReferenceConfig` / `TeacherConfig`: a base model, with a checkpoint's weights when given. */
export interface ScorerConfig {
  base_model: string;
  load_checkpoint_path?: string | null;
}

/** `rl.train.Config` (the synchronous loop's fields, the cookbook's names and defaults). */
export interface RLConfig {
  /** The learning rate (constant). */
  learning_rate: number;
  /** Builds the datasets from the model's tokenizer and renderer: `[train, test?]`. */
  dataset_builder: (ctx: { tokenizer: unknown; renderer: Renderer }) => Promise<[RLDataset, RLDataset?]> | [RLDataset, RLDataset?];
  model_name: string;
  /** Longest sample in tokens. */
  max_tokens: number;
  recipe_name?: string;
  /** Where the run keeps checkpoints.jsonl and metrics.jsonl (a folder in Node). */
  log_path?: string;
  /** The renderer (default: the model's recommended one); also the run's user metadata. */
  renderer_name?: string;
  load_checkpoint_path?: string;
  /** Save every this many steps (default 20). */
  save_every?: number;
  /** Time to live of periodic saves (default 604800; null: kept). */
  ttl_seconds?: number | null;
  /** "importance_sampling" (default), "ppo", "cispo", "dro", … */
  loss_fn?: string;
  loss_fn_config?: Record<string, number | string>;
  /** Optimizer steps per batch (default 1). */
  num_substeps?: number;
  /** LoRA rank (default 32). */
  lora_rank?: number;
  /** Sampling temperature (default 1). */
  temperature?: number;
  num_epochs?: number;
  max_steps?: number;
  /** The KL penalty against `kl_reference_config`'s policy (default 0: none). */
  kl_penalty_coef?: number;
  /** Discount of the KL penalty's future terms (default 0: not discounted). */
  kl_discount_factor?: number;
  /** The KL penalty's reference policy (required when `kl_penalty_coef` > 0). */
  kl_reference_config?: ScorerConfig | null;
  /** Groups whose rewards are all equal are not trained on (default false). */
  remove_constant_reward_groups?: boolean;
  /** Evaluate every this many steps, before the step, and the final weights (default 20; 0: never). */
  eval_every?: number;
  /** Builders of sampling evaluators (run with the builder's test set, if any, which is evaluated as `test/…`). */
  evaluator_builders?: Array<() => SamplingClientEvaluator>;
  /**
   * Off-policy training: sampling runs up to `max_steps_off_policy` steps ahead of training,
   * each step trains `groups_per_batch` completed groups (oldest weights first), with
   * `loss_fn` (default "stable_reinforce") in place of the config's.
   */
  async_config?: { max_steps_off_policy: number; groups_per_batch: number; loss_fn?: string } | null;
  /** Rolling saves (the state alone, kept `rolling_ttl_seconds`, default 7200) every this many steps between the periodic ones; each deletes the previous (default 0: none). */
  rolling_save_every?: number;
  rolling_ttl_seconds?: number;
  /** Score each step's datums again on the new weights: `kl_pre_post_v1`, `kl_pre_post_v2` (default false). */
  compute_post_kl?: boolean;
  /** How rollout errors are handled: false (FailFast), true (RetryOnFailure()), or a strategy; errors counted under `rollout_errors/`. */
  rollout_error_tolerance?: boolean | FailFast | RetryOnFailure | MinViableGroup | null;
}

export declare const rl: {
  /**
   * `rl.train.main(config)` in its synchronous mode: each step rolls out a batch of groups on a
   * sampler of the current weights, trains on the group-centred advantages, and saves every
   * `save_every` steps; a restart on the same files resumes. Metrics per step under the
   * cookbook's names (`env/all/reward/total`, `optim/kl_sample_train_v1`, `tokens/…`, …).
   */
  train(config: RLConfig, options: Omit<CookbookRunOptions, 'progress'>): Promise<TrainResult>;
  Env: typeof Env;
  EnvGroupBuilder: typeof EnvGroupBuilder;
  ProblemEnv: typeof ProblemEnv;
  ProblemGroupBuilder: typeof ProblemGroupBuilder;
  MessageEnv: typeof MessageEnv;
  EnvFromMessageEnv: typeof EnvFromMessageEnv;
  InitialObservationOverflow: typeof InitialObservationOverflow;
  FailFast: typeof FailFast;
  RetryOnFailure: typeof RetryOnFailure;
  MinViableGroup: typeof MinViableGroup;
};

/** `distillation.PromptOnlyEnv`: a prompt, no reward (distillation's signal is the teacher's KL). */
declare class PromptOnlyEnv extends ProblemEnv {
  constructor(prompt: string, renderer: Renderer | RendererLike, convo_prefix?: ChatMessage[] | null);
}

/** `distillation.PromptOnlyDataset`: batches of prompts, each a group of `group_size` PromptOnlyEnvs. */
declare class PromptOnlyDataset implements RLDataset {
  constructor(params: {
    prompts: string[];
    batch_size: number;
    group_size: number;
    renderer: Renderer | RendererLike;
    tokenizer: unknown;
    /** Prompts are cut to this many tokens (default null: not cut). */
    max_prompt_tokens?: number | null;
    convo_prefix?: ChatMessage[] | null;
    /** The logging tag (default "prompts"). */
    dataset_name?: string;
  });
  /** `_truncate_prompt`: the prompt cut to `max_prompt_tokens` tokens (encoded with special tokens, decoded back), or as is. */
  truncatePrompt(prompt: string): string;
  getBatch(index: number): EnvGroupBuilder[];
  readonly length: number;
}

/** `distillation.DistillationDatasetConfig`: a dataset and the teacher its datums learn from. */
export interface DistillationDatasetConfig {
  dataset_builder: RLConfig['dataset_builder'];
  teacher_config: ScorerConfig;
  groups_per_batch: number;
}

/** `distillation.train_on_policy.Config` (the cookbook's names and defaults). */
export interface OnPolicyDistillationConfig {
  learning_rate: number;
  dataset_configs: DistillationDatasetConfig[];
  model_name: string;
  max_tokens: number;
  recipe_name?: string;
  renderer_name?: string;
  /** Sampling temperature (default 1). */
  temperature?: number;
  lora_rank?: number;
  /** Weight of the reverse KL to the teacher (default 1). */
  kl_penalty_coef?: number;
  /** Discount of the KL's future terms (default 0). */
  kl_discount_factor?: number;
  loss_fn?: string;
  loss_fn_config?: Record<string, number | string>;
  num_substeps?: number;
  log_path?: string;
  /** Evaluate every this many steps, before the step (default 20; 0: never); metrics under `test/`. */
  eval_every?: number;
  /** Save every this many steps (default 20). */
  save_every?: number;
  load_checkpoint_path?: string;
  max_steps?: number;
  /** Score each step's datums again on the new weights: `kl_pre_post_v1`, `kl_pre_post_v2` (default false). */
  compute_post_kl?: boolean;
  /** Builders of sampling evaluators (run with the datasets' test sets, if any). */
  evaluator_builders?: Array<() => SamplingClientEvaluator>;
}

export declare const distillation: {
  /**
   * `distillation.train_on_policy.main(config)`: the student samples each dataset's prompts,
   * each token's advantage is minus its reverse KL to the dataset's teacher (`teacher_kl`,
   * `teacher_kl/dataset_<i>` in the metrics), and the student trains as in `rl.train`.
   */
  trainOnPolicy(config: OnPolicyDistillationConfig, options: Omit<CookbookRunOptions, 'progress'>): Promise<TrainResult>;
  PromptOnlyEnv: typeof PromptOnlyEnv;
  PromptOnlyDataset: typeof PromptOnlyDataset;
};

export declare const hyperparams: {
  /** `hyperparam_utils.get_lr(model_name, is_lora)`: the recommended learning rate; throws for families it does not cover. */
  getLr(modelName: string, isLora?: boolean): number;
};

export declare const checkpoints: {
  /** `checkpoint_utils.get_last_checkpoint`: the last record with `requiredKey` (default "state_path"), or null. */
  getLastCheckpoint(logPathOrStore: string | RunStore, requiredKey?: string): Promise<CheckpointRecord | null>;
};

/** A store in memory (the default when a run has no `log_path`). */
export declare function memoryStore(): RunStore & { files: Map<string, string> };
/** A store in a browser's IndexedDB database `name`. */
export declare function indexedDbStore(name: string): RunStore;

/** A sampled sequence (`TokensWithLogprobs`). */
export declare class TokensWithLogprobs {
  constructor(fields: { tokens: number[]; maybe_logprobs: number[] | null; stop_reason?: string; sequence_id?: string | null; prompt_cache_hit_tokens?: number });
  tokens: number[];
  maybe_logprobs: number[] | null;
  stop_reason: string;
  sequence_id: string | null;
  prompt_cache_hit_tokens: number;
  /** The logprobs; throws when the sampler returned none. */
  readonly logprobs: number[];
}

/** `TokenCompleter`: extend it and implement `complete`. */
export declare class TokenCompleter {
  complete(modelInput: ModelInput, stop: string[] | number[], options?: { max_tokens?: number }): Promise<TokensWithLogprobs>;
}

/** `MessageCompleter`: extend it and implement `complete`. */
export declare class MessageCompleter {
  complete(messages: ChatMessage[]): Promise<ChatMessage>;
}

export declare const completers: {
  TokenCompleter: typeof TokenCompleter;
  MessageCompleter: typeof MessageCompleter;
  TokensWithLogprobs: typeof TokensWithLogprobs;
  /** `TinkerTokenCompleter`: one sample per call, `max_tokens` capped so that prompt and completion fit `context_window`. */
  TinkerTokenCompleter: new (params: { sampling_client: SamplingClient; max_tokens: number; temperature?: number; context_window?: number | null }) => TokenCompleter;
  /** `TinkerMessageCompleter`: render, sample, parse (tool calls kept). */
  TinkerMessageCompleter: new (params: { sampling_client: SamplingClient; renderer: Renderer | RendererLike; max_tokens: number; stop_condition?: string[] | number[] | null; temperature?: number }) => MessageCompleter;
};

/** `TrainingClientEvaluator`: extend it; `evaluate` gets the training client and returns metrics. */
export declare class TrainingClientEvaluator {
  evaluate(trainingClient: TrainingClient): Promise<Record<string, number>>;
}

/** `SamplingClientEvaluator`: extend it; `evaluate` gets a sampling client of the current weights and returns metrics. */
export declare class SamplingClientEvaluator {
  evaluate(samplingClient: SamplingClient): Promise<Record<string, number>>;
}

/** Base classes of `evaluator_builders`' evaluators (run every `eval_every` steps, before the step). */
export declare const evaluators: {
  TrainingClientEvaluator: typeof TrainingClientEvaluator;
  SamplingClientEvaluator: typeof SamplingClientEvaluator;
};
