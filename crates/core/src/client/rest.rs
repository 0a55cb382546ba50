//! `RestClient`: training runs, checkpoints, sessions, samplers and weights, as in the
//! Python SDK 0.38 (`rest_client.py`, `admin_client.py`). Every call goes through the
//! holder's retries. Results are the server's JSON, unchanged (unknown fields kept).
//! List calls page by offset (runs, checkpoints, sessions) or cursor (session search);
//! [`Page`] says how to fetch the next page.

use std::rc::Rc;
use std::time::Duration;

use futures_util::future::LocalBoxFuture;

use crate::json;
use crate::json::Value;

use crate::call::{CallOptions, Guard};
use crate::endpoints::{self, Endpoint, Idempotency, Reply};
use crate::error::{Error, Result};
use crate::http::{jwt_claims, Credential, Req};
use crate::paths::{CheckpointType, TinkerPath};
use crate::platform::uuid4;
use crate::session::Holder;
use crate::types::InputError;

/// Who may see a listed resource.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AccessScope {
    /// Only the caller's.
    Owned,
    /// Everything the caller can access.
    Accessible,
}

impl AccessScope {
    /// The query value.
    pub fn as_str(self) -> &'static str {
        match self {
            AccessScope::Owned => "owned",
            AccessScope::Accessible => "accessible",
        }
    }
    /// Parses `owned` / `accessible`.
    pub fn parse(s: &str) -> Result<Self, InputError> {
        match s {
            "owned" => Ok(AccessScope::Owned),
            "accessible" => Ok(AccessScope::Accessible),
            other => Err(InputError::range_error(
                "access_scope",
                format!(
                    "must be \"owned\" or \"accessible\", got {}",
                    json::quote(other)
                ),
            )),
        }
    }
}

/// One page of a list call and how to get the next.
#[derive(Debug, Clone)]
pub struct Page {
    /// The items of this page.
    pub items: Vec<Value>,
    /// The whole response.
    pub raw: Value,
    /// The offset of the next page, if there is one (offset-paged lists).
    pub next_offset: Option<u64>,
    /// The cursor of the next page, if there is one (cursor-paged lists).
    pub next_cursor: Option<Value>,
}

/// Where the next page starts: a reported `total_count` decides; otherwise a full page
/// means there may be more.
pub fn next_offset(raw: &Value, offset: u64, limit: u64, items: usize) -> Option<u64> {
    let next = offset + items as u64;
    match raw
        .get("cursor")
        .and_then(|c| c.get("total_count"))
        .and_then(Value::as_u64)
    {
        Some(total) => (next < total && items > 0).then_some(next),
        None => (items as u64 >= limit && items > 0).then_some(next),
    }
}

/// REST access over a (usually session-less) holder.
#[derive(Clone)]
pub struct RestClient {
    holder: Rc<Holder>,
    /// The public method the calls are attributed to (`x-sdk-method`) when a call of
    /// another client or another `RestClient` method runs them: the outermost wins, as
    /// in the Python SDK's `with_sdk_method_telemetry`.
    outer_method: Option<&'static str>,
}

/// The page size of `list_training_runs` and `list_sessions` when none is given (Python's).
pub const DEFAULT_LIST_LIMIT: u64 = 20;
/// The page size of `list_user_checkpoints` when none is given (Python's).
pub const DEFAULT_CHECKPOINTS_LIMIT: u64 = 100;

fn check_limit(limit: u64, max: u64) -> Result<(), InputError> {
    if limit == 0 || limit > max {
        return Err(InputError::range_error(
            "limit",
            format!("must be between 1 and {max}, got {limit}"),
        ));
    }
    Ok(())
}

fn check_id(field: &str, v: &str) -> Result<(), InputError> {
    if v.is_empty() || v.bytes().any(|b| matches!(b, b'/' | b'?' | b'#')) {
        return Err(InputError::type_error(
            field,
            format!(
                "must be a non-empty id without '/', '?' or '#', got {}",
                json::quote(v)
            ),
        ));
    }
    Ok(())
}

/// `YYYY-MM-DD` with a month 01-12 and a day 01-31 (what Python's `date.isoformat()` sends).
fn is_iso_date(s: &str) -> bool {
    let b = s.as_bytes();
    let digits = |r: std::ops::Range<usize>| b[r].iter().all(u8::is_ascii_digit);
    let num = |r: std::ops::Range<usize>| b[r].iter().fold(0, |n, d| n * 10 + u32::from(d - b'0'));
    b.len() == 10
        && b[4] == b'-'
        && b[7] == b'-'
        && digits(0..4)
        && digits(5..7)
        && digits(8..10)
        && (1..=12).contains(&num(5..7))
        && (1..=31).contains(&num(8..10))
}

/// What a [`RestCall`] answers.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Answer {
    /// The response JSON.
    Json,
    /// Nothing (the call succeeded).
    Nothing,
    /// An offset-paged list whose items are under `key`.
    Page {
        key: &'static str,
        offset: u64,
        limit: u64,
    },
    /// A cursor-paged session search.
    Search,
    /// The `tinker_path` of a copy.
    CopiedPath,
    /// A trace export's URL, polled until ready.
    TraceUrl,
    /// The JWT's claims (no request).
    WhoAmI,
}

/// One REST call, checked and built before anything is sent; [`RestClient::call`] runs
/// it. Every REST method is a constructor here, so bad input fails before any request
/// (and every call shares one request state machine: issue 8's size budget). Its
/// endpoint row says how it is sent and retried.
#[derive(Debug, Clone)]
pub struct RestCall {
    /// The endpoint (`None`: answered without a request, `whoami`).
    endpoint: Option<&'static Endpoint>,
    /// The public method (`x-sdk-method`).
    method: &'static str,
    path: String,
    query: Vec<(String, String)>,
    body: Option<Value>,
    /// `X-Tinker-Weights-Access-Token` (copies).
    token: Option<String>,
    answer: Answer,
}

/// What a REST call answered.
#[derive(Debug, Clone)]
pub enum RestOutput {
    /// The server's JSON.
    Json(Value),
    /// One page of a list.
    Page(Page),
    /// A path or URL.
    Text(String),
    /// Nothing (success).
    Nothing,
}

impl RestOutput {
    /// The JSON answer (a page's whole response, text as a string, `null` for nothing).
    pub fn json(self) -> Value {
        match self {
            RestOutput::Json(v) => v,
            RestOutput::Page(p) => p.raw,
            RestOutput::Text(s) => Value::String(s),
            RestOutput::Nothing => Value::Null,
        }
    }
    /// The page, for list calls.
    pub fn page(self) -> Option<Page> {
        match self {
            RestOutput::Page(p) => Some(p),
            _ => None,
        }
    }
    /// The text, for calls that answer a path or URL.
    pub fn text(self) -> Option<String> {
        match self {
            RestOutput::Text(s) => Some(s),
            _ => None,
        }
    }
}

fn paging(limit: u64, offset: u64) -> Vec<(String, String)> {
    vec![
        ("limit".into(), limit.to_string()),
        ("offset".into(), offset.to_string()),
    ]
}

/// The run id and the checkpoint id of a `tinker://` path (the REST API's address of
/// a checkpoint).
fn checkpoint_ids(path: &str) -> Result<(String, String)> {
    let p = TinkerPath::parse(path)?;
    let id = p.checkpoint_id();
    Ok((p.training_run_id, id))
}

impl RestCall {
    /// A call to `ep` at `path` (its parameters filled in) answering JSON, or nothing
    /// for mutations.
    fn at(ep: &'static Endpoint, method: &'static str, args: &[&str]) -> Self {
        RestCall {
            endpoint: Some(ep),
            method,
            path: ep.fill(args),
            query: vec![],
            body: None,
            token: None,
            answer: if ep.reply == Reply::Any {
                Answer::Nothing
            } else {
                Answer::Json
            },
        }
    }
    /// A call to a checkpoint's `ep` (its run and checkpoint ids from `path`).
    fn checkpoint(ep: &'static Endpoint, method: &'static str, path: &str) -> Result<Self> {
        let (run, checkpoint) = checkpoint_ids(path)?;
        Ok(Self::at(ep, method, &[&run, &checkpoint]))
    }
    fn query(mut self, q: Vec<(String, String)>) -> Self {
        self.query = q;
        self
    }
    fn body(mut self, b: Value) -> Self {
        self.body = Some(b);
        self
    }
    fn answer(mut self, a: Answer) -> Self {
        self.answer = a;
        self
    }
    fn scope(self, s: AccessScope) -> Self {
        self.query(vec![("access_scope".into(), s.as_str().into())])
    }

    /// Models the server offers.
    pub fn get_server_capabilities() -> Self {
        Self::at(
            &endpoints::GET_SERVER_CAPABILITIES,
            "RestClient.get_server_capabilities",
            &[],
        )
    }

    /// One training run.
    pub fn get_training_run(training_run_id: &str, scope: AccessScope) -> Result<Self> {
        check_id("training_run_id", training_run_id)?;
        Ok(Self::at(
            &endpoints::GET_TRAINING_RUN,
            "RestClient.get_training_run",
            &[training_run_id],
        )
        .scope(scope))
    }

    /// The training run a `tinker://` path belongs to.
    pub fn get_training_run_by_tinker_path(path: &str, scope: AccessScope) -> Result<Self> {
        let p = TinkerPath::parse(path)?;
        let mut c = Self::get_training_run(&p.training_run_id, scope)?;
        c.method = "RestClient.get_training_run_by_tinker_path";
        Ok(c)
    }

    /// A page of training runs (newest first).
    pub fn list_training_runs(
        limit: u64,
        offset: u64,
        scope: AccessScope,
        project_id: Option<&str>,
    ) -> Result<Self> {
        check_limit(limit, 1000)?;
        let mut q = paging(limit, offset);
        q.push(("access_scope".into(), scope.as_str().into()));
        if let Some(p) = project_id {
            q.push(("project_id".into(), p.into()));
        }
        Ok(Self::at(
            &endpoints::LIST_TRAINING_RUNS,
            "RestClient.list_training_runs",
            &[],
        )
        .query(q)
        .answer(Answer::Page {
            key: "training_runs",
            offset,
            limit,
        }))
    }

    /// Checkpoints of one training run.
    pub fn list_checkpoints(training_run_id: &str) -> Result<Self> {
        check_id("training_run_id", training_run_id)?;
        Ok(Self::at(
            &endpoints::LIST_CHECKPOINTS,
            "RestClient.list_checkpoints",
            &[training_run_id],
        ))
    }

    /// A page of all the caller's checkpoints (newest first).
    pub fn list_user_checkpoints(limit: u64, offset: u64) -> Result<Self> {
        check_limit(limit, 1000)?;
        Ok(Self::at(
            &endpoints::LIST_USER_CHECKPOINTS,
            "RestClient.list_user_checkpoints",
            &[],
        )
        .query(paging(limit, offset))
        .answer(Answer::Page {
            key: "checkpoints",
            offset,
            limit,
        }))
    }

    /// Deletes a checkpoint.
    pub fn delete_checkpoint(path: &str) -> Result<Self> {
        Self::checkpoint(
            &endpoints::DELETE_CHECKPOINT,
            "RestClient.delete_checkpoint_from_tinker_path",
            path,
        )
    }

    /// Makes a checkpoint public (`true`) or private (`false`).
    pub fn set_published(path: &str, public: bool) -> Result<Self> {
        if public {
            Self::checkpoint(
                &endpoints::PUBLISH_CHECKPOINT,
                "RestClient.publish_checkpoint_from_tinker_path",
                path,
            )
        } else {
            Self::checkpoint(
                &endpoints::UNPUBLISH_CHECKPOINT,
                "RestClient.unpublish_checkpoint_from_tinker_path",
                path,
            )
        }
    }

    /// Sets (or, with `None`, removes) a checkpoint's time to live.
    pub fn set_checkpoint_ttl(path: &str, ttl_seconds: Option<u64>) -> Result<Self> {
        if ttl_seconds == Some(0) {
            return Err(InputError::range_error(
                "ttl_seconds",
                "must be positive (or null to remove the expiry)",
            )
            .into());
        }
        Ok(Self::checkpoint(
            &endpoints::SET_CHECKPOINT_TTL,
            "RestClient.set_checkpoint_ttl_from_tinker_path",
            path,
        )?
        .body(json!({ "ttl_seconds": ttl_seconds })))
    }

    /// Public information about any readable checkpoint.
    pub fn get_weights_info(path: &str) -> Result<Self> {
        TinkerPath::parse(path)?;
        Ok(Self::at(
            &endpoints::WEIGHTS_INFO,
            "RestClient.get_weights_info_by_tinker_path",
            &[],
        )
        .body(json!({ "tinker_path": path }))
        .answer(Answer::Json))
    }

    /// Signed per-file download URLs of an `external_weights` checkpoint.
    pub fn get_external_weights_urls(path: &str) -> Result<Self> {
        let p = TinkerPath::parse(path)?;
        if p.checkpoint_type != CheckpointType::External {
            return Err(InputError::type_error("path", format!("get_external_weights_urls only accepts external weights checkpoints (tinker://<run>/external_weights/<name>), got {}", json::quote(path))).into());
        }
        Ok(Self::at(
            &endpoints::EXTERNAL_WEIGHTS_URLS,
            "RestClient.get_external_weights_urls",
            &[&p.training_run_id, &p.name],
        ))
    }

    /// Copies a checkpoint into a project (answers the copy's path). One idempotency
    /// key covers every retry.
    pub fn copy_weights(
        path: &str,
        destination_project_id: &str,
        ttl_seconds: Option<u64>,
        weights_access_token: Option<&str>,
    ) -> Result<Self> {
        TinkerPath::parse(path)?;
        if destination_project_id.is_empty() {
            return Err(InputError::type_error(
                "destination_project_id",
                "provide destination_project_id (or set projectId / TINKER_PROJECT_ID)",
            )
            .into());
        }
        let mut body =
            json!({ "source_path": path, "destination_project_id": destination_project_id });
        if let Some(t) = ttl_seconds {
            body["ttl_seconds"] = t.into();
        }
        let mut c = Self::at(&endpoints::COPY_WEIGHTS, "RestClient.copy_weights", &[])
            .body(body)
            .answer(Answer::CopiedPath);
        c.token = weights_access_token.map(str::to_string);
        Ok(c)
    }

    /// One session: its training runs and samplers.
    pub fn get_session(session_id: &str, scope: AccessScope) -> Result<Self> {
        check_id("session_id", session_id)?;
        Ok(Self::at(
            &endpoints::GET_SESSION,
            "RestClient.get_session",
            &[session_id],
        )
        .scope(scope))
    }

    /// A page of session ids.
    pub fn list_sessions(limit: u64, offset: u64, scope: AccessScope) -> Result<Self> {
        check_limit(limit, 1000)?;
        let mut q = paging(limit, offset);
        q.push(("access_scope".into(), scope.as_str().into()));
        Ok(
            Self::at(&endpoints::LIST_SESSIONS, "RestClient.list_sessions", &[])
                .query(q)
                .answer(Answer::Page {
                    key: "sessions",
                    offset,
                    limit,
                }),
        )
    }

    /// Searches sessions (experimental); `request` is the wire body, `cursor` the
    /// previous page's `next_cursor`.
    pub fn search_sessions(mut request: Value, cursor: Option<Value>) -> Result<Self> {
        if !request.is_object() {
            return Err(InputError::type_error("request", "must be an object").into());
        }
        let limit = request.get("limit").and_then(Value::as_u64).unwrap_or(50);
        check_limit(limit, 200)?;
        request["limit"] = limit.into();
        if request.get("owner").is_none() {
            request["owner"] = json!({ "type": "own" });
        }
        if request.get("user_metadata").is_none() {
            request["user_metadata"] = json!({});
        }
        if let Some(c) = cursor {
            request["cursor"] = c;
        }
        Ok(Self::at(
            &endpoints::SEARCH_SESSIONS,
            "RestClient.search_sessions",
            &[],
        )
        .body(request)
        .answer(Answer::Search))
    }

    /// Moves a session into a project.
    pub fn assign_session_project(session_id: &str, project_id: &str) -> Result<Self> {
        check_id("session_id", session_id)?;
        check_id("project_id", project_id)?;
        Ok(Self::at(
            &endpoints::ASSIGN_SESSION_PROJECT,
            "RestClient.assign_session_project",
            &[session_id],
        )
        .body(json!({ "project_id": project_id })))
    }

    /// Exports a session's Perfetto trace; polls every 5 s until ready; answers its URL.
    pub fn export_session_trace(session_id: &str) -> Result<Self> {
        check_id("session_id", session_id)?;
        Ok(Self::at(
            &endpoints::TRACE_EXPORT,
            "RestClient.export_session_trace",
            &[session_id],
        )
        .answer(Answer::TraceUrl))
    }

    /// One sampler: its base model and weights path.
    pub fn get_sampler(sampler_id: &str) -> Result<Self> {
        check_id("sampler_id", sampler_id)?;
        Ok(Self::at(
            &endpoints::GET_SAMPLER,
            "RestClient.get_sampler",
            &[sampler_id],
        ))
    }

    /// The organisation's audit log (admins).
    pub fn get_audit_log(event_type: &str, day: Option<&str>) -> Result<Self> {
        if !matches!(
            event_type,
            "all" | "checkpoints" | "projects" | "teams" | "organizations"
        ) {
            return Err(InputError::range_error(
                "event_type",
                format!(
                    "must be all, checkpoints, projects, teams or organizations, got {}",
                    json::quote(event_type)
                ),
            )
            .into());
        }
        let mut q = vec![("event_type".into(), event_type.into())];
        if let Some(d) = day {
            if !is_iso_date(d) {
                return Err(InputError::range_error(
                    "day",
                    format!("must be a date like \"2026-01-15\", got {}", json::quote(d)),
                )
                .into());
            }
            q.push(("day".into(), d.into()));
        }
        Ok(Self::at(&endpoints::AUDIT_LOG, "AdminClient.get_audit_log", &[]).query(q))
    }

    /// Billing usage events between two RFC 3339 times.
    pub fn get_billing_usage(starting_on: &str, ending_before: &str) -> Self {
        Self::at(
            &endpoints::BILLING_USAGE,
            "AdminClient.get_billing_usage",
            &[],
        )
        .query(vec![
            ("starting_on".into(), starting_on.into()),
            ("ending_before".into(), ending_before.into()),
        ])
    }

    /// Current checkpoint storage usage.
    pub fn get_current_checkpoint_storage_usage(project_id: Option<&str>) -> Self {
        Self::at(
            &endpoints::CHECKPOINT_STORAGE_USAGE,
            "AdminClient.get_current_checkpoint_storage_usage",
            &[],
        )
        .query(
            project_id
                .map(|p| vec![("project_id".to_string(), p.to_string())])
                .unwrap_or_default(),
        )
    }

    /// Who the credentials belong to, from the held JWT's claims (no request).
    pub fn whoami() -> Self {
        RestCall {
            endpoint: None,
            method: "RestClient.whoami",
            path: String::new(),
            query: vec![],
            body: None,
            token: None,
            answer: Answer::WhoAmI,
        }
    }
}

impl RestClient {
    /// A REST client over `holder`.
    pub fn new(holder: Rc<Holder>) -> Self {
        RestClient {
            holder,
            outer_method: None,
        }
    }

    /// This client with its calls attributed to `method` (unless already attributed to
    /// an outer one).
    pub fn attributed_to(&self, method: &'static str) -> RestClient {
        RestClient {
            holder: self.holder.clone(),
            outer_method: Some(self.outer_method.unwrap_or(method)),
        }
    }

    /// The holder.
    pub fn holder(&self) -> &Rc<Holder> {
        &self.holder
    }

    /// Runs `c` under the holder's retries.
    pub fn call(&self, c: RestCall) -> LocalBoxFuture<'static, Result<RestOutput>> {
        self.call_with(c, CallOptions::default())
    }

    /// Runs `c` under the holder's retries and the call's options: its abort signal and
    /// timeout stop it wherever it is (a REST call is one request, as in openai-node),
    /// its retry count and headers go on its request.
    pub fn call_with(
        &self,
        c: RestCall,
        opts: CallOptions,
    ) -> LocalBoxFuture<'static, Result<RestOutput>> {
        let me = self.clone();
        Box::pin(async move {
            let guard = Guard::new(me.holder.env(), &opts, c.method);
            let r = guard.run(me.run(c, &guard)).await;
            me.holder.reported(r).await
        })
    }

    async fn run(&self, c: RestCall, guard: &Guard) -> Result<RestOutput> {
        let Some(ep) = c.endpoint else {
            return self.whoami().await.map(RestOutput::Json);
        };
        self.holder.ensure_open()?;
        loop {
            let raw = self.fetch(ep, &c, guard).await?;
            if let Some(out) = read_answer(c.answer, raw, &c.path)? {
                return Ok(out);
            }
            // A trace export not ready yet: ask again in 5 s.
            self.holder.env().sleep(TRACE_POLL).await;
        }
    }

    /// Sends `c` to `ep` under its row's retries; the answer as JSON (`null` for an
    /// empty or non-JSON answer to a mutation). A copy keeps one idempotency key
    /// across its retries.
    async fn fetch(&self, ep: &'static Endpoint, c: &RestCall, guard: &Guard) -> Result<Value> {
        let h = &self.holder;
        let method = self.outer_method.unwrap_or(c.method);
        let mut req = Req::at_path(ep, c.path.clone())
            .method_name(Some(method))
            .under(guard);
        req.query = c.query.clone();
        if let Some(b) = &c.body {
            req = req.json(b);
        }
        if let Some(t) = &c.token {
            req = req.header("X-Tinker-Weights-Access-Token", t.clone());
        }
        if ep.idempotency == Idempotency::PerCall {
            req.idempotency_key = Some(uuid4(&**h.env()));
        }
        match ep.reply {
            Reply::Any => {
                let r = h.send(req).await?;
                Ok(json::from_slice(&r.body).unwrap_or(Value::Null))
            }
            _ => h.json_value(req).await,
        }
    }

    /// Who the credentials belong to, from the held JWT's claims (no request).
    async fn whoami(&self) -> Result<Value> {
        let jwt = match self.holder.http().credential() {
            Credential::Jwt(j) => j.get_token().await?,
            Credential::Key(k) if k.starts_with("eyJ") && jwt_claims(k).ok().and_then(|c| c.get("iss").and_then(Value::as_str).map(|s| s.starts_with("passport-"))).unwrap_or(false) => k.clone(),
            _ => return Err(Error::Closed { message: "whoami needs a JWT: the server has JWT auth disabled and a plain API key is in use".into() }),
        };
        let c = jwt_claims(&jwt).map_err(|m| Error::InvalidResponse { message: m })?;
        let org = c.get("org_id").and_then(|v| {
            v.as_str()
                .map(str::to_string)
                .or_else(|| v.as_i64().map(|n| n.to_string()))
        });
        Ok(json!({
            "user_urn": c.get("sub").cloned().unwrap_or(Value::Null),
            "org_urn": org.map(|o| format!("tml:organization:{o}")),
            "email": c.get("email").and_then(Value::as_str).filter(|e| !e.is_empty()),
        }))
    }
}

/// How long a trace export waits before asking again.
const TRACE_POLL: Duration = Duration::from_secs(5);

/// What a call answered, read as its [`Answer`] says; `None` while a trace export is
/// not ready.
fn read_answer(answer: Answer, raw: Value, path: &str) -> Result<Option<RestOutput>> {
    Ok(Some(match answer {
        Answer::Json | Answer::WhoAmI => RestOutput::Json(raw),
        Answer::Nothing => RestOutput::Nothing,
        Answer::Page { key, offset, limit } => {
            RestOutput::Page(offset_page(raw, key, offset, limit))
        }
        Answer::Search => {
            let items = raw
                .get("sessions")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            let next_cursor = raw.get("next_cursor").filter(|c| !c.is_null()).cloned();
            RestOutput::Page(Page {
                items,
                raw,
                next_offset: None,
                next_cursor,
            })
        }
        Answer::CopiedPath => RestOutput::Text(
            raw.get("tinker_path")
                .and_then(Value::as_str)
                .map(str::to_string)
                .ok_or_else(|| Error::InvalidResponse {
                    message: format!("copy_weights response without tinker_path: {raw}"),
                })?,
        ),
        Answer::TraceUrl => return trace_url(&raw, path),
    }))
}

/// A trace export's URL once ready, an error once failed, `None` before.
fn trace_url(raw: &Value, path: &str) -> Result<Option<RestOutput>> {
    match raw.get("status").and_then(Value::as_str) {
        Some("ready") => Ok(Some(RestOutput::Text(
            raw.get("url")
                .and_then(Value::as_str)
                .map(str::to_string)
                .ok_or_else(|| Error::InvalidResponse {
                    message: "trace export ready without url".into(),
                })?,
        ))),
        Some("failed") => {
            let session = path.rsplit('/').nth(1).unwrap_or_default();
            Err(Error::RequestFailed {
                message: format!(
                    "Trace export failed for session {session}: {}",
                    raw.get("error").map(Value::to_string).unwrap_or_default()
                ),
                request_id: session.into(),
                category: crate::error::ErrorCategory::Unknown,
            })
        }
        _ => Ok(None),
    }
}

fn offset_page(raw: Value, key: &str, offset: u64, limit: u64) -> Page {
    let items = raw
        .get(key)
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let next_offset = next_offset(&raw, offset, limit, items.len());
    Page {
        items,
        raw,
        next_offset,
        next_cursor: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paging_rules() {
        assert_eq!(
            next_offset(&json!({"cursor": {"total_count": 45}}), 20, 20, 20),
            Some(40)
        );
        assert_eq!(
            next_offset(&json!({"cursor": {"total_count": 40}}), 20, 20, 20),
            None
        );
        assert_eq!(
            next_offset(&json!({}), 0, 20, 20),
            Some(20),
            "a full page without a total may have more"
        );
        assert_eq!(next_offset(&json!({}), 20, 20, 3), None);
        assert_eq!(next_offset(&json!({}), 0, 20, 0), None);
    }

    #[test]
    fn audit_log_days() {
        for ok in ["2026-01-15", "1999-12-31"] {
            assert!(is_iso_date(ok), "{ok}");
        }
        for bad in [
            "",
            "2026-1-15",
            "2026-13-01",
            "2026-01-00",
            "2026/01/15",
            "2026-01-15T00:00:00Z",
            "２０２６-01-15",
            "abcd-ef-gh",
        ] {
            assert!(!is_iso_date(bad), "{bad}");
        }
    }
}
