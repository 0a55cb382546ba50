//! `ServiceClient`: the entry point. It connects lazily (the first call creates the
//! session; concurrent first calls share one connection attempt), creates training and
//! sampling clients, and closes the session.

use crate::map::StrMap;
use std::cell::Cell;
use std::rc::Rc;

use futures_util::future::LocalBoxFuture;

use crate::call::{CallOptions, Guard};
use crate::config::SessionState;
use crate::endpoints;
use crate::error::{Error, Result};
use crate::future::{retrieve, submit, PauseLogger, Payload, Poll};
use crate::http::Req;
use crate::json;
use crate::json::Value;
use crate::options::ClientOptions;
use crate::paths::{console, TinkerPath};
use crate::platform::Env;
use crate::rest::{RestCall, RestClient, RestOutput};
use crate::sampling::{
    check_sampler_target, create_sampling_client, SamplingClient, SamplingOptions,
};
use crate::session::{FinishStatus, Holder};
use crate::sync::AsyncOnce;
use crate::training::TrainingClient;
use crate::types::{InputError, LoraConfig, OptimizerConfig};

struct Inner {
    env: Env,
    opts: Rc<ClientOptions>,
    session: AsyncOnce<Rc<Holder>>,
    rest: AsyncOnce<Rc<Holder>>,
    closed: Cell<Option<FinishStatus>>,
}

/// The entry point of the SDK.
#[derive(Clone)]
pub struct ServiceClient(Rc<Inner>);

/// Options of `create_lora_training_client`.
#[derive(Debug, Clone)]
pub struct LoraOptions {
    /// The base model to fine-tune.
    pub base_model: String,
    /// LoRA configuration.
    pub lora: LoraConfig,
    /// Metadata of the training run.
    pub user_metadata: Option<StrMap<String>>,
    /// Optimizer family (AdamW by default).
    pub optimizer: Option<OptimizerConfig>,
}

/// Options of `create_training_client_from_state`.
#[derive(Debug, Clone, Default)]
pub struct FromStateOptions {
    /// A `tinker://…/weights/…` checkpoint.
    pub path: String,
    /// Also restore the optimizer state.
    pub with_optimizer: bool,
    /// Override the checkpoint's base model (a compatible variant).
    pub base_model: Option<String>,
    /// Metadata of the new training run.
    pub user_metadata: Option<StrMap<String>>,
    /// Access token of another account that owns the checkpoint.
    pub weights_access_token: Option<String>,
    /// Optimizer family (only without optimizer state).
    pub optimizer: Option<OptimizerConfig>,
}

impl ServiceClient {
    /// A client; nothing is sent until the first call.
    pub fn new(env: Env, opts: ClientOptions) -> Result<Self> {
        opts.validate()?;
        if let Some(key) = &opts.api_key {
            crate::http::check_api_key(key, crate::platform::now_secs(&*env))?;
        }
        Ok(ServiceClient(Rc::new(Inner {
            env,
            opts: Rc::new(opts),
            session: AsyncOnce::new(),
            rest: AsyncOnce::new(),
            closed: Cell::new(None),
        })))
    }

    fn ensure_open(&self) -> Result<()> {
        if self.0.closed.get().is_some() {
            Err(Error::Closed {
                message: "the ServiceClient is closed".into(),
            })
        } else {
            Ok(())
        }
    }

    /// The session's holder, connecting on first use.
    pub async fn holder(&self) -> Result<Rc<Holder>> {
        self.ensure_open()?;
        let (env, opts) = (self.0.env.clone(), self.0.opts.clone());
        let h = self
            .0
            .session
            .get_or_try_init(|| Holder::connect(env, opts, true))
            .await?;
        if let Some(status) = self.0.closed.get() {
            // `close` ran while this connection was being made: finish its session too,
            // so no heartbeat outlives the client.
            h.close(status, None).await.ok();
            return Err(Error::Closed {
                message: "the ServiceClient is closed".into(),
            });
        }
        Ok(h)
    }

    /// The session-less holder used for REST calls.
    pub async fn rest_holder(&self) -> Result<Rc<Holder>> {
        self.ensure_open()?;
        let (env, opts) = (self.0.env.clone(), self.0.opts.clone());
        self.0
            .rest
            .get_or_try_init(|| Holder::connect(env, opts, false))
            .await
    }

    /// A REST client sharing this client's connection and credentials.
    pub async fn rest_client(&self) -> Result<RestClient> {
        Ok(RestClient::new(self.rest_holder().await?))
    }

    /// The session state (to resume it elsewhere), once connected.
    pub fn session_state(&self) -> Option<SessionState> {
        self.0.session.get().and_then(|h| h.session_state())
    }

    /// The Console page of the session (or of all sessions before connecting).
    pub fn console_url(&self) -> String {
        match self
            .0
            .session
            .get()
            .and_then(|h| h.session_id().map(str::to_string))
        {
            Some(id) => console::session(&id),
            None => format!("{}/sessions", crate::paths::CONSOLE_BASE_URL),
        }
    }

    /// Creates a LoRA training run and a client on it.
    pub fn create_lora_training_client(
        &self,
        o: LoraOptions,
        call: CallOptions,
    ) -> Result<LocalBoxFuture<'static, Result<TrainingClient>>> {
        const METHOD: &str = "ServiceClient.create_lora_training_client";
        self.ensure_open()?;
        if o.base_model.is_empty() {
            return Err(
                InputError::type_error("base_model", "must be a non-empty model name").into(),
            );
        }
        o.lora.validate()?;
        if let Some(opt) = &o.optimizer {
            opt.validate().map_err(|e| e.within("optimizer"))?;
        }
        let guard = Guard::new(&self.0.env, &call, METHOD);
        guard.check()?;
        let me = self.clone();
        Ok(Box::pin(async move {
            let h = guard.run(me.holder()).await?;
            // Python's `@capture_exceptions(fatal=True)`: a failure is reported.
            let r = create_lora(&h, &o, &guard, METHOD).await;
            h.reported(r).await
        }))
    }

    /// Creates a training run from a checkpoint (one create-via-load `load_weights`).
    pub fn create_training_client_from_state(
        &self,
        o: FromStateOptions,
        call: CallOptions,
    ) -> Result<LocalBoxFuture<'static, Result<TrainingClient>>> {
        let method = if o.with_optimizer {
            "ServiceClient.create_training_client_from_state_with_optimizer"
        } else {
            "ServiceClient.create_training_client_from_state"
        };
        self.ensure_open()?;
        let p = TinkerPath::parse(&o.path)?;
        if p.checkpoint_type != crate::paths::CheckpointType::Training {
            return Err(InputError::type_error(
                "path",
                format!(
                    "needs a training checkpoint (tinker://<run>/weights/<name>), got {}",
                    json::quote(&o.path)
                ),
            )
            .into());
        }
        if o.with_optimizer && o.optimizer.is_some() {
            return Err(InputError::type_error(
                "optimizer",
                "cannot override the optimizer when restoring optimizer state",
            )
            .into());
        }
        let guard = Guard::new(&self.0.env, &call, method);
        guard.check()?;
        let me = self.clone();
        Ok(Box::pin(async move {
            let h = guard.run(me.holder()).await?;
            // Python's `@capture_exceptions(fatal=True)`: a failure is reported.
            let r = create_from_state(&h, &o, &guard, method).await;
            h.reported(r).await
        }))
    }

    /// A client on an existing training run, continuing at `next_seq_id` (resuming a
    /// model in another process or request).
    pub fn training_client(
        &self,
        model_id: &str,
        next_seq_id: i64,
    ) -> Result<LocalBoxFuture<'static, Result<TrainingClient>>> {
        self.ensure_open()?;
        if model_id.is_empty() {
            return Err(InputError::type_error("model_id", "must be a non-empty model id").into());
        }
        if next_seq_id < 1 {
            return Err(InputError::range_error(
                "next_seq_id",
                format!("must be at least 1, got {next_seq_id}"),
            )
            .into());
        }
        let (me, id) = (self.clone(), model_id.to_string());
        Ok(Box::pin(async move {
            let h = me.holder().await?;
            TrainingClient::attach(h, id, next_seq_id, None).await
        }))
    }

    /// A sampling client on a base model or saved sampler weights.
    pub fn create_sampling_client(
        &self,
        model_path: Option<String>,
        base_model: Option<String>,
        sampling: SamplingOptions,
        call: CallOptions,
    ) -> Result<LocalBoxFuture<'static, Result<SamplingClient>>> {
        const METHOD: &str = "ServiceClient.create_sampling_client";
        self.ensure_open()?;
        check_sampler_target(model_path.as_deref(), base_model.as_deref())?;
        let guard = Guard::new(&self.0.env, &call, METHOD);
        guard.check()?;
        let me = self.clone();
        Ok(Box::pin(async move {
            let h = guard.run(me.holder()).await?;
            guard
                .run(create_sampling_client(
                    h, model_path, base_model, sampling, METHOD,
                ))
                .await
        }))
    }

    /// A client on an existing sampling session (e.g. one another process created), as a
    /// clone of it: see [`SamplingClient::attach`].
    pub fn sampling_client(
        &self,
        sampling_session_id: &str,
        base_model: Option<String>,
        sampling: SamplingOptions,
    ) -> Result<LocalBoxFuture<'static, Result<SamplingClient>>> {
        self.ensure_open()?;
        if sampling_session_id.is_empty() {
            return Err(
                InputError::type_error("sampling_session_id", "must be a non-empty id").into(),
            );
        }
        let (me, id) = (self.clone(), sampling_session_id.to_string());
        Ok(Box::pin(async move {
            let h = me.holder().await?;
            SamplingClient::attach(
                h,
                id,
                base_model,
                sampling,
                "ServiceClient.create_sampling_client",
            )
            .await
        }))
    }

    /// Models the server offers (through the REST holder; no session).
    pub async fn get_server_capabilities(&self) -> Result<Value> {
        self.rest_client()
            .await?
            .attributed_to("ServiceClient.get_server_capabilities")
            .call(RestCall::get_server_capabilities())
            .await
            .map(RestOutput::json)
    }

    /// Copies weights into this client's project (`projectId`).
    pub async fn copy_weights(
        &self,
        path: &str,
        ttl_seconds: Option<u64>,
        weights_access_token: Option<&str>,
    ) -> Result<String> {
        let project = self.0.opts.project_id.clone().ok_or_else(|| Error::Input(InputError::type_error("projectId", "copyWeights copies into this client's project: construct the ServiceClient with projectId")))?;
        let call = RestCall::copy_weights(path, &project, ttl_seconds, weights_access_token)?;
        let out = self
            .rest_client()
            .await?
            .attributed_to("ServiceClient.copy_weights")
            .call(call)
            .await?;
        Ok(out.text().unwrap_or_default())
    }

    /// Sends one heartbeat (for callers that disabled background timers).
    pub async fn heartbeat(&self) -> Result<()> {
        self.holder().await?.heartbeat_once().await
    }

    /// Finishes the session with `status` (first call wins; no request if nothing was
    /// ever connected), stops every background timer and flushes telemetry. Later calls
    /// on this client or its children fail.
    pub async fn close(&self, status: FinishStatus, detail: Option<&str>) -> Result<()> {
        if self.0.closed.replace(Some(status)).is_some() {
            return Ok(());
        }
        if let Some(rest) = self.0.rest.get() {
            rest.close(status, None).await.ok();
        }
        match self.0.session.get() {
            Some(h) => h.close(status, detail).await,
            None => Ok(()),
        }
    }
}

/// The `create_model` body of a new LoRA training run, on the session's next model
/// number.
fn create_model_body(h: &Holder, o: &LoraOptions) -> Result<Value> {
    let session_id = h.require_session()?;
    let mut body = json!({
        "session_id": session_id,
        "model_seq_id": h.take_model_seq_id(),
        "base_model": o.base_model,
        "lora_config": o.lora.to_json(),
        "optimizer_config": &o.optimizer.clone().unwrap_or_default(),
        "type": "create_model",
    });
    if let Some(m) = &o.user_metadata {
        body["user_metadata"] = m.into();
    }
    Ok(body)
}

/// The new run's model id and the create-via-load `load_weights` body, on the
/// session's next model number.
fn from_state_body(h: &Holder, o: &FromStateOptions) -> Result<(String, Value)> {
    let session_id = h.require_session()?;
    let model_seq_id = h.take_model_seq_id();
    let model_id = format!("{session_id}:train:{model_seq_id}");
    let mut body = json!({ "session_id": session_id, "model_seq_id": model_seq_id, "path": o.path, "optimizer": o.with_optimizer, "type": "load_weights" });
    if let Some(b) = &o.base_model {
        body["base_model"] = b.into();
    }
    if let Some(m) = &o.user_metadata {
        body["user_metadata"] = m.into();
    }
    if let Some(c) = &o.optimizer {
        body["optimizer_config"] = c.into();
    }
    if let Some(t) = &o.weights_access_token {
        body["weights_access_token"] = t.into();
    }
    Ok((model_id, body))
}

/// `create_model`, its result, and a client on the new run (the body of
/// `ServiceClient::create_lora_training_client` once connected).
async fn create_lora(
    h: &Rc<Holder>,
    o: &LoraOptions,
    guard: &Guard,
    method: &'static str,
) -> Result<TrainingClient> {
    let body = create_model_body(h, o)?;
    let ep = &endpoints::CREATE_MODEL;
    // `retrieve` read the result as Python's `CreateModelResponse`: JSON, with a string
    // `model_id`.
    let model_id = match create_run(h, ep, &body, guard, method, &o.base_model).await? {
        Payload::Json(v) => v
            .get("model_id")
            .and_then(Value::as_str)
            .map(str::to_string),
        Payload::Proto(_) => None,
    };
    let model_id = model_id.ok_or_else(|| Error::InvalidResponse {
        message: "create_model: no model_id".into(),
    })?;
    TrainingClient::attach(h.clone(), model_id, 1, Some(method)).await
}

/// The create-via-load `load_weights`, its result, and a client on the new run (the body
/// of `ServiceClient::create_training_client_from_state` once connected).
async fn create_from_state(
    h: &Rc<Holder>,
    o: &FromStateOptions,
    guard: &Guard,
    method: &'static str,
) -> Result<TrainingClient> {
    let (model_id, body) = from_state_body(h, o)?;
    let ep = &endpoints::CREATE_MODEL_FROM_STATE;
    create_run(h, ep, &body, guard, method, &model_id).await?;
    TrainingClient::attach(h.clone(), model_id, 1, Some(method)).await
}

/// Submits a request that creates a training run to `ep` under the call's options, and
/// waits for its result (queue pauses logged as "Model creation" of `subject`).
async fn create_run(
    h: &Rc<Holder>,
    ep: &'static endpoints::Endpoint,
    body: &Value,
    guard: &Guard,
    method: &'static str,
    subject: &str,
) -> Result<Payload> {
    let mut attempt = || {
        Req::to(ep)
            .json(body)
            .method_name(Some(method))
            .under(guard)
    };
    let sub = submit(h, ep, &mut attempt).await?;
    let pauses = PauseLogger::new("Model creation", subject);
    let observe = |qs, r: Option<&str>| pauses.observe(h, qs, r);
    let poll = Poll::of(&sub, ep, Some(method), Some(&observe));
    guard.run(retrieve(h, poll)).await
}
