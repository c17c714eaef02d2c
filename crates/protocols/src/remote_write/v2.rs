//! Remote write 2.0 (`io.prometheus.write.v2.Request`) → [`WriteBatch`].
//!
//! - Labels and metadata strings come from the request's `symbols` table;
//!   every reference is bounds-checked, and a series with an odd number of
//!   label references, an out-of-range reference, or labels 1.0 would refuse
//!   (see [`InvalidSeriesReason`]) makes the whole request a 400, as in 1.0.
//! - Float and native histogram samples are kept, histograms by 1.0's rules
//!   (invalid ones counted in [`WriteBatch::histograms_invalid`], staleness
//!   markers as float stale NaNs); exemplars are
//!   accepted and counted in [`WriteBatch::exemplars_dropped`] (Cairn does
//!   not store exemplars, so the written-exemplars header says 0).
//! - `start_timestamp` / `created_timestamp` are accepted and not stored:
//!   the spec lets receivers ignore them, and Cairn keeps no created
//!   timestamps (Prometheus, too, only uses them behind a feature flag).
//! - `metadata` becomes [`MetricMetadata`] under the series' metric name,
//!   once per consecutive run of series with the same name.

use prost::Message;

use super::decode::{decompress, push_series};
use super::histogram::{Decoded, from_proto};
use super::{ContentEncoding, DecodeError, InvalidSeriesReason, proto_v2};
use crate::{DecodeLimits, MetricMetadata, MetricType, WriteBatch};

/// The `proto` parameter of a remote write 2.0 `Content-Type`.
pub const PROTO_V2: &str = "io.prometheus.write.v2.Request";

/// Decodes one remote write 2.0 request body.
pub fn decode_write_request_v2(
    body: &[u8],
    encoding: ContentEncoding,
    limits: &DecodeLimits,
) -> Result<WriteBatch, DecodeError> {
    let raw = decompress(body, encoding, limits.max_decompressed_bytes)?;
    let req = proto_v2::Request::decode(raw.as_ref()).map_err(|e| DecodeError::BadProtobuf {
        at: "request".into(),
        reason: e.to_string(),
    })?;
    drop(raw);
    convert(req, limits)
}

fn convert(req: proto_v2::Request, limits: &DecodeLimits) -> Result<WriteBatch, DecodeError> {
    let symbols = &req.symbols;
    let symbol = |at: &dyn Fn() -> String, r: u32| -> Result<&str, DecodeError> {
        symbols
            .get(r as usize)
            .map(String::as_str)
            .ok_or_else(|| DecodeError::BadProtobuf {
                at: at(),
                reason: format!(
                    "symbol reference {r} is outside the {}-entry symbols table",
                    symbols.len()
                ),
            })
    };
    let mut batch = WriteBatch::default();
    let mut pairs = Vec::new();
    let mut samples = Vec::new();
    let mut histograms = Vec::new();
    for (index, ts) in req.timeseries.iter().enumerate() {
        let at = || format!("series {index}");
        if ts.labels_refs.len() % 2 != 0 {
            return Err(DecodeError::BadProtobuf {
                at: at(),
                reason: format!("{} label references: want name/value pairs", ts.labels_refs.len()),
            });
        }
        if ts.labels_refs.len() / 2 > limits.max_labels_per_series {
            return Err(DecodeError::InvalidSeries {
                index,
                reason: InvalidSeriesReason::TooManyLabels {
                    limit: limits.max_labels_per_series,
                },
            });
        }
        let mut raw = Vec::with_capacity(ts.labels_refs.len() / 2);
        for pair in ts.labels_refs.chunks_exact(2) {
            if let [name, value] = pair {
                raw.push((symbol(&at, *name)?.as_bytes(), symbol(&at, *value)?.as_bytes()));
            }
        }
        samples.clear();
        samples.extend(
            ts.samples
                .iter()
                .map(|s| cairn_model::Sample::new(s.timestamp, s.value)),
        );
        histograms.clear();
        let mut stale_markers = 0;
        for (n, h) in ts.histograms.iter().enumerate() {
            match from_proto(h, limits.max_histogram_buckets) {
                Ok(Decoded::Histogram(h)) => histograms.push(h),
                Ok(Decoded::Stale(t)) => {
                    samples.push(cairn_model::Sample::new(t, cairn_model::stale_nan()));
                    stale_markers += 1;
                }
                Err(e) => batch
                    .histograms_invalid
                    .add(|| format!("series {index} histogram {n}: {e}")),
            }
        }
        let name = push_series(&raw, None, &samples, &histograms, limits, &mut pairs, &mut batch)
            .map_err(|reason| DecodeError::InvalidSeries { index, reason })?;
        // A series without samples is validated like any other, then not
        // kept.
        if samples.is_empty() && histograms.is_empty() {
            batch.pop();
        }
        for _ in 0..stale_markers {
            batch.count_histogram_stale_marker();
        }
        for ex in &ts.exemplars {
            for r in &ex.labels_refs {
                symbol(&at, *r)?;
            }
        }
        batch.exemplars_dropped += ts.exemplars.len();
        if let Some(md) = ts.metadata {
            let metadata = MetricMetadata {
                metric_family_name: name.to_string(),
                metric_type: metric_type(md.r#type),
                help: symbol(&at, md.help_ref)?.to_string(),
                unit: symbol(&at, md.unit_ref)?.to_string(),
            };
            let known =
                metadata.metric_type != MetricType::Unknown || !metadata.help.is_empty() || !metadata.unit.is_empty();
            if known && batch.metadata.last() != Some(&metadata) {
                batch.metadata.push(metadata);
            }
        }
    }
    Ok(batch)
}

fn metric_type(t: i32) -> MetricType {
    match t {
        1 => MetricType::Counter,
        2 => MetricType::Gauge,
        3 => MetricType::Histogram,
        4 => MetricType::GaugeHistogram,
        5 => MetricType::Summary,
        6 => MetricType::Info,
        7 => MetricType::StateSet,
        _ => MetricType::Unknown,
    }
}

#[cfg(test)]
mod tests {
    use super::proto_v2::*;
    use super::*;
    use cairn_model::{Labels, stale_nan};

    fn request() -> Request {
        Request {
            symbols: [
                "",
                "__name__",
                "http_requests_total",
                "job",
                "api",
                "Requests served.",
                "trace_id",
                "abc",
                "temp",
                "celsius",
            ]
            .map(String::from)
            .to_vec(),
            timeseries: vec![
                TimeSeries {
                    labels_refs: vec![1, 2, 3, 4],
                    samples: vec![
                        Sample {
                            value: 1.0,
                            timestamp: 1000,
                            start_timestamp: 500,
                        },
                        Sample {
                            value: stale_nan(),
                            timestamp: 2000,
                            start_timestamp: 500,
                        },
                    ],
                    exemplars: vec![Exemplar {
                        labels_refs: vec![6, 7],
                        value: 1.0,
                        timestamp: 1000,
                    }],
                    metadata: Some(Metadata {
                        r#type: 1,
                        help_ref: 5,
                        unit_ref: 0,
                    }),
                    created_timestamp: 500,
                    ..Default::default()
                },
                TimeSeries {
                    labels_refs: vec![1, 8],
                    samples: vec![Sample {
                        value: 21.5,
                        timestamp: 1000,
                        start_timestamp: 0,
                    }],
                    metadata: Some(Metadata {
                        r#type: 2,
                        help_ref: 0,
                        unit_ref: 9,
                    }),
                    ..Default::default()
                },
                TimeSeries {
                    labels_refs: vec![1, 8],
                    histograms: vec![
                        Histogram {
                            timestamp: 1000,
                            ..Default::default()
                        },
                        Histogram {
                            timestamp: 2000,
                            ..Default::default()
                        },
                    ],
                    ..Default::default()
                },
            ],
        }
    }

    fn decode(req: &Request) -> Result<WriteBatch, DecodeError> {
        decode_write_request_v2(
            &req.encode_to_vec(),
            ContentEncoding::Identity,
            &DecodeLimits::default(),
        )
    }

    #[test]
    fn decodes_symbols_samples_metadata_exemplars_and_histograms() {
        let mut body = Vec::new();
        let raw = request().encode_to_vec();
        body.extend(snap::raw::Encoder::new().compress_vec(&raw).unwrap());
        let batch = decode_write_request_v2(&body, ContentEncoding::Snappy, &DecodeLimits::default()).unwrap();
        let series = batch.to_series();
        assert_eq!(series.len(), 3);
        assert_eq!(
            series[0].labels,
            Labels::from_pairs([("__name__", "http_requests_total"), ("job", "api")])
        );
        assert_eq!(
            series[0].samples,
            vec![
                cairn_model::Sample::new(1000, 1.0),
                cairn_model::Sample::new(2000, stale_nan())
            ]
        );
        assert_eq!(series[1].samples, vec![cairn_model::Sample::new(1000, 21.5)]);
        assert_eq!(batch.exemplars_dropped, 1);
        assert_eq!(batch.histogram_count(), 2);
        assert_eq!(
            series[2].histograms.iter().map(|h| h.t).collect::<Vec<_>>(),
            [1000, 2000]
        );
        assert_eq!(
            batch.metadata,
            vec![
                MetricMetadata {
                    metric_family_name: "http_requests_total".into(),
                    metric_type: MetricType::Counter,
                    help: "Requests served.".into(),
                    unit: String::new(),
                },
                MetricMetadata {
                    metric_family_name: "temp".into(),
                    metric_type: MetricType::Gauge,
                    help: String::new(),
                    unit: "celsius".into(),
                },
            ]
        );
    }

    #[test]
    fn bad_references_and_labels_refuse_the_request() {
        let check = |edit: &dyn Fn(&mut Request), want: &str| {
            let mut req = request();
            edit(&mut req);
            let err = decode(&req).unwrap_err().to_string();
            assert!(err.contains(want), "{err}");
        };
        check(&|r| r.timeseries[1].labels_refs = vec![1], "1 label references");
        check(
            &|r| r.timeseries[1].labels_refs = vec![1, 10],
            "symbol reference 10 is outside the 10-entry",
        );
        check(
            &|r| r.timeseries[1].labels_refs = vec![1, u32::MAX],
            "symbol reference 4294967295",
        );
        check(
            &|r| {
                r.timeseries[0].metadata = Some(Metadata {
                    r#type: 1,
                    help_ref: 99,
                    unit_ref: 0,
                })
            },
            "series 0",
        );
        check(
            &|r| r.timeseries[0].exemplars[0].labels_refs = vec![6, 50],
            "symbol reference 50",
        );
        check(
            &|r| r.timeseries[1].labels_refs = vec![3, 4],
            "invalid series at index 1: no metric name",
        );
        check(
            &|r| r.timeseries[1].labels_refs = vec![1, 8, 1, 2],
            "duplicate label name",
        );
        check(&|r| r.symbols.clear(), "outside the 0-entry");
        let limits = DecodeLimits {
            max_labels_per_series: 1,
            ..DecodeLimits::default()
        };
        let err = decode_write_request_v2(&request().encode_to_vec(), ContentEncoding::Identity, &limits).unwrap_err();
        assert!(err.to_string().contains("more than 1 labels"), "{err}");
    }

    #[test]
    fn empty_garbage_and_v1_bodies() {
        assert_eq!(
            decode_write_request_v2(b"", ContentEncoding::Identity, &DecodeLimits::default()).unwrap(),
            WriteBatch::default()
        );
        assert!(decode_write_request_v2(b"\xff\xff\xff", ContentEncoding::Identity, &DecodeLimits::default()).is_err());
        // A 1.0 body uses only the reserved fields 1-3: it decodes as an empty request.
        let v1 = super::super::proto::WriteRequest {
            timeseries: vec![super::super::proto::TimeSeries::default()],
            metadata: vec![],
        };
        assert_eq!(
            decode_write_request_v2(&v1.encode_to_vec(), ContentEncoding::Identity, &DecodeLimits::default()).unwrap(),
            WriteBatch::default()
        );
    }
}
