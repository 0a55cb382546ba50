//! The tiny trainable network: the base model's prior (language statistics over the
//! context `x₋₁ x`) plus a LoRA-like adapter on the input token `x`, through a
//! class-factorised softmax.
//!
//! ```text
//! h        = A[x] · B                          (A: sparse rows, r; B: r×D)
//! z_c      = log q(c | x₋₁ x) + W_c · h + Δcb_c        (C = 512 classes)
//! z_v      = log q(v | x₋₁ x) + U_v · h + Δub_v        (v in class(v) = v mod C)
//! log p(v) = log softmax_c(z)[class(v)] + log softmax_{u ∈ class(v)}(z)[v]
//! ```
//!
//! With a zero adapter `p = q` exactly. Families without statistics use the pseudo-random
//! prior instead: `h = E[x] + A[x]·B`, `cb_c` and `ub_v` in place of the log masses
//! (`super::base::Prior`).
//!
//! Trainable: `A` rows and `B` (when `train_attn` or `train_mlp`), `Δcb` and `Δub`
//! (when `train_unembed`). Sparse parameters (`A` rows, `Δub` class blocks) start at
//! zero and are only materialised once they receive a gradient, so untouched rows are
//! exactly zero and AdamW leaves them exactly zero.

use super::base::{BaseModel, Ctx, Prior, C, D};
use crate::util::{hash_words, mix64};
use std::collections::BTreeMap;
use std::sync::Arc;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Key {
    /// Dense `r×D` up-projection of the hidden adapter.
    B,
    /// Dense class-bias delta (C).
    ClassBias,
    /// Sparse adapter row of input token `x` (r).
    A(u32),
    /// Token-bias deltas of one class block (class_len(c)).
    TokenBias(u32),
}

impl Key {
    pub fn name(&self) -> String {
        match self {
            Key::B => "lora_B".into(),
            Key::ClassBias => "class_bias".into(),
            Key::A(x) => format!("lora_A[{x}]"),
            Key::TokenBias(c) => format!("token_bias[class {c}]"),
        }
    }
}

pub type Params = BTreeMap<Key, Vec<f64>>;

/// Trainable weights on top of a base model.
#[derive(Clone)]
pub struct Adapter {
    pub base: Arc<BaseModel>,
    pub rank: usize,
    pub train_hidden: bool,
    pub train_unembed: bool,
    pub params: Params,
}

impl Adapter {
    pub fn new(
        base: Arc<BaseModel>,
        rank: usize,
        lora_seed: u64,
        train_hidden: bool,
        train_unembed: bool,
    ) -> Adapter {
        let mut params = Params::new();
        let scale = 2.0 / (rank as f64).sqrt();
        let mut b = vec![0.0; rank * D];
        for (i, x) in b.iter_mut().enumerate() {
            let w = mix64(hash_words(&[lora_seed, 0xB0B0, i as u64]));
            *x = ((w >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0) * scale;
        }
        params.insert(Key::B, b);
        params.insert(Key::ClassBias, vec![0.0; C]);
        Adapter {
            base,
            rank,
            train_hidden,
            train_unembed,
            params,
        }
    }

    pub fn trains(&self, k: &Key) -> bool {
        match k {
            Key::B | Key::A(_) => self.train_hidden,
            Key::ClassBias | Key::TokenBias(_) => self.train_unembed,
        }
    }

    /// The hidden state for input token `x`.
    #[inline]
    pub fn hidden(&self, x: u32, h: &mut [f64; D]) {
        self.base.base_hidden(x, h);
        if let Some(a) = self.params.get(&Key::A(x)) {
            let b = &self.params[&Key::B];
            for (i, ai) in a.iter().enumerate() {
                if *ai != 0.0 {
                    let row = &b[i * D..(i + 1) * D];
                    for j in 0..D {
                        h[j] += ai * row[j];
                    }
                }
            }
        }
    }

    /// Log-probabilities over the C classes given the prior and the hidden state.
    pub fn class_logprobs(&self, prior: &Prior, h: &[f64; D], out: &mut Vec<f64>) {
        self.base.class_base(prior, out);
        let cb = &self.params[&Key::ClassBias];
        let w = &self.base.class_w;
        let live = h.iter().any(|v| *v != 0.0);
        for c in 0..C {
            let mut z = out[c] + cb[c];
            if live {
                let row = &w[c * D..(c + 1) * D];
                for j in 0..D {
                    z += row[j] * h[j];
                }
            }
            out[c] = z;
        }
        log_softmax_in_place(out);
    }

    /// Log-probabilities of the members of class `c` (in member order) given the prior
    /// and `h`.
    pub fn within_logprobs(&self, prior: &Prior, h: &[f64; D], c: usize, out: &mut Vec<f64>) {
        let delta = self.params.get(&Key::TokenBias(c as u32));
        let live = h.iter().any(|v| *v != 0.0);
        if !live && delta.is_none() {
            if let Prior::NGram { .. } = prior {
                // Nothing of the adapter here: the prior's own within-class distribution,
                // normalised in probability space (one log per member).
                self.base.member_probs(prior, c, out);
                let s: f64 = out.iter().sum();
                for x in out.iter_mut() {
                    *x = (*x / s).ln();
                }
                return;
            }
        }
        let rows = self.base.rows();
        self.base.member_base(prior, &rows, c, out);
        let mut row = [0.0; D];
        for (jm, z) in out.iter_mut().enumerate() {
            if let Some(d) = delta {
                *z += d[jm];
            }
            if live {
                rows.output_row(BaseModel::class_member(c, jm), &mut row);
                for j in 0..D {
                    *z += row[j] * h[j];
                }
            }
        }
        log_softmax_in_place(out);
    }

    /// Full next-token log-distribution over the vocabulary in context `ctx`.
    pub fn full_logprobs(&self, ctx: Ctx) -> Vec<f64> {
        let prior = self.base.prior(ctx);
        let mut h = [0.0; D];
        self.hidden(ctx.prev, &mut h);
        if matches!(prior, Prior::Random) || h.iter().any(|v| *v != 0.0) {
            self.base.ensure_table();
        }
        let mut lpc = Vec::with_capacity(C);
        self.class_logprobs(&prior, &h, &mut lpc);
        let mut out = vec![0.0; self.base.vocab()];
        let mut w = Vec::new();
        for (c, lc) in lpc.iter().enumerate() {
            self.within_logprobs(&prior, &h, c, &mut w);
            for (jm, lw) in w.iter().enumerate() {
                out[BaseModel::class_member(c, jm) as usize] = lc + lw;
            }
        }
        out
    }

    /// log p(v | ctx) for a handful of targets at one position.
    pub fn position_logprobs(&self, ctx: Ctx, targets: &[u32], out: &mut Vec<f64>) {
        let prior = self.base.prior(ctx);
        let mut h = [0.0; D];
        self.hidden(ctx.prev, &mut h);
        let mut lpc = Vec::with_capacity(C);
        self.class_logprobs(&prior, &h, &mut lpc);
        let mut cache: Vec<(usize, Vec<f64>)> = Vec::new();
        out.clear();
        for &v in targets {
            let c = BaseModel::class_of(v);
            let idx = match cache.iter().position(|(cc, _)| *cc == c) {
                Some(i) => i,
                None => {
                    let mut w = Vec::new();
                    self.within_logprobs(&prior, &h, c, &mut w);
                    cache.push((c, w));
                    cache.len() - 1
                }
            };
            out.push(lpc[c] + cache[idx].1[BaseModel::index_in_class(v)]);
        }
    }

    /// Backpropagate `∂L/∂log p(targets[k] | ctx) = g[k]` into `grads`.
    pub fn backward_position(&self, ctx: Ctx, targets: &[u32], g: &[f64], grads: &mut Params) {
        if g.iter().all(|&v| v == 0.0) {
            return;
        }
        let x = ctx.prev;
        let prior = self.base.prior(ctx);
        let mut h = [0.0; D];
        self.hidden(x, &mut h);
        let mut lpc = Vec::with_capacity(C);
        self.class_logprobs(&prior, &h, &mut lpc);
        let total: f64 = g.iter().sum();
        // ∂L/∂z_c = Σ_k g_k 1[c = class(v_k)] − G p(c)
        let mut gz: Vec<f64> = lpc.iter().map(|l| -total * l.exp()).collect();
        let mut classes: Vec<(usize, f64)> = Vec::new();
        for (&v, &gk) in targets.iter().zip(g) {
            let c = BaseModel::class_of(v);
            gz[c] += gk;
            match classes.iter_mut().find(|(cc, _)| *cc == c) {
                Some(e) => e.1 += gk,
                None => classes.push((c, gk)),
            }
        }
        let mut gh = [0.0; D];
        let w = &self.base.class_w;
        for (c, gzc) in gz.iter().enumerate() {
            if *gzc != 0.0 {
                let row = &w[c * D..(c + 1) * D];
                for j in 0..D {
                    gh[j] += gzc * row[j];
                }
            }
        }
        if self.train_unembed {
            let cbg = grads.entry(Key::ClassBias).or_insert_with(|| vec![0.0; C]);
            for (a, b) in cbg.iter_mut().zip(&gz) {
                *a += b;
            }
        }
        let mut wl = Vec::new();
        let mut row = [0.0; D];
        let rows = self.base.rows();
        for &(c, gsum) in &classes {
            self.within_logprobs(&prior, &h, c, &mut wl);
            // ∂L/∂z_u = Σ_{k: v_k = u} g_k − (Σ_{k in class} g_k) p(u|c)
            let mut gzu: Vec<f64> = wl.iter().map(|l| -gsum * l.exp()).collect();
            for (&v, &gk) in targets.iter().zip(g) {
                if BaseModel::class_of(v) == c {
                    gzu[BaseModel::index_in_class(v)] += gk;
                }
            }
            for (jm, gu) in gzu.iter().enumerate() {
                if *gu != 0.0 {
                    rows.output_row(BaseModel::class_member(c, jm), &mut row);
                    for j in 0..D {
                        gh[j] += gu * row[j];
                    }
                }
            }
            if self.train_unembed {
                let e = grads
                    .entry(Key::TokenBias(c as u32))
                    .or_insert_with(|| vec![0.0; gzu.len()]);
                for (a, b) in e.iter_mut().zip(&gzu) {
                    *a += b;
                }
            }
        }
        if self.train_hidden {
            let r = self.rank;
            let b = &self.params[&Key::B];
            // ∂L/∂A[x] = B · gh
            let ga = grads.entry(Key::A(x)).or_insert_with(|| vec![0.0; r]);
            for i in 0..r {
                let row = &b[i * D..(i + 1) * D];
                let mut s = 0.0;
                for j in 0..D {
                    s += row[j] * gh[j];
                }
                ga[i] += s;
            }
            // ∂L/∂B = A[x]ᵀ ⊗ gh
            if let Some(a) = self.params.get(&Key::A(x)) {
                let gb = grads.entry(Key::B).or_insert_with(|| vec![0.0; r * D]);
                for i in 0..r {
                    if a[i] != 0.0 {
                        for j in 0..D {
                            gb[i * D + j] += a[i] * gh[j];
                        }
                    }
                }
            }
        }
    }
}

pub fn log_softmax_in_place(z: &mut [f64]) {
    let m = z.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let s: f64 = z.iter().map(|v| (v - m).exp()).sum();
    let lse = m + s.ln();
    for v in z.iter_mut() {
        *v -= lse;
    }
}

#[cfg(test)]
mod tests {
    use super::super::base::{base_model, find_spec};
    use super::*;
    use std::sync::Arc;

    /// An adapter with non-zero state everywhere (so every gradient path is exercised), on
    /// Llama 3's language statistics (`random`: on the pseudo-random prior).
    fn adapter(random: bool) -> Adapter {
        let spec = find_spec("meta-llama/Llama-3.2-1B").unwrap();
        let base = if random {
            Arc::new(BaseModel::without_statistics(3, spec))
        } else {
            let b = base_model(3, spec);
            assert!(b.ngram().is_some(), "Llama 3's statistics are missing");
            b
        };
        let mut a = Adapter::new(base, 4, 11, true, true);
        a.params.insert(Key::A(5), vec![0.3, -0.2, 0.1, 0.05]);
        a.params
            .insert(Key::TokenBias(BaseModel::class_of(9) as u32), {
                let n = a.base.class_len(BaseModel::class_of(9));
                (0..n).map(|i| (i as f64 * 0.37).sin() * 0.1).collect()
            });
        for (i, v) in a
            .params
            .get_mut(&Key::ClassBias)
            .unwrap()
            .iter_mut()
            .enumerate()
        {
            *v = (i as f64 * 0.11).cos() * 0.05;
        }
        a
    }

    /// A context the statistics know (" the" → " whale" is common in Moby-Dick): ids from
    /// Llama 3's tokenizer.json (" of" 315, " the" 279).
    const CTX: Ctx = Ctx {
        prev2: 315,
        prev: 279,
    };

    #[test]
    fn distribution_is_normalised() {
        for random in [false, true] {
            let a = adapter(random);
            for ctx in [Ctx::new(Ctx::NONE, 5), CTX, Ctx::new(7, 5)] {
                let full = a.full_logprobs(ctx);
                let total: f64 = full.iter().map(|l| l.exp()).sum();
                assert!((total - 1.0).abs() < 1e-9, "{total}");
                let mut out = Vec::new();
                a.position_logprobs(ctx, &[9, 128_009, 77], &mut out);
                assert!((out[0] - full[9]).abs() < 1e-12);
                assert!((out[1] - full[128_009]).abs() < 1e-12);
                assert!((out[2] - full[77]).abs() < 1e-12);
            }
        }
    }

    #[test]
    fn a_zero_adapter_is_the_prior() {
        // With no adapter state the model's distribution is the statistics' exactly.
        let spec = find_spec("meta-llama/Llama-3.2-1B").unwrap();
        let a = Adapter::new(base_model(3, spec), 4, 11, true, true);
        let ng = a.base.ngram().unwrap();
        let d = ng.dist(CTX.prev2, CTX.prev);
        let full = a.full_logprobs(CTX);
        let mut m = Vec::new();
        for c in [0usize, 279 % C, spec.eos as usize % C, 511] {
            d.members(c, a.base.class_len(c), &mut m);
            for (j, q) in m.iter().enumerate() {
                let v = BaseModel::class_member(c, j);
                let q = q + if v == spec.eos { d.end() } else { 0.0 };
                assert!((full[v as usize] - q.ln()).abs() < 1e-9, "{v}");
            }
        }
        // " of the" rarely ends a sentence, but EOS keeps the sentence-end mass.
        assert!(full[spec.eos as usize].exp() >= d.end() && d.end() > 0.0);
    }

    /// d log p(v|ctx) / d param agrees with central finite differences for every
    /// parameter kind (the loss gradients build on this), on both priors.
    #[test]
    fn backward_matches_finite_differences() {
        for random in [false, true] {
            let a = adapter(random);
            let ctx = Ctx::new(279, 5);
            let targets = [9u32, 9 + 512, 128_009];
            let g = [1.0, -0.5, 0.25];
            let f = |ad: &Adapter| -> f64 {
                let mut o = Vec::new();
                ad.position_logprobs(ctx, &targets, &mut o);
                o.iter().zip(&g).map(|(l, w)| l * w).sum()
            };
            let mut grads = Params::new();
            a.backward_position(ctx, &targets, &g, &mut grads);
            let probes: Vec<(Key, usize)> = vec![
                (Key::A(5), 0),
                (Key::A(5), 3),
                (Key::B, 0),
                (Key::B, 3 * D + 7),
                (Key::ClassBias, BaseModel::class_of(9)),
                (Key::ClassBias, 100),
                (
                    Key::TokenBias(BaseModel::class_of(9) as u32),
                    BaseModel::index_in_class(9),
                ),
                (Key::TokenBias(BaseModel::class_of(9) as u32), 3),
            ];
            for (k, i) in probes {
                let eps = 1e-6;
                let mut p = a.clone();
                p.params.get_mut(&k).unwrap()[i] += eps;
                let mut m = a.clone();
                m.params.get_mut(&k).unwrap()[i] -= eps;
                let fd = (f(&p) - f(&m)) / (2.0 * eps);
                let an = grads.get(&k).map(|v| v[i]).unwrap_or(0.0);
                assert!(
                    (fd - an).abs() < 1e-6 * (1.0 + fd.abs()),
                    "random {random}: {k:?}[{i}]: fd {fd} vs analytic {an}"
                );
            }
            // A row for an input never seen gets a gradient (through B) even though it
            // is zero.
            let mut g2 = Params::new();
            a.backward_position(Ctx::new(5, 6), &[9], &[1.0], &mut g2);
            assert!(g2[&Key::A(6)].iter().any(|v| *v != 0.0));
            assert!(!g2.contains_key(&Key::A(5)));
        }
    }
}
