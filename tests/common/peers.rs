//! Peer programs from Debian's packages that end-to-end tests run beside
//! Cairn (`scripts/test.sh` installs them): finding them, and a
//! VictoriaMetrics process that is killed however the test ends.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// True under CI, where a missing peer is a failure rather than a skip.
pub fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false" && v != "0")
}

/// `name` on `PATH` or in `/usr/bin` or `/usr/sbin`.
pub fn binary(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain([PathBuf::from("/usr/bin"), PathBuf::from("/usr/sbin")])
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// `name`, or `None` after printing `SKIPPED` (outside CI) — under CI a
/// missing peer fails the test.
pub fn require(name: &str, package: &str) -> Option<PathBuf> {
    let found = binary(name);
    if found.is_none() {
        assert!(!in_ci(), "{name} missing under CI (scripts/test.sh installs {package})");
        println!("SKIPPED: {name} not installed (apt-get install {package})");
    }
    found
}

/// The Go peer `name` built from source into `target/tools/` (the last of
/// the files there named `<prefix>…`), or named by the variable `env`;
/// `None` after printing `SKIPPED` (outside CI). While `scripts/test.sh` is
/// still building the Go peers beside the tests, it names in
/// `CAIRN_GO_PEERS_DONE` the directory where it writes the file `name` once
/// that peer is built (`ok`) or has failed: the test waits for that file
/// first.
pub fn built_from_source(name: &str, env: &str, prefix: &str, built_by: &str) -> Option<PathBuf> {
    wait_for_go_peer(name);
    tool(env, prefix, built_by)
}

/// The file named by the variable `env`, or else the last of the files in
/// `target/tools/` named `<prefix>…`, which `put_by` puts there; `None`
/// after printing `SKIPPED` (outside CI).
pub fn tool(env: &str, prefix: &str, put_by: &str) -> Option<PathBuf> {
    let found = std::env::var_os(env).map(PathBuf::from).or_else(|| {
        let tools = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/tools");
        let mut builds: Vec<PathBuf> = std::fs::read_dir(tools)
            .ok()?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with(prefix)))
            .collect();
        builds.sort();
        builds.pop()
    });
    let found = found.filter(|p| p.is_file());
    if found.is_none() {
        assert!(
            !in_ci(),
            "{prefix}… missing under CI ({put_by} puts it in target/tools/)"
        );
        println!("SKIPPED: {prefix}… missing ({put_by} puts it in target/tools/)");
    }
    found
}

/// Waits until the Go peer `name`, which `scripts/test.sh` may be building
/// beside the tests, is built; panics if its build failed.
fn wait_for_go_peer(name: &str) {
    let Some(done) = std::env::var_os("CAIRN_GO_PEERS_DONE").map(|dir| PathBuf::from(dir).join(name)) else {
        return;
    };
    let deadline = Instant::now() + Duration::from_secs(45 * 60);
    let mut said = false;
    loop {
        if let Ok(status) = std::fs::read_to_string(&done) {
            assert_eq!(status.trim(), "ok", "{name} failed to build (see target/go-peers.log)");
            return;
        }
        assert!(Instant::now() < deadline, "{name} was not built in 45 minutes");
        if !said {
            println!("waiting for {name} to be built ({} appears)", done.display());
            said = true;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// A VictoriaMetrics single-node process over a temporary directory.
pub struct VictoriaMetrics {
    pub child: Child,
    pub port: u16,
    _dir: tempfile::TempDir,
}

impl Drop for VictoriaMetrics {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl VictoriaMetrics {
    /// Starts `bin` with `extra` flags and waits until `/health` answers.
    pub fn start(bin: &Path, extra: &[String]) -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let port = super::free_port();
        let child = Command::new(bin)
            .arg(format!("-storageDataPath={}", dir.path().display()))
            .arg(format!("-httpListenAddr=127.0.0.1:{port}"))
            .arg("-retentionPeriod=100y")
            .args(extra)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start victoria-metrics");
        // Owned at once, so it is killed and reaped on every path.
        let vm = Self { child, port, _dir: dir };
        let http = super::http_client(Duration::from_secs(5));
        let deadline = Instant::now() + Duration::from_secs(60);
        while Instant::now() < deadline {
            if http
                .get(format!("{}/health", vm.url()))
                .send()
                .is_ok_and(|r| r.status().is_success())
            {
                return vm;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!("victoria-metrics did not become healthy");
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
}

/// Prometheus 3.14 from `../shared/peers/` (the oracle of Prometheus 3
/// semantics), or `None` after printing `SKIPPED` outside CI — under CI a
/// missing binary fails the test.
pub fn prometheus_3() -> Option<PathBuf> {
    shared_peer("prometheus-3.14.0")
}

/// VictoriaMetrics 1.150 single node from `../shared/peers/`.
pub fn victoria_metrics_1_150() -> Option<PathBuf> {
    shared_peer("victoria-metrics-1.150.0")
}

/// `../shared/peers/<file>`, or `None` after printing `SKIPPED` (outside
/// CI; under CI a missing peer fails the test).
fn shared_peer(file: &str) -> Option<PathBuf> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/peers").join(file);
    if path.is_file() {
        return Some(path);
    }
    assert!(!in_ci(), "{} missing under CI", path.display());
    println!("SKIPPED: {} not found", path.display());
    None
}

/// A Prometheus server over a temporary directory, with the given
/// configuration file; killed however the test ends.
pub struct Prometheus {
    child: Child,
    pub port: u16,
    dir: tempfile::TempDir,
    /// The command it was started with, for [`Prometheus::start_again`].
    command: (PathBuf, Vec<String>),
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Prometheus {
    /// Starts `bin` with `config` (YAML) and `extra` flags, and waits until
    /// `/-/ready` answers.
    pub fn start(bin: &Path, config: &str, extra: &[&str]) -> Self {
        Self::start_on_port(bin, |_| config.to_string(), extra)
    }

    /// [`Self::start`] with the configuration made for the port Prometheus
    /// will listen on (e.g. to scrape itself).
    pub fn start_on_port(bin: &Path, config: impl FnOnce(u16) -> String, extra: &[&str]) -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let port = super::free_port();
        let config_path = dir.path().join("prometheus.yml");
        std::fs::write(&config_path, config(port)).expect("write config");
        let mut args = vec![
            format!("--config.file={}", config_path.display()),
            format!("--storage.tsdb.path={}", dir.path().join("data").display()),
            format!("--web.listen-address=127.0.0.1:{port}"),
        ];
        args.extend(extra.iter().map(|a| a.to_string()));
        let command = (bin.to_path_buf(), args);
        let child = Self::spawn(&command, dir.path());
        let mut prom = Self {
            child,
            port,
            dir,
            command,
        };
        prom.wait_ready();
        prom
    }

    fn spawn((bin, args): &(PathBuf, Vec<String>), dir: &Path) -> Child {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(dir.join("prometheus.log"))
            .expect("log file");
        Command::new(bin)
            .args(args)
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("clone log"))
            .stderr(log)
            .spawn()
            .expect("start prometheus")
    }

    /// Stops the process (SIGTERM, as an operator would) and waits for it.
    pub fn stop(&mut self) {
        let _ = Command::new("kill")
            .arg("-TERM")
            .arg(self.child.id().to_string())
            .status();
        let deadline = Instant::now() + Duration::from_secs(30);
        while self.child.try_wait().expect("wait").is_none() {
            if Instant::now() > deadline {
                let _ = self.child.kill();
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Starts it again over the same directory and port, after [`Prometheus::stop`].
    pub fn start_again(&mut self) {
        self.child = Self::spawn(&self.command, self.dir.path());
        self.wait_ready();
    }

    fn wait_ready(&mut self) {
        let http = super::http_client(Duration::from_secs(5));
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            self.assert_running();
            if http
                .get(format!("{}/-/ready", self.url()))
                .send()
                .is_ok_and(|r| r.status().is_success())
            {
                return;
            }
            assert!(Instant::now() < deadline, "prometheus not ready:\n{}", self.log());
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("prometheus.log")).unwrap_or_default()
    }

    /// The configuration file it was started with (to change before a reload).
    pub fn config_path(&self) -> PathBuf {
        self.dir.path().join("prometheus.yml")
    }

    /// Fails the test, with Prometheus' log, if it has exited.
    pub fn assert_running(&mut self) {
        if let Some(status) = self.child.try_wait().expect("wait") {
            panic!("prometheus exited with {status}:\n{}", self.log());
        }
    }
}

/// An Alertmanager (Debian's `prometheus-alertmanager`) over a temporary
/// directory, without clustering; killed however the test ends.
pub struct Alertmanager {
    child: Child,
    pub port: u16,
    dir: tempfile::TempDir,
}

impl Drop for Alertmanager {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Alertmanager {
    /// Starts `bin` with `config` (YAML) and waits until `/-/ready` answers.
    pub fn start(bin: &Path, config: &str) -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let port = super::free_port();
        let config_path = dir.path().join("alertmanager.yml");
        std::fs::write(&config_path, config).expect("write config");
        let log = std::fs::File::create(dir.path().join("alertmanager.log")).expect("log file");
        let child = Command::new(bin)
            .arg(format!("--config.file={}", config_path.display()))
            .arg(format!("--storage.path={}", dir.path().join("data").display()))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .arg("--cluster.listen-address=")
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("clone log"))
            .stderr(log)
            .spawn()
            .expect("start alertmanager");
        let mut am = Self { child, port, dir };
        let http = super::http_client(Duration::from_secs(5));
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            am.assert_running();
            if http
                .get(format!("{}/-/ready", am.url()))
                .send()
                .is_ok_and(|r| r.status().is_success())
            {
                return am;
            }
            assert!(Instant::now() < deadline, "alertmanager not ready:\n{}", am.log());
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("alertmanager.log")).unwrap_or_default()
    }

    /// Fails the test, with Alertmanager's log, if it has exited.
    pub fn assert_running(&mut self) {
        if let Some(status) = self.child.try_wait().expect("wait") {
            panic!("alertmanager exited with {status}:\n{}", self.log());
        }
    }
}
