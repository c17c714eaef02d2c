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
    let mut ignored = false;
    for i in 0..n {
        let t = c.ts(i);
        let pv = p[i];
        let mut k = 0usize;
        let mut ratio = 0.0;
        if op == AggOp::LimitRatio {
            if pv.is_nan() {
                return Err(QueryError::Execution("Ratio value is NaN".into()));
            }
            ratio = pv;
            if !(-1.0..=1.0).contains(&pv) {
                ratio = pv.clamp(-1.0, 1.0);
                ev.warnings.push(format!(
                    "PromQL warning: ratio value should be between -1 and 1, got {}, capping to {}",
                    format_f(pv),
                    format_f(ratio)
                ));
            }
            if ratio == 0.0 {
                continue;
            }
        } else {
            if pv.is_nan() {
                return Err(QueryError::Execution("Parameter value is NaN".to_string()));
            }
            if !(-9.223372036854776e18..9.223372036854776e18).contains(&pv) {
                return Err(QueryError::Execution(format!(
                    "Scalar value {} overflows int64",
                    format_f(pv)
                )));
            }
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

fn labels_hash(l: &Labels) -> u64 {
    let mut b = Vec::with_capacity(256);
    for lab in l.iter() {
        b.extend_from_slice(lab.name.as_bytes());
        b.push(0xff);
        b.extend_from_slice(lab.value.as_bytes());
        b.push(0xff);
    }
    xxhash_rust::xxh64::xxh64(&b, 0)
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
