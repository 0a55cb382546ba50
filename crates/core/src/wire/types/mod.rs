//! Tinker wire types.
//!
//! Field names are the wire's (snake_case), exactly as the Python SDK 0.38 sends them,
//! so a JSON body produced here is byte-for-byte comparable with the reference client's.
//! Validation happens when a value is built or checked ([`Datum::validate`]), never by
//! panicking: every failure is an [`InputError`] naming the field path and the value.

mod datum;

mod model_input;
mod params;
mod tensor;

pub use datum::{
    loss_input_dtype, validate_loss_fn, Datum, LossFnInputs, ProvenanceSpan, LOSS_FNS,
};
pub use model_input::{ModelInput, ModelInputChunk};
pub use params::{AdamParams, LoraConfig, OptimizerConfig, SamplingParams, StopCondition};
pub use tensor::{DType, TensorData, TensorValues};
pub use tinker_support::input::{fmt_num, InputError, InputErrorKind, MAX_ELEMENTS};
