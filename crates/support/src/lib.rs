//! The support layer of tinker-wasm: utilities every other crate of the workspace shares
//! (JSON and Python's float repr, string-keyed maps, base64, the cancellation token, zstd
//! frames, substring search, and [`input::InputError`], the error bad caller input
//! gets). Nothing here knows of the protocol, the tokenizer or JavaScript; none of it is
//! the SDK's public API (the client core re-exports the few types that appear there).
#![warn(missing_docs)]

pub mod base64;
pub mod float;
pub mod input;
pub mod json;
pub mod map;
pub mod sort;
pub mod sync;
pub mod text;
pub mod time;
pub mod zstd;

/// Helpers for the workspace's tests (not API).
#[doc(hidden)]
pub mod testing {
    /// A xorshift64 stream: deterministic pseudo-random test inputs from `seed` (non-zero).
    pub fn xorshift(mut seed: u64) -> impl FnMut() -> u64 {
        move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        }
    }
}
