//! `sum`, `avg`, `count`, `min`, `max`, `group`, `stddev`, `stdvar` and
//! `quantile` over many series, on every core.
//!
//! Steps are independent, so the query's steps are cut into one contiguous
//! chunk per worker. Each worker takes the groups one after the other and
//! walks the group's series (in input order, reading each series' points
//! once) into one accumulator per step of its chunk, reused from group to
//! group: a state per (group, step) was tens of megabytes for a `by
//! (instance)` over a fleet, most of it page faults and memsets. Within a
//! step a group's series are therefore added in exactly the order a
//! step-by-step evaluation uses, so sums (Kahan-compensated) and means come
//! out bit-identical whatever the number of workers; the chunks are joined
//! in step order.

use rayon::prelude::*;

use crate::eval::Result;
use crate::math::{kahan_inc, quantile};
use crate::ops::AggOp as Op;
use crate::select::Budget;
use crate::series::Series;
use crate::steps::Ctx;

/// Accumulator of one group at one step, for the operations that need
/// only a value and its compensation (sum, count, min, max, group): 24
/// bytes instead of [`Acc`]'s 64, so the state of a day of steps for a few
/// groups stays in a core's cache.
#[derive(Default, Clone, Copy)]
struct Plain {
    seen: bool,
    value: f64,
    kahan: f64,
}

/// Accumulator of one group at one step, for avg, stddev, stdvar and quantile.
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

/// The points of a group's input series in the steps `steps.0..steps.1`,
/// fed to the group's accumulator of each step.
struct Walk<'a> {
    input: &'a [Series],
    budget: &'a Budget<'a>,
    c: Ctx,
    steps: (usize, usize),
}

impl Walk<'_> {
    /// Feeds the series `members` (indices into the input) to `state`, one
    /// accumulator per step of the chunk.
    fn run<S>(&self, members: &[usize], state: &mut [S], add: impl Fn(&mut S, f64)) {
        let (a, b) = self.steps;
        let (c, first_t) = (self.c, self.c.ts(a));
        for &j in members {
            let pts = &self.input[j].pts;
            let from = first_at_or_after(pts, first_t, c.step);
            c.walk_steps(&pts[from..], a, b, |i, &f| add(&mut state[i - a], f));
        }
    }

    /// Every group's points: its members (`groups.members(g)`) walked into
    /// `state` with `add`, then read out with `value(state, step index)`,
    /// which is `None` for a step the group has no point at.
    fn groups<S: Clone + Default>(
        &self,
        groups: &Members,
        add: impl Fn(&mut S, f64),
        mut value: impl FnMut(&mut S, usize) -> Option<f64>,
    ) -> Result<Vec<Vec<(i64, f64)>>> {
        let (a, b) = self.steps;
        let mut state = vec![S::default(); b - a];
        let mut out = Vec::with_capacity(groups.len());
        self.budget.check()?;
        let mut walked = 0;
        for g in 0..groups.len() {
            let members = groups.members(g);
            // As often as every 1,024 series.
            if walked / 1024 != (walked + members.len()) / 1024 {
                self.budget.check()?;
            }
            walked += members.len();
            state.fill(S::default());
            self.run(members, &mut state, &add);
            let mut pts = Vec::new();
            for (k, st) in state.iter_mut().enumerate() {
                if let Some(v) = value(st, a + k) {
                    pts.push((self.c.ts(a + k), v));
                }
            }
            out.push(pts);
        }
        Ok(out)
    }
}

/// The input series of each group, in input order: a counting sort of the
/// series' group numbers.
struct Members {
    /// Group `g`'s series are `order[starts[g]..starts[g + 1]]`.
    starts: Vec<usize>,
    order: Vec<usize>,
}

impl Members {
    fn of(sgroup: &[usize], ngroups: usize) -> Self {
        let mut starts = vec![0; ngroups + 1];
        for &g in sgroup {
            starts[g + 1] += 1;
        }
        for g in 0..ngroups {
            starts[g + 1] += starts[g];
        }
        let mut next = starts.clone();
        let mut order = vec![0; sgroup.len()];
        for (j, &g) in sgroup.iter().enumerate() {
            order[next[g]] = j;
            next[g] += 1;
        }
        Self { starts, order }
    }

    fn len(&self) -> usize {
        self.starts.len() - 1
    }

    fn members(&self, g: usize) -> &[usize] {
        &self.order[self.starts[g]..self.starts[g + 1]]
    }
}

/// Index of the first point at or after `t` among points on a step grid
/// (at most one per step). A series with a point at every step has the one
/// for `t` exactly `(t - first) / step` places in, so that guess is checked
/// before searching: a binary search's scattered loads were a third of
/// the walk's time, as they are the first touch of each series' points.
fn first_at_or_after(pts: &[(i64, f64)], t: i64, step: i64) -> usize {
    match pts.first() {
        None => return 0,
        Some(p) if p.0 >= t => return 0,
        Some(p) if step > 0 => {
            let guess = usize::try_from((t - p.0) / step).map_or(pts.len(), |g| g.clamp(1, pts.len()));
            if pts[guess - 1].0 < t && pts.get(guess).is_none_or(|q| q.0 >= t) {
                return guess;
            }
        }
        Some(_) => {}
    }
    pts.partition_point(|p| p.0 < t)
}

#[inline(always)]
fn add_plain(op: Op, st: &mut Plain, f: f64) {
    if !st.seen {
        let value = match op {
            Op::Count | Op::Group => 1.0,
            _ => f,
        };
        *st = Plain {
            seen: true,
            value,
            kahan: 0.0,
        };
        return;
    }
    match op {
        Op::Sum => (st.value, st.kahan) = kahan_inc(f, st.value, st.kahan),
        Op::Count => st.value += 1.0,
        Op::Min if st.value > f || st.value.is_nan() => st.value = f,
        Op::Max if st.value < f || st.value.is_nan() => st.value = f,
        _ => {}
    }
}

fn plain_result(op: Op, st: &Plain) -> f64 {
    if op == Op::Sum && !st.value.is_infinite() {
        st.value + st.kahan
    } else {
        st.value
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
            Op::Quantile => st.values.push(f),
            _ => {}
        }
        return;
    }
    match op {
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
        Op::Stddev | Op::Stdvar => {
            st.count += 1.0;
            let delta = f - st.mean;
            st.mean += delta / st.count;
            st.value += delta * (f - st.mean);
        }
        Op::Quantile => st.values.push(f),
        _ => unreachable!("{op:?} is not accumulated in `Acc`"),
    }
}

fn result(op: Op, st: &mut Acc, q: f64) -> f64 {
    match op {
        Op::Avg => {
            if st.incremental {
                st.mean + st.kahan
            } else {
                (st.value + st.kahan) / st.count
            }
        }
        Op::Stddev => (st.value / st.count).sqrt(),
        Op::Stdvar => st.value / st.count,
        Op::Quantile => quantile(q, &mut st.values),
        _ => unreachable!("{op:?} is not accumulated in `Acc`"),
    }
}

/// One group's accumulators at every step, fed point by point (in series
/// order) when an aggregation is folded into its select (`fused.rs`).
pub(crate) struct GroupSteps {
    op: Op,
    plain: Vec<Plain>,
    full: Vec<Acc>,
}

impl GroupSteps {
    /// Accumulators for `n` steps of `op`; `None` for the operations that
    /// need more than the points (`quantile`'s φ) or are not simple.
    pub fn new(op: Op, n: usize) -> Option<Self> {
        if !op.accumulates() || op == Op::Quantile {
            return None;
        }
        let (plain, full) = if op.plain() {
            (vec![Plain::default(); n], Vec::new())
        } else {
            (Vec::new(), vec![Acc::default(); n])
        };
        Some(Self { op, plain, full })
    }

    /// Adds a series' value `f` at step index `i`.
    #[inline(always)]
    pub fn add(&mut self, i: usize, f: f64) {
        match self.op {
            Op::Sum => add_plain(Op::Sum, &mut self.plain[i], f),
            Op::Count => add_plain(Op::Count, &mut self.plain[i], f),
            Op::Min => add_plain(Op::Min, &mut self.plain[i], f),
            Op::Max => add_plain(Op::Max, &mut self.plain[i], f),
            Op::Group => add_plain(Op::Group, &mut self.plain[i], f),
            op => add(op, &mut self.full[i], f),
        }
    }

    /// The group's `(step time, value)` points, at the steps it has one.
    pub fn points(mut self, c: Ctx) -> Vec<(i64, f64)> {
        let op = self.op;
        if self.full.is_empty() {
            let plain = std::mem::take(&mut self.plain);
            plain
                .iter()
                .enumerate()
                .filter(|(_, st)| st.seen)
                .map(|(i, st)| (c.ts(i), plain_result(op, st)))
                .collect()
        } else {
            self.full
                .iter_mut()
                .enumerate()
                .filter(|(_, st)| st.seen)
                .map(|(i, st)| (c.ts(i), result(op, st, f64::NAN)))
                .collect()
        }
    }
}

/// Aggregates `input` into `groups` (series `j` belongs to group
/// `sgroup[j]`), its steps cut into one chunk per thread of `threads`;
/// returns one series per group with at least one point, in group order.
/// `param` is `quantile`'s φ per step.
#[allow(clippy::too_many_arguments)]
pub(crate) fn simple(
    budget: &Budget<'_>,
    threads: usize,
    op: Op,
    input: &[Series],
    sgroup: &[usize],
    groups: Vec<Series>,
    param: Option<&[f64]>,
    c: Ctx,
) -> Result<Vec<Series>> {
    if !op.accumulates() {
        return Err(crate::QueryError::Internal(format!("{op:?} is not accumulated")));
    }
    let n = c.n();
    let workers = threads.clamp(1, n.max(1));
    let chunk = n.div_ceil(workers).max(1);
    let ranges: Vec<(usize, usize)> = (0..n).step_by(chunk).map(|a| (a, (a + chunk).min(n))).collect();
    let members = Members::of(sgroup, groups.len());
    let run = |&(a, b): &(usize, usize)| -> Result<Vec<Vec<(i64, f64)>>> {
        // One copy of the walk per operation, so `add` is resolved at
        // compile time rather than once per point.
        let w = Walk {
            input,
            budget,
            c,
            steps: (a, b),
        };
        let m = &members;
        if op.plain() {
            let value = |st: &mut Plain, _| st.seen.then(|| plain_result(op, st));
            return match op {
                Op::Sum => w.groups(m, |st, f| add_plain(Op::Sum, st, f), value),
                Op::Count => w.groups(m, |st, f| add_plain(Op::Count, st, f), value),
                Op::Min => w.groups(m, |st, f| add_plain(Op::Min, st, f), value),
                Op::Max => w.groups(m, |st, f| add_plain(Op::Max, st, f), value),
                _ => w.groups(m, |st, f| add_plain(Op::Group, st, f), value),
            };
        }
        let value = |st: &mut Acc, step: usize| st.seen.then(|| result(op, st, param.map_or(f64::NAN, |p| p[step])));
        match op {
            Op::Avg => w.groups(m, |st, f| add(Op::Avg, st, f), value),
            Op::Stddev => w.groups(m, |st, f| add(Op::Stddev, st, f), value),
            Op::Stdvar => w.groups(m, |st, f| add(Op::Stdvar, st, f), value),
            _ => w.groups(m, |st, f| add(Op::Quantile, st, f), value),
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// The guess is only a shortcut: whatever the grid and the gaps, the
        /// answer is the binary search's.
        #[test]
        fn first_step_guess_agrees_with_search(
            steps in proptest::collection::btree_set(0i64..200, 0..60),
            step in 1i64..5,
            t in -10i64..1000,
        ) {
            let pts: Vec<(i64, f64)> = steps.iter().map(|&k| (k * step, 0.0)).collect();
            proptest::prop_assert_eq!(first_at_or_after(&pts, t, step), pts.partition_point(|p| p.0 < t));
        }

        /// Each group's members are exactly the series of that group, in
        /// input order (the order a step-by-step evaluation adds them in).
        #[test]
        fn members_are_each_groups_series_in_input_order(
            sgroup in proptest::collection::vec(0usize..8, 0..100),
            extra in 0usize..3,
        ) {
            let ngroups = sgroup.iter().max().map_or(0, |&g| g + 1) + extra;
            let m = Members::of(&sgroup, ngroups);
            proptest::prop_assert_eq!(m.len(), ngroups);
            for g in 0..ngroups {
                let want: Vec<usize> = (0..sgroup.len()).filter(|&j| sgroup[j] == g).collect();
                proptest::prop_assert_eq!(m.members(g), want.as_slice());
            }
        }
    }
}
