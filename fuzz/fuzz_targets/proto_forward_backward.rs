//! `ForwardBackwardOutput` protobuf from `retrieve_future` (server-controlled bytes).
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(out) = tinker_wasm::proto::decode_forward_backward_output(data) {
        // Whatever decodes must be self-consistent: each tensor's shape covers its values.
        for datum in &out.loss_fn_outputs {
            for t in datum.values() {
                let _ = t.dense_shape();
                t.write_json(&mut String::new());
            }
        }
    }
});
