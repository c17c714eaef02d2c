//! Bodies captured from node_exporter 1.5 and Prometheus 3.14 (`data/`,
//! gzipped: `/metrics` asked for the text format, then protobuf, one
//! request after the other). The two formats of one exporter must parse to
//! the same series and metadata, and the classic histograms converted to
//! NHCB must agree with the text's own counts.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;

use cairn_model::histogram::CUSTOM_BUCKETS_SCHEMA;
use cairn_protocols::MetricType;
use cairn_protocols::exposition::{Exposition, ParseOptions, ScrapeFormat, ScrapedValue, parse};

fn data(name: &str) -> Vec<u8> {
    let path = format!("{}/tests/data/{name}", env!("CARGO_MANIFEST_DIR"));
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(std::fs::File::open(&path).unwrap())
        .read_to_end(&mut out)
        .unwrap();
    out
}

fn floats(e: &Exposition) -> BTreeMap<String, f64> {
    e.samples
        .iter()
        .filter_map(|s| match s.value {
            ScrapedValue::Float(v) => Some((s.labels.to_string(), v)),
            ScrapedValue::Histogram(_) => None,
        })
        .collect()
}

/// Family → type and help. (Units differ: protobuf carries the ones the
/// Go runtime metrics declare, the text format has no place for them.)
fn metadata(e: &Exposition) -> BTreeMap<String, (MetricType, String)> {
    e.metadata
        .iter()
        .filter(|m| !per_request(&m.name))
        .map(|m| (m.name.clone(), (m.kind, m.help.clone())))
        .collect()
}

/// Series whose presence depends on the request itself.
fn per_request(series: &str) -> bool {
    series.starts_with("promhttp_metric_handler_requests_total")
        || series.starts_with("prometheus_http_requests_total")
        || series.starts_with("prometheus_http_request_duration_seconds")
        || series.starts_with("prometheus_http_response_size_bytes")
}

fn same_series(exporter: &str) -> (Exposition, Exposition) {
    let text = parse(
        ScrapeFormat::PrometheusText0_0_4,
        &data(&format!("{exporter}.txt.gz")),
        &ParseOptions::default(),
    )
    .unwrap();
    let proto = parse(
        ScrapeFormat::PrometheusProto,
        &data(&format!("{exporter}.pb.gz")),
        &ParseOptions::default(),
    )
    .unwrap();
    let keys = |e: &Exposition| -> BTreeSet<String> { floats(e).into_keys().filter(|k| !per_request(k)).collect() };
    assert_eq!(keys(&text), keys(&proto), "{exporter}");
    let (tm, pm) = (metadata(&text), metadata(&proto));
    let differing: Vec<_> = tm
        .iter()
        .filter(|(k, v)| pm.get(*k) != Some(v))
        .map(|(k, v)| (k, v, pm.get(k)))
        .chain(
            pm.iter()
                .filter(|(k, _)| !tm.contains_key(*k))
                .map(|(k, v)| (k, v, None)),
        )
        .collect();
    assert!(differing.is_empty(), "{exporter}: {differing:?}");
    for (k, v) in floats(&text) {
        if k.split('{').next().is_some_and(|n| n.ends_with("_info")) {
            assert_eq!(floats(&proto).get(&k), Some(&v), "{k}");
        }
    }
    (text, proto)
}

#[test]
fn node_exporter_text_and_protobuf_agree() {
    let (text, _) = same_series("node-exporter-1.5");
    let series = floats(&text);
    assert_eq!(series.len(), 507);
    assert!(series.contains_key(r#"go_gc_duration_seconds{quantile="0.0"}"#));
    assert!(series.contains_key(r#"go_gc_duration_seconds{quantile="0.75"}"#));
    let os = text
        .samples
        .iter()
        .find(|s| s.labels.metric_name() == Some("node_os_info"))
        .unwrap();
    assert_eq!(os.labels.get("id"), Some("debian"));
    assert_eq!(os.labels.get("build_id"), None, "empty values are dropped");
    let kinds = |k: MetricType| text.metadata.iter().filter(|m| m.kind == k).count();
    assert_eq!(
        (
            kinds(MetricType::Counter),
            kinds(MetricType::Gauge),
            kinds(MetricType::Summary)
        ),
        (60, 175, 1)
    );
    assert_eq!(kinds(MetricType::Unknown), 47);
}

#[test]
fn prometheus_text_and_protobuf_agree_and_histograms_convert() {
    let (text, _) = same_series("prometheus-3.14");
    let build = text
        .samples
        .iter()
        .find(|s| s.labels.metric_name() == Some("prometheus_build_info"))
        .unwrap();
    assert_eq!(build.labels.get("version"), Some("3.14.0"));
    let histogram_families: BTreeSet<&str> = text
        .metadata
        .iter()
        .filter(|m| m.kind == MetricType::Histogram)
        .map(|m| m.name.as_str())
        .collect();
    assert_eq!(histogram_families.len(), 20);

    // Native histograms from protobuf: valid, and each one a histogram
    // family of the text.
    let native = parse(
        ScrapeFormat::PrometheusProto,
        &data("prometheus-3.14.pb.gz"),
        &ParseOptions {
            native_histograms: true,
            ..ParseOptions::default()
        },
    )
    .unwrap();
    let natives: Vec<_> = native
        .samples
        .iter()
        .filter_map(|s| match &s.value {
            ScrapedValue::Histogram(h) => Some((s.labels.metric_name().unwrap().to_string(), h)),
            ScrapedValue::Float(_) => None,
        })
        .collect();
    assert!(!natives.is_empty());
    for (name, h) in &natives {
        h.validate().unwrap();
        assert!((-4..=8).contains(&h.schema), "{name}");
        // The HTTP histograms only exist once a request was served: after
        // the text capture.
        assert!(
            histogram_families.contains(name.as_str()) || per_request(name),
            "{name}"
        );
    }

    // NHCB from the text: one per classic histogram series, its count the
    // text's `_count`, its buckets the text's buckets.
    let converted = parse(
        ScrapeFormat::PrometheusText0_0_4,
        &data("prometheus-3.14.txt.gz"),
        &ParseOptions {
            convert_classic_histograms_to_nhcb: true,
            ..ParseOptions::default()
        },
    )
    .unwrap();
    let series = floats(&text);
    let mut nhcb = 0;
    for s in &converted.samples {
        let ScrapedValue::Histogram(h) = &s.value else {
            continue;
        };
        nhcb += 1;
        assert_eq!(h.schema, CUSTOM_BUCKETS_SCHEMA);
        let name = s.labels.metric_name().unwrap();
        let rest = s.labels.to_string();
        let count_key = rest.replacen(name, &format!("{name}_count"), 1);
        assert_eq!(series.get(&count_key), Some(&h.count), "{count_key}");
        let bucket_count = series
            .keys()
            .filter(|k| k.starts_with(&format!("{name}_bucket{{")))
            .count();
        assert!(h.bounds().len() < bucket_count.max(1), "{name}");
    }
    let classic_counts = series
        .keys()
        .filter(|k| histogram_families.iter().any(|f| k.starts_with(&format!("{f}_count"))))
        .count();
    assert_eq!(nhcb, classic_counts);
    assert!(!converted.samples.iter().any(|s| {
        let n = s.labels.metric_name().unwrap_or_default();
        histogram_families
            .iter()
            .any(|f| n == format!("{f}_bucket") || n == format!("{f}_sum"))
    }));
}
