//! `TrainingClient`: a LoRA model being trained.
//!
//! Every method validates its input synchronously, takes its turn in the model's order
//! (see [`crate::sequencer`]) at call time, and returns a future; requests are sent in
//! call order and their results awaited independently.

use crate::map::StrMap;
use std::rc::Rc;

use futures_util::future::LocalBoxFuture;

use crate::call::{CallOptions, Guard};
use crate::chunking::{plan_chunks, Chunk};
use crate::endpoints::{self, Endpoint};
use crate::error::{Error, Result};
use crate::future::{retrieve, submit, unreadable, PauseLogger, Payload, Poll, QueueState};
use crate::http::Req;
use crate::json;
use crate::json::{Map, Value};
use crate::metrics::combine_forward_backward;
use crate::paths::console;
use crate::proto::{
    decode_forward_backward_output, encode_forward_backward, ForwardBackwardOutput,
    ForwardBackwardRequest, LossConfigValue,
};
use crate::sampling::{SamplingClient, SamplingOptions};
use crate::sequencer::{Sequencer, Turn};
use crate::session::Holder;
use crate::types::{
    fmt_num, validate_loss_fn, AdamParams, Datum, InputError, LossFnInputs, TensorData,
    TensorValues,
};

/// The body of a `forward_backward` request exactly as `TrainingClient` sends it: the
/// protobuf encoding, zstd-compressed (`Content-Encoding: zstd`) when `compress` (the
/// server's `proto_compress_fwdbwd`). Shared with the wasm benchmark export.
pub fn forward_backward_body(
    req: &ForwardBackwardRequest<'_>,
    compress: bool,
) -> std::result::Result<Vec<u8>, String> {
    let body = encode_forward_backward(req)?;
    Ok(if compress {
        crate::zstd::compress(&body)
    } else {
        body
    })
}

/// A loss function's config (`loss_fn_config`): numbers or strings by name.
pub type LossConfig = StrMap<LossConfigValue>;

/// Model information fetched once when the client is created (`get_info`).
#[derive(Debug, Clone)]
pub struct ModelInfo {
    /// The model id.
    pub model_id: String,
    /// The base model's name.
    pub model_name: Option<String>,
    /// The tokenizer id (variant suffix after `:` removed).
    pub tokenizer_id: Option<String>,
    /// LoRA rank.
    pub lora_rank: Option<u32>,
    /// The whole `get_info` response.
    pub raw: Value,
}

impl ModelInfo {
    fn from_raw(mut raw: Value) -> Result<Self> {
        // Python's GetInfoResponse defaults a missing optimizer_config to AdamW.
        if let Some(o) = raw.as_object_mut() {
            o.get_or_insert_with("optimizer_config", || json!({ "type": "adamw" }));
        }
        strip_tokenizer_variant(&mut raw);
        let model_id = raw
            .get("model_id")
            .and_then(Value::as_str)
            .ok_or_else(|| Error::InvalidResponse {
                message: format!("get_info response without model_id: {raw}"),
            })?
            .to_string();
        let data = raw.get("model_data");
        let s = |v: Option<&Value>| v.and_then(Value::as_str).map(str::to_string);
        Ok(ModelInfo {
            model_name: s(data.and_then(|d| d.get("model_name")))
                .or_else(|| s(raw.get("model_name"))),
            tokenizer_id: s(data.and_then(|d| d.get("tokenizer_id"))),
            lora_rank: raw
                .get("lora_rank")
                .and_then(Value::as_u64)
                .map(|r| r as u32),
            model_id,
            raw,
        })
    }
}

/// Cuts a `:variant` suffix off `model_data.tokenizer_id` of a `get_info` answer, in
/// the answer itself (what `getInfo()` returns), as Python's `models.get_info` does
/// (`resources/models.py:80-85`: when the id is non-empty, `split(":")[0]`).
fn strip_tokenizer_variant(raw: &mut Value) {
    let Some(t) = raw
        .as_object_mut()
        .and_then(|o| o.get_mut("model_data"))
        .and_then(Value::as_object_mut)
        .and_then(|d| d.get_mut("tokenizer_id"))
    else {
        return;
    };
    let cut = t
        .as_str()
        .filter(|id| !id.is_empty())
        .map(|id| id.split(':').next().unwrap_or_default().to_string());
    if let Some(id) = cut {
        *t = Value::from(id);
    }
}

/// Parameters of an optimizer step: Adam, or another family's params (with `type`).
#[derive(Debug, Clone)]
pub enum OptimParams {
    /// AdamW.
    Adam(AdamParams),
    /// Another optimizer family (e.g. `{"type":"dimuon","learning_rate":…}`).
    Other(Map),
}

/// Python 0.38's `DimuonParams`: `learning_rate` (required, >= 0), `grad_clip_norm`
/// (default 0.0) and `beta1` (default 0.9, in [0, 1)), no other fields; sent with its
/// defaults filled in, as Python serializes the model.
fn dimuon_params(m: &Map) -> Result<Value> {
    if let Some(k) = m.keys().find(|k| {
        !matches!(
            k.as_str(),
            "type" | "learning_rate" | "grad_clip_norm" | "beta1"
        )
    }) {
        return Err(InputError::type_error(
            format!("optim_params.{k}"),
            "is not a Dimuon parameter (learning_rate, grad_clip_norm, beta1)",
        )
        .into());
    }
    let num = |k: &str, default: Option<f64>| -> Result<f64> {
        match (m.get(k), default) {
            (None | Some(Value::Null), Some(d)) => Ok(d),
            (None | Some(Value::Null), None) => Err(InputError::type_error(
                format!("optim_params.{k}"),
                "is required for the Dimuon optimizer",
            )
            .into()),
            (Some(v), _) => v.as_f64().filter(|x| x.is_finite()).ok_or_else(|| {
                InputError::type_error(
                    format!("optim_params.{k}"),
                    format!("must be a finite number, got {v}"),
                )
                .into()
            }),
        }
    };
    let (lr, clip, beta1) = (
        num("learning_rate", None)?,
        num("grad_clip_norm", Some(0.0))?,
        num("beta1", Some(0.9))?,
    );
    if lr < 0.0 {
        return Err(InputError::range_error(
            "optim_params.learning_rate",
            format!("must be >= 0, got {}", fmt_num(lr)),
        )
        .into());
    }
    if !(0.0..1.0).contains(&beta1) {
        return Err(InputError::range_error(
            "optim_params.beta1",
            format!("must be in [0, 1), got {}", fmt_num(beta1)),
        )
        .into());
    }
    Ok(json!({ "type": "dimuon", "learning_rate": lr, "grad_clip_norm": clip, "beta1": beta1 }))
}

/// What `forward_backward_custom`'s loss function returns.
#[derive(Debug, Clone, Default)]
pub struct CustomLossOutput {
    /// The loss value (reported as `loss:sum`).
    pub loss: f64,
    /// ∂loss/∂logprobs per datum, shaped like that datum's logprobs.
    pub gradients: Vec<Vec<f32>>,
    /// Extra metrics merged into the result.
    pub metrics: StrMap<f64>,
}

/// A custom loss: (data, per-datum logprobs) → loss, gradients, metrics.
pub type CustomLossFn =
    Rc<dyn Fn(Vec<Datum>, Vec<TensorData>) -> LocalBoxFuture<'static, Result<CustomLossOutput>>>;

pub(crate) struct Inner {
    pub holder: Rc<Holder>,
    pub model_id: String,
    pub info: ModelInfo,
    pub seq: Sequencer,
    pub pauses: PauseLogger,
}

/// A training run (LoRA model) on the server.
#[derive(Clone)]
pub struct TrainingClient(pub(crate) Rc<Inner>);

/// A JSON future's result (`retrieve` refuses protobuf for these). The saves that name a
/// checkpoint must answer its `path`: Python's `save_weights_for_sampler` and
/// `save_weights_external` assert it (their futures' models leave it optional).
fn json_future(p: Payload, method: &str) -> Result<Value> {
    let named_save = matches!(
        method,
        "TrainingClient.save_weights_for_sampler" | "TrainingClient.save_weights_external"
    );
    match p {
        Payload::Json(v) if named_save && v.get("path").and_then(Value::as_str).is_none() => {
            Err(Error::InvalidResponse {
                message: format!("{method}: the result has no path: {v}"),
            })
        }
        Payload::Json(v) => Ok(v),
        Payload::Proto(_) => Err(Error::InvalidResponse {
            message: "a protobuf result for a JSON future".into(),
        }),
    }
}

fn check_config(config: Option<&LossConfig>) -> Result<(), InputError> {
    for (k, v) in config.into_iter().flatten() {
        if let LossConfigValue::Number(x) = v {
            if !x.is_finite() {
                return Err(InputError::range_error(
                    format!("loss_fn_config.{k}"),
                    format!("must be a finite number, got {}", fmt_num(*x)),
                ));
            }
        }
    }
    Ok(())
}

fn check_batch(data: &[Datum], loss_fn: &str) -> Result<(), InputError> {
    if data.is_empty() {
        return Err(InputError::range_error(
            "data",
            "must contain at least one Datum",
        ));
    }
    for (i, d) in data.iter().enumerate() {
        d.validate(loss_fn)
            .map_err(|e| e.within(&format!("data[{i}]")))?;
    }
    Ok(())
}

impl TrainingClient {
    /// Connects a client to a model that exists on the server; fetches its info once.
    /// `next_seq_id` is 1 for a freshly created model.
    pub async fn attach(
        holder: Rc<Holder>,
        model_id: String,
        next_seq_id: i64,
        sdk_method: Option<&'static str>,
    ) -> Result<Self> {
        let body = json!({ "model_id": model_id, "type": "get_info" });
        let req = Req::to(&endpoints::GET_INFO).json(&body);
        let raw: Value = holder.json(req.method_name(sdk_method)).await?;
        let info = ModelInfo::from_raw(raw)?;
        Ok(TrainingClient(Rc::new(Inner {
            holder,
            pauses: PauseLogger::new("Training", &model_id),
            model_id,
            info,
            seq: Sequencer::new(next_seq_id),
        })))
    }

    /// The model id (also the training run id).
    pub fn model_id(&self) -> &str {
        &self.0.model_id
    }
    /// The model's info (from creation; no request).
    pub fn info(&self) -> &ModelInfo {
        &self.0.info
    }
    /// The seq id the next request will use (to resume this model elsewhere).
    pub fn next_seq_id(&self) -> i64 {
        self.0.seq.next_seq_id()
    }
    /// The Tinker Console page of this run.
    pub fn console_url(&self) -> String {
        console::training_run(&self.0.model_id)
    }
    /// The holder (shared session state).
    pub fn holder(&self) -> &Rc<Holder> {
        &self.0.holder
    }

    fn precheck(&self, opts: &CallOptions, what: &str) -> Result<Guard> {
        self.0.holder.ensure_open()?;
        if let Some(why) = self.0.seq.poisoned() {
            return Err(Error::Closed { message: format!("A previous request failed; this TrainingClient is poisoned and cannot accept further requests ({why})") });
        }
        let g = Guard::new(self.0.holder.env(), opts, what);
        g.check()?;
        Ok(g)
    }

    /// Computes the loss and its per-datum outputs without gradients.
    pub fn forward(
        &self,
        data: Vec<Datum>,
        loss_fn: &str,
        config: Option<LossConfig>,
        opts: CallOptions,
    ) -> Result<LocalBoxFuture<'static, Result<ForwardBackwardOutput>>> {
        self.fwd_bwd(data, loss_fn, config, true, opts, "TrainingClient.forward")
    }

    /// Computes the loss and accumulates gradients (applied by the next `optim_step`).
    pub fn forward_backward(
        &self,
        data: Vec<Datum>,
        loss_fn: &str,
        config: Option<LossConfig>,
        opts: CallOptions,
    ) -> Result<LocalBoxFuture<'static, Result<ForwardBackwardOutput>>> {
        self.fwd_bwd(
            data,
            loss_fn,
            config,
            false,
            opts,
            "TrainingClient.forward_backward",
        )
    }

    fn fwd_bwd(
        &self,
        data: Vec<Datum>,
        loss_fn: &str,
        config: Option<LossConfig>,
        forward_only: bool,
        opts: CallOptions,
        method: &'static str,
    ) -> Result<LocalBoxFuture<'static, Result<ForwardBackwardOutput>>> {
        validate_loss_fn(loss_fn)?;
        check_batch(&data, loss_fn)?;
        check_config(config.as_ref())?;
        let guard = self.precheck(&opts, method)?;
        let chunks = self.plan(&data);
        let ticket = self.0.seq.ticket();
        let me = self.clone();
        let loss_fn = loss_fn.to_string();
        Ok(Box::pin(async move {
            let turn = guard.run(async { ticket.wait().await }).await?;
            let spec = FwdBwd {
                call: &guard,
                data: Rc::new(data),
                loss_fn: &loss_fn,
                config: config.as_ref(),
                forward_only,
                method,
            };
            let ids = me.submit_chunks(&turn, &spec, &chunks).await;
            drop(turn);
            let r = match ids {
                Ok(ids) => guard.run(me.collect(ids, spec.ep(), method)).await,
                Err(e) => Err(e),
            };
            me.0.holder.reported(r).await
        }))
    }

    /// The chunks of a batch, as the server's limits cut it.
    fn plan(&self, data: &[Datum]) -> Vec<Chunk> {
        let cfg = self.0.holder.config();
        plan_chunks(
            data,
            cfg.fwdbwd_max_chunk_len,
            cfg.fwdbwd_max_chunk_bytes_count,
        )
    }

    /// Reserves seq ids for `chunks` and submits them: all but the first concurrently,
    /// then the first (the server starts the batch once the lowest id arrives), or one
    /// at a time when the server disables parallel chunks. Returns request ids and
    /// submit round trips in chunk order.
    async fn submit_chunks(
        &self,
        turn: &Turn,
        spec: &FwdBwd<'_>,
        chunks: &[Chunk],
    ) -> Result<Vec<SentChunk>> {
        let first = turn.reserve(chunks.len());
        self.submit_reserved(first, spec, chunks).await
    }

    /// Submits reserved chunks as Python's `_run_fwd_bwd` does
    /// (`training_client.py:446-460`): in parallel mode `asyncio.gather` of chunks 2..n
    /// raises the first failure before chunk 1 is submitted, so chunk 1 is never sent
    /// after a failure; in serial mode every chunk is gathered (each waiting its turn),
    /// so a failed chunk does not stop the later ones, and the call fails with the first
    /// failure once they went out.
    async fn submit_reserved(
        &self,
        first_seq: i64,
        spec: &FwdBwd<'_>,
        chunks: &[Chunk],
    ) -> Result<Vec<SentChunk>> {
        let h = &self.0.holder;
        let started = h.env().now_ms();
        let submit = |i: usize| self.submit_chunk(first_seq + i as i64, spec, &chunks[i], started);
        if h.config().parallel_fwdbwd_chunks && chunks.len() > 1 {
            let rest = crate::sync::join_all((1..chunks.len()).map(submit)).await;
            let rest = rest.into_iter().collect::<Result<Vec<_>>>()?;
            let mut out = vec![submit(0).await?];
            out.extend(rest);
            Ok(out)
        } else {
            let mut out = vec![];
            let mut failure = None;
            for i in 0..chunks.len() {
                match submit(i).await {
                    Ok(s) => out.push(s),
                    Err(e) => {
                        failure.get_or_insert(e);
                    }
                }
            }
            failure.map_or(Ok(out), Err)
        }
    }

    /// Submits one chunk as seq id `seq_id` under its byte budget and the holder's
    /// retries; its request id and the seconds since `started_ms` (Python
    /// `request_queue_roundtrip_time`, `api_future_impl.py:233-235`, sent with the
    /// first poll).
    async fn submit_chunk(
        &self,
        seq_id: i64,
        spec: &FwdBwd<'_>,
        chunk: &Chunk,
        started_ms: f64,
    ) -> Result<(String, f64)> {
        let h = &self.0.holder;
        let seq_id = i32::try_from(seq_id).map_err(|_| Error::Closed {
            message: "seq_id overflow".into(),
        })?;
        let compressed = h.config().proto_compress_fwdbwd;
        let body = forward_backward_body(
            &ForwardBackwardRequest {
                model_id: &self.0.model_id,
                seq_id,
                data: &spec.data[chunk.range.clone()],
                loss_fn: spec.loss_fn,
                loss_fn_config: spec.config,
                forward_only: spec.forward_only,
            },
            compressed,
        )
        .map_err(|m| InputError::type_error("data", m))?;
        let body = Rc::new(body);
        let _budget = h.budgets.fwdbwd.acquire(chunk.estimated_bytes as i64).await;
        let mut attempt = || {
            let req = Req::to(spec.ep())
                .method_name(Some(spec.method))
                .under(spec.call);
            req.protobuf(body.clone(), compressed)
        };
        let sub = submit(h, spec.ep(), &mut attempt).await?;
        Ok((
            sub.future.request_id,
            (h.env().now_ms() - started_ms) / 1000.0,
        ))
    }

    /// Polls the chunks' results (`ep`: forward or forward/backward) and combines them.
    async fn collect(
        &self,
        ids: Vec<SentChunk>,
        ep: &'static Endpoint,
        method: &'static str,
    ) -> Result<ForwardBackwardOutput> {
        let h = &self.0.holder;
        let observe = |qs: QueueState, r: Option<&str>| self.0.pauses.observe(h, qs, r);
        let polls = ids.iter().map(|(id, roundtrip)| async move {
            let poll = Poll {
                submit_roundtrip_secs: *roundtrip,
                ..Poll::new(id, ep, Some(method), Some(&observe))
            };
            let request_type = poll.request_type;
            let p = retrieve(h, poll).await?;
            match p {
                Payload::Proto(b) => decode_forward_backward_output(&b)
                    .map_err(|m| unreadable(h, id, request_type, Some(b.len()), &m)),
                Payload::Json(_) => unreachable!("retrieve rejects JSON for protobuf results"),
            }
        });
        let results = crate::sync::try_join_all(polls).await?;
        combine_forward_backward(results).map_err(|m| Error::InvalidResponse { message: m })
    }

    /// Runs one single-request operation in turn: builds its body with the assigned
    /// seq id (again for every attempt), submits it to `ep` under its retries, then
    /// polls its result.
    fn simple_op(
        &self,
        opts: CallOptions,
        method: &'static str,
        ep: &'static Endpoint,
        body: impl Fn(i64) -> Value + 'static,
    ) -> Result<LocalBoxFuture<'static, Result<Value>>> {
        // One instantiation of the (large) operation for every kind of request.
        self.simple_op_boxed(opts, method, ep, Box::new(body))
    }

    fn simple_op_boxed(
        &self,
        opts: CallOptions,
        method: &'static str,
        ep: &'static Endpoint,
        body: Box<dyn Fn(i64) -> Value>,
    ) -> Result<LocalBoxFuture<'static, Result<Value>>> {
        let guard = self.precheck(&opts, method)?;
        let ticket = self.0.seq.ticket();
        let me = self.clone();
        Ok(Box::pin(async move {
            let h = &me.0.holder;
            let turn = guard.run(async { ticket.wait().await }).await?;
            let seq_id = turn.reserve(1);
            let mut attempt = || {
                Req::to(ep)
                    .json(&body(seq_id))
                    .method_name(Some(method))
                    .under(&guard)
            };
            let submitted = submit(h, ep, &mut attempt).await;
            drop(turn);
            let r = async {
                let sub = submitted?;
                let observe = |qs, r: Option<&str>| me.0.pauses.observe(h, qs, r);
                let poll = Poll::of(&sub, ep, Some(method), Some(&observe));
                let p = guard.run(retrieve(h, poll)).await?;
                json_future(p, method)
            }
            .await;
            h.reported(r).await
        }))
    }

    /// Applies the accumulated gradients with the optimizer chosen at creation.
    pub fn optim_step(
        &self,
        params: OptimParams,
        opts: CallOptions,
    ) -> Result<LocalBoxFuture<'static, Result<Value>>> {
        let (key, value) = match &params {
            OptimParams::Adam(a) => {
                a.validate().map_err(|e| e.within("adam_params"))?;
                ("adam_params", a.to_json())
            }
            OptimParams::Other(m) if m.get("type").and_then(Value::as_str) == Some("dimuon") => {
                ("optimizer_params", dimuon_params(m)?)
            }
            OptimParams::Other(m) => {
                match m.get("type") {
                    Some(Value::String(t)) if !t.is_empty() => {}
                    _ => {
                        return Err(InputError::type_error(
                            "optim_params.type",
                            "optimizer params need a string \"type\" (e.g. \"dimuon\")",
                        )
                        .into())
                    }
                }
                for (k, v) in m {
                    if v.as_f64().is_some_and(|x| !x.is_finite()) {
                        return Err(InputError::range_error(
                            format!("optim_params.{k}"),
                            "must be a finite number",
                        )
                        .into());
                    }
                }
                ("optimizer_params", Value::Object(m.clone()))
            }
        };
        let model_id = self.0.model_id.clone();
        self.simple_op(
            opts,
            "TrainingClient.optim_step",
            &endpoints::OPTIM_STEP,
            move |seq| {
                let mut b = json!({ "model_id": model_id, "seq_id": seq, "type": "optim_step" });
                b[key] = value.clone();
                b
            },
        )
    }

    /// Saves weights and optimizer state as `tinker://{model}/weights/{name}`.
    pub fn save_state(
        &self,
        name: &str,
        ttl_seconds: Option<u64>,
        overwrite: bool,
        user_metadata: Option<StrMap<String>>,
        opts: CallOptions,
    ) -> Result<LocalBoxFuture<'static, Result<Value>>> {
        check_name(name)?;
        check_ttl(ttl_seconds)?;
        let (model_id, name) = (self.0.model_id.clone(), name.to_string());
        self.simple_op(opts, "TrainingClient.save_state", &endpoints::SAVE_WEIGHTS, move |seq| {
            let mut b = json!({ "model_id": model_id, "path": name, "seq_id": seq, "overwrite": overwrite, "type": "save_weights" });
            if let Some(t) = ttl_seconds {
                b["ttl_seconds"] = t.into();
            }
            if let Some(m) = &user_metadata {
                b["user_metadata"] = m.into();
            }
            b
        })
    }

    /// Loads a checkpoint into this model (weights, and optimizer state if asked).
    pub fn load_state(
        &self,
        path: &str,
        optimizer: bool,
        weights_access_token: Option<String>,
        opts: CallOptions,
    ) -> Result<LocalBoxFuture<'static, Result<Value>>> {
        crate::paths::TinkerPath::parse(path)?;
        let (model_id, path) = (self.0.model_id.clone(), path.to_string());
        let method = if optimizer {
            "TrainingClient.load_state_with_optimizer"
        } else {
            "TrainingClient.load_state"
        };
        self.simple_op(opts, method, &endpoints::LOAD_WEIGHTS, move |seq| {
            let mut b = json!({ "model_id": model_id, "path": path, "seq_id": seq, "optimizer": optimizer, "type": "load_weights" });
            if let Some(t) = &weights_access_token {
                b["weights_access_token"] = t.clone().into();
            }
            b
        })
    }

    /// Saves sampler weights as `tinker://{model}/sampler_weights/{name}`.
    pub fn save_weights_for_sampler(
        &self,
        name: &str,
        ttl_seconds: Option<u64>,
        user_metadata: Option<StrMap<String>>,
        opts: CallOptions,
    ) -> Result<LocalBoxFuture<'static, Result<Value>>> {
        check_name(name)?;
        check_ttl(ttl_seconds)?;
        let (model_id, name) = (self.0.model_id.clone(), name.to_string());
        self.simple_op(opts, "TrainingClient.save_weights_for_sampler", &endpoints::SAVE_WEIGHTS_FOR_SAMPLER, move |seq| {
            let mut b = json!({ "model_id": model_id, "path": name, "kind": "snapshot", "seq_id": seq, "type": "save_weights_for_sampler" });
            if let Some(t) = ttl_seconds {
                b["ttl_seconds"] = t.into();
            }
            if let Some(m) = &user_metadata {
                b["user_metadata"] = m.into();
            }
            b
        })
    }

    /// Exports weights in an external (HuggingFace-style) format as
    /// `tinker://{model}/external_weights/{name}`.
    pub fn save_weights_external(
        &self,
        name: &str,
        ttl_seconds: Option<u64>,
        age_encryption_recipients: Option<Vec<String>>,
        opts: CallOptions,
    ) -> Result<LocalBoxFuture<'static, Result<Value>>> {
        check_name(name)?;
        check_ttl(ttl_seconds)?;
        if let Some(r) = &age_encryption_recipients {
            if r.len() > 10 {
                return Err(InputError::range_error(
                    "age_encryption_recipients",
                    format!("at most 10 recipients, got {}", r.len()),
                )
                .into());
            }
        }
        let (model_id, name) = (self.0.model_id.clone(), name.to_string());
        self.simple_op(opts, "TrainingClient.save_weights_external", &endpoints::SAVE_WEIGHTS_EXTERNAL, move |seq| {
            let mut b = json!({ "model_id": model_id, "path": name, "seq_id": seq, "type": "save_weights_external" });
            if let Some(t) = ttl_seconds {
                b["ttl_seconds"] = t.into();
            }
            if let Some(r) = &age_encryption_recipients {
                b["age_encryption_recipients"] = r.into();
            }
            b
        })
    }

    /// Saves the current weights for sampling (ephemeral) and returns a sampling client
    /// on them. `kind` is `snapshot` (fixed weights) or `inflight` (shared, updated by
    /// later saves).
    pub fn save_weights_and_get_sampling_client(
        &self,
        kind: &str,
        sampling: SamplingOptions,
        opts: CallOptions,
    ) -> Result<LocalBoxFuture<'static, Result<SamplingClient>>> {
        if kind != "snapshot" && kind != "inflight" {
            return Err(InputError::range_error(
                "kind",
                format!(
                    "must be \"snapshot\" or \"inflight\", got {}",
                    json::quote(kind)
                ),
            )
            .into());
        }
        let h = self.0.holder.clone();
        h.require_session()?;
        let model_id = self.0.model_id.clone();
        let kind = kind.to_string();
        let base_model = self.0.info.model_name.clone();
        let h2 = h.clone();
        // A new sampling session number per attempt, as Python takes one in each try of
        // its request (the body is built again for every attempt).
        let op = self.simple_op(opts, "TrainingClient.save_weights_and_get_sampling_client", &endpoints::SAVE_WEIGHTS_FOR_SAMPLER, move |seq| {
            let n = h2.take_sampling_seq_id();
            json!({ "model_id": model_id, "sampling_session_seq_id": n, "kind": kind, "seq_id": seq, "type": "save_weights_for_sampler" })
        })?;
        Ok(Box::pin(async move {
            let r = op.await?;
            let id = r
                .get("sampling_session_id")
                .and_then(Value::as_str)
                .ok_or_else(|| Error::InvalidResponse {
                    message: format!("save_weights_for_sampler without sampling_session_id: {r}"),
                })?;
            SamplingClient::connect(
                h,
                id.to_string(),
                base_model,
                sampling,
                "TrainingClient.save_weights_and_get_sampling_client",
            )
            .await
        }))
    }

    /// Computes a custom loss on the client: a forward pass for the logprobs, the loss
    /// function for the loss and its gradients, then a backward pass with
    /// `cross_entropy` weights `−∂loss/∂logprobs` (which backpropagates the custom loss
    /// exactly). Reserves both passes' seq ids at once; if anything fails after that,
    /// the client is poisoned, since the reserved ids can no longer be filled.
    pub fn forward_backward_custom(
        &self,
        data: Vec<Datum>,
        loss: CustomLossFn,
        opts: CallOptions,
    ) -> Result<LocalBoxFuture<'static, Result<ForwardBackwardOutput>>> {
        let forward = custom_forward_data(&data)?;
        let guard = self.precheck(&opts, CUSTOM)?;
        let chunks = self.plan(&forward);
        let ticket = self.0.seq.ticket();
        let me = self.clone();
        Ok(Box::pin(async move {
            let turn = guard.run(async { ticket.wait().await }).await?;
            let first = turn.reserve(2 * chunks.len());
            let passes = Passes {
                first,
                chunks: &chunks,
                guard: &guard,
            };
            let result = me.custom_reserved(&passes, forward, data, loss).await;
            if let Err(e) = &result {
                me.0.seq.poison(&e.to_string());
            }
            drop(turn);
            let ids = result?;
            // As in Python, a failure while waiting for the backward result (including an
            // abort or a timeout) poisons the client too.
            let backward =
                guard.run(me.collect(ids.backward, &endpoints::FORWARD_BACKWARD, CUSTOM));
            let out =
                me.0.holder
                    .reported(backward.await)
                    .await
                    .and_then(|out| custom_output(out, ids.loss, ids.user_metrics));
            if let Err(e) = &out {
                me.0.seq.poison(&e.to_string());
            }
            out
        }))
    }

    /// The custom loss's two passes on reserved seq ids: the forward pass and its
    /// logprobs, the loss function, then the backward pass's submission. A pass that
    /// fails is reported to telemetry as Python's `_run_fwd_bwd` reports it
    /// (`@capture_exceptions(fatal=True)`); the loss function's own failure is not, as
    /// Python's `_compute_custom_loss` runs outside it.
    async fn custom_reserved(
        &self,
        passes: &Passes<'_>,
        forward: Vec<Datum>,
        original: Vec<Datum>,
        loss: CustomLossFn,
    ) -> Result<CustomIds> {
        let h = &self.0.holder;
        let forward = Rc::new(forward);
        let spec = FwdBwd::cross_entropy(passes.guard, forward.clone(), true);
        let fwd = async {
            let ids = self
                .submit_reserved(passes.first, &spec, passes.chunks)
                .await?;
            let collect = self.collect(ids, &endpoints::FORWARD, CUSTOM);
            passes.guard.run(collect).await
        };
        let fwd = h.reported(fwd.await).await?;
        let logprobs = forward_logprobs(&fwd, forward.len())?;
        let sizes: Vec<usize> = logprobs.iter().map(|l| l.values.len()).collect();
        // The loss itself is only reported (as `loss:sum`), never sent: a NaN or infinite
        // loss is passed through, as in Python. Gradients are sent, and checked.
        let out = passes.guard.run(loss(original, logprobs)).await?;
        let backward = backward_data(&forward, &out.gradients, &sizes)?;
        // Same chunk boundaries as the forward pass, so the reserved ids line up.
        let bchunks: Vec<Chunk> = passes
            .chunks
            .iter()
            .map(|c| Chunk {
                range: c.range.clone(),
                estimated_bytes: c.range.clone().map(|i| backward[i].estimated_bytes()).sum(),
            })
            .collect();
        let spec = FwdBwd::cross_entropy(passes.guard, Rc::new(backward), false);
        let first_backward = passes.first + passes.chunks.len() as i64;
        let backward_ids = h
            .reported(self.submit_reserved(first_backward, &spec, &bchunks).await)
            .await?;
        Ok(CustomIds {
            backward: backward_ids,
            loss: out.loss,
            user_metrics: out.metrics,
        })
    }
}

/// The public method of custom losses.
const CUSTOM: &str = "TrainingClient.forward_backward_custom";

/// Where a custom loss's reserved seq ids start, its chunks, its call's stop conditions.
struct Passes<'a> {
    first: i64,
    chunks: &'a [Chunk],
    guard: &'a Guard,
}

/// The forward pass's data of a custom loss: each datum's tokens with its
/// `target_tokens` and `weights` (zeros when absent) only, checked as `cross_entropy`
/// data.
fn custom_forward_data(data: &[Datum]) -> Result<Vec<Datum>> {
    if data.is_empty() {
        return Err(InputError::range_error("data", "must contain at least one Datum").into());
    }
    let mut forward = Vec::with_capacity(data.len());
    for (i, d) in data.iter().enumerate() {
        let tt = d.loss_fn_inputs.get("target_tokens").ok_or_else(|| {
            InputError::type_error(
                format!("data[{i}].loss_fn_inputs.target_tokens"),
                "is required by forward_backward_custom",
            )
        })?;
        let weights = d
            .loss_fn_inputs
            .get("weights")
            .cloned()
            .unwrap_or_else(|| float_tensor(vec![0.0; tt.values.len()], tt.shape.clone()));
        let mut inputs = LossFnInputs::new();
        inputs.insert("target_tokens", tt.clone());
        inputs.insert("weights", weights);
        let fd = Datum {
            model_input: d.model_input.clone(),
            loss_fn_inputs: inputs,
            model_input_spans: d.model_input_spans.clone(),
            loss_fn_input_spans: d.loss_fn_input_spans.clone(),
        };
        fd.validate("cross_entropy")
            .map_err(|e| e.within(&format!("data[{i}]")))?;
        forward.push(fd);
    }
    Ok(forward)
}

/// A dense float32 tensor.
fn float_tensor(values: Vec<f32>, shape: Option<Vec<usize>>) -> TensorData {
    TensorData {
        values: TensorValues::Float32(values),
        shape,
        sparse_crow_indices: None,
        sparse_col_indices: None,
    }
}

/// The logprobs of each datum of a forward pass over `n` datums.
fn forward_logprobs(fwd: &ForwardBackwardOutput, n: usize) -> Result<Vec<TensorData>> {
    if fwd.loss_fn_outputs.len() != n {
        return Err(Error::InvalidResponse {
            message: format!(
                "forward returned {} outputs for {n} datums",
                fwd.loss_fn_outputs.len()
            ),
        });
    }
    fwd.loss_fn_outputs
        .iter()
        .enumerate()
        .map(|(i, o)| {
            o.get("logprobs")
                .cloned()
                .ok_or_else(|| Error::InvalidResponse {
                    message: format!("forward output {i} has no logprobs"),
                })
        })
        .collect()
}

/// The backward pass's data: each forward datum with weights `−gradient`, once the
/// gradients are checked (one per datum, shaped like its logprobs, finite).
fn backward_data(forward: &[Datum], gradients: &[Vec<f32>], sizes: &[usize]) -> Result<Vec<Datum>> {
    if gradients.len() != sizes.len() {
        return Err(InputError::range_error(
            "gradients",
            format!(
                "expected one gradient per datum ({}), got {}",
                sizes.len(),
                gradients.len()
            ),
        )
        .into());
    }
    let mut backward = Vec::with_capacity(forward.len());
    for (i, (g, d)) in gradients.iter().zip(forward).enumerate() {
        if g.len() != sizes[i] {
            return Err(InputError::range_error(
                format!("gradients[{i}]"),
                format!(
                    "must have {} values (like logprobs[{i}]), got {}",
                    sizes[i],
                    g.len()
                ),
            )
            .into());
        }
        if let Some(j) = g.iter().position(|x| !x.is_finite()) {
            return Err(InputError::range_error(
                format!("gradients[{i}][{j}]"),
                format!("must be finite, got {}", fmt_num(f64::from(g[j]))),
            )
            .into());
        }
        let mut bd = d.clone();
        let shape = d.loss_fn_inputs["target_tokens"].shape.clone();
        let weights = float_tensor(g.iter().map(|x| -x).collect(), shape);
        bd.loss_fn_inputs.insert("weights", weights);
        backward.push(bd);
    }
    Ok(backward)
}

/// The custom loss's result: the backward pass's output with the user's loss as
/// `loss:sum`, the backward pass's own loss as `surrogate_loss:sum`, and the user's
/// metrics.
fn custom_output(
    mut out: ForwardBackwardOutput,
    loss: f64,
    user_metrics: StrMap<f64>,
) -> Result<ForwardBackwardOutput> {
    let surrogate = out
        .metrics
        .remove("loss:sum")
        .ok_or_else(|| Error::InvalidResponse {
            message: "the custom loss's backward result has no loss:sum metric".into(),
        })?;
    out.metrics.extend(user_metrics);
    out.metrics.insert("loss:sum", loss);
    out.metrics.insert("surrogate_loss:sum", surrogate);
    Ok(out)
}

/// A submitted chunk: its request id and its submit round trip in seconds.
type SentChunk = (String, f64);

struct CustomIds {
    backward: Vec<SentChunk>,
    loss: f64,
    user_metrics: StrMap<f64>,
}

/// One forward(-backward) pass over a batch.
struct FwdBwd<'a> {
    /// The call (its request options go on every chunk's submission).
    call: &'a Guard,
    data: Rc<Vec<Datum>>,
    loss_fn: &'a str,
    config: Option<&'a LossConfig>,
    forward_only: bool,
    method: &'static str,
}

impl FwdBwd<'_> {
    /// Its row: `FORWARD` or `FORWARD_BACKWARD`.
    fn ep(&self) -> &'static Endpoint {
        fwd_bwd_endpoint(self.forward_only)
    }
}

impl<'a> FwdBwd<'a> {
    /// A custom loss's pass: `cross_entropy` without config.
    fn cross_entropy(call: &'a Guard, data: Rc<Vec<Datum>>, forward_only: bool) -> Self {
        FwdBwd {
            call,
            data,
            loss_fn: "cross_entropy",
            config: None,
            forward_only,
            method: CUSTOM,
        }
    }
}

/// The row of a forward-only or a forward/backward pass.
fn fwd_bwd_endpoint(forward_only: bool) -> &'static Endpoint {
    if forward_only {
        &endpoints::FORWARD
    } else {
        &endpoints::FORWARD_BACKWARD
    }
}

fn check_name(name: &str) -> Result<(), InputError> {
    if name.is_empty() || name.as_bytes().contains(&b'/') || name.len() > 256 {
        return Err(InputError::range_error(
            "name",
            format!(
                "must be 1-256 characters without '/', got {}",
                json::quote(name)
            ),
        ));
    }
    Ok(())
}

fn check_ttl(ttl: Option<u64>) -> Result<(), InputError> {
    match ttl {
        Some(t) if !(3600..=10 * 365 * 86400).contains(&t) => Err(InputError::range_error(
            "ttl_seconds",
            format!("must be between 3600 (1 hour) and 315360000 (10 years), got {t}"),
        )),
        _ => Ok(()),
    }
}

impl TrainingClient {
    /// A sampling client on saved sampler weights (`tinker://…/sampler_weights/…`).
    pub fn create_sampling_client(
        &self,
        model_path: &str,
        sampling: SamplingOptions,
    ) -> Result<LocalBoxFuture<'static, Result<SamplingClient>>> {
        crate::sampling::check_sampler_target(Some(model_path), None)?;
        let h = self.0.holder.clone();
        h.ensure_open()?;
        let path = model_path.to_string();
        Ok(Box::pin(crate::sampling::create_sampling_client(
            h,
            Some(path),
            None,
            sampling,
            "TrainingClient.create_sampling_client",
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dimuon_params_get_pythons_defaults_and_checks() {
        let m = |v: Value| v.as_object().unwrap().clone();
        assert_eq!(
            dimuon_params(&m(json!({"type": "dimuon", "learning_rate": 0.01}))).unwrap(),
            json!({"type": "dimuon", "learning_rate": 0.01, "grad_clip_norm": 0.0, "beta1": 0.9})
        );
        assert_eq!(
            dimuon_params(&m(
                json!({"type": "dimuon", "learning_rate": 0, "beta1": 0.5, "grad_clip_norm": -1})
            ))
            .unwrap(),
            json!({"type": "dimuon", "learning_rate": 0.0, "grad_clip_norm": -1.0, "beta1": 0.5})
        );
        let field = |v: Value| match dimuon_params(&m(v)) {
            Err(Error::Input(e)) => e.field,
            other => panic!("{other:?}"),
        };
        assert_eq!(
            field(json!({"type": "dimuon"})),
            "optim_params.learning_rate"
        );
        assert_eq!(
            field(json!({"type": "dimuon", "learning_rate": -1})),
            "optim_params.learning_rate"
        );
        assert_eq!(
            field(json!({"type": "dimuon", "learning_rate": "1"})),
            "optim_params.learning_rate"
        );
        assert_eq!(
            field(json!({"type": "dimuon", "learning_rate": 1, "beta1": 1})),
            "optim_params.beta1"
        );
        assert_eq!(
            field(json!({"type": "dimuon", "learning_rate": 1, "eps": 1})),
            "optim_params.eps"
        );
    }
}
