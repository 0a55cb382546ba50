//! DeepSeek V4.1 (cookbook `renderers/deepseek_v4_1.py`), after the model's chat template:
//! `<｜begin▁of▁sentence｜><｜System｜>Reasoning Effort: 75 (…)\n\n{system}<｜User｜>{question}`
//! `<｜Assistant｜><think>{reasoning}</think>{answer}<｜end▁of▁sentence｜>`.
//!
//! * In thinking mode every prompt opens with `<｜System｜>` and the reasoning-effort line;
//!   chat mode has no effort line and its assistant header ends in `</think>`.
//! * Tools are declared by a `tool_declare` message, folded into the system text.
//! * Tool calls are DSML blocks after the answer, one `parameter` per argument key.
//! * Tool results become `<tool_result>…</tool_result>` blocks, sorted into call order and
//!   sharing one user turn with the user messages around them.
//! * Reasoning through the last user turn is dropped, unless tools are declared.
//!
//! The whole conversation is normalized first ([`normalize_messages`]) and how far
//! reasoning is dropped is decided from it. Python keeps that bound in a context variable
//! (`_DROP_REASONING_THROUGH`) while its builders run; here the builders render through a
//! [`Conversation`], which carries it explicitly.

use super::base::{
    decode, default_build_generation_prompt, default_build_supervised_example,
    detect_unterminated_tool_block, encode, json_dumps, parse_response_for_stop_token,
    parse_think_blocks, py_repr_str, py_strip, renderer_error, single_token, text_chunk,
    ChatRenderer, RenderContext, RenderedMessage, StopSequences, Supervised, Termination,
    TrainOnWhat, R,
};
use super::message::{Content, Message, Part, ToolCall, UnparsedToolCall};
use super::py_json;
use super::RendererOptions;
use py_json::Value as PyValue;
use serde_json::Value as Json;
use tinker_core::types::ModelInput;
use tinker_tokenizer::Tokenizer;

pub(super) fn by_name(name: &str, _opts: &RendererOptions) -> Option<Box<dyn ChatRenderer>> {
    let (reasoning_effort, strip_thinking_from_history) = match name {
        "deepseekv4_1" => (Some(75), true),
        "deepseekv4_1_low_reasoning" => (Some(50), true),
        "deepseekv4_1_max_reasoning" => (Some(100), true),
        "deepseekv4_1_disable_thinking" => (None, true),
        "deepseekv4_1_preserve_thinking" => (Some(75), false),
        _ => return None,
    };
    Some(Box::new(DeepSeekV41 {
        reasoning_effort,
        strip_thinking_from_history,
    }))
}

/// `DeepSeekV4_1Renderer` and its subclasses (which differ only in `reasoning_effort`).
pub struct DeepSeekV41 {
    /// The reasoning-effort budget (1-100), `None` for chat mode.
    reasoning_effort: Option<u32>,
    /// Drop reasoning through the last user turn unless tools are declared.
    strip_thinking_from_history: bool,
}

const SYSTEM: &str = "<｜System｜>";
const USER: &str = "<｜User｜>";
const ASSISTANT: &str = "<｜Assistant｜>";
const CALLS_OPEN: &str = "<｜DSML｜ calls>";
const CALLS_CLOSE: &str = "</｜DSML｜ calls>";
const INVOKE_OPEN: &str = "<｜DSML｜ invoke name=\"";
const INVOKE_CLOSE: &str = "</｜DSML｜ invoke>";
const PARAM_OPEN: &str = "<｜DSML｜ parameter name=\"";
const PARAM_CLOSE: &str = "</｜DSML｜ parameter>";

/// `_TOOLS_TEMPLATE` before its `{tool_schemas}`.
const TOOLS_HEAD: &str = r#"## Tools

You have access to a set of tools to help answer the user's question. You can invoke tools by writing a "<｜DSML｜ calls>" block like the following:

<｜DSML｜ calls>
<｜DSML｜ invoke name="$TOOL_NAME">
<｜DSML｜ parameter name="$PARAMETER_NAME" string="true|false">$PARAMETER_VALUE</｜DSML｜ parameter>
...
</｜DSML｜ invoke>
<｜DSML｜ invoke name="$TOOL_NAME2">
...
</｜DSML｜ invoke>
</｜DSML｜ calls>

String parameters should be specified as is and set `string="true"`. For all other types (numbers, booleans, arrays, objects), pass the value in JSON format and set `string="false"`.

If thinking_mode is enabled (triggered by <think>), you MUST output your complete reasoning inside <think>...</think> BEFORE any tool calls or final response.

Otherwise, output directly after </think> with tool calls or final response.

### Available Tool Schemas

"#;

/// `_TOOLS_TEMPLATE` after its `{tool_schemas}`.
const TOOLS_TAIL: &str =
    "\n\nYou MUST strictly follow the above defined tool name and parameter schemas to invoke tool calls.\n";

impl DeepSeekV41 {
    fn thinking(&self) -> bool {
        self.reasoning_effort.is_some()
    }

    fn end_message_token(&self, tok: &Tokenizer) -> R<u32> {
        single_token(tok, "<｜end▁of▁sentence｜>")
    }

    /// `_opening`: text before the first message, the system marker and, in thinking mode,
    /// the effort line.
    fn opening(&self, role: &str) -> String {
        match self.reasoning_effort {
            Some(budget) => format!(
                "{SYSTEM}Reasoning Effort: {budget} (range 1-100, the higher the value, the more \
                 thorough the reasoning)\n\n"
            ),
            None if role == "system" => SYSTEM.to_owned(),
            None => String::new(),
        }
    }

    /// The normalized conversation and the renderer that renders it, with the reasoning
    /// bound decided from the whole of it (`_conversation`).
    fn conversation(&self, messages: &[Message]) -> R<(Conversation<'_>, Vec<Message>)> {
        let normalized = normalize_messages(messages)?;
        let drops =
            self.strip_thinking_from_history && !messages.iter().any(|m| m.role == "tool_declare");
        let drop_through = if drops {
            drop_reasoning_through(&normalized)
        } else {
            -1
        };
        let conv = Conversation {
            renderer: self,
            drop_through,
        };
        Ok((conv, normalized))
    }

    /// `render_message`; assistant messages at or before `drop_through` lose their
    /// reasoning.
    fn render(
        &self,
        tok: &Tokenizer,
        message: &Message,
        ctx: &RenderContext<'_>,
        drop_through: isize,
    ) -> R<RenderedMessage> {
        let opening = if ctx.idx == 0 {
            self.opening(&message.role)
        } else {
            String::new()
        };
        match message.role.as_str() {
            "system" => {
                let prefix = if ctx.idx == 0 {
                    opening.as_str()
                } else {
                    SYSTEM
                };
                let text = message.content.ensure_text().map_err(renderer_error)?;
                let (header, output) = encode_after(tok, prefix, text)?;
                Ok(RenderedMessage {
                    header: Some(header),
                    output: non_empty_chunk(output),
                    stop_overlap: None,
                })
            }
            // Already folded into the system message.
            "tool_declare" => Ok(RenderedMessage::default()),
            "user" | "tool" => {
                // The turn's first message renders the whole turn.
                if ctx.prev_message.is_some_and(is_user_turn) {
                    return Ok(RenderedMessage::default());
                }
                let text = message.content.ensure_text().map_err(renderer_error)?;
                Ok(RenderedMessage {
                    header: Some(encode(tok, &format!("{opening}{USER}"))?),
                    output: non_empty_chunk(encode(tok, text)?),
                    stop_overlap: None,
                })
            }
            "assistant" => self.render_assistant(tok, message, ctx, &opening, drop_through),
            role => Err(renderer_error(format!(
                "Unsupported role for DeepSeek V4.1: {role}"
            ))),
        }
    }

    fn render_assistant(
        &self,
        tok: &Tokenizer,
        message: &Message,
        ctx: &RenderContext<'_>,
        opening: &str,
        drop_through: isize,
    ) -> R<RenderedMessage> {
        let keeps_reasoning = self.thinking() && ctx.idx as isize > drop_through;
        // The template ends a user turn with the assistant marker; with no such turn before
        // this message (only the first system message, or another assistant), there is none.
        let follows_user_turn = ctx
            .prev_message
            .is_some_and(|p| is_user_turn(p) || (p.role == "system" && ctx.idx > 1));
        let think = if keeps_reasoning {
            "<think>"
        } else {
            "</think>"
        };
        let marker = if follows_user_turn {
            format!("{ASSISTANT}{think}")
        } else {
            String::new()
        };
        let header_text = format!("{opening}{marker}");
        let header = if header_text.is_empty() {
            None
        } else {
            Some(encode(tok, &header_text)?)
        };
        let (reasoning, answer) = split_assistant_content(&message.content)?;
        let mut body = if keeps_reasoning {
            format!("{reasoning}</think>{answer}")
        } else {
            answer
        };
        if let Some(calls) = message.tool_calls.as_ref().filter(|c| !c.is_empty()) {
            body.push_str(&render_tool_calls(calls)?);
        }
        let mut output = encode(tok, &body)?;
        output.push(self.end_message_token(tok)?);
        Ok(RenderedMessage {
            header,
            output: vec![text_chunk(output)],
            stop_overlap: None,
        })
    }

    /// `_parse_response_content`: reasoning and the DSML calls block of a response.
    fn parse_content(&self, tok: &Tokenizer, response: &[u32]) -> R<(Message, Termination)> {
        let (mut message, termination) =
            parse_response_for_stop_token(tok, response, self.end_message_token(tok)?)?;
        if termination != Termination::StopSequence {
            return Ok((message, termination));
        }
        let mut content = message.content.text_content();
        let mut calls = Vec::new();
        let mut unparsed = Vec::new();
        if let Some((start, end)) = find_calls_block(&content) {
            let (c, u) = parse_tool_calls(&content[start..end])?;
            calls = c;
            unparsed = u;
            // The format ends the response with one calls block; anything after it is
            // malformed.
            let after = &content[end..];
            if !py_strip(after).is_empty() {
                unparsed.push(UnparsedToolCall {
                    raw_text: after.to_owned(),
                    error: "Invalid DSML: output after calls block".into(),
                });
            }
            content.truncate(start);
        }
        let dangling =
            detect_unterminated_tool_block(&content, CALLS_OPEN, CALLS_CLOSE).or_else(|| {
                // The model writes this token only for tool calls, so any left over is a
                // malformed call.
                content.contains("｜DSML｜").then(|| UnparsedToolCall {
                    raw_text: content.clone(),
                    error: "Invalid DSML: marker outside a calls block".into(),
                })
            });
        unparsed.extend(dangling);
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
}

impl ChatRenderer for DeepSeekV41 {
    fn has_extension_property(&self) -> bool {
        !(self.thinking() && self.strip_thinking_from_history)
    }

    fn bos_tokens(&self, tok: &Tokenizer) -> R<Vec<u32>> {
        encode(tok, "<｜begin▁of▁sentence｜>")
    }

    fn stop_sequences(&self, tok: &Tokenizer) -> R<StopSequences> {
        Ok(StopSequences::Tokens(vec![self.end_message_token(tok)?]))
    }

    /// Outside a builder no reasoning is dropped (the context variable's unset state).
    fn render_message(
        &self,
        tok: &Tokenizer,
        message: &Message,
        ctx: &RenderContext<'_>,
    ) -> R<RenderedMessage> {
        self.render(tok, message, ctx, -1)
    }

    fn last_assistant_turn_start_index(&self, messages: &[Message]) -> usize {
        last_assistant_turn_start_index(messages)
    }

    /// Restores the prefilled `<think>` before parsing a thinking-mode response.
    fn normalize_response_tokens(&self, tok: &Tokenizer, response: &[u32]) -> R<Vec<u32>> {
        if !self.thinking() {
            return Ok(response.to_vec());
        }
        let think_open = single_token(tok, "<think>")?;
        let think_close = single_token(tok, "</think>")?;
        if response.contains(&think_close) && response.first() != Some(&think_open) {
            return Ok([&[think_open], response].concat());
        }
        Ok(response.to_vec())
    }

    fn parse_response(&self, tok: &Tokenizer, response: &[u32]) -> R<(Message, Termination)> {
        let response = self.normalize_response_tokens(tok, response)?;
        self.parse_content(tok, &response)
    }

    /// Builds the prompt from the normalized conversation (template turn structure).
    fn build_generation_prompt(
        &self,
        tok: &Tokenizer,
        messages: &[Message],
        role: &str,
        prefill: Option<&str>,
    ) -> R<ModelInput> {
        let (conv, normalized) = self.conversation(messages)?;
        default_build_generation_prompt(&conv, tok, &normalized, role, prefill)
    }

    /// Builds the example from the normalized conversation: tool and user messages that
    /// share a user turn are trained or masked together, as one message.
    fn build_supervised_example(
        &self,
        tok: &Tokenizer,
        messages: &[Message],
        train_on: TrainOnWhat,
    ) -> R<Supervised> {
        let (conv, normalized) = self.conversation(messages)?;
        default_build_supervised_example(&conv, tok, &normalized, train_on)
    }

    /// `create_conversation_prefix_with_tools`: the system prompt, and the tools in a
    /// `tool_declare` message (whose presence keeps history reasoning).
    fn conversation_prefix_with_tools(
        &self,
        _tok: &Tokenizer,
        tools: &[Json],
        system_prompt: &str,
    ) -> R<Vec<Message>> {
        let mut messages = Vec::new();
        if !system_prompt.is_empty() {
            messages.push(Message::new("system", system_prompt));
        }
        if !tools.is_empty() {
            let payload = tools
                .iter()
                .map(|tool| {
                    if !tool.is_object() {
                        return Err(renderer_error("a tool spec must be a JSON object"));
                    }
                    Ok(serde_json::json!({ "type": "function", "function": tool }))
                })
                .collect::<R<Vec<Json>>>()?;
            messages.push(Message::new(
                "tool_declare",
                json_dumps(&Json::Array(payload)),
            ));
        }
        Ok(messages)
    }
}

/// A normalized conversation being built: the renderer, with the bound through which
/// assistant messages render without reasoning (Python's `_DROP_REASONING_THROUGH` while
/// it is set). Its builders are the base class's, as Python's re-entry with a prefix of
/// the normalized conversation is: no second normalization, the same bound.
struct Conversation<'a> {
    renderer: &'a DeepSeekV41,
    /// The last message index whose reasoning is dropped (-1: none).
    drop_through: isize,
}

impl ChatRenderer for Conversation<'_> {
    fn has_extension_property(&self) -> bool {
        self.renderer.has_extension_property()
    }

    fn bos_tokens(&self, tok: &Tokenizer) -> R<Vec<u32>> {
        self.renderer.bos_tokens(tok)
    }

    fn stop_sequences(&self, tok: &Tokenizer) -> R<StopSequences> {
        self.renderer.stop_sequences(tok)
    }

    fn render_message(
        &self,
        tok: &Tokenizer,
        message: &Message,
        ctx: &RenderContext<'_>,
    ) -> R<RenderedMessage> {
        self.renderer.render(tok, message, ctx, self.drop_through)
    }

    fn last_assistant_turn_start_index(&self, messages: &[Message]) -> usize {
        last_assistant_turn_start_index(messages)
    }

    fn parse_response(&self, tok: &Tokenizer, response: &[u32]) -> R<(Message, Termination)> {
        self.renderer.parse_response(tok, response)
    }
}

/// `_last_assistant_turn_start_index`: a later system message counts as a user turn, as
/// in the template.
fn last_assistant_turn_start_index(messages: &[Message]) -> usize {
    messages
        .iter()
        .enumerate()
        .rposition(|(idx, m)| m.role == "user" || (m.role == "system" && idx > 0))
        .map_or(0, |i| i + 1)
}

/// `_drop_reasoning_through`: the template's last user turn (user and tool messages, and
/// later system messages), -1 without one.
fn drop_reasoning_through(messages: &[Message]) -> isize {
    messages
        .iter()
        .enumerate()
        .rposition(|(idx, m)| is_user_turn(m) || (m.role == "system" && idx > 0))
        .map_or(-1, |i| i as isize)
}

fn is_user_turn(message: &Message) -> bool {
    message.role == "user" || message.role == "tool"
}

fn non_empty_chunk(tokens: Vec<u32>) -> Vec<tinker_core::types::ModelInputChunk> {
    if tokens.is_empty() {
        Vec::new()
    } else {
        vec![text_chunk(tokens)]
    }
}

/// `_encode_after`: encodes `prefix + text` as one string and splits the tokens where
/// their decoded text first covers `prefix` (a token merged across the boundary, such as
/// the effort line's `\n\n` with a tools-only system text's, goes with the prefix).
fn encode_after(tok: &Tokenizer, prefix: &str, text: &str) -> R<(Vec<u32>, Vec<u32>)> {
    let mut tokens = encode(tok, &format!("{prefix}{text}"))?;
    let prefix_len = prefix.chars().count();
    let mut split = 0;
    while split < tokens.len() && decode(tok, &tokens[..split]).chars().count() < prefix_len {
        split += 1;
    }
    let rest = tokens.split_off(split);
    Ok((tokens, rest))
}

/// `_split_assistant_content`: (reasoning, answer); only text and thinking parts.
fn split_assistant_content(content: &Content) -> R<(String, String)> {
    let parts = match content {
        Content::Text(s) => return Ok((String::new(), s.clone())),
        Content::Parts(parts) => parts,
    };
    let mut reasoning = String::new();
    let mut answer = String::new();
    for part in parts {
        match part {
            Part::Thinking(t) => reasoning.push_str(t),
            Part::Text(t) => answer.push_str(t),
            other => {
                return Err(renderer_error(format!(
                    "DeepSeek V4.1 renderer does not support '{}' content parts",
                    other.kind()
                )))
            }
        }
    }
    Ok((reasoning, answer))
}

// ---------------------------------------------------------------------------------------
// Normalization: the template's turns, every index kept

/// `_normalize_messages`: `tool_declare` folded into the leading system message (or
/// becoming one), and each run of tool and user messages made one user turn, its text
/// (tool results sorted into call order, joined by `\n\n`) on the run's first message and
/// the rest left empty. Indices are kept so the base class still sees which messages are
/// user turns and which belong to the last assistant turn; the turn is encoded as one
/// string, so BPE merges across its `\n\n` are the template's.
fn normalize_messages(messages: &[Message]) -> R<Vec<Message>> {
    let mut result = messages.to_vec();
    fold_tool_declarations(&mut result)?;
    let mut call_order: Vec<(String, usize)> = Vec::new();
    let mut idx = 0;
    while idx < result.len() {
        if let Some(calls) = result[idx].tool_calls.as_ref().filter(|c| !c.is_empty()) {
            call_order = call_order_of(calls);
        }
        if !is_user_turn(&result[idx]) {
            idx += 1;
            continue;
        }
        let end = (idx..result.len())
            .take_while(|&i| is_user_turn(&result[i]))
            .last()
            .unwrap_or(idx);
        let text = user_turn_text(&result[idx..=end], &call_order)?;
        result[idx].content = Content::Text(text);
        for m in &mut result[idx + 1..=end] {
            m.content = Content::Text(String::new());
        }
        idx = end + 1;
    }
    Ok(result)
}

/// The text of a user turn: its messages in order, tool results sorted into call order and
/// wrapped in `<tool_result>`, joined by `\n\n`.
fn user_turn_text(turn: &[Message], call_order: &[(String, usize)]) -> R<String> {
    let blocks = sort_tool_results(turn, call_order)
        .into_iter()
        .map(|m| {
            let text = m.content.ensure_text().map_err(renderer_error)?;
            Ok(if m.role == "tool" {
                format!("<tool_result>{text}</tool_result>")
            } else {
                text.to_owned()
            })
        })
        .collect::<R<Vec<String>>>()?;
    Ok(blocks.join("\n\n"))
}

/// The tool-declaration half of `_normalize_messages`.
fn fold_tool_declarations(result: &mut [Message]) -> R<()> {
    for idx in 0..result.len() {
        if result[idx].role != "tool_declare" {
            continue;
        }
        let tools_text = render_tools(&tool_declare_specs(&result[idx])?);
        if idx == 0 {
            result[0].role = "system".into();
            result[0].content = Content::Text(format!("\n\n{tools_text}"));
        } else if idx == 1 && result[0].role == "system" {
            let system = result[0].content.ensure_text().map_err(renderer_error)?;
            result[0].content = Content::Text(format!("{system}\n\n{tools_text}"));
            result[1].content = Content::Text(String::new());
        } else {
            return Err(renderer_error(
                "DeepSeek V4.1 tool declarations must come first or right after the first \
                 system message; use create_conversation_prefix_with_tools",
            ));
        }
    }
    Ok(())
}

/// `{tc.id: order for order, tc in enumerate(tool_calls) if tc.id}` (a repeated id keeps
/// its last order).
fn call_order_of(calls: &[ToolCall]) -> Vec<(String, usize)> {
    let mut order: Vec<(String, usize)> = Vec::new();
    for (i, call) in calls.iter().enumerate() {
        let Some(id) = call.id.as_deref().filter(|id| !id.is_empty()) else {
            continue;
        };
        match order.iter_mut().find(|(k, _)| *k == id) {
            Some(entry) => entry.1 = i,
            None => order.push((id.to_owned(), i)),
        }
    }
    order
}

/// `_sort_tool_results`: a turn's tool results stably sorted into call order, in the slots
/// tool messages hold; an id no call has (or none) sorts as call 0.
fn sort_tool_results<'m>(turn: &'m [Message], call_order: &[(String, usize)]) -> Vec<&'m Message> {
    let rank = |m: &Message| {
        let id = m.tool_call_id.as_deref().unwrap_or("");
        call_order
            .iter()
            .find(|(k, _)| *k == id)
            .map_or(0, |&(_, i)| i)
    };
    let mut tools: Vec<&Message> = turn.iter().filter(|m| m.role == "tool").collect();
    tinker_support::sort::sort_by_key(&mut tools, |m| rank(m));
    let mut sorted = tools.into_iter();
    turn.iter()
        .map(|m| {
            if m.role == "tool" {
                sorted.next().unwrap_or(m)
            } else {
                m
            }
        })
        .collect()
}

/// `_tool_declare_specs`: the `function` of each entry of the JSON array in the content.
fn tool_declare_specs(message: &Message) -> R<Vec<PyValue>> {
    let text = message.content.ensure_text().map_err(renderer_error)?;
    let tools = py_json::loads(text).map_err(|e| renderer_error(e.message()))?;
    let PyValue::Array(tools) = tools else {
        return Err(renderer_error(
            "a tool_declare message must hold a JSON array of tools",
        ));
    };
    tools
        .into_iter()
        .map(|tool| match tool {
            PyValue::Object(entries) => entries
                .into_iter()
                .find(|(k, _)| k == "function")
                .map(|(_, v)| v)
                .ok_or_else(|| renderer_error("a declared tool has no 'function'")),
            _ => Err(renderer_error("a declared tool must be a JSON object")),
        })
        .collect()
}

/// `_render_tools`: the tools section, one schema a line (`ensure_ascii=False`).
fn render_tools(specs: &[PyValue]) -> String {
    let schemas: Vec<String> = specs.iter().map(|s| py_json::dumps(s, false)).collect();
    format!("{TOOLS_HEAD}{}{TOOLS_TAIL}", schemas.join("\n"))
}

// ---------------------------------------------------------------------------------------
// DSML tool calls

/// `_arguments_dict`: the arguments as key/value pairs; a JSON string is decoded twice at
/// most (encoding.py tolerates double encoding), anything but an object becomes
/// `{"arguments": <the string>}`.
fn arguments_dict(arguments: &str) -> R<Vec<(String, PyValue)>> {
    let mut parsed = PyValue::Str(arguments.to_owned());
    for _ in 0..2 {
        let PyValue::Str(s) = &parsed else { break };
        match py_json::loads(s) {
            Ok(v) => parsed = v,
            Err(py_json::Error::Decode(_)) => break,
            // Python's other errors (ValueError, RecursionError) are not caught.
            Err(e) => return Err(renderer_error(e.message())),
        }
    }
    Ok(match parsed {
        PyValue::Object(entries) => entries,
        _ => vec![("arguments".into(), PyValue::Str(arguments.to_owned()))],
    })
}

/// `_render_tool_calls`: the calls block, one `parameter` per argument key (strings as
/// they are, other values as JSON with `ensure_ascii=False`).
fn render_tool_calls(calls: &[ToolCall]) -> R<String> {
    let mut invokes = Vec::new();
    for call in calls {
        let params: Vec<String> = arguments_dict(&call.arguments)?
            .iter()
            .map(|(key, value)| match value {
                PyValue::Str(s) => format!("{PARAM_OPEN}{key}\" string=\"true\">{s}{PARAM_CLOSE}"),
                v => format!(
                    "{PARAM_OPEN}{key}\" string=\"false\">{}{PARAM_CLOSE}",
                    py_json::dumps(v, false)
                ),
            })
            .collect();
        invokes.push(format!(
            "{INVOKE_OPEN}{}\">\n{}\n{INVOKE_CLOSE}",
            call.name,
            params.join("\n")
        ));
    }
    Ok(format!(
        "\n\n{CALLS_OPEN}\n{}\n{CALLS_CLOSE}",
        invokes.join("\n")
    ))
}

/// `_CALLS_BLOCK_RE.search`: `(?:\n\n)?<｜DSML｜ calls>.*?</｜DSML｜ calls>` (DOTALL), the
/// leftmost match as byte range.
fn find_calls_block(content: &str) -> Option<(usize, usize)> {
    let open = content.find(CALLS_OPEN)?;
    let body = open + CALLS_OPEN.len();
    let end = body + content[body..].find(CALLS_CLOSE)? + CALLS_CLOSE.len();
    // The optional `\n\n` makes a match two characters earlier the leftmost.
    let start = if content[..open].ends_with("\n\n") {
        open - 2
    } else {
        open
    };
    Some((start, end))
}

/// One `_INVOKE_RE` match: `<｜DSML｜ invoke name="(.*?)">\n(.*?)</｜DSML｜ invoke>`.
struct Invoke<'a> {
    whole: std::ops::Range<usize>,
    name: &'a str,
    params: &'a str,
}

/// `_INVOKE_RE` tried at `at` (where its literal start is): the lazy name runs to the
/// first `">\n`, the lazy body to the first close after it (a later `">\n` cannot find a
/// close the first could not).
fn invoke_at(s: &str, at: usize) -> Option<Invoke<'_>> {
    let name_start = at + INVOKE_OPEN.len();
    let name_len = s[name_start..].find("\">\n")?;
    let params_start = name_start + name_len + 3;
    let params_len = s[params_start..].find(INVOKE_CLOSE)?;
    Some(Invoke {
        whole: at..params_start + params_len + INVOKE_CLOSE.len(),
        name: &s[name_start..name_start + name_len],
        params: &s[params_start..params_start + params_len],
    })
}

/// One `_PARAM_RE` match:
/// `<｜DSML｜ parameter name="(.*?)" string="(true|false)">(.*?)</｜DSML｜ parameter>`.
struct Param<'a> {
    whole: std::ops::Range<usize>,
    key: &'a str,
    is_string: bool,
    value: &'a str,
}

/// `_PARAM_RE` tried at `at`: the lazy key extends to each `" string="` in turn until one
/// is followed by `true">` or `false">`; the lazy value runs to the first close.
fn param_at(s: &str, at: usize) -> Option<Param<'_>> {
    const SEP: &str = "\" string=\"";
    let key_start = at + PARAM_OPEN.len();
    let mut from = key_start;
    loop {
        let sep = from + s[from..].find(SEP)?;
        let flag = sep + SEP.len();
        let found = [("true\">", true), ("false\">", false)]
            .into_iter()
            .find(|(lit, _)| s[flag..].starts_with(lit));
        if let Some((lit, is_string)) = found {
            let value_start = flag + lit.len();
            let value_len = s[value_start..].find(PARAM_CLOSE)?;
            return Some(Param {
                whole: at..value_start + value_len + PARAM_CLOSE.len(),
                key: &s[key_start..sep],
                is_string,
                value: &s[value_start..value_start + value_len],
            });
        }
        // `"` is one byte: the next candidate starts after it.
        from = sep + 1;
    }
}

/// `re.finditer` of a pattern that starts with the literal `open`, tried by `at` at each
/// occurrence: leftmost, non-overlapping matches.
fn find_all<'a, T>(
    s: &'a str,
    open: &str,
    at: impl Fn(&'a str, usize) -> Option<T>,
    end_of: impl Fn(&T) -> usize,
) -> Vec<T> {
    let mut found = Vec::new();
    let mut pos = 0;
    while let Some(rel) = s[pos..].find(open) {
        let start = pos + rel;
        match at(s, start) {
            Some(m) => {
                pos = end_of(&m);
                found.push(m);
            }
            // Every literal starts with the one-byte `<`.
            None => pos = start + 1,
        }
    }
    found
}

/// `pattern.sub("", s)` given the matches' ranges: what lies between them.
fn outside(s: &str, ranges: impl Iterator<Item = std::ops::Range<usize>>) -> String {
    let mut out = String::new();
    let mut pos = 0;
    for r in ranges {
        out.push_str(&s[pos..r.start]);
        pos = r.end;
    }
    out.push_str(&s[pos..]);
    out
}

/// `_parse_tool_calls` of the calls block (its text as matched).
fn parse_tool_calls(block: &str) -> R<(Vec<ToolCall>, Vec<UnparsedToolCall>)> {
    let body = block.strip_prefix("\n\n").unwrap_or(block);
    let body = body.strip_prefix(CALLS_OPEN).unwrap_or(body);
    let body = body.strip_suffix(CALLS_CLOSE).unwrap_or(body);
    let invokes = find_all(body, INVOKE_OPEN, invoke_at, |m| m.whole.end);
    let rest = outside(body, invokes.iter().map(|m| m.whole.clone()));
    if invokes.is_empty() || !py_strip(&rest).is_empty() {
        let malformed = UnparsedToolCall {
            raw_text: block.to_owned(),
            error: "Invalid DSML: malformed invoke".into(),
        };
        return Ok((Vec::new(), vec![malformed]));
    }
    let mut calls = Vec::new();
    let mut unparsed = Vec::new();
    for invoke in &invokes {
        match invoke_arguments(invoke)? {
            Ok(arguments) => calls.push(ToolCall {
                id: None,
                name: invoke.name.to_owned(),
                arguments: py_json::dumps(&PyValue::Object(arguments), true),
            }),
            Err(e) => unparsed.push(UnparsedToolCall {
                raw_text: body[invoke.whole.clone()].to_owned(),
                error: format!("Invalid DSML: {e}"),
            }),
        }
    }
    Ok((calls, unparsed))
}

/// The arguments of one invoke, or why it is malformed (Python's caught `ValueError`);
/// the outer error is what Python does not catch.
fn invoke_arguments(invoke: &Invoke<'_>) -> R<Result<Vec<(String, PyValue)>, String>> {
    if py_strip(invoke.name).is_empty() {
        return Ok(Err("empty function name".into()));
    }
    let params = find_all(invoke.params, PARAM_OPEN, param_at, |m| m.whole.end);
    let rest = outside(invoke.params, params.iter().map(|m| m.whole.clone()));
    if !py_strip(&rest).is_empty() {
        return Ok(Err("text outside parameters".into()));
    }
    let mut arguments: Vec<(String, PyValue)> = Vec::new();
    for p in &params {
        if py_strip(p.key).is_empty() {
            return Ok(Err("empty parameter name".into()));
        }
        if arguments.iter().any(|(k, _)| k == p.key) {
            return Ok(Err(format!("duplicate parameter {}", py_repr_str(p.key))));
        }
        let value = if p.is_string {
            PyValue::Str(p.value.to_owned())
        } else {
            match py_json::loads(p.value) {
                Ok(v) => v,
                Err(py_json::Error::Recursion(m)) => return Err(renderer_error(m)),
                Err(e) => return Ok(Err(e.message().to_owned())),
            }
        };
        arguments.push((p.key.to_owned(), value));
    }
    Ok(Ok(arguments))
}
