//! Training endpoints and the per-model executor that applies requests in seq_id order.

use super::parse::{build_datum, model_input_json, model_input_proto, tensor_json, Input};
use super::{check_session_open, future_handle, resolve_weights_path};
use crate::app::{bad_request, not_found, App, Ctx, Reply, Res};
use crate::futures::{FKind, FState, FwdPayload, Payload};
use crate::model::loss::{self, ConfigValue, DatumIn, LossKind};
use crate::model::optim::{self, AdamParams, DimuonParams, OptState};
use crate::model::{base, export_adapter, find_spec, state_digest, Adapter, Params};
use crate::proto;
use crate::store::{
    Applied, Checkpoint, CkptKind, LoraInfo, ModelEntry, Pending, Sched, TrainState,
};
use crate::util::{hash_str, hash_words, now_unix_f64, Obj};
use prost::Message;
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use tokio::sync::Notify;

pub enum OptimParams {
    Adam(AdamParams),
    Dimuon(DimuonParams),
}

pub enum TrainOp {
    Create,
    CreateFromCheckpoint {
        ckpt: Box<Checkpoint>,
        with_optimizer: bool,
    },
    FwdBwd {
        data: Vec<DatumIn>,
        loss: LossKind,
        forward_only: bool,
    },
    Optim(OptimParams),
    Save {
        name: String,
        ttl: Option<i64>,
        overwrite: bool,
        metadata: Option<Map<String, Value>>,
    },
    SaveSampler {
        name: Option<String>,
        sampling_seq: Option<i64>,
        ttl: Option<i64>,
        metadata: Option<Map<String, Value>>,
    },
    SaveExternal {
        name: String,
        ttl: Option<i64>,
    },
    Load {
        ckpt: Box<Checkpoint>,
        with_optimizer: bool,
    },
    Fail(String),
}

const TEN_YEARS: i64 = 315_360_000;

fn check_ttl(ttl: Option<i64>) -> Result<(), String> {
    match ttl {
        Some(t) if !(3600..=TEN_YEARS).contains(&t) => Err(format!(
            "ttl_seconds must be between 3600 (1 hour) and {TEN_YEARS} (10 years), got {t}"
        )),
        _ => Ok(()),
    }
}

fn checkpoint_name_ok(name: &str) -> Result<(), String> {
    if name.is_empty()
        || name.len() > 200
        || name.contains('/')
        || name.chars().any(|c| c.is_control())
    {
        return Err(format!(
            "checkpoint name {name:?} must be 1-200 characters without '/'"
        ));
    }
    Ok(())
}

fn model(app: &App, id: &str) -> Result<Arc<ModelEntry>, Reply> {
    app.store()
        .models
        .get(id)
        .cloned()
        .ok_or_else(|| not_found(format!("training run (model_id) {id:?} not found")))
}

fn owns(ctx: &Ctx, m: &ModelEntry) -> Result<(), Reply> {
    if m.owner != ctx.caller().user_urn {
        return Err(Reply::error(
            403,
            format!("training run {} belongs to another user", m.id),
        ));
    }
    Ok(())
}

/// Register a request at `seq_id` of `m` (or return the id already registered there).
fn submit(
    app: &Arc<App>,
    m: &Arc<ModelEntry>,
    body_hash: u64,
    seq_id: i64,
    kind: &'static str,
    op: TrainOp,
) -> Res {
    if seq_id < 0 {
        return Err(bad_request(format!(
            "field `seq_id` must be >= 0, got {seq_id}"
        )));
    }
    let delay = app.settings().future_delay_ms;
    let mut s = m.sched.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((rid, hash)) = s.by_seq.get(&seq_id) {
        if *hash != body_hash {
            return Err(bad_request(format!(
                "seq_id {seq_id} of model {} is already taken by a different request; seq_ids must be unique per model",
                m.id
            )));
        }
        let rid = rid.clone();
        drop(s);
        app.stats().duplicates_deduped += 1;
        return Ok(future_handle(&rid, Some(&m.id)));
    }
    if seq_id < s.next_seq {
        return Err(bad_request(format!(
            "seq_id {seq_id} of model {} was already executed (next expected seq_id is {})",
            m.id, s.next_seq
        )));
    }
    if !m.trainable && kind != "create" {
        return Err(bad_request(format!(
            "training run {} was created by copy_weights and cannot be trained; create a training client from its checkpoint instead",
            m.id
        )));
    }
    let rid = app.uuid();
    app.futures.create(
        rid.clone(),
        FKind::Training {
            model_id: m.id.clone(),
            seq_id,
        },
    );
    app.stats().futures_created += 1;
    s.by_seq.insert(seq_id, (rid.clone(), body_hash));
    let ready_at = tokio::time::Instant::now() + std::time::Duration::from_millis(delay);
    s.pending.insert(
        seq_id,
        Pending {
            request_id: rid.clone(),
            kind,
            ready_at,
            op,
        },
    );
    drop(s);
    *m.last_request_time
        .lock()
        .unwrap_or_else(|e| e.into_inner()) = now_unix_f64();
    m.wake.notify_one();
    Ok(future_handle(&rid, Some(&m.id)))
}

/// Create a model entry and start its executor.
#[allow(clippy::too_many_arguments)]
fn new_model(
    app: &Arc<App>,
    id: String,
    session_id: &str,
    owner: &str,
    spec: &'static base::BaseSpec,
    lora: LoraInfo,
    optimizer_config: Value,
    user_metadata: Option<Map<String, Value>>,
    trainable: bool,
) -> Arc<ModelEntry> {
    let now = now_unix_f64();
    let m = Arc::new(ModelEntry {
        id: id.clone(),
        session_id: session_id.to_string(),
        owner: owner.to_string(),
        spec,
        lora,
        optimizer_config,
        user_metadata,
        trainable,
        last_request_time: Mutex::new(now),
        sched: Mutex::new(Sched::default()),
        state: Mutex::new(None),
        wake: Notify::new(),
    });
    {
        let mut st = app.store();
        st.models.insert(id.clone(), m.clone());
        st.model_order.push(id);
        if let Some(s) = st.sessions.get_mut(session_id) {
            s.training_run_ids.push(m.id.clone());
        }
    }
    if trainable {
        tokio::spawn(executor(app.clone(), m.clone()));
    }
    m
}

fn optimizer_config(o: &Obj<'_>) -> Result<Value, Reply> {
    match o.get("optimizer_config") {
        None => Ok(json!({"type": "adamw"})),
        Some(v) => {
            let t = v.get("type").and_then(|t| t.as_str()).unwrap_or("");
            match t {
                "adamw" | "dimuon" => Ok(v.clone()),
                _ => Err(bad_request(format!(
                    "field `optimizer_config.type` must be \"adamw\" or \"dimuon\", got {}",
                    crate::util::describe(v.get("type").unwrap_or(&Value::Null))
                ))),
            }
        }
    }
}

pub async fn create_model(app: &Arc<App>, ctx: &Ctx) -> Res {
    let v = ctx.json()?;
    let o = Obj::root(v)?;
    let session_id = o.str("session_id")?;
    let model_seq_id = o.i64("model_seq_id")?;
    let base_model = o.str("base_model")?;
    let spec = find_spec(base_model).ok_or_else(|| {
        bad_request(format!(
            "unknown base_model {base_model:?}; supported models: {}",
            base::known_model_names().join(", ")
        ))
    })?;
    let lora = match o.opt_obj("lora_config")? {
        Some(l) => {
            let rank = l.i64("rank")?;
            if !(1..=256).contains(&rank) || (rank & (rank - 1)) != 0 {
                return Err(bad_request(format!(
                    "field `lora_config.rank` must be a power of two between 1 and 256, got {rank}"
                )));
            }
            let (ta, tm, tu) = (
                l.bool_or("train_attn", true)?,
                l.bool_or("train_mlp", true)?,
                l.bool_or("train_unembed", true)?,
            );
            if !(ta || tm || tu) {
                return Err(bad_request("lora_config: at least one of train_attn, train_mlp, train_unembed must be true"));
            }
            let seed = match l.opt_i64("seed")? {
                Some(s) => s as u64,
                None => app.next_u64(),
            };
            LoraInfo {
                rank: rank as usize,
                seed,
                train_attn: ta,
                train_mlp: tm,
                train_unembed: tu,
            }
        }
        None => LoraInfo {
            rank: 32,
            seed: app.next_u64(),
            train_attn: true,
            train_mlp: true,
            train_unembed: true,
        },
    };
    let optimizer = optimizer_config(&o)?;
    let user_metadata = o.opt_string_map("user_metadata")?;
    check_session_open(app, ctx, session_id)?;
    let id = format!("{session_id}:train:{model_seq_id}");
    let existing = app.store().models.get(&id).cloned();
    let m = match existing {
        Some(m) => m,
        None => new_model(
            app,
            id,
            session_id,
            &ctx.caller().user_urn,
            spec,
            lora,
            optimizer,
            user_metadata,
            true,
        ),
    };
    submit(
        app,
        &m,
        crate::util::hash_bytes(&ctx.body),
        0,
        "create",
        TrainOp::Create,
    )
}

pub async fn get_info(app: &Arc<App>, ctx: &Ctx) -> Res {
    let o = Obj::root(ctx.json()?)?;
    let m = model(app, o.str("model_id")?)?;
    owns(ctx, &m)?;
    Ok(Reply::ok(m.info_json()))
}

/// Loss config: v2 (numbers and strings) when present, else v1 (numbers).
fn loss_config_from_json(o: &Obj<'_>) -> Result<BTreeMap<String, ConfigValue>, Reply> {
    let mut out = BTreeMap::new();
    if let Some(cfg) = o.get("loss_fn_config") {
        let map = cfg
            .as_object()
            .ok_or_else(|| bad_request("field `loss_fn_config` must be an object"))?;
        for (k, v) in map {
            let cv = match v {
                Value::Number(n) => ConfigValue::Number(n.as_f64().unwrap_or(f64::NAN)),
                Value::String(s) => ConfigValue::Text(s.clone()),
                _ => {
                    return Err(bad_request(format!(
                        "loss_fn_config[{k:?}] must be a number or string, got {v}"
                    )))
                }
            };
            out.insert(k.clone(), cv);
        }
    }
    Ok(out)
}

fn custom_loss(
    app: &App,
    session_id: &str,
    config: &BTreeMap<String, ConfigValue>,
) -> Result<(LossKind, Vec<String>), String> {
    let id =
        match config.get("loss_id") {
            Some(ConfigValue::Text(t)) => t.clone(),
            Some(ConfigValue::Number(n)) => format!("{n}"),
            None => return Err(
                "loss_fn \"custom\" needs loss_fn_config {\"loss_id\": …} from create_custom_loss"
                    .into(),
            ),
        };
    if config.len() > 1 {
        return Err("loss_fn \"custom\" takes only loss_fn_config[\"loss_id\"]".into());
    }
    let st = app.store();
    let (sess, f, inputs) = st
        .custom_losses
        .get(&id)
        .ok_or_else(|| format!("unknown custom loss_id {id:?}"))?;
    if sess != session_id {
        return Err(format!("custom loss {id:?} belongs to another session"));
    }
    Ok((LossKind::Custom(f.clone()), inputs.clone()))
}

/// A decoded datum before validation: input tokens and loss inputs.
type RawDatum = (Input, BTreeMap<String, proto::DecodedTensor>);

/// Build the fwd/bwd op, turning content errors into a failing op (reported through the future).
fn fwdbwd_op(
    app: &App,
    m: &ModelEntry,
    loss_fn: &str,
    config: BTreeMap<String, ConfigValue>,
    raw: Vec<Result<RawDatum, String>>,
    forward_only: bool,
) -> TrainOp {
    let (kind, custom_inputs) = if loss_fn == "custom" {
        match custom_loss(app, &m.session_id, &config) {
            Ok((k, i)) => (k, Some(i)),
            Err(e) => return TrainOp::Fail(e),
        }
    } else {
        match loss::make_loss(loss_fn, &config) {
            Ok(k) => (k, None),
            Err(e) => return TrainOp::Fail(e),
        }
    };
    if raw.is_empty() {
        return TrainOp::Fail("forward_backward needs at least one datum".into());
    }
    let mut data = Vec::with_capacity(raw.len());
    for (i, r) in raw.into_iter().enumerate() {
        let (tokens, inputs) =
            match r.and_then(|(input, inputs)| Ok((input.tokens(m.spec)?, inputs))) {
                Ok(x) => x,
                Err(e) => return TrainOp::Fail(format!("datum {i}: {e}")),
            };
        match build_datum(i, tokens, inputs, loss_fn, custom_inputs.as_deref(), m.spec) {
            Ok(d) => data.push(d),
            Err(e) => return TrainOp::Fail(e),
        }
    }
    TrainOp::FwdBwd {
        data,
        loss: kind,
        forward_only,
    }
}

/// Decompress a zstd body.
fn unzstd(body: &[u8]) -> Result<Vec<u8>, String> {
    use std::io::Read;
    let mut dec =
        ruzstd::decoding::StreamingDecoder::new(body).map_err(|e| format!("zstd: {e}"))?;
    let mut out = Vec::new();
    dec.read_to_end(&mut out)
        .map_err(|e| format!("zstd: {e}"))?;
    Ok(out)
}

/// The decoded protobuf body of a forward_backward request (zstd-decompressed first).
pub fn decode_fwdbwd(ctx: &Ctx) -> Result<proto::ForwardBackwardRequest, Reply> {
    let body = if ctx
        .header("content-encoding")
        .is_some_and(|e| e.eq_ignore_ascii_case("zstd"))
    {
        unzstd(&ctx.body).map_err(|e| {
            bad_request(format!(
                "Content-Encoding: zstd body could not be decompressed: {e}"
            ))
        })?
    } else {
        ctx.body.clone()
    };
    proto::ForwardBackwardRequest::decode(body.as_slice()).map_err(|e| {
        bad_request(format!(
            "body is not a valid tinker_public.ForwardBackwardRequest: {e}"
        ))
    })
}

pub async fn forward_backward(app: &Arc<App>, ctx: &Ctx, legacy_forward: bool) -> Res {
    let is_proto = ctx
        .header("content-type")
        .is_some_and(|c| c.contains("protobuf"));
    let (model_id, seq_id, loss_fn, config, raw, forward_only) = if is_proto {
        let req = decode_fwdbwd(ctx)?;
        let mut config = BTreeMap::new();
        if req.loss_fn_config_v2.is_empty() {
            for (k, v) in &req.loss_fn_config {
                config.insert(k.clone(), ConfigValue::Number(*v));
            }
        } else {
            for (k, v) in &req.loss_fn_config_v2 {
                let cv = match &v.value {
                    Some(proto::loss_config_value::Value::Number(n)) => ConfigValue::Number(*n),
                    Some(proto::loss_config_value::Value::Text(t)) => ConfigValue::Text(t.clone()),
                    None => {
                        return Err(bad_request(format!(
                            "loss_fn_config_v2[{k:?}] has no value"
                        )))
                    }
                };
                config.insert(k.clone(), cv);
            }
        }
        let raw: Vec<_> = req
            .data
            .iter()
            .map(|d| {
                let toks = model_input_proto(&d.model_input, "model_input")?;
                let mut inputs = BTreeMap::new();
                for (k, t) in &d.loss_fn_inputs {
                    inputs.insert(k.clone(), t.decode(&format!("loss_fn_inputs[{k:?}]"), 0.0)?);
                }
                Ok((toks, inputs))
            })
            .collect();
        (
            req.model_id,
            req.seq_id as i64,
            req.loss_fn,
            config,
            raw,
            req.forward_only,
        )
    } else {
        let v = ctx.json()?;
        let o = Obj::root(v)?;
        let key = if legacy_forward {
            "forward_input"
        } else {
            "forward_backward_input"
        };
        let input = o.obj(key)?;
        let data = input.array("data")?;
        let raw: Vec<_> = data
            .iter()
            .enumerate()
            .map(|(i, d)| {
                let mi = d
                    .get("model_input")
                    .ok_or_else(|| format!("data[{i}].model_input is required"))?;
                let toks =
                    model_input_json(mi, &format!("data[{i}].model_input")).map_err(|e| e.0)?;
                let mut inputs = BTreeMap::new();
                if let Some(lfi) = d.get("loss_fn_inputs").and_then(|x| x.as_object()) {
                    for (k, t) in lfi {
                        inputs.insert(
                            k.clone(),
                            tensor_json(t, &format!("loss_fn_inputs[{k:?}]"), 0.0)
                                .map_err(|e| e.0)?,
                        );
                    }
                }
                Ok((toks, inputs))
            })
            .collect();
        let config = loss_config_from_json(&input)?;
        (
            o.str("model_id")?.to_string(),
            o.opt_i64("seq_id")?.unwrap_or(0),
            input.str("loss_fn")?.to_string(),
            config,
            raw,
            legacy_forward || input.bool_or("forward_only", false)?,
        )
    };
    if model_id.is_empty() {
        return Err(bad_request("field `model_id` is required"));
    }
    let m = model(app, &model_id)?;
    owns(ctx, &m)?;
    check_session_open(app, ctx, &m.session_id)?;
    if seq_id < 1 {
        return Err(bad_request(format!(
            "field `seq_id` must be >= 1 (seq_id 0 is the model's creation), got {seq_id}"
        )));
    }
    let kind = if forward_only {
        "forward"
    } else {
        "forward_backward"
    };
    let body_hash = crate::util::hash_bytes(&ctx.body);
    // Images sent to a text-only model: a 400, as the service validates inputs against the
    // model before queueing them. The seq_id is still taken (as a failed request), so the
    // client's later requests, numbered after it, do not wait for it forever.
    let refused = raw.iter().enumerate().find_map(|(i, r)| {
        r.as_ref()
            .ok()
            .and_then(|(input, _)| input.refused_by(m.spec))
            .map(|e| format!("datum {i}: {e}"))
    });
    if let Some(e) = refused {
        submit(app, &m, body_hash, seq_id, kind, TrainOp::Fail(e.clone()))?;
        return Err(bad_request(e));
    }
    let op = fwdbwd_op(app, &m, &loss_fn, config, raw, forward_only);
    submit(app, &m, body_hash, seq_id, kind, op)
}

fn parse_f(o: &Obj<'_>, k: &str, d: f64) -> Result<f64, Reply> {
    Ok(o.opt_f64(k)?.unwrap_or(d))
}

pub async fn optim_step(app: &Arc<App>, ctx: &Ctx) -> Res {
    let o = Obj::root(ctx.json()?)?;
    let m = model(app, o.str("model_id")?)?;
    owns(ctx, &m)?;
    check_session_open(app, ctx, &m.session_id)?;
    let seq_id = o.i64("seq_id")?;
    let opt_type = m
        .optimizer_config
        .get("type")
        .and_then(|t| t.as_str())
        .unwrap_or("adamw");
    let op = if let Some(a) = o
        .opt_obj("adam_params")?
        .or(o.opt_obj("optim_params")?.filter(|p| !p.has("type")))
    {
        let p = AdamParams {
            learning_rate: parse_f(&a, "learning_rate", 1e-4)?,
            beta1: parse_f(&a, "beta1", 0.9)?,
            beta2: parse_f(&a, "beta2", 0.95)?,
            eps: parse_f(&a, "eps", 1e-12)?,
            weight_decay: parse_f(&a, "weight_decay", 0.0)?,
            grad_clip_norm: parse_f(&a, "grad_clip_norm", 0.0)?,
        };
        match (p.validate(), opt_type) {
            (Err(e), _) => TrainOp::Fail(e),
            (Ok(()), "adamw") => TrainOp::Optim(OptimParams::Adam(p)),
            _ => TrainOp::Fail(format!("model {} was created with the {opt_type} optimizer but optim_step sent adam_params", m.id)),
        }
    } else if let Some(p) = o
        .opt_obj("optimizer_params")?
        .or(o.opt_obj("optim_params")?)
    {
        let t = p.str("type")?;
        if t != "dimuon" {
            TrainOp::Fail(format!(
                "optimizer_params.type {t:?} is not supported (adamw params go in adam_params)"
            ))
        } else if opt_type != "dimuon" {
            TrainOp::Fail(format!("model {} was created with the {opt_type} optimizer but optim_step sent dimuon params", m.id))
        } else {
            let d = DimuonParams {
                learning_rate: p.f64("learning_rate")?,
                grad_clip_norm: parse_f(&p, "grad_clip_norm", 0.0)?,
                beta1: parse_f(&p, "beta1", 0.9)?,
            };
            if !(d.learning_rate >= 0.0
                && d.learning_rate.is_finite()
                && (0.0..1.0).contains(&d.beta1)
                && d.grad_clip_norm.is_finite())
            {
                TrainOp::Fail(format!("invalid dimuon params: {d:?}"))
            } else {
                TrainOp::Optim(OptimParams::Dimuon(d))
            }
        }
    } else {
        return Err(bad_request(
            "optim_step needs `adam_params` or `optimizer_params`",
        ));
    };
    submit(
        app,
        &m,
        crate::util::hash_bytes(&ctx.body),
        seq_id,
        "optim_step",
        op,
    )
}

fn name_conflict(app: &App, m: &ModelEntry, kind: CkptKind, name: &str) -> bool {
    let path = format!("tinker://{}/{}/{}", m.id, kind.segment(), name);
    let now = now_unix_f64();
    let st = app.store();
    if st.checkpoint(&path, now).is_some() {
        return true;
    }
    drop(st);
    // A pending save of the same name counts too.
    let s = m.sched.lock().unwrap_or_else(|e| e.into_inner());
    s.pending.values().any(|p| match (&p.op, kind) {
        (
            TrainOp::Save {
                name: n,
                overwrite: false,
                ..
            },
            CkptKind::Training,
        ) => n == name,
        (TrainOp::SaveSampler { name: Some(n), .. }, CkptKind::Sampler) => n == name,
        (TrainOp::SaveExternal { name: n, .. }, CkptKind::External) => n == name,
        _ => false,
    })
}

pub async fn save_weights(app: &Arc<App>, ctx: &Ctx) -> Res {
    let o = Obj::root(ctx.json()?)?;
    let m = model(app, o.str("model_id")?)?;
    owns(ctx, &m)?;
    check_session_open(app, ctx, &m.session_id)?;
    let seq_id = o.i64("seq_id")?;
    let name = match o.opt_str("path")? {
        Some(n) => n.to_string(),
        None => format!("checkpoint-{seq_id:06}"),
    };
    let overwrite = o.bool_or("overwrite", false)?;
    let ttl = o.opt_i64("ttl_seconds")?;
    let metadata = o.opt_string_map("user_metadata")?;
    if !m
        .sched
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .by_seq
        .contains_key(&seq_id)
        && !overwrite
        && name_conflict(app, &m, CkptKind::Training, &name)
    {
        return Err(Reply::error(409, format!("checkpoint weights/{name} already exists for {} (pass overwrite=true to replace it)", m.id)));
    }
    let op = match checkpoint_name_ok(&name).and_then(|_| check_ttl(ttl)) {
        Err(e) => TrainOp::Fail(e),
        Ok(()) => TrainOp::Save {
            name,
            ttl,
            overwrite,
            metadata,
        },
    };
    submit(
        app,
        &m,
        crate::util::hash_bytes(&ctx.body),
        seq_id,
        "save_weights",
        op,
    )
}

pub async fn save_weights_for_sampler(app: &Arc<App>, ctx: &Ctx) -> Res {
    let o = Obj::root(ctx.json()?)?;
    let m = model(app, o.str("model_id")?)?;
    owns(ctx, &m)?;
    check_session_open(app, ctx, &m.session_id)?;
    let seq_id = o.i64("seq_id")?;
    let name = o.opt_str("path")?.map(|s| s.to_string());
    let sampling_seq = o.opt_i64("sampling_session_seq_id")?;
    let ttl = o.opt_i64("ttl_seconds")?;
    let metadata = o.opt_string_map("user_metadata")?;
    let kind = o.opt_str("kind")?.unwrap_or("snapshot");
    if kind != "snapshot" && kind != "inflight" {
        return Err(bad_request(format!(
            "field `kind` must be \"snapshot\" or \"inflight\", got {kind:?}"
        )));
    }
    if name.is_none() && sampling_seq.is_none() {
        return Err(bad_request(
            "save_weights_for_sampler needs `path` (named) or `sampling_session_seq_id` (unnamed)",
        ));
    }
    if let Some(n) = &name {
        let registered = m
            .sched
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .by_seq
            .contains_key(&seq_id);
        if !registered && name_conflict(app, &m, CkptKind::Sampler, n) {
            return Err(Reply::error(
                409,
                format!("checkpoint sampler_weights/{n} already exists for {}", m.id),
            ));
        }
    }
    let op = match name
        .as_deref()
        .map(checkpoint_name_ok)
        .unwrap_or(Ok(()))
        .and_then(|_| check_ttl(ttl))
    {
        Err(e) => TrainOp::Fail(e),
        Ok(()) => TrainOp::SaveSampler {
            name,
            sampling_seq,
            ttl,
            metadata,
        },
    };
    // The official SDK takes a fresh sampling_session_seq_id on each holder-level resubmission
    // of one seq_id (training_client.py `_send_request`), so a resubmission after a lost
    // response differs from the original in that field only: it is the same request.
    let mut same_request = ctx.json()?.clone();
    if let Some(fields) = same_request.as_object_mut() {
        fields.remove("sampling_session_seq_id");
    }
    submit(
        app,
        &m,
        crate::util::hash_bytes(same_request.to_string().as_bytes()),
        seq_id,
        "save_weights_for_sampler",
        op,
    )
}

pub async fn save_weights_external(app: &Arc<App>, ctx: &Ctx) -> Res {
    let o = Obj::root(ctx.json()?)?;
    let m = model(app, o.str("model_id")?)?;
    owns(ctx, &m)?;
    check_session_open(app, ctx, &m.session_id)?;
    let seq_id = o.i64("seq_id")?;
    let name = o.str("path")?.to_string();
    let ttl = o.opt_i64("ttl_seconds")?;
    let registered = m
        .sched
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .by_seq
        .contains_key(&seq_id);
    if !registered && name_conflict(app, &m, CkptKind::External, &name) {
        return Err(Reply::error(
            409,
            format!(
                "checkpoint external_weights/{name} already exists for {}",
                m.id
            ),
        ));
    }
    let recipients = o
        .get("age_encryption_recipients")
        .and_then(|r| r.as_array())
        .map(|a| a.len())
        .unwrap_or(0);
    let op = if recipients > 0 {
        TrainOp::Fail("age_encryption_recipients: tinker-sim cannot encrypt exports (no age implementation); omit the field".into())
    } else {
        match checkpoint_name_ok(&name).and_then(|_| check_ttl(ttl)) {
            Err(e) => TrainOp::Fail(e),
            Ok(()) => TrainOp::SaveExternal { name, ttl },
        }
    };
    submit(
        app,
        &m,
        crate::util::hash_bytes(&ctx.body),
        seq_id,
        "save_weights_external",
        op,
    )
}

pub async fn load_weights(app: &Arc<App>, ctx: &Ctx) -> Res {
    let o = Obj::root(ctx.json()?)?;
    let path = o.str("path")?;
    let with_optimizer = o.bool_or("optimizer", false)?;
    let token = o.opt_str("weights_access_token")?;
    if let Some(session_id) = o.opt_str("session_id")? {
        // Create-via-load: the load is the new model's seq 0.
        let model_seq_id = o.i64("model_seq_id")?;
        check_session_open(app, ctx, session_id)?;
        let id = format!("{session_id}:train:{model_seq_id}");
        if let Some(m) = app.store().models.get(&id).cloned() {
            return submit(
                app,
                &m,
                crate::util::hash_bytes(&ctx.body),
                0,
                "create_via_load",
                TrainOp::Fail("duplicate".into()),
            );
        }
        let ckpt = resolve_weights_path(app, ctx, path, token, true)?;
        if ckpt.kind != CkptKind::Training {
            return Err(bad_request(format!(
                "path {path:?} is not a training checkpoint (tinker://…/weights/…)"
            )));
        }
        let spec = match o.opt_str("base_model")? {
            Some(b) => {
                let s =
                    find_spec(b).ok_or_else(|| bad_request(format!("unknown base_model {b:?}")))?;
                if s.vocab != ckpt.weights.base.spec.vocab {
                    return Err(bad_request(format!(
                        "base_model {b:?} is not compatible with the checkpoint's base model {}",
                        ckpt.weights.base.spec.name
                    )));
                }
                s
            }
            None => ckpt.weights.base.spec,
        };
        let optimizer = if with_optimizer {
            ckpt.optimizer_config.clone()
        } else {
            optimizer_config(&o)?
        };
        let m = new_model(
            app,
            id,
            session_id,
            &ctx.caller().user_urn,
            spec,
            ckpt.lora.clone(),
            optimizer,
            o.opt_string_map("user_metadata")?,
            true,
        );
        return submit(
            app,
            &m,
            crate::util::hash_bytes(&ctx.body),
            0,
            "create_via_load",
            TrainOp::CreateFromCheckpoint {
                ckpt: Box::new(ckpt),
                with_optimizer,
            },
        );
    }
    let m = model(app, o.str("model_id")?)?;
    owns(ctx, &m)?;
    check_session_open(app, ctx, &m.session_id)?;
    let seq_id = o.i64("seq_id")?;
    let op = match resolve_weights_path(app, ctx, path, token, true) {
        Ok(c) if c.kind != CkptKind::Training => {
            TrainOp::Fail(format!("path {path:?} is not a training checkpoint"))
        }
        Ok(c) if c.weights.base.spec.vocab != m.spec.vocab => TrainOp::Fail(format!(
            "checkpoint {path} is for {}, not {}",
            c.weights.base.spec.name, m.spec.name
        )),
        Ok(c) if c.lora.rank != m.lora.rank => TrainOp::Fail(format!(
            "checkpoint {path} has LoRA rank {} but model {} has rank {}",
            c.lora.rank, m.id, m.lora.rank
        )),
        Ok(c) => TrainOp::Load {
            ckpt: Box::new(c),
            with_optimizer,
        },
        Err(r) => TrainOp::Fail(String::from_utf8_lossy(&r.body).into_owned()),
    };
    submit(
        app,
        &m,
        crate::util::hash_bytes(&ctx.body),
        seq_id,
        "load_weights",
        op,
    )
}

// ---------------------------------------------------------------------------
// Executor
// ---------------------------------------------------------------------------

async fn executor(app: Arc<App>, m: Arc<ModelEntry>) {
    loop {
        let notified = m.wake.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        let next = {
            let mut s = m.sched.lock().unwrap_or_else(|e| e.into_inner());
            let seq = s.next_seq;
            s.pending.remove(&seq).map(|p| (seq, p))
        };
        let Some((seq, p)) = next else {
            notified.await;
            continue;
        };
        tokio::time::sleep_until(p.ready_at).await;
        let permit = app.compute.acquire().await.ok();
        let (app2, m2) = (app.clone(), m.clone());
        let rid = p.request_id.clone();
        let kind = p.kind;
        let result = tokio::task::spawn_blocking(move || execute(&app2, &m2, p.op))
            .await
            .unwrap_or_else(|e| Err((format!("internal error: {e}"), "server")));
        drop(permit);
        let ok = result.is_ok();
        {
            let mut s = m.sched.lock().unwrap_or_else(|e| e.into_inner());
            s.applied.push(Applied {
                seq_id: seq,
                kind,
                request_id: rid.clone(),
                ok,
            });
            s.next_seq = seq + 1;
            if ok && kind == "optim_step" {
                s.optim_steps += 1;
            }
        }
        {
            let mut st = app.stats();
            if ok {
                st.applied_training_requests += 1;
                st.futures_completed += 1;
            } else {
                st.futures_failed += 1;
            }
        }
        if let Some(f) = app.futures.get(&rid) {
            let state = match result {
                Ok(p) => FState::Done(Arc::new(p)),
                Err((message, category)) => FState::Failed { message, category },
            };
            app.futures.resolve(&f, state);
        }
    }
}

type OpResult = Result<Payload, (String, &'static str)>;

fn user(e: impl Into<String>) -> (String, &'static str) {
    (e.into(), "user")
}

fn with_state<T>(
    m: &ModelEntry,
    f: impl FnOnce(&mut TrainState) -> Result<T, (String, &'static str)>,
) -> Result<T, (String, &'static str)> {
    let mut g = m.state.lock().unwrap_or_else(|e| e.into_inner());
    match g.as_mut() {
        Some(s) => f(s),
        None => Err((
            "the model has not been created (its seq_id 0 failed)".into(),
            "user",
        )),
    }
}

fn snapshot_size(ad: &Adapter, opt: Option<&OptState>) -> u64 {
    let n: usize = ad.params.values().map(|v| v.len()).sum();
    let o: usize = opt
        .map(|o| o.m.values().chain(o.v.values()).map(|v| v.len()).sum())
        .unwrap_or(0);
    ((n + o) * 4 + 1024) as u64
}

fn new_checkpoint(
    m: &ModelEntry,
    kind: CkptKind,
    name: &str,
    st: &TrainState,
    ttl: Option<i64>,
    metadata: Option<Map<String, Value>>,
    with_opt: bool,
) -> Checkpoint {
    let now = now_unix_f64();
    let opt = with_opt.then(|| Arc::new(st.opt.clone()));
    Checkpoint {
        run_id: m.id.clone(),
        kind,
        name: name.to_string(),
        owner: m.owner.clone(),
        time: now,
        size_bytes: snapshot_size(&st.adapter, opt.as_deref()),
        public: false,
        user_metadata: metadata,
        expires_at: ttl.map(|t| now + t as f64),
        weights: Arc::new(st.adapter.clone()),
        opt,
        optimizer_config: m.optimizer_config.clone(),
        lora: m.lora.clone(),
        files: vec![],
    }
}

fn register_checkpoint(app: &App, c: Checkpoint) -> String {
    let path = c.tinker_path();
    let mut st = app.store();
    st.audit(
        c.time,
        "checkpoint_created",
        &c.owner,
        json!({"tinker_path": path, "checkpoint_type": c.kind.type_name()}),
    );
    st.usage.push(crate::store::Usage {
        time: c.time,
        owner: c.owner.clone(),
        session_id: None,
        base_model: Some(c.weights.base.spec.name.to_string()),
        kind: "checkpoint",
        cached: false,
        amount: 1,
    });
    st.checkpoints.insert(path.clone(), c);
    path
}

fn execute(app: &App, m: &ModelEntry, op: TrainOp) -> OpResult {
    match op {
        TrainOp::Fail(e) => Err(user(e)),
        TrainOp::Create => {
            let base = base::base_model(app.seed, m.spec);
            let l = &m.lora;
            let adapter = Adapter::new(
                base,
                l.rank,
                l.seed,
                l.train_attn || l.train_mlp,
                l.train_unembed,
            );
            *m.state.lock().unwrap_or_else(|e| e.into_inner()) = Some(TrainState {
                adapter,
                grads: Params::new(),
                opt: OptState::default(),
            });
            Ok(Payload::Json(
                json!({"model_id": m.id, "type": "create_model"}),
            ))
        }
        TrainOp::CreateFromCheckpoint {
            ckpt,
            with_optimizer,
        } => {
            let mut adapter = (*ckpt.weights).clone();
            adapter.base = base::base_model(app.seed, m.spec);
            let opt = if with_optimizer {
                ckpt.opt.as_deref().cloned().unwrap_or_default()
            } else {
                OptState::default()
            };
            *m.state.lock().unwrap_or_else(|e| e.into_inner()) = Some(TrainState {
                adapter,
                grads: Params::new(),
                opt,
            });
            Ok(Payload::Json(
                json!({"model_id": m.id, "path": ckpt.tinker_path(), "type": "load_weights"}),
            ))
        }
        TrainOp::Load {
            ckpt,
            with_optimizer,
        } => with_state(m, |s| {
            let mut adapter = (*ckpt.weights).clone();
            adapter.base = s.adapter.base.clone();
            adapter.train_hidden = s.adapter.train_hidden;
            adapter.train_unembed = s.adapter.train_unembed;
            s.adapter = adapter;
            s.grads.clear();
            s.opt = if with_optimizer {
                ckpt.opt.as_deref().cloned().unwrap_or_default()
            } else {
                OptState::default()
            };
            Ok(Payload::Json(
                json!({"model_id": m.id, "path": ckpt.tinker_path(), "type": "load_weights"}),
            ))
        }),
        TrainOp::FwdBwd {
            data,
            loss,
            forward_only,
        } => with_state(m, |s| {
            let tokens: usize = data.iter().map(|d| d.n()).sum();
            let res = if forward_only {
                loss::forward_backward(&s.adapter, &data, &loss, None)
            } else {
                // Accumulate into a fresh buffer so a failing request leaves no trace.
                let mut fresh = Params::new();
                let r = loss::forward_backward(&s.adapter, &data, &loss, Some(&mut fresh));
                if r.is_ok() {
                    for (k, g) in fresh {
                        match s.grads.get_mut(&k) {
                            Some(acc) => acc.iter_mut().zip(g).for_each(|(a, b)| *a += b),
                            None => {
                                s.grads.insert(k, g);
                            }
                        }
                    }
                }
                r
            }
            .map_err(user)?;
            let mut metrics = res.metrics;
            if m.spec.moe {
                // Router statistics MoE runs report (deterministic stand-ins).
                let h = hash_words(&[hash_str(&m.id), tokens as u64]);
                let frac = 0.85 + 0.1 * crate::util::unit_f64(h);
                metrics.insert("e_frac_with_tokens:mean".into(), frac);
                metrics.insert("e_max_violation:max".into(), 1.0 - frac);
            }
            let outputs = data
                .iter()
                .zip(res.logprobs)
                .map(|(d, lp)| {
                    let shape = if d.two_d {
                        vec![d.n(), d.k]
                    } else {
                        vec![d.n()]
                    };
                    (lp.into_iter().map(|x| x as f32).collect(), shape)
                })
                .collect();
            app.store().usage.push(crate::store::Usage {
                time: now_unix_f64(),
                owner: m.owner.clone(),
                session_id: Some(m.session_id.clone()),
                base_model: Some(m.spec.name.to_string()),
                kind: "training",
                cached: false,
                amount: tokens as u64,
            });
            Ok(Payload::FwdBwd(FwdPayload { outputs, metrics }))
        }),
        TrainOp::Optim(p) => with_state(m, |s| {
            let grads = std::mem::take(&mut s.grads);
            let (norm, lr) = match &p {
                OptimParams::Adam(a) => (
                    optim::adamw_step(&mut s.adapter, &grads, &mut s.opt, a),
                    a.learning_rate,
                ),
                OptimParams::Dimuon(d) => (
                    optim::dimuon_step(&mut s.adapter, &grads, &mut s.opt, d),
                    d.learning_rate,
                ),
            };
            Ok(Payload::Json(json!({
                "metrics": {"grad_norm:mean": norm, "learning_rate:mean": lr, "optim_step:max": s.opt.step as f64},
                "type": "optim_step",
            })))
        }),
        TrainOp::Save {
            name,
            ttl,
            overwrite,
            metadata,
        } => {
            let c = with_state(m, |s| {
                Ok(new_checkpoint(
                    m,
                    CkptKind::Training,
                    &name,
                    s,
                    ttl,
                    metadata,
                    true,
                ))
            })?;
            if !overwrite
                && app
                    .store()
                    .checkpoint(&c.tinker_path(), now_unix_f64())
                    .is_some()
            {
                return Err(user(format!(
                    "checkpoint weights/{name} already exists (pass overwrite=true)"
                )));
            }
            let path = register_checkpoint(app, c);
            Ok(Payload::Json(json!({"path": path, "type": "save_weights"})))
        }
        TrainOp::SaveSampler {
            name,
            sampling_seq,
            ttl,
            metadata,
        } => {
            let (weights, c) = with_state(m, |s| {
                let c = name.as_ref().map(|n| {
                    new_checkpoint(m, CkptKind::Sampler, n, s, ttl, metadata.clone(), false)
                });
                Ok((Arc::new(s.adapter.clone()), c))
            })?;
            match (name, c) {
                (Some(n), Some(c)) => {
                    if app
                        .store()
                        .checkpoint(&c.tinker_path(), now_unix_f64())
                        .is_some()
                    {
                        return Err(user(format!(
                            "checkpoint sampler_weights/{n} already exists"
                        )));
                    }
                    let path = register_checkpoint(app, c);
                    Ok(Payload::Json(
                        json!({"path": path, "type": "save_weights_for_sampler"}),
                    ))
                }
                _ => {
                    let seq = sampling_seq.unwrap_or(0);
                    let id = format!("{}:sample:{seq}", m.session_id);
                    let mut st = app.store();
                    if !st.sampling.contains_key(&id) {
                        st.sampling.insert(
                            id.clone(),
                            crate::store::SamplingSession {
                                id: id.clone(),
                                session_id: m.session_id.clone(),
                                owner: m.owner.clone(),
                                spec: m.spec,
                                model_path: None,
                                weights,
                                clients: 0,
                                prefixes: Default::default(),
                            },
                        );
                        if let Some(s) = st.sessions.get_mut(&m.session_id) {
                            s.sampler_ids.push(id.clone());
                        }
                    }
                    Ok(Payload::Json(
                        json!({"sampling_session_id": id, "type": "save_weights_for_sampler"}),
                    ))
                }
            }
        }
        TrainOp::SaveExternal { name, ttl } => {
            let mut c = with_state(m, |s| {
                Ok(new_checkpoint(
                    m,
                    CkptKind::External,
                    &name,
                    s,
                    ttl,
                    None,
                    false,
                ))
            })?;
            if app
                .store()
                .checkpoint(&c.tinker_path(), now_unix_f64())
                .is_some()
            {
                return Err(user(format!(
                    "checkpoint external_weights/{name} already exists"
                )));
            }
            let l = &m.lora;
            c.files = export_adapter(
                &c.weights,
                m.spec.name,
                (l.train_attn, l.train_mlp, l.train_unembed),
            )
            .into_iter()
            .map(|(n, b)| (n, Arc::new(b)))
            .collect();
            c.size_bytes = c.files.iter().map(|(_, b)| b.len() as u64).sum();
            let size = c.size_bytes;
            let path = register_checkpoint(app, c);
            Ok(Payload::Json(
                json!({"path": path, "size_bytes": size, "type": "save_weights_external"}),
            ))
        }
    }
}

/// The admin view of a model (`GET /_sim/models/{id}`).
pub fn model_debug_json(m: &ModelEntry) -> Value {
    let s = m.sched.lock().unwrap_or_else(|e| e.into_inner());
    let applied: Vec<Value> = s
        .applied
        .iter()
        .filter(|a| a.ok)
        .map(|a| json!({"seq_id": a.seq_id, "kind": a.kind, "request_id": a.request_id}))
        .collect();
    let failed: Vec<Value> = s
        .applied
        .iter()
        .filter(|a| !a.ok)
        .map(|a| json!({"seq_id": a.seq_id, "kind": a.kind, "request_id": a.request_id}))
        .collect();
    let pending: Vec<i64> = s.pending.keys().copied().collect();
    let (next_seq, optim_steps) = (s.next_seq, s.optim_steps);
    drop(s);
    let g = m.state.lock().unwrap_or_else(|e| e.into_inner());
    let (digest, touched, grad_keys) = match g.as_ref() {
        Some(st) => (
            Some(state_digest(&st.adapter, &st.opt)),
            st.adapter
                .params
                .keys()
                .filter(|k| matches!(k, crate::model::Key::A(_)))
                .count(),
            st.grads.len(),
        ),
        None => (None, 0, 0),
    };
    json!({
        "model_id": m.id,
        "base_model": m.spec.name,
        "session_id": m.session_id,
        "trainable": m.trainable,
        "lora_rank": m.lora.rank,
        "applied": applied,
        "failed": failed,
        "pending_seq_ids": pending,
        "next_seq_id": next_seq,
        "weights_digest": digest,
        "optim_steps": optim_steps,
        "adapter_rows": touched,
        "accumulated_grad_tensors": grad_keys,
    })
}

/// Used by copy_weights: a non-trainable run holding a copy of a checkpoint.
pub fn copy_run(
    app: &Arc<App>,
    session_id: &str,
    owner: &str,
    seq: i64,
    src: &Checkpoint,
    ttl: Option<i64>,
) -> String {
    let id = format!("{session_id}:train:{seq}");
    let m = new_model(
        app,
        id.clone(),
        session_id,
        owner,
        src.weights.base.spec,
        src.lora.clone(),
        src.optimizer_config.clone(),
        None,
        false,
    );
    let now = now_unix_f64();
    let mut c = src.clone();
    c.run_id = m.id.clone();
    c.owner = owner.to_string();
    c.time = now;
    c.public = false;
    c.expires_at = ttl.map(|t| now + t as f64);
    register_checkpoint(app, c)
}

pub fn validate_copy_ttl(ttl: Option<i64>) -> Result<(), Reply> {
    check_ttl(ttl).map_err(bad_request)
}
