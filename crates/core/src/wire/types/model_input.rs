use super::InputError;
use crate::json;
use crate::json::ObjectWriter;

/// The model's input: a sequence of chunks (text tokens, images, audio).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ModelInput {
    /// The chunks, in order.
    pub chunks: Vec<ModelInputChunk>,
}

/// One chunk of a [`ModelInput`], tagged by `type` on the wire.
#[derive(Debug, Clone, PartialEq)]
pub enum ModelInputChunk {
    /// Token ids.
    EncodedText {
        /// The token ids.
        tokens: Vec<u32>,
    },
    /// An inline image (base64 in JSON, raw bytes in protobuf).
    Image {
        /// The encoded image bytes.
        data: Vec<u8>,
        /// `"png"` or `"jpeg"`.
        format: String,
        /// Tokens the image is expected to occupy (needed to compute lengths).
        expected_tokens: Option<u32>,
    },
    /// An image referenced by location (JSON sampling prompts only).
    ImageAssetPointer {
        /// `"png"` or `"jpeg"`.
        format: String,
        /// Path or URL of the image.
        location: String,
        /// Tokens the image is expected to occupy.
        expected_tokens: Option<u32>,
    },
    /// Audio DMel tokens in a serialized TensorContainer.
    Dmel {
        /// The TensorContainer bytes.
        dmel: Vec<u8>,
    },
}

impl ModelInput {
    /// Appends the wire JSON, `{"chunks":[{"type":"encoded_text","tokens":[…]},…]}`
    /// (bytes as standard base64, `expected_tokens` only when set), as the Python SDK
    /// sends it.
    pub fn write_json(&self, out: &mut String) {
        out.push_str("{\"chunks\":[");
        for (i, c) in self.chunks.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            c.write_json(out);
        }
        out.push_str("]}");
    }

    /// A single text chunk of token ids (Python `ModelInput.from_ints`).
    pub fn from_ints(tokens: Vec<u32>) -> Self {
        ModelInput {
            chunks: vec![ModelInputChunk::EncodedText { tokens }],
        }
    }
    /// An input with no chunks.
    pub fn empty() -> Self {
        ModelInput::default()
    }
    /// All token ids, if every chunk is text.
    pub fn to_ints(&self) -> Result<Vec<u32>, InputError> {
        let mut out = Vec::new();
        for (i, c) in self.chunks.iter().enumerate() {
            match c {
                ModelInputChunk::EncodedText { tokens } => out.extend_from_slice(tokens),
                other => {
                    return Err(InputError::type_error(
                        format!("chunks[{i}]"),
                        format!(
                            "to_ints needs text chunks only, found a {} chunk",
                            other.type_name()
                        ),
                    ))
                }
            }
        }
        Ok(out)
    }
    /// Context positions the input occupies.
    pub fn length(&self) -> Result<usize, InputError> {
        self.chunks
            .iter()
            .enumerate()
            .try_fold(0usize, |acc, (i, c)| {
                Ok(acc + c.length().map_err(|e| e.within(&format!("chunks[{i}]")))?)
            })
    }
    /// Number of text tokens (images and audio not counted).
    pub fn num_text_tokens(&self) -> usize {
        self.chunks
            .iter()
            .map(|c| {
                if let ModelInputChunk::EncodedText { tokens } = c {
                    tokens.len()
                } else {
                    0
                }
            })
            .sum()
    }
    /// Checks every chunk (formats, token id range, lengths computable).
    pub fn validate(&self) -> Result<(), InputError> {
        for (i, c) in self.chunks.iter().enumerate() {
            c.validate()
                .map_err(|e| e.within(&format!("chunks[{i}]")))?;
        }
        Ok(())
    }
    /// Appends a chunk.
    pub fn push(&mut self, chunk: ModelInputChunk) {
        self.chunks.push(chunk);
    }
}

impl ModelInputChunk {
    /// Appends the wire JSON of this chunk (`{"type":…,…}`).
    pub fn write_json(&self, out: &mut String) {
        let mut w = ObjectWriter::new(out);
        w.str("type", self.type_name());
        let b64 = |b: &[u8]| crate::base64::encode(b, false, true);
        match self {
            ModelInputChunk::EncodedText { tokens } => json::write_u32s(w.key("tokens"), tokens),
            ModelInputChunk::Image {
                data,
                format,
                expected_tokens,
            } => {
                w.str("data", &b64(data)).str("format", format);
                if let Some(n) = expected_tokens {
                    w.u64("expected_tokens", u64::from(*n));
                }
            }
            ModelInputChunk::ImageAssetPointer {
                format,
                location,
                expected_tokens,
            } => {
                w.str("format", format).str("location", location);
                if let Some(n) = expected_tokens {
                    w.u64("expected_tokens", u64::from(*n));
                }
            }
            ModelInputChunk::Dmel { dmel } => {
                w.str("dmel", &b64(dmel));
            }
        }
        w.end();
    }

    /// The wire `type` tag.
    pub fn type_name(&self) -> &'static str {
        match self {
            ModelInputChunk::EncodedText { .. } => "encoded_text",
            ModelInputChunk::Image { .. } => "image",
            ModelInputChunk::ImageAssetPointer { .. } => "image_asset_pointer",
            ModelInputChunk::Dmel { .. } => "dmel",
        }
    }

    /// Context positions this chunk occupies.
    pub fn length(&self) -> Result<usize, InputError> {
        match self {
            ModelInputChunk::EncodedText { tokens } => Ok(tokens.len()),
            ModelInputChunk::Image {
                expected_tokens, ..
            }
            | ModelInputChunk::ImageAssetPointer {
                expected_tokens, ..
            } => expected_tokens.map(|n| n as usize).ok_or_else(|| {
                InputError::type_error(
                    "expected_tokens",
                    "must be set to compute the length of an image chunk",
                )
            }),
            ModelInputChunk::Dmel { dmel } => tensor_container_shape(dmel)
                .map_err(|m| InputError::type_error("dmel", m))?
                .first()
                .map(|&d| d as usize)
                .ok_or_else(|| {
                    InputError::type_error("dmel", "TensorContainer tensor has no dimension 0")
                }),
        }
    }

    /// Bytes this chunk adds to the Python SDK's request-size estimate.
    pub fn estimated_bytes(&self) -> usize {
        match self {
            ModelInputChunk::EncodedText { tokens } => tokens.len() * 4,
            ModelInputChunk::Image { data, .. } => data.len(),
            ModelInputChunk::ImageAssetPointer { location, .. } => location.len(),
            ModelInputChunk::Dmel { dmel } => dmel.len(),
        }
    }

    fn validate(&self) -> Result<(), InputError> {
        match self {
            ModelInputChunk::EncodedText { tokens } => {
                if tokens.len() > super::MAX_ELEMENTS {
                    return Err(InputError::range_error(
                        "tokens",
                        format!(
                            "has {} elements; at most {} are accepted",
                            tokens.len(),
                            super::MAX_ELEMENTS
                        ),
                    ));
                }
                if let Some(i) = tokens.iter().position(|&t| t > i32::MAX as u32) {
                    return Err(InputError::range_error(
                        format!("tokens[{i}]"),
                        format!("token id {} is out of range (0..2^31)", tokens[i]),
                    ));
                }
                Ok(())
            }
            ModelInputChunk::Image { format, .. }
            | ModelInputChunk::ImageAssetPointer { format, .. } => {
                if format != "png" && format != "jpeg" {
                    return Err(InputError::range_error(
                        "format",
                        format!("must be \"png\" or \"jpeg\", got {}", json::quote(format)),
                    ));
                }
                Ok(())
            }
            ModelInputChunk::Dmel { dmel } => tensor_container_shape(dmel)
                .map(|_| ())
                .map_err(|m| InputError::type_error("dmel", m)),
        }
    }
}

/// Reads the shape from a TensorContainer header (optional 0xFE marker, a dtype byte in
/// 0..=7, a LEB128 `ndim`, then `ndim` LEB128 dimensions), as the Python SDK does.
pub(crate) fn tensor_container_shape(data: &[u8]) -> Result<Vec<u64>, String> {
    let mut at = 0usize;
    if data.is_empty() {
        return Err("TensorContainer bytes are empty".into());
    }
    if data[0] == 254 {
        at = 1;
    }
    let dtype = *data.get(at).ok_or("Truncated TensorContainer header")?;
    if dtype > 7 {
        return Err(format!("Unknown TensorContainer dtype byte: {dtype}"));
    }
    at += 1;
    let varint = |at: &mut usize| -> Result<u64, String> {
        let (mut v, mut shift) = (0u64, 0u32);
        loop {
            let b = *data.get(*at).ok_or("Truncated TensorContainer header")?;
            *at += 1;
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
            shift += 7;
            if shift > 63 {
                return Err("TensorContainer varint is too long".into());
            }
        }
    };
    let ndim = varint(&mut at)?;
    if ndim > 64 {
        return Err(format!("TensorContainer has {ndim} dimensions"));
    }
    (0..ndim).map(|_| varint(&mut at)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_matches_the_python_sdk() {
        let json = |m: &ModelInput| {
            let mut s = String::new();
            m.write_json(&mut s);
            s
        };
        let mut m = ModelInput::from_ints(vec![1, 2, 3]);
        assert_eq!(
            json(&m),
            r#"{"chunks":[{"type":"encoded_text","tokens":[1,2,3]}]}"#
        );
        m.chunks = vec![
            ModelInputChunk::Image {
                data: vec![0, 1, 2],
                format: "png".into(),
                expected_tokens: Some(4),
            },
            ModelInputChunk::ImageAssetPointer {
                format: "jpeg".into(),
                location: "s3://b/k".into(),
                expected_tokens: None,
            },
            ModelInputChunk::Dmel { dmel: vec![255] },
        ];
        assert_eq!(
            json(&m),
            concat!(
                r#"{"chunks":[{"type":"image","data":"AAEC","format":"png","expected_tokens":4},"#,
                r#"{"type":"image_asset_pointer","format":"jpeg","location":"s3://b/k"},"#,
                r#"{"type":"dmel","dmel":"/w=="}]}"#
            )
        );
    }

    #[test]
    fn lengths_and_validation() {
        let mut m = ModelInput::from_ints(vec![5, 6]);
        m.push(ModelInputChunk::Image {
            data: vec![1],
            format: "png".into(),
            expected_tokens: Some(3),
        });
        assert_eq!(m.length().unwrap(), 5);
        assert_eq!(m.num_text_tokens(), 2);
        assert!(m.to_ints().is_err());
        m.push(ModelInputChunk::Image {
            data: vec![1],
            format: "gif".into(),
            expected_tokens: None,
        });
        assert_eq!(m.validate().unwrap_err().field, "chunks[2].format");
        assert_eq!(m.length().unwrap_err().field, "chunks[2].expected_tokens");
        let bad = ModelInput::from_ints(vec![1, u32::MAX]);
        assert_eq!(bad.validate().unwrap_err().field, "chunks[0].tokens[1]");
    }

    #[test]
    fn tensor_container_header() {
        assert_eq!(
            tensor_container_shape(&[1, 2, 0x81, 0x01, 7]).unwrap(),
            vec![129, 7]
        );
        assert_eq!(tensor_container_shape(&[254, 1, 1, 3]).unwrap(), vec![3]);
        assert!(tensor_container_shape(&[9, 1, 1]).is_err());
        assert!(tensor_container_shape(&[1, 1]).is_err());
        assert!(tensor_container_shape(&[]).is_err());
    }
}
