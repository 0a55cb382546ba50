//! The prepared form of a fast-path tokenizer (issue 21): what [`FastBpe::from_json`] builds
//! from a `tokenizer.json`, as bytes that load without parsing JSON or resolving merges
//! through the vocabulary. `Tokenizer.fromURL(url, { cache })` keeps it beside the file in
//! the cache, so a page or Worker that loads the same tokenizer again skips the slow part
//! (gpt-oss: 446 k merges, each three lookups in a 200 k-token table).
//!
//! Layout (little-endian): `TWPB`, the format version, the length and a checksum of the
//! body, then the body: pattern, NFC, `ignore_merges`; the vocabulary (per id the token's
//! length, or none, then the tokens' bytes); the 256 byte ids; the merges (key, value);
//! the added tokens; the post-processor's prefix and suffix ids. Reading checks every
//! length, id and flag, and the checksum: a truncated or altered form is refused
//! (`Err`), never half loaded, and the caller then loads the file itself.

use super::{
    added_matchers, char_to_byte_table, table_hash, Added, FastBpe, FxMap, PairMap, VocabStore,
    WordCache, EMPTY, NONE_SPAN,
};
use crate::split::Pattern;
use std::cell::RefCell;
use std::collections::HashMap;

const MAGIC: &[u8; 4] = b"TWPB";
/// Bump when the layout or the meaning of any field changes.
const FORMAT: u32 = 1;
const HEADER: usize = 4 + 4 + 8 + 8;

const PATTERNS: [Pattern; 5] = [
    Pattern::Digits1,
    Pattern::Digits3,
    Pattern::Qwen35,
    Pattern::O200k,
    Pattern::DeepSeek,
];

/// The checksum of the body: [`table_hash`] over 64 KiB blocks, chained.
fn checksum(body: &[u8]) -> u64 {
    body.chunks(1 << 16)
        .fold(body.len() as u64, |h, c| table_hash(c) ^ h.rotate_left(7))
}

struct Writer(Vec<u8>);

impl Writer {
    fn u8(&mut self, v: u8) {
        self.0.push(v);
    }
    fn u32(&mut self, v: u32) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn u64(&mut self, v: u64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn len(&mut self, n: usize) {
        self.u32(n as u32);
    }
    fn ids(&mut self, ids: &[u32]) {
        self.len(ids.len());
        ids.iter().for_each(|&i| self.u32(i));
    }
}

/// The error for a form that does not read as one: which part is wrong.
#[cold]
#[inline(never)]
fn bad(what: &str) -> String {
    let mut m = String::from("prepared tokenizer: malformed ");
    m.push_str(what);
    m
}

struct Reader<'a> {
    b: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8], String> {
        let end = self
            .at
            .checked_add(n)
            .filter(|&e| e <= self.b.len())
            .ok_or_else(|| bad(what))?;
        let s = &self.b[self.at..end];
        self.at = end;
        Ok(s)
    }
    fn u8(&mut self, what: &str) -> Result<u8, String> {
        Ok(self.take(1, what)?[0])
    }
    fn flag(&mut self, what: &str) -> Result<bool, String> {
        match self.u8(what)? {
            0 => Ok(false),
            1 => Ok(true),
            _ => Err(bad(what)),
        }
    }
    fn u32(&mut self, what: &str) -> Result<u32, String> {
        let b = self.take(4, what)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
    fn u64(&mut self, what: &str) -> Result<u64, String> {
        let mut w = [0u8; 8];
        w.copy_from_slice(self.take(8, what)?);
        Ok(u64::from_le_bytes(w))
    }
    /// A count of items of at least `item` bytes each: no more than the bytes left hold.
    fn len(&mut self, item: usize, what: &str) -> Result<usize, String> {
        let n = self.u32(what)? as usize;
        if n.saturating_mul(item) > self.b.len() - self.at {
            return Err(bad(what));
        }
        Ok(n)
    }
    fn ids(&mut self, what: &str) -> Result<Vec<u32>, String> {
        let n = self.len(4, what)?;
        (0..n).map(|_| self.u32(what)).collect()
    }
}

impl FastBpe {
    /// This tokenizer's prepared form (see the module's documentation).
    pub(crate) fn to_prepared(&self) -> Vec<u8> {
        let mut w = Writer(Vec::with_capacity(
            self.vocab.tok_arena.len() * 2 + (4 << 20),
        ));
        let pattern = PATTERNS.iter().position(|&p| p == self.pattern);
        w.u8(pattern.expect("every pattern is listed") as u8);
        w.u8(u8::from(self.nfc));
        w.u8(u8::from(self.ignore_merges));
        // Up to the last id present (the table has room to grow past it).
        let spans = &self.vocab.tok_span;
        let spans = &spans[..spans
            .iter()
            .rposition(|&s| s != NONE_SPAN)
            .map_or(0, |i| i + 1)];
        w.len(spans.len());
        spans.iter().for_each(|&(_, n)| w.u32(n));
        let absent: Vec<u32> = (0..spans.len() as u32)
            .filter(|&i| spans[i as usize] == NONE_SPAN)
            .collect();
        w.ids(&absent);
        for &s in spans.iter().filter(|&&s| s != NONE_SPAN) {
            w.0.extend_from_slice(&self.vocab.tok_arena[super::span_range(s)]);
        }
        self.byte_ids.iter().for_each(|&i| w.u32(i));
        // In the slot order of a table built for exactly these merges, inserted in rank
        // order (each merge has its own rank): the form depends only on the merges, and
        // the reader's inserts into its table of the same size walk it in order instead of
        // jumping (a cache miss each, for 446 k merges).
        // Ranks far beyond the count (only a crafted form has them: a file's ranks are its
        // merge lines) are inserted in the order they are stored instead, so the rank table
        // stays small.
        let live = || self.merges.slots.iter().filter(|(k, _)| *k != EMPTY);
        let ranks = live()
            .map(|&(_, v)| (v >> 32) as usize + 1)
            .max()
            .unwrap_or(0);
        let dense = ranks <= 4 * self.merges.len + 1024;
        let mut by_rank = vec![(EMPTY, 0u64); if dense { ranks } else { 0 }];
        let mut table = PairMap::with_capacity(self.merges.len);
        for &(k, v) in live() {
            match by_rank.get_mut((v >> 32) as usize) {
                Some(slot) if slot.0 == EMPTY => *slot = (k, v),
                _ => table.insert(k, v),
            }
        }
        for &(k, v) in by_rank.iter().filter(|(k, _)| *k != EMPTY) {
            table.insert(k, v);
        }
        w.len(table.len);
        for &(k, v) in table.slots.iter().filter(|(k, _)| *k != EMPTY) {
            w.u64(k);
            w.u64(v);
        }
        w.len(self.added.len());
        for (content, a) in &self.added {
            w.u32(a.id);
            w.u8(u8::from(a.special));
            w.u8(u8::from(a.normalized));
            w.len(content.len());
            w.0.extend_from_slice(content.as_bytes());
        }
        w.ids(&self.prefix);
        w.ids(&self.suffix);
        let body = w.0;
        let mut out = Vec::with_capacity(HEADER + body.len());
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&FORMAT.to_le_bytes());
        out.extend_from_slice(&(body.len() as u64).to_le_bytes());
        out.extend_from_slice(&checksum(&body).to_le_bytes());
        out.extend_from_slice(&body);
        out
    }

    /// Loads a prepared form written by [`FastBpe::to_prepared`] of this format version.
    pub(crate) fn from_prepared(bytes: &[u8]) -> Result<FastBpe, String> {
        let mut head = Reader { b: bytes, at: 0 };
        if head.take(4, "the header")? != MAGIC {
            return Err("not a prepared tokenizer".into());
        }
        let format = head.u32("the header")?;
        if format != FORMAT {
            return Err(format!(
                "prepared tokenizer of format {format}, this version reads {FORMAT}"
            ));
        }
        let len = head.u64("the header")?;
        let sum = head.u64("the header")?;
        let body = &bytes[HEADER..];
        if body.len() as u64 != len || checksum(body) != sum {
            return Err("prepared tokenizer: length or checksum does not match".into());
        }
        read_body(&mut Reader { b: body, at: 0 })
    }
}

fn read_body(r: &mut Reader<'_>) -> Result<FastBpe, String> {
    let pattern = *PATTERNS
        .get(r.u8("the pattern")? as usize)
        .ok_or_else(|| bad("pattern"))?;
    let nfc = r.flag("nfc")?;
    let ignore_merges = r.flag("ignore_merges")?;
    let vocab = read_vocab(r, ignore_merges)?;
    // Which ids the vocabulary has, one bit each (25 KB for 200 k ids: stays in cache).
    let mut present = vec![0u64; vocab.tok_span.len().div_ceil(64)];
    for (i, &s) in vocab.tok_span.iter().enumerate() {
        present[i / 64] |= u64::from(s != NONE_SPAN) << (i % 64);
    }
    let known = |id: u32| {
        let i = id as usize;
        present.get(i / 64).is_some_and(|w| w >> (i % 64) & 1 == 1)
    };
    let mut byte_ids = [0u32; 256];
    for b in byte_ids.iter_mut() {
        *b = r.u32("the byte ids")?;
        if !known(*b) {
            return Err(bad("the byte ids"));
        }
    }
    let n = r.len(16, "the merges")?;
    let mut merges = PairMap::with_capacity(n);
    for _ in 0..n {
        let (k, v) = (r.u64("the merges")?, r.u64("the merges")?);
        if !known((k >> 32) as u32) || !known(k as u32) || !known(v as u32) {
            return Err(bad("the merges"));
        }
        merges.insert(k, v);
    }
    let n = r.len(10, "the added tokens")?;
    let mut added = Vec::with_capacity(n);
    let mut added_by_id = FxMap::default();
    let mut added_by_content = HashMap::new();
    for i in 0..n {
        let id = r.u32("an added token")?;
        let special = r.flag("an added token")?;
        let normalized = r.flag("an added token")?;
        let len = r.len(1, "an added token")?;
        let content = std::str::from_utf8(r.take(len, "an added token")?)
            .map_err(|_| bad("an added token"))?
            .to_owned();
        if content.is_empty() || added_by_content.insert(content.clone(), i).is_some() {
            return Err(bad("an added token"));
        }
        added_by_id.insert(id, i);
        let a = Added {
            id,
            special,
            normalized,
        };
        added.push((content, a));
    }
    let prefix = r.ids("the prefix")?;
    let suffix = r.ids("the suffix")?;
    if prefix
        .iter()
        .chain(&suffix)
        .any(|&id| !known(id) && !added_by_id.contains_key(&id))
    {
        return Err(bad("the post-processor ids"));
    }
    if r.at != r.b.len() {
        return Err(bad("end (bytes after it)"));
    }
    Ok(FastBpe {
        pattern,
        nfc,
        ignore_merges,
        vocab,
        byte_ids,
        merges,
        matchers: added_matchers(&added)?,
        added,
        added_by_id,
        added_by_content,
        prefix,
        suffix,
        cache: RefCell::new(WordCache::default()),
        byte_pairs: std::cell::OnceCell::new(),
    })
}

/// The vocabulary: token lengths by id, the absent ids, then the tokens' bytes in id order;
/// rebuilt with the same pushes and index as a `tokenizer.json`'s.
fn read_vocab(r: &mut Reader<'_>, ignore_merges: bool) -> Result<VocabStore, String> {
    let n = r.len(4, "the vocabulary")?;
    let lens: Vec<u32> = (0..n)
        .map(|_| r.u32("the vocabulary"))
        .collect::<Result<_, _>>()?;
    let absent = r.ids("the vocabulary")?;
    let mut present = vec![true; n];
    for &i in &absent {
        *present
            .get_mut(i as usize)
            .ok_or_else(|| bad("the vocabulary"))? = false;
    }
    let total: u64 = (0..n)
        .filter(|&i| present[i])
        .map(|i| u64::from(lens[i]))
        .sum();
    let arena = r.take(
        usize::try_from(total).map_err(|_| bad("the vocabulary"))?,
        "the vocabulary",
    )?;
    let c2b = char_to_byte_table();
    let mut v = VocabStore {
        tok_arena: Vec::with_capacity(arena.len()),
        raw_arena: Vec::with_capacity(arena.len()),
        ..Default::default()
    };
    let mut at = 0usize;
    for id in (0..n).filter(|&i| present[i]) {
        let tok = &arena[at..at + lens[id] as usize];
        at += tok.len();
        let tok = std::str::from_utf8(tok).map_err(|_| bad("the vocabulary"))?;
        if tok.is_empty() || !v.push(tok, id as u32, &c2b) {
            return Err(bad("the vocabulary"));
        }
    }
    v.index(ignore_merges);
    Ok(v)
}

/// The key of the prepared form of the file `json`: the format version and the file's hash.
pub(crate) fn key(json: &[u8]) -> String {
    format!("{FORMAT}-{:016x}", checksum(json))
}

/// A prepared form around `body` (its header: magic, format, length, checksum), for the
/// fuzz target that feeds arbitrary bodies past the checksum.
#[cfg(any(test, feature = "fuzzing"))]
pub fn seal(body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER + body.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&FORMAT.to_le_bytes());
    out.extend_from_slice(&(body.len() as u64).to_le_bytes());
    out.extend_from_slice(&checksum(body).to_le_bytes());
    out.extend_from_slice(body);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_files::read;
    use crate::Tokenizer;

    const TEXTS: &[&str] = &[
        "Hello world, tinker! 12345 3.14",
        " \u{e9}\u{4e2d}\u{6587}\n\n<|im_end|>  x<|endoftext|>",
        "<｜User｜>ひらがな<|start|>assistant<|channel|>final<|message|>Arr",
        "",
    ];

    #[test]
    fn a_prepared_form_loads_the_tokenizer_its_file_loads() {
        for pkg in [
            "tokenizer-qwen3",
            "tokenizer-llama3",
            "tokenizer-deepseek_v3",
            "tokenizer-gptoss",
        ] {
            let json = read(pkg, "tokenizer.json");
            let config = read(pkg, "tokenizer_config.json");
            let a = Tokenizer::from_json(&json, Some(&config)).unwrap();
            let form = a.prepared().unwrap_or_else(|| panic!("{pkg}: fast path"));
            let b = Tokenizer::from_prepared(&form, Some(&config)).unwrap();
            assert!(b.prepared().unwrap() == form, "{pkg}: the form round-trips");
            assert_eq!(a.vocab_size(), b.vocab_size(), "{pkg}");
            assert_eq!(a.added_tokens(), b.added_tokens(), "{pkg}");
            let corpus = String::from_utf8(read(pkg, "tokenizer_config.json")).unwrap();
            for t in TEXTS.iter().copied().chain([corpus.as_str()]) {
                for add in [false, true] {
                    let ids = a.encode(t, add).unwrap();
                    assert_eq!(ids, b.encode(t, add).unwrap(), "{pkg}: encode {t:?}");
                    assert_eq!(a.decode(&ids, add), b.decode(&ids, add), "{pkg}");
                }
            }
            assert!(json.len() > form.len(), "{pkg}: smaller than its file");
        }
    }

    #[test]
    fn the_general_and_tiktoken_engines_have_no_prepared_form() {
        let (ranks, _) = crate::tests::tiktoken_files::qwen3_ranks();
        let opts = crate::TiktokenOptions {
            pattern: crate::split::QWEN_PATTERN.into(),
            ..Default::default()
        };
        assert!(Tokenizer::from_tiktoken(&ranks, &opts)
            .unwrap()
            .prepared()
            .is_none());
    }

    /// The prepared form of a package's `tokenizer.json`.
    fn form_of(pkg: &str) -> Vec<u8> {
        let json = read(pkg, "tokenizer.json");
        Tokenizer::from_json(&json, None)
            .unwrap()
            .prepared()
            .unwrap()
    }

    /// A form cut short, altered in any byte, or of another format is refused whole.
    #[test]
    fn a_damaged_form_is_refused() {
        let form = form_of("tokenizer-qwen3");
        let err = |b: &[u8]| match Tokenizer::from_prepared(b, None) {
            Err(crate::TokenizerError::Load(m)) => m,
            Err(e) => panic!("{e}"),
            Ok(_) => panic!("a damaged form loaded"),
        };
        for n in [
            0,
            3,
            4,
            8,
            HEADER - 1,
            HEADER,
            HEADER + 1,
            form.len() / 2,
            form.len() - 1,
        ] {
            err(&form[..n]);
        }
        let step = form.len() / 97;
        for i in (0..form.len())
            .step_by(step)
            .chain([4, 9, 17, form.len() - 1])
        {
            let mut bad = form.clone();
            bad[i] ^= 0x20;
            err(&bad);
        }
        let mut longer = form.clone();
        longer.push(0);
        err(&longer);
        let mut other = form.clone();
        other[4] = 2;
        assert!(err(&other).contains("format 2"), "{}", err(&other));
        assert_eq!(err(b"{\"model\": {}}"), "not a prepared tokenizer");
    }

    /// Past the checksum (a body sealed anew), altered bytes are refused or load a
    /// tokenizer that encodes and decodes without panicking: every id is checked.
    #[test]
    fn an_altered_body_with_a_valid_checksum_never_panics() {
        let form = form_of("tokenizer-llama3");
        let body = &form[HEADER..];
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let (mut refused, mut loaded) = (0, 0);
        for round in 0..60 {
            let mut b = body.to_vec();
            // The header fields and small counts live at the start and the end: alter
            // there more often than in the big tables.
            let i = match round % 3 {
                0 => (next() % 64) as usize,
                1 => b.len() - 1 - (next() % 2048) as usize,
                _ => (next() % b.len() as u64) as usize,
            };
            b[i] = next() as u8;
            match Tokenizer::from_prepared(&seal(&b), None) {
                Err(_) => refused += 1,
                Ok(t) => {
                    loaded += 1;
                    for text in TEXTS {
                        let ids = t.encode(text, true).unwrap_or_default();
                        let _ = t.decode(&ids, false);
                    }
                }
            }
        }
        assert!(
            refused > 0 && loaded > 0,
            "{refused} refused, {loaded} loaded"
        );
    }
}
