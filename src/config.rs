//! Client options (what the caller configures) and server flags (what
//! `/api/v1/client/config` and `/client/dynamic_config` answer).

use std::collections::BTreeMap;
use std::rc::Rc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::retry::{DEFAULT_MAX_RETRIES, DEFAULT_TIMEOUT};
use crate::types::InputError;

/// The production API.
pub const DEFAULT_BASE_URL: &str = "https://tinker.thinkingmachines.dev/services/tinker-prod";

/// The Python SDK version whose protocol this client speaks. It is what the server sees
/// as `sdk_version` (bodies) and `x-sdk-version` (header), so that it applies the
/// behaviour of that protocol; the client itself is named in `User-Agent`.
pub const PROTOCOL_SDK_VERSION: &str = "0.38.0";

/// Severity of a log message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum LogLevel {
    /// Diagnostic detail.
    Debug,
    /// Informational.
    Info,
    /// Something the user should know.
    Warn,
    /// A failure.
    Error,
}

/// A log sink (the JS layer routes it to `console` or a user logger).
pub type Logger = Rc<dyn Fn(LogLevel, &str)>;

/// What the caller configures on a client.
#[derive(Clone)]
pub struct ClientOptions {
    /// API key (`tml-…`) or a Tinker JWT (`eyJ…`).
    pub api_key: Option<String>,
    /// Base URL of the API (a path prefix is kept).
    pub base_url: String,
    /// HTTP-layer retries per request.
    pub max_retries: u32,
    /// Per-request timeout.
    pub timeout: Duration,
    /// Headers sent with every request (they win over the SDK's own).
    pub default_headers: Vec<(String, String)>,
    /// `User-Agent` to send (not in browsers, which forbid it).
    pub user_agent: Option<String>,
    /// Project for new sessions.
    pub project_id: Option<String>,
    /// Metadata for new sessions.
    pub user_metadata: BTreeMap<String, String>,
    /// Display name for new sessions.
    pub display_name: Option<String>,
    /// Tags for new sessions.
    pub tags: Vec<String>,
    /// Reuse this session instead of creating one.
    pub session: Option<SessionState>,
    /// Run background timers (heartbeat, config refresh, JWT refresh, telemetry flush).
    /// Off for edge runtimes, where timers die with the request.
    pub background: bool,
    /// Send telemetry batches.
    pub telemetry: bool,
    /// Where log messages go.
    pub logger: Option<Logger>,
}

impl Default for ClientOptions {
    fn default() -> Self {
        ClientOptions {
            api_key: None,
            base_url: DEFAULT_BASE_URL.to_string(),
            max_retries: DEFAULT_MAX_RETRIES,
            timeout: DEFAULT_TIMEOUT,
            default_headers: vec![],
            user_agent: None,
            project_id: None,
            user_metadata: BTreeMap::new(),
            display_name: None,
            tags: vec![],
            session: None,
            background: true,
            telemetry: true,
            logger: None,
        }
    }
}

impl std::fmt::Debug for ClientOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientOptions")
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("base_url", &self.base_url)
            .field("max_retries", &self.max_retries)
            .field("timeout", &self.timeout)
            .field("session", &self.session)
            .field("background", &self.background)
            .finish_non_exhaustive()
    }
}

impl ClientOptions {
    /// Checks the options (key format, URL) before any request.
    pub fn validate(&self) -> Result<(), InputError> {
        match &self.api_key {
            None => {
                return Err(InputError::type_error(
                    "apiKey",
                    "an API key is required: pass apiKey or set TINKER_API_KEY",
                ))
            }
            Some(k) if !(k.starts_with("tml-") || k.starts_with("eyJ")) => {
                return Err(InputError::type_error("apiKey", "the API key must start with \"tml-\" (or be a Tinker JWT starting with \"eyJ\")"));
            }
            _ => {}
        }
        if !(self.base_url.starts_with("http://") || self.base_url.starts_with("https://")) {
            return Err(InputError::type_error(
                "baseURL",
                format!("must be an http(s) URL, got {:?}", self.base_url),
            ));
        }
        if self.timeout.is_zero() {
            return Err(InputError::range_error(
                "timeout",
                "must be a positive number of milliseconds",
            ));
        }
        for (name, value) in &self.default_headers {
            let field = format!("defaultHeaders.{name}");
            let token = |c: char| c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c);
            if name.is_empty() || !name.chars().all(token) {
                return Err(InputError::type_error(
                    field,
                    "is not a valid HTTP header name (letters, digits and !#$%&'*+-.^_`|~)",
                ));
            }
            if value.contains(['\r', '\n', '\0']) {
                return Err(InputError::type_error(
                    field,
                    "must not contain line breaks or NUL characters",
                ));
            }
        }
        if let Some(s) = &self.session {
            if s.session_id.is_empty() {
                return Err(InputError::type_error(
                    "session.sessionId",
                    "must be a non-empty string",
                ));
            }
        }
        Ok(())
    }

    /// Logs through the configured logger, if any.
    pub fn log(&self, level: LogLevel, msg: &str) {
        if let Some(l) = &self.logger {
            l(level, msg);
        }
    }
}

/// Everything needed to resume a session in another process or request (edge
/// runtimes): its id and the next per-session counters.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionState {
    /// The session id.
    pub session_id: String,
    /// The next training-client number (`model_seq_id`).
    #[serde(default)]
    pub next_model_seq_id: u32,
    /// The next sampling-session number.
    #[serde(default)]
    pub next_sampling_session_seq_id: u32,
}

fn d_true() -> bool {
    true
}
fn d_api_key() -> String {
    "api_key".into()
}
fn d_sample_bytes() -> i64 {
    10_485_760
}
fn d_inflight_bytes() -> i64 {
    52_428_800
}
fn d_chunk_len() -> usize {
    1024
}
fn d_chunk_bytes() -> usize {
    5_000_000
}
fn d_fwdbwd_bytes() -> i64 {
    50_000_000
}
fn d_billing() -> f64 {
    3600.0
}
fn d_sample_max() -> usize {
    2000
}

/// Server feature flags from `/api/v1/client/config` (unknown flags ignored).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServerConfig {
    /// Exchange the credential for a short-lived JWT.
    #[serde(default)]
    pub pjwt_auth_enabled: bool,
    /// Credential source for the exchange.
    #[serde(default = "d_api_key")]
    pub credential_default_source: String,
    /// Sampling dispatch byte budget.
    #[serde(default = "d_sample_bytes")]
    pub sample_dispatch_bytes_semaphore_size: i64,
    /// Byte budget for large result payloads.
    #[serde(default = "d_inflight_bytes")]
    pub inflight_response_bytes_semaphore_size: i64,
    /// Submit forward/backward chunks concurrently.
    #[serde(default = "d_true")]
    pub parallel_fwdbwd_chunks: bool,
    /// zstd-compress forward/backward bodies.
    #[serde(default)]
    pub proto_compress_fwdbwd: bool,
    /// Datums per forward/backward request.
    #[serde(default = "d_chunk_len")]
    pub fwdbwd_max_chunk_len: usize,
    /// Estimated bytes per forward/backward request.
    #[serde(default = "d_chunk_bytes")]
    pub fwdbwd_max_chunk_bytes_count: usize,
    /// Concurrent forward/backward bytes.
    #[serde(default = "d_fwdbwd_bytes")]
    pub fwdbwd_dispatch_bytes_semaphore_size: i64,
    /// How long HTTP 402 pauses before failing.
    #[serde(default = "d_billing", serialize_with = "whole_as_int")]
    pub billing_exception_max_pause_duration_sec: f64,
    /// Bypass the sampling retry layer.
    #[serde(default)]
    pub sample_no_retries: bool,
    /// Apply the sampling progress timeout.
    #[serde(default = "d_true")]
    pub sample_enable_stuck_detection: bool,
    /// Concurrent samples per client.
    #[serde(default = "d_sample_max")]
    pub sample_max_concurrent_requests: usize,
    /// The Python SDK's transport choice: unused here, kept so that sampler handles
    /// carry the same flags as Python's.
    #[serde(default = "d_true")]
    pub use_pyqwest_transport: bool,
    /// Poll sampling results session-wide through `retrieve_futures`.
    #[serde(default)]
    pub sample_use_retrieve_futures: bool,
    /// Custom losses run on the server.
    #[serde(default)]
    pub custom_loss_server_side: bool,
    /// Restored sampling clients join their session for a clone id.
    #[serde(default)]
    pub sample_join_sampling_session: bool,
}

impl Default for ServerConfig {
    fn default() -> Self {
        serde_json::from_str("{}").expect("defaults")
    }
}

/// Whole numbers as JSON integers (the Python SDK's fields are `int`; sampler handles
/// carry them).
fn whole_as_int<S: serde::Serializer>(v: &f64, s: S) -> Result<S::Ok, S::Error> {
    if v.fract() == 0.0 && v.abs() < 9e15 {
        s.serialize_i64(*v as i64)
    } else {
        s.serialize_f64(*v)
    }
}

fn d_refresh() -> f64 {
    300.0
}
fn d_cancel_batch() -> usize {
    64
}

/// Flags from `/api/v1/client/dynamic_config`, refreshed periodically.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DynamicConfig {
    /// Seconds between refreshes (at least 10).
    #[serde(default = "d_refresh", serialize_with = "whole_as_int")]
    pub refresh_interval_sec: f64,
    /// Send `cancel_future` for abandoned samples.
    #[serde(default)]
    pub sample_cancel_enabled: bool,
    /// Cancels per batch.
    #[serde(default = "d_cancel_batch")]
    pub sample_cancel_max_batch_size: usize,
}

impl Default for DynamicConfig {
    fn default() -> Self {
        serde_json::from_str("{}").expect("defaults")
    }
}

/// Joins the base URL (trailing `/` enforced, path prefix kept) and an endpoint path.
pub fn join_url(base: &str, path: &str) -> String {
    if path.starts_with("http://") || path.starts_with("https://") {
        return path.to_string();
    }
    let base = base.trim_end_matches('/');
    format!("{base}/{}", path.trim_start_matches('/'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_config_defaults_and_unknown_flags() {
        let c: ServerConfig =
            serde_json::from_str(r#"{"fwdbwd_max_chunk_len": 2, "something_new": 1}"#).unwrap();
        assert_eq!(c.fwdbwd_max_chunk_len, 2);
        assert!(c.parallel_fwdbwd_chunks);
        assert_eq!(c.fwdbwd_max_chunk_bytes_count, 5_000_000);
        assert_eq!(ServerConfig::default().sample_max_concurrent_requests, 2000);
        assert_eq!(DynamicConfig::default().sample_cancel_max_batch_size, 64);
    }

    #[test]
    fn urls_keep_prefixes() {
        assert_eq!(
            join_url("http://h:1/prefix/", "/api/v1/x"),
            "http://h:1/prefix/api/v1/x"
        );
        assert_eq!(join_url("http://h:1", "api/v1/x"), "http://h:1/api/v1/x");
        assert_eq!(
            join_url("http://h", "https://other/file"),
            "https://other/file"
        );
    }

    #[test]
    fn options_validation_names_fields_and_hides_the_key() {
        let mut o = ClientOptions {
            api_key: Some("sk-123".into()),
            ..Default::default()
        };
        assert_eq!(o.validate().unwrap_err().field, "apiKey");
        o.api_key = Some("tml-abc".into());
        o.base_url = "ftp://x".into();
        assert_eq!(o.validate().unwrap_err().field, "baseURL");
        assert!(!format!("{o:?}").contains("tml-abc"));
    }

    #[test]
    fn default_headers_must_be_sendable() {
        let with = |name: &str, value: &str| ClientOptions {
            api_key: Some("tml-abc".into()),
            default_headers: vec![(name.into(), value.into())],
            ..Default::default()
        };
        assert!(with("x-note", "fine, really").validate().is_ok());
        let e = with("x-note", "a\r\nx-injected: 1").validate().unwrap_err();
        assert_eq!(e.field, "defaultHeaders.x-note");
        assert!(e.message.contains("line breaks"), "{}", e.message);
        assert_eq!(
            with("x note", "v").validate().unwrap_err().field,
            "defaultHeaders.x note"
        );
        assert!(with("", "v").validate().is_err());
    }
}
