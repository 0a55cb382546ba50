//! Narrow unit tests of the core's protocol state machines against a scripted platform
//! (a virtual clock and a handler closure playing the server). End-to-end behaviour is
//! tested against the real simulator in `tests/`.

mod scripted;

/// A xorshift64 stream: deterministic pseudo-random test inputs from `seed` (non-zero).
pub(crate) fn xorshift(mut seed: u64) -> impl FnMut() -> u64 {
    move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    }
}

mod http_retries;
mod pauses;
mod polling;
mod sampler_handles;
mod sampling_clones;
mod sampling_stuck;
mod structure;
mod telemetry;
mod training_order;
