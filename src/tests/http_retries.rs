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
