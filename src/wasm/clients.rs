//! The JS classes: `ServiceClient`, `TrainingClient`, `SamplingClient`, `RestClient`.
//! Each is a thin handle on a core client (cheap to clone, so no borrow of the JS object
//! is held across an await, and freeing it mid-call is safe). Methods validate their
//! input and take their place in the request order synchronously, then return a
//! Promise.

use crate::map::StrMap;
use std::cell::RefCell;
use std::future::Future;
use std::rc::Rc;
use std::time::Duration;

use js_sys::{Array, Function, Object, Promise, Reflect};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use crate::config::SessionState;
use crate::error::Error;
use crate::options::{ClientOptions, LogLevel, Logger};
use crate::proto::LossConfigValue;
use crate::rest::{AccessScope, Page, RestCall, RestOutput};
use crate::retry::SamplingRetryConfig;
use crate::sampling::{SampleRequest, SamplingOptions};
use crate::service::{FromStateOptions, LoraOptions};
use crate::session::FinishStatus;
use crate::training::{CustomLossOutput, OptimParams};
use crate::types::{
    InputError, LoraConfig, OptimizerConfig, SamplingParams, TensorData, TensorValues,
};
use crate::wasm::convert::{self, describe, Opts};
use crate::wasm::errors::{input_error, json_to_js, range_error, tinker_error, to_js, type_error};
use crate::wasm::platform::{JsPlatform, Runtime};

fn get(o: &JsValue, k: &str) -> JsValue {
    Reflect::get(o, &JsValue::from_str(k)).unwrap_or(JsValue::UNDEFINED)
}

fn set(o: &JsValue, k: &str, v: &JsValue) {
    let _ = Reflect::set(o, &JsValue::from_str(k), v);
}

/// Runs a fallible future as a Promise. (Generic over the future, but boxed at once,
/// so `future_to_promise` is instantiated a single time: this saves ~80 KB of wasm.)
fn promise<F>(f: F) -> Promise
where
    F: Future<Output = Result<JsValue, JsValue>> + 'static,
{
    to_promise(Box::pin(f))
}

fn to_promise(
    f: futures_util::future::LocalBoxFuture<'static, Result<JsValue, JsValue>>,
) -> Promise {
    // Guarded: a panic rejects the promise instead of leaving it pending forever.
    crate::wasm::panic::future_to_promise(f)
}

/// Settles a core future as a Promise, converting its value with `to_js`; `call` (the
/// abort listener) lives until then. (A small poll function per value type, where an
/// async block per method cost a state machine and its drop glue each.)
fn settle<T: 'static>(
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
fn reject(e: JsValue) -> Promise {
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

fn core_err(e: Error) -> JsValue {
    to_js(e)
}

/// Reads an environment variable where the runtime has one (Node); never throws.
fn env_var(name: &str) -> Option<String> {
    let v = get(&get(&get(&js_sys::global(), "process"), "env"), name);
    v.as_string().filter(|s| !s.is_empty())
}

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

const CLIENT_OPTIONS: &[&str] = &[
    "apiKey",
    "baseURL",
    "maxRetries",
    "timeout",
    "fetch",
    "defaultHeaders",
    "dangerouslyAllowBrowser",
    "projectId",
    "userMetadata",
    "displayName",
    "tags",
    "session",
    "sessionId",
    "heartbeat",
    "telemetry",
    "logger",
    "logLevel",
    "tokenizerLoader",
    "tokenizerBaseURL",
];

/// Parses the client options shared by `ServiceClient` and `RestClient`.
fn client_options(v: &JsValue, what: &str) -> Result<(ClientOptions, Option<Function>), JsValue> {
    let o = Opts::new(v, what, CLIENT_OPTIONS)?;
    let runtime = Runtime::detect();
    if runtime == Runtime::Browser && o.bool("dangerouslyAllowBrowser")? != Some(true) {
        return Err(tinker_error(
            "It looks like you're running in a browser-like environment. This is disabled by default, as it risks exposing your Tinker API key to attackers. If you understand the risks and have appropriate mitigations in place (a short-lived key, a local simulator, or a relay that holds the key), pass `dangerouslyAllowBrowser: true`.",
        ));
    }
    let mut opts = ClientOptions {
        api_key: o.string("apiKey")?.or_else(|| env_var("TINKER_API_KEY")),
        ..Default::default()
    };
    if let Some(url) = o.string("baseURL")?.or_else(|| env_var("TINKER_BASE_URL")) {
        opts.base_url = url;
    }
    if let Some(n) = o.uint("maxRetries", 100)? {
        opts.max_retries = n as u32;
    }
    if let Some(ms) = o.number("timeout")? {
        if ms <= 0.0 {
            return Err(range_error(
                "timeout",
                format!(
                    "must be a positive number of milliseconds, got {}",
                    crate::types::fmt_num(ms)
                ),
            ));
        }
        opts.timeout = Duration::from_secs_f64(ms / 1000.0);
    }
    if let Some(h) = o.string_map("defaultHeaders")? {
        opts.default_headers = h.into_iter().collect();
    }
    opts.project_id = o
        .string("projectId")?
        .or_else(|| env_var("TINKER_PROJECT_ID"));
    opts.user_metadata = o.string_map("userMetadata")?.unwrap_or_default();
    opts.display_name = o.string("displayName")?;
    opts.tags = match o.get("tags") {
        t if t.is_undefined() => env_var("TINKER_TAGS")
            .map(|s| {
                // Sorted and deduplicated by insertion (a handful of tags; no sort code).
                let mut v: Vec<String> = Vec::new();
                for t in s.split(',') {
                    if let Err(i) = v.binary_search_by(|x| x.as_str().cmp(t)) {
                        v.insert(i, t.to_string());
                    }
                }
                v
            })
            .unwrap_or_default(),
        t if Array::is_array(&t) => Array::from(&t)
            .iter()
            .enumerate()
            .map(|(i, x)| {
                x.as_string()
                    .ok_or_else(|| type_error(&format!("tags[{i}]"), "must be a string"))
            })
            .collect::<Result<_, _>>()?,
        t => {
            return Err(type_error(
                "tags",
                format!("must be an array of strings, got {}", describe(&t)),
            ))
        }
    };
    let session = o.get("session");
    opts.session = if !session.is_undefined() && !session.is_null() {
        let s = Opts::new(
            &session,
            "session",
            &["sessionId", "nextModelSeqId", "nextSamplingSessionSeqId"],
        )?;
        Some(SessionState {
            session_id: s
                .string("sessionId")?
                .ok_or_else(|| type_error("session.sessionId", "is required"))?,
            next_model_seq_id: s.uint("nextModelSeqId", u32::MAX as u64)?.unwrap_or(0) as u32,
            next_sampling_session_seq_id: s
                .uint("nextSamplingSessionSeqId", u32::MAX as u64)?
                .unwrap_or(0) as u32,
        })
    } else {
        o.string("sessionId")?.map(|id| SessionState {
            session_id: id,
            next_model_seq_id: 0,
            next_sampling_session_seq_id: 0,
        })
    };
    opts.background = o.bool("heartbeat")?.unwrap_or(runtime != Runtime::Workerd);
    opts.telemetry = o.bool("telemetry")?.unwrap_or(true);
    opts.user_agent = (runtime != Runtime::Browser)
        .then(|| format!("tinker-wasm/{} ({})", crate::VERSION, runtime.name()));
    let level = match o.string("logLevel")?.as_deref() {
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
    let logger = o.get("logger");
    if !(logger.is_undefined() || logger.is_null() || logger.is_object()) {
        return Err(type_error(
            "logger",
            format!(
                "must be an object with debug/info/warn/error methods, got {}",
                describe(&logger)
            ),
        ));
    }
    opts.logger = level.map(|l| js_logger(logger, l));
    let fetch = match o.get("fetch") {
        f if f.is_undefined() => None,
        f if f.is_function() => Some(f.unchecked_into::<Function>()),
        f => {
            return Err(type_error(
                "fetch",
                format!("must be a function, got {}", describe(&f)),
            ))
        }
    };
    opts.validate().map_err(|e| input_error(&e))?;
    crate::http::check_api_key(
        opts.api_key.as_deref().unwrap_or_default(),
        js_sys::Date::now() / 1000.0,
    )
    .map_err(|e| input_error(&e))?;
    Ok((opts, fetch))
}

fn finish_status(v: &JsValue) -> Result<FinishStatus, JsValue> {
    match v.as_string().as_deref() {
        None if v.is_undefined() => Ok(FinishStatus::Success),
        Some("success") => Ok(FinishStatus::Success),
        Some("errored") => Ok(FinishStatus::Errored),
        Some("interrupted") => Ok(FinishStatus::Interrupted),
        _ => Err(type_error(
            "status",
            format!(
                "must be 'success', 'errored' or 'interrupted', got {}",
                describe(v)
            ),
        )),
    }
}

fn retry_config(o: &Opts, key: &str) -> Result<Option<SamplingRetryConfig>, JsValue> {
    let v = o.get(key);
    if v.is_undefined() || v.is_null() {
        return Ok(None);
    }
    // Python's `RetryConfig`: its field names and its units (seconds).
    let r = Opts::new(
        &v,
        key,
        &[
            "max_connections",
            "progress_timeout",
            "retry_delay_base",
            "retry_delay_max",
            "jitter_factor",
            "enable_retry_logic",
            "enable_stuck_detection",
        ],
    )?;
    let mut c = SamplingRetryConfig::default();
    if let Some(n) = r.uint("max_connections", 1_000_000)? {
        if n == 0 {
            return Err(range_error(
                &format!("{key}.max_connections"),
                "must be positive",
            ));
        }
        c.max_connections = Some(n as usize);
    }
    if let Some(s) = r.number("progress_timeout")? {
        c.progress_timeout = Duration::from_secs_f64(s.max(0.0));
    }
    if let Some(s) = r.number("retry_delay_base")? {
        c.retry_delay_base = s.max(0.0);
    }
    if let Some(s) = r.number("retry_delay_max")? {
        c.retry_delay_max = s.max(0.0);
    }
    if let Some(j) = r.number("jitter_factor")? {
        c.jitter_factor = j.clamp(0.0, 1.0);
    }
    if let Some(b) = r.bool("enable_retry_logic")? {
        c.enable_retry_logic = b;
    }
    if let Some(b) = r.bool("enable_stuck_detection")? {
        c.enable_stuck_detection = b;
    }
    Ok(Some(c))
}

fn sampling_options(o: &Opts) -> Result<SamplingOptions, JsValue> {
    Ok(SamplingOptions {
        retry: retry_config(o, "retry_config")?,
        record_stability_info: o.bool("record_stability_info")?.unwrap_or(false),
    })
}

/// The options of `SamplingClient.fromSamplerHandle`: the client options that do not
/// describe the server or the session, which come from the handle.
const HANDLE_OPTIONS: &[&str] = &[
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
    "tokenizerBaseURL",
];

/// Where `getTokenizer()` loads from, shared by a client and the clients it creates.
#[cfg(feature = "tokenizer")]
pub(crate) type Tok = Rc<crate::wasm::tokenizer_loader::TokenizerSource>;
/// No tokenizer in the lite build.
#[cfg(not(feature = "tokenizer"))]
#[derive(Clone)]
pub(crate) struct Tok;

#[cfg(feature = "tokenizer")]
fn tokenizer_source(options: &JsValue, fetch: Option<Function>) -> Result<Tok, JsValue> {
    let o = Opts::new(options, "client options", CLIENT_OPTIONS)?;
    Ok(Rc::new(
        crate::wasm::tokenizer_loader::TokenizerSource::new(
            o.get("tokenizerLoader"),
            o.string("tokenizerBaseURL")?,
            fetch,
        )?,
    ))
}

#[cfg(not(feature = "tokenizer"))]
fn tokenizer_source(_: &JsValue, _: Option<Function>) -> Result<Tok, JsValue> {
    Ok(Tok)
}

// ---------------------------------------------------------------------------------
// ServiceClient

/// The entry point: creates training and sampling clients over one session.
#[wasm_bindgen]
pub struct ServiceClient {
    inner: crate::service::ServiceClient,
    #[cfg_attr(not(feature = "tokenizer"), allow(dead_code))]
    tok: Tok,
}

#[wasm_bindgen]
impl ServiceClient {
    /// Creates a client. Nothing is sent until the first call.
    #[wasm_bindgen(constructor)]
    pub fn new(
        #[wasm_bindgen(unchecked_optional_param_type = "ClientOptions")] options: JsValue,
    ) -> Result<ServiceClient, JsValue> {
        let (opts, fetch) = client_options(&options, "ServiceClient options")?;
        let tok = tokenizer_source(&options, fetch.clone())?;
        let env = Rc::new(JsPlatform::new(fetch)?);
        let inner = crate::service::ServiceClient::new(env, opts).map_err(core_err)?;
        Ok(ServiceClient { inner, tok })
    }

    /// Creates a LoRA training run and a client on it.
    #[wasm_bindgen(js_name = createLoraTrainingClient, unchecked_return_type = "Promise<TrainingClient>")]
    pub fn create_lora_training_client(
        &self,
        #[wasm_bindgen(unchecked_param_type = "CreateLoraTrainingClientParams")] params: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "RequestOptions")] options: JsValue,
    ) -> Promise {
        let o = try_or_reject!(Opts::new(
            &params,
            "createLoraTrainingClient params",
            &[
                "base_model",
                "rank",
                "seed",
                "train_mlp",
                "train_attn",
                "train_unembed",
                "user_metadata",
                "optimizer",
            ]
        ));
        let parsed = (|| -> Result<_, JsValue> {
            let base_model = o
                .string("base_model")?
                .ok_or_else(|| type_error("base_model", "is required (e.g. \"Qwen/Qwen3-8B\")"))?;
            let mut lora = LoraConfig::new(o.uint("rank", u32::MAX as u64)?.unwrap_or(32) as u32);
            lora.seed = o.uint("seed", u64::MAX)?;
            lora.train_mlp = o.bool("train_mlp")?.unwrap_or(true);
            lora.train_attn = o.bool("train_attn")?.unwrap_or(true);
            lora.train_unembed = o.bool("train_unembed")?.unwrap_or(true);
            let optimizer = match o.json("optimizer")? {
                None => None,
                Some(crate::json::Value::Object(m)) => Some(OptimizerConfig(m)),
                Some(other) => {
                    return Err(type_error(
                        "optimizer",
                        format!("must be an object like {{ type: 'adamw' }}, got {other}"),
                    ))
                }
            };
            Ok(LoraOptions {
                base_model,
                lora,
                user_metadata: o.string_map("user_metadata")?,
                optimizer,
            })
        })();
        let lora = try_or_reject!(parsed);
        let call = try_or_reject!(convert::request_options(&options, "createLoraTrainingClient"));
        let fut = try_or_reject!(self
            .inner
            .create_lora_training_client(lora, call.options.clone())
            .map_err(core_err));
        let tok = self.tok.clone(); // Rc (full build) or a unit marker (lite)
        settle(fut, Some(call), move |inner| {
            TrainingClient { inner, tok }.into()
        })
    }

    /// Creates a training run from a `tinker://…/weights/…` checkpoint (weights only).
    #[wasm_bindgen(js_name = createTrainingClientFromState, unchecked_return_type = "Promise<TrainingClient>")]
    pub fn create_training_client_from_state(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] path: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "CreateTrainingClientFromStateParams")]
        params: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "RequestOptions")] options: JsValue,
    ) -> Promise {
        self.create_from_state(path, params, options, false)
    }

    /// Creates a training run from a checkpoint, restoring the optimizer state too.
    #[wasm_bindgen(js_name = createTrainingClientFromStateWithOptimizer, unchecked_return_type = "Promise<TrainingClient>")]
    pub fn create_training_client_from_state_with_optimizer(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] path: JsValue,
        #[wasm_bindgen(
            unchecked_optional_param_type = "Omit<CreateTrainingClientFromStateParams, 'optimizer'>"
        )]
        params: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "RequestOptions")] options: JsValue,
    ) -> Promise {
        self.create_from_state(path, params, options, true)
    }

    fn create_from_state(
        &self,
        path: JsValue,
        params: JsValue,
        options: JsValue,
        with_optimizer: bool,
    ) -> Promise {
        let path = try_or_reject!(path.as_string().ok_or_else(|| type_error(
            "path",
            format!("must be a tinker:// path string, got {}", describe(&path))
        )));
        let allowed: &[&str] = if with_optimizer {
            &["base_model", "user_metadata", "weights_access_token"]
        } else {
            &[
                "base_model",
                "user_metadata",
                "weights_access_token",
                "optimizer",
            ]
        };
        let o = try_or_reject!(Opts::new(
            &params,
            "createTrainingClientFromState params",
            allowed
        ));
        let parsed = (|| -> Result<_, JsValue> {
            let optimizer = match o.json("optimizer")? {
                None => None,
                Some(crate::json::Value::Object(m)) => Some(OptimizerConfig(m)),
                Some(other) => {
                    return Err(type_error(
                        "optimizer",
                        format!("must be an object, got {other}"),
                    ))
                }
            };
            Ok(FromStateOptions {
                path,
                with_optimizer,
                base_model: o.string("base_model")?,
                user_metadata: o.string_map("user_metadata")?,
                weights_access_token: o.string("weights_access_token")?,
                optimizer,
            })
        })();
        let from = try_or_reject!(parsed);
        let call = try_or_reject!(convert::request_options(
            &options,
            "createTrainingClientFromState"
        ));
        let fut = try_or_reject!(self
            .inner
            .create_training_client_from_state(from, call.options.clone())
            .map_err(core_err));
        let tok = self.tok.clone(); // Rc (full build) or a unit marker (lite)
        settle(fut, Some(call), move |inner| {
            TrainingClient { inner, tok }.into()
        })
    }

    /// Creates a sampling client on a base model or saved sampler weights.
    #[wasm_bindgen(js_name = createSamplingClient, unchecked_return_type = "Promise<SamplingClient>")]
    pub fn create_sampling_client(
        &self,
        #[wasm_bindgen(unchecked_param_type = "CreateSamplingClientParams")] params: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "RequestOptions")] options: JsValue,
    ) -> Promise {
        let o = try_or_reject!(Opts::new(
            &params,
            "createSamplingClient params",
            &[
                "model_path",
                "base_model",
                "retry_config",
                "record_stability_info",
            ]
        ));
        let (model_path, base_model) = (
            try_or_reject!(o.string("model_path")),
            try_or_reject!(o.string("base_model")),
        );
        let sampling = try_or_reject!(sampling_options(&o));
        let call = try_or_reject!(convert::request_options(&options, "createSamplingClient"));
        let fut = try_or_reject!(self
            .inner
            .create_sampling_client(model_path, base_model, sampling, call.options.clone())
            .map_err(core_err));
        let tok = self.tok.clone(); // Rc (full build) or a unit marker (lite)
        settle(fut, Some(call), move |inner| {
            SamplingClient { inner, tok }.into()
        })
    }

    /// A client on an existing training run, continuing at `nextSeqId` (to resume a
    /// model in another process or request).
    #[wasm_bindgen(js_name = trainingClient, unchecked_return_type = "Promise<TrainingClient>")]
    pub fn training_client(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] model_id: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "{ next_seq_id?: number }")] params: JsValue,
    ) -> Promise {
        let id = try_or_reject!(string_arg(&model_id, "model_id"));
        let o = try_or_reject!(Opts::new(
            &params,
            "trainingClient params",
            &["next_seq_id"]
        ));
        let next = try_or_reject!(o.uint("next_seq_id", i32::MAX as u64)).unwrap_or(1) as i64;
        let fut = try_or_reject!(self.inner.training_client(&id, next).map_err(core_err));
        let tok = self.tok.clone(); // Rc (full build) or a unit marker (lite)
        settle(fut, None, move |inner| TrainingClient { inner, tok }.into())
    }

    /// A client on an existing sampling session (one another process, request or client
    /// created). It is a clone of that sampler, as Python's restored clients are: its
    /// requests are numbered apart from every other client's, so it only ever gets answers
    /// to its own requests.
    #[wasm_bindgen(js_name = samplingClient, unchecked_return_type = "Promise<SamplingClient>")]
    pub fn sampling_client(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] sampling_session_id: JsValue,
        #[wasm_bindgen(
            unchecked_optional_param_type = "{ base_model?: string; retry_config?: RetryConfig; record_stability_info?: boolean }"
        )]
        params: JsValue,
    ) -> Promise {
        let id = try_or_reject!(string_arg(&sampling_session_id, "sampling_session_id"));
        let o = try_or_reject!(Opts::new(
            &params,
            "samplingClient params",
            &["base_model", "retry_config", "record_stability_info"]
        ));
        let base = try_or_reject!(o.string("base_model"));
        let sampling = try_or_reject!(sampling_options(&o));
        let fut = try_or_reject!(self
            .inner
            .sampling_client(&id, base, sampling)
            .map_err(core_err));
        let tok = self.tok.clone(); // Rc (full build) or a unit marker (lite)
        settle(fut, None, move |inner| SamplingClient { inner, tok }.into())
    }

    /// Models the server offers.
    #[wasm_bindgen(js_name = getServerCapabilities, unchecked_return_type = "Promise<ServerCapabilities>")]
    pub fn get_server_capabilities(&self) -> Promise {
        let inner = self.inner.clone();
        settle(
            Box::pin(async move { inner.get_server_capabilities().await }),
            None,
            |v| json_to_js(&v),
        )
    }

    /// Copies a checkpoint into this client's project (`projectId`); resolves to the
    /// copy's `tinker://` path.
    #[wasm_bindgen(js_name = copyWeights, unchecked_return_type = "Promise<string>")]
    pub fn copy_weights(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] path: JsValue,
        #[wasm_bindgen(
            unchecked_optional_param_type = "{ ttl_seconds?: number; weights_access_token?: string }"
        )]
        params: JsValue,
    ) -> Promise {
        let path = try_or_reject!(string_arg(&path, "path"));
        let o = try_or_reject!(Opts::new(
            &params,
            "copyWeights params",
            &["ttl_seconds", "weights_access_token"]
        ));
        let ttl = try_or_reject!(o.uint("ttl_seconds", u64::MAX));
        let token = try_or_reject!(o.string("weights_access_token"));
        let inner = self.inner.clone();
        settle(
            Box::pin(async move { inner.copy_weights(&path, ttl, token.as_deref()).await }),
            None,
            |p| JsValue::from_str(&p),
        )
    }

    /// A REST client sharing this client's credentials (no session needed).
    #[wasm_bindgen(js_name = restClient)]
    pub fn rest_client(&self) -> RestClient {
        RestClient {
            source: RestSource::Service(self.inner.clone()),
        }
    }

    /// Sends one session heartbeat now (for callers that turned `heartbeat` off, e.g.
    /// in Workers, and keep a session alive across requests).
    #[wasm_bindgen(unchecked_return_type = "Promise<void>")]
    pub fn heartbeat(&self) -> Promise {
        let inner = self.inner.clone();
        settle(
            Box::pin(async move { inner.heartbeat().await }),
            None,
            |_| JsValue::UNDEFINED,
        )
    }

    /// The session's state (`{ sessionId, nextModelSeqId, nextSamplingSessionSeqId }`),
    /// to resume it elsewhere with the `session` option; `null` before connecting.
    #[wasm_bindgen(js_name = sessionState, unchecked_return_type = "SessionState | null")]
    pub fn session_state(&self) -> JsValue {
        match self.inner.session_state() {
            None => JsValue::NULL,
            Some(s) => {
                let o = Object::new();
                set(&o, "sessionId", &JsValue::from_str(&s.session_id));
                set(&o, "nextModelSeqId", &JsValue::from(s.next_model_seq_id));
                set(
                    &o,
                    "nextSamplingSessionSeqId",
                    &JsValue::from(s.next_sampling_session_seq_id),
                );
                o.into()
            }
        }
    }

    /// The Tinker Console page of this session.
    #[wasm_bindgen(getter, js_name = consoleUrl)]
    pub fn console_url(&self) -> String {
        self.inner.console_url()
    }

    /// Finishes the session (`status`: 'success' by default), stops every timer, and
    /// flushes telemetry. Later calls on this client and its children reject.
    #[wasm_bindgen(unchecked_return_type = "Promise<void>")]
    pub fn close(
        &self,
        #[wasm_bindgen(
            unchecked_optional_param_type = "{ status?: 'success' | 'errored' | 'interrupted'; detail?: string }"
        )]
        params: JsValue,
    ) -> Promise {
        let o = try_or_reject!(Opts::new(&params, "close params", &["status", "detail"]));
        let detail = try_or_reject!(o.string("detail"));
        let status = try_or_reject!(finish_status(&o.get("status")));
        let inner = self.inner.clone();
        settle(
            Box::pin(async move { inner.close(status, detail.as_deref()).await }),
            None,
            |_| JsValue::UNDEFINED,
        )
    }
}

// ---------------------------------------------------------------------------------
// TrainingClient

/// A LoRA model being trained. Requests run in call order: `forwardBackward` then
/// `optimStep` without awaiting pipelines them into one server step.
#[wasm_bindgen]
pub struct TrainingClient {
    inner: crate::training::TrainingClient,
    #[cfg_attr(not(feature = "tokenizer"), allow(dead_code))]
    tok: Tok,
}

fn loss_config(o: &Opts) -> Result<Option<StrMap<LossConfigValue>>, JsValue> {
    let v = o.get("loss_fn_config");
    if v.is_undefined() || v.is_null() {
        return Ok(None);
    }
    if !v.is_object() || Array::is_array(&v) {
        return Err(type_error(
            "loss_fn_config",
            format!(
                "must be an object of numbers or strings, got {}",
                describe(&v)
            ),
        ));
    }
    let mut m = StrMap::new();
    for k in convert::keys(&v) {
        let x = get(&v, &k);
        let val = if let Some(n) = x.as_f64() {
            if !n.is_finite() {
                return Err(range_error(
                    &format!("loss_fn_config.{k}"),
                    format!("must be a finite number, got {}", crate::types::fmt_num(n)),
                ));
            }
            LossConfigValue::Number(n)
        } else if let Some(s) = x.as_string() {
            LossConfigValue::Text(s)
        } else {
            return Err(type_error(
                &format!("loss_fn_config.{k}"),
                format!("must be a number or a string, got {}", describe(&x)),
            ));
        };
        m.insert(k, val);
    }
    Ok(Some(m))
}

fn string_arg(v: &JsValue, field: &str) -> Result<String, JsValue> {
    v.as_string()
        .ok_or_else(|| type_error(field, format!("must be a string, got {}", describe(v))))
}

#[wasm_bindgen]
impl TrainingClient {
    /// The model (training run) id.
    #[wasm_bindgen(getter, js_name = modelId)]
    pub fn model_id(&self) -> String {
        self.inner.model_id().to_string()
    }

    /// The seq id the next request will use (with `modelId`, enough to resume the model
    /// in another process via `ServiceClient.trainingClient`).
    #[wasm_bindgen(getter, js_name = nextSeqId)]
    pub fn next_seq_id(&self) -> f64 {
        self.inner.next_seq_id() as f64
    }

    /// The model's info, fetched once at creation (no request).
    #[wasm_bindgen(js_name = getInfo, unchecked_return_type = "ModelInfo")]
    pub fn get_info(&self) -> JsValue {
        json_to_js(&self.inner.info().raw)
    }

    /// The Tinker Console page of this training run.
    #[wasm_bindgen(getter, js_name = consoleUrl)]
    pub fn console_url(&self) -> String {
        self.inner.console_url()
    }

    fn fwd(
        &self,
        data: JsValue,
        loss_fn: JsValue,
        params: JsValue,
        options: JsValue,
        forward_only: bool,
    ) -> Promise {
        let method = if forward_only {
            "forward"
        } else {
            "forwardBackward"
        };
        let data = try_or_reject!(convert::data(&data));
        let loss_fn = try_or_reject!(string_arg(&loss_fn, "loss_fn"));
        try_or_reject!(
            crate::types::validate_loss_fn(&loss_fn).map_err(|e| input_error(&InputError {
                field: "loss_fn".into(),
                ..e
            }))
        );
        let o = try_or_reject!(Opts::new(
            &params,
            &format!("{method} params"),
            &["loss_fn_config"]
        ));
        let config = try_or_reject!(loss_config(&o));
        let call = try_or_reject!(convert::request_options(&options, method));
        let fut = if forward_only {
            self.inner
                .forward(data, &loss_fn, config, call.options.clone())
        } else {
            self.inner
                .forward_backward(data, &loss_fn, config, call.options.clone())
        };
        let fut = try_or_reject!(fut.map_err(core_err));
        settle(fut, Some(call), |o| convert::forward_backward_to_js(&o))
    }

    /// The loss and per-datum outputs (`logprobs`) without accumulating gradients.
    #[wasm_bindgen(unchecked_return_type = "Promise<ForwardBackwardOutput>")]
    pub fn forward(
        &self,
        #[wasm_bindgen(unchecked_param_type = "Datum[]")] data: JsValue,
        #[wasm_bindgen(unchecked_param_type = "LossFn")] loss_fn: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "ForwardParams")] params: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "RequestOptions")] options: JsValue,
    ) -> Promise {
        self.fwd(data, loss_fn, params, options, true)
    }

    /// The loss and per-datum outputs, accumulating gradients for the next `optimStep`.
    /// Batches over the server's chunk limits are split and their metrics combined.
    #[wasm_bindgen(js_name = forwardBackward, unchecked_return_type = "Promise<ForwardBackwardOutput>")]
    pub fn forward_backward(
        &self,
        #[wasm_bindgen(unchecked_param_type = "Datum[]")] data: JsValue,
        #[wasm_bindgen(unchecked_param_type = "LossFn")] loss_fn: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "ForwardParams")] params: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "RequestOptions")] options: JsValue,
    ) -> Promise {
        self.fwd(data, loss_fn, params, options, false)
    }

    /// A custom loss computed in JS: `lossFn(data, logprobs)` returns
    /// `{ loss, gradients, metrics? }` where `gradients[i]` is ∂loss/∂`logprobs[i]`.
    #[wasm_bindgen(js_name = forwardBackwardCustom, unchecked_return_type = "Promise<ForwardBackwardOutput>")]
    pub fn forward_backward_custom(
        &self,
        #[wasm_bindgen(unchecked_param_type = "Datum[]")] data: JsValue,
        #[wasm_bindgen(unchecked_param_type = "CustomLossFn")] loss_fn: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "RequestOptions")] options: JsValue,
    ) -> Promise {
        let data = try_or_reject!(convert::data(&data));
        let f: Function = try_or_reject!(loss_fn.dyn_into().map_err(|v| type_error(
            "loss_fn",
            format!(
                "must be a function (data, logprobs) => {{ loss, gradients }}, got {}",
                describe(&v)
            )
        )));
        let call = try_or_reject!(convert::request_options(
            &options,
            "forwardBackwardCustom"
        ));
        // A JS exception (or rejection) of the loss function rejects the call with it.
        let thrown: Rc<RefCell<Option<JsValue>>> = Rc::new(RefCell::new(None));
        let slot = thrown.clone();
        let loss: crate::training::CustomLossFn = Rc::new(move |data, logprobs| {
            let (f, slot) = (f.clone(), slot.clone());
            Box::pin(async move {
                let js_data: Array = data.iter().map(convert::datum_to_js).collect();
                let js_lp: Array = logprobs
                    .iter()
                    .map(|t| match &t.values {
                        TensorValues::Float32(v) => {
                            JsValue::from(js_sys::Float32Array::from(&v[..]))
                        }
                        TensorValues::Int64(_) => JsValue::NULL,
                    })
                    .collect();
                let fail = |e: JsValue| {
                    *slot.borrow_mut() = Some(e);
                    Error::InvalidResponse {
                        message: "the custom loss function failed".into(),
                    }
                };
                let mut out = f
                    .call2(&JsValue::UNDEFINED, &js_data, &js_lp)
                    .map_err(fail)?;
                if get(&out, "then").is_function() {
                    out = wasm_bindgen_futures::JsFuture::from(Promise::resolve(&out))
                        .await
                        .map_err(fail)?;
                }
                custom_loss_output(&out, logprobs.len()).map_err(fail)
            })
        });
        let fut = try_or_reject!(self
            .inner
            .forward_backward_custom(data, loss, call.options.clone())
            .map_err(core_err));
        promise(async move {
            let _call = call;
            let r = fut.await;
            if let Some(e) = thrown.borrow_mut().take() {
                return Err(e);
            }
            r.map(|o| convert::forward_backward_to_js(&o))
                .map_err(core_err)
        })
    }

    /// Applies the accumulated gradients: `AdamParams` (`{ learning_rate, beta1, … }`), or
    /// another optimizer's params with a `type`.
    #[wasm_bindgen(js_name = optimStep, unchecked_return_type = "Promise<OptimStepResponse>")]
    pub fn optim_step(
        &self,
        #[wasm_bindgen(unchecked_param_type = "AdamParams | DimuonParams | OptimizerParams")]
        params: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "RequestOptions")] options: JsValue,
    ) -> Promise {
        // Required, as in Python (`optim_step()` without params is a TypeError there).
        let p = if !params.is_object() || Array::is_array(&params) {
            return reject(type_error(
                "params",
                format!(
                    "must be AdamParams ({{ learning_rate, … }}), got {}",
                    describe(&params)
                ),
            ));
        } else if get(&params, "type").is_undefined() {
            match convert::adam_params(&params) {
                Ok(a) => OptimParams::Adam(a),
                Err(e) => {
                    crate::wasm::errors::prefix_field(&e, "params");
                    return reject(e);
                }
            }
        } else {
            match try_or_reject!(convert::to_json(&params, "params")) {
                crate::json::Value::Object(m) => OptimParams::Other(m),
                _ => return reject(type_error("params", "must be an object")),
            }
        };
        let call = try_or_reject!(convert::request_options(&options, "optimStep"));
        let fut = try_or_reject!(self
            .inner
            .optim_step(p, call.options.clone())
            .map_err(core_err));
        settle(fut, Some(call), |v| json_to_js(&v))
    }

    /// Saves weights and optimizer state; resolves to `{ path }`.
    #[wasm_bindgen(js_name = saveState, unchecked_return_type = "Promise<{ path: string }>")]
    pub fn save_state(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] name: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "SaveStateParams")] params: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "RequestOptions")] options: JsValue,
    ) -> Promise {
        let name = try_or_reject!(string_arg(&name, "name"));
        let o = try_or_reject!(Opts::new(
            &params,
            "saveState params",
            &["ttl_seconds", "overwrite", "user_metadata"]
        ));
        let (ttl, overwrite, meta) = (
            try_or_reject!(o.uint("ttl_seconds", u64::MAX)),
            try_or_reject!(o.bool("overwrite")).unwrap_or(false),
            try_or_reject!(o.string_map("user_metadata")),
        );
        let call = try_or_reject!(convert::request_options(&options, "saveState"));
        let fut = try_or_reject!(self
            .inner
            .save_state(&name, ttl, overwrite, meta, call.options.clone())
            .map_err(core_err));
        settle(fut, Some(call), |v| json_to_js(&v))
    }

    fn load(&self, path: JsValue, params: JsValue, options: JsValue, optimizer: bool) -> Promise {
        let path = try_or_reject!(string_arg(&path, "path"));
        let o = try_or_reject!(Opts::new(
            &params,
            "loadState params",
            &["weights_access_token"]
        ));
        let token = try_or_reject!(o.string("weights_access_token"));
        let call = try_or_reject!(convert::request_options(&options, "loadState"));
        let fut = try_or_reject!(self
            .inner
            .load_state(&path, optimizer, token, call.options.clone())
            .map_err(core_err));
        settle(fut, Some(call), |v| json_to_js(&v))
    }

    /// Loads a checkpoint's weights into this model (not its optimizer state).
    #[wasm_bindgen(js_name = loadState, unchecked_return_type = "Promise<{ path?: string }>")]
    pub fn load_state(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] path: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "{ weights_access_token?: string }")]
        params: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "RequestOptions")] options: JsValue,
    ) -> Promise {
        self.load(path, params, options, false)
    }

    /// Loads a checkpoint's weights and optimizer state into this model.
    #[wasm_bindgen(js_name = loadStateWithOptimizer, unchecked_return_type = "Promise<{ path?: string }>")]
    pub fn load_state_with_optimizer(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] path: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "{ weights_access_token?: string }")]
        params: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "RequestOptions")] options: JsValue,
    ) -> Promise {
        self.load(path, params, options, true)
    }

    /// Saves weights for sampling as `tinker://…/sampler_weights/{name}`; resolves to `{ path }`.
    #[wasm_bindgen(js_name = saveWeightsForSampler, unchecked_return_type = "Promise<{ path: string }>")]
    pub fn save_weights_for_sampler(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] name: JsValue,
        #[wasm_bindgen(
            unchecked_optional_param_type = "{ ttl_seconds?: number; user_metadata?: Record<string, string> }"
        )]
        params: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "RequestOptions")] options: JsValue,
    ) -> Promise {
        let name = try_or_reject!(string_arg(&name, "name"));
        let o = try_or_reject!(Opts::new(
            &params,
            "saveWeightsForSampler params",
            &["ttl_seconds", "user_metadata"]
        ));
        let (ttl, meta) = (
            try_or_reject!(o.uint("ttl_seconds", u64::MAX)),
            try_or_reject!(o.string_map("user_metadata")),
        );
        let call = try_or_reject!(convert::request_options(&options, "saveWeightsForSampler"));
        let fut = try_or_reject!(self
            .inner
            .save_weights_for_sampler(&name, ttl, meta, call.options.clone())
            .map_err(core_err));
        settle(fut, Some(call), |v| json_to_js(&v))
    }

    /// Exports weights (HuggingFace-style files) as `tinker://…/external_weights/{name}`.
    #[wasm_bindgen(js_name = saveWeightsExternal, unchecked_return_type = "Promise<{ path: string; size_bytes?: number }>")]
    pub fn save_weights_external(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] name: JsValue,
        #[wasm_bindgen(
            unchecked_optional_param_type = "{ ttl_seconds?: number; age_encryption_recipients?: string[] }"
        )]
        params: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "RequestOptions")] options: JsValue,
    ) -> Promise {
        let name = try_or_reject!(string_arg(&name, "name"));
        let o = try_or_reject!(Opts::new(
            &params,
            "saveWeightsExternal params",
            &["ttl_seconds", "age_encryption_recipients"]
        ));
        let ttl = try_or_reject!(o.uint("ttl_seconds", u64::MAX));
        let recipients = match try_or_reject!(o.json("age_encryption_recipients")) {
            None => None,
            Some(crate::json::Value::Array(a)) => Some(try_or_reject!(a
                .into_iter()
                .enumerate()
                .map(
                    |(i, v)| v.as_str().map(str::to_string).ok_or_else(|| type_error(
                        &format!("age_encryption_recipients[{i}]"),
                        "must be a string"
                    ))
                )
                .collect::<Result<Vec<_>, _>>())),
            Some(_) => {
                return reject(type_error(
                    "age_encryption_recipients",
                    "must be an array of strings",
                ))
            }
        };
        let call = try_or_reject!(convert::request_options(&options, "saveWeightsExternal"));
        let fut = try_or_reject!(self
            .inner
            .save_weights_external(&name, ttl, recipients, call.options.clone())
            .map_err(core_err));
        settle(fut, Some(call), |v| json_to_js(&v))
    }

    /// Saves the current weights for sampling and resolves to a client on them.
    #[wasm_bindgen(js_name = saveWeightsAndGetSamplingClient, unchecked_return_type = "Promise<SamplingClient>")]
    pub fn save_weights_and_get_sampling_client(
        &self,
        #[wasm_bindgen(
            unchecked_optional_param_type = "{ kind?: 'snapshot' | 'inflight'; retry_config?: RetryConfig; record_stability_info?: boolean }"
        )]
        params: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "RequestOptions")] options: JsValue,
    ) -> Promise {
        let o = try_or_reject!(Opts::new(
            &params,
            "saveWeightsAndGetSamplingClient params",
            &["kind", "retry_config", "record_stability_info"]
        ));
        let kind = try_or_reject!(o.string("kind")).unwrap_or_else(|| "snapshot".into());
        let sampling = try_or_reject!(sampling_options(&o));
        let call = try_or_reject!(convert::request_options(
            &options,
            "saveWeightsAndGetSamplingClient"
        ));
        let fut = try_or_reject!(self
            .inner
            .save_weights_and_get_sampling_client(&kind, sampling, call.options.clone())
            .map_err(core_err));
        let tok = self.tok.clone(); // Rc (full build) or a unit marker (lite)
        settle(fut, Some(call), move |inner| {
            SamplingClient { inner, tok }.into()
        })
    }

    /// A sampling client on saved sampler weights of this session.
    #[wasm_bindgen(js_name = createSamplingClient, unchecked_return_type = "Promise<SamplingClient>")]
    pub fn create_sampling_client(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] model_path: JsValue,
        #[wasm_bindgen(
            unchecked_optional_param_type = "{ retry_config?: RetryConfig; record_stability_info?: boolean }"
        )]
        params: JsValue,
    ) -> Promise {
        let path = try_or_reject!(string_arg(&model_path, "model_path"));
        let o = try_or_reject!(Opts::new(
            &params,
            "createSamplingClient params",
            &["retry_config", "record_stability_info"]
        ));
        let sampling = try_or_reject!(sampling_options(&o));
        let fut = try_or_reject!(self
            .inner
            .create_sampling_client(&path, sampling)
            .map_err(core_err));
        let tok = self.tok.clone(); // Rc (full build) or a unit marker (lite)
        settle(fut, None, move |inner| SamplingClient { inner, tok }.into())
    }
}

fn custom_loss_output(out: &JsValue, n: usize) -> Result<CustomLossOutput, JsValue> {
    if !out.is_object() {
        return Err(type_error(
            "loss_fn",
            format!(
                "must return {{ loss, gradients, metrics? }}, got {}",
                describe(out)
            ),
        ));
    }
    let loss = get(out, "loss").as_f64().ok_or_else(|| {
        type_error(
            "loss",
            format!("must be a number, got {}", describe(&get(out, "loss"))),
        )
    })?;
    let g = get(out, "gradients");
    if !Array::is_array(&g) {
        return Err(type_error(
            "gradients",
            format!(
                "must be an array with one gradient per datum, got {}",
                describe(&g)
            ),
        ));
    }
    let g: Array = g.unchecked_into();
    if g.length() as usize != n {
        return Err(range_error(
            "gradients",
            format!("must have one gradient per datum ({n}), got {}", g.length()),
        ));
    }
    let mut gradients = Vec::with_capacity(n);
    for (i, x) in g.iter().enumerate() {
        let t = convert::tensor(&x, None, &format!("gradients[{i}]")).or_else(|_| {
            let f = js_sys::Float32Array::new(&x);
            Ok::<_, crate::types::InputError>(TensorData::from_f32(f.to_vec()))
        });
        match t.map_err(|e| input_error(&e))?.values {
            TensorValues::Float32(v) => gradients.push(v),
            TensorValues::Int64(v) => gradients.push(v.into_iter().map(|x| x as f32).collect()),
        }
    }
    let mut metrics = StrMap::new();
    let m = get(out, "metrics");
    if m.is_object() {
        for k in convert::keys(&m) {
            let v = get(&m, &k)
                .as_f64()
                .ok_or_else(|| type_error(&format!("metrics.{k}"), "must be a number"))?;
            metrics.insert(k, v);
        }
    }
    Ok(CustomLossOutput {
        loss,
        gradients,
        metrics,
    })
}

// ---------------------------------------------------------------------------------
// SamplingClient

/// Samples from a base model or saved weights.
#[wasm_bindgen]
pub struct SamplingClient {
    inner: crate::sampling::SamplingClient,
    #[cfg_attr(not(feature = "tokenizer"), allow(dead_code))]
    tok: Tok,
}

fn sampling_params(v: &JsValue) -> Result<SamplingParams, JsValue> {
    if v.is_undefined() || v.is_null() {
        return Ok(SamplingParams::default());
    }
    convert::sampling_params(v)
        .inspect_err(|e| crate::wasm::errors::prefix_field(e, "sampling_params"))
}

#[wasm_bindgen]
impl SamplingClient {
    /// A client for the sampler behind `handle` (from `getSamplerHandle()`, here or in
    /// another process, worker or request; Python's `get_sampler_handle()` too). Nothing
    /// is sent until the first call. It reaches the handle's server with the handle's
    /// extra headers, authenticates with `options.apiKey` (else `TINKER_API_KEY`),
    /// heartbeats the sampler's session while open, and samples as a new clone of the
    /// sampler. `close()` stops it without finishing the session.
    #[wasm_bindgen(js_name = fromSamplerHandle)]
    pub fn from_sampler_handle(
        #[wasm_bindgen(unchecked_param_type = "string")] handle: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "SamplerHandleOptions")] options: JsValue,
    ) -> Result<SamplingClient, JsValue> {
        let handle = handle.as_string().ok_or_else(|| {
            type_error(
                "handle",
                format!(
                    "must be a string from getSamplerHandle(), got {}",
                    describe(&handle)
                ),
            )
        })?;
        Opts::new(&options, "fromSamplerHandle options", HANDLE_OPTIONS)?;
        let (opts, fetch) = client_options(&options, "fromSamplerHandle options")?;
        let tok = tokenizer_source(&options, fetch.clone())?;
        let env = Rc::new(JsPlatform::new(fetch)?);
        let inner =
            crate::sampling::SamplingClient::from_handle(env, &handle, opts).map_err(core_err)?;
        Ok(SamplingClient { inner, tok })
    }

    /// A string that `SamplingClient.fromSamplerHandle` (or Python's
    /// `SamplingClient.from_sampler_handle`) turns back into a client on this sampler,
    /// in another process, worker or request. It carries no credentials. Each client
    /// made from it is a new clone of the sampler, numbered apart from every other.
    #[wasm_bindgen(js_name = getSamplerHandle)]
    pub fn get_sampler_handle(&self) -> Result<String, JsValue> {
        self.inner.sampler_handle().map_err(core_err)
    }

    /// Stops a client made by `fromSamplerHandle` (its heartbeat and timers) without
    /// finishing the session, which belongs to the handle's maker; later calls reject.
    /// (Such a client that is garbage-collected unclosed stops its timers too.)
    /// Does nothing for other clients: their `ServiceClient`'s `close` covers them.
    #[wasm_bindgen(unchecked_return_type = "Promise<void>")]
    pub fn close(&self) -> Promise {
        let inner = self.inner.clone();
        settle(
            Box::pin(async move {
                inner.close().await;
                Ok(())
            }),
            None,
            |_| JsValue::UNDEFINED,
        )
    }

    /// The sampling session id.
    #[wasm_bindgen(getter, js_name = samplingSessionId)]
    pub fn sampling_session_id(&self) -> String {
        self.inner.sampling_session_id().to_string()
    }

    /// The base model (no request).
    #[wasm_bindgen(getter, js_name = baseModel)]
    pub fn base_model(&self) -> String {
        self.inner.base_model().to_string()
    }

    /// The last queue state the server reported (`'active'`, `'paused_capacity'`, …).
    #[wasm_bindgen(getter, js_name = queueState)]
    pub fn queue_state(&self) -> Option<String> {
        self.inner.queue_state().map(|q| q.as_str().to_string())
    }

    /// Draws `num_samples` completions of `prompt`.
    #[wasm_bindgen(unchecked_return_type = "Promise<SampleResponse>")]
    pub fn sample(
        &self,
        #[wasm_bindgen(unchecked_param_type = "SampleParams")] params: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "RequestOptions")] options: JsValue,
    ) -> Promise {
        let o = try_or_reject!(Opts::new(
            &params,
            "sample params",
            &[
                "prompt",
                "num_samples",
                "sampling_params",
                "include_prompt_logprobs",
                "topk_prompt_logprobs",
                "topk_sample_logprobs",
                "target_prompt_logprobs",
                "prompt_alt_tokens_k",
                "prompt_logprobs_last_n",
            ]
        ));
        let parsed = (|| -> Result<SampleRequest, JsValue> {
            let prompt = o.get("prompt");
            if prompt.is_undefined() {
                return Err(type_error(
                    "prompt",
                    "is required (a ModelInput or an array of token ids)",
                ));
            }
            let prompt = convert::model_input(&prompt, "prompt").map_err(|e| input_error(&e))?;
            let mut r = SampleRequest::new(
                prompt,
                o.uint("num_samples", 100_000)?.unwrap_or(1) as u32,
                sampling_params(&o.get("sampling_params"))?,
            );
            r.include_prompt_logprobs = o.bool("include_prompt_logprobs")?.unwrap_or(false);
            r.topk_prompt_logprobs = o.uint("topk_prompt_logprobs", 100_000)?.unwrap_or(0) as u32;
            r.topk_sample_logprobs = o.uint("topk_sample_logprobs", 100_000)?.unwrap_or(0) as u32;
            r.prompt_alt_tokens_k = o.uint("prompt_alt_tokens_k", 100_000)?.unwrap_or(0) as u32;
            r.prompt_logprobs_last_n = o
                .uint("prompt_logprobs_last_n", u32::MAX as u64)?
                .map(|n| n as u32);
            let t = o.get("target_prompt_logprobs");
            if !t.is_undefined() && !t.is_null() {
                r.target_prompt_logprobs = Some(
                    convert::tensor(&t, Some("target_tokens"), "target_prompt_logprobs")
                        .map_err(|e| input_error(&e))?,
                );
            }
            Ok(r)
        })();
        let req = try_or_reject!(parsed);
        let call = try_or_reject!(convert::request_options(&options, "sample"));
        let fut = try_or_reject!(self
            .inner
            .sample(req, call.options.clone())
            .map_err(core_err));
        settle(fut, Some(call), |r| convert::sample_response_to_js(&r))
    }

    /// The logprob of each prompt token (`null` for the first, which has no context).
    #[wasm_bindgen(js_name = computeLogprobs, unchecked_return_type = "Promise<(number | null)[]>")]
    pub fn compute_logprobs(
        &self,
        #[wasm_bindgen(unchecked_param_type = "ModelInput | ArrayLike<number>")] prompt: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "{ prompt_logprobs_last_n?: number }")]
        params: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "RequestOptions")] options: JsValue,
    ) -> Promise {
        let prompt =
            try_or_reject!(convert::model_input(&prompt, "prompt").map_err(|e| input_error(&e)));
        let o = try_or_reject!(Opts::new(
            &params,
            "computeLogprobs params",
            &["prompt_logprobs_last_n"]
        ));
        let last_n =
            try_or_reject!(o.uint("prompt_logprobs_last_n", u32::MAX as u64)).map(|n| n as u32);
        let call = try_or_reject!(convert::request_options(&options, "computeLogprobs"));
        let fut = try_or_reject!(self
            .inner
            .compute_logprobs(prompt, last_n, call.options.clone())
            .map_err(core_err));
        settle(fut, Some(call), |v: Vec<Option<f32>>| {
            v.into_iter()
                .map(|x| x.map_or(JsValue::NULL, |x| JsValue::from_f64(f64::from(x))))
                .collect::<Array>()
                .into()
        })
    }
}

// ---------------------------------------------------------------------------------
// RestClient

enum RestSource {
    Service(crate::service::ServiceClient),
    Own(crate::service::ServiceClient),
}

/// Training runs, checkpoints, sessions and samplers (no session needed).
#[wasm_bindgen]
pub struct RestClient {
    source: RestSource,
}

fn page_to_js(p: Page) -> JsValue {
    let o = Object::new();
    set(
        &o,
        "items",
        &json_to_js(&crate::json::Value::Array(p.items)),
    );
    set(&o, "response", &json_to_js(&p.raw));
    set(
        &o,
        "nextOffset",
        &p.next_offset
            .map_or(JsValue::NULL, |n| JsValue::from_f64(n as f64)),
    );
    set(
        &o,
        "nextCursor",
        &p.next_cursor.as_ref().map_or(JsValue::NULL, json_to_js),
    );
    o.into()
}

fn limit(o: &Opts, default: u64, max: u64) -> Result<u64, JsValue> {
    match o.uint("limit", max)? {
        Some(0) => Err(range_error(
            "limit",
            format!("must be between 1 and {max}, got 0"),
        )),
        l => Ok(l.unwrap_or(default)),
    }
}

fn scope(o: &Opts) -> Result<AccessScope, JsValue> {
    o.string("access_scope")?
        .map_or(Ok(AccessScope::Owned), |s| {
            AccessScope::parse(&s).map_err(|e| input_error(&e))
        })
}

impl RestClient {
    fn service(&self) -> crate::service::ServiceClient {
        match &self.source {
            RestSource::Service(s) | RestSource::Own(s) => s.clone(),
        }
    }

    /// Runs a checked call once connected: one state machine behind every REST method.
    fn run(&self, call: Result<RestCall, Error>) -> Promise {
        let call = try_or_reject!(call.map_err(core_err));
        let s = self.service();
        to_promise(Box::pin(async move {
            let rest = s.rest_client().await.map_err(core_err)?;
            Ok(match rest.call(call).await.map_err(core_err)? {
                RestOutput::Json(v) => json_to_js(&v),
                RestOutput::Page(p) => page_to_js(p),
                RestOutput::Text(t) => JsValue::from_str(&t),
                RestOutput::Nothing => JsValue::UNDEFINED,
            })
        }))
    }
}

#[wasm_bindgen]
impl RestClient {
    /// A REST client with its own credentials (same options as `ServiceClient`).
    #[wasm_bindgen(constructor)]
    pub fn new(
        #[wasm_bindgen(unchecked_optional_param_type = "ClientOptions")] options: JsValue,
    ) -> Result<RestClient, JsValue> {
        let (opts, fetch) = client_options(&options, "RestClient options")?;
        let env = Rc::new(JsPlatform::new(fetch)?);
        let s = crate::service::ServiceClient::new(env, opts).map_err(core_err)?;
        Ok(RestClient {
            source: RestSource::Own(s),
        })
    }

    /// Models the server offers.
    #[wasm_bindgen(js_name = getServerCapabilities, unchecked_return_type = "Promise<ServerCapabilities>")]
    pub fn get_server_capabilities(&self) -> Promise {
        self.run(Ok(RestCall::get_server_capabilities()))
    }

    /// One training run.
    #[wasm_bindgen(js_name = getTrainingRun, unchecked_return_type = "Promise<TrainingRun>")]
    pub fn get_training_run(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] training_run_id: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "{ access_scope?: AccessScope }")]
        params: JsValue,
    ) -> Promise {
        let id = try_or_reject!(string_arg(&training_run_id, "training_run_id"));
        let o = try_or_reject!(Opts::new(
            &params,
            "getTrainingRun params",
            &["access_scope"]
        ));
        let sc = try_or_reject!(scope(&o));
        self.run(RestCall::get_training_run(&id, sc))
    }

    /// The training run of a `tinker://` path.
    #[wasm_bindgen(js_name = getTrainingRunByTinkerPath, unchecked_return_type = "Promise<TrainingRun>")]
    pub fn get_training_run_by_tinker_path(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] path: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "{ access_scope?: AccessScope }")]
        params: JsValue,
    ) -> Promise {
        let path = try_or_reject!(string_arg(&path, "path"));
        let o = try_or_reject!(Opts::new(
            &params,
            "getTrainingRunByTinkerPath params",
            &["access_scope"]
        ));
        let sc = try_or_reject!(scope(&o));
        self.run(RestCall::get_training_run_by_tinker_path(&path, sc))
    }

    /// One page of training runs: `{ items, response, nextOffset }`.
    #[wasm_bindgen(js_name = listTrainingRunsPage, unchecked_return_type = "Promise<Page<TrainingRun>>")]
    pub fn list_training_runs_page(
        &self,
        #[wasm_bindgen(unchecked_optional_param_type = "ListTrainingRunsParams")] params: JsValue,
    ) -> Promise {
        let o = try_or_reject!(Opts::new(
            &params,
            "listTrainingRuns params",
            &["limit", "offset", "access_scope", "project_id"]
        ));
        let (limit, offset, sc, project) = (
            try_or_reject!(limit(&o, 20, 1000)),
            try_or_reject!(o.uint("offset", u64::MAX)).unwrap_or(0),
            try_or_reject!(scope(&o)),
            try_or_reject!(o.string("project_id")),
        );
        self.run(RestCall::list_training_runs(
            limit,
            offset,
            sc,
            project.as_deref(),
        ))
    }

    /// The checkpoints of one training run.
    #[wasm_bindgen(js_name = listCheckpoints, unchecked_return_type = "Promise<CheckpointsListResponse>")]
    pub fn list_checkpoints(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] training_run_id: JsValue,
    ) -> Promise {
        let id = try_or_reject!(string_arg(&training_run_id, "training_run_id"));
        self.run(RestCall::list_checkpoints(&id))
    }

    /// One page of all the caller's checkpoints: `{ items, response, nextOffset }`.
    #[wasm_bindgen(js_name = listUserCheckpointsPage, unchecked_return_type = "Promise<Page<Checkpoint>>")]
    pub fn list_user_checkpoints_page(
        &self,
        #[wasm_bindgen(unchecked_optional_param_type = "{ limit?: number; offset?: number }")]
        params: JsValue,
    ) -> Promise {
        let o = try_or_reject!(Opts::new(
            &params,
            "listUserCheckpoints params",
            &["limit", "offset"]
        ));
        let (limit, offset) = (
            try_or_reject!(limit(&o, 100, 1000)),
            try_or_reject!(o.uint("offset", u64::MAX)).unwrap_or(0),
        );
        self.run(RestCall::list_user_checkpoints(limit, offset))
    }

    /// Deletes a checkpoint.
    #[wasm_bindgen(js_name = deleteCheckpointFromTinkerPath, unchecked_return_type = "Promise<void>")]
    pub fn delete_checkpoint(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] path: JsValue,
    ) -> Promise {
        let path = try_or_reject!(string_arg(&path, "path"));
        self.run(RestCall::delete_checkpoint(&path))
    }

    /// Makes a checkpoint public.
    #[wasm_bindgen(js_name = publishCheckpointFromTinkerPath, unchecked_return_type = "Promise<void>")]
    pub fn publish_checkpoint(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] path: JsValue,
    ) -> Promise {
        let path = try_or_reject!(string_arg(&path, "path"));
        self.run(RestCall::set_published(&path, true))
    }

    /// Makes a checkpoint private.
    #[wasm_bindgen(js_name = unpublishCheckpointFromTinkerPath, unchecked_return_type = "Promise<void>")]
    pub fn unpublish_checkpoint(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] path: JsValue,
    ) -> Promise {
        let path = try_or_reject!(string_arg(&path, "path"));
        self.run(RestCall::set_published(&path, false))
    }

    /// Sets a checkpoint's time to live in seconds (`null` removes the expiry).
    #[wasm_bindgen(js_name = setCheckpointTtlFromTinkerPath, unchecked_return_type = "Promise<void>")]
    pub fn set_checkpoint_ttl(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] path: JsValue,
        #[wasm_bindgen(unchecked_param_type = "{ ttl_seconds: number | null }")] params: JsValue,
    ) -> Promise {
        let path = try_or_reject!(string_arg(&path, "path"));
        try_or_reject!(crate::paths::TinkerPath::parse(&path).map_err(|e| input_error(&e)));
        let o = try_or_reject!(Opts::new(
            &params,
            "setCheckpointTtlFromTinkerPath params",
            &["ttl_seconds"]
        ));
        let ttl_seconds = o.get("ttl_seconds");
        let ttl = if ttl_seconds.is_null() || ttl_seconds.is_undefined() {
            None
        } else {
            match ttl_seconds.as_f64() {
                Some(t) if t.fract() == 0.0 && t > 0.0 => Some(t as u64),
                _ => {
                    return reject(range_error(
                        "ttl_seconds",
                        format!(
                            "must be a positive integer or null, got {}",
                            describe(&ttl_seconds)
                        ),
                    ))
                }
            }
        };
        self.run(RestCall::set_checkpoint_ttl(&path, ttl))
    }

    /// Public information about a checkpoint (base model, LoRA rank, …).
    #[wasm_bindgen(js_name = getWeightsInfoByTinkerPath, unchecked_return_type = "Promise<WeightsInfo>")]
    pub fn get_weights_info(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] path: JsValue,
    ) -> Promise {
        let path = try_or_reject!(string_arg(&path, "path"));
        self.run(RestCall::get_weights_info(&path))
    }

    /// Signed download URLs of an `external_weights` checkpoint's files.
    #[wasm_bindgen(js_name = getExternalWeightsUrls, unchecked_return_type = "Promise<ExternalWeightsUrls>")]
    pub fn get_external_weights_urls(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] path: JsValue,
    ) -> Promise {
        let path = try_or_reject!(string_arg(&path, "path"));
        self.run(RestCall::get_external_weights_urls(&path))
    }

    /// Copies a checkpoint into a project; resolves to the copy's path.
    #[wasm_bindgen(js_name = copyWeights, unchecked_return_type = "Promise<string>")]
    pub fn copy_weights(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] path: JsValue,
        #[wasm_bindgen(
            unchecked_optional_param_type = "{ destination_project_id?: string; ttl_seconds?: number; weights_access_token?: string }"
        )]
        params: JsValue,
    ) -> Promise {
        let path = try_or_reject!(string_arg(&path, "path"));
        try_or_reject!(crate::paths::TinkerPath::parse(&path).map_err(|e| input_error(&e)));
        let o = try_or_reject!(Opts::new(
            &params,
            "copyWeights params",
            &["destination_project_id", "ttl_seconds", "weights_access_token"]
        ));
        let project = try_or_reject!(o.string("destination_project_id"))
            .or_else(|| env_var("TINKER_PROJECT_ID"));
        let Some(project) = project else {
            return reject(type_error(
                "destination_project_id",
                "provide destination_project_id or set TINKER_PROJECT_ID",
            ));
        };
        let (ttl, token) = (
            try_or_reject!(o.uint("ttl_seconds", u64::MAX)),
            try_or_reject!(o.string("weights_access_token")),
        );
        self.run(RestCall::copy_weights(
            &path,
            &project,
            ttl,
            token.as_deref(),
        ))
    }

    /// One session: its training runs and samplers.
    #[wasm_bindgen(js_name = getSession, unchecked_return_type = "Promise<SessionInfo>")]
    pub fn get_session(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] session_id: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "{ access_scope?: AccessScope }")]
        params: JsValue,
    ) -> Promise {
        let id = try_or_reject!(string_arg(&session_id, "session_id"));
        let o = try_or_reject!(Opts::new(&params, "getSession params", &["access_scope"]));
        let sc = try_or_reject!(scope(&o));
        self.run(RestCall::get_session(&id, sc))
    }

    /// One page of session ids: `{ items, response, nextOffset }`.
    #[wasm_bindgen(js_name = listSessionsPage, unchecked_return_type = "Promise<Page<string>>")]
    pub fn list_sessions_page(
        &self,
        #[wasm_bindgen(
            unchecked_optional_param_type = "{ limit?: number; offset?: number; access_scope?: AccessScope }"
        )]
        params: JsValue,
    ) -> Promise {
        let o = try_or_reject!(Opts::new(
            &params,
            "listSessions params",
            &["limit", "offset", "access_scope"]
        ));
        let (limit, offset, sc) = (
            try_or_reject!(limit(&o, 20, 1000)),
            try_or_reject!(o.uint("offset", u64::MAX)).unwrap_or(0),
            try_or_reject!(scope(&o)),
        );
        self.run(RestCall::list_sessions(limit, offset, sc))
    }

    /// One page of a session search (experimental): `{ items, response, nextCursor }`.
    #[wasm_bindgen(js_name = searchSessionsPage, unchecked_return_type = "Promise<Page<SessionSummary>>")]
    pub fn search_sessions_page(
        &self,
        #[wasm_bindgen(unchecked_optional_param_type = "SessionSearchRequest")] request: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "unknown")] cursor: JsValue,
    ) -> Promise {
        let req = if request.is_undefined() {
            crate::json!({})
        } else {
            try_or_reject!(convert::to_json(&request, "request"))
        };
        let cursor = if cursor.is_undefined() || cursor.is_null() {
            None
        } else {
            Some(try_or_reject!(convert::to_json(&cursor, "cursor")))
        };
        self.run(RestCall::search_sessions(req, cursor))
    }

    /// Moves a session into a project.
    #[wasm_bindgen(js_name = assignSessionProject, unchecked_return_type = "Promise<void>")]
    pub fn assign_session_project(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] session_id: JsValue,
        #[wasm_bindgen(unchecked_param_type = "{ project_id: string }")] params: JsValue,
    ) -> Promise {
        let o = try_or_reject!(Opts::new(
            &params,
            "assignSessionProject params",
            &["project_id"]
        ));
        let (s, p) = (
            try_or_reject!(string_arg(&session_id, "session_id")),
            try_or_reject!(string_arg(&o.get("project_id"), "project_id")),
        );
        self.run(RestCall::assign_session_project(&s, &p))
    }

    /// Exports a session's Perfetto trace; resolves to a signed download URL.
    #[wasm_bindgen(js_name = exportSessionTrace, unchecked_return_type = "Promise<string>")]
    pub fn export_session_trace(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] session_id: JsValue,
    ) -> Promise {
        let s = try_or_reject!(string_arg(&session_id, "session_id"));
        self.run(RestCall::export_session_trace(&s))
    }

    /// One sampler: its base model and weights path.
    #[wasm_bindgen(js_name = getSampler, unchecked_return_type = "Promise<SamplerInfo>")]
    pub fn get_sampler(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] sampler_id: JsValue,
    ) -> Promise {
        let s = try_or_reject!(string_arg(&sampler_id, "sampler_id"));
        self.run(RestCall::get_sampler(&s))
    }

    /// Who the credentials belong to, from the JWT's claims (no request).
    #[wasm_bindgen(
        unchecked_return_type = "Promise<{ user_urn: string; org_urn: string | null; email: string | null }>"
    )]
    pub fn whoami(&self) -> Promise {
        self.run(Ok(RestCall::whoami()))
    }

    /// The organisation's audit log (admins).
    #[wasm_bindgen(js_name = getAuditLog, unchecked_return_type = "Promise<AuditLogResponse>")]
    pub fn get_audit_log(
        &self,
        #[wasm_bindgen(unchecked_optional_param_type = "AuditLogParams")] params: JsValue,
    ) -> Promise {
        let o = try_or_reject!(Opts::new(
            &params,
            "getAuditLog params",
            &["event_type", "day"]
        ));
        let (et, day) = (
            try_or_reject!(o.string("event_type")).unwrap_or_else(|| "all".into()),
            match o.get("day").dyn_ref::<js_sys::Date>() {
                // A Date is its UTC day, as the server's window is.
                Some(d) => Some(String::from(d.to_iso_string()).chars().take(10).collect()),
                None => try_or_reject!(o.string("day")),
            },
        );
        self.run(RestCall::get_audit_log(&et, day.as_deref()))
    }

    /// Billing usage events between two RFC 3339 times.
    #[wasm_bindgen(js_name = getBillingUsage, unchecked_return_type = "Promise<BillingUsageResponse>")]
    pub fn get_billing_usage(
        &self,
        #[wasm_bindgen(
            unchecked_param_type = "{ starting_on: Date | string; ending_before: Date | string }"
        )]
        params: JsValue,
    ) -> Promise {
        let o = try_or_reject!(Opts::new(
            &params,
            "getBillingUsage params",
            &["starting_on", "ending_before"]
        ));
        let iso = |v: &JsValue, f: &str| -> Result<String, JsValue> {
            if let Some(s) = v.as_string() {
                return Ok(s);
            }
            if let Some(d) = v.dyn_ref::<js_sys::Date>() {
                return Ok(String::from(d.to_iso_string()).replace(".000Z", "Z"));
            }
            Err(type_error(
                f,
                format!("must be a Date or an RFC 3339 string, got {}", describe(v)),
            ))
        };
        let (a, b) = (
            try_or_reject!(iso(&o.get("starting_on"), "starting_on")),
            try_or_reject!(iso(&o.get("ending_before"), "ending_before")),
        );
        self.run(Ok(RestCall::get_billing_usage(&a, &b)))
    }

    /// Current checkpoint storage usage.
    #[wasm_bindgen(js_name = getCurrentCheckpointStorageUsage, unchecked_return_type = "Promise<CurrentCheckpointStorageUsageResponse>")]
    pub fn get_current_checkpoint_storage_usage(
        &self,
        #[wasm_bindgen(unchecked_optional_param_type = "{ project_id?: string }")] params: JsValue,
    ) -> Promise {
        let o = try_or_reject!(Opts::new(
            &params,
            "getCurrentCheckpointStorageUsage params",
            &["project_id"]
        ));
        let project_id = try_or_reject!(o.string("project_id"));
        self.run(Ok(RestCall::get_current_checkpoint_storage_usage(
            project_id.as_deref(),
        )))
    }

    /// Closes a `RestClient` you constructed (stops its timers). Does nothing for one
    /// obtained from a `ServiceClient`, whose `close` covers it.
    #[wasm_bindgen(unchecked_return_type = "Promise<void>")]
    pub fn close(&self) -> Promise {
        match &self.source {
            RestSource::Service(_) => Promise::resolve(&JsValue::UNDEFINED),
            RestSource::Own(s) => {
                let s = s.clone();
                settle(
                    Box::pin(async move { s.close(FinishStatus::Success, None).await }),
                    None,
                    |_| JsValue::UNDEFINED,
                )
            }
        }
    }
}

#[cfg(feature = "tokenizer")]
#[wasm_bindgen]
impl TrainingClient {
    /// The tokenizer of this model: its id comes from the server's `tokenizer_id` (or
    /// the Python SDK's rules), loaded through the ServiceClient's `tokenizerLoader` /
    /// `tokenizerBaseURL` and cached per id.
    #[wasm_bindgen(js_name = getTokenizer, unchecked_return_type = "Promise<Tokenizer>")]
    pub fn get_tokenizer(&self) -> Promise {
        let info = self.inner.info().clone();
        let tok = self.tok.clone(); // Rc (full build) or a unit marker (lite)
        promise(async move {
            let name = info
                .model_name
                .clone()
                .ok_or_else(|| tinker_error("the server did not report this model's name"))?;
            tok.get(&name, info.tokenizer_id.as_deref()).await
        })
    }
}

#[cfg(feature = "tokenizer")]
#[wasm_bindgen]
impl SamplingClient {
    /// The tokenizer of this sampler's base model (loaded and cached like
    /// `TrainingClient.getTokenizer`).
    #[wasm_bindgen(js_name = getTokenizer, unchecked_return_type = "Promise<Tokenizer>")]
    pub fn get_tokenizer(&self) -> Promise {
        let base = self.inner.base_model().to_string();
        let tok = self.tok.clone(); // Rc (full build) or a unit marker (lite)
        promise(async move { tok.get(&base, None).await })
    }
}
