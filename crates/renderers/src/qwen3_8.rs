//! Cookbook `renderers/qwen3_8.py`: Qwen3.8, Qwen3.5's format (`qwen3_5.rs`) with three
//! template changes: a reasoning-effort sentence opens the system message (`xhigh` and
//! `low`; `medium` adds none), thinking is kept in history by default (every assistant
//! turn that did not reason gets the empty block), and an empty system message renders
//! nothing.

use std::borrow::Cow;

use serde_json::Value as Json;

use super::base::{json_dumps, ChatRenderer, RenderContext};
use super::message::{Content, Message, Part};
use super::qwen3_5::{
    format_tool_calls, Qwen35, Qwen35Methods, EMPTY_THINK_BLOCK, QWEN3_5_METHODS,
};
use super::RendererOptions;

pub(super) fn by_name(name: &str, _opts: &RendererOptions) -> Option<Box<dyn ChatRenderer>> {
    // `Qwen3_8Renderer` and `Qwen3_8DisableThinkingRenderer` (`get_renderer` keeps
    // thinking: the template's `preserve_thinking`): Qwen3.5's renderer with Qwen3.8's
    // methods. `_reasoning_instructions` is empty when thinking is off.
    let r = |effort: Effort, disable_thinking| {
        Box::new(Qwen35 {
            strip_thinking_from_history: false,
            disable_thinking,
            reasoning_instructions: if disable_thinking {
                ""
            } else {
                effort.instructions()
            },
            ultra: false,
            methods: &QWEN3_8_METHODS,
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

/// The `Qwen3_5Renderer` methods `Qwen3_8Renderer` overrides.
static QWEN3_8_METHODS: Qwen35Methods = Qwen35Methods {
    format_tool_calls: |_, message| format_tool_calls(message, format_argument_json),
    assistant_header_suffix,
    strips_thinking_for,
    normalize_messages: |r, messages| Cow::Owned(normalize_messages(r, messages)),
    ..QWEN3_5_METHODS
};

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

/// Qwen3.8's `_format_tool_call_argument`: strings as they are, everything else as JSON
/// (`true`, `null`), where Qwen3.5 wrote Python's `True`/`None`.
fn format_argument_json(value: &Json) -> String {
    match value {
        Json::String(s) => s.clone(),
        other => json_dumps(other),
    }
}

/// `_normalize_messages`: the reasoning instruction opens the system message (one is
/// added when there is none), and an empty system message is dropped. Idempotent, as
/// supervised examples rebuild the prompt from normalized messages.
fn normalize_messages(r: &Qwen35, messages: &[Message]) -> Vec<Message> {
    let instructions = r.reasoning_instructions;
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
            None => return prepend_to_parts(instructions, first, parts, rest, messages),
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
    instructions: &str,
    first: &Message,
    parts: &[Part],
    rest: &[Message],
    messages: &[Message],
) -> Vec<Message> {
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

/// `_assistant_header_suffix`: every assistant turn without structured reasoning gets the
/// empty block (positional only when history is stripped). An inline `<think>` in string
/// content does not count: the template reads `reasoning_content` only.
fn assistant_header_suffix(r: &Qwen35, message: &Message, ctx: &RenderContext<'_>) -> String {
    if r.strip_thinking_from_history && ctx.idx as isize <= ctx.last_user_index {
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

/// `_strips_thinking_for`: thinking is stripped only at or before the last user message,
/// as the template does.
fn strips_thinking_for(r: &Qwen35, message: &Message, ctx: &RenderContext<'_>) -> bool {
    r.strip_thinking_from_history
        && message.role == "assistant"
        && ctx.idx as isize <= ctx.last_user_index
}
