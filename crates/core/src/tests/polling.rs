use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

use futures_executor::LocalPool;

use super::scripted::*;
use crate::error::{Error, ErrorCategory};
use crate::future::{retrieve, Payload, Poll, QueueState};
use crate::platform::TransportError;

fn poll(proto: bool) -> Poll<'static> {
    Poll {
        request_id: "req-1",
        request_type: if proto { "Sample" } else { "OptimStep" },
        proto,
        submit_roundtrip_secs: 0.25,
        sdk_method: Some("T.m"),
        observer: None,
        known_payload_size: None,
    }
}

/// Answers the polls of one future from a list of scripted replies (in order).
fn scripted_polls(
    pool: &mut LocalPool,
    replies: Vec<Result<crate::platform::HttpResponse, TransportError>>,
) -> Rc<Scripted> {
    let replies = RefCell::new(replies.into_iter());
    let s = Scripted::new(
        pool,
        server("{}", move |_, _| {
            replies.borrow_mut().next().expect("no more scripted polls")
        }),
    );
    s
}

fn polls(s: &Scripted) -> Vec<crate::platform::HttpRequest> {
    s.requests
        .borrow()
        .iter()
        .filter(|r| r.url.ends_with("retrieve_future"))
        .cloned()
        .collect()
}

#[test]
fn try_again_repolls_at_once_and_reports_queue_state() {
    let mut pool = LocalPool::new();
    let s = scripted_polls(
        &mut pool,
        vec![
            json(
                200,
                r#"{"type":"try_again","request_id":"req-1","queue_state":"paused_capacity"}"#,
            ),
            json(200, r#"{"type":"try_again","request_id":"req-1"}"#),
            json(200, r#"{"metrics":{}}"#),
        ],
    );
    let h = connect(&mut pool, &s, false);
    let seen = RefCell::new(vec![]);
    let observer =
        |q: QueueState, r: Option<&str>| seen.borrow_mut().push((q, r.map(str::to_string)));
    let r = pool
        .run_until(retrieve(
            &h,
            Poll {
                observer: Some(&observer),
                ..poll(false)
            },
        ))
        .unwrap();
    assert!(matches!(r, Payload::Json(v) if v["metrics"].is_object()));
    assert_eq!(
        *seen.borrow(),
        vec![
            (QueueState::PausedCapacity, None),
            (QueueState::Active, None)
        ],
        "an unknown state without reason is not reported"
    );
    let p = polls(&s);
    assert_eq!(
        p.iter()
            .map(|r| r
                .headers
                .get("X-Tinker-Request-Iteration")
                .unwrap()
                .to_string())
            .collect::<Vec<_>>(),
        ["0", "1", "2"]
    );
    assert_eq!(
        p[0].headers.get("X-Tinker-Create-Promise-Roundtrip-Time"),
        Some("0.25")
    );
    assert!(p[1]
        .headers
        .get("X-Tinker-Create-Promise-Roundtrip-Time")
        .is_none());
    assert_eq!(p[0].headers.get("X-Tinker-Request-Type"), Some("OptimStep"));
    assert_eq!(p[0].headers.get("x-stainless-retry-count"), Some("0"));
    assert_eq!(
        body_json(&p[0]),
        serde_json::json!({"request_id": "req-1", "allow_metadata_only": true})
    );
    assert!(s.sleeps.borrow().is_empty());
}

#[test]
fn transport_errors_follow_the_python_table() {
    let mut pool = LocalPool::new();
    let s = scripted_polls(
        &mut pool,
        vec![
            json(
                408,
                r#"{"queue_state":"paused_rate_limit","queue_state_reason":"limit"}"#,
            ),
            json(500, "{}"),
            json(429, "{}"),
            json(429, "{}"),
            Err(TransportError::Connection("reset".into())),
            json(502, "<html>"),
            json(429, "{}"),
            json(200, r#"{"ok":1}"#),
        ],
    );
    let h = connect(&mut pool, &s, false);
    let seen = RefCell::new(vec![]);
    let observer =
        |q: QueueState, r: Option<&str>| seen.borrow_mut().push((q, r.map(str::to_string)));
    pool.run_until(retrieve(
        &h,
        Poll {
            observer: Some(&observer),
            ..poll(false)
        },
    ))
    .unwrap();
    // 408 and 5xx re-poll at once; 429 and connection errors back off 1, 2, 4 s; any
    // HTTP response but 429 resets the exponent.
    assert_eq!(
        *s.sleeps.borrow(),
        vec![
            Duration::from_secs(1),
            Duration::from_secs(2),
            Duration::from_secs(4),
            Duration::from_secs(1)
        ]
    );
    assert_eq!(
        seen.borrow()[0],
        (QueueState::PausedRateLimit, Some("limit".into()))
    );
}

/// 400s that reach the poll loop as statuses (Python `RETRY_IF_BUDGET`). An *empty* 400
/// never does while the pool's connection budget lasts: the pool turns it into a
/// connection error first (`lib/internal_client_holder.py:88-101`, see
/// `an_empty_400_poll_backs_off_as_a_connection_error`).
#[test]
fn bad_requests_have_a_budget_of_three() {
    let mut pool = LocalPool::new();
    let s = scripted_polls(
        &mut pool,
        vec![
            json(400, r#"{"detail":"bad"}"#),
            json(400, r#"{"detail":"bad"}"#),
            json(400, r#"{"detail":"bad"}"#),
            json(200, r#"{"ok":1}"#),
        ],
    );
    let h = connect(&mut pool, &s, false);
    assert!(pool.run_until(retrieve(&h, poll(false))).is_ok());
    let s = scripted_polls(
        &mut pool,
        vec![
            json(400, r#"{"detail":"bad"}"#),
            json(400, r#"{"detail":"bad"}"#),
            json(400, r#"{"detail":"bad"}"#),
            json(400, r#"{"detail":"nope"}"#),
        ],
    );
    let h = connect(&mut pool, &s, false);
    assert_eq!(
        pool.run_until(retrieve(&h, poll(false)))
            .unwrap_err()
            .status(),
        Some(400)
    );
}

/// Python: an empty 400 on `retrieve_future` is an `APIConnectionError` from the pool,
/// so the poll loop backs off (`RETRY_WITH_BACKOFF`, `min(2**n, 30)` s) instead of
/// spending its 400 budget.
#[test]
fn an_empty_400_poll_backs_off_as_a_connection_error() {
    let mut pool = LocalPool::new();
    let s = scripted_polls(
        &mut pool,
        vec![
            empty_400(),
            empty_400(),
            empty_400(),
            empty_400(),
            json(200, r#"{"ok":1}"#),
        ],
    );
    let h = connect(&mut pool, &s, false);
    let before = s.sleeps.borrow().len();
    assert!(pool.run_until(retrieve(&h, poll(false))).is_ok());
    let secs: Vec<u64> = s.sleeps.borrow()[before..]
        .iter()
        .map(|d| d.as_secs())
        .collect();
    assert_eq!(secs, [1, 2, 4, 8]);
}

#[test]
fn gone_other_4xx_and_failures() {
    let mut pool = LocalPool::new();
    let s = scripted_polls(&mut pool, vec![json(410, "{}")]);
    let h = connect(&mut pool, &s, false);
    assert!(
        matches!(pool.run_until(retrieve(&h, poll(true))), Err(Error::FutureExpired { request_id }) if request_id == "req-1")
    );
    let s = scripted_polls(&mut pool, vec![json(404, r#"{"detail":"unknown"}"#)]);
    let h = connect(&mut pool, &s, false);
    assert_eq!(
        pool.run_until(retrieve(&h, poll(false)))
            .unwrap_err()
            .status(),
        Some(404)
    );
    let s = scripted_polls(
        &mut pool,
        vec![json(200, r#"{"error":"bad tokens","category":"user"}"#)],
    );
    let h = connect(&mut pool, &s, false);
    match pool.run_until(retrieve(&h, poll(false))) {
        Err(Error::RequestFailed {
            message, category, ..
        }) => assert_eq!(
            (message.as_str(), category),
            ("bad tokens", ErrorCategory::User)
        ),
        other => panic!("{other:?}"),
    }
    let s = scripted_polls(
        &mut pool,
        vec![json(200, r#"{"error":"x","category":"weird"}"#)],
    );
    let h = connect(&mut pool, &s, false);
    assert!(matches!(
        pool.run_until(retrieve(&h, poll(false))),
        Err(Error::RequestFailed {
            category: ErrorCategory::Unknown,
            ..
        })
    ));
}

#[test]
fn metadata_only_then_payload_and_never_twice() {
    let mut pool = LocalPool::new();
    let s = scripted_polls(
        &mut pool,
        vec![
            json(
                200,
                r#"{"status":"complete_metadata","response_payload_size":1000}"#,
            ),
            proto(vec![]),
        ],
    );
    let h = connect(&mut pool, &s, false);
    assert!(matches!(
        pool.run_until(retrieve(&h, poll(true))),
        Ok(Payload::Proto(_))
    ));
    assert_eq!(body_json(&polls(&s)[1])["allow_metadata_only"], false);
    assert_eq!(
        polls(&s)[0].headers.get("Accept"),
        Some("application/x-protobuf")
    );
    let s = scripted_polls(
        &mut pool,
        vec![
            json(
                200,
                r#"{"status":"complete_metadata","response_payload_size":5}"#,
            ),
            json(
                200,
                r#"{"status":"complete_metadata","response_payload_size":5}"#,
            ),
        ],
    );
    let h = connect(&mut pool, &s, false);
    assert!(matches!(
        pool.run_until(retrieve(&h, poll(true))),
        Err(Error::InvalidResponse { .. })
    ));
}

#[test]
fn proto_results_must_be_proto_and_garbage_is_repolled() {
    let mut pool = LocalPool::new();
    let s = scripted_polls(&mut pool, vec![json(200, r#"{"sequences":[]}"#)]);
    let h = connect(&mut pool, &s, false);
    let e = pool.run_until(retrieve(&h, poll(true))).unwrap_err();
    assert!(e.to_string().contains("predates protobuf"), "{e}");
    let s = scripted_polls(
        &mut pool,
        vec![json(200, "{\"trunc"), json(200, r#"{"ok":1}"#)],
    );
    let h = connect(&mut pool, &s, false);
    assert!(pool.run_until(retrieve(&h, poll(false))).is_ok());
}

#[test]
fn billing_pause_sleeps_five_seconds() {
    let mut pool = LocalPool::new();
    let s = scripted_polls(
        &mut pool,
        vec![json(402, "{}"), json(402, "{}"), json(200, r#"{"ok":1}"#)],
    );
    let h = connect(&mut pool, &s, false);
    assert!(pool.run_until(retrieve(&h, poll(false))).is_ok());
    assert_eq!(*s.sleeps.borrow(), vec![Duration::from_secs(5); 2]);
}

#[test]
fn holder_retries_back_off_within_the_window() {
    let mut pool = LocalPool::new();
    let s = Scripted::new(&pool, server("{}", |_, _| json(503, "{}")));
    let h = connect(&mut pool, &s, false);
    let e = pool
        .run_until(
            h.send(crate::http::Req::to(&crate::endpoints::CANCEL_FUTURE).json(&crate::json!(1))),
        )
        .unwrap_err();
    assert_eq!(e.status(), Some(503));
    let sl: Vec<u64> = s.sleeps.borrow().iter().map(|d| d.as_secs()).collect();
    assert_eq!(&sl[..6], &[1, 2, 4, 8, 16, 30]);
    let total: f64 = s.sleeps.borrow().iter().map(Duration::as_secs_f64).sum();
    assert!(
        (299.0..=300.0).contains(&total),
        "gives up when 300 s have passed: {total}"
    );
}

/// A call still in flight when the client closes fails at its next request, as Python's
/// do ("Internal client holder is closed"), instead of polling on for up to 300 s
/// (issue 31, item 5). The close's own request still goes out.
#[test]
fn a_call_in_flight_at_close_fails_at_its_next_request() {
    let mut pool = LocalPool::new();
    let s = Scripted::new(
        &pool,
        server("{}", |r, _| {
            if r.url.ends_with("retrieve_future") {
                json(200, r#"{"type":"try_again","request_id":"req-1"}"#)
            } else {
                json(200, "{}")
            }
        }),
    );
    let h = connect(&mut pool, &s, true);
    let gate = crate::sync::Event::new();
    s.gates
        .borrow_mut()
        .push(("retrieve_future".into(), gate.clone()));
    let result = Rc::new(RefCell::new(None));
    let (h2, out) = (h.clone(), result.clone());
    use futures_util::task::LocalSpawnExt;
    pool.spawner()
        .spawn_local(async move {
            *out.borrow_mut() = Some(retrieve(&h2, poll(false)).await);
        })
        .unwrap();
    pool.run_until_stalled();
    assert_eq!(polls(&s).len(), 1, "the first poll is in flight");
    pool.run_until(h.close(crate::session::FinishStatus::Success, None))
        .unwrap();
    gate.set(); // the poll in flight is answered "try again" after the close
    pool.run_until_stalled();
    match result.borrow_mut().take() {
        Some(Err(Error::Closed { message })) => {
            assert!(message.contains("closed"), "{message}")
        }
        other => panic!("expected the call to fail with Closed, got {other:?}"),
    }
    assert_eq!(polls(&s).len(), 1, "no poll after the close");
    assert!(
        s.paths().iter().any(|p| p.ends_with("/finish")),
        "the close's own request went out: {:?}",
        s.paths()
    );
}
