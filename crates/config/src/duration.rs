//! Durations in Prometheus' configuration syntax (`1h30m`, `2d`, `500ms`).

use std::fmt;
use std::time::Duration as StdDuration;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A non-negative duration written as Prometheus writes it: a sequence of
/// `<integer><unit>` in strictly decreasing unit order, units `y` (365 days),
/// `w`, `d`, `h`, `m`, `s`, `ms`; or the bare `0`. Held in milliseconds,
/// Prometheus' resolution.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Duration(u64);

/// The units in the order they must appear, with their length in milliseconds.
const UNITS: [(&str, u64); 7] = [
    ("y", 365 * 24 * 3_600_000),
    ("w", 7 * 24 * 3_600_000),
    ("d", 24 * 3_600_000),
    ("h", 3_600_000),
    ("m", 60_000),
    ("s", 1_000),
    ("ms", 1),
];

/// Why a duration string was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DurationError {
    #[error("empty duration string")]
    Empty,
    #[error("not a valid duration string: {0:?}")]
    Invalid(String),
    #[error("duration out of range: {0:?}")]
    Overflow(String),
}

impl Duration {
    pub const ZERO: Duration = Duration(0);

    pub const fn from_millis(ms: u64) -> Self {
        Self(ms)
    }

    pub const fn from_secs(secs: u64) -> Self {
        Self(secs * 1000)
    }

    pub const fn as_millis(self) -> u64 {
        self.0
    }

    pub fn is_zero(&self) -> bool {
        self.0 == 0
    }

    pub fn as_std(self) -> StdDuration {
        StdDuration::from_millis(self.0)
    }

    /// The duration at Prometheus' millisecond resolution: sub-millisecond parts
    /// are dropped and what does not fit in `u64` milliseconds saturates.
    pub fn from_std(d: StdDuration) -> Self {
        Self(u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
    }

    /// Parses Prometheus' duration syntax.
    pub fn parse(text: &str) -> Result<Self, DurationError> {
        if text.is_empty() {
            return Err(DurationError::Empty);
        }
        if text == "0" {
            return Ok(Self::ZERO);
        }
        let invalid = || DurationError::Invalid(text.to_string());
        let mut rest = text;
        let mut total: u64 = 0;
        // Index into UNITS of the next unit allowed: each unit at most once, largest first.
        let mut next_unit = 0;
        while !rest.is_empty() {
            let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
            if digits == 0 {
                return Err(invalid());
            }
            let (number, after) = rest.split_at(digits);
            let unit_len = after.bytes().take_while(|b| b.is_ascii_alphabetic()).count();
            let (unit, after) = after.split_at(unit_len);
            let position = UNITS[next_unit..]
                .iter()
                .position(|(name, _)| *name == unit)
                .ok_or_else(invalid)?;
            let (_, unit_ms) = UNITS[next_unit + position];
            next_unit += position + 1;
            let overflow = || DurationError::Overflow(text.to_string());
            let value: u64 = number.parse().map_err(|_| overflow())?;
            let part = value.checked_mul(unit_ms).ok_or_else(overflow)?;
            total = total.checked_add(part).ok_or_else(overflow)?;
            rest = after;
        }
        // Go's time.Duration is signed nanoseconds: longer durations overflow there.
        if total > (i64::MAX as u64) / 1_000_000 {
            return Err(DurationError::Overflow(text.to_string()));
        }
        Ok(Self(total))
    }
}

impl fmt::Display for Duration {
    /// Prometheus' canonical form: largest units first, zero parts omitted, `0s` for zero.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0 == 0 {
            return f.write_str("0s");
        }
        let mut rest = self.0;
        for (name, unit_ms) in UNITS {
            // Years and weeks are printed only when they divide what is left, as
            // Prometheus does (`90d`, not `12w6d`).
            if (name == "y" || name == "w") && !rest.is_multiple_of(unit_ms) {
                continue;
            }
            let count = rest / unit_ms;
            if count > 0 {
                write!(f, "{count}{name}")?;
                rest -= count * unit_ms;
            }
        }
        Ok(())
    }
}

impl std::str::FromStr for Duration {
    type Err = DurationError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

impl Serialize for Duration {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Duration {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        // Go reads any scalar here as its text, so `0` is a valid duration and `10` a size without unit.
        // `null` leaves the zero value, as in Go (an interval then comes from its default).
        let Some(text) = crate::serde_util::NullableScalar::deserialize(deserializer)?.0 else {
            return Ok(Self::ZERO);
        };
        Self::parse(&text).map_err(serde::de::Error::custom)
    }
}

impl From<Duration> for StdDuration {
    fn from(d: Duration) -> Self {
        d.as_std()
    }
}

impl From<StdDuration> for Duration {
    fn from(d: StdDuration) -> Self {
        Self::from_std(d)
    }
}

/// Serde adapter (`#[serde(default, with = "...")]`) for an optional
/// `std::time::Duration` written in Prometheus' notation; `null` or absent is `None`.
pub mod option_std {
    use std::time::Duration as StdDuration;

    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    use super::Duration;

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<StdDuration>, D::Error> {
        Ok(Option::<Duration>::deserialize(deserializer)?.map(StdDuration::from))
    }

    pub fn serialize<S: Serializer>(value: &Option<StdDuration>, serializer: S) -> Result<S::Ok, S::Error> {
        value.map(Duration::from_std).serialize(serializer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duration_parses_every_unit_in_order() {
        assert_eq!(Duration::parse("0").unwrap(), Duration::ZERO);
        assert_eq!(Duration::parse("0s").unwrap(), Duration::ZERO);
        assert_eq!(Duration::parse("500ms").unwrap().as_millis(), 500);
        assert_eq!(Duration::parse("1h30m").unwrap().as_millis(), 5_400_000);
        assert_eq!(Duration::parse("2d").unwrap().as_millis(), 172_800_000);
        assert_eq!(Duration::parse("1w").unwrap().as_millis(), 604_800_000);
        assert_eq!(Duration::parse("1y").unwrap().as_millis(), 31_536_000_000);
        assert_eq!(
            Duration::parse("1y2w3d4h5m6s7ms").unwrap().as_millis(),
            31_536_000_000 + 2 * 604_800_000 + 3 * 86_400_000 + 4 * 3_600_000 + 5 * 60_000 + 6_000 + 7
        );
        assert_eq!(Duration::parse("90m").unwrap().as_millis(), 5_400_000);
    }

    #[test]
    fn duration_rejects_what_prometheus_rejects() {
        for bad in [
            "", "1", "1.5h", "-1s", "1m1h", "1s1s", "1 s", "s", "1x", "1mss", "1H", "1h 30m", "00",
        ] {
            assert!(Duration::parse(bad).is_err(), "{bad:?} should be rejected");
        }
        assert!(matches!(
            Duration::parse("999999999999y"),
            Err(DurationError::Overflow(_))
        ));
        assert!(matches!(Duration::parse("300y"), Err(DurationError::Overflow(_))));
    }

    #[test]
    fn duration_formats_canonically() {
        let cases = [
            (0, "0s"),
            (500, "500ms"),
            (1_000, "1s"),
            (5_400_000, "1h30m"),
            (86_400_000, "1d"),
            (604_800_000, "1w"),
            (691_200_000, "8d"),
            (31_536_000_000, "1y"),
            (31_536_000_000 + 86_400_000, "366d"),
            (61_001, "1m1s1ms"),
        ];
        for (ms, text) in cases {
            assert_eq!(Duration::from_millis(ms).to_string(), text);
            assert_eq!(Duration::parse(text).unwrap().as_millis(), ms);
        }
    }

    #[test]
    fn duration_round_trips_through_display() {
        for (text, ms, back) in [
            ("90s", 90_000, "1m30s"),
            ("2w", 1_209_600_000, "2w"),
            ("1m500ms", 60_500, "1m500ms"),
            ("15s", 15_000, "15s"),
            ("100ms", 100, "100ms"),
        ] {
            let d = Duration::parse(text).unwrap();
            assert_eq!(d.as_millis(), ms, "{text}");
            assert_eq!(d.to_string(), back);
        }
    }

    #[test]
    fn duration_errors_read_as_prometheus_words_them() {
        assert_eq!(Duration::parse("").unwrap_err().to_string(), "empty duration string");
        for bad in ["5", "m", "1m1h", "1x", "-1m", "1.5m", "1s1s", "30s1m", "abc"] {
            assert_eq!(
                Duration::parse(bad).unwrap_err().to_string(),
                format!("not a valid duration string: {bad:?}")
            );
        }
    }

    #[test]
    fn duration_converts_to_and_from_std() {
        let d = Duration::parse("1m30s").unwrap();
        assert_eq!(StdDuration::from(d), StdDuration::from_secs(90));
        assert_eq!(
            Duration::from(StdDuration::from_micros(1_500_999)),
            Duration::from_millis(1_500)
        );
        assert_eq!(Duration::from_std(StdDuration::MAX).as_millis(), u64::MAX);
    }

    #[test]
    fn optional_std_duration_reads_prometheus_notation() {
        #[derive(serde::Deserialize, serde::Serialize)]
        struct Holder {
            #[serde(default, with = "super::option_std")]
            d: Option<StdDuration>,
        }
        let read = |yaml: &str| serde_yaml_ng::from_str::<Holder>(yaml).map(|h| h.d);
        assert_eq!(read("d: 1h30m").unwrap(), Some(StdDuration::from_secs(5_400)));
        assert_eq!(read("d: 0").unwrap(), Some(StdDuration::ZERO));
        assert_eq!(read("d: null").unwrap(), None);
        assert_eq!(read("{}").unwrap(), None);
        assert!(read("d: 1x").is_err());
        let written = serde_yaml_ng::to_string(&Holder {
            d: Some(StdDuration::from_secs(90)),
        })
        .unwrap();
        assert_eq!(written.trim(), "d: 1m30s");
    }
}
