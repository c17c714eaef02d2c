//! The `prometheus` protobuf package of remote write 1.0 (`prompb/types.proto`
//! and `remote.proto`), hand-written for prost.
//!
//! These are the schema of record: tests and tools build requests with them,
//! and the hot-path decoder is checked against them. [`Histogram`] carries
//! only the fields Cairn reads; prost skips the rest as unknown fields.

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

/// `prometheus.Histogram` (a native histogram sample), reduced to the fields
/// Cairn reads. Upstream also has the count/zero-count oneofs (1, 2, 6, 7),
/// bucket spans and deltas (8–13), `reset_hint` (14) and `custom_values` (16).
#[derive(Clone, PartialEq, prost::Message)]
pub struct Histogram {
    #[prost(double, tag = "3")]
    pub sum: f64,
    #[prost(sint32, tag = "4")]
    pub schema: i32,
    #[prost(double, tag = "5")]
    pub zero_threshold: f64,
    #[prost(int64, tag = "15")]
    pub timestamp: i64,
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
