//! The wasm module's C ABI, driven by `pkg/general-engine.js`.
//!
//! Rules: byte buffers are allocated with [`tg_alloc`], and every call that receives one
//! (a pointer and length) frees it. An engine is a handle (non-zero) from [`tg_load`],
//! freed with [`tg_drop`]. Calls that produce bytes (ids as little-endian `u32`s, UTF-8
//! text, or an error message) leave them in one result buffer, read with
//! [`tg_result_ptr`]/[`tg_result_len`] before the next call. A status of 1 means success,
//! 0 failure (the result is then the error message).

use std::cell::RefCell;

use crate::{General, Regex};

thread_local! {
    static RESULT: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

fn set_result(bytes: Vec<u8>) {
    RESULT.with(|r| *r.borrow_mut() = bytes);
}

/// Takes back a buffer from [`tg_alloc`].
///
/// # Safety
/// `ptr`/`len` must come from one `tg_alloc(len)` call, not yet freed.
unsafe fn take(ptr: *mut u8, len: usize) -> Vec<u8> {
    let mut v = Vec::from_raw_parts(ptr, 0, len.max(1));
    v.set_len(len);
    v
}

/// # Safety
/// `h` must be a live handle from [`tg_load`].
unsafe fn engine<'a>(h: u32) -> &'a General {
    &*(h as usize as *const General)
}

/// Allocates `len` bytes for an input.
#[no_mangle]
pub extern "C" fn tg_alloc(len: usize) -> *mut u8 {
    let mut v = std::mem::ManuallyDrop::new(Vec::<u8>::with_capacity(len.max(1)));
    v.as_mut_ptr()
}

/// Frees an input buffer that was not passed to a call.
///
/// # Safety
/// As [`take`].
#[no_mangle]
pub unsafe extern "C" fn tg_free(ptr: *mut u8, len: usize) {
    drop(take(ptr, len));
}

/// Loads `tokenizer.json` (UTF-8 bytes): a handle, or 0 with the error message as result.
///
/// # Safety
/// As [`take`].
#[no_mangle]
pub unsafe extern "C" fn tg_load(ptr: *mut u8, len: usize) -> u32 {
    let bytes = take(ptr, len);
    let loaded = match std::str::from_utf8(&bytes) {
        Ok(text) => General::load(text),
        Err(e) => Err(format!("tokenizer.json is not UTF-8: {e}")),
    };
    match loaded {
        Ok(g) => Box::into_raw(Box::new(g)) as usize as u32,
        Err(m) => {
            set_result(m.into_bytes());
            0
        }
    }
}

/// Frees an engine.
///
/// # Safety
/// `h` must be a live handle from [`tg_load`]; it is dead afterwards.
#[no_mangle]
pub unsafe extern "C" fn tg_drop(h: u32) {
    drop(Box::from_raw(h as usize as *mut General));
}

/// Encodes UTF-8 text: 1 with the ids as result, or 0 with the error message. `flags`:
/// bit 0 adds the post-processor's special tokens, bit 1 splits special tokens (leaves
/// them unmatched in the text).
///
/// # Safety
/// As [`take`] and [`engine`].
#[no_mangle]
pub unsafe extern "C" fn tg_encode(h: u32, ptr: *mut u8, len: usize, flags: u32) -> u32 {
    let bytes = take(ptr, len);
    let Ok(text) = std::str::from_utf8(&bytes) else {
        set_result(b"text is not UTF-8".to_vec());
        return 0;
    };
    let mut ids = Vec::new();
    match engine(h).encode_into(text, flags & 1 != 0, flags & 2 != 0, &mut ids) {
        Ok(()) => {
            set_result(ids.iter().flat_map(|id| id.to_le_bytes()).collect());
            1
        }
        Err(m) => {
            set_result(m.into_bytes());
            0
        }
    }
}

/// Decodes ids (little-endian `u32`s): the text as result.
///
/// # Safety
/// As [`take`] and [`engine`].
#[no_mangle]
pub unsafe extern "C" fn tg_decode(h: u32, ptr: *mut u8, len: usize, skip_special: u32) {
    let bytes = take(ptr, len);
    let ids: Vec<u32> = bytes
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    set_result(engine(h).decode(&ids, skip_special != 0).into_bytes());
}

/// The id of a token (UTF-8 bytes), or -1.
///
/// # Safety
/// As [`take`] and [`engine`].
#[no_mangle]
pub unsafe extern "C" fn tg_token_to_id(h: u32, ptr: *mut u8, len: usize) -> i64 {
    let bytes = take(ptr, len);
    std::str::from_utf8(&bytes)
        .ok()
        .and_then(|t| engine(h).token_to_id(t))
        .map_or(-1, i64::from)
}

/// The token of an id: 1 with the token as result, or 0 when there is none.
///
/// # Safety
/// As [`engine`].
#[no_mangle]
pub unsafe extern "C" fn tg_id_to_token(h: u32, id: u32) -> u32 {
    match engine(h).id_to_token(id) {
        Some(t) => {
            set_result(t.into_bytes());
            1
        }
        None => 0,
    }
}

/// Vocabulary size including added tokens.
///
/// # Safety
/// As [`engine`].
#[no_mangle]
pub unsafe extern "C" fn tg_vocab_size(h: u32) -> u32 {
    engine(h).vocab_size() as u32
}

/// The added tokens as a JSON array of `[content, id, special]` (the result).
///
/// # Safety
/// As [`engine`].
#[no_mangle]
pub unsafe extern "C" fn tg_added_tokens(h: u32) {
    let v = serde_json::to_vec(&engine(h).added_tokens()).unwrap_or_default();
    set_result(v);
}

/// Compiles a split regex (UTF-8 bytes): a handle, or 0 with the error message as result.
///
/// # Safety
/// As [`take`].
#[no_mangle]
pub unsafe extern "C" fn tg_regex_new(ptr: *mut u8, len: usize) -> u32 {
    let bytes = take(ptr, len);
    let compiled = match std::str::from_utf8(&bytes) {
        Ok(p) => Regex::new(p),
        Err(e) => Err(format!("the pattern is not UTF-8: {e}")),
    };
    match compiled {
        Ok(r) => Box::into_raw(Box::new(r)) as usize as u32,
        Err(m) => {
            set_result(m.into_bytes());
            0
        }
    }
}

/// Frees a regex.
///
/// # Safety
/// `h` must be a live handle from [`tg_regex_new`]; it is dead afterwards.
#[no_mangle]
pub unsafe extern "C" fn tg_regex_drop(h: u32) {
    drop(Box::from_raw(h as usize as *mut Regex));
}

/// The matches of a regex in UTF-8 text: 1 with their byte ranges as result (start and
/// end of each, little-endian `u32`s), or 0 with the error message.
///
/// # Safety
/// As [`take`]; `h` must be a live handle from [`tg_regex_new`].
#[no_mangle]
pub unsafe extern "C" fn tg_regex_find(h: u32, ptr: *mut u8, len: usize) -> u32 {
    let bytes = take(ptr, len);
    let Ok(text) = std::str::from_utf8(&bytes) else {
        set_result(b"text is not UTF-8".to_vec());
        return 0;
    };
    let re = &*(h as usize as *const Regex);
    let mut ranges = Vec::new();
    match re.find_iter(text, &mut ranges) {
        Ok(()) => {
            set_result(
                ranges
                    .iter()
                    .flat_map(|&(s, e)| [s.to_le_bytes(), e.to_le_bytes()])
                    .flatten()
                    .collect(),
            );
            1
        }
        Err(m) => {
            set_result(m.into_bytes());
            0
        }
    }
}

/// The result buffer's address.
#[no_mangle]
pub extern "C" fn tg_result_ptr() -> *const u8 {
    RESULT.with(|r| r.borrow().as_ptr())
}

/// The result buffer's length.
#[no_mangle]
pub extern "C" fn tg_result_len() -> usize {
    RESULT.with(|r| r.borrow().len())
}
