//! The Prometheus protobuf exposition format: `MetricFamily` messages
//! ([`super::proto`]), each preceded by its length as a varint, read as
//! Prometheus' protobuf scrape parser reads them.
//!
//! - Counters, gauges and untyped metrics are one float sample each;
//!   summaries are `_count`, `_sum`, then one series per quantile.
//! - A histogram is native when it has spans or a zero bucket (threshold
//!   or count above zero) and native histograms are scraped: it becomes
//!   one histogram sample (float counts when `sample_count_float` or
//!   `zero_count_float` is set, integer deltas otherwise), followed by its
//!   classic series only with `keep_classic_histograms` and classic
//!   buckets to keep. Otherwise it is classic: `_count`, `_sum`, then
//!   `_bucket` series up to the first `le="+Inf"` (added when missing), or
//!   one NHCB sample when classic histograms are converted.
//! - `timestamp_ms` zero means no timestamp. Families without metrics are
//!   skipped entirely. Exemplars and start timestamps are ignored.

use cairn_model::go_float::format_openmetrics;
use cairn_model::histogram::{ResetHint, counts_from_deltas, expand_spans};
use cairn_model::{Histogram, Label, Labels, METRIC_NAME};

use super::classic::ClassicHistogram;
use super::common::{MetadataSet, SchemaLabels, finish_labels};
use super::proto;
use super::{Exposition, ExpositionError, ParseOptions, ScrapedSample, ScrapedValue};
use crate::MetricType;
use crate::histogram::{check_integer_counts, finish};

/// The longest length prefix Prometheus accepts: a 32-bit varint.
const MAX_PREFIX_LEN: usize = 5;

/// Reads a whole body.
pub fn parse(body: &[u8], opts: &ParseOptions) -> Result<Exposition, ExpositionError> {
    parse_as(body, opts, false)
}

/// [`parse`], with type-and-unit labels when asked.
pub(crate) fn parse_as(
    body: &[u8],
    opts: &ParseOptions,
    type_and_unit_labels: bool,
) -> Result<Exposition, ExpositionError> {
    let mut samples = Vec::new();
    let mut metadata = MetadataSet::default();
    let mut at = 0;
    let mut family_number = 0;
    let mut buffers = Buffers::default();
    while at < body.len() {
        family_number += 1;
        let rest = body.get(at..).unwrap_or_default();
        let fail = |message: String| ExpositionError::new(family_number, at, message);
        let (len, prefix) = read_prefix(rest).ok_or_else(|| fail("invalid varint encountered".into()))?;
        let total = prefix.saturating_add(len);
        let message = rest.get(prefix..total).ok_or_else(|| {
            fail(format!(
                "insufficient length of buffer, expected at least {total} bytes, got {} bytes",
                rest.len()
            ))
        })?;
        read_family(
            message,
            opts,
            type_and_unit_labels,
            &mut buffers,
            &mut samples,
            &mut metadata,
        )
        .map_err(fail)?;
        at += total;
    }
    Ok(Exposition {
        samples,
        metadata: metadata.into_vec(),
        labels: Default::default(),
    })
}

/// The varint length prefix: its value and how many bytes it took.
fn read_prefix(b: &[u8]) -> Option<(usize, usize)> {
    let mut value = 0u64;
    for (i, &byte) in b.iter().take(MAX_PREFIX_LEN).enumerate() {
        value |= u64::from(byte & 0x7f) << (7 * i);
        if byte < 0x80 {
            return Some((usize::try_from(value).ok()?, i + 1));
        }
    }
    None
}

fn kind_of(t: proto::MetricType) -> MetricType {
    match t {
        proto::MetricType::Counter => MetricType::Counter,
        proto::MetricType::Gauge => MetricType::Gauge,
        proto::MetricType::Summary => MetricType::Summary,
        proto::MetricType::Untyped => MetricType::Unknown,
        proto::MetricType::Histogram => MetricType::Histogram,
        proto::MetricType::GaugeHistogram => MetricType::GaugeHistogram,
    }
}

/// Scratch space reused from family to family.
#[derive(Default)]
struct Buffers<'a> {
    metrics: Vec<&'a [u8]>,
    labels: Vec<(&'a str, &'a str)>,
}

fn read_family<'a>(
    message: &'a [u8],
    opts: &ParseOptions,
    type_and_unit_labels: bool,
    buffers: &mut Buffers<'a>,
    samples: &mut Vec<ScrapedSample>,
    metadata: &mut MetadataSet,
) -> Result<(), String> {
    let family = wire::family(message, &mut buffers.metrics)?;
    if buffers.metrics.is_empty() {
        return Ok(());
    }
    let name = family.name;
    if name.is_empty() {
        return Err(format!("invalid metric name: {name}"));
    }
    let Ok(t) = proto::MetricType::try_from(family.kind) else {
        return Err(format!("unknown metric type for metric {name:?}: {}", family.kind));
    };
    let kind = kind_of(t);
    metadata.update(name, |m| {
        m.kind = kind;
        family.help.clone_into(&mut m.help);
        family.unit.clone_into(&mut m.unit);
    });
    let schema = type_and_unit_labels.then_some(SchemaLabels {
        kind,
        unit: family.unit,
    });
    for &encoded in &buffers.metrics {
        let metric = wire::metric(encoded, &mut buffers.labels)?;
        let pairs = &buffers.labels;
        let timestamp_ms = (metric.timestamp_ms != 0).then_some(metric.timestamp_ms);
        let mut emit = |suffix: &str, extra: Option<(&str, String)>, value: ScrapedValue| -> Result<(), String> {
            let (labels, empty_labels) = labels_of(name, suffix, pairs, extra, schema)?;
            samples.push(ScrapedSample {
                labels,
                empty_labels,
                timestamp_ms,
                value,
                spelling: None,
                encoded: None,
            });
            Ok(())
        };
        match t {
            proto::MetricType::Counter => {
                emit(
                    "",
                    None,
                    ScrapedValue::Float(metric.counter.as_ref().map_or(0.0, |c| c.value)),
                )?;
            }
            proto::MetricType::Gauge => {
                emit(
                    "",
                    None,
                    ScrapedValue::Float(metric.gauge.as_ref().map_or(0.0, |g| g.value)),
                )?;
            }
            proto::MetricType::Untyped => {
                emit(
                    "",
                    None,
                    ScrapedValue::Float(metric.untyped.as_ref().map_or(0.0, |u| u.value)),
                )?;
            }
            proto::MetricType::Summary => {
                let empty = proto::Summary::default();
                let s = metric.summary.as_ref().unwrap_or(&empty);
                emit("_count", None, ScrapedValue::Float(s.sample_count as f64))?;
                emit("_sum", None, ScrapedValue::Float(s.sample_sum))?;
                for q in &s.quantile {
                    emit(
                        "",
                        Some(("quantile", format_openmetrics(q.quantile))),
                        ScrapedValue::Float(q.value),
                    )?;
                }
            }
            proto::MetricType::Histogram | proto::MetricType::GaugeHistogram => {
                let empty = proto::Histogram::default();
                let h = metric.histogram.as_ref().unwrap_or(&empty);
                let gauge = t == proto::MetricType::GaugeHistogram;
                if opts.native_histograms && is_native(h) {
                    let native = native_histogram(h, gauge).map_err(|e| format!("histogram {name:?}: {e}"))?;
                    emit("", None, ScrapedValue::Histogram(Box::new(native)))?;
                    if opts.keep_classic_histograms && !h.bucket.is_empty() {
                        classic_series(h, &mut emit)?;
                    }
                } else if opts.convert_classic_histograms_to_nhcb {
                    if opts.keep_classic_histograms {
                        classic_series(h, &mut emit)?;
                    }
                    let nhcb = nhcb(h, gauge).map_err(|e| format!("histogram {name:?}: {e}"))?;
                    emit("", None, ScrapedValue::Histogram(Box::new(nhcb)))?;
                } else {
                    classic_series(h, &mut emit)?;
                }
            }
        }
    }
    Ok(())
}

/// `name` + `suffix`, the metric's labels and the series' own `le` or
/// `quantile`, checked as Prometheus checks scraped labels; and the label
/// pairs with an empty value.
fn labels_of(
    name: &str,
    suffix: &str,
    pairs: &[(&str, &str)],
    extra: Option<(&str, String)>,
    schema: Option<SchemaLabels<'_>>,
) -> Result<(Labels, Vec<Label>), String> {
    let mut labels = Vec::with_capacity(pairs.len() + 2);
    if suffix.is_empty() {
        labels.push(Label::new(METRIC_NAME, name));
    } else {
        labels.push(Label::new(METRIC_NAME, [name, suffix].concat()));
    }
    if let Some(schema) = schema {
        schema.push_to(&mut labels);
    }
    for &(n, v) in pairs {
        if n.is_empty() {
            return Err("invalid label name: ".to_string());
        }
        if schema.is_some_and(|s| s.overrides(n)) {
            continue;
        }
        labels.push(Label::new(n, v));
    }
    if let Some((n, v)) = extra {
        labels.push(Label::new(n, v));
    }
    finish_labels(labels)
}

fn count_of(float: f64, integer: u64) -> f64 {
    if float != 0.0 { float } else { integer as f64 }
}

/// `_count`, `_sum`, then the buckets up to the first `+Inf` one, which is
/// added (with the count) when missing.
fn classic_series(
    h: &proto::Histogram,
    emit: &mut impl FnMut(&str, Option<(&str, String)>, ScrapedValue) -> Result<(), String>,
) -> Result<(), String> {
    let count = count_of(h.sample_count_float, h.sample_count);
    emit("_count", None, ScrapedValue::Float(count))?;
    emit("_sum", None, ScrapedValue::Float(h.sample_sum))?;
    for b in &h.bucket {
        let cumulative = count_of(b.cumulative_count_float, b.cumulative_count);
        emit(
            "_bucket",
            Some(("le", format_openmetrics(b.upper_bound))),
            ScrapedValue::Float(cumulative),
        )?;
        if b.upper_bound == f64::INFINITY {
            return Ok(());
        }
    }
    emit("_bucket", Some(("le", "+Inf".to_string())), ScrapedValue::Float(count))
}

fn is_native(h: &proto::Histogram) -> bool {
    !h.positive_span.is_empty() || !h.negative_span.is_empty() || h.zero_threshold > 0.0 || h.zero_count > 0
}

fn spans(s: &[proto::BucketSpan]) -> impl Iterator<Item = (i32, u32)> + '_ {
    s.iter().map(|s| (s.offset, s.length))
}

/// Checks that each side's spans describe as many buckets as it has.
fn check_spans(side: &str, s: &[proto::BucketSpan], buckets: usize) -> Result<(), String> {
    let described: u64 = s.iter().map(|s| u64::from(s.length)).sum();
    if described != buckets as u64 {
        return Err(format!(
            "{side} side: spans require {described} buckets, have {buckets}"
        ));
    }
    Ok(())
}

fn native_histogram(h: &proto::Histogram, gauge: bool) -> Result<Histogram, String> {
    let float = h.sample_count_float > 0.0 || h.zero_count_float > 0.0;
    let (positive, negative, count, zero_count) = if float {
        check_spans("positive", &h.positive_span, h.positive_count.len())?;
        check_spans("negative", &h.negative_span, h.negative_count.len())?;
        let positive = expand_spans(spans(&h.positive_span), h.positive_count.iter().copied());
        let negative = expand_spans(spans(&h.negative_span), h.negative_count.iter().copied());
        (positive, negative, h.sample_count_float, h.zero_count_float)
    } else {
        check_spans("positive", &h.positive_span, h.positive_delta.len())?;
        check_spans("negative", &h.negative_span, h.negative_delta.len())?;
        check_integer_counts(
            &h.positive_delta,
            &h.negative_delta,
            h.zero_count,
            h.sample_count,
            h.sample_sum,
        )
        .map_err(|e| e.to_string())?;
        let positive = expand_spans(spans(&h.positive_span), counts_from_deltas(&h.positive_delta));
        let negative = expand_spans(spans(&h.negative_span), counts_from_deltas(&h.negative_delta));
        (positive, negative, h.sample_count as f64, h.zero_count as f64)
    };
    let mut out = Histogram {
        schema: h.schema,
        reset_hint: if gauge { ResetHint::Gauge } else { ResetHint::Unknown },
        count,
        sum: h.sample_sum,
        zero_threshold: h.zero_threshold,
        zero_count,
        positive: positive.map_err(|e| e.to_string())?,
        negative: negative.map_err(|e| e.to_string())?,
        custom_bounds: None,
    };
    out.compact();
    finish(out).map_err(|e| e.to_string())
}

fn nhcb(h: &proto::Histogram, gauge: bool) -> Result<Histogram, String> {
    let mut c = ClassicHistogram::default();
    c.set_count(count_of(h.sample_count_float, h.sample_count));
    c.set_sum(h.sample_sum);
    for b in &h.bucket {
        c.set_bucket(b.upper_bound, count_of(b.cumulative_count_float, b.cumulative_count));
    }
    c.convert(gauge)
}

mod wire;

#[cfg(test)]
mod tests;
