//! `ServiceClient`: the entry point, one session; creates the other clients.

use std::rc::Rc;

use js_sys::{Object, Promise};
use wasm_bindgen::prelude::*;

use super::client_options::{client_options, tokenizer_source};
use super::common::*;
use super::rest_client::{RestClient, RestSource};
use super::sampling_client::{sampling_options, SamplingClient};
use super::training_client::TrainingClient;
use crate::service::{FromStateOptions, LoraOptions};
use crate::session::FinishStatus;
use crate::types::{LoraConfig, OptimizerConfig};
use crate::wasm::convert::{self, describe};
use crate::wasm::errors::{json_to_js, type_error};
use crate::wasm::params;
use crate::wasm::platform::JsPlatform;

/// The entry point: creates training and sampling clients over one session.
#[wasm_bindgen]
pub struct ServiceClient {
    pub(super) inner: crate::service::ServiceClient,
    #[cfg_attr(not(feature = "tokenizer"), allow(dead_code))]
    pub(super) tok: Tok,
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
        let parsed = (|| -> Result<_, JsValue> {
            let p = params::CreateLoraTrainingClientParams::read(&params)?;
            let base_model = p
                .base_model
                .ok_or_else(|| type_error("base_model", "is required (e.g. \"Qwen/Qwen3-8B\")"))?;
            // The defaults are the core's (`LoraConfig::default()`, Python's); given
            // values override them, and the core validates the result.
            let mut lora = LoraConfig::default();
            lora.rank = p.rank.unwrap_or(lora.rank);
            lora.seed = p.seed;
            lora.train_mlp = p.train_mlp.unwrap_or(lora.train_mlp);
            lora.train_attn = p.train_attn.unwrap_or(lora.train_attn);
            lora.train_unembed = p.train_unembed.unwrap_or(lora.train_unembed);
            Ok(LoraOptions {
                base_model,
                lora,
                user_metadata: p.user_metadata,
                optimizer: optimizer_config(p.optimizer)?,
            })
        })();
        let lora = try_or_reject!(parsed);
        let call = try_or_reject!(convert::request_options(
            &options,
            "createLoraTrainingClient"
        ));
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
        let parsed = (|| -> Result<_, JsValue> {
            let p = params::CreateTrainingClientFromStateParams::read(&params)?;
            if with_optimizer && p.optimizer.is_some() {
                return Err(type_error(
                    "optimizer",
                    "unknown option for createTrainingClientFromStateWithOptimizer params: the optimizer comes from the checkpoint",
                ));
            }
            Ok(FromStateOptions {
                path,
                with_optimizer,
                base_model: p.base_model,
                user_metadata: p.user_metadata,
                weights_access_token: p.weights_access_token,
                optimizer: optimizer_config(p.optimizer)?,
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
        let p = try_or_reject!(params::CreateSamplingClientParams::read(&params));
        let sampling = try_or_reject!(sampling_options(p.retry_config, p.record_stability_info));
        let (model_path, base_model) = (p.model_path, p.base_model);
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
        #[wasm_bindgen(unchecked_optional_param_type = "TrainingClientParams")] params: JsValue,
    ) -> Promise {
        let id = try_or_reject!(string_arg(&model_id, "model_id"));
        let p = try_or_reject!(params::TrainingClientParams::read(&params));
        // The core checks the range (and that the model id is one).
        let next = p.next_seq_id.map_or(1, i64::from);
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
        #[wasm_bindgen(unchecked_optional_param_type = "SamplingClientParams")] params: JsValue,
    ) -> Promise {
        let id = try_or_reject!(string_arg(&sampling_session_id, "sampling_session_id"));
        let p = try_or_reject!(params::SamplingClientParams::read(&params));
        let sampling = try_or_reject!(sampling_options(p.retry_config, p.record_stability_info));
        let base = p.base_model;
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
        #[wasm_bindgen(unchecked_optional_param_type = "CopyWeightsParams")] params: JsValue,
    ) -> Promise {
        let path = try_or_reject!(string_arg(&path, "path"));
        let p = try_or_reject!(params::CopyWeightsParams::read(&params));
        let (ttl, token) = (p.ttl_seconds, p.weights_access_token);
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
        #[wasm_bindgen(unchecked_optional_param_type = "CloseParams")] params: JsValue,
    ) -> Promise {
        let p = try_or_reject!(params::CloseParams::read(&params));
        let status = try_or_reject!(finish_status(&p.status.unwrap_or(JsValue::UNDEFINED)));
        let detail = p.detail;
        let inner = self.inner.clone();
        settle(
            Box::pin(async move { inner.close(status, detail.as_deref()).await }),
            None,
            |_| JsValue::UNDEFINED,
        )
    }
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

/// The `optimizer` parameter: an object like `{ type: 'adamw' }` (the core checks it).
fn optimizer_config(v: Option<JsValue>) -> Result<Option<OptimizerConfig>, JsValue> {
    let Some(v) = v else { return Ok(None) };
    match convert::to_json(&v, "optimizer")? {
        crate::json::Value::Object(m) => Ok(Some(OptimizerConfig(m))),
        other => Err(type_error(
            "optimizer",
            format!("must be an object like {{ type: 'adamw' }}, got {other}"),
        )),
    }
}

#[cfg(feature = "tokenizer")]
#[wasm_bindgen]
impl ServiceClient {
    /// The tokenizer of `model_name` (its id by the Python SDK's rules), loaded through this
    /// client's `tokenizerLoader` / `tokenizerBaseURL` and cached per id, as
    /// `TrainingClient.getTokenizer` loads it: no request to the API (the id a server
    /// reports for a training run can differ; tinker-cookbook loads by the model's name).
    #[wasm_bindgen(js_name = getTokenizer, unchecked_return_type = "Promise<Tokenizer>")]
    pub fn get_tokenizer(&self, model_name: String) -> Promise {
        let tok = self.tok.clone();
        promise(async move { tok.get(&model_name, None).await })
    }
}
