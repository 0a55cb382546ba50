//! `rl.train.main` in synchronous mode as a state machine: [`Rl`] decides what the
//! cookbook's loop decides (the client to create, which dataset batch each step rolls out,
//! the datums and Adam parameters of its training, when to save, the `metrics.jsonl` and
//! `checkpoints.jsonl` lines, where a resumed run starts) and its driver (JS, where the
//! environments live) samples, trains and saves in the cookbook's order:
//!
//! ```text
//! start → [truncate metrics] → a sampler on the weights →
//!   loop: next_step → roll out the batch's groups → train (forward_backward + optim_step
//!         per substep) → finish → [save (state and sampler) → saved → a sampler on the
//!         saved weights] or a sampler on the new weights → the step's metrics line
//!   end → [the final save → saved]
//! ```

use serde_json::{json, Map, Value as Json};
use tinker_core::types::{AdamParams, Datum, ModelInput};
use tinker_support::input::InputError;

use crate::checkpoints::{last_checkpoint, parse_records, record};
use crate::rl::{advantages, assemble_training_data, Trajectory, TrajectoryGroup, Transition};
use crate::rl_kl::{full_sequence, kl_penalty, teacher_kl};
use crate::rl_metrics::{kl_sample_train, test_set_metrics, trajectory_metrics};
use crate::sft::Start;

/// `rl.train.Config`'s fields that the synchronous loop reads, with the cookbook's defaults.
#[derive(Debug, Clone, PartialEq)]
pub struct RlConfig {
    /// `model_name`.
    pub model_name: String,
    /// `renderer_name` (the training run's user metadata when set).
    pub renderer_name: Option<String>,
    /// `load_checkpoint_path`.
    pub load_checkpoint_path: Option<String>,
    /// `learning_rate` (constant: the RL loop has no schedule).
    pub learning_rate: f64,
    /// `lora_rank` (32).
    pub lora_rank: u32,
    /// `loss_fn` (`importance_sampling`).
    pub loss_fn: String,
    /// `loss_fn_config` (none).
    pub loss_fn_config: Option<Map<String, Json>>,
    /// `num_substeps` (1): optimizer steps per batch.
    pub num_substeps: u64,
    /// `remove_constant_reward_groups` (false): groups whose rewards are all equal are not
    /// trained on (their sampling counted as discarded).
    pub remove_constant_reward_groups: bool,
    /// `save_every` (20).
    pub save_every: u64,
    /// `ttl_seconds` of periodic saves (604800; `None`: kept).
    pub ttl_seconds: Option<u64>,
    /// `num_epochs` (1).
    pub num_epochs: u64,
    /// `max_steps`.
    pub max_steps: Option<u64>,
    /// `kl_penalty_coef` (0 for `rl.train`: no penalty; 1 for distillation).
    pub kl_penalty_coef: f64,
    /// `kl_discount_factor` (0: not discounted).
    pub kl_discount_factor: f64,
    /// Which training method, and the samplers its KL term scores on.
    pub method: Method,
    /// `eval_every` (20; 0: never): evaluations before every this many steps (and, for
    /// `rl.train`, on the final weights).
    pub eval_every: u64,
    /// `async_config`: off-policy training (`rl_async`), `None` for the synchronous loop.
    pub async_config: Option<AsyncConfig>,
    /// Whether the rollout strategy skips failed groups (`catches_group_errors`): the run
    /// then counts rollout errors and skipped groups (`rollout_errors/…`).
    pub counts_rollout_errors: bool,
    /// `rolling_save_every` (0: none): state-only saves between the periodic ones.
    pub rolling_save_every: u64,
    /// `compute_post_kl`: each step's datums scored again on the new weights
    /// (`kl_pre_post_v1`, `kl_pre_post_v2`).
    pub compute_post_kl: bool,
    /// `rolling_ttl_seconds` (7200).
    pub rolling_ttl_seconds: u64,
}

/// `rl.train.AsyncConfig`: sampling runs up to `max_steps_off_policy` steps ahead of
/// training; each step trains `groups_per_batch` completed groups, oldest weights first.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AsyncConfig {
    /// `max_steps_off_policy`.
    pub max_steps_off_policy: u64,
    /// `groups_per_batch`.
    pub groups_per_batch: u64,
}

/// A sampler to score sequences on: a base model, with a checkpoint's weights when given
/// (`KLReferenceConfig`, `TeacherConfig`).
#[derive(Debug, Clone, PartialEq)]
pub struct Scorer {
    /// `base_model`.
    pub base_model: String,
    /// `load_checkpoint_path`.
    pub load_checkpoint_path: Option<String>,
}

/// The training method the loop runs.
#[derive(Debug, Clone, PartialEq)]
pub enum Method {
    /// `rl.train`, with the KL penalty's reference (`kl_reference_config`) when it has one.
    Rl {
        /// The reference policy.
        reference: Option<Scorer>,
    },
    /// `distillation.train_on_policy`: the reverse KL to each dataset's teacher, no token
    /// accounting, metrics kept on resume.
    Distillation {
        /// Each dataset's teacher.
        teachers: Vec<Scorer>,
    },
}

/// Another sampler's answer for a sequence to score: its prompt logprobs (the first
/// position dropped), the prompt tokens it had cached and the tokens it sampled.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Scored {
    /// The logprobs of positions 1…n.
    pub logprobs: Vec<f32>,
    /// `prompt_cache_hit_tokens`.
    pub cached: u64,
    /// Tokens the response sampled.
    pub sampled: u64,
}

impl RlConfig {
    /// The cookbook's defaults.
    pub fn new(model_name: &str, learning_rate: f64) -> Self {
        RlConfig {
            model_name: model_name.into(),
            renderer_name: None,
            load_checkpoint_path: None,
            learning_rate,
            lora_rank: 32,
            loss_fn: "importance_sampling".into(),
            loss_fn_config: None,
            num_substeps: 1,
            remove_constant_reward_groups: false,
            save_every: 20,
            ttl_seconds: Some(604_800),
            num_epochs: 1,
            max_steps: None,
            kl_penalty_coef: 0.0,
            kl_discount_factor: 0.0,
            method: Method::Rl { reference: None },
            eval_every: 20,
            async_config: None,
            counts_rollout_errors: false,
            rolling_save_every: 0,
            compute_post_kl: false,
            rolling_ttl_seconds: 7200,
        }
    }

    /// `records_stability_info`: samplers record what `stable_reinforce` trains on.
    pub fn records_stability_info(&self) -> bool {
        self.loss_fn == "stable_reinforce"
    }

    /// Whether the run counts tokens (`rl.train`'s `CostTracker`; distillation has none).
    fn counts_tokens(&self) -> bool {
        matches!(self.method, Method::Rl { .. })
    }

    /// Whether each step's datums are scored on another sampler (a KL term).
    fn scores(&self) -> bool {
        self.kl_penalty_coef > 0.0 && !matches!(self.method, Method::Rl { reference: None })
    }
}

/// The token counts of `CostTracker` (sampled, prefill cached, prefill uncached, trained).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Tokens(pub(crate) [u64; 4]);

const TOKEN_KEYS: [&str; 4] = ["sampled", "prefill_cached", "prefill_uncached", "trained"];

impl Tokens {
    fn json(&self) -> Json {
        let m: Map<String, Json> = TOKEN_KEYS
            .iter()
            .zip(self.0)
            .map(|(k, v)| (k.to_string(), json!(v)))
            .collect();
        Json::Object(m)
    }

    fn from_json(v: Option<&Json>) -> Self {
        let n = |k: &str| v.and_then(|v| v.get(k)).and_then(Json::as_u64).unwrap_or(0);
        Tokens(TOKEN_KEYS.map(n))
    }

    pub(crate) fn add(&mut self, o: Tokens) {
        for (a, b) in self.0.iter_mut().zip(o.0) {
            *a += b;
        }
    }
}

/// What a step trains on: each substep's datums (the `mask` left out, as the cookbook
/// sends them) and the optimizer's parameters.
#[derive(Debug, Clone)]
pub struct TrainOrder {
    /// The substeps' datums.
    pub substeps: Vec<Vec<Datum>>,
    /// `optim_step`'s parameters.
    pub adam: AdamParams,
}

/// A save to make: the state and the sampler weights under `name`.
#[derive(Debug, Clone, PartialEq)]
pub struct RlSave {
    /// The checkpoint's name.
    pub name: String,
    /// Its time to live (`None`: kept).
    pub ttl_seconds: Option<u64>,
    /// A rolling save: the state alone, made in the background; the previous rolling
    /// checkpoint is deleted once it is done.
    pub rolling: bool,
    state: Map<String, Json>,
}

/// The step being trained: its index, rollouts, their tags, each datum's dataset, its
/// datums, token usage, the KL term's metrics and (async) the line's first metrics.
pub(crate) struct InFlight {
    pub(crate) header: Option<Map<String, Json>>,
    step: u64,
    groups: Vec<TrajectoryGroup>,
    tags: Vec<Vec<String>>,
    datasets: Vec<usize>,
    data: Vec<Datum>,
    usage: Tokens,
    kl: Vec<(String, f64)>,
}

/// A synchronous RL run's state (see the module's documentation for its protocol).
pub struct Rl {
    pub(crate) cfg: RlConfig,
    /// Async: the completed groups not trained yet (the sampler step each was sampled
    /// on, the group, its tags), in the order they completed.
    pub(crate) pending: Vec<(u64, TrajectoryGroup, Vec<String>)>,
    /// The rollout errors and skipped groups so far.
    pub(crate) rollout_errors: RolloutErrors,
    /// The last rolling checkpoint's state path (deleted when the next one is saved).
    rolling_prev: Option<String>,
    /// `compute_post_kl`: the last step's line, datums and token usage, until they are
    /// scored on the new weights.
    post: Option<(Map<String, Json>, Vec<Datum>, Tokens)>,
    /// Whether the run has evaluators (its own and the datasets' test sets).
    pub(crate) evaluators: bool,
    /// The evaluations' metrics of the step about to run.
    evals: Map<String, Json>,
    pub(crate) n_batches: u64,
    pub(crate) start: u64,
    pub(crate) end: u64,
    pub(crate) next: u64,
    resume: Option<Map<String, Json>>,
    pub(crate) cumulative: Tokens,
    pub(crate) discarded: Tokens,
    pub(crate) step: Option<InFlight>,
    pub(crate) stopped: bool,
    /// The step whose state the last periodic save holds.
    saved_at: Option<u64>,
}

impl Rl {
    /// A run of `cfg`, resuming from the last record of `checkpoints` (the text of
    /// `checkpoints.jsonl`) that has a state. Its dataset's length comes later
    /// ([`Rl::set_batches`]: the dataset is built once the client is there).
    pub fn new(cfg: RlConfig, checkpoints: &str) -> Result<Self, InputError> {
        let resume = last_checkpoint(&parse_records(checkpoints)?, "state_path");
        let start = resume
            .as_ref()
            .and_then(|r| r.get("batch")?.as_u64())
            .unwrap_or(0);
        let tokens = |k: &str| Tokens::from_json(resume.as_ref().and_then(|r| r.get(k)));
        Ok(Rl {
            cumulative: tokens("cumulative_tokens"),
            discarded: tokens("discarded_tokens"),
            cfg,
            pending: Vec::new(),
            rollout_errors: RolloutErrors::default(),
            rolling_prev: None,
            post: None,
            evaluators: false,
            evals: Map::new(),
            n_batches: 0,
            start,
            end: 0,
            next: start,
            stopped: false,
            saved_at: None,
            resume,
            step: None,
        })
    }

    /// The dataset has `n` batches: the run's last step is set (`num_epochs` passes,
    /// `max_steps` at most).
    pub fn set_batches(&mut self, n: u64) -> Result<(), InputError> {
        if n == 0 {
            return Err(InputError::range_error(
                "dataset",
                "has no batch (its length is 0)",
            ));
        }
        let all = n * self.cfg.num_epochs;
        (self.n_batches, self.end) = (n, self.cfg.max_steps.map_or(all, |m| m.min(all)));
        Ok(())
    }

    /// Stops the run before its next step: the save that lets a restart resume there
    /// (none when it stopped before training anything). The cookbook has no such hook.
    pub fn stop(&mut self) -> Option<RlSave> {
        self.stopped = true;
        let at = self.next;
        self.end = at;
        // Nothing trained, or the last step's periodic save is already there.
        (at > self.start && self.saved_at != Some(at))
            .then(|| self.save(format!("{at:06}"), at, self.cfg.ttl_seconds))
    }

    /// The run's config.
    pub fn config(&self) -> &RlConfig {
        &self.cfg
    }

    /// The step the run goes on from (where a stopped run stopped).
    pub fn next_index(&self) -> u64 {
        self.next
    }

    /// How to create the training client, and its user metadata.
    pub fn start(&self) -> (Start, Option<(&'static str, &str)>) {
        let start = match (&self.resume, &self.cfg.load_checkpoint_path) {
            (Some(r), _) => Start::FromState {
                path: r["state_path"].as_str().unwrap_or_default().into(),
                with_optimizer: true,
            },
            (None, Some(p)) => Start::FromState {
                path: p.clone(),
                with_optimizer: false,
            },
            (None, None) => Start::Lora {
                base_model: self.cfg.model_name.clone(),
                rank: self.cfg.lora_rank,
            },
        };
        (
            start,
            self.cfg
                .renderer_name
                .as_deref()
                .map(|r| ("renderer_name", r)),
        )
    }

    /// `store.truncate_metrics(start_batch)` of a resumed run: `(backup name, kept text)`.
    /// Distillation keeps them all.
    pub fn truncate_metrics(&self, text: &str) -> Option<(String, String)> {
        self.resume.as_ref()?;
        if !self.cfg.counts_tokens() {
            return None;
        }
        crate::checkpoints::truncate_metrics(text, self.start)
    }

    /// The next step: `(step, the dataset batch it rolls out)`, or `None` when done.
    pub fn next_step(&mut self) -> Option<(u64, u64)> {
        (self.next < self.end).then(|| {
            self.next += 1;
            (self.next - 1, (self.next - 1) % self.n_batches)
        })
    }

    /// The step's rollouts (groups, each group's logging tags and dataset): the sequences
    /// its KL term scores, with the sampler to score each on (the reference, or its
    /// dataset's teacher), none when the run has no KL term. [`Rl::train`] follows.
    pub fn prepare(
        &mut self,
        groups: Vec<TrajectoryGroup>,
        tags: Vec<Vec<String>>,
        datasets: Vec<usize>,
    ) -> Result<Vec<(ModelInput, usize)>, InputError> {
        if self.step.is_some() {
            return Err(InputError::type_error(
                "prepare",
                "a step is already in flight",
            ));
        }
        if datasets.len() != groups.len() {
            return Err(InputError::range_error(
                "datasets",
                format!("{} for {} groups", datasets.len(), groups.len()),
            ));
        }
        let groups = self.single_trajectory_groups(groups)?;
        let groups = if self.cfg.remove_constant_reward_groups {
            self.drop_constant_groups(groups)
        } else {
            groups
        };
        self.assemble(groups, tags, datasets, None)
    }

    /// A group of one trajectory has an advantage of 0 (its reward minus its own mean):
    /// with no KL term it trains nothing. Refused naming it, or, when the rollout strategy
    /// drops groups, dropped and counted as skipped. (The cookbook trains it silently.)
    pub(crate) fn single_trajectory_groups(
        &mut self,
        groups: Vec<TrajectoryGroup>,
    ) -> Result<Vec<TrajectoryGroup>, InputError> {
        let signal_elsewhere = self.cfg.kl_penalty_coef > 0.0 || !self.cfg.counts_tokens();
        let single = |g: &TrajectoryGroup| g.trajectories.len() == 1;
        if signal_elsewhere || !groups.iter().any(single) {
            return Ok(groups);
        }
        if !self.cfg.counts_rollout_errors {
            let i = groups.iter().position(single).unwrap_or(0);
            return Err(InputError::range_error(
                format!("groups[{i}]"),
                "has a single trajectory: its advantage (its reward minus its group's mean) is always 0, so it would train nothing; make groups of 2 or more (num_envs)",
            ));
        }
        let (kept, dropped): (Vec<_>, Vec<_>) = groups.into_iter().partition(|g| !single(g));
        self.rollout_errors.ingest(&[], dropped.len() as u64);
        Ok(kept)
    }

    /// The groups' datums and token usage as the step in flight (with `header`, the line's
    /// first metrics, for an async step), and the sequences its KL term scores.
    pub(crate) fn assemble(
        &mut self,
        groups: Vec<TrajectoryGroup>,
        tags: Vec<Vec<String>>,
        datasets: Vec<usize>,
        header: Option<Map<String, Json>>,
    ) -> Result<Vec<(ModelInput, usize)>, InputError> {
        let adv = advantages(&groups);
        let (data, from) = assemble_training_data(&groups, &adv, true)?;
        let datasets: Vec<usize> = from.iter().map(|(g, _)| datasets[*g]).collect();
        let mut usage = rollout_usage(&groups);
        usage.0[3] = data
            .iter()
            .map(|d| d.model_input.length().unwrap_or(0) as u64)
            .sum();
        let asked = if self.cfg.scores() {
            let teacher = |i: usize| match self.cfg.method {
                Method::Rl { .. } => 0,
                Method::Distillation { .. } => datasets[i],
            };
            let seqs = data
                .iter()
                .map(full_sequence)
                .collect::<Result<Vec<_>, _>>()?;
            seqs.into_iter()
                .enumerate()
                .map(|(i, s)| (s, teacher(i)))
                .collect()
        } else {
            Vec::new()
        };
        self.step = Some(InFlight {
            header,
            step: self.next - 1,
            groups,
            tags,
            datasets,
            data,
            usage,
            kl: Vec::new(),
        });
        Ok(asked)
    }

    /// The prepared step's scores (one per sequence [`Rl::prepare`] asked for, in order;
    /// none when it asked for none): its datums with the KL term in their advantages,
    /// split into the substeps, and the optimizer's parameters.
    pub fn train(&mut self, scores: &[Scored]) -> Result<TrainOrder, InputError> {
        let cfg = &self.cfg;
        let f = self
            .step
            .as_mut()
            .ok_or_else(|| InputError::type_error("train", "no step prepared"))?;
        if cfg.scores() {
            let lps: Vec<Vec<f32>> = scores.iter().map(|s| s.logprobs.clone()).collect();
            let (coef, discount) = (cfg.kl_penalty_coef, cfg.kl_discount_factor);
            f.kl = match cfg.method {
                Method::Rl { .. } => {
                    let avg = kl_penalty(&mut f.data, &lps, coef, discount)?;
                    vec![("kl_policy_base".into(), avg)]
                }
                Method::Distillation { .. } => {
                    teacher_kl(&mut f.data, &lps, &f.datasets, coef, discount)?
                }
            };
            let cached: u64 = scores.iter().map(|s| s.cached).sum();
            let prompt: u64 = f
                .data
                .iter()
                .map(|d| d.model_input.length().unwrap_or(0) as u64 + 1)
                .sum();
            f.usage.0[0] += scores.iter().map(|s| s.sampled).sum::<u64>();
            f.usage.0[1] += cached;
            f.usage.0[2] += prompt - cached.min(prompt);
        } else if !scores.is_empty() {
            return Err(InputError::range_error("scores", "none were asked for"));
        }
        // `_check_provenance`: stable_reinforce needs every datum's provenance.
        if cfg.loss_fn == "stable_reinforce"
            && f.data.iter().any(|d| d.loss_fn_input_spans.is_none())
        {
            return Err(InputError::range_error(
                "loss_fn",
                "'stable_reinforce' needs provenance on every datum: one has none (an action without a Tinker sequence_id, or no sampled target); fix the data or train with another loss_fn",
            ));
        }
        let data = &f.data;
        let k = cfg.num_substeps.min(data.len() as u64).max(1) as usize;
        let edges: Vec<usize> = (0..=k).map(|i| i * data.len() / k).collect();
        let stripped = |d: &Datum| {
            let mut d = d.clone();
            d.loss_fn_inputs.remove("mask");
            d
        };
        let substeps = edges
            .windows(2)
            .map(|w| data[w[0]..w[1]].iter().map(stripped).collect())
            .collect();
        let adam = AdamParams {
            learning_rate: cfg.learning_rate,
            beta1: 0.9,
            beta2: 0.95,
            eps: 1e-8,
            ..AdamParams::default()
        };
        Ok(TrainOrder { substeps, adam })
    }

    /// `remove_constant_reward_groups` (the first group alone when all are constant), the
    /// dropped groups' sampling counted in the cumulative and discarded totals at once
    /// (`count_discarded_rollout`).
    pub(crate) fn drop_constant_groups(
        &mut self,
        groups: Vec<TrajectoryGroup>,
    ) -> Vec<TrajectoryGroup> {
        let varied = |g: &TrajectoryGroup| {
            let r = g.total_rewards();
            r.iter().any(|x| *x != r[0])
        };
        let any = groups.iter().any(varied);
        let mut kept = Vec::new();
        for (i, g) in groups.into_iter().enumerate() {
            if if any { varied(&g) } else { i == 0 } {
                kept.push(g);
            } else {
                let u = rollout_usage(std::slice::from_ref(&g));
                self.cumulative.add(u);
                self.discarded.add(u);
            }
        }
        kept
    }

    /// The loss function and its config for `forward_backward`.
    pub fn loss(&self) -> (&str, Option<&Map<String, Json>>) {
        (&self.cfg.loss_fn, self.cfg.loss_fn_config.as_ref())
    }

    /// The run has evaluators (set before the first step).
    pub fn set_evaluators(&mut self, any: bool) {
        self.evaluators = any;
    }

    /// Whether the evaluations run before `step` (`_should_run_evals`: every `eval_every`
    /// steps, and for `rl.train` on the final weights too).
    pub fn eval_due(&self, step: u64) -> bool {
        let end = matches!(self.cfg.method, Method::Rl { .. }).then_some(self.end);
        self.eval_due_at(step, end)
    }

    /// The evaluations before the next step, in the evaluators' order, their metrics
    /// merged (a later key updates an earlier one in place, as `dict.update`); they go into
    /// its line after the progress (distillation prefixes `test/`).
    pub fn record_eval(&mut self, parts: Vec<EvalPart>) {
        let prefix = match self.cfg.method {
            Method::Rl { .. } => "",
            Method::Distillation { .. } => "test/",
        };
        self.evals = merge(parts)
            .into_iter()
            .map(|(k, v)| (format!("{prefix}{k}"), v))
            .collect();
    }

    /// Whether `rl.train` evaluates the final weights (after the last step of a run that
    /// trained and was not stopped).
    pub fn final_eval_due(&self) -> bool {
        matches!(self.cfg.method, Method::Rl { .. })
            && !self.stopped
            && self.start < self.end
            && self.eval_due(self.end)
    }

    /// The line of the final evaluation's metrics (`{step, …}`).
    pub fn final_eval_line(&self, parts: Vec<EvalPart>) -> Map<String, Json> {
        let mut m = Map::new();
        m.insert("step".into(), json!(self.end));
        m.extend(merge(parts));
        m
    }

    /// The step trained: its metrics (from the training logprobs, one list per datum, and
    /// the last `optim_step`'s metrics) and the save due after it.
    pub fn finish(
        &mut self,
        training: &[Vec<f32>],
        optim: Map<String, Json>,
    ) -> Result<(Map<String, Json>, Option<RlSave>), InputError> {
        let InFlight {
            header,
            step,
            groups,
            tags,
            data,
            usage,
            kl,
            ..
        } = self
            .step
            .take()
            .ok_or_else(|| InputError::type_error("finish", "no step in flight"))?;
        let mut m = header.unwrap_or_else(|| self.sync_header(step));
        m.extend(trajectory_metrics(&groups, &tags));
        m.extend(kl.into_iter().map(|(k, v)| (k, json!(v))));
        m.extend(
            optim
                .into_iter()
                .map(|(k, v)| (k, v.as_f64().map_or(v, |x| json!(x)))),
        );
        let kl = kl_sample_train(&data, training)
            .ok_or_else(|| InputError::range_error("rollouts", "sampled no token to train on"))?;
        m.extend(kl.into_iter().map(|(k, v)| (k.to_string(), json!(v))));
        if self.cfg.counts_tokens() {
            self.cumulative.add(usage);
            for (k, v) in TOKEN_KEYS.iter().zip(usage.0) {
                m.insert(format!("tokens/{k}"), json!(v));
            }
            for (k, v) in TOKEN_KEYS.iter().zip(self.cumulative.0) {
                m.insert(format!("tokens/cumulative/{k}"), json!(v));
            }
        }
        m.extend(self.rollout_error_metrics());
        if self.cfg.compute_post_kl {
            self.post = Some((m.clone(), data, usage));
        }
        let due = self.cfg.save_every > 0 && (step + 1) % self.cfg.save_every == 0;
        if due {
            self.saved_at = Some(step + 1);
        }
        let save =
            due.then(|| self.save(format!("{:06}", step + 1), step + 1, self.cfg.ttl_seconds));
        Ok((m, save))
    }

    /// `compute_post_kl`: the last step's datums' full sequences, to score on the new
    /// weights (none when the run does not compute it).
    pub fn post_kl_sequences(&self) -> Result<Vec<ModelInput>, InputError> {
        self.post.as_ref().map_or(Ok(Vec::new()), |(_, data, _)| {
            data.iter().map(full_sequence).collect()
        })
    }

    /// `compute_post_kl` with the new weights' scores: the step's line with
    /// `kl_pre_post_v1` and `kl_pre_post_v2` (the mean sampled-minus-new logprob over the
    /// action tokens, half its mean square) and, for `rl.train`, the scoring's tokens in
    /// the step's and the cumulative counts (`CostTracker.extend_step`).
    pub fn post_kl(&mut self, scores: &[Scored]) -> Result<Map<String, Json>, InputError> {
        let (line, data, mut usage) = self
            .post
            .take()
            .ok_or_else(|| InputError::type_error("post_kl", "no step to score"))?;
        let new: Vec<Vec<f32>> = scores.iter().map(|s| s.logprobs.clone()).collect();
        let [(_, v1), (_, v2), _] = kl_sample_train(&data, &new)
            .ok_or_else(|| InputError::range_error("rollouts", "sampled no token to train on"))?;
        let mut extra = Tokens::default();
        extra.0[0] = scores.iter().map(|s| s.sampled).sum();
        let cached: u64 = scores.iter().map(|s| s.cached).sum();
        let prompt: u64 = data
            .iter()
            .map(|d| d.model_input.length().unwrap_or(0) as u64 + 1)
            .sum();
        (extra.0[1], extra.0[2]) = (cached, prompt - cached.min(prompt));
        let mut m = Map::new();
        for (k, v) in line {
            if k.starts_with("rollout_errors/") && !m.contains_key("kl_pre_post_v1") {
                m.insert("kl_pre_post_v1".into(), json!(v1));
                m.insert("kl_pre_post_v2".into(), json!(v2));
            }
            m.insert(k, v);
        }
        m.entry("kl_pre_post_v1").or_insert(json!(v1));
        m.entry("kl_pre_post_v2").or_insert(json!(v2));
        if self.cfg.counts_tokens() {
            usage.add(extra);
            self.cumulative.add(extra);
            for (k, v) in TOKEN_KEYS.iter().zip(usage.0) {
                m.insert(format!("tokens/{k}"), json!(v));
            }
            for (k, v) in TOKEN_KEYS.iter().zip(self.cumulative.0) {
                m.insert(format!("tokens/cumulative/{k}"), json!(v));
            }
        }
        Ok(m)
    }

    /// `RolloutErrorCounter.ingest`: a group's rollout errors (their types), or a group
    /// skipped (its strategy dropped it).
    pub fn ingest_rollout(&mut self, errors: &[String], skipped: bool) {
        let errors = if skipped { &[][..] } else { errors };
        self.rollout_errors.ingest(errors, u64::from(skipped));
    }

    fn rollout_error_metrics(&self) -> Vec<(String, Json)> {
        if !self.cfg.counts_rollout_errors {
            return Vec::new();
        }
        self.rollout_errors.metrics("rollout_errors")
    }

    /// A synchronous step whose every group was skipped: no training, its line (progress,
    /// evaluations, the error counts), and no save.
    pub fn skip_step(&mut self) -> Map<String, Json> {
        let step = self.next - 1;
        let mut m = self.sync_header(step);
        m.extend(self.rollout_error_metrics());
        m
    }

    /// A synchronous step's first metrics: its index, progress, rate and evaluations.
    fn sync_header(&mut self, step: u64) -> Map<String, Json> {
        let mut m = Map::new();
        m.insert("step".into(), json!(step));
        m.insert("progress/batch".into(), json!(step));
        m.insert("optim/lr".into(), json!(self.cfg.learning_rate));
        m.insert(
            "progress/done_frac".into(),
            json!((step + 1) as f64 / self.end as f64),
        );
        m.extend(std::mem::take(&mut self.evals));
        m
    }

    /// After the last step: the row of token totals (at the step after the last) and the
    /// final save (none when there was nothing left to train).
    pub fn end(&self) -> (Map<String, Json>, Option<RlSave>) {
        if self.stopped {
            return (Map::new(), None);
        }
        let mut m = Map::new();
        if self.cfg.counts_tokens() {
            m.insert("step".into(), json!(self.end));
            for (k, v) in TOKEN_KEYS.iter().zip(self.cumulative.0) {
                m.insert(format!("tokens/cumulative/{k}"), json!(v));
            }
            for (k, v) in TOKEN_KEYS.iter().zip(self.discarded.0) {
                m.insert(format!("tokens/discarded/{k}"), json!(v));
            }
        }
        let save = (self.start < self.end).then(|| self.save("final".into(), self.end, None));
        (m, save)
    }

    /// A save of the state at `batch`, named after it.
    pub(crate) fn save_at(&self, batch: u64, ttl_seconds: Option<u64>) -> RlSave {
        self.save(format!("{batch:06}"), batch, ttl_seconds)
    }

    fn save(&self, name: String, batch: u64, ttl_seconds: Option<u64>) -> RlSave {
        let mut state = Map::new();
        state.insert("batch".into(), json!(batch));
        if self.cfg.counts_tokens() {
            state.insert("cumulative_tokens".into(), self.cumulative.json());
            state.insert("discarded_tokens".into(), self.discarded.json());
        }
        RlSave {
            name,
            ttl_seconds,
            rolling: false,
            state,
        }
    }

    /// A save is done: its `checkpoints.jsonl` record.
    /// (A rolling save has no sampler path, and returns the previous rolling checkpoint
    /// for the driver to delete.)
    pub fn saved(
        &mut self,
        order: &RlSave,
        state_path: &str,
        sampler_path: Option<&str>,
    ) -> (Map<String, Json>, Option<String>) {
        let mut paths = Map::new();
        paths.insert("state_path".into(), json!(state_path));
        if let Some(p) = sampler_path {
            paths.insert("sampler_path".into(), json!(p));
        }
        let delete = order
            .rolling
            .then(|| self.rolling_prev.replace(state_path.into()))
            .flatten();
        (record(&order.name, &order.state, &paths), delete)
    }

    /// `_should_save_rolling`: the rolling save after the step completing `step` (none on
    /// a step the periodic save covers).
    pub fn rolling_due(&self, step: u64) -> Option<RlSave> {
        let r = self.cfg.rolling_save_every;
        let periodic = self.cfg.save_every > 0 && step % self.cfg.save_every == 0;
        if r == 0 || step == 0 || step % r != 0 || periodic {
            return None;
        }
        let mut o = self.save_at(step, Some(self.cfg.rolling_ttl_seconds));
        o.state.insert("rolling".into(), true.into());
        o.rolling = true;
        Some(o)
    }

    /// The run is over (after its final save): the last rolling checkpoint, to delete.
    pub fn finalize(&mut self) -> Option<String> {
        self.rolling_prev.take()
    }
}

/// `RolloutErrorCounter`: rollout errors by type (first-seen order) and groups skipped.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RolloutErrors {
    counts: Vec<(String, u64)>,
    skipped: u64,
}

impl RolloutErrors {
    /// Errors a group survived (by type), and groups dropped.
    pub fn ingest(&mut self, errors: &[String], skipped: u64) {
        self.skipped += skipped;
        for e in errors {
            match self.counts.iter_mut().find(|(k, _)| k == e) {
                Some((_, n)) => *n += 1,
                None => self.counts.push((e.clone(), 1)),
            }
        }
    }

    /// `get_metrics(prefix)`: each type's count, the total and the groups skipped (floats);
    /// none when nothing happened.
    pub fn metrics(&self, prefix: &str) -> Vec<(String, Json)> {
        if self.counts.is_empty() && self.skipped == 0 {
            return Vec::new();
        }
        let mut m: Vec<(String, Json)> = self
            .counts
            .iter()
            .map(|(k, n)| (format!("{prefix}/{k}"), json!(*n as f64)))
            .collect();
        let total: u64 = self.counts.iter().map(|(_, n)| n).sum();
        m.push((format!("{prefix}/total"), json!(total as f64)));
        m.push((
            format!("{prefix}/groups_skipped"),
            json!(self.skipped as f64),
        ));
        m
    }
}

/// An evaluator's result: a user evaluator's metrics, or the rollouts of a test set
/// (`RLTestSetEvaluator`: its groups and their tags; metrics under `test/`).
#[derive(Debug, Clone)]
pub enum EvalPart {
    /// Metrics as the evaluator returned them.
    Metrics(Map<String, Json>),
    /// A test set's rolled-out groups and their logging tags, the rollout errors they
    /// survived (by type) and how many groups the strategy dropped.
    TestSet {
        /// The groups.
        groups: Vec<TrajectoryGroup>,
        /// Their tags.
        tags: Vec<Vec<String>>,
        /// The errors' types.
        errors: Vec<String>,
        /// Groups dropped.
        skipped: u64,
    },
}

pub(crate) fn merge(parts: Vec<EvalPart>) -> Map<String, Json> {
    let mut m = Map::new();
    for p in parts {
        let entries = match p {
            EvalPart::Metrics(x) => x.into_iter().collect(),
            EvalPart::TestSet {
                groups,
                tags,
                errors,
                skipped,
            } => {
                let mut counter = RolloutErrors::default();
                counter.ingest(&errors, skipped);
                let mut m = test_set_metrics(&groups, &tags, "test");
                m.extend(counter.metrics("test/rollout_errors"));
                m
            }
        };
        for (k, v) in entries {
            m.insert(k, v);
        }
    }
    m
}

/// `rollout_usage`: the groups' sampled tokens and prompt tokens (cached and not); none trained.
pub(crate) fn rollout_usage(groups: &[TrajectoryGroup]) -> Tokens {
    let turns = || {
        groups
            .iter()
            .flat_map(|g| &g.trajectories)
            .flat_map(|t| &t.transitions)
    };
    let cached: u64 = turns().map(|t| t.prompt_cache_hit_tokens).sum();
    let prompt: u64 = turns().map(|t| t.ob.length().unwrap_or(0) as u64).sum();
    let sampled = turns().map(|t| t.tokens.len() as u64).sum();
    Tokens([sampled, cached, prompt - cached.min(prompt), 0])
}

/// The rollouts of a step from their JSON form: `[{trajectories: [[{ob, ac, logprobs,
/// sequence_id, reward, metrics, cached}]], final_rewards, metrics, tags}]` (`ob` and `ac`
/// token ids). Returns the groups and their tags.
pub fn groups_from_json(v: &Json) -> Result<(Vec<TrajectoryGroup>, Vec<Vec<String>>), InputError> {
    let bad = |at: String, what: &str| InputError::type_error(at, what.to_string());
    let list = |v: &Json, at: &str| {
        v.as_array()
            .cloned()
            .ok_or_else(|| bad(at.into(), "must be an array"))
    };
    let metrics = |v: &Json| -> Vec<(String, Option<f64>)> {
        v.as_object().map_or(Vec::new(), |o| {
            o.iter().map(|(k, x)| (k.clone(), x.as_f64())).collect()
        })
    };
    let ints = |v: &Json, at: String| -> Result<Vec<u32>, InputError> {
        list(v, &at)?
            .iter()
            .map(|x| {
                x.as_u64()
                    .map(|x| x as u32)
                    .ok_or_else(|| bad(at.clone(), "must hold token ids"))
            })
            .collect()
    };
    let (mut groups, mut tags) = (Vec::new(), Vec::new());
    for (gi, g) in list(v, "groups")?.iter().enumerate() {
        let at = format!("groups[{gi}]");
        let mut trajectories = Vec::new();
        for (ti, t) in list(&g["trajectories"], &format!("{at}.trajectories"))?
            .iter()
            .enumerate()
        {
            let mut transitions = Vec::new();
            for (si, s) in list(t, &format!("{at}.trajectories[{ti}]"))?
                .iter()
                .enumerate()
            {
                let here = format!("{at}.trajectories[{ti}][{si}]");
                let reward = s["reward"]
                    .as_f64()
                    .filter(|r| r.is_finite())
                    .ok_or_else(|| bad(format!("{here}.reward"), "must be a finite number"))?;
                transitions.push(Transition {
                    ob: ModelInput::from_ints(ints(&s["ob"], format!("{here}.ob"))?),
                    tokens: ints(&s["ac"], format!("{here}.ac"))?,
                    logprobs: list(&s["logprobs"], &format!("{here}.logprobs"))?
                        .iter()
                        .map(|x| x.as_f64().unwrap_or(f64::NAN) as f32)
                        .collect(),
                    sequence_id: s["sequence_id"].as_str().map(String::from),
                    reward,
                    prompt_cache_hit_tokens: s["cached"].as_u64().unwrap_or(0),
                    metrics: metrics(&s["metrics"]),
                });
            }
            trajectories.push(Trajectory { transitions });
        }
        let finals: Vec<f64> = list(&g["final_rewards"], &format!("{at}.final_rewards"))?
            .iter()
            .map(|x| x.as_f64().unwrap_or(f64::NAN))
            .collect();
        if finals.len() != trajectories.len() || finals.iter().any(|x| !x.is_finite()) {
            return Err(bad(
                format!("{at}.final_rewards"),
                "must be one finite number per trajectory",
            ));
        }
        let group_metrics = g["metrics"]
            .as_array()
            .map_or(vec![Vec::new(); trajectories.len()], |a| {
                a.iter().map(metrics).collect()
            });
        tags.push(g["tags"].as_array().map_or(Vec::new(), |a| {
            a.iter()
                .filter_map(|t| t.as_str().map(String::from))
                .collect()
        }));
        groups.push(TrajectoryGroup {
            trajectories,
            final_rewards: finals,
            metrics: group_metrics,
        });
    }
    Ok((groups, tags))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evaluations_follow_eval_every_and_the_method() {
        // (method, eval_every, evaluators?) → the steps before which evaluations run of 0..=5
        // (5 the end), and whether the final weights are evaluated.
        let teachers = Method::Distillation {
            teachers: Vec::new(),
        };
        let rl = Method::Rl { reference: None };
        let table: [(Method, u64, bool, &[u64], bool); 5] = [
            (rl.clone(), 2, true, &[0, 2, 4, 5], true),
            (rl.clone(), 5, true, &[0, 5], true),
            (rl.clone(), 0, true, &[], false),
            (rl.clone(), 2, false, &[], false),
            (teachers, 2, true, &[0, 2, 4], false),
        ];
        for (method, every, any, due, fin) in table {
            let mut cfg = RlConfig::new("Qwen/Qwen3-8B", 1e-4);
            (cfg.method, cfg.eval_every) = (method.clone(), every);
            let mut r = Rl::new(cfg, "").unwrap();
            r.set_batches(5).unwrap();
            r.set_evaluators(any);
            let got: Vec<u64> = (0..=5).filter(|&s| r.eval_due(s)).collect();
            assert_eq!(
                (got.as_slice(), r.final_eval_due()),
                (due, fin),
                "{method:?} {every} {any}"
            );
        }
        // Distillation's metrics go under test/ (its evaluators' keys already are).
        let mut cfg = RlConfig::new("Qwen/Qwen3-8B", 1e-4);
        cfg.method = Method::Distillation {
            teachers: Vec::new(),
        };
        let mut r = Rl::new(cfg, "").unwrap();
        let mut a = Map::new();
        a.insert("x".into(), json!(1));
        let mut b = Map::new();
        b.insert("y".into(), json!(2));
        b.insert("x".into(), json!(3));
        r.record_eval(vec![EvalPart::Metrics(a), EvalPart::Metrics(b)]);
        let keys: Vec<(&String, &Json)> = r.evals.iter().collect();
        assert_eq!(
            keys,
            [
                (&"test/x".to_string(), &json!(3)),
                (&"test/y".to_string(), &json!(2))
            ]
        );
    }

    #[test]
    fn rollout_errors_are_counted_by_type_then_totalled() {
        let mut c = RolloutErrors::default();
        assert!(c.metrics("rollout_errors").is_empty(), "nothing to say");
        c.ingest(
            &["TimeoutError".into(), "Error".into(), "TimeoutError".into()],
            0,
        );
        c.ingest(&[], 2);
        let m: Vec<(String, Json)> = c.metrics("p");
        let want = [
            ("p/TimeoutError", 2.0),
            ("p/Error", 1.0),
            ("p/total", 3.0),
            ("p/groups_skipped", 2.0),
        ];
        assert_eq!(m, want.map(|(k, v)| (k.to_string(), json!(v))));
        // A run counts them only with a strategy that drops groups; a skipped group's
        // errors are not counted (the cookbook ingests None).
        let mut cfg = RlConfig::new("Qwen/Qwen3-8B", 1e-4);
        cfg.counts_rollout_errors = true;
        let mut r = Rl::new(cfg, "").unwrap();
        r.set_batches(1).unwrap();
        r.next_step();
        r.ingest_rollout(&["Error".into()], true);
        let line = r.skip_step();
        assert_eq!(line["rollout_errors/total"], json!(0.0));
        assert_eq!(line["rollout_errors/groups_skipped"], json!(1.0));
        assert_eq!(line["progress/batch"], json!(0));
    }

    #[test]
    fn steps_cycle_the_dataset_and_saves_follow_save_every() {
        let mut cfg = RlConfig::new("Qwen/Qwen3-8B", 1e-4);
        cfg.num_epochs = 2;
        cfg.save_every = 2;
        let mut rl = Rl::new(cfg.clone(), "").unwrap();
        rl.set_batches(3).unwrap();
        let steps: Vec<(u64, u64)> = std::iter::from_fn(|| rl.next_step()).collect();
        assert_eq!(steps, [(0, 0), (1, 1), (2, 2), (3, 0), (4, 1), (5, 2)]);
        let saved = r#"{"name": "000004", "batch": 4, "state_path": "tinker://r/weights/000004", "cumulative_tokens": {"sampled": 7}}"#;
        let mut resumed = Rl::new(cfg, saved).unwrap();
        resumed.set_batches(3).unwrap();
        assert_eq!(resumed.next_step(), Some((4, 1)));
        assert_eq!(resumed.cumulative.0, [7, 0, 0, 0]);
        assert!(matches!(
            resumed.start().0,
            Start::FromState {
                with_optimizer: true,
                ..
            }
        ));
        let metrics = "{\"step\": 3}\n{\"step\": 4}\n";
        assert_eq!(
            resumed.truncate_metrics(metrics),
            Some((
                "metrics.jsonl.pre_resume_000004".into(),
                "{\"step\": 3}\n".into()
            ))
        );
        let (row, fin) = resumed.end();
        assert_eq!(row["step"], json!(6));
        assert_eq!(fin.unwrap().name, "final");
        // Stopped before step 5: saved there, no final save.
        let save = resumed.stop().unwrap();
        assert_eq!(
            (save.name.as_str(), save.state["batch"].clone()),
            ("000005", json!(5))
        );
        assert_eq!(resumed.next_step(), None);
        assert_eq!(resumed.end().1, None);
        assert!(Rl::new(RlConfig::new("m", 1e-4), "")
            .unwrap()
            .set_batches(0)
            .is_err());
    }

    #[test]
    fn rollouts_are_read_with_their_field_named_on_error() {
        let ok = json!([{"trajectories": [[{"ob": [1, 2], "ac": [3], "logprobs": [-0.5], "sequence_id": "s", "reward": 1.0, "metrics": {"correct": 1.0}, "cached": 1}]], "final_rewards": [0.0], "tags": ["problems"]}]);
        let (g, tags) = groups_from_json(&ok).unwrap();
        assert_eq!(
            (g[0].total_rewards(), tags),
            (vec![1.0], vec![vec!["problems".to_string()]])
        );
        let mut bad = ok.clone();
        bad[0]["trajectories"][0][0]["reward"] = json!("high");
        let e = groups_from_json(&bad).unwrap_err().to_string();
        assert!(
            e.contains("groups[0].trajectories[0][0].reward: must be a finite number"),
            "{e}"
        );
        let mut short = ok;
        short[0]["final_rewards"] = json!([]);
        assert!(groups_from_json(&short)
            .unwrap_err()
            .to_string()
            .contains("final_rewards"));
    }
}
