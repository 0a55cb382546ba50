//! `rl.train`'s off-policy mode (`async_config`, the cookbook's `do_async_training`): the
//! bookkeeping that decides, while its driver samples and trains concurrently. Rollouts
//! take one of [`Rl::slots`] slots (`groups_per_batch · (max_steps_off_policy + 1)`
//! groups started and not trained); a completed group waits in `pending` with the step of
//! the weights it was sampled on; each step trains the `groups_per_batch` oldest (a
//! smaller last batch once sampling is over), then frees their slots. Nothing completed is
//! dropped for being stale; constant-reward groups are dropped as they complete when asked
//! (their sampling counted as discarded).
//!
//! ```text
//! async_start → save (both) → a sampler on it
//! workers: complete(group, sampler step) → kept (slot held) or dropped (slot freed)
//! training: batch_ready → prepare_async → train → finish → [reuse | new sampler] → free slots
//! evaluations: eval_due_at(sampler step) → eval_event_line
//! ```

use serde_json::{json, Map, Value as Json};
use tinker_core::types::ModelInput;
use tinker_support::input::InputError;

use crate::rl::TrajectoryGroup;
use crate::rl_loop::{rollout_usage, AsyncConfig, EvalPart, Rl, RlSave};

impl Rl {
    fn async_config(&self) -> Result<AsyncConfig, InputError> {
        self.cfg
            .async_config
            .ok_or_else(|| InputError::type_error("async_config", "the run is not async"))
    }

    /// The rollout slots: how many groups may be started and not yet trained.
    pub fn slots(&self) -> u64 {
        self.cfg
            .async_config
            .map_or(0, |a| a.groups_per_batch * (a.max_steps_off_policy + 1))
    }

    /// The save before the first step (its sampler is the first rollouts'), named after
    /// the step the run starts at.
    pub fn async_start(&self) -> RlSave {
        self.save_at(self.start, self.cfg.ttl_seconds)
    }

    /// A group completed on the weights of `sampler_step`: kept for training (true), or
    /// dropped for constant rewards (false; its sampling counted as discarded) or for having
    /// a single trajectory under a dropping strategy (an error otherwise).
    pub fn complete(
        &mut self,
        group: TrajectoryGroup,
        tags: Vec<String>,
        sampler_step: u64,
    ) -> Result<bool, InputError> {
        let Some(group) = self.single_trajectory_groups(vec![group])?.pop() else {
            return Ok(false);
        };
        let r = group.total_rewards();
        if self.cfg.remove_constant_reward_groups && r.iter().all(|x| *x == r[0]) {
            let u = rollout_usage(std::slice::from_ref(&group));
            self.cumulative.add(u);
            self.discarded.add(u);
            return Ok(false);
        }
        self.pending.push((sampler_step, group, tags));
        Ok(true)
    }

    /// Whether a step can be trained: a full batch has completed, or sampling is over
    /// (`workers_done`) and some groups are left.
    pub fn batch_ready(&self, workers_done: bool) -> bool {
        let g = self.cfg.async_config.map_or(1, |a| a.groups_per_batch) as usize;
        self.pending.len() >= g || (workers_done && !self.pending.is_empty())
    }

    /// The step after the last (`max_steps`, or the dataset's batches times `num_epochs`).
    pub fn end_step(&self) -> u64 {
        self.end
    }

    /// Whether steps remain to train.
    pub fn steps_left(&self) -> bool {
        self.next < self.end
    }

    /// The next step on the oldest completed groups: its index, the sequences its KL term
    /// scores (as [`Rl::prepare`]) and how many groups it trains (the slots to free).
    #[allow(clippy::type_complexity)]
    pub fn prepare_async(&mut self) -> Result<(u64, Vec<(ModelInput, usize)>, usize), InputError> {
        let g = self.async_config()?.groups_per_batch as usize;
        if !self.steps_left() || self.pending.is_empty() {
            return Err(InputError::type_error("prepare_async", "no step to train"));
        }
        let step = self.next;
        self.next += 1;
        // A stable sort: among groups of the same weights, the first completed first.
        self.pending.sort_by_key(|p| p.0);
        let batch: Vec<_> = self.pending.drain(..g.min(self.pending.len())).collect();
        let header = self.async_header(step, batch.iter().map(|b| b.0).collect());
        let n = batch.len();
        let (groups, tags): (Vec<_>, Vec<_>) = batch.into_iter().map(|(_, g, t)| (g, t)).unzip();
        let asked = self.assemble(groups, tags, vec![0; n], Some(header))?;
        Ok((step, asked, n))
    }

    /// The line's first metrics: the step, rate and progress, then the weights' steps the
    /// groups were sampled on and their staleness.
    fn async_header(&self, step: u64, steps: Vec<u64>) -> Map<String, Json> {
        let stats = |x: &[u64]| {
            let (max, min) = (x.iter().max().copied(), x.iter().min().copied());
            let mean = x.iter().sum::<u64>() as f64 / x.len() as f64;
            (json!(max), json!(min), json!(mean))
        };
        let mut m = Map::new();
        m.insert("step".into(), json!(step));
        m.insert("training_client/step".into(), json!(step));
        m.insert("optim/lr".into(), json!(self.cfg.learning_rate));
        m.insert(
            "progress/done_frac".into(),
            json!((step + 1) as f64 / self.end as f64),
        );
        let (max, min, mean) = stats(&steps);
        m.insert("sampling_client/step_max".into(), max);
        m.insert("sampling_client/step_min".into(), min);
        m.insert("sampling_client/step_mean".into(), mean);
        let stale: Vec<u64> = steps.iter().map(|s| step - s).collect();
        let (max, min, mean) = stats(&stale);
        m.insert("async/staleness_max".into(), max);
        m.insert("async/staleness_min".into(), min);
        m.insert("async/staleness_mean".into(), mean);
        m
    }

    /// `_should_run_evals` with the evaluations' end step (`None`: no final evaluation).
    pub fn eval_due_at(&self, step: u64, end: Option<u64>) -> bool {
        self.evaluators
            && self.cfg.eval_every > 0
            && (Some(step) == end || step % self.cfg.eval_every == 0)
    }

    /// Whether the step that completes `step` may keep the current sampler, when sampling
    /// is over (no evaluation of its weights due: `SamplingClientReuse`).
    pub fn may_reuse(&self, step: u64) -> bool {
        !self.eval_due_at(step, (self.end > self.start).then_some(self.end))
    }

    /// The evaluation of the weights of `step` as its event line: the metrics, the
    /// snapshot's coordinates (`eval/snapshot/training_step`, `…/elapsed_seconds`: the
    /// seconds from the start of training to the snapshot), `eval/completed_elapsed_seconds`,
    /// and each metric again under `eval/by_step/` and `eval/by_time/`.
    pub fn eval_event_line(
        &self,
        step: u64,
        parts: Vec<EvalPart>,
        snapshot_seconds: f64,
        completed_seconds: f64,
    ) -> Map<String, Json> {
        let evals = crate::rl_loop::merge(parts);
        let mut m = Map::new();
        m.insert("step".into(), json!(step));
        m.extend(evals.clone());
        m.insert("eval/snapshot/training_step".into(), json!(step as f64));
        m.insert(
            "eval/snapshot/elapsed_seconds".into(),
            json!(snapshot_seconds),
        );
        m.insert(
            "eval/completed_elapsed_seconds".into(),
            json!(completed_seconds),
        );
        for axis in ["step", "time"] {
            for (k, v) in &evals {
                m.insert(format!("eval/by_{axis}/{k}"), v.clone());
            }
        }
        // `metrics | {step_metric: step}`: the coordinate again, as the step's integer.
        m.insert("eval/snapshot/training_step".into(), json!(step));
        m
    }
}

/// The groups of one completion (`[group]` JSON as `groups_from_json` reads it).
pub fn one_group(v: &Json) -> Result<(TrajectoryGroup, Vec<String>), InputError> {
    let (mut g, mut t) = crate::rl_loop::groups_from_json(v)?;
    if g.len() != 1 {
        return Err(InputError::range_error(
            "rollouts",
            format!("must hold one group, got {}", g.len()),
        ));
    }
    Ok((g.remove(0), t.remove(0)))
}
