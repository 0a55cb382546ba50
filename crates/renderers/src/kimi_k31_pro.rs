//! `kimi_k31_pro_*` (cookbook `renderers/kimi_k31_pro.py`): an adapter over the
//! `KimiK31Pro` renderer of the `tml_renderers` wheel, compiled code whose format the
//! cookbook does not spell out. tinker-cookbook 0.6.1 requires tml-renderers >= 0.4.1
//! for it, but the newest tml-renderers published (0.2.1) has neither `KimiK31Pro` nor
//! the `KimiK3Tokenizer` it checks for, so the cookbook cannot build these renderers:
//! `get_renderer` raises (`AttributeError: module 'tml_renderers.tokenizers' has no
//! attribute 'KimiK3Tokenizer'`) whatever the tokenizer.
//!
//! Writing a guessed format would produce tokens the model was never trained on, so
//! these names are known but refused at construction, as the cookbook refuses them.

const NAMES: [&str; 5] = [
    "kimi_k31_pro_max_reasoning",
    "kimi_k31_pro_high_reasoning",
    "kimi_k31_pro_low_reasoning",
    "kimi_k31_pro_disable_thinking",
    "kimi_k31_pro_no_reasoning_effort",
];

/// Why `name` cannot be built, if it is one of this family's names.
pub(super) fn unavailable(name: &str) -> Option<String> {
    NAMES.contains(&name).then(|| {
        format!(
            "{name} is not available: tinker-cookbook 0.6.1 renders Kimi K3.1-Pro with the \
             KimiK31Pro renderer of tml-renderers >= 0.4.1, which has not been published (the \
             newest tml-renderers, 0.2.1, has neither it nor the Kimi K3 tokenizer), so the \
             cookbook itself cannot build this renderer and its format is unknown"
        )
    })
}
