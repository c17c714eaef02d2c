//! What the accumulating aggregations do with native histograms; only
//! inputs that have some run this (float inputs never do). The floats
//! are aggregated by `accumulate.rs` as ever, and this adds what
//! Prometheus does with histograms: `sum` and `avg` add them up (a group
//! with both kinds at a step has no result there, with a warning), `count`
//! and `group` count them, and the float-only operations ignore them with
//! an info.

use std::collections::BTreeMap;
use std::sync::Arc;

use foldhash::{HashMap, HashMapExt};

use cairn_model::Histogram;
use cairn_model::histogram::ResetHint;

use crate::annotations::{self, Note};
use crate::histogram_stats;
use crate::ops::AggOp as Op;
use crate::series::Series;

/// The histograms of one group at one step, and whether it has floats there.
#[derive(Default)]
struct Step {
    floats: bool,
    hs: Vec<Arc<Histogram>>,
    /// Metric names of the series the histograms came from.
    names: Vec<String>,
}

/// Merges the histograms of `input` into `out`, the float result of `op`
/// over the same groups (`groups[g]` the labels of group `g`, `sgroup[j]`
/// the group of input series `j`); returns the notes for the result.
pub(super) fn merge(
    op: Op,
    input: &[Series],
    sgroup: &[usize],
    groups: &[(cairn_model::Labels, bool)],
    out: &mut Vec<Series>,
) -> Vec<Note> {
    let mut notes = Vec::new();
    let mut at: BTreeMap<(usize, i64), Step> = BTreeMap::new();
    for (j, s) in input.iter().enumerate().filter(|(_, s)| !s.hs.is_empty()) {
        let g = sgroup[j];
        for (t, h) in &s.hs {
            let step = at.entry((g, *t)).or_default();
            step.hs.push(h.clone());
            step.names.push(s.labels.metric_name().unwrap_or("").to_string());
        }
    }
    if at.is_empty() {
        return notes;
    }
    for (j, s) in input.iter().enumerate() {
        for (t, _) in &s.pts {
            if let Some(step) = at.get_mut(&(sgroup[j], *t)) {
                step.floats = true;
            }
        }
    }
    let mut index: HashMap<cairn_model::Labels, usize> = HashMap::with_capacity(out.len());
    for (i, s) in out.iter().enumerate() {
        index.insert(s.labels.clone(), i);
    }
    let mut slot = |out: &mut Vec<Series>, g: usize| -> usize {
        let (labels, drop_name) = &groups[g];
        *index.entry(labels.clone()).or_insert_with(|| {
            out.push(Series::floats(labels.clone(), *drop_name, Vec::new()));
            out.len() - 1
        })
    };
    for ((g, t), step) in at {
        match op {
            Op::Sum | Op::Avg => {
                if step.floats {
                    notes.push(annotations::mixed_floats_histograms_in_aggregation());
                    let i = slot(out, g);
                    out[i].pts.retain(|p| p.0 != t);
                    continue;
                }
                if ResetHint::conflict_among(step.hs.iter().map(|h| h.reset_hint)) {
                    notes.push(annotations::counter_reset_collision("aggregation"));
                }
                let mut total = (*step.hs[0]).clone();
                let mut ok = true;
                for (h, name) in step.hs[1..].iter().zip(&step.names[1..]) {
                    if annotations::custom_bounds_differ(&total, h) {
                        notes.push(annotations::mismatched_custom_buckets("aggregation"));
                    }
                    if total.add(h).is_err() {
                        notes.push(annotations::mixed_exponential_custom(name));
                        ok = false;
                        break;
                    }
                }
                if !ok {
                    continue;
                }
                (total.sum, total.count) = histogram_stats::compensated_totals(step.hs.iter().map(|h| &**h));
                if op == Op::Avg {
                    total = histogram_stats::mean(total, step.hs.iter().map(|h| &**h));
                }
                total.compact();
                let i = slot(out, g);
                out[i].hs.push((t, Arc::new(total)));
            }
            Op::Count | Op::Group => {
                let i = slot(out, g);
                let n = if op == Op::Count { step.hs.len() as f64 } else { 0.0 };
                match out[i].pts.iter_mut().find(|p| p.0 == t) {
                    Some(p) => p.1 += n,
                    None => {
                        out[i].pts.push((t, if op == Op::Count { n } else { 1.0 }));
                        out[i].pts.sort_by_key(|p| p.0);
                    }
                }
            }
            _ => notes.push(annotations::histogram_ignored_in_aggregation(op.name())),
        }
    }
    for s in out.iter_mut() {
        s.hs.sort_by_key(|p| p.0);
    }
    out.retain(|s| !s.pts.is_empty() || !s.hs.is_empty());
    notes
}

#[cfg(test)]
mod tests {
    use cairn_model::Labels;

    use super::*;

    fn hist(count: f64) -> Arc<Histogram> {
        Arc::new(Histogram {
            count,
            sum: count,
            positive: vec![(0, count)],
            ..Histogram::default()
        })
    }

    fn series(name: &str, pts: Vec<(i64, f64)>, hs: Vec<(i64, Arc<Histogram>)>) -> Series {
        Series {
            labels: Labels::from_pairs([("__name__", name)]),
            drop_name: false,
            pts,
            hs,
        }
    }

    #[test]
    fn sums_add_histograms_and_drop_steps_of_both_kinds() {
        let input = [
            series("a", vec![(20, 1.0)], vec![(10, hist(1.0))]),
            series("b", vec![], vec![(10, hist(2.0)), (20, hist(5.0))]),
        ];
        let groups = [(Labels::empty(), true)];
        // The float result: `a`'s float alone at 20.
        let mut out = vec![Series::floats(Labels::empty(), true, vec![(20, 1.0)])];
        let notes = merge(Op::Sum, &input, &[0, 0], &groups, &mut out);
        assert_eq!(notes, [annotations::mixed_floats_histograms_in_aggregation()]);
        assert!(out[0].pts.is_empty());
        let counts: Vec<(i64, f64)> = out[0].hs.iter().map(|p| (p.0, p.1.count)).collect();
        assert_eq!(counts, [(10, 3.0)]);
    }

    #[test]
    fn counts_take_both_kinds_and_max_ignores_histograms() {
        let input = [
            series("a", vec![(10, 1.0)], vec![]),
            series("b", vec![], vec![(10, hist(2.0))]),
        ];
        let groups = [(Labels::empty(), true)];
        let mut out = vec![Series::floats(Labels::empty(), true, vec![(10, 1.0)])];
        assert!(merge(Op::Count, &input, &[0, 0], &groups, &mut out).is_empty());
        assert_eq!(out[0].pts, [(10, 2.0)]);
        let mut out = vec![Series::floats(Labels::empty(), true, vec![(10, 1.0)])];
        let notes = merge(Op::Max, &input, &[0, 0], &groups, &mut out);
        assert_eq!(notes, [annotations::histogram_ignored_in_aggregation("max")]);
        assert_eq!(out[0].pts, [(10, 1.0)]);
    }
}
