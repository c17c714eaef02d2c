//! `cairn bench ...`: flags of the benchmark subcommands.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};

use crate::run::RunConfig;
use crate::sender::{Access, WireProtocol};
use crate::workload::{Stage, parse_duration, parse_stages};

/// A production-like benchmark of any Prometheus-compatible database:
/// replays real node_exporter data over remote write while evaluating
/// alerting rules as queries.
#[derive(Parser, Debug)]
#[command(name = "cairn bench")]
pub struct BenchCli {
    #[command(subcommand)]
    pub command: BenchCommand,
}

#[derive(Subcommand, Debug)]
pub enum BenchCommand {
    /// Run the workload against one target.
    Run(RunArgs),
    /// Run the same workload against two or more targets and print ratios.
    Compare(CompareArgs),
    /// Record a new trace from a running exporter (same format as the embedded one).
    Record(RecordArgs),
    /// Cairn and Prometheus scrape the same synthetic fleet with the same config and rules.
    Scrape(ScrapeArgs),
    /// Cairn, Prometheus' agent mode and vmagent scrape one fleet and forward it with remote write.
    Forward(ForwardArgs),
}

#[derive(Args, Debug)]
pub struct ForwardArgs {
    /// The `cairn` binary to start.
    #[arg(long)]
    pub cairn_bin: PathBuf,
    /// The Prometheus binary to start in agent mode beside it.
    #[arg(long, default_value = "../shared/peers/prometheus-3.14.0")]
    pub prometheus_bin: PathBuf,
    /// vmagent to start too (scripts/build-peers.sh builds 1.150).
    #[arg(long)]
    pub vmagent_bin: Option<PathBuf>,
    /// Run Cairn as a server that stores what it forwards, not in agent mode.
    #[arg(long)]
    pub cairn_stores: bool,
    /// Synthetic node_exporter targets, each on its own loopback address.
    #[arg(long, default_value_t = 300)]
    pub targets: usize,
    #[arg(long, default_value = "15s", value_parser = duration)]
    pub interval: Duration,
    /// How long to measure, after every forwarder has delivered its first samples.
    #[arg(long, default_value = "5m", value_parser = duration)]
    pub duration: Duration,
    #[arg(long)]
    pub work_dir: Option<PathBuf>,
    /// Write the reports as JSON here.
    #[arg(long)]
    pub report_json: Option<PathBuf>,
    #[arg(long)]
    pub quiet: bool,
}

#[derive(Args, Debug)]
pub struct ScrapeArgs {
    /// The `cairn` binary to start.
    #[arg(long)]
    pub cairn_bin: PathBuf,
    /// The Prometheus binary to start beside it.
    #[arg(long, default_value = "../shared/peers/prometheus-3.14.0")]
    pub prometheus_bin: PathBuf,
    /// Synthetic node_exporter targets, each on its own loopback address.
    #[arg(long, default_value_t = 1000)]
    pub targets: usize,
    /// Scrape and rule evaluation interval.
    #[arg(long, default_value = "15s", value_parser = duration)]
    pub interval: Duration,
    #[arg(long, default_value = "5m", value_parser = duration)]
    pub duration: Duration,
    /// Rule file both evaluate (default: the embedded node_exporter alerts).
    #[arg(long)]
    pub rules: Option<PathBuf>,
    /// Trace the targets replay (default: the embedded one).
    #[arg(long)]
    pub trace: Option<PathBuf>,
    #[arg(long)]
    pub work_dir: Option<PathBuf>,
    /// Write the reports as JSON here.
    #[arg(long)]
    pub report_json: Option<PathBuf>,
    #[arg(long)]
    pub quiet: bool,
}

#[derive(Args, Debug)]
pub struct RecordArgs {
    /// Exporter URL, e.g. http://localhost:9100/metrics.
    #[arg(long)]
    pub url: String,
    #[arg(long, default_value = "1s", value_parser = duration)]
    pub interval: Duration,
    #[arg(long, default_value = "10m", value_parser = duration)]
    pub duration: Duration,
    /// Output file (gzip'd), usable with `--trace`.
    #[arg(long)]
    pub out: PathBuf,
    #[arg(long)]
    pub quiet: bool,
}

#[derive(Args, Debug)]
pub struct CompareArgs {
    /// A running target: `name=<write-url>[,<query-url>]` (repeatable).
    #[arg(long = "target", id = "target_specs")]
    pub target_specs: Vec<String>,
    /// Start this `cairn` binary on a temporary directory as a target.
    #[arg(long)]
    pub start_cairn: Option<PathBuf>,
    /// Start VictoriaMetrics (Debian's /usr/bin/victoria-metrics) on a temporary directory as a target.
    #[arg(long)]
    pub start_victoriametrics: bool,
    /// Another victoria-metrics binary for --start-victoriametrics.
    #[arg(long)]
    pub victoriametrics_bin: Option<PathBuf>,
    /// Start a Cairn cluster of --cluster-nodes nodes of this binary, over
    /// an etcd of its own (--etcd-bin), as a target.
    #[arg(long)]
    pub start_cairn_cluster: Option<PathBuf>,
    /// Start a VictoriaMetrics cluster (--vmstorage-bin, --vminsert-bin,
    /// --vmselect-bin): a vmstorage per node, one vminsert, one vmselect.
    #[arg(long, requires_all = ["vmstorage_bin", "vminsert_bin", "vmselect_bin"])]
    pub start_vm_cluster: bool,
    #[arg(long)]
    pub vmstorage_bin: Option<PathBuf>,
    #[arg(long)]
    pub vminsert_bin: Option<PathBuf>,
    #[arg(long)]
    pub vmselect_bin: Option<PathBuf>,
    /// Start Mimir (this binary) as --cluster-nodes monolithic processes
    /// in one ring over a shared filesystem bucket, as a target.
    #[arg(long)]
    pub start_mimir: Option<PathBuf>,
    /// Storage nodes of each cluster started.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u16).range(1..))]
    pub cluster_nodes: u16,
    /// Replication factor of each cluster started.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u16).range(1..))]
    pub replication_factor: u16,
    /// The Cairn cluster's --cluster.shard-size (shuffle sharding); 0: off.
    #[arg(long, default_value_t = 0)]
    pub cluster_shard_size: usize,
    /// The etcd of a Cairn cluster (Debian's etcd-server).
    #[arg(long, default_value = "etcd")]
    pub etcd_bin: PathBuf,
    /// Where started targets keep their data (default: the system temp dir).
    #[arg(long)]
    pub work_dir: Option<PathBuf>,
    /// Run against all targets at once instead of one after another.
    #[arg(long)]
    pub parallel: bool,
    /// In each cluster started, `kill -9` the last storage node this long
    /// into the run (Cairn node, vmstorage, Mimir process), and start it
    /// again --kill-storage-node-for later.
    #[arg(long, value_parser = duration, conflicts_with = "parallel")]
    pub kill_storage_node_after: Option<Duration>,
    #[arg(long, default_value = "90s", value_parser = duration)]
    pub kill_storage_node_for: Duration,
    #[command(flatten)]
    pub workload: WorkloadArgs,
    #[command(flatten)]
    pub access: AccessArgs,
    /// Write all JSON reports here (an array).
    #[arg(long)]
    pub report_json: Option<PathBuf>,
    /// Write a self-contained HTML page with plots here.
    #[arg(long)]
    pub report: Option<PathBuf>,
    #[arg(long)]
    pub quiet: bool,
}

fn duration(s: &str) -> Result<Duration, String> {
    parse_duration(s)
}

/// A parsed `--stages` value (a newtype so clap takes it as one value).
#[derive(Debug, Clone)]
pub struct StageList(pub Vec<Stage>);

fn stages(s: &str) -> Result<StageList, String> {
    parse_stages(s).map(StageList)
}

#[derive(Args, Debug, Clone)]
pub struct WorkloadArgs {
    /// Simulated node_exporter targets (507 series each).
    #[arg(long, default_value_t = 100)]
    pub targets: usize,
    /// Scrape interval of every target.
    #[arg(long, default_value = "15s", value_parser = duration)]
    pub scrape_interval: Duration,
    /// Percent of targets that get a new identity (instance label) every --churn-interval.
    #[arg(long, default_value_t = 0.0)]
    pub churn: f64,
    #[arg(long, default_value = "10m", value_parser = duration)]
    pub churn_interval: Duration,
    /// Writers sending the same series, each with its own `replica` label.
    #[arg(long, default_value_t = 1)]
    pub replicas: usize,
    /// Spread the targets over this many tenants (`bench-0`, `bench-1`, …,
    /// named by the X-Scope-OrgID header); each query round reads one
    /// tenant, in turn. For targets that take the tenant from that header.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..))]
    pub tenants: u16,
    /// Real-time run length.
    #[arg(long, default_value = "5m", value_parser = duration)]
    pub duration: Duration,
    /// Instead of real time, write this past span (ending now) as fast as the target accepts.
    #[arg(long, value_parser = duration)]
    pub backfill: Option<Duration>,
    /// Ramp stages `targets:duration,...`, e.g. 400:5m,500:10m,400:5m (the run lasts their sum).
    /// The report says stage by stage whether the system kept up (nothing failed, no late query
    /// round, the generator never a scrape interval behind) and the largest load it kept up with.
    #[arg(long, value_parser = stages)]
    pub stages: Option<StageList>,
    /// End a ramp at the first stage the system does not keep up with: its
    /// capacity is found, and a larger load would only exhaust the machine.
    #[arg(long, requires = "stages")]
    pub stop_when_behind: bool,
    /// Mean time between restarts of one target (its counters reset); 0 for never.
    #[arg(long, default_value = "6h", value_parser = duration)]
    pub reset_every: Duration,
    /// Largest jitter of scrape timestamps around the grid.
    #[arg(long, default_value = "20ms", value_parser = duration)]
    pub jitter: Duration,
    /// How often every rule is evaluated as an instant query.
    #[arg(long, default_value = "15s", value_parser = duration)]
    pub query_interval: Duration,
    /// Prometheus rule file whose exprs are the read load (default: the embedded node_exporter alerts).
    #[arg(long)]
    pub rules: Option<PathBuf>,
    /// No read load at all.
    #[arg(long)]
    pub no_queries: bool,
    /// Also run dashboard range queries over this window (e.g. 1h).
    #[arg(long, value_parser = duration)]
    pub range_queries: Option<Duration>,
    /// Remote-write protocol: 1.0 (snappy WriteRequest) or 2.0 (snappy
    /// io.prometheus.write.v2.Request with a symbols table).
    #[arg(long, default_value = "1.0", value_parser = WireProtocol::parse)]
    pub remote_write_protocol: WireProtocol,
    /// Parallel remote-write connections.
    #[arg(long, default_value_t = 4)]
    pub concurrency: usize,
    /// Samples per remote-write request.
    #[arg(long, default_value_t = 10_000)]
    pub batch_samples: usize,
    /// Seed for per-target offsets, phases and jitter.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// A recorded trace (gzip or zstd) instead of the embedded one.
    #[arg(long)]
    pub trace: Option<PathBuf>,
}

#[derive(Args, Debug, Clone, Default)]
pub struct AccessArgs {
    /// Tenant header `Name: value`, e.g. `X-Scope-OrgID: team-a` (repeatable).
    #[arg(long = "header")]
    pub headers: Vec<String>,
    /// Shortcut for the Mimir/Cortex tenant header X-Scope-OrgID.
    #[arg(long)]
    pub tenant: Option<String>,
    #[arg(long)]
    pub basic_auth_user: Option<String>,
    #[arg(long)]
    pub basic_auth_password: Option<String>,
    #[arg(long)]
    pub bearer_token: Option<String>,
}

impl AccessArgs {
    pub fn access(&self) -> anyhow::Result<Access> {
        let mut headers = Vec::new();
        for h in &self.headers {
            let (k, v) = h
                .split_once(':')
                .ok_or_else(|| anyhow::anyhow!("--header {h:?}: expected `Name: value`"))?;
            headers.push((k.trim().to_string(), v.trim().to_string()));
        }
        if let Some(t) = &self.tenant {
            headers.push(("X-Scope-OrgID".into(), t.clone()));
        }
        Ok(Access {
            headers,
            basic_auth: self
                .basic_auth_user
                .clone()
                .map(|u| (u, self.basic_auth_password.clone().unwrap_or_default())),
            bearer_token: self.bearer_token.clone(),
        })
    }
}

#[derive(Args, Debug)]
pub struct RunArgs {
    /// Remote-write URL, e.g. http://localhost:9090/api/v1/write; several,
    /// comma-separated (the nodes of a cluster), take requests in turn and
    /// a retry goes to the next.
    #[arg(long)]
    pub write_url: String,
    /// Prometheus query API base URL, e.g. http://localhost:9090; several,
    /// comma-separated, take queries in turn.
    #[arg(long)]
    pub query_url: Option<String>,
    /// Name of the target in reports.
    #[arg(long, default_value = "target")]
    pub name: String,
    /// PID of the target, to sample its CPU and RSS; several,
    /// comma-separated (the nodes of a cluster), are summed.
    #[arg(long, value_delimiter = ',')]
    pub pid: Vec<u32>,
    /// The target's data directory, to sample its disk use; several,
    /// comma-separated, are summed.
    #[arg(long, value_delimiter = ',')]
    pub data_dir: Vec<PathBuf>,
    #[command(flatten)]
    pub workload: WorkloadArgs,
    #[command(flatten)]
    pub access: AccessArgs,
    /// Write the JSON report here.
    #[arg(long)]
    pub report_json: Option<PathBuf>,
    /// Write a self-contained HTML page with plots over time here.
    #[arg(long)]
    pub report: Option<PathBuf>,
    /// No live progress line.
    #[arg(long)]
    pub quiet: bool,
}

impl WorkloadArgs {
    /// A run configuration for this workload (URLs and target left empty).
    pub fn config(&self, access: Access) -> anyhow::Result<RunConfig> {
        let rules = if self.no_queries {
            Vec::new()
        } else {
            match &self.rules {
                Some(p) => crate::rules::parse_rules(&std::fs::read_to_string(p)?)?,
                None => crate::rules::default_rules(),
            }
        };
        Ok(RunConfig {
            targets: self.targets,
            interval: self.scrape_interval,
            jitter: self.jitter,
            churn_percent: self.churn,
            churn_interval: self.churn_interval,
            replicas: self.replicas,
            tenants: usize::from(self.tenants),
            duration: self.duration,
            backfill: self.backfill,
            stages: self.stages.clone().map(|s| s.0).unwrap_or_default(),
            stop_when_behind: self.stop_when_behind,
            reset_every: self.reset_every,
            query_interval: self.query_interval,
            rules,
            range_window: if self.no_queries { None } else { self.range_queries },
            access,
            protocol: self.remote_write_protocol,
            concurrency: self.concurrency,
            batch_samples: self.batch_samples,
            seed: self.seed,
            trace: self.trace.clone(),
            ..RunConfig::default()
        })
    }
}

/// Entry point of `cairn bench`: `args` starts with the word `bench`.
pub fn main(args: impl IntoIterator<Item = String>) -> anyhow::Result<()> {
    let cli = BenchCli::parse_from(args);
    match cli.command {
        BenchCommand::Run(a) => {
            let mut cfg = a.workload.config(a.access.access()?)?;
            cfg.name = a.name.clone();
            cfg.write_url = a.write_url.clone();
            cfg.query_url = a.query_url.clone();
            cfg.processes = crate::processes::Processes::fixed(a.pid.clone());
            cfg.data_dirs = a.data_dir.clone();
            cfg.progress = !a.quiet;
            let report = crate::run::run(&cfg)?;
            print!("{}", report.summary());
            if let Some(p) = &a.report_json {
                std::fs::write(p, serde_json::to_vec_pretty(&report)?)?;
                eprintln!("JSON report: {}", p.display());
            }
            if let Some(p) = &a.report {
                std::fs::write(p, crate::html::render(std::slice::from_ref(&report)))?;
                eprintln!("HTML report: {}", p.display());
            }
            Ok(())
        }
        BenchCommand::Compare(a) => compare(&a),
        BenchCommand::Scrape(a) => {
            let reports = crate::scrape::run(&crate::scrape::ScrapeBenchConfig {
                cairn_bin: a.cairn_bin,
                prometheus_bin: a.prometheus_bin,
                targets: a.targets,
                interval: a.interval,
                duration: a.duration,
                rules: a.rules,
                trace: a.trace,
                work_dir: a.work_dir,
                quiet: a.quiet,
            })?;
            crate::scrape::print(&reports);
            if let Some(path) = a.report_json {
                std::fs::write(path, serde_json::to_vec_pretty(&reports)?)?;
            }
            Ok(())
        }
        BenchCommand::Forward(a) => {
            let reports = crate::forward::run(&crate::forward::ForwardBenchConfig {
                cairn_bin: a.cairn_bin,
                prometheus_bin: a.prometheus_bin,
                vmagent_bin: a.vmagent_bin,
                cairn_stores: a.cairn_stores,
                targets: a.targets,
                interval: a.interval,
                duration: a.duration,
                work_dir: a.work_dir,
                quiet: a.quiet,
            })?;
            crate::forward::print(&reports);
            if let Some(path) = a.report_json {
                std::fs::write(path, serde_json::to_vec_pretty(&reports)?)?;
            }
            Ok(())
        }
        BenchCommand::Record(a) => {
            let s = crate::record::record(&a.url, a.interval, a.duration, &a.out, !a.quiet)?;
            let t = crate::trace::Trace::load(&a.out)?;
            println!(
                "recorded {} scrapes ({} failed), {} series per scrape, into {}",
                s.scrapes,
                s.failed,
                t.series_count(),
                a.out.display()
            );
            Ok(())
        }
    }
}

/// Something `compare` measures: the run's configuration, and what keeps
/// the processes it started alive (stopped when dropped).
/// What keeps a contender running (dropped after its run), its run's
/// configuration, and the cluster a fault run kills a node of.
type Contender = (
    Box<dyn std::any::Any>,
    RunConfig,
    Option<std::sync::Arc<crate::systems::StartedSystem>>,
);

/// Starts (or, for `--target`, only names) one contender.
type Starter<'a> = Box<dyn FnOnce() -> anyhow::Result<Contender> + 'a>;

fn compare(a: &CompareArgs) -> anyhow::Result<()> {
    use crate::systems::{ClusterShape, VmClusterBins};
    let base = a.workload.config(a.access.access()?)?;
    let work_dir = a.work_dir.as_deref();
    let single = |t: crate::targets::StartedTarget| -> Contender {
        eprintln!("started {} (pid {}) on {}", t.name, t.pid(), t.base_url());
        let config = RunConfig {
            name: t.name.clone(),
            write_url: t.write_url(),
            query_url: Some(t.base_url()),
            processes: crate::processes::Processes::fixed(vec![t.pid()]),
            data_dirs: vec![t.data_dir.clone()],
            ..base.clone()
        };
        (Box::new(t), config, None)
    };
    let cluster = |s: crate::systems::StartedSystem| -> Contender {
        eprintln!(
            "started {} (pids {:?}): writes to {}, queries to {}",
            s.name,
            s.pids(),
            s.write_url(),
            s.query_url()
        );
        let config = RunConfig {
            name: s.name.clone(),
            write_url: s.write_url(),
            query_url: Some(s.query_url()),
            processes: s.measured.clone(),
            data_dirs: s.data_dirs.clone(),
            ..base.clone()
        };
        (Box::new(()), config, Some(std::sync::Arc::new(s)))
    };
    let shape = ClusterShape {
        nodes: usize::from(a.cluster_nodes),
        replication_factor: usize::from(a.replication_factor),
        shard_size: a.cluster_shard_size,
    };
    // VictoriaMetrics names tenants in the URL, and the Mimir started here
    // runs single-tenant: neither would keep the bench's tenants apart.
    anyhow::ensure!(
        base.tenants == 1 || !(a.start_victoriametrics || a.start_vm_cluster || a.start_mimir.is_some()),
        "--tenants needs targets that take the tenant from X-Scope-OrgID (Cairn)"
    );
    anyhow::ensure!(
        shape.replication_factor <= shape.nodes,
        "--replication-factor {} exceeds --cluster-nodes {}",
        shape.replication_factor,
        shape.nodes
    );

    let mut starters: Vec<Starter> = Vec::new();
    if let Some(bin) = &a.start_cairn {
        starters.push(Box::new(move || {
            Ok(single(crate::targets::start_cairn(bin, work_dir)?))
        }));
    }
    if a.start_victoriametrics {
        starters.push(Box::new(move || {
            let bin = a.victoriametrics_bin.as_deref();
            Ok(single(crate::targets::start_victoriametrics(bin, work_dir)?))
        }));
    }
    if let Some(bin) = &a.start_cairn_cluster {
        starters.push(Box::new(move || {
            Ok(cluster(crate::systems::start_cairn_cluster(
                bin,
                &a.etcd_bin,
                shape,
                work_dir,
            )?))
        }));
    }
    if let (true, Some(vmstorage), Some(vminsert), Some(vmselect)) =
        (a.start_vm_cluster, &a.vmstorage_bin, &a.vminsert_bin, &a.vmselect_bin)
    {
        let bins = VmClusterBins {
            vmstorage: vmstorage.clone(),
            vminsert: vminsert.clone(),
            vmselect: vmselect.clone(),
        };
        starters.push(Box::new(move || {
            Ok(cluster(crate::systems::start_vm_cluster(&bins, shape, work_dir)?))
        }));
    }
    if let Some(bin) = &a.start_mimir {
        starters.push(Box::new(move || {
            Ok(cluster(crate::systems::start_mimir(bin, shape, work_dir)?))
        }));
    }
    for spec in &a.target_specs {
        let (name, urls) = spec
            .split_once('=')
            .ok_or_else(|| anyhow::anyhow!("--target {spec:?}: expected name=<write-url>[,<query-url>]"))?;
        let (write, query) = match urls.split_once(',') {
            Some((w, q)) => (w.to_string(), Some(q.to_string())),
            None => (urls.to_string(), None),
        };
        let config = RunConfig {
            name: name.to_string(),
            write_url: write,
            query_url: query,
            ..base.clone()
        };
        starters.push(Box::new(move || Ok((Box::new(()), config, None))));
    }
    anyhow::ensure!(
        starters.len() >= 2,
        "compare needs two or more targets (--target, --start-cairn, --start-victoriametrics, \
         --start-cairn-cluster, --start-vm-cluster, --start-mimir)"
    );
    let reports = if a.parallel {
        let contenders = starters.into_iter().map(|s| s()).collect::<anyhow::Result<Vec<_>>>()?;
        std::thread::scope(|s| {
            let handles: Vec<_> = contenders
                .iter()
                .map(|(_, c, _)| {
                    let c = RunConfig {
                        progress: false,
                        ..c.clone()
                    };
                    s.spawn(move || crate::run::run(&c))
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().map_err(|_| anyhow::anyhow!("bench thread panicked"))?)
                .collect::<anyhow::Result<Vec<_>>>()
        })?
    } else {
        // One system at a time, each started just before its run and
        // stopped after it, so no other system's processes share the machine.
        let mut out = Vec::new();
        for start in starters {
            let (started, c, system) = start()?;
            eprintln!("== {} ==", c.name);
            let c = RunConfig {
                progress: !a.quiet,
                ..c
            };
            let fault = a.kill_storage_node_after.zip(system.as_ref());
            let report = match fault {
                Some((after, system)) => with_storage_node_down(system, after, a.kill_storage_node_for, &c)?,
                None => crate::run::run(&c)?,
            };
            out.push(report);
            drop(system);
            drop(started);
        }
        out
    };
    for r in &reports {
        print!("{}", r.summary());
    }
    print!("{}", crate::report::ratios(&reports));
    if let Some(p) = &a.report_json {
        std::fs::write(p, serde_json::to_vec_pretty(&reports)?)?;
        eprintln!("JSON report: {}", p.display());
    }
    if let Some(p) = &a.report {
        std::fs::write(p, crate::html::render(&reports))?;
        eprintln!("HTML report: {}", p.display());
    }
    Ok(())
}

/// Runs `config` while, `after` into it, the last storage node of `system`
/// is killed (`-9`) and `down_for` later started again (at the latest when
/// the run ends); the faults go into the run's report, and so does how many
/// samples of the run the system gives back afterwards.
fn with_storage_node_down(
    system: &crate::systems::StartedSystem,
    after: Duration,
    down_for: Duration,
    config: &RunConfig,
) -> anyhow::Result<crate::report::Report> {
    use std::sync::atomic::{AtomicBool, Ordering};
    let done = AtomicBool::new(false);
    let started = std::time::Instant::now();
    // Sleeps until `at` into the run; false when the run ended first.
    let until = |at: Duration| {
        while started.elapsed() < at {
            if done.load(Ordering::Relaxed) {
                return false;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        true
    };
    let (report, faults) = std::thread::scope(|s| {
        let faults = s.spawn(|| -> anyhow::Result<Vec<String>> {
            let mut faults = Vec::new();
            if !until(after) {
                return Ok(faults);
            }
            let node = system.kill_storage_node()?;
            faults.push(format!(
                "{node} killed (-9) at {:.0} s",
                started.elapsed().as_secs_f64()
            ));
            eprintln!("{} {}", system.name, faults[0]);
            until(after + down_for);
            system.restart_storage_node()?;
            faults.push(format!(
                "{node} started again at {:.0} s",
                started.elapsed().as_secs_f64()
            ));
            eprintln!("{} {}", system.name, faults[1]);
            Ok(faults)
        });
        let report = crate::run::run(config);
        done.store(true, Ordering::Relaxed);
        (report, faults.join())
    });
    let faults = faults.map_err(|_| anyhow::anyhow!("the fault thread panicked"))??;
    let mut report = report?;
    report.faults = faults;
    if let Some(url) = &config.query_url {
        // VictoriaMetrics answers no sample of the last 30 s
        // (`-search.latencyOffset`): the run's end must be older.
        let (start_ms, end_ms) = (report.workload.data_start_ms, report.workload.data_end_ms);
        let readable_at = end_ms + 35_000;
        let wait_ms = readable_at - crate::run::now_ms();
        std::thread::sleep(Duration::from_millis(wait_ms.max(0) as u64));
        let mut stored = 0;
        for tenant in 0..config.tenants {
            let client = crate::query::QueryClient::new(url, config.tenant_access(tenant))?;
            match client.samples_stored(start_ms, end_ms) {
                Ok(n) => stored += n,
                Err(e) => {
                    eprintln!("{}: the samples stored could not be counted: {e}", system.name);
                    return Ok(report);
                }
            }
        }
        report.samples_read_back = Some(stored);
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn flags_are_consistent() {
        BenchCli::command().debug_assert();
    }

    #[test]
    fn parses_a_full_run_command() {
        let cli = BenchCli::try_parse_from([
            "bench",
            "run",
            "--write-url",
            "http://h:1/api/v1/write",
            "--query-url",
            "http://h:1",
            "--targets",
            "50",
            "--scrape-interval",
            "10s",
            "--churn",
            "5",
            "--churn-interval",
            "5m",
            "--replicas",
            "2",
            "--stages",
            "40:1m,60:2m",
            "--tenant",
            "t1",
            "--header",
            "X-A: b",
            "--basic-auth-user",
            "u",
            "--basic-auth-password",
            "p",
            "--concurrency",
            "8",
            "--remote-write-protocol",
            "2.0",
        ])
        .unwrap();
        let BenchCommand::Run(a) = cli.command else {
            panic!("not run")
        };
        let access = a.access.access().unwrap();
        assert_eq!(
            access.headers,
            [
                ("X-A".to_string(), "b".to_string()),
                ("X-Scope-OrgID".to_string(), "t1".to_string())
            ]
        );
        assert_eq!(access.basic_auth, Some(("u".into(), "p".into())));
        let cfg = a.workload.config(access).unwrap();
        assert_eq!(cfg.targets, 50);
        assert_eq!(cfg.interval, Duration::from_secs(10));
        assert_eq!(cfg.stages.len(), 2);
        assert_eq!(cfg.replicas, 2);
        assert_eq!(cfg.rules.len(), 35);
        assert_eq!(cfg.concurrency, 8);
        assert_eq!(cfg.protocol, WireProtocol::V2);
    }
}
