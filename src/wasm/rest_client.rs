//! `RestClient`: training runs, checkpoints, sessions and samplers (no session needed).

use std::rc::Rc;

use js_sys::{Object, Promise};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use super::client_options::client_options;
use super::common::*;
use crate::error::Error;
use crate::rest::{AccessScope, Page, RestCall, RestOutput};
use crate::session::FinishStatus;
use crate::wasm::convert::{self, describe};
use crate::wasm::errors::{input_error, json_to_js, range_error, type_error};
use crate::wasm::params;
use crate::wasm::platform::JsPlatform;

pub(super) enum RestSource {
    Service(crate::service::ServiceClient),
    Own(crate::service::ServiceClient),
}

/// Training runs, checkpoints, sessions and samplers (no session needed).
#[wasm_bindgen]
pub struct RestClient {
    pub(super) source: RestSource,
}

fn page_to_js(p: Page) -> JsValue {
    let o = Object::new();
    set(
        &o,
        "items",
        &json_to_js(&crate::json::Value::Array(p.items)),
    );
    set(&o, "response", &json_to_js(&p.raw));
    set(
        &o,
        "nextOffset",
        &p.next_offset
            .map_or(JsValue::NULL, |n| JsValue::from_f64(n as f64)),
    );
    set(
        &o,
        "nextCursor",
        &p.next_cursor.as_ref().map_or(JsValue::NULL, json_to_js),
    );
    o.into()
}

/// The `access_scope` parameter ('owned' when absent).
fn scope(s: Option<String>) -> Result<AccessScope, JsValue> {
    s.map_or(Ok(AccessScope::Owned), |s| {
        AccessScope::parse(&s).map_err(|e| input_error(&e))
    })
}

impl RestClient {
    fn service(&self) -> crate::service::ServiceClient {
        match &self.source {
            RestSource::Service(s) | RestSource::Own(s) => s.clone(),
        }
    }

    /// Runs a checked call once connected, under its request options (`method` names
    /// them in errors): one state machine behind every REST method.
    fn run(&self, options: &JsValue, method: &str, call: Result<RestCall, Error>) -> Promise {
        let call = try_or_reject!(call.map_err(core_err));
        let opts = try_or_reject!(convert::request_options(options, method));
        let s = self.service();
        to_promise(Box::pin(async move {
            let rest = s.rest_client().await.map_err(core_err)?;
            // `opts` lives until the call ends (it holds the signal's listener).
            let out = rest.call_with(call, opts.options.clone()).await;
            drop(opts);
            Ok(match out.map_err(core_err)? {
                RestOutput::Json(v) => json_to_js(&v),
                RestOutput::Page(p) => page_to_js(p),
                RestOutput::Text(t) => JsValue::from_str(&t),
                RestOutput::Nothing => JsValue::UNDEFINED,
            })
        }))
    }
}

#[wasm_bindgen]
impl RestClient {
    /// A REST client with its own credentials (same options as `ServiceClient`).
    #[wasm_bindgen(constructor)]
    pub fn new(
        #[wasm_bindgen(unchecked_optional_param_type = "ClientOptions")] options: JsValue,
    ) -> Result<RestClient, JsValue> {
        let (opts, fetch) = client_options(&options, "RestClient options")?;
        let env = Rc::new(JsPlatform::new(fetch)?);
        let s = crate::service::ServiceClient::new(env, opts).map_err(core_err)?;
        Ok(RestClient {
            source: RestSource::Own(s),
        })
    }

    /// Models the server offers.
    #[wasm_bindgen(js_name = getServerCapabilities, unchecked_return_type = "Promise<ServerCapabilities>")]
    pub fn get_server_capabilities(
        &self,
        #[wasm_bindgen(unchecked_optional_param_type = "RequestOptions")] options: JsValue,
    ) -> Promise {
        self.run(
            &options,
            "getServerCapabilities",
            Ok(RestCall::get_server_capabilities()),
        )
    }

    /// One training run.
    #[wasm_bindgen(js_name = getTrainingRun, unchecked_return_type = "Promise<TrainingRun>")]
    pub fn get_training_run(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] training_run_id: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "AccessScopeParams")] params: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "RequestOptions")] options: JsValue,
    ) -> Promise {
        let id = try_or_reject!(string_arg(&training_run_id, "training_run_id"));
        let p = try_or_reject!(params::AccessScopeParams::read_as(
            &params,
            "getTrainingRun params"
        ));
        let sc = try_or_reject!(scope(p.access_scope));
        self.run(
            &options,
            "getTrainingRun",
            RestCall::get_training_run(&id, sc),
        )
    }

    /// The training run of a `tinker://` path.
    #[wasm_bindgen(js_name = getTrainingRunByTinkerPath, unchecked_return_type = "Promise<TrainingRun>")]
    pub fn get_training_run_by_tinker_path(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] path: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "AccessScopeParams")] params: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "RequestOptions")] options: JsValue,
    ) -> Promise {
        let path = try_or_reject!(string_arg(&path, "path"));
        let p = try_or_reject!(params::AccessScopeParams::read_as(
            &params,
            "getTrainingRunByTinkerPath params"
        ));
        let sc = try_or_reject!(scope(p.access_scope));
        self.run(
            &options,
            "getTrainingRunByTinkerPath",
            RestCall::get_training_run_by_tinker_path(&path, sc),
        )
    }

    /// One page of training runs: `{ items, response, nextOffset }`.
    #[wasm_bindgen(js_name = listTrainingRunsPage, unchecked_return_type = "Promise<Page<TrainingRun>>")]
    pub fn list_training_runs_page(
        &self,
        #[wasm_bindgen(unchecked_optional_param_type = "ListTrainingRunsParams")] params: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "RequestOptions")] options: JsValue,
    ) -> Promise {
        // The core's defaults; the core checks the ranges.
        let p = try_or_reject!(params::ListTrainingRunsParams::read(&params));
        let (limit, offset, sc, project) = (
            p.limit.unwrap_or(crate::rest::DEFAULT_LIST_LIMIT),
            p.offset.unwrap_or(0),
            try_or_reject!(scope(p.access_scope)),
            p.project_id,
        );
        self.run(
            &options,
            "listTrainingRunsPage",
            RestCall::list_training_runs(limit, offset, sc, project.as_deref()),
        )
    }

    /// The checkpoints of one training run.
    #[wasm_bindgen(js_name = listCheckpoints, unchecked_return_type = "Promise<CheckpointsListResponse>")]
    pub fn list_checkpoints(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] training_run_id: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "RequestOptions")] options: JsValue,
    ) -> Promise {
        let id = try_or_reject!(string_arg(&training_run_id, "training_run_id"));
        self.run(&options, "listCheckpoints", RestCall::list_checkpoints(&id))
    }

    /// One page of all the caller's checkpoints: `{ items, response, nextOffset }`.
    #[wasm_bindgen(js_name = listUserCheckpointsPage, unchecked_return_type = "Promise<Page<Checkpoint>>")]
    pub fn list_user_checkpoints_page(
        &self,
        #[wasm_bindgen(unchecked_optional_param_type = "ListUserCheckpointsParams")]
        params: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "RequestOptions")] options: JsValue,
    ) -> Promise {
        let p = try_or_reject!(params::ListUserCheckpointsParams::read(&params));
        let (limit, offset) = (
            p.limit.unwrap_or(crate::rest::DEFAULT_CHECKPOINTS_LIMIT),
            p.offset.unwrap_or(0),
        );
        self.run(
            &options,
            "listUserCheckpointsPage",
            RestCall::list_user_checkpoints(limit, offset),
        )
    }

    /// Deletes a checkpoint.
    #[wasm_bindgen(js_name = deleteCheckpointFromTinkerPath, unchecked_return_type = "Promise<void>")]
    pub fn delete_checkpoint(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] path: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "RequestOptions")] options: JsValue,
    ) -> Promise {
        let path = try_or_reject!(string_arg(&path, "path"));
        self.run(
            &options,
            "deleteCheckpointFromTinkerPath",
            RestCall::delete_checkpoint(&path),
        )
    }

    /// Makes a checkpoint public.
    #[wasm_bindgen(js_name = publishCheckpointFromTinkerPath, unchecked_return_type = "Promise<void>")]
    pub fn publish_checkpoint(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] path: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "RequestOptions")] options: JsValue,
    ) -> Promise {
        let path = try_or_reject!(string_arg(&path, "path"));
        self.run(
            &options,
            "publishCheckpointFromTinkerPath",
            RestCall::set_published(&path, true),
        )
    }

    /// Makes a checkpoint private.
    #[wasm_bindgen(js_name = unpublishCheckpointFromTinkerPath, unchecked_return_type = "Promise<void>")]
    pub fn unpublish_checkpoint(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] path: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "RequestOptions")] options: JsValue,
    ) -> Promise {
        let path = try_or_reject!(string_arg(&path, "path"));
        self.run(
            &options,
            "unpublishCheckpointFromTinkerPath",
            RestCall::set_published(&path, false),
        )
    }

    /// Sets a checkpoint's time to live in seconds (`null` removes the expiry).
    #[wasm_bindgen(js_name = setCheckpointTtlFromTinkerPath, unchecked_return_type = "Promise<void>")]
    pub fn set_checkpoint_ttl(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] path: JsValue,
        #[wasm_bindgen(unchecked_param_type = "SetCheckpointTtlParams")] params: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "RequestOptions")] options: JsValue,
    ) -> Promise {
        let path = try_or_reject!(string_arg(&path, "path"));
        try_or_reject!(crate::paths::TinkerPath::parse(&path).map_err(|e| input_error(&e)));
        let p = try_or_reject!(params::SetCheckpointTtlParams::read(&params));
        let ttl = match p.ttl_seconds {
            None => None,
            Some(ttl_seconds) => match ttl_seconds.as_f64() {
                Some(t) if t.fract() == 0.0 && t > 0.0 => Some(t as u64),
                _ => {
                    return reject(range_error(
                        "ttl_seconds",
                        format!(
                            "must be a positive integer or null, got {}",
                            describe(&ttl_seconds)
                        ),
                    ))
                }
            },
        };
        self.run(
            &options,
            "setCheckpointTtlFromTinkerPath",
            RestCall::set_checkpoint_ttl(&path, ttl),
        )
    }

    /// Public information about a checkpoint (base model, LoRA rank, …).
    #[wasm_bindgen(js_name = getWeightsInfoByTinkerPath, unchecked_return_type = "Promise<WeightsInfo>")]
    pub fn get_weights_info(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] path: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "RequestOptions")] options: JsValue,
    ) -> Promise {
        let path = try_or_reject!(string_arg(&path, "path"));
        self.run(
            &options,
            "getWeightsInfoByTinkerPath",
            RestCall::get_weights_info(&path),
        )
    }

    /// Signed download URLs of an `external_weights` checkpoint's files.
    #[wasm_bindgen(js_name = getExternalWeightsUrls, unchecked_return_type = "Promise<ExternalWeightsUrls>")]
    pub fn get_external_weights_urls(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] path: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "RequestOptions")] options: JsValue,
    ) -> Promise {
        let path = try_or_reject!(string_arg(&path, "path"));
        self.run(
            &options,
            "getExternalWeightsUrls",
            RestCall::get_external_weights_urls(&path),
        )
    }

    /// Copies a checkpoint into a project; resolves to the copy's path.
    #[wasm_bindgen(js_name = copyWeights, unchecked_return_type = "Promise<string>")]
    pub fn copy_weights(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] path: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "RestCopyWeightsParams")] params: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "RequestOptions")] options: JsValue,
    ) -> Promise {
        let path = try_or_reject!(string_arg(&path, "path"));
        try_or_reject!(crate::paths::TinkerPath::parse(&path).map_err(|e| input_error(&e)));
        let p = try_or_reject!(params::RestCopyWeightsParams::read(&params));
        let project = p
            .destination_project_id
            .or_else(|| env_var("TINKER_PROJECT_ID"));
        let Some(project) = project else {
            return reject(type_error(
                "destination_project_id",
                "provide destination_project_id or set TINKER_PROJECT_ID",
            ));
        };
        let (ttl, token) = (p.ttl_seconds, p.weights_access_token);
        self.run(
            &options,
            "copyWeights",
            RestCall::copy_weights(&path, &project, ttl, token.as_deref()),
        )
    }

    /// One session: its training runs and samplers.
    #[wasm_bindgen(js_name = getSession, unchecked_return_type = "Promise<SessionInfo>")]
    pub fn get_session(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] session_id: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "AccessScopeParams")] params: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "RequestOptions")] options: JsValue,
    ) -> Promise {
        let id = try_or_reject!(string_arg(&session_id, "session_id"));
        let p = try_or_reject!(params::AccessScopeParams::read_as(
            &params,
            "getSession params"
        ));
        let sc = try_or_reject!(scope(p.access_scope));
        self.run(&options, "getSession", RestCall::get_session(&id, sc))
    }

    /// One page of session ids: `{ items, response, nextOffset }`.
    #[wasm_bindgen(js_name = listSessionsPage, unchecked_return_type = "Promise<Page<string>>")]
    pub fn list_sessions_page(
        &self,
        #[wasm_bindgen(unchecked_optional_param_type = "ListSessionsParams")] params: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "RequestOptions")] options: JsValue,
    ) -> Promise {
        let p = try_or_reject!(params::ListSessionsParams::read(&params));
        let (limit, offset, sc) = (
            p.limit.unwrap_or(crate::rest::DEFAULT_LIST_LIMIT),
            p.offset.unwrap_or(0),
            try_or_reject!(scope(p.access_scope)),
        );
        self.run(
            &options,
            "listSessionsPage",
            RestCall::list_sessions(limit, offset, sc),
        )
    }

    /// One page of a session search (experimental): `{ items, response, nextCursor }`.
    #[wasm_bindgen(js_name = searchSessionsPage, unchecked_return_type = "Promise<Page<SessionSummary>>")]
    pub fn search_sessions_page(
        &self,
        #[wasm_bindgen(unchecked_optional_param_type = "SessionSearchRequest")] request: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "unknown")] cursor: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "RequestOptions")] options: JsValue,
    ) -> Promise {
        let req = if request.is_undefined() {
            crate::json!({})
        } else {
            try_or_reject!(convert::to_json(&request, "request"))
        };
        let cursor = if cursor.is_undefined() || cursor.is_null() {
            None
        } else {
            Some(try_or_reject!(convert::to_json(&cursor, "cursor")))
        };
        self.run(
            &options,
            "searchSessionsPage",
            RestCall::search_sessions(req, cursor),
        )
    }

    /// Moves a session into a project.
    #[wasm_bindgen(js_name = assignSessionProject, unchecked_return_type = "Promise<void>")]
    pub fn assign_session_project(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] session_id: JsValue,
        #[wasm_bindgen(unchecked_param_type = "AssignSessionProjectParams")] params: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "RequestOptions")] options: JsValue,
    ) -> Promise {
        let s = try_or_reject!(string_arg(&session_id, "session_id"));
        let project = try_or_reject!(params::AssignSessionProjectParams::read(&params)).project_id;
        let Some(p) = project else {
            return reject(type_error("project_id", "is required, got undefined"));
        };
        self.run(
            &options,
            "assignSessionProject",
            RestCall::assign_session_project(&s, &p),
        )
    }

    /// Exports a session's Perfetto trace; resolves to a signed download URL.
    #[wasm_bindgen(js_name = exportSessionTrace, unchecked_return_type = "Promise<string>")]
    pub fn export_session_trace(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] session_id: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "RequestOptions")] options: JsValue,
    ) -> Promise {
        let s = try_or_reject!(string_arg(&session_id, "session_id"));
        self.run(
            &options,
            "exportSessionTrace",
            RestCall::export_session_trace(&s),
        )
    }

    /// One sampler: its base model and weights path.
    #[wasm_bindgen(js_name = getSampler, unchecked_return_type = "Promise<SamplerInfo>")]
    pub fn get_sampler(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] sampler_id: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "RequestOptions")] options: JsValue,
    ) -> Promise {
        let s = try_or_reject!(string_arg(&sampler_id, "sampler_id"));
        self.run(&options, "getSampler", RestCall::get_sampler(&s))
    }

    /// Who the credentials belong to, from the JWT's claims (no request).
    #[wasm_bindgen(unchecked_return_type = "Promise<WhoamiResponse>")]
    pub fn whoami(
        &self,
        #[wasm_bindgen(unchecked_optional_param_type = "RequestOptions")] options: JsValue,
    ) -> Promise {
        self.run(&options, "whoami", Ok(RestCall::whoami()))
    }

    /// The organisation's audit log (admins).
    #[wasm_bindgen(js_name = getAuditLog, unchecked_return_type = "Promise<AuditLogResponse>")]
    pub fn get_audit_log(
        &self,
        #[wasm_bindgen(unchecked_optional_param_type = "AuditLogParams")] params: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "RequestOptions")] options: JsValue,
    ) -> Promise {
        let p = try_or_reject!(params::AuditLogParams::read(&params));
        let day = match p.day {
            None => None,
            // A Date is its UTC day, as the server's window is.
            Some(d) if d.is_instance_of::<js_sys::Date>() => Some(
                String::from(d.unchecked_into::<js_sys::Date>().to_iso_string())
                    .chars()
                    .take(10)
                    .collect(),
            ),
            Some(d) => Some(try_or_reject!(d.as_string().ok_or_else(|| type_error(
                "day",
                format!(
                    "must be a 'YYYY-MM-DD' string or a Date, got {}",
                    describe(&d)
                )
            )))),
        };
        let et = p.event_type.unwrap_or_else(|| "all".into());
        self.run(
            &options,
            "getAuditLog",
            RestCall::get_audit_log(&et, day.as_deref()),
        )
    }

    /// Billing usage events between two RFC 3339 times.
    #[wasm_bindgen(js_name = getBillingUsage, unchecked_return_type = "Promise<BillingUsageResponse>")]
    pub fn get_billing_usage(
        &self,
        #[wasm_bindgen(unchecked_param_type = "BillingUsageParams")] params: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "RequestOptions")] options: JsValue,
    ) -> Promise {
        let p = try_or_reject!(params::BillingUsageParams::read(&params));
        let iso = |v: &JsValue, f: &str| -> Result<String, JsValue> {
            if let Some(s) = v.as_string() {
                return Ok(s);
            }
            if let Some(d) = v.dyn_ref::<js_sys::Date>() {
                // Python's isoformat() leaves out zero milliseconds.
                let iso = String::from(d.to_iso_string());
                return Ok(match iso.strip_suffix(".000Z") {
                    Some(whole) => format!("{whole}Z"),
                    None => iso,
                });
            }
            Err(type_error(
                f,
                format!("must be a Date or an RFC 3339 string, got {}", describe(v)),
            ))
        };
        let (a, b) = (
            try_or_reject!(iso(
                &p.starting_on.unwrap_or(JsValue::UNDEFINED),
                "starting_on"
            )),
            try_or_reject!(iso(
                &p.ending_before.unwrap_or(JsValue::UNDEFINED),
                "ending_before"
            )),
        );
        self.run(
            &options,
            "getBillingUsage",
            Ok(RestCall::get_billing_usage(&a, &b)),
        )
    }

    /// Current checkpoint storage usage.
    #[wasm_bindgen(js_name = getCurrentCheckpointStorageUsage, unchecked_return_type = "Promise<CurrentCheckpointStorageUsageResponse>")]
    pub fn get_current_checkpoint_storage_usage(
        &self,
        #[wasm_bindgen(unchecked_optional_param_type = "StorageUsageParams")] params: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "RequestOptions")] options: JsValue,
    ) -> Promise {
        let project_id = try_or_reject!(params::StorageUsageParams::read(&params)).project_id;
        self.run(
            &options,
            "getCurrentCheckpointStorageUsage",
            Ok(RestCall::get_current_checkpoint_storage_usage(
                project_id.as_deref(),
            )),
        )
    }

    /// Closes a `RestClient` you constructed (stops its timers). Does nothing for one
    /// obtained from a `ServiceClient`, whose `close` covers it.
    #[wasm_bindgen(unchecked_return_type = "Promise<void>")]
    pub fn close(&self) -> Promise {
        match &self.source {
            RestSource::Service(_) => Promise::resolve(&JsValue::UNDEFINED),
            RestSource::Own(s) => {
                let s = s.clone();
                settle(
                    Box::pin(async move { s.close(FinishStatus::Success, None).await }),
                    None,
                    |_| JsValue::UNDEFINED,
                )
            }
        }
    }
}
