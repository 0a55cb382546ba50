//! Conversations as tinker-cookbook's renderers take them (`renderers/base.py`): a
//! [`Message`] has a role, content (a string or typed parts), and the optional fields the
//! cookbook's `Message` TypedDict has. A field that is present but empty differs from one
//! that is absent (`"tool_calls" in message`), so optional fields are `Option`s.
//!
//! Read from and written to the JSON the JS API takes and returns, which is the cookbook's
//! `message_to_jsonable` shape.

use serde_json::{Map, Value as Json};

use tinker_core::types::InputError;
use tinker_tokenizer::TokenizerError;

/// Results of renderer operations.
pub type R<T> = Result<T, TokenizerError>;

/// An image given in a message: its encoded bytes (PNG or JPEG), or a `data:` URI.
#[derive(Debug, Clone, PartialEq)]
pub enum ImageSource {
    /// The file's bytes.
    Bytes(Vec<u8>),
    /// A URL string (`data:image/png;base64,…`; other URLs must be fetched by the caller).
    Url(String),
}

/// One part of structured message content.
#[derive(Debug, Clone, PartialEq)]
pub enum Part {
    /// Visible text (`{type: 'text', text}`).
    Text(String),
    /// Reasoning (`{type: 'thinking', thinking}`).
    Thinking(String),
    /// An image (`{type: 'image', image}`), for vision-language renderers.
    Image(ImageSource),
}

impl Part {
    /// The cookbook's `type` tag.
    pub fn kind(&self) -> &'static str {
        match self {
            Part::Text(_) => "text",
            Part::Thinking(_) => "thinking",
            Part::Image(_) => "image",
        }
    }
}

/// Message content: a string, or a list of parts (`Content = str | list[ContentPart]`).
#[derive(Debug, Clone, PartialEq)]
pub enum Content {
    /// Plain text.
    Text(String),
    /// Structured parts.
    Parts(Vec<Part>),
}

impl Default for Content {
    fn default() -> Self {
        Content::Text(String::new())
    }
}

impl Content {
    /// `ensure_text`: the text of string content or of a single text part.
    pub fn ensure_text(&self) -> Result<&str, String> {
        match self {
            Content::Text(s) => Ok(s),
            Content::Parts(p) => match p.as_slice() {
                [Part::Text(t)] => Ok(t),
                _ => Err(format!(
                    "Expected text content, got multimodal content with {} parts",
                    p.len()
                )),
            },
        }
    }

    /// `ensure_list`: string content becomes one text part.
    pub fn to_parts(&self) -> Vec<Part> {
        match self {
            Content::Text(s) => vec![Part::Text(s.clone())],
            Content::Parts(p) => p.clone(),
        }
    }

    /// `has_thinking`: a thinking part, or an opening `<think>` in string content.
    pub fn has_thinking(&self) -> bool {
        match self {
            Content::Text(s) => s.contains("<think>"),
            Content::Parts(p) => p.iter().any(|p| matches!(p, Part::Thinking(_))),
        }
    }

    /// `get_text_content`: the text of string content, or every text part joined.
    pub fn text_content(&self) -> String {
        match self {
            Content::Text(s) => s.clone(),
            Content::Parts(p) => p
                .iter()
                .filter_map(|p| match p {
                    Part::Text(t) => Some(t.as_str()),
                    _ => None,
                })
                .collect(),
        }
    }

    /// Python truthiness of the content (`bool(message.get("content"))`).
    pub fn is_truthy(&self) -> bool {
        match self {
            Content::Text(s) => !s.is_empty(),
            Content::Parts(p) => !p.is_empty(),
        }
    }
}

/// A parsed tool call (`ToolCall`: `{type: 'function', id, function: {name, arguments}}`).
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    /// Optional id correlating results with the call.
    pub id: Option<String>,
    /// The function name.
    pub name: String,
    /// The arguments, as a JSON string.
    pub arguments: String,
}

/// A tool call the model wrote that could not be parsed (`UnparsedToolCall`).
#[derive(Debug, Clone, PartialEq)]
pub struct UnparsedToolCall {
    /// The model's text of the call.
    pub raw_text: String,
    /// What was wrong with it.
    pub error: String,
}

/// One turn of a conversation (the cookbook's `Message`).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Message {
    /// `system`, `user`, `assistant`, `tool`, or another role.
    pub role: String,
    /// The content.
    pub content: Content,
    /// Tool calls of an assistant message (present, possibly empty, or absent).
    pub tool_calls: Option<Vec<ToolCall>>,
    /// Tool calls that failed to parse.
    pub unparsed_tool_calls: Option<Vec<UnparsedToolCall>>,
    /// Per-message training flag (`TrainOnWhat::Customized`).
    pub trainable: Option<bool>,
    /// For tool results: the id of the call answered.
    pub tool_call_id: Option<String>,
    /// For tool results: the function name.
    pub name: Option<String>,
}

impl Message {
    /// A message with string content.
    pub fn new(role: &str, content: impl Into<String>) -> Message {
        Message {
            role: role.to_owned(),
            content: Content::Text(content.into()),
            ..Message::default()
        }
    }

    /// A message with part content.
    pub fn with_parts(role: &str, parts: Vec<Part>) -> Message {
        Message {
            role: role.to_owned(),
            content: Content::Parts(parts),
            ..Message::default()
        }
    }

    /// Reads a message from its JSON (`{role, content, tool_calls?, …}`); errors name the
    /// field under `at` (e.g. `messages[2].content[0].type`).
    pub fn from_json(v: &Json, at: &str) -> Result<Message, InputError> {
        let o = v.as_object().ok_or_else(|| {
            InputError::type_error(at, "must be an object with `role` and `content`")
        })?;
        let role = match o.get("role") {
            Some(Json::String(r)) => r.clone(),
            other => {
                return Err(InputError::type_error(
                    format!("{at}.role"),
                    format!("must be a string, got {}", show(other)),
                ))
            }
        };
        let content = match o.get("content") {
            Some(Json::String(s)) => Content::Text(s.clone()),
            None | Some(Json::Null) => Content::Text(String::new()),
            Some(Json::Array(parts)) => Content::Parts(
                parts
                    .iter()
                    .enumerate()
                    .map(|(i, p)| part_from_json(p, &format!("{at}.content[{i}]")))
                    .collect::<Result<_, _>>()?,
            ),
            other => {
                return Err(InputError::type_error(
                    format!("{at}.content"),
                    format!("must be a string or an array of parts, got {}", show(other)),
                ))
            }
        };
        let tool_calls = match o.get("tool_calls") {
            None | Some(Json::Null) => None,
            Some(Json::Array(calls)) => Some(
                calls
                    .iter()
                    .enumerate()
                    .map(|(i, c)| tool_call_from_json(c, &format!("{at}.tool_calls[{i}]")))
                    .collect::<Result<_, _>>()?,
            ),
            other => {
                return Err(InputError::type_error(
                    format!("{at}.tool_calls"),
                    format!("must be an array, got {}", show(other)),
                ))
            }
        };
        let unparsed_tool_calls = match o.get("unparsed_tool_calls") {
            None | Some(Json::Null) => None,
            Some(Json::Array(calls)) => Some(
                calls
                    .iter()
                    .enumerate()
                    .map(|(i, c)| {
                        let cat = format!("{at}.unparsed_tool_calls[{i}]");
                        Ok(UnparsedToolCall {
                            raw_text: str_field(c, "raw_text", &cat)?,
                            error: str_field(c, "error", &cat)?,
                        })
                    })
                    .collect::<Result<_, InputError>>()?,
            ),
            other => {
                return Err(InputError::type_error(
                    format!("{at}.unparsed_tool_calls"),
                    format!("must be an array, got {}", show(other)),
                ))
            }
        };
        let trainable = match o.get("trainable") {
            None | Some(Json::Null) => None,
            Some(Json::Bool(b)) => Some(*b),
            other => {
                return Err(InputError::type_error(
                    format!("{at}.trainable"),
                    format!("must be a boolean, got {}", show(other)),
                ))
            }
        };
        Ok(Message {
            role,
            content,
            tool_calls,
            unparsed_tool_calls,
            trainable,
            tool_call_id: opt_str_field(o, "tool_call_id", at)?,
            name: opt_str_field(o, "name", at)?,
        })
    }

    /// Reads a list of messages (`messages[i]` in errors).
    pub fn list_from_json(v: &Json) -> Result<Vec<Message>, InputError> {
        let list = v
            .as_array()
            .ok_or_else(|| InputError::type_error("messages", "must be an array of messages"))?;
        list.iter()
            .enumerate()
            .map(|(i, m)| Message::from_json(m, &format!("messages[{i}]")))
            .collect()
    }

    /// The message as JSON, in the cookbook's `message_to_jsonable` shape (images as a
    /// URL string or bytes in a `Uint8Array`-like array of numbers).
    pub fn to_json(&self) -> Json {
        let mut o = Map::new();
        o.insert("role".into(), Json::String(self.role.clone()));
        o.insert(
            "content".into(),
            match &self.content {
                Content::Text(s) => Json::String(s.clone()),
                Content::Parts(parts) => Json::Array(parts.iter().map(part_to_json).collect()),
            },
        );
        if let Some(calls) = &self.tool_calls {
            o.insert(
                "tool_calls".into(),
                Json::Array(calls.iter().map(ToolCall::to_json).collect()),
            );
        }
        if let Some(calls) = &self.unparsed_tool_calls {
            o.insert(
                "unparsed_tool_calls".into(),
                Json::Array(
                    calls
                        .iter()
                        .map(|c| serde_json::json!({ "raw_text": c.raw_text, "error": c.error }))
                        .collect(),
                ),
            );
        }
        if let Some(t) = self.trainable {
            o.insert("trainable".into(), Json::Bool(t));
        }
        if let Some(id) = &self.tool_call_id {
            o.insert("tool_call_id".into(), Json::String(id.clone()));
        }
        if let Some(n) = &self.name {
            o.insert("name".into(), Json::String(n.clone()));
        }
        Json::Object(o)
    }
}

impl ToolCall {
    /// `ToolCall.model_dump()`: `{type: 'function', id, function: {name, arguments}}`.
    pub fn to_json(&self) -> Json {
        serde_json::json!({
            "type": "function",
            "id": self.id,
            "function": { "name": self.name, "arguments": self.arguments },
        })
    }
}

fn part_from_json(p: &Json, at: &str) -> Result<Part, InputError> {
    match p.get("type").and_then(Json::as_str) {
        Some("text") => Ok(Part::Text(str_field(p, "text", at)?)),
        Some("thinking") => Ok(Part::Thinking(str_field(p, "thinking", at)?)),
        Some("image") => match p.get("image") {
            Some(Json::String(s)) => Ok(Part::Image(ImageSource::Url(s.clone()))),
            Some(Json::Array(a)) => a
                .iter()
                .map(|b| b.as_u64().filter(|&b| b < 256).map(|b| b as u8))
                .collect::<Option<Vec<u8>>>()
                .map(|b| Part::Image(ImageSource::Bytes(b)))
                .ok_or_else(|| {
                    InputError::type_error(format!("{at}.image"), "must hold bytes (0..=255)")
                }),
            other => Err(InputError::type_error(
                format!("{at}.image"),
                format!(
                    "must be the image's bytes or a data: URL string, got {}",
                    show(other)
                ),
            )),
        },
        _ => Err(InputError::range_error(
            format!("{at}.type"),
            format!(
                "must be \"text\", \"thinking\" or \"image\", got {}",
                show(p.get("type"))
            ),
        )),
    }
}

fn part_to_json(p: &Part) -> Json {
    match p {
        Part::Text(t) => serde_json::json!({ "type": "text", "text": t }),
        Part::Thinking(t) => serde_json::json!({ "type": "thinking", "thinking": t }),
        Part::Image(ImageSource::Url(u)) => serde_json::json!({ "type": "image", "image": u }),
        Part::Image(ImageSource::Bytes(b)) => serde_json::json!({ "type": "image", "image": b }),
    }
}

fn tool_call_from_json(c: &Json, at: &str) -> Result<ToolCall, InputError> {
    // The cookbook's {type, id, function: {name, arguments}}, or a flat {name, arguments}.
    let f = c.get("function").unwrap_or(c);
    let name = str_field(f, "name", at)?;
    let arguments = match f.get("arguments") {
        Some(Json::String(s)) => s.clone(),
        // An object is written as Python's json.dumps would (the cookbook stores strings).
        Some(v @ Json::Object(_)) => {
            tinker_tokenizer::py_json::dumps_json(v, (", ", ": "), true, None)
        }
        other => {
            return Err(InputError::type_error(
                format!("{at}.function.arguments"),
                format!("must be a JSON string or an object, got {}", show(other)),
            ))
        }
    };
    let id = match c.get("id") {
        None | Some(Json::Null) => None,
        Some(Json::String(s)) => Some(s.clone()),
        other => {
            return Err(InputError::type_error(
                format!("{at}.id"),
                format!("must be a string, got {}", show(other)),
            ))
        }
    };
    Ok(ToolCall {
        id,
        name,
        arguments,
    })
}

/// A JSON value shortened for an error message.
pub(crate) fn show(v: Option<&Json>) -> String {
    match v {
        None => "undefined".into(),
        Some(v) => {
            let s = v.to_string();
            match s.char_indices().nth(57) {
                Some((cut, _)) if s.len() > 60 => format!("{}…", &s[..cut]),
                _ => s,
            }
        }
    }
}

fn str_field(v: &Json, key: &str, at: &str) -> Result<String, InputError> {
    match v.get(key) {
        Some(Json::String(s)) => Ok(s.clone()),
        other => Err(InputError::type_error(
            format!("{at}.{key}"),
            format!("must be a string, got {}", show(other)),
        )),
    }
}

fn opt_str_field(o: &Map<String, Json>, key: &str, at: &str) -> Result<Option<String>, InputError> {
    match o.get(key) {
        None | Some(Json::Null) => Ok(None),
        Some(Json::String(s)) => Ok(Some(s.clone())),
        other => Err(InputError::type_error(
            format!("{at}.{key}"),
            format!("must be a string, got {}", show(other)),
        )),
    }
}
