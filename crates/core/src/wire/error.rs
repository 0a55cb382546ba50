//! The SDK's error model. The wasm layer maps each variant onto a JS `Error` subclass
//! (`APIStatusError` and its per-status subclasses, `APIConnectionError`,
//! `APITimeoutError`, `APIUserAbortError`, `RequestFailedError`, `FutureExpiredError`,
//! `TypeError`/`RangeError` for bad input, …).

use std::fmt;

use crate::json::Value;
use crate::platform::Headers;
use crate::text;
use crate::types::InputError;

/// Who caused a failed request, as the server classifies it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorCategory {
    /// The request was invalid (the caller can fix it).
    User,
    /// The server failed.
    Server,
    /// Not classified.
    Unknown,
}

impl ErrorCategory {
    /// Parses the wire value (`"user"`, `"server"`, anything else = unknown).
    pub fn parse(s: Option<&str>) -> Self {
        match s {
            Some("user") => ErrorCategory::User,
            Some("server") => ErrorCategory::Server,
            _ => ErrorCategory::Unknown,
        }
    }
    /// The wire value.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCategory::User => "user",
            ErrorCategory::Server => "server",
            ErrorCategory::Unknown => "unknown",
        }
    }
}

/// An HTTP error response.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct StatusError {
    /// HTTP status.
    pub status: u16,
    /// Human-readable message (includes the server's `detail` when present).
    pub message: String,
    /// The parsed JSON body, if it was JSON.
    pub body: Option<crate::json::Value>,
    /// Response headers (secrets redacted).
    pub headers: Headers,
    /// `x-request-id` of the response, if any.
    pub request_id: Option<String>,
    /// A result poll's status that Python's polling treats as final (not 400, 408, 410,
    /// 429 or 5xx): the sampling retry handler does not start the sample again.
    pub final_poll: bool,
}

/// Any failure of an SDK operation. Non-exhaustive: match the variants you handle and
/// keep a fallback, or use the predicates ([`status`](Error::status),
/// [`request_id`](Error::request_id), [`is_retryable`](Error::is_retryable),
/// [`is_user_error`](Error::is_user_error)).
// Exhaustive on purpose: the wasm skin (its own crate) maps every variant to a JS error
// class, and a new variant must fail its build until it does.
#[derive(Debug, Clone)]
pub enum Error {
    /// The server answered with an error status.
    Status(Box<StatusError>),
    /// No response: DNS, refused, reset, CORS, or a broken body.
    Connection {
        /// What happened.
        message: String,
    },
    /// No response in time (a per-request or per-call timeout).
    Timeout {
        /// What timed out.
        message: String,
    },
    /// The caller aborted the operation (AbortSignal).
    Aborted {
        /// What was aborted.
        message: String,
    },
    /// The server ran the request and it failed.
    RequestFailed {
        /// The server's message.
        message: String,
        /// The Tinker request id.
        request_id: String,
        /// User or server fault.
        category: ErrorCategory,
    },
    /// The server no longer has the result of this request (HTTP 410 on a poll).
    FutureExpired {
        /// The Tinker request id.
        request_id: String,
    },
    /// Bad caller input, rejected before anything was sent.
    Input(InputError),
    /// The server answered something this client cannot interpret.
    InvalidResponse {
        /// What was wrong.
        message: String,
    },
    /// The client was closed, or poisoned by an earlier failure.
    Closed {
        /// Why.
        message: String,
    },
    /// A callback of the caller's (a custom loss function) failed: `error` is what it
    /// threw or rejected with, kept as the caller's own value (in the wasm build a
    /// `JsValue`, which the JS call rejects with unchanged).
    Callback {
        /// What failed.
        message: String,
        /// The caller's error value.
        error: CallerError,
    },
}

/// A caller's error value kept inside an [`Error`], of the embedding's own type (the
/// wasm build keeps the thrown `JsValue`; read it back with [`CallerError::get`]).
#[derive(Clone)]
pub struct CallerError(std::rc::Rc<dyn std::any::Any>);

impl CallerError {
    /// Keeps `value`.
    pub fn new<T: 'static>(value: T) -> Self {
        CallerError(std::rc::Rc::new(value))
    }
    /// The value, if it is a `T`.
    pub fn get<T: 'static>(&self) -> Option<&T> {
        self.0.downcast_ref()
    }
}

impl fmt::Debug for CallerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("CallerError(..)")
    }
}

/// Result alias.
pub type Result<T, E = Error> = std::result::Result<T, E>;

const SECRET_HEADERS: &[&str] = &[
    "x-api-key",
    "authorization",
    "proxy-authorization",
    "cookie",
    "set-cookie",
    "x-tinker-weights-access-token",
    "cf-access-client-secret",
];

/// Whether a header carries a credential.
pub fn is_secret_header(name: &str) -> bool {
    SECRET_HEADERS.iter().any(|s| s.eq_ignore_ascii_case(name))
}

/// A copy of `headers` with credential values replaced by `<redacted>`.
pub fn redact_headers(headers: &Headers) -> Headers {
    Headers(
        headers
            .0
            .iter()
            .map(|(k, v)| {
                (
                    k.clone(),
                    if is_secret_header(k) {
                        "<redacted>".to_string()
                    } else {
                        v.clone()
                    },
                )
            })
            .collect(),
    )
}

/// `s` with every occurrence of each secret (8 characters or more) replaced by
/// `<redacted>`.
pub fn redact_str(s: &str, secrets: &[&str]) -> String {
    let mut out = s.to_string();
    for secret in secrets.iter().filter(|x| x.len() >= 8) {
        if text::contains(&out, secret) {
            out = text::replace(&out, secret, "<redacted>");
        }
    }
    out
}

fn redact_json(v: &mut Value, secrets: &[&str]) {
    match v {
        Value::String(s) => *s = redact_str(s, secrets),
        Value::Array(a) => a.iter_mut().for_each(|x| redact_json(x, secrets)),
        Value::Object(m) => {
            for (k, mut x) in std::mem::take(m) {
                redact_json(&mut x, secrets);
                m.insert(redact_str(&k, secrets), x);
            }
        }
        _ => {}
    }
}

/// The Python SDK's exception class for an HTTP error status (`_client.py`
/// `_make_status_error`): the JS error class of the same name, and the `error_type` /
/// `exception_type` telemetry reports.
pub fn status_error_class(status: u16) -> &'static str {
    match status {
        400 => "BadRequestError",
        401 => "AuthenticationError",
        402 => "BillingError",
        403 => "PermissionDeniedError",
        404 => "NotFoundError",
        409 => "ConflictError",
        422 => "UnprocessableEntityError",
        429 => "RateLimitError",
        500.. => "InternalServerError",
        _ => "APIStatusError",
    }
}

impl Error {
    /// This error with the given credentials replaced by `<redacted>` wherever a server
    /// (or a transport) could have echoed them: messages, the body, header values.
    pub fn redact(self, secrets: &[&str]) -> Self {
        let r = |s: String| redact_str(&s, secrets);
        match self {
            Error::Status(mut s) => {
                s.message = r(std::mem::take(&mut s.message));
                if let Some(b) = s.body.as_mut() {
                    redact_json(b, secrets);
                }
                s.headers = Headers(
                    std::mem::take(&mut s.headers.0)
                        .into_iter()
                        .map(|(k, v)| (k, r(v)))
                        .collect(),
                );
                s.request_id = s.request_id.map(r);
                Error::Status(s)
            }
            Error::Connection { message } => Error::Connection {
                message: r(message),
            },
            Error::Timeout { message } => Error::Timeout {
                message: r(message),
            },
            Error::InvalidResponse { message } => Error::InvalidResponse {
                message: r(message),
            },
            Error::RequestFailed {
                message,
                request_id,
                category,
            } => Error::RequestFailed {
                message: r(message),
                request_id,
                category,
            },
            other => other,
        }
    }

    /// Builds a status error from a response.
    pub fn from_response(status: u16, headers: &Headers, body: &[u8]) -> Self {
        let json: Option<Value> = crate::json::from_slice(body).ok();
        let detail = match &json {
            Some(Value::Object(m)) => m
                .get("detail")
                .or_else(|| m.get("error"))
                .or_else(|| m.get("message"))
                .map(|d| match d {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                }),
            Some(other) => Some(other.to_string()),
            None if !body.is_empty() => {
                Some(String::from_utf8_lossy(&body[..body.len().min(500)]).into_owned())
            }
            None => None,
        };
        let message = match detail {
            Some(d) => format!("{status} {}: {d}", status_text(status)),
            None => format!("{status} {}", status_text(status)),
        };
        Error::Status(Box::new(StatusError {
            status,
            message,
            body: json,
            headers: redact_headers(headers),
            request_id: headers.get("x-request-id").map(str::to_string),
            final_poll: false,
        }))
    }

    /// The HTTP status, for status errors.
    pub fn status(&self) -> Option<u16> {
        match self {
            Error::Status(s) => Some(s.status),
            _ => None,
        }
    }

    /// The request this error concerns: the Tinker request id of a request that failed
    /// or expired, else the `x-request-id` of an error response.
    pub fn request_id(&self) -> Option<&str> {
        match self {
            Error::Status(s) => s.request_id.as_deref(),
            Error::RequestFailed { request_id, .. } | Error::FutureExpired { request_id } => {
                Some(request_id)
            }
            _ => None,
        }
    }

    /// Whether the Python SDK's retry layers treat this as transient: connection
    /// errors, timeouts, and statuses 408, 409, 429 and 5xx.
    pub fn is_retryable(&self) -> bool {
        match self {
            Error::Connection { .. } | Error::Timeout { .. } => true,
            Error::Status(s) => is_retryable_status(s.status),
            _ => false,
        }
    }

    /// Whether telemetry counts this as the user's fault (4xx except 408, or a
    /// user-category request failure, or bad input).
    pub fn is_user_error(&self) -> bool {
        match self {
            Error::Status(s) => (400..500).contains(&s.status) && s.status != 408,
            Error::RequestFailed { category, .. } => *category == ErrorCategory::User,
            Error::Input(_) | Error::Callback { .. } => true,
            _ => false,
        }
    }
}

/// 408, 409, 429 and 5xx.
pub fn is_retryable_status(status: u16) -> bool {
    matches!(status, 408 | 409 | 429) || (500..600).contains(&status)
}

fn status_text(status: u16) -> &'static str {
    match status {
        400 => "Bad Request",
        401 => "Unauthorized",
        402 => "Payment Required",
        403 => "Forbidden",
        404 => "Not Found",
        408 => "Request Timeout",
        409 => "Conflict",
        410 => "Gone",
        413 => "Payload Too Large",
        422 => "Unprocessable Entity",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "Error",
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Status(s) => f.write_str(&s.message),
            Error::Connection { message }
            | Error::Timeout { message }
            | Error::Aborted { message }
            | Error::InvalidResponse { message }
            | Error::Closed { message }
            | Error::Callback { message, .. } => f.write_str(message),
            Error::RequestFailed {
                message,
                request_id,
                category,
            } => write!(
                f,
                "request {request_id} failed ({} error): {message}",
                category.as_str()
            ),
            Error::FutureExpired { request_id } => write!(
                f,
                "the result of request {request_id} expired on the server (HTTP 410)"
            ),
            Error::Input(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for Error {}

impl From<InputError> for Error {
    fn from(e: InputError) -> Self {
        Error::Input(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_errors_carry_detail_and_redact_secrets() {
        let headers = Headers(vec![
            ("X-Request-Id".into(), "req-1".into()),
            ("Set-Cookie".into(), "s=1".into()),
        ]);
        let e = Error::from_response(404, &headers, br#"{"detail":"no such model"}"#);
        assert_eq!(e.to_string(), "404 Not Found: no such model");
        match &e {
            Error::Status(s) => {
                assert_eq!(s.request_id.as_deref(), Some("req-1"));
                assert_eq!(s.headers.get("set-cookie"), Some("<redacted>"));
            }
            _ => unreachable!(),
        }
        assert!(!e.is_retryable());
        assert!(e.is_user_error());
        assert!(Error::from_response(503, &Headers::default(), b"").is_retryable());
        assert!(Error::from_response(409, &Headers::default(), b"x").is_retryable());
    }

    #[test]
    fn redact_removes_echoed_credentials_everywhere() {
        let key = "tml-0123456789abcdef";
        let headers = Headers(vec![("x-echo".into(), format!("k={key}"))]);
        let body = format!(r#"{{"detail":"bad key {key}","nested":[{{"{key}":"{key}"}}]}}"#);
        let e = Error::from_response(403, &headers, body.as_bytes()).redact(&[key, "short"]);
        let Error::Status(s) = &e else { unreachable!() };
        assert!(!format!("{e} {:?} {:?} {:?}", s.body, s.headers, s.message).contains(key));
        assert_eq!(s.message, "403 Forbidden: bad key <redacted>");
        let c = Error::Connection {
            message: format!("reset by {key}"),
        }
        .redact(&[key]);
        assert_eq!(c.to_string(), "reset by <redacted>");
        // Secrets shorter than 8 characters are never searched for (no false redaction).
        assert_eq!(redact_str("a short word", &["short"]), "a short word");
    }
}
