//! `SamplingClient`: samples from a base model or saved weights.

use std::rc::Rc;

use js_sys::{Array, Promise};
use wasm_bindgen::prelude::*;

use super::client_options::{check_handle_options, client_options, tokenizer_source};
use super::common::*;
use crate::retry::SamplingRetryConfig;
use crate::sampling::{SampleRequest, SamplingOptions};
use crate::types::SamplingParams;
use crate::wasm::convert::{self, describe};
use crate::wasm::errors::{input_error, range_error, type_error};
use crate::wasm::params;
use crate::wasm::platform::JsPlatform;

/// Samples from a base model or saved weights.
#[wasm_bindgen]
pub struct SamplingClient {
    pub(super) inner: crate::sampling::SamplingClient,
    #[cfg_attr(not(feature = "tokenizer"), allow(dead_code))]
    pub(super) tok: Tok,
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
        check_handle_options(&options)?;
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
        let parsed = (|| -> Result<SampleRequest, JsValue> {
            let p = params::SampleParams::read(&params)?;
            let prompt = p.prompt.ok_or_else(|| {
                type_error(
                    "prompt",
                    "is required (a ModelInput or an array of token ids)",
                )
            })?;
            let prompt = convert::model_input(&prompt, "prompt").map_err(|e| input_error(&e))?;
            // The core's defaults, overridden by what is given; the core validates.
            let mut r = SampleRequest::new(
                prompt,
                p.num_samples
                    .unwrap_or(crate::sampling::DEFAULT_NUM_SAMPLES),
                sampling_params(&p.sampling_params.unwrap_or(JsValue::UNDEFINED))?,
            );
            r.include_prompt_logprobs = p
                .include_prompt_logprobs
                .unwrap_or(r.include_prompt_logprobs);
            r.topk_prompt_logprobs = p.topk_prompt_logprobs.unwrap_or(r.topk_prompt_logprobs);
            r.topk_sample_logprobs = p.topk_sample_logprobs.unwrap_or(r.topk_sample_logprobs);
            r.prompt_alt_tokens_k = p.prompt_alt_tokens_k.unwrap_or(r.prompt_alt_tokens_k);
            r.prompt_logprobs_last_n = p.prompt_logprobs_last_n;
            if let Some(t) = p.target_prompt_logprobs {
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
        #[wasm_bindgen(unchecked_optional_param_type = "ComputeLogprobsParams")] params: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "RequestOptions")] options: JsValue,
    ) -> Promise {
        let prompt =
            try_or_reject!(convert::model_input(&prompt, "prompt").map_err(|e| input_error(&e)));
        let last_n =
            try_or_reject!(params::ComputeLogprobsParams::read(&params)).prompt_logprobs_last_n;
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

/// The core's retry configuration: its defaults (Python's), overridden by what is given.
fn retry_config(r: params::RetryConfig) -> Result<SamplingRetryConfig, JsValue> {
    let mut c = SamplingRetryConfig::default();
    if let Some(n) = r.max_connections {
        if n == 0 {
            return Err(range_error(
                "retry_config.max_connections",
                "must be positive, got 0",
            ));
        }
        c.max_connections = Some(n as usize);
    }
    if let Some(s) = r.progress_timeout {
        c.progress_timeout = tinker_core::time::seconds(s.max(0.0));
    }
    if let Some(s) = r.retry_delay_base {
        c.retry_delay_base = s.max(0.0);
    }
    if let Some(s) = r.retry_delay_max {
        c.retry_delay_max = s.max(0.0);
    }
    if let Some(j) = r.jitter_factor {
        c.jitter_factor = j.clamp(0.0, 1.0);
    }
    c.enable_retry_logic = r.enable_retry_logic.unwrap_or(c.enable_retry_logic);
    c.enable_stuck_detection = r.enable_stuck_detection.unwrap_or(c.enable_stuck_detection);
    Ok(c)
}

/// A sampling client's behaviour from its `retry_config` and `record_stability_info`.
pub(super) fn sampling_options(
    retry: Option<params::RetryConfig>,
    record_stability_info: Option<bool>,
) -> Result<SamplingOptions, JsValue> {
    Ok(SamplingOptions {
        retry: retry.map(retry_config).transpose()?,
        record_stability_info: record_stability_info.unwrap_or(false),
    })
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
