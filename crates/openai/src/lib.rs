//! # tinker-openai
//!
//! The OpenAI API shape over Tinker sampling, in pure Rust: what a handler decides between
//! the HTTP request and the sample call, and between the sample and the response. The
//! driver (JS: `openaiFetch`) routes, renders, samples and parses; this crate reads the
//! request ([`request`]: the parameters checked, errors naming them), converts OpenAI
//! messages and tools into the renderers' ([`messages`]), and writes the answers as
//! OpenAI responses and stream chunks ([`response`]).
#![warn(missing_docs)]

pub mod error;
pub mod messages;
pub mod request;
pub mod response;

pub use error::ApiError;
