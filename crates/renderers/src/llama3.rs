//! `llama3` (cookbook `renderers/llama3.py`):
//! `<|start_header_id|>role<|end_header_id|>\n\n…<|eot_id|>` after `<|begin_of_text|>`.
//! No tool calling, as in the cookbook (Llama 3's bare-JSON calls cannot be told apart
//! from JSON answers).

use super::base::{
    encode, parse_response_for_stop_token, renderer_error, single_token, text_chunk, ChatRenderer,
    RenderContext, RenderedMessage, StopSequences, Termination, R,
};
use super::message::Message;
use super::RendererOptions;
use tinker_tokenizer::Tokenizer;

pub(super) fn by_name(name: &str, _opts: &RendererOptions) -> Option<Box<dyn ChatRenderer>> {
    (name == "llama3").then(|| Box::new(Llama3) as Box<dyn ChatRenderer>)
}

/// `Llama3Renderer`.
pub struct Llama3;

impl ChatRenderer for Llama3 {
    fn has_extension_property(&self) -> bool {
        true
    }

    fn bos_tokens(&self, tok: &Tokenizer) -> R<Vec<u32>> {
        encode(tok, "<|begin_of_text|>")
    }

    fn stop_sequences(&self, tok: &Tokenizer) -> R<StopSequences> {
        Ok(StopSequences::Tokens(vec![single_token(
            tok,
            "<|eot_id|>",
        )?]))
    }

    fn render_message(
        &self,
        tok: &Tokenizer,
        message: &Message,
        _ctx: &RenderContext<'_>,
    ) -> R<RenderedMessage> {
        let header = format!("<|start_header_id|>{}<|end_header_id|>\n\n", message.role);
        let text = message.content.ensure_text().map_err(renderer_error)?;
        Ok(RenderedMessage {
            header: Some(encode(tok, &header)?),
            output: vec![text_chunk(encode(tok, &format!("{text}<|eot_id|>"))?)],
            stop_overlap: None,
        })
    }

    fn parse_response(&self, tok: &Tokenizer, response: &[u32]) -> R<(Message, Termination)> {
        parse_response_for_stop_token(tok, response, single_token(tok, "<|eot_id|>")?)
    }
}
