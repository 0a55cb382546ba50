//! The general tokenizer engine in wasm. It is a separate module
//! (`crates/tokenizer-general`, built into `pkg/gen/general`), so the SDK's module carries
//! only the fast path. Each full entry point registers a host (`pkg/general-engine.js`)
//! that instantiates that module, synchronously where the runtime allows (Node, workerd)
//! and on `Tokenizer.loadGeneralEngine()` or a `fromURL` that needs it (browsers). The
//! core asks for an engine through [`loader`]; these are only the calls across.

use std::cell::RefCell;

use wasm_bindgen::prelude::*;

use crate::tokenization as core;

#[wasm_bindgen]
extern "C" {
    /// `pkg/general-engine.js`'s host.
    #[derive(Clone)]
    pub type GeneralHost;
    /// An engine for `json`, `null` when the module is not loaded and cannot be loaded
    /// synchronously here, or a thrown `Error` with the load failure.
    #[wasm_bindgen(method, catch, js_name = loadSync)]
    fn load_sync(this: &GeneralHost, json: &[u8]) -> Result<Option<JsEngine>, JsValue>;
    /// Loads the module (once).
    #[wasm_bindgen(method)]
    fn preload(this: &GeneralHost) -> js_sys::Promise;
    /// A compiled split regex, `null` when the module is not loaded and cannot be loaded
    /// synchronously here, or a thrown `Error` saying why the pattern does not compile.
    #[wasm_bindgen(method, catch, js_name = regexSync)]
    fn regex_sync(this: &GeneralHost, pattern: &[u8]) -> Result<Option<JsRegex>, JsValue>;

    type JsRegex;
    /// Byte ranges `[start, end, …]` of the matches.
    #[wasm_bindgen(method, catch, js_name = find)]
    fn find(this: &JsRegex, text: &[u8]) -> Result<Vec<u32>, JsValue>;
    #[wasm_bindgen(method, js_name = free)]
    fn free_regex(this: &JsRegex);

    type JsEngine;
    #[wasm_bindgen(method, catch)]
    fn encode(
        this: &JsEngine,
        text: &[u8],
        add_special: bool,
        split_special: bool,
    ) -> Result<Vec<u32>, JsValue>;
    #[wasm_bindgen(method)]
    fn decode(this: &JsEngine, ids: &[u32], skip_special: bool) -> String;
    #[wasm_bindgen(method, js_name = tokenToId)]
    fn token_to_id(this: &JsEngine, token: &[u8]) -> Option<u32>;
    #[wasm_bindgen(method, js_name = idToToken)]
    fn id_to_token(this: &JsEngine, id: u32) -> Option<String>;
    #[wasm_bindgen(method, js_name = vocabSize)]
    fn vocab_size(this: &JsEngine) -> u32;
    /// JSON: `[[content, id, special], …]`.
    #[wasm_bindgen(method, js_name = addedTokens)]
    fn added_tokens(this: &JsEngine) -> String;
    #[wasm_bindgen(method)]
    fn free(this: &JsEngine);
}

thread_local! {
    static HOST: RefCell<Option<GeneralHost>> = const { RefCell::new(None) };
}

/// Registers the host (called once by each full entry point of the package).
#[wasm_bindgen(js_name = __setGeneralTokenizerHost, skip_typescript)]
pub fn set_general_tokenizer_host(host: GeneralHost) {
    HOST.with(|h| *h.borrow_mut() = Some(host));
}

fn host() -> Option<GeneralHost> {
    HOST.with(|h| h.borrow().clone())
}

fn message(e: &JsValue) -> String {
    e.dyn_ref::<js_sys::Error>()
        .map(|e| String::from(e.message()))
        .or_else(|| e.as_string())
        .unwrap_or_else(|| "the general engine failed".into())
}

/// Where `Tokenizer.fromJSON` cannot load the engine synchronously (browsers).
const NOT_LOADED: &str = "this tokenizer.json needs the general tokenizer engine \
(a separate wasm module, fetched on first use in browsers): `await Tokenizer.loadGeneralEngine()` \
once before `Tokenizer.fromJSON`, or load with `Tokenizer.fromURL`/`getTokenizer`, which fetch it";

/// The core's [`core::GeneralLoader`] over the registered host.
pub(crate) fn loader(text: &str) -> Result<Box<dyn core::GeneralEngine>, core::TokenizerError> {
    let Some(host) = host() else {
        return Err(core::TokenizerError::GeneralUnavailable(
            "this tokenizer.json needs the general tokenizer engine, which this entry point \
             does not register"
                .into(),
        ));
    };
    match host.load_sync(text.as_bytes()) {
        Ok(Some(engine)) => Ok(Box::new(Engine(engine))),
        Ok(None) => Err(core::TokenizerError::GeneralUnavailable(NOT_LOADED.into())),
        Err(e) => Err(core::TokenizerError::Load(message(&e))),
    }
}

/// Where `Tokenizer.fromTiktoken` cannot load the engine synchronously (browsers).
const REGEX_NOT_LOADED: &str = "this tiktoken pattern has no built-in splitter and needs the \
general tokenizer engine's regex (a separate wasm module, fetched on first use in browsers): \
`await Tokenizer.loadGeneralEngine()` once before `Tokenizer.fromTiktoken`";

/// The core's [`core::RegexLoader`] over the registered host.
pub(crate) fn regex_loader(
    pattern: &str,
) -> Result<Box<dyn core::GeneralRegex>, core::TokenizerError> {
    let Some(host) = host() else {
        return Err(core::TokenizerError::GeneralUnavailable(
            "this tiktoken pattern needs the general tokenizer engine, which this entry point \
             does not register"
                .into(),
        ));
    };
    match host.regex_sync(pattern.as_bytes()) {
        Ok(Some(re)) => Ok(Box::new(Regex(re))),
        Ok(None) => Err(core::TokenizerError::GeneralUnavailable(
            REGEX_NOT_LOADED.into(),
        )),
        Err(e) => Err(core::TokenizerError::Input(
            crate::types::InputError::type_error(
                "pattern",
                format!("is not a valid regex: {}", message(&e)),
            ),
        )),
    }
}

/// One split regex in the other module; freed with its tokenizer.
struct Regex(JsRegex);

impl Drop for Regex {
    fn drop(&mut self) {
        self.0.free_regex();
    }
}

impl core::GeneralRegex for Regex {
    fn find_iter(&self, text: &str, out: &mut Vec<(u32, u32)>) -> Result<(), String> {
        let flat = self.0.find(text.as_bytes()).map_err(|e| message(&e))?;
        out.extend(flat.chunks_exact(2).map(|c| (c[0], c[1])));
        Ok(())
    }
}

/// Loads the engine's module (resolves at once when it is loaded or cannot be).
pub(crate) async fn preload() -> Result<(), JsValue> {
    match host() {
        Some(h) => wasm_bindgen_futures::JsFuture::from(h.preload())
            .await
            .map(drop),
        None => Ok(()),
    }
}

/// One engine in the other module; freed with its tokenizer.
struct Engine(JsEngine);

impl Drop for Engine {
    fn drop(&mut self) {
        self.0.free();
    }
}

impl core::GeneralEngine for Engine {
    fn encode_into(
        &self,
        text: &str,
        options: core::EncodeOptions,
        out: &mut Vec<u32>,
    ) -> Result<(), String> {
        let ids = self
            .0
            .encode(
                text.as_bytes(),
                options.add_special_tokens,
                options.split_special_tokens,
            )
            .map_err(|e| message(&e))?;
        out.extend_from_slice(&ids);
        Ok(())
    }
    fn decode(&self, ids: &[u32], skip_special_tokens: bool) -> String {
        self.0.decode(ids, skip_special_tokens)
    }
    fn token_to_id(&self, token: &str) -> Option<u32> {
        self.0.token_to_id(token.as_bytes())
    }
    fn id_to_token(&self, id: u32) -> Option<String> {
        self.0.id_to_token(id)
    }
    fn vocab_size(&self) -> usize {
        self.0.vocab_size() as usize
    }
    fn added_tokens(&self) -> Vec<(String, u32, bool)> {
        serde_json::from_str(&self.0.added_tokens()).unwrap_or_default()
    }
}
