//! A long range query split by steps: each core evaluates the whole
//! expression over its own contiguous run of steps.
//!
//! A range query's steps are independent (its answer is the instant query at
//! each step), so parts of the step range can be evaluated apart and joined.
//! Each part reads every series, but only over its own stretch of time, one
//! series after another in label order on one thread. Splitting the series
//! instead (as a single evaluation does, see `select.rs`) parts the series
//! of one target between workers, so a worker's next series rarely shares
//! the timestamps of its last one and the per-column window cache
//! (`window_index.rs`) misses; and every node must merge its workers' output
//! again. Here neither happens, and each (series, step) is computed exactly
//! as in a single evaluation, so the answer is bit-identical (but see below).
//!
//! One order stays a part's own: an aggregation lists its groups in the
//! order their first series appear, and a part sees only the series with
//! samples in its stretch. So queries in which that order could change a
//! value are never split: an aggregation that combines values in input
//! order ([`AggOp::combines_in_input_order`](crate::ops::AggOp::combines_in_input_order))
//! over another aggregation, and aggregations that choose by input order
//! ([`AggOp::order_sensitive`](crate::ops::AggOp::order_sensitive)). Every
//! split answer is then bit-identical to the whole evaluation's.
//!
//! The price is the data both neighbours read: the window before a part's
//! first step (a range, or the lookback) and the storage block around the
//! cut. Only queries whose parts are long against that are split.

use std::time::Duration;

use rayon::prelude::*;

use crate::eval::{Ev, Result};
use crate::plan::{Node, Selector, SplitParts};
use crate::series::Val;
use crate::steps::Ctx;

/// When a range query is split (see the module documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StepSplit {
    /// When each part is long enough that the data both neighbours read is
    /// a small share of it.
    Auto {
        /// The least stretch of time a part may cover. Storage decodes whole
        /// blocks (two hours in the TSDB), so the block around each cut is
        /// read twice: over twelve hours, at most one block in six.
        min_part_span: Duration,
        /// How many times as long as the longest window a step looks back
        /// over (which both neighbours read) a part must be.
        min_part_per_window: u32,
    },
    /// Every range query of at least two steps per thread (tests).
    Always,
    Never,
}

impl Default for StepSplit {
    /// `Auto`: parts of at least 12 h and 32 windows.
    fn default() -> Self {
        Self::Auto {
            min_part_span: Duration::from_secs(12 * 3600),
            min_part_per_window: 32,
        }
    }
}

/// How to split a query (`root`) over `c`, or `None` to evaluate it whole:
/// for a single thread, steps too few or (under `Auto`) too short against
/// the windows they look back over, or an `@` modifier (which pins the same
/// data for every part). As many parts as threads when they are long
/// enough, else fewer, each then with a share of the threads.
pub(crate) fn parts(policy: StepSplit, root: &Node, c: Ctx, threads: usize, lookback: i64) -> Option<SplitParts> {
    if threads < 2 || c.step <= 0 {
        return None;
    }
    let window = lookbehind(root, lookback)?;
    let min_span = match policy {
        StepSplit::Never => return None,
        StepSplit::Always => 0,
        StepSplit::Auto {
            min_part_span,
            min_part_per_window,
        } => (min_part_span.as_millis() as i64).max(window.saturating_mul(i64::from(min_part_per_window))),
    };
    let n = c.n();
    let mut parts = threads.min(n / 2);
    while parts >= 2 && (n.div_ceil(parts) as i64).saturating_mul(c.step) < min_span {
        parts -= 1;
    }
    if parts < 2 {
        return None;
    }
    let per_part = n.div_ceil(parts);
    let parts: Vec<Ctx> = (0..n)
        .step_by(per_part)
        .map(|i| Ctx {
            start: c.ts(i),
            end: c.ts((i + per_part).min(n) - 1),
            step: c.step,
        })
        .collect();
    Some(SplitParts {
        threads_per_part: threads / parts.len(),
        parts,
    })
}

/// Whether `call` is a range function dropping the name of series that may
/// have several names.
fn may_collide_unnamed(call: &crate::plan::Call) -> bool {
    let crate::func::Func::Range(f) = call.func else {
        return false;
    };
    !f.keeps_name() && call.args.iter().any(may_have_several_names)
}

/// Whether the series `node` evaluates to may carry more than one metric
/// name (erring on yes): a selector not pinning `__name__`, or an
/// expression over one.
fn may_have_several_names(node: &Node) -> bool {
    match node {
        Node::Vector(sel) | Node::Matrix(sel, _) => !sel.sets.iter().all(|s| s.pins_metric_name()),
        Node::Number(_) | Node::Str(_) => false,
        // An aggregation keeps no name unless it groups by it.
        Node::Aggregate(a) if !a.grouping.by_metric_name() => false,
        _ => node.children().into_iter().any(may_have_several_names),
    }
}

/// Whether `node` calls `start()` or `end()`: the bounds of the query it is
/// part of. Parts evaluated as queries of their own (on other nodes) would
/// each see their own bounds; the engine's own parts keep the whole query's.
pub(crate) fn uses_query_bounds(node: &Node) -> bool {
    matches!(node, Node::Call(c) if matches!(c.func, crate::func::Func::Start | crate::func::Func::End))
        || node.children().into_iter().any(uses_query_bounds)
}

/// How far after a step the data it needs reaches: negative offsets and
/// `smoothed` selectors read ahead of it.
pub(crate) fn lookahead(node: &Node, lookback: i64) -> i64 {
    let selector = |sel: &Selector| (sel.extra_reach(lookback).1 - sel.offset).max(0);
    match node {
        Node::Vector(sel) | Node::Matrix(sel, _) => selector(sel),
        Node::Subquery(sq) => (lookahead(&sq.inner, lookback) - sq.offset).max(0),
        Node::Info(info) => selector(&info.select).max(lookahead(&info.input, lookback)),
        _ => node
            .children()
            .into_iter()
            .map(|n| lookahead(n, lookback))
            .max()
            .unwrap_or(0),
    }
}

/// Whether an aggregation is at or under `node`, so its groups' order is
/// the part's own.
fn has_aggregation(node: &Node) -> bool {
    matches!(node, Node::Aggregate(_)) || node.children().into_iter().any(has_aggregation)
}

/// How far before a step the data it needs reaches (the longest chain of
/// ranges, subquery ranges and lookbacks), or `None` when the query must
/// not be split: an `@` modifier pins a selection to fixed times, an
/// aggregation depends on the order of its input, which a part may see
/// otherwise than the whole evaluation (see the module documentation;
/// found by the differential test's byte-for-byte comparison), or a range
/// function's result must be checked whole for series that collide.
pub(crate) fn lookbehind(node: &Node, lookback: i64) -> Option<i64> {
    let selector = |sel: &Selector, window: i64| sel.at.is_none().then_some(window + sel.extra_reach(lookback).0);
    match node {
        Node::Vector(sel) => selector(sel, lookback),
        Node::Matrix(sel, range) => selector(sel, *range),
        Node::Subquery(sq) => {
            if sq.at.is_some() {
                return None;
            }
            Some(sq.range + lookbehind(&sq.inner, lookback)?)
        }
        Node::Aggregate(a) => {
            if a.op.order_sensitive() || (a.op.combines_in_input_order() && has_aggregation(&a.input)) {
                return None;
            }
            let param = match &a.param {
                Some(p) => lookbehind(p, lookback)?,
                None => 0,
            };
            Some(param.max(lookbehind(&a.input, lookback)?))
        }
        Node::Neg(n) => lookbehind(n, lookback),
        Node::Info(info) => Some(selector(&info.select, lookback)?.max(lookbehind(&info.input, lookback)?)),
        Node::Binary(b) => Some(lookbehind(&b.lhs, lookback)?.max(lookbehind(&b.rhs, lookback)?)),
        // A function of a range vector that drops the name fails when two
        // of its series collide without it, wherever they are in time
        // (`series::settle_names`): a part would see only some of them.
        Node::Call(call) if may_collide_unnamed(call) => None,
        Node::Call(call) => call
            .args
            .iter()
            .try_fold(0i64, |acc, a| Some(acc.max(lookbehind(a, lookback)?))),
        Node::Number(_) | Node::Str(_) => Some(0),
    }
}

/// Evaluates `root` over each part of `split` as its own pool task and
/// joins the results in step order, with their annotations and sample counts.
pub(crate) fn eval(ev: &mut Ev, root: &Node, split: &SplitParts) -> Result<Val> {
    let done: Vec<(Result<Val>, Ev)> = split
        .parts
        .par_iter()
        .with_max_len(1)
        .map(|&c| {
            let mut part = ev.part();
            (part.eval(root, c), part)
        })
        .collect();
    let mut joined: Option<Val> = None;
    for (val, part) in done {
        let val = val?;
        ev.absorb(part)?;
        joined = Some(match (joined, val) {
            (None, v) => v,
            (Some(Val::Scalar(mut a)), Val::Scalar(b)) => {
                a.extend(b);
                Val::Scalar(a)
            }
            // Series of several parts share labels; the query's final
            // cleanup joins them (their points never collide).
            (Some(Val::Vector(mut a)), Val::Vector(b)) => {
                a.extend(b);
                Val::Vector(a)
            }
            (Some(a), b) => {
                return Err(crate::QueryError::Internal(format!(
                    "parts of a range query gave a {} and a {}",
                    a.type_name(),
                    b.type_name()
                )));
            }
        });
    }
    joined.ok_or_else(|| crate::QueryError::Internal("a range query split into no parts".into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOUR: i64 = 3_600_000;

    fn day(step: i64) -> Ctx {
        Ctx {
            start: 0,
            end: 24 * HOUR,
            step,
        }
    }

    fn node(q: &str) -> Node {
        crate::plan::lower(&crate::parse(q).unwrap(), crate::plan::QueryTimes::of(&day(HOUR))).unwrap()
    }

    fn plan_of(q: &str, c: Ctx, threads: usize) -> Option<Vec<Ctx>> {
        parts(StepSplit::default(), &node(q), c, threads, 300_000).map(|p| p.parts)
    }

    #[test]
    fn parts_cover_every_step_once_in_order() {
        for (threads, step) in [(2, 60_000), (3, 60_000), (4, 7_000), (2, 8 * HOUR)] {
            let c = day(step);
            let Some(split) = parts(StepSplit::Always, &node("x"), c, threads, 300_000) else {
                panic!("{threads} threads, step {step}: not split");
            };
            assert_eq!(split.parts.len(), threads.min(c.n() / 2));
            let steps: Vec<i64> = split.parts.iter().flat_map(|p| (0..p.n()).map(|i| p.ts(i))).collect();
            let whole: Vec<i64> = (0..c.n()).map(|i| c.ts(i)).collect();
            assert_eq!(steps, whole, "{threads} threads, step {step}");
        }
    }

    #[test]
    fn more_threads_than_long_parts_share_the_threads() {
        let q = node("sum(rate(x[5m]))");
        let split = |threads, hours: i64| {
            let c = Ctx {
                end: hours * HOUR,
                ..day(60_000)
            };
            parts(StepSplit::default(), &q, c, threads, 300_000).map(|p| (p.parts.len(), p.threads_per_part))
        };
        assert_eq!(split(8, 24), Some((2, 4)), "two 12 h parts of a day, four threads each");
        assert_eq!(split(8, 48), Some((4, 2)));
        assert_eq!(split(3, 24), Some((2, 1)));
        assert_eq!(split(8, 23), None, "no part of 12 h");
    }

    #[test]
    fn only_long_parts_against_their_windows_are_split() {
        let q = "sum by (mode) (rate(node_cpu_seconds_total[75s]))";
        assert_eq!(plan_of(q, day(60_000), 2).map(|p| p.len()), Some(2));
        assert!(plan_of(q, day(60_000), 1).is_none(), "one thread");
        let never = parts(StepSplit::Never, &node(q), day(60_000), 2, 300_000);
        assert!(never.is_none(), "never");
        let six_hours = Ctx {
            end: 6 * HOUR,
            ..day(20_000)
        };
        assert!(plan_of(q, six_hours, 2).is_none(), "parts under 12 h");
        let instant = Ctx { step: 0, ..day(0) };
        assert!(plan_of(q, instant, 2).is_none(), "instant query");
        // 12 h parts against a 1 h window (32 h needed), and through a subquery.
        assert!(plan_of("rate(x[1h])", day(60_000), 2).is_none());
        assert!(plan_of("max_over_time(rate(x[5m])[1h:1m])", day(60_000), 2).is_none());
        assert!(plan_of("max_over_time(rate(x[5m])[10m:1m])", day(60_000), 2).is_some());
        assert!(plan_of("topk(3, sum by (x) (rate(y[5m])))", day(60_000), 2).is_none());
        assert!(plan_of("sum(count_values(\"v\", x))", day(60_000), 2).is_none());
        // A part orders the inner groups its own way: only an outer
        // aggregation that does not combine them in order is split.
        assert!(plan_of("sum(sum by (x) (rate(y[5m])))", day(60_000), 2).is_none());
        assert!(plan_of("max(avg by (x) (y) * 2)", day(60_000), 2).is_none());
        assert!(plan_of("count(count by (x) (y))", day(60_000), 2).is_some());
        assert!(plan_of("sum(rate(y[5m])) / sum(rate(z[5m]))", day(60_000), 2).is_some());
        // `@` pins the same data for every part.
        assert!(plan_of("x @ 100 + y", day(60_000), 2).is_none());
        assert!(plan_of("max_over_time(x[10m:1m] @ end())", day(60_000), 2).is_none());
        // A range function's collisions are looked for in its whole result.
        assert!(plan_of(r#"count_over_time({__name__=~"a|b"}[5m])"#, day(60_000), 2).is_none());
        assert!(plan_of(r#"max_over_time(abs({job="a"})[10m:1m])"#, day(60_000), 2).is_none());
        assert!(plan_of(r#"last_over_time({job="a"}[5m])"#, day(60_000), 2).is_some());
        assert!(plan_of(r#"max_over_time(sum({job="a"})[10m:1m])"#, day(60_000), 2).is_some());
    }
}
