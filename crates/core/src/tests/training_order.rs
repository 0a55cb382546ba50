use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use futures_executor::LocalPool;
use futures_util::task::LocalSpawnExt;

use super::scripted::*;
use crate::call::CallOptions;
use crate::error::Error;
use crate::proto::tests::fields;
use crate::sync::{CancelToken, Event};
use crate::training::{CustomLossOutput, OptimParams, TrainingClient};
use crate::types::{AdamParams, Datum, LossFnInputs, ModelInput, TensorData};

fn datum(n: u32) -> Datum {
    let mut i = LossFnInputs::new();
    i.insert(
        "target_tokens",
        TensorData::from_i64((1..=n as i64).collect()),
    );
    i.insert("weights", TensorData::from_f32(vec![1.0; n as usize]));
    Datum::new(ModelInput::from_ints((0..n).collect()), i)
}

/// A ForwardBackwardOutput with `n` datums of logprobs `[-1.0; len]` and `loss:sum`.
fn fbo(lens: &[usize], loss: f64) -> Vec<u8> {
    fn var(out: &mut Vec<u8>, mut v: u64) {
        while v >= 0x80 {
            out.push(v as u8 | 0x80);
            v >>= 7;
        }
        out.push(v as u8);
    }
    fn len(out: &mut Vec<u8>, field: u32, b: &[u8]) {
        var(out, u64::from(field << 3 | 2));
        var(out, b.len() as u64);
        out.extend_from_slice(b);
    }
    let data: Vec<u8> = lens
        .iter()
        .flat_map(|&n| std::iter::repeat_n((-1.0f32).to_le_bytes(), n).flatten())
        .collect();
    let mut offsets = vec![0i64];
    for &n in lens {
        offsets.push(offsets.last().unwrap() + 4 * n as i64);
    }
    let offs: Vec<u8> = offsets.iter().flat_map(|o| o.to_le_bytes()).collect();
    let mut bt = vec![];
    len(&mut bt, 1, &data);
    len(&mut bt, 2, &offs);
    bt.extend([3 << 3, 1]);
    let mut entry = vec![];
    len(&mut entry, 1, b"logprobs");
    len(&mut entry, 2, &bt);
    let mut rec = vec![];
    len(&mut rec, 2, &entry);
    rec.push(3 << 3);
    var(&mut rec, lens.len() as u64);
    let mut metric = vec![];
    len(&mut metric, 1, b"loss:sum");
    metric.push(2 << 3 | 1);
    metric.extend(loss.to_le_bytes());
    let mut msg = vec![];
    len(&mut msg, 1, b"ArrayRecord");
    len(&mut msg, 2, &rec);
    len(&mut msg, 3, &metric);
    msg
}

#[derive(Default)]
struct Log {
    /// (path, seq_id, forward_only, datums) of every training submit, in order.
    submits: Vec<(String, i64, bool, usize)>,
    /// request id → datum lengths (for forward_backward results).
    results: HashMap<String, Vec<usize>>,
    /// forward_backward bodies by seq id.
    bodies: HashMap<i64, Vec<u8>>,
}

type Reply = Result<crate::platform::HttpResponse, crate::platform::TransportError>;

fn training_server(
    config: &'static str,
) -> (
    impl Fn(&crate::platform::HttpRequest, usize) -> Reply,
    Rc<RefCell<Log>>,
) {
    let log = Rc::new(RefCell::new(Log::default()));
    let l = log.clone();
    let handler = server(config, move |r, _| {
        let path = r.url.split("/api/v1/").nth(1).unwrap_or("").to_string();
        let mut log = l.borrow_mut();
        match path.as_str() {
            "forward_backward" => {
                let body = r.body.as_deref().unwrap().clone();
                let f = fields(&body);
                let seq = f.iter().find(|x| x.0 == 2).map_or(0, |x| x.2[0] as i64);
                let fwd_only = f.iter().any(|x| x.0 == 6);
                let lens: Vec<usize> = f
                    .iter()
                    .filter(|x| x.0 == 3)
                    .map(|d| {
                        let chunk = fields(&d.2)[0].2.clone();
                        fields(&fields(&chunk)[0].2)[0].2.len() / 4
                    })
                    .collect();
                log.submits.push((path, seq, fwd_only, lens.len()));
                let id = format!("fb-{seq}");
                log.results.insert(id.clone(), lens);
                log.bodies.insert(seq, body);
                json(
                    200,
                    &format!(r#"{{"request_id":"{id}","model_id":"sess-1:train:0"}}"#),
                )
            }
            "optim_step" | "save_weights" => {
                let b = body_json(r);
                let seq = b["seq_id"].as_i64().unwrap();
                log.submits.push((path.clone(), seq, false, 0));
                json(200, &format!(r#"{{"request_id":"{path}-{seq}"}}"#))
            }
            "retrieve_future" => {
                let id = body_json(r)["request_id"].as_str().unwrap().to_string();
                match log.results.get(&id) {
                    Some(lens) => proto(fbo(lens, 2.0 * lens.len() as f64)),
                    None => json(200, r#"{"metrics":{}}"#),
                }
            }
            other => panic!("unexpected {other}"),
        }
    });
    (handler, log)
}

fn client(pool: &mut LocalPool, s: &Rc<Scripted>) -> TrainingClient {
    let h = connect(pool, s, true);
    pool.run_until(TrainingClient::attach(h, "sess-1:train:0".into(), 1, None))
        .unwrap()
}

#[test]
fn chunks_go_out_rest_first_then_chunk_one_and_results_combine() {
    let mut pool = LocalPool::new();
    let (handler, log) = training_server(r#"{"fwdbwd_max_chunk_len":2}"#);
    let s = Scripted::new(&pool, handler);
    let tc = client(&mut pool, &s);
    assert_eq!(
        tc.info().tokenizer_id.as_deref(),
        Some("Qwen/Qwen3-8B"),
        "variant suffix cut at ':'"
    );
    // In the answer getInfo() returns too (Python `resources/models.py:80-85` replaces
    // `model_data.tokenizer_id` in the response).
    assert_eq!(
        tc.info().raw["model_data"]["tokenizer_id"],
        crate::json!("Qwen/Qwen3-8B")
    );
    let fb = tc
        .forward_backward(
            (0..5).map(|_| datum(3)).collect(),
            "cross_entropy",
            None,
            CallOptions::default(),
        )
        .unwrap();
    let opt = tc
        .optim_step(
            OptimParams::Adam(AdamParams::default()),
            CallOptions::default(),
        )
        .unwrap();
    let (out, _) = pool.run_until(futures_util::future::join(fb, opt));
    let out = out.unwrap();
    let seqs: Vec<(String, i64, usize)> = log
        .borrow()
        .submits
        .iter()
        .map(|s| (s.0.clone(), s.1, s.3))
        .collect();
    assert_eq!(
        seqs,
        [
            ("forward_backward".into(), 2, 2),
            ("forward_backward".into(), 3, 1),
            ("forward_backward".into(), 1, 2),
            ("optim_step".into(), 4, 0)
        ]
    );
    assert_eq!(out.loss_fn_outputs.len(), 5);
    assert_eq!(out.metrics["loss:sum"], 10.0, "sums across chunks");
    assert_eq!(tc.next_seq_id(), 5);
}

#[test]
fn serial_chunks_when_the_server_disables_parallel_submission() {
    let mut pool = LocalPool::new();
    let (handler, log) =
        training_server(r#"{"fwdbwd_max_chunk_len":2,"parallel_fwdbwd_chunks":false}"#);
    let s = Scripted::new(&pool, handler);
    let tc = client(&mut pool, &s);
    pool.run_until(
        tc.forward(
            (0..5).map(|_| datum(2)).collect(),
            "cross_entropy",
            None,
            CallOptions::default(),
        )
        .unwrap(),
    )
    .unwrap();
    let seqs: Vec<i64> = log.borrow().submits.iter().map(|s| s.1).collect();
    assert_eq!(seqs, [1, 2, 3]);
    assert!(
        log.borrow().submits.iter().all(|s| s.2),
        "forward() sets forward_only"
    );
}

#[test]
fn an_abort_while_waiting_for_the_turn_leaves_no_gap() {
    let mut pool = LocalPool::new();
    let (handler, log) = training_server("{}");
    let s = Scripted::new(&pool, handler);
    let tc = client(&mut pool, &s);
    let gate = Event::new();
    s.gates
        .borrow_mut()
        .push(("forward_backward".into(), gate.clone()));
    let cancel = CancelToken::new();
    let results = Rc::new(RefCell::new(HashMap::new()));
    let a = tc
        .forward_backward(
            vec![datum(2)],
            "cross_entropy",
            None,
            CallOptions::default(),
        )
        .unwrap();
    let b = tc
        .optim_step(
            OptimParams::Adam(AdamParams::default()),
            CallOptions {
                cancel: Some(cancel.clone()),
                timeout: None,
                ..Default::default()
            },
        )
        .unwrap();
    let c = tc
        .optim_step(
            OptimParams::Adam(AdamParams::default()),
            CallOptions::default(),
        )
        .unwrap();
    for (name, f) in [
        (
            "a",
            Box::pin(async { a.await.map(|_| ()) })
                as futures_util::future::LocalBoxFuture<'static, _>,
        ),
        ("b", Box::pin(async { b.await.map(|_| ()) })),
        ("c", Box::pin(async { c.await.map(|_| ()) })),
    ] {
        let r = results.clone();
        pool.spawner()
            .spawn_local(async move {
                let out = f.await;
                r.borrow_mut().insert(name, out);
            })
            .unwrap();
    }
    pool.run_until_stalled();
    assert!(
        results.borrow().is_empty(),
        "a is stuck in its submission; b and c wait"
    );
    cancel.cancel();
    pool.run_until_stalled();
    assert!(matches!(
        results.borrow().get("b"),
        Some(Err(Error::Aborted { .. }))
    ));
    gate.set();
    pool.run_until_stalled();
    assert!(results.borrow()["a"].is_ok() && results.borrow()["c"].is_ok());
    let seqs: Vec<(String, i64)> = log
        .borrow()
        .submits
        .iter()
        .map(|s| (s.0.clone(), s.1))
        .collect();
    assert_eq!(
        seqs,
        [("forward_backward".into(), 1), ("optim_step".into(), 2)],
        "c took seq 2: no gap for the aborted call"
    );
}

#[test]
fn an_abort_during_submission_waits_for_it_then_stops_polling() {
    let mut pool = LocalPool::new();
    let (handler, log) = training_server("{}");
    let s = Scripted::new(&pool, handler);
    let tc = client(&mut pool, &s);
    let gate = Event::new();
    s.gates
        .borrow_mut()
        .push(("optim_step".into(), gate.clone()));
    let cancel = CancelToken::new();
    let out = Rc::new(RefCell::new(None));
    let f = tc
        .optim_step(
            OptimParams::Adam(AdamParams::default()),
            CallOptions {
                cancel: Some(cancel.clone()),
                timeout: None,
                ..Default::default()
            },
        )
        .unwrap();
    let o = out.clone();
    pool.spawner()
        .spawn_local(async move { *o.borrow_mut() = Some(f.await) })
        .unwrap();
    pool.run_until_stalled();
    cancel.cancel();
    pool.run_until_stalled();
    assert!(
        out.borrow().is_none(),
        "the submission is not cut off mid-request"
    );
    gate.set();
    pool.run_until_stalled();
    assert!(matches!(
        out.borrow().as_ref(),
        Some(Err(Error::Aborted { .. }))
    ));
    assert_eq!(
        log.borrow().submits.len(),
        1,
        "the step was submitted exactly once"
    );
    let next = tc
        .optim_step(
            OptimParams::Adam(AdamParams::default()),
            CallOptions::default(),
        )
        .unwrap();
    pool.run_until(next).unwrap();
    assert_eq!(log.borrow().submits[1].1, 2);
}

#[test]
fn bad_input_is_rejected_before_anything_is_sent() {
    let mut pool = LocalPool::new();
    let (handler, log) = training_server("{}");
    let s = Scripted::new(&pool, handler);
    let tc = client(&mut pool, &s);
    let n = s.requests.borrow().len();
    let e = tc
        .forward_backward(vec![], "cross_entropy", None, CallOptions::default())
        .err()
        .unwrap();
    assert!(e.to_string().starts_with("data:"), "{e}");
    let e = tc
        .forward_backward(vec![datum(2)], "nope", None, CallOptions::default())
        .err()
        .unwrap();
    assert!(e.to_string().contains("unknown loss function"), "{e}");
    let mut bad = datum(3);
    bad.loss_fn_inputs
        .insert("weights", TensorData::from_f32(vec![1.0; 2]));
    let e = tc
        .forward_backward(
            vec![datum(2), bad],
            "cross_entropy",
            None,
            CallOptions::default(),
        )
        .err()
        .unwrap();
    assert!(e.to_string().starts_with("data[1].loss_fn_inputs."), "{e}");
    let e = tc
        .optim_step(
            OptimParams::Adam(AdamParams {
                learning_rate: f64::NAN,
                ..Default::default()
            }),
            CallOptions::default(),
        )
        .err()
        .unwrap();
    assert!(
        e.to_string().starts_with("adam_params.learning_rate"),
        "{e}"
    );
    assert_eq!(s.requests.borrow().len(), n);
    assert!(log.borrow().submits.is_empty());
    assert_eq!(tc.next_seq_id(), 1, "no seq id was consumed");
}

#[test]
fn custom_loss_reserves_both_passes_and_sends_negated_gradients() {
    let mut pool = LocalPool::new();
    let (handler, log) = training_server(r#"{"fwdbwd_max_chunk_len":2}"#);
    let s = Scripted::new(&pool, handler);
    let tc = client(&mut pool, &s);
    let loss: crate::training::CustomLossFn = Rc::new(|data: Vec<Datum>, lps: Vec<TensorData>| {
        Box::pin(async move {
            assert_eq!(data.len(), 3);
            let grads = lps.iter().map(|l| vec![0.5f32; l.values.len()]).collect();
            Ok(CustomLossOutput {
                loss: 7.0,
                gradients: grads,
                metrics: [("custom:mean".to_string(), 1.5)].into(),
            })
        })
    });
    let fut = tc
        .forward_backward_custom(
            vec![datum(2), datum(2), datum(2)],
            loss,
            CallOptions::default(),
        )
        .unwrap();
    let opt = tc
        .optim_step(
            OptimParams::Adam(AdamParams::default()),
            CallOptions::default(),
        )
        .unwrap();
    let (out, o) = pool.run_until(futures_util::future::join(fut, opt));
    let out = out.unwrap();
    o.unwrap();
    let seqs: Vec<(i64, bool)> = log.borrow().submits.iter().map(|s| (s.1, s.2)).collect();
    assert_eq!(
        seqs,
        [(2, true), (1, true), (4, false), (3, false), (5, false)],
        "forward 1-2, backward 3-4, then the optimizer step"
    );
    assert_eq!(out.metrics["loss:sum"], 7.0);
    assert_eq!(out.metrics["surrogate_loss:sum"], 6.0);
    assert_eq!(out.metrics["custom:mean"], 1.5);
    // The backward pass carries weights = -gradient.
    let body = log.borrow().bodies[&3].clone();
    let datum0 = fields(&fields(&body).into_iter().find(|f| f.0 == 3).unwrap().2);
    let weights_entry = datum0
        .iter()
        .filter(|f| f.0 == 2)
        .map(|f| fields(&f.2))
        .find(|e| e[0].2 == b"weights")
        .unwrap();
    let dense = &fields(&weights_entry[1].2)[0].2;
    assert_eq!(f32::from_le_bytes(dense[..4].try_into().unwrap()), -0.5);
}

#[test]
fn a_failing_custom_loss_poisons_the_client() {
    let mut pool = LocalPool::new();
    let (handler, _log) = training_server("{}");
    let s = Scripted::new(&pool, handler);
    let tc = client(&mut pool, &s);
    let loss: crate::training::CustomLossFn = Rc::new(|_, _| {
        Box::pin(async {
            Err(Error::Input(crate::types::InputError::type_error(
                "loss", "boom",
            )))
        })
    });
    let fut = tc
        .forward_backward_custom(vec![datum(2)], loss, CallOptions::default())
        .unwrap();
    let queued = tc
        .optim_step(
            OptimParams::Adam(AdamParams::default()),
            CallOptions::default(),
        )
        .unwrap();
    let (a, b) = pool.run_until(futures_util::future::join(fut, queued));
    assert!(a.is_err());
    assert!(matches!(b, Err(Error::Closed { message }) if message.contains("poisoned")));
    assert!(tc
        .optim_step(
            OptimParams::Adam(AdamParams::default()),
            CallOptions::default()
        )
        .is_err());
}

#[test]
fn a_failed_custom_backward_poisons_the_client_as_in_python() {
    let mut pool = LocalPool::new();
    let (inner, log) = training_server("{}");
    // The backward pass (seq 2, after the forward at seq 1) fails on the server.
    let handler = move |r: &crate::platform::HttpRequest, n: usize| {
        if r.url.ends_with("/retrieve_future") && body_json(r)["request_id"] == "fb-2" {
            return json(200, r#"{"error":"backward failed","category":"server"}"#);
        }
        inner(r, n)
    };
    let s = Scripted::new(&pool, handler);
    let tc = client(&mut pool, &s);
    let loss: crate::training::CustomLossFn = Rc::new(|_, lps: Vec<TensorData>| {
        Box::pin(async move {
            Ok(CustomLossOutput {
                loss: 1.0,
                gradients: lps.iter().map(|l| vec![0.5f32; l.values.len()]).collect(),
                metrics: Default::default(),
            })
        })
    });
    let r = pool.run_until(
        tc.forward_backward_custom(vec![datum(2)], loss, CallOptions::default())
            .unwrap(),
    );
    assert!(matches!(r, Err(Error::RequestFailed { .. })), "{r:?}");
    let later = tc.optim_step(
        OptimParams::Adam(AdamParams::default()),
        CallOptions::default(),
    );
    assert!(
        matches!(&later, Err(Error::Closed { message }) if message.contains("poisoned")),
        "{:?}",
        later.as_ref().err()
    );
    assert_eq!(log.borrow().submits.len(), 2, "forward and backward only");
}

#[test]
fn each_attempt_of_save_weights_and_get_sampling_client_takes_a_new_sampling_number() {
    let mut pool = LocalPool::new();
    let tries = std::cell::Cell::new(0);
    let s = Scripted::new(
        &pool,
        server("{}", move |r, _| {
            let path = r.url.split("/api/v1/").nth(1).unwrap_or("");
            match path {
                "save_weights_for_sampler" => {
                    tries.set(tries.get() + 1);
                    if tries.get() == 1 {
                        json(503, r#"{"detail":"busy"}"#)
                    } else {
                        json(200, r#"{"request_id":"sw-1"}"#)
                    }
                }
                "retrieve_future" => json(
                    200,
                    r#"{"path":"tinker://sess-1:train:0/sampler_weights/s","sampling_session_id":"samp-9"}"#,
                ),
                other => panic!("unexpected {other}"),
            }
        }),
    );
    let h = connect(&mut pool, &s, true);
    let tc = pool
        .run_until(TrainingClient::attach(h, "sess-1:train:0".into(), 1, None))
        .unwrap();
    let sc = pool
        .run_until(
            tc.save_weights_and_get_sampling_client(
                "snapshot",
                crate::sampling::SamplingOptions::default(),
                CallOptions::default(),
            )
            .unwrap(),
        )
        .unwrap();
    assert_eq!(sc.sampling_session_id(), "samp-9");
    let sent: Vec<(i64, i64)> = s
        .requests
        .borrow()
        .iter()
        .filter(|r| r.url.ends_with("/save_weights_for_sampler"))
        .map(|r| {
            let b = body_json(r);
            (
                b["seq_id"].as_i64().unwrap(),
                b["sampling_session_seq_id"].as_i64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        sent,
        [(1, 0), (1, 1)],
        "same seq id, a new sampling number per attempt"
    );
}

#[test]
fn a_nan_custom_loss_is_reported_not_refused() {
    let mut pool = LocalPool::new();
    let (handler, log) = training_server("{}");
    let s = Scripted::new(&pool, handler);
    let tc = client(&mut pool, &s);
    let loss: crate::training::CustomLossFn = Rc::new(|_, lps: Vec<TensorData>| {
        Box::pin(async move {
            Ok(CustomLossOutput {
                loss: f64::NAN,
                gradients: lps.iter().map(|l| vec![0.5f32; l.values.len()]).collect(),
                metrics: Default::default(),
            })
        })
    });
    let out = pool
        .run_until(
            tc.forward_backward_custom(vec![datum(2)], loss, CallOptions::default())
                .unwrap(),
        )
        .unwrap();
    assert!(out.metrics["loss:sum"].is_nan());
    pool.run_until(
        tc.optim_step(
            OptimParams::Adam(AdamParams::default()),
            CallOptions::default(),
        )
        .unwrap(),
    )
    .expect("not poisoned");
    assert_eq!(log.borrow().submits.len(), 3);
}

#[test]
fn get_info_defaults_a_missing_optimizer_config_to_adamw_as_python() {
    let mut pool = LocalPool::new();
    let (handler, _log) = training_server("{}");
    let s = Scripted::new(&pool, handler);
    let tc = client(&mut pool, &s);
    assert_eq!(
        tc.info().raw["optimizer_config"],
        crate::json!({ "type": "adamw" })
    );
}

/// The seq id of a `forward_backward` submit (protobuf field 2).
fn fb_seq(r: &crate::platform::HttpRequest) -> i64 {
    let f = fields(r.body.as_deref().unwrap());
    f.iter().find(|x| x.0 == 2).map_or(0, |x| x.2[0] as i64)
}

/// Python `_run_fwd_bwd` (`training_client.py:446-456`), parallel mode: chunks 2..n go
/// out under one `asyncio.gather`, which raises the first failure, so chunk 1 is never
/// submitted after one of them failed.
#[test]
fn parallel_chunks_never_submit_chunk_one_after_a_later_chunk_failed() {
    let mut pool = LocalPool::new();
    let (inner, log) = training_server(r#"{"fwdbwd_max_chunk_len":2}"#);
    let s = Scripted::new(&pool, move |r, n| {
        if r.url.ends_with("/forward_backward") && fb_seq(r) == 3 {
            return json(400, r#"{"detail":"chunk refused"}"#);
        }
        inner(r, n)
    });
    let tc = client(&mut pool, &s);
    let r = pool.run_until(
        tc.forward_backward(
            (0..5).map(|_| datum(3)).collect(),
            "cross_entropy",
            None,
            CallOptions::default(),
        )
        .unwrap(),
    );
    assert_eq!(r.unwrap_err().status(), Some(400));
    let seqs: Vec<i64> = log.borrow().submits.iter().map(|s| s.1).collect();
    assert_eq!(seqs, [2], "chunk 3 refused, chunk 1 never sent");
    assert_eq!(
        s.paths()
            .iter()
            .filter(|p| *p == "forward_backward")
            .count(),
        2
    );
}

/// Python `_run_fwd_bwd` (`training_client.py:457-459`), serial mode: every chunk is
/// gathered, each waiting its turn, so a failed chunk does not stop the later ones; the
/// call fails with the first failure.
#[test]
fn serial_chunks_go_out_after_an_earlier_chunk_failed() {
    let mut pool = LocalPool::new();
    let (inner, log) =
        training_server(r#"{"fwdbwd_max_chunk_len":2,"parallel_fwdbwd_chunks":false}"#);
    let s = Scripted::new(&pool, move |r, n| {
        if r.url.ends_with("/forward_backward") && fb_seq(r) == 1 {
            return json(400, r#"{"detail":"chunk refused"}"#);
        }
        inner(r, n)
    });
    let tc = client(&mut pool, &s);
    let r = pool.run_until(
        tc.forward_backward(
            (0..5).map(|_| datum(3)).collect(),
            "cross_entropy",
            None,
            CallOptions::default(),
        )
        .unwrap(),
    );
    assert_eq!(r.unwrap_err().status(), Some(400));
    let seqs: Vec<i64> = log.borrow().submits.iter().map(|s| s.1).collect();
    assert_eq!(
        seqs,
        [2, 3],
        "chunk 1 refused, chunks 2 and 3 still sent in turn"
    );
}

/// Python `_APIFuture` (`api_future_impl.py:233-235, 455-458`): the first poll of each
/// chunk carries `X-Tinker-Create-Promise-Roundtrip-Time`, the seconds from the start of
/// the call to that chunk's submit answer (`str(float)`), measured, not 0.0.
#[test]
fn forward_backward_polls_carry_the_measured_submit_round_trip() {
    let mut pool = LocalPool::new();
    let (inner, _log) = training_server(r#"{"fwdbwd_max_chunk_len":2}"#);
    let first = Rc::new(std::cell::Cell::new(true));
    let s = Scripted::new(&pool, move |r, n| {
        // The first submit is answered 503: the HTTP layer waits (virtual time) and
        // retries, so the submit takes that long.
        if r.url.ends_with("/forward_backward") && first.replace(false) {
            return json(503, r#"{"detail":"busy"}"#);
        }
        inner(r, n)
    });
    let tc = client(&mut pool, &s);
    pool.run_until(
        tc.forward_backward(
            (0..5).map(|_| datum(3)).collect(),
            "cross_entropy",
            None,
            CallOptions::default(),
        )
        .unwrap(),
    )
    .unwrap();
    let waited = s.sleeps.borrow()[0].as_secs_f64();
    assert!(waited > 0.0);
    let sent: Vec<String> = s
        .requests
        .borrow()
        .iter()
        .filter(|r| r.url.ends_with("/retrieve_future"))
        .filter(|r| r.headers.get("X-Tinker-Request-Iteration") == Some("0"))
        .map(|r| {
            r.headers
                .get("X-Tinker-Create-Promise-Roundtrip-Time")
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(sent.len(), 3);
    for v in sent {
        let secs: f64 = v.parse().unwrap();
        // The scripted clock counts ms since 1970 in an f64: ~2e-7 s of resolution.
        assert!((secs - waited).abs() < 1e-6, "{v} vs {waited}");
    }
}

/// The telemetry event kinds sent so far (`GENERIC_EVENT`s by their name).
fn telemetry_kinds(s: &Scripted) -> Vec<String> {
    s.requests
        .borrow()
        .iter()
        .filter(|r| r.url.ends_with("/telemetry"))
        .flat_map(|r| {
            let events = body_json(r)["events"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            events.into_iter().map(|e| {
                let kind = e["event"].as_str().unwrap_or_default();
                let name = e["event_name"].as_str();
                name.filter(|_| kind == "GENERIC_EVENT")
                    .unwrap_or(kind)
                    .to_string()
            })
        })
        .collect()
}

/// A custom loss whose backward pass fails (`fb-2`) or whose loss function fails, on a
/// client with telemetry on: the failed pass is reported as Python's
/// `_run_fwd_bwd` (`@capture_exceptions(fatal=True)`) reports it, the loss function's
/// failure is not (Python's `_compute_custom_loss` runs outside it).
fn custom_loss_telemetry(fail_backward: bool) -> Vec<String> {
    let mut pool = LocalPool::new();
    let (inner, _log) = training_server("{}");
    let handler = move |r: &crate::platform::HttpRequest, n: usize| {
        if r.url.ends_with("/telemetry") {
            return json(200, "{}");
        }
        if fail_backward
            && r.url.ends_with("/retrieve_future")
            && body_json(r)["request_id"] == "fb-2"
        {
            return json(200, r#"{"error":"backward failed","category":"server"}"#);
        }
        inner(r, n)
    };
    let s = Scripted::new(&pool, handler);
    let mut o = opts();
    o.telemetry = true;
    let h = pool
        .run_until(crate::session::Holder::connect(s.clone(), Rc::new(o), true))
        .expect("connect");
    let tc = pool
        .run_until(TrainingClient::attach(h, "sess-1:train:0".into(), 1, None))
        .unwrap();
    let loss: crate::training::CustomLossFn = Rc::new(move |_, lps: Vec<TensorData>| {
        Box::pin(async move {
            if !fail_backward {
                let e = crate::types::InputError::type_error("loss", "boom");
                return Err(Error::Input(e));
            }
            Ok(CustomLossOutput {
                loss: 1.0,
                gradients: lps.iter().map(|l| vec![0.5f32; l.values.len()]).collect(),
                metrics: Default::default(),
            })
        })
    });
    let call = tc.forward_backward_custom(vec![datum(2)], loss, CallOptions::default());
    assert!(pool.run_until(call.unwrap()).is_err());
    pool.run_until_stalled(); // the report is sent in the background
    telemetry_kinds(&s)
}

#[test]
fn a_failed_custom_loss_pass_is_reported_and_a_failed_loss_function_is_not() {
    let kinds = custom_loss_telemetry(true);
    assert_eq!(
        kinds[kinds.len().saturating_sub(2)..],
        ["UNHANDLED_EXCEPTION".to_string(), "SESSION_END".to_string()],
        "{kinds:?}"
    );
    let kinds = custom_loss_telemetry(false);
    assert!(
        !kinds
            .iter()
            .any(|k| k == "SESSION_END" || k == "UNHANDLED_EXCEPTION"),
        "{kinds:?}"
    );
}
