//! Throughput of the codecs on a real node_exporter trace, and (printed once) the bytes
//! per sample they achieve at several block sizes, next to the `pco` crate's.
//!
//! Run: `cargo bench -p cairn-codec --bench codec`. Set `CAIRN_BENCHDATA` to the folder
//! holding `node-exporter-trace.prom.gz` if it is not `/work/shared/benchdata`.

use std::collections::HashMap;
use std::hint::black_box;
use std::io::Read;
use std::path::PathBuf;

use cairn_codec::{decode_timestamps, decode_values, encode_timestamps, encode_values};
use criterion::{BenchmarkId, Criterion, Throughput};

/// Samples per series after extending the 600-scrape trace: two 1920-sample blocks.
const SERIES_LEN: usize = 3840;
const BLOCK_SIZES: [usize; 3] = [120, 480, 1920];
const SCRAPE_INTERVAL_MS: i64 = 15_000;
const JITTER_MS: i64 = 5;

struct Series {
    values: Vec<f64>,
    /// Counters and the `_sum`/`_count`/`_bucket` series of summaries and histograms.
    monotonic: bool,
}

/// One scrape target: its timestamps and every series' values, `SERIES_LEN` each.
struct Dataset {
    timestamps: Vec<i64>,
    series: Vec<Vec<f64>>,
}

fn trace_path() -> PathBuf {
    let dir = std::env::var_os("CAIRN_BENCHDATA").unwrap_or_else(|| "/work/shared/benchdata".into());
    PathBuf::from(dir).join("node-exporter-trace.prom.gz")
}

/// Parses the trace into the series present in every scrape, in first-seen order.
fn parse_trace(text: &str) -> Vec<Series> {
    let mut family_types: HashMap<&str, &str> = HashMap::new();
    let mut index: HashMap<&str, usize> = HashMap::new();
    let mut series: Vec<(&str, Vec<f64>)> = Vec::new();
    let mut scrapes = 0;
    for line in text.lines() {
        if line.starts_with("# PEERBENCH_SCRAPE") {
            scrapes += 1;
        } else if let Some(decl) = line.strip_prefix("# TYPE ") {
            if let Some((family, kind)) = decl.split_once(' ') {
                family_types.insert(family, kind);
            }
        } else if !line.starts_with('#') && !line.is_empty() {
            let (key, value) = line.rsplit_once(' ').expect("sample line has a value");
            let value: f64 = value.trim_start_matches('+').parse().expect("sample value parses");
            let i = *index.entry(key).or_insert_with(|| {
                series.push((key, Vec::new()));
                series.len() - 1
            });
            series[i].1.push(value);
        }
    }
    series
        .into_iter()
        .filter(|(_, values)| values.len() == scrapes)
        .map(|(key, values)| {
            let name = key.split('{').next().unwrap_or(key);
            let monotonic = family_types.get(name) == Some(&"counter")
                || ["_sum", "_count", "_bucket"].iter().any(|suffix| {
                    name.strip_suffix(suffix)
                        .and_then(|family| family_types.get(family))
                        .is_some_and(|kind| *kind == "summary" || *kind == "histogram")
                });
            Series { values, monotonic }
        })
        .collect()
}

/// Plays the trace forward, backward, forward… up to `len` samples, as the trace's
/// README suggests: gauges retrace their values, counters replay their increments in
/// reverse so they keep growing, rounded to the decimals the counter shows.
fn extend(series: &Series, len: usize) -> Vec<f64> {
    let values = &series.values;
    let n = values.len();
    let decimals = values
        .iter()
        .map(|v| v.to_string().split_once('.').map_or(0, |(_, frac)| frac.len()))
        .max()
        .unwrap_or(0);
    let scale = 10f64.powi(decimals as i32);
    let ping_pong = (0..n).chain((1..n - 1).rev()).cycle();
    let mut out: Vec<f64> = Vec::with_capacity(len);
    let mut prev_index = 0;
    for (step, i) in ping_pong.take(len).enumerate() {
        let v = if step < n || !series.monotonic {
            values[i]
        } else {
            let increment = (values[i.max(prev_index)] - values[i.min(prev_index)]).abs();
            let next = out[step - 1] + increment;
            if (next * scale).abs() < 9e15 {
                (next * scale).round() / scale
            } else {
                next
            }
        };
        out.push(v);
        prev_index = i;
    }
    out
}

/// A 15 s grid with ±5 ms of jitter from a fixed splitmix64 sequence.
fn jittered_grid(len: usize) -> Vec<i64> {
    let mut state = 0x5eed_u64;
    (0..len as i64)
        .map(|i| {
            state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^= z >> 31;
            let jitter = (z % (2 * JITTER_MS as u64 + 1)) as i64 - JITTER_MS;
            1_795_327_337_516 + i * SCRAPE_INTERVAL_MS + jitter
        })
        .collect()
}

fn load() -> Dataset {
    let path = trace_path();
    let file = std::fs::File::open(&path).unwrap_or_else(|e| panic!("opening {}: {e}", path.display()));
    let mut text = String::new();
    flate2::read::GzDecoder::new(file)
        .read_to_string(&mut text)
        .expect("trace is gzip'd text");
    let series = parse_trace(&text);
    Dataset {
        timestamps: jittered_grid(SERIES_LEN),
        series: series.iter().map(|s| extend(s, SERIES_LEN)).collect(),
    }
}

fn pco_size<T: pco::data_types::Number>(block: &[T]) -> usize {
    pco::standalone::simple_compress(block, &pco::ChunkConfig::default())
        .expect("pco compresses")
        .len()
}

/// Prints bytes per sample over the whole dataset for each block size, and how often
/// each block tag was chosen.
fn print_bytes_per_sample(data: &Dataset) {
    eprintln!(
        "bytes/sample over {} series x {} samples (timestamps: one 15 s grid, ±{} ms jitter)",
        data.series.len(),
        SERIES_LEN,
        JITTER_MS
    );
    eprintln!("| block | timestamps | values | pco timestamps | pco values |");
    eprintln!("|---:|---:|---:|---:|---:|");
    for block in BLOCK_SIZES {
        let (mut ts_bytes, mut pco_ts_bytes) = (0, 0);
        for chunk in data.timestamps.chunks(block) {
            let mut buf = Vec::new();
            encode_timestamps(&mut buf, chunk);
            ts_bytes += buf.len();
            pco_ts_bytes += pco_size(chunk);
        }
        let (mut value_bytes, mut pco_value_bytes) = (0, 0);
        let mut tags: HashMap<u8, usize> = HashMap::new();
        for values in &data.series {
            for chunk in values.chunks(block) {
                let mut buf = Vec::new();
                encode_values(&mut buf, chunk);
                value_bytes += buf.len();
                *tags.entry(buf[0]).or_default() += 1;
                pco_value_bytes += pco_size(chunk);
            }
        }
        let ts_samples = data.timestamps.len() as f64;
        let value_samples = (data.series.len() * SERIES_LEN) as f64;
        eprintln!(
            "| {block} | {:.3} | {:.3} | {:.3} | {:.3} |",
            ts_bytes as f64 / ts_samples,
            value_bytes as f64 / value_samples,
            pco_ts_bytes as f64 / ts_samples,
            pco_value_bytes as f64 / value_samples,
        );
        let mut tags: Vec<_> = tags.into_iter().collect();
        tags.sort();
        let tags: Vec<String> = tags.iter().map(|(tag, n)| format!("{tag:#04x}:{n}")).collect();
        eprintln!("  value block tags at {block}: {}", tags.join(" "));
    }
}

fn bench_timestamps(c: &mut Criterion, data: &Dataset) {
    let mut group = c.benchmark_group("codec/timestamps/node_exporter");
    // 4: the blocks of a freshly sealed in-memory part (a few samples per series).
    for block in [4, 120, 480, 1920] {
        let blocks: Vec<&[i64]> = data.timestamps.chunks(block).collect();
        let encoded: Vec<Vec<u8>> = blocks
            .iter()
            .map(|b| {
                let mut buf = Vec::new();
                encode_timestamps(&mut buf, b);
                buf
            })
            .collect();
        group.throughput(Throughput::Elements(data.timestamps.len() as u64));
        group.bench_function(BenchmarkId::new("encode", block), |b| {
            let mut buf = Vec::new();
            b.iter(|| {
                for ts in &blocks {
                    buf.clear();
                    encode_timestamps(&mut buf, black_box(ts));
                }
                buf.len()
            })
        });
        group.bench_function(BenchmarkId::new("decode", block), |b| {
            let mut out = Vec::new();
            b.iter(|| {
                for bytes in &encoded {
                    out.clear();
                    decode_timestamps(black_box(bytes), &mut out).expect("decodes");
                }
                out.len()
            })
        });
    }
    group.finish();
}

fn bench_values(c: &mut Criterion, data: &Dataset) {
    let mut group = c.benchmark_group("codec/values/node_exporter");
    group.sample_size(10);
    // 4: the blocks of a freshly sealed in-memory part (a few samples per series).
    for block in [4, 120, 480, 1920] {
        // The first 1920 samples of every series.
        let blocks: Vec<&[f64]> = data
            .series
            .iter()
            .flat_map(|values| values[..1920].chunks(block))
            .collect();
        let samples: usize = blocks.iter().map(|b| b.len()).sum();
        let encoded: Vec<Vec<u8>> = blocks
            .iter()
            .map(|b| {
                let mut buf = Vec::new();
                encode_values(&mut buf, b);
                buf
            })
            .collect();
        group.throughput(Throughput::Elements(samples as u64));
        group.bench_function(BenchmarkId::new("encode", block), |b| {
            let mut buf = Vec::new();
            b.iter(|| {
                for vs in &blocks {
                    buf.clear();
                    encode_values(&mut buf, black_box(vs));
                }
                buf.len()
            })
        });
        group.bench_function(BenchmarkId::new("decode", block), |b| {
            let mut out = Vec::new();
            b.iter(|| {
                for bytes in &encoded {
                    out.clear();
                    decode_values(black_box(bytes), &mut out).expect("decodes");
                }
                out.len()
            })
        });
    }
    group.finish();
}

fn main() {
    let data = load();
    print_bytes_per_sample(&data);
    let mut c = Criterion::default().configure_from_args();
    bench_timestamps(&mut c, &data);
    bench_values(&mut c, &data);
    c.final_summary();
}
