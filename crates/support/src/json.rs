//! JSON for the wire: a small value type, a parser and a compact writer.
//!
//! The client core speaks JSON with the server (request bodies, responses, sampler
//! handles). This module is all of it: no derive machinery, so each wire type reads and
//! writes itself in a few lines, and the whole of JSON costs the wasm module a few KB
//! (serde and serde_json cost the lite module about 20 KB gzip; issue 8's size budget).
//!
//! It keeps serde_json's observable behaviour, so bodies stay byte-for-byte what they
//! were: objects keep insertion order (a repeated key replaces the value in place),
//! integers stay exact as `u64`/`i64`, floats are written shortest-round-trip (the
//! digits serde_json writes, `1.0` for whole floats, `null` for NaN and infinities),
//! strings escape `"`, `\` and control characters only, and numbers parse as serde_json
//! parses them, except that floats are correctly rounded (as Python and serde_json's
//! `float_roundtrip` read them; its default can be an ulp off) ([`crate::float`] does the
//! exact decimal work).
//!
//! `json!({ "model_id": m, "seq_id": 3 })` builds a body, `from_slice` parses one, and
//! `Value` indexes like serde_json's (`v["a"][2].as_f64()`); the module's tests show
//! each.

use std::fmt;

use crate::text;

/// A JSON number: an exact integer when it was written as one, else a float.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Number {
    /// A non-negative integer.
    PosInt(u64),
    /// A negative integer.
    NegInt(i64),
    /// Any other number (finite when parsed; NaN and infinities are written `null`).
    Float(f64),
}

/// A JSON value.
#[derive(Clone, Debug, PartialEq, Default)]
pub enum Value {
    /// `null`
    #[default]
    Null,
    /// `true` / `false`
    Bool(bool),
    /// A number.
    Number(Number),
    /// A string.
    String(String),
    /// An array.
    Array(Vec<Value>),
    /// An object (insertion-ordered).
    Object(Map),
}

/// A JSON object: keys in insertion order; inserting a present key replaces its value
/// in place (as serde_json's `preserve_order` map and Python's `dict`).
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Map(Vec<(String, Value)>);

impl Map {
    /// An empty object.
    pub fn new() -> Self {
        Map(Vec::new())
    }
    /// The value of `key`.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.0.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }
    /// The value of `key`, mutably.
    pub fn get_mut(&mut self, key: &str) -> Option<&mut Value> {
        self.0.iter_mut().find(|(k, _)| k == key).map(|(_, v)| v)
    }
    /// Whether `key` is present.
    pub fn contains_key(&self, key: &str) -> bool {
        self.get(key).is_some()
    }
    /// Sets `key` (in place if present, else at the end); returns the old value.
    pub fn insert(&mut self, key: impl Into<String>, value: Value) -> Option<Value> {
        let key = key.into();
        match self.get_mut(&key) {
            Some(slot) => Some(std::mem::replace(slot, value)),
            None => {
                self.0.push((key, value));
                None
            }
        }
    }
    /// The value of `key`, inserting `f()` first if absent.
    pub fn get_or_insert_with(&mut self, key: &str, f: impl FnOnce() -> Value) -> &mut Value {
        let i = match self.0.iter().position(|(k, _)| k == key) {
            Some(i) => i,
            None => {
                self.0.push((key.to_string(), f()));
                self.0.len() - 1
            }
        };
        &mut self.0[i].1
    }
    /// Moves every entry of `other` into this map (as [`insert`](Self::insert)).
    pub fn append(&mut self, other: &mut Map) {
        for (k, v) in std::mem::take(&mut other.0) {
            self.insert(k, v);
        }
    }
    /// Removes `key`, keeping the order of the others.
    pub fn remove(&mut self, key: &str) -> Option<Value> {
        let i = self.0.iter().position(|(k, _)| k == key)?;
        Some(self.0.remove(i).1)
    }
    /// Number of keys.
    pub fn len(&self) -> usize {
        self.0.len()
    }
    /// Whether there are no keys.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
    /// The entries in order.
    pub fn iter(&self) -> impl Iterator<Item = (&String, &Value)> {
        self.0.iter().map(|(k, v)| (k, v))
    }
    /// The entries in order, values mutable.
    pub fn iter_mut(&mut self) -> impl Iterator<Item = (&String, &mut Value)> {
        self.0.iter_mut().map(|(k, v)| (&*k, v))
    }
    /// The keys in order.
    pub fn keys(&self) -> impl Iterator<Item = &String> {
        self.0.iter().map(|(k, _)| k)
    }
}

impl IntoIterator for Map {
    type Item = (String, Value);
    type IntoIter = std::vec::IntoIter<(String, Value)>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.into_iter()
    }
}

impl<'a> IntoIterator for &'a Map {
    type Item = (&'a String, &'a Value);
    type IntoIter = std::iter::Map<
        std::slice::Iter<'a, (String, Value)>,
        fn(&'a (String, Value)) -> (&'a String, &'a Value),
    >;
    fn into_iter(self) -> Self::IntoIter {
        self.0.iter().map(|(k, v)| (k, v))
    }
}

impl<K: Into<String>> FromIterator<(K, Value)> for Map {
    fn from_iter<I: IntoIterator<Item = (K, Value)>>(iter: I) -> Self {
        let mut m = Map::new();
        for (k, v) in iter {
            m.insert(k, v);
        }
        m
    }
}

static NULL: Value = Value::Null;

impl Value {
    /// The member `key` of an object (`None` for other values).
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.as_object()?.get(key)
    }
    /// The string, if this is one.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::String(s) => Some(s),
            _ => None,
        }
    }
    /// The boolean, if this is one.
    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Value::Bool(b) => Some(*b),
            _ => None,
        }
    }
    /// A non-negative integer (not a float, even a whole one).
    pub fn as_u64(&self) -> Option<u64> {
        match self {
            Value::Number(Number::PosInt(n)) => Some(*n),
            _ => None,
        }
    }
    /// An integer in `i64` range (not a float).
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Value::Number(Number::PosInt(n)) => i64::try_from(*n).ok(),
            Value::Number(Number::NegInt(n)) => Some(*n),
            _ => None,
        }
    }
    /// Any number, as a float.
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Value::Number(Number::PosInt(n)) => Some(*n as f64),
            Value::Number(Number::NegInt(n)) => Some(*n as f64),
            Value::Number(Number::Float(f)) => Some(*f),
            _ => None,
        }
    }
    /// The elements, if this is an array.
    pub fn as_array(&self) -> Option<&Vec<Value>> {
        match self {
            Value::Array(a) => Some(a),
            _ => None,
        }
    }
    /// The object, if this is one.
    pub fn as_object(&self) -> Option<&Map> {
        match self {
            Value::Object(m) => Some(m),
            _ => None,
        }
    }
    /// The object, mutably, if this is one.
    pub fn as_object_mut(&mut self) -> Option<&mut Map> {
        match self {
            Value::Object(m) => Some(m),
            _ => None,
        }
    }
    /// Whether this is `null`.
    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }
    /// Whether this is a string.
    pub fn is_string(&self) -> bool {
        matches!(self, Value::String(_))
    }
    /// Whether this is a number.
    pub fn is_number(&self) -> bool {
        matches!(self, Value::Number(_))
    }
    /// Whether this is an object.
    pub fn is_object(&self) -> bool {
        matches!(self, Value::Object(_))
    }
    /// What kind of value this is, for error messages (`a string`, `an object`, …).
    pub fn kind(&self) -> &'static str {
        match self {
            Value::Null => "null",
            Value::Bool(_) => "a boolean",
            Value::Number(_) => "a number",
            Value::String(_) => "a string",
            Value::Array(_) => "an array",
            Value::Object(_) => "an object",
        }
    }
    /// The compact JSON text of this value.
    pub fn to_vec(&self) -> Vec<u8> {
        let mut s = String::new();
        self.write(&mut s);
        s.into_bytes()
    }
    /// Appends the compact JSON text of this value to `out`.
    pub fn write(&self, out: &mut String) {
        match self {
            Value::Null => out.push_str("null"),
            Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Value::Number(Number::PosInt(n)) => write_u64(out, *n),
            Value::Number(Number::NegInt(n)) => write_i64(out, *n),
            Value::Number(Number::Float(f)) => write_f64(out, *f),
            Value::String(s) => write_str(out, s),
            Value::Array(a) => {
                out.push('[');
                for (i, v) in a.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    v.write(out);
                }
                out.push(']');
            }
            Value::Object(m) => {
                out.push('{');
                for (i, (k, v)) in m.0.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    write_str(out, k);
                    out.push(':');
                    v.write(out);
                }
                out.push('}');
            }
        }
    }
}

/// Compact JSON text (what is sent).
impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut s = String::new();
        self.write(&mut s);
        f.write_str(&s)
    }
}

impl std::ops::Index<&str> for Value {
    type Output = Value;
    /// The member `key`, or `null` (for a missing key or a value that is not an object).
    fn index(&self, key: &str) -> &Value {
        self.get(key).unwrap_or(&NULL)
    }
}

impl std::ops::Index<usize> for Value {
    type Output = Value;
    /// Element `i`, or `null`.
    fn index(&self, i: usize) -> &Value {
        self.as_array().and_then(|a| a.get(i)).unwrap_or(&NULL)
    }
}

impl std::ops::IndexMut<&str> for Value {
    /// The member `key`, inserted as `null` if absent; `null` itself becomes an empty
    /// object first. Panics on other non-objects (a bug in the caller's body building).
    fn index_mut(&mut self, key: &str) -> &mut Value {
        if self.is_null() {
            *self = Value::Object(Map::new());
        }
        match self {
            Value::Object(m) => m.get_or_insert_with(key, || Value::Null),
            _ => panic!("json: cannot set a member of a non-object"),
        }
    }
}

// ---------------------------------------------------------------------------------
// Conversions into values

impl PartialEq<bool> for Value {
    fn eq(&self, other: &bool) -> bool {
        self.as_bool() == Some(*other)
    }
}
impl PartialEq<&str> for Value {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == Some(*other)
    }
}
impl PartialEq<String> for Value {
    fn eq(&self, other: &String) -> bool {
        self.as_str() == Some(other.as_str())
    }
}
impl PartialEq<u64> for Value {
    fn eq(&self, other: &u64) -> bool {
        self.as_u64() == Some(*other)
    }
}
impl PartialEq<i64> for Value {
    fn eq(&self, other: &i64) -> bool {
        self.as_i64() == Some(*other)
    }
}
impl PartialEq<i32> for Value {
    fn eq(&self, other: &i32) -> bool {
        self.as_i64() == Some(i64::from(*other))
    }
}
impl PartialEq<u32> for Value {
    fn eq(&self, other: &u32) -> bool {
        self.as_u64() == Some(u64::from(*other))
    }
}
impl PartialEq<f64> for Value {
    fn eq(&self, other: &f64) -> bool {
        self.as_f64() == Some(*other)
    }
}

impl From<bool> for Value {
    fn from(b: bool) -> Self {
        Value::Bool(b)
    }
}
impl From<&str> for Value {
    fn from(s: &str) -> Self {
        Value::String(s.to_string())
    }
}
impl From<String> for Value {
    fn from(s: String) -> Self {
        Value::String(s)
    }
}
impl From<&String> for Value {
    fn from(s: &String) -> Self {
        Value::String(s.clone())
    }
}
impl From<u64> for Value {
    fn from(n: u64) -> Self {
        Value::Number(Number::PosInt(n))
    }
}
impl From<i64> for Value {
    fn from(n: i64) -> Self {
        Value::Number(if n < 0 {
            Number::NegInt(n)
        } else {
            Number::PosInt(n as u64)
        })
    }
}
macro_rules! from_small_int {
    ($($u:ty => $via:ty),*) => {$(
        impl From<$u> for Value {
            fn from(n: $u) -> Self {
                Value::from(n as $via)
            }
        }
    )*};
}
from_small_int!(u8 => u64, u16 => u64, u32 => u64, usize => u64, i32 => i64);
impl From<f64> for Value {
    fn from(f: f64) -> Self {
        Value::Number(Number::Float(f))
    }
}
impl From<Map> for Value {
    fn from(m: Map) -> Self {
        Value::Object(m)
    }
}
impl From<&Value> for Value {
    fn from(v: &Value) -> Self {
        v.clone()
    }
}
impl<T: Into<Value>> From<Option<T>> for Value {
    fn from(o: Option<T>) -> Self {
        o.map_or(Value::Null, Into::into)
    }
}
impl<T: Into<Value>> From<Vec<T>> for Value {
    fn from(v: Vec<T>) -> Self {
        Value::Array(v.into_iter().map(Into::into).collect())
    }
}
impl<T: Clone + Into<Value>> From<&[T]> for Value {
    fn from(v: &[T]) -> Self {
        Value::Array(v.iter().cloned().map(Into::into).collect())
    }
}
impl From<&crate::map::StrMap<String>> for Value {
    fn from(m: &crate::map::StrMap<String>) -> Self {
        Value::Object(m.iter().map(|(k, v)| (k.clone(), Value::from(v))).collect())
    }
}
impl<T: Clone + Into<Value>> From<&Vec<T>> for Value {
    fn from(v: &Vec<T>) -> Self {
        Value::from(v.as_slice())
    }
}

/// What `json!` accepts as a value: anything that reads as JSON by reference (strings,
/// numbers, booleans, options, vectors and slices of these, values and maps).
pub trait ToJson {
    /// This as a JSON value.
    fn to_json_value(&self) -> Value;
}

macro_rules! to_json_via_from {
    ($($t:ty),*) => {$(
        impl ToJson for $t {
            fn to_json_value(&self) -> Value {
                Value::from(self.clone())
            }
        }
    )*};
}
to_json_via_from!(bool, u8, u16, u32, u64, usize, i32, i64, f64, String, Value, Map);

impl ToJson for str {
    fn to_json_value(&self) -> Value {
        Value::String(self.to_string())
    }
}
impl<T: ToJson + ?Sized> ToJson for &T {
    fn to_json_value(&self) -> Value {
        (**self).to_json_value()
    }
}
impl<T: ToJson> ToJson for Option<T> {
    fn to_json_value(&self) -> Value {
        self.as_ref().map_or(Value::Null, ToJson::to_json_value)
    }
}
impl<T: ToJson> ToJson for [T] {
    fn to_json_value(&self) -> Value {
        Value::Array(self.iter().map(ToJson::to_json_value).collect())
    }
}
impl<T: ToJson> ToJson for Vec<T> {
    fn to_json_value(&self) -> Value {
        self.as_slice().to_json_value()
    }
}
impl ToJson for crate::map::StrMap<String> {
    fn to_json_value(&self) -> Value {
        Value::from(self)
    }
}

/// Builds a [`Value`] from a JSON-like literal: `json!({ "k": expr, "o": { … }, "a": [ … ] })`.
/// Keys are string literals; values are nested literals, `null`, or expressions read by
/// reference through [`ToJson`] (as serde_json's `json!` does).
#[macro_export]
macro_rules! json {
    (null) => { $crate::json::Value::Null };
    ({ $($body:tt)* }) => {{
        #[allow(unused_mut)]
        let mut m = $crate::json::Map::new();
        $crate::__json_object!(m; $($body)*);
        $crate::json::Value::Object(m)
    }};
    ([ $($body:tt)* ]) => {{
        #[allow(unused_mut)]
        let mut a: ::std::vec::Vec<$crate::json::Value> = ::std::vec::Vec::new();
        $crate::__json_array!(a; $($body)*);
        $crate::json::Value::Array(a)
    }};
    ($e:expr) => { $crate::json::ToJson::to_json_value(&$e) };
}

/// `json!`'s object body, one `key: value` at a time.
#[macro_export]
#[doc(hidden)]
macro_rules! __json_object {
    ($m:ident;) => {};
    ($m:ident; $k:literal : null $(, $($rest:tt)*)?) => {
        $m.insert($k, $crate::json::Value::Null);
        $crate::__json_object!($m; $($($rest)*)?);
    };
    ($m:ident; $k:literal : { $($v:tt)* } $(, $($rest:tt)*)?) => {
        $m.insert($k, $crate::json!({ $($v)* }));
        $crate::__json_object!($m; $($($rest)*)?);
    };
    ($m:ident; $k:literal : [ $($v:tt)* ] $(, $($rest:tt)*)?) => {
        $m.insert($k, $crate::json!([ $($v)* ]));
        $crate::__json_object!($m; $($($rest)*)?);
    };
    ($m:ident; $k:literal : $v:expr $(, $($rest:tt)*)?) => {
        $m.insert($k, $crate::json::ToJson::to_json_value(&$v));
        $crate::__json_object!($m; $($($rest)*)?);
    };
}

/// `json!`'s array body, one element at a time.
#[macro_export]
#[doc(hidden)]
macro_rules! __json_array {
    ($a:ident;) => {};
    ($a:ident; null $(, $($rest:tt)*)?) => {
        $a.push($crate::json::Value::Null);
        $crate::__json_array!($a; $($($rest)*)?);
    };
    ($a:ident; { $($v:tt)* } $(, $($rest:tt)*)?) => {
        $a.push($crate::json!({ $($v)* }));
        $crate::__json_array!($a; $($($rest)*)?);
    };
    ($a:ident; [ $($v:tt)* ] $(, $($rest:tt)*)?) => {
        $a.push($crate::json!([ $($v)* ]));
        $crate::__json_array!($a; $($($rest)*)?);
    };
    ($a:ident; $v:expr $(, $($rest:tt)*)?) => {
        $a.push($crate::json::ToJson::to_json_value(&$v));
        $crate::__json_array!($a; $($($rest)*)?);
    };
}

// ---------------------------------------------------------------------------------
// Writing

/// Appends `s` as a JSON string (escaping `"`, `\` and control characters, as
/// serde_json does).
pub fn write_str(out: &mut String, s: &str) {
    out.push('"');
    let bytes = s.as_bytes();
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let esc: &str = match b {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            b'\n' => "\\n",
            b'\r' => "\\r",
            b'\t' => "\\t",
            0x08 => "\\b",
            0x0c => "\\f",
            0..=0x1f => "",
            _ => continue,
        };
        out.push_str(text::slice(s, start..i));
        if esc.is_empty() {
            const HEX: &[u8; 16] = b"0123456789abcdef";
            out.push_str("\\u00");
            out.push(HEX[usize::from(b >> 4)] as char);
            out.push(HEX[usize::from(b & 15)] as char);
        } else {
            out.push_str(esc);
        }
        start = i + 1;
    }
    out.push_str(text::slice(s, start..));
    out.push('"');
}

/// `s` as a JSON string literal (`"a\"b"`), for quoting values in messages.
pub fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    write_str(&mut out, s);
    out
}

/// Appends an unsigned integer.
pub fn write_u64(out: &mut String, mut n: u64) {
    let mut buf = [0u8; 20];
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    // Only ASCII digits were written.
    out.push_str(std::str::from_utf8(&buf[i..]).unwrap_or_default());
}

/// Appends a signed integer.
pub fn write_i64(out: &mut String, n: i64) {
    if n < 0 {
        out.push('-');
    }
    write_u64(out, n.unsigned_abs());
}

/// Appends a float: shortest round-trip digits (`1.0`, `0.0001`, `1e-7`, `1e+21`, as
/// serde_json writes them), `null` if not finite.
pub fn write_f64(out: &mut String, f: f64) {
    write_float(out, f, false);
}

/// Appends a single-precision float with its own shortest digits (`0.1`, not the
/// `f64` widening's `0.10000000149011612`), `null` if not finite.
pub fn write_f32(out: &mut String, f: f32) {
    write_float(out, f64::from(f), true);
}

/// serde_json's float text: fixed notation for decimal exponents in -5..=15 (-6..=12
/// for `f32`) with `.0` on whole numbers, else `d.ddde±x`.
fn write_float(out: &mut String, f: f64, single: bool) {
    if !f.is_finite() {
        out.push_str("null");
        return;
    }
    if f.is_sign_negative() {
        out.push('-');
    }
    if f == 0.0 {
        out.push_str("0.0");
        return;
    }
    let (d, point) = digits(f, single);
    let fixed = if single { -6..=12 } else { -5..=15 };
    place(out, &d, point, fixed, ".0", 1);
}

/// [`crate::float::shortest`] of `|x|` as text, and its point position.
fn digits(x: f64, single: bool) -> (String, i32) {
    let (d, point) = crate::float::shortest(x.abs(), single);
    (d.iter().map(|&c| char::from(b'0' + c)).collect(), point)
}

fn push_zeros(s: &mut String, n: i32) {
    for _ in 0..n.max(0) {
        s.push('0');
    }
}

/// Writes the digits `d` of a number whose point comes after `n` of them: in fixed
/// notation when its exponent (`n - 1`) is in `fixed`, a whole number followed by
/// `whole` (`".0"` or nothing); otherwise as `d.ddde±x` with at least `exp_digits`
/// exponent digits. The three printers (serde_json's, JavaScript's, Python's) differ
/// only in these parameters and in their special values.
fn place(
    out: &mut String,
    d: &str,
    n: i32,
    fixed: std::ops::RangeInclusive<i32>,
    whole: &str,
    exp_digits: u32,
) {
    let k = d.len() as i32;
    if fixed.contains(&(n - 1)) {
        if n >= k {
            out.push_str(d);
            push_zeros(out, n - k);
            out.push_str(whole);
        } else if n > 0 {
            out.push_str(text::slice(d, ..n as usize));
            out.push('.');
            out.push_str(text::slice(d, n as usize..));
        } else {
            out.push_str("0.");
            push_zeros(out, -n);
            out.push_str(d);
        }
    } else {
        out.push_str(text::slice(d, ..1));
        if k > 1 {
            out.push('.');
            out.push_str(text::slice(d, 1..));
        }
        let e = n - 1;
        out.push_str(if e < 0 { "e-" } else { "e+" });
        if exp_digits > 1 && e.unsigned_abs() < 10 {
            out.push('0');
        }
        write_u64(out, u64::from(e.unsigned_abs()));
    }
}

/// A number as JavaScript's `String(x)` prints it (`NaN`, `-Infinity`, `0.001`, `1e-7`,
/// `1e+21`, `123`), for messages about values that came from JS.
pub fn fmt_js(x: f64) -> String {
    if x.is_nan() {
        return "NaN".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "Infinity" } else { "-Infinity" }.into();
    }
    if x == 0.0 {
        return "0".into();
    }
    let (d, n) = digits(x, false);
    let mut s = String::new();
    if x < 0.0 {
        s.push('-');
    }
    // Fixed from 1e-6 to below 1e21, whole numbers without a point.
    place(&mut s, &d, n, -6..=20, "", 1);
    s
}

/// A number as Python's `str(x)` prints a float (`0.5`, `3.0`, `1e-05`, `1e+16`, `nan`),
/// for values the Python SDK sends as text (headers).
pub fn fmt_py(x: f64) -> String {
    if x.is_nan() {
        return "nan".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf" } else { "-inf" }.into();
    }
    let mut s = String::new();
    if x.is_sign_negative() {
        s.push('-');
    }
    if x == 0.0 {
        s.push_str("0.0");
        return s;
    }
    let (d, n) = digits(x, false);
    // repr's rule: fixed from 1e-4 to below 1e16, whole numbers with `.0`, exponents of
    // at least two digits.
    place(&mut s, &d, n, -4..=15, ".0", 2);
    s
}

/// Writes a JSON object field by field, for wire types that write themselves.
pub struct ObjectWriter<'a> {
    out: &'a mut String,
    first: bool,
}

impl<'a> ObjectWriter<'a> {
    /// Opens an object in `out`.
    pub fn new(out: &'a mut String) -> Self {
        out.push('{');
        ObjectWriter { out, first: true }
    }
    /// Writes `"key":` and returns the buffer for the value.
    pub fn key(&mut self, key: &str) -> &mut String {
        if !self.first {
            self.out.push(',');
        }
        self.first = false;
        write_str(self.out, key);
        self.out.push(':');
        self.out
    }
    /// A string field.
    pub fn str(&mut self, key: &str, v: &str) -> &mut Self {
        write_str(self.key(key), v);
        self
    }
    /// An unsigned integer field.
    pub fn u64(&mut self, key: &str, v: u64) -> &mut Self {
        write_u64(self.key(key), v);
        self
    }
    /// A signed integer field.
    pub fn i64(&mut self, key: &str, v: i64) -> &mut Self {
        write_i64(self.key(key), v);
        self
    }
    /// A float field.
    pub fn f64(&mut self, key: &str, v: f64) -> &mut Self {
        write_f64(self.key(key), v);
        self
    }
    /// A boolean field.
    pub fn bool(&mut self, key: &str, v: bool) -> &mut Self {
        self.key(key).push_str(if v { "true" } else { "false" });
        self
    }
    /// A field holding a value.
    pub fn value(&mut self, key: &str, v: &Value) -> &mut Self {
        v.write(self.key(key));
        self
    }
    /// Closes the object.
    pub fn end(self) {
        self.out.push('}');
    }
}

/// Appends an array of unsigned integers.
pub fn write_u32s(out: &mut String, v: &[u32]) {
    out.push('[');
    for (i, &x) in v.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        write_u64(out, u64::from(x));
    }
    out.push(']');
}

// ---------------------------------------------------------------------------------
// Parsing

/// Why a text is not JSON, with the position (`expected value at line 1 column 3`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    what: &'static str,
    line: usize,
    column: usize,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} at line {} column {}",
            self.what, self.line, self.column
        )
    }
}

impl std::error::Error for Error {}

/// JSON text as serde_json's value (object keys in order where serde_json keeps them), every
/// float correctly rounded as Python's `json.loads` reads it: serde_json's own default
/// parser can be one unit in the last place off (`999999999999999.9` read as `1e15`), which
/// a chat template's `tojson` or a renderer's `json.dumps` then prints as Python does not;
/// its exact mode costs the full wasm module 8.6 KB gzip.
#[cfg(feature = "serde_json")]
pub fn to_serde(text: &str) -> Result<serde_json::Value, Error> {
    fn convert(v: &Value) -> serde_json::Value {
        match v {
            Value::Null => serde_json::Value::Null,
            Value::Bool(b) => (*b).into(),
            Value::Number(Number::PosInt(n)) => (*n).into(),
            Value::Number(Number::NegInt(n)) => (*n).into(),
            Value::Number(Number::Float(f)) => (*f).into(),
            Value::String(s) => s.as_str().into(),
            Value::Array(items) => items.iter().map(convert).collect(),
            Value::Object(m) => m.iter().map(|(k, v)| (k.clone(), convert(v))).collect(),
        }
    }
    from_str(text).map(|v| convert(&v))
}

/// Parses JSON text (any value at the top; surrounding whitespace allowed).
pub fn from_slice(text: &[u8]) -> Result<Value, Error> {
    let mut p = Parser {
        s: text,
        i: 0,
        depth: 0,
    };
    let v = p.value()?;
    p.ws();
    if p.i < p.s.len() {
        return Err(p.err("trailing characters"));
    }
    Ok(v)
}

/// Parses JSON text.
// Used by the JS skin (src/wasm) and tests only.
#[cfg_attr(not(any(target_arch = "wasm32", test)), allow(dead_code))]
pub fn from_str(text: &str) -> Result<Value, Error> {
    from_slice(text.as_bytes())
}

/// Nesting this deep is refused (as serde_json's default recursion limit).
const MAX_DEPTH: u32 = 128;

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
    depth: u32,
}

impl Parser<'_> {
    fn err(&self, what: &'static str) -> Error {
        // 1-based, at the character where parsing stopped (after the last one at the end).
        let i = self.i.min(self.s.len());
        let upto = &self.s[..i];
        let line = 1 + upto.iter().filter(|&&b| b == b'\n').count();
        let line_start = upto.iter().rposition(|&b| b == b'\n').map_or(0, |p| p + 1);
        let column = i - line_start + usize::from(i < self.s.len());
        Error { what, line, column }
    }
    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }
    fn ws(&mut self) {
        while let Some(b' ' | b'\n' | b'\t' | b'\r') = self.peek() {
            self.i += 1;
        }
    }
    fn eat(&mut self, lit: &[u8]) -> Result<(), Error> {
        for &b in lit {
            match self.peek() {
                Some(c) if c == b => self.i += 1,
                Some(_) => return Err(self.err("expected ident")),
                None => return Err(self.err("EOF while parsing a value")),
            }
        }
        Ok(())
    }

    fn value(&mut self) -> Result<Value, Error> {
        self.ws();
        let Some(b) = self.peek() else {
            return Err(self.err("EOF while parsing a value"));
        };
        match b {
            b'n' => self.eat(b"null").map(|_| Value::Null),
            b't' => self.eat(b"true").map(|_| Value::Bool(true)),
            b'f' => self.eat(b"false").map(|_| Value::Bool(false)),
            b'"' => self.string().map(Value::String),
            b'-' | b'0'..=b'9' => self.number().map(Value::Number),
            b'[' | b'{' => {
                self.depth += 1;
                if self.depth >= MAX_DEPTH {
                    return Err(self.err("recursion limit exceeded"));
                }
                self.i += 1;
                let v = if b == b'[' {
                    self.array()
                } else {
                    self.object()
                };
                self.depth -= 1;
                v
            }
            _ => Err(self.err("expected value")),
        }
    }

    fn array(&mut self) -> Result<Value, Error> {
        let mut a = Vec::new();
        self.ws();
        if self.peek() == Some(b']') {
            self.i += 1;
            return Ok(Value::Array(a));
        }
        loop {
            a.push(self.value()?);
            self.ws();
            match self.peek() {
                Some(b',') => self.i += 1,
                Some(b']') => {
                    self.i += 1;
                    return Ok(Value::Array(a));
                }
                Some(_) => return Err(self.err("expected `,` or `]`")),
                None => return Err(self.err("EOF while parsing a list")),
            }
            self.ws();
            if self.peek() == Some(b']') {
                return Err(self.err("trailing comma"));
            }
        }
    }

    fn object(&mut self) -> Result<Value, Error> {
        let mut m = Map::new();
        self.ws();
        if self.peek() == Some(b'}') {
            self.i += 1;
            return Ok(Value::Object(m));
        }
        loop {
            self.ws();
            match self.peek() {
                Some(b'"') => {}
                Some(b'}') => return Err(self.err("trailing comma")),
                Some(_) => return Err(self.err("key must be a string")),
                None => return Err(self.err("EOF while parsing an object")),
            }
            let k = self.string()?;
            self.ws();
            match self.peek() {
                Some(b':') => self.i += 1,
                Some(_) => return Err(self.err("expected `:`")),
                None => return Err(self.err("EOF while parsing an object")),
            }
            let v = self.value()?;
            m.insert(k, v);
            self.ws();
            match self.peek() {
                Some(b',') => self.i += 1,
                Some(b'}') => {
                    self.i += 1;
                    return Ok(Value::Object(m));
                }
                Some(_) => return Err(self.err("expected `,` or `}`")),
                None => return Err(self.err("EOF while parsing an object")),
            }
        }
    }

    /// A string starting at the opening quote.
    fn string(&mut self) -> Result<String, Error> {
        self.i += 1;
        let mut out: Vec<u8> = Vec::new();
        loop {
            let start = self.i;
            while let Some(b) = self.peek() {
                if b == b'"' || b == b'\\' || b < 0x20 {
                    break;
                }
                self.i += 1;
            }
            out.extend_from_slice(&self.s[start..self.i]);
            match self.peek() {
                None => return Err(self.err("EOF while parsing a string")),
                Some(b'"') => {
                    self.i += 1;
                    return String::from_utf8(out)
                        .map_err(|_| self.err("invalid unicode code point"));
                }
                Some(b'\\') => {
                    self.i += 1;
                    self.escape(&mut out)?;
                }
                Some(_) => {
                    return Err(self
                        .err("control character (\\u0000-\\u001F) found while parsing a string"))
                }
            }
        }
    }

    fn escape(&mut self, out: &mut Vec<u8>) -> Result<(), Error> {
        let Some(b) = self.peek() else {
            return Err(self.err("EOF while parsing a string"));
        };
        self.i += 1;
        let c = match b {
            b'"' => b'"',
            b'\\' => b'\\',
            b'/' => b'/',
            b'b' => 0x08,
            b'f' => 0x0c,
            b'n' => b'\n',
            b'r' => b'\r',
            b't' => b'\t',
            b'u' => {
                let mut cp = self.hex4()?;
                if (0xDC00..0xE000).contains(&cp) {
                    return Err(self.err("lone leading surrogate in hex escape"));
                }
                if (0xD800..0xDC00).contains(&cp) {
                    if self.s.get(self.i..self.i + 2) != Some(b"\\u") {
                        return Err(self.err("unexpected end of hex escape"));
                    }
                    self.i += 2;
                    let lo = self.hex4()?;
                    if !(0xDC00..0xE000).contains(&lo) {
                        return Err(self.err("lone leading surrogate in hex escape"));
                    }
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                }
                let ch =
                    char::from_u32(cp).ok_or_else(|| self.err("invalid unicode code point"))?;
                let mut buf = [0u8; 4];
                out.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
                return Ok(());
            }
            _ => return Err(self.err("invalid escape")),
        };
        out.push(c);
        Ok(())
    }

    fn hex4(&mut self) -> Result<u32, Error> {
        let mut n = 0u32;
        for _ in 0..4 {
            let d = match self.peek() {
                Some(c @ b'0'..=b'9') => c - b'0',
                Some(c @ b'a'..=b'f') => c - b'a' + 10,
                Some(c @ b'A'..=b'F') => c - b'A' + 10,
                Some(_) => return Err(self.err("invalid escape")),
                None => return Err(self.err("EOF while parsing a string")),
            };
            self.i += 1;
            n = n * 16 + u32::from(d);
        }
        Ok(n)
    }

    fn digits(&mut self) -> usize {
        let start = self.i;
        while let Some(b'0'..=b'9') = self.peek() {
            self.i += 1;
        }
        self.i - start
    }

    /// A number, as serde_json converts it: integers that fit stay exact; otherwise
    /// significand × 10^exponent, correctly rounded to `f64`.
    fn number(&mut self) -> Result<Number, Error> {
        let negative = self.peek() == Some(b'-');
        if negative {
            self.i += 1;
        }
        let int_start = self.i;
        match self.peek() {
            Some(b'0') => {
                self.i += 1;
                if let Some(b'0'..=b'9') = self.peek() {
                    return Err(self.err("invalid number"));
                }
            }
            Some(b'1'..=b'9') => {
                self.digits();
            }
            Some(_) => return Err(self.err("invalid number")),
            None => return Err(self.err("EOF while parsing a value")),
        }
        let int_end = self.i;
        let mut frac = (0, 0);
        if self.peek() == Some(b'.') {
            self.i += 1;
            let f = self.i;
            if self.digits() == 0 {
                return Err(self.err(if self.peek().is_some() {
                    "invalid number"
                } else {
                    "EOF while parsing a value"
                }));
            }
            frac = (f, self.i);
        }
        let mut exp: Option<(bool, usize, usize)> = None;
        if let Some(b'e' | b'E') = self.peek() {
            self.i += 1;
            let positive = match self.peek() {
                Some(b'+') => {
                    self.i += 1;
                    true
                }
                Some(b'-') => {
                    self.i += 1;
                    false
                }
                _ => true,
            };
            let e = self.i;
            if self.digits() == 0 {
                return Err(self.err(if self.peek().is_some() {
                    "invalid number"
                } else {
                    "EOF while parsing a value"
                }));
            }
            exp = Some((positive, e, self.i));
        }
        decimal_to_number(
            negative,
            &self.s[int_start..int_end],
            &self.s[frac.0..frac.1],
            exp.map(|(p, a, b)| (p, &self.s[a..b])),
        )
        .ok_or_else(|| self.err("number out of range"))
    }
}

/// The number of validated decimal parts (digits only; `int` non-empty): exact integers
/// when there is no fraction or exponent and the value fits, else a float by serde_json's
/// algorithm. `None` when the float overflows.
fn decimal_to_number(
    negative: bool,
    int: &[u8],
    frac: &[u8],
    exp: Option<(bool, &[u8])>,
) -> Option<Number> {
    // The significand as far as it fits in u64; further digits only scale it.
    let mut significand: u64 = 0;
    let mut exponent: i32 = 0;
    let mut overflowed = false;
    for &d in int {
        let d = u64::from(d - b'0');
        match significand.checked_mul(10).and_then(|s| s.checked_add(d)) {
            Some(s) if !overflowed => significand = s,
            _ => {
                overflowed = true;
                exponent = exponent.saturating_add(1);
            }
        }
    }
    if frac.is_empty() && exp.is_none() && !overflowed {
        if !negative {
            return Some(Number::PosInt(significand));
        }
        let neg = (significand as i64).wrapping_neg();
        // -0 and values below i64::MIN become floats (as serde_json).
        return Some(if neg >= 0 {
            Number::Float(-(significand as f64))
        } else {
            Number::NegInt(neg)
        });
    }
    for &d in frac {
        if overflowed {
            break;
        }
        let d = u64::from(d - b'0');
        match significand.checked_mul(10).and_then(|s| s.checked_add(d)) {
            Some(s) => {
                significand = s;
                exponent -= 1;
            }
            None => overflowed = true,
        }
    }
    let mut written_exponent: i32 = 0;
    if let Some((positive, digits)) = exp {
        let mut e: i32 = 0;
        for &d in digits {
            match e
                .checked_mul(10)
                .and_then(|x| x.checked_add(i32::from(d - b'0')))
            {
                Some(x) => e = x,
                None => {
                    // An exponent past i32: zero or underflow, else out of range.
                    if significand != 0 && positive {
                        return None;
                    }
                    return Some(Number::Float(if negative { -0.0 } else { 0.0 }));
                }
            }
        }
        exponent = if positive {
            exponent.saturating_add(e)
        } else {
            exponent.saturating_sub(e)
        };
        written_exponent = if positive { e } else { -e };
    }
    let all: Vec<u8> = int.iter().chain(frac).copied().collect();
    let e10 = written_exponent.saturating_sub(frac.len() as i32);
    let f = estimate(significand, exponent, &all, e10)?;
    // Correctly rounded from all the digits, as Python reads it.
    let f = crate::float::nearest(&all, e10, f);
    if f.is_infinite() {
        return None;
    }
    Some(Number::Float(if negative { -f } else { f }))
}

/// The one-operation estimate of a float ([`f64_from_parts`]), `None` out of range.
#[cfg(not(feature = "serde_json"))]
fn estimate(significand: u64, exponent: i32, _: &[u8], _: i32) -> Option<f64> {
    f64_from_parts(significand, exponent)
}

/// The one-operation estimate of a float, `None` out of range. It overflows for a value
/// just under f64::MAX written with more digits than it keeps (1.7976931348623157081e308),
/// which all the digits then decide. (Only where serde_json values are read exactly
/// (`to_serde`): the lite module's budget, and the server's JSON has no such number.)
#[cfg(feature = "serde_json")]
fn estimate(significand: u64, exponent: i32, all: &[u8], e10: i32) -> Option<f64> {
    let integer_digits = all.iter().skip_while(|&&d| d == b'0').count() as i32 + e10;
    match f64_from_parts(significand, exponent) {
        None if integer_digits == 309 => Some(f64::MAX),
        f => f,
    }
}

/// serde_json's `f64_from_parts`: `significand × 10^exponent` with one multiplication
/// or division by an exact power of ten (in steps of 10^308 for tiny values).
fn f64_from_parts(significand: u64, mut exponent: i32) -> Option<f64> {
    let mut f = significand as f64;
    loop {
        match (exponent.unsigned_abs() <= 308).then(|| crate::float::pow10(exponent.unsigned_abs()))
        {
            Some(pow) => {
                if exponent >= 0 {
                    f *= pow;
                    if f.is_infinite() {
                        return None;
                    }
                } else {
                    f /= pow;
                }
                return Some(f);
            }
            None => {
                if f == 0.0 {
                    return Some(f);
                }
                if exponent >= 0 {
                    return None;
                }
                f /= 1e308;
                exponent += 308;
            }
        }
    }
}

/// Parses a decimal float as Python's `float()` reads a header value: surrounding
/// whitespace, an optional sign, digits (with PEP 515 underscores) with an optional
/// fraction and exponent (`5`, `.5`, `5.`, `1e3`, `1_000`), or `inf`/`infinity`/`nan` in
/// any case. `None` otherwise. (Header values are Latin-1; Python also reads non-ASCII
/// decimal digits, which no header carries.)
pub fn parse_float(text: &str) -> Option<f64> {
    // float() strips ASCII whitespace and non-ASCII Unicode space (not \x1c..\x1f,
    // which str.isspace counts): Unicode White_Space.
    let t = text.trim_matches(char::is_whitespace);
    let (negative, body) = match t.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, t.strip_prefix('+').unwrap_or(t)),
    };
    // PEP 515: one underscore between two digits is allowed anywhere digits are.
    let joined;
    let body = if body.as_bytes().contains(&b'_') {
        let b = body.as_bytes();
        let between = |i: usize| {
            i > 0 && b[i - 1].is_ascii_digit() && b.get(i + 1).is_some_and(u8::is_ascii_digit)
        };
        if !(0..b.len()).all(|i| b[i] != b'_' || between(i)) {
            return None;
        }
        joined = body.replace('_', "");
        joined.as_str()
    } else {
        body
    };
    let lower = body.to_ascii_lowercase();
    let f = match lower.as_str() {
        "inf" | "infinity" => f64::INFINITY,
        "nan" => f64::NAN,
        _ => {
            let b = body.as_bytes();
            let int_len = b.iter().take_while(|c| c.is_ascii_digit()).count();
            let (int, rest) = b.split_at(int_len);
            let (frac, rest) = match rest.split_first() {
                Some((b'.', r)) => {
                    let n = r.iter().take_while(|c| c.is_ascii_digit()).count();
                    r.split_at(n)
                }
                _ => (&rest[..0], rest),
            };
            if int.is_empty() && frac.is_empty() {
                return None;
            }
            let exp = match rest.split_first() {
                None => None,
                Some((b'e' | b'E', r)) => {
                    let (positive, digits) = match r.split_first() {
                        Some((b'-', d)) => (false, d),
                        Some((b'+', d)) => (true, d),
                        _ => (true, r),
                    };
                    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
                        return None;
                    }
                    Some((positive, digits))
                }
                Some(_) => return None,
            };
            let int = if int.is_empty() { &b"0"[..] } else { int };
            let approx = match decimal_to_number(false, int, frac, exp) {
                Some(n) => Value::Number(n).as_f64()?,
                None => f64::INFINITY,
            };
            exact::correct(int, frac, exp, approx)
        }
    };
    Some(if negative { -f } else { f })
}

/// Correct rounding for [`parse_float`]: the number parser is serde_json's default (fast,
/// and within one unit in the last place past 15 significant digits), while Python's
/// `float()` rounds exactly. The candidate is checked against the halfway points to its
/// neighbours with big-integer arithmetic and moved until the decimal lies between them
/// (ties to even). Header values are short, so the bignum's cost does not matter.
mod exact {
    use std::cmp::Ordering;

    /// A little-endian base-2^32 natural number.
    #[derive(Clone)]
    struct Nat(Vec<u32>);

    impl Nat {
        fn mul_small(&mut self, m: u32) {
            let mut carry = 0u64;
            for l in &mut self.0 {
                let v = u64::from(*l) * u64::from(m) + carry;
                *l = v as u32;
                carry = v >> 32;
            }
            if carry > 0 {
                self.0.push(carry as u32);
            }
        }
        fn add_small(&mut self, a: u32) {
            let mut carry = u64::from(a);
            for l in &mut self.0 {
                if carry == 0 {
                    return;
                }
                let v = u64::from(*l) + carry;
                *l = v as u32;
                carry = v >> 32;
            }
            if carry > 0 {
                self.0.push(carry as u32);
            }
        }
        fn mul_pow10(&mut self, mut n: u64) {
            while n >= 9 {
                self.mul_small(1_000_000_000);
                n -= 9;
            }
            self.mul_small(10u32.pow(n as u32));
        }
        fn shl(&mut self, n: u64) {
            let (words, bits) = ((n / 32) as usize, (n % 32) as u32);
            if bits > 0 {
                let mut carry = 0u32;
                for l in &mut self.0 {
                    let v = (u64::from(*l) << bits) | u64::from(carry);
                    *l = v as u32;
                    carry = (v >> 32) as u32;
                }
                if carry > 0 {
                    self.0.push(carry);
                }
            }
            self.0.splice(0..0, std::iter::repeat_n(0, words));
        }
        fn cmp(&self, o: &Nat) -> Ordering {
            let a = self.0.iter().rposition(|&l| l != 0).map_or(0, |i| i + 1);
            let b = o.0.iter().rposition(|&l| l != 0).map_or(0, |i| i + 1);
            a.cmp(&b)
                .then_with(|| self.0[..a].iter().rev().cmp(o.0[..b].iter().rev()))
        }
    }

    /// At most this many significant digits take part; later non-zero digits only say
    /// the value is above the truncated one (enough to decide any f64 rounding).
    const MAX_DIGITS: usize = 800;

    /// `digits × 10^e10` (plus "a little more" when `sticky`) compared with `m × 2^e2`.
    fn compare(digits: &Nat, e10: i64, sticky: bool, m: u64, e2: i64) -> Ordering {
        let (mut a, mut b) = (digits.clone(), Nat(vec![m as u32, (m >> 32) as u32]));
        if e10 >= 0 {
            a.mul_pow10(e10 as u64);
        } else {
            b.mul_pow10(e10.unsigned_abs());
        }
        if e2 >= 0 {
            b.shl(e2 as u64);
        } else {
            a.shl(e2.unsigned_abs());
        }
        match a.cmp(&b) {
            Ordering::Equal if sticky => Ordering::Greater,
            o => o,
        }
    }

    /// `f = m × 2^e` with `m` an integer (subnormals included).
    fn parts(f: f64) -> (u64, i64) {
        let bits = f.to_bits();
        let exp = ((bits >> 52) & 0x7ff) as i64;
        let frac = bits & ((1 << 52) - 1);
        if exp == 0 {
            (frac, -1074)
        } else {
            (frac | 1 << 52, exp - 1075)
        }
    }

    /// The correctly rounded value of `int.frac × 10^exp` (non-negative), starting from
    /// `approx`, which is at most a few units in the last place away.
    pub fn correct(int: &[u8], frac: &[u8], exp: Option<(bool, &[u8])>, approx: f64) -> f64 {
        let all = int.iter().chain(frac).skip_while(|&&d| d == b'0');
        let sig: Vec<u8> = all.copied().collect();
        let Some(last_nonzero) = sig.iter().rposition(|&d| d != b'0') else {
            return 0.0;
        };
        // value = 0.sig × 10^point, with point = digits before the decimal point.
        let leading_zeros = int.iter().chain(frac).take_while(|&&d| d == b'0').count() as i64;
        let mut e10: i64 = int.len() as i64 - leading_zeros;
        if let Some((positive, d)) = exp {
            // Exponents past any f64 range only need to stay past it.
            let n = d
                .iter()
                .fold(0i64, |n, &c| (n * 10 + i64::from(c - b'0')).min(1 << 40));
            e10 += if positive { n } else { -n };
        }
        if e10 > 310 {
            return f64::INFINITY;
        }
        if e10 < -330 {
            return 0.0;
        }
        let kept = &sig[..=last_nonzero.min(MAX_DIGITS - 1)];
        let sticky = last_nonzero >= MAX_DIGITS;
        let mut digits = Nat(vec![0]);
        for &d in kept {
            digits.mul_small(10);
            digits.add_small(u32::from(d - b'0'));
        }
        let e10 = e10 - kept.len() as i64;
        let mut f = approx;
        for _ in 0..8 {
            if f.is_infinite() {
                // Above MAX's upper halfway point it stays infinite.
                let (m, e) = parts(f64::MAX);
                if compare(&digits, e10, sticky, 2 * m + 1, e - 1) == Ordering::Less {
                    f = f64::MAX;
                    continue;
                }
                return f;
            }
            let (m, e) = parts(f);
            let up = compare(&digits, e10, sticky, 2 * m + 1, e - 1);
            if up == Ordering::Greater || (up == Ordering::Equal && m & 1 == 1) {
                f = f64::from_bits(f.to_bits() + 1);
                continue;
            }
            if m == 0 {
                return f;
            }
            // Below a power of two the neighbour is half as far away.
            let (lm, le) = if m == 1 << 52 && e > -1074 {
                (4 * m - 1, e - 2)
            } else {
                (2 * m - 1, e - 1)
            };
            let down = compare(&digits, e10, sticky, lm, le);
            if down == Ordering::Less || (down == Ordering::Equal && m & 1 == 1) {
                f = f64::from_bits(f.to_bits() - 1);
                continue;
            }
            return f;
        }
        f
    }
}

// ---------------------------------------------------------------------------------
// Reading wire types

/// The members of a JSON object, read field by field into a wire type, with errors that
/// name the field (`missing field \`request_id\``, `` `lora_rank`: expected an unsigned
/// integer, got a string``).
#[derive(Clone, Copy, Debug)]
pub struct Fields<'a>(pub &'a Map);

/// A field that is absent or `null` reads as absent.
fn present(v: Option<&Value>) -> Option<&Value> {
    v.filter(|v| !v.is_null())
}

impl<'a> Fields<'a> {
    /// The members of `v`, or an error if it is not an object.
    pub fn of(v: &'a Value) -> Result<Self, String> {
        v.as_object()
            .map(Fields)
            .ok_or_else(|| format!("expected an object, got {}", v.kind()))
    }
    /// Fails on a member not in `known` (`deny_unknown_fields`).
    pub fn only(self, known: &[&str]) -> Result<Self, String> {
        match self.0.keys().find(|k| !known.contains(&k.as_str())) {
            Some(k) => Err(format!(
                "unknown field `{k}`, expected one of {}",
                known
                    .iter()
                    .map(|k| format!("`{k}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
            None => Ok(self),
        }
    }
    /// The raw member.
    pub fn get(&self, k: &str) -> Option<&'a Value> {
        self.0.get(k)
    }
    fn typed<T>(
        &self,
        k: &str,
        what: &str,
        read: impl Fn(&'a Value) -> Option<T>,
    ) -> Result<Option<T>, String> {
        match present(self.0.get(k)) {
            None => Ok(None),
            Some(v) => read(v)
                .map(Some)
                .ok_or_else(|| format!("`{k}`: expected {what}, got {}", shown(v))),
        }
    }
    /// A required member.
    fn required<T>(&self, k: &str, v: Result<Option<T>, String>) -> Result<T, String> {
        v?.ok_or_else(|| format!("missing field `{k}`"))
    }
    /// An optional string (absent or `null` → `None`).
    pub fn opt_str(&self, k: &str) -> Result<Option<String>, String> {
        self.typed(k, "a string", |v| v.as_str().map(str::to_string))
    }
    /// A required string.
    pub fn str(&self, k: &str) -> Result<String, String> {
        self.required(k, self.opt_str(k))
    }
    /// An optional boolean.
    pub fn opt_bool(&self, k: &str) -> Result<Option<bool>, String> {
        self.typed(k, "a boolean", Value::as_bool)
    }
    /// An optional non-negative integer.
    pub fn opt_u64(&self, k: &str) -> Result<Option<u64>, String> {
        self.typed(k, "an unsigned integer", Value::as_u64)
    }
    /// A required non-negative integer.
    pub fn u64(&self, k: &str) -> Result<u64, String> {
        self.required(k, self.opt_u64(k))
    }
    /// An optional integer in `usize` range.
    pub fn opt_usize(&self, k: &str) -> Result<Option<usize>, String> {
        self.typed(k, "an unsigned integer", |v| {
            v.as_u64().and_then(|n| usize::try_from(n).ok())
        })
    }
    /// An optional signed integer.
    pub fn opt_i64(&self, k: &str) -> Result<Option<i64>, String> {
        self.typed(k, "an integer", Value::as_i64)
    }
    /// An optional number.
    pub fn opt_f64(&self, k: &str) -> Result<Option<f64>, String> {
        self.typed(k, "a number", Value::as_f64)
    }
    /// An optional array of strings.
    pub fn opt_strings(&self, k: &str) -> Result<Option<Vec<String>>, String> {
        self.typed(k, "an array of strings", |v| {
            v.as_array()?
                .iter()
                .map(|s| s.as_str().map(str::to_string))
                .collect()
        })
    }
}

/// A wire type read from JSON (a response, a sampler handle, server flags).
pub trait FromJson: Sized {
    /// Reads `v`, or says what is wrong with it.
    fn from_json(v: &Value) -> Result<Self, String>;
}

impl FromJson for Value {
    fn from_json(v: &Value) -> Result<Self, String> {
        Ok(v.clone())
    }
}

/// A value as an error message shows it: short JSON, cut at 100 characters.
pub fn shown(v: &Value) -> String {
    let mut s = v.to_string();
    if s.len() > 100 {
        let mut cut = 100;
        while !s.is_char_boundary(cut) {
            cut -= 1;
        }
        s.truncate(cut);
        s.push('…');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builds_parses_and_indexes_bodies() {
        let mut body = json!({ "model_id": "m", "seq_id": 3 });
        body["type"] = "optim_step".into();
        assert_eq!(
            body.to_string(),
            r#"{"model_id":"m","seq_id":3,"type":"optim_step"}"#
        );
        let v = from_slice(br#"{"a": [1, -2, 2.5e-1, "x\n"]}"#).unwrap();
        assert_eq!(v["a"][2].as_f64(), Some(0.25));
        assert_eq!(v.get("b"), None);
        assert!(from_slice(b"{").is_err());
    }

    fn same_as_serde(text: &str) {
        let ours = from_str(text);
        let theirs: Result<serde_json::Value, _> = serde_json::from_str(text);
        match (&ours, &theirs) {
            (Ok(a), Ok(b)) => assert_eq!(a.to_string(), b.to_string(), "{text}"),
            (Err(_), Err(_)) => {}
            _ => panic!("{text}: ours {ours:?}, serde_json {theirs:?}"),
        }
    }

    #[test]
    fn parses_and_writes_as_serde_json() {
        for t in [
            "null",
            "true",
            "false",
            "0",
            "-0",
            "1",
            "-1",
            "18446744073709551615",
            "18446744073709551616",
            "-9223372036854775808",
            "-9223372036854775809",
            "1.5",
            "-2.25e-3",
            "1e21",
            "1E+2",
            "1e-400",
            "-1e-400",
            "1e400",
            "0.1",
            "123456789012345678901234567890",
            "0.30000000000000004",
            "5e-324",
            "1.7976931348623157e308",
            "4.9e-324",
            "2.2250738585072014e-308",
            "12345678901234567890.123",
            "0.000000000000000000001234567890123456789",
            r#""a\"b\\c\/d\b\f\n\r\t\u0001\u00e9\ud83d\ude00""#,
            r#""é😀""#,
            "[]",
            "{}",
            "[1,[2,[3]],{\"a\":{}}]",
            r#"{"b":1,"a":2,"b":3}"#,
            " \n\t[ 1 , 2 ] ",
            "[1,]",
            "{\"a\":1,}",
            "[1 2]",
            "{\"a\" 1}",
            "{1:2}",
            "01",
            "1.",
            ".5",
            "1e",
            "1e+",
            "-",
            "--1",
            "tru",
            "nul",
            "\"\\x\"",
            "\"\\ud800\"",
            "\"\\udc00\"",
            "\"\\ud800\\u0041\"",
            "\"\u{1}\"",
            "\"abc",
            "[",
            "{",
            "{\"a\"",
            "{\"a\":",
            "[1",
            "",
            " ",
            "1 2",
            "+1",
            "NaN",
            "Infinity",
        ] {
            same_as_serde(t);
        }
        // Deep nesting is refused, not a stack overflow.
        same_as_serde(&"[".repeat(200));
        same_as_serde(&format!("{}{}", "[".repeat(100), "]".repeat(100)));
        // Invalid UTF-8 in a string.
        assert!(from_slice(b"\"\xff\"").is_err());
    }

    #[test]
    fn floats_and_escapes_are_written_as_serde_json_writes_them() {
        for f in [
            0.0,
            -0.0,
            1.0,
            0.1,
            1e-4,
            1e-7,
            1e21,
            1e22,
            123456.789,
            f64::MAX,
            f64::MIN_POSITIVE,
            5e-324,
            0.30000000000000004,
            -3.5,
        ] {
            assert_eq!(Value::from(f).to_string(), serde_json::json!(f).to_string());
        }
        for f in [0.1f32, 1e-7, 3.4028235e38, 1.0] {
            let mut s = String::new();
            write_f32(&mut s, f);
            assert_eq!(s, serde_json::to_string(&f).unwrap());
        }
        let mut next = crate::testing::xorshift(0x2545_F491_4F6C_DD1D);
        for _ in 0..50_000 {
            let rng = next();
            let (x, y) = (f64::from_bits(rng), f32::from_bits((rng >> 17) as u32));
            if x.is_finite() {
                assert_eq!(Value::from(x).to_string(), serde_json::json!(x).to_string());
            }
            if y.is_finite() {
                let mut s = String::new();
                write_f32(&mut s, y);
                assert_eq!(s, serde_json::to_string(&y).unwrap(), "{y:e}");
            }
        }
        assert_eq!(Value::from(f64::NAN).to_string(), "null");
        let s: String = (0u8..0x80).map(char::from).chain("é😀".chars()).collect();
        assert_eq!(
            Value::from(s.as_str()).to_string(),
            serde_json::json!(s).to_string()
        );
        for n in [0u64, 7, 10, u64::MAX] {
            assert_eq!(Value::from(n).to_string(), n.to_string());
        }
        for n in [i64::MIN, -1, 0, i64::MAX] {
            assert_eq!(Value::from(n).to_string(), n.to_string());
        }
    }

    #[test]
    fn errors_say_where() {
        let e = from_str("{\n  \"a\": x}").unwrap_err();
        assert_eq!(e.to_string(), "expected value at line 2 column 8");
        assert_eq!(
            from_str("[1,2").unwrap_err().to_string(),
            "EOF while parsing a list at line 1 column 4"
        );
    }

    #[test]
    fn macro_and_maps() {
        let detail: Option<&str> = None;
        let n = 3u32;
        let mut v = crate::json!({
            "a": 1, "b": { "c": [1, "x", null, { "d": true }] }, "e": detail, "f": n + 1,
            "g": [], "h": {},
        });
        v["i"] = "new".into();
        v["a"] = 2.into();
        assert_eq!(
            v.to_string(),
            r#"{"a":2,"b":{"c":[1,"x",null,{"d":true}]},"e":null,"f":4,"g":[],"h":{},"i":"new"}"#
        );
        assert_eq!(v["b"]["c"][3]["d"], Value::Bool(true));
        assert!(v["zz"].is_null() && v["b"]["c"][9].is_null());
        let m = v.as_object_mut().unwrap();
        assert_eq!(m.remove("a"), Some(Value::from(2)));
        assert_eq!(m.keys().next().map(String::as_str), Some("b"));
    }

    #[test]
    fn fields_name_what_is_wrong() {
        let v = from_str(r#"{"id":"r1","n":-1,"x":null,"s":["a",1]}"#).unwrap();
        let f = Fields::of(&v).unwrap();
        assert_eq!(f.str("id").unwrap(), "r1");
        assert_eq!(f.opt_str("x").unwrap(), None);
        assert_eq!(f.str("nope").unwrap_err(), "missing field `nope`");
        assert_eq!(
            f.opt_u64("n").unwrap_err(),
            "`n`: expected an unsigned integer, got -1"
        );
        assert!(f.opt_strings("s").is_err());
        assert!(f
            .only(&["id", "n", "x"])
            .unwrap_err()
            .starts_with("unknown field `s`"));
        assert!(Fields::of(&Value::from(1)).is_err());
    }

    // The test oracles (Node's `String(x)`, Python's `repr`/`float()`) are real runtimes,
    // which `make test` installs; a missing one fails the test.
    use crate::testing::oracle;

    /// `to_serde` reads every float as std's correctly rounded `parse` does: shortest texts
    /// and 26-digit ones of the float inputs, and values serde_json's default parser misreads.
    #[cfg(feature = "serde_json")]
    #[test]
    fn to_serde_reads_every_float_exactly() {
        let mut texts: Vec<String> = ["999999999999999.9", "2.2250738585072014e-308", "5e-324"]
            .map(String::from)
            .to_vec();
        for x in float_inputs().into_iter().filter(|x| x.is_finite()) {
            texts.push(format!("{x:?}"));
            texts.push(format!("{x:.25e}"));
        }
        for t in &texts {
            let want: f64 = t.parse().unwrap();
            let got = to_serde(&format!("[{t}]")).expect(t)[0].as_f64().unwrap();
            assert_eq!(got.to_bits(), want.to_bits(), "{t}");
        }
    }

    /// Doubles to check: special values and boundaries of each notation, random bit
    /// patterns, and random magnitudes from 1e-330 to 1e310 (as bit patterns, so the
    /// oracles read exactly the same values).
    fn float_inputs() -> Vec<f64> {
        let mut v = vec![
            0.0,
            -0.0,
            1.0,
            f64::MAX,
            f64::MIN_POSITIVE,
            5e-324,
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            0.1 + 0.2,
        ];
        for e in -30..=30 {
            for m in [1.0, 1.5, 9.999_999_999_999_999, 123_456_789.0] {
                v.push(m * 10f64.powi(e));
                v.push(-m * 10f64.powi(e));
            }
        }
        let mut next = crate::testing::xorshift(0x5eed_f10a7);
        for _ in 0..4000 {
            v.push(f64::from_bits(next()));
            let mag = 10f64.powf((next() % 64_000) as f64 / 100.0 - 330.0);
            v.push(mag * ((next() % 1_000_000) as f64 / 1e5));
        }
        v
    }

    #[test]
    fn numbers_print_as_node_and_python_print_them() {
        let xs = float_inputs();
        let hex: String = xs
            .iter()
            .map(|x| format!("{:016x}\n", x.to_bits()))
            .collect();
        let js = oracle(
            "node",
            &[
                "-e",
                "let s='';process.stdin.on('data',d=>s+=d).on('end',()=>{for(const h of s.split('\\n')){if(!h)continue;const b=new BigUint64Array([BigInt('0x'+h)]);console.log(String(new Float64Array(b.buffer)[0]))}})",
            ],
            &hex,
        );
        let py = oracle(
            "python3",
            &[
                "-c",
                "import sys,struct\nfor h in sys.stdin.read().split():\n print(repr(struct.unpack('>d',bytes.fromhex(h))[0]))",
            ],
            &hex,
        );
        assert_eq!((js.len(), py.len()), (xs.len(), xs.len()));
        for (i, x) in xs.iter().enumerate() {
            assert_eq!(fmt_js(*x), js[i], "String({:016x})", x.to_bits());
            assert_eq!(fmt_py(*x), py[i], "repr({:016x})", x.to_bits());
        }
    }

    #[test]
    fn header_floats_read_as_python_float_does() {
        // Forms Python's float() accepts or refuses, then random decimal texts built
        // from the characters a header could hold.
        let mut texts: Vec<String> = [
            "5",
            " 1.5 ",
            ".5",
            "5.",
            "-2e3",
            "+3",
            "1e400",
            "-1e-400",
            "Infinity",
            "-inf",
            "nan",
            "NaN",
            "+nan",
            "infinity",
            "",
            ".",
            "1e",
            "e5",
            "abc",
            "1,5",
            "0x10",
            "1_000",
            "1__0",
            "_1",
            "1_",
            "1_.5",
            "1e1_0",
            "1.5.2",
            "--1",
            "\t7\n",
            "1e+",
            "00012",
            "1E5",
            "\u{a0}1.5\u{85}",
            "\u{1f}2",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let mut next = crate::testing::xorshift(0xf10a7);
        let alphabet = b"0123456789.eE+- _xinfa";
        for _ in 0..3000 {
            let len = 1 + next() % 8;
            texts.push(
                (0..len)
                    .map(|_| alphabet[(next() % alphabet.len() as u64) as usize] as char)
                    .collect(),
            );
            texts.push(format!(
                "{}e{}",
                (next() % 100_000) as f64 / 97.0,
                next() % 40
            ));
        }
        // One JSON string per line, so whitespace survives the trip.
        let input: String = texts
            .iter()
            .map(|t| format!("{}\n", crate::json::Value::from(t.as_str())))
            .collect();
        let py = oracle(
            "python3",
            &[
                "-c",
                "import sys,json,struct\nfor l in sys.stdin:\n t=json.loads(l)\n try: print(struct.pack('>d',float(t)).hex())\n except ValueError: print('None')",
            ],
            &input,
        );
        assert_eq!(py.len(), texts.len());
        for (t, want) in texts.iter().zip(&py) {
            let ours = parse_float(t).map(|x| format!("{:016x}", x.to_bits()));
            let want = (want != "None").then(|| want.clone());
            // NaN: any NaN bit pattern is NaN.
            let nan = |h: &Option<String>| {
                h.as_ref()
                    .is_some_and(|h| f64::from_bits(u64::from_str_radix(h, 16).unwrap()).is_nan())
            };
            if nan(&ours) && nan(&want) {
                continue;
            }
            assert_eq!(ours, want, "float({t:?})");
        }
    }
}
