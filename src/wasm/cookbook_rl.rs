//! `rl.train`'s state machine for JavaScript (`tinker_cookbook::rl_loop::Rl`, driven by
//! pkg/cookbook/cookbook.js, which holds the environments, the dataset and the callbacks).
//! Nothing here decides: it converts.

use js_sys::{Array, Float32Array, Object};
use tinker_cookbook::rl_loop::{groups_from_json, EvalPart, Method, Rl, RlSave, Scored};
use tinker_cookbook::sft::dumps;
use wasm_bindgen::prelude::*;

use super::common::*;
use super::cookbook::{float_lists, metrics_of, start_to_js};
use crate::wasm::convert::{datum_to_js, model_input_to_js};
use crate::wasm::errors::{input_error, type_error};

/// A synchronous RL run (the protocol is `tinker_cookbook::rl_loop`'s).
#[wasm_bindgen(js_name = __CookbookRl, skip_typescript)]
pub struct CookbookRl {
    rl: Rl,
    saves: Vec<RlSave>,
}

fn json_of(text: &str, what: &str) -> Result<serde_json::Value, JsValue> {
    super::python::read_json(text).map_err(|e| type_error(what, e))
}

/// Scores as JS gives them: `[logprobs of positions 1…n (Float32Array), cached, sampled][]`.
fn scored(scores: &Array) -> Vec<Scored> {
    scores
        .iter()
        .map(|s| {
            let s = Array::from(&s);
            Scored {
                logprobs: Float32Array::from(s.get(0)).to_vec(),
                cached: s.get(1).as_f64().unwrap_or(0.0) as u64,
                sampled: s.get(2).as_f64().unwrap_or(0.0) as u64,
            }
        })
        .collect()
}

fn eval_parts(parts: &Array) -> Result<Vec<EvalPart>, JsValue> {
    parts
        .iter()
        .map(|p| match p.as_string() {
            Some(text) => test_set(&json_of(&text, "test rollouts")?),
            None => Ok(EvalPart::Metrics(metrics_of(&p, "evaluator metrics")?)),
        })
        .collect()
}

/// A test set's rollouts: `[group | null]` (null: a group its strategy dropped), each
/// group with the `errors` it survived.
fn test_set(v: &serde_json::Value) -> Result<EvalPart, JsValue> {
    let all = v.as_array().cloned().unwrap_or_default();
    let skipped = all.iter().filter(|g| g.is_null()).count() as u64;
    let kept: Vec<serde_json::Value> = all.into_iter().filter(|g| !g.is_null()).collect();
    let errors = kept
        .iter()
        .flat_map(|g| g["errors"].as_array().cloned().unwrap_or_default())
        .filter_map(|e| e.as_str().map(String::from))
        .collect();
    let (groups, tags) =
        groups_from_json(&serde_json::Value::Array(kept)).map_err(|e| input_error(&e))?;
    Ok(EvalPart::TestSet {
        groups,
        tags,
        errors,
        skipped,
    })
}

fn map_to_js(m: serde_json::Map<String, serde_json::Value>) -> Result<JsValue, JsValue> {
    js_sys::JSON::parse(&serde_json::Value::Object(m).to_string())
}

#[wasm_bindgen(js_class = __CookbookRl)]
impl CookbookRl {
    /// The run of `config` (an `rl.train` config as JSON text, or with `distillation` a
    /// `distillation.trainOnPolicy` one), resuming from the text of its `checkpoints.jsonl`.
    #[wasm_bindgen(constructor)]
    pub fn new(config: &str, checkpoints: &str, distillation: bool) -> Result<CookbookRl, JsValue> {
        let json = json_of(config, "config")?;
        let cfg = if distillation {
            tinker_cookbook::config::distillation_config(&json)
        } else {
            tinker_cookbook::config::rl_config(&json)
        };
        let cfg = cfg.map_err(|e| input_error(&e))?;
        let rl = Rl::new(cfg, checkpoints).map_err(|e| input_error(&e))?;
        Ok(CookbookRl {
            rl,
            saves: Vec::new(),
        })
    }

    /// The samplers the KL term scores on (`{ base_model, model_path }[]`: the reference,
    /// or each dataset's teacher), in order.
    pub fn scorers(&self) -> Array {
        let list = match &self.rl.config().method {
            Method::Rl { reference } => reference.iter().cloned().collect(),
            Method::Distillation { teachers } => teachers.clone(),
        };
        list.iter()
            .map(|s| {
                let r: JsValue = Object::new().into();
                set(&r, "base_model", &s.base_model.as_str().into());
                if let Some(p) = &s.load_checkpoint_path {
                    set(&r, "model_path", &p.as_str().into());
                }
                r
            })
            .collect()
    }

    /// Whether the run is off-policy (`async_config`).
    #[wasm_bindgen(getter, js_name = isAsync)]
    pub fn is_async(&self) -> bool {
        self.rl.config().async_config.is_some()
    }

    /// Whether samplers record stability info (`stable_reinforce`).
    #[wasm_bindgen(getter, js_name = recordsStabilityInfo)]
    pub fn records_stability_info(&self) -> bool {
        self.rl.config().records_stability_info()
    }

    /// The step after the last (the run's end).
    #[wasm_bindgen(getter, js_name = endStep)]
    pub fn end_step(&self) -> f64 {
        self.rl.end_step() as f64
    }

    /// Async: the rollout slots.
    #[wasm_bindgen(getter)]
    pub fn slots(&self) -> f64 {
        self.rl.slots() as f64
    }

    /// Async: the save before the first step (`{ name, ttl_seconds }`).
    #[wasm_bindgen(js_name = asyncStart)]
    pub fn async_start(&mut self) -> JsValue {
        let save = self.rl.async_start();
        self.pending(Some(save))
    }

    /// Async: a group completed (`[group]` as JSON text) on the weights of
    /// `sampler_step`: kept (true) or dropped for constant rewards (false).
    pub fn complete(&mut self, rollout: &str, sampler_step: f64) -> Result<bool, JsValue> {
        let (g, t) = tinker_cookbook::rl_async::one_group(&json_of(rollout, "rollout")?)
            .map_err(|e| input_error(&e))?;
        self.rl
            .complete(g, t, sampler_step as u64)
            .map_err(|e| input_error(&e))
    }

    /// Async: whether a step can be trained.
    #[wasm_bindgen(js_name = batchReady)]
    pub fn batch_ready(&self, workers_done: bool) -> bool {
        self.rl.batch_ready(workers_done)
    }

    /// Async: whether steps remain.
    #[wasm_bindgen(getter, js_name = stepsLeft)]
    pub fn steps_left(&self) -> bool {
        self.rl.steps_left()
    }

    /// Async: the next step on the oldest groups: `[step, sequences to score, groups]`.
    #[wasm_bindgen(js_name = prepareAsync)]
    pub fn prepare_async(&mut self) -> Result<Array, JsValue> {
        let (step, asked, n) = self.rl.prepare_async().map_err(|e| input_error(&e))?;
        let asked: Array = asked
            .iter()
            .map(|(p, i)| JsValue::from(Array::of2(&model_input_to_js(p), &(*i as f64).into())))
            .collect();
        Ok(Array::of3(
            &(step as f64).into(),
            &asked,
            &(n as f64).into(),
        ))
    }

    /// Whether the evaluations of the weights of `step` are due (`end`: the final step,
    /// or undefined).
    #[wasm_bindgen(js_name = evalDueAt)]
    pub fn eval_due_at(&self, step: f64, end: Option<f64>) -> bool {
        self.rl.eval_due_at(step as u64, end.map(|e| e as u64))
    }

    /// Async: whether the step completing `step` may keep its sampler once sampling is over.
    #[wasm_bindgen(js_name = mayReuse)]
    pub fn may_reuse(&self, step: f64) -> bool {
        self.rl.may_reuse(step as u64)
    }

    /// Async: the evaluation of the weights of `step` as its event line.
    #[wasm_bindgen(js_name = evalEventLine)]
    pub fn eval_event_line(
        &self,
        step: f64,
        parts: Array,
        snapshot_seconds: f64,
        completed_seconds: f64,
    ) -> Result<String, JsValue> {
        let m = self.rl.eval_event_line(
            step as u64,
            eval_parts(&parts)?,
            snapshot_seconds,
            completed_seconds,
        );
        Ok(dumps(&m))
    }

    /// A group's rollout errors (their types), or a group its strategy dropped.
    #[wasm_bindgen(js_name = ingestRollout)]
    pub fn ingest_rollout(&mut self, errors: Vec<String>, skipped: bool) {
        self.rl.ingest_rollout(&errors, skipped);
    }

    /// A step whose every group was dropped: `[metrics line, metrics]` (nothing trained).
    #[wasm_bindgen(js_name = skipStep)]
    pub fn skip_step(&mut self) -> Result<Array, JsValue> {
        let m = self.rl.skip_step();
        let line = dumps(&m);
        Ok(Array::of2(&line.into(), &map_to_js(m)?))
    }

    /// Whether each step's datums are scored again on the new weights (`compute_post_kl`).
    #[wasm_bindgen(getter, js_name = computesPostKl)]
    pub fn computes_post_kl(&self) -> bool {
        self.rl.config().compute_post_kl
    }

    /// The last step's datums' full sequences, to score on the new weights.
    #[wasm_bindgen(js_name = postKlSequences)]
    pub fn post_kl_sequences(&self) -> Result<Array, JsValue> {
        let seqs = self.rl.post_kl_sequences().map_err(|e| input_error(&e))?;
        Ok(seqs.iter().map(model_input_to_js).collect())
    }

    /// Their scores (as `train` takes them): `[the step's metrics line, metrics]`.
    #[wasm_bindgen(js_name = postKl)]
    pub fn post_kl(&mut self, scores: Array) -> Result<Array, JsValue> {
        let m = self
            .rl
            .post_kl(&scored(&scores))
            .map_err(|e| input_error(&e))?;
        let line = dumps(&m);
        Ok(Array::of2(&line.into(), &map_to_js(m)?))
    }

    /// Whether the run has evaluators.
    #[wasm_bindgen(js_name = setEvaluators)]
    pub fn set_evaluators(&mut self, any: bool) {
        self.rl.set_evaluators(any);
    }

    /// Whether the evaluations run before `step`.
    #[wasm_bindgen(js_name = evalDue)]
    pub fn eval_due(&self, step: f64) -> bool {
        self.rl.eval_due(step as u64)
    }

    /// The evaluations before the next step, in the evaluators' order: each a user
    /// evaluator's metrics (an object) or a test set's rollouts (JSON text).
    #[wasm_bindgen(js_name = recordEval)]
    pub fn record_eval(&mut self, parts: Array) -> Result<(), JsValue> {
        let parts = eval_parts(&parts)?;
        self.rl.record_eval(parts);
        Ok(())
    }

    /// Whether the final weights are evaluated (`rl.train`, after a run that trained).
    #[wasm_bindgen(js_name = finalEvalDue)]
    pub fn final_eval_due(&self) -> bool {
        self.rl.final_eval_due()
    }

    /// The final evaluation's metrics line (its parts as `recordEval` takes them).
    #[wasm_bindgen(js_name = finalEvalLine)]
    pub fn final_eval_line(&self, parts: Array) -> Result<String, JsValue> {
        Ok(dumps(&self.rl.final_eval_line(eval_parts(&parts)?)))
    }

    /// The dataset's length (its number of batches).
    #[wasm_bindgen(js_name = setBatches)]
    pub fn set_batches(&mut self, n: f64) -> Result<(), JsValue> {
        if !(n >= 0.0 && n.fract() == 0.0) {
            return Err(crate::wasm::errors::range_error(
                "dataset.length",
                format!("must be a whole number, got {n}"),
            ));
        }
        self.rl.set_batches(n as u64).map_err(|e| input_error(&e))
    }

    /// The step the run goes on from (where a stopped run stopped).
    #[wasm_bindgen(getter, js_name = nextIndex)]
    pub fn next_index(&self) -> f64 {
        self.rl.next_index() as f64
    }

    /// Stops the run before its next step: the save to make, or undefined.
    pub fn stop(&mut self) -> JsValue {
        let save = self.rl.stop();
        self.pending(save)
    }

    /// How to create the training client (as `__CookbookSft.start` says it).
    pub fn start(&self) -> JsValue {
        let (start, meta) = self.rl.start();
        start_to_js(start, meta)
    }

    /// `[backup name, kept text]` when a resumed run drops metrics rows, else undefined.
    #[wasm_bindgen(js_name = truncateMetrics)]
    pub fn truncate_metrics(&self, text: &str) -> JsValue {
        match self.rl.truncate_metrics(text) {
            Some((b, k)) => Array::of2(&b.into(), &k.into()).into(),
            None => JsValue::UNDEFINED,
        }
    }

    /// `[step, dataset batch]` of the next step, or undefined.
    #[wasm_bindgen(js_name = nextStep)]
    pub fn next_step(&mut self) -> JsValue {
        match self.rl.next_step() {
            Some((s, b)) => Array::of2(&(s as f64).into(), &(b as f64).into()).into(),
            None => JsValue::UNDEFINED,
        }
    }

    /// The step's rollouts (JSON text) and each group's dataset (distillation's; else
    /// undefined): the sequences to score, `[prompt, scorer index][]` (the reference is
    /// 0, a teacher its dataset's index), empty when the run has no KL term.
    pub fn prepare(&mut self, rollouts: &str, datasets: JsValue) -> Result<Array, JsValue> {
        let (groups, tags) =
            groups_from_json(&json_of(rollouts, "rollouts")?).map_err(|e| input_error(&e))?;
        let datasets: Vec<usize> = if datasets.is_undefined() {
            vec![0; groups.len()]
        } else {
            Array::from(&datasets)
                .iter()
                .map(|d| d.as_f64().unwrap_or(0.0) as usize)
                .collect()
        };
        let asked = self
            .rl
            .prepare(groups, tags, datasets)
            .map_err(|e| input_error(&e))?;
        Ok(asked
            .iter()
            .map(|(p, i)| JsValue::from(Array::of2(&model_input_to_js(p), &(*i as f64).into())))
            .collect())
    }

    /// The scores of the sequences `prepare` asked for (`[logprobs of positions 1…n as a
    /// Float32Array, prompt tokens cached, tokens sampled][]`): `{ substeps: Datum[][],
    /// adam, loss_fn, loss_fn_config }`.
    pub fn train(&mut self, scores: Array) -> Result<JsValue, JsValue> {
        let order = self
            .rl
            .train(&scored(&scores))
            .map_err(|e| input_error(&e))?;
        let r: JsValue = Object::new().into();
        let subs: Array = order
            .substeps
            .iter()
            .map(|s| JsValue::from(s.iter().map(datum_to_js).collect::<Array>()))
            .collect();
        set(&r, "substeps", &subs);
        let adam: JsValue = Object::new().into();
        for (k, v) in [
            ("learning_rate", order.adam.learning_rate),
            ("beta1", order.adam.beta1),
            ("beta2", order.adam.beta2),
            ("eps", order.adam.eps),
        ] {
            set(&adam, k, &v.into());
        }
        set(&r, "adam", &adam);
        let (loss, config) = self.rl.loss();
        set(&r, "loss_fn", &loss.into());
        let config = config.map_or(Ok(JsValue::UNDEFINED), |c| map_to_js(c.clone()))?;
        set(&r, "loss_fn_config", &config);
        Ok(r)
    }

    /// The step trained (its training logprobs, a Float32Array per datum, and the last
    /// optim_step's metrics): `[metrics line, metrics, save or undefined]`.
    pub fn finish(&mut self, training: Array, optim_metrics: JsValue) -> Result<Array, JsValue> {
        let optim = metrics_of(&optim_metrics, "optim_step metrics")?;
        let (m, save) = self
            .rl
            .finish(&float_lists(&training), optim)
            .map_err(|e| input_error(&e))?;
        let line = dumps(&m);
        let arr = Array::of2(&line.into(), &map_to_js(m)?);
        arr.push(&self.pending(save));
        Ok(arr)
    }

    /// After the last step: `[token totals line (empty for a stopped run), final save or undefined]`.
    pub fn end(&mut self) -> Array {
        let (m, save) = self.rl.end();
        let line = if m.is_empty() {
            String::new()
        } else {
            dumps(&m)
        };
        Array::of2(&line.into(), &self.pending(save))
    }

    /// The save named `name` is done (a rolling one has no sampler path): `[its
    /// checkpoints.jsonl line, the rolling checkpoint to delete or undefined]`.
    pub fn saved(
        &mut self,
        name: &str,
        state_path: &str,
        sampler_path: Option<String>,
    ) -> Result<Array, JsValue> {
        let i = self
            .saves
            .iter()
            .position(|o| o.name == name)
            .ok_or_else(|| type_error("saved", format!("no save {name} pending")))?;
        let order = self.saves.remove(i);
        let (line, delete) = self.rl.saved(&order, state_path, sampler_path.as_deref());
        let delete = delete.map_or(JsValue::UNDEFINED, |p| p.into());
        Ok(Array::of2(&dumps(&line).into(), &delete))
    }

    /// The rolling save after the step completing `step`, or undefined.
    #[wasm_bindgen(js_name = rollingDue)]
    pub fn rolling_due(&mut self, step: f64) -> JsValue {
        let save = self.rl.rolling_due(step as u64);
        self.pending(save)
    }

    /// After the final save: the last rolling checkpoint to delete, or undefined.
    pub fn finalize(&mut self) -> Option<String> {
        self.rl.finalize()
    }

    fn pending(&mut self, save: Option<RlSave>) -> JsValue {
        let Some(o) = save else {
            return JsValue::UNDEFINED;
        };
        let r: JsValue = Object::new().into();
        set(&r, "name", &o.name.as_str().into());
        set(&r, "rolling", &o.rolling.into());
        set(
            &r,
            "ttl_seconds",
            &o.ttl_seconds
                .map_or(JsValue::UNDEFINED, |t| (t as f64).into()),
        );
        self.saves.push(o);
        r
    }
}
