//! Reinforcement learning's step metrics, as `rl/metric_util.py` and `rl/metrics.py`
//! compute them: the trajectories' (`env/<tag>/…`, `env/all/…`: tokens per turn, totals,
//! the mean reward, the environments' own metrics, the groups' mix) and the policy's drift
//! between sampling and training (`optim/kl_sample_train_v1`, `_v2`, `optim/entropy`), with
//! numpy's and torch's summation orders so that the values are the cookbook's to the bit.

use serde_json::{json, Value as Json};
use tinker_core::types::Datum;

use crate::nll::floats;
use crate::rl::{torch_sum, TrajectoryGroup};

/// `np.mean` of float64 values: numpy's pairwise sum over the whole array, over its length.
pub fn numpy_mean(x: &[f64]) -> f64 {
    pairwise_sum(x) / x.len() as f64
}

/// numpy's `pairwise_sum`: a plain sum below 8 values, 8 accumulators up to 128, halves
/// (cut at a multiple of 8) above.
fn pairwise_sum(a: &[f64]) -> f64 {
    let n = a.len();
    if n < 8 {
        return a.iter().fold(0.0, |s, x| s + x);
    }
    if n <= 128 {
        let mut r: [f64; 8] = a[..8].try_into().expect("8 values");
        let whole = n - n % 8;
        for chunk in a[8..whole].chunks_exact(8) {
            for (acc, x) in r.iter_mut().zip(chunk) {
                *acc += x;
            }
        }
        let res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        return a[whole..].iter().fold(res, |s, x| s + x);
    }
    let half = n / 2 - (n / 2) % 8;
    pairwise_sum(&a[..half]) + pairwise_sum(&a[half..])
}

/// `compute_trajectory_metrics`: `env/all/…` for every group and, when some tag selects a
/// strict subset of the groups, `env/<tag>/…` per tag first (tags in first-seen order).
/// `tags[g]` are group `g`'s `logging_tags()`.
pub fn trajectory_metrics(groups: &[TrajectoryGroup], tags: &[Vec<String>]) -> Vec<(String, Json)> {
    let mut by_tag: Vec<(&str, Vec<&TrajectoryGroup>)> = Vec::new();
    for (g, taglist) in groups.iter().zip(tags) {
        for tag in taglist {
            match by_tag.iter_mut().find(|(t, _)| t == tag) {
                Some((_, v)) => v.push(g),
                None => by_tag.push((tag, vec![g])),
            }
        }
    }
    let mut out = Vec::new();
    if by_tag.iter().any(|(_, v)| v.len() < groups.len()) {
        for (tag, gs) in &by_tag {
            out.extend(
                of(gs)
                    .into_iter()
                    .map(|(k, v)| (format!("env/{tag}/{k}"), v)),
            );
        }
    }
    let all: Vec<&TrajectoryGroup> = groups.iter().collect();
    out.extend(
        of(&all)
            .into_iter()
            .map(|(k, v)| (format!("env/all/{k}"), v)),
    );
    out
}

/// `_compute_trajectory_metrics` of some groups.
fn of(groups: &[&TrajectoryGroup]) -> Vec<(String, Json)> {
    let trajs = || groups.iter().flat_map(|g| &g.trajectories);
    let turns = || trajs().flat_map(|t| &t.transitions);
    let (n_turns, n_eps) = (turns().count(), trajs().count());
    let ac: usize = turns().map(|t| t.tokens.len()).sum();
    let ob: usize = turns().map(|t| t.ob.length().unwrap_or(0)).sum();
    let cached: u64 = turns().map(|t| t.prompt_cache_hit_tokens).sum();
    let per = |a: usize, b: usize| if b > 0 { a as f64 / b as f64 } else { 0.0 };
    let rewards: Vec<f64> = groups.iter().flat_map(|g| g.total_rewards()).collect();
    let mut m: Vec<(String, Json)> = vec![
        ("ac_tokens_per_turn".into(), json!(per(ac, n_turns))),
        ("ob_tokens_per_turn".into(), json!(per(ob, n_turns))),
        ("turns_per_episode".into(), json!(per(n_turns, n_eps))),
        ("total_episodes".into(), json!(n_eps)),
        ("total_turns".into(), json!(n_turns)),
        ("total_ac_tokens".into(), json!(ac)),
        ("total_ob_tokens".into(), json!(ob)),
        ("total_cached_ob_tokens".into(), json!(cached)),
        (
            "reward/total".into(),
            json!(if rewards.is_empty() {
                0.0
            } else {
                numpy_mean(&rewards)
            }),
        ),
    ];
    // `dict_mean` of the transitions' metrics, then the groups' per-trajectory ones.
    let dicts = turns()
        .map(|t| &t.metrics)
        .chain(groups.iter().flat_map(|g| &g.metrics));
    let mut means: Vec<(String, Vec<f64>)> = Vec::new();
    for d in dicts {
        for (k, v) in d.iter().filter_map(|(k, v)| Some((k, (*v)?))) {
            match means.iter_mut().find(|(key, _)| key == k) {
                Some((_, vs)) => vs.push(v),
                None => means.push((k.clone(), vec![v])),
            }
        }
    }
    upsert(
        &mut m,
        means.into_iter().map(|(k, vs)| (k, json!(numpy_mean(&vs)))),
    );
    let n = groups.len();
    let (mut mixed, mut good) = (0usize, 0usize);
    for g in groups {
        let r = g.total_rewards();
        if r.iter().any(|x| *x != r[0]) {
            mixed += 1;
        } else if r.first().is_some_and(|x| *x >= 0.5) {
            good += 1;
        }
    }
    let frac = |k: usize| if n == 0 { 0.0 } else { k as f64 / n as f64 };
    let by_group = [
        ("by_group/frac_mixed", frac(mixed)),
        ("by_group/frac_all_good", frac(good)),
        ("by_group/frac_all_bad", frac(n - mixed - good)),
    ];
    upsert(
        &mut m,
        by_group.into_iter().map(|(k, v)| (k.to_string(), json!(v))),
    );
    m
}

/// `dict.update`: a key already there keeps its place and takes the new value.
fn upsert(m: &mut Vec<(String, Json)>, new: impl IntoIterator<Item = (String, Json)>) {
    for (k, v) in new {
        match m.iter_mut().find(|(key, _)| *key == k) {
            Some((_, old)) => *old = v,
            None => m.push((k, v)),
        }
    }
}

/// `compute_kl_sample_train`: over the action tokens (`mask > 0`) of every datum, the mean
/// of sampling minus training logprobs, half the mean of its square, and minus the mean
/// sampling logprob, in float32 as torch computes them. `None` when no datum has an
/// action token (the cookbook asserts there is one).
pub fn kl_sample_train(data: &[Datum], training: &[Vec<f32>]) -> Option<[(&'static str, f64); 3]> {
    let (mut diffs, mut sampled) = (Vec::new(), Vec::new());
    for (d, train) in data.iter().zip(training) {
        let (lp, mask) = (floats(d, "logprobs"), floats(d, "mask"));
        for ((s, m), t) in lp.iter().zip(mask).zip(train) {
            if *m > 0.0 {
                diffs.push(s - t);
                sampled.push(*s);
            }
        }
    }
    if diffs.is_empty() {
        return None;
    }
    let mean = |x: &[f32]| torch_sum(x) / x.len() as f32;
    let squares: Vec<f32> = diffs.iter().map(|d| d * d).collect();
    Some([
        ("optim/kl_sample_train_v1", f64::from(mean(&diffs))),
        ("optim/kl_sample_train_v2", 0.5 * f64::from(mean(&squares))),
        ("optim/entropy", -f64::from(mean(&sampled))),
    ])
}

/// `RLTestSetEvaluator`'s metrics: the test groups' trajectory metrics, each key under
/// `name/` (`test/env/all/reward/total`).
pub fn test_set_metrics(
    groups: &[TrajectoryGroup],
    tags: &[Vec<String>],
    name: &str,
) -> Vec<(String, Json)> {
    if groups.is_empty() {
        return Vec::new();
    }
    trajectory_metrics(groups, tags)
        .into_iter()
        .map(|(k, v)| (format!("{name}/{k}"), v))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rl::{Trajectory, Transition};
    use tinker_core::types::ModelInput;

    #[test]
    fn numpy_sums_pairwise() {
        let small = [0.1, 0.2, 0.3];
        assert_eq!(numpy_mean(&small), ((0.0 + 0.1) + 0.2 + 0.3) / 3.0);
        let pair8 = |r: &[f64]| ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        // 16 values: two rows of 8 accumulators; 10: one row, then the tail in order.
        let x: Vec<f64> = (0..16).map(|i| i as f64 * 0.1).collect();
        let rows: Vec<f64> = (0..8).map(|j| x[j] + x[8 + j]).collect();
        assert_eq!(pairwise_sum(&x), pair8(&rows));
        assert_eq!(pairwise_sum(&x[..10]), pair8(&x[..8]) + x[8] + x[9]);
    }

    fn group(rewards: &[f64], metric: Option<f64>) -> TrajectoryGroup {
        let t = |r: f64| Trajectory {
            transitions: vec![Transition {
                ob: ModelInput::from_ints(vec![1, 2, 3]),
                tokens: vec![4, 5],
                logprobs: vec![-1.0, -2.0],
                sequence_id: None,
                reward: r,
                prompt_cache_hit_tokens: 1,
                metrics: vec![("correct".into(), metric)],
            }],
        };
        TrajectoryGroup {
            trajectories: rewards.iter().map(|&r| t(r)).collect(),
            final_rewards: vec![0.0; rewards.len()],
            metrics: vec![Vec::new(); rewards.len()],
        }
    }

    #[test]
    fn trajectory_metrics_per_tag_then_all() {
        let groups = [group(&[1.0, 0.0], Some(1.0)), group(&[1.0, 1.0], None)];
        let tags = [vec!["a".to_string()], vec!["b".to_string()]];
        let m = trajectory_metrics(&groups, &tags);
        let keys: Vec<&str> = m.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys[0], "env/a/ac_tokens_per_turn");
        assert!(keys.contains(&"env/b/by_group/frac_all_good"));
        let all = |k: &str| {
            m.iter()
                .find(|(key, _)| key == &format!("env/all/{k}"))
                .unwrap()
                .1
                .clone()
        };
        assert_eq!(all("total_episodes"), json!(4));
        assert_eq!(all("reward/total"), json!(0.75));
        assert_eq!(all("correct"), json!(1.0));
        assert_eq!(
            (all("by_group/frac_mixed"), all("by_group/frac_all_good")),
            (json!(0.5), json!(0.5))
        );
        // One tag on every group: only env/all.
        let same = [vec!["p".to_string()], vec!["p".to_string()]];
        assert!(trajectory_metrics(&groups, &same)
            .iter()
            .all(|(k, _)| k.starts_with("env/all/")));
    }
}
