//! The configuration and rule files of the test: the node_exporter alerts of
//! the benchmark (`../shared/benchdata/`) with their `for:` shortened, and a
//! group of recording rules and templated alerts of our own.

use std::path::Path;

/// The benchmark's alerts with `for:` durations shortened from minutes to
/// seconds (a week to 30 s), so pending alerts fire within the test.
/// `concurrency:` is removed: it is vmalert's (the benchmark comes from
/// VictoriaMetrics), and Prometheus refuses the file with it.
/// Each group gets a heartbeat rule (`rulesdiff:heartbeat{group="…"}`)
/// first, whose samples show when the group evaluates.
pub fn node_exporter_alerts() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/benchdata/prometheus-benchmark-alerts.yaml");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut group = "";
    let mut out = Vec::new();
    for l in text.lines().filter(|l| !l.trim_start().starts_with("concurrency:")) {
        let indent = &l[..l.len() - l.trim_start().len()];
        let trimmed = l.trim_start();
        if let Some(name) = trimmed.strip_prefix("- name: ") {
            group = name.trim();
        }
        match trimmed.strip_prefix("for: ") {
            Some(d) => {
                let short = match d.trim() {
                    "1w" => "30s".to_string(),
                    m => m.strip_suffix('m').map_or(m.to_string(), |n| format!("{n}s")),
                };
                out.push(format!("{indent}for: {short}"));
            }
            None => out.push(l.to_string()),
        }
        if trimmed == "rules:" {
            out.push(format!(
                "{indent}- record: rulesdiff:heartbeat\n{indent}  expr: vector(1)\n{indent}  labels:\n{indent}    group: {group}"
            ));
        }
    }
    out.join("\n")
}

/// Recording rules (aggregations, a scalar, a literal, a rule reading an
/// earlier rule of its group, added labels) and alerts whose labels and
/// annotations are templates, one with `keep_firing_for`.
pub const OUR_GROUP: &str = r#"
  - name: rulesdiff
    rules:
      - record: rulesdiff:heartbeat
        expr: vector(1)
        labels:
          group: rulesdiff
      - record: rulesdiff:fs_used:ratio
        expr: 1 - node_filesystem_avail_bytes{fstype!~"tmpfs|fuse.*"} / node_filesystem_size_bytes
        labels:
          source: rulesdiff
      - record: rulesdiff:fs_used:max
        expr: max by (job) (rulesdiff:fs_used:ratio)
      - record: instance:node_cpu_busy:rate10s
        expr: sum without (cpu, mode) (rate(node_cpu_seconds_total{mode!="idle"}[10s]))
      - record: job:node_memory_available:ratio
        expr: sum by (job) (node_memory_MemAvailable_bytes) / sum by (job) (node_memory_MemTotal_bytes)
      - record: rulesdiff:nodes
        expr: scalar(count(node_memory_MemTotal_bytes))
      - record: rulesdiff:answer
        expr: 42
        labels:
          kind: literal
      - alert: FilesystemAlmostFull
        expr: rulesdiff:fs_used:ratio > 0.9
        for: 2s
        keep_firing_for: 3s
        labels:
          severity: '{{ if gt $value 0.95 }}critical{{ else }}warning{{ end }}'
          volume: '{{ $labels.mountpoint }}'
        annotations:
          summary: '{{ $labels.instance }}: {{ $labels.mountpoint }} is {{ $value | humanizePercentage }} full'
          description: 'used {{ printf "%.3f" $value }} of {{ with query "rulesdiff:nodes" }}{{ . | first | value }}{{ end }} nodes'
          sizes: '{{ humanize1024 1073741824 }} {{ humanize 1234567 }} {{ humanizeDuration 3661 }} {{ "x.y" | reReplaceAll "\\." "-" | toUpper }}'
      - alert: FewNodes
        expr: rulesdiff:nodes < 10
        labels:
          nodes: '{{ $value }}'
        annotations:
          summary: 'only {{ $value }} nodes ({{ $labels }})'
      - alert: CpuBusy
        expr: instance:node_cpu_busy:rate10s > 0.25
        for: 1s
        labels:
          severity: page
        annotations:
          summary: '{{ $labels.instance }} busy {{ printf "%.2f" $value }}'
"#;

/// The rule file: both groups.
pub fn rules() -> String {
    format!("{}\n{OUR_GROUP}", node_exporter_alerts())
}

/// How often every server evaluates the groups (prometheus.yml's
/// `evaluation_interval`).
pub const EVALUATION_INTERVAL_MS: i64 = 1000;

/// prometheus.yml for one replica.
pub fn prometheus_yml(rule_file: &Path, alertmanager: &str, replica: &str) -> String {
    format!(
        r#"global:
  evaluation_interval: {EVALUATION_INTERVAL_MS}ms
  external_labels:
    replica: {replica}
rule_files:
  - {rules}
alerting:
  alertmanagers:
    - static_configs:
        - targets: ['{alertmanager}']
"#,
        rules = rule_file.display(),
    )
}

/// A scrape job `job` of the targets `(address, instance)`, scraped every
/// `interval_ms` (the exposition's timestamps kept, and a series that
/// disappears marked stale).
pub fn scrape_configs(job: &str, interval_ms: u64, targets: &[(String, String)]) -> String {
    let mut y = format!(
        "scrape_configs:\n  - job_name: {job}\n    scrape_interval: {interval_ms}ms\n    \
         scrape_timeout: {interval_ms}ms\n    track_timestamps_staleness: true\n    static_configs:\n"
    );
    for (address, instance) in targets {
        y.push_str(&format!(
            "      - targets: ['{address}']\n        labels:\n          instance: '{instance}'\n"
        ));
    }
    y
}

/// alertmanager.yml: every alert its own group, notified to `webhook` at
/// once and again on resolution.
pub fn alertmanager_yml(webhook: &str) -> String {
    format!(
        r#"route:
  receiver: hook
  group_by: ['...']
  group_wait: 0s
  group_interval: 1s
  repeat_interval: 1h
receivers:
  - name: hook
    webhook_configs:
      - url: '{webhook}'
        send_resolved: true
"#
    )
}
