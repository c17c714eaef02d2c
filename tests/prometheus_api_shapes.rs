//! Every endpoint of Prometheus 3.14's HTTP API (the routes of its
//! `web/api/v1/api.go`, and `/federate`), asked of Prometheus 3.14
//! (`../shared/peers/`) and of Cairn holding the same remote-written data:
//! each must get the same status code and, for JSON, the same shape (every
//! key Prometheus writes, with a value of the same JSON type, recursively;
//! Cairn may add keys, which are listed). The few endpoints where Cairn
//! differs on purpose are listed in `DIFFERENCES` with the reason, and
//! checked to answer as that says.
//!
//! Without the binary the test prints `SKIPPED` and passes, unless `CI` is
//! set, where that is a failure.

use std::time::Duration;

use crate::common::peers::{Prometheus, prometheus_3};
use crate::common::*;
use cairn_protocols::remote_write::ContentEncoding;
use serde_json::Value;

/// How a response body is compared.
#[derive(Clone, Copy, PartialEq)]
enum Body {
    /// JSON: the same shape.
    Shape,
    /// JSON whose objects are maps keyed by data (flags, features): the
    /// same value types only.
    Map,
    /// Not JSON: the status and content type only.
    Other,
}

/// Endpoints where Cairn answers differently on purpose: (method, path,
/// Cairn's status, why).
const DIFFERENCES: [(&str, &str, u16, &str); 4] = [
    (
        "POST",
        "/api/v1/admin/tsdb/clean_tombstones",
        404,
        "deleted samples are dropped by background merges; there is nothing to clean on request",
    ),
    (
        "GET",
        "/api/v1/status/self_metrics",
        404,
        "Cairn's own metrics are served in the text format at /metrics",
    ),
    (
        "GET",
        "/api/v1/search/metric_names",
        503,
        "the search API is off in both; Prometheus answers errorType unavailable with 500, Cairn with 503, the status Prometheus gives that type everywhere else",
    ),
    (
        "GET",
        "/api/v1/openapi.yaml",
        404,
        "Cairn publishes no OpenAPI document",
    ),
];

fn requests(t: &str, start: &str) -> Vec<(&'static str, String, Body)> {
    let q = |path: &str| path.to_string();
    vec![
        ("GET", format!("/api/v1/query?query=up&time={t}"), Body::Shape),
        (
            "POST",
            format!("/api/v1/query?query=rate(rq_total[5m])&time={t}"),
            Body::Shape,
        ),
        ("GET", format!("/api/v1/query?query=sum(up&time={t}"), Body::Shape),
        (
            "GET",
            format!("/api/v1/query_range?query=sum%20by%20(job)(rq_total)&start={start}&end={t}&step=60"),
            Body::Shape,
        ),
        (
            "GET",
            format!("/api/v1/query_range?query=up&start={t}&end={start}&step=60"),
            Body::Shape,
        ),
        (
            "GET",
            format!("/api/v1/query_exemplars?query=up&start={start}&end={t}"),
            Body::Shape,
        ),
        ("GET", q("/api/v1/format_query?query=sum(up)by(job)"), Body::Shape),
        ("GET", q("/api/v1/parse_query?query=up"), Body::Shape),
        ("GET", q("/api/v1/labels"), Body::Shape),
        ("POST", q("/api/v1/labels?match[]=up"), Body::Shape),
        ("GET", q("/api/v1/label/job/values"), Body::Shape),
        ("GET", q("/api/v1/series?match[]=up"), Body::Shape),
        ("POST", q("/api/v1/series"), Body::Shape),
        ("GET", q("/api/v1/scrape_pools"), Body::Shape),
        ("GET", q("/api/v1/targets"), Body::Shape),
        ("GET", q("/api/v1/targets/metadata"), Body::Shape),
        ("GET", q("/api/v1/targets/relabel_steps"), Body::Shape),
        ("GET", q("/api/v1/alertmanagers"), Body::Shape),
        ("GET", q("/api/v1/metadata"), Body::Shape),
        ("GET", q("/api/v1/status/config"), Body::Shape),
        ("GET", q("/api/v1/status/runtimeinfo"), Body::Shape),
        ("GET", q("/api/v1/status/buildinfo"), Body::Shape),
        ("GET", q("/api/v1/status/flags"), Body::Map),
        ("GET", q("/api/v1/status/tsdb"), Body::Shape),
        ("GET", q("/api/v1/status/tsdb/blocks"), Body::Shape),
        ("GET", q("/api/v1/status/walreplay"), Body::Shape),
        ("GET", q("/api/v1/features"), Body::Map),
        ("GET", q("/api/v1/notifications"), Body::Shape),
        ("GET", q("/api/v1/alerts"), Body::Shape),
        ("GET", q("/api/v1/rules"), Body::Shape),
        (
            "POST",
            q("/api/v1/admin/tsdb/delete_series?match[]=nothing_here"),
            Body::Other,
        ),
        ("POST", q("/api/v1/admin/tsdb/snapshot?skip_head=true"), Body::Shape),
        ("OPTIONS", q("/api/v1/query"), Body::Other),
        ("GET", q("/federate?match[]=up"), Body::Other),
    ]
}

/// Where `cairn` lacks a key of `prom` or holds another JSON type, into
/// `missing`; keys only Cairn has, into `extra`.
fn compare(at: &str, prom: &Value, cairn: &Value, body: Body, missing: &mut Vec<String>, extra: &mut Vec<String>) {
    let kind = |v: &Value| match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    };
    if kind(prom) != kind(cairn) {
        missing.push(format!("{at}: {} in Prometheus, {} in Cairn", kind(prom), kind(cairn)));
        return;
    }
    match (prom, cairn) {
        (Value::Object(p), Value::Object(c)) if body == Body::Map => {
            // Keys are data; compare the values Cairn has against any of Prometheus'.
            if let Some(pv) = p.values().next() {
                for (k, cv) in c {
                    compare(&format!("{at}.{k}"), p.get(k).unwrap_or(pv), cv, body, missing, extra);
                }
            }
        }
        (Value::Object(p), Value::Object(c)) => {
            for (k, pv) in p {
                match c.get(k) {
                    Some(cv) => compare(&format!("{at}.{k}"), pv, cv, body, missing, extra),
                    None => missing.push(format!("{at}.{k}: missing in Cairn")),
                }
            }
            extra.extend(c.keys().filter(|k| !p.contains_key(*k)).map(|k| format!("{at}.{k}")));
        }
        (Value::Array(p), Value::Array(c)) => {
            if let (Some(pv), Some(cv)) = (p.first(), c.first()) {
                compare(&format!("{at}[0]"), pv, cv, body, missing, extra);
            }
        }
        _ => {}
    }
}

#[test]
fn every_prometheus_endpoint_answers_with_prometheus_status_and_shape() {
    let Some(prom_bin) = prometheus_3() else { return };
    let cairn = Server::start();
    let prom = Prometheus::start(
        &prom_bin,
        "global:\n  scrape_interval: 1h\n",
        &[
            "--web.enable-remote-write-receiver",
            "--web.enable-admin-api",
            "--log.level=warn",
        ],
    );
    let http = http_client(Duration::from_secs(10));
    let now = now_ms() / 1000 * 1000;
    let data: Vec<_> = ["a", "b"]
        .iter()
        .flat_map(|job| {
            let samples: Vec<(i64, f64)> = (0..30).map(|i| (now - (29 - i) * 15_000, i as f64)).collect();
            [
                series(&[("__name__", "up"), ("job", job), ("instance", "h:1")], &samples),
                series(&[("__name__", "rq_total"), ("job", job), ("instance", "h:1")], &samples),
            ]
        })
        .collect();
    let body = encode(&data, ContentEncoding::Snappy);
    for base in [cairn.url(), prom.url()] {
        let r = http
            .post(format!("{base}/api/v1/write"))
            .header("Content-Encoding", "snappy")
            .header("Content-Type", "application/x-protobuf")
            .body(body.clone())
            .send()
            .expect("remote write");
        assert!(r.status().is_success(), "{base}: {}", r.status());
    }

    let send = |base: &str, method: &str, path: &str| {
        let url = format!("{base}{path}");
        let req = match method {
            "GET" => http.get(&url),
            "POST" => http.post(&url),
            "OPTIONS" => http.request(reqwest::Method::OPTIONS, &url),
            _ => unreachable!(),
        };
        let r = req.send().unwrap_or_else(|e| panic!("{method} {url}: {e}"));
        let status = r.status().as_u16();
        let content_type = r
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string();
        (status, content_type, r.text().unwrap_or_default())
    };
    let (t, start) = (format!("{}", now / 1000), format!("{}", now / 1000 - 600));
    let mut failures = Vec::new();
    let mut additions = Vec::new();
    for (method, path, body) in requests(&t, &start) {
        let (ps, pct, pb) = send(&prom.url(), method, &path);
        let (cs, cct, cb) = send(&cairn.url(), method, &path);
        if ps != cs {
            failures.push(format!(
                "{method} {path}: status {ps} from Prometheus, {cs} from Cairn: {cb}"
            ));
            continue;
        }
        if body == Body::Other {
            let base = |ct: &str| ct.split(';').next().unwrap_or("").trim().to_string();
            if base(&pct) != base(&cct) {
                failures.push(format!("{method} {path}: content type {pct:?} against {cct:?}"));
            }
            continue;
        }
        let parse = |b: &str| serde_json::from_str::<Value>(b).unwrap_or_else(|e| panic!("{method} {path}: {e}: {b}"));
        let (mut missing, mut extra) = (Vec::new(), Vec::new());
        compare("", &parse(&pb), &parse(&cb), body, &mut missing, &mut extra);
        failures.extend(missing.into_iter().map(|m| format!("{method} {path}: {m}")));
        additions.extend(extra.into_iter().map(|e| format!("{method} {path}: {e}")));
    }
    // The event stream: both answer 200 with text/event-stream and keep it open.
    for base in [prom.url(), cairn.url()] {
        let short = http_client(Duration::from_millis(500));
        let r = short
            .get(format!("{base}/api/v1/notifications/live"))
            .send()
            .expect("live notifications");
        assert_eq!(r.status().as_u16(), 200, "{base}");
        assert!(
            r.headers()["content-type"]
                .to_str()
                .unwrap()
                .starts_with("text/event-stream")
        );
    }
    for (method, path, cairn_status, why) in DIFFERENCES {
        let (cs, _, cb) = send(&cairn.url(), method, path);
        assert_eq!(cs, cairn_status, "{method} {path} ({why}): {cb}");
        let (ps, _, _) = send(&prom.url(), method, path);
        assert_ne!(ps, 404, "{method} {path} is a Prometheus endpoint");
    }
    // Error texts and annotations, word for word, where tools read them.
    let errors = [
        "rate(up[5m]",
        r#"up{job="a""#,
        "rate(up)",
        "min_over_time(rate(up[5m]))",
        "abs(1)",
        "foo(up)",
        "histogram_quantile(up)",
        "rate(up[5m], 1)",
        "topk(up, up)",
        "topk by (job) (up, up)",
        "count_values(up, up)",
        "up[5m] + 1",
        r#""a" + 1"#,
        "up +",
        "sum without () (up",
        "sum(\n  rate(up)\n)",
        "{}",
        r#"label_replace(up, "a", "b", "c")"#,
        // Grammar and lexer errors.
        "1 +* 2",
        "sum by (a b) (up)",
        "up{job=}",
        r#"up{job="a" b}"#,
        "up @ foo",
        "sum(up b)",
        "rate(up[5m)",
        "up[5m] offset",
        "up[]",
        "(1))",
        r#""\c""#,
        "up[5m1]",
        "topk(1, up,)",
        // Checks of a well-formed query.
        "-up[5m]",
        "1 offset 1d",
        "(up + up)[5m]",
        "1 == 1",
        "up + bool up",
        "sum () by (job)",
        "up[0m]",
        r#"up{__name__="a"}"#,
    ];
    let annotated = [
        "rate(up[5m])",
        "sum(rate(up[5m]))",
        "quantile(2, up)",
        "quantile_over_time(2, up[5m])",
    ];
    for q in errors.iter().chain(&annotated) {
        let body = |base: &str| -> Value {
            http.get(format!("{base}/api/v1/query"))
                .query(&[("query", *q), ("time", t.as_str())])
                .send()
                .and_then(|r| r.json())
                .expect("query")
        };
        let (p, c) = (body(&prom.url()), body(&cairn.url()));
        for key in ["error", "errorType", "warnings", "infos"] {
            if p[key] != c[key] {
                failures.push(format!("{q}: {key} {} from Prometheus, {} from Cairn", p[key], c[key]));
            }
        }
    }
    // Series selectors (`match[]`) are read as a selector alone.
    for selector in [
        "up[5m]",
        "up{",
        "up offset 5m",
        "rate(up[5m])",
        r#"{job=""}"#,
        r#"up{job="a" b}"#,
    ] {
        let body = |base: &str| -> Value {
            http.get(format!("{base}/api/v1/series"))
                .query(&[("match[]", selector)])
                .send()
                .and_then(|r| r.json())
                .expect("series")
        };
        let (p, c) = (body(&prom.url()), body(&cairn.url()));
        if p["error"] != c["error"] {
            failures.push(format!(
                "match[]={selector}: {} from Prometheus, {} from Cairn",
                p["error"], c["error"]
            ));
        }
    }
    println!("keys only Cairn writes:\n  {}", additions.join("\n  "));
    assert!(failures.is_empty(), "{}\n\n{}", failures.join("\n"), prom.log());
}
