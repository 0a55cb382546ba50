//! Core errors → JS errors: the classes of `pkg/errors.js` (registered by the package
//! entry points at load), or, if they were not registered, plain `Error`s with the same
//! `name`. Bad input becomes a native `TypeError` / `RangeError` with a `field`.

use std::cell::RefCell;

use js_sys::{Object, Reflect};
use wasm_bindgen::prelude::*;

use crate::error::Error;
use crate::types::{InputError, InputErrorKind};

thread_local! {
    static CLASSES: RefCell<Option<Object>> = const { RefCell::new(None) };
}

/// Registers the error classes (called once by each package entry point).
#[wasm_bindgen(js_name = __registerErrorClasses, skip_typescript)]
pub fn register_error_classes(classes: Object) {
    CLASSES.with(|c| *c.borrow_mut() = Some(classes));
}

fn set(o: &JsValue, k: &str, v: &JsValue) {
    let _ = Reflect::set(o, &JsValue::from_str(k), v);
}

/// Parses JSON text into a JS value (plain objects, not Maps).
pub fn json_to_js(v: &crate::json::Value) -> JsValue {
    js_sys::JSON::parse(&v.to_string()).unwrap_or(JsValue::NULL)
}

fn construct(class: &str, message: &str, props: &Object) -> JsValue {
    let ctor = CLASSES.with(|c| {
        c.borrow()
            .as_ref()
            .map(|o| Reflect::get(o, &JsValue::from_str(class)).unwrap_or(JsValue::UNDEFINED))
    });
    if let Some(ctor) = ctor.filter(|c| c.is_function()) {
        let args = js_sys::Array::of2(&JsValue::from_str(message), props);
        if let Ok(e) = Reflect::construct(ctor.unchecked_ref::<js_sys::Function>(), &args) {
            return e;
        }
    }
    let e = js_sys::Error::new(message);
    e.set_name(class);
    let _ = Object::assign(&e, props);
    e.into()
}

/// A native `TypeError`/`RangeError` for bad input, with `field`.
pub fn input_error(e: &InputError) -> JsValue {
    let msg = e.to_string();
    let err: JsValue = match e.kind {
        InputErrorKind::Type => js_sys::TypeError::new(&msg).into(),
        InputErrorKind::Range => js_sys::RangeError::new(&msg).into(),
    };
    set(&err, "field", &JsValue::from_str(&e.field));
    err
}

/// A `TypeError` for `field`.
pub fn type_error(field: &str, msg: impl AsRef<str>) -> JsValue {
    input_error(&InputError::type_error(field, msg.as_ref()))
}

/// A `RangeError` for `field`.
pub fn range_error(field: &str, msg: impl AsRef<str>) -> JsValue {
    input_error(&InputError::range_error(field, msg.as_ref()))
}

/// The JS error for a core error.
pub fn to_js(e: Error) -> JsValue {
    let props = Object::new();
    let message = e.to_string();
    match e {
        Error::Input(i) => input_error(&i),
        Error::Status(s) => {
            set(&props, "status", &JsValue::from(s.status));
            let headers = Object::new();
            for (k, v) in s.headers.iter() {
                set(&headers, &k.to_ascii_lowercase(), &JsValue::from_str(v));
            }
            set(&props, "headers", &headers);
            set(
                &props,
                "requestId",
                &s.request_id
                    .as_deref()
                    .map_or(JsValue::UNDEFINED, JsValue::from_str),
            );
            set(
                &props,
                "body",
                &s.body.as_ref().map_or(JsValue::UNDEFINED, json_to_js),
            );
            construct(crate::error::status_error_class(s.status), &message, &props)
        }
        Error::Connection { .. } => construct("APIConnectionError", &message, &props),
        Error::Timeout { .. } => construct("APITimeoutError", &message, &props),
        Error::Aborted { .. } => construct("APIUserAbortError", &message, &props),
        Error::InvalidResponse { .. } => construct("APIResponseValidationError", &message, &props),
        Error::Closed { .. } => construct("ClientClosedError", &message, &props),
        // The caller's own exception, unchanged (workers-rs keeps a JsValue the same way).
        Error::Callback { error, .. } => match error.get::<JsValue>() {
            Some(v) => v.clone(),
            None => construct("TinkerError", &message, &props),
        },
        Error::RequestFailed {
            request_id,
            category,
            ..
        } => {
            set(&props, "requestId", &JsValue::from_str(&request_id));
            set(&props, "category", &JsValue::from_str(category.as_str()));
            construct("RequestFailedError", &message, &props)
        }
        Error::FutureExpired { request_id } => {
            set(&props, "requestId", &JsValue::from_str(&request_id));
            construct("FutureExpiredError", &message, &props)
        }
    }
}

/// A `TinkerError` with a message (for JS-side misuse that is not an input error).
pub fn tinker_error(message: &str) -> JsValue {
    construct("TinkerError", message, &Object::new())
}

/// Prefixes the `field` (and message) of an input error thrown by a nested reader, so
/// `top_p` read inside `samplingParams` reports `samplingParams.top_p`.
pub fn prefix_field(e: &JsValue, prefix: &str) {
    let field = Reflect::get(e, &JsValue::from_str("field"))
        .ok()
        .and_then(|f| f.as_string());
    if let Some(f) = field {
        if f == prefix {
            return; // already named (e.g. the options object itself)
        }
        let full = if f.is_empty() {
            prefix.to_string()
        } else {
            format!("{prefix}.{f}")
        };
        let msg = Reflect::get(e, &JsValue::from_str("message"))
            .ok()
            .and_then(|m| m.as_string())
            .unwrap_or_default();
        let msg = msg
            .strip_prefix(&format!("{f}: "))
            .map_or(msg.clone(), |rest| format!("{full}: {rest}"));
        set(e, "field", &JsValue::from_str(&full));
        set(e, "message", &JsValue::from_str(&msg));
    }
}
