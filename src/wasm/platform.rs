//! The platform seam over the JS runtime: `fetch` (the global one, or one the caller
//! passes), `setTimeout` (gloo-timers), `Date.now`, `Math.random`, and
//! `wasm_bindgen_futures::spawn_local`. Works the same in Node, browsers and workerd.

use std::time::Duration;

use futures_util::future::{select, Either, LocalBoxFuture};
use js_sys::{Function, Object, Reflect, Uint8Array};
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;

use crate::platform::{Headers, HttpRequest, HttpResponse, Platform, TransportError};

/// `fetch` + timers of the current JS runtime.
pub struct JsPlatform {
    fetch: Function,
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

impl Runtime {
    /// Detects the runtime from globals (never throws).
    pub fn detect() -> Runtime {
        let g = global();
        let ua = get(&get(&g, "navigator"), "userAgent")
            .as_string()
            .unwrap_or_default();
        if ua == "Cloudflare-Workers" {
            return Runtime::Workerd;
        }
        if get(&get(&get(&g, "process"), "versions"), "node").is_string()
            && get(&g, "Deno").is_undefined()
            && get(&g, "Bun").is_undefined()
        {
            return Runtime::Node;
        }
        if !get(&g, "document").is_undefined() || !get(&g, "WorkerGlobalScope").is_undefined() {
            return Runtime::Browser;
        }
        Runtime::Other
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

/// Aborts the fetch when dropped before completion (cancellation and timeouts).
struct AbortOnDrop {
    controller: JsValue,
    done: bool,
}

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        if !self.done {
            if let Ok(abort) = get(&self.controller, "abort").dyn_into::<Function>() {
                let _ = abort.call0(&self.controller);
            }
        }
    }
}

fn js_message(e: &JsValue) -> String {
    let m = get(e, "message")
        .as_string()
        .or_else(|| e.as_string())
        .unwrap_or_else(|| "fetch failed".into());
    let cause = get(&get(e, "cause"), "message").as_string();
    match cause {
        Some(c) if !m.contains(&c) => format!("{m} ({c})"),
        _ => m,
    }
}

async fn do_fetch(
    fetch: Function,
    req: HttpRequest,
    signal: JsValue,
) -> Result<HttpResponse, TransportError> {
    let init = Object::new();
    let _ = Reflect::set(&init, &"method".into(), &req.method.as_str().into());
    let headers = Object::new();
    for (k, v) in req.headers.iter() {
        let _ = Reflect::set(&headers, &JsValue::from_str(k), &JsValue::from_str(v));
    }
    let _ = Reflect::set(&init, &"headers".into(), &headers);
    if let Some(body) = &req.body {
        let _ = Reflect::set(&init, &"body".into(), &Uint8Array::from(&body[..]));
    }
    if !signal.is_undefined() {
        let _ = Reflect::set(&init, &"signal".into(), &signal);
    }
    let promise = fetch
        .call2(&JsValue::UNDEFINED, &JsValue::from_str(&req.url), &init)
        .map_err(|e| TransportError::Connection(js_message(&e)))?;
    let resp = JsFuture::from(js_sys::Promise::resolve(&promise))
        .await
        .map_err(|e| TransportError::Connection(js_message(&e)))?;
    let status = get(&resp, "status").as_f64().unwrap_or(0.0) as u16;
    let mut out = Headers::default();
    let h = get(&resp, "headers");
    if let Ok(entries) = get(&h, "entries").dyn_into::<Function>() {
        if let Ok(iter) = entries.call0(&h) {
            if let Ok(Some(it)) = js_sys::try_iter(&iter) {
                for pair in it.flatten() {
                    let pair: js_sys::Array = pair.unchecked_into();
                    out.0.push((
                        pair.get(0).as_string().unwrap_or_default(),
                        pair.get(1).as_string().unwrap_or_default(),
                    ));
                }
            }
        }
    }
    let buf_fn: Function = get(&resp, "arrayBuffer")
        .dyn_into()
        .map_err(|_| TransportError::Connection("response has no arrayBuffer()".into()))?;
    let buf = JsFuture::from(js_sys::Promise::resolve(
        &buf_fn
            .call0(&resp)
            .map_err(|e| TransportError::Connection(js_message(&e)))?,
    ))
    .await
    .map_err(|e| TransportError::Connection(js_message(&e)))?;
    Ok(HttpResponse {
        status,
        headers: out,
        body: Uint8Array::new(&buf).to_vec(),
    })
}

fn sleep_ms(ms: f64) -> gloo_timers::future::TimeoutFuture {
    gloo_timers::future::TimeoutFuture::new(ms.clamp(0.0, 2_147_483_647.0) as u32)
}

impl Platform for JsPlatform {
    fn send(
        &self,
        req: HttpRequest,
    ) -> LocalBoxFuture<'static, Result<HttpResponse, TransportError>> {
        let fetch = self.fetch.clone();
        Box::pin(async move {
            let controller = Reflect::get(&global(), &"AbortController".into())
                .ok()
                .filter(|c| c.is_function())
                .and_then(|c| {
                    Reflect::construct(c.unchecked_ref::<Function>(), &js_sys::Array::new()).ok()
                });
            let mut guard = controller.clone().map(|controller| AbortOnDrop {
                controller,
                done: false,
            });
            let signal = controller
                .as_ref()
                .map_or(JsValue::UNDEFINED, |c| get(c, "signal"));
            let timeout = req.timeout;
            let fetching = do_fetch(fetch, req, signal);
            let result = match timeout {
                Some(t) => {
                    futures_util::pin_mut!(fetching);
                    match select(fetching, sleep_ms(t.as_secs_f64() * 1000.0)).await {
                        Either::Left((r, _)) => r,
                        Either::Right(_) => Err(TransportError::Timeout), // the guard aborts the fetch
                    }
                }
                None => fetching.await,
            };
            if result.is_ok() {
                if let Some(g) = guard.as_mut() {
                    g.done = true;
                }
            }
            result
        })
    }

    fn sleep(&self, d: Duration) -> LocalBoxFuture<'static, ()> {
        Box::pin(sleep_ms(d.as_secs_f64() * 1000.0))
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
