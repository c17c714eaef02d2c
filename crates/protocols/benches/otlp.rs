//! Decoding a realistic OTLP metrics export: what the Collector's
//! `hostmetrics` receiver plus an instrumented HTTP server send for two
//! hosts in one batch (CPU time per core and state, memory, filesystems,
//! network and disk counters, a 15-bucket request-duration histogram per
//! route/method/status, and a summary), one point per stream as every
//! periodic exporter sends. Reported as body bytes/s and stored samples/s,
//! uncompressed and gzipped.

use std::hint::black_box;
use std::io::Write;

use cairn_protocols::DecodeLimits;
use cairn_protocols::otlp::proto::*;
use cairn_protocols::otlp::{ContentEncoding, decode_export_request};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use prost::Message;

const T: u64 = 1_700_000_000_000_000_000;
const NOW_MS: i64 = 1_700_000_000_000;

fn attrs(pairs: &[(&str, &str)]) -> Vec<KeyValue> {
    pairs.iter().map(|(k, v)| KeyValue::string(*k, *v)).collect()
}

fn point(pairs: &[(&str, &str)], v: f64) -> NumberDataPoint {
    NumberDataPoint {
        attributes: attrs(pairs),
        start_time_unix_nano: T - 3_600_000_000_000,
        time_unix_nano: T,
        value: Some(number_data_point::Value::AsDouble(v)),
        ..Default::default()
    }
}

fn sum(name: &str, unit: &str, monotonic: bool, data_points: Vec<NumberDataPoint>) -> Metric {
    Metric {
        name: name.into(),
        description: format!("{name} as the hostmetrics receiver reports it."),
        unit: unit.into(),
        data: Some(metric::Data::Sum(Sum {
            data_points,
            aggregation_temporality: AggregationTemporality::Cumulative as i32,
            is_monotonic: monotonic,
        })),
        metadata: vec![],
    }
}

fn host(h: usize) -> ResourceMetrics {
    let host = format!("node-{h}");
    let mut v = 1000.0 * h as f64;
    let mut next = || {
        v += 17.25;
        v
    };
    let mut metrics = Vec::new();
    let states = ["user", "system", "idle", "iowait", "irq", "softirq", "steal", "nice"];
    let mut cpu = Vec::new();
    for c in 0..8 {
        let c = c.to_string();
        for s in states {
            cpu.push(point(&[("cpu", &c), ("state", s)], next()));
        }
    }
    metrics.push(sum("system.cpu.time", "s", true, cpu));
    let mem = [
        "used",
        "free",
        "buffered",
        "cached",
        "slab_reclaimable",
        "slab_unreclaimable",
    ]
    .iter()
    .map(|s| point(&[("state", s)], next()))
    .collect();
    metrics.push(sum("system.memory.usage", "By", false, mem));
    let mut fs = Vec::new();
    for d in 0..10 {
        let device = format!("/dev/sda{d}");
        let mount = format!("/mnt/data{d}");
        for s in ["used", "free", "reserved"] {
            fs.push(point(
                &[
                    ("device", &device),
                    ("mode", "rw"),
                    ("mountpoint", &mount),
                    ("type", "ext4"),
                    ("state", s),
                ],
                next(),
            ));
        }
    }
    metrics.push(sum("system.filesystem.usage", "By", false, fs));
    for (name, unit) in [
        ("system.network.io", "By"),
        ("system.network.packets", "{packets}"),
        ("system.network.errors", "{errors}"),
        ("system.network.dropped", "{packets}"),
        ("system.disk.io", "By"),
        ("system.disk.operations", "{operations}"),
        ("system.disk.operation_time", "s"),
    ] {
        let mut points = Vec::new();
        for d in ["eth0", "eth1", "sda", "nvme0n1"] {
            for dir in ["receive", "transmit"] {
                points.push(point(&[("device", d), ("direction", dir)], next()));
            }
        }
        metrics.push(sum(name, unit, true, points));
    }
    let bounds = vec![
        0.0, 0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0,
    ];
    let mut hist = Vec::new();
    for r in 0..10 {
        let route = format!("/api/v1/resource{r}/{{id}}");
        for method in ["GET", "POST"] {
            for status in ["200", "500"] {
                let counts: Vec<u64> = (0..=bounds.len() as u64).map(|i| i * 3 + r).collect();
                hist.push(HistogramDataPoint {
                    attributes: attrs(&[
                        ("http.route", &route),
                        ("http.request.method", method),
                        ("http.response.status_code", status),
                    ]),
                    start_time_unix_nano: T - 3_600_000_000_000,
                    time_unix_nano: T,
                    count: counts.iter().sum(),
                    sum: Some(next()),
                    bucket_counts: counts,
                    explicit_bounds: bounds.clone(),
                    ..Default::default()
                });
            }
        }
    }
    metrics.push(Metric {
        name: "http.server.request.duration".into(),
        description: "Duration of HTTP server requests.".into(),
        unit: "s".into(),
        data: Some(metric::Data::Histogram(Histogram {
            data_points: hist,
            aggregation_temporality: AggregationTemporality::Cumulative as i32,
        })),
        metadata: vec![],
    });
    let summaries = (0..5)
        .map(|i| SummaryDataPoint {
            attributes: attrs(&[("rpc.method", &format!("Method{i}"))]),
            time_unix_nano: T,
            count: 100,
            sum: next(),
            quantile_values: [0.5, 0.9, 0.99]
                .iter()
                .map(|&quantile| ValueAtQuantile {
                    quantile,
                    value: next(),
                })
                .collect(),
            ..Default::default()
        })
        .collect();
    metrics.push(Metric {
        name: "rpc.server.duration".into(),
        description: "RPC latency.".into(),
        unit: "ms".into(),
        data: Some(metric::Data::Summary(Summary { data_points: summaries })),
        metadata: vec![],
    });
    ResourceMetrics {
        resource: Some(Resource {
            attributes: attrs(&[
                ("service.name", "node"),
                ("service.instance.id", &format!("{host}:9100")),
                ("host.name", &host),
                ("host.arch", "amd64"),
                ("os.type", "linux"),
                ("cloud.region", "eu-west-1"),
            ]),
            dropped_attributes_count: 0,
        }),
        scope_metrics: vec![ScopeMetrics {
            scope: Some(InstrumentationScope {
                name: "otelcol/hostmetricsreceiver".into(),
                version: "0.115.0".into(),
                ..Default::default()
            }),
            metrics,
            schema_url: String::new(),
        }],
        schema_url: String::new(),
    }
}

fn bench(c: &mut Criterion) {
    let body = ExportMetricsServiceRequest {
        resource_metrics: (0..2).map(host).collect(),
    }
    .encode_to_vec();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(&body).expect("gzip");
    let gzipped = gz.finish().expect("gzip");
    let limits = DecodeLimits::default();
    let decoded = decode_export_request(&body, ContentEncoding::Identity, &limits, NOW_MS).expect("decodes");
    assert!(decoded.rejected.is_empty());
    let samples = decoded.batch.sample_count() as u64;
    eprintln!(
        "otlp payload: {} bytes ({} gzipped), {} data points, {} series, {samples} samples",
        body.len(),
        gzipped.len(),
        decoded.data_points,
        decoded.batch.series_count()
    );
    for (case, input, encoding) in [
        ("identity", &body, ContentEncoding::Identity),
        ("gzip", &gzipped, ContentEncoding::Gzip),
    ] {
        let run = |b: &mut criterion::Bencher<'_>| {
            b.iter(|| decode_export_request(black_box(input), encoding, &limits, NOW_MS).expect("decodes"))
        };
        let mut g = c.benchmark_group(format!("protocols/otlp/{case}"));
        g.throughput(Throughput::Bytes(input.len() as u64));
        g.bench_function("bytes", run);
        g.throughput(Throughput::Elements(samples));
        g.bench_function("samples", run);
        g.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
