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

mod batch;
mod data;
mod declare;
mod numbers;
mod opts;
mod output;
mod shapes;

pub use batch::*;
pub use data::*;
pub(crate) use declare::*;
pub use numbers::*;
pub use opts::*;
pub use output::*;

use crate::map::StrMap;

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

#[wasm_bindgen(module = "/src/wasm/js/convert.js")]
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
    /// Starts a conversion frame (see [`Frame`]).
    fn enter();
    /// Ends the current conversion frame, dropping the values its readers kept.
    fn leave();
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

const DATUM_KEYS: &[&str] = shapes::Datum::KEYS;
const MODEL_INPUT_KEYS: &[&str] = shapes::ModelInput::KEYS;
const ENCODED_TEXT_KEYS: &[&str] = shapes::EncodedTextChunk::KEYS;
const TENSOR_KEYS: &[&str] = shapes::TensorData::KEYS;
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
