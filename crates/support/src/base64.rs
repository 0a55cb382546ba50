//! Base64 (RFC 4648): the standard alphabet for image and audio bytes in JSON bodies,
//! the URL-safe one for sampler handles and JWT payloads. Decoding is strict: symbols of
//! the alphabet only, padding as asked, and no stray bits in the last symbol.
//!
//! `encode(b"hi?", false, true)` is `aGk/`, `encode(b"hi>", true, true)` is `aGk-`, and
//! `decode("aGk", true, Padding::Optional)` gives `hi` where `Padding::Required` refuses
//! it (the tests hold these and more).

/// What a decoder accepts at the end of its input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
// `Required` is the JS skin's (src/wasm): native builds never construct it.
#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
pub enum Padding {
    /// `=` up to a multiple of 4 characters, exactly.
    Required,
    /// No `=` at all.
    Forbidden,
    /// Either none or exactly the canonical padding.
    Optional,
}

const STD: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

fn symbol(url_safe: bool, v: u32) -> char {
    let c = STD[(v & 63) as usize];
    char::from(match (url_safe, c) {
        (true, b'+') => b'-',
        (true, b'/') => b'_',
        _ => c,
    })
}

fn value(url_safe: bool, c: u8) -> Option<u32> {
    Some(match c {
        b'A'..=b'Z' => c - b'A',
        b'a'..=b'z' => c - b'a' + 26,
        b'0'..=b'9' => c - b'0' + 52,
        b'+' if !url_safe => 62,
        b'/' if !url_safe => 63,
        b'-' if url_safe => 62,
        b'_' if url_safe => 63,
        _ => return None,
    } as u32)
}

/// Base64 of `bytes` (URL-safe alphabet if asked, `=` padding if asked).
pub fn encode(bytes: &[u8], url_safe: bool, pad: bool) -> String {
    let mut s = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..=chunk.len() {
            s.push(symbol(url_safe, n >> (18 - 6 * i)));
        }
        if pad {
            for _ in chunk.len()..3 {
                s.push('=');
            }
        }
    }
    s
}

/// The bytes of base64 `text`, or why it is not base64.
pub fn decode(text: &str, url_safe: bool, padding: Padding) -> Result<Vec<u8>, String> {
    let b = text.as_bytes();
    let data = b.iter().rposition(|&c| c != b'=').map_or(0, |p| p + 1);
    let pads = b.len() - data;
    let canonical = (4 - data % 4) % 4;
    let pad_ok = match padding {
        Padding::Required => pads == canonical,
        Padding::Forbidden => pads == 0,
        Padding::Optional => pads == 0 || pads == canonical,
    };
    if data % 4 == 1 {
        return Err(format!("invalid length ({} symbols)", data));
    }
    if !pad_ok {
        return Err("invalid padding".into());
    }
    let mut out = Vec::with_capacity(data / 4 * 3 + 2);
    for (g, group) in b[..data].chunks(4).enumerate() {
        let mut n = 0u32;
        for (i, &c) in group.iter().enumerate() {
            let v = value(url_safe, c)
                .ok_or_else(|| format!("invalid symbol at offset {}", g * 4 + i))?;
            n |= v << (18 - 6 * i);
        }
        let bytes = group.len() * 6 / 8;
        if bytes < 3 && n & (0xFF_FFFF >> (8 * bytes)) != 0 {
            return Err(format!(
                "invalid last symbol at offset {}",
                g * 4 + group.len() - 1
            ));
        }
        out.extend_from_slice(&n.to_be_bytes()[1..1 + bytes]);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_module_docs_examples() {
        assert_eq!(encode(b"hi?", false, true), "aGk/");
        assert_eq!(encode(b"hi>", true, true), "aGk-");
        assert_eq!(decode("aGk", true, Padding::Optional).unwrap(), b"hi");
        assert!(decode("aGk", false, Padding::Required).is_err());
    }
    use ::base64::Engine as _;

    #[test]
    fn matches_the_base64_crate() {
        let engines = [
            ::base64::engine::general_purpose::STANDARD,
            ::base64::engine::general_purpose::URL_SAFE,
            ::base64::engine::general_purpose::URL_SAFE_NO_PAD,
        ];
        for len in 0..40usize {
            let bytes: Vec<u8> = (0..len).map(|i| (i * 37 + 251) as u8).collect();
            assert_eq!(encode(&bytes, false, true), engines[0].encode(&bytes));
            assert_eq!(encode(&bytes, true, true), engines[1].encode(&bytes));
            assert_eq!(encode(&bytes, true, false), engines[2].encode(&bytes));
            for (url, pad) in [(false, true), (true, true), (true, false)] {
                let text = encode(&bytes, url, pad);
                assert_eq!(decode(&text, url, Padding::Optional).unwrap(), bytes);
            }
            let padded = encode(&bytes, false, true);
            assert_eq!(decode(&padded, false, Padding::Required).unwrap(), bytes);
            let bare = encode(&bytes, true, false);
            assert_eq!(decode(&bare, true, Padding::Forbidden).unwrap(), bytes);
        }
    }

    #[test]
    fn rejects_what_is_not_base64() {
        for (text, url, padding) in [
            ("aGk", false, Padding::Required),
            ("aGk=", true, Padding::Forbidden),
            ("aGk==", true, Padding::Optional),
            ("a", true, Padding::Optional),
            ("aGk-", false, Padding::Required),
            ("aGk/", true, Padding::Optional),
            ("aGl=", false, Padding::Required), // stray bits in the last symbol
            ("not base64!", true, Padding::Optional),
            ("aG=k", true, Padding::Optional),
        ] {
            assert!(decode(text, url, padding).is_err(), "{text}");
            assert!(
                ::base64::engine::general_purpose::STANDARD
                    .decode(text)
                    .is_err()
                    || url
            );
        }
    }
}
