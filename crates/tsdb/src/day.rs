//! Time partitions: one per UTC day.

use std::fmt;

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
        let days = days_from_civil(y, m, d);
        let day = Self(i32::try_from(days).ok()?);
        // Reject names like 2021-02-30 that do not round-trip.
        (day.to_string() == s).then_some(day)
    }
}

/// Howard Hinnant's days-from-civil algorithm (proleptic Gregorian calendar).
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = m as i64;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + d as i64 - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
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
