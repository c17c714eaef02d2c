//! The import parsers on realistic payloads derived from a real
//! node_exporter trace (`/work/shared/benchdata/node-exporter-trace.prom.gz`,
//! or `CAIRN_BENCH_TRACE`): the first 20 scrapes (507 series each), as
//!
//! - Prometheus text: the exposition pages as recorded, each with its
//!   scrape's timestamp appended to every sample (`# HELP`/`# TYPE` kept);
//! - JSON lines: one line per series with its 20 samples (what
//!   `/api/v1/export` and vmctl write);
//! - CSV: one row per sample, `job,name,instance,time_ms,value`;
//! - remote write 2.0: one request per scrape (symbols table, metadata),
//!   snappy-compressed;
//! - InfluxDB line protocol as Telegraf's `prometheus` input writes it
//!   (`prometheus,<labels> <metric>=<value> <ns>`), Graphite plaintext
//!   (`name;label=value value seconds`) and OpenTSDB telnet
//!   (`put name seconds value label=value`) and `/api/put` JSON (one array
//!   of data points), one sample per line or point, finite
//!   values only (none of the three has NaN).
//!
//! Each is reported as body bytes/s and samples/s
//! (`protocols/import/<format>/{bytes,samples}`).

use std::collections::BTreeMap;
use std::hint::black_box;
use std::io::Read;

use cairn_model::{Labels, Sample, is_stale_nan};
use cairn_protocols::DecodeLimits;
use cairn_protocols::csv::{decode_csv, parse_format};
use cairn_protocols::graphite::decode_graphite;
use cairn_protocols::influx::{InfluxOptions, decode_influx};
use cairn_protocols::json_lines::decode_json_lines;
use cairn_protocols::opentsdb::{decode_put, decode_telnet};
use cairn_protocols::prom_text::{PromTextOptions, decode_prom_text};
use cairn_protocols::remote_write::{ContentEncoding, decode_write_request_v2, proto_v2};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use prost::Message;

const SCRAPES: usize = 20;

fn trace_scrapes() -> Vec<(i64, String)> {
    let path = std::env::var("CAIRN_BENCH_TRACE")
        .unwrap_or_else(|_| "/work/shared/benchdata/node-exporter-trace.prom.gz".into());
    let file = std::fs::File::open(&path).unwrap_or_else(|e| panic!("cannot open trace {path}: {e}"));
    let mut text = String::new();
    flate2::read::GzDecoder::new(file)
        .take(8 << 20)
        .read_to_string(&mut text)
        .ok();
    let mut scrapes: Vec<(i64, String)> = Vec::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# PEERBENCH_SCRAPE ts_ms=") {
            if scrapes.len() == SCRAPES {
                break;
            }
            let t = rest.split(' ').next().and_then(|t| t.parse().ok()).expect("ts_ms");
            scrapes.push((t, String::new()));
        } else if let Some((t, page)) = scrapes.last_mut() {
            if line.starts_with('#') || line.is_empty() {
                page.push_str(line);
            } else {
                page.push_str(&format!("{line} {t}"));
            }
            page.push('\n');
        }
    }
    scrapes
}

struct Payloads {
    text: Vec<u8>,
    json: Vec<u8>,
    csv: Vec<u8>,
    rw2: Vec<Vec<u8>>,
    samples: u64,
    influx: Vec<u8>,
    graphite: Vec<u8>,
    opentsdb: Vec<u8>,
    opentsdb_json: Vec<u8>,
    finite_samples: u64,
}

fn payloads() -> Payloads {
    let scrapes = trace_scrapes();
    let text: String = scrapes.iter().map(|(_, p)| p.as_str()).collect();
    let limits = DecodeLimits::default();
    let parsed = decode_prom_text(text.as_bytes(), &PromTextOptions::default(), &limits);
    assert_eq!(parsed.bad_lines, 0, "{:?}", parsed.first_error);
    let samples = parsed.batch.sample_count() as u64;

    let mut by_series: BTreeMap<Labels, Vec<Sample>> = BTreeMap::new();
    for s in parsed.batch.to_series() {
        by_series.entry(s.labels.clone()).or_default().extend(&s.samples);
    }
    let mut json = Vec::new();
    let mut csv = Vec::new();
    let (mut influx, mut graphite, mut opentsdb) = (String::new(), String::new(), String::new());
    let mut finite_samples = 0;
    let mut points = Vec::new();
    for s in &parsed.batch.to_series() {
        let name = s.labels.metric_name().unwrap_or_default();
        let others: Vec<_> = s.labels.iter().filter(|l| l.name != "__name__").collect();
        for x in s.samples.iter().filter(|x| x.v.is_finite()) {
            finite_samples += 1;
            influx.push_str("prometheus,instance=host-1:9100,job=node");
            graphite.push_str(name);
            opentsdb.push_str(&format!(
                "put {name} {} {:?} instance=host-1:9100 job=node",
                x.t / 1000,
                x.v
            ));
            for l in &others {
                let esc = |v: &str| v.replace(',', "\\,").replace('=', "\\=").replace(' ', "\\ ");
                influx.push_str(&format!(",{}={}", esc(&l.name), esc(&l.value)));
                // Neither Graphite nor OpenTSDB can carry spaces in a tag.
                let value = l.value.replace([' ', ';'], "_");
                graphite.push_str(&format!(";{}={value}", l.name));
                opentsdb.push_str(&format!(" {}={value}", l.name));
            }
            influx.push_str(&format!(" {name}={:?} {}000000\n", x.v, x.t));
            let mut tags = serde_json::Map::new();
            tags.insert("instance".into(), "host-1:9100".into());
            for l in &others {
                tags.insert(l.name.to_string(), l.value.to_string().into());
            }
            points.push(serde_json::json!({ "metric": name, "timestamp": x.t, "value": x.v, "tags": tags }));
            graphite.push_str(&format!(" {:?} {}\n", x.v, x.t / 1000));
            opentsdb.push('\n');
        }
    }
    for (labels, samples) in &by_series {
        let metric: serde_json::Map<String, serde_json::Value> = labels
            .iter()
            .map(|l| (l.name.to_string(), serde_json::Value::String(l.value.to_string())))
            .collect();
        let values: Vec<String> = samples.iter().map(|s| json_value(s.v)).collect();
        let ts: Vec<String> = samples.iter().map(|s| s.t.to_string()).collect();
        json.extend_from_slice(
            format!(
                "{{\"metric\":{},\"values\":[{}],\"timestamps\":[{}]}}\n",
                serde_json::Value::Object(metric),
                values.join(","),
                ts.join(",")
            )
            .as_bytes(),
        );
        for s in samples {
            csv.extend_from_slice(
                format!(
                    "node,{},host-1:9100,{},{}\n",
                    labels.metric_name().unwrap_or_default(),
                    s.t,
                    s.v
                )
                .as_bytes(),
            );
        }
    }

    // One remote write 2.0 request per scrape, as a sender would batch them.
    let rw2 = scrapes
        .iter()
        .map(|(_, page)| {
            let one = decode_prom_text(page.as_bytes(), &PromTextOptions::default(), &limits);
            let mut symbols: Vec<String> = vec![String::new()];
            let mut index: BTreeMap<String, u32> = BTreeMap::new();
            let mut sym = |s: &str| -> u32 {
                *index.entry(s.to_string()).or_insert_with(|| {
                    symbols.push(s.to_string());
                    (symbols.len() - 1) as u32
                })
            };
            let timeseries = one
                .batch
                .to_series()
                .iter()
                .map(|s| proto_v2::TimeSeries {
                    labels_refs: s.labels.iter().flat_map(|l| [sym(&l.name), sym(&l.value)]).collect(),
                    samples: s
                        .samples
                        .iter()
                        .map(|x| proto_v2::Sample {
                            value: x.v,
                            timestamp: x.t,
                            start_timestamp: 0,
                        })
                        .collect(),
                    metadata: Some(proto_v2::Metadata {
                        r#type: 2,
                        help_ref: 0,
                        unit_ref: 0,
                    }),
                    ..Default::default()
                })
                .collect();
            let req = proto_v2::Request { symbols, timeseries };
            snap::raw::Encoder::new()
                .compress_vec(&req.encode_to_vec())
                .expect("snappy")
        })
        .collect();
    Payloads {
        text: text.into_bytes(),
        json,
        csv,
        rw2,
        samples,
        influx: influx.into_bytes(),
        graphite: graphite.into_bytes(),
        opentsdb: opentsdb.into_bytes(),
        opentsdb_json: serde_json::Value::Array(points).to_string().into_bytes(),
        finite_samples,
    }
}

fn json_value(v: f64) -> String {
    if is_stale_nan(v) {
        "null".into()
    } else if v.is_nan() {
        "\"NaN\"".into()
    } else if v.is_infinite() {
        if v > 0.0 { "\"+Inf\"".into() } else { "\"-Inf\"".into() }
    } else {
        format!("{v}")
    }
}

fn bench(c: &mut Criterion) {
    let p = payloads();
    let limits = DecodeLimits::default();
    let opts = PromTextOptions::default();
    let columns =
        parse_format("1:label:job,2:label:name,3:label:instance,4:time:unix_ms,5:metric:value").expect("format");
    let rw2_bytes: u64 = p.rw2.iter().map(|b| b.len() as u64).sum();
    type Run<'a> = Box<dyn Fn() -> usize + 'a>;
    let influx_opts = InfluxOptions::default();
    let cases: Vec<(&str, u64, u64, Run<'_>)> = vec![
        (
            "prom_text",
            p.text.len() as u64,
            p.samples,
            Box::new(|| {
                decode_prom_text(black_box(&p.text), &opts, &limits)
                    .batch
                    .sample_count()
            }),
        ),
        (
            "json_lines",
            p.json.len() as u64,
            p.samples,
            Box::new(|| decode_json_lines(black_box(&p.json), &[], &limits).batch.sample_count()),
        ),
        (
            "csv",
            p.csv.len() as u64,
            p.samples,
            Box::new(|| {
                decode_csv(black_box(&p.csv), &columns, &[], 0, &limits)
                    .batch
                    .sample_count()
            }),
        ),
        (
            "remote_write_v2_snappy",
            rw2_bytes,
            p.samples,
            Box::new(|| {
                p.rw2
                    .iter()
                    .map(|b| {
                        decode_write_request_v2(black_box(b), ContentEncoding::Snappy, &limits)
                            .expect("decodes")
                            .sample_count()
                    })
                    .sum()
            }),
        ),
        (
            "influx",
            p.influx.len() as u64,
            p.finite_samples,
            Box::new(|| {
                decode_influx(black_box(&p.influx), &influx_opts, &limits)
                    .batch
                    .sample_count()
            }),
        ),
        (
            "graphite",
            p.graphite.len() as u64,
            p.finite_samples,
            Box::new(|| decode_graphite(black_box(&p.graphite), 0, &limits).batch.sample_count()),
        ),
        (
            "opentsdb_telnet",
            p.opentsdb.len() as u64,
            p.finite_samples,
            Box::new(|| {
                decode_telnet(black_box(&p.opentsdb), &limits)
                    .import
                    .batch
                    .sample_count()
            }),
        ),
        (
            "opentsdb_json",
            p.opentsdb_json.len() as u64,
            p.finite_samples,
            Box::new(|| decode_put(black_box(&p.opentsdb_json), &limits).success),
        ),
    ];
    for (name, bytes, samples, run) in &cases {
        assert_eq!(run() as u64, *samples, "{name} decodes every sample");
        let mut group = c.benchmark_group(format!("protocols/import/{name}"));
        group.throughput(Throughput::Bytes(*bytes));
        group.bench_function("bytes", |b| b.iter(|| black_box(run())));
        group.throughput(Throughput::Elements(*samples));
        group.bench_function("samples", |b| b.iter(|| black_box(run())));
        group.finish();
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20);
    targets = bench
}
criterion_main!(benches);
