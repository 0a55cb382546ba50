//! Loading a `tokenizer.json` (+ optional `tokenizer_config.json`) a user supplies (or a
//! URL serves), then encoding and decoding with it. Property: when the fast path takes a
//! file, it encodes and decodes as the reference (HuggingFace `tokenizers`, the general
//! engine) does, and its prepared form (`Tokenizer::prepared`) loads a tokenizer that
//! encodes and decodes exactly as the file's does.
//! Input: a flag byte; with bit 0 set, config JSON, a NUL, then the tokenizer JSON.
#![no_main]
use libfuzzer_sys::fuzz_target;
use tinker_tokenizer::{native_general, Tokenizer};

fuzz_target!(|data: &[u8]| {
    let Some((&flags, rest)) = data.split_first() else {
        return;
    };
    let (config, json) = if flags & 1 == 1 {
        match rest.iter().position(|&b| b == 0) {
            Some(i) => (Some(&rest[..i]), &rest[i + 1..]),
            None => (None, rest),
        }
    } else {
        (None, rest)
    };
    let Ok(tok) = Tokenizer::from_json(json, config) else {
        return;
    };
    let reference = (tok.engine_name() == "fast")
        .then(|| Tokenizer::from_json_general(json, config, &native_general).ok())
        .flatten();
    let prepared = tok
        .prepared()
        .map(|form| Tokenizer::from_prepared(&form, config).expect("a prepared form loads"));
    for text in [
        "Hello world, tinker!",
        " \u{00e9}\u{4e2d}\n\n<|im_end|>  x",
        "",
    ] {
        if let Ok(ids) = tok.encode(text, flags & 2 == 2) {
            let decoded = tok.decode(&ids, flags & 4 == 4);
            // The general engine is the reference; the prepared form must load the same.
            let others = [("reference", &reference), ("prepared", &prepared)];
            for (what, other) in others {
                if let Some(o) = other {
                    let again = o.encode(text, flags & 2 == 2);
                    assert_eq!(Ok(&ids), again.as_ref(), "{what}: encode {text:?}");
                    assert_eq!(
                        decoded,
                        o.decode(&ids, flags & 4 == 4),
                        "{what}: decode {text:?}"
                    );
                }
            }
        }
    }
    let _ = tok.decode(&[0, 1, 2, 3, u32::MAX, 151_643], false);
    let _ = tok.vocab_size();
    let _ = tok.added_tokens();
    let _ = tok.token_to_id("<|im_end|>");
    let _ = tok.id_to_token(u32::MAX);
});
