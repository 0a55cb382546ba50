//! End-to-end tests of the Rust core against a real tinker-sim process.

mod native;
mod rest;
mod sampling;
mod training;
