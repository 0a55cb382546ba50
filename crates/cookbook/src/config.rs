//! The methods' configs as a caller gives them (JSON: the JS object through
//! `JSON.stringify`), read into [`SftConfig`] with the cookbook's names and defaults: an
//! unknown key, a value of the wrong type or out of range is an error naming the field
//! (`dataset_builder.common_config.batch_size`), before anything is sent.
//!
//! Each object's fields are a table of names and kinds, checked in one pass; the values
//! are then read from the checked object.

use serde_json::{Map, Value as Json};
use tinker_renderers::TrainOnWhat;
use tinker_support::input::InputError;

use crate::data::parse_conversations;
use crate::dpo::parse_comparisons;
use crate::rl_loop::{AsyncConfig, Method, RlConfig, Scorer};
use crate::schedule::LrSchedule;
use crate::sft::{Sft, SftConfig};
use Kind::*;

/// What a config field holds (null is the same as absent).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A string.
    Str,
    /// A finite number.
    Num,
    /// A whole number from 0.
    Uint,
    /// A boolean.
    Bool,
    /// An object (checked with its own table).
    Obj,
    /// The caller's (evaluators, the data's source): not read here.
    Any,
}

/// `supervised.train.Config`'s fields (`log_path`, `recipe_name` and the evaluators are
/// the caller's).
pub const CONFIG: &[(&str, Kind)] = &[
    ("model_name", Str),
    ("log_path", Str),
    ("recipe_name", Str),
    ("dataset_builder", Obj),
    ("load_checkpoint_path", Str),
    ("renderer_name", Str),
    ("learning_rate", Num),
    ("lr_schedule", Str),
    ("num_epochs", Uint),
    ("lora_rank", Uint),
    ("save_every", Uint),
    ("save_every_tokens", Uint),
    ("save_every_seconds", Num),
    ("eval_every", Uint),
    ("infrequent_eval_every", Uint),
    ("ttl_seconds", Uint),
    ("rolling_save_every", Uint),
    ("rolling_ttl_seconds", Uint),
    ("async_periodic_saves", Bool),
    ("adam_beta1", Num),
    ("adam_beta2", Num),
    ("adam_eps", Num),
    ("max_steps", Uint),
    ("submit_ahead", Uint),
    ("evaluator_builders", Any),
    ("infrequent_evaluator_builders", Any),
];

/// `FromConversationFileBuilder`'s fields (the file's source is the caller's).
pub const BUILDER: &[(&str, Kind)] = &[
    ("file_path", Str),
    ("text", Any),
    ("conversations", Any),
    ("test_size", Uint),
    ("shuffle_seed", Uint),
    ("common_config", Obj),
];

/// `ChatDatasetBuilderCommonConfig`'s fields.
pub const COMMON: &[(&str, Kind)] = &[
    ("renderer_name", Str),
    ("batch_size", Uint),
    ("max_length", Uint),
    ("train_on_what", Str),
    ("model_name_for_tokenizer", Str),
];

/// `preference.train_dpo.Config`'s fields.
pub const DPO_CONFIG: &[(&str, Kind)] = &[
    ("model_name", Str),
    ("log_path", Str),
    ("recipe_name", Str),
    ("dataset_builder", Obj),
    ("load_checkpoint_path", Str),
    ("renderer_name", Str),
    ("learning_rate", Num),
    ("lr_schedule", Str),
    ("num_epochs", Uint),
    ("dpo_beta", Num),
    ("lora_rank", Uint),
    ("num_replicas", Uint),
    ("save_every", Uint),
    ("eval_every", Uint),
    ("infrequent_eval_every", Uint),
    ("ttl_seconds", Uint),
    ("rolling_save_every", Uint),
    ("rolling_ttl_seconds", Uint),
    ("adam_beta1", Num),
    ("adam_beta2", Num),
    ("adam_eps", Num),
    ("reference_model_name", Str),
    ("max_steps", Uint),
    ("evaluator_builders", Any),
    ("infrequent_evaluator_builders", Any),
];

/// `DPODatasetBuilderFromComparisons`'s fields.
pub const DPO_BUILDER: &[(&str, Kind)] = &[("comparison_builder", Obj), ("common_config", Obj)];

/// `ComparisonBuilderFromJsonl`'s fields: each file as a path, its text, or its rows
/// (the sources are the caller's).
pub const COMPARISON: &[(&str, Kind)] = &[
    ("train_path", Str),
    ("train_text", Any),
    ("train_comparisons", Any),
    ("test_path", Str),
    ("test_text", Any),
    ("test_comparisons", Any),
];

/// `rl.train.Config`'s fields (the synchronous loop's; the dataset builder and evaluators
/// are the caller's).
pub const RL_CONFIG: &[(&str, Kind)] = &[
    ("learning_rate", Num),
    ("dataset_builder", Any),
    ("model_name", Str),
    ("recipe_name", Str),
    ("max_tokens", Uint),
    ("log_path", Str),
    ("eval_every", Uint),
    ("save_every", Uint),
    ("evaluator_builders", Any),
    ("load_checkpoint_path", Str),
    ("renderer_name", Str),
    ("kl_penalty_coef", Num),
    ("kl_discount_factor", Num),
    ("kl_reference_config", Obj),
    ("loss_fn", Str),
    ("loss_fn_config", Obj),
    ("num_substeps", Uint),
    ("lora_rank", Uint),
    ("temperature", Num),
    ("remove_constant_reward_groups", Bool),
    ("ttl_seconds", Uint),
    ("num_epochs", Uint),
    ("max_steps", Uint),
    ("async_config", Obj),
    ("rollout_error_tolerance", Bool),
    ("rolling_save_every", Uint),
    ("rolling_ttl_seconds", Uint),
    ("compute_post_kl", Bool),
];

/// `rl.train.AsyncConfig`'s fields.
pub const ASYNC_CONFIG: &[(&str, Kind)] = &[
    ("max_steps_off_policy", Uint),
    ("groups_per_batch", Uint),
    ("loss_fn", Str),
];

/// `KLReferenceConfig` and `TeacherConfig`: a base model and, optionally, a checkpoint.
pub const SCORER: &[(&str, Kind)] = &[("base_model", Str), ("load_checkpoint_path", Str)];

/// `distillation.train_on_policy.Config`'s fields (the datasets' builders are the caller's).
pub const DISTILLATION_CONFIG: &[(&str, Kind)] = &[
    ("learning_rate", Num),
    ("dataset_configs", Any),
    ("model_name", Str),
    ("recipe_name", Str),
    ("renderer_name", Str),
    ("max_tokens", Uint),
    ("temperature", Num),
    ("compute_post_kl", Bool),
    ("evaluator_builders", Any),
    ("lora_rank", Uint),
    ("kl_penalty_coef", Num),
    ("kl_discount_factor", Num),
    ("loss_fn", Str),
    ("loss_fn_config", Obj),
    ("num_substeps", Uint),
    ("log_path", Str),
    ("eval_every", Uint),
    ("save_every", Uint),
    ("load_checkpoint_path", Str),
    ("max_steps", Uint),
];

/// `DistillationDatasetConfig`'s fields.
pub const DISTILLATION_DATASET: &[(&str, Kind)] = &[
    ("dataset_builder", Any),
    ("teacher_config", Obj),
    ("groups_per_batch", Uint),
];

/// The fields both loops share, read into `r` (`model_name`, `learning_rate` and
/// `max_tokens` required).
fn loop_fields(c: Fields, r: &mut RlConfig) -> Result<(), InputError> {
    r.renderer_name = c.str("renderer_name").map(String::from);
    r.load_checkpoint_path = c.str("load_checkpoint_path").map(String::from);
    if let Some(rank) = c.uint("lora_rank") {
        r.lora_rank = u32::try_from(rank)
            .map_err(|_| InputError::range_error("lora_rank", format!("is too large: {rank}")))?;
    }
    if let Some(l) = c.str("loss_fn") {
        r.loss_fn = l.into();
    }
    r.loss_fn_config = c.get("loss_fn_config").and_then(Json::as_object).cloned();
    r.num_substeps = c.uint("num_substeps").unwrap_or(1);
    if r.num_substeps == 0 {
        return Err(InputError::range_error(
            "num_substeps",
            "must be at least 1, got 0",
        ));
    }
    r.save_every = c.uint("save_every").unwrap_or(r.save_every);
    r.eval_every = c.uint("eval_every").unwrap_or(r.eval_every);
    r.max_steps = c.uint("max_steps");
    r.compute_post_kl = c.get("compute_post_kl") == Some(&Json::Bool(true));
    r.kl_penalty_coef = c.num("kl_penalty_coef").unwrap_or(r.kl_penalty_coef);
    r.kl_discount_factor = c.num("kl_discount_factor").unwrap_or(0.0);
    if !(0.0..=1.0).contains(&r.kl_discount_factor) {
        return Err(InputError::range_error(
            "kl_discount_factor",
            format!("must be from 0 to 1, got {}", r.kl_discount_factor),
        ));
    }
    Ok(())
}

fn required_loop_fields(c: Fields) -> Result<RlConfig, InputError> {
    let required = |k: &str| InputError::type_error(k, "is required");
    let model = c.str("model_name").ok_or_else(|| required("model_name"))?;
    let lr = c
        .num("learning_rate")
        .ok_or_else(|| required("learning_rate"))?;
    c.uint("max_tokens").ok_or_else(|| required("max_tokens"))?;
    Ok(RlConfig::new(model, lr))
}

fn scorer(v: &Json, at: &str) -> Result<Scorer, InputError> {
    let c = check(v, at, SCORER)?;
    let base_model = c
        .str("base_model")
        .ok_or_else(|| InputError::type_error(join(at, "base_model"), "is required"))?;
    Ok(Scorer {
        base_model: base_model.into(),
        load_checkpoint_path: c.str("load_checkpoint_path").map(String::from),
    })
}

/// The config of an `rl.train` run from its JSON (`rl.train.Config`'s defaults).
pub fn rl_config(v: &Json) -> Result<RlConfig, InputError> {
    let c = check(v, "", RL_CONFIG)?;
    let mut r = required_loop_fields(c)?;
    loop_fields(c, &mut r)?;
    if c.0.contains_key("ttl_seconds") {
        r.ttl_seconds = c.uint("ttl_seconds");
    }
    r.num_epochs = c.uint("num_epochs").unwrap_or(1);
    let reference = c.get("kl_reference_config").filter(|v| !v.is_null());
    let reference = reference
        .map(|v| scorer(v, "kl_reference_config"))
        .transpose()?;
    if r.kl_penalty_coef > 0.0 && reference.is_none() {
        return Err(InputError::type_error(
            "kl_reference_config",
            "must be given when kl_penalty_coef > 0 (the reference policy's base_model)",
        ));
    }
    r.method = Method::Rl { reference };
    if let Some(a) = c.get("async_config").filter(|v| !v.is_null()) {
        async_config(a, c.str("loss_fn"), &mut r)?;
    }
    if r.records_stability_info() && r.kl_penalty_coef > 0.0 && r.kl_discount_factor > 0.0 {
        return Err(InputError::range_error(
            "kl_discount_factor",
            "> 0 is not supported with loss_fn 'stable_reinforce' (the async_config default): it spreads the penalty onto prompt tokens; set it to 0 or choose another loss_fn",
        ));
    }
    r.remove_constant_reward_groups =
        c.get("remove_constant_reward_groups") == Some(&Json::Bool(true));
    r.counts_rollout_errors = c.get("rollout_error_tolerance") == Some(&Json::Bool(true));
    r.rolling_save_every = c.uint("rolling_save_every").unwrap_or(0);
    r.rolling_ttl_seconds = c
        .uint("rolling_ttl_seconds")
        .unwrap_or(r.rolling_ttl_seconds);
    Ok(r)
}

/// `async_config` into `r`: the run trains with its `loss_fn` (`stable_reinforce` by
/// default), which the config's own `loss_fn` may not contradict.
fn async_config(v: &Json, loss_fn: Option<&str>, r: &mut RlConfig) -> Result<(), InputError> {
    let c = check(v, "async_config", ASYNC_CONFIG)?;
    let need = |k: &str| {
        c.uint(k)
            .ok_or_else(|| InputError::type_error(join("async_config", k), "is required"))
    };
    let (max_steps_off_policy, groups_per_batch) =
        (need("max_steps_off_policy")?, need("groups_per_batch")?);
    if groups_per_batch == 0 {
        return Err(InputError::range_error(
            "async_config.groups_per_batch",
            "must be at least 1, got 0",
        ));
    }
    let loss = c.str("loss_fn").unwrap_or("stable_reinforce");
    if let Some(l) = loss_fn.filter(|l| *l != "importance_sampling" && *l != loss) {
        return Err(InputError::range_error(
            "loss_fn",
            format!("{l:?} conflicts with async_config.loss_fn {loss:?}; async runs train with async_config.loss_fn, so set the loss there"),
        ));
    }
    r.loss_fn = loss.into();
    r.async_config = Some(AsyncConfig {
        max_steps_off_policy,
        groups_per_batch,
    });
    Ok(())
}

/// The config of a `distillation.trainOnPolicy` run from its JSON (`train_on_policy.Config`'s
/// defaults: `kl_penalty_coef` 1); its datasets' teachers in order.
pub fn distillation_config(v: &Json) -> Result<RlConfig, InputError> {
    let c = check(v, "", DISTILLATION_CONFIG)?;
    let mut r = required_loop_fields(c)?;
    r.kl_penalty_coef = 1.0;
    loop_fields(c, &mut r)?;
    let list = c
        .get("dataset_configs")
        .and_then(Json::as_array)
        .filter(|l| !l.is_empty())
        .ok_or_else(|| {
            InputError::type_error(
                "dataset_configs",
                "must be a list of one or more dataset configs",
            )
        })?;
    let mut teachers = Vec::new();
    for (i, d) in list.iter().enumerate() {
        let at = format!("dataset_configs[{i}]");
        let dc = check(d, &at, DISTILLATION_DATASET)?;
        dc.uint("groups_per_batch")
            .ok_or_else(|| InputError::type_error(join(&at, "groups_per_batch"), "is required"))?;
        let t = dc
            .get("teacher_config")
            .ok_or_else(|| InputError::type_error(join(&at, "teacher_config"), "is required"))?;
        teachers.push(scorer(t, &join(&at, "teacher_config"))?);
    }
    r.method = Method::Distillation { teachers };
    Ok(r)
}

fn join(at: &str, k: &str) -> String {
    if at.is_empty() {
        k.into()
    } else {
        format!("{at}.{k}")
    }
}

/// `v` as the object `at`, every field known and of its kind.
fn check<'a>(v: &'a Json, at: &str, spec: &[(&str, Kind)]) -> Result<Fields<'a>, InputError> {
    let map = v
        .as_object()
        .ok_or_else(|| InputError::type_error(at, "must be an object"))?;
    for (k, x) in map {
        let field = join(at, k);
        let Some(&(_, kind)) = spec.iter().find(|(n, _)| n == k) else {
            let known: Vec<&str> = spec.iter().map(|(n, _)| *n).collect();
            let known = known.join(", ");
            return Err(InputError::type_error(
                field,
                format!("is not an option (the options are {known})"),
            ));
        };
        let want = match (kind, x) {
            (_, Json::Null) | (Any, _) | (Str, Json::String(_)) | (Bool, Json::Bool(_)) => continue,
            (Obj, Json::Object(_)) | (Num, Json::Number(_)) => continue,
            (Uint, Json::Number(n)) => match n.as_f64() {
                Some(x) if x.fract() == 0.0 && (0.0..=9.007_199_254_740_991e15).contains(&x) => {
                    continue
                }
                _ => {
                    return Err(InputError::range_error(
                        field,
                        format!("must be a whole number from 0, got {n}"),
                    ))
                }
            },
            (Str, _) => "a string",
            (Bool, _) => "a boolean",
            (Obj, _) => "an object",
            (Num | Uint, _) => "a finite number",
        };
        return Err(InputError::type_error(
            field,
            format!("must be {want}, got {x}"),
        ));
    }
    Ok(Fields(map))
}

/// A checked object's fields (null and absent are `None`).
#[derive(Clone, Copy)]
struct Fields<'a>(&'a Map<String, Json>);

impl<'a> Fields<'a> {
    fn get(self, k: &str) -> Option<&'a Json> {
        self.0.get(k).filter(|v| !v.is_null())
    }

    fn num(self, k: &str) -> Option<f64> {
        self.get(k)?.as_f64()
    }

    fn uint(self, k: &str) -> Option<u64> {
        self.num(k).map(|x| x as u64)
    }

    fn str(self, k: &str) -> Option<&'a str> {
        self.get(k)?.as_str()
    }

    /// The object `k`, checked against `spec` (`at` is this object's path).
    fn obj(self, k: &str, at: &str, spec: &[(&str, Kind)]) -> Result<Fields<'a>, InputError> {
        let v = self
            .get(k)
            .ok_or_else(|| InputError::type_error(join(at, k), "is required"))?;
        check(v, &join(at, k), spec)
    }
}

/// The config of a `supervised.train` run from its JSON: the cookbook's defaults for
/// what is absent.
pub fn sft_config(v: &Json) -> Result<SftConfig, InputError> {
    read(v, false)
}

/// The config of a `preference.trainDpo` run from its JSON: `train_dpo.Config`'s
/// defaults (a learning rate of 1e-5, `dpo_beta` 0.1) for what is absent.
pub fn dpo_config(v: &Json) -> Result<SftConfig, InputError> {
    read(v, true)
}

/// A run from what a caller gives: the config as JSON, the data file's text, for DPO
/// (`test` given) the held-out comparison file's text, and the text of
/// `checkpoints.jsonl`. Errors name the field or line.
pub fn run_from_texts(
    config: &Json,
    text: &str,
    test: Option<&str>,
    checkpoints: &str,
    now: f64,
) -> Result<Sft, InputError> {
    let Some(test) = test else {
        let rows = parse_conversations(text).map_err(|e| e.within("dataset_builder"));
        return Sft::new(sft_config(config)?, rows?, checkpoints, now);
    };
    let cfg = dpo_config(config)?;
    let rows = |t: &str, at: &str| parse_comparisons(t).map_err(|e| e.within(at));
    let train = rows(text, "dataset_builder.comparison_builder.train")?;
    let test = rows(test, "dataset_builder.comparison_builder.test")?;
    Sft::new_dpo(cfg, train, test, checkpoints, now)
}

fn read(v: &Json, dpo: bool) -> Result<SftConfig, InputError> {
    let (top, builder) = match dpo {
        true => (DPO_CONFIG, DPO_BUILDER),
        false => (CONFIG, BUILDER),
    };
    let c = check(v, "", top)?;
    let b = c.obj("dataset_builder", "", builder)?;
    let at = "dataset_builder";
    if dpo {
        b.obj("comparison_builder", at, COMPARISON)?;
    }
    let common = b.obj("common_config", at, COMMON)?;
    let model = c.str("model_name").ok_or_else(|| {
        InputError::type_error("model_name", "is required (e.g. \"Qwen/Qwen3-8B\")")
    })?;
    let renderer = c.str("renderer_name").or(common.str("renderer_name"));
    let renderer = renderer.ok_or_else(|| {
        InputError::type_error("dataset_builder.common_config.renderer_name", "is required")
    })?;
    let batch = common.uint("batch_size").ok_or_else(|| {
        InputError::type_error("dataset_builder.common_config.batch_size", "is required")
    })?;
    let mut s = SftConfig::new(model, renderer, batch as usize);
    plan_fields(c, &mut s, if dpo { 1e-5 } else { 1e-4 })?;
    s.load_checkpoint_path = c.str("load_checkpoint_path").map(String::from);
    if let Some(r) = c.uint("lora_rank") {
        s.lora_rank = u32::try_from(r)
            .map_err(|_| InputError::range_error("lora_rank", format!("is too large: {r}")))?;
    }
    if c.0.contains_key("ttl_seconds") {
        s.ttl_seconds = c.uint("ttl_seconds");
    }
    let or = |k: &str, d: f64| c.num(k).unwrap_or(d);
    s.rolling_ttl_seconds = c
        .uint("rolling_ttl_seconds")
        .unwrap_or(s.rolling_ttl_seconds);
    s.async_periodic_saves = c.get("async_periodic_saves") == Some(&Json::Bool(true));
    (s.adam_beta1, s.adam_beta2) = (
        or("adam_beta1", s.adam_beta1),
        or("adam_beta2", s.adam_beta2),
    );
    s.adam_eps = or("adam_eps", s.adam_eps);
    s.submit_ahead = c.uint("submit_ahead").unwrap_or(s.submit_ahead);
    s.max_length = common.uint("max_length").map(|m| m as usize);
    s.test_size = b.uint("test_size").unwrap_or(0) as usize;
    s.shuffle_seed = b.uint("shuffle_seed").unwrap_or(0);
    let train_on = common.str("train_on_what");
    match (dpo, train_on) {
        (false, Some(t)) => {
            s.train_on_what = TrainOnWhat::parse(t, "dataset_builder.common_config.train_on_what")?
        }
        (true, Some(_)) => return Err(InputError::type_error(
            "dataset_builder.common_config.train_on_what",
            "is not used by DPO (it trains on the last assistant message, as the cookbook does)",
        )),
        (true, None) => s.train_on_what = TrainOnWhat::LastAssistantMessage,
        (false, None) => {}
    }
    s.dpo_beta = dpo.then(|| or("dpo_beta", 0.1));
    Ok(s)
}

/// The fields of the run's plan: rates, epochs, evaluation and save periods
/// (`learning_rate` defaults to `lr`: the methods' defaults differ).
fn plan_fields(c: Fields, s: &mut SftConfig, lr: f64) -> Result<(), InputError> {
    let p = &mut s.plan;
    p.learning_rate = c.num("learning_rate").unwrap_or(lr);
    if let Some(name) = c.str("lr_schedule") {
        p.lr_schedule = LrSchedule::parse(name)?;
    }
    let u = |k: &str, d: u64| c.uint(k).unwrap_or(d);
    p.num_epochs = u("num_epochs", p.num_epochs);
    p.max_steps = c.uint("max_steps");
    p.eval_every = u("eval_every", p.eval_every);
    p.infrequent_eval_every = u("infrequent_eval_every", p.infrequent_eval_every);
    p.save_every = u("save_every", p.save_every);
    p.save_every_tokens = u("save_every_tokens", p.save_every_tokens);
    p.save_every_seconds = c.num("save_every_seconds").unwrap_or(p.save_every_seconds);
    p.rolling_save_every = u("rolling_save_every", p.rolling_save_every);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn read(v: Json) -> Result<SftConfig, String> {
        sft_config(&v).map_err(|e| e.to_string())
    }

    fn base() -> Json {
        json!({"model_name": "Qwen/Qwen3-8B", "dataset_builder": {"common_config": {"renderer_name": "qwen3", "batch_size": 4}}})
    }

    #[test]
    fn absent_fields_take_the_cookbooks_defaults() {
        let c = read(base()).unwrap();
        let d = SftConfig::new("Qwen/Qwen3-8B", "qwen3", 4);
        assert_eq!(
            (c.plan, c.lora_rank, c.ttl_seconds, c.submit_ahead),
            (d.plan, 32, Some(604_800), 1)
        );
        assert_eq!((c.test_size, c.shuffle_seed, c.max_length), (0, 0, None));
    }

    #[test]
    fn given_fields_are_read_and_null_ttl_keeps_checkpoints() {
        let mut v = base();
        v["learning_rate"] = json!(2e-4);
        v["lr_schedule"] = json!("cosine");
        v["ttl_seconds"] = Json::Null;
        v["max_steps"] = json!(7);
        v["dataset_builder"]["test_size"] = json!(3);
        v["dataset_builder"]["common_config"]["train_on_what"] = json!("last_assistant_message");
        let c = read(v).unwrap();
        assert_eq!(
            (c.plan.learning_rate, c.plan.lr_schedule, c.plan.max_steps),
            (2e-4, LrSchedule::Cosine, Some(7))
        );
        assert_eq!((c.ttl_seconds, c.test_size), (None, 3));
        assert_eq!(c.train_on_what, TrainOnWhat::LastAssistantMessage);
    }

    #[test]
    fn bad_fields_are_named() {
        let cases: [(&str, Json, &str); 6] = [
            (
                "learning_rte",
                json!(1e-4),
                "learning_rte: is not an option",
            ),
            (
                "num_epochs",
                json!(1.5),
                "num_epochs: must be a whole number from 0, got 1.5",
            ),
            (
                "learning_rate",
                json!("fast"),
                "learning_rate: must be a finite number, got \"fast\"",
            ),
            ("lr_schedule", json!("step"), "\"step\""),
            (
                "model_name",
                json!(3),
                "model_name: must be a string, got 3",
            ),
            (
                "lora_rank",
                json!(-1),
                "lora_rank: must be a whole number from 0, got -1",
            ),
        ];
        for (k, v, want) in cases {
            let mut c = base();
            c[k] = v;
            let e = read(c).unwrap_err();
            assert!(e.contains(want), "{k}: {e}");
        }
        let mut c = base();
        c["dataset_builder"]["common_config"]["batch_sise"] = json!(2);
        let e = read(c).unwrap_err();
        assert!(
            e.contains("dataset_builder.common_config.batch_sise: is not an option"),
            "{e}"
        );
        let e = read(json!({"model_name": "m"})).unwrap_err();
        assert!(e.contains("dataset_builder: is required"), "{e}");
    }

    fn dpo(v: Json) -> Result<SftConfig, String> {
        dpo_config(&v).map_err(|e| e.to_string())
    }

    fn dpo_base() -> Json {
        json!({"model_name": "Qwen/Qwen3-8B", "dataset_builder": {
            "comparison_builder": {"train_path": "train.jsonl"},
            "common_config": {"renderer_name": "qwen3", "batch_size": 2}}})
    }

    #[test]
    fn dpo_takes_train_dpos_defaults_and_fields() {
        let c = dpo(dpo_base()).unwrap();
        assert_eq!((c.plan.learning_rate, c.dpo_beta), (1e-5, Some(0.1)));
        assert_eq!(c.train_on_what, TrainOnWhat::LastAssistantMessage);
        assert_eq!((c.plan.save_every, c.plan.eval_every), (20, 10));
        let mut v = dpo_base();
        v["dpo_beta"] = json!(0.5);
        v["learning_rate"] = json!(2e-5);
        v["num_replicas"] = json!(4);
        v["reference_model_name"] = json!("Qwen/Qwen3-8B");
        let c = dpo(v).unwrap();
        assert_eq!((c.plan.learning_rate, c.dpo_beta), (2e-5, Some(0.5)));
        // The supervised reader keeps its own defaults.
        assert_eq!(read(base()).unwrap().dpo_beta, None);
    }

    #[test]
    fn dpo_refuses_what_train_dpo_does_not_have() {
        let cases: [(&str, Json, &str); 3] = [
            ("submit_ahead", json!(1), "submit_ahead: is not an option"),
            (
                "save_every_tokens",
                json!(100),
                "save_every_tokens: is not an option",
            ),
            (
                "dpo_beta",
                json!("high"),
                "dpo_beta: must be a finite number",
            ),
        ];
        for (k, v, want) in cases {
            let mut c = dpo_base();
            c[k] = v;
            let e = dpo(c).unwrap_err();
            assert!(e.contains(want), "{k}: {e}");
        }
        let mut c = dpo_base();
        c["dataset_builder"]["common_config"]["train_on_what"] = json!("all_messages");
        assert!(dpo(c)
            .unwrap_err()
            .contains("train_on_what: is not used by DPO"));
        let mut c = dpo_base();
        c["dataset_builder"]["comparison_builder"]["path"] = json!("x");
        let e = dpo(c).unwrap_err();
        assert!(
            e.contains("dataset_builder.comparison_builder.path: is not an option"),
            "{e}"
        );
        let e =
            dpo(json!({"model_name": "m", "dataset_builder": {"common_config": {}}})).unwrap_err();
        assert!(
            e.contains("dataset_builder.comparison_builder: is required"),
            "{e}"
        );
    }
}
