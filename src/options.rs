//! Client options: what the caller configures on a client (key, base URL, retries,
//! timeout, headers, session metadata, background work, logging), with the Python SDK's
//! defaults (`_constants.py`), checked before any request.

use std::rc::Rc;
use std::time::Duration;

use crate::config::SessionState;
use crate::json;
use crate::map::StrMap;
use crate::types::InputError;

/// Default HTTP-layer retries per request (Python `DEFAULT_MAX_RETRIES`).
pub const DEFAULT_MAX_RETRIES: u32 = 10;
/// The most HTTP-layer retries per request accepted.
pub const MAX_RETRIES_LIMIT: u32 = 100;
/// Default per-request timeout (Python `DEFAULT_TIMEOUT`).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// The production API.
pub const DEFAULT_BASE_URL: &str = "https://tinker.thinkingmachines.dev/services/tinker-prod";

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
    pub user_metadata: StrMap<String>,
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
            user_metadata: StrMap::new(),
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
                format!(
                    "must be an http(s) URL, got {}",
                    json::quote(&self.base_url)
                ),
            ));
        }
        if self.timeout.is_zero() {
            return Err(InputError::range_error(
                "timeout",
                "must be a positive number of milliseconds",
            ));
        }
        if self.max_retries > MAX_RETRIES_LIMIT {
            return Err(InputError::range_error(
                "maxRetries",
                format!(
                    "must be between 0 and {MAX_RETRIES_LIMIT}, got {}",
                    self.max_retries
                ),
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

#[cfg(test)]
mod tests {
    use super::*;

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
