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

/// The aggregation, resolved once instead of matching its name per point.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Sum,
    Avg,
    Count,
    Min,
    Max,
    Group,
    Stddev,
    Stdvar,
    Quantile,
}

impl Op {
    fn parse(op: &str) -> Option<Self> {
        Some(match op {
            "sum" => Self::Sum,
            "avg" => Self::Avg,
            "count" => Self::Count,
            "min" => Self::Min,
            "max" => Self::Max,
            "group" => Self::Group,
            "stddev" => Self::Stddev,
            "stdvar" => Self::Stdvar,
            "quantile" => Self::Quantile,
            _ => return None,
        })
    }
}

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

/// Every input series' points in the steps `steps.0..steps.1`, fed to the
/// accumulator of (its group, the step).
struct Walk<'a> {
    input: &'a [Series],
    sgroup: &'a [usize],
    budget: &'a Budget<'a>,
    c: Ctx,
    steps: (usize, usize),
}

impl Walk<'_> {
    fn run(&self, state: &mut [Acc], add: impl Fn(&mut Acc, f64)) -> Result<()> {
        let (a, b) = self.steps;
        let (c, len, first_t) = (self.c, b - a, self.c.ts(a));
        for (j, s) in self.input.iter().enumerate() {
            if j % 1024 == 0 {
                self.budget.check()?;
            }
            let base = self.sgroup[j] * len;
            let from = s.pts.partition_point(|p| p.0 < first_t);
            // Points lie on the steps: walk the steps alongside instead of
            // dividing for each point's step index.
            let (mut i, mut ti) = (a, first_t);
            for &(t, f) in &s.pts[from..] {
                while ti < t && c.step > 0 {
                    i += 1;
                    ti += c.step;
                }
                if i >= b {
                    break;
                }
                debug_assert!(ti == t || c.step == 0, "point off the step grid");
                add(&mut state[base + i - a], f);
            }
        }
        Ok(())
    }
}

#[inline(always)]
fn add(op: Op, st: &mut Acc, f: f64) {
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
            Op::Stddev | Op::Stdvar => st.value = if f.is_finite() { 0.0 } else { f64::NAN },
            Op::Group => st.value = 1.0,
            Op::Quantile => st.values.push(f),
            Op::Sum | Op::Avg | Op::Count | Op::Min | Op::Max => {}
        }
        return;
    }
    match op {
        Op::Sum => {
            (st.value, st.kahan) = kahan_inc(f, st.value, st.kahan);
            st.count += 1.0;
        }
        Op::Avg => {
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
        Op::Count => st.count += 1.0,
        Op::Min => {
            if st.value > f || st.value.is_nan() {
                st.value = f;
            }
        }
        Op::Max => {
            if st.value < f || st.value.is_nan() {
                st.value = f;
            }
        }
        Op::Group => {}
        Op::Stddev | Op::Stdvar => {
            st.count += 1.0;
            let delta = f - st.mean;
            st.mean += delta / st.count;
            st.value += delta * (f - st.mean);
        }
        Op::Quantile => st.values.push(f),
    }
}

fn result(op: Op, st: &mut Acc, q: f64) -> f64 {
    match op {
        Op::Sum => {
            if st.value.is_infinite() {
                st.value
            } else {
                st.value + st.kahan
            }
        }
        Op::Avg => {
            if st.incremental {
                st.mean + st.kahan
            } else {
                (st.value + st.kahan) / st.count
            }
        }
        Op::Count => st.count,
        Op::Stddev => (st.value / st.count).sqrt(),
        Op::Stdvar => st.value / st.count,
        Op::Quantile => quantile(q, &mut st.values),
        Op::Min | Op::Max | Op::Group => st.value,
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
    let op = Op::parse(op).ok_or_else(|| crate::QueryError::Internal(format!("not a simple aggregation: {op}")))?;
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
        // One copy of the walk per operation, so `add` is resolved at
        // compile time rather than once per point.
        let w = Walk {
            input,
            sgroup,
            budget,
            c,
            steps: (a, b),
        };
        match op {
            Op::Sum => w.run(&mut state, |st, f| add(Op::Sum, st, f))?,
            Op::Avg => w.run(&mut state, |st, f| add(Op::Avg, st, f))?,
            Op::Count => w.run(&mut state, |st, f| add(Op::Count, st, f))?,
            Op::Min => w.run(&mut state, |st, f| add(Op::Min, st, f))?,
            Op::Max => w.run(&mut state, |st, f| add(Op::Max, st, f))?,
            Op::Group => w.run(&mut state, |st, f| add(Op::Group, st, f))?,
            Op::Stddev => w.run(&mut state, |st, f| add(Op::Stddev, st, f))?,
            Op::Stdvar => w.run(&mut state, |st, f| add(Op::Stdvar, st, f))?,
            Op::Quantile => w.run(&mut state, |st, f| add(Op::Quantile, st, f))?,
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
