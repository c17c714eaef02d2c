//! Clustered systems the bench starts itself (`cairn bench compare
//! --start-cairn-cluster`, `--start-vm-cluster`, `--start-mimir`), each of
//! `nodes` storage nodes at one replication factor, on loopback under one
//! temporary directory:
//! - a Cairn cluster over an etcd of its own;
//! - a VictoriaMetrics cluster: a `vmstorage` per node, one `vminsert` and
//!   one `vmselect` (deduplicating the replicas);
//! - Mimir: monolithic processes in one memberlist ring over a shared
//!   filesystem bucket.
//!
//! The bench writes and queries through every entry point in turn, as a
//! load balancer would, and sums CPU and RSS over every process of a system
//! (etcd included) and disk over its directories (bucket included).

use std::ffi::OsString;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use anyhow::Context;

use crate::processes::Processes;

use crate::targets::{free_port, tempdir, wait_ready};

/// How long a clustered system may take to become ready (Mimir's
/// ingesters wait in the ring before they take writes).
const READY_TIMEOUT: Duration = Duration::from_secs(180);

/// The size of every clustered system of a run.
#[derive(Debug, Clone, Copy)]
pub struct ClusterShape {
    pub nodes: usize,
    pub replication_factor: usize,
    /// Cairn's shuffle-sharding shard size; 0: off.
    pub shard_size: usize,
}

/// The three binaries of a VictoriaMetrics cluster.
#[derive(Debug, Clone)]
pub struct VmClusterBins {
    pub vmstorage: PathBuf,
    pub vminsert: PathBuf,
    pub vmselect: PathBuf,
}

/// A started system of several processes, killed and removed when dropped.
pub struct StartedSystem {
    pub name: String,
    /// Each process as it was started (to start it again), and the one
    /// running now (`None` while a fault keeps it down).
    processes: Mutex<Vec<(Spec, Option<Child>)>>,
    /// The same processes as the run measures them.
    pub measured: Processes,
    /// Which of `processes` hold data (Cairn nodes, `vmstorage`, Mimir
    /// processes): the ones a fault run kills.
    storage: Vec<usize>,
    /// Remote-write URLs, one per entry point.
    pub write_urls: Vec<String>,
    /// Prometheus query API base URLs, one per entry point.
    pub query_urls: Vec<String>,
    /// Where the system keeps data: its nodes' directories and its bucket.
    pub data_dirs: Vec<PathBuf>,
    dir: tempfile::TempDir,
}

/// How a process was started.
struct Spec {
    what: String,
    program: OsString,
    args: Vec<OsString>,
}

impl Drop for StartedSystem {
    fn drop(&mut self) {
        for (_, child) in self.processes.get_mut().unwrap_or_else(PoisonError::into_inner) {
            if let Some(c) = child {
                let _ = c.kill();
                let _ = c.wait();
            }
        }
    }
}

impl StartedSystem {
    fn new(name: &str, work_dir: Option<&Path>) -> anyhow::Result<Self> {
        Ok(Self {
            name: name.to_string(),
            processes: Mutex::default(),
            measured: Processes::default(),
            storage: Vec::new(),
            write_urls: Vec::new(),
            query_urls: Vec::new(),
            data_dirs: Vec::new(),
            dir: tempdir(work_dir, &format!("cairn-bench-{name}-"))?,
        })
    }

    /// A path under the system's directory, created.
    fn subdir(&self, name: &str) -> anyhow::Result<PathBuf> {
        let path = self.dir.path().join(name);
        std::fs::create_dir_all(&path)?;
        Ok(path)
    }

    /// Starts `cmd` as the process `what`, its output in `what.log`.
    fn spawn(&mut self, what: &str, cmd: &mut Command) -> anyhow::Result<()> {
        let spec = Spec {
            what: what.to_string(),
            program: cmd.get_program().to_owned(),
            args: cmd.get_args().map(ToOwned::to_owned).collect(),
        };
        let child = self.start(&spec)?;
        self.measured.add(child.id());
        self.processes
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner)
            .push((spec, Some(child)));
        Ok(())
    }

    /// [`Self::spawn`] of a process that holds data.
    fn spawn_storage(&mut self, what: &str, cmd: &mut Command) -> anyhow::Result<()> {
        self.storage
            .push(self.processes.get_mut().unwrap_or_else(PoisonError::into_inner).len());
        self.spawn(what, cmd)
    }

    fn start(&self, spec: &Spec) -> anyhow::Result<Child> {
        let log = File::options()
            .create(true)
            .append(true)
            .open(self.dir.path().join(format!("{}.log", spec.what)))?;
        Command::new(&spec.program)
            .args(&spec.args)
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()
            .with_context(|| format!("start {} of {} ({:?})", spec.what, self.name, spec.program))
    }

    /// The process IDs, to sample CPU and RSS.
    pub fn pids(&self) -> Vec<u32> {
        self.measured.pids()
    }

    /// `kill -9` of the last storage process, as a machine lost; its name.
    pub fn kill_storage_node(&self) -> anyhow::Result<String> {
        let &at = self.storage.last().context("the system has no storage process")?;
        let mut processes = self.processes.lock().unwrap_or_else(PoisonError::into_inner);
        let (spec, child) = &mut processes[at];
        let mut child = child.take().context("the storage process is down already")?;
        self.measured.retire(child.id(), crate::procfs::clk_tck());
        child.kill()?;
        child.wait()?;
        Ok(spec.what.clone())
    }

    /// Starts again, as it was started, a storage process that
    /// [`Self::kill_storage_node`] killed; its name.
    pub fn restart_storage_node(&self) -> anyhow::Result<String> {
        let &at = self.storage.last().context("the system has no storage process")?;
        let mut processes = self.processes.lock().unwrap_or_else(PoisonError::into_inner);
        let (spec, child) = &mut processes[at];
        anyhow::ensure!(child.is_none(), "{} is running", spec.what);
        let started = self.start(spec)?;
        self.measured.add(started.id());
        *child = Some(started);
        Ok(spec.what.clone())
    }

    /// The entry points as `cairn bench run` takes them: comma-separated.
    pub fn write_url(&self) -> String {
        self.write_urls.join(",")
    }

    pub fn query_url(&self) -> String {
        self.query_urls.join(",")
    }
}

/// A Cairn cluster of `shape.nodes` nodes (the binary `bin`) over an etcd
/// of its own (`etcd_bin`), ready once every node sees every node alive.
pub fn start_cairn_cluster(
    bin: &Path,
    etcd_bin: &Path,
    shape: ClusterShape,
    work_dir: Option<&Path>,
) -> anyhow::Result<StartedSystem> {
    let mut system = StartedSystem::new("cairn-cluster", work_dir)?;
    let etcd_dir = system.subdir("etcd")?;
    let etcd = format!("http://127.0.0.1:{}", free_port()?);
    system.spawn(
        "etcd",
        Command::new(etcd_bin)
            .arg("--data-dir")
            .arg(&etcd_dir)
            .args(["--listen-client-urls", &etcd, "--advertise-client-urls", &etcd])
            .arg("--listen-peer-urls")
            .arg(format!("http://127.0.0.1:{}", free_port()?)),
    )?;
    system.data_dirs.push(etcd_dir);
    wait_ready("etcd", &format!("{etcd}/health"), READY_TIMEOUT)?;
    let replication = shape.replication_factor.to_string();
    for i in 0..shape.nodes {
        let data = system.subdir(&format!("node-{i}"))?;
        let base = format!("http://127.0.0.1:{}", free_port()?);
        system.spawn_storage(
            &format!("node-{i}"),
            Command::new(bin)
                .arg("--storage.path")
                .arg(&data)
                .args(["--http.listen-addr", base.trim_start_matches("http://")])
                .args(["--log.level", "warn", "--cluster.etcd-endpoints", &etcd])
                .args(["--cluster.name", "bench", "--cluster.node-id", &format!("node-{i}")])
                .args(["--cluster.replication-factor", &replication])
                .args(["--cluster.shard-size", &shape.shard_size.to_string()]),
        )?;
        system.write_urls.push(format!("{base}/api/v1/write"));
        system.query_urls.push(base);
        system.data_dirs.push(data);
    }
    for base in &system.query_urls {
        wait_ready("a cairn node", &format!("{base}/-/ready"), READY_TIMEOUT)?;
    }
    wait_for_cairn_ring(&system.query_urls, shape.nodes)?;
    Ok(system)
}

/// Waits until every node's ring shows `nodes` alive ingesters.
fn wait_for_cairn_ring(bases: &[String], nodes: usize) -> anyhow::Result<()> {
    let http = reqwest::blocking::Client::builder()
        .timeout(Duration::from_secs(2))
        .build()?;
    let deadline = Instant::now() + READY_TIMEOUT;
    for base in bases {
        loop {
            let ring: serde_json::Value = http
                .get(format!("{base}/internal/cluster/v1/ring"))
                .send()
                .and_then(|r| r.text())
                .ok()
                .and_then(|body| serde_json::from_str(&body).ok())
                .unwrap_or_default();
            let alive = ring["members"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|m| m["alive"] == true && m["ingester"] == true)
                .count();
            if alive == nodes {
                break;
            }
            anyhow::ensure!(Instant::now() < deadline, "{base} sees {alive} of {nodes} nodes alive");
            std::thread::sleep(Duration::from_millis(100));
        }
    }
    Ok(())
}

/// A VictoriaMetrics cluster: `shape.nodes` vmstorage, one vminsert
/// replicating `shape.replication_factor` times and one vmselect that
/// deduplicates the replicas.
pub fn start_vm_cluster(
    bins: &VmClusterBins,
    shape: ClusterShape,
    work_dir: Option<&Path>,
) -> anyhow::Result<StartedSystem> {
    let mut system = StartedSystem::new("vm-cluster", work_dir)?;
    let (mut inserts, mut selects) = (Vec::new(), Vec::new());
    for i in 0..shape.nodes {
        let data = system.subdir(&format!("vmstorage-{i}"))?;
        let http = format!("127.0.0.1:{}", free_port()?);
        let (insert, select) = (
            format!("127.0.0.1:{}", free_port()?),
            format!("127.0.0.1:{}", free_port()?),
        );
        system.spawn_storage(
            &format!("vmstorage-{i}"),
            Command::new(&bins.vmstorage)
                .arg(format!("-storageDataPath={}", data.display()))
                .arg(format!("-httpListenAddr={http}"))
                .arg(format!("-vminsertAddr={insert}"))
                .arg(format!("-vmselectAddr={select}"))
                .args(["-retentionPeriod=100y", "-loggerLevel=ERROR"]),
        )?;
        wait_ready("vmstorage", &format!("http://{http}/health"), READY_TIMEOUT)?;
        system.data_dirs.push(data);
        inserts.push(insert);
        selects.push(select);
    }
    let replication = format!("-replicationFactor={}", shape.replication_factor);
    let insert_http = format!("127.0.0.1:{}", free_port()?);
    system.spawn(
        "vminsert",
        Command::new(&bins.vminsert)
            .arg(format!("-httpListenAddr={insert_http}"))
            .arg(&replication)
            .arg(format!("-storageNode={}", inserts.join(",")))
            .arg("-loggerLevel=ERROR"),
    )?;
    let select_http = format!("127.0.0.1:{}", free_port()?);
    let cache = system.subdir("vmselect-cache")?;
    system.spawn(
        "vmselect",
        Command::new(&bins.vmselect)
            .arg(format!("-httpListenAddr={select_http}"))
            .arg(&replication)
            .arg(format!("-storageNode={}", selects.join(",")))
            .arg("-dedup.minScrapeInterval=1ms")
            .arg(format!("-cacheDataPath={}", cache.display()))
            .arg("-loggerLevel=ERROR"),
    )?;
    system.data_dirs.push(cache);
    wait_ready("vminsert", &format!("http://{insert_http}/health"), READY_TIMEOUT)?;
    wait_ready("vmselect", &format!("http://{select_http}/health"), READY_TIMEOUT)?;
    system
        .write_urls
        .push(format!("http://{insert_http}/insert/0/prometheus/api/v1/write"));
    system
        .query_urls
        .push(format!("http://{select_http}/select/0/prometheus"));
    Ok(system)
}

/// Mimir as `shape.nodes` monolithic processes (`-target=all`) in one
/// memberlist ring, replicating `shape.replication_factor` times, over a
/// filesystem bucket they share; one tenant, generous limits.
pub fn start_mimir(bin: &Path, shape: ClusterShape, work_dir: Option<&Path>) -> anyhow::Result<StartedSystem> {
    let mut system = StartedSystem::new("mimir", work_dir)?;
    let bucket = system.subdir("bucket")?;
    let ports: Vec<[u16; 3]> = (0..shape.nodes)
        .map(|_| Ok([free_port()?, free_port()?, free_port()?]))
        .collect::<anyhow::Result<_>>()?;
    let members: Vec<String> = ports
        .iter()
        .map(|[_, _, gossip]| format!("127.0.0.1:{gossip}"))
        .collect();
    let config = system.dir.path().join("mimir.yaml");
    std::fs::write(&config, mimir_config(&members, &bucket, shape.replication_factor))?;
    for (i, [http, grpc, gossip]) in ports.iter().enumerate() {
        let name = format!("mimir-{i}");
        let local = system.subdir(&name)?;
        let at = |sub: &str| local.join(sub).display().to_string();
        let mut cmd = Command::new(bin);
        cmd.arg(format!("-config.file={}", config.display()))
            .arg(format!("-server.http-listen-port={http}"))
            .arg(format!("-server.grpc-listen-port={grpc}"))
            .arg(format!("-memberlist.bind-port={gossip}"))
            .arg(format!("-memberlist.advertise-port={gossip}"))
            .arg(format!("-memberlist.nodename={name}"));
        for ring in [
            "ingester.ring",
            "distributor.ring",
            "store-gateway.sharding-ring",
            "compactor.ring",
            "ruler.ring",
            "query-scheduler.ring",
        ] {
            cmd.arg(format!("-{ring}.instance-id={name}"));
        }
        cmd.arg(format!("-blocks-storage.tsdb.dir={}", at("tsdb")))
            .arg(format!("-blocks-storage.bucket-store.sync-dir={}", at("tsdb-sync")))
            .arg(format!("-compactor.data-dir={}", at("compactor")))
            .arg(format!("-ruler.rule-path={}", at("rules")))
            .arg(format!("-activity-tracker.filepath={}", at("activity.log")));
        system.spawn_storage(&name, &mut cmd)?;
        system.write_urls.push(format!("http://127.0.0.1:{http}/api/v1/push"));
        system.query_urls.push(format!("http://127.0.0.1:{http}/prometheus"));
        system.data_dirs.push(local);
    }
    system.data_dirs.push(bucket);
    for (i, [http, ..]) in ports.iter().enumerate() {
        wait_ready(
            &format!("mimir-{i}"),
            &format!("http://127.0.0.1:{http}/ready"),
            READY_TIMEOUT,
        )?;
    }
    Ok(system)
}

/// Mimir's configuration for processes on loopback gossiping with
/// `members`, over the filesystem bucket `bucket`.
fn mimir_config(members: &[String], bucket: &Path, replication_factor: usize) -> String {
    let members: String = members.iter().map(|m| format!("    - {m}\n")).collect();
    let bucket = bucket.display();
    format!(
        r#"target: all
multitenancy_enabled: false
usage_stats:
  enabled: false
server:
  http_listen_address: 127.0.0.1
  grpc_listen_address: 127.0.0.1
  log_level: warn
  grpc_server_max_recv_msg_size: 104857600
  grpc_server_max_send_msg_size: 104857600
  grpc_server_max_concurrent_streams: 1000
memberlist:
  bind_addr: [127.0.0.1]
  advertise_addr: 127.0.0.1
  join_members:
{members}distributor:
  ring:
    instance_addr: 127.0.0.1
    kvstore:
      store: memberlist
ingester:
  ring:
    instance_addr: 127.0.0.1
    kvstore:
      store: memberlist
    replication_factor: {replication_factor}
store_gateway:
  sharding_ring:
    instance_addr: 127.0.0.1
    kvstore:
      store: memberlist
    replication_factor: {replication_factor}
compactor:
  sharding_ring:
    instance_addr: 127.0.0.1
    kvstore:
      store: memberlist
ruler:
  ring:
    instance_addr: 127.0.0.1
    kvstore:
      store: memberlist
query_scheduler:
  ring:
    instance_addr: 127.0.0.1
frontend:
  address: 127.0.0.1
blocks_storage:
  backend: filesystem
  filesystem:
    dir: {bucket}/blocks
ruler_storage:
  backend: filesystem
  filesystem:
    dir: {bucket}/ruler-storage
limits:
  ingestion_rate: 10000000
  ingestion_burst_size: 20000000
  max_global_series_per_user: 0
  max_global_series_per_metric: 0
"#
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_killed_storage_process_is_started_again_as_it_was_and_measured_throughout() {
        let mut system = StartedSystem::new("sleepers", None).unwrap();
        system.spawn("router", Command::new("sleep").arg("60")).unwrap();
        system
            .spawn_storage("store-0", Command::new("sleep").arg("60"))
            .unwrap();
        system
            .spawn_storage("store-1", Command::new("sleep").arg("61"))
            .unwrap();
        let before = system.pids();
        assert_eq!(before.len(), 3);
        let alive = |pid: u32| Path::new(&format!("/proc/{pid}")).exists();

        assert_eq!(system.kill_storage_node().unwrap(), "store-1");
        assert_eq!(system.pids(), before[..2]);
        assert!(!alive(before[2]));
        assert!(system.kill_storage_node().is_err(), "already down");

        assert_eq!(system.restart_storage_node().unwrap(), "store-1");
        let after = system.pids();
        assert_eq!(after.len(), 3);
        assert_ne!(after[2], before[2]);
        // Its command line shows once its exec is through.
        let deadline = Instant::now() + Duration::from_secs(5);
        let cmdline = loop {
            let cmdline = std::fs::read(format!("/proc/{}/cmdline", after[2])).unwrap();
            if !cmdline.is_empty() || Instant::now() > deadline {
                break cmdline;
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        assert_eq!(cmdline, b"sleep\x0061\x00");
        assert!(system.restart_storage_node().is_err(), "already running");
        assert!(system.measured.cpu_seconds(crate::procfs::clk_tck()).is_some());

        drop(system);
        assert!(after.iter().all(|&pid| !alive(pid)));
    }

    #[test]
    fn mimir_config_lists_every_member_and_the_bucket() {
        let members = ["127.0.0.1:1".to_string(), "127.0.0.1:2".to_string()];
        let yaml = mimir_config(&members, Path::new("/b"), 2);
        let doc: serde_yaml_ng::Value = serde_yaml_ng::from_str(&yaml).expect("yaml");
        assert_eq!(doc["memberlist"]["join_members"][1].as_str(), Some("127.0.0.1:2"));
        assert_eq!(doc["ingester"]["ring"]["replication_factor"].as_u64(), Some(2));
        assert_eq!(doc["blocks_storage"]["filesystem"]["dir"].as_str(), Some("/b/blocks"));
    }
}
