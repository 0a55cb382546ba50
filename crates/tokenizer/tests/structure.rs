//! The tokenizer's shape (tinker-structure's rules): Python's `json` (`py_json.rs`, which
//! the renderers use too), Unicode classes and the split, then
//! the engines (fast path, tiktoken, the cache), then chat templates; `lib.rs` is the
//! `Tokenizer` facade over them.

use tinker_structure::Crate;

#[test]
fn the_tokenizer_keeps_its_layers() {
    let mut c = Crate::new(
        env!("CARGO_MANIFEST_DIR"),
        &[
            ("python", &["py_json.rs"]),
            (
                "text",
                &["unicode_tables.rs", "unicode.rs", "scan.rs", "split.rs"],
            ),
            ("engines", &["fast.rs", "fast", "tiktoken.rs", "cache.rs"]),
            ("templates", &["chat.rs"]),
        ],
    );
    c.outside.push("tests.rs");
    c.check();
}
