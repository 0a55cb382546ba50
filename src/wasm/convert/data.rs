//! Data → core: `ModelInput`, `TensorData`, `Datum` (the general lane, which reports every error).

use super::*;

// ---------------------------------------------------------------------------------
// Data → core
//
// The readers of the JS above read each object's fields in one call and say what they
// are; the values are taken from them only when needed. Every decision is made here.

pub(super) fn taken(i: u32) -> JsValue {
    take(i)
}

/// One top-level conversion: the JS readers keep values in per-frame arrays, so a
/// conversion that a getter of the caller's data starts in the middle of another one
/// (re-entrancy) cannot overwrite the values the outer one kept. Dropping it releases them.
pub(super) struct Frame;

impl Frame {
    pub(super) fn enter() -> Frame {
        enter();
        Frame
    }
}

impl Drop for Frame {
    fn drop(&mut self) {
        leave();
    }
}

/// A `ModelInput` (`{ chunks: [...] }`) or, as a shorthand, token ids.
pub fn model_input(v: &JsValue, path: &str) -> Result<ModelInput, InputError> {
    let _frame = Frame::enter();
    model_input_rel(Src::Val(v), kind(v)).map_err(|e| pre(e, path))
}

/// [`model_input`] of `v` of kind `k`.
pub(super) fn model_input_rel(src: Src, k: u32) -> Result<ModelInput, InputError> {
    let j = js();
    if k == K_ARRAY || is_typed(k) {
        let v = src.value();
        return Ok(ModelInput::from_ints(tokens_of(
            Src::Val(&v),
            k,
            checked_len(&v, k)?,
        )?));
    }
    if k != K_OBJECT {
        return Err(InputError::type_error(
            "",
            format!(
                "must be a ModelInput ({{ chunks: [...] }}) or an array of token ids, got {}",
                describe(&src.value())
            ),
        ));
    }
    let mut o = Out::<2>::new();
    let (v, s) = src.args();
    if read_model_input(&j.memory, v, s, &j.model_input_keys, o.ptr()) == 0 {
        check_keys(&src.value(), &j.model_input_keys, MODEL_INPUT_KEYS)?;
    }
    if o.kind(0) != K_ARRAY {
        return Err(InputError::type_error(
            ".chunks",
            format!("must be an array of chunks, got {}", describe(&taken(4))),
        ));
    }
    let n = o.at(1) as u32;
    let mut out = Vec::with_capacity(n as usize);
    for i in 0..n {
        out.push(chunk(i).map_err(|e| pre(e, &format!(".chunks[{i}]")))?);
    }
    let m = ModelInput { chunks: out };
    m.validate().map_err(rel)?;
    Ok(m)
}

/// Chunk `i` of the `chunks` array [`read_model_input`] read last.
pub(super) fn chunk(i: u32) -> Result<ModelInputChunk, InputError> {
    let j = js();
    let mut o = Out::<2>::new();
    match read_chunk(&j.memory, i, &j.encoded_text_keys, o.ptr()) {
        0 => Err(InputError::type_error(
            "",
            format!("must be a chunk object, got {}", describe(&taken(5))),
        )),
        1 => other_chunk(&taken(5)),
        r => {
            if r == 2 {
                check_keys(&taken(5), &j.encoded_text_keys, ENCODED_TEXT_KEYS)?;
            }
            let (k, n) = (o.kind(0), o.at(1));
            let tokens = checked(n)
                .and_then(|n| tokens_of(Src::Slot(6), k, n))
                .map_err(|e| pre(e, ".tokens"))?;
            Ok(ModelInputChunk::EncodedText { tokens })
        }
    }
}

/// A chunk object whose `type` is not `encoded_text`.
pub(super) fn other_chunk(c: &JsValue) -> Result<ModelInputChunk, InputError> {
    let ty = get_str(c, "type").as_string().unwrap_or_default();
    let check = |allowed: &[&str]| -> Result<(), InputError> {
        let list: Array = allowed.iter().map(|k| JsValue::from_str(k)).collect();
        check_keys(c, &list, allowed)
    };
    let format = || {
        get_str(c, "format")
            .as_string()
            .ok_or_else(|| InputError::type_error(".format", "must be \"png\" or \"jpeg\""))
    };
    let expected_tokens =
        || opt_u32(&get_str(c, "expected_tokens")).map_err(|e| pre(e, ".expected_tokens"));
    Ok(match ty.as_str() {
        "image" => {
            check(super::shapes::ImageChunk::KEYS)?;
            ModelInputChunk::Image {
                data: bytes(&get_str(c, "data")).map_err(|e| pre(e, ".data"))?,
                format: format()?,
                expected_tokens: expected_tokens()?,
            }
        }
        "image_asset_pointer" => {
            check(super::shapes::ImageAssetPointerChunk::KEYS)?;
            ModelInputChunk::ImageAssetPointer {
                format: format()?,
                location: get_str(c, "location")
                    .as_string()
                    .ok_or_else(|| InputError::type_error(".location", "must be a string"))?,
                expected_tokens: expected_tokens()?,
            }
        }
        "dmel" => {
            check(super::shapes::DmelChunk::KEYS)?;
            ModelInputChunk::Dmel {
                dmel: bytes(&get_str(c, "dmel")).map_err(|e| pre(e, ".dmel"))?,
            }
        }
        other => {
            return Err(InputError::type_error(
                ".type",
                format!(
                "must be \"encoded_text\", \"image\", \"image_asset_pointer\" or \"dmel\", got {}",
                crate::json::quote(other)
            ),
            ))
        }
    })
}

/// A `shape` of kind `k` and length `n` (as JS reads it).
pub(super) fn shape_of(v: &JsValue, k: u32, n: f64) -> Result<Option<Vec<usize>>, InputError> {
    if is_nullish(k) {
        return Ok(None);
    }
    dims_of(numbers_of(v, k, checked(n)?)?)
}

/// The dimensions of a shape from its numbers.
pub(super) fn dims_of(nums: Vec<f64>) -> Result<Option<Vec<usize>>, InputError> {
    nums.iter()
        .enumerate()
        .map(|(i, &d)| {
            if d.fract() == 0.0 && (0.0..1e12).contains(&d) {
                Ok(d as usize)
            } else {
                Err(InputError::range_error(
                    format!("[{i}]"),
                    format!("dimensions are non-negative integers, got {}", fmt_num(d)),
                ))
            }
        })
        .collect::<Result<Vec<_>, _>>()
        .map(Some)
}

/// Sparse indices: `v` of kind `k` (`take`n only when not undefined or null).
pub(super) fn index_array(
    v: impl FnOnce() -> JsValue,
    k: u32,
) -> Result<Option<Vec<i64>>, InputError> {
    if is_nullish(k) {
        return Ok(None);
    }
    let v = v();
    numbers_of(&v, k, checked_len(&v, k)?)?
        .into_iter()
        .enumerate()
        .map(|(i, x)| {
            if x.fract() == 0.0 {
                Ok(x as i64)
            } else {
                Err(InputError::type_error(
                    format!("[{i}]"),
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
    let _frame = Frame::enter();
    tensor_rel(Src::Val(v), kind(v), key).map_err(|e| pre(e, path))
}

/// [`tensor`] of `v` of kind `vk`.
pub(super) fn tensor_rel(src: Src, vk: u32, key: Option<&str>) -> Result<TensorData, InputError> {
    let j = js();
    // Kinds of data, dtype (code), shape, crow, col; lengths of data and shape; whether
    // the shape's numbers follow, and those.
    let mut o = Out::<12>::new();
    let object = vk == K_OBJECT;
    if object {
        let (v, s) = src.args();
        if read_tensor(&j.memory, v, s, &j.tensor_keys, o.ptr()) == 0 {
            check_keys(&src.value(), &j.tensor_keys, TENSOR_KEYS)?;
        }
    }
    let (k, dtype_code, shape_k, crow_k, col_k, n, shape_n) = if object {
        let k = o.kind(0);
        (
            k,
            o.kind(1),
            o.kind(2),
            o.kind(3),
            o.kind(4),
            o.at(5),
            o.at(6),
        )
    } else {
        let n = if vk == K_ARRAY || is_typed(vk) {
            length(&src.value(), vk)
        } else {
            0.0
        };
        (vk, 0, K_UNDEFINED, K_UNDEFINED, K_UNDEFINED, n, 0.0)
    };
    let data = if object { Src::Slot(8) } else { src };
    let dtype = dtype_of(dtype_code, key, k)?;
    let at_data = |e: InputError| pre(e, ".data");
    let n = checked(n).map_err(at_data)?;
    let values = match (dtype, k) {
        // SAFETY: a Float32Array's elements are f32s.
        (DType::Float32, K_F32) => {
            TensorValues::Float32(unsafe { copy_typed_vec::<f32>(data, k, n) })
        }
        (DType::Float32, _) => TensorValues::Float32(
            numbers_of(&data.value(), k, n)
                .map_err(at_data)?
                .into_iter()
                .map(|x| x as f32)
                .collect(),
        ),
        (DType::Int64, K_I32 | K_U32) => TensorValues::Int64(widen_typed_vec(data, k, n)),
        (DType::Int64, _) => {
            let nums = numbers_of(&data.value(), k, n).map_err(at_data)?;
            if let Some(i) = nums.iter().position(|x| x.fract() != 0.0) {
                return Err(InputError::type_error(
                    format!(".data[{i}]"),
                    format!("dtype int64 needs integers, got {}", fmt_num(nums[i])),
                ));
            }
            TensorValues::Int64(nums.into_iter().map(|x| x as i64).collect())
        }
    };
    let mut shape = if object && o.at(7) == 1.0 {
        let dims: Vec<f64> = (0..shape_n as usize).map(|i| o.at(8 + i)).collect();
        dims_of(dims)
    } else {
        let shape_v = if is_nullish(shape_k) {
            JsValue::UNDEFINED
        } else {
            taken(10)
        };
        shape_of(&shape_v, shape_k, shape_n)
    }
    .map_err(|e| pre(e, ".shape"))?;
    if shape.is_none() && crow_k == K_UNDEFINED {
        shape = Some(vec![values.len()]);
    }
    let t = TensorData {
        values,
        shape,
        sparse_crow_indices: index_array(|| taken(11), crow_k)
            .map_err(|e| pre(e, ".sparse_crow_indices"))?,
        sparse_col_indices: index_array(|| taken(12), col_k)
            .map_err(|e| pre(e, ".sparse_col_indices"))?,
    };
    t.validate().map_err(rel)?;
    Ok(t)
}

/// A tensor's dtype: its `dtype` field (code 1 float32, 2 int64, 3 another string, 4 not
/// a string), else the loss input's (`key`), else the typed array's kind `k`.
// Inlined into its one caller: as a call it costs the lite module 16 bytes gzip.
#[inline(always)]
fn dtype_of(dtype_code: u32, key: Option<&str>, k: u32) -> Result<DType, InputError> {
    Ok(match dtype_code {
        1 => DType::Float32,
        2 => DType::Int64,
        3 => {
            return Err(InputError::type_error(
                ".dtype",
                format!(
                    "must be \"float32\" or \"int64\", got {}",
                    crate::json::quote(&taken(9).as_string().unwrap_or_default())
                ),
            ))
        }
        4 => {
            return Err(InputError::type_error(
                ".dtype",
                format!(
                    "must be \"float32\" or \"int64\", got {}",
                    describe(&taken(9))
                ),
            ))
        }
        _ => match key.and_then(loss_input_dtype) {
            Some(d) => d,
            None => match k {
                K_F32 | K_F64 => DType::Float32,
                K_I32 | K_U32 | K_I16 | K_U16 | K_I8 | K_U8 | K_BI64 => DType::Int64,
                _ => {
                    return Err(InputError::type_error(
                        ".dtype",
                        "is required for this input (\"float32\" or \"int64\")",
                    ))
                }
            },
        },
    })
}

/// A `Datum` (`{ model_input, loss_fn_inputs }`).
pub(super) fn datum_rel(v: &JsValue) -> Result<Datum, InputError> {
    let j = js();
    // Kinds of model_input, loss_fn_inputs, model_input_spans, loss_fn_input_spans.
    let mut o = Out::<4>::new();
    match read_datum(&j.memory, v, &j.datum_keys, o.ptr()) {
        0 => {
            return Err(InputError::type_error(
                "",
                format!(
                    "must be a Datum ({{ model_input, loss_fn_inputs }}), got {}",
                    describe(v)
                ),
            ))
        }
        1 => check_keys(v, &j.datum_keys, DATUM_KEYS)?,
        _ => {}
    }
    let (mi_k, lfi_k, mis_k, lis_k) = (o.kind(0), o.kind(1), o.kind(2), o.kind(3));
    // (No reader below reuses slots 0-3.)
    let mi = model_input_rel(Src::Slot(0), mi_k).map_err(|e| pre(e, ".model_input"))?;
    let mut inputs = LossFnInputs::new();
    if !is_nullish(lfi_k) {
        if lfi_k != K_OBJECT {
            return Err(InputError::type_error(
                ".loss_fn_inputs",
                format!("must be an object of tensors, got {}", describe(&taken(1))),
            ));
        }
        loss_fn_inputs(Src::Slot(1), &mut inputs)?;
    }
    let mis = if is_nullish(mis_k) {
        None
    } else {
        Some(taken(2))
    };
    let lis = if is_nullish(lis_k) {
        None
    } else {
        Some(taken(3))
    };
    let spans = |s: Option<JsValue>,
                 name: &str|
     -> Result<Option<Vec<crate::types::ProvenanceSpan>>, InputError> {
        let Some(s) = s else { return Ok(None) };
        let json = js_sys::JSON::stringify(&s)
            .ok()
            .and_then(|s| s.as_string())
            .unwrap_or_default();
        let bad = |e: String| InputError::type_error(format!(".{name}"), e);
        let v = crate::json::from_str(&json).map_err(|e| bad(e.to_string()))?;
        match v {
            crate::json::Value::Array(a) => a
                .iter()
                .enumerate()
                .map(|(i, x)| {
                    crate::types::ProvenanceSpan::from_json(x).map_err(|e| format!("[{i}]: {e}"))
                })
                .collect::<Result<Vec<_>, _>>()
                .map(Some)
                .map_err(bad),
            other => Err(bad(format!(
                "expected an array of provenance spans, got {}",
                other.kind()
            ))),
        }
    };
    Ok(Datum {
        model_input: mi,
        loss_fn_inputs: inputs,
        model_input_spans: spans(mis, "model_input_spans")?,
        loss_fn_input_spans: spans(lis, "loss_fn_input_spans")?,
    })
}

/// The tensors of a `loss_fn_inputs` object (undefined entries skipped).
pub(super) fn loss_fn_inputs(lfi: Src, inputs: &mut LossFnInputs) -> Result<(), InputError> {
    let j = js();
    let (lfi, s) = lfi.args();
    // Per entry: the kind of the value, the index of the key in KNOWN_INPUTS or -1.
    let mut small = Out::<16>::new();
    let mut n = read_inputs(&j.memory, lfi, s, &j.known_inputs, small.ptr(), 8) as usize;
    let mut big = Vec::new();
    let entries: &[f64] = if n <= 8 {
        &small.0[..2 * n]
    } else {
        big.resize(2 * n, 0.0);
        let cap = n as u32;
        // (A getter may have added keys since: the first `cap` are read.)
        let m = read_inputs(
            &j.memory,
            lfi,
            s,
            &j.known_inputs,
            big.as_mut_ptr() as u32,
            cap,
        );
        n = m.min(cap) as usize;
        &big[..2 * n]
    };
    let entries: Vec<(u32, f64)> = entries
        .chunks(2)
        .map(|e| {
            // SAFETY: plain reads of f64s JS wrote through the address given out.
            let (k, known) = unsafe {
                (
                    std::ptr::read_volatile(&e[0]),
                    std::ptr::read_volatile(&e[1]),
                )
            };
            (k as u32, known)
        })
        .collect();
    // The values, in order, before any tensor reader reuses other slots.
    for (i, (tk, known)) in entries.into_iter().enumerate() {
        if tk == K_UNDEFINED {
            continue;
        }
        let key = match KNOWN_INPUTS.get(known as usize) {
            Some(name) if known >= 0.0 => (*name).to_string(),
            _ => match taken(16 + 2 * i as u32).as_string() {
                Some(k) => k,
                None => continue,
            },
        };
        let t = tensor_rel(Src::Slot(17 + 2 * i as u32), tk, Some(&key))
            .map_err(|e| pre(e, &format!(".loss_fn_inputs.{key}")))?;
        inputs.insert(key, t);
    }
    Ok(())
}
