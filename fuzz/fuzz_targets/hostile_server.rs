//! The whole client against a hostile server: every response the core decodes (JSON of
//! every response type, future-poll bodies, protobuf results, error bodies, retry
//! headers, connection failures, slow answers) comes from the fuzzer, request by request.
//! A mock platform answers each request with either a well-formed default for its
//! endpoint or a fuzzer-chosen status, headers and body; time is virtual (a sleep
//! advances a clock), so retries and backoffs cost nothing.
//!
//! Properties: nothing panics; and every call settles — each has a 600 s (virtual)
//! timeout, so a call that never settles while the executor has nothing left to run
//! is a hang, reported as a panic.
#![no_main]
use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use futures_executor::LocalPool;
use futures_util::future::LocalBoxFuture;
use futures_util::task::LocalSpawnExt;
use libfuzzer_sys::fuzz_target;
use serde_json::{json, Value};
use tinker_core::call::CallOptions;
use tinker_core::options::ClientOptions;
use tinker_core::platform::{Headers, Host, HttpRequest, HttpResponse, Platform, TransportError};
use tinker_core::rest::{AccessScope, RestCall};
use tinker_core::sampling::{SampleRequest, SamplingOptions};
use tinker_core::service::{LoraOptions, ServiceClient};
use tinker_core::session::FinishStatus;
use tinker_core::training::OptimParams;
use tinker_core::types::{AdamParams, Datum, LoraConfig, ModelInput, SamplingParams, TensorData};

// ----------------------------------------------------------------------------------
// Virtual time

#[derive(Default)]
struct Clock {
    now_ms: Cell<f64>,
    timers: RefCell<Vec<(f64, Waker)>>,
}

struct Sleep {
    clock: Rc<Clock>,
    deadline: f64,
}

impl Future for Sleep {
    type Output = ();
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.clock.now_ms.get() >= self.deadline {
            return Poll::Ready(());
        }
        self.clock
            .timers
            .borrow_mut()
            .push((self.deadline, cx.waker().clone()));
        Poll::Pending
    }
}

impl Clock {
    /// Advances to the earliest timer and wakes everything due; false when none is left.
    fn advance(&self) -> bool {
        let mut timers = self.timers.borrow_mut();
        let Some(next) = timers.iter().map(|t| t.0).min_by(f64::total_cmp) else {
            return false;
        };
        self.now_ms.set(self.now_ms.get().max(next));
        let now = self.now_ms.get();
        let (due, rest): (Vec<_>, Vec<_>) = timers.drain(..).partition(|t| t.0 <= now);
        *timers = rest;
        drop(timers);
        for (_, w) in due {
            w.wake();
        }
        true
    }
}

// ----------------------------------------------------------------------------------
// The scripted hostile server

struct Input {
    data: Vec<u8>,
    pos: usize,
}

impl Input {
    fn byte(&mut self) -> Option<u8> {
        let b = *self.data.get(self.pos)?;
        self.pos += 1;
        Some(b)
    }
    /// A length-prefixed chunk (≤ 255 bytes, or ≤ 64 KiB with a 2-byte length).
    fn chunk(&mut self, long: bool) -> Vec<u8> {
        let n = if long {
            let a = self.byte().unwrap_or(0) as usize;
            let b = self.byte().unwrap_or(0) as usize;
            a | (b << 8)
        } else {
            self.byte().unwrap_or(0) as usize
        };
        let n = n.min(self.data.len() - self.pos);
        let c = self.data[self.pos..self.pos + n].to_vec();
        self.pos += n;
        c
    }
    fn text(&mut self) -> String {
        String::from_utf8_lossy(&self.chunk(false)).into_owned()
    }
}

// Minimal protobuf writer for the default results.
fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}
fn len_field(out: &mut Vec<u8>, field: u32, b: &[u8]) {
    varint(out, u64::from(field) << 3 | 2);
    varint(out, b.len() as u64);
    out.extend_from_slice(b);
}
fn var_field(out: &mut Vec<u8>, field: u32, v: u64) {
    varint(out, u64::from(field) << 3);
    varint(out, v);
}

fn fwd_output(n: usize) -> Vec<u8> {
    let mut data = vec![];
    let mut offsets = vec![0i64];
    for _ in 0..n {
        for x in [-1.0f32, -2.0, -0.5] {
            data.extend_from_slice(&x.to_le_bytes());
        }
        offsets.push(data.len() as i64);
    }
    let offs: Vec<u8> = offsets.iter().flat_map(|o| o.to_le_bytes()).collect();
    let mut bt = vec![];
    len_field(&mut bt, 1, &data);
    len_field(&mut bt, 2, &offs);
    var_field(&mut bt, 3, 1);
    let mut entry = vec![];
    len_field(&mut entry, 1, b"logprobs");
    len_field(&mut entry, 2, &bt);
    let mut record = vec![];
    len_field(&mut record, 2, &entry);
    var_field(&mut record, 3, n as u64);
    let mut metric = vec![];
    len_field(&mut metric, 1, b"loss:sum");
    varint(&mut metric, 2 << 3 | 1);
    metric.extend_from_slice(&3.5f64.to_le_bytes());
    let mut msg = vec![];
    len_field(&mut msg, 1, b"tinker.types:ArrayRecord");
    len_field(&mut msg, 2, &record);
    len_field(&mut msg, 3, &metric);
    msg
}

fn sample_output(n: usize) -> Vec<u8> {
    let toks: Vec<u8> = [5i32, 6].iter().flat_map(|v| v.to_le_bytes()).collect();
    let lps: Vec<u8> = [-0.1f32, -0.2]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    let mut seq = vec![];
    var_field(&mut seq, 1, 0);
    len_field(&mut seq, 2, &toks);
    len_field(&mut seq, 3, &lps);
    let mut msg = vec![];
    for _ in 0..n {
        len_field(&mut msg, 1, &seq);
    }
    msg
}

struct Server {
    input: RefCell<Input>,
    next_id: Cell<u64>,
    /// request id → (kind, count) of submitted futures.
    futures: RefCell<BTreeMap<String, (&'static str, usize)>>,
    requests: Cell<u64>,
}

fn json_resp(status: u16, v: &Value) -> HttpResponse {
    HttpResponse {
        status,
        headers: Headers(vec![("content-type".into(), "application/json".into())]),
        body: v.to_string().into_bytes(),
    }
}

impl Server {
    fn submit(&self, kind: &'static str, n: usize) -> Value {
        let id = format!("req-{}", self.next_id.get());
        self.next_id.set(self.next_id.get() + 1);
        self.futures.borrow_mut().insert(id.clone(), (kind, n));
        let mut v = json!({ "request_id": id });
        if kind == "sample" {
            v["sample_sequence_ids"] = json!((0..n).map(|i| format!("s{i}")).collect::<Vec<_>>());
        }
        v
    }

    /// The well-formed answer of each endpoint.
    fn default_answer(&self, req: &HttpRequest) -> HttpResponse {
        let path = req.url.split('?').next().unwrap_or("");
        let path = path.strip_prefix("http://sim").unwrap_or(path);
        let body: Value = req
            .body
            .as_deref()
            .and_then(|b| serde_json::from_slice(b).ok())
            .unwrap_or(Value::Null);
        let ok = |v: Value| json_resp(200, &v);
        match path {
            "/api/v1/client/config" | "/api/v1/client/dynamic_config" => ok(json!({})),
            "/api/v1/create_session" => ok(json!({ "session_id": "sess" })),
            "/api/v1/session_heartbeat" | "/api/v1/telemetry" => ok(json!({})),
            "/api/v1/create_model" => ok(self.submit("create_model", 0)),
            "/api/v1/get_info" => ok(json!({
                "model_id": "sess:train:0",
                "model_data": { "model_name": "Qwen/Qwen3-8B", "tokenizer_id": "Qwen/Qwen3-8B" },
                "lora_rank": 8,
            })),
            "/api/v1/forward_backward" => ok(self.submit("forward_backward", 2)),
            "/api/v1/optim_step" => ok(self.submit("optim_step", 0)),
            "/api/v1/create_sampling_session" => {
                ok(json!({ "sampling_session_id": "sess:sample:0" }))
            }
            "/api/v1/asample" => {
                let n = body.get("num_samples").and_then(Value::as_u64).unwrap_or(1);
                ok(self.submit("sample", n as usize))
            }
            "/api/v1/retrieve_future" => {
                let id = body.get("request_id").and_then(Value::as_str).unwrap_or("");
                match self.futures.borrow().get(id) {
                    Some(("create_model", _)) => ok(json!({ "model_id": "sess:train:0" })),
                    Some(("optim_step", _)) => ok(json!({ "metrics": { "lr": 0.1 } })),
                    Some((kind, n)) => HttpResponse {
                        status: 200,
                        headers: Headers(vec![(
                            "content-type".into(),
                            "application/x-protobuf".into(),
                        )]),
                        body: if *kind == "sample" {
                            sample_output(*n)
                        } else {
                            fwd_output(*n)
                        },
                    },
                    None => json_resp(404, &json!({ "detail": "unknown future" })),
                }
            }
            "/api/v1/training_runs" => ok(json!({
                "training_runs": [{ "training_run_id": "sess:train:0", "base_model": "Qwen/Qwen3-8B" }],
                "cursor": { "offset": 0, "limit": 10, "total_count": 1 },
            })),
            p if p.starts_with("/api/v1/sessions/") => ok(json!({})),
            _ => json_resp(404, &json!({ "detail": "not found" })),
        }
    }

    /// The answer to one request: the default, or whatever the fuzzer says.
    fn answer(&self, req: &HttpRequest) -> (Result<HttpResponse, TransportError>, f64) {
        self.requests.set(self.requests.get() + 1);
        let mut input = self.input.borrow_mut();
        let Some(mode) = input.byte() else {
            drop(input);
            return (Ok(self.default_answer(req)), 0.0);
        };
        let delay = if mode & 0x80 != 0 {
            f64::from(input.byte().unwrap_or(0)) * 1000.0
        } else {
            0.0
        };
        let status_of = |b: u8| -> u16 {
            const S: [u16; 16] = [
                200, 400, 401, 402, 404, 408, 409, 410, 422, 429, 500, 502, 503, 504, 302, 418,
            ];
            S[usize::from(b) % S.len()]
        };
        let r = match mode & 0x7f {
            // Mostly well-formed answers, so the fuzzer gets deep.
            0..=63 => {
                drop(input);
                Ok(self.default_answer(req))
            }
            64..=71 => Err(TransportError::Connection("reset by fuzzer".into())),
            72..=75 => Err(TransportError::Timeout),
            // A status with fuzzed retry headers and body.
            76..=95 => {
                let status = status_of(input.byte().unwrap_or(0));
                let mut h = Headers::default();
                let flags = input.byte().unwrap_or(0);
                for (bit, name) in [
                    (1, "retry-after"),
                    (2, "retry-after-ms"),
                    (4, "x-should-retry"),
                    (8, "www-authenticate"),
                    (16, "x-deprecation-note"),
                    (32, "x-deprecation-level"),
                    (64, "x-request-id"),
                ] {
                    if flags & bit != 0 {
                        h.0.push((name.into(), input.text()));
                    }
                }
                let ct = if flags & 128 != 0 {
                    "application/x-protobuf"
                } else {
                    "application/json"
                };
                h.0.push(("content-type".into(), ct.into()));
                let body = input.chunk(true);
                Ok(HttpResponse {
                    status,
                    headers: h,
                    body,
                })
            }
            // 200 with a fuzzed JSON-ish or protobuf body.
            96..=111 => {
                let proto = input.byte().unwrap_or(0) & 1 == 1;
                let body = input.chunk(true);
                let ct = if proto {
                    "application/x-protobuf"
                } else {
                    "application/json"
                };
                Ok(HttpResponse {
                    status: 200,
                    headers: Headers(vec![("content-type".into(), ct.into())]),
                    body,
                })
            }
            // try_again / metadata-only / error answers of a future poll.
            112..=119 => {
                let v = match input.byte().unwrap_or(0) % 4 {
                    0 => {
                        json!({ "type": "try_again", "queue_state": input.text(), "queue_state_reason": input.text() })
                    }
                    1 => {
                        json!({ "status": "complete_metadata", "response_payload_size": u64::from(input.byte().unwrap_or(0)) << (input.byte().unwrap_or(0) % 64) })
                    }
                    2 => json!({ "error": input.text(), "category": input.text() }),
                    _ => json!({ "detail": input.text() }),
                };
                Ok(json_resp(200, &v))
            }
            // The default answer's JSON with one field replaced by fuzzed JSON.
            _ => {
                let key = input.text();
                let val: Value = serde_json::from_slice(&input.chunk(false)).unwrap_or(Value::Null);
                drop(input);
                let mut r = self.default_answer(req);
                if let Ok(Value::Object(mut m)) = serde_json::from_slice::<Value>(&r.body) {
                    m.insert(key, val);
                    r.body = Value::Object(m).to_string().into_bytes();
                }
                Ok(r)
            }
        };
        (r, delay)
    }
}

struct Mock {
    clock: Rc<Clock>,
    server: Rc<Server>,
    spawner: futures_executor::LocalSpawner,
    rng: Cell<u64>,
}

impl Host for Mock {}

impl Platform for Mock {
    fn send(
        &self,
        req: HttpRequest,
    ) -> LocalBoxFuture<'static, Result<HttpResponse, TransportError>> {
        let (r, delay) = self.server.answer(&req);
        let clock = self.clock.clone();
        let timeout = req
            .timeout
            .map_or(f64::INFINITY, |t| t.as_secs_f64() * 1000.0);
        Box::pin(async move {
            if delay > 0.0 {
                let wait = delay.min(timeout);
                Sleep {
                    deadline: clock.now_ms.get() + wait,
                    clock,
                }
                .await;
                if delay > timeout {
                    return Err(TransportError::Timeout);
                }
            }
            r
        })
    }
    fn sleep(&self, d: Duration) -> LocalBoxFuture<'static, ()> {
        let clock = self.clock.clone();
        let deadline = clock.now_ms.get() + d.as_secs_f64() * 1000.0;
        Box::pin(Sleep { clock, deadline })
    }
    fn now_ms(&self) -> f64 {
        self.clock.now_ms.get()
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

fn datum() -> Datum {
    let mut inputs = tinker_core::types::LossFnInputs::new();
    inputs.insert("target_tokens", TensorData::from_i64(vec![2, 3, 4]));
    inputs.insert("weights", TensorData::from_f32(vec![0.0, 1.0, 1.0]));
    Datum::new(ModelInput::from_ints(vec![1, 2, 3]), inputs)
}

fn call() -> CallOptions {
    CallOptions {
        timeout: Some(Duration::from_secs(600)),
        ..Default::default()
    }
}

/// Runs the scenario, counting the steps that settled.
async fn scenario(svc: ServiceClient, settled: Rc<Cell<u32>>) {
    let done = || settled.set(settled.get() + 1);
    let lora = LoraOptions {
        base_model: "Qwen/Qwen3-8B".into(),
        lora: LoraConfig::new(8),
        user_metadata: None,
        optimizer: None,
    };
    let tc = svc
        .create_lora_training_client(lora, call())
        .expect("valid input")
        .await;
    done();
    if let Ok(tc) = tc {
        let fb = tc
            .forward_backward(vec![datum(), datum()], "cross_entropy", None, call())
            .expect("valid input");
        let opt = tc
            .optim_step(OptimParams::Adam(AdamParams::default()), call())
            .expect("valid input");
        let (a, b) = futures_util::future::join(fb, opt).await;
        done();
        if let Ok(out) = a {
            let _ = format!("{out:?}");
        }
        let _ = b;
    }
    let sc = svc
        .create_sampling_client(
            None,
            Some("Qwen/Qwen3-8B".into()),
            SamplingOptions::default(),
            call(),
        )
        .expect("valid input")
        .await;
    done();
    if let Ok(sc) = sc {
        let mut params = SamplingParams::default();
        params.max_tokens = Some(4);
        let req = SampleRequest::new(ModelInput::from_ints(vec![1, 2]), 2, params);
        let s1 = sc.sample(req.clone(), call()).expect("valid input");
        let s2 = sc.sample(req, call()).expect("valid input");
        let (a, _b) = futures_util::future::join(s1, s2).await;
        done();
        if let Ok(r) = a {
            assert!(
                r.sequences.len() == 2,
                "2 sequences asked, {} returned",
                r.sequences.len()
            );
        }
    }
    if let Ok(rest) = svc.rest_client().await {
        let call = RestCall::list_training_runs(10, 0, AccessScope::Owned, None);
        let _ = rest.call(call.expect("valid input")).await;
    }
    done();
    let _ = svc.close(FinishStatus::Success, None).await;
    done();
}

fuzz_target!(|data: &[u8]| {
    {
        let mut pool = LocalPool::new();
        let clock = Rc::new(Clock::default());
        clock.now_ms.set(1.7e12);
        let server = Rc::new(Server {
            input: RefCell::new(Input {
                data: data.to_vec(),
                pos: 0,
            }),
            next_id: Cell::new(0),
            futures: RefCell::new(BTreeMap::new()),
            requests: Cell::new(0),
        });
        let env = Rc::new(Mock {
            clock: clock.clone(),
            server: server.clone(),
            spawner: pool.spawner(),
            rng: Cell::new(0x9e37_79b9_7f4a_7c15),
        });
        let opts = ClientOptions {
            api_key: Some("tml-fuzz".into()),
            base_url: "http://sim".into(),
            max_retries: 3,
            background: false,
            telemetry: false,
            ..Default::default()
        };
        let svc = ServiceClient::new(env, opts).expect("valid options");
        let settled = Rc::new(Cell::new(0));
        let finished = Rc::new(Cell::new(false));
        let (s, f) = (settled.clone(), finished.clone());
        pool.spawner()
            .spawn_local(async move {
                scenario(svc, s).await;
                f.set(true);
            })
            .expect("spawn");
        let mut advances = 0u64;
        loop {
            pool.run_until_stalled();
            if finished.get() {
                break;
            }
            if !clock.advance() {
                panic!(
                    "hang: {} of 6 steps settled, nothing left to run and no timer pending",
                    settled.get()
                );
            }
            advances += 1;
            // 600 s timeouts on every call bound a run; this is far beyond them.
            assert!(
                advances < 1_000_000 && server.requests.get() < 1_000_000,
                "livelock: {} timer advances, {} requests, {} steps settled",
                advances,
                server.requests.get(),
                settled.get()
            );
        }
    }
});
