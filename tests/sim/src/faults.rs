//! Fault injection.
//!
//! Grammar (`--faults SPEC`, or `{"faults": SPEC}` on `POST /_sim/config`):
//!
//! ```text
//! SPEC  := "" | ITEM ("," ITEM)*
//! ITEM  := KIND ":" RATE [":" PARAM] ["@" SCOPE]
//! RATE  := a probability in [0, 1]
//! SCOPE := a substring of the request path; a trailing "$" anchors it at the end
//! ```
//!
//! Decisions are pseudo-random but deterministic under `--seed`: a request's coin is a
//! hash of (seed, item, path, body, how many times this exact (path, body) was seen),
//! so the k-th identical request always gets the same decision whatever the
//! interleaving of other requests. Per-future faults (`storm`, `expire`, `paused`) are
//! decided once per request id. Faults are decided before a request is applied: a
//! faulted request was not applied.

use crate::util::{hash_bytes, hash_str, hash_words, unit_f64};
use std::collections::{HashMap, HashSet};
use std::sync::Mutex;

#[derive(Clone, Debug, PartialEq)]
pub enum Kind {
    /// 429 with `Retry-After: <param s>`.
    RateLimit,
    /// 429 with `retry-after-ms: <param ms>`.
    RateLimitMs,
    /// 429 with `Retry-After: <HTTP-date now + param s>`.
    RateLimitDate,
    /// 402 / 500 / 502 / 503 with a JSON `detail` (402: the billing status the Python SDK
    /// pauses on, 5 s at a time within the server's `billing_exception_max_pause_duration_sec`).
    Status(u16),
    /// 408 (a try_again body on retrieve_future).
    Timeout408,
    /// Close the connection without a response; the request was not applied.
    Drop,
    /// Apply the request, then close the connection without a response (a lost
    /// response: the client's retry must be deduplicated by seq_id / idempotency key).
    Lost,
    /// Delay the response by `param` ms (the request is applied normally).
    Slow,
    /// retrieve_future: the next `param` polls of the future answer try_again.
    Storm,
    /// retrieve_future: 410, the future is discarded (sampling futures; `any`: all).
    Expire,
    /// retrieve_future: three try_again answers with a paused queue state.
    Paused,
    /// retrieve_future: the finished result cannot be read as its type: a protobuf one
    /// starts with a field of the invalid wire type 7, a JSON one is
    /// `{"injected": "unreadable result"}` (`param`: `proto` or `json` only).
    Unreadable,
    /// 200 with a truncated JSON body (the request is not applied).
    Malformed,
    /// 502 with a non-JSON (truncated HTML) body.
    Garbled,
    /// 400 with an empty body (`content-length: 0`): what a CDN in front of the API
    /// answers when it rejects a connection; not applied.
    Empty400,
    /// 401 `WWW-Authenticate: Bearer error="invalid_token"` (only when JWT auth is on).
    InvalidToken,
    /// Adds `x-deprecation-note` (+ `x-deprecation-level: param`).
    Deprecation,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Item {
    pub kind: Kind,
    pub name: String,
    pub rate: f64,
    /// `1/N` as the rate: every N-th matching request (or future) instead of a coin.
    pub every: Option<u64>,
    pub param: Option<String>,
    pub scope: Option<String>,
}

impl Item {
    pub fn param_u64(&self, default: u64) -> u64 {
        self.param
            .as_deref()
            .and_then(|p| p.parse().ok())
            .unwrap_or(default)
    }

    fn default_scope_matches(&self, path: &str) -> bool {
        let api = path.starts_with("/api/v1/") && !path.starts_with("/api/v1/auth/apikey");
        match self.kind {
            Kind::Storm | Kind::Expire | Kind::Paused | Kind::Unreadable => {
                path == "/api/v1/retrieve_future"
            }
            Kind::Malformed => path == "/api/v1/session_heartbeat",
            Kind::Lost => LOST_DEFAULT_SCOPE
                .iter()
                .any(|p| path.strip_prefix("/api/v1/") == Some(*p)),
            Kind::InvalidToken => {
                api && path != "/api/v1/auth/token" && path != "/api/v1/client/config"
            }
            _ => api,
        }
    }

    pub fn matches(&self, path: &str) -> bool {
        if !path.starts_with("/api/") {
            return false;
        }
        match &self.scope {
            None => self.default_scope_matches(path),
            Some(s) => match s.strip_suffix('$') {
                Some(anchored) => path.ends_with(anchored),
                None => path.contains(s.as_str()),
            },
        }
    }

    /// Whether this kind is decided once per future (at its first poll), not per request.
    fn per_future(&self) -> bool {
        matches!(
            self.kind,
            Kind::Storm | Kind::Expire | Kind::Paused | Kind::Unreadable
        )
    }

    /// Whether this kind is decided per request (vs per future or a modifier).
    fn blocks(&self) -> bool {
        !matches!(
            self.kind,
            Kind::Slow
                | Kind::Deprecation
                | Kind::Storm
                | Kind::Expire
                | Kind::Paused
                | Kind::Unreadable
        )
    }
}

pub const KINDS: &[&str] = &[
    "402",
    "429",
    "429ms",
    "429date",
    "500",
    "502",
    "503",
    "408",
    "drop",
    "lost",
    "slow",
    "storm",
    "expire",
    "paused",
    "unreadable",
    "malformed",
    "garbled",
    "empty400",
    "401",
    "deprecation",
];

/// Endpoints whose retries are idempotent (seq_id, sampling seq_id, idempotency key or
/// id-derived dedupe), where `lost` applies by default.
pub const LOST_DEFAULT_SCOPE: &[&str] = &[
    "create_model",
    "forward_backward",
    "optim_step",
    "save_weights",
    "save_weights_for_sampler",
    "save_weights_external",
    "load_weights",
    "create_sampling_session",
    "asample",
    "copy_weights",
    "create_custom_loss",
];

pub fn parse(spec: &str) -> Result<Vec<Item>, String> {
    let mut out = Vec::new();
    for raw in spec.split(',') {
        let raw = raw.trim();
        if raw.is_empty() {
            continue;
        }
        let (body, scope) = match raw.split_once('@') {
            Some((b, s)) if !s.is_empty() => (b, Some(s.to_string())),
            Some(_) => return Err(format!("fault {raw:?}: empty scope after '@'")),
            None => (raw, None),
        };
        let mut parts = body.splitn(3, ':');
        let name = parts.next().unwrap_or_default().trim().to_string();
        let kind = match name.as_str() {
            "429" => Kind::RateLimit,
            "429ms" => Kind::RateLimitMs,
            "429date" => Kind::RateLimitDate,
            "402" => Kind::Status(402),
            "500" => Kind::Status(500),
            "502" => Kind::Status(502),
            "503" => Kind::Status(503),
            "408" => Kind::Timeout408,
            "drop" => Kind::Drop,
            "lost" => Kind::Lost,
            "slow" => Kind::Slow,
            "storm" => Kind::Storm,
            "expire" => Kind::Expire,
            "paused" => Kind::Paused,
            "unreadable" => Kind::Unreadable,
            "malformed" => Kind::Malformed,
            "garbled" => Kind::Garbled,
            "empty400" => Kind::Empty400,
            "401" => Kind::InvalidToken,
            "deprecation" => Kind::Deprecation,
            _ => {
                return Err(format!(
                    "fault {raw:?}: unknown kind {name:?}; known kinds: {}",
                    KINDS.join(", ")
                ))
            }
        };
        let rate_s = parts
            .next()
            .ok_or_else(|| format!("fault {raw:?}: missing rate (KIND:RATE)"))?;
        let (rate, every) = parse_rate(raw, rate_s.trim())?;
        let param = parts
            .next()
            .map(|p| p.trim().to_string())
            .filter(|p| !p.is_empty());
        if let Some(p) = &param {
            let numeric = matches!(
                kind,
                Kind::RateLimit
                    | Kind::RateLimitMs
                    | Kind::RateLimitDate
                    | Kind::Slow
                    | Kind::Storm
            );
            if numeric && p.parse::<u64>().is_err() {
                return Err(format!(
                    "fault {raw:?}: parameter {p:?} must be a non-negative integer"
                ));
            }
            if kind == Kind::Paused && p != "capacity" && p != "rate_limit" {
                return Err(format!(
                    "fault {raw:?}: paused takes capacity or rate_limit, got {p:?}"
                ));
            }
            if kind == Kind::Unreadable && p != "proto" && p != "json" {
                return Err(format!(
                    "fault {raw:?}: unreadable takes proto or json, got {p:?}"
                ));
            }
            if kind == Kind::Expire && p != "any" {
                return Err(format!(
                    "fault {raw:?}: expire takes the parameter any, got {p:?}"
                ));
            }
        }
        out.push(Item {
            kind,
            name,
            rate,
            every,
            param,
            scope,
        });
    }
    Ok(out)
}

/// A rate: a probability in [0, 1], or `1/N` (every N-th match, N ≥ 1).
fn parse_rate(raw: &str, text: &str) -> Result<(f64, Option<u64>), String> {
    if let Some(n) = text.strip_prefix("1/") {
        return match n.parse::<u64>() {
            Ok(n) if n >= 1 => Ok((1.0 / n as f64, Some(n))),
            _ => Err(format!(
                "fault {raw:?}: rate {text:?}: 1/N needs a whole N of at least 1"
            )),
        };
    }
    let rate: f64 = text
        .parse()
        .map_err(|_| format!("fault {raw:?}: rate {text:?} is not a number (or 1/N)"))?;
    if !(0.0..=1.0).contains(&rate) {
        return Err(format!("fault {raw:?}: rate {rate} is outside [0, 1]"));
    }
    Ok((rate, None))
}

/// The faults that apply to one request.
#[derive(Debug, Default, Clone)]
pub struct Decision {
    pub block: Option<Item>,
    pub slow_ms: u64,
    pub deprecation: Option<String>,
}

/// Per-future faults.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct FutureFaults {
    pub storm: u32,
    pub expire: bool,
    pub paused: Option<(&'static str, u32)>,
    /// The result is unreadable: `Some(None)` either encoding, `Some(Some(proto))` only
    /// a protobuf (`true`) or a JSON (`false`) one.
    pub unreadable: Option<Option<bool>>,
}

pub struct Injector {
    seed: u64,
    items: Vec<Item>,
    seen: Mutex<HashMap<u64, u32>>,
    invalid_token_keys: Mutex<HashSet<String>>,
    /// Matches counted per item, for `1/N` rates (reset when the item is injected).
    counts: Mutex<Vec<u64>>,
}

impl Injector {
    pub fn new(seed: u64, items: Vec<Item>) -> Injector {
        Injector {
            seed,
            counts: Mutex::new(vec![0; items.len()]),
            items,
            seen: Mutex::new(HashMap::new()),
            invalid_token_keys: Mutex::new(HashSet::new()),
        }
    }

    fn coin(&self, idx: usize, words: &[u64]) -> f64 {
        let mut w = vec![self.seed, idx as u64 + 1];
        w.extend_from_slice(words);
        unit_f64(hash_words(&w))
    }

    /// Whether item `idx` fires on a match: its coin, or for a `1/N` rate the N-th match
    /// since it last fired. `free` says whether the fault could be injected now; a `1/N`
    /// item whose turn comes while another fault holds the request waits for the next
    /// match, so every N-th match is injected and none is lost to a collision.
    fn fires(&self, idx: usize, it: &Item, words: &[u64], free: bool) -> bool {
        let Some(n) = it.every else {
            return self.coin(idx, words) < it.rate;
        };
        let mut counts = self.counts.lock().unwrap_or_else(|e| e.into_inner());
        counts[idx] += 1;
        if counts[idx] >= n && free {
            counts[idx] = 0;
            return true;
        }
        false
    }

    /// Decide the request-level faults of a request.
    /// Whether any fault is configured.
    pub fn active(&self) -> bool {
        !self.items.is_empty()
    }

    pub fn decide(
        &self,
        path: &str,
        body: &[u8],
        idempotency_key: Option<&str>,
        jwt_on: bool,
    ) -> Decision {
        let mut d = Decision::default();
        if self.items.is_empty() {
            return d;
        }
        let ph = hash_str(path);
        let bh = hash_bytes(body);
        let occurrence = {
            let mut seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
            if seen.len() > 2_000_000 {
                seen.clear();
            }
            let c = seen.entry(hash_words(&[ph, bh])).or_insert(0);
            *c += 1;
            *c as u64
        };
        for (i, it) in self.items.iter().enumerate() {
            let free = !it.blocks() || d.block.is_none();
            // Per-future kinds are decided by `decide_future`: a poll must not spend
            // their `1/N` turns.
            if it.per_future()
                || !it.matches(path)
                || !self.fires(i, it, &[ph, bh, occurrence], free)
            {
                continue;
            }
            match it.kind {
                Kind::Slow => d.slow_ms = d.slow_ms.max(it.param_u64(300)),
                Kind::Deprecation => {
                    d.deprecation.get_or_insert_with(|| {
                        it.param.clone().unwrap_or_else(|| "warning".into())
                    });
                }
                Kind::InvalidToken => {
                    // Only meaningful with JWT auth; a replay (same idempotency key) is
                    // never rejected twice, so the client's single replay succeeds.
                    if !jwt_on || d.block.is_some() {
                        continue;
                    }
                    if let Some(k) = idempotency_key {
                        let mut keys = self
                            .invalid_token_keys
                            .lock()
                            .unwrap_or_else(|e| e.into_inner());
                        if !keys.insert(k.to_string()) {
                            continue;
                        }
                    }
                    d.block = Some(it.clone());
                }
                _ if it.blocks() && d.block.is_none() => d.block = Some(it.clone()),
                _ => {}
            }
        }
        d
    }

    /// Decide the per-future faults of a request id (once per future).
    pub fn decide_future(&self, request_id: &str, sampling: bool) -> FutureFaults {
        let mut f = FutureFaults::default();
        let rh = hash_str(request_id);
        for (i, it) in self.items.iter().enumerate() {
            if !it.per_future() || !it.matches("/api/v1/retrieve_future") {
                continue;
            }
            let hit = self.fires(i, it, &[rh, 0xF07], true);
            match it.kind {
                Kind::Storm if hit => f.storm = f.storm.max(it.param_u64(20) as u32),
                Kind::Expire if hit && (sampling || it.param.as_deref() == Some("any")) => {
                    f.expire = true
                }
                Kind::Unreadable if hit => {
                    f.unreadable = Some(match it.param.as_deref() {
                        Some("proto") => Some(true),
                        Some("json") => Some(false),
                        _ => None,
                    })
                }
                Kind::Paused if hit => {
                    let which = match it.param.as_deref() {
                        Some("capacity") => "paused_capacity",
                        Some("rate_limit") => "paused_rate_limit",
                        _ if rh % 2 == 0 => "paused_capacity",
                        _ => "paused_rate_limit",
                    };
                    f.paused = Some((which, 3));
                }
                _ => {}
            }
        }
        f
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `1/N`: exactly every N-th match is injected, and a turn that falls on a request
    /// another fault already holds moves to the next match.
    #[test]
    fn every_nth() {
        let items = parse("503:1/3, 502:1/2").unwrap();
        assert_eq!(items[0].every, Some(3));
        let inj = Injector::new(1, items);
        let kinds: Vec<Option<String>> = (0..12)
            .map(|i| {
                inj.decide("/api/v1/get_info", format!("{i}").as_bytes(), None, false)
                    .block
                    .map(|b| b.name)
            })
            .collect();
        // 503 on matches 3, 6, 9, 12; 502 on every 2nd match since it last fired, its
        // turn on 6 and 12 (held by 503) moved to 7 (and past the end).
        let at = |k: &str| -> Vec<usize> {
            (0..kinds.len())
                .filter(|&i| kinds[i].as_deref() == Some(k))
                .map(|i| i + 1)
                .collect()
        };
        assert_eq!(at("503"), [3, 6, 9, 12], "{kinds:?}");
        assert_eq!(at("502"), [2, 4, 7, 10], "{kinds:?}");
    }

    /// A per-future `1/N` kind counts futures, not the polls in between.
    #[test]
    fn every_nth_future() {
        let inj = Injector::new(1, parse("storm:1/2:3, 503:1/100").unwrap());
        let mut storms = 0;
        for i in 0..6 {
            for _ in 0..5 {
                inj.decide(
                    "/api/v1/retrieve_future",
                    format!("{i}").as_bytes(),
                    None,
                    false,
                );
            }
            storms += u32::from(inj.decide_future(&format!("r{i}"), false).storm > 0);
        }
        assert_eq!(storms, 3);
    }

    #[test]
    fn grammar() {
        let items = parse("429:0.1, 429ms:0.2:50@asample, drop:0.05@retrieve_future$, paused:1:capacity, expire:0.3:any").unwrap();
        assert_eq!(items.len(), 5);
        assert_eq!(items[1].param.as_deref(), Some("50"));
        assert_eq!(items[1].scope.as_deref(), Some("asample"));
        assert!(items[2].matches("/api/v1/retrieve_future"));
        assert!(!items[2].matches("/api/v1/retrieve_futures"));
        assert!(parse("").unwrap().is_empty());
        for bad in [
            "nope:0.1",
            "429",
            "429:2",
            "429:x",
            "slow:0.1:abc",
            "paused:1:later",
            "500:0.1@",
            "500:1/0",
            "500:1/x",
            "500:2/3",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
        assert!(parse("nope:1").unwrap_err().contains("known kinds"));
        // Every listed kind parses, and the billing status is a plain status reply.
        for k in KINDS {
            assert!(parse(&format!("{k}:0.5")).is_ok(), "{k}");
        }
        assert_eq!(parse("402:1").unwrap()[0].kind, Kind::Status(402));
    }

    #[test]
    fn default_scopes() {
        let it = |s: &str| parse(s).unwrap().remove(0);
        assert!(it("500:1").matches("/api/v1/forward_backward"));
        assert!(!it("500:1").matches("/_sim/health"));
        assert!(!it("500:1").matches("/api/v1/auth/apikey/me"));
        assert!(it("malformed:1").matches("/api/v1/session_heartbeat"));
        assert!(!it("malformed:1").matches("/api/v1/asample"));
        assert!(it("malformed:1@asample").matches("/api/v1/asample"));
        assert!(!it("401:1").matches("/api/v1/auth/token"));
        assert!(!it("storm:1").matches("/api/v1/retrieve_futures"));
        assert!(it("lost:1").matches("/api/v1/forward_backward"));
        assert!(!it("lost:1").matches("/api/v1/create_session"));
        assert!(!it("lost:1").matches("/api/v1/training_runs/x/checkpoints/weights/a/publish"));
    }

    #[test]
    fn deterministic_rates_and_occurrences() {
        let run = || {
            let inj = Injector::new(42, parse("500:0.3").unwrap());
            (0..200)
                .map(|i| {
                    inj.decide("/api/v1/x", format!("{}", i % 7).as_bytes(), None, false)
                        .block
                        .is_some()
                })
                .collect::<Vec<_>>()
        };
        let a = run();
        assert_eq!(a, run());
        let hits = a.iter().filter(|b| **b).count();
        assert!((35..85).contains(&hits), "{hits}");
        // A different seed gives a different pattern.
        let inj = Injector::new(43, parse("500:0.3").unwrap());
        let b: Vec<bool> = (0..200)
            .map(|i| {
                inj.decide("/api/v1/x", format!("{}", i % 7).as_bytes(), None, false)
                    .block
                    .is_some()
            })
            .collect();
        assert_ne!(a, b);
        // Rate 0 never, rate 1 always.
        let inj = Injector::new(1, parse("drop:0,503:1").unwrap());
        let d = inj.decide("/api/v1/x", b"", None, false);
        assert_eq!(d.block.unwrap().kind, Kind::Status(503));
    }

    #[test]
    fn invalid_token_only_with_jwt_and_once_per_key() {
        let inj = Injector::new(1, parse("401:1").unwrap());
        assert!(inj
            .decide("/api/v1/asample", b"{}", Some("k1"), false)
            .block
            .is_none());
        assert!(inj
            .decide("/api/v1/asample", b"{}", Some("k1"), true)
            .block
            .is_some());
        assert!(inj
            .decide("/api/v1/asample", b"{}", Some("k1"), true)
            .block
            .is_none());
        assert!(inj
            .decide("/api/v1/asample", b"{}", Some("k2"), true)
            .block
            .is_some());
    }

    #[test]
    fn future_faults() {
        let inj = Injector::new(1, parse("storm:1:7,expire:1,paused:1:rate_limit").unwrap());
        let f = inj.decide_future("r1", true);
        assert_eq!(f.storm, 7);
        assert!(f.expire);
        assert_eq!(f.paused, Some(("paused_rate_limit", 3)));
        assert!(
            !inj.decide_future("r1", false).expire,
            "training futures do not expire by default"
        );
        let inj = Injector::new(1, parse("expire:1:any").unwrap());
        assert!(inj.decide_future("r1", false).expire);
        let inj = Injector::new(1, parse("slow:1:250,deprecation:1:error").unwrap());
        let d = inj.decide("/api/v1/asample", b"", None, false);
        assert!(d.block.is_none());
        assert_eq!((d.slow_ms, d.deprecation.as_deref()), (250, Some("error")));
    }
}
