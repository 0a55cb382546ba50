//! `tinker://` checkpoint paths: parse never panics, and what parses round-trips.
#![no_main]
use libfuzzer_sys::fuzz_target;
use tinker_core::paths::{console, quote, TinkerPath};

fuzz_target!(|data: &[u8]| {
    let s = String::from_utf8_lossy(data);
    match TinkerPath::parse(&s) {
        Ok(p) => {
            assert_eq!(p.to_string(), s, "parse/format round trip");
            assert_eq!(TinkerPath::parse(&p.to_string()).as_ref(), Ok(&p));
            let _ = console::checkpoint(&p.training_run_id, &p.checkpoint_id());
        }
        Err(e) => assert_eq!(e.field, "path"),
    }
    let q = quote(&s);
    assert!(q
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"-_.~%".contains(&b)));
});
