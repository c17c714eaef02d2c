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

#[derive(Debug, Clone, Default, Serialize)]
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
    /// Answers that said they may miss data.
    pub partial: u64,
    pub latency_ms: LatencyReport,
    pub last_error: Option<String>,
    /// Series in the last successful result.
    pub last_series: usize,
}

/// The queries of one class (see `QueryKind::class`) together.
#[derive(Debug, Clone, Serialize)]
pub struct QueryClassReport {
    pub class: String,
    pub errors: u64,
    pub latency_ms: LatencyReport,
}

/// One stage of a ramp (stages.rs).
#[derive(Debug, Clone, Default, Serialize)]
pub struct StageReport {
    pub targets: usize,
    pub duration_s: f64,
    /// Whether the run reached the stage (`--stop-when-behind` ends a ramp early).
    pub ran: bool,
    pub samples_generated: u64,
    pub samples_delivered: u64,
    pub samples_failed: u64,
    pub samples_per_second: f64,
    pub max_lag_s: f64,
    pub query_rounds: u64,
    pub query_rounds_late: u64,
    pub query_latency_ms: LatencyReport,
    /// It ran, nothing failed, no query round started late, and the
    /// generator never fell a scrape interval behind.
    pub kept_up: bool,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct GeneratorReport {
    pub cpu_seconds: f64,
    pub cpu_percent: f64,
    pub max_lag_s: f64,
    pub behind_warnings: u64,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct TargetReport {
    pub pid: u32,
    pub cpu_seconds: Option<f64>,
    pub cpu_seconds_per_million_samples: Option<f64>,
    /// The part of `cpu_seconds` the target reports as ingestion's, where it
    /// reports one (Cairn does); the rest is the read load's.
    pub ingest_cpu_seconds: Option<f64>,
    pub ingest_cpu_seconds_per_million_samples: Option<f64>,
    pub query_cpu_seconds_per_million_samples: Option<f64>,
    pub rss_peak_bytes: Option<u64>,
    pub rss_last_bytes: Option<u64>,
    pub disk_last_bytes: Option<u64>,
    pub disk_bytes_per_sample: Option<f64>,
    /// Bytes between a cluster's nodes (series frames of writes and of
    /// select answers) per sample delivered, where the system counts them
    /// (a Cairn cluster does).
    pub peer_bytes_per_sample: Option<f64>,
    /// Of those, the writes' to the series' owners.
    pub peer_write_bytes_per_sample: Option<f64>,
    /// Ingesters a read of the cluster asked, on average (a Cairn cluster
    /// counts them).
    pub read_fan_out: Option<f64>,
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

#[derive(Debug, Clone, Default, Serialize)]
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
    /// Answers that said they may miss data.
    pub query_partial: u64,
    pub query_rounds: u64,
    pub query_rounds_late: u64,
    pub queries: Vec<QueryReport>,
    pub query_classes: Vec<QueryClassReport>,
    pub generator: GeneratorReport,
    pub target: Option<TargetReport>,
    pub timeline: Vec<TimelinePoint>,
    /// A real-time ramp's stages, in order.
    pub stages: Vec<StageReport>,
    /// The largest load of the ramp kept up with, every smaller one too.
    pub capacity_targets: Option<usize>,
    pub errors: Vec<String>,
    /// Faults injected during the run (a storage node killed, started again), in order.
    pub faults: Vec<String>,
    /// After a run with faults: the samples the system gives back of the
    /// run's span, counted by itself.
    pub samples_read_back: Option<u64>,
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
        if let Some(n) = self.samples_read_back {
            row(
                "samples read back",
                format!("{n} of {} delivered", self.samples_delivered),
            );
        }
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
        for c in &self.query_classes {
            let l = &c.latency_ms;
            row(
                &format!("  {} p50/p90/p99", c.class),
                format!("{:.1} / {:.1} / {:.1} ms ({} queries)", l.p50, l.p90, l.p99, l.count),
            );
        }
        row(
            "query errors, partial answers (late rounds)",
            format!(
                "{}, {} ({} of {})",
                self.query_errors, self.query_partial, self.query_rounds_late, self.query_rounds
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
            if let (Some(i), Some(q)) = (
                t.ingest_cpu_seconds_per_million_samples,
                t.query_cpu_seconds_per_million_samples,
            ) {
                row("  of it ingest / queries", format!("{i:.3} / {q:.3}"));
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
            if let (Some(all), Some(writes)) = (t.peer_bytes_per_sample, t.peer_write_bytes_per_sample) {
                row("between nodes B/sample", format!("{all:.2} (writes {writes:.2})"));
            }
            if let Some(f) = t.read_fan_out {
                row("ingesters asked per read", format!("{f:.2}"));
            }
        }
        if !self.stages.is_empty() {
            let capacity = self
                .capacity_targets
                .map_or("none of the stages".into(), |t| format!("{t} targets"));
            row("kept up with", capacity);
            let _ = writeln!(
                s,
                "  {:<8} {:>8} {:>12} {:>7} {:>8} {:>7} {:>9}  kept up",
                "stage", "targets", "samples/s", "failed", "lag s", "late", "q p99 ms"
            );
            for (i, st) in self.stages.iter().enumerate() {
                let _ = writeln!(
                    s,
                    "  {:<8} {:>8} {:>12.0} {:>7} {:>8.1} {:>7} {:>9.1}  {}",
                    i + 1,
                    st.targets,
                    st.samples_per_second,
                    st.samples_failed,
                    st.max_lag_s,
                    st.query_rounds_late,
                    st.query_latency_ms.p99,
                    match (st.ran, st.kept_up) {
                        (false, _) => "not run",
                        (true, true) => "yes",
                        (true, false) => "no",
                    }
                );
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
        for f in &self.faults {
            let _ = writeln!(s, "  fault: {f}");
        }
        for e in self.errors.iter().take(5) {
            let _ = writeln!(s, "  error: {e}");
        }
        s
    }
}

/// One figure of a report, if the report has it.
type Figure = Box<dyn Fn(&Report) -> Option<f64>>;
type Metric = (String, Figure);

/// The rows of the comparison table: delivery, latency per query class,
/// late rounds, CPU split into ingest and queries where known, memory, disk.
fn compared_metrics(reports: &[Report]) -> Vec<Metric> {
    let mut m: Vec<Metric> = Vec::new();
    let mut add = |name: &str, f: Figure| m.push((name.to_string(), f));
    add("samples/s delivered", Box::new(|r| Some(r.samples_per_second)));
    add(
        "samples not delivered",
        Box::new(|r| Some(r.samples_generated.saturating_sub(r.samples_delivered) as f64)),
    );
    add("write latency p99 ms", Box::new(|r| Some(r.write_latency_ms.p99)));
    let mut classes: Vec<String> = Vec::new();
    for c in reports.iter().flat_map(|r| &r.query_classes) {
        if !classes.contains(&c.class) {
            classes.push(c.class.clone());
        }
    }
    type Quantile = fn(&LatencyReport) -> f64;
    let quantiles: [(&str, Quantile); 3] = [("p50", |l| l.p50), ("p90", |l| l.p90), ("p99", |l| l.p99)];
    for class in classes {
        for (q, f) in quantiles {
            let c = class.clone();
            add(
                &format!("{class} {q} ms"),
                Box::new(move |r| r.query_classes.iter().find(|x| x.class == c).map(|x| f(&x.latency_ms))),
            );
        }
    }
    add("query errors", Box::new(|r| Some(r.query_errors as f64)));
    add("partial answers", Box::new(|r| Some(r.query_partial as f64)));
    add(
        "samples delivered, not read back",
        Box::new(|r| {
            r.samples_read_back
                .map(|n| r.samples_delivered.saturating_sub(n) as f64)
        }),
    );
    add("late query rounds", Box::new(|r| Some(r.query_rounds_late as f64)));
    let stages = reports.iter().map(|r| r.stages.len()).max().unwrap_or(0);
    for i in 0..stages {
        let targets = reports.iter().find_map(|r| r.stages.get(i)).map_or(0, |st| st.targets);
        add(
            &format!("stage {} ({targets}) lag s", i + 1),
            Box::new(move |r| r.stages.get(i).map(|st| st.max_lag_s)),
        );
        add(
            &format!("stage {} kept up", i + 1),
            Box::new(move |r| r.stages.get(i).map(|st| f64::from(u8::from(st.kept_up)))),
        );
    }
    if stages > 0 {
        add(
            "capacity, targets",
            Box::new(|r| Some(r.capacity_targets.unwrap_or(0) as f64)),
        );
    }
    let target = |f: fn(&TargetReport) -> Option<f64>| -> Figure { Box::new(move |r| r.target.as_ref().and_then(f)) };
    add("CPU s / M samples", target(|t| t.cpu_seconds_per_million_samples));
    add("  of it ingest", target(|t| t.ingest_cpu_seconds_per_million_samples));
    add("  of it queries", target(|t| t.query_cpu_seconds_per_million_samples));
    add("RSS peak MB", target(|t| t.rss_peak_bytes.map(|b| b as f64 / 1e6)));
    add("RSS last MB", target(|t| t.rss_last_bytes.map(|b| b as f64 / 1e6)));
    add("disk B / sample", target(|t| t.disk_bytes_per_sample));
    add("between nodes B / sample", target(|t| t.peer_bytes_per_sample));
    m
}

/// A table of the main figures of each report and the first's ratio to
/// each other's (below 1: the first needs less time, CPU, memory or disk).
pub fn ratios(reports: &[Report]) -> String {
    let Some(first) = reports.first() else {
        return String::new();
    };
    let short = |n: &str| n.chars().take(7).collect::<String>();
    let mut s = String::new();
    let _ = write!(s, "\n{:<26}", "");
    for r in reports {
        let _ = write!(s, " {:>14}", r.name);
    }
    for r in &reports[1..] {
        let _ = write!(s, " {:>16}", format!("{}/{}", short(&first.name), short(&r.name)));
    }
    s.push('\n');
    for (name, f) in compared_metrics(reports) {
        let _ = write!(s, "{name:<26}");
        for r in reports {
            match f(r) {
                Some(v) => write!(s, " {v:>14.3}"),
                None => write!(s, " {:>14}", "-"),
            }
            .ok();
        }
        for r in &reports[1..] {
            match (f(first), f(r)) {
                (Some(a), Some(b)) if b != 0.0 => write!(s, " {:>16.2}", a / b),
                _ => write!(s, " {:>16}", "-"),
            }
            .ok();
        }
        s.push('\n');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(name: &str, alert_p50: f64, dashboard_p99: f64, ingest_cpu: Option<f64>) -> Report {
        let class = |class: &str, p50: f64, p99: f64| QueryClassReport {
            class: class.into(),
            errors: 0,
            latency_ms: LatencyReport {
                count: 10,
                p50,
                p90: p50,
                p99,
                max: p99,
            },
        };
        Report {
            name: name.into(),
            query_classes: vec![
                class("alert rules", alert_p50, 50.0),
                class("dashboards", 1.0, dashboard_p99),
            ],
            query_rounds_late: 1,
            target: Some(TargetReport {
                cpu_seconds_per_million_samples: Some(2.0),
                ingest_cpu_seconds_per_million_samples: ingest_cpu,
                query_cpu_seconds_per_million_samples: ingest_cpu.map(|i| 2.0 - i),
                ..TargetReport::default()
            }),
            ..Report::default()
        }
    }

    /// The cells of the table row called `name`.
    fn row(table: &str, name: &str) -> Vec<String> {
        let line = table.lines().find(|l| l.starts_with(name)).expect(name);
        line[name.len()..].split_whitespace().map(str::to_string).collect()
    }

    #[test]
    fn ratio_table_compares_each_query_class_and_splits_cpu_where_known() {
        let t = ratios(&[report("cairn", 5.0, 20.0, Some(0.5)), report("vm", 10.0, 10.0, None)]);
        assert_eq!(row(&t, "alert rules p50 ms"), ["5.000", "10.000", "0.50"]);
        assert_eq!(row(&t, "alert rules p99 ms"), ["50.000", "50.000", "1.00"]);
        assert_eq!(row(&t, "dashboards p99 ms"), ["20.000", "10.000", "2.00"]);
        assert_eq!(row(&t, "late query rounds"), ["1.000", "1.000", "1.00"]);
        assert_eq!(row(&t, "  of it ingest"), ["0.500", "-", "-"]);
        assert_eq!(row(&t, "  of it queries"), ["1.500", "-", "-"]);
        assert!(t.lines().next_back().unwrap().starts_with("between nodes B / sample"));
        assert_eq!(row(&t, "between nodes B / sample"), ["-", "-", "-"]);
    }

    #[test]
    fn a_ramp_compares_each_stage_and_the_capacity() {
        let ramp = |kept_up: [bool; 2], lag: f64| {
            let stages: Vec<StageReport> = [300, 600]
                .into_iter()
                .zip(kept_up)
                .map(|(targets, kept_up)| StageReport {
                    targets,
                    kept_up,
                    max_lag_s: lag,
                    ..StageReport::default()
                })
                .collect();
            Report {
                capacity_targets: crate::stages::capacity(&stages),
                stages,
                ..report("x", 1.0, 1.0, None)
            }
        };
        let t = ratios(&[ramp([true, true], 0.5), ramp([true, false], 20.0)]);
        assert_eq!(row(&t, "stage 2 (600) lag s"), ["0.500", "20.000", "0.03"]);
        assert_eq!(row(&t, "stage 2 kept up"), ["1.000", "0.000", "-"]);
        assert_eq!(row(&t, "capacity, targets"), ["600.000", "300.000", "2.00"]);
        let summary = ramp([false, true], 1.0).summary();
        assert!(
            summary.contains("kept up with                 none of the stages"),
            "{summary}"
        );
    }
}
