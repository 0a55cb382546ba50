//! Retry headers (`retry-after-ms`, `retry-after` as seconds or an HTTP date,
//! `x-should-retry`) and every retry-delay policy fed with them.
//! Input: status (2 bytes), clock (8 bytes), random (8 bytes), then header values
//! separated by '\n': retry-after-ms, retry-after, x-should-retry.
#![no_main]
use libfuzzer_sys::fuzz_target;
use tinker_core::platform::Headers;
use tinker_core::retry::*;

fuzz_target!(|data: &[u8]| {
    if data.len() < 18 {
        return;
    }
    let status = u16::from_le_bytes([data[0], data[1]]);
    let now = f64::from_le_bytes(data[2..10].try_into().unwrap());
    let rnd = f64::from_le_bytes(data[10..18].try_into().unwrap());
    // The platform's clock and random source are well-formed; the headers are not.
    let now = if now.is_finite() {
        now.abs() % 1e11
    } else {
        1.7e9
    };
    let random = if rnd.is_finite() {
        rnd.abs().fract()
    } else {
        0.5
    };
    let text = String::from_utf8_lossy(&data[18..]);
    let mut parts = text.split('\n');
    let mut h = Headers::default();
    for name in ["retry-after-ms", "retry-after", "x-should-retry"] {
        if let Some(v) = parts.next() {
            h.0.push((name.to_string(), v.to_string()));
        }
    }
    let _ = parse_retry_after(&h, now);
    let _ = should_retry_response(status, &h);
    for attempt in [0u32, 1, 5, 31, 1000, u32::MAX] {
        let d = http_retry_delay(attempt, Some(&h), now, random);
        assert!(d.as_secs_f64() <= 60.0, "HTTP retry delay {d:?} over 60 s");
        let _ = holder_retry_delay(attempt, now - 100.0, now);
        let _ = poll_backoff_delay(attempt);
        let _ = SamplingRetryConfig::default().delay(attempt, random);
    }
    let mut b = BillingPause::default();
    let _ = b.should_pause(status, now, random * 1e6);
});
