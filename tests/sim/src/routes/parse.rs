//! Decoding request payloads (JSON and protobuf) into model inputs, with errors that
//! name the offending field and value.

use crate::model::loss::{input_keys, DatumIn};
use crate::model::sample::{Params, Stop, TargetSpec};
use crate::model::BaseSpec;
use crate::proto::{self, DecodedTensor};
use crate::util::{describe, hash_words, FieldError, Obj};
use serde_json::Value;
use std::collections::BTreeMap;

/// A model input as sent: runs of token ids and images, in order.
#[derive(Debug, Default)]
pub struct Input {
    pieces: Vec<Piece>,
}

#[derive(Debug)]
enum Piece {
    Tokens(Vec<u32>),
    /// An image (or a pointer to one) standing for `tokens` positions.
    Image {
        hash: u64,
        tokens: usize,
    },
}

/// The first bytes of an encoded image of each accepted format.
fn image_magic(format: &str) -> Option<&'static [u8]> {
    match format {
        "png" => Some(b"\x89PNG\r\n\x1a\n"),
        "jpeg" => Some(b"\xff\xd8\xff"),
        _ => None,
    }
}

/// Check an image chunk and count its positions. The real service computes the count from
/// the image with the model's image processor and fails requests whose `expected_tokens`
/// disagree; tinker-sim has no image processors, so it takes `expected_tokens` as the
/// count and requires it.
fn image_piece(
    what: &str,
    format: &str,
    data: Option<&[u8]>,
    location: Option<&str>,
    expected: Option<i64>,
) -> Result<Piece, String> {
    let magic = image_magic(format)
        .ok_or_else(|| format!("{what}.format must be \"png\" or \"jpeg\", got {format:?}"))?;
    let hash = match (data, location) {
        (Some(d), _) => {
            if !d.starts_with(magic) {
                return Err(format!(
                    "{what}: the image data ({} bytes) could not be decoded as {format}",
                    d.len()
                ));
            }
            crate::util::hash_bytes(d)
        }
        (None, Some(l)) if !l.is_empty() => crate::util::hash_str(l),
        _ => return Err(format!("{what}: the image has no data")),
    };
    match expected {
        Some(n) if n >= 1 && n <= u32::MAX as i64 => Ok(Piece::Image {
            hash,
            tokens: n as usize,
        }),
        Some(n) => Err(format!("{what}.expected_tokens must be >= 1, got {n}")),
        None => Err(format!(
            "{what}.expected_tokens is required: tinker-sim cannot count an image's tokens (it has no image processor)"
        )),
    }
}

impl Input {
    pub fn has_images(&self) -> bool {
        self.pieces.iter().any(|p| matches!(p, Piece::Image { .. }))
    }

    /// Number of positions.
    pub fn positions(&self) -> usize {
        self.pieces
            .iter()
            .map(|p| match p {
                Piece::Tokens(t) => t.len(),
                Piece::Image { tokens, .. } => *tokens,
            })
            .sum()
    }

    /// Why `spec` cannot take this input (images on a text-only model), if it cannot.
    pub fn refused_by(&self, spec: &BaseSpec) -> Option<String> {
        (self.has_images() && !spec.vl).then(|| {
            format!(
                "{} does not accept image input: image chunks need a vision-language model",
                spec.name
            )
        })
    }

    /// The input as the model's positions: an image is `expected_tokens` positions whose
    /// ids are a hash of the image (so images differ to the model, as their contents do).
    pub fn tokens(&self, spec: &BaseSpec) -> Result<Vec<u32>, String> {
        if let Some(e) = self.refused_by(spec) {
            return Err(e);
        }
        let mut out = Vec::with_capacity(self.positions());
        for p in &self.pieces {
            match p {
                Piece::Tokens(t) => out.extend_from_slice(t),
                Piece::Image { hash, tokens } => out.extend(
                    (0..*tokens as u64)
                        .map(|j| (hash_words(&[*hash, j]) % spec.real_vocab as u64) as u32),
                ),
            }
        }
        Ok(out)
    }

    fn push_tokens(&mut self, t: u32) {
        match self.pieces.last_mut() {
            Some(Piece::Tokens(v)) => v.push(t),
            _ => self.pieces.push(Piece::Tokens(vec![t])),
        }
    }
}

/// A JSON `ModelInput` (`{"chunks": [...]}`): `encoded_text`, `image` (base64 `data`) and
/// `image_asset_pointer` chunks.
pub fn model_input_json(v: &Value, field: &str) -> Result<Input, FieldError> {
    let chunks = v.get("chunks").and_then(|c| c.as_array()).ok_or_else(|| {
        FieldError::new(format!("field `{field}.chunks` must be an array of chunks"))
    })?;
    let mut out = Input::default();
    for (i, c) in chunks.iter().enumerate() {
        let ty = c
            .get("type")
            .and_then(|t| t.as_str())
            .unwrap_or("encoded_text");
        let what = format!("field `{field}.chunks[{i}]`");
        match ty {
            "encoded_text" => {
                let toks = c.get("tokens").and_then(|t| t.as_array()).ok_or_else(|| {
                    FieldError::new(format!(
                        "field `{field}.chunks[{i}].tokens` must be an array of ints"
                    ))
                })?;
                for (j, t) in toks.iter().enumerate() {
                    let id = t.as_i64().filter(|x| (0..=u32::MAX as i64).contains(x)).ok_or_else(|| {
                        FieldError::new(format!(
                            "field `{field}.chunks[{i}].tokens[{j}]` must be a non-negative token id, got {}",
                            describe(t)
                        ))
                    })?;
                    out.push_tokens(id as u32);
                }
            }
            "image" | "image_asset_pointer" => {
                let format = c.get("format").and_then(|f| f.as_str()).unwrap_or("");
                let expected = match c.get("expected_tokens") {
                    None | Some(Value::Null) => None,
                    Some(n) => Some(n.as_i64().ok_or_else(|| {
                        FieldError::new(format!(
                            "{what}.expected_tokens must be an int, got {}",
                            describe(n)
                        ))
                    })?),
                };
                let piece = if ty == "image" {
                    use base64::Engine;
                    let data = c.get("data").and_then(|d| d.as_str()).ok_or_else(|| {
                        FieldError::new(format!("{what}.data must be a base64 string"))
                    })?;
                    let bytes = base64::engine::general_purpose::STANDARD
                        .decode(data)
                        .map_err(|e| FieldError::new(format!("{what}.data is not base64: {e}")))?;
                    image_piece(&what, format, Some(&bytes), None, expected)
                } else {
                    let loc = c.get("location").and_then(|l| l.as_str()).ok_or_else(|| {
                        FieldError::new(format!("{what}.location must be a string"))
                    })?;
                    image_piece(&what, format, None, Some(loc), expected)
                };
                out.pieces.push(piece.map_err(FieldError)?);
            }
            other => {
                return Err(FieldError::new(format!(
                    "{what}: {other} chunks are not supported by tinker-sim"
                )))
            }
        }
    }
    Ok(out)
}

/// A protobuf datum's model input (`encoded_text` and `image` chunks).
pub fn model_input_proto(chunks: &[proto::Chunk], what: &str) -> Result<Input, String> {
    let mut out = Input::default();
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
                    out.push_tokens(x as u32);
                }
            }
            Some(proto::chunk::Chunk::Image(im)) => {
                out.pieces.push(image_piece(
                    &format!("{what}.chunks[{i}]"),
                    &im.format,
                    Some(&im.data),
                    None,
                    im.expected_tokens.map(i64::from),
                )?);
            }
            Some(proto::chunk::Chunk::Dmel(_)) => {
                return Err(format!(
                    "{what}.chunks[{i}]: dmel (audio) chunks are not supported by tinker-sim"
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
        let q = find_spec("Qwen/Qwen3-8B").unwrap();
        assert_eq!(
            model_input_json(&json!({"chunks": [{"tokens": [3]}]}), "p")
                .unwrap()
                .tokens(q)
                .unwrap(),
            vec![3]
        );
    }

    #[test]
    fn image_chunks() {
        use base64::Engine;
        let b64 = |b: &[u8]| base64::engine::general_purpose::STANDARD.encode(b);
        let png = b"\x89PNG\r\n\x1a\n rest of a png";
        let jpeg = b"\xff\xd8\xff\xe0 rest of a jpeg";
        let vl = find_spec("Qwen/Qwen3-VL-30B-A3B-Instruct").unwrap();
        let text = find_spec("Qwen/Qwen3-8B").unwrap();
        assert!(vl.vl && !text.vl);
        let input = |img: Value| json!({"chunks": [{"type": "encoded_text", "tokens": [1, 2]}, img, {"type": "encoded_text", "tokens": [3]}]});
        let ok = model_input_json(
            &input(
                json!({"type": "image", "data": b64(png), "format": "png", "expected_tokens": 4}),
            ),
            "p",
        )
        .unwrap();
        assert_eq!(ok.positions(), 7);
        let t = ok.tokens(vl).unwrap();
        assert_eq!((t.len(), &t[..2], t[6]), (7, &[1u32, 2][..], 3));
        assert!(t[2..6].iter().all(|&x| (x as usize) < vl.real_vocab));
        // The image's positions depend on its bytes.
        let other = model_input_json(
            &input(
                json!({"type": "image", "data": b64(jpeg), "format": "jpeg", "expected_tokens": 4}),
            ),
            "p",
        )
        .unwrap();
        assert_ne!(other.tokens(vl).unwrap()[2..6], t[2..6]);
        // A text-only model refuses images, naming itself.
        let e = ok.tokens(text).unwrap_err();
        assert!(e.contains("Qwen/Qwen3-8B") && e.contains("image"), "{e}");
        assert_eq!(ok.refused_by(text), Some(e));
        assert_eq!(ok.refused_by(vl), None);
        // Pointers count the same way.
        let ptr = model_input_json(&input(json!({"type": "image_asset_pointer", "location": "s3://b/k.png", "format": "png", "expected_tokens": 2})), "p").unwrap();
        assert_eq!(ptr.tokens(vl).unwrap().len(), 5);
        // Errors: format, decodability, expected_tokens.
        for (img, needle) in [
            (
                json!({"type": "image", "data": b64(png), "format": "gif", "expected_tokens": 4}),
                "format",
            ),
            (
                json!({"type": "image", "data": b64(jpeg), "format": "png", "expected_tokens": 4}),
                "could not be decoded as png",
            ),
            (
                json!({"type": "image", "data": "%%%", "format": "png", "expected_tokens": 4}),
                "base64",
            ),
            (
                json!({"type": "image", "data": b64(png), "format": "png"}),
                "expected_tokens is required",
            ),
            (
                json!({"type": "image", "data": b64(png), "format": "png", "expected_tokens": 0}),
                "expected_tokens must be >= 1",
            ),
            (json!({"type": "dmel", "dmel": ""}), "not supported"),
        ] {
            let e = model_input_json(&input(img), "prompt").unwrap_err().0;
            assert!(e.contains(needle) && e.contains("prompt.chunks[1]"), "{e}");
        }
        // Protobuf chunks.
        let chunk = |data: &[u8], n: Option<i32>| proto::Chunk {
            chunk: Some(proto::chunk::Chunk::Image(proto::ImageChunk {
                data: data.to_vec(),
                format: "png".into(),
                expected_tokens: n,
                override_dimensions: None,
            })),
        };
        let p = model_input_proto(&[chunk(png, Some(3))], "model_input").unwrap();
        assert_eq!(p.tokens(vl).unwrap().len(), 3);
        assert!(p.tokens(text).is_err());
        assert!(model_input_proto(&[chunk(png, None)], "model_input")
            .unwrap_err()
            .contains("expected_tokens"));
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
