//! Crash safety: `kill -9` the real binary at random moments while a writer
//! streams batches of float and native histogram samples, restart on the
//! same data directory, and check that every acknowledged (204) sample is
//! there with its exact value.
//!
//! Reproduce a run with `CAIRN_CRASH_SEED=<seed printed by the test>`;
//! `CAIRN_CRASH_ROUNDS` changes the number of rounds (default 24).

mod common;

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use cairn_model::{Histogram, HistogramSample, Labels, Sample};
use cairn_protocols::SeriesSamples;
use common::*;
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
    for &b in acked.iter().filter(|&&b| b >= from) {
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

        // Writer: sends batches until the server dies or the test stops it.
        let stop = Arc::new(AtomicBool::new(false));
        let round_acked = Arc::new(Mutex::new(Vec::new()));
        let first = next_batch;
        let writer = {
            let stop = stop.clone();
            let round_acked = round_acked.clone();
            let client = srv.client();
            std::thread::spawn(move || {
                let mut b = first;
                while !stop.load(Ordering::Relaxed) {
                    let r = client.try_write(&batch(t0, b));
                    b += 1;
                    match r {
                        Ok(r) if r.status == 204 => {
                            round_acked.lock().unwrap().push(b - 1);
                            // Bounded rate: crashes, not volume, are the point.
                            std::thread::sleep(Duration::from_millis(5));
                        }
                        Ok(r) => panic!("batch {} refused: {} {}", b - 1, r.status, r.body),
                        Err(_) => break, // the server died mid-request
                    }
                }
                b // batches sent (some may be unacknowledged)
            })
        };
        // Mostly short rounds; some long enough for flushes and the 5 s
        // maintenance loop (merges) to be under way when the kill lands.
        let kill_after = if rng.random_bool(0.2) {
            Duration::from_millis(rng.random_range(2000..6000))
        } else {
            Duration::from_millis(rng.random_range(50..2000))
        };
        std::thread::sleep(kill_after);
        srv.kill9();
        stop.store(true, Ordering::Relaxed);
        next_batch = writer.join().expect("writer thread");
        let mut got = std::mem::take(&mut *round_acked.lock().unwrap());
        let in_flight = next_batch - first - got.len() as u64;
        total_killed_mid_write += in_flight;
        println!(
            "round {round}: kill -9 after {kill_after:?} {args:?}: {} batches acknowledged, {in_flight} in flight",
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
