//! # tinker-wasm
//!
//! A client SDK for the [Tinker](https://thinkingmachines.ai/tinker) fine-tuning API.
//!
//! The crate has two layers:
//!
//! * a **pure Rust core** (every module below except `wasm`) that knows nothing of
//!   JavaScript: wire types, retries, future polling, request sequencing, chunking,
//!   metric reduction and tokenization. All IO goes through one seam,
//!   [`platform::Platform`] (send an HTTP request, sleep, read the clock, draw a random
//!   number, spawn a task), so the core is tested natively with `cargo test`;
//! * a **thin `wasm-bindgen` layer** (`src/wasm`, compiled only for `wasm32`) that turns
//!   the core into promise-returning JavaScript classes over `fetch` and `setTimeout`.
//!
//! The core's modules fall into four layers (each only uses its own and the ones
//! before it; `src/tests/structure.rs` checks this, and that no module imports its
//! way back to itself):
//!
//! * **support**, private utilities: `json`, `float`, `map`, `base64`, `sync`, `zstd`;
//! * **transport seam**: [`platform`];
//! * **wire protocol**: [`types`], [`proto`], [`config`], [`endpoints`], [`paths`],
//!   [`handle`], [`error`];
//! * **client behaviour**: [`options`], [`retry`], [`http`], [`call`], [`chunking`],
//!   [`metrics`], [`telemetry`], [`sequencer`], [`session`], `admission`,
//!   `sampling_retry`, [`future`], `poller`, [`sampling`], [`training`], [`rest`],
//!   [`service`].
#![warn(missing_docs)]

// Support: private utilities. The fuzz targets reach them through the `fuzzing`
// feature's re-exports (below), never as public API.
pub(crate) mod base64;
pub(crate) mod float;
pub(crate) mod json;
pub(crate) mod map;
pub(crate) mod sync;
pub(crate) mod zstd;

// Transport seam.
pub mod platform;

// Wire protocol.
pub mod config;
pub mod endpoints;
pub mod error;
pub mod handle;
pub mod paths;
pub mod proto;
pub mod types;

// Client behaviour.
pub(crate) mod admission;
pub mod call;
pub mod chunking;
pub mod future;
pub mod http;
pub mod metrics;
pub mod options;
pub(crate) mod poller;
pub mod rest;
pub mod retry;
pub mod sampling;
pub(crate) mod sampling_retry;
pub mod sequencer;
pub mod service;
pub mod session;
pub mod telemetry;
pub mod training;

/// Tokenization, chat templates and SFT/RL renderers (feature `tokenizer`).
#[cfg(feature = "tokenizer")]
pub mod tokenizer;

// The support types that appear in the public API: JSON values (results, metadata),
// string-keyed maps (metrics, metadata) and the cancellation token of `CallOptions`.
pub use json::{Map, Number, Value};
pub use map::StrMap;
pub use sync::CancelToken;
// `json!` for the whole crate (`crate::json!`); not exported.
pub(crate) use json::json;

/// The private utilities the fuzz targets (`fuzz/`) exercise directly: the JSON parser
/// and printer, and the zstd compressor. Only with the `fuzzing` feature, which only
/// the fuzz crate enables: not part of the API.
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing {
    pub use crate::json::{from_slice, FromJson};
    #[cfg(feature = "tokenizer")]
    pub use crate::tokenizer::split_pieces;
    pub use crate::zstd::compress;
}

#[cfg(test)]
mod tests;

/// The SDK version, as published on npm and sent to the server.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

#[cfg(target_arch = "wasm32")]
mod wasm;
