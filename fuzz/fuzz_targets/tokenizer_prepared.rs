//! Loading a prepared tokenizer form (`Tokenizer::from_prepared`, what `Tokenizer.fromURL`
//! reads back from a cache): any body, sealed with a valid header and checksum so that the
//! reader's own checks are what is exercised. Property: it is refused or it loads a
//! tokenizer that encodes and decodes without panicking (every id is checked on load).
#![no_main]
use libfuzzer_sys::fuzz_target;
use tinker_tokenizer::seal_prepared;
use tinker_tokenizer::Tokenizer;

fuzz_target!(|body: &[u8]| {
    let Ok(tok) = Tokenizer::from_prepared(&seal_prepared(body), None) else {
        return;
    };
    for text in [
        "Hello world, tinker!",
        " \u{00e9}\u{4e2d}\n\n<|im_end|>  x",
        "",
    ] {
        let ids = tok.encode(text, true).unwrap_or_default();
        let _ = tok.decode(&ids, false);
    }
    let _ = tok.decode(&[0, 1, 2, u32::MAX], true);
    let _ = tok.prepared();
});
