//! Client behaviour: options, retries, the HTTP call, chunking, metric reduction,
//! telemetry, request sequencing, sessions and heartbeats, sampling admission, future
//! polling, and the training, sampling, REST and service clients built from them.

pub(crate) mod admission;
pub mod call;
pub mod chunking;
pub mod environment;
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
