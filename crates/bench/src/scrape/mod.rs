//! `cairn bench scrape`: Cairn and Prometheus scrape the same fleet of
//! synthetic node_exporter targets (one [`exporter`]) with the same
//! configuration and rule file, at the same time, and are measured from the
//! outside: CPU per scraped sample, RSS, disk, scrape-duration percentiles
//! and the rule group's evaluation time.

pub mod exporter;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde::Serialize;

use crate::procfs;
use crate::query::QueryClient;
use crate::sender::Access;
use crate::targets;
use crate::trace::Trace;

/// What to run.
#[derive(Debug, Clone)]
pub struct ScrapeBenchConfig {
    pub cairn_bin: PathBuf,
    pub prometheus_bin: PathBuf,
    pub targets: usize,
    pub interval: Duration,
    pub duration: Duration,
    /// Rule file both evaluate (default: the embedded node_exporter alerts).
    pub rules: Option<PathBuf>,
    pub trace: Option<PathBuf>,
    pub work_dir: Option<PathBuf>,
    pub quiet: bool,
}

/// One server's figures.
#[derive(Debug, Clone, Serialize)]
pub struct ScrapeReport {
    pub name: String,
    pub samples_scraped: f64,
    pub cpu_seconds: f64,
    pub cpu_seconds_per_million_samples: f64,
    pub rss_peak_bytes: u64,
    pub rss_last_bytes: u64,
    pub disk_bytes: u64,
    pub scrape_duration_p50_seconds: f64,
    pub scrape_duration_p99_seconds: f64,
    pub up_targets: f64,
    /// Mean over the run of the rule groups' last evaluation time.
    pub rule_evaluation_seconds: f64,
}

/// Runs the benchmark; the reports of Cairn and Prometheus, in that order.
pub fn run(cfg: &ScrapeBenchConfig) -> anyhow::Result<Vec<ScrapeReport>> {
    let trace = Arc::new(match &cfg.trace {
        Some(p) => Trace::load(p)?,
        None => Trace::embedded()?,
    });
    let (port, series_per_target) = exporter::start_fleet(trace, cfg.targets, cfg.interval)?;
    let dir = match &cfg.work_dir {
        Some(d) => tempfile::Builder::new().prefix("cairn-bench-scrape").tempdir_in(d)?,
        None => tempfile::Builder::new().prefix("cairn-bench-scrape").tempdir()?,
    };
    let rules_path = dir.path().join("rules.yml");
    let rules_yaml = match &cfg.rules {
        Some(p) => std::fs::read_to_string(p)?,
        None => crate::rules::DEFAULT_RULES_YAML.to_string(),
    };
    std::fs::write(&rules_path, prometheus_rules(&rules_yaml)?)?;
    let config_path = dir.path().join("prometheus.yml");
    std::fs::write(&config_path, config_yaml(cfg, port, &rules_path))?;
    if !cfg.quiet {
        eprintln!(
            "scraping {} targets of {series_per_target} series every {:?} for {:?}",
            cfg.targets, cfg.interval, cfg.duration
        );
    }
    let servers = [
        targets::start_cairn_with(
            &cfg.cairn_bin,
            cfg.work_dir.as_deref(),
            &["--config.file".into(), config_path.display().to_string()],
        )?,
        targets::start_prometheus(&cfg.prometheus_bin, cfg.work_dir.as_deref(), &config_path)?,
    ];
    let started_ms = SystemTime::now().duration_since(UNIX_EPOCH)?.as_millis() as i64;
    let tck = procfs::clk_tck();
    let cpu0: Vec<f64> = servers
        .iter()
        .map(|s| procfs::cpu_seconds(s.pid(), tck).unwrap_or(0.0))
        .collect();
    let clients = servers
        .iter()
        .map(|s| QueryClient::new(&s.base_url(), Access::default()))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let mut rss_peak = [0u64; 2];
    let mut eval = [(0.0f64, 0u32); 2];
    let end = Instant::now() + cfg.duration;
    while Instant::now() < end {
        std::thread::sleep(Duration::from_secs(5).min(end.saturating_duration_since(Instant::now())));
        for (i, s) in servers.iter().enumerate() {
            if let Some((rss, _)) = procfs::rss(s.pid()) {
                rss_peak[i] = rss_peak[i].max(rss);
            }
            if let Some(t) = rule_evaluation_seconds(&clients[i]) {
                eval[i].0 += t;
                eval[i].1 += 1;
            }
        }
    }
    let cpu1: Vec<f64> = servers
        .iter()
        .map(|s| procfs::cpu_seconds(s.pid(), tck).unwrap_or(0.0))
        .collect();
    let span_ms = SystemTime::now().duration_since(UNIX_EPOCH)?.as_millis() as i64 - started_ms;
    let mut reports = Vec::new();
    for (i, s) in servers.iter().enumerate() {
        let q = &clients[i];
        let samples = scalar(q, &format!("sum(sum_over_time(scrape_samples_scraped[{span_ms}ms]))"))?;
        let mut durations = raw_values(q, &format!("scrape_duration_seconds[{span_ms}ms]"))?;
        durations.sort_by(f64::total_cmp);
        let cpu = cpu1[i] - cpu0[i];
        reports.push(ScrapeReport {
            name: s.name.clone(),
            samples_scraped: samples,
            cpu_seconds: cpu,
            cpu_seconds_per_million_samples: if samples > 0.0 { cpu / samples * 1e6 } else { f64::NAN },
            rss_peak_bytes: rss_peak[i],
            rss_last_bytes: procfs::rss(s.pid()).map_or(0, |(r, _)| r),
            disk_bytes: procfs::du_bytes(&s.data_dir),
            scrape_duration_p50_seconds: percentile(&durations, 0.50),
            scrape_duration_p99_seconds: percentile(&durations, 0.99),
            up_targets: scalar(q, "sum(up)")?,
            rule_evaluation_seconds: if eval[i].1 > 0 {
                eval[i].0 / f64::from(eval[i].1)
            } else {
                f64::NAN
            },
        });
    }
    drop(servers);
    Ok(reports)
}

/// The configuration both servers load.
fn config_yaml(cfg: &ScrapeBenchConfig, port: u16, rules: &Path) -> String {
    let interval = format!("{}ms", cfg.interval.as_millis());
    let mut y = format!(
        "global:\n  scrape_interval: {interval}\n  scrape_timeout: {interval}\n  evaluation_interval: {interval}\n\
         rule_files:\n  - {}\n\
         scrape_configs:\n  - job_name: node\n    static_configs:\n      - targets:\n",
        serde_json::to_string(&rules.display().to_string()).unwrap_or_default()
    );
    for t in 0..cfg.targets {
        y.push_str(&format!("        - {}:{port}\n", exporter::target_addr(t)));
    }
    y
}

/// The rule file without vmalert's extensions (a group's `concurrency`),
/// which Prometheus refuses.
fn prometheus_rules(yaml: &str) -> anyhow::Result<String> {
    let mut doc: serde_yaml_ng::Value = serde_yaml_ng::from_str(yaml)?;
    if let Some(groups) = doc.get_mut("groups").and_then(|g| g.as_sequence_mut()) {
        for g in groups.iter_mut().filter_map(|g| g.as_mapping_mut()) {
            g.remove("concurrency");
        }
    }
    Ok(serde_yaml_ng::to_string(&doc)?)
}

fn scalar(q: &QueryClient, expr: &str) -> anyhow::Result<f64> {
    let now_ms = SystemTime::now().duration_since(UNIX_EPOCH)?.as_millis() as i64;
    let data = q.instant(expr, now_ms)?.data()?;
    Ok(data["result"][0]["value"][1]
        .as_str()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0.0))
}

/// Every sample of a range-vector selector.
fn raw_values(q: &QueryClient, expr: &str) -> anyhow::Result<Vec<f64>> {
    let now_ms = SystemTime::now().duration_since(UNIX_EPOCH)?.as_millis() as i64;
    let data = q.instant(expr, now_ms)?.data()?;
    let mut out = Vec::new();
    for series in data["result"].as_array().into_iter().flatten() {
        for point in series["values"].as_array().into_iter().flatten() {
            if let Some(v) = point[1].as_str().and_then(|v| v.parse().ok()) {
                out.push(v);
            }
        }
    }
    Ok(out)
}

/// The sum of every rule group's last evaluation time (`/api/v1/rules`).
fn rule_evaluation_seconds(q: &QueryClient) -> Option<f64> {
    let data = q.get_json("/api/v1/rules", &[]).ok()?;
    let groups = data["groups"].as_array()?;
    let total: f64 = groups.iter().filter_map(|g| g["evaluationTime"].as_f64()).sum();
    (total > 0.0).then_some(total)
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

/// The reports as a table, with Cairn's figures as a ratio of Prometheus'.
pub fn print(reports: &[ScrapeReport]) {
    let row = |name: &str, f: &dyn Fn(&ScrapeReport) -> f64, unit: &str| {
        let vals: Vec<f64> = reports.iter().map(f).collect();
        let ratio = match vals.as_slice() {
            [c, p, ..] if *p != 0.0 => format!("{:.2}", c / p),
            _ => "-".into(),
        };
        let cells: Vec<String> = vals.iter().map(|v| format!("{v:>14.4}")).collect();
        println!("{name:<34}{} {ratio:>8}  {unit}", cells.join(""));
    };
    let names: Vec<String> = reports.iter().map(|r| format!("{:>14}", r.name)).collect();
    println!("{:<34}{} {:>8}", "", names.join(""), "ratio");
    row("samples scraped", &|r| r.samples_scraped, "");
    row("up targets", &|r| r.up_targets, "");
    row("CPU per million samples", &|r| r.cpu_seconds_per_million_samples, "s");
    row("RSS peak", &|r| r.rss_peak_bytes as f64 / 1048576.0, "MiB");
    row("RSS last", &|r| r.rss_last_bytes as f64 / 1048576.0, "MiB");
    row("disk", &|r| r.disk_bytes as f64 / 1048576.0, "MiB");
    row("scrape duration p50", &|r| r.scrape_duration_p50_seconds * 1e3, "ms");
    row("scrape duration p99", &|r| r.scrape_duration_p99_seconds * 1e3, "ms");
    row(
        "rule evaluation (mean of last)",
        &|r| r.rule_evaluation_seconds * 1e3,
        "ms",
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_config_lists_every_target_and_the_rules() {
        let cfg = ScrapeBenchConfig {
            cairn_bin: "cairn".into(),
            prometheus_bin: "prometheus".into(),
            targets: 3,
            interval: Duration::from_secs(15),
            duration: Duration::from_secs(60),
            rules: None,
            trace: None,
            work_dir: None,
            quiet: true,
        };
        let y = config_yaml(&cfg, 9100, Path::new("/tmp/r.yml"));
        assert!(y.contains("scrape_interval: 15000ms"), "{y}");
        assert!(y.contains("rule_files:\n  - \"/tmp/r.yml\""), "{y}");
        for t in ["127.1.0.1:9100", "127.1.0.2:9100", "127.1.0.3:9100"] {
            assert!(y.contains(&format!("        - {t}\n")), "{y}");
        }
    }

    #[test]
    fn rule_files_lose_vmalerts_extensions() {
        let out = prometheus_rules(
            "groups:\n  - name: g\n    concurrency: 4\n    rules:\n      - record: r\n        expr: up\n",
        )
        .unwrap();
        assert!(!out.contains("concurrency"), "{out}");
        assert!(out.contains("record: r"), "{out}");
    }

    #[test]
    fn percentiles_of_sorted_values() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile(&v, 0.5), 51.0);
        assert_eq!(percentile(&v, 0.99), 99.0);
        assert!(percentile(&[], 0.5).is_nan());
    }
}
