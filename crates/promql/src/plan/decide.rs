//! Where and how each node of a lowered query runs.
//!
//! The storage is asked once per selector (per `or` alternative) how many
//! series it may select over the whole query's reach, through one querier.
//! From those bounds, the steps and the threads the evaluation may use:
//! - the query is *inline* (evaluated on the caller's thread) when its
//!   selectors match at most [`INLINE_MAX_SERIES`] series in all, each over
//!   at most [`INLINE_MAX_SPAN_MS`], with no subquery: then the hand-offs to
//!   a blocking pool and back would cost about as much as the evaluation;
//! - a range query is split by steps as `step_split.rs` says;
//! - a select is read in one shard per thread, unless it selects at most
//!   [`SEQUENTIAL_MAX_SERIES`] series (then the hand-offs cost more than a
//!   second core saves);
//! - an aggregation of a range function over a selector is folded into the
//!   select (`fused.rs`) on one thread always, and on several when it may
//!   hold at least `fold_sharded_min_points` points (series × steps) and
//!   has labels to shard by: below, its select sharded by group costs more
//!   than the node-by-node aggregation's walk (docs/benchmarks.md);
//! - a node-by-node aggregation cuts its steps into one chunk per thread
//!   from [`PARALLEL_MIN_POINTS`] points of input.

use cairn_storage::Queryable;
use promql_parser::parser::AtModifier;

use super::{AggStrategy, Aggregate, MatcherSet, Node, Plan, Selector, SplitParts};
use crate::eval::Result;
use crate::func::{Func, RangeFn};
use crate::ops::AggOp;
use crate::step_split::StepSplit;
use crate::steps::Ctx;

/// Series an inline query may select, over all its selectors (a series in
/// two day partitions counts twice).
const INLINE_MAX_SERIES: usize = 16;

/// Time an inline query's selector may reach over: its steps' span plus its
/// range or lookback.
const INLINE_MAX_SPAN_MS: i64 = 24 * 3_600_000;

/// Selects of at most this many series are read on the evaluating thread.
const SEQUENTIAL_MAX_SERIES: usize = 16;

/// Input points (series × steps) below which a node-by-node aggregation is
/// not worth a thread hand-off.
const PARALLEL_MIN_POINTS: usize = 50_000;

/// What a plan is decided from, besides the query.
#[derive(Debug, Clone)]
pub(crate) struct Limits {
    /// Pool threads the evaluation may use.
    pub threads: usize,
    pub lookback: i64,
    pub step_split: StepSplit,
    pub fold_sharded_min_points: usize,
}

/// The plan of `root` evaluated at the steps of `ctx` (one step: an
/// instant query).
pub(crate) fn decide(q: &dyn Queryable, mut root: Node, ctx: Ctx, limits: &Limits) -> Result<Plan> {
    let inline = bound_selectors(q, &mut root, ctx, limits)?;
    // An inline query stays on the caller's thread throughout.
    let split = if inline {
        None
    } else {
        crate::step_split::parts(limits.step_split, &root, ctx, limits.threads, limits.lookback)
    };
    let (threads, part) = match &split {
        Some(SplitParts {
            parts,
            threads_per_part,
        }) => (
            *threads_per_part,
            parts.iter().copied().max_by_key(Ctx::n).unwrap_or(ctx),
        ),
        None if inline => (1, ctx),
        None => (limits.threads, ctx),
    };
    place(&mut root, threads, part.n(), part.end - part.start, limits);
    Ok(Plan {
        root,
        ctx,
        split,
        inline,
    })
}

/// How far a selector reads: `(lo, hi)` of its samples over the query, and
/// the span that covers.
struct Reach {
    lo: i64,
    hi: i64,
    span: i64,
}

/// Whether the query's shape allows running it inline, before any bound is
/// known: no subquery, and no selector reaching over more than
/// [`INLINE_MAX_SPAN_MS`]. (A query that fails this is best planned where
/// it runs: its bounds are the index work its selects would do first.)
pub(crate) fn may_be_inline(root: &Node, ctx: Ctx, limits: &Limits) -> bool {
    let (reaches, subquery) = reaches(root, ctx, limits);
    !subquery && reaches.iter().all(|r| r.span <= INLINE_MAX_SPAN_MS)
}

/// Each selector's reach, in the order they are written, and whether there
/// is a subquery.
fn reaches(root: &Node, ctx: Ctx, limits: &Limits) -> (Vec<Reach>, bool) {
    let mut reaches = Vec::new();
    let mut subquery = false;
    collect(root, Window::of(ctx), limits, &mut reaches, &mut subquery);
    (reaches, subquery)
}

/// Asks the storage for each selector's bound, through one querier over
/// every selector's reach; returns whether the query is inline.
fn bound_selectors(q: &dyn Queryable, root: &mut Node, ctx: Ctx, limits: &Limits) -> Result<bool> {
    let (reaches, subquery) = reaches(root, ctx, limits);
    if reaches.is_empty() {
        return Ok(!subquery);
    }
    let lo = reaches.iter().map(|r| r.lo).min().unwrap_or(i64::MIN);
    let hi = reaches.iter().map(|r| r.hi).max().unwrap_or(i64::MAX);
    let short = reaches.iter().all(|r| r.span <= INLINE_MAX_SPAN_MS);
    let querier = q.querier(lo, hi)?;
    let mut total = 0usize;
    for sel in root.selectors_mut() {
        for set in &mut sel.sets {
            set.bound = querier.series_upper_bound(&set.matchers)?;
            total = total.saturating_add(set.bound);
        }
    }
    Ok(!subquery && short && total <= INLINE_MAX_SERIES)
}

/// The times a node is evaluated over: its steps' span, shifted back by the
/// subqueries around it, or the time an `@` fixes; with the query's own
/// start and end, which `@ start()` and `@ end()` name.
#[derive(Clone, Copy)]
struct Window {
    start: i64,
    end: i64,
    query: Ctx,
}

impl Window {
    fn of(c: Ctx) -> Self {
        Self {
            start: c.start,
            end: c.end,
            query: c,
        }
    }

    /// This window, or the single time `at` fixes.
    fn pinned(self, at: &Option<AtModifier>) -> (i64, i64) {
        match crate::eval::at_ms(at, self.query.start, self.query.end) {
            Some(t) => (t, t),
            None => (self.start, self.end),
        }
    }

    fn reach(self, sel: &Selector, back: i64, lookback: i64) -> Reach {
        let offset = sel.offset;
        let (start, end) = self.pinned(&sel.at);
        let (extra_back, ahead) = sel.extra_reach(lookback);
        let back = back.saturating_add(extra_back);
        Reach {
            lo: start.saturating_sub(offset).saturating_sub(back),
            hi: end.saturating_sub(offset).saturating_add(ahead),
            span: end.saturating_sub(start).saturating_add(back).saturating_add(ahead),
        }
    }
}

fn collect(node: &Node, w: Window, limits: &Limits, out: &mut Vec<Reach>, subquery: &mut bool) {
    match node {
        Node::Vector(sel) => out.push(w.reach(sel, limits.lookback, limits.lookback)),
        Node::Matrix(sel, range) => out.push(w.reach(sel, *range, limits.lookback)),
        Node::Info(info) => {
            out.push(w.reach(&info.select, limits.lookback, limits.lookback));
            collect(&info.input, w, limits, out, subquery);
        }
        Node::Subquery(sq) => {
            *subquery = true;
            let (start, end) = w.pinned(&sq.at);
            let inner = Window {
                start: start.saturating_sub(sq.offset).saturating_sub(sq.range),
                end: end.saturating_sub(sq.offset),
                query: w.query,
            };
            collect(&sq.inner, inner, limits, out, subquery);
        }
        _ => {
            for child in node.children() {
                collect(child, w, limits, out, subquery);
            }
        }
    }
}

/// Sets where each node runs: `threads` pool threads, `steps` steps
/// spanning `span` ms.
fn place(node: &mut Node, threads: usize, steps: usize, span: i64, limits: &Limits) {
    match node {
        Node::Vector(sel) | Node::Matrix(sel, _) => place_select(sel, threads),
        Node::Info(info) => {
            place_select(&mut info.select, threads);
            place(&mut info.input, threads, steps, span, limits);
        }
        Node::Subquery(sq) => {
            sq.threads = threads;
            // Its inner steps cover the outer steps' span plus its range
            // (as `Ev::eval_subquery` lays them out).
            let step = sq.step.unwrap_or(crate::eval::DEFAULT_SUBQUERY_STEP).max(1);
            let inner_span = span.saturating_add(sq.range);
            let inner_steps = usize::try_from(inner_span / step).map_or(usize::MAX, |n| n + 1);
            place(&mut sq.inner, threads, inner_steps, inner_span, limits);
        }
        Node::Aggregate(a) => {
            if let Some(p) = &mut a.param {
                place(p, threads, steps, span, limits);
            }
            place(&mut a.input, threads, steps, span, limits);
            a.strategy = strategy(a, threads, steps, limits);
        }
        _ => {
            for child in node.children_mut() {
                place(child, threads, steps, span, limits);
            }
        }
    }
}

/// The shards each of `sel`'s selects is read in.
fn place_select(sel: &mut Selector, threads: usize) {
    for set in &mut sel.sets {
        set.shards = if threads <= 1 || set.bound <= SEQUENTIAL_MAX_SERIES {
            1
        } else {
            threads
        };
    }
}

fn strategy(a: &Aggregate, threads: usize, steps: usize, limits: &Limits) -> AggStrategy {
    // Folded, its select is read in the shards `place` gave it.
    if let Some(f) = foldable(a) {
        let shardable = a.grouping.without || !a.grouping.names.is_empty();
        let points = f.set.bound.saturating_mul(steps);
        if threads <= 1 || (shardable && points >= limits.fold_sharded_min_points) {
            return AggStrategy::Folded;
        }
    }
    let points = series_bound(&a.input).saturating_mul(steps);
    let threads = if a.op.accumulates() && points >= PARALLEL_MIN_POINTS {
        threads.clamp(1, steps.max(1))
    } else {
        1
    };
    AggStrategy::NodeByNode { threads }
}

/// An aggregation of the shape `fused.rs` folds into its select: an
/// aggregation accumulated from the values alone (not `quantile`, `topk`,
/// ...), not grouped by `__name__`, of a
/// [foldable](crate::func::RangeFn::foldable) range function over a matrix
/// selector without `or` alternatives.
pub(crate) struct Foldable<'a> {
    pub func: RangeFn,
    pub sel: &'a Selector,
    pub range: i64,
    /// The select, with its bound and the shards the plan reads it in.
    pub set: &'a MatcherSet,
}

/// `a`'s parts if it has the shape [`Foldable`] describes.
pub(crate) fn foldable(a: &Aggregate) -> Option<Foldable<'_>> {
    if !a.op.accumulates() || a.op == AggOp::Quantile || a.param.is_some() || a.grouping.by_metric_name() {
        return None;
    }
    let Node::Call(call) = &a.input else {
        return None;
    };
    let (Func::Range(func), [Node::Matrix(sel, range)]) = (call.func, call.args.as_slice()) else {
        return None;
    };
    match sel.sets.as_slice() {
        // Folded series are never gathered, so none may collide once the
        // function drops their names (`series::settle_names`): one name only.
        [set] if func.foldable() && (func.keeps_name() || set.pins_metric_name()) => Some(Foldable {
            func,
            sel,
            range: *range,
            set,
        }),
        _ => None,
    }
}

/// About how many series `node` evaluates to, from its selectors' bounds
/// (an upper bound but for `topk` and its kin, which matter little here).
fn series_bound(node: &Node) -> usize {
    match node {
        Node::Number(_) | Node::Str(_) => 1,
        Node::Vector(sel) | Node::Matrix(sel, _) => sel.sets.iter().fold(0, |n, s| n.saturating_add(s.bound)),
        Node::Subquery(sq) => series_bound(&sq.inner),
        Node::Neg(n) => series_bound(n),
        Node::Call(call) => call.args.iter().map(series_bound).max().unwrap_or(1),
        Node::Aggregate(a) if !a.grouping.without && a.grouping.names.is_empty() => 1,
        Node::Aggregate(a) => series_bound(&a.input),
        Node::Binary(b) => series_bound(&b.lhs).saturating_add(series_bound(&b.rhs)),
        Node::Info(info) => series_bound(&info.input),
    }
}
