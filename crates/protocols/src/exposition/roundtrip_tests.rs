//! Properties of the three parsers: arbitrary bytes never make them panic,
//! and samples written out in each format parse back to themselves.

use cairn_model::{Label, Labels};
use proptest::prelude::*;
use prost::Message;

use super::proto::{self, LabelPair, Metric, MetricFamily};
use super::*;

/// One generated sample: metric name, label pairs, value, timestamp.
#[derive(Debug, Clone)]
struct Case {
    name: String,
    labels: Vec<(String, String)>,
    value: f64,
    timestamp_ms: Option<i64>,
}

fn bare_name() -> impl Strategy<Value = String> {
    "[a-zA-Z_:][a-zA-Z0-9_:]{0,12}"
}

fn any_name() -> impl Strategy<Value = String> {
    prop_oneof![bare_name(), "[^\u{0}]{1,10}", "[a-z.\"\\\\\n ]{1,8}"]
}

fn label_name() -> impl Strategy<Value = String> {
    prop_oneof!["[a-zA-Z_][a-zA-Z0-9_]{0,8}", "[^\u{0}]{1,6}", "[a-z.\"\\\\\n ]{1,6}"]
        .prop_filter("reserved", |n| n != "__name__")
}

fn value() -> impl Strategy<Value = f64> {
    prop_oneof![
        any::<f64>(),
        Just(f64::NAN),
        Just(f64::INFINITY),
        Just(f64::NEG_INFINITY),
        Just(-0.0),
        (-1000i32..1000).prop_map(f64::from),
    ]
}

fn case() -> impl Strategy<Value = Case> {
    (
        any_name(),
        proptest::collection::btree_map(label_name(), "[^\u{0}]{0,8}", 0..4),
        value(),
        proptest::option::of(-1_000_000_000i64..4_000_000_000),
    )
        .prop_map(|(name, labels, value, t)| Case {
            name,
            labels: labels.into_iter().collect(),
            value,
            // Whole seconds: OpenMetrics writes seconds, and a fraction
            // of a second would be truncated as Prometheus truncates it.
            timestamp_ms: t.map(|s| s * 1000),
        })
}

fn escape(s: &str) -> String {
    s.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

fn is_bare(name: &str, label: bool) -> bool {
    let mut bytes = name.bytes();
    let first = bytes
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == b'_' || (!label && c == b':'));
    first && bytes.all(|c| c.is_ascii_alphanumeric() || c == b'_' || (!label && c == b':'))
}

/// Writes the cases in the Prometheus text format, or OpenMetrics.
fn write_text(cases: &[Case], openmetrics: bool) -> String {
    let mut out = String::new();
    for c in cases {
        let mut pairs = Vec::new();
        if is_bare(&c.name, false) {
            out.push_str(&c.name);
        } else {
            pairs.push(format!("\"{}\"", escape(&c.name)));
        }
        for (n, v) in &c.labels {
            let n = if is_bare(n, true) {
                n.clone()
            } else {
                format!("\"{}\"", escape(n))
            };
            pairs.push(format!("{n}=\"{}\"", escape(v)));
        }
        if !pairs.is_empty() {
            out.push('{');
            out.push_str(&pairs.join(","));
            out.push('}');
        }
        out.push_str(&format!(" {:?}", c.value));
        match (c.timestamp_ms, openmetrics) {
            (Some(t), false) if t >= 0 => out.push_str(&format!(" {t}")),
            (Some(t), true) => out.push_str(&format!(" {}", t / 1000)),
            _ => {}
        }
        out.push('\n');
    }
    if openmetrics {
        out.push_str("# EOF\n");
    }
    out
}

fn write_proto(cases: &[Case]) -> Vec<u8> {
    let mut out = Vec::new();
    for c in cases {
        let family = MetricFamily {
            name: c.name.clone(),
            help: String::new(),
            r#type: proto::MetricType::Gauge as i32,
            metric: vec![Metric {
                label: c
                    .labels
                    .iter()
                    .map(|(n, v)| LabelPair {
                        name: n.clone(),
                        value: v.clone(),
                    })
                    .collect(),
                gauge: Some(proto::Gauge { value: c.value }),
                timestamp_ms: c.timestamp_ms.unwrap_or(0),
                ..Metric::default()
            }],
            unit: String::new(),
        };
        out.extend(family.encode_length_delimited_to_vec());
    }
    out
}

fn expected(c: &Case, format: ScrapeFormat) -> (Labels, Option<i64>, Option<u64>) {
    let mut labels = vec![Label::new("__name__", c.name.as_str())];
    labels.extend(c.labels.iter().map(|(n, v)| Label::new(n.as_str(), v.as_str())));
    let t = match format {
        ScrapeFormat::PrometheusText0_0_4 => c.timestamp_ms.filter(|t| *t >= 0),
        ScrapeFormat::PrometheusProto => c.timestamp_ms.filter(|t| *t != 0),
        _ => c.timestamp_ms,
    };
    // Protobuf leaves a zero field out, so -0 arrives as 0, in Go as here.
    let value = if format == ScrapeFormat::PrometheusProto && c.value == 0.0 {
        0.0
    } else {
        c.value
    };
    let bits = (!value.is_nan()).then(|| value.to_bits());
    (Labels::new(labels).unwrap(), t, bits)
}

fn got(s: &ScrapedSample) -> (Labels, Option<i64>, Option<u64>) {
    let ScrapedValue::Float(v) = s.value else {
        panic!("histogram")
    };
    (s.labels.clone(), s.timestamp_ms, (!v.is_nan()).then(|| v.to_bits()))
}

fn all_options() -> [ParseOptions; 4] {
    let d = ParseOptions::default();
    [
        d,
        ParseOptions {
            native_histograms: true,
            keep_classic_histograms: true,
            ..d
        },
        ParseOptions {
            convert_classic_histograms_to_nhcb: true,
            ..d
        },
        ParseOptions {
            convert_classic_histograms_to_nhcb: true,
            keep_classic_histograms: true,
            native_histograms: true,
            skip_openmetrics_created_series: true,
        },
    ]
}

proptest! {
    #[test]
    fn arbitrary_bytes_never_panic(body in proptest::collection::vec(any::<u8>(), 0..300)) {
        for opts in all_options() {
            for format in ScrapeFormat::all() {
                let _ = parse(format, &body, &opts);
                let _ = parse_with_type_and_unit_labels(format, &body, &opts);
            }
        }
    }

    #[test]
    fn text_like_bytes_never_panic(body in "[a-z_{}=\",# \n\\\\.0-9+\\-eE:TYPEHLPUNIOFhistogramsuy]{0,200}") {
        for opts in all_options() {
            for format in ScrapeFormat::all() {
                let _ = parse(format, body.as_bytes(), &opts);
            }
        }
    }

    #[test]
    fn written_samples_parse_back(cases in proptest::collection::vec(case(), 0..8)) {
        for format in [ScrapeFormat::PrometheusText0_0_4, ScrapeFormat::OpenMetricsText1_0_0, ScrapeFormat::PrometheusProto] {
            let body = match format {
                ScrapeFormat::PrometheusProto => write_proto(&cases),
                f => write_text(&cases, f == ScrapeFormat::OpenMetricsText1_0_0).into_bytes(),
            };
            let parsed = parse(format, &body, &ParseOptions::default())
                .unwrap_or_else(|e| panic!("{format:?} {:?}: {e}", String::from_utf8_lossy(&body)));
            let want: Vec<_> = cases.iter().map(|c| expected(c, format)).collect();
            let have: Vec<_> = parsed.samples.iter().map(got).collect();
            prop_assert_eq!(have, want, "{:?}", String::from_utf8_lossy(&body));
        }
    }
}
