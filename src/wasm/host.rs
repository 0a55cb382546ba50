//! The runtime's environment, files and commands, for the platform seam's methods of the
//! same names (`crate::platform::Host`): registered once by the entry points of runtimes
//! that have them (Node, Bun, Deno: `pkg/host.js`), absent in browsers and Workers, where
//! every lookup answers "none". The rules that use them are the core's
//! (`client::environment`).

use std::cell::RefCell;

#[cfg(feature = "environment")]
use futures_util::future::LocalBoxFuture;
#[cfg(feature = "environment")]
use js_sys::Function;
use wasm_bindgen::prelude::*;

#[cfg(feature = "environment")]
use super::platform::command_request;
use super::platform::JsPlatform;
use crate::platform::Host;
#[cfg(feature = "environment")]
use crate::platform::{HttpResponse, Platform, TransportError};

#[wasm_bindgen]
extern "C" {
    /// `pkg/host.js`'s object (its functions never throw).
    #[derive(Clone)]
    pub type HostObject;
    #[wasm_bindgen(method)]
    fn env(this: &HostObject, name: &str) -> Option<String>;
    #[cfg(feature = "environment")]
    #[wasm_bindgen(method, js_name = readTextFile)]
    fn read_text_file(this: &HostObject, path: &str) -> Option<String>;
    /// Runs a command, with `fetch`'s shape (`platform::command_request`).
    #[cfg(feature = "environment")]
    #[wasm_bindgen(method, getter)]
    fn run(this: &HostObject) -> Function;
}

thread_local! {
    static HOST: RefCell<Option<HostObject>> = const { RefCell::new(None) };
}

/// Registers the runtime's host (called once by the Node, Bun and Deno entry points).
#[wasm_bindgen(js_name = __setHost, skip_typescript)]
pub fn set_host(host: HostObject) {
    HOST.with(|h| *h.borrow_mut() = Some(host));
}

fn host() -> Option<HostObject> {
    HOST.with(|h| h.borrow().clone())
}

/// The registered host as the core's [`Host`] (every answer "none" when there is none).
pub struct JsHost;

impl Host for JsHost {
    fn env_var(&self, name: &str) -> Option<String> {
        host()?.env(name)
    }

    #[cfg(feature = "environment")]
    fn read_text_file(&self, path: &str) -> Option<String> {
        host()?.read_text_file(path)
    }

    #[cfg(feature = "environment")]
    fn run_command(
        &self,
        command: &str,
    ) -> LocalBoxFuture<'static, Result<HttpResponse, TransportError>> {
        match host() {
            Some(h) => JsPlatform { fetch: h.run() }.send(command_request(command)),
            None => Box::pin(async {
                Err(TransportError::Connection(
                    "this runtime cannot run commands".into(),
                ))
            }),
        }
    }
}

/// The platform seam's environment, files and commands of a JS client: the runtime's
/// (registered with `__setHost`).
impl Host for JsPlatform {
    fn env_var(&self, name: &str) -> Option<String> {
        JsHost.env_var(name)
    }

    #[cfg(feature = "environment")]
    fn read_text_file(&self, path: &str) -> Option<String> {
        JsHost.read_text_file(path)
    }

    #[cfg(feature = "environment")]
    fn run_command(
        &self,
        command: &str,
    ) -> LocalBoxFuture<'static, Result<HttpResponse, TransportError>> {
        JsHost.run_command(command)
    }
}
