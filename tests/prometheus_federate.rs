//! A real federation client: Prometheus 3.14 (`../shared/peers/`) scrapes
//! Cairn's `/federate` with `honor_labels: true` while samples are written
//! into Cairn; every sample Prometheus stored must be one Cairn holds, with
//! the same labels, timestamp and value.
//!
//! Without the binary the test prints `SKIPPED` and passes, unless `CI` is
//! set, where that is a failure.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::common::peers::{Prometheus, prometheus_3};
use crate::common::*;
use serde_json::Value;

type Key = BTreeMap<String, String>;

/// Series written every tick: labels, and the value at tick `k`.
fn batch(k: i64, t: i64) -> Vec<cairn_protocols::SeriesSamples> {
    vec![
        series(
            &[("__name__", "fed_temperature"), ("job", "app"), ("instance", "h1")],
            &[(t, 20.0 + k as f64 * 0.1)],
        ),
        series(
            &[("__name__", "fed_temperature"), ("job", "app"), ("instance", "h2")],
            &[(t, 1e6 + k as f64 / 3.0)],
        ),
        // No instance label: federation writes `instance=""`, which honor_labels keeps as none.
        series(
            &[("__name__", "fed_requests_total"), ("job", "app"), ("path", "/a \"b\"")],
            &[(t, (k * 7) as f64)],
        ),
        series(
            &[("__name__", "fed_ratio"), ("job", "app"), ("instance", "h1")],
            &[(t, if k % 3 == 0 { f64::NAN } else { 1.0 / (k + 1) as f64 })],
        ),
    ]
}

fn same(a: f64, b: f64) -> bool {
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}

#[test]
fn prometheus_federates_from_cairn_with_the_same_samples() {
    let Some(prom_bin) = prometheus_3() else { return };
    let cairn = Server::start();
    let writing = Arc::new(AtomicBool::new(true));
    let writer = {
        let (client, writing) = (cairn.client(), writing.clone());
        std::thread::spawn(move || {
            let mut k = 0;
            while writing.load(Ordering::Relaxed) {
                client.write(&batch(k, now_ms()));
                k += 1;
                std::thread::sleep(Duration::from_millis(300));
            }
        })
    };
    let config = format!(
        r#"global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: federate
    honor_labels: true
    metrics_path: /federate
    params:
      "match[]": ['{{__name__=~"fed_.+"}}']
    static_configs:
      - targets: ["127.0.0.1:{}"]
"#,
        cairn.port
    );
    let prom = Prometheus::start(&prom_bin, &config, &["--log.level=warn"]);
    let http = http_client(Duration::from_secs(10));

    // Until Prometheus holds several scrapes of every series.
    let deadline = Instant::now() + Duration::from_secs(60);
    let stored = loop {
        std::thread::sleep(Duration::from_secs(1));
        let v: Value = http
            .get(format!("{}/api/v1/query", prom.url()))
            .query(&[("query", r#"{__name__=~"fed_.+"}[5m]"#)])
            .send()
            .and_then(|r| r.json())
            .expect("prometheus query");
        assert_eq!(v["status"], "success", "{v}");
        let mut stored: BTreeMap<Key, Vec<(i64, f64)>> = BTreeMap::new();
        for s in v["data"]["result"].as_array().expect("result") {
            let key: Key = serde_json::from_value(s["metric"].clone()).expect("labels");
            let samples = s["values"]
                .as_array()
                .expect("values")
                .iter()
                .map(|p| {
                    let t = (p[0].as_f64().expect("time") * 1000.0).round() as i64;
                    let v = match p[1].as_str().expect("value") {
                        "NaN" => f64::NAN,
                        x => x.parse().expect("float"),
                    };
                    (t, v)
                })
                .collect();
            stored.insert(key, samples);
        }
        if stored.len() == 4 && stored.values().all(|s| s.len() >= 4) {
            break stored;
        }
        assert!(
            Instant::now() < deadline,
            "prometheus stored {stored:?}\n{}",
            prom.log()
        );
    };
    writing.store(false, Ordering::Relaxed);
    writer.join().expect("writer");

    let ours: BTreeMap<Key, Vec<(i64, f64)>> = cairn
        .client()
        .export(&[r#"{__name__=~"fed_.+"}"#], None)
        .into_iter()
        .map(|e| (e.labels, e.samples.iter().map(|s| (s.t, s.v)).collect()))
        .collect();
    assert_eq!(
        stored.keys().collect::<Vec<_>>(),
        ours.keys().collect::<Vec<_>>(),
        "label sets (honor_labels keeps Cairn's; no instance where there was none)"
    );
    for (key, samples) in &stored {
        let held = &ours[key];
        for &(t, v) in samples {
            assert!(
                held.iter().any(|&(ht, hv)| ht == t && same(hv, v)),
                "{key:?}: Prometheus stored ({t}, {v}), which Cairn does not hold"
            );
        }
    }
}
