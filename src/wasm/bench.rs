//! Hidden exports for the benchmarks in `tests/bench/` (kept out of the TypeScript types):
//! the exact request-building path of `TrainingClient.forwardBackward`, without the
//! network, and the size of the wasm linear memory.

use js_sys::Reflect;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use crate::proto::ForwardBackwardRequest;
use crate::training::forward_backward_body;
use crate::wasm::convert;
use crate::wasm::errors::type_error;

/// Builds and encodes a `forward_backward` request body from JS data exactly as
/// `TrainingClient.forwardBackward` does (JS → core conversion and validation, protobuf
/// encoding, zstd when `{ compress: true }`) and returns its length in bytes, or the
/// bytes themselves with `{ bytes: true }`.
#[wasm_bindgen(js_name = __benchEncodeForwardBackward, skip_typescript)]
pub fn bench_encode_forward_backward(
    data: JsValue,
    loss_fn: JsValue,
    options: JsValue,
) -> Result<JsValue, JsValue> {
    let flag = |k: &str| {
        if options.is_object() {
            Reflect::get(&options, &JsValue::from_str(k))
                .ok()
                .and_then(|v| v.as_bool())
                .unwrap_or(false)
        } else {
            false
        }
    };
    let data = convert::data(&data)?;
    let loss_fn = loss_fn
        .as_string()
        .ok_or_else(|| type_error("loss_fn", "must be a string"))?;
    let body = forward_backward_body(
        &ForwardBackwardRequest {
            model_id: "bench:train:0",
            seq_id: 1,
            data: &data,
            loss_fn: &loss_fn,
            loss_fn_config: None,
            forward_only: false,
        },
        flag("compress"),
    )
    .map_err(|m| type_error("data", m))?;
    Ok(if flag("bytes") {
        js_sys::Uint8Array::from(&body[..]).into()
    } else {
        JsValue::from_f64(body.len() as f64)
    })
}

/// The current size of the wasm linear memory in bytes (it only ever grows).
#[wasm_bindgen(js_name = __benchWasmMemoryBytes, skip_typescript)]
pub fn bench_wasm_memory_bytes() -> f64 {
    wasm_bindgen::memory()
        .unchecked_into::<js_sys::WebAssembly::Memory>()
        .buffer()
        .unchecked_into::<js_sys::ArrayBuffer>()
        .byte_length() as f64
}
