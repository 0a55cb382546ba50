//! The client options of `ServiceClient`, `RestClient` and `SamplingClient.fromSamplerHandle`
//! (camelCase, as openai-node's), read into the core's `ClientOptions`.

use std::rc::Rc;

use js_sys::Function;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use super::common::*;
use crate::config::SessionState as CoreSessionState;
use crate::environment::Given;
use crate::map::StrMap;
use crate::options::{ClientOptions as CoreOptions, LogLevel, Logger};
use crate::wasm::convert::declare_params;
use crate::wasm::convert::describe;
use crate::wasm::errors::{input_error, range_error, tinker_error, type_error};
use crate::wasm::host::JsHost;
use crate::wasm::platform::Runtime;

fn js_logger(logger: JsValue, level: LogLevel) -> Logger {
    Rc::new(move |l: LogLevel, msg: &str| {
        if l < level {
            return;
        }
        let name = match l {
            LogLevel::Debug => "debug",
            LogLevel::Info => "info",
            LogLevel::Warn => "warn",
            LogLevel::Error => "error",
        };
        let target = if logger.is_undefined() || logger.is_null() {
            get(&js_sys::global(), "console")
        } else {
            logger.clone()
        };
        if let Ok(f) = get(&target, name).dyn_into::<Function>() {
            let _ = f.call1(&target, &JsValue::from_str(&format!("[tinker] {msg}")));
        }
    })
}

declare_params! {
    ts = CLIENT_OPTIONS_TS;

    /// Options of `ServiceClient` and `RestClient` (camelCase, as openai-node's).
    ClientOptions("client options") {
        /// API key (`tml-…`). Defaults to `TINKER_API_KEY` where an environment exists (Node).
        apiKey: String => "?: string",
        /// API base URL. Defaults to `TINKER_BASE_URL`, then the production API.
        baseURL: String => "?: string",
        /// HTTP-level retries per request (default 10, as the Python SDK; at most 100).
        maxRetries: u32 => "?: number",
        /// Per-request timeout in ms (default 60 000).
        timeout: f64 => "?: number",
        /// A `fetch` to send the requests with (proxies, tests, custom runtimes). Default: the
        /// global `fetch`; in Node, `node:http`/`node:https` with keep-alive agents.
        fetch: JsValue => "?: (input: string, init: RequestInit) => Promise<Response>",
        /// Headers sent with every request (names are HTTP tokens; values have no line breaks:
        /// else a TypeError naming `defaultHeaders.<name>`).
        defaultHeaders: StrMap<String> => "?: Record<string, string>",
        /// Allow use in a browser, where the API key is visible to the page's users.
        dangerouslyAllowBrowser: bool => "?: boolean",
        /// Project of new sessions (default `TINKER_PROJECT_ID`); also the target of `copyWeights`.
        projectId: String => "?: string",
        /// Metadata of new sessions.
        userMetadata: StrMap<String> => "?: Record<string, string>",
        /// Display name of new sessions.
        displayName: String => "?: string",
        /// Tags of new sessions (default: comma-separated `TINKER_TAGS`).
        tags: Vec<String> => "?: string[]",
        /// Resume an existing session (e.g. across Worker requests) instead of creating one.
        session: SessionState => "?: SessionState",
        /// Shorthand for `session: { sessionId }`.
        sessionId: String => "?: string",
        /// Background timers: heartbeat, config refresh, JWT refresh, telemetry flush. Default
        /// true, except in Workers (timers die with the request): call `heartbeat()` yourself there.
        heartbeat: bool => "?: boolean",
        /// Send telemetry batches (default true).
        telemetry: bool => "?: boolean",
        /// Where log messages go (default `console`).
        logger: JsValue => "?: {\n    /** Called with debug-level messages (absent: dropped). */\n    debug?(msg: string): void;\n    /** Called with info-level messages (absent: dropped). */\n    info?(msg: string): void;\n    /** Called with warn-level messages (absent: dropped). */\n    warn?(msg: string): void;\n    /** Called with error-level messages (absent: dropped). */\n    error?(msg: string): void\n  }",
        /// Minimum level logged (default 'warn').
        logLevel: String => "?: 'debug' | 'info' | 'warn' | 'error' | 'off'",
        /// Loads the tokenizer with a resolved id for `getTokenizer()` (full build), e.g.
        /// `(id) => Tokenizer.fromURL(`https://my.cdn/${id}/tokenizer.json`, { config_url: … })`.
        tokenizerLoader: JsValue => "?: (id: string) => unknown",
        /// Or: a base URL under which `${id}/tokenizer.json` and `${id}/tokenizer_config.json` live.
        tokenizerBaseURL: String => "?: string",
    }


    /// What another process or request needs to resume a session.
    SessionState("session") {
        /// The session's id.
        sessionId: String => ": string",
        /// The seq id of the session's next model (default 0).
        nextModelSeqId: u32 => "?: number",
        /// The seq id of the session's next sampling session (default 0).
        nextSamplingSessionSeqId: u32 => "?: number",
    }
}

/// Parses the client options shared by `ServiceClient` and `RestClient`.
pub(super) fn client_options(
    v: &JsValue,
    what: &str,
) -> Result<(CoreOptions, Option<Function>), JsValue> {
    let o = ClientOptions::read_as(v, what)?;
    let runtime = Runtime::detect();
    if runtime == Runtime::Browser && o.dangerouslyAllowBrowser != Some(true) {
        return Err(tinker_error(
            "It looks like you're running in a browser-like environment. This is disabled by default, as it risks exposing your Tinker API key to attackers. If you understand the risks and have appropriate mitigations in place (a short-lived key, a local simulator, or a relay that holds the key), pass `dangerouslyAllowBrowser: true`.",
        ));
    }
    let mut opts = CoreOptions::default();
    let given = Given {
        api_key: o.apiKey,
        base_url: o.baseURL,
        project_id: o.projectId,
        tags: o.tags,
        telemetry: o.telemetry,
        default_headers: o
            .defaultHeaders
            .map(|h| h.into_iter().collect())
            .unwrap_or_default(),
    };
    crate::environment::apply(given, &JsHost, &mut opts);
    if let Some(n) = o.maxRetries {
        opts.max_retries = n;
    }
    if let Some(ms) = o.timeout {
        if ms <= 0.0 {
            return Err(range_error(
                "timeout",
                format!(
                    "must be a positive number of milliseconds, got {}",
                    crate::types::fmt_num(ms)
                ),
            ));
        }
        opts.timeout = tinker_core::time::seconds(ms / 1000.0);
    }
    opts.user_metadata = o.userMetadata.unwrap_or_default();
    opts.display_name = o.displayName;
    opts.session = match (o.session, o.sessionId) {
        (Some(s), _) => Some(CoreSessionState {
            session_id: s
                .sessionId
                .ok_or_else(|| type_error("session.sessionId", "is required"))?,
            next_model_seq_id: s.nextModelSeqId.unwrap_or(0),
            next_sampling_session_seq_id: s.nextSamplingSessionSeqId.unwrap_or(0),
        }),
        (None, id) => id.map(|id| CoreSessionState {
            session_id: id,
            next_model_seq_id: 0,
            next_sampling_session_seq_id: 0,
        }),
    };
    opts.background = o.heartbeat.unwrap_or(runtime != Runtime::Workerd);
    opts.user_agent = (runtime != Runtime::Browser)
        .then(|| format!("tinker-wasm/{} ({})", crate::VERSION, runtime.name()));
    opts.platform = super::platform::platform_info(runtime);
    opts.logger = logger_of(o.logLevel.as_deref(), o.logger)?;
    let fetch = match o.fetch {
        None => None,
        Some(f) if f.is_function() => Some(f.unchecked_into::<Function>()),
        Some(f) => {
            return Err(type_error(
                "fetch",
                format!("must be a function, got {}", describe(&f)),
            ))
        }
    };
    opts.validate().map_err(|e| input_error(&e))?;
    if let Some(key) = &opts.api_key {
        crate::http::check_api_key(key, js_sys::Date::now() / 1000.0)
            .map_err(|e| input_error(&e))?;
    }
    Ok((opts, fetch))
}

/// The `logger` option at the `logLevel` option's level (`None`: `'off'`).
fn logger_of(level: Option<&str>, logger: Option<JsValue>) -> Result<Option<Logger>, JsValue> {
    let level = match level {
        None | Some("warn") => Some(LogLevel::Warn),
        Some("debug") => Some(LogLevel::Debug),
        Some("info") => Some(LogLevel::Info),
        Some("error") => Some(LogLevel::Error),
        Some("off") => None,
        Some(other) => {
            return Err(range_error(
                "logLevel",
                format!(
                    "must be 'debug', 'info', 'warn', 'error' or 'off', got {}",
                    crate::json::quote(other)
                ),
            ))
        }
    };
    let logger = logger.unwrap_or(JsValue::UNDEFINED);
    if !(logger.is_undefined() || logger.is_object()) {
        return Err(type_error(
            "logger",
            format!(
                "must be an object with debug/info/warn/error methods, got {}",
                describe(&logger)
            ),
        ));
    }
    Ok(level.map(|l| js_logger(logger, l)))
}

/// Declares the options of `SamplingClient.fromSamplerHandle` once: its reader and its
/// TypeScript type (a `Pick` of `ClientOptions`, which the type check holds to the client
/// options' names).
macro_rules! handle_options {
    ($($key:literal),*) => {
        /// The options of `SamplingClient.fromSamplerHandle`: the client options that do
        /// not describe the server or the session, which come from the handle.
        pub(super) const HANDLE_OPTIONS: &[&str] = &[$($key),*];

        /// Checks that `v` holds only the options of `fromSamplerHandle`.
        pub(super) fn check_handle_options(v: &JsValue) -> Result<(), JsValue> {
            crate::wasm::convert::Opts::new(v, "fromSamplerHandle options", HANDLE_OPTIONS)
                .map(|_| ())
        }

        #[wasm_bindgen(typescript_custom_section)]
        const HANDLE_OPTIONS_TS: &str = concat!(
            "\n/** Options of `SamplingClient.fromSamplerHandle`: the server, its extra headers and the\n",
            " *  session come from the handle; credentials and local behaviour from here. */\n",
            "export type SamplerHandleOptions = Pick<ClientOptions, never",
            $(" | '", $key, "'",)*
            ">;\n"
        );
    };
}

handle_options!(
    "apiKey",
    "maxRetries",
    "timeout",
    "fetch",
    "dangerouslyAllowBrowser",
    "heartbeat",
    "telemetry",
    "logger",
    "logLevel",
    "tokenizerLoader",
    "tokenizerBaseURL"
);

#[cfg(feature = "tokenizer")]
pub(super) fn tokenizer_source(options: &JsValue, fetch: Option<Function>) -> Result<Tok, JsValue> {
    let o = ClientOptions::read_as(options, "client options")?;
    Ok(std::rc::Rc::new(
        crate::wasm::tokenizer_loader::TokenizerSource::new(
            o.tokenizerLoader.unwrap_or(JsValue::UNDEFINED),
            o.tokenizerBaseURL,
            fetch,
        )?,
    ))
}

#[cfg(not(feature = "tokenizer"))]
pub(super) fn tokenizer_source(_: &JsValue, _: Option<Function>) -> Result<Tok, JsValue> {
    Ok(Tok)
}
