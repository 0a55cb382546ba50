use crate::map::StrMap;

use super::{DType, InputError, ModelInput, TensorData};
use crate::json::{Fields, Value};

/// Named loss inputs of a [`Datum`] (`target_tokens`, `weights`, `advantages`, …).
pub type LossFnInputs = StrMap<TensorData>;

/// Where a run of datum positions came from (provenance for RL training).
#[derive(Debug, Clone, PartialEq)]
pub enum ProvenanceSpan {
    /// Positions `[offset, offset + length)` of a sampled sequence's prompt.
    PromptTokens {
        /// `sequence_id` of the sampled sequence.
        sequence_id: String,
        /// Offset in that prompt.
        offset: u64,
        /// Number of positions.
        length: u64,
    },
    /// Positions `[offset, offset + length)` of a sampled sequence's tokens.
    SampledTokens {
        /// `sequence_id` of the sampled sequence.
        sequence_id: String,
        /// Offset in the sampled tokens.
        offset: u64,
        /// Number of positions.
        length: u64,
    },
}

/// One training example: the model input plus the loss function's inputs, aligned so
/// that input position *i* predicts `target_tokens[i]`.
#[derive(Debug, Clone, PartialEq)]
pub struct Datum {
    /// The tokens (and other chunks) fed to the model.
    pub model_input: ModelInput,
    /// The loss function's inputs by name.
    pub loss_fn_inputs: LossFnInputs,
    /// Provenance of the input positions (set together with `loss_fn_input_spans`).
    pub model_input_spans: Option<Vec<ProvenanceSpan>>,
    /// Provenance of the loss rows.
    pub loss_fn_input_spans: Option<Vec<ProvenanceSpan>>,
}

impl ProvenanceSpan {
    /// The keys of its JSON form.
    pub const KEYS: &'static [&'static str] = &["type", "sequence_id", "offset", "length"];

    /// Reads a span from its JSON form: `{"type": "prompt_tokens" | "sampled_tokens",
    /// "sequence_id", "offset" (default 0), "length"}`, nothing else.
    pub fn from_json(v: &Value) -> Result<Self, String> {
        let f = Fields::of(v)?.only(Self::KEYS)?;
        let sequence_id = f.str("sequence_id")?;
        let offset = f.opt_u64("offset")?.unwrap_or(0);
        let length = f.u64("length")?;
        match f.str("type")?.as_str() {
            "prompt_tokens" => Ok(ProvenanceSpan::PromptTokens {
                sequence_id,
                offset,
                length,
            }),
            "sampled_tokens" => Ok(ProvenanceSpan::SampledTokens {
                sequence_id,
                offset,
                length,
            }),
            other => Err(format!(
                "unknown variant `{other}`, expected `prompt_tokens` or `sampled_tokens`"
            )),
        }
    }
}

/// Every loss function the API knows.
pub const LOSS_FNS: &[&str] = &[
    "cross_entropy",
    "importance_sampling",
    "ppo",
    "cispo",
    "dro",
    "gspo",
    "stable_reinforce",
    "custom",
];

/// The dtype each known loss-input key must have (as the Python SDK types plain lists).
pub fn loss_input_dtype(key: &str) -> Option<DType> {
    match key {
        "target_tokens" => Some(DType::Int64),
        "weights"
        | "advantages"
        | "logprobs"
        | "clip_low_threshold"
        | "clip_high_threshold"
        | "sequence_ratio_mask"
        | "target_distribution" => Some(DType::Float32),
        _ => None,
    }
}

fn required_inputs(loss_fn: &str) -> &'static [&'static str] {
    match loss_fn {
        "cross_entropy" => &["target_tokens"],
        "importance_sampling" | "ppo" | "cispo" | "dro" | "gspo" => {
            &["target_tokens", "logprobs", "advantages"]
        }
        // StableReinforce takes the sampling-time numbers from the stability information
        // the server recorded for each sampled sequence (`record_stability_info`, found by
        // `sequence_id`), so the client does not require `logprobs` for it.
        "stable_reinforce" => &["target_tokens", "advantages"],
        _ => &[],
    }
}

impl Datum {
    /// A datum from an input and its loss inputs.
    pub fn new(model_input: ModelInput, loss_fn_inputs: LossFnInputs) -> Self {
        Datum {
            model_input,
            loss_fn_inputs,
            model_input_spans: None,
            loss_fn_input_spans: None,
        }
    }

    /// Checks this datum for `loss_fn`: chunks valid, required inputs present, dtypes
    /// right, every tensor consistent, and every loss input's leading dimension equal to
    /// the input's length. Errors name the field relative to the datum.
    pub fn validate(&self, loss_fn: &str) -> Result<(), InputError> {
        self.model_input
            .validate()
            .map_err(|e| e.within("model_input"))?;
        for key in required_inputs(loss_fn) {
            if !self.loss_fn_inputs.contains_key(key) {
                return Err(InputError::type_error(
                    format!("loss_fn_inputs.{key}"),
                    format!("is required by loss_fn {}", crate::json::quote(loss_fn)),
                ));
            }
        }
        let input_len = self.model_input.length().ok();
        let mut lead: Option<(&str, usize)> = None;
        for (key, t) in &self.loss_fn_inputs {
            let at = |e: InputError| e.within(&format!("loss_fn_inputs.{key}"));
            t.validate().map_err(at)?;
            if let Some(want) = loss_input_dtype(key) {
                if t.dtype() != want {
                    return Err(at(InputError::type_error(
                        "dtype",
                        format!("must be {}, got {}", want.name(), t.dtype().name()),
                    )));
                }
            }
            let n = t.leading_dim();
            match lead {
                Some((other, m)) if m != n => {
                    return Err(InputError::range_error(format!("loss_fn_inputs.{key}"), format!("has {n} rows but loss_fn_inputs.{other} has {m}; every loss input must have one row per input position")));
                }
                Some(_) => {}
                None => lead = Some((key, n)),
            }
        }
        if let (Some((key, n)), Some(len)) = (lead, input_len) {
            if n != len {
                return Err(InputError::range_error(format!("loss_fn_inputs.{key}"), format!("has {n} rows but model_input has {len} positions; they must be equal (position i predicts target i)")));
            }
        }
        match (&self.model_input_spans, &self.loss_fn_input_spans) {
            (None, None) => {}
            (Some(a), Some(b)) => {
                let total = |s: &[ProvenanceSpan]| s.iter().map(|s| match s { ProvenanceSpan::PromptTokens { length, .. } | ProvenanceSpan::SampledTokens { length, .. } => *length }).sum::<u64>();
                if let Some(len) = input_len {
                    if total(a) != len as u64 {
                        return Err(InputError::range_error("model_input_spans", format!("spans cover {} positions but model_input has {len}", total(a))));
                    }
                }
                if let Some(n) = lead.map(|l| l.1) {
                    if total(b) != n as u64 {
                        return Err(InputError::range_error("loss_fn_input_spans", format!("spans cover {} rows but the loss inputs have {n}", total(b))));
                    }
                }
            }
            _ => return Err(InputError::type_error("model_input_spans", "provenance comes as a pair: set both model_input_spans and loss_fn_input_spans, or neither")),
        }
        Ok(())
    }

    /// The Python SDK's per-datum request-size estimate, used for chunking.
    pub fn estimated_bytes(&self) -> usize {
        self.model_input
            .chunks
            .iter()
            .map(|c| c.estimated_bytes())
            .sum::<usize>()
            + self
                .loss_fn_inputs
                .values()
                .map(TensorData::estimated_bytes)
                .sum::<usize>()
    }
}

/// Checks that `loss_fn` is a known loss function.
pub fn validate_loss_fn(loss_fn: &str) -> Result<(), InputError> {
    if LOSS_FNS.contains(&loss_fn) {
        Ok(())
    } else {
        Err(InputError::range_error(
            "loss_fn",
            format!(
                "unknown loss function {}; expected one of {}",
                crate::json::quote(loss_fn),
                LOSS_FNS.join(", ")
            ),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sft(input: Vec<u32>, targets: Vec<i64>, weights: Vec<f32>) -> Datum {
        let mut inputs = LossFnInputs::new();
        inputs.insert("target_tokens", TensorData::from_i64(targets));
        inputs.insert("weights", TensorData::from_f32(weights));
        Datum::new(ModelInput::from_ints(input), inputs)
    }

    #[test]
    fn valid_sft_datum() {
        let d = sft(vec![1, 2, 3], vec![2, 3, 4], vec![0.0, 1.0, 1.0]);
        d.validate("cross_entropy").unwrap();
        assert_eq!(d.estimated_bytes(), 3 * 4 + 3 * 8 + 3 * 4);
    }

    #[test]
    fn mismatched_lengths_name_the_field() {
        let e = sft(vec![1, 2, 3], vec![2, 3, 4], vec![1.0, 1.0])
            .validate("cross_entropy")
            .unwrap_err();
        assert!(e.field.starts_with("loss_fn_inputs."), "{e}");
        assert!(e.message.contains("rows"), "{e}");
        let e = sft(vec![1, 2], vec![2, 3, 4], vec![1.0; 3])
            .validate("cross_entropy")
            .unwrap_err();
        assert!(e.message.contains("model_input has 2 positions"), "{e}");
    }

    #[test]
    fn dtype_and_required_inputs() {
        let mut d = sft(vec![1], vec![2], vec![1.0]);
        d.loss_fn_inputs
            .insert("weights", TensorData::from_i64(vec![1]));
        assert_eq!(
            d.validate("cross_entropy").unwrap_err().field,
            "loss_fn_inputs.weights.dtype"
        );
        let d = sft(vec![1], vec![2], vec![1.0]);
        assert_eq!(
            d.validate("ppo").unwrap_err().field,
            "loss_fn_inputs.logprobs"
        );
        // StableReinforce needs advantages but not client logprobs (the server has the
        // sampling-time numbers).
        assert_eq!(
            d.validate("stable_reinforce").unwrap_err().field,
            "loss_fn_inputs.advantages"
        );
        let mut rl = sft(vec![1], vec![2], vec![1.0]);
        rl.loss_fn_inputs
            .insert("advantages", TensorData::from_f32(vec![0.5]));
        assert!(rl.validate("stable_reinforce").is_ok());
        assert_eq!(
            rl.validate("gspo").unwrap_err().field,
            "loss_fn_inputs.logprobs"
        );
        assert!(validate_loss_fn("cross_entropy").is_ok());
        assert!(validate_loss_fn("crossentropy")
            .unwrap_err()
            .message
            .contains("unknown loss"));
    }
}
