//! What `Tokenizer` (src/wasm/tokenizer.rs) and `Renderer` share: the TypeScript
//! declarations, errors, the options reader, byte/id/JSON/URL arguments and the encode /
//! chat-template parameters (fetching and caching are in `tokenizer_cache.rs`).

use js_sys::{Array, Object, Promise, Reflect, Uint32Array, Uint8Array};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;

use super::tokenizer_params::{ChatTemplateOptions, EncodeOptions};
use crate::tokenization as core;
use crate::types::{InputError, InputErrorKind};

#[wasm_bindgen(typescript_custom_section)]
const TS_TYPES: &'static str = r#"
/** A chat message, as transformers' chat templates and tinker-cookbook renderers take it. */
export interface ChatMessage {
  /** Who speaks: `'system'`, `'user'`, `'assistant'`, `'tool'`, or another role. */
  role: 'system' | 'user' | 'assistant' | 'tool' | (string & {});
  /** Text, or parts: `{ type: 'text', text }`, `{ type: 'thinking', thinking }`, `{ type: 'image', image }` (a `data:` URL, or the PNG/JPEG bytes). */
  content: string | ContentPart[] | null;
  /** Tool calls of an assistant message (`arguments` a JSON string, or an object). */
  tool_calls?: Array<{
    /** The call's kind (only `'function'`). */
    type?: 'function';
    /** Id that tool results refer to (`tool_call_id`), or null. */
    id?: string | null;
    /** The function called. */
    function: {
      /** The function's name. */
      name: string;
      /** Its arguments: a JSON string, or an object. */
      arguments: string | Record<string, unknown>;
    };
  }>;
  /** Tool calls the model wrote that could not be parsed (from `parseResponse`). */
  unparsed_tool_calls?: Array<{
    /** The model's text of the call. */
    raw_text: string;
    /** What was wrong with it. */
    error: string;
  }>;
  /** Per-message training flag, for `train_on_what: 'customized'`. */
  trainable?: boolean;
  /** Tool results: the id of the call answered. */
  tool_call_id?: string;
  /** Tool results: the function name. */
  name?: string;
  [key: string]: unknown;
}

/** One part of structured message content. */
export type ContentPart =
  | {
      /** Visible text. */
      type: 'text';
      /** The text. */
      text: string;
    }
  | {
      /** Reasoning. */
      type: 'thinking';
      /** The reasoning text. */
      thinking: string;
    }
  | {
      /** An image, for vision-language renderers. */
      type: 'image';
      /** A `data:` URL (other URLs must be fetched first), or the PNG/JPEG bytes. */
      image: string | Uint8Array | number[];
    };

/** A token of the tokenizer's added vocabulary (`addedTokens`). */
export interface AddedToken {
  /** The token's id. */
  id: number;
  /** The token's text. */
  content: string;
  /** Whether it is a special token. */
  special: boolean;
}

"#;

// ---------------------------------------------------------------------------------
// Errors and option reading

pub(super) fn input_err(e: InputError) -> JsValue {
    let msg = e.to_string();
    match e.kind {
        InputErrorKind::Type => js_sys::TypeError::new(&msg).into(),
        InputErrorKind::Range => js_sys::RangeError::new(&msg).into(),
    }
}

pub(super) fn tok_err(e: core::TokenizerError) -> JsValue {
    match e {
        core::TokenizerError::Input(i) => input_err(i),
        other => js_sys::Error::new(&other.to_string()).into(),
    }
}

pub(super) fn type_err(field: &str, msg: impl AsRef<str>) -> JsValue {
    input_err(InputError::type_error(field, msg.as_ref()))
}

pub(super) fn range_err(field: &str, msg: impl AsRef<str>) -> JsValue {
    input_err(InputError::range_error(field, msg.as_ref()))
}

pub(super) fn show(v: &JsValue) -> String {
    if v.is_undefined() {
        return "undefined".into();
    }
    if let Some(s) = v.as_string() {
        return format!("{s:?}");
    }
    js_sys::JSON::stringify(v)
        .ok()
        .and_then(|s| s.as_string())
        .unwrap_or_else(|| format!("{v:?}"))
}

pub(super) fn to_json(v: &JsValue, field: &str) -> Result<serde_json::Value, JsValue> {
    // Through JSON text: keys keep their order, `undefined` fields drop out (as in JSON).
    let text = js_sys::JSON::stringify(v)
        .map_err(|e| type_err(field, format!("cannot be serialised to JSON: {}", show(&e))))?
        .as_string()
        .ok_or_else(|| type_err(field, "cannot be serialised to JSON"))?;
    super::python::read_json(&text)
        .map_err(|e| type_err(field, format!("cannot be read as JSON data: {e}")))
}

/// Bytes of a string, `Uint8Array` or `ArrayBuffer`.
pub(super) fn bytes_of(v: &JsValue, field: &str) -> Result<Vec<u8>, JsValue> {
    if let Some(s) = v.as_string() {
        return Ok(s.into_bytes());
    }
    if let Some(a) = v.dyn_ref::<Uint8Array>() {
        return Ok(a.to_vec());
    }
    if v.is_instance_of::<js_sys::ArrayBuffer>() {
        return Ok(Uint8Array::new(v).to_vec());
    }
    Err(type_err(
        field,
        format!(
            "must be a string, Uint8Array or ArrayBuffer, got {}",
            show(v)
        ),
    ))
}

/// Token ids from a `Uint32Array` or any array-like of integers in 0..2^32.
pub(super) fn ids_of(v: &JsValue, field: &str) -> Result<Vec<u32>, JsValue> {
    if let Some(a) = v.dyn_ref::<Uint32Array>() {
        return Ok(a.to_vec());
    }
    let arr: Array = if Array::is_array(v) {
        v.clone().unchecked_into()
    } else if ArrayBuffer_is_view(v) {
        Array::from(v)
    } else {
        return Err(type_err(
            field,
            format!(
                "must be a Uint32Array or an array of token ids, got {}",
                show(v)
            ),
        ));
    };
    let mut out = Vec::with_capacity(arr.length() as usize);
    for (i, x) in arr.iter().enumerate() {
        match x.as_f64() {
            Some(f) if f.fract() == 0.0 && (0.0..=u32::MAX as f64).contains(&f) => {
                out.push(f as u32)
            }
            Some(_) => {
                return Err(range_err(
                    &format!("{field}[{i}]"),
                    format!("must be an integer in 0..2^32, got {}", show(&x)),
                ))
            }
            None => {
                return Err(type_err(
                    &format!("{field}[{i}]"),
                    format!("must be a number, got {}", show(&x)),
                ))
            }
        }
    }
    Ok(out)
}

#[allow(non_snake_case)]
pub(super) fn ArrayBuffer_is_view(v: &JsValue) -> bool {
    js_sys::ArrayBuffer::is_view(v)
}

pub(super) fn set(o: &Object, k: &str, v: &JsValue) {
    // Setting a property on a fresh plain object cannot fail.
    let _ = Reflect::set(o, &JsValue::from_str(k), v);
}

pub(super) fn load(
    json: &[u8],
    config: Option<&[u8]>,
    chat_template: Option<String>,
    general_only: bool,
) -> Result<core::Tokenizer, core::TokenizerError> {
    let loader = &crate::wasm::general::loader;
    let mut t = if general_only {
        core::Tokenizer::from_json_general(json, config, loader)?
    } else {
        core::Tokenizer::from_json_with(json, config, loader)?
    };
    if let Some(ct) = chat_template {
        t.set_chat_template(ct);
    }
    Ok(t)
}

/// `options.engine`: whether the general engine is asked for.
pub(super) fn general_only(v: &JsValue) -> Result<bool, JsValue> {
    match v.as_string().as_deref() {
        _ if v.is_undefined() => Ok(false),
        Some("auto") => Ok(false),
        Some("general") => Ok(true),
        _ => Err(range_err(
            "engine",
            format!("must be 'auto' or 'general', got {}", show(v)),
        )),
    }
}

pub(super) fn config_bytes(v: &JsValue) -> Result<Option<Vec<u8>>, JsValue> {
    if v.is_undefined() || v.is_null() {
        return Ok(None);
    }
    if v.is_string()
        || v.is_instance_of::<Uint8Array>()
        || v.is_instance_of::<js_sys::ArrayBuffer>()
    {
        return bytes_of(v, "config").map(Some);
    }
    if v.is_object() {
        let s = js_sys::JSON::stringify(v)
            .map_err(|_| type_err("config", "cannot be serialised to JSON"))?;
        return Ok(s.as_string().map(String::into_bytes));
    }
    Err(type_err(
        "config",
        format!(
            "must be the tokenizer_config.json text, bytes or object, got {}",
            show(v)
        ),
    ))
}

pub(super) async fn await_promise(v: JsValue) -> Result<JsValue, JsValue> {
    JsFuture::from(Promise::resolve(&v)).await
}

pub(super) fn url_string(v: &JsValue, field: &str) -> Result<String, JsValue> {
    if let Some(s) = v.as_string() {
        return Ok(s);
    }
    if v.is_object() {
        let href = Reflect::get(v, &"href".into()).unwrap_or(JsValue::UNDEFINED);
        if let Some(s) = href.as_string() {
            return Ok(s);
        }
    }
    Err(type_err(
        field,
        format!("must be a string or URL, got {}", show(v)),
    ))
}

/// `EncodeOptions` from JS.
pub(super) fn encode_options(options: &JsValue) -> Result<core::EncodeOptions, JsValue> {
    let o = EncodeOptions::read(options)?;
    Ok(core::EncodeOptions {
        add_special_tokens: o.add_special_tokens.unwrap_or(false),
        split_special_tokens: o.split_special_tokens.unwrap_or(false),
    })
}

/// `special_tokens` of `fromTiktoken`: token → id, in the object's order.
pub(super) fn special_token_ids(v: Option<JsValue>) -> Result<Vec<(String, u32)>, JsValue> {
    let Some(sv) = v else { return Ok(Vec::new()) };
    if !sv.is_object() || Array::is_array(&sv) {
        return Err(type_err(
            "special_tokens",
            format!("must be an object of token → id, got {}", show(&sv)),
        ));
    }
    let obj: &Object = sv.unchecked_ref();
    let mut ids = Vec::new();
    for entry in Object::entries(obj).iter() {
        let pair: Array = entry.unchecked_into();
        let name = pair.get(0).as_string().unwrap_or_default();
        let v = pair.get(1);
        let field = format!("special_tokens[{name:?}]");
        match v.as_f64() {
            Some(f) if f.fract() == 0.0 && (0.0..u32::MAX as f64).contains(&f) => {
                ids.push((name, f as u32))
            }
            Some(_) => {
                return Err(range_err(
                    &field,
                    format!("must be an integer id in 0..2^32-1, got {}", show(&v)),
                ))
            }
            None => {
                return Err(type_err(
                    &field,
                    format!("must be a number, got {}", show(&v)),
                ))
            }
        }
    }
    Ok(ids)
}

/// An array option of JSON values (`tools`, `documents`).
fn json_array(v: Option<JsValue>, key: &str) -> Result<Option<serde_json::Value>, JsValue> {
    let Some(v) = v else { return Ok(None) };
    if !Array::is_array(&v) {
        return Err(type_err(key, format!("must be an array, got {}", show(&v))));
    }
    to_json(&v, key).map(Some)
}

/// `now` of `applyChatTemplate`: a `Date` or milliseconds (default: the current time).
fn now_ms(v: Option<JsValue>) -> Result<f64, JsValue> {
    let ms = match v {
        None => js_sys::Date::now(),
        Some(v) => match v.dyn_ref::<js_sys::Date>() {
            Some(d) => d.get_time(),
            None => v.as_f64().ok_or_else(|| {
                type_err(
                    "now",
                    format!("must be a Date or milliseconds, got {}", show(&v)),
                )
            })?,
        },
    };
    if !ms.is_finite() {
        return Err(range_err("now", "must be a valid time"));
    }
    Ok(ms)
}

pub(super) fn chat_args(
    messages: &JsValue,
    options: &JsValue,
) -> Result<(serde_json::Value, core::ChatTemplateOptions), JsValue> {
    if !Array::is_array(messages) {
        return Err(type_err(
            "messages",
            format!("must be an array of messages, got {}", show(messages)),
        ));
    }
    let msgs = to_json(messages, "messages")?;
    let o = ChatTemplateOptions::read(options)?;
    let extra = match o.template_kwargs {
        None => serde_json::Map::new(),
        Some(v) => match to_json(&v, "template_kwargs")? {
            serde_json::Value::Object(m) => m,
            _ => {
                return Err(type_err(
                    "template_kwargs",
                    format!("must be an object, got {}", show(&v)),
                ))
            }
        },
    };
    let now_ms = now_ms(o.now)?;
    Ok((
        msgs,
        core::ChatTemplateOptions {
            add_generation_prompt: o.add_generation_prompt.unwrap_or(false),
            continue_final_message: o.continue_final_message.unwrap_or(false),
            tools: json_array(o.tools, "tools")?,
            documents: json_array(o.documents, "documents")?,
            chat_template: o.chat_template,
            extra,
            now_unix_secs: Some((now_ms / 1000.0).floor() as i64),
        },
    ))
}
