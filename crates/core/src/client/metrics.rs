//! Combining the results of a chunked `forward_backward` (Python SDK 0.38
//! `chunked_fwdbwd_helpers`): outputs concatenated in chunk order, metrics reduced by
//! the suffix of their `name:reduction` key. Applied to every result, single-chunk
//! ones included, so unknown reductions are dropped and malformed keys fail.

use crate::map::StrMap;

use crate::proto::ForwardBackwardOutput;

/// Combines per-chunk results into one, as the Python SDK does.
pub fn combine_forward_backward(
    results: Vec<ForwardBackwardOutput>,
) -> Result<ForwardBackwardOutput, String> {
    if results.is_empty() {
        return Ok(ForwardBackwardOutput {
            loss_fn_output_type: String::new(),
            loss_fn_outputs: vec![],
            metrics: StrMap::new(),
        });
    }
    let metrics = reduce_metrics(&results)?;
    let loss_fn_output_type = results[0].loss_fn_output_type.clone();
    let loss_fn_outputs = results
        .into_iter()
        .flat_map(|r| r.loss_fn_outputs)
        .collect();
    Ok(ForwardBackwardOutput {
        loss_fn_output_type,
        loss_fn_outputs,
        metrics,
    })
}

/// The low 64 bits of the exact integer part of `v` (Python `int(v) & 0xFFFF_FFFF_FFFF_FFFF`).
fn int_low64(v: f64) -> Result<u64, String> {
    if !v.is_finite() {
        return Err(format!(
            "cannot convert {} to an integer",
            crate::types::fmt_num(v)
        ));
    }
    let t = v.trunc();
    if t == 0.0 {
        return Ok(0);
    }
    let bits = t.abs().to_bits();
    let exp = ((bits >> 52) & 0x7ff) as i64 - 1075; // value = mantissa * 2^exp
    let mantissa = (bits & ((1 << 52) - 1)) | (1 << 52);
    let magnitude = if exp >= 64 {
        0
    } else if exp >= 0 {
        mantissa.wrapping_shl(exp as u32)
    } else {
        mantissa >> (-exp) as u32
    };
    Ok(if t < 0.0 {
        magnitude.wrapping_neg()
    } else {
        magnitude
    })
}

/// `numpy.sum` of float64 values: numpy's pairwise summation (8 accumulators in blocks of
/// up to 128, halves above that), so combined metrics equal the Python SDK's to the bit.
fn np_sum(xs: &[f64]) -> f64 {
    let n = xs.len();
    if n < 8 {
        // From +0.0, as numpy (Rust's f64 `Sum` starts from -0.0).
        let mut res = 0.0;
        for x in xs {
            res += x;
        }
        res
    } else if n <= 128 {
        let mut r = [0.0f64; 8];
        r.copy_from_slice(&xs[..8]);
        let mut i = 8;
        while i < n - n % 8 {
            for (j, acc) in r.iter_mut().enumerate() {
                *acc += xs[i + j];
            }
            i += 8;
        }
        let mut res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        for x in &xs[i..] {
            res += x;
        }
        res
    } else {
        let half = n / 2;
        let half = half - half % 8;
        np_sum(&xs[..half]) + np_sum(&xs[half..])
    }
}

/// Reduces metrics across chunks, weighted by each chunk's number of outputs.
pub fn reduce_metrics(results: &[ForwardBackwardOutput]) -> Result<StrMap<f64>, String> {
    let mut out = StrMap::new();
    let Some(first) = results.first() else {
        return Ok(out);
    };
    let weights: Vec<f64> = results
        .iter()
        .map(|r| r.loss_fn_outputs.len() as f64)
        .collect();
    for key in first.metrics.keys() {
        let parts: Vec<&str> = key.split(':').collect();
        if parts.len() != 2 {
            return Err(format!(
                "metric key {} must be \"name:reduction\" with exactly one ':'",
                crate::json::quote(key)
            ));
        }
        let reduction = parts[1];
        if !matches!(
            reduction,
            "mean" | "sum" | "min" | "max" | "slack" | "hash2" | "unique"
        ) {
            continue; // a reduction newer than this client: dropped, as in Python
        }
        let Some(values) = results
            .iter()
            .map(|r| r.metrics.get(key).copied())
            .collect::<Option<Vec<f64>>>()
        else {
            continue;
        };
        let weighted_mean = || -> Result<f64, String> {
            // numpy.average: sum(values * weights) / sum(weights), both pairwise.
            let total = np_sum(&weights);
            if total == 0.0 {
                return Err(format!(
                    "metric {}: weights sum to zero",
                    crate::json::quote(key)
                ));
            }
            let products: Vec<f64> = values.iter().zip(&weights).map(|(v, w)| v * w).collect();
            Ok(np_sum(&products) / total)
        };
        // numpy's max/min: NaN if any value is NaN (f64::max/min would skip it).
        let extreme = |pick: fn(f64, f64) -> f64| {
            values
                .iter()
                .copied()
                .reduce(|a, b| {
                    if a.is_nan() || b.is_nan() {
                        f64::NAN
                    } else {
                        pick(a, b)
                    }
                })
                .unwrap_or(f64::NAN)
        };
        let max = || extreme(f64::max);
        match reduction {
            "mean" => {
                out.insert(key.clone(), weighted_mean()?);
            }
            "slack" => {
                out.insert(key.clone(), max() - weighted_mean()?);
            }
            "sum" => {
                out.insert(key.clone(), np_sum(&values));
            }
            "min" => {
                out.insert(key.clone(), extreme(f64::min));
            }
            "max" => {
                out.insert(key.clone(), max());
            }
            "hash2" => {
                let mut acc = 0u64;
                for v in &values {
                    acc = acc.wrapping_add(
                        int_low64(*v)
                            .map_err(|e| format!("metric {}: {e}", crate::json::quote(key)))?,
                    );
                }
                out.insert(key.clone(), acc as f64);
            }
            _ => {
                out.insert(key.clone(), values[0]);
                for (i, v) in values.iter().enumerate().skip(1) {
                    out.insert(format!("{key}_{i}"), *v);
                }
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::TensorData;

    fn out(metrics: &[(&str, f64)], n: usize) -> ForwardBackwardOutput {
        ForwardBackwardOutput {
            loss_fn_output_type: "test".into(),
            loss_fn_outputs: (0..n)
                .map(|_| StrMap::from([("loss".to_string(), TensorData::from_f32(vec![0.0]))]))
                .collect(),
            metrics: metrics.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
        }
    }

    // The Python repository's own cases (tests/test_chunked_fwdbwd_helpers.py), for 0.38.
    #[test]
    fn unique_single_and_multiple() {
        assert_eq!(
            reduce_metrics(&[out(&[("clock_cycle:unique", 12345.0)], 1)]).unwrap()
                ["clock_cycle:unique"],
            12345.0
        );
        let r = reduce_metrics(&[
            out(&[("clock_cycle:unique", 12345.0)], 1),
            out(&[("clock_cycle:unique", 12346.0)], 1),
            out(&[("clock_cycle:unique", 12347.0)], 1),
        ])
        .unwrap();
        assert_eq!(r["clock_cycle:unique"], 12345.0);
        assert_eq!(r["clock_cycle:unique_1"], 12346.0);
        assert_eq!(r["clock_cycle:unique_2"], 12347.0);
    }

    #[test]
    fn unique_with_other_metrics() {
        let r = reduce_metrics(&[
            out(
                &[
                    ("clock_cycle:unique", 100.0),
                    ("loss:mean", 0.5),
                    ("accuracy:max", 0.8),
                ],
                1,
            ),
            out(
                &[
                    ("clock_cycle:unique", 101.0),
                    ("loss:mean", 0.6),
                    ("accuracy:max", 0.9),
                ],
                1,
            ),
        ])
        .unwrap();
        assert_eq!(r["clock_cycle:unique_1"], 101.0);
        assert!((r["loss:mean"] - 0.55).abs() < 1e-12);
        assert_eq!(r["accuracy:max"], 0.9);
    }

    #[test]
    fn max_and_min_pass_nan_through_as_numpy_does() {
        let nan_in = |v: [f64; 2]| {
            reduce_metrics(&[
                out(&[("g:max", v[0]), ("g:min", v[0]), ("g:slack", v[0])], 1),
                out(&[("g:max", v[1]), ("g:min", v[1]), ("g:slack", v[1])], 1),
            ])
            .unwrap()
        };
        for v in [[f64::NAN, 1.0], [1.0, f64::NAN]] {
            let r = nan_in(v);
            assert!(
                r["g:max"].is_nan() && r["g:min"].is_nan() && r["g:slack"].is_nan(),
                "{v:?}: {r:?}"
            );
        }
        let one = reduce_metrics(&[out(&[("g:max", f64::NAN), ("g:min", f64::NAN)], 1)]).unwrap();
        assert!(
            one["g:max"].is_nan() && one["g:min"].is_nan(),
            "a single chunk: {one:?}"
        );
        let r = nan_in([-2.0, 3.0]);
        assert_eq!((r["g:max"], r["g:min"]), (3.0, -2.0));
    }

    #[test]
    fn empty_and_missing() {
        assert!(reduce_metrics(&[]).unwrap().is_empty());
        let r = reduce_metrics(&[
            out(&[("clock_cycle:unique", 100.0)], 1),
            out(&[("other_metric:mean", 0.5)], 1),
        ])
        .unwrap();
        assert!(r.is_empty());
    }

    #[test]
    fn unique_floats() {
        let r = reduce_metrics(&[
            out(&[("timestamp:unique", 1234567890.123)], 1),
            out(&[("timestamp:unique", 1234567890.456)], 1),
        ])
        .unwrap();
        assert_eq!(r["timestamp:unique"], 1234567890.123);
        assert_eq!(r["timestamp:unique_1"], 1234567890.456);
    }

    #[test]
    fn hash2_wraps_as_u64() {
        // 2^64 - 1 is not an f64; the nearest double is 2^64 whose low 64 bits are 0.
        assert_eq!(
            reduce_metrics(&[
                out(&[("fp:hash2", 18446744073709551615.0)], 1),
                out(&[("fp:hash2", 2.0)], 1)
            ])
            .unwrap()["fp:hash2"],
            2.0
        );
        // Negative values wrap like Python's `int(v) & mask`.
        assert_eq!(int_low64(-1.0).unwrap(), u64::MAX);
        assert_eq!(int_low64(-2.9).unwrap(), u64::MAX - 1);
        assert_eq!(int_low64(2f64.powi(70)).unwrap(), 0);
        assert_eq!(int_low64(3.0 * 2f64.powi(62)).unwrap(), 3u64 << 62);
        assert!(int_low64(f64::NAN).is_err());
        let r =
            reduce_metrics(&[out(&[("h:hash2", 5.0)], 1), out(&[("h:hash2", 7.0)], 3)]).unwrap();
        assert_eq!(r["h:hash2"], 12.0, "order-insensitive sum");
    }

    #[test]
    fn weighted_mean_and_slack_and_sum() {
        let r = reduce_metrics(&[
            out(
                &[
                    ("l:mean", 1.0),
                    ("l:slack", 1.0),
                    ("l:sum", 2.0),
                    ("l:min", 3.0),
                ],
                1,
            ),
            out(
                &[
                    ("l:mean", 4.0),
                    ("l:slack", 4.0),
                    ("l:sum", 5.0),
                    ("l:min", -1.0),
                ],
                3,
            ),
        ])
        .unwrap();
        assert_eq!(r["l:mean"], (1.0 + 12.0) / 4.0);
        assert_eq!(r["l:slack"], 4.0 - 13.0 / 4.0);
        assert_eq!(r["l:sum"], 7.0);
        assert_eq!(r["l:min"], -1.0);
    }

    #[test]
    fn unknown_reductions_dropped_and_bad_keys_fail() {
        // 0.38: an unknown reduction is dropped even for a single chunk.
        let r = reduce_metrics(&[out(&[("invalid:nonexistent", 100.0), ("loss:sum", 1.0)], 1)])
            .unwrap();
        assert!(!r.contains_key("invalid:nonexistent"));
        assert_eq!(r["loss:sum"], 1.0);
        assert!(reduce_metrics(&[out(&[("noreduction", 1.0)], 1)]).is_err());
        assert!(reduce_metrics(&[out(&[("a:b:sum", 1.0)], 1)]).is_err());
    }

    #[test]
    fn sums_are_numpys_pairwise_sums() {
        // Expected values from numpy 2.4 (np.sum / np.average), which the Python SDK uses.
        let a: Vec<f64> = std::iter::once(1e16).chain([1.0; 8]).collect();
        assert_eq!(np_sum(&a), 1.0000000000000008e16);
        let b: Vec<f64> = (1..200).map(|i| 0.1 * i as f64).collect();
        assert_eq!(np_sum(&b), 1990.0);
        let outs: Vec<ForwardBackwardOutput> = b.iter().map(|v| out(&[("l:sum", *v)], 1)).collect();
        assert_eq!(reduce_metrics(&outs).unwrap()["l:sum"], 1990.0);
        let w: Vec<f64> = (1..200).map(|i| i as f64).collect();
        let p: Vec<f64> = b.iter().zip(&w).map(|(v, w)| v * w).collect();
        assert_eq!(np_sum(&p) / np_sum(&w), 13.3);
    }

    #[test]
    fn combine_concatenates_in_chunk_order() {
        let mut a = out(&[("loss:sum", 1.0)], 2);
        a.loss_fn_output_type = "ArrayRecord".into();
        let b = out(&[("loss:sum", 2.0)], 1);
        let c = combine_forward_backward(vec![a, b]).unwrap();
        assert_eq!(
            (
                c.loss_fn_output_type.as_str(),
                c.loss_fn_outputs.len(),
                c.metrics["loss:sum"]
            ),
            ("ArrayRecord", 3, 3.0)
        );
    }
}
