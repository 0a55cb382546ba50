//! # tinker-core
//!
//! The pure Rust client core of tinker-wasm, the client SDK for the
//! [Tinker](https://thinkingmachines.ai/tinker) fine-tuning API. It knows nothing of
//! JavaScript: all IO goes through one seam, [`platform::Platform`] (send an HTTP request,
//! sleep, read the clock, draw a random number, spawn a task), so it is tested natively
//! with `cargo test`; the `tinker-wasm` crate puts it behind promise-returning JavaScript
//! classes over `fetch` and `setTimeout`.
//!
//! Its modules fall into layers, one folder each (each only uses its own and the ones
//! before it; `src/tests/structure.rs` checks this, and that no module imports its way
//! back to itself), over the support crate (`tinker-support`: `json`, `float`, `map`,
//! `base64`, `sync`, `text`, `zstd`, `input`):
//!
//! * **transport seam** (`src/platform.rs`): [`platform`];
//! * **wire protocol** ([`wire`]): [`types`], [`proto`], [`config`], [`endpoints`],
//!   [`paths`], [`handle`], [`error`];
//! * **client behaviour** ([`client`]): [`options`], [`retry`], [`http`], [`call`], [`chunking`],
//!   [`metrics`], [`telemetry`], [`sequencer`], [`session`], `admission`,
//!   `sampling_retry`, [`future`], `poller`, [`sampling`], [`training`], [`rest`],
//!   [`service`].
#![warn(missing_docs)]

// The layers, one folder each (lowest first; `src/tests/structure.rs` checks that each
// imports only from its own and the ones before it): the support crate → transport seam
// (`platform.rs`) → wire protocol → client behaviour. Their modules are re-exported here,
// so paths stay short (`crate::json`, `tinker_core::training`).
pub mod platform;

pub mod wire;

pub mod client;

pub(crate) use client::{admission, poller, sampling_retry};
pub use client::{
    call, chunking, environment, future, http, metrics, options, rest, retry, sampling, sequencer,
    service, session, telemetry, training,
};
pub use wire::{config, endpoints, error, handle, paths, proto, types};
// The support crate's modules under their short names (`crate::json`, and `json!`).
#[doc(hidden)]
pub use tinker_support::{base64, float, json, map, sync, text, time, zstd};

// The support types that appear in the public API: JSON values (results, metadata),
// string-keyed maps (metrics, metadata) and the cancellation token of `CallOptions`.
pub use json::{Map, Number, Value};
pub use map::StrMap;
pub use sync::CancelToken;

#[cfg(test)]
mod tests;

/// The SDK version, as published on npm and sent to the server.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
