//! The tiny real model: base models, adapter network, losses, optimisers, sampler,
//! plus state digests and the external (safetensors) export.

pub mod base;
pub mod custom;
pub mod loss;
pub mod net;
pub mod ngram;
pub mod optim;
#[cfg(test)]
mod quality;
pub mod sample;

pub use base::{find_spec, BaseModel, BaseSpec, Family, C, D};
pub use net::{Adapter, Key, Params};
pub use optim::OptState;

use sha2::{Digest, Sha256};

/// A hex SHA-256 over the adapter weights and optimiser state (order-stable).
pub fn state_digest(ad: &Adapter, st: &OptState) -> String {
    let mut h = Sha256::new();
    let feed = |h: &mut Sha256, tag: &str, p: &Params| {
        h.update(tag.as_bytes());
        for (k, v) in p {
            h.update(k.name().as_bytes());
            for x in v {
                h.update(x.to_le_bytes());
            }
        }
    };
    h.update((ad.rank as u64).to_le_bytes());
    feed(&mut h, "weights", &ad.params);
    feed(&mut h, "m", &st.m);
    feed(&mut h, "v", &st.v);
    h.update(st.step.to_le_bytes());
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// A safetensors file (F32 / I64 tensors) with string metadata.
pub fn safetensors(
    tensors: &[(String, &str, Vec<usize>, Vec<u8>)],
    metadata: &serde_json::Map<String, serde_json::Value>,
) -> Vec<u8> {
    let mut header = serde_json::Map::new();
    header.insert(
        "__metadata__".into(),
        serde_json::Value::Object(metadata.clone()),
    );
    let mut offset = 0usize;
    for (name, dtype, shape, data) in tensors {
        header.insert(
            name.clone(),
            serde_json::json!({"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + data.len()]}),
        );
        offset += data.len();
    }
    let mut hb = serde_json::to_vec(&serde_json::Value::Object(header)).unwrap_or_default();
    while hb.len() % 8 != 0 {
        hb.push(b' ');
    }
    let mut out = Vec::with_capacity(8 + hb.len() + offset);
    out.extend_from_slice(&(hb.len() as u64).to_le_bytes());
    out.extend_from_slice(&hb);
    for (_, _, _, data) in tensors {
        out.extend_from_slice(data);
    }
    out
}

/// Export the adapter as a PEFT-style directory: `adapter_model.safetensors` +
/// `adapter_config.json`. Dense token-bias deltas over the whole vocabulary make the
/// weights file a few hundred KB.
pub fn export_adapter(
    ad: &Adapter,
    base_model: &str,
    train: (bool, bool, bool),
) -> Vec<(String, Vec<u8>)> {
    let f32s =
        |v: &[f64]| -> Vec<u8> { v.iter().flat_map(|x| (*x as f32).to_le_bytes()).collect() };
    let rows: Vec<(u32, &Vec<f64>)> = ad
        .params
        .iter()
        .filter_map(|(k, v)| {
            if let Key::A(x) = k {
                Some((*x, v))
            } else {
                None
            }
        })
        .collect();
    let idx: Vec<u8> = rows
        .iter()
        .flat_map(|(x, _)| (*x as i64).to_le_bytes())
        .collect();
    let a: Vec<f64> = rows.iter().flat_map(|(_, v)| v.iter().copied()).collect();
    let mut token_bias = vec![0.0f64; ad.base.vocab()];
    for (k, v) in &ad.params {
        if let Key::TokenBias(c) = k {
            for (j, x) in v.iter().enumerate() {
                token_bias[BaseModel::class_member(*c as usize, j) as usize] = *x;
            }
        }
    }
    let tensors = vec![
        (
            "base_model.model.embed_tokens.lora_A.indices".to_string(),
            "I64",
            vec![rows.len()],
            idx,
        ),
        (
            "base_model.model.embed_tokens.lora_A.weight".to_string(),
            "F32",
            vec![rows.len(), ad.rank],
            f32s(&a),
        ),
        (
            "base_model.model.embed_tokens.lora_B.weight".to_string(),
            "F32",
            vec![ad.rank, D],
            f32s(&ad.params[&Key::B]),
        ),
        (
            "base_model.model.lm_head.class_bias".to_string(),
            "F32",
            vec![C],
            f32s(&ad.params[&Key::ClassBias]),
        ),
        (
            "base_model.model.lm_head.bias".to_string(),
            "F32",
            vec![ad.base.vocab()],
            f32s(&token_bias),
        ),
    ];
    let mut meta = serde_json::Map::new();
    meta.insert("format".into(), "pt".into());
    meta.insert("producer".into(), "tinker-sim".into());
    let config = serde_json::json!({
        "base_model_name_or_path": base_model,
        "peft_type": "LORA",
        "task_type": "CAUSAL_LM",
        "r": ad.rank,
        "lora_alpha": ad.rank,
        "target_modules": ["embed_tokens", "lm_head"],
        "train_attn": train.0,
        "train_mlp": train.1,
        "train_unembed": train.2,
        "tinker_sim": {
            "model": "Kneser-Ney trigram statistics of English text (per tokenizer family) plus a LoRA-like bigram adapter, class-factorised softmax",
            "hidden_size": D,
            "classes": C,
            "vocab_size": ad.base.vocab(),
        }
    });
    vec![
        (
            "adapter_model.safetensors".to_string(),
            safetensors(&tensors, &meta),
        ),
        (
            "adapter_config.json".to_string(),
            serde_json::to_vec_pretty(&config).unwrap_or_default(),
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digest_tracks_state_and_export_is_valid_safetensors() {
        let base = base::base_model(1, find_spec("Qwen/Qwen3-8B").unwrap());
        let ad = Adapter::new(base, 4, 7, true, true);
        let st = OptState::default();
        let d1 = state_digest(&ad, &st);
        assert_eq!(d1, state_digest(&ad.clone(), &st.clone()));
        let mut ad2 = ad.clone();
        ad2.params.insert(Key::A(1), vec![0.0, 0.0, 0.0, 1e-9]);
        assert_ne!(d1, state_digest(&ad2, &st));
        let files = export_adapter(&ad2, "Qwen/Qwen3-8B", (true, true, true));
        let st_file = &files[0].1;
        assert!(st_file.len() > 300_000, "{}", st_file.len());
        let hl = u64::from_le_bytes(st_file[..8].try_into().unwrap()) as usize;
        let header: serde_json::Value = serde_json::from_slice(&st_file[8..8 + hl]).unwrap();
        let b = &header["base_model.model.lm_head.bias"];
        assert_eq!(b["shape"][0], 151_936);
        let end = b["data_offsets"][1].as_u64().unwrap() as usize;
        assert_eq!(8 + hl + end, st_file.len());
    }
}
