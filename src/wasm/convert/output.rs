//! Core → JS: results as the SDK returns them.

use super::*;

// ---------------------------------------------------------------------------------
// Core → JS

/// A `TensorData` as JS (float32 data as `Float32Array`, int64 as `number[]`).
pub fn tensor_to_js(t: &TensorData) -> JsValue {
    let o = Object::new();
    let data: JsValue = match &t.values {
        TensorValues::Float32(v) => Float32Array::from(&v[..]).into(),
        TensorValues::Int64(v) => v
            .iter()
            .map(|&x| JsValue::from_f64(x as f64))
            .collect::<Array>()
            .into(),
    };
    set(&o, "data", &data);
    set(&o, "dtype", &JsValue::from_str(t.dtype().name()));
    set(
        &o,
        "shape",
        &t.dense_shape()
            .iter()
            .map(|&d| JsValue::from_f64(d as f64))
            .collect::<Array>(),
    );
    if let (Some(c), Some(k)) = (&t.sparse_crow_indices, &t.sparse_col_indices) {
        set(
            &o,
            "sparse_crow_indices",
            &c.iter()
                .map(|&x| JsValue::from_f64(x as f64))
                .collect::<Array>(),
        );
        set(
            &o,
            "sparse_col_indices",
            &k.iter()
                .map(|&x| JsValue::from_f64(x as f64))
                .collect::<Array>(),
        );
    }
    o.into()
}

pub(super) fn metrics_to_js(m: &StrMap<f64>) -> JsValue {
    let o = Object::new();
    for (k, v) in m {
        set(&o, k, &JsValue::from_f64(*v));
    }
    o.into()
}

/// A `ForwardBackwardOutput` as JS.
pub fn forward_backward_to_js(out: &ForwardBackwardOutput) -> JsValue {
    let o = Object::new();
    set(
        &o,
        "loss_fn_output_type",
        &JsValue::from_str(&out.loss_fn_output_type),
    );
    let outputs: Array = out
        .loss_fn_outputs
        .iter()
        .map(|m| {
            let d = Object::new();
            for (k, t) in m {
                set(&d, k, &tensor_to_js(t));
            }
            JsValue::from(d)
        })
        .collect();
    set(&o, "loss_fn_outputs", &outputs);
    set(&o, "metrics", &metrics_to_js(&out.metrics));
    o.into()
}

/// Top-k logprobs as rows of `[token_id, logprob]` pairs, without the trailing empty
/// cells `(0, -99999)`; a row starting with an empty cell is `null` (as in Python).
pub(super) fn topk_to_js(t: &TopkLogprobs) -> JsValue {
    let k = t.k as usize;
    (0..t.length as usize)
        .map(|r| {
            let cells = &t.token_ids[r * k..r * k + k];
            let lps = &t.logprobs[r * k..r * k + k];
            let empty = |j: usize| cells[j] == 0 && lps[j] == -99999.0;
            if empty(0) {
                return JsValue::NULL;
            }
            let n = (0..k).rposition(|j| !empty(j)).map_or(0, |j| j + 1);
            (0..n)
                .map(|j| {
                    JsValue::from(Array::of2(
                        &JsValue::from(cells[j]),
                        &JsValue::from_f64(f64::from(lps[j])),
                    ))
                })
                .collect::<Array>()
                .into()
        })
        .collect::<Array>()
        .into()
}

pub(super) fn logprob_list(v: &[f32]) -> JsValue {
    v.iter()
        .map(|&x| {
            if x.is_nan() {
                JsValue::NULL
            } else {
                JsValue::from_f64(f64::from(x))
            }
        })
        .collect::<Array>()
        .into()
}

/// A `SampleResponse` as JS (token ids as `Int32Array`, logprobs as `Float32Array`).
pub fn sample_response_to_js(r: &SampleResponse) -> JsValue {
    let seqs: Array = r
        .sequences
        .iter()
        .map(|s| {
            sample_sequence(
                &Int32Array::from(&s.tokens[..]),
                &s.logprobs
                    .as_ref()
                    .map_or(JsValue::NULL, |l| Float32Array::from(&l[..]).into()),
                s.stop_reason == crate::proto::StopReason::Stop,
                &s.sequence_id,
                &s.topk_logprobs.as_ref().map_or(JsValue::NULL, topk_to_js),
            )
        })
        .collect();
    let alt = r.prompt_alt_tokens.as_ref().map_or(JsValue::NULL, |a| {
        let ao = Object::new();
        set(&ao, "tokens", &tensor_to_js(&a.tokens));
        set(&ao, "logprobs", &tensor_to_js(&a.logprobs));
        ao.into()
    });
    sample_response(
        &seqs,
        &r.prompt_logprobs
            .as_ref()
            .map_or(JsValue::NULL, |l| logprob_list(l)),
        &r.topk_prompt_logprobs
            .as_ref()
            .map_or(JsValue::NULL, topk_to_js),
        r.prompt_cache_hit_tokens as f64,
        &r.target_prompt_logprobs
            .as_ref()
            .map_or(JsValue::NULL, tensor_to_js),
        &alt,
    )
}

/// A `ModelInput` as JS (tokens as `Uint32Array`).
pub fn model_input_to_js(m: &ModelInput) -> JsValue {
    let chunks: Array = m
        .chunks
        .iter()
        .map(|c| match c {
            ModelInputChunk::EncodedText { tokens } => {
                let o = Object::new();
                set(&o, "type", &"encoded_text".into());
                set(&o, "tokens", &Uint32Array::from(&tokens[..]));
                JsValue::from(o)
            }
            other => {
                let mut s = String::new();
                other.write_json(&mut s);
                js_sys::JSON::parse(&s).unwrap_or(JsValue::NULL)
            }
        })
        .collect();
    let o = Object::new();
    set(&o, "chunks", &chunks);
    o.into()
}

/// A `Datum` as JS (typed arrays for tokens and float data).
pub fn datum_to_js(d: &Datum) -> JsValue {
    let o = Object::new();
    set(&o, "model_input", &model_input_to_js(&d.model_input));
    let inputs = Object::new();
    for (k, t) in &d.loss_fn_inputs {
        let js = tensor_to_js(t);
        if let TensorValues::Int64(v) = &t.values {
            if v.iter().all(|&x| i32::try_from(x).is_ok()) {
                set(
                    &js,
                    "data",
                    &Int32Array::from(&v.iter().map(|&x| x as i32).collect::<Vec<_>>()[..]),
                );
            }
        }
        set(&inputs, k, &js);
    }
    set(&o, "loss_fn_inputs", &inputs);
    // The provenance spans (RL datums): not in lite, whose size budget has no room for it
    // and which builds no datum with spans itself.
    #[cfg(feature = "tokenizer")]
    for (k, spans) in [
        ("model_input_spans", &d.model_input_spans),
        ("loss_fn_input_spans", &d.loss_fn_input_spans),
    ] {
        if let Some(spans) = spans {
            set(&o, k, &spans.iter().map(span_to_js).collect::<Array>());
        }
    }
    o.into()
}

/// A provenance span as its JSON form: `{ type, sequence_id, offset, length }`.
#[cfg(feature = "tokenizer")]
fn span_to_js(s: &crate::types::ProvenanceSpan) -> JsValue {
    use crate::types::ProvenanceSpan::{PromptTokens, SampledTokens};
    let (kind, id, offset, length) = match s {
        PromptTokens {
            sequence_id,
            offset,
            length,
        } => ("prompt_tokens", sequence_id, offset, length),
        SampledTokens {
            sequence_id,
            offset,
            length,
        } => ("sampled_tokens", sequence_id, offset, length),
    };
    let o = Object::new();
    set(&o, "type", &kind.into());
    set(&o, "sequence_id", &id.as_str().into());
    set(&o, "offset", &(*offset as f64).into());
    set(&o, "length", &(*length as f64).into());
    o.into()
}
