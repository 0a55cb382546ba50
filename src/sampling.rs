//! `SamplingClient`: sampling and prompt logprobs from a base model or saved weights,
//! with the Python SDK 0.38's machinery:
//!
//! * a per-client retry handler (`RetryConfig`): a concurrency semaphore, retries of
//!   transient failures (a retry is a new submission with a new `seq_id`) with
//!   `min(0.5·2ᵃ, 10)` s ± 25 % waits, and stuck detection;
//! * holder-wide dispatch limits: 400 submissions in flight, a prompt-bytes budget, and
//!   429 as backpressure: every client of the holder backs off 1 s (5 s for prompts
//!   over 128 KiB), then the same submission (same `seq_id`) is retried; for 10 s after
//!   a backoff, dispatch is throttled harder;
//! * session-wide batched polling through `retrieve_futures` when the server enables
//!   `sample_use_retrieve_futures`, and `cancel_future` for abandoned polls when the
//!   dynamic config enables `sample_cancel_enabled`.

use std::cell::Cell;

use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

use futures_util::future::{select, Either, LocalBoxFuture};

use crate::call::{CallOptions, Guard};
use crate::error::{Error, Result};
use crate::future::{retrieve, PauseLogger, Payload, Poll, QueueState};
use crate::http::{decode, FromJson, Req};
use crate::json;
use crate::json::{Fields, Map, ObjectWriter, Value};
use crate::map::{SortedSet, StrMap};
use crate::proto::{decode_sample_response, SampleResponse};
use crate::retry::{SamplingRetryConfig, BILLING_PAUSE_SLEEP};
use crate::session::Holder;
use crate::sync::{CancelToken, Event, Semaphore};
use crate::training::UntypedFuture;
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
        if self.num_samples == 0 {
            return Err(InputError::range_error(
                "numSamples",
                format!("must be at least 1, got {}", self.num_samples),
            ));
        }
        self.sampling_params
            .validate()
            .map_err(|e| e.within("samplingParams"))?;
        if let Some(t) = &self.target_prompt_logprobs {
            if t.dtype() != DType::Int64 {
                return Err(InputError::type_error(
                    "targetPromptLogprobs.dtype",
                    format!(
                        "must be an int64 tensor of token ids, got {}",
                        t.dtype().name()
                    ),
                ));
            }
            if t.shape.as_ref().map(Vec::len) != Some(2) {
                return Err(InputError::type_error(
                    "targetPromptLogprobs.shape",
                    format!("must be 2-D, [len(prompt) - 1, K], got {:?}", t.shape),
                ));
            }
            t.validate().map_err(|e| e.within("targetPromptLogprobs"))?;
        }
        if let Some(n) = self.prompt_logprobs_last_n {
            if n < 1 {
                return Err(InputError::range_error(
                    "promptLogprobsLastN",
                    format!("must be 1 or greater, got {n}"),
                ));
            }
            if !self.include_prompt_logprobs {
                return Err(InputError::type_error(
                    "promptLogprobsLastN",
                    "applies to prompt logprobs; set includePromptLogprobs",
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

// ---------------------------------------------------------------------------------
// Retry handler

/// One per (holder, sampler, retry config), shared by every client on that sampler, as
/// the Python SDK's `_get_retry_handler` cache shares it (keyed by sampling session,
/// config and the holder's telemetry): its concurrency limit and stuck clock cover them
/// all.
pub(crate) struct RetryHandler {
    config: SamplingRetryConfig,
    semaphore: Option<Semaphore>,
    last_progress_ms: Cell<f64>,
    in_flight: Cell<usize>,
    /// The stuck-detection watchdog of the current burst of calls (one timer shared by
    /// every call in flight, instead of one per call; Python runs one task per call, to
    /// the same effect: every call in flight fails once no call made progress for
    /// `progress_timeout`).
    watchdog: RefCell<Option<Watchdog>>,
}

struct Watchdog {
    /// Cancelled when no progress was made in time: every call waiting on it fails.
    stuck: CancelToken,
    /// Cancelled when the last call in flight ends: the watchdog stops (no timer left).
    idle: CancelToken,
}

fn sampling_retryable(e: &Error) -> bool {
    matches!(
        e,
        Error::Connection { .. } | Error::Timeout { .. } | Error::FutureExpired { .. }
    ) || matches!(e, Error::Status(s) if !s.final_poll && crate::error::is_retryable_status(s.status))
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

struct InFlight<'a>(&'a RetryHandler);
impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        let n = self.0.in_flight.get() - 1;
        self.0.in_flight.set(n);
        if n == 0 {
            let w = self.0.watchdog.borrow_mut().take();
            if let Some(w) = w {
                w.idle.cancel();
            }
        }
    }
}

// ---------------------------------------------------------------------------------
// Session-wide batched polling (`retrieve_futures`)

#[derive(Debug, Clone)]
struct Completion {
    state: String,
    request_id: String,
    response_payload_uncompressed_size: Option<u64>,
}

struct FuturesResponse {
    completions: Vec<Completion>,
    cursor: i64,
}

impl FromJson for FuturesResponse {
    fn from_json(v: &Value) -> std::result::Result<Self, String> {
        let f = Fields::of(v)?;
        let completions = match f.get("completions") {
            None | Some(Value::Null) => vec![],
            Some(Value::Array(a)) => a
                .iter()
                .map(|c| {
                    let c = Fields::of(c)?;
                    Ok(Completion {
                        state: c.str("state")?,
                        request_id: c.str("request_id")?,
                        response_payload_uncompressed_size: c
                            .opt_u64("response_payload_uncompressed_size")?,
                    })
                })
                .collect::<std::result::Result<_, String>>()
                .map_err(|e| format!("`completions`: {e}"))?,
            Some(other) => {
                return Err(format!(
                    "`completions`: expected an array, got {}",
                    other.kind()
                ))
            }
        };
        Ok(FuturesResponse {
            completions,
            cursor: f
                .opt_i64("cursor")?
                .ok_or_else(|| "missing field `cursor`".to_string())?,
        })
    }
}

#[derive(Default)]
struct PollerState {
    cursor: i64,
    acked: i64,
    completions: StrMap<Completion>,
    waiters: StrMap<Event>,
    abandoned: SortedSet<String>,
    retrieved: SortedSet<String>,
    /// Why polling stopped for good: every waiter fails with it, and (as Python's
    /// `TinkerError` there) the sampling retry handler does not retry it.
    failure: Option<Error>,
    running: bool,
}

struct SessionPoller {
    holder: Rc<Holder>,
    sampling_session_id: String,
    clone_id: u64,
    state: RefCell<PollerState>,
}

impl SessionPoller {
    fn ensure_running(self: &Rc<Self>) {
        if !self.state.borrow().running {
            self.state.borrow_mut().running = true;
            let me = self.clone();
            self.holder
                .env
                .spawn(Box::pin(async move { me.poll_loop().await }));
        }
    }

    async fn wait_for(self: &Rc<Self>, request_id: &str) -> Result<Completion> {
        let event = {
            let mut s = self.state.borrow_mut();
            if let Some(c) = s.completions.remove(request_id) {
                return Ok(c);
            }
            if let Some(f) = &s.failure {
                return Err(f.clone());
            }
            let e = Event::new();
            s.waiters.insert(request_id, e.clone());
            e
        };
        self.ensure_running();
        struct Unregister<'a>(&'a SessionPoller, &'a str, bool);
        impl Drop for Unregister<'_> {
            fn drop(&mut self) {
                let mut s = self.0.state.borrow_mut();
                s.waiters.remove(self.1);
                if !self.2 {
                    // Abandoned: drop its completion when it arrives.
                    if s.completions.remove(self.1).is_none() {
                        s.abandoned.insert(self.1.to_string());
                    }
                }
            }
        }
        let mut guard = Unregister(self, request_id, false);
        event.wait().await;
        guard.2 = true;
        drop(guard);
        let mut s = self.state.borrow_mut();
        match s.completions.remove(request_id) {
            Some(c) => Ok(c),
            None => Err(s.failure.clone().unwrap_or_else(|| Error::Connection {
                message: "retrieve_futures polling stopped".into(),
            })),
        }
    }

    fn mark_retrieved(self: &Rc<Self>, request_id: &str) {
        self.state
            .borrow_mut()
            .retrieved
            .insert(request_id.to_string());
        self.ensure_running();
    }

    async fn poll_loop(self: Rc<Self>) {
        let h = self.holder.clone();
        let mut bad_requests = 0u32;
        loop {
            let closing = h.is_closed();
            let (cursor, ids, ack_only) = {
                let mut s = self.state.borrow_mut();
                let idle = s.waiters.is_empty() && s.retrieved.is_empty() && s.cursor <= s.acked;
                if idle || (closing && s.cursor <= s.acked && s.retrieved.is_empty()) {
                    s.running = false;
                    return;
                }
                (
                    s.cursor,
                    s.retrieved.iter().cloned().collect::<Vec<_>>(),
                    closing || s.waiters.is_empty(),
                )
            };
            let mut body = json!({
                "target": { "type": "sampling_session", "sampling_session_id": self.sampling_session_id, "cloned_sampler_id": self.clone_id },
                "prev_cursor": cursor,
                "retrieved_request_ids": ids,
            });
            if ack_only {
                body["timeout"] = 0.0.into(); // Python sends the float 0.0
            }
            let req = Req::post_json("/api/v1/retrieve_futures", &body)
                .retries(0)
                .timeout(Duration::from_secs(if ack_only { 5 } else { 45 }));
            match h.http.json::<FuturesResponse>(req).await {
                Ok(r) => {
                    bad_requests = 0;
                    let mut s = self.state.borrow_mut();
                    for id in &ids {
                        s.retrieved.remove(id);
                    }
                    s.acked = s.acked.max(cursor);
                    s.cursor = r.cursor;
                    for c in r.completions {
                        if s.abandoned.remove(&c.request_id) {
                            // Nobody waits for it; report it retrieved so the server can drop it.
                            s.retrieved.insert(c.request_id.clone());
                            continue;
                        }
                        let id = c.request_id.clone();
                        s.completions.insert(id.clone(), c);
                        if let Some(e) = s.waiters.remove(&id) {
                            e.set();
                        }
                    }
                    if closing {
                        s.running = false;
                        return;
                    }
                }
                Err(_) if closing => {
                    self.state.borrow_mut().running = false;
                    return;
                }
                Err(e) => {
                    if e.status() == Some(402) && h.should_pause_on_billing(402) {
                        h.env.sleep(BILLING_PAUSE_SLEEP).await;
                        continue;
                    }
                    if e.is_retryable() {
                        h.env.sleep(Duration::from_secs(1)).await;
                        continue;
                    }
                    if e.status() == Some(400) && bad_requests < 3 {
                        bad_requests += 1;
                        h.env.sleep(Duration::from_secs(1)).await;
                        continue;
                    }
                    let message = format!(
                        "retrieve_futures polling failed for sampling session {} (clone {}): {e}",
                        self.sampling_session_id, self.clone_id
                    );
                    let failure = match e {
                        Error::Status(mut st) => {
                            st.message = message;
                            st.final_poll = true;
                            Error::Status(st)
                        }
                        _ => Error::InvalidResponse { message },
                    };
                    let mut s = self.state.borrow_mut();
                    s.failure = Some(failure);
                    s.running = false;
                    for (_, w) in s.waiters.drain() {
                        w.set();
                    }
                    return;
                }
            }
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

/// The live retry handler of `holder`'s clients on sampler `id` with `config`, or a new
/// one.
fn shared_retry_handler(
    holder: &Holder,
    id: &str,
    config: SamplingRetryConfig,
) -> Rc<RetryHandler> {
    let mut all = holder.sampling_retry.borrow_mut();
    all.retain(|(_, h)| h.strong_count() > 0);
    let live = all
        .iter()
        .filter(|(sampler, _)| sampler == id)
        .filter_map(|(_, h)| h.upgrade())
        .find(|h| h.config == config);
    live.unwrap_or_else(|| {
        let h = Rc::new(RetryHandler {
            semaphore: config.max_connections.map(Semaphore::new),
            config,
            last_progress_ms: Cell::new(holder.env.now_ms()),
            in_flight: Cell::new(0),
            watchdog: RefCell::new(None),
        });
        all.push((id.to_string(), Rc::downgrade(&h)));
        h
    })
}

/// The clone id of a client on a sampler others may use: `None` when the server
/// allocates it (`sample_join_sampling_session`), else a random one in 1..=1e9.
fn fresh_clone_id(holder: &Holder) -> Option<u64> {
    (!holder.config.sample_join_sampling_session)
        .then(|| (holder.env.random() * 1e9) as u64 % 1_000_000_000 + 1)
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
                let path = format!("/api/v1/samplers/{sampling_session_id}");
                holder
                    .get_json::<SamplerInfo>("get_sampler", path, vec![], Some(sdk_method))
                    .await?
                    .base_model
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
        mut opts: crate::config::ClientOptions,
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
                base_url: holder.opts.base_url.clone(),
                default_headers_overrides: holder
                    .opts
                    .default_headers
                    .iter()
                    .map(|(k, v)| (k.clone(), Value::from(v)))
                    .collect::<Map>(),
                client_config: holder.config.clone(),
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
        config.max_connections = if holder.config.sample_use_retrieve_futures {
            None
        } else {
            Some(holder.config.sample_max_concurrent_requests)
        };
        if !holder.config.sample_enable_stuck_detection {
            config.enable_stuck_detection = false;
        }
        let retry = shared_retry_handler(&holder, &sampling_session_id, config);
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

    fn poller(&self) -> Option<Rc<SessionPoller>> {
        if !self.0.holder.config.sample_use_retrieve_futures {
            return None;
        }
        let mut p = self.0.poller.borrow_mut();
        Some(
            p.get_or_insert_with(|| {
                Rc::new(SessionPoller {
                    holder: self.0.holder.clone(),
                    sampling_session_id: self.0.sampling_session_id.clone(),
                    clone_id: self.0.clone_id.get().unwrap_or(0),
                    state: RefCell::new(PollerState::default()),
                })
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
        let guard = Guard::new(&self.0.holder.env, &opts, method);
        guard.check()?;
        let me = self.clone();
        Ok(Box::pin(async move {
            let req = Rc::new(req);
            // Python bypasses the retry handler for `sample` only (compute_logprobs
            // always goes through it).
            if me.0.holder.config.sample_no_retries && method == "SamplingClient.sample" {
                return me.sample_once(&req, &guard, method).await;
            }
            me.with_retry_handler(&guard, || me.sample_once(&req, &guard, method))
                .await
        }))
    }

    async fn with_retry_handler<F, Fut>(&self, guard: &Guard, mut f: F) -> Result<SampleResponse>
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Result<SampleResponse>>,
    {
        let rh = &self.0.retry;
        let env = self.0.holder.env.clone();
        let _permit = match &rh.semaphore {
            Some(s) => Some(guard.run(async { Ok(s.acquire().await) }).await?),
            None => None,
        };
        if rh.in_flight.get() == 0 {
            rh.last_progress_ms.set(env.now_ms());
        }
        rh.in_flight.set(rh.in_flight.get() + 1);
        let _in_flight = InFlight(rh);
        let attempts = async {
            let mut attempt = 0u32;
            loop {
                match f().await {
                    Ok(r) => return Ok(r),
                    Err(e) if rh.config.enable_retry_logic && sampling_retryable(&e) => {
                        let d = rh.config.delay(attempt, env.random());
                        attempt += 1;
                        guard.sleep(d).await?;
                    }
                    Err(e) => return Err(e),
                }
            }
        };
        let stuck = rh.config.enable_stuck_detection.then(|| self.stuck_token());
        let watchdog = async {
            match stuck {
                None => std::future::pending().await,
                Some(t) => t.cancelled().await,
            }
            Error::Connection {
                message: format!(
                    "No progress made in {}s. Requests appear to be stuck.",
                    crate::types::fmt_num(rh.config.progress_timeout.as_secs_f64())
                ),
            }
        };
        futures_util::pin_mut!(attempts, watchdog);
        match select(attempts, watchdog).await {
            Either::Left((r, _)) => {
                if r.is_ok() {
                    rh.last_progress_ms.set(env.now_ms());
                }
                r
            }
            Either::Right((e, _)) => Err(e),
        }
    }

    /// The stuck token of the current burst of calls, starting its watchdog if none runs.
    fn stuck_token(&self) -> CancelToken {
        let rh = &self.0.retry;
        if let Some(w) = rh.watchdog.borrow().as_ref() {
            if !w.stuck.is_cancelled() {
                return w.stuck.clone();
            }
        }
        let (stuck, idle) = (CancelToken::new(), CancelToken::new());
        *rh.watchdog.borrow_mut() = Some(Watchdog {
            stuck: stuck.clone(),
            idle: idle.clone(),
        });
        let handler = Rc::downgrade(rh);
        let env = self.0.holder.env.clone();
        let timeout_ms = rh.config.progress_timeout.as_secs_f64() * 1000.0;
        let fire = stuck.clone();
        self.0.holder.env.spawn(Box::pin(async move {
            loop {
                if idle.is_cancelled() {
                    return; // the burst ended before this task first ran
                }
                let Some(deadline) = handler
                    .upgrade()
                    .map(|h| h.last_progress_ms.get() + timeout_ms)
                else {
                    return;
                };
                let now = env.now_ms();
                if now > deadline {
                    fire.cancel();
                    return;
                }
                let sleep = env.sleep(Duration::from_secs_f64((deadline - now) / 1000.0 + 0.001));
                let stop = idle.cancelled();
                futures_util::pin_mut!(stop);
                if let Either::Right(_) = select(sleep, stop).await {
                    return;
                }
            }
        }));
        stuck
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
        let r: Value = guard
            .run(h.request_json(
                "join_sampling_session",
                "/api/v1/join_sampling_session".into(),
                vec![],
                Some(&body),
                Some(method),
            ))
            .await?;
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

    async fn sample_once(
        &self,
        req: &SampleRequest,
        guard: &Guard,
        method: &'static str,
    ) -> Result<SampleResponse> {
        let h = self.0.holder.clone();
        let est = req.estimated_bytes() as i64;
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
        let recently = |h: &Holder| {
            h.sample_backoff_until
                .get()
                .is_some_and(|u| h.now() - u < 10.0)
        };
        let submitted = {
            let _count = guard
                .run(async { Ok(h.sample_dispatch.acquire().await) })
                .await?;
            let _throttle = if recently(&h) {
                Some(
                    guard
                        .run(async { Ok(h.sample_throttle.acquire().await) })
                        .await?,
                )
            } else {
                None
            };
            let bytes = if recently(&h) { est * 20 } else { est };
            let _bytes = guard
                .run(async { Ok(h.sample_bytes.acquire(bytes).await) })
                .await?;
            loop {
                if let Some(until) = h.sample_backoff_until.get() {
                    if h.now() < until {
                        guard.sleep(Duration::from_secs(1)).await?;
                        continue;
                    }
                }
                let started = h.env.now_ms();
                let r = h
                    .with_retries("asample", || async {
                        match h
                            .http
                            .send(
                                Req::new(crate::platform::Method::Post, "/api/v1/asample")
                                    .json_bytes(body.clone())
                                    .retries(0)
                                    .method_name(Some(method))
                                    .header("X-Tinker-Sampling-Backpressure", "1"),
                            )
                            .await
                        {
                            Ok(resp) => crate::http::parse_json(&resp.body, "/api/v1/asample")
                                .and_then(|v| decode::<UntypedFuture>(&v, "/api/v1/asample"))
                                .map(Some),
                            Err(e)
                                if e.status() == Some(429)
                                    || (e.status() == Some(402)
                                        && h.should_pause_on_billing(402)) =>
                            {
                                Ok(None)
                            }
                            Err(e) => Err(e),
                        }
                    })
                    .await?;
                match r {
                    Some(f) => break (f, (h.env.now_ms() - started) / 1000.0),
                    None => {
                        let wait = if est <= 128 * 1024 { 1.0 } else { 5.0 };
                        h.sample_backoff_until.set(Some(h.now() + wait));
                    }
                }
            }
        };
        let (fut, roundtrip) = submitted;
        let ids = fut
            .sample_sequence_ids
            .clone()
            .ok_or_else(|| Error::InvalidResponse {
                message: format!(
                    "asample response for {} has no sample_sequence_ids",
                    fut.request_id
                ),
            })?;
        let poller = self.poller();
        let observe = |qs: QueueState, reason: Option<&str>| {
            self.0.queue_state.set(Some(qs));
            self.0.pauses.observe(&h, qs, reason);
        };
        let poll = async {
            let known = match &poller {
                Some(p) => {
                    let c = p.wait_for(&fut.request_id).await?;
                    (c.state == "finished")
                        .then_some(c.response_payload_uncompressed_size)
                        .flatten()
                }
                None => None,
            };
            let r = retrieve(
                &h,
                Poll {
                    request_id: &fut.request_id,
                    request_type: "Sample",
                    proto: true,
                    submit_roundtrip_secs: roundtrip,
                    sdk_method: Some(method),
                    observer: Some(&observe),
                    known_payload_size: known,
                },
            )
            .await;
            if let Some(p) = &poller {
                if matches!(&r, Ok(_) | Err(Error::RequestFailed { .. })) {
                    p.mark_retrieved(&fut.request_id);
                }
            }
            r
        };
        // Polling abandoned (an abort, a timeout, stuck detection dropping the attempt, or
        // a dropped future): the server is told to stop the work (when enabled), as Python
        // does on cancellation.
        let mut cancel = CancelOnDrop(Some((&h, &fut.request_id)));
        let payload = match guard.run(poll).await {
            Ok(p) => p,
            Err(e @ (Error::Aborted { .. } | Error::Timeout { .. })) => return Err(e),
            Err(e) => {
                cancel.0 = None;
                return Err(e);
            }
        };
        cancel.0 = None;
        let bytes = match payload {
            Payload::Proto(b) => b,
            Payload::Json(_) => unreachable!("retrieve rejects JSON for protobuf results"),
        };
        let resp = decode_sample_response(&bytes, &ids).map_err(|m| Error::InvalidResponse {
            message: format!("request {}: {m}", fut.request_id),
        })?;
        if req.prompt_alt_tokens_k > 0 && resp.prompt_alt_tokens.is_none() {
            return Err(Error::InvalidResponse { message: format!("prompt_alt_tokens_k={} was requested but the server returned no prompt_alt_tokens; it may predate this feature", req.prompt_alt_tokens_k) });
        }
        if let (Some(n), Some(lp)) = (req.prompt_logprobs_last_n, &resp.prompt_logprobs) {
            let cut = lp.len().saturating_sub(n as usize);
            if lp[..cut].iter().any(|x| !x.is_nan()) {
                return Err(Error::InvalidResponse { message: format!("prompt_logprobs_last_n={n} was requested but the server returned prompt logprobs before that suffix; it may predate this feature") });
            }
        }
        Ok(resp)
    }
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
    let r: Created = holder
        .http
        .json(Req::post_json("/api/v1/create_sampling_session", &body).method_name(Some(method)))
        .await?;
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
            "modelPath",
            "give modelPath (a tinker:// path) or baseModel",
        )),
        (Some(p), _) if !p.starts_with("tinker://") => Err(InputError::type_error(
            "modelPath",
            format!("must start with tinker://, got {}", json::quote(p)),
        )),
        (Some(p), _) => crate::paths::TinkerPath::parse(p)
            .map(|_| ())
            .map_err(|mut e| {
                e.field = "modelPath".into();
                e
            }),
        (None, Some("")) => Err(InputError::type_error(
            "baseModel",
            "must be a non-empty model name",
        )),
        _ => Ok(()),
    }
}
