//! The sampling retry layer (Python `lib/retry_handler.py`'s `RetryHandler`): a
//! concurrency limit per sampler, retries of transient failures with jittered
//! exponential waits (a retry is a new submission with a new `seq_id`), and stuck
//! detection (every call in flight fails once none made progress for
//! `progress_timeout`).
//!
//! One handler per (holder, sampler, retry config), shared by every client on that
//! sampler, as Python's `_get_retry_handler` cache shares it; [`RetryHandlers`] is that
//! cache, kept by the holder.

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::rc::{Rc, Weak};

use futures_util::future::{select, Either};

use crate::call::Guard;
use crate::error::{is_retryable_status, Error, Result};
use crate::platform::Env;
use crate::retry::SamplingRetryConfig;
use crate::sync::{CancelToken, Semaphore};
use crate::telemetry::{error_type, Telemetry};

/// Whether the sampling retry layer retries a failed attempt (Python
/// `RetryHandler._should_retry`, `retry_handler.py` 276-286, with the retryable
/// exceptions of lines 72-77): no answer (connection errors, timeouts), an expired
/// future (`RetryableException`, `api_future_impl.py` 411-414), or a retryable status —
/// except a poll's final status, which Python raises as a `ValueError`
/// (`api_future_impl.py` 402-420).
pub fn sampling_retryable(e: &Error) -> bool {
    match e {
        Error::Connection { .. } | Error::Timeout { .. } | Error::FutureExpired { .. } => true,
        Error::Status(s) => !s.final_poll && is_retryable_status(s.status),
        _ => false,
    }
}

/// The retry layer of one sampler.
pub struct RetryHandler {
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

/// Counts a call in flight; the last one out stops the burst's watchdog.
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

impl RetryHandler {
    fn new(config: SamplingRetryConfig, now_ms: f64) -> Self {
        RetryHandler {
            semaphore: config.max_connections.map(Semaphore::new),
            config,
            last_progress_ms: Cell::new(now_ms),
            in_flight: Cell::new(0),
            watchdog: RefCell::new(None),
        }
    }

    /// Runs `attempt` until it succeeds or fails for good (Python
    /// `RetryHandler.execute`): within the concurrency limit, retrying what
    /// [`sampling_retryable`] allows, failed as stuck when no call of this sampler made
    /// progress for `progress_timeout`.
    pub async fn run<T, F, Fut>(
        self: &Rc<Self>,
        env: &Env,
        guard: &Guard,
        telemetry: &Telemetry,
        attempt: F,
    ) -> Result<T>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T>>,
    {
        let _permit = match &self.semaphore {
            Some(s) => Some(guard.run(async { Ok(s.acquire().await) }).await?),
            None => None,
        };
        if self.in_flight.get() == 0 {
            self.last_progress_ms.set(env.now_ms());
        }
        self.in_flight.set(self.in_flight.get() + 1);
        let _in_flight = InFlight(self);
        let attempts = self.attempts(env, guard, telemetry, attempt);
        let stuck = self
            .config
            .enable_stuck_detection
            .then(|| self.stuck_token(env));
        let watchdog = self.stuck_error(stuck);
        futures_util::pin_mut!(attempts, watchdog);
        match select(attempts, watchdog).await {
            Either::Left((r, _)) => {
                if r.is_ok() {
                    self.last_progress_ms.set(env.now_ms());
                }
                r
            }
            Either::Right((e, _)) => Err(e),
        }
    }

    /// The attempts: retried with `config.delay` waits while retryable (Python
    /// `_execute_with_retry`, lines 211-274), each failure reported to telemetry as
    /// `RetryHandler.execute.exception` (lines 233-257).
    async fn attempts<T, F, Fut>(
        &self,
        env: &Env,
        guard: &Guard,
        telemetry: &Telemetry,
        mut attempt: F,
    ) -> Result<T>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T>>,
    {
        let mut n = 0u32;
        let start = env.now_ms();
        loop {
            match attempt().await {
                Err(e) if self.config.enable_retry_logic => {
                    let retry = sampling_retryable(&e);
                    let elapsed = (env.now_ms() - start) / 1000.0;
                    report_attempt(telemetry, &e, retry, n + 1, elapsed);
                    if !retry {
                        return Err(e);
                    }
                    let d = self.config.delay(n, env.random());
                    n += 1;
                    guard.sleep(d).await?;
                }
                r => return r,
            }
        }
    }

    /// The "no progress" error, once `stuck` fires (never without stuck detection).
    async fn stuck_error(&self, stuck: Option<CancelToken>) -> Error {
        match stuck {
            None => std::future::pending().await,
            Some(t) => t.cancelled().await,
        }
        Error::Connection {
            message: format!(
                "No progress made in {}s. Requests appear to be stuck.",
                crate::types::fmt_num(self.config.progress_timeout.as_secs_f64())
            ),
        }
    }

    /// The stuck token of the current burst of calls, starting its watchdog if none runs.
    fn stuck_token(self: &Rc<Self>, env: &Env) -> CancelToken {
        if let Some(w) = self.watchdog.borrow().as_ref() {
            if !w.stuck.is_cancelled() {
                return w.stuck.clone();
            }
        }
        let (stuck, idle) = (CancelToken::new(), CancelToken::new());
        *self.watchdog.borrow_mut() = Some(Watchdog {
            stuck: stuck.clone(),
            idle: idle.clone(),
        });
        let watch = watch(Rc::downgrade(self), env.clone(), stuck.clone(), idle);
        env.spawn(Box::pin(watch));
        stuck
    }
}

/// Python's `RetryHandler.execute.exception` event (`retry_handler.py:233-257`): WARNING
/// when retried or the user's error, else ERROR; `attempt_count` counts from 1.
fn report_attempt(t: &Telemetry, e: &Error, should_retry: bool, attempt: u32, elapsed: f64) {
    let severity = if should_retry || e.is_user_error() {
        "WARNING"
    } else {
        "ERROR"
    };
    t.log(
        "RetryHandler.execute.exception",
        crate::json!({ "func": "SamplingClient.sample", "exception": e.to_string(), "exception_type": error_type(e), "status_code": e.status(), "should_retry": should_retry, "is_user_error": e.is_user_error(), "attempt_count": attempt, "elapsed_time": elapsed }),
        severity,
    );
}

/// The watchdog task: fires `stuck` once no progress was made for `progress_timeout`,
/// re-reading the last progress at each deadline; stops when the burst ends (`idle`)
/// or the handler is gone.
async fn watch(handler: Weak<RetryHandler>, env: Env, stuck: CancelToken, idle: CancelToken) {
    loop {
        if idle.is_cancelled() {
            return; // the burst ended before this task first ran
        }
        let Some(deadline) = handler
            .upgrade()
            .map(|h| h.last_progress_ms.get() + h.config.progress_timeout.as_secs_f64() * 1000.0)
        else {
            return;
        };
        let now = env.now_ms();
        if now > deadline {
            stuck.cancel();
            return;
        }
        let sleep = env.sleep(crate::time::seconds((deadline - now) / 1000.0 + 0.001));
        let stop = idle.cancelled();
        futures_util::pin_mut!(stop);
        if let Either::Right(_) = select(sleep, stop).await {
            return;
        }
    }
}

/// The live retry handlers of one holder's sampling clients, by sampler (Python's
/// `_get_retry_handler` cache). Handlers live as long as a client uses them.
#[derive(Default)]
pub struct RetryHandlers(RefCell<Vec<(String, Weak<RetryHandler>)>>);

impl RetryHandlers {
    /// The live handler of sampler `id` with `config`, or a new one (its progress clock
    /// starting at `now_ms`).
    pub fn get(&self, id: &str, config: SamplingRetryConfig, now_ms: f64) -> Rc<RetryHandler> {
        let mut all = self.0.borrow_mut();
        all.retain(|(_, h)| h.strong_count() > 0);
        let live = all
            .iter()
            .filter(|(sampler, _)| sampler == id)
            .filter_map(|(_, h)| h.upgrade())
            .find(|h| h.config == config);
        live.unwrap_or_else(|| {
            let h = Rc::new(RetryHandler::new(config, now_ms));
            all.push((id.to_string(), Rc::downgrade(&h)));
            h
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::StatusError;
    use crate::platform::Headers;

    fn status(code: u16, final_poll: bool) -> Error {
        Error::Status(Box::new(StatusError {
            status: code,
            message: String::new(),
            body: None,
            headers: Headers::default(),
            request_id: None,
            final_poll,
        }))
    }

    /// Expected values from Python `retry_handler.py`: `retryable_exceptions` (lines
    /// 72-77: timeouts, `APIConnectionError`, `RetryableException`) and
    /// `is_retryable_status_code` (line 36: 408, 409, 429, 5xx); a poll's final status
    /// is a `ValueError` there (`api_future_impl.py` 416-420), not retried.
    #[test]
    fn what_the_sampling_layer_retries() {
        let msg = || String::from("x");
        let rows: Vec<(Error, bool)> = vec![
            (Error::Connection { message: msg() }, true),
            (Error::Timeout { message: msg() }, true),
            (Error::FutureExpired { request_id: msg() }, true),
            (status(408, false), true),
            (status(409, false), true),
            (status(429, false), true),
            (status(500, false), true),
            (status(599, false), true),
            (status(400, false), false),
            (status(404, false), false),
            (status(600, false), false),
            (status(500, true), false),
            (status(429, true), false),
            (
                Error::RequestFailed {
                    message: msg(),
                    request_id: msg(),
                    category: crate::error::ErrorCategory::Server,
                },
                false,
            ),
            (Error::Aborted { message: msg() }, false),
            (Error::InvalidResponse { message: msg() }, false),
            (Error::Closed { message: msg() }, false),
        ];
        for (e, want) in rows {
            assert_eq!(sampling_retryable(&e), want, "{e:?}");
        }
    }

    #[test]
    fn handlers_are_shared_by_sampler_and_config_while_alive() {
        let all = RetryHandlers::default();
        let a = all.get("s1", SamplingRetryConfig::default(), 0.0);
        let b = all.get("s1", SamplingRetryConfig::default(), 0.0);
        assert!(Rc::ptr_eq(&a, &b));
        let other = SamplingRetryConfig {
            max_connections: Some(3),
            ..Default::default()
        };
        let c = all.get("s1", other, 0.0);
        let d = all.get("s2", SamplingRetryConfig::default(), 0.0);
        assert!(!Rc::ptr_eq(&a, &c) && !Rc::ptr_eq(&a, &d));
        assert_eq!(all.0.borrow().len(), 3);
        drop((a, b, c, d));
        let _e = all.get("s1", SamplingRetryConfig::default(), 0.0);
        assert_eq!(all.0.borrow().len(), 1, "dead handlers are dropped");
    }
}
