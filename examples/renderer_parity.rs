//! Renderer parity, natively: runs our renderers over the cases tinker-cookbook's own
//! renderers were run on (tests/renderers/oracle.py's expected.json) and compares tokens,
//! weights, stop sequences, parsed responses, tool prefixes and the lineup.
//!
//! ```sh
//! cargo run --example renderer_parity -- target/renderer-parity/expected.json [--only qwen3,llama3] [--verbose]
//! ```
//! Exits 1 on any difference, and when a filter leaves nothing to compare.

use std::collections::BTreeMap;
use std::process::ExitCode;

use serde_json::{json, Value as Json};
use tinker_core::types::{ModelInput, ModelInputChunk};
use tinker_renderers::{
    models, Message, Renderer, RendererOptions, StopSequences, Supervised, TrainOnWhat,
};
use tinker_tokenizer::Tokenizer;

/// Our result in the oracle's shape: `{"ok": …}` or `{"error": …}`.
fn outcome<T>(r: Result<T, impl std::fmt::Display>, f: impl FnOnce(T) -> Json) -> Json {
    match r {
        Ok(v) => json!({ "ok": f(v) }),
        Err(e) => json!({ "error": e.to_string() }),
    }
}

/// A model input as the oracle writes it: adjacent text chunks merged.
fn chunks(mi: &ModelInput) -> Json {
    let mut out: Vec<Json> = Vec::new();
    for c in &mi.chunks {
        match c {
            ModelInputChunk::EncodedText { tokens } => {
                if let Some(Json::Object(last)) = out.last_mut() {
                    if let Some(Json::Array(t)) = last.get_mut("tokens") {
                        t.extend(tokens.iter().map(|&x| json!(x)));
                        continue;
                    }
                }
                out.push(json!({ "tokens": tokens }));
            }
            ModelInputChunk::Image {
                format,
                expected_tokens,
                ..
            } => {
                let _ = format; // ours keeps the caller's PNG/JPEG; the cookbook re-encodes as JPEG
                out.push(json!({ "image_tokens": expected_tokens }))
            }
            other => out.push(json!({ "other": format!("{other:?}") })),
        }
    }
    Json::Array(out)
}

fn supervised(s: &Supervised) -> Json {
    json!({ "chunks": chunks(&s.model_input), "weights": s.weights })
}

/// Compares an expected and an actual outcome: both errors (any message), or equal values.
/// Floats compare within 1e-6 relative.
fn same(want: &Json, got: &Json) -> bool {
    let want = &without_image_format(want);
    match (want, got) {
        (Json::Object(w), Json::Object(g))
            if w.contains_key("error") || g.contains_key("error") =>
        {
            w.contains_key("error") && g.contains_key("error")
        }
        _ => eq(want, got),
    }
}

/// The oracle's image chunks name their format (JPEG: the cookbook re-encodes every image);
/// ours keep the caller's bytes and format, so only the token count is compared.
fn without_image_format(v: &Json) -> Json {
    match v {
        Json::Object(o) => Json::Object(
            o.iter()
                .filter(|(k, _)| !(k.as_str() == "format" && o.contains_key("image_tokens")))
                .map(|(k, v)| (k.clone(), without_image_format(v)))
                .collect(),
        ),
        Json::Array(a) => Json::Array(a.iter().map(without_image_format).collect()),
        other => other.clone(),
    }
}

fn eq(a: &Json, b: &Json) -> bool {
    match (a, b) {
        (Json::Number(x), Json::Number(y)) => match (x.as_f64(), y.as_f64()) {
            (Some(x), Some(y)) => x == y || (x - y).abs() <= 1e-6 * x.abs().max(y.abs()),
            _ => x == y,
        },
        (Json::Array(x), Json::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| eq(a, b))
        }
        (Json::Object(x), Json::Object(y)) => {
            x.len() == y.len()
                && x.iter().all(|(k, v)| {
                    y.get(k)
                        .is_some_and(|w| eq(v, w) || (k == "error" && both_json_errors(v, w)))
                })
        }
        _ => a == b,
    }
}

/// A tool call's JSON error: Python's `json` and serde word their messages differently, so
/// only the kind ("Invalid JSON: …") is compared.
fn both_json_errors(a: &Json, b: &Json) -> bool {
    let is = |v: &Json| v.as_str().is_some_and(|s| s.starts_with("Invalid JSON: "));
    is(a) && is(b)
}

/// Where two values first differ (a short path and both sides), for the report.
fn first_diff(path: &str, a: &Json, b: &Json) -> String {
    match (a, b) {
        (Json::Array(x), Json::Array(y)) => {
            for (i, (p, q)) in x.iter().zip(y).enumerate() {
                if !eq(p, q) {
                    return first_diff(&format!("{path}[{i}]"), p, q);
                }
            }
            format!("{path}: length {} vs {}", x.len(), y.len())
        }
        (Json::Object(x), Json::Object(y)) => {
            for (k, v) in x {
                match y.get(k) {
                    Some(w) if !eq(v, w) => return first_diff(&format!("{path}.{k}"), v, w),
                    None => return format!("{path}.{k}: missing in ours"),
                    _ => {}
                }
            }
            for k in y.keys() {
                if !x.contains_key(k) {
                    return format!("{path}.{k}: only in ours");
                }
            }
            format!("{path}: ?")
        }
        _ => format!("{path}: cookbook {} | ours {}", short(a), short(b)),
    }
}

fn short(v: &Json) -> String {
    let s = v.to_string();
    if s.chars().count() > 300 {
        format!("{}…", s.chars().take(300).collect::<String>())
    } else {
        s
    }
}

struct Tally {
    passed: usize,
    failed: usize,
    shown: usize,
}

impl Tally {
    fn check(&mut self, what: &str, want: &Json, got: &Json, verbose: bool) {
        if same(want, got) {
            self.passed += 1;
        } else {
            self.failed += 1;
            if verbose || self.shown < 3 {
                self.shown += 1;
                println!("    DIFF {what}: {}", first_diff("", want, got));
                if let (Some(e), _) | (_, Some(e)) = (want.get("error"), got.get("error")) {
                    println!("      (error: {})", short(e));
                }
            }
        }
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(path) = args
        .iter()
        .find(|a| !a.starts_with("--") && !a.contains(','))
        .cloned()
    else {
        eprintln!("usage: renderer_parity EXPECTED_JSON [--only a,b] [--verbose]");
        return ExitCode::FAILURE;
    };
    let only: Option<Vec<String>> = args
        .iter()
        .position(|a| a == "--only")
        .and_then(|i| args.get(i + 1))
        .map(|s| s.split(',').map(str::to_owned).collect());
    let verbose = args.iter().any(|a| a == "--verbose");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let expected: Json = serde_json::from_str(&text).expect("expected.json is JSON");

    let mut total_failed = 0usize;
    let mut compared = 0usize;

    // The lineup.
    if only.is_none() {
        let mut t = Tally {
            passed: 0,
            failed: 0,
            shown: 0,
        };
        // The lineup's models (and unknown names), then other names the cookbook answers
        // (a `:checkpoint` suffix, an Inkling it does not list).
        let lookups = expected["models"].as_array().into_iter().flatten();
        for m in lookups.chain(expected["model_lookups"].as_array().into_iter().flatten()) {
            let name = m["name"].as_str().unwrap_or_default();
            let got = match models::model_attributes(name) {
                Ok(a) => json!({
                    "organization": a.organization, "version_str": a.version, "size_str": a.size,
                    "is_chat": a.is_chat, "recommended_renderers": a.recommended_renderers,
                    "is_vl": a.is_vl, "is_audio_in": a.is_audio_in,
                }),
                Err(e) => json!({ "error": e }),
            };
            let want = if m.get("error").is_some() {
                json!({ "error": m["error"] })
            } else {
                m["attributes"].clone()
            };
            t.check(&format!("model {name}"), &want, &got, verbose);
        }
        println!("lineup: {} models match, {} differ", t.passed, t.failed);
        total_failed += t.failed;
        compared += t.passed + t.failed;
    }

    let mut tokenizers: BTreeMap<String, Tokenizer> = BTreeMap::new();
    for r in expected["renderers"].as_array().into_iter().flatten() {
        let name = r["renderer"].as_str().unwrap_or_default();
        if only.as_ref().is_some_and(|o| !o.iter().any(|x| x == name)) {
            continue;
        }
        let tok_key = r["tokenizer"].as_str().unwrap_or_default().to_owned();
        if !tokenizers.contains_key(&tok_key) {
            let m = &expected["tokenizers"][&tok_key];
            let json_path = m["json"].as_str().unwrap_or_default();
            let cfg_path = m["config"].as_str().unwrap_or_default();
            let json_bytes =
                std::fs::read(json_path).unwrap_or_else(|e| panic!("{json_path}: {e}"));
            let cfg = std::fs::read(cfg_path).ok();
            let tok = Tokenizer::from_json(&json_bytes, cfg.as_deref())
                .unwrap_or_else(|e| panic!("{tok_key}: {e}"));
            tokenizers.insert(tok_key.clone(), tok);
        }
        let tok = &tokenizers[&tok_key];
        let opts = RendererOptions {
            current_date: r["options"]["current_date"].as_str().map(str::to_owned),
        };
        // The cookbook cannot build some renderers (its entry then has an "error"): ours
        // must refuse them too.
        let renderer = match (Renderer::new(name, &opts), r.get("error")) {
            (Ok(x), None) => x,
            (Err(e), Some(_)) => {
                println!("{name}: refused by both ({e})");
                compared += 1;
                continue;
            }
            (Ok(_), Some(e)) => {
                println!("{name}: DIFF the cookbook refuses it ({e}), ours builds it");
                total_failed += 1;
                compared += 1;
                continue;
            }
            (Err(e), None) => {
                println!("{name}: NOT AVAILABLE ({e})");
                total_failed += 1;
                compared += 1;
                continue;
            }
        };
        let mut t = Tally {
            passed: 0,
            failed: 0,
            shown: 0,
        };
        t.check(
            "has_extension_property",
            &r["has_extension_property"],
            &json!(renderer.has_extension_property()),
            verbose,
        );
        let stop = outcome(renderer.stop_sequences(tok), |s| match s {
            StopSequences::Tokens(t) => json!(t),
            StopSequences::Strings(s) => json!(s),
        });
        let want_stop = if r["stop_sequences"].get("error").is_some() {
            r["stop_sequences"].clone()
        } else {
            json!({ "ok": r["stop_sequences"] })
        };
        t.check("stop_sequences", &want_stop, &stop, verbose);

        for tp in r["tools_prefix"].as_array().into_iter().flatten() {
            let tools: Vec<Json> = tp["tools"].as_array().cloned().unwrap_or_default();
            let sys = tp["system_prompt"].as_str().unwrap_or_default();
            let got = outcome(
                renderer.conversation_prefix_with_tools(tok, &tools, sys),
                |ms| Json::Array(ms.iter().map(Message::to_json).collect()),
            );
            t.check("tools_prefix", &tp["result"], &got, verbose);
        }

        for case in r["cases"].as_array().into_iter().flatten() {
            let cname = case["case"].as_str().unwrap_or_default();
            let msgs = match Message::list_from_json(&case["messages"]) {
                Ok(m) => m,
                Err(e) => {
                    println!("    {cname}: our message reader refuses the case: {e}");
                    t.failed += 1;
                    continue;
                }
            };
            let gp = &case["generation_prompt"];
            let got = outcome(
                renderer.build_generation_prompt(tok, &msgs, "assistant", None),
                |m| chunks(&m),
            );
            t.check(&format!("{cname} generation_prompt"), gp, &got, verbose);
            let gpp = &case["generation_prompt_prefill"];
            if let Some(p) = gpp["prefill"].as_str() {
                let mut want = gpp.clone();
                if let Json::Object(o) = &mut want {
                    o.remove("prefill");
                }
                let got = outcome(
                    renderer.build_generation_prompt(tok, &msgs, "assistant", Some(p)),
                    |m| chunks(&m),
                );
                t.check(
                    &format!("{cname} generation_prompt_prefill"),
                    &want,
                    &got,
                    verbose,
                );
            }
            for (train, want) in case["supervised"].as_object().into_iter().flatten() {
                let tw = TrainOnWhat::parse(train, "train_on_what").expect("a TrainOnWhat name");
                let got = outcome(
                    renderer.build_supervised_example(tok, &msgs, Some(tw)),
                    |s| supervised(&s),
                );
                t.check(&format!("{cname} supervised[{train}]"), want, &got, verbose);
            }
            for (train, want) in case["supervised_examples"]
                .as_object()
                .into_iter()
                .flatten()
            {
                let tw = TrainOnWhat::parse(train, "train_on_what").expect("a TrainOnWhat name");
                let got = outcome(
                    renderer.build_supervised_examples(tok, &msgs, Some(tw)),
                    |v| Json::Array(v.iter().map(supervised).collect()),
                );
                t.check(
                    &format!("{cname} supervised_examples[{train}]"),
                    want,
                    &got,
                    verbose,
                );
            }
        }
        for p in r["parse"].as_array().into_iter().flatten() {
            let tokens: Vec<u32> = p["tokens"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|x| x.as_u64().map(|x| x as u32))
                .collect();
            let got = outcome(
                renderer.parse_response(tok, &tokens),
                |(m, term)| json!({ "message": m.to_json(), "termination": term.as_str() }),
            );
            t.check(
                &format!("parse {}", p["source"].as_str().unwrap_or_default()),
                &p["result"],
                &got,
                verbose,
            );
        }
        println!(
            "{name} [{tok_key}]: {} match, {} differ",
            t.passed, t.failed
        );
        total_failed += t.failed;
        compared += t.passed + t.failed;
    }
    if compared == 0 {
        println!("nothing compared (a filter that matches no renderer?)");
        return ExitCode::FAILURE;
    }
    if total_failed > 0 {
        println!("renderer parity: {total_failed} differences");
        ExitCode::FAILURE
    } else {
        println!("renderer parity: all {compared} checks match");
        ExitCode::SUCCESS
    }
}
