//! `sum`, `avg`, `count`, `min`, `max`, `group`, `stddev`, `stdvar` and
//! `quantile` over many series, on every core.
//!
//! Steps are independent, so the query's steps are cut into one contiguous
//! chunk per worker. Each worker walks the input series by series (in input
//! order, reading each series' points once, which keeps memory access
//! sequential) and updates one accumulator per (group, step) of its chunk.
//! Within a step the series are therefore added in exactly the order a
//! step-by-step evaluation uses, so sums (Kahan-compensated) and means come
//! out bit-identical whatever the number of workers; the chunks are joined
//! in step order.

use rayon::prelude::*;

use crate::eval::{Ctx, Result, Series, kahan_inc, quantile};
use crate::select::Budget;

/// Points below which splitting the steps is not worth a thread handoff.
const PARALLEL_MIN_POINTS: usize = 50_000;

/// Accumulator of one group at one step.
#[derive(Default, Clone)]
struct Acc {
    seen: bool,
    count: f64,
    value: f64,
    kahan: f64,
    mean: f64,
    incremental: bool,
    values: Vec<f64>,
}

fn add(op: &str, st: &mut Acc, f: f64) {
    if !st.seen {
        *st = Acc {
            seen: true,
            count: 1.0,
            value: f,
            kahan: 0.0,
            mean: f,
            incremental: false,
            values: Vec::new(),
        };
        match op {
            "stddev" | "stdvar" => st.value = if f.is_finite() { 0.0 } else { f64::NAN },
            "group" => st.value = 1.0,
            "quantile" => st.values.push(f),
            _ => {}
        }
        return;
    }
    match op {
        "sum" => {
            (st.value, st.kahan) = kahan_inc(f, st.value, st.kahan);
            st.count += 1.0;
        }
        "avg" => {
            st.count += 1.0;
            if !st.incremental {
                let (nv, nc) = kahan_inc(f, st.value, st.kahan);
                if !nv.is_infinite() {
                    st.value = nv;
                    st.kahan = nc;
                    return;
                }
                st.incremental = true;
                st.mean = st.value / (st.count - 1.0);
                st.kahan /= st.count - 1.0;
            }
            if st.mean.is_infinite() {
                if f.is_infinite() && (st.mean > 0.0) == (f > 0.0) {
                    return;
                }
                if !f.is_infinite() && !f.is_nan() {
                    return;
                }
            }
            let cur_mean = st.mean + st.kahan;
            (st.mean, st.kahan) = kahan_inc(f / st.count - cur_mean / st.count, st.mean, st.kahan);
        }
        "count" => st.count += 1.0,
        "min" => {
            if st.value > f || st.value.is_nan() {
                st.value = f;
            }
        }
        "max" => {
            if st.value < f || st.value.is_nan() {
                st.value = f;
            }
        }
        "group" => {}
        "stddev" | "stdvar" => {
            st.count += 1.0;
            let delta = f - st.mean;
            st.mean += delta / st.count;
            st.value += delta * (f - st.mean);
        }
        _ => st.values.push(f),
    }
}

fn result(op: &str, st: &mut Acc, q: f64) -> f64 {
    match op {
        "sum" => {
            if st.value.is_infinite() {
                st.value
            } else {
                st.value + st.kahan
            }
        }
        "avg" => {
            if st.incremental {
                st.mean + st.kahan
            } else {
                (st.value + st.kahan) / st.count
            }
        }
        "count" => st.count,
        "stddev" => (st.value / st.count).sqrt(),
        "stdvar" => st.value / st.count,
        "quantile" => quantile(q, &mut st.values),
        _ => st.value,
    }
}

/// Aggregates `input` into `groups` (series `j` belongs to group
/// `sgroup[j]`); returns one series per group with at least one point, in
/// group order. `param` is `quantile`'s φ per step.
pub(crate) fn simple(
    budget: &Budget<'_>,
    op: &str,
    input: &[Series],
    sgroup: &[usize],
    groups: Vec<Series>,
    param: Option<&[f64]>,
    c: Ctx,
) -> Result<Vec<Series>> {
    let n = c.n();
    let points: usize = input.iter().map(|s| s.pts.len()).sum();
    let workers = if points >= PARALLEL_MIN_POINTS {
        rayon::current_num_threads().clamp(1, n.max(1))
    } else {
        1
    };
    let chunk = n.div_ceil(workers).max(1);
    let ranges: Vec<(usize, usize)> = (0..n).step_by(chunk).map(|a| (a, (a + chunk).min(n))).collect();
    let ngroups = groups.len();
    let run = |&(a, b): &(usize, usize)| -> Result<Vec<Vec<(i64, f64)>>> {
        let len = b - a;
        let mut state: Vec<Acc> = vec![Acc::default(); ngroups * len];
        let first_t = c.ts(a);
        for (j, s) in input.iter().enumerate() {
            if j % 1024 == 0 {
                budget.check()?;
            }
            let base = sgroup[j] * len;
            let from = s.pts.partition_point(|p| p.0 < first_t);
            for &(t, f) in &s.pts[from..] {
                let i = c.idx(t);
                if i >= b {
                    break;
                }
                add(op, &mut state[base + i - a], f);
            }
        }
        let mut out = vec![Vec::new(); ngroups];
        for (g, pts) in out.iter_mut().enumerate() {
            for k in 0..len {
                let st = &mut state[g * len + k];
                if st.seen {
                    let q = param.map_or(f64::NAN, |p| p[a + k]);
                    pts.push((c.ts(a + k), result(op, st, q)));
                }
            }
        }
        Ok(out)
    };
    let chunks: Vec<Result<Vec<Vec<(i64, f64)>>>> = if ranges.len() > 1 {
        ranges.par_iter().map(run).collect()
    } else {
        ranges.iter().map(run).collect()
    };
    let mut out = groups;
    for ch in chunks {
        for (g, pts) in ch?.into_iter().enumerate() {
            out[g].pts.extend(pts);
        }
    }
    out.retain(|s| !s.pts.is_empty());
    Ok(out)
}
