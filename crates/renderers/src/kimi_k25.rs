//! Kimi K2.5 and K2.6 (cookbook `renderers/kimi_k25.py` and `kimi_k26.py`): Kimi K2's
//! format (`kimi_k2.rs`) with a `<think>` prefill that opens the reasoning
//! (`<think></think>` to turn it off), TypeScript tool declarations (`kimi_tools_ts.rs`)
//! and images in user/system/tool messages.
//!
//! K2.6 renders as K2.5: `kimi_k26` and `kimi_k26_disable_thinking` are the K2.5 classes,
//! and `kimi_k26_preserve_thinking` keeps every historical `<think>` block
//! (`strip_thinking_from_history=False`).
//!
//! Images: the cookbook asks Kimi's image processor (custom code on the HF hub, in no
//! package registry) for `get_resize_config(image)["num_tokens"]`. That is a pure function
//! of the image's width and height, `navit_resize_image` with the `media_proc_cfg` of
//! Kimi-K2.5's `preprocessor_config.json`, reproduced here ([`image_tokens`]).

use super::base::{encode, renderer_error, single_token, text_chunk, ChatRenderer, R};
use super::image::Image;
use super::kimi_k2::{Kimi, KimiMethods};
use super::kimi_tools_ts::encode_tools_to_typescript_style;
use super::message::{ImageSource, Part};
use super::RendererOptions;
use tinker_core::types::ModelInputChunk;
use tinker_tokenizer::Tokenizer;

const THINK_OPEN: &str = "<think>";
const THINK_CLOSE: &str = "</think>";
const IMAGE_PREFIX: &str = "<|media_begin|>image<|media_content|>";
const IMAGE_SUFFIX: &str = "<|media_end|>\n";

pub(super) fn by_name(name: &str, _opts: &RendererOptions) -> Option<Box<dyn ChatRenderer>> {
    let (strip_thinking_from_history, disable_thinking) = match name {
        "kimi_k25" | "kimi_k26" => (true, false),
        "kimi_k25_disable_thinking" | "kimi_k26_disable_thinking" => (true, true),
        "kimi_k26_preserve_thinking" => (false, false),
        _ => return None,
    };
    Some(Box::new(Kimi {
        strip_thinking_from_history,
        disable_thinking,
        methods: &KIMI_K25_METHODS,
    }))
}

/// The `KimiK2Renderer` methods `KimiK25Renderer` overrides (`KimiK25Renderer`,
/// `KimiK25DisableThinkingRenderer` and `KimiK26PreserveThinkingRenderer` are Kimi K2's
/// [`Kimi`] with these).
static KIMI_K25_METHODS: KimiMethods = KimiMethods {
    encode_multipart_content,
    normalize_response_tokens,
    think_prefill: |r| {
        Some(if r.disable_thinking {
            "<think></think>"
        } else {
            THINK_OPEN
        })
    },
    // `create_conversation_prefix_with_tools`: the tools declared as TypeScript.
    tool_declaration: encode_tools_to_typescript_style,
};

/// `_normalize_response_tokens`: a response that closes a think block it did not open had
/// its `<think>` in the prompt; put it back before parsing.
fn normalize_response_tokens(tok: &Tokenizer, response: &[u32]) -> R<Vec<u32>> {
    let open = single_token(tok, THINK_OPEN)?;
    let close = single_token(tok, THINK_CLOSE)?;
    match response.first() {
        Some(&first) if first != open && response.contains(&close) => {
            Ok([open].into_iter().chain(response.iter().copied()).collect())
        }
        _ => Ok(response.to_vec()),
    }
}

/// `_encode_multipart_content`: one chunk per text part; an image between its
/// `<|media_begin|>image<|media_content|>` and `<|media_end|>\n` markers; thinking parts
/// are refused.
fn encode_multipart_content(tok: &Tokenizer, parts: Vec<Part>) -> R<Vec<ModelInputChunk>> {
    let mut chunks = Vec::with_capacity(parts.len());
    for part in parts {
        match part {
            Part::Text(t) => chunks.push(text_chunk(encode(tok, &t)?)),
            Part::Image(src) => {
                chunks.push(text_chunk(encode(tok, IMAGE_PREFIX)?));
                chunks.push(image_chunk(&src)?);
                chunks.push(text_chunk(encode(tok, IMAGE_SUFFIX)?));
            }
            Part::Thinking(_) => {
                return Err(renderer_error("Unsupported content type: thinking"));
            }
        }
    }
    Ok(chunks)
}

/// `image_to_chunk` with Kimi's image processor.
fn image_chunk(src: &ImageSource) -> R<ModelInputChunk> {
    let image = Image::load(src)?;
    let tokens = image_tokens(image.width, image.height)?;
    Ok(image.into_chunk(tokens))
}

/// Kimi-K2.5's `media_proc_cfg` (its `preprocessor_config.json`; K2.6 ships the same).
const PATCH_SIZE: u64 = 14;
const MERGE_KERNEL_SIZE: u64 = 2;
const IN_PATCH_LIMIT: f64 = 16384.0;
const PATCH_LIMIT_ON_ONE_SIDE: u64 = 512;

/// `navit_resize_image(...)["num_tokens"]`: the image is scaled down (never up) to at most
/// `in_patch_limit` patches and `patch_limit_on_one_side` patches a side, padded to whole
/// 2x2 merges, and each merge is one token. Same float operations as the Python.
pub(super) fn image_tokens(width: u32, height: u32) -> R<u32> {
    if width == 0 || height == 0 {
        return Err(renderer_error(format!(
            "an image of {width}x{height} pixels has no patches"
        )));
    }
    let (w, h) = (u64::from(width), u64::from(height));
    let patches = |side: u64| ((side / PATCH_SIZE) as f64).max(1.0);
    let by_total = (IN_PATCH_LIMIT / (patches(w) * patches(h))).sqrt();
    let max_side = PATCH_LIMIT_ON_ONE_SIDE * PATCH_SIZE;
    let by_width = max_side as f64 / w as f64;
    let by_height = max_side as f64 / h as f64;
    let scale = 1.0_f64.min(by_total).min(by_width).min(by_height);
    let resized = |side: u64| ((side as f64 * scale) as u64).max(1).min(max_side);
    let factor = MERGE_KERNEL_SIZE * PATCH_SIZE;
    let tokens = resized(w).div_ceil(factor) * resized(h).div_ceil(factor);
    u32::try_from(tokens).map_err(|_| renderer_error("too many image tokens"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn image_tokens_follow_navit_resize() {
        // Small images are padded to whole 28-pixel merges, never scaled up.
        assert_eq!(image_tokens(1, 1).ok(), Some(1));
        assert_eq!(image_tokens(28, 28).ok(), Some(1));
        assert_eq!(image_tokens(29, 56).ok(), Some(4));
        // 16384 patches at most: 2000x2000 is scaled by sqrt(16384 / 142²) to 1802x1802.
        assert_eq!(image_tokens(2000, 2000).ok(), Some(65 * 65));
        assert_eq!(image_tokens(640, 480).ok(), Some(414));
        // At most 512 patches a side.
        assert_eq!(image_tokens(10000, 50).ok(), Some(512));
        assert_eq!(image_tokens(3, 20000).ok(), Some(256));
        assert!(image_tokens(0, 5).is_err());
    }
}
