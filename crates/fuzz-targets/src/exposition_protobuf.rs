//! Scrape parsing of the Prometheus protobuf format on arbitrary bytes: it
//! must return, never panic, under every option; every native histogram it
//! returns must be valid; and the float samples it returns, encoded back as
//! gauges, must parse to the same samples.

use cairn_protocols::exposition::proto::{Gauge, LabelPair, Metric, MetricFamily, MetricType};
use cairn_protocols::exposition::{ParseOptions, ScrapeFormat, ScrapedValue, parse};
use prost::Message;

pub fn exposition_protobuf(data: &[u8]) {
    let d = ParseOptions::default();
    for opts in [
        ParseOptions {
            native_histograms: true,
            ..d
        },
        ParseOptions {
            native_histograms: true,
            keep_classic_histograms: true,
            convert_classic_histograms_to_nhcb: true,
            ..d
        },
    ] {
        if let Ok(e) = parse(ScrapeFormat::PrometheusProto, data, &opts) {
            for s in &e.samples {
                if let ScrapedValue::Histogram(h) = &s.value {
                    h.validate().unwrap();
                }
            }
        }
    }
    let Ok(first) = parse(ScrapeFormat::PrometheusProto, data, &d) else {
        return;
    };
    let mut body = Vec::new();
    let mut want = Vec::new();
    for s in &first.samples {
        let ScrapedValue::Float(v) = s.value else {
            panic!("a histogram without native histograms or conversion");
        };
        let family = MetricFamily {
            name: s.labels.metric_name().unwrap_or_default().to_string(),
            help: String::new(),
            r#type: MetricType::Gauge as i32,
            metric: vec![Metric {
                label: s
                    .labels
                    .iter()
                    .filter(|l| l.name != "__name__")
                    .map(|l| LabelPair {
                        name: l.name.to_string(),
                        value: l.value.to_string(),
                    })
                    .collect(),
                gauge: Some(Gauge { value: v }),
                timestamp_ms: s.timestamp_ms.unwrap_or(0),
                ..Metric::default()
            }],
            unit: String::new(),
        };
        body.extend(family.encode_length_delimited_to_vec());
        let v = if v == 0.0 { 0.0 } else { v };
        want.push((
            s.labels.to_string(),
            s.timestamp_ms,
            if v.is_nan() { None } else { Some(v.to_bits()) },
        ));
    }
    let again = parse(ScrapeFormat::PrometheusProto, &body, &d).unwrap();
    let have: Vec<_> = again
        .samples
        .iter()
        .map(|s| {
            let ScrapedValue::Float(v) = s.value else {
                unreachable!()
            };
            (
                s.labels.to_string(),
                s.timestamp_ms,
                if v.is_nan() { None } else { Some(v.to_bits()) },
            )
        })
        .collect();
    assert_eq!(have, want);
}
