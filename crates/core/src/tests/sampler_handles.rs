//! Sampler handles (`SamplingClient::sampler_handle` / `from_handle`, Python 0.38's
//! `get_sampler_handle` / `from_sampler_handle`): the handle carries the maker's server,
//! extra headers and server flags but no credentials; a restored client sends nothing
//! until used, authenticates with its own key, and samples as a new clone of the sampler.

use futures_executor::LocalPool;

use super::scripted::*;
use crate::call::CallOptions;
use crate::handle::SamplerHandle;
use crate::sampling::{SampleRequest, SamplingClient, SamplingOptions};
use crate::types::{ModelInput, SamplingParams};

fn request() -> SampleRequest {
    SampleRequest::new(
        ModelInput::from_ints(vec![1, 2, 3]),
        1,
        SamplingParams::default(),
    )
}

/// The maker: a session on `http://sim.test` with an extra header, sampler `samp-1`.
fn make_handle(config: &'static str) -> String {
    let mut pool = LocalPool::new();
    let s = Scripted::new(&pool, server(config, |_, _| json(404, "{}")));
    let mut o = opts();
    o.default_headers = vec![("x-team".into(), "blue".into())];
    let h = pool
        .run_until(crate::session::Holder::connect(
            s.clone(),
            std::rc::Rc::new(o),
            true,
        ))
        .expect("connect");
    let sc = pool
        .run_until(SamplingClient::connect(
            h,
            "samp-1".into(),
            Some("Qwen/Qwen3-8B".into()),
            SamplingOptions {
                retry: None,
                record_stability_info: true,
            },
            "test",
        ))
        .unwrap();
    sc.sampler_handle().expect("a handle")
}

/// Another process: its own key and (ignored) base URL; samples are refused (400) so
/// each call makes one request.
fn receiver(pool: &LocalPool) -> (std::rc::Rc<Scripted>, crate::options::ClientOptions) {
    let s = Scripted::new(pool, |r, _| {
        if r.url.ends_with("/join_sampling_session") {
            json(
                200,
                r#"{"client_counter":5,"type":"join_sampling_session"}"#,
            )
        } else {
            json(400, r#"{"detail":"refused"}"#)
        }
    });
    let mut o = opts();
    o.api_key = Some("tml-receiver".into());
    o.base_url = "http://elsewhere.test".into();
    (s, o)
}

#[test]
fn a_handle_carries_the_sampler_and_server_but_no_credentials() {
    let handle = make_handle(r#"{"sample_join_sampling_session":true,"fwdbwd_max_chunk_len":7}"#);
    let h = SamplerHandle::decode(&handle).unwrap();
    assert_eq!(h.session_id, "sess-1");
    assert_eq!(h.sampling_session_id, "samp-1");
    assert_eq!(h.base_model, "Qwen/Qwen3-8B");
    assert!(h.record_stability_info);
    assert_eq!(h.holder.base_url, "http://sim.test");
    assert_eq!(
        crate::json::Value::Object(h.holder.default_headers_overrides),
        crate::json!({"x-team": "blue"})
    );
    assert!(h.holder.client_config.sample_join_sampling_session);
    assert_eq!(h.holder.client_config.fwdbwd_max_chunk_len, 7);
    let raw = String::from_utf8(
        base64::Engine::decode(&base64::engine::general_purpose::URL_SAFE, &handle).unwrap(),
    )
    .unwrap();
    assert!(
        raw.contains(r#""api_key":null"#) && !raw.contains("tml-test"),
        "{raw}"
    );
}

#[test]
fn a_restored_client_joins_as_a_new_clone_on_the_handles_server_with_its_own_key() {
    let handle = make_handle(r#"{"sample_join_sampling_session":true}"#);
    let mut pool = LocalPool::new();
    let (s, o) = receiver(&pool);
    let sc = SamplingClient::from_handle(s.clone(), &handle, o).unwrap();
    assert!(s.requests.borrow().is_empty(), "nothing sent to restore");
    assert_eq!(sc.sampling_session_id(), "samp-1");
    assert_eq!(sc.base_model(), "Qwen/Qwen3-8B");
    for _ in 0..2 {
        let r = pool.run_until(sc.sample(request(), CallOptions::default()).unwrap());
        assert_eq!(r.unwrap_err().status(), Some(400));
    }
    assert_eq!(
        s.paths(),
        ["join_sampling_session", "asample", "asample"],
        "one join, before the first sample"
    );
    for r in s.requests.borrow().iter() {
        assert!(r.url.starts_with("http://sim.test/api/v1/"), "{}", r.url);
        assert_eq!(r.headers.get("x-team"), Some("blue"));
        assert_eq!(r.headers.get("x-api-key"), Some("tml-receiver"));
    }
    let asamples: Vec<_> = s.requests.borrow()[1..].iter().map(body_json).collect();
    assert_eq!(asamples[0]["seq_id"], 5_000_000_000i64);
    assert_eq!(asamples[1]["seq_id"], 5_000_000_001i64);
    assert_eq!(asamples[0]["sampling_session_id"], "samp-1");

    // close() stops the client without finishing the maker's session.
    pool.run_until(sc.close());
    let r = pool.run_until(async {
        match sc.sample(request(), CallOptions::default()) {
            Ok(f) => f.await.map(|_| ()),
            Err(e) => Err(e),
        }
    });
    assert!(
        matches!(&r, Err(crate::error::Error::Closed { message }) if message.contains("SamplingClient is closed")),
        "{r:?}"
    );
    assert_eq!(
        s.requests.borrow().len(),
        3,
        "no finish, no sample after close"
    );
}

#[test]
fn without_the_join_flag_each_restored_client_draws_its_own_clone_id() {
    let handle = make_handle("{}");
    let mut pool = LocalPool::new();
    let (s, o) = receiver(&pool);
    let a = SamplingClient::from_handle(s.clone(), &handle, o.clone()).unwrap();
    let b = SamplingClient::from_handle(s.clone(), &handle, o).unwrap();
    for sc in [&a, &b] {
        let r = pool.run_until(sc.sample(request(), CallOptions::default()).unwrap());
        assert!(r.is_err());
    }
    assert_eq!(s.paths(), ["asample", "asample"]);
    let clones: Vec<i64> = s
        .requests
        .borrow()
        .iter()
        .map(|r| body_json(r)["seq_id"].as_i64().unwrap())
        .collect();
    for c in &clones {
        assert!(
            *c >= 1_000_000_000 && c % 1_000_000_000 == 0,
            "first seq id of a clone in 1..=1e9: {c}"
        );
    }
    assert_ne!(clones[0], clones[1], "two restored clients, two clones");
}

#[test]
fn a_python_made_handle_restores() {
    // Python 0.38's get_sampler_handle() for a sampler on a local server (its compact
    // JSON, URL-safe base64 with padding, every client_config field it dumps).
    let json = r#"{"session_id":"py-sess","sampling_session_id":"py-sess:sample:0","holder":{"base_url":"http://sim.test","default_headers_overrides":{},"client_config":{"pjwt_auth_enabled":false,"credential_default_source":"api_key","sample_dispatch_bytes_semaphore_size":10485760,"inflight_response_bytes_semaphore_size":52428800,"parallel_fwdbwd_chunks":true,"proto_compress_fwdbwd":false,"fwdbwd_max_chunk_len":1024,"fwdbwd_max_chunk_bytes_count":5000000,"fwdbwd_dispatch_bytes_semaphore_size":50000000,"billing_exception_max_pause_duration_sec":3600,"sample_no_retries":false,"sample_enable_stuck_detection":true,"sample_max_concurrent_requests":2000,"use_pyqwest_transport":true,"sample_use_retrieve_futures":false,"custom_loss_server_side":false,"sample_join_sampling_session":true},"client_dynamic_config":{"refresh_interval_sec":300,"sample_cancel_enabled":false,"sample_cancel_max_batch_size":64},"api_key":null},"base_model":"Qwen/Qwen3-8B","record_stability_info":false}"#;
    use base64::Engine as _;
    let handle = base64::engine::general_purpose::URL_SAFE.encode(json);
    let mut pool = LocalPool::new();
    let (s, o) = receiver(&pool);
    let sc = SamplingClient::from_handle(s.clone(), &handle, o).unwrap();
    assert_eq!(sc.sampling_session_id(), "py-sess:sample:0");
    let _ = pool.run_until(sc.sample(request(), CallOptions::default()).unwrap());
    assert_eq!(s.paths(), ["join_sampling_session", "asample"]);
    // Its own handle is Python's, byte for byte (field order, integers as integers).
    assert_eq!(sc.sampler_handle().unwrap(), handle);
}

#[test]
fn a_bad_handle_or_missing_key_is_an_input_error() {
    let pool = LocalPool::new();
    let (s, o) = receiver(&pool);
    let e = SamplingClient::from_handle(s.clone(), "definitely not a handle", o.clone())
        .err()
        .unwrap();
    assert!(
        matches!(e, crate::error::Error::Input(_)) && e.to_string().contains("handle"),
        "{e}"
    );
    let mut keyless = o;
    keyless.api_key = None;
    let e = SamplingClient::from_handle(s.clone(), &make_handle("{}"), keyless)
        .err()
        .unwrap();
    assert!(e.to_string().contains("apiKey"), "{e}");
    assert!(s.requests.borrow().is_empty());
}

#[test]
fn a_restored_client_dropped_without_close_stops_its_timers() {
    let handle = make_handle("{}");
    let pool = LocalPool::new();
    let (s, o) = receiver(&pool);
    let sc = SamplingClient::from_handle(s.clone(), &handle, o).unwrap();
    let holder = sc.holder().clone();
    let copy = sc.clone();
    drop(sc);
    assert!(!holder.is_closed(), "a clone still uses it");
    drop(copy);
    assert!(
        holder.is_closed(),
        "the last client gone: heartbeat and refresh stop"
    );
    assert!(
        s.requests.borrow().is_empty(),
        "no finish of the maker's session"
    );
}
