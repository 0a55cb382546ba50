//! Requests as the OpenAI API takes them, read and checked: `POST /v1/chat/completions`
//! ([`chat_request`]) and `POST /v1/completions` ([`completion_request`]). Every parameter
//! OpenAI defines is either honoured, accepted because it changes nothing here (`user`,
//! `store`, `metadata`, …), or refused with a 400 naming it (a penalty, a forced tool
//! call: sampling on Tinker cannot honour them); an unknown one is refused too.

use serde_json::{Map, Value as Json};

use crate::error::ApiError;
use crate::messages::{openai_messages, openai_tools};

/// Which sampler serves a request: `model` as Tinker's OpenAI endpoint takes it (a base
/// model, a `tinker://…` sampler path, or `base;path`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ModelRef {
    /// The base model, when named.
    pub base_model: Option<String>,
    /// The sampler weights' path, when given.
    pub model_path: Option<String>,
}

impl ModelRef {
    /// Reads `model`.
    pub fn parse(model: &str) -> Result<ModelRef, ApiError> {
        let (base, path) = match model.split_once(';') {
            Some((b, p)) => (Some(b.trim()), Some(p.trim())),
            None if model.starts_with("tinker://") => (None, Some(model)),
            None => (Some(model), None),
        };
        if base.is_some_and(str::is_empty) || path.is_some_and(|p| !p.starts_with("tinker://")) {
            return Err(ApiError::invalid(
                "model",
                format!(
                    "must be a base model, a tinker:// sampler path, or base;path, got {model:?}"
                ),
            ));
        }
        Ok(ModelRef {
            base_model: base.map(String::from),
            model_path: path.map(String::from),
        })
    }
}

/// The sampling parameters a request asks for.
#[derive(Debug, Clone, PartialEq)]
pub struct Sampling {
    /// `max_tokens` / `max_completion_tokens` (none: until the context ends).
    pub max_tokens: Option<u64>,
    /// `temperature` (1).
    pub temperature: f64,
    /// `top_p` (1).
    pub top_p: f64,
    /// `top_k` (an extension; -1: off).
    pub top_k: i64,
    /// `seed`.
    pub seed: Option<i64>,
    /// `stop` (none: the renderer's stop sequences).
    pub stop: Option<Vec<String>>,
    /// `n` (1): how many answers.
    pub n: u64,
}

/// A checked `POST /v1/chat/completions`.
#[derive(Debug, Clone, PartialEq)]
pub struct ChatRequest {
    /// `model` as given (echoed in the response).
    pub model: String,
    /// The sampler it names.
    pub target: ModelRef,
    /// The messages in the renderers' shape.
    pub messages: Json,
    /// `tools` as the renderers' tool specs (`{name, description, parameters}`), if any.
    pub tools: Option<Json>,
    /// Sampling.
    pub sampling: Sampling,
    /// `logprobs`.
    pub logprobs: bool,
    /// `top_logprobs` (0 to 20).
    pub top_logprobs: u64,
    /// `stream`.
    pub stream: bool,
    /// `stream_options.include_usage`.
    pub include_usage: bool,
    /// `renderer` (an extension: a cookbook renderer name instead of the recommended one).
    pub renderer: Option<String>,
}

/// A checked `POST /v1/completions`.
#[derive(Debug, Clone, PartialEq)]
pub struct CompletionRequest {
    /// `model` as given.
    pub model: String,
    /// The sampler it names.
    pub target: ModelRef,
    /// `prompt`: text, or token ids.
    pub prompt: Prompt,
    /// Sampling (`max_tokens` defaults to 16, as OpenAI's).
    pub sampling: Sampling,
    /// `logprobs`: how many alternatives per token (none: no logprobs).
    pub logprobs: Option<u64>,
    /// `stream`.
    pub stream: bool,
    /// `stream_options.include_usage`.
    pub include_usage: bool,
}

/// A completion's prompt.
#[derive(Debug, Clone, PartialEq)]
pub enum Prompt {
    /// Text, tokenized without special tokens.
    Text(String),
    /// Token ids.
    Tokens(Vec<u32>),
}

/// Parameters accepted and ignored: they do not change the answer.
const IGNORED: &[&str] = &[
    "user",
    "store",
    "metadata",
    "parallel_tool_calls",
    "service_tier",
    "prompt_cache_key",
    "safety_identifier",
];

/// The request body as an object whose fields are read once each.
struct Fields<'a> {
    map: &'a Map<String, Json>,
}

impl<'a> Fields<'a> {
    fn new(body: &'a Json, known: &[&str]) -> Result<Self, ApiError> {
        let map = body
            .as_object()
            .ok_or_else(|| ApiError::invalid("body", "must be a JSON object"))?;
        if let Some(k) = map
            .keys()
            .find(|k| !known.contains(&k.as_str()) && !IGNORED.contains(&k.as_str()))
        {
            return Err(ApiError::invalid(
                k.clone(),
                "is not a parameter this server takes",
            ));
        }
        Ok(Fields { map })
    }

    fn get(&self, k: &str) -> Option<&'a Json> {
        self.map.get(k).filter(|v| !v.is_null())
    }

    fn num(&self, k: &str, lo: f64, hi: f64, default: f64) -> Result<f64, ApiError> {
        let Some(v) = self.get(k) else {
            return Ok(default);
        };
        match v.as_f64() {
            Some(x) if (lo..=hi).contains(&x) => Ok(x),
            _ => Err(ApiError::invalid(
                k,
                format!("must be a number from {lo} to {hi}, got {v}"),
            )),
        }
    }

    fn int(&self, k: &str, lo: i64, hi: i64) -> Result<Option<i64>, ApiError> {
        let Some(v) = self.get(k) else {
            return Ok(None);
        };
        match v.as_i64() {
            Some(x) if (lo..=hi).contains(&x) => Ok(Some(x)),
            _ => Err(ApiError::invalid(
                k,
                format!("must be a whole number from {lo} to {hi}, got {v}"),
            )),
        }
    }

    fn bool(&self, k: &str) -> Result<bool, ApiError> {
        match self.get(k) {
            None => Ok(false),
            Some(Json::Bool(b)) => Ok(*b),
            Some(v) => Err(ApiError::invalid(k, format!("must be a boolean, got {v}"))),
        }
    }

    /// A parameter Tinker's sampling cannot honour: refused unless it asks for nothing.
    fn unsupported(
        &self,
        k: &str,
        neutral: impl Fn(&Json) -> bool,
        why: &str,
    ) -> Result<(), ApiError> {
        match self.get(k) {
            Some(v) if !neutral(v) => Err(ApiError::invalid(
                k,
                format!("is not supported: {why} (got {v})"),
            )),
            _ => Ok(()),
        }
    }
}

fn model(f: &Fields) -> Result<(String, ModelRef), ApiError> {
    let m = f.get("model").and_then(Json::as_str).ok_or_else(|| {
        ApiError::invalid(
            "model",
            "is required (a base model, a tinker:// sampler path, or base;path)",
        )
    })?;
    Ok((m.to_string(), ModelRef::parse(m)?))
}

fn stop(f: &Fields) -> Result<Option<Vec<String>>, ApiError> {
    let bad = |v: &Json| {
        ApiError::invalid(
            "stop",
            format!("must be a string or a list of up to 4 strings, got {v}"),
        )
    };
    match f.get("stop") {
        None => Ok(None),
        Some(Json::String(s)) => Ok(Some(vec![s.clone()])),
        Some(v @ Json::Array(a)) if a.len() <= 4 => a
            .iter()
            .map(|s| s.as_str().map(String::from).ok_or_else(|| bad(v)))
            .collect::<Result<Vec<_>, _>>()
            .map(Some),
        Some(v) => Err(bad(v)),
    }
}

fn sampling(f: &Fields, max_default: Option<u64>) -> Result<Sampling, ApiError> {
    let max = f
        .int("max_completion_tokens", 1, i64::MAX)?
        .or(f.int("max_tokens", 1, i64::MAX)?);
    f.unsupported(
        "frequency_penalty",
        |v| v.as_f64() == Some(0.0),
        "Tinker samples without penalties",
    )?;
    f.unsupported(
        "presence_penalty",
        |v| v.as_f64() == Some(0.0),
        "Tinker samples without penalties",
    )?;
    f.unsupported(
        "logit_bias",
        |v| v.as_object().is_some_and(Map::is_empty),
        "Tinker samples without logit biases",
    )?;
    Ok(Sampling {
        max_tokens: max.map(|m| m as u64).or(max_default),
        temperature: f.num("temperature", 0.0, 2.0, 1.0)?,
        top_p: f.num("top_p", 0.0, 1.0, 1.0)?,
        top_k: f.int("top_k", -1, i64::from(u32::MAX))?.unwrap_or(-1),
        seed: f.int("seed", i64::MIN, i64::MAX)?,
        stop: stop(f)?,
        n: f.int("n", 1, 128)?.unwrap_or(1) as u64,
    })
}

fn stream_usage(f: &Fields) -> Result<bool, ApiError> {
    match f.get("stream_options") {
        None => Ok(false),
        Some(Json::Object(o)) => Ok(o.get("include_usage") == Some(&Json::Bool(true))),
        Some(v) => Err(ApiError::invalid(
            "stream_options",
            format!("must be an object, got {v}"),
        )),
    }
}

/// The parameters of `POST /v1/chat/completions`.
const CHAT: &[&str] = &[
    "model",
    "messages",
    "tools",
    "tool_choice",
    "max_tokens",
    "max_completion_tokens",
    "temperature",
    "top_p",
    "top_k",
    "seed",
    "stop",
    "n",
    "logprobs",
    "top_logprobs",
    "stream",
    "stream_options",
    "frequency_penalty",
    "presence_penalty",
    "logit_bias",
    "response_format",
    "renderer",
];

/// Reads `POST /v1/chat/completions`.
pub fn chat_request(body: &Json) -> Result<ChatRequest, ApiError> {
    let f = Fields::new(body, CHAT)?;
    let (model, target) = model(&f)?;
    let messages = openai_messages(
        f.get("messages")
            .ok_or_else(|| ApiError::invalid("messages", "is required"))?,
    )?;
    let tools = f
        .get("tools")
        .map(openai_tools)
        .transpose()?
        .filter(|t| t.as_array().is_some_and(|a| !a.is_empty()));
    f.unsupported(
        "tool_choice",
        |v| matches!(v.as_str(), Some("auto" | "none")),
        "Tinker samples freely, so a tool call cannot be forced (use \"auto\")",
    )?;
    let tools = if f.get("tool_choice").and_then(Json::as_str) == Some("none") {
        None
    } else {
        tools
    };
    f.unsupported(
        "response_format",
        |v| v.get("type").and_then(Json::as_str) == Some("text"),
        "Tinker samples freely, so the output cannot be constrained",
    )?;
    let logprobs = f.bool("logprobs")?;
    let top_logprobs = f.int("top_logprobs", 0, 20)?.unwrap_or(0) as u64;
    if top_logprobs > 0 && !logprobs {
        return Err(ApiError::invalid("top_logprobs", "needs logprobs: true"));
    }
    Ok(ChatRequest {
        model,
        target,
        messages,
        tools,
        sampling: sampling(&f, None)?,
        logprobs,
        top_logprobs,
        stream: f.bool("stream")?,
        include_usage: stream_usage(&f)?,
        renderer: f
            .get("renderer")
            .map(|r| {
                r.as_str().map(String::from).ok_or_else(|| {
                    ApiError::invalid("renderer", format!("must be a renderer name, got {r}"))
                })
            })
            .transpose()?,
    })
}

/// The parameters of `POST /v1/completions`.
const COMPLETION: &[&str] = &[
    "model",
    "prompt",
    "max_tokens",
    "temperature",
    "top_p",
    "top_k",
    "seed",
    "stop",
    "n",
    "logprobs",
    "stream",
    "stream_options",
    "frequency_penalty",
    "presence_penalty",
    "logit_bias",
    "echo",
    "best_of",
    "suffix",
];

fn prompt(v: Option<&Json>) -> Result<Prompt, ApiError> {
    let bad = |v: &Json| {
        ApiError::invalid(
            "prompt",
            format!("must be a string, or a list of token ids (one prompt per request), got {v}"),
        )
    };
    match v {
        None => Err(ApiError::invalid("prompt", "is required")),
        Some(Json::String(s)) => Ok(Prompt::Text(s.clone())),
        Some(Json::Array(a)) if a.len() == 1 && a[0].is_string() => {
            Ok(Prompt::Text(a[0].as_str().unwrap_or_default().into()))
        }
        Some(v @ Json::Array(a)) if !a.is_empty() => a
            .iter()
            .map(|t| {
                t.as_u64()
                    .and_then(|t| u32::try_from(t).ok())
                    .ok_or_else(|| bad(v))
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Prompt::Tokens),
        Some(v) => Err(bad(v)),
    }
}

/// Reads `POST /v1/completions`.
pub fn completion_request(body: &Json) -> Result<CompletionRequest, ApiError> {
    let f = Fields::new(body, COMPLETION)?;
    let (model, target) = model(&f)?;
    f.unsupported(
        "echo",
        |v| v == &Json::Bool(false),
        "the prompt is not sampled",
    )?;
    f.unsupported("best_of", |v| v.as_u64() == Some(1), "use n")?;
    f.unsupported(
        "suffix",
        |v| v.as_str() == Some(""),
        "Tinker samples left to right",
    )?;
    Ok(CompletionRequest {
        model,
        target,
        prompt: prompt(f.get("prompt"))?,
        sampling: sampling(&f, Some(16))?,
        logprobs: f.int("logprobs", 0, 5)?.map(|n| n as u64),
        stream: f.bool("stream")?,
        include_usage: stream_usage(&f)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn chat(extra: Json) -> Result<ChatRequest, ApiError> {
        let mut body =
            json!({"model": "Qwen/Qwen3-8B", "messages": [{"role": "user", "content": "Hi"}]});
        body.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        chat_request(&body)
    }

    #[test]
    fn models_are_read_as_tinker_s_endpoint_takes_them() {
        let table = [
            ("Qwen/Qwen3-8B", Some("Qwen/Qwen3-8B"), None),
            (
                "tinker://r:train:0/sampler_weights/final",
                None,
                Some("tinker://r:train:0/sampler_weights/final"),
            ),
            (
                "Qwen/Qwen3-8B;tinker://r/sampler_weights/1",
                Some("Qwen/Qwen3-8B"),
                Some("tinker://r/sampler_weights/1"),
            ),
        ];
        for (m, base, path) in table {
            let r = ModelRef::parse(m).unwrap();
            assert_eq!(
                (r.base_model.as_deref(), r.model_path.as_deref()),
                (base, path),
                "{m}"
            );
        }
        assert_eq!(
            ModelRef::parse(";x").unwrap_err().param.as_deref(),
            Some("model")
        );
    }

    #[test]
    fn parameters_are_read_with_openai_s_defaults() {
        let r = chat(json!({})).unwrap();
        assert_eq!(
            r.sampling,
            Sampling {
                max_tokens: None,
                temperature: 1.0,
                top_p: 1.0,
                top_k: -1,
                seed: None,
                stop: None,
                n: 1
            }
        );
        let r = chat(json!({"max_completion_tokens": 7, "max_tokens": 9, "temperature": 0, "stop": "END", "n": 2, "seed": 3, "top_k": 5, "logprobs": true, "top_logprobs": 2, "stream": true, "stream_options": {"include_usage": true}, "user": "u1"})).unwrap();
        assert_eq!(
            (
                r.sampling.max_tokens,
                r.sampling.temperature,
                r.sampling.n,
                r.sampling.seed,
                r.sampling.top_k
            ),
            (Some(7), 0.0, 2, Some(3), 5)
        );
        assert_eq!(r.sampling.stop, Some(vec!["END".to_string()]));
        assert!(r.logprobs && r.top_logprobs == 2 && r.stream && r.include_usage);
        let c = completion_request(&json!({"model": "m", "prompt": "Once"})).unwrap();
        assert_eq!(
            (c.sampling.max_tokens, c.prompt),
            (Some(16), Prompt::Text("Once".into()))
        );
    }

    #[test]
    fn bad_parameters_are_refused_naming_them() {
        let table = [
            (json!({"temperature": 3}), "temperature"),
            (json!({"top_p": "x"}), "top_p"),
            (json!({"n": 0}), "n"),
            (json!({"max_tokens": 0}), "max_tokens"),
            (json!({"stop": ["a", "b", "c", "d", "e"]}), "stop"),
            (json!({"top_logprobs": 3}), "top_logprobs"),
            (json!({"frequency_penalty": 0.5}), "frequency_penalty"),
            (json!({"tool_choice": "required"}), "tool_choice"),
            (
                json!({"response_format": {"type": "json_object"}}),
                "response_format",
            ),
            (json!({"temprature": 1}), "temprature"),
            (json!({"messages": []}), "messages"),
            (json!({"stream": "yes"}), "stream"),
        ];
        for (extra, param) in table {
            let e = chat(extra.clone()).unwrap_err();
            assert_eq!(
                (e.status, e.param.as_deref()),
                (400, Some(param)),
                "{extra}: {e}"
            );
        }
        let e =
            completion_request(&json!({"model": "m", "prompt": "x", "echo": true})).unwrap_err();
        assert_eq!(e.param.as_deref(), Some("echo"));
        assert_eq!(
            chat_request(&json!({"messages": []}))
                .unwrap_err()
                .param
                .as_deref(),
            Some("model")
        );
    }
}
