//! What the two text parsers share: names, quoted strings and their
//! escapes, label sets, metadata, and error wording.

use std::borrow::Cow;

use cairn_model::go_float::format_openmetrics;
use cairn_model::{Label, LabelText, Labels, LabelsBuf, METRIC_NAME, METRIC_TYPE, METRIC_UNIT};

use super::float::parse_go_float;
use super::{EncodedAt, ExpositionError, FamilyMetadata, KnownSeries, Spelling, WriteLabels};
use crate::MetricType;

/// The classes of a byte in bare names, one bit each: a table look-up per
/// byte of every name read.
const METRIC_START: u8 = 1;
const METRIC_CHAR: u8 = 2;
const LABEL_START: u8 = 4;
const LABEL_CHAR: u8 = 8;

// The loop's index stays below the table's length.
#[allow(clippy::indexing_slicing)]
const NAME_CLASSES: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut c = 0;
    while c < 256 {
        let b = c as u8;
        let alpha = b.is_ascii_alphabetic() || b == b'_';
        let digit = b.is_ascii_digit();
        let colon = b == b':';
        t[c] = (if alpha || colon { METRIC_START } else { 0 })
            | (if alpha || colon || digit { METRIC_CHAR } else { 0 })
            | (if alpha { LABEL_START } else { 0 })
            | (if alpha || digit { LABEL_CHAR } else { 0 });
        c += 1;
    }
    t
};

fn in_class(c: u8, class: u8) -> bool {
    NAME_CLASSES
        .get(usize::from(c))
        .is_some_and(|&classes| classes & class != 0)
}

/// `[a-zA-Z_:]`: a bare metric name's first byte.
pub(crate) fn is_metric_start(c: u8) -> bool {
    in_class(c, METRIC_START)
}

/// `[a-zA-Z0-9_:]`.
pub(crate) fn is_metric_char(c: u8) -> bool {
    in_class(c, METRIC_CHAR)
}

/// `[a-zA-Z_]`: a bare label name's first byte.
pub(crate) fn is_label_start(c: u8) -> bool {
    in_class(c, LABEL_START)
}

/// `[a-zA-Z0-9_]`.
pub(crate) fn is_label_char(c: u8) -> bool {
    in_class(c, LABEL_CHAR)
}

/// The position of the next newline at or after `start`, or the end.
pub(crate) fn line_end(b: &[u8], start: usize) -> usize {
    b.get(start..)
        .and_then(|rest| memchr::memchr(b'\n', rest))
        .map_or(b.len(), |n| start + n)
}

/// The end (exclusive) of the run of bytes from `start` that satisfy `f`.
pub(crate) fn run_end(b: &[u8], start: usize, f: impl Fn(u8) -> bool) -> usize {
    let mut i = start;
    while b.get(i).is_some_and(|&c| f(c)) {
        i += 1;
    }
    i
}

/// The end (exclusive) of a double-quoted string opening at `start`:
/// a backslash escapes any byte but a newline; raw newlines are allowed
/// only where `newlines` says so. `None` if unterminated or malformed.
pub(crate) fn quoted_end(b: &[u8], start: usize, newlines: bool) -> Option<usize> {
    quoted(b, start, newlines).map(|q| q.end)
}

/// A double-quoted string's end, as [`quoted_end`], and whether it holds
/// a backslash: only then may it need [`unescape`].
pub(crate) fn quoted(b: &[u8], start: usize, newlines: bool) -> Option<Quoted> {
    let mut i = start + 1;
    let mut escaped = false;
    loop {
        match *b.get(i)? {
            b'"' => return Some(Quoted { end: i + 1, escaped }),
            b'\\' => {
                if *b.get(i + 1)? == b'\n' {
                    return None;
                }
                escaped = true;
                i += 2;
            }
            b'\n' if !newlines => return None,
            _ => i += 1,
        }
    }
}

/// See [`quoted`].
#[derive(Clone, Copy)]
pub(crate) struct Quoted {
    pub(crate) end: usize,
    pub(crate) escaped: bool,
}

/// Where a label's name and value are in a body (quotes excluded), and
/// whether either holds a backslash.
#[derive(Clone, Copy)]
pub(crate) struct LabelSpan {
    pub(crate) name: (usize, usize),
    pub(crate) value: (usize, usize),
    pub(crate) escaped: bool,
}

/// Label value escapes: `\"`, `\\` and `\n` are replaced; any other
/// backslash stays as written.
pub(crate) fn unescape(s: &str) -> Cow<'_, str> {
    unescape_escapes(s, true)
}

/// Prometheus text `HELP` escapes: only `\\` and `\n`.
pub(crate) fn unescape_help(s: &str) -> Cow<'_, str> {
    unescape_escapes(s, false)
}

/// `\\` and `\n` replaced, and `\"` when `quote`; any other backslash stays.
fn unescape_escapes(s: &str, quote: bool) -> Cow<'_, str> {
    if !s.contains('\\') {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('"') if quote => out.push('"'),
            Some('\\') => out.push('\\'),
            Some('n') => out.push('\n'),
            Some(other) => {
                out.push('\\');
                out.push(other);
            }
            None => out.push('\\'),
        }
    }
    Cow::Owned(out)
}

/// A histogram's `le` and a summary's `quantile` are rewritten in
/// OpenMetrics' float spelling (`1` → `1.0`), so the text formats and
/// protobuf name the same bucket alike. `kind` is the last `TYPE` read.
pub(crate) fn normalize_label_value<'a>(kind: MetricType, name: &str, value: Cow<'a, str>) -> Cow<'a, str> {
    let applies =
        (kind == MetricType::Summary && name == "quantile") || (kind == MetricType::Histogram && name == "le");
    if !applies {
        return value;
    }
    match parse_go_float(&value) {
        Ok(f) => Cow::Owned(format_openmetrics(f)),
        Err(_) => value,
    }
}

/// Builds a sample's canonical labels, refusing what Prometheus refuses
/// when it appends a scraped series: an empty metric name, an empty label
/// name, a name given twice. The labels given with an empty value come
/// apart, sorted by name (see [`super::ScrapedSample::empty_labels`]).
pub(crate) fn finish_labels(mut labels: Vec<Label>) -> Result<(Labels, Vec<Label>), String> {
    labels.sort_unstable_by(|a, b| a.name.cmp(&b.name));
    refuse_labels(labels.iter().map(|l| (l.name.as_str(), l.value.as_str())))?;
    let empty: Vec<Label> = labels.extract_if(.., |l| l.value.is_empty()).collect();
    let labels = Labels::new(labels).map_err(|e| e.to_string())?;
    Ok((labels, empty))
}

/// What [`finish_labels`] refuses in labels sorted by name, in its order:
/// a name given twice, then an empty metric name, then an empty label name.
fn refuse_labels<'a>(sorted: impl Iterator<Item = (&'a str, &'a str)>) -> Result<(), String> {
    let (mut previous, mut name_ok, mut empty_name) = (None, false, false);
    for (name, value) in sorted {
        if previous == Some(name) {
            return Err(format!("label name {name:?} is not unique"));
        }
        previous = Some(name);
        name_ok |= name == METRIC_NAME && !value.is_empty();
        empty_name |= name.is_empty();
    }
    if !name_ok {
        return Err("invalid metric name: empty".to_string());
    }
    if empty_name {
        return Err("invalid label name: empty".to_string());
    }
    Ok(())
}

/// The label whose name and value lie at `span` of `b` (as a text parser
/// records them), unescaped, its value normalised under the last `TYPE`
/// read, `kind`.
pub(crate) fn label_at<'a>(
    b: Body<'a>,
    kind: MetricType,
    span: LabelSpan,
) -> Result<(Cow<'a, str>, Cow<'a, str>), String> {
    let name = b.text(span.name.0, span.name.1, "label name")?;
    let value = b.text(span.value.0, span.value.1, "label value")?;
    let (name, value) = if span.escaped {
        (unescape(name), unescape(value))
    } else {
        (Cow::Borrowed(name), Cow::Borrowed(value))
    };
    let value = normalize_label_value(kind, &name, value);
    Ok((name, value))
}

/// Writes samples' labels into one [`LabelsBuf`] instead of building a
/// label set each ([`super::parse_encoded`]): what [`finish_labels`]
/// checks and returns, without an allocation per sample.
pub(crate) struct LabelEncoder<'a, 'w> {
    /// The sample's pairs, reused between samples.
    pairs: Vec<(Cow<'a, str>, Cow<'a, str>)>,
    pub buf: LabelsBuf,
    /// The reader's own writer, tried first.
    write: Option<WriteLabels<'w>>,
}

/// A sample's encoded labels: where they are, and those given empty.
pub(crate) struct Encoded {
    pub at: EncodedAt,
    pub empty: Vec<Label>,
}

impl<'a, 'w> LabelEncoder<'a, 'w> {
    /// An encoder with room for the labels of `body`'s samples, unless a
    /// reader's writer takes them.
    pub fn for_body(body: &[u8], write: Option<WriteLabels<'w>>) -> Self {
        let buf = match write {
            Some(_) => LabelsBuf::default(),
            None => LabelsBuf::with_capacity(body.len(), samples_in(body)),
        };
        Self {
            pairs: Vec::new(),
            buf,
            write,
        }
    }

    /// Encodes a sample named `name` whose labels are at `spans` (name and
    /// value, unescaped here) of `b`, under the last `TYPE` read, `kind`.
    pub fn encode(
        &mut self,
        b: Body<'a>,
        kind: MetricType,
        name: Cow<'a, str>,
        spans: &[LabelSpan],
    ) -> Result<Encoded, String> {
        let pairs = &mut self.pairs;
        pairs.clear();
        pairs.push((Cow::Borrowed(METRIC_NAME), name));
        for &span in spans {
            pairs.push(label_at(b, kind, span)?);
        }
        pairs.sort_unstable_by(|a, b| LabelText::from(&*a.0).cmp(&LabelText::from(&*b.0)));
        let borrowed = || pairs.iter().map(|(n, v)| (n.as_ref(), v.as_ref()));
        refuse_labels(borrowed())?;
        let empty: Vec<Label> = borrowed()
            .filter(|(_, v)| v.is_empty())
            .map(|(n, _)| Label::new(n, ""))
            .collect();
        let (index, by_reader) = match self.write.as_mut().and_then(|write| write(pairs)) {
            Some(index) => (index, true),
            None => (
                self.buf.push_sorted(borrowed()).map_err(|e| e.to_string())? as u32,
                false,
            ),
        };
        Ok(Encoded {
            at: EncodedAt { index, by_reader },
            empty,
        })
    }
}

/// Metadata entries in order of first appearance, one per family name.
#[derive(Default)]
pub(crate) struct MetadataSet {
    entries: Vec<FamilyMetadata>,
    index: foldhash::HashMap<String, usize>,
}

impl MetadataSet {
    /// Changes the entry for `name`, created empty if new.
    pub(crate) fn update(&mut self, name: &str, f: impl FnOnce(&mut FamilyMetadata)) {
        let i = match self.index.get(name) {
            Some(&i) => i,
            None => {
                self.entries.push(FamilyMetadata {
                    name: name.to_string(),
                    ..FamilyMetadata::default()
                });
                self.index.insert(name.to_string(), self.entries.len() - 1);
                self.entries.len() - 1
            }
        };
        if let Some(e) = self.entries.get_mut(i) {
            f(e);
        }
    }

    pub(crate) fn into_vec(self) -> Vec<FamilyMetadata> {
        self.entries
    }
}

/// Where the entry being read started, for error messages. Its line is
/// numbered from that offset once parsing has failed ([`numbered`]), so
/// that reading a body counts no lines.
#[derive(Clone, Copy)]
pub(crate) struct Position {
    pub(crate) entry_start: usize,
}

/// A text format's error with the 1-based line of its offset in `body`.
pub(crate) fn numbered(body: &[u8], mut error: ExpositionError) -> ExpositionError {
    let before = body.get(..error.offset).unwrap_or(body);
    error.line = memchr::memchr_iter(b'\n', before).count() + 1;
    error
}

impl Position {
    /// An error worded as Prometheus words its parse errors: what was
    /// expected, what was found, and the entry so far.
    pub(crate) fn unexpected(self, b: &[u8], expected: &str, token_start: usize, i: usize) -> ExpositionError {
        let end = (i + 1).min(b.len());
        let got = b.get(token_start.min(end)..end).unwrap_or_default();
        let entry = b.get(self.entry_start.min(end)..end).unwrap_or_default();
        ExpositionError::new(
            0,
            self.entry_start,
            format!(
                "{expected}, got {:?} while parsing: {:?}",
                String::from_utf8_lossy(got),
                String::from_utf8_lossy(entry)
            ),
        )
    }

    pub(crate) fn error(self, message: impl Into<String>) -> ExpositionError {
        ExpositionError::new(0, self.entry_start, message)
    }

    /// The entry from its start to `i`, for messages.
    pub(crate) fn entry_text(self, b: &[u8], i: usize) -> String {
        let end = i.min(b.len());
        String::from_utf8_lossy(b.get(self.entry_start.min(end)..end).unwrap_or_default()).into_owned()
    }
}

/// At most how many samples a text body has (one a line), for room made
/// before parsing it, so that vectors sized by it never grow.
pub(crate) fn samples_in(body: &[u8]) -> usize {
    memchr::memchr_iter(b'\n', body).count() + 1
}

/// A body being parsed, and its text when all of it is UTF-8: checked
/// once, so that a name or value is a slice of it rather than checked again.
#[derive(Clone, Copy)]
pub(crate) struct Body<'a> {
    pub(crate) bytes: &'a [u8],
    text: Option<&'a str>,
}

impl<'a> Body<'a> {
    pub(crate) fn new(bytes: &'a [u8]) -> Self {
        Self {
            bytes,
            text: std::str::from_utf8(bytes).ok(),
        }
    }

    /// The text of `start..end`, or an error naming `what` (as [`utf8`]).
    pub(crate) fn text(self, start: usize, end: usize, what: &str) -> Result<&'a str, String> {
        match self.text.and_then(|t| t.get(start..end)) {
            Some(text) => Ok(text),
            None => utf8(self.bytes, start, end, what),
        }
    }
}

/// The UTF-8 text of `b[start..end]`, or an error naming `what`.
pub(crate) fn utf8<'a>(b: &'a [u8], start: usize, end: usize, what: &str) -> Result<&'a str, String> {
    let bytes = b.get(start..end).unwrap_or_default();
    std::str::from_utf8(bytes).map_err(|_| format!("invalid UTF-8 {what}: {:?}", String::from_utf8_lossy(bytes)))
}

/// Prometheus' type-and-unit labels: `__type__` and `__unit__` from the
/// family's metadata, which replace any the sample carries itself (as does
/// the metric name an explicit `__name__` label).
#[derive(Clone, Copy)]
pub(crate) struct SchemaLabels<'a> {
    pub(crate) kind: MetricType,
    pub(crate) unit: &'a str,
}

impl SchemaLabels<'_> {
    /// Whether a sample's own label `name` gives way to the metadata.
    pub(crate) fn overrides(self, name: &str) -> bool {
        match name {
            METRIC_NAME => true,
            METRIC_TYPE => self.kind != MetricType::Unknown,
            METRIC_UNIT => !self.unit.is_empty(),
            _ => false,
        }
    }

    pub(crate) fn push_to(self, labels: &mut Vec<Label>) {
        if self.kind != MetricType::Unknown {
            labels.push(Label::new(METRIC_TYPE, self.kind.as_str()));
        }
        if !self.unit.is_empty() {
            labels.push(Label::new(METRIC_UNIT, self.unit));
        }
    }
}

/// A text parser's link to the scraper's series cache ([`super::parse_with_known`]).
pub(crate) struct KnownSpellings<'k> {
    known: Option<KnownSeries<'k>>,
    /// The key being asked about, reused between samples.
    key: Vec<u8>,
}

impl<'k> KnownSpellings<'k> {
    pub(crate) fn new(known: Option<KnownSeries<'k>>) -> Self {
        Self { known, key: Vec::new() }
    }

    /// The spelling of the series at `span` of `body`, and whether the
    /// scraper knows it; `None` when no scraper asked.
    pub(crate) fn spelling(&mut self, body: &[u8], span: std::ops::Range<usize>, kind: MetricType) -> Option<Spelling> {
        let known = self.known.as_mut()?;
        let mut spelling = Spelling {
            start: span.start,
            end: span.end,
            kind,
            known: false,
        };
        spelling.key(body, &mut self.key);
        spelling.known = known(&self.key);
        Some(spelling)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn name_classes_are_prometheus_bare_name_bytes() {
        for c in 0..=255u8 {
            let alpha = c.is_ascii_alphabetic() || c == b'_';
            let digit = c.is_ascii_digit();
            assert_eq!(is_metric_start(c), alpha || c == b':', "{c}");
            assert_eq!(is_metric_char(c), alpha || digit || c == b':', "{c}");
            assert_eq!(is_label_start(c), alpha, "{c}");
            assert_eq!(is_label_char(c), alpha || digit, "{c}");
        }
    }
}
