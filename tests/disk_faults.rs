//! Disk faults under the real binary, each on a small filesystem the test
//! mounts (root only; without the rights to mount, a test says so and
//! skips): a disk that fills up during ingestion and is freed again, the
//! free-space reserve, and a filesystem that turns read-only mid-write.
//! Writes must be refused with a retryable 503 (Retry-After), `/-/ready`
//! and `/metrics` must say why, queries must keep working, and every
//! acknowledged sample must survive, with no restart needed once space
//! returns.

use std::collections::BTreeMap;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::common::{Client, Resp, Server};
use cairn_model::{Labels, Sample};
use cairn_protocols::SeriesSamples;

const SERIES: usize = 20;
const SAMPLES_PER_BATCH: usize = 10;
const STEP_MS: i64 = 1_000;
const METRIC: &str = "disk_fault_test";

/// A filesystem mounted for one test, unmounted (and its loop device
/// detached) when dropped.
struct Mount {
    path: PathBuf,
    loop_device: Option<String>,
    _dir: tempfile::TempDir,
}

fn run(program: &str, args: &[&str]) -> Result<String, String> {
    let out = Command::new(program)
        .args(args)
        .output()
        .map_err(|e| format!("{program}: {e}"))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
    } else {
        Err(format!(
            "{program} {args:?}: {}: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

impl Mount {
    /// A tmpfs of `bytes`, or `None` (said on stderr) where mounting is not allowed.
    fn tmpfs(bytes: u64) -> Option<Self> {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("mnt");
        fs::create_dir(&path).expect("mount point");
        let size = format!("size={bytes}");
        if let Err(e) = run("mount", &["-t", "tmpfs", "-o", &size, "tmpfs", path.to_str()?]) {
            eprintln!("SKIPPED: cannot mount a tmpfs (the test needs root): {e}");
            return None;
        }
        Some(Self {
            path,
            loop_device: None,
            _dir: dir,
        })
    }

    /// An ext4 filesystem of `bytes` on a loop device, mounted with
    /// `errors=remount-ro` as production disks often are, or `None`.
    fn ext4(bytes: u64) -> Option<Self> {
        let dir = tempfile::tempdir().expect("tempdir");
        let image = dir.path().join("disk.img");
        fs::File::create(&image)
            .and_then(|f| f.set_len(bytes))
            .expect("disk image");
        let path = dir.path().join("mnt");
        fs::create_dir(&path).expect("mount point");
        let device = match run("losetup", &["-f", "--show", image.to_str()?]) {
            Ok(d) => d,
            Err(e) => {
                eprintln!("SKIPPED: cannot attach a loop device (the test needs root): {e}");
                return None;
            }
        };
        let mount = Self {
            path,
            loop_device: Some(device.clone()),
            _dir: dir,
        };
        if let Err(e) = run("mkfs.ext4", &["-q", &device]).and_then(|_| mount.mount_ext4()) {
            eprintln!("SKIPPED: cannot make and mount an ext4 filesystem: {e}");
            return None;
        }
        Some(mount)
    }

    fn mount_ext4(&self) -> Result<String, String> {
        let device = self.loop_device.as_deref().expect("a loop device");
        run(
            "mount",
            &[
                "-o",
                "errors=remount-ro",
                device,
                self.path.to_str().expect("utf-8 path"),
            ],
        )
    }

    /// Turns the ext4 filesystem read-only the way a disk error does: the
    /// kernel's own error path, with `errors=remount-ro`.
    fn fail_ext4(&self) {
        let device = self.loop_device.as_deref().expect("a loop device");
        let name = device.trim_start_matches("/dev/");
        fs::write(format!("/sys/fs/ext4/{name}/trigger_fs_error"), "cairn disk fault test")
            .expect("trigger an ext4 error");
    }

    /// Unmounts, repairs (as an operator would after a read-only remount)
    /// and mounts again.
    fn repair_ext4(&self) {
        run("umount", &[self.path.to_str().expect("utf-8 path")]).expect("umount");
        let device = self.loop_device.as_deref().expect("a loop device");
        // e2fsck exits 1 when it fixed something: that is what it is for.
        let status = Command::new("e2fsck").args(["-fy", device]).output().expect("e2fsck");
        assert!(
            matches!(status.status.code(), Some(0 | 1)),
            "e2fsck: {}",
            String::from_utf8_lossy(&status.stdout)
        );
        self.mount_ext4().expect("mount again");
    }

    /// Writes a file until the filesystem is full; removing it frees the space.
    fn fill(&self) -> PathBuf {
        let ballast = self.path.join("ballast");
        let mut f = fs::File::create(&ballast).expect("ballast");
        let mut chunk = vec![0x5a_u8; 1 << 20];
        while !chunk.is_empty() {
            if f.write_all(&chunk).is_err() {
                chunk.truncate(chunk.len() / 2);
                if chunk.len() < 512 {
                    break;
                }
            }
        }
        let _ = f.sync_all();
        ballast
    }

    /// A file of `bytes` taking that much of the space.
    fn ballast(&self, bytes: usize) -> PathBuf {
        let path = self.path.join("ballast");
        fs::write(&path, vec![0x5a_u8; bytes]).expect("ballast");
        path
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        let path = self.path.to_string_lossy().to_string();
        let _ = run("umount", &["-l", &path]);
        if let Some(device) = &self.loop_device {
            let _ = run("losetup", &["-d", device]);
        }
    }
}

fn value(s: usize, b: u64, k: usize) -> f64 {
    (b * 1_000 + k as u64) as f64 + s as f64 / 100.0
}

fn batch(t0: i64, b: u64) -> Vec<SeriesSamples> {
    (0..SERIES)
        .map(|s| {
            let labels = Labels::from_pairs([("__name__", METRIC), ("series", &s.to_string())]);
            let samples = (0..SAMPLES_PER_BATCH)
                .map(|k| {
                    let t = t0 + (b as i64 * SAMPLES_PER_BATCH as i64 + k as i64) * STEP_MS;
                    Sample::new(t, value(s, b, k))
                })
                .collect();
            SeriesSamples::new(labels, samples)
        })
        .collect()
}

/// Sends batch `b`; a refusal must be the retryable kind.
fn send(client: &Client, t0: i64, b: u64) -> bool {
    let r = client.try_write(&batch(t0, b)).expect("remote write request");
    match r.status {
        204 => true,
        503 => {
            assert_refused_for_retry(&r);
            false
        }
        other => panic!("batch {b}: a write got {other}, not 204 or a retryable 503: {}", r.body),
    }
}

#[track_caller]
fn assert_refused_for_retry(r: &Resp) {
    r.assert_error(503, "unavailable");
    assert!(r.retry_after.is_some(), "a 503 without Retry-After: {}", r.body);
}

/// Sends batch `b` until it is taken, as a remote-write client retries.
fn send_until_taken(client: &Client, t0: i64, b: u64, within: Duration) {
    let deadline = Instant::now() + within;
    while !send(client, t0, b) {
        assert!(Instant::now() < deadline, "batch {b} still refused after {within:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Every sample of the `taken` batches present with its exact value, and
/// nothing else.
#[track_caller]
fn assert_stored_exactly(client: &Client, t0: i64, taken: &[u64]) {
    let mut want: BTreeMap<String, BTreeMap<i64, u64>> = BTreeMap::new();
    for &b in taken {
        for series in batch(t0, b) {
            let name = series.labels.get("series").unwrap_or_default().to_string();
            for s in &series.samples {
                want.entry(name.clone()).or_default().insert(s.t, s.v.to_bits());
            }
        }
    }
    let mut got: BTreeMap<String, BTreeMap<i64, u64>> = BTreeMap::new();
    for e in client.export(&[METRIC], Some((t0, t0 + 86_400_000))) {
        let m = got.entry(e.labels["series"].clone()).or_default();
        for s in e.samples {
            assert!(m.insert(s.t, s.v.to_bits()).is_none(), "duplicate sample at {}", s.t);
        }
    }
    assert_eq!(got.len(), want.len(), "series stored");
    for (series, samples) in &want {
        let stored = &got[series];
        let missing: Vec<_> = samples.keys().filter(|t| !stored.contains_key(t)).take(5).collect();
        assert!(
            missing.is_empty(),
            "series {series}: acknowledged samples missing at {missing:?}"
        );
        assert_eq!(
            stored, samples,
            "series {series}: samples differ from those acknowledged"
        );
    }
}

/// Polls `/-/ready` until it answers `status`; its body.
fn ready_becomes(client: &Client, status: u16, within: Duration) -> String {
    let deadline = Instant::now() + within;
    loop {
        let r = client.get("/-/ready");
        if r.status == status {
            return r.body;
        }
        assert!(
            Instant::now() < deadline,
            "/-/ready still {} after {within:?}: {}",
            r.status,
            r.body
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn series_count(client: &Client) -> f64 {
    let r = client.get_query(
        "/api/v1/query",
        &[("query", &format!("count(last_over_time({METRIC}[2h]))"))],
    );
    assert_eq!(r.status, 200, "a query while writes are refused: {}", r.body);
    r.json()["data"]["result"][0]["value"][1]
        .as_str()
        .expect("a count")
        .parse()
        .expect("a number")
}

fn temporary_files(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in fs::read_dir(&d).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "tmp") {
                found.push(path);
            }
        }
    }
    found
}

fn start_of_data() -> i64 {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_millis() as i64;
    now - 3_600_000
}

#[test]
fn a_full_disk_refuses_writes_for_retry_and_they_resume_when_space_is_freed() {
    let Some(mnt) = Mount::tmpfs(48 << 20) else { return };
    let data = mnt.path.join("data");
    let mut server = Server::new(
        &data,
        &["--storage.min-free-disk-bytes", "0", "--storage.flush-interval", "1s"],
    );
    server.restart();
    let client = server.client();
    let t0 = start_of_data();
    let mut taken = Vec::new();
    let mut next = 0;
    for _ in 0..20 {
        send_until_taken(&client, t0, next, Duration::ZERO);
        taken.push(next);
        next += 1;
    }

    let ballast = mnt.fill();
    let mut refused = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    while refused.len() < 5 {
        assert!(Instant::now() < deadline, "writes still taken on a full disk");
        if send(&client, t0, next) {
            taken.push(next);
        } else {
            refused.push(next);
        }
        next += 1;
    }
    let why = ready_becomes(&client, 503, Duration::from_secs(5));
    assert!(why.contains("disk_full") && why.contains("wal"), "/-/ready: {why}");
    assert_eq!(
        client.metric(r#"cairn_storage_writes_refused{reason="disk_full"}"#),
        Some(1.0)
    );
    assert!(client.metric(r#"cairn_storage_write_errors_total{operation="wal_append"}"#) >= Some(1.0));
    // Flushes fail too while the disk stays full; each must leave nothing behind.
    let deadline = Instant::now() + Duration::from_secs(10);
    while client.metric(r#"cairn_storage_write_errors_total{operation="flush"}"#) < Some(1.0) {
        assert!(Instant::now() < deadline, "no flush failed on a full disk");
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(
        series_count(&client),
        SERIES as f64,
        "queries go on over what is stored"
    );

    fs::remove_file(&ballast).expect("free the space");
    for &b in &refused {
        send_until_taken(&client, t0, b, Duration::from_secs(30));
        taken.push(b);
    }
    for _ in 0..5 {
        send_until_taken(&client, t0, next, Duration::from_secs(10));
        taken.push(next);
        next += 1;
    }
    ready_becomes(&client, 200, Duration::from_secs(10));
    assert_eq!(
        client.metric(r#"cairn_storage_writes_refused{reason="disk_full"}"#),
        Some(0.0)
    );
    taken.sort_unstable();
    assert_stored_exactly(&client, t0, &taken);

    assert!(server.terminate(Duration::from_secs(30)).success(), "{}", server.log());
    assert_eq!(
        temporary_files(&data),
        Vec::<PathBuf>::new(),
        "failed writes left files behind"
    );
    server.restart();
    assert_stored_exactly(&server.client(), t0, &taken);
}

#[test]
fn under_the_free_space_reserve_writes_are_refused_before_the_disk_is_full() {
    let Some(mnt) = Mount::tmpfs(64 << 20) else { return };
    let reserve = 40 << 20;
    let mut server = Server::new(
        &mnt.path.join("data"),
        &["--storage.min-free-disk-bytes", &reserve.to_string()],
    );
    server.restart();
    let client = server.client();
    let t0 = start_of_data();
    send_until_taken(&client, t0, 0, Duration::ZERO);

    let ballast = mnt.ballast(30 << 20);
    // The reserve is looked at every maintenance tick (1 s by default).
    let deadline = Instant::now() + Duration::from_secs(10);
    let refusal = loop {
        let r = client.try_write(&batch(t0, 1)).expect("remote write request");
        if r.status != 204 {
            break r;
        }
        assert!(Instant::now() < deadline, "writes still taken under the reserve");
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_refused_for_retry(&refusal);
    assert!(
        refusal.body.contains("--storage.min-free-disk-bytes"),
        "{}",
        refusal.body
    );
    let why = ready_becomes(&client, 503, Duration::from_secs(5));
    assert!(why.contains("low_disk_space"), "/-/ready: {why}");
    let free = client
        .metric("cairn_storage_free_disk_bytes")
        .expect("free space metric");
    assert!(free < reserve as f64, "free {free} under the reserve {reserve}");
    let status = client.get("/api/v1/status/storage").json();
    assert_eq!(
        status["data"]["totals"]["writeRefusal"]["reason"], "low_disk_space",
        "{status}"
    );

    fs::remove_file(&ballast).expect("free the space");
    send_until_taken(&client, t0, 1, Duration::from_secs(5));
    ready_becomes(&client, 200, Duration::from_secs(5));
    assert_stored_exactly(&client, t0, &[0, 1]);
}

#[test]
fn a_filesystem_turned_read_only_mid_write_loses_no_acknowledged_sample() {
    let Some(mnt) = Mount::ext4(64 << 20) else { return };
    let data = mnt.path.join("data");
    // Every acknowledgement after an fsync: the filesystem's own cache is
    // lost with it once it goes read-only.
    let args = [
        "--storage.min-free-disk-bytes",
        "0",
        "--storage.wal-fsync-interval",
        "0",
        "--storage.flush-interval",
        "1s",
    ];
    let mut server = Server::new(&data, &args);
    server.restart();
    let client = server.client();
    let t0 = start_of_data();
    let mut taken = Vec::new();
    let mut next = 0;
    for _ in 0..30 {
        send_until_taken(&client, t0, next, Duration::ZERO);
        taken.push(next);
        next += 1;
    }

    mnt.fail_ext4();
    let mut refused = 0;
    let deadline = Instant::now() + Duration::from_secs(30);
    while refused < 3 {
        assert!(
            Instant::now() < deadline,
            "writes still taken on a read-only filesystem"
        );
        if send(&client, t0, next) {
            taken.push(next);
        } else {
            refused += 1;
        }
        next += 1;
    }
    let why = ready_becomes(&client, 503, Duration::from_secs(5));
    assert!(why.contains("read_only_filesystem"), "/-/ready: {why}");
    assert_eq!(
        series_count(&client),
        SERIES as f64,
        "queries go on over what is stored"
    );
    assert_stored_exactly(&client, t0, &taken);

    // The operator's way back: stop, repair, start.
    server.terminate(Duration::from_secs(30));
    mnt.repair_ext4();
    server.restart();
    let client = server.client();
    assert_stored_exactly(&client, t0, &taken);
    send_until_taken(&client, t0, next, Duration::ZERO);
    taken.push(next);
    assert_stored_exactly(&client, t0, &taken);
}
