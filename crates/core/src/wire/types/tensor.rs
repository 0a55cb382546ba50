use super::InputError;
use crate::json;
use crate::json::ObjectWriter;

/// Element type of a [`TensorData`] on the public wire (`"float32"` or `"int64"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DType {
    /// 32-bit float.
    Float32,
    /// 64-bit signed integer.
    Int64,
}

impl DType {
    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            DType::Float32 => 4,
            DType::Int64 => 8,
        }
    }
    /// The wire name.
    pub fn name(self) -> &'static str {
        match self {
            DType::Float32 => "float32",
            DType::Int64 => "int64",
        }
    }
}

/// Typed, flattened (row-major) tensor storage.
#[derive(Debug, Clone, PartialEq)]
pub enum TensorValues {
    /// float32 elements.
    Float32(Vec<f32>),
    /// int64 elements.
    Int64(Vec<i64>),
}

impl TensorValues {
    /// Number of stored elements.
    pub fn len(&self) -> usize {
        match self {
            TensorValues::Float32(v) => v.len(),
            TensorValues::Int64(v) => v.len(),
        }
    }
    /// Whether no element is stored.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The element type.
    pub fn dtype(&self) -> DType {
        match self {
            TensorValues::Float32(_) => DType::Float32,
            TensorValues::Int64(_) => DType::Int64,
        }
    }
}

/// A tensor as the Tinker API carries it: flattened data, a dtype, an optional shape
/// (absent = 1-D), and optionally a 2-D sparse CSR layout (`data` then holds only the
/// stored values; every other cell is 0).
#[derive(Debug, Clone, PartialEq)]
pub struct TensorData {
    /// The stored elements.
    pub values: TensorValues,
    /// Dense shape; `None` means 1-D of `values.len()`.
    pub shape: Option<Vec<usize>>,
    /// CSR row pointers (`nrows + 1` entries) when sparse.
    pub sparse_crow_indices: Option<Vec<i64>>,
    /// CSR column indices (one per stored value) when sparse.
    pub sparse_col_indices: Option<Vec<i64>>,
}

impl TensorData {
    /// A 1-D float32 tensor.
    pub fn from_f32(data: Vec<f32>) -> Self {
        let n = data.len();
        TensorData {
            values: TensorValues::Float32(data),
            shape: Some(vec![n]),
            sparse_crow_indices: None,
            sparse_col_indices: None,
        }
    }
    /// A 1-D int64 tensor.
    pub fn from_i64(data: Vec<i64>) -> Self {
        let n = data.len();
        TensorData {
            values: TensorValues::Int64(data),
            shape: Some(vec![n]),
            sparse_crow_indices: None,
            sparse_col_indices: None,
        }
    }
    /// Sets the dense shape.
    pub fn with_shape(mut self, shape: Vec<usize>) -> Self {
        self.shape = Some(shape);
        self
    }
    /// The element type.
    pub fn dtype(&self) -> DType {
        self.values.dtype()
    }
    /// Whether the tensor is stored as sparse CSR.
    pub fn is_sparse(&self) -> bool {
        self.sparse_crow_indices.is_some()
    }
    /// The dense shape (`[len]` when no shape was given).
    pub fn dense_shape(&self) -> Vec<usize> {
        self.shape
            .clone()
            .unwrap_or_else(|| vec![self.values.len()])
    }
    /// Length of the first dimension of the dense shape.
    pub fn leading_dim(&self) -> usize {
        self.dense_shape().first().copied().unwrap_or(0)
    }
    /// The float32 data, if that is the dtype.
    pub fn as_f32(&self) -> Option<&[f32]> {
        match &self.values {
            TensorValues::Float32(v) => Some(v),
            _ => None,
        }
    }
    /// The int64 data, if that is the dtype.
    pub fn as_i64(&self) -> Option<&[i64]> {
        match &self.values {
            TensorValues::Int64(v) => Some(v),
            _ => None,
        }
    }
    /// Estimated serialized size in bytes, as the Python SDK estimates it for chunking:
    /// element bytes in the dtype plus 8 bytes per CSR index.
    pub fn estimated_bytes(&self) -> usize {
        let idx = self.sparse_crow_indices.as_ref().map_or(0, Vec::len)
            + self.sparse_col_indices.as_ref().map_or(0, Vec::len);
        self.values.len() * self.dtype().size() + idx * 8
    }

    /// Checks internal consistency: shape vs. data length, CSR structure, finite floats.
    /// Errors name the offending part relative to this tensor (`shape`, `data[7]`, …).
    pub fn validate(&self) -> Result<(), InputError> {
        if self.values.len() > super::MAX_ELEMENTS {
            return Err(InputError::range_error(
                "data",
                format!(
                    "has {} elements; at most {} are accepted",
                    self.values.len(),
                    super::MAX_ELEMENTS
                ),
            ));
        }
        if let TensorValues::Float32(v) = &self.values {
            if let Some(i) = v.iter().position(|x| !x.is_finite()) {
                return Err(InputError::range_error(
                    format!("data[{i}]"),
                    format!(
                        "must be a finite number, got {}",
                        super::fmt_num(v[i] as f64)
                    ),
                ));
            }
        }
        match (&self.sparse_crow_indices, &self.sparse_col_indices) {
            (None, None) => {
                if let Some(shape) = &self.shape {
                    let n = shape.iter().try_fold(1usize, |a, &d| a.checked_mul(d));
                    if n != Some(self.values.len()) {
                        return Err(InputError::range_error(
                            "shape",
                            format!(
                                "shape {shape:?} holds {} elements but data has {}",
                                n.map_or("too many".into(), |n| n.to_string()),
                                self.values.len()
                            ),
                        ));
                    }
                }
                Ok(())
            }
            (Some(crow), Some(col)) => {
                let shape = match &self.shape {
                    Some(s) if s.len() == 2 => s,
                    other => {
                        return Err(InputError::type_error(
                            "shape",
                            format!("a sparse CSR tensor needs a 2-D shape, got {other:?}"),
                        ))
                    }
                };
                let (rows, cols) = (shape[0], shape[1]);
                if crow.len() != rows + 1 {
                    return Err(InputError::range_error(
                        "sparse_crow_indices",
                        format!(
                            "must have nrows + 1 = {} entries, got {}",
                            rows + 1,
                            crow.len()
                        ),
                    ));
                }
                if crow.first() != Some(&0)
                    || crow.windows(2).any(|w| w[1] < w[0])
                    || crow.last().copied() != Some(col.len() as i64)
                {
                    return Err(InputError::range_error(
                        "sparse_crow_indices",
                        "must start at 0, never decrease, and end at the number of stored values",
                    ));
                }
                if col.len() != self.values.len() {
                    return Err(InputError::range_error(
                        "sparse_col_indices",
                        format!(
                            "must have one entry per stored value ({}), got {}",
                            self.values.len(),
                            col.len()
                        ),
                    ));
                }
                if let Some(i) = col.iter().position(|&c| c < 0 || c as u64 >= cols as u64) {
                    return Err(InputError::range_error(
                        format!("sparse_col_indices[{i}]"),
                        format!("{} is outside 0..{cols}", col[i]),
                    ));
                }
                Ok(())
            }
            _ => Err(InputError::type_error(
                "sparse_crow_indices",
                "sparse_crow_indices and sparse_col_indices must be given together",
            )),
        }
    }
}

impl TensorData {
    /// Appends the wire JSON: `{"data":[…],"dtype":"int64","shape":[…]}`, with the CSR
    /// indices when sparse (float32 elements with their own shortest digits).
    pub fn write_json(&self, out: &mut String) {
        fn ints(out: &mut String, v: impl Iterator<Item = i64>) {
            out.push('[');
            for (i, x) in v.enumerate() {
                if i > 0 {
                    out.push(',');
                }
                json::write_i64(out, x);
            }
            out.push(']');
        }
        let mut w = ObjectWriter::new(out);
        match &self.values {
            TensorValues::Float32(v) => {
                let out = w.key("data");
                out.push('[');
                for (i, &x) in v.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    json::write_f32(out, x);
                }
                out.push(']');
            }
            TensorValues::Int64(v) => ints(w.key("data"), v.iter().copied()),
        }
        w.str("dtype", self.dtype().name());
        if let Some(shape) = &self.shape {
            ints(w.key("shape"), shape.iter().map(|&d| d as i64));
        }
        if let Some(c) = &self.sparse_crow_indices {
            ints(w.key("sparse_crow_indices"), c.iter().copied());
        }
        if let Some(c) = &self.sparse_col_indices {
            ints(w.key("sparse_col_indices"), c.iter().copied());
        }
        w.end();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_keeps_dtype_shape_and_float32_digits() {
        let json = |t: &TensorData| {
            let mut s = String::new();
            t.write_json(&mut s);
            s
        };
        assert_eq!(
            json(&TensorData::from_i64(vec![1, -2, 3])),
            r#"{"data":[1,-2,3],"dtype":"int64","shape":[3]}"#
        );
        let csr = TensorData {
            values: TensorValues::Float32(vec![0.1, 1.0]),
            shape: Some(vec![2, 3]),
            sparse_crow_indices: Some(vec![0, 1, 2]),
            sparse_col_indices: Some(vec![2, 0]),
        };
        assert_eq!(
            json(&csr),
            r#"{"data":[0.1,1.0],"dtype":"float32","shape":[2,3],"sparse_crow_indices":[0,1,2],"sparse_col_indices":[2,0]}"#
        );
    }

    #[test]
    fn validate_checks_shape_csr_and_finiteness() {
        assert!(TensorData::from_f32(vec![1.0; 6])
            .with_shape(vec![2, 3])
            .validate()
            .is_ok());
        let e = TensorData::from_f32(vec![1.0; 5])
            .with_shape(vec![2, 3])
            .validate()
            .unwrap_err();
        assert_eq!(e.field, "shape");
        let e = TensorData::from_f32(vec![1.0, f32::NAN])
            .validate()
            .unwrap_err();
        assert_eq!(e.field, "data[1]");
        let csr = TensorData {
            values: TensorValues::Float32(vec![0.5, 0.25]),
            shape: Some(vec![2, 3]),
            sparse_crow_indices: Some(vec![0, 1, 2]),
            sparse_col_indices: Some(vec![2, 0]),
        };
        assert!(csr.validate().is_ok());
        let mut bad = csr.clone();
        bad.sparse_col_indices = Some(vec![3, 0]);
        assert_eq!(bad.validate().unwrap_err().field, "sparse_col_indices[0]");
        let mut bad = csr;
        bad.sparse_crow_indices = Some(vec![0, 2, 1]);
        assert_eq!(bad.validate().unwrap_err().field, "sparse_crow_indices");
    }
}
