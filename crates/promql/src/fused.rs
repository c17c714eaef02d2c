//! An aggregation of a range function over a selector, folded into the
//! select: `sum by (mode) (rate(node_cpu_seconds_total[5m]))`.
//!
//! Evaluated node by node, every series' result at every step is kept (for
//! 64,000 series over an hour at 15 s steps, 250 MB allocated, faulted in
//! and freed) and then walked again to add it up. Here each series' points
//! go straight into its group's accumulators as the series is read. The
//! series arrive in label order, the order the node-by-node evaluation adds
//! them in, so every (group, step) sees the same additions in the same
//! order and the answers are bit-identical. On more than one thread the
//! select is sharded by the grouping labels, so each group lies whole in
//! one shard and is still added up in label order by one worker. That is
//! done only for selects that may hold many points: an aggregation into a
//! single group has nothing to shard by, and a small one costs less node
//! by node, which spreads its series over the threads.

use std::collections::BTreeSet;
use std::sync::Arc;

use foldhash::HashMap;

use cairn_model::{Labels, METRIC_NAME};
use cairn_storage::{SelectHints, ShardBy};
use promql_parser::parser::{AggregateExpr, Expr, LabelModifier};

use crate::aggregate::GroupSteps;
use crate::eval::{Ctx, Ev, Result, Series, Val, unwrap_parens};
use crate::func::{Func, RangeFn};
use crate::functions::{counter_info, group_labels, range_points};
use crate::ops::AggOp;
use crate::samples::Samples;

/// The groups being filled, keyed by their labels.
#[derive(Default)]
struct Groups {
    groups: HashMap<Labels, Group>,
    /// Metric names that `rate`/`increase` should warn about.
    not_counters: BTreeSet<String>,
}

struct Group {
    /// The group's first series, which orders the groups as the node-by-node
    /// evaluation does (by first appearance in label order).
    first: Labels,
    steps: GroupSteps,
}

/// `a` evaluated by folding it into its select, or `None` when it is not of
/// the foldable shape: a simple aggregation (not `quantile`, `topk`, ...)
/// of a [foldable](RangeFn::foldable) range function over a matrix
/// selector without `or` alternatives.
pub(crate) fn try_aggregate(ev: &mut Ev, a: &AggregateExpr, c: Ctx) -> Option<Result<Val>> {
    let op = AggOp::of(a.op).ok()?;
    let (without, names) = match a.modifier.as_ref() {
        None => (false, Vec::new()),
        Some(LabelModifier::Include(l)) if !l.labels.iter().any(|n| n == METRIC_NAME) => (false, l.labels.clone()),
        Some(LabelModifier::Exclude(l)) => (true, l.labels.clone()),
        Some(LabelModifier::Include(_)) => return None,
    };
    if a.param.is_some() {
        return None;
    }
    // Only the aggregations `GroupSteps` accumulates (not quantile, topk, ...).
    GroupSteps::new(op, 0)?;
    let Expr::Call(call) = unwrap_parens(&a.expr) else {
        return None;
    };
    let Some(Func::Range(func)) = Func::of(call.func.name) else {
        return None;
    };
    let [arg] = call.args.args.as_slice() else {
        return None;
    };
    let Expr::MatrixSelector(ms) = unwrap_parens(arg) else {
        return None;
    };
    if !func.foldable() {
        return None;
    }
    let by = if without {
        ShardBy::AllBut(names.clone())
    } else {
        ShardBy::Labels(names.clone())
    };
    // On several threads, folding pays when the node-by-node evaluation
    // would keep many points (below, its aggregation walks them for less
    // than sharding the select by group costs; docs/benchmarks.md), and
    // needs something to shard by.
    let min_series = if ev.threads > 1 {
        if matches!(&by, ShardBy::Labels(n) if n.is_empty()) {
            return None;
        }
        ev.fold_sharded_min_points.div_ceil(c.n().max(1))
    } else {
        0
    };
    let (ra, mint, maxt) = ev.matrix_window(ms, c);
    let hints = SelectHints {
        step_ms: (c.step > 0).then_some(c.step),
        func: Some(func.name().to_string()),
        range_ms: Some(ra.range),
        ..SelectHints::default()
    };
    let n = c.n();
    let init = || Fold {
        groups: Groups::default(),
        pts: Vec::new(),
    };
    let fold = |f: &mut Fold, labels: Labels, samples: Samples<'_>| {
        f.pts.clear();
        range_points(func, &[], samples, c, ra, &mut f.pts)?;
        if !f.pts.is_empty() {
            add_series(&mut f.groups, op, n, c, without, &names, func, labels, &f.pts);
        }
        Ok(())
    };
    match ev.fold_selected(&ms.vs, mint, maxt, hints, Some(Arc::new(by)), min_series, &init, &fold) {
        Ok(Some(shards)) => {
            // Each group lies whole in one shard (sharded by its labels).
            let mut all = Groups::default();
            for shard in shards {
                all.groups.extend(shard.groups.groups);
                all.not_counters.extend(shard.groups.not_counters);
            }
            Some(finish(ev, all, c, func))
        }
        // `or` alternatives in the selector, or too few series: the node-by-node path.
        Ok(None) => None,
        Err(e) => Some(Err(e)),
    }
}

/// One shard's groups, and a buffer for a series' points.
struct Fold {
    groups: Groups,
    pts: Vec<(i64, f64)>,
}

/// Adds one series' points (on the step grid, in step order) to its group.
#[allow(clippy::too_many_arguments)]
fn add_series(
    groups: &mut Groups,
    op: AggOp,
    n: usize,
    c: Ctx,
    without: bool,
    names: &[String],
    func: RangeFn,
    labels: Labels,
    pts: &[(i64, f64)],
) {
    if let Some(mn) = labels.metric_name()
        && counter_info(func, mn).is_some()
    {
        groups.not_counters.insert(mn.to_string());
    }
    let key = group_labels(&labels, without, names);
    let group = groups.groups.entry(key).or_insert_with(|| Group {
        first: labels,
        steps: GroupSteps::new(op, n).expect("checked foldable"),
    });
    c.walk_steps(pts, 0, n, |i, f| group.steps.add(i, f));
}

/// The groups as the aggregation's result, in the order the node-by-node
/// evaluation gives them.
fn finish(ev: &mut Ev, groups: Groups, c: Ctx, func: RangeFn) -> Result<Val> {
    let mut out: Vec<(Labels, Labels, GroupSteps)> = groups
        .groups
        .into_iter()
        .map(|(key, g)| (g.first, key, g.steps))
        .collect();
    out.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    // Series are read in label order, so the node-by-node path's per-series
    // infos come out by metric name too (then deduplicated).
    for metric in &groups.not_counters {
        ev.infos.extend(counter_info(func, metric));
    }
    let out: Vec<Series> = out
        .into_iter()
        .map(|(_, labels, steps)| Series {
            labels,
            // Range functions drop the metric name, except these two.
            drop_name: !func.keeps_name(),
            pts: steps.points(c),
        })
        .collect();
    ev.add_samples(out.iter().map(|s| s.pts.len()).sum())?;
    Ok(Val::Vector(out))
}
