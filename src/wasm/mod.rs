//! The JavaScript face of the SDK: thin `wasm-bindgen` wrappers over the core.

mod bench;
mod builders;
mod client_options;
mod common;
mod convert;
#[cfg(feature = "cookbook")]
mod cookbook;
#[cfg(feature = "cookbook")]
mod cookbook_configs;
#[cfg(feature = "cookbook")]
mod cookbook_rl;
mod errors;
#[cfg(feature = "tokenizer")]
mod general;
mod host;
#[cfg(feature = "tokenizer")]
mod openai;
mod panic;
mod params;
mod platform;
#[cfg(feature = "tokenizer")]
mod python;
#[cfg(feature = "tokenizer")]
mod renderer;
mod rest_client;
mod sampling_client;
mod service_client;
#[cfg(feature = "tokenizer")]
mod tokenizer;
#[cfg(feature = "tokenizer")]
mod tokenizer_cache;
#[cfg(feature = "tokenizer")]
mod tokenizer_loader;
#[cfg(feature = "tokenizer")]
mod tokenizer_params;
#[cfg(feature = "tokenizer")]
mod tokenizer_support;
mod training_client;
mod types;

use wasm_bindgen::prelude::*;

/// The module's allocator: talc (a maintained allocator made for WebAssembly) in place
/// of std's dlmalloc — smaller in the module, faster, and it merges freed neighbours
/// (tests/NOTES-issue20-skin.md has the size, speed and varied-size memory figures).
/// Only in the wasm build (this module is compiled only for `wasm32`), single-threaded.
#[cfg(not(target_feature = "atomics"))]
#[global_allocator]
static ALLOCATOR: talc::wasm::WasmDynamicTalc = talc::wasm::new_wasm_dynamic_allocator();

/// The SDK version.
#[wasm_bindgen(js_name = version)]
pub fn version() -> String {
    crate::VERSION.to_string()
}

/// Fills in the defaults of an `AdamParams` object and returns it (read into the core
/// type and written back; unknown fields are rejected).
#[wasm_bindgen(js_name = normalizeAdamParams)]
pub fn normalize_adam_params(params: JsValue) -> Result<JsValue, JsError> {
    let p: crate::types::AdamParams = if params.is_undefined() {
        Default::default()
    } else {
        convert::adam_params(&params).map_err(|e| {
            JsError::new(&format!("AdamParams: {}", js_sys::Error::from(e).message()))
        })?
    };
    Ok(errors::json_to_js(&p.to_json()))
}

/// Resolves after `ms` milliseconds, on the runtime's `setTimeout`.
#[wasm_bindgen(js_name = sleep)]
pub async fn sleep(ms: u32) {
    gloo_timers::future::TimeoutFuture::new(ms).await;
}
