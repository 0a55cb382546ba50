//! DeepSeek V3 (cookbook `renderers/deepseek_v3.py`):
//! `<｜begin▁of▁sentence｜>{system}<｜User｜>{question}<｜Assistant｜>{answer}<｜end▁of▁sentence｜>`.
//!
//! A system message renders bare at the start only. Tool results follow
//! `<｜tool▁output▁begin｜>`, and the assistant message after them has no role token. Tool
//! calls are `<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>name<｜tool▁sep｜>{json}<｜tool▁call▁end｜>…`.
//!
//! Two modes: thinking (`deepseekv3_thinking`: the prompt prefills `<think>`, history
//! loses its reasoning behind a `</think>` in its header) and non-thinking (`deepseekv3`,
//! `deepseekv3_disable_thinking`: every assistant header ends in `</think>` and reasoning
//! is removed from the content).

use super::base::{
    default_build_generation_prompt, detect_unterminated_tool_block, encode, json_dumps,
    parse_response_for_stop_token, parse_think_blocks, py_is_space, py_strip, renderer_error,
    single_token, text_chunk, ChatRenderer, RenderContext, RenderedMessage, StopSequences,
    Termination, R,
};
use super::message::{Content, Message, Part, ToolCall, UnparsedToolCall};
use super::py_json;
use super::RendererOptions;
use serde_json::Value as Json;
use tinker_core::types::{InputError, ModelInput, ModelInputChunk};
use tinker_tokenizer::unicode::{classes, LETTER, NUMBER};
use tinker_tokenizer::Tokenizer;

pub(super) fn by_name(name: &str, _opts: &RendererOptions) -> Option<Box<dyn ChatRenderer>> {
    let thinking = match name {
        "deepseekv3" | "deepseekv3_disable_thinking" => false,
        "deepseekv3_thinking" => true,
        _ => return None,
    };
    Some(Box::new(DeepSeekV3 {
        thinking,
        system_role_as_user: false,
        strip_thinking_from_history: true,
    }))
}

/// `DeepSeekV3ThinkingRenderer` (`thinking`) or `DeepSeekV3DisableThinkingRenderer`, with
/// their base class's options (get_renderer passes the defaults).
pub struct DeepSeekV3 {
    /// Thinking mode (`<think>` prefill) rather than non-thinking mode.
    thinking: bool,
    /// Render a system message after the first as a user message (else an error).
    system_role_as_user: bool,
    /// Drop reasoning from assistant messages before the last.
    strip_thinking_from_history: bool,
}

const CALLS_BEGIN: &str = "<｜tool▁calls▁begin｜>";
const CALLS_END: &str = "<｜tool▁calls▁end｜>";
const CALL_BEGIN: &str = "<｜tool▁call▁begin｜>";
const CALL_END: &str = "<｜tool▁call▁end｜>";
const SEP: &str = "<｜tool▁sep｜>";

/// `_get_special_token`: the id of `<｜name｜>`, which must be one token.
fn special_token(tok: &Tokenizer, name: &str) -> R<u32> {
    single_token(tok, &format!("<｜{name}｜>"))
}

fn end_message_token(tok: &Tokenizer) -> R<u32> {
    special_token(tok, "end▁of▁sentence")
}

/// Whether an assistant message follows tool output (and so has no role token).
fn follows_tool(ctx: &RenderContext<'_>) -> bool {
    ctx.prev_message.is_some_and(|p| p.role == "tool")
}

impl DeepSeekV3 {
    /// `_DeepSeekV3BaseRenderer.render_message`.
    fn render_base(
        &self,
        tok: &Tokenizer,
        message: &Message,
        ctx: &RenderContext<'_>,
    ) -> R<RenderedMessage> {
        let text = |c: &Content| c.ensure_text().map(str::to_owned).map_err(renderer_error);
        let (header, mut output) = match message.role.as_str() {
            "system" if ctx.idx == 0 => (Vec::new(), text(&message.content)?),
            "system" if self.system_role_as_user => {
                (vec![special_token(tok, "User")?], text(&message.content)?)
            }
            "system" => {
                return Err(renderer_error(
                    "DeepSeek only supports system message at start. Use \
                     system_role_as_user=True to convert later system messages to user role.",
                ))
            }
            "user" => (vec![special_token(tok, "User")?], text(&message.content)?),
            "assistant" => {
                let header = if follows_tool(ctx) {
                    Vec::new()
                } else {
                    vec![special_token(tok, "Assistant")?]
                };
                (header, self.assistant_text(message, ctx))
            }
            "tool" => (
                encode(tok, "<｜tool▁output▁begin｜>")?,
                format!("{}<｜tool▁output▁end｜>", text(&message.content)?),
            ),
            role => return Err(renderer_error(format!("Unsupported role: {role}"))),
        };
        // Any role's tool calls are written (the cookbook does not check the role).
        if let Some(calls) = message.tool_calls.as_ref().filter(|c| !c.is_empty()) {
            output.push_str(&render_tool_calls(calls));
        }
        let mut tokens = encode(tok, &output)?;
        // Not after an empty message (the generation prompt's).
        if message.role == "assistant" && message.content.is_truthy() {
            tokens.push(end_message_token(tok)?);
        }
        Ok(RenderedMessage {
            header: (!header.is_empty()).then_some(header),
            output: vec![text_chunk(tokens)],
            stop_overlap: None,
        })
    }

    /// The text of an assistant message: parts in order, thinking as `<think>…</think>`
    /// unless stripped from history (only for structured content; other parts are
    /// dropped). String content is kept as it is.
    fn assistant_text(&self, message: &Message, ctx: &RenderContext<'_>) -> String {
        let has_tool_calls = message.tool_calls.as_ref().is_some_and(|c| !c.is_empty());
        let strip = self.strip_thinking_from_history && !has_tool_calls && !ctx.is_last;
        match &message.content {
            Content::Text(s) => s.clone(),
            Content::Parts(parts) => parts
                .iter()
                .map(|p| match p {
                    Part::Thinking(t) if !strip => format!("<think>{t}</think>"),
                    Part::Text(t) => t.clone(),
                    _ => String::new(),
                })
                .collect(),
        }
    }

    /// `DeepSeekV3ThinkingRenderer.render_message`: history's header gains `</think>`; a
    /// last assistant message without reasoning gets an empty `<think></think>` block.
    fn render_thinking(
        &self,
        tok: &Tokenizer,
        message: &Message,
        ctx: &RenderContext<'_>,
    ) -> R<RenderedMessage> {
        let mut rendered = self.render_base(tok, message, ctx)?;
        let is_assistant_turn = message.role == "assistant" && !follows_tool(ctx);
        if is_assistant_turn && self.strip_thinking_from_history && !ctx.is_last {
            let mut header = rendered.header.take().unwrap_or_default();
            header.extend(encode(tok, "</think>")?);
            rendered.header = Some(header);
        } else if is_assistant_turn
            && ctx.is_last
            && message.content.is_truthy()
            && !message.content.has_thinking()
        {
            let block = encode(tok, "<think></think>")?;
            if let Some(ModelInputChunk::EncodedText { tokens }) = rendered.output.first_mut() {
                tokens.splice(0..0, block);
            }
        }
        Ok(rendered)
    }

    /// `DeepSeekV3DisableThinkingRenderer.render_message`: an assistant message (not after
    /// tool output) loses its reasoning, and its header gains `</think>`.
    fn render_non_thinking(
        &self,
        tok: &Tokenizer,
        message: &Message,
        ctx: &RenderContext<'_>,
    ) -> R<RenderedMessage> {
        if message.role != "assistant" || follows_tool(ctx) {
            return self.render_base(tok, message, ctx);
        }
        let text = match &message.content {
            Content::Parts(parts) => parts
                .iter()
                .filter_map(|p| match p {
                    Part::Text(t) => Some(t.as_str()),
                    _ => None,
                })
                .collect(),
            Content::Text(s) => remove_think_blocks(s),
        };
        let message = Message {
            content: Content::Text(text),
            ..message.clone()
        };
        let mut rendered = self.render_base(tok, &message, ctx)?;
        let mut header = rendered.header.take().unwrap_or_default();
        header.extend(encode(tok, "</think>")?);
        rendered.header = Some(header);
        Ok(rendered)
    }

    /// `_normalize_response_tokens` of the thinking renderer: restores the prefilled
    /// `<think>` when the response closes a think block it did not open.
    fn restore_think(&self, tok: &Tokenizer, response: &[u32]) -> R<Vec<u32>> {
        let Some(close) = tok.token_to_id("</think>") else {
            return Ok(response.to_vec());
        };
        if !response.contains(&close) {
            return Ok(response.to_vec());
        }
        match tok.token_to_id("<think>") {
            Some(open) if response.first() == Some(&open) => Ok(response.to_vec()),
            Some(open) => Ok([&[open], response].concat()),
            // Python prepends None, which decoding then rejects.
            None => Err(renderer_error("<think> is not a token of this tokenizer")),
        }
    }
}

impl ChatRenderer for DeepSeekV3 {
    fn has_extension_property(&self) -> bool {
        !self.thinking || !self.strip_thinking_from_history
    }

    fn bos_tokens(&self, tok: &Tokenizer) -> R<Vec<u32>> {
        Ok(vec![special_token(tok, "begin▁of▁sentence")?])
    }

    fn stop_sequences(&self, tok: &Tokenizer) -> R<StopSequences> {
        Ok(StopSequences::Tokens(vec![end_message_token(tok)?]))
    }

    fn render_message(
        &self,
        tok: &Tokenizer,
        message: &Message,
        ctx: &RenderContext<'_>,
    ) -> R<RenderedMessage> {
        if self.thinking {
            self.render_thinking(tok, message, ctx)
        } else {
            self.render_non_thinking(tok, message, ctx)
        }
    }

    /// Thinking mode prefills `<think>` (before any caller prefill), except after tool
    /// output: tool use stays in non-thinking mode, as in the HF template.
    fn build_generation_prompt(
        &self,
        tok: &Tokenizer,
        messages: &[Message],
        role: &str,
        prefill: Option<&str>,
    ) -> R<ModelInput> {
        if !self.thinking || messages.last().is_some_and(|m| m.role == "tool") {
            return default_build_generation_prompt(self, tok, messages, role, prefill);
        }
        let prefill = format!("<think>{}", prefill.unwrap_or(""));
        default_build_generation_prompt(self, tok, messages, role, Some(&prefill))
    }

    fn normalize_response_tokens(&self, tok: &Tokenizer, response: &[u32]) -> R<Vec<u32>> {
        if self.thinking {
            self.restore_think(tok, response)
        } else {
            Ok(response.to_vec())
        }
    }

    /// Splits off the stop token, then parses the tool calls section (removed from the
    /// content) and `<think>` blocks.
    fn parse_response(&self, tok: &Tokenizer, response: &[u32]) -> R<(Message, Termination)> {
        let response = self.normalize_response_tokens(tok, response)?;
        let (mut message, termination) =
            parse_response_for_stop_token(tok, &response, end_message_token(tok)?)?;
        if termination != Termination::StopSequence {
            return Ok((message, termination));
        }
        let mut content = message.content.text_content();
        let (calls, mut unparsed) = parse_tool_calls(&content)?;
        unparsed.extend(
            detect_unterminated_tool_block(&content, CALLS_BEGIN, CALLS_END)
                .or_else(|| detect_unterminated_tool_block(&content, CALL_BEGIN, CALL_END)),
        );
        if !calls.is_empty() || !unparsed.is_empty() {
            content = py_strip(&remove_calls_sections(&content)).to_owned();
        }
        if !calls.is_empty() {
            message.tool_calls = Some(calls);
        }
        if !unparsed.is_empty() {
            message.unparsed_tool_calls = Some(unparsed);
        }
        message.content = match parse_think_blocks(&content) {
            Some(parts) => Content::Parts(parts),
            None => Content::Text(content),
        };
        Ok((message, termination))
    }

    /// One system message: the prompt, then a `## Tools` section with each tool's
    /// description and JSON parameters, and the call format.
    fn conversation_prefix_with_tools(
        &self,
        _tok: &Tokenizer,
        tools: &[Json],
        system_prompt: &str,
    ) -> R<Vec<Message>> {
        let mut text = system_prompt.to_owned();
        if !tools.is_empty() {
            let blocks = tools
                .iter()
                .enumerate()
                .map(|(i, tool)| tool_block(tool, i))
                .collect::<R<Vec<String>>>()?;
            text.push_str(&format!(
                "\n\n## Tools\nYou have access to the following tools:\n\n{}\n\n\
                 IMPORTANT: ALWAYS adhere to this exact format for tool use:\n\
                 {CALLS_BEGIN}{CALL_BEGIN}tool_call_name{SEP}tool_call_arguments{CALL_END}{CALLS_END}\n\n\
                 Where:\n\
                 - `tool_call_name` must be an exact match to one of the available tools\n\
                 - `tool_call_arguments` must be valid JSON that strictly follows the tool's \
                 Parameters Schema\n\
                 - For multiple tool calls, chain them directly without separators or spaces",
                blocks.join("\n")
            ));
        }
        Ok(vec![Message::new("system", text)])
    }
}

/// `### name`, its description and its JSON parameters. Python formats `name` and
/// `description` with `str()`; ToolSpec makes them strings, and other values are refused
/// here rather than printed as Python would.
fn tool_block(tool: &Json, i: usize) -> R<String> {
    let field = |key: &str| -> R<&Json> {
        tool.get(key).ok_or_else(|| {
            InputError::type_error(format!("tools[{i}].{key}"), "is required").into()
        })
    };
    let text = |key: &str| -> R<&str> {
        field(key)?.as_str().ok_or_else(|| {
            InputError::type_error(format!("tools[{i}].{key}"), "must be a string").into()
        })
    };
    Ok(format!(
        "### {}\nDescription: {}\n\nParameters: {}",
        text("name")?,
        text("description")?,
        json_dumps(field("parameters")?)
    ))
}

/// The calls section of an assistant message.
fn render_tool_calls(calls: &[ToolCall]) -> String {
    let calls: String = calls
        .iter()
        .map(|c| format!("{CALL_BEGIN}{}{SEP}{}{CALL_END}", c.name, c.arguments))
        .collect();
    format!("{CALLS_BEGIN}{calls}{CALLS_END}")
}

/// `re.sub(r"<think>.*?</think>", "", s, flags=re.DOTALL)`.
fn remove_think_blocks(s: &str) -> String {
    let mut out = String::new();
    let mut pos = 0;
    while let Some(open) = s[pos..].find("<think>").map(|i| pos + i) {
        let body = open + "<think>".len();
        let Some(close) = s[body..].find("</think>") else {
            break;
        };
        out.push_str(&s[pos..open]);
        pos = body + close + "</think>".len();
    }
    out.push_str(&s[pos..]);
    out
}

/// `re.sub(r"\s*<｜tool▁calls▁begin｜>.*?<｜tool▁calls▁end｜>", "", s, flags=re.DOTALL)`: each
/// match starts at the whitespace run before its opening marker (not before the previous
/// match's end).
fn remove_calls_sections(s: &str) -> String {
    let mut out = String::new();
    let mut pos = 0;
    while let Some(open) = s[pos..].find(CALLS_BEGIN).map(|i| pos + i) {
        let body = open + CALLS_BEGIN.len();
        let Some(close) = s[body..].find(CALLS_END) else {
            break;
        };
        let start = pos + s[pos..open].trim_end_matches(py_is_space).len();
        out.push_str(&s[pos..start]);
        pos = body + close + CALLS_END.len();
    }
    out.push_str(&s[pos..]);
    out
}

/// `_parse_deepseek_tool_calls`: the calls in the first closed calls section. Arguments
/// must be JSON (Python's `json.loads`) and are kept as written, stripped; Python's other
/// decoding errors (not `JSONDecodeError`) are raised.
fn parse_tool_calls(content: &str) -> R<(Vec<ToolCall>, Vec<UnparsedToolCall>)> {
    let mut calls = Vec::new();
    let mut unparsed = Vec::new();
    let Some(section) = first_calls_section(content) else {
        return Ok((calls, unparsed));
    };
    let mut pos = 0;
    while let Some(at) = section[pos..].find(CALL_BEGIN).map(|i| pos + i) {
        let Some((name, args, end)) = call_at(section, at) else {
            // `<` is one byte: the regex tries the next position.
            pos = at + 1;
            continue;
        };
        let raw_text = &section[at..end];
        let args = py_strip(args);
        match py_json::loads(args) {
            Ok(_) => calls.push(ToolCall {
                id: None,
                name: name.to_owned(),
                arguments: args.to_owned(),
            }),
            Err(py_json::Error::Decode(e)) => unparsed.push(UnparsedToolCall {
                raw_text: raw_text.to_owned(),
                error: format!("Invalid JSON: {e}"),
            }),
            Err(e) => return Err(renderer_error(e.message())),
        }
        pos = end;
    }
    Ok((calls, unparsed))
}

/// `re.search(r"<｜tool▁calls▁begin｜>(.*?)<｜tool▁calls▁end｜>", s, re.DOTALL).group(1)`.
fn first_calls_section(s: &str) -> Option<&str> {
    let body = s.find(CALLS_BEGIN)? + CALLS_BEGIN.len();
    let len = s[body..].find(CALLS_END)?;
    Some(&s[body..body + len])
}

/// `<｜tool▁call▁begin｜>(\w+)<｜tool▁sep｜>(.*?)<｜tool▁call▁end｜>` (DOTALL) tried at `at`:
/// (name, arguments, end). `\w+` stops at the first non-word character, which must be
/// where the separator starts (it begins with `<`, not a word character).
fn call_at(s: &str, at: usize) -> Option<(&str, &str, usize)> {
    let name_start = at + CALL_BEGIN.len();
    let name_len = s[name_start..]
        .find(|c| !is_word(c))
        .unwrap_or(s.len() - name_start);
    let sep = name_start + name_len;
    if name_len == 0 || !s[sep..].starts_with(SEP) {
        return None;
    }
    let args_start = sep + SEP.len();
    let args_len = s[args_start..].find(CALL_END)?;
    let end = args_start + args_len + CALL_END.len();
    Some((
        &s[name_start..sep],
        &s[args_start..args_start + args_len],
        end,
    ))
}

/// Python's `\w` on text: letters, numbers and `_`.
fn is_word(c: char) -> bool {
    c == '_' || classes().of(c) & (LETTER | NUMBER) != 0
}
