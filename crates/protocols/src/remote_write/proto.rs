//! The `prometheus` protobuf package of remote write 1.0 (`prompb/types.proto`
//! and `remote.proto`), hand-written for prost.
//!
//! These are the schema of record: tests and tools build requests with them,
//! and the hot-path decoder is checked against them.

/// `prometheus.WriteRequest`. Field 2 is reserved upstream.
#[derive(Clone, PartialEq, prost::Message)]
pub struct WriteRequest {
    #[prost(message, repeated, tag = "1")]
    pub timeseries: Vec<TimeSeries>,
    #[prost(message, repeated, tag = "3")]
    pub metadata: Vec<MetricMetadata>,
}

/// `prometheus.TimeSeries`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TimeSeries {
    #[prost(message, repeated, tag = "1")]
    pub labels: Vec<Label>,
    #[prost(message, repeated, tag = "2")]
    pub samples: Vec<Sample>,
    #[prost(message, repeated, tag = "3")]
    pub exemplars: Vec<Exemplar>,
    #[prost(message, repeated, tag = "4")]
    pub histograms: Vec<Histogram>,
}

/// `prometheus.Label`.
#[derive(Clone, PartialEq, Eq, Hash, prost::Message)]
pub struct Label {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(string, tag = "2")]
    pub value: String,
}

/// `prometheus.Sample`: a float value and a timestamp in milliseconds.
#[derive(Clone, Copy, PartialEq, prost::Message)]
pub struct Sample {
    #[prost(double, tag = "1")]
    pub value: f64,
    #[prost(int64, tag = "2")]
    pub timestamp: i64,
}

/// `prometheus.Exemplar`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Exemplar {
    #[prost(message, repeated, tag = "1")]
    pub labels: Vec<Label>,
    #[prost(double, tag = "2")]
    pub value: f64,
    #[prost(int64, tag = "3")]
    pub timestamp: i64,
}

/// `prometheus.Histogram`: one native histogram sample. Integer histograms
/// set `count_int` and send bucket counts as `*_deltas` (each bucket's
/// change from the one before); float histograms set `count_float` and send
/// `*_counts`. Remote write 2.0 uses the same message (plus a
/// `start_timestamp`, 17, skipped here as an unknown field).
#[derive(Clone, PartialEq, prost::Message)]
pub struct Histogram {
    #[prost(oneof = "histogram::Count", tags = "1, 2")]
    pub count: Option<histogram::Count>,
    #[prost(double, tag = "3")]
    pub sum: f64,
    /// -4 to 8 for exponential buckets (senders may use up to 52), -53 for
    /// custom buckets.
    #[prost(sint32, tag = "4")]
    pub schema: i32,
    #[prost(double, tag = "5")]
    pub zero_threshold: f64,
    #[prost(oneof = "histogram::ZeroCount", tags = "6, 7")]
    pub zero_count: Option<histogram::ZeroCount>,
    #[prost(message, repeated, tag = "8")]
    pub negative_spans: Vec<BucketSpan>,
    #[prost(sint64, repeated, tag = "9")]
    pub negative_deltas: Vec<i64>,
    #[prost(double, repeated, tag = "10")]
    pub negative_counts: Vec<f64>,
    #[prost(message, repeated, tag = "11")]
    pub positive_spans: Vec<BucketSpan>,
    #[prost(sint64, repeated, tag = "12")]
    pub positive_deltas: Vec<i64>,
    #[prost(double, repeated, tag = "13")]
    pub positive_counts: Vec<f64>,
    #[prost(enumeration = "histogram::ResetHint", tag = "14")]
    pub reset_hint: i32,
    #[prost(int64, tag = "15")]
    pub timestamp: i64,
    /// Upper bounds of custom buckets (schema -53).
    #[prost(double, repeated, tag = "16")]
    pub custom_values: Vec<f64>,
}

pub mod histogram {
    /// `Histogram.count`.
    #[derive(Clone, Copy, PartialEq, prost::Oneof)]
    pub enum Count {
        #[prost(uint64, tag = "1")]
        CountInt(u64),
        #[prost(double, tag = "2")]
        CountFloat(f64),
    }

    /// `Histogram.zero_count`.
    #[derive(Clone, Copy, PartialEq, prost::Oneof)]
    pub enum ZeroCount {
        #[prost(uint64, tag = "6")]
        ZeroCountInt(u64),
        #[prost(double, tag = "7")]
        ZeroCountFloat(f64),
    }

    /// `Histogram.ResetHint` (2.0 prefixes the names with `RESET_HINT_`).
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
    #[repr(i32)]
    pub enum ResetHint {
        Unknown = 0,
        Yes = 1,
        No = 2,
        Gauge = 3,
    }
}

/// `prometheus.BucketSpan`: `length` consecutive buckets, starting `offset`
/// after the previous span's end (the first span: at index `offset`).
#[derive(Clone, Copy, PartialEq, Eq, prost::Message)]
pub struct BucketSpan {
    #[prost(sint32, tag = "1")]
    pub offset: i32,
    #[prost(uint32, tag = "2")]
    pub length: u32,
}

/// `prometheus.MetricMetadata`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct MetricMetadata {
    #[prost(enumeration = "MetricType", tag = "1")]
    pub r#type: i32,
    #[prost(string, tag = "2")]
    pub metric_family_name: String,
    #[prost(string, tag = "4")]
    pub help: String,
    #[prost(string, tag = "5")]
    pub unit: String,
}

/// `prometheus.MetricMetadata.MetricType`. Note the upstream numbering:
/// HISTOGRAM is 3 and SUMMARY is 5.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
#[repr(i32)]
pub enum MetricType {
    Unknown = 0,
    Counter = 1,
    Gauge = 2,
    Histogram = 3,
    Gaugehistogram = 4,
    Summary = 5,
    Info = 6,
    Stateset = 7,
}

impl From<MetricType> for crate::MetricType {
    fn from(t: MetricType) -> Self {
        match t {
            MetricType::Unknown => Self::Unknown,
            MetricType::Counter => Self::Counter,
            MetricType::Gauge => Self::Gauge,
            MetricType::Histogram => Self::Histogram,
            MetricType::Gaugehistogram => Self::GaugeHistogram,
            MetricType::Summary => Self::Summary,
            MetricType::Info => Self::Info,
            MetricType::Stateset => Self::StateSet,
        }
    }
}

impl From<crate::MetricType> for MetricType {
    fn from(t: crate::MetricType) -> Self {
        match t {
            crate::MetricType::Unknown => Self::Unknown,
            crate::MetricType::Counter => Self::Counter,
            crate::MetricType::Gauge => Self::Gauge,
            crate::MetricType::Histogram => Self::Histogram,
            crate::MetricType::GaugeHistogram => Self::Gaugehistogram,
            crate::MetricType::Summary => Self::Summary,
            crate::MetricType::Info => Self::Info,
            crate::MetricType::StateSet => Self::Stateset,
        }
    }
}

/// Unknown type numbers (from newer senders) become `Unknown`.
impl From<MetricMetadata> for crate::MetricMetadata {
    fn from(m: MetricMetadata) -> Self {
        Self {
            metric_type: MetricType::try_from(m.r#type).map(Into::into).unwrap_or_default(),
            metric_family_name: m.metric_family_name,
            help: m.help,
            unit: m.unit,
        }
    }
}

impl From<&crate::MetricMetadata> for MetricMetadata {
    fn from(m: &crate::MetricMetadata) -> Self {
        Self {
            r#type: MetricType::from(m.metric_type) as i32,
            metric_family_name: m.metric_family_name.clone(),
            help: m.help.clone(),
            unit: m.unit.clone(),
        }
    }
}
