//! Targets the bench starts itself (`--start-cairn`, `--start-victoriametrics`):
//! each on a free loopback port over a fresh temporary data directory, killed
//! and removed when dropped.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::Context;

/// A started database process.
pub struct StartedTarget {
    pub name: String,
    pub child: Child,
    pub port: u16,
    pub data_dir: PathBuf,
    _dir: tempfile::TempDir,
}

impl Drop for StartedTarget {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl StartedTarget {
    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub fn write_url(&self) -> String {
        format!("{}/api/v1/write", self.base_url())
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

pub(crate) fn free_port() -> anyhow::Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

/// Waits until `url` answers with a success, for at most `timeout`.
pub(crate) fn wait_ready(name: &str, url: &str, timeout: Duration) -> anyhow::Result<()> {
    let http = reqwest::blocking::Client::builder()
        .timeout(Duration::from_secs(2))
        .build()?;
    let deadline = Instant::now() + timeout;
    while Instant::now() < deadline {
        if http.get(url).send().is_ok_and(|r| r.status().is_success()) {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    anyhow::bail!("{name} did not become ready within {} s", timeout.as_secs())
}

fn start(
    name: &str,
    mut cmd: Command,
    port: u16,
    dir: tempfile::TempDir,
    ready_path: &str,
) -> anyhow::Result<StartedTarget> {
    let child = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .with_context(|| format!("start {name}"))?;
    let target = StartedTarget {
        name: name.to_string(),
        child,
        port,
        data_dir: dir.path().to_path_buf(),
        _dir: dir,
    };
    wait_ready(
        name,
        &format!("{}{ready_path}", target.base_url()),
        Duration::from_secs(120),
    )?;
    Ok(target)
}

/// Starts `cairn` (the binary at `bin`) with default flags.
pub fn start_cairn(bin: &Path, work_dir: Option<&Path>) -> anyhow::Result<StartedTarget> {
    start_cairn_with(bin, work_dir, &[])
}

/// Starts `cairn` with `extra` flags after the storage and listen flags.
pub fn start_cairn_with(bin: &Path, work_dir: Option<&Path>, extra: &[String]) -> anyhow::Result<StartedTarget> {
    let dir = tempdir(work_dir, "cairn-bench-cairn")?;
    let port = free_port()?;
    let mut cmd = Command::new(bin);
    cmd.arg("--storage.path")
        .arg(dir.path())
        .arg("--http.listen-addr")
        .arg(format!("127.0.0.1:{port}"))
        .args(extra);
    start("cairn", cmd, port, dir, "/-/ready")
}

/// Starts a Prometheus server (`bin`) with the configuration file `config`.
pub fn start_prometheus(bin: &Path, work_dir: Option<&Path>, config: &Path) -> anyhow::Result<StartedTarget> {
    anyhow::ensure!(bin.exists(), "{} not found", bin.display());
    let dir = tempdir(work_dir, "cairn-bench-prometheus")?;
    let port = free_port()?;
    let mut cmd = Command::new(bin);
    cmd.arg(format!("--config.file={}", config.display()))
        .arg(format!("--storage.tsdb.path={}", dir.path().display()))
        .arg(format!("--web.listen-address=127.0.0.1:{port}"));
    start("prometheus", cmd, port, dir, "/-/ready")
}

/// Starts Prometheus in agent mode (`--agent`): scraping and remote write
/// with a WAL of its own and no local queries.
pub fn start_prometheus_agent(bin: &Path, work_dir: Option<&Path>, config: &Path) -> anyhow::Result<StartedTarget> {
    anyhow::ensure!(bin.exists(), "{} not found", bin.display());
    let dir = tempdir(work_dir, "cairn-bench-prometheus-agent")?;
    let port = free_port()?;
    let mut cmd = Command::new(bin);
    cmd.arg("--agent")
        .arg(format!("--config.file={}", config.display()))
        .arg(format!("--storage.agent.path={}", dir.path().display()))
        .arg(format!("--web.listen-address=127.0.0.1:{port}"));
    start("prometheus-agent", cmd, port, dir, "/-/ready")
}

/// Starts vmagent scraping as `config` says and writing to `remote_write_url`
/// in Prometheus' remote write protocol.
pub fn start_vmagent(
    bin: &Path,
    work_dir: Option<&Path>,
    config: &Path,
    remote_write_url: &str,
) -> anyhow::Result<StartedTarget> {
    anyhow::ensure!(bin.exists(), "{} not found", bin.display());
    let dir = tempdir(work_dir, "cairn-bench-vmagent")?;
    let port = free_port()?;
    let mut cmd = Command::new(bin);
    cmd.arg(format!("-promscrape.config={}", config.display()))
        .arg(format!("-remoteWrite.url={remote_write_url}"))
        .arg("-remoteWrite.forcePromProto")
        .arg(format!("-remoteWrite.tmpDataPath={}", dir.path().display()))
        .arg(format!("-httpListenAddr=127.0.0.1:{port}"));
    start("vmagent", cmd, port, dir, "/health")
}

/// Starts VictoriaMetrics single-node (Debian's `/usr/bin/victoria-metrics`
/// unless `bin` is given) with default flags.
pub fn start_victoriametrics(bin: Option<&Path>, work_dir: Option<&Path>) -> anyhow::Result<StartedTarget> {
    let bin = bin.map_or_else(|| PathBuf::from("/usr/bin/victoria-metrics"), Path::to_path_buf);
    anyhow::ensure!(
        bin.exists(),
        "{} not found (Debian: apt-get install victoria-metrics)",
        bin.display()
    );
    let dir = tempdir(work_dir, "cairn-bench-vm")?;
    let port = free_port()?;
    let mut cmd = Command::new(bin);
    cmd.arg(format!("-storageDataPath={}", dir.path().display()))
        .arg(format!("-httpListenAddr=127.0.0.1:{port}"))
        .arg("-retentionPeriod=100y");
    start("victoriametrics", cmd, port, dir, "/health")
}

pub(crate) fn tempdir(work_dir: Option<&Path>, prefix: &str) -> anyhow::Result<tempfile::TempDir> {
    let mut b = tempfile::Builder::new();
    b.prefix(prefix);
    Ok(match work_dir {
        Some(d) => b.tempdir_in(d)?,
        None => b.tempdir()?,
    })
}
