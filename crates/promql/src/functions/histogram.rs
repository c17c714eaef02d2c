//! `histogram_quantile` over classic buckets (series with an `le` label).

use foldhash::{HashMap, HashMapExt};

use cairn_model::Labels;
use cairn_model::go_float::format_f;

use crate::eval::{Ev, Result};
use crate::plan::Node;
use crate::series::{OutAcc, StepIter, Val};
use crate::steps::Ctx;

pub(super) fn histogram_quantile(ev: &mut Ev, qe: &Node, ve: &Node, c: Ctx) -> Result<Val> {
    let q = ev.eval_scalar(qe, c)?;
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
                let name = s.labels.metric_name().unwrap_or("");
                ev.warnings.push(format!(
                    "PromQL warning: bucket label \"le\" is missing or has a malformed value of \"{}\" for metric name \"{name}\"",
                    s.labels.get("le").unwrap_or("")
                ));
                info.push(None);
            }
        }
    }
    let mut buckets: Vec<Vec<(f64, f64)>> = vec![Vec::new(); groups.len()];
    let mut acc = OutAcc::new();
    let mut it = StepIter::new(&v, c);
    for i in 0..c.n() {
        let t = c.ts(i);
        buckets.iter_mut().for_each(Vec::clear);
        it.at(t, |j, x| {
            if let Some((g, le)) = info[j] {
                buckets[g].push((le, x));
            }
        });
        let qv = q[i];
        if !(0.0..=1.0).contains(&qv) {
            ev.warnings.push(format!(
                "PromQL warning: quantile value should be between 0 and 1, got {}",
                format_f(qv)
            ));
        }
        for (g, b) in buckets.iter_mut().enumerate() {
            if b.is_empty() {
                continue;
            }
            let (r, forced) = bucket_quantile(qv, b);
            if forced {
                ev.infos.push(format!(
                    "PromQL info: input to histogram_quantile needed to be fixed for monotonicity (see https://prometheus.io/docs/prometheus/latest/querying/functions/#histogram_quantile) for metric name \"{}\"",
                    groups[g].metric_name().unwrap_or("")
                ));
            }
            acc.push(groups[g].clone(), true, t, r)?;
        }
    }
    Ok(Val::Vector(acc.series))
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
    // Coalesce equal upper bounds.
    let mut merged: Vec<(f64, f64)> = Vec::with_capacity(b.len());
    for &(le, c) in b.iter() {
        match merged.last_mut() {
            Some(last) if last.0 == le => last.1 += c,
            _ => merged.push((le, c)),
        }
    }
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
