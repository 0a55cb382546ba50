//! Admission control: what a holder's clients may send or fetch at once, as the Python
//! SDK 0.38's `InternalClientHolder` limits it.
//!
//! * Sampling ([`SampleAdmission`]): at most 400 submissions in flight, a budget of
//!   prompt bytes, and HTTP 429 as backpressure: every sampling client of the holder
//!   waits until the backoff deadline (1 s, or 5 s for prompts over 128 KiB), and for
//!   10 s after a backoff dispatch is throttled harder (10 more slots, 20× the bytes).
//! * Byte budgets ([`ByteBudgets`]): forward/backward request bytes, and the bytes of
//!   large results announced by `complete_metadata`.
//!
//! The decisions are the pure functions at the top; the state and its waits follow.

use std::cell::Cell;
use std::time::Duration;

use crate::call::Guard;
use crate::error::Result;
use crate::sync::{BytesPermit, BytesSemaphore, Permit, Semaphore};

/// Sampling submissions in flight per holder (Python `_sample_dispatch_semaphore`).
const DISPATCH_SLOTS: usize = 400;
/// Further slots while recently backed off (Python `_sample_dispatch_throttled_semaphore`).
const THROTTLED_SLOTS: usize = 10;
/// How long after a backoff dispatch stays throttled, in seconds.
const THROTTLE_SECS: f64 = 10.0;
/// Prompts up to this size back off 1 s on a 429, larger ones 5 s.
const SMALL_PROMPT_BYTES: i64 = 128 * 1024;
/// How long a submission waits between checks of the backoff deadline.
const BACKOFF_POLL: Duration = Duration::from_secs(1);

/// Whether a backoff was requested recently: `now − until < 10` s, which includes a
/// deadline still ahead (Python `_sample_backoff_requested_recently`).
pub fn recently_backed_off(now_secs: f64, until: Option<f64>) -> bool {
    until.is_some_and(|u| now_secs - u < THROTTLE_SECS)
}

/// The prompt bytes a submission reserves: its estimate, 20× while recently backed off
/// (Python `_sample_dispatch_bytes_rate_limit`).
pub fn dispatch_bytes(estimated: i64, recently: bool) -> i64 {
    if recently {
        estimated * 20
    } else {
        estimated
    }
}

/// How long every client backs off after a 429: 1 s, or 5 s for prompts over 128 KiB
/// (Python `_sample_async_impl`).
pub fn backoff_secs(estimated: i64) -> f64 {
    if estimated <= SMALL_PROMPT_BYTES {
        1.0
    } else {
        5.0
    }
}

/// Whether a submission must wait before sending: the backoff deadline is still ahead.
pub fn in_backoff(now_secs: f64, until: Option<f64>) -> bool {
    until.is_some_and(|u| now_secs < u)
}

/// The sampling admission state of one holder, shared by all its sampling clients.
pub struct SampleAdmission {
    dispatch: Semaphore,
    throttle: Semaphore,
    bytes: BytesSemaphore,
    /// The backoff deadline (seconds since the epoch) of the last 429.
    backoff_until: Cell<Option<f64>>,
}

/// What an admitted submission holds until it is submitted.
pub struct Admitted {
    _dispatch: Permit,
    _throttle: Option<Permit>,
    _bytes: BytesPermit,
}

impl SampleAdmission {
    /// Admission with a budget of `max_bytes` prompt bytes (the server's
    /// `sample_dispatch_bytes_semaphore_size`).
    pub fn new(max_bytes: i64) -> Self {
        SampleAdmission {
            dispatch: Semaphore::new(DISPATCH_SLOTS),
            throttle: Semaphore::new(THROTTLED_SLOTS),
            bytes: BytesSemaphore::new(max_bytes),
            backoff_until: Cell::new(None),
        }
    }

    /// Waits for a dispatch slot, a throttled slot while recently backed off, then the
    /// prompt's bytes (Python `sample_dispatch_rate_limit`). Each "recently" is judged
    /// when its wait starts, as in Python. `now` reads the clock.
    pub async fn admit(
        &self,
        guard: &Guard,
        now: &dyn Fn() -> f64,
        estimated: i64,
    ) -> Result<Admitted> {
        let dispatch = guard
            .run(async { Ok(self.dispatch.acquire().await) })
            .await?;
        let throttle = if self.recently(now) {
            Some(
                guard
                    .run(async { Ok(self.throttle.acquire().await) })
                    .await?,
            )
        } else {
            None
        };
        let bytes = dispatch_bytes(estimated, self.recently(now));
        let bytes = guard
            .run(async { Ok(self.bytes.acquire(bytes).await) })
            .await?;
        Ok(Admitted {
            _dispatch: dispatch,
            _throttle: throttle,
            _bytes: bytes,
        })
    }

    /// Whether a backoff was requested recently (the clock is read only after one).
    fn recently(&self, now: &dyn Fn() -> f64) -> bool {
        let until = self.backoff_until.get();
        until.is_some() && recently_backed_off(now(), until)
    }

    /// How long to wait before checking again, while the backoff deadline is ahead
    /// (the clock is read only after a backoff).
    pub fn backoff_wait(&self, now: &dyn Fn() -> f64) -> Option<Duration> {
        let until = self.backoff_until.get();
        (until.is_some() && in_backoff(now(), until)).then_some(BACKOFF_POLL)
    }

    /// Records a 429 (backpressure) for a prompt of `estimated` bytes.
    pub fn back_off(&self, now_secs: f64, estimated: i64) {
        let until = now_secs + backoff_secs(estimated);
        self.backoff_until.set(Some(until));
    }
}

/// The byte budgets of a holder: forward/backward request bytes in flight, and the
/// bytes of large results being fetched (Python `_fwdbwd_dispatch_bytes_semaphore`,
/// `_inflight_response_bytes_semaphore`).
pub struct ByteBudgets {
    /// Forward/backward request bytes (the chunks' estimates).
    pub fwdbwd: BytesSemaphore,
    /// Result payload bytes announced by `complete_metadata`.
    pub inflight: BytesSemaphore,
}

impl ByteBudgets {
    /// Budgets of the given sizes (the server's flags).
    pub fn new(fwdbwd_bytes: i64, inflight_bytes: i64) -> Self {
        ByteBudgets {
            fwdbwd: BytesSemaphore::new(fwdbwd_bytes),
            inflight: BytesSemaphore::new(inflight_bytes),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Python `internal_client_holder.py` 537-541: `monotonic() - backoff_until < 10`.
    #[test]
    fn recent_backoff_is_within_ten_seconds_of_the_deadline() {
        let rows = [
            // (now, until, recently)
            (100.0, None, false),       // never backed off
            (100.0, Some(101.0), true), // deadline ahead: negative difference
            (100.0, Some(100.0), true),
            (109.9, Some(100.0), true),
            (110.0, Some(100.0), false), // exactly 10 s: not < 10
            (500.0, Some(100.0), false),
        ];
        for (now, until, want) in rows {
            assert_eq!(recently_backed_off(now, until), want, "{now} {until:?}");
        }
    }

    /// Python 544-550 (`bytes *= 20` when recent) and 416 (`1 if estimated_bytes_count
    /// <= 128 * 1024 else 5`).
    #[test]
    fn byte_reservations_and_backoff_lengths() {
        assert_eq!(dispatch_bytes(1000, false), 1000);
        assert_eq!(dispatch_bytes(1000, true), 20_000);
        assert_eq!(backoff_secs(0), 1.0);
        assert_eq!(backoff_secs(128 * 1024), 1.0);
        assert_eq!(backoff_secs(128 * 1024 + 1), 5.0);
    }

    /// Python `sampling_client.py` 392-397: sleep while `monotonic() < backoff_until`.
    #[test]
    fn submissions_wait_while_the_deadline_is_ahead() {
        assert!(!in_backoff(100.0, None));
        assert!(in_backoff(100.0, Some(100.5)));
        assert!(!in_backoff(100.5, Some(100.5)));
        let a = SampleAdmission::new(1000);
        let unread = || -> f64 { panic!("the clock is read only after a backoff") };
        assert_eq!(a.backoff_wait(&unread), None);
        assert!(!a.recently(&unread));
        a.back_off(10.0, 200 * 1024);
        assert_eq!(a.backoff_wait(&|| 14.9), Some(Duration::from_secs(1)));
        assert_eq!(a.backoff_wait(&|| 15.0), None);
        assert!(a.recently(&|| 24.9) && !a.recently(&|| 25.0));
    }
}
