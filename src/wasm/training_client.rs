//! `TrainingClient`: a LoRA model being trained; requests run in call order.

use std::rc::Rc;

use js_sys::{Array, Function, Promise};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use super::common::*;
use super::sampling_client::{sampling_options, SamplingClient};
use crate::error::Error;
use crate::map::StrMap;
use crate::proto::LossConfigValue;
use crate::training::{CustomLossOutput, OptimParams};
use crate::types::{InputError, TensorData, TensorValues};
use crate::wasm::convert::{self, describe};
use crate::wasm::errors::{input_error, json_to_js, range_error, type_error};
use crate::wasm::params;

/// A LoRA model being trained. Requests run in call order: `forwardBackward` then
/// `optimStep` without awaiting pipelines them into one server step.
#[wasm_bindgen]
pub struct TrainingClient {
    pub(super) inner: crate::training::TrainingClient,
    #[cfg_attr(not(feature = "tokenizer"), allow(dead_code))]
    pub(super) tok: Tok,
}

/// The `loss_fn_config` parameter: an object of numbers or strings.
fn loss_config(v: Option<JsValue>) -> Result<Option<StrMap<LossConfigValue>>, JsValue> {
    let Some(v) = v else { return Ok(None) };
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
        let p = try_or_reject!(params::ForwardParams::read_as(
            &params,
            &format!("{method} params")
        ));
        let config = try_or_reject!(loss_config(p.loss_fn_config));
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
        let call = try_or_reject!(convert::request_options(&options, "forwardBackwardCustom"));
        // A JS exception (or rejection) of the loss function rejects the call with it:
        // it travels inside the core's error as `Error::Callback`.
        let loss: crate::training::CustomLossFn = Rc::new(move |data, logprobs| {
            let f = f.clone();
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
                let mut out = f
                    .call2(&JsValue::UNDEFINED, &js_data, &js_lp)
                    .map_err(callback_error)?;
                if get(&out, "then").is_function() {
                    out = wasm_bindgen_futures::JsFuture::from(Promise::resolve(&out))
                        .await
                        .map_err(callback_error)?;
                }
                custom_loss_output(&out, logprobs.len()).map_err(callback_error)
            })
        });
        let fut = try_or_reject!(self
            .inner
            .forward_backward_custom(data, loss, call.options.clone())
            .map_err(core_err));
        settle(fut, Some(call), |o| convert::forward_backward_to_js(&o))
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
    #[wasm_bindgen(js_name = saveState, unchecked_return_type = "Promise<SaveWeightsResponse>")]
    pub fn save_state(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] name: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "SaveStateParams")] params: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "RequestOptions")] options: JsValue,
    ) -> Promise {
        let name = try_or_reject!(string_arg(&name, "name"));
        let p = try_or_reject!(params::SaveStateParams::read(&params));
        let (ttl, overwrite, meta) = (p.ttl_seconds, p.overwrite.unwrap_or(false), p.user_metadata);
        let call = try_or_reject!(convert::request_options(&options, "saveState"));
        let fut = try_or_reject!(self
            .inner
            .save_state(&name, ttl, overwrite, meta, call.options.clone())
            .map_err(core_err));
        settle(fut, Some(call), |v| json_to_js(&v))
    }

    fn load(&self, path: JsValue, params: JsValue, options: JsValue, optimizer: bool) -> Promise {
        let path = try_or_reject!(string_arg(&path, "path"));
        let token = try_or_reject!(params::LoadStateParams::read(&params)).weights_access_token;
        let call = try_or_reject!(convert::request_options(&options, "loadState"));
        let fut = try_or_reject!(self
            .inner
            .load_state(&path, optimizer, token, call.options.clone())
            .map_err(core_err));
        settle(fut, Some(call), |v| json_to_js(&v))
    }

    /// Loads a checkpoint's weights into this model (not its optimizer state).
    #[wasm_bindgen(js_name = loadState, unchecked_return_type = "Promise<LoadWeightsResponse>")]
    pub fn load_state(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] path: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "LoadStateParams")] params: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "RequestOptions")] options: JsValue,
    ) -> Promise {
        self.load(path, params, options, false)
    }

    /// Loads a checkpoint's weights and optimizer state into this model.
    #[wasm_bindgen(js_name = loadStateWithOptimizer, unchecked_return_type = "Promise<LoadWeightsResponse>")]
    pub fn load_state_with_optimizer(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] path: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "LoadStateParams")] params: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "RequestOptions")] options: JsValue,
    ) -> Promise {
        self.load(path, params, options, true)
    }

    /// Saves weights for sampling as `tinker://…/sampler_weights/{name}`; resolves to `{ path }`.
    #[wasm_bindgen(js_name = saveWeightsForSampler, unchecked_return_type = "Promise<SaveWeightsForSamplerResponse>")]
    pub fn save_weights_for_sampler(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] name: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "SaveWeightsForSamplerParams")]
        params: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "RequestOptions")] options: JsValue,
    ) -> Promise {
        let name = try_or_reject!(string_arg(&name, "name"));
        let p = try_or_reject!(params::SaveWeightsForSamplerParams::read(&params));
        let (ttl, meta) = (p.ttl_seconds, p.user_metadata);
        let call = try_or_reject!(convert::request_options(&options, "saveWeightsForSampler"));
        let fut = try_or_reject!(self
            .inner
            .save_weights_for_sampler(&name, ttl, meta, call.options.clone())
            .map_err(core_err));
        settle(fut, Some(call), |v| json_to_js(&v))
    }

    /// Exports weights (HuggingFace-style files) as `tinker://…/external_weights/{name}`.
    #[wasm_bindgen(js_name = saveWeightsExternal, unchecked_return_type = "Promise<SaveWeightsExternalResponse>")]
    pub fn save_weights_external(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] name: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "SaveWeightsExternalParams")]
        params: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "RequestOptions")] options: JsValue,
    ) -> Promise {
        let name = try_or_reject!(string_arg(&name, "name"));
        let p = try_or_reject!(params::SaveWeightsExternalParams::read(&params));
        let (ttl, recipients) = (p.ttl_seconds, p.age_encryption_recipients);
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
        #[wasm_bindgen(unchecked_optional_param_type = "SaveWeightsAndGetSamplingClientParams")]
        params: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "RequestOptions")] options: JsValue,
    ) -> Promise {
        let p = try_or_reject!(params::SaveWeightsAndGetSamplingClientParams::read(&params));
        let kind = p.kind.unwrap_or_else(|| "snapshot".into());
        let sampling = try_or_reject!(sampling_options(p.retry_config, p.record_stability_info));
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
        #[wasm_bindgen(unchecked_optional_param_type = "SamplerBehaviourParams")] params: JsValue,
    ) -> Promise {
        let path = try_or_reject!(string_arg(&model_path, "model_path"));
        let p = try_or_reject!(params::SamplerBehaviourParams::read(&params));
        let sampling = try_or_reject!(sampling_options(p.retry_config, p.record_stability_info));
        let fut = try_or_reject!(self
            .inner
            .create_sampling_client(&path, sampling)
            .map_err(core_err));
        let tok = self.tok.clone(); // Rc (full build) or a unit marker (lite)
        settle(fut, None, move |inner| SamplingClient { inner, tok }.into())
    }
}

/// The core error of a JS value the loss function threw (or rejected with, or an input
/// error about what it returned): the call rejects with that very value.
fn callback_error(e: JsValue) -> Error {
    let message = match get(&e, "message").as_string() {
        Some(m) => format!("the custom loss function failed: {m}"),
        None => "the custom loss function failed".to_string(),
    };
    Error::Callback {
        message,
        error: crate::error::CallerError::new(e),
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
            let name = info.model_name.clone().ok_or_else(|| {
                crate::wasm::errors::tinker_error("the server did not report this model's name")
            })?;
            tok.get(&name, info.tokenizer_id.as_deref()).await
        })
    }
}
