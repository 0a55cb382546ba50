//! The SDK's JSON (crates/support/src/json.rs) on untrusted bytes: the parser agrees with serde_json
//! (same values, same accept/reject) and what it writes is JSON both read alike;
//! then the wire types read from server JSON (server flags, dynamic flags, provenance
//! spans, sampler handles) read it without panicking.
//! First byte: which reader; the rest: JSON.
#![no_main]
use libfuzzer_sys::fuzz_target;
use tinker_core::config::{DynamicConfig, ServerConfig};
use tinker_support::json::{from_slice, FromJson};

fuzz_target!(|data: &[u8]| {
    let Some((&which, b)) = data.split_first() else {
        return;
    };
    let ours = from_slice(b);
    let oracle = serde_json::from_slice::<serde_json::Value>(b);
    match (&ours, &oracle) {
        (Ok(v), Ok(o)) => {
            // Numbers: serde_json keeps the last of repeated keys, as we do; both write
            // floats with the same shortest digits.
            assert_eq!(v.to_string(), o.to_string(), "same value as serde_json");
            // What we write is JSON that both parsers read alike (both read floats correctly
            // rounded: serde_json with `float_roundtrip`, as Python does).
            let text = v.to_vec();
            let again = from_slice(&text).expect("our output parses");
            let oracle =
                serde_json::from_slice::<serde_json::Value>(&text).expect("serde_json reads it");
            assert_eq!(
                again.to_string(),
                oracle.to_string(),
                "our output, read by both"
            );
        }
        (Err(_), Err(_)) => {}
        (Ok(v), Err(e)) => panic!("accepted what serde_json rejects ({e}): {v}"),
        (Err(e), Ok(o)) => panic!("rejected what serde_json accepts ({e}): {o}"),
    }
    let Ok(v) = ours else { return };
    match which % 4 {
        0 => {
            let _ = ServerConfig::from_json(&v).map(|c| c.to_json());
        }
        1 => {
            let _ = DynamicConfig::from_json(&v).map(|c| c.to_json());
        }
        2 => {
            let _ = tinker_core::types::ProvenanceSpan::from_json(&v);
        }
        _ => {
            // A handle is base64 of JSON: feed this JSON through the handle reader.
            use base64::Engine as _;
            let h = base64::engine::general_purpose::URL_SAFE.encode(v.to_vec());
            if let Ok(handle) = tinker_core::handle::SamplerHandle::decode(&h) {
                let back = tinker_core::handle::SamplerHandle::decode(&handle.encode());
                assert_eq!(
                    back.ok(),
                    Some(handle),
                    "a decoded handle re-encodes to itself"
                );
            }
        }
    }
});
