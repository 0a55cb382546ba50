//! The one IO seam of the core: send an HTTP request, sleep, read the clock, draw a
//! random number, and spawn a background task; and, where the runtime has them, read an
//! environment variable or a file and run a command (for the client options the caller
//! leaves unset: `client::environment`).
//!
//! In wasm it is implemented over `fetch` and `setTimeout` (`src/wasm/platform.rs`);
//! native tests implement it over a real HTTP client. Everything else in the core is
//! pure logic over this trait, single-threaded (`!Send` futures), as in a JS runtime.

use std::fmt;
use std::rc::Rc;
use std::time::Duration;

use futures_util::future::LocalBoxFuture;

/// HTTP method.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// GET
    Get,
    /// POST
    Post,
    /// PUT
    Put,
    /// DELETE
    Delete,
}

impl Method {
    /// The method's name.
    pub fn as_str(self) -> &'static str {
        match self {
            Method::Get => "GET",
            Method::Post => "POST",
            Method::Put => "PUT",
            Method::Delete => "DELETE",
        }
    }
}

/// Header list with case-insensitive lookup (names are stored as given).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Headers(pub Vec<(String, String)>);

impl Headers {
    /// The first value of `name` (case-insensitive).
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
    /// Sets `name`, replacing any value it had.
    pub fn set(&mut self, name: &str, value: impl Into<String>) {
        self.0.retain(|(k, _)| !k.eq_ignore_ascii_case(name));
        self.0.push((name.to_string(), value.into()));
    }
    /// Whether `name` is present.
    pub fn contains(&self, name: &str) -> bool {
        self.get(name).is_some()
    }
    /// Removes `name`.
    pub fn remove(&mut self, name: &str) {
        self.0.retain(|(k, _)| !k.eq_ignore_ascii_case(name));
    }
    /// Iterates over (name, value).
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.0.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }
}

/// An HTTP request for the platform to send.
#[derive(Debug, Clone)]
pub struct HttpRequest {
    /// The method.
    pub method: Method,
    /// Absolute URL.
    pub url: String,
    /// Request headers.
    pub headers: Headers,
    /// The body, if any (shared: retries resend it without copying).
    pub body: Option<Rc<Vec<u8>>>,
    /// The read/write timeout: the longest the request may go without progress (bytes
    /// sent or received) once connected, as httpx's `read`/`write` phases (Python
    /// `Timeout(60, connect=5.0)`), not a limit on the whole request. A transport that
    /// cannot see progress (`fetch` before the response) extends it by the time the
    /// body takes at a floor rate (`src/wasm/platform.rs`). Past it the platform
    /// answers [`TransportError::Timeout`].
    pub timeout: Option<Duration>,
    /// The connect phase's timeout (httpx `connect`; `fetch` has no connect phase, so
    /// only transports that open their own connections, e.g. Node's `node:http`, use it).
    pub connect_timeout: Option<Duration>,
    /// One limit over the whole exchange, the response body included, in place of
    /// `timeout`'s limit on progress: the Python SDK's default transport (pyqwest), which
    /// turns httpx's `read` and `write` timeouts into one operation deadline, their sum.
    /// Past it the platform answers [`TransportError::Timeout`].
    pub deadline: Option<Duration>,
}

/// A complete HTTP response.
#[derive(Debug, Clone)]
pub struct HttpResponse {
    /// Status code.
    pub status: u16,
    /// Response headers.
    pub headers: Headers,
    /// The whole body.
    pub body: Vec<u8>,
}

/// A request that got no HTTP response.
#[derive(Debug, Clone, PartialEq)]
pub enum TransportError {
    /// No response within the request's timeout.
    Timeout,
    /// The connection failed or broke (DNS, refused, reset, CORS, …).
    Connection(String),
}

impl fmt::Display for TransportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TransportError::Timeout => f.write_str("request timed out"),
            TransportError::Connection(m) => write!(f, "connection error: {m}"),
        }
    }
}

/// What a runtime offers beyond HTTP and timers: its environment, files and commands, for
/// the client options a caller leaves unset (`client::environment`). Every method has the
/// answer of a runtime without them (browsers, Workers), so such a platform implements
/// none.
pub trait Host {
    /// An environment variable (`None` when unset, or where the runtime has no
    /// environment or may not read it: browsers, Workers, Deno without `--allow-env`).
    /// `HOME` is the user's home directory where the runtime knows one without it.
    fn env_var(&self, _name: &str) -> Option<String> {
        None
    }
    /// A text file's contents (`None` when it does not exist, cannot be read, or the
    /// runtime has no files). Feature `environment`.
    #[cfg(feature = "environment")]
    fn read_text_file(&self, _path: &str) -> Option<String> {
        None
    }
    /// Runs `command` through the shell (feature `environment`). It answers as a request
    /// does, its standard output the body (so a runtime may run it on its request path, as
    /// the wasm skin does), or why it did not run.
    #[cfg(feature = "environment")]
    fn run_command(
        &self,
        _command: &str,
    ) -> LocalBoxFuture<'static, Result<HttpResponse, TransportError>> {
        Box::pin(async {
            Err(TransportError::Connection(
                "this runtime cannot run commands".into(),
            ))
        })
    }
}

/// The IO the core needs. Dropping a future returned by `send` or `sleep` cancels it.
pub trait Platform: Host {
    /// Sends one HTTP request and reads the whole response.
    fn send(
        &self,
        request: HttpRequest,
    ) -> LocalBoxFuture<'static, Result<HttpResponse, TransportError>>;
    /// Resolves after `duration`.
    fn sleep(&self, duration: Duration) -> LocalBoxFuture<'static, ()>;
    /// Wall-clock time in milliseconds since the Unix epoch.
    fn now_ms(&self) -> f64;
    /// A uniformly distributed number in `[0, 1)`.
    fn random(&self) -> f64;
    /// Runs `task` in the background on the current (single) thread.
    fn spawn(&self, task: LocalBoxFuture<'static, ()>);
}

/// Shared handle to the platform.
pub type Env = Rc<dyn Platform>;

/// Seconds since the epoch, as f64.
pub fn now_secs(env: &dyn Platform) -> f64 {
    env.now_ms() / 1000.0
}

/// A random UUID v4 string.
pub fn uuid4(env: &dyn Platform) -> String {
    let mut b = [0u8; 16];
    for chunk in b.chunks_mut(4) {
        let r = (env.random() * 4294967296.0) as u64 as u32;
        chunk.copy_from_slice(&r.to_le_bytes());
    }
    uuid4_from(b)
}

/// The version-4 UUID text of 16 random bytes (version and variant bits set here).
fn uuid4_from(mut b: [u8; 16]) -> String {
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(36);
    for (i, x) in b.iter().enumerate() {
        if matches!(i, 4 | 6 | 8 | 10) {
            s.push('-');
        }
        s.push(HEX[usize::from(x >> 4)] as char);
        s.push(HEX[usize::from(x & 15)] as char);
    }
    s
}

#[cfg(test)]
mod tests {
    #[test]
    fn uuid4_text() {
        let b: [u8; 16] = std::array::from_fn(|i| (i as u8) * 17);
        assert_eq!(super::uuid4_from(b), "00112233-4455-4677-8899-aabbccddeeff");
        assert_eq!(
            super::uuid4_from([0xff; 16]),
            "ffffffff-ffff-4fff-bfff-ffffffffffff"
        );
    }
}
