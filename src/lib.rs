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
#![warn(missing_docs)]

pub mod base64;
pub mod call;
pub mod chunking;
pub mod config;
pub mod error;
pub mod float;
pub mod future;
pub mod handle;
pub mod http;
pub mod json;
pub mod map;
pub mod metrics;
pub mod paths;
pub mod platform;
pub mod proto;
pub mod rest;
pub mod retry;
pub mod sampling;
pub mod sequencer;
pub mod service;
pub mod session;
pub mod sync;
pub mod telemetry;
/// Tokenization, chat templates and SFT/RL renderers (feature `tokenizer`).
#[cfg(feature = "tokenizer")]
pub mod tokenizer;
pub mod training;
pub mod types;
pub mod zstd;

#[cfg(test)]
mod tests;

/// The SDK version, as published on npm and sent to the server.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

#[cfg(target_arch = "wasm32")]
mod wasm;
