//! `gpt_oss_*` (cookbook `renderers/gpt_oss.py`): OpenAI's Harmony format,
//! `<|start|>role<|channel|>channel<|message|>content<|end|>` with no newlines between
//! messages. An assistant turn writes its reasoning to the `analysis` channel, tool calls
//! (`to=functions.name`) to `commentary` and its answer to `final`; the last assistant
//! message ends with `<|return|>`, a tool call with `<|call|>`, everything else with
//! `<|end|>`. The `*_reasoning` names prepend OpenAI's system prompt (with the current
//! date and the reasoning effort) to every conversation; tools are declared in a developer
//! message as TypeScript-like types built from their JSON schemas.

use std::borrow::Cow;

use serde_json::Value as Json;

use super::base::{
    decode, default_build_generation_prompt, default_build_supervised_example, encode, json_dumps,
    py_is_space, py_str, py_strip, py_truthy, renderer_error, single_token, text_chunk,
    ChatRenderer, RenderContext, RenderedMessage, StopSequences, Supervised, Termination,
    TrainOnWhat, R, UNTERMINATED_TOOL_BLOCK_ERROR,
};
use super::message::{Message, Part, ToolCall, UnparsedToolCall};
use super::py_json;
use super::RendererOptions;
use tinker_core::types::{InputError, ModelInput};
use tinker_tokenizer::{Tokenizer, TokenizerError};

pub(super) fn by_name(name: &str, opts: &RendererOptions) -> Option<Box<dyn ChatRenderer>> {
    // get_renderer: no system prompt, or the system prompt with one reasoning effort
    // (`use_system_prompt` is true exactly when an effort is given).
    let reasoning_effort = match name {
        "gpt_oss_no_sysprompt" => None,
        "gpt_oss_low_reasoning" => Some("low"),
        "gpt_oss_medium_reasoning" => Some("medium"),
        "gpt_oss_high_reasoning" => Some("high"),
        _ => return None,
    };
    Some(Box::new(GptOss {
        reasoning_effort,
        current_date: opts.current_date.clone(),
    }))
}

/// The role of OpenAI's own system prompt: rendered as `system`, while a caller's `system`
/// message becomes `developer` (`_INTERNAL_SYSTEM_ROLE`).
const INTERNAL_SYSTEM_ROLE: &str = "_gptoss_internal_system";

/// `GptOssRenderer`.
pub struct GptOss {
    /// The effort named in the system prompt; `None`: no system prompt.
    reasoning_effort: Option<&'static str>,
    /// The date written into the system prompt; `None`: today's.
    current_date: Option<String>,
}

impl GptOss {
    /// `_get_system_message`: OpenAI's system prompt, when configured.
    fn system_message(&self) -> Option<Message> {
        let effort = self.reasoning_effort?;
        let date = self.current_date.clone().unwrap_or_else(today);
        Some(Message::new(
            INTERNAL_SYSTEM_ROLE,
            format!(
                "You are ChatGPT, a large language model trained by OpenAI.\n\
                 Knowledge cutoff: 2024-06\n\
                 Current date: {date}\n\n\
                 Reasoning: {effort}\n\n\
                 # Valid channels: analysis, commentary, final. Channel must be included for \
                 every message."
            ),
        ))
    }

    /// The conversation with the system prompt in front, when configured.
    fn with_system<'a>(&self, messages: &'a [Message]) -> Cow<'a, [Message]> {
        match self.system_message() {
            Some(sys) => Cow::Owned(
                std::iter::once(sys)
                    .chain(messages.iter().cloned())
                    .collect(),
            ),
            None => Cow::Borrowed(messages),
        }
    }
}

/// Today's date as Python's `datetime.now().strftime("%Y-%m-%d")` (in the browser and
/// workers: the local date, as the JS layer passes; natively: the UTC date).
fn today() -> String {
    #[cfg(target_arch = "wasm32")]
    {
        let now = js_sys::Date::new_0();
        format!(
            "{:04}-{:02}-{:02}",
            now.get_full_year(),
            now.get_month() + 1,
            now.get_date()
        )
    }
    #[cfg(not(target_arch = "wasm32"))]
    {
        let secs = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        civil_date(secs / 86_400)
    }
}

/// `YYYY-MM-DD` of a day counted from 1970-01-01 (Howard Hinnant's `civil_from_days`).
#[cfg(not(target_arch = "wasm32"))]
fn civil_date(days: u64) -> String {
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + u64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}")
}

/// `ensure_text(message["content"])`.
fn text_of(message: &Message) -> R<&str> {
    message.content.ensure_text().map_err(renderer_error)
}

/// One message's header and output, each encoded as one chunk.
fn rendered(tok: &Tokenizer, header: &str, output: &str) -> R<RenderedMessage> {
    Ok(RenderedMessage {
        header: Some(encode(tok, header)?),
        output: vec![text_chunk(encode(tok, output)?)],
        stop_overlap: None,
    })
}

/// The assistant's channels: reasoning in `analysis`; tool calls in `commentary` (text
/// beside them as a commentary preamble), else the text in `final`, ended by `<|return|>`
/// when it is the last message and `<|end|>` otherwise (a call ends with `<|call|>`).
fn assistant_output(message: &Message, is_last: bool) -> String {
    let parts = message.content.to_parts();
    let joined = |want_thinking: bool| -> String {
        parts
            .iter()
            .filter_map(|p| match p {
                Part::Text(t) if !want_thinking => Some(t.as_str()),
                Part::Thinking(t) if want_thinking => Some(t.as_str()),
                _ => None,
            })
            .collect()
    };
    let (text, thinking) = (joined(false), joined(true));
    let calls = message.tool_calls.as_deref().unwrap_or_default();
    let mut out = String::new();
    if !thinking.is_empty() {
        out += &format!("<|channel|>analysis<|message|>{thinking}<|end|><|start|>assistant");
    }
    if calls.is_empty() {
        out += &format!("<|channel|>final<|message|>{text}");
        out += if is_last { "<|return|>" } else { "<|end|>" };
    } else {
        if !text.is_empty() {
            out += &format!("<|channel|>commentary<|message|>{text}<|end|><|start|>assistant");
        }
        out += &render_tool_calls(calls);
    }
    out
}

/// `_render_tool_calls`: one commentary message per call, each ended by `<|call|>`.
fn render_tool_calls(calls: &[ToolCall]) -> String {
    calls
        .iter()
        .map(|c| {
            format!(
                " to=functions.{}<|channel|>commentary <|constrain|>json<|message|>{}<|call|>",
                c.name, c.arguments
            )
        })
        .collect::<Vec<_>>()
        .join("<|start|>assistant")
}

/// `_render_tool_result_message`: `<|start|>functions.name to=assistant` then the result in
/// the commentary channel. The name comes from the message's `name` (the cookbook warns
/// and writes `functions.unknown` without one).
fn render_tool_result(tok: &Tokenizer, message: &Message) -> R<RenderedMessage> {
    let name = match message.name.as_deref() {
        None | Some("") => "unknown",
        Some(n) => n,
    };
    let qualified = if name.starts_with("functions.") {
        name.to_owned()
    } else {
        format!("functions.{name}")
    };
    let content = text_of(message)?;
    rendered(
        tok,
        &format!("<|start|>{qualified} to=assistant"),
        &format!("<|channel|>commentary<|message|>{content}<|end|>"),
    )
}

impl ChatRenderer for GptOss {
    fn stop_sequences(&self, tok: &Tokenizer) -> R<StopSequences> {
        Ok(StopSequences::Tokens(vec![
            single_token(tok, "<|return|>")?,
            single_token(tok, "<|call|>")?,
        ]))
    }

    fn render_message(
        &self,
        tok: &Tokenizer,
        message: &Message,
        ctx: &RenderContext<'_>,
    ) -> R<RenderedMessage> {
        if message.role == "tool" {
            return render_tool_result(tok, message);
        }
        // A caller's system message is a developer message (as the HF template does).
        let role = match message.role.as_str() {
            INTERNAL_SYSTEM_ROLE => "system",
            "system" => "developer",
            other => other,
        };
        let output = match message.role.as_str() {
            "assistant" => assistant_output(message, ctx.is_last),
            "system" => format!(
                "<|message|># Instructions\n\n{}\n\n<|end|>",
                text_of(message)?
            ),
            _ => format!("<|message|>{}<|end|>", text_of(message)?),
        };
        rendered(tok, &format!("<|start|>{role}"), &output)
    }

    fn build_generation_prompt(
        &self,
        tok: &Tokenizer,
        messages: &[Message],
        role: &str,
        prefill: Option<&str>,
    ) -> R<ModelInput> {
        default_build_generation_prompt(self, tok, &self.with_system(messages), role, prefill)
    }

    fn build_supervised_example(
        &self,
        tok: &Tokenizer,
        messages: &[Message],
        train_on: TrainOnWhat,
    ) -> R<Supervised> {
        // As in the cookbook, the base method's check against the generation prompt calls
        // build_generation_prompt on the already-prefixed messages, which prefixes them
        // again: with a system prompt that check never matches and leaves the weights.
        default_build_supervised_example(self, tok, &self.with_system(messages), train_on)
    }

    fn parse_response(&self, tok: &Tokenizer, response: &[u32]) -> R<(Message, Termination)> {
        let call = single_token(tok, "<|call|>")?;
        let ret = single_token(tok, "<|return|>")?;
        let count = |t: u32| response.iter().filter(|&&x| x == t).count();
        let (calls, returns) = (count(call), count(ret));
        if calls == 0 && returns == 0 {
            let text = decode(tok, response);
            return Ok((Message::new("assistant", text), Termination::Malformed));
        }
        for (n, name) in [(calls, "<|call|>"), (returns, "<|return|>")] {
            if n > 1 {
                return Err(renderer_error(format!(
                    "When parsing response, expected at most 1 {name} token, but got {n}. You \
                     probably are using the wrong stop tokens when sampling"
                )));
            }
        }
        let stop = response
            .iter()
            .position(|&t| t == call || t == ret)
            .unwrap_or(response.len());
        let text = decode(tok, &response[..stop]);
        Ok((parse_harmony(text)?, Termination::StopSequence))
    }

    fn conversation_prefix_with_tools(
        &self,
        _tok: &Tokenizer,
        tools: &[Json],
        system_prompt: &str,
    ) -> R<Vec<Message>> {
        conversation_prefix_with_tools(tools, system_prompt)
    }
}

// ---------------------------------------------------------------------------------------
// Parsing (`parse_response`'s `_parse_harmony_output`, `_parse_harmony_messages`,
// `_detect_dangling_tool_block`)

/// One Harmony message of a response.
struct HarmonyMessage<'a> {
    /// `<|channel|>X` in the header.
    channel: Option<&'a str>,
    /// `to=X` in the header.
    recipient: Option<&'a str>,
    /// Between `<|message|>` and the end token.
    body: &'a str,
    /// The header through the end token.
    raw: &'a str,
}

/// The assistant message of a decoded response (before its stop token): thinking and text
/// parts, tool calls, and unparsable or dangling calls; plain text when no part was found.
fn parse_harmony(text: String) -> R<Message> {
    let mut parts = Vec::new();
    let mut calls = Vec::new();
    let mut unparsed = Vec::new();
    for m in harmony_messages(&text) {
        if py_strip(m.body).is_empty() {
            continue;
        }
        if let Some(name) = m.recipient.and_then(|r| r.strip_prefix("functions.")) {
            match py_json_error(m.body)? {
                None => calls.push(ToolCall {
                    id: None,
                    name: name.to_owned(),
                    arguments: py_strip(m.body).to_owned(),
                }),
                Some(e) => unparsed.push(UnparsedToolCall {
                    raw_text: m.raw.to_owned(),
                    error: format!("Invalid JSON: {e}"),
                }),
            }
            continue;
        }
        match m.channel {
            Some("analysis") => parts.push(Part::Thinking(m.body.to_owned())),
            Some("final" | "commentary") => parts.push(Part::Text(m.body.to_owned())),
            _ => {}
        }
    }
    // A `to=functions.` header that produced neither a call nor an unparsed call.
    if text.matches("to=functions.").count() > calls.len() + unparsed.len() {
        let from = text.rfind("<|start|>").unwrap_or(0);
        unparsed.push(UnparsedToolCall {
            raw_text: text[from..].to_owned(),
            error: format!(
                "{UNTERMINATED_TOOL_BLOCK_ERROR}: 'to=functions.' tool-call header without a \
                 parsable arguments payload"
            ),
        });
    }
    let mut message = if parts.is_empty() {
        Message::new("assistant", text)
    } else {
        Message::with_parts("assistant", parts)
    };
    if !calls.is_empty() {
        message.tool_calls = Some(calls);
    }
    if !unparsed.is_empty() {
        message.unparsed_tool_calls = Some(unparsed);
    }
    Ok(message)
}

/// `_parse_harmony_messages`: each `<|message|>` with the header before it (from the last
/// `<|start|>` since the previous message) and its body up to the first end token.
fn harmony_messages(content: &str) -> Vec<HarmonyMessage<'_>> {
    const MESSAGE: &str = "<|message|>";
    let mut out = Vec::new();
    let mut idx = 0;
    while let Some(at) = content[idx..].find(MESSAGE) {
        let message_idx = idx + at;
        let header_start = content[idx..message_idx]
            .rfind("<|start|>")
            .map_or(idx, |p| idx + p);
        let header = &content[header_start..message_idx];
        let body_start = message_idx + MESSAGE.len();
        let (end_idx, end_len) = ["<|end|>", "<|call|>", "<|return|>"]
            .iter()
            .filter_map(|t| {
                content[body_start..]
                    .find(t)
                    .map(|p| (body_start + p, t.len()))
            })
            .min()
            .unwrap_or((content.len(), 0));
        out.push(HarmonyMessage {
            channel: header_field(header, "<|channel|>"),
            recipient: header_field(header, "to="),
            body: &content[body_start..end_idx],
            raw: &content[header_start..end_idx + end_len],
        });
        idx = end_idx + end_len;
    }
    out
}

/// The regex `prefix([^\s<]+)`'s first match in `header` (Python's `re.search`).
fn header_field<'a>(header: &'a str, prefix: &str) -> Option<&'a str> {
    header.match_indices(prefix).find_map(|(at, _)| {
        let rest = &header[at + prefix.len()..];
        let len = rest
            .find(|c: char| c == '<' || py_is_space(c))
            .unwrap_or(rest.len());
        (len > 0).then(|| &rest[..len])
    })
}

/// `None` when `json.loads(s)` succeeds, else its `JSONDecodeError` text. Its other errors
/// (an integer over Python's digit limit, nesting past the recursion limit), which the
/// cookbook does not catch, are errors.
fn py_json_error(s: &str) -> R<Option<String>> {
    // json.loads refuses a leading BOM before decoding (shared py_json::loads does not).
    if s.starts_with('\u{feff}') {
        return Ok(Some(
            "Unexpected UTF-8 BOM (decode using utf-8-sig): line 1 column 1 (char 0)".into(),
        ));
    }
    match py_json::loads(s) {
        Ok(_) => Ok(None),
        Err(py_json::Error::Decode(e)) => Ok(Some(e)),
        Err(e) => Err(renderer_error(e.message())),
    }
}

// ---------------------------------------------------------------------------------------
// Tool declarations (`create_conversation_prefix_with_tools` and the TypeScript
// formatting helpers). Tool specs are JSON as Python's `json.loads` gives them; where the
// cookbook's code would raise on a value of the wrong type (`AttributeError`, `TypeError`,
// `KeyError`), this is an error naming the field.

/// `create_conversation_prefix_with_tools`: with tools, a system message routing calls to
/// the commentary channel; then a developer message with the instructions and the tools
/// as a TypeScript `functions` namespace.
fn conversation_prefix_with_tools(tools: &[Json], system_prompt: &str) -> R<Vec<Message>> {
    let mut messages = Vec::new();
    if !tools.is_empty() {
        messages.push(Message::new(
            INTERNAL_SYSTEM_ROLE,
            "Calls to these tools must go to the commentary channel: 'functions'.",
        ));
    }
    let mut content = Vec::new();
    if !system_prompt.is_empty() {
        content.push(format!("# Instructions\n\n{system_prompt}"));
    }
    if !tools.is_empty() {
        let defs = tools
            .iter()
            .enumerate()
            .map(|(i, t)| tool_definition(t, &format!("tools[{i}]")))
            .collect::<R<Vec<_>>>()?;
        content.push(format!(
            "# Tools\n\n## functions\n\nnamespace functions {{\n\n{}\n\n}} // namespace functions",
            defs.join("\n\n")
        ));
    }
    if !content.is_empty() {
        messages.push(Message::new("developer", content.join("\n\n")));
    }
    Ok(messages)
}

/// A wrong-typed value in a tool spec.
fn spec_error(at: &str, what: &str) -> TokenizerError {
    InputError::type_error(at, what).into()
}

/// The object a schema must be (Python calls `.get` on it).
fn object<'a>(v: &'a Json, at: &str) -> R<&'a serde_json::Map<String, Json>> {
    v.as_object()
        .ok_or_else(|| spec_error(at, "must be an object (a JSON schema)"))
}

/// `o.get(key)`'s truthiness.
fn get_truthy<'a>(o: &'a serde_json::Map<String, Json>, key: &str) -> Option<&'a Json> {
    o.get(key).filter(|v| py_truthy(v))
}

/// What Python's `for x in v` yields: a list's items, a string's characters, an object's
/// keys; other values are not iterable.
fn py_iter(v: &Json, at: &str) -> R<Vec<Json>> {
    match v {
        Json::Array(a) => Ok(a.clone()),
        Json::String(s) => Ok(s.chars().map(|c| Json::String(c.to_string())).collect()),
        Json::Object(o) => Ok(o.keys().map(|k| Json::String(k.clone())).collect()),
        _ => Err(spec_error(at, "must be a list")),
    }
}

/// `set(schema.get("required", []))`: the names (hashable items only).
fn required_names(o: &serde_json::Map<String, Json>, at: &str) -> R<Vec<Json>> {
    let Some(v) = o.get("required") else {
        return Ok(Vec::new());
    };
    let items = py_iter(v, &format!("{at}.required"))?;
    if items.iter().any(|x| x.is_array() || x.is_object()) {
        return Err(spec_error(
            &format!("{at}.required"),
            "must list property names",
        ));
    }
    Ok(items)
}

/// `"" if name in required else "?"`.
fn optional_mark(name: &str, required: &[Json]) -> &'static str {
    if required.iter().any(|r| r.as_str() == Some(name)) {
        ""
    } else {
        "?"
    }
}

/// `_format_tool_definition`: `// description` then `type name = (params) => any;`.
fn tool_definition(tool: &Json, at: &str) -> R<String> {
    let t = object(tool, at)?;
    let mut lines = Vec::new();
    if let Some(d) = get_truthy(t, "description") {
        lines.push(format!("// {}", py_str(d)));
    }
    let name = t
        .get("name")
        .ok_or_else(|| spec_error(&format!("{at}.name"), "is required"))?;
    let empty = Json::Object(serde_json::Map::new());
    let params = get_truthy(t, "parameters").unwrap_or(&empty);
    let block = parameters_block(params, &format!("{at}.parameters"))?;
    lines.push(format!("type {} = {block} => any;", py_str(name)));
    Ok(lines.join("\n"))
}

/// `_format_parameters_block`: `()` without properties, else one line per property with
/// its comments, TypeScript type and default.
fn parameters_block(schema: &Json, at: &str) -> R<String> {
    let s = object(schema, at)?;
    let props = match get_truthy(s, "properties") {
        Some(p) if s.get("type").and_then(Json::as_str) == Some("object") => p,
        _ => return Ok("()".into()),
    };
    let mut lines = Vec::new();
    let mut header = String::from("(_:");
    if let Some(d) = get_truthy(s, "description") {
        header += &format!(" // {}", py_str(d));
    }
    lines.push(header);
    lines.push("{".into());
    let props = object(props, &format!("{at}.properties"))?;
    let required = required_names(s, at)?;
    for (name, prop) in props {
        let pat = format!("{at}.properties.{name}");
        for comment in schema_comments(prop, &pat)? {
            lines.push(format!("// {comment}"));
        }
        let ty = ts_type(prop, &pat)?;
        let default = match object(prop, &pat)?.get("default") {
            Some(d) => format!(" // default: {}", json_dumps(d)),
            None => String::new(),
        };
        lines.push(format!(
            "{name}{}: {ty},{default}",
            optional_mark(name, &required)
        ));
    }
    lines.push("})".into());
    Ok(lines.join("\n"))
}

/// `_schema_comments`: the title (and a blank line), the description, the examples.
fn schema_comments(schema: &Json, at: &str) -> R<Vec<String>> {
    let s = object(schema, at)?;
    let mut out = Vec::new();
    if let Some(t) = get_truthy(s, "title") {
        out.push(py_str(t));
        out.push(String::new());
    }
    if let Some(d) = get_truthy(s, "description") {
        out.push(py_str(d));
    }
    if let Some(ex) = get_truthy(s, "examples") {
        out.push("Examples:".into());
        for e in py_iter(ex, &format!("{at}.examples"))? {
            out.push(format!("- {}", json_dumps(&e)));
        }
    }
    Ok(out)
}

/// `_json_type_to_typescript`: one schema as a TypeScript type.
fn ts_type(schema: &Json, at: &str) -> R<String> {
    let s = object(schema, at)?;
    for key in ["oneOf", "anyOf"] {
        if let Some(alts) = s.get(key) {
            let at = format!("{at}.{key}");
            let alts = py_iter(alts, &at)?;
            let types = alts
                .iter()
                .enumerate()
                .map(|(i, a)| ts_type(a, &format!("{at}[{i}]")))
                .collect::<R<Vec<_>>>()?;
            return Ok(types.join(" | "));
        }
    }
    let ty = s.get("type").unwrap_or(&Json::Null);
    let base = match ty {
        Json::Array(types) => {
            let types = types
                .iter()
                .map(|t| ts_type(&serde_json::json!({ "type": t }), at))
                .collect::<R<Vec<_>>>()?;
            return Ok(types.join(" | "));
        }
        Json::String(t) if t == "string" => match s.get("enum") {
            Some(e) => {
                let values = py_iter(e, &format!("{at}.enum"))?;
                return Ok(values
                    .iter()
                    .map(json_dumps)
                    .collect::<Vec<_>>()
                    .join(" | "));
            }
            None => "string".to_owned(),
        },
        Json::String(t) if t == "number" || t == "integer" => "number".to_owned(),
        Json::String(t) if t == "boolean" => "boolean".to_owned(),
        Json::String(t) if t == "array" => {
            let empty = Json::Object(serde_json::Map::new());
            let items = s.get("items").unwrap_or(&empty);
            format!("{}[]", ts_type(items, &format!("{at}.items"))?)
        }
        Json::String(t) if t == "object" => object_type(s, at)?,
        // No type (`"any"`) or an unknown one.
        _ => "any".to_owned(),
    };
    Ok(match get_truthy(s, "nullable") {
        Some(_) => format!("{base} | null"),
        None => base,
    })
}

/// `_json_schema_to_typescript` for an object schema: `{ a: T, b?: U }`.
fn object_type(s: &serde_json::Map<String, Json>, at: &str) -> R<String> {
    let empty = serde_json::Map::new();
    let props = match s.get("properties") {
        Some(p) => object(p, &format!("{at}.properties"))?,
        None => &empty,
    };
    let required = required_names(s, at)?;
    let fields = props
        .iter()
        .map(|(name, prop)| {
            let ty = ts_type(prop, &format!("{at}.properties.{name}"))?;
            Ok(format!("{name}{}: {ty}", optional_mark(name, &required)))
        })
        .collect::<R<Vec<_>>>()?;
    Ok(format!("{{ {} }}", fields.join(", ")))
}
