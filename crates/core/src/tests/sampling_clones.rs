//! Clients attached to an existing sampler (`ServiceClient.samplingClient`) are clones of
//! it, as Python's restored clients: their seq ids start at 1e9 × clone id, so they never
//! repeat the creator's (clone 0), which the server would take for retries of the
//! creator's requests. The clone id is allocated by `join_sampling_session`, once, before
//! the first request, when the server sets `sample_join_sampling_session`, else random.

use futures_executor::LocalPool;

use super::scripted::*;
use crate::call::CallOptions;
use crate::sampling::{SamplingClient, SamplingOptions};
use crate::types::ModelInput;

/// Every asample is refused (400, not retried), so each call makes exactly one.
fn refuse_samples(
    r: &crate::platform::HttpRequest,
    _: usize,
) -> Result<crate::platform::HttpResponse, crate::platform::TransportError> {
    if r.url.ends_with("/join_sampling_session") {
        json(
            200,
            r#"{"client_counter":3,"type":"join_sampling_session"}"#,
        )
    } else {
        json(400, r#"{"detail":"refused"}"#)
    }
}

fn asample_seq_ids(s: &Scripted) -> Vec<i64> {
    s.requests
        .borrow()
        .iter()
        .filter(|r| r.url.ends_with("/asample"))
        .map(|r| body_json(r)["seq_id"].as_i64().expect("seq_id"))
        .collect()
}

fn run_three(pool: &mut LocalPool, sc: &SamplingClient) {
    let calls: Vec<_> = (0..3)
        .map(|_| sc.sample(request(), CallOptions::default()).unwrap())
        .collect();
    for r in pool.run_until(futures_util::future::join_all(calls)) {
        assert_eq!(r.expect_err("refused").status(), Some(400));
    }
}

#[test]
fn an_attached_client_joins_once_and_numbers_its_requests_in_its_block() {
    let mut pool = LocalPool::new();
    let s = Scripted::new(
        &pool,
        server(r#"{"sample_join_sampling_session":true}"#, refuse_samples),
    );
    let h = connect(&mut pool, &s, true);
    let sc = pool
        .run_until(SamplingClient::attach(
            h,
            "samp-1".into(),
            Some("Qwen/Qwen3-8B".into()),
            SamplingOptions::default(),
            "test",
        ))
        .unwrap();
    run_three(&mut pool, &sc);
    run_three(&mut pool, &sc);
    let joins: Vec<_> = s
        .requests
        .borrow()
        .iter()
        .filter(|r| r.url.ends_with("/join_sampling_session"))
        .map(body_json)
        .collect();
    assert_eq!(
        joins,
        vec![serde_json::json!({"sampling_session_id": "samp-1", "type": "join_sampling_session"})],
        "one join for concurrent first calls, none after"
    );
    let base = 3_000_000_000;
    assert_eq!(asample_seq_ids(&s), (base..base + 6).collect::<Vec<_>>());
}

#[test]
fn without_the_flag_an_attached_client_draws_a_clone_id_and_the_creator_keeps_zero() {
    let mut pool = LocalPool::new();
    let s = Scripted::new(&pool, server("{}", refuse_samples));
    let h = connect(&mut pool, &s, true);
    let open = |pool: &mut LocalPool, attach: bool| {
        let f = if attach {
            futures_util::future::Either::Left(SamplingClient::attach(
                h.clone(),
                "samp-1".into(),
                Some("Qwen/Qwen3-8B".into()),
                SamplingOptions::default(),
                "test",
            ))
        } else {
            futures_util::future::Either::Right(SamplingClient::connect(
                h.clone(),
                "samp-1".into(),
                Some("Qwen/Qwen3-8B".into()),
                SamplingOptions::default(),
                "test",
            ))
        };
        pool.run_until(f).unwrap()
    };
    let creator = open(&mut pool, false);
    let (a, b) = (open(&mut pool, true), open(&mut pool, true));
    for sc in [&creator, &a, &b] {
        run_three(&mut pool, sc);
    }
    let ids = asample_seq_ids(&s);
    assert_eq!(&ids[..3], &[0, 1, 2], "the creator is clone 0");
    let (ca, cb) = (ids[3] / 1_000_000_000, ids[6] / 1_000_000_000);
    assert!((1..=1_000_000_000).contains(&ca) && (1..=1_000_000_000).contains(&cb));
    assert_ne!(ca, cb, "two attached clients are different clones");
    assert_eq!(
        &ids[3..6],
        &[
            ca * 1_000_000_000,
            ca * 1_000_000_000 + 1,
            ca * 1_000_000_000 + 2
        ]
    );
    assert_eq!(
        &ids[6..],
        &[
            cb * 1_000_000_000,
            cb * 1_000_000_000 + 1,
            cb * 1_000_000_000 + 2
        ]
    );
    assert!(!s
        .paths()
        .iter()
        .any(|p| p.contains("join_sampling_session")));
}

/// The server's `sample_no_retries` bypasses the sampling retry handler for `sample` only;
/// `compute_logprobs` always goes through it (as in Python).
#[test]
fn sample_no_retries_covers_sample_but_not_compute_logprobs() {
    let mut pool = LocalPool::new();
    let polls = std::cell::Cell::new(0);
    let s = Scripted::new(
        &pool,
        server(r#"{"sample_no_retries":true}"#, move |r, _| {
            if r.url.ends_with("/asample") {
                json(200, r#"{"request_id":"r-1","sample_sequence_ids":[]}"#)
            } else if r.url.ends_with("/retrieve_future") {
                // The first poll of each call: the future expired (410), which the retry
                // handler retries with a new submission.
                polls.set(polls.get() + 1);
                if polls.get() <= 2 {
                    json(410, r#"{"detail":"expired"}"#)
                } else {
                    proto(vec![])
                }
            } else {
                json(404, r#"{"detail":"unexpected"}"#)
            }
        }),
    );
    let h = connect(&mut pool, &s, true);
    let sc = sampler(&mut pool, h);
    let asamples = |s: &Scripted| asample_seq_ids(s).len();
    let r = pool.run_until(sc.sample(request(), CallOptions::default()).unwrap());
    assert!(
        matches!(r, Err(crate::error::Error::FutureExpired { .. })),
        "{r:?}"
    );
    assert_eq!(asamples(&s), 1, "sample: not retried");
    let r = pool.run_until(
        sc.compute_logprobs(
            ModelInput::from_ints(vec![1, 2]),
            None,
            CallOptions::default(),
        )
        .unwrap(),
    );
    assert!(r.is_ok(), "{r:?}");
    assert_eq!(
        asamples(&s),
        3,
        "compute_logprobs: retried once after the 410"
    );
}

/// A result poll answered with a status Python's polling treats as final (here 409) fails
/// the sample; the retry handler does not submit it again (a 409 on submission would be).
#[test]
fn a_final_poll_status_is_not_retried_by_the_sampling_handler() {
    let mut pool = LocalPool::new();
    let s = Scripted::new(
        &pool,
        server("{}", |r, _| {
            if r.url.ends_with("/asample") {
                json(200, r#"{"request_id":"r-1","sample_sequence_ids":[]}"#)
            } else {
                json(409, r#"{"detail":"conflict"}"#)
            }
        }),
    );
    let h = connect(&mut pool, &s, true);
    let sc = sampler(&mut pool, h);
    let r = pool.run_until(sc.sample(request(), CallOptions::default()).unwrap());
    assert_eq!(r.expect_err("final").status(), Some(409));
    assert_eq!(asample_seq_ids(&s), vec![0], "submitted once");
}

/// When the session-wide poller (`sample_use_retrieve_futures`) fails for good, the sample
/// fails with its error (as Python's `TinkerError` there); it is not submitted again.
#[test]
fn a_failed_futures_poller_fails_the_sample_without_resubmitting() {
    let mut pool = LocalPool::new();
    let s = Scripted::new(
        &pool,
        server(r#"{"sample_use_retrieve_futures":true}"#, |r, _| {
            if r.url.ends_with("/asample") {
                json(200, r#"{"request_id":"r-1","sample_sequence_ids":[]}"#)
            } else {
                json(403, r#"{"detail":"forbidden"}"#)
            }
        }),
    );
    let h = connect(&mut pool, &s, true);
    let sc = sampler(&mut pool, h);
    let e = pool
        .run_until(sc.sample(request(), CallOptions::default()).unwrap())
        .expect_err("the poller failed");
    assert_eq!(e.status(), Some(403));
    assert!(
        e.to_string()
            .contains("retrieve_futures polling failed for sampling session samp-1"),
        "{e}"
    );
    assert_eq!(asample_seq_ids(&s), vec![0], "submitted once");
}

/// Closing while the session poller's long poll is in flight cancels that poll and sends
/// nothing after the session's finish: Python's holder marks itself closed, then cancels
/// its poller tasks (`lib/internal_client_holder.py:881-889, 915-918`), whose final
/// ack-only attempt `aclient` refuses (865-866, `session_futures_poller.py:174-181`).
/// close() does not wait for the long poll; the waiting sample fails as closed.
#[test]
fn closing_cancels_the_futures_long_poll_and_sends_nothing_after_the_finish() {
    use futures_util::task::LocalSpawnExt;
    use std::cell::RefCell;
    use std::rc::Rc;
    let mut pool = LocalPool::new();
    let s = Scripted::new(
        &pool,
        server(r#"{"sample_use_retrieve_futures":true}"#, |r, _| {
            if r.url.ends_with("/asample") {
                json(200, r#"{"request_id":"r-1","sample_sequence_ids":[]}"#)
            } else {
                json(200, "{}")
            }
        }),
    );
    // The long poll never answers unless cancelled.
    let never = crate::sync::Event::new();
    s.gates
        .borrow_mut()
        .push(("/retrieve_futures".into(), never.clone()));
    let h = connect(&mut pool, &s, true);
    // No stuck detection: the scripted clock jumps over its 2 h at once.
    let options = SamplingOptions {
        retry: Some(crate::retry::SamplingRetryConfig {
            enable_stuck_detection: false,
            ..Default::default()
        }),
        ..Default::default()
    };
    let sc = pool
        .run_until(SamplingClient::connect(
            h.clone(),
            "samp-1".into(),
            Some("Qwen/Qwen3-8B".into()),
            options,
            "test",
        ))
        .unwrap();
    let sampled = Rc::new(RefCell::new(None));
    let (out, fut) = (
        sampled.clone(),
        sc.sample(request(), CallOptions::default()).unwrap(),
    );
    pool.spawner()
        .spawn_local(async move { *out.borrow_mut() = Some(fut.await) })
        .unwrap();
    pool.run_until_stalled();
    assert_eq!(
        s.paths().last().map(String::as_str),
        Some("retrieve_futures")
    );
    let closed = Rc::new(RefCell::new(None));
    let (out, h2) = (closed.clone(), h.clone());
    pool.spawner()
        .spawn_local(async move {
            *out.borrow_mut() = Some(h2.close(crate::session::FinishStatus::Success, None).await)
        })
        .unwrap();
    pool.run_until_stalled();
    let paths = s.paths();
    let poll = paths.iter().position(|p| p == "retrieve_futures").unwrap();
    assert_eq!(paths[poll + 1..], ["sessions/sess-1/finish"], "{paths:?}");
    assert!(
        matches!(*closed.borrow(), Some(Ok(()))),
        "close returned without the long poll's answer"
    );
    let e = sampled
        .borrow_mut()
        .take()
        .expect("the sample ended")
        .expect_err("closed");
    assert!(matches!(e, crate::error::Error::Closed { .. }), "{e:?}");
    assert!(!never.is_set());
}
