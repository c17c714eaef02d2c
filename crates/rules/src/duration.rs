//! Prometheus' duration notation (`1h30m`, `5m`, `0s`): what rule files use for
//! `interval`, `for`, `keep_firing_for` and `query_offset`.

use std::time::Duration;

const UNITS: [(&str, u64); 7] = [
    ("y", 365 * 24 * 3600 * 1000),
    ("w", 7 * 24 * 3600 * 1000),
    ("d", 24 * 3600 * 1000),
    ("h", 3600 * 1000),
    ("m", 60 * 1000),
    ("s", 1000),
    ("ms", 1),
];

/// Parses a non-negative duration; units must come in decreasing order, each at most once.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    if text.is_empty() {
        return Err("empty duration string".to_string());
    }
    if text == "0" {
        return Ok(Duration::ZERO);
    }
    let invalid = || format!("not a valid duration string: {text:?}");
    let mut rest = text;
    let mut next_unit = 0;
    let mut total: u64 = 0;
    while !rest.is_empty() {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return Err(invalid());
        }
        let number: u64 = rest[..digits].parse().map_err(|_| invalid())?;
        rest = &rest[digits..];
        // "ms" must be tried before "m".
        let unit = if rest.starts_with("ms") {
            6
        } else {
            UNITS
                .iter()
                .position(|(u, _)| rest.starts_with(u))
                .ok_or_else(invalid)?
        };
        if unit < next_unit {
            return Err(invalid());
        }
        next_unit = unit + 1;
        rest = &rest[UNITS[unit].0.len()..];
        total = number
            .checked_mul(UNITS[unit].1)
            .and_then(|ms| total.checked_add(ms))
            .filter(|&ms| ms <= i64::MAX as u64)
            .ok_or_else(|| "duration out of range".to_string())?;
    }
    Ok(Duration::from_millis(total))
}

/// Formats as Prometheus prints durations: the largest units first, `0s` for zero.
pub fn format_duration(d: Duration) -> String {
    let mut ms = d.as_millis() as u64;
    if ms == 0 {
        return "0s".to_string();
    }
    let mut out = String::new();
    for (unit, size) in UNITS {
        if ms >= size {
            out.push_str(&(ms / size).to_string());
            out.push_str(unit);
            ms %= size;
        }
    }
    out
}

/// Serde adapter: an optional duration written in Prometheus' notation.
pub(crate) mod serde_opt {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer};

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
        let text: Option<String> = Option::deserialize(d)?;
        text.map(|t| super::parse_duration(&t).map_err(serde::de::Error::custom))
            .transpose()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_formats_prometheus_durations() {
        for (text, ms, back) in [
            ("0", 0, "0s"),
            ("0s", 0, "0s"),
            ("90s", 90_000, "1m30s"),
            ("1h30m", 5_400_000, "1h30m"),
            ("1d", 86_400_000, "1d"),
            ("2w", 1_209_600_000, "2w"),
            ("1y", 31_536_000_000, "1y"),
            ("1m500ms", 60_500, "1m500ms"),
        ] {
            let d = parse_duration(text).unwrap();
            assert_eq!(d.as_millis() as u64, ms, "{text}");
            assert_eq!(format_duration(d), back);
        }
    }

    #[test]
    fn rejects_malformed_durations() {
        assert_eq!(parse_duration("").unwrap_err(), "empty duration string");
        for bad in ["5", "m", "1m1h", "1x", "-1m", "1.5m", "1s1s"] {
            assert_eq!(
                parse_duration(bad).unwrap_err(),
                format!("not a valid duration string: {bad:?}")
            );
        }
    }
}
