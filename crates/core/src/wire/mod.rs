//! The wire protocol: request and response types, the protobuf and JSON encodings,
//! client configuration, every endpoint as data, `tinker://` paths, sampler handles
//! and errors. Uses only `support` and the `platform` seam.

pub mod config;
pub mod endpoints;
pub mod error;
pub mod handle;
pub mod paths;
pub mod proto;
pub mod types;
