//! Go's `fmt` as templates use it: `%v` of floats, `printf` verbs with flags,
//! width and precision, `print`/`println` spacing, and how `time.Time` and
//! `time.Duration` print.

use super::value::Value;

/// Go's `%v` of a float64 (`strconv`'s `'g'` with precision -1): the shortest
/// digits, in exponent form when the exponent is below -4 or at least 6.
pub fn format_float_v(v: f64) -> String {
    if let Some(special) = special(v) {
        return special.to_string();
    }
    if v == 0.0 {
        return if v.is_sign_negative() { "-0".into() } else { "0".into() };
    }
    let (neg, digits, exp) = shortest_digits(v);
    let body = if !(-4..6).contains(&exp) {
        sci(&digits, exp)
    } else {
        fixed(&digits, exp, None)
    };
    if neg { format!("-{body}") } else { body }
}

fn special(v: f64) -> Option<&'static str> {
    if v.is_nan() {
        Some("NaN")
    } else if v == f64::INFINITY {
        Some("+Inf")
    } else if v == f64::NEG_INFINITY {
        Some("-Inf")
    } else {
        None
    }
}

/// The shortest round-tripping decimal digits of |v| (Go's choice) and the
/// exponent of the first digit.
fn shortest_digits(v: f64) -> (bool, String, i32) {
    split_sci(&cairn_model::go_float::shortest_sci(v.abs()), v.is_sign_negative())
}

/// Splits Rust's `1.2345e-3` form into digits and exponent.
fn split_sci(s: &str, neg: bool) -> (bool, String, i32) {
    let (mantissa, exp) = s.split_once('e').unwrap_or((s, "0"));
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    (neg, digits, exp.parse().unwrap_or(0))
}

/// `d.ddde+XX` with Go's at-least-two-digit exponent.
fn sci(digits: &str, exp: i32) -> String {
    let mut out = String::new();
    out.push_str(&digits[..1]);
    if digits.len() > 1 {
        out.push('.');
        out.push_str(&digits[1..]);
    }
    out.push('e');
    out.push(if exp < 0 { '-' } else { '+' });
    if exp.abs() < 10 {
        out.push('0');
    }
    out.push_str(&exp.abs().to_string());
    out
}

/// Positional notation of `digits` × 10^(exp+1-len); `decimals` pads the fraction.
fn fixed(digits: &str, exp: i32, decimals: Option<usize>) -> String {
    let dp = exp + 1;
    let mut int_part = String::new();
    let mut frac = String::new();
    if dp <= 0 {
        int_part.push('0');
        frac.push_str(&"0".repeat((-dp) as usize));
        frac.push_str(digits);
    } else {
        let dp = dp as usize;
        if digits.len() <= dp {
            int_part.push_str(digits);
            int_part.push_str(&"0".repeat(dp - digits.len()));
        } else {
            int_part.push_str(&digits[..dp]);
            frac.push_str(&digits[dp..]);
        }
    }
    if let Some(d) = decimals {
        while frac.len() < d {
            frac.push('0');
        }
        frac.truncate(d);
    }
    if frac.is_empty() {
        int_part
    } else {
        format!("{int_part}.{frac}")
    }
}

/// `%.<p>g`.
fn format_g(v: f64, precision: usize) -> String {
    if let Some(s) = special(v) {
        return s.to_string();
    }
    let p = precision.max(1);
    let rounded = format!("{:.*e}", p - 1, v.abs());
    let (_, mut digits, exp) = split_sci(&rounded, false);
    while digits.len() > 1 && digits.ends_with('0') {
        digits.pop();
    }
    let sign = if v.is_sign_negative() { "-" } else { "" };
    if v == 0.0 {
        return format!("{sign}0");
    }
    let nd = digits.len() as i32;
    let dp = exp + 1;
    let mut eprec = p as i32;
    if eprec > nd && nd >= dp {
        eprec = nd;
    }
    if exp < -4 || exp >= eprec {
        return format!("{sign}{}", sci(&digits, exp));
    }
    let prec = if p as i32 > dp { nd } else { p as i32 };
    let decimals = (prec - dp).max(0) as usize;
    format!("{sign}{}", fixed(&digits, exp, Some(decimals)))
}

fn format_e(v: f64, precision: usize, upper: bool) -> String {
    if let Some(s) = special(v) {
        return s.to_string();
    }
    let rust = format!("{:.*e}", precision, v.abs());
    let (mantissa, exp) = rust.split_once('e').unwrap_or((&rust, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let sign = if v.is_sign_negative() { "-" } else { "" };
    let e = if upper { 'E' } else { 'e' };
    let esign = if exp < 0 { '-' } else { '+' };
    format!("{sign}{mantissa}{e}{esign}{:02}", exp.abs())
}

/// Go's `time.Time.String()` of a UTC time.
pub fn format_time(ns: i64) -> String {
    let secs = ns.div_euclid(1_000_000_000);
    let nanos = ns.rem_euclid(1_000_000_000);
    let days = secs.div_euclid(86_400);
    let sod = secs.rem_euclid(86_400);
    let (y, m, d) = cairn_model::civil::civil_from_days(days);
    let mut out = format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}",
        sod / 3600,
        sod / 60 % 60,
        sod % 60
    );
    if nanos != 0 {
        let frac = format!("{nanos:09}");
        out.push('.');
        out.push_str(frac.trim_end_matches('0'));
    }
    out.push_str(" +0000 UTC");
    out
}

/// Go's `time.Duration.String()`.
pub fn format_go_duration(ns: i64) -> String {
    if ns == 0 {
        return "0s".into();
    }
    let sign = if ns < 0 { "-" } else { "" };
    let u = ns.unsigned_abs();
    let frac_text = |value: u64, scale: u64, unit: &str| {
        let whole = value / scale;
        let frac = value % scale;
        if frac == 0 {
            format!("{whole}{unit}")
        } else {
            let width = scale.ilog10() as usize;
            let f = format!("{frac:0width$}");
            format!("{whole}.{}{unit}", f.trim_end_matches('0'))
        }
    };
    if u < 1_000 {
        return format!("{sign}{u}ns");
    }
    if u < 1_000_000 {
        return format!("{sign}{}", frac_text(u, 1_000, "µs"));
    }
    if u < 1_000_000_000 {
        return format!("{sign}{}", frac_text(u, 1_000_000, "ms"));
    }
    let h = u / 3_600_000_000_000;
    let m = u / 60_000_000_000 % 60;
    let s = frac_text(u % 60_000_000_000, 1_000_000_000, "s");
    match (h, m) {
        (0, 0) => format!("{sign}{s}"),
        (0, m) => format!("{sign}{m}m{s}"),
        (h, m) => format!("{sign}{h}h{m}m{s}"),
    }
}

/// `fmt.Sprint`: a space between operands when neither is a string.
pub fn sprint(args: &[Value]) -> String {
    let mut out = String::new();
    for (i, a) in args.iter().enumerate() {
        let is_str = |v: &Value| matches!(v, Value::Str(_));
        if i > 0 && !is_str(a) && !is_str(&args[i - 1]) {
            out.push(' ');
        }
        out.push_str(&a.print());
    }
    out
}

/// `fmt.Sprintln`: spaces between all operands, then a newline.
pub fn sprintln(args: &[Value]) -> String {
    let parts: Vec<String> = args.iter().map(Value::print).collect();
    format!("{}\n", parts.join(" "))
}

#[derive(Default)]
struct Spec {
    minus: bool,
    plus: bool,
    space: bool,
    zero: bool,
    sharp: bool,
    width: Option<usize>,
    precision: Option<usize>,
}

/// `fmt.Sprintf` with Go's verbs and its `%!` forms for mistakes.
pub fn sprintf(format: &str, args: &[Value]) -> String {
    let mut out = String::new();
    let mut next_arg = 0;
    let mut chars = format.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        let mut spec = Spec::default();
        while let Some(&f) = chars.peek() {
            match f {
                '-' => spec.minus = true,
                '+' => spec.plus = true,
                ' ' => spec.space = true,
                '0' => spec.zero = true,
                '#' => spec.sharp = true,
                _ => break,
            }
            chars.next();
        }
        spec.width = read_number(&mut chars, args, &mut next_arg);
        if chars.peek() == Some(&'.') {
            chars.next();
            spec.precision = Some(read_number(&mut chars, args, &mut next_arg).unwrap_or(0));
        }
        let Some(verb) = chars.next() else {
            out.push_str("%!(NOVERB)");
            break;
        };
        if verb == '%' {
            out.push('%');
            continue;
        }
        let Some(arg) = args.get(next_arg) else {
            out.push_str(&format!("%!{verb}(MISSING)"));
            continue;
        };
        next_arg += 1;
        out.push_str(&format_one(verb, &spec, arg));
    }
    if next_arg < args.len() {
        let extra: Vec<String> = args[next_arg..]
            .iter()
            .map(|a| format!("{}={}", a.type_name(), a.print()))
            .collect();
        out.push_str(&format!("%!(EXTRA {})", extra.join(", ")));
    }
    out
}

fn read_number(
    chars: &mut std::iter::Peekable<std::str::Chars<'_>>,
    args: &[Value],
    next_arg: &mut usize,
) -> Option<usize> {
    if chars.peek() == Some(&'*') {
        chars.next();
        let n = match args.get(*next_arg) {
            Some(Value::Int(i)) => Some((*i).max(0) as usize),
            _ => None,
        };
        *next_arg += 1;
        return n;
    }
    let mut n: Option<usize> = None;
    while let Some(d) = chars.peek().and_then(|c| c.to_digit(10)) {
        n = Some(n.unwrap_or(0) * 10 + d as usize);
        chars.next();
    }
    n
}

fn format_one(verb: char, spec: &Spec, arg: &Value) -> String {
    let bad = || format!("%!{verb}({}={})", arg.type_name(), arg.print());
    let body = match (verb, arg) {
        ('v', Value::Float(f)) => with_sign(format_float_v(*f), spec),
        ('v', Value::Int(i)) | ('d', Value::Int(i)) => with_sign(i.to_string(), spec),
        ('v', Value::Nil) => "<nil>".to_string(),
        ('v', other) => other.print(),
        ('s', Value::Str(s) | Value::Html(s)) => match spec.precision {
            Some(p) => s.chars().take(p).collect(),
            None => s.clone(),
        },
        ('s', Value::Time(_) | Value::Duration(_) | Value::StrMap(_)) => arg.print(),
        // Go applies the verb to each element of a map.
        ('s' | 'd', Value::Map(m)) => {
            let inner = Spec::default();
            let parts: Vec<String> = m
                .iter()
                .map(|(k, v)| format!("{k}:{}", format_one(verb, &inner, v)))
                .collect();
            format!("map[{}]", parts.join(" "))
        }
        ('s', Value::Nil) => "%!s(<nil>)".to_string(),
        ('q', Value::Str(s) | Value::Html(s)) => go_quote(s),
        ('x' | 'X', Value::Str(s)) => {
            let hex: String = s.bytes().map(|b| format!("{b:02x}")).collect();
            if verb == 'X' { hex.to_uppercase() } else { hex }
        }
        ('x', Value::Int(i)) => format!("{i:x}"),
        ('X', Value::Int(i)) => format!("{i:X}"),
        ('o', Value::Int(i)) => format!("{i:o}"),
        ('b', Value::Int(i)) => format!("{i:b}"),
        ('c', Value::Int(i)) => char::from_u32(*i as u32)
            .map(String::from)
            .unwrap_or_else(|| "\u{fffd}".into()),
        ('t', Value::Bool(b)) => b.to_string(),
        ('f' | 'F', Value::Float(f)) => with_sign(
            special(*f)
                .map(str::to_string)
                .unwrap_or_else(|| format!("{:.*}", spec.precision.unwrap_or(6), f)),
            spec,
        ),
        ('e' | 'E', Value::Float(f)) => with_sign(format_e(*f, spec.precision.unwrap_or(6), verb == 'E'), spec),
        ('g' | 'G', Value::Float(f)) => {
            let s = match spec.precision {
                Some(p) => format_g(*f, p),
                None => format_float_v(*f),
            };
            with_sign(if verb == 'G' { s.to_uppercase() } else { s }, spec)
        }
        _ => return bad(),
    };
    pad(body, spec, matches!(arg, Value::Int(_) | Value::Float(_)))
}

fn with_sign(s: String, spec: &Spec) -> String {
    if s.starts_with('-') || s.starts_with('+') {
        return s;
    }
    if spec.plus {
        format!("+{s}")
    } else if spec.space {
        format!(" {s}")
    } else {
        s
    }
}

fn pad(s: String, spec: &Spec, numeric: bool) -> String {
    let Some(width) = spec.width else { return s };
    let len = s.chars().count();
    if len >= width {
        return s;
    }
    let fill = width - len;
    if spec.minus {
        format!("{s}{}", " ".repeat(fill))
    } else if spec.zero && numeric && !s.ends_with("Inf") && s != "NaN" {
        let (sign, digits) = match s.chars().next() {
            Some(c @ ('-' | '+' | ' ')) => (c.to_string(), s[1..].to_string()),
            _ => (String::new(), s.clone()),
        };
        format!("{sign}{}{digits}", "0".repeat(fill))
    } else {
        format!("{}{s}", " ".repeat(fill))
    }
}

/// Go's `strconv.Quote`.
pub fn go_quote(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            '\x07' => out.push_str("\\a"),
            '\x08' => out.push_str("\\b"),
            '\x0c' => out.push_str("\\f"),
            '\x0b' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => out.push_str(&format!("\\x{:02x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_print_as_go_prints_them() {
        for (v, want) in [
            (1.0, "1"),
            (1.5, "1.5"),
            (100000.0, "100000"),
            (1234567.0, "1.234567e+06"),
            (1e21, "1e+21"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (-2.25, "-2.25"),
            (f64::INFINITY, "+Inf"),
            (f64::NAN, "NaN"),
        ] {
            assert_eq!(format_float_v(v), want, "{v}");
        }
    }

    #[test]
    fn printf_verbs_match_go() {
        let f = Value::Float;
        assert_eq!(sprintf("%.2f", &[f(1.23456)]), "1.23");
        assert_eq!(sprintf("%.4g", &[f(1234567.0)]), "1.235e+06");
        assert_eq!(sprintf("%.4g", &[f(2.5)]), "2.5");
        assert_eq!(sprintf("%.4g", &[f(100.0)]), "100");
        assert_eq!(sprintf("%.4g", &[f(10000.0)]), "1e+04");
        assert_eq!(sprintf("%.4g", &[f(0.000123456)]), "0.0001235");
        assert_eq!(sprintf("%e", &[f(1500.0)]), "1.500000e+03");
        assert_eq!(sprintf("%d items", &[Value::Int(3)]), "3 items");
        assert_eq!(sprintf("%d", &[f(1.5)]), "%!d(float64=1.5)");
        assert_eq!(sprintf("%s", &[Value::Int(2)]), "%!s(int=2)");
        assert_eq!(sprintf("%s and %s", &[Value::Str("a".into())]), "a and %!s(MISSING)");
        assert_eq!(sprintf("x", &[Value::Int(1)]), "x%!(EXTRA int=1)");
        assert_eq!(
            sprintf("%5.1f|%-4d|%04d", &[f(2.25), Value::Int(7), Value::Int(-7)]),
            "  2.2|7   |-007"
        );
        assert_eq!(
            sprintf("%q %v %%", &[Value::Str("a\"b".into()), Value::Bool(true)]),
            "\"a\\\"b\" true %"
        );
    }

    #[test]
    fn times_and_durations_print_as_go() {
        assert_eq!(format_time(0), "1970-01-01 00:00:00 +0000 UTC");
        assert_eq!(format_time(1_500_000_000), "1970-01-01 00:00:01.5 +0000 UTC");
        assert_eq!(format_time(1_700_000_000_000_000_000), "2023-11-14 22:13:20 +0000 UTC");
        assert_eq!(format_go_duration(90_500_000_000), "1m30.5s");
        assert_eq!(format_go_duration(3_600_000_000_000), "1h0m0s");
        assert_eq!(format_go_duration(1_500_000), "1.5ms");
    }

    #[test]
    fn print_spaces_operands_as_go() {
        let args = [Value::Int(1), Value::Int(2), Value::Str("a".into()), Value::Int(3)];
        assert_eq!(sprint(&args), "1 2a3");
        assert_eq!(sprintln(&args), "1 2 a 3\n");
    }
}
