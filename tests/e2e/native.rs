//! The native platform for end-to-end tests: reqwest for HTTP, tokio timers, a tokio
//! `LocalSet` for spawned tasks, and a fresh simulator process per test.

use std::cell::{Cell, RefCell};
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::rc::Rc;
use std::time::Duration;

use futures_util::future::LocalBoxFuture;
use tinker_core::options::ClientOptions;
use tinker_core::platform::{
    Headers, Host, HttpRequest, HttpResponse, Method, Platform, TransportError,
};

pub struct Native {
    /// One client per (read, connect) timeout pair: a request's timeouts are per phase
    /// (`HttpRequest::timeout`: the longest without progress once connected), which
    /// reqwest sets per client (`read_timeout`, `connect_timeout`), not per request.
    clients: RefCell<Vec<(Timeouts, reqwest::Client)>>,
    rng: Cell<u64>,
}

type Timeouts = (Option<Duration>, Option<Duration>);

impl Native {
    pub fn new() -> Rc<Self> {
        Rc::new(Native {
            clients: RefCell::new(Vec::new()),
            rng: Cell::new(0x2545f4914f6cdd1d),
        })
    }

    fn client(&self, timeouts: Timeouts) -> reqwest::Client {
        let mut clients = self.clients.borrow_mut();
        if let Some((_, c)) = clients.iter().find(|(t, _)| *t == timeouts) {
            return c.clone();
        }
        let mut b = reqwest::Client::builder();
        if let Some(t) = timeouts.0 {
            b = b.read_timeout(t);
        }
        if let Some(t) = timeouts.1 {
            b = b.connect_timeout(t);
        }
        let c = b.build().expect("a reqwest client");
        clients.push((timeouts, c.clone()));
        c
    }
}

impl Host for Native {}

impl Platform for Native {
    fn send(
        &self,
        req: HttpRequest,
    ) -> LocalBoxFuture<'static, Result<HttpResponse, TransportError>> {
        let method = match req.method {
            Method::Get => reqwest::Method::GET,
            Method::Post => reqwest::Method::POST,
            Method::Put => reqwest::Method::PUT,
            Method::Delete => reqwest::Method::DELETE,
        };
        let client = self.client((req.timeout, req.connect_timeout));
        let mut b = client.request(method, &req.url);
        if let Some(d) = req.deadline {
            b = b.timeout(d);
        }
        for (k, v) in req.headers.iter() {
            b = b.header(k, v);
        }
        if let Some(body) = req.body {
            b = b.body(std::rc::Rc::unwrap_or_clone(body));
        }
        Box::pin(async move {
            let r = b.send().await.map_err(|e| {
                if e.is_timeout() {
                    TransportError::Timeout
                } else {
                    TransportError::Connection(e.to_string())
                }
            })?;
            let status = r.status().as_u16();
            let headers = Headers(
                r.headers()
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_str().unwrap_or("").to_string()))
                    .collect(),
            );
            let body = r
                .bytes()
                .await
                .map_err(|e| {
                    if e.is_timeout() {
                        TransportError::Timeout
                    } else {
                        TransportError::Connection(e.to_string())
                    }
                })?
                .to_vec();
            Ok(HttpResponse {
                status,
                headers,
                body,
            })
        })
    }
    fn sleep(&self, d: Duration) -> LocalBoxFuture<'static, ()> {
        Box::pin(tokio::time::sleep(d))
    }
    fn now_ms(&self) -> f64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs_f64()
            * 1000.0
    }
    fn random(&self) -> f64 {
        let mut x = self.rng.get();
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.rng.set(x);
        (x >> 11) as f64 / (1u64 << 53) as f64
    }
    fn spawn(&self, task: LocalBoxFuture<'static, ()>) {
        tokio::task::spawn_local(task);
    }
}

/// A simulator process, killed on drop.
pub struct Sim {
    child: Child,
    pub url: String,
}

impl Sim {
    pub fn start(args: &[&str]) -> Sim {
        let bin = env!("CARGO_MANIFEST_DIR").to_string() + "/target/debug/tinker-sim";
        let mut child = Command::new(&bin)
            .args(["--port", "0"])
            .args(args)
            .stdout(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("{bin}: {e} (run `cargo build -p tinker-sim`)"));
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let url = line
            .trim()
            .strip_prefix("tinker-sim listening on ")
            .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
            .to_string();
        Sim { child, url }
    }

    pub fn options(&self) -> ClientOptions {
        ClientOptions {
            api_key: Some("tml-e2e".into()),
            base_url: self.url.clone(),
            background: false,
            telemetry: false,
            ..Default::default()
        }
    }

    /// GET an admin endpoint of the simulator.
    pub async fn admin(&self, path: &str) -> serde_json::Value {
        reqwest::get(format!("{}/_sim/{path}", self.url))
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    }

    /// POST an admin config change.
    pub async fn configure(&self, body: serde_json::Value) {
        let r = reqwest::Client::new()
            .post(format!("{}/_sim/config", self.url))
            .json(&body)
            .send()
            .await
            .unwrap();
        assert!(r.status().is_success(), "{}", r.text().await.unwrap());
    }
}

impl Drop for Sim {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// How long one end-to-end run may take before it fails as hung.
pub const RUN_TIMEOUT: Duration = Duration::from_secs(300);

/// Runs a `!Send` future to completion on a current-thread runtime with a LocalSet; a run
/// longer than [`RUN_TIMEOUT`] panics (a hang fails the test instead of stalling it).
pub fn run<F: std::future::Future>(f: F) -> F::Output {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    tokio::task::LocalSet::new()
        .block_on(
            &rt,
            async move { tokio::time::timeout(RUN_TIMEOUT, f).await },
        )
        .unwrap_or_else(|_| panic!("the run did not finish within {RUN_TIMEOUT:?}"))
}
