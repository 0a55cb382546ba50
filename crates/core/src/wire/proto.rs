//! The protobuf wire format of `tinker_public` (schema: Python SDK 0.38
//! `tinker_public_pb2`), hand-written for the three messages the API exchanges as
//! protobuf: the `ForwardBackwardRequest` we send and the `ForwardBackwardOutput` and
//! `SampleResponse` we receive.
//!
//! The encoder computes every length first and then writes the message in one pass into
//! one allocation, copying token and float arrays as little-endian bytes directly (no
//! intermediate messages). The decoders skip unknown fields, as protobuf requires, and
//! turn any malformed input into an error, never a panic.

use crate::map::StrMap;

use crate::types::{Datum, ModelInputChunk, ProvenanceSpan, TensorData, TensorValues};

// ---------------------------------------------------------------------------------
// Encoding

const WT_VARINT: u32 = 0;
const WT_I64: u32 = 1;
const WT_LEN: u32 = 2;

fn varint_len(mut v: u64) -> usize {
    let mut n = 1;
    while v >= 0x80 {
        v >>= 7;
        n += 1;
    }
    n
}

fn key_len(field: u32) -> usize {
    varint_len(u64::from(field) << 3)
}

fn len_field(field: u32, payload: usize) -> usize {
    key_len(field) + varint_len(payload as u64) + payload
}

struct W {
    buf: Vec<u8>,
}

impl W {
    fn varint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.buf.push((v as u8) | 0x80);
            v >>= 7;
        }
        self.buf.push(v as u8);
    }
    fn key(&mut self, field: u32, wt: u32) {
        self.varint(u64::from(field << 3 | wt));
    }
    fn len_header(&mut self, field: u32, len: usize) {
        self.key(field, WT_LEN);
        self.varint(len as u64);
    }
    fn bytes(&mut self, field: u32, b: &[u8]) {
        self.len_header(field, b.len());
        self.buf.extend_from_slice(b);
    }
    fn string(&mut self, field: u32, s: &str) {
        self.bytes(field, s.as_bytes());
    }
    fn double(&mut self, field: u32, v: f64) {
        self.key(field, WT_I64);
        self.buf.extend_from_slice(&v.to_le_bytes());
    }
}

/// Appends `v` as little-endian 4-byte integers (token ids fit in int32).
fn put_u32s(buf: &mut Vec<u8>, v: &[u32]) {
    #[cfg(target_endian = "little")]
    {
        // SAFETY: u32 has no padding and any byte pattern is a valid u8; on a
        // little-endian target the in-memory bytes are the wire bytes.
        let bytes = unsafe {
            std::slice::from_raw_parts(v.as_ptr().cast::<u8>(), std::mem::size_of_val(v))
        };
        buf.extend_from_slice(bytes);
    }
    #[cfg(not(target_endian = "little"))]
    v.iter()
        .for_each(|x| buf.extend_from_slice(&x.to_le_bytes()));
}

fn put_f32s(buf: &mut Vec<u8>, v: &[f32]) {
    #[cfg(target_endian = "little")]
    {
        // SAFETY: as above; f32 has no padding.
        let bytes = unsafe {
            std::slice::from_raw_parts(v.as_ptr().cast::<u8>(), std::mem::size_of_val(v))
        };
        buf.extend_from_slice(bytes);
    }
    #[cfg(not(target_endian = "little"))]
    v.iter()
        .for_each(|x| buf.extend_from_slice(&x.to_le_bytes()));
}

fn put_i64s(buf: &mut Vec<u8>, v: &[i64]) {
    #[cfg(target_endian = "little")]
    {
        // SAFETY: as above; i64 has no padding.
        let bytes = unsafe {
            std::slice::from_raw_parts(v.as_ptr().cast::<u8>(), std::mem::size_of_val(v))
        };
        buf.extend_from_slice(bytes);
    }
    #[cfg(not(target_endian = "little"))]
    v.iter()
        .for_each(|x| buf.extend_from_slice(&x.to_le_bytes()));
}

/// A loss-function config value: numbers go to both config maps, strings only to v2.
#[derive(Debug, Clone, PartialEq)]
pub enum LossConfigValue {
    /// A number.
    Number(f64),
    /// A string.
    Text(String),
}

/// A `forward_backward` request, ready to encode.
#[derive(Debug, Clone)]
pub struct ForwardBackwardRequest<'a> {
    /// The training model.
    pub model_id: &'a str,
    /// The request's sequence id (≥ 1).
    pub seq_id: i32,
    /// The batch.
    pub data: &'a [Datum],
    /// The loss function name.
    pub loss_fn: &'a str,
    /// The loss function's config.
    pub loss_fn_config: Option<&'a StrMap<LossConfigValue>>,
    /// Forward only (no gradient accumulation).
    pub forward_only: bool,
}

fn tensor_len(t: &TensorData) -> usize {
    let values = t.values.len() * t.dtype().size();
    let mut n = 0;
    match (&t.sparse_crow_indices, &t.sparse_col_indices) {
        (Some(crow), Some(col)) => {
            let csr =
                len_field(1, values) + len_field(2, crow.len() * 8) + len_field(3, col.len() * 8);
            n += len_field(2, csr);
        }
        _ => n += len_field(1, values),
    }
    n += key_len(3) + 1; // dtype (1 or 2)
    if let Some(shape) = &t.shape {
        if !shape.is_empty() {
            let packed: usize = shape.iter().map(|&d| varint_len(d as u64)).sum();
            n += len_field(4, packed);
        }
    }
    n
}

fn write_tensor(w: &mut W, t: &TensorData) {
    let values_len = t.values.len() * t.dtype().size();
    let put_values = |w: &mut W| match &t.values {
        TensorValues::Float32(v) => put_f32s(&mut w.buf, v),
        TensorValues::Int64(v) => put_i64s(&mut w.buf, v),
    };
    match (&t.sparse_crow_indices, &t.sparse_col_indices) {
        (Some(crow), Some(col)) => {
            let csr = len_field(1, values_len)
                + len_field(2, crow.len() * 8)
                + len_field(3, col.len() * 8);
            w.len_header(2, csr);
            w.len_header(1, values_len);
            put_values(w);
            w.len_header(2, crow.len() * 8);
            put_i64s(&mut w.buf, crow);
            w.len_header(3, col.len() * 8);
            put_i64s(&mut w.buf, col);
        }
        _ => {
            w.len_header(1, values_len);
            put_values(w);
        }
    }
    w.key(3, WT_VARINT);
    w.varint(match t.values {
        TensorValues::Float32(_) => 1,
        TensorValues::Int64(_) => 2,
    });
    if let Some(shape) = &t.shape {
        if !shape.is_empty() {
            let packed: usize = shape.iter().map(|&d| varint_len(d as u64)).sum();
            w.len_header(4, packed);
            shape.iter().for_each(|&d| w.varint(d as u64));
        }
    }
}

fn chunk_len(c: &ModelInputChunk) -> usize {
    match c {
        ModelInputChunk::EncodedText { tokens } => len_field(1, len_field(1, tokens.len() * 4)),
        ModelInputChunk::Image {
            data,
            format,
            expected_tokens,
        } => {
            let mut n = len_field(1, data.len())
                + if format.is_empty() {
                    0
                } else {
                    len_field(2, format.len())
                };
            if let Some(e) = expected_tokens {
                n += key_len(3) + varint_len(u64::from(*e));
            }
            len_field(2, n)
        }
        ModelInputChunk::Dmel { dmel } => len_field(3, len_field(1, dmel.len())),
        // Rejected by `encode_forward_backward` before sizing.
        ModelInputChunk::ImageAssetPointer { .. } => 0,
    }
}

fn write_chunk(w: &mut W, c: &ModelInputChunk) {
    match c {
        ModelInputChunk::EncodedText { tokens } => {
            w.len_header(1, len_field(1, tokens.len() * 4));
            w.len_header(1, tokens.len() * 4);
            put_u32s(&mut w.buf, tokens);
        }
        ModelInputChunk::Image {
            data,
            format,
            expected_tokens,
        } => {
            let mut n = len_field(1, data.len())
                + if format.is_empty() {
                    0
                } else {
                    len_field(2, format.len())
                };
            if let Some(e) = expected_tokens {
                n += key_len(3) + varint_len(u64::from(*e));
            }
            w.len_header(2, n);
            w.bytes(1, data);
            if !format.is_empty() {
                w.string(2, format);
            }
            if let Some(e) = expected_tokens {
                w.key(3, WT_VARINT);
                w.varint(u64::from(*e));
            }
        }
        ModelInputChunk::Dmel { dmel } => {
            w.len_header(3, len_field(1, dmel.len()));
            w.bytes(1, dmel);
        }
        ModelInputChunk::ImageAssetPointer { .. } => {}
    }
}

fn span_parts(s: &ProvenanceSpan) -> (u32, &str, u64, u64) {
    match s {
        ProvenanceSpan::PromptTokens {
            sequence_id,
            offset,
            length,
        } => (1, sequence_id, *offset, *length),
        ProvenanceSpan::SampledTokens {
            sequence_id,
            offset,
            length,
        } => (2, sequence_id, *offset, *length),
    }
}

fn span_inner_len(id: &str, offset: u64, length: u64) -> usize {
    (if id.is_empty() {
        0
    } else {
        len_field(1, id.len())
    }) + if offset == 0 {
        0
    } else {
        key_len(2) + varint_len(offset)
    } + if length == 0 {
        0
    } else {
        key_len(3) + varint_len(length)
    }
}

fn span_len(s: &ProvenanceSpan) -> usize {
    let (arm, id, off, len) = span_parts(s);
    len_field(arm, span_inner_len(id, off, len))
}

fn write_span(w: &mut W, field: u32, s: &ProvenanceSpan) {
    let (arm, id, off, len) = span_parts(s);
    let inner = span_inner_len(id, off, len);
    w.len_header(field, len_field(arm, inner));
    w.len_header(arm, inner);
    if !id.is_empty() {
        w.string(1, id);
    }
    if off != 0 {
        w.key(2, WT_VARINT);
        w.varint(off);
    }
    if len != 0 {
        w.key(3, WT_VARINT);
        w.varint(len);
    }
}

fn map_entry_len(key: &str, value_len: usize) -> usize {
    len_field(1, key.len()) + value_len
}

fn datum_len(d: &Datum) -> usize {
    let mut n: usize = d
        .model_input
        .chunks
        .iter()
        .map(|c| len_field(1, chunk_len(c)))
        .sum();
    for (k, t) in &d.loss_fn_inputs {
        n += len_field(2, map_entry_len(k, len_field(2, tensor_len(t))));
    }
    for s in d.model_input_spans.iter().flatten() {
        n += len_field(3, span_len(s));
    }
    for s in d.loss_fn_input_spans.iter().flatten() {
        n += len_field(4, span_len(s));
    }
    n
}

fn write_datum(w: &mut W, d: &Datum) {
    for c in &d.model_input.chunks {
        w.len_header(1, chunk_len(c));
        write_chunk(w, c);
    }
    for (k, t) in &d.loss_fn_inputs {
        let tl = tensor_len(t);
        w.len_header(2, map_entry_len(k, len_field(2, tl)));
        w.string(1, k);
        w.len_header(2, tl);
        write_tensor(w, t);
    }
    for s in d.model_input_spans.iter().flatten() {
        write_span(w, 3, s);
    }
    for s in d.loss_fn_input_spans.iter().flatten() {
        write_span(w, 4, s);
    }
}

/// Encodes a `ForwardBackwardRequest`. Fails only on an image-pointer chunk, which the
/// protobuf format cannot carry (as in the Python SDK).
pub fn encode_forward_backward(req: &ForwardBackwardRequest<'_>) -> Result<Vec<u8>, String> {
    for (i, d) in req.data.iter().enumerate() {
        if let Some(j) = d
            .model_input
            .chunks
            .iter()
            .position(|c| matches!(c, ModelInputChunk::ImageAssetPointer { .. }))
        {
            return Err(format!("data[{i}].model_input.chunks[{j}]: image_asset_pointer chunks can only be used in sampling prompts, not in training data"));
        }
    }
    let datum_lens: Vec<usize> = req.data.iter().map(datum_len).collect();
    let mut total = 0usize;
    if !req.model_id.is_empty() {
        total += len_field(1, req.model_id.len());
    }
    if req.seq_id != 0 {
        total += key_len(2) + varint_len(req.seq_id as i64 as u64);
    }
    total += datum_lens.iter().map(|&l| len_field(3, l)).sum::<usize>();
    if !req.loss_fn.is_empty() {
        total += len_field(4, req.loss_fn.len());
    }
    let config: Vec<(&String, &LossConfigValue)> = req
        .loss_fn_config
        .map(|c| c.iter().collect())
        .unwrap_or_default();
    let v1_entry = |k: &str| map_entry_len(k, key_len(2) + 8);
    let v2_value_len = |v: &LossConfigValue| match v {
        LossConfigValue::Number(_) => key_len(1) + 8,
        LossConfigValue::Text(s) => len_field(2, s.len()),
    };
    for (k, v) in &config {
        if let LossConfigValue::Number(_) = v {
            total += len_field(5, v1_entry(k));
        }
        total += len_field(7, map_entry_len(k, len_field(2, v2_value_len(v))));
    }
    if req.forward_only {
        total += key_len(6) + 1;
    }

    let mut w = W {
        buf: Vec::with_capacity(total),
    };
    if !req.model_id.is_empty() {
        w.string(1, req.model_id);
    }
    if req.seq_id != 0 {
        w.key(2, WT_VARINT);
        w.varint(req.seq_id as i64 as u64);
    }
    for (d, &l) in req.data.iter().zip(&datum_lens) {
        w.len_header(3, l);
        write_datum(&mut w, d);
    }
    if !req.loss_fn.is_empty() {
        w.string(4, req.loss_fn);
    }
    for (k, v) in &config {
        if let LossConfigValue::Number(x) = v {
            w.len_header(5, v1_entry(k));
            w.string(1, k);
            w.double(2, *x);
        }
    }
    if req.forward_only {
        w.key(6, WT_VARINT);
        w.varint(1);
    }
    for (k, v) in &config {
        let vl = v2_value_len(v);
        w.len_header(7, map_entry_len(k, len_field(2, vl)));
        w.string(1, k);
        w.len_header(2, vl);
        match v {
            LossConfigValue::Number(x) => w.double(1, *x),
            LossConfigValue::Text(s) => w.string(2, s),
        }
    }
    debug_assert_eq!(w.buf.len(), total);
    Ok(w.buf)
}

// ---------------------------------------------------------------------------------
// Decoding

/// A field as read from the wire.
enum Val<'a> {
    Varint(u64),
    I64(u64),
    Len(&'a [u8]),
    I32(#[cfg_attr(not(test), allow(dead_code))] u32),
}

struct R<'a> {
    buf: &'a [u8],
    pos: usize,
    what: &'static str,
}

type DResult<T> = Result<T, String>;

impl<'a> R<'a> {
    fn new(buf: &'a [u8], what: &'static str) -> Self {
        R { buf, pos: 0, what }
    }
    fn err<T>(&self, msg: &str) -> DResult<T> {
        Err(format!(
            "malformed {} protobuf at byte {}: {msg}",
            self.what, self.pos
        ))
    }
    fn varint(&mut self) -> DResult<u64> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let Some(&b) = self.buf.get(self.pos) else {
                return self.err("truncated varint");
            };
            self.pos += 1;
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        self.err("varint too long")
    }
    fn take(&mut self, n: usize) -> DResult<&'a [u8]> {
        match self.pos.checked_add(n) {
            Some(end) if end <= self.buf.len() => {
                let s = &self.buf[self.pos..end];
                self.pos = end;
                Ok(s)
            }
            _ => self.err("length past the end"),
        }
    }
    /// The next (field number, value), or `None` at the end.
    fn next(&mut self) -> DResult<Option<(u32, Val<'a>)>> {
        if self.pos >= self.buf.len() {
            return Ok(None);
        }
        let key = self.varint()?;
        let field = (key >> 3) as u32;
        if field == 0 {
            return self.err("field number 0");
        }
        let v = match key & 7 {
            0 => Val::Varint(self.varint()?),
            1 => Val::I64(u64::from_le_bytes(
                self.take(8)?.try_into().unwrap_or([0; 8]),
            )),
            2 => {
                let n = self.varint()?;
                let n = usize::try_from(n).or_else(|_| self.err("length too large"))?;
                Val::Len(self.take(n)?)
            }
            5 => Val::I32(u32::from_le_bytes(
                self.take(4)?.try_into().unwrap_or([0; 4]),
            )),
            wt => return self.err(&format!("unsupported wire type {wt}")),
        };
        Ok(Some((field, v)))
    }
}

fn as_len<'a>(v: Val<'a>, what: &str) -> DResult<&'a [u8]> {
    match v {
        Val::Len(b) => Ok(b),
        _ => Err(format!("{what}: expected a length-delimited field")),
    }
}

fn as_varint(v: Val<'_>, what: &str) -> DResult<u64> {
    match v {
        Val::Varint(x) => Ok(x),
        _ => Err(format!("{what}: expected a varint field")),
    }
}

fn as_string(v: Val<'_>, what: &str) -> DResult<String> {
    String::from_utf8(as_len(v, what)?.to_vec()).map_err(|_| format!("{what}: invalid UTF-8"))
}

fn le_i32s(b: &[u8], what: &str) -> DResult<Vec<i32>> {
    if b.len() % 4 != 0 {
        return Err(format!(
            "{what}: {} bytes is not a whole number of int32 values",
            b.len()
        ));
    }
    Ok(b.chunks_exact(4)
        .map(|c| i32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect())
}

fn le_f32s(b: &[u8], what: &str) -> DResult<Vec<f32>> {
    if b.len() % 4 != 0 {
        return Err(format!(
            "{what}: {} bytes is not a whole number of float32 values",
            b.len()
        ));
    }
    Ok(b.chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect())
}

fn le_i64s(b: &[u8], what: &str) -> DResult<Vec<i64>> {
    if b.len() % 8 != 0 {
        return Err(format!(
            "{what}: {} bytes is not a whole number of int64 values",
            b.len()
        ));
    }
    Ok(b.chunks_exact(8)
        .map(|c| i64::from_le_bytes(c.try_into().unwrap_or([0; 8])))
        .collect())
}

/// Wire dtypes (proto `DType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum WireDType {
    F32,
    I64,
    I32,
    BF16,
}

impl WireDType {
    fn parse(v: u64, what: &str) -> DResult<Self> {
        match v {
            1 => Ok(WireDType::F32),
            2 => Ok(WireDType::I64),
            3 => Ok(WireDType::I32),
            4 => Ok(WireDType::BF16),
            other => Err(format!("{what}: unsupported dtype {other}")),
        }
    }
    fn size(self) -> usize {
        match self {
            WireDType::F32 | WireDType::I32 => 4,
            WireDType::I64 => 8,
            WireDType::BF16 => 2,
        }
    }
    /// Widens raw bytes to the public dtypes (INT32 → int64, BF16 → float32).
    fn values(self, b: &[u8], what: &str) -> DResult<TensorValues> {
        if b.len() % self.size() != 0 {
            return Err(format!(
                "{what}: {} bytes is not a whole number of elements",
                b.len()
            ));
        }
        Ok(match self {
            WireDType::F32 => TensorValues::Float32(le_f32s(b, what)?),
            WireDType::I64 => TensorValues::Int64(le_i64s(b, what)?),
            WireDType::I32 => {
                TensorValues::Int64(le_i32s(b, what)?.into_iter().map(i64::from).collect())
            }
            WireDType::BF16 => TensorValues::Float32(
                b.chunks_exact(2)
                    .map(|c| f32::from_bits(u32::from(u16::from_le_bytes([c[0], c[1]])) << 16))
                    .collect(),
            ),
        })
    }
}

fn read_packed_i64(v: Val<'_>, out: &mut Vec<i64>, what: &str) -> DResult<()> {
    match v {
        Val::Varint(x) => out.push(x as i64),
        Val::Len(b) => {
            let mut r = R::new(b, "packed int64");
            while r.pos < b.len() {
                out.push(r.varint()? as i64);
            }
        }
        _ => return Err(format!("{what}: bad wire type for repeated int64")),
    }
    Ok(())
}

fn shape_from(raw: Vec<i64>, what: &str) -> DResult<Vec<usize>> {
    raw.into_iter()
        .map(|d| usize::try_from(d).map_err(|_| format!("{what}: negative dimension {d}")))
        .collect()
}

fn decode_tensor(b: &[u8], what: &'static str) -> DResult<TensorData> {
    let mut r = R::new(b, what);
    let (mut dense, mut csr, mut dtype, mut shape) = (None, None, None, Vec::new());
    while let Some((f, v)) = r.next()? {
        match f {
            1 => dense = Some(as_len(v, what)?),
            2 => csr = Some(as_len(v, what)?),
            3 => dtype = Some(WireDType::parse(as_varint(v, what)?, what)?),
            4 => read_packed_i64(v, &mut shape, what)?,
            _ => {}
        }
    }
    let dtype = dtype.ok_or_else(|| format!("{what}: missing dtype"))?;
    let shape = Some(shape_from(shape, what)?);
    if let Some(csr) = csr {
        let mut r = R::new(csr, what);
        let (mut values, mut crow, mut col) = (&[][..], &[][..], &[][..]);
        while let Some((f, v)) = r.next()? {
            match f {
                1 => values = as_len(v, what)?,
                2 => crow = as_len(v, what)?,
                3 => col = as_len(v, what)?,
                _ => {}
            }
        }
        return Ok(TensorData {
            values: dtype.values(values, what)?,
            shape,
            sparse_crow_indices: Some(le_i64s(crow, what)?),
            sparse_col_indices: Some(le_i64s(col, what)?),
        });
    }
    Ok(TensorData {
        values: dtype.values(dense.unwrap_or(&[]), what)?,
        shape,
        sparse_crow_indices: None,
        sparse_col_indices: None,
    })
}

/// Per-datum outputs of a forward/backward pass, by name (`logprobs`, …).
pub type LossFnOutput = StrMap<TensorData>;

/// Result of `forward` / `forward_backward`.
#[derive(Debug, Clone, PartialEq)]
pub struct ForwardBackwardOutput {
    /// Output class name (e.g. `ArrayRecord`).
    pub loss_fn_output_type: String,
    /// One entry per datum, in input order.
    pub loss_fn_outputs: Vec<LossFnOutput>,
    /// Metrics such as `loss:sum`.
    pub metrics: StrMap<f64>,
}

struct Batched {
    data: Vec<u8>,
    offsets: Vec<i64>,
    dtype: WireDType,
    trailing: Vec<usize>,
}

fn decode_batched(b: &[u8]) -> DResult<Batched> {
    let what = "BatchedTensor";
    let mut r = R::new(b, what);
    let (mut data, mut offsets, mut dtype, mut trailing) = (&[][..], &[][..], None, Vec::new());
    while let Some((f, v)) = r.next()? {
        match f {
            1 => data = as_len(v, what)?,
            2 => offsets = as_len(v, what)?,
            3 => dtype = Some(WireDType::parse(as_varint(v, what)?, what)?),
            4 => read_packed_i64(v, &mut trailing, what)?,
            _ => {}
        }
    }
    Ok(Batched {
        data: data.to_vec(),
        offsets: le_i64s(offsets, what)?,
        dtype: dtype.ok_or("BatchedTensor: missing dtype")?,
        trailing: shape_from(trailing, what)?,
    })
}

/// The most datums a record without fields may declare (a forward_backward request holds
/// far fewer; the count comes from the server, so it is bounded before allocating).
const MAX_EMPTY_DATUMS: usize = 1 << 20;

/// One `ArrayRecord`: its fields by name and its declared datum count.
type Record = (StrMap<Batched>, i64);

/// Decodes a `ForwardBackwardOutput` (records concatenated, byte offsets sliced per
/// datum, BF16/INT32 widened, `module:Class` type tags trimmed).
pub fn decode_forward_backward_output(b: &[u8]) -> DResult<ForwardBackwardOutput> {
    let what = "ForwardBackwardOutput";
    let mut r = R::new(b, what);
    let mut output_type = String::new();
    let mut records: Vec<Record> = Vec::new();
    let mut metrics = StrMap::new();
    while let Some((f, v)) = r.next()? {
        match f {
            1 => output_type = as_string(v, what)?,
            2 => records.push(decode_record(as_len(v, what)?)?),
            3 => {
                let (k, val) = decode_metric(as_len(v, what)?)?;
                metrics.insert(k, val);
            }
            _ => {}
        }
    }
    if records.is_empty() {
        return Ok(ForwardBackwardOutput {
            loss_fn_output_type: if output_type.is_empty() {
                "ArrayRecord".into()
            } else {
                output_type
            },
            loss_fn_outputs: vec![],
            metrics,
        });
    }
    let class = output_type.rsplit(':').next().unwrap_or("").to_string();
    let mut outputs: Vec<LossFnOutput> = Vec::new();
    for record in records {
        slice_record(record, &mut outputs)?;
    }
    Ok(ForwardBackwardOutput {
        loss_fn_output_type: class,
        loss_fn_outputs: outputs,
        metrics,
    })
}

/// An `ArrayRecord`: its batched fields and its declared datum count.
fn decode_record(b: &[u8]) -> DResult<Record> {
    let mut rr = R::new(b, "ArrayRecord");
    let (mut fields, mut num) = (StrMap::new(), 0i64);
    while let Some((f, v)) = rr.next()? {
        match f {
            2 => {
                let (k, val) =
                    decode_map_entry(as_len(v, "ArrayRecord.fields")?, "ArrayRecord.fields")?;
                fields.insert(k, decode_batched(val.unwrap_or(&[]))?);
            }
            3 => num = as_varint(v, "ArrayRecord.num_datums")? as i64,
            _ => {}
        }
    }
    Ok((fields, num))
}

/// A `metrics` map entry: its name and its double.
fn decode_metric(entry: &[u8]) -> DResult<(String, f64)> {
    let mut er = R::new(entry, "metrics entry");
    let (mut k, mut val) = (String::new(), 0f64);
    while let Some((f, v)) = er.next()? {
        match (f, v) {
            (1, v) => k = as_string(v, "metric name")?,
            (2, Val::I64(bits)) => val = f64::from_bits(bits),
            (2, _) => return Err("metrics: value is not a double".into()),
            _ => {}
        }
    }
    Ok((k, val))
}

/// Appends one record's datums to `outputs`: each field's tensor sliced by its byte
/// offsets.
fn slice_record((fields, num): Record, outputs: &mut Vec<LossFnOutput>) -> DResult<()> {
    let what = "ForwardBackwardOutput";
    // Datums of this record: declared count, else the first field's offset count.
    let n = if num > 0 {
        usize::try_from(num).map_err(|_| format!("{what}: {num} datums declared"))?
    } else {
        fields
            .values()
            .next()
            .map_or(0, |b| b.offsets.len().saturating_sub(1))
    };
    // Checked before allocating: the declared count comes from the server.
    if let Some((name, bt)) = fields
        .iter()
        .find(|(_, bt)| bt.offsets.len().saturating_sub(1) < n)
    {
        return Err(format!(
            "{what}: field {name} has {} offsets for {n} datums",
            bt.offsets.len()
        ));
    }
    if fields.is_empty() && n > MAX_EMPTY_DATUMS {
        return Err(format!("{what}: {n} datums declared without any field"));
    }
    let base = outputs.len();
    outputs.resize_with(base + n, StrMap::new);
    for (name, bt) in fields {
        for i in 0..n {
            let tensor = datum_tensor(&bt, i, &name)?;
            outputs[base + i].insert(name.clone(), tensor);
        }
    }
    Ok(())
}

/// Datum `i`'s tensor of a batched field: its bytes between offsets `i` and `i + 1`,
/// shaped `[leading, trailing…]`.
fn datum_tensor(bt: &Batched, i: usize, name: &str) -> DResult<TensorData> {
    let size = bt.dtype.size();
    let (a, z) = (bt.offsets[i], bt.offsets[i + 1]);
    if a < 0
        || z < a
        || z as usize > bt.data.len()
        || a as usize % size != 0
        || z as usize % size != 0
    {
        return Err(format!(
            "ForwardBackwardOutput: field {name} has bad byte offsets {a}..{z}"
        ));
    }
    let values = bt
        .dtype
        .values(&bt.data[a as usize..z as usize], "BatchedTensor.data")?;
    let trailing: usize = bt.trailing.iter().product();
    let leading = values.len().checked_div(trailing).unwrap_or(0);
    let mut shape = vec![leading];
    shape.extend_from_slice(&bt.trailing);
    Ok(TensorData {
        values,
        shape: Some(shape),
        sparse_crow_indices: None,
        sparse_col_indices: None,
    })
}

fn decode_map_entry<'a>(b: &'a [u8], what: &'static str) -> DResult<(String, Option<&'a [u8]>)> {
    let mut r = R::new(b, what);
    let (mut k, mut val) = (String::new(), None);
    while let Some((f, v)) = r.next()? {
        match f {
            1 => k = as_string(v, what)?,
            2 => val = Some(as_len(v, what)?),
            _ => {}
        }
    }
    Ok((k, val))
}

/// Why sampling stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    /// A stop token or string (or EOS).
    Stop,
    /// `max_tokens` reached.
    Length,
}

/// Top-k logprobs, `length × k`, row-major. Empty cells are `(0, -99999.0)`.
#[derive(Debug, Clone, PartialEq)]
pub struct TopkLogprobs {
    /// Token ids.
    pub token_ids: Vec<i32>,
    /// Their logprobs.
    pub logprobs: Vec<f32>,
    /// Columns.
    pub k: u32,
    /// Rows.
    pub length: u32,
}

/// One sampled sequence.
#[derive(Debug, Clone, PartialEq)]
pub struct SampledSequence {
    /// Why it stopped.
    pub stop_reason: StopReason,
    /// Generated token ids.
    pub tokens: Vec<i32>,
    /// Their logprobs, if returned.
    pub logprobs: Option<Vec<f32>>,
    /// Top-k alternatives per sampled position, if requested.
    pub topk_logprobs: Option<TopkLogprobs>,
    /// Stable id of this sequence (from the submit response's `sample_sequence_ids`).
    pub sequence_id: String,
}

/// Alternatives drawn at each prompt position (`[len(prompt) - 1, k]`).
#[derive(Debug, Clone, PartialEq)]
pub struct PromptAltTokens {
    /// Token ids (int64).
    pub tokens: TensorData,
    /// Their logprobs (float32).
    pub logprobs: TensorData,
}

/// Result of `sample` / `compute_logprobs`.
#[derive(Debug, Clone, PartialEq)]
pub struct SampleResponse {
    /// The samples.
    pub sequences: Vec<SampledSequence>,
    /// Per prompt position; NaN where not computed (the first position).
    pub prompt_logprobs: Option<Vec<f32>>,
    /// Top-k logprobs per prompt position, if requested.
    pub topk_prompt_logprobs: Option<TopkLogprobs>,
    /// Prompt tokens served from the prefix cache.
    pub prompt_cache_hit_tokens: i32,
    /// Logprobs of requested token ids per prompt position.
    pub target_prompt_logprobs: Option<TensorData>,
    /// Alternatives drawn per prompt position.
    pub prompt_alt_tokens: Option<PromptAltTokens>,
}

fn decode_topk(b: &[u8]) -> DResult<Option<TopkLogprobs>> {
    let what = "TopkLogprobs";
    let mut r = R::new(b, what);
    let (mut ids, mut lps, mut k, mut n) = (&[][..], &[][..], 0u64, 0u64);
    while let Some((f, v)) = r.next()? {
        match f {
            1 => ids = as_len(v, what)?,
            2 => lps = as_len(v, what)?,
            3 => k = as_varint(v, what)?,
            4 => n = as_varint(v, what)?,
            _ => {}
        }
    }
    if n == 0 || k == 0 {
        return Ok(None);
    }
    let cells = n.checked_mul(k).ok_or("TopkLogprobs: size overflow")?;
    let (token_ids, logprobs) = (le_i32s(ids, what)?, le_f32s(lps, what)?);
    if token_ids.len() as u64 != cells || logprobs.len() as u64 != cells {
        return Err(format!(
            "TopkLogprobs: {n}x{k} needs {cells} cells, got {} ids and {} logprobs",
            token_ids.len(),
            logprobs.len()
        ));
    }
    Ok(Some(TopkLogprobs {
        token_ids,
        logprobs,
        k: k as u32,
        length: n as u32,
    }))
}

/// Decodes a `SampleResponse`. `sequence_ids` (from the submit response) are attached
/// in order; their count must match the sequences.
pub fn decode_sample_response(b: &[u8], sequence_ids: &[String]) -> DResult<SampleResponse> {
    let what = "SampleResponse";
    let mut r = R::new(b, what);
    let mut out = SampleResponse {
        sequences: vec![],
        prompt_logprobs: None,
        topk_prompt_logprobs: None,
        prompt_cache_hit_tokens: 0,
        target_prompt_logprobs: None,
        prompt_alt_tokens: None,
    };
    while let Some((f, v)) = r.next()? {
        match f {
            1 => out.sequences.push(decode_sequence(as_len(v, what)?)?),
            2 => out.prompt_logprobs = opt_f32s(as_len(v, "prompt_logprobs")?, "prompt_logprobs")?,
            3 => out.topk_prompt_logprobs = decode_topk(as_len(v, what)?)?,
            4 => out.prompt_cache_hit_tokens = as_varint(v, "prompt_cache_hit_tokens")? as i32,
            5 => {
                out.target_prompt_logprobs =
                    Some(decode_tensor(as_len(v, what)?, "target_prompt_logprobs")?)
            }
            6 => out.prompt_alt_tokens = Some(decode_alt_tokens(as_len(v, what)?)?),
            _ => {}
        }
    }
    if sequence_ids.len() != out.sequences.len() {
        return Err(format!(
            "{} sample_sequence_ids for {} sequences",
            sequence_ids.len(),
            out.sequences.len()
        ));
    }
    for (s, id) in out.sequences.iter_mut().zip(sequence_ids) {
        s.sequence_id = id.clone();
    }
    Ok(out)
}

/// Little-endian floats, or `None` for an empty field.
fn opt_f32s(b: &[u8], what: &'static str) -> DResult<Option<Vec<f32>>> {
    Ok(if b.is_empty() {
        None
    } else {
        Some(le_f32s(b, what)?)
    })
}

/// One `SampledSequence` (its id is attached by the caller).
fn decode_sequence(b: &[u8]) -> DResult<SampledSequence> {
    let mut sr = R::new(b, "SampledSequence");
    let mut seq = SampledSequence {
        stop_reason: StopReason::Stop,
        tokens: vec![],
        logprobs: None,
        topk_logprobs: None,
        sequence_id: String::new(),
    };
    while let Some((f, v)) = sr.next()? {
        match f {
            1 => {
                seq.stop_reason = match as_varint(v, "stop_reason")? {
                    0 => StopReason::Stop,
                    1 => StopReason::Length,
                    other => return Err(format!("SampledSequence: unknown stop_reason {other}")),
                }
            }
            2 => seq.tokens = le_i32s(as_len(v, "tokens")?, "SampledSequence.tokens")?,
            3 => seq.logprobs = opt_f32s(as_len(v, "logprobs")?, "SampledSequence.logprobs")?,
            4 => seq.topk_logprobs = decode_topk(as_len(v, "topk")?)?,
            _ => {}
        }
    }
    Ok(seq)
}

/// `PromptAltTokens`: its tokens and logprobs tensors, empty (`[0]`) when absent.
fn decode_alt_tokens(b: &[u8]) -> DResult<PromptAltTokens> {
    let mut pr = R::new(b, "PromptAltTokens");
    let (mut tokens, mut logprobs) = (None, None);
    while let Some((f, v)) = pr.next()? {
        match f {
            1 => {
                tokens = Some(decode_tensor(
                    as_len(v, "PromptAltTokens")?,
                    "PromptAltTokens.tokens",
                )?)
            }
            2 => {
                logprobs = Some(decode_tensor(
                    as_len(v, "PromptAltTokens")?,
                    "PromptAltTokens.logprobs",
                )?)
            }
            _ => {}
        }
    }
    let empty = |v| TensorData {
        values: v,
        shape: Some(vec![0]),
        sparse_crow_indices: None,
        sparse_col_indices: None,
    };
    Ok(PromptAltTokens {
        tokens: tokens.unwrap_or_else(|| empty(TensorValues::Int64(vec![]))),
        logprobs: logprobs.unwrap_or_else(|| empty(TensorValues::Float32(vec![]))),
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::types::{LossFnInputs, ModelInput};

    /// A minimal independent protobuf reader for tests: (field, wire type, raw bytes).
    pub(crate) fn fields(b: &[u8]) -> Vec<(u32, u32, Vec<u8>)> {
        let mut r = R::new(b, "test");
        let mut out = vec![];
        while let Some((f, v)) = r.next().unwrap() {
            let (wt, raw) = match v {
                Val::Varint(x) => (0, x.to_le_bytes().to_vec()),
                Val::I64(x) => (1, x.to_le_bytes().to_vec()),
                Val::Len(b) => (2, b.to_vec()),
                Val::I32(x) => (5, x.to_le_bytes().to_vec()),
            };
            out.push((f, wt, raw));
        }
        out
    }

    fn sft_datum() -> Datum {
        let mut inputs = LossFnInputs::new();
        inputs.insert("target_tokens", TensorData::from_i64(vec![102, 103, 104]));
        inputs.insert("weights", TensorData::from_f32(vec![0.0, 1.0, 1.0]));
        Datum::new(ModelInput::from_ints(vec![101, 102, 103]), inputs)
    }

    #[test]
    fn encodes_the_documented_layout() {
        let data = vec![sft_datum()];
        let mut cfg = StrMap::new();
        cfg.insert("clip", LossConfigValue::Number(0.5));
        cfg.insert("mode", LossConfigValue::Text("x".into()));
        let req = ForwardBackwardRequest {
            model_id: "m:train:0",
            seq_id: 3,
            data: &data,
            loss_fn: "ppo",
            loss_fn_config: Some(&cfg),
            forward_only: true,
        };
        let bytes = encode_forward_backward(&req).unwrap();
        let top = fields(&bytes);
        let nums: Vec<u32> = top.iter().map(|f| f.0).collect();
        assert_eq!(
            nums,
            vec![1, 2, 3, 4, 5, 6, 7, 7],
            "v1 holds only the number; v2 holds both"
        );
        assert_eq!(top[0].2, b"m:train:0");
        assert_eq!(top[1].2[0], 3);
        // Datum → chunk → encoded_text → tokens as int32 LE.
        let datum = fields(&top[2].2);
        let chunk = fields(&datum[0].2);
        assert_eq!(chunk[0].0, 1, "encoded_text arm");
        let tokens = fields(&chunk[0].2);
        assert_eq!(
            tokens[0].2,
            [101i32, 102, 103]
                .iter()
                .flat_map(|t| t.to_le_bytes())
                .collect::<Vec<u8>>()
        );
        // loss_fn_inputs map entries with tensors: dense bytes, dtype, packed shape.
        let entry = fields(&datum[1].2);
        assert_eq!(entry[0].2, b"target_tokens");
        let tensor = fields(&entry[1].2);
        assert_eq!(tensor[0].0, 1);
        assert_eq!(tensor[0].2.len(), 24);
        assert_eq!((tensor[1].0, tensor[1].2[0]), (3, 2), "DTYPE_INT64");
        assert_eq!((tensor[2].0, tensor[2].2.clone()), (4, vec![3]));
    }

    #[test]
    fn rejects_image_pointers() {
        let mut d = sft_datum();
        d.model_input.push(ModelInputChunk::ImageAssetPointer {
            format: "png".into(),
            location: "x".into(),
            expected_tokens: Some(1),
        });
        let req = ForwardBackwardRequest {
            model_id: "m",
            seq_id: 1,
            data: &[d],
            loss_fn: "cross_entropy",
            loss_fn_config: None,
            forward_only: false,
        };
        assert!(encode_forward_backward(&req)
            .unwrap_err()
            .contains("chunks[1]"));
    }

    // A tiny encoder for test responses.
    fn len(field: u32, b: &[u8]) -> Vec<u8> {
        let mut w = W { buf: vec![] };
        w.bytes(field, b);
        w.buf
    }
    fn var(field: u32, v: u64) -> Vec<u8> {
        let mut w = W { buf: vec![] };
        w.key(field, WT_VARINT);
        w.varint(v);
        w.buf
    }

    #[test]
    fn decodes_forward_backward_output_with_widening() {
        // One record, 2 datums, field logprobs in BF16 (3 + 1 elements), metric loss:sum.
        let bf = |x: f32| (x.to_bits() >> 16) as u16;
        let data: Vec<u8> = [bf(-1.0), bf(-2.0), bf(-0.5), bf(-4.0)]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        let offsets: Vec<u8> = [0i64, 6, 8].iter().flat_map(|v| v.to_le_bytes()).collect();
        let bt = [len(1, &data), len(2, &offsets), var(3, 4)].concat();
        let entry = [len(1, b"logprobs"), len(2, &bt)].concat();
        let record = [len(1, b"ArrayRecord"), len(2, &entry), var(3, 2)].concat();
        let mut metric = len(1, b"loss:sum");
        let mut w = W { buf: vec![] };
        w.double(2, 7.5);
        metric.extend(w.buf);
        let msg = [
            len(1, b"tinker.types:ArrayRecord"),
            len(2, &record),
            len(3, &metric),
        ]
        .concat();
        let out = decode_forward_backward_output(&msg).unwrap();
        assert_eq!(out.loss_fn_output_type, "ArrayRecord");
        assert_eq!(out.metrics["loss:sum"], 7.5);
        assert_eq!(out.loss_fn_outputs.len(), 2);
        assert_eq!(
            out.loss_fn_outputs[0]["logprobs"].as_f32(),
            Some(&[-1.0, -2.0, -0.5][..])
        );
        assert_eq!(out.loss_fn_outputs[1]["logprobs"].shape, Some(vec![1]));
        // Truncations are errors, never panics.
        for cut in 0..msg.len() {
            let _ = decode_forward_backward_output(&msg[..cut]);
        }
    }

    #[test]
    fn decodes_sample_response_and_attaches_ids() {
        let toks: Vec<u8> = [5i32, 6].iter().flat_map(|v| v.to_le_bytes()).collect();
        let lps: Vec<u8> = [-0.1f32, -0.2]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        let seq = [var(1, 1), len(2, &toks), len(3, &lps)].concat();
        let plp: Vec<u8> = [f32::NAN, -3.0]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        let msg = [len(1, &seq), len(2, &plp), var(4, 2)].concat();
        let out = decode_sample_response(&msg, &["s-1".to_string()]).unwrap();
        assert_eq!(out.sequences[0].tokens, vec![5, 6]);
        assert_eq!(out.sequences[0].stop_reason, StopReason::Length);
        assert_eq!(out.sequences[0].sequence_id, "s-1");
        assert!(out.prompt_logprobs.as_ref().unwrap()[0].is_nan());
        assert_eq!(out.prompt_cache_hit_tokens, 2);
        assert!(decode_sample_response(&msg, &[]).is_err());
        for cut in 0..msg.len() {
            let _ = decode_sample_response(&msg[..cut], &["s-1".to_string()]);
        }
    }
}
