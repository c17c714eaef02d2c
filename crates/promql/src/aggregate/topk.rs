//! `topk`, `bottomk`, `limitk` and `limit_ratio`: per group and step, which
//! input series are kept.

use cairn_model::Labels;
use cairn_model::go_float::format_f;

use crate::QueryError;
use crate::annotations;
use crate::eval::{Ev, Result};
use crate::operand::Value;
use crate::ops::AggOp;
use crate::series::{Series, StepIter, Val};
use crate::steps::Ctx;

pub(super) fn select_k(
    ev: &mut Ev,
    op: AggOp,
    scalar_param: Option<Vec<f64>>,
    input: &[Series],
    groups: &[Labels],
    sgroup: &[usize],
    c: Ctx,
) -> Result<Val> {
    let n = c.n();
    let mut cur: Vec<(usize, f64)> = Vec::new();
    let p = scalar_param.ok_or_else(|| QueryError::BadData(format!("{} needs a scalar parameter", op.name())))?;
    let mut out: Vec<Series> = Vec::new();
    let mut out_idx: Vec<Option<usize>> = vec![None; input.len()];
    let mut heaps: Vec<Vec<(usize, f64)>> = vec![Vec::new(); groups.len()];
    let top_less = |a: f64, b: f64| a.is_nan() || a < b;
    let bottom_less = |a: f64, b: f64| a.is_nan() || a > b;
    let mut it = StepIter::new(input, c);
    // Vectors with histograms are walked with them: `limitk` and
    // `limit_ratio` keep histograms, `topk` and `bottomk` ignore them.
    let mut with_histograms = input
        .iter()
        .any(|s| !s.hs.is_empty())
        .then(|| StepIter::<Value>::new(input, c));
    let limits = matches!(op, AggOp::Limitk | AggOp::LimitRatio);
    if !check_param(ev, op, &p)? {
        return Ok(Val::Vector(Vec::new()));
    }
    let mut ignored = false;
    for i in 0..n {
        let t = c.ts(i);
        let pv = p[i];
        let mut k = 0usize;
        let mut ratio = 0.0;
        if op == AggOp::LimitRatio {
            ratio = pv.clamp(-1.0, 1.0);
            if ratio == 0.0 {
                continue;
            }
        } else {
            let kk = pv as i64;
            if kk < 1 {
                continue;
            }
            k = (kk as usize).min(input.len());
        }
        cur.clear();
        match &mut with_histograms {
            // A histogram's place holds NaN: the output takes the histogram.
            Some(hi) => hi.at(t, |j, v| match v {
                Value::Float(f) => cur.push((j, *f)),
                Value::Histogram(_) if limits => cur.push((j, f64::NAN)),
                Value::Histogram(_) => ignored = true,
            }),
            None => it.at(t, |j, &v| cur.push((j, v))),
        }
        heaps.iter_mut().for_each(Vec::clear);
        let mut order: Vec<usize> = Vec::new();
        for &(j, v) in &cur {
            let g = sgroup[j];
            let h = &mut heaps[g];
            if h.is_empty() {
                order.push(g);
            }
            match op {
                AggOp::Topk | AggOp::Bottomk => {
                    let less: &dyn Fn(f64, f64) -> bool = if op == AggOp::Topk { &top_less } else { &bottom_less };
                    if h.len() < k {
                        h.push((j, v));
                        let last = h.len() - 1;
                        heap_up(h, last, less);
                    } else {
                        let replace = if op == AggOp::Topk {
                            h[0].1 < v || (h[0].1.is_nan() && !v.is_nan())
                        } else {
                            h[0].1 > v || (h[0].1.is_nan() && !v.is_nan())
                        };
                        if replace {
                            h[0] = (j, v);
                            if k > 1 && !heap_down(h, 0, less) {
                                heap_up(h, 0, less);
                            }
                        }
                    }
                }
                AggOp::Limitk => {
                    if h.len() < k {
                        h.push((j, v));
                    }
                }
                _ => {
                    let off = labels_hash(&input[j].labels) as f64 / u64::MAX as f64;
                    if (ratio >= 0.0 && off < ratio) || (ratio < 0.0 && off >= 1.0 + ratio) {
                        h.push((j, v));
                    }
                }
            }
        }
        // Groups in order of first appearance, like Prometheus.
        let mut gorder: Vec<usize> = order;
        gorder.sort_unstable();
        gorder.dedup();
        for g in gorder {
            let h = &mut heaps[g];
            if matches!(op, AggOp::Topk | AggOp::Bottomk) {
                let less: &dyn Fn(f64, f64) -> bool = if op == AggOp::Topk { &top_less } else { &bottom_less };
                // sort.Sort(sort.Reverse(heap)) as insertion sort.
                for a in 1..h.len() {
                    let mut b = a;
                    while b > 0 && less(h[b - 1].1, h[b].1) {
                        h.swap(b, b - 1);
                        b -= 1;
                    }
                }
            }
            for &(j, v) in h.iter() {
                let oi = match out_idx[j] {
                    Some(oi) => oi,
                    None => {
                        out.push(Series {
                            labels: input[j].labels.clone(),
                            drop_name: input[j].drop_name,
                            pts: Vec::new(),
                            hs: Vec::new(),
                        });
                        out_idx[j] = Some(out.len() - 1);
                        out.len() - 1
                    }
                };
                let hist = limits
                    .then(|| input[j].hs.binary_search_by_key(&t, |p| p.0).ok())
                    .flatten();
                match hist {
                    Some(k) => out[oi].hs.push((t, input[j].hs[k].1.clone())),
                    None => out[oi].pts.push((t, v)),
                }
            }
        }
    }
    if ignored {
        ev.note(annotations::histogram_ignored_in_aggregation(op.name()));
    }
    Ok(Val::Vector(out))
}

/// Prometheus' checks of the parameter over the whole query, before any
/// step (so every step's value counts, and an answer that is empty
/// throughout has no error): false when the result is empty. For
/// topk/bottomk/limitk, all k below 1 give nothing, then NaN, then values
/// beyond int64 are errors; for limit_ratio, a ratio of 0 throughout gives
/// nothing, NaN is an error, and ratios beyond ±1 warn once each way.
fn check_param(ev: &mut Ev, op: AggOp, p: &[f64]) -> Result<bool> {
    let any_nan = p.iter().any(|v| v.is_nan());
    let (max, min) = crate::math::go_extremes(p);
    if op == AggOp::LimitRatio {
        if max == 0.0 && min == 0.0 {
            return Ok(false);
        }
        if any_nan {
            return Err(QueryError::Execution("Ratio value is NaN".into()));
        }
        for (v, cap) in [(max, 1.0), (min, -1.0)] {
            if (cap > 0.0 && v > cap) || (cap < 0.0 && v < cap) {
                ev.warnings.push(format!(
                    "PromQL warning: ratio value should be between -1 and 1, got {}, capping to {}",
                    crate::annotations::go_g(v),
                    crate::annotations::go_g(cap)
                ));
            }
        }
        return Ok(true);
    }
    if max < 1.0 {
        return Ok(false);
    }
    if any_nan {
        return Err(QueryError::Execution("Parameter value is NaN".into()));
    }
    // -2^63 and 2^63 (i64::MAX rounds up to it as a float).
    const LIMIT: f64 = -(i64::MIN as f64);
    if min <= -LIMIT {
        return Err(QueryError::Execution(format!(
            "Scalar value {} underflows int64",
            go_v(min)
        )));
    }
    if max >= LIMIT {
        return Err(QueryError::Execution(format!(
            "Scalar value {} overflows int64",
            go_v(max)
        )));
    }
    Ok(true)
}

/// A float as Go's `%v` writes it: plain below 1e21, else `1e+21`.
fn go_v(v: f64) -> String {
    if v.is_finite() && v.abs() >= 1e21 {
        let mut s = String::new();
        cairn_model::go_float::push_go_sci(&mut s, v);
        s
    } else {
        format_f(v)
    }
}

/// Prometheus' `labels.Hash()` as its default (`stringlabels`) build
/// computes it, which decides `limit_ratio`'s sample: xxHash64 of the label
/// set's encoding ([`hash_bytes`]).
fn labels_hash(l: &Labels) -> u64 {
    xxhash_rust::xxh64::xxh64(&hash_bytes(l), 0)
}

/// The `stringlabels` encoding of a label set: every name and value in
/// order, each after its length, one byte below 255, else 255 and three
/// bytes little-endian.
fn hash_bytes(l: &Labels) -> Vec<u8> {
    let mut b = Vec::with_capacity(256);
    let mut put = |s: &str| {
        let n = s.len();
        if n < 255 {
            b.push(n as u8);
        } else {
            b.push(255);
            b.extend_from_slice(&(n as u32).to_le_bytes()[..3]);
        }
        b.extend_from_slice(s.as_bytes());
    };
    for lab in l.iter() {
        put(&lab.name);
        put(&lab.value);
    }
    b
}

/// Go's container/heap over indices with a `less` function.
fn heap_up(h: &mut [(usize, f64)], mut j: usize, less: &dyn Fn(f64, f64) -> bool) {
    while j > 0 {
        let i = (j - 1) / 2;
        if !less(h[j].1, h[i].1) {
            break;
        }
        h.swap(i, j);
        j = i;
    }
}

fn heap_down(h: &mut [(usize, f64)], i0: usize, less: &dyn Fn(f64, f64) -> bool) -> bool {
    let n = h.len();
    let mut i = i0;
    loop {
        let j1 = 2 * i + 1;
        if j1 >= n {
            break;
        }
        let mut j = j1;
        if j1 + 1 < n && less(h[j1 + 1].1, h[j1].1) {
            j = j1 + 1;
        }
        if !less(h[j].1, h[i].1) {
            break;
        }
        h.swap(i, j);
        i = j;
    }
    i > i0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> Labels {
        Labels::from_pairs(pairs.iter().copied())
    }

    fn query(q: &str, range: bool) -> Result<crate::QueryResult> {
        use cairn_model::Sample;
        use cairn_storage::{Appendable, MemStorage};
        let s = MemStorage::new();
        let mut app = s.appender();
        for (job, v) in [("a", 1.0), ("b", 2.0), ("c", 3.0)] {
            let samples: Vec<Sample> = (0..=10).map(|i| Sample::new(i * 60_000, v)).collect();
            app.append(&labels(&[("__name__", "m"), ("job", job)]), &samples)
                .unwrap();
        }
        app.commit().unwrap();
        let e = crate::Engine::new(crate::EngineOptions::default());
        if range {
            e.range(&s, q, 0, 600_000, 60_000)
        } else {
            e.instant(&s, q, 300_000)
        }
    }

    fn is_empty(r: &crate::QueryResult) -> bool {
        match &r.value {
            crate::Value::Vector(v) => v.is_empty(),
            crate::Value::Matrix(m) => m.is_empty(),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn k_below_one_throughout_is_empty_before_any_check() {
        for range in [false, true] {
            for q in [
                "bottomk(-Inf, m)",
                "topk(-1e300, m)",
                "limitk(0.5, m)",
                "limit_ratio(0, m)",
            ] {
                let r = query(q, range).unwrap_or_else(|e| panic!("{q}: {e}"));
                assert!(is_empty(&r), "{q}");
            }
        }
        let err = |q: &str, range: bool| query(q, range).unwrap_err().to_string();
        assert_eq!(err("topk(NaN, m)", false), "Parameter value is NaN");
        assert_eq!(err("limit_ratio(NaN, m)", false), "Ratio value is NaN");
        assert_eq!(err("topk(Inf, m)", false), "Scalar value +Inf overflows int64");
        assert_eq!(err("topk(1e30, m)", false), "Scalar value 1e+30 overflows int64");
        // Over a range, every step's k counts: one step of -Inf beside k=2
        // underflows, where each step alone would not fail.
        assert_eq!(
            err("topk((-Inf) ^ (time() > bool 100), m)", true),
            "Scalar value -Inf underflows int64"
        );
    }

    #[test]
    fn ratios_beyond_one_warn_once_each_way() {
        let r = query("limit_ratio(time() / 60 - 5, m)", true).unwrap();
        let texts: Vec<&str> = r
            .warnings
            .iter()
            .map(|w| w.rsplit_once(" (").map_or(w.as_str(), |x| x.0))
            .collect();
        assert_eq!(
            texts,
            [
                "PromQL warning: ratio value should be between -1 and 1, got 5, capping to 1",
                "PromQL warning: ratio value should be between -1 and 1, got -5, capping to -1",
            ]
        );
    }

    #[test]
    fn quantile_warns_for_the_whole_query_with_gos_extremes() {
        let texts = |q: &str| -> Vec<String> {
            let r = query(q, true).unwrap();
            let mut w: Vec<String> = r
                .warnings
                .iter()
                .map(|w| w.rsplit_once(" (").map_or(w.clone(), |x| x.0.to_string()))
                .collect();
            w.sort();
            w
        };
        let got = |v: &str| format!("PromQL warning: quantile value should be between 0 and 1, got {v}");
        assert_eq!(texts("quantile(time() / 60 - 5, m)"), [got("-5"), got("5")]);
        // -Inf, then NaN (0/0), then 1..5: NaN poisons the largest, -Inf
        // wins the smallest.
        assert_eq!(
            texts("quantile((time() / 60 - 5) / (time() > bool 300), m)"),
            [got("-Inf"), got("NaN")]
        );
        assert!(texts("quantile(0.5, m)").is_empty());
    }

    #[test]
    fn hash_bytes_are_length_prefixed_names_and_values() {
        let l = labels(&[("__name__", "up"), ("job", "x")]);
        assert_eq!(hash_bytes(&l), b"\x08__name__\x02up\x03job\x01x".to_vec());
        // 254 fits a byte; 255 and more take 255 and three bytes.
        for n in [254usize, 255, 256, 70_000] {
            let v = "x".repeat(n);
            let b = hash_bytes(&labels(&[("a", &v)]));
            let mut want = vec![1, b'a'];
            if n < 255 {
                want.push(n as u8);
            } else {
                want.extend([255, n as u8, (n >> 8) as u8, (n >> 16) as u8]);
            }
            want.extend(v.as_bytes());
            assert_eq!(b, want, "value of {n} bytes");
        }
    }

    #[test]
    fn ratio_offsets_are_prometheus_3s() {
        // Prometheus 3.14 keeps syn-0 and syn-2 for limit_ratio(-0.5, syn_gauge)
        // and syn-1 for limit_ratio(0.5, syn_gauge) (tests/promql_generator.rs).
        let off = |inst: &str| {
            labels_hash(&labels(&[
                ("__name__", "syn_gauge"),
                ("instance", inst),
                ("job", "synthetic"),
            ])) as f64
                / u64::MAX as f64
        };
        assert!(off("syn-1") < 0.5, "{}", off("syn-1"));
        assert!(off("syn-0") >= 0.5, "{}", off("syn-0"));
        assert!(off("syn-2") >= 0.5, "{}", off("syn-2"));
    }
}
