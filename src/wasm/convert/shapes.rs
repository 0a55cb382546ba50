//! The data shapes the hot data path reads (`Datum`, `ModelInput`, its chunks, `TensorData`,
//! `ProvenanceSpan`), each declared once: its TypeScript and doc text, and the keys its
//! reader in this module allows (`KEYS`).

use super::declare_shapes;

declare_shapes! {
    ts = SHAPES_TS;

    /// One training example: input position i predicts `target_tokens[i]`.
    Datum {
        /// The input: a ModelInput, or token ids.
        "model_input" => ": ModelInput | Uint32Array | Int32Array | ArrayLike<number>",
        /// The loss function's inputs by name (`target_tokens`, `weights`, `advantages`, …): tensors or flat arrays.
        "loss_fn_inputs" => ": Record<string, TensorData | Float32Array | Int32Array | Uint32Array | ArrayLike<number>>",
        /// Where the input's positions came from (with `loss_fn_input_spans`: both or neither), as Python's `Datum.with_provenance`.
        "model_input_spans" => "?: ProvenanceSpan[] | null",
        /// Where the loss inputs' positions came from (with `model_input_spans`).
        "loss_fn_input_spans" => "?: ProvenanceSpan[] | null",
    }

    /// The model's input: a sequence of chunks. Where a ModelInput is expected, an array of token ids also works.
    ModelInput {
        /// The chunks, in order.
        "chunks" => ": ModelInputChunk[]",
    }

    /// A chunk of token ids.
    EncodedTextChunk {
        /// Token ids.
        "type" => ": 'encoded_text'",
        /// The token ids.
        "tokens" => ": Uint32Array | Int32Array | ArrayLike<number>",
    }

    /// An inline image.
    ImageChunk {
        /// An inline image.
        "type" => ": 'image'",
        /// The encoded image bytes, or a base64 string of them.
        "data" => ": Uint8Array | ArrayBuffer | string",
        /// The image's encoding.
        "format" => ": 'png' | 'jpeg'",
        /// Context positions the image occupies (advisory to the server; needed to compute lengths).
        "expected_tokens" => "?: number",
    }

    /// An image referenced by location (sampling prompts only).
    ImageAssetPointerChunk {
        /// An image referenced by location.
        "type" => ": 'image_asset_pointer'",
        /// Path or URL of the image.
        "location" => ": string",
        /// The image's encoding.
        "format" => ": 'png' | 'jpeg'",
        /// Context positions the image occupies (advisory to the server; needed to compute lengths).
        "expected_tokens" => "?: number",
    }

    /// Audio as DMel tokens.
    DmelChunk {
        /// Audio DMel tokens.
        "type" => ": 'dmel'",
        /// The serialized TensorContainer of the DMel token tensor: bytes, or a base64 string of them.
        "dmel" => ": Uint8Array | ArrayBuffer | string",
    }

    /// A tensor: flat row-major data, a dtype, and an optional shape (and optional sparse CSR layout).
    TensorData {
        /// The values, flat in row-major order (only the stored values when sparse).
        "data" => ": Float32Array | Float64Array | Int32Array | Uint32Array | BigInt64Array | ArrayLike<number>",
        /// Defaults by input name (`target_tokens` int64; `weights`, `advantages`, `logprobs` float32) or typed-array kind.
        "dtype" => "?: 'float32' | 'int64'",
        /// The dense shape; absent: one dimension. Required when sparse.
        "shape" => "?: number[]",
        /// Sparse CSR row pointers (length rows + 1); set with `sparse_col_indices`.
        "sparse_crow_indices" => "?: ArrayLike<number>",
        /// Sparse CSR column indices, one per stored value; set with `sparse_crow_indices`.
        "sparse_col_indices" => "?: ArrayLike<number>",
    }

    /// Positions of a datum taken from a sampled sequence: from its prompt or from its sampled tokens.
    ProvenanceSpan {
        /// Which part of the sequence.
        "type" => ": 'prompt_tokens' | 'sampled_tokens'",
        /// The sampled sequence's `sequence_id`.
        "sequence_id" => ": string",
        /// The first position in that part (default 0).
        "offset" => "?: number",
        /// How many positions.
        "length" => ": number",
    }
}

// The core reads provenance spans from JSON (tinker_core's `ProvenanceSpan::from_json`)
// with its own key list: the same keys, in the same order, or the module does not compile.
const _: () = assert!(super::declare::same_strs(
    ProvenanceSpan::KEYS,
    crate::types::ProvenanceSpan::KEYS
));
