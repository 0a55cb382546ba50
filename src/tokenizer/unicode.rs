//! Character classes for the specialised pre-tokenizer: `\p{L}`, `\p{N}` and `\s`,
//! taken from `regex-syntax` (the tables behind the general regex path), so the
//! hand-written splitter classifies every code point exactly as the regex does.
//!
//! Lookup is one byte per code point for the Basic Multilingual Plane (a 64 KiB table
//! built once on first use) and a binary search over ranges above it.

use std::sync::OnceLock;

/// `\p{L}`.
pub(crate) const LETTER: u8 = 1;
/// `\p{N}`.
pub(crate) const NUMBER: u8 = 2;
/// `\s` (Unicode `White_Space`).
pub(crate) const SPACE: u8 = 4;

pub(crate) struct Classes {
    bmp: Box<[u8]>,
    astral: Vec<(u32, u32, u8)>,
    /// Case-insensitive variants of the contraction letters s, t, r, e, v, m, l, d.
    folds: [Vec<char>; 8],
}

const FOLD_LETTERS: [char; 8] = ['s', 't', 'r', 'e', 'v', 'm', 'l', 'd'];

fn ranges(pattern: &str) -> Vec<(u32, u32)> {
    use regex_syntax::hir::{Class, HirKind};
    let hir = regex_syntax::Parser::new()
        .parse(pattern)
        .expect("a fixed, valid class pattern");
    match hir.kind() {
        HirKind::Class(Class::Unicode(c)) => c
            .iter()
            .map(|r| (r.start() as u32, r.end() as u32))
            .collect(),
        other => unreachable!("{pattern} parsed to {other:?}"),
    }
}

impl Classes {
    fn build() -> Classes {
        let mut bmp = vec![0u8; 0x10000].into_boxed_slice();
        let mut astral: Vec<(u32, u32, u8)> = Vec::new();
        for (pattern, bit) in [(r"\p{L}", LETTER), (r"\p{N}", NUMBER), (r"\s", SPACE)] {
            for (lo, hi) in ranges(pattern) {
                for cp in lo..=hi.min(0xFFFF) {
                    bmp[cp as usize] |= bit;
                }
                if hi > 0xFFFF {
                    astral.push((lo.max(0x10000), hi, bit));
                }
            }
        }
        // Classes are disjoint, so the astral ranges never overlap: sort for search.
        astral.sort_unstable();
        let folds = FOLD_LETTERS.map(|c| {
            ranges(&format!("(?i:{c})"))
                .into_iter()
                .flat_map(|(lo, hi)| (lo..=hi).filter_map(char::from_u32))
                .collect()
        });
        Classes { bmp, astral, folds }
    }

    /// The class bits of `c` (0 for "other").
    #[inline(always)]
    pub(crate) fn of(&self, c: char) -> u8 {
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
                Err(_) => 0,
            }
        }
    }

    /// Whether `c` matches `letter` case-insensitively (`letter` one of s t r e v m l d).
    #[inline]
    pub(crate) fn folds_to(&self, c: char, letter: char) -> bool {
        let i = FOLD_LETTERS
            .iter()
            .position(|&l| l == letter)
            .expect("a contraction letter");
        self.folds[i].contains(&c)
    }
}

/// The shared tables (built on first use, about 1 ms).
pub(crate) fn classes() -> &'static Classes {
    static CLASSES: OnceLock<Classes> = OnceLock::new();
    CLASSES.get_or_init(Classes::build)
}

#[cfg(test)]
mod tests {
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
        assert!(c.folds_to('ſ', 's'));
        assert!(c.folds_to('S', 's'));
        assert!(!c.folds_to('x', 's'));
    }
}
