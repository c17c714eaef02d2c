//! Prometheus' duration text (`1m30s`, `100ms`): what the `__scrape_interval__`
//! and `__scrape_timeout__` labels hold and what the targets API shows.

use std::time::Duration;

const UNITS: [(&str, u64); 7] = [
    ("y", 365 * 24 * 3_600_000),
    ("w", 7 * 24 * 3_600_000),
    ("d", 24 * 3_600_000),
    ("h", 3_600_000),
    ("m", 60_000),
    ("s", 1_000),
    ("ms", 1),
];

/// Prometheus' rendering: the largest units first, zero parts left out, `0s` for zero.
pub fn format_duration(d: Duration) -> String {
    let mut ms = d.as_millis() as u64;
    if ms == 0 {
        return "0s".to_string();
    }
    let mut out = String::new();
    for (unit, size) in UNITS {
        let n = ms / size;
        if n > 0 {
            out.push_str(&n.to_string());
            out.push_str(unit);
            ms -= n * size;
        }
    }
    out
}

/// Parses Prometheus' duration: one or more `<integer><unit>` parts with units in
/// decreasing order, each at most once (`1h30m`, `0`, `100ms`).
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    if s == "0" {
        return Ok(Duration::ZERO);
    }
    if s.is_empty() {
        return Err("empty duration string".into());
    }
    let bad = || format!("not a valid duration string: {s:?}");
    let bytes = s.as_bytes();
    let mut pos = 0;
    let mut total: u64 = 0;
    let mut last_unit = None::<usize>;
    while pos < bytes.len() {
        let start = pos;
        while pos < bytes.len() && bytes[pos].is_ascii_digit() {
            pos += 1;
        }
        if start == pos {
            return Err(bad());
        }
        let n: u64 = s[start..pos].parse().map_err(|_| bad())?;
        let unit_start = pos;
        while pos < bytes.len() && bytes[pos].is_ascii_alphabetic() {
            pos += 1;
        }
        let unit = &s[unit_start..pos];
        let index = UNITS.iter().position(|(u, _)| *u == unit).ok_or_else(bad)?;
        if last_unit.is_some_and(|last| index <= last) {
            return Err(bad());
        }
        last_unit = Some(index);
        total = n
            .checked_mul(UNITS[index].1)
            .and_then(|v| total.checked_add(v))
            .ok_or_else(|| "duration out of range".to_string())?;
    }
    Ok(Duration::from_millis(total))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_like_prometheus() {
        assert_eq!(format_duration(Duration::from_secs(15)), "15s");
        assert_eq!(format_duration(Duration::from_secs(90)), "1m30s");
        assert_eq!(format_duration(Duration::from_millis(100)), "100ms");
        assert_eq!(format_duration(Duration::from_secs(3600 * 24 * 7)), "1w");
        assert_eq!(format_duration(Duration::ZERO), "0s");
    }

    #[test]
    fn parses_like_prometheus() {
        assert_eq!(parse_duration("1m30s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("150ms"), Ok(Duration::from_millis(150)));
        assert_eq!(parse_duration("0"), Ok(Duration::ZERO));
        assert!(parse_duration("30s1m").is_err());
        assert!(parse_duration("1.5s").is_err());
        assert!(parse_duration("abc").is_err());
        assert!(parse_duration("").is_err());
    }
}
