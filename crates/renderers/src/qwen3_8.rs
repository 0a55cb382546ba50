//! Cookbook `renderers/qwen3_8.py`: Qwen3.8, Qwen3.5's format (`qwen3_5.rs`) with three
//! template changes: a reasoning-effort sentence opens the system message (`xhigh` and
//! `low`; `medium` adds none), thinking is kept in history by default (every assistant
//! turn that did not reason gets the empty block), and an empty system message renders
//! nothing.

use serde_json::Value as Json;

use super::base::{
    default_build_generation_prompt, default_build_supervised_example, encode, json_dumps,
    ChatRenderer, RenderContext, RenderedMessage, StopSequences, Supervised, Termination,
    TrainOnWhat, R,
};
use super::message::{Content, Message, Part};
use super::qwen3::{im_end, render_vl_message, QwenVl};
use super::qwen3_5::{
    format_tool_calls, generation_suffix_in_header, generation_suffix_str,
    normalize_response_tokens, parse_response, tools_prefix, with_trimmed_content,
    EMPTY_THINK_BLOCK,
};
use super::RendererOptions;
use tinker_core::types::ModelInput;
use tinker_tokenizer::Tokenizer;

pub(super) fn by_name(name: &str, _opts: &RendererOptions) -> Option<Box<dyn ChatRenderer>> {
    let r = |effort, disable_thinking| {
        Box::new(Qwen38 {
            effort,
            disable_thinking,
            strip_thinking_from_history: false,
        }) as Box<dyn ChatRenderer>
    };
    match name {
        "qwen3_8_xhigh_reasoning" => Some(r(Effort::Xhigh, false)),
        "qwen3_8_medium_reasoning" => Some(r(Effort::Medium, false)),
        "qwen3_8_low_reasoning" => Some(r(Effort::Low, false)),
        "qwen3_8_disable_thinking" => Some(r(Effort::Xhigh, true)),
        _ => None,
    }
}

/// The template's `reasoning_effort`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Effort {
    Xhigh,
    Medium,
    Low,
}

impl Effort {
    /// `REASONING_EFFORT_INSTRUCTIONS`: the sentence the template puts in the system
    /// message.
    fn instructions(self) -> &'static str {
        match self {
            Effort::Xhigh => {
                "Reasoning effort is set to xhigh. Please think carefully through the task, \
                 validate key assumptions, consider plausible alternatives, and prioritize \
                 correctness, consistency, and clarity in the final answer."
            }
            Effort::Medium => "",
            Effort::Low => {
                "Reasoning effort is set to low. Keep your thinking brief and focused, moving \
                 directly to the conclusion without unnecessary elaboration."
            }
        }
    }
}

/// `Qwen3_8Renderer` and `Qwen3_8DisableThinkingRenderer`.
pub struct Qwen38 {
    effort: Effort,
    disable_thinking: bool,
    /// The template's `preserve_thinking=false` (`get_renderer` keeps thinking).
    strip_thinking_from_history: bool,
}

/// Qwen3.8's `_format_tool_call_argument`: strings as they are, everything else as JSON
/// (`true`, `null`), where Qwen3.5 wrote Python's `True`/`None`.
fn format_argument_json(value: &Json) -> String {
    match value {
        Json::String(s) => s.clone(),
        other => json_dumps(other),
    }
}

impl Qwen38 {
    /// `_reasoning_instructions`: none when thinking is off.
    fn instructions(&self) -> &'static str {
        if self.disable_thinking {
            ""
        } else {
            self.effort.instructions()
        }
    }

    /// `_normalize_messages`: the reasoning instruction opens the system message (one is
    /// added when there is none), and an empty system message is dropped. Idempotent, as
    /// supervised examples rebuild the prompt from normalized messages.
    fn normalize_messages(&self, messages: &[Message]) -> Vec<Message> {
        let instructions = self.instructions();
        let Some(first) = messages.first().filter(|m| m.role == "system") else {
            if instructions.is_empty() {
                return messages.to_vec();
            }
            // Customized training needs `trainable` on every message, other modes on none.
            let mut synthetic = Message::new("system", instructions);
            if messages.iter().any(|m| m.trainable.is_some()) {
                synthetic.trainable = Some(false);
            }
            return std::iter::once(synthetic)
                .chain(messages.iter().cloned())
                .collect();
        };
        let rest = &messages[1..];
        let text = match &first.content {
            Content::Text(s) => s.clone(),
            Content::Parts(parts) => match text_only(parts) {
                Some(joined) => joined,
                None => return self.prepend_to_parts(first, parts, rest, messages),
            },
        };
        let content = super::base::py_strip(&text);
        if content.is_empty() && instructions.is_empty() {
            return rest.to_vec();
        }
        let content = if instructions.is_empty()
            || content == instructions
            || content.starts_with(&format!("{instructions}\n\n"))
        {
            content.to_owned()
        } else if content.is_empty() {
            instructions.to_owned()
        } else {
            format!("{instructions}\n\n{content}")
        };
        with_first(
            Message {
                content: Content::Text(content),
                ..first.clone()
            },
            rest,
        )
    }

    /// A system message with non-text parts (which the template rejects): the instruction
    /// is put before them as a text part, unless it is already there.
    fn prepend_to_parts(
        &self,
        first: &Message,
        parts: &[Part],
        rest: &[Message],
        messages: &[Message],
    ) -> Vec<Message> {
        let instructions = self.instructions();
        let has_it = matches!(parts.first(), Some(Part::Text(t)) if t.starts_with(instructions));
        if instructions.is_empty() || has_it {
            return messages.to_vec();
        }
        let mut new_parts = vec![Part::Text(format!("{instructions}\n\n"))];
        new_parts.extend(parts.iter().cloned());
        with_first(
            Message {
                content: Content::Parts(new_parts),
                ..first.clone()
            },
            rest,
        )
    }
}

/// The text parts joined, when every part is text (the template renders such a list as
/// the joined string).
fn text_only(parts: &[Part]) -> Option<String> {
    parts
        .iter()
        .map(|p| match p {
            Part::Text(t) => Some(t.as_str()),
            _ => None,
        })
        .collect()
}

fn with_first(first: Message, rest: &[Message]) -> Vec<Message> {
    std::iter::once(first).chain(rest.iter().cloned()).collect()
}

impl QwenVl for Qwen38 {
    fn strip_thinking_from_history(&self) -> bool {
        self.strip_thinking_from_history
    }

    fn groups_consecutive_tool_responses(&self) -> bool {
        true
    }

    fn format_thinking_text(&self, thinking: &str) -> String {
        format!("<think>\n{thinking}\n</think>\n\n")
    }

    /// Every assistant turn without structured reasoning gets the empty block (positional
    /// only when history is stripped). An inline `<think>` in string content does not
    /// count: the template reads `reasoning_content` only.
    fn assistant_header_suffix(&self, message: &Message, ctx: &RenderContext<'_>) -> String {
        if self.strip_thinking_from_history && ctx.idx as isize <= ctx.last_user_index {
            return String::new();
        }
        let has_reasoning = matches!(&message.content, Content::Parts(p)
            if p.iter().any(|p| matches!(p, Part::Thinking(_))));
        if has_reasoning {
            String::new()
        } else {
            EMPTY_THINK_BLOCK.to_owned()
        }
    }

    /// Thinking is stripped only at or before the last user message, as the template does.
    fn strips_thinking_for(&self, message: &Message, ctx: &RenderContext<'_>) -> bool {
        self.strip_thinking_from_history
            && message.role == "assistant"
            && ctx.idx as isize <= ctx.last_user_index
    }

    fn format_tool_calls(&self, message: &Message) -> R<String> {
        format_tool_calls(message, format_argument_json)
    }

    fn generation_suffix_in_header(&self, message: &Message, ctx: &RenderContext<'_>) -> String {
        generation_suffix_in_header(message, ctx, self.disable_thinking)
    }
}

impl ChatRenderer for Qwen38 {
    fn has_extension_property(&self) -> bool {
        // As Qwen3.5: the sampled `<think>\n` + `\n` is not the history's merged `\n\n`.
        false
    }

    fn disables_thinking(&self) -> bool {
        self.disable_thinking
    }

    fn stop_sequences(&self, tok: &Tokenizer) -> R<StopSequences> {
        Ok(StopSequences::Tokens(vec![im_end(tok)?]))
    }

    fn render_message(
        &self,
        tok: &Tokenizer,
        message: &Message,
        ctx: &RenderContext<'_>,
    ) -> R<RenderedMessage> {
        render_vl_message(self, tok, &with_trimmed_content(message), ctx)
    }

    fn generation_suffix(
        &self,
        tok: &Tokenizer,
        role: &str,
        ctx: &RenderContext<'_>,
    ) -> R<Vec<u32>> {
        encode(
            tok,
            &generation_suffix_str(role, ctx, self.disable_thinking),
        )
    }

    fn normalize_response_tokens(&self, tok: &Tokenizer, response: &[u32]) -> R<Vec<u32>> {
        normalize_response_tokens(tok, response)
    }

    fn build_generation_prompt(
        &self,
        tok: &Tokenizer,
        messages: &[Message],
        role: &str,
        prefill: Option<&str>,
    ) -> R<ModelInput> {
        let messages = self.normalize_messages(messages);
        default_build_generation_prompt(self, tok, &messages, role, prefill)
    }

    fn build_supervised_example(
        &self,
        tok: &Tokenizer,
        messages: &[Message],
        train_on: TrainOnWhat,
    ) -> R<Supervised> {
        let messages = self.normalize_messages(messages);
        default_build_supervised_example(self, tok, &messages, train_on)
    }

    fn parse_response(&self, tok: &Tokenizer, response: &[u32]) -> R<(Message, Termination)> {
        parse_response(tok, response)
    }

    fn conversation_prefix_with_tools(
        &self,
        _tok: &Tokenizer,
        tools: &[Json],
        system_prompt: &str,
    ) -> R<Vec<Message>> {
        Ok(tools_prefix(tools, system_prompt))
    }
}
