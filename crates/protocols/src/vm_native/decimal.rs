//! VictoriaMetrics' decimal values: a block's floats are stored as integer
//! mantissas sharing one decimal exponent, `v = m * 10^e`, with three
//! reserved mantissas for `+Inf`, `-Inf` and the staleness marker.
//!
//! Decimal to float follows VictoriaMetrics 1.150 step for step (Go's
//! `math.Pow10`), so floats read from its blocks are the floats it answers
//! with. Float to decimal starts from each value's shortest decimal and
//! checks that the block's common exponent gives every value back exactly;
//! where none does, VictoriaMetrics' own conversion (about twelve
//! significant digits) is the fallback. Other NaNs have no decimal and are
//! left out by the caller.

use cairn_model::go_float::pow10;
use cairn_model::{is_stale_nan, stale_nan};

const INF_POS: i64 = i64::MAX;
const INF_NEG: i64 = i64::MIN;
const STALE_NAN: i64 = i64::MAX - 1;
const MANTISSA_MAX: i64 = i64::MAX - 2;
const MANTISSA_MIN: i64 = i64::MIN + 1;
/// Relative precision of the slow conversion.
const CONVERSION_PRECISION: f64 = 1e12;

fn is_special(m: i64) -> bool {
    !(MANTISSA_MIN..=MANTISSA_MAX).contains(&m)
}

/// The float of mantissa `m` at exponent `e`.
pub(crate) fn to_float(m: i64, e: i16) -> f64 {
    if is_special(m) {
        return match m {
            INF_POS => f64::INFINITY,
            INF_NEG => f64::NEG_INFINITY,
            _ => stale_nan(),
        };
    }
    let f = m as f64;
    if e < 0 {
        f / pow10(-i32::from(e))
    } else {
        f * pow10(i32::from(e))
    }
}

/// Appends the floats of a block's mantissas.
pub(crate) fn append_floats(dst: &mut Vec<f64>, mantissas: &[i64], e: i16) {
    dst.extend(mantissas.iter().map(|&m| to_float(m, e)));
}

/// Appends mantissas that give back exactly `values` (no NaN other than the
/// staleness marker) at one common exponent, and returns that exponent; or
/// appends nothing and returns `None` when no common exponent does. Each
/// value starts from its shortest decimal, so floats read from
/// VictoriaMetrics go back to it unchanged.
pub(crate) fn append_exact_decimals(dst: &mut Vec<i64>, values: &[f64]) -> Option<i16> {
    let parts: Vec<(i64, i16)> = values
        .iter()
        .map(|&v| shortest(v).unwrap_or_else(|| from_float(v)))
        .collect();
    let start = dst.len();
    let scale = append_at_common_exponent(dst, &parts);
    let exact = values
        .iter()
        .zip(dst.get(start..).unwrap_or_default())
        .all(|(&v, &m)| same_value(to_float(m, scale), v));
    if !exact {
        dst.truncate(start);
    }
    exact.then_some(scale)
}

/// Appends the mantissas VictoriaMetrics would store for `values` (no NaN
/// other than the staleness marker) and returns their exponent: about
/// twelve significant digits each.
pub(crate) fn append_decimals(dst: &mut Vec<i64>, values: &[f64]) -> i16 {
    if values.iter().all(|&v| v == 1.0) {
        dst.extend(values.iter().map(|_| 1));
        return 0;
    }
    let parts: Vec<(i64, i16)> = values.iter().map(|&v| from_float(v)).collect();
    append_at_common_exponent(dst, &parts)
}

/// Brings every mantissa to the smallest exponent among them; mantissas
/// that would overflow there lose low digits instead (raising the common
/// exponent), as VictoriaMetrics' do.
fn append_at_common_exponent(dst: &mut Vec<i64>, parts: &[(i64, i16)]) -> i16 {
    if parts.iter().all(|&(m, _)| m == 0) {
        dst.extend(parts.iter().map(|_| 0));
        return 0;
    }
    let mut min_exp = i16::MAX;
    for &(m, e) in parts {
        if e < min_exp && !is_special(m) {
            min_exp = e;
        }
    }
    let mut down_exp = 0i16;
    for &(m, e) in parts {
        let up_exp = e.wrapping_sub(min_exp);
        let excess = up_exp.wrapping_sub(max_up_exponent(m));
        if excess > down_exp {
            down_exp = excess;
        }
    }
    let min_exp = min_exp.wrapping_add(down_exp);
    dst.extend(parts.iter().map(|&(m, e)| {
        if is_special(m) {
            return m;
        }
        let mut m = m;
        let mut adjust = e.wrapping_sub(min_exp);
        while adjust > 0 {
            m = m.wrapping_mul(10);
            adjust -= 1;
        }
        while adjust < 0 {
            m /= 10;
            adjust += 1;
        }
        m
    }));
    min_exp
}

/// A float's shortest decimal, when it fits a mantissa and an exponent.
fn shortest(v: f64) -> Option<(i64, i16)> {
    if v == 0.0 || !v.is_finite() {
        return None;
    }
    let (negative, digits, exp) = cairn_model::go_float::shortest_decimal(v)?;
    let m = i64::try_from(digits).ok().filter(|&m| m <= MANTISSA_MAX)?;
    Some((if negative { -m } else { m }, i16::try_from(exp).ok()?))
}

/// Equal as samples: the same number (zeros of either sign alike, as the
/// format has one zero) or both staleness markers.
fn same_value(a: f64, b: f64) -> bool {
    a == b || (is_stale_nan(a) && is_stale_nan(b))
}

/// How many decimal digits `m` can be shifted left without overflow.
fn max_up_exponent(m: i64) -> i16 {
    if m == 0 || is_special(m) {
        return 1024;
    }
    let m = m.unsigned_abs();
    let mut exp = 0;
    while exp < 18 && m <= i64::MAX as u64 / 10u64.pow(exp + 1) {
        exp += 1;
    }
    exp as i16
}

/// One float's mantissa and exponent.
fn from_float(f: f64) -> (i64, i16) {
    if f == 0.0 {
        return (0, 0);
    }
    if is_stale_nan(f) {
        return (STALE_NAN, 0);
    }
    if f == f64::INFINITY {
        return (INF_POS, 0);
    }
    if f == f64::NEG_INFINITY {
        return (INF_NEG, 0);
    }
    if f > 0.0 {
        let (m, e) = positive_to_decimal(f);
        (m.min(MANTISSA_MAX), e)
    } else {
        let (m, e) = positive_to_decimal(-f);
        ((-m).max(MANTISSA_MIN), e)
    }
}

fn positive_to_decimal(f: f64) -> (i64, i16) {
    // Go's conversion of a float at or past 2^64 to an integer is undefined;
    // such floats take the slow path there too, as no integer equals them.
    if f >= 18_446_744_073_709_551_616.0 {
        return positive_to_decimal_slow(f);
    }
    let u = f as u64;
    if u as f64 != f {
        return positive_to_decimal_slow(f);
    }
    if u < 1 << 55 && !u.is_multiple_of(10) {
        return (u as i64, 0);
    }
    integer_to_decimal(u)
}

/// An integral float: its digits less the trailing zeros, at most 2^55.
fn integer_to_decimal(mut u: u64) -> (i64, i16) {
    let mut scale = 0i16;
    while u >= 1 << 55 {
        u /= 10;
        scale += 1;
    }
    if !u.is_multiple_of(10) {
        return (u as i64, scale);
    }
    u /= 10;
    scale += 1;
    while u != 0 && u.is_multiple_of(10) {
        u /= 10;
        scale += 1;
    }
    (u as i64, scale)
}

fn positive_to_decimal_slow(mut f: f64) -> (i64, i16) {
    let mut scale = 0i16;
    let mut precision = CONVERSION_PRECISION;
    if !(1e-6..=1e6).contains(&f) {
        if f > 1e6 {
            precision = 1e15;
        }
        let exp = frexp_exponent(f).clamp(-1022, 1023);
        scale = (f64::from(exp) * (std::f64::consts::LN_2 / std::f64::consts::LN_10)) as i16;
        f *= pow10(-i32::from(scale));
    }
    while f < precision {
        let whole = f.trunc();
        let frac = f - whole;
        if frac * precision < whole {
            f = whole;
            break;
        }
        if (1.0 - frac) * precision < whole {
            f = whole + 1.0;
            break;
        }
        f *= 100.0;
        scale -= 2;
    }
    let u = f as u64;
    if !u.is_multiple_of(10) {
        return (u as i64, scale);
    }
    ((u / 10) as i64, scale + 1)
}

/// The binary exponent `e` of `f = frac * 2^e` with `0.5 <= frac < 1`, as Go's
/// `math.Frexp` gives it (subnormals included).
fn frexp_exponent(f: f64) -> i32 {
    let bits = f.to_bits();
    let biased = ((bits >> 52) & 0x7ff) as i32;
    if biased == 0 {
        // Subnormal: normalise first.
        return frexp_exponent(f * (1u64 << 52) as f64) - 52;
    }
    biased - 1022
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn exact_round_trip(values: &[f64]) -> Option<Vec<f64>> {
        let mut m = Vec::new();
        let e = append_exact_decimals(&mut m, values)?;
        let mut out = Vec::new();
        append_floats(&mut out, &m, e);
        Some(out)
    }

    fn vm_round_trip(values: &[f64]) -> Vec<f64> {
        let mut m = Vec::new();
        let e = append_decimals(&mut m, values);
        let mut out = Vec::new();
        append_floats(&mut out, &m, e);
        out
    }

    #[test]
    fn victoria_metrics_decimals_of_typical_values() {
        assert_eq!(from_float(1.0), (1, 0));
        assert_eq!(from_float(1500.0), (15, 2));
        assert_eq!(from_float(0.25), (25, -2));
        assert_eq!(from_float(-0.25), (-25, -2));
        assert_eq!(from_float(123_456_789.0), (123_456_789, 0));
        // Twelve significant digits: the float error of a sum goes.
        assert_eq!(from_float(0.1 + 0.2), (3, -1));
        let mut m = Vec::new();
        assert_eq!(append_decimals(&mut m, &[1.5, 20.0, 0.125]), -3);
        assert_eq!(m, [1500, 20000, 125]);
    }

    #[test]
    fn exact_decimals_keep_every_digit() {
        let mut m = Vec::new();
        assert_eq!(append_exact_decimals(&mut m, &[1.5, 20.0, 0.125]), Some(-3));
        assert_eq!(m, [1500, 20000, 125]);
        assert_eq!(exact_round_trip(&[0.1 + 0.2]), Some(vec![0.1 + 0.2]));
        assert_eq!(exact_round_trip(&[-61190.9648634]), Some(vec![-61190.9648634]));
        // Too far apart for one exponent: no block holds both exactly.
        assert_eq!(exact_round_trip(&[1e20, 0.1 + 0.2]), None);
        assert!(m.len() == 3, "a refused block appends nothing");
    }

    #[test]
    fn specials_keep_their_meaning() {
        let values = [f64::INFINITY, 2.5, f64::NEG_INFINITY, stale_nan(), 0.0];
        for back in [exact_round_trip(&values).unwrap(), vm_round_trip(&values)] {
            assert_eq!(back[..3], values[..3]);
            assert!(is_stale_nan(back[3]));
            assert_eq!(back[4], 0.0);
        }
        // A block of specials only.
        let back = exact_round_trip(&[stale_nan(), f64::INFINITY]).unwrap();
        assert!(is_stale_nan(back[0]));
        assert_eq!(back[1], f64::INFINITY);
    }

    #[test]
    fn extremes_lose_digits_rather_than_overflow() {
        let values = [1e300, 1e-300, 5e-324, f64::MAX, -f64::MAX, 123.456];
        let back = vm_round_trip(&values);
        assert_eq!(back.len(), values.len());
        for (v, b) in values.iter().zip(&back) {
            assert!(b.is_finite(), "{v} became {b}");
            assert!(*b == 0.0 || b.signum() == v.signum(), "{v} became {b}");
        }
    }

    #[test]
    fn max_up_exponent_is_the_overflow_bound() {
        assert_eq!(max_up_exponent(1), 18);
        assert_eq!(max_up_exponent(9), 18);
        assert_eq!(max_up_exponent(10), 17);
        assert_eq!(max_up_exponent(i64::MAX / 10), 1);
        assert_eq!(max_up_exponent(i64::MAX / 10 + 1), 0);
        assert_eq!(max_up_exponent(MANTISSA_MIN), 0);
        assert_eq!(max_up_exponent(0), 1024);
    }

    #[test]
    fn frexp_matches_go() {
        assert_eq!(frexp_exponent(1.0), 1);
        assert_eq!(frexp_exponent(0.5), 0);
        assert_eq!(frexp_exponent(3.0), 2);
        assert_eq!(frexp_exponent(f64::MAX), 1024);
        assert_eq!(frexp_exponent(f64::MIN_POSITIVE), -1021);
        assert_eq!(frexp_exponent(5e-324), -1073);
    }

    proptest! {
        /// Floats VictoriaMetrics answers with (its decimals converted back)
        /// go back as exactly those floats, a block of them at a time.
        #[test]
        fn victoria_metrics_floats_go_back_exactly(
            mantissas in proptest::collection::vec(-(1i64 << 53)..(1i64 << 53), 1..64),
            e in -20i16..12,
        ) {
            let mut floats = Vec::new();
            append_floats(&mut floats, &mantissas, e);
            prop_assert_eq!(exact_round_trip(&floats), Some(floats));
        }

        /// Whatever exact encoding is claimed is exact.
        #[test]
        fn exact_means_exact(values in proptest::collection::vec(proptest::num::f64::NORMAL | proptest::num::f64::ZERO, 1..8)) {
            if let Some(back) = exact_round_trip(&values) {
                for (v, b) in values.iter().zip(&back) {
                    prop_assert!(v == b, "{} became {}", v, b);
                }
            }
        }

        /// VictoriaMetrics' own conversion keeps twelve significant digits
        /// (values too small for its exponents become zero).
        #[test]
        fn victoria_metrics_keeps_twelve_digits(v in proptest::num::f64::NORMAL) {
            prop_assume!((1e-280..1e280).contains(&v.abs()));
            let back = vm_round_trip(&[v])[0];
            prop_assert!(((back - v) / v).abs() < 1e-11, "{} became {}", v, back);
        }
    }
}
