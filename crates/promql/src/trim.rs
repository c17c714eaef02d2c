//! The histogram trim operators `h </ x` (keep the observations below `x`)
//! and `h >/ x` (keep those above), as Prometheus' `TrimBuckets` computes
//! them: a bucket holding `x` keeps the share of its count that
//! `histogram_fraction` would estimate on its side of `x`, and the sum is
//! re-estimated from the kept counts at the middle of what each bucket
//! keeps.

use cairn_model::Histogram;

/// `h </ x` when `upper`, else `h >/ x`. A histogram nothing is cut from
/// is returned as it was, its sum and count untouched.
pub(crate) fn trim(h: &Histogram, x: f64, upper: bool) -> Histogram {
    let linear = h.uses_custom_buckets();
    let mut out = h.clone();
    let (mut count, mut sum, mut trimmed) = (0.0, 0.0, false);
    let (mut has_positive, mut has_negative) = (false, false);
    for (positive, side) in [(true, &mut out.positive), (false, &mut out.negative)] {
        for b in side.iter_mut() {
            if b.1 == 0.0 {
                continue;
            }
            if positive {
                has_positive = true;
            } else {
                has_negative = true;
            }
            let (lower, upper_bound) = if positive {
                (h.upper_bound(b.0 - 1), h.upper_bound(b.0))
            } else {
                (-h.upper_bound(b.0), -h.upper_bound(b.0 - 1))
            };
            let bucket = Bucket {
                lower,
                upper: upper_bound,
                count: b.1,
            };
            let (whole, part) = if upper {
                (upper_bound <= x, lower < x)
            } else {
                (lower >= x, upper_bound > x)
            };
            if whole {
                count += b.1;
                sum += midpoint(lower, upper_bound, positive, linear) * b.1;
            } else if part {
                let (keep, mid) = bucket_trim(bucket, x, upper, positive, linear);
                count += keep;
                sum += mid * keep;
                if b.1 != keep {
                    b.1 = keep;
                    trimmed = true;
                }
            } else {
                b.1 = 0.0;
                trimmed = true;
            }
        }
    }
    if h.zero_count > 0.0 {
        let zero = Bucket {
            lower: -h.zero_threshold,
            upper: h.zero_threshold,
            count: h.zero_count,
        };
        let (keep, mid) = zero_bucket_trim(zero, x, has_negative, has_positive, upper);
        if keep != h.zero_count {
            out.zero_count = keep;
            trimmed = true;
        }
        sum += mid * keep;
        count += keep;
    }
    if trimmed {
        out.count = count;
        out.sum = sum;
        out.positive.retain(|b| b.1 != 0.0);
        out.negative.retain(|b| b.1 != 0.0);
    }
    out
}

#[derive(Debug, Clone, Copy)]
struct Bucket {
    lower: f64,
    upper: f64,
    count: f64,
}

/// `(kept count, middle of the kept part)` of a bucket holding `x`.
fn bucket_trim(b: Bucket, x: f64, upper: bool, positive: bool, linear: bool) -> (f64, f64) {
    if b.lower == f64::NEG_INFINITY || b.upper == f64::INFINITY {
        return infinite_bucket_trim(b, x, upper);
    }
    let below = if x <= b.lower {
        0.0
    } else if x >= b.upper {
        b.count
    } else {
        b.count * fraction_below(b, x, linear)
    };
    if upper {
        (below, midpoint(b.lower, x, positive, linear))
    } else {
        (b.count - below, midpoint(x, b.upper, positive, linear))
    }
}

/// The share of a bucket's width at or below `x` (strictly inside it):
/// linear for custom buckets, else on a logarithmic scale, mirrored for
/// negative buckets.
fn fraction_below(b: Bucket, x: f64, linear: bool) -> f64 {
    if linear {
        return (x - b.lower) / (b.upper - b.lower);
    }
    let (lo, hi, v) = (b.lower.abs().log2(), b.upper.abs().log2(), x.abs().log2());
    if x > 0.0 {
        (v - lo) / (hi - lo)
    } else {
        1.0 - (v - hi) / (lo - hi)
    }
}

/// A bucket reaching to an infinity: its observations' spread is unknown,
/// so it is kept or dropped whole, except that a custom first bucket with a
/// positive finite upper bound is taken to start at zero.
fn infinite_bucket_trim(b: Bucket, x: f64, upper: bool) -> (f64, f64) {
    let finite_or_zero = |v: f64| if v.is_infinite() { 0.0 } else { v };
    if b.lower == f64::NEG_INFINITY {
        if upper {
            if x >= b.upper {
                return (b.count, 0.0);
            }
            if x > 0.0 && b.upper > 0.0 && b.upper != f64::INFINITY {
                return (b.count * x / b.upper, x / 2.0);
            }
            if b.upper <= 0.0 {
                return (b.count, x);
            }
            return (0.0, finite_or_zero(b.upper));
        }
        if x <= b.lower {
            return (b.count, 0.0);
        }
        if x >= 0.0 && b.upper > x && b.upper != f64::INFINITY {
            return (b.count * (1.0 - x / b.upper), (x + b.upper) / 2.0);
        }
        return (0.0, finite_or_zero(b.upper));
    }
    // The upper bound is +Inf.
    if upper {
        return (0.0, finite_or_zero(b.lower));
    }
    if x >= b.lower {
        return (b.count, x);
    }
    (0.0, finite_or_zero(b.lower))
}

/// The zero bucket, trimmed linearly; it is taken to hold no observations
/// on a side where no other bucket does.
fn zero_bucket_trim(z: Bucket, x: f64, has_negative: bool, has_positive: bool, upper: bool) -> (f64, f64) {
    let mut lower = z.lower;
    let mut top = z.upper;
    if has_negative && !has_positive {
        top = 0.0;
    }
    if has_positive && !has_negative {
        lower = 0.0;
    }
    let (fraction, mid) = if upper {
        if x <= lower {
            return (0.0, 0.0);
        }
        if x >= top {
            return (z.count, (lower + top) / 2.0);
        }
        ((x - lower) / (top - lower), (lower + x) / 2.0)
    } else {
        if x <= lower {
            return (z.count, (lower + top) / 2.0);
        }
        if x >= top {
            return (0.0, 0.0);
        }
        ((top - x) / (top - lower), (x + top) / 2.0)
    };
    (z.count * fraction, mid)
}

/// Where a bucket's kept observations are taken to be: the arithmetic mean
/// of its bounds for custom buckets, the geometric one for exponential
/// buckets; a bound at an infinity gives way to the finite one.
fn midpoint(lower: f64, upper: f64, positive: bool, linear: bool) -> f64 {
    if lower.is_infinite() {
        if upper.is_infinite() {
            return 0.0;
        }
        if upper > 0.0 {
            return upper / 2.0;
        }
        return upper;
    }
    if upper.is_infinite() {
        return lower;
    }
    if linear {
        return (lower + upper) / 2.0;
    }
    let geo = (lower * upper).abs().sqrt();
    if positive { geo } else { -geo }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use cairn_model::histogram::CUSTOM_BUCKETS_SCHEMA;

    use super::*;

    /// Custom buckets (-Inf, 5], (5, 10], (10, +Inf] holding 1, 10, 100.
    fn custom() -> Histogram {
        Histogram {
            schema: CUSTOM_BUCKETS_SCHEMA,
            count: 111.0,
            sum: 1000.0,
            positive: vec![(0, 1.0), (1, 10.0), (2, 100.0)],
            custom_bounds: Some(Arc::from(&[5.0, 10.0][..])),
            ..Histogram::default()
        }
    }

    /// Schema 0: buckets (0.5, 1], (1, 2], (2, 4] holding 2, 4, 8, the
    /// zero bucket [-0.1, 0.1] 1, and (-2, -1] holding 3.
    fn exponential() -> Histogram {
        Histogram {
            schema: 0,
            count: 18.0,
            sum: 20.0,
            zero_threshold: 0.1,
            zero_count: 1.0,
            positive: vec![(0, 2.0), (1, 4.0), (2, 8.0)],
            negative: vec![(1, 3.0)],
            ..Histogram::default()
        }
    }

    #[test]
    fn a_custom_bucket_holding_x_is_split_linearly() {
        let h = trim(&custom(), 7.5, true);
        // The first bucket is taken to start at zero: its middle is 2.5.
        assert_eq!(h.positive, vec![(0, 1.0), (1, 5.0)]);
        assert_eq!(h.count, 6.0);
        assert_eq!(h.sum, 2.5 + 5.0 * 6.25);
        let h = trim(&custom(), 7.5, false);
        // The +Inf bucket is kept whole and placed at its lower bound.
        assert_eq!(h.positive, vec![(1, 5.0), (2, 100.0)]);
        assert_eq!(h.count, 105.0);
        assert_eq!(h.sum, 5.0 * 8.75 + 100.0 * 10.0);
    }

    #[test]
    fn x_inside_the_infinite_bucket_drops_it_below_and_keeps_it_above() {
        let h = trim(&custom(), 50.0, true);
        assert_eq!(h.positive, vec![(0, 1.0), (1, 10.0)]);
        assert_eq!(h.count, 11.0);
        let h = trim(&custom(), 50.0, false);
        assert_eq!(h.positive, vec![(2, 100.0)]);
        assert_eq!((h.count, h.sum), (100.0, 5000.0));
    }

    #[test]
    fn nothing_cut_leaves_the_histogram_as_it_was() {
        for (x, upper) in [(f64::INFINITY, true), (f64::NEG_INFINITY, false)] {
            let h = trim(&exponential(), x, upper);
            assert_eq!(h, exponential(), "{x}");
        }
    }

    #[test]
    fn an_exponential_bucket_is_split_on_a_log_scale() {
        // x = 2^1.5 lies half way through (2, 4] on a log scale.
        let x = 2f64.powf(1.5);
        let h = trim(&exponential(), x, true);
        assert_eq!(h.positive, vec![(0, 2.0), (1, 4.0), (2, 4.0)]);
        assert_eq!(h.negative, vec![(1, 3.0)]);
        assert_eq!(h.zero_count, 1.0);
        assert!((h.count - 14.0).abs() < 1e-12);
        let expected_sum = 2.0 * 0.5f64.sqrt() + 4.0 * 2f64.sqrt() + 4.0 * (2.0 * x).sqrt() - 3.0 * 2f64.sqrt();
        assert!((h.sum - expected_sum).abs() < 1e-12, "{}", h.sum);
    }

    #[test]
    fn the_zero_bucket_is_split_linearly() {
        let h = trim(&exponential(), 0.0, false);
        assert!(h.negative.is_empty());
        assert_eq!(h.zero_count, 0.5);
        assert_eq!(h.count, 14.5);
        let h = trim(&exponential(), 0.0, true);
        assert!(h.positive.is_empty());
        assert_eq!(h.zero_count, 0.5);
        assert_eq!(h.count, 3.5);
    }

    #[test]
    fn an_empty_histogram_stays_empty() {
        let empty = Histogram::default();
        for x in [f64::NEG_INFINITY, -5.0, 0.0, 5.0, f64::INFINITY] {
            assert_eq!(trim(&empty, x, true), empty);
            assert_eq!(trim(&empty, x, false), empty);
        }
    }
}
