//! Float arithmetic as Prometheus (and Go) does it.

pub(crate) fn kahan_inc(inc: f64, sum: f64, c: f64) -> (f64, f64) {
    let t = sum + inc;
    let c = if t.is_infinite() {
        0.0
    } else if sum.abs() >= inc.abs() {
        c + ((sum - t) + inc)
    } else {
        c + ((inc - t) + sum)
    };
    (t, c)
}

/// The largest and smallest of a parameter's values per step as
/// Prometheus' `fParams` finds them (Go's `math.Max`/`math.Min` from
/// ∓MaxFloat64).
pub(crate) fn go_extremes(p: &[f64]) -> (f64, f64) {
    p.iter()
        .fold((-f64::MAX, f64::MAX), |(hi, lo), &v| (go_max(hi, v), go_min(lo, v)))
}

/// Go's `math.Max`/`math.Min`: +Inf (for Max) or -Inf (for Min) wins over
/// everything, then NaN over the rest.
pub(crate) fn go_max(a: f64, b: f64) -> f64 {
    if a == f64::INFINITY || b == f64::INFINITY {
        f64::INFINITY
    } else if a.is_nan() || b.is_nan() {
        f64::NAN
    } else if a == 0.0 && b == 0.0 {
        if a.is_sign_negative() { b } else { a }
    } else if a > b {
        a
    } else {
        b
    }
}

pub(crate) fn go_min(a: f64, b: f64) -> f64 {
    if a == f64::NEG_INFINITY || b == f64::NEG_INFINITY {
        f64::NEG_INFINITY
    } else if a.is_nan() || b.is_nan() {
        f64::NAN
    } else if a == 0.0 && b == 0.0 {
        if a.is_sign_negative() { a } else { b }
    } else if a < b {
        a
    } else {
        b
    }
}

/// Prometheus' quantile over values (sorted in place, NaN first).
pub(crate) fn quantile(q: f64, values: &mut [f64]) -> f64 {
    if values.is_empty() || q.is_nan() {
        return f64::NAN;
    }
    if q < 0.0 {
        return f64::NEG_INFINITY;
    }
    if q > 1.0 {
        return f64::INFINITY;
    }
    values.sort_by(|a, b| match (a.is_nan(), b.is_nan()) {
        (true, true) => std::cmp::Ordering::Equal,
        (true, false) => std::cmp::Ordering::Less,
        (false, true) => std::cmp::Ordering::Greater,
        _ => a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal),
    });
    let n = values.len() as f64;
    let rank = q * (n - 1.0);
    let lower = rank.floor().max(0.0);
    let upper = (lower + 1.0).min(n - 1.0);
    let weight = rank - rank.floor();
    values[lower as usize] * (1.0 - weight) + values[upper as usize] * weight
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_max_and_min_let_the_infinity_win_over_nan() {
        let (inf, nan) = (f64::INFINITY, f64::NAN);
        assert_eq!(go_max(nan, inf), inf);
        assert_eq!(go_max(inf, nan), inf);
        assert!(go_max(-inf, nan).is_nan());
        assert!(go_max(nan, 1.0).is_nan());
        assert_eq!(go_min(nan, -inf), -inf);
        assert_eq!(go_min(-inf, nan), -inf);
        assert!(go_min(inf, nan).is_nan());
        assert_eq!(go_max(1.0, 2.0), 2.0);
        assert_eq!(go_min(1.0, 2.0), 1.0);
        assert!(go_max(-0.0, 0.0).is_sign_positive());
        assert!(go_min(-0.0, 0.0).is_sign_negative());
    }
}
