//! Ingest commits and series selection through the public storage traits.
//!
//! The fleet mimics node_exporter label shapes: `instance`, `job`, and
//! per-metric labels such as `cpu`/`mode`, `device`, `mountpoint`.
//! Run: `cargo bench -p cairn-tsdb --bench tsdb`.

use std::hint::black_box;

use cairn_model::{Labels, MatchOp, Matcher, Sample};
use cairn_storage::{Appendable, Queryable, SelectHints, collect_samples};
use cairn_tsdb::{Config, Tsdb};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

const TARGETS: usize = 100;
const STEP_MS: i64 = 15_000;

/// ~500 series per target, in node_exporter's shapes.
fn target_series(instance: usize) -> Vec<Labels> {
    let inst = format!("host-{instance:04}:9100");
    let mut out = Vec::new();
    let base = |name: &str| {
        vec![
            ("__name__".to_string(), name.to_string()),
            ("instance".into(), inst.clone()),
            ("job".into(), "node".into()),
        ]
    };
    for cpu in 0..2 {
        for mode in ["idle", "iowait", "irq", "nice", "softirq", "steal", "system", "user"] {
            let mut l = base("node_cpu_seconds_total");
            l.push(("cpu".into(), cpu.to_string()));
            l.push(("mode".into(), mode.into()));
            out.push(l);
        }
    }
    for device in ["sda", "sdb", "nvme0n1", "dm-0"] {
        for m in [
            "node_disk_read_bytes_total",
            "node_disk_written_bytes_total",
            "node_disk_io_time_seconds_total",
            "node_disk_reads_completed_total",
            "node_disk_writes_completed_total",
        ] {
            let mut l = base(m);
            l.push(("device".into(), device.into()));
            out.push(l);
        }
    }
    for mount in ["/", "/boot", "/home", "/var", "/run"] {
        for m in [
            "node_filesystem_avail_bytes",
            "node_filesystem_size_bytes",
            "node_filesystem_free_bytes",
            "node_filesystem_files",
        ] {
            let mut l = base(m);
            l.push(("mountpoint".into(), mount.into()));
            l.push(("fstype".into(), "ext4".into()));
            out.push(l);
        }
    }
    let mut i = 0;
    while out.len() < 500 {
        out.push(base(&format!("node_memory_metric_{i}_bytes")));
        i += 1;
    }
    out.into_iter().map(Labels::from_pairs).collect()
}

fn open(dir: &std::path::Path) -> Tsdb {
    let mut c = Config::new(dir);
    c.background = false;
    Tsdb::open(c).expect("open")
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

fn bench_ingest(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = open(dir.path());
    let series = target_series(0);
    let mut t = now_ms() - 3_600_000;
    let mut g = c.benchmark_group("tsdb/ingest");
    g.throughput(Throughput::Elements(series.len() as u64));
    g.bench_function("commit_500_series_x1_sample", |b| {
        b.iter(|| {
            t += STEP_MS;
            let mut app = db.appender();
            for (i, l) in series.iter().enumerate() {
                app.append(l, &[Sample::new(t, i as f64 + t as f64)]).expect("append");
            }
            black_box(app.commit().expect("commit"));
        })
    });
    g.finish();
}

/// Remote-write-sized commits (20 targets, 10,000 series) into a day whose
/// index holds 1,000 targets' series, far more than the caches: finding
/// each known series in the index is a few cache misses.
fn bench_ingest_large_index(c: &mut Criterion) {
    const FLEET: usize = 1000;
    const PER_COMMIT: usize = 20;
    let dir = tempfile::tempdir().expect("tempdir");
    let db = open(dir.path());
    let fleet: Vec<Vec<Labels>> = (0..FLEET).map(target_series).collect();
    let mut t = now_ms() - 3_600_000;
    for targets in fleet.chunks(PER_COMMIT) {
        let mut app = db.appender();
        for l in targets.iter().flatten() {
            app.append(l, &[Sample::new(t, 1.0)]).expect("append");
        }
        app.commit().expect("commit");
    }
    let mut g = c.benchmark_group("tsdb/ingest");
    g.throughput(Throughput::Elements((PER_COMMIT * fleet[0].len()) as u64));
    let mut next = 0;
    g.bench_function("commit_10k_series_of_500k", |b| {
        b.iter(|| {
            if next == 0 {
                t += STEP_MS;
            }
            let mut app = db.appender();
            for l in fleet[next..next + PER_COMMIT].iter().flatten() {
                app.append(l, &[Sample::new(t, t as f64)]).expect("append");
            }
            next = (next + PER_COMMIT) % FLEET;
            black_box(app.commit().expect("commit"));
        })
    });
    g.finish();
}

fn bench_select(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = open(dir.path());
    let start = now_ms() - 2 * 3_600_000;
    let mut app = db.appender();
    for target in 0..TARGETS {
        for (i, l) in target_series(target).iter().enumerate() {
            let samples: Vec<Sample> = (0..240)
                .map(|k| Sample::new(start + k * STEP_MS, (i as i64 * 1000 + k) as f64))
                .collect();
            app.append(l, &samples).expect("append");
        }
    }
    app.commit().expect("commit");
    db.flush().expect("flush");
    let m = |op, n: &str, v: &str| Matcher::new(op, n, v).expect("matcher");
    let cases: Vec<(&str, Vec<Matcher>)> = vec![
        (
            "metric_name",
            vec![m(MatchOp::Equal, "__name__", "node_cpu_seconds_total")],
        ),
        (
            "name_and_instance",
            vec![
                m(MatchOp::Equal, "__name__", "node_cpu_seconds_total"),
                m(MatchOp::Equal, "instance", "host-0042:9100"),
            ],
        ),
        (
            "alternation",
            vec![
                m(MatchOp::Equal, "__name__", "node_filesystem_avail_bytes"),
                m(MatchOp::RegexMatch, "mountpoint", "/|/home"),
            ],
        ),
        (
            "regex_not_equal",
            vec![
                m(MatchOp::RegexMatch, "__name__", "node_disk_.*"),
                m(MatchOp::NotEqual, "device", "dm-0"),
            ],
        ),
    ];
    let mut g = c.benchmark_group("tsdb/select");
    for (name, matchers) in &cases {
        g.bench_function(format!("{name}/labels_only"), |b| {
            let hints = SelectHints {
                labels_only: true,
                ..SelectHints::default()
            };
            b.iter(|| {
                let q = db.querier(start, start + 3_600_000).expect("querier");
                black_box(q.select(&hints, matchers).expect("select").count())
            })
        });
        g.bench_function(format!("{name}/1h_samples"), |b| {
            b.iter(|| {
                let q = db.querier(start, start + 3_600_000).expect("querier");
                let mut n = 0;
                for s in q.select(&SelectHints::default(), matchers).expect("select") {
                    n += collect_samples(s.expect("series").samples.as_mut())
                        .expect("samples")
                        .len();
                }
                black_box(n)
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench_ingest, bench_ingest_large_index, bench_select);
criterion_main!(benches);
