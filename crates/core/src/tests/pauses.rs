//! Queue-state warnings (Python's `QueueStateLogger` and `SamplingClient.
//! on_queue_state_change`): at most once a minute; training and model creation only once a
//! pause has lasted 15 minutes; the server's reason, else a default per state.

use std::cell::RefCell;
use std::rc::Rc;

use futures_executor::LocalPool;

use super::scripted::*;
use crate::future::{PauseLogger, QueueState};
use crate::options::LogLevel;

#[test]
fn pause_warnings_are_throttled_and_wait_out_the_grace_period() {
    let mut pool = LocalPool::new();
    let s = Scripted::new(&pool, server("{}", |_, _| json(404, "{}")));
    let logged = Rc::new(RefCell::new(Vec::<String>::new()));
    let sink = logged.clone();
    let mut o = opts();
    o.logger = Some(Rc::new(move |level: LogLevel, m: &str| {
        assert!(matches!(level, LogLevel::Warn));
        sink.borrow_mut().push(m.to_string());
    }));
    let h = pool
        .run_until(crate::session::Holder::connect(
            s.clone(),
            Rc::new(o),
            false,
        ))
        .unwrap();
    let at = |secs: f64| s.clock_ms.set(1_700_000_000_000.0 + secs * 1000.0);
    let take = || std::mem::take(&mut *logged.borrow_mut());

    let sampling = PauseLogger::sampling("samp-1");
    at(0.0);
    sampling.observe(&h, QueueState::PausedCapacity, None);
    at(30.0);
    sampling.observe(&h, QueueState::PausedCapacity, None);
    at(45.0);
    sampling.observe(&h, QueueState::Active, None);
    at(61.0);
    sampling.observe(&h, QueueState::PausedRateLimit, Some(""));
    assert_eq!(
        take(),
        [
            "Sampling is paused for sampler samp-1. Reason: Tinker backend is running short on capacity, please wait",
            "Sampling is paused for sampler samp-1. Reason: concurrent sampler weights limit hit",
        ]
    );

    let training = PauseLogger::new("Training", "m-1");
    at(1000.0);
    training.observe(&h, QueueState::PausedRateLimit, None);
    at(1899.0);
    training.observe(&h, QueueState::PausedRateLimit, None);
    assert!(take().is_empty(), "within the 15-minute grace period");
    at(1900.0);
    training.observe(&h, QueueState::PausedRateLimit, None);
    at(1950.0);
    training.observe(&h, QueueState::PausedRateLimit, None);
    assert_eq!(
        take(),
        ["Training for m-1 is paused. Reason: concurrent training clients rate limit hit."]
    );
    // A change of state starts the grace period again.
    at(2000.0);
    training.observe(&h, QueueState::PausedCapacity, Some("maintenance"));
    at(2899.0);
    training.observe(&h, QueueState::PausedCapacity, Some("maintenance"));
    assert!(take().is_empty());
    at(2900.0);
    training.observe(&h, QueueState::PausedCapacity, Some("maintenance"));
    assert_eq!(take(), ["Training for m-1 is paused. Reason: maintenance."]);
}

#[test]
fn a_paused_sample_warns_through_the_clients_logger() {
    let mut pool = LocalPool::new();
    let polls = std::cell::Cell::new(0);
    let s = Scripted::new(
        &pool,
        server("{}", move |r, _| {
            if r.url.ends_with("/asample") {
                return json(200, r#"{"request_id":"r-1","sample_sequence_ids":[]}"#);
            }
            polls.set(polls.get() + 1);
            if polls.get() == 1 {
                json(
                    200,
                    r#"{"type":"try_again","queue_state":"paused_capacity","queue_state_reason":"busy"}"#,
                )
            } else {
                proto(vec![])
            }
        }),
    );
    let logged = Rc::new(RefCell::new(Vec::<String>::new()));
    let sink = logged.clone();
    let mut o = opts();
    o.logger = Some(Rc::new(move |_: LogLevel, m: &str| {
        sink.borrow_mut().push(m.to_string())
    }));
    let h = pool
        .run_until(crate::session::Holder::connect(s.clone(), Rc::new(o), true))
        .unwrap();
    let sc = sampler(&mut pool, h);
    let req = crate::sampling::SampleRequest::new(
        crate::types::ModelInput::from_ints(vec![1, 2]),
        1,
        crate::types::SamplingParams::default(),
    );
    pool.run_until(sc.sample(req, crate::call::CallOptions::default()).unwrap())
        .unwrap();
    assert_eq!(sc.queue_state(), Some(QueueState::Active));
    assert_eq!(
        *logged.borrow(),
        ["Sampling is paused for sampler samp-1. Reason: busy"]
    );
}

/// A 402 at start-up (`client/config` or `dynamic_config`) fails the connection at once,
/// with the 402 (a `BillingError` in JS): no pause, no second request (Python fails at
/// once too; tests/differential/NOTES.md).
#[test]
fn a_402_at_start_up_fails_at_once() {
    for endpoint in ["client/config", "client/dynamic_config"] {
        let mut pool = LocalPool::new();
        let s = Scripted::new(&pool, move |r: &crate::platform::HttpRequest, _| {
            match r.url.split("/api/v1/").nth(1).unwrap_or("") {
                p if p == endpoint => json(402, r#"{"detail":"billing"}"#),
                "client/config" => json(200, "{}"),
                "client/dynamic_config" => json(200, "{}"),
                other => panic!("unexpected request {other}"),
            }
        });
        let r = pool.run_until(crate::session::Holder::connect(
            s.clone(),
            Rc::new(opts()),
            false,
        ));
        let e = r.err().expect("the connection fails");
        assert_eq!(e.status(), Some(402), "{endpoint}: {e}");
        assert!(
            s.sleeps.borrow().is_empty(),
            "{endpoint}: slept {:?}",
            s.sleeps.borrow()
        );
        let sent = s.paths().iter().filter(|p| p.ends_with(endpoint)).count();
        assert_eq!(sent, 1, "{endpoint}: sent {sent} times");
    }
}
