//! The platform seam over the JS runtime: `fetch` (the global one, or one the caller
//! passes), `setTimeout` (gloo-timers), `Date.now`, `Math.random`, and
//! `wasm_bindgen_futures::spawn_local`. Works the same in Node, browsers and workerd.

use std::time::Duration;

use futures_util::future::LocalBoxFuture;
use js_sys::{Function, Promise, Reflect};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
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

// One JS call per HTTP request (issue 8: the per-request boundary crossings were most of
// the SDK's own CPU per `sample()`): the helper builds the `fetch` init from one header
// string, runs the timeout timer, reads status, headers (one string) and the whole body,
// and always resolves (never rejects) with either the response or the error's message.
#[wasm_bindgen(inline_js = r#"
function message(e) {
  const m = (e && typeof e.message === 'string' && e.message) || (typeof e === 'string' && e) || 'fetch failed';
  const c = e && e.cause && typeof e.cause.message === 'string' ? e.cause.message : undefined;
  return c !== undefined && !m.includes(c) ? `${m} (${c})` : m;
}
// pkg/node-transport.js's fetch accepts a plain object as its signal: cheaper than an
// AbortController per request.
const PLAIN_SIGNAL = Symbol.for('tinker-wasm.plainAbortSignal');
class PlainAbort {
  constructor() {
    this.signal = { aborted: false, reason: undefined, listener: undefined,
      addEventListener(type, f) { if (type === 'abort') this.listener = f; },
      removeEventListener(type, f) { if (type === 'abort' && this.listener === f) this.listener = undefined; } };
  }
  abort() {
    const s = this.signal;
    if (s.aborted) return;
    s.aborted = true;
    const e = new Error('This operation was aborted');
    e.name = 'AbortError';
    s.reason = e;
    if (s.listener) s.listener();
  }
}
export function send_request(fetch, method, url, headerLines, body, hasBody, timeoutMs) {
  const ac = fetch[PLAIN_SIGNAL] === true ? new PlainAbort() : typeof AbortController === 'function' ? new AbortController() : undefined;
  const call = { promise: undefined, timer: undefined, settled: false, ac };
  call.promise = new Promise((resolve) => {
    call.resolve = resolve;
    const headers = {};
    const h = headerLines.split('\n');
    for (let i = 0; i + 1 < h.length; i += 2) headers[h[i]] = h[i + 1];
    const init = { method, headers };
    if (hasBody) init.body = body.slice();
    if (ac) init.signal = ac.signal;
    if (timeoutMs > 0) {
      call.timer = setTimeout(() => {
        call.timer = undefined;
        settle(call, { error: 'timed out', timeout: true });
        if (ac) ac.abort();
      }, timeoutMs);
    }
    let p;
    try {
      p = Promise.resolve(fetch(url, init));
    } catch (e) {
      settle(call, { error: message(e) });
      return;
    }
    p.then(async (r) => {
      let lines = '';
      const rh = r.headers;
      if (rh && typeof rh.forEach === 'function') rh.forEach((v, k) => { lines += `${k}\n${v}\n`; });
      const bytes = typeof r.bytes === 'function' ? await r.bytes() : new Uint8Array(await r.arrayBuffer());
      settle(call, { status: r.status, headers: lines, body: bytes });
    }).catch((e) => settle(call, { error: message(e) }));
  });
  return call;
}
function settle(call, result) {
  if (call.settled) return;
  call.settled = true;
  if (call.timer !== undefined) clearTimeout(call.timer);
  call.timer = undefined;
  call.resolve(result);
}
export function abort_request(call) {
  if (call.settled) return;
  settle(call, { error: 'aborted' });
  if (call.ac) call.ac.abort();
}
"#)]
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
    ) -> PendingRequest;
    #[wasm_bindgen(method, getter)]
    fn promise(this: &PendingRequest) -> Promise;
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

/// Aborts the request when dropped before it settled (cancellation).
struct AbortOnDrop(Option<PendingRequest>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        if let Some(call) = self.0.take() {
            abort_request(&call);
        }
    }
}

async fn do_fetch(fetch: Function, req: HttpRequest) -> Result<HttpResponse, TransportError> {
    let mut lines = String::new();
    for (k, v) in req.headers.iter() {
        // fetch refuses these in a header anyway; say so instead of mangling the list.
        if [k, v].iter().any(|s| s.contains(['\n', '\r'])) {
            return Err(TransportError::Connection(format!(
                "invalid header {k:?}: names and values cannot contain line breaks"
            )));
        }
        lines.push_str(k);
        lines.push('\n');
        lines.push_str(v);
        lines.push('\n');
    }
    let timeout_ms = req.timeout.map_or(0.0, |t| {
        (t.as_secs_f64() * 1000.0).clamp(1.0, 2_147_483_647.0)
    });
    let body = req.body.as_deref().map(|b| &b[..]);
    let call = send_request(
        &fetch,
        req.method.as_str(),
        &req.url,
        &lines,
        body.unwrap_or_default(),
        body.is_some(),
        timeout_ms,
    );
    let promise = call.promise();
    let mut guard = AbortOnDrop(Some(call));
    let settled = JsFuture::from(promise).await;
    // Settled: nothing to abort. The helper's promise never rejects; a
    // rejection would be a bug in it, reported as a connection error.
    guard.0 = None;
    let r: RequestResult = settled
        .map_err(|_| TransportError::Connection("fetch failed".into()))?
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
