//! JWT claim parsing: tokens the server issues (`/auth/token`) and keys users pass.
//! Input: 8 bytes of clock, then the token text.
#![no_main]
use libfuzzer_sys::fuzz_target;
use tinker_core::http::{check_api_key, jwt_claims, refresh_delay, seconds_until_expiry};

fuzz_target!(|data: &[u8]| {
    if data.len() < 8 {
        return;
    }
    let now = f64::from_le_bytes(data[..8].try_into().unwrap());
    let now = if now.is_finite() {
        now.abs() % 1e11
    } else {
        1.7e9
    };
    let token = String::from_utf8_lossy(&data[8..]);
    let _ = jwt_claims(&token);
    let _ = seconds_until_expiry(&token, now);
    for r in [0.0, 0.5, 0.999_999] {
        let _ = refresh_delay(&token, r);
    }
    if let Err(e) = check_api_key(&token, now) {
        assert_eq!(e.field, "apiKey");
    }
});
