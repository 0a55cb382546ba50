//! JSON as Python reads and prints it, for the skin and the CLI (pkg/cli/output.js): every
//! JSON text the skin hands the tokenizer, the renderers, the handler and the cookbook is
//! read by the core's parser (`read_json`), and the CLI prints with the one `json.dumps`
//! (crates/tokenizer's `py_json::dumps_json`) and `repr(float)` (tinker_support's `fmt_py`)
//! that the chat templates and the renderers use.

use wasm_bindgen::prelude::*;

use crate::wasm::errors::type_error;

/// `json.dumps(value, indent=indent)` (ensure_ascii, Python's separators for the indent)
/// of `text`, standard JSON whose numbers with a fraction or an exponent are floats (read
/// exactly: `read_json`).
#[wasm_bindgen(js_name = __pyJsonDumps, skip_typescript)]
pub fn py_json_dumps(text: &str, indent: Option<u32>) -> Result<String, JsValue> {
    let value = read_json(text).map_err(|e| type_error("value", format!("is not JSON: {e}")))?;
    let seps = if indent.is_some() {
        (",", ": ")
    } else {
        (", ", ": ")
    };
    Ok(crate::tokenization::py_json::dumps_json(
        &value,
        seps,
        true,
        indent.map(|n| n as usize),
    ))
}

/// Python's `repr(x)` / `str(x)` of a float.
#[wasm_bindgen(js_name = __pyRepr, skip_typescript)]
pub fn py_repr(x: f64) -> String {
    crate::json::fmt_py(x)
}

/// JSON text as serde_json's value, every float correctly rounded
/// ([`tinker_support::json::to_serde`]).
pub(super) fn read_json(text: &str) -> Result<serde_json::Value, String> {
    crate::json::to_serde(text).map_err(|e| e.to_string())
}
