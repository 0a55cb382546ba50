//! The fast engine against the general `tokenizers` engine on the real Qwen3 and
//! Llama-3 files: random strings built from every character class the split pattern
//! distinguishes (and the edge cases between them). Parity with native PyPI
//! `tokenizers` over a large real corpus is `make test-tokenizer-parity`.

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
    assert_eq!(
        fast.engine_name(),
        "fast",
        "{pkg} should take the fast path"
    );
    let general = Tokenizer::from_json_general(&json, None, &super::native_general).unwrap();
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
    "a",
    "Z",
    "é",
    "ß",
    "中",
    "文",
    "한",
    "ア",
    "𝐀",
    "ſ",
    "K",
    "S",
    "s",
    "t",
    "r",
    "e",
    "v",
    "m",
    "l",
    "d",
    "0",
    "7",
    "٣",
    "½",
    "𝟎",
    "Ⅷ",
    " ",
    " ",
    " ",
    "\t",
    "\n",
    "\r",
    "\r\n",
    "\u{3000}",
    "\u{a0}",
    "\u{2028}",
    "\u{85}",
    "\u{b}",
    "'",
    "'",
    "'s",
    "'S",
    "'ll",
    "'LL",
    "'re",
    "'Ve",
    "'ſ",
    "’",
    "!",
    "?",
    ".",
    ",",
    "-",
    "_",
    "(",
    ")",
    "{",
    "}",
    "#",
    "$",
    "`",
    "😀",
    "👩‍💻",
    "🇫🇷",
    "\u{301}",
    "e\u{301}",
    "\u{200d}",
    "\u{fe0f}",
    "\u{0}",
    "\u{7f}",
    "<|im_start|>",
    "<|im_end|>",
    "<think>",
    "</think>",
    "<|im_",
    "<|eot_id|>",
    "<|begin_of_text|>",
    "hello",
    " world",
    "  indented",
    "\n\n",
    "   \n  ",
    "123456",
    "3.14",
    "don't",
    "I'M",
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
            for split in [false, true] {
                let o = EncodeOptions {
                    add_special_tokens: add,
                    split_special_tokens: split,
                };
                let a = p.fast.encode_with(t, o).unwrap();
                let b = p.general.encode_with(t, o).unwrap();
                assert_eq!(a, b, "encode({t:?}, {o:?})");
            }
        }
        let ids = p.general.encode(t, false).unwrap();
        for skip in [false, true] {
            assert_eq!(
                p.fast.decode(&ids, skip),
                p.general.decode(&ids, skip),
                "decode of {t:?}"
            );
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
fn fast_matches_general_with_added_tokens_in_the_text() {
    // Special and non-special added tokens (Qwen3's `<think>` is not special), pieces of
    // them, and overlaps, with and without `split_special_tokens`.
    const ADDED: &[&str] = &[
        "<|im_start|>",
        "<|im_end|>",
        "<|endoftext|>",
        "<think>",
        "</think>",
        "<tool_call>",
        "<|begin_of_text|>",
        "<|eot_id|>",
        "<|start_header_id|>",
        "<|reserved_special_token_7|>",
        "<|im",
        "_end|>",
        "<",
        "|",
        ">",
        "think",
        "\n",
        " ",
        "\n\n",
        "x",
        "é",
    ];
    let mut rng = Rng(0x5eed_0000_0000_0042);
    let texts: Vec<String> = (0..3000)
        .map(|_| {
            let n = rng.below(10);
            (0..n).map(|_| ADDED[rng.below(ADDED.len())]).collect()
        })
        .collect();
    let (q, l) = pairs();
    check_same(q, &texts);
    check_same(l, &texts);
    // Split: the special token is its text's ordinary tokens; `<think>` still matches.
    let split = EncodeOptions {
        split_special_tokens: true,
        ..Default::default()
    };
    let qt = qwen3();
    let ids = qt.encode_with("<|im_end|><think>", split).unwrap();
    assert_eq!(qt.decode(&ids, false), "<|im_end|><think>");
    assert!(!ids.contains(&qt.token_to_id("<|im_end|>").unwrap()));
    assert_eq!(ids.last(), qt.token_to_id("<think>").as_ref());
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
fn deepseek_takes_the_fast_path_and_matches_general() {
    // DeepSeek V3's three splits in sequence, and its added tokens in two passes (those
    // with `normalized: false`, then those with `normalized: true` in what is left).
    let p = load("tokenizer-deepseek_v3");
    let mut texts = random_strings(0x5eed_d5ee_0000_0001, 3000);
    const EXTRA: &[&str] = &[
        "<｜User｜>",
        "<｜Assistant｜>",
        "<｜end▁of▁sentence｜>",
        "<｜begin▁of▁sentence｜>",
        "<|EOT|>",
        "<｜tool▁sep｜>",
        "<｜",
        "｜>",
        "User",
        "<|",
        "12345",
        "3.14",
        "中文",
        "ひらがな",
        "カタカナー",
        "゛",
        "・",
        "\u{3099}",
        "$x",
        "«»",
        "€",
        "\u{200d}",
        " ",
        "\n",
        "a",
        "'s",
        "\u{301}",
    ];
    let mut rng = Rng(0x5eed_d5ee_0000_0002);
    texts.extend((0..3000).map(|_| {
        let n = rng.below(10);
        (0..n)
            .map(|_| EXTRA[rng.below(EXTRA.len())])
            .collect::<String>()
    }));
    check_same(&p, &texts);
    assert_eq!(p.fast.vocab_size(), p.general.vocab_size());
    assert_eq!(p.fast.added_tokens(), p.general.added_tokens());
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
                assert_eq!(
                    p.fast.token_to_id(&t),
                    p.general.token_to_id(&t),
                    "token_to_id({t:?})"
                );
            }
        }
        assert_eq!(p.fast.token_to_id("not a token at all"), None);
    }
    let q = qwen3();
    assert_eq!(q.vocab_size(), 151_669);
    assert_eq!(q.token_to_id("<|im_end|>"), Some(151_645));
    assert_eq!(q.special_tokens().eos.as_deref(), Some("<|im_end|>"));
    assert_eq!(q.special_tokens().pad.as_deref(), Some("<|endoftext|>"));
    assert_eq!(
        llama3().special_tokens().bos.as_deref(),
        Some("<|begin_of_text|>")
    );
}

#[test]
fn known_ids() {
    let q = qwen3();
    assert_eq!(
        q.encode("Hello world, tinker!", false).unwrap(),
        [9707, 1879, 11, 259, 41112, 0]
    );
    assert_eq!(
        q.decode(&[9707, 1879, 11, 259, 41112, 0], false),
        "Hello world, tinker!"
    );
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
    assert!(matches!(
        Tokenizer::from_json(b"{", None),
        Err(TokenizerError::Load(_))
    ));
    assert!(matches!(
        Tokenizer::from_json(b"\xff", None),
        Err(TokenizerError::Load(_))
    ));
    assert!(matches!(
        Tokenizer::from_json(b"{\"model\": {}}", None),
        Err(TokenizerError::Load(_))
    ));
    let json = read("tokenizer-qwen3", "tokenizer.json");
    let err = Tokenizer::from_json(&json, Some(b"[1]")).unwrap_err();
    assert!(
        matches!(err, TokenizerError::Input(ref e) if e.field == "config"),
        "{err:?}"
    );
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

#[test]
fn chat_template_matches_transformers_output() {
    let q = qwen3();
    let m = serde_json::json!([
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Hi there"},
        {"role": "assistant", "content": "<think>\nhmm\n</think>\n\nHello!"},
        {"role": "user", "content": "Bye"}
    ]);
    let opts = ChatTemplateOptions {
        add_generation_prompt: true,
        ..Default::default()
    };
    // transformers 5.23 apply_chat_template(m, tokenize=False, add_generation_prompt=True)
    assert_eq!(
        q.apply_chat_template(&m, &opts).unwrap(),
        "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi there<|im_end|>\n<|im_start|>assistant\nHello!<|im_end|>\n<|im_start|>user\nBye<|im_end|>\n<|im_start|>assistant\n"
    );
    let l = llama3();
    assert_eq!(
        l.apply_chat_template(&m, &opts).unwrap(),
        "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nHi there<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n<think>\nhmm\n</think>\n\nHello!<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nBye<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"
    );
}

#[test]
fn chat_template_options_and_errors() {
    let q = qwen3();
    let m = serde_json::json!([{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hel"}]);
    let cont = ChatTemplateOptions {
        continue_final_message: true,
        ..Default::default()
    };
    assert_eq!(
        q.apply_chat_template(&m, &cont).unwrap(),
        "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\nHel"
    );
    let both = ChatTemplateOptions {
        continue_final_message: true,
        add_generation_prompt: true,
        ..Default::default()
    };
    assert!(
        matches!(q.apply_chat_template(&m, &both), Err(TokenizerError::Input(e)) if e.field == "continue_final_message")
    );
    let bad = serde_json::json!([{"content": "x"}]);
    assert!(
        matches!(q.apply_chat_template(&bad, &ChatTemplateOptions::default()), Err(TokenizerError::Input(e)) if e.field == "messages[0].role")
    );
    let raise = ChatTemplateOptions {
        chat_template: Some("{{ raise_exception('nope') }}".into()),
        ..Default::default()
    };
    assert!(
        matches!(q.apply_chat_template(&m, &raise), Err(TokenizerError::Template(s)) if s.contains("nope"))
    );
    let date = ChatTemplateOptions {
        chat_template: Some("{{ strftime_now('%d %b %Y') }}".into()),
        now_unix_secs: Some(1_721_738_096),
        ..Default::default()
    };
    assert_eq!(q.apply_chat_template(&m, &date).unwrap(), "23 Jul 2024");
    // Without a config there is no template.
    let json = read("tokenizer-qwen3", "tokenizer.json");
    let bare = Tokenizer::from_json(&json, None).unwrap();
    assert!(
        matches!(bare.apply_chat_template(&m, &ChatTemplateOptions::default()), Err(TokenizerError::Input(e)) if e.field == "chat_template")
    );
}

mod single_flight {
    use super::super::SingleFlight;
    use std::cell::Cell;
    use std::future::Future;
    use std::pin::pin;
    use std::rc::Rc;
    use std::sync::Arc;
    use std::task::{Context, Poll, Wake, Waker};

    struct Flag(std::sync::atomic::AtomicUsize);
    impl Wake for Flag {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
    }

    /// A future that stays pending until `gate` is opened.
    async fn gated(gate: Rc<Cell<bool>>) {
        std::future::poll_fn(|cx| {
            if gate.get() {
                Poll::Ready(())
            } else {
                cx.waker().wake_by_ref();
                Poll::Pending
            }
        })
        .await
    }

    #[test]
    fn concurrent_loads_of_one_key_run_once() {
        let cache: SingleFlight<String, Rc<u32>, String> = SingleFlight::new();
        let loads = Rc::new(Cell::new(0));
        let gate = Rc::new(Cell::new(false));
        let load = || {
            let (loads, gate) = (loads.clone(), gate.clone());
            move || async move {
                loads.set(loads.get() + 1);
                gated(gate).await;
                Ok(Rc::new(7))
            }
        };
        let mut a = pin!(cache.get_or_load("qwen".into(), load()));
        let mut b = pin!(cache.get_or_load("qwen".into(), load()));
        let mut other = pin!(cache.get_or_load("llama".into(), load()));
        let flag = Arc::new(Flag(0.into()));
        let waker = Waker::from(flag.clone());
        let mut cx = Context::from_waker(&waker);
        assert!(a.as_mut().poll(&mut cx).is_pending());
        assert!(b.as_mut().poll(&mut cx).is_pending());
        assert!(other.as_mut().poll(&mut cx).is_pending());
        assert_eq!(loads.get(), 2, "one load per key");
        assert!(cache.is_loading(&"qwen".to_string()));
        gate.set(true);
        let va = match a.as_mut().poll(&mut cx) {
            Poll::Ready(v) => v.unwrap(),
            Poll::Pending => panic!("leader should finish"),
        };
        let vb = match b.as_mut().poll(&mut cx) {
            Poll::Ready(v) => v.unwrap(),
            Poll::Pending => panic!("waiter should see the result"),
        };
        assert!(Rc::ptr_eq(&va, &vb), "both callers share one value");
        assert_eq!(loads.get(), 2);
        assert_eq!(cache.get(&"qwen".to_string()).as_deref(), Some(&7));
        // Cached now: no new load.
        let mut c = pin!(cache.get_or_load("qwen".into(), load()));
        assert!(matches!(c.as_mut().poll(&mut cx), Poll::Ready(Ok(_))));
        assert_eq!(loads.get(), 2);
    }

    #[test]
    fn failures_reach_waiters_and_are_retried_later() {
        let cache: SingleFlight<&'static str, u32, String> = SingleFlight::new();
        let gate = Rc::new(Cell::new(false));
        let flag = Arc::new(Flag(0.into()));
        let waker = Waker::from(flag);
        let mut cx = Context::from_waker(&waker);
        let g = gate.clone();
        let mut a = pin!(cache.get_or_load("k", move || async move {
            gated(g).await;
            Err::<u32, _>("boom".to_string())
        }));
        let mut b = pin!(cache.get_or_load("k", || async { Ok(1) }));
        assert!(a.as_mut().poll(&mut cx).is_pending());
        assert!(b.as_mut().poll(&mut cx).is_pending());
        gate.set(true);
        assert_eq!(a.as_mut().poll(&mut cx), Poll::Ready(Err("boom".into())));
        assert_eq!(b.as_mut().poll(&mut cx), Poll::Ready(Err("boom".into())));
        let mut c = pin!(cache.get_or_load("k", || async { Ok(2) }));
        assert_eq!(
            c.as_mut().poll(&mut cx),
            Poll::Ready(Ok(2)),
            "a later call loads again"
        );
    }

    #[test]
    fn a_dropped_leader_hands_over_to_a_waiter() {
        let cache: SingleFlight<&'static str, u32, String> = SingleFlight::new();
        let flag = Arc::new(Flag(0.into()));
        let waker = Waker::from(flag.clone());
        let mut cx = Context::from_waker(&waker);
        let never = Rc::new(Cell::new(false));
        let n = never.clone();
        let mut b = Box::pin(cache.get_or_load("k", || async { Ok(5) }));
        {
            let mut a = Box::pin(cache.get_or_load("k", move || async move {
                gated(n).await;
                Ok(1)
            }));
            assert!(a.as_mut().poll(&mut cx).is_pending());
            assert!(b.as_mut().poll(&mut cx).is_pending());
            // `a` dropped here, mid-load.
        }
        assert_eq!(b.as_mut().poll(&mut cx), Poll::Ready(Ok(5)));
    }
}

/// tiktoken vocabularies: the Qwen3 `tokenizer.json`'s vocabulary written as a ranks file
/// (its ids are in merge order, as in `qwen.tiktoken`, which it was converted from).
/// Against native `tiktoken` over the corpus: `make test-tokenizer-parity`.
pub(crate) mod tiktoken_files {
    use super::*;

    /// The ranks file and every added token (special or not: tiktoken has only the one kind).
    pub(crate) fn qwen3_ranks() -> (Vec<u8>, Vec<(String, u32)>) {
        let json: serde_json::Value =
            serde_json::from_slice(&read("tokenizer-qwen3", "tokenizer.json")).unwrap();
        let table = crate::fast::char_to_byte_table();
        let mut vocab: Vec<(u32, Vec<u8>)> = json["model"]["vocab"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(t, id)| {
                let mut raw = Vec::new();
                assert!(crate::fast::push_token_bytes(t, &table, &mut raw));
                (id.as_u64().unwrap() as u32, raw)
            })
            .collect();
        vocab.sort();
        let mut text = String::new();
        for (id, raw) in &vocab {
            text.push_str(&tinker_support::base64::encode(raw, false, true));
            text.push_str(&format!(" {id}\n"));
        }
        let specials = json["added_tokens"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| {
                (
                    t["content"].as_str().unwrap().to_owned(),
                    t["id"].as_u64().unwrap() as u32,
                )
            })
            .collect();
        (text.into_bytes(), specials)
    }

    fn options(pattern: &str, specials: &[(String, u32)]) -> TiktokenOptions {
        TiktokenOptions {
            pattern: pattern.into(),
            special_tokens: specials.to_vec(),
            nfc: true,
            bos_token: None,
            eos_token: Some("<|im_end|>".into()),
        }
    }

    #[test]
    fn qwen_ranks_encode_as_the_qwen3_file() {
        let (ranks, specials) = qwen3_ranks();
        let fast =
            Tokenizer::from_tiktoken(&ranks, &options(split::QWEN_PATTERN, &specials)).unwrap();
        assert_eq!(fast.engine_name(), "fast");
        // The same pattern, written so that no hand-written splitter knows it: the general
        // engine's regex splits.
        let wrapped = format!("(?:{})", split::QWEN_PATTERN);
        let general = Tokenizer::from_tiktoken(&ranks, &options(&wrapped, &specials)).unwrap();
        assert_eq!(general.engine_name(), "general");
        let q = qwen3();
        let mut texts = random_strings(0x5eed_7172_0000_0003, 3000);
        texts.extend([
            "a".repeat(300),
            "ab".repeat(150),
            "中文分词测试".repeat(40),
            " ".repeat(200) + "x",
            "!?".repeat(100),
            "Ünïcödé".repeat(30),
            "<|im_start|>user\nhi<|im_end|><|endoftext|>".into(),
            "e\u{301}\u{327}".into(), // NFC
        ]);
        // With split special tokens, tiktoken matches none, `tokenizers` still matches the
        // non-special ones (`<think>`, …): compared where the text has none.
        let non_special: Vec<String> = q
            .added_tokens()
            .into_iter()
            .filter(|t| !t.2)
            .map(|t| t.0)
            .collect();
        for t in &texts {
            let plain = !non_special.iter().any(|n| t.contains(n.as_str()));
            for split in [false, true] {
                if split && !plain {
                    continue;
                }
                let o = EncodeOptions {
                    add_special_tokens: false,
                    split_special_tokens: split,
                };
                let want = q.encode_with(t, o).unwrap();
                assert_eq!(fast.encode_with(t, o).unwrap(), want, "{t:?}");
                assert_eq!(general.encode_with(t, o).unwrap(), want, "{t:?} (regex)");
            }
            let ids = q.encode(t, false).unwrap();
            for skip in [false, true] {
                if skip && !plain {
                    continue;
                }
                assert_eq!(fast.decode(&ids, skip), q.decode(&ids, skip), "{t:?}");
            }
        }
        assert_eq!(fast.token_to_id("Ġworld"), q.token_to_id("Ġworld"));
        assert_eq!(fast.id_to_token(1879).as_deref(), Some("Ġworld"));
        assert_eq!(fast.token_to_id("<|im_end|>"), q.token_to_id("<|im_end|>"));
        assert_eq!(fast.eos_token_id(), q.token_to_id("<|im_end|>"));
        assert!(fast.added_tokens().iter().all(|t| t.2));
        // n_vocab: the largest id plus one.
        let max = specials.iter().map(|s| s.1).max().unwrap();
        assert_eq!(fast.vocab_size(), max as usize + 1);
        // Invalid UTF-8 (a lone lead byte) decodes to U+FFFD, as decode(errors="replace").
        let lead = fast.token_to_id("Ã").unwrap();
        assert_eq!(fast.decode(&[lead, 9707], false), "\u{fffd}Hello");
    }

    #[test]
    fn rejects_bad_ranks_and_options() {
        let (ranks, specials) = qwen3_ranks();
        let o = options(split::QWEN_PATTERN, &specials);
        let load = |r: &[u8], o: &TiktokenOptions| Tokenizer::from_tiktoken(r, o).unwrap_err();
        let msg = |e: TokenizerError| e.to_string();
        assert!(msg(load(b"", &o)).contains("no tokens"));
        assert!(msg(load(b"IQ== 0\nnot base64! 1\n", &o)).contains("line 2"));
        assert!(msg(load(b"IQ== 0\nIg== 0\n", &o)).contains("rank 0 appears twice"));
        assert!(msg(load(b"IQ== 0\nIQ== 1\n", &o)).contains("two ranks"));
        assert!(msg(load(b"IQ== 0\n", &o)).contains("single byte 0x00"));
        assert!(msg(load(b"IQ== 99999999999\n", &o)).contains("line 1"));
        let mut bad = o.clone();
        bad.special_tokens.push(("<|x|>".into(), 5));
        let e = load(&ranks, &bad);
        assert!(
            matches!(&e, TokenizerError::Input(i) if i.field == "special_tokens[\"<|x|>\"]"),
            "{e:?}"
        );
        let mut bad = o.clone();
        bad.special_tokens.push(bad.special_tokens[0].clone());
        assert!(matches!(load(&ranks, &bad), TokenizerError::Input(_)));
        let mut bad = o.clone();
        bad.bos_token = Some("<s>".into());
        let e = load(&ranks, &bad);
        assert!(
            matches!(&e, TokenizerError::Input(i) if i.field == "bos_token"),
            "{e:?}"
        );
        let mut bad = o.clone();
        bad.pattern = "(unclosed".into();
        let e = load(&ranks, &bad);
        assert!(
            matches!(&e, TokenizerError::Input(i) if i.field == "pattern"),
            "{e:?}"
        );
        bad.pattern = String::new();
        assert!(matches!(load(&ranks, &bad), TokenizerError::Input(_)));
    }
}

/// Text that is not JSON says so wherever the general engine cannot be loaded (a browser
/// before `loadGeneralEngine`), with the general engine's own message; a valid file the
/// fast path does not take still asks for the engine.
#[test]
fn broken_json_is_reported_as_such_without_the_general_engine() {
    let unavailable: GeneralLoader<'_> =
        &|_| Err(TokenizerError::GeneralUnavailable("load the engine".into()));
    let broken = Tokenizer::from_json_with(b"{ not json", None, unavailable).err();
    let native = native_general("{ not json").err().map(|e| e.to_string());
    assert_eq!(broken.map(|e| e.to_string()), native);
    let other = br#"{"model": {"type": "WordPiece", "vocab": {}}}"#;
    assert!(matches!(
        Tokenizer::from_json_with(other, None, unavailable),
        Err(TokenizerError::GeneralUnavailable(_))
    ));
}
