//! CSV import as VictoriaMetrics defines it (`/api/v1/import/csv?format=...`).
//!
//! `format` is a comma-separated list of `<column>:<type>:<context>`, where
//! `<column>` is the 1-based column number and `<type>` is one of
//!
//! - `metric`: the column holds a value of the metric named `<context>`;
//! - `label`: the column holds the value of label `<context>`;
//! - `time`: the column holds the sample time, `<context>` is `unix_s`
//!   (seconds, fractions allowed), `unix_ms`, `unix_ns` or `rfc3339`.
//!   (`custom:<Go layout>` is refused with a clear error.)
//!
//! Every row yields one sample per `metric` column, all with the row's
//! labels and time (now when there is no `time` column). Empty metric cells
//! are skipped. Fields may be double-quoted (`""` inside is one quote).
//! A bad row is counted and skipped (see [`crate::text_import`]).

use cairn_model::civil::days_from_civil;
use cairn_model::{Label, Sample};

use crate::text_import::{BodyError, ImportResult, finish_labels, lines};
use crate::{DecodeLimits, SeriesSamples};

/// How to read one column.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ColumnKind {
    Metric(String),
    Label(String),
    Time(TimeFormat),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeFormat {
    UnixS,
    UnixMs,
    UnixNs,
    Rfc3339,
}

/// One entry of `format`: a 0-based column index and what it holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Column {
    pub index: usize,
    pub kind: ColumnKind,
}

/// Parses the `format` query arg.
pub fn parse_format(format: &str) -> Result<Vec<Column>, BodyError> {
    let bad = |why: String| {
        BodyError::BadFormat(format!(
            "invalid format {:?}: {why}",
            format.chars().take(256).collect::<String>()
        ))
    };
    let mut columns = Vec::new();
    for entry in format.split(',') {
        let mut parts = entry.splitn(3, ':');
        let (Some(col), Some(kind), Some(context)) = (parts.next(), parts.next(), parts.next()) else {
            return Err(bad(format!("{entry:?} is not <column>:<type>:<context>")));
        };
        let index: usize = col
            .parse()
            .ok()
            .filter(|&n| (1..=10_000).contains(&n))
            .ok_or_else(|| bad(format!("column {col:?} is not a number from 1")))?;
        let kind = match kind {
            "metric" | "label" if context.is_empty() => {
                return Err(bad(format!("{entry:?} needs a name after the type")));
            }
            "metric" => ColumnKind::Metric(context.to_string()),
            "label" => ColumnKind::Label(context.to_string()),
            "time" => ColumnKind::Time(match context {
                "unix_s" => TimeFormat::UnixS,
                "unix_ms" => TimeFormat::UnixMs,
                "unix_ns" => TimeFormat::UnixNs,
                "rfc3339" => TimeFormat::Rfc3339,
                c if c.starts_with("custom:") => {
                    return Err(bad(
                        "custom time layouts are not supported; use unix_s, unix_ms, unix_ns or rfc3339".into(),
                    ));
                }
                c => return Err(bad(format!("unknown time format {c:?}"))),
            }),
            other => {
                return Err(bad(format!(
                    "unknown column type {other:?}: want metric, label or time"
                )));
            }
        };
        columns.push(Column { index: index - 1, kind });
    }
    if !columns.iter().any(|c| matches!(c.kind, ColumnKind::Metric(_))) {
        return Err(bad("no metric column".into()));
    }
    if columns.iter().filter(|c| matches!(c.kind, ColumnKind::Time(_))).count() > 1 {
        return Err(bad("more than one time column".into()));
    }
    Ok(columns)
}

/// Decodes a whole (decompressed) body with `columns` from [`parse_format`].
pub fn decode_csv(
    body: &[u8],
    columns: &[Column],
    extra: &[Label],
    now_ms: i64,
    limits: &DecodeLimits,
) -> ImportResult {
    let mut out = ImportResult::default();
    let mut fields = Vec::new();
    for (n, line) in lines(body) {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let Ok(line) = std::str::from_utf8(line) else {
            out.reject(n, "invalid UTF-8");
            continue;
        };
        if let Err(reason) =
            split_fields(line, &mut fields).and_then(|()| read_row(&fields, columns, extra, now_ms, limits, &mut out))
        {
            out.reject(n, reason);
        }
    }
    out
}

fn read_row(
    fields: &[String],
    columns: &[Column],
    extra: &[Label],
    now_ms: i64,
    limits: &DecodeLimits,
    out: &mut ImportResult,
) -> Result<(), String> {
    let field = |c: &Column| {
        fields
            .get(c.index)
            .map(String::as_str)
            .ok_or_else(|| format!("missing column {}: the row has {}", c.index + 1, fields.len()))
    };
    let mut labels = Vec::new();
    let mut t = now_ms;
    for c in columns {
        match &c.kind {
            ColumnKind::Label(name) => labels.push(Label::new(name.as_str(), field(c)?)),
            ColumnKind::Time(format) => t = parse_time(field(c)?, *format)?,
            ColumnKind::Metric(_) => {}
        }
    }
    let mut row = Vec::new();
    for c in columns {
        let ColumnKind::Metric(name) = &c.kind else { continue };
        let cell = field(c)?.trim();
        if cell.is_empty() {
            continue;
        }
        let v: f64 = cell.parse().map_err(|_| {
            format!(
                "column {}: invalid value {:?}",
                c.index + 1,
                cell.chars().take(64).collect::<String>()
            )
        })?;
        let mut series_labels = labels.clone();
        series_labels.push(Label::new("__name__", name.as_str()));
        let series_labels = finish_labels(series_labels, extra, limits)?;
        row.push(SeriesSamples::new(series_labels, vec![Sample::new(t, v)]));
    }
    out.batch.extend(row);
    Ok(())
}

fn parse_time(s: &str, format: TimeFormat) -> Result<i64, String> {
    let s = s.trim();
    let bad = || {
        format!(
            "invalid time {:?} for {format:?}",
            s.chars().take(64).collect::<String>()
        )
    };
    let scaled = |per_ms: f64| -> Result<i64, String> {
        let x: f64 = s.parse().map_err(|_| bad())?;
        let ms = (x * per_ms).round();
        if !ms.is_finite() || ms.abs() > 9.2e18 {
            return Err(bad());
        }
        Ok(ms as i64)
    };
    match format {
        TimeFormat::UnixS => scaled(1000.0),
        TimeFormat::UnixMs => s.parse::<i64>().or_else(|_| scaled(1.0)),
        TimeFormat::UnixNs => s.parse::<i64>().map(|ns| ns.div_euclid(1_000_000)).map_err(|_| bad()),
        TimeFormat::Rfc3339 => rfc3339_ms(s).ok_or_else(bad),
    }
}

/// `2006-01-02T15:04:05[.fff...](Z|±hh:mm)` → ms.
fn rfc3339_ms(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    let num = |r: std::ops::Range<usize>| -> Option<i64> { std::str::from_utf8(b.get(r)?).ok()?.parse().ok() };
    if b.len() < 20
        || b.get(4) != Some(&b'-')
        || b.get(7) != Some(&b'-')
        || !matches!(b.get(10), Some(b'T' | b't' | b' '))
    {
        return None;
    }
    let (year, month, day) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (hour, minute, second) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if b.get(13) != Some(&b':')
        || b.get(16) != Some(&b':')
        || !(1..=12).contains(&month)
        || !(1..=31).contains(&day)
        || hour > 23
        || minute > 59
        || second > 60
    {
        return None;
    }
    let mut i = 19;
    let mut frac_ms = 0i64;
    if b.get(i) == Some(&b'.') {
        i += 1;
        let start = i;
        while b.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        let digits = b.get(start..i)?;
        if digits.is_empty() {
            return None;
        }
        for k in 0..3 {
            frac_ms = frac_ms * 10 + digits.get(k).map_or(0, |d| i64::from(d - b'0'));
        }
    }
    let offset_secs = match b.get(i..)? {
        [b'Z' | b'z'] => 0,
        [sign @ (b'+' | b'-'), h1, h2, b':', m1, m2] => {
            let d = |x: &u8| i64::from(x.wrapping_sub(b'0'));
            if ![h1, h2, m1, m2].iter().all(|x| x.is_ascii_digit()) {
                return None;
            }
            let secs = (d(h1) * 10 + d(h2)) * 3600 + (d(m1) * 10 + d(m2)) * 60;
            if *sign == b'+' { secs } else { -secs }
        }
        _ => return None,
    };
    let days = days_from_civil(year, month, day);
    let secs = days * 86_400 + hour * 3600 + minute * 60 + second - offset_secs;
    Some(secs * 1000 + frac_ms)
}

/// Splits one CSV line into `fields` (RFC 4180 quoting within the line).
fn split_fields(line: &str, fields: &mut Vec<String>) -> Result<(), String> {
    fields.clear();
    let mut chars = line.chars().peekable();
    loop {
        let mut field = String::new();
        if chars.peek() == Some(&'"') {
            chars.next();
            loop {
                match chars.next() {
                    Some('"') if chars.peek() == Some(&'"') => {
                        chars.next();
                        field.push('"');
                    }
                    Some('"') => break,
                    Some(c) => field.push(c),
                    None => return Err("unterminated quoted field".into()),
                }
            }
            match chars.next() {
                None => {
                    fields.push(field);
                    return Ok(());
                }
                Some(',') => fields.push(field),
                Some(c) => return Err(format!("unexpected {c:?} after a quoted field")),
            }
        } else {
            loop {
                match chars.next() {
                    None => {
                        fields.push(field);
                        return Ok(());
                    }
                    Some(',') => break,
                    Some(c) => field.push(c),
                }
            }
            fields.push(field);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cairn_model::Labels;

    const NOW: i64 = 1_700_000_000_000;

    fn decode(format: &str, body: &str) -> ImportResult {
        let columns = parse_format(format).unwrap();
        decode_csv(body.as_bytes(), &columns, &[], NOW, &DecodeLimits::default())
    }

    #[test]
    fn victoriametrics_docs_example() {
        let r = decode(
            "2:metric:ask,3:metric:bid,1:label:ticker,4:label:market",
            "GOOG,1.23,4.56,NYSE\nMSFT,3.21,1.67,NASDAQ\n",
        );
        assert_eq!(r.bad_lines, 0, "{:?}", r.first_error);
        let got: Vec<(Labels, Vec<Sample>)> = r.batch.to_series().into_iter().map(|s| (s.labels, s.samples)).collect();
        let want = |n: &str, t: &str, m: &str, v: f64| {
            (
                Labels::from_pairs([("__name__", n), ("market", m), ("ticker", t)]),
                vec![Sample::new(NOW, v)],
            )
        };
        assert_eq!(
            got,
            vec![
                want("ask", "GOOG", "NYSE", 1.23),
                want("bid", "GOOG", "NYSE", 4.56),
                want("ask", "MSFT", "NASDAQ", 3.21),
                want("bid", "MSFT", "NASDAQ", 1.67),
            ]
        );
    }

    #[test]
    fn time_formats() {
        for (format, cell, t) in [
            ("unix_s", "1700000000", 1_700_000_000_000),
            ("unix_s", "1700000000.5", 1_700_000_000_500),
            ("unix_ms", "1700000000123", 1_700_000_000_123),
            ("unix_ns", "1700000000123456789", 1_700_000_000_123),
            ("unix_ns", "-1500000", -2),
            ("rfc3339", "2023-11-14T22:13:20Z", 1_700_000_000_000),
            ("rfc3339", "2023-11-14T22:13:20.123456Z", 1_700_000_000_123),
            ("rfc3339", "2023-11-15T00:13:20+02:00", 1_700_000_000_000),
            ("rfc3339", "1969-12-31T23:59:59Z", -1000),
        ] {
            let r = decode(&format!("1:time:{format},2:metric:m"), &format!("{cell},1\n"));
            assert_eq!(r.first_error, None, "{format} {cell}");
            assert_eq!(r.batch.to_series()[0].samples[0].t, t, "{format} {cell}");
        }
        for (format, cell) in [
            ("unix_s", "x"),
            ("unix_ns", "1.5"),
            ("rfc3339", "2023-11-14"),
            ("rfc3339", "2023-13-14T22:13:20Z"),
        ] {
            let r = decode(&format!("1:time:{format},2:metric:m"), &format!("{cell},1\n"));
            assert!(
                r.first_error.unwrap().reason.contains("invalid time"),
                "{format} {cell}"
            );
        }
    }

    #[test]
    fn quoting_empty_cells_and_bad_rows() {
        let r = decode(
            "1:label:name,2:metric:a,3:metric:b",
            "\"x, \"\"y\"\"\",1,\nplain,,2\n\"open,1,2\nshort\nz,abc,1\n\"q\"x,1,1\n",
        );
        assert_eq!(r.batch.series_count(), 2);
        assert_eq!(r.batch.to_series()[0].labels.get("name"), Some("x, \"y\""));
        assert_eq!(r.batch.to_series()[1].labels.get("__name__"), Some("b"));
        assert_eq!(r.bad_lines, 4);
        let first = r.first_error.unwrap();
        assert_eq!((first.line, first.reason.as_str()), (3, "unterminated quoted field"));
        let r = decode_csv(
            b"\xff,1\n",
            &parse_format("2:metric:m").unwrap(),
            &[],
            NOW,
            &DecodeLimits::default(),
        );
        assert_eq!(r.bad_lines, 1);
        assert_eq!(decode("1:metric:m", ""), ImportResult::default());
    }

    #[test]
    fn formats() {
        assert_eq!(
            parse_format("1:time:unix_ms,3:metric:m").unwrap(),
            vec![
                Column {
                    index: 0,
                    kind: ColumnKind::Time(TimeFormat::UnixMs)
                },
                Column {
                    index: 2,
                    kind: ColumnKind::Metric("m".into())
                },
            ]
        );
        for (format, why) in [
            ("", "not <column>"),
            ("1:label:x", "no metric column"),
            ("0:metric:m", "not a number"),
            ("x:metric:m", "not a number"),
            ("1:metric:", "needs a name"),
            ("1:foo:m", "unknown column type"),
            ("1:time:unix_h,2:metric:m", "unknown time format"),
            ("1:time:custom:2006,2:metric:m", "custom time layouts"),
            ("1:time:unix_s,2:time:unix_s,3:metric:m", "more than one time"),
        ] {
            let err = parse_format(format).unwrap_err().to_string();
            assert!(err.contains(why), "{format}: {err}");
        }
    }
}
