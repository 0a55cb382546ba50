//! Small shared helpers: a deterministic PRNG and hash, ids, times, JSON accessors.

use serde_json::{Map, Value};
use std::time::{SystemTime, UNIX_EPOCH};

/// SplitMix64 finaliser: a fast, well-mixed 64-bit hash step.
#[inline]
pub fn mix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Hash a sequence of words into one (order-sensitive).
pub fn hash_words(words: &[u64]) -> u64 {
    let mut h = 0x243F_6A88_85A3_08D3u64;
    for &w in words {
        h = mix64(h ^ w);
    }
    h
}

/// FNV-1a over bytes, then mixed: a stable hash of strings and bodies.
pub fn hash_bytes(bytes: &[u8]) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    for &b in bytes {
        h ^= b as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    mix64(h)
}

pub fn hash_str(s: &str) -> u64 {
    hash_bytes(s.as_bytes())
}

/// A uniform float in [0, 1) from a 64-bit word.
#[inline]
pub fn unit_f64(x: u64) -> f64 {
    (x >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

/// A small deterministic PRNG (SplitMix64 stream).
#[derive(Clone, Debug)]
pub struct Rng {
    state: u64,
}

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng {
            state: mix64(seed ^ 0x5851_F42D_4C95_7F2D),
        }
    }
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in [0, 1).
    #[inline]
    pub fn next_f64(&mut self) -> f64 {
        unit_f64(self.next_u64())
    }
    /// A UUID-v4-shaped string.
    pub fn uuid(&mut self) -> String {
        let a = self.next_u64();
        let b = self.next_u64();
        format!(
            "{:08x}-{:04x}-4{:03x}-{:04x}-{:012x}",
            (a >> 32) as u32,
            (a >> 16) as u16,
            (a & 0x0fff) as u16,
            (((b >> 48) as u16) & 0x3fff) | 0x8000,
            b & 0xffff_ffff_ffff
        )
    }
}

pub fn now_unix_f64() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

pub fn now_unix() -> i64 {
    now_unix_f64() as i64
}

/// Days since 1970-01-01 to (year, month, day) (proleptic Gregorian).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = if z >= 0 { z } else { z - 146_096 } / 146_097;
    let doe = (z - era * 146_097) as u64;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365;
    let y = yoe as i64 + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = (y - era * 400) as u64;
    let mp = if m > 2 { m - 3 } else { m + 9 } as u64;
    let doy = (153 * mp + 2) / 5 + d as u64 - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe as i64 - 719_468
}

/// RFC 3339 UTC timestamp with microseconds, e.g. `2026-11-22T05:30:00.123456Z`.
pub fn rfc3339(t: f64) -> String {
    // Whole microseconds first, so that equal instants always print the same.
    let total = (t * 1e6).round() as i64;
    let secs = total.div_euclid(1_000_000);
    let micros = total.rem_euclid(1_000_000);
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let (y, mo, d) = civil_from_days(days);
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:06}Z",
        y,
        mo,
        d,
        rem / 3600,
        (rem % 3600) / 60,
        rem % 60,
        micros
    )
}

/// The UTC date (`YYYY-MM-DD`) of a unix time.
pub fn utc_date(t: f64) -> String {
    let (y, m, d) = civil_from_days((t.floor() as i64).div_euclid(86_400));
    format!("{y:04}-{m:02}-{d:02}")
}

/// Parse an RFC 3339 timestamp (with `Z` or `±HH:MM` offset) into unix seconds.
pub fn parse_rfc3339(s: &str) -> Option<f64> {
    let s = s.trim();
    if s.len() < 19 {
        return None;
    }
    let b = s.as_bytes();
    let num = |r: std::ops::Range<usize>| -> Option<i64> { s.get(r)?.parse().ok() };
    if b[4] != b'-' || b[7] != b'-' || !(b[10] == b'T' || b[10] == b't' || b[10] == b' ') {
        return None;
    }
    let (y, mo, d) = (num(0..4)?, num(5..7)? as u32, num(8..10)? as u32);
    let (h, mi, se) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || se > 60 {
        return None;
    }
    let mut rest = &s[19..];
    let mut frac = 0.0;
    if let Some(r) = rest.strip_prefix('.') {
        let n = r.bytes().take_while(|c| c.is_ascii_digit()).count();
        if n == 0 {
            return None;
        }
        frac = format!("0.{}", &r[..n]).parse().ok()?;
        rest = &r[n..];
    }
    let offset = match rest {
        "Z" | "z" => 0,
        _ if rest.len() == 6 && (rest.starts_with('+') || rest.starts_with('-')) => {
            let oh: i64 = rest[1..3].parse().ok()?;
            let om: i64 = rest[4..6].parse().ok()?;
            let o = oh * 3600 + om * 60;
            if rest.starts_with('-') {
                -o
            } else {
                o
            }
        }
        _ => return None,
    };
    let days = days_from_civil(y, mo, d);
    Some((days * 86_400 + h * 3600 + mi * 60 + se - offset) as f64 + frac)
}

/// Parse `YYYY-MM-DD` into the unix time of its midnight UTC.
pub fn parse_date(s: &str) -> Option<f64> {
    let b = s.as_bytes();
    if s.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return None;
    }
    let y: i64 = s[0..4].parse().ok()?;
    let m: u32 = s[5..7].parse().ok()?;
    let d: u32 = s[8..10].parse().ok()?;
    if !(1..=12).contains(&m) || !(1..=31).contains(&d) {
        return None;
    }
    Some((days_from_civil(y, m, d) * 86_400) as f64)
}

/// An HTTP 400-style error: which field, what was wrong.
#[derive(Debug, Clone)]
pub struct FieldError(pub String);

impl FieldError {
    pub fn new(msg: impl Into<String>) -> Self {
        FieldError(msg.into())
    }
}

fn short(v: &Value) -> String {
    let s = v.to_string();
    if s.len() > 80 {
        format!(
            "{}…",
            &s[..s
                .char_indices()
                .take(80)
                .last()
                .map(|(i, _)| i)
                .unwrap_or(0)]
        )
    } else {
        s
    }
}

/// Typed accessors over a JSON object that produce errors naming the field and value.
pub struct Obj<'a> {
    pub map: &'a Map<String, Value>,
    pub prefix: String,
}

impl<'a> Obj<'a> {
    pub fn root(v: &'a Value) -> Result<Obj<'a>, FieldError> {
        match v.as_object() {
            Some(map) => Ok(Obj {
                map,
                prefix: String::new(),
            }),
            None => Err(FieldError::new(format!(
                "request body must be a JSON object, got {}",
                short(v)
            ))),
        }
    }
    fn name(&self, key: &str) -> String {
        if self.prefix.is_empty() {
            key.to_string()
        } else {
            format!("{}.{}", self.prefix, key)
        }
    }
    pub fn get(&self, key: &str) -> Option<&'a Value> {
        match self.map.get(key) {
            Some(Value::Null) | None => None,
            Some(v) => Some(v),
        }
    }
    pub fn has(&self, key: &str) -> bool {
        self.get(key).is_some()
    }
    pub fn obj(&self, key: &str) -> Result<Obj<'a>, FieldError> {
        match self.get(key) {
            Some(Value::Object(map)) => Ok(Obj {
                map,
                prefix: self.name(key),
            }),
            Some(v) => Err(FieldError::new(format!(
                "field `{}` must be an object, got {}",
                self.name(key),
                short(v)
            ))),
            None => Err(FieldError::new(format!(
                "field `{}` is required",
                self.name(key)
            ))),
        }
    }
    pub fn opt_obj(&self, key: &str) -> Result<Option<Obj<'a>>, FieldError> {
        if self.has(key) {
            self.obj(key).map(Some)
        } else {
            Ok(None)
        }
    }
    pub fn str(&self, key: &str) -> Result<&'a str, FieldError> {
        match self.get(key) {
            Some(Value::String(s)) => Ok(s),
            Some(v) => Err(FieldError::new(format!(
                "field `{}` must be a string, got {}",
                self.name(key),
                short(v)
            ))),
            None => Err(FieldError::new(format!(
                "field `{}` is required",
                self.name(key)
            ))),
        }
    }
    pub fn opt_str(&self, key: &str) -> Result<Option<&'a str>, FieldError> {
        if self.has(key) {
            self.str(key).map(Some)
        } else {
            Ok(None)
        }
    }
    pub fn i64(&self, key: &str) -> Result<i64, FieldError> {
        match self.get(key) {
            Some(v) => v
                .as_i64()
                .or_else(|| {
                    v.as_f64()
                        .filter(|f| f.fract() == 0.0 && f.abs() < 9e15)
                        .map(|f| f as i64)
                })
                .ok_or_else(|| {
                    FieldError::new(format!(
                        "field `{}` must be an integer, got {}",
                        self.name(key),
                        short(v)
                    ))
                }),
            None => Err(FieldError::new(format!(
                "field `{}` is required",
                self.name(key)
            ))),
        }
    }
    pub fn opt_i64(&self, key: &str) -> Result<Option<i64>, FieldError> {
        if self.has(key) {
            self.i64(key).map(Some)
        } else {
            Ok(None)
        }
    }
    pub fn f64(&self, key: &str) -> Result<f64, FieldError> {
        match self.get(key) {
            Some(v) => v.as_f64().ok_or_else(|| {
                FieldError::new(format!(
                    "field `{}` must be a number, got {}",
                    self.name(key),
                    short(v)
                ))
            }),
            None => Err(FieldError::new(format!(
                "field `{}` is required",
                self.name(key)
            ))),
        }
    }
    pub fn opt_f64(&self, key: &str) -> Result<Option<f64>, FieldError> {
        if self.has(key) {
            self.f64(key).map(Some)
        } else {
            Ok(None)
        }
    }
    pub fn bool_or(&self, key: &str, default: bool) -> Result<bool, FieldError> {
        match self.get(key) {
            Some(Value::Bool(b)) => Ok(*b),
            Some(v) => Err(FieldError::new(format!(
                "field `{}` must be a boolean, got {}",
                self.name(key),
                short(v)
            ))),
            None => Ok(default),
        }
    }
    pub fn array(&self, key: &str) -> Result<&'a Vec<Value>, FieldError> {
        match self.get(key) {
            Some(Value::Array(a)) => Ok(a),
            Some(v) => Err(FieldError::new(format!(
                "field `{}` must be an array, got {}",
                self.name(key),
                short(v)
            ))),
            None => Err(FieldError::new(format!(
                "field `{}` is required",
                self.name(key)
            ))),
        }
    }
    /// A `{string: string}` map (e.g. user_metadata); other value types are stringified.
    pub fn opt_string_map(&self, key: &str) -> Result<Option<Map<String, Value>>, FieldError> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::Object(m)) => Ok(Some(m.clone())),
            Some(v) => Err(FieldError::new(format!(
                "field `{}` must be an object, got {}",
                self.name(key),
                short(v)
            ))),
        }
    }
}

/// Describe a JSON value briefly for error messages.
pub fn describe(v: &Value) -> String {
    short(v)
}

/// Percent-decode a URL component (`+` is left alone; invalid escapes pass through).
pub fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            let hex = |c: u8| (c as char).to_digit(16);
            if let (Some(h), Some(l)) = (hex(b[i + 1]), hex(b[i + 2])) {
                out.push((h * 16 + l) as u8);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Parse a query string into decoded pairs (`+` means space).
pub fn parse_query(q: &str) -> Vec<(String, String)> {
    q.split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (
                percent_decode(&k.replace('+', " ")),
                percent_decode(&v.replace('+', " ")),
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_round_trip() {
        let t = 1_800_000_000.25;
        let s = rfc3339(t);
        assert_eq!(s, "2027-01-15T08:00:00.250000Z");
        assert!((parse_rfc3339(&s).unwrap() - t).abs() < 1e-6);
        assert_eq!(
            parse_rfc3339("2026-07-13T00:00:00Z").unwrap() as i64,
            1_783_900_800
        );
        assert_eq!(
            parse_rfc3339("2026-07-13T02:00:00+02:00").unwrap() as i64,
            1_783_900_800
        );
        assert!(parse_rfc3339("2026-13-01T00:00:00Z").is_none());
        assert!(parse_rfc3339("yesterday").is_none());
        assert_eq!(utc_date(1_783_900_800.0), "2026-07-13");
        assert_eq!(parse_date("2026-07-13").unwrap() as i64, 1_783_900_800);
    }

    #[test]
    fn rng_is_deterministic_and_uuid_shaped() {
        let mut a = Rng::new(7);
        let mut b = Rng::new(7);
        assert_eq!(a.next_u64(), b.next_u64());
        let u = a.uuid();
        assert_eq!(u.len(), 36);
        assert_eq!(&u[14..15], "4");
        let mut c = Rng::new(8);
        assert_ne!(Rng::new(7).next_u64(), c.next_u64());
    }

    #[test]
    fn obj_errors_name_the_field() {
        let v: Value = serde_json::json!({"a": "x", "n": 3, "o": {"k": true}});
        let o = Obj::root(&v).unwrap();
        assert_eq!(o.i64("n").unwrap(), 3);
        let e = o.i64("a").unwrap_err().0;
        assert!(e.contains("`a`") && e.contains("\"x\""), "{e}");
        let e = o.obj("o").unwrap().str("k").unwrap_err().0;
        assert!(e.contains("`o.k`"), "{e}");
        assert!(o.str("missing").unwrap_err().0.contains("required"));
    }

    #[test]
    fn url_decoding() {
        assert_eq!(percent_decode("a%3Atrain%3A0"), "a:train:0");
        assert_eq!(percent_decode("100%"), "100%");
        assert_eq!(percent_decode("%zz"), "%zz");
        assert_eq!(
            parse_query("starting_on=2026-07-13T00%3A00%3A00Z&limit=5&x"),
            vec![
                ("starting_on".into(), "2026-07-13T00:00:00Z".into()),
                ("limit".into(), "5".into()),
                ("x".into(), "".into())
            ]
        );
    }
}
