//! Per-call options: an abort token, a timeout, and what the call's own requests carry
//! (a retry count and extra headers). The token and the timeout are applied only where
//! stopping is safe (waiting for a turn, polling for a result, sleeping between
//! retries), never in the middle of a submission, so an aborted call never leaves
//! the server with a half-known request.

use std::future::Future;
use std::time::Duration;

use futures_util::future::{select, Either};

use crate::error::{Error, Result};
use crate::options::{check_headers, check_max_retries};
use crate::platform::Env;
use crate::sync::CancelToken;
use crate::types::InputError;

/// Options every SDK call accepts.
#[derive(Clone, Default, Debug)]
pub struct CallOptions {
    /// Aborts the call (JS `AbortSignal`).
    pub cancel: Option<CancelToken>,
    /// Gives up after this long.
    pub timeout: Option<Duration>,
    /// The HTTP-layer retries of the call's own requests (its submission, or its REST
    /// request), in place of the client's `max_retries`. An endpoint that is never
    /// retried stays so; the polls of its future are shared and keep the client's.
    pub max_retries: Option<u32>,
    /// Extra headers on the call's own requests (as `max_retries`).
    pub headers: Vec<(String, String)>,
    /// A sampling call sends once and fails with the sampler's 429 (`RateLimitError`)
    /// instead of backing off and sending again as Python does; it does not wait out
    /// the backoff another call's 429 started either. Other calls ignore it.
    pub reject_backpressure: bool,
}

impl CallOptions {
    /// Checks the options as the client's own are checked: `maxRetries` in range, each
    /// header sendable (the error names the field and the value).
    pub fn validate(&self) -> std::result::Result<(), InputError> {
        if let Some(n) = self.max_retries {
            check_max_retries(n, "maxRetries")?;
        }
        check_headers(&self.headers, "headers")
    }
}

/// A call's stop conditions, fixed when the call starts.
#[derive(Clone)]
pub struct Guard {
    env: Env,
    cancel: Option<CancelToken>,
    deadline_ms: Option<f64>,
    what: String,
    max_retries: Option<u32>,
    headers: std::rc::Rc<[(String, String)]>,
    reject_backpressure: bool,
}

impl Guard {
    /// Starts the clock for `what`.
    pub fn new(env: &Env, opts: &CallOptions, what: impl Into<String>) -> Self {
        Guard {
            env: env.clone(),
            cancel: opts.cancel.clone(),
            deadline_ms: opts
                .timeout
                .map(|t| env.now_ms() + t.as_secs_f64() * 1000.0),
            what: what.into(),
            max_retries: opts.max_retries,
            headers: opts.headers.clone().into(),
            reject_backpressure: opts.reject_backpressure,
        }
    }

    /// Whether backpressure fails the call (see [`CallOptions::reject_backpressure`]).
    pub fn rejects_backpressure(&self) -> bool {
        self.reject_backpressure
    }

    /// The retry count the call's own requests use instead of the client's, if set.
    pub fn max_retries(&self) -> Option<u32> {
        self.max_retries
    }

    /// The extra headers of the call's own requests.
    pub fn headers(&self) -> &[(String, String)] {
        &self.headers
    }

    /// Fails now if already aborted or past the deadline.
    pub fn check(&self) -> Result<()> {
        if self.cancel.as_ref().is_some_and(CancelToken::is_cancelled) {
            return Err(self.aborted());
        }
        if self.deadline_ms.is_some_and(|d| self.env.now_ms() >= d) {
            return Err(self.timed_out());
        }
        Ok(())
    }

    /// The error for an abort.
    pub fn aborted(&self) -> Error {
        Error::Aborted {
            message: format!("{} was aborted", self.what),
        }
    }

    fn timed_out(&self) -> Error {
        Error::Timeout {
            message: format!("{} timed out", self.what),
        }
    }

    /// Sleeps `d` unless the call is aborted or times out first.
    pub async fn sleep(&self, d: Duration) -> Result<()> {
        self.run(async {
            self.env.sleep(d).await;
            Ok(())
        })
        .await
    }

    /// Runs `fut` unless the call is aborted or times out first (then `fut` is dropped).
    pub async fn run<T>(&self, fut: impl Future<Output = Result<T>>) -> Result<T> {
        // Generic only in this thin wrapper; the racing logic is one type-erased copy
        // (each instantiation of it cost kilobytes of wasm).
        let slot = std::cell::RefCell::new(None);
        let erased = async {
            *slot.borrow_mut() = Some(fut.await?);
            Ok(())
        };
        self.run_erased(Box::pin(erased)).await?;
        Ok(slot
            .into_inner()
            .expect("run_erased returns Ok only after the future completed"))
    }

    async fn run_erased(
        &self,
        fut: futures_util::future::LocalBoxFuture<'_, Result<()>>,
    ) -> Result<()> {
        self.check()?;
        let cancelled = async {
            match &self.cancel {
                Some(c) => c.cancelled().await,
                None => std::future::pending().await,
            }
        };
        let expired = async {
            match self.deadline_ms {
                Some(d) => {
                    self.env
                        .sleep(crate::time::seconds(
                            ((d - self.env.now_ms()) / 1000.0).max(0.0),
                        ))
                        .await
                }
                None => std::future::pending().await,
            }
        };
        futures_util::pin_mut!(cancelled, expired);
        match select(fut, select(cancelled, expired)).await {
            Either::Left((r, _)) => r,
            Either::Right((Either::Left(_), _)) => Err(self.aborted()),
            Either::Right((Either::Right(_), _)) => Err(self.timed_out()),
        }
    }
}
