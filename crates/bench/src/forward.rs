//! `cairn bench forward`: Cairn and Prometheus in agent mode (`--agent`) and
//! vmagent scrape the same fleet of synthetic node_exporter targets and
//! forward what they scrape with remote write, each to a receiver of its own
//! in this process that counts what arrives. Each forwarder is measured from
//! the outside: CPU seconds per million samples delivered, and RSS.
//! `--cairn-stores` runs Cairn as a server instead, storing what it forwards.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use cairn_protocols::DecodeLimits;
use cairn_protocols::remote_write::{ContentEncoding, decode_write_request};
use serde::Serialize;

use crate::procfs;
use crate::scrape::exporter;
use crate::targets::{self, StartedTarget};
use crate::trace::Trace;

/// What to run.
#[derive(Debug, Clone)]
pub struct ForwardBenchConfig {
    pub cairn_bin: PathBuf,
    pub prometheus_bin: PathBuf,
    /// vmagent, if it is to be measured too.
    pub vmagent_bin: Option<PathBuf>,
    /// Cairn stores what it forwards (no `--agent`).
    pub cairn_stores: bool,
    pub targets: usize,
    pub interval: Duration,
    pub duration: Duration,
    pub work_dir: Option<PathBuf>,
    pub quiet: bool,
}

/// One forwarder's figures.
#[derive(Debug, Clone, Serialize)]
pub struct ForwardReport {
    pub name: String,
    pub samples_delivered: u64,
    pub requests: u64,
    pub bytes_delivered: u64,
    pub cpu_seconds: f64,
    pub cpu_seconds_per_million_samples: f64,
    pub rss_peak_bytes: u64,
    pub rss_last_bytes: u64,
}

/// What one receiver took.
#[derive(Default)]
struct Received {
    samples: AtomicU64,
    requests: AtomicU64,
    bytes: AtomicU64,
}

async fn receive(State(received): State<Arc<Received>>, headers: HeaderMap, body: axum::body::Bytes) -> StatusCode {
    let encoding = headers.get("content-encoding").and_then(|v| v.to_str().ok());
    let Ok(encoding) = ContentEncoding::from_header(encoding) else {
        return StatusCode::UNSUPPORTED_MEDIA_TYPE;
    };
    let limits = DecodeLimits {
        max_decompressed_bytes: 256 << 20,
        ..DecodeLimits::default()
    };
    match decode_write_request(&body, encoding, &limits) {
        Ok(batch) => {
            received
                .samples
                .fetch_add(batch.sample_count() as u64, Ordering::Relaxed);
            received.requests.fetch_add(1, Ordering::Relaxed);
            received.bytes.fetch_add(body.len() as u64, Ordering::Relaxed);
            StatusCode::NO_CONTENT
        }
        Err(_) => StatusCode::BAD_REQUEST,
    }
}

/// Starts a receiver per forwarder on a thread of its own; their ports.
fn start_receivers(received: &[Arc<Received>]) -> anyhow::Result<Vec<u16>> {
    let listeners = received
        .iter()
        .map(|_| {
            let l = std::net::TcpListener::bind("127.0.0.1:0")?;
            l.set_nonblocking(true)?;
            Ok(l)
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    let ports = listeners
        .iter()
        .map(|l| Ok(l.local_addr()?.port()))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let received = received.to_vec();
    std::thread::Builder::new()
        .name("bench-receivers".into())
        .spawn(move || {
            let rt = match tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .enable_all()
                .build()
            {
                Ok(rt) => rt,
                Err(e) => return eprintln!("receiver runtime: {e}"),
            };
            rt.block_on(async move {
                let mut tasks = Vec::new();
                for (listener, received) in listeners.into_iter().zip(received) {
                    let app = axum::Router::new()
                        .route("/api/v1/write", axum::routing::post(receive))
                        .layer(axum::extract::DefaultBodyLimit::max(256 << 20))
                        .with_state(received);
                    let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
                        return eprintln!("receiver listener");
                    };
                    tasks.push(tokio::spawn(async move { axum::serve(listener, app).await }));
                }
                for t in tasks {
                    let _ = t.await;
                }
            });
        })?;
    Ok(ports)
}

/// Runs the benchmark; a report per forwarder: Cairn, Prometheus, vmagent.
pub fn run(cfg: &ForwardBenchConfig) -> anyhow::Result<Vec<ForwardReport>> {
    let (exporter_port, series_per_target) =
        exporter::start_fleet(Arc::new(Trace::embedded()?), cfg.targets, cfg.interval)?;
    let forwarders = if cfg.vmagent_bin.is_some() { 3 } else { 2 };
    let received: Vec<Arc<Received>> = (0..forwarders).map(|_| Arc::default()).collect();
    let ports = start_receivers(&received)?;
    let dir = match &cfg.work_dir {
        Some(d) => tempfile::Builder::new().prefix("cairn-bench-forward").tempdir_in(d)?,
        None => tempfile::Builder::new().prefix("cairn-bench-forward").tempdir()?,
    };
    let write_url = |port: u16| format!("http://127.0.0.1:{port}/api/v1/write");
    let mut servers: Vec<StartedTarget> = Vec::new();
    let cairn_config = dir.path().join("cairn.yml");
    std::fs::write(
        &cairn_config,
        config_yaml(cfg, exporter_port, Some(&write_url(ports[0]))),
    )?;
    let mut cairn_args = vec!["--config.file".to_string(), cairn_config.display().to_string()];
    if !cfg.cairn_stores {
        cairn_args.push("--agent".into());
    }
    servers.push(targets::start_cairn_with(
        &cfg.cairn_bin,
        cfg.work_dir.as_deref(),
        &cairn_args,
    )?);
    let prometheus_config = dir.path().join("prometheus.yml");
    std::fs::write(
        &prometheus_config,
        config_yaml(cfg, exporter_port, Some(&write_url(ports[1]))),
    )?;
    servers.push(targets::start_prometheus_agent(
        &cfg.prometheus_bin,
        cfg.work_dir.as_deref(),
        &prometheus_config,
    )?);
    if let Some(bin) = &cfg.vmagent_bin {
        let vmagent_config = dir.path().join("vmagent.yml");
        std::fs::write(&vmagent_config, config_yaml(cfg, exporter_port, None))?;
        servers.push(targets::start_vmagent(
            bin,
            cfg.work_dir.as_deref(),
            &vmagent_config,
            &write_url(ports[2]),
        )?);
    }
    if !cfg.quiet {
        eprintln!(
            "{} forwarders scrape {} targets of {series_per_target} series every {:?} for {:?}",
            servers.len(),
            cfg.targets,
            cfg.interval,
            cfg.duration
        );
    }
    let tck = procfs::clk_tck();
    let cpu = |s: &StartedTarget| procfs::cpu_seconds(s.pid(), tck).unwrap_or(0.0);
    // Measured from the first delivery on, so start-up costs are left out alike.
    let warmup_end = Instant::now() + Duration::from_secs(120);
    while received.iter().any(|r| r.samples.load(Ordering::Relaxed) == 0) && Instant::now() < warmup_end {
        std::thread::sleep(Duration::from_millis(200));
    }
    let cpu0: Vec<f64> = servers.iter().map(cpu).collect();
    let delivered0: Vec<(u64, u64, u64)> = received.iter().map(|r| snapshot(r)).collect();
    let mut rss_peak = vec![0u64; servers.len()];
    let end = Instant::now() + cfg.duration;
    while Instant::now() < end {
        std::thread::sleep(Duration::from_secs(1).min(end.saturating_duration_since(Instant::now())));
        for (i, s) in servers.iter().enumerate() {
            if let Some((rss, _)) = procfs::rss(s.pid()) {
                rss_peak[i] = rss_peak[i].max(rss);
            }
        }
    }
    let mut reports = Vec::new();
    for (i, s) in servers.iter().enumerate() {
        let (samples, requests, bytes) = snapshot(&received[i]);
        let samples = samples - delivered0[i].0;
        let cpu_seconds = cpu(s) - cpu0[i];
        reports.push(ForwardReport {
            name: s.name.clone(),
            samples_delivered: samples,
            requests: requests - delivered0[i].1,
            bytes_delivered: bytes - delivered0[i].2,
            cpu_seconds,
            cpu_seconds_per_million_samples: if samples > 0 {
                cpu_seconds / samples as f64 * 1e6
            } else {
                f64::NAN
            },
            rss_peak_bytes: rss_peak[i],
            rss_last_bytes: procfs::rss(s.pid()).map_or(0, |(r, _)| r),
        });
    }
    drop(servers);
    Ok(reports)
}

fn snapshot(r: &Received) -> (u64, u64, u64) {
    (
        r.samples.load(Ordering::Relaxed),
        r.requests.load(Ordering::Relaxed),
        r.bytes.load(Ordering::Relaxed),
    )
}

/// The scrape configuration every forwarder loads, with a `remote_write`
/// section unless the forwarder takes its receiver by flag (vmagent).
fn config_yaml(cfg: &ForwardBenchConfig, port: u16, remote_write: Option<&str>) -> String {
    let interval = format!("{}ms", cfg.interval.as_millis());
    let mut y = format!(
        "global:\n  scrape_interval: {interval}\n  scrape_timeout: {interval}\n\
         scrape_configs:\n  - job_name: node\n    static_configs:\n      - targets:\n"
    );
    for t in 0..cfg.targets {
        y.push_str(&format!("        - {}:{port}\n", exporter::target_addr(t)));
    }
    if let Some(url) = remote_write {
        y.push_str(&format!("remote_write:\n  - url: {url}\n"));
    }
    y
}

/// The reports as a table, each forwarder's figures also as a ratio of
/// Cairn's peers' (Cairn / peer).
pub fn print(reports: &[ForwardReport]) {
    let names: Vec<String> = reports.iter().map(|r| format!("{:>18}", r.name)).collect();
    let peers: Vec<String> = reports
        .iter()
        .skip(1)
        .map(|r| format!("{:>24}", format!("cairn/{}", r.name)))
        .collect();
    println!("{:<30}{}{}", "", names.join(""), peers.join(""));
    let row = |name: &str, f: &dyn Fn(&ForwardReport) -> f64, unit: &str| {
        let vals: Vec<f64> = reports.iter().map(f).collect();
        let cells: Vec<String> = vals.iter().map(|v| format!("{v:>18.3}")).collect();
        let ratios: Vec<String> = vals.iter().skip(1).map(|p| format!("{:>24.2}", vals[0] / p)).collect();
        println!("{name:<30}{}{}  {unit}", cells.join(""), ratios.join(""));
    };
    row("samples delivered", &|r| r.samples_delivered as f64, "");
    row("CPU", &|r| r.cpu_seconds, "s");
    row("CPU per million samples", &|r| r.cpu_seconds_per_million_samples, "s");
    row("RSS peak", &|r| r.rss_peak_bytes as f64 / 1048576.0, "MiB");
    row("RSS last", &|r| r.rss_last_bytes as f64 / 1048576.0, "MiB");
    row(
        "bytes per sample sent",
        &|r| r.bytes_delivered as f64 / r.samples_delivered.max(1) as f64,
        "B",
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_config_lists_every_target_and_the_receiver() {
        let cfg = ForwardBenchConfig {
            cairn_bin: "cairn".into(),
            prometheus_bin: "prometheus".into(),
            vmagent_bin: None,
            cairn_stores: false,
            targets: 2,
            interval: Duration::from_secs(15),
            duration: Duration::from_secs(60),
            work_dir: None,
            quiet: true,
        };
        let y = config_yaml(&cfg, 9100, Some("http://127.0.0.1:1/api/v1/write"));
        assert!(
            y.contains("        - 127.1.0.1:9100\n        - 127.1.0.2:9100\n"),
            "{y}"
        );
        assert!(
            y.ends_with("remote_write:\n  - url: http://127.0.0.1:1/api/v1/write\n"),
            "{y}"
        );
        assert!(!config_yaml(&cfg, 9100, None).contains("remote_write"));
    }
}
