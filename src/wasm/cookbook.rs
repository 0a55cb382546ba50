//! `tinker-wasm/cookbook` for JavaScript: `supervised.train`'s state machine
//! (`tinker_cookbook::sft::Sft`, driven by pkg/cookbook/cookbook.js, which holds the
//! dataset's source, the run's store, the signal and the callbacks), `hyperparams.getLr`
//! and `checkpoints.getLastCheckpoint`. Nothing here decides: it converts.

use js_sys::{Array, Float32Array, Object};
use tinker_cookbook::sft::{SaveOrder, Sft, Start};
use wasm_bindgen::prelude::*;

use super::common::*;
use crate::wasm::convert::declare_params;
use crate::wasm::convert::{datum_to_js, model_input_to_js};
use crate::wasm::errors::{input_error, type_error};
use crate::wasm::tokenizer::JsTokenizer;

declare_params! {
    ts = COOKBOOK_TS;

    /// `supervised.train`'s config: tinker-cookbook's `supervised.train.Config`, its
    /// names and defaults.
    SupervisedConfig("supervised.train config") {
        /// The base model to fine-tune, e.g. "Qwen/Qwen3-8B".
        model_name: String => ": string",
        /// Where the run keeps checkpoints.jsonl and metrics.jsonl (a folder in Node).
        log_path: String => "?: string",
        /// A name for the run (kept for the cookbook's configs; not sent).
        recipe_name: String => "?: string",
        /// The dataset: `new supervised.FromConversationFileBuilder({...})`.
        dataset_builder: JsValue => ": FromConversationFileBuilderParams",
        /// Weights to start from (`tinker://…/weights/…`); a resume from log_path wins.
        load_checkpoint_path: String => "?: string",
        /// The renderer (default: the dataset's `common_config.renderer_name`).
        renderer_name: String => "?: string",
        /// Base learning rate (default 1e-4).
        learning_rate: f64 => "?: number",
        /// "linear" (default), "cosine" or "constant".
        lr_schedule: String => "?: 'linear' | 'cosine' | 'constant'",
        /// Epochs over the data (default 1).
        num_epochs: u64 => "?: number",
        /// LoRA rank (default 32).
        lora_rank: u32 => "?: number",
        /// Save every this many steps (default 20; 0: never).
        save_every: u64 => "?: number",
        /// Save every this many trained tokens (default 0: never).
        save_every_tokens: u64 => "?: number",
        /// Save every this many seconds (default 0: never).
        save_every_seconds: f64 => "?: number",
        /// Evaluate every this many steps (default 10): the held-out NLL when the dataset has a test split.
        eval_every: u64 => "?: number",
        /// Run the infrequent evaluators every this many steps (default 100).
        infrequent_eval_every: u64 => "?: number",
        /// Time to live of periodic saves in seconds (default 604800; null: kept).
        ttl_seconds: JsValue => "?: number | null",
        /// A state-only save every this many steps, replacing the previous one (default 0).
        rolling_save_every: u64 => "?: number",
        /// Time to live of rolling saves (default 7200).
        rolling_ttl_seconds: u64 => "?: number",
        /// Periodic saves in the background, training going on meanwhile (default false).
        async_periodic_saves: bool => "?: boolean",
        /// Adam's beta1 (default 0.9).
        adam_beta1: f64 => "?: number",
        /// Adam's beta2 (default 0.95).
        adam_beta2: f64 => "?: number",
        /// Adam's epsilon (default 1e-8).
        adam_eps: f64 => "?: number",
        /// Stop after this many steps in all.
        max_steps: u64 => "?: number",
        /// Steps submitted before the oldest one's results are awaited (default 1).
        submit_ahead: u64 => "?: number",
        /// Evaluators run every `eval_every` steps, before the step is sent: functions that build a `TrainingClientEvaluator` or `SamplingClientEvaluator` (the held-out NLL runs after them).
        evaluator_builders: JsValue => "?: Array<() => {\n    /** Called with the training client (a `SamplingClientEvaluator`: a sampling client of the current weights); resolves to metrics. */\n    evaluate(client: never): Promise<Record<string, number>>\n  }>",
        /// Evaluators run every `infrequent_eval_every` steps.
        infrequent_evaluator_builders: JsValue => "?: Array<() => {\n    /** Called with the training client (a `SamplingClientEvaluator`: a sampling client of the current weights); resolves to metrics. */\n    evaluate(client: never): Promise<Record<string, number>>\n  }>",
    }

    /// `supervised.FromConversationFileBuilder`: a JSONL file, one `{"messages": [...]}` per line.
    FromConversationFileBuilderParams("FromConversationFileBuilder") {
        /// The file (a path in Node; elsewhere give `text` or `conversations`).
        file_path: String => "?: string",
        /// The file's contents (text or UTF-8 bytes), in place of file_path.
        text: JsValue => "?: string | Uint8Array",
        /// The conversations themselves, in place of a file: an array or (async) iterable of `{ messages }`.
        conversations: JsValue => "?: Iterable<{\n    /** The conversation. */\n    messages: ChatMessage[]\n  }> | AsyncIterable<{\n    /** The conversation. */\n    messages: ChatMessage[]\n  }>",
        /// Rows held out for evaluation (default 0).
        test_size: u64 => "?: number",
        /// The seed of the shuffle before the split (default 0).
        shuffle_seed: u64 => "?: number",
        /// The renderer and batching.
        common_config: ChatDatasetBuilderCommonConfig => ": ChatDatasetBuilderCommonConfig",
    }

    /// `ChatDatasetBuilderCommonConfig`.
    ChatDatasetBuilderCommonConfig("common_config") {
        /// The renderer, e.g. "qwen3".
        renderer_name: String => ": string",
        /// Conversations per step.
        batch_size: u64 => ": number",
        /// Longest datum in tokens (longer ones are cut).
        max_length: u64 => "?: number | null",
        /// Which tokens are trained on (default "all_assistant_messages").
        train_on_what: String => "?: string",
        /// The model whose tokenizer renders (default: the config's model_name).
        model_name_for_tokenizer: String => "?: string",
    }

    /// `preference.trainDpo`'s config: tinker-cookbook's `preference.train_dpo.Config`,
    /// its names and defaults.
    DpoConfig("preference.trainDpo config") {
        /// The base model to fine-tune, e.g. "Qwen/Qwen3-8B".
        model_name: String => ": string",
        /// Where the run keeps checkpoints.jsonl and metrics.jsonl (a folder in Node).
        log_path: String => "?: string",
        /// A name for the run (kept for the cookbook's configs; not sent).
        recipe_name: String => "?: string",
        /// The pairs: `new preference.DPODatasetBuilderFromComparisons({...})`.
        dataset_builder: JsValue => ": DPODatasetBuilderFromComparisonsParams",
        /// Weights to start from (`tinker://…/weights/…`); a resume from log_path wins.
        load_checkpoint_path: String => "?: string",
        /// The renderer (default: the dataset's `common_config.renderer_name`).
        renderer_name: String => "?: string",
        /// Base learning rate (default 1e-5).
        learning_rate: f64 => "?: number",
        /// "linear" (default), "cosine" or "constant".
        lr_schedule: String => "?: 'linear' | 'cosine' | 'constant'",
        /// Epochs over the data (default 1).
        num_epochs: u64 => "?: number",
        /// DPO's beta: how strongly the policy is held to the reference (default 0.1).
        dpo_beta: f64 => "?: number",
        /// LoRA rank (default 32).
        lora_rank: u32 => "?: number",
        /// Accepted as the cookbook accepts it (default 8; not sent).
        num_replicas: u64 => "?: number",
        /// Save every this many steps (default 20; 0: never).
        save_every: u64 => "?: number",
        /// Evaluate every this many steps and at the last (default 10).
        eval_every: u64 => "?: number",
        /// Run the infrequent evaluators every this many steps (default 100).
        infrequent_eval_every: u64 => "?: number",
        /// Time to live of periodic saves in seconds (default 604800; null: kept).
        ttl_seconds: JsValue => "?: number | null",
        /// A state-only save every this many steps, replacing the previous one (default 0).
        rolling_save_every: u64 => "?: number",
        /// Time to live of rolling saves (default 7200).
        rolling_ttl_seconds: u64 => "?: number",
        /// Adam's beta1 (default 0.9).
        adam_beta1: f64 => "?: number",
        /// Adam's beta2 (default 0.95).
        adam_beta2: f64 => "?: number",
        /// Adam's epsilon (default 1e-8).
        adam_eps: f64 => "?: number",
        /// Accepted as the cookbook accepts it; the reference is the starting weights, as there.
        reference_model_name: String => "?: string",
        /// Stop after this many steps in all.
        max_steps: u64 => "?: number",
        /// Evaluators run every `eval_every` steps (the held-out NLL of the test pairs runs after them).
        evaluator_builders: JsValue => "?: Array<() => {\n    /** Called with the training client (a `SamplingClientEvaluator`: a sampling client of the current weights); resolves to metrics. */\n    evaluate(client: never): Promise<Record<string, number>>\n  }>",
        /// Evaluators run every `infrequent_eval_every` steps.
        infrequent_evaluator_builders: JsValue => "?: Array<() => {\n    /** Called with the training client (a `SamplingClientEvaluator`: a sampling client of the current weights); resolves to metrics. */\n    evaluate(client: never): Promise<Record<string, number>>\n  }>",
    }

    /// `preference.DPODatasetBuilderFromComparisons`: each comparison a chosen and a rejected datum.
    DPODatasetBuilderFromComparisonsParams("DPODatasetBuilderFromComparisons") {
        /// The comparisons: `new preference.ComparisonBuilderFromJsonl({...})`.
        comparison_builder: JsValue => ": ComparisonBuilderFromJsonlParams",
        /// The renderer and batching (`batch_size` counts comparisons).
        common_config: ChatDatasetBuilderCommonConfig => ": ChatDatasetBuilderCommonConfig",
    }

    /// `preference.ComparisonBuilderFromJsonl`: one `{"comparison": {prompt_conversation, completion_A, completion_B}, "label": "A" | "B"}` per line.
    ComparisonBuilderFromJsonlParams("ComparisonBuilderFromJsonl") {
        /// The training file (a path in Node; elsewhere give `train_text` or `train_comparisons`).
        train_path: String => "?: string",
        /// The training file's contents (text or UTF-8 bytes).
        train_text: JsValue => "?: string | Uint8Array",
        /// The training rows themselves: an array or (async) iterable.
        train_comparisons: JsValue => "?: Iterable<LabeledComparison> | AsyncIterable<LabeledComparison>",
        /// A held-out file, scored by the NLL evaluator every `eval_every` steps.
        test_path: String => "?: string",
        /// The held-out file's contents.
        test_text: JsValue => "?: string | Uint8Array",
        /// The held-out rows themselves.
        test_comparisons: JsValue => "?: Iterable<LabeledComparison> | AsyncIterable<LabeledComparison>",
    }
}

#[wasm_bindgen(typescript_custom_section)]
const LABELED_COMPARISON_TS: &str = r#"
/** A row of a comparison file (`preference.types.LabeledComparison`). */
export interface LabeledComparison {
    /** The prompt and the two completions. */
    comparison: {
        /** The shared prompt. */
        prompt_conversation: ChatMessage[];
        /** The first completion. */
        completion_A: ChatMessage[];
        /** The second completion. */
        completion_B: ChatMessage[];
    };
    /** The preferred completion ("Tie" trains B over A, as the cookbook does). */
    label: 'A' | 'B' | 'Tie';
}
"#;

// The TypeScript above and the crate's reader (tinker_cookbook::config) name the same
// keys in the same order: checked when the module is built.
const _: () = assert!(same_keys(
    SupervisedConfig::KEYS,
    tinker_cookbook::config::CONFIG
));
const _: () = assert!(same_keys(
    FromConversationFileBuilderParams::KEYS,
    tinker_cookbook::config::BUILDER
));
const _: () = assert!(same_keys(
    ChatDatasetBuilderCommonConfig::KEYS,
    tinker_cookbook::config::COMMON
));

const _: () = assert!(same_keys(
    DpoConfig::KEYS,
    tinker_cookbook::config::DPO_CONFIG
));
const _: () = assert!(same_keys(
    DPODatasetBuilderFromComparisonsParams::KEYS,
    tinker_cookbook::config::DPO_BUILDER
));
const _: () = assert!(same_keys(
    ComparisonBuilderFromJsonlParams::KEYS,
    tinker_cookbook::config::COMPARISON
));

pub(super) const fn same_keys(a: &[&str], b: &[(&str, tinker_cookbook::config::Kind)]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if !crate::wasm::convert::same_str(a[i], b[i].0) {
            return false;
        }
        i += 1;
    }
    true
}

/// A supervised run (pkg/cookbook/cookbook.js's `supervised.train` drives it; the
/// protocol is `tinker_cookbook::sft`'s).
#[wasm_bindgen(js_name = __CookbookSft, skip_typescript)]
pub struct CookbookSft {
    sft: Sft,
    saves: Vec<SaveOrder>,
}

#[wasm_bindgen(js_class = __CookbookSft)]
impl CookbookSft {
    /// The run of `config` (a `SupervisedConfig`, or with `test` a `DpoConfig`, as JSON
    /// text: the crate reads it, with its defaults) over the data file's `text` (and the
    /// held-out comparisons' `test`), resuming from the text of its `checkpoints.jsonl`
    /// (empty for none). Bad input throws here.
    #[wasm_bindgen(constructor)]
    pub fn new(
        config: &str,
        text: &str,
        test: Option<String>,
        checkpoints: &str,
        now: f64,
    ) -> Result<CookbookSft, JsValue> {
        let json = super::python::read_json(config).map_err(|e| type_error("config", e))?;
        let sft =
            tinker_cookbook::config::run_from_texts(&json, text, test.as_deref(), checkpoints, now)
                .map_err(|e| input_error(&e))?;
        Ok(CookbookSft {
            sft,
            saves: Vec::new(),
        })
    }

    /// The DPO step's custom loss from the reference's logprobs of its prompts (the
    /// first position's unused) and the policy's (Float32Arrays): the loss, then each
    /// datum's gradients.
    #[wasm_bindgen(js_name = dpoLoss)]
    pub fn dpo_loss(&mut self, reference: Array, policy: Array) -> Vec<f32> {
        self.sft
            .dpo_loss(&float_lists(&reference), &float_lists(&policy))
    }

    /// How to create the training client: `{ base_model, rank }` or `{ path, with_optimizer }`,
    /// with `user_metadata`.
    pub fn start(&self) -> JsValue {
        start_to_js(self.sft.start(), Some(self.sft.user_metadata()))
    }

    /// `[backup name, kept text]` when a resumed run drops metrics rows, else undefined.
    #[wasm_bindgen(js_name = truncateMetrics)]
    pub fn truncate_metrics(&self, text: &str) -> JsValue {
        match self.sft.truncate_metrics(text) {
            Some((backup, kept)) => Array::of2(&backup.into(), &kept.into()).into(),
            None => JsValue::UNDEFINED,
        }
    }

    /// The model's tokenizer (from the training client).
    #[wasm_bindgen(js_name = setTokenizer)]
    pub fn set_tokenizer(&mut self, tokenizer: &JsTokenizer) -> Result<(), JsValue> {
        self.sft
            .set_tokenizer(tokenizer.shared())
            .map_err(|e| input_error(&e))
    }

    /// Stops the run before its next step.
    pub fn stop(&mut self) {
        self.sft.stop();
    }

    /// The step a stopped run stopped before, or undefined.
    #[wasm_bindgen(getter, js_name = stoppedAt)]
    pub fn stopped_at(&self) -> Option<f64> {
        self.sft.stopped_at().map(|s| s as f64)
    }

    /// Whether the oldest step in flight is to be finished before the next is sent.
    #[wasm_bindgen(getter, js_name = mustFinish)]
    pub fn must_finish(&self) -> bool {
        self.sft.must_finish()
    }

    /// The next step, `{ step, data, adam, eval, infrequent }`, or undefined when none is left.
    #[wasm_bindgen(js_name = nextStep)]
    pub fn next_step(&mut self) -> Result<JsValue, JsValue> {
        let Some(o) = self.sft.next_step().map_err(|e| input_error(&e))? else {
            return Ok(JsValue::UNDEFINED);
        };
        let r: JsValue = Object::new().into();
        set(&r, "step", &(o.step as f64).into());
        set(
            &r,
            "data",
            &o.data.iter().map(datum_to_js).collect::<Array>(),
        );
        let adam: JsValue = Object::new().into();
        for (k, v) in [
            ("learning_rate", o.adam.learning_rate),
            ("beta1", o.adam.beta1),
            ("beta2", o.adam.beta2),
            ("eps", o.adam.eps),
            ("weight_decay", o.adam.weight_decay),
            ("grad_clip_norm", o.adam.grad_clip_norm),
        ] {
            set(&adam, k, &v.into());
        }
        set(&r, "adam", &adam);
        set(&r, "eval", &o.eval.into());
        set(&r, "infrequent", &o.infrequent.into());
        let save = self.pending(o.save);
        set(&r, "save", &save);
        Ok(r)
    }

    /// Whether the data has a held-out split.
    #[wasm_bindgen(getter, js_name = hasTestData)]
    pub fn has_test_data(&self) -> bool {
        self.sft.has_test_data()
    }

    /// An evaluator's metrics (JSON text of an object) for `step`.
    #[wasm_bindgen(js_name = recordMetrics)]
    pub fn record_metrics(&mut self, step: f64, metrics: JsValue) -> Result<(), JsValue> {
        let m = metrics_of(&metrics, "evaluator metrics")?;
        self.sft.record_metrics(step as u64, m);
        Ok(())
    }

    /// The held-out prompts to score (ModelInputs); with `reference`, the DPO step's.
    #[wasm_bindgen(js_name = testPrompts)]
    pub fn test_prompts(&self, reference: bool) -> Array {
        self.sft
            .test_prompts(reference)
            .iter()
            .map(model_input_to_js)
            .collect()
    }

    /// The sampler's logprobs of the test prompts (a Float32Array each, the first
    /// position's unused) for `step`.
    #[wasm_bindgen(js_name = recordEval)]
    pub fn record_eval(&mut self, step: f64, logprobs: Array) {
        self.sft.record_eval(step as u64, &float_lists(&logprobs));
    }

    /// The save due before the oldest step's results are read: `{ name, ttl_seconds, both,
    /// rolling }` or undefined.
    #[wasm_bindgen(js_name = finishBegin)]
    pub fn finish_begin(&mut self, now: f64) -> JsValue {
        let order = self.sft.finish_begin(now);
        self.pending(order)
    }

    /// The oldest step's results: its forward_backward logprobs (a Float32Array per
    /// datum) and optim_step's metrics (for DPO: none, and forwardBackwardCustom's
    /// metrics). Returns `[metrics.jsonl line, metrics]`.
    #[wasm_bindgen(js_name = finishEnd)]
    pub fn finish_end(&mut self, logprobs: Array, metrics: JsValue) -> Result<Array, JsValue> {
        let metrics = metrics_of(&metrics, "step metrics")?;
        let (line, m) = self
            .sft
            .finish_end(&float_lists(&logprobs), metrics)
            .ok_or_else(|| type_error("finishEnd", "no step in flight"))?;
        let obj = js_sys::JSON::parse(&serde_json::Value::Object(m).to_string())?;
        Ok(Array::of2(&line.into(), &obj))
    }

    /// The last save (`final`, or where a stopped run stopped), or undefined.
    #[wasm_bindgen(js_name = endSave)]
    pub fn end_save(&mut self) -> JsValue {
        let order = self.sft.end_save();
        self.pending(order)
    }

    /// The save named `name` is done: `[its checkpoints.jsonl line, the rolling checkpoint
    /// to delete or undefined]`.
    pub fn saved(
        &mut self,
        name: &str,
        state_path: Option<String>,
        sampler_path: Option<String>,
        now: f64,
    ) -> Result<Array, JsValue> {
        let i = self
            .saves
            .iter()
            .position(|o| o.name == name)
            .ok_or_else(|| type_error("saved", format!("no save {name} pending")))?;
        let order = self.saves.remove(i);
        let (line, delete) =
            self.sft
                .saved(&order, state_path.as_deref(), sampler_path.as_deref(), now);
        Ok(Array::of2(
            &line.into(),
            &delete.map_or(JsValue::UNDEFINED, JsValue::from),
        ))
    }

    /// The rolling checkpoint left to delete once the run is over, or undefined.
    pub fn finalize(&mut self) -> Option<String> {
        self.sft.finalize()
    }

    fn pending(&mut self, order: Option<SaveOrder>) -> JsValue {
        let Some(o) = order else {
            return JsValue::UNDEFINED;
        };
        let r: JsValue = Object::new().into();
        set(&r, "name", &o.name.as_str().into());
        let ttl = o
            .ttl_seconds
            .map_or(JsValue::UNDEFINED, |t| (t as f64).into());
        set(&r, "ttl_seconds", &ttl);
        set(&r, "both", &o.both.into());
        set(&r, "rolling", &o.rolling.into());
        set(&r, "background", &o.background.into());
        self.saves.push(o);
        r
    }
}

/// How a run creates its training client, as JS: `{ base_model, rank }` or `{ path,
/// with_optimizer }`, with `user_metadata` (shared by the supervised and RL runs).
pub(super) fn start_to_js(start: Start, meta: Option<(&str, &str)>) -> JsValue {
    let o: JsValue = Object::new().into();
    match start {
        Start::Lora { base_model, rank } => {
            set(&o, "base_model", &base_model.into());
            set(&o, "rank", &rank.into());
        }
        Start::FromState {
            path,
            with_optimizer,
        } => {
            set(&o, "path", &path.into());
            set(&o, "with_optimizer", &with_optimizer.into());
        }
    }
    let m: JsValue = Object::new().into();
    if let Some((k, v)) = meta {
        set(&m, k, &v.into());
    }
    set(&o, "user_metadata", &m);
    o
}

/// Float32Arrays as lists.
pub(super) fn float_lists(lists: &Array) -> Vec<Vec<f32>> {
    lists
        .iter()
        .map(|l| Float32Array::from(l).to_vec())
        .collect()
}

/// A metrics object's entries, numbers as the exact doubles JS holds (not through JSON
/// text, whose parsing could round the last digit), strings and booleans as they are.
pub(super) fn metrics_of(
    v: &JsValue,
    what: &str,
) -> Result<serde_json::Map<String, serde_json::Value>, JsValue> {
    use serde_json::Value as J;
    if v.is_undefined() || v.is_null() {
        return Ok(serde_json::Map::new());
    }
    if !v.is_object() {
        return Err(type_error(what, "must be an object of numbers"));
    }
    let mut m = serde_json::Map::new();
    for e in js_sys::Object::entries(v.unchecked_ref()).iter() {
        let (k, x) = (get(&e, "0").as_string().unwrap_or_default(), get(&e, "1"));
        let value = if let Some(f) = x.as_f64() {
            serde_json::Number::from_f64(f).map_or(J::Null, J::Number)
        } else if let Some(b) = x.as_bool() {
            J::Bool(b)
        } else if let Some(t) = x.as_string() {
            J::String(t)
        } else {
            return Err(type_error(
                &format!("{what}.{k}"),
                "must be a number, a string or a boolean",
            ));
        };
        m.insert(k, value);
    }
    Ok(m)
}

/// `hyperparams.getLr(model_name, is_lora)`.
#[wasm_bindgen(js_name = __cookbookGetLr, skip_typescript)]
pub fn get_lr(model_name: &str, is_lora: bool) -> Result<f64, JsValue> {
    tinker_cookbook::get_lr(model_name, is_lora)
        .map_err(|e| js_sys::Error::new(&e.to_string()).into())
}

/// `TinkerTokenCompleter`'s `max_tokens` for `model_input` (undefined: check `own` alone).
#[wasm_bindgen(js_name = __cookbookCompleterMaxTokens, skip_typescript)]
pub fn completer_max_tokens(
    own: f64,
    per_call: Option<f64>,
    context_window: Option<f64>,
    model_input: JsValue,
) -> Result<f64, JsValue> {
    let whole = |x: f64, field: &str| {
        if x >= 0.0 && x.fract() == 0.0 && x <= 9.007_199_254_740_991e15 {
            Ok(x as u64)
        } else {
            Err(crate::wasm::errors::range_error(
                field,
                format!("must be a whole number from 0, got {x}"),
            ))
        }
    };
    let own = whole(own, "max_tokens")?;
    let per_call = per_call
        .map(|x| whole(x, "options.max_tokens"))
        .transpose()?;
    let window = context_window
        .map(|x| whole(x, "context_window"))
        .transpose()?;
    let length = if model_input.is_undefined() {
        0
    } else {
        let m = crate::wasm::convert::model_input(&model_input, "model_input")
            .map_err(|e| input_error(&e))?;
        m.length().map_err(|e| input_error(&e))? as u64
    };
    let n = tinker_cookbook::completers::max_tokens(own, per_call, window, length);
    n.map(|n| n as f64).map_err(|e| input_error(&e))
}

/// `checkpoints.getLastCheckpoint`'s record (as JSON text, or undefined) from the text of
/// a `checkpoints.jsonl`.
#[wasm_bindgen(js_name = __cookbookLastCheckpoint, skip_typescript)]
pub fn last_checkpoint(text: &str, required_key: &str) -> Result<Option<String>, JsValue> {
    let records = tinker_cookbook::checkpoints::parse_records(text).map_err(|e| input_error(&e))?;
    Ok(
        tinker_cookbook::checkpoints::last_checkpoint(&records, required_key)
            .map(|r| serde_json::Value::Object(r).to_string()),
    )
}
