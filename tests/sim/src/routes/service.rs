//! Configuration, authentication, sessions and telemetry.

use crate::app::{bad_request, App, Ctx, Reply, Res};
use crate::model::base::CATALOGUE;
use crate::store::Session;
use crate::util::{now_unix, now_unix_f64, Obj};
use serde_json::{json, Map, Value};
use std::sync::Arc;

pub const DEFAULT_PROJECT: &str = "default-project";

pub async fn client_config(app: &Arc<App>, _ctx: &Ctx) -> Res {
    Ok(Reply::ok(Value::Object(
        app.settings().client_config.clone(),
    )))
}

pub async fn dynamic_config(app: &Arc<App>, _ctx: &Ctx) -> Res {
    let mut m = Map::new();
    m.insert("refresh_interval_sec".into(), json!(300));
    m.insert("sample_cancel_enabled".into(), json!(false));
    m.insert("sample_cancel_max_batch_size".into(), json!(64));
    for (k, v) in &app.settings().dynamic_config {
        m.insert(k.clone(), v.clone());
    }
    Ok(Reply::ok(Value::Object(m)))
}

pub async fn auth_token(app: &Arc<App>, ctx: &Ctx) -> Res {
    let c = ctx.caller();
    let ttl = app.settings().jwt_ttl_sec;
    let jti = app.uuid();
    Ok(Reply::ok(
        json!({"jwt": app.jwt.issue(c, now_unix(), ttl, &jti)}),
    ))
}

pub async fn apikey_me(app: &Arc<App>, ctx: &Ctx, delete: bool) -> Res {
    let c = ctx.caller();
    if delete {
        app.store().revoked_keys.insert(c.key_hash.clone());
        return Ok(Reply::ok(json!({})));
    }
    let key_id = u64::from_str_radix(&c.key_hash[..8], 16).unwrap_or(0);
    Ok(Reply::ok(json!({
        "key_id": key_id,
        "name": "tinker-sim key",
        "note": "",
        "details": {"org_details": {"name": c.org_id}, "user_details": {"email": c.email}},
    })))
}

pub async fn capabilities(_app: &Arc<App>, _ctx: &Ctx) -> Res {
    let models: Vec<Value> = CATALOGUE
        .iter()
        .map(|s| json!({"model_name": s.name, "max_context_length": s.max_context, "trainable": true, "sampleable": true}))
        .collect();
    Ok(Reply::ok(json!({"supported_models": models})))
}

pub async fn create_session(app: &Arc<App>, ctx: &Ctx) -> Res {
    let o = Obj::root(ctx.json()?)?;
    let tags: Vec<String> = match o.get("tags") {
        None => vec![],
        Some(Value::Array(a)) => a
            .iter()
            .map(|t| {
                t.as_str()
                    .map(|s| s.to_string())
                    .ok_or_else(|| bad_request(format!("field `tags` must hold strings, got {t}")))
            })
            .collect::<Result<_, _>>()?,
        Some(v) => {
            return Err(bad_request(format!(
                "field `tags` must be an array, got {v}"
            )))
        }
    };
    let user_metadata = o.opt_string_map("user_metadata")?.unwrap_or_default();
    let project_id = o
        .opt_str("project_id")?
        .unwrap_or(DEFAULT_PROJECT)
        .to_string();
    let display_name = o.opt_str("display_name")?.map(|s| s.to_string());
    let sdk_version = o.opt_str("sdk_version")?.unwrap_or("").to_string();
    let id = app.uuid();
    let now = now_unix_f64();
    let s = Session {
        id: id.clone(),
        owner: ctx.caller().user_urn.clone(),
        created_at: now,
        tags,
        user_metadata,
        project_id,
        display_name,
        sdk_version,
        finished: None,
        last_heartbeat: now,
        heartbeats: 0,
        training_run_ids: vec![],
        sampler_ids: vec![],
    };
    let mut st = app.store();
    st.sessions.insert(id.clone(), s);
    st.session_order.push(id.clone());
    Ok(Reply::ok(
        json!({"type": "create_session", "session_id": id}),
    ))
}

pub async fn heartbeat(app: &Arc<App>, ctx: &Ctx) -> Res {
    let o = Obj::root(ctx.json()?)?;
    let id = o.str("session_id")?;
    let mut st = app.store();
    let s = st
        .sessions
        .get_mut(id)
        .ok_or_else(|| Reply::error(404, format!("session {id:?} not found")))?;
    if s.finished.is_some() {
        return Err(Reply::error(410, format!("session {id} has finished")));
    }
    s.last_heartbeat = now_unix_f64();
    s.heartbeats += 1;
    Ok(Reply::ok(json!({"type": "session_heartbeat"})))
}

pub async fn finish_session(app: &Arc<App>, ctx: &Ctx, id: &str) -> Res {
    let o = Obj::root(ctx.json()?)?;
    let reason = o.obj("reason")?.str("type")?.to_string();
    if !matches!(reason.as_str(), "success" | "errored" | "interrupted") {
        return Err(bad_request(format!(
            "field `reason.type` must be success, errored or interrupted, got {reason:?}"
        )));
    }
    let detail = o.opt_str("detail")?.map(|s| s.to_string());
    let mut st = app.store();
    let s = st
        .sessions
        .get_mut(id)
        .ok_or_else(|| Reply::error(404, format!("session {id:?} not found")))?;
    if s.owner != ctx.caller().user_urn {
        return Err(Reply::error(
            403,
            format!("session {id} belongs to another user"),
        ));
    }
    // First reason wins.
    if s.finished.is_none() {
        s.finished = Some((reason, detail));
    }
    Ok(Reply::ok(json!({})))
}

pub async fn telemetry(app: &Arc<App>, ctx: &Ctx) -> Res {
    let v = ctx.json()?.clone();
    if !v.is_object() {
        return Err(bad_request("telemetry batch must be a JSON object"));
    }
    app.telemetry
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(v);
    app.stats().telemetry_batches += 1;
    Ok(Reply::ok(json!({"status": "accepted"})))
}
