//! The Prometheus text format (0.0.4; 1.0.0 reads the same), as
//! Prometheus' own scrape parser reads it.
//!
//! Spaces and tabs may separate any two tokens, blank lines are skipped,
//! `# HELP` and `# TYPE` lines carry metadata and any other `#` line is a
//! comment. A sample is a name, optional `{labels}` (commas between them
//! optional, a trailing one allowed, a quoted name inside the braces for
//! UTF-8 metric names), a value and an optional integer timestamp in ms.
//! Label values may span raw newlines, as Prometheus' lexer allows.

use std::borrow::Cow;

use cairn_model::{Label, Labels, METRIC_NAME};

use super::classic::Sink;
use super::common::{
    Body, KnownSpellings, LabelEncoder, LabelSpan, MetadataSet, Position, SchemaLabels, finish_labels, is_label_char,
    is_label_start, is_metric_char, is_metric_start, label_at, line_end, numbered, quoted, quoted_end, run_end,
    samples_in, unescape, unescape_help,
};
use super::float::{normalize_nan, parse_go_float};
use super::{Exposition, ExpositionError, KnownSeries, LabelOutput, ParseOptions, ScrapedSample, ScrapedValue};
use crate::MetricType;

/// Reads a whole body.
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
        type_and_unit_labels,
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
    /// The type of the last `# TYPE` line, whatever family it named: it
    /// decides whether `le` and `quantile` values are normalised.
    kind: MetricType,
    type_and_unit_labels: bool,
    metadata: MetadataSet,
    sink: Sink,
    /// Reused between samples.
    labels: Vec<LabelSpan>,
    known: KnownSpellings<'k>,
    /// Set when labels are encoded rather than built.
    encoder: Option<LabelEncoder<'a, 'k>>,
}

fn is_blank(c: u8) -> bool {
    c == b' ' || c == b'\t'
}

impl<'a> Parser<'a, '_> {
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    /// The byte at the cursor, reading the end of the body as the newline
    /// Prometheus appends to it.
    fn peek_eol(&self) -> u8 {
        self.peek().unwrap_or(b'\n')
    }

    fn skip_blanks(&mut self) {
        self.i = run_end(self.b, self.i, is_blank);
    }

    fn pos(&self, entry_start: usize) -> Position {
        Position { entry_start }
    }

    fn run(&mut self) -> Result<(), ExpositionError> {
        loop {
            let start = self.i;
            self.skip_blanks();
            match self.peek() {
                None | Some(0) => return Ok(()),
                Some(b'\n') => self.i += 1,
                Some(b'#') => self.comment(start)?,
                Some(b'{') => self.sample(start, None)?,
                Some(c) if is_metric_start(c) => {
                    let name_start = self.i;
                    self.i = run_end(self.b, self.i, is_metric_char);
                    self.sample(start, Some((name_start, self.i)))?;
                }
                Some(_) => {
                    return Err(self
                        .pos(start)
                        .unexpected(self.b, "expected a valid start token", self.i, self.i));
                }
            }
        }
    }

    /// Moves past the newline ending the current line (or to the end).
    fn end_line(&mut self) {
        if self.peek() == Some(b'\n') {
            self.i += 1;
        }
    }

    fn skip_to_eol(&mut self) {
        self.i = line_end(self.b, self.i);
    }

    fn comment(&mut self, start: usize) -> Result<(), ExpositionError> {
        self.i += 1;
        let after_hash = self.i;
        self.skip_blanks();
        let rest = self.b.get(self.i..).unwrap_or_default();
        let keyword = if self.i == after_hash {
            None
        } else if rest.starts_with(b"HELP") && rest.get(4).is_some_and(|&c| is_blank(c)) {
            Some(MetaKind::Help)
        } else if rest.starts_with(b"TYPE") && rest.get(4).is_some_and(|&c| is_blank(c)) {
            Some(MetaKind::Type)
        } else {
            None
        };
        let Some(keyword) = keyword else {
            self.sink.other_line();
            self.skip_to_eol();
            self.end_line();
            return Ok(());
        };
        self.i += 4;
        self.skip_blanks();
        let pos = self.pos(start);
        let (name_start, name_end) = match self.peek() {
            Some(b'"') => match quoted_end(self.b, self.i, true) {
                Some(end) => (self.i + 1, end - 1),
                None => return Err(pos.unexpected(self.b, keyword.expected_name(), self.i, self.i)),
            },
            Some(c) if is_metric_start(c) => (self.i, run_end(self.b, self.i, is_metric_char)),
            _ => return Err(pos.unexpected(self.b, keyword.expected_name(), self.i, self.i)),
        };
        self.i = if self.b.get(name_end) == Some(&b'"') {
            name_end + 1
        } else {
            name_end
        };
        let name = self
            .checked
            .text(name_start, name_end, "metric name")
            .map_err(|e| pos.error(e))?;
        // The text is the rest of the line but for the one byte after the name.
        let text_start = self.i;
        self.skip_to_eol();
        let text_bytes = self.b.get(text_start + 1..self.i).unwrap_or_default();
        match keyword {
            MetaKind::Help => {
                let text = std::str::from_utf8(text_bytes).map_err(|_| {
                    pos.error(format!(
                        "help text {:?} is not a valid utf8 string",
                        String::from_utf8_lossy(text_bytes)
                    ))
                })?;
                let help = unescape_help(text);
                self.metadata.update(name, |m| m.help = help.into_owned());
                self.sink.other_line();
            }
            MetaKind::Type => {
                let kind = match text_bytes {
                    b"counter" => MetricType::Counter,
                    b"gauge" => MetricType::Gauge,
                    b"histogram" => MetricType::Histogram,
                    b"summary" => MetricType::Summary,
                    b"untyped" => MetricType::Unknown,
                    other => {
                        return Err(pos.error(format!("invalid metric type {:?}", String::from_utf8_lossy(other))));
                    }
                };
                self.kind = kind;
                self.metadata.update(name, |m| m.kind = kind);
                self.sink.type_line(name, kind);
            }
        }
        self.end_line();
        Ok(())
    }

    /// A sample line; the cursor is after its bare name, if it has one.
    fn sample(&mut self, start: usize, bare_name: Option<(usize, usize)>) -> Result<(), ExpositionError> {
        let mut name = bare_name;
        self.labels.clear();
        let series_start = bare_name.map_or(self.i, |(name_start, _)| name_start);
        let mut series_end = self.i;
        self.skip_blanks();
        if self.peek() == Some(b'{') {
            self.i += 1;
            self.label_set(start, &mut name)?;
            series_end = self.i;
            self.skip_blanks();
        }
        let pos = self.pos(start);
        let Some((name_start, name_end)) = name else {
            return Err(pos.error(format!(
                "metric name not set while parsing: {:?}",
                pos.entry_text(self.b, self.i)
            )));
        };
        let value_start = self.i;
        self.i = run_end(self.b, self.i, |c| !matches!(c, b'{' | b' ' | b'\t' | b'\n'));
        if self.i == value_start {
            return Err(pos.unexpected(self.b, "expected value after metric", value_start, self.i));
        }
        let value = (self.checked.text(value_start, self.i, "value"))
            .map_err(|_| "invalid syntax".to_string())
            .and_then(parse_go_float)
            .map_err(|e| pos.error(format!("{e} while parsing: {:?}", pos.entry_text(self.b, self.i))))?;
        self.skip_blanks();
        let timestamp_ms = match self.peek_eol() {
            b'\n' => None,
            c if c.is_ascii_digit() => {
                let ts_start = self.i;
                self.i = run_end(self.b, self.i, |c| c.is_ascii_digit());
                let digits = self.b.get(ts_start..self.i).unwrap_or_default();
                let ts = std::str::from_utf8(digits)
                    .ok()
                    .and_then(|s| s.parse::<i64>().ok())
                    .ok_or_else(|| {
                        pos.error(format!(
                            "strconv.ParseInt: parsing {:?}: value out of range while parsing: {:?}",
                            String::from_utf8_lossy(digits),
                            pos.entry_text(self.b, self.i)
                        ))
                    })?;
                self.skip_blanks();
                if self.peek_eol() != b'\n' {
                    return Err(pos.unexpected(self.b, "expected next entry after timestamp", self.i, self.i));
                }
                Some(ts)
            }
            _ => return Err(pos.unexpected(self.b, "expected timestamp or new record", self.i, self.i)),
        };
        let spelling = self.known.spelling(self.b, series_start..series_end, self.kind);
        let (labels, empty_labels, encoded) = if spelling.is_some_and(|s| s.known) {
            (Labels::empty(), Vec::new(), None)
        } else if let Some(encoder) = &mut self.encoder {
            let name = self
                .checked
                .text(name_start, name_end, "metric name")
                .map_err(|e| pos.error(e))?;
            // A bare name holds no escapes; a quoted one may.
            let name = if bare_name.is_some() {
                Cow::Borrowed(name)
            } else {
                unescape(name)
            };
            let encoded = encoder
                .encode(self.checked, self.kind, name, &self.labels)
                .map_err(|e| pos.error(e))?;
            (Labels::empty(), encoded.empty, Some(encoded.at))
        } else {
            let (labels, empty) = self.build_labels(name_start, name_end).map_err(|e| pos.error(e))?;
            (labels, empty, None)
        };
        self.sink.push(ScrapedSample {
            labels,
            empty_labels,
            timestamp_ms,
            value: ScrapedValue::Float(normalize_nan(value)),
            spelling,
            encoded,
        });
        self.end_line();
        Ok(())
    }

    /// The labels between braces; the cursor is after `{`. Records each
    /// pair's name and value spans in `self.labels`, and a quoted name
    /// without a value as the metric name.
    fn label_set(&mut self, start: usize, name: &mut Option<(usize, usize)>) -> Result<(), ExpositionError> {
        loop {
            self.skip_blanks();
            let pos = self.pos(start);
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
                    let q = quoted(self.b, self.i, true)
                        .ok_or_else(|| pos.unexpected(self.b, "expected label name", token_start, self.i))?;
                    self.i = q.end;
                    (token_start + 1, q.end - 1, Some(q))
                }
                _ => return Err(pos.unexpected(self.b, "expected label name", token_start, self.i)),
            };
            self.skip_blanks();
            if quoted_name.is_some() && matches!(self.peek(), Some(b',' | b'}')) {
                if name.is_some() {
                    return Err(pos.error(format!(
                        "metric name already set while parsing: {:?}",
                        pos.entry_text(self.b, self.i)
                    )));
                }
                *name = Some((name_start, name_end));
                if self.peek() == Some(b',') {
                    self.i += 1;
                }
                continue;
            }
            if self.peek() != Some(b'=') {
                return Err(pos.unexpected(self.b, "expected equal", self.i, self.i));
            }
            self.i += 1;
            self.skip_blanks();
            let value_start = self.i;
            let value = match self.peek() {
                Some(b'"') => quoted(self.b, self.i, true),
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
            self.skip_blanks();
            if self.peek() == Some(b',') {
                self.i += 1;
            }
        }
    }

    /// The sample's labels and those it gave with an empty value.
    fn build_labels(&self, name_start: usize, name_end: usize) -> Result<(Labels, Vec<Label>), String> {
        let name = unescape(self.checked.text(name_start, name_end, "metric name")?);
        let mut out = Vec::with_capacity(self.labels.len() + 3);
        out.push(Label::new(METRIC_NAME, name.as_ref()));
        let schema = self.type_and_unit_labels.then_some(SchemaLabels {
            kind: self.kind,
            unit: "",
        });
        if let Some(schema) = schema {
            schema.push_to(&mut out);
        }
        for &span in &self.labels {
            let (label, value) = label_at(self.checked, self.kind, span)?;
            if schema.is_some_and(|s| s.overrides(&label)) {
                continue;
            }
            out.push(Label::new(label.as_ref(), value.as_ref()));
        }
        finish_labels(out)
    }
}

#[derive(Clone, Copy)]
enum MetaKind {
    Help,
    Type,
}

impl MetaKind {
    fn expected_name(self) -> &'static str {
        match self {
            Self::Help => "expected metric name after HELP",
            Self::Type => "expected metric name after TYPE",
        }
    }
}

#[cfg(test)]
mod tests;
