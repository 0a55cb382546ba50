//! The fast path: a byte-level BPE tokenizer specialised for the GPT-4-style split
//! patterns that Qwen2/Qwen3 (`\p{N}`), Llama-3 (`\p{N}{1,3}`), Qwen3.5 and o200k
//! (gpt-oss) use, and for DeepSeek V3/V4's sequence of three splits.
//!
//! It replaces, step for step, what `tokenizers` does for such a `tokenizer.json`:
//! added tokens are split off first (leftmost-longest), the remaining text is
//! NFC-normalised when the file asks for it, split by a hand-written matcher that is
//! exactly equivalent to the backtracking regex (see [`super::split`]), mapped to bytes, and
//! each piece is merged by BPE (lowest merge rank first, leftmost on ties, as the
//! `tokenizers` word merger does). Pieces are cached by their bytes.
//!
//! [`FastBpe::from_json`] returns `Ok(None)` for any file it does not specialise (another
//! model type, other normalizers or pre-tokenizers, truncation/padding, added tokens with
//! strip flags, …); the caller then uses the general `tokenizers` path. The parity suite
//! (`make test-tokenizer-parity`) checks the ids against native `tokenizers` over a
//! corpus of more than 1 MB; the unit tests below check them against the general path.

use std::borrow::Cow;
use std::cell::RefCell;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use serde::Deserialize;

use super::scan::{ScanResult, Scanner};
use super::split::{char_at, split, Pattern, DEEPSEEK_PATTERNS};
use super::EncodeOptions;

mod prepared;
pub(crate) use prepared::key as prepared_key;
#[cfg(feature = "fuzzing")]
pub use prepared::seal as seal_prepared;

// ---------------------------------------------------------------------------------
// Hashing

/// A multiply-rotate hasher (FxHash) for integer and short byte keys.
#[derive(Default, Clone, Copy)]
pub(crate) struct FxHasher(u64);

const FX_K: u64 = 0x517c_c1b7_2722_0a95;

impl FxHasher {
    #[inline(always)]
    fn add(&mut self, w: u64) {
        self.0 = (self.0.rotate_left(5) ^ w).wrapping_mul(FX_K);
    }
}

impl Hasher for FxHasher {
    #[inline(always)]
    fn write(&mut self, bytes: &[u8]) {
        let mut rest = bytes;
        while let [a, b, c, d, e, f, g, h, tail @ ..] = rest {
            self.add(u64::from_le_bytes([*a, *b, *c, *d, *e, *f, *g, *h]));
            rest = tail;
        }
        if !rest.is_empty() {
            let mut w = 0u64;
            for (k, &x) in rest.iter().enumerate() {
                w |= u64::from(x) << (8 * k);
            }
            self.add(w);
        }
        self.add(bytes.len() as u64);
    }
    #[inline(always)]
    fn write_u64(&mut self, i: u64) {
        self.add(i);
    }
    #[inline]
    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }
    #[inline(always)]
    fn finish(&self) -> u64 {
        // The multiply leaves the well-mixed bits at the top; tables index with the low
        // bits, so bring them down (as rustc-hash 2 does).
        self.0.rotate_left(26)
    }
}

pub(crate) type FxMap<K, V> = HashMap<K, V, BuildHasherDefault<FxHasher>>;

#[inline(always)]
fn read_u32(b: &[u8], i: usize) -> u64 {
    u64::from(u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]))
}

#[inline(always)]
fn read_u64(b: &[u8], i: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&b[i..i + 8]);
    u64::from_le_bytes(w)
}

/// The hash of a byte string for [`BytesTable`] and [`Words`]: the well-mixed bits on
/// top (tables index with the top bits; the low 32 are a tag). Short strings (most BPE
/// pieces and tokens) are read as one word without a loop over their bytes: up to 3 bytes
/// as the first, middle and last, 4 to 8 as two overlapping 4-byte reads, longer ones in
/// 8-byte steps with an overlapping last read; the length is mixed in, so no two strings
/// of one length read the same word.
#[inline(always)]
pub(crate) fn table_hash(b: &[u8]) -> u64 {
    let n = b.len();
    let mut h = (n as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    if n <= 8 {
        h ^= if n >= 4 {
            read_u32(b, 0) | (read_u32(b, n - 4) << 32)
        } else if n > 0 {
            u64::from(b[0]) | (u64::from(b[n / 2]) << 8) | (u64::from(b[n - 1]) << 16)
        } else {
            0
        };
    } else {
        let mut i = 0;
        while i + 8 < n {
            h = (h ^ read_u64(b, i)).wrapping_mul(FX_K).rotate_left(26);
            i += 8;
        }
        h ^= read_u64(b, n - 8);
    }
    let m = h.wrapping_mul(FX_K);
    m ^ (m >> 32)
}

/// An open-addressing table from byte strings stored in an arena to ids: one `u64` per
/// slot (32 bits of hash, then the id), no allocation per key; keys are compared only
/// when the stored hash matches.
#[derive(Default)]
pub(crate) struct BytesTable {
    slots: Vec<u64>,
    shift: u32,
}

const EMPTY: u64 = u64::MAX;

impl BytesTable {
    pub(crate) fn with_capacity(n: usize) -> Self {
        let size = (n * 2).next_power_of_two().max(16);
        BytesTable {
            slots: vec![EMPTY; size],
            shift: 64 - size.trailing_zeros(),
        }
    }
    /// Inserts `id` for `key` unless present (the first insertion wins; `false` then);
    /// `get_key` reads the key of an already stored id.
    #[inline(always)]
    pub(crate) fn insert<'a>(
        &mut self,
        key: &[u8],
        id: u32,
        get_key: impl Fn(u32) -> &'a [u8],
    ) -> bool {
        let h = table_hash(key);
        let tag = (h >> 8) & 0xFFFF_FFFF;
        let mask = self.slots.len() - 1;
        let mut i = (h >> self.shift) as usize;
        loop {
            let s = self.slots[i];
            if s == EMPTY {
                self.slots[i] = (tag << 32) | u64::from(id);
                return true;
            }
            if s >> 32 == tag && get_key(s as u32) == key {
                return false;
            }
            i = (i + 1) & mask;
        }
    }
    #[inline(always)]
    pub(crate) fn get<'a>(&self, key: &[u8], get_key: impl Fn(u32) -> &'a [u8]) -> Option<u32> {
        let h = table_hash(key);
        let tag = (h >> 8) & 0xFFFF_FFFF;
        let mask = self.slots.len() - 1;
        let mut i = (h >> self.shift) as usize;
        loop {
            let s = self.slots[i];
            if s == EMPTY {
                return None;
            }
            if s >> 32 == tag && get_key(s as u32) == key {
                return Some(s as u32);
            }
            i = (i + 1) & mask;
        }
    }
}

/// Merge table: (left id, right id) → (rank, merged id), open addressing over one
/// `Vec` of key/value pairs (faster than a general hash map to fill and to probe).
struct PairMap {
    slots: Vec<(u64, u64)>,
    shift: u32,
    len: usize,
}

impl PairMap {
    fn with_capacity(n: usize) -> Self {
        // Load factor at most 3/4: linear probing stays short, the table stays small.
        let size = (n + n / 3 + 1).next_power_of_two().max(16);
        PairMap {
            slots: vec![(EMPTY, 0); size],
            shift: 64 - size.trailing_zeros(),
            len: 0,
        }
    }
    /// Doubles the table (keeps the load factor at most 3/4 as entries are added).
    fn grow(&mut self) {
        let old = std::mem::take(&mut self.slots);
        let size = old.len() * 2;
        self.slots = vec![(EMPTY, 0); size];
        self.shift = 64 - size.trailing_zeros();
        self.len = 0;
        for (k, v) in old {
            if k != EMPTY {
                self.insert(k, v);
            }
        }
    }
    #[inline(always)]
    fn index(&self, key: u64) -> usize {
        (key.wrapping_mul(FX_K) >> self.shift) as usize
    }
    /// Sets `key` (a later insert replaces an earlier one, like a map built in order).
    #[inline(always)]
    fn insert(&mut self, key: u64, value: u64) {
        if (self.len + 1) * 4 > self.slots.len() * 3 {
            self.grow();
        }
        let mask = self.slots.len() - 1;
        let mut i = self.index(key);
        loop {
            let (k, _) = self.slots[i];
            if k == EMPTY || k == key {
                self.len += usize::from(k == EMPTY);
                self.slots[i] = (key, value);
                return;
            }
            i = (i + 1) & mask;
        }
    }
    #[inline(always)]
    fn get(&self, key: u64) -> Option<u64> {
        let mask = self.slots.len() - 1;
        let mut i = self.index(key);
        loop {
            let (k, v) = self.slots[i];
            if k == key {
                return Some(v);
            }
            if k == EMPTY {
                return None;
            }
            i = (i + 1) & mask;
        }
    }
}

// ---------------------------------------------------------------------------------
// Byte-level alphabet (GPT-2): every byte is shown as a printable char.

pub(crate) fn byte_to_char() -> [char; 256] {
    let mut map = ['\0'; 256];
    let mut n = 0u32;
    for b in 0..=255u32 {
        let printable =
            (b'!' as u32..=b'~' as u32).contains(&b) || (0xA1..=0xAC).contains(&b) || b >= 0xAE;
        map[b as usize] = if printable {
            char::from_u32(b).expect("latin-1")
        } else {
            n += 1;
            char::from_u32(255 + n).expect("valid")
        };
    }
    map
}

/// Byte-level chars are all below U+0144: a direct table from char to byte + 1.
pub(crate) fn char_to_byte_table() -> [u16; 0x144] {
    let mut t = [0u16; 0x144];
    for (b, c) in byte_to_char().iter().enumerate() {
        t[*c as usize] = b as u16 + 1;
    }
    t
}

/// Appends the raw bytes of a byte-level token to `out`; `false` (and `out` unchanged)
/// when a char is outside the alphabet.
#[inline(always)]
pub(crate) fn push_token_bytes(token: &str, table: &[u16; 0x144], out: &mut Vec<u8>) -> bool {
    let start = out.len();
    let b = token.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let (c, l) = char_at(b, i);
        i += l;
        match table.get(c as usize) {
            Some(&x) if x != 0 => out.push((x - 1) as u8),
            _ => {
                out.truncate(start);
                return false;
            }
        }
    }
    true
}

// ---------------------------------------------------------------------------------
// tokenizer.json, parsed with borrowed strings

struct RawFile<'a> {
    added_tokens: Vec<RawAdded<'a>>,
    normalizer: Option<serde_json::Value>,
    pre_tokenizer: Option<serde_json::Value>,
    post_processor: Option<serde_json::Value>,
    decoder: Option<serde_json::Value>,
    truncation: Option<serde_json::Value>,
    padding: Option<serde_json::Value>,
    model: RawModel<'a>,
}

#[derive(Deserialize)]
struct RawAdded<'a> {
    id: u32,
    #[serde(borrow)]
    content: Cow<'a, str>,
    #[serde(default)]
    single_word: bool,
    #[serde(default)]
    lstrip: bool,
    #[serde(default)]
    rstrip: bool,
    #[serde(default)]
    normalized: bool,
    #[serde(default)]
    special: bool,
}

#[derive(Default)]
struct RawModel<'a> {
    kind: Option<String>,
    dropout: Option<f64>,
    continuing_subword_prefix: Option<String>,
    end_of_word_suffix: Option<String>,
    ignore_merges: bool,
    vocab: Option<VocabStore>,
    /// Merges as they are read, once the vocabulary is known (the usual key order).
    merges: Option<MergeBuild>,
    /// Merges met before the vocabulary (unusual order): resolved afterwards.
    early_merges: Vec<(Cow<'a, str>, Cow<'a, str>)>,
    /// A vocab entry reused an id (`tokenizers` keeps last-wins maps) or has an id past the
    /// file's length: not specialised.
    duplicate_id: bool,
}

/// The model vocabulary as the fast path stores it: the byte-level token strings and
/// their raw bytes in two arenas, id-indexed spans, and hash tables over both.
#[derive(Default)]
struct VocabStore {
    tok_arena: Vec<u8>,
    tok_span: Vec<(u32, u32)>,
    raw_arena: Vec<u8>,
    raw_span: Vec<(u32, u32)>,
    by_token: BytesTable,
    by_raw: BytesTable,
    raw_indexed: bool,
    len: usize,
}

#[inline(always)]
pub(crate) fn span_range(s: (u32, u32)) -> std::ops::Range<usize> {
    s.0 as usize..(s.0 + s.1) as usize
}

impl VocabStore {
    /// Adds `tok` as `id`; `false` if the id is taken.
    #[inline(always)]
    fn push(&mut self, tok: &str, id: u32, c2b: &[u16; 0x144]) -> bool {
        let i = id as usize;
        if i >= self.tok_span.len() {
            let n = (i + 1).max(self.tok_span.len() * 2);
            self.tok_span.resize(n, NONE_SPAN);
            self.raw_span.resize(n, NONE_SPAN);
        }
        if self.tok_span[i] != NONE_SPAN {
            return false;
        }
        self.tok_span[i] = (self.tok_arena.len() as u32, tok.len() as u32);
        self.tok_arena.extend_from_slice(tok.as_bytes());
        let start = self.raw_arena.len();
        if push_token_bytes(tok, c2b, &mut self.raw_arena) {
            self.raw_span[i] = (start as u32, (self.raw_arena.len() - start) as u32);
        }
        self.len += 1;
        true
    }

    /// Builds the token-string table (and, for `ignore_merges`, the raw-bytes table).
    fn index(&mut self, raw_too: bool) {
        let mut by_token = BytesTable::with_capacity(self.len);
        let mut by_raw = BytesTable::with_capacity(if raw_too { self.len } else { 0 });
        for (id, &s) in self.tok_span.iter().enumerate() {
            if s == NONE_SPAN {
                continue;
            }
            let arena = &self.tok_arena;
            let spans = &self.tok_span;
            by_token.insert(&arena[span_range(s)], id as u32, |j| {
                &arena[span_range(spans[j as usize])]
            });
            let r = self.raw_span[id];
            if raw_too && r != NONE_SPAN {
                let arena = &self.raw_arena;
                let spans = &self.raw_span;
                by_raw.insert(&arena[span_range(r)], id as u32, |j| {
                    &arena[span_range(spans[j as usize])]
                });
            }
        }
        self.by_token = by_token;
        self.by_raw = by_raw;
        self.raw_indexed = raw_too;
    }

    #[inline(always)]
    fn tok(&self, id: u32) -> Option<&[u8]> {
        let s = *self.tok_span.get(id as usize)?;
        (s != NONE_SPAN).then(|| &self.tok_arena[span_range(s)])
    }

    #[inline(always)]
    fn raw(&self, id: u32) -> Option<&[u8]> {
        let s = *self.raw_span.get(id as usize)?;
        (s != NONE_SPAN).then(|| &self.raw_arena[span_range(s)])
    }

    #[inline(always)]
    fn lookup(&self, token: &[u8]) -> Option<u32> {
        self.by_token.get(token, |id| self.tok(id).unwrap_or(&[]))
    }

    #[inline(always)]
    fn lookup_raw(&self, bytes: &[u8]) -> Option<u32> {
        self.by_raw.get(bytes, |id| self.raw(id).unwrap_or(&[]))
    }
}

/// Merges resolved to ids as they are read: (left, right) → (rank, merged id).
struct MergeBuild {
    map: PairMap,
    rank: u32,
    last_new: u32,
    buf: Vec<u8>,
}

impl MergeBuild {
    fn new(capacity: usize) -> Self {
        MergeBuild {
            map: PairMap::with_capacity(capacity),
            rank: 0,
            last_new: u32::MAX,
            buf: Vec::new(),
        }
    }

    #[inline(always)]
    fn add(&mut self, v: &VocabStore, a: &str, b: &str) -> ScanResult<()> {
        let (Some(ia), Some(ib)) = (v.lookup(a.as_bytes()), v.lookup(b.as_bytes())) else {
            return Err(format!("merge {a:?} {b:?}: token out of vocabulary"));
        };
        // Vocabularies trained by `tokenizers` number merged tokens in merge order: try
        // the id after the previous one (one sequential read) before hashing.
        let guess = self.last_new.wrapping_add(1);
        let new = match v.tok(guess) {
            Some(t)
                if t.len() == a.len() + b.len()
                    && t.starts_with(a.as_bytes())
                    && t.ends_with(b.as_bytes()) =>
            {
                guess
            }
            _ => {
                self.buf.clear();
                self.buf.extend_from_slice(a.as_bytes());
                self.buf.extend_from_slice(b.as_bytes());
                v.lookup(&self.buf)
                    .ok_or_else(|| format!("merge {a:?} {b:?}: merged token out of vocabulary"))?
            }
        };
        self.last_new = new;
        self.map.insert(
            pair_key(ia, ib),
            (u64::from(self.rank) << 32) | u64::from(new),
        );
        self.rank += 1;
        Ok(())
    }
}

fn small<T: serde::de::DeserializeOwned>(raw: &str) -> ScanResult<T> {
    serde_json::from_str(raw).map_err(|e| e.to_string())
}

/// Reads `tokenizer.json` with the scanner: big sections walked in place, small ones
/// handed to serde. `Err` for anything unexpected (the general path then decides).
fn scan_file(json: &str) -> ScanResult<RawFile<'_>> {
    let mut sc = Scanner::new(json);
    let mut f = RawFile {
        added_tokens: Vec::new(),
        normalizer: None,
        pre_tokenizer: None,
        post_processor: None,
        decoder: None,
        truncation: None,
        padding: None,
        model: RawModel::default(),
    };
    let mut saw_model = false;
    sc.expect(b'{')?;
    if !sc.empty(b'}') {
        loop {
            let key = sc.string()?;
            sc.expect(b':')?;
            match key.as_ref() {
                "model" => {
                    f.model = scan_model(&mut sc, json.len())?;
                    saw_model = true;
                }
                "added_tokens" => {
                    f.added_tokens = serde_json::from_str(sc.skip()?).map_err(|e| e.to_string())?
                }
                "normalizer" => f.normalizer = small(sc.skip()?)?,
                "pre_tokenizer" => f.pre_tokenizer = small(sc.skip()?)?,
                "post_processor" => f.post_processor = small(sc.skip()?)?,
                "decoder" => f.decoder = small(sc.skip()?)?,
                "truncation" => f.truncation = small(sc.skip()?)?,
                "padding" => f.padding = small(sc.skip()?)?,
                _ => {
                    sc.skip()?;
                }
            }
            if !sc.more(b'}')? {
                break;
            }
        }
    }
    if !saw_model {
        return Err("no model".into());
    }
    Ok(f)
}

fn scan_model<'a>(sc: &mut Scanner<'a>, sc_len: usize) -> ScanResult<RawModel<'a>> {
    let mut m = RawModel::default();
    sc.expect(b'{')?;
    if sc.empty(b'}') {
        return Ok(m);
    }
    loop {
        let key = sc.string()?;
        sc.expect(b':')?;
        match key.as_ref() {
            "type" => m.kind = small(sc.skip()?)?,
            "dropout" => m.dropout = small(sc.skip()?)?,
            "continuing_subword_prefix" => m.continuing_subword_prefix = small(sc.skip()?)?,
            "end_of_word_suffix" => m.end_of_word_suffix = small(sc.skip()?)?,
            "ignore_merges" => m.ignore_merges = small(sc.skip()?)?,
            "vocab" => {
                let c2b = char_to_byte_table();
                let mut v = VocabStore {
                    tok_arena: Vec::with_capacity(sc_len / 5),
                    raw_arena: Vec::with_capacity(sc_len / 6),
                    ..Default::default()
                };
                sc.expect(b'{')?;
                if !sc.empty(b'}') {
                    loop {
                        let tok = sc.string()?;
                        sc.expect(b':')?;
                        let id = sc.u32()?;
                        // An id beyond the file's length cannot belong to a dense vocabulary
                        // (each entry takes several bytes): leave such a file to the general
                        // engine rather than allocate a table for it (found by fuzzing).
                        if id as usize > sc_len || !v.push(&tok, id, &c2b) {
                            m.duplicate_id = true;
                        }
                        if !sc.more(b'}')? {
                            break;
                        }
                    }
                }
                // `ignore_merges` comes before `vocab` in files written by `tokenizers`.
                v.index(m.ignore_merges);
                m.vocab = Some(v);
            }
            "merges" => {
                let mut build = m.vocab.as_ref().map(|v| MergeBuild::new(v.len));
                sc.expect(b'[')?;
                if !sc.empty(b']') {
                    loop {
                        let pair = match sc.peek() {
                            Some(b'"') => match sc.string()? {
                                Cow::Borrowed(s) => split_merge(s)
                                    .map(|(a, b)| (Cow::Borrowed(a), Cow::Borrowed(b))),
                                Cow::Owned(s) => split_merge(&s).map(|(a, b)| {
                                    (Cow::Owned(a.to_owned()), Cow::Owned(b.to_owned()))
                                }),
                            },
                            Some(b'[') => {
                                sc.expect(b'[')?;
                                let a = sc.string()?;
                                sc.expect(b',')?;
                                let b = sc.string()?;
                                sc.expect(b']')?;
                                Some((a, b))
                            }
                            _ => None,
                        };
                        let Some((a, b)) = pair else {
                            return Err("a merge is not a pair".into());
                        };
                        match (&mut build, &m.vocab) {
                            (Some(build), Some(v)) => build.add(v, &a, &b)?,
                            _ => m.early_merges.push((a, b)),
                        }
                        if !sc.more(b']')? {
                            break;
                        }
                    }
                }
                m.merges = build;
            }
            _ => {
                sc.skip()?;
            }
        }
        if !sc.more(b'}')? {
            break;
        }
    }
    Ok(m)
}

/// A legacy merge line `"a b"`: exactly two parts separated by one space.
fn split_merge(s: &str) -> Option<(&str, &str)> {
    let (a, b) = s.split_once(' ')?;
    (!b.contains(' ')).then_some((a, b))
}

// ---------------------------------------------------------------------------------
// The tokenizer

struct Added {
    id: u32,
    special: bool,
    normalized: bool,
}

/// The file's added tokens with the ids `tokenizers` would assign them (`lookup` finds a
/// content in the model's vocabulary of `model_len` tokens): in order, by id and by
/// content; `None` when one needs what the fast path does not do.
#[allow(clippy::type_complexity)]
fn added_tokens(
    raw_added: &[RawAdded<'_>],
    nfc: bool,
    model_len: usize,
    lookup: impl Fn(&str) -> Option<u32>,
) -> Option<(
    Vec<(String, Added)>,
    FxMap<u32, usize>,
    HashMap<String, usize>,
)> {
    let mut added: Vec<(String, Added)> = Vec::new();
    let mut added_by_id = FxMap::default();
    let mut added_by_content = HashMap::new();
    let mut next_id: Option<u32> = None;
    for t in raw_added {
        if t.single_word || t.lstrip || t.rstrip || (t.normalized && nfc) {
            return None;
        }
        if t.content.is_empty() {
            continue;
        }
        if added_by_content.contains_key(t.content.as_ref()) {
            return None;
        }
        let id = match lookup(&t.content) {
            Some(id) => id,
            None => {
                let base = *next_id.get_or_insert_with(|| {
                    let max = added.iter().map(|(_, a)| a.id).max();
                    match max {
                        Some(mx) if mx >= model_len as u32 || model_len == 0 => mx + 1,
                        _ => model_len as u32,
                    }
                });
                next_id = Some(base + 1);
                base
            }
        };
        if id != t.id {
            return None;
        }
        added_by_id.insert(id, added.len());
        added_by_content.insert(t.content.to_string(), added.len());
        added.push((
            t.content.to_string(),
            Added {
                id,
                special: t.special,
                normalized: t.normalized,
            },
        ));
    }
    Some((added, added_by_id, added_by_content))
}

/// A byte-level BPE tokenizer for the specialised split patterns.
pub(crate) struct FastBpe {
    pattern: Pattern,
    nfc: bool,
    ignore_merges: bool,
    /// Model tokens (byte-level strings and raw bytes) and their lookup tables.
    vocab: VocabStore,
    byte_ids: [u32; 256],
    merges: PairMap,
    added: Vec<(String, Added)>,
    added_by_id: FxMap<u32, usize>,
    added_by_content: HashMap<String, usize>,
    /// Added tokens are split off in up to two passes, as `tokenizers` does: those with
    /// `normalized: false` on the text, then those with `normalized: true` on what is
    /// left (normalised: taken only when the file has no normalizer). Each matcher comes
    /// with the index in `added` of each of its patterns.
    matchers: Vec<(aho_corasick::AhoCorasick, Vec<usize>)>,
    prefix: Vec<u32>,
    suffix: Vec<u32>,
    cache: RefCell<WordCache>,
    /// The merge of every byte pair (`merge_packed` of their byte tokens), by
    /// `first << 8 | second`: BPE's first lookups, from a dense 512 KiB table built on
    /// first use instead of the merge map.
    byte_pairs: std::cell::OnceCell<Box<[u64]>>,
}

/// Pieces up to this many bytes merge by scanning their pairs; longer ones through a heap.
const SCAN_MAX: usize = 64;

pub(crate) const NONE_SPAN: (u32, u32) = (u32::MAX, 0);
/// Pieces longer than this are not cached (they are rare, and would crowd the cache).
const CACHE_MAX_WORD_LEN: usize = 256;
/// The word cache's bounds: words, bytes of words, ids (about 9 MiB at most with the index).
const CACHE_MAX_WORDS: usize = 1 << 17;
const CACHE_MAX_BYTES: usize = 2 << 20;
const CACHE_MAX_IDS: usize = 1 << 19;

/// The word cache: the ids of each piece already merged, by the piece's bytes. Words and
/// ids live in two arenas behind an open-addressing index (no allocation per word); the
/// cache is bounded in words, bytes and ids and starts over empty when a bound would be
/// passed, so a long-lived tokenizer fed endless distinct text stays within about 9 MiB.
#[derive(Default)]
pub(crate) struct Words {
    /// `(hash tag << 32) | entry`, or `EMPTY`.
    slots: Vec<u64>,
    shift: u32,
    /// Per word: start in `bytes`, start in `ids`, byte length, id count.
    entries: Vec<(u32, u32, u16, u16)>,
    bytes: Vec<u8>,
    ids: Vec<u32>,
}

impl Words {
    #[inline(always)]
    fn key(&self, e: u32) -> &[u8] {
        let (b, _, n, _) = self.entries[e as usize];
        &self.bytes[b as usize..b as usize + n as usize]
    }

    /// The cached ids of `word`.
    #[inline(always)]
    pub(crate) fn get(&self, word: &[u8]) -> Option<&[u32]> {
        if self.slots.is_empty() {
            return None;
        }
        let h = table_hash(word);
        let tag = h & 0xFFFF_FFFF;
        let mask = self.slots.len() - 1;
        let mut i = (h >> self.shift) as usize;
        loop {
            let s = self.slots[i];
            if s == EMPTY {
                return None;
            }
            if s >> 32 == tag && self.key(s as u32) == word {
                let (_, a, _, n) = self.entries[s as u32 as usize];
                return Some(&self.ids[a as usize..a as usize + n as usize]);
            }
            i = (i + 1) & mask;
        }
    }

    /// Caches `ids` for `word` (not already cached; at most [`CACHE_MAX_WORD_LEN`] bytes).
    pub(crate) fn insert(&mut self, word: &[u8], ids: &[u32]) {
        if word.len() > CACHE_MAX_WORD_LEN || ids.len() > CACHE_MAX_WORD_LEN {
            return;
        }
        if self.entries.len() >= CACHE_MAX_WORDS
            || self.bytes.len() + word.len() > CACHE_MAX_BYTES
            || self.ids.len() + ids.len() > CACHE_MAX_IDS
        {
            // Start over: the index keeps its size, the arenas their capacity.
            self.slots.fill(EMPTY);
            self.entries.clear();
            self.bytes.clear();
            self.ids.clear();
        }
        // At most half full.
        if (self.entries.len() + 1) * 2 > self.slots.len() {
            self.grow();
        }
        let e = self.entries.len() as u32;
        self.entries.push((
            self.bytes.len() as u32,
            self.ids.len() as u32,
            word.len() as u16,
            ids.len() as u16,
        ));
        self.bytes.extend_from_slice(word);
        self.ids.extend_from_slice(ids);
        self.place(table_hash(word), e);
    }

    #[inline(always)]
    fn place(&mut self, h: u64, e: u32) {
        let mask = self.slots.len() - 1;
        let mut i = (h >> self.shift) as usize;
        while self.slots[i] != EMPTY {
            i = (i + 1) & mask;
        }
        self.slots[i] = ((h & 0xFFFF_FFFF) << 32) | u64::from(e);
    }

    fn grow(&mut self) {
        let size = (self.slots.len() * 2).max(1 << 10);
        self.slots = vec![EMPTY; size];
        self.shift = 64 - size.trailing_zeros();
        for e in 0..self.entries.len() as u32 {
            let h = table_hash(self.key(e));
            self.place(h, e);
        }
    }

    /// The number of cached words.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }
}

/// Per-tokenizer encoding state: the word cache and scratch for BPE, reused across words.
#[derive(Default)]
struct WordCache {
    words: Words,
    syms: Vec<u32>,
    /// The merge of each symbol with the next one, `(rank << 32) | merged id`, or `u64::MAX`.
    pairs: Vec<u64>,
    heap: std::collections::BinaryHeap<std::cmp::Reverse<(u32, u32)>>,
    prev: Vec<u32>,
    next: Vec<u32>,
}

/// A leftmost-longest matcher over added or special token strings (one instantiation of
/// aho-corasick's generic builder for both engines: it is large).
pub(crate) fn token_matcher(tokens: &[&str]) -> Result<aho_corasick::AhoCorasick, String> {
    aho_corasick::AhoCorasick::builder()
        .match_kind(aho_corasick::MatchKind::LeftmostLongest)
        .build(tokens)
        .map_err(|e| e.to_string())
}

/// The matchers that split added tokens off, `normalized: false` ones first (see
/// [`FastBpe::matchers`]).
fn added_matchers(
    added: &[(String, Added)],
) -> Result<Vec<(aho_corasick::AhoCorasick, Vec<usize>)>, String> {
    let mut matchers = Vec::new();
    for normalized in [false, true] {
        let idx: Vec<usize> = (0..added.len())
            .filter(|&i| added[i].1.normalized == normalized)
            .collect();
        if !idx.is_empty() {
            let tokens: Vec<&str> = idx.iter().map(|&i| added[i].0.as_str()).collect();
            matchers.push((token_matcher(&tokens)?, idx));
        }
    }
    Ok(matchers)
}

fn is_byte_level(v: &serde_json::Value) -> bool {
    v.get("type").and_then(|t| t.as_str()) == Some("ByteLevel")
}

/// Whether a post-processor adds no tokens (ByteLevel), or the single-sequence template's
/// prefix/suffix when it is a TemplateProcessing (or a Sequence of both).
fn post_tokens(v: Option<&serde_json::Value>) -> Option<(Vec<u32>, Vec<u32>)> {
    let Some(v) = v else {
        return Some((vec![], vec![]));
    };
    match v.get("type")?.as_str()? {
        "ByteLevel" => Some((vec![], vec![])),
        "Sequence" => {
            let mut out: Option<(Vec<u32>, Vec<u32>)> = None;
            for p in v.get("processors")?.as_array()? {
                let (pre, suf) = post_tokens(Some(p))?;
                if !pre.is_empty() || !suf.is_empty() {
                    if out.is_some() {
                        return None;
                    }
                    out = Some((pre, suf));
                }
            }
            Some(out.unwrap_or_default())
        }
        "TemplateProcessing" => {
            let specials = v.get("special_tokens")?.as_object()?;
            let (mut pre, mut suf) = (vec![], vec![]);
            let mut seen_seq = false;
            for piece in v.get("single")?.as_array()? {
                if let Some(sp) = piece.get("SpecialToken") {
                    let name = sp.get("id")?.as_str()?;
                    let ids = specials.get(name)?.get("ids")?.as_array()?;
                    let target = if seen_seq { &mut suf } else { &mut pre };
                    for id in ids {
                        target.push(u32::try_from(id.as_u64()?).ok()?);
                    }
                } else if let Some(seq) = piece.get("Sequence") {
                    if seen_seq || seq.get("id")?.as_str()? != "A" {
                        return None;
                    }
                    seen_seq = true;
                } else {
                    return None;
                }
            }
            seen_seq.then_some((pre, suf))
        }
        _ => None,
    }
}

/// An `Isolated`, not inverted `Split` by a regex: its pattern text.
fn isolated_split(v: &serde_json::Value) -> Option<&str> {
    if v.get("type")?.as_str()? != "Split"
        || v.get("behavior")?.as_str()? != "Isolated"
        || v.get("invert")?.as_bool()?
    {
        return None;
    }
    v.get("pattern")?.get("Regex")?.as_str()
}

fn pattern_of(pre: Option<&serde_json::Value>) -> Option<Pattern> {
    let pre = pre?;
    if pre.get("type")?.as_str()? != "Sequence" {
        return None;
    }
    let list = pre.get("pretokenizers")?.as_array()?;
    let (bl, pattern) = match list.as_slice() {
        [split, bl] => (bl, Pattern::of_regex(isolated_split(split)?)?),
        [a, b, c, bl] => {
            let regexes = [isolated_split(a)?, isolated_split(b)?, isolated_split(c)?];
            (regexes == DEEPSEEK_PATTERNS).then_some((bl, Pattern::DeepSeek))?
        }
        _ => return None,
    };
    if !is_byte_level(bl)
        || bl.get("add_prefix_space")?.as_bool()?
        || bl.get("use_regex")?.as_bool()?
    {
        return None;
    }
    Some(pattern)
}

fn nfc_of(n: Option<&serde_json::Value>) -> Option<bool> {
    match n {
        None | Some(serde_json::Value::Null) => Some(false),
        Some(v) => match v.get("type")?.as_str()? {
            "NFC" => Some(true),
            "Sequence" => {
                let list = v.get("normalizers")?.as_array()?;
                match list.as_slice() {
                    [] => Some(false),
                    [one] => nfc_of(Some(one)),
                    _ => None,
                }
            }
            _ => None,
        },
    }
}

impl FastBpe {
    /// Builds the fast tokenizer from `tokenizer.json`, or `Ok(None)` when the file is
    /// not one this path specialises. `Err` for text that is not JSON at all, with the
    /// general engine's message, so that it says so in every runtime (a browser without
    /// the general engine loaded would otherwise be asked to load it first).
    pub(crate) fn from_json(json: &str) -> Result<Option<FastBpe>, String> {
        // Anything else this reader cannot take (other model types, other shapes) goes to
        // the general path, which also reports their errors.
        let Ok(raw) = scan_file(json) else {
            serde_json::from_str::<serde::de::IgnoredAny>(json)
                .map_err(|e| format!("tokenizer.json is not valid JSON: {e}"))?;
            return Ok(None);
        };
        if raw.truncation.as_ref().is_some_and(|v| !v.is_null())
            || raw.padding.as_ref().is_some_and(|v| !v.is_null())
        {
            return Ok(None);
        }
        let m = &raw.model;
        if m.kind.as_deref().is_some_and(|k| k != "BPE")
            || m.dropout.is_some_and(|d| d != 0.0)
            || m.continuing_subword_prefix
                .as_deref()
                .is_some_and(|p| !p.is_empty())
            || m.end_of_word_suffix
                .as_deref()
                .is_some_and(|p| !p.is_empty())
        {
            return Ok(None);
        }
        let Some(pattern) = pattern_of(raw.pre_tokenizer.as_ref()) else {
            return Ok(None);
        };
        let Some(nfc) = nfc_of(raw.normalizer.as_ref()) else {
            return Ok(None);
        };
        if !raw.decoder.as_ref().is_some_and(is_byte_level) {
            return Ok(None);
        }
        let Some((prefix, suffix)) = post_tokens(raw.post_processor.as_ref()) else {
            return Ok(None);
        };

        let b2c = byte_to_char();
        let mut raw = raw;
        let m = &mut raw.model;
        let Some(mut vocab) = m.vocab.take() else {
            return Ok(None);
        };
        if m.duplicate_id {
            return Ok(None);
        }
        let merges = match m.merges.take() {
            Some(b) if m.early_merges.is_empty() => b.map,
            _ => {
                let mut b = MergeBuild::new(m.early_merges.len());
                for (x, y) in &m.early_merges {
                    b.add(&vocab, x, y)?;
                }
                b.map
            }
        };
        if m.ignore_merges && !vocab.raw_indexed {
            vocab.index(true);
        }
        let mut byte_ids = [0u32; 256];
        for (b, c) in b2c.iter().enumerate() {
            match vocab.lookup(c.encode_utf8(&mut [0; 4]).as_bytes()) {
                Some(id) => byte_ids[b] = id,
                None => return Ok(None),
            }
        }
        let lookup = |s: &str| vocab.lookup(s.as_bytes());

        let Some((added, added_by_id, added_by_content)) =
            added_tokens(&raw.added_tokens, nfc, vocab.len, lookup)
        else {
            return Ok(None);
        };
        let matchers = added_matchers(&added)?;
        for id in prefix.iter().chain(&suffix) {
            if !added_by_id.contains_key(id) && vocab.tok(*id).is_none() {
                return Ok(None);
            }
        }

        Ok(Some(FastBpe {
            pattern,
            nfc,
            ignore_merges: m.ignore_merges,
            vocab,
            byte_ids,
            merges,
            added,
            added_by_id,
            added_by_content,
            matchers,
            prefix,
            suffix,
            cache: RefCell::new(WordCache::default()),
            byte_pairs: std::cell::OnceCell::new(),
        }))
    }

    #[inline(always)]
    fn tok(&self, id: u32) -> Option<&[u8]> {
        self.vocab.tok(id)
    }
    #[inline(always)]
    fn raw(&self, id: u32) -> Option<&[u8]> {
        self.vocab.raw(id)
    }

    /// Encodes `text`, appending ids to `out`.
    pub(crate) fn encode_into(&self, text: &str, options: EncodeOptions, out: &mut Vec<u32>) {
        if options.add_special_tokens {
            out.extend_from_slice(&self.prefix);
        }
        let mut cache = self.cache.borrow_mut();
        self.encode_added(0, text, options, out, &mut cache);
        if options.add_special_tokens {
            out.extend_from_slice(&self.suffix);
        }
    }

    /// Splits off the added tokens of matcher `level` (leftmost-longest), and encodes the
    /// text around them with the next level.
    fn encode_added(
        &self,
        level: usize,
        text: &str,
        options: EncodeOptions,
        out: &mut Vec<u32>,
        cache: &mut WordCache,
    ) {
        let Some((ac, idx)) = self.matchers.get(level) else {
            self.encode_text(text, out, cache);
            return;
        };
        let mut at = 0;
        for m in ac.find_iter(text) {
            let added = &self.added[idx[m.pattern().as_usize()]].1;
            // `encode_special_tokens`: the match still happens (it hides any other added
            // token it overlaps, as in `tokenizers`), but a special one stays part of the
            // surrounding text.
            if options.split_special_tokens && added.special {
                continue;
            }
            if m.start() > at {
                self.encode_added(level + 1, &text[at..m.start()], options, out, cache);
            }
            out.push(added.id);
            at = m.end();
        }
        if at < text.len() {
            self.encode_added(level + 1, &text[at..], options, out, cache);
        }
    }

    fn encode_text(&self, text: &str, out: &mut Vec<u32>, cache: &mut WordCache) {
        let normalized;
        let text = match self.nfc.then(|| nfc(text)).flatten() {
            Some(n) => {
                normalized = n;
                &normalized
            }
            None => text,
        };
        split(text, self.pattern, |piece| {
            self.encode_word(piece.as_bytes(), out, cache)
        });
    }

    #[inline(always)]
    fn encode_word(&self, word: &[u8], out: &mut Vec<u32>, cache: &mut WordCache) {
        if word.len() == 1 {
            out.push(self.byte_ids[word[0] as usize]);
            return;
        }
        if self.ignore_merges {
            if let Some(id) = self.vocab.lookup_raw(word) {
                out.push(id);
                return;
            }
        }
        if let Some(ids) = cache.words.get(word) {
            out.extend_from_slice(ids);
            return;
        }
        let start = out.len();
        self.bpe(word, out, cache);
        cache.words.insert(word, &out[start..]);
    }

    /// The merge of `a` and `b` as `(rank << 32) | merged id` (ordered by rank), or
    /// `u64::MAX`.
    #[inline(always)]
    fn merge_packed(&self, a: u32, b: u32) -> u64 {
        self.merges.get(pair_key(a, b)).unwrap_or(u64::MAX)
    }

    #[inline(always)]
    fn merge_of(&self, a: u32, b: u32) -> Option<(u32, u32)> {
        self.merges
            .get(pair_key(a, b))
            .map(|v| ((v >> 32) as u32, v as u32))
    }

    /// BPE over one piece: repeatedly merge the adjacent pair of lowest rank (leftmost on
    /// ties). Short pieces scan; long ones use a heap over a linked list, like
    /// `tokenizers`' word merger.
    fn bpe(&self, word: &[u8], out: &mut Vec<u32>, cache: &mut WordCache) {
        if word.len() <= SCAN_MAX {
            // tiktoken's scheme: the merge of each symbol with the next is known; take
            // the lowest rank (leftmost on ties), then look up only the two pairs that
            // changed.
            let WordCache { syms, pairs, .. } = cache;
            syms.clear();
            syms.extend(word.iter().map(|&b| self.byte_ids[b as usize]));
            pairs.clear();
            let first = self.byte_pairs.get_or_init(|| {
                (0..1usize << 16)
                    .map(|k| self.merge_packed(self.byte_ids[k >> 8], self.byte_ids[k & 0xFF]))
                    .collect()
            });
            pairs.extend(
                word.windows(2)
                    .map(|w| first[(usize::from(w[0]) << 8) | usize::from(w[1])]),
            );
            loop {
                let mut best = u64::MAX;
                let mut i = 0;
                for (k, &p) in pairs.iter().enumerate() {
                    if p < best {
                        best = p;
                        i = k;
                    }
                }
                if best == u64::MAX {
                    break;
                }
                syms[i] = best as u32;
                syms.remove(i + 1);
                pairs.remove(i);
                if i < pairs.len() {
                    pairs[i] = self.merge_packed(syms[i], syms[i + 1]);
                }
                if i > 0 {
                    pairs[i - 1] = self.merge_packed(syms[i - 1], syms[i]);
                }
            }
            out.extend_from_slice(syms);
            return;
        }
        let n = word.len();
        let WordCache {
            syms,
            heap,
            prev,
            next,
            ..
        } = cache;
        syms.clear();
        syms.extend(word.iter().map(|&b| self.byte_ids[b as usize]));
        prev.clear();
        prev.extend((0..n as u32).map(|i| i.wrapping_sub(1)));
        next.clear();
        next.extend(1..=n as u32);
        let alive = |syms: &[u32], i: u32| syms[i as usize] != u32::MAX;
        heap.clear();
        for i in 0..n - 1 {
            if let Some((rank, _)) = self.merge_of(syms[i], syms[i + 1]) {
                heap.push(std::cmp::Reverse((rank, i as u32)));
            }
        }
        while let Some(std::cmp::Reverse((rank, pos))) = heap.pop() {
            if !alive(syms, pos) {
                continue;
            }
            let nx = next[pos as usize];
            if nx as usize >= n {
                continue;
            }
            match self.merge_of(syms[pos as usize], syms[nx as usize]) {
                Some((r, new)) if r == rank => {
                    syms[pos as usize] = new;
                    syms[nx as usize] = u32::MAX;
                    let nn = next[nx as usize];
                    next[pos as usize] = nn;
                    if (nn as usize) < n {
                        prev[nn as usize] = pos;
                    }
                    let pv = prev[pos as usize];
                    if pv != u32::MAX {
                        if let Some((r, _)) = self.merge_of(syms[pv as usize], new) {
                            heap.push(std::cmp::Reverse((r, pv)));
                        }
                    }
                    if (nn as usize) < n {
                        if let Some((r, _)) = self.merge_of(new, syms[nn as usize]) {
                            heap.push(std::cmp::Reverse((r, pos)));
                        }
                    }
                }
                _ => continue,
            }
        }
        out.extend(syms.iter().copied().filter(|&s| s != u32::MAX));
    }

    /// Decodes ids as `tokenizers` does with a ByteLevel decoder: unknown ids are
    /// skipped, special added tokens too when asked, invalid UTF-8 becomes U+FFFD.
    pub(crate) fn decode(&self, ids: &[u32], skip_special_tokens: bool) -> String {
        let mut bytes = Vec::with_capacity(ids.len() * 4);
        for &id in ids {
            if let Some(&i) = self.added_by_id.get(&id) {
                let (content, a) = &self.added[i];
                if skip_special_tokens && a.special {
                    continue;
                }
                self.push_added_bytes(content, &mut bytes);
            } else if let Some(raw) = self.raw(id) {
                if skip_special_tokens && self.is_special_content(id) {
                    continue;
                }
                bytes.extend_from_slice(raw);
            } else if let Some(tok) = self.tok(id) {
                if skip_special_tokens && self.is_special_content(id) {
                    continue;
                }
                bytes.extend_from_slice(tok);
            }
        }
        match String::from_utf8(bytes) {
            Ok(s) => s,
            Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
        }
    }

    fn is_special_content(&self, id: u32) -> bool {
        let Some(tok) = self.tok(id) else {
            return false;
        };
        std::str::from_utf8(tok)
            .ok()
            .and_then(|t| self.added_by_content.get(t))
            .is_some_and(|&i| self.added[i].1.special)
    }

    fn push_added_bytes(&self, token: &str, out: &mut Vec<u8>) {
        if !push_token_bytes(token, &char_to_byte_table(), out) {
            out.extend_from_slice(token.as_bytes());
        }
    }

    /// `token_to_id`: added tokens first, then the model's vocab.
    pub(crate) fn token_to_id(&self, token: &str) -> Option<u32> {
        if let Some(&i) = self.added_by_content.get(token) {
            return Some(self.added[i].1.id);
        }
        self.vocab.lookup(token.as_bytes())
    }

    /// `id_to_token`: added tokens first, then the model's vocab.
    pub(crate) fn id_to_token(&self, id: u32) -> Option<String> {
        if let Some(&i) = self.added_by_id.get(&id) {
            return Some(self.added[i].0.clone());
        }
        self.tok(id)
            .map(|t| String::from_utf8_lossy(t).into_owned())
    }

    /// The vocabulary size with added tokens (distinct token strings), like
    /// `get_vocab_size(true)`.
    pub(crate) fn vocab_size(&self) -> usize {
        self.vocab.len
            + self
                .added
                .iter()
                .filter(|(c, _)| self.vocab.lookup(c.as_bytes()).is_none())
                .count()
    }

    /// Added tokens as (content, id, special).
    pub(crate) fn added_tokens(&self) -> impl Iterator<Item = (&str, u32, bool)> {
        self.added
            .iter()
            .map(|(c, a)| (c.as_str(), a.id, a.special))
    }
}

/// `text` in NFC, or `None` when it already is. Code points below U+0300 are all NFC
/// starters (quick check "Yes", combining class 0), so the quick check starts at the first
/// byte that can begin a larger one (a lead byte from 0xCC): most Latin text is not read
/// twice.
pub(crate) fn nfc(text: &str) -> Option<String> {
    use unicode_normalization_alignments::{is_nfc_quick, IsNormalized, UnicodeNormalization};
    let from = text.bytes().position(|b| b >= 0xCC)?;
    // The quick check resumes at the first character that is not inert: those before it
    // leave its state as it starts (combining class 0, "Yes").
    let rest = &text[from..];
    let at = rest.char_indices().find(|&(_, c)| !nfc_inert(c))?.0;
    if is_nfc_quick(rest[at..].chars()) == IsNormalized::Yes {
        return None;
    }
    Some(text.nfc().map(|(c, _)| c).collect())
}

/// Whether `c` can be ignored by the NFC quick check: combining class 0 and quick check
/// "Yes". A text of such characters only is NFC whatever their order, which one bit per
/// character tells for the BMP, where the quick check looks up two hash tables per character
/// (Qwen3's encode spent 12 % of its time there, in wasm). The bits are filled a page of 256
/// characters at a time, when text first reaches it.
fn nfc_inert(c: char) -> bool {
    use std::sync::atomic::{AtomicU64, Ordering};
    static BITS: [AtomicU64; 1024] = [const { AtomicU64::new(0) }; 1024];
    static PAGES: [AtomicU64; 4] = [const { AtomicU64::new(0) }; 4];
    let u = c as usize;
    if u >= 0x10000 {
        return nfc_inert_lookup(c);
    }
    let page = u >> 8;
    if PAGES[page >> 6].load(Ordering::Acquire) >> (page & 63) & 1 == 0 {
        for (w, word) in BITS.iter().enumerate().skip(page * 4).take(4) {
            let bits = (0..64).fold(0u64, |bits, b| {
                let inert = char::from_u32((w * 64 + b) as u32).is_some_and(nfc_inert_lookup);
                bits | u64::from(inert) << b
            });
            word.store(bits, Ordering::Relaxed);
        }
        PAGES[page >> 6].fetch_or(1 << (page & 63), Ordering::Release);
    }
    BITS[u >> 6].load(Ordering::Relaxed) >> (u & 63) & 1 == 1
}

/// [`nfc_inert`] from the normalization tables themselves.
fn nfc_inert_lookup(c: char) -> bool {
    use unicode_normalization_alignments::char::canonical_combining_class;
    use unicode_normalization_alignments::{is_nfc_quick, IsNormalized};
    canonical_combining_class(c) == 0 && is_nfc_quick(std::iter::once(c)) == IsNormalized::Yes
}

#[inline(always)]
fn pair_key(a: u32, b: u32) -> u64 {
    ((a as u64) << 32) | b as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The BMP set says what the normalization tables say of every character, and text of
    /// inert characters in any order passes the quick check, so the shortcut never skips a
    /// text that needs normalizing. Text mixing in a combining mark still goes to NFC.
    #[test]
    fn the_nfc_shortcut_agrees_with_the_normalization_tables() {
        use unicode_normalization_alignments::{is_nfc_quick, IsNormalized, UnicodeNormalization};
        let mut inert = Vec::new();
        for c in (0..0x11_0000).filter_map(char::from_u32) {
            assert_eq!(nfc_inert(c), nfc_inert_lookup(c), "U+{:04X}", c as u32);
            if nfc_inert(c) && c as u32 >= 0x300 {
                inert.push(c);
            }
        }
        assert!(
            inert.len() > 100_000 && inert.len() < 0x11_0000,
            "{}",
            inert.len()
        );
        let mut next = tinker_support::testing::xorshift(7);
        for _ in 0..2000 {
            let text: String = (0..8)
                .map(|_| inert[next() as usize % inert.len()])
                .collect();
            assert_eq!(is_nfc_quick(text.chars()), IsNormalized::Yes, "{text:?}");
            assert_eq!(nfc(&text), None);
        }
        // Inert text with other characters mixed in (combining marks among them): whatever
        // `nfc` skips, its result is the normalization library's.
        let others: Vec<char> = (0x300..0x3000)
            .filter_map(char::from_u32)
            .filter(|&c| !nfc_inert(c))
            .collect();
        assert!(!others.is_empty());
        for _ in 0..2000 {
            let text: String = (0..8)
                .map(|_| match next() % 3 {
                    0 => others[next() as usize % others.len()],
                    _ => inert[next() as usize % inert.len()],
                })
                .collect();
            let ours = nfc(&text).unwrap_or_else(|| text.clone());
            assert_eq!(
                ours,
                text.nfc().map(|(c, _)| c).collect::<String>(),
                "{text:?}"
            );
        }
        // "é" as e + U+0301 (a combining mark: not inert) after inert CJK text.
        let text = "\u{4E2D}\u{6587}e\u{301}";
        assert!(!text.chars().all(nfc_inert));
        assert_eq!(nfc(text), Some(text.nfc().map(|(c, _)| c).collect()));
    }

    #[test]
    fn word_cache_is_bounded_and_exact() {
        let mut w = Words::default();
        let word = |i: u32| format!("w{i:x}-{}", "x".repeat((i % 40) as usize)).into_bytes();
        let ids = |i: u32| {
            (0..1 + i % 7)
                .map(|k| i.wrapping_mul(31) + k)
                .collect::<Vec<u32>>()
        };
        let mut biggest = 0;
        for i in 0..600_000u32 {
            let k = word(i);
            assert_eq!(w.get(&k), None);
            w.insert(&k, &ids(i));
            assert_eq!(w.get(&k), Some(ids(i).as_slice()));
            // A word cached a little earlier is still there unless the cache started over.
            if i >= 100 && w.len() > 100 {
                assert_eq!(w.get(&word(i - 100)), Some(ids(i - 100).as_slice()));
            }
            biggest = biggest.max(w.len());
            assert!(w.len() <= CACHE_MAX_WORDS);
            assert!(w.bytes.len() <= CACHE_MAX_BYTES && w.ids.len() <= CACHE_MAX_IDS);
        }
        assert!(biggest > 10_000, "{biggest}");
        assert!(w.slots.len() <= 2 * CACHE_MAX_WORDS);
        // Too long to cache.
        let long = vec![b'a'; CACHE_MAX_WORD_LEN + 1];
        w.insert(&long, &[1]);
        assert_eq!(w.get(&long), None);
    }
}
