//! REST endpoints: training runs, checkpoints, sessions, samplers, weights info,
//! copy_weights, audit and billing.

use super::{check_session_open, parse_tinker_path, resolve_weights_path};
use crate::app::{bad_request, not_found, App, Ctx, Reply, Res};
use crate::routes::service::DEFAULT_PROJECT;
use crate::routes::training::{copy_run, validate_copy_ttl};
use crate::store::{CkptKind, File, ModelEntry, Session, Store};
use crate::util::{now_unix_f64, parse_date, parse_rfc3339, rfc3339, utc_date, Obj};
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
use std::sync::Arc;

const TEN_YEARS: i64 = 315_360_000;

fn cursor(offset: usize, limit: usize, total: usize) -> Value {
    json!({"offset": offset, "limit": limit, "total_count": total})
}

fn access_scope(ctx: &Ctx) -> Result<&str, Reply> {
    match ctx.query("access_scope").unwrap_or("owned") {
        s @ ("owned" | "accessible") => Ok(s),
        s => Err(bad_request(format!(
            "query parameter `access_scope` must be owned or accessible, got {s:?}"
        ))),
    }
}

fn visible_run(st: &Store, m: &ModelEntry, me: &str, accessible: bool, now: f64) -> bool {
    m.owner == me
        || (accessible
            && st
                .checkpoints
                .values()
                .any(|c| c.run_id == m.id && c.public && !c.expired(now)))
}

pub async fn list_training_runs(app: &Arc<App>, ctx: &Ctx) -> Res {
    let limit = ctx.query_usize("limit", 20)?;
    let offset = ctx.query_usize("offset", 0)?;
    let accessible = access_scope(ctx)? == "accessible";
    let project = ctx.query("project_id");
    let me = &ctx.caller().user_urn;
    let now = now_unix_f64();
    let st = app.store();
    let runs: Vec<&Arc<ModelEntry>> = st
        .model_order
        .iter()
        .rev()
        .filter_map(|id| st.models.get(id))
        .filter(|m| visible_run(&st, m, me, accessible, now))
        .filter(|m| {
            project.is_none_or(|p| {
                st.sessions
                    .get(&m.session_id)
                    .is_some_and(|s| s.project_id == p)
            })
        })
        .collect();
    let total = runs.len();
    let page: Vec<Value> = runs
        .iter()
        .skip(offset)
        .take(limit)
        .map(|m| st.training_run_json(m, now))
        .collect();
    Ok(Reply::ok(
        json!({"training_runs": page, "cursor": cursor(offset, limit, total)}),
    ))
}

fn run_for(app: &App, ctx: &Ctx, run: &str, need_owner: bool) -> Result<Arc<ModelEntry>, Reply> {
    let st = app.store();
    let m = st
        .models
        .get(run)
        .cloned()
        .ok_or_else(|| not_found(format!("training run {run:?} not found")))?;
    let now = now_unix_f64();
    let me = &ctx.caller().user_urn;
    let ok = if need_owner {
        &m.owner == me
    } else {
        visible_run(&st, &m, me, true, now)
    };
    if !ok {
        return Err(not_found(format!(
            "training run {run:?} not found (or not yours)"
        )));
    }
    Ok(m)
}

pub async fn get_training_run(app: &Arc<App>, ctx: &Ctx, run: &str) -> Res {
    let accessible = access_scope(ctx)? == "accessible";
    let m = run_for(app, ctx, run, !accessible)?;
    let st = app.store();
    Ok(Reply::ok(st.training_run_json(&m, now_unix_f64())))
}

pub async fn list_checkpoints(app: &Arc<App>, ctx: &Ctx, run: &str) -> Res {
    let m = run_for(app, ctx, run, false)?;
    let now = now_unix_f64();
    let mine = m.owner == ctx.caller().user_urn;
    let st = app.store();
    let mut list: Vec<&crate::store::Checkpoint> = st
        .checkpoints
        .values()
        .filter(|c| c.run_id == run && !c.expired(now) && (mine || c.public))
        .collect();
    list.sort_by(|a, b| a.time.total_cmp(&b.time));
    Ok(Reply::ok(
        json!({"checkpoints": list.iter().map(|c| c.json()).collect::<Vec<_>>()}),
    ))
}

pub async fn list_user_checkpoints(app: &Arc<App>, ctx: &Ctx) -> Res {
    let limit = ctx.query_usize("limit", 100)?;
    let offset = ctx.query_usize("offset", 0)?;
    let me = &ctx.caller().user_urn;
    let now = now_unix_f64();
    let st = app.store();
    let mut list: Vec<&crate::store::Checkpoint> = st
        .checkpoints
        .values()
        .filter(|c| &c.owner == me && !c.expired(now))
        .collect();
    list.sort_by(|a, b| {
        b.time
            .total_cmp(&a.time)
            .then_with(|| b.tinker_path().cmp(&a.tinker_path()))
    });
    let total = list.len();
    let page: Vec<Value> = list
        .iter()
        .skip(offset)
        .take(limit)
        .map(|c| c.json())
        .collect();
    Ok(Reply::ok(
        json!({"checkpoints": page, "cursor": cursor(offset, limit, total)}),
    ))
}

fn owned_checkpoint_path(
    app: &App,
    ctx: &Ctx,
    run: &str,
    kind: &str,
    name: &str,
) -> Result<String, Reply> {
    let k = CkptKind::from_segment(kind).ok_or_else(|| {
        bad_request(format!(
            "checkpoint kind must be weights, sampler_weights or external_weights, got {kind:?}"
        ))
    })?;
    let path = format!("tinker://{run}/{}/{name}", k.segment());
    let st = app.store();
    match st.checkpoint(&path, now_unix_f64()) {
        Some(c) if c.owner == ctx.caller().user_urn => Ok(path),
        _ => Err(not_found(format!(
            "checkpoint {path} not found (or not yours)"
        ))),
    }
}

pub async fn delete_checkpoint(
    app: &Arc<App>,
    ctx: &Ctx,
    run: &str,
    kind: &str,
    name: &str,
) -> Res {
    let path = owned_checkpoint_path(app, ctx, run, kind, name)?;
    let mut st = app.store();
    let c = st
        .checkpoints
        .remove(&path)
        .ok_or_else(|| not_found(format!("checkpoint {path} not found")))?;
    st.audit(
        now_unix_f64(),
        "checkpoint_deleted",
        &c.owner,
        json!({"tinker_path": path}),
    );
    Ok(Reply::ok(json!({})))
}

pub async fn set_public(
    app: &Arc<App>,
    ctx: &Ctx,
    run: &str,
    kind: &str,
    name: &str,
    public: bool,
) -> Res {
    let path = owned_checkpoint_path(app, ctx, run, kind, name)?;
    let mut st = app.store();
    let c = st
        .checkpoints
        .get_mut(&path)
        .ok_or_else(|| not_found(format!("checkpoint {path} not found")))?;
    if c.public == public {
        return Err(Reply::error(
            409,
            format!(
                "checkpoint {path} is already {}",
                if public { "public" } else { "private" }
            ),
        ));
    }
    c.public = public;
    let owner = c.owner.clone();
    st.audit(
        now_unix_f64(),
        if public {
            "checkpoint_published"
        } else {
            "checkpoint_unpublished"
        },
        &owner,
        json!({"tinker_path": path}),
    );
    Ok(Reply::ok(json!({})))
}

pub async fn set_ttl(app: &Arc<App>, ctx: &Ctx, run: &str, kind: &str, name: &str) -> Res {
    let path = owned_checkpoint_path(app, ctx, run, kind, name)?;
    let o = Obj::root(ctx.json()?)?;
    let ttl = o.opt_i64("ttl_seconds")?;
    if let Some(t) = ttl {
        if !(3600..=TEN_YEARS).contains(&t) {
            return Err(bad_request(format!(
                "ttl_seconds must be between 3600 (1 hour) and {TEN_YEARS} (10 years), got {t}"
            )));
        }
    }
    let now = now_unix_f64();
    let mut st = app.store();
    let c = st
        .checkpoints
        .get_mut(&path)
        .ok_or_else(|| not_found(format!("checkpoint {path} not found")))?;
    c.expires_at = ttl.map(|t| now + t as f64);
    let owner = c.owner.clone();
    st.audit(
        now,
        "checkpoint_ttl_set",
        &owner,
        json!({"tinker_path": path, "ttl_seconds": ttl}),
    );
    Ok(Reply::ok(json!({})))
}

fn issue_files(
    st: &mut Store,
    files: &[(String, Arc<Vec<u8>>)],
    token: &str,
    origin: &str,
    expires: f64,
) -> Map<String, Value> {
    let mut urls = Map::new();
    for (name, bytes) in files {
        let ct = if name.ends_with(".json") {
            "application/json"
        } else {
            "application/octet-stream"
        };
        st.files.insert(
            format!("{token}/{name}"),
            File {
                bytes: bytes.clone(),
                content_type: ct,
                expires,
            },
        );
        urls.insert(
            name.clone(),
            json!(format!("{origin}/_sim/files/{token}/{name}")),
        );
    }
    urls
}

pub async fn external_weights_urls(app: &Arc<App>, ctx: &Ctx, run: &str, name: &str) -> Res {
    let path = format!("tinker://{run}/external_weights/{name}");
    let c = resolve_weights_path(app, ctx, &path, None, false)?;
    let token = app.uuid().replace('-', "");
    let expires = now_unix_f64() + 3600.0;
    let mut st = app.store();
    let urls = issue_files(&mut st, &c.files, &token, &ctx.origin, expires);
    Ok(Reply::ok(
        json!({"urls": urls, "expires": rfc3339(expires)}),
    ))
}

pub async fn weights_info(app: &Arc<App>, ctx: &Ctx) -> Res {
    let o = Obj::root(ctx.json()?)?;
    let path = o.str("tinker_path")?;
    let c = resolve_weights_path(app, ctx, path, None, false)?;
    Ok(Reply::ok(json!({
        "base_model": c.weights.base.spec.name,
        "optimizer_config": c.optimizer_config,
        "is_lora": true,
        "lora_rank": c.lora.rank,
        "train_unembed": c.lora.train_unembed,
        "train_mlp": c.lora.train_mlp,
        "train_attn": c.lora.train_attn,
    })))
}

pub async fn copy_weights(app: &Arc<App>, ctx: &Ctx) -> Res {
    let o = Obj::root(ctx.json()?)?;
    let src_path = o.str("source_path")?;
    let ttl = o.opt_i64("ttl_seconds")?;
    validate_copy_ttl(ttl)?;
    let key = ctx
        .header("x-idempotency-key")
        .map(|k| format!("{}:{k}", ctx.caller().user_urn));
    if let Some(k) = &key {
        if let Some(p) = app.store().copies.get(k).cloned() {
            app.stats().duplicates_deduped += 1;
            return Ok(Reply::ok(json!({"tinker_path": p})));
        }
    }
    parse_tinker_path(src_path)?;
    let token = ctx
        .header("x-tinker-weights-access-token")
        .or(o.opt_str("weights_access_token")?);
    let src = resolve_weights_path(app, ctx, src_path, token, false)?;
    let owner = ctx.caller().user_urn.clone();
    let (session_id, seq) = match (
        o.opt_str("session_id")?,
        o.opt_i64("model_seq_id")?,
        o.opt_str("destination_project_id")?,
    ) {
        (Some(s), Some(q), _) => {
            check_session_open(app, ctx, s)?;
            if app.store().models.contains_key(&format!("{s}:train:{q}")) {
                return Err(Reply::error(
                    409,
                    format!("training run {s}:train:{q} already exists"),
                ));
            }
            (s.to_string(), q)
        }
        (None, None, Some(project)) => {
            let id = app.uuid();
            let now = now_unix_f64();
            let mut st = app.store();
            st.sessions.insert(
                id.clone(),
                Session {
                    id: id.clone(),
                    owner: owner.clone(),
                    created_at: now,
                    tags: vec![],
                    user_metadata: Map::new(),
                    project_id: project.to_string(),
                    display_name: Some(format!("copy of {src_path}")),
                    sdk_version: String::new(),
                    finished: Some(("success".into(), Some("created by copy_weights".into()))),
                    last_heartbeat: now,
                    heartbeats: 0,
                    training_run_ids: vec![],
                    sampler_ids: vec![],
                },
            );
            st.session_order.push(id.clone());
            (id, 0)
        }
        _ => return Err(bad_request(
            "copy_weights needs `destination_project_id`, or both `session_id` and `model_seq_id`",
        )),
    };
    let path = copy_run(app, &session_id, &owner, seq, &src, ttl);
    let mut st = app.store();
    if let Some(k) = key {
        st.copies.insert(k, path.clone());
    }
    st.audit(
        now_unix_f64(),
        "checkpoint_copied",
        &owner,
        json!({"source_path": src_path, "tinker_path": path}),
    );
    Ok(Reply::ok(json!({"tinker_path": path})))
}

pub async fn list_sessions(app: &Arc<App>, ctx: &Ctx) -> Res {
    let limit = ctx.query_usize("limit", 20)?;
    let offset = ctx.query_usize("offset", 0)?;
    access_scope(ctx)?;
    let me = &ctx.caller().user_urn;
    let st = app.store();
    let ids: Vec<&String> = st
        .session_order
        .iter()
        .rev()
        .filter(|id| st.sessions.get(*id).is_some_and(|s| &s.owner == me))
        .skip(offset)
        .take(limit)
        .collect();
    Ok(Reply::ok(json!({"sessions": ids})))
}

pub async fn get_session(app: &Arc<App>, ctx: &Ctx, id: &str) -> Res {
    access_scope(ctx)?;
    let st = app.store();
    let s = st
        .sessions
        .get(id)
        .filter(|s| s.owner == ctx.caller().user_urn)
        .ok_or_else(|| not_found(format!("session {id:?} not found")))?;
    Ok(Reply::ok(json!({
        "training_run_ids": s.training_run_ids,
        "sampler_ids": s.sampler_ids,
        "user_metadata": s.user_metadata,
        "display_name": s.display_name,
    })))
}

pub async fn assign_project(app: &Arc<App>, ctx: &Ctx, id: &str) -> Res {
    let o = Obj::root(ctx.json()?)?;
    let project = o.str("project_id")?;
    if project.is_empty() {
        return Err(bad_request("field `project_id` must not be empty"));
    }
    let mut st = app.store();
    let s = st
        .sessions
        .get_mut(id)
        .filter(|s| s.owner == ctx.caller().user_urn)
        .ok_or_else(|| not_found(format!("session {id:?} not found")))?;
    let old = std::mem::replace(&mut s.project_id, project.to_string());
    let owner = s.owner.clone();
    st.audit(
        now_unix_f64(),
        "project_session_assigned",
        &owner,
        json!({"session_id": id, "from": old, "to": project}),
    );
    Ok(Reply::ok(json!({})))
}

pub async fn trace_export(app: &Arc<App>, ctx: &Ctx, id: &str) -> Res {
    let (trace, runs) = {
        let st = app.store();
        let s = st
            .sessions
            .get(id)
            .filter(|s| s.owner == ctx.caller().user_urn)
            .ok_or_else(|| not_found(format!("session {id:?} not found")))?;
        (s.created_at, s.training_run_ids.clone())
    };
    // A Chrome/Perfetto JSON trace of the session's applied training requests.
    let mut events = vec![
        json!({"name": "session", "ph": "i", "ts": (trace * 1e6) as i64, "pid": 1, "tid": 0, "s": "g"}),
    ];
    for (tid, run) in runs.iter().enumerate() {
        let m = app.store().models.get(run).cloned();
        if let Some(m) = m {
            let s = m.sched.lock().unwrap_or_else(|e| e.into_inner());
            for a in &s.applied {
                events.push(json!({"name": a.kind, "ph": "X", "ts": a.seq_id, "dur": 1, "pid": 1, "tid": tid + 1, "args": {"request_id": a.request_id, "seq_id": a.seq_id, "model_id": run}}));
            }
        }
    }
    let body = serde_json::to_vec(&json!({"traceEvents": events})).unwrap_or_default();
    let token = app.uuid().replace('-', "");
    let mut st = app.store();
    let urls = issue_files(
        &mut st,
        &[(format!("{id}.pftrace"), Arc::new(body))],
        &token,
        &ctx.origin,
        now_unix_f64() + 3600.0,
    );
    let url = urls.values().next().cloned().unwrap_or(Value::Null);
    Ok(Reply::ok(json!({"status": "ready", "url": url})))
}

pub async fn get_sampler(app: &Arc<App>, ctx: &Ctx, id: &str) -> Res {
    let st = app.store();
    let s = st
        .sampling
        .get(id)
        .ok_or_else(|| not_found(format!("sampler {id:?} not found")))?;
    if s.owner != ctx.caller().user_urn {
        return Err(not_found(format!("sampler {id:?} not found")));
    }
    Ok(Reply::ok(
        json!({"sampler_id": s.id, "base_model": s.spec.name, "model_path": s.model_path}),
    ))
}

/// Timestamps compare at the microsecond resolution they are serialised with.
fn micros(t: f64) -> i64 {
    (t * 1e6).round() as i64
}

fn session_summary(st: &Store, s: &Session) -> Value {
    let now = now_unix_f64();
    let ckpts: Vec<&crate::store::Checkpoint> = st
        .checkpoints
        .values()
        .filter(|c| !c.expired(now) && s.training_run_ids.contains(&c.run_id))
        .collect();
    json!({
        "session_id": s.id,
        "created_at": rfc3339(s.created_at),
        "owner": s.owner,
        "project_id": s.project_id,
        "status": s.status_json(),
        "checkpoints_count": ckpts.len(),
        "display_name": s.display_name,
        "user_metadata": s.user_metadata,
        "checkpoint_storage_bytes": ckpts.iter().map(|c| c.size_bytes).sum::<u64>(),
        "tags": s.tags,
        "sdk_version": s.sdk_version,
    })
}

pub async fn search_sessions(app: &Arc<App>, ctx: &Ctx) -> Res {
    let v = ctx.json()?;
    let o = Obj::root(v)?;
    let limit = o.opt_i64("limit")?.unwrap_or(50);
    if !(1..=200).contains(&limit) {
        return Err(bad_request(format!(
            "field `limit` must be between 1 and 200, got {limit}"
        )));
    }
    let me = ctx.caller().user_urn.clone();
    let owner_filter: Option<Vec<String>> = match o.opt_obj("owner")? {
        None => Some(vec![me.clone()]),
        Some(ow) => match ow.str("type")? {
            "own" => Some(vec![me.clone()]),
            "accessible" => None,
            "user" => Some(
                ow.array("owner_urns")?
                    .iter()
                    .filter_map(|u| u.as_str().map(String::from))
                    .collect(),
            ),
            t => {
                return Err(bad_request(format!(
                    "field `owner.type` must be own, accessible or user, got {t:?}"
                )))
            }
        },
    };
    let session_id = o.opt_str("session_id")?;
    let display = o.opt_str("display_name")?.map(|d| d.to_lowercase());
    let projects: Option<Vec<String>> = o.get("project_ids").and_then(|p| p.as_array()).map(|a| {
        a.iter()
            .filter_map(|x| x.as_str().map(String::from))
            .collect()
    });
    let metadata = o.opt_string_map("user_metadata")?.unwrap_or_default();
    let statuses = o.get("statuses").and_then(|s| s.as_array()).cloned();
    let cursor = match o.opt_obj("cursor")? {
        Some(c) => Some((
            micros(
                parse_rfc3339(c.str("last_created_at")?)
                    .ok_or_else(|| bad_request("cursor.last_created_at must be RFC 3339"))?,
            ),
            c.str("last_session_id")?.to_string(),
        )),
        None => None,
    };
    let st = app.store();
    let mut matches: Vec<&Session> = st
        .sessions
        .values()
        .filter(|s| owner_filter.as_ref().is_none_or(|o| o.contains(&s.owner)))
        .filter(|s| projects.as_ref().is_none_or(|p| p.contains(&s.project_id)))
        .filter(|s| {
            metadata
                .iter()
                .all(|(k, v)| s.user_metadata.get(k) == Some(v))
        })
        .filter(|s| {
            let by_id = session_id.is_some_and(|id| id == s.id);
            let by_name = display.as_ref().is_some_and(|d| {
                let name = s.display_name.clone().unwrap_or_default().to_lowercase();
                d.split_whitespace().all(|w| name.contains(w))
            });
            (session_id.is_none() && display.is_none()) || by_id || by_name
        })
        .filter(|s| {
            statuses.as_ref().is_none_or(|list| {
                list.iter().any(
                    |q| match (q.get("type").and_then(|t| t.as_str()), &s.finished) {
                        (Some("active"), None) => true,
                        (Some("client_finished"), Some((reason, _))) => q
                            .get("reasons")
                            .and_then(|r| r.as_array())
                            .is_none_or(|rs| rs.iter().any(|r| r.as_str() == Some(reason))),
                        _ => false,
                    },
                )
            })
        })
        .filter(|s| match &cursor {
            Some((t, id)) => {
                let c = micros(s.created_at);
                c < *t || (c == *t && s.id.as_str() < id.as_str())
            }
            None => true,
        })
        .collect();
    matches.sort_by(|a, b| {
        micros(b.created_at)
            .cmp(&micros(a.created_at))
            .then_with(|| b.id.cmp(&a.id))
    });
    let more = matches.len() > limit as usize;
    matches.truncate(limit as usize);
    let next = if more {
        matches
            .last()
            .map(|s| json!({"last_created_at": rfc3339(s.created_at), "last_session_id": s.id}))
    } else {
        None
    };
    Ok(Reply::ok(json!({
        "sessions": matches.iter().map(|s| session_summary(&st, s)).collect::<Vec<_>>(),
        "next_cursor": next,
    })))
}

pub async fn audit(app: &Arc<App>, ctx: &Ctx) -> Res {
    let event_type = ctx.query("event_type").unwrap_or("all");
    let prefix = match event_type {
        "all" => "",
        "checkpoints" => "checkpoint_",
        "projects" => "project_",
        "teams" => "team_",
        "organizations" => "organization_",
        t => return Err(bad_request(format!("query parameter `event_type` must be all, checkpoints, projects, teams or organizations, got {t:?}"))),
    };
    let day = match ctx.query("day") {
        Some(d) => parse_date(d).ok_or_else(|| {
            bad_request(format!(
                "query parameter `day` must be YYYY-MM-DD, got {d:?}"
            ))
        })?,
        None => parse_date(&utc_date(now_unix_f64())).unwrap_or(0.0),
    };
    let org = &ctx.caller().org_id;
    let st = app.store();
    let entries: Vec<Value> = st
        .audit
        .iter()
        .filter(|e| e.event.starts_with(prefix) && e.time >= day && e.time < day + 86_400.0)
        .filter(|e| crate::auth::org_of_user(&e.owner).is_none_or(|o| &o == org))
        .map(|e| {
            let mut v =
                json!({"timestamp": rfc3339(e.time), "event": e.event, "event_details": e.details});
            v["event_details"]["actor"] = json!(e.owner);
            if let Some(p) = e.details.get("tinker_path").and_then(|p| p.as_str()) {
                v["tinker_path"] = json!(p);
                v["model_id"] = json!(p.trim_start_matches("tinker://").split('/').next());
            }
            v
        })
        .collect();
    Ok(Reply::ok(json!({"entries": entries})))
}

fn hour_floor(t: f64) -> f64 {
    (t / 3600.0).floor() * 3600.0
}

pub async fn billing_usage(app: &Arc<App>, ctx: &Ctx) -> Res {
    let parse = |name: &str| -> Result<f64, Reply> {
        let s = ctx.query(name).ok_or_else(|| {
            bad_request(format!("query parameter `{name}` is required (RFC 3339)"))
        })?;
        let t = parse_rfc3339(s).ok_or_else(|| {
            bad_request(format!(
                "query parameter `{name}` must be RFC 3339, got {s:?}"
            ))
        })?;
        if t % 3600.0 != 0.0 {
            return Err(bad_request(format!(
                "query parameter `{name}` must be aligned to a UTC hour, got {s:?}"
            )));
        }
        Ok(t)
    };
    let (start, end) = (parse("starting_on")?, parse("ending_before")?);
    if end <= start {
        return Err(bad_request("ending_before must be after starting_on"));
    }
    if end - start > 14.0 * 86_400.0 {
        return Err(bad_request("the window may span at most 14 days"));
    }
    if start > now_unix_f64() {
        return Err(bad_request("starting_on must not be in the future"));
    }
    let me = &ctx.caller().user_urn;
    let st = app.store();
    let mut buckets: BTreeMap<(i64, String, String, &'static str, bool), u64> = BTreeMap::new();
    for u in st
        .usage
        .iter()
        .filter(|u| &u.owner == me && u.time >= start && u.time < end)
    {
        let key = (
            hour_floor(u.time) as i64,
            u.base_model.clone().unwrap_or_default(),
            u.session_id.clone().unwrap_or_default(),
            u.kind,
            u.cached,
        );
        *buckets.entry(key).or_insert(0) += u.amount;
    }
    let mut sessions = Map::new();
    let data: Vec<Value> = buckets
        .iter()
        .map(|((hour, model, session, kind, cached), amount)| {
            let info = match *kind {
                "training" => json!({"type": "training", "token_count": amount}),
                "sampling_prefill" => {
                    json!({"type": "sampling_prefill", "cached": cached, "token_count": amount})
                }
                "sampling_sample" => json!({"type": "sampling_sample", "token_count": amount}),
                _ => json!({"type": "checkpoint", "count": amount}),
            };
            let rate = match *kind {
                "training" => Some(1.0),
                "sampling_prefill" if *cached => Some(0.05),
                "sampling_prefill" => Some(0.2),
                "sampling_sample" => Some(0.6),
                _ => None,
            };
            if !session.is_empty() {
                let md = st
                    .sessions
                    .get(session)
                    .map(|s| Value::Object(s.user_metadata.clone()))
                    .unwrap_or(Value::Null);
                sessions.insert(session.clone(), json!({"user_metadata": md}));
            }
            json!({
                "bucket_start": rfc3339(*hour as f64),
                "bucket_end": rfc3339(*hour as f64 + 3600.0),
                "base_model": if model.is_empty() { Value::Null } else { json!(model) },
                "user_id": me,
                "user_name": "tinker-sim user",
                "session_id": if session.is_empty() { Value::Null } else { json!(session) },
                "project_id": st.sessions.get(session).map(|s| s.project_id.clone()),
                "estimated_cost_usd": rate.map(|r| r * *amount as f64 / 1e6),
                "effective_rate_usd_per_million_tokens": rate,
                "event_info": info,
            })
        })
        .collect();
    Ok(Reply::ok(
        json!({"data": data, "sessions": sessions, "cost_data_through": Value::Null}),
    ))
}

pub async fn storage_usage(app: &Arc<App>, ctx: &Ctx) -> Res {
    let project = ctx.query("project_id");
    let me = &ctx.caller().user_urn;
    let now = now_unix_f64();
    let st = app.store();
    let mut by_project: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    for c in st
        .checkpoints
        .values()
        .filter(|c| &c.owner == me && !c.expired(now))
    {
        let p = st
            .models
            .get(&c.run_id)
            .and_then(|m| st.sessions.get(&m.session_id))
            .map(|s| s.project_id.clone())
            .unwrap_or_else(|| DEFAULT_PROJECT.to_string());
        if project.is_some_and(|q| q != p) {
            continue;
        }
        let e = by_project.entry(p).or_insert((0, 0));
        e.0 += 1;
        e.1 += c.size_bytes;
    }
    let rate = 0.1;
    let data: Vec<Value> = by_project
        .iter()
        .map(|(p, (n, b))| {
            let gb = *b as f64 / 1e9;
            json!({
                "project_id": p,
                "org_user_urn": me,
                "user_email": ctx.caller().email,
                "user_name": "tinker-sim user",
                "checkpoint_count": n,
                "size_bytes": b,
                "size_gigabytes": gb,
                "estimated_monthly_cost_usd": gb * rate,
            })
        })
        .collect();
    Ok(Reply::ok(
        json!({"effective_rate_usd_per_gigabyte_month": rate, "data": data}),
    ))
}
