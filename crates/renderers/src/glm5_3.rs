//! GLM-5.3 (cookbook `renderers/glm5_3.py`):
//! `[gMASK]<sop><|system|>Reasoning Effort: Max<|system|>…<|user|>…<|assistant|><think>…</think>…`.
//!
//! There is no end-of-message token: an assistant turn ends with the next role token
//! (`<|user|>`, `<|observation|>` after tool calls, or `<|endoftext|>`). Each assistant
//! message owns that terminator as its last output token (the next message drops it from
//! its header); the last assistant message gets it as its stop overlap. The `<think>` the
//! generation prompt always prefills sits in every assistant header. Tool calls are
//! `<tool_call>name<arg_key>k</arg_key><arg_value>v</arg_value>…</tool_call>`, and a run
//! of tool responses is re-sorted into the calling message's order when the ids allow it.
//!
//! `get_renderer` never passes `strip_thinking_from_history=True` for these names, so only
//! the default (thinking kept in every assistant message) is ported.

use serde_json::{Map, Value as Json};

use super::base::{
    decode, default_build_generation_prompt, default_build_supervised_example, encode, json_dumps,
    json_dumps_with, json_loads, parse_content_blocks, py_is_space, py_strip, py_truthy,
    renderer_error, single_token, text_chunk, ChatRenderer, ParsedToolCall, RenderContext,
    RenderedMessage, StopSequences, Supervised, Termination, TrainOnWhat, R,
};
use super::message::{Content, Message, Part, ToolCall, UnparsedToolCall};
use super::RendererOptions;
use tinker_core::types::ModelInput;
use tinker_tokenizer::Tokenizer;

/// The prefill every generation prompt ends with (GLM-5.3 always opens a think block).
const THINK_PREFILL: &str = "<think>";

pub(super) fn by_name(name: &str, _opts: &RendererOptions) -> Option<Box<dyn ChatRenderer>> {
    let effort = match name {
        "glm5_3_max_reasoning" => "Max",
        "glm5_3_high_reasoning" => "High",
        "glm5_3_low_reasoning" => "Low",
        _ => return None,
    };
    Some(Box::new(Glm5_3 { effort }))
}

/// `Glm5_3Renderer` and its `High`/`Low` reasoning-effort subclasses.
pub struct Glm5_3 {
    /// The `Reasoning Effort:` segment's value (`Max`, `High` or `Low`).
    effort: &'static str,
}

/// The special tokens the renderer uses (the constructor's `_get_special_token`s).
struct Ids {
    system: u32,
    user: u32,
    assistant: u32,
    observation: u32,
    endoftext: u32,
    think_open: u32,
    think_close: u32,
}

impl Ids {
    /// Each must be one token, as the cookbook asserts when it builds the renderer.
    fn of(tok: &Tokenizer) -> R<Ids> {
        Ok(Ids {
            system: single_token(tok, "<|system|>")?,
            user: single_token(tok, "<|user|>")?,
            assistant: single_token(tok, "<|assistant|>")?,
            observation: single_token(tok, "<|observation|>")?,
            endoftext: single_token(tok, "<|endoftext|>")?,
            think_open: single_token(tok, "<think>")?,
            think_close: single_token(tok, "</think>")?,
        })
    }

    /// `_stop_token_ids`: the model's eos tokens.
    fn stops(&self) -> [u32; 3] {
        [self.user, self.observation, self.endoftext]
    }

    /// `_turn_terminator_token`: the token that ends an assistant turn (`<|observation|>`
    /// after tool calls, else `<|user|>`), or `None` when the next message's role token is
    /// not that one (a mid-conversation system message, a tool response after a turn
    /// without calls): the token then stays on the next message's header.
    fn terminator(&self, message: &Message, next: Option<&Message>) -> Option<u32> {
        let expected = if has_tool_calls(message) {
            self.observation
        } else {
            self.user
        };
        let Some(next) = next else {
            return Some(expected);
        };
        let next_header = match next.role.as_str() {
            "user" => Some(self.user),
            "tool" => Some(self.observation),
            _ => None,
        };
        (next_header == Some(expected)).then_some(expected)
    }

    /// `_header_supplied_by_previous_turn`: the preceding assistant turn already wrote
    /// this message's role token as its terminator.
    fn header_supplied(&self, message: &Message, ctx: &RenderContext<'_>) -> bool {
        match ctx.prev_message {
            Some(prev) if prev.role == "assistant" => {
                self.terminator(prev, Some(message)).is_some()
            }
            _ => false,
        }
    }
}

/// `message.get("tool_calls")` is truthy.
fn has_tool_calls(message: &Message) -> bool {
    message.tool_calls.as_ref().is_some_and(|c| !c.is_empty())
}

/// `_visible_text`: string content, or the text parts joined (other parts are refused).
fn visible_text(content: &Content) -> R<String> {
    match content {
        Content::Text(s) => Ok(s.clone()),
        Content::Parts(parts) => parts
            .iter()
            .map(|p| match p {
                Part::Text(t) => Ok(t.as_str()),
                other => Err(renderer_error(format!(
                    "GLM-5.3 renderer does not support '{}' content parts here",
                    other.kind()
                ))),
            })
            .collect(),
    }
}

/// `_split_reasoning_and_text`: (reasoning, visible text). Parts split by type; a string
/// splits on its `<think>…</think>` as the HF template does. No reasoning: `None`.
fn split_reasoning_and_text(content: &Content) -> R<(Option<String>, String)> {
    match content {
        Content::Parts(parts) => {
            let mut reasoning: Option<String> = None;
            let mut text = String::new();
            for p in parts {
                match p {
                    Part::Thinking(t) => reasoning.get_or_insert_with(String::new).push_str(t),
                    Part::Text(t) => text.push_str(t),
                    other => {
                        return Err(renderer_error(format!(
                            "GLM-5.3 renderer does not support '{}' content parts",
                            other.kind()
                        )))
                    }
                }
            }
            Ok((reasoning, text))
        }
        Content::Text(s) if s.contains("</think>") => {
            // content.split("</think>")[0].split("<think>")[-1], content.split("</think>")[-1]
            let before = s.split("</think>").next().unwrap_or_default();
            let reasoning = before.rsplit("<think>").next().unwrap_or_default();
            let text = s.rsplit("</think>").next().unwrap_or_default();
            Ok((Some(reasoning.to_owned()), text.to_owned()))
        }
        Content::Text(s) => Ok((None, s.clone())),
    }
}

/// `_format_glm_arg_value`: strings raw, anything else as JSON (`ensure_ascii=False`).
fn format_arg_value(value: &Json) -> String {
    match value {
        Json::String(s) => s.clone(),
        other => json_dumps_with(other, (", ", ": "), false, None),
    }
}

/// `_format_glm_tool_call`: `<tool_call>name<arg_key>k</arg_key><arg_value>v</arg_value>…`.
fn format_tool_call(call: &ToolCall) -> R<String> {
    let args = if call.arguments.is_empty() {
        Map::new()
    } else {
        match json_loads(&call.arguments) {
            Ok(Json::Object(o)) => o,
            // The cookbook fails here too: json.loads raises, or `.items()` does.
            Ok(_) => {
                return Err(renderer_error(format!(
                    "tool call {:?} has arguments that are not a JSON object",
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
    let mut out = format!("<tool_call>{}", call.name);
    for (key, value) in &args {
        out.push_str(&format!(
            "<arg_key>{key}</arg_key><arg_value>{}</arg_value>",
            format_arg_value(value)
        ));
    }
    out.push_str("</tool_call>");
    Ok(out)
}

/// The end of Python's `[\w\-\.]+` run at the start of `s` (`\w`: alphanumerics and `_`).
fn name_len(s: &str) -> usize {
    s.find(|c: char| !(c.is_alphanumeric() || matches!(c, '_' | '-' | '.')))
        .unwrap_or(s.len())
}

/// One `<arg_key>(.*?)</arg_key>\s*<arg_value>(.*?)</arg_value>` match starting at `at`
/// (where `<arg_key>` begins): the key, the value and the end of the match. The lazy key
/// grows to each later `</arg_key>` until `<arg_value>` follows it, as the regex backtracks.
fn arg_pair_at(body: &str, at: usize) -> Option<(&str, &str, usize)> {
    const KEY_OPEN: &str = "<arg_key>";
    const KEY_CLOSE: &str = "</arg_key>";
    const VALUE_OPEN: &str = "<arg_value>";
    const VALUE_CLOSE: &str = "</arg_value>";
    let key_start = at + KEY_OPEN.len();
    let mut from = key_start;
    while let Some(rel) = body[from..].find(KEY_CLOSE) {
        let key_end = from + rel;
        let after = key_end + KEY_CLOSE.len();
        let rest = body[after..].trim_start_matches(py_is_space);
        if let Some(value) = rest.strip_prefix(VALUE_OPEN) {
            let value_start = body.len() - value.len();
            // The first `</arg_value>` closes it; without one no later key can match either.
            let len = value.find(VALUE_CLOSE)?;
            let end = value_start + len + VALUE_CLOSE.len();
            return Some((&body[key_start..key_end], &value[..len], end));
        }
        from = after;
    }
    None
}

/// `_parse_glm_tool_call` of a `<tool_call>…</tool_call>` block (as `parse_content_blocks`
/// cut it: one closing tag, at the end). Values parse as JSON when they can, else stay
/// strings, mirroring how the template writes them.
fn parse_glm_tool_call(raw_text: &str) -> ParsedToolCall {
    let unparsed = |error: &str| {
        ParsedToolCall::Unparsed(UnparsedToolCall {
            raw_text: raw_text.to_owned(),
            error: error.to_owned(),
        })
    };
    // ^\s*<tool_call>\s*(?P<name>[\w\-\.]+)\s*(?P<body>.*?)\s*</tool_call>\s*$
    let inner = raw_text
        .trim_matches(py_is_space)
        .strip_prefix("<tool_call>")
        .and_then(|s| s.strip_suffix("</tool_call>"));
    let Some(inner) = inner else {
        return unparsed("Malformed GLM tool call");
    };
    let inner = inner.trim_start_matches(py_is_space);
    let n = name_len(inner);
    if n == 0 {
        return unparsed("Malformed GLM tool call");
    }
    let name = &inner[..n];
    let body = inner[n..].trim_matches(py_is_space);

    let mut arguments = Map::new();
    let mut pos = 0;
    let mut search = 0;
    while let Some(rel) = body[search..].find("<arg_key>") {
        let at = search + rel;
        let Some((key, value_text, end)) = arg_pair_at(body, at) else {
            // No match here: the search resumes one character on.
            search = at + 1;
            continue;
        };
        if !py_strip(&body[pos..at]).is_empty() {
            return unparsed("Unexpected content between tool call arguments");
        }
        let key = py_strip(key);
        if key.is_empty() {
            return unparsed("Empty tool call argument key");
        }
        let value = json_loads(value_text).unwrap_or_else(|_| Json::String(value_text.to_owned()));
        arguments.insert(key.to_owned(), value);
        pos = end;
        search = end;
    }
    if !py_strip(&body[pos..]).is_empty() {
        return unparsed("Unexpected trailing content inside tool call");
    }
    ParsedToolCall::Parsed(ToolCall {
        id: None,
        name: name.to_owned(),
        arguments: json_dumps(&Json::Object(arguments)),
    })
}

/// `_sort_tool_block`: a run of tool responses in the order of the preceding assistant
/// message's `tool_calls`, when every call and response has a unique non-empty id and every
/// response answers one of the calls; otherwise as given.
fn sort_tool_block<'a>(block: &'a [Message], prev: Option<&Message>) -> Vec<&'a Message> {
    let as_given = || block.iter().collect();
    let Some(calls) = prev
        .filter(|p| p.role == "assistant")
        .and_then(|p| p.tool_calls.as_ref())
        .filter(|c| !c.is_empty())
    else {
        return as_given();
    };
    let call_ids: Option<Vec<&str>> = calls
        .iter()
        .map(|c| c.id.as_deref().filter(|id| !id.is_empty()))
        .collect();
    let response_ids: Option<Vec<&str>> = block
        .iter()
        .map(|m| m.tool_call_id.as_deref().filter(|id| !id.is_empty()))
        .collect();
    let (Some(call_ids), Some(response_ids)) = (call_ids, response_ids) else {
        return as_given();
    };
    if !all_unique(&call_ids)
        || !all_unique(&response_ids)
        || !response_ids.iter().all(|r| call_ids.contains(r))
    {
        return as_given();
    }
    call_ids
        .iter()
        .filter_map(|c| {
            let i = response_ids.iter().position(|r| r == c)?;
            block.get(i)
        })
        .collect()
}

fn all_unique(ids: &[&str]) -> bool {
    ids.iter().enumerate().all(|(i, id)| !ids[..i].contains(id))
}

/// `_reorder_tool_results`: each run of consecutive tool responses sorted into tool-call
/// order (a new list).
fn reorder_tool_results(messages: &[Message]) -> Vec<Message> {
    let mut out = Vec::with_capacity(messages.len());
    let mut idx = 0;
    while idx < messages.len() {
        if messages[idx].role != "tool" {
            out.push(messages[idx].clone());
            idx += 1;
            continue;
        }
        let end = messages[idx..]
            .iter()
            .position(|m| m.role != "tool")
            .map_or(messages.len(), |n| idx + n);
        let prev = idx.checked_sub(1).map(|i| &messages[i]);
        out.extend(
            sort_tool_block(&messages[idx..end], prev)
                .into_iter()
                .cloned(),
        );
        idx = end;
    }
    out
}

impl Glm5_3 {
    /// An assistant message: header `<|assistant|><think>` (the prefill, untrained), output
    /// the rest of the think block, the stripped text, the tool calls and the terminator.
    fn render_assistant(
        &self,
        tok: &Tokenizer,
        ids: &Ids,
        message: &Message,
        ctx: &RenderContext<'_>,
    ) -> R<RenderedMessage> {
        let (reasoning, text) = split_reasoning_and_text(&message.content)?;
        let think_block = match reasoning {
            Some(r) => format!("<think>{r}</think>"),
            None => "<think></think>".to_owned(),
        };
        let mut output = think_block + py_strip(&text);
        if has_tool_calls(message) {
            for call in message.tool_calls.iter().flatten() {
                output.push_str(&format_tool_call(call)?);
            }
        }
        let mut header = vec![ids.assistant];
        if let Some(rest) = output.strip_prefix(THINK_PREFILL) {
            header.extend(encode(tok, THINK_PREFILL)?);
            output = rest.to_owned();
        }
        let terminator = ids.terminator(message, ctx.next_message);
        let mut output_tokens = encode(tok, &output)?;
        let mut stop_overlap = None;
        match terminator {
            // The last message has no follower to carry it: the supervised example appends it.
            Some(t) if ctx.is_last => stop_overlap = Some(vec![t]),
            Some(t) => output_tokens.push(t),
            None => {}
        }
        Ok(rendered(header, output_tokens, stop_overlap))
    }

    /// Every other role: its role token (unless the previous turn wrote it) and its text.
    fn render_other(
        &self,
        tok: &Tokenizer,
        ids: &Ids,
        message: &Message,
        ctx: &RenderContext<'_>,
    ) -> R<RenderedMessage> {
        let (header, output) = match message.role.as_str() {
            "system" => (vec![ids.system], visible_text(&message.content)?),
            "user" => {
                let header = if ids.header_supplied(message, ctx) {
                    vec![]
                } else {
                    vec![ids.user]
                };
                (header, visible_text(&message.content)?)
            }
            "tool" => {
                // Consecutive tool responses share one <|observation|>, as does a response
                // to the turn that called it (that turn wrote the token).
                let follows_tool = ctx.prev_message.is_some_and(|p| p.role == "tool");
                let header = if follows_tool || ids.header_supplied(message, ctx) {
                    vec![]
                } else {
                    vec![ids.observation]
                };
                let text = visible_text(&message.content)?;
                (header, format!("<tool_response>{text}</tool_response>"))
            }
            other => return Err(renderer_error(format!("Unsupported role: {other}"))),
        };
        Ok(rendered(header, encode(tok, &output)?, None))
    }
}

/// A `RenderedMessage` with empty header and output left out, as the cookbook builds it.
fn rendered(header: Vec<u32>, output: Vec<u32>, stop_overlap: Option<Vec<u32>>) -> RenderedMessage {
    RenderedMessage {
        header: (!header.is_empty()).then_some(header),
        output: if output.is_empty() {
            vec![]
        } else {
            vec![text_chunk(output)]
        },
        stop_overlap,
    }
}

/// `_TOOLS_SYSTEM_TEMPLATE`, split around `{tool_lines}`. The leading newline is content:
/// the template writes `<|system|>\n# Tools`.
const TOOLS_HEAD: &str = "\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>\n";
const TOOLS_TAIL: &str = "</tools>\n\nFor each function call, output the function name and arguments within the following XML format:\n<tool_call>{function-name}<arg_key>{arg-key-1}</arg_key><arg_value>{arg-value-1}</arg_value><arg_key>{arg-key-2}</arg_key><arg_value>{arg-value-2}</arg_value>...</tool_call>";

/// `_tool_declaration_json`: the tool without `strict`/`defer_loading`, as
/// `json.dumps(…, ensure_ascii=False)`.
fn tool_declaration_json(tool: &Map<String, Json>) -> String {
    let filtered: Map<String, Json> = tool
        .iter()
        .filter(|(k, _)| !matches!(k.as_str(), "defer_loading" | "strict"))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    json_dumps_with(&Json::Object(filtered), (", ", ": "), false, None)
}

impl ChatRenderer for Glm5_3 {
    fn has_extension_property(&self) -> bool {
        true
    }

    fn bos_tokens(&self, tok: &Tokenizer) -> R<Vec<u32>> {
        // The Reasoning Effort segment is always written.
        encode(
            tok,
            &format!("[gMASK]<sop><|system|>Reasoning Effort: {}", self.effort),
        )
    }

    fn stop_sequences(&self, tok: &Tokenizer) -> R<StopSequences> {
        Ok(StopSequences::Tokens(Ids::of(tok)?.stops().to_vec()))
    }

    fn render_message(
        &self,
        tok: &Tokenizer,
        message: &Message,
        ctx: &RenderContext<'_>,
    ) -> R<RenderedMessage> {
        let ids = Ids::of(tok)?;
        if message.role == "assistant" {
            self.render_assistant(tok, &ids, message, ctx)
        } else {
            self.render_other(tok, &ids, message, ctx)
        }
    }

    /// The role token, plus the `<think>` prefill for the assistant.
    fn generation_suffix(
        &self,
        tok: &Tokenizer,
        role: &str,
        _ctx: &RenderContext<'_>,
    ) -> R<Vec<u32>> {
        let ids = Ids::of(tok)?;
        let role_token = match role {
            "system" => ids.system,
            "user" => ids.user,
            "assistant" => ids.assistant,
            "tool" => ids.observation,
            other => {
                return Err(renderer_error(format!(
                    "Unsupported generation role: {other}"
                )))
            }
        };
        let mut suffix = vec![role_token];
        if role == "assistant" {
            suffix.extend(encode(tok, THINK_PREFILL)?);
        }
        Ok(suffix)
    }

    /// Restores the prefilled `<think>` when the response closes a think block.
    fn normalize_response_tokens(&self, tok: &Tokenizer, response: &[u32]) -> R<Vec<u32>> {
        let ids = Ids::of(tok)?;
        match response.first() {
            Some(&first) if first != ids.think_open && response.contains(&ids.think_close) => {
                Ok([&[ids.think_open], response].concat())
            }
            _ => Ok(response.to_vec()),
        }
    }

    /// `<|user|>`/`<|observation|>` end a turn cleanly, `<|endoftext|>` is EOS; think
    /// blocks and tool calls (JSON, else GLM's key/value form) are parsed out.
    fn parse_response(&self, tok: &Tokenizer, response: &[u32]) -> R<(Message, Termination)> {
        let ids = Ids::of(tok)?;
        let response = self.normalize_response_tokens(tok, response)?;
        let stops = ids.stops();
        let positions: Vec<usize> = (0..response.len())
            .filter(|&i| stops.contains(&response[i]))
            .collect();
        let (content, termination) = match positions.as_slice() {
            [] => {
                let text = decode(tok, &response);
                return Ok((Message::new("assistant", text), Termination::Malformed));
            }
            [at] => {
                let termination = if response[*at] == ids.endoftext {
                    Termination::Eos
                } else {
                    Termination::StopSequence
                };
                (decode(tok, &response[..*at]), termination)
            }
            many => {
                return Err(renderer_error(format!(
                    "When parsing response, expected to split into 1 or 2 pieces using stop \
                     tokens, but got {}. You probably are using the wrong stop tokens when \
                     sampling",
                    many.len()
                )))
            }
        };
        let mut message = Message::new("assistant", content.clone());
        if let Some((parts, calls)) = parse_content_blocks(&content) {
            message.content = Content::Parts(parts);
            attach_glm_tool_calls(&mut message, calls);
        }
        Ok((message, termination))
    }

    fn build_generation_prompt(
        &self,
        tok: &Tokenizer,
        messages: &[Message],
        role: &str,
        prefill: Option<&str>,
    ) -> R<ModelInput> {
        default_build_generation_prompt(self, tok, &reorder_tool_results(messages), role, prefill)
    }

    fn build_supervised_example(
        &self,
        tok: &Tokenizer,
        messages: &[Message],
        train_on: TrainOnWhat,
    ) -> R<Supervised> {
        default_build_supervised_example(self, tok, &reorder_tool_results(messages), train_on)
    }

    /// A `<|system|>` tools declaration (tools with a truthy `defer_loading` left out),
    /// then the system prompt, each only when given.
    fn conversation_prefix_with_tools(
        &self,
        _tok: &Tokenizer,
        tools: &[Json],
        system_prompt: &str,
    ) -> R<Vec<Message>> {
        let mut messages = Vec::new();
        if !tools.is_empty() {
            let mut lines = String::new();
            for (i, tool) in tools.iter().enumerate() {
                let Json::Object(tool) = tool else {
                    return Err(renderer_error(format!("tools[{i}] is not an object")));
                };
                if !tool.get("defer_loading").is_some_and(py_truthy) {
                    lines.push_str(&tool_declaration_json(tool));
                    lines.push('\n');
                }
            }
            messages.push(Message::new(
                "system",
                format!("{TOOLS_HEAD}{lines}{TOOLS_TAIL}"),
            ));
        }
        if !system_prompt.is_empty() {
            messages.push(Message::new("system", system_prompt));
        }
        Ok(messages)
    }
}

/// The parsed `<tool_call>` blocks: those that parsed as JSON first, then the rest
/// re-parsed in GLM's key/value form, in order (as the cookbook collects them).
fn attach_glm_tool_calls(message: &mut Message, calls: Vec<ParsedToolCall>) {
    let mut parsed = Vec::new();
    let mut retry = Vec::new();
    for c in calls {
        match c {
            ParsedToolCall::Parsed(t) => parsed.push(t),
            ParsedToolCall::Unparsed(u) => retry.push(u),
        }
    }
    let mut unparsed = Vec::new();
    for u in retry {
        match parse_glm_tool_call(&u.raw_text) {
            ParsedToolCall::Parsed(t) => parsed.push(t),
            ParsedToolCall::Unparsed(u) => unparsed.push(u),
        }
    }
    if !parsed.is_empty() {
        message.tool_calls = Some(parsed);
    }
    if !unparsed.is_empty() {
        message.unparsed_tool_calls = Some(unparsed);
    }
}
