//! Sampled answers as OpenAI responses: `chat.completion` objects and their stream chunks
//! (the message as the renderer parsed it: `content`, `reasoning_content` from thinking,
//! `tool_calls`; `finish_reason`; token logprobs; `usage`), `text_completion` objects, and
//! the `/v1/models` list. Tinker samples whole sequences, so a stream is the finished
//! answer cut at its tokens.

use serde_json::{json, Map, Value as Json};

use crate::request::{ChatRequest, CompletionRequest};

/// One sampled answer, as the driver has it after sampling and parsing.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Choice {
    /// The parsed message (renderers' shape), or for a completion none.
    pub message: Json,
    /// The sampler's stop reason (`stop`, `length`).
    pub stop_reason: String,
    /// The sampled tokens' text, one per token.
    pub texts: Vec<String>,
    /// Their logprobs.
    pub logprobs: Vec<f64>,
    /// Each token's alternatives (`(text, logprob)`), when asked for.
    pub top: Vec<Vec<(String, f64)>>,
}

/// The response's identity: its id, creation time (Unix seconds) and prompt tokens.
#[derive(Debug, Clone, PartialEq)]
pub struct Meta {
    /// `id`.
    pub id: String,
    /// `created`.
    pub created: u64,
    /// `usage.prompt_tokens` (per prompt).
    pub prompt_tokens: u64,
}

fn text_of(content: &Json, kind: &str, key: &str, sep: &str) -> Option<String> {
    match content {
        Json::String(s) if kind == "text" => Some(s.clone()),
        Json::Array(parts) => {
            let t: Vec<&str> = parts
                .iter()
                .filter(|p| p["type"] == kind)
                .filter_map(|p| p[key].as_str())
                .collect();
            (!t.is_empty()).then(|| t.join(sep))
        }
        _ => None,
    }
}

/// The OpenAI form of the answer's tool calls (ids made up where the model gave none).
fn tool_calls(message: &Json, choice: usize) -> Vec<Json> {
    let calls = message
        .get("tool_calls")
        .and_then(Json::as_array)
        .cloned()
        .unwrap_or_default();
    calls
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let args = &c["function"]["arguments"];
            let args = args.as_str().map_or_else(|| args.to_string(), String::from);
            let id = c["id"].as_str().map_or_else(|| format!("call_{choice}_{i}"), String::from);
            json!({"id": id, "type": "function", "function": {"name": c["function"]["name"], "arguments": args}})
        })
        .collect()
}

fn finish_reason(c: &Choice, calls: &[Json]) -> &'static str {
    if !calls.is_empty() {
        "tool_calls"
    } else if c.stop_reason == "length" {
        "length"
    } else {
        "stop"
    }
}

/// The assistant message of a choice: content, reasoning_content, tool_calls.
fn assistant(c: &Choice, index: usize) -> (Map<String, Json>, Vec<Json>) {
    let content = text_of(&c.message["content"], "text", "text", "");
    let calls = tool_calls(&c.message, index);
    let mut m = Map::new();
    m.insert("role".into(), json!("assistant"));
    // OpenAI's content is null on a message that only calls tools.
    let content = match content.filter(|t| !t.is_empty() || calls.is_empty()) {
        Some(t) => json!(t),
        None if calls.is_empty() => json!(""),
        None => Json::Null,
    };
    m.insert("content".into(), content);
    if let Some(r) = text_of(&c.message["content"], "thinking", "thinking", "\n") {
        m.insert("reasoning_content".into(), json!(r));
    }
    if !calls.is_empty() {
        m.insert("tool_calls".into(), Json::Array(calls.clone()));
    }
    m.insert("refusal".into(), Json::Null);
    (m, calls)
}

fn token_logprob(text: &str, lp: f64) -> Map<String, Json> {
    let mut m = Map::new();
    m.insert("token".into(), json!(text));
    m.insert("logprob".into(), json!(lp));
    m.insert("bytes".into(), json!(text.as_bytes()));
    m
}

/// `choices[].logprobs.content` for tokens `range` of a choice.
fn chat_logprobs(c: &Choice, range: std::ops::Range<usize>) -> Json {
    let content: Vec<Json> = range
        .map(|i| {
            let mut m = token_logprob(&c.texts[i], c.logprobs[i]);
            let top = c
                .top
                .get(i)
                .map(|t| {
                    t.iter()
                        .map(|(s, l)| Json::Object(token_logprob(s, *l)))
                        .collect()
                })
                .unwrap_or_default();
            m.insert("top_logprobs".into(), Json::Array(top));
            Json::Object(m)
        })
        .collect();
    json!({"content": content, "refusal": null})
}

fn usage(meta: &Meta, n_prompts: u64, choices: &[Choice]) -> Json {
    let prompt = meta.prompt_tokens * n_prompts;
    let completion: u64 = choices.iter().map(|c| c.texts.len() as u64).sum();
    json!({"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion})
}

/// The `chat.completion` object.
pub fn chat_completion(req: &ChatRequest, meta: &Meta, choices: &[Choice]) -> Json {
    let out: Vec<Json> = choices
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let (message, calls) = assistant(c, i);
            let logprobs = if req.logprobs { chat_logprobs(c, 0..c.texts.len()) } else { Json::Null };
            json!({"index": i, "message": message, "logprobs": logprobs, "finish_reason": finish_reason(c, &calls)})
        })
        .collect();
    json!({"id": meta.id, "object": "chat.completion", "created": meta.created, "model": req.model, "choices": out, "usage": usage(meta, 1, choices)})
}

/// The content cut at the sampled tokens: each token's text while the content goes on
/// with it (the answer's own text), then what is left in one piece.
fn pieces(content: &str, texts: &[String]) -> Vec<(String, usize)> {
    let (mut out, mut at) = (Vec::new(), 0);
    for t in texts {
        if t.is_empty() || !content[at..].starts_with(t.as_str()) {
            break;
        }
        out.push((t.clone(), 1));
        at += t.len();
    }
    if at < content.len() {
        out.push((
            content[at..].to_string(),
            texts.len().saturating_sub(out.len()),
        ));
    }
    out
}

/// The stream of a `chat.completion`: per choice its role, reasoning, content cut at its
/// tokens (with their logprobs), tool calls, then its finish reason; the usage last when
/// asked for (`stream_options.include_usage`).
pub fn chat_chunks(req: &ChatRequest, meta: &Meta, choices: &[Choice]) -> Vec<Json> {
    let chunk = |index: usize, delta: Json, logprobs: Json, finish: Json| {
        let mut m = json!({"id": meta.id, "object": "chat.completion.chunk", "created": meta.created, "model": req.model,
            "choices": [{"index": index, "delta": delta, "logprobs": logprobs, "finish_reason": finish}]});
        if req.include_usage {
            m["usage"] = Json::Null;
        }
        m
    };
    let mut out = Vec::new();
    for (i, c) in choices.iter().enumerate() {
        let (message, calls) = assistant(c, i);
        out.push(chunk(
            i,
            json!({"role": "assistant", "content": ""}),
            Json::Null,
            Json::Null,
        ));
        if let Some(r) = message.get("reasoning_content") {
            out.push(chunk(
                i,
                json!({"reasoning_content": r}),
                Json::Null,
                Json::Null,
            ));
        }
        let mut token = 0;
        for (text, n) in pieces(message["content"].as_str().unwrap_or_default(), &c.texts) {
            let lp = if req.logprobs {
                chat_logprobs(c, token..(token + n).min(c.texts.len()))
            } else {
                Json::Null
            };
            token += n;
            out.push(chunk(i, json!({"content": text}), lp, Json::Null));
        }
        for (k, call) in calls.iter().enumerate() {
            let mut d = call.clone();
            d["index"] = json!(k);
            out.push(chunk(i, json!({"tool_calls": [d]}), Json::Null, Json::Null));
        }
        out.push(chunk(
            i,
            json!({}),
            Json::Null,
            json!(finish_reason(c, &calls)),
        ));
    }
    if req.include_usage {
        out.push(json!({"id": meta.id, "object": "chat.completion.chunk", "created": meta.created, "model": req.model, "choices": [], "usage": usage(meta, 1, choices)}));
    }
    out
}

/// A completion's `logprobs` (the legacy shape: tokens, their logprobs, alternatives and
/// offsets into the text).
fn completion_logprobs(c: &Choice, alternatives: u64) -> Json {
    let offsets: Vec<usize> = c
        .texts
        .iter()
        .scan(0, |at, t| {
            let here = *at;
            *at += t.len();
            Some(here)
        })
        .collect();
    let top: Vec<Json> = (0..c.texts.len())
        .map(|i| {
            let alts = c.top.get(i).map(|t| {
                t.iter()
                    .take(alternatives as usize)
                    .map(|(s, l)| (s.clone(), json!(l)))
                    .collect::<Map<_, _>>()
            });
            Json::Object(alts.unwrap_or_default())
        })
        .collect();
    json!({"tokens": c.texts, "token_logprobs": c.logprobs, "top_logprobs": top, "text_offset": offsets})
}

/// The `text_completion` object (`stream`: its chunks, one per choice and token).
pub fn completion(req: &CompletionRequest, meta: &Meta, choices: &[Choice]) -> Vec<Json> {
    let reason = |c: &Choice| {
        if c.stop_reason == "length" {
            "length"
        } else {
            "stop"
        }
    };
    let logprobs = |c: &Choice, r: std::ops::Range<usize>| {
        req.logprobs.map_or(Json::Null, |n| {
            let part = Choice {
                texts: c.texts[r.clone()].to_vec(),
                logprobs: c.logprobs[r.clone()].to_vec(),
                top: c.top.get(r).map(<[_]>::to_vec).unwrap_or_default(),
                ..Choice::default()
            };
            completion_logprobs(&part, n)
        })
    };
    let object = |choices: Vec<Json>| json!({"id": meta.id, "object": "text_completion", "created": meta.created, "model": req.model, "choices": choices});
    if !req.stream {
        let out = choices
            .iter()
            .enumerate()
            .map(|(i, c)| json!({"index": i, "text": c.texts.concat(), "logprobs": logprobs(c, 0..c.texts.len()), "finish_reason": reason(c)}))
            .collect();
        let mut o = object(out);
        o["usage"] = usage(meta, 1, choices);
        return vec![o];
    }
    let mut out = Vec::new();
    for (i, c) in choices.iter().enumerate() {
        for t in 0..c.texts.len() {
            let last = t + 1 == c.texts.len();
            let finish = if last { json!(reason(c)) } else { Json::Null };
            out.push(object(vec![json!({"index": i, "text": c.texts[t], "logprobs": logprobs(c, t..t + 1), "finish_reason": finish})]));
        }
        if c.texts.is_empty() {
            out.push(object(vec![
                json!({"index": i, "text": "", "logprobs": Json::Null, "finish_reason": reason(c)}),
            ]));
        }
    }
    if req.include_usage {
        let mut o = object(Vec::new());
        o["usage"] = usage(meta, 1, choices);
        out.push(o);
    }
    out
}

/// `GET /v1/models`: `(id, owner)` pairs.
pub fn models(list: &[(String, String)]) -> Json {
    let data: Vec<Json> = list
        .iter()
        .map(|(id, owner)| json!({"id": id, "object": "model", "created": 0, "owned_by": owner}))
        .collect();
    json!({"object": "list", "data": data})
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::{chat_request, completion_request};

    fn choice(content: Json, texts: &[&str], stop: &str) -> Choice {
        Choice {
            message: json!({"role": "assistant", "content": content}),
            stop_reason: stop.into(),
            texts: texts.iter().map(|t| t.to_string()).collect(),
            logprobs: texts
                .iter()
                .enumerate()
                .map(|(i, _)| -(i as f64) - 0.5)
                .collect(),
            top: Vec::new(),
        }
    }

    fn meta() -> Meta {
        Meta {
            id: "chatcmpl-1".into(),
            created: 7,
            prompt_tokens: 10,
        }
    }

    #[test]
    fn a_chat_answer_has_openai_s_message_finish_reason_logprobs_and_usage() {
        let req = chat_request(&json!({"model": "m", "messages": [{"role": "user", "content": "hi"}], "logprobs": true})).unwrap();
        let thought = choice(
            json!([{"type": "thinking", "thinking": "hm"}, {"type": "text", "text": "Hello!"}]),
            &["Hel", "lo", "!", "<|im_end|>"],
            "stop",
        );
        let r = chat_completion(&req, &meta(), &[thought]);
        let c = &r["choices"][0];
        assert_eq!(
            (
                c["message"]["content"].as_str(),
                c["message"]["reasoning_content"].as_str(),
                c["finish_reason"].as_str()
            ),
            (Some("Hello!"), Some("hm"), Some("stop"))
        );
        assert_eq!(
            c["logprobs"]["content"][1],
            json!({"token": "lo", "logprob": -1.5, "bytes": [108, 111], "top_logprobs": []})
        );
        assert_eq!(
            r["usage"],
            json!({"prompt_tokens": 10, "completion_tokens": 4, "total_tokens": 14})
        );
        // A tool call (no id from the model: one made up), and an answer cut at max_tokens.
        let mut call = choice(json!(""), &["x"], "stop");
        call.message["tool_calls"] = json!([{"function": {"name": "f", "arguments": {"a": 1}}}]);
        let r = chat_completion(
            &req,
            &meta(),
            &[call, choice(json!("Hi"), &["Hi"], "length")],
        );
        assert_eq!(
            r["choices"][0]["message"]["tool_calls"],
            json!([{"id": "call_0_0", "type": "function", "function": {"name": "f", "arguments": "{\"a\":1}"}}])
        );
        assert_eq!(
            (
                r["choices"][0]["message"]["content"].clone(),
                r["choices"][0]["finish_reason"].as_str()
            ),
            (Json::Null, Some("tool_calls"))
        );
        assert_eq!(r["choices"][1]["finish_reason"], "length");
    }

    #[test]
    fn a_stream_is_the_answer_cut_at_its_tokens() {
        let req = chat_request(&json!({"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": true, "logprobs": true, "stream_options": {"include_usage": true}})).unwrap();
        let chunks = chat_chunks(
            &req,
            &meta(),
            &[choice(
                json!("Hello!"),
                &["Hel", "lo", "!", "<|im_end|>"],
                "stop",
            )],
        );
        let deltas: Vec<Json> = chunks
            .iter()
            .filter_map(|c| c["choices"].get(0).map(|x| x["delta"].clone()))
            .collect();
        assert_eq!(
            deltas,
            [
                json!({"role": "assistant", "content": ""}),
                json!({"content": "Hel"}),
                json!({"content": "lo"}),
                json!({"content": "!"}),
                json!({})
            ]
        );
        assert_eq!(
            chunks[1]["choices"][0]["logprobs"]["content"][0]["token"],
            "Hel"
        );
        assert_eq!(chunks.last().unwrap()["usage"]["completion_tokens"], 4);
        assert_eq!(chunks[3]["usage"], Json::Null);
        // Text the tokens do not spell out goes in one piece.
        assert_eq!(
            pieces("Hi there", &["Hi".into(), "<x>".into()]),
            [("Hi".to_string(), 1), (" there".to_string(), 1)]
        );
    }

    #[test]
    fn completions_and_models() {
        let req =
            completion_request(&json!({"model": "m", "prompt": "Once", "logprobs": 1})).unwrap();
        let mut c = choice(Json::Null, &[" upon", " a"], "length");
        c.top = vec![
            vec![(" upon".into(), -0.5)],
            vec![(" a".into(), -1.5), (" the".into(), -2.0)],
        ];
        let r = &completion(&req, &meta(), &[c])[0];
        assert_eq!(
            (
                r["choices"][0]["text"].as_str(),
                r["choices"][0]["finish_reason"].as_str()
            ),
            (Some(" upon a"), Some("length"))
        );
        assert_eq!(r["choices"][0]["logprobs"]["text_offset"], json!([0, 5]));
        assert_eq!(
            r["choices"][0]["logprobs"]["top_logprobs"][1],
            json!({" a": -1.5})
        );
        assert_eq!(
            models(&[("Qwen/Qwen3-8B".into(), "tinker".into())])["data"][0]["id"],
            "Qwen/Qwen3-8B"
        );
    }
}
