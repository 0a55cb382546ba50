//! Renderers, as in tinker-cookbook 0.6.1 (`tinker_cookbook/renderers/`): a conversation
//! becomes tokens for sampling ([`Renderer::build_generation_prompt`]) or tokens with
//! per-token weights for supervised training ([`Renderer::build_supervised_example`]),
//! and a sampled response parses back into a message ([`Renderer::parse_response`]).
//!
//! Every renderer name `get_renderer` accepts is here ([`NAMES`]), one module per family
//! file of the cookbook; [`base`] is the cookbook's `base.py` (the `Renderer` class with its
//! default methods, and the shared parsing helpers). [`models`] is `model_info.py`: the
//! lineup and each model's recommended renderers ([`Renderer::for_model`]).
#![warn(missing_docs)]

pub mod base;
pub mod message;
pub mod models;

mod deepseek_v3;
mod deepseek_v4_1;
mod glm5_3;
mod gpt_oss;
use tinker_tokenizer::py_json;
pub mod image;
mod kimi_k2;
mod kimi_k25;
mod kimi_k31_pro;
mod kimi_tools_ts;
mod llama3;
mod nemotron3;
mod qwen3;
mod qwen3_5;
mod qwen3_8;
mod role_colon;
mod tml_v0;

#[cfg(test)]
mod tests;

use serde_json::Value as Json;

pub use base::{
    ChatRenderer, RenderContext, RenderedMessage, StopSequences, Supervised, Termination,
    TrainOnWhat,
};
pub use message::{Content, ImageSource, Message, Part, ToolCall, UnparsedToolCall};

use base::R;
use tinker_core::types::{
    Datum, InputError, LossFnInputs, ModelInput, ModelInputChunk, TensorData,
};
use tinker_tokenizer::{Tokenizer, TokenizerError};

/// Construction options a renderer may use.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RendererOptions {
    /// The date gpt-oss writes into its system prompt (`YYYY-MM-DD`; the cookbook's
    /// `current_date`). Without it, today's date (UTC natively; the JS layer passes the
    /// local date, as Python's `datetime.now()` would).
    pub current_date: Option<String>,
}

/// Every renderer name of the cookbook's `get_renderer`, in its order.
pub const NAMES: [&str; 49] = [
    "role_colon",
    "llama3",
    "qwen3",
    "qwen3_vl",
    "qwen3_vl_instruct",
    "qwen3_disable_thinking",
    "qwen3_instruct",
    "qwen3_5",
    "qwen3_5_disable_thinking",
    "qwen3_5_preserve_thinking",
    "qwen3_8_xhigh_reasoning",
    "qwen3_8_medium_reasoning",
    "qwen3_8_low_reasoning",
    "qwen3_8_disable_thinking",
    "deepseekv3",
    "deepseekv3_disable_thinking",
    "deepseekv3_thinking",
    "deepseekv4_1",
    "deepseekv4_1_low_reasoning",
    "deepseekv4_1_max_reasoning",
    "deepseekv4_1_disable_thinking",
    "deepseekv4_1_preserve_thinking",
    "glm5_3_max_reasoning",
    "glm5_3_low_reasoning",
    "glm5_3_high_reasoning",
    "kimi_k2",
    "kimi_k25",
    "kimi_k25_disable_thinking",
    "kimi_k26",
    "kimi_k26_disable_thinking",
    "kimi_k26_preserve_thinking",
    "kimi_k31_pro_max_reasoning",
    "kimi_k31_pro_high_reasoning",
    "kimi_k31_pro_low_reasoning",
    "kimi_k31_pro_disable_thinking",
    "kimi_k31_pro_no_reasoning_effort",
    "nemotron3",
    "nemotron3_low_thinking",
    "nemotron3_disable_thinking",
    "nemotron3_preserve_thinking",
    "nemotron3_ultra",
    "nemotron3_ultra_disable_thinking",
    "nemotron3_ultra_medium_thinking",
    "nemotron3_ultra_preserve_thinking",
    "gpt_oss_no_sysprompt",
    "gpt_oss_low_reasoning",
    "gpt_oss_medium_reasoning",
    "gpt_oss_high_reasoning",
    "tml_v0",
];

/// A family's constructor: `Some` for the names the family owns.
type Family = fn(&str, &RendererOptions) -> Option<Box<dyn ChatRenderer>>;

const FAMILIES: [Family; 13] = [
    role_colon::by_name,
    llama3::by_name,
    qwen3::by_name,
    qwen3_5::by_name,
    qwen3_8::by_name,
    deepseek_v3::by_name,
    deepseek_v4_1::by_name,
    glm5_3::by_name,
    kimi_k2::by_name,
    kimi_k25::by_name,
    nemotron3::by_name,
    gpt_oss::by_name,
    tml_v0::by_name,
];

/// A built-in renderer by its cookbook name.
pub fn builtin(name: &str, opts: &RendererOptions) -> Option<Box<dyn ChatRenderer>> {
    FAMILIES.iter().find_map(|f| f(name, opts))
}

/// A renderer: one chat format, by its cookbook name.
pub struct Renderer {
    name: String,
    inner: Box<dyn ChatRenderer>,
}

impl std::fmt::Debug for Renderer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Renderer")
            .field("name", &self.name)
            .finish()
    }
}

impl Renderer {
    /// The built-in renderer `name`. An unknown name is a `RangeError` listing the names;
    /// a known one the cookbook itself cannot build (Kimi K3.1-Pro) is refused as it is.
    pub fn new(name: &str, opts: &RendererOptions) -> Result<Renderer, TokenizerError> {
        if let Some(inner) = builtin(name, opts) {
            return Ok(Renderer {
                name: name.to_owned(),
                inner,
            });
        }
        if let Some(why) = kimi_k31_pro::unavailable(name) {
            return Err(TokenizerError::Renderer(why));
        }
        Err(InputError::range_error(
            "name",
            format!(
                "unknown renderer {name:?}; expected one of {}",
                NAMES.join(", ")
            ),
        )
        .into())
    }

    /// A renderer implemented elsewhere (a JS `registerRenderer` factory), under `name`.
    pub fn custom(name: &str, inner: Box<dyn ChatRenderer>) -> Renderer {
        Renderer {
            name: name.to_owned(),
            inner,
        }
    }

    /// The cookbook's recommended renderer for a model (`get_recommended_renderer_name`).
    pub fn for_model(model_name: &str, opts: &RendererOptions) -> Result<Renderer, TokenizerError> {
        let name = models::recommended_renderer(model_name)
            .map_err(|m| InputError::range_error("model", m))?;
        Renderer::new(name, opts)
    }

    /// The cookbook name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The format behind it.
    pub fn format(&self) -> &dyn ChatRenderer {
        self.inner.as_ref()
    }

    /// Stop sequences for sampling.
    pub fn stop_sequences(&self, tok: &Tokenizer) -> R<StopSequences> {
        self.inner.stop_sequences(tok)
    }

    /// Tokens for sampling the next `role` turn, optionally with a prefill.
    pub fn build_generation_prompt(
        &self,
        tok: &Tokenizer,
        messages: &[Message],
        role: &str,
        prefill: Option<&str>,
    ) -> R<ModelInput> {
        self.inner
            .build_generation_prompt(tok, messages, role, prefill)
    }

    /// Tokens and weights for supervised training (`None`: the renderer's default).
    pub fn build_supervised_example(
        &self,
        tok: &Tokenizer,
        messages: &[Message],
        train_on: Option<TrainOnWhat>,
    ) -> R<Supervised> {
        let t = train_on.unwrap_or_else(|| self.inner.default_train_on(false));
        self.inner.build_supervised_example(tok, messages, t)
    }

    /// One supervised example per trained turn where needed (`None`: the default).
    pub fn build_supervised_examples(
        &self,
        tok: &Tokenizer,
        messages: &[Message],
        train_on: Option<TrainOnWhat>,
    ) -> R<Vec<Supervised>> {
        let t = train_on.unwrap_or_else(|| self.inner.default_train_on(true));
        self.inner.build_supervised_examples(tok, messages, t)
    }

    /// A sampled response parsed back into a message.
    pub fn parse_response(&self, tok: &Tokenizer, tokens: &[u32]) -> R<(Message, Termination)> {
        self.inner.parse_response(tok, tokens)
    }

    /// Whether generation prompts extend each other.
    pub fn has_extension_property(&self) -> bool {
        self.inner.has_extension_property()
    }

    /// Messages that declare `tools` to the model, to put before a conversation.
    pub fn conversation_prefix_with_tools(
        &self,
        tok: &Tokenizer,
        tools: &[Json],
        system_prompt: &str,
    ) -> R<Vec<Message>> {
        self.inner
            .conversation_prefix_with_tools(tok, tools, system_prompt)
    }
}

/// How `datum_from_model_input_weights` scales the weights.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reduction {
    /// As they are (token-sum loss).
    None,
    /// Divided by their sum (token-mean loss), when it is positive.
    Mean,
}

impl Reduction {
    /// `"none"` or `"mean"`; `field` names the option in errors.
    pub fn parse(s: &str, field: &str) -> Result<Reduction, InputError> {
        match s {
            "none" => Ok(Reduction::None),
            "mean" => Ok(Reduction::Mean),
            _ => Err(InputError::range_error(
                field,
                format!("unknown reduction {s:?}; expected \"none\" or \"mean\""),
            )),
        }
    }
}

/// The cookbook's `datum_from_model_input_weights`: a `cross_entropy` datum from an input
/// and its per-position weights. Right-truncated to `max_length` (text chunks partly,
/// image chunks whole), trailing images dropped, then shifted by one: the input loses its
/// last position and `target_tokens[i]` is the token at position *i + 1* (0 under images).
pub fn datum_from_model_input_weights(
    model_input: &ModelInput,
    weights: &[f32],
    max_length: Option<usize>,
    reduction: Reduction,
) -> Result<Datum, TokenizerError> {
    let mut chunks = model_input.chunks.clone();
    let len = |c: &ModelInputChunk| c.length().map_err(TokenizerError::Input);
    let mut total = 0;
    for c in &chunks {
        total += len(c)?;
    }
    if weights.len() != total {
        return Err(InputError::range_error(
            "weights",
            format!(
                "has {} entries for an input of length {total}",
                weights.len()
            ),
        )
        .into());
    }
    if let Some(max) = max_length {
        while total > max {
            let Some(last) = chunks.last_mut() else { break };
            let n = len(last)?;
            match last {
                ModelInputChunk::EncodedText { tokens } if total - max < n => {
                    tokens.truncate(n - (total - max));
                    total = max;
                }
                _ => {
                    chunks.pop();
                    total -= n;
                }
            }
        }
    }
    chunks.retain(|c| !matches!(c, ModelInputChunk::EncodedText { tokens } if tokens.is_empty()));
    while matches!(
        chunks.last(),
        Some(ModelInputChunk::Image { .. } | ModelInputChunk::ImageAssetPointer { .. })
    ) {
        chunks.pop();
    }
    let Some(ModelInputChunk::EncodedText { tokens: last }) = chunks.last() else {
        return Err(renderer_error_input(
            "the last chunk must be a text chunk (images carry no loss, so they are dropped first)",
        ));
    };
    let last = last.clone();
    let mut total = 0;
    for c in &chunks {
        total += len(c)?;
    }
    if total < 2 {
        return Err(renderer_error_input(
            "need at least 2 tokens for input/target split",
        ));
    }
    let mut targets: Vec<i64> = Vec::with_capacity(total);
    for c in &chunks {
        match c {
            ModelInputChunk::EncodedText { tokens } => {
                targets.extend(tokens.iter().map(|&t| i64::from(t)))
            }
            other => targets.extend(std::iter::repeat_n(0, len(other)?)),
        }
    }
    targets.remove(0);
    chunks.pop();
    if last.len() > 1 {
        chunks.push(ModelInputChunk::EncodedText {
            tokens: last[..last.len() - 1].to_vec(),
        });
    }
    let mut w = weights[1..=targets.len()].to_vec();
    if reduction == Reduction::Mean {
        let sum: f64 = w.iter().map(|&x| f64::from(x)).sum();
        if sum > 0.0 {
            for x in &mut w {
                *x = (f64::from(*x) / sum) as f32;
            }
        }
    }
    let mut inputs = LossFnInputs::new();
    inputs.insert("weights", TensorData::from_f32(w));
    inputs.insert("target_tokens", TensorData::from_i64(targets));
    Ok(Datum::new(ModelInput { chunks }, inputs))
}

fn renderer_error_input(msg: &str) -> TokenizerError {
    InputError::range_error("model_input", msg).into()
}

/// The cookbook's `conversation_to_datum`: a supervised example of `messages` as a datum.
pub fn conversation_to_datum(
    renderer: &Renderer,
    tok: &Tokenizer,
    messages: &[Message],
    max_length: Option<usize>,
    train_on: TrainOnWhat,
    reduction: Reduction,
) -> Result<Datum, TokenizerError> {
    let ex = renderer.build_supervised_example(tok, messages, Some(train_on))?;
    datum_from_model_input_weights(&ex.model_input, &ex.weights, max_length, reduction)
}
