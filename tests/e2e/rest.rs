use tinker_core::call::CallOptions;
use tinker_core::error::Result;
use tinker_core::rest::{AccessScope, Page, RestCall, RestClient, RestOutput};
use tinker_core::service::{LoraOptions, ServiceClient};
use tinker_core::types::LoraConfig;
use tinker_core::Value;

use crate::native::{run, Native, Sim};

async fn json(rest: &RestClient, call: Result<RestCall>) -> Result<Value> {
    rest.call(call?).await.map(RestOutput::json)
}

async fn page(rest: &RestClient, call: Result<RestCall>) -> Page {
    rest.call(call.unwrap()).await.unwrap().page().unwrap()
}

#[test]
fn runs_checkpoints_and_sessions_through_rest() {
    let sim = Sim::start(&["--seed", "25"]);
    run(async {
        let mut opts = sim.options();
        opts.project_id = Some("proj-1".into());
        let svc = ServiceClient::new(Native::new(), opts).unwrap();
        let mut runs = vec![];
        for i in 0..5 {
            let l = LoraConfig {
                seed: Some(i),
                ..LoraConfig::new(4)
            };
            runs.push(
                svc.create_lora_training_client(
                    LoraOptions {
                        base_model: "Qwen/Qwen3-8B".into(),
                        lora: l,
                        user_metadata: Some([("i".to_string(), i.to_string())].into()),
                        optimizer: None,
                    },
                    CallOptions::default(),
                )
                .unwrap()
                .await
                .unwrap(),
            );
        }
        let rest = svc.rest_client().await.unwrap();
        // Pagination over > 2 pages.
        let mut seen = vec![];
        let mut offset = 0;
        let mut pages = 0;
        for _ in 0..10 {
            let p = page(
                &rest,
                RestCall::list_training_runs(2, offset, AccessScope::Owned, None),
            )
            .await;
            pages += 1;
            seen.extend(
                p.items
                    .iter()
                    .map(|r| r["training_run_id"].as_str().unwrap().to_string()),
            );
            match p.next_offset {
                Some(n) => offset = n,
                None => break,
            }
        }
        assert_eq!(pages, 3, "three pages of two runs, then no next offset");
        for r in &runs {
            assert!(seen.contains(&r.model_id().to_string()), "{seen:?}");
        }
        let run0 = json(
            &rest,
            RestCall::get_training_run(runs[0].model_id(), AccessScope::Owned),
        )
        .await
        .unwrap();
        assert_eq!(run0["base_model"], "Qwen/Qwen3-8B");
        // Checkpoints: save, list, publish, ttl, info, delete.
        let saved = runs[0]
            .save_state("c1", None, false, None, CallOptions::default())
            .unwrap()
            .await
            .unwrap();
        let path = saved["path"].as_str().unwrap().to_string();
        let sw = runs[0]
            .save_weights_for_sampler("s1", None, None, CallOptions::default())
            .unwrap()
            .await
            .unwrap();
        let list = json(&rest, RestCall::list_checkpoints(runs[0].model_id()))
            .await
            .unwrap();
        let ids: Vec<&str> = list["checkpoints"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["checkpoint_id"].as_str().unwrap())
            .collect();
        assert!(
            ids.contains(&"weights/c1") && ids.contains(&"sampler_weights/s1"),
            "{ids:?}"
        );
        json(&rest, RestCall::set_published(&path, true))
            .await
            .unwrap();
        assert_eq!(
            json(&rest, RestCall::set_published(&path, true))
                .await
                .unwrap_err()
                .status(),
            Some(409),
            "already public"
        );
        json(&rest, RestCall::set_checkpoint_ttl(&path, Some(7200)))
            .await
            .unwrap();
        let info = json(&rest, RestCall::get_weights_info(&path))
            .await
            .unwrap();
        assert_eq!(info["base_model"], "Qwen/Qwen3-8B");
        let user = page(&rest, RestCall::list_user_checkpoints(100, 0)).await;
        assert!(user.items.iter().any(|c| c["tinker_path"] == path.as_str()));
        let copy = rest
            .call(
                RestCall::copy_weights(sw["path"].as_str().unwrap(), "proj-2", None, None).unwrap(),
            )
            .await
            .unwrap()
            .text()
            .unwrap();
        assert!(
            copy.starts_with("tinker://") && copy.contains("/sampler_weights/"),
            "{copy}"
        );
        json(&rest, RestCall::delete_checkpoint(&path))
            .await
            .unwrap();
        assert_eq!(
            json(&rest, RestCall::delete_checkpoint(&path))
                .await
                .unwrap_err()
                .status(),
            Some(404)
        );
        // Sessions and samplers.
        let session = svc.session_state().unwrap().session_id;
        let s = json(&rest, RestCall::get_session(&session, AccessScope::Owned))
            .await
            .unwrap();
        assert_eq!(s["training_run_ids"].as_array().unwrap().len(), 5);
        let sampler = runs[1]
            .save_weights_and_get_sampling_client(
                "snapshot",
                Default::default(),
                CallOptions::default(),
            )
            .unwrap()
            .await
            .unwrap();
        let si = json(&rest, RestCall::get_sampler(sampler.sampling_session_id()))
            .await
            .unwrap();
        assert_eq!(si["base_model"], "Qwen/Qwen3-8B");
        let caps = json(&rest, Ok(RestCall::get_server_capabilities()))
            .await
            .unwrap();
        assert!(caps["supported_models"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["model_name"] == "meta-llama/Llama-3.2-1B"));
        assert_eq!(
            json(
                &rest,
                RestCall::get_training_run("no-such-run", AccessScope::Owned)
            )
            .await
            .unwrap_err()
            .status(),
            Some(404)
        );
    });
}
