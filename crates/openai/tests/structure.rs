//! The OpenAI crate's shape (tinker-structure's rules): errors, then the messages' and the
//! requests' readers, then the responses.

use tinker_structure::Crate;

#[test]
fn the_openai_crate_keeps_its_layers() {
    Crate::new(
        env!("CARGO_MANIFEST_DIR"),
        &[
            ("errors", &["error.rs"]),
            ("requests", &["messages.rs", "request.rs"]),
            ("responses", &["response.rs"]),
        ],
    )
    .check();
}
