//! # tinker-wasm
//!
//! A client SDK for the [Tinker](https://thinkingmachines.ai/tinker) fine-tuning API,
//! compiled to WebAssembly for browsers, Node, Bun, Deno and Cloudflare Workers.
//!
//! This crate is the **thin `wasm-bindgen` skin** (`src/wasm`, compiled only for
//! `wasm32`) that turns the workspace's pure Rust crates into promise-returning
//! JavaScript classes over `fetch` and `setTimeout`:
//!
//! * `tinker-support` (`crates/support`): JSON, Python's float repr, maps, base64,
//!   cancellation, zstd, the input error;
//! * `tinker-core` (`crates/core`): the platform seam, the wire protocol and the client's
//!   behaviour;
//! * `tinker-tokenizer` (`crates/tokenizer`, with its general engine
//!   `tinker-tokenizer-general` beside it) and `tinker-renderers` (`crates/renderers`)
//!   (feature `tokenizer`).
//!
//! Each crate has its own structure test (layers, no cycles, short functions). Rust code
//! (the end-to-end tests, the examples, the fuzz targets) uses those crates directly:
//! this one is only a `cdylib`. As an `rlib` too, it would export its generic
//! instantiations to other crates, which keeps them out of the optimiser's reach before
//! the link: the lite module measured 4.6 KB (gzip) larger (tests/NOTES-issue32-split.md).
#![warn(missing_docs)]

// The skin writes `crate::training`, `crate::json`, … as the core does.
#[cfg(target_arch = "wasm32")]
use tinker_core::*;

/// Tokenization, chat templates and renderers, as the skin names them.
#[cfg(all(feature = "tokenizer", target_arch = "wasm32"))]
mod tokenization {
    pub use tinker_renderers as renderers;
    pub use tinker_renderers::{StopSequences, TrainOnWhat};
    pub use tinker_tokenizer::*;
}

#[cfg(target_arch = "wasm32")]
mod wasm;
