//! The per-client state behind every operation (Python `InternalClientHolder`): server
//! flags, authentication, the session and its heartbeat, the holder-level retry loop
//! (`execute_with_retries`), dispatch budgets, telemetry, and shutdown.
//!
//! Startup order, as the Python SDK's: `client/config` (with the API key) → JWT
//! exchange if the server enables it (lazily, on the first authenticated request) →
//! `client/dynamic_config` → `create_session` (unless session-less or resumed) →
//! background heartbeat and config refresh (unless `background` is off).

use std::cell::Cell;

use std::cell::RefCell;
use std::collections::VecDeque;
use std::future::Future;
use std::rc::{Rc, Weak};
use std::time::Duration;

use crate::config::{
    ClientOptions, DynamicConfig, LogLevel, ServerConfig, SessionState, PROTOCOL_SDK_VERSION,
};
use crate::error::{Error, Result};
use crate::http::{check_api_key, decode, Credential, FromJson, Http, JwtProvider, Req};
use crate::json;
use crate::json::{Fields, Value};
use crate::platform::{now_secs, Env, Method};
use crate::retry::{holder_retry_delay, BillingPause, BILLING_PAUSE_SLEEP};
use crate::sync::{BytesSemaphore, CancelToken, Semaphore};
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

/// The HTTP layer over the API key, once the options and the key are checked.
fn key_http(env: &Env, opts: &Rc<ClientOptions>) -> Result<Http> {
    opts.validate()?;
    let key = opts.api_key.clone().unwrap_or_default();
    check_api_key(&key, now_secs(&**env))?;
    Ok(Http::new(env.clone(), opts.clone(), Credential::Key(key)))
}

/// The HTTP layer with the credential the server's flags ask for: the API key, or JWTs
/// exchanged for it.
fn authenticate(
    key_http: Http,
    config: &ServerConfig,
    background: bool,
) -> (Http, Option<Rc<JwtProvider>>) {
    if config.pjwt_auth_enabled {
        let j = JwtProvider::new(key_http.clone(), background);
        (
            key_http.with_credential(Credential::Jwt(j.clone())),
            Some(j),
        )
    } else {
        let credential = key_http.credential().clone();
        (key_http.with_credential(credential), None)
    }
}

/// Shared state of a connected client.
pub struct Holder {
    /// The platform.
    pub env: Env,
    /// Client options.
    pub opts: Rc<ClientOptions>,
    /// The authenticated HTTP layer.
    pub http: Http,
    /// Server flags.
    pub config: ServerConfig,
    dynamic: RefCell<DynamicConfig>,
    session_id: Option<String>,
    next_model_seq_id: Cell<u32>,
    next_sampling_seq_id: Cell<u32>,
    billing: RefCell<BillingPause>,
    /// At most 400 sampling submissions in flight.
    pub sample_dispatch: Semaphore,
    /// At most 10 more while backing off.
    pub sample_throttle: Semaphore,
    /// Sampling prompt-bytes budget.
    pub sample_bytes: BytesSemaphore,
    /// Forward/backward request-bytes budget.
    pub fwdbwd_bytes: BytesSemaphore,
    /// Budget for large result payloads (`complete_metadata`).
    pub inflight_bytes: BytesSemaphore,
    /// Sampling backoff deadline (seconds since epoch) after a 429.
    pub sample_backoff_until: Cell<Option<f64>>,
    closed: Cell<bool>,
    /// What calls after `close` are told.
    closed_message: Cell<&'static str>,
    stop: CancelToken,
    jwt: Option<Rc<JwtProvider>>,
    /// Telemetry.
    pub telemetry: Rc<Telemetry>,
    cancel_queue: RefCell<VecDeque<String>>,
    cancel_draining: Cell<bool>,
    /// The sampling retry handlers of this holder's clients, by sampler.
    pub(crate) sampling_retry: RefCell<Vec<(String, Weak<crate::sampling::RetryHandler>)>>,
}

impl Holder {
    /// Connects: fetches server flags, sets up authentication and, if `with_session`,
    /// creates (or resumes) a session and starts its background work.
    pub async fn connect(
        env: Env,
        opts: Rc<ClientOptions>,
        with_session: bool,
    ) -> Result<Rc<Holder>> {
        let key_http = key_http(&env, &opts)?;

        let mut startup_billing = BillingPause::default();
        let config: ServerConfig = retry_loop(
            &env,
            &mut startup_billing,
            3600.0,
            None,
            "client_config",
            || {
                key_http.json(Req::post_json(
                    "/api/v1/client/config",
                    &json!({ "sdk_version": PROTOCOL_SDK_VERSION }),
                ))
            },
        )
        .await?;

        let (http, jwt) = authenticate(key_http, &config, opts.background);

        let dynamic_req = || {
            http.json::<DynamicConfig>(
                Req::post_json(
                    "/api/v1/client/dynamic_config",
                    &json!({ "sdk_version": PROTOCOL_SDK_VERSION }),
                )
                .retries(0)
                .timeout(Duration::from_secs(10)),
            )
        };
        let dynamic = match retry_loop(
            &env,
            &mut startup_billing,
            config.billing_exception_max_pause_duration_sec,
            None,
            "dynamic_config",
            dynamic_req,
        )
        .await
        {
            Ok(d) => d,
            Err(e) if e.status() == Some(404) => DynamicConfig::default(),
            Err(e) => return Err(e),
        };

        let (session_id, next_model, next_sampling) = if !with_session {
            (None, 0, 0)
        } else if let Some(s) = &opts.session {
            (
                Some(s.session_id.clone()),
                s.next_model_seq_id,
                s.next_sampling_session_seq_id,
            )
        } else {
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
                .json(Req::post_json("/api/v1/create_session", &body))
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
            (Some(r.session_id), 0, 0)
        };
        let holder = Self::assemble(
            env,
            opts,
            http,
            jwt,
            config,
            dynamic,
            session_id,
            startup_billing,
        );
        holder.next_model_seq_id.set(next_model);
        holder.next_sampling_seq_id.set(next_sampling);
        Ok(holder)
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
        let key_http = key_http(&env, &opts)?;
        let (http, jwt) = authenticate(key_http, &config, opts.background);
        let holder = Self::assemble(
            env,
            opts,
            http,
            jwt,
            config,
            dynamic,
            Some(session_id),
            BillingPause::default(),
        );
        holder
            .closed_message
            .set("the SamplingClient is closed (its close() was called)");
        Ok(holder)
    }

    /// The holder over a ready HTTP layer, with its background work started.
    #[allow(clippy::too_many_arguments)]
    fn assemble(
        env: Env,
        opts: Rc<ClientOptions>,
        http: Http,
        jwt: Option<Rc<JwtProvider>>,
        config: ServerConfig,
        dynamic: DynamicConfig,
        session_id: Option<String>,
        billing: BillingPause,
    ) -> Rc<Holder> {
        let runtime = opts.user_agent.clone().unwrap_or_else(|| "browser".into());
        let telemetry = Telemetry::new(
            env.clone(),
            http.clone(),
            opts.telemetry,
            session_id.as_deref(),
            &runtime,
        );
        let holder = Rc::new(Holder {
            sample_bytes: BytesSemaphore::new(config.sample_dispatch_bytes_semaphore_size),
            fwdbwd_bytes: BytesSemaphore::new(config.fwdbwd_dispatch_bytes_semaphore_size),
            inflight_bytes: BytesSemaphore::new(config.inflight_response_bytes_semaphore_size),
            env,
            opts,
            http,
            config,
            dynamic: RefCell::new(dynamic),
            session_id,
            next_model_seq_id: Cell::new(0),
            next_sampling_seq_id: Cell::new(0),
            billing: RefCell::new(billing),
            sample_dispatch: Semaphore::new(400),
            sample_throttle: Semaphore::new(10),
            sample_backoff_until: Cell::new(None),
            closed: Cell::new(false),
            closed_message: Cell::new("the ServiceClient is closed"),
            stop: CancelToken::new(),
            jwt,
            telemetry,
            cancel_queue: RefCell::new(VecDeque::new()),
            cancel_draining: Cell::new(false),
            sampling_retry: RefCell::new(Vec::new()),
        });
        if holder.opts.background {
            if let Some(id) = holder.session_id.clone() {
                let h = holder.clone();
                holder
                    .env
                    .spawn(Box::pin(async move { h.heartbeat_loop(id).await }));
            }
            let h = holder.clone();
            holder
                .env
                .spawn(Box::pin(async move { h.dynamic_refresh_loop().await }));
            let (t, stop) = (holder.telemetry.clone(), holder.stop.clone());
            holder
                .env
                .spawn(Box::pin(async move { t.flush_loop(stop).await }));
        }
        holder
    }

    /// The session id (`None` for a session-less client).
    pub fn session_id(&self) -> Option<&str> {
        self.session_id.as_deref()
    }

    /// The session id, or an error for session-less clients.
    pub fn require_session(&self) -> Result<&str> {
        self.session_id.as_deref().ok_or_else(|| Error::Closed {
            message: "this client has no session (REST-only)".into(),
        })
    }

    /// Takes the next training-client number of the session.
    pub fn take_model_seq_id(&self) -> u32 {
        let n = self.next_model_seq_id.get();
        self.next_model_seq_id.set(n + 1);
        n
    }

    /// Takes the next sampling-session number of the session.
    pub fn take_sampling_seq_id(&self) -> u32 {
        let n = self.next_sampling_seq_id.get();
        self.next_sampling_seq_id.set(n + 1);
        n
    }

    /// What another process or request needs to resume this session.
    pub fn session_state(&self) -> Option<SessionState> {
        Some(SessionState {
            session_id: self.session_id.clone()?,
            next_model_seq_id: self.next_model_seq_id.get(),
            next_sampling_session_seq_id: self.next_sampling_seq_id.get(),
        })
    }

    /// The latest dynamic flags.
    pub fn dynamic(&self) -> DynamicConfig {
        self.dynamic.borrow().clone()
    }

    /// Fails once the client is closed.
    pub fn ensure_open(&self) -> Result<()> {
        if self.closed.get() {
            Err(Error::Closed {
                message: self.closed_message.get().into(),
            })
        } else {
            Ok(())
        }
    }

    /// Whether `close` has run.
    pub fn is_closed(&self) -> bool {
        self.closed.get()
    }

    /// Seconds since the epoch.
    pub fn now(&self) -> f64 {
        now_secs(&*self.env)
    }

    /// Whether a 402 should pause (sleep 5 s and retry) rather than fail.
    pub fn should_pause_on_billing(&self, status: u16) -> bool {
        self.billing.borrow_mut().should_pause(
            status,
            self.now(),
            self.config.billing_exception_max_pause_duration_sec,
        )
    }

    /// Python `execute_with_retries`: retries transient failures (timeouts, connection
    /// errors, 408/409/429/5xx) with `min(2ᵏ, 30)` s waits within 300 s, and pauses on
    /// HTTP 402 while the billing window lasts.
    pub async fn with_retries<T, F, Fut>(&self, what: &'static str, f: F) -> Result<T>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T>>,
    {
        let max_pause = self.config.billing_exception_max_pause_duration_sec;
        let mut billing = BillingProxy(self);
        retry_loop_with(
            &self.env,
            &mut billing,
            max_pause,
            Some(&self.telemetry),
            what,
            &Error::is_retryable,
            f,
        )
        .await
    }

    /// Like [`with_retries`](Self::with_retries) but a 409 fails at once: for REST calls
    /// whose conflicts are final ("already public", "already exists"), where retrying
    /// for five minutes, as the Python SDK does, only delays the error.
    pub async fn with_retries_no_conflict<T, F, Fut>(&self, what: &'static str, f: F) -> Result<T>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T>>,
    {
        let max_pause = self.config.billing_exception_max_pause_duration_sec;
        let mut billing = BillingProxy(self);
        let retryable = |e: &Error| e.is_retryable() && e.status() != Some(409);
        retry_loop_with(
            &self.env,
            &mut billing,
            max_pause,
            Some(&self.telemetry),
            what,
            &retryable,
            f,
        )
        .await
    }

    /// Heartbeats every 10 s until closed or the server answers 410 (session finished).
    async fn heartbeat_loop(self: Rc<Self>, session_id: String) {
        let mut last_ok = self.now();
        loop {
            if sleep_or_stop(&self.env, HEARTBEAT_PERIOD, &self.stop).await {
                return;
            }
            let body = json!({ "session_id": session_id, "type": "session_heartbeat" });
            match self
                .http
                .send(
                    Req::post_json("/api/v1/session_heartbeat", &body)
                        .retries(0)
                        .timeout(Duration::from_secs(10)),
                )
                .await
            {
                Ok(_) => last_ok = self.now(),
                Err(e) if e.status() == Some(410) => {
                    self.opts.log(
                        LogLevel::Info,
                        &format!("Session {session_id} has finished; stopping its heartbeat."),
                    );
                    return;
                }
                Err(e) => {
                    let missed = self.now() - last_ok;
                    if missed > HEARTBEAT_WARN_AFTER_SECS {
                        self.opts.log(LogLevel::Warn, &format!("Session heartbeat failed for {} s for session {session_id}: {e}. If this persists, the session will be terminated.", missed.round() as i64));
                    }
                }
            }
        }
    }

    /// Sends one heartbeat now (for callers that drive it themselves, e.g. in Workers).
    pub async fn heartbeat_once(&self) -> Result<()> {
        let id = self.require_session()?.to_string();
        self.http
            .send(
                Req::post_json(
                    "/api/v1/session_heartbeat",
                    &json!({ "session_id": id, "type": "session_heartbeat" }),
                )
                .retries(0)
                .timeout(Duration::from_secs(10)),
            )
            .await
            .map(|_| ())
    }

    async fn dynamic_refresh_loop(self: Rc<Self>) {
        loop {
            let every =
                Duration::from_secs_f64(self.dynamic.borrow().refresh_interval_sec.max(10.0));
            if sleep_or_stop(&self.env, every, &self.stop).await {
                return;
            }
            let req = Req::post_json(
                "/api/v1/client/dynamic_config",
                &json!({ "sdk_version": PROTOCOL_SDK_VERSION }),
            )
            .retries(0)
            .timeout(Duration::from_secs(10));
            if let Ok(d) = self.http.json::<DynamicConfig>(req).await {
                *self.dynamic.borrow_mut() = d; // on failure the last good values stay
            }
        }
    }

    /// Queues a server-side cancel of an abandoned sampling request (only when the
    /// dynamic config enables it); a drain task sends them in batches.
    pub fn enqueue_cancel(self: &Rc<Self>, request_id: &str) {
        if !self.dynamic.borrow().sample_cancel_enabled || self.closed.get() {
            return;
        }
        self.cancel_queue
            .borrow_mut()
            .push_back(request_id.to_string());
        if !self.cancel_draining.replace(true) {
            let h = self.clone();
            self.env
                .spawn(Box::pin(async move { h.drain_cancels().await }));
        }
    }

    async fn drain_cancels(self: Rc<Self>) {
        loop {
            let max = self.dynamic.borrow().sample_cancel_max_batch_size.max(1);
            let batch: Vec<String> = {
                let mut q = self.cancel_queue.borrow_mut();
                let n = q.len().min(max);
                q.drain(..n).collect()
            };
            if batch.is_empty() {
                self.cancel_draining.set(false);
                return;
            }
            let sends = batch.iter().map(|id| {
                let h = self.clone();
                async move {
                    let r = h
                        .with_retries("cancel_future", || {
                            h.http.send(
                                Req::post_json(
                                    "/api/v1/cancel_future",
                                    &json!({ "request_id": id }),
                                )
                                .retries(0)
                                .timeout(Duration::from_secs(30)),
                            )
                        })
                        .await;
                    if let Err(e) = r {
                        h.opts.log(
                            LogLevel::Error,
                            &format!("Failed to cancel sampling request {id}: {e}"),
                        );
                    }
                }
            });
            crate::sync::join_all(sends).await;
        }
    }

    /// Finishes the session (first call wins; later calls do nothing), stops background
    /// work and flushes telemetry. Session-less holders only stop and flush.
    pub async fn close(&self, status: FinishStatus, detail: Option<&str>) -> Result<()> {
        if self.closed.replace(true) {
            return Ok(());
        }
        let mut result = Ok(());
        if let Some(id) = &self.session_id {
            let body = json!({ "reason": { "type": status.as_str() }, "detail": detail });
            let path = format!("/api/v1/sessions/{id}/finish");
            result = self
                .with_retries("finish_session", || {
                    self.http.send(
                        Req::post_json(path.clone(), &body)
                            .method_name(Some("ServiceClient.close")),
                    )
                })
                .await
                .map(|_| ());
        }
        self.stop.cancel();
        if let Some(j) = &self.jwt {
            j.close();
        }
        self.telemetry.close().await;
        result
    }

    /// Stops background work without finishing the session (for clients that only
    /// borrowed a session).
    pub fn detach(&self) {
        self.closed.set(true);
        self.stop.cancel();
        if let Some(j) = &self.jwt {
            j.close();
        }
    }

    /// A GET under the holder's retries, read as a `T`.
    pub async fn get_json<T: FromJson>(
        &self,
        what: &'static str,
        path: String,
        query: Vec<(String, String)>,
        sdk_method: Option<&'static str>,
    ) -> Result<T> {
        let v = self
            .request_json(what, path.clone(), query, None, sdk_method)
            .await?;
        decode(&v, &path)
    }

    /// A GET (or, with a body, a JSON POST) under the holder's retries.
    pub async fn request_json(
        &self,
        what: &'static str,
        path: String,
        query: Vec<(String, String)>,
        body: Option<&Value>,
        sdk_method: Option<&'static str>,
    ) -> Result<Value> {
        self.with_retries(what, || {
            let mut r = match body {
                Some(b) => Req::post_json(path.clone(), b),
                None => Req::new(Method::Get, path.clone()),
            }
            .method_name(sdk_method);
            r.query = query.clone();
            self.http.json_value(r)
        })
        .await
    }
}

trait PauseState {
    fn should_pause(&mut self, status: u16, now: f64, max_pause: f64) -> bool;
}

impl PauseState for BillingPause {
    fn should_pause(&mut self, status: u16, now: f64, max_pause: f64) -> bool {
        BillingPause::should_pause(self, status, now, max_pause)
    }
}

struct BillingProxy<'a>(&'a Holder);

impl PauseState for BillingProxy<'_> {
    fn should_pause(&mut self, status: u16, now: f64, max_pause: f64) -> bool {
        self.0
            .billing
            .borrow_mut()
            .should_pause(status, now, max_pause)
    }
}

async fn retry_loop<T, F, Fut>(
    env: &Env,
    billing: &mut BillingPause,
    max_pause: f64,
    telemetry: Option<&Telemetry>,
    what: &'static str,
    f: F,
) -> Result<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T>>,
{
    retry_loop_with(
        env,
        billing,
        max_pause,
        telemetry,
        what,
        &Error::is_retryable,
        f,
    )
    .await
}

async fn retry_loop_with<T, F, Fut, P: PauseState>(
    env: &Env,
    billing: &mut P,
    max_pause: f64,
    telemetry: Option<&Telemetry>,
    what: &'static str,
    is_retryable: &dyn Fn(&Error) -> bool,
    mut f: F,
) -> Result<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T>>,
{
    // Generic only in this thin wrapper; the loop itself is one type-erased copy.
    let slot = std::cell::RefCell::new(None);
    let mut attempt = || -> futures_util::future::LocalBoxFuture<'_, Result<()>> {
        let fut = f();
        let slot = &slot;
        Box::pin(async move {
            *slot.borrow_mut() = Some(fut.await?);
            Ok(())
        })
    };
    retry_loop_erased(
        env,
        billing,
        max_pause,
        telemetry,
        what,
        is_retryable,
        &mut attempt,
    )
    .await?;
    Ok(slot
        .into_inner()
        .expect("the loop returns Ok only after an attempt succeeded"))
}

#[allow(clippy::too_many_arguments)]
async fn retry_loop_erased<'a>(
    env: &Env,
    billing: &mut dyn PauseState,
    max_pause: f64,
    telemetry: Option<&Telemetry>,
    what: &'static str,
    is_retryable: &dyn Fn(&Error) -> bool,
    f: &mut (dyn FnMut() -> futures_util::future::LocalBoxFuture<'a, Result<()>> + 'a),
) -> Result<()> {
    let start = now_secs(&**env);
    let mut attempt = 0u32;
    loop {
        match f().await {
            Ok(v) => return Ok(v),
            Err(e) => {
                if let Some(status) = e.status() {
                    if billing.should_pause(status, now_secs(&**env), max_pause) {
                        env.sleep(BILLING_PAUSE_SLEEP).await;
                        continue;
                    }
                }
                let retryable = is_retryable(&e);
                if let Some(t) = telemetry {
                    let severity = if retryable || e.is_user_error() {
                        "WARNING"
                    } else {
                        "ERROR"
                    };
                    t.log(
                        "InternalClientHolder.execute_with_retries.exception",
                        json!({ "func": what, "exception": e.to_string(), "exception_type": error_type(&e), "status_code": e.status(), "is_retryable": retryable, "is_user_error": e.is_user_error(), "attempt_count": attempt, "elapsed_time": now_secs(&**env) - start }),
                        severity,
                    );
                }
                if retryable {
                    if let Some(wait) = holder_retry_delay(attempt, start, now_secs(&**env)) {
                        attempt += 1;
                        env.sleep(wait).await;
                        continue;
                    }
                }
                return Err(e);
            }
        }
    }
}
