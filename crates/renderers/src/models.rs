//! The service's model lineup as tinker-cookbook 0.6.1 lists it (`model_info.py`): each
//! model's organisation, version, size, chat/base and vision flags and recommended
//! renderers (first = recommended). Checked against the cookbook by the renderer parity
//! suite (`tests/renderers`).

use std::borrow::Cow;

/// What the cookbook knows of a model (`ModelAttributes`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelAttributes {
    /// The model name without its organisation (`Qwen3-8B`).
    pub name: Cow<'static, str>,
    /// The organisation (`Qwen`).
    pub organization: &'static str,
    /// The version (`3`).
    pub version: Cow<'static, str>,
    /// The size (`30B-A3B`).
    pub size: Cow<'static, str>,
    /// Chat/instruct-tuned (else a base model).
    pub is_chat: bool,
    /// Renderer names, most recommended first.
    pub recommended_renderers: &'static [&'static str],
    /// Takes images.
    pub is_vl: bool,
    /// Takes audio.
    pub is_audio_in: bool,
}

const LLAMA3: &[&str] = &["llama3"];
const ROLE_COLON: &[&str] = &["role_colon"];
const QWEN3: &[&str] = &["qwen3", "qwen3_disable_thinking"];
const QWEN3_INSTRUCT: &[&str] = &["qwen3_instruct"];
const QWEN3_VL_INSTRUCT: &[&str] = &["qwen3_vl_instruct"];
const QWEN3_5: &[&str] = &[
    "qwen3_5",
    "qwen3_5_disable_thinking",
    "qwen3_5_preserve_thinking",
];
const QWEN3_8: &[&str] = &[
    "qwen3_8_xhigh_reasoning",
    "qwen3_8_disable_thinking",
    "qwen3_8_medium_reasoning",
    "qwen3_8_low_reasoning",
];
const DEEPSEEKV3: &[&str] = &["deepseekv3", "deepseekv3_thinking"];
const DEEPSEEKV4_1: &[&str] = &[
    "deepseekv4_1",
    "deepseekv4_1_low_reasoning",
    "deepseekv4_1_max_reasoning",
    "deepseekv4_1_disable_thinking",
    "deepseekv4_1_preserve_thinking",
];
const GPT_OSS: &[&str] = &["gpt_oss_no_sysprompt", "gpt_oss_medium_reasoning"];
const KIMI_K2: &[&str] = &["kimi_k2"];
const KIMI_K25: &[&str] = &["kimi_k25", "kimi_k25_disable_thinking"];
const KIMI_K26: &[&str] = &[
    "kimi_k26",
    "kimi_k26_disable_thinking",
    "kimi_k26_preserve_thinking",
];
const KIMI_K31_PRO: &[&str] = &[
    "kimi_k31_pro_max_reasoning",
    "kimi_k31_pro_high_reasoning",
    "kimi_k31_pro_low_reasoning",
    "kimi_k31_pro_disable_thinking",
    "kimi_k31_pro_no_reasoning_effort",
];
const GLM5_3: &[&str] = &[
    "glm5_3_max_reasoning",
    "glm5_3_low_reasoning",
    "glm5_3_high_reasoning",
];
const NEMOTRON3: &[&str] = &[
    "nemotron3",
    "nemotron3_disable_thinking",
    "nemotron3_preserve_thinking",
];
const NEMOTRON3_SUPER: &[&str] = &[
    "nemotron3",
    "nemotron3_disable_thinking",
    "nemotron3_preserve_thinking",
    "nemotron3_low_thinking",
];
const NEMOTRON3_ULTRA: &[&str] = &[
    "nemotron3_ultra",
    "nemotron3_ultra_disable_thinking",
    "nemotron3_ultra_medium_thinking",
    "nemotron3_ultra_preserve_thinking",
];
const NEMOTRON3_LIGHTNING: &[&str] = &[
    "nemotron3_ultra",
    "nemotron3_ultra_disable_thinking",
    "nemotron3_ultra_preserve_thinking",
];
const TML_V0: &[&str] = &["tml_v0"];

const fn m(
    organization: &'static str,
    name: &'static str,
    version: &'static str,
    size: &'static str,
    is_chat: bool,
    recommended_renderers: &'static [&'static str],
    is_vl: bool,
) -> ModelAttributes {
    ModelAttributes {
        name: Cow::Borrowed(name),
        organization,
        version: Cow::Borrowed(version),
        size: Cow::Borrowed(size),
        is_chat,
        recommended_renderers,
        is_vl,
        is_audio_in: false,
    }
}

const fn audio(mut a: ModelAttributes) -> ModelAttributes {
    a.is_audio_in = true;
    a
}

/// Every model of the lineup, in the cookbook's order.
pub const MODELS: &[ModelAttributes] = &[
    m(
        "meta-llama",
        "Llama-3.1-8B-Instruct",
        "3.1",
        "8B",
        true,
        LLAMA3,
        false,
    ),
    m(
        "meta-llama",
        "Llama-3.2-1B",
        "3.2",
        "1B",
        false,
        ROLE_COLON,
        false,
    ),
    m(
        "meta-llama",
        "Llama-3.2-3B",
        "3.2",
        "3B",
        false,
        ROLE_COLON,
        false,
    ),
    m(
        "meta-llama",
        "Llama-3.1-8B",
        "3.1",
        "8B",
        false,
        ROLE_COLON,
        false,
    ),
    m(
        "meta-llama",
        "Llama-3.1-70B",
        "3.1",
        "70B",
        false,
        ROLE_COLON,
        false,
    ),
    m(
        "meta-llama",
        "Llama-3.3-70B-Instruct",
        "3.3",
        "70B",
        true,
        LLAMA3,
        false,
    ),
    m(
        "Qwen",
        "Qwen3-VL-30B-A3B-Instruct",
        "3",
        "30B-A3B",
        true,
        QWEN3_VL_INSTRUCT,
        true,
    ),
    m(
        "Qwen",
        "Qwen3-VL-235B-A22B-Instruct",
        "3",
        "235B-A22B",
        true,
        QWEN3_VL_INSTRUCT,
        true,
    ),
    m("Qwen", "Qwen3-8B-Base", "3", "8B", false, ROLE_COLON, false),
    m(
        "Qwen",
        "Qwen3-30B-A3B-Base",
        "3",
        "30B-A3B",
        false,
        ROLE_COLON,
        false,
    ),
    m("Qwen", "Qwen3-8B", "3", "8B", true, QWEN3, false),
    m("Qwen", "Qwen3-32B", "3", "32B", true, QWEN3, false),
    m("Qwen", "Qwen3-30B-A3B", "3", "30B-A3B", true, QWEN3, false),
    m(
        "Qwen",
        "Qwen3-4B-Instruct-2507",
        "3",
        "4B",
        true,
        QWEN3_INSTRUCT,
        false,
    ),
    m(
        "Qwen",
        "Qwen3-30B-A3B-Instruct-2507",
        "3",
        "30B-A3B",
        true,
        QWEN3_INSTRUCT,
        false,
    ),
    m(
        "Qwen",
        "Qwen3-235B-A22B-Instruct-2507",
        "3",
        "235B-A22B",
        true,
        QWEN3_INSTRUCT,
        false,
    ),
    m("Qwen", "Qwen3.5-4B", "3.5", "4B", true, QWEN3_5, true),
    m("Qwen", "Qwen3.5-9B", "3.5", "9B", true, QWEN3_5, true),
    m(
        "Qwen",
        "Qwen3.5-9B-Base",
        "3.5",
        "9B",
        false,
        ROLE_COLON,
        true,
    ),
    m("Qwen", "Qwen3.5-27B", "3.5", "27B", true, QWEN3_5, true),
    m(
        "Qwen",
        "Qwen3.5-35B-A3B",
        "3.5",
        "35B-A3B",
        true,
        QWEN3_5,
        true,
    ),
    m(
        "Qwen",
        "Qwen3.5-35B-A3B-Base",
        "3.5",
        "35B-A3B",
        false,
        ROLE_COLON,
        true,
    ),
    m(
        "Qwen",
        "Qwen3.5-397B-A17B",
        "3.5",
        "397B-A17B",
        true,
        QWEN3_5,
        true,
    ),
    m("Qwen", "Qwen3.6-27B", "3.6", "27B", true, QWEN3_5, true),
    m(
        "Qwen",
        "Qwen3.6-35B-A3B",
        "3.6",
        "35B-A3B",
        true,
        QWEN3_5,
        true,
    ),
    m("Qwen", "Qwen3.8-27B", "3.8", "27B", true, QWEN3_8, true),
    m(
        "deepseek-ai",
        "DeepSeek-V3.1",
        "3",
        "671B-A37B",
        true,
        DEEPSEEKV3,
        false,
    ),
    m(
        "deepseek-ai",
        "DeepSeek-V3.1-Base",
        "3",
        "671B-A37B",
        false,
        ROLE_COLON,
        false,
    ),
    m(
        "deepseek-ai",
        "DeepSeek-V4.1-Flash",
        "4.1",
        "552B-A16B",
        true,
        DEEPSEEKV4_1,
        false,
    ),
    m(
        "deepseek-ai",
        "DeepSeek-V4.1-Flash-1017",
        "4.1",
        "552B-A16B",
        true,
        DEEPSEEKV4_1,
        false,
    ),
    m(
        "openai",
        "gpt-oss-20b",
        "1",
        "21B-A3.6B",
        true,
        GPT_OSS,
        false,
    ),
    m(
        "openai",
        "gpt-oss-120b",
        "1",
        "117B-A5.1B",
        true,
        GPT_OSS,
        false,
    ),
    m(
        "moonshotai",
        "Kimi-K2-Thinking",
        "K2",
        "1T-A32B",
        true,
        KIMI_K2,
        false,
    ),
    m(
        "moonshotai",
        "Kimi-K2.5",
        "K2.5",
        "1T-A32B",
        true,
        KIMI_K25,
        true,
    ),
    m(
        "moonshotai",
        "Kimi-K2.6",
        "K2.6",
        "1T-A32B",
        true,
        KIMI_K26,
        true,
    ),
    m(
        "moonshotai",
        "Kimi-K3.1-Pro",
        "K3.1",
        "2.8T-A104B",
        true,
        KIMI_K31_PRO,
        true,
    ),
    m(
        "zai-org",
        "GLM-5.3",
        "5.3",
        "744B-A40B",
        true,
        GLM5_3,
        false,
    ),
    m(
        "zai-org",
        "GLM-5.3-Flash",
        "5.3",
        "320B-A18B",
        true,
        GLM5_3,
        false,
    ),
    m(
        "nvidia",
        "NVIDIA-Nemotron-3-Nano-30B-A3B-BF16",
        "3",
        "30B-A3B",
        true,
        NEMOTRON3,
        false,
    ),
    m(
        "nvidia",
        "NVIDIA-Nemotron-3-Super-120B-A12B-BF16",
        "3",
        "120B-A12B",
        true,
        NEMOTRON3_SUPER,
        false,
    ),
    m(
        "nvidia",
        "NVIDIA-Nemotron-3-Ultra-550B-A55B-BF16",
        "3",
        "550B-A55B",
        true,
        NEMOTRON3_ULTRA,
        false,
    ),
    m(
        "nvidia",
        "NVIDIA-Nemotron-3.5-Lightning-30B-A3B-BF16",
        "3.5",
        "30B-A3B",
        true,
        NEMOTRON3_LIGHTNING,
        false,
    ),
    m(
        "nvidia",
        "NVIDIA-Nemotron-3.5-Super-VL-120B-A12B-BF16",
        "3.5",
        "120B-A12B",
        true,
        NEMOTRON3_ULTRA,
        true,
    ),
    audio(m(
        "thinkingmachines",
        "Inkling",
        "1",
        "975B-A41B",
        true,
        TML_V0,
        true,
    )),
    audio(m(
        "thinkingmachines",
        "Inkling-Small",
        "1",
        "276B-A12B",
        true,
        TML_V0,
        true,
    )),
    m(
        "thinkingmachines",
        "Inkling-2-Small",
        "2",
        "594B-A17B",
        true,
        TML_V0,
        true,
    ),
];

/// The organisations, in the cookbook's order (for error messages).
pub const ORGANIZATIONS: &[&str] = &[
    "meta-llama",
    "Qwen",
    "deepseek-ai",
    "openai",
    "moonshotai",
    "zai-org",
    "nvidia",
    "thinkingmachines",
];

/// `get_model_attributes`: the attributes of `org/model` (an optional `:checkpoint`
/// suffix is ignored). Any other `thinkingmachines/Inkling*` name gets Inkling's
/// defaults, as in the cookbook. The error says what is known.
pub fn model_attributes(model_name: &str) -> Result<ModelAttributes, String> {
    let base = model_name.split(':').next().unwrap_or_default();
    let Some((org, name)) = base.split_once('/') else {
        return Err(format!(
            "model name must be in 'org/model' format, got {model_name:?}"
        ));
    };
    if let Some(a) = MODELS
        .iter()
        .find(|a| a.organization == org && a.name == name)
    {
        return Ok(a.clone());
    }
    if org == "thinkingmachines" && name.starts_with("Inkling") {
        // Any other Inkling shares the renderer; its version and size are its name.
        let own = || Cow::Owned(name.to_owned());
        return Ok(ModelAttributes {
            name: own(),
            version: own(),
            size: own(),
            ..audio(m("thinkingmachines", "", "", "", true, TML_V0, true))
        });
    }
    if ORGANIZATIONS.contains(&org) {
        let known: Vec<&str> = MODELS
            .iter()
            .filter(|a| a.organization == org)
            .map(|a| a.name.as_ref())
            .collect();
        return Err(format!(
            "unknown model {model_name:?}: {org} models are {}",
            known.join(", ")
        ));
    }
    Err(format!(
        "unknown model {model_name:?}: known organisations are {}",
        ORGANIZATIONS.join(", ")
    ))
}

/// `get_recommended_renderer_name`: the first recommended renderer of a model.
pub fn recommended_renderer(model_name: &str) -> Result<&'static str, String> {
    Ok(model_attributes(model_name)?.recommended_renderers[0])
}
