//! InfluxDB line protocol, as `/write` (1.x) and `/api/v2/write` (2.x)
//! accept it, mapped to series the way VictoriaMetrics maps it, so a
//! Telegraf fleet moved from VictoriaMetrics to Cairn keeps its series:
//!
//! ```text
//! measurement[,tag=value...] field=value[,field=value...] [timestamp]
//! ```
//!
//! - One series per field: `__name__` is `{measurement}_{field}`, every tag
//!   is a label as sent, and the request's `db` (1.x query parameter) is the
//!   label `db` unless the line has a tag of that name.
//! - Field values: floats (`1.5`, `-2e3`), integers (`7i`), unsigned
//!   (`7u`), booleans (`t`, `T`, `true`, `True`, `TRUE` → 1; `f`, ... → 0).
//!   String fields (`"..."`) cannot be stored in a time series database of
//!   floats: they are skipped and counted in
//!   [`ImportResult::string_values_skipped`], the line's other fields kept
//!   (VictoriaMetrics stores the number a string holds, or 0).
//! - Escapes as VictoriaMetrics reads them: `\,`, `\ ` and `\\` in
//!   measurements; `\,`, `\=`, `\ ` and `\\` in tag keys, tag values and
//!   field keys (InfluxDB 1.x keeps `\\` as two backslashes); `\"` and `\\`
//!   in string field values. A backslash before any other byte is kept.
//! - A tag with an empty value is no label (VictoriaMetrics drops it too;
//!   InfluxDB refuses the line). Numbers out of float range are refused.
//! - Timestamps: an integer in the request's [`Precision`] (nanoseconds by
//!   default), floored to milliseconds; a line without one gets the request
//!   time.
//! - Blank lines and `#` comments are skipped; a bad line is counted and
//!   skipped, the rest kept (see [`crate::text_import`]).

use cairn_model::{Label, METRIC_NAME, Sample};

use crate::text_import::{ImportResult, finish_labels, lines, truncate};
use crate::{DecodeLimits, SeriesSamples};

/// Unit of the timestamps in a body (`precision` query parameter).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Precision {
    #[default]
    Nanoseconds,
    Microseconds,
    Milliseconds,
    Seconds,
    Minutes,
    Hours,
}

impl Precision {
    /// Reads a `precision` parameter: 1.x spellings (`n`, `ns`, `u`, `µ`,
    /// `ms`, `s`, `m`, `h`) and 2.x ones (`ns`, `us`, `ms`, `s`).
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "" | "n" | "ns" => Self::Nanoseconds,
            "u" | "us" | "µ" | "µs" => Self::Microseconds,
            "ms" => Self::Milliseconds,
            "s" => Self::Seconds,
            "m" => Self::Minutes,
            "h" => Self::Hours,
            _ => return None,
        })
    }

    /// A timestamp in this unit as milliseconds, or `None` on overflow.
    pub fn to_ms(self, t: i64) -> Option<i64> {
        match self {
            Self::Nanoseconds => Some(t.div_euclid(1_000_000)),
            Self::Microseconds => Some(t.div_euclid(1_000)),
            Self::Milliseconds => Some(t),
            Self::Seconds => t.checked_mul(1_000),
            Self::Minutes => t.checked_mul(60_000),
            Self::Hours => t.checked_mul(3_600_000),
        }
    }
}

/// How to read one body.
#[derive(Debug, Clone, Default)]
pub struct InfluxOptions {
    pub precision: Precision,
    /// The 1.x `db` parameter, added as label `db` unless a line has that tag.
    pub db: Option<String>,
    /// Added to every series, replacing sent labels of the same name.
    pub extra_labels: Vec<Label>,
    /// Timestamp (ms) of lines that carry none.
    pub now_ms: i64,
}

/// The label the `db` parameter becomes, as VictoriaMetrics' `-influxDBLabel` default.
pub const DB_LABEL: &str = "db";

/// Decodes a whole (decompressed) body.
pub fn decode_influx(body: &[u8], opts: &InfluxOptions, limits: &DecodeLimits) -> ImportResult {
    let mut out = ImportResult::default();
    let mut fields = Vec::new();
    for (n, line) in lines(body) {
        let line = line.trim_ascii();
        if line.is_empty() || line.starts_with(b"#") {
            continue;
        }
        // Validated once: every token below is cut at ASCII bytes, so it
        // is valid UTF-8 too.
        let Ok(line) = std::str::from_utf8(line) else {
            out.reject(n, "invalid UTF-8");
            continue;
        };
        match read_line(line, opts, limits, &mut fields) {
            Ok(strings_skipped) => {
                out.string_values_skipped += strings_skipped;
                out.batch.extend(fields.drain(..));
            }
            Err(reason) => {
                fields.clear();
                out.reject(n, reason);
            }
        }
    }
    out
}

/// One field's value.
enum FieldValue {
    Number(f64),
    Text,
}

/// Reads one line into `out` (one series per numeric field); returns the
/// number of string fields skipped.
fn read_line(
    line: &str,
    opts: &InfluxOptions,
    limits: &DecodeLimits,
    out: &mut Vec<SeriesSamples>,
) -> Result<usize, String> {
    let (measurement, mut rest) = scan(line, b", ");
    let measurement = unescape(measurement, b", ");
    if measurement.is_empty() {
        return Err("missing measurement".into());
    }
    let mut labels = Vec::new();
    let mut has_db = false;
    while let Some(after) = rest.strip_prefix(',') {
        let (key, after_key) = scan(after, b"=, ");
        let Some(after_eq) = after_key.strip_prefix('=') else {
            return Err(format!("tag {:?} has no value", truncate(key)));
        };
        let (value, after_value) = scan(after_eq, b", ");
        let key = unescape(key, b",= ");
        let value = unescape(value, b",= ");
        if key.is_empty() {
            return Err("empty tag key".into());
        }
        if key == METRIC_NAME {
            return Err(format!("tag key {METRIC_NAME:?} is reserved for the metric name"));
        }
        // An empty value is no label (as everywhere in Cairn, and as
        // VictoriaMetrics stores it); InfluxDB itself refuses the line.
        has_db |= key == DB_LABEL && !value.is_empty();
        labels.push(Label::new(key, value));
        rest = after_value;
    }
    if let Some(db) = &opts.db
        && !has_db
        && !db.is_empty()
    {
        labels.push(Label::new(DB_LABEL, db.as_str()));
    }
    let mut rest = rest.trim_ascii_start();
    if rest.is_empty() {
        return Err("missing fields".into());
    }

    // Fields first (they decide where the timestamp starts), then labels.
    let mut parsed: Vec<(String, FieldValue)> = Vec::new();
    loop {
        let (key, after_key) = scan(rest, b"=, ");
        let Some(after_eq) = after_key.strip_prefix('=') else {
            return Err(format!("field {:?} has no value", truncate(key)));
        };
        let key = unescape(key, b",= ");
        if key.is_empty() {
            return Err("empty field key".into());
        }
        let (value, after_value) = field_value(after_eq).map_err(|e| format!("field {key:?}: {e}"))?;
        parsed.push((key, value));
        match after_value.strip_prefix(',') {
            Some(next) => rest = next,
            None => {
                rest = after_value;
                break;
            }
        }
    }
    let t = match rest.trim_ascii() {
        "" => opts.now_ms,
        ts => {
            let t: i64 = ts
                .parse()
                .map_err(|_| format!("invalid timestamp {:?}", truncate(ts)))?;
            opts.precision
                .to_ms(t)
                .ok_or_else(|| format!("timestamp {t} overflows in precision {:?}", opts.precision))?
        }
    };

    // The measurement stands in for the name while labels are checked once per line.
    labels.push(Label::new(METRIC_NAME, measurement.as_str()));
    let base = finish_labels(labels, &opts.extra_labels, limits)?;
    let name_from_extra = opts.extra_labels.iter().any(|l| l.name == METRIC_NAME);
    let strings = parsed.iter().filter(|(_, v)| matches!(v, FieldValue::Text)).count();
    let numbers = parsed.len() - strings;
    let mut base = Some(base);
    for (i, (field, value)) in parsed
        .into_iter()
        .filter_map(|(f, v)| match v {
            FieldValue::Number(v) => Some((f, v)),
            FieldValue::Text => None,
        })
        .enumerate()
    {
        let mut name = String::with_capacity(measurement.len() + 1 + field.len());
        name.push_str(&measurement);
        name.push('_');
        name.push_str(&field);
        if name.len() > limits.max_label_value_len {
            return Err(format!(
                "metric name of {} bytes exceeds the limit of {}",
                name.len(),
                limits.max_label_value_len
            ));
        }
        // The last field takes the line's labels; the others copy them.
        let mut labels = if i + 1 == numbers {
            base.take().unwrap_or_default()
        } else {
            base.clone().unwrap_or_default()
        };
        if !name_from_extra {
            labels.set(METRIC_NAME, &name);
        }
        out.push(SeriesSamples::new(labels, vec![Sample::new(t, value)]));
    }
    Ok(strings)
}

/// Splits at the first byte of `stops` (all ASCII) that no backslash
/// escapes: the token and the rest, which starts at the stop byte (empty at
/// the end).
fn scan<'a>(s: &'a str, stops: &[u8]) -> (&'a str, &'a str) {
    let mut escaped = false;
    for (i, &b) in s.as_bytes().iter().enumerate() {
        if escaped {
            escaped = false;
        } else if b == b'\\' {
            escaped = true;
        } else if stops.contains(&b) {
            return s.split_at(i);
        }
    }
    (s, "")
}

/// Drops the backslash before a backslash or a byte of `specials` (all
/// ASCII), as VictoriaMetrics reads line protocol; other backslashes stay.
fn unescape(raw: &str, specials: &[u8]) -> String {
    if !raw.contains('\\') {
        return raw.to_string();
    }
    let bytes = raw.as_bytes();
    let mut out = String::with_capacity(raw.len());
    let (mut from, mut i) = (0, 0);
    while let (Some(&b), Some(next)) = (bytes.get(i), bytes.get(i + 1)) {
        if b == b'\\' && (*next == b'\\' || specials.contains(next)) {
            out.push_str(raw.get(from..i).unwrap_or_default());
            // The escaped byte starts the next segment.
            from = i + 1;
            i += 2;
        } else {
            i += 1;
        }
    }
    out.push_str(raw.get(from..).unwrap_or_default());
    out
}

/// One field value at the start of `s`; returns it and the rest, which
/// starts at the `,` or space after it (or is empty).
fn field_value(s: &str) -> Result<(FieldValue, &str), String> {
    if let Some(body) = s.strip_prefix('"') {
        let mut escaped = false;
        for (i, &b) in body.as_bytes().iter().enumerate() {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                let rest = body.get(i + 1..).unwrap_or_default();
                if !(rest.is_empty() || rest.starts_with([',', ' '])) {
                    return Err("want ',' or a space after the closing quote".into());
                }
                return Ok((FieldValue::Text, rest));
            }
        }
        return Err("unterminated string".into());
    }
    let end = s.find([',', ' ']).unwrap_or(s.len());
    let (token, rest) = s.split_at(end);
    let v = number(token).ok_or_else(|| format!("invalid value {:?}", truncate(token)))?;
    Ok((FieldValue::Number(v), rest))
}

fn number(token: &str) -> Option<f64> {
    match token {
        "t" | "T" | "true" | "True" | "TRUE" => return Some(1.0),
        "f" | "F" | "false" | "False" | "FALSE" => return Some(0.0),
        _ => {}
    }
    if let Some(int) = token.strip_suffix('i') {
        return int.parse::<i64>().ok().map(|i| i as f64);
    }
    if let Some(uint) = token.strip_suffix('u') {
        return uint.parse::<u64>().ok().map(|u| u as f64);
    }
    // Digits, sign, point and exponent only: InfluxDB has no NaN or Inf
    // literals (Rust's parser would take "inf" and "nan").
    let plain = !token.is_empty()
        && token
            .bytes()
            .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'-' | b'+' | b'e' | b'E'))
        && token.bytes().any(|b| b.is_ascii_digit());
    if !plain {
        return None;
    }
    // Out of range (`1e500`) is an error, as in InfluxDB, not infinity.
    token.parse::<f64>().ok().filter(|v| v.is_finite())
}

#[cfg(test)]
mod tests;
