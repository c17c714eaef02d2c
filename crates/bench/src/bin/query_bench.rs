//! `cairn-query-bench`: backfills the same node_exporter fleet into Cairn and
//! VictoriaMetrics, keeps both running, and times the same PromQL queries
//! against both, interleaved: the node_exporter alert rules as instant
//! queries at many evaluation times, and Grafana node-exporter dashboard
//! panels as range queries over 1 h, 6 h and 24 h windows (step and
//! `$__rate_interval` computed as Grafana does).
//!
//! With `--servers cairn,cairn-bucket` and `--bucket-url`, the second Cairn
//! keeps its settled days in a bucket (`--end-at-midnight` puts the data in
//! days that are over): its queries are timed cold (each with an empty
//! cache, bytes and requests fetched from the bucket counted) and warm,
//! against the same data on the first Cairn's local disk.
//!
//! Latency is measured by the client: request sent to response body read.
//! VictoriaMetrics' response cache is disabled (`-search.disableCache`) unless
//! `--vm-cache` is given, so both servers evaluate every query.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context, bail};
use cairn_bench::fleet::{Fleet, FleetConfig, mix};
use cairn_bench::procfs;
use cairn_bench::sender::{self, Spool};
use cairn_bench::trace::Trace;
use clap::Parser;
use serde_json::{Value, json};

const ALERTS: &str = "/work/shared/benchdata/prometheus-benchmark-alerts.yaml";
/// `--storage.settle-time` of the Cairn servers: a day without writes for
/// this long is merged into one part (and uploaded, once it is over).
const CAIRN_SETTLE: &str = "10s";

#[derive(Parser, Debug)]
#[command(about = "Cairn vs VictoriaMetrics PromQL query benchmark (same data, same run, interleaved)")]
struct Cli {
    /// Cairn release binary.
    #[arg(long, default_value = "target/release/cairn")]
    cairn_bin: PathBuf,
    /// VictoriaMetrics single-node binary (Debian package `victoria-metrics`).
    #[arg(long, default_value = "/usr/bin/victoria-metrics")]
    vm_bin: PathBuf,
    /// Which servers to query (`cairn`, `vm`, `cairn-bucket`).
    #[arg(long, value_delimiter = ',', default_value = "cairn,vm")]
    servers: Vec<String>,
    /// The bucket of `cairn-bucket` (`s3://bucket/prefix` or `file:///dir`).
    #[arg(long)]
    bucket_url: Option<String>,
    /// The S3-compatible server of `--bucket-url` (`http://host:port`).
    #[arg(long)]
    bucket_endpoint: Option<String>,
    /// End the data at the last midnight (UTC) instead of now, so its days
    /// are over and `cairn-bucket` uploads them.
    #[arg(long)]
    end_at_midnight: bool,
    #[arg(long, default_value = cairn_bench::DEFAULT_TRACE)]
    trace: PathBuf,
    /// Alerting rules whose `expr`s are the instant-query class.
    #[arg(long, default_value = ALERTS)]
    alerts: PathBuf,
    /// Simulated node_exporter targets (507 series each).
    #[arg(long, default_value_t = 50)]
    targets: usize,
    /// Hours of data to backfill, ending now.
    #[arg(long, default_value_t = 24.0)]
    hours: f64,
    /// Scrape interval in seconds.
    #[arg(long, default_value_t = 15)]
    interval: i64,
    #[arg(long, default_value_t = 3)]
    jitter_ms: i64,
    #[arg(long, default_value_t = 4)]
    steps_per_request: u64,
    #[arg(long, default_value_t = 4)]
    workers: usize,
    /// Evaluation times per alert rule.
    #[arg(long, default_value_t = 20)]
    alert_times: usize,
    /// Window end times per dashboard query and window.
    #[arg(long, default_value_t = 8)]
    dashboard_times: usize,
    /// Only run queries whose text contains this string.
    #[arg(long)]
    filter: Option<String>,
    /// Keep the data here and reuse it on later runs (skips the backfill when
    /// the directory already holds a finished backfill of the same shape).
    #[arg(long)]
    data_root: Option<PathBuf>,
    /// Where spools and temporary data directories go.
    #[arg(long, default_value = "/tmp")]
    work_dir: PathBuf,
    /// Leave VictoriaMetrics' response cache on.
    #[arg(long)]
    vm_cache: bool,
    /// Query data fresh from the backfill: no flush, no waiting for merges and
    /// no warm-up; queries start 5 s after the last server's last write.
    /// Servers load in `--servers` order, so the last is the freshest.
    #[arg(long, conflicts_with = "data_root")]
    fresh: bool,
    /// JSON report path.
    #[arg(long, default_value = "cairn-query-bench.json")]
    report: PathBuf,
    #[arg(long, default_value_t = 42)]
    seed: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Cairn,
    /// Cairn keeping its settled days in `--bucket-url`.
    CairnBucket,
    Vm,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Cairn => "Cairn",
            Kind::CairnBucket => "Cairn (bucket)",
            Kind::Vm => "VictoriaMetrics",
        }
    }

    fn is_cairn(self) -> bool {
        matches!(self, Kind::Cairn | Kind::CairnBucket)
    }
}

struct Server {
    kind: Kind,
    bin: PathBuf,
    data: PathBuf,
    port: u16,
    log: PathBuf,
    vm_cache: bool,
    /// `--storage.object-store.*` flags of a `CairnBucket`.
    bucket_flags: Vec<String>,
    child: Option<Child>,
}

fn free_port() -> anyhow::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

fn http() -> reqwest::blocking::Client {
    reqwest::blocking::Client::builder()
        .timeout(Duration::from_secs(300))
        .build()
        .unwrap_or_else(|_| reqwest::blocking::Client::new())
}

impl Server {
    fn new(kind: Kind, bin: &Path, root: &Path, vm_cache: bool, bucket_flags: Vec<String>) -> anyhow::Result<Self> {
        let data = root.join(match kind {
            Kind::Cairn => "cairn-data",
            Kind::CairnBucket => "cairn-bucket-data",
            Kind::Vm => "vm-data",
        });
        std::fs::create_dir_all(&data)?;
        Ok(Self {
            kind,
            bin: bin.to_path_buf(),
            log: root.join(format!("{}.log", kind.name())),
            data,
            port: free_port()?,
            vm_cache,
            bucket_flags,
            child: None,
        })
    }

    fn base(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    fn pid(&self) -> u32 {
        self.child.as_ref().map_or(0, |c| c.id())
    }

    fn start(&mut self) -> anyhow::Result<()> {
        if !self.bin.exists() {
            match self.kind {
                Kind::Cairn | Kind::CairnBucket => bail!(
                    "{} not found: build it with `cargo build --release -p cairn`",
                    self.bin.display()
                ),
                Kind::Vm => bail!(
                    "{} not found: install the Debian package `victoria-metrics` or pass --vm-bin",
                    self.bin.display()
                ),
            }
        }
        let log = std::fs::OpenOptions::new().create(true).append(true).open(&self.log)?;
        let mut cmd = Command::new(&self.bin);
        let addr = format!("127.0.0.1:{}", self.port);
        match self.kind {
            Kind::Cairn | Kind::CairnBucket => {
                cmd.arg("--storage.path")
                    .arg(&self.data)
                    .arg("--http.listen-addr")
                    .arg(&addr)
                    .args([
                        "--storage.flush-interval",
                        "5s",
                        "--storage.retention",
                        "100y",
                        "--storage.settle-time",
                        CAIRN_SETTLE,
                        "--log.level",
                        "warn",
                    ])
                    .args(&self.bucket_flags);
            }
            Kind::Vm => {
                cmd.arg(format!("-storageDataPath={}", self.data.display()))
                    .arg(format!("-httpListenAddr={addr}"))
                    .args([
                        "-retentionPeriod=100y",
                        "-search.maxSeries=100000000",
                        "-search.maxQueryDuration=300s",
                        "-loggerLevel=ERROR",
                    ]);
                if !self.vm_cache {
                    cmd.arg("-search.disableCache");
                }
            }
        }
        let child = cmd
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()
            .with_context(|| format!("start {}", self.bin.display()))?;
        self.child = Some(child);
        let url = match self.kind {
            Kind::Cairn | Kind::CairnBucket => format!("{}/-/ready", self.base()),
            Kind::Vm => format!("{}/health", self.base()),
        };
        let c = http();
        let t = Instant::now();
        loop {
            if let Some(st) = self.child.as_mut().and_then(|c| c.try_wait().ok().flatten()) {
                bail!(
                    "{} exited during startup ({st}); see {}",
                    self.kind.name(),
                    self.log.display()
                );
            }
            if c.get(&url).send().is_ok_and(|r| r.status().is_success()) {
                return Ok(());
            }
            if t.elapsed() > Duration::from_secs(900) {
                bail!("{} not ready after 900 s", self.kind.name());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = Command::new("kill").args(["-TERM", &child.id().to_string()]).status();
            let t = Instant::now();
            while t.elapsed() < Duration::from_secs(300) {
                if let Ok(Some(_)) = child.try_wait() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// The sum of the `/metrics` samples whose line starts with `prefix`.
    fn metric_sum(&self, prefix: &str) -> f64 {
        let Ok(text) = http()
            .get(format!("{}/metrics", self.base()))
            .send()
            .and_then(|r| r.text())
        else {
            return 0.0;
        };
        text.lines()
            .filter(|l| l.starts_with(prefix))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .sum()
    }

    /// Bytes and GET requests read from the bucket so far.
    fn bucket_reads(&self) -> (f64, f64) {
        (
            self.metric_sum("cairn_object_store_read_bytes_total"),
            self.metric_sum("cairn_object_store_requests_total{operation=\"get\"}"),
        )
    }

    /// Empties the bucket cache under the running server: each chunk read
    /// next is a miss, fetched from the bucket again.
    fn drop_bucket_cache(&self) -> anyhow::Result<()> {
        for entry in std::fs::read_dir(self.data.join("cache"))? {
            std::fs::remove_file(entry?.path())?;
        }
        Ok(())
    }

    /// Makes the server persist what it holds in memory and waits until the
    /// data directory stops changing (flushes and background merges done).
    fn flush_and_settle(&self, quiet_for: Duration) -> anyhow::Result<f64> {
        let t = Instant::now();
        if self.kind == Kind::Vm {
            http().get(format!("{}/internal/force_flush", self.base())).send()?;
        }
        let mut last = procfs::du_bytes(&self.data);
        let mut stable_since = Instant::now();
        while t.elapsed() < Duration::from_secs(600) {
            std::thread::sleep(Duration::from_millis(500));
            let now = procfs::du_bytes(&self.data);
            let merging = match self.kind {
                Kind::Vm => self.metric_sum("vm_active_merges") > 0.0,
                Kind::CairnBucket => {
                    self.metric_sum("cairn_object_store_upload_backlog_parts") > 0.0
                        || self.metric_sum("cairn_object_store_uploaded_parts_total") == 0.0
                }
                Kind::Cairn => false,
            };
            if now != last || merging {
                last = now;
                stable_since = Instant::now();
            } else if stable_since.elapsed() >= quiet_for {
                break;
            }
        }
        Ok(t.elapsed().as_secs_f64())
    }

    /// Runs one query; returns (latency, series in the result).
    fn query(&self, c: &reqwest::blocking::Client, q: &Query) -> anyhow::Result<(Duration, usize)> {
        let mut params: Vec<(&str, String)> = vec![("query", q.expr.clone())];
        let path = match q.range {
            None => {
                params.push(("time", secs(q.end)));
                "/api/v1/query"
            }
            Some((start, step)) => {
                params.push(("start", secs(start)));
                params.push(("end", secs(q.end)));
                params.push(("step", secs(step)));
                "/api/v1/query_range"
            }
        };
        let t = Instant::now();
        let resp = c.post(format!("{}{path}", self.base())).form(&params).send()?;
        let status = resp.status();
        let body = resp.bytes()?;
        let took = t.elapsed();
        if !status.is_success() {
            bail!(
                "{} {status}: {}",
                self.kind.name(),
                String::from_utf8_lossy(&body).chars().take(300).collect::<String>()
            );
        }
        let v: Value = serde_json::from_slice(&body)?;
        let n = v["data"]["result"].as_array().map_or(0, Vec::len);
        Ok((took, n))
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn secs(ms: i64) -> String {
    format!("{}.{:03}", ms.div_euclid(1000), ms.rem_euclid(1000))
}

/// One timed query: instant (`range == None`) at `end`, or a range query.
#[derive(Debug, Clone)]
struct Query {
    class: &'static str,
    /// The query as written, before Grafana variables are filled in.
    template: String,
    expr: String,
    end: i64,
    /// `(start, step)` of a range query.
    range: Option<(i64, i64)>,
}

/// The `expr:` lines of a Prometheus rules file (every rule's expression is
/// on one line in the benchmark file).
fn alert_exprs(path: &Path) -> anyhow::Result<Vec<String>> {
    let text = std::fs::read_to_string(path).with_context(|| format!("read {}", path.display()))?;
    let mut out = Vec::new();
    for line in text.lines() {
        let t = line.trim_start();
        if let Some(e) = t.strip_prefix("expr:") {
            let e = e.trim();
            let e = e
                .strip_prefix('\'')
                .and_then(|e| e.strip_suffix('\''))
                .or_else(|| e.strip_prefix('"').and_then(|e| e.strip_suffix('"')))
                .unwrap_or(e);
            out.push(e.to_string());
        }
    }
    if out.is_empty() {
        bail!("no rule expressions in {}", path.display());
    }
    Ok(out)
}

/// Panels of Grafana's "Node Exporter Full" dashboard for one host
/// (`$node`), and fleet overview panels over every host.
const DASHBOARD: &[&str] = &[
    // Node Exporter Full, one host.
    r#"100 * (1 - avg(rate(node_cpu_seconds_total{mode="idle", instance="$node"}[$__rate_interval])))"#,
    r#"sum by(instance) (irate(node_cpu_seconds_total{instance="$node",job="$job", mode="system"}[$__rate_interval])) / on(instance) group_left sum by (instance)((irate(node_cpu_seconds_total{instance="$node",job="$job"}[$__rate_interval])))"#,
    r#"node_memory_MemTotal_bytes{instance="$node",job="$job"} - node_memory_MemFree_bytes{instance="$node",job="$job"} - (node_memory_Cached_bytes{instance="$node",job="$job"} + node_memory_Buffers_bytes{instance="$node",job="$job"} + node_memory_SReclaimable_bytes{instance="$node",job="$job"})"#,
    r#"irate(node_network_receive_bytes_total{instance="$node",job="$job"}[$__rate_interval])*8"#,
    r#"irate(node_disk_read_bytes_total{instance="$node",job="$job",device=~"(/dev/)?(mmcblk.p.+|nvme.+|rbd.+|sd.+|vd.+|xvd.+|dm-.+|md.+|dasd.+)"}[$__rate_interval])"#,
    r#"node_load1{instance="$node",job="$job"}"#,
    r#"100 - ((node_filesystem_avail_bytes{instance="$node",job="$job",mountpoint="/",fstype!="rootfs"} * 100) / node_filesystem_size_bytes{instance="$node",job="$job",mountpoint="/",fstype!="rootfs"})"#,
    r#"rate(node_context_switches_total{instance="$node",job="$job"}[$__rate_interval])"#,
    // Fleet overview, every host.
    r#"100 - avg by (instance) (rate(node_cpu_seconds_total{job="$job",mode="idle"}[$__rate_interval])) * 100"#,
    r#"(1 - node_memory_MemAvailable_bytes{job="$job"} / node_memory_MemTotal_bytes{job="$job"}) * 100"#,
    r#"sum by (instance) (rate(node_network_receive_bytes_total{job="$job",device!="lo"}[$__rate_interval]))"#,
    r#"topk(10, rate(node_disk_io_time_seconds_total{job="$job"}[$__rate_interval]))"#,
    r#"sum by (mode) (rate(node_cpu_seconds_total{job="$job"}[$__rate_interval]))"#,
    r#"max by (instance) (node_load5{job="$job"})"#,
    r#"quantile(0.9, rate(node_disk_written_bytes_total{job="$job"}[$__rate_interval]))"#,
];

/// Grafana's `roundInterval` (public/app/core/utils/kbn), in ms.
fn grafana_round_interval(ms: i64) -> i64 {
    const TABLE: &[(i64, i64)] = &[
        (15, 10),
        (35, 20),
        (75, 50),
        (150, 100),
        (350, 200),
        (750, 500),
        (1_500, 1_000),
        (3_500, 2_000),
        (7_500, 5_000),
        (12_500, 10_000),
        (17_500, 15_000),
        (25_000, 20_000),
        (45_000, 30_000),
        (90_000, 60_000),
        (210_000, 120_000),
        (450_000, 300_000),
        (750_000, 600_000),
        (1_050_000, 900_000),
        (1_500_000, 1_200_000),
        (2_700_000, 1_800_000),
        (5_400_000, 3_600_000),
        (9_000_000, 7_200_000),
        (16_200_000, 10_800_000),
        (32_400_000, 21_600_000),
        (86_400_000, 43_200_000),
    ];
    TABLE
        .iter()
        .find(|(limit, _)| ms <= *limit)
        .map_or(86_400_000, |&(_, r)| r)
}

/// Step and `$__rate_interval` Grafana picks for a window, with about 1,000
/// data points per panel and a 15 s scrape interval as the minimum step.
fn grafana_step(window_ms: i64, scrape_ms: i64) -> (i64, i64) {
    let step = grafana_round_interval(window_ms / 1000).max(scrape_ms);
    let rate_interval = (step + scrape_ms).max(4 * scrape_ms);
    (step, rate_interval)
}

fn prom_duration(ms: i64) -> String {
    if ms % 60_000 == 0 {
        format!("{}m", ms / 60_000)
    } else {
        format!("{}s", ms / 1000)
    }
}

fn build_queries(cli: &Cli, start_ms: i64, end_ms: i64) -> anyhow::Result<Vec<Query>> {
    let scrape_ms = cli.interval * 1000;
    let span = end_ms - start_ms;
    let mut out = Vec::new();
    let mut r = cli.seed;
    let mut rand = move |n: i64| -> i64 {
        r = mix(r);
        (r % n.max(1) as u64) as i64
    };
    // Alert rules: evaluated within the newest half of the data (rule
    // evaluation happens at "now"; several times so no single block decides).
    for e in alert_exprs(&cli.alerts)? {
        for _ in 0..cli.alert_times {
            let t = end_ms - rand(span / 2);
            out.push(Query {
                class: "alert rules (instant)",
                template: e.clone(),
                expr: e.clone(),
                end: t,
                range: None,
            });
        }
    }
    let windows: [(&'static str, i64); 3] = [
        ("dashboard 1h (range)", 3_600_000),
        ("dashboard 6h (range)", 6 * 3_600_000),
        ("dashboard 24h (range)", 24 * 3_600_000),
    ];
    for (class, window) in windows {
        let (step, rate_interval) = grafana_step(window, scrape_ms);
        for tpl in DASHBOARD {
            for _ in 0..cli.dashboard_times {
                let node = Fleet::instance(rand(cli.targets as i64) as usize);
                let expr = tpl
                    .replace("$__rate_interval", &prom_duration(rate_interval))
                    .replace("$node", &node)
                    .replace("$job", "node");
                // Grafana aligns the window to the step. The window ends in
                // the newest hour of data (or anywhere, if it is shorter).
                let slack = (span - window).clamp(0, 3_600_000);
                let end = (end_ms - rand(slack.max(1))) / step * step;
                let start = (end - window) / step * step;
                out.push(Query {
                    class,
                    template: tpl.to_string(),
                    expr,
                    end,
                    range: Some((start, step)),
                });
            }
        }
    }
    if let Some(f) = &cli.filter {
        out.retain(|q| q.expr.contains(f.as_str()));
    }
    Ok(out)
}

/// What a finished backfill looked like, stored next to reusable data.
fn meta_path(root: &Path) -> PathBuf {
    root.join("query-bench-meta.json")
}

fn backfill(cli: &Cli, servers: &mut [Server], root: &Path) -> anyhow::Result<(i64, i64)> {
    let shape = json!({ "targets": cli.targets, "hours": cli.hours, "interval": cli.interval,
                        "jitter_ms": cli.jitter_ms, "seed": cli.seed });
    if let Ok(text) = std::fs::read_to_string(meta_path(root)) {
        let meta: Value = serde_json::from_str(&text)?;
        let have: Vec<&str> = meta["servers"]
            .as_array()
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        if meta["shape"] == shape && servers.iter().all(|s| have.contains(&s.kind.name())) {
            let (start, end) = (meta["start_ms"].as_i64(), meta["end_ms"].as_i64());
            if let (Some(start), Some(end)) = (start, end) {
                println!("reusing the backfill in {} ({} .. {})", root.display(), start, end);
                for s in servers.iter_mut() {
                    s.start()?;
                }
                return Ok((start, end));
            }
        }
        bail!(
            "{} holds a different backfill; remove it or pick another --data-root",
            root.display()
        );
    }
    let trace = Arc::new(Trace::load(&cli.trace)?);
    let interval_ms = cli.interval * 1000;
    let steps = ((cli.hours * 3600.0 * 1000.0) / interval_ms as f64).round() as u64;
    let last = if cli.end_at_midnight {
        now_ms() / 86_400_000 * 86_400_000
    } else {
        now_ms()
    };
    let end = (last / interval_ms) * interval_ms - 2 * interval_ms;
    let start = end - steps as i64 * interval_ms;
    let fleet = Fleet::new(
        trace,
        FleetConfig {
            targets: cli.targets,
            start_ms: start,
            interval_ms,
            jitter_ms: cli.jitter_ms,
            job: "node".into(),
            seed: cli.seed,
        },
    );
    println!(
        "workload: {} targets x {} series = {} series, {steps} scrapes each ({} h at {} s) = {} samples",
        cli.targets,
        fleet.series_per_target(),
        fleet.total_series(),
        cli.hours,
        cli.interval,
        fleet.total_series() as u64 * steps
    );
    let t = Instant::now();
    let spool = Spool::build(&fleet, steps, cli.steps_per_request, cli.workers, &cli.work_dir)?;
    println!(
        "spool: {} requests, {:.1} MB, built in {:.1} s",
        spool.requests,
        spool.bytes as f64 / 1e6,
        t.elapsed().as_secs_f64()
    );
    let tck = procfs::clk_tck();
    let mut ingest_cpu = Vec::new();
    for s in servers.iter_mut() {
        s.start()?;
        let cpu0 = procfs::cpu_seconds(s.pid(), tck).unwrap_or(0.0);
        // One server ingests at a time, so neither slows the other.
        let name = s.kind.name();
        let progress = |acked: u64| -> bool {
            print!("\r  {name}: {:5.1}%", acked as f64 * 100.0 / spool.samples as f64);
            let _ = std::io::stdout().flush();
            true
        };
        let r = sender::send_spool(&spool, &format!("{}/api/v1/write", s.base()), Some(&progress))?;
        println!(
            "\r  {}: {} samples in {:.1} s, {} failed",
            s.kind.name(),
            r.samples_acked,
            r.elapsed.as_secs_f64(),
            r.samples_failed
        );
        if r.samples_failed > 0 {
            bail!("{} rejected samples: {:?}", s.kind.name(), r.first_errors);
        }
        if !cli.fresh {
            let quiet = Duration::from_secs(if s.kind.is_cairn() { 25 } else { 10 });
            let took = s.flush_and_settle(quiet)?;
            println!("  {} settled in {took:.1} s", s.kind.name());
        }
        // Ingestion, flushes, merges and uploads, less the quiet wait's idle.
        let cpu = procfs::cpu_seconds(s.pid(), tck).unwrap_or(0.0) - cpu0;
        ingest_cpu.push((s.kind.name(), cpu * 1e6 / r.samples_acked.max(1) as f64));
    }
    for (name, per_million) in &ingest_cpu {
        println!("  {name}: {per_million:.2} CPU s per million samples ingested and settled");
    }
    if cli.fresh {
        std::thread::sleep(Duration::from_secs(5));
        // Unsettled data is not kept for reuse.
        return Ok((start, end));
    }
    let names: Vec<&str> = servers.iter().map(|s| s.kind.name()).collect();
    std::fs::write(
        meta_path(root),
        serde_json::to_string_pretty(&json!({ "shape": shape, "start_ms": start, "end_ms": end, "servers": names }))?,
    )?;
    Ok((start, end))
}

/// Times the first query of each distinct text once on every server, the
/// bucket server `b` with its cache emptied before each: a dashboard or rule
/// over days that only the bucket holds, opened for the first time. Prints
/// and returns, per class, the latency percentiles and what each query
/// fetched from the bucket.
fn cold_pass(
    servers: &[Server],
    b: usize,
    queries: &[Query],
    client: &reqwest::blocking::Client,
) -> anyhow::Result<Value> {
    /// Per class: latencies in ms per server, and (bytes, GETs) each query fetched.
    type Cold = (BTreeMap<&'static str, Vec<f64>>, Vec<(f64, f64)>);
    let mut by_class: BTreeMap<&'static str, Cold> = BTreeMap::new();
    let mut seen = std::collections::HashSet::new();
    for q in queries {
        if !seen.insert((q.class, q.template.clone())) {
            continue;
        }
        let (lat, fetched) = by_class.entry(q.class).or_default();
        for (i, s) in servers.iter().enumerate() {
            if i == b {
                s.drop_bucket_cache()?;
            }
            let before = s.bucket_reads();
            let (took, _) = s.query(client, q)?;
            lat.entry(s.kind.name()).or_default().push(took.as_secs_f64() * 1000.0);
            if i == b {
                let after = s.bucket_reads();
                fetched.push((after.0 - before.0, after.1 - before.1));
            }
        }
    }
    println!("\ncold: each distinct query once, the bucket's cache emptied before each (ms)\n");
    let mut out = serde_json::Map::new();
    for (class, (lat, fetched)) in &by_class {
        let mut row = format!("| {class} | {} |", fetched.len());
        let mut cj = serde_json::Map::new();
        for s in servers {
            let mut v = lat.get(s.kind.name()).cloned().unwrap_or_default();
            v.sort_by(f64::total_cmp);
            let (p50, p90, p99) = (percentile(&v, 50.0), percentile(&v, 90.0), percentile(&v, 99.0));
            row.push_str(&format!(" {} {p50:.1} / {p90:.1} / {p99:.1} |", s.kind.name()));
            cj.insert(
                s.kind.name().into(),
                json!({ "p50_ms": p50, "p90_ms": p90, "p99_ms": p99 }),
            );
        }
        let n = fetched.len().max(1) as f64;
        let (bytes, gets) = fetched.iter().fold((0.0, 0.0), |a, f| (a.0 + f.0, a.1 + f.1));
        row.push_str(&format!(" {:.0} KB, {:.1} GETs per query |", bytes / n / 1e3, gets / n));
        cj.insert("bucket_bytes_per_query".into(), json!(bytes / n));
        cj.insert("bucket_gets_per_query".into(), json!(gets / n));
        println!("{row}");
        out.insert(class.to_string(), Value::Object(cj));
    }
    Ok(Value::Object(out))
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

#[derive(Default)]
struct ClassStats {
    /// Latencies in ms per server.
    lat: BTreeMap<&'static str, Vec<f64>>,
    errors: BTreeMap<&'static str, usize>,
    /// Queries where the servers returned a different number of series.
    count_mismatch: usize,
    queries: usize,
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    if cli.targets == 0 {
        bail!("--targets must be positive");
    }
    let tmp;
    let root = match &cli.data_root {
        Some(p) => {
            std::fs::create_dir_all(p)?;
            p.clone()
        }
        None => {
            tmp = tempfile::Builder::new()
                .prefix("cairn-query-bench-")
                .tempdir_in(&cli.work_dir)?;
            tmp.path().to_path_buf()
        }
    };
    let mut servers = Vec::new();
    for s in &cli.servers {
        let (kind, bin) = match s.as_str() {
            "cairn" => (Kind::Cairn, &cli.cairn_bin),
            "cairn-bucket" => (Kind::CairnBucket, &cli.cairn_bin),
            "vm" | "victoriametrics" => (Kind::Vm, &cli.vm_bin),
            other => bail!("unknown server {other:?} (cairn, vm, cairn-bucket)"),
        };
        let mut bucket_flags = Vec::new();
        if kind == Kind::CairnBucket {
            let url = cli.bucket_url.as_ref().context("cairn-bucket needs --bucket-url")?;
            bucket_flags.extend(["--storage.object-store.url".to_string(), url.clone()]);
            if let Some(endpoint) = &cli.bucket_endpoint {
                bucket_flags.extend(["--storage.object-store.endpoint".to_string(), endpoint.clone()]);
            }
        }
        servers.push(Server::new(kind, bin, &root, cli.vm_cache, bucket_flags)?);
    }
    let (start_ms, end_ms) = backfill(&cli, &mut servers, &root)?;
    let queries = build_queries(&cli, start_ms, end_ms)?;
    println!("{} queries per server", queries.len());

    let client = http();
    let cold = match servers.iter().position(|s| s.kind == Kind::CairnBucket) {
        Some(b) if !cli.fresh => Some(cold_pass(&servers, b, &queries, &client)?),
        _ => None,
    };
    // Warm-up: every distinct query text once per server (page cache, index
    // caches, connection), not timed.
    let mut seen = std::collections::HashSet::new();
    for q in queries.iter().filter(|_| !cli.fresh) {
        if seen.insert((q.class, q.template.clone())) {
            for s in &servers {
                if let Err(e) = s.query(&client, q) {
                    println!("  warm-up error: {e:#}");
                }
            }
        }
    }

    let tck = procfs::clk_tck();
    let cpu0: Vec<f64> = servers
        .iter()
        .map(|s| procfs::cpu_seconds(s.pid(), tck).unwrap_or(0.0))
        .collect();
    let mut stats: BTreeMap<&'static str, ClassStats> = BTreeMap::new();
    let mut per_query: BTreeMap<(&'static str, String), BTreeMap<&'static str, Vec<f64>>> = BTreeMap::new();
    let mut examples = Vec::new();
    let t = Instant::now();
    for (i, q) in queries.iter().enumerate() {
        if i % 20 == 0 {
            print!("\r  querying: {i}/{}", queries.len());
            let _ = std::io::stdout().flush();
        }
        let st = stats.entry(q.class).or_default();
        st.queries += 1;
        // Alternate which server goes first so neither always meets warm caches.
        let order: Vec<usize> = if i % 2 == 0 {
            (0..servers.len()).collect()
        } else {
            (0..servers.len()).rev().collect()
        };
        let mut counts = Vec::new();
        for j in order {
            let s = &servers[j];
            match s.query(&client, q) {
                Ok((d, n)) => {
                    let ms = d.as_secs_f64() * 1000.0;
                    st.lat.entry(s.kind.name()).or_default().push(ms);
                    per_query
                        .entry((q.class, q.template.clone()))
                        .or_default()
                        .entry(s.kind.name())
                        .or_default()
                        .push(ms);
                    counts.push(n);
                }
                Err(e) => {
                    *st.errors.entry(s.kind.name()).or_default() += 1;
                    if examples.len() < 10 {
                        examples.push(format!("{}: {e:#}", q.expr));
                    }
                }
            }
        }
        if counts.len() == servers.len() && counts.windows(2).any(|w| w[0] != w[1]) {
            st.count_mismatch += 1;
            if examples.len() < 10 {
                examples.push(format!("series count differs {counts:?}: {} at {}", q.expr, q.end));
            }
        }
    }
    let elapsed = t.elapsed().as_secs_f64();
    let cpu: Vec<f64> = servers
        .iter()
        .zip(&cpu0)
        .map(|(s, c0)| procfs::cpu_seconds(s.pid(), tck).unwrap_or(0.0) - c0)
        .collect();
    println!("\r  {} queries per server in {elapsed:.1} s", queries.len());
    for e in &examples {
        println!("  note: {e}");
    }

    let names: Vec<&str> = servers.iter().map(|s| s.kind.name()).collect();
    let mut classes = serde_json::Map::new();
    println!("\nlatency in ms (client-side, request to last byte)\n");
    let mut header = "| class | queries |".to_string();
    for n in &names {
        header.push_str(&format!(" {n} p50 | p90 | p99 |"));
    }
    if names.len() == 2 {
        header.push_str(" p50 ratio | p99 ratio |");
    }
    println!("{header}");
    println!("|{}", "---|".repeat(header.matches('|').count() - 1));
    for (class, st) in &stats {
        let mut row = format!("| {class} | {} |", st.queries);
        let mut cj = serde_json::Map::new();
        let mut p = Vec::new();
        for n in &names {
            let mut v = st.lat.get(n).cloned().unwrap_or_default();
            v.sort_by(f64::total_cmp);
            let (p50, p90, p99) = (percentile(&v, 50.0), percentile(&v, 90.0), percentile(&v, 99.0));
            row.push_str(&format!(" {p50:.1} | {p90:.1} | {p99:.1} |"));
            cj.insert(
                n.to_string(),
                json!({ "p50_ms": p50, "p90_ms": p90, "p99_ms": p99, "n": v.len(),
                        "mean_ms": v.iter().sum::<f64>() / v.len().max(1) as f64,
                        "errors": st.errors.get(n).copied().unwrap_or(0) }),
            );
            p.push((p50, p99));
        }
        if p.len() == 2 {
            let (r50, r99) = (p[0].0 / p[1].0, p[0].1 / p[1].1);
            row.push_str(&format!(" {r50:.2} | {r99:.2} |"));
            cj.insert("ratio_p50".into(), json!(r50));
            cj.insert("ratio_p99".into(), json!(r99));
        }
        cj.insert("series_count_mismatches".into(), json!(st.count_mismatch));
        println!("{row}");
        classes.insert(class.to_string(), Value::Object(cj));
    }
    println!("\nper query (median ms):");
    let mut pq = Vec::new();
    for ((class, tpl), by) in &per_query {
        let med: Vec<String> = names
            .iter()
            .map(|n| {
                let mut v = by.get(n).cloned().unwrap_or_default();
                v.sort_by(f64::total_cmp);
                format!("{:8.1}", percentile(&v, 50.0))
            })
            .collect();
        println!(
            "  {} {:<22} {}",
            med.join(" "),
            class,
            tpl.chars().take(110).collect::<String>()
        );
        pq.push(json!({ "class": class, "query": tpl, "median_ms": med }));
    }
    for (n, c) in names.iter().zip(&cpu) {
        println!("{n}: {c:.1} CPU s while querying");
    }
    let report = json!({
        "command": std::env::args().collect::<Vec<_>>().join(" "),
        "bucket_cold": cold,
        "date_utc_ms": now_ms(),
        "workload": { "targets": cli.targets, "hours": cli.hours, "interval_s": cli.interval,
                      "start_ms": start_ms, "end_ms": end_ms, "vm_cache": cli.vm_cache },
        "classes": classes,
        "per_query": pq,
        "cpu_s_querying": names.iter().zip(&cpu).map(|(n, c)| (n.to_string(), json!(c))).collect::<serde_json::Map<_, _>>(),
        "loadavg_at_end": std::fs::read_to_string("/proc/loadavg").unwrap_or_default().trim(),
        "host_cores": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0),
    });
    std::fs::write(&cli.report, serde_json::to_string_pretty(&report)?)?;
    println!("\nreport: {}", cli.report.display());
    for s in &mut servers {
        s.stop();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grafana_step_matches_grafana() {
        assert_eq!(grafana_step(3_600_000, 15_000), (15_000, 60_000));
        assert_eq!(grafana_step(6 * 3_600_000, 15_000), (20_000, 60_000));
        assert_eq!(grafana_step(24 * 3_600_000, 15_000), (60_000, 75_000));
        assert_eq!(prom_duration(75_000), "75s");
        assert_eq!(prom_duration(60_000), "1m");
    }

    #[test]
    fn percentile_nearest_rank() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile(&v, 50.0), 50.0);
        assert_eq!(percentile(&v, 99.0), 99.0);
        assert_eq!(percentile(&[7.0], 99.0), 7.0);
    }

    #[test]
    fn alert_rules_file_yields_every_expr() {
        let p = Path::new(ALERTS);
        if !p.exists() {
            eprintln!("skipped: {ALERTS} missing");
            return;
        }
        let e = alert_exprs(p).unwrap();
        assert_eq!(e.len(), 35, "{e:#?}");
        assert!(e.iter().all(|x| !x.starts_with('#') && !x.is_empty()));
        assert!(e.iter().any(|x| x.contains("node_context_switches_total[1d]")));
    }
}
