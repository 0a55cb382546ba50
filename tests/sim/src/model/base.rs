//! Base models: the catalogue the simulator offers and their fixed pseudo-random weights.
//!
//! Every base weight is a pure function of `(server seed, base model name, index)`:
//! nothing per-token is stored, except an optional f32 table of the output embeddings
//! built on first use by full-vocabulary passes (temperature/top-k/top-p sampling, top-k
//! logprobs). Values are generated with 24-bit mantissas, so the f32 table and the
//! on-the-fly f64 rows are bit-identical.

use crate::util::{hash_str, hash_words, mix64};
use std::sync::{Arc, OnceLock};

/// Hidden size.
pub const D: usize = 32;
/// Number of output classes of the class-factorised softmax.
pub const C: usize = 512;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    Qwen3,
    Llama3,
}

#[derive(Debug)]
pub struct BaseSpec {
    pub name: &'static str,
    pub family: Family,
    pub vocab: usize,
    /// Ids at or above this are unused slots of the embedding matrix (never sampled).
    pub real_vocab: usize,
    pub eos: u32,
    pub max_context: usize,
    /// Sent as `model_data.tokenizer_id` by get_info (None: clients apply their own rule).
    pub tokenizer_id: Option<&'static str>,
    pub arch: &'static str,
    /// Mixture-of-experts models report the router metrics real MoE runs report.
    pub moe: bool,
}

pub const QWEN3_VOCAB: usize = 151_936;
pub const LLAMA3_VOCAB: usize = 128_256;

pub static CATALOGUE: &[BaseSpec] = &[
    BaseSpec {
        name: "Qwen/Qwen3-8B",
        family: Family::Qwen3,
        vocab: QWEN3_VOCAB,
        real_vocab: 151_669,
        eos: 151_645,
        max_context: 32_768,
        tokenizer_id: Some("Qwen/Qwen3-8B"),
        arch: "qwen3",
        moe: false,
    },
    BaseSpec {
        name: "Qwen/Qwen3-4B-Instruct-2507",
        family: Family::Qwen3,
        vocab: QWEN3_VOCAB,
        real_vocab: 151_669,
        eos: 151_645,
        max_context: 32_768,
        tokenizer_id: Some("Qwen/Qwen3-4B-Instruct-2507"),
        arch: "qwen3",
        moe: false,
    },
    BaseSpec {
        name: "Qwen/Qwen3-30B-A3B",
        family: Family::Qwen3,
        vocab: QWEN3_VOCAB,
        real_vocab: 151_669,
        eos: 151_645,
        max_context: 32_768,
        tokenizer_id: Some("Qwen/Qwen3-30B-A3B"),
        arch: "qwen3_moe",
        moe: true,
    },
    BaseSpec {
        name: "meta-llama/Llama-3.2-1B",
        family: Family::Llama3,
        vocab: LLAMA3_VOCAB,
        real_vocab: LLAMA3_VOCAB,
        eos: 128_009,
        max_context: 131_072,
        tokenizer_id: None,
        arch: "llama",
        moe: false,
    },
    BaseSpec {
        name: "meta-llama/Llama-3.1-8B-Instruct",
        family: Family::Llama3,
        vocab: LLAMA3_VOCAB,
        real_vocab: LLAMA3_VOCAB,
        eos: 128_009,
        max_context: 131_072,
        tokenizer_id: None,
        arch: "llama",
        moe: false,
    },
];

/// Look a base model up by name; a `:suffix` variant (e.g. `Qwen/Qwen3-8B:peft:8192`)
/// resolves to its base.
pub fn find_spec(name: &str) -> Option<&'static BaseSpec> {
    let base = name.split(':').next().unwrap_or(name);
    CATALOGUE.iter().find(|s| s.name == base)
}

pub fn known_model_names() -> Vec<&'static str> {
    CATALOGUE.iter().map(|s| s.name).collect()
}

const STREAM_E: u64 = 0xE111;
const STREAM_U: u64 = 0x7511;
const STREAM_W: u64 = 0x3B11;
const STREAM_CB: u64 = 0xCB11;
const STREAM_UB: u64 = 0x0B11;

/// A value in [-1, 1) with a 24-bit mantissa (exact in f32).
#[inline]
fn unit24(x: u64) -> f64 {
    ((x >> 40) as i64 - (1 << 23)) as f64 / (1u64 << 23) as f64
}

#[inline]
fn fill_row(key: u64, stream: u64, idx: u64, out: &mut [f64]) {
    let row = mix64(key ^ mix64(stream.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ idx));
    for (i, o) in out.iter_mut().enumerate() {
        *o = unit24(mix64(
            row.wrapping_add((i as u64).wrapping_mul(0xD1B5_4A32_D192_ED03)),
        ));
    }
}

pub struct BaseModel {
    pub spec: &'static BaseSpec,
    key: u64,
    /// Class output matrix, C×D.
    pub class_w: Vec<f64>,
    /// Base class biases (EOS's class boosted).
    pub class_b: Vec<f64>,
    table: OnceLock<Vec<f32>>,
    table_bias: OnceLock<Vec<f64>>,
}

/// Base-model instances are shared per (seed, name).
pub fn base_model(seed: u64, spec: &'static BaseSpec) -> Arc<BaseModel> {
    use std::collections::HashMap;
    use std::sync::Mutex;
    type Cache = Mutex<HashMap<(u64, &'static str), Arc<BaseModel>>>;
    static CACHE: OnceLock<Cache> = OnceLock::new();
    let cache = CACHE.get_or_init(|| Mutex::new(HashMap::new()));
    let mut g = cache.lock().unwrap_or_else(|e| e.into_inner());
    g.entry((seed, spec.name))
        .or_insert_with(|| Arc::new(BaseModel::new(seed, spec)))
        .clone()
}

pub const EOS_CLASS_BOOST: f64 = 4.5;
pub const EOS_TOKEN_BOOST: f64 = 8.0;
pub const UNUSED_PENALTY: f64 = -30.0;

impl BaseModel {
    pub fn new(seed: u64, spec: &'static BaseSpec) -> BaseModel {
        let key = hash_words(&[seed, hash_str(spec.name)]);
        let mut class_w = vec![0.0; C * D];
        for c in 0..C {
            fill_row(key, STREAM_W, c as u64, &mut class_w[c * D..(c + 1) * D]);
        }
        let mut class_b = vec![0.0; C];
        fill_row(key, STREAM_CB, 0, &mut class_b);
        for b in class_b.iter_mut() {
            *b *= 0.5;
        }
        class_b[spec.eos as usize % C] += EOS_CLASS_BOOST;
        BaseModel {
            spec,
            key,
            class_w,
            class_b,
            table: OnceLock::new(),
            table_bias: OnceLock::new(),
        }
    }

    pub fn vocab(&self) -> usize {
        self.spec.vocab
    }

    #[inline]
    pub fn class_of(v: u32) -> usize {
        v as usize % C
    }

    /// Number of tokens in class `c`.
    #[inline]
    pub fn class_len(&self, c: usize) -> usize {
        let v = self.spec.vocab;
        if c >= v {
            0
        } else {
            (v - c).div_ceil(C)
        }
    }

    /// The `j`-th token of class `c`.
    #[inline]
    pub fn class_member(c: usize, j: usize) -> u32 {
        (c + j * C) as u32
    }

    /// Index of token `v` within its class.
    #[inline]
    pub fn index_in_class(v: u32) -> usize {
        v as usize / C
    }

    pub fn input_row(&self, v: u32, out: &mut [f64; D]) {
        fill_row(self.key, STREAM_E, v as u64, out);
    }

    /// Output embedding of token `v`.
    #[inline]
    pub fn output_row(&self, v: u32, out: &mut [f64; D]) {
        if let Some(t) = self.table.get() {
            let s = &t[v as usize * D..(v as usize + 1) * D];
            for (o, x) in out.iter_mut().zip(s) {
                *o = *x as f64;
            }
        } else {
            fill_row(self.key, STREAM_U, v as u64, out);
        }
    }

    /// Base bias of token `v` (EOS boosted, unused slots suppressed).
    #[inline]
    pub fn token_bias(&self, v: u32) -> f64 {
        if let Some(t) = self.table_bias.get() {
            return t[v as usize];
        }
        self.token_bias_raw(v)
    }

    fn token_bias_raw(&self, v: u32) -> f64 {
        let mut b = [0.0f64; 1];
        fill_row(self.key, STREAM_UB, v as u64, &mut b);
        let mut x = b[0];
        if v == self.spec.eos {
            x += EOS_TOKEN_BOOST;
        }
        if v as usize >= self.spec.real_vocab {
            x += UNUSED_PENALTY;
        }
        x
    }

    /// Build (once) the f32 tables used by full-vocabulary passes.
    pub fn ensure_table(&self) {
        self.table.get_or_init(|| {
            let v = self.spec.vocab;
            let mut t = vec![0f32; v * D];
            let mut row = [0.0f64; D];
            for tok in 0..v {
                fill_row(self.key, STREAM_U, tok as u64, &mut row);
                for (o, x) in t[tok * D..(tok + 1) * D].iter_mut().zip(row.iter()) {
                    *o = *x as f32;
                }
            }
            t
        });
        self.table_bias.get_or_init(|| {
            (0..self.spec.vocab as u32)
                .map(|v| self.token_bias_raw(v))
                .collect()
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_partition_the_vocabulary() {
        let spec = find_spec("Qwen/Qwen3-8B").unwrap();
        let m = BaseModel::new(1, spec);
        let total: usize = (0..C).map(|c| m.class_len(c)).sum();
        assert_eq!(total, QWEN3_VOCAB);
        for v in [0u32, 1, 511, 512, 151_645, 151_935] {
            let c = BaseModel::class_of(v);
            assert_eq!(BaseModel::class_member(c, BaseModel::index_in_class(v)), v);
            assert!(BaseModel::index_in_class(v) < m.class_len(c));
        }
        let l = BaseModel::new(1, find_spec("meta-llama/Llama-3.2-1B").unwrap());
        assert_eq!((0..C).map(|c| l.class_len(c)).sum::<usize>(), LLAMA3_VOCAB);
    }

    #[test]
    fn table_matches_on_the_fly_rows() {
        let spec = find_spec("meta-llama/Llama-3.2-1B").unwrap();
        let m = BaseModel::new(9, spec);
        let mut a = [0.0; D];
        m.output_row(12345, &mut a);
        let ba = m.token_bias(128_009);
        m.ensure_table();
        let mut b = [0.0; D];
        m.output_row(12345, &mut b);
        assert_eq!(a, b);
        assert_eq!(ba, m.token_bias(128_009));
        assert!(ba > 4.0, "EOS is boosted");
    }

    #[test]
    fn weights_depend_on_seed_and_name() {
        let q = find_spec("Qwen/Qwen3-8B").unwrap();
        let q2 = find_spec("Qwen/Qwen3-4B-Instruct-2507").unwrap();
        let (mut a, mut b, mut c) = ([0.0; D], [0.0; D], [0.0; D]);
        BaseModel::new(1, q).input_row(7, &mut a);
        BaseModel::new(2, q).input_row(7, &mut b);
        BaseModel::new(1, q2).input_row(7, &mut c);
        assert_ne!(a, b);
        assert_ne!(a, c);
        assert!(find_spec("Qwen/Qwen3-8B:peft:8192").is_some());
        assert!(find_spec("Qwen/Qwen9").is_none());
    }
}
