//! What the line-oriented import formats (Prometheus text, JSON lines, CSV)
//! share: body decompression, extra labels, label checks against
//! [`DecodeLimits`], and the per-line error bookkeeping.
//!
//! Partial acceptance, the same for every text format: a bad line never
//! spoils its neighbours. The decoder keeps every good line in the batch,
//! counts the bad ones and remembers the first error with its 1-based line
//! number; the HTTP layer stores the good lines and then answers 400 naming
//! the count and the first error (VictoriaMetrics stores the good lines and
//! only logs; a 400 tells the sender too). Failures of the body as a whole
//! (unknown encoding, corrupt gzip, too large) store nothing.

use std::borrow::Cow;
use std::fmt;
use std::io::Read;

use cairn_model::{Label, Labels};

use crate::{DecodeLimits, ErrorKind, WriteBatch};

/// A line the decoder refused, 1-based.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineError {
    pub line: usize,
    pub reason: String,
}

impl fmt::Display for LineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.reason)
    }
}

/// The outcome of decoding one import body: the good lines and what went
/// wrong with the others.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ImportResult {
    pub batch: WriteBatch,
    /// Lines (CSV rows, JSON objects) refused.
    pub bad_lines: usize,
    /// The first refused line, for the error message.
    pub first_error: Option<LineError>,
    /// Values of good lines that Cairn cannot store and skips by design
    /// (InfluxDB string fields), counted rather than refused.
    pub string_values_skipped: usize,
}

impl ImportResult {
    /// Records a refused line.
    pub fn reject(&mut self, line: usize, reason: impl Into<String>) {
        self.bad_lines += 1;
        if self.first_error.is_none() {
            self.first_error = Some(LineError {
                line,
                reason: reason.into(),
            });
        }
    }

    /// The 400 message for a body with bad lines, or `None` when all were good.
    pub fn error_message(&self) -> Option<String> {
        let first = self.first_error.as_ref()?;
        Some(format!(
            "{} bad lines skipped ({} samples stored); first error at {first}",
            self.bad_lines,
            self.batch.sample_count()
        ))
    }
}

/// Why an import body was refused as a whole.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BodyError {
    #[error("unsupported content encoding {0:?}: want gzip, deflate, zstd or identity")]
    UnsupportedEncoding(String),
    #[error("{encoding} decompression failed: {reason}")]
    Decompress { encoding: &'static str, reason: String },
    #[error("body decompresses to more than the {limit}-byte limit")]
    TooLarge { limit: usize },
    #[error("invalid extra_label {0:?}: want name=value")]
    BadExtraLabel(String),
    #[error("{0}")]
    BadFormat(String),
}

impl BodyError {
    pub fn kind(&self) -> ErrorKind {
        match self {
            Self::UnsupportedEncoding(_) => ErrorKind::UnsupportedEncoding,
            _ => ErrorKind::BadData,
        }
    }

    /// The reason label of Cairn's ingest metrics.
    pub fn reason(&self) -> &'static str {
        match self {
            Self::UnsupportedEncoding(_) => "unsupported_encoding",
            Self::Decompress { .. } => "bad_compression",
            Self::TooLarge { .. } => "too_large",
            Self::BadExtraLabel(_) | Self::BadFormat(_) => "bad_data",
        }
    }
}

/// Decompresses an import body by its `Content-Encoding` (missing, identity,
/// gzip, x-gzip, deflate, zstd), refusing more than `limit` bytes of output.
pub fn decompress_body<'a>(
    body: &'a [u8],
    content_encoding: Option<&str>,
    limit: usize,
) -> Result<Cow<'a, [u8]>, BodyError> {
    if is_identity(content_encoding) {
        if body.len() > limit {
            return Err(BodyError::TooLarge { limit });
        }
        return Ok(Cow::Borrowed(body));
    }
    // A zstd window larger than the limit could not be filled anyway.
    let window_log = (usize::BITS - limit.saturating_sub(1).leading_zeros()).clamp(23, 31);
    let (encoding, reader) = decompressing_reader(body, content_encoding, window_log)?;
    let mut out = Vec::new();
    reader
        .take(limit as u64 + 1)
        .read_to_end(&mut out)
        .map_err(|e| BodyError::Decompress {
            encoding,
            reason: e.to_string(),
        })?;
    if out.len() > limit {
        return Err(BodyError::TooLarge { limit });
    }
    Ok(Cow::Owned(out))
}

fn is_identity(content_encoding: Option<&str>) -> bool {
    let v = content_encoding.map(str::trim).unwrap_or_default();
    v.is_empty() || v.eq_ignore_ascii_case("identity")
}

/// A reader of `input` decompressed by its `Content-Encoding`, for bodies
/// read as a stream; with the encoding's name for errors. zstd frames may
/// use windows of up to `2^zstd_window_log` bytes.
pub fn decompressing_reader<'a, R: Read + 'a>(
    input: R,
    content_encoding: Option<&str>,
    zstd_window_log: u32,
) -> Result<(&'static str, Box<dyn Read + 'a>), BodyError> {
    let v = content_encoding.map(str::trim).unwrap_or_default();
    if is_identity(content_encoding) {
        Ok(("identity", Box::new(input)))
    } else if v.eq_ignore_ascii_case("gzip") || v.eq_ignore_ascii_case("x-gzip") {
        Ok(("gzip", Box::new(flate2::read::MultiGzDecoder::new(input))))
    } else if v.eq_ignore_ascii_case("deflate") {
        Ok(("deflate", Box::new(flate2::read::ZlibDecoder::new(input))))
    } else if v.eq_ignore_ascii_case("zstd") {
        let failed = |e: std::io::Error| BodyError::Decompress {
            encoding: "zstd",
            reason: e.to_string(),
        };
        let mut decoder = zstd::stream::read::Decoder::new(input).map_err(failed)?;
        decoder.window_log_max(zstd_window_log).map_err(failed)?;
        Ok(("zstd", Box::new(decoder)))
    } else {
        Err(BodyError::UnsupportedEncoding(v.chars().take(64).collect()))
    }
}

/// Parses `extra_label` query values (`name=value`, as VictoriaMetrics).
/// Later values win over earlier ones with the same name; all win over the
/// labels in the body.
pub fn parse_extra_labels<'a>(values: impl IntoIterator<Item = &'a str>) -> Result<Vec<Label>, BodyError> {
    let mut out: Vec<Label> = Vec::new();
    for v in values {
        let Some((name, value)) = v.split_once('=') else {
            return Err(BodyError::BadExtraLabel(v.chars().take(256).collect()));
        };
        if name.is_empty() {
            return Err(BodyError::BadExtraLabel(v.chars().take(256).collect()));
        }
        out.retain(|l| l.name != name);
        out.push(Label::new(name, value));
    }
    Ok(out)
}

/// Builds canonical labels from what a line sent plus the extra labels
/// (which replace sent labels of the same name), enforcing `limits`.
pub fn finish_labels(mut labels: Vec<Label>, extra: &[Label], limits: &DecodeLimits) -> Result<Labels, String> {
    if labels.len() > limits.max_labels_per_series {
        return Err(format!(
            "{} labels exceed the limit of {}",
            labels.len(),
            limits.max_labels_per_series
        ));
    }
    for l in &labels {
        if l.name.len() > limits.max_label_name_len {
            return Err(format!(
                "label name of {} bytes exceeds the limit of {}",
                l.name.len(),
                limits.max_label_name_len
            ));
        }
        if l.value.len() > limits.max_label_value_len {
            return Err(format!(
                "value of label {:?} has {} bytes, over the limit of {}",
                l.name,
                l.value.len(),
                limits.max_label_value_len
            ));
        }
    }
    if !extra.is_empty() {
        labels.retain(|l| !extra.iter().any(|e| e.name == l.name));
        labels.extend(extra.iter().cloned());
    }
    let labels = Labels::new(labels).map_err(|e| e.to_string())?;
    if labels.is_empty() {
        return Err("the series has no labels".into());
    }
    Ok(labels)
}

/// Unix seconds (fractions allowed) as milliseconds, rounded to the nearest.
pub(crate) fn seconds_to_ms(ts: &str) -> Option<i64> {
    if let Ok(secs) = ts.parse::<i64>() {
        return secs.checked_mul(1000);
    }
    let secs: f64 = ts.parse().ok()?;
    let ms = (secs * 1000.0).round();
    // Finite and inside i64 (the float bound is exclusive at 2^63).
    (ms.is_finite() && ms.abs() < 9.2e18).then_some(ms as i64)
}

/// At most the first 64 characters of `s`, for error messages that quote input.
pub(crate) fn truncate(s: &str) -> &str {
    match s.char_indices().nth(64) {
        Some((i, _)) => s.get(..i).unwrap_or(s),
        None => s,
    }
}

/// Splits a body into lines, 1-based numbers, `\r\n` tolerated.
pub(crate) fn lines(body: &[u8]) -> impl Iterator<Item = (usize, &[u8])> {
    body.split(|&b| b == b'\n').enumerate().map(|(i, line)| {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        (i + 1, line)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn extra_labels_parse_and_override() {
        let extra = parse_extra_labels(["a=1", "b=x=y", "a=2"]).unwrap();
        assert_eq!(extra, vec![Label::new("b", "x=y"), Label::new("a", "2")]);
        assert!(parse_extra_labels(["noequals"]).is_err());
        assert!(parse_extra_labels(["=v"]).is_err());
        let labels = finish_labels(
            vec![Label::new("__name__", "m"), Label::new("a", "0")],
            &extra,
            &DecodeLimits::default(),
        )
        .unwrap();
        assert_eq!(
            labels,
            Labels::from_pairs([("__name__", "m"), ("a", "2"), ("b", "x=y")])
        );
    }

    #[test]
    fn limits_are_enforced() {
        let limits = DecodeLimits {
            max_labels_per_series: 1,
            max_label_value_len: 3,
            ..DecodeLimits::default()
        };
        assert!(finish_labels(vec![Label::new("a", "1"), Label::new("b", "1")], &[], &limits).is_err());
        assert!(finish_labels(vec![Label::new("a", "long")], &[], &limits).is_err());
        assert!(finish_labels(vec![Label::new("a", "")], &[], &limits).is_err());
        assert!(
            finish_labels(
                vec![Label::new("a", "1"), Label::new("a", "2")],
                &[],
                &DecodeLimits::default()
            )
            .is_err()
        );
    }

    #[test]
    fn bodies_decompress_within_the_limit() {
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(&[b'a'; 1000]).unwrap();
        let gz = gz.finish().unwrap();
        assert_eq!(decompress_body(&gz, Some("gzip"), 1000).unwrap().len(), 1000);
        assert_eq!(
            decompress_body(&gz, Some("gzip"), 999),
            Err(BodyError::TooLarge { limit: 999 })
        );
        assert!(matches!(
            decompress_body(b"not gzip", Some("gzip"), 1000),
            Err(BodyError::Decompress { .. })
        ));
        assert_eq!(decompress_body(b"abc", None, 3).unwrap().as_ref(), b"abc");
        assert_eq!(decompress_body(b"abcd", None, 3), Err(BodyError::TooLarge { limit: 3 }));
        let zst = zstd::encode_all(&b"hello"[..], 1).unwrap();
        assert_eq!(decompress_body(&zst, Some("zstd"), 10).unwrap().as_ref(), b"hello");
        assert_eq!(
            decompress_body(b"x", Some("br"), 10).unwrap_err().kind(),
            ErrorKind::UnsupportedEncoding
        );
    }
}
