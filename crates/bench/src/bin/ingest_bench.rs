//! `cairn-ingest-bench`: backfills the same node_exporter fleet into Cairn and
//! VictoriaMetrics, one server after the other on loopback, and compares
//! ingest rate, CPU, memory, disk and restart time. `--footprint` instead
//! runs a small real-time load and reports steady memory and idle CPU.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context, bail};
use cairn_bench::fleet::{Fleet, FleetConfig};
use cairn_bench::procfs;
use cairn_bench::sender::{self, Client, Outcome, Spool};
use cairn_bench::trace::Trace;
use cairn_model::{Label, Labels};
use clap::Parser;
use serde_json::{Value, json};

/// One exported series: labels, timestamps (ms) and values.
type ExportedSeries = (Labels, Vec<i64>, Vec<f64>);

#[derive(Parser, Debug)]
#[command(about = "Cairn vs VictoriaMetrics ingestion benchmark (remote write, loopback)")]
struct Cli {
    /// Cairn release binary.
    #[arg(long, default_value = "target/release/cairn")]
    cairn_bin: PathBuf,
    /// VictoriaMetrics single-node binary (Debian package `victoria-metrics`).
    #[arg(long, default_value = "/usr/bin/victoria-metrics")]
    vm_bin: PathBuf,
    /// Which servers to run, in order.
    #[arg(long, value_delimiter = ',', default_value = "cairn,vm")]
    servers: Vec<String>,
    #[arg(long, default_value = cairn_bench::DEFAULT_TRACE)]
    trace: PathBuf,
    /// Simulated node_exporter targets (507 series each).
    #[arg(long, default_value_t = 100)]
    targets: usize,
    /// Hours of data to backfill, ending now.
    #[arg(long, default_value_t = 6.0)]
    hours: f64,
    /// Scrape interval in seconds.
    #[arg(long, default_value_t = 15)]
    interval: i64,
    /// Largest absolute scrape-timestamp jitter in milliseconds.
    #[arg(long, default_value_t = 3)]
    jitter_ms: i64,
    /// Consecutive scrapes per request (x 507 samples; 4 gives ~2,000 like Prometheus' max_samples_per_send).
    #[arg(long, default_value_t = 4)]
    steps_per_request: u64,
    /// Concurrent sender threads.
    #[arg(long, default_value_t = 4)]
    workers: usize,
    /// Targets whose every sample is read back via /api/v1/export and compared.
    #[arg(long, default_value_t = 3)]
    verify_targets: usize,
    /// Where spools and data directories go.
    #[arg(long, default_value = "/tmp")]
    work_dir: PathBuf,
    /// JSON report path.
    #[arg(long, default_value = "cairn-ingest-bench.json")]
    report: PathBuf,
    /// Small-footprint mode: real-time ingestion of ~10k series instead of a backfill.
    #[arg(long)]
    footprint: bool,
    #[arg(long, default_value_t = 3.0)]
    footprint_minutes: f64,
    #[arg(long, default_value_t = 10_000)]
    footprint_series: usize,
    #[arg(long, default_value_t = 10)]
    footprint_interval: i64,
    /// Seconds of idleness measured after footprint ingestion stops.
    #[arg(long, default_value_t = 60)]
    idle_seconds: u64,
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// Declare a server hung (and kill it) when no write is acknowledged for this long.
    #[arg(long, default_value_t = 60)]
    stall_seconds: u64,
    /// Stop each server right after ingestion: report only the ingest rate,
    /// CPU and peak RSS (for quick A/B runs of one change).
    #[arg(long)]
    ingest_only: bool,
    /// Centre the backfilled window on the latest UTC midnight at least
    /// half a window ago, so the data spans two days as a live instance's
    /// always does.
    #[arg(long)]
    straddle_midnight: bool,
    /// Keep each server's data directory (its path is printed), e.g. to
    /// profile a restart on it.
    #[arg(long)]
    keep_data: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Cairn,
    Vm,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Cairn => "Cairn",
            Kind::Vm => "VictoriaMetrics",
        }
    }
}

struct Server {
    kind: Kind,
    bin: PathBuf,
    data: PathBuf,
    port: u16,
    log: PathBuf,
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
    fn new(kind: Kind, bin: &Path, root: &Path) -> anyhow::Result<Self> {
        let data = root.join(match kind {
            Kind::Cairn => "cairn-data",
            Kind::Vm => "vm-data",
        });
        std::fs::create_dir_all(&data)?;
        Ok(Self {
            kind,
            bin: bin.to_path_buf(),
            log: root.join(format!("{}.log", kind.name())),
            data,
            port: free_port()?,
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
        let log = std::fs::OpenOptions::new().create(true).append(true).open(&self.log)?;
        let mut cmd = Command::new(&self.bin);
        let addr = format!("127.0.0.1:{}", self.port);
        match self.kind {
            Kind::Cairn => {
                cmd.arg("--storage.path")
                    .arg(&self.data)
                    .arg("--http.listen-addr")
                    .arg(&addr);
                cmd.args([
                    "--storage.flush-interval",
                    "5s",
                    "--storage.retention",
                    "100y",
                    "--log.level",
                    "warn",
                ]);
            }
            Kind::Vm => {
                cmd.arg(format!("-storageDataPath={}", self.data.display()));
                cmd.arg(format!("-httpListenAddr={addr}"));
                cmd.args([
                    "-retentionPeriod=100y",
                    "-search.maxSeries=100000000",
                    "-loggerLevel=ERROR",
                ]);
            }
        }
        let child = cmd
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()
            .with_context(|| format!("start {}", self.bin.display()))?;
        self.child = Some(child);
        Ok(())
    }

    /// Waits until the HTTP API answers; returns seconds since `since`.
    fn wait_http(&mut self, since: Instant) -> anyhow::Result<f64> {
        let url = match self.kind {
            Kind::Cairn => format!("{}/-/ready", self.base()),
            Kind::Vm => format!("{}/health", self.base()),
        };
        let c = http();
        loop {
            if let Some(st) = self.child.as_mut().and_then(|c| c.try_wait().ok().flatten()) {
                bail!(
                    "{} exited during startup ({st}); see {}",
                    self.kind.name(),
                    self.log.display()
                );
            }
            if c.get(&url).send().is_ok_and(|r| r.status().is_success()) {
                return Ok(since.elapsed().as_secs_f64());
            }
            if since.elapsed() > Duration::from_secs(900) {
                bail!("{} not ready after 900 s", self.kind.name());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// SIGTERM and wait; returns seconds to exit.
    fn stop(&mut self) -> anyhow::Result<f64> {
        let Some(mut child) = self.child.take() else {
            return Ok(0.0);
        };
        let t = Instant::now();
        Command::new("kill").args(["-TERM", &child.id().to_string()]).status()?;
        loop {
            if let Some(st) = child.try_wait()? {
                if !st.success() {
                    eprintln!("  warning: {} exited with {st} after SIGTERM", self.kind.name());
                }
                return Ok(t.elapsed().as_secs_f64());
            }
            if t.elapsed() > Duration::from_secs(600) {
                child.kill()?;
                bail!("{} did not stop within 600 s of SIGTERM", self.kind.name());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn metrics_sum(&self, name: &str) -> Option<f64> {
        let text = http()
            .get(format!("{}/metrics", self.base()))
            .send()
            .ok()?
            .text()
            .ok()?;
        let mut sum = None;
        for line in text.lines() {
            if line.starts_with(name) && line[name.len()..].starts_with(['{', ' ']) {
                let v: f64 = line.rsplit(' ').next()?.parse().ok()?;
                sum = Some(sum.unwrap_or(0.0) + v);
            }
        }
        sum
    }

    /// Makes the server persist what it holds in memory and waits for the data
    /// directory to stop changing and for merges to be done (VictoriaMetrics:
    /// no active merges; Cairn: one part per day partition), at most 300 s.
    fn flush_and_settle(&self, quiet_for: Duration) -> anyhow::Result<f64> {
        let t = Instant::now();
        if self.kind == Kind::Vm {
            http().get(format!("{}/internal/force_flush", self.base())).send()?;
        }
        let mut last = procfs::du_bytes(&self.data);
        let mut stable_since = Instant::now();
        while t.elapsed() < Duration::from_secs(300) {
            std::thread::sleep(Duration::from_millis(500));
            let now = procfs::du_bytes(&self.data);
            let merging = match self.kind {
                Kind::Vm => self.metrics_sum("vm_active_merges").unwrap_or(0.0) > 0.0,
                // Cairn merges each day it no longer writes to into one part a
                // minute after the last write; until then neither its disk nor
                // its memory is in the final state the figures are about.
                Kind::Cairn => {
                    let parts = self.metrics_sum("cairn_storage_parts");
                    let partitions = self.metrics_sum("cairn_storage_partitions");
                    matches!((parts, partitions), (Some(p), Some(n)) if p > n)
                }
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

    fn series_count(&self, start: i64, end: i64) -> anyhow::Result<usize> {
        let url = format!("{}/api/v1/series", self.base());
        let resp = http()
            .get(url)
            .query(&[
                ("match[]", "{__name__=~\".+\"}"),
                ("start", &(start / 1000).to_string()),
                ("end", &(end / 1000 + 1).to_string()),
            ])
            .send()?;
        let status = resp.status();
        let text = resp.text()?;
        if !status.is_success() {
            bail!("series query: {status}: {}", text.chars().take(300).collect::<String>());
        }
        let v: Value = serde_json::from_str(&text)?;
        Ok(v["data"].as_array().map_or(0, Vec::len))
    }

    fn export(&self, selector: &str, start: i64, end: i64) -> anyhow::Result<Vec<ExportedSeries>> {
        let resp = http()
            .get(format!("{}/api/v1/export", self.base()))
            .query(&[
                ("match[]", selector),
                ("start", &(start / 1000).to_string()),
                ("end", &(end / 1000 + 1).to_string()),
            ])
            .send()?;
        let status = resp.status();
        let text = resp.text()?;
        if !status.is_success() {
            bail!("export: {status}: {}", text.chars().take(300).collect::<String>());
        }
        let mut out = Vec::new();
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            let v: Value = serde_json::from_str(line)?;
            let labels = Labels::new(
                v["metric"]
                    .as_object()
                    .context("metric")?
                    .iter()
                    .map(|(k, v)| Label::new(k.clone(), v.as_str().unwrap_or_default()))
                    .collect(),
            )?;
            // Numbers are parsed from the raw text: serde_json's default float
            // parser is not correctly rounded and would invent 1-ulp mismatches.
            let ts: Vec<i64> = raw_array(line, "timestamps")
                .context("timestamps")?
                .iter()
                .filter_map(|x| x.parse().ok())
                .collect();
            let vals: Vec<f64> = raw_array(line, "values")
                .context("values")?
                .iter()
                .map(|x| match x.trim_matches('"') {
                    "+Inf" | "Inf" => f64::INFINITY,
                    "-Inf" => f64::NEG_INFINITY,
                    t => t.parse().unwrap_or(f64::NAN),
                })
                .collect();
            out.push((labels, ts, vals));
        }
        Ok(out)
    }
}

/// The raw elements of the JSON array `"key":[...]` in an export line (the
/// last occurrence, so label values cannot fake it).
fn raw_array<'a>(line: &'a str, key: &str) -> Option<Vec<&'a str>> {
    let pat = format!("\"{key}\":[");
    let start = line.rfind(&pat)? + pat.len();
    let end = start + line[start..].find(']')?;
    let body = line[start..end].trim();
    Some(if body.is_empty() {
        Vec::new()
    } else {
        body.split(',').map(str::trim).collect()
    })
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Polls RSS of a pid in the background.
struct Monitor {
    stop: Arc<AtomicBool>,
    samples: Arc<Mutex<Vec<(f64, u64)>>>,
    handle: Option<std::thread::JoinHandle<()>>,
}

impl Monitor {
    fn start(pid: u32) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let samples = Arc::new(Mutex::new(Vec::new()));
        let (s2, v2) = (stop.clone(), samples.clone());
        let handle = std::thread::spawn(move || {
            let t = Instant::now();
            while !s2.load(Ordering::Relaxed) {
                if let Some((rss, _)) = procfs::rss(pid)
                    && let Ok(mut v) = v2.lock()
                {
                    v.push((t.elapsed().as_secs_f64(), rss));
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        });
        Self {
            stop,
            samples,
            handle: Some(handle),
        }
    }

    fn finish(mut self) -> Vec<(f64, u64)> {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
        self.samples.lock().map(|v| v.clone()).unwrap_or_default()
    }
}

fn median(mut v: Vec<u64>) -> u64 {
    v.sort_unstable();
    v.get(v.len() / 2).copied().unwrap_or(0)
}

/// Median RSS over `secs` seconds.
fn steady_rss(pid: u32, secs: u64) -> u64 {
    let mut v = Vec::new();
    let t = Instant::now();
    while t.elapsed() < Duration::from_secs(secs) {
        if let Some((r, _)) = procfs::rss(pid) {
            v.push(r);
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    median(v)
}

struct Verify {
    series_checked: usize,
    samples_expected: u64,
    samples_found: u64,
    missing_series: usize,
    ts_mismatches: u64,
    value_exact_mismatches: u64,
    value_mismatches_beyond_1e_9: u64,
    examples: Vec<String>,
}

fn verify(server: &Server, fleet: &Fleet, steps: u64, targets: &[usize]) -> anyhow::Result<Verify> {
    let mut r = Verify {
        series_checked: 0,
        samples_expected: 0,
        samples_found: 0,
        missing_series: 0,
        ts_mismatches: 0,
        value_exact_mismatches: 0,
        value_mismatches_beyond_1e_9: 0,
        examples: Vec::new(),
    };
    let start = fleet.config().start_ms - 60_000;
    let end = fleet.timestamp(fleet.targets() - 1, steps) + 60_000;
    for &t in targets {
        let labels = fleet.target_labels(t);
        let got = server.export(&format!("{{instance=\"{}\"}}", Fleet::instance(t)), start, end)?;
        let got: HashMap<Labels, (Vec<i64>, Vec<f64>)> = got.into_iter().map(|(l, ts, v)| (l, (ts, v))).collect();
        for (s, l) in labels.iter().enumerate() {
            r.series_checked += 1;
            r.samples_expected += steps;
            let Some((ts, vs)) = got.get(l) else {
                r.missing_series += 1;
                if r.examples.len() < 5 {
                    r.examples.push(format!("missing series {l}"));
                }
                continue;
            };
            r.samples_found += ts.len() as u64;
            for k in 0..steps {
                let (et, ev) = (fleet.timestamp(t, k), fleet.value(t, s, k));
                let i = k as usize;
                match (ts.get(i), vs.get(i)) {
                    (Some(&gt), Some(&gv)) => {
                        if gt != et {
                            r.ts_mismatches += 1;
                        }
                        let same = gv.to_bits() == ev.to_bits() || (gv.is_nan() && ev.is_nan());
                        if !same {
                            r.value_exact_mismatches += 1;
                            if r.value_exact_mismatches <= 3 {
                                r.examples
                                    .push(format!("not bit-exact: {l} @{et}: sent {ev:?} got {gv:?}"));
                            }
                            let tol = 1e-9 * ev.abs().max(1e-300);
                            let within = (gv - ev).abs() <= tol || (gv.is_nan() && ev.is_nan());
                            if !within {
                                r.value_mismatches_beyond_1e_9 += 1;
                                if r.examples.len() < 5 {
                                    r.examples.push(format!("{l} @{et}: want {ev:e} got {gv:e}"));
                                }
                            }
                        }
                    }
                    _ => {
                        r.ts_mismatches += 1;
                    }
                }
            }
        }
    }
    Ok(r)
}

fn verify_json(v: &Verify) -> Value {
    json!({
        "series_checked": v.series_checked, "samples_expected": v.samples_expected, "samples_found": v.samples_found,
        "missing_series": v.missing_series, "timestamp_mismatches": v.ts_mismatches,
        "value_not_bit_exact": v.value_exact_mismatches, "value_off_by_more_than_1e-9_relative": v.value_mismatches_beyond_1e_9,
        "examples": v.examples,
    })
}

fn check_binary(kind: Kind, bin: &Path) -> anyhow::Result<()> {
    if bin.exists() {
        return Ok(());
    }
    match kind {
        Kind::Cairn => bail!(
            "{} not found: build it with `cargo build --release -p cairn`",
            bin.display()
        ),
        Kind::Vm => bail!(
            "{} not found: install VictoriaMetrics with `apt-get install -y victoria-metrics` (Debian package) or pass --vm-bin",
            bin.display()
        ),
    }
}

fn kinds(cli: &Cli) -> anyhow::Result<Vec<(Kind, PathBuf)>> {
    cli.servers
        .iter()
        .map(|s| match s.as_str() {
            "cairn" => Ok((Kind::Cairn, cli.cairn_bin.clone())),
            "vm" | "victoriametrics" => Ok((Kind::Vm, cli.vm_bin.clone())),
            other => bail!("unknown server {other:?} (cairn, vm)"),
        })
        .collect()
}

/// The end of a window of `span` ms, at most `latest`, whose middle is a UTC midnight.
fn straddling_end(latest: i64, span: i64) -> i64 {
    const DAY_MS: i64 = 86_400_000;
    let mut midnight = latest.div_euclid(DAY_MS) * DAY_MS;
    while midnight + span / 2 > latest {
        midnight -= DAY_MS;
    }
    midnight + span / 2
}

fn backfill(cli: &Cli, trace: Arc<Trace>) -> anyhow::Result<Value> {
    let interval_ms = cli.interval * 1000;
    let steps = ((cli.hours * 3600.0 * 1000.0) / interval_ms as f64).round() as u64;
    let latest = (now_ms() / interval_ms) * interval_ms - 2 * interval_ms;
    let end = if cli.straddle_midnight {
        straddling_end(latest, steps as i64 * interval_ms)
    } else {
        latest
    };
    let start_ms = end - steps as i64 * interval_ms;
    let fleet = Fleet::new(
        trace,
        FleetConfig {
            targets: cli.targets,
            start_ms,
            interval_ms,
            jitter_ms: cli.jitter_ms,
            job: "node".into(),
            seed: cli.seed,
        },
    );
    let series = fleet.total_series();
    println!(
        "workload: {} targets x {} series = {series} series, {steps} scrapes each ({} h at {} s) = {} samples",
        cli.targets,
        fleet.series_per_target(),
        cli.hours,
        cli.interval,
        series as u64 * steps
    );
    let t = Instant::now();
    let spool = Spool::build(&fleet, steps, cli.steps_per_request, cli.workers, &cli.work_dir)?;
    println!(
        "spool: {} requests, {} samples, {:.1} MB snappy ({:.2} B/sample on the wire), built in {:.1} s",
        spool.requests,
        spool.samples,
        spool.bytes as f64 / 1e6,
        spool.bytes as f64 / spool.samples as f64,
        t.elapsed().as_secs_f64()
    );
    let tck = procfs::clk_tck();
    let verify_targets: Vec<usize> = {
        let n = cli.targets;
        let mut v = vec![0, n / 2, n - 1];
        v.truncate(cli.verify_targets.max(1));
        v.dedup();
        v
    };
    let mut results = serde_json::Map::new();
    for (kind, bin) in kinds(cli)? {
        check_binary(kind, &bin)?;
        println!("\n== {} ==", kind.name());
        let mut root = tempfile::Builder::new()
            .prefix("cairn-bench-")
            .tempdir_in(&cli.work_dir)?;
        if cli.keep_data {
            root.disable_cleanup(true);
            println!("  data kept in {}", root.path().display());
        }
        let mut srv = Server::new(kind, &bin, root.path())?;
        let t0 = Instant::now();
        srv.start()?;
        let startup = srv.wait_http(t0)?;
        let pid = srv.pid();
        let cpu0 = procfs::cpu_seconds(pid, tck).unwrap_or(0.0);
        let mon = Monitor::start(pid);
        let total = spool.samples;
        let stall = Duration::from_secs(cli.stall_seconds);
        let watch = Mutex::new((0u64, Instant::now(), None::<String>));
        let progress = |acked: u64| -> bool {
            let Ok(mut w) = watch.lock() else { return true };
            if acked != w.0 {
                *w = (acked, Instant::now(), None);
                print!("\r  ingesting: {:5.1}%", acked as f64 * 100.0 / total as f64);
                let _ = std::io::stdout().flush();
                return true;
            }
            if w.1.elapsed() < stall {
                return true;
            }
            let cpu = procfs::cpu_seconds(pid, tck).unwrap_or(0.0);
            let msg = format!(
                "STALLED: no write acknowledged for {} s at {acked}/{total} samples ({:.1}%); server CPU total {cpu:.1} s; killing it",
                stall.as_secs(),
                acked as f64 * 100.0 / total as f64
            );
            println!("\n  {msg}");
            w.2 = Some(msg);
            let _ = Command::new("kill").args(["-KILL", &pid.to_string()]).status();
            false
        };
        let send = sender::send_spool(&spool, &format!("{}/api/v1/write", srv.base()), Some(&progress))?;
        let cpu1 = procfs::cpu_seconds(pid, tck).unwrap_or(0.0);
        let ingest_rss = mon.finish();
        println!();
        if let Some(msg) = watch.lock().ok().and_then(|w| w.2.clone()) {
            let _ = srv.child.take().map(|mut c| c.wait());
            results.insert(
                kind.name().into(),
                json!({ "failed": msg, "samples_acked": send.samples_acked, "samples_failed": send.samples_failed,
                        "seconds_until_stall": send.elapsed.as_secs_f64() - stall.as_secs_f64() }),
            );
            continue;
        }
        let rate = send.samples_acked as f64 / send.elapsed.as_secs_f64();
        let cpu_per_m = (cpu1 - cpu0) / (send.samples_acked as f64 / 1e6);
        println!(
            "  {} samples acked in {:.1} s = {:.0} samples/s; {:.2} CPU s per million; {} retries, {} failed requests",
            send.samples_acked,
            send.elapsed.as_secs_f64(),
            rate,
            cpu_per_m,
            send.retries,
            send.failed_requests
        );
        for e in &send.first_errors {
            println!("  error: {e}");
        }
        if cli.ingest_only {
            srv.stop()?;
            results.insert(
                kind.name().into(),
                json!({
                    "samples_acked": send.samples_acked, "samples_failed": send.samples_failed,
                    "ingest_seconds": send.elapsed.as_secs_f64(),
                    "ingest_samples_per_s": rate,
                    "cpu_s_ingest": cpu1 - cpu0,
                    "cpu_s_per_million_samples": cpu_per_m,
                    "rss_peak_bytes": ingest_rss.iter().map(|x| x.1).max().unwrap_or(0),
                }),
            );
            continue;
        }
        let settle = srv.flush_and_settle(Duration::from_secs(if kind == Kind::Cairn { 75 } else { 5 }))?;
        let cpu_settle = procfs::cpu_seconds(pid, tck).unwrap_or(0.0) - cpu1;
        let steady = steady_rss(pid, 10);
        let hwm = procfs::rss(pid).map_or(0, |r| r.1);
        let peak = ingest_rss.iter().map(|x| x.1).max().unwrap_or(0).max(hwm);
        let series_live = srv.series_count(start_ms - 60_000, end + 60_000).unwrap_or_else(|e| {
            println!("  series query failed: {e:#}");
            0
        });
        println!(
            "  settled in {settle:.1} s (+{cpu_settle:.1} CPU s); RSS peak {:.0} MB, steady {:.0} MB ({:.0} B/series); series visible: {series_live}",
            peak as f64 / 1e6,
            steady as f64 / 1e6,
            steady as f64 / series as f64
        );
        let shutdown = srv.stop()?;
        let disk = procfs::du_bytes(&srv.data);
        println!(
            "  stopped in {shutdown:.1} s; data dir {:.1} MB = {:.3} B/sample",
            disk as f64 / 1e6,
            disk as f64 / send.samples_acked.max(1) as f64
        );
        // Restart: time until every series is queryable again.
        let t1 = Instant::now();
        srv.start()?;
        let http_up = srv.wait_http(t1)?;
        let mut restart = None;
        let mut last_count = 0;
        while t1.elapsed() < Duration::from_secs(900) {
            match srv.series_count(start_ms - 60_000, end + 60_000) {
                Ok(n) if n >= series => {
                    restart = Some(t1.elapsed().as_secs_f64());
                    last_count = n;
                    break;
                }
                Ok(n) => last_count = n,
                Err(_) => {}
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let restart_rss = procfs::rss(srv.pid()).map_or(0, |r| r.0);
        println!(
            "  restart: HTTP up in {http_up:.2} s, all {series} series queryable in {} (last count {last_count}); RSS after restart {:.0} MB",
            restart.map_or("NEVER (900 s)".to_string(), |s| format!("{s:.2} s")),
            restart_rss as f64 / 1e6
        );
        let v = verify(&srv, &fleet, steps, &verify_targets)?;
        println!(
            "  verify {} series of targets {:?}: {}/{} samples, {} missing series, {} timestamp mismatches, {} values not bit-exact ({} beyond 1e-9)",
            v.series_checked,
            verify_targets,
            v.samples_found,
            v.samples_expected,
            v.missing_series,
            v.ts_mismatches,
            v.value_exact_mismatches,
            v.value_mismatches_beyond_1e_9
        );
        for e in &v.examples {
            println!("    {e}");
        }
        srv.stop()?;
        results.insert(
            kind.name().into(),
            json!({
                "startup_s": startup,
                "samples_acked": send.samples_acked, "samples_failed": send.samples_failed,
                "requests": send.requests, "retries": send.retries, "failed_requests": send.failed_requests,
                "errors": send.first_errors,
                "ingest_seconds": send.elapsed.as_secs_f64(),
                "ingest_samples_per_s": rate,
                "cpu_s_ingest": cpu1 - cpu0,
                "cpu_s_per_million_samples": cpu_per_m,
                "settle_s": settle, "cpu_s_settle": cpu_settle,
                "rss_peak_bytes": peak, "rss_steady_bytes": steady,
                "rss_steady_bytes_per_series": steady as f64 / series as f64,
                "series_visible_before_stop": series_live,
                "shutdown_s": shutdown,
                "disk_bytes": disk, "disk_bytes_per_sample": disk as f64 / send.samples_acked.max(1) as f64,
                "restart_http_s": http_up, "restart_all_series_s": restart, "restart_series_count": last_count,
                "rss_after_restart_bytes": restart_rss,
                "verify": verify_json(&v),
            }),
        );
    }
    Ok(json!({
        "mode": "backfill",
        "workload": {
            "targets": cli.targets, "series_per_target": fleet.series_per_target(), "series": series,
            "scrapes_per_series": steps, "hours": cli.hours, "interval_s": cli.interval, "jitter_ms": cli.jitter_ms,
            "samples": spool.samples, "requests": spool.requests, "steps_per_request": cli.steps_per_request,
            "workers": cli.workers, "wire_bytes": spool.bytes, "start_ms": start_ms, "seed": cli.seed,
        },
        "results": results,
    }))
}

fn footprint(cli: &Cli, trace: Arc<Trace>) -> anyhow::Result<Value> {
    let per = trace.series_count();
    let targets = cli.footprint_series.div_ceil(per);
    let interval_ms = cli.footprint_interval * 1000;
    let run = Duration::from_secs_f64(cli.footprint_minutes * 60.0);
    let tck = procfs::clk_tck();
    println!(
        "footprint: {targets} targets x {per} = {} series every {} s, real time for {:.1} min, then {} s idle",
        targets * per,
        cli.footprint_interval,
        cli.footprint_minutes,
        cli.idle_seconds
    );
    let mut results = serde_json::Map::new();
    for (kind, bin) in kinds(cli)? {
        check_binary(kind, &bin)?;
        println!("\n== {} ==", kind.name());
        let root = tempfile::Builder::new()
            .prefix("cairn-bench-fp-")
            .tempdir_in(&cli.work_dir)?;
        let mut srv = Server::new(kind, &bin, root.path())?;
        let t0 = Instant::now();
        srv.start()?;
        srv.wait_http(t0)?;
        let pid = srv.pid();
        std::thread::sleep(Duration::from_secs(2));
        let rss_empty = procfs::rss(pid).map_or(0, |r| r.0);
        let start_ms = (now_ms() / interval_ms + 1) * interval_ms;
        let fleet = Fleet::new(
            trace.clone(),
            FleetConfig {
                targets,
                start_ms,
                interval_ms,
                jitter_ms: cli.jitter_ms,
                job: "node".into(),
                seed: cli.seed,
            },
        );
        let labels: Vec<Vec<Labels>> = (0..targets).map(|t| fleet.target_labels(t)).collect();
        let client = Client::new(format!("{}/api/v1/write", srv.base()))?;
        let mon = Monitor::start(pid);
        let cpu0 = procfs::cpu_seconds(pid, tck).unwrap_or(0.0);
        let began = Instant::now();
        // One scrape per target per interval, each sent when its timestamp comes.
        let mut due: Vec<(i64, usize, u64)> = Vec::new();
        let (mut sent, mut failed) = (0u64, 0u64);
        let mut k = 0;
        'outer: loop {
            due.clear();
            due.extend((0..targets).map(|t| (fleet.timestamp(t, k), t, k)));
            due.sort_unstable();
            for &(ts, t, k) in &due {
                let wait = ts - now_ms();
                if wait > 0 {
                    std::thread::sleep(Duration::from_millis(wait as u64));
                }
                if began.elapsed() >= run {
                    break 'outer;
                }
                let body = sender::encode(&fleet.samples(t, &labels[t], k, k + 1))?;
                match client.post(&body) {
                    Outcome::Ok { .. } => sent += per as u64,
                    Outcome::Failed { status, message, .. } => {
                        failed += per as u64;
                        eprintln!("  write failed: {status:?} {message}");
                    }
                }
            }
            k += 1;
        }
        let ingest_s = began.elapsed().as_secs_f64();
        let cpu1 = procfs::cpu_seconds(pid, tck).unwrap_or(0.0);
        let rss = mon.finish();
        let tail: Vec<u64> = rss
            .iter()
            .filter(|x| x.0 >= ingest_s * 2.0 / 3.0)
            .map(|x| x.1)
            .collect();
        let steady_ingest = median(tail);
        let peak = rss.iter().map(|x| x.1).max().unwrap_or(0);
        let idle_t = Instant::now();
        let idle_rss = steady_rss(pid, cli.idle_seconds);
        let cpu2 = procfs::cpu_seconds(pid, tck).unwrap_or(0.0);
        let idle_cores = (cpu2 - cpu1) / idle_t.elapsed().as_secs_f64();
        let ingest_cores = (cpu1 - cpu0) / ingest_s;
        let hwm = procfs::rss(pid).map_or(0, |r| r.1);
        let series = targets * per;
        println!(
            "  {sent} samples sent ({failed} failed) over {ingest_s:.0} s; CPU {:.2}% of a core while ingesting, {:.2}% idle",
            ingest_cores * 100.0,
            idle_cores * 100.0
        );
        println!(
            "  RSS: empty {:.1} MB, steady while ingesting {:.1} MB ({:.0} B/series), idle {:.1} MB, peak {:.1} MB",
            rss_empty as f64 / 1e6,
            steady_ingest as f64 / 1e6,
            steady_ingest as f64 / series as f64,
            idle_rss as f64 / 1e6,
            peak.max(hwm) as f64 / 1e6
        );
        srv.stop()?;
        let disk = procfs::du_bytes(&srv.data);
        results.insert(
            kind.name().into(),
            json!({
                "series": series, "samples_sent": sent, "samples_failed": failed, "ingest_seconds": ingest_s,
                "cpu_cores_ingesting": ingest_cores, "cpu_cores_idle": idle_cores,
                "rss_empty_bytes": rss_empty, "rss_steady_ingesting_bytes": steady_ingest,
                "rss_steady_bytes_per_series": steady_ingest as f64 / series as f64,
                "rss_idle_bytes": idle_rss, "rss_peak_bytes": peak.max(hwm), "disk_bytes_after_stop": disk,
            }),
        );
    }
    Ok(json!({
        "mode": "footprint",
        "workload": { "targets": targets, "series": targets * per, "interval_s": cli.footprint_interval,
                      "minutes": cli.footprint_minutes, "idle_seconds": cli.idle_seconds, "seed": cli.seed },
        "results": results,
    }))
}

fn print_table(report: &Value) {
    let r = &report["results"];
    let (c, v) = (&r["Cairn"], &r["VictoriaMetrics"]);
    let rows: &[(&str, &str, f64)] = if report["mode"] == "backfill" {
        &[
            ("ingest samples/s", "ingest_samples_per_s", 1.0),
            ("server CPU s / million samples", "cpu_s_per_million_samples", 1.0),
            ("peak RSS (MB)", "rss_peak_bytes", 1e-6),
            ("steady RSS (MB)", "rss_steady_bytes", 1e-6),
            ("steady RSS bytes / series", "rss_steady_bytes_per_series", 1.0),
            ("disk bytes / sample", "disk_bytes_per_sample", 1.0),
            ("restart until all series queryable (s)", "restart_all_series_s", 1.0),
        ]
    } else {
        &[
            ("steady RSS while ingesting (MB)", "rss_steady_ingesting_bytes", 1e-6),
            ("steady RSS bytes / series", "rss_steady_bytes_per_series", 1.0),
            ("RSS idle after ingestion (MB)", "rss_idle_bytes", 1e-6),
            ("peak RSS (MB)", "rss_peak_bytes", 1e-6),
            ("CPU while ingesting (% of a core)", "cpu_cores_ingesting", 100.0),
            ("CPU idle after ingestion (% of a core)", "cpu_cores_idle", 100.0),
        ]
    };
    println!("\n| metric | Cairn | VictoriaMetrics | Cairn / VM |");
    println!("|---|---:|---:|---:|");
    for (label, key, scale) in rows {
        let a = c[*key].as_f64().map(|x| x * scale);
        let b = v[*key].as_f64().map(|x| x * scale);
        let f = |x: Option<f64>| {
            x.map_or("-".to_string(), |x| {
                if x.abs() >= 100.0 {
                    format!("{x:.0}")
                } else {
                    format!("{x:.3}")
                }
            })
        };
        let ratio = match (a, b) {
            (Some(a), Some(b)) if b != 0.0 => format!("{:.2}", a / b),
            _ => "-".into(),
        };
        println!("| {label} | {} | {} | {ratio} |", f(a), f(b));
    }
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let trace = Arc::new(Trace::load(&cli.trace)?);
    println!("trace: {} scrapes x {} series", trace.scrapes(), trace.series_count());
    if cli.targets == 0 {
        bail!("--targets must be positive");
    }
    let mut report = if cli.footprint {
        footprint(&cli, trace)?
    } else {
        backfill(&cli, trace)?
    };
    report["date_utc_ms"] = json!(now_ms());
    report["command"] = json!(std::env::args().collect::<Vec<_>>().join(" "));
    report["loadavg_at_end"] = json!(std::fs::read_to_string("/proc/loadavg").unwrap_or_default().trim());
    report["host_cores"] = json!(std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0));
    print_table(&report);
    std::fs::write(&cli.report, serde_json::to_string_pretty(&report)?)?;
    println!("\nreport: {}", cli.report.display());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::straddling_end;

    const DAY: i64 = 86_400_000;
    const HOUR: i64 = 3_600_000;

    #[test]
    fn straddled_window_is_centred_on_a_past_midnight() {
        // 13:50 on some day, a 2 h window: 23:00 yesterday to 01:00 today.
        let latest = 20_000 * DAY + 13 * HOUR + 50 * 60_000;
        assert_eq!(straddling_end(latest, 2 * HOUR), 20_000 * DAY + HOUR);
        // 00:30, too early for today's midnight: the day before's.
        let latest = 20_000 * DAY + 30 * 60_000;
        assert_eq!(straddling_end(latest, 2 * HOUR), 19_999 * DAY + HOUR);
    }
}
