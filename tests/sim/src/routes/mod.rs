//! Request routing and helpers shared by the endpoint handlers.

pub mod custom_loss;
pub mod futures;
pub mod parse;
pub mod rest;
pub mod sampling;
pub mod service;
pub mod sim;
pub mod training;

use crate::app::{App, Ctx, Reply, Res};
use crate::auth::{caller_for_key, looks_like_jwt};
use crate::store::{Checkpoint, CkptKind};
use crate::util::{now_unix, now_unix_f64};
use serde_json::{json, Value};
use std::sync::Arc;

pub fn future_handle(rid: &str, model_id: Option<&str>) -> Reply {
    let mut v = json!({"request_id": rid});
    if let Some(m) = model_id {
        v["model_id"] = Value::String(m.to_string());
    }
    Reply::ok(v)
}

/// The session must exist, belong to the caller and not be finished.
pub fn check_session_open(app: &App, ctx: &Ctx, session_id: &str) -> Result<(), Reply> {
    let st = app.store();
    let s = st
        .sessions
        .get(session_id)
        .ok_or_else(|| Reply::error(404, format!("session {session_id:?} not found")))?;
    if s.owner != ctx.caller().user_urn {
        return Err(Reply::error(
            403,
            format!("session {session_id} belongs to another user"),
        ));
    }
    if let Some((reason, _)) = &s.finished {
        return Err(Reply::error(
            410,
            format!("session {session_id} has finished ({reason}); start a new ServiceClient"),
        ));
    }
    Ok(())
}

/// Parse `tinker://RUN/KIND/NAME`.
pub fn parse_tinker_path(path: &str) -> Result<(String, CkptKind, String), Reply> {
    let rest = path.strip_prefix("tinker://").ok_or_else(|| {
        Reply::error(
            400,
            format!("invalid tinker path {path:?}: must start with tinker://"),
        )
    })?;
    let parts: Vec<&str> = rest.split('/').collect();
    if parts.len() != 3 || parts.iter().any(|p| p.is_empty()) {
        return Err(Reply::error(
            400,
            format!("invalid tinker path {path:?}: expected tinker://<run>/<kind>/<name>"),
        ));
    }
    let kind = CkptKind::from_segment(parts[1]).ok_or_else(|| {
        Reply::error(400, format!("invalid tinker path {path:?}: kind must be weights, sampler_weights or external_weights"))
    })?;
    Ok((parts[0].to_string(), kind, parts[2].to_string()))
}

/// The identity a `weights_access_token` stands for (an API key or one of our JWTs).
fn token_owner(app: &App, token: &str) -> Option<String> {
    if looks_like_jwt(token) {
        app.jwt.verify(token, now_unix()).ok().map(|c| c.user_urn)
    } else if !token.is_empty() {
        Some(caller_for_key(token).user_urn)
    } else {
        None
    }
}

/// Resolve a checkpoint the caller may read (own, public, or via an access token).
pub fn resolve_weights_path(
    app: &App,
    ctx: &Ctx,
    path: &str,
    token: Option<&str>,
    _for_load: bool,
) -> Result<Checkpoint, Reply> {
    parse_tinker_path(path)?;
    let st = app.store();
    let c = st
        .checkpoint(path, now_unix_f64())
        .ok_or_else(|| Reply::error(404, format!("checkpoint {path} not found")))?;
    let me = &ctx.caller().user_urn;
    let allowed = &c.owner == me
        || c.public
        || token
            .and_then(|t| token_owner(app, t))
            .is_some_and(|o| o == c.owner);
    if !allowed {
        return Err(Reply::error(
            403,
            format!("checkpoint {path} is private to its owner"),
        ));
    }
    Ok(c.clone())
}

/// Dispatch an authenticated `/api/v1/...` request.
pub async fn dispatch(app: &Arc<App>, ctx: &Ctx) -> Res {
    let p = ctx.path.strip_prefix("/api/v1/").unwrap_or("");
    let m = ctx.method.as_str();
    let owned: Vec<String> = p.split('/').map(crate::util::percent_decode).collect();
    let segs: Vec<&str> = owned.iter().map(|s| s.as_str()).collect();
    match (m, segs.as_slice()) {
        ("POST", ["client", "config"]) => service::client_config(app, ctx).await,
        ("POST", ["client", "dynamic_config"]) => service::dynamic_config(app, ctx).await,
        ("POST", ["auth", "token"]) => service::auth_token(app, ctx).await,
        ("GET", ["auth", "apikey", "me"]) => service::apikey_me(app, ctx, false).await,
        ("DELETE", ["auth", "apikey", "me"]) => service::apikey_me(app, ctx, true).await,
        ("GET", ["healthz"]) => Ok(Reply::ok(json!({"status": "ok"}))),
        ("GET", ["get_server_capabilities"]) => service::capabilities(app, ctx).await,
        ("POST", ["create_session"]) => service::create_session(app, ctx).await,
        ("POST", ["session_heartbeat"]) => service::heartbeat(app, ctx).await,
        ("POST", ["sessions", id, "finish"]) => service::finish_session(app, ctx, id).await,
        ("POST", ["telemetry"]) => service::telemetry(app, ctx).await,
        ("POST", ["create_model"]) => training::create_model(app, ctx).await,
        ("POST", ["get_info"]) => training::get_info(app, ctx).await,
        ("POST", ["forward_backward"]) => training::forward_backward(app, ctx, false).await,
        ("POST", ["forward"]) => training::forward_backward(app, ctx, true).await,
        ("POST", ["optim_step"]) => training::optim_step(app, ctx).await,
        ("POST", ["save_weights"]) => training::save_weights(app, ctx).await,
        ("POST", ["save_weights_for_sampler"]) => {
            training::save_weights_for_sampler(app, ctx).await
        }
        ("POST", ["save_weights_external"]) => training::save_weights_external(app, ctx).await,
        ("POST", ["load_weights"]) => training::load_weights(app, ctx).await,
        ("POST", ["create_custom_loss"]) => custom_loss::create_custom_loss(app, ctx).await,
        ("POST", ["create_sampling_session"]) => sampling::create_sampling_session(app, ctx).await,
        ("POST", ["join_sampling_session"]) => sampling::join_sampling_session(app, ctx).await,
        ("POST", ["asample"]) => sampling::asample(app, ctx).await,
        ("POST", ["retrieve_future"]) => futures::retrieve_future(app, ctx).await,
        ("POST", ["retrieve_futures"]) => futures::retrieve_futures(app, ctx).await,
        ("POST", ["cancel_future"]) => futures::cancel_future(app, ctx).await,
        ("POST", ["copy_weights"]) => rest::copy_weights(app, ctx).await,
        ("POST", ["weights_info"]) => rest::weights_info(app, ctx).await,
        ("GET", ["training_runs"]) => rest::list_training_runs(app, ctx).await,
        ("GET", ["training_runs", run]) => rest::get_training_run(app, ctx, run).await,
        ("GET", ["training_runs", run, "checkpoints"]) => {
            rest::list_checkpoints(app, ctx, run).await
        }
        ("DELETE", ["training_runs", run, "checkpoints", kind, name]) => {
            rest::delete_checkpoint(app, ctx, run, kind, name).await
        }
        ("POST", ["training_runs", run, "checkpoints", kind, name, "publish"]) => {
            rest::set_public(app, ctx, run, kind, name, true).await
        }
        ("DELETE", ["training_runs", run, "checkpoints", kind, name, "publish"]) => {
            rest::set_public(app, ctx, run, kind, name, false).await
        }
        ("PUT", ["training_runs", run, "checkpoints", kind, name, "ttl"]) => {
            rest::set_ttl(app, ctx, run, kind, name).await
        }
        (
            "GET",
            ["training_runs", run, "checkpoints", "external_weights", name, "external_weights_urls"],
        ) => rest::external_weights_urls(app, ctx, run, name).await,
        ("GET", ["checkpoints"]) => rest::list_user_checkpoints(app, ctx).await,
        ("GET", ["sessions"]) => rest::list_sessions(app, ctx).await,
        ("POST", ["sessions", "search"]) => rest::search_sessions(app, ctx).await,
        ("GET", ["sessions", id]) => rest::get_session(app, ctx, id).await,
        ("PUT", ["sessions", id, "project"]) => rest::assign_project(app, ctx, id).await,
        ("GET", ["sessions", id, "trace_export"]) => rest::trace_export(app, ctx, id).await,
        ("GET", ["samplers", id]) => rest::get_sampler(app, ctx, id).await,
        ("GET", ["audit"]) => rest::audit(app, ctx).await,
        ("GET", ["billing", "usage", "events"]) => rest::billing_usage(app, ctx).await,
        ("GET", ["billing", "usage", "checkpoints", "current"]) => {
            rest::storage_usage(app, ctx).await
        }
        _ => Err(Reply::error(404, format!("no route for {m} {}", ctx.path))),
    }
}

/// Methods allowed on a path (for 405 vs 404 and CORS).
pub fn route_label(method: &str, path: &str) -> String {
    // Collapse ids so counters group by endpoint.
    let p = path.strip_prefix("/api/v1/").unwrap_or(path);
    let segs: Vec<&str> = p.split('/').collect();
    let label = match segs.as_slice() {
        ["sessions", _, rest @ ..] if !rest.is_empty() => {
            format!("sessions/{{id}}/{}", rest.join("/"))
        }
        ["sessions", id] if *id != "search" => "sessions/{id}".into(),
        ["training_runs", _] => "training_runs/{id}".into(),
        ["training_runs", _, "checkpoints"] => "training_runs/{id}/checkpoints".into(),
        ["training_runs", _, "checkpoints", k, _, rest @ ..] => {
            format!(
                "training_runs/{{id}}/checkpoints/{k}/{{name}}{}",
                rest.iter().map(|r| format!("/{r}")).collect::<String>()
            )
        }
        ["samplers", _] => "samplers/{id}".into(),
        _ => p.to_string(),
    };
    if path.starts_with("/api/v1/") {
        format!("{method} /api/v1/{label}")
    } else {
        format!("{method} {path}")
    }
}
