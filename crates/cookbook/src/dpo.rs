//! Direct preference optimization as `preference/train_dpo.py` runs it: the comparison
//! files of `ComparisonBuilderFromJsonl`, the chosen/rejected pairs of
//! `DPODatasetBuilderFromComparisons`, and `compute_dpo_loss` with its gradients. The
//! run itself is the supervised state machine in its DPO mode ([`crate::sft::Sft::new_dpo`]).

use serde_json::Value as Json;
use tinker_renderers::Message;
use tinker_support::input::InputError;

/// The rows of a comparison JSONL file, each line a JSON value (`json.loads(line.strip())`);
/// a line that is not JSON is refused with its line number (from 1).
pub fn parse_comparisons(text: &str) -> Result<Vec<Json>, InputError> {
    text.lines()
        .enumerate()
        .map(|(i, line)| {
            tinker_support::json::to_serde(line.trim()).map_err(|e| {
                InputError::type_error(format!("line {}", i + 1), format!("is not JSON ({e})"))
            })
        })
        .collect()
}

/// A row's chosen and rejected conversations (`example_to_labeled_comparison`, then
/// `comparison_to_datum`): the prompt followed by `completion_A` when the label is "A",
/// else by `completion_B`, and the other as the rejected one. `None`: a row without
/// `comparison` or `label`, which the cookbook skips.
pub fn pair(row: &Json) -> Option<Result<Vec<Vec<Message>>, InputError>> {
    let (c, label) = (row.get("comparison")?, row.get("label")?);
    let part = |k: &str| {
        let v = c.get(k).ok_or_else(|| {
            InputError::type_error(
                format!("comparison.{k}"),
                "is required (a list of messages)",
            )
        })?;
        Message::list_from_json(v).map_err(|e| e.within(&format!("comparison.{k}")))
    };
    Some((|| {
        let prompt = part("prompt_conversation")?;
        let (a, b) = (part("completion_A")?, part("completion_B")?);
        let (chosen, rejected) = if label == "A" { (a, b) } else { (b, a) };
        Ok(vec![
            [&prompt[..], &chosen].concat(),
            [prompt, rejected].concat(),
        ])
    })())
}

/// `compute_dpo_loss` over the weighted sequence logprobs, with the gradients torch's
/// autograd gives the custom loss (float32 throughout, as the cookbook's tensors are).
#[derive(Debug, Clone, PartialEq)]
pub struct DpoLoss {
    /// The mean loss.
    pub loss: f32,
    /// ∂loss/∂logprobs, one list per datum (chosen and rejected interleaved).
    pub gradients: Vec<Vec<f32>>,
    /// `dpo_loss`, `accuracy`, `margin`, `chosen_reward`, `rejected_reward`.
    pub metrics: [(&'static str, f32); 5],
}

/// The DPO loss of interleaved chosen/rejected datums: `policy` and `reference` are
/// each datum's per-token logprobs, `weights` its loss weights.
pub fn dpo_loss(
    policy: &[Vec<f32>],
    reference: &[Vec<f32>],
    weights: &[&[f32]],
    beta: f64,
) -> DpoLoss {
    let beta = beta as f32;
    let ratio = |i: usize| dot(&policy[i], weights[i]) - dot(&reference[i], weights[i]);
    let n = policy.len() / 2;
    let inv = 1.0f32 / n as f32;
    let mut gradients = Vec::with_capacity(2 * n);
    let mean = |f: &dyn Fn(f32, f32) -> f32| -> f32 {
        (0..n)
            .map(|i| f(ratio(2 * i), ratio(2 * i + 1)))
            .sum::<f32>()
            / n as f32
    };
    for i in 0..n {
        let x = beta * (ratio(2 * i) - ratio(2 * i + 1));
        // log_sigmoid's backward: max_deriv - sign * z / (1 + z), z = exp(-|x|).
        let z = exp(-f64::from(x.abs())) as f32;
        let d = if x < 0.0 {
            1.0 - z / (1.0 + z)
        } else {
            z / (1.0 + z)
        };
        let g = -inv * d * beta;
        gradients.push(weights[2 * i].iter().map(|w| g * w).collect());
        gradients.push(weights[2 * i + 1].iter().map(|w| -g * w).collect());
    }
    let loss = mean(&|c, r| {
        let x = beta * (c - r);
        -(x.min(0.0) - exp(-f64::from(x.abs())).ln_1p() as f32)
    });
    DpoLoss {
        loss,
        gradients,
        metrics: [
            ("dpo_loss", loss),
            ("accuracy", mean(&|c, r| if c > r { 1.0 } else { 0.0 })),
            ("margin", mean(&|c, r| beta * c - beta * r)),
            ("chosen_reward", mean(&|c, _| beta * c)),
            ("rejected_reward", mean(&|_, r| beta * r)),
        ],
    }
}

/// `torch.dot` of float32 vectors.
fn dot(a: &[f32], w: &[f32]) -> f32 {
    a.iter()
        .zip(w)
        .map(|(x, y)| f64::from(*x) * f64::from(*y))
        .sum::<f64>() as f32
}

/// e^x (through `powf`, which the module has already: `exp` would add its own code).
fn exp(x: f64) -> f64 {
    std::f64::consts::E.powf(x)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_row_gives_its_chosen_and_rejected_conversation_or_is_skipped() {
        let m = |t: &str| json!([{"role": "assistant", "content": t}]);
        let row = |label: &str| {
            json!({"comparison": {"prompt_conversation": [{"role": "user", "content": "q"}],
                "completion_A": m("a"), "completion_B": m("b")}, "label": label})
        };
        let text = |c: &[Message]| {
            c.iter()
                .map(|m| m.content.text_content())
                .collect::<Vec<_>>()
        };
        let [chosen, rejected]: [Vec<Message>; 2] =
            pair(&row("A")).unwrap().unwrap().try_into().unwrap();
        assert_eq!(
            (text(&chosen), text(&rejected)),
            (
                vec!["q".to_string(), "a".into()],
                vec!["q".to_string(), "b".into()]
            )
        );
        let chosen = &pair(&row("B")).unwrap().unwrap()[0];
        assert_eq!(text(chosen)[1], "b");
        // "Tie" is not "A": the cookbook takes B as chosen.
        assert_eq!(text(&pair(&row("Tie")).unwrap().unwrap()[0])[1], "b");
        assert!(pair(&json!({"label": "A"})).is_none());
        let bad = pair(&json!({"comparison": {"completion_A": []}, "label": "A"}));
        let e = bad.unwrap().unwrap_err().to_string();
        assert!(e.contains("comparison.prompt_conversation"), "{e}");
        let lines = parse_comparisons("{}\nnot json").unwrap_err().to_string();
        assert!(lines.contains("line 2"), "{lines}");
    }

    #[test]
    fn the_loss_and_its_gradients_follow_the_sigmoid_of_the_margin() {
        // One pair: policy ratios 0 and -2 over the reference, beta 0.5: x = 1.
        let w: [&[f32]; 2] = [&[0.0, 1.0], &[1.0, 1.0]];
        let policy = [vec![-9.0, -1.0], vec![-2.0, -2.0]];
        let reference = [vec![-5.0, -1.0], vec![-1.0, -1.0]];
        let out = dpo_loss(&policy, &reference, &w, 0.5);
        let sig = |x: f64| 1.0 / (1.0 + (-x).exp());
        let want = -(sig(1.0).ln());
        assert!((f64::from(out.loss) - want).abs() < 1e-6, "{}", out.loss);
        let g = -(1.0 - sig(1.0)) * 0.5;
        assert!((f64::from(out.gradients[0][1]) - g).abs() < 1e-6);
        assert_eq!(out.gradients[0][0], 0.0);
        assert!((f64::from(out.gradients[1][0]) + g).abs() < 1e-6);
        let m: Vec<(&str, f32)> = out.metrics.to_vec();
        assert_eq!(m[1], ("accuracy", 1.0));
        assert_eq!(
            (m[2], m[3], m[4]),
            (
                ("margin", 1.0),
                ("chosen_reward", 0.0),
                ("rejected_reward", -1.0)
            )
        );
    }
}
