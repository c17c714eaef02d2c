//! etcd (Debian's `etcd-server`): the membership store of the cluster
//! tests. Each test runs its own single-member etcd over a directory of
//! its own, on ports of its own, and it is killed however the test ends;
//! it can be stopped and started again over the same data.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::free_port;
use super::peers::require;

pub struct Etcd {
    bin: PathBuf,
    child: Option<Child>,
    /// The address it listens on.
    pub host: String,
    pub client_port: u16,
    peer_port: u16,
    dir: tempfile::TempDir,
}

impl Etcd {
    /// A running etcd on loopback, or `None` after printing `SKIPPED` (outside CI).
    pub fn start() -> Option<Self> {
        Self::start_on("127.0.0.1")
    }

    /// [`Self::start`] listening on `host`.
    pub fn start_on(host: &str) -> Option<Self> {
        let bin = require("etcd", "etcd-server")?;
        let mut etcd = Self {
            bin,
            host: host.into(),
            child: None,
            client_port: free_port(),
            peer_port: free_port(),
            dir: tempfile::tempdir().expect("tempdir"),
        };
        etcd.restart();
        Some(etcd)
    }

    pub fn endpoint(&self) -> String {
        format!("http://{}:{}", self.host, self.client_port)
    }

    /// Starts it (again, over the same data) and waits until it answers.
    /// A start that stays silent (the host stalled its exec or its disk) is
    /// killed and tried again, a few times, before the test gives up.
    pub fn restart(&mut self) {
        assert!(self.child.is_none(), "etcd already running");
        const ATTEMPTS: usize = 3;
        for attempt in 1..=ATTEMPTS {
            self.spawn();
            if self.wait_healthy(Duration::from_secs(60)) {
                return;
            }
            eprintln!(
                "etcd not healthy after a minute (attempt {attempt}); log:\n{}",
                self.log()
            );
            self.stop();
        }
        panic!("etcd did not become healthy in {ATTEMPTS} attempts");
    }

    fn spawn(&mut self) {
        let log = std::fs::File::create(self.dir.path().join("etcd.log")).expect("etcd log");
        let client = self.endpoint();
        let peer = format!("http://{}:{}", self.host, self.peer_port);
        let child = Command::new(&self.bin)
            .arg("--name=test")
            .arg(format!("--data-dir={}", self.dir.path().join("data").display()))
            .arg(format!("--listen-client-urls={client}"))
            .arg(format!("--advertise-client-urls={client}"))
            .arg(format!("--listen-peer-urls={peer}"))
            .arg(format!("--initial-advertise-peer-urls={peer}"))
            .arg(format!("--initial-cluster=test={peer}"))
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("clone log"))
            .stderr(log)
            .spawn()
            .expect("spawn etcd");
        self.child = Some(child);
    }

    fn wait_healthy(&self, timeout: Duration) -> bool {
        let http = super::http_client(Duration::from_secs(1));
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            if http
                .get(format!("{}/health", self.endpoint()))
                .send()
                .is_ok_and(|r| r.status().is_success())
            {
                return true;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        false
    }

    /// SIGKILL.
    pub fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("etcd.log")).unwrap_or_default()
    }
}

impl Drop for Etcd {
    fn drop(&mut self) {
        self.stop();
    }
}
