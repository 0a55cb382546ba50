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
