//! A real remote-write client: Prometheus (Debian's `prometheus` package)
//! scrapes itself and Cairn and remote-writes everything to Cairn; the
//! samples Prometheus stored must be exactly the samples Cairn stored, over
//! the time span both have.
//!
//! Without a `prometheus` binary the test prints `SKIPPED` and passes, unless
//! `CI` is set (`.ci/run` installs it), where that is a failure.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::common::peers::{Prometheus, binary, in_ci};
use crate::common::*;
use serde_json::Value;

fn prometheus_binary() -> Option<PathBuf> {
    if let Ok(p) = std::env::var("CAIRN_TEST_PROMETHEUS") {
        return Some(PathBuf::from(p));
    }
    binary("prometheus")
}

type Key = BTreeMap<String, String>;
type Samples = Vec<(i64, u64)>;

/// `query` (a range selector) at `time` on Prometheus: series → samples (ms, value bits).
fn prometheus_matrix(http: &reqwest::blocking::Client, base: &str, query: &str, time: f64) -> BTreeMap<Key, Samples> {
    let r = http
        .get(format!("{base}/api/v1/query"))
        .query(&[("query", query), ("time", &format!("{time:.3}"))])
        .send()
        .expect("prometheus query");
    let v: Value = r.json().expect("prometheus JSON");
    assert_eq!(v["status"], "success", "{v}");
    assert_eq!(v["data"]["resultType"], "matrix", "{v}");
    let mut out = BTreeMap::new();
    for s in v["data"]["result"].as_array().expect("result") {
        let key: Key = s["metric"]
            .as_object()
            .expect("metric")
            .iter()
            .map(|(k, v)| (k.clone(), v.as_str().expect("label").to_string()))
            .collect();
        let samples = s["values"]
            .as_array()
            .expect("values")
            .iter()
            .map(|p| {
                let t = p[0].as_f64().expect("timestamp");
                let v: f64 = match p[1].as_str().expect("value") {
                    "NaN" => f64::NAN,
                    "+Inf" => f64::INFINITY,
                    "-Inf" => f64::NEG_INFINITY,
                    x => x.parse().expect("float"),
                };
                ((t * 1000.0).round() as i64, v.to_bits())
            })
            .collect();
        out.insert(key, samples);
    }
    out
}

#[test]
fn prometheus_remote_write_matches_prometheus_storage() {
    let Some(prom_bin) = prometheus_binary() else {
        if in_ci() {
            panic!("prometheus is not installed but CI is set: .ci/run must install it (apt-get install prometheus)");
        }
        println!("SKIPPED: prometheus not installed (apt-get install prometheus); set CI=true to make this a failure");
        return;
    };
    let cairn = Server::start();
    let config = |prom_port: u16| {
        format!(
            r#"global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: prometheus
    static_configs:
      - targets: ["127.0.0.1:{prom_port}"]
  - job_name: cairn
    static_configs:
      - targets: ["127.0.0.1:{cairn_port}"]
remote_write:
  - url: "http://127.0.0.1:{cairn_port}/api/v1/write"
    queue_config:
      batch_send_deadline: 500ms
      max_samples_per_send: 2000
      min_backoff: 50ms
      max_backoff: 500ms
"#,
            cairn_port = cairn.port
        )
    };
    let mut prom = Prometheus::start_on_port(&prom_bin, config, &["--log.level=info"]);
    let prom_base = prom.url();
    let http = http_client(Duration::from_secs(10));
    let c = cairn.client();

    // Series to compare: several metric names from both targets.
    let selectors = [
        "up",
        "scrape_samples_scraped",
        "prometheus_tsdb_head_series",
        r#"prometheus_http_requests_total{handler="/-/ready"}"#,
        r#"cairn_http_requests_total{handler="/api/v1/write"}"#,
        "cairn_storage_samples_ingested_total",
    ];
    // Compare until every selector has enough overlap (or time runs out).
    let want_overlap = 8;
    let deadline = Instant::now() + Duration::from_secs(60);
    let started = Instant::now();
    loop {
        std::thread::sleep(Duration::from_secs(2));
        prom.assert_running();
        let now_s = now_ms() as f64 / 1000.0;
        let mut min_overlap = usize::MAX;
        let mut report = Vec::new();
        for sel in selectors {
            let prom_data = prometheus_matrix(&http, &prom_base, &format!("{sel}[2m]"), now_s);
            let end = (now_s * 1000.0) as i64;
            let cairn_data: BTreeMap<Key, Samples> = c
                .export(&[sel], Some((end - 120_000, end)))
                .into_iter()
                .map(|e| (e.labels, e.samples.iter().map(|s| (s.t, s.v.to_bits())).collect()))
                .collect();
            if prom_data.is_empty() {
                min_overlap = 0;
                report.push(format!("{sel}: prometheus has no series yet"));
                continue;
            }
            for (key, ps) in &prom_data {
                let Some(cs) = cairn_data.get(key) else {
                    min_overlap = 0;
                    report.push(format!("{sel}: cairn lacks {key:?}"));
                    continue;
                };
                if cs.is_empty() || ps.is_empty() {
                    min_overlap = 0;
                    continue;
                }
                // The span both have: Prometheus' window started earlier or
                // later than Cairn's, and Cairn lags by the send deadline.
                let lo = ps[0].0.max(cs[0].0);
                let hi = ps[ps.len() - 1].0.min(cs[cs.len() - 1].0);
                let p: Vec<_> = ps.iter().filter(|s| s.0 >= lo && s.0 <= hi).copied().collect();
                let q: Vec<_> = cs.iter().filter(|s| s.0 >= lo && s.0 <= hi).copied().collect();
                let show_s = |v: &[(i64, u64)]| -> Vec<(i64, String)> {
                    v.iter().map(|&(t, b)| (t, show(f64::from_bits(b)))).collect()
                };
                assert_eq!(
                    show_s(&q),
                    show_s(&p),
                    "{key:?}: Cairn (left) and Prometheus (right) differ over [{lo}, {hi}]"
                );
                min_overlap = min_overlap.min(p.len());
                report.push(format!("{key:?}: {} samples identical", p.len()));
            }
            // Every series Cairn has for the selector, Prometheus has too.
            for key in cairn_data.keys() {
                assert!(
                    prom_data.contains_key(key),
                    "{sel}: Cairn has {key:?}, Prometheus does not"
                );
            }
        }
        if min_overlap >= want_overlap && min_overlap != usize::MAX {
            println!(
                "prometheus {} → cairn: identical after {:.1}s:\n  {}",
                prom_bin.display(),
                started.elapsed().as_secs_f64(),
                report.join("\n  ")
            );
            break;
        }
        assert!(
            Instant::now() < deadline,
            "no sufficient overlap after 60s:\n  {}\nprometheus log:\n{}\ncairn log:\n{}",
            report.join("\n  "),
            prom.log(),
            cairn.log()
        );
    }
    // Cairn never refused a request from Prometheus.
    let metrics = c.get("/metrics").body;
    assert!(
        !metrics
            .lines()
            .any(|l| l.starts_with("cairn_ingest_requests_rejected_total{") && !l.ends_with(" 0")),
        "{metrics}"
    );
    assert!(!prom.log().contains("non-recoverable error"), "{}", prom.log());
}
