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

    /// Runs an oracle program (`python3`, `node`, the conformance venv's Python) with
    /// `input` on its stdin and returns its output lines; panics naming it when it cannot
    /// run or fails. The input is written from another thread, so an oracle that answers
    /// as it reads never blocks on a full pipe. (Native only: tests run natively.)
    #[cfg(not(target_arch = "wasm32"))]
    pub fn oracle(program: &str, args: &[&str], input: &str) -> Vec<String> {
        use std::io::Write;
        use std::process::{Command, Stdio};
        let mut child = Command::new(program)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run the oracle {program}: {e}"));
        let mut stdin = child.stdin.take().expect("a piped stdin");
        let input = input.to_owned();
        let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
        let out = child.wait_with_output().expect("the oracle ran");
        writer
            .join()
            .expect("the writer thread")
            .expect("input written");
        assert!(out.status.success(), "the oracle {program} failed");
        String::from_utf8(out.stdout)
            .expect("UTF-8 output")
            .lines()
            .map(str::to_owned)
            .collect()
    }
}
