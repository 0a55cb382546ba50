//! Substring search and slicing for the client's code paths, without core's two
//! panicking-or-generic paths that the lite module would otherwise carry:
//!
//! - `str::contains(&str)`, `find`, `replace` and `split` with a string (or a non-ASCII
//!   char) pattern bring core's two-way `StrSearcher`;
//! - `&s[a..b]` brings `str::slice_error_fail`, whose message formats a `char` and a
//!   `Range` with `Debug`, and with it the Unicode printable and grapheme tables.
//!
//! The strings searched here are short (headers, error messages, URL templates), so a
//! byte-wise search is as fast in practice. Measured on the lite module: see
//! `tests/NOTES-issue20-skin.md`.

/// The byte offset of the first `needle` in `hay`.
pub fn find(hay: &str, needle: &str) -> Option<usize> {
    find_from(hay, needle, 0)
}

fn find_from(hay: &str, needle: &str, from: usize) -> Option<usize> {
    let (h, n) = (hay.as_bytes(), needle.as_bytes());
    if n.is_empty() {
        return (from <= h.len()).then_some(from);
    }
    h.get(from..)?
        .windows(n.len())
        .position(|w| w == n)
        .map(|i| i + from)
}

/// Whether `hay` contains `needle`.
pub fn contains(hay: &str, needle: &str) -> bool {
    find(hay, needle).is_some()
}

/// `hay` with every non-overlapping `needle` (non-empty) replaced by `with`, left to
/// right, as `str::replace` does.
pub fn replace(hay: &str, needle: &str, with: &str) -> String {
    let mut out = String::with_capacity(hay.len());
    let mut rest = 0;
    if !needle.is_empty() {
        while let Some(i) = find_from(hay, needle, rest) {
            out.push_str(slice(hay, rest..i));
            out.push_str(with);
            rest = i + needle.len();
        }
    }
    out.push_str(slice(hay, rest..));
    out
}

/// The pieces of `hay` between the occurrences of `sep` (non-empty), as `str::split`.
pub fn split<'a>(hay: &'a str, sep: &'a str) -> impl Iterator<Item = &'a str> + 'a {
    let mut rest = Some(0);
    std::iter::from_fn(move || {
        let from = rest?;
        match find_from(hay, sep, from).filter(|_| !sep.is_empty()) {
            Some(i) => {
                rest = Some(i + sep.len());
                Some(slice(hay, from..i))
            }
            None => {
                rest = None;
                Some(slice(hay, from..))
            }
        }
    })
}

/// `&s[range]`, for ranges the caller knows lie on char boundaries (found by searching
/// for ASCII bytes); `""` if not, never a panic.
pub fn slice<R: std::slice::SliceIndex<str, Output = str>>(s: &str, range: R) -> &str {
    s.get(range).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agrees_with_std() {
        let hays = [
            "",
            "a",
            "abc",
            "abcabc",
            "aaaa",
            "héllo wörld",
            "{}/x/{}",
            "x{}",
        ];
        let needles = ["", "a", "aa", "bc", "abc", "é", "wö", "{}", "zz", "abcabcd"];
        for h in hays {
            for n in needles {
                assert_eq!(find(h, n), h.find(n), "find({h:?}, {n:?})");
                assert_eq!(contains(h, n), h.contains(n), "contains({h:?}, {n:?})");
                if !n.is_empty() {
                    assert_eq!(replace(h, n, "<r>"), h.replace(n, "<r>"), "{h:?} {n:?}");
                    let ours: Vec<_> = split(h, n).collect();
                    let std: Vec<_> = h.split(n).collect();
                    assert_eq!(ours, std, "split({h:?}, {n:?})");
                }
            }
        }
    }

    #[test]
    fn slice_never_panics() {
        let s = "héllo";
        assert_eq!(slice(s, 0..1), "h");
        assert_eq!(slice(s, 1..3), "é");
        assert_eq!(slice(s, 1..2), "", "inside a char");
        assert_eq!(slice(s, 4..99), "", "past the end");
        assert_eq!(slice(s, 3..), "llo");
    }
}
