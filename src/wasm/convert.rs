//! JS ↔ core conversions. Data objects keep the wire's field names (`model_input`,
//! `loss_fn_inputs`, `target_tokens`, …); SDK options are camelCase. Typed arrays cross
//! the boundary as one copy; plain arrays are checked in one JS pass and converted in
//! bulk. Every error names the offending path and value; unknown option keys are
//! errors (a misspelt option must not be silently ignored).
//!
//! The data path (`data`, `datum`, `model_input`, `tensor`, `tokens`) runs once per
//! datum of every training call, so it is kept cheap on the success path: the keys it
//! reads are JS strings made once ([`js`]), the kind of a value is a small integer
//! ([`kind`]), unknown keys are found by one JS call per object, typed arrays are copied
//! into wasm memory once, and field paths are only built when an error is reported:
//! errors are made with a path *relative* to the value being converted (`""`, `"[3]"`,
//! `".data[3]"`) and each caller prepends its own part on the way out ([`pre`]).

use crate::map::StrMap;
use std::time::Duration;

use js_sys::{Array, Float32Array, Int32Array, Object, Reflect, Uint32Array, Uint8Array};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use crate::call::CallOptions;
use crate::proto::{ForwardBackwardOutput, SampleResponse, TopkLogprobs};
use crate::sync::CancelToken;
use crate::types::{
    fmt_num, loss_input_dtype, DType, Datum, InputError, LossFnInputs, ModelInput, ModelInputChunk,
    TensorData, TensorValues, MAX_ELEMENTS,
};
use crate::wasm::errors::{input_error, type_error};

#[wasm_bindgen(inline_js = "
const TAG = Symbol.toStringTag;
const TYPED = Object.assign(Object.create(null), { Int8Array: 5, Uint8Array: 6, Uint8ClampedArray: 7,
  Int16Array: 8, Uint16Array: 9, Int32Array: 10, Uint32Array: 11, Float32Array: 12, Float64Array: 13,
  BigInt64Array: 14, BigUint64Array: 15 });
const VIEWS = [, , , , , Int8Array, Uint8Array, Uint8ClampedArray, Int16Array, Uint16Array, Int32Array,
  Uint32Array, Float32Array, Float64Array];
const TA_LENGTH = Object.getOwnPropertyDescriptor(Object.getPrototypeOf(Int8Array.prototype), 'length').get;
export function kind(v) {
  if (v === undefined) return 0;
  if (v === null) return 1;
  if (typeof v !== 'object') return 2;
  if (Array.isArray(v)) return 4;
  if (!ArrayBuffer.isView(v) || v instanceof DataView) return 3;
  // What Object.prototype.toString shows: the @@toStringTag if a string, else 'Object'.
  const t = v[TAG];
  if (typeof t !== 'string') return 16;
  return t === '' ? 3 : (TYPED[t] ?? 16);
}
function get(o, k) {
  if (o === null || (typeof o !== 'object' && typeof o !== 'function')) return undefined;
  try { return o[k]; } catch { return undefined; }
}
function taLength(v) {
  try { return TA_LENGTH.call(v); } catch { return 0; }
}
// The length of an array (its `length`) or typed array (its own) of kind k, else 0.
function len(v, k) {
  if (k === 4) { const n = get(v, 'length'); return typeof n === 'number' ? n : 0; }
  return k >= 5 ? taLength(v) : 0;
}
export function length(v, k) { return len(v, k); }
// Views of the whole wasm memory by kind, remade when it grows (the old buffer detaches).
let mem8 = new Uint8Array(0);
let views = [];
function view(mem, k) {
  if (mem8.byteLength === 0) { mem8 = new Uint8Array(mem.buffer); views = []; }
  return views[k] || (views[k] = new VIEWS[k](mem8.buffer));
}
export function copy_typed(mem, k, src, s, ptr, n) {
  if (s >= 0) src = S[s];
  if (taLength(src) !== n) return false;
  view(mem, k).set(src, ptr / VIEWS[k].BYTES_PER_ELEMENT);
  return true;
}
export function copy_numbers(mem, a, ptr, n) {
  const d = view(mem, 13);
  const at = ptr / 8;
  for (let i = 0; i < n; i++) {
    const x = a[i];
    if (typeof x !== 'number') return i;
    d[at + i] = x;
  }
  return -1;
}
function unknown(o, allowed) {
  const ks = Object.keys(o);
  for (let i = 0; i < ks.length; i++) {
    const k = ks[i];
    if (allowed.includes(k)) continue;
    let x;
    try { x = Reflect.get(o, k); } catch { continue; }
    if (x !== undefined) return k;
  }
  return undefined;
}
export function unknown_key(o, allowed) { return unknown(o, allowed); }
const dtypeCode = (v) =>
  v === undefined ? 0 : v === 'float32' ? 1 : v === 'int64' ? 2 : typeof v === 'string' ? 3 : 4;
// The readers below read the fields of one data object, keep them in S for Rust to
// take (take(i)) when it needs them, and write their kinds and lengths as f64s into
// wasm memory at ptr. They decide nothing: every check is made in Rust from these.
// S: 0-3 datum fields, 4 chunks, 5 chunk, 6 tokens, 8-12 tensor fields, 16.. loss inputs.
// The functions taking (v, s) use S[s] instead of v when s >= 0.
const S = [];
export function take(i) { return S[i]; }
export function release() { S.length = 0; }
// Fields are read with plain property loads (fast for objects of one shape) and, if a
// getter throws, again one by one with get() (which gives undefined for that field).
export function read_datum(mem, d, allowed, ptr) {
  if (kind(d) !== 3) return 0;
  const bad = unknown(d, allowed) !== undefined;
  let mi, lfi, ms, ls;
  try {
    mi = d.model_input; lfi = d.loss_fn_inputs; ms = d.model_input_spans; ls = d.loss_fn_input_spans;
  } catch {
    mi = get(d, 'model_input'); lfi = get(d, 'loss_fn_inputs');
    ms = get(d, 'model_input_spans'); ls = get(d, 'loss_fn_input_spans');
  }
  S[0] = mi; S[1] = lfi; S[2] = ms; S[3] = ls;
  const o = view(mem, 13), at = ptr / 8;
  o[at] = kind(mi); o[at + 1] = kind(lfi); o[at + 2] = kind(ms); o[at + 3] = kind(ls);
  return bad ? 1 : 2;
}
// Reads the one array field `key` of o into S[slot] and writes its kind and length.
function read_array_field(mem, o, key, slot, ptr) {
  let x;
  try { x = o[key]; } catch { x = undefined; }
  S[slot] = x;
  const k = kind(x);
  const out = view(mem, 13), at = ptr / 8;
  out[at] = k; out[at + 1] = len(x, k);
}
export function read_model_input(mem, v, s, allowed, ptr) {
  if (s >= 0) v = S[s];
  const bad = unknown(v, allowed) !== undefined;
  read_array_field(mem, v, 'chunks', 4, ptr);
  return bad ? 0 : 1;
}
export function read_chunk(mem, i, allowed, ptr) {
  const c = (S[5] = S[4][i]);
  if (kind(c) !== 3) return 0;
  if (get(c, 'type') !== 'encoded_text') return 1;
  const bad = unknown(c, allowed) !== undefined;
  read_array_field(mem, c, 'tokens', 6, ptr);
  return bad ? 2 : 3;
}
export function read_inputs(mem, o, s, known, ptr, cap) {
  if (s >= 0) o = S[s];
  const ks = Object.keys(o);
  const m = Math.min(ks.length, cap);
  for (let i = 0; i < m; i++) { S[16 + 2 * i] = ks[i]; S[17 + 2 * i] = get(o, ks[i]); }
  const o8 = view(mem, 13), at = ptr / 8;
  for (let i = 0; i < m; i++) { o8[at + 2 * i] = kind(S[17 + 2 * i]); o8[at + 2 * i + 1] = known.indexOf(ks[i]); }
  return ks.length;
}
export function read_tensor(mem, v, s, allowed, ptr) {
  if (s >= 0) v = S[s];
  const bad = unknown(v, allowed) !== undefined;
  let data, dtype, shape, crow, col;
  try {
    data = v.data; dtype = v.dtype; shape = v.shape; crow = v.sparse_crow_indices; col = v.sparse_col_indices;
  } catch {
    data = get(v, 'data'); dtype = get(v, 'dtype'); shape = get(v, 'shape');
    crow = get(v, 'sparse_crow_indices'); col = get(v, 'sparse_col_indices');
  }
  S[8] = data; S[9] = dtype; S[10] = shape; S[11] = crow; S[12] = col;
  const kd = kind(data), ks = kind(shape);
  const o = view(mem, 13), at = ptr / 8;
  o[at] = kd; o[at + 1] = dtypeCode(dtype); o[at + 2] = ks; o[at + 3] = kind(crow); o[at + 4] = kind(col);
  const n = len(shape, ks);
  o[at + 5] = len(data, kd); o[at + 6] = n; o[at + 7] = 0;
  // A short plain shape of numbers (the usual [n]) is copied here too.
  if (ks === 4 && n <= 4) {
    let i = 0;
    for (; i < n; i++) { const x = shape[i]; if (typeof x !== 'number') break; o[at + 8 + i] = x; }
    o[at + 7] = i === n ? 1 : 0;
  }
  return bad ? 0 : 1;
}
// The batch reader (data()'s fast lane). For each datum from index `from` whose parts all
// have the usual form (a datum of model_input and loss_fn_inputs; encoded_text chunks of
// Uint32Array/Int32Array tokens; known loss inputs as { data, dtype?, shape? } with
// Int32Array/Uint32Array/Float32Array data and no shape or one of one number >= 0), a record of
// kinds and lengths as f64s at ptr, the arrays kept in B for copy_batch:
//   1, chunk count, per chunk [kind, length, B index],
//   input count, per input [known index, kind, dtype code, length, shape's number or -1 (none), B index].
// Any other datum is the record [0]: Rust converts it the slow way, which makes every
// check and reports every error. Returns how many datums it read (as many records as fit
// in cap f64s). It decides which lane a datum takes, nothing else.
const B = [];
function usual(d, o, at, end, keys) {
  if (kind(d) !== 3 || unknown(d, keys[0]) !== undefined) return -1;
  if (d.model_input_spans !== undefined || d.loss_fn_input_spans !== undefined) return -1;
  const mi = d.model_input, lfi = d.loss_fn_inputs;
  if (kind(mi) !== 3 || kind(lfi) !== 3 || unknown(mi, keys[1]) !== undefined) return -1;
  const chunks = mi.chunks;
  if (!Array.isArray(chunks)) return -1;
  const nc = chunks.length;
  if (at + 2 + 3 * nc > end) return -2;
  o[at++] = 1; o[at++] = nc;
  for (let c = 0; c < nc; c++) {
    const ch = chunks[c];
    if (kind(ch) !== 3 || ch.type !== 'encoded_text' || unknown(ch, keys[2]) !== undefined) return -1;
    const t = ch.tokens, k = kind(t);
    if (k !== 10 && k !== 11) return -1;
    o[at++] = k; o[at++] = taLength(t); o[at++] = B.push(t) - 1;
  }
  const ks = Object.keys(lfi);
  if (at + 1 + 6 * ks.length > end) return -2;
  o[at++] = ks.length;
  for (let i = 0; i < ks.length; i++) {
    const ki = keys[4].indexOf(ks[i]);
    if (ki < 0) return -1;
    const t = lfi[ks[i]];
    if (kind(t) !== 3 || unknown(t, keys[3]) !== undefined) return -1;
    if (t.sparse_crow_indices !== undefined || t.sparse_col_indices !== undefined) return -1;
    const data = t.data, shape = t.shape, k = kind(data);
    if (k !== 10 && k !== 11 && k !== 12) return -1;
    let dim = -1;
    if (shape !== undefined) {
      if (!Array.isArray(shape) || shape.length !== 1 || typeof shape[0] !== 'number') return -1;
      dim = shape[0];
      if (!(dim >= 0)) return -1;
    }
    o[at++] = ki; o[at++] = k; o[at++] = dtypeCode(t.dtype); o[at++] = taLength(data); o[at++] = dim;
    o[at++] = B.push(data) - 1;
  }
  return at;
}
export function read_batch(mem, data, from, ptr, cap, keys) {
  const o = view(mem, 13);
  const end = ptr / 8 + cap;
  let at = ptr / 8, i = from;
  for (; i < data.length; i++) {
    // Room for a datum of up to 64 f64s (a few chunks and inputs) or stop here, so that a
    // datum is rarely read twice (getters run again when a record does not fit).
    if (i > from && at + 64 > end) break;
    const b = B.length;
    let r;
    try { r = usual(data[i], o, at, end, keys); } catch { r = -1; }
    if (r >= 0) { at = r; continue; }
    B.length = b;
    if ((r === -2 && i > from) || at >= end) break;
    o[at++] = 0;
  }
  return i - from;
}
// Copies B's arrays into wasm memory: n entries of [B index, kind, ptr, length] (u32s at
// table). False (the copies may be partial) if one no longer has its length.
export function copy_batch(mem, table, n) {
  const t = view(mem, 11), at = table / 4;
  for (let i = 0; i < n; i++) {
    const e = at + 4 * i, k = t[e + 1], src = B[t[e]];
    if (taLength(src) !== t[e + 3]) return false;
    view(mem, k).set(src, t[e + 2] / VIEWS[k].BYTES_PER_ELEMENT);
  }
  return true;
}
export function release_batch() { B.length = 0; }
// Result objects of sample() in one call each (their shape is the wire's).
export function sample_sequence(tokens, logprobs, stop, sequence_id, topk_logprobs) {
  return { tokens, logprobs, stop_reason: stop ? 'stop' : 'length', sequence_id, topk_logprobs };
}
export function sample_response(sequences, prompt_logprobs, topk_prompt_logprobs, prompt_cache_hit_tokens, target_prompt_logprobs, prompt_alt_tokens) {
  return { sequences, prompt_logprobs, topk_prompt_logprobs, prompt_cache_hit_tokens, target_prompt_logprobs, prompt_alt_tokens };
}
// Whether every property of v is its own (its prototype is Object.prototype or null).
export function plain_proto(v) {
  const p = Object.getPrototypeOf(v);
  return p === Object.prototype || p === null;
}
// Element i of a BigInt64Array/BigUint64Array as a number (Number() of a BigInt never throws).
export function bigint_at(a, i) { return Number(a[i]); }
export function describe(v) {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  if (ArrayBuffer.isView(v)) return 'a ' + Object.prototype.toString.call(v).slice(8, -1);
  if (typeof v === 'string') return 'the string ' + JSON.stringify(v.length > 40 ? v.slice(0, 40) + '…' : v);
  if (typeof v === 'number' || typeof v === 'boolean' || typeof v === 'bigint') return String(v);
  return typeof v === 'object' ? 'an object' : typeof v;
}
")]
extern "C" {
    /// What a JS value is, as one of the `K_*` codes.
    fn kind(v: &JsValue) -> u32;
    fn sample_sequence(
        tokens: &JsValue,
        logprobs: &JsValue,
        stop: bool,
        sequence_id: &str,
        topk_logprobs: &JsValue,
    ) -> JsValue;
    fn sample_response(
        sequences: &JsValue,
        prompt_logprobs: &JsValue,
        topk_prompt_logprobs: &JsValue,
        prompt_cache_hit_tokens: f64,
        target_prompt_logprobs: &JsValue,
        prompt_alt_tokens: &JsValue,
    ) -> JsValue;
    /// Whether `v`'s prototype is `Object.prototype` or null (an object literal).
    fn plain_proto(v: &JsValue) -> bool;
    /// Element `i` of a `BigInt64Array`/`BigUint64Array` as a number.
    fn bigint_at(a: &JsValue, i: u32) -> f64;
    /// The length of an array or typed array of kind `k` (else 0), as JS reads it.
    fn length(v: &JsValue, k: u32) -> f64;
    /// Copies the typed array `src` of kind `k` (one of `K_I8..=K_F64`, exactly `n`
    /// elements) into wasm memory at `ptr`; false (nothing copied) if it has not `n`.
    fn copy_typed(mem: &JsValue, k: u32, src: &JsValue, s: i32, ptr: u32, n: u32) -> bool;
    /// Copies the first `n` elements of a plain array into wasm memory at `ptr` as f64s,
    /// stopping at the first one that is not a number: its index, or -1.
    fn copy_numbers(mem: &JsValue, a: &JsValue, ptr: u32, n: u32) -> i32;
    /// The first own enumerable key of `o` that is not in the JS array `allowed` and
    /// whose value is not undefined.
    fn unknown_key(o: &JsValue, allowed: &JsValue) -> Option<String>;
    /// A value the last reader kept (see the JS above for the slots).
    fn take(i: u32) -> JsValue;
    /// Drops the values the readers kept.
    fn release();
    /// Reads a datum: 0 not an object; else the kinds of `model_input`, `loss_fn_inputs`,
    /// `model_input_spans`, `loss_fn_input_spans` (slots 0-3), and 1 if it has an
    /// unknown key, 2 if not.
    fn read_datum(mem: &JsValue, d: &JsValue, allowed: &JsValue, ptr: u32) -> u32;
    /// Reads a `ModelInput` object: kind and length of `chunks` (slot 4); 0 if it has an
    /// unknown key, 1 if not.
    fn read_model_input(mem: &JsValue, v: &JsValue, s: i32, allowed: &JsValue, ptr: u32) -> u32;
    /// Reads chunk `i` of the last `chunks` (slot 5): 0 not an object, 1 not of type
    /// `encoded_text`; else kind and length of `tokens` (slot 6), and 2 if it has an
    /// unknown key, 3 if not.
    fn read_chunk(mem: &JsValue, i: u32, allowed: &JsValue, ptr: u32) -> u32;
    /// Reads the first `cap` of the `n` entries of a `loss_fn_inputs` object: for each,
    /// the kind of the value and the index of the key in `known` (or -1); the key and
    /// the value in slots `16 + 2i`, `17 + 2i`. Returns `n`.
    fn read_inputs(mem: &JsValue, o: &JsValue, s: i32, known: &JsValue, ptr: u32, cap: u32) -> u32;
    /// Reads a `TensorData` object: the kinds of `data`, `dtype` (as a code: 0 undefined,
    /// 1 "float32", 2 "int64", 3 another string, 4 other), `shape`,
    /// `sparse_crow_indices`, `sparse_col_indices`, the lengths of `data` and `shape`,
    /// 1 if `shape` is a plain array of at most 4 numbers, then those numbers (slots
    /// 8-12); 0 if it has an unknown key, 1 if not.
    fn read_tensor(mem: &JsValue, v: &JsValue, s: i32, allowed: &JsValue, ptr: u32) -> u32;
    /// The batch reader: records for the datums of `data` from `from` (see the JS above),
    /// as many as fit in `cap` f64s at `ptr`; returns how many datums it read. `keys`:
    /// the allowed keys of a datum, model input, encoded_text chunk and tensor, then the
    /// known loss inputs.
    fn read_batch(
        mem: &JsValue,
        data: &JsValue,
        from: u32,
        ptr: u32,
        cap: u32,
        keys: &JsValue,
    ) -> u32;
    /// Copies the arrays the batch reader kept per the `n` entries at `table`.
    fn copy_batch(mem: &JsValue, table: u32, n: u32) -> bool;
    /// Drops the arrays the batch reader kept.
    fn release_batch();
    /// A short description of a JS value for error messages.
    pub fn describe(v: &JsValue) -> String;
}

/// A JS value: one Rust holds, or one a reader kept in a slot (taken only if needed).
#[derive(Clone, Copy)]
enum Src<'a> {
    Val(&'a JsValue),
    Slot(u32),
}

impl<'a> Src<'a> {
    /// The value and slot arguments of the JS functions taking `(v, s)`.
    fn args(self) -> (&'a JsValue, i32) {
        match self {
            Src::Val(v) => (v, -1),
            Src::Slot(s) => (&js().undefined, s as i32),
        }
    }
    fn value(self) -> JsValue {
        match self {
            Src::Val(v) => v.clone(),
            Src::Slot(s) => take(s),
        }
    }
}

/// Numbers a reader writes into wasm memory for Rust (kinds, lengths).
struct Out<const N: usize>([f64; N]);

impl<const N: usize> Out<N> {
    fn new() -> Self {
        Out([0.0; N])
    }
    fn ptr(&mut self) -> u32 {
        self.0.as_mut_ptr() as u32
    }
    fn at(&self, i: usize) -> f64 {
        // Written by JS through the address `ptr` gave out.
        // SAFETY: in bounds and aligned (a plain read of an f64 of the array).
        unsafe { std::ptr::read_volatile(&self.0[i]) }
    }
    fn kind(&self, i: usize) -> u32 {
        self.at(i) as u32
    }
}

// `kind` codes: undefined, null, any other non-object (primitives, functions); any other
// object (plain, DataView, ArrayBuffer, …); an array; the typed arrays (`VIEWS` in the JS
// above is indexed by these); 16 a typed array of another kind (e.g. Float16Array).
const K_UNDEFINED: u32 = 0;
const K_NULL: u32 = 1;
const K_OBJECT: u32 = 3;
const K_ARRAY: u32 = 4;
const K_I8: u32 = 5;
const K_U8: u32 = 6;
const K_I16: u32 = 8;
const K_U16: u32 = 9;
const K_I32: u32 = 10;
const K_U32: u32 = 11;
const K_F32: u32 = 12;
const K_F64: u32 = 13;
const K_BI64: u32 = 14;
const K_BU64: u32 = 15;

fn is_nullish(k: u32) -> bool {
    k <= K_NULL
}

fn is_typed(k: u32) -> bool {
    k >= K_I8
}

/// JS values the data path uses on every call, made once.
struct Js {
    memory: JsValue,
    undefined: JsValue,
    datum_keys: JsValue,
    model_input_keys: JsValue,
    encoded_text_keys: JsValue,
    tensor_keys: JsValue,
    known_inputs: JsValue,
    /// The batch reader's key lists: datum, model input, encoded_text chunk, tensor,
    /// known loss inputs.
    batch_keys: JsValue,
}

const DATUM_KEYS: &[&str] = &[
    "model_input",
    "loss_fn_inputs",
    "model_input_spans",
    "loss_fn_input_spans",
];
const MODEL_INPUT_KEYS: &[&str] = &["chunks"];
const ENCODED_TEXT_KEYS: &[&str] = &["type", "tokens"];
const TENSOR_KEYS: &[&str] = &[
    "data",
    "dtype",
    "shape",
    "sparse_crow_indices",
    "sparse_col_indices",
];
/// Loss-input names taken without copying the key string out of JS.
const KNOWN_INPUTS: &[&str] = &[
    "target_tokens",
    "weights",
    "advantages",
    "logprobs",
    "clip_low_threshold",
    "clip_high_threshold",
    "sequence_ratio_mask",
    "target_distribution",
];

fn js() -> &'static Js {
    thread_local! {
        static JS: &'static Js = {
            let list = |ks: &[&str]| -> JsValue {
                ks.iter().map(|k| JsValue::from_str(k)).collect::<Array>().into()
            };
            Box::leak(Box::new(Js {
                memory: wasm_bindgen::memory(),
                undefined: JsValue::UNDEFINED,
                datum_keys: list(DATUM_KEYS),
                model_input_keys: list(MODEL_INPUT_KEYS),
                encoded_text_keys: list(ENCODED_TEXT_KEYS),
                tensor_keys: list(TENSOR_KEYS),
                known_inputs: list(KNOWN_INPUTS),
                batch_keys: [DATUM_KEYS, MODEL_INPUT_KEYS, ENCODED_TEXT_KEYS, TENSOR_KEYS, KNOWN_INPUTS]
                    .iter()
                    .map(|ks| list(ks))
                    .collect::<Array>()
                    .into(),
            }))
        };
    }
    JS.with(|j| *j)
}

fn get_str(o: &JsValue, k: &str) -> JsValue {
    Reflect::get(o, &JsValue::from_str(k)).unwrap_or(JsValue::UNDEFINED)
}

fn set(o: &JsValue, k: &str, v: &JsValue) {
    let _ = Reflect::set(o, &JsValue::from_str(k), v);
}

fn is_plain_object(v: &JsValue) -> bool {
    kind(v) == K_OBJECT
}

/// The keys of a JS object.
pub fn keys(o: &JsValue) -> Vec<String> {
    Object::keys(o.unchecked_ref::<Object>())
        .iter()
        .filter_map(|k| k.as_string())
        .collect()
}

/// `e` with `prefix` put in front of its (relative) field path.
fn pre(mut e: InputError, prefix: &str) -> InputError {
    e.field.insert_str(0, prefix);
    e
}

/// A core validation error (field relative to the value, `""`, `"shape"` or
/// `"[3]"`) in this module's relative form (`""`, `".shape"`, `"[3]"`): then
/// `pre(e, path)` gives exactly `e.within(path)`.
fn rel(mut e: InputError) -> InputError {
    if !e.field.is_empty() && !e.field.starts_with('[') {
        e.field.insert(0, '.');
    }
    e
}

// ---------------------------------------------------------------------------------
// Options objects

/// A camelCase options object whose keys are checked against an allow-list.
pub struct Opts {
    obj: JsValue,
    /// The object's own keys when it is an object literal: then a key not among them is
    /// absent without asking JS (most options are absent on most calls).
    own: Option<Vec<String>>,
}

impl Opts {
    /// Reads `v` (undefined/null = no options) as an options object of `what`.
    pub fn new(v: &JsValue, what: &str, allowed: &[&str]) -> Result<Opts, JsValue> {
        if v.is_undefined() || v.is_null() {
            return Ok(Opts {
                obj: JsValue::UNDEFINED,
                own: None,
            });
        }
        if !is_plain_object(v) {
            return Err(type_error(
                what,
                format!("must be an options object, got {}", describe(v)),
            ));
        }
        let own = keys(v);
        for k in &own {
            if !allowed.contains(&k.as_str()) && !get_str(v, k).is_undefined() {
                // Request options go in the last argument (openai-node's convention).
                let hint = if REQUEST_OPTIONS.contains(&k.as_str()) {
                    " (request options such as signal and timeout go in the next argument)"
                } else {
                    ""
                };
                return Err(type_error(
                    k,
                    format!(
                        "unknown option for {what}; expected one of: {}{hint}",
                        allowed.join(", ")
                    ),
                ));
            }
        }
        Ok(Opts {
            obj: v.clone(),
            own: plain_proto(v).then_some(own),
        })
    }
    /// The raw value (undefined when absent).
    pub fn get(&self, k: &str) -> JsValue {
        let absent = match &self.own {
            Some(own) => !own.iter().any(|o| o == k),
            None => self.obj.is_undefined(),
        };
        if absent {
            JsValue::UNDEFINED
        } else {
            get_str(&self.obj, k)
        }
    }
    fn present(&self, k: &str) -> Option<JsValue> {
        let v = self.get(k);
        (!v.is_undefined()).then_some(v)
    }
    /// A string option.
    pub fn string(&self, k: &str) -> Result<Option<String>, JsValue> {
        match self.present(k) {
            None => Ok(None),
            Some(v) => v
                .as_string()
                .map(Some)
                .ok_or_else(|| type_error(k, format!("must be a string, got {}", describe(&v)))),
        }
    }
    /// A boolean option.
    pub fn bool(&self, k: &str) -> Result<Option<bool>, JsValue> {
        match self.present(k) {
            None => Ok(None),
            Some(v) => v
                .as_bool()
                .map(Some)
                .ok_or_else(|| type_error(k, format!("must be a boolean, got {}", describe(&v)))),
        }
    }
    /// A finite number option.
    pub fn number(&self, k: &str) -> Result<Option<f64>, JsValue> {
        match self.present(k) {
            None => Ok(None),
            Some(v) => match v.as_f64() {
                Some(x) if x.is_finite() => Ok(Some(x)),
                Some(x) => Err(crate::wasm::errors::range_error(
                    k,
                    format!("must be a finite number, got {}", fmt_num(x)),
                )),
                None => Err(type_error(
                    k,
                    format!("must be a number, got {}", describe(&v)),
                )),
            },
        }
    }
    /// A non-negative integer option no larger than `max`.
    pub fn uint(&self, k: &str, max: u64) -> Result<Option<u64>, JsValue> {
        match self.number(k)? {
            None => Ok(None),
            Some(x) if x.fract() != 0.0 => Err(type_error(
                k,
                format!("must be an integer, got {}", fmt_num(x)),
            )),
            Some(x) if x < 0.0 || x > max as f64 => Err(crate::wasm::errors::range_error(
                k,
                format!("must be between 0 and {max}, got {}", fmt_num(x)),
            )),
            Some(x) => Ok(Some(x as u64)),
        }
    }
    /// A `{ [key: string]: string }` option.
    pub fn string_map(&self, k: &str) -> Result<Option<StrMap<String>>, JsValue> {
        match self.present(k) {
            None => Ok(None),
            Some(v) if is_plain_object(&v) => {
                let mut m = StrMap::new();
                for key in keys(&v) {
                    let val = get_str(&v, &key);
                    let s = val.as_string().ok_or_else(|| {
                        type_error(
                            &format!("{k}.{key}"),
                            format!("must be a string, got {}", describe(&val)),
                        )
                    })?;
                    m.insert(key, s);
                }
                Ok(Some(m))
            }
            Some(v) => Err(type_error(
                k,
                format!("must be an object of strings, got {}", describe(&v)),
            )),
        }
    }
    /// A JSON-compatible option (objects, arrays, numbers, strings).
    pub fn json(&self, k: &str) -> Result<Option<crate::json::Value>, JsValue> {
        match self.present(k) {
            None => Ok(None),
            Some(v) => to_json(&v, k).map(Some),
        }
    }
    /// The `signal` and `timeout` (ms) every call accepts.
    pub fn call(&self) -> Result<Call, JsValue> {
        let timeout = match self.number("timeout")? {
            None => None,
            Some(ms) if ms <= 0.0 => {
                return Err(crate::wasm::errors::range_error(
                    "timeout",
                    format!(
                        "must be a positive number of milliseconds, got {}",
                        fmt_num(ms)
                    ),
                ))
            }
            Some(ms) => Some(Duration::from_secs_f64(ms / 1000.0)),
        };
        Call::new(self.get("signal"), timeout)
    }
}

/// The per-call request options, every call's last argument.
pub const REQUEST_OPTIONS: &[&str] = &["signal", "timeout"];

/// Reads a call's request options (`{ signal, timeout }`, camelCase) as a `Call`.
pub fn request_options(v: &JsValue, method: &str) -> Result<Call, JsValue> {
    Opts::new(v, &format!("{method} options"), REQUEST_OPTIONS)?.call()
}

/// JSON value of a JS value (through `JSON.stringify`, so only JSON data survives).
pub fn to_json(v: &JsValue, field: &str) -> Result<crate::json::Value, JsValue> {
    let s =
        js_sys::JSON::stringify(v).map_err(|_| type_error(field, "must be JSON-serialisable"))?;
    let s = s.as_string().ok_or_else(|| {
        type_error(
            field,
            format!("must be JSON-serialisable, got {}", describe(v)),
        )
    })?;
    crate::json::from_str(&s).map_err(|e| type_error(field, e.to_string()))
}

/// Call options linked to an `AbortSignal`. The listener is removed when this drops,
/// so a long-lived signal reused across calls does not accumulate listeners.
pub struct Call {
    /// The core options.
    pub options: CallOptions,
    listener: Option<(JsValue, Closure<dyn FnMut()>)>,
}

impl Call {
    fn new(signal: JsValue, timeout: Option<Duration>) -> Result<Call, JsValue> {
        if signal.is_undefined() || signal.is_null() {
            return Ok(Call {
                options: CallOptions {
                    cancel: None,
                    timeout,
                },
                listener: None,
            });
        }
        if !get_str(&signal, "addEventListener").is_function()
            || get_str(&signal, "aborted").as_bool().is_none()
        {
            return Err(type_error(
                "signal",
                format!("must be an AbortSignal, got {}", describe(&signal)),
            ));
        }
        let token = CancelToken::new();
        if get_str(&signal, "aborted").as_bool() == Some(true) {
            token.cancel();
            return Ok(Call {
                options: CallOptions {
                    cancel: Some(token),
                    timeout,
                },
                listener: None,
            });
        }
        let t = token.clone();
        let closure = Closure::<dyn FnMut()>::new(move || t.cancel());
        let add: js_sys::Function = get_str(&signal, "addEventListener").unchecked_into();
        let _ = add.call2(&signal, &"abort".into(), closure.as_ref());
        Ok(Call {
            options: CallOptions {
                cancel: Some(token),
                timeout,
            },
            listener: Some((signal, closure)),
        })
    }
}

impl Drop for Call {
    fn drop(&mut self) {
        if let Some((signal, closure)) = self.listener.take() {
            if let Ok(remove) =
                get_str(&signal, "removeEventListener").dyn_into::<js_sys::Function>()
            {
                let _ = remove.call2(&signal, &"abort".into(), closure.as_ref());
            }
        }
    }
}

// ---------------------------------------------------------------------------------
// Numbers
//
// Errors here have paths relative to the value converted (see the module doc).

/// The element count `n` of an array or typed array, as JS reads its length, refused
/// if longer than [`MAX_ELEMENTS`] before anything is copied (a plain array's holes cost
/// JS nothing, its copy into wasm memory would not).
fn checked(n: f64) -> Result<usize, InputError> {
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
fn checked_len(v: &JsValue, k: u32) -> Result<usize, InputError> {
    if k == K_ARRAY || is_typed(k) {
        checked(length(v, k))
    } else {
        Ok(0)
    }
}

/// The `n` elements of the typed array `v` of kind `k`, whose elements are `T`s,
/// copied once into wasm memory.
fn copy_typed_vec<T>(v: Src, k: u32, n: usize) -> Vec<T> {
    debug_assert!((K_I8..=K_F64).contains(&k));
    let mut out = Vec::<T>::with_capacity(n);
    let (v, s) = v.args();
    if copy_typed(&js().memory, k, v, s, out.as_mut_ptr() as u32, n as u32) {
        // SAFETY: `copy_typed` wrote exactly `n` elements of the kind's type (the
        // caller's `T`, of the same size and valid for any bits) at the start of the
        // allocation, which has room for `n`.
        unsafe { out.set_len(n) };
    }
    out
}

/// The `n` elements of the `Int32Array` or `Uint32Array` `v` (kind `k`) as i64s: copied
/// once into the upper half of the result's allocation, then widened in place.
fn widen_typed_vec(v: Src, k: u32, n: usize) -> Vec<i64> {
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
unsafe fn widen_in_place(mut out: Vec<i64>, k: u32, n: usize) -> Vec<i64> {
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
fn numbers_of(v: &JsValue, k: u32, n: usize) -> Result<Vec<f64>, InputError> {
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
        K_F64 => Ok(copy_typed_vec::<f64>(Src::Val(v), k, n)),
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

fn tokens_rel(v: &JsValue) -> Result<Vec<u32>, InputError> {
    let k = kind(v);
    tokens_of(Src::Val(v), k, checked_len(v, k)?)
}

/// Token ids of `v` of kind `k` and checked length `n`.
fn tokens_of(v: Src, k: u32, n: usize) -> Result<Vec<u32>, InputError> {
    let out: Vec<u32> = match k {
        K_U32 => copy_typed_vec::<u32>(v, k, n),
        K_I32 => {
            let raw = copy_typed_vec::<i32>(v, k, n);
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

fn bytes(v: &JsValue) -> Result<Vec<u8>, InputError> {
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

fn opt_u32(v: &JsValue) -> Result<Option<u32>, InputError> {
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
fn check_keys(v: &JsValue, allowed_js: &JsValue, allowed: &[&str]) -> Result<(), InputError> {
    let Some(k) = unknown_key(v, allowed_js) else {
        return Ok(());
    };
    Err(InputError::type_error(
        format!(".{k}"),
        format!("unknown field; expected one of: {}", allowed.join(", ")),
    ))
}

// ---------------------------------------------------------------------------------
// Data → core
//
// The readers of the JS above read each object's fields in one call and say what they
// are; the values are taken from them only when needed. Every decision is made here.

fn taken(i: u32) -> JsValue {
    take(i)
}

/// A `ModelInput` (`{ chunks: [...] }`) or, as a shorthand, token ids.
pub fn model_input(v: &JsValue, path: &str) -> Result<ModelInput, InputError> {
    let r = model_input_rel(Src::Val(v), kind(v)).map_err(|e| pre(e, path));
    release();
    r
}

/// [`model_input`] of `v` of kind `k`.
fn model_input_rel(src: Src, k: u32) -> Result<ModelInput, InputError> {
    let j = js();
    if k == K_ARRAY || is_typed(k) {
        let v = src.value();
        return Ok(ModelInput::from_ints(tokens_of(
            Src::Val(&v),
            k,
            checked_len(&v, k)?,
        )?));
    }
    if k != K_OBJECT {
        return Err(InputError::type_error(
            "",
            format!(
                "must be a ModelInput ({{ chunks: [...] }}) or an array of token ids, got {}",
                describe(&src.value())
            ),
        ));
    }
    let mut o = Out::<2>::new();
    let (v, s) = src.args();
    if read_model_input(&j.memory, v, s, &j.model_input_keys, o.ptr()) == 0 {
        check_keys(&src.value(), &j.model_input_keys, MODEL_INPUT_KEYS)?;
    }
    if o.kind(0) != K_ARRAY {
        return Err(InputError::type_error(
            ".chunks",
            format!("must be an array of chunks, got {}", describe(&taken(4))),
        ));
    }
    let n = o.at(1) as u32;
    let mut out = Vec::with_capacity(n as usize);
    for i in 0..n {
        out.push(chunk(i).map_err(|e| pre(e, &format!(".chunks[{i}]")))?);
    }
    let m = ModelInput { chunks: out };
    m.validate().map_err(rel)?;
    Ok(m)
}

/// Chunk `i` of the `chunks` array [`read_model_input`] read last.
fn chunk(i: u32) -> Result<ModelInputChunk, InputError> {
    let j = js();
    let mut o = Out::<2>::new();
    match read_chunk(&j.memory, i, &j.encoded_text_keys, o.ptr()) {
        0 => Err(InputError::type_error(
            "",
            format!("must be a chunk object, got {}", describe(&taken(5))),
        )),
        1 => other_chunk(&taken(5)),
        r => {
            if r == 2 {
                check_keys(&taken(5), &j.encoded_text_keys, ENCODED_TEXT_KEYS)?;
            }
            let (k, n) = (o.kind(0), o.at(1));
            let tokens = checked(n)
                .and_then(|n| tokens_of(Src::Slot(6), k, n))
                .map_err(|e| pre(e, ".tokens"))?;
            Ok(ModelInputChunk::EncodedText { tokens })
        }
    }
}

/// A chunk object whose `type` is not `encoded_text`.
fn other_chunk(c: &JsValue) -> Result<ModelInputChunk, InputError> {
    let ty = get_str(c, "type").as_string().unwrap_or_default();
    let check = |allowed: &[&str]| -> Result<(), InputError> {
        let list: Array = allowed.iter().map(|k| JsValue::from_str(k)).collect();
        check_keys(c, &list, allowed)
    };
    let format = || {
        get_str(c, "format")
            .as_string()
            .ok_or_else(|| InputError::type_error(".format", "must be \"png\" or \"jpeg\""))
    };
    let expected_tokens =
        || opt_u32(&get_str(c, "expected_tokens")).map_err(|e| pre(e, ".expected_tokens"));
    Ok(match ty.as_str() {
        "image" => {
            check(&["type", "data", "format", "expected_tokens"])?;
            ModelInputChunk::Image {
                data: bytes(&get_str(c, "data")).map_err(|e| pre(e, ".data"))?,
                format: format()?,
                expected_tokens: expected_tokens()?,
            }
        }
        "image_asset_pointer" => {
            check(&["type", "location", "format", "expected_tokens"])?;
            ModelInputChunk::ImageAssetPointer {
                format: format()?,
                location: get_str(c, "location")
                    .as_string()
                    .ok_or_else(|| InputError::type_error(".location", "must be a string"))?,
                expected_tokens: expected_tokens()?,
            }
        }
        "dmel" => {
            check(&["type", "dmel"])?;
            ModelInputChunk::Dmel {
                dmel: bytes(&get_str(c, "dmel")).map_err(|e| pre(e, ".dmel"))?,
            }
        }
        other => {
            return Err(InputError::type_error(
                ".type",
                format!(
                "must be \"encoded_text\", \"image\", \"image_asset_pointer\" or \"dmel\", got {}",
                crate::json::quote(other)
            ),
            ))
        }
    })
}

/// A `shape` of kind `k` and length `n` (as JS reads it).
fn shape_of(v: &JsValue, k: u32, n: f64) -> Result<Option<Vec<usize>>, InputError> {
    if is_nullish(k) {
        return Ok(None);
    }
    dims_of(numbers_of(v, k, checked(n)?)?)
}

/// The dimensions of a shape from its numbers.
fn dims_of(nums: Vec<f64>) -> Result<Option<Vec<usize>>, InputError> {
    nums.iter()
        .enumerate()
        .map(|(i, &d)| {
            if d.fract() == 0.0 && (0.0..1e12).contains(&d) {
                Ok(d as usize)
            } else {
                Err(InputError::range_error(
                    format!("[{i}]"),
                    format!("dimensions are non-negative integers, got {}", fmt_num(d)),
                ))
            }
        })
        .collect::<Result<Vec<_>, _>>()
        .map(Some)
}

/// Sparse indices: `v` of kind `k` (`take`n only when not undefined or null).
fn index_array(v: impl FnOnce() -> JsValue, k: u32) -> Result<Option<Vec<i64>>, InputError> {
    if is_nullish(k) {
        return Ok(None);
    }
    let v = v();
    numbers_of(&v, k, checked_len(&v, k)?)?
        .into_iter()
        .enumerate()
        .map(|(i, x)| {
            if x.fract() == 0.0 {
                Ok(x as i64)
            } else {
                Err(InputError::type_error(
                    format!("[{i}]"),
                    format!("must be an integer, got {}", fmt_num(x)),
                ))
            }
        })
        .collect::<Result<Vec<_>, _>>()
        .map(Some)
}

/// A `TensorData` (`{ data, dtype?, shape?, sparse_crow_indices?, sparse_col_indices? }`),
/// or, as a shorthand, a flat (typed) array. Without `dtype`, known loss-input names
/// decide (`target_tokens` int64; `weights`, `advantages`, `logprobs`, … float32), then
/// the typed array's kind.
pub fn tensor(v: &JsValue, key: Option<&str>, path: &str) -> Result<TensorData, InputError> {
    let r = tensor_rel(Src::Val(v), kind(v), key).map_err(|e| pre(e, path));
    release();
    r
}

/// [`tensor`] of `v` of kind `vk`.
fn tensor_rel(src: Src, vk: u32, key: Option<&str>) -> Result<TensorData, InputError> {
    let j = js();
    // Kinds of data, dtype (code), shape, crow, col; lengths of data and shape; whether
    // the shape's numbers follow, and those.
    let mut o = Out::<12>::new();
    let object = vk == K_OBJECT;
    if object {
        let (v, s) = src.args();
        if read_tensor(&j.memory, v, s, &j.tensor_keys, o.ptr()) == 0 {
            check_keys(&src.value(), &j.tensor_keys, TENSOR_KEYS)?;
        }
    }
    let (k, dtype_code, shape_k, crow_k, col_k, n, shape_n) = if object {
        let k = o.kind(0);
        (
            k,
            o.kind(1),
            o.kind(2),
            o.kind(3),
            o.kind(4),
            o.at(5),
            o.at(6),
        )
    } else {
        let n = if vk == K_ARRAY || is_typed(vk) {
            length(&src.value(), vk)
        } else {
            0.0
        };
        (vk, 0, K_UNDEFINED, K_UNDEFINED, K_UNDEFINED, n, 0.0)
    };
    let data = if object { Src::Slot(8) } else { src };
    let dtype = match dtype_code {
        1 => DType::Float32,
        2 => DType::Int64,
        3 => {
            return Err(InputError::type_error(
                ".dtype",
                format!(
                    "must be \"float32\" or \"int64\", got {}",
                    crate::json::quote(&taken(9).as_string().unwrap_or_default())
                ),
            ))
        }
        4 => {
            return Err(InputError::type_error(
                ".dtype",
                format!(
                    "must be \"float32\" or \"int64\", got {}",
                    describe(&taken(9))
                ),
            ))
        }
        _ => match key.and_then(loss_input_dtype) {
            Some(d) => d,
            None => match k {
                K_F32 | K_F64 => DType::Float32,
                K_I32 | K_U32 | K_I16 | K_U16 | K_I8 | K_U8 | K_BI64 => DType::Int64,
                _ => {
                    return Err(InputError::type_error(
                        ".dtype",
                        "is required for this input (\"float32\" or \"int64\")",
                    ))
                }
            },
        },
    };
    let at_data = |e: InputError| pre(e, ".data");
    let n = checked(n).map_err(at_data)?;
    let values = match (dtype, k) {
        (DType::Float32, K_F32) => TensorValues::Float32(copy_typed_vec::<f32>(data, k, n)),
        (DType::Float32, _) => TensorValues::Float32(
            numbers_of(&data.value(), k, n)
                .map_err(at_data)?
                .into_iter()
                .map(|x| x as f32)
                .collect(),
        ),
        (DType::Int64, K_I32 | K_U32) => TensorValues::Int64(widen_typed_vec(data, k, n)),
        (DType::Int64, _) => {
            let nums = numbers_of(&data.value(), k, n).map_err(at_data)?;
            if let Some(i) = nums.iter().position(|x| x.fract() != 0.0) {
                return Err(InputError::type_error(
                    format!(".data[{i}]"),
                    format!("dtype int64 needs integers, got {}", fmt_num(nums[i])),
                ));
            }
            TensorValues::Int64(nums.into_iter().map(|x| x as i64).collect())
        }
    };
    let mut shape = if object && o.at(7) == 1.0 {
        let dims: Vec<f64> = (0..shape_n as usize).map(|i| o.at(8 + i)).collect();
        dims_of(dims)
    } else {
        let shape_v = if is_nullish(shape_k) {
            JsValue::UNDEFINED
        } else {
            taken(10)
        };
        shape_of(&shape_v, shape_k, shape_n)
    }
    .map_err(|e| pre(e, ".shape"))?;
    if shape.is_none() && crow_k == K_UNDEFINED {
        shape = Some(vec![values.len()]);
    }
    let t = TensorData {
        values,
        shape,
        sparse_crow_indices: index_array(|| taken(11), crow_k)
            .map_err(|e| pre(e, ".sparse_crow_indices"))?,
        sparse_col_indices: index_array(|| taken(12), col_k)
            .map_err(|e| pre(e, ".sparse_col_indices"))?,
    };
    t.validate().map_err(rel)?;
    Ok(t)
}

/// A `Datum` (`{ model_input, loss_fn_inputs }`).
fn datum_rel(v: &JsValue) -> Result<Datum, InputError> {
    let j = js();
    // Kinds of model_input, loss_fn_inputs, model_input_spans, loss_fn_input_spans.
    let mut o = Out::<4>::new();
    match read_datum(&j.memory, v, &j.datum_keys, o.ptr()) {
        0 => {
            return Err(InputError::type_error(
                "",
                format!(
                    "must be a Datum ({{ model_input, loss_fn_inputs }}), got {}",
                    describe(v)
                ),
            ))
        }
        1 => check_keys(v, &j.datum_keys, DATUM_KEYS)?,
        _ => {}
    }
    let (mi_k, lfi_k, mis_k, lis_k) = (o.kind(0), o.kind(1), o.kind(2), o.kind(3));
    // (No reader below reuses slots 0-3.)
    let mi = model_input_rel(Src::Slot(0), mi_k).map_err(|e| pre(e, ".model_input"))?;
    let mut inputs = LossFnInputs::new();
    if !is_nullish(lfi_k) {
        if lfi_k != K_OBJECT {
            return Err(InputError::type_error(
                ".loss_fn_inputs",
                format!("must be an object of tensors, got {}", describe(&taken(1))),
            ));
        }
        loss_fn_inputs(Src::Slot(1), &mut inputs)?;
    }
    let mis = if is_nullish(mis_k) {
        None
    } else {
        Some(taken(2))
    };
    let lis = if is_nullish(lis_k) {
        None
    } else {
        Some(taken(3))
    };
    let spans = |s: Option<JsValue>,
                 name: &str|
     -> Result<Option<Vec<crate::types::ProvenanceSpan>>, InputError> {
        let Some(s) = s else { return Ok(None) };
        let json = js_sys::JSON::stringify(&s)
            .ok()
            .and_then(|s| s.as_string())
            .unwrap_or_default();
        let bad = |e: String| InputError::type_error(format!(".{name}"), e);
        let v = crate::json::from_str(&json).map_err(|e| bad(e.to_string()))?;
        match v {
            crate::json::Value::Array(a) => a
                .iter()
                .enumerate()
                .map(|(i, x)| {
                    crate::types::ProvenanceSpan::from_json(x).map_err(|e| format!("[{i}]: {e}"))
                })
                .collect::<Result<Vec<_>, _>>()
                .map(Some)
                .map_err(bad),
            other => Err(bad(format!(
                "expected an array of provenance spans, got {}",
                other.kind()
            ))),
        }
    };
    Ok(Datum {
        model_input: mi,
        loss_fn_inputs: inputs,
        model_input_spans: spans(mis, "model_input_spans")?,
        loss_fn_input_spans: spans(lis, "loss_fn_input_spans")?,
    })
}

/// The tensors of a `loss_fn_inputs` object (undefined entries skipped).
fn loss_fn_inputs(lfi: Src, inputs: &mut LossFnInputs) -> Result<(), InputError> {
    let j = js();
    let (lfi, s) = lfi.args();
    // Per entry: the kind of the value, the index of the key in KNOWN_INPUTS or -1.
    let mut small = Out::<16>::new();
    let mut n = read_inputs(&j.memory, lfi, s, &j.known_inputs, small.ptr(), 8) as usize;
    let mut big = Vec::new();
    let entries: &[f64] = if n <= 8 {
        &small.0[..2 * n]
    } else {
        big.resize(2 * n, 0.0);
        let cap = n as u32;
        // (A getter may have added keys since: the first `cap` are read.)
        let m = read_inputs(
            &j.memory,
            lfi,
            s,
            &j.known_inputs,
            big.as_mut_ptr() as u32,
            cap,
        );
        n = m.min(cap) as usize;
        &big[..2 * n]
    };
    let entries: Vec<(u32, f64)> = entries
        .chunks(2)
        .map(|e| {
            // SAFETY: plain reads of f64s JS wrote through the address given out.
            let (k, known) = unsafe {
                (
                    std::ptr::read_volatile(&e[0]),
                    std::ptr::read_volatile(&e[1]),
                )
            };
            (k as u32, known)
        })
        .collect();
    // The values, in order, before any tensor reader reuses other slots.
    for (i, (tk, known)) in entries.into_iter().enumerate() {
        if tk == K_UNDEFINED {
            continue;
        }
        let key = match KNOWN_INPUTS.get(known as usize) {
            Some(name) if known >= 0.0 => (*name).to_string(),
            _ => match taken(16 + 2 * i as u32).as_string() {
                Some(k) => k,
                None => continue,
            },
        };
        let t = tensor_rel(Src::Slot(17 + 2 * i as u32), tk, Some(&key))
            .map_err(|e| pre(e, &format!(".loss_fn_inputs.{key}")))?;
        inputs.insert(key, t);
    }
    Ok(())
}

/// An array of `Datum`s.
///
/// Datums of the usual form (see the batch reader in the JS above) take a fast lane: one
/// JS call reads a block of them, one copies all their arrays, and the checks are made
/// here on the copies. Any other datum, and any usual one that fails a check, is
/// converted by [`datum_rel`], which makes the same checks and reports the error, so both
/// lanes give the same `Datum`s and the same errors.
pub fn data(v: &JsValue) -> Result<Vec<Datum>, JsValue> {
    if !Array::is_array(v) {
        return Err(type_error(
            "data",
            format!("must be an array of Datum objects, got {}", describe(v)),
        ));
    }
    let arr: &Array = v.unchecked_ref();
    let mut out = Vec::with_capacity(arr.length() as usize);
    let result = data_blocks(arr, &mut out);
    release_batch();
    release();
    result.map(|()| out)
}

/// Room for the batch reader's records (f64s): ~500 usual datums per block.
const BATCH_SCRATCH: usize = 8192;

fn data_blocks(arr: &Array, out: &mut Vec<Datum>) -> Result<(), JsValue> {
    let j = js();
    let n = arr.length();
    let mut scratch = vec![0f64; BATCH_SCRATCH];
    let mut from = 0;
    while from < n {
        let got = read_batch(
            &j.memory,
            arr,
            from,
            scratch.as_mut_ptr() as u32,
            BATCH_SCRATCH as u32,
            &j.batch_keys,
        );
        // (The reader always reads at least one datum; should it not, that one goes slowly.)
        let mut lanes = if got == 0 {
            vec![None]
        } else {
            plan_block(&scratch, got as usize)
        };
        let mut table = Vec::new();
        for lane in lanes.iter_mut().flatten() {
            lane.allocate(&mut table);
        }
        let copied = table.is_empty()
            || copy_batch(&j.memory, table.as_ptr() as u32, (table.len() / 4) as u32);
        release_batch();
        for (k, lane) in lanes.into_iter().enumerate() {
            let i = from + k as u32;
            // SAFETY: `finish` is only called when `copy_batch` filled every allocation.
            let fast = lane.filter(|_| copied).and_then(|l| unsafe { l.finish() });
            let d = match fast {
                Some(d) => d,
                None => datum_rel(&arr.get(i))
                    .map_err(|e| input_error(&pre(e, &format!("data[{i}]"))))?,
            };
            out.push(d);
        }
        from += got.max(1);
    }
    Ok(())
}

/// A usual datum as the batch reader saw it; its arrays get room in [`Usual::allocate`]
/// and are checked in [`Usual::finish`].
struct Usual {
    chunks: Vec<Kept<u32>>,
    inputs: Vec<UsualInput>,
}

/// An array the reader kept: its index in the reader's list, its kind and length, and
/// the room made for it.
struct Kept<T> {
    b: u32,
    k: u32,
    n: usize,
    room: Vec<T>,
}

impl<T> Kept<T> {
    fn new(b: u32, k: u32, n: usize) -> Self {
        Kept {
            b,
            k,
            n,
            room: Vec::new(),
        }
    }
    /// Makes room for the `n` elements (`T`s) and asks for them to be copied there.
    fn allocate(&mut self, table: &mut Vec<u32>) {
        self.room = Vec::with_capacity(self.n);
        table.extend([self.b, self.k, self.room.as_mut_ptr() as u32, self.n as u32]);
    }
    /// The copied elements.
    ///
    /// # Safety
    /// `copy_batch` has copied all `n` elements into the room.
    unsafe fn take(mut self) -> Vec<T> {
        unsafe { self.room.set_len(self.n) };
        self.room
    }
}

struct UsualInput {
    /// Index in [`KNOWN_INPUTS`].
    known: usize,
    values: UsualValues,
    /// The shape's one number, or -1 for no shape.
    dim: f64,
}

enum UsualValues {
    /// float32 from a `Float32Array`.
    F32(Kept<f32>),
    /// int64 from an `Int32Array`/`Uint32Array`: copied into the upper half of room for
    /// `n` i64s, then widened in place.
    Wide(Kept<i64>),
}

impl Usual {
    fn allocate(&mut self, table: &mut Vec<u32>) {
        for c in &mut self.chunks {
            c.allocate(table);
        }
        for i in &mut self.inputs {
            match &mut i.values {
                UsualValues::F32(a) => a.allocate(table),
                UsualValues::Wide(a) => {
                    a.allocate(table);
                    // The source goes into u32s n..2n of the room.
                    let at = table.len() - 2;
                    table[at] += 4 * a.n as u32;
                }
            }
        }
    }

    /// The `Datum`, or `None` if a check fails (the slow way then reports it).
    ///
    /// # Safety
    /// `copy_batch` has copied every array into the room made by [`Usual::allocate`].
    unsafe fn finish(self) -> Option<Datum> {
        let mut chunks = Vec::with_capacity(self.chunks.len());
        for c in self.chunks {
            // SAFETY: per this function's contract.
            let tokens = unsafe { c.take() };
            chunks.push(ModelInputChunk::EncodedText { tokens });
        }
        let model_input = ModelInput { chunks };
        // (Int32Array ids below 0 read as u32s above i32::MAX, which this refuses.)
        model_input.validate().ok()?;
        let mut loss_fn_inputs = LossFnInputs::new();
        for i in self.inputs {
            let values = match i.values {
                // SAFETY: per this function's contract.
                UsualValues::F32(a) => TensorValues::Float32(unsafe { a.take() }),
                UsualValues::Wide(a) => {
                    let (k, n) = (a.k, a.n);
                    // SAFETY: per this function's contract (the source is in the upper half).
                    TensorValues::Int64(unsafe { widen_in_place(a.room, k, n) })
                }
            };
            let shape = if i.dim < 0.0 {
                Some(vec![values.len()])
            } else {
                dims_of(vec![i.dim]).ok()?
            };
            let t = TensorData {
                values,
                shape,
                sparse_crow_indices: None,
                sparse_col_indices: None,
            };
            t.validate().ok()?;
            loss_fn_inputs.insert(KNOWN_INPUTS[i.known].to_string(), t);
        }
        Some(Datum {
            model_input,
            loss_fn_inputs,
            model_input_spans: None,
            loss_fn_input_spans: None,
        })
    }
}

/// Reads the records of `count` datums: `None` for those that go the slow way.
fn plan_block(scratch: &[f64], count: usize) -> Vec<Option<Usual>> {
    // SAFETY: plain reads of f64s JS wrote through the address given out; the reader
    // never writes past the capacity it was given.
    let at = |i: usize| unsafe { std::ptr::read_volatile(&scratch[i]) };
    let mut p = 0;
    let mut lanes = Vec::with_capacity(count);
    for _ in 0..count {
        let usual = at(p) == 1.0;
        p += 1;
        if !usual {
            lanes.push(None);
            continue;
        }
        let mut fast = true;
        let nc = at(p) as usize;
        p += 1;
        let mut chunks = Vec::with_capacity(nc);
        for _ in 0..nc {
            let (k, n, b) = (at(p) as u32, at(p + 1), at(p + 2) as u32);
            p += 3;
            fast &= n <= MAX_ELEMENTS as f64 && (k == K_I32 || k == K_U32);
            chunks.push(Kept::new(b, k, n as usize));
        }
        let ni = at(p) as usize;
        p += 1;
        let mut inputs = Vec::with_capacity(ni);
        for _ in 0..ni {
            let (known, k, code, n, dim, b) = (
                at(p) as usize,
                at(p + 1) as u32,
                at(p + 2) as u32,
                at(p + 3),
                at(p + 4),
                at(p + 5) as u32,
            );
            p += 6;
            let dtype = match code {
                1 => Some(DType::Float32),
                2 => Some(DType::Int64),
                0 => KNOWN_INPUTS
                    .get(known)
                    .and_then(|key| loss_input_dtype(key)),
                _ => None,
            };
            fast &= n <= MAX_ELEMENTS as f64 && known < KNOWN_INPUTS.len();
            let values = match (dtype, k) {
                (Some(DType::Float32), K_F32) => UsualValues::F32(Kept::new(b, k, n as usize)),
                (Some(DType::Int64), K_I32 | K_U32) => {
                    UsualValues::Wide(Kept::new(b, k, n as usize))
                }
                _ => {
                    fast = false;
                    continue;
                }
            };
            inputs.push(UsualInput { known, values, dim });
        }
        lanes.push(fast.then_some(Usual { chunks, inputs }));
    }
    lanes
}

// ---------------------------------------------------------------------------------
// Core → JS

/// A `TensorData` as JS (float32 data as `Float32Array`, int64 as `number[]`).
pub fn tensor_to_js(t: &TensorData) -> JsValue {
    let o = Object::new();
    let data: JsValue = match &t.values {
        TensorValues::Float32(v) => Float32Array::from(&v[..]).into(),
        TensorValues::Int64(v) => v
            .iter()
            .map(|&x| JsValue::from_f64(x as f64))
            .collect::<Array>()
            .into(),
    };
    set(&o, "data", &data);
    set(&o, "dtype", &JsValue::from_str(t.dtype().name()));
    set(
        &o,
        "shape",
        &t.dense_shape()
            .iter()
            .map(|&d| JsValue::from_f64(d as f64))
            .collect::<Array>(),
    );
    if let (Some(c), Some(k)) = (&t.sparse_crow_indices, &t.sparse_col_indices) {
        set(
            &o,
            "sparse_crow_indices",
            &c.iter()
                .map(|&x| JsValue::from_f64(x as f64))
                .collect::<Array>(),
        );
        set(
            &o,
            "sparse_col_indices",
            &k.iter()
                .map(|&x| JsValue::from_f64(x as f64))
                .collect::<Array>(),
        );
    }
    o.into()
}

fn metrics_to_js(m: &StrMap<f64>) -> JsValue {
    let o = Object::new();
    for (k, v) in m {
        set(&o, k, &JsValue::from_f64(*v));
    }
    o.into()
}

/// A `ForwardBackwardOutput` as JS.
pub fn forward_backward_to_js(out: &ForwardBackwardOutput) -> JsValue {
    let o = Object::new();
    set(
        &o,
        "loss_fn_output_type",
        &JsValue::from_str(&out.loss_fn_output_type),
    );
    let outputs: Array = out
        .loss_fn_outputs
        .iter()
        .map(|m| {
            let d = Object::new();
            for (k, t) in m {
                set(&d, k, &tensor_to_js(t));
            }
            JsValue::from(d)
        })
        .collect();
    set(&o, "loss_fn_outputs", &outputs);
    set(&o, "metrics", &metrics_to_js(&out.metrics));
    o.into()
}

/// Top-k logprobs as rows of `[token_id, logprob]` pairs, without the trailing empty
/// cells `(0, -99999)`; a row starting with an empty cell is `null` (as in Python).
fn topk_to_js(t: &TopkLogprobs) -> JsValue {
    let k = t.k as usize;
    (0..t.length as usize)
        .map(|r| {
            let cells = &t.token_ids[r * k..r * k + k];
            let lps = &t.logprobs[r * k..r * k + k];
            let empty = |j: usize| cells[j] == 0 && lps[j] == -99999.0;
            if empty(0) {
                return JsValue::NULL;
            }
            let n = (0..k).rposition(|j| !empty(j)).map_or(0, |j| j + 1);
            (0..n)
                .map(|j| {
                    JsValue::from(Array::of2(
                        &JsValue::from(cells[j]),
                        &JsValue::from_f64(f64::from(lps[j])),
                    ))
                })
                .collect::<Array>()
                .into()
        })
        .collect::<Array>()
        .into()
}

fn logprob_list(v: &[f32]) -> JsValue {
    v.iter()
        .map(|&x| {
            if x.is_nan() {
                JsValue::NULL
            } else {
                JsValue::from_f64(f64::from(x))
            }
        })
        .collect::<Array>()
        .into()
}

/// A `SampleResponse` as JS (token ids as `Int32Array`, logprobs as `Float32Array`).
pub fn sample_response_to_js(r: &SampleResponse) -> JsValue {
    let seqs: Array = r
        .sequences
        .iter()
        .map(|s| {
            sample_sequence(
                &Int32Array::from(&s.tokens[..]),
                &s.logprobs
                    .as_ref()
                    .map_or(JsValue::NULL, |l| Float32Array::from(&l[..]).into()),
                s.stop_reason == crate::proto::StopReason::Stop,
                &s.sequence_id,
                &s.topk_logprobs.as_ref().map_or(JsValue::NULL, topk_to_js),
            )
        })
        .collect();
    let alt = r.prompt_alt_tokens.as_ref().map_or(JsValue::NULL, |a| {
        let ao = Object::new();
        set(&ao, "tokens", &tensor_to_js(&a.tokens));
        set(&ao, "logprobs", &tensor_to_js(&a.logprobs));
        ao.into()
    });
    sample_response(
        &seqs,
        &r.prompt_logprobs
            .as_ref()
            .map_or(JsValue::NULL, |l| logprob_list(l)),
        &r.topk_prompt_logprobs
            .as_ref()
            .map_or(JsValue::NULL, topk_to_js),
        r.prompt_cache_hit_tokens as f64,
        &r.target_prompt_logprobs
            .as_ref()
            .map_or(JsValue::NULL, tensor_to_js),
        &alt,
    )
}

/// A `ModelInput` as JS (tokens as `Uint32Array`).
pub fn model_input_to_js(m: &ModelInput) -> JsValue {
    let chunks: Array = m
        .chunks
        .iter()
        .map(|c| match c {
            ModelInputChunk::EncodedText { tokens } => {
                let o = Object::new();
                set(&o, "type", &"encoded_text".into());
                set(&o, "tokens", &Uint32Array::from(&tokens[..]));
                JsValue::from(o)
            }
            other => {
                let mut s = String::new();
                other.write_json(&mut s);
                js_sys::JSON::parse(&s).unwrap_or(JsValue::NULL)
            }
        })
        .collect();
    let o = Object::new();
    set(&o, "chunks", &chunks);
    o.into()
}

/// A `Datum` as JS (typed arrays for tokens and float data).
pub fn datum_to_js(d: &Datum) -> JsValue {
    let o = Object::new();
    set(&o, "model_input", &model_input_to_js(&d.model_input));
    let inputs = Object::new();
    for (k, t) in &d.loss_fn_inputs {
        let js = tensor_to_js(t);
        if let TensorValues::Int64(v) = &t.values {
            if v.iter().all(|&x| i32::try_from(x).is_ok()) {
                set(
                    &js,
                    "data",
                    &Int32Array::from(&v.iter().map(|&x| x as i32).collect::<Vec<_>>()[..]),
                );
            }
        }
        set(&inputs, k, &js);
    }
    set(&o, "loss_fn_inputs", &inputs);
    o.into()
}

// ---------------------------------------------------------------------------------
// Parameter objects (wire field names)

/// `AdamParams` from JS (`{ learning_rate, beta1, beta2, eps, weight_decay, grad_clip_norm }`,
/// each optional), errors naming the field.
pub fn adam_params(v: &JsValue) -> Result<crate::types::AdamParams, JsValue> {
    let o = Opts::new(
        v,
        "AdamParams",
        &[
            "learning_rate",
            "beta1",
            "beta2",
            "eps",
            "weight_decay",
            "grad_clip_norm",
        ],
    )?;
    let mut p = crate::types::AdamParams::default();
    for (k, slot) in [
        ("learning_rate", &mut p.learning_rate),
        ("beta1", &mut p.beta1),
        ("beta2", &mut p.beta2),
        ("eps", &mut p.eps),
        ("weight_decay", &mut p.weight_decay),
        ("grad_clip_norm", &mut p.grad_clip_norm),
    ] {
        if let Some(x) = o.number(k)? {
            *slot = x;
        }
    }
    p.validate().map_err(|e| input_error(&e))?;
    Ok(p)
}

/// `SamplingParams` from JS (`{ max_tokens, seed, stop, temperature, top_k, top_p }`).
pub fn sampling_params(v: &JsValue) -> Result<crate::types::SamplingParams, JsValue> {
    use crate::types::{SamplingParams, StopCondition};
    let o = Opts::new(
        v,
        "sampling_params",
        &[
            "max_tokens",
            "seed",
            "stop",
            "temperature",
            "top_k",
            "top_p",
        ],
    )?;
    let mut p = SamplingParams {
        max_tokens: o.uint("max_tokens", u32::MAX as u64)?.map(|n| n as u32),
        seed: o.uint("seed", u64::MAX)?,
        ..Default::default()
    };
    if let Some(t) = o.number("temperature")? {
        p.temperature = t;
    }
    if let Some(t) = o.number("top_p")? {
        p.top_p = t;
    }
    if let Some(k) = o.number("top_k")? {
        if k.fract() != 0.0 {
            return Err(type_error(
                "top_k",
                format!("must be an integer, got {}", fmt_num(k)),
            ));
        }
        p.top_k = k as i64;
    }
    let stop = o.get("stop");
    p.stop = if stop.is_undefined() || stop.is_null() {
        None
    } else if let Some(s) = stop.as_string() {
        Some(StopCondition::String(s))
    } else if Array::is_array(&stop) {
        let arr: &Array = stop.unchecked_ref();
        if arr.length() == 0 {
            Some(StopCondition::Tokens(vec![]))
        } else if arr.get(0).is_string() {
            let mut out = Vec::with_capacity(arr.length() as usize);
            for (i, x) in arr.iter().enumerate() {
                out.push(x.as_string().ok_or_else(|| {
                    type_error(
                        &format!("stop[{i}]"),
                        format!(
                            "stop strings and token ids cannot be mixed, got {}",
                            describe(&x)
                        ),
                    )
                })?);
            }
            Some(StopCondition::Strings(out))
        } else {
            Some(StopCondition::Tokens(
                tokens(&stop, "stop").map_err(|e| input_error(&e))?,
            ))
        }
    } else {
        return Err(type_error(
            "stop",
            format!(
                "must be a string, an array of strings or an array of token ids, got {}",
                describe(&stop)
            ),
        ));
    };
    p.validate().map_err(|e| input_error(&e))?;
    Ok(p)
}
