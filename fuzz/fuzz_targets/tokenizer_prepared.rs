//! Loading a prepared tokenizer form (`Tokenizer::from_prepared`, what `Tokenizer.fromURL`
//! reads back from a cache): any body, sealed with a valid header and checksum so that the
//! reader's own checks are what is exercised. Properties: it is refused or it loads a
//! tokenizer that encodes and decodes without panicking (every id is checked on load); and
//! what loaded round-trips: its own prepared form loads again and encodes every text to
//! the same ids. (Not its bytes: a body that loads may hold what the writer normalises.)
#![no_main]
use libfuzzer_sys::fuzz_target;
use tinker_tokenizer::seal_prepared;
use tinker_tokenizer::Tokenizer;

fuzz_target!(|body: &[u8]| {
    let Ok(tok) = Tokenizer::from_prepared(&seal_prepared(body), None) else {
        return;
    };
    let again = tok
        .prepared()
        .map(|p| Tokenizer::from_prepared(&p, None).expect("a tokenizer's own prepared form loads"));
    for text in [
        "Hello world, tinker!",
        " \u{00e9}\u{4e2d}\n\n<|im_end|>  x",
        "",
    ] {
        let ids = tok.encode(text, true);
        if let Ok(ids) = &ids {
            let _ = tok.decode(ids, false);
        }
        if let Some(t) = &again {
            assert_eq!(t.encode(text, true).ok(), ids.ok(), "{text:?} encodes the same after a round trip");
        }
    }
    let _ = tok.decode(&[0, 1, 2, u32::MAX], true);
});
