//! `getTokenizer()` for training and sampling clients: the tokenizer id is resolved as
//! the Python SDK does (the server's `tokenizer_id`, else the Llama-3 rule and
//! `org/model/variant` trimming), then loaded through the caller's loader — the SDK never
//! downloads from a model hub on its own — and cached per `ServiceClient` by resolved
//! id, one load per id even under concurrent calls.

use std::rc::Rc;

use js_sys::{Function, Object, Promise, Reflect};
use wasm_bindgen::convert::TryFromJsValue;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;

use crate::tokenization::{
    resolve_tokenizer_id, tokenizer_unavailable, SingleFlight, Tokenizer as CoreTokenizer,
};
use crate::wasm::convert::describe;
use crate::wasm::errors::{tinker_error, type_error};
use crate::wasm::tokenizer::JsTokenizer;

#[wasm_bindgen(js_class = Tokenizer)]
impl JsTokenizer {
    /// A second handle on the same tokenizer (internal: lets the SDK keep a loader's
    /// result without taking it from the caller).
    #[wasm_bindgen(js_name = __share, skip_typescript)]
    pub fn share(&self) -> JsTokenizer {
        JsTokenizer::from_shared(self.shared())
    }
}

/// Where tokenizers come from, and the per-client cache.
pub struct TokenizerSource {
    loader: Option<Function>,
    base_url: Option<String>,
    fetch: Option<Function>,
    cache: SingleFlight<String, Rc<CoreTokenizer>, JsValue>,
}

impl TokenizerSource {
    /// From the client options `tokenizerLoader` and `tokenizerBaseURL`.
    pub fn new(
        loader: JsValue,
        base_url: Option<String>,
        fetch: Option<Function>,
    ) -> Result<Self, JsValue> {
        let loader = match loader {
            l if l.is_undefined() || l.is_null() => None,
            l if l.is_function() => Some(l.unchecked_into()),
            l => {
                return Err(type_error(
                    "tokenizerLoader",
                    format!(
                        "must be a function (id) => Promise<Tokenizer>, got {}",
                        describe(&l)
                    ),
                ))
            }
        };
        if let Some(u) = &base_url {
            if !(u.starts_with("http://") || u.starts_with("https://") || u.starts_with('/')) {
                return Err(type_error(
                    "tokenizerBaseURL",
                    format!("must be an http(s) URL, got {u:?}"),
                ));
            }
        }
        Ok(TokenizerSource {
            loader,
            base_url,
            fetch,
            cache: SingleFlight::new(),
        })
    }

    async fn load(&self, id: &str) -> Result<Rc<CoreTokenizer>, JsValue> {
        if let Some(loader) = &self.loader {
            let out = loader.call1(&JsValue::UNDEFINED, &JsValue::from_str(id))?;
            let out = JsFuture::from(Promise::resolve(&out)).await?;
            let share = Reflect::get(&out, &"__share".into())
                .ok()
                .filter(|f| f.is_function());
            let Some(share) = share else {
                return Err(type_error(
                    "tokenizerLoader",
                    format!(
                        "must resolve to a Tokenizer (e.g. Tokenizer.fromURL(...)), got {}",
                        describe(&out)
                    ),
                ));
            };
            let handle = share.unchecked_into::<Function>().call0(&out)?;
            return JsTokenizer::try_from_js_value(handle)
                .map(|t| t.shared())
                .map_err(|_| type_error("tokenizerLoader", "must resolve to a Tokenizer"));
        }
        // The Python SDK raises for Inkling's ids (its tokenizer package is not
        // published); only a loader of the caller's own can supply one.
        if let Some(why) = tokenizer_unavailable(id) {
            return Err(tinker_error(&format!(
                "{why} (tokenizer id {id:?}; or pass a `tokenizerLoader` that builds it, e.g. \
                 with Tokenizer.fromTiktoken)"
            )));
        }
        if let Some(base) = &self.base_url {
            let dir = format!("{}/{id}", base.trim_end_matches('/'));
            let opts = Object::new();
            let _ = Reflect::set(
                &opts,
                &"config_url".into(),
                &format!("{dir}/tokenizer_config.json").into(),
            );
            if let Some(f) = &self.fetch {
                let _ = Reflect::set(&opts, &"fetch".into(), f);
            }
            let t = JsTokenizer::from_url(
                JsValue::from_str(&format!("{dir}/tokenizer.json")),
                opts.into(),
            )
            .await?;
            return Ok(t.shared());
        }
        Err(tinker_error(&format!(
            "no tokenizer source for {id:?}: pass `tokenizerLoader: (id) => Tokenizer.fromURL(...)` or `tokenizerBaseURL` to the ServiceClient (the SDK never downloads from a model hub by itself)"
        )))
    }

    /// The tokenizer of `model_name` (with the server's `tokenizer_id`, if any).
    pub async fn get(
        self: Rc<Self>,
        model_name: &str,
        server_tokenizer_id: Option<&str>,
    ) -> Result<JsValue, JsValue> {
        let id = resolve_tokenizer_id(model_name, server_tokenizer_id);
        let me = self.clone();
        let key = id.clone();
        let t = self
            .cache
            .get_or_load(id, || async move { me.load(&key).await })
            .await?;
        Ok(JsTokenizer::from_shared(t).into())
    }
}
