//! Aggregations: each input series' group, then the operation — the
//! accumulating ones step by step (`accumulate.rs`), `topk` and its kin
//! (`topk.rs`), `count_values` (`count_values.rs`).

mod accumulate;
mod count_values;
mod histograms;
mod topk;

use foldhash::{HashMap, HashMapExt};

use cairn_model::{Labels, METRIC_NAME};

pub(crate) use accumulate::GroupSteps;
pub(crate) use count_values::{check_label_names, value_label};

use crate::eval::{Ev, Result};
use crate::functions::quantile_warning;
use crate::ops::AggOp;
use crate::plan::Grouping;
use crate::series::{Series, Val, labels_from};
use crate::steps::Ctx;

/// The labels of `l`'s group: `names` only, or all but `names` and
/// `__name__` when `without`.
pub(crate) fn group_labels(l: &Labels, without: bool, names: &[String]) -> Labels {
    labels_from(
        l.iter()
            .filter(|lab| {
                let listed = names.iter().any(|n| *n == lab.name);
                if without {
                    !listed && lab.name != METRIC_NAME
                } else {
                    listed
                }
            })
            .cloned()
            .collect(),
    )
}

pub(crate) fn aggregate(
    ev: &mut Ev,
    op: AggOp,
    grouping: &Grouping,
    param: Option<Val>,
    input: Vec<Series>,
    threads: usize,
    c: Ctx,
) -> Result<Val> {
    let group_labels = |l: &Labels| group_labels(l, grouping.without, &grouping.names);
    let mut gidx: HashMap<Labels, usize> = HashMap::new();
    let mut groups: Vec<Labels> = Vec::new();
    let mut gdrop: Vec<bool> = Vec::new();
    let mut sgroup: Vec<usize> = Vec::with_capacity(input.len());
    for s in &input {
        let gl = group_labels(&s.labels);
        let g = match gidx.get(&gl) {
            Some(&g) => g,
            None => {
                gidx.insert(gl.clone(), groups.len());
                groups.push(gl);
                gdrop.push(false);
                groups.len() - 1
            }
        };
        gdrop[g] |= s.drop_name;
        sgroup.push(g);
    }
    let scalar_param = match &param {
        Some(Val::Scalar(s)) => Some(s.clone()),
        _ => None,
    };

    match op {
        AggOp::CountValues => count_values::count_values(&param, grouping, &input, &groups, &sgroup, c),
        AggOp::Topk | AggOp::Bottomk | AggOp::Limitk | AggOp::LimitRatio => {
            topk::select_k(ev, op, scalar_param, &input, &groups, &sgroup, c)
        }
        _ => {
            debug_assert!(op.accumulates());
            if op == AggOp::Quantile
                && let Some(p) = &scalar_param
            {
                // Over the whole query, as Prometheus: NaN at any step, the
                // largest if above 1, the smallest if below 0.
                let (max, min) = crate::math::go_extremes(p);
                let bad = [
                    p.iter().any(|q| q.is_nan()).then_some(f64::NAN),
                    (max > 1.0).then_some(max),
                    (min < 0.0).then_some(min),
                ];
                for q in bad.into_iter().flatten() {
                    quantile_warning(ev, &[q]);
                }
            }
            let out: Vec<Series> = groups
                .iter()
                .zip(&gdrop)
                .map(|(l, &d)| Series {
                    labels: l.clone(),
                    drop_name: d,
                    pts: Vec::new(),
                    hs: Vec::new(),
                })
                .collect();
            let mut out = {
                let budget = ev.budget();
                accumulate::simple(&budget, threads, op, &input, &sgroup, out, scalar_param.as_deref(), c)?
            };
            if input.iter().any(|s| !s.hs.is_empty()) {
                let labelled: Vec<(Labels, bool)> = groups.iter().cloned().zip(gdrop.iter().copied()).collect();
                for note in histograms::merge(op, &input, &sgroup, &labelled, &mut out) {
                    ev.note(note);
                }
            }
            ev.add_output(&out)?;
            Ok(Val::Vector(out))
        }
    }
}
