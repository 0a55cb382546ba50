//! The fast engine against the general `tokenizers` engine on the real Qwen3 and
//! Llama-3 files: random strings built from every character class the split pattern
//! distinguishes (and the edge cases between them). Parity with native PyPI
//! `tokenizers` over a large real corpus is `make test-tokenizer-parity`.

use std::sync::OnceLock;

use super::test_files::read;
use super::*;

struct Pair {
    fast: Tokenizer,
    general: Tokenizer,
}

fn load(pkg: &str) -> Pair {
    let json = read(pkg, "tokenizer.json");
    let config = read(pkg, "tokenizer_config.json");
    let fast = Tokenizer::from_json(&json, Some(&config)).unwrap();
    assert_eq!(fast.engine_name(), "fast", "{pkg} should take the fast path");
    let general = Tokenizer::from_json_general(&json).unwrap();
    Pair { fast, general }
}

pub(crate) fn qwen3() -> &'static Tokenizer {
    &pairs().0.fast
}
pub(crate) fn llama3() -> &'static Tokenizer {
    &pairs().1.fast
}

fn pairs() -> &'static (Pair, Pair) {
    // Tokenizer is not Sync (its word cache is a RefCell); tests that share it run it
    // from one thread at a time through this lock-free leak per thread.
    thread_local! {
        static P: &'static (Pair, Pair) = Box::leak(Box::new((load("tokenizer-qwen3"), load("tokenizer-llama3"))));
    }
    P.with(|p| *p)
}

const POOL: &[&str] = &[
    "a", "Z", "é", "ß", "中", "文", "한", "ア", "𝐀", "ſ", "K", "S", "s", "t", "r", "e", "v", "m", "l", "d",
    "0", "7", "٣", "½", "𝟎", "Ⅷ",
    " ", " ", " ", "\t", "\n", "\r", "\r\n", "\u{3000}", "\u{a0}", "\u{2028}", "\u{85}", "\u{b}",
    "'", "'", "'s", "'S", "'ll", "'LL", "'re", "'Ve", "'ſ", "’", "!", "?", ".", ",", "-", "_", "(", ")", "{", "}", "#", "$", "`",
    "😀", "👩‍💻", "🇫🇷", "\u{301}", "e\u{301}", "\u{200d}", "\u{fe0f}", "\u{0}", "\u{7f}",
    "<|im_start|>", "<|im_end|>", "<think>", "</think>", "<|im_", "<|eot_id|>", "<|begin_of_text|>",
    "hello", " world", "  indented", "\n\n", "   \n  ", "123456", "3.14", "don't", "I'M",
];

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

fn random_strings(seed: u64, count: usize) -> Vec<String> {
    let mut rng = Rng(seed);
    (0..count)
        .map(|_| {
            let n = rng.below(24);
            (0..n).map(|_| POOL[rng.below(POOL.len())]).collect()
        })
        .collect()
}

fn check_same(p: &Pair, texts: &[String]) {
    for t in texts {
        for add in [false, true] {
            let a = p.fast.encode(t, add).unwrap();
            let b = p.general.encode(t, add).unwrap();
            assert_eq!(a, b, "encode({t:?}, {add})");
        }
        let ids = p.general.encode(t, false).unwrap();
        for skip in [false, true] {
            assert_eq!(p.fast.decode(&ids, skip), p.general.decode(&ids, skip), "decode of {t:?}");
        }
    }
}

#[test]
fn fast_matches_general_on_random_text() {
    let (q, l) = pairs();
    let texts = random_strings(0x5eed_1234_abcd_0001, 4000);
    check_same(q, &texts);
    check_same(l, &texts);
}

#[test]
fn fast_matches_general_on_long_words() {
    // Long pieces take the heap path of the BPE merger.
    let (q, l) = pairs();
    let texts: Vec<String> = vec![
        "a".repeat(300),
        "ab".repeat(150),
        "中文分词测试".repeat(40),
        "supercalifragilisticexpialidocious".repeat(5),
        " ".repeat(200) + "x",
        "\n".repeat(100),
        "!?".repeat(100),
        "1234567890".repeat(30),
        "😀".repeat(60),
        "Ünïcödé".repeat(30),
    ];
    check_same(q, &texts);
    check_same(l, &texts);
}

#[test]
fn vocabulary_and_special_tokens_match() {
    for p in [&pairs().0, &pairs().1] {
        assert_eq!(p.fast.vocab_size(), p.general.vocab_size());
        assert_eq!(p.fast.added_tokens(), p.general.added_tokens());
        for id in (0..p.general.vocab_size() as u32 + 3).step_by(97) {
            let t = p.general.id_to_token(id);
            assert_eq!(p.fast.id_to_token(id), t, "id_to_token({id})");
            if let Some(t) = t {
                assert_eq!(p.fast.token_to_id(&t), p.general.token_to_id(&t), "token_to_id({t:?})");
            }
        }
        assert_eq!(p.fast.token_to_id("not a token at all"), None);
    }
    let q = qwen3();
    assert_eq!(q.vocab_size(), 151_669);
    assert_eq!(q.token_to_id("<|im_end|>"), Some(151_645));
    assert_eq!(q.special_tokens().eos.as_deref(), Some("<|im_end|>"));
    assert_eq!(q.special_tokens().pad.as_deref(), Some("<|endoftext|>"));
    assert_eq!(llama3().special_tokens().bos.as_deref(), Some("<|begin_of_text|>"));
}

#[test]
fn known_ids() {
    let q = qwen3();
    assert_eq!(q.encode("Hello world, tinker!", false).unwrap(), [9707, 1879, 11, 259, 41112, 0]);
    assert_eq!(q.decode(&[9707, 1879, 11, 259, 41112, 0], false), "Hello world, tinker!");
    assert_eq!(q.encode("", true).unwrap(), Vec::<u32>::new());
    // Special tokens are matched even without add_special_tokens, and skipped on request.
    let ids = q.encode("<|im_start|>user\nhi<|im_end|>", false).unwrap();
    assert_eq!(ids[0], 151_644);
    assert_eq!(q.decode(&ids, true), "user\nhi");
    // Unknown ids are skipped, as tokenizers does.
    assert_eq!(q.decode(&[9707, 999_999_999], false), "Hello");
    // A lone UTF-8 lead byte (0xC3, shown as 'Ã') decodes to U+FFFD.
    let lead = q.token_to_id("Ã").unwrap();
    assert_eq!(q.decode(&[lead], false), "\u{fffd}");
}

#[test]
fn rejects_bad_files() {
    assert!(matches!(Tokenizer::from_json(b"{", None), Err(TokenizerError::Load(_))));
    assert!(matches!(Tokenizer::from_json(b"\xff", None), Err(TokenizerError::Load(_))));
    assert!(matches!(Tokenizer::from_json(b"{\"model\": {}}", None), Err(TokenizerError::Load(_))));
    let json = read("tokenizer-qwen3", "tokenizer.json");
    let err = Tokenizer::from_json(&json, Some(b"[1]")).unwrap_err();
    assert!(matches!(err, TokenizerError::Input(ref e) if e.field == "config"), "{err:?}");
}

#[test]
fn other_files_use_the_general_path() {
    // A WordLevel model with a whitespace pre-tokenizer: not specialised.
    let json = r#"{"version":"1.0","truncation":null,"padding":null,"added_tokens":[],
        "normalizer":null,"pre_tokenizer":{"type":"Whitespace"},"post_processor":null,"decoder":null,
        "model":{"type":"WordLevel","vocab":{"hello":0,"world":1,"[UNK]":2},"unk_token":"[UNK]"}}"#;
    let t = Tokenizer::from_json(json.as_bytes(), None).unwrap();
    assert_eq!(t.engine_name(), "general");
    assert_eq!(t.encode("hello world foo", false).unwrap(), [0, 1, 2]);
}
