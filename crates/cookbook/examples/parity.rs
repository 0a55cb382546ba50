//! Compares this crate with tinker-cookbook itself: the oracle's answers
//! (`tests/cookbook/oracle.py`, run by `make test-cookbook`) against ours, value for value
//! (floats bit for bit). Prints a line per disagreement and exits 1 if there is any.
//!
//!     cargo run -p tinker-cookbook --example parity -- expected.json

use serde_json::Value;
use std::collections::BTreeMap;
use tinker_cookbook::data::{batches_per_epoch, epoch_order, split};
use tinker_cookbook::hyperparams::HIDDEN_SIZES;
use tinker_cookbook::rl::{self, Trajectory, TrajectoryGroup, Transition};
use tinker_cookbook::{get_lr, LrError, LrSchedule, NumpyRng};
use tinker_cookbook::{rl_kl, rl_metrics};
use tinker_core::types::{Datum, ModelInput, ModelInputChunk, ProvenanceSpan, TensorValues};

fn main() {
    let path = std::env::args()
        .nth(1)
        .expect("usage: parity EXPECTED.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let expected: Value = serde_json::from_str(&text).expect("the oracle's JSON");
    let mut diffs = Vec::new();
    let checked = data_orders(&expected, &mut diffs)
        + permutations(&expected, &mut diffs)
        + schedules(&expected, &mut diffs)
        + hidden_sizes(&expected, &mut diffs)
        + learning_rates(&expected, &mut diffs)
        + rl_data(&expected, &mut diffs)
        + kl_terms(&expected, &mut diffs)
        + truncations(&expected, &mut diffs);
    for d in &diffs {
        println!("DIFF {d}");
    }
    println!("cookbook parity: {checked} checks, {} differ", diffs.len());
    if !diffs.is_empty() || checked == 0 {
        std::process::exit(1);
    }
}

fn rows<'a>(expected: &'a Value, key: &str) -> &'a [Value] {
    expected[key]
        .as_array()
        .unwrap_or_else(|| panic!("the oracle has no {key}"))
}

fn usizes(v: &Value) -> Vec<usize> {
    serde_json::from_value(v.clone()).expect("a list of indices")
}

/// FromConversationFileBuilder's held-out rows, training rows and each epoch's order.
fn data_orders(expected: &Value, diffs: &mut Vec<String>) -> usize {
    let rows = rows(expected, "data_orders");
    for r in rows {
        let n = |k: &str| r[k].as_u64().unwrap() as usize;
        let s = split(
            n("rows"),
            n("test_size"),
            r["shuffle_seed"].as_u64().unwrap(),
        );
        let mut ok = s.test == usizes(&r["test"]) && s.train == usizes(&r["train"]);
        for (epoch, want) in r["epochs"].as_array().unwrap().iter().enumerate() {
            ok &= epoch_order(&s.train, epoch as u64) == usizes(want);
        }
        ok &= batches_per_epoch(s.train.len(), n("batch_size")) == n("batches_per_epoch");
        if !ok {
            diffs.push(format!("data order of {r}: ours {s:?}"));
        }
    }
    rows.len()
}

fn permutations(expected: &Value, diffs: &mut Vec<String>) -> usize {
    let rows = rows(expected, "permutations");
    for r in rows {
        let seed: u64 = r["seed"].as_str().unwrap().parse().unwrap();
        let n = r["n"].as_u64().unwrap() as usize;
        let want: Vec<usize> = serde_json::from_value(r["perm"].clone()).unwrap();
        let got = NumpyRng::new(seed).permutation(n);
        if got != want {
            let at = got.iter().zip(&want).position(|(a, b)| a != b);
            diffs.push(format!(
                "permutation seed {seed} n {n}: first difference at {at:?}"
            ));
        }
    }
    rows.len()
}

fn schedules(expected: &Value, diffs: &mut Vec<String>) -> usize {
    let rows = rows(expected, "schedules");
    for r in rows {
        let (name, step, total) = (
            r["schedule"].as_str().unwrap(),
            r["step"].as_u64().unwrap(),
            r["total_steps"].as_u64().unwrap(),
        );
        let got = LrSchedule::parse(name).and_then(|s| s.multiplier(step, total));
        match (&got, r["value"].as_f64()) {
            (Ok(v), Some(w)) if v.to_bits() == w.to_bits() => {}
            (Err(_), None) => {}
            _ => diffs.push(format!(
                "{name} step {step}/{total}: ours {got:?}, cookbook {r}"
            )),
        }
    }
    rows.len()
}

fn hidden_sizes(expected: &Value, diffs: &mut Vec<String>) -> usize {
    let want: BTreeMap<String, u32> =
        serde_json::from_value(expected["hidden_sizes"].clone()).unwrap();
    let ours: BTreeMap<String, u32> = HIDDEN_SIZES
        .iter()
        .map(|(m, h)| (m.to_string(), *h))
        .collect();
    if ours != want {
        diffs.push(format!("hidden sizes: ours {ours:?}, cookbook {want:?}"));
    }
    want.len()
}

fn learning_rates(expected: &Value, diffs: &mut Vec<String>) -> usize {
    let rows = rows(expected, "get_lr");
    for r in rows {
        let (model, lora) = (
            r["model"].as_str().unwrap(),
            r["is_lora"].as_bool().unwrap(),
        );
        let got = get_lr(model, lora);
        let ok = match (&got, r["value"].as_f64(), r["error"].as_str()) {
            (Ok(v), Some(w), _) => v.to_bits() == w.to_bits(),
            (Err(LrError::NotCalibrated(_)), _, Some("NotImplementedError")) => true,
            (Err(LrError::Unknown(_)), _, Some("ConfigurationError" | "NeedsHub")) => true,
            _ => false,
        };
        if !ok {
            diffs.push(format!(
                "get_lr({model}, {lora}): ours {got:?}, cookbook {r}"
            ));
        }
    }
    rows.len()
}

/// RL's data processing: advantages (float32, torch's summation order), the datums of
/// `assemble_training_data` with and without provenance, and the groups
/// `remove_constant_reward_groups` keeps.
fn rl_data(expected: &Value, diffs: &mut Vec<String>) -> usize {
    let cases = rows(expected, "rl_data");
    let mut checked = 0;
    for (c, case) in cases.iter().enumerate() {
        let groups: Vec<TrajectoryGroup> = case["groups"]
            .as_array()
            .unwrap()
            .iter()
            .map(group)
            .collect();
        let adv = rl::advantages(&groups);
        let want: Vec<Vec<f64>> = serde_json::from_value(case["advantages"].clone()).unwrap();
        let got: Vec<Vec<f64>> = adv
            .iter()
            .map(|g| g.iter().map(|&a| f64::from(a)).collect())
            .collect();
        if got != want {
            diffs.push(format!(
                "rl case {c}: advantages ours {got:?}, cookbook {want:?}"
            ));
        }
        for prov in [true, false] {
            let key = format!("data_provenance_{prov}");
            let (data, from) =
                rl::assemble_training_data(&groups, &adv, prov).expect("the oracle's trajectories");
            let ours: Vec<Value> = data.iter().map(datum_json).collect();
            let theirs = case[&key].as_array().unwrap();
            if ours.len() != theirs.len() {
                diffs.push(format!(
                    "rl case {c} ({key}): {} datums, cookbook {}",
                    ours.len(),
                    theirs.len()
                ));
            }
            if let Some(i) = ours.iter().zip(theirs).position(|(a, b)| a != b) {
                diffs.push(format!(
                    "rl case {c} ({key}) datum {i}: ours {}, cookbook {}",
                    ours[i], theirs[i]
                ));
            }
            let want_from: Vec<(usize, usize)> =
                serde_json::from_value(case["from"].clone()).unwrap();
            if from != want_from {
                diffs.push(format!(
                    "rl case {c}: datum origins ours {from:?}, cookbook {want_from:?}"
                ));
            }
            checked += ours.len();
        }
        let tags: Vec<Vec<String>> = case["groups"]
            .as_array()
            .unwrap()
            .iter()
            .map(|g| serde_json::from_value(g["tags"].clone()).unwrap())
            .collect();
        let ours = serde_json::to_value(rl_metrics::trajectory_metrics(&groups, &tags)).unwrap();
        if !same_metrics(&ours, &case["trajectory_metrics"]) {
            diffs.push(format!(
                "rl case {c}: trajectory metrics ours {ours}, cookbook {}",
                case["trajectory_metrics"]
            ));
        }
        let (data, _) = rl::assemble_training_data(&groups, &adv, true).unwrap();
        let training: Vec<Vec<f32>> = case["training_logprobs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| {
                t.as_array()
                    .unwrap()
                    .iter()
                    .map(|x| x.as_f64().unwrap() as f32)
                    .collect()
            })
            .collect();
        let kl =
            rl_metrics::kl_sample_train(&data, &training).map(|m| serde_json::to_value(m).unwrap());
        if kl.as_ref() != case.get("kl_sample_train") {
            diffs.push(format!(
                "rl case {c}: kl_sample_train ours {kl:?}, cookbook {:?}",
                case.get("kl_sample_train")
            ));
        }
        checked += 2;
        let kept = rl::remove_constant_reward_groups(groups.clone());
        let kept: Vec<usize> = kept
            .iter()
            .map(|k| groups.iter().position(|g| g == k).unwrap())
            .collect();
        let want_kept: Vec<usize> = serde_json::from_value(case["kept_groups"].clone()).unwrap();
        if kept != want_kept {
            diffs.push(format!(
                "rl case {c}: kept groups ours {kept:?}, cookbook {want_kept:?}"
            ));
        }
    }
    checked + cases.len()
}

/// The KL terms on each case's datums: the reference penalty of `rl.train` and on-policy
/// distillation's teacher KL (the sequences scored, the advantages after, the metrics).
fn kl_terms(expected: &Value, diffs: &mut Vec<String>) -> usize {
    let mut checked = 0;
    for (c, case) in rows(expected, "rl_data").iter().enumerate() {
        for key in ["kl_penalty", "teacher_kl"] {
            let Some(want) = case.get(key) else { continue };
            let groups: Vec<TrajectoryGroup> = case["groups"]
                .as_array()
                .unwrap()
                .iter()
                .map(group)
                .collect();
            let adv = rl::advantages(&groups);
            let (mut data, _) = rl::assemble_training_data(&groups, &adv, true).unwrap();
            let scores: Vec<Vec<f32>> =
                serde_json::from_value::<Vec<Vec<f64>>>(want["scores"].clone())
                    .unwrap()
                    .iter()
                    .map(|s| s.iter().map(|&x| x as f32).collect())
                    .collect();
            let (coef, discount) = (
                want["coef"].as_f64().unwrap(),
                want["discount"].as_f64().unwrap(),
            );
            let metrics = if key == "kl_penalty" {
                let asked: Vec<Vec<Vec<u32>>> =
                    serde_json::from_value(want["sequences"].clone()).unwrap();
                let chunks = |m: ModelInput| {
                    m.chunks
                        .iter()
                        .map(|c| match c {
                            ModelInputChunk::EncodedText { tokens } => tokens.clone(),
                            _ => Vec::new(),
                        })
                        .collect::<Vec<_>>()
                };
                let ours: Vec<Vec<Vec<u32>>> = data
                    .iter()
                    .map(|d| chunks(rl_kl::full_sequence(d).unwrap()))
                    .collect();
                if ours != asked {
                    diffs.push(format!("rl case {c}: full sequences differ"));
                }
                let avg = rl_kl::kl_penalty(&mut data, &scores, coef, discount).unwrap();
                vec![("kl_policy_base".to_string(), avg)]
            } else {
                let ds: Vec<usize> = serde_json::from_value(want["datasets"].clone()).unwrap();
                rl_kl::teacher_kl(&mut data, &scores, &ds, coef, discount).unwrap()
            };
            let ours = serde_json::to_value(&metrics).unwrap();
            if ours != want["metrics"] {
                diffs.push(format!(
                    "rl case {c}: {key} metrics ours {ours}, cookbook {}",
                    want["metrics"]
                ));
            }
            let ours: Vec<Value> = data.iter().map(datum_json).collect();
            if let Some(i) = ours
                .iter()
                .zip(want["data"].as_array().unwrap())
                .position(|(a, b)| a != b)
            {
                diffs.push(format!(
                    "rl case {c}: {key} datum {i}: ours {}, cookbook {}",
                    ours[i], want["data"][i]
                ));
            }
            checked += ours.len() + 1;
        }
    }
    checked
}

fn group(v: &Value) -> TrajectoryGroup {
    let turn = |x: &Value| Transition {
        ob: ModelInput::from_ints(serde_json::from_value(x["ob"].clone()).unwrap()),
        tokens: serde_json::from_value(x["ac"].clone()).unwrap(),
        logprobs: x["logprobs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| l.as_f64().unwrap() as f32)
            .collect(),
        sequence_id: x["sequence_id"].as_str().map(String::from),
        reward: x["reward"].as_f64().unwrap(),
        prompt_cache_hit_tokens: x["cached"].as_u64().unwrap(),
        metrics: metric_list(&x["metrics"]),
    };
    TrajectoryGroup {
        trajectories: v["trajectories"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| Trajectory {
                transitions: t.as_array().unwrap().iter().map(turn).collect(),
            })
            .collect(),
        final_rewards: serde_json::from_value(v["final_rewards"].clone()).unwrap(),
        metrics: v["metrics"]
            .as_array()
            .unwrap()
            .iter()
            .map(metric_list)
            .collect(),
    }
}

/// A metrics dict (numbers, or null for not measured), in its order.
fn metric_list(v: &Value) -> Vec<(String, Option<f64>)> {
    v.as_object()
        .unwrap()
        .iter()
        .map(|(k, x)| (k.clone(), x.as_f64()))
        .collect()
}

/// A datum in the oracle's JSON form.
fn datum_json(d: &Datum) -> Value {
    let mut inputs = serde_json::Map::new();
    for (k, t) in d.loss_fn_inputs.iter() {
        let (dtype, data) = match &t.values {
            TensorValues::Float32(v) => (
                "float32",
                v.iter()
                    .map(|&x| serde_json::json!(f64::from(x)))
                    .collect::<Vec<_>>(),
            ),
            TensorValues::Int64(v) => ("int64", v.iter().map(|&x| serde_json::json!(x)).collect()),
        };
        inputs.insert(
            k.to_string(),
            serde_json::json!({"dtype": dtype, "shape": t.shape, "data": data}),
        );
    }
    let span = |s: &ProvenanceSpan| match s {
        ProvenanceSpan::PromptTokens {
            sequence_id,
            offset,
            length,
        } => {
            serde_json::json!({"type": "prompt_tokens", "sequence_id": sequence_id, "offset": offset, "length": length})
        }
        ProvenanceSpan::SampledTokens {
            sequence_id,
            offset,
            length,
        } => {
            serde_json::json!({"type": "sampled_tokens", "sequence_id": sequence_id, "offset": offset, "length": length})
        }
    };
    let mut out = serde_json::json!({
        "tokens": d.model_input.to_ints().unwrap(),
        "chunks": d.model_input.chunks.len(),
        "loss_fn_inputs": inputs,
    });
    if let (Some(m), Some(l)) = (&d.model_input_spans, &d.loss_fn_input_spans) {
        out["model_input_spans"] = m.iter().map(span).collect();
        out["loss_fn_input_spans"] = l.iter().map(span).collect();
    }
    out
}

/// Metric lists equal key for key, in order, numbers by value (an int and the same float
/// are not equal: Python writes them differently).
fn same_metrics(a: &Value, b: &Value) -> bool {
    a == b
}

/// `truncate_metrics(from_step)` of a run's `metrics.jsonl`: which rows it keeps.
fn truncations(expected: &Value, diffs: &mut Vec<String>) -> usize {
    let rows = rows(expected, "truncations");
    for r in rows {
        let (text, from) = (
            r["text"].as_str().unwrap(),
            r["from_step"].as_u64().unwrap(),
        );
        let ours = tinker_cookbook::checkpoints::truncate_metrics(text, from);
        let theirs = match r["dropped"].as_u64().unwrap() {
            0 => None,
            _ => Some((
                format!("metrics.jsonl.pre_resume_{from:06}"),
                r["kept"].as_str().unwrap().to_string(),
            )),
        };
        if ours != theirs {
            diffs.push(format!(
                "truncate_metrics({from}): ours {ours:?}, the cookbook's {theirs:?}"
            ));
        }
    }
    rows.len()
}
