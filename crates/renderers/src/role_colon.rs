//! `role_colon` (cookbook `renderers/role_colon.py`): `User: …\n\nAssistant: …\n\n`, the
//! format of base models. Its stop sequence `\n\nUser:` spans two messages, so `User:` is
//! the assistant message's stop overlap.

use super::base::{
    encode, renderer_error, text_chunk, ChatRenderer, RenderContext, RenderedMessage,
    StopSequences, Termination, R,
};
use super::message::Message;
use super::RendererOptions;
use tinker_tokenizer::Tokenizer;

const CONTENT_PREFIX: &str = " ";
const CONTENT_SUFFIX: &str = "\n\n";
const STOP: &str = "\n\nUser:";

pub(super) fn by_name(name: &str, _opts: &RendererOptions) -> Option<Box<dyn ChatRenderer>> {
    (name == "role_colon").then(|| Box::new(RoleColon) as Box<dyn ChatRenderer>)
}

/// `RoleColonRenderer`.
pub struct RoleColon;

/// Python's `str.capitalize()`: the first character upper-cased, the rest lower-cased.
fn capitalize(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        None => String::new(),
        Some(f) => f
            .to_uppercase()
            .chain(c.flat_map(char::to_lowercase))
            .collect(),
    }
}

impl ChatRenderer for RoleColon {
    fn has_extension_property(&self) -> bool {
        true
    }

    fn bos_tokens(&self, tok: &Tokenizer) -> R<Vec<u32>> {
        match &tok.special_tokens().bos {
            Some(bos) => encode(tok, bos),
            None => Ok(Vec::new()),
        }
    }

    fn stop_sequences(&self, _tok: &Tokenizer) -> R<StopSequences> {
        Ok(StopSequences::Strings(vec![STOP.to_owned()]))
    }

    fn render_message(
        &self,
        tok: &Tokenizer,
        message: &Message,
        _ctx: &RenderContext<'_>,
    ) -> R<RenderedMessage> {
        let header = format!("{}:", capitalize(&message.role));
        let text = message.content.ensure_text().map_err(renderer_error)?;
        let output = format!("{CONTENT_PREFIX}{text}{CONTENT_SUFFIX}");
        // Completes "\n\nUser:" after an assistant message; never used after others.
        let overlap = if message.role == "assistant" {
            "User:"
        } else {
            "<UNUSED>"
        };
        Ok(RenderedMessage {
            header: Some(encode(tok, &header)?),
            output: vec![text_chunk(encode(tok, &output)?)],
            stop_overlap: Some(encode(tok, overlap)?),
        })
    }

    fn parse_response(&self, tok: &Tokenizer, response: &[u32]) -> R<(Message, Termination)> {
        let eos = tok.eos_token_id();
        let (response, with_eos) = match (eos, response.last()) {
            (Some(e), Some(&last)) if last == e => (&response[..response.len() - 1], true),
            _ => (response, false),
        };
        let text = tok.decode(response, false);
        let pieces: Vec<&str> = text.split(STOP).collect();
        let first = pieces[0];
        let first = first.strip_prefix(CONTENT_PREFIX).unwrap_or(first);
        let content = first.strip_suffix(CONTENT_SUFFIX).unwrap_or(first);
        let termination = match (pieces.len(), with_eos) {
            (1, true) => Termination::Eos,
            (2, false) => Termination::StopSequence,
            _ => Termination::Malformed,
        };
        Ok((Message::new("assistant", content), termination))
    }
}
