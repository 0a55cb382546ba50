//! Learning-rate recommendations (`hyperparam_utils.py`): `get_lr` and the hidden sizes
//! it scales by. The table is the cookbook's `_KNOWN_HIDDEN_SIZES`, compared entry for
//! entry with the cookbook's own by `tests/cookbook/oracle.py`.

use tinker_support::input::InputError;
use tinker_support::json::quote;

/// `_KNOWN_HIDDEN_SIZES`: each lineup model's hidden size (no network lookups).
pub const HIDDEN_SIZES: &[(&str, u32)] = &[
    ("meta-llama/Llama-3.2-1B", 2048),
    ("meta-llama/Llama-3.2-3B", 3072),
    ("meta-llama/Llama-3.1-8B", 4096),
    ("meta-llama/Llama-3.1-8B-Instruct", 4096),
    ("meta-llama/Llama-3.1-70B", 8192),
    ("meta-llama/Llama-3.3-70B-Instruct", 8192),
    ("deepseek-ai/DeepSeek-V3.1", 7168),
    ("deepseek-ai/DeepSeek-V3.1-Base", 7168),
    ("deepseek-ai/DeepSeek-V4.1-Flash", 5120),
    ("deepseek-ai/DeepSeek-V4.1-Flash-1017", 5120),
    ("moonshotai/Kimi-K2-Thinking", 7168),
    ("moonshotai/Kimi-K2.5", 7168),
    ("moonshotai/Kimi-K2.6", 7168),
    ("moonshotai/Kimi-K3.1-Pro", 7168),
    ("Qwen/Qwen3-235B-A22B-Instruct-2507", 4096),
    ("Qwen/Qwen3-30B-A3B-Instruct-2507", 2048),
    ("Qwen/Qwen3-30B-A3B", 2048),
    ("Qwen/Qwen3-30B-A3B-Base", 2048),
    ("Qwen/Qwen3-32B", 5120),
    ("Qwen/Qwen3-8B", 4096),
    ("Qwen/Qwen3-8B-Base", 4096),
    ("Qwen/Qwen3-4B-Instruct-2507", 2560),
    ("Qwen/Qwen3-VL-235B-A22B-Instruct", 4096),
    ("Qwen/Qwen3-VL-30B-A3B-Instruct", 2048),
    ("Qwen/Qwen3.5-397B-A17B", 4096),
    ("Qwen/Qwen3.5-35B-A3B", 2048),
    ("Qwen/Qwen3.5-35B-A3B-Base", 2048),
    ("Qwen/Qwen3.5-27B", 5120),
    ("Qwen/Qwen3.5-9B", 4096),
    ("Qwen/Qwen3.5-9B-Base", 4096),
    ("Qwen/Qwen3.5-4B", 2560),
    ("Qwen/Qwen3.6-27B", 5120),
    ("Qwen/Qwen3.6-35B-A3B", 2048),
    ("Qwen/Qwen3.8-27B", 5120),
    ("openai/gpt-oss-120b", 2880),
    ("openai/gpt-oss-20b", 2880),
    ("zai-org/GLM-5.3", 6144),
    ("zai-org/GLM-5.3-Flash", 4096),
    ("nvidia/NVIDIA-Nemotron-3-Ultra-550B-A55B-BF16", 8192),
    ("nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-BF16", 4096),
    ("nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", 2688),
    ("nvidia/NVIDIA-Nemotron-3.5-Lightning-30B-A3B-BF16", 2688),
    ("nvidia/NVIDIA-Nemotron-3.5-Super-VL-120B-A12B-BF16", 4096),
    ("thinkingmachines/Inkling", 6144),
    ("thinkingmachines/Inkling-Small", 4096),
    ("thinkingmachines/Inkling-2-Small", 4608),
];

/// The models `get_lr` has no calibrated formula for (it raises `NotImplementedError`).
const UNCALIBRATED: &[&str] = &[
    "deepseek-ai/DeepSeek-V3.1",
    "deepseek-ai/DeepSeek-V4.1-Flash",
    "deepseek-ai/DeepSeek-V4.1-Flash-1017",
    "openai/gpt-oss-20b",
    "openai/gpt-oss-120b",
    "moonshotai/Kimi-K2.6",
    "moonshotai/Kimi-K3.1-Pro",
    "zai-org/GLM-5.3",
    "zai-org/GLM-5.3-Flash",
    "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16",
    "nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-BF16",
    "nvidia/NVIDIA-Nemotron-3-Ultra-550B-A55B-BF16",
    "nvidia/NVIDIA-Nemotron-3.5-Lightning-30B-A3B-BF16",
    "nvidia/NVIDIA-Nemotron-3.5-Super-VL-120B-A12B-BF16",
];

/// Why `get_lr` has no answer for a model.
#[derive(Debug, Clone, PartialEq)]
pub enum LrError {
    /// A family without a calibrated formula (the cookbook's `NotImplementedError`).
    NotCalibrated(String),
    /// A model the cookbook does not know (`ConfigurationError`), or a Llama/Qwen model
    /// missing from the table (the cookbook would fetch its config from the Hub).
    Unknown(InputError),
}

impl std::fmt::Display for LrError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LrError::NotCalibrated(m) => f.write_str(m),
            LrError::Unknown(e) => e.fmt(f),
        }
    }
}

/// `_base_model_name`: the model id without Tinker's variant suffix (`:peft:262144`).
pub fn base_model_name(model_name: &str) -> &str {
    model_name.split(':').next().unwrap_or(model_name)
}

/// `_get_hidden_size`, from the table only.
pub fn hidden_size(model_name: &str) -> Option<u32> {
    let base = base_model_name(model_name);
    HIDDEN_SIZES
        .iter()
        .find(|(m, _)| *m == base)
        .map(|(_, h)| *h)
}

/// `get_lr(model_name, is_lora)`: the cookbook's recommended learning rate, scaled by the
/// model's hidden size for the Llama and Qwen families.
pub fn get_lr(model_name: &str, is_lora: bool) -> Result<f64, LrError> {
    let base = base_model_name(model_name);
    let lr = if is_lora { 5e-05 * 10.0 } else { 5e-05 };
    let lower = base.to_lowercase();
    let exponent = if lower.contains("llama") {
        0.781
    } else if lower.contains("qwen") {
        0.0775
    } else if base.starts_with("thinkingmachines/Inkling") || UNCALIBRATED.contains(&base) {
        return Err(LrError::NotCalibrated(format!(
            "Learning rate formula for {base} is not yet calibrated. Please specify a learning rate manually."
        )));
    } else {
        return Err(LrError::Unknown(InputError::range_error(
            "model_name",
            format!("Unknown model: {}", quote(base)),
        )));
    };
    let Some(hidden) = hidden_size(base) else {
        return Err(LrError::Unknown(InputError::range_error(
            "model_name",
            format!(
                "Could not determine hidden_size for {}: it is not in the cookbook's table; pass learning_rate",
                quote(base)
            ),
        )));
    };
    Ok(lr * (2000.0 / f64::from(hidden)).powf(exponent))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variant_suffixes_are_ignored() {
        assert_eq!(
            base_model_name("zai-org/GLM-5.3:peft:262144"),
            "zai-org/GLM-5.3"
        );
        assert_eq!(
            get_lr("Qwen/Qwen3-8B:peft:131072", true),
            get_lr("Qwen/Qwen3-8B", true)
        );
    }

    #[test]
    fn lora_rates_are_ten_times_full_rates_and_families_are_told_apart() {
        let lora = get_lr("meta-llama/Llama-3.1-8B", true).unwrap();
        let full = get_lr("meta-llama/Llama-3.1-8B", false).unwrap();
        assert!((lora / full - 10.0).abs() < 1e-9);
        assert!(matches!(
            get_lr("openai/gpt-oss-20b", true),
            Err(LrError::NotCalibrated(_))
        ));
        assert!(matches!(
            get_lr("thinkingmachines/Inkling-Small", true),
            Err(LrError::NotCalibrated(_))
        ));
        assert!(matches!(
            get_lr("acme/Other-7B", true),
            Err(LrError::Unknown(_))
        ));
        assert!(matches!(
            get_lr("Qwen/Qwen9-1B", true),
            Err(LrError::Unknown(_))
        ));
    }
}
