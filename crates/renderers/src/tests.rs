//! Renderer-level tests that span families (each family's own tests sit in its module).

use super::*;
use tinker_tokenizer::TokenizerError;

#[test]
fn messages_are_validated_with_field_paths() {
    let err = |v: serde_json::Value| Message::list_from_json(&v).unwrap_err().field;
    assert_eq!(err(serde_json::json!({})), "messages");
    assert_eq!(err(serde_json::json!([1])), "messages[0]");
    assert_eq!(
        err(serde_json::json!([{"role": "user", "content": 3}])),
        "messages[0].content"
    );
    assert_eq!(
        err(serde_json::json!([{"role": "user", "content": [{"type": "video"}]}])),
        "messages[0].content[0].type"
    );
    assert_eq!(
        err(
            serde_json::json!([{"role": "assistant", "content": "", "tool_calls": [{"function": {"name": "f", "arguments": 3}}]}])
        ),
        "messages[0].tool_calls[0].function.arguments"
    );
    assert_eq!(
        TrainOnWhat::parse("x", "train_on_what").unwrap_err().field,
        "train_on_what"
    );
    let opts = RendererOptions::default();
    let input = |e: TokenizerError| match e {
        TokenizerError::Input(i) => i,
        other => panic!("expected an input error, got {other:?}"),
    };
    assert_eq!(input(Renderer::new("x", &opts).unwrap_err()).field, "name");
    // An unknown model names what is known, for its organisation or overall.
    let e = input(Renderer::for_model("Qwen/Qwen9", &opts).unwrap_err());
    assert!(e.message.contains("Qwen3-8B"), "{e}");
    let e = input(Renderer::for_model("acme/x", &opts).unwrap_err());
    assert!(e.message.contains("deepseek-ai"), "{e}");
    // A name the cookbook knows but cannot build is refused, saying why.
    assert!(matches!(
        Renderer::new("kimi_k31_pro_max_reasoning", &opts),
        Err(TokenizerError::Renderer(m)) if m.contains("tml-renderers")
    ));
}
