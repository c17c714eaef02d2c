use super::*;
use crate::exposition::FamilyMetadata;
use prost::Message;

use crate::exposition::proto::{
    Bucket, BucketSpan, Counter, Gauge, LabelPair, Metric, MetricFamily, Quantile, Summary,
};

fn body(families: &[MetricFamily]) -> Vec<u8> {
    let mut out = Vec::new();
    for f in families {
        out.extend(f.encode_length_delimited_to_vec());
    }
    out
}

fn family(name: &str, t: proto::MetricType, metric: Vec<Metric>) -> MetricFamily {
    MetricFamily {
        name: name.into(),
        help: format!("{name} help"),
        r#type: t as i32,
        metric,
        unit: String::new(),
    }
}

fn label(name: &str, value: &str) -> LabelPair {
    LabelPair {
        name: name.into(),
        value: value.into(),
    }
}

fn names(e: &Exposition) -> Vec<String> {
    e.samples.iter().map(|s| s.labels.to_string()).collect()
}

fn float(s: &ScrapedSample) -> f64 {
    match s.value {
        ScrapedValue::Float(v) => v,
        ScrapedValue::Histogram(_) => panic!("not a float"),
    }
}

fn classic_histogram() -> proto::Histogram {
    proto::Histogram {
        sample_count: 5,
        sample_sum: 12.5,
        bucket: vec![
            Bucket {
                cumulative_count: 2,
                upper_bound: 1.0,
                ..Bucket::default()
            },
            Bucket {
                cumulative_count: 4,
                upper_bound: 5.0,
                ..Bucket::default()
            },
        ],
        ..proto::Histogram::default()
    }
}

/// Observations 0 (zero bucket), 1, 1.5, 3 and -2 at schema 0.
fn native_histogram_message() -> proto::Histogram {
    proto::Histogram {
        sample_count: 5,
        sample_sum: 3.5,
        schema: 0,
        zero_threshold: 1e-128,
        zero_count: 1,
        positive_span: vec![BucketSpan { offset: 0, length: 2 }, BucketSpan { offset: 0, length: 1 }],
        positive_delta: vec![1, 0, 0],
        negative_span: vec![BucketSpan { offset: 1, length: 1 }],
        negative_delta: vec![1],
        ..proto::Histogram::default()
    }
}

#[test]
fn scalars_and_summaries() {
    let b = body(&[
        family(
            "requests_total",
            proto::MetricType::Counter,
            vec![Metric {
                label: vec![label("code", "200"), label("method", "get")],
                counter: Some(Counter {
                    value: 7.0,
                    ..Counter::default()
                }),
                timestamp_ms: 1_700_000_000_123,
                ..Metric::default()
            }],
        ),
        family(
            "temp",
            proto::MetricType::Gauge,
            vec![Metric {
                gauge: Some(Gauge { value: -1.5 }),
                ..Metric::default()
            }],
        ),
        family("empty", proto::MetricType::Gauge, vec![]),
        family(
            "rpc",
            proto::MetricType::Summary,
            vec![Metric {
                summary: Some(Summary {
                    sample_count: 3,
                    sample_sum: 1.5,
                    quantile: vec![
                        Quantile {
                            quantile: 0.5,
                            value: 0.25,
                        },
                        Quantile {
                            quantile: 1.0,
                            value: 1.0,
                        },
                    ],
                    start_timestamp: None,
                }),
                ..Metric::default()
            }],
        ),
        family("untyped", proto::MetricType::Untyped, vec![Metric::default()]),
    ]);
    let e = parse(&b, &ParseOptions::default()).unwrap();
    assert_eq!(
        names(&e),
        [
            r#"requests_total{code="200", method="get"}"#,
            "temp",
            "rpc_count",
            "rpc_sum",
            r#"rpc{quantile="0.5"}"#,
            r#"rpc{quantile="1.0"}"#,
            "untyped",
        ]
    );
    let values: Vec<f64> = e.samples.iter().map(float).collect();
    assert_eq!(values, [7.0, -1.5, 3.0, 1.5, 0.25, 1.0, 0.0]);
    assert_eq!(e.samples[0].timestamp_ms, Some(1_700_000_000_123));
    assert_eq!(e.samples[1].timestamp_ms, None);
    let kinds: Vec<(&str, MetricType)> = e.metadata.iter().map(|m| (m.name.as_str(), m.kind)).collect();
    assert_eq!(
        kinds,
        [
            ("requests_total", MetricType::Counter),
            ("temp", MetricType::Gauge),
            ("rpc", MetricType::Summary),
            ("untyped", MetricType::Unknown),
        ]
    );
    assert_eq!(e.metadata[1].help, "temp help");
}

#[test]
fn classic_histograms_gain_an_inf_bucket() {
    let b = body(&[family(
        "lat",
        proto::MetricType::Histogram,
        vec![Metric {
            label: vec![label("path", "/")],
            histogram: Some(classic_histogram()),
            ..Metric::default()
        }],
    )]);
    let e = parse(&b, &ParseOptions::default()).unwrap();
    assert_eq!(
        names(&e),
        [
            r#"lat_count{path="/"}"#,
            r#"lat_sum{path="/"}"#,
            r#"lat_bucket{le="1.0", path="/"}"#,
            r#"lat_bucket{le="5.0", path="/"}"#,
            r#"lat_bucket{le="+Inf", path="/"}"#,
        ]
    );
    let values: Vec<f64> = e.samples.iter().map(float).collect();
    assert_eq!(values, [5.0, 12.5, 2.0, 4.0, 5.0]);
}

#[test]
fn native_histograms_and_their_classic_buckets() {
    let mut both = native_histogram_message();
    both.bucket = classic_histogram().bucket;
    let b = body(&[family(
        "h",
        proto::MetricType::Histogram,
        vec![Metric {
            histogram: Some(both),
            ..Metric::default()
        }],
    )]);
    let native = ParseOptions {
        native_histograms: true,
        ..ParseOptions::default()
    };
    let e = parse(&b, &native).unwrap();
    assert_eq!(names(&e), ["h"]);
    let ScrapedValue::Histogram(h) = &e.samples[0].value else {
        panic!("not a histogram")
    };
    assert_eq!((h.schema, h.count, h.sum, h.zero_count), (0, 5.0, 3.5, 1.0));
    assert_eq!(h.positive, [(0, 1.0), (1, 1.0), (2, 1.0)]);
    assert_eq!(h.negative, [(1, 1.0)]);
    assert_eq!(h.reset_hint, ResetHint::Unknown);

    let keep = ParseOptions {
        keep_classic_histograms: true,
        ..native
    };
    assert_eq!(
        names(&parse(&b, &keep).unwrap()),
        [
            "h",
            "h_count",
            "h_sum",
            r#"h_bucket{le="1.0"}"#,
            r#"h_bucket{le="5.0"}"#,
            r#"h_bucket{le="+Inf"}"#
        ]
    );
    // Without native histogram scraping, only the classic series.
    assert_eq!(
        names(&parse(&b, &ParseOptions::default()).unwrap()),
        [
            "h_count",
            "h_sum",
            r#"h_bucket{le="1.0"}"#,
            r#"h_bucket{le="5.0"}"#,
            r#"h_bucket{le="+Inf"}"#
        ]
    );
    // A native-only histogram read as classic: count, sum and +Inf.
    let only = body(&[family(
        "n",
        proto::MetricType::Histogram,
        vec![Metric {
            histogram: Some(native_histogram_message()),
            ..Metric::default()
        }],
    )]);
    assert_eq!(
        names(&parse(&only, &ParseOptions::default()).unwrap()),
        ["n_count", "n_sum", r#"n_bucket{le="+Inf"}"#]
    );
    assert_eq!(names(&parse(&only, &keep).unwrap()), ["n"]);
}

#[test]
fn float_and_gauge_histograms() {
    let h = proto::Histogram {
        sample_count_float: 2.5,
        sample_sum: 4.0,
        schema: 3,
        zero_threshold: 0.001,
        zero_count_float: 0.5,
        positive_span: vec![BucketSpan { offset: -2, length: 2 }],
        positive_count: vec![1.5, 0.5],
        ..proto::Histogram::default()
    };
    let b = body(&[family(
        "g",
        proto::MetricType::GaugeHistogram,
        vec![Metric {
            histogram: Some(h),
            timestamp_ms: 5,
            ..Metric::default()
        }],
    )]);
    let opts = ParseOptions {
        native_histograms: true,
        ..ParseOptions::default()
    };
    let e = parse(&b, &opts).unwrap();
    let ScrapedValue::Histogram(h) = &e.samples[0].value else {
        panic!("not a histogram")
    };
    assert_eq!((h.count, h.zero_count, h.reset_hint), (2.5, 0.5, ResetHint::Gauge));
    assert_eq!(h.positive, [(-2, 1.5), (-1, 0.5)]);
    assert_eq!(e.samples[0].timestamp_ms, Some(5));
    assert_eq!(e.metadata[0].kind, MetricType::GaugeHistogram);
}

#[test]
fn classic_histograms_convert_to_nhcb() {
    let b = body(&[family(
        "lat",
        proto::MetricType::Histogram,
        vec![Metric {
            histogram: Some(classic_histogram()),
            ..Metric::default()
        }],
    )]);
    let opts = ParseOptions {
        convert_classic_histograms_to_nhcb: true,
        ..ParseOptions::default()
    };
    let e = parse(&b, &opts).unwrap();
    assert_eq!(names(&e), ["lat"]);
    let ScrapedValue::Histogram(h) = &e.samples[0].value else {
        panic!("not a histogram")
    };
    assert_eq!(h.schema, cairn_model::histogram::CUSTOM_BUCKETS_SCHEMA);
    assert_eq!(h.custom_bounds.as_deref(), Some(&[1.0, 5.0][..]));
    assert_eq!(h.positive, [(0, 2.0), (1, 2.0), (2, 1.0)]);
    let keep = ParseOptions {
        keep_classic_histograms: true,
        ..opts
    };
    assert_eq!(names(&parse(&b, &keep).unwrap()).len(), 6);
}

#[test]
fn malformed_bodies_fail() {
    let opts = ParseOptions {
        native_histograms: true,
        ..ParseOptions::default()
    };
    let mut bad_spans = native_histogram_message();
    bad_spans.positive_delta.pop();
    let b = body(&[family(
        "h",
        proto::MetricType::Histogram,
        vec![Metric {
            histogram: Some(bad_spans),
            ..Metric::default()
        }],
    )]);
    assert!(
        parse(&b, &opts)
            .unwrap_err()
            .message
            .contains("positive side: spans require 3 buckets, have 2")
    );

    let mut bad_count = native_histogram_message();
    bad_count.sample_count = 9;
    let b = body(&[family(
        "h",
        proto::MetricType::Histogram,
        vec![Metric {
            histogram: Some(bad_count),
            ..Metric::default()
        }],
    )]);
    assert!(parse(&b, &opts).is_err());

    let mut unknown = family("x", proto::MetricType::Gauge, vec![Metric::default()]);
    unknown.r#type = 9;
    assert!(
        parse(&body(&[unknown]), &opts)
            .unwrap_err()
            .message
            .contains("unknown metric type")
    );

    let dup = family(
        "x",
        proto::MetricType::Gauge,
        vec![Metric {
            label: vec![label("a", "1"), label("a", "2")],
            ..Metric::default()
        }],
    );
    assert!(parse(&body(&[dup]), &opts).unwrap_err().message.contains("not unique"));

    let good = body(&[family("x", proto::MetricType::Gauge, vec![Metric::default()])]);
    let e = parse(&good[..good.len() - 1], &opts).unwrap_err();
    assert!(e.message.contains("insufficient length"), "{e}");
    assert!(
        parse(&[0xff, 0xff, 0xff, 0xff, 0xff, 0x01], &opts)
            .unwrap_err()
            .message
            .contains("invalid varint")
    );
    assert!(parse(&[0x02, 0xff, 0xff], &opts).is_err());
    let second = [good.clone(), vec![0x80]].concat();
    let e = parse(&second, &opts).unwrap_err();
    assert_eq!((e.line, e.offset), (2, good.len()));
    assert_eq!(parse(&[], &opts).unwrap(), Exposition::default());
    let _ = FamilyMetadata::default();
}

#[test]
fn type_and_unit_labels_come_from_the_family() {
    let mut f = family(
        "lat_seconds",
        proto::MetricType::Summary,
        vec![Metric {
            label: vec![label("__type__", "x"), label("__unit__", "y")],
            summary: Some(Summary::default()),
            ..Metric::default()
        }],
    );
    f.unit = "seconds".into();
    let e = parse_as(&body(&[f]), &ParseOptions::default(), true).unwrap();
    assert_eq!(
        names(&e),
        [
            r#"lat_seconds_count{__type__="summary", __unit__="seconds"}"#,
            r#"lat_seconds_sum{__type__="summary", __unit__="seconds"}"#,
        ]
    );
    assert_eq!(e.metadata[0].unit, "seconds");
}
