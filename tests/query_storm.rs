//! A query storm against the real binary while a fleet keeps writing:
//! queries past `--query.max-concurrency` and the queue are refused fast
//! with a retryable 503, the admitted ones answer or fail cleanly with the
//! memory budget's error, every write is acknowledged promptly, and the
//! process stays alive within a memory bound.
//!
//! `a_query_storm_is_refused_fast_while_writes_go_on` is the CI-sized one.
//! `query_storm_benchmark` (ignored) backfills a bigger fleet over a day
//! and prints the figures docs/benchmarks.md quotes:
//! `cargo test --release --test e2e query_storm:: -- --ignored --nocapture`.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use crate::common::{Client, Server, http_client, now_ms, series};
use cairn_protocols::SeriesSamples;

/// One fleet: `instances` hosts of `cpus` counters each.
#[derive(Clone, Copy)]
struct Fleet {
    instances: usize,
    cpus: usize,
}

impl Fleet {
    fn series(self) -> usize {
        self.instances * self.cpus
    }

    /// Every series' samples at `ts` (a counter rising by 1 per second).
    fn batch(self, ts: &[i64]) -> Vec<SeriesSamples> {
        let mut out = Vec::with_capacity(self.series());
        for i in 0..self.instances {
            let instance = format!("host-{i:04}");
            for c in 0..self.cpus {
                let cpu = c.to_string();
                let samples: Vec<(i64, f64)> = ts.iter().map(|&t| (t, (t / 1000) as f64 + c as f64)).collect();
                out.push(series(
                    &[
                        ("__name__", "storm_cpu_seconds_total"),
                        ("instance", &instance),
                        ("cpu", &cpu),
                        ("job", "node"),
                    ],
                    &samples,
                ));
            }
        }
        out
    }

    /// Writes `span_ms` of history ending at `end`, one sample per
    /// `interval_ms`, in batches of `per_batch` timestamps.
    fn backfill(self, client: &Client, end: i64, span_ms: i64, interval_ms: i64, per_batch: usize) {
        let ts: Vec<i64> = (0..span_ms / interval_ms)
            .map(|k| end - span_ms + k * interval_ms)
            .collect();
        for chunk in ts.chunks(per_batch) {
            client.write(&self.batch(chunk));
        }
    }
}

/// What the writer saw: each write's status and latency.
#[derive(Default)]
struct Writes {
    statuses: Vec<u16>,
    latencies: Vec<Duration>,
    samples: usize,
}

/// Writes one sample per series of the fleet every `every` (or back to back
/// when zero) until `stop`, timestamps rising from `from`.
fn write_until(base: String, fleet: Fleet, every: Duration, stop: Arc<AtomicBool>, from: i64) -> Writes {
    let client = Client::new(base);
    let mut w = Writes::default();
    let mut t = from;
    while !stop.load(Ordering::Relaxed) {
        let started = Instant::now();
        t = t.max(now_ms()).max(t + 1);
        let r = client.try_write(&fleet.batch(&[t]));
        w.latencies.push(started.elapsed());
        w.statuses.push(r.map_or(0, |r| r.status));
        w.samples += fleet.series();
        if let Some(rest) = every.checked_sub(started.elapsed()) {
            thread::sleep(rest);
        }
    }
    w
}

/// One storm query's answer.
struct Answer {
    status: u16,
    error_type: String,
    error: String,
    retry_after: Option<String>,
    took: Duration,
}

/// Fires `n` range queries at once, each over the last `range_ms`, every
/// other one returning every series at `step_s` (heavy on memory), the rest
/// an aggregation of them at 4 × `step_s` (heavy on CPU).
fn storm(base: &str, n: usize, range_ms: i64, step_s: u32) -> Vec<Answer> {
    let end = now_ms();
    let start = end - range_ms;
    let go = Arc::new(std::sync::Barrier::new(n));
    let handles: Vec<_> = (0..n)
        .map(|i| {
            let (base, go) = (base.to_string(), Arc::clone(&go));
            thread::spawn(move || {
                let (query, step) = if i % 2 == 0 {
                    ("rate(storm_cpu_seconds_total[5m])", step_s.to_string())
                } else {
                    (
                        "sum by (instance) (rate(storm_cpu_seconds_total[5m]))",
                        (4 * step_s).to_string(),
                    )
                };
                let http = http_client(Duration::from_secs(120));
                go.wait();
                let started = Instant::now();
                let r = http
                    .get(format!("{base}/api/v1/query_range"))
                    .query(&[
                        ("query", query),
                        ("start", &(start as f64 / 1000.0).to_string()),
                        ("end", &(end as f64 / 1000.0).to_string()),
                        ("step", &step),
                    ])
                    .send()
                    .expect("query request");
                let status = r.status().as_u16();
                let retry_after = r
                    .headers()
                    .get("retry-after")
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_string);
                let body = r.bytes().unwrap_or_default();
                let took = started.elapsed();
                // Only errors are decoded: decoding every big answer would
                // take CPU from the server being measured.
                let v: serde_json::Value = if status == 200 {
                    assert!(body.starts_with(br#"{"status":"success""#), "{status}");
                    serde_json::Value::Null
                } else {
                    serde_json::from_slice(&body).unwrap_or_default()
                };
                Answer {
                    status,
                    error_type: v["errorType"].as_str().unwrap_or("").to_string(),
                    error: v["error"].as_str().unwrap_or("").to_string(),
                    retry_after,
                    took,
                }
            })
        })
        .collect();
    handles.into_iter().map(|h| h.join().expect("query thread")).collect()
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

/// VmHWM of the server, in bytes.
fn peak_rss(server: &Server) -> u64 {
    cairn_bench::procfs::rss(server.pid()).expect("/proc/<pid>/status").1
}

/// Every answer is a success, the memory budget's or the sample limit's
/// 422, or the admission's 503 with Retry-After.
#[track_caller]
fn check_answers(answers: &[Answer]) {
    for a in answers {
        match a.status {
            200 => {}
            422 => {
                assert_eq!(a.error_type, "execution", "{}", a.error);
                assert!(
                    a.error.contains("too much memory") || a.error.contains("too many samples"),
                    "{}",
                    a.error
                );
            }
            503 => {
                assert_eq!(a.error_type, "unavailable", "{}", a.error);
                assert!(a.error.contains("too many concurrent queries"), "{}", a.error);
                assert_eq!(a.retry_after.as_deref(), Some("5"));
            }
            other => panic!("unexpected answer {other} {}: {}", a.error_type, a.error),
        }
    }
}

const MIB: u64 = 1 << 20;

#[test]
fn a_query_storm_is_refused_fast_while_writes_go_on() {
    let fleet = Fleet {
        instances: 100,
        cpus: 10,
    };
    let server = Server::start_with(&[
        "--query.max-concurrency=2",
        "--query.max-queue-length=4",
        "--query.max-queue-wait=500ms",
        "--query.max-memory-bytes=16777216",
    ]);
    let client = server.client();
    // Six hours of one sample a minute for 1,000 series (360,000 samples).
    let end = now_ms();
    fleet.backfill(&client, end, 6 * 3_600_000, 60_000, 60);

    // One query returning every series' points over the 6 h is over its
    // 16 MiB budget: a clean 422, before any storm.
    let whole = client.get_query(
        "/api/v1/query_range",
        &[
            ("query", "storm_cpu_seconds_total"),
            ("start", &((end - 6 * 3_600_000) / 1000).to_string()),
            ("end", &(end / 1000).to_string()),
            ("step", "15"),
        ],
    );
    whole.assert_error(422, "execution");
    assert!(whole.body.contains("too much memory"), "{}", whole.body);

    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (base, stop) = (server.url(), Arc::clone(&stop));
        thread::spawn(move || write_until(base, fleet, Duration::from_secs(1), stop, end + 1))
    };
    let started = Instant::now();
    thread::sleep(Duration::from_secs(1));
    let answers = storm(&server.url(), 50, 6 * 3_600_000, 15);
    thread::sleep(Duration::from_secs(1));
    stop.store(true, Ordering::Relaxed);
    let storm_and_margins = started.elapsed();
    let writes = writer.join().expect("writer thread");

    check_answers(&answers);
    let refused: Vec<&Answer> = answers.iter().filter(|a| a.status == 503).collect();
    let ran = answers.len() - refused.len();
    eprintln!(
        "storm: {} refused, {} ran ({} ok, {} over budget); writes: {}, slowest {:?}; peak RSS {} MiB",
        refused.len(),
        ran,
        answers.iter().filter(|a| a.status == 200).count(),
        answers.iter().filter(|a| a.status == 422).count(),
        writes.statuses.len(),
        writes.latencies.iter().max(),
        peak_rss(&server) / MIB,
    );
    // 2 run, 4 wait: most of 50 are refused; the queue's may get a slot.
    assert!(refused.len() >= 50 - 2 - 4 - 4, "only {} refused", refused.len());
    for a in &refused {
        assert!(a.took < Duration::from_secs(2), "a refusal took {:?}", a.took);
    }
    assert!(ran >= 2, "no query ran");

    // Ingestion went on at its rate, one batch a second (within 20 %):
    // every write acknowledged, none slow.
    let expected = storm_and_margins.as_secs_f64();
    assert!(
        writes.statuses.len() as f64 >= 0.8 * expected,
        "{} writes in {expected:.1} s",
        writes.statuses.len()
    );
    assert!(writes.statuses.iter().all(|&s| s == 204), "{:?}", writes.statuses);
    let slowest = writes.latencies.iter().max().copied().unwrap_or_default();
    assert!(slowest < Duration::from_secs(3), "a write took {slowest:?}");

    // Alive, and within its memory bound: the data (a few MB), 2 queries
    // of 16 MiB budget each and their JSON answers, the runtime. (Admitted
    // all at once, the 25 queries returning every series would hold over
    // 23 MB of points each.)
    assert_eq!(client.get("/-/healthy").status, 200);
    let hwm = peak_rss(&server);
    assert!(hwm < 256 * MIB, "peak RSS {} MiB", hwm / MIB);

    assert_eq!(client.metric("prometheus_engine_queries_concurrent_max"), Some(2.0));
    assert_eq!(client.metric("prometheus_engine_queries"), Some(0.0));
    let refused_total: f64 = ["queue_full", "queue_timeout"]
        .iter()
        .map(|r| {
            let metrics = client.get("/metrics").body;
            let line = format!("cairn_query_refused_total{{reason=\"{r}\"}} ");
            metrics
                .lines()
                .find_map(|l| l.strip_prefix(&line))
                .and_then(|v| v.parse::<f64>().ok())
                .unwrap_or(0.0)
        })
        .sum();
    assert_eq!(refused_total, refused.len() as f64);
}

/// The storm at a bigger scale, for docs/benchmarks.md: 3,000 series with
/// a day of history at 30 s (8.6 M samples), storms of 50 queries over the
/// day at a 1 m step. It measures ingestion before and during the storms,
/// twice: writers back to back (what ingestion can do), then writers
/// offering half that (does ingestion keep its rate); and the refusals'
/// latency and the peak RSS.
#[test]
#[ignore = "benchmark: minutes of backfill; run with --release --ignored --nocapture"]
fn query_storm_benchmark() {
    let fleet = Fleet {
        instances: 300,
        cpus: 10,
    };
    // STORM_MAX_CONCURRENCY and STORM_QUERY_NICE compare settings
    // (defaults 4 and the server's own).
    let concurrency = std::env::var("STORM_MAX_CONCURRENCY").unwrap_or_else(|_| "4".into());
    let nice = std::env::var("STORM_QUERY_NICE").ok();
    let mut args = vec![
        format!("--query.max-concurrency={concurrency}"),
        "--query.max-queue-length=8".into(),
        "--query.max-queue-wait=1s".into(),
    ];
    args.extend(nice.iter().map(|n| format!("--query.nice={n}")));
    let server = Server::start_with(&args.iter().map(String::as_str).collect::<Vec<_>>());
    eprintln!("{args:?}");
    let client = server.client();
    let end = now_ms();
    let backfill = Instant::now();
    fleet.backfill(&client, end, 24 * 3_600_000, 30_000, 20);
    eprintln!(
        "backfilled {} series x 24 h at 30 s in {:?}",
        fleet.series(),
        backfill.elapsed()
    );

    // Two writers, each sending the fleet's batch every `every` (back to
    // back when zero), for 20 s, with or without storms running.
    let measure = |every: Duration, during_storm: bool| -> (f64, Vec<Answer>) {
        let stop = Arc::new(AtomicBool::new(false));
        let writers: Vec<_> = (0..2)
            .map(|_| {
                let (base, stop) = (server.url(), Arc::clone(&stop));
                thread::spawn(move || write_until(base, fleet, every, stop, now_ms()))
            })
            .collect();
        let started = Instant::now();
        let answers = if during_storm {
            let mut all = Vec::new();
            while started.elapsed() < Duration::from_secs(20) {
                all.extend(storm(&server.url(), 50, 24 * 3_600_000, 60));
            }
            all
        } else {
            thread::sleep(Duration::from_secs(20));
            Vec::new()
        };
        stop.store(true, Ordering::Relaxed);
        let elapsed = started.elapsed().as_secs_f64();
        let mut samples = 0;
        for w in writers {
            let w = w.join().expect("writer");
            assert!(w.statuses.iter().all(|&s| s == 204), "{:?}", w.statuses);
            samples += w.samples;
        }
        (samples as f64 / elapsed, answers)
    };
    let change = |quiet: f64, storm: f64| (storm / quiet - 1.0) * 100.0;
    // Back to back, the writers' throughput is what ingestion can do.
    let (capacity, _) = measure(Duration::ZERO, false);
    let (capacity_storm, mut answers) = measure(Duration::ZERO, true);
    // A fleet sending half that: does ingestion keep its rate?
    let every = Duration::from_secs_f64(2.0 * fleet.series() as f64 / (capacity / 2.0));
    let (offered, _) = measure(every, false);
    let (offered_storm, more) = measure(every, true);
    answers.extend(more);
    check_answers(&answers);
    let mut refusals: Vec<Duration> = answers.iter().filter(|a| a.status == 503).map(|a| a.took).collect();
    refusals.sort();
    let mut ran: Vec<Duration> = answers.iter().filter(|a| a.status != 503).map(|a| a.took).collect();
    ran.sort();
    eprintln!(
        "ingestion back to back: {capacity:.0} samples/s before the storm, {capacity_storm:.0} during ({:+.1} %)",
        change(capacity, capacity_storm)
    );
    eprintln!(
        "ingestion at half that (a batch every {every:?} per writer): {offered:.0} samples/s before, {offered_storm:.0} during ({:+.1} %)",
        change(offered, offered_storm)
    );
    eprintln!(
        "queries: {} sent, {} refused (503: p50 {:?}, p99 {:?}, max {:?}), {} ran (200: {}, 422: {}; p50 {:?}, max {:?})",
        answers.len(),
        refusals.len(),
        percentile(&refusals, 0.5),
        percentile(&refusals, 0.99),
        refusals.last().copied().unwrap_or_default(),
        ran.len(),
        answers.iter().filter(|a| a.status == 200).count(),
        answers.iter().filter(|a| a.status == 422).count(),
        percentile(&ran, 0.5),
        ran.last().copied().unwrap_or_default(),
    );
    eprintln!("peak RSS (VmHWM): {} MiB", peak_rss(&server) / MIB);
    assert_eq!(client.get("/-/healthy").status, 200);
}
