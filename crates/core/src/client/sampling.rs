//! `SamplingClient`: sampling and prompt logprobs from a base model or saved weights,
//! with the Python SDK 0.38's machinery:
//!
//! * a per-sampler retry handler (`RetryConfig`, [`crate::sampling_retry`]): a
//!   concurrency semaphore, retries of transient failures (a retry is a new submission
//!   with a new `seq_id`) with `min(0.5·2ᵃ, 10)` s ± 25 % waits, and stuck detection;
//! * holder-wide admission ([`crate::admission`]): 400 submissions in flight, a
//!   prompt-bytes budget, and 429 as backpressure: every client of the holder backs off
//!   1 s (5 s for prompts over 128 KiB), then the same submission (same `seq_id`) is
//!   retried; for 10 s after a backoff, dispatch is throttled harder;
//! * session-wide batched polling through `retrieve_futures` ([`crate::poller`]) when
//!   the server enables `sample_use_retrieve_futures`, and `cancel_future` for
//!   abandoned polls when the dynamic config enables `sample_cancel_enabled`.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use futures_util::future::LocalBoxFuture;

use crate::call::{CallOptions, Guard};
use crate::endpoints;
use crate::error::{Error, Result};
use crate::future::{
    retrieve, unreadable, PauseLogger, Payload, Poll, QueueState, Submitted, UntypedFuture,
};
use crate::http::{decode, parse_json, Req};
use crate::json;
use crate::json::{Fields, FromJson, Map, ObjectWriter, Value};
use crate::poller::SessionPoller;
use crate::proto::{decode_sample_response, SampleResponse};
use crate::retry::SamplingRetryConfig;
use crate::sampling_retry::RetryHandler;
use crate::session::Holder;
use crate::sync::Semaphore;
use crate::types::{DType, InputError, ModelInput, ModelInputChunk, SamplingParams, TensorData};

/// Options of a sampling client.
#[derive(Debug, Clone, Default)]
pub struct SamplingOptions {
    /// Retry behaviour (defaults to the Python SDK's).
    pub retry: Option<SamplingRetryConfig>,
    /// Record stability information for StableReinforce training.
    pub record_stability_info: bool,
}

/// The body of `/api/v1/asample`: the fields Python 0.38 sends, in its order, the two
/// optional ones only when set.
fn asample_body(
    req: &SampleRequest,
    sampling_session_id: &str,
    seq_id: i64,
    record_stability_info: bool,
) -> Vec<u8> {
    let mut out = String::with_capacity(256 + 8 * req.prompt.num_text_tokens());
    let mut w = ObjectWriter::new(&mut out);
    w.u64("num_samples", u64::from(req.num_samples));
    req.prompt.write_json(w.key("prompt"));
    req.sampling_params.write_json(w.key("sampling_params"));
    w.str("sampling_session_id", sampling_session_id)
        .i64("seq_id", seq_id)
        .bool("prompt_logprobs", req.include_prompt_logprobs)
        .u64("topk_prompt_logprobs", u64::from(req.topk_prompt_logprobs))
        .u64("topk_sample_logprobs", u64::from(req.topk_sample_logprobs))
        .u64("prompt_alt_tokens_k", u64::from(req.prompt_alt_tokens_k))
        .bool("record_stability_info", record_stability_info)
        .str("type", "sample");
    if let Some(t) = &req.target_prompt_logprobs {
        t.write_json(w.key("target_prompt_logprobs"));
    }
    if let Some(n) = req.prompt_logprobs_last_n {
        w.u64("prompt_logprobs_last_n", u64::from(n));
    }
    w.end();
    out.into_bytes()
}

/// One `sample` call.
#[derive(Debug, Clone)]
pub struct SampleRequest {
    /// The prompt.
    pub prompt: ModelInput,
    /// Independent samples to draw.
    pub num_samples: u32,
    /// Sampling parameters.
    pub sampling_params: SamplingParams,
    /// Return logprobs of the prompt tokens.
    pub include_prompt_logprobs: bool,
    /// Top-k logprobs per prompt position.
    pub topk_prompt_logprobs: u32,
    /// Top-k logprobs per sampled position.
    pub topk_sample_logprobs: u32,
    /// Token ids to score per prompt position (`[len(prompt) - 1, K]` int64).
    pub target_prompt_logprobs: Option<TensorData>,
    /// Alternatives to draw per prompt position.
    pub prompt_alt_tokens_k: u32,
    /// Score only the last N prompt tokens.
    pub prompt_logprobs_last_n: Option<u32>,
}

/// The largest `num_samples`, `topk_*_logprobs` and `prompt_alt_tokens_k` accepted.
pub const MAX_COUNT: u32 = 100_000;

/// Samples per request when none is given (Python has no default; one is the natural one).
pub const DEFAULT_NUM_SAMPLES: u32 = 1;

impl SampleRequest {
    /// A request with defaults for everything but the prompt, count and params.
    pub fn new(prompt: ModelInput, num_samples: u32, sampling_params: SamplingParams) -> Self {
        SampleRequest {
            prompt,
            num_samples,
            sampling_params,
            include_prompt_logprobs: false,
            topk_prompt_logprobs: 0,
            topk_sample_logprobs: 0,
            target_prompt_logprobs: None,
            prompt_alt_tokens_k: 0,
            prompt_logprobs_last_n: None,
        }
    }

    /// Checks everything the server would reject, naming the field.
    pub fn validate(&self) -> Result<(), InputError> {
        self.prompt.validate().map_err(|e| e.within("prompt"))?;
        if self.prompt.chunks.is_empty() {
            return Err(InputError::range_error("prompt", "must not be empty"));
        }
        if self.num_samples == 0 || self.num_samples > MAX_COUNT {
            return Err(InputError::range_error(
                "num_samples",
                format!(
                    "must be between 1 and {MAX_COUNT}, got {}",
                    self.num_samples
                ),
            ));
        }
        for (field, n) in [
            ("topk_prompt_logprobs", self.topk_prompt_logprobs),
            ("topk_sample_logprobs", self.topk_sample_logprobs),
            ("prompt_alt_tokens_k", self.prompt_alt_tokens_k),
        ] {
            if n > MAX_COUNT {
                return Err(InputError::range_error(
                    field,
                    format!("must be between 0 and {MAX_COUNT}, got {n}"),
                ));
            }
        }
        self.sampling_params
            .validate()
            .map_err(|e| e.within("sampling_params"))?;
        if let Some(t) = &self.target_prompt_logprobs {
            if t.dtype() != DType::Int64 {
                return Err(InputError::type_error(
                    "target_prompt_logprobs.dtype",
                    format!(
                        "must be an int64 tensor of token ids, got {}",
                        t.dtype().name()
                    ),
                ));
            }
            if t.shape.as_ref().map(Vec::len) != Some(2) {
                return Err(InputError::type_error(
                    "target_prompt_logprobs.shape",
                    format!("must be 2-D, [len(prompt) - 1, K], got {:?}", t.shape),
                ));
            }
            t.validate()
                .map_err(|e| e.within("target_prompt_logprobs"))?;
        }
        if let Some(n) = self.prompt_logprobs_last_n {
            if n < 1 {
                return Err(InputError::range_error(
                    "prompt_logprobs_last_n",
                    format!("must be 1 or greater, got {n}"),
                ));
            }
            if !self.include_prompt_logprobs {
                return Err(InputError::type_error(
                    "prompt_logprobs_last_n",
                    "applies to prompt logprobs; set include_prompt_logprobs",
                ));
            }
        }
        Ok(())
    }

    /// The Python SDK's dispatch estimate: 10 bytes per token, image/audio bytes.
    pub fn estimated_bytes(&self) -> usize {
        self.prompt
            .chunks
            .iter()
            .map(|c| match c {
                ModelInputChunk::EncodedText { tokens } => tokens.len() * 10,
                ModelInputChunk::Image { data, .. } => data.len(),
                ModelInputChunk::ImageAssetPointer { location, .. } => location.len(),
                ModelInputChunk::Dmel { dmel } => dmel.len(),
            })
            .sum()
    }
}

/// Cancels a submitted sample on the server when dropped while still set.
struct CancelOnDrop<'a>(Option<(&'a Rc<Holder>, &'a str)>);
impl Drop for CancelOnDrop<'_> {
    fn drop(&mut self) {
        if let Some((h, id)) = self.0 {
            h.enqueue_cancel(id);
        }
    }
}

// ---------------------------------------------------------------------------------
// The client

struct Inner {
    holder: Rc<Holder>,
    sampling_session_id: String,
    base_model: String,
    next_seq: Cell<i64>,
    /// `None` until the server allocates it (`join_sampling_session`).
    clone_id: Cell<Option<u64>>,
    join: Semaphore,
    retry: Rc<RetryHandler>,
    record_stability_info: bool,
    poller: RefCell<Option<Rc<SessionPoller>>>,
    queue_state: Cell<Option<QueueState>>,
    pauses: PauseLogger,
    /// Restored from a handle: the holder is this client's own (closed with it).
    owns_holder: bool,
}

impl Drop for Inner {
    /// A client restored from a handle and dropped without `close` (in JS: garbage
    /// collected) stops its holder's timers; its session belongs to the handle's maker.
    fn drop(&mut self) {
        if self.owns_holder {
            self.holder.detach();
        }
    }
}

/// Samples from one sampler (a base model or saved weights).
#[derive(Clone)]
pub struct SamplingClient(Rc<Inner>);

struct SamplerInfo {
    base_model: String,
}

impl FromJson for SamplerInfo {
    fn from_json(v: &Value) -> std::result::Result<Self, String> {
        Ok(SamplerInfo {
            base_model: Fields::of(v)?.str("base_model")?,
        })
    }
}

/// The clone id of a client on a sampler others may use: `None` when the server
/// allocates it (`sample_join_sampling_session`), else a random one in 1..=1e9.
fn fresh_clone_id(holder: &Holder) -> Option<u64> {
    (!holder.config().sample_join_sampling_session)
        .then(|| (holder.env().random() * 1e9) as u64 % 1_000_000_000 + 1)
}

impl SamplingClient {
    /// A client on an existing sampling session. Without `base_model` it is looked up
    /// once (`GET /api/v1/samplers/{id}`).
    pub async fn connect(
        holder: Rc<Holder>,
        sampling_session_id: String,
        base_model: Option<String>,
        opts: SamplingOptions,
        sdk_method: &'static str,
    ) -> Result<Self> {
        Self::connect_clone(
            holder,
            sampling_session_id,
            base_model,
            opts,
            Some(0),
            sdk_method,
        )
        .await
    }

    /// A client on a sampler that another client may use (another process's, or one
    /// this process already samples from): as Python's restored ("shadow") clients, it
    /// is a clone of the sampler whose seq ids never meet another client's. Clone 0's
    /// seq ids belong to the sampler's creator, and the server takes a repeated
    /// (sampling session, seq id) for a retry of the same request and answers it with
    /// that request's result. The clone id is allocated by the server
    /// (`join_sampling_session`, before the first request) when it sets
    /// `sample_join_sampling_session`, else drawn at random in 1..=1e9.
    pub async fn attach(
        holder: Rc<Holder>,
        sampling_session_id: String,
        base_model: Option<String>,
        opts: SamplingOptions,
        sdk_method: &'static str,
    ) -> Result<Self> {
        let clone_id = fresh_clone_id(&holder);
        Self::connect_clone(
            holder,
            sampling_session_id,
            base_model,
            opts,
            clone_id,
            sdk_method,
        )
        .await
    }

    /// Like [`connect`](Self::connect), as clone `clone_id` of the sampler (its seq ids
    /// start at `1e9 × clone_id`, so clones never collide); `None`: the server allocates
    /// it before the first request.
    pub async fn connect_clone(
        holder: Rc<Holder>,
        sampling_session_id: String,
        base_model: Option<String>,
        opts: SamplingOptions,
        clone_id: Option<u64>,
        sdk_method: &'static str,
    ) -> Result<Self> {
        let base_model = match base_model {
            Some(b) => b,
            None => {
                let req = Req::at(&endpoints::GET_SAMPLER, &[&sampling_session_id]);
                let info: SamplerInfo = holder.json(req.method_name(Some(sdk_method))).await?;
                info.base_model
            }
        };
        Ok(Self::build(
            holder,
            sampling_session_id,
            base_model,
            opts,
            clone_id,
            false,
        ))
    }

    /// A client for the sampler behind `handle` (from [`sampler_handle`](Self::sampler_handle)
    /// or Python's `get_sampler_handle`), as Python's `SamplingClient.from_sampler_handle`:
    /// it reaches the handle's server with the handle's extra headers and server flags
    /// (nothing is sent to build it), authenticates with `opts`' credentials, heartbeats
    /// the sampler's session, and samples as a clone of the sampler (its seq ids never
    /// meet another client's). `opts.base_url`, `default_headers` and `session` are
    /// taken from the handle. [`close`](Self::close) stops its background work.
    pub fn from_handle(
        env: crate::platform::Env,
        handle: &str,
        mut opts: crate::options::ClientOptions,
    ) -> Result<Self> {
        let h = crate::handle::SamplerHandle::decode(handle)?;
        opts.base_url = h.holder.base_url;
        opts.default_headers = h
            .holder
            .default_headers_overrides
            .into_iter()
            .map(|(k, v)| (k, v.as_str().unwrap_or_default().to_string()))
            .collect();
        opts.session = None;
        let holder = Holder::shadow(
            env,
            Rc::new(opts),
            h.session_id,
            h.holder.client_config,
            h.holder.client_dynamic_config,
        )?;
        let clone_id = fresh_clone_id(&holder);
        Ok(Self::build(
            holder,
            h.sampling_session_id,
            h.base_model,
            SamplingOptions {
                retry: None,
                record_stability_info: h.record_stability_info,
            },
            clone_id,
            true,
        ))
    }

    /// A string another process, worker or request turns back into a client on this
    /// sampler with [`from_handle`](Self::from_handle) (or Python's
    /// `SamplingClient.from_sampler_handle`). Every restored client is a new clone of the
    /// sampler. The handle carries no credentials.
    pub fn sampler_handle(&self) -> Result<String> {
        let holder = &self.0.holder;
        let session_id = holder.require_session()?.to_string();
        Ok(crate::handle::SamplerHandle {
            session_id,
            sampling_session_id: self.0.sampling_session_id.clone(),
            holder: crate::handle::HandleHolder {
                base_url: holder.opts().base_url.clone(),
                default_headers_overrides: holder
                    .opts()
                    .default_headers
                    .iter()
                    .map(|(k, v)| (k.clone(), Value::from(v)))
                    .collect::<Map>(),
                client_config: holder.config().clone(),
                client_dynamic_config: holder.dynamic(),
                api_key: (),
            },
            base_model: self.0.base_model.clone(),
            record_stability_info: self.0.record_stability_info,
        }
        .encode())
    }

    /// Stops the background work (heartbeat, config refresh, telemetry) of a client
    /// restored from a handle, without finishing the session, which belongs to the
    /// handle's maker. Later calls fail. Does nothing for other clients: their
    /// `ServiceClient`'s `close` covers them.
    pub async fn close(&self) {
        if self.0.owns_holder && !self.0.holder.is_closed() {
            self.0.holder.detach();
            self.0.holder.telemetry.close().await;
        }
    }

    fn build(
        holder: Rc<Holder>,
        sampling_session_id: String,
        base_model: String,
        opts: SamplingOptions,
        clone_id: Option<u64>,
        owns_holder: bool,
    ) -> Self {
        let mut config = opts.retry.unwrap_or_default();
        let flags = holder.config();
        config.max_connections = if flags.sample_use_retrieve_futures {
            None
        } else {
            Some(flags.sample_max_concurrent_requests)
        };
        if !flags.sample_enable_stuck_detection {
            config.enable_stuck_detection = false;
        }
        let now_ms = holder.env().now_ms();
        let retry = holder
            .retry_handlers
            .get(&sampling_session_id, config, now_ms);
        SamplingClient(Rc::new(Inner {
            pauses: PauseLogger::sampling(&sampling_session_id),
            holder,
            sampling_session_id,
            base_model,
            next_seq: Cell::new(1_000_000_000 * clone_id.unwrap_or(0) as i64),
            clone_id: Cell::new(clone_id),
            join: Semaphore::new(1),
            retry,
            record_stability_info: opts.record_stability_info,
            poller: RefCell::new(None),
            queue_state: Cell::new(None),
            owns_holder,
        }))
    }

    /// The sampling session id.
    pub fn sampling_session_id(&self) -> &str {
        &self.0.sampling_session_id
    }
    /// The base model (known since creation; no request).
    pub fn base_model(&self) -> &str {
        &self.0.base_model
    }
    /// The holder.
    pub fn holder(&self) -> &Rc<Holder> {
        &self.0.holder
    }
    /// The last queue state the server reported for this client's requests.
    pub fn queue_state(&self) -> Option<QueueState> {
        self.0.queue_state.get()
    }

    /// The session-wide poller of this client's clone (`sample_use_retrieve_futures`).
    fn poller(&self) -> Option<Rc<SessionPoller>> {
        if !self.0.holder.config().sample_use_retrieve_futures {
            return None;
        }
        let mut p = self.0.poller.borrow_mut();
        Some(
            p.get_or_insert_with(|| {
                Rc::new(SessionPoller::new(
                    self.0.holder.clone(),
                    self.0.sampling_session_id.clone(),
                    self.0.clone_id.get().unwrap_or(0),
                ))
            })
            .clone(),
        )
    }

    /// Draws samples. The request is validated synchronously.
    pub fn sample(
        &self,
        req: SampleRequest,
        opts: CallOptions,
    ) -> Result<LocalBoxFuture<'static, Result<SampleResponse>>> {
        req.validate()?;
        self.run(req, opts, "SamplingClient.sample")
    }

    /// Logprobs of every prompt token (`None` where not computed: the first token, and
    /// tokens before the last `last_n`).
    pub fn compute_logprobs(
        &self,
        prompt: ModelInput,
        last_n: Option<u32>,
        opts: CallOptions,
    ) -> Result<LocalBoxFuture<'static, Result<Vec<Option<f32>>>>> {
        let mut req = SampleRequest::new(
            prompt,
            1,
            SamplingParams {
                max_tokens: Some(1),
                ..Default::default()
            },
        );
        req.include_prompt_logprobs = true;
        req.prompt_logprobs_last_n = last_n;
        req.validate()?;
        let fut = self.run(req, opts, "SamplingClient.compute_logprobs")?;
        Ok(Box::pin(async move {
            let r = fut.await?;
            Ok(r.prompt_logprobs
                .unwrap_or_default()
                .into_iter()
                .map(|x| (!x.is_nan()).then_some(x))
                .collect())
        }))
    }

    fn run(
        &self,
        req: SampleRequest,
        opts: CallOptions,
        method: &'static str,
    ) -> Result<LocalBoxFuture<'static, Result<SampleResponse>>> {
        self.0.holder.ensure_open()?;
        let guard = Guard::new(self.0.holder.env(), &opts, method);
        guard.check()?;
        let me = self.clone();
        Ok(Box::pin(async move {
            let req = Rc::new(req);
            // Python bypasses the retry handler for `sample` only (compute_logprobs
            // always goes through it).
            let r = if me.0.holder.config().sample_no_retries && method == "SamplingClient.sample" {
                me.sample_once(&req, &guard, method).await
            } else {
                let env = me.0.holder.env();
                let attempt = || me.sample_once(&req, &guard, method);
                let telemetry = &me.0.holder.telemetry;
                me.0.retry.run(env, &guard, telemetry, attempt).await
            };
            me.0.holder.reported(r).await
        }))
    }

    /// Has the server allocate this clone's id, once, before its first request.
    async fn join(&self, guard: &Guard, method: &'static str) -> Result<()> {
        if self.0.clone_id.get().is_some() {
            return Ok(());
        }
        let _one = guard.run(async { Ok(self.0.join.acquire().await) }).await?;
        if self.0.clone_id.get().is_some() {
            return Ok(()); // another call joined while this one waited
        }
        let h = &self.0.holder;
        let body = json!({ "sampling_session_id": self.0.sampling_session_id, "type": "join_sampling_session" });
        let req = Req::to(&endpoints::JOIN_SAMPLING_SESSION)
            .json(&body)
            .method_name(Some(method));
        let r: Value = guard.run(h.json(req)).await?;
        let counter = r
            .get("client_counter")
            .and_then(Value::as_u64)
            .filter(|&c| c <= 1_000_000_000)
            .ok_or_else(|| Error::InvalidResponse {
                message: format!("join_sampling_session without a valid client_counter: {r}"),
            })?;
        self.0.clone_id.set(Some(counter));
        self.0.next_seq.set(1_000_000_000 * counter as i64);
        Ok(())
    }

    /// One attempt of a sample (Python `_sample_async_impl`): a new seq id, admission,
    /// the submission (429 is backpressure), the poll, and the result's checks.
    async fn sample_once(
        &self,
        req: &SampleRequest,
        guard: &Guard,
        method: &'static str,
    ) -> Result<SampleResponse> {
        self.join(guard, method).await?;
        let seq_id = self.0.next_seq.get();
        self.0.next_seq.set(seq_id + 1);
        // Serialized once (no JSON tree), shared by every attempt.
        let body = Rc::new(asample_body(
            req,
            &self.0.sampling_session_id,
            seq_id,
            self.0.record_stability_info,
        ));
        let sub = self
            .submit(body, req.estimated_bytes() as i64, guard, method)
            .await?;
        let ids = sub.future.sample_sequence_ids.clone().ok_or_else(|| {
            let message = format!(
                "asample response for {} has no sample_sequence_ids",
                sub.future.request_id
            );
            Error::InvalidResponse { message }
        })?;
        let bytes = self.await_result(&sub, guard, method).await?;
        let id = &sub.future.request_id;
        let resp = decode_sample_response(&bytes, &ids)
            .map_err(|m| unreadable(&self.0.holder, id, "Sample", Some(bytes.len()), &m))?;
        check_alt_tokens(req, &resp)?;
        check_last_n(req, &resp)?;
        Ok(resp)
    }

    /// Admits and submits one sample request: while every client of the holder backs
    /// off after a 429 it waits, and a 429 (or a 402 in the billing pause) starts a new
    /// backoff and sends the same body again (Python lines 391-418). A call that
    /// rejects backpressure sends once, backoff or not, and the sampler's 429 is its
    /// answer (the 429 still starts the backoff of the calls that wait).
    async fn submit(
        &self,
        body: Rc<Vec<u8>>,
        estimated: i64,
        guard: &Guard,
        method: &'static str,
    ) -> Result<Submitted> {
        let h = &self.0.holder;
        let admission = &h.admission;
        let now = || h.now();
        let _admitted = admission.admit(guard, &now, estimated).await?;
        loop {
            let waits = !guard.rejects_backpressure();
            if let Some(wait) = admission.backoff_wait(&now).filter(|_| waits) {
                guard.sleep(wait).await?;
                continue;
            }
            let started = h.env().now_ms();
            let future = h
                .retrying(&endpoints::ASAMPLE, || {
                    self.send_asample(&body, guard, method)
                })
                .await?;
            match future {
                Ok(future) => {
                    let roundtrip_secs = (h.env().now_ms() - started) / 1000.0;
                    return Ok(Submitted {
                        future,
                        roundtrip_secs,
                    });
                }
                Err(e) => {
                    admission.back_off(h.now(), estimated);
                    if guard.rejects_backpressure() {
                        return Err(final_status(e));
                    }
                }
            }
        }
    }

    /// One `asample` send: the future, or the backpressure answer (Python
    /// `_send_asample_request`, lines 333-372).
    async fn send_asample(
        &self,
        body: &Rc<Vec<u8>>,
        guard: &Guard,
        method: &'static str,
    ) -> Result<std::result::Result<UntypedFuture, Error>> {
        let h = &self.0.holder;
        let req = Req::to(&endpoints::ASAMPLE)
            .json_bytes(body.clone())
            .method_name(Some(method))
            .header("X-Tinker-Sampling-Backpressure", "1")
            .under(guard);
        let path = endpoints::ASAMPLE.path;
        match h.http().send(req).await {
            Ok(resp) => parse_json(&resp.body, path)
                .and_then(|v| decode::<UntypedFuture>(&v, path))
                .map(Ok),
            Err(e) if is_backpressure(&e, || h.should_pause_on_billing(402)) => Ok(Err(e)),
            Err(e) => Err(e),
        }
    }

    /// Polls a submitted sample's result: through the session poller when the server
    /// enables it, then `retrieve_future`. Polling abandoned (an abort, a timeout, stuck
    /// detection dropping the attempt, or a dropped future) tells the server to stop
    /// the work (when enabled), as Python does on cancellation.
    async fn await_result(
        &self,
        sub: &Submitted,
        guard: &Guard,
        method: &'static str,
    ) -> Result<Vec<u8>> {
        let h = &self.0.holder;
        let id = &sub.future.request_id;
        let mut cancel = CancelOnDrop(Some((h, id)));
        let payload = match guard.run(self.poll(sub, method)).await {
            Ok(p) => p,
            Err(e @ (Error::Aborted { .. } | Error::Timeout { .. })) => return Err(e),
            Err(e) => {
                cancel.0 = None;
                return Err(e);
            }
        };
        cancel.0 = None;
        match payload {
            Payload::Proto(b) => Ok(b),
            Payload::Json(_) => unreachable!("retrieve rejects JSON for protobuf results"),
        }
    }

    /// Waits for the session poller's completion (if any), then fetches the result;
    /// a result (or a failure) is reported retrieved to the poller.
    async fn poll(&self, sub: &Submitted, method: &'static str) -> Result<Payload> {
        let h = &self.0.holder;
        let id = &sub.future.request_id;
        let poller = self.poller();
        let known = match &poller {
            Some(p) => {
                let c = p.wait_for(id).await?;
                (c.state == "finished")
                    .then_some(c.response_payload_uncompressed_size)
                    .flatten()
            }
            None => None,
        };
        let observe = |qs: QueueState, reason: Option<&str>| {
            self.0.queue_state.set(Some(qs));
            self.0.pauses.observe(h, qs, reason);
        };
        let p = Poll {
            known_payload_size: known,
            ..Poll::of(sub, &endpoints::ASAMPLE, Some(method), Some(&observe))
        };
        let r = retrieve(h, p).await;
        if let Some(p) = &poller {
            if matches!(&r, Ok(_) | Err(Error::RequestFailed { .. })) {
                p.mark_retrieved(id);
            }
        }
        r
    }
}

/// Whether a failed `asample` is backpressure: a 429, or a 402 while the holder's
/// billing window allows (`billing_pause`, asked only for a 402).
fn is_backpressure(e: &Error, billing_pause: impl FnOnce() -> bool) -> bool {
    e.status() == Some(429) || (e.status() == Some(402) && billing_pause())
}

/// The backpressure answer, final: the sampling retry layer does not start the sample
/// again.
fn final_status(e: Error) -> Error {
    match e {
        Error::Status(mut s) => {
            s.final_poll = true;
            Error::Status(s)
        }
        e => e,
    }
}

/// Python `_check_prompt_alt_tokens_returned`: alternatives were asked for, so the
/// answer must have them (an older server ignores the field).
fn check_alt_tokens(req: &SampleRequest, resp: &SampleResponse) -> Result<()> {
    if req.prompt_alt_tokens_k > 0 && resp.prompt_alt_tokens.is_none() {
        return Err(Error::InvalidResponse { message: format!("prompt_alt_tokens_k={} was requested but the server returned no prompt_alt_tokens; it may predate this feature", req.prompt_alt_tokens_k) });
    }
    Ok(())
}

/// Python `_check_prompt_logprobs_last_n_honored`: with `prompt_logprobs_last_n`, no
/// logprob may come before the last N positions (an older server computes them all).
fn check_last_n(req: &SampleRequest, resp: &SampleResponse) -> Result<()> {
    if let (Some(n), Some(lp)) = (req.prompt_logprobs_last_n, &resp.prompt_logprobs) {
        let cut = lp.len().saturating_sub(n as usize);
        if lp[..cut].iter().any(|x| !x.is_nan()) {
            return Err(Error::InvalidResponse { message: format!("prompt_logprobs_last_n={n} was requested but the server returned prompt logprobs before that suffix; it may predate this feature") });
        }
    }
    Ok(())
}

/// Creates a sampling session on saved weights (`model_path`) or a base model and a
/// client on it (`create_sampling_session` has HTTP-layer retries only, as in Python).
pub async fn create_sampling_client(
    holder: Rc<Holder>,
    model_path: Option<String>,
    base_model: Option<String>,
    opts: SamplingOptions,
    method: &'static str,
) -> Result<SamplingClient> {
    holder.ensure_open()?;
    let session_id = holder.require_session()?.to_string();
    let seq = holder.take_sampling_seq_id();
    let mut body = json!({ "session_id": session_id, "sampling_session_seq_id": seq, "type": "create_sampling_session" });
    if let Some(p) = &model_path {
        body["model_path"] = p.into();
    }
    if let Some(m) = &base_model {
        body["base_model"] = m.into();
    }
    let req = Req::to(&endpoints::CREATE_SAMPLING_SESSION).json(&body);
    let r: Created = holder.json(req.method_name(Some(method))).await?;
    SamplingClient::connect(holder, r.0, base_model, opts, method).await
}

struct Created(String);

impl FromJson for Created {
    fn from_json(v: &Value) -> std::result::Result<Self, String> {
        Ok(Created(Fields::of(v)?.str("sampling_session_id")?))
    }
}

/// Checks the model choice of a new sampling client: exactly one of a `tinker://`
/// sampler path or a base model name.
pub fn check_sampler_target(
    model_path: Option<&str>,
    base_model: Option<&str>,
) -> Result<(), InputError> {
    match (model_path, base_model) {
        (None, None) => Err(InputError::type_error(
            "model_path",
            "give model_path (a tinker:// path) or base_model",
        )),
        (Some(p), _) if !p.starts_with("tinker://") => Err(InputError::type_error(
            "model_path",
            format!("must start with tinker://, got {}", json::quote(p)),
        )),
        (Some(p), _) => crate::paths::TinkerPath::parse(p)
            .map(|_| ())
            .map_err(|mut e| {
                e.field = "model_path".into();
                e
            }),
        (None, Some("")) => Err(InputError::type_error(
            "base_model",
            "must be a non-empty model name",
        )),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::SampledSequence;

    fn status(code: u16) -> Error {
        Error::from_response(code, &crate::platform::Headers::default(), b"")
    }

    /// Python `sampling_client.py` 367-372: `e.status_code == 429 or
    /// holder._should_pause_on_billing(...)` (which is false for anything but a 402).
    #[test]
    fn backpressure_is_a_429_or_a_402_in_the_billing_window() {
        let rows = [
            (status(429), false, true),
            (status(402), true, true),
            (status(402), false, false),
            (status(503), true, false),
            (status(400), true, false),
        ];
        for (e, window, want) in rows {
            let asked = Cell::new(false);
            let pause = || {
                asked.set(true);
                window
            };
            assert_eq!(is_backpressure(&e, pause), want, "{e}");
            assert_eq!(asked.get(), e.status() == Some(402), "{e}");
        }
    }

    fn response(prompt_logprobs: Option<Vec<f32>>) -> SampleResponse {
        SampleResponse {
            sequences: Vec::<SampledSequence>::new(),
            prompt_logprobs,
            topk_prompt_logprobs: None,
            prompt_cache_hit_tokens: 0,
            target_prompt_logprobs: None,
            prompt_alt_tokens: None,
        }
    }

    /// Python `sampling_client.py` 141-175: alternatives asked for must come back, and
    /// with `prompt_logprobs_last_n` only the last N positions may carry logprobs (NaN
    /// elsewhere).
    #[test]
    fn results_must_honour_what_was_asked() {
        let mut req =
            SampleRequest::new(ModelInput::from_ints(vec![1, 2, 3]), 1, Default::default());
        assert!(check_alt_tokens(&req, &response(None)).is_ok());
        req.prompt_alt_tokens_k = 2;
        assert!(check_alt_tokens(&req, &response(None)).is_err());

        let nan = f32::NAN;
        let rows = [
            (None, Some(vec![nan, 0.5, 0.25]), true),
            (Some(2), Some(vec![nan, 0.5, 0.25]), true),
            (Some(1), Some(vec![nan, nan, 0.25]), true),
            (Some(1), Some(vec![nan, 0.5, 0.25]), false),
            (Some(5), Some(vec![0.1, 0.5]), true), // N past the prompt: nothing before it
            (Some(1), None, true),
        ];
        for (last_n, lp, ok) in rows {
            req.prompt_logprobs_last_n = last_n;
            assert_eq!(
                check_last_n(&req, &response(lp.clone())).is_ok(),
                ok,
                "{last_n:?} {lp:?}"
            );
        }
    }
}
