//! Cookbook `renderers/qwen3_5.py`: Qwen3.5, a vision-language model with Qwen3-VL's
//! format (the [`QwenVl`] machinery of `qwen3.rs`) and XML tool calls
//! (`<function=name><parameter=p>value</parameter></function>`). Its template trims
//! content, writes an empty think block on assistant turns after the last user message,
//! and its generation prompt prefills `<think>\n`.
//!
//! The functions here are `Qwen3_5Renderer`'s methods, shared with its subclasses
//! (Qwen3.8 in `qwen3_8.rs`, Nemotron 3 in `nemotron3.rs`).

use serde_json::{Map, Value as Json};

use std::borrow::Cow;

use super::base::{
    default_build_generation_prompt, default_build_supervised_example, encode, json_dumps,
    json_loads, py_is_space, py_strip, renderer_error, ChatRenderer, RenderContext,
    RenderedMessage, StopSequences, Supervised, Termination, TrainOnWhat, R,
    UNTERMINATED_TOOL_BLOCK_ERROR,
};
use super::image::QWEN3_VL;
use super::message::{Content, Message, Part, ToolCall, UnparsedToolCall};
use super::qwen3::{
    im_end, parse_qwen3, qwen_role, render_vl_message, turn_newline, wrap_vision, Piece, QwenVl,
};
use super::RendererOptions;
use tinker_core::types::ModelInput;
use tinker_tokenizer::Tokenizer;

pub(super) fn by_name(name: &str, _opts: &RendererOptions) -> Option<Box<dyn ChatRenderer>> {
    let r = |strip_thinking_from_history, disable_thinking| {
        Box::new(Qwen35 {
            strip_thinking_from_history,
            disable_thinking,
            reasoning_instructions: "",
            ultra: false,
            methods: &QWEN3_5_METHODS,
        }) as Box<dyn ChatRenderer>
    };
    match name {
        "qwen3_5" => Some(r(true, false)),
        "qwen3_5_disable_thinking" => Some(r(true, true)),
        "qwen3_5_preserve_thinking" => Some(r(false, false)),
        _ => None,
    }
}

/// `Qwen3_5Renderer` and `Qwen3_5DisableThinkingRenderer`, and (with their
/// [`Qwen35Methods`]) its subclasses `Qwen3_8Renderer`, `Nemotron3Renderer` and theirs:
/// one type, so the Qwen3-VL rendering is compiled once for all of them.
pub(super) struct Qwen35 {
    pub(super) strip_thinking_from_history: bool,
    pub(super) disable_thinking: bool,
    /// Qwen3.8's `_reasoning_instructions`, or Nemotron's reasoning-effort note for the
    /// last user message (empty for Qwen3.5, with thinking off, or at full effort).
    pub(super) reasoning_instructions: &'static str,
    /// `Nemotron3UltraRenderer`'s format (Nemotron 3 Ultra, 3.5); false for the others.
    pub(super) ultra: bool,
    /// The methods a subclass overrides.
    pub(super) methods: &'static Qwen35Methods,
}

/// The `Qwen3_5Renderer` (and `Qwen3VLRenderer`) methods its subclasses override.
pub(super) struct Qwen35Methods {
    /// `_format_thinking_text`.
    pub(super) format_thinking_text: fn(&Qwen35, &str) -> String,
    /// `image_to_chunk`'s token count for an image.
    pub(super) image_tokens: fn(&Qwen35, u32, u32) -> Result<u32, String>,
    /// `_wrap_image_parts`.
    pub(super) wrap_image_parts: for<'a> fn(Vec<Piece<'a>>) -> Vec<Piece<'a>>,
    /// What closes a `<tool_response>` (`_wrap_qwen_tool_response_chunks`).
    pub(super) tool_response_close: &'static str,
    /// `_tool_response_continuation_header`.
    pub(super) tool_response_continuation_header: &'static str,
    /// `_format_tool_calls_chunks` (with `_format_tool_call_argument`).
    pub(super) format_tool_calls: fn(&Qwen35, &Message) -> R<String>,
    /// `_assistant_header_suffix`.
    pub(super) assistant_header_suffix: fn(&Qwen35, &Message, &RenderContext<'_>) -> String,
    /// `_strips_thinking_for`.
    pub(super) strips_thinking_for: fn(&Qwen35, &Message, &RenderContext<'_>) -> bool,
    /// `_generation_suffix_in_header`.
    pub(super) generation_suffix_in_header: fn(&Qwen35, &Message, &RenderContext<'_>) -> String,
    /// The think block the generation prompt ends with when thinking is disabled.
    pub(super) thinking_off_prefill: &'static str,
    /// `_normalize_messages`, run before building prompts and examples.
    pub(super) normalize_messages: for<'a> fn(&Qwen35, &'a [Message]) -> Cow<'a, [Message]>,
    /// `has_extension_property`.
    pub(super) has_extension_property: fn(&Qwen35) -> bool,
    /// `render_message`.
    pub(super) render_message:
        fn(&Qwen35, &Tokenizer, &Message, &RenderContext<'_>) -> R<RenderedMessage>,
    /// `parse_response`.
    pub(super) parse_response: fn(&Qwen35, &Tokenizer, &[u32]) -> ParsedResponse,
    /// `create_conversation_prefix_with_tools`.
    pub(super) conversation_prefix_with_tools: fn(&[Json], &str) -> R<Vec<Message>>,
}

/// A parsed response and how it ended.
type ParsedResponse = R<(Message, Termination)>;

/// `Qwen3_5Renderer`'s own methods.
pub(super) const QWEN3_5_METHODS: Qwen35Methods = Qwen35Methods {
    format_thinking_text: |_, thinking| format!("<think>\n{thinking}\n</think>\n\n"),
    image_tokens: |_, width, height| QWEN3_VL.tokens(width, height),
    wrap_image_parts: wrap_vision,
    tool_response_close: "\n</tool_response>",
    tool_response_continuation_header: "\n",
    format_tool_calls: |_, message| format_tool_calls(message, format_argument_py),
    assistant_header_suffix: |_, message, ctx| assistant_header_suffix(message, ctx),
    // Qwen3VL's: thinking dropped from every assistant message but the last.
    strips_thinking_for: |r, message, ctx| {
        r.strip_thinking_from_history && message.role == "assistant" && !ctx.is_last
    },
    generation_suffix_in_header: |r, message, ctx| {
        generation_suffix_in_header(message, ctx, r.disable_thinking)
    },
    thinking_off_prefill: EMPTY_THINK_BLOCK,
    normalize_messages: |_, messages| Cow::Borrowed(messages),
    // A turn that did not reason is sampled after the open `<think>\n`, while history
    // writes it with the closed empty block (or none): never a token prefix.
    has_extension_property: |_| false,
    render_message: |r, tok, message, ctx| {
        render_vl_message(r, tok, &with_trimmed_content(message), ctx)
    },
    parse_response: |_, tok, response| parse_response(tok, response),
    conversation_prefix_with_tools: |tools, system_prompt| Ok(tools_prefix(tools, system_prompt)),
};

/// The empty think block the template writes on a turn that did not reason.
pub(super) const EMPTY_THINK_BLOCK: &str = "<think>\n\n</think>\n\n";

// ---------------------------------------------------------------------------------------
// Rendering

/// `_strip_visible_content`: the template's `content|trim` on structured content. Text
/// parts are left-stripped from the front and right-stripped from the back, thinking
/// parts skipped, until a non-empty text or an image.
fn strip_visible_content(parts: &[Part]) -> Vec<Part> {
    let mut parts = parts.to_vec();
    let visible: Vec<usize> = (0..parts.len())
        .filter(|&i| !matches!(parts[i], Part::Thinking(_)))
        .collect();
    strip_side(&mut parts, visible.iter().copied(), |s| {
        s.trim_start_matches(py_is_space)
    });
    strip_side(&mut parts, visible.iter().rev().copied(), |s| {
        s.trim_end_matches(py_is_space)
    });
    parts
}

/// Strips the text parts at `order` until one keeps text or a non-text part comes.
fn strip_side(parts: &mut [Part], order: impl Iterator<Item = usize>, strip: fn(&str) -> &str) {
    for i in order {
        let Some(Part::Text(t)) = parts.get_mut(i) else {
            return;
        };
        *t = strip(t).to_owned();
        if !t.is_empty() {
            return;
        }
    }
}

/// `Qwen3_5Renderer.render_message`'s first step: the message with its content trimmed
/// (`_trim_content`).
pub(super) fn with_trimmed_content(message: &Message) -> Message {
    let content = match &message.content {
        Content::Text(s) => Content::Text(py_strip(s).to_owned()),
        Content::Parts(p) => Content::Parts(strip_visible_content(p)),
    };
    Message {
        content,
        ..message.clone()
    }
}

/// `_generation_suffix_str`: the header the generation prompt ends with, with the
/// `<think>\n` prefill, or with the closed empty block when thinking is disabled.
pub(super) fn generation_suffix_str(role: &str, ctx: &RenderContext<'_>, disable: bool) -> String {
    let think = if disable {
        EMPTY_THINK_BLOCK
    } else {
        "<think>\n"
    };
    format!("{}<|im_start|>{role}\n{think}", turn_newline(ctx))
}

/// `_generation_suffix_in_header`: the produced turn (the last message, an assistant's)
/// is sampled after the prefill, so the prefill is part of its header.
pub(super) fn generation_suffix_in_header(
    message: &Message,
    ctx: &RenderContext<'_>,
    disable: bool,
) -> String {
    if message.role != "assistant" || !ctx.is_last {
        return String::new();
    }
    generation_suffix_str(qwen_role(message), ctx, disable)
}

/// `_assistant_header_suffix`: the empty think block on assistant turns after the last
/// user message that carry no reasoning.
pub(super) fn assistant_header_suffix(message: &Message, ctx: &RenderContext<'_>) -> String {
    if ctx.idx as isize <= ctx.last_user_index || message.content.has_thinking() {
        String::new()
    } else {
        EMPTY_THINK_BLOCK.to_owned()
    }
}

/// `Qwen3_5Renderer._format_tool_call_argument`: mappings and sequences as JSON, scalars
/// as Python's `str` (`True`, `None`, `1.5`).
pub(super) fn format_argument_py(value: &Json) -> String {
    match value {
        Json::Object(_) | Json::Array(_) => json_dumps(value),
        Json::String(s) => s.clone(),
        Json::Bool(true) => "True".into(),
        Json::Bool(false) => "False".into(),
        Json::Null => "None".into(),
        Json::Number(n) if n.is_f64() => {
            tinker_support::json::fmt_py(n.as_f64().unwrap_or(f64::NAN))
        }
        Json::Number(n) => n.to_string(),
    }
}

/// `_format_tool_call_xml`: one call as `<tool_call>\n<function=name>\n<parameter=p>\n
/// value\n</parameter>…</function>\n</tool_call>`, arguments written by `format_arg`.
pub(super) fn format_tool_call_xml(call: &ToolCall, format_arg: fn(&Json) -> String) -> R<String> {
    let args = if call.arguments.is_empty() {
        Map::new()
    } else {
        match json_loads(&call.arguments) {
            Ok(Json::Object(o)) => o,
            Ok(other) => {
                return Err(renderer_error(format!(
                    "tool call {:?} has arguments that are not a JSON object: {other}",
                    call.name
                )))
            }
            Err(e) => {
                return Err(renderer_error(format!(
                    "tool call {:?} has arguments that are not valid JSON: {e}",
                    call.name
                )))
            }
        }
    };
    let mut lines = vec![format!("<tool_call>\n<function={}>", call.name)];
    for (name, value) in &args {
        lines.push(format!(
            "<parameter={name}>\n{}\n</parameter>",
            format_arg(value)
        ));
    }
    lines.push("</function>\n</tool_call>".into());
    Ok(lines.join("\n"))
}

/// `Qwen3_5Renderer._format_tool_calls_chunks`: the calls, after a blank line when the
/// (trimmed) message has visible content (text or an image; thinking does not count).
pub(super) fn format_tool_calls(message: &Message, format_arg: fn(&Json) -> String) -> R<String> {
    let visible = match &message.content {
        Content::Text(s) => !py_strip(s).is_empty(),
        Content::Parts(p) => p.iter().any(|p| match p {
            Part::Text(t) => !py_strip(t).is_empty(),
            Part::Image(_) => true,
            Part::Thinking(_) => false,
        }),
    };
    let calls = message
        .tool_calls
        .as_deref()
        .unwrap_or_default()
        .iter()
        .map(|c| format_tool_call_xml(c, format_arg))
        .collect::<R<Vec<_>>>()?;
    let separator = if visible { "\n\n" } else { "" };
    Ok(format!("{separator}{}", calls.join("\n")))
}

impl QwenVl for Qwen35 {
    fn strip_thinking_from_history(&self) -> bool {
        self.strip_thinking_from_history
    }

    fn image_tokens(&self, width: u32, height: u32) -> Result<u32, String> {
        (self.methods.image_tokens)(self, width, height)
    }

    fn groups_consecutive_tool_responses(&self) -> bool {
        true
    }

    fn format_thinking_text(&self, thinking: &str) -> String {
        (self.methods.format_thinking_text)(self, thinking)
    }

    fn assistant_header_suffix(&self, message: &Message, ctx: &RenderContext<'_>) -> String {
        (self.methods.assistant_header_suffix)(self, message, ctx)
    }

    fn wrap_image_parts<'a>(&self, pieces: Vec<Piece<'a>>) -> Vec<Piece<'a>> {
        (self.methods.wrap_image_parts)(pieces)
    }

    fn wrap_tool_response<'a>(&self, pieces: Vec<Piece<'a>>) -> Vec<Piece<'a>> {
        let mut out = vec![Piece::Text("<tool_response>\n".into())];
        out.extend(pieces);
        out.push(Piece::Text(self.methods.tool_response_close.into()));
        out
    }

    fn tool_response_continuation_header(&self) -> &'static str {
        self.methods.tool_response_continuation_header
    }

    fn strips_thinking_for(&self, message: &Message, ctx: &RenderContext<'_>) -> bool {
        (self.methods.strips_thinking_for)(self, message, ctx)
    }

    fn format_tool_calls(&self, message: &Message) -> R<String> {
        (self.methods.format_tool_calls)(self, message)
    }

    fn generation_suffix_in_header(&self, message: &Message, ctx: &RenderContext<'_>) -> String {
        (self.methods.generation_suffix_in_header)(self, message, ctx)
    }
}

// ---------------------------------------------------------------------------------------
// Parsing

/// `_normalize_response_tokens`: sampling starts after the prefilled `<think>\n`; a
/// response that closes a think block without opening one gets it back.
pub(super) fn normalize_response_tokens(tok: &Tokenizer, response: &[u32]) -> R<Vec<u32>> {
    let prefix = encode(tok, "<think>\n")?;
    let end_think = super::base::single_token(tok, "</think>")?;
    if !response.starts_with(&prefix) && response.contains(&end_think) {
        Ok([prefix.as_slice(), response].concat())
    } else {
        Ok(response.to_vec())
    }
}

/// Python's `re` `\s` run at the start of `s` (its length in bytes).
fn space_len(s: &str) -> usize {
    s.len() - s.trim_start_matches(py_is_space).len()
}

/// `_FUNCTION_BLOCK_RE`: `^\s*<tool_call>\s*<function=NAME>\s*BODY\s*</function>\s*
/// </tool_call>\s*$`, with `NAME` up to the first `>` (no newline) and `BODY` lazy.
/// Returns `(name, body)`.
fn match_function_block(raw: &str) -> Option<(&str, &str)> {
    let s = raw
        .trim_start_matches(py_is_space)
        .strip_prefix("<tool_call>")?;
    let s = s
        .trim_start_matches(py_is_space)
        .strip_prefix("<function=")?;
    let close = s.find('>')?;
    let name = &s[..close];
    if name.is_empty() || name.contains('\n') {
        return None;
    }
    let after = &s[close + 1..];
    let body_start = space_len(after);
    // The tail must be `\s*</function>\s*</tool_call>\s*` up to the end of the text.
    let tail = after
        .trim_end_matches(py_is_space)
        .strip_suffix("</tool_call>")?;
    let tail = tail
        .trim_end_matches(py_is_space)
        .strip_suffix("</function>")?;
    let body_end = tail.trim_end_matches(py_is_space).len().max(body_start);
    (tail.len() >= body_start).then(|| (name, &after[body_start..body_end]))
}

/// One `_PARAM_BLOCK_RE` match in `body` at or after `from`:
/// `<parameter=NAME>\s*VALUE\s*</parameter>`, as `(start, name, value, end)`.
fn next_param(body: &str, from: usize) -> Option<(usize, &str, &str, usize)> {
    let mut pos = from;
    loop {
        let start = pos + body.get(pos..)?.find("<parameter=")?;
        let name_start = start + "<parameter=".len();
        let rest = &body[name_start..];
        let name_ok = rest
            .find('>')
            .filter(|&n| n > 0 && !rest[..n].contains('\n'));
        let Some(n) = name_ok else {
            pos = start + 1;
            continue;
        };
        let value_start = name_start + n + 1 + space_len(&body[name_start + n + 1..]);
        let Some(close) = body[value_start..].find("</parameter>") else {
            pos = start + 1;
            continue;
        };
        let value = body[value_start..value_start + close].trim_end_matches(py_is_space);
        let end = value_start + close + "</parameter>".len();
        return Some((start, &rest[..n], value, end));
    }
}

/// `_parse_qwen3_5_tool_call_xml`: a `<tool_call>` block in Qwen3.5's XML format.
/// Parameter values are JSON when they parse as JSON, else strings. (serde_json parses as
/// `json.loads` does, except `NaN`/`Infinity`, which stay strings here, and integers
/// beyond 64 bits, which become floats.)
fn parse_tool_call_xml(raw: &str) -> Result<ToolCall, UnparsedToolCall> {
    let fail = |error: &str| UnparsedToolCall {
        raw_text: raw.to_owned(),
        error: error.to_owned(),
    };
    let (name, body) =
        match_function_block(raw).ok_or_else(|| fail("Malformed Qwen3.5 tool call XML"))?;
    let name = py_strip(name);
    if name.is_empty() {
        return Err(fail("Missing function name"));
    }
    let mut args = Map::new();
    let mut pos = 0;
    while let Some((start, pname, value, end)) = next_param(body, pos) {
        if !py_strip(&body[pos..start]).is_empty() {
            return Err(fail(
                "Unexpected non-parameter content inside <function> block",
            ));
        }
        let pname = py_strip(pname);
        if pname.is_empty() {
            return Err(fail("Empty parameter name"));
        }
        let value = value.trim_matches('\n');
        let parsed = json_loads(value).unwrap_or_else(|_| Json::String(value.to_owned()));
        args.insert(pname.to_owned(), parsed);
        pos = end;
    }
    if !py_strip(&body[pos..]).is_empty() {
        return Err(fail("Unexpected trailing content inside <function> block"));
    }
    Ok(ToolCall {
        id: None,
        name: name.to_owned(),
        arguments: json_dumps(&Json::Object(args)),
    })
}

/// `_postprocess_parsed_message`: thinking trimmed, the two newlines the template puts
/// between `</think>` and the text removed, and `<tool_call>` blocks that held XML (which
/// the Qwen3 parser left unparsed, expecting JSON) parsed as XML.
pub(super) fn postprocess_parsed_message(message: &mut Message) {
    if let Content::Parts(parts) = &mut message.content {
        let mut seen_thinking = false;
        for p in parts.iter_mut() {
            match p {
                Part::Thinking(t) => {
                    *t = py_strip(t).to_owned();
                    seen_thinking = true;
                }
                Part::Text(t) if seen_thinking => {
                    if let Some(rest) = t.strip_prefix("\n\n") {
                        *t = rest.to_owned();
                    }
                    break;
                }
                _ => {}
            }
        }
    }
    let mut converted = Vec::new();
    let mut remaining = Vec::new();
    for u in message.unparsed_tool_calls.take().unwrap_or_default() {
        if u.error.starts_with(UNTERMINATED_TOOL_BLOCK_ERROR) || !u.raw_text.contains("<function=")
        {
            // Unterminated blocks keep their more informative error.
            remaining.push(u);
            continue;
        }
        match parse_tool_call_xml(&u.raw_text) {
            Ok(call) => converted.push(call),
            Err(failed) => remaining.push(failed),
        }
    }
    if !converted.is_empty() {
        message
            .tool_calls
            .get_or_insert_with(Vec::new)
            .extend(converted);
    }
    if !remaining.is_empty() {
        message.unparsed_tool_calls = Some(remaining);
    }
}

/// `Qwen3_5Renderer.parse_response`: the prefill restored, Qwen3's parse, then
/// [`postprocess_parsed_message`] when the response ended cleanly.
pub(super) fn parse_response(tok: &Tokenizer, response: &[u32]) -> R<(Message, Termination)> {
    let response = normalize_response_tokens(tok, response)?;
    let (mut message, termination) = parse_qwen3(tok, &response, true)?;
    if termination != Termination::Malformed {
        postprocess_parsed_message(&mut message);
    }
    Ok((message, termination))
}

// ---------------------------------------------------------------------------------------
// Tools

/// The tools block around the declarations (Nemotron 3 writes the same).
pub(super) const TOOLS_HEAD: &str =
    "# Tools\n\nYou have access to the following functions:\n\n<tools>\n";
pub(super) const TOOLS_TAIL: &str = "\n</tools>\n\nIf you choose to call a function ONLY reply in the following format with NO suffix:\n\n<tool_call>\n<function=example_function_name>\n<parameter=example_parameter_1>\nvalue_1\n</parameter>\n<parameter=example_parameter_2>\nThis is the value for the second parameter\nthat can span\nmultiple lines\n</parameter>\n</function>\n</tool_call>\n\n<IMPORTANT>\nReminder:\n- Function calls MUST follow the specified format: an inner <function=...></function> block must be nested within <tool_call></tool_call> XML tags\n- Required parameters MUST be specified\n- You may provide optional reasoning for your function call in natural language BEFORE the function call, but NOT after\n- If there is no function call available, answer the question like normal with your current knowledge and do not tell the user about function calls\n</IMPORTANT>";

/// `Qwen3_5Renderer.create_conversation_prefix_with_tools`: the tools as JSON lines and
/// the XML calling convention, then the system prompt.
pub(super) fn tools_prefix(tools: &[Json], system_prompt: &str) -> Vec<Message> {
    if tools.is_empty() {
        return vec![Message::new("system", system_prompt)];
    }
    let lines: Vec<String> = tools.iter().map(json_dumps).collect();
    let tools_text = format!("{TOOLS_HEAD}{}{TOOLS_TAIL}", lines.join("\n"));
    let content = if system_prompt.is_empty() {
        tools_text
    } else {
        format!("{tools_text}\n\n{system_prompt}")
    };
    vec![Message::new("system", content)]
}

impl ChatRenderer for Qwen35 {
    fn has_extension_property(&self) -> bool {
        (self.methods.has_extension_property)(self)
    }

    fn disables_thinking(&self) -> bool {
        self.disable_thinking
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
        (self.methods.render_message)(self, tok, message, ctx)
    }

    /// `<|im_start|>role\n<think>\n`, or with the table's think block when thinking is
    /// disabled.
    fn generation_suffix(
        &self,
        tok: &Tokenizer,
        role: &str,
        ctx: &RenderContext<'_>,
    ) -> R<Vec<u32>> {
        let think = if self.disable_thinking {
            self.methods.thinking_off_prefill
        } else {
            "<think>\n"
        };
        encode(
            tok,
            &format!("{}<|im_start|>{role}\n{think}", turn_newline(ctx)),
        )
    }

    fn normalize_response_tokens(&self, tok: &Tokenizer, response: &[u32]) -> R<Vec<u32>> {
        normalize_response_tokens(tok, response)
    }

    fn build_generation_prompt(
        &self,
        tok: &Tokenizer,
        messages: &[Message],
        role: &str,
        prefill: Option<&str>,
    ) -> R<ModelInput> {
        let messages = (self.methods.normalize_messages)(self, messages);
        default_build_generation_prompt(self, tok, &messages, role, prefill)
    }

    fn build_supervised_example(
        &self,
        tok: &Tokenizer,
        messages: &[Message],
        train_on: TrainOnWhat,
    ) -> R<Supervised> {
        let messages = (self.methods.normalize_messages)(self, messages);
        default_build_supervised_example(self, tok, &messages, train_on)
    }

    fn parse_response(&self, tok: &Tokenizer, response: &[u32]) -> R<(Message, Termination)> {
        (self.methods.parse_response)(self, tok, response)
    }

    fn conversation_prefix_with_tools(
        &self,
        _tok: &Tokenizer,
        tools: &[Json],
        system_prompt: &str,
    ) -> R<Vec<Message>> {
        (self.methods.conversation_prefix_with_tools)(tools, system_prompt)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A parsed call's name and arguments, or the parse error.
    type Parsed = Result<(&'static str, &'static str), &'static str>;

    #[test]
    fn xml_tool_calls_parse_as_the_cookbook_regexes_do() {
        // Expected values from the cookbook's `_parse_qwen3_5_tool_call_xml`.
        let cases: [(&str, Parsed); 17] = [
            ("<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n<parameter=days>\n3\n</parameter>\n</function>\n</tool_call>", Ok(("get_weather", "{\"city\": \"Paris\", \"days\": 3}"))),
            ("<tool_call><function=f></function></tool_call>", Ok(("f", "{}"))),
            ("<tool_call> <function= f >x</function></tool_call>", Err("Unexpected trailing content inside <function> block")),
            ("<tool_call>\n<function=f>\n<parameter=a>\n[1, 2]\n</parameter>\ntrailing\n</function>\n</tool_call>", Err("Unexpected trailing content inside <function> block")),
            ("<tool_call>\n<function=f>\nlead<parameter=a>1</parameter>\n</function>\n</tool_call>", Err("Unexpected non-parameter content inside <function> block")),
            ("<tool_call>\n<function=f\n>\n</function>\n</tool_call>", Err("Malformed Qwen3.5 tool call XML")),
            ("<tool_call>\n<function=f>\n<parameter= >1</parameter>\n</function>\n</tool_call>", Err("Empty parameter name")),
            ("<tool_call>\n<function=f>\n<parameter=a>\n  {\"x\": true}  \n</parameter><parameter=a>2</parameter>\n</function>\n</tool_call>", Ok(("f", "{\"a\": 2}"))),
            ("<tool_call>\n<function=f>\n<parameter=a\n>1</parameter>\n</function>\n</tool_call>", Err("Unexpected trailing content inside <function> block")),
            ("<tool_call>\n<function=f>\n<parameter=a>1</function>\n</function>\n</tool_call>", Err("Unexpected trailing content inside <function> block")),
            ("<tool_call>\n<function=f>\n<parameter=a>x</parameter></function> </function>\n</tool_call>", Err("Unexpected trailing content inside <function> block")),
            ("<tool_call>\n<function=é>\n<parameter=ü>\nnaïve \u{2003}\n</parameter>\n</function>\n</tool_call>", Ok(("é", "{\"\\u00fc\": \"na\\u00efve\"}"))),
            ("<tool_call>\n<function=f>\n<parameter=a>1.0</parameter><parameter=b>null</parameter><parameter=c>\"s\"</parameter><parameter=d></parameter>\n</function>\n</tool_call>", Ok(("f", "{\"a\": 1.0, \"b\": null, \"c\": \"s\", \"d\": \"\"}"))),
            ("<tool_call>\n<function=f>\n<parameter=a><parameter=b>1</parameter>\n</function>\n</tool_call>", Ok(("f", "{\"a\": \"<parameter=b>1\"}"))),
            ("<tool_call>\n<function=f>>\n</function>\n</tool_call>", Err("Unexpected trailing content inside <function> block")),
            ("<tool_call>\n<function=>\n</function>\n</tool_call>", Err("Malformed Qwen3.5 tool call XML")),
            ("<tool_call>\n<function=  >\n</function>\n</tool_call>", Err("Missing function name")),
        ];
        for (raw, want) in cases {
            let got = parse_tool_call_xml(raw);
            let got = match &got {
                Ok(c) => Ok((c.name.as_str(), c.arguments.as_str())),
                Err(u) => Err(u.error.as_str()),
            };
            assert_eq!(got, want, "{raw:?}");
        }
    }
}
