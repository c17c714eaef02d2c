//! Request parameters as Prometheus reads them: the query string merged with a
//! form-encoded body, times, durations, limits and `match[]` selectors.

use axum::body::Bytes;
use axum::extract::{FromRequest, Request};
use axum::http::{Method, header};
pub use cairn_model::civil::format_rfc3339;
use cairn_model::civil::{civil_from_days, days_from_civil, days_in_month, parse_rfc3339};

use crate::{ApiError, AppState, ErrorType};

/// The smallest timestamp (ms) the API hands to storage: Prometheus' `MinTime`,
/// the earliest time whose formatting round-trips in Go.
pub const MIN_TIME: i64 = (i64::MIN / 1000 + 62_135_596_801) * 1000;
/// The largest timestamp (ms) the API hands to storage: Prometheus' `MaxTime`.
pub const MAX_TIME: i64 = (i64::MAX / 1000 - 62_135_596_801) * 1000 + 999;

/// What Prometheus prints for `MinTime`/`MaxTime`; clients send these back.
const MIN_TIME_FORMATTED: &str = "-292273086-05-16T16:47:06Z";
const MAX_TIME_FORMATTED: &str = "292277025-08-18T07:12:54.999999999Z";

/// All parameters of a request, like Go's `r.Form`: form-body pairs first,
/// then query-string pairs, repeated keys kept in order.
#[derive(Debug, Clone, Default)]
pub struct Params {
    pairs: Vec<(String, String)>,
}

impl Params {
    /// Parameters from a query string alone (without the leading `?`).
    pub fn from_query(query: &str) -> Self {
        let mut p = Self::default();
        p.extend_encoded(query.as_bytes());
        p
    }

    /// Adds the pairs of an `application/x-www-form-urlencoded` string.
    pub fn extend_encoded(&mut self, encoded: &[u8]) {
        self.pairs
            .extend(form_urlencoded::parse(encoded).map(|(k, v)| (k.into_owned(), v.into_owned())));
    }

    /// Adds one pair (for tests and callers that build parameters by hand).
    pub fn push(&mut self, name: impl Into<String>, value: impl Into<String>) {
        self.pairs.push((name.into(), value.into()));
    }

    /// The first value of `name`, if any and non-empty (Go's `FormValue`,
    /// which treats an empty value as absent for our purposes).
    pub fn get(&self, name: &str) -> Option<&str> {
        self.pairs
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
            .filter(|v| !v.is_empty())
    }

    /// Every pair, in order.
    pub fn pairs(&self) -> &[(String, String)] {
        &self.pairs
    }

    /// Every value of `name`, in order (e.g. all `match[]`).
    pub fn get_all(&self, name: &str) -> Vec<&str> {
        self.pairs
            .iter()
            .filter(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
            .collect()
    }
}

/// `partial_response`: whether an answer may leave out data that cannot be
/// reached (nodes of a cluster down), with a warning, instead of failing.
pub fn read_options(params: &Params) -> Result<cairn_storage::ReadOptions, ApiError> {
    let partial_response = match params.get("partial_response") {
        None | Some("") | Some("false") | Some("0") => false,
        Some("true") | Some("1") => true,
        Some(other) => {
            return Err(invalid_param(
                "partial_response",
                format!("cannot parse {other:?} as a boolean"),
            ));
        }
    };
    Ok(cairn_storage::ReadOptions {
        partial_response,
        ..cairn_storage::ReadOptions::default()
    })
}

/// Reads the query string and, for requests with a body, the form-encoded body.
/// The body is bounded by the router's body limit (413 past it).
impl FromRequest<AppState> for Params {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &AppState) -> Result<Self, Self::Rejection> {
        let query = req.uri().query().unwrap_or("").to_string();
        let is_form = req
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|ct| {
                ct.trim_start()
                    .to_ascii_lowercase()
                    .starts_with("application/x-www-form-urlencoded")
            });
        let has_body = !matches!(*req.method(), Method::GET | Method::HEAD);
        let mut params = Params::default();
        if has_body && is_form {
            let body = read_body(req, state).await?;
            params.extend_encoded(&body);
        }
        params.extend_encoded(query.as_bytes());
        Ok(params)
    }
}

/// Reads a whole request body under the router's body limit, mapping an
/// oversized body to 413 and other read failures to 400.
pub async fn read_body(req: Request, state: &AppState) -> Result<Bytes, ApiError> {
    Bytes::from_request(req, state).await.map_err(|rejection| {
        let status = rejection.status();
        if status == axum::http::StatusCode::PAYLOAD_TOO_LARGE {
            ApiError::new(
                ErrorType::TooLarge,
                format!(
                    "request body too large: the limit is {} bytes",
                    state.config().max_request_body_bytes
                ),
            )
        } else {
            ApiError::bad_data(format!("cannot read request body: {}", rejection.body_text()))
        }
    })
}

/// Parses a Prometheus time: float Unix seconds (rounded to the millisecond)
/// or RFC 3339 with optional fraction and `Z` or `±hh:mm` offset. Returns
/// milliseconds, clamped to [`MIN_TIME`], [`MAX_TIME`].
pub fn parse_time(s: &str) -> Result<i64, String> {
    let err = || format!("cannot parse {s:?} to a valid timestamp");
    if let Ok(f) = s.parse::<f64>()
        && s.bytes().all(|b| b.is_ascii_digit() || b"+-.eE".contains(&b))
    {
        if !f.is_finite() {
            return Err(err());
        }
        let secs = f.trunc();
        let ms = (f - secs) * 1000.0;
        let total = secs * 1000.0 + ms.round();
        return Ok(if total >= MAX_TIME as f64 {
            MAX_TIME
        } else if total <= MIN_TIME as f64 {
            MIN_TIME
        } else {
            total as i64
        });
    }
    if s == MIN_TIME_FORMATTED {
        return Ok(MIN_TIME);
    }
    if s == MAX_TIME_FORMATTED {
        return Ok(MAX_TIME);
    }
    parse_rfc3339(s).map(|ms| ms.clamp(MIN_TIME, MAX_TIME)).ok_or_else(err)
}

/// A time as Go's `time.Time` marshals to JSON (RFC 3339 with up to nine
/// fraction digits, trailing zeros dropped), in UTC.
/// `YYYYMMDD-HH:MM:SS` (UTC) of `secs` since the epoch: the form of
/// Prometheus' build date.
pub fn format_build_date(secs: i64) -> String {
    let (y, mo, d) = civil_from_days(secs.div_euclid(86_400));
    let rem = secs.rem_euclid(86_400);
    format!(
        "{y:04}{mo:02}{d:02}-{:02}:{:02}:{:02}",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

/// Go's `strconv.ParseBool`.
pub fn parse_bool(s: &str) -> Option<bool> {
    match s {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}

/// A duration in ms as Prometheus prints one (`model.Duration.String`):
/// `31d`, `1h30m`, `2w`, `1y`, `0s`; years and weeks only when exact.
pub fn format_duration(ms: i64) -> String {
    if ms == 0 {
        return "0s".into();
    }
    let mut ms = ms;
    let mut out = String::new();
    if ms < 0 {
        out.push('-');
        ms = ms.saturating_neg();
    }
    const UNITS: [(&str, i64, bool); 7] = [
        ("y", 365 * 86_400_000, true),
        ("w", 7 * 86_400_000, true),
        ("d", 86_400_000, false),
        ("h", 3_600_000, false),
        ("m", 60_000, false),
        ("s", 1000, false),
        ("ms", 1, false),
    ];
    for (unit, mult, exact) in UNITS {
        if exact && ms % mult != 0 {
            continue;
        }
        let v = ms / mult;
        if v > 0 {
            out.push_str(&format!("{v}{unit}"));
            ms -= v * mult;
        }
    }
    out
}

/// Parses a `YYYY-MM-DD` date to the millisecond range of that UTC day.
pub fn parse_date(s: &str) -> Option<(i64, i64)> {
    let b = s.as_bytes();
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return None;
    }
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        let part = &s[r];
        part.bytes().all(|c| c.is_ascii_digit()).then(|| part.parse().ok())?
    };
    let (year, month, day) = (num(0..4)?, num(5..7)?, num(8..10)?);
    if !(1..=12).contains(&month) || day < 1 || day > days_in_month(year, month) {
        return None;
    }
    let start = days_from_civil(year, month, day) * 86_400_000;
    Some((start, start + 86_400_000 - 1))
}

/// Parses a Prometheus duration: float seconds or `1h30m`-style units
/// (`ms s m h d w y`, largest first, each once). Returns milliseconds.
pub fn parse_duration(s: &str) -> Result<i64, String> {
    let err = || format!("cannot parse {s:?} to a valid duration");
    if let Ok(f) = s.parse::<f64>()
        && s.bytes().all(|b| b.is_ascii_digit() || b"+-.eE".contains(&b))
    {
        let ms = (f * 1000.0).round();
        if !ms.is_finite() || ms >= i64::MAX as f64 || ms <= i64::MIN as f64 {
            return Err(format!("cannot parse {s:?} to a valid duration. It overflows int64"));
        }
        return Ok(ms as i64);
    }
    const UNITS: [(&str, i64); 7] = [
        ("y", 365 * 86_400_000),
        ("w", 7 * 86_400_000),
        ("d", 86_400_000),
        ("h", 3_600_000),
        ("m", 60_000),
        ("s", 1000),
        ("ms", 1),
    ];
    let mut rest = s;
    let mut total: i64 = 0;
    let mut last_unit = usize::MAX;
    if rest.is_empty() {
        return Err(err());
    }
    while !rest.is_empty() {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return Err(err());
        }
        let n: i64 = rest[..digits].parse().map_err(|_| err())?;
        rest = &rest[digits..];
        let letters = rest.bytes().take_while(u8::is_ascii_alphabetic).count();
        let unit = &rest[..letters];
        rest = &rest[letters..];
        let idx = UNITS.iter().position(|(u, _)| *u == unit).ok_or_else(err)?;
        if last_unit != usize::MAX && idx <= last_unit {
            return Err(err());
        }
        last_unit = idx;
        total = n
            .checked_mul(UNITS[idx].1)
            .and_then(|v| total.checked_add(v))
            .ok_or_else(err)?;
    }
    Ok(total)
}

/// Wraps a parameter error the way Prometheus' `invalidParamError` does.
pub fn invalid_param(name: &str, err: impl std::fmt::Display) -> ApiError {
    ApiError::bad_data(format!("invalid parameter {name:?}: {err}"))
}

/// The time parameter `name`, or `default` when absent.
pub fn time_param(params: &Params, name: &str, default: i64) -> Result<i64, ApiError> {
    match params.get(name) {
        None => Ok(default),
        Some(v) => parse_time(v).map_err(|e| invalid_param(name, format!("Invalid time value for '{name}': {e}"))),
    }
}

/// `start` and `end` with defaults, rejecting an end before the start.
pub fn time_range(params: &Params, default_start: i64, default_end: i64) -> Result<(i64, i64), ApiError> {
    let start = time_param(params, "start", default_start)?;
    let end = time_param(params, "end", default_end)?;
    if end < start {
        return Err(invalid_param("end", "end timestamp must not be before start time"));
    }
    Ok((start, end))
}

/// The `limit` parameter: absent or `0` means no limit; negative or garbage is bad data.
pub fn limit_param(params: &Params) -> Result<Option<usize>, ApiError> {
    let Some(v) = params.get("limit") else {
        return Ok(None);
    };
    let n: i64 = v
        .parse()
        .map_err(|_| invalid_param("limit", format!("cannot parse {v:?} to a valid limit")))?;
    if n < 0 {
        return Err(invalid_param("limit", "limit must be non-negative"));
    }
    Ok(usize::try_from(n).ok().filter(|&n| n > 0))
}

/// Undoes Prometheus 3's `U__` escaping of UTF-8 label names in URL paths
/// (`U__` then literal chars, `__` for `_`, `_hex_` for a code point).
/// Names without the prefix, or with a malformed escape, are returned as is.
pub fn unescape_label_name(name: &str) -> String {
    let Some(escaped) = name.strip_prefix("U__") else {
        return name.to_string();
    };
    let mut out = String::with_capacity(escaped.len());
    let mut chars = escaped.chars();
    while let Some(c) = chars.next() {
        if c != '_' {
            out.push(c);
            continue;
        }
        match chars.next() {
            None => return name.to_string(),
            Some('_') => out.push('_'),
            Some(first) => {
                let mut code: u32 = 0;
                let mut digit = Some(first);
                let mut count = 0;
                loop {
                    let Some(d) = digit else {
                        return name.to_string(); // no closing underscore
                    };
                    if d == '_' {
                        break;
                    }
                    count += 1;
                    let Some(v) = d.to_digit(16).filter(|_| count <= 6) else {
                        return name.to_string();
                    };
                    code = code * 16 + v;
                    digit = chars.next();
                }
                match char::from_u32(code) {
                    Some(ch) => out.push(ch),
                    None => return name.to_string(),
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {

    #[test]
    fn build_dates_are_written_as_prometheus_writes_them() {
        for (secs, want) in [
            (0, "19700101-00:00:00"),
            (1_795_717_233, "20261126-18:20:33"),
            (951_782_400, "20000229-00:00:00"),
            (4_107_542_399, "21000228-23:59:59"),
        ] {
            assert_eq!(format_build_date(secs), want);
        }
    }
    use super::*;

    #[test]
    fn min_max_time_match_prometheus() {
        assert_eq!(MIN_TIME, -9_223_309_901_257_974_000);
        assert_eq!(MAX_TIME, 9_223_309_901_257_974_999);
        assert_eq!(parse_time(MIN_TIME_FORMATTED), Ok(MIN_TIME));
        assert_eq!(parse_time(MAX_TIME_FORMATTED), Ok(MAX_TIME));
    }

    #[test]
    fn float_times() {
        assert_eq!(parse_time("1700000000"), Ok(1_700_000_000_000));
        assert_eq!(parse_time("1700000000.123"), Ok(1_700_000_000_123));
        assert_eq!(parse_time("1700000000.1236"), Ok(1_700_000_000_124));
        assert_eq!(parse_time("-1.5"), Ok(-1500));
        assert_eq!(parse_time("0"), Ok(0));
        assert_eq!(parse_time("1e3"), Ok(1_000_000));
        assert_eq!(parse_time("1e300"), Ok(MAX_TIME));
        assert_eq!(parse_time("-1e300"), Ok(MIN_TIME));
    }

    #[test]
    fn rfc3339_times() {
        assert_eq!(parse_time("1970-01-01T00:00:00Z"), Ok(0));
        assert_eq!(parse_time("2023-11-14T22:13:20Z"), Ok(1_700_000_000_000));
        assert_eq!(parse_time("2023-11-14T22:13:20.5Z"), Ok(1_700_000_000_500));
        assert_eq!(parse_time("2023-11-14T22:13:20.123456789Z"), Ok(1_700_000_000_123));
        assert_eq!(parse_time("2023-11-15T00:13:20+02:00"), Ok(1_700_000_000_000));
        assert_eq!(parse_time("2023-11-14T17:43:20.25-04:30"), Ok(1_700_000_000_250));
        assert_eq!(parse_time("1969-12-31T23:59:59.5Z"), Ok(-500));
        assert_eq!(parse_time("2024-02-29T00:00:00Z"), Ok(1_709_164_800_000));
    }

    #[test]
    fn garbage_times_are_rejected() {
        for s in [
            "",
            "foo",
            "NaN",
            "inf",
            "2023-02-29T00:00:00Z",
            "2023-11-14 22:13:20Z",
            "2023-11-14T22:13:20",
            "2023-11-14T25:13:20Z",
            "2023-11-14T22:13:20.Z",
            "2023-11-14T22:13:20+2:00",
            "2023-11-14T22:13:20Zjunk",
            "2023-1-14T22:13:20Z",
        ] {
            assert!(parse_time(s).is_err(), "{s:?} should be rejected");
        }
        assert_eq!(
            parse_time("foo").unwrap_err(),
            r#"cannot parse "foo" to a valid timestamp"#
        );
    }

    #[test]
    fn formatted_durations() {
        assert_eq!(format_duration(31 * 86_400_000), "31d");
        assert_eq!(format_duration(14 * 86_400_000), "2w");
        assert_eq!(format_duration(365 * 86_400_000), "1y");
        assert_eq!(format_duration(90 * 86_400_000), "90d");
        assert_eq!(format_duration(5_400_000), "1h30m");
        assert_eq!(format_duration(120_000), "2m");
        assert_eq!(format_duration(1_500), "1s500ms");
        assert_eq!(format_duration(0), "0s");
        assert_eq!(parse_duration(&format_duration(93_784_005)), Ok(93_784_005));
    }

    #[test]
    fn dates() {
        assert_eq!(parse_date("1970-01-02"), Some((86_400_000, 172_799_999)));
        assert_eq!(parse_date("1970-13-02"), None);
        assert_eq!(parse_date("19700102"), None);
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("15"), Ok(15_000));
        assert_eq!(parse_duration("0.5"), Ok(500));
        assert_eq!(parse_duration("1h30m"), Ok(5_400_000));
        assert_eq!(parse_duration("5m"), Ok(300_000));
        assert_eq!(parse_duration("100ms"), Ok(100));
        assert_eq!(parse_duration("1d"), Ok(86_400_000));
        assert!(parse_duration("30m1h").is_err());
        assert!(parse_duration("1x").is_err());
        assert!(parse_duration("").is_err());
        assert!(parse_duration("h").is_err());
        assert!(parse_duration("1e30").is_err());
    }

    #[test]
    fn params_merge_body_then_query() {
        let mut p = Params::default();
        p.extend_encoded(b"match%5B%5D=up&start=1");
        p.extend_encoded(b"match[]=down&start=2&end=");
        assert_eq!(p.get_all("match[]"), vec!["up", "down"]);
        assert_eq!(p.get("start"), Some("1"));
        assert_eq!(p.get("end"), None);
    }

    #[test]
    fn limits() {
        let lim = |q: &str| limit_param(&Params::from_query(q));
        assert_eq!(lim(""), Ok(None));
        assert_eq!(lim("limit=0"), Ok(None));
        assert_eq!(lim("limit=5"), Ok(Some(5)));
        assert!(lim("limit=-1").is_err());
        assert!(lim("limit=x").is_err());
    }

    #[test]
    fn label_name_unescaping() {
        assert_eq!(unescape_label_name("job"), "job");
        assert_eq!(unescape_label_name("U__a__b"), "a_b");
        assert_eq!(unescape_label_name("U__a_2e_b"), "a.b");
        assert_eq!(unescape_label_name("U___1f600_"), "\u{1f600}");
        // Malformed escapes are left alone.
        assert_eq!(unescape_label_name("U__a_zz_"), "U__a_zz_");
        assert_eq!(unescape_label_name("U__a_2e"), "U__a_2e");
        assert_eq!(unescape_label_name("U__a_1234567_"), "U__a_1234567_");
    }
}
