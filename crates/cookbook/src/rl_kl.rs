//! The KL terms that move an RL step's advantages, in float32 as torch computes them:
//! `rl/metrics.py`'s `incorporate_kl_penalty` (against a reference policy, `kl_penalty_coef`
//! and `kl_discount_factor` of `rl.train`) and `distillation/train_on_policy.py`'s (the
//! reverse KL to a teacher, on-policy distillation's whole signal). Both score each datum's
//! full sequence on another sampler ([`full_sequence`]) and add to its advantages.
//! Compared with the cookbook's own functions by `make test-cookbook` (`oracle.py` →
//! `examples/parity.rs`).

use tinker_core::types::{Datum, ModelInput, ModelInputChunk, TensorData, TensorValues};
use tinker_support::input::InputError;

use crate::nll::{floats, targets};
use crate::rl::torch_sum;

/// `_full_sequence_inputs`: the datum's unshifted sequence, its input and the last target
/// in a chunk of its own (`ModelInput.append_int`).
pub fn full_sequence(d: &Datum) -> Result<ModelInput, InputError> {
    let last = targets(d)
        .last()
        .copied()
        .ok_or_else(|| InputError::range_error("datum.loss_fn_inputs.target_tokens", "is empty"))?;
    let mut m = d.model_input.clone();
    m.push(ModelInputChunk::EncodedText { tokens: vec![last] });
    Ok(m)
}

/// A datum's masked logprob differences and its mask.
type Masked = (Vec<f32>, Vec<f32>);

/// Each datum's `(logprob − scored logprob) · mask`, with its mask; `scored` is the other
/// sampler's prompt logprobs of the datum's full sequence, the first position dropped.
fn diffs(data: &[Datum], scored: &[Vec<f32>]) -> Result<Vec<Masked>, InputError> {
    if scored.len() != data.len() {
        return Err(InputError::range_error(
            "scores",
            format!("{} for {} datums", scored.len(), data.len()),
        ));
    }
    data.iter()
        .zip(scored)
        .enumerate()
        .map(|(i, (d, s))| {
            let (lp, mask) = (floats(d, "logprobs"), floats(d, "mask"));
            if s.len() != lp.len() || mask.len() != lp.len() {
                return Err(InputError::range_error(
                    format!("scores[{i}]"),
                    format!("{} logprobs for a datum of {} targets", s.len(), lp.len()),
                ));
            }
            let diff = lp.iter().zip(s).zip(mask).map(|((a, b), m)| (a - b) * m);
            Ok((diff.collect(), mask.to_vec()))
        })
        .collect()
}

/// `sum(diff.sum()) / sum(mask.sum())` over the datums, as Python sums torch scalars.
fn mean_over_masks(d: &[Masked]) -> f32 {
    let total = d.iter().fold(0f32, |a, (x, _)| a + torch_sum(x));
    let count = d.iter().fold(0f32, |a, (_, m)| a + torch_sum(m));
    total / count
}

/// `discounted_future_sum_vectorized`: `running = x[t] + gamma · running`, from the end.
fn discounted_future_sum(x: &mut [f32], gamma: f32) {
    let mut running = 0f32;
    for v in x.iter_mut().rev() {
        running = *v + gamma * running;
        *v = running;
    }
}

/// Adds `extra` (discounted first when `discount > 0`) to the datum's advantages (int64
/// advantages become float32, as torch promotes them).
fn add_advantages(d: &mut Datum, mut extra: Vec<f32>, discount: f64) {
    if discount > 0.0 {
        discounted_future_sum(&mut extra, discount as f32);
    }
    let old: Vec<f32> = match d.loss_fn_inputs.get("advantages").map(|t| &t.values) {
        Some(TensorValues::Float32(v)) => v.clone(),
        Some(TensorValues::Int64(v)) => v.iter().map(|&x| x as f32).collect(),
        _ => vec![0.0; extra.len()],
    };
    let sum: Vec<f32> = old.iter().zip(&extra).map(|(a, b)| a + b).collect();
    let n = sum.len();
    d.loss_fn_inputs
        .insert("advantages", TensorData::from_f32(sum).with_shape(vec![n]));
}

/// `rl/metrics.py` `incorporate_kl_penalty`: adds `coef · mask · (avg − diff)` (discounted
/// when `discount > 0`) to each datum's advantages, `diff` its sampled minus `reference`
/// logprobs. Returns `kl_policy_base`, the mean difference over the action tokens.
pub fn kl_penalty(
    data: &mut [Datum],
    reference: &[Vec<f32>],
    coef: f64,
    discount: f64,
) -> Result<f64, InputError> {
    let d = diffs(data, reference)?;
    let avg = mean_over_masks(&d);
    for (datum, (diff, mask)) in data.iter_mut().zip(&d) {
        let scale = mask.iter().map(|m| coef as f32 * m);
        let extra = scale.zip(diff).map(|(s, x)| s * (avg - x)).collect();
        add_advantages(datum, extra, discount);
    }
    Ok(f64::from(avg))
}

/// `distillation/train_on_policy.py` `incorporate_kl_penalty`: adds `−coef · mask · kl` to
/// each datum's advantages, `kl` its sampled minus `teacher` logprobs (the reverse KL),
/// discounted when `discount > 0`. Returns `teacher_kl` (the mean over action tokens) and
/// `teacher_kl/dataset_<i>` for each dataset in the order its first datum comes.
pub fn teacher_kl(
    data: &mut [Datum],
    teacher: &[Vec<f32>],
    dataset: &[usize],
    coef: f64,
    discount: f64,
) -> Result<Vec<(String, f64)>, InputError> {
    let d = diffs(data, teacher)?;
    let mut per: Vec<(usize, f64, f64)> = Vec::new();
    for ((datum, (kl, mask)), &ds) in data.iter_mut().zip(&d).zip(dataset) {
        let scale = mask.iter().map(|m| -coef as f32 * m);
        add_advantages(datum, scale.zip(kl).map(|(s, x)| s * x).collect(), discount);
        let (k, m) = (f64::from(torch_sum(kl)), f64::from(torch_sum(mask)));
        match per.iter_mut().find(|p| p.0 == ds) {
            Some(p) => (p.1, p.2) = (p.1 + k, p.2 + m),
            None => per.push((ds, k, m)),
        }
    }
    let mut out = vec![("teacher_kl".to_string(), f64::from(mean_over_masks(&d)))];
    out.extend(
        per.into_iter()
            .filter(|p| p.2 > 0.0)
            .map(|(ds, k, m)| (format!("teacher_kl/dataset_{ds}"), k / m)),
    );
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tinker_core::types::LossFnInputs;

    fn datum(lp: &[f32], mask: &[f32], adv: TensorData) -> Datum {
        let n = lp.len();
        let mut inputs = LossFnInputs::new();
        let t = (2..2 + n as i64).collect();
        inputs.insert("target_tokens", TensorData::from_i64(t).with_shape(vec![n]));
        inputs.insert("logprobs", TensorData::from_f32(lp.to_vec()));
        inputs.insert("mask", TensorData::from_f32(mask.to_vec()));
        inputs.insert("advantages", adv);
        Datum::new(ModelInput::from_ints((1..=n as u32).collect()), inputs)
    }

    #[test]
    fn the_full_sequence_is_the_input_and_the_last_target() {
        let d = datum(&[0.0; 3], &[1.0; 3], TensorData::from_f32(vec![0.0; 3]));
        let s = full_sequence(&d).unwrap();
        assert_eq!(
            (s.to_ints().unwrap(), s.chunks.len()),
            (vec![1, 2, 3, 4], 2)
        );
    }

    #[test]
    fn the_reference_penalty_centres_on_the_mean_difference() {
        // Differences 1 and 3 on the two action tokens: mean 2, advantages ±1 around it.
        let mut data = [datum(
            &[-1.0, -1.0, -1.0],
            &[0.0, 1.0, 1.0],
            TensorData::from_i64(vec![0; 3]),
        )];
        let avg = kl_penalty(&mut data, &[vec![5.0, -2.0, -4.0]], 0.5, 0.0).unwrap();
        assert_eq!(avg, 2.0);
        assert_eq!(floats(&data[0], "advantages"), [0.0, 0.5, -0.5]);
        // Discounted: each position adds gamma times the next one's.
        let mut data = [datum(
            &[-1.0, -1.0],
            &[1.0, 1.0],
            TensorData::from_f32(vec![1.0, 1.0]),
        )];
        kl_penalty(&mut data, &[vec![-2.0, -4.0]], 1.0, 0.5).unwrap();
        assert_eq!(floats(&data[0], "advantages"), [1.0 + 1.0 - 0.5, 1.0 - 1.0]);
    }

    #[test]
    fn the_teacher_kl_is_reported_per_dataset_in_order_of_appearance() {
        let a = || {
            datum(
                &[-1.0, -2.0],
                &[1.0, 1.0],
                TensorData::from_f32(vec![0.0; 2]),
            )
        };
        let mut data = [a(), a(), a()];
        let teacher = vec![vec![-1.0, -1.0], vec![-2.0, -2.0], vec![-1.0, -3.0]];
        let m = teacher_kl(&mut data, &teacher, &[1, 0, 1], 2.0, 0.0).unwrap();
        let names: Vec<&str> = m.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(
            names,
            ["teacher_kl", "teacher_kl/dataset_1", "teacher_kl/dataset_0"]
        );
        assert_eq!(m[0].1, f64::from(1.0f32 / 6.0));
        assert_eq!(floats(&data[0], "advantages"), [0.0, 2.0]);
        let err = teacher_kl(&mut data, &teacher[..1], &[0], 1.0, 0.0).unwrap_err();
        assert!(err.to_string().contains("scores"), "{err}");
    }
}
