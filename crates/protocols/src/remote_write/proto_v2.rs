//! The `io.prometheus.write.v2` protobuf package of remote write 2.0
//! (`prompb/io/prometheus/write/v2/types.proto`), hand-written for prost.
//!
//! Native histograms use 1.0's [`Histogram`] message: 2.0's has the same
//! fields and numbers, plus `start_timestamp` (17), which Cairn does not
//! keep (as for float samples) and prost skips as unknown.

pub use super::proto::{BucketSpan, Histogram, histogram};

/// `io.prometheus.write.v2.Request`. Fields 1–3 are reserved so a 1.0 body
/// decodes as an empty 2.0 request rather than as garbage.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Request {
    /// Interned strings; every `*_ref` indexes into it. `symbols[0]` is "".
    #[prost(string, repeated, tag = "4")]
    pub symbols: Vec<String>,
    #[prost(message, repeated, tag = "5")]
    pub timeseries: Vec<TimeSeries>,
}

/// `io.prometheus.write.v2.TimeSeries`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TimeSeries {
    /// Name/value pairs of indexes into `Request::symbols`.
    #[prost(uint32, repeated, tag = "1")]
    pub labels_refs: Vec<u32>,
    #[prost(message, repeated, tag = "2")]
    pub samples: Vec<Sample>,
    #[prost(message, repeated, tag = "3")]
    pub histograms: Vec<Histogram>,
    #[prost(message, repeated, tag = "4")]
    pub exemplars: Vec<Exemplar>,
    #[prost(message, optional, tag = "5")]
    pub metadata: Option<Metadata>,
    /// Deprecated in favour of `Sample::start_timestamp`; 0 means unset.
    #[prost(int64, tag = "6")]
    pub created_timestamp: i64,
}

/// `io.prometheus.write.v2.Sample`.
#[derive(Clone, Copy, PartialEq, prost::Message)]
pub struct Sample {
    #[prost(double, tag = "1")]
    pub value: f64,
    #[prost(int64, tag = "2")]
    pub timestamp: i64,
    /// When the counter started counting (ms); 0 means unset.
    #[prost(int64, tag = "3")]
    pub start_timestamp: i64,
}

/// `io.prometheus.write.v2.Exemplar`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Exemplar {
    #[prost(uint32, repeated, tag = "1")]
    pub labels_refs: Vec<u32>,
    #[prost(double, tag = "2")]
    pub value: f64,
    #[prost(int64, tag = "3")]
    pub timestamp: i64,
}

/// `io.prometheus.write.v2.Metadata`.
#[derive(Clone, Copy, PartialEq, prost::Message)]
pub struct Metadata {
    /// `MetricType`: 0 unspecified, 1 counter, 2 gauge, 3 histogram,
    /// 4 gauge histogram, 5 summary, 6 info, 7 stateset.
    #[prost(int32, tag = "1")]
    pub r#type: i32,
    #[prost(uint32, tag = "3")]
    pub help_ref: u32,
    #[prost(uint32, tag = "4")]
    pub unit_ref: u32,
}
