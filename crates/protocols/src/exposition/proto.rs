//! The `io.prometheus.client` protobuf messages (client_model's
//! `metrics.proto`), hand-written for prost. Exemplars and start
//! timestamps are decoded only so that malformed ones fail as Prometheus
//! fails them; nothing reads them.

/// `MetricType`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
#[repr(i32)]
pub enum MetricType {
    Counter = 0,
    Gauge = 1,
    Summary = 2,
    Untyped = 3,
    Histogram = 4,
    GaugeHistogram = 5,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct LabelPair {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(string, tag = "2")]
    pub value: String,
}

#[derive(Clone, Copy, PartialEq, prost::Message)]
pub struct Gauge {
    #[prost(double, tag = "1")]
    pub value: f64,
}

/// `google.protobuf.Timestamp`.
#[derive(Clone, Copy, PartialEq, prost::Message)]
pub struct Timestamp {
    #[prost(int64, tag = "1")]
    pub seconds: i64,
    #[prost(int32, tag = "2")]
    pub nanos: i32,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Counter {
    #[prost(double, tag = "1")]
    pub value: f64,
    #[prost(message, optional, tag = "2")]
    pub exemplar: Option<Exemplar>,
    #[prost(message, optional, tag = "3")]
    pub start_timestamp: Option<Timestamp>,
}

#[derive(Clone, Copy, PartialEq, prost::Message)]
pub struct Quantile {
    #[prost(double, tag = "1")]
    pub quantile: f64,
    #[prost(double, tag = "2")]
    pub value: f64,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Summary {
    #[prost(uint64, tag = "1")]
    pub sample_count: u64,
    #[prost(double, tag = "2")]
    pub sample_sum: f64,
    #[prost(message, repeated, tag = "3")]
    pub quantile: Vec<Quantile>,
    #[prost(message, optional, tag = "4")]
    pub start_timestamp: Option<Timestamp>,
}

#[derive(Clone, Copy, PartialEq, prost::Message)]
pub struct Untyped {
    #[prost(double, tag = "1")]
    pub value: f64,
}

/// A classic histogram (`bucket`), a native one (schema, zero bucket,
/// spans and deltas or counts), or both.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Histogram {
    #[prost(uint64, tag = "1")]
    pub sample_count: u64,
    /// Overrides `sample_count` when above zero.
    #[prost(double, tag = "4")]
    pub sample_count_float: f64,
    #[prost(double, tag = "2")]
    pub sample_sum: f64,
    #[prost(message, repeated, tag = "3")]
    pub bucket: Vec<Bucket>,
    #[prost(message, optional, tag = "15")]
    pub start_timestamp: Option<Timestamp>,
    #[prost(sint32, tag = "5")]
    pub schema: i32,
    #[prost(double, tag = "6")]
    pub zero_threshold: f64,
    #[prost(uint64, tag = "7")]
    pub zero_count: u64,
    #[prost(double, tag = "8")]
    pub zero_count_float: f64,
    #[prost(message, repeated, tag = "9")]
    pub negative_span: Vec<BucketSpan>,
    #[prost(sint64, repeated, tag = "10")]
    pub negative_delta: Vec<i64>,
    #[prost(double, repeated, tag = "11")]
    pub negative_count: Vec<f64>,
    #[prost(message, repeated, tag = "12")]
    pub positive_span: Vec<BucketSpan>,
    #[prost(sint64, repeated, tag = "13")]
    pub positive_delta: Vec<i64>,
    #[prost(double, repeated, tag = "14")]
    pub positive_count: Vec<f64>,
    #[prost(message, repeated, tag = "16")]
    pub exemplars: Vec<Exemplar>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Bucket {
    #[prost(uint64, tag = "1")]
    pub cumulative_count: u64,
    /// Overrides `cumulative_count` when above zero.
    #[prost(double, tag = "4")]
    pub cumulative_count_float: f64,
    #[prost(double, tag = "2")]
    pub upper_bound: f64,
    #[prost(message, optional, tag = "3")]
    pub exemplar: Option<Exemplar>,
}

#[derive(Clone, Copy, PartialEq, prost::Message)]
pub struct BucketSpan {
    #[prost(sint32, tag = "1")]
    pub offset: i32,
    #[prost(uint32, tag = "2")]
    pub length: u32,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Exemplar {
    #[prost(message, repeated, tag = "1")]
    pub label: Vec<LabelPair>,
    #[prost(double, tag = "2")]
    pub value: f64,
    #[prost(message, optional, tag = "3")]
    pub timestamp: Option<Timestamp>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Metric {
    #[prost(message, repeated, tag = "1")]
    pub label: Vec<LabelPair>,
    #[prost(message, optional, tag = "2")]
    pub gauge: Option<Gauge>,
    #[prost(message, optional, tag = "3")]
    pub counter: Option<Counter>,
    #[prost(message, optional, tag = "4")]
    pub summary: Option<Summary>,
    #[prost(message, optional, tag = "5")]
    pub untyped: Option<Untyped>,
    #[prost(message, optional, tag = "7")]
    pub histogram: Option<Histogram>,
    #[prost(int64, tag = "6")]
    pub timestamp_ms: i64,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct MetricFamily {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(string, tag = "2")]
    pub help: String,
    #[prost(enumeration = "MetricType", tag = "3")]
    pub r#type: i32,
    #[prost(message, repeated, tag = "4")]
    pub metric: Vec<Metric>,
    #[prost(string, tag = "5")]
    pub unit: String,
}
