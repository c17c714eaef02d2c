//! Formatting sample values as Prometheus writes them (Go's shortest digits),
//! next to Rust's own shortest formatting, on values shaped like query
//! results: rates and ratios with full 17-digit mantissas, and round gauges.
//!
//! Run: `cargo bench -p cairn-model --bench go_float`.

use std::hint::black_box;

use cairn_model::go_float::shortest_plain;
use criterion::{Criterion, Throughput};

fn values() -> Vec<f64> {
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    (0..4096)
        .map(|i| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            match i % 4 {
                // A per-second rate over a 1m window of a jittered counter.
                0 => (x % 1_000_000) as f64 / 60.003,
                // A ratio of two gauges.
                1 => (x % 1000) as f64 / ((x >> 20) % 977 + 1) as f64,
                // A byte count.
                2 => (x % 100_000_000_000) as f64,
                // A binary fraction, where Go's and Rust's tie rules differ.
                _ => (x % (1 << 30)) as f64 / 16384.0,
            }
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    let vs = values();
    let mut g = c.benchmark_group("format_value");
    g.throughput(Throughput::Elements(vs.len() as u64));
    g.bench_function("go_float::shortest_plain", |b| {
        b.iter(|| vs.iter().map(|&v| shortest_plain(black_box(v)).len()).sum::<usize>())
    });
    g.bench_function("rust format!(\"{v}\")", |b| {
        b.iter(|| vs.iter().map(|&v| format!("{}", black_box(v)).len()).sum::<usize>())
    });
    g.finish();
}

criterion::criterion_group!(benches, bench);
criterion::criterion_main!(benches);
