//! Shared application state, run-time settings, counters and reply helpers.

use crate::auth::{Caller, Jwt};
use crate::faults::{self, Injector};
use crate::futures::Futures;
use crate::store::Store;
use crate::util::{FieldError, Rng};
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
use std::io::Write;
use std::sync::{Arc, Mutex, RwLock};

/// Settings that `POST /_sim/config` can change at run time.
pub struct Settings {
    pub faults_spec: String,
    pub faults: Arc<Injector>,
    pub future_delay_ms: u64,
    pub client_config: Map<String, Value>,
    pub dynamic_config: Map<String, Value>,
    /// Results larger than this are announced with `complete_metadata` first.
    pub metadata_threshold_bytes: usize,
    /// How long a `retrieve_future` poll is held waiting for a pending result.
    pub poll_hold_ms: u64,
    pub jwt_ttl_sec: i64,
}

impl Settings {
    pub fn jwt_on(&self) -> bool {
        self.client_config
            .get("pjwt_auth_enabled")
            .and_then(|v| v.as_bool())
            .unwrap_or(false)
    }
}

#[derive(Default)]
pub struct Stats {
    pub requests: BTreeMap<String, u64>,
    /// Requests being handled right now (e.g. held long polls), by endpoint.
    pub in_flight: BTreeMap<String, i64>,
    pub faults: BTreeMap<String, u64>,
    pub futures_created: u64,
    pub futures_completed: u64,
    pub futures_failed: u64,
    pub futures_expired: u64,
    pub futures_cancelled: u64,
    pub samples_served: u64,
    pub sequences_sampled: u64,
    pub applied_training_requests: u64,
    pub duplicates_deduped: u64,
    pub telemetry_batches: u64,
}

#[derive(Debug)]
pub struct Options {
    pub seed: u64,
    pub api_key: Option<String>,
    pub cors: bool,
    pub request_log: Option<std::path::PathBuf>,
    pub future_delay_ms: u64,
    pub faults: String,
    pub client_config: Map<String, Value>,
    pub dynamic_config: Map<String, Value>,
    pub compute_threads: usize,
}

pub struct App {
    pub seed: u64,
    pub api_key: Option<String>,
    pub cors: bool,
    pub settings: RwLock<Settings>,
    pub jwt: Jwt,
    pub rng: Mutex<Rng>,
    pub store: Mutex<Store>,
    pub futures: Futures,
    pub stats: Mutex<Stats>,
    pub telemetry: Mutex<Vec<Value>>,
    pub log: Option<Mutex<std::fs::File>>,
    pub compute: tokio::sync::Semaphore,
    pub started: f64,
}

impl App {
    pub fn new(o: Options) -> Result<Arc<App>, String> {
        let items = faults::parse(&o.faults)?;
        let log = match &o.request_log {
            Some(p) => Some(Mutex::new(
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(p)
                    .map_err(|e| format!("--request-log {}: {e}", p.display()))?,
            )),
            None => None,
        };
        Ok(Arc::new(App {
            seed: o.seed,
            api_key: o.api_key,
            cors: o.cors,
            settings: RwLock::new(Settings {
                faults_spec: o.faults.clone(),
                faults: Arc::new(Injector::new(o.seed, items)),
                future_delay_ms: o.future_delay_ms,
                client_config: o.client_config,
                dynamic_config: o.dynamic_config,
                metadata_threshold_bytes: 64 * 1024,
                poll_hold_ms: 2000,
                jwt_ttl_sec: 3600,
            }),
            jwt: Jwt::new(o.seed),
            rng: Mutex::new(Rng::new(o.seed)),
            store: Mutex::new(Store::default()),
            futures: Futures::default(),
            stats: Mutex::new(Stats::default()),
            telemetry: Mutex::new(Vec::new()),
            log,
            compute: tokio::sync::Semaphore::new(o.compute_threads.max(1)),
            started: crate::util::now_unix_f64(),
        }))
    }

    pub fn settings(&self) -> std::sync::RwLockReadGuard<'_, Settings> {
        self.settings.read().unwrap_or_else(|e| e.into_inner())
    }

    pub fn store(&self) -> std::sync::MutexGuard<'_, Store> {
        self.store.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn stats(&self) -> std::sync::MutexGuard<'_, Stats> {
        self.stats.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn uuid(&self) -> String {
        self.rng.lock().unwrap_or_else(|e| e.into_inner()).uuid()
    }

    pub fn next_u64(&self) -> u64 {
        self.rng
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .next_u64()
    }

    pub fn write_log(&self, line: &Value) {
        if let Some(f) = &self.log {
            // One write per line: a reader polling the log while requests are
            // in flight never sees half a line.
            let mut bytes = serde_json::to_vec(line).unwrap_or_default();
            bytes.push(b'\n');
            let mut f = f.lock().unwrap_or_else(|e| e.into_inner());
            let _ = f.write_all(&bytes);
        }
    }
}

/// An HTTP reply.
#[derive(Debug, Clone)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub content_type: &'static str,
    pub body: Vec<u8>,
}

impl Reply {
    pub fn json(status: u16, v: Value) -> Reply {
        Reply {
            status,
            headers: vec![],
            content_type: "application/json",
            body: serde_json::to_vec(&v).unwrap_or_default(),
        }
    }
    pub fn ok(v: Value) -> Reply {
        Reply::json(200, v)
    }
    pub fn proto(body: Vec<u8>) -> Reply {
        Reply {
            status: 200,
            headers: vec![],
            content_type: "application/x-protobuf",
            body,
        }
    }
    pub fn bytes(content_type: &'static str, body: Vec<u8>) -> Reply {
        Reply {
            status: 200,
            headers: vec![],
            content_type,
            body,
        }
    }
    pub fn error(status: u16, detail: impl Into<String>) -> Reply {
        Reply::json(status, json!({"detail": detail.into()}))
    }
    pub fn with_header(mut self, k: &str, v: impl Into<String>) -> Reply {
        self.headers.push((k.to_string(), v.into()));
        self
    }
}

impl From<FieldError> for Reply {
    fn from(e: FieldError) -> Reply {
        Reply::error(400, e.0)
    }
}

pub type Res = Result<Reply, Reply>;

pub fn bad_request(msg: impl Into<String>) -> Reply {
    Reply::error(400, msg)
}
pub fn not_found(msg: impl Into<String>) -> Reply {
    Reply::error(404, msg)
}

/// What a handler sees of a request.
pub struct Ctx {
    pub method: String,
    pub path: String,
    pub query: Vec<(String, String)>,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    pub json: Option<Value>,
    pub caller: Option<Caller>,
    /// `http://host:port` as the client addressed us (for URLs we hand out).
    pub origin: String,
}

impl Ctx {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
    pub fn query(&self, name: &str) -> Option<&str> {
        self.query
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
    pub fn json(&self) -> Result<&Value, Reply> {
        self.json
            .as_ref()
            .ok_or_else(|| bad_request("request body must be JSON"))
    }
    pub fn caller(&self) -> &Caller {
        self.caller.as_ref().expect("authenticated route")
    }
    pub fn query_usize(&self, name: &str, default: usize) -> Result<usize, Reply> {
        match self.query(name) {
            None => Ok(default),
            Some(s) => s.parse().map_err(|_| {
                bad_request(format!(
                    "query parameter `{name}` must be a non-negative integer, got {s:?}"
                ))
            }),
        }
    }
}
