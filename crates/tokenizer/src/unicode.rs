//! Character classes for the specialised pre-tokenizers (see [`super::split`]): the
//! general categories the split patterns distinguish (`\p{Lu}`/`\p{Lt}`, `\p{Ll}`,
//! `\p{Lm}`/`\p{Lo}`, `\p{M}`, `\p{N}`, `\p{P}`/`\p{S}`) and `\s`, as `regex-syntax`
//! (the parser behind the general regex path) defines them, so the hand-written splitters
//! classify every code point exactly as the regex does. The ranges are generated into
//! [`tables`] (a test regenerates them from `regex-syntax` and fails on any difference), so
//! the wasm module carries these small tables, not the regex parser and every Unicode table
//! behind it.
//!
//! Lookup is one byte per code point for the Basic Multilingual Plane (a 64 KiB table
//! built once on first use) and a binary search over ranges above it.

use std::sync::OnceLock;

#[path = "unicode_tables.rs"]
mod tables;

/// `\p{L}` (the class [`Classes::of`] gives for Qwen2/Qwen3 and Llama-3).
pub const LETTER: u8 = 1;
/// `\p{N}`.
pub const NUMBER: u8 = 2;
/// `\s` (Unicode `White_Space`).
pub(crate) const SPACE: u8 = 4;

/// Categories ([`Classes::cat`]): anything else (controls that are not spaces, format
/// characters, private use, unassigned code points, …).
pub(crate) const CAT_OTHER: u8 = 0;
/// `\p{Lu}` or `\p{Lt}`.
pub(crate) const CAT_UPPER: u8 = 1;
/// `\p{Ll}`.
pub(crate) const CAT_LOWER: u8 = 2;
/// `\p{Lm}` or `\p{Lo}` (caseless letters: both "upper" and "lower" for o200k).
pub(crate) const CAT_CASELESS: u8 = 3;
/// `\p{M}` (marks: letters for Qwen3.5, both "upper" and "lower" for o200k).
pub(crate) const CAT_MARK: u8 = 4;
/// `\p{N}`.
pub(crate) const CAT_NUMBER: u8 = 5;
/// `\s`.
pub(crate) const CAT_SPACE: u8 = 6;
/// `\p{P}` or `\p{S}` (punctuation and symbols: "other" except for DeepSeek's pattern).
pub(crate) const CAT_PUNCT: u8 = 7;

/// Category → the `\p{L}`/`\p{N}`/`\s` class (marks are "other").
const BASE_CLASS: [u8; 8] = [0, LETTER, LETTER, LETTER, 0, NUMBER, SPACE, 0];

/// The `\p{L}`/`\p{N}`/`\s` class of a category: [`LETTER`], [`NUMBER`], [`SPACE`] or 0.
#[inline(always)]
pub(crate) fn base_class(cat: u8) -> u8 {
    BASE_CLASS[cat as usize & 7]
}

/// The contraction letters whose case-insensitive variants the splitter needs.
const FOLD_LETTERS: [char; 8] = ['s', 't', 'r', 'e', 'v', 'm', 'l', 'd'];

pub struct Classes {
    /// The category of each BMP code point.
    bmp: Box<[u8]>,
    /// The ranges above the BMP: (first, last, category), sorted, disjoint.
    astral: Box<[(u32, u32, u8)]>,
}

/// The ranges of [`tables::RANGES`]: (first, last, category) of each range of one
/// category, in order (the table stores where each range starts, as varint deltas, with
/// its category; a range lasts until the next one starts).
fn decode_ranges(data: &[u8]) -> Vec<(u32, u32, u8)> {
    let mut starts: Vec<(u32, u8)> = Vec::with_capacity(data.len() / 2);
    let (mut at, mut i) = (0u32, 0usize);
    while i < data.len() {
        let (mut delta, mut shift) = (0u32, 0);
        loop {
            let b = data[i];
            i += 1;
            delta |= u32::from(b & 0x7F) << shift;
            shift += 7;
            if b & 0x80 == 0 {
                break;
            }
        }
        at += delta;
        starts.push((at, data[i]));
        i += 1;
    }
    let mut out = Vec::with_capacity(starts.len());
    for (k, &(lo, cat)) in starts.iter().enumerate() {
        let hi = starts.get(k + 1).map_or(0x10FFFF, |n| n.0 - 1);
        if cat != CAT_OTHER {
            out.push((lo, hi, cat));
        }
    }
    out
}

impl Classes {
    fn build() -> Classes {
        let ranges = decode_ranges(tables::RANGES);
        let mut bmp = vec![CAT_OTHER; 0x10000].into_boxed_slice();
        let mut astral = Vec::new();
        for &(lo, hi, cat) in &ranges {
            for cp in lo..=hi.min(0xFFFF) {
                bmp[cp as usize] = cat;
            }
            if hi > 0xFFFF {
                astral.push((lo.max(0x10000), hi, cat));
            }
        }
        Classes {
            bmp,
            astral: astral.into_boxed_slice(),
        }
    }

    /// The category of `c` (`CAT_*`).
    #[inline(always)]
    pub(crate) fn cat(&self, c: char) -> u8 {
        let cp = c as u32;
        if cp < 0x10000 {
            self.bmp[cp as usize]
        } else {
            match self.astral.binary_search_by(|&(lo, hi, _)| {
                if hi < cp {
                    std::cmp::Ordering::Less
                } else if lo > cp {
                    std::cmp::Ordering::Greater
                } else {
                    std::cmp::Ordering::Equal
                }
            }) {
                Ok(i) => self.astral[i].2,
                Err(_) => CAT_OTHER,
            }
        }
    }

    /// The class of `c`: [`LETTER`], [`NUMBER`], [`SPACE`] or 0 for "other".
    #[inline(always)]
    pub fn of(&self, c: char) -> u8 {
        base_class(self.cat(c))
    }

    /// Whether `c` matches `letter` case-insensitively (`letter` one of s t r e v m l d).
    #[inline]
    pub(crate) fn folds_to(&self, c: char, letter: char) -> bool {
        let i = FOLD_LETTERS
            .iter()
            .position(|&l| l == letter)
            .expect("a contraction letter");
        tables::FOLDS[i].contains(&c)
    }
}

/// The shared tables (built on first use, about 1 ms).
pub fn classes() -> &'static Classes {
    static CLASSES: OnceLock<Classes> = OnceLock::new();
    CLASSES.get_or_init(Classes::build)
}

/// Python's `str.isprintable` of one character: false for the categories Python does not
/// print (`Cc`, `Cf`, `Cs`, `Co`, `Cn`, `Zl`, `Zp`, `Zs`), except the space. Those are
/// exactly this table's "other" and `\s` (every separator is `White_Space`, and the only
/// `White_Space` characters that are not separators are controls), in regex-syntax's Unicode
/// version, which may assign code points that an older Python still treats as unassigned.
pub fn py_printable(c: char) -> bool {
    c == ' ' || !matches!(classes().cat(c), CAT_OTHER | CAT_SPACE)
}

#[cfg(test)]
mod tests {

    /// `py_printable` against Python's `str.isprintable` for every code point Python's own
    /// Unicode tables assign (newer versions assign more; those cannot be compared).
    #[test]
    fn printable_as_python_says() {
        let lines = tinker_support::testing::oracle(
            "python3",
            &[
                "-c",
                "import unicodedata as u\nfor i in range(0x110000):\n c = chr(i)\n if u.category(c) != 'Cn': print(i, int(c.isprintable()))",
            ],
            "",
        );
        let mut compared = 0;
        for line in &lines {
            let (cp, printable) = line.split_once(' ').expect("two fields");
            let cp: u32 = cp.parse().expect("a code point");
            let Some(c) = char::from_u32(cp) else {
                continue; // a surrogate: not a Rust char
            };
            assert_eq!(py_printable(c), printable == "1", "U+{cp:04X}");
            compared += 1;
        }
        assert!(compared > 140_000, "only {compared} code points compared");
    }
    use super::*;

    #[test]
    fn classifies_like_the_regex() {
        let c = classes();
        assert_eq!(c.of('a'), LETTER);
        assert_eq!(c.of('é'), LETTER);
        assert_eq!(c.of('中'), LETTER);
        assert_eq!(c.of('7'), NUMBER);
        assert_eq!(c.of('½'), NUMBER);
        assert_eq!(c.of('٣'), NUMBER);
        assert_eq!(c.of(' '), SPACE);
        assert_eq!(c.of('\u{3000}'), SPACE);
        assert_eq!(c.of('\u{85}'), SPACE);
        assert_eq!(c.of('!'), 0);
        assert_eq!(c.of('😀'), 0);
        assert_eq!(c.of('𝐀'), LETTER); // U+1D400, astral letter
        assert_eq!(c.of('𝟎'), NUMBER); // U+1D7CE, astral digit
        assert_eq!(c.of('\u{301}'), 0); // a combining mark is "other" for \p{L}
        assert_eq!(c.cat('\u{301}'), CAT_MARK);
        assert_eq!(c.cat('A'), CAT_UPPER);
        assert_eq!(c.cat('ǅ'), CAT_UPPER); // Lt
        assert_eq!(c.cat('a'), CAT_LOWER);
        assert_eq!(c.cat('ʰ'), CAT_CASELESS); // Lm
        assert_eq!(c.cat('中'), CAT_CASELESS); // Lo
        assert_eq!(c.cat('𝐀'), CAT_UPPER);
        assert_eq!(c.cat('𝐚'), CAT_LOWER);
        assert_eq!(c.cat('7'), CAT_NUMBER);
        assert_eq!(c.cat('\n'), CAT_SPACE);
        assert_eq!(c.cat('😀'), CAT_PUNCT); // So
        assert_eq!(c.cat('!'), CAT_PUNCT);
        assert_eq!(c.cat('€'), CAT_PUNCT);
        assert_eq!(c.cat('\u{200d}'), CAT_OTHER); // Cf
        assert_eq!(c.cat('\u{e000}'), CAT_OTHER); // Co
        assert_eq!(c.cat('\u{0}'), CAT_OTHER); // Cc
        assert!(c.folds_to('ſ', 's'));
        assert!(c.folds_to('S', 's'));
        assert!(!c.folds_to('x', 's'));
    }

    /// The class ranges (`\p{L}`, `\p{N}`, `\s`) of `regex-syntax`, merged, sorted.
    fn ranges(pattern: &str) -> Vec<(u32, u32)> {
        use regex_syntax::hir::{Class, HirKind};
        let hir = regex_syntax::Parser::new().parse(pattern).unwrap();
        match hir.kind() {
            HirKind::Class(Class::Unicode(c)) => c
                .iter()
                .map(|r| (r.start() as u32, r.end() as u32))
                .collect(),
            other => panic!("{pattern} parsed to {other:?}"),
        }
    }

    /// `unicode_tables.rs` as `regex-syntax` defines the classes today.
    fn generate() -> String {
        let mut all: Vec<(u32, u32, u8)> = Vec::new();
        for (pattern, cat) in [
            (r"[\p{Lu}\p{Lt}]", CAT_UPPER),
            (r"\p{Ll}", CAT_LOWER),
            (r"[\p{Lm}\p{Lo}]", CAT_CASELESS),
            (r"\p{M}", CAT_MARK),
            (r"\p{N}", CAT_NUMBER),
            (r"\s", CAT_SPACE),
            (r"[\p{P}\p{S}]", CAT_PUNCT),
        ] {
            all.extend(ranges(pattern).into_iter().map(|(lo, hi)| (lo, hi, cat)));
        }
        all.sort_unstable();
        for w in all.windows(2) {
            assert!(w[0].1 < w[1].0, "classes overlap: {w:?}");
        }
        // Adjacent ranges of one category are one range.
        let mut merged: Vec<(u32, u32, u8)> = Vec::new();
        for r in all {
            match merged.last_mut() {
                Some(last) if last.2 == r.2 && last.1 + 1 == r.0 => last.1 = r.1,
                _ => merged.push(r),
            }
        }
        // The categories are the union of \p{L}, \p{N} and \s, plus \p{M}, \p{P} and \p{S}.
        let base: Vec<(u32, u32)> = ranges(r"[\p{L}\p{N}\s\p{M}\p{P}\p{S}]");
        let mut flat: Vec<(u32, u32)> = Vec::new();
        for &(lo, hi, _) in &merged {
            match flat.last_mut() {
                Some(last) if last.1 + 1 == lo => last.1 = hi,
                _ => flat.push((lo, hi)),
            }
        }
        assert_eq!(
            flat, base,
            "the categories cover L, M, N, P, S and \\s exactly"
        );
        // Where each range starts (a gap is a range of CAT_OTHER), as varint deltas.
        let mut bytes: Vec<u8> = Vec::new();
        let mut push = |start: u32, cat: u8, prev: &mut u32| {
            let mut d = start - *prev;
            *prev = start;
            loop {
                let b = (d & 0x7F) as u8;
                d >>= 7;
                if d == 0 {
                    bytes.push(b);
                    break;
                }
                bytes.push(b | 0x80);
            }
            bytes.push(cat);
        };
        let mut prev = 0u32;
        let mut next = 0u32;
        for &(lo, hi, cat) in &merged {
            if lo > next {
                push(next, CAT_OTHER, &mut prev);
            }
            push(lo, cat, &mut prev);
            next = hi + 1;
        }
        push(next, CAT_OTHER, &mut prev);
        assert_eq!(decode_ranges(&bytes), merged);
        let mut out = String::from(
            "// @generated by `TINKER_REGEN_UNICODE=1 cargo test --lib unicode_tables` from\n\
             // regex-syntax's `\\p{Lu}`, `\\p{Lt}`, `\\p{Ll}`, `\\p{Lm}`, `\\p{Lo}`, `\\p{M}`,\n\
             // `\\p{N}`, `\\s`, `\\p{P}` and `\\p{S}` (see unicode.rs). Do not edit.\n\n\
             /// Where each range of one category starts: the distance from the previous start\n\
             /// (LEB128), then the category (`CAT_*`); read by `decode_ranges`.\n\
             #[rustfmt::skip]\n\
             pub(super) static RANGES: &[u8] = &[\n",
        );
        for chunk in bytes.chunks(24) {
            out.push_str("   ");
            for b in chunk {
                out.push_str(&format!(" {b},"));
            }
            out.push('\n');
        }
        out.push_str(
            "];\n\n\
             /// The characters matching each contraction letter case-insensitively, `(?i:c)`.\n\
             #[rustfmt::skip]\n\
             pub(super) static FOLDS: [&[char]; 8] = [\n",
        );
        for c in FOLD_LETTERS {
            let chars: Vec<String> = ranges(&format!("(?i:{c})"))
                .into_iter()
                .flat_map(|(lo, hi)| (lo..=hi).filter_map(char::from_u32))
                .map(|ch| format!("'\\u{{{:X}}}'", ch as u32))
                .collect();
            out.push_str(&format!("    &[{}],\n", chars.join(", ")));
        }
        out.push_str("];\n");
        out
    }

    #[test]
    fn unicode_tables_are_regex_syntax_classes() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/src/unicode_tables.rs");
        let want = generate();
        if std::env::var_os("TINKER_REGEN_UNICODE").is_some() {
            std::fs::write(path, &want).unwrap();
        }
        let have = std::fs::read_to_string(path).unwrap();
        assert!(
            have == want,
            "crates/tokenizer/src/unicode_tables.rs differs from regex-syntax's classes: \
             regenerate with TINKER_REGEN_UNICODE=1 cargo test --lib unicode_tables"
        );
    }
}
