//! The histogram functions: statistics of native histograms, and
//! `histogram_quantile`/`histogram_fraction` over native histograms and
//! classic buckets (series with an `le` label) alike.

use std::sync::Arc;

use foldhash::{HashMap, HashMapExt};

use cairn_model::go_float::format_openmetrics;
use cairn_model::{Histogram, Labels};

use super::arg_str;
use crate::QueryError;
use crate::annotations::Note;
use crate::eval::{Ev, Result};
use crate::histogram_stats::{self, HistogramStat};
use crate::plan::{Call, Node};
use crate::series::{OutAcc, Series, StepIter, Val};
use crate::steps::Ctx;

/// Which statistic of each step's buckets, with its scalar arguments per step.
pub(super) enum Statistic {
    /// Quantiles: with `label`, one result per quantile, labelled with it
    /// (`histogram_quantiles`); without, the one result has the input's
    /// labels (`histogram_quantile`).
    Quantiles {
        label: Option<String>,
        qs: Vec<Vec<f64>>,
    },
    Fraction(Vec<f64>, Vec<f64>),
}

/// `histogram_count`, `histogram_sum`, `histogram_avg`,
/// `histogram_stddev`, `histogram_stdvar`: one float per histogram point;
/// float points are left out.
pub(super) fn histogram_stat(ev: &mut Ev, ve: &Node, stat: HistogramStat, c: Ctx) -> Result<Val> {
    let v = ev.eval_vector(ve, c)?;
    let out = v
        .into_iter()
        .filter(|s| !s.hs.is_empty())
        .map(|s| Series::floats(s.labels, true, s.hs.iter().map(|(t, h)| (*t, stat.of(h))).collect()))
        .collect();
    Ok(Val::Vector(out))
}

pub(super) fn histogram_quantile(ev: &mut Ev, qe: &Node, ve: &Node, c: Ctx) -> Result<Val> {
    let q = quantile_arg(ev, qe, c)?;
    bucket_statistic(
        ev,
        Statistic::Quantiles {
            label: None,
            qs: vec![q],
        },
        ve,
        c,
    )
}

/// `histogram_quantiles(v, "label", q1, q2, ...)`: `histogram_quantile` of
/// each quantile, each result with the quantile as the value of `label`
/// (set over a label of that name the input has).
pub(super) fn histogram_quantiles(ev: &mut Ev, call: &Call, c: Ctx) -> Result<Val> {
    let (ve, label_arg, q_args) = match call.args.as_slice() {
        [ve, label, qs @ ..] if !qs.is_empty() => (ve, label, qs),
        _ => {
            return Err(QueryError::BadData(
                "histogram_quantiles needs a vector, a label and quantiles".into(),
            ));
        }
    };
    let label = arg_str(ev, label_arg, c)?;
    let qs = q_args.iter().map(|qe| quantile_arg(ev, qe, c)).collect::<Result<_>>()?;
    let stat = Statistic::Quantiles { label: Some(label), qs };
    bucket_statistic(ev, stat, ve, c)
}

/// A quantile argument per step, warned about when outside [0, 1].
fn quantile_arg(ev: &mut Ev, qe: &Node, c: Ctx) -> Result<Vec<f64>> {
    let q = ev.eval_scalar(qe, c)?;
    if let Some(bad) = q.iter().find(|q| !(0.0..=1.0).contains(*q)) {
        ev.note(Note::Warning(format!(
            "PromQL warning: quantile value should be between 0 and 1, got {}",
            crate::annotations::go_g(*bad)
        )));
    }
    Ok(q)
}

/// `labels` with `label` set to quantile `q` (none when `label` is `None`).
fn with_quantile(labels: &Labels, label: Option<&str>, q: f64) -> Labels {
    let Some(label) = label else {
        return labels.clone();
    };
    let mut out = labels.clone();
    out.set(label, &format_openmetrics(q));
    out
}

pub(super) fn histogram_fraction(ev: &mut Ev, le: &Node, ue: &Node, ve: &Node, c: Ctx) -> Result<Val> {
    let lower = ev.eval_scalar(le, c)?;
    let upper = ev.eval_scalar(ue, c)?;
    bucket_statistic(ev, Statistic::Fraction(lower, upper), ve, c)
}

/// A quantile or fraction at every step of each native histogram and of
/// each classic histogram (the float series that differ only in `le`). A
/// native histogram with the labels of a classic one at the same step is
/// an error of the input: neither has a result there.
fn bucket_statistic(ev: &mut Ev, stat: Statistic, ve: &Node, c: Ctx) -> Result<Val> {
    let v = ev.eval_vector(ve, c)?;
    // Group series by labels without `le`.
    let mut gidx: HashMap<Labels, usize> = HashMap::new();
    let mut groups: Vec<Labels> = Vec::new();
    let mut info: Vec<Option<(usize, f64)>> = Vec::with_capacity(v.len());
    for s in &v {
        let le = s.labels.get("le").and_then(|x| x.trim().parse::<f64>().ok());
        match le {
            Some(le) => {
                let mut key = s.labels.clone();
                key.remove("le");
                let g = *gidx.entry(key.clone()).or_insert_with(|| {
                    groups.push(key);
                    groups.len() - 1
                });
                info.push(Some((g, le)));
            }
            None => {
                if !s.pts.is_empty() {
                    // Prometheus names the metric only when names are removed late.
                    let name = match s.labels.metric_name() {
                        Some(name) if ev.delayed_names => format!(" for metric name \"{name}\""),
                        _ => String::new(),
                    };
                    ev.warnings.push(format!(
                        "PromQL warning: bucket label \"le\" is missing or has a malformed value of \"{}\"{name}",
                        s.labels.get("le").unwrap_or("")
                    ));
                }
                info.push(None);
            }
        }
    }
    // Native histograms per step, and the classic group of their labels.
    let mut natives: Vec<Vec<(usize, Arc<Histogram>)>> = vec![Vec::new(); c.n()];
    let mut native_group: Vec<Option<usize>> = vec![None; v.len()];
    for (j, s) in v.iter().enumerate() {
        if s.hs.is_empty() {
            continue;
        }
        native_group[j] = gidx.get(&s.labels).copied();
        c.walk_steps(&s.hs, 0, c.n(), |i, h| natives[i].push((j, h.clone())));
    }
    let mut buckets: Vec<Vec<(f64, f64)>> = vec![Vec::new(); groups.len()];
    let mut acc = OutAcc::new();
    let mut it = StepIter::new(&v, c);
    for (i, natives) in natives.iter().enumerate() {
        let t = c.ts(i);
        buckets.iter_mut().for_each(Vec::clear);
        it.at(t, |j, &x| {
            if let Some((g, le)) = info[j] {
                buckets[g].push((le, x));
            }
        });
        for (j, h) in natives {
            let j = *j;
            let s = &v[j];
            if let Some(g) = native_group[j].filter(|&g| !buckets[g].is_empty()) {
                ev.warnings.push(format!(
                    "PromQL warning: vector contains a mix of classic and native histograms for metric name \"{}\"",
                    s.labels.metric_name().unwrap_or("")
                ));
                buckets[g].clear();
                continue;
            }
            match &stat {
                Statistic::Quantiles { label, qs } => {
                    for q in qs {
                        let (r, note) = histogram_stats::quantile(q[i], h);
                        if let Some(note) = note {
                            ev.infos.push(note.text(s.labels.metric_name().unwrap_or("")));
                        }
                        acc.push(with_quantile(&s.labels, label.as_deref(), q[i]), true, t, r)?;
                    }
                }
                Statistic::Fraction(lo, hi) => {
                    let (r, note) = histogram_stats::fraction(lo[i], hi[i], h);
                    if let Some(note) = note {
                        ev.infos.push(note.text(s.labels.metric_name().unwrap_or("")));
                    }
                    acc.push(s.labels.clone(), true, t, r)?;
                }
            }
        }
        for (g, b) in buckets.iter_mut().enumerate() {
            if b.is_empty() {
                continue;
            }
            match &stat {
                Statistic::Quantiles { label, qs } => {
                    for q in qs {
                        let (r, forced) = bucket_quantile(q[i], b);
                        if forced {
                            ev.infos.push(format!(
                                "PromQL info: input to histogram_quantile needed to be fixed for monotonicity (see https://prometheus.io/docs/prometheus/latest/querying/functions/#histogram_quantile) for metric name \"{}\"",
                                groups[g].metric_name().unwrap_or("")
                            ));
                        }
                        acc.push(with_quantile(&groups[g], label.as_deref(), q[i]), true, t, r)?;
                    }
                }
                Statistic::Fraction(lo, hi) => {
                    acc.push(groups[g].clone(), true, t, bucket_fraction(lo[i], hi[i], b))?
                }
            }
        }
    }
    Ok(Val::Vector(acc.series))
}

/// The fraction of a classic histogram's observations between `lower`
/// and `upper`, interpolated linearly within buckets.
fn bucket_fraction(lower: f64, upper: f64, b: &mut [(f64, f64)]) -> f64 {
    b.sort_by(|x, y| x.0.total_cmp(&y.0));
    if b.last().is_none_or(|l| l.0 != f64::INFINITY) {
        return f64::NAN;
    }
    let b = coalesce(b);
    let count = b[b.len() - 1].1;
    if count == 0.0 || lower.is_nan() || upper.is_nan() {
        return f64::NAN;
    }
    if lower >= upper {
        return 0.0;
    }
    let (mut rank, mut lower_rank, mut upper_rank) = (0.0, 0.0, 0.0);
    let (mut lower_set, mut upper_set) = (false, false);
    // Positive buckets only, unless the first ends at or below zero.
    let mut lo = if b[0].0 <= 0.0 { f64::NEG_INFINITY } else { 0.0 };
    for (i, &(hi, cum)) in b.iter().enumerate() {
        if i > 0 {
            lo = b[i - 1].0;
        }
        let interpolate = |v: f64| {
            if lo == f64::NEG_INFINITY {
                return cum;
            }
            rank + (cum - rank) * (v - lo) / (hi - lo)
        };
        if !lower_set && lo >= lower {
            (lower_rank, lower_set) = (rank, true);
        }
        if !upper_set && lo >= upper {
            (upper_rank, upper_set) = (rank, true);
        }
        if lower_set && upper_set {
            break;
        }
        if !lower_set && lo < lower && hi > lower {
            (lower_rank, lower_set) = (interpolate(lower), true);
        }
        if !upper_set && lo < upper && hi > upper {
            (upper_rank, upper_set) = (interpolate(upper), true);
        }
        if lower_set && upper_set {
            break;
        }
        rank = cum;
    }
    if !lower_set || lower_rank > count {
        lower_rank = count;
    }
    if !upper_set || upper_rank > count {
        upper_rank = count;
    }
    (upper_rank - lower_rank) / count
}

/// Sorted buckets with equal upper bounds merged.
fn coalesce(b: &[(f64, f64)]) -> Vec<(f64, f64)> {
    let mut merged: Vec<(f64, f64)> = Vec::with_capacity(b.len());
    for &(le, c) in b {
        match merged.last_mut() {
            Some(last) if last.0 == le => last.1 += c,
            _ => merged.push((le, c)),
        }
    }
    merged
}

fn almost_equal(a: f64, b: f64, eps: f64) -> bool {
    const MIN_NORMAL: f64 = f64::MIN_POSITIVE;
    if a == b {
        return true;
    }
    let abs_sum = a.abs() + b.abs();
    let diff = (a - b).abs();
    if a == 0.0 || b == 0.0 || abs_sum < MIN_NORMAL {
        return diff < eps * MIN_NORMAL;
    }
    diff / abs_sum.min(f64::MAX) < eps
}

fn bucket_quantile(q: f64, b: &mut [(f64, f64)]) -> (f64, bool) {
    if q.is_nan() {
        return (f64::NAN, false);
    }
    if q < 0.0 {
        return (f64::NEG_INFINITY, false);
    }
    if q > 1.0 {
        return (f64::INFINITY, false);
    }
    b.sort_by(|x, y| x.0.partial_cmp(&y.0).unwrap_or(std::cmp::Ordering::Equal));
    if b.last().is_none_or(|l| l.0 != f64::INFINITY) {
        return (f64::NAN, false);
    }
    let mut merged = coalesce(b);
    let b = &mut merged;
    let mut forced = false;
    let mut prev = b[0].1;
    for i in 1..b.len() {
        let curr = b[i].1;
        if curr == prev {
            continue;
        }
        if almost_equal(prev, curr, 1e-12) {
            b[i].1 = prev;
            continue;
        }
        if curr < prev {
            b[i].1 = prev;
            forced = true;
            continue;
        }
        prev = curr;
    }
    if b.len() < 2 {
        return (f64::NAN, forced);
    }
    let obs = b[b.len() - 1].1;
    if obs == 0.0 {
        return (f64::NAN, forced);
    }
    let mut rank = q * obs;
    let idx = b[..b.len() - 1].partition_point(|x| x.1 < rank);
    if idx == b.len() - 1 {
        return (b[b.len() - 2].0, forced);
    }
    if idx == 0 && b[0].0 <= 0.0 {
        return (b[0].0, forced);
    }
    let mut start = 0.0;
    let end = b[idx].0;
    let mut count = b[idx].1;
    if idx > 0 {
        start = b[idx - 1].0;
        count -= b[idx - 1].1;
        rank -= b[idx - 1].1;
    }
    (start + (end - start) * (rank / count), forced)
}
