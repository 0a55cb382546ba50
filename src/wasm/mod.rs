//! The JavaScript face of the SDK: thin `wasm-bindgen` wrappers over the core.

mod bench;
mod builders;
mod clients;
mod convert;
mod errors;
mod platform;
#[cfg(feature = "tokenizer")]
mod tokenizer;
#[cfg(feature = "tokenizer")]
mod tokenizer_loader;
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
    Ok(errors::json_to_js(
        &serde_json::to_value(&p).map_err(|e| JsError::new(&e.to_string()))?,
    ))
}

/// Resolves after `ms` milliseconds, on the runtime's `setTimeout`.
#[wasm_bindgen(js_name = sleep)]
pub async fn sleep(ms: u32) {
    gloo_timers::future::TimeoutFuture::new(ms).await;
}

/// Converts a plain JS object into a core type through JSON, so every key is seen (a
/// misspelt field is an error, not silently ignored). Errors name the field: non-finite
/// numbers (which JSON would turn into `null`) and type mismatches alike.
pub(crate) fn from_js<T: serde::de::DeserializeOwned>(
    v: JsValue,
) -> Result<T, crate::types::InputError> {
    use crate::types::InputError;
    if v.is_object() {
        for k in convert::keys(&v) {
            if let Some(x) = js_sys::Reflect::get(&v, &JsValue::from_str(&k))
                .ok()
                .and_then(|x| x.as_f64())
            {
                if !x.is_finite() {
                    return Err(InputError::range_error(
                        k,
                        format!("must be a finite number, got {x}"),
                    ));
                }
            }
        }
    }
    let text = js_sys::JSON::stringify(&v)
        .ok()
        .and_then(|t| t.as_string())
        .ok_or_else(|| InputError::type_error("", "must be a JSON object"))?;
    let de = &mut serde_json::Deserializer::from_str(&text);
    serde_path_to_error::deserialize(de).map_err(|e| {
        let path = e.path().to_string();
        let msg = e.inner().to_string();
        let msg = msg.split(" at line ").next().unwrap_or(&msg).to_string();
        if let Some(field) = msg
            .strip_prefix("unknown field `")
            .and_then(|r| r.split('`').next())
        {
            return InputError::type_error(field, msg.clone());
        }
        InputError::type_error(if path == "." { String::new() } else { path }, msg)
    })
}
