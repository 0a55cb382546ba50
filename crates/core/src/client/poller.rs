//! Session-wide batched polling (`POST /api/v1/retrieve_futures`), as the Python SDK
//! 0.38's `SessionFuturesPoller` does it when the server sets
//! `sample_use_retrieve_futures`: one long poll per (sampling session, clone) reports
//! which requests completed; each sample waits for its completion here, then fetches
//! its result with one `retrieve_future`. Retrieved ids are acknowledged on the next
//! poll; a poll that only acknowledges asks the server to answer at once.

use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

use crate::endpoints;
use crate::error::{Error, Result};
use crate::http::Req;
use crate::json;
use crate::json::{Fields, FromJson, Value};
use crate::map::{SortedSet, StrMap};
use crate::retry::BILLING_PAUSE_SLEEP;
use crate::session::Holder;
use crate::sync::Event;

/// Bare 400s retried before polling fails (Python `_MAX_BAD_REQUEST_RETRIES`).
const MAX_BAD_REQUEST_RETRIES: u32 = 3;
/// The wait after a transient failure (Python `asyncio.sleep(1)`).
const RETRY_WAIT: Duration = Duration::from_secs(1);
/// The client-side timeout of a poll that only acknowledges (Python
/// `_ACK_POLL_HTTP_TIMEOUT_SEC`; the long poll's 45 s is the endpoint's).
const ACK_POLL_TIMEOUT: Duration = Duration::from_secs(5);

/// What the loop does after a poll failed (Python `session_futures_poller.py` 178-213).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorStep {
    /// Poll again after this wait.
    Wait(Duration),
    /// Polling fails for good: every waiter fails.
    Fail,
}

/// The step after a failed poll: HTTP 402 pauses 5 s while the holder's billing window
/// allows (`billing_pause`, asked only for a 402), transient failures wait 1 s, a bare
/// 400 waits 1 s up to 3 times in a row, anything else is final.
pub fn after_error(
    e: &Error,
    billing_pause: impl FnOnce() -> bool,
    bad_requests: &mut u32,
) -> ErrorStep {
    if e.status() == Some(402) && billing_pause() {
        return ErrorStep::Wait(BILLING_PAUSE_SLEEP);
    }
    if e.is_retryable() {
        return ErrorStep::Wait(RETRY_WAIT);
    }
    if e.status() == Some(400) && *bad_requests < MAX_BAD_REQUEST_RETRIES {
        *bad_requests += 1;
        return ErrorStep::Wait(RETRY_WAIT);
    }
    ErrorStep::Fail
}

/// One poll to send.
struct NextPoll {
    cursor: i64,
    retrieved: Vec<String>,
    /// Nobody waits: the poll only acknowledges, and the server answers at once.
    ack_only: bool,
}

/// A completed request, as the session poller reports it.
#[derive(Debug, Clone)]
pub struct Completion {
    /// `finished` (or another terminal state).
    pub state: String,
    /// The request.
    pub request_id: String,
    /// The result's size, when finished (skips the metadata round trip).
    pub response_payload_uncompressed_size: Option<u64>,
}

/// A `retrieve_futures` answer.
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

/// What the poller knows: the cursor, completions not yet consumed, who waits.
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

/// One background poller per (sampling session, clone) (Python `SessionFuturesPoller`).
pub struct SessionPoller {
    holder: Rc<Holder>,
    sampling_session_id: String,
    clone_id: u64,
    state: RefCell<PollerState>,
}

impl PollerState {
    /// The next poll, or `None` when polling stops (marked not running): nobody waits
    /// and nothing is left to report or acknowledge.
    fn next_poll(&mut self) -> Option<NextPoll> {
        let nothing_to_ack = self.cursor <= self.acked && self.retrieved.is_empty();
        if nothing_to_ack && self.waiters.is_empty() {
            self.running = false;
            return None;
        }
        Some(NextPoll {
            cursor: self.cursor,
            retrieved: self.retrieved.iter().cloned().collect(),
            ack_only: self.waiters.is_empty(),
        })
    }

    /// Records an answered poll (Python lines 219-233): its acknowledgements, the new
    /// cursor, and the completions, waking their waiters; a completion nobody waits for
    /// any more is reported retrieved at once so the server can drop it.
    fn apply(&mut self, poll: &NextPoll, r: FuturesResponse) {
        for id in &poll.retrieved {
            self.retrieved.remove(id);
        }
        self.acked = self.acked.max(poll.cursor);
        self.cursor = r.cursor;
        for c in r.completions {
            if self.abandoned.remove(&c.request_id) {
                self.retrieved.insert(c.request_id.clone());
                continue;
            }
            let id = c.request_id.clone();
            self.completions.insert(id.clone(), c);
            if let Some(e) = self.waiters.remove(&id) {
                e.set();
            }
        }
    }

    /// Stops polling for good: every waiter wakes to `failure` (Python `_fail`).
    fn fail(&mut self, failure: Error) {
        self.failure = Some(failure);
        self.running = false;
        for (_, w) in self.waiters.drain() {
            w.set();
        }
    }
}

impl SessionPoller {
    fn ensure_running(self: &Rc<Self>) {
        if !self.state.borrow().running {
            self.state.borrow_mut().running = true;
            let me = self.clone();
            self.holder
                .env()
                .spawn(Box::pin(async move { me.poll_loop().await }));
        }
    }

    /// Waits until `request_id` completes (Python `wait_for`): its completion, or the
    /// failure that stopped polling. Dropped while waiting, its completion is reported
    /// retrieved when it arrives.
    pub async fn wait_for(self: &Rc<Self>, request_id: &str) -> Result<Completion> {
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

    /// Reports `request_id`'s result retrieved on the next poll (Python `mark_retrieved`).
    pub fn mark_retrieved(self: &Rc<Self>, request_id: &str) {
        self.state
            .borrow_mut()
            .retrieved
            .insert(request_id.to_string());
        self.ensure_running();
    }

    /// A client's poller on `sampling_session_id`, clone `clone_id` (idle until a
    /// request waits).
    pub fn new(holder: Rc<Holder>, sampling_session_id: String, clone_id: u64) -> Self {
        SessionPoller {
            holder,
            sampling_session_id,
            clone_id,
            state: RefCell::new(PollerState::default()),
        }
    }

    /// The `retrieve_futures` request of `poll`.
    fn request(&self, poll: &NextPoll) -> Req {
        let mut body = json!({
            "target": { "type": "sampling_session", "sampling_session_id": self.sampling_session_id, "cloned_sampler_id": self.clone_id },
            "prev_cursor": poll.cursor,
            "retrieved_request_ids": poll.retrieved,
        });
        if poll.ack_only {
            body["timeout"] = 0.0.into(); // Python sends the float 0.0
        }
        let req = Req::to(&endpoints::RETRIEVE_FUTURES).json(&body);
        if poll.ack_only {
            req.timeout(ACK_POLL_TIMEOUT)
        } else {
            req
        }
    }

    /// Polls while anyone waits or anything is left to acknowledge (Python
    /// `_poll_loop`). When the holder closes, the poll in flight (or the wait before the
    /// next) is cancelled and polling ends without another request: Python's holder
    /// cancels its poller tasks (`lib/internal_client_holder.py:915-918`) after marking
    /// itself closed (`_begin_close`, 881-889), so the poller's final ack-only attempt
    /// (`session_futures_poller.py:174-181`) is refused by `aclient` (865-866) before
    /// anything is sent. Waiters then fail with [`Error::Closed`].
    async fn poll_loop(self: Rc<Self>) {
        let h = self.holder.clone();
        let stop = h.stop_token().clone();
        let mut bad_requests = 0u32;
        loop {
            if stop.is_cancelled() {
                return self.closed();
            }
            let Some(poll) = self.state.borrow_mut().next_poll() else {
                return;
            };
            let sent = h.http().json::<FuturesResponse>(self.request(&poll));
            let Some(result) = crate::sync::unless_cancelled(sent, &stop).await else {
                return self.closed();
            };
            match result {
                Ok(r) => {
                    bad_requests = 0;
                    self.state.borrow_mut().apply(&poll, r);
                }
                Err(e) => {
                    match after_error(&e, || h.should_pause_on_billing(402), &mut bad_requests) {
                        ErrorStep::Wait(d) => {
                            if crate::session::sleep_or_stop(h.env(), d, &stop).await {
                                return self.closed();
                            }
                        }
                        ErrorStep::Fail => {
                            let failure = self.failure(e);
                            self.state.borrow_mut().fail(failure);
                            return;
                        }
                    }
                }
            }
        }
    }

    /// Polling ends because the holder closed: waiters fail.
    fn closed(&self) {
        let message = format!(
            "the client was closed while waiting for results of sampling session {}",
            self.sampling_session_id
        );
        self.state.borrow_mut().fail(Error::Closed { message });
    }

    /// What every waiter fails with once polling failed for good: a final status (the
    /// sampling retry layer does not retry it, as Python's `TinkerError` there), or an
    /// invalid response.
    fn failure(&self, e: Error) -> Error {
        let message = format!(
            "retrieve_futures polling failed for sampling session {} (clone {}): {e}",
            self.sampling_session_id, self.clone_id
        );
        match e {
            Error::Status(mut st) => {
                st.message = message;
                st.final_poll = true;
                Error::Status(st)
            }
            _ => Error::InvalidResponse { message },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::StatusError;
    use crate::platform::Headers;

    fn status(code: u16) -> Error {
        Error::Status(Box::new(StatusError {
            status: code,
            message: String::new(),
            body: None,
            headers: Headers::default(),
            request_id: None,
            final_poll: false,
        }))
    }

    /// Expected values from Python `session_futures_poller.py`: 402 sleeps 5 s while
    /// `_should_pause_on_billing` (lines 185-191), `_is_retryable_exception` sleeps 1 s
    /// (193-195: timeouts, connection errors, 408/409/429/5xx), a 400 sleeps 1 s while
    /// `bad_request_retries < 3` (197-204), anything else fails (206-213).
    #[test]
    fn what_a_failed_poll_does() {
        let conn = || Error::Connection {
            message: "reset".into(),
        };
        let rows: Vec<(Error, bool, u32, ErrorStep, u32)> = vec![
            // (error, billing window open, 400s so far, step, 400s after)
            (
                status(402),
                true,
                0,
                ErrorStep::Wait(Duration::from_secs(5)),
                0,
            ),
            (status(402), false, 0, ErrorStep::Fail, 0),
            (conn(), false, 0, ErrorStep::Wait(Duration::from_secs(1)), 0),
            (
                status(408),
                false,
                2,
                ErrorStep::Wait(Duration::from_secs(1)),
                2,
            ),
            (
                status(409),
                false,
                0,
                ErrorStep::Wait(Duration::from_secs(1)),
                0,
            ),
            (
                status(429),
                false,
                0,
                ErrorStep::Wait(Duration::from_secs(1)),
                0,
            ),
            (
                status(503),
                false,
                0,
                ErrorStep::Wait(Duration::from_secs(1)),
                0,
            ),
            (
                status(400),
                false,
                0,
                ErrorStep::Wait(Duration::from_secs(1)),
                1,
            ),
            (
                status(400),
                false,
                2,
                ErrorStep::Wait(Duration::from_secs(1)),
                3,
            ),
            (status(400), false, 3, ErrorStep::Fail, 3),
            (status(404), false, 0, ErrorStep::Fail, 0),
            (
                Error::InvalidResponse {
                    message: "x".into(),
                },
                false,
                0,
                ErrorStep::Fail,
                0,
            ),
        ];
        for (e, window, before, want, after) in rows {
            let mut bad = before;
            let asked = std::cell::Cell::new(false);
            let pause = || {
                asked.set(true);
                window
            };
            assert_eq!(after_error(&e, pause, &mut bad), want, "{e:?}");
            assert_eq!(bad, after, "{e:?}");
            assert_eq!(
                asked.get(),
                e.status() == Some(402),
                "the window is asked about a 402 only"
            );
        }
    }
}
