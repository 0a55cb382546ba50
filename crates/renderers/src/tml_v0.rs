//! `tml_v0` (cookbook `renderers/tml_v0.py`): Thinking Machines' Inkling format. The
//! cookbook delegates it to the native `tml_renderers` wheel (`tml_renderers.v0.Renderer`,
//! through `tml_renderers_adapter.py` and `third_party/tml_renderers_compat.py`); this is
//! that behaviour, learnt from what tml-renderers 0.2.1 produces (its Python source is not
//! published).
//!
//! Every message part is its own framed message:
//! `<|message_{user,model,system,tool}|>` + author name + a content tag (`<|content_text|>`,
//! `<|content_thinking|>`, `<|content_image|>`, `<|content_invoke_tool_json|>`,
//! `<|content_xml|>` for tool declarations) + the content + `<|end_message|>`; an assistant
//! turn ends with `<|content_model_end_sampling|>`, the stop token. Text is tokenized as
//! ordinary text (special-token spellings in it are not special). A system message
//! `Thinking effort level: 0.9` (the cookbook's default effort) goes after the leading
//! system messages. The generation prompt ends after the last message: the model writes
//! its own `<|message_model|>` header.

use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};
use serde_json::{Map, Value as Json};

use super::base::{
    decode, json_dumps, last_user_index, py_prefix, renderer_error, single_token, text_chunk,
    ChatRenderer, RenderContext, RenderedMessage, StopSequences, Supervised, Termination,
    TrainOnWhat, R,
};
use super::image::Image;
use super::message::{Content, ImageSource, Message, Part, ToolCall};
use super::RendererOptions;
use tinker_core::types::{ModelInput, ModelInputChunk};
use tinker_tokenizer::{EncodeOptions, Tokenizer};

pub(super) fn by_name(name: &str, _opts: &RendererOptions) -> Option<Box<dyn ChatRenderer>> {
    (name == "tml_v0").then(|| Box::new(TmlV0) as Box<dyn ChatRenderer>)
}

/// `TmlV0Renderer`.
pub struct TmlV0;

/// The effort message's text at the cookbook's `DEFAULT_EFFORT` (0.9, which tml-renderers
/// stores as 900 thousandths and prints as `0.9`); no API here takes another effort.
const EFFORT_TEXT: &str = "Thinking effort level: 0.9";

/// The stop token.
const END_SAMPLING: &str = "<|content_model_end_sampling|>";

impl ChatRenderer for TmlV0 {
    fn has_extension_property(&self) -> bool {
        true
    }

    fn default_train_on(&self, _multi: bool) -> TrainOnWhat {
        TrainOnWhat::AllAssistantMessages
    }

    fn stop_sequences(&self, tok: &Tokenizer) -> R<StopSequences> {
        Ok(StopSequences::Tokens(vec![single_token(
            tok,
            END_SAMPLING,
        )?]))
    }

    fn render_message(
        &self,
        _tok: &Tokenizer,
        _message: &Message,
        _ctx: &RenderContext<'_>,
    ) -> R<RenderedMessage> {
        Err(renderer_error(
            "TmlV0Renderer renders whole conversations through tml_renderers",
        ))
    }

    fn build_generation_prompt(
        &self,
        tok: &Tokenizer,
        messages: &[Message],
        role: &str,
        prefill: Option<&str>,
    ) -> R<ModelInput> {
        if role != "assistant" {
            return Err(renderer_error("tml_v0 only supports assistant generation"));
        }
        if prefill.is_some() {
            return Err(renderer_error(
                "tml_v0 sampling does not accept partial assistant messages. Pass complete \
                 messages and let the model start a new assistant response.",
            ));
        }
        let mut natives = Vec::new();
        for (i, m) in messages.iter().enumerate() {
            natives.extend(to_natives(m, i, 0.0)?);
        }
        let out = render(tok, with_effort(natives))?;
        Ok(ModelInput { chunks: out.chunks })
    }

    fn build_supervised_example(
        &self,
        tok: &Tokenizer,
        messages: &[Message],
        train_on: TrainOnWhat,
    ) -> R<Supervised> {
        let mut examples = self.build_supervised_examples(tok, messages, train_on)?;
        match (examples.pop(), examples.is_empty()) {
            (Some(only), true) => Ok(only),
            _ => Err(renderer_error(
                "tml_v0 produced multiple SFT examples; use build_supervised_examples",
            )),
        }
    }

    fn build_supervised_examples(
        &self,
        tok: &Tokenizer,
        messages: &[Message],
        train_on: TrainOnWhat,
    ) -> R<Vec<Supervised>> {
        // The adapter takes an empty list for native tml-renderers input, which it only
        // trains with all_assistant_messages.
        if messages.is_empty() && train_on != TrainOnWhat::AllAssistantMessages {
            return Err(renderer_error(
                "tml_v0 only supports selective train_on_what modes for cookbook/OpenAI message \
                 dictionaries. Pass train_on_what=ALL_ASSISTANT_MESSAGES when using native \
                 tml_renderers.chat.Message, OpenAIMessage, or MessageList inputs.",
            ));
        }
        let trained = trained_assistant_indices(messages, train_on)?;
        let mut natives = Vec::new();
        for (i, m) in messages.iter().enumerate() {
            let weight = if trained.contains(&i) { 1.0 } else { 0.0 };
            natives.extend(to_natives(m, i, weight)?);
        }
        let out = render(tok, with_effort(natives))?;
        Ok(out.into_example().into_iter().collect())
    }

    fn parse_response(&self, tok: &Tokenizer, response: &[u32]) -> R<(Message, Termination)> {
        let parsed = Parser::new(tok)?.parse(tok, response);
        let fallback = || {
            let text = decode_or_empty(tok, response);
            Ok((Message::new("assistant", text), Termination::Malformed))
        };
        match parsed {
            Some((messages, saw_end)) if !messages.is_empty() => {
                let termination = if saw_end {
                    Termination::StopSequence
                } else {
                    Termination::Malformed
                };
                Ok((last_turn(&messages), termination))
            }
            _ => fallback(),
        }
    }

    fn conversation_prefix_with_tools(
        &self,
        _tok: &Tokenizer,
        tools: &[Json],
        system_prompt: &str,
    ) -> R<Vec<Message>> {
        let mut prefix = Vec::new();
        if !system_prompt.is_empty() {
            prefix.push(Message::new("system", system_prompt));
        }
        if !tools.is_empty() {
            prefix.push(Message::new("tool_declare", openai_tools_json(tools)?));
        }
        Ok(prefix)
    }
}

// ---------------------------------------------------------------------------------------
// Cookbook messages to native messages (`tml_renderers_compat.py`)

/// Authors of native messages (`AuthorKind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    User,
    Model,
    System,
    Tool,
}

impl Kind {
    /// The header token.
    fn header(self) -> &'static str {
        match self {
            Kind::User => "<|message_user|>",
            Kind::Model => "<|message_model|>",
            Kind::System => "<|message_system|>",
            Kind::Tool => "<|message_tool|>",
        }
    }

    /// The cookbook role.
    fn role(self) -> &'static str {
        match self {
            Kind::User => "user",
            Kind::Model => "assistant",
            Kind::System => "system",
            Kind::Tool => "tool",
        }
    }
}

/// The content of one native message.
enum Item {
    Text(String),
    Thinking(String),
    Image(Image),
    /// A structured tool call: the name and the payload `{"name":…,"args":{…}}`.
    Invoke(String, String),
    /// Tool declarations, as their JSON.
    Declare(String),
    /// The reasoning-effort directive.
    Effort,
    /// `ModelEndSampling`: the end of an assistant turn.
    End,
}

/// One native message (`tml_renderers.chat.Message`): its author, content and training
/// weight (model messages only).
struct Native {
    kind: Kind,
    name: Option<String>,
    item: Item,
    weight: f32,
}

/// `_trained_assistant_indices`: the assistant messages `train_on` trains.
fn trained_assistant_indices(messages: &[Message], train_on: TrainOnWhat) -> R<Vec<usize>> {
    let mut assistants = messages
        .iter()
        .enumerate()
        .filter(|(_, m)| m.role == "assistant")
        .map(|(i, _)| i);
    Ok(match train_on {
        TrainOnWhat::AllAssistantMessages => assistants.collect(),
        TrainOnWhat::LastAssistantMessage => assistants.next_back().into_iter().collect(),
        TrainOnWhat::LastAssistantTurn => {
            let start = last_user_index(messages) + 1;
            assistants.filter(|&i| i as isize >= start).collect()
        }
        TrainOnWhat::Customized => assistants
            .filter(|&i| messages[i].trainable != Some(false))
            .collect(),
        other => {
            return Err(renderer_error(format!(
                "tml-renderers SFT supports all_assistant_messages, last_assistant_message, \
                 last_assistant_turn, and customized; got '{}'",
                other.as_str()
            )))
        }
    })
}

/// One cookbook message as native messages (`_tml_renderers_openai_message(m).to_messages()`):
/// one per content part, then one per tool call, then `ModelEndSampling` for an assistant.
/// `weight` applies to an assistant's messages.
fn to_natives(message: &Message, idx: usize, weight: f32) -> R<Vec<Native>> {
    let at = |e: String| renderer_error(format!("messages[{idx}]: {e}"));
    if message.role == "tool_declare" {
        return Ok(vec![Native {
            kind: Kind::System,
            name: Some("tool_declare".into()),
            item: Item::Declare(declare_json(&message.content).map_err(at)?),
            weight: 0.0,
        }]);
    }
    let kind = match message.role.as_str() {
        "user" => Kind::User,
        "assistant" => Kind::Model,
        "system" => Kind::System,
        "tool" => Kind::Tool,
        other => return Err(at(format!("unsupported role: '{other}'"))),
    };
    let mut items = match &message.content {
        Content::Text(s) => vec![Item::Text(s.clone())],
        Content::Parts(parts) => parts.iter().map(part_item).collect::<R<Vec<_>>>()?,
    };
    if items.is_empty() {
        items.push(Item::Text(String::new()));
    }
    let calls = message.tool_calls.as_deref().unwrap_or_default();
    if !calls.is_empty() {
        // A tool-call turn has no empty text part.
        items.retain(|i| !matches!(i, Item::Text(t) if t.is_empty()));
    }
    for call in calls {
        items.push(Item::Invoke(
            call.name.clone(),
            invoke_json(call).map_err(at)?,
        ));
    }
    if kind == Kind::Model {
        items.push(Item::End);
    }
    let name = if kind == Kind::Tool {
        message.name.clone()
    } else {
        None
    };
    Ok(items
        .into_iter()
        .map(|item| Native {
            kind,
            name: name.clone(),
            item,
            weight,
        })
        .collect())
}

/// A content part's native content (`_content`).
fn part_item(part: &Part) -> R<Item> {
    Ok(match part {
        Part::Text(t) => Item::Text(t.clone()),
        Part::Thinking(t) => Item::Thinking(t.clone()),
        Part::Image(src) => Item::Image(load_image(src)?),
    })
}

/// `_image(image_to_data_uri(image))`: an image's bytes and size. A URL must be a base64
/// `data:` URI (the cookbook reads local paths, which this module cannot, and refuses
/// remote URLs). Image bytes keep their own format, where the cookbook re-encodes a PIL
/// image as JPEG (same size, so the same tokens).
fn load_image(src: &ImageSource) -> R<Image> {
    if let ImageSource::Url(url) = src {
        if !url.starts_with("data:") {
            return Err(renderer_error(format!(
                "does not fetch image URLs ({:?}); materialize it into a base64 data: URI \
                 or pass its bytes first",
                py_prefix(url, 64)
            )));
        }
        let header = url.split(',').next().unwrap_or_default().to_lowercase();
        if !header.split(';').skip(1).any(|p| p == "base64") {
            return Err(renderer_error(format!(
                "image {:?} must be a base64 data URI or give width and height",
                py_prefix(url, 64)
            )));
        }
    }
    Image::load(src)
}

/// tml-renderers' image token count: 40-pixel patches, `width / 40 + 1` per row (the last
/// one a row end) and `ceil(height / 40)` rows, without resizing.
fn image_tokens(img: &Image) -> R<u32> {
    let per_row = u64::from(img.width) / 40 + 1;
    let rows = u64::from(img.height).div_ceil(40);
    u32::try_from(per_row * rows)
        .map_err(|_| renderer_error(format!("image too large ({}x{})", img.width, img.height)))
}

/// `_invoke_tool`: the payload tml-renderers writes for a tool call,
/// `{"name":…,"args":{…}}`, the arguments' keys sorted, each value compact.
fn invoke_json(call: &ToolCall) -> Result<String, String> {
    if call.name.is_empty() {
        return Err("INVALID_ARGUMENT: structured InvokeTool name must not be empty".into());
    }
    let args: Json = serde_json::from_str(&call.arguments)
        .map_err(|e| format!("tool call {:?} has invalid JSON arguments: {e}", call.name))?;
    let Json::Object(args) = args else {
        return Err("tool call arguments must decode to a JSON object".into());
    };
    let mut entries: Vec<(&String, &Json)> = args.iter().collect();
    tinker_support::sort::sort_by(&mut entries, |a, b| a.0.cmp(b.0));
    let mut out = format!("{{\"name\":{},\"args\":{{", Json::String(call.name.clone()));
    for (i, (k, v)) in entries.into_iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out += &format!("{}:", Json::String(k.clone()));
        write_compact(v, &mut out);
    }
    out += "}}";
    Ok(out)
}

/// Compact JSON as tml-renderers writes argument values: serde_json's, with floats in
/// ryu's notation (`1e20`, where this crate's serde_json writes `1e+20`; the digits and
/// the choice of notation are the same).
fn write_compact(v: &Json, out: &mut String) {
    match v {
        Json::Number(n) if n.is_f64() => out.push_str(&n.to_string().replace("e+", "e")),
        Json::Array(a) => {
            out.push('[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_compact(x, out);
            }
            out.push(']');
        }
        Json::Object(o) => {
            out.push('{');
            for (i, (k, x)) in o.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Json::String(k.clone()).to_string());
                out.push(':');
                write_compact(x, out);
            }
            out.push('}');
        }
        other => out.push_str(&other.to_string()),
    }
}

/// A `tool_declare` message's tools as tml-renderers writes them (`_tool_declare` and
/// `ToolDeclareJson`): `[{"description","name","parameters","type"}]`, every object's keys
/// sorted, compact. The content must be a JSON list of OpenAI tools (`_declared_tools`).
fn declare_json(content: &Content) -> Result<String, String> {
    let not_tools = || {
        "a tool_declare message must hold a JSON list of OpenAI tools, as \
         tool_specs_to_openai_tools returns (Kimi K2.5 writes TypeScript, which has no OpenAI \
         form)"
            .to_owned()
    };
    let Content::Text(text) = content else {
        return Err(not_tools());
    };
    let Ok(Json::Array(tools)) = serde_json::from_str::<Json>(text) else {
        return Err(not_tools());
    };
    let functions = tools
        .iter()
        .map(|t| t.get("function").and_then(Json::as_object).map(|f| (t, f)))
        .collect::<Option<Vec<_>>>()
        .ok_or_else(not_tools)?;
    let specs = functions
        .into_iter()
        .map(|(tool, f)| declared_spec(tool, f))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Json::Array(specs).to_string())
}

/// One declared tool as a `ToolSpecJson`: a non-string type is `"function"`, a
/// non-string description `""`, absent parameters `{}`.
fn declared_spec(tool: &Json, f: &Map<String, Json>) -> Result<Json, String> {
    let name = match f.get("name") {
        Some(Json::String(n)) => n.clone(),
        other => {
            return Err(format!(
                "a declared tool name must be a string; got {}",
                other.map_or("None".into(), Json::to_string)
            ))
        }
    };
    let parameters = match f.get("parameters") {
        None => Json::Object(Map::new()),
        Some(p @ Json::Object(_)) => sorted_keys(p),
        Some(_) => return Err("a declared tool's parameters must be a dict".into()),
    };
    let text = |v: Option<&Json>, default: &str| {
        Json::String(v.and_then(Json::as_str).unwrap_or(default).to_owned())
    };
    let mut spec = Map::new();
    spec.insert("description".into(), text(f.get("description"), ""));
    spec.insert("name".into(), Json::String(name));
    spec.insert("parameters".into(), parameters);
    spec.insert("type".into(), text(tool.get("type"), "function"));
    Ok(Json::Object(spec))
}

/// A JSON value with every object's keys in sorted order.
fn sorted_keys(v: &Json) -> Json {
    match v {
        Json::Object(o) => {
            let mut entries: Vec<(&String, &Json)> = o.iter().collect();
            tinker_support::sort::sort_by(&mut entries, |a, b| a.0.cmp(b.0));
            Json::Object(
                entries
                    .into_iter()
                    .map(|(k, x)| (k.clone(), sorted_keys(x)))
                    .collect(),
            )
        }
        Json::Array(a) => Json::Array(a.iter().map(sorted_keys).collect()),
        other => other.clone(),
    }
}

/// `json.dumps(tool_specs_to_openai_tools(tools), separators=(",", ":"))`: each
/// `{name, description, parameters}` spec as an OpenAI function tool.
fn openai_tools_json(tools: &[Json]) -> R<String> {
    let tools = tools
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let field = |k: &str| {
                t.get(k).cloned().ok_or_else(|| {
                    renderer_error(format!("tools[{i}] has no {k:?} (a ToolSpec needs it)"))
                })
            };
            let mut function = Map::new();
            function.insert("name".into(), field("name")?);
            function.insert("description".into(), field("description")?);
            function.insert("parameters".into(), field("parameters")?);
            let mut tool = Map::new();
            tool.insert("type".into(), Json::String("function".into()));
            tool.insert("function".into(), Json::Object(function));
            Ok(Json::Object(tool))
        })
        .collect::<R<Vec<_>>>()?;
    Ok(super::base::json_dumps_with(
        &Json::Array(tools),
        (",", ":"),
        true,
        None,
    ))
}

/// The effort message, after the leading system messages (`_prepare_sft_input`; the
/// generation prompt places it the same way).
fn with_effort(mut natives: Vec<Native>) -> Vec<Native> {
    let at = natives
        .iter()
        .take_while(|n| n.kind == Kind::System)
        .count();
    natives.insert(
        at,
        Native {
            kind: Kind::System,
            name: None,
            item: Item::Effort,
            weight: 0.0,
        },
    );
    natives
}

// ---------------------------------------------------------------------------------------
// Rendering

/// Chunks and per-position weights being built; adjacent text is one chunk.
#[derive(Default)]
struct Out {
    chunks: Vec<ModelInputChunk>,
    weights: Vec<f32>,
}

impl Out {
    fn text(&mut self, ids: &[u32], weight: f32) {
        if let Some(ModelInputChunk::EncodedText { tokens }) = self.chunks.last_mut() {
            tokens.extend_from_slice(ids);
        } else {
            self.chunks.push(text_chunk(ids.to_vec()));
        }
        self.weights.resize(self.weights.len() + ids.len(), weight);
    }

    /// An image: its positions carry no weight.
    fn image(&mut self, img: Image) -> R<()> {
        let n = image_tokens(&img)?;
        self.chunks.push(img.into_chunk(n));
        self.weights.resize(self.weights.len() + n as usize, 0.0);
        Ok(())
    }

    /// `render_for_sft`'s example: everything up to the last trained position; none
    /// when nothing is trained.
    fn into_example(self) -> Option<Supervised> {
        let keep = self.weights.iter().rposition(|&w| w != 0.0)? + 1;
        let mut chunks = Vec::new();
        let mut left = keep;
        for c in self.chunks {
            let len = c.length().unwrap_or(0);
            if left == 0 {
                break;
            }
            match c {
                ModelInputChunk::EncodedText { mut tokens } if len > left => {
                    tokens.truncate(left);
                    chunks.push(text_chunk(tokens));
                    left = 0;
                }
                c => {
                    chunks.push(c);
                    left -= len;
                }
            }
        }
        let mut weights = self.weights;
        weights.truncate(keep);
        Some(Supervised {
            model_input: ModelInput { chunks },
            weights,
        })
    }
}

/// Text tokenized as tml-renderers does (`encode_ordinary`: special-token spellings are
/// plain text).
fn ordinary(tok: &Tokenizer, s: &str) -> R<Vec<u32>> {
    tok.encode_with(
        s,
        EncodeOptions {
            add_special_tokens: false,
            split_special_tokens: true,
        },
    )
}

/// Renders native messages: header, author name (a model's tool call: the tool's name),
/// content tag, content, `<|end_message|>`; `ModelEndSampling` is its token alone. A model
/// message's tokens carry its weight, others none.
fn render(tok: &Tokenizer, natives: Vec<Native>) -> R<Out> {
    let special = |s: &str| single_token(tok, s);
    let end_message = special("<|end_message|>")?;
    let mut out = Out::default();
    for n in natives {
        let w = if n.kind == Kind::Model { n.weight } else { 0.0 };
        let (tag, body) = match &n.item {
            Item::End => {
                out.text(&[special(END_SAMPLING)?], w);
                continue;
            }
            Item::Effort => ("<|content_text|>", EFFORT_TEXT),
            Item::Text(t) => ("<|content_text|>", t.as_str()),
            Item::Thinking(t) => ("<|content_thinking|>", t.as_str()),
            Item::Invoke(_, json) => ("<|content_invoke_tool_json|>", json.as_str()),
            Item::Declare(json) => ("<|content_xml|>", json.as_str()),
            Item::Image(_) => ("<|content_image|>", ""),
        };
        let name = match (&n.item, n.kind) {
            (Item::Invoke(tool, _), Kind::Model) => Some(tool.as_str()),
            _ => n.name.as_deref(),
        };
        let mut head = vec![special(n.kind.header())?];
        head.extend(ordinary(tok, name.unwrap_or_default())?);
        head.push(special(tag)?);
        head.extend(ordinary(tok, body)?);
        out.text(&head, w);
        if let Item::Image(img) = n.item {
            out.image(img)?;
        }
        out.text(&[end_message], w);
    }
    Ok(out)
}

// ---------------------------------------------------------------------------------------
// Parsing (`Parser.parse_tokens` of tml-renderers, then `parse_response` of the adapter)

/// A parsed content message.
struct Parsed {
    kind: Kind,
    name: Option<String>,
    part: ParsedPart,
}

enum ParsedPart {
    Part(Part),
    Call(ToolCall),
}

/// What a token is to the parser.
#[derive(Clone, Copy)]
enum Tok {
    Header(Kind),
    /// A `<|content_…|>` tag: known (text, thinking, tool error, tool call) or not.
    Tag(Option<TagKind>),
    EndMessage,
    EndSampling,
    /// Any other special token.
    OtherSpecial,
    Ordinary,
}

#[derive(Clone, Copy)]
enum TagKind {
    Text,
    Thinking,
    ToolError,
    InvokeJson,
    InvokeText,
}

/// Where the parser is.
enum State {
    /// Between messages: ordinary and unknown special tokens are skipped.
    Idle,
    /// After a header: the author name's tokens.
    Header(Kind, Vec<u32>),
    /// After a content tag, up to `<|end_message|>`.
    Content {
        kind: Kind,
        name: Option<String>,
        tag: Option<TagKind>,
        ids: Vec<u32>,
    },
}

/// The token classes of a tokenizer.
struct Parser {
    specials: std::collections::HashMap<u32, Tok>,
}

impl Parser {
    fn new(tok: &Tokenizer) -> R<Parser> {
        let mut specials = std::collections::HashMap::new();
        for (content, id, special) in tok.added_tokens() {
            if special {
                specials.insert(id, classify(&content));
            }
        }
        // The tokens the format needs must exist.
        single_token(tok, END_SAMPLING)?;
        Ok(Parser { specials })
    }

    fn class(&self, id: u32) -> Tok {
        self.specials.get(&id).copied().unwrap_or(Tok::Ordinary)
    }

    /// The content messages and whether a `ModelEndSampling` was seen, or `None` where
    /// tml-renderers raises `ParseError` (or the cookbook cannot convert the result: a
    /// text tool call).
    fn parse(&self, tok: &Tokenizer, ids: &[u32]) -> Option<(Vec<Parsed>, bool)> {
        let mut state = State::Idle;
        let mut messages = Vec::new();
        let mut saw_end = false;
        let mut calls = 0;
        for &id in ids {
            let class = self.class(id);
            state = match state {
                State::Idle => match class {
                    Tok::Header(kind) => State::Header(kind, Vec::new()),
                    Tok::Tag(tag) => State::Content {
                        kind: Kind::Model,
                        name: None,
                        tag,
                        ids: Vec::new(),
                    },
                    Tok::EndSampling => {
                        // Sampling ended before any message: `EmptyResponseError`.
                        (!messages.is_empty()).then_some(())?;
                        saw_end = true;
                        State::Idle
                    }
                    _ => State::Idle,
                },
                State::Header(kind, mut name) => match class {
                    Tok::Ordinary => {
                        name.push(id);
                        State::Header(kind, name)
                    }
                    // Any special token is the content tag; unknown ones fail at the end.
                    other => State::Content {
                        kind,
                        name: match name.is_empty() {
                            true => None,
                            false => Some(strict_decode(tok, &name)?),
                        },
                        tag: match other {
                            Tok::Tag(t) => t,
                            _ => None,
                        },
                        ids: Vec::new(),
                    },
                },
                State::Content {
                    kind,
                    name,
                    tag,
                    mut ids,
                } => match class {
                    Tok::EndMessage => {
                        let text = strict_decode(tok, &ids)?;
                        let part = content_part(tag?, text, name.as_deref(), &mut calls)?;
                        // A tool call's header name is the tool's, not the author's.
                        let name = name.filter(|_| !matches!(part, ParsedPart::Call(_)));
                        messages.push(Parsed { kind, name, part });
                        State::Idle
                    }
                    _ => {
                        ids.push(id);
                        State::Content {
                            kind,
                            name,
                            tag,
                            ids,
                        }
                    }
                },
            };
        }
        matches!(state, State::Idle).then_some((messages, saw_end))
    }
}

/// The parser's class of a special token, by its spelling.
fn classify(content: &str) -> Tok {
    let Some(name) = content
        .strip_prefix("<|")
        .and_then(|s| s.strip_suffix("|>"))
    else {
        return Tok::OtherSpecial;
    };
    match name {
        "message_user" => Tok::Header(Kind::User),
        "message_model" => Tok::Header(Kind::Model),
        "message_system" => Tok::Header(Kind::System),
        "message_tool" => Tok::Header(Kind::Tool),
        "end_message" => Tok::EndMessage,
        "content_model_end_sampling" => Tok::EndSampling,
        "content_text" => Tok::Tag(Some(TagKind::Text)),
        "content_thinking" => Tok::Tag(Some(TagKind::Thinking)),
        "content_tool_error" => Tok::Tag(Some(TagKind::ToolError)),
        "content_invoke_tool_json" => Tok::Tag(Some(TagKind::InvokeJson)),
        "content_invoke_tool_text" => Tok::Tag(Some(TagKind::InvokeText)),
        n if n.starts_with("content_") => Tok::Tag(None),
        _ => Tok::OtherSpecial,
    }
}

/// A finished message's content. A tool call takes the `n`-th id `functions.name:n`.
/// A text tool call has no cookbook form (the adapter falls back to the raw text).
fn content_part(
    tag: TagKind,
    text: String,
    header_name: Option<&str>,
    n: &mut usize,
) -> Option<ParsedPart> {
    Some(match tag {
        TagKind::Text | TagKind::ToolError => ParsedPart::Part(Part::Text(text)),
        TagKind::Thinking => ParsedPart::Part(Part::Thinking(text)),
        TagKind::InvokeJson => {
            let (name, arguments) = parse_invoke(&text, header_name)?;
            let id = format!("functions.{name}:{n}");
            *n += 1;
            ParsedPart::Call(ToolCall {
                id: Some(id),
                name,
                arguments,
            })
        }
        TagKind::InvokeText => return None,
    })
}

/// A tool call's payload: exactly `name` (a non-empty string, the header's name when there
/// is one) and `args` (an object), each once. Returns the name and the arguments as the
/// cookbook writes them (`json.dumps` of the arguments).
fn parse_invoke(text: &str, header_name: Option<&str>) -> Option<(String, String)> {
    let Entries(entries) = serde_json::from_str(text).ok()?;
    let mut name = None;
    let mut args = None;
    for (k, v) in entries {
        let slot = match k.as_str() {
            "name" => &mut name,
            "args" => &mut args,
            _ => return None,
        };
        slot.is_none().then_some(())?;
        *slot = Some(v);
    }
    let (Some(Json::String(name)), Some(args @ Json::Object(_))) = (name, args) else {
        return None;
    };
    (!name.is_empty() && header_name.is_none_or(|h| h == name)).then_some(())?;
    Some((name, json_dumps(&args)))
}

/// A JSON object's entries in order, duplicates kept (tml-renderers refuses a payload with
/// a repeated key).
struct Entries(Vec<(String, Json)>);

impl<'de> Deserialize<'de> for Entries {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Entries;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Entries, A::Error> {
                let mut out = Vec::new();
                while let Some(entry) = map.next_entry()? {
                    out.push(entry);
                }
                Ok(Entries(out))
            }
        }
        d.deserialize_map(V)
    }
}

/// The decoded text of tokens, or `None` where tml-renderers fails: an id outside the
/// vocabulary, or bytes that are not UTF-8 (`Utf8ContentError`). The tokenizer's decode
/// replaces bad bytes with U+FFFD, so only text containing U+FFFD is checked, through the
/// tokens' byte-level spellings.
fn strict_decode(tok: &Tokenizer, ids: &[u32]) -> Option<String> {
    if ids.iter().any(|&id| tok.id_to_token(id).is_none()) {
        return None;
    }
    let text = decode(tok, ids);
    if !text.contains('\u{FFFD}') {
        return Some(text);
    }
    match token_bytes(tok, ids) {
        Some(bytes) => String::from_utf8(bytes).ok(),
        // Not a byte-level vocabulary: the text is taken as decoded.
        None => Some(text),
    }
}

/// The bytes of tokens from their byte-level (GPT-2) spellings.
fn token_bytes(tok: &Tokenizer, ids: &[u32]) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    for &id in ids {
        for c in tok.id_to_token(id)?.chars() {
            out.push(byte_of(c)?);
        }
    }
    Some(out)
}

/// The byte a GPT-2 byte-level character stands for: printable Latin-1 characters are
/// themselves; the other bytes, in order, are U+0100 onwards.
fn byte_of(c: char) -> Option<u8> {
    let printable = |b: u32| matches!(b, 0x21..=0x7e | 0xa1..=0xac | 0xae..=0xff);
    let u = u32::from(c);
    if printable(u) {
        return u8::try_from(u).ok();
    }
    let n = usize::try_from(u.checked_sub(0x100)?).ok()?;
    (0u32..=255)
        .filter(|&b| !printable(b))
        .nth(n)
        .and_then(|b| u8::try_from(b).ok())
}

/// `_decode_or_empty`: the decoded response, or `""` when tml-renderers cannot decode it
/// (an id outside the vocabulary).
fn decode_or_empty(tok: &Tokenizer, ids: &[u32]) -> String {
    if ids.iter().any(|&id| tok.id_to_token(id).is_none()) {
        return String::new();
    }
    decode(tok, ids)
}

/// The last turn of the parsed messages as a cookbook message
/// (`message_list_to_tinker_messages(…)[-1]`): consecutive model messages are one turn,
/// as are consecutive user (or system) messages of one author name; each tool message
/// is its own turn.
fn last_turn(messages: &[Parsed]) -> Message {
    let Some(last) = messages.last() else {
        return Message::new("assistant", "");
    };
    let same = |m: &Parsed| {
        m.kind == last.kind
            && last.kind != Kind::Tool
            && (last.kind == Kind::Model || m.name == last.name)
    };
    let before = &messages[..messages.len() - 1];
    let start = before.len() - before.iter().rev().take_while(|m| same(m)).count();
    let turn = &messages[start..];
    let mut parts = Vec::new();
    let mut calls = Vec::new();
    for m in turn {
        match &m.part {
            ParsedPart::Part(p) => parts.push(p.clone()),
            ParsedPart::Call(c) => calls.push(c.clone()),
        }
    }
    let content = match parts.as_slice() {
        [Part::Text(t)] => Content::Text(t.clone()),
        _ => Content::Parts(parts),
    };
    let mut message = Message {
        role: last.kind.role().into(),
        content,
        ..Message::default()
    };
    if !calls.is_empty() {
        message.tool_calls = Some(calls);
    }
    if last.kind == Kind::Tool {
        message.name = last.name.clone();
    }
    message
}
