//! The serde types users and servers send as JSON (optimizer, sampling and LoRA params,
//! data, tensors, model inputs, session state), each with its validation.
//! First byte: which type; the rest: JSON.
#![no_main]
use libfuzzer_sys::fuzz_target;
use tinker_wasm::config::{DynamicConfig, ServerConfig, SessionState};
use tinker_wasm::types::*;

fn de<T: serde::de::DeserializeOwned>(b: &[u8]) -> Option<T> {
    serde_json::from_slice(b).ok()
}

fuzz_target!(|data: &[u8]| {
    let Some((&which, b)) = data.split_first() else {
        return;
    };
    match which % 10 {
        0 => {
            if let Some(p) = de::<AdamParams>(b) {
                let _ = p.validate();
            }
        }
        1 => {
            if let Some(p) = de::<SamplingParams>(b) {
                let _ = p.validate();
            }
        }
        2 => {
            if let Some(p) = de::<LoraConfig>(b) {
                let _ = p.validate();
            }
        }
        3 => {
            if let Some(d) = de::<Datum>(b) {
                for loss in ["cross_entropy", "importance_sampling", "ppo", "cispo", "dro", "x"] {
                    let _ = d.validate(loss);
                }
                let _ = tinker_wasm::proto::encode_forward_backward(
                    &tinker_wasm::proto::ForwardBackwardRequest {
                        model_id: "m",
                        seq_id: 1,
                        data: std::slice::from_ref(&d),
                        loss_fn: "cross_entropy",
                        loss_fn_config: None,
                        forward_only: false,
                    },
                );
            }
        }
        4 => {
            if let Some(t) = de::<TensorData>(b) {
                if t.validate().is_ok() {
                    let _ = t.dense_shape();
                }
            }
        }
        5 => {
            if let Some(m) = de::<ModelInput>(b) {
                let _ = m.validate();
                let _ = m.length();
            }
        }
        6 => {
            if let Some(o) = de::<OptimizerConfig>(b) {
                let _ = o.validate();
            }
        }
        7 => {
            let _ = de::<SessionState>(b);
        }
        8 => {
            let _ = de::<ServerConfig>(b);
        }
        _ => {
            let _ = de::<DynamicConfig>(b);
        }
    }
});
