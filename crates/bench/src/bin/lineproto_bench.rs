//! `cairn-lineproto-bench`: the InfluxDB line-protocol path, measured three
//! ways on the same payload in one run:
//!
//! 1. Cairn's parser alone (`cairn_protocols::influx::decode_influx`) on one
//!    core: samples per CPU second.
//! 2. VictoriaMetrics ingesting the payload end to end over `POST /write`:
//!    samples per CPU second of its process.
//! 3. Cairn ingesting it end to end the same way.
//!
//! The payload is a node_exporter fleet from the recorded trace in the shape
//! Telegraf's `prometheus` input (metric_version 2) writes it, one sample per
//! line: `prometheus,instance=...,job=node,<labels> <metric>=<value> <ns>`,
//! in bodies of 1,000 lines (Telegraf's default `metric_batch_size`).

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context, bail};
use cairn_bench::procfs;
use cairn_bench::targets::{StartedTarget, start_cairn, start_victoriametrics};
use cairn_bench::trace::Trace;
use cairn_protocols::DecodeLimits;
use cairn_protocols::influx::{InfluxOptions, decode_influx};
use clap::Parser;
use serde_json::json;

#[derive(Parser, Debug)]
#[command(about = "InfluxDB line protocol: Cairn's parser and Cairn vs VictoriaMetrics end to end")]
struct Cli {
    /// Cairn release binary.
    #[arg(long, default_value = "target/release/cairn")]
    cairn_bin: PathBuf,
    /// VictoriaMetrics single-node binary (Debian package `victoria-metrics`).
    #[arg(long, default_value = "/usr/bin/victoria-metrics")]
    vm_bin: PathBuf,
    #[arg(long, default_value = cairn_bench::DEFAULT_TRACE)]
    trace: PathBuf,
    /// Simulated node_exporter hosts.
    #[arg(long, default_value_t = 50)]
    targets: usize,
    /// Scrapes per host (15 s apart, ending now).
    #[arg(long, default_value_t = 40)]
    scrapes: usize,
    /// Lines per request body.
    #[arg(long, default_value_t = 1000)]
    batch_lines: usize,
    /// Concurrent senders.
    #[arg(long, default_value_t = 2)]
    workers: usize,
    /// Where data directories go.
    #[arg(long, default_value = "/tmp")]
    work_dir: PathBuf,
    /// JSON report path.
    #[arg(long, default_value = "cairn-lineproto-bench.json")]
    report: PathBuf,
}

/// Escapes a tag key or value (or a field key) for line protocol.
fn escape(s: &str, out: &mut String) {
    for c in s.chars() {
        if matches!(c, ',' | '=' | ' ') {
            out.push('\\');
        }
        out.push(c);
    }
}

/// The request bodies and the samples they hold.
fn payload(trace: &Trace, cli: &Cli) -> (Vec<String>, usize) {
    let now_ns = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as i64)
        .unwrap_or(0);
    let step_ns = 15_000_000_000_i64;
    let start_ns = now_ns - cli.scrapes as i64 * step_ns;
    let mut bodies = Vec::new();
    let mut body = String::new();
    let (mut lines, mut samples) = (0, 0);
    for scrape in 0..cli.scrapes {
        let values = &trace.values[scrape % trace.values.len()];
        let ts = start_ns + scrape as i64 * step_ns;
        for target in 0..cli.targets {
            for (series, v) in trace.series.iter().zip(values) {
                if !v.is_finite() {
                    continue; // line protocol has no NaN or Inf
                }
                body.push_str("prometheus,instance=host-");
                body.push_str(&target.to_string());
                body.push_str(":9100,job=node");
                let mut name = "";
                for l in series.labels.iter() {
                    if l.name == "__name__" {
                        name = &l.value;
                        continue;
                    }
                    body.push(',');
                    escape(&l.name, &mut body);
                    body.push('=');
                    escape(&l.value, &mut body);
                }
                body.push(' ');
                escape(name, &mut body);
                body.push_str(&format!("={v:?} {ts}\n"));
                lines += 1;
                samples += 1;
                if lines == cli.batch_lines {
                    bodies.push(std::mem::take(&mut body));
                    lines = 0;
                }
            }
        }
    }
    if !body.is_empty() {
        bodies.push(body);
    }
    (bodies, samples)
}

/// Parses every body on this thread; returns (samples, CPU seconds).
fn parse_only(bodies: &[String]) -> anyhow::Result<(usize, f64)> {
    let tck = procfs::clk_tck();
    let me = std::process::id();
    let opts = InfluxOptions {
        now_ms: 0,
        db: Some("telegraf".into()),
        ..InfluxOptions::default()
    };
    let limits = DecodeLimits::default();
    // Three passes: the first warms caches and the allocator.
    let mut best = f64::INFINITY;
    let mut samples = 0;
    for _ in 0..3 {
        let cpu0 = procfs::cpu_seconds(me, tck).context("read own CPU time")?;
        samples = 0;
        for b in bodies {
            let r = decode_influx(b.as_bytes(), &opts, &limits);
            if r.bad_lines > 0 {
                bail!("the parser refused the payload: {:?}", r.first_error);
            }
            samples += r.batch.sample_count();
            std::hint::black_box(&r);
        }
        let cpu = procfs::cpu_seconds(me, tck).context("read own CPU time")? - cpu0;
        best = best.min(cpu);
    }
    Ok((samples, best))
}

struct EndToEnd {
    wall_s: f64,
    cpu_s: f64,
    stored: f64,
}

/// Sends every body to `target`'s `/write` with `workers` threads; CPU is
/// the target's, from the first request until the last answer.
fn end_to_end(
    target: &StartedTarget,
    bodies: &[String],
    workers: usize,
    stored_metric: &str,
) -> anyhow::Result<EndToEnd> {
    let tck = procfs::clk_tck();
    let url = format!("{}/write?db=telegraf", target.base_url());
    let http = reqwest::blocking::Client::builder()
        .timeout(Duration::from_secs(120))
        .build()?;
    let next = AtomicUsize::new(0);
    let cpu0 = procfs::cpu_seconds(target.pid(), tck).context("target CPU")?;
    let started = Instant::now();
    std::thread::scope(|s| -> anyhow::Result<()> {
        let handles: Vec<_> = (0..workers.max(1))
            .map(|_| {
                s.spawn(|| -> anyhow::Result<()> {
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(body) = bodies.get(i) else {
                            return Ok(());
                        };
                        let r = http.post(&url).body(body.clone()).send()?;
                        if !r.status().is_success() {
                            bail!(
                                "{} answered {}: {}",
                                target.name,
                                r.status(),
                                r.text().unwrap_or_default()
                            );
                        }
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().map_err(|_| anyhow::anyhow!("sender panicked"))??;
        }
        Ok(())
    })?;
    let wall_s = started.elapsed().as_secs_f64();
    let cpu_s = procfs::cpu_seconds(target.pid(), tck).context("target CPU")? - cpu0;
    let metrics = http.get(format!("{}/metrics", target.base_url())).send()?.text()?;
    let stored = metrics
        .lines()
        .find_map(|l| l.strip_prefix(stored_metric)?.trim().parse::<f64>().ok())
        .with_context(|| format!("{stored_metric} missing from {}'s /metrics", target.name))?;
    Ok(EndToEnd { wall_s, cpu_s, stored })
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let trace = if cli.trace.as_os_str() == "embedded" {
        Trace::embedded()?
    } else {
        Trace::load(&cli.trace)?
    };
    let (bodies, samples) = payload(&trace, &cli);
    let bytes: usize = bodies.iter().map(String::len).sum();
    println!(
        "payload: {} hosts x {} scrapes = {samples} samples in {} bodies, {:.1} MB",
        cli.targets,
        cli.scrapes,
        bodies.len(),
        bytes as f64 / 1e6
    );

    let (parsed, parse_cpu) = parse_only(&bodies)?;
    anyhow::ensure!(parsed == samples, "parser returned {parsed} samples of {samples}");
    let parser_rate = samples as f64 / parse_cpu;
    println!(
        "Cairn parser, one core: {:.2} M samples/CPU-s, {:.0} MB/CPU-s",
        parser_rate / 1e6,
        bytes as f64 / parse_cpu / 1e6
    );

    let vm = start_victoriametrics(Some(&cli.vm_bin), Some(&cli.work_dir))?;
    let vm_run = end_to_end(&vm, &bodies, cli.workers, "vm_rows_inserted_total{type=\"influx\"}")?;
    drop(vm);
    let cairn = start_cairn(&cli.cairn_bin, Some(&cli.work_dir))?;
    let cairn_run = end_to_end(
        &cairn,
        &bodies,
        cli.workers,
        "cairn_ingest_samples_total{protocol=\"influx\"}",
    )?;
    drop(cairn);

    let mut rows = Vec::new();
    for (name, r) in [("VictoriaMetrics", &vm_run), ("Cairn", &cairn_run)] {
        anyhow::ensure!(
            r.stored as usize == samples,
            "{name} stored {} of {samples} samples",
            r.stored
        );
        println!(
            "{name:>15} end to end: {:.2} M samples/s wall, {:.2} M samples/CPU-s ({:.2} CPU s)",
            samples as f64 / r.wall_s / 1e6,
            samples as f64 / r.cpu_s / 1e6,
            r.cpu_s
        );
        rows.push(json!({
            "server": name,
            "wall_seconds": r.wall_s,
            "cpu_seconds": r.cpu_s,
            "samples_per_second": samples as f64 / r.wall_s,
            "samples_per_cpu_second": samples as f64 / r.cpu_s,
        }));
    }
    let vm_per_cpu = samples as f64 / vm_run.cpu_s;
    let cairn_per_cpu = samples as f64 / cairn_run.cpu_s;
    println!(
        "ratios: Cairn parser per core / VictoriaMetrics end to end per CPU-s = {:.2}x; Cairn / VictoriaMetrics end to end per CPU-s = {:.2}x, wall = {:.2}x",
        parser_rate / vm_per_cpu,
        cairn_per_cpu / vm_per_cpu,
        vm_run.wall_s / cairn_run.wall_s
    );
    let report = json!({
        "samples": samples,
        "bytes": bytes,
        "bodies": bodies.len(),
        "parser_samples_per_cpu_second": parser_rate,
        "parser_bytes_per_cpu_second": bytes as f64 / parse_cpu,
        "end_to_end": rows,
        "parser_vs_victoriametrics_per_cpu": parser_rate / vm_per_cpu,
        "cairn_vs_victoriametrics_per_cpu": cairn_per_cpu / vm_per_cpu,
    });
    std::fs::write(&cli.report, serde_json::to_string_pretty(&report)?)
        .with_context(|| format!("write {}", cli.report.display()))?;
    Ok(())
}
