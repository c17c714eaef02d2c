//! Shortest float formatting with Go's choice of digits.
//!
//! Prometheus writes values with Go's `strconv` shortest formatting: the
//! fewest digits that read back as the same float, the candidate nearest the
//! exact value, and on an exact tie between two candidates the one whose last
//! digit is even. Rust's formatter also writes the fewest digits but breaks
//! such ties upwards, so `551.51715087890625` is `551.5171508789063` in Rust
//! and `551.5171508789062` in Go (found by tests/promql_differential.rs).
//! These functions give Rust's formats with Go's digits.

/// Like `format!("{v:e}")` (`5.515171508789062e2`), with Go's digits.
pub fn shortest_sci(v: f64) -> String {
    let mut out = String::with_capacity(24);
    push_sci(&mut out, v);
    out
}

/// Appends [`shortest_sci`]'s text for `v` to `out`.
pub fn push_sci(out: &mut String, v: f64) {
    push_sci_with(out, v, false);
}

/// Appends `v` as Go's `strconv.FormatFloat(v, 'e', -1, 64)` does: the
/// exponent has a sign and at least two digits (`1e-07`, `1.5e+21`).
pub fn push_go_sci(out: &mut String, v: f64) {
    push_sci_with(out, v, true);
}

fn push_sci_with(out: &mut String, v: f64, go_exponent: bool) {
    let Some(d) = Decimal::of(v) else {
        // Zero, infinities and NaN.
        if go_exponent {
            out.push_str(match v {
                _ if v.is_nan() => "NaN",
                f64::INFINITY => "+Inf",
                f64::NEG_INFINITY => "-Inf",
                _ if v.is_sign_negative() => "-0e+00",
                _ => "0e+00",
            });
        } else {
            use std::fmt::Write;
            let _ = write!(out, "{v:e}");
        }
        return;
    };
    let digits = d.digits();
    out.push_str(d.sign());
    out.push_str(&digits[..1]);
    if digits.len() > 1 {
        out.push('.');
        out.push_str(&digits[1..]);
    }
    out.push('e');
    if go_exponent {
        out.push(if d.exp < 0 { '-' } else { '+' });
        if d.exp.abs() < 10 {
            out.push('0');
        }
        out.push_str(itoa::Buffer::new().format(d.exp.unsigned_abs()));
    } else {
        out.push_str(itoa::Buffer::new().format(d.exp));
    }
}

/// Like `format!("{v}")` (`551.5171508789062`, never an exponent), with Go's
/// digits.
pub fn shortest_plain(v: f64) -> String {
    let mut out = String::with_capacity(24);
    push_plain(&mut out, v);
    out
}

/// `v` as Go's `strconv.FormatFloat(v, 'f', -1, 64)` writes it, with the
/// spelling Prometheus gives the specials: `NaN`, `+Inf`, `-Inf` (label
/// values, annotations, the exposition format).
pub fn format_f(v: f64) -> String {
    match v {
        _ if v.is_nan() => "NaN".into(),
        f64::INFINITY => "+Inf".into(),
        f64::NEG_INFINITY => "-Inf".into(),
        _ => shortest_plain(v),
    }
}

/// Appends `v` as the text exposition format writes sample values (the
/// client library's `writeFloat`: zero of either sign as `0`, the specials
/// as `NaN`, `+Inf`, `-Inf`, others as `strconv.AppendFloat(v, 'g', -1,
/// 64)`: plain, unless the decimal exponent is below -4 or at least 6, then
/// as [`push_go_sci`], `1e+06`, `1.5e-07`).
pub fn push_exposition(out: &mut String, v: f64) {
    match v {
        0.0 => out.push('0'),
        _ if v.is_nan() => out.push_str("NaN"),
        f64::INFINITY => out.push_str("+Inf"),
        f64::NEG_INFINITY => out.push_str("-Inf"),
        _ => match Decimal::of(v) {
            Some(d) if d.exp < -4 || d.exp >= 6 => push_go_sci(out, v),
            _ => push_plain(out, v),
        },
    }
}

/// `v` as OpenMetrics writes a float (Go's `strconv.FormatFloat(v, 'g', -1,
/// 64)`, with `.0` appended when that has neither a `.` nor an exponent:
/// `1.0`, `0.25`, `1e+06`; zero of either sign is `0.0`). Prometheus labels
/// values it makes of floats this way, as a quantile in `histogram_quantiles`.
pub fn format_openmetrics(v: f64) -> String {
    if v == 0.0 {
        return "0.0".into();
    }
    let mut out = String::with_capacity(24);
    push_exposition(&mut out, v);
    if v.is_finite() && !out.contains(['.', 'e']) {
        out.push_str(".0");
    }
    out
}

/// Appends [`shortest_plain`]'s text for `v` to `out`.
pub fn push_plain(out: &mut String, v: f64) {
    if v.is_finite() && v != 0.0 {
        // Ryū's digits are Go's; when it wrote them without an exponent and
        // not as an integer with `.0` appended, its text is the answer
        // (the common case of a query response: no re-parse).
        let mut ryu = ryu::Buffer::new();
        let text = ryu.format_finite(v);
        if !text.as_bytes().contains(&b'e') && !text.ends_with(".0") {
            out.push_str(text);
            return;
        }
    }
    let Some(d) = Decimal::of(v) else {
        use std::fmt::Write;
        let _ = write!(out, "{v}");
        return;
    };
    let digits = d.digits();
    let n = digits.len() as i32;
    out.push_str(d.sign());
    if d.exp < 0 {
        out.push_str("0.");
        push_zeros(out, -d.exp - 1);
        out.push_str(digits);
    } else if d.exp + 1 >= n {
        out.push_str(digits);
        push_zeros(out, d.exp + 1 - n);
    } else {
        let (int, frac) = digits.split_at((d.exp + 1) as usize);
        out.push_str(int);
        out.push('.');
        out.push_str(frac);
    }
}

fn push_zeros(out: &mut String, n: i32) {
    for _ in 0..n {
        out.push('0');
    }
}

/// Digit characters Ryū writes at most (17 significant, padding zeros of
/// its plain form included), with room to spare.
const MAX_DIGITS: usize = 40;

/// A finite, non-zero float as its shortest round-trip decimal digits
/// `d.ddd × 10^exp`, from Ryū, which breaks exact ties between two shortest
/// candidates to the even digit as Go does. Held on the stack: formatting a
/// range query's values allocates nothing per value.
struct Decimal {
    negative: bool,
    /// ASCII digits, no leading or trailing zeros; `len` of them.
    buf: [u8; MAX_DIGITS],
    len: usize,
    exp: i32,
}

impl Decimal {
    fn of(v: f64) -> Option<Self> {
        if !v.is_finite() || v == 0.0 {
            return None;
        }
        let mut ryu = ryu::Buffer::new();
        // Ryū writes `551.5171508789062`, `1e21`, `1.5e-7` or `0.001`.
        let text = ryu.format_finite(v.abs());
        let (mantissa, exp) = match text.split_once('e') {
            Some((m, e)) => (m, e.parse::<i32>().ok()?),
            None => (text, 0),
        };
        let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
        let mut d = Self {
            negative: v < 0.0,
            buf: [0; MAX_DIGITS],
            len: 0,
            exp: 0,
        };
        let mut leading = 0;
        for &c in int.as_bytes().iter().chain(frac.as_bytes()) {
            if c == b'0' && d.len == 0 {
                leading += 1;
                continue;
            }
            *d.buf.get_mut(d.len)? = c;
            d.len += 1;
        }
        while d.len > 0 && d.buf[d.len - 1] == b'0' {
            d.len -= 1;
        }
        if d.len == 0 {
            return None;
        }
        d.exp = int.len() as i32 - 1 - leading + exp;
        Some(d)
    }

    fn digits(&self) -> &str {
        // Only ASCII digits are ever stored.
        std::str::from_utf8(&self.buf[..self.len]).unwrap_or("0")
    }

    fn sign(&self) -> &'static str {
        if self.negative { "-" } else { "" }
    }
}

/// The shortest decimal of a finite nonzero `v` as an integer and a power
/// of ten, `v ≈ digits × 10^exp` (the fewest digits that read back as `v`,
/// at most 17), with its sign; `None` for zero, infinities and NaN.
pub fn shortest_decimal(v: f64) -> Option<(bool, u64, i32)> {
    let d = Decimal::of(v)?;
    let digits = d.digits().parse::<u64>().ok()?;
    Some((d.negative, digits, d.exp - (d.len as i32 - 1)))
}

/// `10^n` as Go's `math.Pow10` computes it: exact for `0 <= n <= 31`, else
/// the product or quotient of two table entries, so that formats built on it
/// (VictoriaMetrics' decimal values) convert to the same floats as Go.
pub fn pow10(n: i32) -> f64 {
    const SMALL: [f64; 32] = [
        1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19,
        1e20, 1e21, 1e22, 1e23, 1e24, 1e25, 1e26, 1e27, 1e28, 1e29, 1e30, 1e31,
    ];
    const BIG: [f64; 10] = [1e0, 1e32, 1e64, 1e96, 1e128, 1e160, 1e192, 1e224, 1e256, 1e288];
    const TINY: [f64; 11] = [
        1e0, 1e-32, 1e-64, 1e-96, 1e-128, 1e-160, 1e-192, 1e-224, 1e-256, 1e-288, 1e-320,
    ];
    let (hi, lo) = ((n.unsigned_abs() / 32) as usize, (n.unsigned_abs() % 32) as usize);
    match n {
        0..=308 => BIG[hi] * SMALL[lo],
        -323..=-1 => TINY[hi] / SMALL[lo],
        309.. => f64::INFINITY,
        _ => 0.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn shortest_decimals() {
        assert_eq!(shortest_decimal(1500.0), Some((false, 15, 2)));
        assert_eq!(shortest_decimal(-0.25), Some((true, 25, -2)));
        assert_eq!(shortest_decimal(0.1 + 0.2), Some((false, 30_000_000_000_000_004, -17)));
        assert_eq!(shortest_decimal(5e-324), Some((false, 5, -324)));
        assert_eq!(shortest_decimal(0.0), None);
        assert_eq!(shortest_decimal(f64::NAN), None);
    }

    #[test]
    fn pow10_is_gos() {
        assert_eq!(pow10(0), 1.0);
        assert_eq!(pow10(22), 1e22);
        assert_eq!(pow10(-3), 0.001);
        // Beyond the exact table Go multiplies two entries; so do we.
        assert_eq!(pow10(40), 1e32 * 1e8);
        assert_eq!(pow10(-40), 1e-32 / 1e8);
        assert_eq!(pow10(309), f64::INFINITY);
        assert_eq!(pow10(-324), 0.0);
        assert!(pow10(-323) > 0.0);
    }

    /// Values as the Go client library's `writeFloat` writes them.
    #[test]
    fn exposition_values_are_written_as_the_go_client_writes_them() {
        for (v, want) in [
            (0.0, "0"),
            (-0.0, "0"),
            (1.0, "1"),
            (-1.0, "-1"),
            (123_456.0, "123456"),
            (1e6, "1e+06"),
            (1_234_567.0, "1.234567e+06"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (1.5e-7, "1.5e-07"),
            (1e21, "1e+21"),
            (-2.5e300, "-2.5e+300"),
            (551.517_150_878_906_2, "551.5171508789062"),
            (f64::NAN, "NaN"),
            (f64::INFINITY, "+Inf"),
            (f64::NEG_INFINITY, "-Inf"),
        ] {
            let mut out = String::new();
            push_exposition(&mut out, v);
            assert_eq!(out, want, "{v:e}");
        }
    }

    #[test]
    fn openmetrics_floats_end_in_a_fraction_or_an_exponent() {
        for (v, want) in [
            (0.0, "0.0"),
            (-0.0, "0.0"),
            (1.0, "1.0"),
            (-1.0, "-1.0"),
            (0.25, "0.25"),
            (-0.1, "-0.1"),
            (1.01, "1.01"),
            (123_456.0, "123456.0"),
            (1e6, "1e+06"),
            (1.5e-7, "1.5e-07"),
            (f64::NAN, "NaN"),
            (f64::INFINITY, "+Inf"),
            (f64::NEG_INFINITY, "-Inf"),
        ] {
            assert_eq!(format_openmetrics(v), want, "{v:e}");
        }
    }

    /// The previous implementation, from exact decimal expansions: slow,
    /// independent of Ryū, kept as the oracle.
    mod reference {
        /// Like `format!("{v:e}")` (`5.515171508789062e2`), with Go's digits.
        pub fn shortest_sci(v: f64) -> String {
            let rust = format!("{v:e}");
            go_digits(v, &rust).unwrap_or(rust)
        }

        /// Like `format!("{v}")` (`551.5171508789062`, never an exponent), with Go's
        /// digits.
        pub fn shortest_plain(v: f64) -> String {
            let rust_sci = format!("{v:e}");
            let Some(sci) = go_digits(v, &rust_sci) else {
                return format!("{v}");
            };
            let (mant, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
            let exp: i64 = exp.parse().unwrap_or(0);
            let (sign, mant) = match mant.strip_prefix('-') {
                Some(m) => ("-", m),
                None => ("", mant),
            };
            let digits: String = mant.chars().filter(|c| *c != '.').collect();
            let n = digits.len() as i64;
            let body = if exp < 0 {
                format!("0.{}{digits}", "0".repeat((-exp - 1) as usize))
            } else if exp + 1 >= n {
                format!("{digits}{}", "0".repeat((exp + 1 - n) as usize))
            } else {
                let (int, frac) = digits.split_at((exp + 1) as usize);
                format!("{int}.{frac}")
            };
            format!("{sign}{body}")
        }

        /// Go's digits for `v` when they differ from Rust's `{:e}` output `rust`.
        fn go_digits(v: f64, rust: &str) -> Option<String> {
            if !v.is_finite() || v == 0.0 {
                return None;
            }
            let (mant, exp) = rust.split_once('e')?;
            let (sign, mant) = match mant.strip_prefix('-') {
                Some(m) => ("-", m),
                None => ("", mant),
            };
            let digits: String = mant.chars().filter(|c| *c != '.').collect();
            let n = digits.len();
            let last = digits.as_bytes().last()? - b'0';
            if last.is_multiple_of(2) {
                return None;
            }
            // Cheap test first: a tie is `n` digits, then 5, then only zeros, which
            // survives rounding to n + 2 digits.
            let quick = format!("{:.*e}", n + 1, v.abs());
            let quick: Vec<u8> = quick.split('e').next()?.bytes().filter(|b| *b != b'.').collect();
            if quick.get(n) != Some(&b'5') || quick.get(n + 1) != Some(&b'0') {
                return None;
            }
            // The exact value: an f64 has at most 767 significant decimal digits.
            let exact = format!("{:.800e}", v.abs());
            let (emant, eexp) = exact.split_once('e')?;
            if eexp != exp {
                return None;
            }
            let x: String = emant.chars().filter(|c| *c != '.').collect();
            let (head, tail) = x.split_at(n.min(x.len()));
            // A tie: the exact value lies halfway between two n-digit candidates.
            if !(tail.starts_with('5') && tail[1..].bytes().all(|b| b == b'0')) {
                return None;
            }
            let shown: u64 = digits.parse().ok()?;
            let lower: u64 = head.parse().ok()?;
            let even = if shown == lower { lower + 1 } else { lower };
            let even = even.to_string();
            if even.len() != n {
                return None;
            }
            let out = if n > 1 {
                format!("{sign}{}.{}e{exp}", &even[..1], &even[1..])
            } else {
                format!("{sign}{even}e{exp}")
            };
            // Only if the even candidate reads back as the same float.
            (out.parse::<f64>().ok()?.to_bits() == v.to_bits()).then_some(out)
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(20_000))]

        #[test]
        fn ryu_digits_agree_with_the_exact_reference(bits in any::<u64>()) {
            let v = f64::from_bits(bits);
            prop_assert_eq!(shortest_plain(v), reference::shortest_plain(v));
            prop_assert_eq!(shortest_sci(v), reference::shortest_sci(v));
        }

        /// Magnitudes query answers hold, where Ryū's own text is used as is.
        #[test]
        fn plain_range_agrees_with_the_exact_reference(v in -1e17f64..1e17, scale in -8i32..4) {
            let v = v * 10f64.powi(scale);
            prop_assert_eq!(shortest_plain(v), reference::shortest_plain(v));
        }

        /// Binary fractions `n / 2^k` are where exact ties live.
        #[test]
        fn ties_agree_with_the_exact_reference(n in 1u64..(1 << 53), k in 0i32..80, neg in any::<bool>()) {
            let v = n as f64 / 2f64.powi(k) * if neg { -1.0 } else { 1.0 };
            prop_assert_eq!(shortest_plain(v), reference::shortest_plain(v));
            prop_assert_eq!(shortest_sci(v), reference::shortest_sci(v));
        }
    }

    #[test]
    fn ties_go_to_the_even_digit_as_in_go() {
        // Pairs (Go's output, which Rust writes one up) seen in Prometheus' answers.
        for go in [
            "551.5171508789062",
            "17.281692504882812",
            "138230935207280.62",
            "1507691624084275.2",
            "83655688716.82812",
        ] {
            let v: f64 = go.parse().unwrap();
            assert_ne!(format!("{v}"), go, "not a tie case: {go}");
            assert_eq!(shortest_plain(v), go);
            assert_eq!(shortest_plain(-v), format!("-{go}"));
        }
        assert_eq!(shortest_sci(551.5171508789062), "5.515171508789062e2");
    }

    #[test]
    fn non_ties_are_rusts_digits() {
        for v in [
            0.1,
            1.0,
            -2.5,
            1e21,
            1.5e-7,
            123456789.0,
            0.30000000000000004,
            -0.0,
            5e-324,
            f64::MAX,
        ] {
            assert_eq!(shortest_plain(v), format!("{v}"), "{v}");
            assert_eq!(shortest_sci(v), format!("{v:e}"), "{v}");
        }
    }
}
