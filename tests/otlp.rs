//! OTLP/HTTP metrics end to end: the real `cairn` binary receives gzipped
//! `ExportMetricsServiceRequest` bodies (and OTLP/JSON) at both OTLP paths, and what it
//! stored is read back through `/api/v1/export`, `/api/v1/metadata` and
//! PromQL.
//!
//! No Debian package ships an OTLP client program (the OpenTelemetry
//! Collector and the SDK exporters are not packaged; `golang-opentelemetry-
//! otel-dev` is library source only), so most requests are built with the
//! prost structs of `cairn_protocols::otlp::proto`, the same protobuf schema
//! every OTLP exporter serialises, and sent as the Collector's `otlphttp`
//! exporter sends them (`Content-Type: application/x-protobuf`,
//! `Content-Encoding: gzip`). One test drives a real client from PyPI, the
//! OpenTelemetry Python SDK's OTLP/HTTP exporter (`tests/otlp_python_sdk.py`,
//! installed by `scripts/test.sh` into `target/otel-venv`); without it that
//! test prints `SKIPPED` and passes, except with `CI` set.

use std::io::Write;
use std::path::PathBuf;
use std::process::Command;

use crate::common::{Server, now_ms};
use cairn_model::is_stale_nan;
use cairn_protocols::otlp::proto::*;
use prost::Message;

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(data).expect("gzip");
    e.finish().expect("gzip")
}

/// Status, content type and raw body of one OTLP POST.
fn post(server: &Server, path: &str, req: &ExportMetricsServiceRequest) -> (u16, String, Vec<u8>) {
    let resp = server
        .client()
        .http
        .post(format!("{}{path}", server.url()))
        .header("Content-Type", "application/x-protobuf")
        .header("Content-Encoding", "gzip")
        .body(gzip(&req.encode_to_vec()))
        .send()
        .expect("OTLP request");
    let status = resp.status().as_u16();
    let content_type = resp
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    (status, content_type, resp.bytes().expect("body").to_vec())
}

fn number(attrs: &[(&str, &str)], t_ms: i64, v: f64) -> NumberDataPoint {
    NumberDataPoint {
        attributes: attrs.iter().map(|(k, v)| KeyValue::string(*k, *v)).collect(),
        time_unix_nano: t_ms as u64 * 1_000_000 + 999,
        value: Some(number_data_point::Value::AsDouble(v)),
        ..Default::default()
    }
}

fn metric(name: &str, unit: &str, data: metric::Data) -> Metric {
    Metric {
        name: name.into(),
        description: format!("The {name}."),
        unit: unit.into(),
        data: Some(data),
        metadata: vec![],
    }
}

/// A host agent's batch: gauges, a cumulative counter, a histogram, a
/// summary, and one delta sum that Cairn must refuse.
fn host_request(t: i64) -> ExportMetricsServiceRequest {
    let cumulative = AggregationTemporality::Cumulative as i32;
    let metrics = vec![
        metric(
            "system.memory.usage",
            "By",
            metric::Data::Gauge(Gauge {
                data_points: vec![
                    number(&[("state", "used")], t, 1024.0),
                    number(&[("state", "free")], t, 3072.0),
                ],
            }),
        ),
        metric(
            "http.server.requests",
            "{request}",
            metric::Data::Sum(Sum {
                data_points: vec![
                    number(&[("http.response.status_code", "200")], t - 60_000, 100.0),
                    number(&[("http.response.status_code", "200")], t, 160.0),
                ],
                aggregation_temporality: cumulative,
                is_monotonic: true,
            }),
        ),
        metric(
            "http.server.request.duration",
            "s",
            metric::Data::Histogram(Histogram {
                data_points: vec![HistogramDataPoint {
                    time_unix_nano: t as u64 * 1_000_000,
                    count: 10,
                    sum: Some(1.5),
                    bucket_counts: vec![5, 5, 0],
                    explicit_bounds: vec![0.1, 0.5],
                    ..Default::default()
                }],
                aggregation_temporality: cumulative,
            }),
        ),
        metric(
            "rpc.latency",
            "ms",
            metric::Data::Summary(Summary {
                data_points: vec![SummaryDataPoint {
                    time_unix_nano: t as u64 * 1_000_000,
                    count: 4,
                    sum: 8.0,
                    quantile_values: vec![ValueAtQuantile {
                        quantile: 0.9,
                        value: 3.5,
                    }],
                    ..Default::default()
                }],
            }),
        ),
        metric(
            "network.packets",
            "{packet}",
            metric::Data::Sum(Sum {
                data_points: vec![number(&[], t, 5.0)],
                aggregation_temporality: AggregationTemporality::Delta as i32,
                is_monotonic: true,
            }),
        ),
    ];
    ExportMetricsServiceRequest {
        resource_metrics: vec![ResourceMetrics {
            resource: Some(Resource {
                attributes: vec![
                    KeyValue::string("service.name", "node"),
                    KeyValue::string("service.instance.id", "host-1:9100"),
                    KeyValue::string("host.arch", "amd64"),
                ],
                dropped_attributes_count: 0,
            }),
            scope_metrics: vec![ScopeMetrics {
                metrics,
                ..Default::default()
            }],
            schema_url: String::new(),
        }],
    }
}

/// One exported series as `labels => [(t, v)]`, labels in `k=v,...` form.
fn export(server: &Server, selector: &str) -> Vec<(String, Vec<(i64, f64)>)> {
    server
        .client()
        .export(&[selector], None)
        .into_iter()
        .map(|e| {
            let labels: Vec<String> = e.labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
            (labels.join(","), e.samples.iter().map(|s| (s.t, s.v)).collect())
        })
        .collect()
}

fn query(server: &Server, q: &str, t: i64) -> serde_json::Value {
    let r = server.client().get_query(
        "/api/v1/query",
        &[("query", q), ("time", &crate::common::ms_to_param(t))],
    );
    assert_eq!(r.status, 200, "{q}: {}", r.body);
    r.json()["data"]["result"].clone()
}

#[test]
fn otlp_metrics_are_stored_with_prometheus_names() {
    let server = Server::start();
    let t = now_ms() / 1000 * 1000 - 120_000;

    let (status, content_type, body) = post(&server, "/opentelemetry/v1/metrics", &host_request(t));
    assert_eq!((status, content_type.as_str()), (200, "application/x-protobuf"));
    let resp = ExportMetricsServiceResponse::decode(body.as_slice()).expect("response protobuf");
    let partial = resp.partial_success.expect("the delta sum is reported");
    assert_eq!(partial.rejected_data_points, 1);
    assert!(
        partial
            .error_message
            .contains("\"network.packets\" has delta temporality"),
        "{partial:?}"
    );

    let id = "instance=host-1:9100,job=node";
    assert_eq!(
        export(&server, "system_memory_usage_bytes"),
        vec![
            (
                format!("__name__=system_memory_usage_bytes,{id},state=free"),
                vec![(t, 3072.0)]
            ),
            (
                format!("__name__=system_memory_usage_bytes,{id},state=used"),
                vec![(t, 1024.0)]
            ),
        ]
    );
    assert_eq!(
        export(&server, "http_server_requests_total"),
        vec![(
            format!("__name__=http_server_requests_total,http_response_status_code=200,{id}"),
            vec![(t - 60_000, 100.0), (t, 160.0)]
        )]
    );
    assert_eq!(
        export(&server, "{__name__=~\"http_server_request_duration_seconds.*\"}"),
        vec![
            (
                format!("__name__=http_server_request_duration_seconds_bucket,{id},le=+Inf"),
                vec![(t, 10.0)]
            ),
            (
                format!("__name__=http_server_request_duration_seconds_bucket,{id},le=0.1"),
                vec![(t, 5.0)]
            ),
            (
                format!("__name__=http_server_request_duration_seconds_bucket,{id},le=0.5"),
                vec![(t, 10.0)]
            ),
            (
                format!("__name__=http_server_request_duration_seconds_count,{id}"),
                vec![(t, 10.0)]
            ),
            (
                format!("__name__=http_server_request_duration_seconds_sum,{id}"),
                vec![(t, 1.5)]
            ),
        ]
    );
    assert_eq!(
        export(&server, "{__name__=~\"rpc_latency_milliseconds.*\"}"),
        vec![
            (
                format!("__name__=rpc_latency_milliseconds,{id},quantile=0.9"),
                vec![(t, 3.5)]
            ),
            (format!("__name__=rpc_latency_milliseconds_count,{id}"), vec![(t, 4.0)]),
            (format!("__name__=rpc_latency_milliseconds_sum,{id}"), vec![(t, 8.0)]),
        ]
    );
    // Resource attributes other than the service ones, once per resource,
    // every 150 s from the earliest point to the latest.
    assert_eq!(
        export(&server, "target_info"),
        vec![(
            format!("__name__=target_info,host_arch=amd64,{id}"),
            vec![(t - 60_000, 1.0), (t, 1.0)]
        )]
    );
    assert!(export(&server, "{__name__=~\"network.*\"}").is_empty());

    // PromQL over the translated names.
    let used = query(&server, "sum by (job) (system_memory_usage_bytes)", t);
    assert_eq!(used[0]["metric"]["job"], "node");
    assert_eq!(used[0]["value"][1], "4096");
    let median = query(
        &server,
        "histogram_quantile(0.5, sum by (le) (http_server_request_duration_seconds_bucket))",
        t,
    );
    assert_eq!(median[0]["value"][1], "0.1");
    let rate = query(&server, "rate(http_server_requests_total[2m])", t);
    assert_eq!(rate[0]["metric"]["http_response_status_code"], "200");

    let metadata = server
        .client()
        .get("/api/v1/metadata?metric=http_server_request_duration_seconds");
    assert_eq!(
        metadata.body,
        r#"{"status":"success","data":{"http_server_request_duration_seconds":[{"type":"histogram","help":"The http.server.request.duration.","unit":"s"}]}}"#
    );

    // Prometheus 3's path; the end of a series as a stale marker.
    let mut ended = host_request(t + 15_000);
    ended.resource_metrics[0].scope_metrics[0].metrics = vec![metric(
        "system.memory.usage",
        "By",
        metric::Data::Gauge(Gauge {
            data_points: vec![NumberDataPoint {
                flags: FLAG_NO_RECORDED_VALUE,
                ..number(&[("state", "used")], t + 15_000, 0.0)
            }],
        }),
    )];
    let (status, _, body) = post(&server, "/api/v1/otlp/v1/metrics", &ended);
    assert_eq!((status, body.as_slice()), (200, &[][..]));
    let used = server
        .client()
        .export(&["system_memory_usage_bytes{state=\"used\"}"], None);
    assert_eq!(used.len(), 1);
    let samples = &used[0].samples;
    assert_eq!(samples.len(), 2);
    assert!(is_stale_nan(samples[1].v), "{samples:?}");

    let metrics = server.client().get("/metrics").body;
    assert!(
        metrics.contains("protocol=\"otlp\",reason=\"delta_temporality\"} 1"),
        "{metrics}"
    );
}

#[test]
fn otlp_refusals_carry_a_status_message() {
    let server = Server::start();
    // Nothing storable: 400 with a google.rpc.Status naming the reason.
    let mut req = host_request(now_ms());
    req.resource_metrics[0].scope_metrics[0]
        .metrics
        .retain(|m| m.name == "network.packets");
    let (status, content_type, body) = post(&server, "/opentelemetry/v1/metrics", &req);
    assert_eq!((status, content_type.as_str()), (400, "application/x-protobuf"));
    let s = Status::decode(body.as_slice()).expect("status protobuf");
    assert_eq!(s.code, 3);
    assert!(s.message.contains("delta_temporality"), "{s:?}");

    // OTLP/JSON is stored the same way and answered in JSON.
    let t = now_ms() / 1000 * 1000;
    let json = format!(
        r#"{{"resourceMetrics":[{{"resource":{{"attributes":[{{"key":"service.name","value":{{"stringValue":"web"}}}}]}},
           "scopeMetrics":[{{"metrics":[{{"name":"process.cpu.time","unit":"s",
             "sum":{{"aggregationTemporality":2,"isMonotonic":true,
               "dataPoints":[{{"timeUnixNano":"{}","asDouble":4.25}}]}}}}]}}]}}]}}"#,
        t as u64 * 1_000_000
    );
    let r = server
        .client()
        .http
        .post(format!("{}/api/v1/otlp/v1/metrics", server.url()))
        .header("Content-Type", "application/json")
        .body(json)
        .send()
        .expect("request");
    assert_eq!(r.status().as_u16(), 200);
    assert_eq!(r.text().expect("body"), "{}");
    assert_eq!(
        export(&server, "process_cpu_time_seconds_total"),
        vec![(
            "__name__=process_cpu_time_seconds_total,job=web".to_string(),
            vec![(t, 4.25)]
        )]
    );
}

/// The Python with the OpenTelemetry SDK: `CAIRN_OTEL_PYTHON`, else the
/// virtualenv `scripts/test.sh` creates.
fn otel_python() -> Option<PathBuf> {
    let python = std::env::var_os("CAIRN_OTEL_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/otel-venv/bin/python"));
    let ok = Command::new(&python)
        .args(["-c", "import opentelemetry.exporter.otlp.proto.http"])
        .output()
        .is_ok_and(|o| o.status.success());
    ok.then_some(python)
}

#[test]
fn otlp_python_sdk_exporter() {
    let Some(python) = otel_python() else {
        assert!(
            std::env::var_os("CI").is_none(),
            "the OpenTelemetry Python SDK is missing (scripts/test.sh installs it into target/otel-venv)"
        );
        println!("SKIPPED: OpenTelemetry Python SDK not installed (run scripts/test.sh)");
        return;
    };
    let server = Server::start();
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/otlp_python_sdk.py");
    let out = Command::new(&python)
        .arg(&script)
        .arg(format!("{}/opentelemetry/v1/metrics", server.url()))
        .env_remove("OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE")
        .output()
        .expect("run the Python exporter");
    assert!(
        out.status.success(),
        "exporter failed: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    // The SDK exports on force_flush and again on shutdown: each series has
    // the same cumulative value at one or more timestamps.
    let values = |selector: &str| -> Vec<(String, Vec<f64>)> {
        export(&server, selector)
            .into_iter()
            .map(|(labels, samples)| (labels, samples.into_iter().map(|(_, v)| v).collect()))
            .collect()
    };
    let only = |selector: &str, labels: &str, want: f64| {
        let got = values(selector);
        assert_eq!(got.len(), 1, "{selector}: {got:?}");
        assert_eq!(got[0].0, labels, "{selector}");
        assert!(
            !got[0].1.is_empty() && got[0].1.iter().all(|v| *v == want),
            "{selector}: {got:?}"
        );
    };
    let id = "instance=inst-1,job=pysvc";
    only(
        "http_requests_total",
        &format!("__name__=http_requests_total,http_method=GET,{id}"),
        5.0,
    );
    only("queue_depth", &format!("__name__=queue_depth,{id}"), 2.0);
    only(
        "room_temperature_celsius",
        &format!("__name__=room_temperature_celsius,{id},room=lab"),
        21.5,
    );
    only(
        "request_duration_seconds_sum",
        &format!("__name__=request_duration_seconds_sum,{id}"),
        7.3,
    );
    only(
        "request_duration_seconds_count",
        &format!("__name__=request_duration_seconds_count,{id}"),
        2.0,
    );
    for (le, want) in [("0", 0.0), ("5", 1.0), ("10", 2.0), ("+Inf", 2.0)] {
        only(
            &format!("request_duration_seconds_bucket{{le=\"{le}\"}}"),
            &format!("__name__=request_duration_seconds_bucket,{id},le={le}"),
            want,
        );
    }
    let info = server.client().export(&["target_info"], None);
    assert_eq!(info.len(), 1, "{info:?}");
    let labels = &info[0].labels;
    assert_eq!(labels.get("deployment_environment").map(String::as_str), Some("test"));
    assert_eq!(labels.get("telemetry_sdk_language").map(String::as_str), Some("python"));
    assert_eq!(labels.get("job").map(String::as_str), Some("pysvc"));
    let metadata = server.client().get("/api/v1/metadata?metric=http_requests_total");
    assert_eq!(
        metadata.body,
        r#"{"status":"success","data":{"http_requests_total":[{"type":"counter","help":"Requests served.","unit":"{request}"}]}}"#
    );
}
