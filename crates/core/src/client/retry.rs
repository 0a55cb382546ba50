//! The retry policies of the Python SDK 0.38, as pure functions of (attempt, headers,
//! clock, random draw). The async loops that use them live with their callers.
//!
//! | layer | used for | delay |
//! |---|---|---|
//! | HTTP (Stainless) | every request | `retry-after-ms` / `retry-after` (s or HTTP date) when in (0, 60] s, else `min(0.5·2ⁿ, 10)·(1 − 0.25·U)` |
//! | holder (`execute_with_retries`) | submits, REST calls | `min(2ᵏ, 30)` s within a 300 s window; HTTP 402 pauses 5 s at a time |
//! | future polling | `retrieve_future` | none for try_again/408/5xx; `min(2ᶜ, 30)` s for 429 and connection errors |
//! | sampling `RetryHandler` | each `sample()` | `min(0.5·2ᵃ, 10)` ± 25 % jitter, clamped to [0, 10] |

use std::time::Duration;

use crate::platform::Headers;

/// The holder-level retry window (Python `execute_with_retries`' `MAX_WAIT_TIME`).
pub const HOLDER_RETRY_WINDOW_SECS: f64 = 300.0;
/// Sleep between retries while billing is paused (HTTP 402).
pub const BILLING_PAUSE_SLEEP: Duration = Duration::from_secs(5);

/// Seconds the server asked us to wait: `retry-after-ms` (ms), else `retry-after` as
/// seconds (floats allowed), else `retry-after` as an HTTP date relative to `now_secs`.
pub fn parse_retry_after(headers: &Headers, now_secs: f64) -> Option<f64> {
    if let Some(ms) = headers
        .get("retry-after-ms")
        .and_then(crate::json::parse_float)
    {
        return Some(ms / 1000.0);
    }
    let ra = headers.get("retry-after")?;
    if let Some(secs) = crate::json::parse_float(ra) {
        return Some(secs);
    }
    Some(parse_http_date(ra)? - now_secs)
}

/// Seconds since the Unix epoch of a date header, read as Python's
/// `email.utils.parsedate_tz` and `mktime_tz` read it (what the SDK's
/// `_parse_retry_after_header` uses): the three HTTP forms (RFC 9110 5.6.7), a numeric
/// or named zone, and everything else that function lets through (a day 32 or an hour 25
/// is carried over, as `calendar.timegm` does). Two deliberate differences: a date
/// without a zone is UTC here (Python takes the machine's local time), and where Python
/// raises (a year outside 1..=9999) or counts past `i64`, the header is no date here.
pub fn parse_http_date(text: &str) -> Option<f64> {
    let (y, m, d, (hh, mi, ss), zone) = parsedate_tz(text)?;
    if !(1..=9999).contains(&y) {
        return None;
    }
    // Days from 1970-01-01 to the month's first day (Howard Hinnant's algorithm), as
    // `calendar.timegm` counts them; then the day, hour and so on, however large.
    let (y2, m2) = if m <= 2 { (y - 1, m + 9) } else { (y, m - 3) };
    let yoe = y2.rem_euclid(400);
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + (153 * m2 + 2) / 5;
    let days = (y2.div_euclid(400) * 146_097 + doe - 719_468).checked_add(d - 1)?;
    let secs = days
        .checked_mul(24)?
        .checked_add(hh)?
        .checked_mul(60)?
        .checked_add(mi)?
        .checked_mul(60)?
        .checked_add(ss)?
        .checked_sub(zone.unwrap_or(0))?;
    Some(secs as f64)
}

/// Python `email._parseaddr._parsedate_tz`, step for step: (year, month, day, (hour,
/// minute, second), zone offset in seconds, `None` when unknown).
#[allow(clippy::type_complexity)]
fn parsedate_tz(text: &str) -> Option<(i64, i64, i64, (i64, i64, i64), Option<i64>)> {
    const MONTHS: [&str; 24] = [
        "jan",
        "feb",
        "mar",
        "apr",
        "may",
        "jun",
        "jul",
        "aug",
        "sep",
        "oct",
        "nov",
        "dec",
        "january",
        "february",
        "march",
        "april",
        "may",
        "june",
        "july",
        "august",
        "september",
        "october",
        "november",
        "december",
    ];
    let month = |s: &str| MONTHS.iter().position(|m| s.eq_ignore_ascii_case(m));
    let [mut dd, mm, mut yy, mut tm, mut tz] = words(text)?;
    if dd.is_empty() || mm.is_empty() || yy.is_empty() {
        return None;
    }
    let m = match month(mm) {
        Some(m) => m,
        None => month(std::mem::replace(&mut dd, mm))?,
    } % 12
        + 1;
    dd = dd.strip_suffix(',').unwrap_or(dd);
    if yy.bytes().position(|b| b == b':').is_some_and(|i| i > 0) {
        std::mem::swap(&mut yy, &mut tm);
    }
    if let Some(y) = yy.strip_suffix(',') {
        yy = y;
        if yy.is_empty() {
            return None;
        }
    }
    if !yy.starts_with(|c: char| c.is_ascii_digit()) {
        std::mem::swap(&mut yy, &mut tz);
    }
    tm = tm.strip_suffix(',').unwrap_or(tm);
    let mut parts: Vec<&str> = tm.split(':').collect();
    if parts.len() == 1 && tm.bytes().any(|b| b == b'.') {
        parts = tm.split('.').collect();
    }
    let time = match parts[..] {
        [h, m] => (py_int(h)?, py_int(m)?, 0),
        [h, m, s] => (py_int(h)?, py_int(m)?, py_int(s)?),
        _ => return None,
    };
    let (mut y, d) = (py_int(yy)?, py_int(dd)?);
    if y < 100 {
        y += if y > 68 { 1900 } else { 2000 };
    }
    Some((y, m as i64, d, time, zone_offset(tz)))
}

/// `parsedate_tz`'s first steps: the words of a date, as (day, month, year, time,
/// zone) before they are read (a day name dropped, an RFC 850 date split at its dashes,
/// a zone joined to the time split off, a missing zone empty).
fn words(text: &str) -> Option<[&str; 5]> {
    const DAYS: [&str; 7] = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"];
    // `str.split()`: Python's whitespace is Unicode's and the four separators \x1c-\x1f.
    // Python keeps the whole list; its first six words decide everything (at most one
    // is dropped, and `data[:5]` is kept).
    let (mut data, mut n) = ([""; 6], 0);
    let words = text.split(|c: char| c.is_whitespace() || ('\x1c'..='\x1f').contains(&c));
    for w in words.filter(|t| !t.is_empty()).take(6) {
        data[n] = w;
        n += 1;
    }
    let first = data[0];
    if n == 0 {
        return None;
    } else if first.ends_with(',') || DAYS.iter().any(|d| first.eq_ignore_ascii_case(d)) {
        data.copy_within(1.., 0);
        n -= 1;
    } else if let Some(i) = first.bytes().rposition(|b| b == b',') {
        data[0] = first.get(i + 1..).unwrap_or_default();
    }
    if n == 3 {
        let mut stuff = data[0].split('-');
        if let (Some(a), Some(b), Some(c), None) =
            (stuff.next(), stuff.next(), stuff.next(), stuff.next())
        {
            data = [a, b, c, data[1], data[2], ""];
            n = 5;
        }
    }
    if n == 4 {
        let s = data[3];
        let at = |c| s.bytes().position(|b| b == c);
        // A zone joined to the time, else a dummy one.
        if let Some(i) = at(b'+').or_else(|| at(b'-')).filter(|&i| i > 0) {
            data[3] = s.get(..i).unwrap_or_default();
            data[4] = s.get(i..).unwrap_or_default();
        }
        n = 5;
    }
    let [dd, mm, yy, tm, tz, _] = data;
    (n >= 5).then_some([dd, mm, yy, tm, tz])
}

/// Python `parsedate_tz`'s zone: a name it knows, else `int(tz)` as `±hhmm`; `-0000`
/// and anything else unknown (`None`).
fn zone_offset(tz: &str) -> Option<i64> {
    const NAMED: [(&str, i64); 14] = [
        ("UT", 0),
        ("UTC", 0),
        ("GMT", 0),
        ("Z", 0),
        ("AST", -400),
        ("ADT", -300),
        ("EST", -500),
        ("EDT", -400),
        ("CST", -600),
        ("CDT", -500),
        ("MST", -700),
        ("MDT", -600),
        ("PST", -800),
        ("PDT", -700),
    ];
    let hhmm = match NAMED.iter().find(|(n, _)| tz.eq_ignore_ascii_case(n)) {
        Some(&(_, v)) => v,
        None => py_int(tz).filter(|&v| v != 0 || !tz.starts_with('-'))?,
    };
    let abs = hhmm.checked_abs()?;
    Some(hhmm.signum() * ((abs / 100) * 3600 + (abs % 100) * 60))
}

/// Python `int(s)` of a token without spaces: a sign, ASCII digits, single underscores
/// between digits (`None` past `i64`; Python's other Unicode digits are not read).
fn py_int(s: &str) -> Option<i64> {
    let digits = s.strip_prefix(['+', '-']).unwrap_or(s).as_bytes();
    let mut v: i64 = 0;
    for (i, &b) in digits.iter().enumerate() {
        if b.is_ascii_digit() {
            v = v.checked_mul(10)?.checked_add(i64::from(b - b'0'))?;
        } else if b != b'_' || i == 0 || !digits.get(i + 1).is_some_and(u8::is_ascii_digit) {
            return None;
        }
    }
    (!digits.is_empty()).then_some(if s.starts_with('-') { -v } else { v })
}

/// How many empty 400s in a row a connection pool turns into connection errors (Python
/// `MAX_CONNECTION_ERROR_RETRIES`, `lib/internal_client_holder.py:51`).
pub const MAX_CONNECTION_ERROR_RETRIES: u32 = 16;

/// An empty 400: what a CDN in front of the API answers when it rejects a connection
/// (Python `lib/internal_client_holder.py:94`: status 400 and a `content-length` that is
/// `"0"` or absent, `headers.get("content-length", "0") == "0"`). Ours also requires the
/// body to be empty: a `fetch` Response may carry no `content-length` (a caller's own
/// `fetch`, a chunked or HTTP/2 answer) while it has a body, which is the API's answer.
pub fn is_cdn_rejection(status: u16, headers: &Headers, body: &[u8]) -> bool {
    status == 400 && body.is_empty() && headers.get("content-length").unwrap_or("0") == "0"
}

/// How one request through a connection pool ended, as the pool's budget sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PoolOutcome {
    /// The call returned (any 2xx answer).
    Success,
    /// An empty 400 ([`is_cdn_rejection`]).
    CdnRejection,
    /// Any other failure (other statuses, no response): the budget does not move.
    OtherError,
}

/// A pool's connection-error budget after one request, and whether that request's
/// empty 400 becomes a connection error (which the layers above retry as one) rather
/// than a `BadRequestError`. Python `ClientConnectionPool.aclient`
/// (`lib/internal_client_holder.py:88-101`): a success gives one back (up to 16); an
/// empty 400 takes one while any are left, else it stays a 400.
///
/// One difference (tests/differential/NOTES.md): the pool's `others` requests still in
/// flight count as credit, since each success among them gives one back. So a burst
/// whose rejections reach the client before its successes (ours sends a burst faster
/// than Python does) loses none of them, and a 400 that persists is still final after
/// at most 16 + the pool's concurrency conversions (the budget goes below zero).
pub fn connection_budget(remaining: i32, others: u32, outcome: PoolOutcome) -> (i32, bool) {
    let max = MAX_CONNECTION_ERROR_RETRIES as i32;
    match outcome {
        PoolOutcome::Success => ((remaining + 1).min(max), false),
        PoolOutcome::CdnRejection if remaining + others as i32 > 0 => (remaining - 1, true),
        PoolOutcome::CdnRejection | PoolOutcome::OtherError => (remaining, false),
    }
}

/// Whether the HTTP layer retries a response: `x-should-retry: true|false` wins,
/// otherwise 408, 409, 429 and ≥ 500.
pub fn should_retry_response(status: u16, headers: &Headers) -> bool {
    match headers.get("x-should-retry") {
        Some("true") => true,
        Some("false") => false,
        _ => matches!(status, 408 | 409 | 429) || status >= 500,
    }
}

/// The HTTP layer's wait before retry number `retries_taken + 1`.
/// `random` is a uniform draw in [0, 1).
pub fn http_retry_delay(
    retries_taken: u32,
    headers: Option<&Headers>,
    now_secs: f64,
    random: f64,
) -> Duration {
    if let Some(ra) = headers.and_then(|h| parse_retry_after(h, now_secs)) {
        if ra > 0.0 && ra <= 60.0 {
            return crate::time::seconds(ra);
        }
    }
    let n = retries_taken.min(1000) as i32;
    let sleep = (0.5 * 2f64.powi(n)).min(10.0);
    let jitter = 1.0 - 0.25 * random;
    crate::time::seconds((sleep * jitter).max(0.0))
}

/// The holder layer's wait before its retry number `attempt + 1`, started at
/// `start_secs`; `None` once the 300 s window is spent.
pub fn holder_retry_delay(attempt: u32, start_secs: f64, now_secs: f64) -> Option<Duration> {
    let elapsed = now_secs - start_secs;
    if elapsed >= HOLDER_RETRY_WINDOW_SECS {
        return None;
    }
    let wait = 2f64.powi(attempt.min(30) as i32).min(30.0);
    let wait = wait
        .min(start_secs + HOLDER_RETRY_WINDOW_SECS - now_secs)
        .max(0.0);
    Some(crate::time::seconds(wait))
}

/// The future-polling wait after `consecutive` connection-ish errors (429, no response).
pub fn poll_backoff_delay(consecutive: u32) -> Duration {
    crate::time::seconds(2f64.powi(consecutive.min(30) as i32).min(30.0))
}

/// Sampling `RetryConfig` (the Python dataclass' defaults).
#[derive(Debug, Clone, PartialEq)]
pub struct SamplingRetryConfig {
    /// Concurrent samples per client (`None` = unlimited).
    pub max_connections: Option<usize>,
    /// Fail with "no progress" after this long without any sample completing.
    pub progress_timeout: Duration,
    /// First retry delay.
    pub retry_delay_base: f64,
    /// Maximum retry delay.
    pub retry_delay_max: f64,
    /// Symmetric jitter fraction.
    pub jitter_factor: f64,
    /// Retry at all.
    pub enable_retry_logic: bool,
    /// Apply `progress_timeout`.
    pub enable_stuck_detection: bool,
}

impl Default for SamplingRetryConfig {
    fn default() -> Self {
        SamplingRetryConfig {
            max_connections: Some(1000),
            progress_timeout: Duration::from_secs(7200),
            retry_delay_base: 0.5,
            retry_delay_max: 10.0,
            jitter_factor: 0.25,
            enable_retry_logic: true,
            enable_stuck_detection: true,
        }
    }
}

impl SamplingRetryConfig {
    /// The wait before retry `attempt + 1` (`attempt` counts from 0).
    pub fn delay(&self, attempt: u32, random: f64) -> Duration {
        let d =
            (self.retry_delay_base * 2f64.powi(attempt.min(1000) as i32)).min(self.retry_delay_max);
        let jitter = d * self.jitter_factor * (2.0 * random - 1.0);
        crate::time::seconds((d + jitter).min(self.retry_delay_max).max(0.0))
    }
}

/// The holder's 402 ("billing") pause: while within the server-given window since the
/// first 402 of an incident, callers sleep 5 s and retry silently. An incident resets
/// after 300 s without a 402.
#[derive(Debug, Clone, Default)]
pub struct BillingPause {
    first: Option<f64>,
    last_logged: Option<f64>,
}

impl BillingPause {
    /// Whether to pause (and retry) on this status at `now_secs`, given the server's
    /// `billing_exception_max_pause_duration_sec`.
    pub fn should_pause(&mut self, status: u16, now_secs: f64, max_pause_secs: f64) -> bool {
        if status != 402 {
            return false;
        }
        if self.last_logged.is_some_and(|t| now_secs - t > 300.0) {
            self.first = None;
            self.last_logged = None;
        }
        if self.first.is_some_and(|t| now_secs - t > max_pause_secs) {
            return false;
        }
        if self.last_logged.is_none_or(|t| now_secs - t > 60.0) {
            self.last_logged = Some(now_secs);
        }
        if self.first.is_none() {
            self.first = Some(now_secs);
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Date headers read as Python's `email.utils.parsedate_tz` + `mktime_tz` read them
    /// (the SDK's `_parse_retry_after_header`), run by the conformance venv's Python in
    /// UTC: the three HTTP forms of many instants with every zone form, then each of those
    /// mangled at random (tokens dropped, swapped, duplicated, commas, dashes, dots and
    /// out-of-range fields put in). Where Python raises (year 0 or past 9999), ours says
    /// "no date", which the retry policy treats alike: no hint.
    #[test]
    fn http_dates_are_pythons() {
        let mut texts = date_texts();
        let mut rng = 0x2545_f491_4f6c_dd1du64;
        let mut next = |n: usize| {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            (rng % n as u64) as usize
        };
        let junk = [
            ",", "-", ".", ":", "32", "25:61:61", "0", "99", "-0000", "+0530", "EST", "x", "",
            "Sunday,", "DECEMBER", "1_0", "+5", "10000", "00",
        ];
        for base in texts.clone() {
            for _ in 0..12 {
                let mut toks: Vec<String> = base.split(' ').map(str::to_string).collect();
                let i = next(toks.len());
                match next(5) {
                    0 => drop(toks.remove(i)),
                    1 => {
                        let j = next(toks.len());
                        toks.swap(i, j);
                    }
                    2 => toks.insert(i, toks[i].clone()),
                    3 => toks[i] = junk[next(junk.len())].to_string(),
                    _ => toks.insert(i, junk[next(junk.len())].to_string()),
                }
                texts.push(toks.join(if next(4) == 0 { "," } else { " " }));
            }
        }
        let input: String = texts
            .iter()
            .map(|t| format!("{}\n", serde_json::Value::from(t.as_str())))
            .collect();
        let script = "import sys, os, time, json, email.utils as u\nos.environ['TZ'] = 'UTC'\ntime.tzset()\nfor line in sys.stdin:\n t = u.parsedate_tz(json.loads(line))\n try:\n  print('None' if t is None else repr(float(u.mktime_tz(t))))\n except (ValueError, OverflowError):\n  print('raises')";
        let out = python_oracle(script, &[], &input);
        assert_eq!(out.len(), texts.len());
        let count = |what: &str| out.iter().filter(|p| *p == what).count();
        // The table holds dates, non-dates, and dates where Python raises.
        let (none, all) = (count("None"), texts.len());
        assert!(none > all / 10 && none < all * 9 / 10, "{none} of {all}");
        assert!(count("raises") > 0);
        let mut diffs = Vec::new();
        for (text, py) in texts.iter().zip(&out) {
            let ours = parse_http_date(text);
            let want = match py.as_str() {
                "None" | "raises" => None,
                v => Some(v.parse::<f64>().expect("a float")),
            };
            if ours != want {
                diffs.push(format!("{text:?}: ours {ours:?}, Python {py}"));
            }
        }
        assert!(
            diffs.is_empty(),
            "{} differences:\n{}",
            diffs.len(),
            diffs.join("\n")
        );
    }

    /// Each instant in the three HTTP forms (and variants Python reads: full names, no
    /// weekday, two-digit years, numeric and named zones, dotted times).
    fn date_texts() -> Vec<String> {
        let mut texts = Vec::new();
        for t in [
            0u64,
            784_111_777,
            951_782_400,
            1_700_000_000,
            2_147_483_647,
            4_102_444_800,
            253_402_300_799,
        ] {
            let imf = httpdate::fmt_http_date(std::time::UNIX_EPOCH + Duration::from_secs(t));
            let f: Vec<&str> = imf.split([' ', ',']).filter(|x| !x.is_empty()).collect();
            let [wd, d, mon, y, hms, _] = f[..] else {
                panic!("{imf}")
            };
            let yy = &y[2..];
            texts.extend([
                imf.clone(),
                format!("{wd}day, {d}-{mon}-{yy} {hms} GMT"),
                format!("{wd} {mon} {:>2} {hms} {y}", d.trim_start_matches('0')),
                format!("{d} {mon} {y} {hms}"),
                format!(
                    "{wd},{d} {} {y} {}",
                    mon.to_uppercase(),
                    hms.replace(':', ".")
                ),
            ]);
            for zone in [
                "+0100", "-0500", "-0000", "+0000", "EST", "pdt", "Z", "UT", "+1",
            ] {
                texts.push(format!("{wd}, {d} {mon} {y} {hms} {zone}"));
                texts.push(format!("{d} {mon} {y} {hms}{zone}"));
            }
        }
        texts.extend(
            [
                "",
                " ",
                "soon",
                "1.5",
                "Sun, 32 Nov 1994 08:49:37 GMT",
                "Sun, 06 Nov 1994 25:00:00 GMT",
                "Sun, 06 November 0 08:49:37 GMT",
                "Sun, 06 Nov 10000 08:49:37 GMT",
                "Sun, 06 Nov 1994 08:49",
                "Sun, 06 Nov 99999999999999999 08:49:37 GMT",
                "d?, 21 Oct ct 4033333304304 ",
                "Sun, 06 Nov 1_994 08:49:37 +01_00",
                "Nov 06 1994 08:49:37",
            ]
            .map(str::to_string),
        );
        texts
    }

    fn h(pairs: &[(&str, &str)]) -> Headers {
        Headers(
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        )
    }

    #[test]
    fn retry_after_forms() {
        assert_eq!(
            parse_retry_after(&h(&[("retry-after-ms", "1500")]), 0.0),
            Some(1.5)
        );
        assert_eq!(
            parse_retry_after(&h(&[("Retry-After", "2.5")]), 0.0),
            Some(2.5)
        );
        // An HTTP date 3 s in the future.
        let now = 1_700_000_000.0;
        let date =
            httpdate::fmt_http_date(std::time::UNIX_EPOCH + Duration::from_secs_f64(now + 3.0));
        assert_eq!(
            parse_retry_after(&h(&[("retry-after", &date)]), now),
            Some(3.0)
        );
        assert_eq!(parse_retry_after(&h(&[("retry-after", "soon")]), now), None);
        // retry-after-ms wins over retry-after; a bad ms value falls through.
        assert_eq!(
            parse_retry_after(&h(&[("retry-after", "9"), ("retry-after-ms", "100")]), 0.0),
            Some(0.1)
        );
        assert_eq!(
            parse_retry_after(&h(&[("retry-after", "9"), ("retry-after-ms", "x")]), 0.0),
            Some(9.0)
        );
    }

    /// The HTTP layer's waits against the Python SDK's own `_calculate_retry_timeout` (and
    /// its `_parse_retry_after_header`), run by the conformance venv's Python with its
    /// `random()` and `time.time()` fixed: every retry count, header form (seconds, floats,
    /// milliseconds, HTTP dates past and future, nonsense) and jitter draw of the table.
    #[test]
    fn http_delays_are_pythons() {
        let now = 1_700_000_000.5;
        let date = |d: f64| {
            httpdate::fmt_http_date(std::time::UNIX_EPOCH + Duration::from_secs_f64(now + d))
        };
        let mut headers: Vec<Vec<(String, String)>> = vec![vec![]];
        for v in [
            "0", "1", "2.5", "60", "61", "-3", "abc", "1e1", " 7 ", "nan", "inf",
        ] {
            headers.push(vec![("retry-after".into(), v.into())]);
        }
        for v in ["0", "1500", "60000", "60001", "x", "-5", "0.5"] {
            headers.push(vec![("retry-after-ms".into(), v.into())]);
            headers.push(vec![
                ("retry-after-ms".into(), v.into()),
                ("retry-after".into(), "9".into()),
            ]);
        }
        for d in [-30.0, 0.0, 3.0, 59.0, 61.0, 3600.0] {
            headers.push(vec![("retry-after".into(), date(d))]);
        }
        let mut cases = Vec::new();
        for hs in &headers {
            for retries in [0u32, 1, 2, 4, 5, 12] {
                for r in [0.0, 0.37, 0.999] {
                    cases.push((hs.clone(), retries, r));
                }
            }
        }
        let input: String = cases
            .iter()
            .map(|(hs, retries, r)| {
                let hs: serde_json::Map<String, serde_json::Value> = hs
                    .iter()
                    .map(|(k, v)| (k.clone(), serde_json::Value::from(v.clone())))
                    .collect();
                format!("{}\n", serde_json::json!({"h": hs, "n": retries, "r": r}))
            })
            .collect();
        let script = "import sys, json, time, httpx\nfrom tinker import _base_client as b\nfrom tinker._client import AsyncTinker\nfrom tinker._models import FinalRequestOptions\nc = AsyncTinker(api_key='tml-' + '0' * 60, base_url='http://127.0.0.1:9')\no = FinalRequestOptions(method='post', url='/x')\ntime.time = lambda: float(sys.argv[1])\nfor line in sys.stdin:\n q = json.loads(line)\n b.random = lambda r=q['r']: r\n h = httpx.Headers(q['h']) if q['h'] else None\n print(repr(c._calculate_retry_timeout(c.max_retries - q['n'], o, h)))";
        let out = python_oracle(script, &[&format!("{now}")], &input);
        assert_eq!(out.len(), cases.len());
        for ((hs, retries, r), py) in cases.iter().zip(&out) {
            let headers = Headers(hs.clone());
            let ours = http_retry_delay(*retries, Some(&headers), now, *r).as_secs_f64();
            let py: f64 = py.parse().expect("a float");
            assert!(
                (ours - py).abs() < 1e-6,
                "headers {hs:?}, retry {retries}, random {r}: ours {ours}, Python {py}"
            );
        }
    }

    /// Runs `script` with the conformance venv's Python (where the SDK is installed).
    fn python_oracle(script: &str, args: &[&str], input: &str) -> Vec<String> {
        let python = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/conformance/.venv/bin/python"
        );
        let args: Vec<&str> = ["-c", script]
            .into_iter()
            .chain(args.iter().copied())
            .collect();
        tinker_support::testing::oracle(python, &args, input)
    }

    #[test]
    fn http_delay_honours_server_hint_only_in_range() {
        let hint = h(&[("retry-after", "7")]);
        assert_eq!(
            http_retry_delay(0, Some(&hint), 0.0, 0.5),
            Duration::from_secs(7)
        );
        let too_long = h(&[("retry-after", "61")]);
        // Falls back to exponential: 0.5 * 2^2 = 2 s, jitter factor (1 - 0.25 * 0) = 1.
        assert_eq!(
            http_retry_delay(2, Some(&too_long), 0.0, 0.0),
            Duration::from_secs(2)
        );
        let zero = h(&[("retry-after", "0")]);
        assert_eq!(
            http_retry_delay(0, Some(&zero), 0.0, 0.0),
            Duration::from_millis(500)
        );
        // Capped at 10 s; maximal jitter takes 25 % off.
        assert_eq!(
            http_retry_delay(10, None, 0.0, 0.0),
            Duration::from_secs(10)
        );
        let d = http_retry_delay(10, None, 0.0, 0.999_999).as_secs_f64();
        assert!((7.5..7.51).contains(&d), "{d}");
    }

    /// Python `lib/internal_client_holder.py:88-101` line by line: success refunds one
    /// (`if remaining < MAX: remaining += 1`), an empty 400 with budget left raises
    /// `APIConnectionError` and spends one, without budget it re-raises the 400; other
    /// errors leave the budget alone.
    #[test]
    fn connection_error_budget_of_a_pool() {
        use PoolOutcome::*;
        let rows = [
            (16, 0, Success, 16, false),
            (15, 0, Success, 16, false),
            (0, 0, Success, 1, false),
            (-5, 3, Success, -4, false),
            (16, 0, CdnRejection, 15, true),
            (1, 0, CdnRejection, 0, true),
            (0, 0, CdnRejection, 0, false),
            (0, 1, CdnRejection, -1, true),
            (-4, 5, CdnRejection, -5, true),
            (-5, 5, CdnRejection, -5, false),
            (7, 9, OtherError, 7, false),
        ];
        for (before, others, outcome, after, converted) in rows {
            assert_eq!(
                connection_budget(before, others, outcome),
                (after, converted),
                "{before} {others} {outcome:?}"
            );
        }
        // Alone (Python's case): 17 empty 400s in a row, 16 become connection errors.
        // With 40 others in flight: 56, then the 400 is final.
        for (others, want) in [(0, 16), (40, 56)] {
            let mut b = MAX_CONNECTION_ERROR_RETRIES as i32;
            let converted = (0..100)
                .take_while(|_| {
                    let (n, c) = connection_budget(b, others, CdnRejection);
                    b = n;
                    c
                })
                .count();
            assert_eq!(converted, want, "{others} in flight");
        }
    }

    #[test]
    fn empty_400s_are_cdn_rejections() {
        let (zero, none) = (h(&[("content-length", "0")]), h(&[]));
        assert!(is_cdn_rejection(400, &zero, b""));
        assert!(
            is_cdn_rejection(400, &none, b""),
            "absent counts as 0 in Python"
        );
        let detail = b"{\"detail\":\"bad\"}";
        assert!(!is_cdn_rejection(
            400,
            &h(&[("content-length", "16")]),
            detail
        ));
        assert!(
            !is_cdn_rejection(400, &none, b"{}"),
            "a body without a length is an answer"
        );
        assert!(!is_cdn_rejection(401, &zero, b""));
    }

    #[test]
    fn should_retry_matches_stainless() {
        assert!(should_retry_response(408, &h(&[])));
        assert!(should_retry_response(409, &h(&[])));
        assert!(should_retry_response(429, &h(&[])));
        assert!(should_retry_response(502, &h(&[])));
        assert!(!should_retry_response(400, &h(&[])));
        assert!(!should_retry_response(
            503,
            &h(&[("x-should-retry", "false")])
        ));
        assert!(should_retry_response(
            400,
            &h(&[("x-should-retry", "true")])
        ));
    }

    #[test]
    fn holder_window() {
        assert_eq!(
            holder_retry_delay(0, 0.0, 0.0),
            Some(Duration::from_secs(1))
        );
        assert_eq!(
            holder_retry_delay(6, 0.0, 10.0),
            Some(Duration::from_secs(30))
        );
        // Never sleeps past the window.
        assert_eq!(
            holder_retry_delay(6, 0.0, 290.0),
            Some(Duration::from_secs(10))
        );
        assert_eq!(holder_retry_delay(0, 0.0, 300.0), None);
    }

    #[test]
    fn sampling_delay_has_symmetric_jitter() {
        let c = SamplingRetryConfig::default();
        assert_eq!(c.delay(0, 0.5), Duration::from_millis(500));
        assert_eq!(c.delay(1, 0.0), Duration::from_secs_f64(0.75));
        assert_eq!(c.delay(1, 1.0), Duration::from_secs_f64(1.25));
        assert_eq!(c.delay(20, 1.0), Duration::from_secs(10));
        assert_eq!(poll_backoff_delay(0), Duration::from_secs(1));
        assert_eq!(poll_backoff_delay(9), Duration::from_secs(30));
    }

    #[test]
    fn billing_pause_window_and_reset() {
        let mut p = BillingPause::default();
        assert!(!p.should_pause(500, 0.0, 3600.0));
        assert!(p.should_pause(402, 0.0, 100.0));
        assert!(p.should_pause(402, 50.0, 100.0));
        assert!(p.should_pause(402, 90.0, 100.0));
        assert!(!p.should_pause(402, 101.0, 100.0), "window exceeded");
        // A new incident after 300 s of quiet.
        assert!(p.should_pause(402, 500.0, 100.0));
    }
}
