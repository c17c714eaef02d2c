//! Engine hot paths over in-memory storage: a node_exporter-like fleet
//! (`cpu_seconds_total` per instance × cpu × mode, a memory gauge pair), a
//! 6 h range query at 20 s steps and instant queries, as a Grafana fleet
//! dashboard and the alert rules issue them. Throughput is input samples
//! per second. Storage is a minimal in-memory [`Queryable`] over columns
//! (binary search for the range, no snapshot copies), so the figures are the
//! engine's, not `MemStorage`'s.
//!
//!     cargo bench -p cairn-promql --bench engine

use std::hint::black_box;
use std::sync::Arc;

use cairn_model::{Labels, Matcher, Sample};
use cairn_promql::Engine;
use cairn_storage::{Querier, Queryable, SelectHints, Series, SeriesSet, StorageError, VecSampleBlocks};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

/// Series sorted by labels, each as parallel timestamp and value columns.
type ColumnData = Arc<Vec<(Labels, Vec<i64>, Vec<f64>)>>;

struct Columns(ColumnData);

struct ColumnsQuerier {
    data: ColumnData,
    mint: i64,
    maxt: i64,
}

impl Queryable for Columns {
    fn querier(&self, mint: i64, maxt: i64) -> Result<Box<dyn Querier>, StorageError> {
        Ok(Box::new(ColumnsQuerier {
            data: self.0.clone(),
            mint,
            maxt,
        }))
    }
}

impl Querier for ColumnsQuerier {
    fn select(&self, hints: &SelectHints, matchers: &[Matcher]) -> Result<SeriesSet, StorageError> {
        let mut out = Vec::new();
        for (l, ts, vs) in self.data.iter() {
            if !matchers.iter().all(|m| m.matches(l.get(&m.name).unwrap_or(""))) {
                continue;
            }
            if hints.shard.as_ref().is_some_and(|sh| !sh.contains(l)) {
                continue;
            }
            let lo = ts.partition_point(|&t| t < self.mint);
            let hi = ts.partition_point(|&t| t <= self.maxt);
            if lo < hi {
                let samples = ts[lo..hi].iter().zip(&vs[lo..hi]).map(|(&t, &v)| Sample::new(t, v));
                out.push(Ok(Series::floats(l.clone(), Box::new(VecSampleBlocks::new(samples)))));
            }
        }
        Ok(Box::new(out.into_iter()))
    }

    fn label_names(&self, _: &[Matcher], _: Option<usize>) -> Result<Vec<String>, StorageError> {
        Ok(Vec::new())
    }

    fn label_values(&self, _: &str, _: &[Matcher], _: Option<usize>) -> Result<Vec<String>, StorageError> {
        Ok(Vec::new())
    }
}

const INSTANCES: usize = 50;
const CPUS: usize = 2;
const MODES: [&str; 8] = ["idle", "iowait", "irq", "nice", "softirq", "steal", "system", "user"];
const SCRAPE_MS: i64 = 15_000;
const SAMPLES: i64 = 6 * 240 + 40;

fn fleet() -> (Columns, usize) {
    let mut data: Vec<(Labels, Vec<i64>, Vec<f64>)> = Vec::new();
    let mut append =
        |l: Labels, s: Vec<Sample>| data.push((l, s.iter().map(|x| x.t).collect(), s.iter().map(|x| x.v).collect()));
    let mut x: u64 = 1;
    let mut rnd = move || {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (x >> 33) as f64 / (1u64 << 31) as f64
    };
    let mut series = 0;
    for i in 0..INSTANCES {
        let inst = format!("host-{i:05}:9100");
        let phase = i as i64 * 97;
        let ts = |k: i64| k * SCRAPE_MS + phase;
        for cpu in 0..CPUS {
            for mode in MODES {
                let labels = Labels::from_pairs([
                    ("__name__", "node_cpu_seconds_total"),
                    ("cpu", &cpu.to_string()),
                    ("instance", &inst),
                    ("job", "node"),
                    ("mode", mode),
                ]);
                let mut v = 1000.0 * rnd();
                let samples: Vec<Sample> = (0..SAMPLES)
                    .map(|k| {
                        v += (rnd() * 1500.0).round() / 100.0;
                        Sample::new(ts(k), v)
                    })
                    .collect();
                append(labels, samples);
                series += 1;
            }
        }
        for (name, base) in [
            ("node_memory_MemTotal_bytes", 8e9),
            ("node_memory_MemAvailable_bytes", 4e9),
        ] {
            let labels = Labels::from_pairs([("__name__", name), ("instance", &inst), ("job", "node")]);
            let samples: Vec<Sample> = (0..SAMPLES)
                .map(|k| Sample::new(ts(k), (base * (0.9 + 0.1 * rnd())).round()))
                .collect();
            append(labels, samples);
            series += 1;
        }
    }
    data.sort_by(|a, b| a.0.cmp(&b.0));
    (Columns(Arc::new(data)), series)
}

fn bench(c: &mut Criterion) {
    let (s, series) = fleet();
    let engine = Engine::default();
    let end = SAMPLES * SCRAPE_MS;
    let start = end - 6 * 3_600_000;
    let cpu_series = (INSTANCES * CPUS * MODES.len()) as u64;
    let window_samples = (6 * 240) as u64;
    let mut g = c.benchmark_group("promql/range_6h");
    let cases: [(&str, &str, u64); 4] = [
        (
            "sum_by_rate",
            r#"sum by (mode) (rate(node_cpu_seconds_total{job="node"}[1m]))"#,
            cpu_series,
        ),
        (
            "avg_by_rate_idle",
            r#"100 - avg by (instance) (rate(node_cpu_seconds_total{job="node",mode="idle"}[1m])) * 100"#,
            cpu_series / MODES.len() as u64,
        ),
        (
            "binary_gauges",
            r#"(1 - node_memory_MemAvailable_bytes{job="node"} / node_memory_MemTotal_bytes{job="node"}) * 100"#,
            2 * INSTANCES as u64,
        ),
        (
            "topk_irate",
            r#"topk(10, irate(node_cpu_seconds_total{job="node"}[1m]))"#,
            cpu_series,
        ),
    ];
    for (name, q, n) in cases {
        g.throughput(Throughput::Elements(n * window_samples));
        g.bench_function(name, |b| {
            b.iter(|| black_box(engine.range(&s, q, start, end, 20_000).unwrap()))
        });
    }
    g.finish();
    let mut g = c.benchmark_group("promql/instant");
    g.throughput(Throughput::Elements(series as u64));
    for (name, q) in [
        (
            "alert_avg_without",
            r#"1 - (avg without (cpu) (rate(node_cpu_seconds_total{mode="idle"}[5m]))) > .80"#,
        ),
        (
            "alert_ratio",
            "(node_memory_MemAvailable_bytes / node_memory_MemTotal_bytes < .10)",
        ),
    ] {
        g.bench_function(name, |b| {
            b.iter(|| black_box(engine.instant(&s, q, end - 60_000).unwrap()))
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
