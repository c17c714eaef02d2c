//! `load_with_nhcb`: classic histograms (`_bucket{le=..}`, `_count`,
//! `_sum` series) are also stored as native histograms with custom buckets
//! (NHCB) under the base name, as Prometheus' test framework does.

use std::collections::BTreeMap;
use std::sync::Arc;

use cairn_model::histogram::{CUSTOM_BUCKETS_SCHEMA, Histogram, HistogramSample};
use cairn_model::{Labels, METRIC_NAME, Sample};

/// One classic histogram at one timestamp, as its series give it.
#[derive(Default)]
struct Classic {
    /// Cumulative counts by upper bound.
    buckets: Vec<(f64, f64)>,
    count: Option<f64>,
    sum: f64,
}

/// The NHCB series of the classic histograms among `series`.
pub(crate) fn convert(series: &[(Labels, Vec<Sample>)]) -> Result<Vec<(Labels, Vec<HistogramSample>)>, String> {
    let mut by_base: BTreeMap<Labels, BTreeMap<i64, Classic>> = BTreeMap::new();
    for (labels, samples) in series {
        let Some(name) = labels.metric_name() else { continue };
        let (base, part) = if let Some(b) = name.strip_suffix("_bucket") {
            let Some(le) = labels
                .get("le")
                .and_then(|v| v.trim().parse::<f64>().ok())
                .filter(|v| !v.is_nan())
            else {
                continue;
            };
            (b, Some(le))
        } else if let Some(b) = name.strip_suffix("_sum") {
            (b, None)
        } else if let Some(b) = name.strip_suffix("_count") {
            (b, None)
        } else {
            continue;
        };
        let mut key = labels.clone();
        key.remove("le");
        key.set(METRIC_NAME, base);
        let at = by_base.entry(key).or_default();
        for s in samples {
            let c = at.entry(s.t).or_default();
            match part {
                Some(le) => c.buckets.push((le, s.v)),
                None if name.ends_with("_sum") => c.sum = s.v,
                None => c.count = Some(s.v),
            }
        }
    }
    by_base
        .into_iter()
        .map(|(labels, at)| {
            let samples = at
                .into_iter()
                .map(|(t, c)| Ok(HistogramSample::new(t, to_native(c)?)))
                .collect::<Result<Vec<_>, String>>()?;
            Ok((labels, samples))
        })
        .collect()
}

/// Bucket counts from cumulative ones; a missing `+Inf` bucket holds the
/// count, a missing count is the largest bucket's.
fn to_native(mut c: Classic) -> Result<Histogram, String> {
    c.buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
    c.buckets.dedup_by(|b, a| a.0 == b.0);
    if c.buckets.windows(2).any(|w| w[1].1 < w[0].1) || c.buckets.iter().any(|b| b.1 < 0.0) {
        return Err("classic histogram counts are not cumulative".into());
    }
    let count = c.count.or(c.buckets.last().map(|b| b.1)).unwrap_or(0.0);
    if c.buckets.last().is_none_or(|b| b.0 != f64::INFINITY) {
        c.buckets.push((f64::INFINITY, count));
    }
    if c.buckets.last().is_some_and(|b| b.1 != count) {
        return Err("classic histogram count does not match its +Inf bucket".into());
    }
    let mut positive = Vec::with_capacity(c.buckets.len());
    let mut below = 0.0;
    for (i, b) in c.buckets.iter().enumerate() {
        let n = b.1 - below;
        below = b.1;
        if n != 0.0 {
            positive.push((i as i32, n));
        }
    }
    let bounds: Vec<f64> = c.buckets[..c.buckets.len() - 1].iter().map(|b| b.0).collect();
    Ok(Histogram {
        schema: CUSTOM_BUCKETS_SCHEMA,
        count,
        sum: c.sum,
        positive,
        custom_bounds: Some(Arc::from(bounds)),
        ..Histogram::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nhcb_from_classic_series() {
        let l = |n: &str, le: Option<&str>| {
            let mut l = Labels::from_pairs([(METRIC_NAME, n), ("job", "a")]);
            if let Some(le) = le {
                l.set("le", le);
            }
            l
        };
        let series = vec![
            (l("h_bucket", Some("1")), vec![Sample::new(0, 1.0)]),
            (l("h_bucket", Some("2")), vec![Sample::new(0, 3.0)]),
            (l("h_bucket", Some("+Inf")), vec![Sample::new(0, 4.0)]),
            (l("h_sum", None), vec![Sample::new(0, 7.0)]),
            (l("h_count", None), vec![Sample::new(0, 4.0)]),
            (l("other", None), vec![Sample::new(0, 4.0)]),
        ];
        let out = convert(&series).unwrap();
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].0, l("h", None));
        let h = &out[0].1[0].h;
        assert_eq!((h.count, h.sum), (4.0, 7.0));
        assert_eq!(h.positive, [(0, 1.0), (1, 2.0), (2, 1.0)]);
        assert_eq!(h.bounds(), [1.0, 2.0]);
    }
}
