//! The sampler: generation with max_tokens / temperature / top_k / top_p / stop / seed,
//! prompt logprobs, top-k prompt and sample logprobs, target prompt logprobs and
//! prompt alternative-token draws.
//!
//! With `temperature == 1`, `top_k` off and `top_p == 1` (the common case) tokens are
//! drawn exactly by the class factorisation (class, then token in class), costing
//! O((C + V/C)·D) per token. Other settings compute the full distribution over the
//! vocabulary (O(V·D) per token). Returned logprobs are the model's raw logprobs
//! (temperature 1), as Tinker reports them.

use super::base::{BaseModel, Ctx, C, D};
use super::net::Adapter;
use crate::util::{hash_words, Rng};
use crate::vocab::Vocab;
use std::cmp::Ordering;

pub const MASK_LOGPROB: f32 = -99999.0;

#[derive(Clone, Debug, PartialEq)]
pub enum Stop {
    /// `stop` absent: stop at EOS.
    Default,
    Tokens(Vec<u32>),
    Strings(Vec<String>),
}

#[derive(Clone, Debug)]
pub struct Params {
    pub max_tokens: usize,
    pub temperature: f64,
    pub top_k: i64,
    pub top_p: f64,
    pub seed: Option<u64>,
    pub stop: Stop,
}

impl Params {
    fn exact_path(&self, vocab: usize) -> bool {
        self.temperature == 1.0
            && (self.top_k <= 0 || self.top_k as usize >= vocab)
            && self.top_p >= 1.0
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct TargetSpec {
    pub rows: usize,
    pub k: usize,
    /// Requested id per cell (None: `-1`, nothing requested), row-major.
    pub cells: Vec<Option<u32>>,
    /// The request's CSR structure, echoed in the response.
    pub csr: Option<(Vec<i64>, Vec<i64>)>,
}

#[derive(Clone, Debug)]
pub struct Spec {
    pub prompt: Vec<u32>,
    pub num_samples: usize,
    pub params: Params,
    pub prompt_logprobs: bool,
    pub topk_prompt: usize,
    pub topk_sample: usize,
    pub target: Option<TargetSpec>,
    pub alt_k: usize,
    pub last_n: Option<usize>,
    /// Seed used when `params.seed` is absent.
    pub fallback_seed: u64,
}

#[derive(Clone, Debug, PartialEq)]
pub struct TopK {
    pub k: usize,
    pub length: usize,
    pub ids: Vec<i32>,
    pub logprobs: Vec<f32>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Sequence {
    pub tokens: Vec<u32>,
    pub logprobs: Vec<f32>,
    /// true: stopped on a stop token/string; false: hit max_tokens.
    pub stopped: bool,
    pub topk: Option<TopK>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Output {
    pub sequences: Vec<Sequence>,
    /// One entry per prompt token, NaN where not computed.
    pub prompt_logprobs: Option<Vec<f32>>,
    pub topk_prompt: Option<TopK>,
    /// Target logprobs, row-major `[rows, k]` (0.0 where nothing was requested).
    pub target: Option<(TargetSpec, Vec<f32>)>,
    /// `(tokens, logprobs)`, each `[len(prompt) − 1, k]`.
    pub alt: Option<(usize, Vec<i64>, Vec<f32>)>,
}

/// Draw an index from unnormalised log-weights (max-subtracted).
fn draw(logw: &[f64], rng: &mut Rng) -> usize {
    let m = logw.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let w: Vec<f64> = logw.iter().map(|l| (l - m).exp()).collect();
    let total: f64 = w.iter().sum();
    let mut u = rng.next_f64() * total;
    for (i, x) in w.iter().enumerate() {
        u -= x;
        if u < 0.0 {
            return i;
        }
    }
    logw.iter().rposition(|l| l.is_finite()).unwrap_or(0)
}

/// One next-token draw in context `ctx`; returns (token, raw logprob).
pub fn step(ad: &Adapter, ctx: Ctx, p: &Params, rng: &mut Rng) -> (u32, f64) {
    if p.exact_path(ad.base.vocab()) {
        let prior = ad.base.prior(ctx);
        let mut h = [0.0; D];
        ad.hidden(ctx.prev, &mut h);
        let mut lpc = Vec::with_capacity(C);
        ad.class_logprobs(&prior, &h, &mut lpc);
        let c = draw(&lpc, rng);
        let mut w = Vec::new();
        ad.within_logprobs(&prior, &h, c, &mut w);
        let j = draw(&w, rng);
        return (BaseModel::class_member(c, j), lpc[c] + w[j]);
    }
    let full = ad.full_logprobs(ctx);
    if p.temperature <= 0.0 {
        let (i, l) = full
            .iter()
            .enumerate()
            .max_by(|a, b| {
                a.1.partial_cmp(b.1)
                    .unwrap_or(Ordering::Equal)
                    .then(b.0.cmp(&a.0))
            })
            .map(|(i, l)| (i, *l))
            .unwrap_or((0, 0.0));
        return (i as u32, l);
    }
    let t = p.temperature;
    let mut idx: Vec<u32> = (0..full.len() as u32).collect();
    let by_desc = |a: &u32, b: &u32| {
        full[*b as usize]
            .partial_cmp(&full[*a as usize])
            .unwrap_or(Ordering::Equal)
            .then(a.cmp(b))
    };
    if p.top_k > 0 && (p.top_k as usize) < idx.len() {
        let k = p.top_k as usize;
        idx.select_nth_unstable_by(k - 1, by_desc);
        idx.truncate(k);
    }
    if p.top_p < 1.0 {
        idx.sort_unstable_by(by_desc);
        let m = full[idx[0] as usize] / t;
        let total: f64 = idx.iter().map(|&i| (full[i as usize] / t - m).exp()).sum();
        let mut cum = 0.0;
        let mut keep = idx.len();
        for (n, &i) in idx.iter().enumerate() {
            cum += (full[i as usize] / t - m).exp() / total;
            if cum >= p.top_p {
                keep = n + 1;
                break;
            }
        }
        idx.truncate(keep.max(1));
    }
    let logw: Vec<f64> = idx.iter().map(|&i| full[i as usize] / t).collect();
    let j = draw(&logw, rng);
    (idx[j], full[idx[j] as usize])
}

/// Top-k next tokens in context `ctx` by branch and bound over classes (a class whose
/// log probability is below the current k-th best cannot contribute).
pub fn topk_at(ad: &Adapter, ctx: Ctx, k: usize) -> Vec<(u32, f64)> {
    if k == 0 {
        return vec![];
    }
    let prior = ad.base.prior(ctx);
    let mut h = [0.0; D];
    ad.hidden(ctx.prev, &mut h);
    let mut lpc = Vec::with_capacity(C);
    ad.class_logprobs(&prior, &h, &mut lpc);
    let mut order: Vec<usize> = (0..C).collect();
    order.sort_by(|a, b| {
        lpc[*b]
            .partial_cmp(&lpc[*a])
            .unwrap_or(Ordering::Equal)
            .then(a.cmp(b))
    });
    let mut best: Vec<(u32, f64)> = Vec::with_capacity(k + 1);
    let mut w = Vec::new();
    for c in order {
        if best.len() == k && lpc[c] <= best[k - 1].1 {
            break;
        }
        if ad.base.class_len(c) == 0 {
            continue;
        }
        ad.within_logprobs(&prior, &h, c, &mut w);
        for (j, lw) in w.iter().enumerate() {
            let lp = lpc[c] + lw;
            if best.len() < k || lp > best[k - 1].1 {
                let tok = BaseModel::class_member(c, j);
                let pos = best.partition_point(|e| e.1 > lp || (e.1 == lp && e.0 < tok));
                best.insert(pos, (tok, lp));
                best.truncate(k);
            }
        }
    }
    best
}

fn topk_rows(rows: &[Option<Vec<(u32, f64)>>], k: usize) -> TopK {
    let mut ids = Vec::with_capacity(rows.len() * k);
    let mut lps = Vec::with_capacity(rows.len() * k);
    for r in rows {
        for j in 0..k {
            match r.as_ref().and_then(|r| r.get(j)) {
                Some((t, l)) => {
                    ids.push(*t as i32);
                    lps.push(*l as f32);
                }
                None => {
                    ids.push(0);
                    lps.push(MASK_LOGPROB);
                }
            }
        }
    }
    TopK {
        k,
        length: rows.len(),
        ids,
        logprobs: lps,
    }
}

/// The token ids that end a sample: `eos` is the model's EOS and its other stop tokens
/// (`BaseSpec::stop_tokens`), which hold unless `stop` is an explicit empty list.
fn stop_tokens(stop: &Stop, eos: &[u32]) -> Vec<u32> {
    match stop {
        Stop::Default => eos.to_vec(),
        Stop::Tokens(t) if t.is_empty() => vec![],
        Stop::Tokens(t) => {
            let mut v = t.clone();
            v.extend_from_slice(eos);
            v
        }
        Stop::Strings(s) if s.is_empty() => vec![],
        Stop::Strings(_) => eos.to_vec(),
    }
}

/// Run a sampling request against `ad`. `vocab` decodes tokens for stop strings.
pub fn run(ad: &Adapter, spec: &Spec, vocab: &Vocab) -> Output {
    let p = &spec.params;
    let n_prompt = spec.prompt.len();
    let eos = ad.base.spec.eos;
    let model_stops: Vec<u32> = ad.base.spec.stop_tokens().collect();
    let stops = stop_tokens(&p.stop, &model_stops);
    let strings: Vec<&[u8]> = match &p.stop {
        Stop::Strings(s) => s
            .iter()
            .map(|s| s.as_bytes())
            .filter(|s| !s.is_empty())
            .collect(),
        _ => vec![],
    };
    let seed = p.seed.unwrap_or(spec.fallback_seed);
    let first_scored = match spec.last_n {
        Some(n) => n_prompt.saturating_sub(n).max(1),
        None => 1,
    };

    let mut sequences = Vec::with_capacity(spec.num_samples);
    for s in 0..spec.num_samples {
        let mut rng = Rng::new(hash_words(&[seed, s as u64, 0x5A3F]));
        let mut ctx = match spec.prompt.len() {
            0 => Ctx::new(Ctx::NONE, eos),
            n => Ctx::at(&spec.prompt, n - 1),
        };
        let mut seq = Sequence {
            tokens: vec![],
            logprobs: vec![],
            stopped: false,
            topk: None,
        };
        let mut text: Vec<u8> = Vec::new();
        let mut topk_rows_s: Vec<Option<Vec<(u32, f64)>>> = vec![];
        while seq.tokens.len() < p.max_tokens {
            if spec.topk_sample > 0 {
                topk_rows_s.push(Some(topk_at(ad, ctx, spec.topk_sample)));
            }
            let (tok, lp) = step(ad, ctx, p, &mut rng);
            seq.tokens.push(tok);
            seq.logprobs.push(lp as f32);
            ctx = ctx.then(tok);
            if stops.contains(&tok) {
                seq.stopped = true;
                break;
            }
            if !strings.is_empty() {
                let before = text.len();
                vocab.push_bytes(tok, &mut text);
                let longest = strings.iter().map(|s| s.len()).max().unwrap_or(0);
                let from = before.saturating_sub(longest.saturating_sub(1));
                let window = &text[from..];
                if strings
                    .iter()
                    .any(|s| window.windows(s.len()).any(|w| w == *s))
                {
                    seq.stopped = true;
                    break;
                }
            }
        }
        if spec.topk_sample > 0 {
            seq.topk = Some(topk_rows(&topk_rows_s, spec.topk_sample));
        }
        sequences.push(seq);
    }

    let prompt_logprobs = spec.prompt_logprobs.then(|| {
        let mut out = vec![f32::NAN; n_prompt];
        let mut buf = Vec::new();
        for (i, o) in out.iter_mut().enumerate().skip(first_scored) {
            ad.position_logprobs(
                Ctx::at(&spec.prompt, i - 1),
                &spec.prompt[i..i + 1],
                &mut buf,
            );
            *o = buf[0] as f32;
        }
        out
    });

    let topk_prompt = (spec.topk_prompt > 0).then(|| {
        let rows: Vec<Option<Vec<(u32, f64)>>> = (0..n_prompt)
            .map(|i| {
                (i >= first_scored)
                    .then(|| topk_at(ad, Ctx::at(&spec.prompt, i - 1), spec.topk_prompt))
            })
            .collect();
        topk_rows(&rows, spec.topk_prompt)
    });

    let target = spec.target.as_ref().map(|t| {
        let mut vals = vec![0f32; t.rows * t.k];
        let mut buf = Vec::new();
        for r in 0..t.rows {
            let row = &t.cells[r * t.k..(r + 1) * t.k];
            let ids: Vec<u32> = row.iter().flatten().copied().collect();
            if ids.is_empty() {
                continue;
            }
            ad.position_logprobs(Ctx::at(&spec.prompt, r), &ids, &mut buf);
            let mut it = buf.iter();
            for (j, cell) in row.iter().enumerate() {
                if cell.is_some() {
                    vals[r * t.k + j] = *it.next().unwrap_or(&0.0) as f32;
                }
            }
        }
        (t.clone(), vals)
    });

    let alt = (spec.alt_k > 0 && n_prompt > 1).then(|| {
        let k = spec.alt_k;
        let mut rng = Rng::new(hash_words(&[seed, 0xA17A17]));
        let mut toks = Vec::with_capacity((n_prompt - 1) * k);
        let mut lps = Vec::with_capacity((n_prompt - 1) * k);
        for i in 0..n_prompt - 1 {
            for _ in 0..k {
                let (t, l) = step(ad, Ctx::at(&spec.prompt, i), p, &mut rng);
                toks.push(t as i64);
                lps.push(l as f32);
            }
        }
        (k, toks, lps)
    });

    Output {
        sequences,
        prompt_logprobs,
        topk_prompt,
        target,
        alt,
    }
}

#[cfg(test)]
mod tests {
    use super::super::base::{base_model, find_spec};
    use super::super::net::Key;
    use super::*;

    fn adapter() -> Adapter {
        Adapter::new(
            base_model(4, find_spec("Qwen/Qwen3-8B").unwrap()),
            8,
            1,
            true,
            true,
        )
    }

    fn spec(params: Params) -> Spec {
        Spec {
            // "+ of the" in Qwen3's ids: a context the statistics continue in many ways.
            prompt: vec![10, 315, 279],
            num_samples: 3,
            params,
            prompt_logprobs: true,
            topk_prompt: 3,
            topk_sample: 2,
            target: None,
            alt_k: 2,
            last_n: None,
            fallback_seed: 99,
        }
    }

    fn params() -> Params {
        Params {
            max_tokens: 12,
            temperature: 1.0,
            top_k: -1,
            top_p: 1.0,
            seed: Some(5),
            stop: Stop::Default,
        }
    }

    #[test]
    fn same_seed_same_output_and_limits_hold() {
        let ad = adapter();
        let v = Vocab::fallback(ad.base.vocab());
        let a = run(&ad, &spec(params()), &v);
        let b = run(&ad, &spec(params()), &v);
        // Debug formatting compares NaN entries (prompt position 0) as equal.
        assert_eq!(format!("{a:?}"), format!("{b:?}"));
        let mut p2 = params();
        p2.seed = Some(6);
        assert_ne!(a.sequences, run(&ad, &spec(p2), &v).sequences);
        for s in &a.sequences {
            assert!(s.tokens.len() <= 12);
            assert_eq!(s.tokens.len(), s.logprobs.len());
            if s.stopped {
                assert_eq!(*s.tokens.last().unwrap(), 151_645);
            }
            assert_eq!(s.topk.as_ref().unwrap().length, s.tokens.len());
        }
        let pl = a.prompt_logprobs.unwrap();
        assert!(pl[0].is_nan() && pl[1] < 0.0 && pl[2] < 0.0);
        let tk = a.topk_prompt.unwrap();
        assert_eq!((tk.length, tk.k), (3, 3));
        assert_eq!(tk.ids[0..3], [0, 0, 0]);
        // The top-1 logprob at a position bounds the actual prompt token's logprob.
        assert!(tk.logprobs[3] >= pl[1]);
        let (k, toks, _) = a.alt.unwrap();
        assert_eq!((k, toks.len()), (2, 4));
    }

    #[test]
    fn topk_agrees_with_full_distribution() {
        let ad = adapter();
        let full = ad.full_logprobs(Ctx::new(7, 42));
        let mut sorted: Vec<(u32, f64)> = full
            .iter()
            .enumerate()
            .map(|(i, l)| (i as u32, *l))
            .collect();
        sorted.sort_by(|a, b| b.1.partial_cmp(&a.1).unwrap());
        let tk = topk_at(&ad, Ctx::new(7, 42), 5);
        for (a, b) in tk.iter().zip(&sorted) {
            assert_eq!(a.0, b.0);
            assert!((a.1 - b.1).abs() < 1e-12);
        }
    }

    #[test]
    fn greedy_top_k_top_p_and_stops() {
        let ad = adapter();
        let v = Vocab::fallback(ad.base.vocab());
        let full = ad.full_logprobs(Ctx::new(315, 279));
        let argmax = full
            .iter()
            .enumerate()
            .max_by(|a, b| a.1.partial_cmp(b.1).unwrap())
            .unwrap()
            .0 as u32;
        let mut p = params();
        p.temperature = 0.0;
        p.stop = Stop::Tokens(vec![]);
        p.max_tokens = 1;
        let out = run(&ad, &spec(p), &v);
        assert!(out
            .sequences
            .iter()
            .all(|s| s.tokens == vec![argmax] && !s.stopped));
        let mut p = params();
        p.top_k = 1;
        p.max_tokens = 1;
        assert_eq!(run(&ad, &spec(p), &v).sequences[0].tokens, vec![argmax]);
        let mut p = params();
        p.top_p = 1e-9;
        p.max_tokens = 1;
        assert_eq!(run(&ad, &spec(p), &v).sequences[0].tokens, vec![argmax]);
        // A stop string made of the first sampled token's text stops right there.
        let first = run(&ad, &spec(params()), &v).sequences[0].tokens[0];
        let mut p = params();
        p.stop = Stop::Strings(vec![format!("<t{first}>")]);
        let out = run(&ad, &spec(p), &v);
        assert_eq!(out.sequences[0].tokens, vec![first]);
        assert!(out.sequences[0].stopped);
        // stop = [] disables EOS: every sequence runs to max_tokens.
        let mut p = params();
        p.stop = Stop::Tokens(vec![]);
        p.max_tokens = 40;
        assert!(run(&ad, &spec(p), &v)
            .sequences
            .iter()
            .all(|s| s.tokens.len() == 40 && !s.stopped));
    }

    #[test]
    fn training_signal_changes_samples() {
        // Pushing the token bias of one token up makes it dominate sampling.
        let mut ad = adapter();
        let tok = 777u32;
        let c = BaseModel::class_of(tok);
        let mut tb = vec![0.0; ad.base.class_len(c)];
        tb[BaseModel::index_in_class(tok)] = 20.0;
        ad.params.insert(Key::TokenBias(c as u32), tb);
        ad.params.get_mut(&Key::ClassBias).unwrap()[c] = 20.0;
        let v = Vocab::fallback(ad.base.vocab());
        let out = run(&ad, &spec(params()), &v);
        let hits = out
            .sequences
            .iter()
            .flat_map(|s| &s.tokens)
            .filter(|t| **t == tok)
            .count();
        let total: usize = out.sequences.iter().map(|s| s.tokens.len()).sum();
        assert!(hits * 10 >= total * 9, "{hits}/{total}");
    }
}

#[cfg(test)]
mod eos_tests {
    use super::super::base::{base_model, find_spec};
    use super::super::net::Key;
    use super::*;

    #[test]
    fn unconstrained_samples_end_at_eos() {
        // One model per tokenizer family, and every stop token a model has: samples end
        // at one of them after a few dozen tokens.
        use super::super::base::{Family, CATALOGUE};
        for f in Family::ALL {
            let spec = CATALOGUE.iter().find(|s| s.family == f).unwrap();
            let name = spec.name;
            let ad = Adapter::new(base_model(0, spec), 4, 1, true, true);
            let spec_run = Spec {
                prompt: vec![100, 200],
                num_samples: 200,
                params: Params {
                    max_tokens: 512,
                    temperature: 1.0,
                    top_k: -1,
                    top_p: 1.0,
                    seed: Some(1),
                    stop: Stop::Default,
                },
                prompt_logprobs: false,
                topk_prompt: 0,
                topk_sample: 0,
                target: None,
                alt_k: 0,
                last_n: None,
                fallback_seed: 0,
            };
            let out = run(&ad, &spec_run, &Vocab::fallback(0));
            let stopped = out.sequences.iter().filter(|s| s.stopped).count();
            let mean = out.sequences.iter().map(|s| s.tokens.len()).sum::<usize>() as f64 / 200.0;
            assert!(stopped >= 190, "{name}: {stopped}/200 stopped");
            assert!((5.0..80.0).contains(&mean), "{name}: mean length {mean}");
            for s in out.sequences.iter().filter(|s| s.stopped) {
                let last = *s.tokens.last().unwrap();
                assert!(
                    spec.stop_tokens().any(|t| t == last),
                    "{name}: stopped at {last}"
                );
                assert!(s.tokens[..s.tokens.len() - 1]
                    .iter()
                    .all(|t| !spec.stop_tokens().any(|x| x == *t)));
            }
            eprintln!("{name}: mean length {mean}");
        }
    }

    #[test]
    fn every_stop_token_of_a_model_stops() {
        // A model's further stop tokens (gpt-oss `<|call|>`, GLM `<|observation|>`…) end a
        // sample like EOS: pushed to dominate, each one stops the sample at once, with or
        // without explicit stops, but not with `stop = []`.
        let spec = find_spec("openai/gpt-oss-20b").unwrap();
        assert!(!spec.stop_ids.is_empty());
        for &t in spec.stop_ids {
            let mut ad = Adapter::new(base_model(0, spec), 4, 1, true, true);
            let c = BaseModel::class_of(t);
            let mut tb = vec![0.0; ad.base.class_len(c)];
            tb[BaseModel::index_in_class(t)] = 40.0;
            ad.params.insert(Key::TokenBias(c as u32), tb);
            ad.params.get_mut(&Key::ClassBias).unwrap()[c] = 40.0;
            let run1 = |stop: Stop| {
                let sp = Spec {
                    prompt: vec![100, 200],
                    num_samples: 1,
                    params: Params {
                        max_tokens: 8,
                        temperature: 1.0,
                        top_k: -1,
                        top_p: 1.0,
                        seed: Some(3),
                        stop,
                    },
                    prompt_logprobs: false,
                    topk_prompt: 0,
                    topk_sample: 0,
                    target: None,
                    alt_k: 0,
                    last_n: None,
                    fallback_seed: 0,
                };
                run(&ad, &sp, &Vocab::fallback(0)).sequences.remove(0)
            };
            for stop in [
                Stop::Default,
                Stop::Tokens(vec![5]),
                Stop::Strings(vec!["zz".into()]),
            ] {
                let s = run1(stop);
                assert!(
                    s.stopped && s.tokens == vec![t],
                    "{}: {t}: {s:?}",
                    spec.name
                );
            }
            let s = run1(Stop::Tokens(vec![]));
            assert_eq!((s.stopped, s.tokens.len()), (false, 8));
        }
    }
}
