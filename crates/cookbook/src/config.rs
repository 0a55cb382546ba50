//! `supervised.train`'s config as a caller gives it (JSON: the JS object through
//! `JSON.stringify`), read into [`SftConfig`] with the cookbook's names and defaults: an
//! unknown key, a value of the wrong type or out of range is an error naming the field
//! (`dataset_builder.common_config.batch_size`), before anything is sent.

use serde_json::{Map, Value as Json};
use tinker_renderers::TrainOnWhat;
use tinker_support::input::InputError;

use crate::schedule::LrSchedule;
use crate::sft::SftConfig;

/// `supervised.train.Config`'s keys (`log_path`, `recipe_name` and the evaluators are
/// the caller's).
pub const CONFIG_KEYS: &[&str] = &[
    "model_name",
    "log_path",
    "recipe_name",
    "dataset_builder",
    "load_checkpoint_path",
    "renderer_name",
    "learning_rate",
    "lr_schedule",
    "num_epochs",
    "lora_rank",
    "save_every",
    "save_every_tokens",
    "save_every_seconds",
    "eval_every",
    "infrequent_eval_every",
    "ttl_seconds",
    "rolling_save_every",
    "rolling_ttl_seconds",
    "async_periodic_saves",
    "adam_beta1",
    "adam_beta2",
    "adam_eps",
    "max_steps",
    "submit_ahead",
    "evaluator_builders",
    "infrequent_evaluator_builders",
];

/// `FromConversationFileBuilder`'s keys (the file's source is the caller's).
pub const BUILDER_KEYS: &[&str] = &[
    "file_path",
    "text",
    "conversations",
    "test_size",
    "shuffle_seed",
    "common_config",
];

/// `ChatDatasetBuilderCommonConfig`'s keys.
pub const COMMON_KEYS: &[&str] = &[
    "renderer_name",
    "batch_size",
    "max_length",
    "train_on_what",
    "model_name_for_tokenizer",
];

/// An object of a config, its fields read by type (null and absent are `None`).
struct Obj<'a> {
    map: &'a Map<String, Json>,
    at: String,
}

impl<'a> Obj<'a> {
    fn new(v: &'a Json, at: &str, keys: &[&str]) -> Result<Self, InputError> {
        let map = v
            .as_object()
            .ok_or_else(|| InputError::type_error(at, "must be an object"))?;
        if let Some(k) = map.keys().find(|k| !keys.contains(&k.as_str())) {
            let field = if at.is_empty() {
                k.clone()
            } else {
                format!("{at}.{k}")
            };
            let known = keys.join(", ");
            return Err(InputError::type_error(
                field,
                format!("is not an option (the options are {known})"),
            ));
        }
        Ok(Obj { map, at: at.into() })
    }

    fn field(&self, k: &str) -> String {
        if self.at.is_empty() {
            k.into()
        } else {
            format!("{}.{k}", self.at)
        }
    }

    fn get(&self, k: &str) -> Option<&'a Json> {
        self.map.get(k).filter(|v| !v.is_null())
    }

    fn string(&self, k: &str) -> Result<Option<String>, InputError> {
        match self.get(k) {
            None => Ok(None),
            Some(Json::String(s)) => Ok(Some(s.clone())),
            Some(v) => Err(InputError::type_error(
                self.field(k),
                format!("must be a string, got {v}"),
            )),
        }
    }

    fn boolean(&self, k: &str) -> Result<Option<bool>, InputError> {
        match self.get(k) {
            None => Ok(None),
            Some(Json::Bool(b)) => Ok(Some(*b)),
            Some(v) => Err(InputError::type_error(
                self.field(k),
                format!("must be a boolean, got {v}"),
            )),
        }
    }

    fn number(&self, k: &str) -> Result<Option<f64>, InputError> {
        match self.get(k) {
            None => Ok(None),
            Some(v) => v.as_f64().map(Some).ok_or_else(|| {
                InputError::type_error(self.field(k), format!("must be a finite number, got {v}"))
            }),
        }
    }

    fn uint(&self, k: &str) -> Result<Option<u64>, InputError> {
        match self.number(k)? {
            Some(x) if x.fract() != 0.0 || !(0.0..=9.007_199_254_740_991e15).contains(&x) => {
                Err(InputError::range_error(
                    self.field(k),
                    format!("must be a whole number from 0, got {x}"),
                ))
            }
            x => Ok(x.map(|x| x as u64)),
        }
    }

    fn object(&self, k: &str, keys: &[&str]) -> Result<Option<Obj<'a>>, InputError> {
        self.get(k)
            .map(|v| Obj::new(v, &self.field(k), keys))
            .transpose()
    }
}

/// The config of a `supervised.train` run from its JSON: the cookbook's defaults for
/// what is absent.
pub fn sft_config(v: &Json) -> Result<SftConfig, InputError> {
    let c = Obj::new(v, "", CONFIG_KEYS)?;
    let b = c
        .object("dataset_builder", BUILDER_KEYS)?
        .ok_or_else(|| InputError::type_error("dataset_builder", "is required"))?;
    let common = b
        .object("common_config", COMMON_KEYS)?
        .ok_or_else(|| InputError::type_error("dataset_builder.common_config", "is required"))?;
    let model = c.string("model_name")?.ok_or_else(|| {
        InputError::type_error("model_name", "is required (e.g. \"Qwen/Qwen3-8B\")")
    })?;
    let renderer = match c.string("renderer_name")? {
        Some(r) => r,
        None => common.string("renderer_name")?.ok_or_else(|| {
            InputError::type_error("dataset_builder.common_config.renderer_name", "is required")
        })?,
    };
    let batch = common.uint("batch_size")?.ok_or_else(|| {
        InputError::type_error("dataset_builder.common_config.batch_size", "is required")
    })?;
    let mut s = SftConfig::new(&model, &renderer, batch as usize);
    plan_fields(&c, &mut s)?;
    s.load_checkpoint_path = c.string("load_checkpoint_path")?;
    s.lora_rank = c.uint("lora_rank")?.map_or(Ok(s.lora_rank), |r| {
        u32::try_from(r)
            .map_err(|_| InputError::range_error("lora_rank", format!("is too large: {r}")))
    })?;
    if c.map.contains_key("ttl_seconds") {
        s.ttl_seconds = c.uint("ttl_seconds")?;
    }
    s.rolling_ttl_seconds = c
        .uint("rolling_ttl_seconds")?
        .unwrap_or(s.rolling_ttl_seconds);
    s.async_periodic_saves = c.boolean("async_periodic_saves")?.unwrap_or(false);
    s.adam_beta1 = c.number("adam_beta1")?.unwrap_or(s.adam_beta1);
    s.adam_beta2 = c.number("adam_beta2")?.unwrap_or(s.adam_beta2);
    s.adam_eps = c.number("adam_eps")?.unwrap_or(s.adam_eps);
    s.submit_ahead = c.uint("submit_ahead")?.unwrap_or(s.submit_ahead);
    s.max_length = common.uint("max_length")?.map(|m| m as usize);
    if let Some(t) = common.string("train_on_what")? {
        s.train_on_what = TrainOnWhat::parse(&t, &common.field("train_on_what"))?;
    }
    s.test_size = b.uint("test_size")?.unwrap_or(0) as usize;
    s.shuffle_seed = b.uint("shuffle_seed")?.unwrap_or(0);
    Ok(s)
}

/// The fields of the run's plan: rates, epochs, evaluation and save periods.
fn plan_fields(c: &Obj, s: &mut SftConfig) -> Result<(), InputError> {
    let p = &mut s.plan;
    p.learning_rate = c.number("learning_rate")?.unwrap_or(p.learning_rate);
    if let Some(name) = c.string("lr_schedule")? {
        p.lr_schedule = LrSchedule::parse(&name)?;
    }
    p.num_epochs = c.uint("num_epochs")?.unwrap_or(p.num_epochs);
    p.max_steps = c.uint("max_steps")?;
    p.eval_every = c.uint("eval_every")?.unwrap_or(p.eval_every);
    p.infrequent_eval_every = c
        .uint("infrequent_eval_every")?
        .unwrap_or(p.infrequent_eval_every);
    p.save_every = c.uint("save_every")?.unwrap_or(p.save_every);
    p.save_every_tokens = c.uint("save_every_tokens")?.unwrap_or(p.save_every_tokens);
    p.save_every_seconds = c
        .number("save_every_seconds")?
        .unwrap_or(p.save_every_seconds);
    p.rolling_save_every = c
        .uint("rolling_save_every")?
        .unwrap_or(p.rolling_save_every);
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
}
