//! Runs `tinker_cookbook::sft::train` natively against a Tinker server (tinker-sim in
//! `make test-cookbook`), with the same arguments as tests/cookbook/run_sft.py runs the
//! cookbook's own `supervised.train.main`, so the two request logs can be compared.
//!
//!     cargo run -p tinker-cookbook --example sft -- --base-url URL --log-path DIR \
//!         --jsonl FILE --tokenizer-dir DIR [--model M --renderer R --batch-size N …]

use std::collections::HashMap;
use std::path::PathBuf;

use futures_util::future::LocalBoxFuture;
use tinker_cookbook::data::parse_conversations;
use tinker_cookbook::sft::{train, RunFiles, SftConfig, SftRun};
use tinker_cookbook::LrSchedule;
use tinker_core::service::ServiceClient;
use tinker_renderers::{Renderer, RendererOptions};
use tinker_tokenizer::Tokenizer;

#[allow(dead_code)]
#[path = "../../../tests/e2e/native.rs"]
mod native;

/// The log folder on disk.
struct Dir(PathBuf);

impl RunFiles for Dir {
    fn read(&self, name: &str) -> LocalBoxFuture<'_, Result<Option<String>, String>> {
        let p = self.0.join(name);
        Box::pin(async move {
            match std::fs::read_to_string(&p) {
                Ok(t) => Ok(Some(t)),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
                Err(e) => Err(format!("{}: {e}", p.display())),
            }
        })
    }
    fn append(&self, name: &str, text: String) -> LocalBoxFuture<'_, Result<(), String>> {
        let p = self.0.join(name);
        Box::pin(async move {
            use std::io::Write;
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&p)
                .and_then(|mut f| f.write_all(text.as_bytes()))
                .map_err(|e| format!("{}: {e}", p.display()))
        })
    }
    fn write(&self, name: &str, text: String) -> LocalBoxFuture<'_, Result<(), String>> {
        let p = self.0.join(name);
        Box::pin(
            async move { std::fs::write(&p, text).map_err(|e| format!("{}: {e}", p.display())) },
        )
    }
}

fn args() -> HashMap<String, String> {
    let a: Vec<String> = std::env::args().skip(1).collect();
    a.chunks(2)
        .map(|kv| {
            (
                kv[0].trim_start_matches("--").to_string(),
                kv.get(1).cloned().unwrap_or_default(),
            )
        })
        .collect()
}

fn config(a: &HashMap<String, String>) -> SftConfig {
    let get = |k: &str, d: &str| a.get(k).cloned().unwrap_or_else(|| d.to_string());
    let num = |k: &str, d: &str| get(k, d).parse::<u64>().unwrap_or_else(|_| panic!("--{k}"));
    let mut c = SftConfig::new(
        &get("model", "Qwen/Qwen3-8B"),
        &get("renderer", "qwen3"),
        num("batch-size", "4") as usize,
    );
    c.plan.num_epochs = num("epochs", "1");
    c.plan.lr_schedule = LrSchedule::parse(&get("lr-schedule", "linear")).unwrap();
    c.plan.learning_rate = get("learning-rate", "1e-4").parse().unwrap();
    c.plan.eval_every = num("eval-every", "10");
    c.plan.save_every = num("save-every", "20");
    c.plan.max_steps = a.get("max-steps").map(|s| s.parse().unwrap());
    c.submit_ahead = num("submit-ahead", "1");
    c.test_size = num("test-size", "0") as usize;
    c.shuffle_seed = num("shuffle-seed", "0");
    c.max_length = a.get("max-length").map(|s| s.parse().unwrap());
    c.lora_rank = num("lora-rank", "32") as u32;
    c
}

fn main() {
    let a = args();
    let dir = PathBuf::from(&a["log-path"]);
    std::fs::create_dir_all(&dir).unwrap();
    let tok_dir = PathBuf::from(&a["tokenizer-dir"]);
    let json = std::fs::read(tok_dir.join("tokenizer.json")).unwrap();
    let cfg_bytes = std::fs::read(tok_dir.join("tokenizer_config.json")).ok();
    let tokenizer = Tokenizer::from_json(&json, cfg_bytes.as_deref()).unwrap();
    let cfg = config(&a);
    let renderer = Renderer::new(&cfg.renderer_name, &RendererOptions::default()).unwrap();
    let rows = parse_conversations(&std::fs::read_to_string(&a["jsonl"]).unwrap()).unwrap();
    let opts = tinker_core::options::ClientOptions {
        api_key: Some(std::env::var("TINKER_API_KEY").unwrap_or_else(|_| "tml-local".into())),
        base_url: a["base-url"].clone(),
        telemetry: false,
        ..Default::default()
    };
    let start = std::time::Instant::now();
    let result = native::run(async {
        let service = ServiceClient::new(native::Native::new(), opts).unwrap();
        let files = Dir(dir.clone());
        let run = SftRun {
            service: &service,
            rows: &rows,
            tokenizer: &tokenizer,
            renderer: &renderer,
            files: &files,
            on_metrics: &|m| {
                eprintln!("step {}: train_mean_nll {}", m["step"], m["train_mean_nll"])
            },
            now: &|| start.elapsed().as_secs_f64(),
        };
        let r = train(run, cfg).await;
        let _ = service
            .close(tinker_core::session::FinishStatus::Success, None)
            .await;
        r
    });
    if let Err(e) = result {
        eprintln!("sft: {e}");
        std::process::exit(1);
    }
}
