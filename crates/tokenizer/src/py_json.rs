//! Python's `json` module, once for the crate and the renderers above it: `json.loads` with
//! its acceptance (`NaN`, `Infinity`, integers of any size up to Python's 4,300-digit
//! conversion limit, nesting up to about its recursion limit) and its error messages, and
//! `json.dumps` (separators, `indent`, `ensure_ascii`, `repr(float)`) of the one value type
//! it reads into. serde_json differs on each of these, and tool-call text comes from the
//! model, so the parsers need Python's behaviour. The chat templates' `tojson`, the
//! renderers' tool calls, the cookbook's `.jsonl` lines and the CLI's output all print
//! through [`dumps_with`].

use minijinja::value::ValueKind;
use serde_json::Value as Json;

/// A decoded value, as Python holds it.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// `None`.
    Null,
    /// `True` / `False`.
    Bool(bool),
    /// An `int`, as its decimal text (`-0` already read as `0`).
    Int(String),
    /// A `float` (`NaN` and the infinities included).
    Float(f64),
    /// A `str`. A lone surrogate escape (which Python keeps) becomes U+FFFD.
    Str(String),
    /// A `list`.
    Array(Vec<Value>),
    /// A `dict`, in insertion order (a repeated key keeps its place, takes the last value).
    Object(Vec<(String, Value)>),
}

/// Why `json.loads` raised.
#[derive(Debug, Clone, PartialEq)]
pub enum Error {
    /// `json.JSONDecodeError`, with Python's message.
    Decode(String),
    /// Another `ValueError`: an integer over the 4,300-digit conversion limit.
    Value(String),
    /// `RecursionError`: nesting deeper than Python's recursion limit allows.
    Recursion(String),
}

impl Error {
    /// Python's `str(e)`.
    pub fn message(&self) -> &str {
        match self {
            Error::Decode(m) | Error::Value(m) | Error::Recursion(m) => m,
        }
    }
}

/// Python's `sys.get_int_max_str_digits()` default.
const MAX_STR_DIGITS: usize = 4300;
/// The nesting at which Python's default recursion limit (1,000 frames, some used by
/// the caller) stops the decoder: approximate.
const MAX_DEPTH: usize = 980;

/// `json.loads(s)`.
pub fn loads(s: &str) -> Result<Value, Error> {
    let p = Parser {
        c: s.chars().collect(),
    };
    let start = p.skip_ws(0);
    let (value, end) = match p.value(start, 0) {
        Ok(v) => v,
        Err(Fail::Stop(at)) => return Err(p.decode_error("Expecting value", at)),
        Err(Fail::Raise(e)) => return Err(e),
    };
    let end = p.skip_ws(end);
    if end != p.c.len() {
        return Err(p.decode_error("Extra data", end));
    }
    Ok(value)
}

impl Value {
    /// A template value as Python's `json` holds it (`tojson`'s input); with `sort`, each
    /// dict's keys in order first (`sort_keys=True`). A value that is not JSON (a function,
    /// a macro) is refused.
    pub fn from_template(v: &minijinja::Value, sort: bool) -> Result<Value, minijinja::Error> {
        Ok(match v.kind() {
            ValueKind::Undefined | ValueKind::None => Value::Null,
            ValueKind::Bool => Value::Bool(v.is_true()),
            ValueKind::Number if v.is_integer() => Value::Int(v.to_string()),
            ValueKind::Number => Value::Float(f64::try_from(v.clone()).unwrap_or(f64::NAN)),
            ValueKind::String => Value::Str(v.as_str().unwrap_or_default().to_owned()),
            ValueKind::Seq | ValueKind::Iterable => Value::Array(
                v.try_iter()?
                    .map(|item| Value::from_template(&item, sort))
                    .collect::<Result<_, _>>()?,
            ),
            ValueKind::Map => {
                let mut keys: Vec<minijinja::Value> = v.try_iter()?.collect();
                if sort {
                    tinker_support::sort::sort_by(&mut keys, |a, b| a.cmp(b));
                }
                let entry = |k: &minijinja::Value| -> Result<(String, Value), minijinja::Error> {
                    let name = k.as_str().map_or_else(|| k.to_string(), str::to_owned);
                    Ok((name, Value::from_template(&v.get_item(k)?, sort)?))
                };
                Value::Object(keys.iter().map(entry).collect::<Result<_, _>>()?)
            }
            _ => {
                return Err(minijinja::Error::new(
                    minijinja::ErrorKind::InvalidOperation,
                    format!("tojson: cannot serialize a {}", v.kind()),
                ))
            }
        })
    }

    /// The same value as a [`Json`] one: `NaN` and the infinities, which it cannot hold,
    /// are refused; an integer past 64 bits becomes the nearest float.
    pub fn to_json(&self) -> Result<Json, String> {
        Ok(match self {
            Value::Null => Json::Null,
            Value::Bool(b) => Json::Bool(*b),
            Value::Int(digits) => serde_json::from_str(digits).map_err(|e| e.to_string())?,
            Value::Float(f) => match serde_json::Number::from_f64(*f) {
                Some(n) => Json::Number(n),
                None => return Err(format!("{} is not a JSON number", py_float(*f))),
            },
            Value::Str(s) => Json::String(s.clone()),
            Value::Array(items) => {
                Json::Array(items.iter().map(Value::to_json).collect::<Result<_, _>>()?)
            }
            Value::Object(entries) => Json::Object(
                entries
                    .iter()
                    .map(|(k, v)| Ok((k.clone(), v.to_json()?)))
                    .collect::<Result<_, String>>()?,
            ),
        })
    }
}

/// How `json.dumps` lays its text out: `indent` (a string per level, or none: one line),
/// `separators` and `ensure_ascii`.
#[derive(Clone, Copy)]
pub struct Style<'a> {
    /// Each level's indentation; `None` writes one line.
    pub indent: Option<&'a str>,
    /// The item and key separators (Python's default `(", ", ": ")`).
    pub seps: (&'a str, &'a str),
    /// `\uXXXX` escapes for every character past ASCII.
    pub ensure_ascii: bool,
}

impl Style<'_> {
    /// `json.dumps`' defaults with `ensure_ascii` as given.
    pub fn python(ensure_ascii: bool) -> Self {
        Style {
            indent: None,
            seps: (", ", ": "),
            ensure_ascii,
        }
    }
}

/// `json.dumps(v, ensure_ascii=…)` with the default separators.
pub fn dumps(v: &Value, ensure_ascii: bool) -> String {
    dumps_with(v, Style::python(ensure_ascii))
}

/// `json.dumps(v, indent=…, separators=…, ensure_ascii=…)`.
pub fn dumps_with(v: &Value, style: Style<'_>) -> String {
    let mut out = String::new();
    write(v, style, 0, &mut out);
    out
}

/// `json.dumps(v, separators=seps, ensure_ascii=…, indent=…)` of a serde_json value (as
/// `json.loads` of its text would hold it); `indent` spaces per level.
pub fn dumps_json(
    v: &Json,
    seps: (&str, &str),
    ensure_ascii: bool,
    indent: Option<usize>,
) -> String {
    let pad = indent.map(|n| " ".repeat(n));
    let style = Style {
        indent: pad.as_deref(),
        seps,
        ensure_ascii,
    };
    // Through the template engine's value, as `tojson` reads a template's (serde_json's
    // numbers: integers as integers, the rest as floats).
    let v = minijinja::Value::from(minijinja::value::Serde(v));
    match Value::from_template(&v, false) {
        Ok(py) => dumps_with(&py, style),
        // A serde_json value always converts.
        Err(_) => String::new(),
    }
}

fn write(v: &Value, st: Style<'_>, depth: usize, out: &mut String) {
    let (open, close, len) = match v {
        Value::Null => return out.push_str("null"),
        Value::Bool(b) => return out.push_str(if *b { "true" } else { "false" }),
        Value::Int(digits) => return out.push_str(digits),
        Value::Float(f) => return out.push_str(&py_float(*f)),
        Value::Str(s) => return py_str(s, out, st.ensure_ascii),
        Value::Array(items) => ('[', ']', items.len()),
        Value::Object(entries) => ('{', '}', entries.len()),
    };
    // A list's or a dict's items between their brackets, each on its own line when indented.
    out.push(open);
    for i in 0..len {
        if i > 0 {
            out.push_str(st.seps.0);
        }
        newline(st, depth + 1, out);
        let item = match v {
            Value::Object(entries) => {
                py_str(&entries[i].0, out, st.ensure_ascii);
                out.push_str(st.seps.1);
                &entries[i].1
            }
            Value::Array(items) => &items[i],
            _ => unreachable!("only lists and dicts have items"),
        };
        write(item, st, depth + 1, out);
    }
    if len > 0 {
        newline(st, depth, out);
    }
    out.push(close);
}

fn newline(st: Style<'_>, depth: usize, out: &mut String) {
    if let Some(ind) = st.indent {
        out.push('\n');
        for _ in 0..depth {
            out.push_str(ind);
        }
    }
}

/// A `str` as `json.dumps` writes it.
fn py_str(s: &str, out: &mut String, ensure_ascii: bool) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 || (ensure_ascii && (c as u32) > 0x7e) => {
                let mut buf = [0u16; 2];
                for u in c.encode_utf16(&mut buf) {
                    out.push_str(&format!("\\u{u:04x}"));
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Python's `json.dumps(float)`: `repr(float)` (the support crate's [`fmt_py`]: shortest
/// round-trip digits, scientific below 1e-4 and from 1e16), with `NaN` and `Infinity`
/// spelled as JSON extensions.
///
/// [`fmt_py`]: tinker_support::json::fmt_py
pub fn py_float(f: f64) -> String {
    if f.is_nan() {
        "NaN".into()
    } else if f.is_infinite() {
        if f > 0.0 { "Infinity" } else { "-Infinity" }.into()
    } else {
        tinker_support::json::fmt_py(f)
    }
}

/// How a scan failed: the C scanner's `StopIteration` (reported by `json.loads` as
/// "Expecting value" at that index), or an error raised as it is.
enum Fail {
    Stop(usize),
    Raise(Error),
}

/// The C scanner (`_json.c`) over the text's characters (its indices are Python's).
struct Parser {
    c: Vec<char>,
}

type Scan<T> = Result<(T, usize), Fail>;

impl Parser {
    fn at(&self, idx: usize) -> Option<char> {
        self.c.get(idx).copied()
    }

    fn skip_ws(&self, mut idx: usize) -> usize {
        while matches!(self.at(idx), Some(' ' | '\t' | '\n' | '\r')) {
            idx += 1;
        }
        idx
    }

    fn starts_with(&self, idx: usize, word: &str) -> bool {
        (idx..)
            .zip(word.chars())
            .all(|(i, w)| self.at(i) == Some(w))
    }

    /// `JSONDecodeError(msg, doc, pos)`'s text.
    fn decode_error(&self, msg: &str, pos: usize) -> Error {
        let before = &self.c[..pos.min(self.c.len())];
        let line = before.iter().filter(|&&c| c == '\n').count() + 1;
        let column = match before.iter().rposition(|&c| c == '\n') {
            Some(nl) => pos - nl,
            None => pos + 1,
        };
        Error::Decode(format!("{msg}: line {line} column {column} (char {pos})"))
    }

    fn fail(&self, msg: &str, pos: usize) -> Fail {
        Fail::Raise(self.decode_error(msg, pos))
    }

    /// `scan_once` at `idx`.
    fn value(&self, idx: usize, depth: usize) -> Scan<Value> {
        match self.at(idx) {
            None => Err(Fail::Stop(idx)),
            Some('"') => self.string(idx + 1).map(|(s, e)| (Value::Str(s), e)),
            Some('{') => self.object(idx + 1, depth + 1),
            Some('[') => self.array(idx + 1, depth + 1),
            Some(_) => {
                let constants = [
                    ("null", Value::Null),
                    ("true", Value::Bool(true)),
                    ("false", Value::Bool(false)),
                    ("NaN", Value::Float(f64::NAN)),
                    ("Infinity", Value::Float(f64::INFINITY)),
                    ("-Infinity", Value::Float(f64::NEG_INFINITY)),
                ];
                for (word, v) in constants {
                    if self.starts_with(idx, word) {
                        return Ok((v, idx + word.chars().count()));
                    }
                }
                self.number(idx)
            }
        }
    }

    fn too_deep(&self, depth: usize, what: &str) -> Result<(), Fail> {
        if depth > MAX_DEPTH {
            return Err(Fail::Raise(Error::Recursion(format!(
                "maximum recursion depth exceeded while decoding a JSON {what} from a \
                 unicode string"
            ))));
        }
        Ok(())
    }

    /// `_match_number_unicode`.
    fn number(&self, start: usize) -> Scan<Value> {
        let digit = |i: usize| self.at(i).is_some_and(|c| c.is_ascii_digit());
        let mut idx = start;
        if self.at(idx) == Some('-') {
            idx += 1;
        }
        match self.at(idx) {
            Some('1'..='9') => {
                while digit(idx) {
                    idx += 1;
                }
            }
            Some('0') => idx += 1,
            _ => return Err(Fail::Stop(start)),
        }
        let mut is_float = false;
        if self.at(idx) == Some('.') && digit(idx + 1) {
            is_float = true;
            idx += 2;
            while digit(idx) {
                idx += 1;
            }
        }
        if matches!(self.at(idx), Some('e' | 'E')) && idx + 1 < self.c.len() {
            let e_start = idx;
            idx += 1;
            if matches!(self.at(idx), Some('-' | '+')) && idx + 1 < self.c.len() {
                idx += 1;
            }
            while digit(idx) {
                idx += 1;
            }
            if digit(idx - 1) {
                is_float = true;
            } else {
                idx = e_start;
            }
        }
        let text: String = self.c[start..idx].iter().collect();
        Ok((self.number_value(&text, is_float)?, idx))
    }

    /// `float(text)` or `int(text)`.
    fn number_value(&self, text: &str, is_float: bool) -> Result<Value, Fail> {
        if is_float {
            return Ok(Value::Float(text.parse().unwrap_or(f64::NAN)));
        }
        let digits = text.trim_start_matches('-');
        if digits.len() > MAX_STR_DIGITS {
            return Err(Fail::Raise(Error::Value(format!(
                "Exceeds the limit ({MAX_STR_DIGITS} digits) for integer string conversion: \
                 value has {} digits; use sys.set_int_max_str_digits() to increase the limit",
                digits.len()
            ))));
        }
        Ok(Value::Int(if digits == "0" {
            digits.to_owned()
        } else {
            text.to_owned()
        }))
    }

    /// `scanstring_unicode` from `end` (just after the opening quote).
    fn string(&self, mut end: usize) -> Scan<String> {
        let begin = end - 1;
        let mut out = String::new();
        loop {
            let mut next = end;
            let c = loop {
                match self.at(next) {
                    None => return Err(self.fail("Unterminated string starting at", begin)),
                    Some(c @ ('"' | '\\')) => break c,
                    Some(c) if (c as u32) <= 0x1f => {
                        return Err(self.fail("Invalid control character at", next))
                    }
                    Some(c) => out.push(c),
                }
                next += 1;
            };
            next += 1;
            if c == '"' {
                return Ok((out, next));
            }
            let Some(esc) = self.at(next) else {
                return Err(self.fail("Unterminated string starting at", begin));
            };
            if esc == 'u' {
                let (ch, after) = self.unicode_escape(next + 1)?;
                out.push(ch);
                end = after;
                continue;
            }
            out.push(match esc {
                '"' => '"',
                '\\' => '\\',
                '/' => '/',
                'b' => '\u{8}',
                'f' => '\u{c}',
                'n' => '\n',
                'r' => '\r',
                't' => '\t',
                _ => return Err(self.fail("Invalid \\escape", next - 1)),
            });
            end = next + 1;
        }
    }

    /// Four hex digits at `idx`, or the error at `err_at`.
    fn hex4(&self, idx: usize, err_at: usize) -> Result<u32, Fail> {
        let mut v = 0;
        for i in idx..idx + 4 {
            let d = self.at(i).and_then(|c| c.to_digit(16));
            let Some(d) = d else {
                return Err(self.fail("Invalid \\uXXXX escape", err_at));
            };
            v = v << 4 | d;
        }
        Ok(v)
    }

    /// A `\uXXXX` escape whose digits start at `next`, joined with a following low
    /// surrogate escape when it is a high surrogate.
    fn unicode_escape(&self, next: usize) -> Scan<char> {
        let mut end = next + 4;
        if end >= self.c.len() {
            return Err(self.fail("Invalid \\uXXXX escape", next - 1));
        }
        let mut cp = self.hex4(next, next - 1)?;
        if (0xd800..0xdc00).contains(&cp)
            && end + 6 < self.c.len()
            && self.at(end) == Some('\\')
            && self.at(end + 1) == Some('u')
        {
            let low = self.hex4(end + 2, end + 1)?;
            if (0xdc00..0xe000).contains(&low) {
                cp = 0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00);
                end += 6;
            }
        }
        Ok((char::from_u32(cp).unwrap_or('\u{fffd}'), end))
    }

    /// `_parse_object_unicode` from just after `{`.
    fn object(&self, idx: usize, depth: usize) -> Scan<Value> {
        self.too_deep(depth, "object")?;
        let mut entries: Vec<(String, Value)> = Vec::new();
        let mut idx = self.skip_ws(idx);
        if self.at(idx) != Some('}') {
            loop {
                if self.at(idx) != Some('"') {
                    return Err(self.fail("Expecting property name enclosed in double quotes", idx));
                }
                let (key, next) = self.string(idx + 1)?;
                idx = self.skip_ws(next);
                if self.at(idx) != Some(':') {
                    return Err(self.fail("Expecting ':' delimiter", idx));
                }
                let (value, next) = self.value(self.skip_ws(idx + 1), depth)?;
                match entries.iter_mut().find(|(k, _)| *k == key) {
                    Some(entry) => entry.1 = value,
                    None => entries.push((key, value)),
                }
                idx = self.skip_ws(next);
                if self.at(idx) == Some('}') {
                    break;
                }
                if self.at(idx) != Some(',') {
                    return Err(self.fail("Expecting ',' delimiter", idx));
                }
                idx = self.skip_ws(idx + 1);
            }
        }
        Ok((Value::Object(entries), idx + 1))
    }

    /// `_parse_array_unicode` from just after `[`.
    fn array(&self, idx: usize, depth: usize) -> Scan<Value> {
        self.too_deep(depth, "array")?;
        let mut items = Vec::new();
        let mut idx = self.skip_ws(idx);
        if self.at(idx) != Some(']') {
            loop {
                let (value, next) = self.value(idx, depth)?;
                items.push(value);
                idx = self.skip_ws(next);
                if self.at(idx) == Some(']') {
                    break;
                }
                if self.at(idx) != Some(',') {
                    return Err(self.fail("Expecting ',' delimiter", idx));
                }
                idx = self.skip_ws(idx + 1);
            }
        }
        Ok((Value::Array(items), idx + 1))
    }
}
