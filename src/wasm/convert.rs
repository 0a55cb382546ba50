//! JS ↔ core conversions. Data objects keep the wire's field names (`model_input`,
//! `loss_fn_inputs`, `target_tokens`, …); SDK options are camelCase. Typed arrays cross
//! the boundary as one copy; plain arrays are checked in one JS pass and converted in
//! bulk. Every error names the offending path and value; unknown option keys are
//! errors (a misspelt option must not be silently ignored).

use std::collections::BTreeMap;
use std::time::Duration;

use js_sys::{
    Array, Float32Array, Float64Array, Int32Array, Object, Reflect, Uint32Array, Uint8Array,
};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use crate::call::CallOptions;
use crate::proto::{ForwardBackwardOutput, SampleResponse, TopkLogprobs};
use crate::sync::CancelToken;
use crate::types::{
    fmt_num, loss_input_dtype, DType, Datum, InputError, LossFnInputs, ModelInput, ModelInputChunk,
    TensorData, TensorValues, MAX_ELEMENTS,
};
use crate::wasm::errors::{input_error, json_to_js, type_error};

#[wasm_bindgen(inline_js = "
export function first_non_number(a) {
  for (let i = 0; i < a.length; i++) { if (typeof a[i] !== 'number') return i; }
  return -1;
}
export function typed_kind(v) {
  if (!ArrayBuffer.isView(v) || v instanceof DataView) return '';
  return Object.prototype.toString.call(v).slice(8, -1);
}
export function describe(v) {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  if (ArrayBuffer.isView(v)) return 'a ' + Object.prototype.toString.call(v).slice(8, -1);
  if (typeof v === 'string') return 'the string ' + JSON.stringify(v.length > 40 ? v.slice(0, 40) + '…' : v);
  if (typeof v === 'number' || typeof v === 'boolean' || typeof v === 'bigint') return String(v);
  return typeof v === 'object' ? 'an object' : typeof v;
}
")]
extern "C" {
    fn first_non_number(a: &JsValue) -> i32;
    fn typed_kind(v: &JsValue) -> String;
    /// A short description of a JS value for error messages.
    pub fn describe(v: &JsValue) -> String;
}

fn get(o: &JsValue, k: &str) -> JsValue {
    Reflect::get(o, &JsValue::from_str(k)).unwrap_or(JsValue::UNDEFINED)
}

fn set(o: &JsValue, k: &str, v: &JsValue) {
    let _ = Reflect::set(o, &JsValue::from_str(k), v);
}

fn is_plain_object(v: &JsValue) -> bool {
    v.is_object() && !Array::is_array(v) && typed_kind(v).is_empty() && !v.is_function()
}

/// The keys of a JS object.
pub fn keys(o: &JsValue) -> Vec<String> {
    Object::keys(o.unchecked_ref::<Object>())
        .iter()
        .filter_map(|k| k.as_string())
        .collect()
}

// ---------------------------------------------------------------------------------
// Options objects

/// A camelCase options object whose keys are checked against an allow-list.
pub struct Opts {
    obj: JsValue,
}

impl Opts {
    /// Reads `v` (undefined/null = no options) as an options object of `what`.
    pub fn new(v: &JsValue, what: &str, allowed: &[&str]) -> Result<Opts, JsValue> {
        if v.is_undefined() || v.is_null() {
            return Ok(Opts {
                obj: JsValue::UNDEFINED,
            });
        }
        if !is_plain_object(v) {
            return Err(type_error(
                what,
                format!("must be an options object, got {}", describe(v)),
            ));
        }
        for k in keys(v) {
            if !allowed.contains(&k.as_str()) && !get(v, &k).is_undefined() {
                return Err(type_error(
                    &k,
                    format!(
                        "unknown option for {what}; expected one of: {}",
                        allowed.join(", ")
                    ),
                ));
            }
        }
        Ok(Opts { obj: v.clone() })
    }
    /// The raw value (undefined when absent).
    pub fn get(&self, k: &str) -> JsValue {
        if self.obj.is_undefined() {
            JsValue::UNDEFINED
        } else {
            get(&self.obj, k)
        }
    }
    fn present(&self, k: &str) -> Option<JsValue> {
        let v = self.get(k);
        (!v.is_undefined()).then_some(v)
    }
    /// A string option.
    pub fn string(&self, k: &str) -> Result<Option<String>, JsValue> {
        match self.present(k) {
            None => Ok(None),
            Some(v) => v
                .as_string()
                .map(Some)
                .ok_or_else(|| type_error(k, format!("must be a string, got {}", describe(&v)))),
        }
    }
    /// A boolean option.
    pub fn bool(&self, k: &str) -> Result<Option<bool>, JsValue> {
        match self.present(k) {
            None => Ok(None),
            Some(v) => v
                .as_bool()
                .map(Some)
                .ok_or_else(|| type_error(k, format!("must be a boolean, got {}", describe(&v)))),
        }
    }
    /// A finite number option.
    pub fn number(&self, k: &str) -> Result<Option<f64>, JsValue> {
        match self.present(k) {
            None => Ok(None),
            Some(v) => match v.as_f64() {
                Some(x) if x.is_finite() => Ok(Some(x)),
                Some(x) => Err(crate::wasm::errors::range_error(
                    k,
                    format!("must be a finite number, got {}", fmt_num(x)),
                )),
                None => Err(type_error(
                    k,
                    format!("must be a number, got {}", describe(&v)),
                )),
            },
        }
    }
    /// A non-negative integer option no larger than `max`.
    pub fn uint(&self, k: &str, max: u64) -> Result<Option<u64>, JsValue> {
        match self.number(k)? {
            None => Ok(None),
            Some(x) if x.fract() != 0.0 => Err(type_error(
                k,
                format!("must be an integer, got {}", fmt_num(x)),
            )),
            Some(x) if x < 0.0 || x > max as f64 => Err(crate::wasm::errors::range_error(
                k,
                format!("must be between 0 and {max}, got {}", fmt_num(x)),
            )),
            Some(x) => Ok(Some(x as u64)),
        }
    }
    /// A `{ [key: string]: string }` option.
    pub fn string_map(&self, k: &str) -> Result<Option<BTreeMap<String, String>>, JsValue> {
        match self.present(k) {
            None => Ok(None),
            Some(v) if is_plain_object(&v) => {
                let mut m = BTreeMap::new();
                for key in keys(&v) {
                    let val = get(&v, &key);
                    let s = val.as_string().ok_or_else(|| {
                        type_error(
                            &format!("{k}.{key}"),
                            format!("must be a string, got {}", describe(&val)),
                        )
                    })?;
                    m.insert(key, s);
                }
                Ok(Some(m))
            }
            Some(v) => Err(type_error(
                k,
                format!("must be an object of strings, got {}", describe(&v)),
            )),
        }
    }
    /// A JSON-compatible option (objects, arrays, numbers, strings).
    pub fn json(&self, k: &str) -> Result<Option<serde_json::Value>, JsValue> {
        match self.present(k) {
            None => Ok(None),
            Some(v) => to_json(&v, k).map(Some),
        }
    }
    /// The `signal` and `timeout` (ms) every call accepts.
    pub fn call(&self) -> Result<Call, JsValue> {
        let timeout = match self.number("timeout")? {
            None => None,
            Some(ms) if ms <= 0.0 => {
                return Err(crate::wasm::errors::range_error(
                    "timeout",
                    format!(
                        "must be a positive number of milliseconds, got {}",
                        fmt_num(ms)
                    ),
                ))
            }
            Some(ms) => Some(Duration::from_secs_f64(ms / 1000.0)),
        };
        Call::new(self.get("signal"), timeout)
    }
}

/// JSON value of a JS value (through `JSON.stringify`, so only JSON data survives).
pub fn to_json(v: &JsValue, field: &str) -> Result<serde_json::Value, JsValue> {
    let s =
        js_sys::JSON::stringify(v).map_err(|_| type_error(field, "must be JSON-serialisable"))?;
    let s = s.as_string().ok_or_else(|| {
        type_error(
            field,
            format!("must be JSON-serialisable, got {}", describe(v)),
        )
    })?;
    serde_json::from_str(&s).map_err(|e| type_error(field, e.to_string()))
}

/// Call options linked to an `AbortSignal`. The listener is removed when this drops,
/// so a long-lived signal reused across calls does not accumulate listeners.
pub struct Call {
    /// The core options.
    pub options: CallOptions,
    listener: Option<(JsValue, Closure<dyn FnMut()>)>,
}

impl Call {
    fn new(signal: JsValue, timeout: Option<Duration>) -> Result<Call, JsValue> {
        if signal.is_undefined() || signal.is_null() {
            return Ok(Call {
                options: CallOptions {
                    cancel: None,
                    timeout,
                },
                listener: None,
            });
        }
        if !get(&signal, "addEventListener").is_function()
            || get(&signal, "aborted").as_bool().is_none()
        {
            return Err(type_error(
                "signal",
                format!("must be an AbortSignal, got {}", describe(&signal)),
            ));
        }
        let token = CancelToken::new();
        if get(&signal, "aborted").as_bool() == Some(true) {
            token.cancel();
            return Ok(Call {
                options: CallOptions {
                    cancel: Some(token),
                    timeout,
                },
                listener: None,
            });
        }
        let t = token.clone();
        let closure = Closure::<dyn FnMut()>::new(move || t.cancel());
        let add: js_sys::Function = get(&signal, "addEventListener").unchecked_into();
        let _ = add.call2(&signal, &"abort".into(), closure.as_ref());
        Ok(Call {
            options: CallOptions {
                cancel: Some(token),
                timeout,
            },
            listener: Some((signal, closure)),
        })
    }
}

impl Drop for Call {
    fn drop(&mut self) {
        if let Some((signal, closure)) = self.listener.take() {
            if let Ok(remove) = get(&signal, "removeEventListener").dyn_into::<js_sys::Function>() {
                let _ = remove.call2(&signal, &"abort".into(), closure.as_ref());
            }
        }
    }
}

// ---------------------------------------------------------------------------------
// Numbers

/// Refuses an array (plain or typed) longer than [`MAX_ELEMENTS`] before anything is
/// copied (a plain array's holes cost JS nothing, its copy into wasm memory would not).
fn check_len(v: &JsValue, kind: &str, path: &str) -> Result<(), InputError> {
    if kind.is_empty() && !Array::is_array(v) {
        return Ok(()); // not an array: the caller says what it must be
    }
    let n = get(v, "length").as_f64().unwrap_or(0.0);
    if n > MAX_ELEMENTS as f64 {
        return Err(InputError::range_error(
            path,
            format!("has {n} elements; at most {MAX_ELEMENTS} are accepted"),
        ));
    }
    Ok(())
}

/// Numbers of an array-like (typed array or plain array of numbers).
fn numbers(v: &JsValue, path: &str) -> Result<Vec<f64>, InputError> {
    let kind = typed_kind(v);
    check_len(v, &kind, path)?;
    if kind.is_empty() {
        if !Array::is_array(v) {
            return Err(InputError::type_error(
                path,
                format!(
                    "must be an array or typed array of numbers, got {}",
                    describe(v)
                ),
            ));
        }
        let bad = first_non_number(v);
        if bad >= 0 {
            let e = Reflect::get_u32(v, bad as u32).unwrap_or(JsValue::UNDEFINED);
            return Err(InputError::type_error(
                format!("{path}[{bad}]"),
                format!("must be a number, got {}", describe(&e)),
            ));
        }
    } else if kind == "BigInt64Array" || kind == "BigUint64Array" {
        let n = get(v, "length").as_f64().unwrap_or(0.0) as u32;
        return (0..n)
            .map(|i| {
                let b = Reflect::get_u32(v, i).unwrap_or(JsValue::UNDEFINED);
                let x = js_sys::Number::from(b).value_of();
                if x.abs() > 9_007_199_254_740_991.0 {
                    Err(InputError::range_error(
                        format!("{path}[{i}]"),
                        "is beyond the safe integer range",
                    ))
                } else {
                    Ok(x)
                }
            })
            .collect();
    }
    Ok(Float64Array::new(v).to_vec())
}

/// Token ids: `Uint32Array`, `Int32Array` or an array of integers in [0, 2³¹).
pub fn tokens(v: &JsValue, path: &str) -> Result<Vec<u32>, InputError> {
    let kind = typed_kind(v);
    check_len(v, &kind, path)?;
    let out: Vec<u32> = match kind.as_str() {
        "Uint32Array" => v.unchecked_ref::<Uint32Array>().to_vec(),
        "Int32Array" => {
            let raw = v.unchecked_ref::<Int32Array>().to_vec();
            if let Some(i) = raw.iter().position(|&t| t < 0) {
                return Err(InputError::range_error(
                    format!("{path}[{i}]"),
                    format!("token id {} is negative", raw[i]),
                ));
            }
            raw.into_iter().map(|t| t as u32).collect()
        }
        _ => {
            let nums = numbers(v, path)?;
            let mut out = Vec::with_capacity(nums.len());
            for (i, x) in nums.into_iter().enumerate() {
                if x.fract() != 0.0 || !(0.0..2147483648.0).contains(&x) {
                    return Err(InputError::range_error(
                        format!("{path}[{i}]"),
                        format!("token ids are integers in [0, 2^31), got {}", fmt_num(x)),
                    ));
                }
                out.push(x as u32);
            }
            out
        }
    };
    if let Some(i) = out.iter().position(|&t| t > i32::MAX as u32) {
        return Err(InputError::range_error(
            format!("{path}[{i}]"),
            format!("token id {} is out of range [0, 2^31)", out[i]),
        ));
    }
    Ok(out)
}

fn bytes(v: &JsValue, path: &str) -> Result<Vec<u8>, InputError> {
    if let Some(s) = v.as_string() {
        use base64::Engine as _;
        return base64::engine::general_purpose::STANDARD
            .decode(s.as_bytes())
            .map_err(|e| {
                InputError::type_error(
                    path,
                    format!(
                        "must be bytes (Uint8Array) or base64, got an invalid base64 string: {e}"
                    ),
                )
            });
    }
    match typed_kind(v).as_str() {
        "Uint8Array" => Ok(v.unchecked_ref::<Uint8Array>().to_vec()),
        "" if v.is_instance_of::<js_sys::ArrayBuffer>() => Ok(Uint8Array::new(v).to_vec()),
        _ => Err(InputError::type_error(
            path,
            format!(
                "must be a Uint8Array, ArrayBuffer or base64 string, got {}",
                describe(v)
            ),
        )),
    }
}

fn opt_u32(v: &JsValue, path: &str) -> Result<Option<u32>, InputError> {
    if v.is_undefined() || v.is_null() {
        return Ok(None);
    }
    match v.as_f64() {
        Some(x) if x.fract() == 0.0 && (0.0..=u32::MAX as f64).contains(&x) => Ok(Some(x as u32)),
        _ => Err(InputError::type_error(
            path,
            format!("must be a non-negative integer, got {}", describe(v)),
        )),
    }
}

fn check_keys(v: &JsValue, path: &str, allowed: &[&str]) -> Result<(), InputError> {
    for k in keys(v) {
        if !allowed.contains(&k.as_str()) && !get(v, &k).is_undefined() {
            return Err(InputError::type_error(
                if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                },
                format!("unknown field; expected one of: {}", allowed.join(", ")),
            ));
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------
// Data → core

/// A `ModelInput` (`{ chunks: [...] }`) or, as a shorthand, token ids.
pub fn model_input(v: &JsValue, path: &str) -> Result<ModelInput, InputError> {
    if Array::is_array(v) || !typed_kind(v).is_empty() {
        return Ok(ModelInput::from_ints(tokens(v, path)?));
    }
    if !is_plain_object(v) {
        return Err(InputError::type_error(
            path,
            format!(
                "must be a ModelInput ({{ chunks: [...] }}) or an array of token ids, got {}",
                describe(v)
            ),
        ));
    }
    check_keys(v, path, &["chunks"])?;
    let chunks = get(v, "chunks");
    if !Array::is_array(&chunks) {
        return Err(InputError::type_error(
            format!("{path}.chunks"),
            format!("must be an array of chunks, got {}", describe(&chunks)),
        ));
    }
    let arr: Array = chunks.unchecked_into();
    let mut out = Vec::with_capacity(arr.length() as usize);
    for (i, c) in arr.iter().enumerate() {
        let p = format!("{path}.chunks[{i}]");
        if !is_plain_object(&c) {
            return Err(InputError::type_error(
                &p,
                format!("must be a chunk object, got {}", describe(&c)),
            ));
        }
        let ty = get(&c, "type").as_string().unwrap_or_default();
        out.push(match ty.as_str() {
            "encoded_text" => {
                check_keys(&c, &p, &["type", "tokens"])?;
                ModelInputChunk::EncodedText { tokens: tokens(&get(&c, "tokens"), &format!("{p}.tokens"))? }
            }
            "image" => {
                check_keys(&c, &p, &["type", "data", "format", "expected_tokens"])?;
                ModelInputChunk::Image {
                    data: bytes(&get(&c, "data"), &format!("{p}.data"))?,
                    format: get(&c, "format").as_string().ok_or_else(|| InputError::type_error(format!("{p}.format"), "must be \"png\" or \"jpeg\""))?,
                    expected_tokens: opt_u32(&get(&c, "expected_tokens"), &format!("{p}.expected_tokens"))?,
                }
            }
            "image_asset_pointer" => {
                check_keys(&c, &p, &["type", "location", "format", "expected_tokens"])?;
                ModelInputChunk::ImageAssetPointer {
                    format: get(&c, "format").as_string().ok_or_else(|| InputError::type_error(format!("{p}.format"), "must be \"png\" or \"jpeg\""))?,
                    location: get(&c, "location").as_string().ok_or_else(|| InputError::type_error(format!("{p}.location"), "must be a string"))?,
                    expected_tokens: opt_u32(&get(&c, "expected_tokens"), &format!("{p}.expected_tokens"))?,
                }
            }
            "dmel" => {
                check_keys(&c, &p, &["type", "dmel"])?;
                ModelInputChunk::Dmel { dmel: bytes(&get(&c, "dmel"), &format!("{p}.dmel"))? }
            }
            other => return Err(InputError::type_error(format!("{p}.type"), format!("must be \"encoded_text\", \"image\", \"image_asset_pointer\" or \"dmel\", got {other:?}"))),
        });
    }
    let m = ModelInput { chunks: out };
    m.validate().map_err(|e| e.within(path))?;
    Ok(m)
}

fn shape_of(v: &JsValue, path: &str) -> Result<Option<Vec<usize>>, InputError> {
    if v.is_undefined() || v.is_null() {
        return Ok(None);
    }
    let nums = numbers(v, path)?;
    nums.iter()
        .enumerate()
        .map(|(i, &d)| {
            if d.fract() == 0.0 && (0.0..1e12).contains(&d) {
                Ok(d as usize)
            } else {
                Err(InputError::range_error(
                    format!("{path}[{i}]"),
                    format!("dimensions are non-negative integers, got {d}"),
                ))
            }
        })
        .collect::<Result<Vec<_>, _>>()
        .map(Some)
}

fn index_array(v: &JsValue, path: &str) -> Result<Option<Vec<i64>>, InputError> {
    if v.is_undefined() || v.is_null() {
        return Ok(None);
    }
    numbers(v, path)?
        .into_iter()
        .enumerate()
        .map(|(i, x)| {
            if x.fract() == 0.0 {
                Ok(x as i64)
            } else {
                Err(InputError::type_error(
                    format!("{path}[{i}]"),
                    format!("must be an integer, got {}", fmt_num(x)),
                ))
            }
        })
        .collect::<Result<Vec<_>, _>>()
        .map(Some)
}

/// A `TensorData` (`{ data, dtype?, shape?, sparse_crow_indices?, sparse_col_indices? }`),
/// or, as a shorthand, a flat (typed) array. Without `dtype`, known loss-input names
/// decide (`target_tokens` int64; `weights`, `advantages`, `logprobs`, … float32), then
/// the typed array's kind.
pub fn tensor(v: &JsValue, key: Option<&str>, path: &str) -> Result<TensorData, InputError> {
    let (data, dtype_v, shape_v, crow_v, col_v) = if is_plain_object(v) {
        check_keys(
            v,
            path,
            &[
                "data",
                "dtype",
                "shape",
                "sparse_crow_indices",
                "sparse_col_indices",
            ],
        )?;
        (
            get(v, "data"),
            get(v, "dtype"),
            get(v, "shape"),
            get(v, "sparse_crow_indices"),
            get(v, "sparse_col_indices"),
        )
    } else {
        (
            v.clone(),
            JsValue::UNDEFINED,
            JsValue::UNDEFINED,
            JsValue::UNDEFINED,
            JsValue::UNDEFINED,
        )
    };
    let kind = typed_kind(&data);
    let dtype = match dtype_v.as_string().as_deref() {
        Some("float32") => DType::Float32,
        Some("int64") => DType::Int64,
        Some(other) => {
            return Err(InputError::type_error(
                format!("{path}.dtype"),
                format!("must be \"float32\" or \"int64\", got {other:?}"),
            ))
        }
        None if !dtype_v.is_undefined() => {
            return Err(InputError::type_error(
                format!("{path}.dtype"),
                format!(
                    "must be \"float32\" or \"int64\", got {}",
                    describe(&dtype_v)
                ),
            ))
        }
        None => match key.and_then(loss_input_dtype) {
            Some(d) => d,
            None => match kind.as_str() {
                "Float32Array" | "Float64Array" => DType::Float32,
                "Int32Array" | "Uint32Array" | "Int16Array" | "Uint16Array" | "Int8Array"
                | "Uint8Array" | "BigInt64Array" => DType::Int64,
                _ => {
                    return Err(InputError::type_error(
                        format!("{path}.dtype"),
                        "is required for this input (\"float32\" or \"int64\")",
                    ))
                }
            },
        },
    };
    let dp = format!("{path}.data");
    let values = match dtype {
        DType::Float32 if kind == "Float32Array" => {
            TensorValues::Float32(data.unchecked_ref::<Float32Array>().to_vec())
        }
        DType::Float32 => {
            TensorValues::Float32(numbers(&data, &dp)?.into_iter().map(|x| x as f32).collect())
        }
        DType::Int64 => {
            let nums = numbers(&data, &dp)?;
            if let Some(i) = nums.iter().position(|x| x.fract() != 0.0) {
                return Err(InputError::type_error(
                    format!("{dp}[{i}]"),
                    format!("dtype int64 needs integers, got {}", nums[i]),
                ));
            }
            TensorValues::Int64(nums.into_iter().map(|x| x as i64).collect())
        }
    };
    let mut shape = shape_of(&shape_v, &format!("{path}.shape"))?;
    if shape.is_none() && crow_v.is_undefined() {
        shape = Some(vec![values.len()]);
    }
    let t = TensorData {
        values,
        shape,
        sparse_crow_indices: index_array(&crow_v, &format!("{path}.sparse_crow_indices"))?,
        sparse_col_indices: index_array(&col_v, &format!("{path}.sparse_col_indices"))?,
    };
    t.validate().map_err(|e| e.within(path))?;
    Ok(t)
}

/// A `Datum` (`{ model_input, loss_fn_inputs }`).
pub fn datum(v: &JsValue, path: &str) -> Result<Datum, InputError> {
    if !is_plain_object(v) {
        return Err(InputError::type_error(
            path,
            format!(
                "must be a Datum ({{ model_input, loss_fn_inputs }}), got {}",
                describe(v)
            ),
        ));
    }
    check_keys(
        v,
        path,
        &[
            "model_input",
            "loss_fn_inputs",
            "model_input_spans",
            "loss_fn_input_spans",
        ],
    )?;
    let mi = model_input(&get(v, "model_input"), &format!("{path}.model_input"))?;
    let lfi = get(v, "loss_fn_inputs");
    let mut inputs = LossFnInputs::new();
    if !(lfi.is_undefined() || lfi.is_null()) {
        if !is_plain_object(&lfi) {
            return Err(InputError::type_error(
                format!("{path}.loss_fn_inputs"),
                format!("must be an object of tensors, got {}", describe(&lfi)),
            ));
        }
        for k in keys(&lfi) {
            let t = get(&lfi, &k);
            if t.is_undefined() {
                continue;
            }
            inputs.insert(
                k.clone(),
                tensor(&t, Some(&k), &format!("{path}.loss_fn_inputs.{k}"))?,
            );
        }
    }
    let spans = |k: &str| -> Result<Option<Vec<crate::types::ProvenanceSpan>>, InputError> {
        let s = get(v, k);
        if s.is_undefined() || s.is_null() {
            return Ok(None);
        }
        let json = js_sys::JSON::stringify(&s)
            .ok()
            .and_then(|s| s.as_string())
            .unwrap_or_default();
        serde_json::from_str(&json)
            .map(Some)
            .map_err(|e| InputError::type_error(format!("{path}.{k}"), e.to_string()))
    };
    Ok(Datum {
        model_input: mi,
        loss_fn_inputs: inputs,
        model_input_spans: spans("model_input_spans")?,
        loss_fn_input_spans: spans("loss_fn_input_spans")?,
    })
}

/// An array of `Datum`s.
pub fn data(v: &JsValue) -> Result<Vec<Datum>, JsValue> {
    if !Array::is_array(v) {
        return Err(type_error(
            "data",
            format!("must be an array of Datum objects, got {}", describe(v)),
        ));
    }
    let arr: &Array = v.unchecked_ref();
    let mut out = Vec::with_capacity(arr.length() as usize);
    for i in 0..arr.length() {
        out.push(datum(&arr.get(i), &format!("data[{i}]")).map_err(|e| input_error(&e))?);
    }
    Ok(out)
}

// ---------------------------------------------------------------------------------
// Core → JS

/// A `TensorData` as JS (float32 data as `Float32Array`, int64 as `number[]`).
pub fn tensor_to_js(t: &TensorData) -> JsValue {
    let o = Object::new();
    let data: JsValue = match &t.values {
        TensorValues::Float32(v) => Float32Array::from(&v[..]).into(),
        TensorValues::Int64(v) => v
            .iter()
            .map(|&x| JsValue::from_f64(x as f64))
            .collect::<Array>()
            .into(),
    };
    set(&o, "data", &data);
    set(&o, "dtype", &JsValue::from_str(t.dtype().name()));
    set(
        &o,
        "shape",
        &t.dense_shape()
            .iter()
            .map(|&d| JsValue::from_f64(d as f64))
            .collect::<Array>(),
    );
    if let (Some(c), Some(k)) = (&t.sparse_crow_indices, &t.sparse_col_indices) {
        set(
            &o,
            "sparse_crow_indices",
            &c.iter()
                .map(|&x| JsValue::from_f64(x as f64))
                .collect::<Array>(),
        );
        set(
            &o,
            "sparse_col_indices",
            &k.iter()
                .map(|&x| JsValue::from_f64(x as f64))
                .collect::<Array>(),
        );
    }
    o.into()
}

fn metrics_to_js(m: &BTreeMap<String, f64>) -> JsValue {
    let o = Object::new();
    for (k, v) in m {
        set(&o, k, &JsValue::from_f64(*v));
    }
    o.into()
}

/// A `ForwardBackwardOutput` as JS.
pub fn forward_backward_to_js(out: &ForwardBackwardOutput) -> JsValue {
    let o = Object::new();
    set(
        &o,
        "loss_fn_output_type",
        &JsValue::from_str(&out.loss_fn_output_type),
    );
    let outputs: Array = out
        .loss_fn_outputs
        .iter()
        .map(|m| {
            let d = Object::new();
            for (k, t) in m {
                set(&d, k, &tensor_to_js(t));
            }
            JsValue::from(d)
        })
        .collect();
    set(&o, "loss_fn_outputs", &outputs);
    set(&o, "metrics", &metrics_to_js(&out.metrics));
    o.into()
}

/// Top-k logprobs as rows of `[token_id, logprob]` pairs, without the trailing empty
/// cells `(0, -99999)`; a row starting with an empty cell is `null` (as in Python).
fn topk_to_js(t: &TopkLogprobs) -> JsValue {
    let k = t.k as usize;
    (0..t.length as usize)
        .map(|r| {
            let cells = &t.token_ids[r * k..r * k + k];
            let lps = &t.logprobs[r * k..r * k + k];
            let empty = |j: usize| cells[j] == 0 && lps[j] == -99999.0;
            if empty(0) {
                return JsValue::NULL;
            }
            let n = (0..k).rposition(|j| !empty(j)).map_or(0, |j| j + 1);
            (0..n)
                .map(|j| {
                    JsValue::from(Array::of2(
                        &JsValue::from(cells[j]),
                        &JsValue::from_f64(f64::from(lps[j])),
                    ))
                })
                .collect::<Array>()
                .into()
        })
        .collect::<Array>()
        .into()
}

fn logprob_list(v: &[f32]) -> JsValue {
    v.iter()
        .map(|&x| {
            if x.is_nan() {
                JsValue::NULL
            } else {
                JsValue::from_f64(f64::from(x))
            }
        })
        .collect::<Array>()
        .into()
}

/// A `SampleResponse` as JS (token ids as `Int32Array`, logprobs as `Float32Array`).
pub fn sample_response_to_js(r: &SampleResponse) -> JsValue {
    let o = Object::new();
    let seqs: Array = r
        .sequences
        .iter()
        .map(|s| {
            let so = Object::new();
            set(&so, "tokens", &Int32Array::from(&s.tokens[..]));
            set(
                &so,
                "logprobs",
                &s.logprobs
                    .as_ref()
                    .map_or(JsValue::NULL, |l| Float32Array::from(&l[..]).into()),
            );
            set(
                &so,
                "stop_reason",
                &JsValue::from_str(match s.stop_reason {
                    crate::proto::StopReason::Stop => "stop",
                    crate::proto::StopReason::Length => "length",
                }),
            );
            set(&so, "sequence_id", &JsValue::from_str(&s.sequence_id));
            set(
                &so,
                "topk_logprobs",
                &s.topk_logprobs.as_ref().map_or(JsValue::NULL, topk_to_js),
            );
            JsValue::from(so)
        })
        .collect();
    set(&o, "sequences", &seqs);
    set(
        &o,
        "prompt_logprobs",
        &r.prompt_logprobs
            .as_ref()
            .map_or(JsValue::NULL, |l| logprob_list(l)),
    );
    set(
        &o,
        "topk_prompt_logprobs",
        &r.topk_prompt_logprobs
            .as_ref()
            .map_or(JsValue::NULL, topk_to_js),
    );
    set(
        &o,
        "prompt_cache_hit_tokens",
        &JsValue::from(r.prompt_cache_hit_tokens),
    );
    set(
        &o,
        "target_prompt_logprobs",
        &r.target_prompt_logprobs
            .as_ref()
            .map_or(JsValue::NULL, tensor_to_js),
    );
    let alt = r.prompt_alt_tokens.as_ref().map_or(JsValue::NULL, |a| {
        let ao = Object::new();
        set(&ao, "tokens", &tensor_to_js(&a.tokens));
        set(&ao, "logprobs", &tensor_to_js(&a.logprobs));
        ao.into()
    });
    set(&o, "prompt_alt_tokens", &alt);
    o.into()
}

/// A `ModelInput` as JS (tokens as `Uint32Array`).
pub fn model_input_to_js(m: &ModelInput) -> JsValue {
    let chunks: Array = m
        .chunks
        .iter()
        .map(|c| match c {
            ModelInputChunk::EncodedText { tokens } => {
                let o = Object::new();
                set(&o, "type", &"encoded_text".into());
                set(&o, "tokens", &Uint32Array::from(&tokens[..]));
                JsValue::from(o)
            }
            other => json_to_js(&serde_json::to_value(other).unwrap_or_default()),
        })
        .collect();
    let o = Object::new();
    set(&o, "chunks", &chunks);
    o.into()
}

/// A `Datum` as JS (typed arrays for tokens and float data).
pub fn datum_to_js(d: &Datum) -> JsValue {
    let o = Object::new();
    set(&o, "model_input", &model_input_to_js(&d.model_input));
    let inputs = Object::new();
    for (k, t) in &d.loss_fn_inputs {
        let js = tensor_to_js(t);
        if let TensorValues::Int64(v) = &t.values {
            if v.iter().all(|&x| i32::try_from(x).is_ok()) {
                set(
                    &js,
                    "data",
                    &Int32Array::from(&v.iter().map(|&x| x as i32).collect::<Vec<_>>()[..]),
                );
            }
        }
        set(&inputs, k, &js);
    }
    set(&o, "loss_fn_inputs", &inputs);
    o.into()
}

// ---------------------------------------------------------------------------------
// Parameter objects (wire field names)

/// `AdamParams` from JS (`{ learning_rate, beta1, beta2, eps, weight_decay, grad_clip_norm }`,
/// each optional), errors naming the field.
pub fn adam_params(v: &JsValue) -> Result<crate::types::AdamParams, JsValue> {
    let o = Opts::new(
        v,
        "AdamParams",
        &[
            "learning_rate",
            "beta1",
            "beta2",
            "eps",
            "weight_decay",
            "grad_clip_norm",
        ],
    )?;
    let mut p = crate::types::AdamParams::default();
    for (k, slot) in [
        ("learning_rate", &mut p.learning_rate),
        ("beta1", &mut p.beta1),
        ("beta2", &mut p.beta2),
        ("eps", &mut p.eps),
        ("weight_decay", &mut p.weight_decay),
        ("grad_clip_norm", &mut p.grad_clip_norm),
    ] {
        if let Some(x) = o.number(k)? {
            *slot = x;
        }
    }
    p.validate().map_err(|e| input_error(&e))?;
    Ok(p)
}

/// `SamplingParams` from JS (`{ max_tokens, seed, stop, temperature, top_k, top_p }`).
pub fn sampling_params(v: &JsValue) -> Result<crate::types::SamplingParams, JsValue> {
    use crate::types::{SamplingParams, StopCondition};
    let o = Opts::new(
        v,
        "samplingParams",
        &[
            "max_tokens",
            "seed",
            "stop",
            "temperature",
            "top_k",
            "top_p",
        ],
    )?;
    let mut p = SamplingParams {
        max_tokens: o.uint("max_tokens", u32::MAX as u64)?.map(|n| n as u32),
        seed: o.uint("seed", u64::MAX)?,
        ..Default::default()
    };
    if let Some(t) = o.number("temperature")? {
        p.temperature = t;
    }
    if let Some(t) = o.number("top_p")? {
        p.top_p = t;
    }
    if let Some(k) = o.number("top_k")? {
        if k.fract() != 0.0 {
            return Err(type_error("top_k", format!("must be an integer, got {k}")));
        }
        p.top_k = k as i64;
    }
    let stop = o.get("stop");
    p.stop = if stop.is_undefined() || stop.is_null() {
        None
    } else if let Some(s) = stop.as_string() {
        Some(StopCondition::String(s))
    } else if Array::is_array(&stop) {
        let arr: &Array = stop.unchecked_ref();
        if arr.length() == 0 {
            Some(StopCondition::Tokens(vec![]))
        } else if arr.get(0).is_string() {
            let mut out = Vec::with_capacity(arr.length() as usize);
            for (i, x) in arr.iter().enumerate() {
                out.push(x.as_string().ok_or_else(|| {
                    type_error(
                        &format!("stop[{i}]"),
                        format!(
                            "stop strings and token ids cannot be mixed, got {}",
                            describe(&x)
                        ),
                    )
                })?);
            }
            Some(StopCondition::Strings(out))
        } else {
            Some(StopCondition::Tokens(
                tokens(&stop, "stop").map_err(|e| input_error(&e))?,
            ))
        }
    } else {
        return Err(type_error(
            "stop",
            format!(
                "must be a string, an array of strings or an array of token ids, got {}",
                describe(&stop)
            ),
        ));
    };
    p.validate().map_err(|e| input_error(&e))?;
    Ok(p)
}
