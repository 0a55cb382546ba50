//! `kimi_k2` (cookbook `renderers/kimi_k2.py`, Kimi K2 Thinking):
//! `<|im_user|>user<|im_middle|>…<|im_end|>`, the assistant's reasoning in
//! `<think>…</think>`, tool calls in a `<|tool_calls_section_begin|>` section. A default
//! system message is added when the conversation has none, as the HF template does.
//!
//! The K2.5/K2.6 renderers (`kimi_k25.rs`), which subclass this one in the cookbook, are
//! this file's [`Kimi`] with their overriding methods ([`KimiMethods`]: multipart content,
//! response normalisation, the think prefill, TypeScript tool declarations), called where
//! Python's `self.` calls would call them.

use std::borrow::Cow;

use serde_json::Value as Json;

use super::base::{
    attach_tool_calls, content_or_parts, default_build_generation_prompt,
    default_build_supervised_example, detect_unterminated_tool_block, encode, json_dumps_with,
    parse_response_for_stop_token, parse_think_blocks, py_is_space, py_strip, renderer_error,
    single_token, text_chunk, ChatRenderer, ParsedToolCall, RenderContext, RenderedMessage,
    StopSequences, Supervised, Termination, TrainOnWhat, R,
};
use super::message::{Message, Part, ToolCall, UnparsedToolCall};
use super::RendererOptions;
use tinker_core::types::{ModelInput, ModelInputChunk};
use tinker_tokenizer::Tokenizer;

/// The system prompt the HF template adds when a conversation has none.
pub(super) const DEFAULT_SYSTEM_PROMPT: &str =
    "You are Kimi, an AI assistant created by Moonshot AI.";
const IM_END: &str = "<|im_end|>";
const CALLS_BEGIN: &str = "<|tool_calls_section_begin|>";
const CALLS_END: &str = "<|tool_calls_section_end|>";
const CALL_BEGIN: &str = "<|tool_call_begin|>";
const CALL_ARGS: &str = "<|tool_call_argument_begin|>";
const CALL_END: &str = "<|tool_call_end|>";
/// The section markers the parser accepts: the rendered spelling and a singular variant.
const SECTIONS: [(&str, &str); 2] = [
    (CALLS_BEGIN, CALLS_END),
    ("<|tool_call_section_begin|>", "<|tool_call_section_end|>"),
];

pub(super) fn by_name(name: &str, _opts: &RendererOptions) -> Option<Box<dyn ChatRenderer>> {
    (name == "kimi_k2").then(|| {
        Box::new(Kimi {
            strip_thinking_from_history: true,
            disable_thinking: false,
            methods: &KIMI_K2_METHODS,
        }) as Box<dyn ChatRenderer>
    })
}

/// `KimiK2Renderer` (thinking stripped from history, as `get_renderer` builds it) and,
/// with K2.5's [`KimiMethods`] (`kimi_k25.rs`), its subclasses `KimiK25Renderer`,
/// `KimiK25DisableThinkingRenderer` and `KimiK26PreserveThinkingRenderer`: one type, so
/// the shared rendering and parsing are compiled once.
pub(super) struct Kimi {
    /// Historical reasoning becomes an empty `<think></think>` (false: kept).
    pub(super) strip_thinking_from_history: bool,
    /// The generation prompt closes the think block (`KimiK25DisableThinkingRenderer`).
    pub(super) disable_thinking: bool,
    /// The methods a subclass overrides.
    pub(super) methods: &'static KimiMethods,
}

/// The `KimiK2Renderer` methods `KimiK25Renderer` overrides.
pub(super) struct KimiMethods {
    /// `_encode_multipart_content`: a non-assistant message whose content is not plain
    /// text, given the parts and a closing `<|im_end|>` text part.
    pub(super) encode_multipart_content: fn(&Tokenizer, Vec<Part>) -> R<Vec<ModelInputChunk>>,
    /// `_normalize_response_tokens`.
    pub(super) normalize_response_tokens: fn(&Tokenizer, &[u32]) -> R<Vec<u32>>,
    /// What `build_generation_prompt` prefills before the caller's own prefill (none
    /// for K2).
    pub(super) think_prefill: fn(&Kimi) -> Option<&'static str>,
    /// The `tool_declare` message of `create_conversation_prefix_with_tools`, given the
    /// tools in OpenAI's format.
    pub(super) tool_declaration: fn(&[Json]) -> R<String>,
}

/// `KimiK2Renderer`'s own methods.
static KIMI_K2_METHODS: KimiMethods = KimiMethods {
    // K2 has no image support: `_encode_multipart_content` raises NotImplementedError.
    encode_multipart_content: |_, _| {
        Err(renderer_error(
            "Multipart/Image content encoding is not supported for Kimi K2 renderer",
        ))
    },
    normalize_response_tokens: |_, response| Ok(response.to_vec()),
    think_prefill: |_| None,
    // The JSON payload with keys sorted, as Kimi's own apply_chat_template writes it.
    tool_declaration: |payload| {
        Ok(json_dumps_with(
            &sorted_keys(&Json::Array(payload.to_vec())),
            (",", ":"),
            true,
            None,
        ))
    },
};

impl ChatRenderer for Kimi {
    fn disables_thinking(&self) -> bool {
        self.disable_thinking
    }

    fn stop_sequences(&self, tok: &Tokenizer) -> R<StopSequences> {
        Ok(StopSequences::Tokens(vec![single_token(tok, IM_END)?]))
    }

    fn render_message(
        &self,
        tok: &Tokenizer,
        message: &Message,
        ctx: &RenderContext<'_>,
    ) -> R<RenderedMessage> {
        render_message(
            tok,
            message,
            ctx,
            self.strip_thinking_from_history,
            self.methods.encode_multipart_content,
        )
    }

    fn parse_response(&self, tok: &Tokenizer, response: &[u32]) -> R<(Message, Termination)> {
        parse_response_with(self, tok, response)
    }

    fn normalize_response_tokens(&self, tok: &Tokenizer, response: &[u32]) -> R<Vec<u32>> {
        (self.methods.normalize_response_tokens)(tok, response)
    }

    fn last_assistant_turn_start_index(&self, messages: &[Message]) -> usize {
        last_assistant_turn_start_index(messages)
    }

    /// `build_generation_prompt`: the base prompt of the conversation with its system
    /// message, the think prefill (K2.5) before `prefill`.
    fn build_generation_prompt(
        &self,
        tok: &Tokenizer,
        messages: &[Message],
        role: &str,
        prefill: Option<&str>,
    ) -> R<ModelInput> {
        let prefill = match (self.methods.think_prefill)(self) {
            Some(think) => Some(format!("{think}{}", prefill.unwrap_or_default())),
            None => prefill.map(str::to_owned),
        };
        let messages = ensure_system_message(messages);
        default_build_generation_prompt(self, tok, &messages, role, prefill.as_deref())
    }

    /// `build_supervised_example`: the base example of the conversation with its system
    /// message.
    fn build_supervised_example(
        &self,
        tok: &Tokenizer,
        messages: &[Message],
        train_on: TrainOnWhat,
    ) -> R<Supervised> {
        default_build_supervised_example(self, tok, &ensure_system_message(messages), train_on)
    }

    fn build_supervised_examples(
        &self,
        tok: &Tokenizer,
        messages: &[Message],
        train_on: TrainOnWhat,
    ) -> R<Vec<Supervised>> {
        supervised_examples_with(self, tok, messages, train_on)
    }

    fn conversation_prefix_with_tools(
        &self,
        _tok: &Tokenizer,
        tools: &[Json],
        system_prompt: &str,
    ) -> R<Vec<Message>> {
        let declaration = if tools.is_empty() {
            None
        } else {
            let payload: Vec<Json> = tools.iter().map(openai_tool).collect();
            Some((self.methods.tool_declaration)(&payload)?)
        };
        Ok(tools_prefix(declaration, system_prompt))
    }
}

/// `{"type": "function", "function": tool}`.
fn openai_tool(tool: &Json) -> Json {
    serde_json::json!({ "type": "function", "function": tool })
}

/// `json.dumps(..., sort_keys=True)`'s order: every object's keys sorted.
fn sorted_keys(v: &Json) -> Json {
    match v {
        Json::Object(o) => {
            let mut entries: Vec<(&String, &Json)> = o.iter().collect();
            tinker_support::sort::sort_by(&mut entries, |a, b| a.0.cmp(b.0));
            Json::Object(
                entries
                    .into_iter()
                    .map(|(k, v)| (k.clone(), sorted_keys(v)))
                    .collect(),
            )
        }
        Json::Array(a) => Json::Array(a.iter().map(sorted_keys).collect()),
        other => other.clone(),
    }
}

/// `create_conversation_prefix_with_tools`: the `tool_declare` message (when there are
/// tools) before the system message (the default one when `system_prompt` is empty).
fn tools_prefix(declaration: Option<String>, system_prompt: &str) -> Vec<Message> {
    let system = if system_prompt.is_empty() {
        DEFAULT_SYSTEM_PROMPT
    } else {
        system_prompt
    };
    declaration
        .map(|d| Message::new("tool_declare", d))
        .into_iter()
        .chain([Message::new("system", system)])
        .collect()
}

/// `_ensure_system_message`: the default system message first (after a leading
/// `tool_declare`) unless the conversation already has one there.
fn ensure_system_message(messages: &[Message]) -> Cow<'_, [Message]> {
    let system = || Message::new("system", DEFAULT_SYSTEM_PROMPT);
    match messages {
        [] => Cow::Owned(vec![system()]),
        [first, rest @ ..] if first.role == "tool_declare" => {
            if rest.first().is_some_and(|m| m.role == "system") {
                return Cow::Borrowed(messages);
            }
            let mut out = vec![first.clone(), system()];
            out.extend_from_slice(rest);
            Cow::Owned(out)
        }
        [first, ..] if first.role != "system" => {
            let mut out = vec![system()];
            out.extend_from_slice(messages);
            Cow::Owned(out)
        }
        _ => Cow::Borrowed(messages),
    }
}

/// `_last_assistant_turn_start_index`: the turn starts after the last assistant message
/// that did not call a tool (Kimi keeps the reasoning of a whole assistant/tool exchange).
fn last_assistant_turn_start_index(messages: &[Message]) -> usize {
    messages
        .iter()
        .rposition(|m| m.role == "assistant" && m.tool_calls.as_ref().is_none_or(Vec::is_empty))
        .map_or(0, |i| i + 1)
}

/// `build_supervised_examples`: the last turn alone, or one example per user turn (each
/// ending before the next user message). `all_assistant_messages` trains each example's
/// last turn; the other modes are applied to every example as they are.
fn supervised_examples_with(
    f: &Kimi,
    tok: &Tokenizer,
    messages: &[Message],
    train_on: TrainOnWhat,
) -> R<Vec<Supervised>> {
    if matches!(
        train_on,
        TrainOnWhat::LastAssistantMessage | TrainOnWhat::LastAssistantTurn
    ) {
        return Ok(vec![f.build_supervised_example(tok, messages, train_on)?]);
    }
    let per_example = if train_on == TrainOnWhat::AllAssistantMessages {
        TrainOnWhat::LastAssistantTurn
    } else {
        train_on
    };
    let user_turns = messages
        .iter()
        .enumerate()
        .filter(|(_, m)| m.role == "user");
    user_turns
        .map(|(i, _)| i)
        .skip(1)
        .chain([messages.len()])
        .map(|end| f.build_supervised_example(tok, &messages[..end], per_example))
        .collect()
}

/// The role header: `<|im_user|>`, `<|im_assistant|>` or (every other role)
/// `<|im_system|>`, the role's name, `<|im_middle|>`. A tool result is named after its
/// function (`tool` without one) and says which call it answers.
fn header(message: &Message) -> String {
    let role = message.role.as_str();
    match role {
        "user" => format!("<|im_user|>{role}<|im_middle|>"),
        "assistant" => format!("<|im_assistant|>{role}<|im_middle|>"),
        "tool" => {
            let name = message
                .name
                .as_deref()
                .filter(|n| !n.is_empty())
                .unwrap_or(role);
            let call_id = message.tool_call_id.as_deref().unwrap_or_default();
            format!("<|im_system|>{name}<|im_middle|>## Return of {call_id}\n")
        }
        _ => format!("<|im_system|>{role}<|im_middle|>"),
    }
}

/// The assistant's text: `<think>reasoning</think>` (empty unless the message is in the
/// produced turn or history keeps its reasoning), the text parts, the tool-call section
/// (a call without an id is `functions.<name>:<index>`), `<|im_end|>`. Image parts are
/// ignored, as the cookbook ignores them.
fn assistant_text(message: &Message, keep_thinking: bool) -> String {
    let parts = message.content.to_parts();
    let mut thinking = String::new();
    let mut text = String::new();
    for p in &parts {
        match p {
            Part::Thinking(t) => thinking.push_str(t),
            Part::Text(t) => text.push_str(t),
            Part::Image(_) => {}
        }
    }
    let mut out = if keep_thinking && !thinking.is_empty() {
        format!("<think>{thinking}</think>")
    } else {
        "<think></think>".to_owned()
    };
    out.push_str(&text);
    if let Some(calls) = message.tool_calls.as_ref().filter(|c| !c.is_empty()) {
        out.push_str(CALLS_BEGIN);
        for (idx, call) in calls.iter().enumerate() {
            let id = match call.id.as_deref() {
                Some(id) if !id.is_empty() => id.to_owned(),
                _ => format!("functions.{}:{idx}", call.name),
            };
            out.push_str(&format!(
                "{CALL_BEGIN}{id}{CALL_ARGS}{}{CALL_END}",
                call.arguments
            ));
        }
        out.push_str(CALLS_END);
    }
    out.push_str(IM_END);
    out
}

/// `render_message`. `strip_thinking` is `strip_thinking_from_history`; `multipart`
/// renders a non-assistant message whose content is not plain text
/// (`_encode_multipart_content`, given the parts and a closing `<|im_end|>` text part).
fn render_message(
    tok: &Tokenizer,
    message: &Message,
    ctx: &RenderContext<'_>,
    strip_thinking: bool,
    multipart: fn(&Tokenizer, Vec<Part>) -> R<Vec<ModelInputChunk>>,
) -> R<RenderedMessage> {
    let output = if message.role == "assistant" {
        let keep_thinking = ctx.in_last_assistant_turn || !strip_thinking;
        vec![text_chunk(encode(
            tok,
            &assistant_text(message, keep_thinking),
        )?)]
    } else if let Ok(text) = message.content.ensure_text() {
        vec![text_chunk(encode(tok, &format!("{text}{IM_END}"))?)]
    } else {
        let mut parts = message.content.to_parts();
        parts.push(Part::Text(IM_END.to_owned()));
        multipart(tok, parts)?
    };
    Ok(RenderedMessage {
        output,
        header: Some(encode(tok, &header(message))?),
        stop_overlap: None,
    })
}

/// `parse_response`: split at `<|im_end|>` (after `f`'s normalisation); a clean response
/// has its tool-call section parsed (text after the section is dropped), dangling tool
/// markers reported, and `<think>` blocks turned into thinking parts.
fn parse_response_with(f: &Kimi, tok: &Tokenizer, response: &[u32]) -> R<(Message, Termination)> {
    let response = f.normalize_response_tokens(tok, response)?;
    let stop = single_token(tok, IM_END)?;
    let (mut message, termination) = parse_response_for_stop_token(tok, &response, stop)?;
    if termination == Termination::Malformed {
        return Ok((message, termination));
    }
    let content = message.content.text_content();
    let (text, section) = split_tool_calls_section(&content);
    if let Some(section) = section {
        attach_tool_calls(&mut message, parse_tool_calls_section(section));
    }
    if let Some(dangling) = dangling_tool_block(&content) {
        message
            .unparsed_tool_calls
            .get_or_insert_with(Vec::new)
            .push(dangling);
    }
    message.content = content_or_parts(text.to_owned(), parse_think_blocks(text));
    Ok((message, termination))
}

/// `_split_tool_calls_section`: the text before the first complete tool-call section (of
/// either spelling) and the section's body.
fn split_tool_calls_section(content: &str) -> (&str, Option<&str>) {
    // The leftmost opening marker that has its closing marker after it wins, as the
    // regex's search does.
    let mut openings: Vec<(usize, &str, &str)> = SECTIONS
        .iter()
        .flat_map(|&(open, close)| {
            content
                .match_indices(open)
                .map(move |(at, _)| (at, open, close))
        })
        .collect();
    tinker_support::sort::sort_by_key(&mut openings, |o| o.0);
    for (at, open, close) in openings {
        let body = at + open.len();
        if let Some(len) = content[body..].find(close) {
            return (&content[..at], Some(&content[body..body + len]));
        }
    }
    (content, None)
}

/// `_parse_tool_calls_section`: every complete
/// `<|tool_call_begin|>id<|tool_call_argument_begin|>args<|tool_call_end|>`; arguments
/// that are not JSON make an unparsed call.
fn parse_tool_calls_section(section: &str) -> Vec<ParsedToolCall> {
    let mut calls = Vec::new();
    let mut pos = 0;
    while let Some(found) = section[pos..].find(CALL_BEGIN) {
        let start = pos + found;
        match match_tool_call(section, start) {
            Some((end, id, args)) => {
                calls.push(tool_call(id, args, &section[start..end]));
                pos = end;
            }
            // The marker holds one `<`, so no match can start inside it.
            None => pos = start + CALL_BEGIN.len(),
        }
    }
    calls
}

/// One call of `_TOOL_CALL_RE` at `start`: its end, the id and the arguments (stripped).
/// The id runs to the next `<`, which must open the argument marker, and has the form
/// `name:index`.
fn match_tool_call(s: &str, start: usize) -> Option<(usize, &str, &str)> {
    let id_start = start + CALL_BEGIN.len();
    let id_end = id_start + s[id_start..].find('<')?;
    if !s[id_end..].starts_with(CALL_ARGS) {
        return None;
    }
    let id = tool_id(&s[id_start..id_end])?;
    let args_start = id_end + CALL_ARGS.len();
    let args_len = s[args_start..].find(CALL_END)?;
    let end = args_start + args_len + CALL_END.len();
    Some((end, id, py_strip(&s[args_start..args_start + args_len])))
}

/// The id of `\s*([^<]+:\d+)\s*` (stripped), if the text matches: something, a colon,
/// digits. The something may be a single whitespace character the leading `\s*` gives
/// back, so `" :0"` matches as `":0"`. Python's `\d` also takes non-ASCII decimal digits;
/// only ASCII ones are accepted here (no model writes others in a call index).
fn tool_id(segment: &str) -> Option<&str> {
    let id = py_strip(segment);
    let digits = id.len() - id.trim_end_matches(|c: char| c.is_ascii_digit()).len();
    let head = id[..id.len() - digits].strip_suffix(':')?;
    let something = !head.is_empty() || segment.starts_with(py_is_space);
    (digits > 0 && something).then_some(id)
}

/// A call from its id (`functions.name:0`: the name is between the first `.` and `:`)
/// and arguments, which must be JSON.
fn tool_call(id: &str, args: &str, raw_text: &str) -> ParsedToolCall {
    // Python raises its other errors (an integer too long, too deep) past the cookbook's
    // `except JSONDecodeError`; here they leave the call unparsed the same way.
    if let Err(e) = super::py_json::loads(args) {
        return ParsedToolCall::Unparsed(UnparsedToolCall {
            raw_text: raw_text.to_owned(),
            error: format!("Invalid JSON: {}", e.message()),
        });
    }
    let name_part = id.split(':').next().unwrap_or(id);
    let name = name_part.split_once('.').map_or(name_part, |(_, n)| n);
    ParsedToolCall::Parsed(ToolCall {
        id: (!id.is_empty()).then(|| id.to_owned()),
        name: name.to_owned(),
        arguments: args.to_owned(),
    })
}

/// `_detect_dangling_tool_block`: the first of the section markers (either spelling) and
/// the call marker that is opened more often than closed.
fn dangling_tool_block(content: &str) -> Option<UnparsedToolCall> {
    SECTIONS
        .iter()
        .chain([&(CALL_BEGIN, CALL_END)])
        .find_map(|(open, close)| detect_unterminated_tool_block(content, open, close))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_ids_match_the_regex() {
        assert_eq!(tool_id("functions.get:0"), Some("functions.get:0"));
        assert_eq!(tool_id(" \n f:12 "), Some("f:12"));
        assert_eq!(tool_id(" :3"), Some(":3"));
        assert_eq!(tool_id(":3"), None);
        assert_eq!(tool_id("f:"), None);
        assert_eq!(tool_id("f: 3"), None);
        assert_eq!(tool_id("f3"), None);
        assert_eq!(tool_id("a:1:2"), Some("a:1:2"));
    }

    #[test]
    fn sections_and_calls_parse_like_the_regexes() {
        let content = format!(
            "hi{CALLS_BEGIN}{CALL_BEGIN} functions.get_weather:0 {CALL_ARGS} {{\"c\": 1}} \
             {CALL_END}{CALL_BEGIN}bad{CALL_ARGS}{{}}{CALL_END}{CALL_BEGIN}f:1{CALL_ARGS}nope\
             {CALL_END}{CALLS_END}tail"
        );
        let (text, section) = split_tool_calls_section(&content);
        assert_eq!(text, "hi");
        let calls = parse_tool_calls_section(section.expect("a section"));
        assert_eq!(calls.len(), 2);
        assert_eq!(
            calls[0],
            ParsedToolCall::Parsed(ToolCall {
                id: Some("functions.get_weather:0".into()),
                name: "get_weather".into(),
                arguments: "{\"c\": 1}".into(),
            })
        );
        assert!(matches!(&calls[1], ParsedToolCall::Unparsed(u)
            if u.raw_text == format!("{CALL_BEGIN}f:1{CALL_ARGS}nope{CALL_END}")));
    }

    #[test]
    fn the_default_system_message_goes_after_tool_declare() {
        let roles = |ms: &[Message]| -> Vec<String> {
            ensure_system_message(ms)
                .iter()
                .map(|m| m.role.clone())
                .collect()
        };
        let m = |r: &str| Message::new(r, "");
        assert_eq!(roles(&[]), ["system"]);
        assert_eq!(roles(&[m("user")]), ["system", "user"]);
        assert_eq!(
            roles(&[m("tool_declare"), m("user")]),
            ["tool_declare", "system", "user"]
        );
        assert_eq!(
            roles(&[m("tool_declare"), m("system")]),
            ["tool_declare", "system"]
        );
        assert_eq!(roles(&[m("system"), m("user")]), ["system", "user"]);
    }
}
