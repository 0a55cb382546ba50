//! Every endpoint of the Tinker API this client calls, as data: its method and path, what
//! its body is, how it is retried, its timeout, and whether it answers with a server-side
//! future to poll. Requests are built from these rows (`Req::to`, `Req::at` in
//! [`crate::http`]), and the holder picks the retry layer a row names
//! (`Holder::retrying`), so this table is the one place a path, a method or a retry
//! class is written down (a test checks that no other core file names an `/api/v1/`
//! path).
//!
//! A row is an operation rather than a path: `load_weights` appears twice (creating a
//! training run from a checkpoint, and loading one into a run), as do `forward_backward`
//! (a forward-only pass polls as `Forward`) and a checkpoint's `publish` (POST publishes,
//! DELETE unpublishes).
//!
//! The retry classes, as the Python SDK 0.38 applies them:
//!
//! | [`Retries`] | what retries | Python |
//! |---|---|---|
//! | `None` | the HTTP layer only (Stainless: `max_retries`, 408/409/429/5xx, connection errors) | plain `client.<resource>.<call>()` |
//! | `Transient` | the holder's `execute_with_retries` around it (transient errors, 300 s window, HTTP 402 pauses) | `holder.execute_with_retries(...)` |
//! | `ConflictFinal` | as `Transient`, but a 409 is a final answer (REST mutations: "already public") | — (ours: Python retries them 5 minutes) |
//! | `Loop` | nothing: the caller's own loop sends it again (polls, heartbeats, refreshes) | `max_retries=0` in a loop |

use std::time::Duration;

use crate::platform::Method;
use crate::text;

/// What a request body is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Body {
    /// No body.
    None,
    /// A JSON object.
    Json,
    /// A protobuf message (`application/x-protobuf`, zstd-compressed when the server
    /// asks for it).
    Protobuf,
}

/// The HTTP layer's retries of one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HttpRetries {
    /// The client's `maxRetries` (Python: the resource call's default).
    Client,
    /// None (Python: `max_retries=0`): a layer above retries.
    Never,
}

/// The retry layer around the HTTP layer (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Retries {
    /// The HTTP layer's retries only.
    None,
    /// The holder's retries of transient failures.
    Transient,
    /// The holder's retries, with a 409 final at both layers.
    ConflictFinal,
    /// The caller's loop sends it again.
    Loop,
}

/// What the answer is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reply {
    /// A JSON value; an unparseable body is an error.
    Json,
    /// The id of a server-side future (`UntypedAPIFuture`) to poll with
    /// `retrieve_future`.
    Future {
        /// `X-Tinker-Request-Type` of its polls (`OptimStep`, `Sample`, …).
        request_type: &'static str,
        /// Whether its result comes as protobuf (Python `PROTO_SUPPORTED_TYPES`:
        /// `ForwardBackwardOutput`, `SampleResponse`); JSON otherwise.
        protobuf: bool,
    },
    /// Nothing the caller needs: the body is read as JSON when it is JSON (REST
    /// mutations answer `{}` or nothing).
    Any,
    /// The polled result itself (protobuf or JSON, see [`crate::future`]).
    Polled,
}

/// How retries of one call share their idempotency key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Idempotency {
    /// Each HTTP-layer send of a non-GET request carries its own key across its own
    /// retries (Stainless).
    PerSend,
    /// One key covers every attempt of the call, holder retries included (a copy must
    /// not be made twice).
    PerCall,
}

/// One operation of the API.
#[derive(Debug, PartialEq, Eq)]
pub struct Endpoint {
    /// The operation's name in holder-retry telemetry (`func`).
    pub name: &'static str,
    /// The HTTP method.
    pub method: Method,
    /// The path under the base URL; each `{}` is a path parameter, in order.
    pub path: &'static str,
    /// The request body.
    pub body: Body,
    /// The HTTP layer's retries.
    pub http_retries: HttpRetries,
    /// The retry layer around the HTTP layer.
    pub retries: Retries,
    /// The per-request timeout, when not the client's.
    pub timeout: Option<Duration>,
    /// The answer.
    pub reply: Reply,
    /// How retries share an idempotency key (non-GET requests).
    pub idempotency: Idempotency,
}

/// The Python connection pool (`ClientConnectionPoolType`) an operation's requests go
/// through; each pool of a holder has its own budget of empty-400 retries
/// ([`crate::retry::connection_budget`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pool {
    /// `SESSION`: session set-up, heartbeats, dynamic config, sampling sessions.
    Session,
    /// `SAMPLE`: `asample`.
    Sample,
    /// `TRAIN`: training, `get_info`, and the REST calls.
    Train,
    /// `REST_SUPPORT_REDIRECT`: the audit log.
    RestRedirect,
    /// `RETRIEVE_PROMISE`: `retrieve_future`, `cancel_future`.
    RetrievePromise,
    /// `RETRIEVE_FUTURES`: the session-wide poller.
    RetrieveFutures,
    /// `TELEMETRY`.
    Telemetry,
    /// The JWT exchange's own pool, and the one-off pool of `client/config`.
    Auth,
}

impl Pool {
    /// Every pool (index order of [`Pool::index`]).
    pub const COUNT: usize = 8;

    /// The pool's slot in a per-pool table.
    pub fn index(self) -> usize {
        self as usize
    }
}

impl Endpoint {
    /// The path with `args` in its `{}` places.
    ///
    /// # Panics
    /// If `args` does not have one value per place (a bug at the call site: every
    /// caller is in this crate).
    pub fn fill(&self, args: &[&str]) -> String {
        let mut out = String::with_capacity(self.path.len() + 32);
        let mut parts = text::split(self.path, "{}");
        out.push_str(parts.next().unwrap_or_default());
        let mut args = args.iter();
        for part in parts {
            out.push_str(args.next().expect("one argument per path parameter"));
            out.push_str(part);
        }
        assert!(args.next().is_none(), "more arguments than path parameters");
        out
    }

    /// The pool Python sends this operation through (the `aclient(...)` of each call
    /// site: `lib/internal_client_holder.py:577,609,682,741,773`, `telemetry.py:176`,
    /// `api_future_impl.py:461`, `session_futures_poller.py:167`,
    /// `sampling_client.py:361,440`, `admin_client.py:112`; every other call, `finish` too
    /// (`service_client.py:825`): `TRAIN`).
    pub fn pool(&self) -> Pool {
        match self.name {
            "dynamic_config"
            | "create_session"
            | "session_heartbeat"
            | "create_sampling_session"
            | "join_sampling_session" => Pool::Session,
            "asample" => Pool::Sample,
            "retrieve_future" | "cancel_future" => Pool::RetrievePromise,
            "retrieve_futures" => Pool::RetrieveFutures,
            "telemetry" => Pool::Telemetry,
            "get_audit_log" => Pool::RestRedirect,
            "auth_token" | "client_config" => Pool::Auth,
            _ => Pool::Train,
        }
    }

    /// Whether Python sends this operation through httpx's own transport whatever the
    /// server's `use_pyqwest_transport` says: `client/config`, so that the switch is
    /// always reachable (`internal_client_holder.py:716-735`), and the audit log's
    /// redirect pool (`:810-817`).
    pub fn httpx_transport(&self) -> bool {
        matches!(self.name, "client_config" | "get_audit_log")
    }

    /// Whether Python gives this operation's timeout as a float (`5.0`, `45.0`: the
    /// telemetry and `retrieve_futures` constants, `lib/telemetry.py:45`,
    /// `session_futures_poller.py:23-26`) rather than an int (`timeout=45`, `10`, `30`),
    /// which `x-stainless-read-timeout` shows.
    pub fn python_float_timeout(&self) -> bool {
        matches!(self.name, "telemetry" | "retrieve_futures")
    }

    /// How many path parameters the path has.
    pub fn params(&self) -> usize {
        text::split(self.path, "{}").count() - 1
    }
}

/// A row with the common defaults: a JSON POST under the HTTP layer's retries only,
/// the client's timeout, a JSON answer.
const fn post(name: &'static str, path: &'static str) -> Endpoint {
    Endpoint {
        name,
        method: Method::Post,
        path,
        body: Body::Json,
        http_retries: HttpRetries::Client,
        retries: Retries::None,
        timeout: None,
        reply: Reply::Json,
        idempotency: Idempotency::PerSend,
    }
}

/// A GET under the holder's retries, answering JSON (every REST read).
const fn get(name: &'static str, path: &'static str) -> Endpoint {
    Endpoint {
        method: Method::Get,
        body: Body::None,
        retries: Retries::Transient,
        ..post(name, path)
    }
}

/// A REST mutation: a 409 is final, the answer is not needed.
const fn mutate(name: &'static str, method: Method, path: &'static str, body: Body) -> Endpoint {
    Endpoint {
        method,
        body,
        retries: Retries::ConflictFinal,
        reply: Reply::Any,
        ..post(name, path)
    }
}

/// A training operation: submitted under the holder's retries, answered by a future.
const fn training_op(
    name: &'static str,
    path: &'static str,
    http_retries: HttpRetries,
    request_type: &'static str,
) -> Endpoint {
    Endpoint {
        http_retries,
        retries: Retries::Transient,
        reply: Reply::Future {
            request_type,
            protobuf: false,
        },
        ..post(name, path)
    }
}

/// A pass over one chunk of a batch: a protobuf body, answered by a protobuf future of
/// `request_type` (`Forward` or `ForwardBackward`).
const fn forward_pass(request_type: &'static str) -> Endpoint {
    Endpoint {
        body: Body::Protobuf,
        reply: Reply::Future {
            request_type,
            protobuf: true,
        },
        ..training_op(
            "forward_backward",
            "/api/v1/forward_backward",
            HttpRetries::Client,
            request_type,
        )
    }
}

/// A checkpoint's publication: POST publishes, DELETE unpublishes (one telemetry name).
const fn publish(method: Method) -> Endpoint {
    mutate(
        "publish_checkpoint",
        method,
        "/api/v1/training_runs/{}/checkpoints/{}/publish",
        Body::None,
    )
}

// ---------------------------------------------------------------------------------
// Connection and session (Python `resources/service.py`, `lib/internal_client_holder.py`)

/// Server flags, fetched at start with the API key (the connection's own retry loop).
pub static CLIENT_CONFIG: Endpoint = Endpoint {
    retries: Retries::Transient,
    ..post("client_config", "/api/v1/client/config")
};
/// Dynamic server flags: at start (retried), then every `refresh_interval_sec` (sent
/// once; the next refresh is the retry, the last good flags stay).
pub static DYNAMIC_CONFIG: Endpoint = Endpoint {
    http_retries: HttpRetries::Never,
    retries: Retries::Transient,
    timeout: Some(Duration::from_secs(10)),
    ..post("dynamic_config", "/api/v1/client/dynamic_config")
};
/// A JWT for the API key.
pub static AUTH_TOKEN: Endpoint = post("auth_token", "/api/v1/auth/token");
/// A new session.
pub static CREATE_SESSION: Endpoint = post("create_session", "/api/v1/create_session");
/// The session's heartbeat, every 10 s.
pub static SESSION_HEARTBEAT: Endpoint = Endpoint {
    http_retries: HttpRetries::Never,
    retries: Retries::Loop,
    timeout: Some(Duration::from_secs(10)),
    reply: Reply::Any,
    ..post("session_heartbeat", "/api/v1/session_heartbeat")
};
/// Ends the session (`ServiceClient.close`).
pub static FINISH_SESSION: Endpoint = Endpoint {
    retries: Retries::Transient,
    reply: Reply::Any,
    ..post("finish_session", "/api/v1/sessions/{}/finish")
};
/// A batch of telemetry events.
pub static TELEMETRY: Endpoint = Endpoint {
    timeout: Some(Duration::from_secs(5)),
    reply: Reply::Any,
    ..post("telemetry", "/api/v1/telemetry")
};

// ---------------------------------------------------------------------------------
// Futures (Python `resources/futures.py`)

/// One future's result (see [`crate::future`]).
pub static RETRIEVE_FUTURE: Endpoint = Endpoint {
    http_retries: HttpRetries::Never,
    retries: Retries::Loop,
    timeout: Some(Duration::from_secs(45)),
    reply: Reply::Polled,
    ..post("retrieve_future", "/api/v1/retrieve_future")
};
/// The sampling session's completed futures (a long poll; 5 s when it only acks).
pub static RETRIEVE_FUTURES: Endpoint = Endpoint {
    http_retries: HttpRetries::Never,
    retries: Retries::Loop,
    timeout: Some(Duration::from_secs(45)),
    ..post("retrieve_futures", "/api/v1/retrieve_futures")
};
/// Stops the server's work on an abandoned sample.
pub static CANCEL_FUTURE: Endpoint = Endpoint {
    http_retries: HttpRetries::Never,
    retries: Retries::Transient,
    timeout: Some(Duration::from_secs(30)),
    reply: Reply::Any,
    ..post("cancel_future", "/api/v1/cancel_future")
};

// ---------------------------------------------------------------------------------
// Models and training (Python `resources/models.py`, `training.py`, `weights.py`)

/// A new LoRA training run (HTTP-layer retries only, as in Python).
pub static CREATE_MODEL: Endpoint = Endpoint {
    reply: Reply::Future {
        request_type: "CreateModel",
        protobuf: false,
    },
    ..post("create_model", "/api/v1/create_model")
};
/// A new training run from a checkpoint (create-via-load).
pub static CREATE_MODEL_FROM_STATE: Endpoint = training_op(
    "load_weights",
    "/api/v1/load_weights",
    HttpRetries::Client,
    "LoadWeights",
);
/// A training run's info.
pub static GET_INFO: Endpoint = Endpoint {
    retries: Retries::Transient,
    ..post("get_info", "/api/v1/get_info")
};
/// A forward and backward pass over one chunk.
pub static FORWARD_BACKWARD: Endpoint = forward_pass("ForwardBackward");
/// A forward pass over one chunk (the same endpoint, `forward_only` in the body).
pub static FORWARD: Endpoint = forward_pass("Forward");
/// An optimizer step.
pub static OPTIM_STEP: Endpoint = training_op(
    "OptimStep",
    "/api/v1/optim_step",
    HttpRetries::Client,
    "OptimStep",
);
/// Saves weights and optimizer state.
pub static SAVE_WEIGHTS: Endpoint = training_op(
    "SaveWeights",
    "/api/v1/save_weights",
    HttpRetries::Never,
    "SaveWeights",
);
/// Loads a checkpoint into a training run.
pub static LOAD_WEIGHTS: Endpoint = training_op(
    "LoadWeights",
    "/api/v1/load_weights",
    HttpRetries::Client,
    "LoadWeights",
);
/// Saves weights for sampling.
pub static SAVE_WEIGHTS_FOR_SAMPLER: Endpoint = training_op(
    "SaveWeightsForSampler",
    "/api/v1/save_weights_for_sampler",
    HttpRetries::Never,
    "SaveWeightsForSampler",
);
/// Exports weights in an external format.
pub static SAVE_WEIGHTS_EXTERNAL: Endpoint = training_op(
    "SaveWeightsExternal",
    "/api/v1/save_weights_external",
    HttpRetries::Never,
    "SaveWeightsExternal",
);

// ---------------------------------------------------------------------------------
// Sampling (Python `resources/sampling.py`, `service.py`)

/// A new sampling session (HTTP-layer retries only, as in Python).
pub static CREATE_SAMPLING_SESSION: Endpoint =
    post("create_sampling_session", "/api/v1/create_sampling_session");
/// A clone id for a client restored on a sampler.
pub static JOIN_SAMPLING_SESSION: Endpoint = Endpoint {
    retries: Retries::Transient,
    ..post("join_sampling_session", "/api/v1/join_sampling_session")
};
/// One sample request (a 429 is backpressure, answered by the caller's loop).
pub static ASAMPLE: Endpoint = Endpoint {
    http_retries: HttpRetries::Never,
    retries: Retries::Transient,
    reply: Reply::Future {
        request_type: "Sample",
        protobuf: true,
    },
    ..post("asample", "/api/v1/asample")
};
/// A sampler's base model and weights path.
pub static GET_SAMPLER: Endpoint = get("get_sampler", "/api/v1/samplers/{}");

// ---------------------------------------------------------------------------------
// REST (Python `lib/public_interfaces/rest_client.py`, `admin_client.py`)

/// Models the server offers.
pub static GET_SERVER_CAPABILITIES: Endpoint =
    get("get_server_capabilities", "/api/v1/get_server_capabilities");
/// One training run.
pub static GET_TRAINING_RUN: Endpoint = get("get_training_run", "/api/v1/training_runs/{}");
/// A page of training runs.
pub static LIST_TRAINING_RUNS: Endpoint = get("list_training_runs", "/api/v1/training_runs");
/// A training run's checkpoints.
pub static LIST_CHECKPOINTS: Endpoint =
    get("list_checkpoints", "/api/v1/training_runs/{}/checkpoints");
/// A page of the caller's checkpoints.
pub static LIST_USER_CHECKPOINTS: Endpoint = get("list_user_checkpoints", "/api/v1/checkpoints");
/// Deletes a checkpoint (run id, checkpoint id).
pub static DELETE_CHECKPOINT: Endpoint = mutate(
    "delete_checkpoint",
    Method::Delete,
    "/api/v1/training_runs/{}/checkpoints/{}",
    Body::None,
);
/// Makes a checkpoint public.
pub static PUBLISH_CHECKPOINT: Endpoint = publish(Method::Post);
/// Makes a checkpoint private again.
pub static UNPUBLISH_CHECKPOINT: Endpoint = publish(Method::Delete);
/// Sets or clears a checkpoint's time to live.
pub static SET_CHECKPOINT_TTL: Endpoint = mutate(
    "set_checkpoint_ttl",
    Method::Put,
    "/api/v1/training_runs/{}/checkpoints/{}/ttl",
    Body::Json,
);
/// Public information about a checkpoint (a POST whose 409 is final, as a mutation's).
pub static WEIGHTS_INFO: Endpoint = mutate(
    "weights_info",
    Method::Post,
    "/api/v1/weights_info",
    Body::Json,
);
/// Signed download URLs of an external-weights checkpoint (run id, checkpoint name).
pub static EXTERNAL_WEIGHTS_URLS: Endpoint = get(
    "external_weights_urls",
    "/api/v1/training_runs/{}/checkpoints/external_weights/{}/external_weights_urls",
);
/// Copies a checkpoint into a project.
pub static COPY_WEIGHTS: Endpoint = Endpoint {
    retries: Retries::Transient,
    idempotency: Idempotency::PerCall,
    ..post("copy_weights", "/api/v1/copy_weights")
};
/// One session.
pub static GET_SESSION: Endpoint = get("get_session", "/api/v1/sessions/{}");
/// A page of sessions.
pub static LIST_SESSIONS: Endpoint = get("list_sessions", "/api/v1/sessions");
/// Searches sessions.
pub static SEARCH_SESSIONS: Endpoint = mutate(
    "search_sessions",
    Method::Post,
    "/api/v1/sessions/search",
    Body::Json,
);
/// Moves a session into a project.
pub static ASSIGN_SESSION_PROJECT: Endpoint = mutate(
    "assign_session_project",
    Method::Put,
    "/api/v1/sessions/{}/project",
    Body::Json,
);
/// A session's trace export (polled until ready).
pub static TRACE_EXPORT: Endpoint = get("trace_export", "/api/v1/sessions/{}/trace_export");
/// The organisation's audit log.
pub static AUDIT_LOG: Endpoint = get("get_audit_log", "/api/v1/audit");
/// Billing usage events.
pub static BILLING_USAGE: Endpoint = get("get_billing_usage", "/api/v1/billing/usage/events");
/// Current checkpoint storage usage.
pub static CHECKPOINT_STORAGE_USAGE: Endpoint = get(
    "checkpoint_storage_usage",
    "/api/v1/billing/usage/checkpoints/current",
);

/// Every row, for the table's own checks.
pub static ALL: &[&Endpoint] = &[
    &CLIENT_CONFIG,
    &DYNAMIC_CONFIG,
    &AUTH_TOKEN,
    &CREATE_SESSION,
    &SESSION_HEARTBEAT,
    &FINISH_SESSION,
    &TELEMETRY,
    &RETRIEVE_FUTURE,
    &RETRIEVE_FUTURES,
    &CANCEL_FUTURE,
    &CREATE_MODEL,
    &CREATE_MODEL_FROM_STATE,
    &GET_INFO,
    &FORWARD_BACKWARD,
    &FORWARD,
    &OPTIM_STEP,
    &SAVE_WEIGHTS,
    &LOAD_WEIGHTS,
    &SAVE_WEIGHTS_FOR_SAMPLER,
    &SAVE_WEIGHTS_EXTERNAL,
    &CREATE_SAMPLING_SESSION,
    &JOIN_SAMPLING_SESSION,
    &ASAMPLE,
    &GET_SAMPLER,
    &GET_SERVER_CAPABILITIES,
    &GET_TRAINING_RUN,
    &LIST_TRAINING_RUNS,
    &LIST_CHECKPOINTS,
    &LIST_USER_CHECKPOINTS,
    &DELETE_CHECKPOINT,
    &PUBLISH_CHECKPOINT,
    &UNPUBLISH_CHECKPOINT,
    &SET_CHECKPOINT_TTL,
    &WEIGHTS_INFO,
    &EXTERNAL_WEIGHTS_URLS,
    &COPY_WEIGHTS,
    &GET_SESSION,
    &LIST_SESSIONS,
    &SEARCH_SESSIONS,
    &ASSIGN_SESSION_PROJECT,
    &TRACE_EXPORT,
    &AUDIT_LOG,
    &BILLING_USAGE,
    &CHECKPOINT_STORAGE_USAGE,
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_row_is_a_well_formed_api_path() {
        for e in ALL {
            assert!(e.path.starts_with("/api/v1/"), "{}", e.path);
            assert!(
                !e.path.contains("{}{}") && !e.path.ends_with('/'),
                "{}",
                e.path
            );
            // A GET has no body and repeats nothing but reads (Stainless sends no
            // idempotency key with it).
            if e.method == Method::Get {
                assert_eq!(e.body, Body::None, "{}", e.name);
                assert_eq!(e.idempotency, Idempotency::PerSend, "{}", e.name);
            }
        }
    }

    #[test]
    fn rows_differ_where_operations_differ() {
        // Two rows with one (method, path) must be different operations: different
        // future types or telemetry names (load_weights, forward, publish).
        for (i, a) in ALL.iter().enumerate() {
            for b in &ALL[i + 1..] {
                if a.method == b.method && a.path == b.path {
                    assert!(a.reply != b.reply || a.name != b.name, "{}", a.path);
                }
            }
        }
    }

    #[test]
    fn paths_fill_in_order() {
        assert_eq!(
            DELETE_CHECKPOINT.fill(&["run:train:0", "weights/x"]),
            "/api/v1/training_runs/run:train:0/checkpoints/weights/x"
        );
        assert_eq!(FINISH_SESSION.fill(&["s"]), "/api/v1/sessions/s/finish");
        assert_eq!(TELEMETRY.fill(&[]), "/api/v1/telemetry");
        assert_eq!(EXTERNAL_WEIGHTS_URLS.params(), 2);
    }

    #[test]
    #[should_panic(expected = "one argument per path parameter")]
    fn a_missing_path_argument_is_a_bug() {
        GET_SESSION.fill(&[]);
    }
}
