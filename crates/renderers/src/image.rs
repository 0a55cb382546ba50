//! Images in messages, for the vision renderers: the bytes behind an image part, their
//! dimensions (read from the PNG or JPEG header), and the image-token counts of the
//! models' image processors.
//!
//! The cookbook's `image_to_chunk` (renderers/base.py) opens every image with PIL,
//! re-encodes it as JPEG and asks the model's image processor how many tokens it takes.
//! PIL's JPEG bytes cannot be reproduced without an image codec (which the wasm module
//! does not carry), so an image chunk here keeps the caller's PNG or JPEG bytes in their
//! own format; the token count depends only on the width and height, which re-encoding
//! keeps, so it is the cookbook's. Other formats PIL reads (GIF, WebP, …) are refused.
//!
//! A `data:` URL is decoded as `urllib.request.urlopen` decodes it; other URLs are
//! refused: the caller fetches the image and passes its bytes.

use super::message::{ImageSource, R};
use tinker_core::types::{InputError, ModelInputChunk};
use tinker_support::base64::{self, Padding};

/// An image of a message, ready to become an image chunk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Image {
    /// The encoded file.
    pub data: Vec<u8>,
    /// `"png"` or `"jpeg"`.
    pub format: &'static str,
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
}

impl Image {
    /// Reads an image part's source: its bytes, or the bytes of a `data:` URL. Errors name
    /// the field `image`.
    pub fn load(src: &ImageSource) -> R<Image> {
        let data = match src {
            ImageSource::Bytes(b) => b.clone(),
            ImageSource::Url(u) => data_url_bytes(u).map_err(|m| field_error(&m))?,
        };
        let (format, width, height) = dimensions(&data).map_err(|m| field_error(&m))?;
        Ok(Image {
            data,
            format,
            width,
            height,
        })
    }

    /// The image chunk (`ImageChunk(data, format, expected_tokens)`).
    pub fn into_chunk(self, expected_tokens: u32) -> ModelInputChunk {
        ModelInputChunk::Image {
            data: self.data,
            format: self.format.to_owned(),
            expected_tokens: Some(expected_tokens),
        }
    }
}

fn field_error(msg: &str) -> tinker_tokenizer::TokenizerError {
    InputError::type_error("image", msg).into()
}

/// The bytes of a `data:` URL (`data:[<mediatype>][;base64],<data>`), as urllib's
/// `DataHandler` reads it: percent-escapes decoded, then base64 when the media type ends
/// with `;base64` (characters outside the alphabet skipped, as `base64.decodebytes` does).
fn data_url_bytes(url: &str) -> Result<Vec<u8>, String> {
    let is_data = url
        .get(..5)
        .is_some_and(|s| s.eq_ignore_ascii_case("data:"));
    if !is_data {
        return Err(format!(
            "only data: URLs are read (got {}); fetch the image and pass its bytes",
            url.split(':').next().map_or("no scheme", |s| s)
        ));
    }
    let (media, payload) = url[5..]
        .split_once(',')
        .ok_or("is a data: URL without a comma before its data")?;
    let bytes = percent_decode(payload);
    if !media.ends_with(";base64") {
        return Ok(bytes);
    }
    let symbols: String = bytes
        .iter()
        .filter(|b| b.is_ascii_alphanumeric() || b"+/=".contains(b))
        .map(|&b| char::from(b))
        .collect();
    base64::decode(&symbols, false, Padding::Optional)
        .map_err(|e| format!("has invalid base64 data: {e}"))
}

/// `urllib.parse.unquote_to_bytes`: `%XX` escapes (two hex digits) decoded, other bytes
/// kept.
fn percent_decode(s: &str) -> Vec<u8> {
    let b = s.as_bytes();
    let hex = |c: u8| char::from(c).to_digit(16);
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let escape = match b.get(i..i + 3) {
            Some([b'%', h, l]) => hex(*h).zip(hex(*l)),
            _ => None,
        };
        match escape {
            Some((h, l)) => {
                out.push((h * 16 + l) as u8);
                i += 3;
            }
            None => {
                out.push(b[i]);
                i += 1;
            }
        }
    }
    out
}

/// The format (`"png"` or `"jpeg"`), width and height of an encoded image, from its
/// header (PNG `IHDR`, JPEG `SOFn`), as PIL's `Image.open(…).size` reports them.
pub fn dimensions(data: &[u8]) -> Result<(&'static str, u32, u32), String> {
    let (format, w, h) = if data.starts_with(b"\x89PNG\r\n\x1a\n") {
        let (w, h) = png_size(data).ok_or("is a PNG file without a valid IHDR header")?;
        ("png", w, h)
    } else if data.starts_with(&[0xFF, 0xD8]) {
        let (w, h) = jpeg_size(data).ok_or("is a JPEG file without a frame header (SOFn)")?;
        ("jpeg", w, h)
    } else {
        return Err(
            "is not a PNG or JPEG image (other formats are not read: convert the \
                    image to PNG or JPEG first)"
                .into(),
        );
    };
    if w == 0 || h == 0 {
        return Err(format!("has no pixels ({w}x{h})"));
    }
    Ok((format, w, h))
}

fn be16(b: &[u8], at: usize) -> Option<u32> {
    let s = b.get(at..at + 2)?;
    Some(u32::from(s[0]) << 8 | u32::from(s[1]))
}

fn be32(b: &[u8], at: usize) -> Option<u32> {
    let s = b.get(at..at + 4)?;
    Some(u32::from_be_bytes([s[0], s[1], s[2], s[3]]))
}

/// Width and height from the `IHDR` chunk, which must come first.
fn png_size(b: &[u8]) -> Option<(u32, u32)> {
    (b.get(12..16)? == b"IHDR").then_some(())?;
    Some((be32(b, 16)?, be32(b, 20)?))
}

/// Width and height from the first start-of-frame segment (`SOF0`…`SOF15` but `DHT`,
/// `JPG` and `DAC`), walking the marker segments after `SOI`.
fn jpeg_size(b: &[u8]) -> Option<(u32, u32)> {
    let mut i = 2;
    loop {
        // A marker: 0xFF (any number of fill bytes), then its code.
        (*b.get(i)? == 0xFF).then_some(())?;
        while *b.get(i)? == 0xFF {
            i += 1;
        }
        let code = *b.get(i)?;
        i += 1;
        match code {
            // Markers without a segment: TEM, RSTn, SOI.
            0x01 | 0xD0..=0xD8 => continue,
            // EOI, or SOS (entropy-coded data follows): no frame header before it.
            0xD9 | 0xDA => return None,
            0xC0..=0xCF if !matches!(code, 0xC4 | 0xC8 | 0xCC) => {
                // Length, precision, height, width.
                return Some((be16(b, i + 5)?, be16(b, i + 3)?));
            }
            _ => i += usize::try_from(be16(b, i)?).ok()?,
        }
    }
}

/// The image processors of the Qwen-VL family (`Qwen2VLImageProcessor`, which Qwen3-VL
/// and Qwen3.5 configure): images are resized to multiples of `patch_size * merge_size`
/// with a pixel count within `[min_pixels, max_pixels]`, cut into patches, and every
/// `merge_size²` patches become one token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QwenVlProcessor {
    /// Side of a patch in pixels.
    pub patch_size: u64,
    /// Patches merged per side into one token.
    pub merge_size: u64,
    /// `size["shortest_edge"]`: the fewest pixels after resizing.
    pub min_pixels: u64,
    /// `size["longest_edge"]`: the most pixels after resizing.
    pub max_pixels: u64,
}

/// Qwen3-VL's and Qwen3.5's image processor, from their `preprocessor_config.json`
/// (e.g. huggingface.co/Qwen/Qwen3-VL-30B-A3B-Instruct and Qwen/Qwen3.5-4B:
/// `"size": {"longest_edge": 16777216, "shortest_edge": 65536}, "patch_size": 16,
/// "merge_size": 2`).
pub const QWEN3_VL: QwenVlProcessor = QwenVlProcessor {
    patch_size: 16,
    merge_size: 2,
    min_pixels: 65536,
    max_pixels: 16_777_216,
};

impl QwenVlProcessor {
    /// The image's token count: `get_number_of_image_patches(height, width) //
    /// merge_size**2`, as the cookbook's `image_to_chunk` asks it.
    pub fn tokens(&self, width: u32, height: u32) -> Result<u32, String> {
        let factor = self.patch_size * self.merge_size;
        let (h, w) = smart_resize(
            u64::from(height),
            u64::from(width),
            factor,
            self.min_pixels,
            self.max_pixels,
        )?;
        let patches = (h / self.patch_size) * (w / self.patch_size);
        u32::try_from(patches / (self.merge_size * self.merge_size))
            .map_err(|_| format!("is too large ({width}x{height})"))
    }
}

/// transformers' `smart_resize` (models/qwen2_vl/image_processing_qwen2_vl.py): the
/// `(height, width)` an image is resized to, each a multiple of `factor`, the pixel count
/// within `[min_pixels, max_pixels]`, the aspect ratio kept as closely as possible. Same
/// float operations, Python's `round` (half to even), `floor` and `ceil`.
pub fn smart_resize(
    height: u64,
    width: u64,
    factor: u64,
    min_pixels: u64,
    max_pixels: u64,
) -> Result<(u64, u64), String> {
    let (hf, wf, ff) = (height as f64, width as f64, factor as f64);
    let ratio = hf.max(wf) / hf.min(wf);
    if ratio > 200.0 {
        return Err(format!(
            "absolute aspect ratio must be smaller than 200, got {}",
            tinker_support::json::fmt_py(ratio)
        ));
    }
    let mut h_bar = (hf / ff).round_ties_even() as u64 * factor;
    let mut w_bar = (wf / ff).round_ties_even() as u64 * factor;
    if h_bar * w_bar > max_pixels {
        let beta = (hf * wf / max_pixels as f64).sqrt();
        h_bar = factor.max((hf / beta / ff).floor() as u64 * factor);
        w_bar = factor.max((wf / beta / ff).floor() as u64 * factor);
    } else if h_bar * w_bar < min_pixels {
        let beta = (min_pixels as f64 / (hf * wf)).sqrt();
        h_bar = (hf * beta / ff).ceil() as u64 * factor;
        w_bar = (wf * beta / ff).ceil() as u64 * factor;
    }
    Ok((h_bar, w_bar))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn png(w: u32, h: u32) -> Vec<u8> {
        let mut b = b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR".to_vec();
        b.extend(w.to_be_bytes());
        b.extend(h.to_be_bytes());
        b.extend([8, 2, 0, 0, 0, 0, 0, 0, 0]);
        b
    }

    fn jpeg(w: u16, h: u16) -> Vec<u8> {
        let mut b = vec![0xFF, 0xD8];
        // APP0 (JFIF), a DHT to skip, fill bytes, then SOF2.
        b.extend([
            0xFF, 0xE0, 0, 16, b'J', b'F', b'I', b'F', 0, 1, 1, 0, 0, 1, 0, 1, 0, 0,
        ]);
        b.extend([0xFF, 0xC4, 0, 3, 0]);
        b.extend([0xFF, 0xFF, 0xC2, 0, 11, 8]);
        b.extend(h.to_be_bytes());
        b.extend(w.to_be_bytes());
        b.extend([1, 1, 0x11, 0]);
        b.extend([0xFF, 0xD9]);
        b
    }

    #[test]
    fn reads_png_and_jpeg_sizes() {
        assert_eq!(dimensions(&png(640, 480)), Ok(("png", 640, 480)));
        assert_eq!(dimensions(&jpeg(1920, 1080)), Ok(("jpeg", 1920, 1080)));
        assert!(dimensions(b"GIF89a....").is_err());
        assert!(dimensions(&png(0, 10)).is_err());
        // Truncated headers are errors, not panics.
        for n in 0..png(1, 1).len() {
            let _ = dimensions(&png(3, 4)[..n]);
        }
        // The frame header's width ends at byte 35.
        for n in 0..jpeg(1, 1).len() {
            assert_eq!(dimensions(&jpeg(3, 4)[..n]).is_ok(), n >= 35, "{n}");
        }
        // A JPEG whose scan starts before any frame header.
        assert!(dimensions(&[0xFF, 0xD8, 0xFF, 0xDA, 0, 2]).is_err());
    }

    #[test]
    fn reads_data_urls_and_refuses_others() {
        let b = png(2, 3);
        let url = format!("data:image/png;base64,{}", base64::encode(&b, false, true));
        let img = Image::load(&ImageSource::Url(url)).unwrap();
        assert_eq!((img.format, img.width, img.height), ("png", 2, 3));
        assert_eq!(img.data, b);
        assert_eq!(data_url_bytes("data:,a%41%zz%+1%4").unwrap(), b"aA%zz%+1%4");
        assert_eq!(data_url_bytes("data:;base64,aG%6B\n=").unwrap(), b"hi");
        let e = Image::load(&ImageSource::Url("https://x/y.png".into())).unwrap_err();
        assert!(e.to_string().contains("only data: URLs"), "{e}");
        assert!(Image::load(&ImageSource::Bytes(b"nope".to_vec())).is_err());
    }

    #[test]
    fn qwen3_vl_token_counts() {
        // Values from transformers' Qwen2VLImageProcessor with Qwen3-VL's configuration.
        let t = |w, h| QWEN3_VL.tokens(w, h).unwrap();
        assert_eq!(t(640, 480), 300); // 480x640 -> 480x640: 30x40 patches / 4
        assert_eq!(t(64, 64), 64); // below min_pixels: 256x256
        assert_eq!(t(10000, 10000), 16384); // above max_pixels: 4096x4096
        assert_eq!(t(48, 48), 64);
        assert_eq!(t(1, 200), 114);
        assert_eq!(t(33, 7), 72);
        assert_eq!(t(1000, 17), 124);
        assert_eq!(t(3000, 2000), 5828);
        // round(1.5) and round(2.5) are both 2 in Python.
        assert_eq!(smart_resize(48, 80, 32, 1, u64::MAX), Ok((64, 64)));
        assert!(QWEN3_VL.tokens(1, 201).is_err());
    }
}
