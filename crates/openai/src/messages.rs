//! OpenAI messages and tools into the renderers' shape, as tinker-cookbook's
//! `third_party/openai_compat.py` converts them (`openai_messages_to_tinker`): text and
//! parts (`image_url` becomes an image part), `reasoning_content` a leading thinking part,
//! `tool_calls`, `tool_call_id` and `name` kept; a function tool becomes a tool spec
//! (`{name, description, parameters}`). Anything else is refused naming where it is.

use serde_json::{json, Map, Value as Json};

use crate::error::ApiError;

const ROLES: &[&str] = &["system", "developer", "user", "assistant", "tool"];

fn part(p: &Json, at: &str) -> Result<Json, ApiError> {
    let kind = p.get("type").and_then(Json::as_str).unwrap_or_default();
    match kind {
        "text" => match p.get("text").and_then(Json::as_str) {
            Some(t) => Ok(json!({"type": "text", "text": t})),
            None => Err(ApiError::invalid(format!("{at}.text"), "must be a string")),
        },
        "image_url" => {
            let url = p
                .get("image_url")
                .and_then(|u| u.as_str().or_else(|| u.get("url")?.as_str()));
            match url {
                Some(u) => Ok(json!({"type": "image", "image": u})),
                None => Err(ApiError::invalid(
                    format!("{at}.image_url"),
                    "must be a URL or {\"url\": …}",
                )),
            }
        }
        other => Err(ApiError::invalid(
            format!("{at}.type"),
            format!("must be \"text\" or \"image_url\", got {other:?}"),
        )),
    }
}

fn content(m: &Json, at: &str) -> Result<Json, ApiError> {
    match m.get("content") {
        None | Some(Json::Null) => Ok(json!("")),
        Some(Json::String(s)) => Ok(json!(s)),
        Some(Json::Array(parts)) => parts
            .iter()
            .enumerate()
            .map(|(i, p)| part(p, &format!("{at}.content[{i}]")))
            .collect::<Result<Vec<_>, _>>()
            .map(Json::Array),
        Some(v) => Err(ApiError::invalid(
            format!("{at}.content"),
            format!("must be a string or a list of parts, got {v}"),
        )),
    }
}

/// `reasoning_content` of an assistant message as a leading thinking part.
fn with_reasoning(m: &Json, content: Json, at: &str) -> Result<Json, ApiError> {
    let Some(r) = m
        .get("reasoning_content")
        .filter(|r| !r.is_null() && r.as_str() != Some(""))
    else {
        return Ok(content);
    };
    let Some(r) = r.as_str() else {
        return Err(ApiError::invalid(
            format!("{at}.reasoning_content"),
            "must be a string",
        ));
    };
    if m["role"] != "assistant" {
        return Err(ApiError::invalid(
            format!("{at}.reasoning_content"),
            "is only valid on assistant messages",
        ));
    }
    let mut parts = vec![json!({"type": "thinking", "thinking": r})];
    match content {
        Json::String(s) if s.is_empty() => {}
        Json::String(s) => parts.push(json!({"type": "text", "text": s})),
        Json::Array(a) => parts.extend(a),
        _ => {}
    }
    Ok(Json::Array(parts))
}

fn message(m: &Json, at: &str) -> Result<Json, ApiError> {
    let role = m.get("role").and_then(Json::as_str).unwrap_or_default();
    if !ROLES.contains(&role) {
        return Err(ApiError::invalid(
            format!("{at}.role"),
            format!("must be one of {}, got {:?}", ROLES.join(", "), role),
        ));
    }
    // OpenAI's developer messages are system messages to a chat template.
    let role = if role == "developer" { "system" } else { role };
    let mut out = Map::new();
    out.insert("role".into(), json!(role));
    out.insert("content".into(), with_reasoning(m, content(m, at)?, at)?);
    for k in ["name", "tool_call_id"] {
        if let Some(v) = m.get(k).filter(|v| !v.is_null()) {
            out.insert(k.into(), v.clone());
        }
    }
    if let Some(calls) = m.get("tool_calls").filter(|v| !v.is_null()) {
        let ok = calls
            .as_array()
            .is_some_and(|a| a.iter().all(|c| c["function"]["name"].is_string()));
        if !ok || role != "assistant" {
            return Err(ApiError::invalid(format!("{at}.tool_calls"), "must be an assistant's list of {id, type: \"function\", function: {name, arguments}}"));
        }
        out.insert("tool_calls".into(), calls.clone());
    }
    Ok(Json::Object(out))
}

/// `messages` into the renderers' messages.
pub fn openai_messages(v: &Json) -> Result<Json, ApiError> {
    let list = v
        .as_array()
        .filter(|a| !a.is_empty())
        .ok_or_else(|| ApiError::invalid("messages", "must be a non-empty list of messages"))?;
    list.iter()
        .enumerate()
        .map(|(i, m)| message(m, &format!("messages[{i}]")))
        .collect::<Result<Vec<_>, _>>()
        .map(Json::Array)
}

/// `tools` (function tools) into the renderers' tool specs.
pub fn openai_tools(v: &Json) -> Result<Json, ApiError> {
    let list = v
        .as_array()
        .ok_or_else(|| ApiError::invalid("tools", "must be a list of function tools"))?;
    list.iter()
        .enumerate()
        .map(|(i, t)| {
            let f = t
                .get("function")
                .filter(|_| t.get("type").and_then(Json::as_str) == Some("function"));
            let name = f.and_then(|f| f.get("name")).and_then(Json::as_str);
            let (Some(f), Some(name)) = (f, name) else {
                return Err(ApiError::invalid(
                    format!("tools[{i}]"),
                    "must be {type: \"function\", function: {name, description?, parameters?}}",
                ));
            };
            Ok(json!({
                "name": name,
                "description": f.get("description").and_then(Json::as_str).unwrap_or_default(),
                // As the cookbook's openai_compat.py (`parameters` absent: `{}`).
                "parameters": f.get("parameters").cloned().unwrap_or(json!({})),
            }))
        })
        .collect::<Result<Vec<_>, _>>()
        .map(Json::Array)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_become_the_renderers_as_the_cookbook_converts_them() {
        let m = openai_messages(&json!([
            {"role": "developer", "content": "Be brief."},
            {"role": "user", "content": [{"type": "text", "text": "What is this?"}, {"type": "image_url", "image_url": {"url": "data:image/png;base64,AA=="}}]},
            {"role": "assistant", "content": null, "reasoning_content": "Look.", "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "see", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "a cat"},
        ]))
        .unwrap();
        assert_eq!(
            m,
            json!([
                {"role": "system", "content": "Be brief."},
                {"role": "user", "content": [{"type": "text", "text": "What is this?"}, {"type": "image", "image": "data:image/png;base64,AA=="}]},
                {"role": "assistant", "content": [{"type": "thinking", "thinking": "Look."}], "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "see", "arguments": "{}"}}]},
                {"role": "tool", "content": "a cat", "tool_call_id": "c1"},
            ])
        );
    }

    #[test]
    fn bad_messages_and_tools_are_refused_where_they_are() {
        let table = [
            (
                json!([{"role": "robot", "content": "x"}]),
                "messages[0].role",
            ),
            (
                json!([{"role": "user", "content": [{"type": "input_audio"}]}]),
                "messages[0].content[0].type",
            ),
            (
                json!([{"role": "user", "content": "x", "reasoning_content": "y"}]),
                "messages[0].reasoning_content",
            ),
            (
                json!([{"role": "user", "content": 5}]),
                "messages[0].content",
            ),
            (json!({}), "messages"),
        ];
        for (v, param) in table {
            assert_eq!(
                openai_messages(&v).unwrap_err().param.as_deref(),
                Some(param),
                "{v}"
            );
        }
        let t = openai_tools(&json!([{"type": "function", "function": {"name": "f"}}])).unwrap();
        assert_eq!(
            t,
            json!([{"name": "f", "description": "", "parameters": {}}])
        );
        assert_eq!(
            openai_tools(&json!([{"type": "code"}]))
                .unwrap_err()
                .param
                .as_deref(),
            Some("tools[0]")
        );
    }
}
