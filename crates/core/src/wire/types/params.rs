use super::{fmt_num, InputError};
use crate::json;
use crate::json::{Map, ObjectWriter, Value};

fn check_finite(field: &str, v: f64) -> Result<(), InputError> {
    if v.is_finite() {
        Ok(())
    } else {
        Err(InputError::range_error(
            field,
            format!("must be a finite number, got {}", fmt_num(v)),
        ))
    }
}

fn check_range(field: &str, v: f64, ok: bool, what: &str) -> Result<(), InputError> {
    check_finite(field, v)?;
    if ok {
        Ok(())
    } else {
        Err(InputError::range_error(
            field,
            format!("must be {what}, got {}", fmt_num(v)),
        ))
    }
}

/// Adam optimizer parameters for `optim_step` (AdamW: decoupled weight decay).
/// Defaults are the Python SDK's.
#[derive(Debug, Clone, PartialEq)]
pub struct AdamParams {
    /// Learning rate (default 1e-4).
    pub learning_rate: f64,
    /// First-moment decay (default 0.9).
    pub beta1: f64,
    /// Second-moment decay (default 0.95).
    pub beta2: f64,
    /// Denominator epsilon (default 1e-12).
    pub eps: f64,
    /// Decoupled weight decay (default 0).
    pub weight_decay: f64,
    /// Maximum global gradient norm; 0 disables clipping (default 0).
    pub grad_clip_norm: f64,
}

impl Default for AdamParams {
    fn default() -> Self {
        AdamParams {
            learning_rate: 1e-4,
            beta1: 0.9,
            beta2: 0.95,
            eps: 1e-12,
            weight_decay: 0.0,
            grad_clip_norm: 0.0,
        }
    }
}

impl AdamParams {
    /// The wire JSON (every field, in the Python SDK's order).
    pub fn to_json(&self) -> Value {
        json!({
            "learning_rate": self.learning_rate,
            "beta1": self.beta1,
            "beta2": self.beta2,
            "eps": self.eps,
            "weight_decay": self.weight_decay,
            "grad_clip_norm": self.grad_clip_norm,
        })
    }

    /// Rejects non-finite or out-of-range values, naming the field.
    pub fn validate(&self) -> Result<(), InputError> {
        check_range(
            "learning_rate",
            self.learning_rate,
            self.learning_rate >= 0.0,
            ">= 0",
        )?;
        check_range(
            "beta1",
            self.beta1,
            (0.0..1.0).contains(&self.beta1),
            "in [0, 1)",
        )?;
        check_range(
            "beta2",
            self.beta2,
            (0.0..1.0).contains(&self.beta2),
            "in [0, 1)",
        )?;
        check_range("eps", self.eps, self.eps >= 0.0, ">= 0")?;
        check_range(
            "weight_decay",
            self.weight_decay,
            self.weight_decay >= 0.0,
            ">= 0",
        )?;
        check_range(
            "grad_clip_norm",
            self.grad_clip_norm,
            self.grad_clip_norm >= 0.0,
            ">= 0",
        )
    }
}

/// The optimizer family chosen when a model is created (`{"type":"adamw"}` by default,
/// or `{"type":"dimuon","version":1}`); other families pass through unchanged.
#[derive(Debug, Clone, PartialEq)]
pub struct OptimizerConfig(pub Map);

impl Default for OptimizerConfig {
    fn default() -> Self {
        let mut m = Map::new();
        m.insert("type", "adamw".into());
        OptimizerConfig(m)
    }
}

impl From<&OptimizerConfig> for Value {
    fn from(c: &OptimizerConfig) -> Self {
        Value::Object(c.0.clone())
    }
}

impl json::ToJson for OptimizerConfig {
    fn to_json_value(&self) -> Value {
        Value::Object(self.0.clone())
    }
}

impl OptimizerConfig {
    /// Checks that a string `type` is present.
    pub fn validate(&self) -> Result<(), InputError> {
        match self.0.get("type") {
            Some(Value::String(s)) if !s.is_empty() => Ok(()),
            other => Err(InputError::type_error(
                "type",
                format!(
                    "optimizer config needs a string \"type\" (e.g. \"adamw\"), got {}",
                    other.map_or("nothing".into(), json::shown)
                ),
            )),
        }
    }
}

/// The LoRA rank when none is given (Python's `create_lora_training_client(rank=32)`).
pub const DEFAULT_LORA_RANK: u32 = 32;

/// LoRA configuration of a new training model. The default is Python's: rank 32, every
/// layer group trained, a random seed.
#[derive(Debug, Clone, PartialEq)]
pub struct LoraConfig {
    /// Rank of the low-rank matrices (a positive power of two).
    pub rank: u32,
    /// Initialisation seed (random when absent).
    pub seed: Option<u64>,
    /// Add LoRA to the unembedding layer (default true).
    pub train_unembed: bool,
    /// Add LoRA to MLP (and MoE) layers (default true).
    pub train_mlp: bool,
    /// Add LoRA to attention layers (default true).
    pub train_attn: bool,
}

impl LoraConfig {
    /// The wire JSON (`seed` only when set).
    pub fn to_json(&self) -> Value {
        let mut v = json!({ "rank": self.rank });
        if let Some(seed) = self.seed {
            v["seed"] = seed.into();
        }
        v["train_unembed"] = self.train_unembed.into();
        v["train_mlp"] = self.train_mlp.into();
        v["train_attn"] = self.train_attn.into();
        v
    }

    /// A config of the given rank with every layer group trained.
    pub fn new(rank: u32) -> Self {
        LoraConfig {
            rank,
            seed: None,
            train_unembed: true,
            train_mlp: true,
            train_attn: true,
        }
    }
    /// Rank must be a positive power of two and at least one layer group trained.
    pub fn validate(&self) -> Result<(), InputError> {
        if self.rank == 0 || !self.rank.is_power_of_two() {
            return Err(InputError::range_error(
                "rank",
                format!("must be a positive power of two, got {}", self.rank),
            ));
        }
        if !(self.train_unembed || self.train_mlp || self.train_attn) {
            return Err(InputError::range_error(
                "train_mlp",
                "at least one of train_unembed, train_mlp, train_attn must be true",
            ));
        }
        Ok(())
    }
}

/// When sampling stops besides `max_tokens`: stop strings or stop token ids.
#[derive(Debug, Clone, PartialEq)]
pub enum StopCondition {
    /// One stop string.
    String(String),
    /// Stop strings.
    Strings(Vec<String>),
    /// Stop token ids (an empty list disables every stop token, EOS included).
    Tokens(Vec<u32>),
}

/// Sampling parameters. Defaults are the Python SDK's; `temperature`, `top_k` and
/// `top_p` are always sent, `max_tokens`, `seed` and `stop` only when set.
#[derive(Debug, Clone, PartialEq)]
pub struct SamplingParams {
    /// Maximum tokens to generate.
    pub max_tokens: Option<u32>,
    /// Sampling seed (same seed, same samples).
    pub seed: Option<u64>,
    /// Stop strings or token ids.
    pub stop: Option<StopCondition>,
    /// Softmax temperature (default 1).
    pub temperature: f64,
    /// Keep only the k most likely tokens; -1 disables (default -1).
    pub top_k: i64,
    /// Nucleus sampling mass (default 1).
    pub top_p: f64,
}

impl Default for SamplingParams {
    fn default() -> Self {
        SamplingParams {
            max_tokens: None,
            seed: None,
            stop: None,
            temperature: 1.0,
            top_k: -1,
            top_p: 1.0,
        }
    }
}

impl SamplingParams {
    /// Appends the wire JSON: `max_tokens`, `seed` and `stop` only when set, then
    /// `temperature`, `top_k`, `top_p`.
    pub fn write_json(&self, out: &mut String) {
        let mut w = ObjectWriter::new(out);
        if let Some(n) = self.max_tokens {
            w.u64("max_tokens", u64::from(n));
        }
        if let Some(n) = self.seed {
            w.u64("seed", n);
        }
        match &self.stop {
            None => {}
            Some(StopCondition::String(s)) => {
                w.str("stop", s);
            }
            Some(StopCondition::Strings(v)) => {
                w.value("stop", &Value::from(v));
            }
            Some(StopCondition::Tokens(t)) => json::write_u32s(w.key("stop"), t),
        }
        w.f64("temperature", self.temperature)
            .i64("top_k", self.top_k)
            .f64("top_p", self.top_p);
        w.end();
    }

    /// Rejects out-of-range values, naming the field.
    pub fn validate(&self) -> Result<(), InputError> {
        check_range(
            "temperature",
            self.temperature,
            self.temperature >= 0.0,
            ">= 0",
        )?;
        check_range(
            "top_p",
            self.top_p,
            self.top_p > 0.0 && self.top_p <= 1.0,
            "in (0, 1]",
        )?;
        if self.top_k < -1 || self.top_k == 0 {
            return Err(InputError::range_error(
                "top_k",
                format!(
                    "must be -1 (disabled) or a positive integer, got {}",
                    self.top_k
                ),
            ));
        }
        if let Some(StopCondition::Tokens(t)) = &self.stop {
            if let Some(i) = t.iter().position(|&t| t > i32::MAX as u32) {
                return Err(InputError::range_error(
                    format!("stop[{i}]"),
                    format!("token id {} is out of range", t[i]),
                ));
            }
        }
        Ok(())
    }
}

impl Default for LoraConfig {
    fn default() -> Self {
        LoraConfig::new(DEFAULT_LORA_RANK)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_forms() {
        let json = |p: &SamplingParams| {
            let mut s = String::new();
            p.write_json(&mut s);
            s
        };
        assert_eq!(
            json(&SamplingParams {
                max_tokens: Some(3),
                ..Default::default()
            }),
            r#"{"max_tokens":3,"temperature":1.0,"top_k":-1,"top_p":1.0}"#
        );
        let stops = [
            (StopCondition::String("\n".into()), r#""\n""#),
            (
                StopCondition::Strings(vec!["a".into(), "b".into()]),
                r#"["a","b"]"#,
            ),
            (StopCondition::Tokens(vec![7, 8]), "[7,8]"),
        ];
        for (stop, text) in stops {
            let p = SamplingParams {
                seed: Some(u64::MAX),
                stop: Some(stop),
                temperature: 0.7,
                top_k: 5,
                top_p: 0.9,
                ..Default::default()
            };
            assert_eq!(
                json(&p),
                format!(
                    r#"{{"seed":18446744073709551615,"stop":{text},"temperature":0.7,"top_k":5,"top_p":0.9}}"#
                )
            );
        }
        assert_eq!(
            LoraConfig::new(16).to_json().to_string(),
            r#"{"rank":16,"train_unembed":true,"train_mlp":true,"train_attn":true}"#
        );
        let seeded = LoraConfig {
            seed: Some(7),
            train_mlp: false,
            ..LoraConfig::new(8)
        };
        assert_eq!(
            seeded.to_json().to_string(),
            r#"{"rank":8,"seed":7,"train_unembed":true,"train_mlp":false,"train_attn":true}"#
        );
        assert_eq!(
            Value::Object(OptimizerConfig::default().0).to_string(),
            r#"{"type":"adamw"}"#
        );
        assert_eq!(
            AdamParams::default().to_json().to_string(),
            r#"{"learning_rate":0.0001,"beta1":0.9,"beta2":0.95,"eps":1e-12,"weight_decay":0.0,"grad_clip_norm":0.0}"#
        );
    }

    #[test]
    fn validation_names_fields() {
        assert_eq!(LoraConfig::new(12).validate().unwrap_err().field, "rank");
        assert_eq!(
            SamplingParams {
                top_p: 0.0,
                ..Default::default()
            }
            .validate()
            .unwrap_err()
            .field,
            "top_p"
        );
        assert_eq!(
            SamplingParams {
                temperature: f64::NAN,
                ..Default::default()
            }
            .validate()
            .unwrap_err()
            .field,
            "temperature"
        );
        assert_eq!(
            AdamParams {
                beta2: 1.0,
                ..Default::default()
            }
            .validate()
            .unwrap_err()
            .field,
            "beta2"
        );
    }
}
