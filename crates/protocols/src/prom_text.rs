//! Prometheus text exposition format 0.0.4 and OpenMetrics 1.0 text, as
//! `/api/v1/import/prometheus` accepts them (what an exporter's `/metrics`
//! page shows, or a Pushgateway client pushes).
//!
//! - Samples: `name{label="value",...} value [timestamp]`. Label values
//!   unescape `\\`, `\"` and `\n` (other escapes are an error); a trailing
//!   comma and spaces around tokens are allowed; Prometheus 3's quoted
//!   names (`{"my.metric", "a.b"="1"}`) too. Values are Go-style floats
//!   including `NaN`, `+Inf`, `-Inf`; a text `NaN` is an ordinary NaN (the
//!   staleness marker cannot be expressed in this format).
//! - Timestamps: integer milliseconds in the Prometheus format; in
//!   OpenMetrics (`Content-Type: application/openmetrics-text`, or a body
//!   that ends with `# EOF`) float seconds. A sample without one gets the
//!   request's default time.
//! - `# HELP`, `# TYPE`, `# UNIT` become metadata; other comments are
//!   ignored; `# EOF` ends the body. `_created` series are stored like any
//!   other series, as VictoriaMetrics does (Cairn does not keep created
//!   timestamps). Exemplars (`# {...} v [t]` after a sample) are counted
//!   and dropped.
//! - A bad line is counted and skipped (see [`crate::text_import`]).

use std::collections::HashMap;

use cairn_model::{Label, Sample};

use crate::text_import::{ImportResult, finish_labels, lines, truncate};
use crate::{DecodeLimits, MetricMetadata, MetricType, SeriesSamples};

/// How to read one body.
#[derive(Debug, Clone, Default)]
pub struct PromTextOptions {
    /// Timestamp (ms) of samples that carry none.
    pub default_t: i64,
    /// Added to every series, replacing sent labels of the same name.
    pub extra_labels: Vec<Label>,
    /// Timestamps are float seconds (OpenMetrics) rather than integer ms.
    /// A body ending in `# EOF` is read as OpenMetrics regardless.
    pub openmetrics: bool,
}

/// Decodes a whole (decompressed) body.
pub fn decode_prom_text(body: &[u8], opts: &PromTextOptions, limits: &DecodeLimits) -> ImportResult {
    let openmetrics = opts.openmetrics || is_openmetrics(body);
    let mut out = ImportResult::default();
    let mut metadata: Vec<MetricMetadata> = Vec::new();
    let mut metadata_index: HashMap<String, usize> = HashMap::new();
    for (n, line) in lines(body) {
        let Ok(line) = std::str::from_utf8(line) else {
            out.reject(n, "invalid UTF-8");
            continue;
        };
        let line = line.trim_start();
        if line.is_empty() {
            continue;
        }
        if let Some(comment) = line.strip_prefix('#') {
            if comment.trim() == "EOF" {
                break;
            }
            if let Err(reason) = read_comment(comment, &mut metadata, &mut metadata_index) {
                out.reject(n, reason);
            }
            continue;
        }
        match read_sample(line, openmetrics, opts, limits) {
            Ok((series, exemplar)) => {
                out.batch.exemplars_dropped += usize::from(exemplar);
                for sample in series.samples {
                    out.batch.push_joining_last(&series.labels, sample);
                }
            }
            Err(reason) => out.reject(n, reason),
        }
    }
    out.batch.metadata = metadata;
    out
}

fn is_openmetrics(body: &[u8]) -> bool {
    let trimmed = body.trim_ascii_end();
    trimmed.ends_with(b"# EOF")
}

/// `# HELP name text`, `# TYPE name type`, `# UNIT name unit`; other
/// comments are ignored.
fn read_comment(
    comment: &str,
    metadata: &mut Vec<MetricMetadata>,
    index: &mut HashMap<String, usize>,
) -> Result<(), String> {
    let comment = comment.trim_start();
    let (keyword, rest) = comment.split_once([' ', '\t']).unwrap_or((comment, ""));
    if !matches!(keyword, "HELP" | "TYPE" | "UNIT") {
        return Ok(());
    }
    let rest = rest.trim_start();
    let (name, text) = rest.split_once([' ', '\t']).unwrap_or((rest, ""));
    if name.is_empty() {
        return Err(format!("# {keyword} without a metric name"));
    }
    let name = if name.starts_with('"') {
        unquote(name).map_err(|e| format!("# {keyword}: {e}"))?
    } else {
        name.to_string()
    };
    let i = *index.entry(name.clone()).or_insert_with(|| {
        metadata.push(MetricMetadata {
            metric_family_name: name,
            ..MetricMetadata::default()
        });
        metadata.len() - 1
    });
    let Some(md) = metadata.get_mut(i) else {
        return Ok(());
    };
    match keyword {
        "HELP" => md.help = unescape_help(text),
        "UNIT" => md.unit = text.trim().to_string(),
        _ => {
            md.metric_type = match text.trim() {
                "counter" => MetricType::Counter,
                "gauge" => MetricType::Gauge,
                "histogram" => MetricType::Histogram,
                "gaugehistogram" => MetricType::GaugeHistogram,
                "summary" => MetricType::Summary,
                "info" => MetricType::Info,
                "stateset" => MetricType::StateSet,
                "untyped" | "unknown" => MetricType::Unknown,
                other => return Err(format!("# TYPE: unknown metric type {other:?}")),
            }
        }
    }
    Ok(())
}

fn unescape_help(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some(other) => out.push(other),
            None => out.push('\\'),
        }
    }
    out
}

/// One sample line → one series with one sample, and whether an exemplar
/// followed it.
fn read_sample(
    line: &str,
    openmetrics: bool,
    opts: &PromTextOptions,
    limits: &DecodeLimits,
) -> Result<(SeriesSamples, bool), String> {
    let mut labels = Vec::new();
    let name_end = line
        .find(|c: char| c == '{' || c.is_ascii_whitespace())
        .unwrap_or(line.len());
    let (name, mut rest) = line.split_at(name_end);
    if !name.is_empty() {
        if !is_metric_name(name) {
            return Err(format!("invalid metric name {:?}", truncate(name)));
        }
        labels.push(Label::new("__name__", name));
    }
    if let Some(after_brace) = rest.strip_prefix('{') {
        rest = read_labels(after_brace, &mut labels, limits)?;
    } else if name.is_empty() {
        return Err("want a metric name or '{'".into());
    }
    if !labels.iter().any(|l| l.name == "__name__") {
        return Err("the sample has no metric name".into());
    }
    if rest.trim().is_empty() {
        return Err("missing value".into());
    }
    if !rest.starts_with(|c: char| c.is_ascii_whitespace()) {
        return Err("want a space before the value".into());
    }
    // An exemplar follows `#` after the value (and timestamp); past the
    // labels no other `#` can appear.
    let (rest, exemplar) = match rest.find('#') {
        Some(i) => (rest.get(..i).unwrap_or(rest), true),
        None => (rest, false),
    };
    let mut tokens = rest.split_ascii_whitespace();
    let value = tokens.next().ok_or("missing value")?;
    let v = parse_float(value).ok_or_else(|| format!("invalid value {:?}", truncate(value)))?;
    let t = match tokens.next() {
        None => opts.default_t,
        Some(ts) if openmetrics => {
            let secs: f64 = ts
                .parse()
                .ok()
                .filter(|s: &f64| s.is_finite())
                .ok_or_else(|| format!("invalid timestamp {:?}", truncate(ts)))?;
            (secs * 1000.0).round() as i64
        }
        Some(ts) => ts
            .parse::<i64>()
            .map_err(|_| format!("invalid timestamp {:?}: want integer milliseconds", truncate(ts)))?,
    };
    if let Some(extra) = tokens.next() {
        return Err(format!("unexpected {:?} after the timestamp", truncate(extra)));
    }
    let labels = finish_labels(labels, &opts.extra_labels, limits)?;
    Ok((SeriesSamples::new(labels, vec![Sample::new(t, v)]), exemplar))
}

/// Reads `name="value",...}` and returns what follows the brace.
fn read_labels<'a>(mut s: &'a str, labels: &mut Vec<Label>, limits: &DecodeLimits) -> Result<&'a str, String> {
    loop {
        s = s.trim_start();
        if let Some(rest) = s.strip_prefix('}') {
            return Ok(rest);
        }
        if labels.len() > limits.max_labels_per_series {
            return Err(format!("more than {} labels", limits.max_labels_per_series));
        }
        let (name, rest) = if s.starts_with('"') {
            let (quoted, rest) = read_quoted(s)?;
            (quoted, rest)
        } else {
            let end = s
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(s.len());
            let (name, rest) = s.split_at(end);
            if name.is_empty() || name.starts_with(|c: char| c.is_ascii_digit()) {
                return Err(format!("invalid label name at {:?}", truncate(s)));
            }
            (name.to_string(), rest)
        };
        let rest = rest.trim_start();
        if let Some(after_eq) = rest.strip_prefix('=') {
            let (value, rest) = read_quoted(after_eq.trim_start())?;
            labels.push(Label::new(name, value));
            s = rest;
        } else {
            // A quoted string alone is the metric name (Prometheus 3).
            if labels.iter().any(|l| l.name == "__name__") {
                return Err(format!("label {name:?} has no value"));
            }
            labels.push(Label::new("__name__", name));
            s = rest;
        }
        s = s.trim_start();
        if let Some(rest) = s.strip_prefix(',') {
            s = rest;
        } else if !s.starts_with('}') {
            return Err(format!("want ',' or '}}' at {:?}", truncate(s)));
        }
    }
}

/// Reads `"..."` with `\\`, `\"`, `\n` escapes; returns the text and the rest.
fn read_quoted(s: &str) -> Result<(String, &str), String> {
    let body = s
        .strip_prefix('"')
        .ok_or_else(|| format!("want '\"' at {:?}", truncate(s)))?;
    let mut out = String::new();
    let mut chars = body.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => return Ok((out, body.get(i + 1..).unwrap_or(""))),
            '\\' => match chars.next() {
                Some((_, '\\')) => out.push('\\'),
                Some((_, '"')) => out.push('"'),
                Some((_, 'n')) => out.push('\n'),
                Some((_, other)) => return Err(format!("invalid escape sequence '\\{other}'")),
                None => break,
            },
            c => out.push(c),
        }
    }
    Err("unterminated quoted string".into())
}

fn unquote(s: &str) -> Result<String, String> {
    let (text, rest) = read_quoted(s)?;
    if !rest.is_empty() {
        return Err(format!("unexpected {:?} after the quoted name", truncate(rest)));
    }
    Ok(text)
}

fn is_metric_name(name: &str) -> bool {
    let mut bytes = name.bytes();
    matches!(bytes.next(), Some(b'a'..=b'z' | b'A'..=b'Z' | b'_' | b':'))
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b':')
}

/// Go's `ParseFloat` spellings that matter here: decimal and exponent
/// forms, `NaN`, `Inf`/`+Inf`/`-Inf`/`Infinity` in any case.
fn parse_float(s: &str) -> Option<f64> {
    s.parse::<f64>().ok()
}

#[cfg(test)]
mod tests;
