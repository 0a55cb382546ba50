//! `Renderer` for JavaScript: a thin wrapper over `crate::tokenization::renderers`, with the
//! cookbook's lineup functions (`getRecommendedRendererNames`, `getModelAttributes`) and
//! its data helpers (`conversationToDatum`, `datumFromModelInputWeights`).

use std::rc::Rc;

use js_sys::{Array, Float32Array, Object, Uint8Array};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use super::convert::{datum_to_js, model_input_to_js};
use super::tokenizer::JsTokenizer;
use super::tokenizer_params::*;
use super::tokenizer_support::{ids_of, input_err, set, show, tok_err, type_err};
use crate::tokenization::renderers::{self as core, models, Message, Reduction, Supervised};
use crate::tokenization::{StopSequences, Tokenizer, TrainOnWhat};
use crate::types::InputError;

#[wasm_bindgen(typescript_custom_section)]
const TS_TYPES: &'static str = r#"
/** Every renderer name of tinker-cookbook 0.6.1's `get_renderer`. */
export type RendererName =
  | 'role_colon' | 'llama3'
  | 'qwen3' | 'qwen3_vl' | 'qwen3_vl_instruct' | 'qwen3_disable_thinking' | 'qwen3_instruct'
  | 'qwen3_5' | 'qwen3_5_disable_thinking' | 'qwen3_5_preserve_thinking'
  | 'qwen3_8_xhigh_reasoning' | 'qwen3_8_medium_reasoning' | 'qwen3_8_low_reasoning' | 'qwen3_8_disable_thinking'
  | 'deepseekv3' | 'deepseekv3_disable_thinking' | 'deepseekv3_thinking'
  | 'deepseekv4_1' | 'deepseekv4_1_low_reasoning' | 'deepseekv4_1_max_reasoning' | 'deepseekv4_1_disable_thinking' | 'deepseekv4_1_preserve_thinking'
  | 'glm5_3_max_reasoning' | 'glm5_3_low_reasoning' | 'glm5_3_high_reasoning'
  | 'kimi_k2' | 'kimi_k25' | 'kimi_k25_disable_thinking' | 'kimi_k26' | 'kimi_k26_disable_thinking' | 'kimi_k26_preserve_thinking'
  | 'kimi_k31_pro_max_reasoning' | 'kimi_k31_pro_high_reasoning' | 'kimi_k31_pro_low_reasoning' | 'kimi_k31_pro_disable_thinking' | 'kimi_k31_pro_no_reasoning_effort'
  | 'nemotron3' | 'nemotron3_low_thinking' | 'nemotron3_disable_thinking' | 'nemotron3_preserve_thinking'
  | 'nemotron3_ultra' | 'nemotron3_ultra_disable_thinking' | 'nemotron3_ultra_medium_thinking' | 'nemotron3_ultra_preserve_thinking'
  | 'gpt_oss_no_sysprompt' | 'gpt_oss_low_reasoning' | 'gpt_oss_medium_reasoning' | 'gpt_oss_high_reasoning'
  | 'tml_v0';

/** Which tokens of a conversation get training weight (the cookbook's `TrainOnWhat`). */
export type TrainOnWhat =
  | 'last_assistant_message'
  | 'last_assistant_turn'
  | 'all_assistant_messages'
  | 'all_messages'
  | 'all_tokens'
  | 'all_user_and_system_messages'
  | 'customized';

/** A model input in the wire shape: text chunks (`Uint32Array` tokens) and image chunks. */
export interface RenderedModelInput {
  /** The chunks, in order. */
  chunks: Array<
    | {
        /** Token ids. */
        type: 'encoded_text';
        /** The token ids. */
        tokens: Uint32Array;
      }
    | {
        /** An inline image. */
        type: 'image';
        /** The encoded image bytes, in base64. */
        data: string;
        /** The image's encoding. */
        format: 'png' | 'jpeg';
        /** Context positions the image occupies. */
        expected_tokens: number;
      }
  >;
}

/** A model input with one weight per position (the cookbook's `(ModelInput, weights)`). */
export interface SupervisedExample {
  /** The rendered conversation. */
  model_input: RenderedModelInput;
  /** One weight per position of `model_input`: 1 where trained, else 0. */
  weights: Float32Array;
}

/** A sampled response parsed back into a message. */
export interface ParsedResponse {
  /** The assistant message, in the shape renderers take as input. */
  message: ChatMessage;
  /** `'stop_sequence'`: the renderer's stop signal ended it; `'eos'`: the model's EOS
   * token did (accepted by some renderers); `'malformed'`: neither (e.g. cut off). */
  termination: 'stop_sequence' | 'eos' | 'malformed';
}

/** A JSON-schema tool declaration (`{ name, description, parameters }`). */
export interface ToolSpec {
  /** The tool's name, as the model calls it. */
  name: string;
  /** What the tool does, for the model. */
  description: string;
  /** JSON schema of the tool's arguments. */
  parameters: Record<string, unknown>;
  [key: string]: unknown;
}

/** What tinker-cookbook knows of a model (its `ModelAttributes`). */
export interface ModelAttributes {
  /** The organisation, e.g. "Qwen". */
  organization: string;
  /** The version, e.g. "3". */
  version_str: string;
  /** The size, e.g. "30B-A3B". */
  size_str: string;
  /** Chat/instruct-tuned (else a base model). */
  is_chat: boolean;
  /** Renderer names, most recommended first. */
  recommended_renderers: RendererName[];
  /** Takes images. */
  is_vl: boolean;
  /** Takes audio. */
  is_audio_in: boolean;
}

"#;

/// Builds sampling prompts and training data from conversations exactly as
/// tinker-cookbook 0.6.1's renderers do, for every model of Tinker's lineup.
///
/// ```js
/// const r = Renderer.forModel('Qwen/Qwen3-8B', tok);        // 'qwen3'
/// const prompt = r.buildGenerationPrompt([{ role: 'user', content: 'Hi' }]);
/// const { model_input, weights } = r.buildSupervisedExample([
///   { role: 'user', content: 'Hi' }, { role: 'assistant', content: 'Hello!' }]);
/// const { message, termination } = r.parseResponse(sampledTokens);
/// ```
#[wasm_bindgen(js_name = Renderer)]
pub struct JsRenderer {
    tok: Rc<Tokenizer>,
    inner: core::Renderer,
}

fn options(v: &JsValue) -> Result<core::RendererOptions, JsValue> {
    let current_date = match RendererOptions::read(v)?.current_date {
        Some(d) => Some(d),
        None => {
            // Python's datetime.now(): the local date.
            let now = js_sys::Date::new_0();
            Some(format!(
                "{:04}-{:02}-{:02}",
                now.get_full_year(),
                now.get_month() + 1,
                now.get_date()
            ))
        }
    };
    Ok(core::RendererOptions { current_date })
}

#[wasm_bindgen(js_class = Renderer)]
impl JsRenderer {
    /// The renderer `name` (a cookbook renderer name) over `tokenizer`.
    #[wasm_bindgen(constructor)]
    pub fn new(
        #[wasm_bindgen(unchecked_param_type = "RendererName")] name: JsValue,
        tokenizer: &JsTokenizer,
        #[wasm_bindgen(unchecked_optional_param_type = "RendererOptions")] options_: JsValue,
    ) -> Result<JsRenderer, JsValue> {
        let name = name.as_string().ok_or_else(|| {
            type_err(
                "name",
                format!("must be a renderer name, got {}", show(&name)),
            )
        })?;
        let inner = core::Renderer::new(&name, &options(&options_)?).map_err(tok_err)?;
        Ok(JsRenderer {
            tok: tokenizer.inner.clone(),
            inner,
        })
    }

    /// The renderer tinker-cookbook recommends for a model (`Qwen/Qwen3-8B` → `qwen3`);
    /// an unknown model is a `RangeError` listing the known ones.
    #[wasm_bindgen(js_name = forModel)]
    pub fn for_model(
        #[wasm_bindgen(js_name = modelName)] model_name: &str,
        tokenizer: &JsTokenizer,
        #[wasm_bindgen(unchecked_optional_param_type = "RendererOptions")] options_: JsValue,
    ) -> Result<JsRenderer, JsValue> {
        let inner = core::Renderer::for_model(model_name, &options(&options_)?).map_err(tok_err)?;
        Ok(JsRenderer {
            tok: tokenizer.inner.clone(),
            inner,
        })
    }

    /// The renderer's name.
    #[wasm_bindgen(getter, unchecked_return_type = "RendererName")]
    pub fn name(&self) -> String {
        self.inner.name().to_owned()
    }

    /// What ends a turn: pass it as `sampling_params.stop` (token ids, or strings for
    /// `role_colon`).
    #[wasm_bindgen(getter, js_name = stopSequences, unchecked_return_type = "number[] | string[]")]
    pub fn stop_sequences(&self) -> Result<Array, JsValue> {
        Ok(
            match self.inner.stop_sequences(&self.tok).map_err(tok_err)? {
                StopSequences::Tokens(ids) => ids.into_iter().map(JsValue::from).collect(),
                StopSequences::Strings(s) => s.into_iter().map(JsValue::from).collect(),
            },
        )
    }

    /// Whether each generation prompt of a conversation is a prefix of the next one
    /// (the cookbook's `has_extension_property`).
    #[wasm_bindgen(getter, js_name = hasExtensionProperty)]
    pub fn has_extension_property(&self) -> bool {
        self.inner.has_extension_property()
    }

    /// The model input for sampling the next turn.
    #[wasm_bindgen(js_name = buildGenerationPrompt, unchecked_return_type = "RenderedModelInput")]
    pub fn build_generation_prompt(
        &self,
        #[wasm_bindgen(unchecked_param_type = "ChatMessage[]")] messages: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "GenerationPromptOptions")]
        options_: JsValue,
    ) -> Result<JsValue, JsValue> {
        let msgs = messages_of(&messages)?;
        let o = GenerationPromptOptions::read(&options_)?;
        let role = o.role.unwrap_or_else(|| "assistant".into());
        let prefill = o.prefill;
        let mi = self
            .inner
            .build_generation_prompt(&self.tok, &msgs, &role, prefill.as_deref())
            .map_err(tok_err)?;
        Ok(model_input_to_js(&mi))
    }

    /// Tokens and per-position weights for supervised training (weight 1 on what
    /// `train_on_what` selects).
    #[wasm_bindgen(js_name = buildSupervisedExample, unchecked_return_type = "SupervisedExample")]
    pub fn build_supervised_example(
        &self,
        #[wasm_bindgen(unchecked_param_type = "ChatMessage[]")] messages: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "SupervisedExampleOptions")]
        options_: JsValue,
    ) -> Result<JsValue, JsValue> {
        let msgs = messages_of(&messages)?;
        let train_on = train_on_of(&options_)?;
        let ex = self
            .inner
            .build_supervised_example(&self.tok, &msgs, train_on)
            .map_err(tok_err)?;
        Ok(supervised_to_js(&ex))
    }

    /// One example per trained turn when the renderer lacks the extension property
    /// (else one example), as the cookbook's `build_supervised_examples`.
    #[wasm_bindgen(js_name = buildSupervisedExamples, unchecked_return_type = "SupervisedExample[]")]
    pub fn build_supervised_examples(
        &self,
        #[wasm_bindgen(unchecked_param_type = "ChatMessage[]")] messages: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "SupervisedExampleOptions")]
        options_: JsValue,
    ) -> Result<Array, JsValue> {
        let msgs = messages_of(&messages)?;
        let train_on = train_on_of(&options_)?;
        let exs = self
            .inner
            .build_supervised_examples(&self.tok, &msgs, train_on)
            .map_err(tok_err)?;
        Ok(exs.iter().map(supervised_to_js).collect())
    }

    /// Parses sampled tokens back into an assistant message (reasoning and tool calls
    /// split out where the format has them).
    #[wasm_bindgen(js_name = parseResponse, unchecked_return_type = "ParsedResponse")]
    pub fn parse_response(
        &self,
        #[wasm_bindgen(unchecked_param_type = "Uint32Array | ArrayLike<number>")] tokens: JsValue,
    ) -> Result<JsValue, JsValue> {
        let ids = ids_of(&tokens, "tokens")?;
        let (msg, termination) = self
            .inner
            .parse_response(&self.tok, &ids)
            .map_err(tok_err)?;
        let o = Object::new();
        set(&o, "message", &json_to_js(&msg.to_json())?);
        set(&o, "termination", &termination.as_str().into());
        Ok(o.into())
    }

    /// The message(s) that declare `tools` to the model, to put before a conversation
    /// (the cookbook's `create_conversation_prefix_with_tools`).
    #[wasm_bindgen(js_name = createConversationPrefixWithTools, unchecked_return_type = "ChatMessage[]")]
    pub fn create_conversation_prefix_with_tools(
        &self,
        #[wasm_bindgen(unchecked_param_type = "ToolSpec[]")] tools: JsValue,
        #[wasm_bindgen(js_name = systemPrompt)] system_prompt: Option<String>,
    ) -> Result<Array, JsValue> {
        let tools = match super::tokenizer_support::to_json(&tools, "tools")? {
            serde_json::Value::Array(a) => a,
            other => {
                return Err(type_err(
                    "tools",
                    format!("must be an array of tool specs, got {other}"),
                ))
            }
        };
        let msgs = self
            .inner
            .conversation_prefix_with_tools(
                &self.tok,
                &tools,
                system_prompt.as_deref().unwrap_or(""),
            )
            .map_err(tok_err)?;
        msgs.iter().map(|m| json_to_js(&m.to_json())).collect()
    }
}

fn train_on_of(v: &JsValue) -> Result<Option<TrainOnWhat>, JsValue> {
    SupervisedExampleOptions::read(v)?
        .train_on_what
        .map(|s| TrainOnWhat::parse(&s, "train_on_what").map_err(input_err))
        .transpose()
}

fn supervised_to_js(ex: &Supervised) -> JsValue {
    let o = Object::new();
    set(&o, "model_input", &model_input_to_js(&ex.model_input));
    set(&o, "weights", &Float32Array::from(&ex.weights[..]).into());
    o.into()
}

fn json_to_js(v: &serde_json::Value) -> Result<JsValue, JsValue> {
    js_sys::JSON::parse(&v.to_string())
}

/// Messages from JS: through JSON text, with `Uint8Array` image bytes as arrays.
fn messages_of(v: &JsValue) -> Result<Vec<Message>, JsValue> {
    if !Array::is_array(v) {
        return Err(type_err(
            "messages",
            format!("must be an array of messages, got {}", show(v)),
        ));
    }
    let replacer =
        Closure::<dyn Fn(JsValue, JsValue) -> JsValue>::new(|_k: JsValue, x: JsValue| {
            match x.dyn_ref::<Uint8Array>() {
                Some(b) => Array::from(b).into(),
                None => x,
            }
        });
    let text = js_sys::JSON::stringify_with_replacer(v, replacer.as_ref().unchecked_ref())
        .map_err(|e| {
            type_err(
                "messages",
                format!("cannot be serialised to JSON: {}", show(&e)),
            )
        })?
        .as_string()
        .ok_or_else(|| type_err("messages", "cannot be serialised to JSON"))?;
    let json = super::python::read_json(&text)
        .map_err(|e| type_err("messages", format!("cannot be read as JSON data: {e}")))?;
    Message::list_from_json(&json).map_err(input_err)
}

/// The renderer names tinker-cookbook recommends for a model, most recommended first
/// (`get_recommended_renderer_names`).
#[wasm_bindgen(js_name = getRecommendedRendererNames, unchecked_return_type = "RendererName[]")]
pub fn get_recommended_renderer_names(
    #[wasm_bindgen(js_name = modelName)] model_name: &str,
) -> Result<Array, JsValue> {
    let a = models::model_attributes(model_name)
        .map_err(|m| input_err(InputError::range_error("modelName", m)))?;
    Ok(a.recommended_renderers
        .iter()
        .map(|&n| JsValue::from(n))
        .collect())
}

/// What tinker-cookbook knows of a model (`get_model_attributes`).
#[wasm_bindgen(js_name = getModelAttributes, unchecked_return_type = "ModelAttributes")]
pub fn get_model_attributes(
    #[wasm_bindgen(js_name = modelName)] model_name: &str,
) -> Result<JsValue, JsValue> {
    let a = models::model_attributes(model_name)
        .map_err(|m| input_err(InputError::range_error("modelName", m)))?;
    let o = Object::new();
    set(&o, "organization", &a.organization.into());
    set(&o, "version_str", &a.version.as_ref().into());
    set(&o, "size_str", &a.size.as_ref().into());
    set(&o, "is_chat", &a.is_chat.into());
    let r: Array = a
        .recommended_renderers
        .iter()
        .map(|&n| JsValue::from(n))
        .collect();
    set(&o, "recommended_renderers", &r.into());
    set(&o, "is_vl", &a.is_vl.into());
    set(&o, "is_audio_in", &a.is_audio_in.into());
    Ok(o.into())
}

/// Every model of the lineup (`org/name`), in the cookbook's order.
#[wasm_bindgen(js_name = listModels, unchecked_return_type = "string[]")]
pub fn list_models() -> Array {
    models::MODELS
        .iter()
        .map(|a| JsValue::from(format!("{}/{}", a.organization, a.name)))
        .collect()
}

fn reduction_of(r: Option<String>, default: Reduction) -> Result<Reduction, JsValue> {
    r.map_or(Ok(default), |s| {
        Reduction::parse(&s, "reduction").map_err(input_err)
    })
}

fn max_length_of(v: Option<JsValue>) -> Result<Option<usize>, JsValue> {
    let Some(v) = v else { return Ok(None) };
    match v.as_f64() {
        Some(f) if f.fract() == 0.0 && (1.0..=u32::MAX as f64).contains(&f) => Ok(Some(f as usize)),
        _ => Err(input_err(InputError::range_error(
            "max_length",
            format!("must be a positive integer, got {}", show(&v)),
        ))),
    }
}

/// A `cross_entropy` datum from a supervised example (the cookbook's
/// `datum_from_model_input_weights`): truncated to `max_length`, shifted by one.
#[wasm_bindgen(js_name = datumFromModelInputWeights, unchecked_return_type = "Datum")]
pub fn datum_from_model_input_weights(
    #[wasm_bindgen(unchecked_param_type = "RenderedModelInput")] model_input: JsValue,
    #[wasm_bindgen(unchecked_param_type = "Float32Array | ArrayLike<number>")] weights: JsValue,
    #[wasm_bindgen(unchecked_optional_param_type = "DatumOptions")] options_: JsValue,
) -> Result<JsValue, JsValue> {
    let mi = super::convert::model_input(&model_input, "model_input").map_err(input_err)?;
    let w: Vec<f32> = match weights.dyn_ref::<Float32Array>() {
        Some(a) => a.to_vec(),
        None if Array::is_array(&weights) => Array::from(&weights)
            .iter()
            .enumerate()
            .map(|(i, x)| {
                x.as_f64().map(|f| f as f32).ok_or_else(|| {
                    type_err(
                        &format!("weights[{i}]"),
                        format!("must be a number, got {}", show(&x)),
                    )
                })
            })
            .collect::<Result<_, _>>()?,
        None => {
            return Err(type_err(
                "weights",
                format!(
                    "must be a Float32Array or an array of numbers, got {}",
                    show(&weights)
                ),
            ))
        }
    };
    let o = DatumOptions::read(&options_)?;
    let d = core::datum_from_model_input_weights(
        &mi,
        &w,
        max_length_of(o.max_length)?,
        reduction_of(o.reduction, Reduction::None)?,
    )
    .map_err(tok_err)?;
    Ok(datum_to_js(&d))
}

/// A supervised example of `messages` as a `cross_entropy` datum (the cookbook's
/// `conversation_to_datum`: default `train_on_what` `'all_assistant_messages'`,
/// `reduction` `'mean'`).
#[wasm_bindgen(js_name = conversationToDatum, unchecked_return_type = "Datum")]
pub fn conversation_to_datum(
    #[wasm_bindgen(unchecked_param_type = "ChatMessage[]")] messages: JsValue,
    renderer: &JsRenderer,
    #[wasm_bindgen(unchecked_optional_param_type = "ConversationToDatumOptions")] options_: JsValue,
) -> Result<JsValue, JsValue> {
    let msgs = messages_of(&messages)?;
    let o = ConversationToDatumOptions::read(&options_)?;
    let train_on = match o.train_on_what {
        Some(s) => TrainOnWhat::parse(&s, "train_on_what").map_err(input_err)?,
        None => TrainOnWhat::AllAssistantMessages,
    };
    let d = core::conversation_to_datum(
        &renderer.inner,
        &renderer.tok,
        &msgs,
        max_length_of(o.max_length)?,
        train_on,
        reduction_of(o.reduction, Reduction::Mean)?,
    )
    .map_err(tok_err)?;
    Ok(datum_to_js(&d))
}
