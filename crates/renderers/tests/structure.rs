//! The renderers' shape (tinker-structure's rules), as the cookbook's: messages (their
//! Python JSON is the tokenizer crate's `py_json`), then the base renderer, then the
//! families, then the lineup (`model_info.py`).

use tinker_structure::Crate;

#[test]
fn the_renderers_keep_their_layers() {
    let mut c = Crate::new(
        env!("CARGO_MANIFEST_DIR"),
        &[
            ("messages", &["message.rs", "image.rs"]),
            ("base", &["base.rs"]),
            (
                "families",
                &[
                    "role_colon.rs",
                    "llama3.rs",
                    "qwen3.rs",
                    "qwen3_5.rs",
                    "qwen3_8.rs",
                    "deepseek_v3.rs",
                    "deepseek_v4_1.rs",
                    "glm5_3.rs",
                    "gpt_oss.rs",
                    "kimi_tools_ts.rs",
                    "kimi_k2.rs",
                    "kimi_k25.rs",
                    "kimi_k31_pro.rs",
                    "nemotron3.rs",
                    "tml_v0.rs",
                ],
            ),
            ("lineup", &["models.rs"]),
        ],
    );
    c.outside.push("tests.rs");
    c.check();
}
