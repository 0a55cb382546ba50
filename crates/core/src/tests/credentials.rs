//! The credential command (`TINKER_CREDENTIAL_CMD`) as the Python SDK 0.38 runs it
//! (`lib/_auth_token_provider.py`): once per credential it supplies, and on the JWT
//! exchange when the server's `credential_default_source` is `credential_cmd`.

use std::rc::Rc;

use futures_executor::LocalPool;

use super::scripted::{json, opts, Scripted};
use crate::platform::HttpRequest;

fn path(r: &HttpRequest) -> &str {
    r.url.split("/api/v1/").nth(1).unwrap_or("")
}

fn keys(s: &Scripted) -> Vec<(String, String)> {
    s.requests
        .borrow()
        .iter()
        .map(|r| {
            (
                path(r).to_string(),
                r.headers.get("X-API-Key").unwrap_or("").to_string(),
            )
        })
        .collect()
}

fn with_command(api_key: Option<&str>, command: Option<&str>) -> crate::options::ClientOptions {
    let mut o = opts();
    o.api_key = api_key.map(str::to_string);
    o.credential_cmd = command.map(str::to_string);
    o
}

fn a_jwt() -> String {
    use base64::Engine as _;
    let b = |s: &str| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(s);
    format!("{}.{}.sig", b("{}"), b(r#"{"exp":4000000000,"sub":"u"}"#))
}

#[test]
fn without_a_key_the_command_supplies_every_request_its_own_credential() {
    let mut pool = LocalPool::new();
    let s = Scripted::new(&pool, |r: &HttpRequest, _| match path(r) {
        "client/config" | "client/dynamic_config" => json(200, "{}"),
        other => panic!("unexpected request {other}"),
    });
    *s.command_outputs.borrow_mut() = vec![Ok("tml-first\n".into()), Ok("  tml-second ".into())];
    let opts = Rc::new(with_command(None, Some("print-credential")));
    pool.run_until(crate::session::Holder::connect(s.clone(), opts, false))
        .expect("connect");
    assert_eq!(
        keys(&s),
        [
            ("client/config".into(), "tml-first".into()),
            ("client/dynamic_config".into(), "tml-second".into())
        ]
    );
    assert_eq!(
        *s.commands.borrow(),
        ["print-credential", "print-credential"]
    );
}

#[test]
fn a_command_that_fails_or_prints_nothing_fails_the_call_naming_it() {
    for (out, says) in [
        (
            Err("exit status 1".to_string()),
            "TINKER_CREDENTIAL_CMD: exit status 1",
        ),
        (
            Ok(" \n".to_string()),
            "TINKER_CREDENTIAL_CMD: returned an empty credential",
        ),
    ] {
        let mut pool = LocalPool::new();
        let s = Scripted::new(&pool, |r: &HttpRequest, _| {
            panic!("unexpected request {}", r.url)
        });
        *s.command_outputs.borrow_mut() = vec![out];
        let opts = Rc::new(with_command(None, Some("cmd")));
        let e = pool
            .run_until(crate::session::Holder::connect(s.clone(), opts, false))
            .err()
            .expect("the connection fails");
        assert!(e.to_string().contains(says), "{e}");
        assert!(
            s.requests.borrow().is_empty(),
            "nothing sent without a credential"
        );
    }
}

#[test]
fn the_exchange_authenticates_with_the_command_when_the_server_asks() {
    let config = r#"{"pjwt_auth_enabled": true, "credential_default_source": "credential_cmd"}"#;
    let token = a_jwt();
    let answer = token.clone();
    let mut pool = LocalPool::new();
    let s = Scripted::new(&pool, move |r: &HttpRequest, _| match path(r) {
        "client/config" => json(200, config),
        "client/dynamic_config" => json(200, "{}"),
        "auth/token" => json(200, &format!(r#"{{"jwt": "{answer}"}}"#)),
        other => panic!("unexpected request {other}"),
    });
    *s.command_outputs.borrow_mut() = vec![Ok("tml-from-cmd".into())];
    let opts = Rc::new(with_command(Some("tml-key"), Some("cmd")));
    pool.run_until(crate::session::Holder::connect(s.clone(), opts, false))
        .expect("connect");
    assert_eq!(
        keys(&s),
        [
            ("client/config".into(), "tml-key".into()),
            ("auth/token".into(), "tml-from-cmd".into()),
            ("client/dynamic_config".into(), token),
        ]
    );

    // No command set: the exchange fails saying what to set, before sending anything.
    let mut pool = LocalPool::new();
    let s = Scripted::new(&pool, move |r: &HttpRequest, _| match path(r) {
        "client/config" => json(200, config),
        other => panic!("unexpected request {other}"),
    });
    let opts = Rc::new(with_command(Some("tml-key"), None));
    let e = pool
        .run_until(crate::session::Holder::connect(s.clone(), opts, false))
        .err()
        .expect("the connection fails");
    assert!(e.to_string().contains("set TINKER_CREDENTIAL_CMD"), "{e}");
    assert_eq!(keys(&s).len(), 1, "only client/config sent");
}
