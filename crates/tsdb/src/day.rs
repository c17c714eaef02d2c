//! Time partitions: one per UTC day.

use std::fmt;

use cairn_model::civil::{civil_from_days, days_from_civil};

pub const DAY_MS: i64 = 86_400_000;

/// A UTC day, counted from 1970-01-01. Partitions, their index and retention
/// all work in whole days, as VictoriaMetrics' per-day index does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Day(pub i32);

impl Day {
    pub fn of(t: i64) -> Self {
        // Clamp so absurd timestamps still map to a valid (far) day.
        Self(t.div_euclid(DAY_MS).clamp(i32::MIN as i64, i32::MAX as i64) as i32)
    }

    pub fn mint(self) -> i64 {
        self.0 as i64 * DAY_MS
    }

    pub fn maxt(self) -> i64 {
        self.mint() + DAY_MS - 1
    }

    /// Parses the directory name written by `Display` (`YYYY-MM-DD`).
    pub fn parse(s: &str) -> Option<Self> {
        let mut it = s.splitn(3, '-');
        let y: i64 = it.next()?.parse().ok()?;
        let m: u32 = it.next()?.parse().ok()?;
        let d: u32 = it.next()?.parse().ok()?;
        if !(1..=12).contains(&m) || !(1..=31).contains(&d) {
            return None;
        }
        let days = days_from_civil(y, i64::from(m), i64::from(d));
        let day = Self(i32::try_from(days).ok()?);
        // Reject names like 2021-02-30 that do not round-trip.
        (day.to_string() == s).then_some(day)
    }
}

impl fmt::Display for Day {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (y, m, d) = civil_from_days(self.0 as i64);
        write!(f, "{y:04}-{m:02}-{d:02}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn day_names_round_trip() {
        for (t, name) in [
            (0, "1970-01-01"),
            (DAY_MS - 1, "1970-01-01"),
            (-1, "1969-12-31"),
            (1_700_000_000_000, "2023-11-14"),
            (951_782_400_000, "2000-02-29"),
        ] {
            let day = Day::of(t);
            assert_eq!(day.to_string(), name);
            assert_eq!(Day::parse(name), Some(day));
            assert!(day.mint() <= t && t <= day.maxt());
        }
        assert_eq!(Day::parse("2021-02-30"), None);
        assert_eq!(Day::parse("garbage"), None);
    }
}
