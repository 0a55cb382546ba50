//! Numbers, token ids and bytes from arrays and typed arrays.

use super::*;

// ---------------------------------------------------------------------------------
// Numbers
//
// Errors here have paths relative to the value converted (see the module doc).

/// The element count `n` of an array or typed array, as JS reads its length, refused
/// if longer than [`MAX_ELEMENTS`] before anything is copied (a plain array's holes cost
/// JS nothing, its copy into wasm memory would not).
pub(super) fn checked(n: f64) -> Result<usize, InputError> {
    if n > MAX_ELEMENTS as f64 {
        return Err(InputError::range_error(
            "",
            format!(
                "has {} elements; at most {MAX_ELEMENTS} are accepted",
                fmt_num(n)
            ),
        ));
    }
    Ok(n as usize)
}

/// [`checked`] length of `v` of kind `k` (0 for anything but an array or typed array:
/// the caller says what it must be).
pub(super) fn checked_len(v: &JsValue, k: u32) -> Result<usize, InputError> {
    if k == K_ARRAY || is_typed(k) {
        checked(length(v, k))
    } else {
        Ok(0)
    }
}

/// The `n` elements of the typed array `v` of kind `k`, copied once into wasm memory
/// (empty if `v` no longer has `n` elements).
///
/// # Safety
///
/// `k` must be one of `K_I8..=K_F64` and `T` the element type of that kind (`i8`, `u8`,
/// `i16`, `u16`, `i32`, `u32`, `f32`, `f64`): JS writes `n` elements of the kind's size
/// and Rust then reads them as `T`s. A `T` of another size would read past what was
/// written (or leave part of it), and one not valid for every bit pattern would be UB.
pub(super) unsafe fn copy_typed_vec<T: Copy>(v: Src, k: u32, n: usize) -> Vec<T> {
    debug_assert!((K_I8..=K_F64).contains(&k));
    let mut out = Vec::<T>::with_capacity(n);
    let (v, s) = v.args();
    if copy_typed(&js().memory, k, v, s, out.as_mut_ptr() as u32, n as u32) {
        // SAFETY: `copy_typed` wrote exactly `n` elements of the kind's type at the start
        // of the allocation, which has room for `n`; by the caller's contract that type is
        // `T` (same size, valid for any bits).
        unsafe { out.set_len(n) };
    }
    out
}

/// The `n` elements of the `Int32Array` or `Uint32Array` `v` (kind `k`) as i64s: copied
/// once into the upper half of the result's allocation, then widened in place.
pub(super) fn widen_typed_vec(v: Src, k: u32, n: usize) -> Vec<i64> {
    debug_assert!(k == K_I32 || k == K_U32);
    let mut out = Vec::<i64>::with_capacity(n);
    // SAFETY: the allocation holds `n` i64s = `2n` u32s; the source goes into the second
    // half, u32s `n..2n`.
    let src = unsafe { out.as_mut_ptr().cast::<u32>().add(n) };
    let (v, s) = v.args();
    if !copy_typed(&js().memory, k, v, s, src as u32, n as u32) {
        return out;
    }
    // SAFETY: `copy_typed` wrote the source there.
    unsafe { widen_in_place(out, k, n) }
}

/// `out` (empty, with room for `n` i64s) with u32s `n..2n` of its allocation, elements
/// of an `Int32Array` (`k` = `K_I32`) or `Uint32Array`, widened in place to its `n` i64s.
///
/// # Safety
/// `out` has capacity for `n` i64s and u32s `n..2n` of it are initialised.
pub(super) unsafe fn widen_in_place(mut out: Vec<i64>, k: u32, n: usize) -> Vec<i64> {
    debug_assert!(out.capacity() >= n);
    let base = out.as_mut_ptr();
    // SAFETY: within the allocation (capacity >= n i64s = 2n u32s).
    let src = unsafe { base.cast::<u32>().add(n) };
    // SAFETY (both loops): u32s `n..2n` are initialised (the contract). Writing i64 `i`
    // (bytes 8i..8i+8) never reaches a u32 not yet read (u32 `n + i + 1` starts at byte
    // 4n + 4i + 4 >= 8i + 8 since i < n), and u32 `n + i` is read before i64 `i` is
    // written. One loop per kind: no branch per element.
    if k == K_I32 {
        for i in 0..n {
            unsafe { base.add(i).write(i64::from(src.add(i).read() as i32)) };
        }
    } else {
        for i in 0..n {
            unsafe { base.add(i).write(i64::from(src.add(i).read())) };
        }
    }
    // SAFETY: all `n` i64s were written above.
    unsafe { out.set_len(n) };
    out
}

/// Numbers of an array-like of kind `k` and length `n` (from [`checked_len`]): a typed
/// array or a plain array of numbers.
pub(super) fn numbers_of(v: &JsValue, k: u32, n: usize) -> Result<Vec<f64>, InputError> {
    match k {
        K_ARRAY => {
            let mut out = Vec::<f64>::with_capacity(n);
            let bad = copy_numbers(&js().memory, v, out.as_mut_ptr() as u32, n as u32);
            if bad >= 0 {
                let e = Reflect::get_u32(v, bad as u32).unwrap_or(JsValue::UNDEFINED);
                return Err(InputError::type_error(
                    format!("[{bad}]"),
                    format!("must be a number, got {}", describe(&e)),
                ));
            }
            // SAFETY: `copy_numbers` returned -1: it wrote all `n` f64s.
            unsafe { out.set_len(n) };
            Ok(out)
        }
        // SAFETY: a Float64Array's elements are f64s.
        K_F64 => Ok(unsafe { copy_typed_vec::<f64>(Src::Val(v), k, n) }),
        K_BI64 | K_BU64 => (0..n as u32)
            .map(|i| {
                let x = bigint_at(v, i);
                if x.abs() > 9_007_199_254_740_991.0 {
                    Err(InputError::range_error(
                        format!("[{i}]"),
                        format!("{} is beyond the safe integer range", fmt_num(x)),
                    ))
                } else {
                    Ok(x)
                }
            })
            .collect(),
        k if is_typed(k) => Ok(js_sys::Float64Array::new(v).to_vec()),
        _ => Err(InputError::type_error(
            "",
            format!(
                "must be an array or typed array of numbers, got {}",
                describe(v)
            ),
        )),
    }
}

/// Token ids: `Uint32Array`, `Int32Array` or an array of integers in [0, 2³¹).
pub fn tokens(v: &JsValue, path: &str) -> Result<Vec<u32>, InputError> {
    tokens_rel(v).map_err(|e| pre(e, path))
}

pub(super) fn tokens_rel(v: &JsValue) -> Result<Vec<u32>, InputError> {
    let k = kind(v);
    tokens_of(Src::Val(v), k, checked_len(v, k)?)
}

/// Token ids of `v` of kind `k` and checked length `n`.
pub(super) fn tokens_of(v: Src, k: u32, n: usize) -> Result<Vec<u32>, InputError> {
    let out: Vec<u32> = match k {
        // SAFETY: a Uint32Array's elements are u32s.
        K_U32 => unsafe { copy_typed_vec::<u32>(v, k, n) },
        K_I32 => {
            // SAFETY: an Int32Array's elements are i32s.
            let raw = unsafe { copy_typed_vec::<i32>(v, k, n) };
            if let Some(i) = raw.iter().position(|&t| t < 0) {
                return Err(InputError::range_error(
                    format!("[{i}]"),
                    format!("token id {} is negative", raw[i]),
                ));
            }
            raw.into_iter().map(|t| t as u32).collect()
        }
        _ => {
            let nums = numbers_of(&v.value(), k, n)?;
            let mut out = Vec::with_capacity(nums.len());
            for (i, x) in nums.into_iter().enumerate() {
                if x.fract() != 0.0 || !(0.0..2147483648.0).contains(&x) {
                    return Err(InputError::range_error(
                        format!("[{i}]"),
                        format!("token ids are integers in [0, 2^31), got {}", fmt_num(x)),
                    ));
                }
                out.push(x as u32);
            }
            out
        }
    };
    if let Some(i) = out.iter().position(|&t| t > i32::MAX as u32) {
        return Err(InputError::range_error(
            format!("[{i}]"),
            format!("token id {} is out of range [0, 2^31)", out[i]),
        ));
    }
    Ok(out)
}

pub(super) fn bytes(v: &JsValue) -> Result<Vec<u8>, InputError> {
    if let Some(s) = v.as_string() {
        return crate::base64::decode(&s, false, crate::base64::Padding::Required).map_err(|e| {
            InputError::type_error(
                "",
                format!("must be bytes (Uint8Array) or base64, got an invalid base64 string: {e}"),
            )
        });
    }
    match kind(v) {
        K_U8 => Ok(v.unchecked_ref::<Uint8Array>().to_vec()),
        K_OBJECT if v.is_instance_of::<js_sys::ArrayBuffer>() => Ok(Uint8Array::new(v).to_vec()),
        _ => Err(InputError::type_error(
            "",
            format!(
                "must be a Uint8Array, ArrayBuffer or base64 string, got {}",
                describe(v)
            ),
        )),
    }
}

pub(super) fn opt_u32(v: &JsValue) -> Result<Option<u32>, InputError> {
    if v.is_undefined() || v.is_null() {
        return Ok(None);
    }
    match v.as_f64() {
        Some(x) if x.fract() == 0.0 && (0.0..=u32::MAX as f64).contains(&x) => Ok(Some(x as u32)),
        _ => Err(InputError::type_error(
            "",
            format!("must be a non-negative integer, got {}", describe(v)),
        )),
    }
}

/// Refuses a key of the object `v` outside `allowed` (`allowed_js`: the same keys as a
/// JS array made once) whose value is not undefined.
pub(super) fn check_keys(
    v: &JsValue,
    allowed_js: &JsValue,
    allowed: &[&str],
) -> Result<(), InputError> {
    let Some(k) = unknown_key(v, allowed_js) else {
        return Ok(());
    };
    Err(InputError::type_error(
        format!(".{k}"),
        format!("unknown field; expected one of: {}", allowed.join(", ")),
    ))
}
