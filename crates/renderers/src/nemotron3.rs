//! Nemotron 3 / 3.5 (cookbook `renderers/nemotron3.py`): the Qwen3.5 chat format
//! (`<|im_start|>role\n…<|im_end|>`, think blocks, `<function=…>` XML tool calls) with
//! Nemotron's differences: XML tool declarations after the system prompt, an empty
//! `<think></think>` on every assistant turn that shows no reasoning, one newline (3 Nano/3
//! Super) or none (Ultra, 3.5) after `</think>`, `<think></think>` as the thinking-off
//! prompt, and a system block always written (an empty one when the conversation has none).
//!
//! `Nemotron3Renderer` subclasses `Qwen3_5Renderer` (→ `Qwen3VLRenderer` →
//! `Qwen3Renderer`): its renderer is [`Qwen35`] (the `QwenVl` machinery of `qwen3.rs`
//! and the `Qwen3_5Renderer` functions of `qwen3_5.rs`) with Nemotron's overrides, which
//! this file holds, as a [`Qwen35Methods`] table.

use std::borrow::Cow;

use serde_json::{Map, Value as Json};

use super::base::{
    json_dumps, py_str, py_strip, py_truthy, renderer_error, ChatRenderer, RenderContext,
    RenderedMessage, Termination, R,
};
use super::message::{Content, Message, Part};
use super::qwen3::{parse_qwen3, render_vl_message, Piece};
use super::qwen3_5::{
    format_argument_py, format_tool_call_xml, generation_suffix_in_header,
    normalize_response_tokens, postprocess_parsed_message, Qwen35, Qwen35Methods, QWEN3_5_METHODS,
    TOOLS_HEAD, TOOLS_TAIL,
};
use super::RendererOptions;
use tinker_tokenizer::{Tokenizer, TokenizerError};

pub(super) fn by_name(name: &str, _opts: &RendererOptions) -> Option<Box<dyn ChatRenderer>> {
    let (ultra, effort, disable_thinking, strip_thinking_from_history) = match name {
        "nemotron3" => (false, "", false, true),
        "nemotron3_low_thinking" => (false, LOW_EFFORT, false, true),
        "nemotron3_disable_thinking" => (false, "", true, true),
        "nemotron3_preserve_thinking" => (false, "", false, false),
        "nemotron3_ultra" => (true, "", false, true),
        "nemotron3_ultra_disable_thinking" => (true, "", true, true),
        "nemotron3_ultra_medium_thinking" => (true, MEDIUM_EFFORT, false, true),
        "nemotron3_ultra_preserve_thinking" => (true, "", false, false),
        _ => return None,
    };
    // `Nemotron3Renderer` and its subclasses: Qwen3.5's renderer with Nemotron's methods.
    // `ultra` is `Nemotron3UltraRenderer`'s format (Ultra, 3.5 Lightning, 3.5 Super): no
    // newlines around `</think>`; only these names are built with an image processor by
    // `get_renderer` (Nemotron 3.5 Super VL's). Historical reasoning is replaced by
    // `<think></think>` (HF `truncate_history_thinking`) except with preserve_thinking.
    Some(Box::new(Qwen35 {
        strip_thinking_from_history,
        disable_thinking,
        reasoning_instructions: effort,
        ultra,
        methods: &NEMOTRON3_METHODS,
    }))
}

/// `Nemotron3LowThinkingRenderer`'s note on the last user message (string content only).
const LOW_EFFORT: &str = "\n\n{reasoning effort: low}";
/// `Nemotron3UltraMediumThinkingRenderer`'s note on the last user message.
const MEDIUM_EFFORT: &str = "\n\n{reasoning effort: efficient}";

/// The `Qwen3_5Renderer` methods `Nemotron3Renderer` overrides (`_strips_thinking_for` is
/// Qwen3.5's; the effort and Ultra variants differ by the renderer's fields).
static NEMOTRON3_METHODS: Qwen35Methods = Qwen35Methods {
    format_thinking_text,
    image_tokens,
    wrap_image_parts,
    // Nemotron's responses end with their own newline, which a consecutive
    // `<tool_response>` follows directly.
    tool_response_close: "\n</tool_response>\n",
    tool_response_continuation_header: "",
    format_tool_calls,
    assistant_header_suffix,
    // Qwen3.5's, with the `<think>\n` prefill (Nemotron's disable-thinking variants change
    // the generation suffix, not this). It never applies: Nemotron's assistant headers
    // never start with `…assistant\n<think>\n`.
    generation_suffix_in_header: |_, message, ctx| generation_suffix_in_header(message, ctx, false),
    thinking_off_prefill: "<think></think>",
    normalize_messages: |_, messages| with_system(messages),
    // With thinking preserved, history renders each turn as a supervised example does.
    has_extension_property: |r| !r.strip_thinking_from_history,
    render_message,
    parse_response,
    conversation_prefix_with_tools,
    ..QWEN3_5_METHODS
};

/// The effort variants' `render_message`: the effort note appended to the last user
/// message.
fn with_effort<'m>(
    r: &Qwen35,
    message: &'m Message,
    ctx: &RenderContext<'_>,
) -> R<Cow<'m, Message>> {
    let suffix = r.reasoning_instructions;
    if suffix.is_empty() || message.role != "user" || ctx.idx as isize != ctx.last_user_index {
        return Ok(Cow::Borrowed(message));
    }
    let content = match &message.content {
        Content::Text(s) => Content::Text(format!("{s}{suffix}")),
        Content::Parts(_) if suffix == LOW_EFFORT => {
            return Err(renderer_error(
                "Nemotron-3 low-thinking mode is text-only; list content not supported",
            ))
        }
        Content::Parts(parts) => {
            let mut parts = parts.clone();
            parts.push(Part::Text(suffix.to_owned()));
            Content::Parts(parts)
        }
    };
    Ok(Cow::Owned(Message {
        content,
        ..message.clone()
    }))
}

/// Nemotron's `_trim_content`: string content stripped (for every role); parts as given,
/// since the template does not trim user, system or tool content.
fn with_trimmed_text(message: &Message) -> Cow<'_, Message> {
    match &message.content {
        Content::Text(s) => Cow::Owned(Message {
            content: Content::Text(py_strip(s).to_owned()),
            ..message.clone()
        }),
        Content::Parts(_) => Cow::Borrowed(message),
    }
}

/// `_normalize_messages`: an empty system message first when there is none, as the HF
/// templates always write a system block.
fn with_system(messages: &[Message]) -> Cow<'_, [Message]> {
    match messages.first() {
        Some(m) if m.role == "system" => Cow::Borrowed(messages),
        _ => {
            let mut v = Vec::with_capacity(messages.len() + 1);
            v.push(Message::new("system", ""));
            v.extend_from_slice(messages);
            Cow::Owned(v)
        }
    }
}

/// Only the Ultra-format names have an image processor; the others refuse images, as
/// the cookbook's `assert self.image_processor is not None` does.
fn image_tokens(r: &Qwen35, width: u32, height: u32) -> Result<u32, String> {
    if r.ultra {
        nemotron_image_tokens(width, height)
    } else {
        Err("image_processor is required to render image content".into())
    }
}

/// Nano/Super: `<think>\n…\n</think>\n`; Ultra: `<think>\n…</think>`.
fn format_thinking_text(r: &Qwen35, thinking: &str) -> String {
    if r.ultra {
        format!("<think>\n{thinking}</think>")
    } else {
        format!("<think>\n{thinking}\n</think>\n")
    }
}

/// `<think></think>` when the turn's reasoning will not appear in its output (it has
/// none, or history thinking is stripped). Nano/Super add the newline the HF template
/// leaves before the text of a stripped historical turn, except with tool calls (the
/// template trims that content).
fn assistant_header_suffix(r: &Qwen35, message: &Message, ctx: &RenderContext<'_>) -> String {
    let is_historical = (ctx.idx as isize) < ctx.last_user_index;
    let has_think = message.content.has_thinking();
    if has_think && (!is_historical || !r.strip_thinking_from_history) {
        return String::new();
    }
    let has_tool_calls = message.tool_calls.as_ref().is_some_and(|c| !c.is_empty());
    if !r.ultra
        && is_historical
        && has_think
        && has_nonempty_text(&message.content)
        && !has_tool_calls
    {
        return "<think></think>\n".into();
    }
    "<think></think>".into()
}

/// The XML calls, each followed by a newline. Ultra puts a newline before them;
/// Nano/Super too, unless the content is thinking parts only (framed thinking already
/// ends with one; an inline `<think>` in a string never went through that framing).
fn format_tool_calls(r: &Qwen35, message: &Message) -> R<String> {
    let mut xml = String::new();
    for call in message.tool_calls.as_deref().unwrap_or_default() {
        xml.push_str(&format_tool_call_xml(call, format_argument_py)?);
        xml.push('\n');
    }
    let has_thinking_part = matches!(&message.content,
        Content::Parts(p) if p.iter().any(|p| matches!(p, Part::Thinking(_))));
    let thinking_only = has_thinking_part && !has_nonempty_text(&message.content);
    let prefix = if !r.ultra && thinking_only { "" } else { "\n" };
    Ok(format!("{prefix}{xml}"))
}

/// `render_message`: the effort note, then Qwen3VL's rendering of the trimmed message.
fn render_message(
    r: &Qwen35,
    tok: &Tokenizer,
    message: &Message,
    ctx: &RenderContext<'_>,
) -> R<RenderedMessage> {
    let message = with_effort(r, message, ctx)?;
    // Nemotron strips thinking only before the last user message (the template's
    // truncate_history_thinking condition), not from every non-last assistant turn as
    // Qwen3VL's `not ctx.is_last` would: such turns are rendered as if last.
    let mut ctx = *ctx;
    if message.role == "assistant" && ctx.idx as isize >= ctx.last_user_index && !ctx.is_last {
        ctx.is_last = true;
    }
    render_vl_message(r, tok, &with_trimmed_text(&message), &ctx)
}

/// Qwen3.5's parse; a clean response then loses the one newline Nano/Super put after
/// `</think>` before Qwen3.5's cleanup (whose two-newline strip then does nothing).
fn parse_response(r: &Qwen35, tok: &Tokenizer, response: &[u32]) -> R<(Message, Termination)> {
    let response = normalize_response_tokens(tok, response)?;
    let (mut message, termination) = parse_qwen3(tok, &response, true)?;
    if termination == Termination::Malformed {
        return Ok((message, termination));
    }
    if !r.ultra {
        strip_newline_after_thinking(&mut message.content);
    }
    postprocess_parsed_message(&mut message);
    Ok((message, termination))
}

/// One system message: the system prompt, then (after a blank line) the XML tool
/// declarations and calling instructions.
fn conversation_prefix_with_tools(tools: &[Json], system_prompt: &str) -> R<Vec<Message>> {
    let content = if tools.is_empty() {
        system_prompt.to_owned()
    } else {
        let declarations = tools
            .iter()
            .map(tool_declaration)
            .collect::<R<Vec<_>>>()?
            .join("\n");
        let tools_text = format!("{TOOLS_HEAD}{declarations}{TOOLS_TAIL}");
        if system_prompt.is_empty() {
            tools_text
        } else {
            format!("{system_prompt}\n\n{tools_text}")
        }
    };
    Ok(vec![Message::new("system", content)])
}

/// Nemotron 3's `_postprocess_parsed_message` step: exactly one separator newline removed
/// from the first text after thinking.
fn strip_newline_after_thinking(content: &mut Content) {
    let Content::Parts(parts) = content else {
        return;
    };
    let mut seen_thinking = false;
    for p in parts.iter_mut() {
        match p {
            Part::Thinking(_) => seen_thinking = true,
            Part::Text(t) if seen_thinking => {
                if t.starts_with('\n') {
                    t.remove(0);
                }
                return;
            }
            _ => {}
        }
    }
}

/// Whether `content` is parts with a non-empty text part.
fn has_nonempty_text(content: &Content) -> bool {
    matches!(content, Content::Parts(p) if p.iter().any(|p| matches!(p, Part::Text(t) if !t.is_empty())))
}

/// Nemotron's `_wrap_image_parts` (the 3.5 Super template and processor): each image as
/// `<img>`, the image, `</img>`; on a new line when it follows text that does not end with
/// one, and labelled `<image N>` (counted per message) when the message has several.
fn wrap_image_parts(pieces: Vec<Piece<'_>>) -> Vec<Piece<'_>> {
    let num_images = pieces
        .iter()
        .filter(|p| matches!(p, Piece::Image(..)))
        .count();
    let mut out = Vec::with_capacity(pieces.len() + 2 * num_images);
    let mut image_index = 0;
    // Whether the last non-empty text since the previous image ends with a newline.
    let mut text_before: Option<bool> = None;
    for piece in pieces {
        match piece {
            Piece::Text(t) => {
                if !t.is_empty() {
                    text_before = Some(t.ends_with('\n'));
                }
                out.push(Piece::Text(t));
            }
            image => {
                image_index += 1;
                let newline = if text_before == Some(false) { "\n" } else { "" };
                let label = if num_images > 1 {
                    format!("<image {image_index}>")
                } else {
                    String::new()
                };
                out.push(Piece::Text(format!("{newline}{label}<img>")));
                out.push(image);
                out.push(Piece::Text("</img>".into()));
                text_before = None;
            }
        }
    }
    out
}

/// An error where the cookbook's tool formatting raises (a missing key, a wrong type).
fn tool_error(what: &str) -> TokenizerError {
    renderer_error(format!("invalid tool specification: {what}"))
}

/// `_render_extra_keys`: the keys not handled as `<key>value</key>` lines (containers as
/// JSON, scalars through `str`).
fn extra_keys(obj: &Map<String, Json>, handled: &[&str], lines: &mut Vec<String>) {
    for (key, value) in obj {
        if handled.contains(&key.as_str()) {
            continue;
        }
        let v = match value {
            Json::Object(_) | Json::Array(_) => json_dumps(value),
            other => py_str(other),
        };
        lines.push(format!("<{key}>{v}</{key}>"));
    }
}

/// A string field's `.strip()` (the cookbook fails on a non-string).
fn stripped<'a>(v: &'a Json, what: &str) -> R<&'a str> {
    v.as_str()
        .map(py_strip)
        .ok_or_else(|| tool_error(&format!("{what} is not a string")))
}

/// One `<parameter>` block of a tool declaration.
fn parameter_declaration(name: &str, fields: &Json, lines: &mut Vec<String>) -> R<()> {
    let Json::Object(fields) = fields else {
        return Err(tool_error(&format!("parameter {name:?} is not an object")));
    };
    lines.push("<parameter>".into());
    lines.push(format!("<name>{name}</name>"));
    if let Some(t) = fields.get("type") {
        lines.push(format!("<type>{}</type>", py_str(t)));
    }
    if let Some(d) = fields.get("description") {
        let d = stripped(d, "a parameter description")?;
        lines.push(format!("<description>{d}</description>"));
    }
    if let Some(e) = fields.get("enum") {
        lines.push(format!("<enum>{}</enum>", json_dumps(e)));
    }
    extra_keys(fields, &["name", "type", "description", "enum"], lines);
    lines.push("</parameter>".into());
    Ok(())
}

/// `_format_nemotron3_tool_declaration`: a tool as `<function>` XML, with every schema
/// field the template's `render_extra_keys` writes.
fn tool_declaration(tool: &Json) -> R<String> {
    let Json::Object(tool) = tool else {
        return Err(tool_error("a tool is not an object"));
    };
    let Some(name) = tool.get("name") else {
        return Err(tool_error("a tool has no name"));
    };
    let mut lines = vec![
        "<function>".to_owned(),
        format!("<name>{}</name>", py_str(name)),
    ];
    if let Some(d) = tool.get("description") {
        let d = stripped(d, "the description")?;
        if !d.is_empty() {
            lines.push(format!("<description>{d}</description>"));
        }
    }
    lines.push("<parameters>".into());
    // `tool.get("parameters") or {}`: a falsy value is an empty schema.
    let params = tool.get("parameters").filter(|p| py_truthy(p));
    if let Some(Json::Object(params)) = params {
        if let Some(props) = params.get("properties") {
            let Json::Object(props) = props else {
                return Err(tool_error("parameters.properties is not an object"));
            };
            for (name, fields) in props {
                parameter_declaration(name, fields, &mut lines)?;
            }
        }
        extra_keys(params, &["type", "properties", "required"], &mut lines);
        if let Some(required) = params.get("required") {
            lines.push(format!("<required>{}</required>", json_dumps(required)));
        }
    }
    lines.push("</parameters>".into());
    extra_keys(
        tool,
        &["type", "name", "description", "parameters"],
        &mut lines,
    );
    lines.push("</function>".into());
    Ok(lines.join("\n"))
}

/// Nemotron 3.5 Super VL's image processor settings (`preprocessor_config.json` of the
/// NemotronH Omni image processor: `patch_size` 16, `downsample_ratio` 0.5,
/// `min_num_patches` 1024, `max_num_patches` 13312, `max_model_len` 16384).
const PATCH_SIZE: f64 = 16.0;
const DOWNSAMPLE_FACTOR: u64 = 2;
const MIN_NUM_PATCHES: u64 = 1024;
const MAX_NUM_PATCHES: u64 = 13312;
const MAX_MODEL_LEN: u64 = 16384;

/// `image_to_chunk`'s `_compute_target_patches` branch (Nemotron 3.5 Super): the token
/// budget, the processor's patch grid for it, and one token per pixel-shuffled patch.
fn nemotron_image_tokens(width: u32, height: u32) -> Result<u32, String> {
    let pixel_shuffle = DOWNSAMPLE_FACTOR.pow(2);
    // max(min(budget, max_num_patches), min_num_patches)
    let budget = ((MAX_MODEL_LEN - 4) * pixel_shuffle).clamp(MIN_NUM_PATCHES, MAX_NUM_PATCHES);
    let (w, h) = target_patches(width, height, budget)?;
    u32::try_from(w * h / pixel_shuffle)
        .map_err(|_| "the image is too large for Nemotron's image processor".to_owned())
}

/// The processor's `_compute_target_patches(img, tokens_available)`: `(w_patches,
/// h_patches)` fitting the budget, scaled up to the minimum, each a multiple of the
/// pixel-shuffle factor where the budget allows. Same float operations as the Python
/// (`round` half to even, `floor`, `ceil`, `sqrt`).
fn target_patches(width: u32, height: u32, tokens_available: u64) -> Result<(u64, u64), String> {
    // round(x + 0.5): the patch count covering the side.
    let closest = |side: u32| (f64::from(side) / PATCH_SIZE + 0.5).round_ties_even() as u64;
    let (closest_h, closest_w) = (closest(height), closest(width));
    let patches = closest_h * closest_w;
    // Python divides by zero here.
    let degenerate =
        || "the image is too small or too elongated for Nemotron's image processor".to_owned();
    if patches == 0 {
        return Err(degenerate());
    }
    let factor = (tokens_available as f64 / patches as f64).sqrt().min(1.0);
    let mut h = (factor * closest_h as f64).floor() as u64;
    let mut w = (factor * closest_w as f64).floor() as u64;
    if tokens_available > MIN_NUM_PATCHES && h * w < MIN_NUM_PATCHES {
        if h * w == 0 {
            return Err(degenerate());
        }
        let up = (MIN_NUM_PATCHES as f64 / (h * w) as f64).sqrt();
        h = (up * h as f64).ceil() as u64;
        w = (up * w as f64).ceil() as u64;
    }
    let d = DOWNSAMPLE_FACTOR;
    if h % d != 0 {
        h = if (h + d - h % d) * w <= tokens_available {
            h + d - h % d
        } else {
            d.max(h - h % d)
        };
    }
    if w % d != 0 {
        w = if h * (w + d - w % d) <= tokens_available {
            w + d - w % d
        } else {
            d.max(w - w % d)
        };
    }
    Ok((w, h))
}

#[cfg(test)]
mod tests {
    use super::nemotron_image_tokens;

    /// Token counts of transformers' `NemotronH_Omni_Reasoning_V3ImageProcessor` tiling
    /// (`get_patch_grid_size(h, w, 16, 2, 1024, 13312)`, the 3.5 Super VL settings), whose
    /// `(w_patches * h_patches) // 4` is the count the cookbook's branch computes.
    #[test]
    fn image_tokens_match_the_processor() {
        let expected = [
            (32, 32, 256),
            (300, 200, 280),
            (1000, 700, 704),
            (64, 48, 256),
            (200, 900, 272),
            (16, 16, 256),
            (48, 32, 276),
            (4000, 100, 500),
            (100, 4000, 500),
            (2000, 3000, 3290),
            (13, 7, 256),
            (5000, 5000, 3306),
            (1, 1, 256),
            (10000, 16, 313),
            (1920, 1080, 2040),
            (17, 33, 280),
            (100_000, 16, 3125),
            (3000, 40, 381),
        ];
        for (w, h, tokens) in expected {
            assert_eq!(nemotron_image_tokens(w, h), Ok(tokens), "{w}x{h}");
        }
        // The processor divides by zero on these.
        for (w, h) in [(1_000_000, 16), (16, 1_000_000), (0, 5)] {
            assert!(nemotron_image_tokens(w, h).is_err(), "{w}x{h}");
        }
    }
}
