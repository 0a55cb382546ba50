use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::Duration;

use futures_executor::{LocalPool, LocalSpawner};
use futures_util::future::LocalBoxFuture;
use futures_util::task::LocalSpawnExt;

use crate::platform::{Headers, Host, HttpRequest, HttpResponse, Platform, TransportError};

pub type Handler = Box<dyn Fn(&HttpRequest, usize) -> Result<HttpResponse, TransportError>>;

/// A platform whose "server" is a closure, with a virtual clock: `sleep` returns at
/// once and advances the clock, and every sleep and request is recorded.
pub struct Scripted {
    pub handler: RefCell<Handler>,
    pub requests: RefCell<Vec<HttpRequest>>,
    pub sleeps: RefCell<Vec<Duration>>,
    pub clock_ms: Cell<f64>,
    pub rng: Cell<u64>,
    pub spawner: LocalSpawner,
    /// Requests whose URL ends with the key wait for the event before being answered.
    pub gates: RefCell<Vec<(String, crate::sync::Event)>>,
    /// The commands run (`run_command`), and what the next ones print.
    pub commands: RefCell<Vec<String>>,
    pub command_outputs: RefCell<Vec<Result<String, String>>>,
}

impl Host for Scripted {
    fn run_command(
        &self,
        command: &str,
    ) -> LocalBoxFuture<'static, Result<HttpResponse, TransportError>> {
        self.commands.borrow_mut().push(command.to_string());
        let mut outs = self.command_outputs.borrow_mut();
        let out = match (outs.is_empty(), outs.first()) {
            (false, _) => outs.remove(0),
            (true, _) => Err("no output scripted".to_string()),
        };
        let out = out
            .map(|text| response(200, "text/plain", text.into_bytes()))
            .map_err(TransportError::Connection);
        Box::pin(async move { out })
    }
}

impl Scripted {
    pub fn new(
        pool: &LocalPool,
        handler: impl Fn(&HttpRequest, usize) -> Result<HttpResponse, TransportError> + 'static,
    ) -> Rc<Self> {
        Rc::new(Scripted {
            handler: RefCell::new(Box::new(handler)),
            requests: RefCell::new(vec![]),
            sleeps: RefCell::new(vec![]),
            clock_ms: Cell::new(1_700_000_000_000.0),
            rng: Cell::new(0x9e3779b97f4a7c15),
            spawner: pool.spawner(),
            gates: RefCell::new(vec![]),
            commands: RefCell::new(vec![]),
            command_outputs: RefCell::new(vec![]),
        })
    }
    pub fn paths(&self) -> Vec<String> {
        self.requests
            .borrow()
            .iter()
            .map(|r| r.url.split("/api/v1/").nth(1).unwrap_or(&r.url).to_string())
            .collect()
    }
}

impl Platform for Scripted {
    fn send(
        &self,
        request: HttpRequest,
    ) -> LocalBoxFuture<'static, Result<HttpResponse, TransportError>> {
        let n = self.requests.borrow().len();
        self.requests.borrow_mut().push(request.clone());
        let r = (self.handler.borrow())(&request, n);
        let gate = self
            .gates
            .borrow()
            .iter()
            .find(|(p, _)| request.url.ends_with(p.as_str()))
            .map(|g| g.1.clone());
        Box::pin(async move {
            if let Some(g) = gate {
                g.wait().await;
            }
            r
        })
    }
    fn sleep(&self, d: Duration) -> LocalBoxFuture<'static, ()> {
        self.sleeps.borrow_mut().push(d);
        self.clock_ms
            .set(self.clock_ms.get() + d.as_secs_f64() * 1000.0);
        Box::pin(async {})
    }
    fn now_ms(&self) -> f64 {
        self.clock_ms.get()
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
        self.spawner.spawn_local(task).expect("spawn");
    }
}

/// A response as a server sends it: with its `content-length` (an absent one means an
/// empty body to the Python SDK's CDN check, `retry::is_cdn_rejection`).
fn response(status: u16, content_type: &str, body: Vec<u8>) -> HttpResponse {
    HttpResponse {
        status,
        headers: Headers(vec![
            ("content-type".into(), content_type.into()),
            ("content-length".into(), body.len().to_string()),
        ]),
        body,
    }
}

pub fn json(status: u16, body: &str) -> Result<HttpResponse, TransportError> {
    Ok(response(
        status,
        "application/json",
        body.as_bytes().to_vec(),
    ))
}

/// What a CDN in front of the API answers when it drops a connection: 400, no body.
pub fn empty_400() -> Result<HttpResponse, TransportError> {
    Ok(HttpResponse {
        status: 400,
        headers: Headers(vec![("content-length".into(), "0".into())]),
        body: vec![],
    })
}

pub fn with_headers(
    status: u16,
    body: &str,
    headers: &[(&str, &str)],
) -> Result<HttpResponse, TransportError> {
    let mut r = response(status, "application/json", body.as_bytes().to_vec());
    for (k, v) in headers {
        r.headers.set(k, *v);
    }
    Ok(r)
}

pub fn proto(body: Vec<u8>) -> Result<HttpResponse, TransportError> {
    Ok(response(200, "application/x-protobuf", body))
}

pub fn body_json(r: &HttpRequest) -> serde_json::Value {
    serde_json::from_slice(r.body.as_deref().map_or(&b"null"[..], |b| &b[..]))
        .unwrap_or(serde_json::Value::Null)
}

pub fn opts() -> crate::options::ClientOptions {
    crate::options::ClientOptions {
        api_key: Some("tml-test".into()),
        base_url: "http://sim.test".into(),
        background: false,
        telemetry: false,
        ..Default::default()
    }
}

/// A scripted server that answers the startup endpoints (config, dynamic config,
/// session) and delegates everything else to `rest`.
pub fn server(
    config: &'static str,
    rest: impl Fn(&HttpRequest, usize) -> Result<HttpResponse, TransportError> + 'static,
) -> impl Fn(&HttpRequest, usize) -> Result<HttpResponse, TransportError> {
    move |r, n| {
        let path = r.url.split("/api/v1/").nth(1).unwrap_or("");
        match path {
            "client/config" => json(200, config),
            "client/dynamic_config" => json(200, "{}"),
            "create_session" => json(200, r#"{"session_id":"sess-1","type":"create_session"}"#),
            "get_info" => json(
                200,
                r#"{"model_id":"sess-1:train:0","model_data":{"model_name":"Qwen/Qwen3-8B","tokenizer_id":"Qwen/Qwen3-8B:v2"},"lora_rank":16}"#,
            ),
            _ => rest(r, n),
        }
    }
}

pub fn connect(
    pool: &mut LocalPool,
    s: &Rc<Scripted>,
    session: bool,
) -> Rc<crate::session::Holder> {
    pool.run_until(crate::session::Holder::connect(
        s.clone(),
        Rc::new(opts()),
        session,
    ))
    .expect("connect")
}

/// A sampling client on sampler `samp-1` (Qwen3-8B) as its creator (clone 0).
pub fn sampler(
    pool: &mut LocalPool,
    h: Rc<crate::session::Holder>,
) -> crate::sampling::SamplingClient {
    pool.run_until(crate::sampling::SamplingClient::connect(
        h,
        "samp-1".into(),
        Some("Qwen/Qwen3-8B".into()),
        crate::sampling::SamplingOptions::default(),
        "test",
    ))
    .expect("sampling client")
}

/// A one-sequence sample request of the prompt [1, 2, 3].
pub fn request() -> crate::sampling::SampleRequest {
    crate::sampling::SampleRequest::new(
        crate::types::ModelInput::from_ints(vec![1, 2, 3]),
        1,
        crate::types::SamplingParams::default(),
    )
}
