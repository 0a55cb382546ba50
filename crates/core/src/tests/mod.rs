//! Narrow unit tests of the core's protocol state machines against a scripted platform
//! (a virtual clock and a handler closure playing the server). End-to-end behaviour is
//! tested against the real simulator in `tests/`.

mod scripted;

mod backpressure;
mod credentials;
mod http_retries;
mod pauses;
mod polling;
mod sampler_handles;
mod sampling_clones;
mod sampling_stuck;
mod telemetry;
mod training_order;
