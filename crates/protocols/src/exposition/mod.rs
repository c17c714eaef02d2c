//! What a scrape returns, read as Prometheus 3.14's scrape path reads it.
//!
//! [`parse`] turns one scrape body into [`ScrapedSample`]s and
//! [`FamilyMetadata`], in the format the target's `Content-Type` named
//! ([`ScrapeFormat::from_content_type`]):
//!
//! - [`text`]: the Prometheus text format (0.0.4 and 1.0.0 read alike);
//! - [`openmetrics`]: OpenMetrics text (0.0.1 and 1.0.0 read alike);
//! - [`protobuf`]: varint-delimited `io.prometheus.client.MetricFamily`
//!   messages, the only format that carries native histograms.
//!
//! Unlike the import parsers ([`crate::prom_text`]), a scrape is all or
//! nothing: the first malformed entry fails the whole body, with its line
//! (or message) and byte offset, as Prometheus fails the scrape.
//!
//! A sample's labels always include `__name__`; labels with an empty value
//! are kept apart from them (they still matter to `honor_labels`), and a
//! label name given twice is an error (Prometheus refuses
//! such a scrape when it appends it). Values keep their bits but for a
//! text `NaN`, which becomes Prometheus' ordinary NaN (never the staleness
//! marker). Exemplars are checked for syntax and dropped.
//!
//! In both text formats a histogram's `le` and a summary's `quantile` are
//! respelt as OpenMetrics floats (`1` → `1.0`) when the last `TYPE` line
//! says histogram or summary, so that every format names a bucket alike.
//! Classic histograms can be converted to native histograms with custom
//! buckets (see [`ParseOptions`]); which series are kept, and the
//! timestamp the converted sample gets, follow Prometheus.
//!
//! What stays with the scraper: choosing the format from the answer
//! ([`ScrapeFormat::for_response`], with `fallback_scrape_protocol`),
//! decompression, body size, sample and label limits, the legacy name
//! validation scheme, duplicate series within one scrape, and staleness.

mod classic;
mod common;
mod float;
mod format;
pub mod openmetrics;
pub mod proto;
pub mod protobuf;
pub mod text;

use std::borrow::Cow;

use cairn_model::{Histogram, Label, Labels, LabelsBuf};

use crate::MetricType;

pub use format::{DEFAULT_ESCAPING_SCHEME, ScrapeFormat};

/// How one scrape body is read; the scrape config's switches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParseOptions {
    /// `always_scrape_classic_histograms`: keep a histogram's classic
    /// buckets as float series even when it also has a native part.
    pub keep_classic_histograms: bool,
    /// `convert_classic_histograms_to_nhcb`: classic histograms become
    /// native histograms with custom buckets (schema -53); their float
    /// series are then kept only with `keep_classic_histograms`.
    pub convert_classic_histograms_to_nhcb: bool,
    /// `scrape_native_histograms`: read the native part of protobuf
    /// histograms. When off, only their classic series are read.
    pub native_histograms: bool,
    /// Created-timestamp ingestion: drop OpenMetrics `_created` series of
    /// counters, summaries and histograms (Prometheus keeps them as plain
    /// series unless this feature is on).
    pub skip_openmetrics_created_series: bool,
}

impl Default for ParseOptions {
    /// Prometheus 3.14's defaults.
    fn default() -> Self {
        Self {
            keep_classic_histograms: false,
            convert_classic_histograms_to_nhcb: false,
            native_histograms: false,
            skip_openmetrics_created_series: false,
        }
    }
}

/// Everything one scrape body holds.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Exposition {
    /// In the order the body gives them.
    pub samples: Vec<ScrapedSample>,
    /// The labels of samples read by [`parse_encoded`], each at its
    /// sample's [`ScrapedSample::encoded`].
    pub labels: LabelsBuf,
    /// One entry per family that had a `HELP`, `TYPE` or `UNIT` (every
    /// family, in protobuf), in order of first appearance.
    pub metadata: Vec<FamilyMetadata>,
}

/// One sample of one series.
#[derive(Debug, Clone, PartialEq)]
pub struct ScrapedSample {
    /// Canonical labels, `__name__` included.
    pub labels: Labels,
    /// The labels the body gave with an empty value, which `labels` leaves
    /// out, sorted by name; unallocated when there are none. Prometheus'
    /// scraper still sees them: with `honor_labels`, an exposed `job=""`
    /// keeps the target's `job` off the series.
    pub empty_labels: Vec<Label>,
    /// The exposed timestamp in milliseconds, if the body gave one (the
    /// scraper uses the scrape's time otherwise).
    pub timestamp_ms: Option<i64>,
    pub value: ScrapedValue,
    /// How a text body spelt the series, when read by [`parse_with_known`].
    pub spelling: Option<Spelling>,
    /// Where [`Exposition::labels`] holds the labels, which `labels` then
    /// leaves empty ([`parse_encoded`]).
    pub encoded: Option<EncodedAt>,
}

/// Where a sample's labels are: in [`Exposition::labels`], or, when the
/// reader's [`WriteLabels`] wrote them, wherever it keeps them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EncodedAt {
    /// In [`Exposition::labels`], or the reader's own index.
    pub index: u32,
    /// The reader's [`WriteLabels`] wrote them (whatever labels it chose);
    /// else they are the labels the body gave.
    pub by_reader: bool,
}

/// A reader's own writing of a sample's series ([`parse_encoded`]): given
/// its labels sorted by name and checked, `__name__` among them and labels
/// given empty with their empty value, it writes the series where and how
/// it likes and returns its own index for it, or returns `None` to have
/// the body's labels encoded into [`Exposition::labels`]. A reader that
/// adds labels of its own thus writes each series once, in its own form.
pub type WriteLabels<'w> = &'w mut dyn FnMut(&LabelPairs<'_>) -> Option<u32>;

/// A sample's labels as a text body gives them, unescaped.
pub type LabelPairs<'a> = [(Cow<'a, str>, Cow<'a, str>)];

/// How a parser gives each sample's labels.
pub(crate) enum LabelOutput<'w> {
    /// As a label set (none for series the reader knows).
    Built,
    /// Encoded into [`Exposition::labels`], by the reader's writer where it
    /// takes them.
    Encoded(Option<WriteLabels<'w>>),
}

/// Where a text body spells a sample's series (its name and label set, as
/// written) and the family type under which those bytes read: together, a
/// scraper's key for the series, so that a series it has seen is not read
/// again (Prometheus' scrape cache does the same).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Spelling {
    pub start: usize,
    pub end: usize,
    /// Decides how the bytes read: histograms and summaries respell `le`
    /// and `quantile` values.
    pub kind: MetricType,
    /// The scraper said it knows this key: `labels` and `empty_labels` were
    /// not built (they are empty).
    pub known: bool,
}

impl Spelling {
    /// The key in `out`: the type's tag, then the bytes. No tag is `0xff`,
    /// which leaves that first byte to keys of another kind.
    pub fn key(&self, body: &[u8], out: &mut Vec<u8>) {
        out.clear();
        out.push(self.kind as u8);
        out.extend_from_slice(body.get(self.start..self.end).unwrap_or_default());
    }
}

/// The scraper's answer to "is the series under this [`Spelling::key`] known?".
pub type KnownSeries<'k> = &'k mut dyn FnMut(&[u8]) -> bool;

/// A sample's value.
#[derive(Debug, Clone, PartialEq)]
pub enum ScrapedValue {
    Float(f64),
    /// A native histogram (exponential, or custom buckets from NHCB
    /// conversion). Integer histograms arrive with float counts, as Cairn
    /// keeps them; a gauge histogram has [`cairn_model::histogram::ResetHint::Gauge`].
    /// Boxed: most samples are floats, and a sample is moved several times.
    Histogram(Box<Histogram>),
}

/// What a body says about one metric family.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FamilyMetadata {
    /// The family name as written (`http_requests`, not `..._total`, in
    /// OpenMetrics).
    pub name: String,
    pub kind: MetricType,
    pub help: String,
    pub unit: String,
}

/// Why a body could not be read; the whole scrape fails.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message} (line {line}, byte {offset})")]
pub struct ExpositionError {
    /// 1-based line of text formats; for protobuf, the 1-based index of the
    /// `MetricFamily` message.
    pub line: usize,
    /// Byte offset in the body where the faulty entry starts.
    pub offset: usize,
    /// Prometheus-like wording of what was wrong.
    pub message: String,
}

impl ExpositionError {
    pub(crate) fn new(line: usize, offset: usize, message: impl Into<String>) -> Self {
        Self {
            line,
            offset,
            message: message.into(),
        }
    }
}

/// Reads one (decompressed) scrape body in `format`. An empty body is an
/// empty scrape in every format (Prometheus never parses one, so even
/// OpenMetrics needs no `# EOF` there).
pub fn parse(format: ScrapeFormat, body: &[u8], opts: &ParseOptions) -> Result<Exposition, ExpositionError> {
    parse_as(format, body, opts, false, None, LabelOutput::Built)
}

/// [`parse`] for a reader that wants each sample's labels encoded rather
/// than built: the text formats write them into [`Exposition::labels`]
/// (see [`ScrapedSample::encoded`]), without an allocation per sample,
/// with `write` where it takes them. Protobuf bodies and classic
/// histograms converted to native ones are read as [`parse`] reads them.
pub fn parse_encoded(
    format: ScrapeFormat,
    body: &[u8],
    opts: &ParseOptions,
    write: Option<WriteLabels<'_>>,
) -> Result<Exposition, ExpositionError> {
    let output = if opts.convert_classic_histograms_to_nhcb {
        LabelOutput::Built
    } else {
        LabelOutput::Encoded(write)
    };
    parse_as(format, body, opts, false, None, output)
}

/// [`parse`] under Prometheus' `type-and-unit-labels` feature: every
/// sample gets `__type__` (unless its type is unknown) and `__unit__`
/// (unless empty) from its family's metadata, replacing labels of those
/// names it carries. The text formats take them from the last `TYPE` and
/// `UNIT` lines read, as Prometheus does.
pub fn parse_with_type_and_unit_labels(
    format: ScrapeFormat,
    body: &[u8],
    opts: &ParseOptions,
) -> Result<Exposition, ExpositionError> {
    parse_as(format, body, opts, true, None, LabelOutput::Built)
}

/// [`parse`] for a scraper that caches series by how the body spells them:
/// every sample of a text format gets its [`Spelling`], and the labels of
/// those whose key `known` accepts are not built. Protobuf bodies, and
/// classic histograms converted to native ones (whose series are made of
/// several lines), are read as [`parse`] reads them.
pub fn parse_with_known(
    format: ScrapeFormat,
    body: &[u8],
    opts: &ParseOptions,
    known: KnownSeries<'_>,
) -> Result<Exposition, ExpositionError> {
    let known = (!opts.convert_classic_histograms_to_nhcb).then_some(known);
    parse_as(format, body, opts, false, known, LabelOutput::Built)
}

fn parse_as<'k>(
    format: ScrapeFormat,
    body: &[u8],
    opts: &ParseOptions,
    type_and_unit_labels: bool,
    known: Option<KnownSeries<'k>>,
    output: LabelOutput<'k>,
) -> Result<Exposition, ExpositionError> {
    if body.is_empty() {
        return Ok(Exposition::default());
    }
    match format {
        ScrapeFormat::PrometheusText0_0_4 | ScrapeFormat::PrometheusText1_0_0 => {
            text::parse_as(body, opts, type_and_unit_labels, known, output)
        }
        ScrapeFormat::OpenMetricsText0_0_1 | ScrapeFormat::OpenMetricsText1_0_0 => {
            openmetrics::parse_as(body, opts, type_and_unit_labels, known, output)
        }
        ScrapeFormat::PrometheusProto => protobuf::parse_as(body, opts, type_and_unit_labels),
    }
}

#[cfg(test)]
mod encoded_tests;
#[cfg(test)]
mod known_tests;
#[cfg(test)]
mod roundtrip_tests;
