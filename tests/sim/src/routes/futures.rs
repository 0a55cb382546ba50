//! `retrieve_future`, `retrieve_futures` and `cancel_future`.

use crate::app::{bad_request, App, Ctx, Reply, Res};
use crate::futures::{FKind, FState, FutureEntry};
use crate::util::Obj;
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;

fn try_again(rid: &str, queue_state: &str, reason: Option<&str>) -> Reply {
    let mut v = json!({"type": "try_again", "request_id": rid, "queue_state": queue_state});
    if let Some(r) = reason {
        v["queue_state_reason"] = json!(r);
    }
    Reply::ok(v)
}

fn count_fault(app: &App, name: &str) {
    *app.stats().faults.entry(name.to_string()).or_insert(0) += 1;
}

/// Expire a future: it answers 410 from now on and a sample is discarded for good.
fn expire(app: &App, f: &FutureEntry) {
    app.futures.expire(f);
    if let FKind::Sample {
        session, seq_id, ..
    } = &f.kind
    {
        app.store()
            .sample_dedupe
            .remove(&(session.clone(), *seq_id));
    }
    app.stats().futures_expired += 1;
}

pub async fn retrieve_future(app: &Arc<App>, ctx: &Ctx) -> Res {
    let o = Obj::root(ctx.json()?)?;
    let rid = o.str("request_id")?;
    let allow_meta = o.bool_or("allow_metadata_only", false)?;
    let f = app
        .futures
        .get(rid)
        .ok_or_else(|| Reply::error(404, format!("unknown request_id {rid:?}")))?;
    let accept_proto = ctx
        .header("accept")
        .is_some_and(|a| a.contains("application/x-protobuf"));
    let (threshold, hold) = {
        let s = app.settings();
        (s.metadata_threshold_bytes, s.poll_hold_ms)
    };
    {
        let mut g = f.lock();
        if g.faults.is_none() {
            let inj = app.settings().faults.clone();
            g.faults = Some(inj.decide_future(rid, f.is_sample()));
        }
    }
    let deadline = tokio::time::Instant::now() + Duration::from_millis(hold);
    let mut rx = f.done.subscribe();
    loop {
        // Per-future faults first.
        let (storm, paused) = {
            let mut g = f.lock();
            let ff = g.faults.as_mut().expect("decided above");
            let storm = if ff.storm > 0 {
                ff.storm -= 1;
                true
            } else {
                false
            };
            let paused = if !storm {
                match &mut ff.paused {
                    Some((state, n)) if *n > 0 => {
                        *n -= 1;
                        Some(*state)
                    }
                    _ => None,
                }
            } else {
                None
            };
            (storm, paused)
        };
        if storm {
            count_fault(app, "storm");
            return Ok(try_again(rid, "active", None));
        }
        if let Some(state) = paused {
            count_fault(app, "paused");
            let reason = if state == "paused_capacity" {
                "Tinker backend is running short on capacity, please wait"
            } else if f.is_sample() {
                "concurrent sampler weights limit hit"
            } else {
                "concurrent training clients rate limit hit"
            };
            return Ok(try_again(rid, state, Some(reason)));
        }
        let (state, retrieved, expire_fault, meta_sent, queue_state, unreadable) = {
            let g = f.lock();
            (
                g.state.clone(),
                g.retrieved,
                g.faults.as_ref().is_some_and(|x| x.expire),
                g.meta_sent,
                g.queue_state,
                g.faults.as_ref().and_then(|x| x.unreadable),
            )
        };
        if retrieved {
            return Err(Reply::error(
                410,
                format!("future {rid} was already retrieved and its payload released"),
            ));
        }
        match state {
            FState::Expired => {
                return Err(Reply::error(
                    410,
                    format!("future {rid} has expired; resubmit the request"),
                ))
            }
            FState::Pending => {
                let now = tokio::time::Instant::now();
                if now >= deadline {
                    return Ok(try_again(rid, queue_state, None));
                }
                let _ = tokio::time::timeout(deadline - now, rx.changed()).await;
                continue;
            }
            FState::Failed { message, category } => {
                return Ok(Reply::ok(
                    json!({"error": message, "category": category, "request_id": rid}),
                ));
            }
            FState::Done(p) => {
                if expire_fault {
                    expire(app, &f);
                    count_fault(app, "expire");
                    return Err(Reply::error(
                        410,
                        format!("future {rid} has expired (injected); resubmit the request"),
                    ));
                }
                let proto = accept_proto && p.proto_capable();
                let mut body = if proto {
                    p.to_proto()
                } else {
                    serde_json::to_vec(&p.to_json()).unwrap_or_default()
                };
                if unreadable.is_some_and(|only| only.is_none_or(|pb| pb == proto)) {
                    count_fault(app, "unreadable");
                    body = if proto {
                        // Field 1 with wire type 7, which no protobuf reader accepts.
                        [&[0x0f_u8, 0x00][..], &body].concat()
                    } else {
                        br#"{"injected": "unreadable result"}"#.to_vec()
                    };
                }
                if allow_meta && !meta_sent && body.len() > threshold {
                    f.lock().meta_sent = true;
                    return Ok(Reply::ok(json!({
                        "status": "complete_metadata",
                        "request_id": rid,
                        "response_payload_size": body.len(),
                    })));
                }
                return Ok(if proto {
                    Reply::proto(body)
                } else {
                    Reply::bytes("application/json", body)
                });
            }
        }
    }
}

pub async fn retrieve_futures(app: &Arc<App>, ctx: &Ctx) -> Res {
    let o = Obj::root(ctx.json()?)?;
    let target = o.obj("target")?;
    let t = target.opt_str("type")?.unwrap_or("sampling_session");
    if t != "sampling_session" {
        return Err(bad_request(format!(
            "field `target.type` must be \"sampling_session\", got {t:?}"
        )));
    }
    let sid = target.str("sampling_session_id")?.to_string();
    let clone = target.opt_i64("cloned_sampler_id")?.unwrap_or(0).max(0) as u64;
    if !app.store().sampling.contains_key(&sid) {
        return Err(Reply::error(
            404,
            format!("sampling session {sid:?} not found"),
        ));
    }
    let prev = o.opt_i64("prev_cursor")?.unwrap_or(0).max(0) as u64;
    let timeout = o.opt_f64("timeout")?;
    if let Some(ids) = o.get("retrieved_request_ids").and_then(|v| v.as_array()) {
        for id in ids.iter().filter_map(|v| v.as_str()) {
            if let Some(f) = app.futures.get(id) {
                let mut g = f.lock();
                if matches!(g.state, FState::Done(_) | FState::Failed { .. }) {
                    g.retrieved = true;
                    // Release the payload.
                    g.state = FState::Expired;
                }
            }
        }
    }
    let wait = Duration::from_secs_f64(timeout.unwrap_or(30.0).clamp(0.0, 60.0));
    let deadline = tokio::time::Instant::now() + wait;
    let mut rx = app.futures.log_rx.clone();
    loop {
        rx.borrow_and_update();
        let (entries, cursor) = app.futures.completions_after(&sid, clone, prev);
        let now = tokio::time::Instant::now();
        if !entries.is_empty() || now >= deadline {
            let completions: Vec<Value> = entries
                .iter()
                .map(|c| {
                    if c.finished {
                        json!({"state": "finished", "request_id": c.request_id, "response_payload_uncompressed_size": c.size})
                    } else {
                        json!({"state": "failed", "request_id": c.request_id})
                    }
                })
                .collect();
            return Ok(Reply::ok(
                json!({"completions": completions, "cursor": cursor}),
            ));
        }
        let _ = tokio::time::timeout(deadline - now, rx.changed()).await;
    }
}

pub async fn cancel_future(app: &Arc<App>, ctx: &Ctx) -> Res {
    let o = Obj::root(ctx.json()?)?;
    let rid = o.str("request_id")?;
    let f = app
        .futures
        .get(rid)
        .ok_or_else(|| Reply::error(404, format!("unknown request_id {rid:?}")))?;
    if !f.is_sample() {
        return Err(bad_request("only sampling requests can be cancelled"));
    }
    if app.futures.resolve(
        &f,
        FState::Failed {
            message: "cancelled by the client".into(),
            category: "user",
        },
    ) {
        app.stats().futures_cancelled += 1;
    }
    Ok(Reply::ok(json!({})))
}
