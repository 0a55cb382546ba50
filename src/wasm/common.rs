//! What the JS classes share: promises from core futures, property access, arguments.

use std::future::Future;

use js_sys::{Promise, Reflect};
use wasm_bindgen::prelude::*;

use crate::error::Error;
use crate::wasm::convert::{self, describe};
use crate::wasm::errors::{to_js, type_error};

pub(super) fn get(o: &JsValue, k: &str) -> JsValue {
    Reflect::get(o, &JsValue::from_str(k)).unwrap_or(JsValue::UNDEFINED)
}

pub(super) fn set(o: &JsValue, k: &str, v: &JsValue) {
    let _ = Reflect::set(o, &JsValue::from_str(k), v);
}

/// Runs a fallible future as a Promise. (Generic over the future, but boxed at once,
/// so `future_to_promise` is instantiated a single time: this saves ~80 KB of wasm.)
#[cfg_attr(not(feature = "tokenizer"), allow(dead_code))]
pub(super) fn promise<F>(f: F) -> Promise
where
    F: Future<Output = Result<JsValue, JsValue>> + 'static,
{
    to_promise(Box::pin(f))
}

pub(super) fn to_promise(
    f: futures_util::future::LocalBoxFuture<'static, Result<JsValue, JsValue>>,
) -> Promise {
    // Guarded: a panic rejects the promise instead of leaving it pending forever.
    crate::wasm::panic::future_to_promise(f)
}

/// Settles a core future as a Promise, converting its value with `to_js`; `call` (the
/// abort listener) lives until then. (A small poll function per value type, where an
/// async block per method cost a state machine and its drop glue each.)
pub(super) fn settle<T: 'static>(
    fut: futures_util::future::LocalBoxFuture<'static, Result<T, Error>>,
    call: Option<convert::Call>,
    to_js: impl FnOnce(T) -> JsValue + 'static,
) -> Promise {
    struct Settle<T> {
        fut: futures_util::future::LocalBoxFuture<'static, Result<T, Error>>,
        to_js: Option<Box<dyn FnOnce(T) -> JsValue>>,
        _call: Option<convert::Call>,
    }
    impl<T> Future for Settle<T> {
        type Output = Result<JsValue, JsValue>;
        fn poll(
            mut self: std::pin::Pin<&mut Self>,
            cx: &mut std::task::Context<'_>,
        ) -> std::task::Poll<Self::Output> {
            let r = std::task::ready!(self.fut.as_mut().poll(cx));
            std::task::Poll::Ready(match (r, self.to_js.take()) {
                (Ok(v), Some(f)) => Ok(f(v)),
                (Ok(_), None) => Ok(JsValue::UNDEFINED),
                (Err(e), _) => Err(core_err(e)),
            })
        }
    }
    to_promise(Box::pin(Settle {
        fut,
        to_js: Some(Box::new(to_js)),
        _call: call,
    }))
}

/// A rejected Promise (for errors found before any work starts).
pub(super) fn reject(e: JsValue) -> Promise {
    Promise::reject(&e)
}

macro_rules! try_or_reject {
    ($e:expr) => {
        match $e {
            Ok(v) => v,
            Err(e) => return reject(e),
        }
    };
}

pub(super) fn core_err(e: Error) -> JsValue {
    to_js(e)
}

/// Reads an environment variable where the runtime has one (Node, Bun, Deno); never throws.
pub(super) fn env_var(name: &str) -> Option<String> {
    use crate::platform::Host as _;
    super::host::JsHost.env_var(name).filter(|s| !s.is_empty())
}

pub(super) fn string_arg(v: &JsValue, field: &str) -> Result<String, JsValue> {
    v.as_string()
        .ok_or_else(|| type_error(field, format!("must be a string, got {}", describe(v))))
}

/// Where `getTokenizer()` loads from, shared by a client and the clients it creates.
#[cfg(feature = "tokenizer")]
pub(crate) type Tok = std::rc::Rc<crate::wasm::tokenizer_loader::TokenizerSource>;
/// No tokenizer in the lite build.
#[cfg(not(feature = "tokenizer"))]
#[derive(Clone)]
pub(crate) struct Tok;

pub(super) use try_or_reject;
