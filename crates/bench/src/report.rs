//! The report of a run: JSON (machine-readable) and a summary table.

use std::fmt::Write as _;

use serde::Serialize;

use crate::histogram::Histogram;

#[derive(Debug, Clone, Default, Serialize)]
pub struct LatencyReport {
    pub count: u64,
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub max: f64,
}

impl LatencyReport {
    pub fn of(h: &Histogram) -> Self {
        Self {
            count: h.count(),
            p50: h.quantile_ms(0.5),
            p90: h.quantile_ms(0.9),
            p99: h.quantile_ms(0.99),
            max: h.quantile_ms(1.0),
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct WorkloadReport {
    pub targets: usize,
    pub series_per_target: usize,
    pub active_series: usize,
    pub scrape_interval_s: f64,
    pub churn_percent: f64,
    pub churn_interval_s: f64,
    pub replicas: usize,
    pub stages: Vec<String>,
    pub data_span_s: f64,
    pub data_start_ms: i64,
    pub data_end_ms: i64,
    pub query_interval_s: f64,
    pub rules: usize,
    /// `1.0` or `2.0`.
    pub remote_write_protocol: String,
    pub concurrency: usize,
    pub batch_samples: usize,
}

#[derive(Debug, Clone, Serialize)]
pub struct QueryReport {
    pub name: String,
    pub kind: String,
    pub expr: String,
    pub count: u64,
    pub errors: u64,
    pub latency_ms: LatencyReport,
    pub last_error: Option<String>,
    /// Series in the last successful result.
    pub last_series: usize,
}

#[derive(Debug, Clone, Serialize)]
pub struct GeneratorReport {
    pub cpu_seconds: f64,
    pub cpu_percent: f64,
    pub max_lag_s: f64,
    pub behind_warnings: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct TargetReport {
    pub pid: u32,
    pub cpu_seconds: Option<f64>,
    pub cpu_seconds_per_million_samples: Option<f64>,
    pub rss_peak_bytes: Option<u64>,
    pub rss_last_bytes: Option<u64>,
    pub disk_last_bytes: Option<u64>,
    pub disk_bytes_per_sample: Option<f64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct TimelinePoint {
    pub t_s: f64,
    pub samples_delivered: u64,
    pub samples_per_second: f64,
    pub queue: u64,
    pub write_errors: u64,
    pub query_errors: u64,
    pub query_p99_ms: f64,
    pub target_cpu_percent: Option<f64>,
    pub target_rss_bytes: Option<u64>,
    pub disk_bytes: Option<u64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub name: String,
    pub write_url: String,
    pub query_url: Option<String>,
    pub mode: String,
    pub workload: WorkloadReport,
    pub elapsed_s: f64,
    pub samples_generated: u64,
    pub samples_delivered: u64,
    pub samples_failed: u64,
    pub samples_per_second: f64,
    pub requests: u64,
    pub requests_rejected: u64,
    pub retries: u64,
    pub bytes_sent: u64,
    pub write_latency_ms: LatencyReport,
    pub query_latency_ms: LatencyReport,
    pub query_errors: u64,
    pub query_rounds: u64,
    pub query_rounds_late: u64,
    pub queries: Vec<QueryReport>,
    pub generator: GeneratorReport,
    pub target: Option<TargetReport>,
    pub timeline: Vec<TimelinePoint>,
    pub errors: Vec<String>,
}

fn mb(b: u64) -> String {
    format!("{:.1} MB", b as f64 / 1e6)
}

impl Report {
    /// A human summary: totals, then per-query latencies.
    pub fn summary(&self) -> String {
        let w = &self.workload;
        let mut s = String::new();
        let _ = writeln!(
            s,
            "{} ({}) {} targets x {} series x {} replicas, every {}s, churn {}%/{}s, data span {:.0}s",
            self.name,
            self.mode,
            w.targets,
            w.series_per_target,
            w.replicas,
            w.scrape_interval_s,
            w.churn_percent,
            w.churn_interval_s,
            w.data_span_s
        );
        let mut row = |k: &str, v: String| {
            let _ = writeln!(s, "  {k:<28} {v}");
        };
        row("elapsed", format!("{:.1} s", self.elapsed_s));
        row(
            "samples delivered",
            format!("{} of {} generated", self.samples_delivered, self.samples_generated),
        );
        row("samples/s delivered", format!("{:.0}", self.samples_per_second));
        row("samples failed", self.samples_failed.to_string());
        row(
            "requests (rejected, retries)",
            format!("{} ({}, {})", self.requests, self.requests_rejected, self.retries),
        );
        row("bytes sent", mb(self.bytes_sent));
        let l = &self.write_latency_ms;
        row(
            "write latency p50/p90/p99",
            format!("{:.1} / {:.1} / {:.1} ms", l.p50, l.p90, l.p99),
        );
        let q = &self.query_latency_ms;
        row(
            "query latency p50/p90/p99",
            format!("{:.1} / {:.1} / {:.1} ms ({} queries)", q.p50, q.p90, q.p99, q.count),
        );
        row(
            "query errors (late rounds)",
            format!(
                "{} ({} of {})",
                self.query_errors, self.query_rounds_late, self.query_rounds
            ),
        );
        row(
            "generator CPU",
            format!(
                "{:.1} s ({:.0}% of one core), max lag {:.1} s",
                self.generator.cpu_seconds, self.generator.cpu_percent, self.generator.max_lag_s
            ),
        );
        if let Some(t) = &self.target {
            if let Some(c) = t.cpu_seconds {
                row("target CPU", format!("{c:.1} s"));
            }
            if let Some(c) = t.cpu_seconds_per_million_samples {
                row("target CPU s / M samples", format!("{c:.3}"));
            }
            if let Some(r) = t.rss_peak_bytes {
                row("target RSS peak", mb(r));
            }
            if let Some(d) = t.disk_last_bytes {
                row("target disk", mb(d));
            }
            if let Some(d) = t.disk_bytes_per_sample {
                row("target disk B/sample", format!("{d:.3}"));
            }
        }
        if !self.queries.is_empty() {
            let _ = writeln!(
                s,
                "  {:<40} {:>6} {:>6} {:>9} {:>9} {:>9} {:>7}",
                "query", "count", "errors", "p50 ms", "p90 ms", "p99 ms", "series"
            );
            for q in &self.queries {
                let _ = writeln!(
                    s,
                    "  {:<40} {:>6} {:>6} {:>9.1} {:>9.1} {:>9.1} {:>7}",
                    q.name.chars().take(40).collect::<String>(),
                    q.count,
                    q.errors,
                    q.latency_ms.p50,
                    q.latency_ms.p90,
                    q.latency_ms.p99,
                    q.last_series
                );
            }
        }
        for e in self.errors.iter().take(5) {
            let _ = writeln!(s, "  error: {e}");
        }
        s
    }
}

/// A table of the main figures of each report and their ratio to the first.
pub fn ratios(reports: &[Report]) -> String {
    type Metric = fn(&Report) -> Option<f64>;
    let metrics: [(&str, Metric); 9] = [
        ("samples/s delivered", |r| Some(r.samples_per_second)),
        ("samples failed", |r| Some(r.samples_failed as f64)),
        ("write latency p99 ms", |r| Some(r.write_latency_ms.p99)),
        ("query latency p50 ms", |r| Some(r.query_latency_ms.p50)),
        ("query latency p99 ms", |r| Some(r.query_latency_ms.p99)),
        ("query errors", |r| Some(r.query_errors as f64)),
        ("CPU s / M samples", |r| {
            r.target.as_ref().and_then(|t| t.cpu_seconds_per_million_samples)
        }),
        ("RSS peak MB", |r| {
            r.target.as_ref().and_then(|t| t.rss_peak_bytes).map(|b| b as f64 / 1e6)
        }),
        ("disk B / sample", |r| {
            r.target.as_ref().and_then(|t| t.disk_bytes_per_sample)
        }),
    ];
    let mut s = String::new();
    let _ = write!(s, "\n{:<24}", "");
    for r in reports {
        let _ = write!(s, " {:>16}", r.name);
    }
    let short = |n: &str| n.chars().take(7).collect::<String>();
    for r in reports.iter().skip(1) {
        let _ = write!(s, " {:>16}", format!("{}/{}", short(&r.name), short(&reports[0].name)));
    }
    s.push('\n');
    for (name, f) in metrics {
        let _ = write!(s, "{name:<24}");
        for r in reports {
            match f(r) {
                Some(v) => {
                    let _ = write!(s, " {v:>16.3}");
                }
                None => {
                    let _ = write!(s, " {:>16}", "-");
                }
            }
        }
        let first = f(&reports[0]);
        for r in reports.iter().skip(1) {
            match (f(r), first) {
                (Some(v), Some(b)) if b != 0.0 => {
                    let _ = write!(s, " {:>16.2}", v / b);
                }
                _ => {
                    let _ = write!(s, " {:>16}", "-");
                }
            }
        }
        s.push('\n');
    }
    s
}
