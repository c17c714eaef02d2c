//! SeaweedFS (`weed mini`): the real S3-compatible server of the object
//! storage tests, built from the Go module proxy by `scripts/test.sh` into
//! `target/tools/` (or named by `CAIRN_WEED_BIN`). Each test runs its own,
//! on ports of its own, and kills it however the test ends.

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU16, Ordering};
use std::time::{Duration, Instant};

use super::peers::built_from_source;

/// The bucket `weed mini` creates at startup.
pub const BUCKET: &str = "cairn";

/// The `weed` binary, or `None` after printing `SKIPPED` (outside CI).
pub fn binary() -> Option<PathBuf> {
    built_from_source("weed", "CAIRN_WEED_BIN", "weed-", "scripts/build-seaweedfs.sh")
}

/// Ports `weed mini` uses from `base`: its servers on `base..base + 7` and
/// their gRPC ports 10,000 above.
const PORTS: u16 = 7;

fn ports_free(base: u16) -> bool {
    (base..base + PORTS)
        .chain(base + 10_000..base + 10_000 + PORTS)
        .all(|p| TcpListener::bind(("127.0.0.1", p)).is_ok())
}

/// A `weed mini` process (master, volume, filer and S3 gateway in one) over
/// a directory of its own, with the bucket [`BUCKET`].
pub struct SeaweedFs {
    bin: PathBuf,
    child: Option<Child>,
    base: u16,
    dir: tempfile::TempDir,
}

impl Drop for SeaweedFs {
    fn drop(&mut self) {
        self.stop();
    }
}

impl SeaweedFs {
    /// Starts one and waits until its S3 gateway answers; `None` when
    /// SeaweedFS is not built (outside CI).
    pub fn start() -> Option<Self> {
        let bin = binary()?;
        // Below the kernel's ephemeral range (where other tests' ports come
        // from), gRPC ports included; each start of this process takes
        // ports of its own, as tests start servers at the same time.
        static NEXT: AtomicU16 = AtomicU16::new(0);
        let seed = 11_000 + (std::process::id() % 500) as u16 * 20;
        let mut base = seed + NEXT.fetch_add(PORTS, Ordering::Relaxed);
        while !ports_free(base) {
            base = seed + NEXT.fetch_add(PORTS, Ordering::Relaxed);
            assert!(base < 22_000, "no free ports for SeaweedFS");
        }
        let mut s = Self {
            bin,
            child: None,
            base,
            dir: tempfile::tempdir().expect("tempdir"),
        };
        s.restart();
        Some(s)
    }

    /// The S3 endpoint, `http://127.0.0.1:port`.
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.base + 3)
    }

    /// Stops the server (a bucket that is down); its data stays.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts it again over the same data and waits until S3 answers.
    pub fn restart(&mut self) {
        assert!(self.child.is_none(), "SeaweedFS is running");
        let b = self.base;
        let log = std::fs::File::create(self.dir.path().join("weed.log")).expect("log file");
        let data = self.dir.path().join("data");
        std::fs::create_dir_all(&data).expect("data dir");
        let child = Command::new(&self.bin)
            .arg("mini")
            .arg(format!("-dir={}", data.display()))
            .args(["-ip=127.0.0.1", "-ip.bind=127.0.0.1", "-webdav=false"])
            .args(["-admin.port.legacy=0", "-s3.port.lance=0"])
            .arg(format!("-master.port={b}"))
            .arg(format!("-volume.port={}", b + 1))
            .arg(format!("-filer.port={}", b + 2))
            .arg(format!("-s3.port={}", b + 3))
            .arg(format!("-admin.port={}", b + 4))
            .arg(format!("-s3.port.iceberg={}", b + 5))
            .arg(format!("-metricsPort={}", b + 6))
            .arg(format!("-bucket={BUCKET}"))
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("clone log"))
            .stderr(log)
            .spawn()
            .expect("spawn weed");
        self.child = Some(child);
        let client = super::http_client(Duration::from_secs(2));
        let url = format!("{}/{BUCKET}/", self.endpoint());
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if client.get(&url).send().is_ok_and(|r| r.status().is_success()) {
                return;
            }
            assert!(Instant::now() < deadline, "SeaweedFS did not start: {}", self.log());
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("weed.log")).unwrap_or_default()
    }
}
