//! Polling a server-side future (`POST /api/v1/retrieve_future`) exactly as the Python
//! SDK 0.38 does (`api_future_impl.py`):
//!
//! * a protobuf body is the result; JSON `try_again` re-polls at once (reporting the
//!   queue state); `complete_metadata` reserves the payload size from the in-flight
//!   budget and re-polls for the payload (once); `{"error": …}` fails with its category;
//!   any other JSON is the result (rejected for types that must come as protobuf);
//! * HTTP 408 and 5xx re-poll at once (a 408 body's queue state is reported); 429 and
//!   connection errors wait `min(2ᶜ, 30)` s; a bare 400 is retried 3 times; 402 pauses
//!   while billing allows; 410 means the result expired; other statuses fail.
//!
//! Unlike Python, an unparseable 200 body is re-polled (within the 400 budget) instead
//! of failing at once: polling is idempotent, and a proxy can mangle one answer.

use std::time::Duration;

use crate::json;
use crate::json::Value;

use crate::error::{Error, ErrorCategory, Result};
use crate::http::Req;
use crate::retry::{poll_backoff_delay, BILLING_PAUSE_SLEEP};
use crate::session::Holder;
use crate::sync::BytesPermit;

const MAX_BAD_REQUEST_RETRIES: u32 = 3;
const POLL_TIMEOUT: Duration = Duration::from_secs(45);

/// Queue state reported by the server while a request waits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueueState {
    /// Running or about to.
    Active,
    /// Paused: a rate limit (e.g. concurrent training clients).
    PausedRateLimit,
    /// Paused: the backend is short on capacity.
    PausedCapacity,
    /// Not stated.
    Unknown,
}

impl QueueState {
    /// Parses the wire value.
    pub fn parse(s: &str) -> Self {
        match s {
            "active" => QueueState::Active,
            "paused_rate_limit" => QueueState::PausedRateLimit,
            "paused_capacity" => QueueState::PausedCapacity,
            _ => QueueState::Unknown,
        }
    }
    /// The wire value.
    pub fn as_str(self) -> &'static str {
        match self {
            QueueState::Active => "active",
            QueueState::PausedRateLimit => "paused_rate_limit",
            QueueState::PausedCapacity => "paused_capacity",
            QueueState::Unknown => "unknown",
        }
    }
}

/// Warns through the client's logger while the server keeps requests paused, as Python's
/// queue-state loggers do: at most once a minute, once a pause has lasted `grace_secs`
/// (15 minutes for training and model creation, none for sampling).
pub struct PauseLogger {
    prefix: String,
    suffix: &'static str,
    rate_limit_reason: &'static str,
    grace_secs: f64,
    state: std::cell::Cell<Option<QueueState>>,
    since: std::cell::Cell<f64>,
    logged: std::cell::Cell<Option<f64>>,
}

impl PauseLogger {
    /// Python's `QueueStateLogger(id, what)`: "`what` for `id` is paused. Reason: …."
    pub fn new(what: &str, id: &str) -> Self {
        Self::with(
            format!("{what} for {id} is paused"),
            ".",
            "concurrent training clients rate limit hit",
            900.0,
        )
    }
    /// Python's `SamplingClient.on_queue_state_change`.
    pub fn sampling(sampler: &str) -> Self {
        Self::with(
            format!("Sampling is paused for sampler {sampler}"),
            "",
            "concurrent sampler weights limit hit",
            0.0,
        )
    }
    fn with(
        prefix: String,
        suffix: &'static str,
        rate_limit_reason: &'static str,
        grace_secs: f64,
    ) -> Self {
        PauseLogger {
            prefix,
            suffix,
            rate_limit_reason,
            grace_secs,
            state: Default::default(),
            since: Default::default(),
            logged: Default::default(),
        }
    }
    /// Records a queue state the server reported; warns when due.
    pub fn observe(&self, holder: &Holder, qs: QueueState, reason: Option<&str>) {
        let now = holder.now();
        if self.state.replace(Some(qs)) != Some(qs) {
            self.since.set(now);
        }
        if qs == QueueState::Active
            || now - self.since.get() < self.grace_secs
            || self.logged.get().is_some_and(|t| now - t < 60.0)
        {
            return;
        }
        self.logged.set(Some(now));
        let reason = reason.filter(|r| !r.is_empty()).unwrap_or(match qs {
            QueueState::PausedRateLimit => self.rate_limit_reason,
            QueueState::PausedCapacity => {
                "Tinker backend is running short on capacity, please wait"
            }
            _ => "unknown",
        });
        let msg = format!("{}. Reason: {reason}{}", self.prefix, self.suffix);
        holder.opts.log(crate::config::LogLevel::Warn, &msg);
    }
}

/// Called with queue-state changes while polling.
pub type QueueObserver<'a> = &'a dyn Fn(QueueState, Option<&str>);

/// What to poll and how.
pub struct Poll<'a> {
    /// The server's request id.
    pub request_id: &'a str,
    /// `X-Tinker-Request-Type` (`ForwardBackward`, `Sample`, …).
    pub request_type: &'static str,
    /// Whether the result comes as protobuf (`ForwardBackwardOutput`, `SampleResponse`).
    pub proto: bool,
    /// Seconds between starting the submit and starting to poll.
    pub submit_roundtrip_secs: f64,
    /// The public SDK method (`x-sdk-method`).
    pub sdk_method: Option<&'static str>,
    /// Queue-state observer.
    pub observer: Option<QueueObserver<'a>>,
    /// A payload size announced by the session poller (skips the metadata round trip).
    pub known_payload_size: Option<u64>,
}

/// A future's result.
#[derive(Debug, Clone)]
pub enum Payload {
    /// A JSON result.
    Json(Value),
    /// A protobuf result.
    Proto(Vec<u8>),
}

/// A payload size the server announced, as bytes of the in-flight budget: sizes past
/// `i64::MAX` saturate instead of wrapping negative (which made the budget overflow).
fn budget_bytes(size: u64) -> i64 {
    i64::try_from(size).unwrap_or(i64::MAX)
}

/// Polls until the future resolves.
pub async fn retrieve(holder: &Holder, p: Poll<'_>) -> Result<Payload> {
    let mut allow_metadata_only = true;
    let mut conn_retries = 0u32;
    let mut bad_requests = 0u32;
    let mut _reserved: Option<BytesPermit> = None;
    if let Some(size) = p.known_payload_size.filter(|s| *s > 0) {
        allow_metadata_only = false;
        _reserved = Some(holder.inflight_bytes.acquire(budget_bytes(size)).await);
    }
    let notify = |qs: QueueState, reason: Option<&str>| {
        if let Some(o) = p.observer {
            o(qs, reason);
        }
    };
    let mut iteration: u64 = 0;
    loop {
        let mut req = Req::post_json(
            "/api/v1/retrieve_future",
            &json!({ "request_id": p.request_id, "allow_metadata_only": allow_metadata_only }),
        )
        .retries(0)
        .timeout(POLL_TIMEOUT)
        .method_name(p.sdk_method)
        .header("X-Tinker-Request-Iteration", iteration.to_string())
        .header("X-Tinker-Request-Type", p.request_type);
        if p.proto {
            req = req.header("Accept", "application/x-protobuf");
        }
        if iteration == 0 {
            req = req.header(
                "X-Tinker-Create-Promise-Roundtrip-Time",
                json::fmt_py(p.submit_roundtrip_secs),
            );
        }
        iteration += 1;
        let resp = match holder.http.send(req).await {
            Ok(r) => r,
            Err(Error::Status(s)) => {
                if s.status == 402 && holder.should_pause_on_billing(402) {
                    holder.env.sleep(BILLING_PAUSE_SLEEP).await;
                    continue;
                }
                if s.status != 429 {
                    conn_retries = 0;
                }
                match s.status {
                    408 => {
                        if let Some(body) = s.body.as_ref().filter(|b| b.is_object()) {
                            bad_requests = 0;
                            if let Some(qs) = body
                                .get("queue_state")
                                .and_then(Value::as_str)
                                .filter(|q| !q.is_empty())
                            {
                                notify(
                                    QueueState::parse(qs),
                                    body.get("queue_state_reason").and_then(Value::as_str),
                                );
                            }
                        }
                        continue;
                    }
                    500..=599 => continue,
                    410 => {
                        return Err(Error::FutureExpired {
                            request_id: p.request_id.to_string(),
                        })
                    }
                    429 => {
                        holder.env.sleep(poll_backoff_delay(conn_retries)).await;
                        conn_retries += 1;
                        continue;
                    }
                    400 if bad_requests < MAX_BAD_REQUEST_RETRIES => {
                        bad_requests += 1;
                        continue;
                    }
                    _ => {
                        let mut s = s;
                        s.final_poll = true;
                        return Err(Error::Status(s));
                    }
                }
            }
            Err(Error::Connection { .. } | Error::Timeout { .. }) => {
                holder.env.sleep(poll_backoff_delay(conn_retries)).await;
                conn_retries += 1;
                continue;
            }
            Err(e) => return Err(e),
        };
        conn_retries = 0;
        if resp
            .headers
            .get("content-type")
            .is_some_and(|ct| ct.contains("application/x-protobuf"))
        {
            if !p.proto {
                return Err(Error::InvalidResponse {
                    message: format!(
                        "request {}: protobuf result for a {} request, which has a JSON result",
                        p.request_id, p.request_type
                    ),
                });
            }
            notify(QueueState::Active, None);
            return Ok(Payload::Proto(resp.body));
        }
        let body: Value = match json::from_slice(&resp.body) {
            Ok(v @ Value::Object(_)) => v,
            _ if bad_requests < MAX_BAD_REQUEST_RETRIES => {
                bad_requests += 1;
                continue;
            }
            _ => {
                let mut shown = String::new();
                json::write_str(
                    &mut shown,
                    &String::from_utf8_lossy(&resp.body[..resp.body.len().min(200)]),
                );
                return Err(Error::InvalidResponse {
                    message: format!("request {}: unparseable result body {shown}", p.request_id),
                });
            }
        };
        if body.get("type").and_then(Value::as_str) == Some("try_again") {
            let qs = QueueState::parse(
                body.get("queue_state")
                    .and_then(Value::as_str)
                    .unwrap_or(""),
            );
            let reason = body.get("queue_state_reason").and_then(Value::as_str);
            if qs != QueueState::Unknown || reason.is_some() {
                notify(qs, reason);
            }
            continue;
        }
        if body.get("status").and_then(Value::as_str) == Some("complete_metadata") {
            if !allow_metadata_only {
                return Err(Error::InvalidResponse {
                    message: format!(
                        "request {}: the server sent a metadata-only answer twice",
                        p.request_id
                    ),
                });
            }
            allow_metadata_only = false;
            let size = body
                .get("response_payload_size")
                .and_then(Value::as_u64)
                .unwrap_or(0);
            _reserved = Some(holder.inflight_bytes.acquire(budget_bytes(size)).await);
            continue;
        }
        if let Some(err) = body.get("error") {
            notify(QueueState::Active, None);
            let message = err.as_str().map_or_else(|| err.to_string(), str::to_string);
            let e = Error::RequestFailed {
                message,
                request_id: p.request_id.to_string(),
                category: ErrorCategory::parse(body.get("category").and_then(Value::as_str)),
            };
            return Err(holder.http.redact(e, None));
        }
        if p.proto {
            return Err(Error::InvalidResponse { message: format!("request {}: the server returned JSON for a {} result, which this client only accepts as protobuf (the server predates protobuf results)", p.request_id, p.request_type) });
        }
        notify(QueueState::Active, None);
        return Ok(Payload::Json(body));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absurd_payload_sizes_saturate() {
        // Found by fuzz/hostile_server: `size as i64` made a negative reservation and
        // the byte budget overflowed ("attempt to subtract with overflow").
        assert_eq!(budget_bytes(10), 10);
        assert_eq!(budget_bytes(u64::MAX), i64::MAX);
        let sem = crate::sync::BytesSemaphore::new(100);
        let big = futures_executor::block_on(sem.acquire(budget_bytes(u64::MAX)));
        assert_eq!(sem.remaining(), 100 - i64::MAX);
        drop(big);
        assert_eq!(sem.remaining(), 100);
    }
}
