//! Chat templates (Jinja sources from a `tokenizer_config.json` or the caller) rendered
//! over caller messages, and the SFT renderers over the same messages.
//! Input: a flag byte, the template, a NUL, then the messages as JSON.
#![no_main]
use libfuzzer_sys::fuzz_target;
use tinker_wasm::tokenizer::{
    ChatTemplateOptions, Message, Renderer, RendererKind, Tokenizer, TrainOnWhat,
};

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
        let kinds = RendererKind::NAMES;
        if let Ok(kind) = RendererKind::parse(kinds[usize::from(flags >> 4) % kinds.len()]) {
            let r = Renderer::new(kind);
            let _ = r.build_generation_prompt(tok, &list, "assistant", None);
            let train = TrainOnWhat::NAMES[usize::from(flags >> 3) % TrainOnWhat::NAMES.len()];
            let _ = r.build_supervised_example(tok, &list, TrainOnWhat::parse(train).unwrap());
        }
    }
});
