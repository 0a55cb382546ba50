//! The renderer machinery of tinker-cookbook's `renderers/base.py`, in Rust.
//!
//! A family implements [`ChatRenderer`]: how one message renders
//! ([`ChatRenderer::render_message`]: a header, output chunks and an optional stop overlap),
//! its stop sequences and how a sampled response parses back. The trait's default methods
//! are the cookbook's base-class methods (`build_generation_prompt`,
//! `build_supervised_example(s)`, `_get_generation_suffix`, `_output_is_trained`, …); a
//! family overrides exactly what its Python class overrides. Each default also exists as a
//! free function (`default_*`), so an override can call the base version, as Python's
//! `super()` does.
//!
//! The free functions at the end are the cookbook's shared helpers
//! (`parse_response_for_stop_token`, `parse_content_blocks`, `parse_think_blocks`,
//! `detect_unterminated_tool_block`, …), with the same behaviour.

use serde_json::Value as Json;

use super::message::{Content, Message, Part, ToolCall, UnparsedToolCall};
use super::py_json;
use tinker_core::types::{InputError, ModelInput, ModelInputChunk};
use tinker_tokenizer::{Tokenizer, TokenizerError};

pub use super::message::R;

/// The cookbook's `RendererError`: the conversation cannot be rendered as asked.
pub fn renderer_error(msg: impl Into<String>) -> TokenizerError {
    TokenizerError::Renderer(msg.into())
}

/// How a sampled response ended (`ParseTermination`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Termination {
    /// The renderer's stop signal ended it.
    StopSequence,
    /// The model's EOS token ended it (accepted by some renderers).
    Eos,
    /// It did not end cleanly (truncated, several stop signals, …).
    Malformed,
}

impl Termination {
    /// The cookbook's value (`"stop_sequence"`, `"eos"`, `"malformed"`).
    pub fn as_str(self) -> &'static str {
        match self {
            Termination::StopSequence => "stop_sequence",
            Termination::Eos => "eos",
            Termination::Malformed => "malformed",
        }
    }
}

/// Which tokens of a conversation get training weight (`TrainOnWhat`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TrainOnWhat {
    /// Only the last message, if it is the assistant's.
    LastAssistantMessage,
    /// The assistant messages of the last turn (after the last user message).
    LastAssistantTurn,
    /// Every assistant message.
    AllAssistantMessages,
    /// Every message's output (not headers).
    AllMessages,
    /// Everything, headers included.
    AllTokens,
    /// User and system messages.
    AllUserAndSystemMessages,
    /// Each message's `trainable` flag (required on every message).
    Customized,
}

impl TrainOnWhat {
    /// The names, as in tinker-cookbook.
    pub const NAMES: [&'static str; 7] = [
        "last_assistant_message",
        "last_assistant_turn",
        "all_assistant_messages",
        "all_messages",
        "all_tokens",
        "all_user_and_system_messages",
        "customized",
    ];

    /// Parses a cookbook name; `field` names the option in errors.
    pub fn parse(s: &str, field: &str) -> Result<TrainOnWhat, InputError> {
        Ok(match s {
            "last_assistant_message" => TrainOnWhat::LastAssistantMessage,
            "last_assistant_turn" => TrainOnWhat::LastAssistantTurn,
            "all_assistant_messages" => TrainOnWhat::AllAssistantMessages,
            "all_messages" => TrainOnWhat::AllMessages,
            "all_tokens" => TrainOnWhat::AllTokens,
            "all_user_and_system_messages" => TrainOnWhat::AllUserAndSystemMessages,
            "customized" => TrainOnWhat::Customized,
            _ => {
                return Err(InputError::range_error(
                    field,
                    format!(
                        "unknown value {s:?}; expected one of {}",
                        Self::NAMES.join(", ")
                    ),
                ))
            }
        })
    }

    /// The cookbook name.
    pub fn as_str(self) -> &'static str {
        Self::NAMES[self as usize]
    }
}

/// Stop sequences for sampling: token ids, or strings (`role_colon`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StopSequences {
    /// Token ids.
    Tokens(Vec<u32>),
    /// Strings.
    Strings(Vec<String>),
}

/// Where a message sits in the conversation (`RenderContext`).
#[derive(Debug, Clone, Copy)]
pub struct RenderContext<'a> {
    /// Index of the message (0-based).
    pub idx: usize,
    /// Whether it is the last message.
    pub is_last: bool,
    /// The previous message.
    pub prev_message: Option<&'a Message>,
    /// The next message.
    pub next_message: Option<&'a Message>,
    /// Index of the last user message, -1 without one.
    pub last_user_index: isize,
    /// Whether the message belongs to the turn the model is asked to produce.
    pub in_last_assistant_turn: bool,
}

/// A message split for loss masking (`RenderedMessage`).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RenderedMessage {
    /// What the model generates for this turn (trainable).
    pub output: Vec<ModelInputChunk>,
    /// Role markers that introduce the turn.
    pub header: Option<Vec<u32>>,
    /// Tokens shared by the stop sequence and the next header (`role_colon`'s `User:`),
    /// appended only after the last message of a supervised example.
    pub stop_overlap: Option<Vec<u32>>,
}

/// A model input with a weight per position (`(ModelInput, weights)`).
#[derive(Debug, Clone, PartialEq)]
pub struct Supervised {
    /// The input (text and image chunks).
    pub model_input: ModelInput,
    /// One weight per context position.
    pub weights: Vec<f32>,
}

/// A text chunk.
pub fn text_chunk(tokens: Vec<u32>) -> ModelInputChunk {
    ModelInputChunk::EncodedText { tokens }
}

/// A chunk's length in context positions (an image's `expected_tokens`).
pub fn chunk_len(c: &ModelInputChunk) -> R<usize> {
    c.length().map_err(TokenizerError::Input)
}

/// `tokenizer.encode(s, add_special_tokens=False)`.
pub fn encode(tok: &Tokenizer, s: &str) -> R<Vec<u32>> {
    tok.encode(s, false)
}

/// The id of a string that must be exactly one token (`(token,) = tokenizer.encode(s)`).
pub fn single_token(tok: &Tokenizer, s: &str) -> R<u32> {
    match tok.encode(s, false)?.as_slice() {
        [id] => Ok(*id),
        other => Err(renderer_error(format!(
            "{s} should be one token in this tokenizer, got {} ids: is this the right renderer for it?",
            other.len()
        ))),
    }
}

/// `str(tokenizer.decode(ids))`, as transformers decodes (special tokens kept).
pub fn decode(tok: &Tokenizer, ids: &[u32]) -> String {
    tok.decode(ids, false)
}

/// A renderer as a trait object: the shared defaults below take `&dyn ChatRenderer`, so
/// each is compiled once, not once per family (about 6 KB of the wasm module's gzip).
pub trait AsDynRenderer {
    /// `self` as a trait object.
    fn as_dyn(&self) -> &dyn ChatRenderer;
}

impl<T: ChatRenderer> AsDynRenderer for T {
    fn as_dyn(&self) -> &dyn ChatRenderer {
        self
    }
}

/// A conversation renderer: one family's format (a cookbook `Renderer` subclass).
pub trait ChatRenderer: AsDynRenderer {
    /// Tokens before the first message (`_bos_tokens`).
    fn bos_tokens(&self, _tok: &Tokenizer) -> R<Vec<u32>> {
        Ok(Vec::new())
    }

    /// Stop sequences for sampling (`get_stop_sequences`).
    fn stop_sequences(&self, tok: &Tokenizer) -> R<StopSequences>;

    /// Renders one message (`render_message`).
    fn render_message(
        &self,
        tok: &Tokenizer,
        message: &Message,
        ctx: &RenderContext<'_>,
    ) -> R<RenderedMessage>;

    /// Parses sampled tokens back into a message (`parse_response`).
    fn parse_response(&self, tok: &Tokenizer, response: &[u32]) -> R<(Message, Termination)>;

    /// Whether each generation prompt is a prefix of the next (`has_extension_property`).
    fn has_extension_property(&self) -> bool {
        false
    }

    /// Whether the generation prompt closes the think block (`disables_thinking`).
    fn disables_thinking(&self) -> bool {
        false
    }

    /// The default `train_on_what` of `build_supervised_example` (`multi` false) and of
    /// `build_supervised_examples` (`multi` true).
    fn default_train_on(&self, multi: bool) -> TrainOnWhat {
        if multi {
            TrainOnWhat::LastAssistantTurn
        } else {
            TrainOnWhat::LastAssistantMessage
        }
    }

    /// Tokens appended to prompt the model for `role` (`_get_generation_suffix`).
    fn generation_suffix(
        &self,
        tok: &Tokenizer,
        role: &str,
        ctx: &RenderContext<'_>,
    ) -> R<Vec<u32>> {
        default_generation_suffix(self.as_dyn(), tok, role, ctx)
    }

    /// Whether a message's output carries loss (`_output_is_trained`).
    fn output_is_trained(
        &self,
        message: &Message,
        ctx: &RenderContext<'_>,
        train_on: TrainOnWhat,
    ) -> bool {
        default_output_is_trained(message, ctx, train_on)
    }

    /// Index of the first message of the produced turn (`_last_assistant_turn_start_index`).
    fn last_assistant_turn_start_index(&self, messages: &[Message]) -> usize {
        default_last_assistant_turn_start_index(messages)
    }

    /// Restores tokens the generation prompt prefilled before parsing
    /// (`_normalize_response_tokens`).
    fn normalize_response_tokens(&self, _tok: &Tokenizer, response: &[u32]) -> R<Vec<u32>> {
        Ok(response.to_vec())
    }

    /// Tokens for sampling the next `role` turn (`build_generation_prompt`).
    fn build_generation_prompt(
        &self,
        tok: &Tokenizer,
        messages: &[Message],
        role: &str,
        prefill: Option<&str>,
    ) -> R<ModelInput> {
        default_build_generation_prompt(self.as_dyn(), tok, messages, role, prefill)
    }

    /// Tokens and weights for supervised training (`build_supervised_example`).
    fn build_supervised_example(
        &self,
        tok: &Tokenizer,
        messages: &[Message],
        train_on: TrainOnWhat,
    ) -> R<Supervised> {
        default_build_supervised_example(self.as_dyn(), tok, messages, train_on)
    }

    /// One example per trained turn when the renderer lacks the extension property
    /// (`build_supervised_examples`).
    fn build_supervised_examples(
        &self,
        tok: &Tokenizer,
        messages: &[Message],
        train_on: TrainOnWhat,
    ) -> R<Vec<Supervised>> {
        default_build_supervised_examples(self.as_dyn(), tok, messages, train_on)
    }

    /// Messages declaring `tools` (JSON tool specs), to put before a conversation
    /// (`create_conversation_prefix_with_tools`).
    fn conversation_prefix_with_tools(
        &self,
        _tok: &Tokenizer,
        _tools: &[Json],
        _system_prompt: &str,
    ) -> R<Vec<Message>> {
        Err(renderer_error(
            "this renderer does not support tool calling",
        ))
    }
}

/// Index of the last user message, -1 without one.
pub fn last_user_index(messages: &[Message]) -> isize {
    messages
        .iter()
        .rposition(|m| m.role == "user")
        .map_or(-1, |i| i as isize)
}

/// The context of message `idx` of `messages`.
pub fn context_at<'a>(
    messages: &'a [Message],
    idx: usize,
    last_user: isize,
    turn_start: usize,
) -> RenderContext<'a> {
    RenderContext {
        idx,
        is_last: idx + 1 == messages.len(),
        prev_message: idx.checked_sub(1).map(|i| &messages[i]),
        next_message: messages.get(idx + 1),
        last_user_index: last_user,
        in_last_assistant_turn: idx >= turn_start,
    }
}

/// `Renderer._get_generation_suffix`: the header of an empty message of `role`.
pub fn default_generation_suffix(
    f: &dyn ChatRenderer,
    tok: &Tokenizer,
    role: &str,
    ctx: &RenderContext<'_>,
) -> R<Vec<u32>> {
    let rendered = f.render_message(tok, &Message::new(role, ""), ctx)?;
    Ok(rendered.header.unwrap_or_default())
}

/// `Renderer._output_is_trained`.
pub fn default_output_is_trained(
    message: &Message,
    ctx: &RenderContext<'_>,
    train_on: TrainOnWhat,
) -> bool {
    let is_assistant = message.role == "assistant";
    match train_on {
        TrainOnWhat::LastAssistantMessage => ctx.is_last && is_assistant,
        TrainOnWhat::LastAssistantTurn => is_assistant && ctx.in_last_assistant_turn,
        TrainOnWhat::AllAssistantMessages => is_assistant,
        TrainOnWhat::AllMessages | TrainOnWhat::AllTokens => true,
        TrainOnWhat::AllUserAndSystemMessages => message.role == "user" || message.role == "system",
        TrainOnWhat::Customized => message.trainable.unwrap_or(false),
    }
}

/// `Renderer._last_assistant_turn_start_index`: the message after the last user one.
pub fn default_last_assistant_turn_start_index(messages: &[Message]) -> usize {
    (last_user_index(messages) + 1) as usize
}

/// `Renderer.build_generation_prompt`.
pub fn default_build_generation_prompt(
    f: &dyn ChatRenderer,
    tok: &Tokenizer,
    messages: &[Message],
    role: &str,
    prefill: Option<&str>,
) -> R<ModelInput> {
    let mut chunks = Vec::new();
    let bos = f.bos_tokens(tok)?;
    if !bos.is_empty() {
        chunks.push(text_chunk(bos));
    }
    let last_user = last_user_index(messages);
    let turn_start = f.last_assistant_turn_start_index(messages);
    for idx in 0..messages.len() {
        let ctx = context_at(messages, idx, last_user, turn_start);
        let rendered = f
            .render_message(tok, &messages[idx], &ctx)
            .map_err(|e| within_message(e, idx))?;
        // Empty text chunks are skipped: the sampler rejects them.
        if let Some(h) = rendered.header.filter(|h| !h.is_empty()) {
            chunks.push(text_chunk(h));
        }
        chunks.extend(rendered.output.into_iter().filter(|c| !is_empty_text(c)));
    }
    let suffix_ctx = RenderContext {
        idx: messages.len(),
        is_last: true,
        prev_message: messages.last(),
        next_message: None,
        last_user_index: last_user,
        in_last_assistant_turn: true,
    };
    let suffix = f.generation_suffix(tok, role, &suffix_ctx)?;
    if !suffix.is_empty() {
        chunks.push(text_chunk(suffix));
    }
    if let Some(p) = prefill.filter(|p| !p.is_empty()) {
        chunks.push(text_chunk(encode(tok, p)?));
    }
    Ok(ModelInput { chunks })
}

fn is_empty_text(c: &ModelInputChunk) -> bool {
    matches!(c, ModelInputChunk::EncodedText { tokens } if tokens.is_empty())
}

/// Names the message an input error came from (`messages[3].content`).
pub fn within_message(e: TokenizerError, idx: usize) -> TokenizerError {
    match e {
        TokenizerError::Input(i) if !i.field.starts_with("messages") => {
            TokenizerError::Input(i.within(&format!("messages[{idx}]")))
        }
        other => other,
    }
}

/// Checks the `trainable` rule of `build_supervised_example`.
pub fn check_trainable(messages: &[Message], train_on: TrainOnWhat) -> R<()> {
    for (idx, m) in messages.iter().enumerate() {
        match (train_on == TrainOnWhat::Customized, m.trainable.is_some()) {
            (true, false) => {
                return Err(InputError::type_error(
                    format!("messages[{idx}].trainable"),
                    "is required on every message with train_on_what \"customized\"",
                )
                .into())
            }
            (false, true) => {
                return Err(InputError::type_error(
                    format!("messages[{idx}].trainable"),
                    "is only allowed with train_on_what \"customized\"",
                )
                .into())
            }
            _ => {}
        }
    }
    Ok(())
}

/// `Renderer.build_supervised_example`.
pub fn default_build_supervised_example(
    f: &dyn ChatRenderer,
    tok: &Tokenizer,
    messages: &[Message],
    train_on: TrainOnWhat,
) -> R<Supervised> {
    check_trainable(messages, train_on)?;
    let mut chunks = Vec::new();
    let mut weights = Vec::new();
    let mut push = |c: ModelInputChunk, w: f32, chunks: &mut Vec<ModelInputChunk>| -> R<()> {
        weights.resize(weights.len() + chunk_len(&c)?, w);
        chunks.push(c);
        Ok(())
    };
    let bos = f.bos_tokens(tok)?;
    if !bos.is_empty() {
        push(text_chunk(bos), 0.0, &mut chunks)?;
    }
    let last_user = last_user_index(messages);
    let turn_start =
        f.last_assistant_turn_start_index(&messages[..messages.len().saturating_sub(1)]);
    let header_w = if train_on == TrainOnWhat::AllTokens {
        1.0
    } else {
        0.0
    };
    for (idx, message) in messages.iter().enumerate() {
        let ctx = context_at(messages, idx, last_user, turn_start);
        let rendered = f
            .render_message(tok, message, &ctx)
            .map_err(|e| within_message(e, idx))?;
        if let Some(h) = rendered.header {
            push(text_chunk(h), header_w, &mut chunks)?;
        }
        let w = if f.output_is_trained(message, &ctx, train_on) {
            1.0
        } else {
            0.0
        };
        for c in rendered.output {
            push(c, w, &mut chunks)?;
        }
        if ctx.is_last {
            if let Some(s) = rendered.stop_overlap {
                push(text_chunk(s), w, &mut chunks)?;
            }
        }
    }
    let model_input = ModelInput { chunks };
    let weights =
        train_after_the_generation_prompt(f, tok, messages, train_on, &model_input, weights)?;
    Ok(Supervised {
        model_input,
        weights,
    })
}

/// `Renderer._first_trained_message_index`.
pub fn first_trained_message_index(messages: &[Message], train_on: TrainOnWhat) -> Option<usize> {
    let boundary = match train_on {
        TrainOnWhat::LastAssistantMessage => messages.len().checked_sub(1)?,
        TrainOnWhat::LastAssistantTurn => (last_user_index(messages) + 1) as usize,
        _ => return None,
    };
    (boundary < messages.len() && messages[boundary].role == "assistant").then_some(boundary)
}

/// `Renderer._train_after_the_generation_prompt`: no loss on what the generation prompt
/// would have supplied (a prefilled `<think>`).
pub fn train_after_the_generation_prompt(
    f: &dyn ChatRenderer,
    tok: &Tokenizer,
    messages: &[Message],
    train_on: TrainOnWhat,
    model_input: &ModelInput,
    mut weights: Vec<f32>,
) -> R<Vec<f32>> {
    let Some(boundary) = first_trained_message_index(messages, train_on) else {
        return Ok(weights);
    };
    let Ok(all) = model_input.to_ints() else {
        return Ok(weights);
    };
    let prompt = f
        .build_generation_prompt(tok, &messages[..boundary], "assistant", None)?
        .to_ints()
        .map_err(TokenizerError::Input)?;
    if !all.starts_with(&prompt) {
        if f.disables_thinking() {
            return Err(renderer_error(
                "this renderer has thinking turned off: its generation prompt closes the think \
                 block, which tells the model not to reason. This turn contains reasoning, so \
                 training on it would teach the model to reason anyway, after being told not to. \
                 Either use the thinking version of this renderer, or remove the reasoning from \
                 this turn.",
            ));
        }
        return Ok(weights);
    }
    for w in weights.iter_mut().take(prompt.len()) {
        *w = 0.0;
    }
    Ok(weights)
}

/// `Renderer.build_supervised_examples`.
pub fn default_build_supervised_examples(
    f: &dyn ChatRenderer,
    tok: &Tokenizer,
    messages: &[Message],
    train_on: TrainOnWhat,
) -> R<Vec<Supervised>> {
    if f.has_extension_property() {
        return Ok(vec![f.build_supervised_example(tok, messages, train_on)?]);
    }
    let candidates = match train_on {
        // Python reads `messages[-1]` here: an empty conversation raises IndexError.
        TrainOnWhat::LastAssistantMessage if messages.is_empty() => {
            return Err(renderer_error(
                "build_supervised_examples needs a message to train on: the conversation is empty",
            ))
        }
        TrainOnWhat::LastAssistantMessage => messages.len() - 1..messages.len(),
        TrainOnWhat::LastAssistantTurn => {
            f.last_assistant_turn_start_index(messages)..messages.len()
        }
        TrainOnWhat::AllAssistantMessages => 0..messages.len(),
        other => {
            return Err(renderer_error(format!(
                "build_supervised_examples cannot split {} for a renderer without the extension \
                 property: it weights messages that are not turns the model produces, so there \
                 is no prompt to end each example at.",
                other.as_str()
            )))
        }
    };
    candidates
        .filter(|&idx| messages[idx].role == "assistant")
        .map(|idx| {
            f.build_supervised_example(tok, &messages[..=idx], TrainOnWhat::LastAssistantMessage)
        })
        .collect()
}

// ---------------------------------------------------------------------------------------
// Shared parsing helpers

/// `parse_response_for_stop_token`: split on exactly zero or one stop token.
pub fn parse_response_for_stop_token(
    tok: &Tokenizer,
    response: &[u32],
    stop_token: u32,
) -> R<(Message, Termination)> {
    let count = response.iter().filter(|&&t| t == stop_token).count();
    match count {
        0 => Ok((
            Message::new("assistant", decode(tok, response)),
            Termination::Malformed,
        )),
        1 => {
            let at = response.iter().position(|&t| t == stop_token).unwrap_or(0);
            Ok((
                Message::new("assistant", decode(tok, &response[..at])),
                Termination::StopSequence,
            ))
        }
        n => Err(renderer_error(format!(
            "When parsing response, expected to split into 1 or 2 pieces using stop tokens, but \
             got {n}. You probably are using the wrong stop tokens when sampling"
        ))),
    }
}

/// A tool call as the model wrote it: parsed, or not.
#[derive(Debug, Clone, PartialEq)]
pub enum ParsedToolCall {
    /// Parsed.
    Parsed(ToolCall),
    /// Could not be parsed.
    Unparsed(UnparsedToolCall),
}

/// Splits parsed tool calls into `tool_calls` and `unparsed_tool_calls` of `message`
/// (each set only when non-empty, as the cookbook's renderers do).
pub fn attach_tool_calls(message: &mut Message, calls: Vec<ParsedToolCall>) {
    let mut parsed = Vec::new();
    let mut unparsed = Vec::new();
    for c in calls {
        match c {
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

/// Python's `json.loads` of a tool call's text ([`py_json::loads`]: its acceptance and
/// error messages), as a JSON value with keys in order. The one thing a JSON value cannot
/// hold, a `NaN` or infinite float, is refused with a message naming it; an integer past
/// 64 bits becomes the nearest float.
///
/// [`py_json::loads`]: tinker_tokenizer::py_json::loads
pub fn json_loads(s: &str) -> Result<Json, String> {
    let value = py_json::loads(s).map_err(|e| e.message().to_owned())?;
    value.to_json()
}

/// Python's `json.dumps(v)` (`ensure_ascii=True`, `", "` / `": "`).
pub fn json_dumps(v: &Json) -> String {
    py_json::dumps_json(v, (", ", ": "), true, None)
}

/// Python's `json.dumps(v, ensure_ascii=False)` and other styles: `seps` are the item
/// and key separators, `indent` as Python's.
pub fn json_dumps_with(
    v: &Json,
    seps: (&str, &str),
    ensure_ascii: bool,
    indent: Option<usize>,
) -> String {
    py_json::dumps_json(v, seps, ensure_ascii, indent)
}

/// `_parse_tool_call_json`: `{"name": str, "arguments": object, "id"?: str}`, read as
/// Python's `json.loads` reads it (its acceptance and error messages), with the
/// arguments written back by `json.dumps`.
pub fn parse_tool_call_json(text: &str, raw_text: &str) -> ParsedToolCall {
    use super::py_json::{self, Value as Py};
    let unparsed = |error: String| {
        ParsedToolCall::Unparsed(UnparsedToolCall {
            raw_text: raw_text.to_owned(),
            error,
        })
    };
    let fields = match py_json::loads(py_strip(text)) {
        Ok(Py::Object(fields)) => fields,
        Ok(_) => return unparsed("Tool call is not a JSON object".into()),
        Err(py_json::Error::Decode(e)) => return unparsed(format!("Invalid JSON: {e}")),
        // Python raises these past the cookbook's `except JSONDecodeError`.
        Err(e) => return unparsed(format!("Invalid JSON: {}", e.message())),
    };
    let get = |k: &str| fields.iter().find(|(key, _)| key == k).map(|(_, v)| v);
    let Some(Py::Str(name)) = get("name") else {
        return unparsed("Missing or invalid 'name' field".into());
    };
    let Some(args @ Py::Object(_)) = get("arguments") else {
        return unparsed("Missing or invalid 'arguments' field".into());
    };
    let id = match get("id") {
        Some(Py::Str(id)) => Some(id.clone()),
        _ => None,
    };
    ParsedToolCall::Parsed(ToolCall {
        id,
        name: name.clone(),
        arguments: py_json::dumps(args, true),
    })
}

/// `_tool_call_payload`: `{"name": …, "arguments": <parsed arguments>}` for `<tool_call>`.
pub fn tool_call_payload(call: &ToolCall) -> R<Json> {
    let args = json_loads(&call.arguments).map_err(|e| {
        renderer_error(format!(
            "tool call {:?} has arguments that are not valid JSON: {e}",
            call.name
        ))
    })?;
    let mut o = serde_json::Map::new();
    o.insert("name".into(), Json::String(call.name.clone()));
    o.insert("arguments".into(), args);
    Ok(Json::Object(o))
}

/// Python's truthiness of a JSON value (`json.loads`'s: `None`, `False`, zero and empty
/// strings, lists and dicts are false).
pub(super) fn py_truthy(v: &Json) -> bool {
    match v {
        Json::Null => false,
        Json::Bool(b) => *b,
        Json::Number(n) => n.as_f64().is_some_and(|x| x != 0.0),
        Json::String(s) => !s.is_empty(),
        Json::Array(a) => !a.is_empty(),
        Json::Object(o) => !o.is_empty(),
    }
}

/// Python's `str(v)` of a JSON-loaded value: a string as it is, anything else as its
/// `repr`.
pub(super) fn py_str(v: &Json) -> String {
    match v {
        Json::String(s) => s.clone(),
        other => py_repr(other),
    }
}

/// Python's `repr(v)` of a JSON-loaded value (`None`, `True`, `1.5`, `'a'`, `[1, 'b']`,
/// `{'k': None}`).
pub(super) fn py_repr(v: &Json) -> String {
    match v {
        Json::Null => "None".into(),
        Json::Bool(b) => if *b { "True" } else { "False" }.into(),
        Json::Number(n) => match n.as_f64() {
            Some(f) if n.is_f64() => tinker_support::json::fmt_py(f),
            _ => n.to_string(),
        },
        Json::String(s) => py_repr_str(s),
        Json::Array(a) => format!("[{}]", a.iter().map(py_repr).collect::<Vec<_>>().join(", ")),
        Json::Object(o) => format!(
            "{{{}}}",
            o.iter()
                .map(|(k, v)| format!("{}: {}", py_repr_str(k), py_repr(v)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// Python's `repr(str)`: single quotes unless the text has `'` and no `"`; backslash
/// escapes for the quote, `\\`, `\t`, `\n`, `\r`, and (`\xhh`, `\uhhhh`, `\Uhhhhhhhh`) for
/// characters `str.isprintable` refuses.
pub(super) fn py_repr_str(s: &str) -> String {
    use tinker_tokenizer::unicode::py_printable as printable;
    let quote = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::with_capacity(s.len() + 2);
    out.push(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if printable(c) => out.push(c),
            c => {
                let cp = u32::from(c);
                out.push_str(&match cp {
                    0..=0xff => format!("\\x{cp:02x}"),
                    0x100..=0xffff => format!("\\u{cp:04x}"),
                    _ => format!("\\U{cp:08x}"),
                });
            }
        }
    }
    out.push(quote);
    out
}

/// Python's `str.strip()` (whitespace as `str.isspace` defines it).
pub fn py_strip(s: &str) -> &str {
    s.trim_matches(py_is_space)
}

/// Python's `str.isspace` for one character.
pub fn py_is_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// Finds the leftmost match of `open(.*?)close` among `tags` (regex alternation with lazy
/// bodies, `re.DOTALL`): `(start, tag index, body range, end)`.
fn next_block(
    s: &str,
    from: usize,
    tags: &[(&str, &str)],
) -> Option<(usize, usize, std::ops::Range<usize>, usize)> {
    let mut pos = from;
    while pos <= s.len() {
        // The next position where any opening tag starts.
        let (start, _) = tags
            .iter()
            .enumerate()
            .filter_map(|(i, (open, _))| s[pos..].find(open).map(|at| (pos + at, i)))
            .min()?;
        // At that position, alternatives are tried in order; the first that closes wins.
        for (i, (open, close)) in tags.iter().enumerate() {
            if s[start..].starts_with(open) {
                let body = start + open.len();
                if let Some(len) = s[body..].find(close) {
                    return Some((start, i, body..body + len, body + len + close.len()));
                }
            }
        }
        pos = start + s[start..].chars().next().map_or(1, char::len_utf8);
    }
    None
}

/// `parse_content_blocks`: `<think>…</think>` blocks become thinking parts and
/// `<tool_call>…</tool_call>` blocks tool calls; `None` when neither tag occurs.
pub fn parse_content_blocks(content: &str) -> Option<(Vec<Part>, Vec<ParsedToolCall>)> {
    if !content.contains("<think>") && !content.contains("<tool_call>") {
        return None;
    }
    let tags = [("<think>", "</think>"), ("<tool_call>", "</tool_call>")];
    let mut parts = Vec::new();
    let mut calls = Vec::new();
    let mut pos = 0;
    while let Some((start, which, body, end)) = next_block(content, pos, &tags) {
        if start > pos {
            parts.push(Part::Text(content[pos..start].to_owned()));
        }
        if which == 0 {
            if !body.is_empty() {
                parts.push(Part::Thinking(content[body].to_owned()));
            }
        } else {
            calls.push(parse_tool_call_json(&content[body], &content[start..end]));
        }
        pos = end;
    }
    if pos < content.len() {
        parts.push(Part::Text(content[pos..].to_owned()));
    }
    Some((parts, calls))
}

/// `parse_think_blocks`: only `<think>…</think>`; `None` when `<think>` does not occur.
pub fn parse_think_blocks(content: &str) -> Option<Vec<Part>> {
    if !content.contains("<think>") {
        return None;
    }
    let tags = [("<think>", "</think>")];
    let mut parts = Vec::new();
    let mut pos = 0;
    while let Some((start, _, body, end)) = next_block(content, pos, &tags) {
        if start > pos {
            parts.push(Part::Text(content[pos..start].to_owned()));
        }
        if !body.is_empty() {
            parts.push(Part::Thinking(content[body].to_owned()));
        }
        pos = end;
    }
    if pos < content.len() {
        parts.push(Part::Text(content[pos..].to_owned()));
    }
    Some(parts)
}

/// The prefix of `UnparsedToolCall.error` for a tool block opened and never closed.
pub const UNTERMINATED_TOOL_BLOCK_ERROR: &str = "unterminated tool block";

/// `PARSE_FAILURE_DETAIL_MAX_CHARS`.
pub const PARSE_FAILURE_DETAIL_MAX_CHARS: usize = 16384;

/// The first `n` characters of `s` (Python's `s[:n]`).
pub fn py_prefix(s: &str, n: usize) -> &str {
    s.char_indices().nth(n).map_or(s, |(i, _)| &s[..i])
}

/// `detect_unterminated_tool_block`: an open marker without its close marker.
pub fn detect_unterminated_tool_block(
    content: &str,
    open: &str,
    close: &str,
) -> Option<UnparsedToolCall> {
    let opens = content.matches(open).count();
    if opens == 0 || opens <= content.matches(close).count() {
        return None;
    }
    let from = content.rfind(open).unwrap_or(0);
    Some(UnparsedToolCall {
        raw_text: py_prefix(&content[from..], PARSE_FAILURE_DETAIL_MAX_CHARS).to_owned(),
        error: format!(
            "{UNTERMINATED_TOOL_BLOCK_ERROR}: '{open}' opened without a matching '{close}'"
        ),
    })
}

/// Appends an unterminated-block entry (if any) to `message.unparsed_tool_calls`.
pub fn append_unterminated(message: &mut Message, content: &str, open: &str, close: &str) {
    if let Some(u) = detect_unterminated_tool_block(content, open, close) {
        message
            .unparsed_tool_calls
            .get_or_insert_with(Vec::new)
            .push(u);
    }
}

/// `remove_thinking`: the parts without thinking parts.
pub fn remove_thinking(parts: &[Part]) -> Vec<Part> {
    parts
        .iter()
        .filter(|p| !matches!(p, Part::Thinking(_)))
        .cloned()
        .collect()
}

/// `Content` after parsing: parts when blocks were found, else the string.
pub fn content_or_parts(text: String, parts: Option<Vec<Part>>) -> Content {
    match parts {
        Some(p) => Content::Parts(p),
        None => Content::Text(text),
    }
}
