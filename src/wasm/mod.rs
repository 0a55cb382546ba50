//! The JavaScript face of the SDK: thin `wasm-bindgen` wrappers over the core.

mod builders;
mod clients;
mod convert;
mod errors;
mod platform;
#[cfg(feature = "tokenizer")]
mod tokenizer;
mod types;

use wasm_bindgen::prelude::*;

/// The SDK version.
#[wasm_bindgen(js_name = version)]
pub fn version() -> String {
    crate::VERSION.to_string()
}

/// Fills in the defaults of an `AdamParams` object and returns it (a serde round trip
/// through the core type; unknown fields are rejected).
#[wasm_bindgen(js_name = normalizeAdamParams)]
pub fn normalize_adam_params(params: JsValue) -> Result<JsValue, JsError> {
    let p: crate::types::AdamParams = if params.is_undefined() {
        Default::default()
    } else {
        from_js(params).map_err(|e| JsError::new(&format!("AdamParams: {e}")))?
    };
    Ok(serde_wasm_bindgen::to_value(&p)?)
}

/// Resolves after `ms` milliseconds, on the runtime's `setTimeout`.
#[wasm_bindgen(js_name = sleep)]
pub async fn sleep(ms: u32) {
    gloo_timers::future::TimeoutFuture::new(ms).await;
}

/// Converts a JS value into a core type. Goes through `serde_json::Value` so that every
/// key of a JS object is seen (serde-wasm-bindgen reads structs by their known field
/// names only, which would silently ignore misspelt options).
pub(crate) fn from_js<T: serde::de::DeserializeOwned>(v: JsValue) -> Result<T, String> {
    let json: serde_json::Value = serde_wasm_bindgen::from_value(v).map_err(|e| e.to_string())?;
    serde_json::from_value(json).map_err(|e| e.to_string())
}
