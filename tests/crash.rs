//! Crash safety: `kill -9` the real binary at random moments while a writer
//! streams batches of float and native histogram samples, restart on the
//! same data directory, and check that every acknowledged (204) sample is
//! there with its exact value.
//!
//! Reproduce a run with `CAIRN_CRASH_SEED=<seed printed by the test>`;
//! `CAIRN_CRASH_ROUNDS` changes the number of rounds (default 24).

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::common::*;
use cairn_model::{Histogram, HistogramSample, Labels, Sample};
use cairn_protocols::SeriesSamples;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

const SERIES: usize = 200;
/// Of them, the first this many also hold native histograms, under their
/// own metric name (one sample of each kind per series and step).
const HISTOGRAM_SERIES: usize = 20;
const SAMPLES_PER_BATCH: usize = 4;

/// Batch `b`'s samples are at `t0 + (b * SAMPLES_PER_BATCH + k) * STEP_MS`.
const STEP_MS: i64 = 10;

/// The value of series `s` at sample `k` of batch `b`: distinct per sample,
/// exactly representable, and not trivially compressible.
fn value(s: usize, b: u64, k: usize) -> f64 {
    let x = (b * SAMPLES_PER_BATCH as u64 + k as u64).wrapping_mul(2_654_435_761) ^ (s as u64 * 40_503);
    (x % 1_000_000_007) as f64 / 64.0 - (s as f64)
}

fn ts(t0: i64, b: u64, k: usize) -> i64 {
    t0 + (b as i64 * SAMPLES_PER_BATCH as i64 + k as i64) * STEP_MS
}

fn labels(name: &str, s: usize) -> Labels {
    Labels::from_pairs([
        ("__name__", name.to_string()),
        ("instance", format!("host-{:03}", s % 37)),
        ("series", format!("{s:04}")),
    ])
}

/// The histogram of series `s` at sample `k` of batch `b`: its layout and
/// counts follow from the float value, so each sample is distinct.
fn histogram(s: usize, b: u64, k: usize) -> Histogram {
    let x = value(s, b, k);
    let n = (x as u64 % 7) as i32;
    let positive: Vec<(i32, f64)> = (0..=n).map(|i| (i - 2, f64::from(i + 1) * 3.0)).collect();
    Histogram {
        schema: (s % 9) as i32 - 4,
        count: positive.iter().map(|b| b.1).sum::<f64>() + 2.0,
        sum: x,
        zero_threshold: 0.001,
        zero_count: 2.0,
        positive,
        ..Histogram::default()
    }
}

fn batch(t0: i64, b: u64) -> Vec<SeriesSamples> {
    let floats = (0..SERIES).map(|s| {
        let samples = (0..SAMPLES_PER_BATCH)
            .map(|k| Sample::new(ts(t0, b, k), value(s, b, k)))
            .collect();
        SeriesSamples::new(labels("crash_test", s), samples)
    });
    let histograms = (0..HISTOGRAM_SERIES).map(|s| {
        let samples = (0..SAMPLES_PER_BATCH)
            .map(|k| HistogramSample::new(ts(t0, b, k), histogram(s, b, k)))
            .collect();
        SeriesSamples::with_histograms(labels("crash_test_histograms", s), Vec::new(), samples)
    });
    floats.chain(histograms).collect()
}

/// Checks the store against what was sent: every acknowledged batch fully
/// present; every other batch all-or-nothing; no sample that was never sent.
/// Returns the ids of unacknowledged batches that turned out durable.
fn verify(client: &Client, t0: i64, from: u64, sent: u64, acked: &[u64], round: usize, seed: u64) -> Vec<u64> {
    if from >= sent {
        return Vec::new();
    }
    let exported = client.export(
        &["crash_test", "crash_test_histograms"],
        Some((ts(t0, from, 0), ts(t0, sent, 0) - 1)),
    );
    let mut by_series: HashMap<String, BTreeMap<i64, u64>> = HashMap::new();
    let mut present = vec![0usize; sent as usize];
    for e in exported {
        let name = e.labels.get("series").cloned().unwrap_or_default();
        assert_eq!(
            e.labels.len(),
            3,
            "round {round} seed {seed}: unexpected labels {:?}",
            e.labels
        );
        if e.labels["__name__"] == "crash_test_histograms" {
            let s: usize = name.parse().expect("series number");
            assert!(e.samples.is_empty() && s < HISTOGRAM_SERIES);
            for (t, h) in &e.histograms {
                let idx = ((t - t0) / STEP_MS) as u64;
                let (b, k) = (
                    idx / SAMPLES_PER_BATCH as u64,
                    (idx % SAMPLES_PER_BATCH as u64) as usize,
                );
                assert!(
                    (t - t0) % STEP_MS == 0 && b >= from && b < sent,
                    "round {round} seed {seed}: histogram at {t} that was never sent"
                );
                assert_eq!(
                    *h,
                    histogram(s, b, k),
                    "round {round} seed {seed}: series {s} batch {b} histogram {k} at {t}"
                );
                present[b as usize] += 1;
            }
            continue;
        }
        let m = by_series.entry(name).or_default();
        for s in e.samples {
            assert!(m.insert(s.t, s.v.to_bits()).is_none(), "duplicate timestamp {}", s.t);
        }
    }
    // Per batch: how many samples are present (and all values exact).
    for (name, samples) in &by_series {
        let s: usize = name.parse().expect("series number");
        assert!(s < SERIES);
        for (&t, &bits) in samples {
            let off = t - t0;
            assert!(
                off >= 0 && off % STEP_MS == 0,
                "round {round} seed {seed}: series {s} has a sample at {t} that was never sent"
            );
            let idx = (off / STEP_MS) as u64;
            let (b, k) = (
                idx / SAMPLES_PER_BATCH as u64,
                (idx % SAMPLES_PER_BATCH as u64) as usize,
            );
            assert!(
                b >= from && b < sent,
                "round {round} seed {seed}: sample at {t} of batch {b} that was never sent"
            );
            let want = value(s, b, k);
            assert_eq!(
                bits,
                want.to_bits(),
                "round {round} seed {seed}: series {s} batch {b} sample {k} at {t}: got {}, want {want}",
                f64::from_bits(bits)
            );
            present[b as usize] += 1;
        }
    }
    let full = (SERIES + HISTOGRAM_SERIES) * SAMPLES_PER_BATCH;
    for &b in acked.iter().filter(|&&b| b >= from && b < sent) {
        assert_eq!(
            present[b as usize], full,
            "round {round} seed {seed}: acknowledged batch {b} has {}/{full} samples after kill -9",
            present[b as usize]
        );
    }
    let mut durable_unacked = Vec::new();
    for (b, &n) in present.iter().enumerate().skip(from as usize) {
        assert!(
            n == 0 || n == full,
            "round {round} seed {seed}: batch {b} is torn: {n}/{full} samples present"
        );
        if n == full && acked.binary_search(&(b as u64)).is_err() {
            durable_unacked.push(b as u64);
        }
    }
    durable_unacked
}

/// Threads that remote-write consecutive batches until the server dies or
/// they are stopped; each batch id is taken once from a shared counter.
struct Writers {
    stop: Arc<AtomicBool>,
    next: Arc<AtomicU64>,
    acked: Arc<Mutex<Vec<u64>>>,
    refused: Arc<AtomicU64>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl Writers {
    /// `threads` writers from batch `first`, each pausing `pause` after a
    /// batch is taken (zero: as fast as the server takes them).
    fn start(srv: &Server, t0: i64, first: u64, threads: usize, pause: Duration) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let next = Arc::new(AtomicU64::new(first));
        let acked = Arc::new(Mutex::new(Vec::new()));
        let refused = Arc::new(AtomicU64::new(0));
        let threads = (0..threads)
            .map(|_| {
                let (stop, next, acked, refused) = (stop.clone(), next.clone(), acked.clone(), refused.clone());
                let client = srv.client();
                std::thread::spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        let b = next.fetch_add(1, Ordering::Relaxed);
                        match client.try_write(&batch(t0, b)) {
                            Ok(r) if r.status == 204 => {
                                acked.lock().unwrap().push(b);
                                std::thread::sleep(pause);
                            }
                            // Backpressure: not taken, so all or nothing of it
                            // may be stored; a real sender would retry it.
                            Ok(r) if r.status == 503 && r.retry_after.is_some() => {
                                refused.fetch_add(1, Ordering::Relaxed);
                                std::thread::sleep(Duration::from_millis(100));
                            }
                            Ok(r) => panic!("batch {b} refused: {} {}", r.status, r.body),
                            Err(_) => break, // the server died mid-request
                        }
                    }
                })
            })
            .collect();
        Self {
            stop,
            next,
            acked,
            refused,
            threads,
        }
    }

    /// Stops the writers (the server is dead or about to be): the batches
    /// sent (ids below it), those acknowledged, and how many were refused.
    fn stop(self) -> (u64, Vec<u64>, u64) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads {
            t.join().expect("writer thread");
        }
        let mut acked = std::mem::take(&mut *self.acked.lock().unwrap());
        acked.sort_unstable();
        (
            self.next.load(Ordering::Relaxed),
            acked,
            self.refused.load(Ordering::Relaxed),
        )
    }
}

#[test]
fn kill_9_during_ingestion_loses_no_acknowledged_sample() {
    let seed: u64 = std::env::var("CAIRN_CRASH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(rand::random);
    let rounds: usize = std::env::var("CAIRN_CRASH_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(24);
    println!("crash test: seed {seed} ({rounds} rounds); reproduce with CAIRN_CRASH_SEED={seed}");
    let mut rng = StdRng::seed_from_u64(seed);
    let dir = tempfile::tempdir().expect("tempdir");
    // Well inside retention, and far enough back that the run never reaches now.
    let t0 = (now_ms() - 6 * 3_600_000) / 1000 * 1000;
    let mut next_batch: u64 = 0;
    let mut acked: Vec<u64> = Vec::new();
    let started = Instant::now();
    let mut total_killed_mid_write = 0;
    // First batch of the previous round, and of this one.
    let mut verified_from: u64 = 0;
    let mut round_first: Option<u64> = None;

    for round in 0..rounds {
        // Vary what the server is doing when it dies.
        let mut args: Vec<String> = Vec::new();
        match rng.random_range(0..4) {
            0 => {}
            1 => args.extend(["--storage.flush-interval".into(), "1s".into()]),
            2 => args.extend([
                "--storage.flush-interval".into(),
                "2s".into(),
                "--storage.max-in-memory-bytes".into(),
                "200000".into(),
            ]),
            _ => args.extend([
                "--storage.wal-fsync-interval".into(),
                "0s".into(),
                "--storage.flush-interval".into(),
                "1s".into(),
            ]),
        }
        let arg_refs: Vec<&str> = args.iter().map(String::as_str).collect();
        let mut srv = Server::new(dir.path(), &arg_refs);

        // Now and then, die during startup (WAL replay) instead.
        if round > 0 && rng.random_bool(0.15) {
            let delay = Duration::from_millis(rng.random_range(0..150));
            srv.spawn();
            std::thread::sleep(delay);
            println!("round {round}: kill -9 during startup after {delay:?} {args:?}");
            srv.kill9();
        }

        srv.restart();
        let client = srv.client();
        // Everything every few rounds, else the last rounds' batches: a crash
        // must not lose older data either, but re-reading millions of samples
        // each round would dominate the run.
        let from = if round % 6 == 0 { 0 } else { verified_from };
        let durable = verify(&client, t0, from, next_batch, &acked, round, seed);
        verified_from = round_first.unwrap_or(0);
        round_first = Some(next_batch);
        // Unacknowledged batches that made it are now part of the record: a
        // later crash must not lose them either.
        acked.extend(durable);
        acked.sort_unstable();

        let writers = Writers::start(&srv, t0, next_batch, 1, Duration::from_millis(5));
        // Mostly short rounds; some long enough for flushes and the 5 s
        // maintenance loop (merges) to be under way when the kill lands.
        let kill_after = if rng.random_bool(0.2) {
            Duration::from_millis(rng.random_range(2000..6000))
        } else {
            Duration::from_millis(rng.random_range(50..2000))
        };
        std::thread::sleep(kill_after);
        srv.kill9();
        let (sent, mut got, refused) = writers.stop();
        let in_flight = sent - next_batch - got.len() as u64 - refused;
        next_batch = sent;
        total_killed_mid_write += in_flight;
        println!(
            "round {round}: kill -9 after {kill_after:?} {args:?}: {} batches acknowledged, {refused} refused for retry, {in_flight} in flight",
            got.len()
        );
        acked.append(&mut got);
        acked.sort_unstable();
    }

    // Final check on a clean start.
    let mut srv = Server::new(dir.path(), &[]);
    srv.restart();
    let durable = verify(&srv.client(), t0, 0, next_batch, &acked, rounds, seed);
    acked.extend(durable);
    let status = srv.terminate(Duration::from_secs(60));
    assert!(status.success());
    srv.restart();
    acked.sort_unstable();
    assert!(verify(&srv.client(), t0, 0, next_batch, &acked, rounds + 1, seed).is_empty());
    println!(
        "crash test: {rounds} rounds, {} batches ({} samples) durable, {total_killed_mid_write} killed in flight, {:.1}s",
        acked.len(),
        acked.len() * (SERIES + HISTOGRAM_SERIES) * SAMPLES_PER_BATCH,
        started.elapsed().as_secs_f64()
    );
    assert!(acked.len() > rounds, "too few batches acknowledged to mean anything");
}

/// [`verify`] a few thousand batches at a time: a soak stores more than one
/// export answers within a client's timeout.
fn verify_in_chunks(
    client: &Client,
    t0: i64,
    from: u64,
    sent: u64,
    acked: &[u64],
    round: usize,
    seed: u64,
) -> Vec<u64> {
    const CHUNK: u64 = 500;
    (from..sent)
        .step_by(CHUNK as usize)
        .flat_map(|start| verify(client, t0, start, (start + CHUNK).min(sent), acked, round, seed))
        .collect()
}

/// The soak of docs/benchmarks.md ("Crash soak"): `CAIRN_SOAK_ROUNDS`
/// (default 100) rounds of kill -9 at random moments while two writers send
/// batches as fast as the server takes them and a reader runs range
/// queries; after every restart the acknowledged samples are checked, and
/// the restart's peak RSS (WAL replay) must stay within the bound below.
#[test]
#[ignore = "a soak benchmark: cargo test --release --test e2e crash::soak -- --ignored --nocapture"]
fn soak_kill_9_at_full_rate_with_queries() {
    let seed: u64 = std::env::var("CAIRN_CRASH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(rand::random);
    let rounds: usize = std::env::var("CAIRN_SOAK_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(100);
    // Replay flushes at half of this bound; the rest of the process (index,
    // caches, runtime) is counted in the allowance beside it.
    let memory_bound: u64 = 64 << 20;
    let rss_bound = memory_bound + (384 << 20);
    let args = ["--storage.max-in-memory-bytes".to_string(), memory_bound.to_string()];
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    println!("soak: seed {seed}, {rounds} rounds; reproduce with CAIRN_CRASH_SEED={seed}");
    let mut rng = StdRng::seed_from_u64(seed);
    let dir = tempfile::tempdir().expect("tempdir");
    let t0 = (now_ms() - 6 * 3_600_000) / 1000 * 1000;
    let (mut next_batch, mut acked) = (0u64, Vec::<u64>::new());
    let (mut verified_from, mut round_first) = (0u64, None::<u64>);
    let (mut startups, mut peaks, mut wal_sizes) = (Vec::new(), Vec::new(), Vec::new());
    let (mut queries, mut refused_total, mut in_flight_total) = (0u64, 0u64, 0u64);
    let started = Instant::now();
    for round in 0..rounds {
        let mut srv = Server::new(dir.path(), &args);
        wal_sizes.push(cairn_bench::procfs::du_bytes(&dir.path().join("wal")));
        let start = Instant::now();
        srv.restart();
        startups.push(start.elapsed());
        let (_, peak) = cairn_bench::procfs::rss(srv.pid()).expect("the server's /proc status");
        peaks.push(peak);
        if startups[round] > Duration::from_secs(3) {
            // Where a slow start went: opening the days, replay, its flush.
            for line in srv.log().lines().filter(|l| {
                ["opened partitions", "replayed WAL", "storage ready"]
                    .iter()
                    .any(|m| l.contains(m))
            }) {
                println!("round {round} start: {line}");
            }
        }
        let from = if round % 10 == 0 { 0 } else { verified_from };
        acked.extend(verify_in_chunks(
            &srv.client(),
            t0,
            from,
            next_batch,
            &acked,
            round,
            seed,
        ));
        acked.sort_unstable();
        verified_from = round_first.unwrap_or(0);
        round_first = Some(next_batch);

        let writers = Writers::start(&srv, t0, next_batch, 2, Duration::ZERO);
        let stop_reading = Arc::new(AtomicBool::new(false));
        let reader = {
            let (stop, client) = (stop_reading.clone(), srv.client());
            let (start, end) = (ms_to_param(t0), ms_to_param(t0 + 3_600_000));
            std::thread::spawn(move || {
                let mut answered = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    let query = [
                        ("query", "sum by (series) (rate(crash_test[1s]))"),
                        ("start", start.as_str()),
                        ("end", end.as_str()),
                        ("step", "10"),
                    ];
                    match client
                        .http
                        .get(format!("{}/api/v1/query_range", client.base))
                        .query(&query)
                        .send()
                    {
                        Ok(r) if r.status().is_success() => answered += 1,
                        Ok(r) => panic!("a query failed: {} {}", r.status(), r.text().unwrap_or_default()),
                        Err(_) => break,
                    }
                }
                answered
            })
        };
        let kill_after = Duration::from_millis(rng.random_range(500..8000));
        std::thread::sleep(kill_after);
        srv.kill9();
        stop_reading.store(true, Ordering::Relaxed);
        let (sent, mut got, refused) = writers.stop();
        queries += reader.join().expect("reader thread");
        let in_flight = sent - next_batch - got.len() as u64 - refused;
        println!(
            "round {round}: kill -9 after {kill_after:?}: {} batches acknowledged, {refused} refused, {in_flight} in flight; \
             restart {:?}, peak RSS {} MiB, WAL {} MiB",
            got.len(),
            startups[round],
            peak >> 20,
            wal_sizes[round] >> 20,
        );
        if startups[round] > Duration::from_secs(3) {
            // Where a slow start went: replay, or opening the rest.
            for line in srv
                .log()
                .lines()
                .filter(|l| l.contains("replayed WAL") || l.contains("storage ready"))
            {
                println!("  {line}");
            }
        }
        refused_total += refused;
        in_flight_total += in_flight;
        next_batch = sent;
        acked.append(&mut got);
        acked.sort_unstable();
    }
    let mut srv = Server::new(dir.path(), &args);
    srv.restart();
    acked.extend(verify_in_chunks(&srv.client(), t0, 0, next_batch, &acked, rounds, seed));
    startups.sort_unstable();
    let max_peak = peaks.iter().copied().max().unwrap_or(0);
    println!(
        "soak: {rounds} rounds in {:.0} s, 0 failed starts, {} batches ({} samples) acknowledged and all present, \
         {refused_total} refused for retry, {in_flight_total} in flight at a kill, {queries} range queries answered; \
         restart p50 {:?} max {:?}; peak RSS at restart max {} MiB (bound {} MiB); WAL at restart max {} MiB",
        started.elapsed().as_secs_f64(),
        acked.len(),
        acked.len() * (SERIES + HISTOGRAM_SERIES) * SAMPLES_PER_BATCH,
        startups[startups.len() / 2],
        startups.last().copied().unwrap_or_default(),
        max_peak >> 20,
        rss_bound >> 20,
        wal_sizes.iter().max().copied().unwrap_or(0) >> 20,
    );
    assert!(max_peak < rss_bound, "WAL replay peaked at {max_peak} bytes of RSS");
}
