//! `cairn-histogram-bench`: what native histograms cost in Cairn and in
//! Prometheus 3.14, measured in the same run on the same machine.
//!
//! The same latencies of `--series` services, one sample every 15 s over
//! `--hours`, are backfilled over remote write 1.0, as native histograms
//! (schema 3) and, into other servers, in the classic form of the same
//! observations (`_bucket{le}`, `_sum`, `_count`): each form into a fresh
//! Cairn and a fresh Prometheus, one server after the other. Reported per
//! server and form, per histogram (one native sample stands for one sample
//! of each classic series):
//! - ingest CPU seconds per million histograms (the server process, from
//!   `/proc`, until it is idle again);
//! - bytes on disk per histogram once persisted (Cairn: its parts and
//!   histogram files after a flush; Prometheus: a snapshot that includes
//!   the head block);
//! - latency percentiles of range queries of a `histogram_quantile(0.99,
//!   ...)` panel by handler over the last hour.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context, bail};
use cairn_bench::native_histograms::Latencies;
use cairn_bench::procfs;
use cairn_bench::sender::{Client, Outcome};
use cairn_model::{Label, Labels, Sample};
use cairn_protocols::SeriesSamples;
use clap::Parser;
use serde_json::{Value, json};

const INTERVAL_MS: i64 = 15_000;
const NAME: &str = "bench_request_duration_seconds";
const HANDLERS: [&str; 5] = ["/api", "/login", "/search", "/upload", "/health"];

#[derive(Parser, Debug)]
#[command(about = "Native histograms: Cairn vs Prometheus 3.14 (ingest CPU, bytes per sample, panel latency)")]
struct Cli {
    /// Cairn release binary.
    #[arg(long, default_value = "target/release/cairn")]
    cairn_bin: PathBuf,
    /// Prometheus 3 binary.
    #[arg(long, default_value = "../shared/peers/prometheus-3.14.0")]
    prometheus_bin: PathBuf,
    /// Histogram series (services).
    #[arg(long, default_value_t = 1000)]
    series: usize,
    /// Backfilled span, in hours (Prometheus' head takes at most about 3 h
    /// of backfill before it compacts).
    #[arg(long, default_value_t = 2)]
    hours: i64,
    /// Observations per series per 15 s.
    #[arg(long, default_value_t = 50)]
    observations: usize,
    /// Runs of each panel query per server.
    #[arg(long, default_value_t = 20)]
    query_runs: usize,
    /// Writes the report as JSON here too.
    #[arg(long)]
    json: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Cairn,
    Prometheus,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Cairn => "Cairn",
            Kind::Prometheus => "Prometheus",
        }
    }
}

struct Server {
    kind: Kind,
    data: PathBuf,
    port: u16,
    log: PathBuf,
    child: Child,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn http() -> reqwest::blocking::Client {
    reqwest::blocking::Client::builder()
        .timeout(Duration::from_secs(600))
        .build()
        .unwrap_or_else(|_| reqwest::blocking::Client::new())
}

impl Server {
    fn start(kind: Kind, bin: &Path, root: &Path) -> anyhow::Result<Self> {
        let data = root.join(format!("{}-data", kind.name()));
        std::fs::create_dir_all(&data)?;
        let port = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
        let log = root.join(format!("{}.log", kind.name()));
        let mut cmd = Command::new(bin);
        let addr = format!("127.0.0.1:{port}");
        match kind {
            Kind::Cairn => {
                cmd.arg("--storage.path")
                    .arg(&data)
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
            Kind::Prometheus => {
                let config = root.join("prometheus.yml");
                std::fs::write(&config, "global:\n  scrape_interval: 1h\n")?;
                cmd.arg(format!("--config.file={}", config.display()))
                    .arg(format!("--storage.tsdb.path={}", data.display()))
                    .arg(format!("--web.listen-address={addr}"))
                    .args([
                        "--web.enable-remote-write-receiver",
                        "--web.enable-admin-api",
                        "--storage.tsdb.retention.time=100y",
                        "--log.level=warn",
                    ]);
            }
        }
        let out = std::fs::File::create(&log)?;
        let child = cmd
            .stdin(Stdio::null())
            .stdout(out.try_clone()?)
            .stderr(out)
            .spawn()
            .with_context(|| format!("start {}", bin.display()))?;
        let server = Self {
            kind,
            data,
            port,
            log,
            child,
        };
        server.wait_ready()?;
        Ok(server)
    }

    fn base(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    fn wait_ready(&self) -> anyhow::Result<()> {
        let t = Instant::now();
        while t.elapsed() < Duration::from_secs(120) {
            if http()
                .get(format!("{}/-/ready", self.base()))
                .send()
                .is_ok_and(|r| r.status().is_success())
            {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        bail!("{} not ready; see {}", self.kind.name(), self.log.display())
    }

    fn cpu_seconds(&self) -> f64 {
        procfs::cpu_seconds(self.child.id(), procfs::clk_tck()).unwrap_or(f64::NAN)
    }

    /// Waits until the process has used no CPU for a second.
    fn wait_idle(&self) {
        let mut last = self.cpu_seconds();
        loop {
            std::thread::sleep(Duration::from_secs(1));
            let now = self.cpu_seconds();
            if now - last < 0.02 {
                return;
            }
            last = now;
        }
    }

    /// Bytes of the persisted form of everything written so far.
    fn persisted_bytes(&self) -> anyhow::Result<u64> {
        match self.kind {
            Kind::Cairn => {
                // The flush interval moves the head into parts; wait for it
                // and for the directory to settle.
                let mut last = u64::MAX;
                loop {
                    std::thread::sleep(Duration::from_secs(6));
                    let now = parts_bytes(&self.data);
                    if now == last && now > 0 {
                        return Ok(now);
                    }
                    last = now;
                }
            }
            Kind::Prometheus => {
                let r: Value = serde_json::from_str(
                    &http()
                        .post(format!("{}/api/v1/admin/tsdb/snapshot?skip_head=false", self.base()))
                        .send()?
                        .text()?,
                )?;
                let name = r["data"]["name"].as_str().context("snapshot name")?;
                Ok(procfs::du_bytes(&self.data.join("snapshots").join(name)))
            }
        }
    }
}

/// Bytes of Cairn's partitions (parts, index segments, histogram files),
/// without the WAL.
fn parts_bytes(dir: &Path) -> u64 {
    procfs::du_bytes(&dir.join("partitions"))
}

/// Request bodies of the whole backfill, ten minutes per request.
struct Backfill {
    native: Vec<Vec<u8>>,
    classic: Vec<Vec<u8>>,
    histogram_samples: u64,
    classic_samples: u64,
    populated_buckets: usize,
}

fn labels(name: &str, service: usize, le: Option<&str>) -> Labels {
    let mut l = vec![
        Label::new("__name__", name),
        Label::new("handler", HANDLERS[service % HANDLERS.len()]),
        Label::new("instance", format!("host-{service:05}")),
        Label::new("job", "bench"),
    ];
    if let Some(le) = le {
        l.push(Label::new("le", le));
    }
    Labels::new(l).expect("valid labels")
}

fn backfill(cli: &Cli, start_ms: i64) -> anyhow::Result<Backfill> {
    let steps = cli.hours * 3_600_000 / INTERVAL_MS;
    let per_request = 40;
    let mut services: Vec<Latencies> = (0..cli.series).map(|s| Latencies::new(s as u64)).collect();
    let mut out = Backfill {
        native: Vec::new(),
        classic: Vec::new(),
        histogram_samples: 0,
        classic_samples: 0,
        populated_buckets: 0,
    };
    let mut k = 0;
    while k < steps {
        let n = per_request.min(steps - k);
        let mut native: Vec<SeriesSamples> = Vec::with_capacity(cli.series);
        let mut classic: Vec<SeriesSamples> = Vec::new();
        for (s, lat) in services.iter_mut().enumerate() {
            let mut hs = Vec::with_capacity(n as usize);
            let mut les: Vec<(String, Vec<Sample>)> = Vec::new();
            let (mut sums, mut counts) = (Vec::new(), Vec::new());
            for j in 0..n {
                let t = start_ms + (k + j) * INTERVAL_MS;
                lat.observe(cli.observations);
                hs.push(cairn_model::HistogramSample::new(t, lat.native()));
                let (buckets, sum, count) = lat.classic();
                if les.is_empty() {
                    les = buckets.iter().map(|(le, _)| (le.clone(), Vec::new())).collect();
                }
                for ((_, samples), (_, c)) in les.iter_mut().zip(&buckets) {
                    samples.push(Sample::new(t, *c));
                }
                sums.push(Sample::new(t, sum));
                counts.push(Sample::new(t, count));
            }
            out.histogram_samples += hs.len() as u64;
            native.push(SeriesSamples::with_histograms(labels(NAME, s, None), Vec::new(), hs));
            for (le, samples) in les {
                out.classic_samples += samples.len() as u64;
                classic.push(SeriesSamples::new(
                    labels(&format!("{NAME}_bucket"), s, Some(&le)),
                    samples,
                ));
            }
            out.classic_samples += (sums.len() + counts.len()) as u64;
            classic.push(SeriesSamples::new(labels(&format!("{NAME}_sum"), s, None), sums));
            classic.push(SeriesSamples::new(labels(&format!("{NAME}_count"), s, None), counts));
        }
        out.native.push(cairn_bench::sender::encode(&native)?);
        out.classic.push(cairn_bench::sender::encode(&classic)?);
        k += n;
    }
    out.populated_buckets = services.iter().map(Latencies::populated_buckets).sum::<usize>() / services.len().max(1);
    Ok(out)
}

/// Posts every body in order; returns the server's CPU seconds for them,
/// until it is idle again.
fn ingest(server: &Server, bodies: &[Vec<u8>]) -> anyhow::Result<f64> {
    let client = Client::new(format!("{}/api/v1/write", server.base()))?;
    let before = server.cpu_seconds();
    for body in bodies {
        let outcome = client.post(body);
        if !matches!(outcome, Outcome::Ok { .. }) {
            bail!(
                "{} refused a write: {outcome:?}; see {}",
                server.kind.name(),
                server.log.display()
            );
        }
    }
    server.wait_idle();
    Ok(server.cpu_seconds() - before)
}

/// p50 and p99 of `runs` range queries of `query` over the last hour of
/// data, step 60 s, in milliseconds; checks that it returns series.
fn panel_latency(server: &Server, query: &str, end_ms: i64, runs: usize) -> anyhow::Result<(f64, f64)> {
    let start_ms = end_ms - 3_600_000;
    let mut times = Vec::with_capacity(runs);
    for _ in 0..runs {
        let t = Instant::now();
        let body = http()
            .get(format!("{}/api/v1/query_range", server.base()))
            .query(&[
                ("query", query.to_string()),
                ("start", format!("{}", start_ms as f64 / 1000.0)),
                ("end", format!("{}", end_ms as f64 / 1000.0)),
                ("step", "60".to_string()),
            ])
            .send()?
            .text()?;
        let r: Value = serde_json::from_str(&body)?;
        times.push(t.elapsed().as_secs_f64() * 1000.0);
        let series = r["data"]["result"].as_array().map_or(0, Vec::len);
        if r["status"] != "success" || series == 0 {
            bail!("{} answered {query} with {r}", server.kind.name());
        }
    }
    times.sort_by(f64::total_cmp);
    let at = |q: f64| times[((times.len() - 1) as f64 * q).round() as usize];
    Ok((at(0.5), at(0.99)))
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let now_ms = SystemTime::now().duration_since(UNIX_EPOCH)?.as_millis() as i64;
    let end_ms = (now_ms / INTERVAL_MS) * INTERVAL_MS - 60_000;
    let start_ms = end_ms - cli.hours * 3_600_000;
    eprintln!("encoding {} series over {} h ...", cli.series, cli.hours);
    let data = backfill(&cli, start_ms)?;
    eprintln!(
        "{} histogram samples ({} populated buckets per series at the end), {} classic samples",
        data.histogram_samples, data.populated_buckets, data.classic_samples
    );
    let root = tempfile::tempdir()?;
    let panels = [
        (
            "native",
            format!("histogram_quantile(0.99, sum by (handler) (rate({NAME}[5m])))"),
        ),
        (
            "classic",
            format!("histogram_quantile(0.99, sum by (handler, le) (rate({NAME}_bucket[5m])))"),
        ),
    ];
    let mut report = Vec::new();
    for (kind, bin) in [(Kind::Cairn, &cli.cairn_bin), (Kind::Prometheus, &cli.prometheus_bin)] {
        let mut forms = serde_json::Map::new();
        // Each form into a server of its own: Prometheus takes a backfill
        // only into a fresh head.
        for ((form, query), bodies) in panels.iter().zip([&data.native, &data.classic]) {
            let dir = root.path().join(form);
            std::fs::create_dir_all(&dir)?;
            let server = Server::start(kind, bin, &dir)?;
            eprintln!("{}: {form} histograms ...", kind.name());
            let cpu = ingest(&server, bodies)?;
            let bytes = server.persisted_bytes()?;
            let (p50, p99) = panel_latency(&server, query, end_ms, cli.query_runs)?;
            forms.insert(
                form.to_string(),
                json!({
                    "cpu_seconds_per_million_histogram_samples": cpu / data.histogram_samples as f64 * 1e6,
                    "bytes_per_histogram_sample": bytes as f64 / data.histogram_samples as f64,
                    "bytes": bytes,
                    "panel": {"query": query, "p50_ms": p50, "p99_ms": p99},
                }),
            );
        }
        report.push(json!({"server": kind.name(), "forms": forms}));
    }
    let report = json!({
        "series": cli.series,
        "hours": cli.hours,
        "observations_per_sample": cli.observations,
        "histogram_samples": data.histogram_samples,
        "classic_samples": data.classic_samples,
        "populated_buckets_per_series": data.populated_buckets,
        "servers": report,
    });
    println!("{}", serde_json::to_string_pretty(&report)?);
    if let Some(path) = &cli.json {
        std::fs::write(path, serde_json::to_string_pretty(&report)?)?;
    }
    Ok(())
}
