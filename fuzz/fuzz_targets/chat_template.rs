//! Chat templates (Jinja sources from a `tokenizer_config.json` or the caller) rendered
//! over caller messages, and the cookbook renderers over the same messages. Properties: a
//! supervised example has one weight (0 or 1) per position, and a renderer that claims
//! the extension property renders each assistant turn's generation prompt as a prefix of
//! the whole conversation.
//! Input: a flag byte, the template, a NUL, then the messages as JSON.
#![no_main]
use libfuzzer_sys::fuzz_target;
use tinker_renderers::NAMES;
use tinker_renderers::{Message, Renderer, RendererOptions, TrainOnWhat};
use tinker_tokenizer::{ChatTemplateOptions, Tokenizer};

thread_local! {
    // Loaded once per process (the tokenizer is not Sync; libFuzzer runs on one thread).
    static TOK: &'static Tokenizer = Box::leak(Box::new(
        Tokenizer::from_json(include_bytes!("../seeds/tiny_tokenizer.json"), None)
            .expect("the seed tokenizer loads"),
    ));
}

fn tokenizer() -> &'static Tokenizer {
    TOK.with(|t| *t)
}

fuzz_target!(|data: &[u8]| {
    let Some((&flags, rest)) = data.split_first() else {
        return;
    };
    let (template, messages) = match rest.iter().position(|&b| b == 0) {
        Some(i) => (&rest[..i], &rest[i + 1..]),
        None => (rest, &b"[]"[..]),
    };
    let Ok(template) = std::str::from_utf8(template) else {
        return;
    };
    let Ok(messages) = serde_json::from_slice::<serde_json::Value>(messages) else {
        return;
    };
    let tok = tokenizer();
    let opts = ChatTemplateOptions {
        chat_template: Some(template.to_string()),
        add_generation_prompt: flags & 1 == 1,
        continue_final_message: flags & 2 == 2,
        now_unix_secs: (flags & 4 == 4).then_some(1_700_000_000),
        ..Default::default()
    };
    let _ = tok.apply_chat_template(&messages, &opts);
    if let Ok(list) = Message::list_from_json(&messages) {
        let name = NAMES[usize::from(flags >> 3) % NAMES.len()];
        let opts = RendererOptions {
            current_date: Some("2026-01-01".into()),
        };
        // Every name is known; Kimi K3.1-Pro's are refused as the cookbook refuses them.
        let Ok(r) = Renderer::new(name, &opts) else {
            return;
        };
        let _ = r.build_generation_prompt(tok, &list, "assistant", None);
        let train = TrainOnWhat::NAMES[usize::from(flags) % TrainOnWhat::NAMES.len()];
        let train = TrainOnWhat::parse(train, "train_on_what").expect("a name from NAMES");
        if let Ok(ex) = r.build_supervised_example(tok, &list, Some(train)) {
            assert_eq!(
                ex.weights.len(),
                ex.model_input.length().unwrap_or(usize::MAX)
            );
            assert!(ex.weights.iter().all(|&w| w == 0.0 || w == 1.0));
        }
        if r.has_extension_property() {
            if let Ok(all) = r.build_supervised_example(tok, &list, Some(TrainOnWhat::AllTokens)) {
                let all = all.model_input.to_ints().unwrap_or_default();
                for k in (0..list.len()).filter(|&k| list[k].role == "assistant") {
                    if let Ok(p) = r.build_generation_prompt(tok, &list[..k], "assistant", None) {
                        let p = p.to_ints().unwrap_or_default();
                        assert!(
                            all.starts_with(&p),
                            "{name}: the prompt before message {k} is not a prefix"
                        );
                    }
                }
            }
        }
    }
});
