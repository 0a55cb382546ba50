//! Stuck detection of sampling calls: once no call in flight made progress for
//! `progress_timeout`, every call in flight fails with the Python SDK's message, through
//! one watchdog shared by the burst of calls; the next burst starts a fresh one.

use futures_executor::LocalPool;

use super::scripted::*;
use crate::call::CallOptions;
use crate::sampling::{SamplingClient, SamplingOptions};
use crate::sync::Event;

#[test]
fn calls_without_progress_fail_together_then_a_new_burst_starts_fresh() {
    let mut pool = LocalPool::new();
    let s = Scripted::new(
        &pool,
        server("{}", |r, _| {
            if r.url.ends_with("/asample") {
                json(200, r#"{"request_id":"r-1"}"#)
            } else {
                json(400, r#"{"detail":"bad sample"}"#)
            }
        }),
    );
    let h = connect(&mut pool, &s, true);
    let sc = pool
        .run_until(SamplingClient::connect_clone(
            h,
            "samp-1".into(),
            Some("Qwen/Qwen3-8B".into()),
            SamplingOptions::default(),
            Some(0),
            "test",
        ))
        .unwrap();
    // asample never answers until the gate opens.
    let gate = Event::new();
    s.gates.borrow_mut().push(("/asample".into(), gate.clone()));
    let calls: Vec<_> = (0..3)
        .map(|_| sc.sample(request(), CallOptions::default()).unwrap())
        .collect();
    let results = pool.run_until(futures_util::future::join_all(calls));
    for r in &results {
        let e = r.as_ref().expect_err("a stuck call fails");
        assert!(
            e.to_string()
                .contains("No progress made in 7200s. Requests appear to be stuck."),
            "{e}"
        );
    }
    // The watchdog's sleeps (a failed call's telemetry flush has a bound of its own).
    let watchdog = |s: &Scripted| -> Vec<f64> {
        let bound = crate::telemetry::FLUSH_TIMEOUT;
        s.sleeps
            .borrow()
            .iter()
            .filter(|d| **d != bound)
            .map(|d| d.as_secs_f64())
            .collect()
    };
    let waits = watchdog(&s);
    assert_eq!(
        waits.len(),
        1,
        "one watchdog for the three calls: {waits:?}"
    );
    assert!(waits[0] > 7200.0 && waits[0] < 7200.01, "{waits:?}");

    // A new call: a fresh watchdog (the old token stays fired for nobody), which stops
    // without sleeping once the call ends on its own error.
    gate.set();
    let r = pool.run_until(sc.sample(request(), CallOptions::default()).unwrap());
    let e = r.expect_err("the scripted server refuses the poll");
    assert!(!e.to_string().contains("No progress"), "{e}");
    pool.run_until_stalled();
    assert_eq!(
        watchdog(&s).len(),
        1,
        "no watchdog sleep after the call ended"
    );
}

/// A sample given up by stuck detection is cancelled on the server (when the dynamic
/// config enables cancels), as Python cancels the abandoned polling task.
#[test]
fn a_sample_given_up_as_stuck_is_cancelled_on_the_server() {
    let mut pool = LocalPool::new();
    let inner = server("{}", |r, _| {
        if r.url.ends_with("/asample") {
            json(200, r#"{"request_id":"r-7","sample_sequence_ids":[]}"#)
        } else {
            json(200, "{}") // cancel_future
        }
    });
    let s = Scripted::new(&pool, move |r, n| {
        if r.url.ends_with("/client/dynamic_config") {
            json(200, r#"{"sample_cancel_enabled":true}"#)
        } else {
            inner(r, n)
        }
    });
    // The result never comes.
    s.gates
        .borrow_mut()
        .push(("/retrieve_future".into(), Event::new()));
    let h = connect(&mut pool, &s, true);
    let sc = sampler(&mut pool, h);
    let e = pool
        .run_until(sc.sample(request(), CallOptions::default()).unwrap())
        .expect_err("stuck");
    assert!(e.to_string().contains("No progress made"), "{e}");
    pool.run_until_stalled();
    let cancels: Vec<_> = s
        .requests
        .borrow()
        .iter()
        .filter(|r| r.url.ends_with("/cancel_future"))
        .map(body_json)
        .collect();
    assert_eq!(cancels, vec![serde_json::json!({"request_id": "r-7"})]);
}

/// Clients on one sampler (same holder, same retry config) share one retry handler, as
/// Python's `_get_retry_handler` cache: the server's `sample_max_concurrent_requests`
/// bounds them together. A client on another sampler has its own.
#[test]
fn clients_on_one_sampler_share_its_concurrency_limit() {
    let mut pool = LocalPool::new();
    let s = Scripted::new(
        &pool,
        // No stuck detection: with the virtual clock its watchdog would fire at once.
        server(
            r#"{"sample_max_concurrent_requests":1,"sample_enable_stuck_detection":false}"#,
            |r, _| {
                if r.url.ends_with("/asample") {
                    json(400, r#"{"detail":"refused"}"#)
                } else {
                    json(404, r#"{"detail":"unexpected"}"#)
                }
            },
        ),
    );
    let h = connect(&mut pool, &s, true);
    let on = |pool: &mut LocalPool, sampler: &str, clone: u64| {
        pool.run_until(SamplingClient::connect_clone(
            h.clone(),
            sampler.into(),
            Some("Qwen/Qwen3-8B".into()),
            SamplingOptions::default(),
            Some(clone),
            "test",
        ))
        .unwrap()
    };
    let (a, b, other) = (
        on(&mut pool, "samp-1", 0),
        on(&mut pool, "samp-1", 7),
        on(&mut pool, "samp-2", 0),
    );
    let gate = Event::new();
    s.gates.borrow_mut().push(("/asample".into(), gate.clone()));
    let results = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
    for c in [&a, &b, &other] {
        let call = c.sample(request(), CallOptions::default()).unwrap();
        let results = results.clone();
        futures_util::task::LocalSpawnExt::spawn_local(&pool.spawner(), async move {
            let r = call.await;
            results.borrow_mut().push(r.map(|_| ()));
        })
        .unwrap();
    }
    let sent = |s: &Scripted| -> Vec<String> {
        s.requests
            .borrow()
            .iter()
            .filter(|r| r.url.ends_with("/asample"))
            .map(|r| {
                let b = body_json(r);
                format!(
                    "{} {}",
                    b["sampling_session_id"].as_str().unwrap(),
                    b["seq_id"]
                )
            })
            .collect()
    };
    pool.run_until_stalled();
    assert_eq!(
        sent(&s),
        ["samp-1 0", "samp-2 0"],
        "b waits for a's slot on samp-1; samp-2 has its own"
    );
    gate.set();
    pool.run_until_stalled();
    let results = results.borrow();
    assert_eq!(results.len(), 3);
    assert!(results
        .iter()
        .all(|r| r.as_ref().unwrap_err().status() == Some(400)));
    assert_eq!(sent(&s), ["samp-1 0", "samp-2 0", "samp-1 7000000000"]);
}
