//! OTLP metrics over HTTP: `POST /opentelemetry/v1/metrics` and
//! `/api/v1/otlp/v1/metrics` with an `ExportMetricsServiceRequest` body,
//! protobuf ([`proto`], [`decode_export_request`]) or OTLP/JSON
//! ([`decode_export_request_json`], read into the same structs), identity,
//! gzip, deflate or zstd compressed.
//!
//! # Naming: Prometheus 3's translation
//!
//! Cairn translates names exactly as Prometheus 3's OTLP receiver does with
//! its default `translation_strategy: UnderscoreEscapingWithSuffixes`, not
//! VictoriaMetrics' as-is names. Cairn is queried with PromQL by dashboards
//! and alerts written for Prometheus, and the OpenTelemetry specification's
//! Prometheus compatibility section defines this mapping: names with units
//! and `_total` are what PromQL functions, recording rules and the
//! Prometheus-exporter path of the same metrics produce. A user moving from
//! Prometheus 3 keeps every series name; one moving from VictoriaMetrics gets
//! the names its `-opentelemetry.usePrometheusNaming` flag gives (its
//! default keeps OTLP names with dots, which PromQL can only select with
//! quoted UTF-8 names). The rules ([`naming`]):
//!
//! - metric `http.server.request.duration` (unit `s`, histogram) →
//!   `http_server_request_duration_seconds_bucket{le}`, `_sum`, `_count`;
//!   characters outside `[a-zA-Z0-9:]` separate name tokens, the unit's word
//!   is appended (`By` → `bytes`, `By/s` → `bytes_per_second`, `{req}`
//!   dropped), monotonic sums get `_total`, gauges with unit `1` get `_ratio`;
//! - attribute `http.request.method` → label `http_request_method`
//!   (characters outside `[a-zA-Z0-9_]` → `_`, `key_` before a leading
//!   digit); keys that collide after translation keep every value, joined
//!   with `;` in key order; values render as the Collector's `AsString`
//!   ([`value`]);
//! - resource `service.namespace`/`service.name` → `job` (`ns/name`),
//!   `service.instance.id` → `instance`; the other resource attributes go to
//!   one `target_info` series per resource (value 1, with `job`/`instance`),
//!   sampled from the resource's earliest to latest point every 2.5 minutes
//!   (half the default lookback) so `info()` and joins find it. No resource
//!   attribute is promoted to a metric label, and scope name/version are not
//!   added (Prometheus' defaults).
//!
//! # Values
//!
//! - Gauge → gauge; Sum, cumulative and monotonic → counter (`_total`);
//!   cumulative non-monotonic → gauge; Histogram → classic histogram:
//!   cumulative `_bucket{le}` series per explicit bound, `le="+Inf"` equal to
//!   `count`, `_count`, and `_sum` when the point has a sum (or, with
//!   [`Options::convert_histograms_to_nhcb`], a native histogram with custom
//!   buckets under the metric's name); Summary →
//!   `{quantile}` series, `_sum`, `_count`; ExponentialHistogram (cumulative)
//!   → native histogram under the translated name with no suffix added
//!   (`http_server_request_duration_seconds`), converted as Prometheus does
//!   (`histogram.rs`: scale → schema, scales above 8 merged down to 8, bucket
//!   indices moved up by one, zero bucket threshold 1e-128, `min`/`max`
//!   dropped).
//! - `time_unix_nano` becomes milliseconds (truncated); a point without one
//!   (0) is stamped with the receive time, where Prometheus would store it at
//!   1970 and lose it to retention.
//! - A point flagged `NO_RECORDED_VALUE` stores Prometheus' stale marker in
//!   every series it produces, as Prometheus does (for an exponential
//!   histogram, a float stale NaN: storage keeps staleness as floats).
//! - Metadata (type, `description` as help, the OTLP unit) is recorded per
//!   metric family; exemplars are counted and dropped.
//!
//! # Partial acceptance
//!
//! Points Cairn cannot store are rejected one by one, counted by
//! [`RejectReason`], and reported to the sender in the response's
//! `partial_success` (`rejected_data_points` and a message naming each
//! reason with an example); every other point of the request is stored.
//! Rejected: delta (and unspecified) temporality, since Cairn stores
//! cumulative series and converting deltas needs state across requests (set
//! the exporter's temporality preference to cumulative, or put the
//! Collector's `deltatocumulative` processor in front; this holds for
//! exponential histograms too); exponential histogram points Prometheus
//! would refuse (a scale below -4, a count that is not the buckets' total,
//! more buckets than [`DecodeLimits`] allow); number points with no value; histograms whose bucket counts do not match their bounds or
//! whose bounds are not increasing; points whose labels break
//! [`DecodeLimits`]. Prometheus instead drops such metrics with only a log
//! line. A malformed body (bad framing, invalid UTF-8 in a string, bad
//! compression, over the size limit, malformed JSON) rejects the whole
//! request ([`DecodeError`], HTTP 400; an unknown `Content-Encoding` is 415).
//!
//! [`DecodeLimits`]: crate::DecodeLimits

mod decode;
mod decompress;
mod histogram;
mod json;
pub mod naming;
pub mod proto;
pub mod value;
mod wire;

use std::collections::BTreeMap;
use std::fmt;

pub use decode::{decode_export_request, decode_export_request_with};
pub use decompress::ContentEncoding;
pub use json::{decode_export_request_json, decode_export_request_json_with, encode_response_json, encode_status_json};

use crate::{ErrorKind, WriteBatch};

/// The `Content-Type` of OTLP/HTTP protobuf requests and responses.
pub const CONTENT_TYPE_PROTOBUF: &str = "application/x-protobuf";
/// The `Content-Type` of OTLP/HTTP JSON requests and responses.
pub const CONTENT_TYPE_JSON: &str = "application/json";

/// How OTLP metrics are translated, beyond the fixed rules above.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Options {
    /// Store explicit-bucket histograms as native histograms with custom
    /// buckets (schema -53, one series under the metric's name, bounds
    /// from `explicit_bounds`) rather than classic `_bucket`/`_sum`/`_count`
    /// series: Prometheus' `otlp.convert_histograms_to_nhcb`, off by
    /// default there too. A point whose count is not its buckets' total is
    /// then rejected ([`RejectReason::InvalidHistogram`]), as Prometheus
    /// refuses it.
    pub convert_histograms_to_nhcb: bool,
}

/// Why a point was not stored; the `reason` of Cairn's ingest metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum RejectReason {
    DeltaTemporality,
    UnspecifiedTemporality,
    /// An exponential histogram point Prometheus would refuse (see
    /// [`crate::HistogramError`]).
    InvalidHistogram,
    MissingValue,
    InvalidBuckets,
    InvalidMetricName,
    InvalidLabelName,
    TooManyLabels,
    LabelNameTooLong,
    LabelValueTooLong,
}

impl RejectReason {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::DeltaTemporality => "delta_temporality",
            Self::UnspecifiedTemporality => "unspecified_temporality",
            Self::InvalidHistogram => "invalid_histogram",
            Self::MissingValue => "missing_value",
            Self::InvalidBuckets => "invalid_buckets",
            Self::InvalidMetricName => "invalid_metric_name",
            Self::InvalidLabelName => "invalid_label_name",
            Self::TooManyLabels => "too_many_labels",
            Self::LabelNameTooLong => "label_name_too_long",
            Self::LabelValueTooLong => "label_value_too_long",
        }
    }
}

impl fmt::Display for RejectReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Points rejected while decoding, by reason, each with the first example's
/// explanation.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Rejections {
    by_reason: BTreeMap<RejectReason, (u64, String)>,
}

impl Rejections {
    /// Counts `points` rejected for `reason`; `why` explains the first.
    pub fn add(&mut self, reason: RejectReason, points: u64, why: impl FnOnce() -> String) {
        if points == 0 {
            return;
        }
        self.by_reason
            .entry(reason)
            .and_modify(|(n, _)| *n += points)
            .or_insert_with(|| (points, why()));
    }

    /// Total rejected points.
    pub fn total(&self) -> u64 {
        self.by_reason.values().map(|(n, _)| n).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.by_reason.is_empty()
    }

    /// `(reason, points)` pairs, in reason order.
    pub fn counts(&self) -> impl Iterator<Item = (RejectReason, u64)> + '_ {
        self.by_reason.iter().map(|(r, (n, _))| (*r, *n))
    }

    /// One line for the sender: each reason with its count and first example.
    pub fn message(&self) -> String {
        let parts: Vec<String> = self
            .by_reason
            .iter()
            .map(|(r, (n, why))| format!("{n} {r} (e.g. {why})"))
            .collect();
        format!("rejected {} data points: {}", self.total(), parts.join("; "))
    }
}

/// A decoded request: what to store, and what was refused.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Decoded {
    /// Series, native histograms and metadata to store; `exemplars_dropped`
    /// counts the exemplars. Refused histogram points are in `rejected`,
    /// not in the batch's `histograms_invalid`.
    pub batch: WriteBatch,
    /// Data points seen in the request (accepted or not).
    pub data_points: u64,
    /// Data points not stored, by reason.
    pub rejected: Rejections,
}

/// Why a request body was refused as a whole.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeError {
    /// The `Content-Encoding` is none Cairn accepts (HTTP 415).
    #[error("unsupported content encoding {0:?}: want gzip, deflate, zstd or identity")]
    UnsupportedEncoding(String),
    /// The body is not valid data in its declared encoding.
    #[error("{encoding} decompression failed: {reason}")]
    Decompress { encoding: ContentEncoding, reason: String },
    /// The body decompresses to more than the limit allows.
    #[error("{encoding} body decompresses to more than the {limit}-byte limit")]
    TooLarge { encoding: ContentEncoding, limit: usize },
    /// The translated series would take more memory than the request may
    /// use (many labels copied into many histogram buckets).
    #[error("request expands to more than {limit} bytes of series; send smaller batches")]
    TooManySeries { limit: usize },
    /// The body is not a well-formed `ExportMetricsServiceRequest`. `at`
    /// says where: `resource_metrics 0 scope_metrics 1 metric 3`...
    #[error("malformed protobuf in {at}: {reason}")]
    BadProtobuf { at: String, reason: String },
    /// The body is not a well-formed OTLP/JSON request. `at` says where.
    #[error("malformed OTLP/JSON in {at}: {reason}")]
    BadJson { at: String, reason: String },
}

impl DecodeError {
    /// How the HTTP layer should answer this error.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Self::UnsupportedEncoding(_) => ErrorKind::UnsupportedEncoding,
            Self::Decompress { .. }
            | Self::TooLarge { .. }
            | Self::TooManySeries { .. }
            | Self::BadProtobuf { .. }
            | Self::BadJson { .. } => ErrorKind::BadData,
        }
    }

    /// The reason label of Cairn's ingest metrics.
    pub fn reason(&self) -> &'static str {
        match self {
            Self::UnsupportedEncoding(_) => "unsupported_encoding",
            Self::Decompress { .. } => "bad_compression",
            Self::TooLarge { .. } | Self::TooManySeries { .. } => "too_large",
            Self::BadProtobuf { .. } => "bad_protobuf",
            Self::BadJson { .. } => "bad_json",
        }
    }
}

/// The body of a successful export: an `ExportMetricsServiceResponse`,
/// empty when everything was stored, else with `partial_success` saying how
/// many points were rejected and why.
pub fn encode_response(rejected: &Rejections) -> Vec<u8> {
    use prost::Message;
    let partial_success = (!rejected.is_empty()).then(|| proto::ExportMetricsPartialSuccess {
        rejected_data_points: i64::try_from(rejected.total()).unwrap_or(i64::MAX),
        error_message: rejected.message(),
    });
    proto::ExportMetricsServiceResponse { partial_success }.encode_to_vec()
}

/// gRPC status codes used in OTLP/HTTP error bodies.
pub mod status_code {
    pub const CANCELLED: i32 = 1;
    pub const UNKNOWN: i32 = 2;
    pub const INVALID_ARGUMENT: i32 = 3;
    pub const NOT_FOUND: i32 = 5;
    pub const PERMISSION_DENIED: i32 = 7;
    pub const RESOURCE_EXHAUSTED: i32 = 8;
    pub const UNIMPLEMENTED: i32 = 12;
    pub const INTERNAL: i32 = 13;
    pub const UNAVAILABLE: i32 = 14;
    pub const UNAUTHENTICATED: i32 = 16;
}

/// The body of a failed export: a `google.rpc.Status` with a gRPC `code`
/// and the message, as the OTLP/HTTP spec requires for 4xx and 5xx answers.
pub fn encode_status(code: i32, message: &str) -> Vec<u8> {
    use prost::Message;
    proto::Status {
        code,
        message: message.to_string(),
    }
    .encode_to_vec()
}

#[cfg(test)]
mod tests;
