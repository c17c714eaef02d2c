//! The scrape parsers on one real node_exporter page (the first scrape of
//! `/work/shared/benchdata/node-exporter-trace.prom.gz`, or
//! `CAIRN_BENCH_TRACE`: 507 series), in the text format as recorded, and
//! rewritten as OpenMetrics and as protobuf (one untyped family per metric
//! name). Reported as body bytes/s and samples/s
//! (`protocols/exposition/<format>/{bytes,samples}`).

use std::hint::black_box;
use std::io::Read;

use cairn_protocols::exposition::proto::{LabelPair, Metric, MetricFamily, MetricType, Untyped};
use cairn_protocols::exposition::{ParseOptions, ScrapeFormat, ScrapedValue, parse};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use prost::Message;

fn first_page() -> String {
    let path = std::env::var("CAIRN_BENCH_TRACE")
        .unwrap_or_else(|_| "/work/shared/benchdata/node-exporter-trace.prom.gz".into());
    let file = std::fs::File::open(&path).unwrap_or_else(|e| panic!("cannot open trace {path}: {e}"));
    let mut text = String::new();
    flate2::read::GzDecoder::new(file)
        .take(4 << 20)
        .read_to_string(&mut text)
        .ok();
    let mut page = String::new();
    let mut started = false;
    for line in text.lines() {
        if line.starts_with("# PEERBENCH_SCRAPE") {
            if started {
                break;
            }
            started = true;
            continue;
        }
        if started {
            page.push_str(line);
            page.push('\n');
        }
    }
    page
}

fn escape(v: &str) -> String {
    v.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

fn bodies() -> Vec<(&'static str, ScrapeFormat, Vec<u8>, usize)> {
    let text = first_page();
    let parsed = parse(
        ScrapeFormat::PrometheusText0_0_4,
        text.as_bytes(),
        &ParseOptions::default(),
    )
    .unwrap();
    let n = parsed.samples.len();
    let mut om = String::new();
    let mut families: Vec<MetricFamily> = Vec::new();
    for s in &parsed.samples {
        let ScrapedValue::Float(v) = s.value else {
            unreachable!()
        };
        let name = s.labels.metric_name().unwrap_or_default();
        let pairs: Vec<String> = s
            .labels
            .iter()
            .filter(|l| l.name != "__name__")
            .map(|l| format!("{}=\"{}\"", l.name, escape(&l.value)))
            .collect();
        om.push_str(&format!("{name}{{{}}} {v:?}\n", pairs.join(",")));
        let metric = Metric {
            label: s
                .labels
                .iter()
                .filter(|l| l.name != "__name__")
                .map(|l| LabelPair {
                    name: l.name.to_string(),
                    value: l.value.to_string(),
                })
                .collect(),
            untyped: Some(Untyped { value: v }),
            ..Metric::default()
        };
        match families.last_mut() {
            Some(f) if f.name == name => f.metric.push(metric),
            _ => families.push(MetricFamily {
                name: name.to_string(),
                help: "help".into(),
                r#type: MetricType::Untyped as i32,
                metric: vec![metric],
                unit: String::new(),
            }),
        }
    }
    om.push_str("# EOF\n");
    let mut proto = Vec::new();
    for f in &families {
        proto.extend(f.encode_length_delimited_to_vec());
    }
    vec![
        ("text", ScrapeFormat::PrometheusText0_0_4, text.into_bytes(), n),
        ("openmetrics", ScrapeFormat::OpenMetricsText1_0_0, om.into_bytes(), n),
        ("protobuf", ScrapeFormat::PrometheusProto, proto, n),
    ]
}

fn bench(c: &mut Criterion) {
    let opts = ParseOptions::default();
    for (name, format, body, samples) in bodies() {
        for (unit, throughput) in [
            ("bytes", Throughput::Bytes(body.len() as u64)),
            ("samples", Throughput::Elements(samples as u64)),
        ] {
            let mut g = c.benchmark_group(format!("protocols/exposition/{name}"));
            g.throughput(throughput);
            g.bench_function(unit, |b| {
                b.iter(|| black_box(parse(format, black_box(&body), &opts).unwrap()))
            });
            g.finish();
        }
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
