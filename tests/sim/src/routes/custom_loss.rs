//! `create_custom_loss`: store a traced torch.fx loss and run it server-side.

use super::check_session_open;
use crate::app::{bad_request, App, Ctx, Reply, Res};
use crate::futures::{FKind, FState, Payload};
use crate::util::Obj;
use serde_json::json;
use std::sync::Arc;

pub async fn create_custom_loss(app: &Arc<App>, ctx: &Ctx) -> Res {
    let v = ctx.json()?;
    let o = Obj::root(v)?;
    let session_id = o.str("session_id")?.to_string();
    let seq = o.i64("custom_loss_seq_id")?;
    let name = o.str("name")?.to_string();
    let mut inputs: Vec<(String, u8)> = Vec::new();
    for (i, inp) in o.array("inputs")?.iter().enumerate() {
        let n = inp
            .get("name")
            .and_then(|n| n.as_str())
            .ok_or_else(|| bad_request(format!("field `inputs[{i}].name` must be a string")))?;
        let r = inp
            .get("rank")
            .and_then(|r| r.as_u64())
            .filter(|r| *r <= 2)
            .ok_or_else(|| bad_request(format!("field `inputs[{i}].rank` must be 0, 1 or 2")))?;
        inputs.push((n.to_string(), r as u8));
    }
    if inputs.first().map(|i| i.0.as_str()) != Some("logprobs") {
        return Err(bad_request(
            "field `inputs`: the first input must be logprobs",
        ));
    }
    let graph = o
        .get("graph")
        .ok_or_else(|| bad_request("field `graph` is required"))?
        .clone();
    check_session_open(app, ctx, &session_id)?;
    let key = (session_id.clone(), seq);
    if let Some(rid) = app.store().custom_loss_keys.get(&key).cloned() {
        app.stats().duplicates_deduped += 1;
        return Ok(Reply::ok(json!({"request_id": rid})));
    }
    let rid = app.uuid();
    app.store().custom_loss_keys.insert(key, rid.clone());
    let fut = app.futures.create(rid.clone(), FKind::Other);
    app.stats().futures_created += 1;
    let state = match crate::model::custom::compile(&graph, &inputs) {
        Ok(f) => {
            let loss_id = format!("loss-{}-{}", &rid[..8], name);
            let names: Vec<String> = inputs.iter().skip(1).map(|i| i.0.clone()).collect();
            app.store()
                .custom_losses
                .insert(loss_id.clone(), (session_id, f, names));
            FState::Done(Arc::new(Payload::Json(
                json!({"loss_id": loss_id, "type": "create_custom_loss"}),
            )))
        }
        Err(e) => FState::Failed {
            message: format!("create_custom_loss {name:?}: {e}"),
            category: "user",
        },
    };
    let delay = app.settings().future_delay_ms;
    let app2 = app.clone();
    tokio::spawn(async move {
        tokio::time::sleep(std::time::Duration::from_millis(delay)).await;
        app2.futures.resolve(&fut, state);
    });
    Ok(Reply::ok(json!({"request_id": rid})))
}
