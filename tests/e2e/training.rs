use tinker_core::call::CallOptions;
use tinker_core::service::{LoraOptions, ServiceClient};
use tinker_core::training::OptimParams;
use tinker_core::types::{AdamParams, Datum, LoraConfig, LossFnInputs, ModelInput, TensorData};

use crate::native::{run, Native, Sim};

fn sft(tokens: &[u32], prompt: usize) -> Datum {
    let n = tokens.len();
    let mut i = LossFnInputs::new();
    i.insert(
        "target_tokens",
        TensorData::from_i64(tokens[1..].iter().map(|&t| t as i64).collect()),
    );
    i.insert(
        "weights",
        TensorData::from_f32((1..n).map(|k| if k < prompt { 0.0 } else { 1.0 }).collect()),
    );
    Datum::new(ModelInput::from_ints(tokens[..n - 1].to_vec()), i)
}

fn lora(base: &str, seed: u64) -> LoraOptions {
    let mut l = LoraConfig::new(8);
    l.seed = Some(seed);
    LoraOptions {
        base_model: base.into(),
        lora: l,
        user_metadata: None,
        optimizer: None,
    }
}

#[test]
fn sft_ten_pipelined_steps_lowers_the_loss_and_keeps_seq_order() {
    let sim = Sim::start(&["--seed", "3"]);
    run(async {
        let svc = ServiceClient::new(Native::new(), sim.options()).unwrap();
        let tc = svc
            .create_lora_training_client(lora("Qwen/Qwen3-8B", 1), CallOptions::default())
            .unwrap()
            .await
            .unwrap();
        let data: Vec<Datum> = (0..8)
            .map(|i| sft(&[1000 + i, 2000, 3000, 4000, 5000, 6000], 2))
            .collect();
        let mut losses = vec![];
        for _ in 0..10 {
            let fb = tc
                .forward_backward(data.clone(), "cross_entropy", None, CallOptions::default())
                .unwrap();
            let opt = tc
                .optim_step(
                    OptimParams::Adam(AdamParams {
                        learning_rate: 0.05,
                        ..Default::default()
                    }),
                    CallOptions::default(),
                )
                .unwrap();
            let (out, o) = futures_util::future::join(fb, opt).await;
            o.unwrap();
            let out = out.unwrap();
            assert_eq!(out.loss_fn_outputs.len(), 8);
            assert_eq!(out.loss_fn_outputs[0]["logprobs"].values.len(), 5);
            losses.push(out.metrics["loss:sum"]);
        }
        assert!(losses[9] < losses[0] * 0.9, "loss should fall: {losses:?}");
        let model = sim.admin(&format!("models/{}", tc.model_id())).await;
        let applied = model["applied"].as_array().unwrap();
        let seqs: Vec<i64> = applied
            .iter()
            .map(|a| a["seq_id"].as_i64().unwrap())
            .collect();
        assert_eq!(
            seqs,
            (0..=20).collect::<Vec<_>>(),
            "create (0) then 20 requests in order: {model}"
        );
        svc.close(tinker_core::session::FinishStatus::Success, None)
            .await
            .unwrap();
    });
}

fn adam(lr: f64) -> OptimParams {
    OptimParams::Adam(AdamParams {
        learning_rate: lr,
        ..Default::default()
    })
}

#[test]
fn a_batch_over_1024_datums_is_chunked_and_combined() {
    let sim = Sim::start(&["--seed", "4"]);
    run(async {
        let svc = ServiceClient::new(Native::new(), sim.options()).unwrap();
        let tc = svc
            .create_lora_training_client(lora("Qwen/Qwen3-8B", 2), CallOptions::default())
            .unwrap()
            .await
            .unwrap();
        let data: Vec<Datum> = (0..1030u32)
            .map(|i| sft(&[10 + i % 50, 20, 30], 1))
            .collect();
        let out = tc
            .forward_backward(data.clone(), "cross_entropy", None, CallOptions::default())
            .unwrap()
            .await
            .unwrap();
        assert_eq!(out.loss_fn_outputs.len(), 1030);
        // cross_entropy is Σ −logprob·weight; the combined loss:sum must equal it over all chunks.
        let recomputed: f64 = out
            .loss_fn_outputs
            .iter()
            .zip(&data)
            .map(|(o, d)| {
                let lp = o["logprobs"].as_f32().unwrap();
                let w = d.loss_fn_inputs["weights"].as_f32().unwrap();
                lp.iter()
                    .zip(w)
                    .map(|(l, w)| -(*l as f64) * *w as f64)
                    .sum::<f64>()
            })
            .sum();
        assert!(
            (out.metrics["loss:sum"] - recomputed).abs() < 1e-3 * recomputed.abs().max(1.0),
            "{} vs {recomputed}",
            out.metrics["loss:sum"]
        );
        let applied = sim.admin(&format!("models/{}", tc.model_id())).await["applied"]
            .as_array()
            .unwrap()
            .len();
        assert_eq!(applied, 1 + 2, "create + two chunks (1024 + 6)");
    });
}

#[test]
fn custom_loss_runs_forward_then_backward_with_the_custom_gradient() {
    let sim = Sim::start(&["--seed", "5"]);
    run(async {
        let svc = ServiceClient::new(Native::new(), sim.options()).unwrap();
        let tc = svc
            .create_lora_training_client(lora("Qwen/Qwen3-8B", 3), CallOptions::default())
            .unwrap()
            .await
            .unwrap();
        let data: Vec<Datum> = (0..4).map(|i| sft(&[100 + i, 200, 300, 400], 1)).collect();
        // loss = −Σ logprobs (= cross_entropy with unit weights): same gradient, same update.
        let loss: tinker_core::training::CustomLossFn =
            std::rc::Rc::new(|_data, lps: Vec<TensorData>| {
                Box::pin(async move {
                    let loss: f64 = lps
                        .iter()
                        .flat_map(|t| t.as_f32().unwrap().iter())
                        .map(|&x| -(x as f64))
                        .sum();
                    let gradients = lps.iter().map(|t| vec![-1.0f32; t.values.len()]).collect();
                    Ok(tinker_core::training::CustomLossOutput {
                        loss,
                        gradients,
                        metrics: [("custom:sum".to_string(), 1.0)].into(),
                    })
                })
            });
        let fwd = tc
            .forward(data.clone(), "cross_entropy", None, CallOptions::default())
            .unwrap()
            .await
            .unwrap();
        let out = tc
            .forward_backward_custom(data.clone(), loss, CallOptions::default())
            .unwrap()
            .await
            .unwrap();
        let ce: f64 = fwd
            .loss_fn_outputs
            .iter()
            .flat_map(|o| o["logprobs"].as_f32().unwrap().iter())
            .map(|&x| -(x as f64))
            .sum();
        assert!(
            (out.metrics["loss:sum"] - ce).abs() < 1e-3,
            "custom loss {} vs forward {}",
            out.metrics["loss:sum"],
            ce
        );
        assert!(out.metrics.contains_key("surrogate_loss:sum") && out.metrics["custom:sum"] == 1.0);
        let applied = sim.admin(&format!("models/{}", tc.model_id())).await;
        let kinds: Vec<(i64, String)> = applied["applied"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| {
                (
                    a["seq_id"].as_i64().unwrap(),
                    a["kind"].as_str().unwrap_or("").to_string(),
                )
            })
            .collect();
        assert_eq!(
            kinds.len(),
            1 + 1 + 2,
            "create, forward, then the custom loss's forward and backward: {kinds:?}"
        );
        tc.optim_step(adam(0.05), CallOptions::default())
            .unwrap()
            .await
            .unwrap();
    });
}

#[test]
fn save_then_load_with_optimizer_continues_identically() {
    let sim = Sim::start(&["--seed", "6"]);
    run(async {
        let svc = ServiceClient::new(Native::new(), sim.options()).unwrap();
        let tc = svc
            .create_lora_training_client(lora("meta-llama/Llama-3.2-1B", 4), CallOptions::default())
            .unwrap()
            .await
            .unwrap();
        let data: Vec<Datum> = (0..4).map(|i| sft(&[50 + i, 60, 70, 80, 90], 2)).collect();
        for _ in 0..2 {
            tc.forward_backward(data.clone(), "cross_entropy", None, CallOptions::default())
                .unwrap()
                .await
                .unwrap();
            tc.optim_step(adam(0.02), CallOptions::default())
                .unwrap()
                .await
                .unwrap();
        }
        let saved = tc
            .save_state("mid", None, false, None, CallOptions::default())
            .unwrap()
            .await
            .unwrap();
        let path = saved["path"].as_str().unwrap().to_string();
        assert!(
            path.starts_with("tinker://") && path.ends_with("/weights/mid"),
            "{path}"
        );
        let from = tinker_core::service::FromStateOptions {
            path: path.clone(),
            with_optimizer: true,
            ..Default::default()
        };
        let restored = svc
            .create_training_client_from_state(from, CallOptions::default())
            .unwrap()
            .await
            .unwrap();
        assert_eq!(
            restored.model_id(),
            format!("{}:train:1", svc.session_state().unwrap().session_id)
        );
        // One more identical step on both: the results and the weights must match exactly.
        let mut losses = vec![];
        for c in [&tc, &restored] {
            let out = c
                .forward_backward(data.clone(), "cross_entropy", None, CallOptions::default())
                .unwrap()
                .await
                .unwrap();
            c.optim_step(adam(0.02), CallOptions::default())
                .unwrap()
                .await
                .unwrap();
            losses.push(out.metrics["loss:sum"]);
        }
        assert_eq!(losses[0], losses[1]);
        let a = sim.admin(&format!("models/{}", tc.model_id())).await["weights_digest"].clone();
        let b =
            sim.admin(&format!("models/{}", restored.model_id())).await["weights_digest"].clone();
        assert_eq!(a, b, "weights and optimizer state continue identically");
        // Without the optimizer state the continuation differs.
        let from = tinker_core::service::FromStateOptions {
            path,
            with_optimizer: false,
            ..Default::default()
        };
        let fresh = svc
            .create_training_client_from_state(from, CallOptions::default())
            .unwrap()
            .await
            .unwrap();
        fresh
            .forward_backward(data.clone(), "cross_entropy", None, CallOptions::default())
            .unwrap()
            .await
            .unwrap();
        fresh
            .optim_step(adam(0.02), CallOptions::default())
            .unwrap()
            .await
            .unwrap();
        assert_ne!(
            sim.admin(&format!("models/{}", fresh.model_id())).await["weights_digest"],
            a
        );
    });
}

/// Trains the same steps on a fresh model; returns its final weights digest.
async fn train_steps(svc: &ServiceClient, sim: &Sim, seed: u64) -> serde_json::Value {
    let tc = svc
        .create_lora_training_client(lora("Qwen/Qwen3-8B", seed), CallOptions::default())
        .unwrap()
        .await
        .unwrap();
    let data: Vec<Datum> = (0..6).map(|i| sft(&[300 + i, 301, 302, 303], 1)).collect();
    let mut futs = vec![];
    for _ in 0..5 {
        futs.push(
            tc.forward_backward(data.clone(), "cross_entropy", None, CallOptions::default())
                .unwrap(),
        );
        let o = tc.optim_step(adam(0.03), CallOptions::default()).unwrap();
        futs.push(Box::pin(async move { o.await.map(|_| unreachable_fbo()) }));
    }
    for r in futures_util::future::join_all(futs).await {
        r.unwrap();
    }
    let model = sim.admin(&format!("models/{}", tc.model_id())).await;
    let seqs: Vec<i64> = model["applied"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["seq_id"].as_i64().unwrap())
        .collect();
    assert_eq!(
        seqs,
        (0..=10).collect::<Vec<_>>(),
        "every step applied exactly once, in order"
    );
    model["weights_digest"].clone()
}

fn unreachable_fbo() -> tinker_core::proto::ForwardBackwardOutput {
    tinker_core::proto::ForwardBackwardOutput {
        loss_fn_output_type: String::new(),
        loss_fn_outputs: vec![],
        metrics: Default::default(),
    }
}

#[test]
fn a_faulted_run_ends_with_the_same_weights_as_a_clean_one() {
    let sim = Sim::start(&["--seed", "8", "--future-delay-ms", "5"]);
    run(async {
        let mut opts = sim.options();
        opts.max_retries = 10;
        let svc = ServiceClient::new(Native::new(), opts).unwrap();
        let clean = train_steps(&svc, &sim, 11).await;
        sim.configure(serde_json::json!({ "faults": "429:0.1,429ms:0.1:20,503:0.1,502:0.05,drop:0.05,lost:0.1,storm:0.2:3,408:0.05,malformed:0.05@retrieve_future" })).await;
        let faulted = train_steps(&svc, &sim, 11).await;
        sim.configure(serde_json::json!({ "faults": "" })).await;
        assert_eq!(clean, faulted);
        let stats = sim.admin("stats").await;
        let injected: u64 = stats["faults_injected"]
            .as_object()
            .map(|m| m.values().filter_map(|v| v.as_u64()).sum())
            .unwrap_or(0);
        assert!(injected > 5, "faults were really injected: {stats}");
    });
}
