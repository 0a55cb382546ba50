//! The per-client state behind every operation (Python `InternalClientHolder`), made of
//! parts each owned by its layer: the connection (HTTP layer, credential, server flags:
//! [`crate::http::Connection`]), the session's identity and counters, the holder-level
//! retries and their 402 pause, sampling admission and the byte budgets
//! ([`crate::admission`]), the sampling retry handlers ([`crate::sampling_retry`]),
//! the closing state with its queue of sample cancels, and telemetry.
//!
//! Startup order, as the Python SDK's: `client/config` (with the API key) → JWT
//! exchange if the server enables it (lazily, on the first authenticated request) →
//! `client/dynamic_config` → `create_session` (unless session-less or resumed) →
//! background heartbeat and config refresh (unless `background` is off).

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::rc::Rc;
use std::time::Duration;

use crate::admission::{ByteBudgets, SampleAdmission};
use crate::config::{DynamicConfig, ServerConfig, SessionState, PROTOCOL_SDK_VERSION};
use crate::endpoints::{self, Endpoint, Retries};
use crate::error::{Error, Result};
use crate::http::{decode, Connection, Http, Req};
use crate::json;
use crate::json::{Fields, FromJson, Value};
use crate::options::{ClientOptions, LogLevel};
use crate::platform::{now_secs, Env, HttpResponse};
use crate::retry::{holder_retry_delay, BillingPause, BILLING_PAUSE_SLEEP};
use crate::sampling_retry::RetryHandlers;
use crate::sync::CancelToken;
use crate::telemetry::{error_type, Telemetry};

const HEARTBEAT_PERIOD: Duration = Duration::from_secs(10);
const HEARTBEAT_WARN_AFTER_SECS: f64 = 120.0;

/// How a session ended (`ServiceClient.close(status)`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FinishStatus {
    /// The job finished normally.
    Success,
    /// The job failed.
    Errored,
    /// The job was interrupted.
    Interrupted,
}

impl FinishStatus {
    /// The wire name (`success`, `errored`, `interrupted`).
    pub fn as_str(self) -> &'static str {
        match self {
            FinishStatus::Success => "success",
            FinishStatus::Errored => "errored",
            FinishStatus::Interrupted => "interrupted",
        }
    }
}

struct CreateSessionResponse {
    session_id: String,
    info_message: Option<String>,
    warning_message: Option<String>,
    error_message: Option<String>,
}

impl FromJson for CreateSessionResponse {
    fn from_json(v: &Value) -> std::result::Result<Self, String> {
        let f = Fields::of(v)?;
        Ok(CreateSessionResponse {
            session_id: f.str("session_id")?,
            info_message: f.opt_str("info_message")?,
            warning_message: f.opt_str("warning_message")?,
            error_message: f.opt_str("error_message")?,
        })
    }
}

/// Sleeps for `d` unless `stop` fires first; returns whether it was stopped.
pub async fn sleep_or_stop(env: &Env, d: Duration, stop: &CancelToken) -> bool {
    let s = stop.cancelled();
    futures_util::pin_mut!(s);
    matches!(
        futures_util::future::select(s, env.sleep(d)).await,
        futures_util::future::Either::Left(_)
    )
}

// ---------------------------------------------------------------------------------
// Parts

/// The session a holder works in, and its per-session counters.
struct SessionIds {
    /// `None` for a session-less (REST-only) holder.
    session_id: Option<String>,
    next_model_seq_id: Cell<u32>,
    next_sampling_seq_id: Cell<u32>,
}

impl SessionIds {
    fn new(session_id: Option<String>, next_model: u32, next_sampling: u32) -> Self {
        SessionIds {
            session_id,
            next_model_seq_id: Cell::new(next_model),
            next_sampling_seq_id: Cell::new(next_sampling),
        }
    }

    fn take(counter: &Cell<u32>) -> u32 {
        let n = counter.get();
        counter.set(n + 1);
        n
    }
}

/// Whether the holder is closed, the token that stops its background work, and the
/// cancels of abandoned samples waiting to be sent.
struct Lifecycle {
    closed: Cell<bool>,
    /// What calls after `close` are told.
    closed_message: Cell<&'static str>,
    stop: CancelToken,
    cancel_queue: RefCell<Vec<String>>,
    cancel_draining: Cell<bool>,
}

impl Lifecycle {
    fn new() -> Self {
        Lifecycle {
            closed: Cell::new(false),
            closed_message: Cell::new("the ServiceClient is closed"),
            stop: CancelToken::new(),
            cancel_queue: RefCell::new(Vec::new()),
            cancel_draining: Cell::new(false),
        }
    }
}

/// Shared state of a connected client.
pub struct Holder {
    /// The HTTP layer, its credential and the server's flags.
    conn: Connection,
    ids: SessionIds,
    /// The 402 pause window of the holder's retries (Python `_should_pause_on_billing`).
    billing: RefCell<BillingPause>,
    /// Sampling admission: dispatch limits and the 429 backoff of every sampling client.
    pub(crate) admission: SampleAdmission,
    /// Forward/backward and result byte budgets.
    pub(crate) budgets: ByteBudgets,
    /// The sampling retry handlers of this holder's clients, by sampler.
    pub(crate) retry_handlers: RetryHandlers,
    life: Lifecycle,
    /// Telemetry.
    pub telemetry: Rc<Telemetry>,
}

/// A new session's id, after logging the server's messages about it.
async fn create_session(http: &Http, opts: &ClientOptions) -> Result<String> {
    let mut body = json!({
        "tags": opts.tags,
        "user_metadata": opts.user_metadata,
        "sdk_version": PROTOCOL_SDK_VERSION,
    });
    if let Some(p) = &opts.project_id {
        body["project_id"] = p.into();
    }
    if let Some(n) = &opts.display_name {
        body["display_name"] = n.into();
    }
    body["type"] = "create_session".into();
    let r: CreateSessionResponse = http
        .json(Req::to(&endpoints::CREATE_SESSION).json(&body))
        .await?;
    for (level, m) in [
        (LogLevel::Info, &r.info_message),
        (LogLevel::Warn, &r.warning_message),
        (LogLevel::Error, &r.error_message),
    ] {
        if let Some(m) = m {
            opts.log(level, m);
        }
    }
    Ok(r.session_id)
}

impl Holder {
    /// Connects: fetches server flags, sets up authentication and, if `with_session`,
    /// creates (or resumes) a session and starts its background work.
    ///
    /// Boxed here, as [`Http::send`] is, so that one crate compiles the connection.
    pub fn connect(
        env: Env,
        opts: Rc<ClientOptions>,
        with_session: bool,
    ) -> futures_util::future::LocalBoxFuture<'static, Result<Rc<Holder>>> {
        Box::pin(Self::connect_unboxed(env, opts, with_session))
    }

    async fn connect_unboxed(
        env: Env,
        opts: Rc<ClientOptions>,
        with_session: bool,
    ) -> Result<Rc<Holder>> {
        let key_http = Connection::key_http(&env, &opts)?;
        let sdk = json!({ "sdk_version": PROTOCOL_SDK_VERSION });
        // A 402 here fails at once (a BillingError), as Python's start-up fails at once
        // (tests/differential/NOTES.md); later calls pause on it (`billing`).
        // Each read as JSON under the retries, then as its type (one retry loop for both).
        let ep = &endpoints::CLIENT_CONFIG;
        let config = retry_loop(&env, || key_http.json_value(Req::to(ep).json(&sdk))).await?;
        let config: ServerConfig =
            decode(&config, ep.path).map_err(|e| key_http.redact(e, None))?;
        let conn = Connection::open(key_http, config, DynamicConfig::default(), opts.background);
        let ep = &endpoints::DYNAMIC_CONFIG;
        let dynamic = retry_loop(&env, || conn.http.json_value(Req::to(ep).json(&sdk)))
            .await
            .and_then(|v| {
                decode::<DynamicConfig>(&v, ep.path).map_err(|e| conn.http.redact(e, None))
            });
        conn.set_dynamic(match dynamic {
            Ok(d) => d,
            Err(e) if e.status() == Some(404) => DynamicConfig::default(),
            Err(e) => return Err(e),
        });
        let ids = match (with_session, &opts.session) {
            (false, _) => SessionIds::new(None, 0, 0),
            (true, Some(s)) => SessionIds::new(
                Some(s.session_id.clone()),
                s.next_model_seq_id,
                s.next_sampling_session_seq_id,
            ),
            (true, None) => {
                let id = create_session(&conn.http, &opts).await?;
                SessionIds::new(Some(id), 0, 0)
            }
        };
        Ok(Self::assemble(conn, ids, BillingPause::default()))
    }

    /// A holder on a session another client created and keeps (a restored sampler
    /// handle): the server flags come from the handle, so nothing is sent; the session is
    /// heartbeaten (with `opts.background`) but never created or finished here.
    pub fn shadow(
        env: Env,
        opts: Rc<ClientOptions>,
        session_id: String,
        config: ServerConfig,
        dynamic: DynamicConfig,
    ) -> Result<Rc<Holder>> {
        let key_http = Connection::key_http(&env, &opts)?;
        let conn = Connection::open(key_http, config, dynamic, opts.background);
        let ids = SessionIds::new(Some(session_id), 0, 0);
        let holder = Self::assemble(conn, ids, BillingPause::default());
        holder
            .life
            .closed_message
            .set("the SamplingClient is closed (its close() was called)");
        Ok(holder)
    }

    /// The holder over an open connection, with its background work started.
    fn assemble(conn: Connection, ids: SessionIds, billing: BillingPause) -> Rc<Holder> {
        let (env, opts) = (conn.http.env.clone(), conn.http.opts.clone());
        // Python sends `platform.system()` (the OS); a browser page has none to give.
        let runtime = match (&opts.platform, &opts.user_agent) {
            (Some(p), _) => p.system.clone(),
            (None, Some(ua)) => ua.clone(),
            (None, None) => "browser".into(),
        };
        let session = ids.session_id.as_deref();
        let telemetry = Telemetry::new(env, conn.http.clone(), opts.telemetry, session, &runtime);
        let c = &conn.config;
        let holder = Rc::new(Holder {
            admission: SampleAdmission::new(c.sample_dispatch_bytes_semaphore_size),
            budgets: ByteBudgets::new(
                c.fwdbwd_dispatch_bytes_semaphore_size,
                c.inflight_response_bytes_semaphore_size,
            ),
            conn,
            ids,
            billing: RefCell::new(billing),
            retry_handlers: RetryHandlers::default(),
            life: Lifecycle::new(),
            telemetry,
        });
        if opts.background {
            holder.start_background();
        }
        holder
    }

    /// Starts the heartbeat (with a session), the dynamic-config refresh and the
    /// telemetry flushes.
    fn start_background(self: &Rc<Self>) {
        let env = self.env();
        if let Some(id) = self.ids.session_id.clone() {
            let h = self.clone();
            env.spawn(Box::pin(async move { h.heartbeat_loop(id).await }));
        }
        let h = self.clone();
        env.spawn(Box::pin(async move { h.dynamic_refresh_loop().await }));
        let (t, stop) = (self.telemetry.clone(), self.life.stop.clone());
        env.spawn(Box::pin(async move { t.flush_loop(stop).await }));
    }

    // -----------------------------------------------------------------------------
    // The parts

    /// The platform.
    pub fn env(&self) -> &Env {
        &self.conn.http.env
    }

    /// The client options.
    pub fn opts(&self) -> &ClientOptions {
        &self.conn.http.opts
    }

    /// The authenticated HTTP layer.
    pub fn http(&self) -> &Http {
        &self.conn.http
    }

    /// The server's flags.
    pub fn config(&self) -> &ServerConfig {
        &self.conn.config
    }

    /// The latest dynamic flags.
    pub fn dynamic(&self) -> DynamicConfig {
        self.conn.dynamic()
    }

    /// The session id (`None` for a session-less client).
    pub fn session_id(&self) -> Option<&str> {
        self.ids.session_id.as_deref()
    }

    /// The session id, or an error for session-less clients.
    pub fn require_session(&self) -> Result<&str> {
        self.session_id().ok_or_else(|| Error::Closed {
            message: "this client has no session (REST-only)".into(),
        })
    }

    /// Takes the next training-client number of the session.
    pub fn take_model_seq_id(&self) -> u32 {
        SessionIds::take(&self.ids.next_model_seq_id)
    }

    /// Takes the next sampling-session number of the session.
    pub fn take_sampling_seq_id(&self) -> u32 {
        SessionIds::take(&self.ids.next_sampling_seq_id)
    }

    /// What another process or request needs to resume this session.
    pub fn session_state(&self) -> Option<SessionState> {
        Some(SessionState {
            session_id: self.ids.session_id.clone()?,
            next_model_seq_id: self.ids.next_model_seq_id.get(),
            next_sampling_session_seq_id: self.ids.next_sampling_seq_id.get(),
        })
    }

    /// Fails once the client is closed.
    pub fn ensure_open(&self) -> Result<()> {
        if self.life.closed.get() {
            Err(Error::Closed {
                message: self.life.closed_message.get().into(),
            })
        } else {
            Ok(())
        }
    }

    /// A public call's outcome, its failure reported to telemetry, as Python's
    /// `capture_exceptions(fatal=True)` does around nearly every public method
    /// (`lib/telemetry.py` `log_fatal_exception`: the error or `user_error` event,
    /// `SESSION_END`, a flush; sent in the background here, so the error is not delayed).
    /// A caller's own abort is not the SDK's failure and is not reported.
    pub async fn reported<T>(&self, r: Result<T>) -> Result<T> {
        if let Err(e) = &r {
            if !matches!(e, Error::Aborted { .. }) {
                self.telemetry.fatal(e);
            }
        }
        r
    }

    /// Cancelled when the holder's background work stops (after `close` finished the
    /// session, or on `detach`).
    pub fn stop_token(&self) -> &CancelToken {
        &self.life.stop
    }

    /// Whether `close` has run.
    pub fn is_closed(&self) -> bool {
        self.life.closed.get()
    }

    /// Seconds since the epoch.
    pub fn now(&self) -> f64 {
        now_secs(&**self.env())
    }

    // -----------------------------------------------------------------------------
    // Retries

    /// Whether a 402 should pause (sleep 5 s and retry) rather than fail.
    pub fn should_pause_on_billing(&self, status: u16) -> bool {
        self.billing.borrow_mut().should_pause(
            status,
            self.now(),
            self.config().billing_exception_max_pause_duration_sec,
        )
    }

    /// Runs `attempt` under the retry layer `ep`'s row names: the holder's retries
    /// (Python `execute_with_retries`) for `Transient` and `ConflictFinal` rows, once
    /// otherwise (the HTTP layer below still retries as the row says).
    pub async fn retrying<T, F, Fut>(&self, ep: &Endpoint, mut attempt: F) -> Result<T>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T>>,
    {
        let retryable: fn(&Error) -> bool = match ep.retries {
            Retries::Transient => Error::is_retryable,
            // A 409 is final here: "already public", "already exists" cannot resolve,
            // and retrying for five minutes, as the Python SDK does, only delays it.
            Retries::ConflictFinal => |e| e.is_retryable() && e.status() != Some(409),
            Retries::None | Retries::Loop => return attempt().await,
        };
        // Python `execute_with_retries`: retries what `retryable` allows (timeouts,
        // connection errors, 408/409/429/5xx) with `min(2ᵏ, 30)` s waits within 300 s,
        // and pauses on HTTP 402 while the billing window lasts; every failure is
        // reported to telemetry.
        let policy = RetryPolicy {
            env: self.env(),
            max_pause: self.config().billing_exception_max_pause_duration_sec,
            telemetry: Some(&self.telemetry),
            what: ep.name,
            retryable: &retryable,
        };
        policy.run(&mut HolderBilling(self), attempt).await
    }

    /// Sends `req` under its endpoint's retries (a bare request: once).
    pub async fn send(&self, req: Req) -> Result<HttpResponse> {
        match req.endpoint {
            Some(ep) => self.retrying(ep, || self.http().send(req.clone())).await,
            None => self.http().send(req).await,
        }
    }

    /// Sends `req` under its endpoint's retries and parses the JSON answer.
    pub async fn json_value(&self, req: Req) -> Result<Value> {
        match req.endpoint {
            Some(ep) => {
                self.retrying(ep, || self.http().json_value(req.clone()))
                    .await
            }
            None => self.http().json_value(req).await,
        }
    }

    /// Sends `req` under its endpoint's retries and reads the JSON answer as a `T`.
    pub async fn json<T: FromJson>(&self, req: Req) -> Result<T> {
        let path = req.path.clone();
        let v = self.json_value(req).await?;
        decode(&v, &path).map_err(|e| self.http().redact(e, None))
    }

    // -----------------------------------------------------------------------------
    // Background work

    /// The `session_heartbeat` request.
    fn heartbeat(session_id: &str) -> Req {
        let body = json!({ "session_id": session_id, "type": "session_heartbeat" });
        Req::to(&endpoints::SESSION_HEARTBEAT).json(&body)
    }

    /// Heartbeats every 10 s until closed or the server answers 410 (session finished).
    async fn heartbeat_loop(self: Rc<Self>, session_id: String) {
        let mut last_ok = self.now();
        loop {
            if sleep_or_stop(self.env(), HEARTBEAT_PERIOD, &self.life.stop).await {
                return;
            }
            match self.http().send(Self::heartbeat(&session_id)).await {
                Ok(_) => last_ok = self.now(),
                Err(e) if e.status() == Some(410) => {
                    let msg = format!("Session {session_id} has finished; stopping its heartbeat.");
                    self.opts().log(LogLevel::Info, &msg);
                    return;
                }
                Err(e) => {
                    let missed = self.now() - last_ok;
                    if missed > HEARTBEAT_WARN_AFTER_SECS {
                        self.opts().log(LogLevel::Warn, &format!("Session heartbeat failed for {} s for session {session_id}: {e}. If this persists, the session will be terminated.", missed.round() as i64));
                    }
                }
            }
        }
    }

    /// Sends one heartbeat now (for callers that drive it themselves, e.g. in Workers).
    pub async fn heartbeat_once(&self) -> Result<()> {
        let id = self.require_session()?;
        self.http().send(Self::heartbeat(id)).await.map(|_| ())
    }

    /// Refreshes the dynamic flags every `refresh_interval_sec` (at least 10 s); on
    /// failure the last good values stay (the next refresh is the retry).
    async fn dynamic_refresh_loop(self: Rc<Self>) {
        loop {
            let every = crate::time::seconds(self.dynamic().refresh_interval_sec.max(10.0));
            if sleep_or_stop(self.env(), every, &self.life.stop).await {
                return;
            }
            let sdk = json!({ "sdk_version": PROTOCOL_SDK_VERSION });
            let req = Req::to(&endpoints::DYNAMIC_CONFIG).json(&sdk);
            if let Ok(d) = self.http().json::<DynamicConfig>(req).await {
                self.conn.set_dynamic(d);
            }
        }
    }

    /// Queues a server-side cancel of an abandoned sampling request (only when the
    /// dynamic config enables it); a drain task sends them in batches.
    pub fn enqueue_cancel(self: &Rc<Self>, request_id: &str) {
        if !self.dynamic().sample_cancel_enabled || self.is_closed() {
            return;
        }
        let life = &self.life;
        life.cancel_queue.borrow_mut().push(request_id.to_string());
        if !life.cancel_draining.replace(true) {
            let h = self.clone();
            self.env()
                .spawn(Box::pin(async move { h.drain_cancels().await }));
        }
    }

    /// Sends the queued cancels, a batch (`sample_cancel_max_batch_size`) at a time.
    async fn drain_cancels(self: Rc<Self>) {
        loop {
            let max = self.dynamic().sample_cancel_max_batch_size.max(1);
            let batch: Vec<String> = {
                let mut q = self.life.cancel_queue.borrow_mut();
                let n = q.len().min(max);
                q.drain(..n).collect()
            };
            if batch.is_empty() {
                self.life.cancel_draining.set(false);
                return;
            }
            crate::sync::join_all(batch.iter().map(|id| self.cancel(id))).await;
        }
    }

    /// One `cancel_future`, under its retries; a failure is only logged.
    async fn cancel(&self, request_id: &str) {
        let req = Req::to(&endpoints::CANCEL_FUTURE).json(&json!({ "request_id": request_id }));
        if let Err(e) = self.send(req).await {
            let msg = format!("Failed to cancel sampling request {request_id}: {e}");
            self.opts().log(LogLevel::Error, &msg);
        }
    }

    // -----------------------------------------------------------------------------
    // Closing

    /// Finishes the session (first call wins; later calls do nothing), stops background
    /// work and flushes telemetry. Session-less holders only stop and flush.
    pub async fn close(&self, status: FinishStatus, detail: Option<&str>) -> Result<()> {
        if self.life.closed.replace(true) {
            return Ok(());
        }
        // Calls still in flight fail at their next request from here on, as Python's do.
        self.http().close_requests(self.life.closed_message.get());
        let mut result = Ok(());
        if let Some(id) = self.session_id() {
            let body = json!({ "reason": { "type": status.as_str() }, "detail": detail });
            let req = Req::at(&endpoints::FINISH_SESSION, &[id])
                .json(&body)
                .method_name(Some("ServiceClient.close"));
            result = self.send(req).await.map(|_| ());
        }
        self.life.stop.cancel();
        self.conn.close();
        self.telemetry.close().await;
        result
    }

    /// Stops background work without finishing the session (for clients that only
    /// borrowed a session).
    pub fn detach(&self) {
        self.life.closed.set(true);
        self.life.stop.cancel();
        self.conn.close();
    }
}

// ---------------------------------------------------------------------------------
// The holder's retry loop (Python `execute_with_retries`)

/// Where a retry loop keeps its 402 pause window: its own (while connecting) or the
/// holder's.
trait PauseState {
    fn should_pause(&mut self, status: u16, now: f64, max_pause: f64) -> bool;
}

/// No pause on a 402: the start-up requests fail at once.
struct NoPause;

impl PauseState for NoPause {
    fn should_pause(&mut self, _status: u16, _now: f64, _max_pause: f64) -> bool {
        false
    }
}

impl PauseState for BillingPause {
    fn should_pause(&mut self, status: u16, now: f64, max_pause: f64) -> bool {
        BillingPause::should_pause(self, status, now, max_pause)
    }
}

struct HolderBilling<'a>(&'a Holder);

impl PauseState for HolderBilling<'_> {
    fn should_pause(&mut self, status: u16, now: f64, max_pause: f64) -> bool {
        self.0
            .billing
            .borrow_mut()
            .should_pause(status, now, max_pause)
    }
}

/// What the holder's retry loop does after a failed attempt.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum RetryStep {
    /// HTTP 402 within the billing window: sleep 5 s and try again (uncounted).
    Pause,
    /// Sleep this long and try again.
    Retry(Duration),
    /// Give up with the error.
    Fail,
}

/// The holder's decision after attempt number `attempt` (from 0) failed, `start_secs`
/// being when the call started (Python `execute_with_retries`,
/// `internal_client_holder.py` 953-1005): a billing pause wins; a retryable error is
/// retried with `min(2ᵏ, 30)` s waits while the 300 s window lasts; anything else fails.
pub fn holder_step(
    billing_pause: bool,
    retryable: bool,
    attempt: u32,
    start_secs: f64,
    now_secs: f64,
) -> RetryStep {
    if billing_pause {
        return RetryStep::Pause;
    }
    match holder_retry_delay(attempt, start_secs, now_secs) {
        Some(wait) if retryable => RetryStep::Retry(wait),
        _ => RetryStep::Fail,
    }
}

/// One retry loop's fixed inputs.
struct RetryPolicy<'a> {
    env: &'a Env,
    /// The server's `billing_exception_max_pause_duration_sec`.
    max_pause: f64,
    /// Where failures are reported (none while connecting).
    telemetry: Option<&'a Telemetry>,
    /// The operation's name in telemetry.
    what: &'static str,
    retryable: &'a dyn Fn(&Error) -> bool,
}

/// The connection's retry loop (before a holder exists): `execute_with_retries` with no
/// telemetry and no pause on a 402 (a 402 at start-up fails at once).
async fn retry_loop<T, F, Fut>(env: &Env, f: F) -> Result<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T>>,
{
    let policy = RetryPolicy {
        env,
        max_pause: 0.0,
        telemetry: None,
        what: "",
        retryable: &Error::is_retryable,
    };
    policy.run(&mut NoPause, f).await
}

impl RetryPolicy<'_> {
    /// Runs `f` until it succeeds or [`holder_step`] says to give up.
    async fn run<T, F, Fut>(&self, billing: &mut dyn PauseState, mut f: F) -> Result<T>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T>>,
    {
        // Generic only in this thin wrapper; the loop itself is one type-erased copy.
        let slot = RefCell::new(None);
        let mut attempt = || -> futures_util::future::LocalBoxFuture<'_, Result<()>> {
            let fut = f();
            let slot = &slot;
            Box::pin(async move {
                *slot.borrow_mut() = Some(fut.await?);
                Ok(())
            })
        };
        self.run_erased(billing, &mut attempt).await?;
        Ok(slot
            .into_inner()
            .expect("the loop returns Ok only after an attempt succeeded"))
    }

    /// Boxed here, as [`Http::send`] is, so that one crate compiles the loop.
    fn run_erased<'a, 'b>(
        &'b self,
        billing: &'b mut dyn PauseState,
        f: &'b mut (dyn FnMut() -> futures_util::future::LocalBoxFuture<'a, Result<()>> + 'a),
    ) -> futures_util::future::LocalBoxFuture<'b, Result<()>>
    where
        'a: 'b,
    {
        Box::pin(self.run_erased_unboxed(billing, f))
    }

    async fn run_erased_unboxed<'a>(
        &self,
        billing: &mut dyn PauseState,
        f: &mut (dyn FnMut() -> futures_util::future::LocalBoxFuture<'a, Result<()>> + 'a),
    ) -> Result<()> {
        let now = || now_secs(&**self.env);
        let start = now();
        let mut attempt = 0u32;
        loop {
            let Err(e) = f().await else {
                return Ok(());
            };
            let pause = e
                .status()
                .is_some_and(|s| billing.should_pause(s, now(), self.max_pause));
            let retryable = !pause && (self.retryable)(&e);
            if !pause {
                self.report(&e, retryable, attempt, now() - start);
            }
            match holder_step(pause, retryable, attempt, start, now()) {
                RetryStep::Pause => self.env.sleep(BILLING_PAUSE_SLEEP).await,
                RetryStep::Retry(wait) => {
                    attempt += 1;
                    self.env.sleep(wait).await;
                }
                RetryStep::Fail => return Err(e),
            }
        }
    }

    /// Reports a failed attempt to telemetry (Python's
    /// `InternalClientHolder.execute_with_retries.exception` event).
    fn report(&self, e: &Error, retryable: bool, attempt: u32, elapsed: f64) {
        let Some(t) = self.telemetry else {
            return;
        };
        let severity = if retryable || e.is_user_error() {
            "WARNING"
        } else {
            "ERROR"
        };
        t.log(
            "InternalClientHolder.execute_with_retries.exception",
            json!({ "func": self.what, "exception": e.to_string(), "exception_type": error_type(e), "status_code": e.status(), "is_retryable": retryable, "is_user_error": e.is_user_error(), "attempt_count": attempt, "elapsed_time": elapsed }),
            severity,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Expected values from Python `internal_client_holder.py` 953-1005: a 402 inside
    /// the billing window sleeps 5 s and retries (lines 963-967); a retryable error
    /// sleeps `min(2 ** attempt_count, 30)`, cut to what is left of `MAX_WAIT_TIME`
    /// (300 s, lines 997-1003), while `elapsed_time < MAX_WAIT_TIME`; else it raises.
    #[test]
    fn the_holders_retry_decisions() {
        let secs = Duration::from_secs;
        let rows = [
            // (billing pause, retryable, attempt, start, now, step)
            (true, false, 0, 0.0, 0.0, RetryStep::Pause),
            (true, true, 9, 0.0, 1000.0, RetryStep::Pause),
            (false, true, 0, 0.0, 0.0, RetryStep::Retry(secs(1))),
            (false, true, 1, 0.0, 1.0, RetryStep::Retry(secs(2))),
            (false, true, 4, 0.0, 31.0, RetryStep::Retry(secs(16))),
            (false, true, 5, 0.0, 47.0, RetryStep::Retry(secs(30))),
            (false, true, 20, 0.0, 100.0, RetryStep::Retry(secs(30))),
            (false, true, 6, 0.0, 290.0, RetryStep::Retry(secs(10))),
            (false, true, 6, 0.0, 300.0, RetryStep::Fail),
            (false, false, 0, 0.0, 0.0, RetryStep::Fail),
        ];
        for (pause, retryable, attempt, start, now, want) in rows {
            assert_eq!(
                holder_step(pause, retryable, attempt, start, now),
                want,
                "{pause} {retryable} {attempt} {start} {now}"
            );
        }
    }
}
