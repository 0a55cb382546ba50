//! `tinker://` checkpoint paths and Tinker Console URLs.
//!
//! A checkpoint path is `tinker://{training_run_id}/{kind}/{name}` with kind
//! `weights` (training state), `sampler_weights` (for sampling) or `external_weights`
//! (exported files). The REST API addresses a checkpoint by the run id and the
//! two-segment checkpoint id `{kind}/{name}`.

use std::fmt;

use crate::types::InputError;

/// The kind of a checkpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CheckpointType {
    /// Full training state (`weights/`), loadable with or without optimizer state.
    Training,
    /// Weights for sampling (`sampler_weights/`).
    Sampler,
    /// Exported files (`external_weights/`).
    External,
}

impl CheckpointType {
    /// The path segment.
    pub fn segment(self) -> &'static str {
        match self {
            CheckpointType::Training => "weights",
            CheckpointType::Sampler => "sampler_weights",
            CheckpointType::External => "external_weights",
        }
    }
    /// The type for a path segment.
    pub fn from_segment(s: &str) -> Option<Self> {
        match s {
            "weights" => Some(CheckpointType::Training),
            "sampler_weights" => Some(CheckpointType::Sampler),
            "external_weights" => Some(CheckpointType::External),
            _ => None,
        }
    }
    /// The API's name (`training`, `sampler`, `external`).
    pub fn as_str(self) -> &'static str {
        match self {
            CheckpointType::Training => "training",
            CheckpointType::Sampler => "sampler",
            CheckpointType::External => "external",
        }
    }
}

/// A parsed `tinker://` checkpoint path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TinkerPath {
    /// The training run (model) id, e.g. `{session}:train:0`.
    pub training_run_id: String,
    /// The checkpoint kind.
    pub checkpoint_type: CheckpointType,
    /// The checkpoint name.
    pub name: String,
}

const SCHEME: &str = "tinker://";

impl TinkerPath {
    /// Parses `tinker://{run}/{kind}/{name}`; errors name the problem and the value.
    pub fn parse(path: &str) -> Result<Self, InputError> {
        let bad = |why: &str| {
            InputError::type_error(
                "path",
                format!("invalid tinker path {}: {why}", crate::json::quote(path)),
            )
        };
        let rest = path
            .strip_prefix(SCHEME)
            .ok_or_else(|| bad("must start with tinker://"))?;
        let parts: Vec<&str> = rest.split('/').collect();
        if parts.len() != 3 {
            return Err(bad("expected tinker://<training_run_id>/<weights|sampler_weights|external_weights>/<name>"));
        }
        let checkpoint_type = CheckpointType::from_segment(parts[1])
            .ok_or_else(|| bad("the kind must be weights, sampler_weights or external_weights"))?;
        if parts[0].is_empty() || parts[2].is_empty() {
            return Err(bad("the training run id and the name must not be empty"));
        }
        Ok(TinkerPath {
            training_run_id: parts[0].to_string(),
            checkpoint_type,
            name: parts[2].to_string(),
        })
    }
    /// A path from its parts.
    pub fn new(training_run_id: &str, checkpoint_type: CheckpointType, name: &str) -> Self {
        TinkerPath {
            training_run_id: training_run_id.into(),
            checkpoint_type,
            name: name.into(),
        }
    }
    /// The REST API's checkpoint id: `{kind}/{name}`.
    pub fn checkpoint_id(&self) -> String {
        format!("{}/{}", self.checkpoint_type.segment(), self.name)
    }
}

impl fmt::Display for TinkerPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{SCHEME}{}/{}/{}",
            self.training_run_id,
            self.checkpoint_type.segment(),
            self.name
        )
    }
}

/// The Tinker Console.
pub const CONSOLE_BASE_URL: &str = "https://tinker.thinkingmachines.ai";

/// Percent-encodes everything but unreserved characters (Python `quote(s, safe='')`).
pub fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Console URLs, as the Python SDK builds them.
pub mod console {
    use super::{quote, CONSOLE_BASE_URL};
    /// A session's page.
    pub fn session(session_id: &str) -> String {
        format!("{CONSOLE_BASE_URL}/sessions/{session_id}")
    }
    /// A training run's page.
    pub fn training_run(training_run_id: &str) -> String {
        format!("{CONSOLE_BASE_URL}/training_runs/{training_run_id}")
    }
    /// A checkpoint's page.
    pub fn checkpoint(training_run_id: &str, checkpoint_id: &str) -> String {
        format!(
            "{CONSOLE_BASE_URL}/checkpoints/{}/{}",
            quote(training_run_id),
            quote(checkpoint_id)
        )
    }
    /// The playground, opened on a sampler checkpoint.
    pub fn playground(tinker_path: &str) -> String {
        format!(
            "{CONSOLE_BASE_URL}/playground?mode=checkpoint&checkpoint={}",
            quote(tinker_path)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_and_format() {
        let p = TinkerPath::parse("tinker://sess-1:train:0/sampler_weights/final").unwrap();
        assert_eq!(p.training_run_id, "sess-1:train:0");
        assert_eq!(p.checkpoint_type, CheckpointType::Sampler);
        assert_eq!(p.checkpoint_id(), "sampler_weights/final");
        assert_eq!(
            p.to_string(),
            "tinker://sess-1:train:0/sampler_weights/final"
        );
        assert_eq!(
            TinkerPath::parse("tinker://r/external_weights/x")
                .unwrap()
                .checkpoint_type,
            CheckpointType::External
        );
    }

    #[test]
    fn rejects_malformed_paths_with_the_value() {
        for bad in [
            "http://r/weights/x",
            "tinker://r/weights",
            "tinker://r/weights/x/y",
            "tinker://r/checkpoints/x",
            "tinker:///weights/x",
            "tinker://r/weights/",
        ] {
            let e = TinkerPath::parse(bad).unwrap_err();
            assert!(e.message.contains(bad), "{e}");
        }
    }

    #[test]
    fn console_urls_quote_like_python() {
        assert_eq!(
            console::checkpoint("a:train:0", "weights/x y"),
            "https://tinker.thinkingmachines.ai/checkpoints/a%3Atrain%3A0/weights%2Fx%20y"
        );
        assert_eq!(console::playground("tinker://r/sampler_weights/s"), "https://tinker.thinkingmachines.ai/playground?mode=checkpoint&checkpoint=tinker%3A%2F%2Fr%2Fsampler_weights%2Fs");
    }
}
