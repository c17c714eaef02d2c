//! OpenTSDB's two write forms, as OpenTSDB 2.x and TickTockDB accept them:
//!
//! - Telnet-style lines on a TCP connection:
//!   `put <metric> <timestamp> <value> [<tagk>=<tagv> ...]`, plus the
//!   `version` command that collectors (tcollector) send as a heartbeat.
//! - `POST /api/put`: one JSON data point or an array of them,
//!   `{"metric":"sys.cpu","timestamp":1700000000,"value":42.5,"tags":{"host":"a"}}`.
//!
//! The metric is `__name__` and the tags are labels; unlike OpenTSDB, a data
//! point without tags is accepted (as VictoriaMetrics does). Timestamps are
//! Unix seconds or milliseconds, told apart as OpenTSDB does (values that do
//! not fit in 32 bits are milliseconds); a fraction means seconds. Values are
//! integers or floats (a JSON value may also be a numeric string); NaN and
//! infinities are refused, as OpenTSDB refuses them. A bad line or data point
//! is counted and skipped, the rest kept (see [`crate::text_import`]).

use cairn_model::{Label, METRIC_NAME, Sample};
use serde_json::Value;

use crate::text_import::{ImportResult, finish_labels, lines, seconds_to_ms, truncate};
use crate::{DecodeLimits, SeriesSamples};

/// What the telnet protocol answers: OpenTSDB writes nothing back for a
/// good `put`, an error line for a bad one, and a version for `version`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TelnetReply {
    /// The text of an error line (without the newline).
    Error(String),
    /// The connection asked for the server version.
    Version,
}

/// The outcome of a run of telnet lines.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TelnetResult {
    pub import: ImportResult,
    /// Answers owed to the client, in line order.
    pub replies: Vec<TelnetReply>,
}

/// Decodes a run of complete telnet lines.
pub fn decode_telnet(body: &[u8], limits: &DecodeLimits) -> TelnetResult {
    let mut out = TelnetResult::default();
    for (n, line) in lines(body) {
        let Ok(line) = std::str::from_utf8(line) else {
            out.import.reject(n, "invalid UTF-8");
            out.replies.push(TelnetReply::Error("put: invalid UTF-8".into()));
            continue;
        };
        let mut tokens = line.split_ascii_whitespace();
        match tokens.next() {
            None => {}
            Some("put") => match read_put(tokens, limits) {
                Ok(series) => out.import.batch.extend([series]),
                Err(reason) => {
                    out.replies.push(TelnetReply::Error(format!("put: {reason}")));
                    out.import.reject(n, reason);
                }
            },
            Some("version") => out.replies.push(TelnetReply::Version),
            Some(other) => {
                let reason = format!("unknown command: {}", truncate(other));
                out.replies.push(TelnetReply::Error(format!("{reason}.  Try `put'.")));
                out.import.reject(n, reason);
            }
        }
    }
    out
}

fn read_put<'a>(mut tokens: impl Iterator<Item = &'a str>, limits: &DecodeLimits) -> Result<SeriesSamples, String> {
    let (Some(metric), Some(ts), Some(value)) = (tokens.next(), tokens.next(), tokens.next()) else {
        return Err("want put <metric> <timestamp> <value> [<tagk>=<tagv> ...]".into());
    };
    let t = timestamp_ms(ts)?;
    let v = value_of(value)?;
    let mut labels = vec![Label::new(METRIC_NAME, metric)];
    for tag in tokens {
        let Some((k, v)) = tag.split_once('=') else {
            return Err(format!("tag {:?} is not tagk=tagv", truncate(tag)));
        };
        if k.is_empty() || v.is_empty() {
            return Err(format!("tag {:?} has an empty key or value", truncate(tag)));
        }
        labels.push(Label::new(k, v));
    }
    let labels = finish_labels(labels, &[], limits)?;
    Ok(SeriesSamples::new(labels, vec![Sample::new(t, v)]))
}

/// Seconds, or milliseconds when the integer needs more than 32 bits; a
/// fraction means seconds.
fn timestamp_ms(ts: &str) -> Result<i64, String> {
    let bad = || format!("invalid timestamp {:?}", truncate(ts));
    if let Ok(t) = ts.parse::<i64>() {
        return match t {
            ..0 => Err(bad()),
            0..=0xFFFF_FFFF => Ok(t * 1000),
            _ => Ok(t),
        };
    }
    // A fraction is only read after seconds (`1700000000.5`), as OpenTSDB.
    let whole = ts.split('.').next().unwrap_or_default();
    if !ts.bytes().all(|b| b.is_ascii_digit() || b == b'.') || whole.parse::<u64>().map_or(true, |s| s > 0xFFFF_FFFF) {
        return Err(bad());
    }
    seconds_to_ms(ts).ok_or_else(bad)
}

fn value_of(value: &str) -> Result<f64, String> {
    let bad = || format!("invalid value {:?}", truncate(value));
    let plain = value
        .bytes()
        .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'-' | b'+' | b'e' | b'E'));
    if !plain {
        return Err(bad());
    }
    let v: f64 = value.parse().map_err(|_| bad())?;
    if v.is_finite() { Ok(v) } else { Err(bad()) }
}

/// The outcome of one `/api/put` body.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PutResult {
    pub import: ImportResult,
    /// Every refused data point as sent, with its reason (for `?details`).
    pub errors: Vec<(Value, String)>,
    /// Data points stored.
    pub success: usize,
}

/// Decodes a `/api/put` body: one data point object or an array of them.
/// A body that is not JSON at all is one bad "line" with nothing stored.
pub fn decode_put(body: &[u8], limits: &DecodeLimits) -> PutResult {
    let mut out = PutResult::default();
    let points = match serde_json::from_slice::<Value>(body) {
        Ok(Value::Array(points)) => points,
        Ok(point @ Value::Object(_)) => vec![point],
        Ok(_) => {
            out.import.reject(1, "want a data point object or an array of them");
            return out;
        }
        Err(e) => {
            out.import.reject(1, format!("invalid JSON: {e}"));
            return out;
        }
    };
    for (i, point) in points.into_iter().enumerate() {
        match read_point(&point, limits) {
            Ok(series) => {
                out.success += 1;
                out.import.batch.extend([series]);
            }
            Err(reason) => {
                out.import.reject(i + 1, reason.clone());
                out.errors.push((point, reason));
            }
        }
    }
    out
}

fn read_point(point: &Value, limits: &DecodeLimits) -> Result<SeriesSamples, String> {
    let Value::Object(obj) = point else {
        return Err("want a data point object".into());
    };
    let metric = match obj.get("metric") {
        Some(Value::String(m)) if !m.is_empty() => m,
        _ => return Err("missing or empty \"metric\"".into()),
    };
    let t = match obj.get("timestamp") {
        Some(Value::Number(n)) => timestamp_ms(&n.to_string())?,
        Some(Value::String(s)) => timestamp_ms(s)?,
        _ => return Err("missing \"timestamp\"".into()),
    };
    let v = match obj.get("value") {
        Some(Value::Number(n)) => value_of(&n.to_string())?,
        Some(Value::String(s)) => value_of(s)?,
        None => return Err("missing \"value\"".into()),
        Some(_) => return Err("\"value\" is not a number or a numeric string".into()),
    };
    let mut labels = vec![Label::new(METRIC_NAME, metric.as_str())];
    match obj.get("tags") {
        None | Some(Value::Null) => {}
        Some(Value::Object(tags)) => {
            if tags.len() > limits.max_labels_per_series {
                return Err(format!(
                    "{} tags exceed the limit of {}",
                    tags.len(),
                    limits.max_labels_per_series
                ));
            }
            for (k, v) in tags {
                let Value::String(v) = v else {
                    return Err(format!("tag {k:?} has a non-string value"));
                };
                if k.is_empty() || v.is_empty() {
                    return Err(format!("tag {k:?} has an empty key or value"));
                }
                labels.push(Label::new(k.as_str(), v.as_str()));
            }
        }
        Some(_) => return Err("\"tags\" is not an object".into()),
    }
    let labels = finish_labels(labels, &[], limits)?;
    Ok(SeriesSamples::new(labels, vec![Sample::new(t, v)]))
}

#[cfg(test)]
mod tests;
