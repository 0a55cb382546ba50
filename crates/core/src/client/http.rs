//! The HTTP layer: one request with the Python SDK's (Stainless) retry rules, its
//! idempotency key, headers, and authentication (an API key, or a short-lived JWT the
//! server issues in exchange for it).
//!
//! Retries: connection errors, timeouts, and responses the server marks retryable
//! (`x-should-retry: true`, or 408/409/429/5xx unless `x-should-retry: false`), up to
//! `max_retries` times, waiting what `retry-after-ms`/`retry-after` ask (when in
//! (0, 60] s) or `min(0.5·2ⁿ, 10)` s less up to 25 % jitter ([`next_attempt`] decides,
//! [`Http::send`] sequences). Non-GET requests carry one `X-Idempotency-Key` across all
//! retries.
//!
//! Requests are built from their row of [`crate::endpoints`] ([`Req::to`], [`Req::at`]).
//! [`Connection`] is the holder's part of this layer: the HTTP layer with the credential
//! the server asks for, and the server's flags.

use std::cell::Cell;

use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

use futures_util::future::LocalBoxFuture;

use crate::call::Guard;
use crate::config::{DynamicConfig, ServerConfig, PROTOCOL_SDK_VERSION};
use crate::endpoints::{self, Endpoint, HttpRetries, Pool, Retries};
use crate::error::{Error, Result};
use crate::json;
use crate::json::{FromJson, Map, Value};
use crate::options::{
    ClientOptions, LogLevel, PlatformInfo, DEFAULT_CONNECT_TIMEOUT, DEFAULT_TIMEOUT,
};
use crate::platform::{
    now_secs, uuid4, Env, Headers, HttpRequest, HttpResponse, Method, TransportError,
};
use crate::retry::{
    connection_budget, http_retry_delay, is_cdn_rejection, should_retry_response, PoolOutcome,
    MAX_CONNECTION_ERROR_RETRIES,
};
use crate::sync::{CancelToken, Semaphore};
use crate::text;
use crate::types::InputError;

/// One logical API call (retried as a unit by the HTTP layer). Built from its row of
/// [`crate::endpoints`] with [`Req::to`] or [`Req::at`].
#[derive(Debug, Clone)]
pub struct Req {
    /// The endpoint this request goes to (`None`: a bare request, e.g. in tests).
    pub endpoint: Option<&'static Endpoint>,
    /// Method.
    pub method: Method,
    /// Endpoint path (`/api/v1/...`) or an absolute URL.
    pub path: String,
    /// Query parameters.
    pub query: Vec<(String, String)>,
    /// Body bytes (shared with every attempt that sends them).
    pub body: Option<Rc<Vec<u8>>>,
    /// `Content-Type` of the body.
    pub content_type: Option<&'static str>,
    /// Extra headers.
    pub headers: Vec<(String, String)>,
    /// Override of the client's retry count.
    pub max_retries: Option<u32>,
    /// Override of the client's timeout.
    pub timeout: Option<Duration>,
    /// A fixed idempotency key (else one per call for non-GET).
    pub idempotency_key: Option<String>,
    /// The public SDK method this call belongs to (`x-sdk-method`).
    pub sdk_method: Option<&'static str>,
    /// A 409 is a final answer (not retried), for calls whose conflicts cannot resolve.
    pub final_conflicts: bool,
}

impl Req {
    /// A bare request without a body (no endpoint row: tests and absolute URLs).
    pub fn new(method: Method, path: impl Into<String>) -> Self {
        Req {
            endpoint: None,
            method,
            path: path.into(),
            query: vec![],
            body: None,
            content_type: None,
            headers: vec![],
            max_retries: None,
            timeout: None,
            idempotency_key: None,
            sdk_method: None,
            final_conflicts: false,
        }
    }
    /// A bare POST with a JSON body.
    pub fn post_json(path: impl Into<String>, body: &Value) -> Self {
        Req::new(Method::Post, path).json(body)
    }
    /// A request to `ep`, whose path has no parameters.
    pub fn to(ep: &'static Endpoint) -> Self {
        Req::at(ep, &[])
    }
    /// A request to `ep` with its path parameters, as its row says: method, HTTP-layer
    /// retries, timeout, whether a 409 is final.
    pub fn at(ep: &'static Endpoint, args: &[&str]) -> Self {
        Req::at_path(ep, ep.fill(args))
    }
    /// A request to `ep` at `path`, its path already filled in ([`Endpoint::fill`]).
    pub fn at_path(ep: &'static Endpoint, path: String) -> Self {
        let mut r = Req::new(ep.method, path);
        r.endpoint = Some(ep);
        r.timeout = ep.timeout;
        if ep.http_retries == HttpRetries::Never {
            r.max_retries = Some(0);
        }
        r.final_conflicts = ep.retries == Retries::ConflictFinal;
        r
    }
    /// Sets a JSON body already serialized (shared, e.g. by every attempt of a call).
    pub fn json_bytes(mut self, body: Rc<Vec<u8>>) -> Self {
        self.body = Some(body);
        self.content_type = Some("application/json");
        self
    }
    /// Sets a JSON body.
    pub fn json(mut self, body: &Value) -> Self {
        self.body = Some(Rc::new(body.to_vec()));
        self.content_type = Some("application/json");
        self
    }
    /// Sets a protobuf body, zstd-compressed when `zstd` (`Content-Encoding: zstd`).
    pub fn protobuf(mut self, body: Rc<Vec<u8>>, zstd: bool) -> Self {
        self.body = Some(body);
        self.content_type = Some("application/x-protobuf");
        if zstd {
            self = self.header("Content-Encoding", "zstd");
        }
        self
    }
    /// Adds a query parameter.
    pub fn query(mut self, k: &str, v: impl ToString) -> Self {
        self.query.push((k.to_string(), v.to_string()));
        self
    }
    /// Adds a header.
    pub fn header(mut self, k: &str, v: impl Into<String>) -> Self {
        self.headers.push((k.to_string(), v.into()));
        self
    }
    /// Overrides the retry count.
    pub fn retries(mut self, n: u32) -> Self {
        self.max_retries = Some(n);
        self
    }
    /// Overrides the timeout.
    pub fn timeout(mut self, d: Duration) -> Self {
        self.timeout = Some(d);
        self
    }
    /// Tags the call with its public SDK method.
    pub fn method_name(mut self, m: Option<&'static str>) -> Self {
        self.sdk_method = m;
        self
    }
    /// Applies a call's request options: its retry count in place of the client's
    /// (an endpoint that is never retried stays so) and its extra headers.
    pub fn under(mut self, call: &Guard) -> Self {
        if self.max_retries.is_none() {
            self.max_retries = call.max_retries();
        }
        self.headers.extend(call.headers().iter().cloned());
        self
    }
}

/// Percent-encodes a query component.
fn enc(s: &str) -> String {
    crate::paths::quote(s)
}

/// How requests are authenticated.
#[derive(Clone)]
pub enum Credential {
    /// A static API key (or a caller-supplied JWT).
    Key(String),
    /// `TINKER_CREDENTIAL_CMD`, run for every request (`None`: the server asks for one and
    /// none is set). Feature `environment`.
    #[cfg(feature = "environment")]
    Command(Option<String>),
    /// A server-issued JWT obtained by exchanging the API key.
    Jwt(Rc<JwtProvider>),
}

#[cfg(feature = "environment")]
/// What the command credential says when the server asks for one and none is set
/// (Python `CredentialCmdAuthProvider`).
const NO_COMMAND: &str = "Your organization requires dynamic credentials: set TINKER_CREDENTIAL_CMD to a command that prints a valid credential";

/// Runs the credential command (Python `CredentialCmdAuthProvider.get_token`).
#[cfg(feature = "environment")]
async fn command_credential(env: &Env, command: Option<&str>) -> Result<String> {
    let out = match command {
        Some(c) => env.run_command(c).await,
        None => Err(TransportError::Connection(NO_COMMAND.into())),
    };
    command_output(out, now_secs(&**env))
        .map_err(|m| Error::Input(InputError::type_error("TINKER_CREDENTIAL_CMD", m)))
}

#[cfg(feature = "environment")]
/// The credential a command's run gives at `now_secs`: its trimmed output, which must not
/// be empty and, if a JWT, not expired; else what was wrong.
fn command_output(
    out: std::result::Result<HttpResponse, TransportError>,
    now_secs: f64,
) -> std::result::Result<String, String> {
    let body = match out {
        Ok(r) => r.body,
        Err(TransportError::Connection(m)) => return Err(m),
        Err(TransportError::Timeout) => return Err("timed out".into()),
    };
    let credential = std::str::from_utf8(&body).unwrap_or_default().trim();
    if credential.is_empty() {
        return Err("returned an empty credential".into());
    }
    if key_expired(credential, now_secs) {
        return Err("printed an expired JWT".into());
    }
    Ok(credential.to_string())
}

impl Credential {
    /// The token to send at `now_secs`. A JWT given as the key is checked on every
    /// request, as Python's `ApiKeyAuthProvider.get_token` does
    /// (`lib/_auth_token_provider.py:93-100`): a fixed key cannot be refreshed, so an
    /// expired one fails here instead of being sent.
    async fn token(&self, env: &Env) -> Result<String> {
        match self {
            Credential::Key(k) if key_expired(k, now_secs(&**env)) => Err(Error::Input(
                InputError::type_error("apiKey", "the api_key JWT has expired: pass a fresh one"),
            )),
            Credential::Key(k) => Ok(k.clone()),
            // Boxed: rarely used, kept out of every request's state machine.
            #[cfg(feature = "environment")]
            Credential::Command(c) => {
                let fut: futures_util::future::LocalBoxFuture<'_, Result<String>> =
                    Box::pin(command_credential(env, c.as_deref()));
                fut.await
            }
            // Boxed: the exchange itself goes through `Http::send` (with a key credential).
            Credential::Jwt(j) => {
                let fut: futures_util::future::LocalBoxFuture<'_, Result<String>> =
                    Box::pin(j.get_token());
                fut.await
            }
        }
    }
}

/// Sends API calls.
#[derive(Clone)]
pub struct Http {
    /// The platform.
    pub env: Env,
    /// Client options (base URL, retries, timeout, headers, logger).
    pub opts: Rc<ClientOptions>,
    credential: Credential,
    /// Each connection pool's budget of empty 400s to treat as connection errors
    /// (shared by every layer of one holder, as Python's pools are).
    budgets: Rc<[Cell<i32>; Pool::COUNT]>,
    /// Each pool's requests in flight (the budget's credit: [`connection_budget`]).
    in_flight: Rc<[Cell<u32>; Pool::COUNT]>,
    /// Set when the holder closes (its message): from then on every request but the
    /// close's own and telemetry's fails at once, as Python's `aclient()` raises
    /// "Internal client holder is closed" for calls still in flight.
    closed: Rc<Cell<Option<&'static str>>>,
    /// The server's `use_pyqwest_transport` (shared by every layer of one holder; on
    /// until `client/config` says otherwise, as Python's default).
    pyqwest: Rc<Cell<bool>>,
}

fn is_invalid_token(r: &HttpResponse) -> bool {
    r.status == 401
        && r.headers
            .get("www-authenticate")
            .is_some_and(|v| text::contains(v, "error=\"invalid_token\""))
}

impl Http {
    /// An HTTP layer authenticating with `credential`.
    pub fn new(env: Env, opts: Rc<ClientOptions>, credential: Credential) -> Self {
        Http {
            env,
            opts,
            credential,
            budgets: Rc::new(std::array::from_fn(|_| {
                Cell::new(MAX_CONNECTION_ERROR_RETRIES as i32)
            })),
            in_flight: Rc::new(std::array::from_fn(|_| Cell::new(0))),
            closed: Rc::new(Cell::new(None)),
            pyqwest: Rc::new(Cell::new(true)),
        }
    }

    /// Follows the server's `use_pyqwest_transport` for this layer and its clones: one
    /// deadline per request when on, httpx's per-phase timeouts when off.
    pub fn set_pyqwest(&self, on: bool) {
        self.pyqwest.set(on);
    }

    /// Closes the layer (and every clone of it) for the holder's requests: `message` is
    /// the error of the calls still in flight.
    pub fn close_requests(&self, message: &'static str) {
        self.closed.set(Some(message));
    }

    /// Fails `req` once the layer is closed, unless it is the close's own request,
    /// telemetry's (Python's telemetry pool stays open) or the token exchange they need.
    fn ensure_open(&self, req: &Req) -> Result<()> {
        let exempt = req.endpoint.is_some_and(|e| {
            [
                &endpoints::FINISH_SESSION,
                &endpoints::TELEMETRY,
                &endpoints::AUTH_TOKEN,
            ]
            .iter()
            .any(|x| std::ptr::eq(e, *x))
        });
        match self.closed.get() {
            Some(message) if !exempt => Err(Error::Closed {
                message: message.into(),
            }),
            _ => Ok(()),
        }
    }

    /// The same layer with another credential.
    pub fn with_credential(&self, credential: Credential) -> Self {
        Http {
            env: self.env.clone(),
            opts: self.opts.clone(),
            credential,
            budgets: self.budgets.clone(),
            in_flight: self.in_flight.clone(),
            closed: self.closed.clone(),
            pyqwest: self.pyqwest.clone(),
        }
    }

    /// `e` with every credential this layer knows (the API key, the current JWT, the
    /// token a request was sent with) replaced by `<redacted>`: a server, proxy or
    /// transport may echo them into a body, a header or a message.
    pub fn redact(&self, e: Error, sent: Option<&str>) -> Error {
        let jwt = match &self.credential {
            Credential::Jwt(j) => Some(j.token.borrow().clone()),
            _ => None,
        };
        let key = self.opts.api_key.as_deref();
        let secrets: Vec<&str> = [key, jwt.as_deref(), sent].into_iter().flatten().collect();
        e.redact(&secrets)
    }

    /// The credential in use.
    pub fn credential(&self) -> &Credential {
        &self.credential
    }

    fn url(&self, req: &Req) -> String {
        let mut url = join_url(&self.opts.base_url, &req.path);
        for (i, (k, v)) in req.query.iter().enumerate() {
            url.push(if i == 0 && !url.as_bytes().contains(&b'?') {
                '?'
            } else {
                '&'
            });
            url.push_str(&enc(k));
            url.push('=');
            url.push_str(&enc(v));
        }
        url
    }

    fn build(&self, req: &Req, retries_taken: u32, idem: Option<&str>, token: &str) -> HttpRequest {
        let mut h = Headers::default();
        h.set("Accept", "application/json");
        // Like the Python SDK: every non-GET request says JSON, even one without a body.
        match (req.content_type, req.method) {
            (Some(ct), _) => h.set("Content-Type", ct),
            (None, Method::Get) => {}
            (None, _) => h.set("Content-Type", "application/json"),
        }
        if let Some(ua) = &self.opts.user_agent {
            h.set("User-Agent", ua.clone());
        }
        let (connect, read) = phase_timeouts(req.timeout, self.opts.timeout);
        let pyqwest = self.pyqwest.get() && !req.endpoint.is_some_and(Endpoint::httpx_transport);
        let timeouts = transport_timeouts(connect, read, pyqwest);
        if let Some(p) = &self.opts.platform {
            platform_headers(&mut h, p, req);
            let float = match req.timeout {
                Some(_) => req.endpoint.is_some_and(Endpoint::python_float_timeout),
                None => self.opts.timeout != DEFAULT_TIMEOUT,
            };
            h.set("x-stainless-read-timeout", py_seconds(read, float));
        }
        if let Some(k) = idem {
            h.set("X-Idempotency-Key", k);
        }
        h.set("x-stainless-retry-count", retries_taken.to_string());
        // Like the Python SDK: the version and the method travel together, on requests a
        // public method sends (not on set-up or background polls).
        if let Some(m) = req.sdk_method {
            h.set("x-sdk-version", PROTOCOL_SDK_VERSION);
            h.set("x-sdk-method", m);
        }
        for (k, v) in &self.opts.default_headers {
            h.set(k, v.clone());
        }
        for (k, v) in &req.headers {
            h.set(k, v.clone());
        }
        h.set("X-API-Key", token);
        HttpRequest {
            method: req.method,
            url: self.url(req),
            headers: h,
            body: req.body.clone(),
            timeout: timeouts.idle,
            connect_timeout: Some(timeouts.connect),
            deadline: timeouts.deadline,
        }
    }

    /// The idempotency key of a non-GET call, shared by all its HTTP-layer retries.
    fn idempotency_key(&self, req: &Req) -> Option<String> {
        (req.method != Method::Get).then(|| {
            req.idempotency_key
                .clone()
                .unwrap_or_else(|| format!("tinker-wasm-retry-{}", uuid4(&*self.env)))
        })
    }

    /// Sends `req`, retrying per the HTTP layer's rules. Returns a 2xx response or the
    /// error that ended the attempts.
    ///
    /// Boxed here so that this crate alone compiles the request loop: an `async fn`'s
    /// state machine is compiled in every crate that polls it, and both this crate's
    /// background tasks and the wasm skin's calls reach it (a second copy in the module).
    pub fn send(&self, req: Req) -> LocalBoxFuture<'_, Result<HttpResponse>> {
        Box::pin(self.send_unboxed(req))
    }

    async fn send_unboxed(&self, req: Req) -> Result<HttpResponse> {
        struct InFlight<'a>(&'a Cell<u32>);
        impl Drop for InFlight<'_> {
            fn drop(&mut self) {
                self.0.set(self.0.get() - 1);
            }
        }
        let pool = req.endpoint.map_or(Pool::Train, Endpoint::pool);
        let flying = &self.in_flight[pool.index()];
        flying.set(flying.get() + 1);
        let _flight = InFlight(flying);
        let max_retries = req.max_retries.unwrap_or(self.opts.max_retries);
        let idem = self.idempotency_key(&req);
        let mut retries_taken = 0u32;
        loop {
            self.ensure_open(&req)?;
            let (token, result) = self.attempt(&req, retries_taken, idem.as_deref()).await?;
            let next = next_attempt(&result, retries_taken, max_retries, req.final_conflicts);
            // As Python: the final response's note only, not those of responses retried.
            if let (Ok(r), true) = (&result, next != Attempt::Retry) {
                self.log_deprecation(r, &token);
            }
            match (next, result) {
                (Attempt::Done, Ok(r)) => {
                    self.spend_budget(&req, PoolOutcome::Success);
                    return Ok(r);
                }
                (Attempt::Retry, result) => {
                    let headers = result.as_ref().ok().map(|r| &r.headers);
                    let now = now_secs(&*self.env);
                    let delay = http_retry_delay(retries_taken, headers, now, self.env.random());
                    self.env.sleep(delay).await;
                    retries_taken += 1;
                }
                (_, result) => {
                    let outcome = match &result {
                        Ok(r) if is_cdn_rejection(r.status, &r.headers, &r.body) => {
                            PoolOutcome::CdnRejection
                        }
                        _ => PoolOutcome::OtherError,
                    };
                    if self.spend_budget(&req, outcome) {
                        return Err(Error::Connection {
                            message: format!(
                                "{} {}: connection error (an empty 400: the connection was rejected before the API)",
                                req.method.as_str(),
                                req.path
                            ),
                        });
                    }
                    return Err(self.failure(&req, result, &token));
                }
            }
        }
    }

    /// Applies one call's outcome to its pool's budget; answers whether an empty 400
    /// becomes a connection error (Python `ClientConnectionPool.aclient`,
    /// `lib/internal_client_holder.py:88-101`).
    fn spend_budget(&self, req: &Req, outcome: PoolOutcome) -> bool {
        let pool = req.endpoint.map_or(Pool::Train, Endpoint::pool).index();
        let (cell, others) = (&self.budgets[pool], self.in_flight[pool].get() - 1);
        let (left, converted) = connection_budget(cell.get(), others, outcome);
        cell.set(left);
        converted
    }

    /// One send of `req` with a current token. When the server rejects that JWT itself
    /// (`invalid_token`), it is replaced and the request replayed once. Answers the token
    /// first sent (the one to redact) and the outcome.
    async fn attempt(
        &self,
        req: &Req,
        retries_taken: u32,
        idem: Option<&str>,
    ) -> Result<(String, std::result::Result<HttpResponse, TransportError>)> {
        let token = self.credential.token(&self.env).await?;
        let result = self
            .env
            .send(self.build(req, retries_taken, idem, &token))
            .await;
        if let (Ok(r), Credential::Jwt(jwt)) = (&result, &self.credential) {
            if is_invalid_token(r) {
                // Boxed: the exchange itself goes through `Http::send`.
                let replace: futures_util::future::LocalBoxFuture<'_, Result<String>> =
                    Box::pin(jwt.replace(&token));
                let fresh = replace.await?;
                let replayed = self
                    .env
                    .send(self.build(req, retries_taken, idem, &fresh))
                    .await;
                return Ok((token, replayed));
            }
        }
        Ok((token, result))
    }

    /// Logs a response's `x-deprecation-note` (as an error when its level says so).
    fn log_deprecation(&self, r: &HttpResponse, token: &str) {
        let Some(note) = r.headers.get("x-deprecation-note") else {
            return;
        };
        let level = if r
            .headers
            .get("x-deprecation-level")
            .is_some_and(|l| l.trim().eq_ignore_ascii_case("error"))
        {
            LogLevel::Error
        } else {
            LogLevel::Warn
        };
        let key = self.opts.api_key.as_deref().unwrap_or_default();
        let note = crate::error::redact_str(note, &[token, key]);
        self.opts.log(level, &format!("Deprecation notice: {note}"));
    }

    /// The error that ends a call: no response, or an error status (credentials
    /// redacted).
    fn failure(
        &self,
        req: &Req,
        result: std::result::Result<HttpResponse, TransportError>,
        token: &str,
    ) -> Error {
        let e = match result {
            Ok(r) => Error::from_response(r.status, &r.headers, &r.body),
            Err(TransportError::Timeout) => Error::Timeout {
                message: format!("{} {} timed out", req.method.as_str(), req.path),
            },
            Err(TransportError::Connection(m)) => Error::Connection {
                message: format!("{} {}: {m}", req.method.as_str(), req.path),
            },
        };
        self.redact(e, Some(token))
    }

    /// Sends `req` and parses a JSON response body (boxed, as [`Http::send`] is).
    pub fn json_value(&self, req: Req) -> LocalBoxFuture<'_, Result<Value>> {
        Box::pin(self.json_value_unboxed(req))
    }

    async fn json_value_unboxed(&self, req: Req) -> Result<Value> {
        let path = req.path.clone();
        let r = self.send(req).await?;
        parse_json(&r.body, &path).map_err(|e| self.redact(e, None))
    }

    /// Sends `req` and reads the JSON response as a `T`. (The request itself is one
    /// non-generic future; only the final conversion is per type.)
    pub async fn json<T: FromJson>(&self, req: Req) -> Result<T> {
        let path = req.path.clone();
        let v = self.json_value(req).await?;
        decode(&v, &path).map_err(|e| self.redact(e, None))
    }
}

/// The connect and read/write timeouts of a request (httpx's phases): an endpoint's own
/// timeout (Python passes a number: every phase) or else the client's; the default is
/// Python's `Timeout(60, connect=5.0)` (`_constants.py:7`), a client-set one applies to
/// every phase (Python `ServiceClient(timeout=…)`). `None` for the request's own means
/// the client's.
pub fn phase_timeouts(own: Option<Duration>, client: Duration) -> (Duration, Duration) {
    match own {
        Some(t) => (t, t),
        None if client == DEFAULT_TIMEOUT => (DEFAULT_CONNECT_TIMEOUT, client),
        None => (client, client),
    }
}

/// pyqwest's connect timeout (`pyqwest.HTTPTransport(connect_timeout=30.0)`, the default
/// the Python SDK keeps, `_base_client.py:761-778`).
pub const PYQWEST_CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// How a request's transport limits it (see [`transport_timeouts`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TransportTimeouts {
    /// The connect phase's limit.
    pub connect: Duration,
    /// The limit on a stretch without progress once connected (httpx's transport).
    pub idle: Option<Duration>,
    /// The limit on the whole exchange, body included (pyqwest).
    pub deadline: Option<Duration>,
}

/// The limits a request's httpx timeouts become on the transport Python 0.38 sends it
/// through: with `pyqwest` (the server's `use_pyqwest_transport`, on by default) one
/// deadline, the sum of the `read` and `write` timeouts (`pyqwest/httpx/_transport.py`
/// `convert_timeout`), and pyqwest's own 30 s to connect; without it, httpx's phases as
/// they are.
pub fn transport_timeouts(connect: Duration, read: Duration, pyqwest: bool) -> TransportTimeouts {
    if pyqwest {
        TransportTimeouts {
            connect: PYQWEST_CONNECT_TIMEOUT,
            idle: None,
            deadline: Some(read.saturating_mul(2)),
        }
    } else {
        TransportTimeouts {
            connect,
            idle: Some(read),
            deadline: None,
        }
    }
}

/// Seconds as Python's `str()` prints the number the SDK passed: an int (`60`, `45`)
/// or a float (`5.0`, `0.5`), as `x-stainless-read-timeout` carries it
/// (`_base_client.py:400-405`).
pub fn py_seconds(d: Duration, float: bool) -> String {
    let secs = d.as_secs_f64();
    if !float && secs.fract() == 0.0 {
        (secs as u64).to_string()
    } else {
        // Python's repr of the float (`5.0`, `0.5`), without core's float formatting.
        crate::json::fmt_py(secs)
    }
}

/// The platform headers Python's Stainless client sends with every request
/// (`_base_client.py:1460-1467`, `_client.py:166`), with this runtime's values; and
/// `X-Stainless-Raw-Response` where Python reads the raw response (its
/// `futures.with_raw_response.retrieve`, `lib/api_future_impl.py:461`).
fn platform_headers(h: &mut Headers, p: &PlatformInfo, req: &Req) {
    h.set("X-Stainless-Package-Version", crate::VERSION);
    h.set("X-Stainless-OS", p.os.clone());
    h.set("X-Stainless-Arch", p.arch.clone());
    h.set("X-Stainless-Runtime", p.runtime.clone());
    h.set("X-Stainless-Runtime-Version", p.runtime_version.clone());
    h.set("X-Stainless-Async", "async:js");
    if req
        .endpoint
        .is_some_and(|e| std::ptr::eq(e, &endpoints::RETRIEVE_FUTURE))
    {
        h.set("X-Stainless-Raw-Response", "raw");
    }
}

/// Joins the base URL (trailing `/` enforced, path prefix kept) and an endpoint path.
pub fn join_url(base: &str, path: &str) -> String {
    if path.starts_with("http://") || path.starts_with("https://") {
        return path.to_string();
    }
    let base = base.trim_end_matches('/');
    format!("{base}/{}", path.trim_start_matches('/'))
}

/// How a holder reaches the server: the HTTP layer with the credential the server's
/// flags ask for, the JWT provider behind it (if any), and those flags: the static ones
/// from `client/config` and the dynamic ones, refreshed while the holder lives.
pub struct Connection {
    /// The authenticated HTTP layer (it holds the platform and the options).
    pub http: Http,
    jwt: Option<Rc<JwtProvider>>,
    /// Server flags.
    pub config: ServerConfig,
    dynamic: RefCell<DynamicConfig>,
}

impl Connection {
    /// The HTTP layer over the API key, once the options and the key are checked.
    pub fn key_http(env: &Env, opts: &Rc<ClientOptions>) -> Result<Http> {
        opts.validate()?;
        let credential = match &opts.api_key {
            Some(key) => {
                check_api_key(key, now_secs(&**env))?;
                Credential::Key(key.clone())
            }
            #[cfg(feature = "environment")]
            None => Credential::Command(opts.credential_cmd.clone()),
            // Without the feature, `validate` passed only with a command set, which this
            // build cannot run: the first request fails on the empty key.
            #[cfg(not(feature = "environment"))]
            None => Credential::Key(String::new()),
        };
        Ok(Http::new(env.clone(), opts.clone(), credential))
    }

    /// The connection with the credential the server's flags ask for: the API key, or
    /// JWTs exchanged for it (refreshed in the background when `background`).
    pub fn open(
        key_http: Http,
        config: ServerConfig,
        dynamic: DynamicConfig,
        background: bool,
    ) -> Self {
        key_http.set_pyqwest(config.use_pyqwest_transport);
        let (http, jwt) = if config.pjwt_auth_enabled {
            let j = JwtProvider::new(exchange_http(&key_http, &config), background);
            (
                key_http.with_credential(Credential::Jwt(j.clone())),
                Some(j),
            )
        } else {
            let credential = key_http.credential().clone();
            (key_http.with_credential(credential), None)
        };
        Connection {
            http,
            jwt,
            config,
            dynamic: RefCell::new(dynamic),
        }
    }

    /// The latest dynamic flags.
    pub fn dynamic(&self) -> DynamicConfig {
        self.dynamic.borrow().clone()
    }

    /// Replaces the dynamic flags (a refresh).
    pub fn set_dynamic(&self, d: DynamicConfig) {
        *self.dynamic.borrow_mut() = d;
    }

    /// Stops the JWT refresh, if any.
    pub fn close(&self) {
        if let Some(j) = &self.jwt {
            j.close();
        }
    }
}

/// What the HTTP layer does after one attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Attempt {
    /// A 2xx response: the call's answer.
    Done,
    /// Send again (after the retry delay).
    Retry,
    /// The call fails with this attempt's outcome.
    Fail,
}

/// The HTTP layer's decision after an attempt (Stainless `_retry_request`): a 2xx is
/// the answer; with retries left, no response at all (connection error, timeout) is
/// retried, and so is a response the server marks retryable ([`should_retry_response`]),
/// except a 409 when the call says conflicts are final; anything else fails.
pub fn next_attempt(
    outcome: &std::result::Result<HttpResponse, TransportError>,
    retries_taken: u32,
    max_retries: u32,
    final_conflicts: bool,
) -> Attempt {
    let can_retry = retries_taken < max_retries;
    match outcome {
        Ok(r) if (200..300).contains(&r.status) => Attempt::Done,
        Err(_) if can_retry => Attempt::Retry,
        Ok(r)
            if can_retry
                && should_retry_response(r.status, &r.headers)
                && !(r.status == 409 && final_conflicts) =>
        {
            Attempt::Retry
        }
        _ => Attempt::Fail,
    }
}

/// Reads `v` as a `T`, or an `InvalidResponse` naming `what` and showing the value.
pub fn decode<T: FromJson>(v: &Value, what: &str) -> Result<T> {
    T::from_json(v).map_err(|e| invalid_response(what, &e, json::shown(v).as_bytes()))
}

fn invalid_response(what: &str, e: &str, body: &[u8]) -> Error {
    let mut cut = body.len().min(200);
    while cut > 0 && cut < body.len() && (body[cut] & 0xC0) == 0x80 {
        cut -= 1;
    }
    let mut shown = String::new();
    json::write_str(&mut shown, &String::from_utf8_lossy(&body[..cut]));
    Error::InvalidResponse {
        message: format!("unexpected response from {what}: {e} (body: {shown})"),
    }
}

/// Parses a JSON body, or reports what the server sent.
pub fn parse_json(body: &[u8], what: &str) -> Result<Value> {
    json::from_slice(body).map_err(|e| invalid_response(what, &e.to_string(), body))
}

// ---------------------------------------------------------------------------------
// JWT

/// The claims of a JWT (payload decoded without verifying the signature, as the
/// Python SDK does for tokens it received from the server).
pub fn jwt_claims(jwt: &str) -> std::result::Result<Map, String> {
    let payload = jwt.split('.').nth(1).ok_or("not a JWT (no payload)")?;
    let bytes = crate::base64::decode(
        payload.trim_end_matches('='),
        true,
        crate::base64::Padding::Forbidden,
    )
    .map_err(|e| format!("bad JWT payload: {e}"))?;
    match json::from_slice(&bytes) {
        Ok(Value::Object(m)) => Ok(m),
        _ => Err("JWT payload is not a JSON object".into()),
    }
}

fn claim_f64(c: &Map, k: &str) -> Option<f64> {
    c.get(k).and_then(|v| {
        v.as_f64()
            .or_else(|| v.as_str().and_then(json::parse_float))
    })
}

/// Seconds until `jwt` expires (0 when it cannot be parsed; negative when expired).
pub fn seconds_until_expiry(jwt: &str, now_secs: f64) -> f64 {
    jwt_claims(jwt)
        .ok()
        .and_then(|c| claim_f64(&c, "exp"))
        .map_or(0.0, |exp| exp - now_secs)
}

/// When to refresh a JWT after receiving it: half its `exp − iat` lifetime ±10 % (at
/// most a week), or 60 s if the lifetime cannot be read.
pub fn refresh_delay(jwt: &str, random: f64) -> Duration {
    const MAX_SECS: f64 = 7.0 * 86400.0;
    let lifetime = jwt_claims(jwt)
        .ok()
        .and_then(|c| Some(claim_f64(&c, "exp")? - claim_f64(&c, "iat")?));
    match lifetime {
        // Claims are server data: a huge or non-finite lifetime must not panic.
        Some(l) if l > 0.0 && l.is_finite() => {
            crate::time::seconds((l * (0.45 + 0.1 * random)).min(MAX_SECS))
        }
        _ => Duration::from_secs(60),
    }
}

/// Whether a JWT given as the API key has expired at `now_secs` (Python
/// `time.time() >= self._expires_at`, `lib/_auth_token_provider.py:96`; an opaque
/// `tml-` key never expires).
pub fn key_expired(key: &str, now_secs: f64) -> bool {
    key.starts_with("eyJ")
        && jwt_claims(key)
            .ok()
            .and_then(|c| claim_f64(&c, "exp"))
            .is_some_and(|exp| now_secs >= exp)
}

/// The layer the JWT exchange authenticates with: the key's, except when the server's
/// `credential_default_source` is `credential_cmd` and the key is not already a JWT, where
/// it is the credential command's (Python `resolve_auth_provider(…, enforce_cmd=True)`).
/// Without feature `environment` (the lite wasm build, which runs no commands), the key's.
fn exchange_http(key_http: &Http, config: &ServerConfig) -> Http {
    #[cfg(feature = "environment")]
    {
        let is_jwt = matches!(key_http.credential(), Credential::Key(k) if k.starts_with("eyJ"));
        if config.credential_default_source == "credential_cmd" && !is_jwt {
            let command = key_http.opts.credential_cmd.clone();
            return key_http.with_credential(Credential::Command(command));
        }
    }
    let _ = config;
    key_http.clone()
}

/// Checks a credential before use: the `tml-` / `eyJ` prefix, and a JWT given as the
/// key must parse and be unexpired.
pub fn check_api_key(key: &str, now_secs: f64) -> std::result::Result<(), InputError> {
    if key.starts_with("eyJ") {
        let claims = jwt_claims(key).map_err(|e| {
            InputError::type_error("apiKey", format!("the JWT API key is malformed: {e}"))
        })?;
        if claim_f64(&claims, "exp").is_some_and(|exp| exp <= now_secs) {
            return Err(InputError::type_error(
                "apiKey",
                "the JWT API key has expired",
            ));
        }
        return Ok(());
    }
    if !key.starts_with("tml-") {
        return Err(InputError::type_error(
            "apiKey",
            "the API key must start with \"tml-\"",
        ));
    }
    Ok(())
}

struct AuthTokenResponse {
    jwt: String,
}

impl FromJson for AuthTokenResponse {
    fn from_json(v: &Value) -> std::result::Result<Self, String> {
        Ok(AuthTokenResponse {
            jwt: json::Fields::of(v)?.str("jwt")?,
        })
    }
}

const REFRESH_ON_DEMAND_SECS: f64 = 60.0;
const RETRY_DELAY: Duration = Duration::from_secs(60);

/// Exchanges the API key for short-lived JWTs (`POST /api/v1/auth/token`) and keeps a
/// fresh one: lazily on first use, on demand when ≤ 60 s remain, in the background at
/// about half its lifetime, and once more when the server rejects one as
/// `invalid_token`. Concurrent refreshes share one exchange.
pub struct JwtProvider {
    exchange: Http,
    token: RefCell<String>,
    lock: Semaphore,
    refresh_running: Cell<bool>,
    background: bool,
    stop: CancelToken,
}

impl JwtProvider {
    /// A provider exchanging through `exchange` (authenticated with the API key).
    /// `background` allows the refresh timer.
    pub fn new(exchange: Http, background: bool) -> Rc<Self> {
        Rc::new(JwtProvider {
            exchange,
            token: RefCell::new(String::new()),
            lock: Semaphore::new(1),
            refresh_running: Cell::new(false),
            background,
            stop: CancelToken::new(),
        })
    }

    fn now(&self) -> f64 {
        now_secs(&*self.exchange.env)
    }

    fn fresh(&self) -> Option<String> {
        let t = self.token.borrow();
        (!t.is_empty() && seconds_until_expiry(&t, self.now()) > REFRESH_ON_DEMAND_SECS)
            .then(|| t.clone())
    }

    /// A valid token, exchanging if none is fresh.
    pub async fn get_token(self: &Rc<Self>) -> Result<String> {
        if let Some(t) = self.fresh() {
            return Ok(t);
        }
        let _permit = self.lock.acquire().await;
        if let Some(t) = self.fresh() {
            return Ok(t);
        }
        match self.fetch().await {
            Ok(t) => {
                if self.background && !self.refresh_running.get() && !self.stop.is_cancelled() {
                    self.refresh_running.set(true);
                    let me = self.clone();
                    let first = t.clone();
                    self.exchange
                        .env
                        .spawn(Box::pin(async move { me.refresh_loop(first).await }));
                }
                Ok(t)
            }
            Err(e) if e.status() == Some(401) => Err(e),
            Err(e) => {
                let cached = self.token.borrow().clone();
                if cached.is_empty() || seconds_until_expiry(&cached, self.now()) <= 0.0 {
                    return Err(e);
                }
                self.exchange.opts.log(
                    LogLevel::Warn,
                    &format!("On-demand JWT refresh failed: {e}"),
                );
                Ok(cached)
            }
        }
    }

    /// A token other than `rejected` (one exchange for many concurrent rejections).
    pub async fn replace(&self, rejected: &str) -> Result<String> {
        if *self.token.borrow() != rejected {
            return Ok(self.token.borrow().clone());
        }
        let _permit = self.lock.acquire().await;
        if *self.token.borrow() != rejected {
            return Ok(self.token.borrow().clone());
        }
        self.fetch().await
    }

    async fn fetch(&self) -> Result<String> {
        let r: AuthTokenResponse = self
            .exchange
            .json(Req::to(&endpoints::AUTH_TOKEN).json(&crate::json!({})))
            .await?;
        *self.token.borrow_mut() = r.jwt.clone();
        Ok(r.jwt)
    }

    async fn refresh_loop(self: Rc<Self>, first: String) {
        let env = self.exchange.env.clone();
        let mut delay = refresh_delay(&first, env.random());
        loop {
            let stop = self.stop.cancelled();
            futures_util::pin_mut!(stop);
            let sleep = env.sleep(delay);
            if let futures_util::future::Either::Left(_) =
                futures_util::future::select(stop, sleep).await
            {
                break;
            }
            let result = {
                let _permit = self.lock.acquire().await;
                self.fetch().await
            };
            match result {
                Ok(t) => delay = refresh_delay(&t, env.random()),
                Err(e) => {
                    let left = seconds_until_expiry(&self.token.borrow(), self.now());
                    if e.status() == Some(401)
                        && left - RETRY_DELAY.as_secs_f64() <= REFRESH_ON_DEMAND_SECS
                    {
                        self.exchange.opts.log(
                            LogLevel::Warn,
                            &format!("JWT refresh rejected, stopping background refresh: {e}"),
                        );
                        break;
                    }
                    delay = RETRY_DELAY;
                }
            }
        }
        self.refresh_running.set(false);
    }

    /// Stops the background refresh.
    pub fn close(&self) {
        self.stop.cancel();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn jwt(claims: &str) -> String {
        let b = |s: &str| crate::base64::encode(s.as_bytes(), true, false);
        format!("{}.{}.sig", b(r#"{"alg":"none"}"#), b(claims))
    }

    #[test]
    fn urls_keep_prefixes() {
        assert_eq!(
            join_url("http://h:1/prefix/", "/api/v1/x"),
            "http://h:1/prefix/api/v1/x"
        );
        assert_eq!(join_url("http://h:1", "api/v1/x"), "http://h:1/api/v1/x");
        assert_eq!(
            join_url("http://h", "https://other/file"),
            "https://other/file"
        );
    }

    /// Expected values from Stainless `_base_client.py` `_retry_request`: a response
    /// that `raise_for_status` accepts is the answer (line 1061); timeouts and
    /// connection errors retry while `remaining_retries > 0` (1019-1045); an error status
    /// retries when also `_should_retry` (1067; 711-740: `x-should-retry` wins, else
    /// 408, 409, 429, >= 500). Ours: a 409 of a call whose conflicts are final fails.
    #[test]
    fn what_the_http_layer_does_after_an_attempt() {
        let resp = |status: u16, should_retry: Option<&str>| {
            let headers = should_retry
                .map(|v| vec![("x-should-retry".to_string(), v.to_string())])
                .unwrap_or_default();
            Ok(HttpResponse {
                status,
                headers: Headers(headers),
                body: vec![],
            })
        };
        let timeout = || Err(TransportError::Timeout);
        let refused = || Err(TransportError::Connection("refused".into()));
        type Outcome = std::result::Result<HttpResponse, TransportError>;
        let rows: Vec<(Outcome, u32, u32, bool, Attempt)> = vec![
            // (outcome, retries taken, max retries, conflicts final, decision)
            (resp(200, None), 0, 2, false, Attempt::Done),
            (resp(204, Some("true")), 2, 2, false, Attempt::Done),
            (timeout(), 0, 2, false, Attempt::Retry),
            (timeout(), 2, 2, false, Attempt::Fail),
            (refused(), 1, 2, false, Attempt::Retry),
            (refused(), 0, 0, false, Attempt::Fail),
            (resp(408, None), 0, 2, false, Attempt::Retry),
            (resp(409, None), 0, 2, false, Attempt::Retry),
            (resp(409, None), 0, 2, true, Attempt::Fail),
            (resp(429, None), 1, 2, false, Attempt::Retry),
            (resp(500, None), 0, 2, false, Attempt::Retry),
            (resp(503, Some("false")), 0, 2, false, Attempt::Fail),
            (resp(400, Some("true")), 0, 2, false, Attempt::Retry),
            (resp(400, None), 0, 2, false, Attempt::Fail),
            (resp(404, None), 0, 2, false, Attempt::Fail),
            (resp(503, None), 2, 2, false, Attempt::Fail),
        ];
        for (outcome, taken, max, final_conflicts, want) in rows {
            let shown = format!("{:?}", outcome.as_ref().map(|r| r.status));
            assert_eq!(
                next_attempt(&outcome, taken, max, final_conflicts),
                want,
                "{shown} after {taken}/{max}"
            );
        }
    }

    #[test]
    fn jwt_expiry_and_refresh_delay() {
        let t = jwt(r#"{"exp": 1000, "iat": 600, "sub": "u"}"#);
        assert_eq!(seconds_until_expiry(&t, 900.0), 100.0);
        assert_eq!(seconds_until_expiry("garbage", 900.0), 0.0);
        assert_eq!(refresh_delay(&t, 0.0), Duration::from_secs(180));
        assert_eq!(refresh_delay(&t, 1.0), Duration::from_secs(220));
        assert_eq!(refresh_delay("x.y.z", 0.5), Duration::from_secs(60));
    }

    #[test]
    fn refresh_delay_survives_absurd_claims() {
        // Found by fuzz/jwt: `Duration::from_secs_f64` panicked on an infinite lifetime.
        let inf = jwt(r#"{"exp": "1e400", "iat": 0}"#);
        assert_eq!(refresh_delay(&inf, 0.5), Duration::from_secs(60));
        let huge = jwt(r#"{"exp": 1e300, "iat": 0}"#);
        assert_eq!(refresh_delay(&huge, 0.5), Duration::from_secs(7 * 86400));
        let nan = jwt(r#"{"exp": "NaN", "iat": 0}"#);
        assert_eq!(refresh_delay(&nan, 0.5), Duration::from_secs(60));
    }

    #[test]
    fn api_key_checks() {
        assert!(check_api_key("tml-abc", 0.0).is_ok());
        assert!(check_api_key("sk-abc", 0.0)
            .unwrap_err()
            .message
            .contains("tml-"));
        assert!(check_api_key(&jwt(r#"{"exp": 10}"#), 100.0)
            .unwrap_err()
            .message
            .contains("expired"));
        assert!(check_api_key(&jwt(r#"{"exp": 1000}"#), 100.0).is_ok());
        assert!(check_api_key("eyJnope", 0.0)
            .unwrap_err()
            .message
            .contains("malformed"));
    }
}
