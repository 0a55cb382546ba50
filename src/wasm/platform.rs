//! The platform seam over the JS runtime: `fetch` (the global one, or one the caller
//! passes), `setTimeout` (gloo-timers), `Date.now`, `Math.random`, and
//! `wasm_bindgen_futures::spawn_local`. Works the same in Node, browsers and workerd.

use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use futures_util::future::LocalBoxFuture;
use js_sys::{Function, Reflect};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use crate::options::{python_system, stainless_arch, stainless_os, PlatformInfo};
use crate::platform::{Headers, HttpRequest, HttpResponse, Platform, TransportError};

/// `fetch` + timers of the current JS runtime.
pub struct JsPlatform {
    pub(super) fetch: Function,
}

fn global() -> JsValue {
    js_sys::global().into()
}

fn get(o: &JsValue, k: &str) -> JsValue {
    Reflect::get(o, &JsValue::from_str(k)).unwrap_or(JsValue::UNDEFINED)
}

/// Which JS runtime this is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Runtime {
    /// Node.js.
    Node,
    /// Cloudflare workerd.
    Workerd,
    /// A browser page or browser worker.
    Browser,
    /// Something else (Deno, Bun, …).
    Other,
}

#[wasm_bindgen(module = "/src/wasm/js/platform.js")]
extern "C" {
    /// `kind\nplatform\narch\nname\nversion`, read off the runtime's globals.
    fn runtime_facts() -> String;
}

impl Runtime {
    /// Detects the runtime from globals (never throws).
    pub fn detect() -> Runtime {
        Runtime::from_kind(runtime_facts().split('\n').next().unwrap_or(""))
    }
    fn from_kind(kind: &str) -> Runtime {
        match kind {
            "node" => Runtime::Node,
            "workerd" => Runtime::Workerd,
            "browser" => Runtime::Browser,
            _ => Runtime::Other,
        }
    }
    /// The name used in telemetry and `User-Agent`.
    pub fn name(self) -> &'static str {
        match self {
            Runtime::Node => "node",
            Runtime::Workerd => "workerd",
            Runtime::Browser => "browser",
            Runtime::Other => "js",
        }
    }
}

/// What this runtime is, for the `X-Stainless-*` headers and telemetry's `platform`
/// (the core maps the names, `crate::options`); `None` in browsers.
pub fn platform_info(runtime: Runtime) -> Option<PlatformInfo> {
    if runtime == Runtime::Browser {
        return None;
    }
    let facts = runtime_facts();
    let mut f = facts.split('\n').skip(1);
    let mut next = || f.next().unwrap_or("");
    let (platform, arch, name, version) = (next(), next(), next(), next());
    Some(PlatformInfo {
        os: stainless_os(platform),
        system: python_system(platform),
        arch: stainless_arch(arch),
        runtime: name.into(),
        runtime_version: if version.is_empty() {
            "unknown".into()
        } else {
            version.into()
        },
    })
}

impl JsPlatform {
    /// A platform over `fetch` (the global one if `None`).
    pub fn new(fetch: Option<Function>) -> Result<Self, JsValue> {
        let fetch = match fetch {
            Some(f) => f,
            None => {
                let f = get(&global(), "fetch");
                if !f.is_function() {
                    return Err(crate::wasm::errors::type_error(
                        "fetch",
                        "no global fetch in this runtime; pass options.fetch",
                    ));
                }
                // Bind to the global object: some runtimes require `this` to be it.
                f.unchecked_into::<Function>().bind0(&global())
            }
        };
        Ok(JsPlatform { fetch })
    }
}

// One JS call per HTTP request (issue 8: the per-request boundary crossings were most of
// the SDK's own CPU per `sample()`): the helper builds the `fetch` init from one header
// string, runs the timeout timer, reads status, headers (one string) and the whole body,
// and settles once with either the response or the error's message: it keeps the result
// on the call object and calls `notify(id)`, one long-lived Rust callback shared by all
// requests (cheaper than a Promise per request and the two closures a JsFuture makes).
#[wasm_bindgen(module = "/src/wasm/js/platform.js")]
extern "C" {
    type PendingRequest;
    #[allow(clippy::too_many_arguments)]
    fn send_request(
        fetch: &Function,
        method: &str,
        url: &str,
        header_lines: &str,
        body: &[u8],
        has_body: bool,
        timeout_ms: f64,
        connect_ms: f64,
        deadline_ms: f64,
        id: u32,
        notify: &Function,
    ) -> PendingRequest;
    #[wasm_bindgen(method, getter)]
    fn result(this: &PendingRequest) -> JsValue;
    fn abort_request(call: &PendingRequest);

    type RequestResult;
    #[wasm_bindgen(method, getter)]
    fn error(this: &RequestResult) -> Option<String>;
    #[wasm_bindgen(method, getter)]
    fn timeout(this: &RequestResult) -> bool;
    #[wasm_bindgen(method, getter)]
    fn status(this: &RequestResult) -> f64;
    #[wasm_bindgen(method, getter)]
    fn headers(this: &RequestResult) -> String;
    #[wasm_bindgen(method, getter)]
    fn body(this: &RequestResult) -> Vec<u8>;
}

/// Requests in flight: per id, whether JS has settled it and the task to wake then.
#[derive(Default)]
struct InFlight {
    slots: Vec<Option<Slot>>,
    free: Vec<u32>,
}

struct Slot {
    settled: bool,
    waker: Option<Waker>,
}

thread_local! {
    static IN_FLIGHT: RefCell<InFlight> = RefCell::default();
    /// The one callback every request settles through (`notify(id)` in the JS above).
    static NOTIFY: Function = Closure::<dyn Fn(u32)>::new(|id: u32| {
        let waker = IN_FLIGHT.with(|f| {
            let mut f = f.borrow_mut();
            // A request dropped before it settled has no slot any more.
            let slot = f.slots.get_mut(id as usize)?.as_mut()?;
            slot.settled = true;
            slot.waker.take()
        });
        if let Some(w) = waker {
            w.wake();
        }
    })
    .into_js_value()
    .unchecked_into();
}

impl InFlight {
    fn open() -> u32 {
        IN_FLIGHT.with(|f| {
            let mut f = f.borrow_mut();
            let slot = Some(Slot {
                settled: false,
                waker: None,
            });
            match f.free.pop() {
                Some(id) => {
                    f.slots[id as usize] = slot;
                    id
                }
                None => {
                    f.slots.push(slot);
                    (f.slots.len() - 1) as u32
                }
            }
        })
    }

    fn close(id: u32) {
        IN_FLIGHT.with(|f| {
            let mut f = f.borrow_mut();
            if f.slots[id as usize].take().is_some() {
                f.free.push(id);
            }
        })
    }
}

/// A request in flight: ready once JS settled it; aborts it when dropped before that
/// (cancellation).
struct Pending {
    id: u32,
    call: Option<PendingRequest>,
}

impl Future for Pending {
    type Output = JsValue;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<JsValue> {
        let id = self.id;
        let settled = IN_FLIGHT.with(|f| {
            let mut f = f.borrow_mut();
            let slot = f.slots[id as usize]
                .as_mut()
                .expect("a pending request has its slot");
            if !slot.settled {
                slot.waker = Some(cx.waker().clone());
            }
            slot.settled
        });
        if !settled {
            return Poll::Pending;
        }
        InFlight::close(id);
        let call = self.call.take().expect("polled after it completed");
        Poll::Ready(call.result())
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        if let Some(call) = self.call.take() {
            // The slot goes first: aborting settles the call, whose notify then finds none.
            InFlight::close(self.id);
            abort_request(&call);
        }
    }
}

async fn do_fetch(fetch: Function, req: HttpRequest) -> Result<HttpResponse, TransportError> {
    let mut lines = String::new();
    for (k, v) in req.headers.iter() {
        // fetch refuses these in a header anyway; say so instead of mangling the list.
        if [k, v]
            .iter()
            .any(|s| s.bytes().any(|b| b == b'\n' || b == b'\r'))
        {
            return Err(TransportError::Connection(format!(
                "invalid header {}: names and values cannot contain line breaks",
                crate::json::quote(k)
            )));
        }
        lines.push_str(k);
        lines.push('\n');
        lines.push_str(v);
        lines.push('\n');
    }
    let ms = |t: Option<Duration>| {
        t.map_or(0.0, |t| {
            (t.as_secs_f64() * 1000.0).clamp(1.0, 2_147_483_647.0)
        })
    };
    let (timeout_ms, connect_ms) = (ms(req.timeout), ms(req.connect_timeout));
    let deadline_ms = ms(req.deadline);
    let body = req.body.as_deref().map(|b| &b[..]);
    let id = InFlight::open();
    let call = send_request(
        &fetch,
        req.method.as_str(),
        &req.url,
        &lines,
        body.unwrap_or_default(),
        body.is_some(),
        timeout_ms,
        connect_ms,
        deadline_ms,
        id,
        &NOTIFY.with(Function::clone),
    );
    let r: RequestResult = Pending {
        id,
        call: Some(call),
    }
    .await
    .unchecked_into();
    if let Some(message) = r.error() {
        return Err(if r.timeout() {
            TransportError::Timeout
        } else {
            TransportError::Connection(message)
        });
    }
    let mut headers = Headers::default();
    let text = r.headers();
    let mut parts = text.split('\n');
    while let (Some(k), Some(v)) = (parts.next(), parts.next()) {
        headers.0.push((k.to_string(), v.to_string()));
    }
    Ok(HttpResponse {
        status: r.status() as u16,
        headers,
        body: r.body(),
    })
}

#[cfg(feature = "environment")]
/// A request that runs `command` through `run`, a function with `fetch`'s shape (the
/// host's: the command in place of the URL, its output as the body): commands take the
/// same one-call path as HTTP requests.
pub(super) fn command_request(command: &str) -> HttpRequest {
    HttpRequest {
        method: crate::platform::Method::Post,
        url: command.to_string(),
        headers: Headers::default(),
        body: None,
        timeout: None,
        connect_timeout: None,
        deadline: None,
    }
}

fn sleep_ms(ms: f64) -> gloo_timers::future::TimeoutFuture {
    gloo_timers::future::TimeoutFuture::new(ms.clamp(0.0, 2_147_483_647.0) as u32)
}

impl Platform for JsPlatform {
    fn send(
        &self,
        req: HttpRequest,
    ) -> LocalBoxFuture<'static, Result<HttpResponse, TransportError>> {
        Box::pin(do_fetch(self.fetch.clone(), req))
    }

    fn sleep(&self, d: Duration) -> LocalBoxFuture<'static, ()> {
        // A JS timer can fire early by how stale the event loop's clock was when it was
        // set (libuv reads it once per turn, so a busy turn makes it early by up to that
        // turn's length): what is left is slept again, so a wait is never shorter than
        // asked, as Python's asyncio (which reads the clock at the call) never is.
        let ms = d.as_secs_f64() * 1000.0;
        let until = js_sys::Date::now() + ms;
        Box::pin(async move {
            let mut left = ms;
            loop {
                sleep_ms(left.ceil()).await;
                left = until - js_sys::Date::now();
                if left <= 0.0 {
                    return;
                }
            }
        })
    }

    fn now_ms(&self) -> f64 {
        js_sys::Date::now()
    }

    fn random(&self) -> f64 {
        js_sys::Math::random()
    }

    fn spawn(&self, task: LocalBoxFuture<'static, ()>) {
        // Guarded: a panic ends this task only (never an uncaught exception).
        crate::wasm::panic::spawn_local(task);
    }
}
