use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

use futures_executor::LocalPool;

use super::scripted::*;
use crate::error::Error;
use crate::http::{Credential, Http, JwtProvider, Req};
use crate::platform::{Env, TransportError};

fn http(env: Env, max_retries: u32) -> Http {
    let mut o = opts();
    o.max_retries = max_retries;
    Http::new(env, Rc::new(o), Credential::Key("tml-test".into()))
}

#[test]
fn retries_5xx_with_one_idempotency_key_and_counted_retries() {
    let mut pool = LocalPool::new();
    let s = Scripted::new(&pool, |_, n| {
        if n < 2 {
            json(503, r#"{"detail":"busy"}"#)
        } else {
            json(200, r#"{"ok":true}"#)
        }
    });
    let h = http(s.clone(), 10);
    let v: crate::json::Value = pool
        .run_until(h.json(Req::post_json("/api/v1/x", &crate::json!({}))))
        .unwrap();
    assert_eq!(v["ok"], true);
    let reqs = s.requests.borrow();
    assert_eq!(reqs.len(), 3);
    let keys: Vec<_> = reqs
        .iter()
        .map(|r| r.headers.get("X-Idempotency-Key").unwrap().to_string())
        .collect();
    assert!(keys.iter().all(|k| *k == keys[0]), "one key across retries");
    let counts: Vec<_> = reqs
        .iter()
        .map(|r| {
            r.headers
                .get("x-stainless-retry-count")
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(counts, ["0", "1", "2"]);
    assert_eq!(reqs[0].headers.get("X-API-Key"), Some("tml-test"));
    // Exponential waits with at most 25 % jitter: 0.5 s then 1 s.
    let sl = s.sleeps.borrow();
    assert!(
        (0.375..=0.5).contains(&sl[0].as_secs_f64()) && (0.75..=1.0).contains(&sl[1].as_secs_f64()),
        "{sl:?}"
    );
}

#[test]
fn honours_retry_after_and_gives_up_after_max_retries() {
    let mut pool = LocalPool::new();
    let s = Scripted::new(&pool, |_, _| {
        with_headers(429, "{}", &[("retry-after", "3")])
    });
    let h = http(s.clone(), 2);
    let e = pool
        .run_until(h.send(Req::post_json("/api/v1/x", &crate::json!(1))))
        .unwrap_err();
    assert_eq!(e.status(), Some(429));
    assert_eq!(s.requests.borrow().len(), 3);
    assert_eq!(*s.sleeps.borrow(), vec![Duration::from_secs(3); 2]);
}

#[test]
fn does_not_retry_user_errors_or_should_retry_false() {
    let mut pool = LocalPool::new();
    let s = Scripted::new(&pool, |r, _| {
        if r.url.ends_with("/a") {
            json(400, r#"{"detail":"bad"}"#)
        } else {
            with_headers(503, "{}", &[("x-should-retry", "false")])
        }
    });
    let h = http(s.clone(), 10);
    assert_eq!(
        pool.run_until(h.send(Req::post_json("/api/v1/a", &crate::json!(1))))
            .unwrap_err()
            .status(),
        Some(400)
    );
    assert_eq!(
        pool.run_until(h.send(Req::post_json("/api/v1/b", &crate::json!(1))))
            .unwrap_err()
            .status(),
        Some(503)
    );
    assert_eq!(s.requests.borrow().len(), 2);
}

#[test]
fn connection_errors_and_timeouts_are_retried_then_typed() {
    let mut pool = LocalPool::new();
    let s = Scripted::new(&pool, |r, _| {
        if r.url.ends_with("/t") {
            Err(TransportError::Timeout)
        } else {
            Err(TransportError::Connection("refused".into()))
        }
    });
    let h = http(s.clone(), 1);
    assert!(matches!(
        pool.run_until(h.send(Req::post_json("/api/v1/t", &crate::json!(1)))),
        Err(Error::Timeout { .. })
    ));
    assert!(matches!(
        pool.run_until(h.send(Req::post_json("/api/v1/c", &crate::json!(1)))),
        Err(Error::Connection { .. })
    ));
    assert_eq!(s.requests.borrow().len(), 4);
}

#[test]
fn get_requests_carry_no_idempotency_key() {
    let mut pool = LocalPool::new();
    let s = Scripted::new(&pool, |_, _| json(200, "{}"));
    let h = http(s.clone(), 0);
    pool.run_until(
        h.send(
            Req::new(crate::platform::Method::Get, "/api/v1/x")
                .query("limit", 5)
                .query("q", "a b"),
        ),
    )
    .unwrap();
    let r = &s.requests.borrow()[0];
    assert!(r.headers.get("X-Idempotency-Key").is_none());
    assert_eq!(r.url, "http://sim.test/api/v1/x?limit=5&q=a%20b");
}

fn jwt(exp_in: f64, now_ms: f64, tag: &str) -> String {
    use base64::Engine as _;
    let now = now_ms / 1000.0;
    let b = |s: String| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(s);
    format!(
        "{}.{}.{}",
        b("{}".into()),
        b(format!(
            r#"{{"exp":{},"iat":{},"sub":"{tag}"}}"#,
            now + exp_in,
            now
        )),
        tag
    )
}

#[test]
fn jwt_is_exchanged_lazily_once_and_replayed_once_on_invalid_token() {
    let mut pool = LocalPool::new();
    let exchanges = Rc::new(std::cell::Cell::new(0));
    let ex = exchanges.clone();
    let t0 = 1_700_000_000_000.0;
    let s = Scripted::new(&pool, move |r, _| {
        if r.url.ends_with("/auth/token") {
            assert_eq!(
                r.headers.get("X-API-Key"),
                Some("tml-test"),
                "the exchange uses the API key"
            );
            ex.set(ex.get() + 1);
            return json(
                200,
                &format!(
                    r#"{{"jwt":"{}"}}"#,
                    jwt(3600.0, t0, &format!("t{}", ex.get()))
                ),
            );
        }
        let key = r.headers.get("X-API-Key").unwrap();
        if key.ends_with("t1") {
            with_headers(
                401,
                r#"{"detail":"Invalid JWT"}"#,
                &[("WWW-Authenticate", r#"Bearer error="invalid_token""#)],
            )
        } else {
            json(200, r#"{"ok":1}"#)
        }
    });
    let env: Env = s.clone();
    let key_http = http(env.clone(), 0);
    let jwt_provider = JwtProvider::new(key_http.clone(), false);
    let h = key_http.with_credential(Credential::Jwt(jwt_provider));
    let v: crate::json::Value = pool
        .run_until(h.json(Req::post_json("/api/v1/x", &crate::json!(1))))
        .unwrap();
    assert_eq!(v["ok"], 1);
    assert_eq!(exchanges.get(), 2, "first exchange, then one replacement");
    assert_eq!(s.paths(), ["auth/token", "x", "auth/token", "x"]);
    // A fresh token is reused without another exchange.
    pool.run_until(h.send(Req::post_json("/api/v1/y", &crate::json!(1))))
        .unwrap();
    assert_eq!(exchanges.get(), 2);
}

#[test]
fn a_second_invalid_token_surfaces_as_401() {
    let mut pool = LocalPool::new();
    let t0 = 1_700_000_000_000.0;
    let s = Scripted::new(&pool, move |r, n| {
        if r.url.ends_with("/auth/token") {
            return json(
                200,
                &format!(r#"{{"jwt":"{}"}}"#, jwt(3600.0, t0, &format!("t{n}"))),
            );
        }
        with_headers(
            401,
            "{}",
            &[("WWW-Authenticate", r#"Bearer error="invalid_token""#)],
        )
    });
    let key_http = http(s.clone(), 3);
    let h = key_http.with_credential(Credential::Jwt(JwtProvider::new(key_http.clone(), false)));
    assert_eq!(
        pool.run_until(h.send(Req::post_json("/api/v1/x", &crate::json!(1))))
            .unwrap_err()
            .status(),
        Some(401)
    );
    assert_eq!(
        s.paths(),
        ["auth/token", "x", "auth/token", "x"],
        "exactly one replay; 401 is not retried"
    );
}

/// Python `lib/internal_client_holder.py:88-101`: an empty 400 (the CDN's rejection) is
/// raised as `APIConnectionError` while the pool's budget of 16 lasts, one back per
/// success; without budget it is the 400 (`BadRequestError`).
#[test]
fn empty_400s_are_connection_errors_while_the_pools_budget_lasts() {
    let mut pool = LocalPool::new();
    let s = Scripted::new(&pool, |r, _| {
        if r.url.ends_with("/ok") {
            json(200, "{}")
        } else {
            empty_400()
        }
    });
    let h = http(s.clone(), 10);
    let mut send = |path: &str| pool.run_until(h.send(Req::post_json(path, &crate::json!(1))));
    for i in 0..16 {
        assert!(
            matches!(send("/api/v1/x"), Err(Error::Connection { .. })),
            "empty 400 number {i}"
        );
    }
    assert_eq!(
        send("/api/v1/x").unwrap_err().status(),
        Some(400),
        "budget spent"
    );
    send("/api/v1/ok").unwrap();
    assert!(
        matches!(send("/api/v1/x"), Err(Error::Connection { .. })),
        "one back"
    );
    assert_eq!(send("/api/v1/x").unwrap_err().status(), Some(400));
    // The HTTP layer itself never retried a 400: one request per call.
    assert_eq!(s.requests.borrow().len(), 16 + 1 + 1 + 1 + 1);
    // A 400 with a body is the server's answer.
    let s2 = Scripted::new(&pool, |_, _| json(400, r#"{"detail":"bad"}"#));
    let h2 = http(s2, 10);
    let e = pool
        .run_until(h2.send(Req::post_json("/api/v1/x", &crate::json!(1))))
        .unwrap_err();
    assert_eq!(e.status(), Some(400));
}

/// The budget is per pool (Python: one `ClientConnectionPool` per
/// `ClientConnectionPoolType`): spending `TRAIN`'s leaves `SAMPLE`'s whole.
#[test]
fn each_pool_has_its_own_budget() {
    let mut pool = LocalPool::new();
    let s = Scripted::new(&pool, |_, _| empty_400());
    let h = http(s.clone(), 0);
    for _ in 0..16 {
        let r =
            pool.run_until(h.send(Req::to(&crate::endpoints::GET_INFO).json(&crate::json!({}))));
        assert!(matches!(r, Err(Error::Connection { .. })));
    }
    let r = pool.run_until(h.send(Req::to(&crate::endpoints::GET_INFO).json(&crate::json!({}))));
    assert_eq!(r.unwrap_err().status(), Some(400));
    let r = pool.run_until(h.send(Req::to(&crate::endpoints::ASAMPLE).json(&crate::json!({}))));
    assert!(
        matches!(r, Err(Error::Connection { .. })),
        "SAMPLE's budget is its own"
    );
}

/// Through the holder: an empty 400 on a call under `execute_with_retries` is retried
/// as a connection error with the holder's waits (`min(2**attempt, 30)` s,
/// `lib/internal_client_holder.py:997-1003`), not failed.
#[test]
fn the_holder_retries_empty_400s_like_connection_errors() {
    let mut pool = LocalPool::new();
    let s = Scripted::new(&pool, server("{}", |_, _| json(200, "{}")));
    let h = connect(&mut pool, &s, false);
    // Two empty 400s, then the answer.
    let calls = Rc::new(std::cell::Cell::new(0));
    let c = calls.clone();
    *s.handler.borrow_mut() = Box::new(move |_, _| {
        c.set(c.get() + 1);
        if c.get() <= 2 {
            empty_400()
        } else {
            json(200, r#"{"supported_models":[]}"#)
        }
    });
    let sleeps_before = s.sleeps.borrow().len();
    let v = pool
        .run_until(h.json_value(Req::to(&crate::endpoints::GET_SERVER_CAPABILITIES)))
        .unwrap();
    assert_eq!(v["supported_models"], crate::json!([]));
    assert_eq!(calls.get(), 3);
    assert_eq!(
        s.sleeps.borrow()[sleeps_before..],
        [Duration::from_secs(1), Duration::from_secs(2)]
    );
}

/// Python `ApiKeyAuthProvider.get_token` (`lib/_auth_token_provider.py:93-100`): a JWT
/// given as the API key is checked on every request, so one that expires while the
/// client lives fails the next call before anything is sent.
#[test]
fn a_jwt_api_key_is_checked_for_expiry_on_every_request() {
    let mut pool = LocalPool::new();
    let s = Scripted::new(&pool, |_, _| json(200, "{}"));
    let t0 = s.clock_ms.get();
    // A JWT as a caller gives it: its header encodes `{"…`, so it starts with "eyJ".
    let key = {
        use base64::Engine as _;
        let b = |s: &str| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(s);
        let exp = t0 / 1000.0 + 60.0;
        format!(
            "{}.{}.sig",
            b(r#"{"alg":"HS256"}"#),
            b(&format!(r#"{{"exp":{exp}}}"#))
        )
    };
    assert!(key.starts_with("eyJ"));
    let mut o = opts();
    o.api_key = Some(key.clone());
    let h = Http::new(s.clone(), Rc::new(o), Credential::Key(key));
    pool.run_until(h.send(Req::post_json("/api/v1/x", &crate::json!(1))))
        .unwrap();
    s.clock_ms.set(t0 + 60_000.0);
    let e = pool
        .run_until(h.send(Req::post_json("/api/v1/x", &crate::json!(1))))
        .unwrap_err();
    assert!(matches!(e, Error::Input(_)), "{e:?}");
    assert!(!e.is_retryable());
    assert_eq!(s.requests.borrow().len(), 1, "the expired key was not sent");
}

/// Python's timeouts and the `x-stainless-read-timeout` it derives from them
/// (`_base_client.py:400-405`), with the values the differential run's Python log shows:
/// `60` by default (`Timeout(60, connect=5.0)`), `45` on `retrieve_future`, `10` on the
/// heartbeat, `5.0` on telemetry, `45.0` / `5.0` on `retrieve_futures`. On pyqwest (the
/// server's default) each is one deadline, `read + write` (120 s, 90 s, 20 s, 10 s), and
/// 30 s to connect; with the server's `use_pyqwest_transport` off, and always for
/// `client/config`, httpx's phases.
#[test]
fn timeouts_follow_pythons_transports() {
    use crate::endpoints as ep;
    use crate::options::PlatformInfo;
    let mut pool = LocalPool::new();
    let s = Scripted::new(&pool, |_, _| json(200, "{}"));
    let mut o = opts();
    o.platform = Some(PlatformInfo {
        os: "Linux".into(),
        system: "Linux".into(),
        arch: "x64".into(),
        runtime: "node".into(),
        runtime_version: "v22.0.0".into(),
    });
    let h = Http::new(s.clone(), Rc::new(o), Credential::Key("tml-test".into()));
    let body = crate::json!({});
    let secs = |n: u64| Some(Duration::from_secs(n));
    // (request, header, httpx connect and read, pyqwest deadline)
    let reqs = || {
        [
            (Req::to(&ep::GET_INFO).json(&body), "60", 5, 60, secs(120)),
            (
                Req::to(&ep::RETRIEVE_FUTURE).json(&body),
                "45",
                45,
                45,
                secs(90),
            ),
            (
                Req::to(&ep::CANCEL_FUTURE).json(&body),
                "30",
                30,
                30,
                secs(60),
            ),
            (
                Req::to(&ep::SESSION_HEARTBEAT).json(&body),
                "10",
                10,
                10,
                secs(20),
            ),
            (Req::to(&ep::TELEMETRY).json(&body), "5.0", 5, 5, secs(10)),
            (
                Req::to(&ep::RETRIEVE_FUTURES).json(&body),
                "45.0",
                45,
                45,
                secs(90),
            ),
            (
                Req::to(&ep::RETRIEVE_FUTURES)
                    .json(&body)
                    .timeout(Duration::from_secs(5)),
                "5.0",
                5,
                5,
                secs(10),
            ),
            // Pinned to httpx's transport whatever the server says.
            (Req::to(&ep::CLIENT_CONFIG).json(&body), "60", 5, 60, None),
        ]
    };
    for pyqwest in [true, false] {
        h.set_pyqwest(pyqwest);
        for (req, header, connect, read, deadline) in reqs() {
            let n = s.requests.borrow().len();
            pool.run_until(h.send(req)).unwrap();
            let sent = &s.requests.borrow()[n];
            let what = format!("{} (pyqwest {pyqwest})", sent.url);
            assert_eq!(
                sent.headers.get("x-stainless-read-timeout"),
                Some(header),
                "{what}"
            );
            let expected = match deadline {
                Some(d) if pyqwest => (secs(30), None, Some(d)),
                _ => (secs(connect), secs(read), None),
            };
            assert_eq!(
                (sent.connect_timeout, sent.timeout, sent.deadline),
                expected,
                "{what}"
            );
            for name in [
                "X-Stainless-Package-Version",
                "X-Stainless-OS",
                "X-Stainless-Arch",
                "X-Stainless-Runtime",
                "X-Stainless-Runtime-Version",
                "X-Stainless-Async",
            ] {
                assert!(sent.headers.contains(name), "{name} on {what}");
            }
            assert_eq!(
                sent.headers.contains("X-Stainless-Raw-Response"),
                sent.url.ends_with("/retrieve_future")
            );
        }
    }
}

/// A client-set timeout covers every phase (Python `ServiceClient(timeout=30)`), and on
/// pyqwest makes a deadline of twice it; without a platform (browsers) none of the
/// platform headers go out.
#[test]
fn a_client_timeout_and_no_platform() {
    use crate::endpoints as ep;
    use crate::options::PlatformInfo;
    let mut pool = LocalPool::new();
    let s = Scripted::new(&pool, |_, _| json(200, "{}"));
    let body = crate::json!({});
    let mut o = opts();
    o.timeout = Duration::from_millis(30_500);
    o.platform = Some(PlatformInfo::default());
    let h = Http::new(s.clone(), Rc::new(o), Credential::Key("tml-test".into()));
    pool.run_until(h.send(Req::to(&ep::GET_INFO).json(&body)))
        .unwrap();
    let sent = s.requests.borrow().last().unwrap().clone();
    assert_eq!(sent.deadline, Some(Duration::from_millis(61_000)));
    assert_eq!(sent.headers.get("x-stainless-read-timeout"), Some("30.5"));
    h.set_pyqwest(false);
    pool.run_until(h.send(Req::to(&ep::GET_INFO).json(&body)))
        .unwrap();
    let sent = s.requests.borrow().last().unwrap().clone();
    assert_eq!(sent.connect_timeout, Some(Duration::from_millis(30_500)));
    assert_eq!(sent.timeout, Some(Duration::from_millis(30_500)));
    // Without a platform (browsers): none of the platform headers.
    let h = http(s.clone(), 0);
    pool.run_until(h.send(Req::to(&ep::GET_INFO).json(&body)))
        .unwrap();
    let sent = s.requests.borrow().last().unwrap().clone();
    assert!(!sent.headers.iter().any(|(k, _)| {
        let k = k.to_ascii_lowercase();
        k.starts_with("x-stainless-") && k != "x-stainless-retry-count"
    }));
}

/// A call's request options go on its own requests: its retry count in place of the
/// client's (an endpoint never retried stays so), its headers after the request's own.
#[test]
fn call_options_go_on_the_calls_own_requests() {
    use crate::call::{CallOptions, Guard};
    use crate::endpoints;
    let pool = LocalPool::new();
    let env: Env = Scripted::new(&pool, |_, _| json(200, "{}"));
    let some = CallOptions {
        max_retries: Some(3),
        headers: vec![("x-trace".into(), "t".into())],
        ..Default::default()
    };
    let own = ("x-own".to_string(), "o".to_string());
    let trace = ("x-trace".to_string(), "t".to_string());
    type Row<'a> = (
        &'a CallOptions,
        &'static endpoints::Endpoint,
        Option<u32>,
        Vec<(String, String)>,
    );
    let table: &[Row] = &[
        (
            &some,
            &endpoints::GET_INFO,
            Some(3),
            vec![own.clone(), trace.clone()],
        ),
        (
            &some,
            &endpoints::SESSION_HEARTBEAT,
            Some(0),
            vec![own.clone(), trace.clone()],
        ),
        (
            &CallOptions::default(),
            &endpoints::GET_INFO,
            None,
            vec![own.clone()],
        ),
        (
            &CallOptions::default(),
            &endpoints::SESSION_HEARTBEAT,
            Some(0),
            vec![own.clone()],
        ),
    ];
    for (opts, ep, retries, headers) in table {
        let g = Guard::new(&env, opts, "t");
        let r = Req::to(ep).header("x-own", "o").under(&g);
        assert_eq!(r.max_retries, *retries, "{}", ep.name);
        assert_eq!(&r.headers, headers, "{}", ep.name);
    }
}

/// Per-call options are checked as the client's are: the error names the field.
#[test]
fn call_options_are_checked_like_the_clients_own() {
    use crate::call::CallOptions;
    type Row = (
        Option<u32>,
        &'static [(&'static str, &'static str)],
        Option<&'static str>,
    );
    let table: &[Row] = &[
        (None, &[], None),
        (Some(0), &[("x-a", "1")], None),
        (Some(100), &[], None),
        (Some(101), &[], Some("maxRetries")),
        (None, &[("x a", "1")], Some("headers.x a")),
        (None, &[("", "1")], Some("headers.")),
        (None, &[("x-a", "1\r\n2")], Some("headers.x-a")),
    ];
    for (max_retries, headers, field) in table {
        let o = CallOptions {
            max_retries: *max_retries,
            headers: headers
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            ..Default::default()
        };
        let got = o.validate().err().map(|e| e.field);
        assert_eq!(got.as_deref(), *field, "{max_retries:?} {headers:?}");
    }
}

/// Python logs `x-deprecation-note` once per call, for the response the call ends with
/// (`_base_client.py:1082,1089`), not for the responses it retried: a note on a 503 that
/// is retried is not logged; the final answer's is, at its level.
#[test]
fn a_deprecation_note_is_logged_for_the_final_response_only() {
    use crate::options::LogLevel;
    let mut pool = LocalPool::new();
    let noted = |status: u16, note: &str, level: &str| {
        let mut r = json(status, "{}").unwrap();
        r.headers.set("x-deprecation-note", note);
        r.headers.set("x-deprecation-level", level);
        Ok(r)
    };
    let s = Scripted::new(&pool, move |_, n| match n {
        0 => noted(503, "retried", "error"),
        1 => noted(200, "final", "warning"),
        2 => noted(404, "failed", "error"),
        _ => json(200, "{}"),
    });
    let logged = Rc::new(RefCell::new(Vec::new()));
    let mut o = opts();
    o.max_retries = 2;
    let sink = logged.clone();
    o.logger = Some(Rc::new(move |level: LogLevel, msg: &str| {
        sink.borrow_mut().push((level, msg.to_string()));
    }));
    let h = Http::new(s.clone(), Rc::new(o), Credential::Key("tml-test".into()));
    pool.run_until(h.send(Req::post_json("/api/v1/x", &crate::json!(1))))
        .unwrap();
    pool.run_until(h.send(Req::post_json("/api/v1/y", &crate::json!(1))))
        .unwrap_err();
    let logged = logged.borrow();
    let notes: Vec<(LogLevel, bool)> = logged
        .iter()
        .filter(|(_, m)| m.contains("Deprecation notice"))
        .map(|(l, m)| (*l, m.contains("final") || m.contains("failed")))
        .collect();
    assert_eq!(
        notes,
        [(LogLevel::Warn, true), (LogLevel::Error, true)],
        "{logged:?}"
    );
}
