//! `SampleResponse` protobuf from `retrieve_future`, with the submit response's
//! `sample_sequence_ids` (first byte: how many).
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&n, rest)) = data.split_first() else {
        return;
    };
    let ids: Vec<String> = (0..n % 8).map(|i| format!("seq-{i}")).collect();
    if let Ok(out) = tinker_core::proto::decode_sample_response(rest, &ids) {
        assert_eq!(out.sequences.len(), ids.len());
        if let Some(t) = &out.topk_prompt_logprobs {
            assert_eq!(t.token_ids.len(), t.k as usize * t.length as usize);
        }
        if let Some(t) = &out.target_prompt_logprobs {
            t.write_json(&mut String::new());
        }
        let _ = format!("{out:?}");
    }
});
