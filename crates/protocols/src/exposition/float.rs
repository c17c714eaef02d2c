//! Sample values and OpenMetrics timestamps as Prometheus reads them: Go's
//! `strconv.ParseFloat` without the hexadecimal and underscore forms Go
//! added in 1.13.

/// Prometheus' ordinary NaN (`value.NormalNaN`): what a text `NaN` becomes,
/// so it can never be taken for the staleness marker.
pub(crate) const NORMAL_NAN_BITS: u64 = 0x7ff8_0000_0000_0001;

/// Reads `s` as Go's `ParseFloat(s, 64)` does for the decimal forms,
/// failing with Go-like wording.
pub(crate) fn parse_go_float(s: &str) -> Result<f64, String> {
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

    #[test]
    fn seconds_truncate_to_milliseconds() {
        assert_eq!(seconds_to_ms(1.5), 1500);
        assert_eq!(seconds_to_ms(1_700_000_000.123_4), 1_700_000_000_123);
        assert_eq!(seconds_to_ms(-0.0015), -1);
        assert_eq!(normalize_nan(f64::NAN).to_bits(), NORMAL_NAN_BITS);
    }
}
