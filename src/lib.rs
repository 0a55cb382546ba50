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
//! The core's modules fall into four layers, one folder each (each only uses its own
//! and the ones before it; `src/tests/structure.rs` checks this, and that no module
//! imports its way back to itself):
//!
//! * **support** (`src/support/`), private utilities: `json`, `float`, `map`, `base64`,
//!   `sync`, `zstd`;
//! * **transport seam** (`src/platform.rs`): [`platform`];
//! * **wire protocol** ([`wire`]): [`types`], [`proto`], [`config`], [`endpoints`],
//!   [`paths`], [`handle`], [`error`];
//! * **client behaviour** ([`client`]): [`options`], [`retry`], [`http`], [`call`], [`chunking`],
//!   [`metrics`], [`telemetry`], [`sequencer`], [`session`], `admission`,
//!   `sampling_retry`, [`future`], `poller`, [`sampling`], [`training`], [`rest`],
//!   [`service`].
#![warn(missing_docs)]

// The layers, one folder each (lowest first; `src/tests/structure.rs` checks that each
// imports only from its own and the ones before it):
// support → transport seam (`platform.rs`) → wire protocol → client behaviour.
// Their modules are re-exported here, so paths stay short (`crate::json`,
// `tinker_wasm::training`). The fuzz targets reach the private utilities through the
// `fuzzing` feature's re-exports (below), never as public API.
mod support;

pub mod platform;

pub mod wire;

pub mod client;

pub(crate) use client::{admission, poller, sampling_retry};
pub use client::{
    call, chunking, future, http, metrics, options, rest, retry, sampling, sequencer, service,
    session, telemetry, training,
};
pub(crate) use support::{base64, float, json, map, sync, text, zstd};
pub use wire::{config, endpoints, error, handle, paths, proto, types};

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
    /// A prepared tokenizer form around any body (the header and checksum made for it).
    #[cfg(feature = "tokenizer")]
    pub fn seal_prepared(body: &[u8]) -> Vec<u8> {
        crate::tokenizer::seal_prepared(body)
    }
    pub use crate::zstd::{compress, compress_with};
}

#[cfg(test)]
mod tests;

/// The SDK version, as published on npm and sent to the server.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

#[cfg(target_arch = "wasm32")]
mod wasm;
