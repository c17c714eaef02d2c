//! Decoding a realistic remote write request: 500 node_exporter series with
//! 1..=10 samples each (2,750 samples), as one Prometheus shard sends it.
//!
//! Label sets and values come from the recorded node_exporter trace in
//! `shared/benchdata` (override the folder with `CAIRN_BENCHDATA`); without
//! it, similar series are synthesised.

use std::hint::black_box;
use std::io::{BufRead, BufReader};
use std::path::PathBuf;

use cairn_model::{Labels, Sample};
use cairn_protocols::remote_write::{ContentEncoding, decode_write_request, encode_write_request_with};
use cairn_protocols::{DecodeLimits, SeriesSamples};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

const SERIES: usize = 500;
const MAX_SAMPLES: usize = 10;
const T0: i64 = 1_700_000_000_000;

fn trace_path() -> Option<PathBuf> {
    let dirs = [
        std::env::var_os("CAIRN_BENCHDATA").map(PathBuf::from),
        Some(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/benchdata")),
        Some(PathBuf::from("/work/shared/benchdata")),
    ];
    dirs.into_iter()
        .flatten()
        .map(|d| d.join("node-exporter-trace.prom.gz"))
        .find(|p| p.exists())
}

/// One exposition sample: label pairs (with `__name__`) and value.
type TraceSample = (Vec<(String, String)>, f64);

/// The first `n` scrapes of the trace.
fn load_scrapes(n: usize) -> Option<Vec<Vec<TraceSample>>> {
    let file = std::fs::File::open(trace_path()?).ok()?;
    let reader = BufReader::new(flate2::read::GzDecoder::new(file));
    let mut scrapes: Vec<Vec<_>> = Vec::new();
    for line in reader.lines() {
        let line = line.ok()?;
        if line.starts_with("# PEERBENCH_SCRAPE") {
            if scrapes.len() == n {
                break;
            }
            scrapes.push(Vec::new());
        } else if !line.starts_with('#')
            && let (Some(scrape), Some(sample)) = (scrapes.last_mut(), parse_sample(&line))
        {
            scrape.push(sample);
        }
    }
    (scrapes.len() == n).then_some(scrapes)
}

/// Parses one exposition-format sample line.
fn parse_sample(line: &str) -> Option<TraceSample> {
    let name_end = line.find(['{', ' '])?;
    let (name, mut rest) = line.split_at(name_end);
    let mut labels = vec![("__name__".to_string(), name.to_string())];
    if let Some(r) = rest.strip_prefix('{') {
        rest = r;
        loop {
            rest = rest.trim_start_matches(',');
            if let Some(r) = rest.strip_prefix('}') {
                rest = r;
                break;
            }
            let eq = rest.find('=')?;
            let key = rest[..eq].to_string();
            let mut chars = rest[eq + 1..].strip_prefix('"')?.char_indices();
            let mut value = String::new();
            let end = loop {
                match chars.next()? {
                    (i, '"') => break i,
                    (_, '\\') => match chars.next()?.1 {
                        'n' => value.push('\n'),
                        c => value.push(c),
                    },
                    (_, c) => value.push(c),
                }
            };
            rest = &rest[eq + 2 + end + 1..];
            labels.push((key, value));
        }
    }
    let v = rest.split_whitespace().next()?;
    let v = match v {
        "+Inf" => f64::INFINITY,
        "-Inf" => f64::NEG_INFINITY,
        _ => v.parse().ok()?,
    };
    Some((labels, v))
}

fn request() -> (Vec<SeriesSamples>, &'static str) {
    let extra = [("instance", "host-0042:9100"), ("job", "node")];
    if let Some(scrapes) = load_scrapes(MAX_SAMPLES) {
        let series = (0..SERIES)
            .filter_map(|i| {
                let (labels, _) = scrapes[0].get(i)?;
                let mut pairs = labels.clone();
                pairs.extend(extra.iter().map(|(n, v)| (n.to_string(), v.to_string())));
                let samples = (0..=i % MAX_SAMPLES)
                    .map(|k| {
                        let v = scrapes[k].get(i).map_or(0.0, |s| s.1);
                        Sample::new(T0 + k as i64 * 15_000, v)
                    })
                    .collect();
                Some(SeriesSamples::new(Labels::from_pairs(pairs), samples))
            })
            .collect();
        return (series, "node-exporter trace");
    }
    let modes = ["idle", "iowait", "irq", "nice", "softirq", "steal", "system", "user"];
    let series = (0..SERIES)
        .map(|i| {
            let mut pairs = vec![
                (
                    "__name__".to_string(),
                    format!("node_synthetic_metric_{}_total", i / 16),
                ),
                ("cpu".to_string(), (i % 2).to_string()),
                ("mode".to_string(), modes[i % modes.len()].to_string()),
            ];
            pairs.extend(extra.iter().map(|(n, v)| (n.to_string(), v.to_string())));
            let samples = (0..=i % MAX_SAMPLES)
                .map(|k| Sample::new(T0 + k as i64 * 15_000, (i * 1000 + k) as f64 * 0.01))
                .collect();
            SeriesSamples::new(Labels::from_pairs(pairs), samples)
        })
        .collect();
    (series, "synthetic")
}

fn bench(c: &mut Criterion) {
    let (series, source) = request();
    let samples: usize = series.iter().map(|s| s.samples.len()).sum();
    let limits = DecodeLimits::default();
    let encodings = [
        ContentEncoding::Snappy,
        ContentEncoding::Zstd,
        ContentEncoding::Identity,
    ];
    let bodies: Vec<_> = encodings
        .iter()
        .map(|&enc| {
            let mut body = Vec::new();
            encode_write_request_with(&series, &[], enc, &mut body).unwrap();
            body
        })
        .collect();
    eprintln!(
        "request ({source}): {} series, {samples} samples; bytes: snappy {}, zstd {}, identity {}",
        series.len(),
        bodies[0].len(),
        bodies[1].len(),
        bodies[2].len()
    );

    let mut group = c.benchmark_group("protocols/remote_write/decode");
    group.throughput(Throughput::Elements(samples as u64));
    for (enc, body) in encodings.iter().zip(&bodies) {
        group.bench_function(enc.as_str(), |b| {
            b.iter(|| decode_write_request(black_box(body), *enc, &limits).unwrap())
        });
    }
    group.finish();

    let mut group = c.benchmark_group("protocols/remote_write/encode");
    group.throughput(Throughput::Elements(samples as u64));
    group.bench_function("snappy", |b| {
        let mut dst = Vec::new();
        b.iter(|| {
            dst.clear();
            encode_write_request_with(black_box(&series), &[], ContentEncoding::Snappy, &mut dst).unwrap();
            dst.len()
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
