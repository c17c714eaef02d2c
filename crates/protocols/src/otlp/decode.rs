//! Body → [`Decoded`]: the outer messages (request, resource, scope, metric,
//! gauge/sum/...) are walked in place, so no more than one data point is
//! ever built from the wire at a time; each data point is decoded with the
//! [`proto`](super::proto) structs and translated at once into series
//! (consecutive points of one stream share one).
//!
//! Fields may arrive in any order and non-repeated message fields may repeat
//! (protobuf merges them), so each outer message is read in passes: first its
//! scalars, then its children.

use std::collections::HashSet;

use cairn_model::{HistogramSample, Label, Labels, METRIC_NAME, Sample, stale_nan};
use prost::Message;

use super::decompress::decompress;
use super::histogram::{custom_buckets, exponential};
use super::naming::{NameKind, label_name, metric_name};
use super::proto::{
    ExponentialHistogramDataPoint, FLAG_NO_RECORDED_VALUE, HistogramDataPoint, KeyValue, NumberDataPoint, Resource,
    SummaryDataPoint, number_data_point,
};
use super::value::{any_value_string, float_label};
use super::wire::{Field, Fields, utf8};
use super::{ContentEncoding, DecodeError, Decoded, Options, RejectReason, Rejections};
use crate::HistogramError;
use crate::{DecodeLimits, MetricMetadata, MetricType, WriteBatch};

/// The decoded series may take this many bytes per decompressed body byte
/// (and at least [`MIN_OUTPUT_BUDGET_BYTES`]): a histogram point copies its
/// labels into every bucket series, so legitimate requests expand ~30×.
const OUTPUT_BYTES_PER_BODY_BYTE: usize = 64;
const MIN_OUTPUT_BUDGET_BYTES: usize = 64 << 20;
/// Rough heap cost of a label beyond its text, and of a series or a sample.
const LABEL_OVERHEAD_BYTES: usize = 48;
const SERIES_OVERHEAD_BYTES: usize = 96;
const SAMPLE_BYTES: usize = 16;
/// A histogram sample beside its buckets, and one sparse bucket.
const HISTOGRAM_BYTES: usize = 160;
const BUCKET_BYTES: usize = 16;

/// `target_info` is sampled every half of the default 5 m lookback delta.
const TARGET_INFO_INTERVAL_MS: i64 = 150_000;

const SERVICE_NAME: &str = "service.name";
const SERVICE_NAMESPACE: &str = "service.namespace";
const SERVICE_INSTANCE_ID: &str = "service.instance.id";

/// Decodes one `ExportMetricsServiceRequest` body. `now_ms` stamps points
/// that carry no timestamp. See the [module docs](super) for the rules.
pub fn decode_export_request(
    body: &[u8],
    encoding: ContentEncoding,
    limits: &DecodeLimits,
    now_ms: i64,
) -> Result<Decoded, DecodeError> {
    decode_export_request_with(body, encoding, limits, now_ms, &Options::default())
}

/// [`decode_export_request`] with translation [`Options`].
pub fn decode_export_request_with(
    body: &[u8],
    encoding: ContentEncoding,
    limits: &DecodeLimits,
    now_ms: i64,
    options: &Options,
) -> Result<Decoded, DecodeError> {
    let raw = decompress(body, encoding, limits.max_decompressed_bytes)?;
    let budget = raw
        .len()
        .saturating_mul(OUTPUT_BYTES_PER_BODY_BYTE)
        .max(MIN_OUTPUT_BUDGET_BYTES);
    let mut t = Translator {
        limits,
        options: *options,
        now_ms,
        series: WriteBatch::default(),
        metadata: Vec::new(),
        metadata_seen: HashSet::new(),
        rejected: Rejections::default(),
        data_points: 0,
        exemplars_dropped: 0,
        budget_limit: budget,
        budget_left: budget,
    };
    let mut fields = Fields::new(&raw);
    let mut index = 0usize;
    while let Some(field) = fields.next_field() {
        match field.map_err(|r| bad("export request".into(), r))? {
            Field::Bytes(1, msg) => {
                t.resource_metrics(msg, index)?;
                index += 1;
            }
            Field::Varint(1, _) | Field::Other(1) => return Err(wrong_type("export request".into(), 1)),
            _ => {}
        }
    }
    Ok(t.finish())
}

fn bad(at: String, reason: String) -> DecodeError {
    let reason = match reason.strip_prefix("failed to decode Protobuf message: ") {
        Some(rest) => rest.to_string(),
        None => reason,
    };
    DecodeError::BadProtobuf { at, reason }
}

fn wrong_type(at: String, tag: u32) -> DecodeError {
    DecodeError::BadProtobuf {
        at,
        reason: format!("field {tag} has the wrong wire type"),
    }
}

/// What a resource contributes to every series under it.
struct ResourceCtx {
    job: Option<String>,
    instance: Option<String>,
    attributes: Vec<KeyValue>,
    mint: i64,
    maxt: i64,
    points: usize,
}

impl ResourceCtx {
    fn observe(&mut self, t: i64) {
        self.mint = self.mint.min(t);
        self.maxt = self.maxt.max(t);
        self.points += 1;
    }
}

/// The kinds of `Metric.data`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum DataKind {
    Gauge,
    Sum,
    Histogram,
    ExponentialHistogram,
    Summary,
}

impl DataKind {
    fn from_tag(tag: u32) -> Option<Self> {
        Some(match tag {
            5 => Self::Gauge,
            7 => Self::Sum,
            9 => Self::Histogram,
            10 => Self::ExponentialHistogram,
            11 => Self::Summary,
            _ => return None,
        })
    }
}

/// One metric's translated identity, shared by its points.
struct MetricCtx<'a> {
    otlp_name: &'a str,
    name: String,
}

struct Translator<'l> {
    limits: &'l DecodeLimits,
    options: Options,
    now_ms: i64,
    /// Series only; metadata and counts are set by [`Translator::finish`].
    series: WriteBatch,
    metadata: Vec<MetricMetadata>,
    metadata_seen: HashSet<(String, MetricType)>,
    rejected: Rejections,
    data_points: u64,
    exemplars_dropped: usize,
    budget_limit: usize,
    budget_left: usize,
}

impl Translator<'_> {
    fn finish(self) -> Decoded {
        let mut batch = self.series;
        batch.metadata = self.metadata;
        batch.exemplars_dropped = self.exemplars_dropped;
        Decoded {
            batch,
            data_points: self.data_points,
            rejected: self.rejected,
        }
    }

    fn resource_metrics(&mut self, msg: &[u8], r: usize) -> Result<(), DecodeError> {
        let at = || format!("resource_metrics {r}");
        let mut attributes = Vec::new();
        let mut fields = Fields::new(msg);
        while let Some(field) = fields.next_field() {
            match field.map_err(|e| bad(at(), e))? {
                Field::Bytes(1, res) => {
                    let res = Resource::decode(res).map_err(|e| bad(format!("{} resource", at()), e.to_string()))?;
                    attributes.extend(res.attributes);
                }
                Field::Varint(tag @ (1..=3), _) | Field::Other(tag @ (1..=3)) => return Err(wrong_type(at(), tag)),
                _ => {}
            }
        }
        // As pdata's Map.Get: the first attribute with the key.
        let get = |key: &str| {
            attributes
                .iter()
                .find(|kv| kv.key == key)
                .map(|kv| any_value_string(kv.value.as_ref()))
        };
        let job = get(SERVICE_NAME).map(|name| match get(SERVICE_NAMESPACE) {
            Some(ns) => format!("{ns}/{name}"),
            None => name,
        });
        let instance = get(SERVICE_INSTANCE_ID);
        let mut ctx = ResourceCtx {
            job,
            instance,
            attributes,
            mint: i64::MAX,
            maxt: i64::MIN,
            points: 0,
        };
        let mut fields = Fields::new(msg);
        let mut s = 0usize;
        while let Some(field) = fields.next_field() {
            if let Ok(Field::Bytes(2, scope)) = field {
                self.scope_metrics(scope, &mut ctx, r, s)?;
                s += 1;
            }
        }
        self.target_info(&ctx)
    }

    fn scope_metrics(&mut self, msg: &[u8], ctx: &mut ResourceCtx, r: usize, s: usize) -> Result<(), DecodeError> {
        let at = || format!("resource_metrics {r} scope_metrics {s}");
        let mut fields = Fields::new(msg);
        let mut m = 0usize;
        while let Some(field) = fields.next_field() {
            match field.map_err(|e| bad(at(), e))? {
                Field::Bytes(2, metric) => {
                    self.metric(metric, ctx, &|| format!("{} metric {m}", at()))?;
                    m += 1;
                }
                Field::Varint(tag @ (1..=3), _) | Field::Other(tag @ (1..=3)) => return Err(wrong_type(at(), tag)),
                _ => {}
            }
        }
        Ok(())
    }

    fn metric(&mut self, msg: &[u8], ctx: &mut ResourceCtx, at: &dyn Fn() -> String) -> Result<(), DecodeError> {
        let (mut name, mut description, mut unit) = ("", "", "");
        // The oneof: a field of another kind replaces what came before, a
        // repeat of the same kind merges with it.
        let mut kind = None;
        let mut run_start = 0usize;
        let mut ordinal = 0usize;
        let mut fields = Fields::new(msg);
        while let Some(field) = fields.next_field() {
            match field.map_err(|e| bad(at(), e))? {
                Field::Bytes(1, b) => name = utf8(b).map_err(|e| bad(at(), e))?,
                Field::Bytes(2, b) => description = utf8(b).map_err(|e| bad(at(), e))?,
                Field::Bytes(3, b) => unit = utf8(b).map_err(|e| bad(at(), e))?,
                Field::Bytes(tag, _) if DataKind::from_tag(tag).is_some() => {
                    let k = DataKind::from_tag(tag);
                    if kind != k {
                        kind = k;
                        run_start = ordinal;
                    }
                    ordinal += 1;
                }
                Field::Varint(tag @ (1..=3 | 5 | 7 | 9..=12), _) | Field::Other(tag @ (1..=3 | 5 | 7 | 9..=12)) => {
                    return Err(wrong_type(at(), tag));
                }
                _ => {}
            }
        }
        let Some(kind) = kind else {
            return Ok(());
        };
        // The data messages that count, in order.
        let mut data: Vec<&[u8]> = Vec::new();
        let mut fields = Fields::new(msg);
        let mut ordinal = 0usize;
        while let Some(field) = fields.next_field() {
            if let Ok(Field::Bytes(tag, b)) = field
                && DataKind::from_tag(tag).is_some()
            {
                if ordinal >= run_start {
                    data.push(b);
                }
                ordinal += 1;
            }
        }
        // Scalars of the data message: temporality (2), is_monotonic (3).
        let (mut temporality, mut monotonic, mut points) = (0u64, false, 0u64);
        for d in &data {
            let mut fields = Fields::new(d);
            while let Some(field) = fields.next_field() {
                match field.map_err(|e| bad(at(), e))? {
                    Field::Bytes(1, _) => points += 1,
                    Field::Varint(2, v) if kind != DataKind::Gauge && kind != DataKind::Summary => temporality = v,
                    Field::Varint(3, v) if kind == DataKind::Sum => monotonic = v != 0,
                    Field::Varint(1, _) | Field::Other(1) => return Err(wrong_type(at(), 1)),
                    _ => {}
                }
            }
        }
        self.data_points += points;
        let reject = |t: &mut Self, reason, why: &dyn Fn() -> String| t.rejected.add(reason, points, why);
        if matches!(
            kind,
            DataKind::Sum | DataKind::Histogram | DataKind::ExponentialHistogram
        ) && temporality != 2
        {
            if temporality == 1 {
                reject(self, RejectReason::DeltaTemporality, &|| {
                    format!(
                        "metric {name:?} has delta temporality; Cairn stores cumulative series only: \
                         configure the exporter for cumulative temporality"
                    )
                });
            } else {
                reject(self, RejectReason::UnspecifiedTemporality, &|| {
                    format!("metric {name:?} has temporality {temporality}, not cumulative")
                });
            }
            return Ok(());
        }
        let (name_kind, metric_type) = match kind {
            DataKind::Gauge => (NameKind::Gauge, MetricType::Gauge),
            DataKind::Sum if monotonic => (NameKind::MonotonicCounter, MetricType::Counter),
            DataKind::Sum => (NameKind::NonMonotonicCounter, MetricType::Gauge),
            DataKind::Histogram => (NameKind::Histogram, MetricType::Histogram),
            DataKind::ExponentialHistogram => (NameKind::ExponentialHistogram, MetricType::Histogram),
            DataKind::Summary => (NameKind::Summary, MetricType::Summary),
        };
        let Some(prom_name) = metric_name(name, unit, name_kind) else {
            reject(self, RejectReason::InvalidMetricName, &|| {
                format!("metric name {name:?} leaves no valid Prometheus name")
            });
            return Ok(());
        };
        // `_bucket` is the longest suffix added to the name.
        let suffix = match kind {
            DataKind::Gauge | DataKind::Sum | DataKind::ExponentialHistogram => 0,
            DataKind::Histogram | DataKind::Summary => "_bucket".len(),
        };
        let value_limit = self.limits.max_label_value_len;
        if prom_name.len() + suffix > value_limit {
            reject(self, RejectReason::LabelValueTooLong, &|| {
                format!("metric name {:?} is over the {value_limit}-byte limit", evidence(name))
            });
            return Ok(());
        }
        if points > 0 && self.metadata_seen.insert((prom_name.clone(), metric_type)) {
            self.metadata.push(MetricMetadata {
                metric_family_name: prom_name.clone(),
                metric_type,
                help: description.to_string(),
                unit: unit.to_string(),
            });
        }
        let metric = MetricCtx {
            otlp_name: name,
            name: prom_name,
        };
        let mut p = 0usize;
        for d in &data {
            let mut fields = Fields::new(d);
            while let Some(field) = fields.next_field() {
                if let Ok(Field::Bytes(1, point)) = field {
                    let at = || format!("{} data point {p}", at());
                    match kind {
                        DataKind::Gauge | DataKind::Sum => self.number_point(point, &metric, ctx, &at)?,
                        DataKind::Histogram => self.histogram_point(point, &metric, ctx, &at)?,
                        DataKind::Summary => self.summary_point(point, &metric, ctx, &at)?,
                        DataKind::ExponentialHistogram => self.exponential_point(point, &metric, ctx, &at)?,
                    }
                    p += 1;
                }
            }
        }
        Ok(())
    }

    fn timestamp(&self, unix_nano: u64) -> i64 {
        if unix_nano == 0 {
            self.now_ms
        } else {
            // u64::MAX / 10^6 fits an i64.
            (unix_nano / 1_000_000) as i64
        }
    }

    fn number_point(
        &mut self,
        msg: &[u8],
        metric: &MetricCtx<'_>,
        ctx: &mut ResourceCtx,
        at: &dyn Fn() -> String,
    ) -> Result<(), DecodeError> {
        let p = NumberDataPoint::decode(msg).map_err(|e| bad(at(), e.to_string()))?;
        self.exemplars_dropped += p.exemplars.len();
        let v = if p.flags & FLAG_NO_RECORDED_VALUE != 0 {
            stale_nan()
        } else {
            match p.value {
                Some(number_data_point::Value::AsDouble(v)) => v,
                Some(number_data_point::Value::AsInt(v)) => v as f64,
                None => {
                    self.rejected.add(RejectReason::MissingValue, 1, || {
                        format!("a point of metric {:?} has no value", metric.otlp_name)
                    });
                    return Ok(());
                }
            }
        };
        let Some(base) = self.base_labels(p.attributes.iter(), ctx, 1, metric.otlp_name) else {
            return Ok(());
        };
        let t = self.timestamp(p.time_unix_nano);
        self.push(&base, &metric.name, None, t, v)?;
        ctx.observe(t);
        Ok(())
    }

    fn histogram_point(
        &mut self,
        msg: &[u8],
        metric: &MetricCtx<'_>,
        ctx: &mut ResourceCtx,
        at: &dyn Fn() -> String,
    ) -> Result<(), DecodeError> {
        let p = HistogramDataPoint::decode(msg).map_err(|e| bad(at(), e.to_string()))?;
        self.exemplars_dropped += p.exemplars.len();
        let bounds = &p.explicit_bounds;
        let counts = &p.bucket_counts;
        let invalid = if !counts.is_empty() && counts.len() != bounds.len() + 1 {
            Some(format!(
                "a point of histogram {:?} has {} bucket counts for {} bounds (want bounds + 1)",
                metric.otlp_name,
                counts.len(),
                bounds.len()
            ))
        } else if bounds.iter().any(|b| b.is_nan() || *b == f64::INFINITY)
            || bounds.windows(2).any(|w| !matches!(w, [a, b] if a < b))
        {
            Some(format!(
                "a point of histogram {:?} has bounds that are not increasing finite numbers",
                metric.otlp_name
            ))
        } else {
            None
        };
        if let Some(why) = invalid {
            self.rejected.add(RejectReason::InvalidBuckets, 1, || why);
            return Ok(());
        }
        if self.options.convert_histograms_to_nhcb {
            let stale = p.flags & FLAG_NO_RECORDED_VALUE != 0;
            let h = (!stale).then(|| custom_buckets(&p, self.limits.max_histogram_buckets));
            return self.native_point(&p.attributes, p.time_unix_nano, h, metric, ctx, "histogram");
        }
        let Some(base) = self.base_labels(p.attributes.iter(), ctx, 2, metric.otlp_name) else {
            return Ok(());
        };
        let t = self.timestamp(p.time_unix_nano);
        let stale = p.flags & FLAG_NO_RECORDED_VALUE != 0;
        let val = |v: f64| if stale { stale_nan() } else { v };
        if let Some(sum) = p.sum {
            self.push(&base, &format!("{}_sum", metric.name), None, t, val(sum))?;
        }
        self.push(&base, &format!("{}_count", metric.name), None, t, val(p.count as f64))?;
        let bucket = format!("{}_bucket", metric.name);
        let mut cumulative = 0u64;
        for (bound, count) in bounds.iter().zip(counts) {
            // Go's uint64 arithmetic wraps; a sender overflowing it is broken anyway.
            cumulative = cumulative.wrapping_add(*count);
            self.push(
                &base,
                &bucket,
                Some(("le", float_label(*bound))),
                t,
                val(cumulative as f64),
            )?;
        }
        self.push(&base, &bucket, Some(("le", "+Inf".into())), t, val(p.count as f64))?;
        ctx.observe(t);
        Ok(())
    }

    fn exponential_point(
        &mut self,
        msg: &[u8],
        metric: &MetricCtx<'_>,
        ctx: &mut ResourceCtx,
        at: &dyn Fn() -> String,
    ) -> Result<(), DecodeError> {
        let p = ExponentialHistogramDataPoint::decode(msg).map_err(|e| bad(at(), e.to_string()))?;
        self.exemplars_dropped += p.exemplars.len();
        let stale = p.flags & FLAG_NO_RECORDED_VALUE != 0;
        let h = (!stale).then(|| exponential(&p, self.limits.max_histogram_buckets));
        self.native_point(&p.attributes, p.time_unix_nano, h, metric, ctx, "exponential histogram")
    }

    /// Stores one point as a native histogram sample under the metric's
    /// name; `h` is `None` for a point without a value (a staleness marker,
    /// stored as a float stale NaN), and a conversion error rejects it.
    fn native_point(
        &mut self,
        attributes: &[KeyValue],
        time_unix_nano: u64,
        h: Option<Result<cairn_model::Histogram, HistogramError>>,
        metric: &MetricCtx<'_>,
        ctx: &mut ResourceCtx,
        what: &str,
    ) -> Result<(), DecodeError> {
        let h = match h.transpose() {
            Ok(h) => h,
            Err(e) => {
                self.rejected.add(RejectReason::InvalidHistogram, 1, || {
                    format!("a point of {what} {:?}: {e}", metric.otlp_name)
                });
                return Ok(());
            }
        };
        let Some(base) = self.base_labels(attributes.iter(), ctx, 1, metric.otlp_name) else {
            return Ok(());
        };
        let t = self.timestamp(time_unix_nano);
        match h {
            Some(h) => self.push_histogram(&base, &metric.name, HistogramSample::new(t, h))?,
            None => {
                self.push(&base, &metric.name, None, t, stale_nan())?;
                self.series.count_histogram_stale_marker();
            }
        }
        ctx.observe(t);
        Ok(())
    }

    fn summary_point(
        &mut self,
        msg: &[u8],
        metric: &MetricCtx<'_>,
        ctx: &mut ResourceCtx,
        at: &dyn Fn() -> String,
    ) -> Result<(), DecodeError> {
        let p = SummaryDataPoint::decode(msg).map_err(|e| bad(at(), e.to_string()))?;
        let Some(base) = self.base_labels(p.attributes.iter(), ctx, 2, metric.otlp_name) else {
            return Ok(());
        };
        let t = self.timestamp(p.time_unix_nano);
        let stale = p.flags & FLAG_NO_RECORDED_VALUE != 0;
        let val = |v: f64| if stale { stale_nan() } else { v };
        self.push(&base, &format!("{}_sum", metric.name), None, t, val(p.sum))?;
        self.push(&base, &format!("{}_count", metric.name), None, t, val(p.count as f64))?;
        for q in &p.quantile_values {
            let quantile = Some(("quantile", float_label(q.quantile)));
            self.push(&base, &metric.name, quantile, t, val(q.value))?;
        }
        ctx.observe(t);
        Ok(())
    }

    /// One `target_info` series per resource with non-identifying
    /// attributes and a `job` or `instance`, as Prometheus writes it.
    fn target_info(&mut self, ctx: &ResourceCtx) -> Result<(), DecodeError> {
        if ctx.points == 0 || (ctx.job.is_none() && ctx.instance.is_none()) {
            return Ok(());
        }
        let identifying = [SERVICE_NAME, SERVICE_NAMESPACE, SERVICE_INSTANCE_ID];
        let other = ctx
            .attributes
            .iter()
            .filter(|kv| !identifying.contains(&kv.key.as_str()));
        if other.clone().next().is_none() {
            return Ok(());
        }
        let Some(base) = self.base_labels(other, ctx, 1, "target_info") else {
            return Ok(());
        };
        // At most one sample per point of the resource, so a hostile time
        // span cannot make this loop long.
        let mut t = ctx.mint;
        let mut emitted = 0usize;
        while t < ctx.maxt && emitted < ctx.points {
            self.push(&base, "target_info", None, t, 1.0)?;
            t = t.saturating_add(TARGET_INFO_INTERVAL_MS);
            emitted += 1;
        }
        self.push(&base, "target_info", None, ctx.maxt, 1.0)
    }

    /// The labels a point's series share, without `__name__`: attributes
    /// sorted by key with translated names (colliding values joined by `;`),
    /// then `job` and `instance` from the resource. `None` (and the point
    /// counted as rejected) when they break a rule or limit; `extra` is how
    /// many labels the point's series add.
    fn base_labels<'a>(
        &mut self,
        attributes: impl Iterator<Item = &'a KeyValue>,
        ctx: &ResourceCtx,
        extra: usize,
        metric: &str,
    ) -> Option<Vec<Label>> {
        let mut sorted: Vec<&KeyValue> = attributes.collect();
        sorted.sort_by(|a, b| a.key.cmp(&b.key));
        let mut labels: Vec<Label> = Vec::with_capacity(sorted.len() + 2 + extra);
        for kv in sorted {
            let Some(name) = label_name(&kv.key) else {
                self.rejected.add(RejectReason::InvalidLabelName, 1, || {
                    format!(
                        "attribute {:?} of metric {metric:?} leaves no valid label name",
                        evidence(&kv.key)
                    )
                });
                return None;
            };
            let value = any_value_string(kv.value.as_ref());
            // Sorted keys translate to names in an order that need not be
            // sorted (`a.b` → `a_b` sorts after `a_c`), so look up by name.
            match labels.iter_mut().find(|l| l.name == name) {
                Some(l) => {
                    l.value.push(';');
                    l.value.push_str(&value);
                }
                None => labels.push(Label::new(name, value)),
            }
        }
        for (name, value) in [("job", &ctx.job), ("instance", &ctx.instance)] {
            if let Some(v) = value {
                set_label(&mut labels, name, v.clone());
            }
        }
        let limits = self.limits;
        let count = labels.len() + extra;
        if count > limits.max_labels_per_series {
            self.rejected.add(RejectReason::TooManyLabels, 1, || {
                format!(
                    "a point of metric {metric:?} has {count} labels, over the limit of {}",
                    limits.max_labels_per_series
                )
            });
            return None;
        }
        for l in &labels {
            if l.name.len() > limits.max_label_name_len {
                self.rejected.add(RejectReason::LabelNameTooLong, 1, || {
                    format!(
                        "label {:?} of metric {metric:?} is {} bytes, over the {}-byte limit",
                        evidence(&l.name),
                        l.name.len(),
                        limits.max_label_name_len
                    )
                });
                return None;
            }
            if l.value.len() > limits.max_label_value_len {
                self.rejected.add(RejectReason::LabelValueTooLong, 1, || {
                    format!(
                        "value of label {:?} of metric {metric:?} is {} bytes, over the {}-byte limit",
                        evidence(&l.name),
                        l.value.len(),
                        limits.max_label_value_len
                    )
                });
                return None;
            }
        }
        Some(labels)
    }

    /// Adds one sample to the series `base` + `__name__=name` (+ `extra`),
    /// creating the series on first sight.
    fn push(
        &mut self,
        base: &[Label],
        name: &str,
        extra: Option<(&str, String)>,
        t: i64,
        v: f64,
    ) -> Result<(), DecodeError> {
        let mut labels = Vec::with_capacity(base.len() + 2);
        labels.extend_from_slice(base);
        set_label(&mut labels, METRIC_NAME, name.to_string());
        if let Some((n, value)) = extra {
            set_label(&mut labels, n, value);
        }
        // Names are unique and non-empty by construction.
        let Ok(labels) = Labels::new(labels) else {
            return Ok(());
        };
        let sample = Sample::new(t, v);
        // Consecutive points of one stream join one series. Others are not
        // looked up: a series may repeat in a batch, and hashing every label
        // set cost a quarter of the decode time.
        let joined = self.series.push_joining_last(&labels, sample);
        self.charge(joined, &labels, SAMPLE_BYTES)
    }

    /// [`Translator::push`] for a histogram sample, under `__name__=name`.
    fn push_histogram(&mut self, base: &[Label], name: &str, sample: HistogramSample) -> Result<(), DecodeError> {
        let mut labels = Vec::with_capacity(base.len() + 1);
        labels.extend_from_slice(base);
        set_label(&mut labels, METRIC_NAME, name.to_string());
        let Ok(labels) = Labels::new(labels) else {
            return Ok(());
        };
        let size = HISTOGRAM_BYTES + BUCKET_BYTES * (sample.h.positive.len() + sample.h.negative.len());
        let joined = self.series.push_histogram_joining_last(&labels, sample);
        self.charge(joined, &labels, size)
    }

    /// Takes a sample of `size` bytes, and a new series' labels unless it
    /// `joined` the last one, from the output budget.
    fn charge(&mut self, joined: bool, labels: &Labels, size: usize) -> Result<(), DecodeError> {
        let cost = if joined {
            size
        } else {
            SERIES_OVERHEAD_BYTES
                + size
                + labels
                    .iter()
                    .map(|l| l.name.len() + l.value.len() + LABEL_OVERHEAD_BYTES)
                    .sum::<usize>()
        };
        self.budget_left = self.budget_left.checked_sub(cost).ok_or(DecodeError::TooManySeries {
            limit: self.budget_limit,
        })?;
        Ok(())
    }
}

/// Sets `name` to `value`, replacing an attribute of the same name (the
/// translator's own labels win, as in Prometheus).
fn set_label(labels: &mut Vec<Label>, name: &str, value: String) {
    match labels.iter_mut().find(|l| l.name == name) {
        Some(l) => l.value = value.into(),
        None => labels.push(Label::new(name, value)),
    }
}

/// A name fit for an error message: at most 64 characters.
fn evidence(s: &str) -> String {
    s.chars().take(64).collect()
}
