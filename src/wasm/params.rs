//! The parameter objects of the client methods, each declared once: one `declare_params!` entry
//! (src/wasm/convert/declare.rs) yields the Rust struct of its raw fields, the reader (an
//! options object whose unknown keys are errors naming the key, each field read by its type
//! and named in its error), and the TypeScript interface in the package's `.d.ts`. Defaults and validation are
//! the core's: a field is `None` when absent, and the method fills the core's request
//! from what is present.
//!
//! (A macro of ours rather than serde + serde-wasm-bindgen: the lite build has no serde,
//! whose generated code cost it about 20 KB gzip (issue 8), and the readers below are the
//! ones every other object of the skin already uses, with the same error messages.)

use wasm_bindgen::prelude::*;

use crate::map::StrMap;
use crate::wasm::convert::declare_params;

declare_params! {
    ts = PARAMS_TS;

    /// Parameters of `ServiceClient.createLoraTrainingClient` (Python's names and defaults).
    CreateLoraTrainingClientParams("createLoraTrainingClient params") {
        /// The base model, e.g. "Qwen/Qwen3-8B".
        base_model: String => ": string",
        /// LoRA rank, a positive power of two (default 32).
        rank: u32 => "?: number",
        /// Initialisation seed (random by default).
        seed: u64 => "?: number",
        /// Add LoRA to MLP (and MoE) layers (default true).
        train_mlp: bool => "?: boolean",
        /// Add LoRA to attention layers (default true).
        train_attn: bool => "?: boolean",
        /// Add LoRA to the unembedding layer (default true).
        train_unembed: bool => "?: boolean",
        /// Metadata of the training run.
        user_metadata: StrMap<String> => "?: Record<string, string>",
        /// Optimizer family, `{ type: 'adamw' }` (default) or `{ type: 'dimuon', version: 1 }`.
        optimizer: JsValue => "?: {\n    /** The optimizer family, e.g. 'adamw' or 'dimuon'; other fields are its settings. */\n    type: string; [key: string]: unknown\n  }",
    }

    /// Parameters of `ServiceClient.createTrainingClientFromState(WithOptimizer)` (after the path).
    CreateTrainingClientFromStateParams("createTrainingClientFromState params") {
        /// Override the checkpoint's base model (a compatible variant).
        base_model: String => "?: string",
        /// Metadata of the new training run.
        user_metadata: StrMap<String> => "?: Record<string, string>",
        /// Access token of another account that owns the checkpoint.
        weights_access_token: String => "?: string",
        /// Optimizer family (only without optimizer state).
        optimizer: JsValue => "?: {\n    /** The optimizer family, e.g. 'adamw' or 'dimuon'; other fields are its settings. */\n    type: string; [key: string]: unknown\n  }",
    }

    /// Sampling retry behaviour: Python's `RetryConfig`, durations in seconds as there.
    RetryConfig("retry_config") {
        /// Concurrent sampling requests of this client (default 100).
        max_connections: u32 => "?: number",
        /// Give up after this long without progress (default 7200).
        progress_timeout: f64 => "?: number",
        /// First retry delay (default 0.5).
        retry_delay_base: f64 => "?: number",
        /// Largest retry delay (default 10).
        retry_delay_max: f64 => "?: number",
        /// Jitter of the delays, in [0, 1] (default 0.25).
        jitter_factor: f64 => "?: number",
        /// Retry failed samples (default true).
        enable_retry_logic: bool => "?: boolean",
        /// Log samples that make no progress (default true).
        enable_stuck_detection: bool => "?: boolean",
    }

    /// Parameters of `ServiceClient.createSamplingClient`: give `model_path` or `base_model`.
    CreateSamplingClientParams("createSamplingClient params") {
        /// Saved sampler weights, `tinker://…/sampler_weights/…`.
        model_path: String => "?: string",
        /// A base model, e.g. "Qwen/Qwen3-8B".
        base_model: String => "?: string",
        /// Retry behaviour of this client's samples.
        retry_config: RetryConfig => "?: RetryConfig",
        /// Record the server's stability info of each sample.
        record_stability_info: bool => "?: boolean",
    }

    /// Parameters of `ServiceClient.samplingClient` (after the sampling session id).
    SamplingClientParams("samplingClient params") {
        /// The sampler's base model, if known (else asked of the server).
        base_model: String => "?: string",
        /// Retry behaviour of this client's samples.
        retry_config: RetryConfig => "?: RetryConfig",
        /// Record the server's stability info of each sample.
        record_stability_info: bool => "?: boolean",
    }

    /// Parameters of `TrainingClient.createSamplingClient` (after the model path).
    SamplerBehaviourParams("createSamplingClient params") {
        /// Retry behaviour of this client's samples.
        retry_config: RetryConfig => "?: RetryConfig",
        /// Record the server's stability info of each sample.
        record_stability_info: bool => "?: boolean",
    }

    /// Parameters of `ServiceClient.trainingClient` (after the model id).
    TrainingClientParams("trainingClient params") {
        /// The seq id of the next request (a `TrainingClient`'s `nextSeqId`; default 1).
        next_seq_id: u32 => "?: number",
    }

    /// Parameters of `ServiceClient.copyWeights` (after the path).
    CopyWeightsParams("copyWeights params") {
        /// Seconds until the copy expires.
        ttl_seconds: u64 => "?: number",
        /// Access token of another account that owns the checkpoint.
        weights_access_token: String => "?: string",
    }

    /// Parameters of `ServiceClient.close`.
    CloseParams("close params") {
        /// How the session ended (default 'success').
        status: JsValue => "?: 'success' | 'errored' | 'interrupted'",
        /// A note on why.
        detail: String => "?: string",
    }

    /// Parameters of `forward` / `forwardBackward` (after the data and the loss function).
    ForwardParams("forwardBackward params") {
        /// Loss function settings, e.g. `{ clip_low_threshold: 0.8 }` for `ppo`, `{ beta: 0.05 }` for `dro`.
        loss_fn_config: JsValue => "?: Record<string, number | string>",
    }

    /// Parameters of `saveState` (after the name).
    SaveStateParams("saveState params") {
        /// Seconds until the checkpoint expires (3600 … 10 years).
        ttl_seconds: u64 => "?: number",
        /// Replace a checkpoint of the same name.
        overwrite: bool => "?: boolean",
        /// Metadata of the checkpoint.
        user_metadata: StrMap<String> => "?: Record<string, string>",
    }

    /// Parameters of `loadState` / `loadStateWithOptimizer` (after the path).
    LoadStateParams("loadState params") {
        /// Access token of another account that owns the checkpoint.
        weights_access_token: String => "?: string",
    }

    /// Parameters of `saveWeightsForSampler` (after the name).
    SaveWeightsForSamplerParams("saveWeightsForSampler params") {
        /// Seconds until the checkpoint expires.
        ttl_seconds: u64 => "?: number",
        /// Metadata of the checkpoint.
        user_metadata: StrMap<String> => "?: Record<string, string>",
    }

    /// Parameters of `saveWeightsExternal` (after the name).
    SaveWeightsExternalParams("saveWeightsExternal params") {
        /// Seconds until the checkpoint expires.
        ttl_seconds: u64 => "?: number",
        /// age recipients to encrypt the files to.
        age_encryption_recipients: Vec<String> => "?: string[]",
    }

    /// Parameters of `saveWeightsAndGetSamplingClient`.
    SaveWeightsAndGetSamplingClientParams("saveWeightsAndGetSamplingClient params") {
        /// 'snapshot' (default) saves the weights; 'inflight' samples the live ones.
        kind: String => "?: 'snapshot' | 'inflight'",
        /// Retry behaviour of the new client's samples.
        retry_config: RetryConfig => "?: RetryConfig",
        /// Record the server's stability info of each sample.
        record_stability_info: bool => "?: boolean",
    }

    /// Parameters of `sample` (the wire's and Python's names).
    SampleParams("sample params") {
        /// The prompt: a ModelInput, or token ids.
        prompt: JsValue => ": ModelInput | Uint32Array | Int32Array | ArrayLike<number>",
        /// Independent samples to draw (default 1).
        num_samples: u32 => "?: number",
        /// Sampling parameters.
        sampling_params: JsValue => "?: SamplingParams",
        /// Return the logprob of each prompt token.
        include_prompt_logprobs: bool => "?: boolean",
        /// Top-k logprobs per prompt position.
        topk_prompt_logprobs: u32 => "?: number",
        /// Top-k logprobs per sampled position.
        topk_sample_logprobs: u32 => "?: number",
        /// Token ids to score per prompt position: int64 `[len(prompt) - 1, K]`, -1 for none.
        target_prompt_logprobs: JsValue => "?: TensorData",
        /// Alternatives to draw per prompt position.
        prompt_alt_tokens_k: u32 => "?: number",
        /// Score only the last N prompt tokens.
        prompt_logprobs_last_n: u32 => "?: number",
    }

    /// Parameters of `computeLogprobs` (after the prompt).
    ComputeLogprobsParams("computeLogprobs params") {
        /// Score only the last N prompt tokens.
        prompt_logprobs_last_n: u32 => "?: number",
    }

    /// Parameters of the REST calls that read one object.
    AccessScopeParams("params") {
        /// 'owned' (default) or 'accessible' (shared with you too).
        access_scope: String => "?: AccessScope",
    }

    /// Parameters of `listTrainingRuns`.
    ListTrainingRunsParams("listTrainingRuns params") {
        /// Page size (default 20, at most 1000).
        limit: u64 => "?: number",
        /// Where the page starts.
        offset: u64 => "?: number",
        /// 'owned' (default) or 'accessible'.
        access_scope: String => "?: AccessScope",
        /// Only the runs of this project.
        project_id: String => "?: string",
    }

    /// Parameters of `listUserCheckpoints`.
    ListUserCheckpointsParams("listUserCheckpoints params") {
        /// Page size (default 100, at most 1000).
        limit: u64 => "?: number",
        /// Where the page starts.
        offset: u64 => "?: number",
    }

    /// Parameters of `listSessions`.
    ListSessionsParams("listSessions params") {
        /// Page size (default 20, at most 1000).
        limit: u64 => "?: number",
        /// Where the page starts.
        offset: u64 => "?: number",
        /// 'owned' (default) or 'accessible'.
        access_scope: String => "?: AccessScope",
    }

    /// Parameters of `setCheckpointTtlFromTinkerPath` (after the path).
    SetCheckpointTtlParams("setCheckpointTtlFromTinkerPath params") {
        /// Seconds to live, a positive integer; `null` removes the expiry.
        ttl_seconds: JsValue => ": number | null",
    }

    /// Parameters of `RestClient.copyWeights` (after the path).
    RestCopyWeightsParams("copyWeights params") {
        /// The project to copy into (default `TINKER_PROJECT_ID`).
        destination_project_id: String => "?: string",
        /// Seconds until the copy expires.
        ttl_seconds: u64 => "?: number",
        /// Access token of another account that owns the checkpoint.
        weights_access_token: String => "?: string",
    }

    /// Parameters of `assignSessionProject` (after the session id).
    AssignSessionProjectParams("assignSessionProject params") {
        /// The project to move the session into.
        project_id: String => ": string",
    }

    /// Parameters of `getAuditLog`.
    AuditLogParams("getAuditLog params") {
        /// Which resource's events (default `'all'`).
        event_type: String => "?: 'all' | 'checkpoints' | 'projects' | 'teams' | 'organizations'",
        /// The UTC day to query (default: today): `'2026-01-15'`, or a Date (its UTC day).
        day: JsValue => "?: string | Date",
    }

    /// Parameters of `getBillingUsage`: the window [starting_on, ending_before).
    BillingUsageParams("getBillingUsage params") {
        /// Start of the window (a Date or an RFC 3339 string).
        starting_on: JsValue => ": Date | string",
        /// End of the window, excluded (a Date or an RFC 3339 string).
        ending_before: JsValue => ": Date | string",
    }

    /// Parameters of `getCurrentCheckpointStorageUsage`.
    StorageUsageParams("getCurrentCheckpointStorageUsage params") {
        /// Only this project.
        project_id: String => "?: string",
    }
}
