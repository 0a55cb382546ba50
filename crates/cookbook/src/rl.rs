//! Reinforcement learning's data processing, as `rl/data_processing.py` does it: group-centred
//! advantages, trajectories turned into training datums (`trajectory_to_data`,
//! `assemble_training_data`, with provenance spans), and groups of constant reward left out.
//! The loop that samples the trajectories and trains on the datums is not here yet (issue 34).
//! Compared with the cookbook's own functions on random groups by `make test-cookbook`
//! (tests/cookbook/oracle.py → examples/parity.rs): the same datums, bit for bit.

use tinker_core::types::{
    Datum, LossFnInputs, ModelInput, ModelInputChunk, ProvenanceSpan, TensorData,
};
use tinker_support::input::InputError;

/// One turn of an episode: the observation the policy saw, what it sampled, and the reward.
#[derive(Debug, Clone, PartialEq)]
pub struct Transition {
    /// The observation (the sampling request's prompt).
    pub ob: ModelInput,
    /// The sampled tokens.
    pub tokens: Vec<u32>,
    /// Their logprobs under the sampler.
    pub logprobs: Vec<f32>,
    /// The sampled sequence's id (provenance), when the sampler returned one.
    pub sequence_id: Option<String>,
    /// The step's reward.
    pub reward: f64,
    /// The sampler's `prompt_cache_hit_tokens`.
    pub prompt_cache_hit_tokens: u64,
    /// The step's metrics, in order (`None`: not measured). `parse_error_masked` of 1 or
    /// more masks the turn: its tokens carry no training signal.
    pub metrics: Vec<(String, Option<f64>)>,
}

impl Transition {
    /// Whether the turn is masked (`parse_error_masked >= 1`).
    pub fn masked(&self) -> bool {
        self.metrics
            .iter()
            .any(|(k, v)| k == "parse_error_masked" && v.is_some_and(|x| x >= 1.0))
    }
}

/// An episode's turns.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Trajectory {
    /// The turns, in order.
    pub transitions: Vec<Transition>,
}

/// A group of trajectories sampled for the same problem, with the group's final rewards.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TrajectoryGroup {
    /// The trajectories.
    pub trajectories: Vec<Trajectory>,
    /// `compute_group_rewards`' reward of each trajectory.
    pub final_rewards: Vec<f64>,
    /// `compute_group_rewards`' metrics of each trajectory.
    pub metrics: Vec<Vec<(String, Option<f64>)>>,
}

impl TrajectoryGroup {
    /// `get_total_rewards`: each trajectory's step rewards summed, plus its final reward.
    pub fn total_rewards(&self) -> Vec<f64> {
        let steps = self
            .trajectories
            .iter()
            .map(|t| t.transitions.iter().map(|x| x.reward).sum::<f64>());
        steps.zip(&self.final_rewards).map(|(s, f)| s + f).collect()
    }
}

/// `compute_advantages`: each group's rewards minus their mean, in float32 as torch computes
/// them (`torch.tensor(rewards) - torch.tensor(rewards).mean()`).
pub fn advantages(groups: &[TrajectoryGroup]) -> Vec<Vec<f32>> {
    groups
        .iter()
        .map(|g| {
            let r: Vec<f32> = g.total_rewards().iter().map(|&x| x as f32).collect();
            let mean = torch_sum(&r) / r.len() as f32;
            r.iter().map(|x| x - mean).collect()
        })
        .collect()
}

/// `torch.sum` of a float32 vector on the CPU, in its order: 8-lane vectors summed with
/// four interleaved accumulators under a cascade, the tail, then the lanes (torch's
/// `cascade_sum` with AVX2's width, its default dispatch). A different order rounds
/// differently in the last bit.
pub fn torch_sum(x: &[f32]) -> f32 {
    const V: usize = 8;
    let n = x.len();
    if n < V {
        return row_sum(n, |i, _| x[i], 1)[0];
    }
    let nv = n / V;
    let lanes = row_sum(nv, |j, l| x[j * V + l], V);
    let tail = x[V * nv..].iter().fold(0f32, |a, b| a + b);
    lanes.iter().fold(tail, |a, b| a + b)
}

/// Sums `size` rows of `width` lanes (`load(row, lane)`) with four interleaved accumulators.
fn row_sum(size: usize, load: impl Fn(usize, usize) -> f32, width: usize) -> Vec<f32> {
    let m = size / 4;
    let mut acc: Vec<Vec<f32>> = (0..4)
        .map(|k| multi_row_sum(m, |i, l| load(4 * i + k, l), width))
        .collect();
    for i in m * 4..size {
        for (l, a) in acc[0].iter_mut().enumerate() {
            *a += load(i, l);
        }
    }
    let (first, rest) = acc.split_at_mut(1);
    for r in rest.iter() {
        add_into(&mut first[0], r);
    }
    acc.swap_remove(0)
}

/// torch's `multi_row_sum`: a four-level cascade over `size` rows.
fn multi_row_sum(size: usize, load: impl Fn(usize, usize) -> f32, width: usize) -> Vec<f32> {
    const LEVELS: usize = 4;
    let ceil_log2 = |x: usize| {
        if x <= 1 {
            0
        } else {
            (usize::BITS - (x - 1).leading_zeros()) as usize
        }
    };
    let level_power = 4.max(ceil_log2(size) / LEVELS);
    let (step, mask) = (1usize << level_power, (1usize << level_power) - 1);
    let mut acc = vec![vec![0f32; width]; LEVELS];
    let mut i = 0;
    while i + step <= size {
        for _ in 0..step {
            for (l, a) in acc[0].iter_mut().enumerate() {
                *a += load(i, l);
            }
            i += 1;
        }
        for j in 1..LEVELS {
            let (lower, upper) = acc.split_at_mut(j);
            add_into(&mut upper[0], &lower[j - 1]);
            lower[j - 1].fill(0.0);
            if i & (mask << (j * level_power)) != 0 {
                break;
            }
        }
    }
    while i < size {
        for (l, a) in acc[0].iter_mut().enumerate() {
            *a += load(i, l);
        }
        i += 1;
    }
    let (first, rest) = acc.split_at_mut(1);
    for r in rest.iter() {
        add_into(&mut first[0], r);
    }
    acc.swap_remove(0)
}

/// `dst[l] += src[l]`, lane by lane.
fn add_into(dst: &mut [f32], src: &[f32]) {
    for (a, b) in dst.iter_mut().zip(src) {
        *a += b;
    }
}

/// The sequence a datum is being built from (`SequenceAccumulator`).
#[derive(Default)]
struct Acc {
    tokens: Vec<u32>,
    logprobs: Vec<f32>,
    advantages: Vec<f32>,
    mask: Vec<f32>,
    /// Whether each token is an action's (the cookbook's advantage lists hold the int 0 for
    /// observation tokens, so a datum with no action token after the first position has
    /// int64 advantages: `torch.tensor([0, 0])`).
    action: Vec<bool>,
    /// Where each token came from, while every action so far has a sequence id.
    spans: Option<Vec<ProvenanceSpan>>,
}

impl Acc {
    fn new(provenance: bool) -> Self {
        Acc {
            spans: provenance.then(Vec::new),
            ..Acc::default()
        }
    }

    /// The datum of the sequence so far: inputs without the last token, targets and the
    /// per-token inputs without the first.
    fn datum(self) -> Result<Datum, InputError> {
        let n = self.tokens.len();
        if n < 2 {
            return Err(InputError::range_error(
                "trajectory",
                format!("makes a sequence of {n} token(s): a datum needs at least two"),
            ));
        }
        let mut inputs = LossFnInputs::new();
        let tail = |v: Vec<f32>| TensorData::from_f32(v[1..].to_vec()).with_shape(vec![n - 1]);
        let targets = self.tokens[1..].iter().map(|&t| i64::from(t)).collect();
        inputs.insert(
            "target_tokens",
            TensorData::from_i64(targets).with_shape(vec![n - 1]),
        );
        inputs.insert("logprobs", tail(self.logprobs));
        let advantages = if self.action[1..].contains(&true) {
            tail(self.advantages)
        } else {
            TensorData::from_i64(vec![0; n - 1]).with_shape(vec![n - 1])
        };
        inputs.insert("advantages", advantages);
        inputs.insert("mask", tail(self.mask));
        let mut d = Datum::new(ModelInput::from_ints(self.tokens[..n - 1].to_vec()), inputs);
        let Some(spans) = self.spans.filter(|s| !s.is_empty()) else {
            return Ok(d);
        };
        let targets = drop_first(&spans);
        if targets
            .iter()
            .any(|s| matches!(s, ProvenanceSpan::SampledTokens { .. }))
        {
            d.model_input_spans = Some(drop_last(&spans));
            d.loss_fn_input_spans = Some(targets);
        }
        Ok(d)
    }
}

fn span_len(s: &ProvenanceSpan) -> u64 {
    match s {
        ProvenanceSpan::PromptTokens { length, .. }
        | ProvenanceSpan::SampledTokens { length, .. } => *length,
    }
}

/// The spans with their first position dropped.
fn drop_first(spans: &[ProvenanceSpan]) -> Vec<ProvenanceSpan> {
    let mut out = spans.to_vec();
    match out.first_mut() {
        Some(s) if span_len(s) == 1 => {
            out.remove(0);
        }
        Some(
            ProvenanceSpan::PromptTokens { offset, length, .. }
            | ProvenanceSpan::SampledTokens { offset, length, .. },
        ) => {
            *offset += 1;
            *length -= 1;
        }
        None => {}
    }
    out
}

/// The spans with their last position dropped.
fn drop_last(spans: &[ProvenanceSpan]) -> Vec<ProvenanceSpan> {
    let mut out = spans.to_vec();
    match out.last_mut() {
        Some(s) if span_len(s) == 1 => {
            out.pop();
        }
        Some(
            ProvenanceSpan::PromptTokens { length, .. }
            | ProvenanceSpan::SampledTokens { length, .. },
        ) => *length -= 1,
        None => {}
    }
    out
}

/// An observation's tokens (text only: an image in an RL observation is refused).
fn ob_tokens(ob: &ModelInput) -> Result<Vec<u32>, InputError> {
    let mut out = Vec::new();
    for c in &ob.chunks {
        match c {
            ModelInputChunk::EncodedText { tokens } => out.extend_from_slice(tokens),
            _ => {
                return Err(InputError::type_error(
                    "observation",
                    "has a chunk that is not text: RL trajectories of text only are supported",
                ))
            }
        }
    }
    Ok(out)
}

/// `trajectory_to_data`: one datum per run of turns whose observations extend the sequence
/// so far (a turn that does not starts a new datum), every action token weighted by the
/// trajectory's advantage (none for a masked turn).
pub fn trajectory_to_data(
    traj: &Trajectory,
    advantage: f32,
    provenance: bool,
) -> Result<Vec<Datum>, InputError> {
    let mut acc = Acc::new(provenance);
    let mut data = Vec::new();
    for t in &traj.transitions {
        let ob = ob_tokens(&t.ob)?;
        let delta = if acc.tokens.is_empty() {
            &ob[..]
        } else if ob.starts_with(&acc.tokens) {
            &ob[acc.tokens.len()..]
        } else {
            data.push(std::mem::replace(&mut acc, Acc::new(provenance)).datum()?);
            &ob[..]
        };
        if t.tokens.len() != t.logprobs.len() {
            return Err(InputError::range_error(
                "logprobs",
                format!(
                    "must have one per sampled token ({}), got {}",
                    t.tokens.len(),
                    t.logprobs.len()
                ),
            ));
        }
        match (&mut acc.spans, &t.sequence_id) {
            (Some(_), None) if !delta.is_empty() || !t.tokens.is_empty() => acc.spans = None,
            (Some(spans), Some(id)) => {
                if !delta.is_empty() {
                    let offset = acc.tokens.len() as u64;
                    spans.push(ProvenanceSpan::PromptTokens {
                        sequence_id: id.clone(),
                        offset,
                        length: delta.len() as u64,
                    });
                }
                if !t.tokens.is_empty() {
                    spans.push(ProvenanceSpan::SampledTokens {
                        sequence_id: id.clone(),
                        offset: 0,
                        length: t.tokens.len() as u64,
                    });
                }
            }
            _ => {}
        }
        let (mask, adv) = if t.masked() {
            (0.0, 0.0)
        } else {
            (1.0, advantage)
        };
        let (d, a) = (delta.len(), t.tokens.len());
        acc.tokens.extend_from_slice(delta);
        acc.tokens.extend_from_slice(&t.tokens);
        acc.logprobs
            .extend(std::iter::repeat_n(0.0, d).chain(t.logprobs.iter().copied()));
        acc.advantages
            .extend(std::iter::repeat_n(0.0, d).chain(std::iter::repeat_n(adv, a)));
        acc.mask
            .extend(std::iter::repeat_n(0.0, d).chain(std::iter::repeat_n(mask, a)));
        acc.action
            .extend(std::iter::repeat_n(false, d).chain(std::iter::repeat_n(true, a)));
    }
    if !acc.tokens.is_empty() {
        data.push(acc.datum()?);
    }
    Ok(data)
}

/// Training datums, and the `(group, trajectory)` each came from.
pub type Assembled = (Vec<Datum>, Vec<(usize, usize)>);

/// `assemble_training_data`: every trajectory's datums, group by group, with the
/// `(group, trajectory)` each came from.
pub fn assemble_training_data(
    groups: &[TrajectoryGroup],
    advantages: &[Vec<f32>],
    provenance: bool,
) -> Result<Assembled, InputError> {
    let (mut data, mut from) = (Vec::new(), Vec::new());
    for (gi, (g, adv)) in groups.iter().zip(advantages).enumerate() {
        for (ti, (t, a)) in g.trajectories.iter().zip(adv).enumerate() {
            let d = trajectory_to_data(t, *a, provenance)
                .map_err(|e| e.within(&format!("groups[{gi}].trajectories[{ti}]")))?;
            from.extend(std::iter::repeat_n((gi, ti), d.len()));
            data.extend(d);
        }
    }
    Ok((data, from))
}

/// `remove_constant_reward_groups`: the groups whose rewards differ (the first group alone
/// when every group's are all equal).
pub fn remove_constant_reward_groups(groups: Vec<TrajectoryGroup>) -> Vec<TrajectoryGroup> {
    let varied = |g: &TrajectoryGroup| {
        let r = g.total_rewards();
        r.iter().any(|x| *x != r[0])
    };
    if groups.iter().any(varied) {
        groups.into_iter().filter(varied).collect()
    } else {
        groups.into_iter().take(1).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn turn(ob: &[u32], ac: &[u32], seq: Option<&str>, reward: f64) -> Transition {
        Transition {
            ob: ModelInput::from_ints(ob.to_vec()),
            tokens: ac.to_vec(),
            logprobs: ac.iter().map(|&t| -(t as f32) / 10.0).collect(),
            sequence_id: seq.map(String::from),
            reward,
            prompt_cache_hit_tokens: 0,
            metrics: Vec::new(),
        }
    }

    fn floats(d: &Datum, k: &str) -> Vec<f32> {
        match &d.loss_fn_inputs.get(k).unwrap().values {
            tinker_core::types::TensorValues::Float32(v) => v.clone(),
            _ => panic!("{k} is not float32"),
        }
    }

    #[test]
    fn torch_sums_in_its_own_order() {
        // Small vectors: a fold, then 0+x0+x4+…+x1+x2+x3, then lanes (table from torch 2.15).
        let x = [1e8f32, 1.0, -1e8, 1.0, 3.0];
        assert_eq!(torch_sum(&x), ((((1e8f32 + 3.0) + 1.0) - 1e8) + 1.0));
        let y: Vec<f32> = (0..20).map(|i| i as f32 * 0.1).collect();
        let lanes: f32 = {
            let tail = y[16..].iter().fold(0f32, |a, b| a + b);
            (0..8).map(|l| y[l] + y[8 + l]).fold(tail, |a, b| a + b)
        };
        assert_eq!(torch_sum(&y), lanes);
    }

    #[test]
    fn advantages_are_centred_in_each_group() {
        let g = |r: &[f64]| TrajectoryGroup {
            trajectories: r
                .iter()
                .map(|&x| Trajectory {
                    transitions: vec![turn(&[1], &[2], None, x)],
                })
                .collect(),
            final_rewards: vec![0.0; r.len()],
            metrics: vec![Vec::new(); r.len()],
        };
        let a = advantages(&[g(&[1.0, 0.0, 0.0, 1.0]), g(&[0.5, 0.5])]);
        assert_eq!(a, vec![vec![0.5, -0.5, -0.5, 0.5], vec![0.0, 0.0]]);
        let kept = remove_constant_reward_groups(vec![g(&[1.0, 1.0]), g(&[0.0, 1.0])]);
        assert_eq!(kept, vec![g(&[0.0, 1.0])]);
        assert_eq!(
            remove_constant_reward_groups(vec![g(&[1.0, 1.0]), g(&[2.0, 2.0])]),
            vec![g(&[1.0, 1.0])]
        );
    }

    #[test]
    fn turns_that_extend_the_sequence_make_one_datum_and_others_a_new_one() {
        let t = Trajectory {
            transitions: vec![
                turn(&[1, 2, 3], &[4, 5], Some("s1"), 0.0),
                turn(&[1, 2, 3, 4, 5, 6], &[7], Some("s2"), 1.0),
                turn(&[9, 8], &[7], Some("s3"), 0.0),
            ],
        };
        let d = trajectory_to_data(&t, 0.5, true).unwrap();
        assert_eq!(d.len(), 2);
        assert_eq!(d[0].model_input.to_ints().unwrap(), [1, 2, 3, 4, 5, 6]);
        assert_eq!(floats(&d[0], "advantages"), [0.0, 0.0, 0.5, 0.5, 0.0, 0.5]);
        assert_eq!(floats(&d[0], "mask"), [0.0, 0.0, 1.0, 1.0, 0.0, 1.0]);
        assert_eq!(floats(&d[0], "logprobs"), [0.0, 0.0, -0.4, -0.5, 0.0, -0.7]);
        let p = |id: &str, offset, length| ProvenanceSpan::PromptTokens {
            sequence_id: id.into(),
            offset,
            length,
        };
        let s = |id: &str, offset, length| ProvenanceSpan::SampledTokens {
            sequence_id: id.into(),
            offset,
            length,
        };
        assert_eq!(
            d[0].model_input_spans,
            Some(vec![p("s1", 0, 3), s("s1", 0, 2), p("s2", 5, 1)])
        );
        assert_eq!(
            d[0].loss_fn_input_spans,
            Some(vec![
                p("s1", 1, 2),
                s("s1", 0, 2),
                p("s2", 5, 1),
                s("s2", 0, 1)
            ])
        );
        assert_eq!(d[1].model_input.to_ints().unwrap(), [9, 8]);
        // A datum without an action token: its advantages are the cookbook's ints.
        let silent = Trajectory {
            transitions: vec![turn(&[1, 2, 3], &[], None, 0.0)],
        };
        let d = &trajectory_to_data(&silent, 0.5, true).unwrap()[0];
        let adv = &d.loss_fn_inputs.get("advantages").unwrap().values;
        assert_eq!(adv, &tinker_core::types::TensorValues::Int64(vec![0, 0]));
        // A turn that starts a sequence of one token cannot be trained on.
        let short = Trajectory {
            transitions: vec![turn(&[1, 2], &[3], None, 0.0), turn(&[7], &[], None, 0.0)],
        };
        let e = trajectory_to_data(&short, 0.0, true)
            .unwrap_err()
            .to_string();
        assert!(e.contains("1 token(s): a datum needs at least two"), "{e}");
        // Without provenance, or with an action that has no sequence id: no spans.
        assert_eq!(
            trajectory_to_data(&t, 0.5, false).unwrap()[0].model_input_spans,
            None
        );
        let mut anonymous = t.clone();
        anonymous.transitions[1].sequence_id = None;
        assert_eq!(
            trajectory_to_data(&anonymous, 0.5, true).unwrap()[0].loss_fn_input_spans,
            None
        );
    }
}
