//! Remote write 1.0 requests with native histograms, encoded here from the
//! protocol's message definitions (Prometheus' `prompb/types.proto`), apart
//! from Cairn's own encoder, so that the test also checks Cairn's decoder
//! against an independent reading of the format.
//!
//! Integer histograms (every count whole) go as bucket deltas, the others
//! as float counts, as Prometheus sends them.

use cairn_model::histogram::{Histogram, ResetHint};
use prost::Message;

use super::histogram_data::{Series, Value};

#[derive(Clone, PartialEq, Message)]
struct WriteRequest {
    #[prost(message, repeated, tag = "1")]
    timeseries: Vec<TimeSeries>,
}

#[derive(Clone, PartialEq, Message)]
struct TimeSeries {
    #[prost(message, repeated, tag = "1")]
    labels: Vec<Label>,
    #[prost(message, repeated, tag = "2")]
    samples: Vec<Sample>,
    #[prost(message, repeated, tag = "4")]
    histograms: Vec<WireHistogram>,
}

#[derive(Clone, PartialEq, Message)]
struct Label {
    #[prost(string, tag = "1")]
    name: String,
    #[prost(string, tag = "2")]
    value: String,
}

#[derive(Clone, PartialEq, Message)]
struct Sample {
    #[prost(double, tag = "1")]
    value: f64,
    #[prost(int64, tag = "2")]
    timestamp: i64,
}

#[derive(Clone, PartialEq, Message)]
struct Span {
    #[prost(sint32, tag = "1")]
    offset: i32,
    #[prost(uint32, tag = "2")]
    length: u32,
}

#[derive(Clone, PartialEq, Message)]
struct WireHistogram {
    #[prost(uint64, optional, tag = "1")]
    count_int: Option<u64>,
    #[prost(double, optional, tag = "2")]
    count_float: Option<f64>,
    #[prost(double, tag = "3")]
    sum: f64,
    #[prost(sint32, tag = "4")]
    schema: i32,
    #[prost(double, tag = "5")]
    zero_threshold: f64,
    #[prost(uint64, optional, tag = "6")]
    zero_count_int: Option<u64>,
    #[prost(double, optional, tag = "7")]
    zero_count_float: Option<f64>,
    #[prost(message, repeated, tag = "8")]
    negative_spans: Vec<Span>,
    #[prost(sint64, repeated, tag = "9")]
    negative_deltas: Vec<i64>,
    #[prost(double, repeated, tag = "10")]
    negative_counts: Vec<f64>,
    #[prost(message, repeated, tag = "11")]
    positive_spans: Vec<Span>,
    #[prost(sint64, repeated, tag = "12")]
    positive_deltas: Vec<i64>,
    #[prost(double, repeated, tag = "13")]
    positive_counts: Vec<f64>,
    #[prost(int32, tag = "14")]
    reset_hint: i32,
    #[prost(int64, tag = "15")]
    timestamp: i64,
    #[prost(double, repeated, tag = "16")]
    custom_values: Vec<f64>,
}

/// Spans of consecutive indexes, each from the end of the one before.
fn spans(buckets: &[(i32, f64)]) -> Vec<Span> {
    let mut out: Vec<Span> = Vec::new();
    let mut next = 0;
    for (n, &(idx, _)) in buckets.iter().enumerate() {
        match out.last_mut() {
            Some(last) if n > 0 && idx == next => last.length += 1,
            _ => out.push(Span {
                offset: if n == 0 { idx } else { idx - next },
                length: 1,
            }),
        }
        next = idx + 1;
    }
    out
}

fn deltas(buckets: &[(i32, f64)]) -> Vec<i64> {
    let mut prev = 0i64;
    buckets
        .iter()
        .map(|&(_, c)| {
            let c = c as i64;
            let d = c - prev;
            prev = c;
            d
        })
        .collect()
}

fn wire(t: i64, h: &Histogram) -> WireHistogram {
    let whole = |v: f64| v.fract() == 0.0 && v >= 0.0;
    let integer = h.sum.is_finite()
        && whole(h.count)
        && whole(h.zero_count)
        && h.positive.iter().chain(&h.negative).all(|b| whole(b.1));
    let reset_hint = match h.reset_hint {
        ResetHint::Unknown => 0,
        ResetHint::Reset => 1,
        ResetHint::NotReset => 2,
        ResetHint::Gauge => 3,
    };
    let mut w = WireHistogram {
        sum: h.sum,
        schema: h.schema,
        zero_threshold: h.zero_threshold,
        negative_spans: spans(&h.negative),
        positive_spans: spans(&h.positive),
        reset_hint,
        timestamp: t,
        custom_values: h.custom_bounds.as_deref().unwrap_or_default().to_vec(),
        ..WireHistogram::default()
    };
    if integer {
        w.count_int = Some(h.count as u64);
        w.zero_count_int = Some(h.zero_count as u64);
        w.negative_deltas = deltas(&h.negative);
        w.positive_deltas = deltas(&h.positive);
    } else {
        w.count_float = Some(h.count);
        w.zero_count_float = Some(h.zero_count);
        w.negative_counts = h.negative.iter().map(|b| b.1).collect();
        w.positive_counts = h.positive.iter().map(|b| b.1).collect();
    }
    w
}

/// One snappy-compressed remote write 1.0 body holding every series.
pub fn write_request(series: &[Series]) -> Vec<u8> {
    let timeseries = series
        .iter()
        .map(|s| {
            let mut ts = TimeSeries {
                labels: s
                    .labels
                    .iter()
                    .map(|(n, v)| Label {
                        name: n.to_string(),
                        value: v.clone(),
                    })
                    .collect(),
                ..TimeSeries::default()
            };
            for (t, v) in &s.samples {
                match v {
                    Value::Float(v) => ts.samples.push(Sample {
                        value: *v,
                        timestamp: *t,
                    }),
                    Value::Histogram(h) => ts.histograms.push(wire(*t, h)),
                }
            }
            ts
        })
        .collect();
    let raw = WriteRequest { timeseries }.encode_to_vec();
    snap::raw::Encoder::new().compress_vec(&raw).expect("snappy")
}
