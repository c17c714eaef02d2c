//! Statistics of one native histogram: the values of `histogram_count`,
//! `histogram_sum`, `histogram_avg`, `histogram_stddev`/`stdvar`,
//! `histogram_quantile` and `histogram_fraction`, with Prometheus'
//! interpolation (linear in custom and zero buckets, logarithmic in
//! exponential ones).

use cairn_model::Histogram;
use cairn_model::histogram::Bucket;

use crate::math::kahan_inc;

/// An observation about the input a statistic reports as an info.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NanNote {
    /// The quantile fell among NaN observations: the result is NaN.
    QuantileNaN,
    /// NaN observations push the quantile up.
    QuantileSkewed,
    /// NaN observations are in no fraction.
    FractionExcludesNaN,
}

impl NanNote {
    /// Prometheus' text of the info, about the series named `metric`.
    pub fn text(self, metric: &str) -> String {
        let what = match self {
            Self::QuantileNaN => "input to histogram_quantile has NaN observations, result is NaN",
            Self::QuantileSkewed => "input to histogram_quantile has NaN observations, result is skewed higher",
            Self::FractionExcludesNaN => {
                "input to histogram_fraction has NaN observations, which are excluded from all fractions"
            }
        };
        if metric.is_empty() {
            format!("PromQL info: {what}")
        } else {
            format!("PromQL info: {what} for metric name \"{metric}\"")
        }
    }
}

/// Which element-wise statistic of a histogram.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum HistogramStat {
    Count,
    Sum,
    Avg,
    Stddev,
    Stdvar,
}

impl HistogramStat {
    pub fn of(&self, h: &Histogram) -> f64 {
        match self {
            Self::Count => h.count,
            Self::Sum => h.sum,
            Self::Avg => h.sum / h.count,
            Self::Stddev => variance(h).sqrt(),
            Self::Stdvar => variance(h),
        }
    }
}

/// The sum of the sums and of the counts of `hs`, Kahan-compensated as
/// Prometheus adds histograms up in aggregations (a sum field of 1e100
/// and one of -1e100 cancel without losing what else was added).
pub(crate) fn compensated_totals<'a>(hs: impl Iterator<Item = &'a Histogram>) -> (f64, f64) {
    let (mut sum, mut sc, mut count, mut cc) = (0.0, 0.0, 0.0, 0.0);
    for h in hs {
        (sum, sc) = kahan_inc(h.sum, sum, sc);
        (count, cc) = kahan_inc(h.count, count, cc);
    }
    let total = |v: f64, c: f64| if v.is_infinite() { v } else { v + c };
    (total(sum, sc), total(count, cc))
}

/// The mean of `hs`, whose sum is `total`: the sum divided by their number,
/// or, where the sum overflows, a mean taken incrementally, as Prometheus
/// falls back to.
pub(crate) fn mean<'a>(total: Histogram, hs: impl ExactSizeIterator<Item = &'a Histogram>) -> Histogram {
    let n = hs.len() as f64;
    let overflows = |h: &Histogram| {
        [h.count, h.sum, h.zero_count]
            .into_iter()
            .chain(h.positive.iter().chain(&h.negative).map(|b| b.1))
            .any(f64::is_infinite)
    };
    if !overflows(&total) {
        let mut total = total;
        total.scale(1.0 / n);
        return total;
    }
    let mut mean: Option<Histogram> = None;
    for (i, h) in hs.enumerate() {
        let k = (i + 1) as f64;
        let mut share = h.clone();
        share.scale(1.0 / k);
        match &mut mean {
            None => mean = Some(share),
            Some(m) => {
                m.scale((k - 1.0) / k);
                // The histograms were added up already: they combine.
                let _ = m.add(&share);
            }
        }
    }
    let mut mean = mean.unwrap_or_else(|| total.clone());
    // Fields whose (compensated) total did not overflow are divided as they
    // are: the incremental mean would lose what cancelled in them.
    if total.sum.is_finite() {
        mean.sum = total.sum / n;
    }
    if total.count.is_finite() {
        mean.count = total.count / n;
    }
    mean
}

/// The variance of the observations, each bucket's taken at its middle
/// (arithmetic for custom buckets and the zero bucket, geometric for
/// exponential ones).
fn variance(h: &Histogram) -> f64 {
    let mean = h.sum / h.count;
    let (mut v, mut c) = (0.0, 0.0);
    for b in h.buckets().iter().filter(|b| b.count != 0.0) {
        let mid = if h.uses_custom_buckets() {
            (b.upper + b.lower) / 2.0
        } else if b.lower <= 0.0 && b.upper >= 0.0 {
            0.0
        } else {
            let m = (b.upper * b.lower).sqrt();
            if b.upper < 0.0 { -m } else { m }
        };
        let d = mid - mean;
        (v, c) = kahan_inc(b.count * d * d, v, c);
    }
    (v + c) / h.count
}

/// The φ-quantile `q` of the observations.
pub(crate) fn quantile(q: f64, h: &Histogram) -> (f64, Option<NanNote>) {
    if q < 0.0 {
        return (f64::NEG_INFINITY, None);
    }
    if q > 1.0 {
        return (f64::INFINITY, None);
    }
    if h.count == 0.0 || q.is_nan() {
        return (f64::NAN, None);
    }
    let all = h.buckets();
    // From below when NaN observations may be there (they are in no
    // bucket) or the quantile is low, else from above.
    let forward = h.sum.is_nan() || q < 0.5;
    let order: Box<dyn Iterator<Item = &Bucket>> = if forward {
        Box::new(all.iter())
    } else {
        Box::new(all.iter().rev())
    };
    let mut rank = if forward { q * h.count } else { (1.0 - q) * h.count };
    let mut count = 0.0;
    let mut seen = 0;
    let mut bucket = Bucket {
        lower: 0.0,
        upper: 0.0,
        lower_inclusive: false,
        upper_inclusive: false,
        count: 0.0,
    };
    for b in order {
        seen += 1;
        bucket = *b;
        if b.count == 0.0 {
            continue;
        }
        count += b.count;
        if count >= rank {
            break;
        }
    }
    if !h.uses_custom_buckets() && bucket.lower < 0.0 && bucket.upper > 0.0 {
        if h.negative.is_empty() && !h.positive.is_empty() {
            bucket.lower = 0.0;
        } else if h.positive.is_empty() && !h.negative.is_empty() {
            bucket.upper = 0.0;
        }
    } else if h.uses_custom_buckets() {
        if bucket.lower == f64::NEG_INFINITY {
            if bucket.upper <= 0.0 {
                return (bucket.upper, None);
            }
            bucket.lower = 0.0;
        } else if bucket.upper == f64::INFINITY {
            return (bucket.lower, None);
        }
    }
    count = count.min(h.count);
    if count < rank {
        if h.sum.is_nan() {
            return (f64::NAN, Some(NanNote::QuantileNaN));
        }
        return (bucket.upper, None);
    }
    if forward {
        rank -= count - bucket.count;
    } else {
        rank = count - rank;
    }
    let mut note = None;
    if h.sum.is_nan() {
        let rest: f64 = all[seen..].iter().map(|b| b.count).sum();
        if count + rest < h.count {
            note = Some(NanNote::QuantileSkewed);
        }
    }
    let fraction = rank / bucket.count;
    let v = if h.uses_custom_buckets() || (bucket.lower <= 0.0 && bucket.upper >= 0.0) {
        bucket.lower + (bucket.upper - bucket.lower) * fraction
    } else {
        let (ll, lu) = (bucket.lower.abs().log2(), bucket.upper.abs().log2());
        if bucket.lower > 0.0 {
            (ll + (lu - ll) * fraction).exp2()
        } else {
            -(lu + (ll - lu) * (1.0 - fraction)).exp2()
        }
    };
    (v, note)
}

/// Where `v` lies in `b`, as the fraction of the bucket below it
/// (linearly, or on a logarithmic scale).
fn fraction_below(b: &Bucket, v: f64, linear: bool) -> f64 {
    if linear {
        return (v - b.lower) / (b.upper - b.lower);
    }
    let (ll, lu, lv) = (b.lower.abs().log2(), b.upper.abs().log2(), v.abs().log2());
    if v > 0.0 {
        (lv - ll) / (lu - ll)
    } else {
        1.0 - (lv - lu) / (ll - lu)
    }
}

/// The fraction of the observations between `lower` and `upper`.
pub(crate) fn fraction(lower: f64, upper: f64, h: &Histogram) -> (f64, Option<NanNote>) {
    if h.count == 0.0 || lower.is_nan() || upper.is_nan() {
        return (f64::NAN, None);
    }
    if lower >= upper {
        return (0.0, None);
    }
    let all = h.buckets();
    let (mut count, mut rank, mut lower_rank, mut upper_rank) = (0.0, 0.0, 0.0, 0.0);
    let (mut lower_set, mut upper_set) = (false, false);
    let mut seen = 0;
    for b in &all {
        seen += 1;
        let mut b = *b;
        count += b.count;
        let mut zero_bucket = false;
        if b.lower <= 0.0 && b.upper >= 0.0 {
            zero_bucket = true;
            if h.negative.is_empty() && !h.positive.is_empty() {
                b.lower = 0.0;
            } else if h.positive.is_empty() && !h.negative.is_empty() {
                b.upper = 0.0;
            }
        }
        let linear = h.uses_custom_buckets() || zero_bucket;
        let interpolate = |v: f64| {
            if linear && b.lower == f64::NEG_INFINITY {
                return b.count;
            }
            rank + b.count * fraction_below(&b, v, linear)
        };
        if !lower_set && b.lower >= lower {
            (lower_rank, lower_set) = (rank, true);
        }
        if !upper_set && b.lower >= upper {
            (upper_rank, upper_set) = (rank, true);
        }
        if lower_set && upper_set {
            break;
        }
        if !lower_set && b.lower < lower && b.upper > lower {
            (lower_rank, lower_set) = (interpolate(lower), true);
        }
        if !upper_set && b.lower < upper && b.upper > upper {
            (upper_rank, upper_set) = (interpolate(upper), true);
        }
        if lower_set && upper_set {
            break;
        }
        rank += b.count;
    }
    let mut note = None;
    if h.sum.is_nan() {
        count += all[seen..].iter().map(|b| b.count).sum::<f64>();
        if count < h.count {
            note = Some(NanNote::FractionExcludesNaN);
        }
    } else {
        count = h.count;
    }
    if !lower_set || lower_rank > count {
        lower_rank = count;
    }
    if !upper_set || upper_rank > count {
        upper_rank = count;
    }
    ((upper_rank - lower_rank) / h.count, note)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use cairn_model::histogram::CUSTOM_BUCKETS_SCHEMA;

    use super::*;

    fn custom(bounds: &[f64], counts: &[f64]) -> Histogram {
        Histogram {
            schema: CUSTOM_BUCKETS_SCHEMA,
            count: counts.iter().sum(),
            sum: 1.0,
            positive: counts.iter().enumerate().map(|(i, &c)| (i as i32, c)).collect(),
            custom_bounds: Some(Arc::from(bounds)),
            ..Histogram::default()
        }
    }

    fn exponential(counts: &[(i32, f64)], zero: f64) -> Histogram {
        Histogram {
            schema: 0,
            count: counts.iter().map(|c| c.1).sum::<f64>() + zero,
            sum: 1.0,
            zero_threshold: 0.001,
            zero_count: zero,
            positive: counts.to_vec(),
            ..Histogram::default()
        }
    }

    #[test]
    fn quantiles_interpolate_linearly_in_custom_buckets() {
        // Buckets (-Inf,1] (1,2] (2,4] (4,+Inf] with 0, 2, 2, 0.
        let h = custom(&[1.0, 2.0, 4.0], &[0.0, 2.0, 2.0, 0.0]);
        assert_eq!(quantile(0.5, &h).0, 2.0);
        assert_eq!(quantile(0.25, &h).0, 1.5);
        assert_eq!(quantile(0.75, &h).0, 3.0);
        assert_eq!(quantile(1.5, &h).0, f64::INFINITY);
        assert!(quantile(f64::NAN, &h).0.is_nan());
    }

    #[test]
    fn quantiles_interpolate_logarithmically_in_exponential_buckets() {
        // Schema 0: bucket 1 is (1,2], bucket 2 is (2,4].
        let h = exponential(&[(1, 1.0), (2, 1.0)], 0.0);
        assert!((quantile(0.5, &h).0 - 2.0).abs() < 1e-12);
        assert!((quantile(0.25, &h).0 - 2f64.sqrt()).abs() < 1e-12);
        // Only positive buckets: the zero bucket starts at 0.
        let z = exponential(&[(1, 2.0)], 2.0);
        assert!((quantile(0.25, &z).0 - 0.0005).abs() < 1e-12);
    }

    #[test]
    fn fractions_are_the_inverse_of_quantiles() {
        let h = custom(&[1.0, 2.0, 4.0], &[0.0, 2.0, 2.0, 0.0]);
        assert_eq!(fraction(f64::NEG_INFINITY, 3.0, &h).0, 0.75);
        assert_eq!(fraction(1.5, 2.0, &h).0, 0.25);
        assert_eq!(fraction(3.0, 1.0, &h).0, 0.0);
        let e = exponential(&[(1, 1.0), (2, 1.0)], 0.0);
        assert!((fraction(0.0, 2f64.sqrt(), &e).0 - 0.25).abs() < 1e-12);
    }

    #[test]
    fn nan_observations_are_noted() {
        let mut h = exponential(&[(1, 1.0), (2, 1.0)], 0.0);
        h.count = 4.0;
        h.sum = f64::NAN;
        let (q, note) = quantile(0.9, &h);
        assert!(q.is_nan());
        assert_eq!(note, Some(NanNote::QuantileNaN));
        assert_eq!(fraction(0.0, 10.0, &h).1, Some(NanNote::FractionExcludesNaN));
    }

    #[test]
    fn totals_are_compensated() {
        let h = |sum: f64| Histogram {
            sum,
            count: 1.0,
            ..Histogram::default()
        };
        let hs = [h(3.1), h(1e100), h(-1e100), h(1.3)];
        let (sum, count) = compensated_totals(hs.iter());
        assert!((sum - 4.4).abs() < 1e-12);
        assert_eq!(count, 4.0);
    }

    #[test]
    fn means_of_huge_histograms_do_not_overflow() {
        let h = |count: f64| Histogram {
            count,
            sum: 1.0,
            ..Histogram::default()
        };
        let hs = [h(1.5e308), h(1.5e308), h(0.0)];
        let mut total = hs[0].clone();
        total.add(&hs[1]).unwrap();
        total.add(&hs[2]).unwrap();
        let m = mean(total, hs.iter());
        assert!((m.count - 1e308).abs() < 1e296);
        assert!((m.sum - 1.0).abs() < 1e-12);
    }

    #[test]
    fn stats_of_one_histogram() {
        let h = custom(&[1.0, 3.0], &[0.0, 2.0, 0.0]);
        let h = Histogram { sum: 4.0, ..h };
        assert_eq!(HistogramStat::Count.of(&h), 2.0);
        assert_eq!(HistogramStat::Avg.of(&h), 2.0);
        // Both observations at the bucket's middle, 2: no spread.
        assert_eq!(HistogramStat::Stdvar.of(&h), 0.0);
    }
}
