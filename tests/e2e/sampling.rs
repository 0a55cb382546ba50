use std::rc::Rc;

use tinker_core::call::CallOptions;
use tinker_core::proto::StopReason;
use tinker_core::sampling::{SampleRequest, SamplingClient, SamplingOptions};
use tinker_core::service::{LoraOptions, ServiceClient};
use tinker_core::training::{OptimParams, TrainingClient};
use tinker_core::types::{
    AdamParams, Datum, LoraConfig, LossFnInputs, ModelInput, SamplingParams, StopCondition,
    TensorData,
};

use crate::native::{run, Native, Sim};

const A: u32 = 4242;
const B: u32 = 777;

fn pair_datum() -> Datum {
    let mut i = LossFnInputs::new();
    i.insert("target_tokens", TensorData::from_i64(vec![B as i64]));
    i.insert("weights", TensorData::from_f32(vec![1.0]));
    Datum::new(ModelInput::from_ints(vec![A]), i)
}

async fn trained(svc: &ServiceClient) -> TrainingClient {
    let mut l = LoraConfig::new(8);
    l.seed = Some(1);
    svc.create_lora_training_client(
        LoraOptions {
            base_model: "Qwen/Qwen3-8B".into(),
            lora: l,
            user_metadata: None,
            optimizer: None,
        },
        CallOptions::default(),
    )
    .unwrap()
    .await
    .unwrap()
}

async fn frequency_of_b(s: &SamplingClient) -> f64 {
    let params = SamplingParams {
        max_tokens: Some(1),
        seed: Some(1),
        ..Default::default()
    };
    let r = s
        .sample(
            SampleRequest::new(ModelInput::from_ints(vec![A]), 64, params),
            CallOptions::default(),
        )
        .unwrap()
        .await
        .unwrap();
    r.sequences
        .iter()
        .filter(|q| q.tokens.first() == Some(&(B as i32)))
        .count() as f64
        / 64.0
}

#[test]
fn training_a_pattern_makes_sampling_produce_it() {
    let sim = Sim::start(&["--seed", "21"]);
    run(async {
        let svc = ServiceClient::new(Native::new(), sim.options()).unwrap();
        let tc = trained(&svc).await;
        let before = frequency_of_b(
            &tc.save_weights_and_get_sampling_client(
                "snapshot",
                SamplingOptions::default(),
                CallOptions::default(),
            )
            .unwrap()
            .await
            .unwrap(),
        )
        .await;
        let data = vec![pair_datum(); 8];
        for _ in 0..15 {
            let fb = tc
                .forward_backward(data.clone(), "cross_entropy", None, CallOptions::default())
                .unwrap();
            let o = tc
                .optim_step(
                    OptimParams::Adam(AdamParams {
                        learning_rate: 0.1,
                        ..Default::default()
                    }),
                    CallOptions::default(),
                )
                .unwrap();
            let (a, b) = futures_util::future::join(fb, o).await;
            a.unwrap();
            b.unwrap();
        }
        let after_client = tc
            .save_weights_and_get_sampling_client(
                "snapshot",
                SamplingOptions::default(),
                CallOptions::default(),
            )
            .unwrap()
            .await
            .unwrap();
        let after = frequency_of_b(&after_client).await;
        assert!(
            after > 0.5 && after > before + 0.3,
            "frequency of the trained continuation: before {before}, after {after}"
        );

        // compute_logprobs on the saved weights equals forward logprobs of the trainer.
        let seq = vec![A, B, 12, 13, 14];
        let lp = after_client
            .compute_logprobs(
                ModelInput::from_ints(seq.clone()),
                None,
                CallOptions::default(),
            )
            .unwrap()
            .await
            .unwrap();
        assert_eq!(lp.len(), seq.len());
        assert!(lp[0].is_none());
        let mut i = LossFnInputs::new();
        i.insert(
            "target_tokens",
            TensorData::from_i64(seq[1..].iter().map(|&t| t as i64).collect()),
        );
        let fwd = tc
            .forward(
                vec![Datum::new(ModelInput::from_ints(seq[..4].to_vec()), i)],
                "cross_entropy",
                None,
                CallOptions::default(),
            )
            .unwrap()
            .await
            .unwrap();
        let f = fwd.loss_fn_outputs[0]["logprobs"]
            .as_f32()
            .unwrap()
            .to_vec();
        for k in 0..4 {
            assert!(
                (lp[k + 1].unwrap() - f[k]).abs() < 1e-4,
                "position {}: {:?} vs {}",
                k + 1,
                lp[k + 1],
                f[k]
            );
        }
    });
}

#[test]
fn seeds_stops_and_topk_logprobs() {
    let sim = Sim::start(&["--seed", "22"]);
    run(async {
        let svc = ServiceClient::new(Native::new(), sim.options()).unwrap();
        let s = svc
            .create_sampling_client(
                None,
                Some("Qwen/Qwen3-8B".into()),
                SamplingOptions::default(),
                CallOptions::default(),
            )
            .unwrap()
            .await
            .unwrap();
        assert_eq!(s.base_model(), "Qwen/Qwen3-8B");
        let sample = |params: SamplingParams, n: u32| {
            let r = s
                .sample(
                    SampleRequest::new(ModelInput::from_ints(vec![1, 2, 3]), n, params),
                    CallOptions::default(),
                )
                .unwrap();
            async move { r.await.unwrap() }
        };
        // `stop: []` disables EOS too, so every sample runs to max_tokens.
        let p = |seed| SamplingParams {
            max_tokens: Some(12),
            seed: Some(seed),
            stop: Some(StopCondition::Tokens(vec![])),
            ..Default::default()
        };
        let (a, b, c) = (
            sample(p(5), 3).await,
            sample(p(5), 3).await,
            sample(p(6), 3).await,
        );
        let toks = |r: &tinker_core::proto::SampleResponse| {
            r.sequences
                .iter()
                .map(|q| q.tokens.clone())
                .collect::<Vec<_>>()
        };
        assert_eq!(toks(&a), toks(&b), "same seed, same samples");
        assert_ne!(toks(&a), toks(&c), "another seed, other samples");
        assert!(a
            .sequences
            .iter()
            .all(|q| q.tokens.len() == 12 && q.stop_reason == StopReason::Length));
        assert_ne!(
            a.sequences[0].sequence_id, b.sequences[0].sequence_id,
            "sequence ids are unique per submission"
        );
        // Stop on a token id that the unconstrained run produced.
        let target = a.sequences[0].tokens[3] as u32;
        let stopped = sample(
            SamplingParams {
                stop: Some(StopCondition::Tokens(vec![target])),
                ..p(5)
            },
            3,
        )
        .await;
        let first = &stopped.sequences[0];
        assert_eq!(first.stop_reason, StopReason::Stop);
        assert_eq!(
            first.tokens.len(),
            a.sequences[0]
                .tokens
                .iter()
                .position(|&t| t as u32 == target)
                .unwrap()
                + 1,
            "stops at (and includes) the stop token"
        );
        // Prompt logprobs and their top-k.
        let mut req = SampleRequest::new(
            ModelInput::from_ints(vec![10, 20, 30, 40]),
            1,
            SamplingParams {
                max_tokens: Some(1),
                ..Default::default()
            },
        );
        req.include_prompt_logprobs = true;
        req.topk_prompt_logprobs = 3;
        let r = s
            .sample(req, CallOptions::default())
            .unwrap()
            .await
            .unwrap();
        let plp = r.prompt_logprobs.unwrap();
        assert_eq!(plp.len(), 4);
        assert!(plp[0].is_nan() && plp[1..].iter().all(|x| *x <= 0.0));
        let topk = r.topk_prompt_logprobs.unwrap();
        assert_eq!((topk.length, topk.k), (4, 3));
        let row = |i: usize| &topk.logprobs[i * 3..i * 3 + 3];
        assert!(
            row(1)[0] >= row(1)[1] && row(1)[1] >= row(1)[2],
            "top-k sorted: {:?}",
            row(1)
        );
        assert!(
            row(1)[0] >= plp[1],
            "the best candidate is at least as likely as the actual token"
        );
    });
}

#[test]
fn a_thousand_concurrent_samples_settle_under_faults() {
    let sim = Sim::start(&["--seed", "23", "--future-delay-ms", "5", "--faults", "429ms:0.01:30,503:0.05,drop:0.02,lost:0.03,storm:0.1:3,expire:0.05,429:0.05@retrieve_future"]);
    run(async {
        let svc = ServiceClient::new(Native::new(), sim.options()).unwrap();
        let s = Rc::new(
            svc.create_sampling_client(
                None,
                Some("meta-llama/Llama-3.2-1B".into()),
                SamplingOptions::default(),
                CallOptions::default(),
            )
            .unwrap()
            .await
            .unwrap(),
        );
        let futs = (0..1000u32).map(|i| {
            let params = SamplingParams {
                max_tokens: Some(3),
                seed: Some(u64::from(i)),
                ..Default::default()
            };
            s.sample(
                SampleRequest::new(ModelInput::from_ints(vec![i % 1000 + 1, 2]), 1, params),
                CallOptions::default(),
            )
            .unwrap()
        });
        let results = futures_util::future::join_all(futs).await;
        let ok = results.iter().filter(|r| r.is_ok()).count();
        let errs: Vec<String> = results
            .iter()
            .filter_map(|r| r.as_ref().err().map(|e| e.to_string()))
            .take(3)
            .collect();
        assert_eq!(ok, 1000, "every sample succeeded: {errs:?}");
        assert!(results
            .iter()
            .all(|r| r.as_ref().unwrap().sequences.len() == 1));
        let stats = sim.admin("stats").await;
        assert!(
            stats["faults_injected"]
                .as_object()
                .is_some_and(|m| m.len() >= 4),
            "{stats}"
        );
    });
}

#[test]
fn batched_polling_and_cancel_when_the_server_enables_them() {
    let sim = Sim::start(&[
        "--seed",
        "24",
        "--future-delay-ms",
        "20",
        "--client-config",
        r#"{"sample_use_retrieve_futures":true}"#,
        "--dynamic-config",
        r#"{"sample_cancel_enabled":true}"#,
    ]);
    run(async {
        let svc = ServiceClient::new(Native::new(), sim.options()).unwrap();
        let s = svc
            .create_sampling_client(
                None,
                Some("Qwen/Qwen3-8B".into()),
                SamplingOptions::default(),
                CallOptions::default(),
            )
            .unwrap()
            .await
            .unwrap();
        let futs = (0..50u32).map(|i| {
            s.sample(
                SampleRequest::new(
                    ModelInput::from_ints(vec![i + 1]),
                    2,
                    SamplingParams {
                        max_tokens: Some(2),
                        ..Default::default()
                    },
                ),
                CallOptions::default(),
            )
            .unwrap()
        });
        for r in futures_util::future::join_all(futs).await {
            assert_eq!(r.unwrap().sequences.len(), 2);
        }
        let stats = sim.admin("stats").await;
        let by_path = &stats["requests_by_path"];
        assert!(
            by_path["POST /api/v1/retrieve_futures"]
                .as_u64()
                .unwrap_or(0)
                > 0,
            "{stats}"
        );
        // An aborted sample is cancelled on the server.
        sim.configure(serde_json::json!({ "future_delay_ms": 2000 }))
            .await;
        let cancel = tinker_core::CancelToken::new();
        let f = s
            .sample(
                SampleRequest::new(
                    ModelInput::from_ints(vec![9]),
                    1,
                    SamplingParams {
                        max_tokens: Some(2),
                        ..Default::default()
                    },
                ),
                CallOptions {
                    cancel: Some(cancel.clone()),
                    timeout: None,
                    ..Default::default()
                },
            )
            .unwrap();
        let aborter = async {
            // Abort once the server has the request (its 51st asample); fail rather than
            // hang if it never arrives.
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
            while sim.admin("stats").await["requests_by_path"]["POST /api/v1/asample"]
                .as_u64()
                .unwrap_or(0)
                < 51
            {
                assert!(
                    std::time::Instant::now() < deadline,
                    "the 51st asample did not reach the simulator within 30 s"
                );
                tokio::time::sleep(std::time::Duration::from_millis(5)).await;
            }
            cancel.cancel();
        };
        let (r, _) = futures_util::future::join(f, aborter).await;
        assert!(
            matches!(r, Err(tinker_core::error::Error::Aborted { .. })),
            "{:?}",
            r.err()
        );
        for _ in 0..50 {
            if sim.admin("stats").await["requests_by_path"]["POST /api/v1/cancel_future"]
                .as_u64()
                .unwrap_or(0)
                > 0
            {
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        panic!(
            "no cancel_future reached the server: {}",
            sim.admin("stats").await
        );
    });
}

/// A client attached to a sampler that another client already sampled from
/// (`ServiceClient::sampling_client`) gets answers to its own requests: its seq ids are a
/// clone's (joined, or random without `sample_join_sampling_session`), never the
/// creator's, which the server would take for retries of the creator's requests.
#[test]
fn an_attached_client_never_gets_the_creators_answers() {
    for config in ["{}", r#"{"sample_join_sampling_session":true}"#] {
        let sim = Sim::start(&["--seed", "26", "--client-config", config]);
        run(async {
            let svc = ServiceClient::new(Native::new(), sim.options()).unwrap();
            let creator = svc
                .create_sampling_client(
                    None,
                    Some("Qwen/Qwen3-8B".into()),
                    SamplingOptions::default(),
                    CallOptions::default(),
                )
                .unwrap()
                .await
                .unwrap();
            let draw = |s: &SamplingClient, prompt: Vec<u32>, max_tokens: u32| {
                let r = s
                    .sample(
                        SampleRequest::new(
                            ModelInput::from_ints(prompt),
                            1,
                            SamplingParams {
                                max_tokens: Some(max_tokens),
                                seed: Some(3),
                                stop: Some(StopCondition::Tokens(vec![])),
                                ..Default::default()
                            },
                        ),
                        CallOptions::default(),
                    )
                    .unwrap();
                async move { r.await.unwrap().sequences[0].tokens.clone() }
            };
            assert_eq!(draw(&creator, vec![100, 200, 300], 6).await.len(), 6);
            for attached_no in 0..2 {
                let attached = svc
                    .sampling_client(
                        creator.sampling_session_id(),
                        None,
                        SamplingOptions::default(),
                    )
                    .unwrap()
                    .await
                    .unwrap();
                assert_eq!(attached.base_model(), "Qwen/Qwen3-8B");
                for max_tokens in [2, 3] {
                    let got = draw(&attached, vec![7, 8, 9, 10], max_tokens).await;
                    assert_eq!(
                        got.len(),
                        max_tokens as usize,
                        "{config}: attached client {attached_no}, its own answer"
                    );
                }
            }
            // The creator's next request is still its own.
            assert_eq!(draw(&creator, vec![1, 2], 4).await.len(), 4, "{config}");
        });
    }
}
