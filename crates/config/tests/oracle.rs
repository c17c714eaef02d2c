//! Differential check against a real Prometheus: every configuration Cairn
//! rejects for a reason Prometheus shares must be rejected by Prometheus too,
//! and every configuration Cairn accepts must be accepted by Prometheus.
//!
//! Starts the Prometheus binary once per configuration (`PROMETHEUS_BIN`,
//! default the 3.14 peer); without it the test prints SKIPPED, unless CI is set.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use cairn_config::Config;

/// Configurations both must accept.
const ACCEPTED: &[&str] = &[
    "",
    "global:\n",
    "scrape_configs:\n  - job_name: node\n    static_configs: [{targets: ['localhost:9100']}]\n",
    "global: {scrape_interval: 5s}\nscrape_configs:\n  - {job_name: a, scrape_interval: 0}\n",
    "scrape_configs:\n  - {job_name: 123, static_configs: [{targets: ['a:1'], labels: {port: 9100}}]}\n",
    "scrape_configs:\n  - {job_name: a, body_size_limit: 1.5GB512MB}\n",
    "scrape_configs:\n  - {job_name: a, body_size_limit: 0}\n",
    "scrape_configs:\n  - {job_name: a, scrape_interval: 1y2w3d4h5m6s7ms, scrape_timeout: 10s}\n",
    "scrape_configs:\n  - job_name: a\n    relabel_configs: [{action: LabelMap, regex: '__meta_(.+)'}]\n",
    "scrape_configs:\n  - job_name: a\n    relabel_configs: [{target_label: 'a.b', replacement: x}]\n",
    "scrape_configs:\n  - job_name: a\n    relabel_configs: [{source_labels: [a], target_label: b, action: keepequal}]\n",
    "scrape_configs:\n  - job_name: a\n    relabel_configs: [{regex: '', target_label: y}]\n    metric_relabel_configs:\n      - regex:\n        target_label: x\n",
    "scrape_configs:\n  - {job_name: a, scheme: ftp}\n",
    "scrape_configs:\n  - job_name: a\n    bearer_token: tok\n",
    "scrape_configs:\n  - job_name: a\n    authorization: {type: Token, credentials: c}\n",
    "alerting:\n  alertmanagers: [{static_configs: [{targets: ['am:9093']}], api_version: v2, timeout: 1s}]\n",
    "remote_write:\n  - url: http://a/w\n    queue_config: {capacity: 1}\n    metadata_config: {send: false}\n",
    "global:\n  external_labels: {replica: $HOSTNAME, cost: $$5}\n",
    "scrape_configs:\n  - &defaults\n    job_name: a\n    scrape_interval: 30s\n  - <<: *defaults\n    job_name: b\n",
    "scrape_configs:\n  - {job_name: a, honor_labels: yes, honor_timestamps: off, scrape_native_histograms: On}\n",
    "remote_write:\n  - url: 'ftp://a/w'\n  - url: a/w\n",
    "global:\n  metric_name_validation_scheme: ''\nscrape_configs:\n  - {job_name: a, metric_name_validation_scheme: ''}\n",
    "scrape_configs:\n  - job_name: a\n    static_configs:\n      - targets:\n        labels:\n",
    "scrape_configs:\n  - {job_name: a, params: {a: [1, true]}, static_configs: [{targets: [9100]}]}\n",
    "scrape_configs:\n  - job_name: a\n    relabel_configs: [{source_labels: [1], target_label: b}]\n",
    "global:\n  external_labels: {a: null, b: ''}\n",
    "scrape_configs:\n  - {job_name: a, basic_auth: {}, tls_config: null, authorization: null}\n",
    "alerting:\n  alertmanagers:\n  alert_relabel_configs:\n",
    "remote_write:\n  - {url: 'http://a/w', headers: {X-A: 1}, metadata_config: {}}\n",
    "scrape_configs:\n  - {job_name: a, http_headers: {X-A: {values: [1]}}}\n",
    "scrape_configs:\n  - {job_name: a, file_sd_configs: [{files: ['*.json'], refresh_interval: 0}]}\n",
    "scrape_configs:\n  - {job_name: a, scrape_protocols: [PrometheusProto], fallback_scrape_protocol: PrometheusText1.0.0}\n",
    "global: {body_size_limit: 1KiB, scrape_interval: 1h, scrape_timeout: 1h}\nscrape_configs:\n  - {job_name: a, scrape_timeout: 1h}\n",
    "scrape_configs:\n  - job_name: a\n    relabel_configs:\n      - action: replace\n        source_labels: []\n        target_label: x\n        replacement: y\n",
    "scrape_configs:\n  - job_name: a\n    scrape_interval:\n    honor_timestamps:\n    body_size_limit:\n    fallback_scrape_protocol: ''\n",
    "scrape_configs:\n  - {job_name: a, proxy_url: 'localhost:3128', tls_config: {min_version: TLS13, max_version: TLS12}}\n",
    "scrape_configs:\n  - {job_name: 'a/b', static_configs: [{targets: ['a b', '']}], authorization: {type: ''}}\n",
    "alerting:\n  alertmanagers: [{timeout: 0s, scheme: ftp}]\nremote_write:\n  - {url: 'http://a/w', name: ''}\n  - {url: 'http://b/w', name: ''}\n",
    "global:\n  metric_name_escaping_scheme: dots\nscrape_configs:\n  - {job_name: a, native_histogram_min_bucket_factor: -1, http_headers: {X: {files: [f]}}}\n",
    "scrape_configs:\n  - {job_name: a, sample_limit: 1e3, label_limit: null, target_limit: 2.0}\n",
    "global:\n  metric_name_validation_scheme: legacy\nscrape_configs:\n  - {job_name: a}\n",
    "scrape_configs:\n  - job_name: a\n    dns_sd_configs:\n      - {names: [_a._tcp.b], port: 80, refresh_interval: 5s}\n      - {names: [a, b], type: aaaa, port: -1}\n      - {names: [c], type: Mx, port: 25}\n      - {names: [d], type: NS, port: 53}\n",
    "alerting:\n  alertmanagers: [{dns_sd_configs: [{names: [a], type: A, port: 9093}]}]\n",
];

/// What Prometheus did with a configuration.
#[derive(Debug, PartialEq)]
enum Verdict {
    Accepted,
    Rejected(String),
}

fn prometheus(binary: &Path, yaml: &str) -> Verdict {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("prometheus.yml");
    std::fs::write(&config, yaml).unwrap();
    let mut child = Command::new(binary)
        .arg(format!("--config.file={}", config.display()))
        .arg(format!("--storage.tsdb.path={}", dir.path().join("data").display()))
        .arg("--web.listen-address=127.0.0.1:0")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start prometheus");
    let stderr = BufReader::new(child.stderr.take().unwrap());
    let mut verdict = Verdict::Rejected("no verdict before exit".into());
    for line in stderr.lines().map_while(Result::ok) {
        if line.contains("Error loading config") {
            verdict = Verdict::Rejected(line);
            break;
        }
        // Loading succeeded; applying it (opening files, clients) is not our concern.
        if line.contains("Completed loading of configuration file") || line.contains("Failed to apply configuration") {
            verdict = Verdict::Accepted;
            break;
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    verdict
}

fn binary() -> Option<PathBuf> {
    let path = PathBuf::from(prometheus_bin());
    path.exists().then_some(path)
}

#[test]
fn oracle_prometheus_agrees_on_accepted_configs() {
    let Some(binary) = binary() else {
        assert!(std::env::var_os("CI").is_none(), "Prometheus 3.14 missing under CI");
        println!("SKIPPED: no Prometheus binary");
        return;
    };
    let mut failures = Vec::new();
    let full = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/testdata/full.yml")).unwrap();
    for yaml in ACCEPTED.iter().copied().chain([full.as_str()]) {
        if let Err(e) = Config::parse(yaml, Path::new("/")) {
            failures.push(format!("Cairn rejects:\n{yaml}\n  {e}"));
        }
        if let Verdict::Rejected(why) = prometheus(&binary, yaml) {
            failures.push(format!("Prometheus rejects:\n{yaml}\n  {why}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn oracle_prometheus_agrees_on_rejected_configs() {
    let Some(binary) = binary() else {
        assert!(std::env::var_os("CI").is_none(), "Prometheus 3.14 missing under CI");
        println!("SKIPPED: no Prometheus binary");
        return;
    };
    let mut failures = Vec::new();
    for (yaml, expected) in crate::cases::REJECTED {
        let verdict = prometheus(&binary, yaml);
        let unsupported = expected.ends_with("is not supported by Cairn");
        match (unsupported, verdict) {
            (false, Verdict::Accepted) => failures.push(format!("Prometheus accepts:\n{yaml}")),
            (true, Verdict::Rejected(why)) => failures.push(format!(
                "Prometheus rejects what Cairn calls unsupported:\n{yaml}\n  {why}"
            )),
            _ => {}
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// `PROMETHEUS_BIN`, or Prometheus 3.14 from `../shared/peers/` beside the repository.
fn prometheus_bin() -> String {
    std::env::var("PROMETHEUS_BIN")
        .unwrap_or_else(|_| format!("{}/../../../shared/peers/prometheus-3.14.0", env!("CARGO_MANIFEST_DIR")))
}
