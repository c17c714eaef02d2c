//! Snapshots, backups and restores with the real binary: backups taken
//! through the snapshot API while a writer streams batches, restored into
//! new directories that a second cairn serves, compared sample by sample
//! with the first; incremental second backups; a directory and a real S3
//! server (S3Proxy) as destinations.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::common::s3proxy::{ACCESS_KEY_ID, BUCKET, S3Proxy, SECRET_ACCESS_KEY};
use crate::common::{Client, Server, now_ms};
use cairn_model::{Labels, Sample};
use cairn_protocols::SeriesSamples;

const SERIES: usize = 50;
const SAMPLES_PER_BATCH: usize = 5;
const METRIC: &str = "backup_test";

fn batch(t0: i64, b: u64) -> Vec<SeriesSamples> {
    (0..SERIES)
        .map(|s| {
            let labels = Labels::from_pairs([("__name__", METRIC), ("series", &s.to_string())]);
            let samples = (0..SAMPLES_PER_BATCH)
                .map(|k| {
                    let i = b as i64 * SAMPLES_PER_BATCH as i64 + k as i64;
                    Sample::new(t0 + i * 100, (i * 7 + s as i64) as f64)
                })
                .collect();
            SeriesSamples::new(labels, samples)
        })
        .collect()
}

/// Batches written until stopped, each with when its write was acknowledged.
struct Writer {
    stop: Arc<AtomicBool>,
    acked: Arc<Mutex<Vec<(u64, Instant)>>>,
    thread: std::thread::JoinHandle<()>,
}

impl Writer {
    fn start(server: &Server, t0: i64) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let acked = Arc::new(Mutex::new(Vec::new()));
        let (s, a, client) = (stop.clone(), acked.clone(), server.client());
        let thread = std::thread::spawn(move || {
            let mut b = 0;
            while !s.load(Ordering::Relaxed) {
                client.write(&batch(t0, b));
                a.lock().unwrap().push((b, Instant::now()));
                b += 1;
                std::thread::sleep(Duration::from_millis(10));
            }
        });
        Self { stop, acked, thread }
    }

    /// The batches acknowledged before `t`.
    fn acked_before(&self, t: Instant) -> Vec<u64> {
        let acked = self.acked.lock().unwrap();
        acked.iter().filter(|(_, at)| *at < t).map(|(b, _)| *b).collect()
    }

    fn stop(self) {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.join().expect("writer");
    }
}

/// Runs `cairn ARGS`; its success and its output.
fn cairn(args: &[&str]) -> (bool, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_cairn"))
        .args(args)
        .output()
        .expect("run cairn");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

/// `(copied, already there)` files of a `cairn backup` report line:
/// `backup NAME: copied C files (B bytes), S files (B bytes) already there`.
fn copied_and_skipped(report: &str) -> (u64, u64) {
    let count_after = |marker: &str| -> u64 {
        let rest = report
            .split(marker)
            .nth(1)
            .unwrap_or_else(|| panic!("no {marker:?} in {report}"));
        rest.split(' ').next().and_then(|n| n.parse().ok()).expect("a count")
    };
    (count_after("copied "), count_after("), "))
}

fn samples(client: &Client, t0: i64) -> BTreeMap<(String, i64), u64> {
    let mut out = BTreeMap::new();
    for e in client.export(&[METRIC], Some((t0, t0 + 86_400_000))) {
        for s in e.samples {
            out.insert((e.labels["series"].clone(), s.t), s.v.to_bits());
        }
    }
    out
}

/// The restored store holds every sample of `batches` and nothing the
/// original does not hold with the same value.
#[track_caller]
fn assert_restored(restored: &Client, original: &BTreeMap<(String, i64), u64>, t0: i64, batches: &[u64]) {
    let got = samples(restored, t0);
    for (key, bits) in &got {
        assert_eq!(
            original.get(key),
            Some(bits),
            "restored sample {key:?} differs from the original"
        );
    }
    for &b in batches {
        for series in batch(t0, b) {
            let name = series.labels.get("series").unwrap_or_default().to_string();
            for s in &series.samples {
                assert_eq!(
                    got.get(&(name.clone(), s.t)),
                    Some(&s.v.to_bits()),
                    "batch {b} series {name}: acknowledged before the backup, missing from the restore"
                );
            }
        }
    }
}

/// Backs up twice to `to` (extra flags `dest_flags`) while writing, then
/// restores each backup into a directory of its own and compares.
fn backup_while_writing_and_restore(to: &str, dest_flags: &[&str]) {
    let server = Server::start_with(&["--storage.flush-interval", "1s"]);
    let data = server.data_dir.to_str().expect("utf-8 path").to_string();
    let snapshot_url = format!("{}/api/v1/admin/tsdb/snapshot", server.url());
    let t0 = now_ms() - 3_600_000;
    let writer = Writer::start(&server, t0);
    let backup_args = || -> Vec<String> {
        let mut args = vec![
            "backup",
            "--storage.path",
            &data,
            "--to",
            to,
            "--snapshot-url",
            &snapshot_url,
        ];
        args.extend(dest_flags);
        args.into_iter().map(str::to_string).collect()
    };
    let run = |args: &[String]| {
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        let (ok, out) = cairn(&refs);
        assert!(ok, "cairn {args:?}: {out}");
        out
    };

    std::thread::sleep(Duration::from_millis(1500));
    let first_started = Instant::now();
    let first = run(&backup_args());
    std::thread::sleep(Duration::from_millis(1500));
    let second_started = Instant::now();
    let second = run(&backup_args());
    let (first_copied, _) = copied_and_skipped(&first);
    let (second_copied, second_skipped) = copied_and_skipped(&second);
    assert!(first_copied > 0, "{first}");
    assert!(
        second_skipped > 0,
        "the second backup copied again what the first had: {second}"
    );
    assert!(second_copied < first_copied + second_skipped, "{second}");
    let in_first = writer.acked_before(first_started);
    let in_second = writer.acked_before(second_started);
    writer.stop();
    assert!(!in_first.is_empty() && in_second.len() > in_first.len());
    let snapshots = server.data_dir.join("snapshots");
    assert_eq!(
        std::fs::read_dir(&snapshots).map(|d| d.count()).unwrap_or(0),
        0,
        "the backups' snapshots are removed"
    );

    let mut list_args = vec!["backup", "--list", "--to", to];
    list_args.extend(dest_flags);
    let (ok, listed) = cairn(&list_args);
    assert!(ok, "{listed}");
    let names: Vec<&str> = listed.lines().collect();
    assert_eq!(names.len(), 2, "{listed}");

    let original = samples(&server.client(), t0);
    for (name, batches) in [(None, &in_second), (Some(names[0]), &in_first)] {
        let target = tempfile::tempdir().expect("tempdir");
        let target_path = target.path().join("restored");
        let target_str = target_path.to_str().expect("utf-8 path");
        let mut args = vec!["restore", "--from", to, "--storage.path", target_str];
        args.extend(dest_flags);
        if let Some(name) = name {
            args.extend(["--backup", name]);
        }
        let (ok, out) = cairn(&args);
        assert!(ok, "restore: {out}");
        let (again, out) = cairn(&args);
        assert!(!again && out.contains("empty"), "a restore over data: {out}");
        let mut restored = Server::new(&target_path, &[]);
        restored.restart();
        assert_restored(&restored.client(), &original, t0, batches);
    }
}

#[test]
fn a_backup_taken_while_writing_restores_to_a_directory() {
    let dest = tempfile::tempdir().expect("tempdir");
    backup_while_writing_and_restore(dest.path().to_str().expect("utf-8 path"), &[]);
}

#[test]
fn a_backup_taken_while_writing_restores_from_s3() {
    let Some(s3) = S3Proxy::start() else {
        return;
    };
    let endpoint = s3.endpoint();
    let to = format!("s3://{BUCKET}/backups");
    backup_while_writing_and_restore(
        &to,
        &[
            "--storage.object-store.endpoint",
            leak(endpoint),
            "--storage.object-store.region",
            "us-east-1",
            "--storage.object-store.access-key-id",
            ACCESS_KEY_ID,
            "--storage.object-store.secret-access-key",
            SECRET_ACCESS_KEY,
        ],
    );
}

fn leak(s: String) -> &'static str {
    Box::leak(s.into_boxed_str())
}

#[test]
fn a_directory_in_use_is_backed_up_only_through_its_server() {
    let server = Server::start();
    let data = server.data_dir.to_str().expect("utf-8 path");
    let dest = tempfile::tempdir().expect("tempdir");
    let (ok, out) = cairn(&["backup", "--storage.path", data, "--to", dest.path().to_str().unwrap()]);
    assert!(!ok && out.contains("--snapshot-url"), "{out}");
    assert!(Path::new(data).join("LOCK").exists());
}
