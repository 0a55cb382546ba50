//! Builders for common data: `ModelInput.fromInts`, `TensorData.fromArray`,
//! `datumFromTokens` (exported raw here, namespaced by `pkg/extras.js`).

use wasm_bindgen::prelude::*;

use crate::types::{Datum, LossFnInputs, ModelInput, TensorData, TensorValues};
use crate::wasm::convert;
use crate::wasm::convert::declare_params;
use crate::wasm::errors::{input_error, range_error};

declare_params! {
    ts = BUILDERS_TS;

    /// Options of `TensorData.fromArray`.
    TensorDataFromArrayOptions("TensorData.fromArray options") {
        /// The element type (default: by the data's kind, as `TensorData`'s).
        dtype: String => "?: 'float32' | 'int64'",
        /// The tensor's shape (default: one dimension).
        shape: JsValue => "?: number[]",
    }

    /// Parameters of `datumFromTokens`: `weights` or `prompt_length`, or neither (every target weight 1).
    DatumFromTokensParams("datumFromTokens params") {
        /// One weight per token of the full sequence, shifted with the targets.
        weights: JsValue => "?: ArrayLike<number>",
        /// Tokens of the prompt: weight 0 on them, 1 after.
        prompt_length: u32 => "?: number",
    }
}

/// `ModelInput.fromInts(tokens)`: one text chunk.
#[wasm_bindgen(js_name = modelInputFromInts, skip_typescript)]
pub fn model_input_from_ints(tokens: JsValue) -> Result<JsValue, JsValue> {
    let t = convert::tokens(&tokens, "tokens").map_err(|e| input_error(&e))?;
    Ok(convert::model_input_to_js(&ModelInput::from_ints(t)))
}

/// `TensorData.fromArray(data, { dtype, shape })`.
#[wasm_bindgen(js_name = tensorDataFromArray, skip_typescript)]
pub fn tensor_data_from_array(data: JsValue, options: JsValue) -> Result<JsValue, JsValue> {
    let o = TensorDataFromArrayOptions::read(&options)?;
    let obj = js_sys::Object::new();
    let _ = js_sys::Reflect::set(&obj, &"data".into(), &data);
    if let Some(d) = o.dtype {
        let _ = js_sys::Reflect::set(&obj, &"dtype".into(), &d.into());
    }
    if let Some(shape) = o.shape {
        let _ = js_sys::Reflect::set(&obj, &"shape".into(), &shape);
    }
    let t = convert::tensor(&obj, None, "data").map_err(|e| input_error(&e))?;
    Ok(convert::tensor_to_js(&t))
}

/// `datumFromTokens(tokens, { weights?, prompt_length? })`: a next-token `cross_entropy`
/// datum. Position *i* of the input predicts token *i + 1*, so the input is
/// `tokens[..-1]` and the targets `tokens[1..]`; `weights` (one per token of the full
/// sequence) or `prompt_length` (weight 0 on the prompt, 1 after) are shifted the same way.
#[wasm_bindgen(js_name = datumFromTokens, skip_typescript)]
pub fn datum_from_tokens(tokens: JsValue, options: JsValue) -> Result<JsValue, JsValue> {
    let t = convert::tokens(&tokens, "tokens").map_err(|e| input_error(&e))?;
    if t.len() < 2 {
        return Err(range_error(
            "tokens",
            format!(
                "needs at least 2 tokens (an input and a target), got {}",
                t.len()
            ),
        ));
    }
    let o = DatumFromTokensParams::read(&options)?;
    let n = t.len();
    let w = o.weights.unwrap_or_default();
    let weights: Vec<f32> = match (w, o.prompt_length) {
        (w, None) if !w.is_undefined() => {
            let w = match convert::tensor(&w, Some("weights"), "weights")
                .map_err(|e| input_error(&e))?
                .values
            {
                TensorValues::Float32(v) => v,
                TensorValues::Int64(v) => v.into_iter().map(|x| x as f32).collect(),
            };
            if w.len() != n {
                return Err(range_error(
                    "weights",
                    format!("needs one weight per token ({n}), got {}", w.len()),
                ));
            }
            w
        }
        (w, Some(p)) if w.is_undefined() => {
            if p as usize > n {
                return Err(range_error(
                    "prompt_length",
                    format!("is longer than the sequence ({p} > {n})"),
                ));
            }
            (0..n)
                .map(|i| if i < p as usize { 0.0 } else { 1.0 })
                .collect()
        }
        (w, None) if w.is_undefined() => vec![1.0; n],
        _ => {
            return Err(crate::wasm::errors::type_error(
                "weights",
                "give weights or prompt_length, not both",
            ))
        }
    };
    let mut inputs = LossFnInputs::new();
    inputs.insert(
        "target_tokens",
        TensorData::from_i64(t[1..].iter().map(|&x| i64::from(x)).collect()),
    );
    inputs.insert("weights", TensorData::from_f32(weights[1..].to_vec()));
    Ok(convert::datum_to_js(&Datum::new(
        ModelInput::from_ints(t[..n - 1].to_vec()),
        inputs,
    )))
}
