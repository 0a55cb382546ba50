//! The cookbook's loss metrics (`supervised/common.py`, `nll_evaluator.py`): the weighted
//! mean NLL, bits per byte, and the held-out set's NLL through a sampler
//! (`SamplerNLLEvaluator`).

use tinker_core::types::{Datum, ModelInput, ModelInputChunk, TensorValues};
use tinker_tokenizer::Tokenizer;

/// A datum's float32 loss input `key` (`weights`).
pub fn floats<'a>(d: &'a Datum, key: &str) -> &'a [f32] {
    match d.loss_fn_inputs.get(key).map(|t| &t.values) {
        Some(TensorValues::Float32(w)) => w,
        _ => &[],
    }
}

/// A datum's `target_tokens`.
pub fn targets(d: &Datum) -> Vec<u32> {
    match d.loss_fn_inputs.get("target_tokens").map(|t| &t.values) {
        Some(TensorValues::Int64(t)) => t.iter().map(|&x| x as u32).collect(),
        _ => Vec::new(),
    }
}

/// `compute_mean_nll`: minus the weighted logprobs over the weights' sum (NaN for none),
/// accumulated in float32 as the cookbook's torch tensors are.
pub fn mean_nll(logprobs: &[Vec<f32>], data: &[Datum]) -> f64 {
    let (mut num, mut den) = (0f32, 0f32);
    for (lp, d) in logprobs.iter().zip(data) {
        let w = floats(d, "weights");
        num += lp.iter().zip(w).map(|(a, b)| a * b).sum::<f32>();
        den += w.iter().sum::<f32>();
    }
    if den == 0.0 {
        f64::NAN
    } else {
        f64::from(-num / den)
    }
}

/// `tokenizer.all_special_ids`: the ids of the bos, eos, unk, pad and additional special
/// tokens (a handful: a list, not a hash set).
fn special_ids(tok: &Tokenizer) -> Vec<u32> {
    let s = tok.special_tokens();
    [&s.bos, &s.eos, &s.unk, &s.pad]
        .into_iter()
        .flatten()
        .chain(&s.additional)
        .filter_map(|t| tok.token_to_id(t))
        .collect()
}

/// `compute_bpb`: the NLL of the trained, non-special target tokens in bits, over the
/// UTF-8 bytes of those tokens decoded run by run (NaN when there are none).
pub fn bpb(logprobs: &[Vec<f32>], data: &[Datum], tok: &Tokenizer) -> f64 {
    let special = special_ids(tok);
    let (mut nats, mut bytes) = (0f64, 0usize);
    for (lp, d) in logprobs.iter().zip(data) {
        let (w, ids) = (floats(d, "weights"), targets(d));
        let counted: Vec<bool> = w
            .iter()
            .zip(&ids)
            .map(|(&w, id)| w > 0.0 && !special.contains(id))
            .collect();
        let sum: f32 = lp
            .iter()
            .zip(&counted)
            .filter(|(_, &c)| c)
            .map(|(x, _)| *x)
            .sum();
        nats += f64::from(-sum);
        for run in ids
            .iter()
            .zip(&counted)
            .collect::<Vec<_>>()
            .split(|(_, &c)| !c)
        {
            if !run.is_empty() {
                let run: Vec<u32> = run.iter().map(|(id, _)| **id).collect();
                bytes += tok.decode(&run, false).len();
            }
        }
    }
    if bytes == 0 {
        f64::NAN
    } else {
        nats / (std::f64::consts::LN_2 * bytes as f64)
    }
}

/// `model_input.append_int(token)`: the prompt with one more token, as a chunk of its
/// own (the Python SDK's `append(EncodedTextChunk(tokens=[token]))`).
pub fn append_int(m: &ModelInput, token: u32) -> ModelInput {
    let mut m = m.clone();
    m.chunks.push(ModelInputChunk::EncodedText {
        tokens: vec![token],
    });
    m
}

/// The prompt `SamplerNLLEvaluator` scores for a datum: its input and its last target.
pub fn scored_prompt(d: &Datum) -> ModelInput {
    append_int(&d.model_input, targets(d).last().copied().unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use tinker_core::types::{LossFnInputs, TensorData};

    fn datum(tokens: Vec<u32>, weights: Vec<f32>) -> Datum {
        let mut i = LossFnInputs::new();
        i.insert("weights", TensorData::from_f32(weights));
        i.insert("target_tokens", TensorData::from_i64(vec![7, 8, 9]));
        Datum::new(ModelInput::from_ints(tokens), i)
    }

    #[test]
    fn the_scored_prompt_is_the_input_and_the_last_target_in_a_chunk_of_its_own() {
        let p = scored_prompt(&datum(vec![1, 2, 3], vec![0.0, 1.0, 1.0]));
        assert_eq!(p.chunks.len(), 2);
        assert_eq!(p.to_ints().unwrap(), [1, 2, 3, 9]);
    }

    #[test]
    fn the_mean_nll_weighs_each_token_and_is_nan_without_weight() {
        let d = [datum(vec![1, 2, 3], vec![0.0, 0.5, 0.5])];
        assert_eq!(mean_nll(&[vec![-9.0, -1.0, -3.0]], &d), 2.0);
        let none = [datum(vec![1, 2, 3], vec![0.0; 3])];
        assert!(mean_nll(&[vec![-1.0; 3]], &none).is_nan());
    }
}
