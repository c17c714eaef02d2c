//! UTC calendar fields of a Unix time, for the PromQL time functions
//! (`hour()`, `day_of_week()`, `year()`, ...).
//!
//! Prometheus converts with Go's `time.Unix(int64(v), 0).UTC()`, which works
//! for any int64 second, far beyond the years a date library such as chrono
//! represents (`hour(vector(1e15))` is 1 in Prometheus). Civil dates are
//! therefore computed with `cairn_model::civil` (Howard Hinnant's day-count
//! algorithms, proleptic Gregorian calendar).

use cairn_model::civil::{civil_from_days, days_from_civil, days_in_month};

/// The UTC calendar fields of one instant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Civil {
    pub year: i64,
    /// 1..=12
    pub month: i64,
    /// 1..=31
    pub day: i64,
    pub hour: i64,
    pub minute: i64,
    /// 0 = Sunday
    pub weekday: i64,
    /// 1..=366
    pub day_of_year: i64,
    pub days_in_month: i64,
}

/// Calendar fields of `secs` seconds since 1970-01-01T00:00:00Z.
pub(crate) fn civil(secs: i64) -> Civil {
    let days = secs.div_euclid(86_400);
    let sod = secs.rem_euclid(86_400);
    let (year, month, day) = civil_from_days(days);
    Civil {
        year,
        month,
        day,
        hour: sod / 3600,
        minute: sod % 3600 / 60,
        // 1970-01-01 was a Thursday.
        weekday: (days + 4).rem_euclid(7),
        day_of_year: days - days_from_civil(year, 1, 1) + 1,
        days_in_month: days_in_month(year, month),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(secs: i64, want: (i64, i64, i64, i64, i64, i64, i64, i64)) {
        let c = civil(secs);
        let got = (
            c.year,
            c.month,
            c.day,
            c.hour,
            c.minute,
            c.weekday,
            c.day_of_year,
            c.days_in_month,
        );
        assert_eq!(got, want, "civil({secs})");
    }

    #[test]
    fn civil_fields_match_go() {
        check(0, (1970, 1, 1, 0, 0, 4, 1, 31));
        check(-1, (1969, 12, 31, 23, 59, 3, 365, 31));
        // 2024-02-29T12:34:56Z, a leap day (Thursday).
        check(1_709_210_096, (2024, 2, 29, 12, 34, 4, 60, 29));
        check(1_709_251_200, (2024, 3, 1, 0, 0, 5, 61, 31));
        // 2100 is not a leap year; 2000 is.
        check(4_107_542_400, (2100, 3, 1, 0, 0, 1, 60, 31));
        check(951_782_400, (2000, 2, 29, 0, 0, 2, 60, 29));
        // Far beyond chrono's range; Go: time.Unix(1e15, 0).UTC() is
        // 31690708-07-05 01:46:40, a Sunday.
        let c = civil(1_000_000_000_000_000);
        assert_eq!(
            (c.year, c.month, c.day, c.hour, c.minute, c.weekday),
            (31_690_708, 7, 5, 1, 46, 0)
        );
    }
}
