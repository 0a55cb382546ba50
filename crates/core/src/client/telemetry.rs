//! Telemetry batches (`POST /api/v1/telemetry`), as the Python SDK 0.38 sends them:
//! a bounded queue (10,000 events), batches of at most 100, a 5 s timeout, a batch that
//! fails is dropped (never retried forever), a flush every 10 s while background timers
//! are allowed and always on close. Session-less clients report under
//! `sessionless-<uuid>` without start/end events. Events never carry credentials.

use std::cell::Cell;

use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

use crate::json;
use crate::json::Value;

use crate::config::PROTOCOL_SDK_VERSION;
use crate::endpoints;
use crate::http::{Http, Req};
use crate::platform::{uuid4, Env};
use crate::sync::CancelToken;

const MAX_QUEUE: usize = 10_000;
const MAX_BATCH: usize = 100;
const FLUSH_INTERVAL: Duration = Duration::from_secs(10);
/// Python's `FLUSH_TIMEOUT` (`lib/telemetry.py`): the longest a flush is waited for.
pub const FLUSH_TIMEOUT: Duration = Duration::from_secs(30);

/// ISO-8601 UTC timestamp with microseconds, from epoch milliseconds.
pub fn iso8601(ms: f64) -> String {
    let total_us = (ms * 1000.0).round() as i64;
    let (secs, us) = (
        total_us.div_euclid(1_000_000),
        total_us.rem_euclid(1_000_000),
    );
    let (days, sod) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{us:06}Z",
        sod / 3600,
        sod / 60 % 60,
        sod % 60
    )
}

/// Python's `str(timedelta)`: `H:MM:SS.ffffff`.
fn timedelta(secs: f64) -> String {
    let us = (secs.max(0.0) * 1e6).round() as u64;
    let (s, frac) = (us / 1_000_000, us % 1_000_000);
    format!("{}:{:02}:{:02}.{frac:06}", s / 3600, s / 60 % 60, s % 60)
}

thread_local! {
    /// This process's id, shared by every client (Python `get_process_uuid`,
    /// `lib/telemetry.py:52-63`: one per process; a wasm instance is one JS realm).
    static PROCESS_UUID: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// The process's telemetry id, made on first use.
fn process_uuid(env: &Env) -> String {
    PROCESS_UUID.with(|p| p.borrow_mut().get_or_insert_with(|| uuid4(&**env)).clone())
}

/// The telemetry of one holder.
pub struct Telemetry {
    env: Env,
    http: Http,
    enabled: bool,
    session_id: String,
    sessionless: bool,
    platform: String,
    process_uuid: String,
    start_ms: f64,
    index: Cell<u64>,
    queue: RefCell<Vec<Value>>,
    dropped: Cell<u64>,
    flushing: Cell<bool>,
}

impl Telemetry {
    /// Telemetry for `session_id` (`None`: session-less).
    pub fn new(
        env: Env,
        http: Http,
        enabled: bool,
        session_id: Option<&str>,
        platform: &str,
    ) -> Rc<Self> {
        let sessionless = session_id.is_none();
        let t = Rc::new(Telemetry {
            session_id: session_id
                .map_or_else(|| format!("sessionless-{}", uuid4(&*env)), str::to_string),
            sessionless,
            platform: platform.to_string(),
            process_uuid: process_uuid(&env),
            start_ms: env.now_ms(),
            index: Cell::new(0),
            queue: RefCell::new(Vec::new()),
            dropped: Cell::new(0),
            flushing: Cell::new(false),
            enabled,
            env,
            http,
        });
        if !sessionless {
            t.push("SESSION_START", "INFO", json!({}));
        }
        t
    }

    fn push(&self, event: &str, severity: &str, mut extra: Value) {
        if !self.enabled {
            return;
        }
        let i = self.index.get();
        self.index.set(i + 1);
        let mut e = json!({
            "event": event,
            "event_id": uuid4(&*self.env),
            "event_session_index": i,
            "severity": severity,
            "timestamp": iso8601(if event == "SESSION_START" { self.start_ms } else { self.env.now_ms() }),
        });
        if let (Some(m), Some(x)) = (e.as_object_mut(), extra.as_object_mut()) {
            m.append(x);
        }
        let mut q = self.queue.borrow_mut();
        if q.len() >= MAX_QUEUE {
            self.dropped.set(self.dropped.get() + 1);
            return;
        }
        q.push(e);
    }

    /// Logs a low-cardinality named event with data.
    pub fn log(&self, name: &str, data: Value, severity: &str) {
        self.push(
            "GENERIC_EVENT",
            severity,
            json!({ "event_name": name, "event_data": data }),
        );
    }

    /// Logs a user error (4xx except 408, user-category failures) as the Python SDK does
    /// (`_user_error_event`, `lib/telemetry.py`): `message`, `status_code` and `body`
    /// only when present.
    pub fn user_error(&self, error: &crate::error::Error) {
        self.push("GENERIC_EVENT", "WARNING", self.error_event(error));
    }

    /// The event of a failed public call: `user_error` for the user's own errors, else
    /// `UNHANDLED_EXCEPTION` (Python `_exception_or_user_error_event`).
    fn error_event(&self, error: &crate::error::Error) -> Value {
        if error.is_user_error() {
            let mut data = json!({ "error_type": error_type(error) });
            let message = error.to_string();
            if !message.is_empty() {
                data["message"] = message.into();
            }
            if let crate::error::Error::Status(s) = error {
                data["status_code"] = Value::from(u64::from(s.status));
                if let Some(b) = s.body.clone().filter(|b| !b.is_null()) {
                    data["body"] = b;
                }
            }
            json!({ "event_name": "user_error", "event_data": data })
        } else {
            json!({ "error_type": error_type(error), "error_message": error.to_string(), "traceback": null })
        }
    }

    /// A public call failed (Python `capture_exceptions(fatal=True)`, the decorator of
    /// nearly every public method): its `user_error` or `UNHANDLED_EXCEPTION` event, then
    /// `SESSION_END` (sessionful only), then a flush (`log_fatal_exception`,
    /// `lib/telemetry.py`). Python waits up to [`FLUSH_TIMEOUT`] for that flush before the
    /// call fails; here it runs in the background within the same bound, and the call
    /// fails at once (tests/differential/NOTES.md).
    pub fn fatal(self: &Rc<Self>, error: &crate::error::Error) {
        let event = self.error_event(error);
        if error.is_user_error() {
            self.push("GENERIC_EVENT", "WARNING", event);
        } else {
            self.push("UNHANDLED_EXCEPTION", "ERROR", event);
        }
        if !self.sessionless {
            self.push_session_end();
        }
        let me = self.clone();
        self.env
            .spawn(Box::pin(async move { me.flush_within_bound().await }));
    }

    /// [`flush`](Self::flush), given up after [`FLUSH_TIMEOUT`] (what is unsent stays queued).
    async fn flush_within_bound(&self) {
        let flush = self.flush();
        futures_util::pin_mut!(flush);
        let _ = futures_util::future::select(flush, self.env.sleep(FLUSH_TIMEOUT)).await;
    }

    fn push_session_end(&self) {
        let dur = timedelta((self.env.now_ms() - self.start_ms) / 1000.0);
        self.push("SESSION_END", "INFO", json!({ "duration": dur }));
    }

    /// Events waiting to be sent.
    pub fn pending(&self) -> usize {
        self.queue.borrow().len()
    }

    /// Sends every queued event, in batches of at most 100; a failed batch is dropped.
    pub async fn flush(&self) {
        if !self.enabled || self.flushing.replace(true) {
            return;
        }
        // Cleared however the flush ends, given up included.
        struct Done<'a>(&'a Cell<bool>);
        impl Drop for Done<'_> {
            fn drop(&mut self) {
                self.0.set(false);
            }
        }
        let _done = Done(&self.flushing);
        loop {
            let events: Vec<Value> = {
                let mut q = self.queue.borrow_mut();
                let n = q.len().min(MAX_BATCH);
                q.drain(..n).collect()
            };
            if events.is_empty() {
                break;
            }
            let batch = json!({
                "events": events,
                "platform": self.platform,
                "sdk_version": PROTOCOL_SDK_VERSION,
                "session_id": self.session_id,
                "process_uuid": self.process_uuid,
            });
            let req = Req::to(&endpoints::TELEMETRY).json(&batch);
            if self.http.send(req).await.is_err() {
                self.dropped.set(self.dropped.get() + 1);
            }
        }
    }

    /// Flushes every 10 s until `stop`.
    pub async fn flush_loop(self: Rc<Self>, stop: CancelToken) {
        loop {
            let s = stop.cancelled();
            futures_util::pin_mut!(s);
            if let futures_util::future::Either::Left(_) =
                futures_util::future::select(s, self.env.sleep(FLUSH_INTERVAL)).await
            {
                return;
            }
            self.flush().await;
        }
    }

    /// Flushes what is queued, waiting no longer than Python's close does
    /// ([`FLUSH_TIMEOUT`]). No `SESSION_END`: Python queues one only with a fatal
    /// exception (`_fatal_events`, `lib/telemetry.py`), never on a normal close.
    pub async fn close(&self) {
        self.flush_within_bound().await;
    }
}

/// The Python SDK's class name of an error (`exception.__class__.__name__`, which its
/// telemetry reports): per status for HTTP errors, as the JS error classes are named.
pub fn error_type(e: &crate::error::Error) -> &'static str {
    use crate::error::Error::*;
    match e {
        Status(s) => crate::error::status_error_class(s.status),
        Connection { .. } => "APIConnectionError",
        Timeout { .. } => "APITimeoutError",
        Aborted { .. } => "APIUserAbortError",
        RequestFailed { .. } => "RequestFailedError",
        FutureExpired { .. } => "FutureExpiredError",
        Input(_) => "InputError",
        InvalidResponse { .. } => "APIResponseValidationError",
        Closed { .. } => "ClientClosedError",
        Callback { .. } => "CallbackError",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps() {
        assert_eq!(iso8601(0.0), "1970-01-01T00:00:00.000000Z");
        assert_eq!(iso8601(1_795_323_000_123.0), "2026-11-22T04:50:00.123000Z");
        assert_eq!(iso8601(951_782_400_000.0), "2000-02-29T00:00:00.000000Z");
        assert_eq!(timedelta(3723.5), "1:02:03.500000");
    }
}
