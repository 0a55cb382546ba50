//! `backpressure: 'reject'` (`CallOptions::reject_backpressure`): a sampling call sends
//! once and fails with the sampler's 429 instead of backing off and sending again, also
//! while the client backs off after another call's 429 (it sends: the sampler answers).

use futures_executor::LocalPool;

use super::scripted::*;
use crate::call::CallOptions;
use crate::sampling::{SamplingClient, SamplingOptions};

#[test]
fn a_rejecting_call_sends_once_and_gets_the_samplers_429_even_in_a_backoff() {
    let mut pool = LocalPool::new();
    // Busy for three asamples, then a 400: a call that waited would end in that 400.
    let sent = std::cell::Cell::new(0);
    let s = Scripted::new(
        &pool,
        server("{}", move |_, _| {
            sent.set(sent.get() + 1);
            match sent.get() {
                ..=3 => json(429, r#"{"detail":"sampler busy"}"#),
                _ => json(400, r#"{"detail":"refused"}"#),
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
    let reject = CallOptions {
        reject_backpressure: true,
        ..Default::default()
    };
    let asamples = || s.paths().iter().filter(|p| *p == "asample").count();

    let first = pool.run_until(sc.sample(request(), reject.clone()).unwrap());
    let e = first.expect_err("the 429 is the call's answer");
    assert_eq!(e.status(), Some(429));
    assert!(e.to_string().contains("sampler busy"), "{e}");
    assert_eq!(asamples(), 1, "not sent again");

    // Within the backoff the first 429 started: sent all the same, the sampler answers.
    let second = pool.run_until(sc.sample(request(), reject).unwrap());
    let e = second.expect_err("the sampler's second 429");
    assert_eq!(e.status(), Some(429));
    assert!(e.to_string().contains("sampler busy"), "{e}");
    assert_eq!(asamples(), 2, "one request per call");
}
