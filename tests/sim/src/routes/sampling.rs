//! Sampling sessions and `asample`.

use super::parse::{model_input_json, sampling_params, target_spec};
use super::{check_session_open, resolve_weights_path};
use crate::app::{bad_request, App, Ctx, Reply, Res};
use crate::futures::{FKind, FState, Payload, SamplePayload};
use crate::model::sample::{self, Spec, Stop};
use crate::model::{base, find_spec, Adapter, BaseSpec};
use crate::store::{CkptKind, SamplingSession, Usage};
use crate::util::{hash_words, now_unix_f64, Obj};
use serde_json::json;
use std::sync::Arc;

/// An adapter that leaves the base model unchanged.
pub fn base_weights(app: &App, spec: &'static BaseSpec) -> Arc<Adapter> {
    Arc::new(Adapter::new(
        base::base_model(app.seed, spec),
        1,
        0,
        false,
        false,
    ))
}

fn weights_for(
    app: &App,
    ctx: &Ctx,
    model_path: Option<&str>,
    base_model: Option<&str>,
) -> Result<(&'static BaseSpec, Arc<Adapter>), Reply> {
    match (model_path, base_model) {
        (Some(p), b) => {
            let c = resolve_weights_path(app, ctx, p, None, false)?;
            if c.kind == CkptKind::External {
                return Err(bad_request(format!(
                    "model_path {p:?}: external weights cannot be sampled; use sampler_weights"
                )));
            }
            if let Some(b) = b {
                let s =
                    find_spec(b).ok_or_else(|| bad_request(format!("unknown base_model {b:?}")))?;
                if s.vocab != c.weights.base.spec.vocab {
                    return Err(bad_request(format!(
                        "base_model {b:?} does not match the checkpoint's {}",
                        c.weights.base.spec.name
                    )));
                }
            }
            Ok((c.weights.base.spec, c.weights.clone()))
        }
        (None, Some(b)) => {
            let s = find_spec(b).ok_or_else(|| {
                bad_request(format!(
                    "unknown base_model {b:?}; supported models: {}",
                    base::known_model_names().join(", ")
                ))
            })?;
            Ok((s, base_weights(app, s)))
        }
        (None, None) => Err(bad_request(
            "either `model_path` or `base_model` is required",
        )),
    }
}

pub async fn create_sampling_session(app: &Arc<App>, ctx: &Ctx) -> Res {
    let o = Obj::root(ctx.json()?)?;
    let session_id = o.str("session_id")?;
    let seq = o.i64("sampling_session_seq_id")?;
    check_session_open(app, ctx, session_id)?;
    let id = format!("{session_id}:sample:{seq}");
    if app.store().sampling.contains_key(&id) {
        // The same (session, sampling_session_seq_id): a retry of a session already made.
        app.stats().duplicates_deduped += 1;
        return Ok(Reply::ok(
            json!({"type": "create_sampling_session", "sampling_session_id": id}),
        ));
    }
    let model_path = o.opt_str("model_path")?;
    let (spec, weights) = weights_for(app, ctx, model_path, o.opt_str("base_model")?)?;
    let mut st = app.store();
    st.sampling.insert(
        id.clone(),
        SamplingSession {
            id: id.clone(),
            session_id: session_id.to_string(),
            owner: ctx.caller().user_urn.clone(),
            spec,
            model_path: model_path.map(|s| s.to_string()),
            weights,
            clients: 0,
            prefixes: Default::default(),
        },
    );
    if let Some(s) = st.sessions.get_mut(session_id) {
        s.sampler_ids.push(id.clone());
    }
    Ok(Reply::ok(
        json!({"type": "create_sampling_session", "sampling_session_id": id}),
    ))
}

pub async fn join_sampling_session(app: &Arc<App>, ctx: &Ctx) -> Res {
    let o = Obj::root(ctx.json()?)?;
    let id = o.str("sampling_session_id")?;
    let session_id = app
        .store()
        .sampling
        .get(id)
        .map(|s| s.session_id.clone())
        .ok_or_else(|| Reply::error(404, format!("sampling session {id:?} not found")))?;
    check_session_open(app, ctx, &session_id)?;
    let mut st = app.store();
    let s = st
        .sampling
        .get_mut(id)
        .ok_or_else(|| Reply::error(404, format!("sampling session {id:?} not found")))?;
    s.clients += 1;
    Ok(Reply::ok(
        json!({"client_counter": s.clients, "type": "join_sampling_session"}),
    ))
}

const PREFIX_BLOCK: usize = 16;

fn prefix_hashes(prompt: &[u32]) -> Vec<(usize, u64)> {
    let mut out = Vec::new();
    let mut h = 0u64;
    for (i, t) in prompt.iter().enumerate() {
        h = hash_words(&[h, *t as u64]);
        if (i + 1) % PREFIX_BLOCK == 0 && i + 1 < prompt.len() {
            out.push((i + 1, h));
        }
    }
    out
}

pub async fn asample(app: &Arc<App>, ctx: &Ctx) -> Res {
    let v = ctx.json()?;
    let o = Obj::root(v)?;
    let num_samples = o.opt_i64("num_samples")?.unwrap_or(1);
    if !(1..=1024).contains(&num_samples) {
        return Err(bad_request(format!(
            "field `num_samples` must be between 1 and 1024, got {num_samples}"
        )));
    }
    let prompt_input = model_input_json(
        o.get("prompt")
            .ok_or_else(|| bad_request("field `prompt` is required"))?,
        "prompt",
    )?;
    if prompt_input.positions() == 0 {
        return Err(bad_request("field `prompt` has no tokens"));
    }
    let session_id = o.opt_str("sampling_session_id")?;
    let seq_id = o.opt_i64("seq_id")?;
    let (spec, weights, owner_session, clone) = match session_id {
        Some(sid) => {
            let (sess, spec, w) = {
                let st = app.store();
                let s = st.sampling.get(sid).ok_or_else(|| {
                    Reply::error(404, format!("sampling session {sid:?} not found"))
                })?;
                (s.session_id.clone(), s.spec, s.weights.clone())
            };
            check_session_open(app, ctx, &sess)?;
            let seq = seq_id.ok_or_else(|| {
                bad_request("field `seq_id` is required with `sampling_session_id`")
            })?;
            if seq < 0 {
                return Err(bad_request(format!(
                    "field `seq_id` must be >= 0, got {seq}"
                )));
            }
            (spec, w, Some(sess), (seq as u64) / 1_000_000_000)
        }
        None => {
            let (s, w) = weights_for(app, ctx, o.opt_str("model_path")?, o.opt_str("base_model")?)?;
            (s, w, None, 0)
        }
    };
    let prompt = prompt_input
        .tokens(spec)
        .map_err(|e| bad_request(format!("field `prompt`: {e}")))?;
    for t in &prompt {
        if *t as usize >= spec.vocab {
            return Err(bad_request(format!(
                "prompt token {t} is outside the vocabulary of {} (size {})",
                spec.name, spec.vocab
            )));
        }
    }
    let params = sampling_params(&o.obj("sampling_params")?, spec, prompt.len())?;
    let prompt_logprobs = o.bool_or("prompt_logprobs", false)?;
    let topk_prompt = o.opt_i64("topk_prompt_logprobs")?.unwrap_or(0);
    let topk_sample = o.opt_i64("topk_sample_logprobs")?.unwrap_or(0);
    let alt_k = o.opt_i64("prompt_alt_tokens_k")?.unwrap_or(0);
    for (name, val) in [
        ("topk_prompt_logprobs", topk_prompt),
        ("topk_sample_logprobs", topk_sample),
        ("prompt_alt_tokens_k", alt_k),
    ] {
        if !(0..=64).contains(&val) {
            return Err(bad_request(format!(
                "field `{name}` must be between 0 and 64, got {val}"
            )));
        }
    }
    let last_n = o.opt_i64("prompt_logprobs_last_n")?;
    let target = match o.get("target_prompt_logprobs") {
        Some(t) => Some(target_spec(t, prompt.len(), spec.vocab)?),
        None => None,
    };

    // Model-level checks are reported through the future, as user errors.
    let mut user_error: Option<String> = None;
    if prompt.len() + params.max_tokens > spec.max_context {
        user_error = Some(format!(
            "Prompt length plus max_tokens exceeds the model's context window: {} + {} > {}",
            prompt.len(),
            params.max_tokens,
            spec.max_context
        ));
    }
    if let Some(n) = last_n {
        if n < 1 || n as usize > prompt.len().saturating_sub(1) {
            user_error = Some(format!(
                "prompt_logprobs_last_n must be between 1 and len(prompt) - 1 = {}, got {n}",
                prompt.len() - 1
            ));
        } else if !prompt_logprobs {
            user_error = Some("prompt_logprobs_last_n requires prompt_logprobs".into());
        }
    }

    // Same (sampling session, seq_id) ⇒ same request.
    let dedupe_key = match (session_id, seq_id) {
        (Some(s), Some(q)) => Some((s.to_string(), q)),
        _ => None,
    };
    if let Some(k) = &dedupe_key {
        if let Some((rid, seqs)) = app.store().sample_dedupe.get(k).cloned() {
            app.stats().duplicates_deduped += 1;
            return Ok(Reply::ok(
                json!({"request_id": rid, "sample_sequence_ids": seqs}),
            ));
        }
    }
    let rid = app.uuid();
    let seq_ids: Vec<String> = (0..num_samples).map(|i| format!("{rid}:{i}")).collect();
    let cache_hits = {
        let mut st = app.store();
        if let Some(k) = &dedupe_key {
            st.sample_dedupe
                .insert(k.clone(), (rid.clone(), seq_ids.clone()));
        }
        let mut hits = 0;
        if let Some(sid) = session_id {
            if let Some(s) = st.sampling.get_mut(sid) {
                for (len, h) in prefix_hashes(&prompt) {
                    if s.prefixes.contains(&h) {
                        hits = len;
                    }
                    s.prefixes.insert(h);
                }
            }
        }
        hits as i32
    };
    let kind = FKind::Sample {
        session: session_id.unwrap_or("").to_string(),
        clone,
        seq_id: seq_id.unwrap_or(-1),
    };
    let fut = app.futures.create(rid.clone(), kind);
    app.stats().futures_created += 1;
    let fallback_seed = hash_words(&[
        app.seed,
        crate::util::hash_str(session_id.unwrap_or(&rid)),
        seq_id.unwrap_or(0) as u64,
    ]);
    let spec_run = Spec {
        prompt,
        num_samples: num_samples as usize,
        params,
        prompt_logprobs,
        topk_prompt: topk_prompt as usize,
        topk_sample: topk_sample as usize,
        target,
        alt_k: alt_k as usize,
        last_n: last_n.map(|n| n as usize),
        fallback_seed,
    };
    let delay = app.settings().future_delay_ms;
    let app2 = app.clone();
    let owner = ctx.caller().user_urn.clone();
    tokio::spawn(async move {
        tokio::time::sleep(std::time::Duration::from_millis(delay)).await;
        if !matches!(fut.lock().state, FState::Pending) {
            return; // expired or cancelled before it ran
        }
        if let Some(e) = user_error {
            app2.futures.resolve(
                &fut,
                FState::Failed {
                    message: e,
                    category: "user",
                },
            );
            app2.stats().futures_failed += 1;
            return;
        }
        let permit = app2.compute.acquire().await.ok();
        let prompt_len = spec_run.prompt.len();
        let out = tokio::task::spawn_blocking(move || {
            let vocab = match &spec_run.params.stop {
                Stop::Strings(_) => crate::vocab::vocab(spec.family, spec.vocab),
                _ => Arc::new(crate::vocab::Vocab::fallback(0)),
            };
            sample::run(&weights, &spec_run, &vocab)
        })
        .await;
        drop(permit);
        match out {
            Ok(out) => {
                let generated: usize = out.sequences.iter().map(|s| s.tokens.len()).sum();
                let n_seq = out.sequences.len() as u64;
                if app2.futures.resolve(
                    &fut,
                    FState::Done(Arc::new(Payload::Sample(Box::new(SamplePayload {
                        out,
                        cache_hits,
                    })))),
                ) {
                    let mut st = app2.stats();
                    st.samples_served += 1;
                    st.sequences_sampled += n_seq;
                    st.futures_completed += 1;
                }
                let now = now_unix_f64();
                let mut st = app2.store();
                for (kind, cached, amount) in [
                    (
                        "sampling_prefill",
                        false,
                        (prompt_len - cache_hits as usize) as u64,
                    ),
                    ("sampling_prefill", true, cache_hits as u64),
                    ("sampling_sample", false, generated as u64),
                ] {
                    if amount > 0 {
                        st.usage.push(Usage {
                            time: now,
                            owner: owner.clone(),
                            session_id: owner_session.clone(),
                            base_model: Some(spec.name.to_string()),
                            kind,
                            cached,
                            amount,
                        });
                    }
                }
            }
            Err(e) => {
                app2.futures.resolve(
                    &fut,
                    FState::Failed {
                        message: format!("sampler crashed: {e}"),
                        category: "server",
                    },
                );
            }
        }
    });
    Ok(Reply::ok(
        json!({"request_id": rid, "sample_sequence_ids": seq_ids}),
    ))
}
