//! Options and parameter objects: the allow-listed reader, request options, `AbortSignal`s.

use super::*;

// ---------------------------------------------------------------------------------
// Options objects

/// A camelCase options object whose keys are checked against an allow-list.
pub struct Opts {
    obj: JsValue,
    /// The object's own keys when it is an object literal: then a key not among them is
    /// absent without asking JS (most options are absent on most calls).
    own: Option<Vec<String>>,
}

impl Opts {
    /// Reads `v` (undefined/null = no options) as an options object of `what`.
    pub fn new(v: &JsValue, what: &str, allowed: &[&str]) -> Result<Opts, JsValue> {
        if v.is_undefined() || v.is_null() {
            return Ok(Opts {
                obj: JsValue::UNDEFINED,
                own: None,
            });
        }
        if !is_plain_object(v) {
            return Err(type_error(
                what,
                format!("must be an options object, got {}", describe(v)),
            ));
        }
        let own = keys(v);
        for k in &own {
            if !allowed.contains(&k.as_str()) && !get_str(v, k).is_undefined() {
                // Request options go in the last argument (openai-node's convention).
                let hint = if REQUEST_OPTIONS.contains(&k.as_str()) {
                    " (request options such as signal and timeout go in the next argument)"
                } else {
                    ""
                };
                return Err(type_error(
                    k,
                    format!(
                        "unknown option for {what}; expected one of: {}{hint}",
                        allowed.join(", ")
                    ),
                ));
            }
        }
        Ok(Opts {
            obj: v.clone(),
            own: plain_proto(v).then_some(own),
        })
    }
    /// The raw value (undefined when absent).
    pub fn get(&self, k: &str) -> JsValue {
        let absent = match &self.own {
            Some(own) => !own.iter().any(|o| o == k),
            None => self.obj.is_undefined(),
        };
        if absent {
            JsValue::UNDEFINED
        } else {
            get_str(&self.obj, k)
        }
    }
    fn present(&self, k: &str) -> Option<JsValue> {
        let v = self.get(k);
        (!v.is_undefined()).then_some(v)
    }
    /// A string option.
    pub fn string(&self, k: &str) -> Result<Option<String>, JsValue> {
        match self.present(k) {
            None => Ok(None),
            Some(v) => v
                .as_string()
                .map(Some)
                .ok_or_else(|| type_error(k, format!("must be a string, got {}", describe(&v)))),
        }
    }
    /// A boolean option.
    pub fn bool(&self, k: &str) -> Result<Option<bool>, JsValue> {
        match self.present(k) {
            None => Ok(None),
            Some(v) => v
                .as_bool()
                .map(Some)
                .ok_or_else(|| type_error(k, format!("must be a boolean, got {}", describe(&v)))),
        }
    }
    /// A finite number option.
    pub fn number(&self, k: &str) -> Result<Option<f64>, JsValue> {
        match self.present(k) {
            None => Ok(None),
            Some(v) => match v.as_f64() {
                Some(x) if x.is_finite() => Ok(Some(x)),
                Some(x) => Err(crate::wasm::errors::range_error(
                    k,
                    format!("must be a finite number, got {}", fmt_num(x)),
                )),
                None => Err(type_error(
                    k,
                    format!("must be a number, got {}", describe(&v)),
                )),
            },
        }
    }
    /// A non-negative integer option no larger than `max`.
    pub fn uint(&self, k: &str, max: u64) -> Result<Option<u64>, JsValue> {
        match self.number(k)? {
            None => Ok(None),
            Some(x) if x.fract() != 0.0 => Err(type_error(
                k,
                format!("must be an integer, got {}", fmt_num(x)),
            )),
            Some(x) if x < 0.0 || x > max as f64 => Err(crate::wasm::errors::range_error(
                k,
                format!("must be between 0 and {max}, got {}", fmt_num(x)),
            )),
            Some(x) => Ok(Some(x as u64)),
        }
    }
    /// A `{ [key: string]: string }` option.
    pub fn string_map(&self, k: &str) -> Result<Option<StrMap<String>>, JsValue> {
        match self.present(k) {
            None => Ok(None),
            Some(v) if is_plain_object(&v) => {
                let mut m = StrMap::new();
                for key in keys(&v) {
                    let val = get_str(&v, &key);
                    let s = val.as_string().ok_or_else(|| {
                        type_error(
                            &format!("{k}.{key}"),
                            format!("must be a string, got {}", describe(&val)),
                        )
                    })?;
                    m.insert(key, s);
                }
                Ok(Some(m))
            }
            Some(v) => Err(type_error(
                k,
                format!("must be an object of strings, got {}", describe(&v)),
            )),
        }
    }
}

// ---------------------------------------------------------------------------------
// Declared here, read below

declare_params! {
    ts = REQUEST_TS;

    /// Request options: the last argument of every call (openai-node's).
    RequestOptions("request options") {
        /// Aborts the call: waiting stops and the promise rejects with `APIUserAbortError`.
        /// A training or sampling request already being submitted finishes submitting first
        /// (so the server's order stays intact); a REST request is aborted in flight.
        signal: JsValue => "?: AbortSignal",
        /// Gives up after this many ms (`APITimeoutError`).
        timeout: f64 => "?: number",
        /// HTTP-level retries of this call's own requests (its submission, or its REST
        /// request) instead of the client's `maxRetries` (at most 100). The polls of its
        /// result are shared with other calls and keep the client's.
        maxRetries: u32 => "?: number",
        /// Extra headers on this call's own requests, after the client's `defaultHeaders`
        /// (names are HTTP tokens; values have no line breaks: else a TypeError naming
        /// `headers.<name>`).
        headers: StrMap<String> => "?: Record<string, string>",
        /// Sampling calls (`sample`, `computeLogprobs`): what a 429 from the sampler does.
        /// `'wait'` (the default, as Python): back off and send again, however long it
        /// takes. `'reject'`: send once, without waiting out a backoff another call's 429
        /// started, and fail with the sampler's 429 (`RateLimitError`, its `retry-after`
        /// in `headers`); for a server that passes the pressure on to its own clients,
        /// as `openaiFetch` does. Other calls ignore it.
        backpressure: String => "?: 'wait' | 'reject'",
    }

    /// AdamW parameters (`optimStep`); missing fields get Python's defaults.
    AdamParams("AdamParams") {
        /// Learning rate (default 1e-4).
        learning_rate: f64 => "?: number",
        /// First moment decay (default 0.9).
        beta1: f64 => "?: number",
        /// Second moment decay (default 0.95).
        beta2: f64 => "?: number",
        /// Denominator epsilon (default 1e-12).
        eps: f64 => "?: number",
        /// Decoupled weight decay (default 0).
        weight_decay: f64 => "?: number",
        /// Maximum global gradient norm; 0 disables clipping (default 0).
        grad_clip_norm: f64 => "?: number",
    }

    /// Sampling parameters (`sample`'s `sampling_params`, the wire's names).
    SamplingParams("sampling_params") {
        /// Most tokens to sample.
        max_tokens: u32 => "?: number",
        /// Seed of the sampler's randomness.
        seed: u64 => "?: number",
        /// Sampling temperature (default 1).
        temperature: f64 => "?: number",
        /// Sample among the k likeliest tokens; -1 (default) disables.
        top_k: f64 => "?: number",
        /// Nucleus sampling mass (default 1).
        top_p: f64 => "?: number",
        /// Stop strings or stop token ids (`[]` disables every stop token, EOS included).
        stop: JsValue => "?: string | string[] | number[]",
    }
}

/// The per-call request options, every call's last argument.
pub const REQUEST_OPTIONS: &[&str] = RequestOptions::KEYS;

/// Reads a call's request options (`{ signal, timeout, maxRetries, headers, backpressure }`) as a
/// `Call`, checked by the core's rules before the call starts.
pub fn request_options(v: &JsValue, method: &str) -> Result<Call, JsValue> {
    let o = RequestOptions::read_as(v, &format!("{method} options"))?;
    let timeout = match o.timeout {
        None => None,
        Some(ms) if ms <= 0.0 => {
            return Err(crate::wasm::errors::range_error(
                "timeout",
                format!(
                    "must be a positive number of milliseconds, got {}",
                    fmt_num(ms)
                ),
            ))
        }
        Some(ms) => Some(tinker_core::time::seconds(ms / 1000.0)),
    };
    let reject_backpressure = match o.backpressure.as_deref() {
        None | Some("wait") => false,
        Some("reject") => true,
        Some(other) => {
            return Err(type_error(
                "backpressure",
                format!("must be 'wait' or 'reject', got '{other}'"),
            ))
        }
    };
    let options = CallOptions {
        cancel: None,
        timeout,
        max_retries: o.maxRetries,
        headers: o
            .headers
            .map(|h| h.into_iter().collect())
            .unwrap_or_default(),
        reject_backpressure,
    };
    options
        .validate()
        .map_err(|e| crate::wasm::errors::input_error(&e))?;
    Call::new(o.signal.unwrap_or(JsValue::UNDEFINED), options)
}

/// JSON value of a JS value (through `JSON.stringify`, so only JSON data survives).
pub fn to_json(v: &JsValue, field: &str) -> Result<crate::json::Value, JsValue> {
    let s =
        js_sys::JSON::stringify(v).map_err(|_| type_error(field, "must be JSON-serialisable"))?;
    let s = s.as_string().ok_or_else(|| {
        type_error(
            field,
            format!("must be JSON-serialisable, got {}", describe(v)),
        )
    })?;
    crate::json::from_str(&s).map_err(|e| type_error(field, e.to_string()))
}

/// Call options linked to an `AbortSignal`. The listener is removed when this drops,
/// so a long-lived signal reused across calls does not accumulate listeners.
pub struct Call {
    /// The core options.
    pub options: CallOptions,
    listener: Option<(JsValue, Closure<dyn FnMut()>)>,
}

impl Call {
    fn new(signal: JsValue, mut options: CallOptions) -> Result<Call, JsValue> {
        if signal.is_undefined() || signal.is_null() {
            return Ok(Call {
                options,
                listener: None,
            });
        }
        if !get_str(&signal, "addEventListener").is_function()
            || get_str(&signal, "aborted").as_bool().is_none()
        {
            return Err(type_error(
                "signal",
                format!("must be an AbortSignal, got {}", describe(&signal)),
            ));
        }
        let token = CancelToken::new();
        options.cancel = Some(token.clone());
        if get_str(&signal, "aborted").as_bool() == Some(true) {
            token.cancel();
            return Ok(Call {
                options,
                listener: None,
            });
        }
        let closure = Closure::<dyn FnMut()>::new(move || token.cancel());
        let add: js_sys::Function = get_str(&signal, "addEventListener").unchecked_into();
        let _ = add.call2(&signal, &"abort".into(), closure.as_ref());
        Ok(Call {
            options,
            listener: Some((signal, closure)),
        })
    }
}

impl Drop for Call {
    fn drop(&mut self) {
        if let Some((signal, closure)) = self.listener.take() {
            if let Ok(remove) =
                get_str(&signal, "removeEventListener").dyn_into::<js_sys::Function>()
            {
                let _ = remove.call2(&signal, &"abort".into(), closure.as_ref());
            }
        }
    }
}

// ---------------------------------------------------------------------------------
// Parameter objects (wire field names)

/// `AdamParams` from JS (declared in params.rs: every field a number), errors naming the
/// field. One loop over the declared keys: six inlined field reads cost the lite module
/// about 100 bytes gzip.
pub fn adam_params(v: &JsValue) -> Result<crate::types::AdamParams, JsValue> {
    let keys = AdamParams::KEYS;
    let o = Opts::new(v, "AdamParams", keys)?;
    let mut p = crate::types::AdamParams::default();
    let slots = [
        &mut p.learning_rate,
        &mut p.beta1,
        &mut p.beta2,
        &mut p.eps,
        &mut p.weight_decay,
        &mut p.grad_clip_norm,
    ];
    for (k, slot) in keys.iter().zip(slots) {
        if let Some(x) = o.number(k)? {
            *slot = x;
        }
    }
    p.validate().map_err(|e| input_error(&e))?;
    Ok(p)
}

// The slots above follow the declaration's order: checked when the module is built.
const _: () = {
    let k = AdamParams::KEYS;
    let want = [
        "learning_rate",
        "beta1",
        "beta2",
        "eps",
        "weight_decay",
        "grad_clip_norm",
    ];
    assert!(k.len() == want.len());
    let mut i = 0;
    while i < k.len() {
        let (a, b) = (k[i].as_bytes(), want[i].as_bytes());
        assert!(a.len() == b.len());
        let mut j = 0;
        while j < a.len() {
            assert!(a[j] == b[j]);
            j += 1;
        }
        i += 1;
    }
};

/// `SamplingParams` from JS (declared in params.rs).
pub fn sampling_params(v: &JsValue) -> Result<crate::types::SamplingParams, JsValue> {
    use crate::types::StopCondition;
    let o = SamplingParams::read(v)?;
    let mut p = crate::types::SamplingParams {
        max_tokens: o.max_tokens,
        seed: o.seed,
        ..Default::default()
    };
    if let Some(t) = o.temperature {
        p.temperature = t;
    }
    if let Some(t) = o.top_p {
        p.top_p = t;
    }
    if let Some(k) = o.top_k {
        if k.fract() != 0.0 {
            return Err(type_error(
                "top_k",
                format!("must be an integer, got {}", fmt_num(k)),
            ));
        }
        p.top_k = k as i64;
    }
    let stop = o.stop.unwrap_or_default();
    p.stop = if stop.is_undefined() || stop.is_null() {
        None
    } else if let Some(s) = stop.as_string() {
        Some(StopCondition::String(s))
    } else if Array::is_array(&stop) {
        let arr: &Array = stop.unchecked_ref();
        if arr.length() == 0 {
            Some(StopCondition::Tokens(vec![]))
        } else if arr.get(0).is_string() {
            let mut out = Vec::with_capacity(arr.length() as usize);
            for (i, x) in arr.iter().enumerate() {
                out.push(x.as_string().ok_or_else(|| {
                    type_error(
                        &format!("stop[{i}]"),
                        format!(
                            "stop strings and token ids cannot be mixed, got {}",
                            describe(&x)
                        ),
                    )
                })?);
            }
            Some(StopCondition::Strings(out))
        } else {
            Some(StopCondition::Tokens(
                tokens(&stop, "stop").map_err(|e| input_error(&e))?,
            ))
        }
    } else {
        return Err(type_error(
            "stop",
            format!(
                "must be a string, an array of strings or an array of token ids, got {}",
                describe(&stop)
            ),
        ));
    };
    p.validate().map_err(|e| input_error(&e))?;
    Ok(p)
}
