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
            let a = p.fast.encode(t, add).unwrap();
            let b = p.general.encode(t, add).unwrap();
            assert_eq!(a, b, "encode({t:?}, {add})");
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
        matches!(q.apply_chat_template(&m, &both), Err(TokenizerError::Input(e)) if e.field == "continueFinalMessage")
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
        matches!(bare.apply_chat_template(&m, &ChatTemplateOptions::default()), Err(TokenizerError::Input(e)) if e.field == "chatTemplate")
    );
}

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
    assert_eq!(Renderer::new("x", &opts).unwrap_err().field, "name");
    // An unknown model names what is known, for its organisation or overall.
    let e = Renderer::for_model("Qwen/Qwen9", &opts).unwrap_err();
    assert!(e.message.contains("Qwen3-8B"), "{e}");
    let e = Renderer::for_model("acme/x", &opts).unwrap_err();
    assert!(e.message.contains("deepseek-ai"), "{e}");
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
