//! `supervised.train.main` over a conversation file: the cookbook's loop, as it orders
//! its requests (submit ahead, saves before a step's results are awaited), its
//! `checkpoints.jsonl` and `metrics.jsonl`, and resume from its log folder.
//!
//! With a held-out set, `SamplerNLLEvaluator` runs before every `eval_every`-th step.
//! Not yet here: user evaluators, the `time/*` metrics, rolling saves in the background
//! (they are awaited in line).

use std::collections::VecDeque;

use futures_util::future::{FutureExt, LocalBoxFuture};
use serde_json::{json, Map, Value as Json};
use tinker_core::call::CallOptions;
use tinker_core::error::Error as ClientError;
use tinker_core::proto::ForwardBackwardOutput;
use tinker_core::sampling::SamplingOptions;
use tinker_core::service::{FromStateOptions, LoraOptions, ServiceClient};
use tinker_core::training::{OptimParams, TrainingClient};
use tinker_core::types::{AdamParams, Datum, LoraConfig, TensorValues};
use tinker_core::{StrMap, Value};
use tinker_renderers::{conversation_to_datum, Message, Reduction, Renderer, TrainOnWhat};
use tinker_support::input::InputError;
use tinker_tokenizer::Tokenizer;

use crate::checkpoints::{last_checkpoint, parse_records, record};
use crate::data::{batch, batches_per_epoch, epoch_order, split};
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
            adam_beta1: 0.9,
            adam_beta2: 0.95,
            adam_eps: 1e-8,
            submit_ahead: 1,
            batch_size,
            max_length: None,
            train_on_what: TrainOnWhat::AllAssistantMessages,
            test_size: 0,
            shuffle_seed: 0,
        }
    }
}

/// Where a run keeps its files (the cookbook's `log_path`): a folder in Node, a store
/// elsewhere. Names are `checkpoints.jsonl` and `metrics.jsonl`.
pub trait RunFiles {
    /// The file's text (`None`: no such file).
    fn read(&self, name: &str) -> LocalBoxFuture<'_, Result<Option<String>, String>>;
    /// Appends to the file (creating it).
    fn append(&self, name: &str, text: String) -> LocalBoxFuture<'_, Result<(), String>>;
    /// Replaces the file.
    fn write(&self, name: &str, text: String) -> LocalBoxFuture<'_, Result<(), String>>;
}

/// What a run needs besides its config.
pub struct SftRun<'a> {
    /// The client to train with.
    pub service: &'a ServiceClient,
    /// The conversation file's rows ([`crate::data::parse_conversations`]).
    pub rows: &'a [Json],
    /// The model's tokenizer and the config's renderer.
    pub tokenizer: &'a Tokenizer,
    /// See `tokenizer`.
    pub renderer: &'a Renderer,
    /// The run's files.
    pub files: &'a dyn RunFiles,
    /// Called with each step's metrics line (after it is written).
    pub on_metrics: &'a dyn Fn(&Map<String, Json>),
    /// Seconds on a monotonic clock (for `save_every_seconds`).
    pub now: &'a dyn Fn() -> f64,
}

/// Why a run stopped.
#[derive(Debug)]
pub enum SftError {
    /// Bad config or data, before anything was sent.
    Input(InputError),
    /// A call failed.
    Client(ClientError),
    /// The run's files could not be read or written.
    Files(String),
}

impl From<InputError> for SftError {
    fn from(e: InputError) -> Self {
        SftError::Input(e)
    }
}

impl From<ClientError> for SftError {
    fn from(e: ClientError) -> Self {
        SftError::Client(e)
    }
}

impl std::fmt::Display for SftError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SftError::Input(e) => e.fmt(f),
            SftError::Client(e) => e.fmt(f),
            SftError::Files(e) => f.write_str(e),
        }
    }
}

type Result<T, E = SftError> = std::result::Result<T, E>;

/// The run's place and counters.
struct Trainer<'a> {
    run: SftRun<'a>,
    cfg: SftConfig,
    client: TrainingClient,
    train_rows: Vec<usize>,
    test_data: Vec<Datum>,
    order: (u64, Vec<usize>),
    elapsed_tokens: u64,
    last_saved: (u64, f64),
    rolling_path: Option<String>,
}

/// A step whose requests are sent and whose results are not yet read.
struct Submitted {
    at: Step,
    metrics: Map<String, Json>,
    data: Vec<Datum>,
    num_tokens: u64,
    fwd: LocalBoxFuture<'static, std::result::Result<ForwardBackwardOutput, ClientError>>,
    opt: LocalBoxFuture<'static, std::result::Result<Value, ClientError>>,
    evals: Option<Map<String, Json>>,
}

/// Runs `supervised.train.main`: trains on `run.rows` with `cfg`, resuming from the
/// last checkpoint in `run.files` if there is one.
pub async fn train(run: SftRun<'_>, mut cfg: SftConfig) -> Result<()> {
    let records = read_records(run.files).await?;
    let resume = last_checkpoint(&records, "state_path");
    let (start_epoch, start_batch, resumed_tokens) = resume_point(resume.as_ref());
    let rows = split(run.rows.len(), cfg.test_size, cfg.shuffle_seed);
    cfg.plan.n_batches = batches_per_epoch(rows.train.len(), cfg.batch_size) as u64;
    check(&cfg, rows.train.len())?;
    let client = create_client(run.service, &cfg, resume.as_ref()).await?;
    if resume.is_some() {
        truncate_metrics(run.files, start_epoch * cfg.plan.n_batches + start_batch).await?;
    }
    let now = (run.now)();
    let mut t = Trainer {
        run,
        cfg,
        client,
        train_rows: rows.train,
        test_data: Vec::new(),
        order: (u64::MAX, Vec::new()),
        elapsed_tokens: resumed_tokens,
        last_saved: (resumed_tokens, now),
        rolling_path: None,
    };
    t.test_data = rows
        .test
        .iter()
        .map(|&r| t.datum(r))
        .collect::<Result<_, _>>()?;
    let plan = t.cfg.plan.clone();
    let mut pending = VecDeque::new();
    for step in plan.steps(start_epoch, start_batch) {
        pending.push_back(t.submit(step).await?);
        if pending.len() as u64 > t.cfg.submit_ahead {
            t.finish(pending.pop_front().expect("a pending step"))
                .await?;
        }
    }
    while let Some(s) = pending.pop_front() {
        t.finish(s).await?;
    }
    if plan.trains_from(start_epoch, start_batch) {
        let state =
            json!({"epoch": plan.num_epochs, "batch": 0, "elapsed_tokens": t.elapsed_tokens});
        t.save("final", &state, true, None).await?;
    }
    Ok(())
}

/// Refuses a config that cannot train before anything is sent.
fn check(cfg: &SftConfig, train_rows: usize) -> std::result::Result<(), InputError> {
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

async fn read_records(files: &dyn RunFiles) -> Result<Vec<Map<String, Json>>> {
    let text = files
        .read("checkpoints.jsonl")
        .await
        .map_err(SftError::Files)?;
    Ok(parse_records(text.as_deref().unwrap_or(""))?)
}

/// `(start_epoch, start_batch, elapsed_tokens)` of the record a run resumes from.
fn resume_point(rec: Option<&Map<String, Json>>) -> (u64, u64, u64) {
    let n = |k: &str| {
        rec.and_then(|r| r.get(k))
            .and_then(Json::as_u64)
            .unwrap_or(0)
    };
    (n("epoch"), n("batch"), n("elapsed_tokens"))
}

/// The training client: from the resumed state with its optimizer, else from
/// `load_checkpoint_path`'s weights, else a new LoRA run.
async fn create_client(
    service: &ServiceClient,
    cfg: &SftConfig,
    resume: Option<&Map<String, Json>>,
) -> Result<TrainingClient> {
    let mut meta = StrMap::new();
    meta.insert("renderer_name", cfg.renderer_name.clone());
    let from = |path: &str, with_optimizer| FromStateOptions {
        path: path.into(),
        with_optimizer,
        user_metadata: Some(meta.clone()),
        ..FromStateOptions::default()
    };
    let call = CallOptions::default();
    let fut = match (resume, &cfg.load_checkpoint_path) {
        (Some(r), _) => {
            let path = r["state_path"].as_str().unwrap_or_default();
            service.create_training_client_from_state(from(path, true), call)?
        }
        (None, Some(path)) => service.create_training_client_from_state(from(path, false), call)?,
        (None, None) => service.create_lora_training_client(
            LoraOptions {
                base_model: cfg.model_name.clone(),
                lora: LoraConfig::new(cfg.lora_rank),
                user_metadata: Some(meta.clone()),
                optimizer: None,
            },
            call,
        )?,
    };
    Ok(fut.await?)
}

/// `store.truncate_metrics(step)`: drops the metrics rows at or after the resumed step,
/// keeping the old file as `metrics.jsonl.pre_resume_{step:06d}` when any is dropped.
async fn truncate_metrics(files: &dyn RunFiles, step: u64) -> Result<()> {
    let Some(text) = files.read("metrics.jsonl").await.map_err(SftError::Files)? else {
        return Ok(());
    };
    let keep = |line: &&str| {
        serde_json::from_str::<Json>(line)
            .ok()
            .and_then(|v| v.get("step").and_then(Json::as_u64))
            .is_none_or(|s| s < step)
    };
    let kept: Vec<&str> = text.lines().filter(keep).collect();
    if kept.len() == text.lines().count() {
        return Ok(());
    }
    let backup = format!("metrics.jsonl.pre_resume_{step:06}");
    files
        .write(&backup, text.clone())
        .await
        .map_err(SftError::Files)?;
    let body: String = kept.iter().map(|l| format!("{l}\n")).collect();
    files
        .write("metrics.jsonl", body)
        .await
        .map_err(SftError::Files)
}

impl Trainer<'_> {
    /// `submit_batch`: the step's data, its evaluation if one is due, then its
    /// forward_backward and optim_step.
    async fn submit(&mut self, at: Step) -> Result<Submitted> {
        let plan = &self.cfg.plan;
        let lr = plan.learning_rate(at.step)?;
        let mut metrics = Map::new();
        metrics.insert("epoch".into(), at.epoch.into());
        metrics.insert("progress".into(), json!(plan.progress(at.step).0));
        metrics.insert("learning_rate".into(), json!(lr));
        let adam = AdamParams {
            learning_rate: lr,
            beta1: self.cfg.adam_beta1,
            beta2: self.cfg.adam_beta2,
            eps: self.cfg.adam_eps,
            ..AdamParams::default()
        };
        let data = self.batch_data(at)?;
        let evals = if self.cfg.plan.evals(at.step).0 && !self.test_data.is_empty() {
            Some(self.evaluate().await?)
        } else {
            None
        };
        let num_tokens = data
            .iter()
            .map(|d| d.model_input.length().unwrap_or(0) as u64)
            .sum();
        let call = CallOptions::default;
        let fwd = self
            .client
            .forward_backward(data.clone(), "cross_entropy", None, call())?;
        let opt = self.client.optim_step(OptimParams::Adam(adam), call())?;
        let (fwd, opt) = (self.eager(fwd), self.eager(opt));
        Ok(Submitted {
            at,
            metrics,
            data,
            num_tokens,
            fwd,
            opt,
            evals,
        })
    }

    /// `SamplerNLLEvaluator(test, name="test")`: the held-out rows scored by a sampler of
    /// the current weights (`test/nll`, `test/bpb`).
    async fn evaluate(&self) -> Result<Map<String, Json>> {
        let call = CallOptions::default;
        let sampler = self
            .client
            .save_weights_and_get_sampling_client("snapshot", SamplingOptions::default(), call())?
            .await?;
        let mut pending = Vec::new();
        for d in &self.test_data {
            pending.push(self.eager(sampler.compute_logprobs(scored_prompt(d), None, call())?));
        }
        let mut logprobs = Vec::new();
        for p in pending {
            let lp = p.await?;
            logprobs.push(
                lp.iter()
                    .skip(1)
                    .map(|x| x.unwrap_or(f32::NAN))
                    .collect::<Vec<f32>>(),
            );
        }
        let mut m = Map::new();
        m.insert(
            "test/nll".into(),
            json!(mean_nll(&logprobs, &self.test_data)),
        );
        m.insert(
            "test/bpb".into(),
            json!(bpb(&logprobs, &self.test_data, self.run.tokenizer)),
        );
        Ok(m)
    }

    /// Sends a call now, as the cookbook's `*_async` calls do (a call's future only sends
    /// its request when polled, and later calls wait for its turn in the model's order).
    fn eager<T: 'static>(&self, fut: LocalBoxFuture<'static, T>) -> LocalBoxFuture<'static, T> {
        let (remote, handle) = fut.remote_handle();
        self.client.holder().env().spawn(Box::pin(remote));
        Box::pin(handle)
    }

    /// The datums of a step's batch, in the epoch's order.
    fn batch_data(&mut self, at: Step) -> Result<Vec<Datum>> {
        if self.order.0 != at.epoch {
            self.order = (at.epoch, epoch_order(&self.train_rows, at.epoch));
        }
        let rows = batch(&self.order.1, self.cfg.batch_size, at.batch as usize);
        rows.iter()
            .map(|&r| self.datum(r))
            .collect::<std::result::Result<_, _>>()
            .map_err(SftError::Input)
    }

    /// Row `r` of the file as a datum (`conversation_to_datum` with mean reduction).
    fn datum(&self, r: usize) -> std::result::Result<Datum, InputError> {
        let at = format!("rows[{r}].messages");
        let messages: Vec<Message> = self.run.rows[r]["messages"]
            .as_array()
            .map(|m| {
                m.iter()
                    .enumerate()
                    .map(|(i, v)| Message::from_json(v, &format!("{at}[{i}]")))
                    .collect()
            })
            .unwrap_or(Ok(Vec::new()))?;
        conversation_to_datum(
            self.run.renderer,
            self.run.tokenizer,
            &messages,
            self.cfg.max_length,
            self.cfg.train_on_what,
            Reduction::Mean,
        )
        .map_err(|e| InputError::type_error(at, e.to_string()))
    }

    /// `finish_batch`: a due save, then the step's results and its metrics line.
    async fn finish(&mut self, s: Submitted) -> Result<()> {
        let mut metrics = s.metrics;
        metrics.insert(
            "progress".into(),
            json!(self.cfg.plan.progress(s.at.step).1),
        );
        self.elapsed_tokens += s.num_tokens;
        self.maybe_save(s.at).await?;
        let out = s.fwd.await?;
        let opt = s.opt.await?;
        if let Some(m) = opt.get("metrics").and_then(Value::as_object) {
            for (k, v) in m.iter() {
                metrics.insert(
                    k.clone(),
                    serde_json::from_slice(&v.to_vec()).unwrap_or(Json::Null),
                );
            }
        }
        let trained = self.elapsed_tokens;
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
        let logprobs: Vec<Vec<f32>> = out
            .loss_fn_outputs
            .iter()
            .map(|o| match o.get("logprobs").map(|t| &t.values) {
                Some(TensorValues::Float32(v)) => v.clone(),
                _ => Vec::new(),
            })
            .collect();
        for (k, v) in [
            ("num_sequences", json!(s.data.len())),
            ("num_tokens", json!(s.num_tokens)),
            ("num_loss_tokens", json!(loss_tokens)),
            ("train_mean_nll", json!(mean_nll(&logprobs, &s.data))),
            ("tokens/sampled", json!(0)),
            ("tokens/prefill_cached", json!(0)),
            ("tokens/prefill_uncached", json!(0)),
            ("tokens/trained", json!(s.num_tokens)),
            ("tokens/cumulative/sampled", json!(0)),
            ("tokens/cumulative/prefill_cached", json!(0)),
            ("tokens/cumulative/prefill_uncached", json!(0)),
            ("tokens/cumulative/trained", json!(trained)),
            (
                "train_mean_bpb",
                json!(bpb(&logprobs, &s.data, self.run.tokenizer)),
            ),
        ] {
            metrics.insert(k.into(), v);
        }
        metrics.extend(s.evals.unwrap_or_default());
        self.log(s.at.step, metrics).await
    }

    /// Appends `{"step": step, **metrics}` to `metrics.jsonl` as Python's `json.dumps`.
    async fn log(&self, step: u64, metrics: Map<String, Json>) -> Result<()> {
        let mut line = Map::new();
        line.insert("step".into(), step.into());
        line.extend(metrics);
        let text = tinker_tokenizer::chat::py_json_dumps_with(
            &Json::Object(line.clone()),
            (", ", ": "),
            true,
            None,
        );
        self.run
            .files
            .append("metrics.jsonl", text + "\n")
            .await
            .map_err(SftError::Files)?;
        (self.run.on_metrics)(&line);
        Ok(())
    }

    /// `CheckpointManager.maybe_save_async`.
    async fn maybe_save(&mut self, at: Step) -> Result<()> {
        let since = (
            self.elapsed_tokens - self.last_saved.0,
            (self.run.now)() - self.last_saved.1,
        );
        let state =
            json!({"epoch": at.epoch, "batch": at.batch, "elapsed_tokens": self.elapsed_tokens});
        match self.cfg.plan.save(at.step, since.0, since.1) {
            Save::Periodic => {
                let ttl = self.cfg.ttl_seconds;
                self.save(&checkpoint_name(at.step), &state, true, ttl)
                    .await?;
                self.last_saved = (self.elapsed_tokens, (self.run.now)());
            }
            Save::Rolling => {
                let mut state = state;
                state["rolling"] = true.into();
                let ttl = Some(self.cfg.rolling_ttl_seconds);
                let path = self
                    .save(&checkpoint_name(at.step), &state, false, ttl)
                    .await?;
                self.rolling_path = path;
            }
            Save::None => {}
        }
        Ok(())
    }

    /// `save_checkpoint_async`: the state (and the sampler weights if `both`), then its
    /// record in `checkpoints.jsonl`. Returns the state's path.
    async fn save(
        &self,
        name: &str,
        state: &Json,
        both: bool,
        ttl: Option<u64>,
    ) -> Result<Option<String>> {
        let call = CallOptions::default;
        let st = self.eager(self.client.save_state(name, ttl, false, None, call())?);
        let sampler = both
            .then(|| {
                self.client
                    .save_weights_for_sampler(name, ttl, None, call())
            })
            .transpose()?
            .map(|f| self.eager(f));
        let mut paths = Map::new();
        let state_path = st
            .await?
            .get("path")
            .and_then(Value::as_str)
            .map(String::from);
        paths.insert("state_path".into(), json!(state_path));
        if let Some(s) = sampler {
            paths.insert(
                "sampler_path".into(),
                json!(s.await?.get("path").and_then(Value::as_str)),
            );
        }
        let rec = record(
            name,
            state.as_object().expect("a loop state object"),
            &paths,
        );
        let line = tinker_tokenizer::chat::py_json_dumps_with(
            &Json::Object(rec),
            (", ", ": "),
            true,
            None,
        );
        self.run
            .files
            .append("checkpoints.jsonl", line + "\n")
            .await
            .map_err(SftError::Files)?;
        Ok(state_path)
    }
}
