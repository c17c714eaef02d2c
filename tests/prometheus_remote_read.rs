//! A real remote-read client: Prometheus 3.14 (`../shared/peers/`) with
//! Cairn as its `remote_read` endpoint and nothing stored locally answers
//! PromQL over data only Cairn holds; every answer must equal Cairn's own.
//! Prometheus asks for streamed XOR chunks first, so this reads Cairn's
//! chunks with Prometheus' own decoder. (The samples answer, frames and
//! limits are tested beside the handler, in crates/http/src/remote_read.rs.)
//!
//! Without the binary the test prints `SKIPPED` and passes, unless `CI` is
//! set, where that is a failure.

use std::time::Duration;

use crate::common::peers::{Prometheus, prometheus_3};
use crate::common::*;
use cairn_model::stale_nan;
use serde_json::Value;

const STEP_MS: i64 = 15_000;

/// Two hours of a small fleet ending at `end`: counters with a reset, a
/// gauge with a NaN and a staleness marker, classic histogram buckets.
fn fleet(end: i64) -> Vec<cairn_protocols::SeriesSamples> {
    let start = end - 2 * 3600 * 1000;
    let times: Vec<i64> = (start..=end).step_by(STEP_MS as usize).collect();
    let mut out = Vec::new();
    for (i, instance) in ["a", "b", "c"].into_iter().enumerate() {
        for code in ["200", "500"] {
            let per_step = if code == "200" { 7.0 + i as f64 } else { 0.25 };
            let samples: Vec<(i64, f64)> = times
                .iter()
                .enumerate()
                // A restart of instance b halfway: its counters start over.
                .map(|(k, &t)| {
                    let k = if instance == "b" && k >= times.len() / 2 {
                        k - times.len() / 2
                    } else {
                        k
                    };
                    (t, per_step * k as f64)
                })
                .collect();
            out.push(series(
                &[
                    ("__name__", "rr_requests_total"),
                    ("instance", instance),
                    ("code", code),
                ],
                &samples,
            ));
        }
        let temperature: Vec<(i64, f64)> = times
            .iter()
            .enumerate()
            .map(|(k, &t)| {
                let v = match k {
                    100 if instance == "a" => f64::NAN,
                    200 if instance == "c" => stale_nan(),
                    _ => 20.0 + ((k as f64) * 0.1 + i as f64).sin() * 5.0,
                };
                (t, v)
            })
            .collect();
        out.push(series(
            &[("__name__", "rr_temperature"), ("instance", instance)],
            &temperature,
        ));
        for (b, le) in ["0.1", "0.5", "1", "+Inf"].into_iter().enumerate() {
            let samples: Vec<(i64, f64)> = times
                .iter()
                .enumerate()
                .map(|(k, &t)| (t, (k * (b + 1) * (i + 2)) as f64))
                .collect();
            out.push(series(
                &[
                    ("__name__", "rr_latency_seconds_bucket"),
                    ("instance", instance),
                    ("le", le),
                ],
                &samples,
            ));
        }
    }
    out
}

/// `data.result` of a query answer, series sorted by their labels.
fn result(v: &Value) -> Vec<Value> {
    assert_eq!(v["status"], "success", "{v}");
    let mut r = v["data"]["result"].as_array().cloned().unwrap_or_default();
    r.sort_by_key(|s| s["metric"].to_string());
    r
}

/// Where two results first differ, for the failure message.
fn first_difference(a: &[Value], b: &[Value]) -> String {
    if a.len() != b.len() {
        return format!("{} series against {}", a.len(), b.len());
    }
    for (x, y) in a.iter().zip(b) {
        if x["metric"] != y["metric"] {
            return format!("series {} against {}", x["metric"], y["metric"]);
        }
        for key in ["value", "values"] {
            let (xs, ys) = (x[key].as_array(), y[key].as_array());
            if let (Some(xs), Some(ys)) = (xs, ys) {
                if let Some((i, (p, q))) = xs.iter().zip(ys).enumerate().find(|(_, (p, q))| p != q) {
                    return format!("{}: point {i}: {p} against {q}", x["metric"]);
                }
                if xs.len() != ys.len() {
                    return format!("{}: {} points against {}", x["metric"], xs.len(), ys.len());
                }
            }
        }
    }
    "none".into()
}

#[test]
fn prometheus_reads_cairn_through_remote_read_and_agrees_with_it() {
    let Some(prom_bin) = prometheus_3() else { return };
    let cairn = Server::start();
    let end = now_ms() / STEP_MS * STEP_MS - 60_000;
    cairn.client().write(&fleet(end));

    let config = format!(
        "global:\n  scrape_interval: 1h\nremote_read:\n  - url: {}/api/v1/read\n    read_recent: true\n",
        cairn.url()
    );
    let prom = Prometheus::start(&prom_bin, &config, &["--log.level=warn"]);
    let http = http_client(Duration::from_secs(30));
    let ask = |base: &str, path: &str, params: &[(&str, String)]| -> Value {
        http.get(format!("{base}{path}"))
            .query(params)
            .send()
            .and_then(|r| r.json())
            .unwrap_or_else(|e| panic!("{base}{path}: {e}"))
    };

    let queries = [
        "rr_requests_total",
        r#"rr_requests_total{code!="200"}"#,
        "rate(rr_requests_total[5m])",
        "sum by (code) (increase(rr_requests_total[10m]))",
        "resets(rr_requests_total[2h])",
        "rr_temperature",
        "max_over_time(rr_temperature[30m])",
        r#"{__name__="rr_temperature", instance=~"a|c"}"#,
        "histogram_quantile(0.9, sum by (le) (rate(rr_latency_seconds_bucket[5m])))",
        r#"count({__name__=~"rr_.+"})"#,
        "rr_temperature offset 30m",
    ];
    let s = |ms: i64| format!("{:.3}", ms as f64 / 1000.0);
    let mut compared = 0;
    for q in queries {
        for at in [end - 3_600_000, end - 1_000_000, end] {
            let params = [("query", q.to_string()), ("time", s(at))];
            let theirs = ask(&prom.url(), "/api/v1/query", &params);
            let ours = ask(&cairn.url(), "/api/v1/query", &params);
            let (theirs, ours) = (result(&theirs), result(&ours));
            assert!(
                theirs == ours,
                "instant {q} at {at}: {}\n{}",
                first_difference(&theirs, &ours),
                prom.log()
            );
            compared += 1;
        }
        let params = [
            ("query", q.to_string()),
            ("start", s(end - 5_400_000)),
            ("end", s(end)),
            ("step", "60".to_string()),
        ];
        let theirs = ask(&prom.url(), "/api/v1/query_range", &params);
        let ours = ask(&cairn.url(), "/api/v1/query_range", &params);
        let (theirs, ours) = (result(&theirs), result(&ours));
        assert!(!ours.is_empty() || q.contains("offset"), "{q} has data");
        assert!(
            theirs == ours,
            "range {q}: {}\n{}",
            first_difference(&theirs, &ours),
            prom.log()
        );
        compared += 1;
    }
    // The raw samples too: a range selector returns exactly what is stored.
    let params = [("query", "{__name__=~\"rr_.+\"}[3h]".to_string()), ("time", s(end))];
    let theirs = result(&ask(&prom.url(), "/api/v1/query", &params));
    assert_eq!(theirs, result(&ask(&cairn.url(), "/api/v1/query", &params)));
    assert_eq!(theirs.len(), 3 * (2 + 1 + 4));
    println!("{compared} answers identical through remote read");
}
