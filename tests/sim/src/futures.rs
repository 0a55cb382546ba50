//! Futures: every asynchronous request gets a request id whose result is fetched with
//! `retrieve_future` (or announced by `retrieve_futures` for sampling sessions).

use crate::faults::FutureFaults;
use crate::model::sample;
use crate::proto;
use serde_json::{json, Map, Value};
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use tokio::sync::watch;

/// A forward/backward result: per-datum logprobs with their shapes, and metrics.
pub struct FwdPayload {
    pub outputs: Vec<(Vec<f32>, Vec<usize>)>,
    pub metrics: BTreeMap<String, f64>,
}

pub struct SamplePayload {
    pub out: sample::Output,
    pub cache_hits: i32,
}

pub enum Payload {
    Json(Value),
    FwdBwd(FwdPayload),
    Sample(Box<SamplePayload>),
}

fn f32_json(x: f32) -> Value {
    if x.is_finite() {
        json!(x)
    } else {
        Value::Null
    }
}

fn topk_json(t: &sample::TopK) -> Value {
    let rows: Vec<Value> = (0..t.length)
        .map(|r| {
            let cells: Vec<(i32, f32)> = (0..t.k)
                .map(|j| (t.ids[r * t.k + j], t.logprobs[r * t.k + j]))
                .filter(|(id, lp)| !(*id == 0 && *lp == sample::MASK_LOGPROB))
                .collect();
            if cells.is_empty() {
                Value::Null
            } else {
                json!(cells)
            }
        })
        .collect();
    Value::Array(rows)
}

fn topk_proto(t: &sample::TopK) -> proto::TopkLogprobs {
    proto::TopkLogprobs {
        token_ids: proto::i32s_to_bytes(&t.ids),
        logprobs: proto::f32s_to_bytes(&t.logprobs),
        k: t.k as u32,
        length: t.length as u32,
    }
}

fn target_tensor(t: &sample::TargetSpec, vals: &[f32]) -> proto::Tensor {
    match &t.csr {
        Some((crow, col)) => {
            let mut values = Vec::new();
            for r in 0..t.rows {
                for k in crow[r]..crow[r + 1] {
                    values.push(vals[r * t.k + col[k as usize] as usize]);
                }
            }
            proto::Tensor {
                encoding: Some(proto::tensor::Encoding::SparseCsr(proto::SparseCsr {
                    values: proto::f32s_to_bytes(&values),
                    crow_indices: proto::i64s_to_bytes(crow),
                    col_indices: proto::i64s_to_bytes(col),
                })),
                dtype: proto::DType::Float32 as i32,
                shape: vec![t.rows as i64, t.k as i64],
            }
        }
        None => proto::Tensor::dense_f32(&[t.rows, t.k], vals),
    }
}

/// An ArrayRecord under construction: (trailing shape, data bytes, byte offsets, datums).
type RecordBuf = (Vec<usize>, Vec<u8>, Vec<i64>, i64);

impl Payload {
    pub fn proto_capable(&self) -> bool {
        !matches!(self, Payload::Json(_))
    }

    pub fn to_proto(&self) -> Vec<u8> {
        use prost::Message;
        match self {
            Payload::Json(v) => serde_json::to_vec(v).unwrap_or_default(),
            Payload::FwdBwd(f) => {
                // One ArrayRecord per run of datums sharing a trailing shape.
                let mut records: Vec<proto::ArrayRecord> = Vec::new();
                let mut cur: Option<RecordBuf> = None;
                let flush = |cur: &mut Option<RecordBuf>, records: &mut Vec<proto::ArrayRecord>| {
                    if let Some((trailing, data, offsets, n)) = cur.take() {
                        let mut fields = BTreeMap::new();
                        fields.insert(
                            "logprobs".to_string(),
                            proto::BatchedTensor {
                                data,
                                offsets: proto::i64s_to_bytes(&offsets),
                                dtype: proto::DType::Float32 as i32,
                                trailing_shape: trailing.iter().map(|&t| t as i64).collect(),
                            },
                        );
                        records.push(proto::ArrayRecord {
                            type_tag: "ArrayRecord".into(),
                            fields,
                            num_datums: n,
                        });
                    }
                };
                for (vals, shape) in &f.outputs {
                    let trailing: Vec<usize> = shape.iter().skip(1).copied().collect();
                    if cur.as_ref().is_some_and(|c| c.0 != trailing) {
                        flush(&mut cur, &mut records);
                    }
                    let c = cur.get_or_insert_with(|| (trailing, Vec::new(), vec![0], 0));
                    c.1.extend(proto::f32s_to_bytes(vals));
                    c.2.push(c.1.len() as i64);
                    c.3 += 1;
                }
                flush(&mut cur, &mut records);
                proto::ForwardBackwardOutput {
                    loss_fn_output_type: "ArrayRecord".into(),
                    loss_fn_outputs: records,
                    metrics: f.metrics.clone(),
                }
                .encode_to_vec()
            }
            Payload::Sample(s) => {
                let o = &s.out;
                let resp = proto::SampleResponse {
                    sequences: o
                        .sequences
                        .iter()
                        .map(|q| proto::SampledSequence {
                            stop_reason: if q.stopped {
                                proto::StopReason::Stop
                            } else {
                                proto::StopReason::Length
                            } as i32,
                            tokens: proto::i32s_to_bytes(
                                &q.tokens.iter().map(|&t| t as i32).collect::<Vec<_>>(),
                            ),
                            logprobs: Some(proto::f32s_to_bytes(&q.logprobs)),
                            topk_sampled_logprobs: q.topk.as_ref().map(topk_proto),
                        })
                        .collect(),
                    prompt_logprobs: o.prompt_logprobs.as_ref().map(|p| proto::f32s_to_bytes(p)),
                    topk_prompt_logprobs: o.topk_prompt.as_ref().map(topk_proto),
                    prompt_cache_hit_tokens: s.cache_hits,
                    target_prompt_logprobs: o.target.as_ref().map(|(t, v)| target_tensor(t, v)),
                    prompt_alt_tokens: o.alt.as_ref().map(|(k, toks, lps)| {
                        let rows = toks.len() / k.max(&1);
                        proto::PromptAltTokens {
                            tokens: Some(proto::Tensor::dense_i64(&[rows, *k], toks)),
                            logprobs: Some(proto::Tensor::dense_f32(&[rows, *k], lps)),
                        }
                    }),
                };
                resp.encode_to_vec()
            }
        }
    }

    pub fn to_json(&self) -> Value {
        match self {
            Payload::Json(v) => v.clone(),
            Payload::FwdBwd(f) => json!({
                "loss_fn_output_type": "ArrayRecord",
                "loss_fn_outputs": f.outputs.iter().map(|(v, shape)| json!({
                    "logprobs": {"data": v.iter().map(|x| f32_json(*x)).collect::<Vec<_>>(), "dtype": "float32", "shape": shape}
                })).collect::<Vec<_>>(),
                "metrics": f.metrics,
            }),
            Payload::Sample(s) => {
                let o = &s.out;
                let mut m = Map::new();
                m.insert("type".into(), json!("sample"));
                m.insert(
                    "sequences".into(),
                    Value::Array(
                        o.sequences
                            .iter()
                            .map(|q| {
                                let mut sm = Map::new();
                                sm.insert(
                                    "stop_reason".into(),
                                    json!(if q.stopped { "stop" } else { "length" }),
                                );
                                sm.insert("tokens".into(), json!(q.tokens));
                                sm.insert(
                                    "logprobs".into(),
                                    Value::Array(q.logprobs.iter().map(|x| f32_json(*x)).collect()),
                                );
                                if let Some(t) = &q.topk {
                                    sm.insert("topk_logprobs".into(), topk_json(t));
                                }
                                Value::Object(sm)
                            })
                            .collect(),
                    ),
                );
                if let Some(p) = &o.prompt_logprobs {
                    m.insert(
                        "prompt_logprobs".into(),
                        Value::Array(p.iter().map(|x| f32_json(*x)).collect()),
                    );
                }
                if let Some(t) = &o.topk_prompt {
                    m.insert("topk_prompt_logprobs".into(), topk_json(t));
                }
                if let Some((t, v)) = &o.target {
                    m.insert(
                        "target_prompt_logprobs".into(),
                        proto::tensor_json(&target_tensor(t, v)),
                    );
                }
                if let Some((k, toks, lps)) = &o.alt {
                    let rows = toks.len() / k.max(&1);
                    m.insert(
                        "prompt_alt_tokens".into(),
                        json!({
                            "tokens": {"data": toks, "dtype": "int64", "shape": [rows, k]},
                            "logprobs": {"data": lps.iter().map(|x| f32_json(*x)).collect::<Vec<_>>(), "dtype": "float32", "shape": [rows, k]},
                        }),
                    );
                }
                m.insert("prompt_cache_hit_tokens".into(), json!(s.cache_hits));
                Value::Object(m)
            }
        }
    }
}

#[derive(Clone)]
pub enum FState {
    Pending,
    Done(Arc<Payload>),
    Failed {
        message: String,
        category: &'static str,
    },
    Expired,
}

#[derive(Clone, Debug, PartialEq)]
pub enum FKind {
    Training {
        model_id: String,
        seq_id: i64,
    },
    Sample {
        session: String,
        clone: u64,
        seq_id: i64,
    },
    Other,
}

pub struct FInner {
    pub state: FState,
    pub meta_sent: bool,
    pub faults: Option<FutureFaults>,
    pub retrieved: bool,
    /// Why a pending future is waiting, reported in try_again answers.
    pub queue_state: &'static str,
    /// When the future stopped being pending (for payload expiry).
    pub settled_at: Option<std::time::Instant>,
}

pub struct FutureEntry {
    pub id: String,
    pub kind: FKind,
    pub inner: Mutex<FInner>,
    pub done: watch::Sender<bool>,
}

impl FutureEntry {
    pub fn lock(&self) -> std::sync::MutexGuard<'_, FInner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }
    pub fn is_sample(&self) -> bool {
        matches!(self.kind, FKind::Sample { .. })
    }
}

/// One completion in a sampling session's log.
#[derive(Clone, Debug)]
pub struct Completion {
    pub cursor: u64,
    pub request_id: String,
    pub finished: bool,
    pub size: Option<usize>,
}

#[derive(Default)]
pub struct Log {
    pub entries: Vec<Completion>,
    pub last_cursor: u64,
}

pub struct Logs {
    pub logs: HashMap<(String, u64), Log>,
    pub tx: watch::Sender<u64>,
}

pub struct Futures {
    pub map: Mutex<HashMap<String, Arc<FutureEntry>>>,
    pub logs: Mutex<Logs>,
    pub log_rx: watch::Receiver<u64>,
}

impl Default for Futures {
    fn default() -> Self {
        let (tx, rx) = watch::channel(0);
        Futures {
            map: Mutex::new(HashMap::new()),
            logs: Mutex::new(Logs {
                logs: HashMap::new(),
                tx,
            }),
            log_rx: rx,
        }
    }
}

impl Futures {
    pub fn create(&self, id: String, kind: FKind) -> Arc<FutureEntry> {
        let (tx, _) = watch::channel(false);
        let f = Arc::new(FutureEntry {
            id: id.clone(),
            kind,
            inner: Mutex::new(FInner {
                state: FState::Pending,
                meta_sent: false,
                faults: None,
                retrieved: false,
                queue_state: "active",
                settled_at: None,
            }),
            done: tx,
        });
        self.map
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(id, f.clone());
        f
    }

    pub fn get(&self, id: &str) -> Option<Arc<FutureEntry>> {
        self.map
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(id)
            .cloned()
    }

    /// Resolve a future (no-op when it was already expired or resolved).
    pub fn resolve(&self, f: &FutureEntry, state: FState) -> bool {
        let size = match &state {
            FState::Done(p) if p.proto_capable() => Some(p.to_proto().len()),
            FState::Done(p) => Some(
                serde_json::to_vec(&p.to_json())
                    .map(|v| v.len())
                    .unwrap_or(0),
            ),
            _ => None,
        };
        let finished = matches!(state, FState::Done(_));
        {
            let mut g = f.lock();
            if !matches!(g.state, FState::Pending) {
                return false;
            }
            g.state = state;
            g.settled_at = Some(std::time::Instant::now());
        }
        let _ = f.done.send(true);
        if let FKind::Sample { session, clone, .. } = &f.kind {
            self.log_completion(session, *clone, &f.id, finished, size);
        }
        true
    }

    pub fn log_completion(
        &self,
        session: &str,
        clone: u64,
        id: &str,
        finished: bool,
        size: Option<usize>,
    ) {
        let mut logs = self.logs.lock().unwrap_or_else(|e| e.into_inner());
        let log = logs.logs.entry((session.to_string(), clone)).or_default();
        log.last_cursor += 1;
        let c = Completion {
            cursor: log.last_cursor,
            request_id: id.to_string(),
            finished,
            size,
        };
        log.entries.push(c);
        logs.tx.send_modify(|v| *v += 1);
    }

    /// Completions after `prev`; trims acknowledged ones. Returns (completions, cursor).
    pub fn completions_after(
        &self,
        session: &str,
        clone: u64,
        prev: u64,
    ) -> (Vec<Completion>, u64) {
        let mut logs = self.logs.lock().unwrap_or_else(|e| e.into_inner());
        let log = logs.logs.entry((session.to_string(), clone)).or_default();
        log.entries.retain(|c| c.cursor > prev);
        let out: Vec<Completion> = log.entries.clone();
        let cursor = out.last().map(|c| c.cursor).unwrap_or(prev).max(prev);
        (out, cursor)
    }

    /// Forget futures settled more than `ttl` ago (their ids then answer 404),
    /// so long runs do not keep every payload. Returns how many were dropped.
    pub fn collect_garbage(&self, ttl: std::time::Duration) -> usize {
        let now = std::time::Instant::now();
        let mut map = self.map.lock().unwrap_or_else(|e| e.into_inner());
        let before = map.len();
        map.retain(|_, f| {
            f.lock()
                .settled_at
                .is_none_or(|t| now.duration_since(t) < ttl)
        });
        before - map.len()
    }

    pub fn expire(&self, f: &FutureEntry) {
        let was_pending = {
            let mut g = f.lock();
            let p = matches!(g.state, FState::Pending);
            g.state = FState::Expired;
            g.settled_at.get_or_insert_with(std::time::Instant::now);
            p
        };
        let _ = f.done.send(true);
        if was_pending {
            if let FKind::Sample { session, clone, .. } = &f.kind {
                self.log_completion(session, *clone, &f.id, false, None);
            }
        }
    }
}
