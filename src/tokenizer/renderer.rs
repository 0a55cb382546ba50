//! Renderers, as in tinker-cookbook: a conversation → tokens for sampling
//! ([`Renderer::build_generation_prompt`]) or tokens + per-token weights for supervised
//! training ([`Renderer::build_supervised_example`]) → a `cross_entropy` [`Datum`].
//!
//! Each message renders as a *header* (role markers; weight only with
//! [`TrainOnWhat::AllTokens`]) and an *output* (content and end-of-turn token), each
//! encoded on its own, exactly as the cookbook's `render_message` does.

use serde_json::Value as Json;

use super::chat::py_json_dumps;
use super::{Tokenizer, TokenizerError};
use crate::types::{Datum, InputError, LossFnInputs, ModelInput, TensorData};

/// A message's role (`system`, `user`, `assistant`, `tool`, or another string).
pub type Role = String;

/// One part of structured content.
#[derive(Debug, Clone, PartialEq)]
pub enum Part {
    /// Visible text.
    Text(String),
    /// Reasoning (rendered inside `<think>…</think>` by Qwen3).
    Thinking(String),
}

/// Message content: a string, or a list of text/thinking parts.
#[derive(Debug, Clone, PartialEq)]
pub enum Content {
    /// Plain text.
    Text(String),
    /// Structured parts.
    Parts(Vec<Part>),
}

/// A tool call made by an assistant message.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    /// The function name.
    pub name: String,
    /// The arguments as a JSON string.
    pub arguments: String,
}

/// A chat message.
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    /// Who speaks.
    pub role: Role,
    /// What is said.
    pub content: Content,
    /// Tool calls (assistant messages), `None` when absent.
    pub tool_calls: Option<Vec<ToolCall>>,
    /// Per-message training flag, for [`TrainOnWhat::Customized`].
    pub trainable: Option<bool>,
}

impl Message {
    /// Reads a message from JSON (`{role, content, tool_calls?, trainable?}`); errors
    /// name the field relative to `at` (e.g. `messages[2]`).
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
            Some(Json::Array(parts)) => {
                let mut out = Vec::with_capacity(parts.len());
                for (i, p) in parts.iter().enumerate() {
                    let pat = format!("{at}.content[{i}]");
                    let kind = p.get("type").and_then(Json::as_str);
                    match kind {
                        Some("text") => out.push(Part::Text(str_field(p, "text", &pat)?)),
                        Some("thinking") => {
                            out.push(Part::Thinking(str_field(p, "thinking", &pat)?))
                        }
                        _ => {
                            return Err(InputError::range_error(
                                format!("{pat}.type"),
                                format!(
                                    "must be \"text\" or \"thinking\", got {}",
                                    show(p.get("type"))
                                ),
                            ))
                        }
                    }
                }
                Content::Parts(out)
            }
            other => {
                return Err(InputError::type_error(
                    format!("{at}.content"),
                    format!("must be a string or an array of parts, got {}", show(other)),
                ))
            }
        };
        let tool_calls = match o.get("tool_calls") {
            None | Some(Json::Null) => None,
            Some(Json::Array(calls)) => {
                let mut out = Vec::with_capacity(calls.len());
                for (i, c) in calls.iter().enumerate() {
                    let cat = format!("{at}.tool_calls[{i}]");
                    // OpenAI shape {function: {name, arguments}} or flat {name, arguments}.
                    let f = c.get("function").unwrap_or(c);
                    let name = str_field(f, "name", &cat)?;
                    let arguments = match f.get("arguments") {
                        Some(Json::String(s)) => s.clone(),
                        Some(v @ Json::Object(_)) => serde_json::to_string(v).unwrap_or_default(),
                        other => {
                            return Err(InputError::type_error(
                                format!("{cat}.arguments"),
                                format!("must be a JSON string or an object, got {}", show(other)),
                            ))
                        }
                    };
                    out.push(ToolCall { name, arguments });
                }
                Some(out)
            }
            other => {
                return Err(InputError::type_error(
                    format!("{at}.tool_calls"),
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
            trainable,
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

    fn text(&self) -> Result<String, InputError> {
        match &self.content {
            Content::Text(s) => Ok(s.clone()),
            Content::Parts(p) => match p.as_slice() {
                [Part::Text(t)] => Ok(t.clone()),
                [] => Ok(String::new()),
                _ => Err(InputError::type_error(
                    "content",
                    "this renderer needs text content (one text part)",
                )),
            },
        }
    }
}

fn show(v: Option<&Json>) -> String {
    match v {
        None => "undefined".into(),
        Some(v) => {
            let s = v.to_string();
            if s.len() > 60 {
                format!(
                    "{}…",
                    &s[..s.char_indices().nth(57).map_or(s.len(), |x| x.0)]
                )
            } else {
                s
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

/// Which tokens of a conversation get training weight.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TrainOnWhat {
    /// Only the last message, if it is the assistant's (the default).
    LastAssistantMessage,
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
    pub const NAMES: [&'static str; 6] = [
        "last_assistant_message",
        "all_assistant_messages",
        "all_messages",
        "all_tokens",
        "all_user_and_system_messages",
        "customized",
    ];

    /// Parses a cookbook name.
    pub fn parse(s: &str) -> Result<TrainOnWhat, InputError> {
        Ok(match s {
            "last_assistant_message" => TrainOnWhat::LastAssistantMessage,
            "all_assistant_messages" => TrainOnWhat::AllAssistantMessages,
            "all_messages" => TrainOnWhat::AllMessages,
            "all_tokens" => TrainOnWhat::AllTokens,
            "all_user_and_system_messages" => TrainOnWhat::AllUserAndSystemMessages,
            "customized" => TrainOnWhat::Customized,
            _ => {
                return Err(InputError::range_error(
                    "trainOn",
                    format!(
                        "unknown value {s:?}; expected one of {}",
                        Self::NAMES.join(", ")
                    ),
                ))
            }
        })
    }
}

/// A chat format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RendererKind {
    /// Qwen3 with thinking: `<|im_start|>role\n…<|im_end|>`, `<think>` blocks.
    Qwen3 {
        /// Drop reasoning from assistant turns before the last (as the HF template does).
        strip_thinking_from_history: bool,
    },
    /// Qwen3 with thinking off: the generation prompt opens an empty `<think>` block.
    Qwen3DisableThinking,
    /// Qwen3 Instruct-2507 (no `<think>` framing).
    Qwen3Instruct,
    /// Llama 3: `<|start_header_id|>role<|end_header_id|>\n\n…<|eot_id|>`.
    Llama3,
}

impl RendererKind {
    /// The renderer names accepted by [`RendererKind::parse`].
    pub const NAMES: [&'static str; 4] = [
        "qwen3",
        "qwen3_disable_thinking",
        "qwen3_instruct",
        "llama3",
    ];

    /// Parses a cookbook renderer name.
    pub fn parse(name: &str) -> Result<RendererKind, InputError> {
        Ok(match name {
            "qwen3" => RendererKind::Qwen3 {
                strip_thinking_from_history: true,
            },
            "qwen3_disable_thinking" => RendererKind::Qwen3DisableThinking,
            "qwen3_instruct" => RendererKind::Qwen3Instruct,
            "llama3" => RendererKind::Llama3,
            _ => {
                return Err(InputError::range_error(
                    "renderer",
                    format!(
                        "unknown renderer {name:?}; expected one of {}",
                        Self::NAMES.join(", ")
                    ),
                ))
            }
        })
    }

    /// The cookbook name.
    pub fn name(self) -> &'static str {
        match self {
            RendererKind::Qwen3 { .. } => "qwen3",
            RendererKind::Qwen3DisableThinking => "qwen3_disable_thinking",
            RendererKind::Qwen3Instruct => "qwen3_instruct",
            RendererKind::Llama3 => "llama3",
        }
    }

    /// The renderer the cookbook recommends for a model name, if this SDK has it.
    pub fn for_model(model_name: &str) -> Option<RendererKind> {
        let base = model_name.split(':').next().unwrap_or_default();
        let lower = base.to_ascii_lowercase();
        if lower.starts_with("meta-llama/llama-3") {
            return Some(RendererKind::Llama3);
        }
        if lower.starts_with("qwen/qwen3") {
            if lower.contains("instruct-2507") {
                return Some(RendererKind::Qwen3Instruct);
            }
            if lower.contains("-base")
                || lower.contains("-vl")
                || lower.contains("qwen3.5")
                || lower.contains("qwen3-5")
            {
                return None;
            }
            return Some(RendererKind::Qwen3 {
                strip_thinking_from_history: true,
            });
        }
        None
    }
}

struct Rendered {
    header: String,
    output: String,
}

/// Renders conversations for one chat format with a tokenizer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Renderer {
    kind: RendererKind,
}

fn frame_thinking(reasoning: &str) -> String {
    format!("<think>\n{}\n</think>\n\n", reasoning.trim_matches('\n'))
}

impl Renderer {
    /// A renderer of `kind`.
    pub fn new(kind: RendererKind) -> Self {
        Renderer { kind }
    }

    /// Its kind.
    pub fn kind(&self) -> RendererKind {
        self.kind
    }

    fn single_token(tok: &Tokenizer, s: &str) -> Result<u32, TokenizerError> {
        match tok.encode(s, false)?.as_slice() {
            [id] => Ok(*id),
            other => Err(TokenizerError::Input(InputError::type_error(
                "tokenizer",
                format!("{s} should be one token in this tokenizer, got {} ids: is this the right renderer?", other.len()),
            ))),
        }
    }

    /// Token ids to stop sampling at (`SamplingParams.stop`): the end-of-turn token.
    pub fn stop_sequences(&self, tok: &Tokenizer) -> Result<Vec<u32>, TokenizerError> {
        let end = match self.kind {
            RendererKind::Llama3 => "<|eot_id|>",
            _ => "<|im_end|>",
        };
        Ok(vec![Self::single_token(tok, end)?])
    }

    fn bos(&self, tok: &Tokenizer) -> Result<Vec<u32>, TokenizerError> {
        match self.kind {
            RendererKind::Llama3 => Ok(tok.encode("<|begin_of_text|>", false)?),
            _ => Ok(vec![]),
        }
    }

    fn render_message(
        &self,
        msgs: &[Message],
        idx: usize,
        last_user: Option<usize>,
    ) -> Result<Rendered, InputError> {
        let m = &msgs[idx];
        let is_last = idx + 1 == msgs.len();
        let at = |e: InputError| e.within(&format!("messages[{idx}]"));
        match self.kind {
            RendererKind::Llama3 => {
                let role = if m.role == "tool" {
                    "ipython"
                } else {
                    m.role.as_str()
                };
                let header = format!("<|start_header_id|>{role}<|end_header_id|>\n\n");
                let content = m.text().map_err(at)?;
                let mut output = if m.role == "tool" {
                    py_json_dumps(&serde_json::json!({ "output": content }))
                } else {
                    content
                };
                for c in m.tool_calls.iter().flatten() {
                    output.push_str(&format!(
                        "{{\"name\": \"{}\", \"parameters\": {}}}",
                        c.name, c.arguments
                    ));
                }
                output.push_str("<|eot_id|>");
                Ok(Rendered { header, output })
            }
            RendererKind::Qwen3 { .. }
            | RendererKind::Qwen3DisableThinking
            | RendererKind::Qwen3Instruct => {
                let strip = match self.kind {
                    RendererKind::Qwen3 {
                        strip_thinking_from_history,
                    } => strip_thinking_from_history,
                    _ => true,
                };
                let frames_thinking = !matches!(self.kind, RendererKind::Qwen3Instruct);
                let role = if m.role == "tool" {
                    "user"
                } else {
                    m.role.as_str()
                };
                let header = format!("{}<|im_start|>{role}\n", if idx > 0 { "\n" } else { "" });
                // The HF template's rule: reasoning survives only in assistant turns after
                // the last user message, framed as `<think>\n…\n</think>\n\n` when it is
                // the last turn or has reasoning. Without stripping (the extension
                // property, as the cookbook does), every assistant turn is framed alike.
                let is_assistant = m.role == "assistant";
                let after_query = last_user.is_some_and(|u| idx > u);
                let reasoning = match &m.content {
                    Content::Text(c) => c.split_once("</think>").map(|(before, _)| {
                        let r = before.trim_end_matches('\n');
                        r.rsplit_once("<think>")
                            .map_or(r, |x| x.1)
                            .trim_start_matches('\n')
                            .to_owned()
                    }),
                    Content::Parts(p) => {
                        let r: String = p
                            .iter()
                            .filter_map(|p| match p {
                                Part::Thinking(t) => Some(t.as_str()),
                                Part::Text(_) => None,
                            })
                            .collect();
                        p.iter()
                            .any(|p| matches!(p, Part::Thinking(_)))
                            .then_some(r)
                    }
                };
                let has_reasoning = reasoning.as_deref().is_some_and(|r| !r.is_empty());
                let frames = frames_thinking
                    && is_assistant
                    && last_user.is_some()
                    && if strip {
                        after_query && (is_last || has_reasoning)
                    } else {
                        true
                    };
                let drop_thinking = strip && is_assistant && !after_query;
                let mut output = match &m.content {
                    Content::Parts(parts) => {
                        let mut s = String::new();
                        let mut after_block = false;
                        for p in parts {
                            match p {
                                Part::Thinking(t) => {
                                    if drop_thinking {
                                        continue;
                                    }
                                    if frames {
                                        s.push_str(&frame_thinking(t));
                                    } else {
                                        s.push_str(&format!("<think>{t}</think>"));
                                    }
                                    after_block = frames;
                                }
                                Part::Text(t) => {
                                    s.push_str(if after_block {
                                        t.trim_start_matches('\n')
                                    } else {
                                        t
                                    });
                                    after_block = false;
                                }
                            }
                        }
                        if frames && reasoning.is_none() {
                            s = frame_thinking("") + s.trim_start_matches('\n');
                        }
                        s
                    }
                    Content::Text(c) => {
                        let after = c.rsplit_once("</think>").map(|x| x.1);
                        if frames {
                            frame_thinking(reasoning.as_deref().unwrap_or_default())
                                + after.unwrap_or(c).trim_start_matches('\n')
                        } else if drop_thinking {
                            after.map_or_else(
                                || c.clone(),
                                |a| a.trim_start_matches('\n').to_owned(),
                            )
                        } else {
                            c.clone()
                        }
                    }
                };
                if m.role == "tool" {
                    output = format!("<tool_response>\n{output}\n</tool_response>");
                }
                if let Some(calls) = &m.tool_calls {
                    let mut parts = Vec::with_capacity(calls.len());
                    for (i, c) in calls.iter().enumerate() {
                        let args: Json = serde_json::from_str(&c.arguments).map_err(|e| {
                            InputError::type_error(
                                format!("messages[{idx}].tool_calls[{i}].arguments"),
                                format!("is not valid JSON: {e}"),
                            )
                        })?;
                        let payload = serde_json::json!({ "name": c.name, "arguments": args });
                        parts.push(format!(
                            "<tool_call>\n{}\n</tool_call>",
                            py_json_dumps(&payload)
                        ));
                    }
                    // The template separates the first call from the content only when
                    // there is (visible) content.
                    let visible = match &m.content {
                        Content::Text(c) => c
                            .rsplit_once("</think>")
                            .map_or(c.as_str(), |x| x.1.trim_start_matches('\n'))
                            .to_owned(),
                        Content::Parts(p) => p
                            .iter()
                            .filter_map(|p| match p {
                                Part::Text(t) => Some(t.as_str()),
                                Part::Thinking(_) => None,
                            })
                            .collect(),
                    };
                    if !visible.is_empty() {
                        output.push('\n');
                    }
                    output.push_str(&parts.join("\n"));
                }
                output.push_str("<|im_end|>");
                Ok(Rendered { header, output })
            }
        }
    }

    fn generation_suffix(&self, n_messages: usize, role: &str) -> String {
        match self.kind {
            RendererKind::Llama3 => format!("<|start_header_id|>{role}<|end_header_id|>\n\n"),
            RendererKind::Qwen3DisableThinking if role == "assistant" => format!(
                "{}<|im_start|>{role}\n<think>\n\n</think>\n\n",
                if n_messages > 0 { "\n" } else { "" }
            ),
            _ => format!(
                "{}<|im_start|>{role}\n",
                if n_messages > 0 { "\n" } else { "" }
            ),
        }
    }

    fn last_user(msgs: &[Message]) -> Option<usize> {
        msgs.iter().rposition(|m| m.role == "user")
    }

    /// Tokens for sampling the next `role` turn (usually `"assistant"`), optionally with
    /// a prefill the model continues from.
    pub fn build_generation_prompt(
        &self,
        tok: &Tokenizer,
        messages: &[Message],
        role: &str,
        prefill: Option<&str>,
    ) -> Result<ModelInput, TokenizerError> {
        let mut ids = self.bos(tok)?;
        let last_user = Self::last_user(messages);
        for idx in 0..messages.len() {
            let r = self.render_message(messages, idx, last_user)?;
            tok.encode_into(&r.header, false, &mut ids)?;
            tok.encode_into(&r.output, false, &mut ids)?;
        }
        tok.encode_into(
            &self.generation_suffix(messages.len(), role),
            false,
            &mut ids,
        )?;
        if let Some(p) = prefill {
            tok.encode_into(p, false, &mut ids)?;
        }
        Ok(ModelInput::from_ints(ids))
    }

    /// Tokens and per-token weights for supervised training on `messages`.
    pub fn build_supervised_example(
        &self,
        tok: &Tokenizer,
        messages: &[Message],
        train_on: TrainOnWhat,
    ) -> Result<(Vec<u32>, Vec<f32>), TokenizerError> {
        let mut ids = self.bos(tok)?;
        let mut weights = vec![0f32; ids.len()];
        let last_user = Self::last_user(messages);
        for (idx, m) in messages.iter().enumerate() {
            match (train_on, m.trainable) {
                (TrainOnWhat::Customized, None) => {
                    return Err(InputError::type_error(
                        format!("messages[{idx}].trainable"),
                        "is required on every message with trainOn \"customized\"",
                    )
                    .into())
                }
                (t, Some(_)) if t != TrainOnWhat::Customized => {
                    return Err(InputError::type_error(
                        format!("messages[{idx}].trainable"),
                        "is only allowed with trainOn \"customized\"",
                    )
                    .into())
                }
                _ => {}
            }
            let is_last = idx + 1 == messages.len();
            let is_assistant = m.role == "assistant";
            let r = self.render_message(messages, idx, last_user)?;
            let header_w = if train_on == TrainOnWhat::AllTokens {
                1.0
            } else {
                0.0
            };
            let n0 = ids.len();
            tok.encode_into(&r.header, false, &mut ids)?;
            weights.resize(ids.len(), header_w);
            let out_w = match train_on {
                TrainOnWhat::LastAssistantMessage => is_last && is_assistant,
                TrainOnWhat::AllAssistantMessages => is_assistant,
                TrainOnWhat::AllMessages | TrainOnWhat::AllTokens => true,
                TrainOnWhat::AllUserAndSystemMessages => m.role == "user" || m.role == "system",
                TrainOnWhat::Customized => m.trainable.unwrap_or(false),
            };
            let _ = n0;
            tok.encode_into(&r.output, false, &mut ids)?;
            weights.resize(ids.len(), if out_w { 1.0 } else { 0.0 });
        }
        Ok((ids, weights))
    }
}

impl Renderer {
    /// Parses sampled tokens back into an assistant message (JSON, in the shape this
    /// renderer takes as input), like the cookbook's `parse_response`. The second value
    /// is `true` when the response ended with the stop token (`false`: "malformed", e.g.
    /// cut by `max_tokens`; the message then holds the whole decoded text).
    ///
    /// Qwen3: `<think>…</think>` becomes a `thinking` part (framing newlines removed) and
    /// `<tool_call>{json}</tool_call>` blocks become `tool_calls`.
    pub fn parse_response(
        &self,
        tok: &Tokenizer,
        tokens: &[u32],
    ) -> Result<(Json, bool), TokenizerError> {
        let stop = self.stop_sequences(tok)?;
        let end = tokens.iter().position(|t| stop.contains(t));
        let text = tok.decode(&tokens[..end.unwrap_or(tokens.len())], false);
        let plain = |text: String| serde_json::json!({ "role": "assistant", "content": text });
        let Some(_) = end else {
            return Ok((plain(text), false));
        };
        if matches!(self.kind, RendererKind::Llama3)
            || (!text.contains("<think>") && !text.contains("<tool_call>"))
        {
            return Ok((plain(text), true));
        }
        let mut parts: Vec<Json> = Vec::new();
        let mut calls: Vec<Json> = Vec::new();
        let mut rest = text.as_str();
        let mut after_block = false;
        let push_text = |parts: &mut Vec<Json>, t: &str, after_block: bool| {
            let t = if after_block {
                t.trim_start_matches('\n')
            } else {
                t
            };
            if !t.is_empty() {
                parts.push(serde_json::json!({ "type": "text", "text": t }));
            }
        };
        loop {
            let think = rest.find("<think>");
            let call = rest.find("<tool_call>");
            let (at, is_think) = match (think, call) {
                (Some(a), Some(b)) => (a.min(b), a < b),
                (Some(a), None) => (a, true),
                (None, Some(b)) => (b, false),
                (None, None) => break,
            };
            let (open, close) = if is_think {
                ("<think>", "</think>")
            } else {
                ("<tool_call>", "</tool_call>")
            };
            let Some(len) = rest[at + open.len()..].find(close) else {
                break;
            };
            push_text(&mut parts, &rest[..at], after_block);
            let inner = &rest[at + open.len()..at + open.len() + len];
            if is_think {
                let r = inner.trim_matches('\n');
                if !r.is_empty() {
                    parts.push(serde_json::json!({ "type": "thinking", "thinking": r }));
                }
                after_block = true;
            } else {
                match serde_json::from_str::<Json>(inner.trim()) {
                    Ok(v)
                        if v.get("name").is_some_and(Json::is_string)
                            && v.get("arguments").is_some_and(Json::is_object) =>
                    {
                        calls.push(serde_json::json!({
                            "type": "function",
                            "function": { "name": v["name"], "arguments": py_json_dumps(&v["arguments"]) }
                        }));
                    }
                    _ => push_text(
                        &mut parts,
                        &rest[at..at + open.len() + len + close.len()],
                        false,
                    ),
                }
                after_block = false;
            }
            rest = &rest[at + open.len() + len + close.len()..];
        }
        push_text(&mut parts, rest, after_block);
        let mut msg = serde_json::json!({ "role": "assistant", "content": parts });
        if !calls.is_empty() {
            msg["tool_calls"] = Json::Array(calls);
        }
        Ok((msg, true))
    }
}

/// A `cross_entropy` datum from tokens and per-token weights (cookbook
/// `datum_from_model_input_weights`): optionally right-truncated to `max_length`, then
/// shifted by one so input position *i* predicts `target_tokens[i]`.
pub fn datum_from_tokens_weights(
    tokens: &[u32],
    weights: &[f32],
    max_length: Option<usize>,
) -> Result<Datum, InputError> {
    if tokens.len() != weights.len() {
        return Err(InputError::range_error(
            "weights",
            format!("has {} entries for {} tokens", weights.len(), tokens.len()),
        ));
    }
    let n = max_length.map_or(tokens.len(), |m| m.min(tokens.len()));
    if n < 2 {
        return Err(InputError::range_error(
            "tokens",
            format!("a datum needs at least 2 tokens (input and target), got {n}"),
        ));
    }
    let input = tokens[..n - 1].to_vec();
    let targets: Vec<i64> = tokens[1..n].iter().map(|&t| i64::from(t)).collect();
    let w = weights[1..n].to_vec();
    let mut inputs = LossFnInputs::new();
    inputs.insert("target_tokens", TensorData::from_i64(targets));
    inputs.insert("weights", TensorData::from_f32(w));
    Ok(Datum::new(ModelInput::from_ints(input), inputs))
}
