//! Admin and inspection endpoints for tests (`/_sim/...`, no auth, never faulted).

use crate::app::{bad_request, not_found, App, Ctx, Reply, Res};
use crate::faults;
use crate::routes::training::model_debug_json;
use crate::util::{now_unix_f64, Obj};
use serde_json::{json, Value};
use std::sync::Arc;

pub async fn handle(app: &Arc<App>, ctx: &Ctx) -> Res {
    let p = ctx.path.strip_prefix("/_sim/").unwrap_or("");
    let segs: Vec<String> = p.split('/').map(crate::util::percent_decode).collect();
    let segs: Vec<&str> = segs.iter().map(|s| s.as_str()).collect();
    match (ctx.method.as_str(), segs.as_slice()) {
        ("GET", ["health"]) => Ok(Reply::ok(json!({"ok": true}))),
        ("GET", ["models", id]) => {
            let m = app
                .store()
                .models
                .get(*id)
                .cloned()
                .ok_or_else(|| not_found(format!("model {id:?} not found")))?;
            Ok(Reply::ok(model_debug_json(&m)))
        }
        ("GET", ["stats"]) => Ok(Reply::ok(stats_json(app))),
        ("GET", ["catalogue"]) => Ok(Reply::ok(catalogue_json())),
        ("GET", ["config"]) => Ok(Reply::ok(config_json(app))),
        ("POST", ["config"]) => set_config(app, ctx),
        ("GET", ["telemetry"]) => {
            let batches = app
                .telemetry
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .clone();
            Ok(Reply::ok(
                json!({"count": batches.len(), "batches": batches}),
            ))
        }
        ("GET", ["files", token, name]) => {
            let key = format!("{token}/{name}");
            let st = app.store();
            let f = st
                .files
                .get(&key)
                .filter(|f| f.expires > now_unix_f64())
                .ok_or_else(|| Reply::error(404, "file not found or its signed URL has expired"))?;
            Ok(Reply::bytes(f.content_type, f.bytes.as_ref().clone()))
        }
        _ => Err(Reply::error(
            404,
            format!("no admin route {} {}", ctx.method, ctx.path),
        )),
    }
}

pub fn stats_json(app: &App) -> Value {
    let s = app.stats();
    json!({
        "requests_by_path": s.requests,
        "requests_in_flight": s.in_flight.iter().filter(|(_, v)| **v > 0).collect::<std::collections::BTreeMap<_, _>>(),
        "faults_injected": s.faults,
        "futures": {
            "created": s.futures_created,
            "completed": s.futures_completed,
            "failed": s.futures_failed,
            "expired": s.futures_expired,
            "cancelled": s.futures_cancelled,
        },
        "samples_served": s.samples_served,
        "sequences_sampled": s.sequences_sampled,
        "applied_training_requests": s.applied_training_requests,
        "duplicates_deduped": s.duplicates_deduped,
        "telemetry_batches": s.telemetry_batches,
        "uptime_sec": now_unix_f64() - app.started,
    })
}

fn config_json(app: &App) -> Value {
    let s = app.settings();
    json!({
        "faults": s.faults_spec,
        "future_delay_ms": s.future_delay_ms,
        "client_config": s.client_config,
        "dynamic_config": s.dynamic_config,
        "metadata_threshold_bytes": s.metadata_threshold_bytes,
        "poll_hold_ms": s.poll_hold_ms,
        "jwt_ttl_sec": s.jwt_ttl_sec,
        "seed": app.seed,
    })
}

fn set_config(app: &App, ctx: &Ctx) -> Res {
    let v = ctx.json()?;
    let o = Obj::root(v)?;
    const KEYS: &[&str] = &[
        "faults",
        "future_delay_ms",
        "client_config",
        "dynamic_config",
        "metadata_threshold_bytes",
        "poll_hold_ms",
        "jwt_ttl_sec",
    ];
    for k in o.map.keys() {
        if !KEYS.contains(&k.as_str()) {
            return Err(bad_request(format!(
                "unknown config key {k:?}; known keys: {}",
                KEYS.join(", ")
            )));
        }
    }
    // Validate everything before changing anything.
    let faults = match o.get("faults") {
        Some(Value::String(s)) => Some((s.clone(), faults::parse(s).map_err(bad_request)?)),
        Some(v) => {
            return Err(bad_request(format!(
                "field `faults` must be a string, got {v}"
            )))
        }
        None => None,
    };
    let obj = |k: &str| -> Result<Option<serde_json::Map<String, Value>>, Reply> {
        match o.get(k) {
            None => Ok(None),
            Some(Value::Object(m)) => Ok(Some(m.clone())),
            Some(v) => Err(bad_request(format!(
                "field `{k}` must be an object, got {v}"
            ))),
        }
    };
    let (cc, dc) = (obj("client_config")?, obj("dynamic_config")?);
    let uint = |k: &str| -> Result<Option<u64>, Reply> {
        match o.get(k) {
            None => Ok(None),
            Some(v) => v.as_u64().map(Some).ok_or_else(|| {
                bad_request(format!(
                    "field `{k}` must be a non-negative integer, got {v}"
                ))
            }),
        }
    };
    let (delay, threshold, hold, ttl) = (
        uint("future_delay_ms")?,
        uint("metadata_threshold_bytes")?,
        uint("poll_hold_ms")?,
        uint("jwt_ttl_sec")?,
    );
    {
        let mut s = app.settings.write().unwrap_or_else(|e| e.into_inner());
        if let Some((spec, items)) = faults {
            s.faults_spec = spec;
            s.faults = Arc::new(faults::Injector::new(app.seed, items));
        }
        if let Some(d) = delay {
            s.future_delay_ms = d;
        }
        if let Some(c) = cc {
            s.client_config = c;
        }
        if let Some(c) = dc {
            s.dynamic_config = c;
        }
        if let Some(t) = threshold {
            s.metadata_threshold_bytes = t as usize;
        }
        if let Some(h) = hold {
            s.poll_hold_ms = h;
        }
        if let Some(t) = ttl {
            s.jwt_ttl_sec = t.max(1) as i64;
        }
    }
    Ok(Reply::ok(config_json(app)))
}

/// Every base model's spec, each tokenizer family's source (a file, or null for the `<tN>`
/// fallback), what is loaded (vocabulary, language statistics), and the memory held by
/// full-vocabulary tables.
pub fn catalogue_json() -> Value {
    use crate::model::base::{table_bytes, CATALOGUE, TABLE_BUDGET_BYTES};
    let models: Vec<Value> = CATALOGUE
        .iter()
        .map(|s| {
            json!({
                "model_name": s.name,
                "tokenizer_family": s.family.name(),
                "vocab_size": s.vocab,
                "real_vocab_size": s.real_vocab,
                "eos_token_id": s.eos,
                "stop_token_ids": s.stop_tokens().collect::<Vec<_>>(),
                "max_context_length": s.max_context,
                "tokenizer_id": s.tokenizer_id,
                "arch": s.arch,
                "moe": s.moe,
                "vision": s.vl,
            })
        })
        .collect();
    let families: Vec<Value> = crate::vocab::status()
        .into_iter()
        .map(|(f, src, loaded)| {
            // The base model's language statistics, once a request used the family.
            let stats = crate::model::ngram::status(f).map(|(tokens, sentences, bytes, from)| {
                json!({
                    "tokens": tokens,
                    "sentences": sentences,
                    "bytes": bytes,
                    "tokenized_with": from.display().to_string(),
                })
            });
            json!({
                "family": f.name(),
                "source": src.map(|p| p.display().to_string()),
                "loaded_bytes": loaded,
                "statistics": stats,
            })
        })
        .collect();
    json!({
        "models": models,
        "tokenizer_families": families,
        "table_bytes": table_bytes(),
        "table_budget_bytes": TABLE_BUDGET_BYTES,
    })
}
