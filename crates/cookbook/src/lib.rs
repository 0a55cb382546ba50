//! # tinker-cookbook
//!
//! The logic of tinker-cookbook 0.6.1's training methods, in pure Rust: what the
//! cookbook computes between API calls, so that a JS run sends what the Python run sends.
//! Today: the learning-rate schedules ([`schedule`]), the recommended learning rates
//! ([`hyperparams`]), numpy's seeded permutation that orders the cookbook's data
//! ([`rng`]), conversation files and their split and epoch order ([`data`]), a supervised
//! run's steps, rates, evaluations and saves ([`plan`]), its checkpoint records
//! ([`checkpoints`]), its config as a caller gives it ([`config`]) and the state machine of
//! the whole run ([`sft`]). The schedules, rates and permutations are compared with the
//! cookbook and numpy themselves by `tests/cookbook/oracle.py` (`make test-cookbook`).
#![warn(missing_docs)]

pub mod checkpoints;
pub mod completers;
pub mod config;
pub mod data;
pub mod dpo;
pub mod hyperparams;
pub mod nll;
pub mod plan;
pub mod rl;
pub mod rl_async;
pub mod rl_kl;
pub mod rl_loop;
pub mod rl_metrics;
pub mod rng;
pub mod schedule;
pub mod sft;

pub use hyperparams::{get_lr, LrError};
pub use rng::NumpyRng;
pub use schedule::LrSchedule;
