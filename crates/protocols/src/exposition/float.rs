//! Sample values and OpenMetrics timestamps as Prometheus reads them: Go's
//! `strconv.ParseFloat` without the hexadecimal and underscore forms Go
//! added in 1.13.

/// Prometheus' ordinary NaN (`value.NormalNaN`): what a text `NaN` becomes,
/// so it can never be taken for the staleness marker.
pub(crate) const NORMAL_NAN_BITS: u64 = 0x7ff8_0000_0000_0001;

/// Reads `s` as Go's `ParseFloat(s, 64)` does for the decimal forms,
/// failing with Go-like wording.
pub(crate) fn parse_go_float(s: &str) -> Result<f64, String> {
    if let Some(v) = exact_decimal(s) {
        return Ok(v);
    }
    if s.contains(['p', 'P', '_']) {
        return Err("unsupported character in float".to_string());
    }
    if let Some(v) = special(s) {
        return Ok(v);
    }
    let b = s.as_bytes();
    // Rust accepts the specials in forms Go refuses (`+nan`); they were
    // handled above, so anything left must start like a number.
    let digits = match b.first() {
        Some(b'+' | b'-') => b.get(1..).unwrap_or_default(),
        _ => b,
    };
    if !matches!(digits.first(), Some(b'0'..=b'9' | b'.')) {
        return Err(format!("strconv.ParseFloat: parsing {s:?}: invalid syntax"));
    }
    match s.parse::<f64>() {
        Ok(v) if v.is_infinite() => Err(format!("strconv.ParseFloat: parsing {s:?}: value out of range")),
        Ok(v) => Ok(v),
        Err(_) => Err(format!("strconv.ParseFloat: parsing {s:?}: invalid syntax")),
    }
}

/// The most significant digits [`exact_decimal`] takes: any more may not
/// fit a `u64`.
const MAX_EXACT_DIGITS: usize = 19;

/// Powers of ten an `f64` holds exactly.
const EXACT_POWERS_OF_TEN: [f64; 23] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20,
    1e21, 1e22,
];

/// A plain decimal (`-12`, `0.25`, `3.365296e+06`, the forms Go's clients
/// write) whose digits fit an `f64` exactly and whose power of ten is
/// exact too: their product or quotient is then one correctly rounded
/// operation, the value `ParseFloat` gives, without the general parser.
/// `None` for anything else, which the general parser reads.
fn exact_decimal(s: &str) -> Option<f64> {
    let b = s.as_bytes();
    let (negative, b) = match b.first()? {
        b'-' => (true, b.get(1..)?),
        b'+' => (false, b.get(1..)?),
        _ => (false, b),
    };
    let mut mantissa: u64 = 0;
    let mut digits = 0;
    let mut scale: i32 = 0;
    let mut seen_point = false;
    let mut i = 0;
    while let Some(&c) = b.get(i) {
        match c {
            b'0'..=b'9' => {
                if digits == MAX_EXACT_DIGITS {
                    return None;
                }
                mantissa = mantissa * 10 + u64::from(c - b'0');
                // Leading zeros are not significant.
                digits += usize::from(mantissa != 0);
                scale -= i32::from(seen_point);
            }
            b'.' if !seen_point => seen_point = true,
            _ => break,
        }
        i += 1;
    }
    // At least one digit, not only a point.
    if i == usize::from(seen_point) {
        return None;
    }
    if let Some(&(b'e' | b'E')) = b.get(i) {
        let (sign, rest) = match b.get(i + 1..)? {
            [b'-', rest @ ..] => (-1, rest),
            [b'+', rest @ ..] => (1, rest),
            rest => (1, rest),
        };
        if rest.is_empty() || rest.len() > 3 || !rest.iter().all(u8::is_ascii_digit) {
            return None;
        }
        let exponent = rest.iter().fold(0i32, |n, &c| n * 10 + i32::from(c - b'0'));
        scale += sign * exponent;
    } else if i != b.len() {
        return None;
    }
    if mantissa > 1 << 53 {
        return None;
    }
    let power = *EXACT_POWERS_OF_TEN.get(scale.unsigned_abs() as usize)?;
    let magnitude = if scale < 0 {
        mantissa as f64 / power
    } else {
        mantissa as f64 * power
    };
    Some(if negative { -magnitude } else { magnitude })
}

/// Go's special spellings: an optionally signed `inf` or `infinity`, or an
/// unsigned `nan`, in any case.
fn special(s: &str) -> Option<f64> {
    let (sign, rest) = match s.as_bytes().first()? {
        b'+' => (1.0, s.get(1..)?),
        b'-' => (-1.0, s.get(1..)?),
        _ => (1.0, s),
    };
    if rest.eq_ignore_ascii_case("inf") || rest.eq_ignore_ascii_case("infinity") {
        return Some(sign * f64::INFINITY);
    }
    if rest.len() == s.len() && s.eq_ignore_ascii_case("nan") {
        return Some(f64::NAN);
    }
    None
}

/// A parsed sample value: a NaN becomes Prometheus' ordinary NaN.
pub(crate) fn normalize_nan(v: f64) -> f64 {
    if v.is_nan() { f64::from_bits(NORMAL_NAN_BITS) } else { v }
}

/// Float seconds to milliseconds as Go's `int64(ts * 1000)` does:
/// truncated toward zero, saturating where Go's conversion is undefined.
pub(crate) fn seconds_to_ms(seconds: f64) -> i64 {
    (seconds * 1000.0) as i64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_spellings_are_accepted() {
        for (s, v) in [
            ("1", 1.0),
            ("-1.5e3", -1500.0),
            (".5", 0.5),
            ("5.", 5.0),
            ("+2", 2.0),
            ("1E-2", 0.01),
            ("Inf", f64::INFINITY),
            ("+inf", f64::INFINITY),
            ("-Infinity", f64::NEG_INFINITY),
            ("INFINITY", f64::INFINITY),
            ("1e-400", 0.0),
        ] {
            assert_eq!(parse_go_float(s), Ok(v), "{s}");
        }
        for s in ["NaN", "nan", "NAN"] {
            assert!(parse_go_float(s).unwrap().is_nan());
        }
    }

    #[test]
    fn other_spellings_are_refused() {
        for s in [
            "", "+", "-", "+nan", "-NaN", "0x1p3", "0x10", "1_000", "1e400", "-1e309", "abc", "1,5", "1e", "infinit",
            "++1", " 1",
        ] {
            assert!(parse_go_float(s).is_err(), "{s}");
        }
        assert_eq!(parse_go_float("1_0"), Err("unsupported character in float".to_string()));
    }

    proptest::proptest! {
        /// The exact path gives the general parser's bits wherever it
        /// answers.
        #[test]
        fn exact_decimals_are_the_general_parsers_values(
            sign in proptest::sample::select(vec!["", "-", "+"]),
            whole in "[0-9]{0,20}",
            fraction in proptest::option::of("[0-9]{0,20}"),
            exponent in proptest::option::of("[eE][-+]?[0-9]{1,4}"),
        ) {
            let s = format!("{sign}{whole}{}{}", fraction.map(|f| format!(".{f}")).unwrap_or_default(), exponent.unwrap_or_default());
            if let Some(v) = exact_decimal(&s) {
                let general: f64 = s.parse().unwrap();
                proptest::prop_assert_eq!(v.to_bits(), general.to_bits(), "{}", s);
            }
        }
    }

    #[test]
    fn go_clients_values_take_the_exact_path() {
        for (s, v) in [
            ("0", 0.0),
            ("948656", 948_656.0),
            ("3.365296e+06", 3_365_296.0),
            ("1.8177e-05", 1.8177e-05),
            ("-0.5", -0.5),
            ("007", 7.0),
            ("1.795327307e+09", 1_795_327_307.0),
        ] {
            assert_eq!(exact_decimal(s), Some(v), "{s}");
        }
        for s in [
            "",
            ".",
            "-",
            "1e",
            "1e+",
            "1.2.3",
            "1x",
            "NaN",
            "Inf",
            "99999999999999999999",
            "1.7953273076779385e+09",
            "1e400",
        ] {
            assert_eq!(exact_decimal(s), None, "{s}");
        }
    }

    #[test]
    fn seconds_truncate_to_milliseconds() {
        assert_eq!(seconds_to_ms(1.5), 1500);
        assert_eq!(seconds_to_ms(1_700_000_000.123_4), 1_700_000_000_123);
        assert_eq!(seconds_to_ms(-0.0015), -1);
        assert_eq!(normalize_nan(f64::NAN).to_bits(), NORMAL_NAN_BITS);
    }
}
