//! `supervised.train.main` over a conversation file, as a state machine: [`Sft`] decides
//! everything the cookbook's loop decides (the client to create, each step's data and
//! Adam parameters, when to evaluate and save, the `metrics.jsonl` and
//! `checkpoints.jsonl` lines, where a resumed run starts) and its driver only sends what
//! it is told, in the cookbook's order:
//!
//! ```text
//! start → [truncate metrics] → set_tokenizer →
//!   loop: next_step → [evaluate: test_prompts → record_eval] → forward_backward + optim_step sent
//!         once more than `submit_ahead` steps are in flight, for the oldest:
//!           finish_begin → [save → saved (a rolling save in the background, the previous
//!           one awaited first; its predecessor deleted)] → await its results → finish_end
//!   end_save → [save → saved] → finalize (the last rolling checkpoint deleted)
//! ```
//!
//! The driver is JS (pkg/cookbook/cookbook.js), where the datasets, stores, signals and
//! callbacks live; the differential with the cookbook's own run is
//! tests/cookbook/sft_differential.py.
//!
//! With a held-out set, `SamplerNLLEvaluator` runs before every `eval_every`-th step.
//! Not yet here: the `time/*` metrics.
//!
//! A run can be stopped ([`Sft::stop`], an `AbortSignal` in JS): the cookbook has no such
//! hook (a Python run is killed); ours finishes the steps in flight and saves where it
//! stopped, as a periodic save would, so the run resumes from the next step.

use std::collections::VecDeque;
use std::rc::Rc;

use serde_json::{json, Map, Value as Json};
use tinker_core::types::{AdamParams, Datum, ModelInput};
use tinker_renderers::{conversation_to_datum, Message, Reduction, Renderer, TrainOnWhat};
use tinker_support::input::InputError;
use tinker_tokenizer::Tokenizer;

use crate::checkpoints::{last_checkpoint, parse_records, record};
use crate::data::{batch, batches_per_epoch, epoch_order, split, Split};
use crate::dpo::{dpo_loss, pair, DpoLoss};
use crate::nll::{bpb, floats, mean_nll, scored_prompt};
use crate::plan::{checkpoint_name, Save, SftPlan, Step};

/// `supervised.train.Config` with `FromConversationFileBuilder`'s fields, the cookbook's
/// names and defaults ([`SftConfig::new`]).
#[derive(Debug, Clone)]
pub struct SftConfig {
    /// `model_name`.
    pub model_name: String,
    /// `renderer_name` (the dataset's `common_config.renderer_name`).
    pub renderer_name: String,
    /// `load_checkpoint_path`: weights to start from (a resume wins over it).
    pub load_checkpoint_path: Option<String>,
    /// `learning_rate`, `lr_schedule`, `num_epochs`, `max_steps`, the eval and save
    /// periods: the run's plan (its `n_batches` is set from the data).
    pub plan: SftPlan,
    /// `lora_rank`.
    pub lora_rank: u32,
    /// `ttl_seconds` of periodic saves (`None`: kept).
    pub ttl_seconds: Option<u64>,
    /// `rolling_ttl_seconds`.
    pub rolling_ttl_seconds: u64,
    /// `async_periodic_saves`: periodic saves in the background (the previous one awaited
    /// before the next starts, and before the final save).
    pub async_periodic_saves: bool,
    /// `adam_beta1`, `adam_beta2`, `adam_eps`.
    pub adam_beta1: f64,
    /// See `adam_beta1`.
    pub adam_beta2: f64,
    /// See `adam_beta1`.
    pub adam_eps: f64,
    /// `submit_ahead`: steps submitted before the oldest one's results are awaited.
    pub submit_ahead: u64,
    /// `common_config.batch_size`.
    pub batch_size: usize,
    /// `common_config.max_length`.
    pub max_length: Option<usize>,
    /// `common_config.train_on_what` (default `all_assistant_messages`).
    pub train_on_what: TrainOnWhat,
    /// `test_size`.
    pub test_size: usize,
    /// `shuffle_seed`.
    pub shuffle_seed: u64,
    /// `dpo_beta` of a DPO run (`preference.train_dpo`; `None`: supervised).
    pub dpo_beta: Option<f64>,
}

impl SftConfig {
    /// The cookbook's defaults.
    pub fn new(model_name: &str, renderer_name: &str, batch_size: usize) -> Self {
        SftConfig {
            model_name: model_name.into(),
            renderer_name: renderer_name.into(),
            load_checkpoint_path: None,
            plan: SftPlan::defaults(0),
            lora_rank: 32,
            ttl_seconds: Some(604_800),
            rolling_ttl_seconds: 7200,
            async_periodic_saves: false,
            adam_beta1: 0.9,
            adam_beta2: 0.95,
            adam_eps: 1e-8,
            submit_ahead: 1,
            batch_size,
            max_length: None,
            train_on_what: TrainOnWhat::AllAssistantMessages,
            test_size: 0,
            shuffle_seed: 0,
            dpo_beta: None,
        }
    }
}

/// How the run's training client is created: from the resumed state with its
/// optimizer, else from `load_checkpoint_path`'s weights, else a new LoRA run. Every
/// way carries `{"renderer_name": …}` as its user metadata.
#[derive(Debug, Clone, PartialEq)]
pub enum Start {
    /// `create_lora_training_client(base_model, rank)`.
    Lora {
        /// `model_name`.
        base_model: String,
        /// `lora_rank`.
        rank: u32,
    },
    /// `create_training_client_from_state(path)` (`with_optimizer`: the `…_with_optimizer` call).
    FromState {
        /// The checkpoint.
        path: String,
        /// Whether the optimizer state is restored too (a resume).
        with_optimizer: bool,
    },
}

/// A step to send: its data and Adam parameters, after its evaluation if `eval`.
#[derive(Debug, Clone)]
pub struct StepOrder {
    /// The step's global index.
    pub step: u64,
    /// The batch's datums.
    pub data: Vec<Datum>,
    /// `optim_step`'s parameters (the scheduled learning rate).
    pub adam: AdamParams,
    /// Whether the evaluators run before the step is sent (`eval_every`): the caller's,
    /// then the held-out NLL when the data has a test split ([`Sft::has_test_data`]).
    pub eval: bool,
    /// Whether the infrequent evaluators run after them (`infrequent_eval_every`).
    pub infrequent: bool,
    /// A DPO run's save due before the step (`CheckpointManager.maybe_save`), made first.
    pub save: Option<SaveOrder>,
}

/// A save to make: `save_state(name, ttl)` and, if `both`, `save_weights_for_sampler(name, ttl)`.
#[derive(Debug, Clone, PartialEq)]
pub struct SaveOrder {
    /// The checkpoint's name.
    pub name: String,
    /// Its time to live (`None`: kept).
    pub ttl_seconds: Option<u64>,
    /// Whether the sampler weights are saved too.
    pub both: bool,
    /// A rolling save: made in the background (the driver awaits the previous one first,
    /// at every step), and the previous rolling checkpoint is deleted once it is done.
    pub rolling: bool,
    /// A periodic save made in the background (`async_periodic_saves`): the driver awaits
    /// the previous one before starting it, and before the final save.
    pub background: bool,
    state: Map<String, Json>,
    periodic: bool,
}

/// A step whose requests are sent and whose results are not yet read.
struct InFlight {
    at: Step,
    dpo: Vec<(&'static str, f32)>,
    metrics: Map<String, Json>,
    data: Vec<Datum>,
    num_tokens: u64,
    evals: Map<String, Json>,
}

/// A supervised run's state (see the module's documentation for its protocol).
pub struct Sft {
    cfg: SftConfig,
    plan: SftPlan,
    rows: Vec<Json>,
    renderer: Renderer,
    tokenizer: Option<Rc<Tokenizer>>,
    train_rows: Vec<usize>,
    test_rows: Vec<usize>,
    test_data: Vec<Datum>,
    resume: Option<Map<String, Json>>,
    start: (u64, u64),
    steps: VecDeque<Step>,
    order: (u64, Vec<usize>),
    in_flight: VecDeque<InFlight>,
    elapsed_tokens: u64,
    last_saved: (u64, f64),
    rolling_prev: Option<String>,
    stopped_at: Option<Step>,
}

impl Sft {
    /// A run of `cfg` over `rows` (the conversation file's, [`crate::data::parse_conversations`]),
    /// resuming from the last record of `checkpoints` (the text of `checkpoints.jsonl`,
    /// empty for none); `now` is the clock of `save_every_seconds`. Bad config or data
    /// is refused here, before anything is sent.
    pub fn new(
        cfg: SftConfig,
        rows: Vec<Json>,
        checkpoints: &str,
        now: f64,
    ) -> Result<Self, InputError> {
        let split = split(rows.len(), cfg.test_size, cfg.shuffle_seed);
        Self::build(cfg, rows, split, checkpoints, now)
    }

    /// A DPO run (`cfg.dpo_beta` set) over the rows of its comparison files
    /// ([`crate::dpo::parse_comparisons`]): `train` in its order, `test` held out.
    pub fn new_dpo(
        cfg: SftConfig,
        mut train: Vec<Json>,
        test: Vec<Json>,
        checkpoints: &str,
        now: f64,
    ) -> Result<Self, InputError> {
        let n = train.len();
        train.extend(test);
        let split = Split {
            train: (0..n).collect(),
            test: (n..train.len()).collect(),
        };
        Self::build(cfg, train, split, checkpoints, now)
    }

    fn build(
        mut cfg: SftConfig,
        rows: Vec<Json>,
        split: Split,
        checkpoints: &str,
        now: f64,
    ) -> Result<Self, InputError> {
        let resume = last_checkpoint(&parse_records(checkpoints)?, "state_path");
        let n = |k: &str| {
            resume
                .as_ref()
                .and_then(|r| r.get(k))
                .and_then(Json::as_u64)
        };
        let (start, tokens) = (
            (n("epoch").unwrap_or(0), n("batch").unwrap_or(0)),
            n("elapsed_tokens"),
        );
        cfg.plan.n_batches = batches_per_epoch(split.train.len(), cfg.batch_size) as u64;
        check(&cfg, split.train.len())?;
        let renderer = Renderer::new(&cfg.renderer_name, &Default::default())
            .map_err(|e| InputError::type_error("renderer_name", e.to_string()))?;
        let plan = cfg.plan.clone();
        Ok(Sft {
            steps: plan.steps(start.0, start.1).collect(),
            plan,
            cfg,
            rows,
            renderer,
            tokenizer: None,
            train_rows: split.train,
            test_rows: split.test,
            test_data: Vec::new(),
            resume,
            start,
            order: (u64::MAX, Vec::new()),
            in_flight: VecDeque::new(),
            elapsed_tokens: tokens.unwrap_or(0),
            last_saved: (tokens.unwrap_or(0), now),
            rolling_prev: None,
            stopped_at: None,
        })
    }

    /// How to create the training client.
    pub fn start(&self) -> Start {
        match (&self.resume, &self.cfg.load_checkpoint_path) {
            (Some(r), _) => Start::FromState {
                path: r["state_path"].as_str().unwrap_or_default().into(),
                with_optimizer: true,
            },
            (None, Some(path)) => Start::FromState {
                path: path.clone(),
                with_optimizer: false,
            },
            (None, None) => Start::Lora {
                base_model: self.cfg.model_name.clone(),
                rank: self.cfg.lora_rank,
            },
        }
    }

    /// The training client's user metadata: `{"renderer_name": …}`.
    pub fn user_metadata(&self) -> (&'static str, &str) {
        ("renderer_name", &self.cfg.renderer_name)
    }

    /// `store.truncate_metrics(step)` of a resumed run, given the text of
    /// `metrics.jsonl`: `(backup name, kept text)` when rows at or after the resumed step
    /// are dropped (the old file is kept as `metrics.jsonl.pre_resume_{step:06d}`).
    pub fn truncate_metrics(&self, text: &str) -> Option<(String, String)> {
        self.resume.as_ref()?;
        if self.cfg.dpo_beta.is_some() {
            return None; // train_dpo.main keeps every row
        }
        let step = self.start.0 * self.plan.n_batches + self.start.1;
        crate::checkpoints::truncate_metrics(text, step)
    }

    /// The model's tokenizer, once the client is there: builds the held-out datums.
    pub fn set_tokenizer(&mut self, tokenizer: Rc<Tokenizer>) -> Result<(), InputError> {
        // A renderer for another tokenizer: its stop tokens are not single tokens here.
        if let Err(e) = self.renderer.stop_sequences(&tokenizer) {
            return Err(InputError::range_error(
                "renderer_name",
                format!(
                    "{:?} does not fit the model's tokenizer: {e}",
                    self.cfg.renderer_name
                ),
            ));
        }
        self.tokenizer = Some(tokenizer);
        self.test_data = self.datums(&self.test_rows)?;
        // A row that does not render fails here, before the run sends anything (the driver
        // sets the tokenizer first).
        self.datums(&self.train_rows[..self.train_rows.len().min(1)])?;
        Ok(())
    }

    /// Stops the run before its next step (see the module's documentation).
    pub fn stop(&mut self) {
        if self.stopped_at.is_none() {
            self.stopped_at = self.steps.front().copied();
            self.steps.clear();
        }
    }

    /// The step a stopped run stopped before.
    pub fn stopped_at(&self) -> Option<u64> {
        self.stopped_at.map(|s| s.step)
    }

    /// Whether the oldest step in flight is to be finished before the next is sent.
    pub fn must_finish(&self) -> bool {
        self.in_flight.len() as u64 > self.cfg.submit_ahead
    }

    /// `submit_batch`: the next step to send (`None`: none is left).
    pub fn next_step(&mut self) -> Result<Option<StepOrder>, InputError> {
        let Some(at) = self.steps.pop_front() else {
            return Ok(None);
        };
        let dpo = self.cfg.dpo_beta.is_some();
        let lr = self.plan.learning_rate(at.step)?;
        let mut metrics = Map::new();
        metrics.insert("epoch".into(), at.epoch.into());
        if !dpo {
            metrics.insert("progress".into(), json!(self.plan.progress(at.step).0));
            metrics.insert("learning_rate".into(), json!(lr));
        }
        let adam = AdamParams {
            learning_rate: lr,
            beta1: self.cfg.adam_beta1,
            beta2: self.cfg.adam_beta2,
            eps: self.cfg.adam_eps,
            ..AdamParams::default()
        };
        // DPO: the due save first, and only whole chosen/rejected pairs.
        let save = if dpo {
            self.save_due(at, (0, 0.0))
        } else {
            None
        };
        let mut data = self.batch_data(at)?;
        data.truncate(if dpo { data.len() / 2 * 2 } else { data.len() });
        let num_tokens = data
            .iter()
            .map(|d| d.model_input.length().unwrap_or(0) as u64)
            .sum();
        let (mut eval, infrequent) = self.plan.evals(at.step);
        let last = at.step + 1 == self.plan.total_steps();
        eval |= dpo && last && self.plan.eval_every > 0;
        self.in_flight.push_back(InFlight {
            at,
            dpo: Vec::new(),
            metrics,
            data: data.clone(),
            num_tokens,
            evals: Map::new(),
        });
        Ok(Some(StepOrder {
            step: at.step,
            data,
            adam,
            eval,
            infrequent,
            save,
        }))
    }

    /// The DPO loss of the step in flight, given the reference's logprobs of
    /// `test_prompts(true)` (their first, unscored position included) and the
    /// policy's logprobs of the forward pass.
    /// Returns the loss followed by every datum's gradients, in one list; the step's
    /// metrics (`dpo_loss`, `accuracy`, …) are kept for its line.
    pub fn dpo_loss(&mut self, reference: &[Vec<f32>], policy: &[Vec<f32>]) -> Vec<f32> {
        let beta = self.cfg.dpo_beta.unwrap_or(0.1);
        let Some(s) = self.in_flight.back_mut() else {
            return Vec::new();
        };
        let reference: Vec<Vec<f32>> = reference.iter().map(|l| unscored(l).to_vec()).collect();
        let weights: Vec<&[f32]> = s.data.iter().map(|d| floats(d, "weights")).collect();
        let DpoLoss {
            loss,
            gradients,
            metrics,
        } = dpo_loss(policy, &reference, &weights, beta);
        s.dpo = metrics.to_vec();
        std::iter::once(loss)
            .chain(gradients.into_iter().flatten())
            .collect()
    }

    /// A DPO step's results ([`Sft::finish_end`] given `forward_backward_custom`'s
    /// metrics): those metrics in the Python SDK's order (the server's, the loss's, then `loss:sum` and `surrogate_loss:sum`).
    /// Returns its `metrics.jsonl` line and the metrics.
    fn finish_dpo(&mut self, fwd: Map<String, Json>) -> Option<(String, Map<String, Json>)> {
        let s = self.in_flight.pop_front()?;
        let mut m = s.metrics;
        m.extend(s.evals);
        let lr = self.plan.learning_rate(s.at.step).unwrap_or(f64::NAN);
        for (k, v) in [
            ("num_pairs", json!(s.data.len() / 2)),
            ("num_tokens", json!(s.num_tokens)),
            ("learning_rate", json!(lr)),
            ("progress", json!(self.plan.progress(s.at.step).0)),
        ] {
            m.insert(k.into(), v);
        }
        // forward_backward_custom's metrics: the server's, the loss's, then the sums.
        let sums = ["loss:sum", "surrogate_loss:sum"];
        for (k, v) in &fwd {
            if !sums.contains(&k.as_str()) {
                m.insert(k.clone(), v.clone());
            }
        }
        for &(k, v) in &s.dpo {
            m.insert(k.into(), json!(f64::from(v)));
        }
        for k in sums {
            if let Some(v) = fwd.get(k) {
                m.insert(k.into(), v.clone());
            }
        }
        let mut line = Map::new();
        line.insert("step".into(), s.at.step.into());
        line.extend(m);
        Some((dumps(&line), line))
    }

    /// Whether the data has a held-out split (then `SamplerNLLEvaluator` runs last among
    /// the evaluators).
    pub fn has_test_data(&self) -> bool {
        !self.test_data.is_empty()
    }

    /// An evaluator's metrics for `step` (the caller's evaluators), added to that step's
    /// metrics in the order they come.
    pub fn record_metrics(&mut self, step: u64, metrics: Map<String, Json>) {
        if let Some(s) = self.in_flight.iter_mut().find(|s| s.at.step == step) {
            s.evals.extend(metrics);
        }
    }

    /// The prompts `SamplerNLLEvaluator` scores, one per held-out datum; with
    /// `reference`, those whose reference logprobs the DPO step in flight needs (each
    /// datum's full sequence, `compute_logprobs` on the starting weights).
    pub fn test_prompts(&self, reference: bool) -> Vec<ModelInput> {
        let data = match self.in_flight.back() {
            Some(s) if reference => &s.data,
            _ => &self.test_data,
        };
        data.iter().map(scored_prompt).collect()
    }

    /// The evaluation of `step` from the sampler's logprobs of [`Sft::test_prompts`]
    /// (`test/nll`, `test/bpb`), added to that step's metrics.
    pub fn record_eval(&mut self, step: u64, logprobs: &[Vec<f32>]) {
        let lp: Vec<Vec<f32>> = logprobs.iter().map(|l| unscored(l).to_vec()).collect();
        let tok = self
            .tokenizer
            .as_deref()
            .expect("set_tokenizer before evaluating");
        let (nll, bpb) = (
            mean_nll(&lp, &self.test_data),
            bpb(&lp, &self.test_data, tok),
        );
        if let Some(s) = self.in_flight.iter_mut().find(|s| s.at.step == step) {
            s.evals.insert("test/nll".into(), json!(nll));
            // train_dpo's evaluator has no tokenizer, so no bits per byte.
            if self.cfg.dpo_beta.is_none() {
                s.evals.insert("test/bpb".into(), json!(bpb));
            }
        }
    }

    /// `finish_batch`, first half, for the oldest step in flight: its progress and
    /// tokens, and the save that is due (`CheckpointManager.maybe_save_async`), made
    /// before the step's results are awaited.
    pub fn finish_begin(&mut self, now: f64) -> Option<SaveOrder> {
        let s = self.in_flight.front_mut()?;
        let at = s.at;
        s.metrics
            .insert("progress".into(), json!(self.plan.progress(at.step).1));
        self.elapsed_tokens += s.num_tokens;
        let since = (
            self.elapsed_tokens - self.last_saved.0,
            now - self.last_saved.1,
        );
        let due = self.save_due(at, since);
        if due.as_ref().is_some_and(|o| o.background) {
            // Counted as saved when it starts, as the cookbook's manager counts it.
            self.last_saved = (self.elapsed_tokens, now);
        }
        due
    }

    /// The save due at step `at` (`CheckpointManager.maybe_save`), given the tokens and
    /// seconds since the last periodic save.
    fn save_due(&self, at: Step, since: (u64, f64)) -> Option<SaveOrder> {
        let state = self.loop_state(at.epoch, at.batch);
        let name = checkpoint_name(at.step);
        match self.plan.save(at.step, since.0, since.1) {
            Save::Periodic if self.cfg.async_periodic_saves => {
                let mut o = self.save_order(name, state, true, false);
                o.background = true;
                Some(o)
            }
            Save::Periodic => Some(self.save_order(name, state, true, true)),
            Save::Rolling => {
                let mut state = state;
                state.insert("rolling".into(), true.into());
                let mut o = self.save_order(name, state, false, false);
                o.ttl_seconds = Some(self.cfg.rolling_ttl_seconds);
                o.rolling = true;
                Some(o)
            }
            Save::None => None,
        }
    }

    /// `finish_batch`, second half: the oldest step's metrics from its forward_backward
    /// logprobs (one list per datum) and `optim_step`'s metrics (for DPO,
    /// `forward_backward_custom`'s metrics instead) (read as floats, as the
    /// Python SDK's type has them). Returns its
    /// `metrics.jsonl` line (Python's `json.dumps`, with its newline) and the metrics.
    pub fn finish_end(
        &mut self,
        logprobs: &[Vec<f32>],
        optim_metrics: Map<String, Json>,
    ) -> Option<(String, Map<String, Json>)> {
        if self.cfg.dpo_beta.is_some() {
            return self.finish_dpo(optim_metrics);
        }
        let s = self.in_flight.pop_front()?;
        let mut m = s.metrics;
        // `OptimStepResponse.metrics` is `Dict[str, float]`: numbers as floats (2.0).
        m.extend(optim_metrics.into_iter().map(|(k, v)| match v.as_f64() {
            Some(x) => (k, json!(x)),
            None => (k, v),
        }));
        let loss_tokens: f64 = s
            .data
            .iter()
            .map(|d| {
                floats(d, "weights")
                    .iter()
                    .map(|&w| f64::from(w))
                    .sum::<f64>()
            })
            .sum();
        let tok = self
            .tokenizer
            .as_deref()
            .expect("set_tokenizer before finishing");
        for (k, v) in [
            ("num_sequences", json!(s.data.len())),
            ("num_tokens", json!(s.num_tokens)),
            ("num_loss_tokens", json!(loss_tokens)),
            ("train_mean_nll", json!(mean_nll(logprobs, &s.data))),
            ("tokens/sampled", json!(0)),
            ("tokens/prefill_cached", json!(0)),
            ("tokens/prefill_uncached", json!(0)),
            ("tokens/trained", json!(s.num_tokens)),
            ("tokens/cumulative/sampled", json!(0)),
            ("tokens/cumulative/prefill_cached", json!(0)),
            ("tokens/cumulative/prefill_uncached", json!(0)),
            ("tokens/cumulative/trained", json!(self.elapsed_tokens)),
            ("train_mean_bpb", json!(bpb(logprobs, &s.data, tok))),
        ] {
            m.insert(k.into(), v);
        }
        m.extend(s.evals);
        let mut line = Map::new();
        line.insert("step".into(), s.at.step.into());
        line.extend(m);
        Some((dumps(&line), line))
    }

    /// The last save: `final` after the last step (none when the run had nothing left to
    /// train), or, for a stopped run, a save named after the step it stopped before,
    /// whose loop state resumes there.
    pub fn end_save(&self) -> Option<SaveOrder> {
        let (plan, start) = (&self.plan, self.start);
        match self.stopped_at {
            Some(at) if at.step > start.0 * plan.n_batches + start.1 => {
                let state = self.loop_state(at.epoch, at.batch);
                Some(self.save_order(checkpoint_name(at.step), state, true, true))
            }
            Some(_) => None,
            None if plan.trains_from(start.0, start.1) => {
                let state = self.loop_state(plan.num_epochs, 0);
                let mut o = self.save_order("final".into(), state, true, false);
                o.ttl_seconds = None;
                Some(o)
            }
            None => None,
        }
    }

    /// A save is done: its `checkpoints.jsonl` line (with its newline), from the paths
    /// the calls returned, and for a rolling save the previous rolling checkpoint, which
    /// the driver deletes (`CheckpointManager._do_rolling_save_async`).
    pub fn saved(
        &mut self,
        order: &SaveOrder,
        state_path: Option<&str>,
        sampler_path: Option<&str>,
        now: f64,
    ) -> (String, Option<String>) {
        if order.periodic {
            self.last_saved = (self.elapsed_tokens, now);
            // train_dpo's step metrics name the periodic checkpoint saved before it.
            if let (Some(_), Some(s)) = (self.cfg.dpo_beta, self.in_flight.back_mut()) {
                s.metrics.insert("state_path".into(), json!(state_path));
            }
        }
        let mut paths = Map::new();
        paths.insert("state_path".into(), json!(state_path));
        if order.both {
            paths.insert("sampler_path".into(), json!(sampler_path));
        }
        let delete = if order.rolling {
            std::mem::replace(&mut self.rolling_prev, state_path.map(String::from))
        } else {
            None
        };
        (dumps(&record(&order.name, &order.state, &paths)), delete)
    }

    /// The run is over (after its last save): the rolling checkpoint left to delete
    /// (`CheckpointManager.finalize_async`).
    pub fn finalize(&mut self) -> Option<String> {
        self.rolling_prev.take()
    }

    fn loop_state(&self, epoch: u64, batch: u64) -> Map<String, Json> {
        let mut m = Map::new();
        m.insert("epoch".into(), epoch.into());
        m.insert("batch".into(), batch.into());
        if self.cfg.dpo_beta.is_none() {
            m.insert("elapsed_tokens".into(), self.elapsed_tokens.into());
        }
        m
    }

    fn save_order(
        &self,
        name: String,
        state: Map<String, Json>,
        both: bool,
        periodic: bool,
    ) -> SaveOrder {
        SaveOrder {
            name,
            ttl_seconds: self.cfg.ttl_seconds,
            both,
            rolling: false,
            background: false,
            state,
            periodic,
        }
    }

    /// The datums of a step's batch, in the epoch's order.
    fn batch_data(&mut self, at: Step) -> Result<Vec<Datum>, InputError> {
        if self.order.0 != at.epoch {
            self.order = (at.epoch, epoch_order(&self.train_rows, at.epoch));
        }
        let rows = batch(&self.order.1, self.cfg.batch_size, at.batch as usize).to_vec();
        self.datums(&rows)
    }

    /// The datums of rows: a conversation's (`conversation_to_datum` with mean
    /// reduction), or a comparison's chosen and rejected ones (none for a row the
    /// cookbook skips; sums, on the last assistant message).
    fn datums(&self, rows: &[usize]) -> Result<Vec<Datum>, InputError> {
        let tok = self
            .tokenizer
            .as_deref()
            .expect("set_tokenizer before the first step");
        let dpo = self.cfg.dpo_beta.is_some();
        let (train_on, reduction) = match dpo {
            true => (TrainOnWhat::LastAssistantMessage, Reduction::None),
            false => (self.cfg.train_on_what, Reduction::Mean),
        };
        let mut out = Vec::new();
        for &r in rows {
            let (at, row) = (format!("rows[{r}]"), &self.rows[r]);
            let convos = match dpo {
                true => pair(row),
                false => Some(Message::list_from_json(&row["messages"]).map(|m| vec![m])),
            };
            for messages in convos
                .transpose()
                .map_err(|e| e.within(&at))?
                .unwrap_or_default()
            {
                let d = conversation_to_datum(
                    &self.renderer,
                    tok,
                    &messages,
                    self.cfg.max_length,
                    train_on,
                    reduction,
                );
                out.push(d.map_err(|e| {
                    InputError::type_error(format!("{at}.messages"), e.to_string())
                })?);
            }
        }
        Ok(out)
    }
}

/// A sampler's prompt logprobs without the first position's (which has none).
fn unscored(logprobs: &[f32]) -> &[f32] {
    logprobs.get(1..).unwrap_or_default()
}

/// A `.jsonl` line as the cookbook writes it (`json.dumps`, then a newline).
pub fn dumps(v: &Map<String, Json>) -> String {
    let text =
        tinker_tokenizer::py_json::dumps_json(&Json::Object(v.clone()), (", ", ": "), true, None);
    text + "\n"
}

/// Refuses a config that cannot train before anything is sent.
fn check(cfg: &SftConfig, train_rows: usize) -> Result<(), InputError> {
    if cfg.batch_size == 0 {
        return Err(InputError::range_error(
            "batch_size",
            "must be at least 1, got 0",
        ));
    }
    if cfg.plan.n_batches == 0 {
        return Err(InputError::range_error(
            "batch_size",
            format!(
                "is larger than the training data: {} rows make no batch of {}",
                train_rows, cfg.batch_size
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(n: usize) -> Vec<Json> {
        (0..n)
            .map(|i| json!({"messages": [{"role": "user", "content": format!("q{i}")}]}))
            .collect()
    }

    fn run(checkpoints: &str, edit: impl FnOnce(&mut SftConfig)) -> Result<Sft, InputError> {
        let mut cfg = SftConfig::new("Qwen/Qwen3-8B", "qwen3", 2);
        cfg.plan.num_epochs = 2;
        edit(&mut cfg);
        Sft::new(cfg, rows(6), checkpoints, 0.0)
    }

    const SAVED: &str = r#"{"name": "000002", "batch": 2, "epoch": 0, "state_path": "tinker://r/weights/000002", "elapsed_tokens": 40}"#;

    #[test]
    fn a_run_starts_new_from_weights_or_resumes_from_its_last_state() {
        let fresh = run("", |_| {}).unwrap();
        let lora = Start::Lora {
            base_model: "Qwen/Qwen3-8B".into(),
            rank: 32,
        };
        assert_eq!(fresh.start(), lora);
        let from = run("", |c| {
            c.load_checkpoint_path = Some("tinker://x/weights/w".into())
        })
        .unwrap();
        let weights = Start::FromState {
            path: "tinker://x/weights/w".into(),
            with_optimizer: false,
        };
        assert_eq!(from.start(), weights);
        let resumed = run(SAVED, |c| c.load_checkpoint_path = Some("ignored".into())).unwrap();
        let state = Start::FromState {
            path: "tinker://r/weights/000002".into(),
            with_optimizer: true,
        };
        assert_eq!(resumed.start(), state);
        assert_eq!(resumed.user_metadata(), ("renderer_name", "qwen3"));
    }

    #[test]
    fn a_resumed_run_drops_the_metrics_rows_from_its_step_on() {
        let metrics = "{\"step\": 0}\n{\"step\": 1}\n{\"step\": 2}\n{\"step\": 3}\n";
        assert_eq!(run("", |_| {}).unwrap().truncate_metrics(metrics), None);
        let cut = run(SAVED, |_| {}).unwrap().truncate_metrics(metrics);
        let kept = "{\"step\": 0}\n{\"step\": 1}\n".to_string();
        assert_eq!(cut, Some(("metrics.jsonl.pre_resume_000002".into(), kept)));
        let none_dropped = run(SAVED, |_| {})
            .unwrap()
            .truncate_metrics("{\"step\": 1}\n");
        assert_eq!(none_dropped, None);
    }

    #[test]
    fn the_last_save_is_final_or_where_a_stopped_run_stopped() {
        let done = run("", |_| {}).unwrap();
        let last = done.end_save().unwrap();
        assert_eq!(
            (last.name.as_str(), last.ttl_seconds, last.both),
            ("final", None, true)
        );
        // Stopped before its first step: nothing trained, nothing saved.
        let mut stopped = run("", |_| {}).unwrap();
        stopped.stop();
        assert_eq!((stopped.stopped_at(), stopped.end_save()), (Some(0), None));
        // Resumed at step 2 and stopped at once: nothing new to save either.
        let mut again = run(SAVED, |_| {}).unwrap();
        again.stop();
        assert_eq!((again.stopped_at(), again.end_save()), (Some(2), None));
        // A finished run resumed: nothing left to train, no final save.
        let finished = r#"{"name": "final", "epoch": 2, "batch": 0, "state_path": "tinker://r/weights/final"}"#;
        assert_eq!(run(finished, |_| {}).unwrap().end_save(), None);
    }

    #[test]
    fn bad_config_is_refused_before_anything_is_sent() {
        let big = run("", |c| c.batch_size = 7).err().unwrap().to_string();
        assert!(big.contains("6 rows make no batch of 7"), "{big}");
        let zero = run("", |c| c.batch_size = 0).err().unwrap().to_string();
        assert!(zero.contains("batch_size"), "{zero}");
        let renderer = run("", |c| c.renderer_name = "qwen9".into())
            .err()
            .unwrap()
            .to_string();
        assert!(renderer.contains("renderer_name"), "{renderer}");
    }
}
