//! Cookbook `renderers/qwen3.py`: `<|im_start|>role\n…<|im_end|>` turns, `<think>` blocks
//! and JSON `<tool_call>` blocks.
//!
//! * [`Qwen3`]: the text renderers `qwen3`, `qwen3_disable_thinking` and `qwen3_instruct`
//!   (`Qwen3Renderer` and its two subclasses). They frame the produced turn's reasoning
//!   as the chat template does, and encode message content with special tokens split as
//!   text.
//! * [`Qwen3Vl`]: `qwen3_vl` and `qwen3_vl_instruct` (`Qwen3VLRenderer`), with images.
//!   Its machinery is shared with the subclasses in other files (Qwen3.5, Qwen3.8,
//!   Nemotron 3): the class's overridable methods are the [`QwenVl`] trait's, whose
//!   defaults are `Qwen3VLRenderer`'s, and its `render_message` is [`render_vl_message`],
//!   generic over those hooks.

use serde_json::Value as Json;

use super::base::{
    append_unterminated, attach_tool_calls, default_generation_suffix, encode, json_dumps,
    parse_content_blocks, parse_response_for_stop_token, remove_thinking, renderer_error,
    single_token, text_chunk, tool_call_payload, ChatRenderer, RenderContext, RenderedMessage,
    StopSequences, Termination, R,
};
use super::image::{Image, QWEN3_VL};
use super::message::{Content, ImageSource, Message, Part, ToolCall};
use super::RendererOptions;
use tinker_core::types::{InputError, ModelInputChunk};
use tinker_tokenizer::{EncodeOptions, Tokenizer, TokenizerError};

pub(super) fn by_name(name: &str, _opts: &RendererOptions) -> Option<Box<dyn ChatRenderer>> {
    let text = |kind| Box::new(Qwen3::new(kind)) as Box<dyn ChatRenderer>;
    let vl = |frames_thinking| {
        Box::new(Qwen3Vl {
            strip_thinking_from_history: true,
            frames_thinking,
        }) as Box<dyn ChatRenderer>
    };
    match name {
        "qwen3" => Some(text(Qwen3Kind::Thinking)),
        "qwen3_disable_thinking" => Some(text(Qwen3Kind::DisableThinking)),
        "qwen3_instruct" => Some(text(Qwen3Kind::Instruct)),
        "qwen3_vl" => Some(vl(true)),
        "qwen3_vl_instruct" => Some(vl(false)),
        _ => None,
    }
}

// ---------------------------------------------------------------------------------------
// Shared pieces of the Qwen formats

/// The `<|im_end|>` token (`_end_message_token`): the stop token of every Qwen format.
pub(super) fn im_end(tok: &Tokenizer) -> R<u32> {
    single_token(tok, "<|im_end|>")
}

/// The newline that separates a turn from the previous one (`maybe_newline`).
pub(super) fn turn_newline(ctx: &RenderContext<'_>) -> &'static str {
    if ctx.idx > 0 {
        "\n"
    } else {
        ""
    }
}

/// `_get_qwen_role_for_message`: tool results are written as user turns.
pub(super) fn qwen_role(message: &Message) -> &str {
    if message.role == "tool" {
        "user"
    } else {
        &message.role
    }
}

/// The JSON `<tool_call>` blocks of Qwen3, one per call, joined by newlines.
fn json_tool_calls(calls: &[ToolCall]) -> R<String> {
    let blocks = calls
        .iter()
        .map(|c| {
            Ok(format!(
                "<tool_call>\n{}\n</tool_call>",
                json_dumps(&tool_call_payload(c)?)
            ))
        })
        .collect::<R<Vec<_>>>()?;
    Ok(blocks.join("\n"))
}

/// `_frame_thinking`: reasoning as the template writes it around the produced turn,
/// `<think>\n…\n</think>\n\n` (present, empty, when the turn did not reason).
fn frame_thinking(reasoning: &str) -> String {
    format!("<think>\n{}\n</think>\n\n", reasoning.trim_matches('\n'))
}

/// `_unframe_thinking`: undoes [`frame_thinking`] on parsed parts. The padding newlines
/// are framing, and an empty block is a turn that did not reason (dropped, though the
/// text after it is still left-stripped of newlines).
fn unframe_thinking(parts: Vec<Part>) -> Vec<Part> {
    let mut out = Vec::with_capacity(parts.len());
    let mut after_block = false;
    for p in parts {
        match p {
            Part::Thinking(t) => {
                let reasoning = t.trim_matches('\n');
                if !reasoning.is_empty() {
                    out.push(Part::Thinking(reasoning.to_owned()));
                }
                after_block = true;
            }
            Part::Text(t) if after_block => {
                out.push(Part::Text(t.trim_start_matches('\n').to_owned()));
                after_block = false;
            }
            other => {
                out.push(other);
                after_block = false;
            }
        }
    }
    out
}

/// `Qwen3Renderer.parse_response` after `_normalize_response_tokens`: split on
/// `<|im_end|>`, then `<think>` blocks become thinking parts (unframed when the renderer
/// frames thinking) and `<tool_call>` blocks tool calls; an unclosed `<tool_call>` is
/// reported in `unparsed_tool_calls`.
pub(super) fn parse_qwen3(
    tok: &Tokenizer,
    response: &[u32],
    frames_thinking: bool,
) -> R<(Message, Termination)> {
    let (mut message, termination) = parse_response_for_stop_token(tok, response, im_end(tok)?)?;
    if termination == Termination::Malformed {
        return Ok((message, termination));
    }
    let content = message.content.text_content();
    if let Some((parts, calls)) = parse_content_blocks(&content) {
        message.content = Content::Parts(if frames_thinking {
            unframe_thinking(parts)
        } else {
            parts
        });
        attach_tool_calls(&mut message, calls);
    }
    append_unterminated(&mut message, &content, "<tool_call>", "</tool_call>");
    Ok((message, termination))
}

/// `Qwen3Renderer.create_conversation_prefix_with_tools`: a system message declaring the
/// tools as JSON lines in `<tools>`, after the system prompt.
fn qwen3_tools_prefix(tools: &[Json], system_prompt: &str) -> Vec<Message> {
    let mut tools_text = String::new();
    if !tools.is_empty() {
        let lines: Vec<String> = tools
            .iter()
            .map(|t| json_dumps(&serde_json::json!({ "type": "function", "function": t })))
            .collect();
        tools_text = format!(
            "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n\
             You are provided with function signatures within <tools></tools> XML tags:\n\
             <tools>\n{}\n</tools>\n\n\
             For each function call, return a json object with function name and arguments \
             within <tool_call></tool_call> XML tags:\n<tool_call>\n\
             {{\"name\": <function-name>, \"arguments\": <args-json-object>}}\n</tool_call>",
            lines.join("\n")
        );
    }
    let content = if system_prompt.is_empty() {
        tools_text
    } else {
        format!("{system_prompt}\n\n{tools_text}")
    };
    vec![Message::new("system", content)]
}

// ---------------------------------------------------------------------------------------
// Text renderers

/// Which text renderer class.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Qwen3Kind {
    /// `Qwen3Renderer`: thinking enabled.
    Thinking,
    /// `Qwen3DisableThinkingRenderer`: the prompt closes an empty think block.
    DisableThinking,
    /// `Qwen3InstructRenderer` (2507 Instruct): no `<think>` tag at all.
    Instruct,
}

/// `Qwen3Renderer` and its text subclasses.
pub struct Qwen3 {
    kind: Qwen3Kind,
    /// Drop thinking from assistant turns before the last message (the template's
    /// behaviour; `get_renderer` always keeps it on).
    strip_thinking_from_history: bool,
}

impl Qwen3 {
    fn new(kind: Qwen3Kind) -> Qwen3 {
        Qwen3 {
            kind,
            strip_thinking_from_history: true,
        }
    }

    /// `frames_thinking`: false for the Instruct models, which never see `<think>`.
    fn frames_thinking(&self) -> bool {
        self.kind != Qwen3Kind::Instruct
    }

    /// `_frames_produced_turn`: the template frames an assistant turn after the last user
    /// message (`loop.index0 > ns.last_query_index`); with history thinking kept, every
    /// assistant turn is framed alike. Without a user message nothing is framed.
    fn frames_produced_turn(&self, message: &Message, ctx: &RenderContext<'_>) -> bool {
        self.frames_thinking()
            && message.role == "assistant"
            && ctx.last_user_index >= 0
            && (ctx.is_last || !self.strip_thinking_from_history)
    }

    /// The message's content as text: parts in order (thinking framed or written inline,
    /// images ignored as the text renderer does), or the string (an inline block
    /// normalized to the framing when the turn is framed).
    fn content_text(&self, message: &Message, ctx: &RenderContext<'_>, frames: bool) -> String {
        match &message.content {
            Content::Parts(parts) => {
                let strip =
                    self.strip_thinking_from_history && message.role == "assistant" && !ctx.is_last;
                let parts = if strip {
                    remove_thinking(parts)
                } else {
                    parts.clone()
                };
                render_text_parts(&parts, frames)
            }
            Content::Text(s) if frames && s.contains("</think>") => {
                let (reasoning, rest) = s.split_once("</think>").unwrap_or((s, ""));
                let reasoning = reasoning.rsplit_once("<think>").map_or(reasoning, |r| r.1);
                frame_thinking(reasoning) + rest.trim_start_matches('\n')
            }
            Content::Text(s) => s.clone(),
        }
    }

    /// `Qwen3Renderer.render_message`.
    fn render(
        &self,
        tok: &Tokenizer,
        message: &Message,
        ctx: &RenderContext<'_>,
    ) -> R<RenderedMessage> {
        let header = format!("{}<|im_start|>{}\n", turn_newline(ctx), qwen_role(message));
        let frames = self.frames_produced_turn(message, ctx);
        let mut out = self.content_text(message, ctx, frames);
        // The separator before tool calls asks about the message's own text, not the
        // empty block the template writes itself.
        let has_text = !out.is_empty();
        if frames && !message.content.has_thinking() {
            out = frame_thinking("") + out.trim_start_matches('\n');
        }
        if message.role == "tool" {
            out = format!("<tool_response>\n{out}\n</tool_response>");
        }
        if let Some(calls) = &message.tool_calls {
            if has_text {
                out.push('\n');
            }
            out.push_str(&json_tool_calls(calls)?);
        }
        Ok(RenderedMessage {
            header: Some(encode(tok, &header)?),
            output: vec![
                text_chunk(encode_content(tok, &out)?),
                text_chunk(vec![im_end(tok)?]),
            ],
            stop_overlap: None,
        })
    }
}

/// Structured content as text: thinking framed (and the text right after it stripped of
/// leading newlines, which the frame already wrote) or written as `<think>…</think>`.
fn render_text_parts(parts: &[Part], frames: bool) -> String {
    let mut out = String::new();
    let mut after_block = false;
    for p in parts {
        match p {
            Part::Thinking(t) => {
                if frames {
                    out.push_str(&frame_thinking(t));
                } else {
                    out.push_str(&format!("<think>{t}</think>"));
                }
                after_block = frames;
            }
            Part::Text(t) => {
                out.push_str(if after_block {
                    t.trim_start_matches('\n')
                } else {
                    t
                });
                after_block = false;
            }
            Part::Image(_) => {}
        }
    }
    out
}

/// Message content as the cookbook encodes it: with a private copy of the tokenizer whose
/// backend splits special tokens as text (`encode_special_tokens = True`), so that
/// `<|im_end|>` written in content is not the end of the turn. Non-special added tokens
/// (`<think>`, `<tool_call>`) are still matched.
fn encode_content(tok: &Tokenizer, s: &str) -> R<Vec<u32>> {
    let split = EncodeOptions {
        add_special_tokens: false,
        split_special_tokens: true,
    };
    tok.encode_with(s, split)
}

impl ChatRenderer for Qwen3 {
    fn has_extension_property(&self) -> bool {
        self.kind == Qwen3Kind::Instruct || !self.strip_thinking_from_history
    }

    fn disables_thinking(&self) -> bool {
        self.kind == Qwen3Kind::DisableThinking
    }

    fn stop_sequences(&self, tok: &Tokenizer) -> R<StopSequences> {
        Ok(StopSequences::Tokens(vec![im_end(tok)?]))
    }

    fn render_message(
        &self,
        tok: &Tokenizer,
        message: &Message,
        ctx: &RenderContext<'_>,
    ) -> R<RenderedMessage> {
        // Without a user message the template writes no empty block on the produced turn,
        // but the disable-thinking prompt always opens one: the two cannot both hold.
        if self.kind == Qwen3Kind::DisableThinking
            && message.role == "assistant"
            && ctx.is_last
            && message.content.is_truthy()
            && ctx.last_user_index < 0
        {
            return Err(renderer_error(
                "this conversation has no user message, so Qwen3's template writes no empty \
                 think block on the produced turn -- but the generation prompt always opens \
                 one. Add a user message, or render with thinking enabled.",
            ));
        }
        self.render(tok, message, ctx)
    }

    fn generation_suffix(
        &self,
        tok: &Tokenizer,
        role: &str,
        ctx: &RenderContext<'_>,
    ) -> R<Vec<u32>> {
        if self.kind != Qwen3Kind::DisableThinking {
            return default_generation_suffix(self, tok, role, ctx);
        }
        // The empty block is part of the prompt, so sampling starts after it.
        let s = format!(
            "{}<|im_start|>{role}\n<think>\n\n</think>\n\n",
            turn_newline(ctx)
        );
        encode(tok, &s)
    }

    fn parse_response(&self, tok: &Tokenizer, response: &[u32]) -> R<(Message, Termination)> {
        parse_qwen3(tok, response, self.frames_thinking())
    }

    fn conversation_prefix_with_tools(
        &self,
        _tok: &Tokenizer,
        tools: &[Json],
        system_prompt: &str,
    ) -> R<Vec<Message>> {
        Ok(qwen3_tools_prefix(tools, system_prompt))
    }
}

// ---------------------------------------------------------------------------------------
// Vision-language machinery (Qwen3VLRenderer), shared with Qwen3.5, Qwen3.8, Nemotron 3

/// A piece of a vision-language message before encoding (`ImagePart | TextPart`).
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Piece<'a> {
    /// Text, encoded with the tokenizer.
    Text(String),
    /// An image part: its index in the message's content (for errors) and its source.
    Image(usize, &'a ImageSource),
}

/// The overridable methods of `Qwen3VLRenderer`; the defaults are its own.
pub(super) trait QwenVl {
    /// `strip_thinking_from_history`.
    fn strip_thinking_from_history(&self) -> bool;

    /// The image processor's token count for an image (`image_to_chunk`): Qwen3-VL's.
    fn image_tokens(&self, width: u32, height: u32) -> Result<u32, String> {
        QWEN3_VL.tokens(width, height)
    }

    /// `groups_consecutive_tool_responses`: a run of tool results shares one user turn.
    fn groups_consecutive_tool_responses(&self) -> bool {
        false
    }

    /// `_format_thinking_text`: a thinking part as text.
    fn format_thinking_text(&self, thinking: &str) -> String {
        format!("<think>{thinking}</think>")
    }

    /// `_assistant_header_suffix`: text after an assistant turn's header.
    fn assistant_header_suffix(&self, _message: &Message, _ctx: &RenderContext<'_>) -> String {
        String::new()
    }

    /// `_wrap_image_parts`: each image between `<|vision_start|>` and `<|vision_end|>`.
    fn wrap_image_parts<'a>(&self, pieces: Vec<Piece<'a>>) -> Vec<Piece<'a>> {
        wrap_vision(pieces)
    }

    /// `_wrap_qwen_tool_response_chunks`: a tool result in `<tool_response>` tags.
    fn wrap_tool_response<'a>(&self, pieces: Vec<Piece<'a>>) -> Vec<Piece<'a>> {
        let mut out = vec![Piece::Text("<tool_response>\n".into())];
        out.extend(pieces);
        out.push(Piece::Text("\n</tool_response>".into()));
        out
    }

    /// `_tool_response_continuation_header`: what separates grouped tool results.
    fn tool_response_continuation_header(&self) -> &'static str {
        "\n"
    }

    /// `_strips_thinking_for`: thinking is dropped from every assistant message but the
    /// last (over-stripping turns after the last user message, kept for compatibility
    /// with checkpoints trained on it).
    fn strips_thinking_for(&self, message: &Message, ctx: &RenderContext<'_>) -> bool {
        self.strip_thinking_from_history() && message.role == "assistant" && !ctx.is_last
    }

    /// `_format_tool_calls_chunks`: the text written for `message.tool_calls` (JSON
    /// blocks after a newline).
    fn format_tool_calls(&self, message: &Message) -> R<String> {
        Ok(format!(
            "\n{}",
            json_tool_calls(message.tool_calls.as_deref().unwrap_or_default())?
        ))
    }

    /// `_generation_suffix_in_header`: how much of this message's header the generation
    /// prompt already wrote (none here).
    fn generation_suffix_in_header(&self, _message: &Message, _ctx: &RenderContext<'_>) -> String {
        String::new()
    }
}

/// `Qwen3VLRenderer._wrap_image_parts`: each image between `<|vision_start|>` and
/// `<|vision_end|>`.
pub(super) fn wrap_vision(pieces: Vec<Piece<'_>>) -> Vec<Piece<'_>> {
    let mut out = Vec::with_capacity(pieces.len());
    for p in pieces {
        if let Piece::Image(..) = p {
            out.push(Piece::Text("<|vision_start|>".into()));
            out.push(p);
            out.push(Piece::Text("<|vision_end|>".into()));
        } else {
            out.push(p);
        }
    }
    out
}

/// `_preprocess_message_parts` before wrapping: string content as one text piece; parts
/// in order, thinking as [`QwenVl::format_thinking_text`] unless stripped.
fn message_pieces<'a, H: QwenVl + ?Sized>(
    h: &H,
    message: &'a Message,
    strip_thinking: bool,
) -> Vec<Piece<'a>> {
    match &message.content {
        Content::Text(s) => vec![Piece::Text(s.clone())],
        Content::Parts(parts) => parts
            .iter()
            .enumerate()
            .filter_map(|(i, p)| match p {
                Part::Text(t) => Some(Piece::Text(t.clone())),
                Part::Image(src) => Some(Piece::Image(i, src)),
                Part::Thinking(t) => {
                    (!strip_thinking).then(|| Piece::Text(h.format_thinking_text(t)))
                }
            })
            .collect(),
    }
}

/// `_merge_consecutive_text_parts`: adjacent text is tokenized as one string, as the
/// template's rendered text is.
fn merge_text(pieces: Vec<Piece<'_>>) -> Vec<Piece<'_>> {
    let mut out: Vec<Piece<'_>> = Vec::with_capacity(pieces.len());
    for p in pieces {
        match (out.last_mut(), p) {
            (Some(Piece::Text(prev)), Piece::Text(t)) => prev.push_str(&t),
            (_, p) => out.push(p),
        }
    }
    out
}

/// Encodes pieces: text with the tokenizer, images as image chunks with the renderer's
/// token count.
fn encode_pieces<H: QwenVl + ?Sized>(
    h: &H,
    tok: &Tokenizer,
    pieces: Vec<Piece<'_>>,
) -> R<Vec<ModelInputChunk>> {
    pieces
        .into_iter()
        .map(|p| match p {
            Piece::Text(t) => Ok(text_chunk(encode(tok, &t)?)),
            Piece::Image(i, src) => image_chunk(h, src).map_err(|e| match e {
                TokenizerError::Input(e) => e.within(&format!("content[{i}]")).into(),
                other => other,
            }),
        })
        .collect()
}

/// `image_to_chunk`: the image's bytes, with the token count of the renderer's processor.
fn image_chunk<H: QwenVl + ?Sized>(h: &H, src: &ImageSource) -> R<ModelInputChunk> {
    let img = Image::load(src)?;
    let tokens = h
        .image_tokens(img.width, img.height)
        .map_err(|m| InputError::range_error("image", m))?;
    Ok(img.into_chunk(tokens))
}

/// `Qwen3VLRenderer.render_message`, with the hooks of `h`.
pub(super) fn render_vl_message<H: QwenVl + ?Sized>(
    h: &H,
    tok: &Tokenizer,
    message: &Message,
    ctx: &RenderContext<'_>,
) -> R<RenderedMessage> {
    let grouping = h.groups_consecutive_tool_responses();
    let is_tool = message.role == "tool";
    let prev_is_tool = grouping && ctx.prev_message.is_some_and(|m| m.role == "tool");
    let next_is_tool = grouping && ctx.next_message.is_some_and(|m| m.role == "tool");
    let mut header = if is_tool && prev_is_tool {
        // The template keeps the user turn open and writes the next result directly.
        h.tool_response_continuation_header().to_owned()
    } else {
        let mut s = format!("{}<|im_start|>{}\n", turn_newline(ctx), qwen_role(message));
        if message.role == "assistant" {
            s.push_str(&h.assistant_header_suffix(message, ctx));
        }
        s
    };
    let strip = h.strips_thinking_for(message, ctx);
    let mut pieces = h.wrap_image_parts(message_pieces(h, message, strip));
    if is_tool {
        pieces = h.wrap_tool_response(pieces);
    }
    if message.tool_calls.is_some() {
        pieces.push(Piece::Text(h.format_tool_calls(message)?));
    }
    // A grouped tool result followed by another leaves the shared turn open.
    if !(is_tool && next_is_tool) {
        pieces.push(Piece::Text("<|im_end|>".into()));
    }
    let mut output = encode_pieces(h, tok, merge_text(pieces))?;
    // The part of the header the generation prompt wrote stays the header; the rest of
    // it moves into the output, which the model produced after that prompt.
    let prefix = h.generation_suffix_in_header(message, ctx);
    if !prefix.is_empty() {
        if let Some(rest) = header.strip_prefix(prefix.as_str()) {
            if !rest.is_empty() {
                output.insert(0, text_chunk(encode(tok, rest)?));
            }
            header = prefix;
        }
    }
    Ok(RenderedMessage {
        header: Some(encode(tok, &header)?),
        output,
        stop_overlap: None,
    })
}

/// `Qwen3VLRenderer` (`qwen3_vl`) and `Qwen3VLInstructRenderer` (`qwen3_vl_instruct`).
pub struct Qwen3Vl {
    strip_thinking_from_history: bool,
    /// `frames_thinking`: parsed reasoning is unframed (false for the Instruct models).
    frames_thinking: bool,
}

impl QwenVl for Qwen3Vl {
    fn strip_thinking_from_history(&self) -> bool {
        self.strip_thinking_from_history
    }
}

impl ChatRenderer for Qwen3Vl {
    fn has_extension_property(&self) -> bool {
        !self.strip_thinking_from_history
    }

    fn stop_sequences(&self, tok: &Tokenizer) -> R<StopSequences> {
        Ok(StopSequences::Tokens(vec![im_end(tok)?]))
    }

    fn render_message(
        &self,
        tok: &Tokenizer,
        message: &Message,
        ctx: &RenderContext<'_>,
    ) -> R<RenderedMessage> {
        render_vl_message(self, tok, message, ctx)
    }

    fn parse_response(&self, tok: &Tokenizer, response: &[u32]) -> R<(Message, Termination)> {
        parse_qwen3(tok, response, self.frames_thinking)
    }

    fn conversation_prefix_with_tools(
        &self,
        _tok: &Tokenizer,
        tools: &[Json],
        system_prompt: &str,
    ) -> R<Vec<Message>> {
        Ok(qwen3_tools_prefix(tools, system_prompt))
    }
}
