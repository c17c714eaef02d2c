//! Differential test of scraping: Cairn, Prometheus 3.14 (`../shared/peers/`,
//! the oracle) and Debian's Prometheus 2.42 scrape the same targets with the
//! same configuration file: a synthetic exporter (tests/scrape/exporter.rs)
//! whose series change, appear and disappear in phases, whose targets come
//! and go through file and HTTP service discovery and one of which starts
//! failing; and a real `prometheus-node-exporter`. Target and metric
//! relabelling use every action, one job honours the exporter's labels and
//! timestamps and another does not.
//!
//! Every raw sample each server stored is read back through remote read
//! (staleness markers included) and compared series by series: the same
//! series, the same values in the same order (one scraper may have scraped
//! a phase more often than another: repeats are collapsed), the same
//! staleness markers in the same places, and the exporter's own timestamps
//! exactly. Scrape durations and node_exporter's values depend on the
//! moment, so only their series and staleness are compared.
//! [`known_differences_of_2_42`] lists what Prometheus 2.42 does otherwise.
//!
//! Without the peers the test prints `SKIPPED` and passes, unless `CI` is
//! set, where that is a failure.

use crate::scrape::exporter;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::common::peers::{Prometheus, prometheus_3, require};
use crate::common::raw_read::{self, RawSeries};
use crate::common::*;
use exporter::{Exporter, now_ms};

const STALE_BITS: u64 = 0x7ff0_0000_0000_0002;

/// A started `prometheus-node-exporter` with a few stable collectors.
struct NodeExporter {
    child: Child,
    addr: String,
}

impl Drop for NodeExporter {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl NodeExporter {
    fn start(bin: &Path) -> Self {
        let addr = format!("127.0.0.1:{}", free_port());
        let child = Command::new(bin)
            .arg(format!("--web.listen-address={addr}"))
            .args([
                "--collector.disable-defaults",
                "--collector.loadavg",
                "--collector.uname",
                "--collector.os",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start node exporter");
        let ne = Self { child, addr };
        let http = http_client(Duration::from_secs(2));
        for _ in 0..100 {
            if http
                .get(format!("http://{}/metrics", ne.addr))
                .send()
                .is_ok_and(|r| r.status().is_success())
            {
                return ne;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!("node exporter did not start");
    }
}

/// The file-SD groups: targets 0 and 1, or after the swap 0 and 2; and
/// targets that target relabelling drops.
fn file_sd(ex: &Exporter, swapped: bool) -> String {
    let second = if swapped { &ex.addrs[2] } else { &ex.addrs[1] };
    serde_json::json!([
        {"targets": [ex.addrs[0]], "labels": {"team": "Core", "env": "prod", "drop_me": "x", "extra": "gone"}},
        {"targets": [second], "labels": {"team": "Edge", "env": "test"}},
        {"targets": ["127.0.0.1:1"], "labels": {"team": "skip", "env": "prod"}},
        {"targets": ["127.0.0.1:2"], "labels": {"team": "Core", "env": "dev"}},
        {"targets": ["127.0.0.1:3"], "labels": {"team": "same", "env": "same"}},
    ])
    .to_string()
}

fn config(dir: &Path, ex: &Exporter, node: &str) -> String {
    format!(
        r#"global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: synthetic
    file_sd_configs:
      - files: ['{dir}/targets-*.json']
        refresh_interval: 1s
    params:
      color: [blue]
    relabel_configs:
      - source_labels: [__address__]
        regex: '127\.0\.0\.1:(\d+)'
        target_label: port
        replacement: 'p${{1}}'
      - source_labels: [team]
        target_label: team_lower
        action: lowercase
      - source_labels: [team]
        target_label: team_upper
        action: uppercase
      - source_labels: [__address__]
        modulus: 4
        target_label: shard
        action: hashmod
      - regex: '__meta_(filepath)'
        replacement: 'discovered_$1'
        action: labelmap
      - regex: drop_me
        action: labeldrop
      - regex: '__.*|job|team.*|env|port|shard|discovered_.*'
        action: labelkeep
      - source_labels: [team]
        regex: skip
        action: drop
      - source_labels: [env]
        regex: 'test|prod'
        action: keep
      - source_labels: [team]
        target_label: env
        action: dropequal
      - source_labels: [env]
        target_label: env_copy
      - source_labels: [env]
        target_label: env_copy
        action: keepequal
    metric_relabel_configs:
      - source_labels: [text]
        regex: tiny
        action: drop
      - source_labels: [__name__, room]
        separator: '@'
        regex: 'test_temperature_celsius@(.+)'
        target_label: place
        replacement: 'room-$1'
      - regex: UPPER
        action: labeldrop
      - source_labels: [__name__]
        regex: 'test_mixed_Case_name'
        target_label: __name__
        action: lowercase
      - source_labels: [code]
        regex: '5..'
        target_label: class
        replacement: server_error
  - job_name: honor
    honor_labels: true
    honor_timestamps: false
    static_configs:
      - targets: ['{a}']
        labels:
          env: static
    metric_relabel_configs:
      - source_labels: [__name__]
        regex: 'test_conflict|test_timestamped'
        action: keep
  - job_name: httpsd
    http_sd_configs:
      - url: http://{a}/sd
        refresh_interval: 1s
    metrics_path: /metrics
    scheme: http
  - job_name: node
    static_configs:
      - targets: ['{node}']
"#,
        dir = dir.display(),
        a = ex.addrs[0],
    )
}

fn write_targets(dir: &Path, ex: &Exporter, swapped: bool) {
    // Written aside and renamed, so no reader sees half a file.
    let tmp = dir.join("targets.json.tmp");
    std::fs::write(&tmp, file_sd(ex, swapped)).expect("write targets");
    std::fs::rename(&tmp, dir.join("targets-a.json")).expect("rename targets");
}

/// Waits until the server at `url` has scraped `n` targets (`up` of each).
fn wait_for_targets(url: &str, n: usize) {
    let client = Client::new(url.to_string());
    for _ in 0..300 {
        let found = client.get_query("/api/v1/query", &[("query", "up")]).json()["data"]["result"]
            .as_array()
            .map_or(0, Vec::len);
        if found >= n {
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("{url} did not scrape {n} targets within 30 s");
}

/// A series' samples as the test compares them: values in order with
/// repeats collapsed, `stale` for a staleness marker, and `*` for a value
/// that depends on the moment; the exporter's own timestamps kept exactly.
fn shape(labels: &BTreeMap<String, String>, samples: &[(i64, f64)]) -> Vec<String> {
    let name = labels.get("__name__").map_or("", String::as_str);
    let job = labels.get("job").map_or("", String::as_str);
    let momentary = name == "scrape_duration_seconds" || job == "node" && !name.starts_with("scrape_") && name != "up";
    let with_time = name == "test_timestamped" && job == "synthetic";
    let mut out: Vec<String> = Vec::new();
    for &(t, v) in samples {
        let s = if v.to_bits() == STALE_BITS {
            "stale".to_string()
        } else if momentary {
            "*".to_string()
        } else if with_time {
            format!("{v}@{t}")
        } else {
            format!("{v}")
        };
        if out.last() != Some(&s) {
            out.push(s);
        }
    }
    out
}

/// Every difference between `got` and the oracle's `want`, one per line.
fn differences(got: &RawSeries, want: &RawSeries, normalize: &dyn Fn(&mut BTreeMap<String, String>)) -> Vec<String> {
    let norm = |s: &RawSeries| -> BTreeMap<BTreeMap<String, String>, Vec<String>> {
        s.iter()
            .map(|(l, v)| {
                let mut l = l.clone();
                normalize(&mut l);
                let shaped = shape(&l, v);
                (l, shaped)
            })
            .collect()
    };
    let (got, want) = (norm(got), norm(want));
    let mut out = Vec::new();
    for (l, w) in &want {
        match got.get(l) {
            None => out.push(format!("missing series {l:?}")),
            Some(g) if g != w => out.push(format!("{l:?}:\n    got  {g:?}\n    want {w:?}")),
            Some(_) => {}
        }
    }
    for l in got.keys().filter(|l| !want.contains_key(*l)) {
        out.push(format!("unexpected series {l:?}"));
    }
    out
}

/// What Prometheus 2.42 stores otherwise than Prometheus 3: the text
/// format's `le` and `quantile` values are normalised to floats by 3
/// (`le="1"` → `"1.0"`), as Cairn does.
fn known_differences_of_2_42(labels: &mut BTreeMap<String, String>) {
    for name in ["le", "quantile"] {
        if let Some(v) = labels.get_mut(name)
            && let Ok(f) = v.parse::<f64>()
            && f.is_finite()
            && f.fract() == 0.0
            && !v.contains('.')
        {
            *v = format!("{f:.1}");
        }
    }
}

#[test]
fn cairn_scrapes_what_prometheus_scrapes() {
    let Some(prom3_bin) = prometheus_3() else { return };
    let Some(prom2_bin) = require("prometheus", "prometheus") else {
        return;
    };
    let Some(node_bin) = require("prometheus-node-exporter", "prometheus-node-exporter") else {
        return;
    };
    let ex = Exporter::start(4);
    let node = NodeExporter::start(&node_bin);
    let dir = tempfile::tempdir().expect("tempdir");
    write_targets(dir.path(), &ex, false);
    let yaml = config(dir.path(), &ex, &node.addr);
    let config_path = dir.path().join("prometheus.yml");
    std::fs::write(&config_path, &yaml).expect("config");
    let start = now_ms();

    let mut prom3 = Prometheus::start(&prom3_bin, &yaml, &[]);
    let mut prom2 = Prometheus::start(&prom2_bin, &yaml, &[]);
    let cairn = Server::start_with(&["--config.file", config_path.to_str().expect("utf-8 path")]);

    // Prometheus scrapes its first targets only a few seconds after it
    // starts: phase 0 begins once every server scrapes every target.
    for url in [prom3.url(), prom2.url(), cairn.url()] {
        wait_for_targets(&url, 5);
    }
    // Values change only between phases, and discovery changes only well
    // inside one: Prometheus passes discovery updates on at most every 5 s,
    // so a target's first and last scrapes fall in known phases.
    let phase_time = Duration::from_millis(4500);
    std::thread::sleep(phase_time);
    ex.set_phase(1);
    std::thread::sleep(Duration::from_secs(2));
    write_targets(dir.path(), &ex, true);
    std::thread::sleep(Duration::from_secs(10));
    ex.set_phase(2);
    std::thread::sleep(phase_time);
    ex.set_phase(exporter::FAILS_FROM_PHASE);
    std::thread::sleep(phase_time);
    prom3.assert_running();
    prom2.assert_running();
    let end = now_ms();

    let want = raw_read::read(&prom3.url(), ".+", true, start - 60_000, end);
    let from_cairn = raw_read::read(&cairn.url(), ".+", true, start - 60_000, end);
    let from_2_42 = raw_read::read(&prom2.url(), ".+", true, start - 60_000, end);
    assert!(want.len() > 60, "Prometheus 3.14 stored only {} series", want.len());

    let cairn_diff = differences(&from_cairn, &want, &|_| {});
    let prom2_diff = differences(&from_2_42, &want, &known_differences_of_2_42);
    assert!(
        prom2_diff.is_empty(),
        "Prometheus 2.42 differs from 3.14 beyond the known differences:\n{}",
        prom2_diff.join("\n")
    );
    assert!(
        cairn_diff.is_empty(),
        "Cairn differs from Prometheus 3.14 in {} series:\n{}\n\nCairn's log:\n{}",
        cairn_diff.len(),
        cairn_diff.join("\n"),
        cairn.log()
    );
}
