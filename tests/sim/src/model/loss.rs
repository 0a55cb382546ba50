//! Loss functions over per-token learner logprobs, and the forward/backward driver.
//!
//! All losses are sums over tokens (no mean) and over datums; `loss:sum` reports it.
//! Notation: `lp` learner logprob of the target, `q` = input `logprobs` (sampler),
//! `A` = `advantages`, `w` = `weights`, `r = exp(lp − q)`.
//!
//! | loss | objective (minimised) | config |
//! |---|---|---|
//! | cross_entropy | `Σ −w·lp` (targets may be `(N, K)`) | — |
//! | importance_sampling | `Σ −r·A` | — |
//! | ppo | `Σ −min(r·A, clip(r, lo, hi)·A)` | `clip_low_threshold` 0.8, `clip_high_threshold` 1.2 |
//! | cispo | `Σ −sg(clip(r, lo, hi))·A·lp` | `clip_low_threshold` 0.0, `clip_high_threshold` 4.0 |
//! | dro | `Σ −(lp·A − ½·β·(lp − q)²)` | `beta` 0.05 |
//!
//! RL losses also accept an optional per-token `weights` mask (multiplies each term)
//! and per-token `clip_low_threshold` / `clip_high_threshold` tensors.

use super::base::Ctx;
use super::net::{Adapter, Params};
use std::collections::BTreeMap;
use std::sync::Arc;

/// One training example, validated and densified.
#[derive(Clone, Debug)]
pub struct DatumIn {
    /// Model input tokens (N).
    pub input: Vec<u32>,
    /// Target tokens, row-major N×K.
    pub targets: Vec<u32>,
    pub k: usize,
    /// Whether `target_tokens` was 2-D (outputs keep the `(N, K)` shape).
    pub two_d: bool,
    /// Other loss inputs, each N×K (a length-N input is broadcast across K).
    pub inputs: BTreeMap<String, Vec<f64>>,
    /// The inputs' shapes as sent (custom losses see them unbroadcast).
    pub input_shapes: BTreeMap<String, Vec<usize>>,
}

impl DatumIn {
    pub fn n(&self) -> usize {
        self.input.len()
    }
    fn get(&self, name: &str) -> Option<&Vec<f64>> {
        self.inputs.get(name)
    }
}

/// A custom loss's result for one datum: loss value, ∂loss/∂logprobs, metrics.
pub type CustomOut = Result<(f64, Vec<f64>, BTreeMap<String, f64>), String>;

/// A server-side custom loss: per-datum loss value, ∂loss/∂logprobs and metrics.
pub type CustomFn = dyn Fn(&DatumIn, &[f64]) -> CustomOut + Send + Sync;

#[derive(Clone)]
pub enum LossKind {
    CrossEntropy,
    ImportanceSampling,
    Ppo { lo: f64, hi: f64 },
    Cispo { lo: f64, hi: f64 },
    Dro { beta: f64 },
    Custom(Arc<CustomFn>),
}

impl std::fmt::Debug for LossKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LossKind::CrossEntropy => write!(f, "cross_entropy"),
            LossKind::ImportanceSampling => write!(f, "importance_sampling"),
            LossKind::Ppo { lo, hi } => write!(f, "ppo({lo}, {hi})"),
            LossKind::Cispo { lo, hi } => write!(f, "cispo({lo}, {hi})"),
            LossKind::Dro { beta } => write!(f, "dro({beta})"),
            LossKind::Custom(_) => write!(f, "custom"),
        }
    }
}

/// A loss config value (`loss_fn_config_v2` allows strings).
#[derive(Clone, Debug, PartialEq)]
pub enum ConfigValue {
    Number(f64),
    Text(String),
}

pub const LOSS_NAMES: &[&str] = &[
    "cross_entropy",
    "importance_sampling",
    "ppo",
    "cispo",
    "dro",
    "custom",
];

/// Which `loss_fn_inputs` keys a loss accepts, and which it requires.
pub fn input_keys(loss: &str) -> (&'static [&'static str], &'static [&'static str]) {
    match loss {
        "cross_entropy" => (&["target_tokens", "weights"], &["target_tokens"]),
        "importance_sampling" | "ppo" | "cispo" | "dro" => (
            &[
                "target_tokens",
                "logprobs",
                "advantages",
                "weights",
                "clip_low_threshold",
                "clip_high_threshold",
            ],
            &["target_tokens", "logprobs", "advantages"],
        ),
        _ => (&[], &["target_tokens"]),
    }
}

/// Build a loss from its name and config (v2 preferred by the caller).
pub fn make_loss(name: &str, config: &BTreeMap<String, ConfigValue>) -> Result<LossKind, String> {
    let allowed: &[&str] =
        match name {
            "cross_entropy" | "importance_sampling" => &[],
            "ppo" | "cispo" => &["clip_low_threshold", "clip_high_threshold"],
            "dro" => &["beta"],
            "gspo" | "stable_reinforce" => {
                return Err(format!(
                    "loss_fn {name:?} is not supported by tinker-sim (supported: {})",
                    LOSS_NAMES.join(", ")
                ))
            }
            "custom" => return Err(
                "loss_fn \"custom\" needs loss_fn_config {\"loss_id\": …} from create_custom_loss"
                    .into(),
            ),
            _ => {
                return Err(format!(
                    "unknown loss_fn {name:?}; expected one of {}",
                    LOSS_NAMES.join(", ")
                ))
            }
        };
    let mut nums = BTreeMap::new();
    for (k, v) in config {
        if !allowed.contains(&k.as_str()) {
            return Err(format!(
                "loss_fn_config key {k:?} is not valid for loss_fn {name:?} (valid keys: {})",
                if allowed.is_empty() {
                    "none".to_string()
                } else {
                    allowed.join(", ")
                }
            ));
        }
        match v {
            ConfigValue::Number(x) if x.is_finite() => {
                nums.insert(k.as_str(), *x);
            }
            ConfigValue::Number(x) => {
                return Err(format!("loss_fn_config {k:?} must be finite, got {x}"))
            }
            ConfigValue::Text(t) => {
                return Err(format!(
                    "loss_fn_config {k:?} must be a number, got the string {t:?}"
                ))
            }
        }
    }
    let g = |k: &str, d: f64| nums.get(k).copied().unwrap_or(d);
    Ok(match name {
        "cross_entropy" => LossKind::CrossEntropy,
        "importance_sampling" => LossKind::ImportanceSampling,
        "ppo" => LossKind::Ppo {
            lo: g("clip_low_threshold", 0.8),
            hi: g("clip_high_threshold", 1.2),
        },
        "cispo" => LossKind::Cispo {
            lo: g("clip_low_threshold", 0.0),
            hi: g("clip_high_threshold", 4.0),
        },
        _ => LossKind::Dro {
            beta: g("beta", 0.05),
        },
    })
}

/// Per-token loss and ∂loss/∂lp for the built-in losses.
fn token_terms(kind: &LossKind, d: &DatumIn, lps: &[f64]) -> Result<(f64, Vec<f64>, f64), String> {
    let n = lps.len();
    let w = d.get("weights");
    let weight = |i: usize| w.map(|w| w[i]).unwrap_or(1.0);
    let need = |name: &str| {
        d.get(name)
            .ok_or_else(|| format!("loss_fn_inputs[{name:?}] is required"))
    };
    let mut g = vec![0.0; n];
    let mut loss = 0.0;
    let mut clipped = 0.0;
    match kind {
        LossKind::CrossEntropy => {
            for i in 0..n {
                loss -= weight(i) * lps[i];
                g[i] = -weight(i);
            }
        }
        LossKind::ImportanceSampling => {
            let (q, a) = (need("logprobs")?, need("advantages")?);
            for i in 0..n {
                let r = (lps[i] - q[i]).exp();
                loss -= weight(i) * r * a[i];
                g[i] = -weight(i) * r * a[i];
            }
        }
        LossKind::Ppo { lo, hi } | LossKind::Cispo { lo, hi } => {
            let (q, a) = (need("logprobs")?, need("advantages")?);
            let los = d.get("clip_low_threshold");
            let his = d.get("clip_high_threshold");
            let ppo = matches!(kind, LossKind::Ppo { .. });
            for i in 0..n {
                let (lo, hi) = (
                    los.map(|v| v[i]).unwrap_or(*lo),
                    his.map(|v| v[i]).unwrap_or(*hi),
                );
                let r = (lps[i] - q[i]).exp();
                let rc = r.clamp(lo.min(hi), hi.max(lo));
                if rc != r {
                    clipped += 1.0;
                }
                if ppo {
                    let unclipped = r * a[i];
                    let clip = rc * a[i];
                    if unclipped <= clip {
                        loss -= weight(i) * unclipped;
                        g[i] = -weight(i) * unclipped;
                    } else {
                        loss -= weight(i) * clip;
                        // d(rc·A)/dlp = r·A inside the clip range, 0 outside.
                        g[i] = if rc == r { -weight(i) * r * a[i] } else { 0.0 };
                    }
                } else {
                    loss -= weight(i) * rc * a[i] * lps[i];
                    g[i] = -weight(i) * rc * a[i];
                }
            }
        }
        LossKind::Dro { beta } => {
            let (q, a) = (need("logprobs")?, need("advantages")?);
            for i in 0..n {
                let diff = lps[i] - q[i];
                loss -= weight(i) * (lps[i] * a[i] - 0.5 * beta * diff * diff);
                g[i] = -weight(i) * (a[i] - beta * diff);
            }
        }
        LossKind::Custom(_) => unreachable!("custom losses are evaluated per datum"),
    }
    Ok((loss, g, clipped))
}

pub struct FwdResult {
    /// Learner logprobs per datum, N×K row-major.
    pub logprobs: Vec<Vec<f64>>,
    pub loss: f64,
    pub metrics: BTreeMap<String, f64>,
}

/// Logprobs of every target of a datum.
pub fn datum_logprobs(adapter: &Adapter, d: &DatumIn) -> Vec<f64> {
    let mut out = Vec::with_capacity(d.targets.len());
    let mut buf = Vec::new();
    for t in 0..d.n() {
        adapter.position_logprobs(
            Ctx::at(&d.input, t),
            &d.targets[t * d.k..(t + 1) * d.k],
            &mut buf,
        );
        out.extend_from_slice(&buf);
    }
    out
}

/// Run the loss over `data`; with `grads`, accumulate ∂loss/∂params into it.
pub fn forward_backward(
    adapter: &Adapter,
    data: &[DatumIn],
    kind: &LossKind,
    mut grads: Option<&mut Params>,
) -> Result<FwdResult, String> {
    let mut res = FwdResult {
        logprobs: Vec::with_capacity(data.len()),
        loss: 0.0,
        metrics: BTreeMap::new(),
    };
    let mut clipped = 0.0;
    let mut tokens = 0.0;
    let mut custom_metrics: BTreeMap<String, f64> = BTreeMap::new();
    for (di, d) in data.iter().enumerate() {
        let lps = datum_logprobs(adapter, d);
        let (loss, g) = match kind {
            LossKind::Custom(f) => {
                let (loss, g, m) = f(d, &lps).map_err(|e| format!("datum {di}: {e}"))?;
                if g.len() != lps.len() {
                    return Err(format!(
                        "datum {di}: custom loss gradient has the wrong length"
                    ));
                }
                for (k, v) in m {
                    *custom_metrics.entry(k).or_insert(0.0) += v;
                }
                (loss, g)
            }
            _ => {
                let (loss, g, c) =
                    token_terms(kind, d, &lps).map_err(|e| format!("datum {di}: {e}"))?;
                clipped += c;
                (loss, g)
            }
        };
        if !loss.is_finite() {
            return Err(format!("datum {di}: the loss is not finite ({loss})"));
        }
        tokens += lps.len() as f64;
        res.loss += loss;
        if let Some(gr) = grads.as_deref_mut() {
            for t in 0..d.n() {
                adapter.backward_position(
                    Ctx::at(&d.input, t),
                    &d.targets[t * d.k..(t + 1) * d.k],
                    &g[t * d.k..(t + 1) * d.k],
                    gr,
                );
            }
        }
        res.logprobs.push(lps);
    }
    res.metrics.insert("loss:sum".into(), res.loss);
    if matches!(kind, LossKind::Ppo { .. } | LossKind::Cispo { .. }) {
        res.metrics.insert(
            "clip_fraction:mean".into(),
            if tokens > 0.0 { clipped / tokens } else { 0.0 },
        );
    }
    for (k, v) in custom_metrics {
        let v = if k.ends_with(":mean") && !data.is_empty() {
            v / data.len() as f64
        } else {
            v
        };
        res.metrics.insert(k, v);
    }
    Ok(res)
}

#[cfg(test)]
mod tests {
    use super::super::base::{base_model, find_spec, BaseModel};
    use super::super::net::Key;
    use super::*;

    fn adapter() -> Adapter {
        let base = base_model(5, find_spec("Qwen/Qwen3-8B").unwrap());
        let mut a = Adapter::new(base, 8, 2, true, true);
        a.params
            .insert(Key::A(17), (0..8).map(|i| 0.05 * i as f64 - 0.1).collect());
        a.params.insert(
            Key::A(23),
            (0..8).map(|i| 0.03 * (i as f64).cos()).collect(),
        );
        let c = BaseModel::class_of(1000) as u32;
        let n = a.base.class_len(c as usize);
        a.params.insert(
            Key::TokenBias(c),
            (0..n).map(|i| (i as f64).sin() * 0.2).collect(),
        );
        a
    }

    fn datum(loss: &str, two_d: bool) -> DatumIn {
        let input = vec![17, 23, 17];
        let (targets, k) = if two_d {
            (vec![1000, 1512, 23, 5, 17, 1000], 2)
        } else {
            (vec![1000, 23, 1512], 1)
        };
        let m = targets.len();
        let mut inputs = BTreeMap::new();
        if loss == "cross_entropy" {
            inputs.insert(
                "weights".into(),
                (0..m).map(|i| 0.5 + 0.25 * i as f64).collect(),
            );
        } else {
            let base = adapter();
            let d0 = DatumIn {
                input: input.clone(),
                targets: targets.clone(),
                k,
                two_d,
                inputs: BTreeMap::new(),
                input_shapes: BTreeMap::new(),
            };
            let lp = datum_logprobs(&base, &d0);
            // Sampler logprobs near the learner's so ratios straddle the clip range.
            let offs = [0.3, -0.05, 0.02, -0.4, 0.1, 0.0];
            inputs.insert(
                "logprobs".into(),
                lp.iter().zip(offs).map(|(l, o)| l + o).collect(),
            );
            inputs.insert(
                "advantages".into(),
                (0..m)
                    .map(|i| if i % 2 == 0 { 1.5 } else { -0.7 })
                    .collect(),
            );
        }
        DatumIn {
            input,
            targets,
            k,
            two_d,
            inputs,
            input_shapes: BTreeMap::new(),
        }
    }

    /// Every loss's analytic gradient agrees with central finite differences.
    #[test]
    fn loss_gradients_match_finite_differences() {
        let cases: Vec<(&str, BTreeMap<String, ConfigValue>, bool)> = vec![
            ("cross_entropy", BTreeMap::new(), false),
            ("cross_entropy", BTreeMap::new(), true),
            ("importance_sampling", BTreeMap::new(), false),
            ("ppo", BTreeMap::new(), false),
            (
                "cispo",
                BTreeMap::from([("clip_high_threshold".to_string(), ConfigValue::Number(1.1))]),
                false,
            ),
            (
                "dro",
                BTreeMap::from([("beta".to_string(), ConfigValue::Number(0.3))]),
                false,
            ),
        ];
        for (name, cfg, two_d) in cases {
            let kind = make_loss(name, &cfg).unwrap();
            let a = adapter();
            let d = vec![datum(name, two_d)];
            let mut grads = Params::new();
            let r = forward_backward(&a, &d, &kind, Some(&mut grads)).unwrap();
            assert!(r.metrics.contains_key("loss:sum"));
            let probes = [
                (Key::A(17), 2),
                (Key::A(23), 5),
                (Key::B, 40),
                (Key::ClassBias, BaseModel::class_of(1000)),
                (Key::TokenBias(BaseModel::class_of(1000) as u32), 1),
            ];
            for (k, i) in probes {
                let eps = 1e-6;
                let mut p = a.clone();
                p.params.get_mut(&k).unwrap()[i] += eps;
                let mut m = a.clone();
                m.params.get_mut(&k).unwrap()[i] -= eps;
                // CISPO's clip coefficient is a stop-gradient: hold it at the unperturbed value.
                let fp = forward_backward(&p, &d, &kind, None).unwrap().loss;
                let fm = forward_backward(&m, &d, &kind, None).unwrap().loss;
                let fd = if name == "cispo" {
                    cispo_sg_fd(&a, &p, &m, &d[0], eps, &kind)
                } else {
                    (fp - fm) / (2.0 * eps)
                };
                let an = grads.get(&k).map(|v| v[i]).unwrap_or(0.0);
                assert!(
                    (fd - an).abs() < 1e-5 * (1.0 + fd.abs()),
                    "{name} {k:?}[{i}]: fd {fd} vs {an}"
                );
            }
        }
    }

    /// Finite difference of CISPO's surrogate with the clipped ratio frozen at `a`.
    fn cispo_sg_fd(
        a: &Adapter,
        p: &Adapter,
        m: &Adapter,
        d: &DatumIn,
        eps: f64,
        kind: &LossKind,
    ) -> f64 {
        let LossKind::Cispo { lo, hi } = kind else {
            unreachable!()
        };
        let lp0 = datum_logprobs(a, d);
        let q = &d.inputs["logprobs"];
        let adv = &d.inputs["advantages"];
        let coef: Vec<f64> = lp0
            .iter()
            .zip(q)
            .map(|(l, q)| (l - q).exp().clamp(*lo, *hi))
            .collect();
        let f = |ad: &Adapter| -> f64 {
            let lp = datum_logprobs(ad, d);
            lp.iter()
                .enumerate()
                .map(|(i, l)| -coef[i] * adv[i] * l)
                .sum()
        };
        (f(p) - f(m)) / (2.0 * eps)
    }

    #[test]
    fn ppo_clips_and_reports() {
        let kind = make_loss("ppo", &BTreeMap::new()).unwrap();
        let a = adapter();
        let r = forward_backward(&a, &[datum("ppo", false)], &kind, None).unwrap();
        assert!(r.metrics["clip_fraction:mean"] > 0.0);
    }

    #[test]
    fn config_validation() {
        assert!(make_loss(
            "ppo",
            &BTreeMap::from([("beta".to_string(), ConfigValue::Number(1.0))])
        )
        .unwrap_err()
        .contains("not valid"));
        assert!(make_loss(
            "dro",
            &BTreeMap::from([("beta".to_string(), ConfigValue::Text("x".into()))])
        )
        .unwrap_err()
        .contains("number"));
        assert!(make_loss("nope", &BTreeMap::new())
            .unwrap_err()
            .contains("unknown loss_fn"));
        assert!(make_loss("gspo", &BTreeMap::new())
            .unwrap_err()
            .contains("not supported"));
        let cfg = BTreeMap::from([("clip_low_threshold".to_string(), ConfigValue::Number(0.5))]);
        match make_loss("ppo", &cfg).unwrap() {
            LossKind::Ppo { lo, hi } => assert_eq!((lo, hi), (0.5, 1.2)),
            k => panic!("{k:?}"),
        }
    }

    #[test]
    fn forward_logprobs_have_target_shape() {
        let a = adapter();
        let r = forward_backward(
            &a,
            &[datum("cross_entropy", true)],
            &LossKind::CrossEntropy,
            None,
        )
        .unwrap();
        assert_eq!(r.logprobs[0].len(), 6);
        assert!(r.logprobs[0].iter().all(|l| *l < 0.0 && l.is_finite()));
    }
}
