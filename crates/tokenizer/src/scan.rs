//! A minimal JSON scanner for the fast load path: `tokenizer.json` is megabytes of
//! `"token": id` pairs and merges; walking them directly (strings borrowed, escapes
//! decoded only where present) avoids building a document. Small sections (normalizer,
//! pre-tokenizer, …) are handed to `serde_json` as raw slices.

use std::borrow::Cow;

pub(crate) struct Scanner<'a> {
    s: &'a str,
    b: &'a [u8],
    pub(crate) i: usize,
}

pub(crate) type ScanResult<T> = Result<T, String>;

impl<'a> Scanner<'a> {
    pub(crate) fn new(s: &'a str) -> Self {
        Scanner {
            s,
            b: s.as_bytes(),
            i: 0,
        }
    }

    fn err<T>(&self, what: &str) -> ScanResult<T> {
        Err(format!("invalid JSON at byte {}: {what}", self.i))
    }

    #[inline(always)]
    pub(crate) fn ws(&mut self) {
        // Pretty-printed files indent with long runs of spaces: skip 8 at a time.
        while let Some([a, b, c, d, e, f, g, h]) = self
            .b
            .get(self.i..self.i + 8)
            .and_then(|x| <&[u8; 8]>::try_from(x).ok())
        {
            if u64::from_le_bytes([*a, *b, *c, *d, *e, *f, *g, *h]) == 0x2020_2020_2020_2020 {
                self.i += 8;
            } else {
                break;
            }
        }
        while let Some(&c) = self.b.get(self.i) {
            if c == b' ' || c == b'\n' || c == b'\r' || c == b'\t' {
                self.i += 1;
            } else {
                break;
            }
        }
    }

    #[inline(always)]
    pub(crate) fn peek(&mut self) -> Option<u8> {
        self.ws();
        self.b.get(self.i).copied()
    }

    #[inline(always)]
    pub(crate) fn expect(&mut self, c: u8) -> ScanResult<()> {
        if self.peek() == Some(c) {
            self.i += 1;
            Ok(())
        } else {
            self.err(&format!("expected {:?}", c as char))
        }
    }

    /// After an element: `true` if a `,` followed (more elements), `false` at `close`.
    #[inline(always)]
    pub(crate) fn more(&mut self, close: u8) -> ScanResult<bool> {
        match self.peek() {
            Some(b',') => {
                self.i += 1;
                Ok(true)
            }
            Some(c) if c == close => {
                self.i += 1;
                Ok(false)
            }
            _ => self.err("expected ',' or a closing bracket"),
        }
    }

    /// At the start of a container: `true` if it is empty (and consumes `close`).
    #[inline(always)]
    pub(crate) fn empty(&mut self, close: u8) -> bool {
        if self.peek() == Some(close) {
            self.i += 1;
            true
        } else {
            false
        }
    }

    /// A string, borrowed unless it has escapes.
    #[inline(always)]
    pub(crate) fn string(&mut self) -> ScanResult<Cow<'a, str>> {
        self.expect(b'"')?;
        let start = self.i;
        let mut j = start;
        while let Some(&c) = self.b.get(j) {
            if c == b'"' {
                self.i = j + 1;
                return Ok(Cow::Borrowed(&self.s[start..j]));
            }
            if c == b'\\' {
                return self.escaped(start);
            }
            j += 1;
        }
        self.err("unterminated string")
    }

    fn escaped(&mut self, start: usize) -> ScanResult<Cow<'a, str>> {
        // Find the end (skipping escaped chars), then let serde_json decode it.
        let mut j = start;
        while let Some(&c) = self.b.get(j) {
            match c {
                b'\\' => j += 2,
                b'"' => {
                    let raw = &self.s[start - 1..=j];
                    self.i = j + 1;
                    return serde_json::from_str::<String>(raw)
                        .map(Cow::Owned)
                        .map_err(|e| format!("invalid JSON string at byte {start}: {e}"));
                }
                _ => j += 1,
            }
        }
        self.err("unterminated string")
    }

    #[inline(always)]
    pub(crate) fn u32(&mut self) -> ScanResult<u32> {
        self.ws();
        let start = self.i;
        let mut v: u64 = 0;
        while let Some(&c) = self.b.get(self.i) {
            if c.is_ascii_digit() {
                v = v * 10 + u64::from(c - b'0');
                if v > u64::from(u32::MAX) {
                    return self.err("id out of range");
                }
                self.i += 1;
            } else {
                break;
            }
        }
        if self.i == start {
            return self.err("expected an integer id");
        }
        Ok(v as u32)
    }

    /// Skips one value; returns its raw text.
    pub(crate) fn skip(&mut self) -> ScanResult<&'a str> {
        self.ws();
        let start = self.i;
        match self.b.get(self.i) {
            Some(b'"') => {
                self.string()?;
            }
            Some(b'{') | Some(b'[') => {
                let mut depth = 0usize;
                while let Some(&c) = self.b.get(self.i) {
                    match c {
                        b'"' => {
                            self.string()?;
                            continue;
                        }
                        b'{' | b'[' => depth += 1,
                        b'}' | b']' => {
                            depth -= 1;
                            if depth == 0 {
                                self.i += 1;
                                return Ok(&self.s[start..self.i]);
                            }
                        }
                        _ => {}
                    }
                    self.i += 1;
                }
                return self.err("unterminated container");
            }
            Some(_) => {
                while let Some(&c) = self.b.get(self.i) {
                    if matches!(c, b',' | b'}' | b']') || c.is_ascii_whitespace() {
                        break;
                    }
                    self.i += 1;
                }
                if self.i == start {
                    return self.err("expected a value");
                }
            }
            None => return self.err("unexpected end"),
        }
        Ok(&self.s[start..self.i])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scans_strings_numbers_and_skips() {
        let mut s = Scanner::new(r#" { "a\"b": 12, "c": [1, {"d": "]"}], "e": null } "#);
        s.expect(b'{').unwrap();
        assert_eq!(s.string().unwrap(), "a\"b");
        s.expect(b':').unwrap();
        assert_eq!(s.u32().unwrap(), 12);
        assert!(s.more(b'}').unwrap());
        assert_eq!(s.string().unwrap(), "c");
        s.expect(b':').unwrap();
        assert_eq!(s.skip().unwrap(), r#"[1, {"d": "]"}]"#);
        assert!(s.more(b'}').unwrap());
        assert_eq!(s.string().unwrap(), "e");
        s.expect(b':').unwrap();
        assert_eq!(s.skip().unwrap(), "null");
        assert!(!s.more(b'}').unwrap());
        assert!(Scanner::new("\"abc").string().is_err());
        assert!(Scanner::new("99999999999").u32().is_err());
    }
}
