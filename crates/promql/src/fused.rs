//! An aggregation of a range function over a selector, folded into the
//! select: `sum by (mode) (rate(node_cpu_seconds_total[5m]))`.
//!
//! Evaluated node by node, every series' result at every step is kept
//! (allocated, faulted in and freed) and then walked again to add it up. Here each series' points
//! go straight into its group's accumulators as the series is read. The
//! series arrive in label order, the order the node-by-node evaluation adds
//! them in, so every (group, step) sees the same additions in the same
//! order and the answers are bit-identical. On more than one thread the
//! select is sharded by the grouping labels, so each group lies whole in
//! one shard and is still added up in label order by one worker. The plan
//! (`plan/decide.rs`) folds on several threads only selects that may hold
//! many points: an aggregation into a single group has nothing to shard
//! by, and a small one costs less node by node, which spreads its series
//! over the threads.

use std::collections::BTreeSet;
use std::sync::Arc;

use foldhash::HashMap;

use cairn_model::Labels;
use cairn_storage::{SelectHints, ShardBy};

use crate::QueryError;
use crate::aggregate::GroupSteps;
use crate::aggregate::group_labels;
use crate::eval::{Ev, Result};
use crate::func::RangeFn;
use crate::functions::{counter_info, range_points};
use crate::ops::AggOp;
use crate::plan::{Aggregate, Foldable, Grouping, foldable};
use crate::samples::Samples;
use crate::series::{Series, Val};
use crate::steps::Ctx;

/// The groups being filled, keyed by their labels.
#[derive(Default)]
struct Groups {
    groups: HashMap<Labels, Group>,
    /// The infos `rate`/`increase` give about series that may not be counters.
    not_counters: BTreeSet<String>,
}

struct Group {
    /// The group's first series, which orders the groups as the node-by-node
    /// evaluation does (by first appearance in label order).
    first: Labels,
    steps: GroupSteps,
}

/// `a` evaluated by folding it into its select, read in the shards the
/// plan gave it, placed by the grouping labels. The plan folds only
/// aggregations of the shape [`Foldable`] describes.
/// `None` when a selected series has native histograms: the folded
/// kernels take floats only, and the aggregation is then evaluated node
/// by node.
pub(crate) fn aggregate(ev: &mut Ev, a: &Aggregate, c: Ctx) -> Result<Option<Val>> {
    let Foldable { func, sel, range, set } =
        foldable(a).ok_or_else(|| QueryError::Internal(format!("{:?} aggregation planned as folded", a.op)))?;
    let (op, grouping) = (a.op, &a.grouping);
    let by = if grouping.without {
        ShardBy::AllBut(grouping.names.clone())
    } else {
        ShardBy::Labels(grouping.names.clone())
    };
    let (ra, mint, maxt) = ev.matrix_window(sel, range, c);
    let hints = SelectHints {
        step_ms: (c.step > 0).then_some(c.step),
        func: Some(func.name().to_string()),
        range_ms: Some(ra.range),
        ..SelectHints::default()
    };
    let n = c.n();
    let by_type = ev.type_and_unit_labels;
    let init = || Fold {
        groups: Groups::default(),
        pts: Vec::new(),
        histograms: false,
    };
    let fold = |f: &mut Fold, labels: Labels, samples: Samples<'_>| {
        if !samples.hs.is_empty() {
            f.histograms = true;
        }
        if f.histograms {
            return Ok(());
        }
        f.pts.clear();
        range_points(func, &[], samples, c, ra, &mut f.pts)?;
        if !f.pts.is_empty() {
            add_series(&mut f.groups, (op, func, by_type), n, c, grouping, labels, &f.pts);
        }
        Ok(())
    };
    let folded = ev.fold_selected(set, mint, maxt, hints, Some(Arc::new(by)), &init, &fold)?;
    if folded.iter().any(|f| f.histograms) {
        return Ok(None);
    }
    // Each group lies whole in one shard (sharded by its labels).
    let mut all = Groups::default();
    for shard in folded {
        all.groups.extend(shard.groups.groups);
        all.not_counters.extend(shard.groups.not_counters);
    }
    finish(ev, all, c, func).map(Some)
}

/// One shard's groups, and a buffer for a series' points.
struct Fold {
    groups: Groups,
    pts: Vec<(i64, f64)>,
    /// A series had histograms: the fold is abandoned.
    histograms: bool,
}

/// Adds one series' points (on the step grid, in step order) to its group.
fn add_series(
    groups: &mut Groups,
    (op, func, by_type): (AggOp, RangeFn, bool),
    n: usize,
    c: Ctx,
    grouping: &Grouping,
    labels: Labels,
    pts: &[(i64, f64)],
) {
    if let Some(info) = counter_info(func, &labels, by_type) {
        groups.not_counters.insert(info);
    }
    let key = group_labels(&labels, grouping.without, &grouping.names);
    let group = groups.groups.entry(key).or_insert_with(|| Group {
        first: labels,
        steps: GroupSteps::new(op, n).expect("checked foldable"),
    });
    c.walk_steps(pts, 0, n, |i, &f| group.steps.add(i, f));
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
    ev.infos.extend(groups.not_counters);
    let out: Vec<Series> = out
        .into_iter()
        .map(|(_, labels, steps)| Series {
            labels,
            // Range functions drop the metric name, except these two.
            drop_name: !func.keeps_name(),
            pts: steps.points(c),
            hs: Vec::new(),
        })
        .collect();
    ev.add_output(&out)?;
    Ok(Val::Vector(out))
}
