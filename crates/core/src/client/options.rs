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
/// Default per-request timeout (Python `DEFAULT_TIMEOUT`): at most this long without
/// progress (reading or writing), per phase, not over the whole request.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);
/// The default's connect phase (Python `DEFAULT_TIMEOUT = httpx.Timeout(timeout=60,
/// connect=5.0)`, `_constants.py:7`).
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// What the client runs on, for the `X-Stainless-*` platform headers (Python
/// `platform_headers`, `_base_client.py:1460-1467`) and telemetry's `platform` (Python
/// `platform.system()`, `lib/telemetry.py`). Set by the JS layer outside browsers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PlatformInfo {
    /// `X-Stainless-OS`: `Linux`, `MacOS`, `Windows`, `FreeBSD`, `OpenBSD`, `Android`,
    /// `Other:<name>` or `Unknown` ([`stainless_os`]).
    pub os: String,
    /// The OS as Python's `platform.system()` names it (`Linux`, `Darwin`, `Windows`…),
    /// telemetry's `platform` ([`python_system`]).
    pub system: String,
    /// `X-Stainless-Arch`: `x64`, `arm64`, `arm`, `x32`, `other:<name>` or `unknown`
    /// ([`stainless_arch`]).
    pub arch: String,
    /// `X-Stainless-Runtime`: `node`, `deno`, `bun`, `workerd` (Python: `CPython`).
    pub runtime: String,
    /// `X-Stainless-Runtime-Version` (e.g. `v22.11.0`; Python: `3.11.7`).
    pub runtime_version: String,
}

/// `X-Stainless-OS` of a Node-style `process.platform` (or Deno's `Deno.build.os`), as
/// Python's `get_platform` names the same systems (`_base_client.py:1417-1456`).
pub fn stainless_os(platform: &str) -> String {
    match platform {
        "linux" => "Linux".into(),
        "darwin" => "MacOS".into(),
        "win32" | "windows" => "Windows".into(),
        "freebsd" => "FreeBSD".into(),
        "openbsd" => "OpenBSD".into(),
        "android" => "Android".into(),
        "" => "Unknown".into(),
        other => format!("Other:{other}"),
    }
}

/// Python's `platform.system()` for a Node-style `process.platform` (`os.uname()`'s
/// `sysname` on POSIX, `Windows` on Windows; Python 3.11 says `Linux` on Android).
pub fn python_system(platform: &str) -> String {
    match platform {
        "linux" | "android" => "Linux".into(),
        "darwin" => "Darwin".into(),
        "win32" | "windows" => "Windows".into(),
        "freebsd" => "FreeBSD".into(),
        "openbsd" => "OpenBSD".into(),
        "sunos" => "SunOS".into(),
        "aix" => "AIX".into(),
        other => other.into(),
    }
}

/// `X-Stainless-Arch` of a Node-style `process.arch` (or Deno's `Deno.build.arch`), as
/// Python's `get_architecture` names the machine (`_base_client.py:1496-1519`:
/// `arm64`/`aarch64` → `arm64`, `x86_64` → `x64`, a 32-bit build → `x32`).
pub fn stainless_arch(arch: &str) -> String {
    match arch {
        "x64" | "x86_64" => "x64".into(),
        "arm64" | "aarch64" => "arm64".into(),
        "ia32" | "arm" | "x86" => "x32".into(),
        "" => "unknown".into(),
        other => format!("other:{other}"),
    }
}

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

/// What a client without a credential says (what Python's `MISSING_API_KEY_MESSAGE` says,
/// for the sources this build reads: `client::environment`).
#[cfg(feature = "environment")]
const MISSING_API_KEY: &str = "an API key is required: pass apiKey, set TINKER_API_KEY or TINKER_CREDENTIAL_CMD, or store a key with `tinker-wasm auth login`";
#[cfg(not(feature = "environment"))]
const MISSING_API_KEY: &str = "an API key is required: pass apiKey or set TINKER_API_KEY";

/// A Tinker API key or JWT by its prefix (what Python's `ApiKeyAuthProvider` accepts).
pub fn is_tinker_key(key: &str) -> bool {
    key.starts_with("tml-") || key.starts_with("eyJ")
}

/// What the caller configures on a client.
#[derive(Clone)]
pub struct ClientOptions {
    /// API key (`tml-…`) or a Tinker JWT (`eyJ…`).
    pub api_key: Option<String>,
    /// `TINKER_CREDENTIAL_CMD`: a shell command that prints a credential, run for every
    /// credential it supplies (without `api_key`, and on the JWT exchange when the server
    /// asks for `credential_cmd`): `client::environment`.
    pub credential_cmd: Option<String>,
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
    /// The runtime's platform, for the `X-Stainless-*` headers and telemetry (`None` in
    /// browsers: those headers are not CORS-safelisted, and a page's OS is not ours to
    /// report).
    pub platform: Option<PlatformInfo>,
}

impl Default for ClientOptions {
    fn default() -> Self {
        ClientOptions {
            api_key: None,
            credential_cmd: None,
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
            platform: None,
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
            None if self.credential_cmd.is_some() => {}
            None => return Err(InputError::type_error("apiKey", MISSING_API_KEY)),
            Some(k) if !is_tinker_key(k) => {
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
        check_max_retries(self.max_retries, "maxRetries")?;
        check_headers(&self.default_headers, "defaultHeaders")?;
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

/// A retry count is at most [`MAX_RETRIES_LIMIT`] (`field` names it in the error).
pub fn check_max_retries(n: u32, field: &str) -> Result<(), InputError> {
    if n > MAX_RETRIES_LIMIT {
        return Err(InputError::range_error(
            field,
            format!("must be between 0 and {MAX_RETRIES_LIMIT}, got {n}"),
        ));
    }
    Ok(())
}

/// Headers a request can carry: names are HTTP tokens, values have no line breaks or
/// NUL (the error names `<field>.<name>`).
pub fn check_headers(headers: &[(String, String)], field: &str) -> Result<(), InputError> {
    for (name, value) in headers {
        let field = format!("{field}.{name}");
        let token = |b: u8| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b);
        if name.is_empty() || !name.bytes().all(token) {
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
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Python's names for the same systems: `get_platform`, `get_architecture`
    /// (`_base_client.py:1417-1519`) and `platform.system()`, for the values Node's
    /// `process.platform` / `process.arch` and Deno's `Deno.build` take.
    #[test]
    fn platform_names_as_python_gives_them() {
        let rows = [
            ("linux", "Linux", "Linux"),
            ("darwin", "MacOS", "Darwin"),
            ("win32", "Windows", "Windows"),
            ("windows", "Windows", "Windows"),
            ("freebsd", "FreeBSD", "FreeBSD"),
            ("openbsd", "OpenBSD", "OpenBSD"),
            ("android", "Android", "Linux"),
            ("sunos", "Other:sunos", "SunOS"),
            ("", "Unknown", ""),
        ];
        for (p, os, system) in rows {
            assert_eq!(
                (stainless_os(p), python_system(p)),
                (os.into(), system.into()),
                "{p}"
            );
        }
        let arches = [
            ("x64", "x64"),
            ("x86_64", "x64"),
            ("arm64", "arm64"),
            ("aarch64", "arm64"),
            ("ia32", "x32"),
            ("arm", "x32"),
            ("ppc64", "other:ppc64"),
            ("", "unknown"),
        ];
        for (a, want) in arches {
            assert_eq!(stainless_arch(a), want, "{a}");
        }
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
