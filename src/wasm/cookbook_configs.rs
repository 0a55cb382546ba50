//! The configs of `rl.train` and `distillation.trainOnPolicy`, declared once: their
//! TypeScript comes from here, and their reader is the cookbook crate's
//! (`tinker_cookbook::config`, which pkg/cookbook/cookbook.js hands them to as JSON),
//! whose key lists must name the same keys in the same order (checked when the module
//! is built). The fields are JS values: nothing here reads them.

use wasm_bindgen::prelude::*;

use super::cookbook::same_keys;
use crate::wasm::convert::declare_params;

// The types the declarations below name, from the package's cookbook declarations.
#[wasm_bindgen(typescript_custom_section)]
const RL_IMPORTS: &str = "import type { RLDataset, DatasetBuilderContext, SamplingClientEvaluator, FailFast, RetryOnFailure, MinViableGroup } from '../../cookbook/index.js';";

declare_params! {
    ts = RL_CONFIG_TS;

    /// `rl.train.Config` (the synchronous loop's fields, the cookbook's names and defaults).
    RLConfig("rl.train config") {
        /// The learning rate (constant).
        learning_rate: JsValue => ": number",
        /// Builds the datasets from the model's tokenizer and renderer: `[train, test?]`.
        dataset_builder: JsValue => ": (ctx: DatasetBuilderContext) => Promise<[RLDataset, RLDataset?]> | [RLDataset, RLDataset?]",
        /// The base model to train, e.g. "Qwen/Qwen3-8B".
        model_name: JsValue => ": string",
        /// A name for the run (kept for the cookbook's configs; not sent).
        recipe_name: JsValue => "?: string",
        /// Longest sample in tokens.
        max_tokens: JsValue => ": number",
        /// Where the run keeps checkpoints.jsonl and metrics.jsonl (a folder in Node).
        log_path: JsValue => "?: string",
        /// Evaluate every this many steps, before the step, and the final weights (default 20; 0: never).
        eval_every: JsValue => "?: number",
        /// Save every this many steps (default 20).
        save_every: JsValue => "?: number",
        /// Builders of sampling evaluators (run with the builder's test set, if any, which is evaluated as `test/…`).
        evaluator_builders: JsValue => "?: Array<() => SamplingClientEvaluator>",
        /// Weights to start from (`tinker://…/weights/…`, a fresh optimizer); a resume from log_path wins.
        load_checkpoint_path: JsValue => "?: string",
        /// The renderer (default: the model's recommended one); also the run's user metadata.
        renderer_name: JsValue => "?: string",
        /// The KL penalty against `kl_reference_config`'s policy (default 0: none).
        kl_penalty_coef: JsValue => "?: number",
        /// Discount of the KL penalty's future terms (default 0: not discounted).
        kl_discount_factor: JsValue => "?: number",
        /// The KL penalty's reference policy (required when `kl_penalty_coef` > 0).
        kl_reference_config: JsValue => "?: ScorerConfig | null",
        /// "importance_sampling" (default), "ppo", "cispo", "dro", …
        loss_fn: JsValue => "?: string",
        /// The loss's config, sent with each `forward_backward` (default none).
        loss_fn_config: JsValue => "?: Record<string, number | string>",
        /// Optimizer steps per batch (default 1).
        num_substeps: JsValue => "?: number",
        /// LoRA rank (default 32).
        lora_rank: JsValue => "?: number",
        /// Sampling temperature (default 1).
        temperature: JsValue => "?: number",
        /// Groups whose rewards are all equal are not trained on (default false).
        remove_constant_reward_groups: JsValue => "?: boolean",
        /// Time to live of periodic saves (default 604800; null: kept).
        ttl_seconds: JsValue => "?: number | null",
        /// Passes over the dataset (default 1): step i trains batch `i % length`.
        num_epochs: JsValue => "?: number",
        /// Stop after this many steps in all (at most `num_epochs` passes).
        max_steps: JsValue => "?: number",
        /// Off-policy training: sampling runs up to `max_steps_off_policy` steps ahead of
        /// training, each step trains `groups_per_batch` completed groups (oldest weights
        /// first), with `loss_fn` (default "stable_reinforce") in place of the config's.
        async_config: JsValue => "?: AsyncConfig | null",
        /// How rollout errors are handled: false (FailFast), true (RetryOnFailure()), or a strategy; errors counted under `rollout_errors/`.
        rollout_error_tolerance: JsValue => "?: boolean | FailFast | RetryOnFailure | MinViableGroup | null",
        /// Rolling saves (the state alone, kept `rolling_ttl_seconds`, default 7200) every this many steps between the periodic ones; each deletes the previous (default 0: none).
        rolling_save_every: JsValue => "?: number",
        /// Time to live of rolling saves (default 7200).
        rolling_ttl_seconds: JsValue => "?: number",
        /// Score each step's datums again on the new weights: `kl_pre_post_v1`, `kl_pre_post_v2` (default false).
        compute_post_kl: JsValue => "?: boolean",
    }

    /// `rl.train.AsyncConfig`: off-policy training.
    AsyncConfig("async_config") {
        /// How many steps sampling may run ahead of training (0: on-policy).
        max_steps_off_policy: JsValue => ": number",
        /// Completed groups each step trains.
        groups_per_batch: JsValue => ": number",
        /// The loss of off-policy steps (default "stable_reinforce").
        loss_fn: JsValue => "?: string",
    }

    /// `KLReferenceConfig` / `TeacherConfig`: a base model, with a checkpoint's weights when given.
    ScorerConfig("scorer config") {
        /// The base model, e.g. "Qwen/Qwen3-8B".
        base_model: JsValue => ": string",
        /// Sampler weights to score with (`tinker://…/sampler_weights/…`; default null: the base model's).
        load_checkpoint_path: JsValue => "?: string | null",
    }

    /// `distillation.train_on_policy.Config` (the cookbook's names and defaults).
    OnPolicyDistillationConfig("distillation.trainOnPolicy config") {
        /// The learning rate (constant).
        learning_rate: JsValue => ": number",
        /// The datasets and their teachers (one or more): each step trains a batch of every one, for as many steps as the shortest has batches.
        dataset_configs: JsValue => ": DistillationDatasetConfig[]",
        /// The student's base model, e.g. "Qwen/Qwen3-8B".
        model_name: JsValue => ": string",
        /// A name for the run (kept for the cookbook's configs; not sent).
        recipe_name: JsValue => "?: string",
        /// The renderer (default: the model's recommended one); also the run's user metadata.
        renderer_name: JsValue => "?: string",
        /// Longest sample in tokens.
        max_tokens: JsValue => ": number",
        /// Sampling temperature (default 1).
        temperature: JsValue => "?: number",
        /// Score each step's datums again on the new weights: `kl_pre_post_v1`, `kl_pre_post_v2` (default false).
        compute_post_kl: JsValue => "?: boolean",
        /// Builders of sampling evaluators (run with the datasets' test sets, if any).
        evaluator_builders: JsValue => "?: Array<() => SamplingClientEvaluator>",
        /// LoRA rank (default 32).
        lora_rank: JsValue => "?: number",
        /// Weight of the reverse KL to the teacher (default 1).
        kl_penalty_coef: JsValue => "?: number",
        /// Discount of the KL's future terms (default 0).
        kl_discount_factor: JsValue => "?: number",
        /// "importance_sampling" (default), "ppo", "cispo", "dro", …
        loss_fn: JsValue => "?: string",
        /// The loss's config, sent with each `forward_backward` (default none).
        loss_fn_config: JsValue => "?: Record<string, number | string>",
        /// Optimizer steps per batch (default 1).
        num_substeps: JsValue => "?: number",
        /// Where the run keeps checkpoints.jsonl and metrics.jsonl (a folder in Node).
        log_path: JsValue => "?: string",
        /// Evaluate every this many steps, before the step (default 20; 0: never); metrics under `test/`.
        eval_every: JsValue => "?: number",
        /// Save every this many steps (default 20).
        save_every: JsValue => "?: number",
        /// Weights to start from (`tinker://…/weights/…`, a fresh optimizer); a resume from log_path wins.
        load_checkpoint_path: JsValue => "?: string",
        /// Stop after this many steps in all.
        max_steps: JsValue => "?: number",
    }

    /// `distillation.DistillationDatasetConfig`: a dataset and the teacher its datums learn from.
    DistillationDatasetConfig("dataset_configs[]") {
        /// Builds the datasets from the model's tokenizer and renderer: `[train, test?]`.
        dataset_builder: JsValue => ": RLConfig['dataset_builder']",
        /// The teacher whose logprobs score this dataset's samples.
        teacher_config: JsValue => ": ScorerConfig",
        /// Required, but not read: a step takes the dataset's whole `getBatch(i)` (as the cookbook's `CompositeDataset`).
        groups_per_batch: JsValue => ": number",
    }
}

const _: () = assert!(same_keys(
    RLConfig::KEYS,
    tinker_cookbook::config::RL_CONFIG
));
const _: () = assert!(same_keys(
    AsyncConfig::KEYS,
    tinker_cookbook::config::ASYNC_CONFIG
));
const _: () = assert!(same_keys(
    ScorerConfig::KEYS,
    tinker_cookbook::config::SCORER
));
const _: () = assert!(same_keys(
    OnPolicyDistillationConfig::KEYS,
    tinker_cookbook::config::DISTILLATION_CONFIG
));
const _: () = assert!(same_keys(
    DistillationDatasetConfig::KEYS,
    tinker_cookbook::config::DISTILLATION_DATASET
));
