//! `ForwardBackwardOutput` protobuf from `retrieve_future` (server-controlled bytes).
//! Property: whatever decodes is self-consistent, and the JSON the SDK hands to JS for each
//! tensor is valid JSON that serde_json (the reference parser) reads back to the same
//! elements, dtype and shape.
#![no_main]
use libfuzzer_sys::fuzz_target;
use tinker_core::types::TensorValues;

fuzz_target!(|data: &[u8]| {
    let Ok(out) = tinker_core::proto::decode_forward_backward_output(data) else {
        return;
    };
    for datum in &out.loss_fn_outputs {
        for t in datum.values() {
            let shape = t.dense_shape();
            let mut json = String::new();
            t.write_json(&mut json);
            // Non-finite floats are written as JS/Python would (not JSON): nothing to compare.
            if let TensorValues::Float32(v) = &t.values {
                if v.iter().any(|x| !x.is_finite()) {
                    continue;
                }
            }
            let v: serde_json::Value = serde_json::from_str(&json)
                .unwrap_or_else(|e| panic!("write_json wrote invalid JSON ({e}): {json}"));
            let got = v["data"].as_array().expect("a data array");
            assert_eq!(got.len(), t.values.len(), "element count");
            match &t.values {
                TensorValues::Float32(xs) => {
                    assert_eq!(v["dtype"], "float32");
                    for (a, &b) in got.iter().zip(xs) {
                        let a = a.as_f64().expect("a number") as f32;
                        // The shortest f32 text read through f64: at most one ulp apart.
                        assert!(a.to_bits().abs_diff(b.to_bits()) <= 1, "{a} vs {b}");
                    }
                }
                TensorValues::Int64(xs) => {
                    assert_eq!(v["dtype"], "int64");
                    for (a, &b) in got.iter().zip(xs) {
                        assert_eq!(a.as_i64(), Some(b));
                    }
                }
            }
            if t.shape.is_some() {
                let s: Vec<usize> = v["shape"]
                    .as_array()
                    .expect("a shape array")
                    .iter()
                    .map(|d| d.as_u64().expect("a dimension") as usize)
                    .collect();
                assert_eq!(s, shape, "shape");
            }
        }
    }
});
