//! The OpenAI-compatible handler's decisions for JavaScript (`tinker_openai`, driven by
//! pkg/openai.js, which routes, renders, samples and parses): requests read into plans,
//! answers written as responses. JSON text in and out; nothing here decides.

use serde_json::{json, Value as Json};
use tinker_openai::request::{chat_request, completion_request, ModelRef, Sampling};
use tinker_openai::response::{self, Choice, Meta};
use tinker_openai::ApiError;
use wasm_bindgen::prelude::*;

use crate::wasm::convert::declare_params;
use crate::wasm::errors::type_error;

declare_params! {
    ts = OPENAI_TS;

    /// Options of `openaiFetch`.
    OpenAIFetchOptions("openaiFetch options") {
        /// The renderer of every request that names none (default: each model's recommended one).
        renderer: String => "?: RendererName",
        /// What a sampler's 429 does: `'reject'` (default) answers 429 in OpenAI's shape, with the
        /// sampler's `retry-after` headers, as an OpenAI-compatible server does (openai-node and
        /// the AI SDK back off and retry); `'wait'` backs off and samples again as the SDK does,
        /// until the request's own timeout or signal ends it.
        backpressure: String => "?: 'reject' | 'wait'",
    }
}

/// `openaiFetch`'s options read and checked, with their defaults: `{ renderer, backpressure }`.
#[wasm_bindgen(js_name = __openaiOptions, skip_typescript)]
pub fn options(v: JsValue) -> Result<JsValue, JsValue> {
    let o = OpenAIFetchOptions::read(&v)?;
    let backpressure = o.backpressure.unwrap_or_else(|| "reject".into());
    if backpressure != "reject" && backpressure != "wait" {
        return Err(type_error(
            "backpressure",
            format!("must be 'reject' or 'wait', got '{backpressure}'"),
        ));
    }
    let out = js_sys::Object::new();
    let _ = js_sys::Reflect::set(&out, &"backpressure".into(), &backpressure.into());
    if let Some(r) = o.renderer {
        let _ = js_sys::Reflect::set(&out, &"renderer".into(), &r.into());
    }
    Ok(out.into())
}

/// An `ApiError` as JS catches it: `{ status, body }` (the body OpenAI's error JSON text).
fn thrown(e: &ApiError) -> JsValue {
    let o = js_sys::Object::new();
    let _ = js_sys::Reflect::set(&o, &"status".into(), &f64::from(e.status).into());
    let _ = js_sys::Reflect::set(&o, &"body".into(), &e.json().to_string().into());
    o.into()
}

fn body(text: &str) -> Result<Json, JsValue> {
    super::python::read_json(text)
        .map_err(|e| thrown(&ApiError::invalid("body", format!("is not JSON: {e}"))))
}

fn target(t: &ModelRef) -> Json {
    json!({"base_model": t.base_model, "model_path": t.model_path})
}

fn sampling_params(s: &Sampling) -> Json {
    json!({"max_tokens": s.max_tokens, "temperature": s.temperature, "top_p": s.top_p, "top_k": s.top_k, "seed": s.seed, "stop": s.stop})
}

/// `POST /v1/chat/completions`'s body read: `{ model, target, messages, tools, sampling_params,
/// n, logprobs, top_logprobs, stream, renderer }` as JSON text; throws `{ status, body }`.
#[wasm_bindgen(js_name = __openaiChatPlan, skip_typescript)]
pub fn chat_plan(text: &str) -> Result<String, JsValue> {
    let r = chat_request(&body(text)?).map_err(|e| thrown(&e))?;
    Ok(json!({"model": r.model, "target": target(&r.target), "messages": r.messages, "tools": r.tools,
        "sampling_params": sampling_params(&r.sampling), "n": r.sampling.n, "logprobs": r.logprobs,
        "top_logprobs": r.top_logprobs, "stream": r.stream, "renderer": r.renderer})
    .to_string())
}

/// `POST /v1/completions`'s body read: `{ model, target, prompt (text or ids), sampling_params,
/// n, logprobs, stream }`.
#[wasm_bindgen(js_name = __openaiCompletionPlan, skip_typescript)]
pub fn completion_plan(text: &str) -> Result<String, JsValue> {
    let r = completion_request(&body(text)?).map_err(|e| thrown(&e))?;
    let prompt = match &r.prompt {
        tinker_openai::request::Prompt::Text(t) => json!(t),
        tinker_openai::request::Prompt::Tokens(t) => json!(t),
    };
    Ok(json!({"model": r.model, "target": target(&r.target), "prompt": prompt, "sampling_params": sampling_params(&r.sampling),
        "n": r.sampling.n, "logprobs": r.logprobs, "stream": r.stream})
    .to_string())
}

fn get(v: &JsValue, k: &str) -> JsValue {
    js_sys::Reflect::get(v, &k.into()).unwrap_or(JsValue::UNDEFINED)
}

/// The answer as JS hands it over (numbers read as the doubles JS holds, not through JSON
/// text): `{ id, created, prompt_tokens, choices: [{ message (JSON text), stop_reason,
/// texts, logprobs, top: [[text, logprob][]] }] }`.
fn choices(answer: &JsValue) -> (Meta, Vec<Choice>) {
    let num = |v: &JsValue, k: &str| get(v, k).as_f64().unwrap_or(0.0);
    let meta = Meta {
        id: get(answer, "id").as_string().unwrap_or_default(),
        created: num(answer, "created") as u64,
        prompt_tokens: num(answer, "prompt_tokens") as u64,
    };
    let strings = |v: JsValue| {
        js_sys::Array::from(&v)
            .iter()
            .map(|x| x.as_string().unwrap_or_default())
            .collect()
    };
    let floats = |v: JsValue| {
        js_sys::Array::from(&v)
            .iter()
            .map(|x| x.as_f64().unwrap_or(0.0))
            .collect()
    };
    let top = |v: JsValue| {
        js_sys::Array::from(&v)
            .iter()
            .map(|alts| {
                js_sys::Array::from(&alts)
                    .iter()
                    .map(|p| {
                        let p = js_sys::Array::from(&p);
                        (
                            p.get(0).as_string().unwrap_or_default(),
                            p.get(1).as_f64().unwrap_or(0.0),
                        )
                    })
                    .collect()
            })
            .collect()
    };
    let choice = |c: JsValue| Choice {
        message: get(&c, "message")
            .as_string()
            .and_then(|t| super::python::read_json(&t).ok())
            .unwrap_or(Json::Null),
        stop_reason: get(&c, "stop_reason")
            .as_string()
            .unwrap_or_else(|| "stop".into()),
        texts: strings(get(&c, "texts")),
        logprobs: floats(get(&c, "logprobs")),
        top: top(get(&c, "top")),
    };
    let list = js_sys::Array::from(&get(answer, "choices"));
    (meta, list.iter().map(choice).collect())
}

/// The chat answer (see `choices`) as the response body, or as its stream's chunks (JSON
/// texts).
#[wasm_bindgen(js_name = __openaiChatResponse, skip_typescript)]
pub fn chat_response(request: &str, answer: JsValue) -> Result<Vec<String>, JsValue> {
    let r = chat_request(&body(request)?).map_err(|e| thrown(&e))?;
    let (meta, c) = choices(&answer);
    Ok(if r.stream {
        response::chat_chunks(&r, &meta, &c)
            .iter()
            .map(Json::to_string)
            .collect()
    } else {
        vec![response::chat_completion(&r, &meta, &c).to_string()]
    })
}

/// The completion answer as the response body, or its stream's chunks.
#[wasm_bindgen(js_name = __openaiCompletionResponse, skip_typescript)]
pub fn completion_response(request: &str, answer: JsValue) -> Result<Vec<String>, JsValue> {
    let r = completion_request(&body(request)?).map_err(|e| thrown(&e))?;
    let (meta, c) = choices(&answer);
    Ok(response::completion(&r, &meta, &c)
        .iter()
        .map(Json::to_string)
        .collect())
}

/// `GET /v1/models`'s body from `[[id, owner], …]`.
#[wasm_bindgen(js_name = __openaiModels, skip_typescript)]
pub fn models(list: &str) -> Result<String, JsValue> {
    let list: Vec<(String, String)> =
        serde_json::from_str(list).map_err(|e| JsValue::from_str(&e.to_string()))?;
    Ok(response::models(&list).to_string())
}

/// An error in OpenAI's shape: `{ status, body }` (kind: `invalid` 400 with `param`,
/// `not_found` 404; any other status as given, typed `api_error`).
#[wasm_bindgen(js_name = __openaiError, skip_typescript)]
pub fn error(status: u16, message: &str, param: Option<String>) -> JsValue {
    let e = match (status, param) {
        (400, Some(p)) => ApiError {
            message: message.into(),
            ..ApiError::invalid(p, "")
        },
        (404, _) => ApiError::not_found(message),
        (s, p) => ApiError {
            status: s,
            kind: if s == 429 {
                "rate_limit_error"
            } else {
                "api_error"
            },
            message: message.into(),
            param: p,
        },
    };
    thrown(&e)
}
