//! Proleptic Gregorian calendar arithmetic on day counts since 1970-01-01,
//! after Howard Hinnant's `days_from_civil` / `civil_from_days` algorithms.

/// Days since 1970-01-01 of `year-month-day` (month 1..=12, day 1..=31).
pub fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// `(year, month, day)` of a day count since 1970-01-01; the inverse of [`days_from_civil`].
pub fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(month <= 2), month, day)
}

/// `t` in RFC 3339 with as many fractional digits as it needs (Go's
/// `time.RFC3339Nano`), UTC.
pub fn format_rfc3339(t: std::time::SystemTime) -> String {
    let (secs, nanos) = match t.duration_since(std::time::UNIX_EPOCH) {
        Ok(d) => (d.as_secs() as i64, d.subsec_nanos()),
        Err(e) => {
            let d = e.duration();
            let (s, n) = (-(d.as_secs() as i64), d.subsec_nanos());
            if n == 0 { (s, 0) } else { (s - 1, 1_000_000_000 - n) }
        }
    };
    let (y, mo, d) = civil_from_days(secs.div_euclid(86_400));
    let rem = secs.rem_euclid(86_400);
    let mut out = format!(
        "{y:04}-{mo:02}-{d:02}T{:02}:{:02}:{:02}",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    );
    if nanos != 0 {
        let frac = format!("{nanos:09}");
        out.push('.');
        out.push_str(frac.trim_end_matches('0'));
    }
    out.push('Z');
    out
}

/// `t` in RFC 3339 with exactly three fractional digits (go-openapi's
/// `strfmt.DateTime`, which Alertmanager's API uses), UTC.
pub fn format_rfc3339_millis(t: std::time::SystemTime) -> String {
    let ms = match t.duration_since(std::time::UNIX_EPOCH) {
        Ok(d) => d.as_millis() as i64,
        Err(e) => -(e.duration().as_nanos().div_ceil(1_000_000) as i64),
    };
    let secs = ms.div_euclid(1000);
    let (y, mo, d) = civil_from_days(secs.div_euclid(86_400));
    let rem = secs.rem_euclid(86_400);
    format!(
        "{y:04}-{mo:02}-{d:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        rem / 60 % 60,
        rem % 60,
        ms.rem_euclid(1000)
    )
}

/// `YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM)` to Unix milliseconds (the
/// fraction is truncated to milliseconds, as Prometheus does).
pub fn parse_rfc3339(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || b[10] != b'T' {
        return None;
    }
    if b[13] != b':' || b[16] != b':' {
        return None;
    }
    let num = |from: usize, to: usize| -> Option<i64> {
        let part = &b[from..to];
        if !part.iter().all(u8::is_ascii_digit) {
            return None;
        }
        std::str::from_utf8(part).ok()?.parse().ok()
    };
    let (year, month, day) = (num(0, 4)?, num(5, 7)?, num(8, 10)?);
    let (hour, minute, second) = (num(11, 13)?, num(14, 16)?, num(17, 19)?);
    if !(1..=12).contains(&month) || day < 1 || day > days_in_month(year, month) {
        return None;
    }
    if hour > 23 || minute > 59 || second > 59 {
        return None;
    }
    let mut rest = &b[19..];
    let mut frac_ms = 0i64;
    if let Some(r) = rest.strip_prefix(b".") {
        let digits = r.iter().take_while(|c| c.is_ascii_digit()).count();
        if digits == 0 {
            return None;
        }
        for (i, d) in r[..digits].iter().take(3).enumerate() {
            frac_ms += i64::from(d - b'0') * [100, 10, 1][i];
        }
        rest = &r[digits..];
    }
    let offset_secs = match rest {
        b"Z" => 0,
        [sign @ (b'+' | b'-'), h1, h2, b':', m1, m2] => {
            let digits = [*h1, *h2, *m1, *m2];
            if !digits.iter().all(u8::is_ascii_digit) {
                return None;
            }
            let h = i64::from(h1 - b'0') * 10 + i64::from(h2 - b'0');
            let m = i64::from(m1 - b'0') * 10 + i64::from(m2 - b'0');
            if h > 23 || m > 59 {
                return None;
            }
            let secs = h * 3600 + m * 60;
            if *sign == b'-' { -secs } else { secs }
        }
        _ => return None,
    };
    let days = days_from_civil(year, month, day);
    let secs = days * 86_400 + hour * 3600 + minute * 60 + second - offset_secs;
    Some(secs * 1000 + frac_ms)
}

fn is_leap(year: i64) -> bool {
    year.rem_euclid(4) == 0 && (year.rem_euclid(100) != 0 || year.rem_euclid(400) == 0)
}

/// The days of `month` (1..=12) in `year`.
pub fn days_in_month(year: i64, month: i64) -> i64 {
    match month {
        2 if is_leap(year) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_round_trips_and_knows_leap_years() {
        for days in (-800_000..800_000).step_by(7) {
            let (y, m, d) = civil_from_days(days);
            assert_eq!(days_from_civil(y, m, d), days);
        }
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(days_from_civil(2000, 3, 1) - days_from_civil(2000, 2, 28), 2);
        assert_eq!(days_from_civil(1900, 3, 1) - days_from_civil(1900, 2, 28), 1);
    }

    #[test]
    fn rfc3339_as_go_writes_it() {
        use std::time::{Duration, UNIX_EPOCH};
        let t = |ms: u64| format_rfc3339(UNIX_EPOCH + Duration::from_millis(ms));
        assert_eq!(t(0), "1970-01-01T00:00:00Z");
        assert_eq!(t(1_700_000_000_000), "2023-11-14T22:13:20Z");
        assert_eq!(t(1_709_164_800_500), "2024-02-29T00:00:00.5Z");
        assert_eq!(
            format_rfc3339(UNIX_EPOCH + Duration::new(1_700_000_000, 123_456_789)),
            "2023-11-14T22:13:20.123456789Z"
        );
        assert_eq!(
            format_rfc3339(UNIX_EPOCH - Duration::from_millis(500)),
            "1969-12-31T23:59:59.5Z"
        );
    }

    #[test]
    fn rfc3339_parses_to_milliseconds() {
        assert_eq!(parse_rfc3339("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(parse_rfc3339("2023-11-14T22:13:20.123456Z"), Some(1_700_000_000_123));
        assert_eq!(parse_rfc3339("2023-11-15T00:13:20+02:00"), Some(1_700_000_000_000));
        assert_eq!(parse_rfc3339("2024-02-29T00:00:00.5Z"), Some(1_709_164_800_500));
        for bad in [
            "2023-02-29T00:00:00Z",
            "2023-11-14 22:13:20Z",
            "2023-11-14T22:13:20",
            "2023-11-14T22:13:20.Z",
        ] {
            assert_eq!(parse_rfc3339(bad), None, "{bad}");
        }
    }

    #[test]
    fn rfc3339_millis_as_alertmanagers_api_writes_it() {
        use std::time::{Duration, UNIX_EPOCH};
        let t = |ms: u64| format_rfc3339_millis(UNIX_EPOCH + Duration::from_millis(ms));
        assert_eq!(t(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(t(1_700_000_000_123), "2023-11-14T22:13:20.123Z");
        assert_eq!(
            format_rfc3339_millis(UNIX_EPOCH - Duration::from_millis(500)),
            "1969-12-31T23:59:59.500Z"
        );
    }
}
