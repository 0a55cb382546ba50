//! # tinker-wasm
//!
//! A client SDK for the [Tinker](https://thinkingmachines.ai/tinker) fine-tuning API,
//! compiled to WebAssembly for browsers, Node, Bun, Deno and Cloudflare Workers.
//!
//! This crate is the **thin `wasm-bindgen` skin** (`src/wasm`, compiled only for
//! `wasm32`) that turns the workspace's pure Rust crates into promise-returning
//! JavaScript classes over `fetch` and `setTimeout`, and re-exports those crates natively
//! under one name:
//!
//! * `tinker-support` (`crates/support`): JSON, Python's float repr, maps, base64,
//!   cancellation, zstd, the input error;
//! * `tinker-core` (`crates/core`): the platform seam, the wire protocol and the client's
//!   behaviour, re-exported at this crate's root ([`training`], [`sampling`], [`types`], …);
//! * `tinker-tokenizer` (`crates/tokenizer`, with its general engine
//!   `tinker-tokenizer-general` beside it) and `tinker-renderers` (`crates/renderers`),
//!   as [`tokenizer`] and [`tokenizer::renderers`] (feature `tokenizer`).
//!
//! Each crate has its own structure test (layers, no cycles, short functions).
#![warn(missing_docs)]

pub use tinker_core::*;

// The core re-exports the support modules under their short names (hidden), so the skin
// writes `crate::json`, `crate::sync`, … as the core does.

/// Tokenization, chat templates and SFT/RL renderers (feature `tokenizer`): the
/// `tinker-tokenizer` crate, with `tinker-renderers` as [`renderers`](tokenizer::renderers).
#[cfg(feature = "tokenizer")]
pub mod tokenizer {
    pub use tinker_renderers as renderers;
    pub use tinker_renderers::{
        conversation_to_datum, datum_from_model_input_weights, Message, Reduction, Renderer,
        RendererOptions, StopSequences, Supervised, Termination, TrainOnWhat,
    };
    pub use tinker_tokenizer::*;
}

/// The private utilities the fuzz targets (`fuzz/`) exercise directly: the JSON parser
/// and printer, and the zstd compressor. Only with the `fuzzing` feature, which only
/// the fuzz crate enables: not part of the API.
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing {
    pub use tinker_support::json::{from_slice, FromJson};
    pub use tinker_support::zstd::{compress, compress_with};
    #[cfg(feature = "tokenizer")]
    pub use tinker_tokenizer::{seal_prepared, split_pieces};
}

#[cfg(target_arch = "wasm32")]
mod wasm;
