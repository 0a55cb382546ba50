//! Decoding request payloads (JSON and protobuf) into model inputs, with errors that
//! name the offending field and value.

use crate::model::loss::{input_keys, DatumIn};
use crate::model::sample::{Params, Stop, TargetSpec};
use crate::model::BaseSpec;
use crate::proto::{self, DecodedTensor};
use crate::util::{describe, FieldError, Obj};
use serde_json::Value;
use std::collections::BTreeMap;

/// Tokens of a JSON `ModelInput` (`{"chunks": [...]}`); only text chunks are accepted.
pub fn model_input_json(v: &Value, field: &str) -> Result<Vec<u32>, FieldError> {
    let chunks = v.get("chunks").and_then(|c| c.as_array()).ok_or_else(|| {
        FieldError::new(format!("field `{field}.chunks` must be an array of chunks"))
    })?;
    let mut out = Vec::new();
    for (i, c) in chunks.iter().enumerate() {
        let ty = c
            .get("type")
            .and_then(|t| t.as_str())
            .unwrap_or("encoded_text");
        match ty {
            "encoded_text" => {
                let toks = c
                    .get("tokens")
                    .and_then(|t| t.as_array())
                    .ok_or_else(|| FieldError::new(format!("field `{field}.chunks[{i}].tokens` must be an array of ints")))?;
                for (j, t) in toks.iter().enumerate() {
                    let id = t.as_i64().filter(|x| (0..=u32::MAX as i64).contains(x)).ok_or_else(|| {
                        FieldError::new(format!(
                            "field `{field}.chunks[{i}].tokens[{j}]` must be a non-negative token id, got {}",
                            describe(t)
                        ))
                    })?;
                    out.push(id as u32);
                }
            }
            other => {
                return Err(FieldError::new(format!(
                    "field `{field}.chunks[{i}]`: {other} chunks are not supported by tinker-sim's text models"
                )))
            }
        }
    }
    Ok(out)
}

/// Tokens of a protobuf datum's model input.
pub fn model_input_proto(chunks: &[proto::Chunk], what: &str) -> Result<Vec<u32>, String> {
    let mut out = Vec::new();
    for (i, c) in chunks.iter().enumerate() {
        match &c.chunk {
            Some(proto::chunk::Chunk::EncodedText(t)) => {
                for (j, x) in proto::bytes_to_i32s(&t.tokens, what)?
                    .into_iter()
                    .enumerate()
                {
                    if x < 0 {
                        return Err(format!("{what}.chunks[{i}].tokens[{j}] is negative ({x})"));
                    }
                    out.push(x as u32);
                }
            }
            Some(proto::chunk::Chunk::Image(_)) => {
                return Err(format!(
                "{what}.chunks[{i}]: image chunks are not supported by tinker-sim's text models"
            ))
            }
            Some(proto::chunk::Chunk::Dmel(_)) => {
                return Err(format!(
                    "{what}.chunks[{i}]: dmel chunks are not supported by tinker-sim's text models"
                ))
            }
            None => return Err(format!("{what}.chunks[{i}] is empty")),
        }
    }
    Ok(out)
}

fn num(v: &Value, what: &str) -> Result<f64, FieldError> {
    match v {
        Value::Number(n) => n
            .as_f64()
            .ok_or_else(|| FieldError::new(format!("{what}: not a number"))),
        // Non-finite values arrive as strings from some encoders.
        Value::String(s)
            if matches!(
                s.as_str(),
                "NaN" | "nan" | "Infinity" | "inf" | "-Infinity" | "-inf"
            ) =>
        {
            Ok(s.trim_start_matches('-')
                .parse::<f64>()
                .map(|x| if s.starts_with('-') { -x } else { x })
                .unwrap_or(f64::NAN))
        }
        _ => Err(FieldError::new(format!(
            "{what} must be a number, got {}",
            describe(v)
        ))),
    }
}

/// A JSON `TensorData` (`{data, dtype, shape?, sparse_crow_indices?, sparse_col_indices?}`).
pub fn tensor_json(v: &Value, what: &str, pad: f64) -> Result<DecodedTensor, FieldError> {
    let o = Obj {
        map: v
            .as_object()
            .ok_or_else(|| FieldError::new(format!("{what} must be a TensorData object")))?,
        prefix: what.to_string(),
    };
    let dtype = match o.str("dtype")? {
        "float32" => proto::DType::Float32,
        "int64" => proto::DType::Int64,
        d => {
            return Err(FieldError::new(format!(
                "{what}.dtype must be float32 or int64, got {d:?}"
            )))
        }
    };
    let data: Vec<f64> = o
        .array("data")?
        .iter()
        .enumerate()
        .map(|(i, x)| num(x, &format!("{what}.data[{i}]")))
        .collect::<Result<_, _>>()?;
    let shape: Option<Vec<usize>> = match o.get("shape") {
        None => None,
        Some(s) => Some(
            s.as_array()
                .ok_or_else(|| FieldError::new(format!("{what}.shape must be an array")))?
                .iter()
                .map(|d| {
                    d.as_u64().map(|d| d as usize).ok_or_else(|| {
                        FieldError::new(format!("{what}.shape has a bad dimension {}", describe(d)))
                    })
                })
                .collect::<Result<_, _>>()?,
        ),
    };
    if let Some(crow) = o.get("sparse_crow_indices") {
        let ints = |v: &Value, f: &str| -> Result<Vec<i64>, FieldError> {
            v.as_array()
                .ok_or_else(|| FieldError::new(format!("{what}.{f} must be an array")))?
                .iter()
                .map(|x| {
                    x.as_i64()
                        .ok_or_else(|| FieldError::new(format!("{what}.{f} must hold ints")))
                })
                .collect()
        };
        let crow = ints(crow, "sparse_crow_indices")?;
        let col = ints(
            o.get("sparse_col_indices").unwrap_or(&Value::Null),
            "sparse_col_indices",
        )?;
        let shape = shape
            .ok_or_else(|| FieldError::new(format!("{what}: a sparse tensor needs a shape")))?;
        let values =
            proto::densify_csr(&shape, &data, &crow, &col, pad, what).map_err(FieldError)?;
        return Ok(DecodedTensor {
            dtype,
            shape,
            values,
            csr: Some((crow, col)),
        });
    }
    let shape = shape.unwrap_or_else(|| vec![data.len()]);
    let n: usize = shape.iter().product();
    if n != data.len() {
        return Err(FieldError::new(format!(
            "{what}: shape {shape:?} holds {n} elements but data has {}",
            data.len()
        )));
    }
    Ok(DecodedTensor {
        dtype,
        shape,
        values: data,
        csr: None,
    })
}

/// Validate and assemble one training datum.
pub fn build_datum(
    i: usize,
    tokens: Vec<u32>,
    inputs: BTreeMap<String, DecodedTensor>,
    loss_fn: &str,
    custom_inputs: Option<&[String]>,
    spec: &BaseSpec,
) -> Result<DatumIn, String> {
    let n = tokens.len();
    let what = format!("datum {i}");
    if n == 0 {
        return Err(format!("{what}: model_input is empty"));
    }
    if n > spec.max_context {
        return Err(format!(
            "{what}: {n} tokens exceed {}'s context window of {} tokens",
            spec.name, spec.max_context
        ));
    }
    if let Some(t) = tokens.iter().find(|&&t| t as usize >= spec.vocab) {
        return Err(format!(
            "{what}: model_input token {t} is outside the vocabulary (size {})",
            spec.vocab
        ));
    }
    let (allowed, required): (Vec<String>, Vec<String>) = match custom_inputs {
        Some(names) => {
            let mut a: Vec<String> = vec!["target_tokens".into(), "weights".into()];
            a.extend(names.iter().cloned());
            (a, vec!["target_tokens".into()])
        }
        None => {
            let (a, r) = input_keys(loss_fn);
            (
                a.iter().map(|s| s.to_string()).collect(),
                r.iter().map(|s| s.to_string()).collect(),
            )
        }
    };
    for k in inputs.keys() {
        if !allowed.contains(k) {
            return Err(format!(
                "{what}: loss_fn_inputs[{k:?}] is not an input of loss_fn {loss_fn:?} (accepted: {})",
                allowed.join(", ")
            ));
        }
    }
    for k in &required {
        if !inputs.contains_key(k) {
            return Err(format!(
                "{what}: loss_fn {loss_fn:?} requires loss_fn_inputs[{k:?}]"
            ));
        }
    }
    let tt = &inputs["target_tokens"];
    let (two_d, k) = match tt.shape.as_slice() {
        [m] if *m == n => (false, 1),
        [m, k] if *m == n && *k >= 1 => (true, *k),
        s => {
            return Err(format!(
                "{what}: target_tokens has shape {s:?} but model_input has {n} tokens (expected [{n}] or [{n}, K])"
            ))
        }
    };
    let mut targets = Vec::with_capacity(n * k);
    for (j, &t) in tt.values.iter().enumerate() {
        if !t.is_finite() || t.fract() != 0.0 || t < 0.0 || t as usize >= spec.vocab {
            return Err(format!(
                "{what}: target_tokens[{j}] = {t} is not a token id of {} (vocabulary size {})",
                spec.name, spec.vocab
            ));
        }
        targets.push(t as u32);
    }
    let mut dense = BTreeMap::new();
    let mut shapes = BTreeMap::new();
    for (name, t) in &inputs {
        if name == "target_tokens" {
            continue;
        }
        shapes.insert(name.clone(), t.shape.clone());
        if let Some(j) = t.values.iter().position(|x| !x.is_finite()) {
            return Err(format!(
                "NonFiniteInTensor: {what}: loss_fn_inputs[{name:?}][{j}] is {} (tensors must be finite)",
                t.values[j]
            ));
        }
        let vals = if t.shape.as_slice() == [n, k] || (k == 1 && t.shape.as_slice() == [n]) {
            t.values.clone()
        } else if t.shape.as_slice() == [n] {
            t.values
                .iter()
                .flat_map(|x| std::iter::repeat_n(*x, k))
                .collect()
        } else if custom_inputs.is_some() {
            // Custom losses take inputs of any rank; they are checked by the loss.
            t.values.clone()
        } else {
            return Err(format!(
                "{what}: loss_fn_inputs[{name:?}] has shape {:?}, expected the shape of target_tokens {:?}",
                t.shape, tt.shape
            ));
        };
        dense.insert(name.clone(), vals);
    }
    Ok(DatumIn {
        input: tokens,
        targets,
        k,
        two_d,
        inputs: dense,
        input_shapes: shapes,
    })
}

/// `SamplingParams` from JSON.
pub fn sampling_params(
    o: &Obj<'_>,
    spec: &BaseSpec,
    prompt_len: usize,
) -> Result<Params, FieldError> {
    let temperature = o.opt_f64("temperature")?.unwrap_or(1.0);
    if !temperature.is_finite() || temperature < 0.0 {
        return Err(FieldError::new(format!(
            "field `sampling_params.temperature` must be >= 0, got {temperature}"
        )));
    }
    let top_k = o.opt_i64("top_k")?.unwrap_or(-1);
    let top_p = o.opt_f64("top_p")?.unwrap_or(1.0);
    if !(top_p > 0.0 && top_p <= 1.0) {
        return Err(FieldError::new(format!(
            "field `sampling_params.top_p` must be in (0, 1], got {top_p}"
        )));
    }
    let remaining = spec.max_context.saturating_sub(prompt_len);
    let max_tokens = match o.opt_i64("max_tokens")? {
        Some(m) if m < 0 => {
            return Err(FieldError::new(format!(
                "field `sampling_params.max_tokens` must be >= 0, got {m}"
            )))
        }
        Some(m) => m as usize,
        None => remaining.min(512),
    };
    let seed = match o.get("seed") {
        None => None,
        Some(v) => Some(
            v.as_u64()
                .or_else(|| v.as_i64().map(|x| x as u64))
                .ok_or_else(|| {
                    FieldError::new(format!(
                        "field `sampling_params.seed` must be an integer, got {}",
                        describe(v)
                    ))
                })?,
        ),
    };
    let stop = match o.get("stop") {
        None => Stop::Default,
        Some(Value::String(s)) => Stop::Strings(vec![s.clone()]),
        Some(Value::Array(a)) if a.is_empty() => Stop::Tokens(vec![]),
        Some(Value::Array(a)) if a.iter().all(|x| x.is_string()) => {
            Stop::Strings(a.iter().map(|x| x.as_str().unwrap_or_default().to_string()).collect())
        }
        Some(Value::Array(a)) => Stop::Tokens(
            a.iter()
                .enumerate()
                .map(|(i, x)| {
                    x.as_u64().filter(|t| (*t as usize) < spec.vocab).map(|t| t as u32).ok_or_else(|| {
                        FieldError::new(format!(
                            "field `sampling_params.stop[{i}]` must be a token id below {} (or all entries strings), got {}",
                            spec.vocab,
                            describe(x)
                        ))
                    })
                })
                .collect::<Result<_, _>>()?,
        ),
        Some(v) => {
            return Err(FieldError::new(format!(
                "field `sampling_params.stop` must be a string or a list of strings or token ids, got {}",
                describe(v)
            )))
        }
    };
    Ok(Params {
        max_tokens,
        temperature,
        top_k,
        top_p,
        seed,
        stop,
    })
}

/// `target_prompt_logprobs` (int64 `[len(prompt) − 1, K]`, dense with `-1` holes or CSR).
pub fn target_spec(v: &Value, prompt_len: usize, vocab: usize) -> Result<TargetSpec, FieldError> {
    let t = tensor_json(v, "target_prompt_logprobs", -1.0)?;
    if t.dtype != proto::DType::Int64 {
        return Err(FieldError::new(
            "target_prompt_logprobs must be an int64 tensor of token ids",
        ));
    }
    let (rows, k) = match t.shape.as_slice() {
        [r, k] => (*r, *k),
        s => {
            return Err(FieldError::new(format!(
                "target_prompt_logprobs must be 2-D [len(prompt) - 1, K], got shape {s:?}"
            )))
        }
    };
    if rows + 1 != prompt_len {
        return Err(FieldError::new(format!(
            "target_prompt_logprobs has {rows} rows but the prompt has {prompt_len} tokens (expected {})",
            prompt_len.saturating_sub(1)
        )));
    }
    let mut cells = Vec::with_capacity(rows * k);
    for (j, &x) in t.values.iter().enumerate() {
        if x == -1.0 {
            cells.push(None);
        } else if x >= 0.0 && (x as usize) < vocab && x.fract() == 0.0 {
            cells.push(Some(x as u32));
        } else {
            return Err(FieldError::new(format!(
                "target_prompt_logprobs cell {j} = {x} is not a token id or -1"
            )));
        }
    }
    if cells.iter().all(|c| c.is_none()) {
        return Err(FieldError::new("target_prompt_logprobs names no token id"));
    }
    Ok(TargetSpec {
        rows,
        k,
        cells,
        csr: t.csr,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::find_spec;
    use serde_json::json;

    #[test]
    fn model_input_errors_name_fields() {
        let v = json!({"chunks": [{"type": "encoded_text", "tokens": [1, 2]}, {"type": "image", "data": "", "format": "png"}]});
        assert!(model_input_json(&v, "prompt")
            .unwrap_err()
            .0
            .contains("prompt.chunks[1]"));
        let v = json!({"chunks": [{"type": "encoded_text", "tokens": [1, -2]}]});
        assert!(model_input_json(&v, "prompt")
            .unwrap_err()
            .0
            .contains("tokens[1]"));
        assert_eq!(
            model_input_json(&json!({"chunks": [{"tokens": [3]}]}), "p").unwrap(),
            vec![3]
        );
    }

    #[test]
    fn datum_validation() {
        let spec = find_spec("Qwen/Qwen3-8B").unwrap();
        let t = |v: Vec<f64>, shape: Vec<usize>, dtype| DecodedTensor {
            dtype,
            shape,
            values: v,
            csr: None,
        };
        let mut inputs = BTreeMap::new();
        inputs.insert(
            "target_tokens".to_string(),
            t(vec![5.0, 6.0], vec![2], proto::DType::Int64),
        );
        inputs.insert(
            "weights".to_string(),
            t(vec![1.0, f64::NAN], vec![2], proto::DType::Float32),
        );
        let e =
            build_datum(0, vec![1, 2], inputs.clone(), "cross_entropy", None, spec).unwrap_err();
        assert!(e.contains("NonFiniteInTensor"), "{e}");
        inputs.insert(
            "weights".to_string(),
            t(vec![1.0, 0.5], vec![2], proto::DType::Float32),
        );
        let d = build_datum(0, vec![1, 2], inputs.clone(), "cross_entropy", None, spec).unwrap();
        assert_eq!((d.k, d.targets.clone()), (1, vec![5, 6]));
        let e = build_datum(
            0,
            vec![1, 2, 3],
            inputs.clone(),
            "cross_entropy",
            None,
            spec,
        )
        .unwrap_err();
        assert!(e.contains("shape"), "{e}");
        let e = build_datum(0, vec![1, 2], inputs.clone(), "ppo", None, spec).unwrap_err();
        assert!(e.contains("requires"), "{e}");
        inputs.insert(
            "bogus".to_string(),
            t(vec![1.0, 0.5], vec![2], proto::DType::Float32),
        );
        let e = build_datum(0, vec![1, 2], inputs, "cross_entropy", None, spec).unwrap_err();
        assert!(e.contains("bogus"), "{e}");
    }

    #[test]
    fn sampling_params_and_stop_forms() {
        let spec = find_spec("Qwen/Qwen3-8B").unwrap();
        let p = |v: Value| sampling_params(&Obj::root(&v).unwrap(), spec, 3);
        assert_eq!(
            p(json!({"max_tokens": 4, "stop": ["\n"]})).unwrap().stop,
            Stop::Strings(vec!["\n".into()])
        );
        assert_eq!(
            p(json!({"max_tokens": 4, "stop": [7, 8]})).unwrap().stop,
            Stop::Tokens(vec![7, 8])
        );
        assert_eq!(
            p(json!({"max_tokens": 4, "stop": "x"})).unwrap().stop,
            Stop::Strings(vec!["x".into()])
        );
        assert_eq!(p(json!({"max_tokens": 4})).unwrap().stop, Stop::Default);
        assert!(p(json!({"temperature": -1}))
            .unwrap_err()
            .0
            .contains("temperature"));
        assert!(p(json!({"top_p": 0})).unwrap_err().0.contains("top_p"));
        assert!(p(json!({"stop": [1, "x"]})).is_err());
    }

    #[test]
    fn target_spec_csr_and_dense() {
        let dense = json!({"data": [-1, 5, 7, -1], "dtype": "int64", "shape": [2, 2]});
        let t = target_spec(&dense, 3, 100).unwrap();
        assert_eq!(t.cells, vec![None, Some(5), Some(7), None]);
        let csr = json!({"data": [5], "dtype": "int64", "shape": [2, 2], "sparse_crow_indices": [0, 1, 1], "sparse_col_indices": [1]});
        let t = target_spec(&csr, 3, 100).unwrap();
        assert_eq!(t.cells, vec![None, Some(5), None, None]);
        assert!(t.csr.is_some());
        assert!(target_spec(&dense, 4, 100).unwrap_err().0.contains("rows"));
    }
}
