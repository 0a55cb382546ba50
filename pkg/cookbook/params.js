// The parameter objects of tinker-wasm/cookbook's JavaScript classes and methods, each
// declared once (pkg/declare.js): their readers, and their TypeScript in
// pkg/gen/cookbook-params.d.ts. (The configs the module reads are Rust's declare_params!.)
import { declareParams } from '../declare.js';

/** The types the generated declarations name, and the module (from pkg/gen/) that has them. */
export const TS_TYPES = { module: '../cookbook/index.js', names: ['ServiceClient', 'SamplingClient', 'ChatMessage', 'Renderer', 'RendererLike', 'Env', 'MessageEnv', 'RunStore'] };

/** @type {import('../declare.js').Fields} */
const runFields = {
  service: [': ServiceClient', "The client to train with (its options carry the key, base URL and tokenizer loading); tinker-wasm/cookbook's `ServiceClient`."],
  signal: ['?: AbortSignal', 'Stops the run cleanly: the steps in flight finish, then a checkpoint is saved where it stopped. Aborted while the training client is still being created, the creation is cancelled and the method rejects with the abort\'s reason (there is nothing to save).'],
  onMetrics: ['?: (metrics: Record<string, number>) => void', "Receives each step's metrics line (the cookbook's names), after it is written."],
  store: ['?: RunStore', "Where the run's files live when not in a `log_path` folder (browsers, Workers)."],
};

export const CookbookRunOptions = declareParams('CookbookRunOptions', 'run options', 'The per-call options of `supervised.train` and `preference.trainDpo`.', {
  ...runFields,
  progress: ['?: boolean', 'In a Node terminal, a progress line (step, loss, ETA) on stderr; `false` turns it off.'],
});

export const PolicyRunOptions = declareParams('PolicyRunOptions', 'run options', 'The per-call options of `rl.train` and `distillation.trainOnPolicy`.', runFields);

export const ProblemGroupBuilderParams = declareParams('ProblemGroupBuilderParams', 'ProblemGroupBuilder', 'Parameters of `rl.ProblemGroupBuilder`.', {
  env_thunk: [': () => Env', 'Makes one environment of the group (called `num_envs` times).'],
  num_envs: [': number', 'Environments in the group (from 1).'],
  dataset_name: ['?: string', 'The logging tag (default "problems").'],
});

export const InitialObservationOverflowParams = declareParams('InitialObservationOverflowParams', 'InitialObservationOverflow', 'Parameters of `rl.InitialObservationOverflow`.', {
  reward: [': number', "The rollout's reward (it counts in the group's mean)."],
  metrics: ['?: Record<string, number>', "The rollout's metrics (default none)."],
  logs: ['?: Record<string, unknown>', "The rollout's logs (default none)."],
});

export const EnvFromMessageEnvParams = declareParams('EnvFromMessageEnvParams', 'EnvFromMessageEnv', 'Parameters of `rl.EnvFromMessageEnv`.', {
  renderer: [': Renderer | RendererLike', 'Renders the conversation and parses each reply.'],
  message_env: [': MessageEnv', 'The environment to run.'],
  failed_parse_reward: ['?: number', 'Reward of a malformed reply (default -1).'],
  terminate_on_parse_error: ['?: boolean', 'A malformed reply ends the episode (default true).'],
  max_trajectory_tokens: ['?: number | null', "The conversation's token budget, with room for `max_generation_tokens` (default: none)."],
  max_generation_tokens: ['?: number | null', 'Tokens kept free for the next reply within `max_trajectory_tokens` (default: none).'],
  context_overflow_reward: ['?: number', 'Reward of a reply cut at max_tokens or a conversation over budget (default -0.1).'],
  terminate_on_length: ['?: boolean', 'A reply cut at max_tokens ends the episode (default true; false: `observeTruncatedResponse`).'],
});

export const StepExtra = declareParams('StepExtra', 'step extra', "What `Env.step`'s second argument tells about the sampled tokens.", {
  stop_reason: ['?: string', 'Why sampling stopped: "stop" or "length".'],
});

export const RetryOnFailureParams = declareParams('RetryOnFailureParams', 'RetryOnFailure', 'Parameters of `rl.RetryOnFailure`.', {
  max_retries: ['?: number', "The group's retry budget (default 3)."],
  per_rollout_timeout: ['?: number', 'Seconds per rollout (default 0: none).'],
});

export const MinViableGroupParams = declareParams('MinViableGroupParams', 'MinViableGroup', 'Parameters of `rl.MinViableGroup`.', {
  min_successful: ['?: number | null', 'Rollouts that must succeed for the group to be kept (default null: ceil(0.75 · size)).'],
  max_retries: ['?: number', "The group's retry budget (default 3), spent only while fewer than `min_successful` have succeeded."],
  per_rollout_timeout: ['?: number | null', 'Seconds per rollout (default null: none).'],
});

export const PromptOnlyDatasetParams = declareParams('PromptOnlyDatasetParams', 'PromptOnlyDataset', 'Parameters of `distillation.PromptOnlyDataset`.', {
  prompts: [': string[]', 'The prompts, in order.'],
  batch_size: [': number', 'Prompts (groups) per batch.'],
  group_size: [': number', 'Environments per prompt.'],
  renderer: [': Renderer | RendererLike', "The model's renderer."],
  tokenizer: [': unknown', "The model's tokenizer (for `max_prompt_tokens`)."],
  max_prompt_tokens: ['?: number | null', 'Prompts are cut to this many tokens (default null: not cut).'],
  convo_prefix: ['?: ChatMessage[] | null', 'Messages before each prompt (default null).'],
  dataset_name: ['?: string', 'The logging tag (default "prompts").'],
});

export const TokensWithLogprobsParams = declareParams('TokensWithLogprobsParams', 'TokensWithLogprobs', 'The fields of a `TokensWithLogprobs`.', {
  tokens: [': number[]', 'The sampled token ids.'],
  maybe_logprobs: [': number[] | null', 'Their logprobs, or null when the sampler returned none.'],
  stop_reason: ['?: string', 'Why sampling stopped: "stop" (default) or "length".'],
  sequence_id: ['?: string | null', "Tinker's id of the sampled sequence (default null)."],
  prompt_cache_hit_tokens: ['?: number', 'Prompt tokens billed as prefix-cache hits (default 0).'],
});

export const CompleteParams = declareParams('CompleteParams', 'complete options', "`TokenCompleter.complete`'s third argument.", {
  max_tokens: ['?: number', 'Caps the completion of this call.'],
});

export const TinkerTokenCompleterParams = declareParams('TinkerTokenCompleterParams', 'TinkerTokenCompleter', 'Parameters of `completers.TinkerTokenCompleter`.', {
  sampling_client: [': SamplingClient', 'Samples the completions.'],
  max_tokens: [': number', 'Most tokens per call.'],
  temperature: ['?: number', 'Sampling temperature (default 1).'],
  context_window: ['?: number | null', 'Prompt and completion fit this many tokens (default null: no limit).'],
});

export const TinkerMessageCompleterParams = declareParams('TinkerMessageCompleterParams', 'TinkerMessageCompleter', 'Parameters of `completers.TinkerMessageCompleter`.', {
  sampling_client: [': SamplingClient', 'Samples the replies.'],
  renderer: [': Renderer | RendererLike', 'Renders the conversation and parses the reply.'],
  max_tokens: [': number', 'Most tokens per reply.'],
  stop_condition: ['?: string[] | number[] | null', "Stop sequences (default null: the renderer's)."],
  temperature: ['?: number', 'Sampling temperature (default 1).'],
});

