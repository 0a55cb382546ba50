//! Sessions, training runs (models), checkpoints, sampling sessions, files, audit log
//! and usage records, with their JSON renderings.

use crate::model::optim::OptState;
use crate::model::{Adapter, BaseSpec};
use crate::util::rfc3339;
use serde_json::{json, Map, Value};
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use tokio::sync::Notify;

#[derive(Clone, Debug)]
pub struct Session {
    pub id: String,
    pub owner: String,
    pub created_at: f64,
    pub tags: Vec<String>,
    pub user_metadata: Map<String, Value>,
    pub project_id: String,
    pub display_name: Option<String>,
    pub sdk_version: String,
    /// `(reason, detail)` once the client finished the session.
    pub finished: Option<(String, Option<String>)>,
    pub last_heartbeat: f64,
    pub heartbeats: u64,
    pub training_run_ids: Vec<String>,
    pub sampler_ids: Vec<String>,
}

impl Session {
    pub fn status_json(&self) -> Value {
        match &self.finished {
            Some((reason, detail)) => {
                json!({"type": "client_finished", "reason": {"type": reason}, "detail": detail})
            }
            None => json!({"type": "active"}),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum CkptKind {
    Training,
    Sampler,
    External,
}

impl CkptKind {
    pub fn segment(&self) -> &'static str {
        match self {
            CkptKind::Training => "weights",
            CkptKind::Sampler => "sampler_weights",
            CkptKind::External => "external_weights",
        }
    }
    pub fn type_name(&self) -> &'static str {
        match self {
            CkptKind::Training => "training",
            CkptKind::Sampler => "sampler",
            CkptKind::External => "external",
        }
    }
    pub fn from_segment(s: &str) -> Option<CkptKind> {
        match s {
            "weights" => Some(CkptKind::Training),
            "sampler_weights" => Some(CkptKind::Sampler),
            "external_weights" => Some(CkptKind::External),
            _ => None,
        }
    }
}

#[derive(Clone)]
pub struct Checkpoint {
    pub run_id: String,
    pub kind: CkptKind,
    pub name: String,
    pub owner: String,
    pub time: f64,
    pub size_bytes: u64,
    pub public: bool,
    pub user_metadata: Option<Map<String, Value>>,
    pub expires_at: Option<f64>,
    pub weights: Arc<Adapter>,
    /// Optimiser state (training checkpoints).
    pub opt: Option<Arc<OptState>>,
    pub optimizer_config: Value,
    pub lora: LoraInfo,
    /// Exported files (external checkpoints).
    pub files: Vec<(String, Arc<Vec<u8>>)>,
}

impl Checkpoint {
    pub fn checkpoint_id(&self) -> String {
        format!("{}/{}", self.kind.segment(), self.name)
    }
    pub fn tinker_path(&self) -> String {
        format!(
            "tinker://{}/{}/{}",
            self.run_id,
            self.kind.segment(),
            self.name
        )
    }
    pub fn expired(&self, now: f64) -> bool {
        self.expires_at.is_some_and(|t| t <= now)
    }
    pub fn json(&self) -> Value {
        json!({
            "checkpoint_id": self.checkpoint_id(),
            "checkpoint_type": self.kind.type_name(),
            "time": rfc3339(self.time),
            "tinker_path": self.tinker_path(),
            "size_bytes": self.size_bytes,
            "public": self.public,
            "user_metadata": self.user_metadata,
            "expires_at": self.expires_at.map(rfc3339),
        })
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct LoraInfo {
    pub rank: usize,
    pub seed: u64,
    pub train_attn: bool,
    pub train_mlp: bool,
    pub train_unembed: bool,
}

/// One request in a model's sequence.
pub struct Pending {
    pub request_id: String,
    pub kind: &'static str,
    pub ready_at: tokio::time::Instant,
    pub op: crate::routes::training::TrainOp,
}

#[derive(Clone, Debug)]
pub struct Applied {
    pub seq_id: i64,
    pub kind: &'static str,
    pub request_id: String,
    pub ok: bool,
}

#[derive(Default)]
pub struct Sched {
    pub next_seq: i64,
    pub pending: BTreeMap<i64, Pending>,
    /// seq_id → (request id, hash of the request body), for retry dedupe.
    pub by_seq: HashMap<i64, (String, u64)>,
    pub applied: Vec<Applied>,
    pub optim_steps: u64,
}

pub struct TrainState {
    pub adapter: Adapter,
    pub grads: crate::model::Params,
    pub opt: OptState,
}

/// A training run.
pub struct ModelEntry {
    pub id: String,
    pub session_id: String,
    pub owner: String,
    pub spec: &'static BaseSpec,
    pub lora: LoraInfo,
    pub optimizer_config: Value,
    pub user_metadata: Option<Map<String, Value>>,
    pub trainable: bool,
    pub last_request_time: Mutex<f64>,
    pub sched: Mutex<Sched>,
    pub state: Mutex<Option<TrainState>>,
    pub wake: Notify,
}

impl ModelEntry {
    pub fn info_json(&self) -> Value {
        json!({
            "type": "get_info",
            "model_id": self.id,
            "model_data": {
                "arch": self.spec.arch,
                "model_name": self.spec.name,
                "tokenizer_id": self.spec.tokenizer_id,
            },
            "is_lora": true,
            "lora_rank": self.lora.rank,
            "model_name": self.spec.name,
            "optimizer_config": self.optimizer_config,
        })
    }
}

pub struct SamplingSession {
    pub id: String,
    pub session_id: String,
    pub owner: String,
    pub spec: &'static BaseSpec,
    pub model_path: Option<String>,
    pub weights: Arc<Adapter>,
    pub clients: u64,
    /// Prefix hashes (every 16 tokens) of prompts seen, for prompt_cache_hit_tokens.
    pub prefixes: std::collections::HashSet<u64>,
}

#[derive(Clone, Debug)]
pub struct AuditEntry {
    pub time: f64,
    pub event: String,
    pub owner: String,
    pub details: Value,
}

#[derive(Clone, Debug)]
pub struct Usage {
    pub time: f64,
    pub owner: String,
    pub session_id: Option<String>,
    pub base_model: Option<String>,
    /// `training` | `sampling_prefill` | `sampling_sample` | `checkpoint`
    pub kind: &'static str,
    pub cached: bool,
    pub amount: u64,
}

pub struct File {
    pub bytes: Arc<Vec<u8>>,
    pub content_type: &'static str,
    pub expires: f64,
}

#[derive(Default)]
pub struct Store {
    pub sessions: BTreeMap<String, Session>,
    pub session_order: Vec<String>,
    pub models: HashMap<String, Arc<ModelEntry>>,
    pub model_order: Vec<String>,
    /// Keyed by tinker path.
    pub checkpoints: BTreeMap<String, Checkpoint>,
    pub sampling: HashMap<String, SamplingSession>,
    pub files: HashMap<String, File>,
    pub audit: Vec<AuditEntry>,
    pub usage: Vec<Usage>,
    /// copy_weights idempotency: key → resulting tinker path.
    pub copies: HashMap<String, String>,
    /// Custom losses: loss_id → (session, compiled loss, input names).
    pub custom_losses: HashMap<String, (String, Arc<crate::model::loss::CustomFn>, Vec<String>)>,
    pub custom_loss_keys: HashMap<(String, i64), String>,
    pub revoked_keys: std::collections::HashSet<String>,
    /// (sampling session, seq_id) → (request id, sample sequence ids).
    pub sample_dedupe: HashMap<(String, i64), (String, Vec<String>)>,
}

impl Store {
    pub fn audit(&mut self, time: f64, event: &str, owner: &str, details: Value) {
        self.audit.push(AuditEntry {
            time,
            event: event.into(),
            owner: owner.into(),
            details,
        });
    }

    /// Live checkpoint by tinker path (expired ones count as gone).
    pub fn checkpoint(&self, path: &str, now: f64) -> Option<&Checkpoint> {
        self.checkpoints.get(path).filter(|c| !c.expired(now))
    }

    pub fn training_run_json(&self, m: &ModelEntry, now: f64) -> Value {
        let last = |kind: CkptKind| {
            self.checkpoints
                .values()
                .filter(|c| c.run_id == m.id && c.kind == kind && !c.expired(now))
                .max_by(|a, b| a.time.total_cmp(&b.time))
                .map(|c| c.json())
        };
        json!({
            "training_run_id": m.id,
            "base_model": m.spec.name,
            "model_owner": m.owner,
            "is_lora": true,
            "corrupted": false,
            "lora_rank": m.lora.rank,
            "last_request_time": rfc3339(*m.last_request_time.lock().unwrap_or_else(|e| e.into_inner())),
            "last_checkpoint": last(CkptKind::Training),
            "last_sampler_checkpoint": last(CkptKind::Sampler),
            "user_metadata": m.user_metadata,
        })
    }
}
