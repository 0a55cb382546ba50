/**
 * `tinker-wasm/cookbook`: the whole SDK on the cookbook's build of the module, and
 * tinker-cookbook 0.6.1's methods (supervised fine-tuning, DPO, RL, distillation) with its
 * names, defaults and files. Every runtime entry point exports the same API.
 * @packageDocumentation
 * @module tinker-wasm/cookbook
 */
import type { ServiceClient, SamplingClient, TrainingClient, ModelInput, ChatMessage, Renderer, RendererLike } from '../index.js';
import type {
  SupervisedConfig,
  FromConversationFileBuilderParams,
  DpoConfig,
  DPODatasetBuilderFromComparisonsParams,
  ComparisonBuilderFromJsonlParams,
  RLConfig,
  OnPolicyDistillationConfig,
} from '../gen/cookbook/tinker_wasm.js';
import type {
  CookbookRunOptions,
  PolicyRunOptions,
  ProblemGroupBuilderParams,
  InitialObservationOverflowParams,
  EnvFromMessageEnvParams,
  StepExtra,
  RetryOnFailureParams,
  MinViableGroupParams,
  PromptOnlyDatasetParams,
  TokensWithLogprobsParams,
  CompleteParams,
  TinkerTokenCompleterParams,
  TinkerMessageCompleterParams,
} from '../gen/cookbook-params.js';

// The whole SDK, as tinker-wasm exports it (the same classes, on the cookbook build of the
// module: use this entry's ServiceClient for the cookbook's methods).
export * from '../index.js';
// The messages of this build's declarations (the same shape as the main entry's).
export type { ChatMessage, ContentPart } from '../gen/cookbook/tinker_wasm.js';
export type {
  SupervisedConfig,
  FromConversationFileBuilderParams,
  ChatDatasetBuilderCommonConfig,
  DpoConfig,
  DPODatasetBuilderFromComparisonsParams,
  ComparisonBuilderFromJsonlParams,
  LabeledComparison,
  RLConfig,
  AsyncConfig,
  ScorerConfig,
  OnPolicyDistillationConfig,
  DistillationDatasetConfig,
} from '../gen/cookbook/tinker_wasm.js';
export type {
  CookbookRunOptions,
  PolicyRunOptions,
  ProblemGroupBuilderParams,
  InitialObservationOverflowParams,
  EnvFromMessageEnvParams,
  StepExtra,
  RetryOnFailureParams,
  MinViableGroupParams,
  PromptOnlyDatasetParams,
  TokensWithLogprobsParams,
  CompleteParams,
  TinkerTokenCompleterParams,
  TinkerMessageCompleterParams,
} from '../gen/cookbook-params.js';

/** A run's files (`checkpoints.jsonl`, `metrics.jsonl`): a folder in Node (`log_path`), a store elsewhere. */
export interface RunStore {
  /** The file's text, or undefined when there is no such file. */
  read(name: string): Promise<string | undefined> | string | undefined;
  /** Appends to the file, creating it. */
  append(name: string, text: string): Promise<void> | void;
  /** Replaces the file. */
  write(name: string, text: string): Promise<void> | void;
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
  /** The save's name: the step in six digits (`000020`), or `final`. */
  name: string;
  /** The batch a resumed run starts at (within `epoch` for supervised and DPO runs). */
  batch?: number;
  /** The epoch a resumed run starts at (supervised and DPO runs). */
  epoch?: number;
  /** `CheckpointRecord.final`, kept when a record has it (these methods name their last save `final` instead). */
  final?: boolean;
  /** The saved state (`tinker://…/weights/…`), which a run resumes from. */
  state_path?: string;
  /** The saved sampler weights (`tinker://…/sampler_weights/…`); absent from a rolling (state-only) save. */
  sampler_path?: string;
  /** The loop state's other keys (e.g. `elapsed_tokens`, `cumulative_tokens`). */
  [key: string]: unknown;
}

/** tinker-cookbook's `supervised`: supervised fine-tuning on conversations. */
export declare const supervised: {
  /**
   * `supervised.train.main(config)`: tinker-cookbook's supervised fine-tuning loop
   * (schedules, epochs, pipelining, evaluation, checkpoints, resume from the run's files).
   */
  train(config: SupervisedConfig, options: CookbookRunOptions): Promise<TrainResult>;
  /** The cookbook's conversation JSONL: `{"messages": [...]}` per line. */
  FromConversationFileBuilder: {
    /** A builder with `params`' fields (an object). */
    new (params: FromConversationFileBuilderParams): FromConversationFileBuilderParams;
  };
};

/** tinker-cookbook's `preference`: direct preference optimization (DPO) on comparisons. */
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
  DPODatasetBuilderFromComparisons: {
    /** A builder with `params`' fields (an object). */
    new (params: DPODatasetBuilderFromComparisonsParams): DPODatasetBuilderFromComparisonsParams;
  };
  /** Comparison files: `{"comparison": {prompt_conversation, completion_A, completion_B}, "label"}` per line. */
  ComparisonBuilderFromJsonl: {
    /** A builder with `params`' fields (an object). */
    new (params: ComparisonBuilderFromJsonlParams): ComparisonBuilderFromJsonlParams;
  };
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

/** `rl.types.Env`: extend `rl.Env`. */
declare class Env {
  /** The first observation and its stop condition (or an overflow: the prompt alone is over budget). */
  initialObservation(): Promise<[ModelInput, number[] | string[]] | InitialObservationOverflow>;
  /** The outcome of the sampled tokens (`extra.stop_reason`: "stop" or "length"). */
  step(action: number[], extra?: StepExtra): Promise<StepResult>;
}

/** `rl.types.EnvGroupBuilder`: the environments of one group (one problem); extend `rl.EnvGroupBuilder`. */
declare class EnvGroupBuilder {
  /** The group's environments, one trajectory each. */
  makeEnvs(): Promise<Env[]>;
  /** The group's final rewards and metrics, one pair per trajectory (default: 0 and none). */
  computeGroupRewards(trajectories: unknown[], envs: Env[]): Promise<Array<[number, Record<string, number | null>]>>;
  /** Tags the step's metrics are grouped under (`env/<tag>/…`). */
  loggingTags(): string[];
}

/** `rl.problem_env.ProblemEnv`: one question and its answer; reward `format_coef * (format - 1) + correct`. Extend `rl.ProblemEnv`. */
declare class ProblemEnv extends Env {
  /** `convo_prefix`: messages before the question, e.g. few-shot examples (default null); `format_coef`: the penalty of a malformed answer (default 0.1). */
  constructor(renderer: Renderer | RendererLike, convo_prefix?: ChatMessage[] | null, format_coef?: number);
  /** The question, sent as the user's message after `convo_prefix`. */
  getQuestion(): string;
  /** Whether the reply's text is a correct answer. */
  checkAnswer(text: string): boolean;
  /** Whether the reply's text is well formed (a reply not ended by a stop sequence counts as malformed regardless). */
  checkFormat(text: string): boolean;
  /** The reference answer (the cookbook logs it; not called here). */
  getReferenceAnswer(): string;
  /** The renderer's stop sequences. */
  readonly stopCondition: number[] | string[];
}

/** `rl.problem_env.ProblemGroupBuilder`: `num_envs` environments from `env_thunk`, tagged `dataset_name`. The class is `rl.ProblemGroupBuilder`. */
declare class ProblemGroupBuilder extends EnvGroupBuilder {
  /** `num_envs` (from 1) calls of `env_thunk`; `dataset_name` is the logging tag (default "problems"). */
  constructor(params: ProblemGroupBuilderParams);
}

/** `rl.types.InitialObservationOverflow`: returned by `initialObservation()` when the prompt alone is over budget. The class is `rl.InitialObservationOverflow`. */
declare class InitialObservationOverflow {
  /** The rollout ends at once with one empty turn of `reward` and `metrics` (default none); no datum. */
  constructor(params: InitialObservationOverflowParams);
  /** The rollout's reward (it counts in the group's mean). */
  readonly reward: number;
  /** The rollout's metrics. */
  readonly metrics: Record<string, number>;
}

/** A message-level step's outcome (`rl.message_env.MessageStepResult`). */
export interface MessageStepResult {
  /** The step's reward. */
  reward: number;
  /** Whether the episode is over. */
  episode_done: boolean;
  /** The whole conversation after the step (the next prompt is rendered from it). */
  next_messages: ChatMessage[];
  /** The step's metrics (`env/all/<name>` in the step's line). */
  metrics?: Record<string, number>;
  /** The next turn's stop condition (default: the renderer's stop sequences). */
  next_stop_condition?: number[] | string[];
}

/** `rl.message_env.MessageEnv`: an environment at the level of messages; extend `rl.MessageEnv`. */
declare class MessageEnv {
  /** The conversation the first reply answers. */
  initialObservation(): Promise<ChatMessage[]>;
  /** The outcome of the assistant's reply (parsed by the renderer). */
  step(message: ChatMessage): Promise<MessageStepResult>;
  /** A reply cut at max_tokens, kept without a step: the conversation after it, or null (default: the episode ends). */
  observeTruncatedResponse(message: ChatMessage): Promise<ChatMessage[] | null>;
}

/** `rl.message_env.EnvFromMessageEnv`: a MessageEnv run as a token-level Env (parsing, stop and overflow rules of the cookbook's adapter). The class is `rl.EnvFromMessageEnv`. */
declare class EnvFromMessageEnv extends Env {
  /** `message_env` run with `renderer`, under the cookbook adapter's defaults. */
  constructor(params: EnvFromMessageEnvParams);
  /** The rendered first conversation and the renderer's stop sequences, or an overflow (`max_trajectory_tokens`). */
  initialObservation(): Promise<[ModelInput, number[] | string[]] | InitialObservationOverflow>;
  /** The reply parsed and passed to the MessageEnv's `step`, with the adapter's parse, length and overflow rules. */
  step(action: number[], extra?: StepExtra): Promise<StepResult>;
}

/** `rl.FailFast`: any rollout's error fails the run (the default, but for thinkingmachines/Inkling models). */
declare class FailFast {
  /** false: a rollout's error fails the run. */
  readonly catchesGroupErrors: false;
}

/** `rl.RetryOnFailure`: failed (or timed-out) rollouts retried on fresh environments within a budget; past it the group is dropped. */
declare class RetryOnFailure {
  /** `max_retries`: the group's retry budget (default 3); `per_rollout_timeout`: seconds per rollout (default 0: none). */
  constructor(params?: RetryOnFailureParams);
  /** true: a failed group is dropped instead of failing the run. */
  readonly catchesGroupErrors: true;
}

/** `rl.MinViableGroup`: a group is kept once `min_successful` (default ceil(0.75 · size)) rollouts succeed, dropped below it. */
declare class MinViableGroup {
  /** `max_retries` (default 3): the group's retry budget, spent only while fewer than `min_successful` have succeeded; `per_rollout_timeout` in seconds (default null: none). */
  constructor(params?: MinViableGroupParams);
  /** true: a failed group is dropped instead of failing the run. */
  readonly catchesGroupErrors: true;
}

/** What `dataset_builder` is called with. */
export interface DatasetBuilderContext {
  /** The model's tokenizer. */
  tokenizer: unknown;
  /** The run's renderer. */
  renderer: Renderer;
}

/** A dataset of groups: `getBatch(index)` gives a step's group builders. */
export interface RLDataset {
  /** The group builders of batch `index` (from 0). */
  getBatch(index: number): EnvGroupBuilder[] | Promise<EnvGroupBuilder[]>;
  /** The number of batches (a whole number). */
  readonly length: number;
}

/** tinker-cookbook's `rl`: reinforcement learning, and the environments and rollout strategies it runs. */
export declare const rl: {
  /**
   * `rl.train.main(config)` in its synchronous mode: each step rolls out a batch of groups on a
   * sampler of the current weights, trains on the group-centred advantages, and saves every
   * `save_every` steps; a restart on the same files resumes. Metrics per step under the
   * cookbook's names (`env/all/reward/total`, `optim/kl_sample_train_v1`, `tokens/…`, …).
   */
  train(config: RLConfig, options: PolicyRunOptions): Promise<TrainResult>;
  /** The base class of token-level environments (`rl.types.Env`). */
  Env: typeof Env;
  /** The base class of group builders (`rl.types.EnvGroupBuilder`). */
  EnvGroupBuilder: typeof EnvGroupBuilder;
  /** A question-and-answer environment to extend (`rl.problem_env.ProblemEnv`). */
  ProblemEnv: typeof ProblemEnv;
  /** A group of environments made by one function (`rl.problem_env.ProblemGroupBuilder`). */
  ProblemGroupBuilder: typeof ProblemGroupBuilder;
  /** The base class of message-level environments (`rl.message_env.MessageEnv`). */
  MessageEnv: typeof MessageEnv;
  /** A MessageEnv as a token-level Env (`rl.message_env.EnvFromMessageEnv`). */
  EnvFromMessageEnv: typeof EnvFromMessageEnv;
  /** What `initialObservation()` returns when the prompt alone is over budget (`rl.types.InitialObservationOverflow`). */
  InitialObservationOverflow: typeof InitialObservationOverflow;
  /** Rollout strategy: any error fails the run. */
  FailFast: typeof FailFast;
  /** Rollout strategy: failed rollouts retried, the group dropped past the budget. */
  RetryOnFailure: typeof RetryOnFailure;
  /** Rollout strategy: a group kept once enough of its rollouts succeed. */
  MinViableGroup: typeof MinViableGroup;
};

/** `distillation.PromptOnlyEnv`: a prompt, no reward (distillation's signal is the teacher's KL). */
declare class PromptOnlyEnv extends ProblemEnv {
  /** `prompt` as the question; format and answer are not checked. */
  constructor(prompt: string, renderer: Renderer | RendererLike, convo_prefix?: ChatMessage[] | null);
}

/** `distillation.PromptOnlyDataset`: batches of prompts, each a group of `group_size` PromptOnlyEnvs. */
declare class PromptOnlyDataset implements RLDataset {
  /** The dataset of `prompts` (`batch_size` and `group_size` from 1). */
  constructor(params: PromptOnlyDatasetParams);
  /** `_truncate_prompt`: the prompt cut to `max_prompt_tokens` tokens (encoded with special tokens, decoded back), or as is. */
  truncatePrompt(prompt: string): string;
  /** The group builders of batch `index` (a RangeError past the end). */
  getBatch(index: number): EnvGroupBuilder[];
  /** The number of batches: ceil(prompts / batch_size). */
  readonly length: number;
}

/** tinker-cookbook's `distillation`: on-policy distillation from teacher models. */
export declare const distillation: {
  /**
   * `distillation.train_on_policy.main(config)`: the student samples each dataset's prompts,
   * each token's advantage is minus its reverse KL to the dataset's teacher (`teacher_kl`,
   * `teacher_kl/dataset_<i>` in the metrics), and the student trains as in `rl.train`.
   */
  trainOnPolicy(config: OnPolicyDistillationConfig, options: PolicyRunOptions): Promise<TrainResult>;
  /** An environment of one prompt and no reward (`distillation.datasets.PromptOnlyEnv`). */
  PromptOnlyEnv: typeof PromptOnlyEnv;
  /** A dataset of prompts (`distillation.datasets.PromptOnlyDataset`). */
  PromptOnlyDataset: typeof PromptOnlyDataset;
};

/** tinker-cookbook's `hyperparam_utils`: recommended hyperparameters. */
export declare const hyperparams: {
  /** `hyperparam_utils.get_lr(model_name, is_lora)`: the recommended learning rate; throws for families it does not cover. */
  getLr(modelName: string, isLora?: boolean): number;
};

/** tinker-cookbook's `checkpoint_utils`: a run's checkpoint records. */
export declare const checkpoints: {
  /** `checkpoint_utils.get_last_checkpoint`: the last record with `requiredKey` (default "state_path"), or null. */
  getLastCheckpoint(logPathOrStore: string | RunStore, requiredKey?: string): Promise<CheckpointRecord | null>;
};

/** A store in memory (the default when a run has no `log_path`). */
export declare function memoryStore(): RunStore & {
  /** The files' texts, by name. */
  files: Map<string, string>;
};
/** A store in a browser's IndexedDB database `name`. */
export declare function indexedDbStore(name: string): RunStore;

/** A sampled sequence (`TokensWithLogprobs`). */
export declare class TokensWithLogprobs {
  /** The fields, with the cookbook's defaults (`stop_reason` "stop", `sequence_id` null, `prompt_cache_hit_tokens` 0). */
  constructor(fields: TokensWithLogprobsParams);
  /** The sampled token ids. */
  tokens: number[];
  /** Their logprobs, or null when the sampler returned none. */
  maybe_logprobs: number[] | null;
  /** Why sampling stopped: "stop" or "length". */
  stop_reason: string;
  /** Tinker's id of the sampled sequence (its provenance), or null. */
  sequence_id: string | null;
  /** Prompt tokens billed as prefix-cache hits. */
  prompt_cache_hit_tokens: number;
  /** The logprobs; throws when the sampler returned none. */
  readonly logprobs: number[];
}

/** `TokenCompleter`: extend it and implement `complete`. */
export declare class TokenCompleter {
  /** A completion of `modelInput` up to a stop sequence of `stop` (strings or token ids); `max_tokens` caps this call. */
  complete(modelInput: ModelInput, stop: string[] | number[], params?: CompleteParams): Promise<TokensWithLogprobs>;
}

/** `MessageCompleter`: extend it and implement `complete`. */
export declare class MessageCompleter {
  /** The assistant's reply to `messages` (with `tool_calls` when it made some). */
  complete(messages: ChatMessage[]): Promise<ChatMessage>;
}

/** tinker-cookbook's `completers`: samplers of tokens and of messages. */
export declare const completers: {
  /** The base class of token completers. */
  TokenCompleter: typeof TokenCompleter;
  /** The base class of message completers. */
  MessageCompleter: typeof MessageCompleter;
  /** A sampled sequence. */
  TokensWithLogprobs: typeof TokensWithLogprobs;
  /** `TinkerTokenCompleter`: one sample per call, `max_tokens` capped so that prompt and completion fit `context_window`. */
  TinkerTokenCompleter: {
    /** Samples with `sampling_client`: at most `max_tokens` per call, `temperature` (default 1), `context_window` in tokens (default null: none). */
    new (params: TinkerTokenCompleterParams): TokenCompleter;
  };
  /** `TinkerMessageCompleter`: render, sample, parse (tool calls kept). */
  TinkerMessageCompleter: {
    /** Samples with `sampling_client` and `renderer`: at most `max_tokens`, `stop_condition` (default null: the renderer's stop sequences), `temperature` (default 1). */
    new (params: TinkerMessageCompleterParams): MessageCompleter;
  };
};

/** `TrainingClientEvaluator`: extend it; `evaluate` gets the training client and returns metrics. */
export declare class TrainingClientEvaluator {
  /** The metrics of the current weights, through the training client. */
  evaluate(trainingClient: TrainingClient): Promise<Record<string, number>>;
}

/** `SamplingClientEvaluator`: extend it; `evaluate` gets a sampling client of the current weights and returns metrics. */
export declare class SamplingClientEvaluator {
  /** The metrics of a sampler on the current weights. */
  evaluate(samplingClient: SamplingClient): Promise<Record<string, number>>;
}

/** Base classes of `evaluator_builders`' evaluators (run every `eval_every` steps, before the step). */
export declare const evaluators: {
  /** The base class of evaluators of the training client. */
  TrainingClientEvaluator: typeof TrainingClientEvaluator;
  /** The base class of evaluators of a sampler. */
  SamplingClientEvaluator: typeof SamplingClientEvaluator;
};

// The classes of `rl` and `distillation`, as types (the values are the namespaces' members: `rl.Env`, …).
export type {
  Env,
  EnvGroupBuilder,
  ProblemEnv,
  ProblemGroupBuilder,
  MessageEnv,
  EnvFromMessageEnv,
  InitialObservationOverflow,
  FailFast,
  RetryOnFailure,
  MinViableGroup,
  PromptOnlyEnv,
  PromptOnlyDataset,
};
