//! Python's printing for the CLI (pkg/cli/output.js), from the one implementation the chat
//! templates and the renderers use: `json.dumps` (crates/tokenizer's `py_json_dumps_with`)
//! and `repr(float)` (tinker_support's `fmt_py`).

use wasm_bindgen::prelude::*;

use crate::wasm::errors::type_error;

/// `json.dumps(value, indent=indent)` (ensure_ascii, Python's separators for the indent)
/// of `text`, standard JSON whose numbers with a fraction or an exponent are floats. Read
/// by the core's parser, which rounds every float correctly (serde_json's default parser
/// can be one unit in the last place off: 999999999999999.9).
#[wasm_bindgen(js_name = __pyJsonDumps, skip_typescript)]
pub fn py_json_dumps(text: &str, indent: Option<u32>) -> Result<String, JsValue> {
    let value = crate::json::from_str(text)
        .map(|v| to_serde(&v))
        .map_err(|e| type_error("value", format!("is not JSON: {e}")))?;
    let seps = if indent.is_some() {
        (",", ": ")
    } else {
        (", ", ": ")
    };
    Ok(crate::tokenizer::chat::py_json_dumps_with(
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

fn to_serde(v: &crate::json::Value) -> serde_json::Value {
    use crate::json::{Number, Value};
    match v {
        Value::Null => serde_json::Value::Null,
        Value::Bool(b) => (*b).into(),
        Value::Number(Number::PosInt(n)) => (*n).into(),
        Value::Number(Number::NegInt(n)) => (*n).into(),
        Value::Number(Number::Float(f)) => (*f).into(),
        Value::String(s) => s.as_str().into(),
        Value::Array(items) => items.iter().map(to_serde).collect(),
        Value::Object(m) => m.iter().map(|(k, v)| (k.clone(), to_serde(v))).collect(),
    }
}
