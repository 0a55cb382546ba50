//! Telemetry content as the Python SDK 0.38 sends it (`lib/telemetry.py`): a normal
//! close sends no `SESSION_END`; a failed public call (`capture_exceptions(fatal=True)`)
//! sends its `user_error` or `UNHANDLED_EXCEPTION` event, then `SESSION_END`; `platform`
//! is the OS as `platform.system()` names it; `process_uuid` is one per process.

use std::rc::Rc;

use futures_executor::LocalPool;

use super::scripted::*;
use crate::options::PlatformInfo;
use crate::rest::{RestCall, RestClient};
use crate::session::{FinishStatus, Holder};

fn holder(pool: &mut LocalPool, s: &Rc<Scripted>) -> Rc<Holder> {
    let mut o = opts();
    o.telemetry = true;
    o.platform = Some(PlatformInfo {
        system: "Linux".into(),
        ..Default::default()
    });
    pool.run_until(Holder::connect(s.clone(), Rc::new(o), true))
        .expect("connect")
}

/// Every telemetry batch sent: (platform, process_uuid, event kinds).
fn batches(s: &Scripted) -> Vec<(String, String, Vec<String>)> {
    s.requests
        .borrow()
        .iter()
        .filter(|r| r.url.ends_with("/telemetry"))
        .map(|r| {
            let b = body_json(r);
            let kinds = b["events"]
                .as_array()
                .unwrap()
                .iter()
                .map(|e| match e["event"].as_str().unwrap() {
                    "GENERIC_EVENT" => e["event_name"].as_str().unwrap().to_string(),
                    k => k.to_string(),
                })
                .collect();
            (
                b["platform"].as_str().unwrap().to_string(),
                b["process_uuid"].as_str().unwrap().to_string(),
                kinds,
            )
        })
        .collect()
}

#[test]
fn a_normal_close_sends_no_session_end() {
    let mut pool = LocalPool::new();
    let s = Scripted::new(&pool, server("{}", |_, _| json(200, "{}")));
    let h = holder(&mut pool, &s);
    pool.run_until(h.close(FinishStatus::Success, None))
        .unwrap();
    let b = batches(&s);
    assert_eq!(b.len(), 1);
    assert_eq!(b[0].0, "Linux", "platform.system(), not the user agent");
    assert_eq!(b[0].2, ["SESSION_START"]);
}

#[test]
fn a_failed_public_call_sends_its_error_then_session_end() {
    let mut pool = LocalPool::new();
    let s = Scripted::new(
        &pool,
        server("{}", |r, _| {
            if r.url.contains("/publish") {
                json(409, r#"{"detail":"already public"}"#)
            } else {
                json(200, "{}")
            }
        }),
    );
    let h = holder(&mut pool, &s);
    let rest = RestClient::new(h.clone());
    let call = RestCall::set_published("tinker://run-1/weights/ckpt", true).unwrap();
    let e = pool.run_until(rest.call(call)).unwrap_err();
    assert_eq!(e.status(), Some(409));
    assert!(
        batches(&s).is_empty(),
        "the error reached the caller before its telemetry was sent"
    );
    pool.run_until_stalled();
    let b = batches(&s);
    assert_eq!(b.len(), 1, "then sent in the background");
    // Python's execute_with_retries reports every failure, retried or not
    // (`lib/internal_client_holder.py:968-994`), before the call's own error.
    assert_eq!(
        b[0].2,
        [
            "SESSION_START",
            "InternalClientHolder.execute_with_retries.exception",
            "user_error",
            "SESSION_END"
        ]
    );
    let sent = s.requests.borrow();
    let ev = &body_json(
        sent.iter()
            .rev()
            .find(|r| r.url.ends_with("/telemetry"))
            .unwrap(),
    )["events"][2];
    assert_eq!(ev["severity"], "WARNING");
    assert_eq!(
        ev["event_data"]["error_type"], "ConflictError",
        "Python's class for a 409"
    );
    assert_eq!(ev["event_data"]["status_code"], 409);
    assert_eq!(ev["event_data"]["body"]["detail"], "already public");
}

#[test]
fn one_process_uuid_for_every_client() {
    let mut pool = LocalPool::new();
    let s = Scripted::new(&pool, server("{}", |_, _| json(200, "{}")));
    let a = holder(&mut pool, &s);
    let b = holder(&mut pool, &s);
    pool.run_until(a.close(FinishStatus::Success, None))
        .unwrap();
    pool.run_until(b.close(FinishStatus::Success, None))
        .unwrap();
    let sent = batches(&s);
    assert_eq!(sent.len(), 2);
    assert_eq!(sent[0].1, sent[1].1);
}

/// A server error that outlasts the holder's retries: each failed attempt is an
/// `InternalClientHolder.execute_with_retries.exception` event, the call's error an
/// `UNHANDLED_EXCEPTION` (not the user's fault), then `SESSION_END`.
#[test]
fn a_server_error_is_an_unhandled_exception() {
    let mut pool = LocalPool::new();
    let s = Scripted::new(
        &pool,
        server("{}", |r, _| {
            if r.url.ends_with("/get_server_capabilities") {
                json(500, r#"{"detail":"down"}"#)
            } else {
                json(200, "{}")
            }
        }),
    );
    let h = holder(&mut pool, &s);
    let rest = RestClient::new(h.clone());
    let e = pool
        .run_until(rest.call(RestCall::get_server_capabilities()))
        .unwrap_err();
    assert_eq!(e.status(), Some(500));
    pool.run_until_stalled(); // the report is sent in the background
    let b = batches(&s);
    let kinds: Vec<&str> = b
        .iter()
        .flat_map(|x| x.2.iter().map(String::as_str))
        .collect();
    assert_eq!(kinds.first(), Some(&"SESSION_START"));
    assert_eq!(
        kinds[kinds.len() - 2..],
        ["UNHANDLED_EXCEPTION", "SESSION_END"]
    );
    assert!(kinds[1..kinds.len() - 2]
        .iter()
        .all(|k| *k == "InternalClientHolder.execute_with_retries.exception"));
}

/// The service's constructors report their failure as Python's
/// `@capture_exceptions(fatal=True)` does: `create_model` refused with a 400 (the user's
/// fault) is a `user_error`, then `SESSION_END`.
#[test]
fn a_failed_create_lora_training_client_is_reported() {
    use crate::call::CallOptions;
    use crate::service::{LoraOptions, ServiceClient};
    let mut pool = LocalPool::new();
    let s = Scripted::new(
        &pool,
        server("{}", |r, _| {
            if r.url.ends_with("/create_model") {
                json(400, r#"{"detail":"unknown base model"}"#)
            } else {
                json(200, "{}")
            }
        }),
    );
    let mut o = opts();
    o.telemetry = true;
    let svc = ServiceClient::new(s.clone(), o).unwrap();
    let lora = LoraOptions {
        base_model: "nope/model".into(),
        lora: Default::default(),
        user_metadata: None,
        optimizer: None,
    };
    let call = svc
        .create_lora_training_client(lora, CallOptions::default())
        .unwrap();
    let e = pool
        .run_until(call)
        .err()
        .expect("create_model was refused");
    assert_eq!(e.status(), Some(400));
    pool.run_until_stalled(); // the report is sent in the background
    let kinds: Vec<String> = batches(&s).into_iter().flat_map(|b| b.2).collect();
    assert_eq!(
        kinds[kinds.len() - 2..],
        ["user_error".to_string(), "SESSION_END".to_string()],
        "{kinds:?}"
    );
}

/// A telemetry endpoint that never answers delays neither a failed call nor `close`: the
/// call rejects at once, its report is given up after Python's `FLUSH_TIMEOUT`, and so is
/// close's flush (issue 31, item 4; before, both waited for the flush to finish).
#[test]
fn telemetry_never_delays_an_error_or_a_close() {
    let mut pool = LocalPool::new();
    let s = Scripted::new(
        &pool,
        server("{}", |r, _| {
            if r.url.contains("/publish") {
                json(409, r#"{"detail":"already public"}"#)
            } else {
                json(200, "{}")
            }
        }),
    );
    let h = holder(&mut pool, &s);
    let never = crate::sync::Event::new();
    s.gates
        .borrow_mut()
        .push(("/telemetry".into(), never.clone()));
    let rest = RestClient::new(h.clone());
    let call = RestCall::set_published("tinker://run-1/weights/ckpt", true).unwrap();
    let e = pool.run_until(rest.call(call)).unwrap_err();
    assert_eq!(e.status(), Some(409));
    pool.run_until_stalled();
    let bound = crate::telemetry::FLUSH_TIMEOUT;
    let bounded = || s.sleeps.borrow().iter().filter(|d| **d == bound).count();
    assert_eq!(
        bounded(),
        1,
        "the report's flush was given up after {bound:?}"
    );
    pool.run_until(h.close(FinishStatus::Success, None))
        .unwrap();
    assert_eq!(bounded(), 2, "and so was close's");
    assert!(
        s.paths()
            .iter()
            .filter(|p| p.ends_with("telemetry"))
            .count()
            >= 1,
        "the report was sent (and never answered)"
    );
}
