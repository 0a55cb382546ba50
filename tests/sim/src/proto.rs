//! The `tinker_public` protobuf messages the SDK exchanges (schema decoded from the
//! 0.38.0 descriptor), hand-written with prost derives, plus little-endian array codecs
//! and a JSON rendering of requests for the request log.

#![allow(clippy::derive_partial_eq_without_eq)]

use serde_json::{json, Map, Value};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
#[repr(i32)]
pub enum StopReason {
    Stop = 0,
    Length = 1,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
#[repr(i32)]
pub enum DType {
    Unspecified = 0,
    Float32 = 1,
    Int64 = 2,
    Int32 = 3,
    Bfloat16 = 4,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct SampleResponse {
    #[prost(message, repeated, tag = "1")]
    pub sequences: Vec<SampledSequence>,
    #[prost(bytes = "vec", optional, tag = "2")]
    pub prompt_logprobs: Option<Vec<u8>>,
    #[prost(message, optional, tag = "3")]
    pub topk_prompt_logprobs: Option<TopkLogprobs>,
    #[prost(int32, tag = "4")]
    pub prompt_cache_hit_tokens: i32,
    #[prost(message, optional, tag = "5")]
    pub target_prompt_logprobs: Option<Tensor>,
    #[prost(message, optional, tag = "6")]
    pub prompt_alt_tokens: Option<PromptAltTokens>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct PromptAltTokens {
    #[prost(message, optional, tag = "1")]
    pub tokens: Option<Tensor>,
    #[prost(message, optional, tag = "2")]
    pub logprobs: Option<Tensor>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct SampledSequence {
    #[prost(enumeration = "StopReason", tag = "1")]
    pub stop_reason: i32,
    #[prost(bytes = "vec", tag = "2")]
    pub tokens: Vec<u8>,
    #[prost(bytes = "vec", optional, tag = "3")]
    pub logprobs: Option<Vec<u8>>,
    #[prost(message, optional, tag = "4")]
    pub topk_sampled_logprobs: Option<TopkLogprobs>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct TopkLogprobs {
    #[prost(bytes = "vec", tag = "1")]
    pub token_ids: Vec<u8>,
    #[prost(bytes = "vec", tag = "2")]
    pub logprobs: Vec<u8>,
    #[prost(uint32, tag = "3")]
    pub k: u32,
    #[prost(uint32, tag = "4")]
    pub length: u32,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct SparseCsr {
    #[prost(bytes = "vec", tag = "1")]
    pub values: Vec<u8>,
    #[prost(bytes = "vec", tag = "2")]
    pub crow_indices: Vec<u8>,
    #[prost(bytes = "vec", tag = "3")]
    pub col_indices: Vec<u8>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Tensor {
    #[prost(oneof = "tensor::Encoding", tags = "1, 2")]
    pub encoding: Option<tensor::Encoding>,
    #[prost(enumeration = "DType", tag = "3")]
    pub dtype: i32,
    #[prost(int64, repeated, tag = "4")]
    pub shape: Vec<i64>,
}

pub mod tensor {
    #[derive(Clone, PartialEq, prost::Oneof)]
    pub enum Encoding {
        #[prost(bytes, tag = "1")]
        Dense(Vec<u8>),
        #[prost(message, tag = "2")]
        SparseCsr(super::SparseCsr),
    }
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct BatchedTensor {
    #[prost(bytes = "vec", tag = "1")]
    pub data: Vec<u8>,
    #[prost(bytes = "vec", tag = "2")]
    pub offsets: Vec<u8>,
    #[prost(enumeration = "DType", tag = "3")]
    pub dtype: i32,
    #[prost(int64, repeated, tag = "4")]
    pub trailing_shape: Vec<i64>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct ArrayRecord {
    #[prost(string, tag = "1")]
    pub type_tag: String,
    #[prost(btree_map = "string, message", tag = "2")]
    pub fields: std::collections::BTreeMap<String, BatchedTensor>,
    #[prost(int64, tag = "3")]
    pub num_datums: i64,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct ForwardBackwardOutput {
    #[prost(string, tag = "1")]
    pub loss_fn_output_type: String,
    #[prost(message, repeated, tag = "2")]
    pub loss_fn_outputs: Vec<ArrayRecord>,
    #[prost(btree_map = "string, double", tag = "3")]
    pub metrics: std::collections::BTreeMap<String, f64>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct ForwardBackwardRequest {
    #[prost(string, tag = "1")]
    pub model_id: String,
    #[prost(int32, tag = "2")]
    pub seq_id: i32,
    #[prost(message, repeated, tag = "3")]
    pub data: Vec<Datum>,
    #[prost(string, tag = "4")]
    pub loss_fn: String,
    #[prost(btree_map = "string, double", tag = "5")]
    pub loss_fn_config: std::collections::BTreeMap<String, f64>,
    #[prost(bool, tag = "6")]
    pub forward_only: bool,
    #[prost(btree_map = "string, message", tag = "7")]
    pub loss_fn_config_v2: std::collections::BTreeMap<String, LossConfigValue>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct LossConfigValue {
    #[prost(oneof = "loss_config_value::Value", tags = "1, 2")]
    pub value: Option<loss_config_value::Value>,
}

pub mod loss_config_value {
    #[derive(Clone, PartialEq, prost::Oneof)]
    pub enum Value {
        #[prost(double, tag = "1")]
        Number(f64),
        #[prost(string, tag = "2")]
        Text(String),
    }
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Datum {
    #[prost(message, repeated, tag = "1")]
    pub model_input: Vec<Chunk>,
    #[prost(btree_map = "string, message", tag = "2")]
    pub loss_fn_inputs: std::collections::BTreeMap<String, Tensor>,
    #[prost(message, repeated, tag = "3")]
    pub model_input_spans: Vec<ProvenanceSpan>,
    #[prost(message, repeated, tag = "4")]
    pub loss_fn_input_spans: Vec<ProvenanceSpan>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct ProvenanceSpan {
    #[prost(oneof = "provenance_span::Span", tags = "1, 2")]
    pub span: Option<provenance_span::Span>,
}

pub mod provenance_span {
    #[derive(Clone, PartialEq, prost::Oneof)]
    pub enum Span {
        #[prost(message, tag = "1")]
        PromptTokens(super::SpanRange),
        #[prost(message, tag = "2")]
        SampledTokens(super::SpanRange),
    }
}

/// `PromptProvenanceSpan` and `SampledProvenanceSpan` share one layout.
#[derive(Clone, PartialEq, prost::Message)]
pub struct SpanRange {
    #[prost(string, tag = "1")]
    pub sequence_id: String,
    #[prost(int64, tag = "2")]
    pub offset: i64,
    #[prost(int64, tag = "3")]
    pub length: i64,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Chunk {
    #[prost(oneof = "chunk::Chunk", tags = "1, 2, 3")]
    pub chunk: Option<chunk::Chunk>,
}

pub mod chunk {
    #[derive(Clone, PartialEq, prost::Oneof)]
    pub enum Chunk {
        #[prost(message, tag = "1")]
        EncodedText(super::EncodedTextChunk),
        #[prost(message, tag = "2")]
        Image(super::ImageChunk),
        #[prost(message, tag = "3")]
        Dmel(super::DmelChunk),
    }
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct EncodedTextChunk {
    #[prost(bytes = "vec", tag = "1")]
    pub tokens: Vec<u8>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct ImageChunk {
    #[prost(bytes = "vec", tag = "1")]
    pub data: Vec<u8>,
    #[prost(string, tag = "2")]
    pub format: String,
    #[prost(int32, optional, tag = "3")]
    pub expected_tokens: Option<i32>,
    #[prost(message, optional, tag = "4")]
    pub override_dimensions: Option<ImageDimensions>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct ImageDimensions {
    #[prost(uint32, tag = "1")]
    pub width: u32,
    #[prost(uint32, tag = "2")]
    pub height: u32,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct DmelChunk {
    #[prost(bytes = "vec", tag = "1")]
    pub dmel: Vec<u8>,
}

// ---------------------------------------------------------------------------
// Little-endian array codecs
// ---------------------------------------------------------------------------

pub fn i32s_to_bytes(v: &[i32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}
pub fn i64s_to_bytes(v: &[i64]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}
pub fn f32s_to_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn chunks<'a, const N: usize>(
    b: &'a [u8],
    what: &str,
) -> Result<impl Iterator<Item = [u8; N]> + 'a, String> {
    if b.len() % N != 0 {
        return Err(format!(
            "{what}: byte length {} is not a multiple of {N}",
            b.len()
        ));
    }
    Ok(b.chunks_exact(N).map(|c| {
        let mut a = [0u8; N];
        a.copy_from_slice(c);
        a
    }))
}

pub fn bytes_to_i32s(b: &[u8], what: &str) -> Result<Vec<i32>, String> {
    Ok(chunks::<4>(b, what)?.map(i32::from_le_bytes).collect())
}
pub fn bytes_to_i64s(b: &[u8], what: &str) -> Result<Vec<i64>, String> {
    Ok(chunks::<8>(b, what)?.map(i64::from_le_bytes).collect())
}
pub fn bytes_to_f32s(b: &[u8], what: &str) -> Result<Vec<f32>, String> {
    Ok(chunks::<4>(b, what)?.map(f32::from_le_bytes).collect())
}

/// A tensor decoded to f64 values (ints widened), with its dense shape and, for CSR
/// input, the sparsity structure.
#[derive(Clone, Debug, PartialEq)]
pub struct DecodedTensor {
    pub dtype: DType,
    pub shape: Vec<usize>,
    /// Dense row-major values (CSR tensors are densified with `pad`).
    pub values: Vec<f64>,
    /// `Some((crow, col))` when the wire form was CSR.
    pub csr: Option<(Vec<i64>, Vec<i64>)>,
}

fn decode_elems(dtype: DType, b: &[u8], what: &str) -> Result<Vec<f64>, String> {
    Ok(match dtype {
        DType::Float32 => bytes_to_f32s(b, what)?
            .into_iter()
            .map(|x| x as f64)
            .collect(),
        DType::Int64 => bytes_to_i64s(b, what)?
            .into_iter()
            .map(|x| x as f64)
            .collect(),
        DType::Int32 => bytes_to_i32s(b, what)?
            .into_iter()
            .map(|x| x as f64)
            .collect(),
        DType::Bfloat16 => {
            if b.len() % 2 != 0 {
                return Err(format!("{what}: bfloat16 byte length {} is odd", b.len()));
            }
            b.chunks_exact(2)
                .map(|c| f32::from_bits((u16::from_le_bytes([c[0], c[1]]) as u32) << 16) as f64)
                .collect()
        }
        DType::Unspecified => return Err(format!("{what}: dtype is unspecified")),
    })
}

/// Densify a CSR matrix given as values + int64 indices.
pub fn densify_csr(
    shape: &[usize],
    values: &[f64],
    crow: &[i64],
    col: &[i64],
    pad: f64,
    what: &str,
) -> Result<Vec<f64>, String> {
    if shape.len() != 2 {
        return Err(format!(
            "{what}: a sparse CSR tensor must be 2-D, got shape {shape:?}"
        ));
    }
    let (rows, cols) = (shape[0], shape[1]);
    if crow.len() != rows + 1 {
        return Err(format!(
            "{what}: crow_indices has {} entries, expected {} (rows + 1)",
            crow.len(),
            rows + 1
        ));
    }
    if col.len() != values.len() {
        return Err(format!(
            "{what}: {} col_indices for {} values",
            col.len(),
            values.len()
        ));
    }
    let mut dense = vec![pad; rows * cols];
    for r in 0..rows {
        let (a, b) = (crow[r], crow[r + 1]);
        if a < 0 || b < a || b as usize > values.len() {
            return Err(format!(
                "{what}: crow_indices are not monotone within bounds"
            ));
        }
        for k in a as usize..b as usize {
            let c = col[k];
            if c < 0 || c as usize >= cols {
                return Err(format!("{what}: column index {c} out of range 0..{cols}"));
            }
            dense[r * cols + c as usize] = values[k];
        }
    }
    Ok(dense)
}

impl Tensor {
    pub fn decode(&self, what: &str, pad: f64) -> Result<DecodedTensor, String> {
        let dtype = DType::try_from(self.dtype)
            .map_err(|_| format!("{what}: unknown dtype {}", self.dtype))?;
        let shape: Vec<usize> = self
            .shape
            .iter()
            .map(|&s| {
                if s < 0 {
                    Err(format!("{what}: negative dimension {s}"))
                } else {
                    Ok(s as usize)
                }
            })
            .collect::<Result<_, _>>()?;
        match &self.encoding {
            Some(tensor::Encoding::SparseCsr(csr)) => {
                let vals = decode_elems(dtype, &csr.values, what)?;
                let crow = bytes_to_i64s(&csr.crow_indices, what)?;
                let col = bytes_to_i64s(&csr.col_indices, what)?;
                let values = densify_csr(&shape, &vals, &crow, &col, pad, what)?;
                Ok(DecodedTensor {
                    dtype,
                    shape,
                    values,
                    csr: Some((crow, col)),
                })
            }
            Some(tensor::Encoding::Dense(b)) => {
                let values = decode_elems(dtype, b, what)?;
                let shape = if shape.is_empty() {
                    vec![values.len()]
                } else {
                    shape
                };
                let n: usize = shape.iter().product();
                if n != values.len() {
                    return Err(format!(
                        "{what}: shape {shape:?} holds {n} elements but {} were sent",
                        values.len()
                    ));
                }
                Ok(DecodedTensor {
                    dtype,
                    shape,
                    values,
                    csr: None,
                })
            }
            None => {
                let shape = if shape.is_empty() { vec![0] } else { shape };
                let n: usize = shape.iter().product();
                if n != 0 {
                    return Err(format!("{what}: tensor has no data for shape {shape:?}"));
                }
                Ok(DecodedTensor {
                    dtype,
                    shape,
                    values: vec![],
                    csr: None,
                })
            }
        }
    }

    pub fn dense_f32(shape: &[usize], values: &[f32]) -> Tensor {
        Tensor {
            encoding: Some(tensor::Encoding::Dense(f32s_to_bytes(values))),
            dtype: DType::Float32 as i32,
            shape: shape.iter().map(|&s| s as i64).collect(),
        }
    }
    pub fn dense_i64(shape: &[usize], values: &[i64]) -> Tensor {
        Tensor {
            encoding: Some(tensor::Encoding::Dense(i64s_to_bytes(values))),
            dtype: DType::Int64 as i32,
            shape: shape.iter().map(|&s| s as i64).collect(),
        }
    }
}

// ---------------------------------------------------------------------------
// JSON rendering (request log, JSON result fallback)
// ---------------------------------------------------------------------------

fn dtype_name(d: i32) -> &'static str {
    match DType::try_from(d) {
        Ok(DType::Float32) => "float32",
        Ok(DType::Int64) => "int64",
        Ok(DType::Int32) => "int32",
        Ok(DType::Bfloat16) => "bfloat16",
        _ => "unspecified",
    }
}

fn num_json(x: f64) -> Value {
    if x.is_finite() {
        json!(x)
    } else {
        json!(x.to_string())
    }
}

fn elems_json(dtype: DType, v: Vec<f64>) -> Value {
    match dtype {
        DType::Int64 | DType::Int32 => {
            Value::Array(v.into_iter().map(|x| json!(x as i64)).collect())
        }
        _ => Value::Array(v.into_iter().map(num_json).collect()),
    }
}

pub fn tensor_json(t: &Tensor) -> Value {
    let dtype = DType::try_from(t.dtype).unwrap_or(DType::Unspecified);
    let mut o = Map::new();
    o.insert("dtype".into(), json!(dtype_name(t.dtype)));
    o.insert("shape".into(), json!(t.shape));
    match &t.encoding {
        Some(tensor::Encoding::Dense(b)) => match decode_elems(dtype, b, "tensor") {
            Ok(v) => {
                o.insert("data".into(), elems_json(dtype, v));
            }
            Err(e) => {
                o.insert("error".into(), json!(e));
            }
        },
        Some(tensor::Encoding::SparseCsr(c)) => {
            o.insert(
                "data".into(),
                match decode_elems(dtype, &c.values, "values") {
                    Ok(v) => elems_json(dtype, v),
                    Err(e) => json!(e),
                },
            );
            o.insert(
                "sparse_crow_indices".into(),
                json!(bytes_to_i64s(&c.crow_indices, "crow").unwrap_or_default()),
            );
            o.insert(
                "sparse_col_indices".into(),
                json!(bytes_to_i64s(&c.col_indices, "col").unwrap_or_default()),
            );
        }
        None => {}
    }
    Value::Object(o)
}

fn span_json(s: &ProvenanceSpan) -> Value {
    match &s.span {
        Some(provenance_span::Span::PromptTokens(r)) => {
            json!({"prompt_tokens": {"sequence_id": r.sequence_id, "offset": r.offset, "length": r.length}})
        }
        Some(provenance_span::Span::SampledTokens(r)) => {
            json!({"sampled_tokens": {"sequence_id": r.sequence_id, "offset": r.offset, "length": r.length}})
        }
        None => Value::Null,
    }
}

pub fn chunk_json(c: &Chunk) -> Value {
    match &c.chunk {
        Some(chunk::Chunk::EncodedText(t)) => json!({
            "type": "encoded_text",
            "tokens": bytes_to_i32s(&t.tokens, "tokens").unwrap_or_default(),
        }),
        Some(chunk::Chunk::Image(i)) => json!({
            "type": "image",
            "format": i.format,
            "data_bytes": i.data.len(),
            "expected_tokens": i.expected_tokens,
        }),
        Some(chunk::Chunk::Dmel(d)) => json!({"type": "dmel", "dmel_bytes": d.dmel.len()}),
        None => Value::Null,
    }
}

pub fn fwdbwd_request_json(r: &ForwardBackwardRequest) -> Value {
    let data: Vec<Value> = r
        .data
        .iter()
        .map(|d| {
            let mut o = Map::new();
            o.insert(
                "model_input".into(),
                json!({"chunks": d.model_input.iter().map(chunk_json).collect::<Vec<_>>()}),
            );
            o.insert(
                "loss_fn_inputs".into(),
                Value::Object(
                    d.loss_fn_inputs
                        .iter()
                        .map(|(k, t)| (k.clone(), tensor_json(t)))
                        .collect(),
                ),
            );
            if !d.model_input_spans.is_empty() {
                o.insert(
                    "model_input_spans".into(),
                    Value::Array(d.model_input_spans.iter().map(span_json).collect()),
                );
            }
            if !d.loss_fn_input_spans.is_empty() {
                o.insert(
                    "loss_fn_input_spans".into(),
                    Value::Array(d.loss_fn_input_spans.iter().map(span_json).collect()),
                );
            }
            Value::Object(o)
        })
        .collect();
    let v2: Map<String, Value> = r
        .loss_fn_config_v2
        .iter()
        .map(|(k, v)| {
            let val = match &v.value {
                Some(loss_config_value::Value::Number(n)) => json!({"number": num_json(*n)}),
                Some(loss_config_value::Value::Text(t)) => json!({"text": t}),
                None => Value::Null,
            };
            (k.clone(), val)
        })
        .collect();
    json!({
        "model_id": r.model_id,
        "seq_id": r.seq_id,
        "loss_fn": r.loss_fn,
        "loss_fn_config": r.loss_fn_config.iter().map(|(k, v)| (k.clone(), num_json(*v))).collect::<Map<_, _>>(),
        "loss_fn_config_v2": v2,
        "forward_only": r.forward_only,
        "data": data,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use prost::Message;

    #[test]
    fn fwdbwd_round_trip_and_csr() {
        let mut req = ForwardBackwardRequest {
            model_id: "s:train:0".into(),
            seq_id: 3,
            loss_fn: "cross_entropy".into(),
            ..Default::default()
        };
        let mut inputs = std::collections::BTreeMap::new();
        inputs.insert(
            "target_tokens".to_string(),
            Tensor::dense_i64(&[2], &[5, 6]),
        );
        inputs.insert(
            "weights".to_string(),
            Tensor {
                encoding: Some(tensor::Encoding::SparseCsr(SparseCsr {
                    values: f32s_to_bytes(&[0.5]),
                    crow_indices: i64s_to_bytes(&[0, 1, 1]),
                    col_indices: i64s_to_bytes(&[1]),
                })),
                dtype: DType::Float32 as i32,
                shape: vec![2, 2],
            },
        );
        req.data.push(Datum {
            model_input: vec![Chunk {
                chunk: Some(chunk::Chunk::EncodedText(EncodedTextChunk {
                    tokens: i32s_to_bytes(&[1, 2]),
                })),
            }],
            loss_fn_inputs: inputs,
            ..Default::default()
        });
        let bytes = req.encode_to_vec();
        let back = ForwardBackwardRequest::decode(bytes.as_slice()).unwrap();
        assert_eq!(back, req);
        let w = back.data[0].loss_fn_inputs["weights"]
            .decode("weights", 0.0)
            .unwrap();
        assert_eq!(w.values, vec![0.0, 0.5, 0.0, 0.0]);
        assert!(w.csr.is_some());
        let j = fwdbwd_request_json(&back);
        assert_eq!(
            j["data"][0]["model_input"]["chunks"][0]["tokens"],
            json!([1, 2])
        );
        assert_eq!(
            j["data"][0]["loss_fn_inputs"]["target_tokens"]["data"],
            json!([5, 6])
        );
    }

    #[test]
    fn bad_tensors_are_errors_not_panics() {
        let t = Tensor {
            encoding: Some(tensor::Encoding::Dense(vec![1, 2, 3])),
            dtype: 1,
            shape: vec![],
        };
        assert!(t.decode("x", 0.0).unwrap_err().contains("multiple of 4"));
        let t = Tensor::dense_f32(&[3], &[1.0, 2.0]);
        assert!(t.decode("x", 0.0).unwrap_err().contains("shape"));
        let t = Tensor {
            encoding: None,
            dtype: 9,
            shape: vec![],
        };
        assert!(t.decode("x", 0.0).is_err());
    }
}
