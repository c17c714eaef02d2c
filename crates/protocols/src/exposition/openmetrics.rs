//! OpenMetrics text (1.0.0; 0.0.1 reads the same), as Prometheus' scrape
//! parser reads it: stricter than the Prometheus text format.
//!
//! Tokens are separated by exactly one space, nothing else; there are no
//! blank lines and no free comments; the body must end with `# EOF` (an
//! optional final newline, then nothing). `# UNIT` must be a suffix of its
//! family's name. Timestamps are float seconds, truncated to ms. An
//! exemplar (` # {labels} value [timestamp]`) after a sample is checked
//! and dropped. `_created` series are ordinary series unless the caller
//! skips them (created-timestamp ingestion), as Prometheus does.

use cairn_model::{Label, Labels, METRIC_NAME};

use super::classic::Sink;
use super::common::{
    Body, KnownSpellings, LabelEncoder, LabelSpan, MetadataSet, Position, SchemaLabels, finish_labels, is_label_char,
    is_label_start, is_metric_char, is_metric_start, label_at, numbered, quoted, quoted_end, run_end, samples_in,
    unescape,
};
use super::float::{normalize_nan, parse_go_float, seconds_to_ms};
use super::{Exposition, ExpositionError, KnownSeries, LabelOutput, ParseOptions, ScrapedSample, ScrapedValue};
use crate::MetricType;

/// Reads a whole body. With `opts.skip_openmetrics_created_series`, the
/// `_created` series of counters, summaries and histograms are left out.
pub fn parse(body: &[u8], opts: &ParseOptions) -> Result<Exposition, ExpositionError> {
    parse_as(body, opts, false, None, LabelOutput::Built)
}

/// [`parse`], with type-and-unit labels when asked.
pub(crate) fn parse_as<'k>(
    body: &[u8],
    opts: &ParseOptions,
    type_and_unit_labels: bool,
    known: Option<KnownSeries<'k>>,
    output: LabelOutput<'k>,
) -> Result<Exposition, ExpositionError> {
    let mut p = Parser {
        b: body,
        checked: Body::new(body),
        i: 0,
        kind: MetricType::Unknown,
        skip_created_series: opts.skip_openmetrics_created_series,
        type_and_unit_labels,
        unit: String::new(),
        metadata: MetadataSet::default(),
        sink: Sink::new(opts, samples_in(body)),
        labels: Vec::new(),
        known: KnownSpellings::new(known),
        encoder: match output {
            LabelOutput::Encoded(write) if !type_and_unit_labels => Some(LabelEncoder::for_body(body, write)),
            _ => None,
        },
    };
    p.run().map_err(|e| numbered(body, e))?;
    Ok(Exposition {
        samples: p.sink.finish(),
        metadata: p.metadata.into_vec(),
        labels: p.encoder.map(|e| e.buf).unwrap_or_default(),
    })
}

struct Parser<'a, 'k> {
    b: &'a [u8],
    /// `b` with its text, for names and values.
    checked: Body<'a>,
    i: usize,
    /// The type of the last `# TYPE` line.
    kind: MetricType,
    skip_created_series: bool,
    type_and_unit_labels: bool,
    /// The unit of the last `# UNIT` line, for type-and-unit labels.
    unit: String,
    metadata: MetadataSet,
    sink: Sink,
    /// Label name and value spans of the sample being read.
    labels: Vec<LabelSpan>,
    known: KnownSpellings<'k>,
    /// Set when labels are encoded rather than built.
    encoder: Option<LabelEncoder<'a, 'k>>,
}

const NO_EOF: &str = "data does not end with # EOF";

#[derive(Clone, Copy, PartialEq)]
enum Meta {
    Help,
    Type,
    Unit,
}

impl<'a> Parser<'a, '_> {
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    fn rest(&self) -> &'a [u8] {
        self.b.get(self.i..).unwrap_or_default()
    }

    fn pos(&self, entry_start: usize) -> Position {
        Position { entry_start }
    }

    fn run(&mut self) -> Result<(), ExpositionError> {
        loop {
            let start = self.i;
            let pos = self.pos(start);
            match self.peek() {
                None => return Err(pos.error(NO_EOF)),
                Some(b'#') => {
                    if self.comment(start)? {
                        return Ok(());
                    }
                }
                Some(b'{') => self.sample(start, None)?,
                Some(c) if is_metric_start(c) => {
                    let name_end = run_end(self.b, self.i, is_metric_char);
                    let name = (self.i, name_end);
                    self.i = name_end;
                    self.sample(start, Some(name))?;
                }
                Some(_) => return Err(pos.unexpected(self.b, "expected a valid start token", self.i, self.i)),
            }
        }
    }

    /// A `#` line; true at `# EOF`.
    fn comment(&mut self, start: usize) -> Result<bool, ExpositionError> {
        let pos = self.pos(start);
        let rest = self.rest();
        let meta = if rest.starts_with(b"# HELP ") {
            Meta::Help
        } else if rest.starts_with(b"# TYPE ") {
            Meta::Type
        } else if rest.starts_with(b"# UNIT ") {
            Meta::Unit
        } else if rest.starts_with(b"# EOF") {
            let after = rest.get(5..).unwrap_or_default();
            let after = after.strip_prefix(b"\n").unwrap_or(after);
            if !after.is_empty() {
                return Err(pos.error("unexpected data after # EOF"));
            }
            return Ok(true);
        } else {
            let at = if rest.starts_with(b"# ") { self.i + 2 } else { self.i };
            return Err(pos.unexpected(self.b, "expected a valid start token", at, at));
        };
        let keyword = match meta {
            Meta::Help => "HELP",
            Meta::Type => "TYPE",
            Meta::Unit => "UNIT",
        };
        self.i += 7;
        let (name_start, name_end) = match self.peek() {
            Some(b'"') => match quoted_end(self.b, self.i, true) {
                Some(end) => (self.i + 1, end - 1),
                None => {
                    return Err(pos.unexpected(
                        self.b,
                        &format!("expected metric name after {keyword}"),
                        self.i,
                        self.i,
                    ));
                }
            },
            Some(c) if is_metric_start(c) => (self.i, run_end(self.b, self.i, is_metric_char)),
            _ => return Err(pos.unexpected(self.b, &format!("expected metric name after {keyword}"), self.i, self.i)),
        };
        self.i = if self.b.get(name_end) == Some(&b'"') {
            name_end + 1
        } else {
            name_end
        };
        // The text: one space, the rest of the line, its newline.
        let newline = memchr::memchr(b'\n', self.rest());
        let (Some(b' '), Some(newline)) = (self.peek(), newline) else {
            return Err(pos.error(format!("expected text in {keyword}")));
        };
        let text = self.b.get(self.i + 1..self.i + newline).unwrap_or_default();
        self.i += newline + 1;
        let name = self
            .checked
            .text(name_start, name_end, "metric name")
            .map_err(|e| pos.error(e))?;
        match meta {
            Meta::Help => {
                let text = std::str::from_utf8(text).map_err(|_| {
                    pos.error(format!(
                        "help text {:?} is not a valid utf8 string",
                        String::from_utf8_lossy(text)
                    ))
                })?;
                let help = unescape(text);
                self.metadata.update(name, |m| m.help = help.into_owned());
                self.sink.other_line();
            }
            Meta::Type => {
                let kind = match text {
                    b"counter" => MetricType::Counter,
                    b"gauge" => MetricType::Gauge,
                    b"histogram" => MetricType::Histogram,
                    b"gaugehistogram" => MetricType::GaugeHistogram,
                    b"summary" => MetricType::Summary,
                    b"info" => MetricType::Info,
                    b"stateset" => MetricType::StateSet,
                    b"unknown" => MetricType::Unknown,
                    other => {
                        return Err(pos.error(format!("invalid metric type {:?}", String::from_utf8_lossy(other))));
                    }
                };
                self.kind = kind;
                self.metadata.update(name, |m| m.kind = kind);
                self.sink.type_line(name, kind);
            }
            Meta::Unit => {
                let unit = String::from_utf8_lossy(text);
                let suffix_ok =
                    unit.is_empty() || name.strip_suffix(unit.as_ref()).is_some_and(|head| head.ends_with('_'));
                if !suffix_ok {
                    return Err(pos.error(format!("unit {unit:?} not a suffix of metric {name:?}")));
                }
                let unit = unit.into_owned();
                self.unit.clone_from(&unit);
                self.metadata.update(name, |m| m.unit = unit);
                self.sink.other_line();
            }
        }
        Ok(false)
    }

    /// A value or timestamp token: one space, then bytes up to a space or
    /// newline. `None` (cursor unmoved) if there is none.
    fn spaced_token(&mut self) -> Option<(usize, usize)> {
        if self.peek() != Some(b' ') {
            return None;
        }
        let start = self.i + 1;
        let end = run_end(self.b, start, |c| c != b' ' && c != b'\n');
        if end == start {
            return None;
        }
        self.i = end;
        Some((start, end))
    }

    fn float_at(&self, pos: Position, (start, end): (usize, usize)) -> Result<f64, ExpositionError> {
        std::str::from_utf8(self.b.get(start..end).unwrap_or_default())
            .map_err(|_| "invalid syntax".to_string())
            .and_then(parse_go_float)
            .map_err(|e| pos.error(format!("{e} while parsing: {:?}", pos.entry_text(self.b, self.i))))
    }

    fn sample(&mut self, start: usize, bare_name: Option<(usize, usize)>) -> Result<(), ExpositionError> {
        let pos = self.pos(start);
        let mut name = bare_name;
        self.labels.clear();
        let series_start = bare_name.map_or(self.i, |(name_start, _)| name_start);
        if self.peek() == Some(b'{') {
            self.i += 1;
            self.label_set(pos, &mut name, false)?;
        }
        let series_end = self.i;
        let Some((name_start, name_end)) = name else {
            return Err(pos.error(format!(
                "metric name not set while parsing: {:?}",
                pos.entry_text(self.b, self.i)
            )));
        };
        let Some(value_span) = self.spaced_token() else {
            return Err(pos.unexpected(self.b, "expected value after metric", self.i, self.i));
        };
        let value = self.float_at(pos, value_span)?;
        let mut timestamp_ms = None;
        if self.rest().starts_with(b" # {") {
            self.exemplar(pos)?;
        } else if let Some(ts_span) = self.spaced_token() {
            let ts = self.float_at(pos, ts_span)?;
            if !ts.is_finite() {
                return Err(pos.error(format!("invalid timestamp {ts}")));
            }
            timestamp_ms = Some(seconds_to_ms(ts));
            if self.rest().starts_with(b" # {") {
                self.exemplar(pos)?;
            } else {
                self.end_of_line(pos, "expected next entry after timestamp")?;
            }
        } else {
            self.end_of_line(pos, "expected timestamp or new record")?;
        }
        let metric_name = self
            .checked
            .text(name_start, name_end, "metric name")
            .map_err(|e| pos.error(e))?;
        let metric_name = unescape(metric_name);
        let created_kind = matches!(
            self.kind,
            MetricType::Counter | MetricType::Summary | MetricType::Histogram
        );
        if self.skip_created_series && created_kind && metric_name.ends_with("_created") {
            return Ok(());
        }
        let spelling = self.known.spelling(self.b, series_start..series_end, self.kind);
        if spelling.is_some_and(|s| s.known) {
            self.sink.push(ScrapedSample {
                labels: Labels::empty(),
                empty_labels: Vec::new(),
                timestamp_ms,
                value: ScrapedValue::Float(normalize_nan(value)),
                spelling,
                encoded: None,
            });
            return Ok(());
        }
        if let Some(encoder) = &mut self.encoder {
            let encoded = encoder
                .encode(self.checked, self.kind, metric_name, &self.labels)
                .map_err(|e| pos.error(e))?;
            self.sink.push(ScrapedSample {
                labels: Labels::empty(),
                empty_labels: encoded.empty,
                timestamp_ms,
                value: ScrapedValue::Float(normalize_nan(value)),
                spelling,
                encoded: Some(encoded.at),
            });
            return Ok(());
        }
        let mut out = Vec::with_capacity(self.labels.len() + 3);
        out.push(Label::new(METRIC_NAME, metric_name.as_ref()));
        let schema = self.type_and_unit_labels.then_some(SchemaLabels {
            kind: self.kind,
            unit: &self.unit,
        });
        if let Some(schema) = schema {
            schema.push_to(&mut out);
        }
        for &span in &self.labels {
            let (label, value) = label_at(self.checked, self.kind, span).map_err(|e| pos.error(e))?;
            if schema.is_some_and(|s| s.overrides(&label)) {
                continue;
            }
            out.push(Label::new(label.as_ref(), value.as_ref()));
        }
        let (labels, empty_labels) = finish_labels(out).map_err(|e| pos.error(e))?;
        self.sink.push(ScrapedSample {
            labels,
            empty_labels,
            timestamp_ms,
            value: ScrapedValue::Float(normalize_nan(value)),
            spelling,
            encoded: None,
        });
        Ok(())
    }

    /// Expects the newline ending an entry, and moves past it.
    fn end_of_line(&mut self, pos: Position, expected: &str) -> Result<(), ExpositionError> {
        match self.peek() {
            Some(b'\n') => {
                self.i += 1;
                Ok(())
            }
            None => Err(pos.error(NO_EOF)),
            Some(_) => Err(pos.unexpected(self.b, expected, self.i, self.i)),
        }
    }

    /// ` # {labels} value [timestamp]` and the newline; checked, then dropped.
    fn exemplar(&mut self, pos: Position) -> Result<(), ExpositionError> {
        self.i += 4;
        let mut name = None;
        let kept = self.labels.len();
        self.label_set(pos, &mut name, true)?;
        self.labels.truncate(kept);
        let Some(value_span) = self.spaced_token() else {
            return Err(pos.unexpected(self.b, "expected value after exemplar labels", self.i, self.i));
        };
        self.float_at(pos, value_span)?;
        if let Some(ts_span) = self.spaced_token() {
            let ts = self.float_at(pos, ts_span)?;
            if !ts.is_finite() {
                return Err(pos.error(format!("invalid exemplar timestamp {ts}")));
            }
            return self.end_of_line(pos, "expected next entry after exemplar timestamp");
        }
        self.end_of_line(pos, "expected timestamp or comment")
    }

    /// The labels between braces; the cursor is after `{`.
    fn label_set(
        &mut self,
        pos: Position,
        name: &mut Option<(usize, usize)>,
        exemplar: bool,
    ) -> Result<(), ExpositionError> {
        loop {
            let token_start = self.i;
            let (name_start, name_end, quoted_name) = match self.peek() {
                Some(b'}') => {
                    self.i += 1;
                    return Ok(());
                }
                Some(c) if is_label_start(c) => {
                    self.i = run_end(self.b, self.i, is_label_char);
                    (token_start, self.i, None)
                }
                Some(b'"') => {
                    let q = quoted(self.b, self.i, !exemplar)
                        .ok_or_else(|| pos.unexpected(self.b, "expected label name", token_start, self.i))?;
                    self.i = q.end;
                    (token_start + 1, q.end - 1, Some(q))
                }
                _ => return Err(pos.unexpected(self.b, "expected label name", token_start, self.i)),
            };
            if quoted_name.is_some() && matches!(self.peek(), Some(b',' | b'}')) {
                if exemplar {
                    return Err(pos.unexpected(self.b, "expected label name", self.i, self.i));
                }
                if name.is_some() {
                    return Err(pos.error(format!(
                        "metric name already set while parsing: {:?}",
                        pos.entry_text(self.b, self.i + 1)
                    )));
                }
                *name = Some((name_start, name_end));
                if self.peek() == Some(b',') {
                    self.i += 1;
                } else {
                    self.i += 1;
                    return Ok(());
                }
                continue;
            }
            if self.peek() != Some(b'=') {
                return Err(pos.unexpected(self.b, "expected equal", self.i, self.i));
            }
            self.i += 1;
            let value_start = self.i;
            let value = match self.peek() {
                Some(b'"') => quoted(self.b, self.i, false),
                _ => None,
            }
            .ok_or_else(|| pos.unexpected(self.b, "expected label value", value_start, self.i))?;
            let value_end = value.end;
            (self.checked)
                .text(value_start + 1, value_end - 1, "label value")
                .map_err(|e| pos.error(e))?;
            self.i = value_end;
            self.labels.push(LabelSpan {
                name: (name_start, name_end),
                value: (value_start + 1, value_end - 1),
                escaped: value.escaped || quoted_name.is_some_and(|q| q.escaped),
            });
            match self.peek() {
                Some(b',') => self.i += 1,
                Some(b'}') => {}
                _ => return Err(pos.unexpected(self.b, "expected comma or brace close", self.i, self.i)),
            }
        }
    }
}

#[cfg(test)]
mod tests;
