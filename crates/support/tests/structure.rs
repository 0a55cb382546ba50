//! The support crate's shape (tinker-structure's rules): text and numbers, then the values
//! built on them, then the runtime utilities.

use tinker_structure::Crate;

#[test]
fn the_support_crate_keeps_its_layers() {
    Crate::new(
        env!("CARGO_MANIFEST_DIR"),
        &[
            (
                "text and numbers",
                &["text.rs", "float.rs", "base64.rs", "time.rs"],
            ),
            ("values", &["map.rs", "json.rs", "input.rs", "sort.rs"]),
            ("runtime", &["sync.rs", "zstd.rs", "zstd"]),
        ],
    )
    .check();
}
