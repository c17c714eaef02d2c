//! `POST /opentelemetry/v1/metrics` (VictoriaMetrics' path) and
//! `POST /api/v1/otlp/v1/metrics` (Prometheus 3's): OTLP/HTTP metrics,
//! `application/x-protobuf` or `application/json` (OTLP/JSON),
//! identity/gzip/deflate/zstd. Translation rules are in
//! `cairn_protocols::otlp`.
//!
//! Answers follow the OTLP/HTTP specification, which is what OTLP exporters
//! parse, in the request's encoding (protobuf, or JSON for a JSON request):
//! - 200 with an `ExportMetricsServiceResponse` once the stored
//!   points are durable: empty when every point was stored (byte-identical
//!   to Prometheus' empty 200), with `partial_success` (rejected count and a
//!   message naming each reason) when some were refused, e.g. delta sums or
//!   invalid histograms (exponential histograms are stored as native
//!   histograms);
//! - errors with a `google.rpc.Status` protobuf body (gRPC code and message;
//!   the message reads as text even with curl): 400 for a malformed or
//!   oversized body and when no point of a non-empty request could be stored
//!   (the message says why; retrying cannot help), 413 over the body limit,
//!   415 for any other content type or an unknown `Content-Encoding`, and
//!   storage errors by
//!   kind (503 makes exporters retry). Prometheus answers these with
//!   `text/plain`, which OTLP exporters cannot decode, so their logs lose the
//!   reason; Cairn follows the specification instead.
//!
//! Self-metrics: stored samples under `protocol="otlp"`; refused OTLP data
//! points (one point may stand for many samples, e.g. a histogram's buckets)
//! in `cairn_ingest_samples_rejected_total{protocol="otlp",reason}` by
//! `RejectReason`; refused requests by reason (`bad_protobuf`, `bad_json`,
//! `too_large`, `all_points_rejected`, ...).

use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use cairn_protocols::otlp::{
    CONTENT_TYPE_JSON, CONTENT_TYPE_PROTOBUF, ContentEncoding, Rejections, decode_export_request_json_with,
    decode_export_request_with, encode_response, encode_response_json, encode_status, encode_status_json, status_code,
};

use crate::ingest::{Protocol, Refusal, record_refusal, store_batch, write_tenant};
use crate::{ApiError, AppState, ErrorType, now_ms, read_body};

/// The encoding of a request, and so of its answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    Protobuf,
    Json,
}

pub async fn otlp_metrics(State(state): State<AppState>, req: Request) -> Response {
    let format = format_of(&req);
    match handle(&state, req, format).await {
        Ok(rejected) => match format {
            Some(Format::Json) => answer(StatusCode::OK, Format::Json, encode_response_json(&rejected)),
            _ => answer(StatusCode::OK, Format::Protobuf, encode_response(&rejected)),
        },
        Err(refusal) => {
            record_refusal(&state, Protocol::Otlp, &refusal);
            let err = refusal.1;
            let code = grpc_code(err.kind);
            match format {
                Some(Format::Json) => answer(err.status(), Format::Json, encode_status_json(code, &err.message)),
                _ => answer(err.status(), Format::Protobuf, encode_status(code, &err.message)),
            }
        }
    }
}

fn answer(status: StatusCode, format: Format, body: Vec<u8>) -> Response {
    let content_type = match format {
        Format::Protobuf => CONTENT_TYPE_PROTOBUF,
        Format::Json => CONTENT_TYPE_JSON,
    };
    (status, [(header::CONTENT_TYPE, content_type)], body).into_response()
}

/// The request's format from its media type (parameters and case ignored).
fn format_of(req: &Request) -> Option<Format> {
    let ct = req.headers().get(header::CONTENT_TYPE)?.to_str().ok()?;
    let media_type = ct.split(';').next()?.trim();
    if media_type.eq_ignore_ascii_case(CONTENT_TYPE_PROTOBUF) {
        Some(Format::Protobuf)
    } else if media_type.eq_ignore_ascii_case(CONTENT_TYPE_JSON) {
        Some(Format::Json)
    } else {
        None
    }
}

/// The gRPC code of an error body, by the HTTP status class it goes with.
fn grpc_code(kind: ErrorType) -> i32 {
    match kind {
        ErrorType::BadData | ErrorType::TooLarge | ErrorType::UnsupportedMediaType => status_code::INVALID_ARGUMENT,
        ErrorType::Unavailable | ErrorType::Timeout => status_code::UNAVAILABLE,
        ErrorType::Execution | ErrorType::TooManyRequests => status_code::RESOURCE_EXHAUSTED,
        ErrorType::Internal => status_code::INTERNAL,
        ErrorType::NotFound => status_code::NOT_FOUND,
        ErrorType::Unauthorized => status_code::UNAUTHENTICATED,
        ErrorType::Forbidden => status_code::PERMISSION_DENIED,
        ErrorType::MethodNotAllowed => status_code::UNIMPLEMENTED,
        ErrorType::Canceled => status_code::CANCELLED,
    }
}

fn unsupported(message: String) -> Refusal {
    (
        "unsupported_media_type",
        ApiError::new(ErrorType::UnsupportedMediaType, message),
    )
}

/// Stores what can be stored; returns the points refused one by one.
async fn handle(state: &AppState, req: Request, format: Option<Format>) -> Result<Rejections, Refusal> {
    let tenant = write_tenant(req.headers())?;
    let Some(format) = format else {
        let got: String = req
            .headers()
            .get(header::CONTENT_TYPE)
            .map(|v| String::from_utf8_lossy(v.as_bytes()).chars().take(64).collect())
            .unwrap_or_default();
        return Err(unsupported(format!(
            "unsupported Content-Type {got:?}: OTLP metrics must be application/x-protobuf or application/json"
        )));
    };
    let encoding_header = req
        .headers()
        .get(header::CONTENT_ENCODING)
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
    let encoding = ContentEncoding::from_header(encoding_header.as_deref()).map_err(|e| {
        (
            "unsupported_encoding",
            ApiError::new(ErrorType::UnsupportedMediaType, e.to_string()),
        )
    })?;
    let body = read_body(req, state).await.map_err(|e| ("too_large", e))?;
    let state = state.clone();
    let (limits, options) = (state.config().remote_write_limits, state.config().otlp);
    let joined = tokio::task::spawn_blocking(move || -> Result<Rejections, Refusal> {
        let metrics = state.metrics().clone();
        metrics.measure_ingest(|| {
            let decoded = match format {
                Format::Protobuf => decode_export_request_with(&body, encoding, &limits, now_ms(), &options),
                Format::Json => decode_export_request_json_with(&body, encoding, &limits, now_ms(), &options),
            }
            .map_err(|e| (e.reason(), ApiError::bad_data(e.to_string())))?;
            drop(body);
            for (reason, points) in decoded.rejected.counts() {
                metrics.ingest_samples_rejected(Protocol::Otlp, reason.as_str(), points);
            }
            if decoded.batch.is_empty() && !decoded.rejected.is_empty() {
                return Err(("all_points_rejected", ApiError::bad_data(decoded.rejected.message())));
            }
            store_batch(&state, &tenant, Protocol::Otlp, &decoded.batch)?;
            Ok(decoded.rejected)
        })
    })
    .await;
    match joined {
        Ok(r) => r,
        Err(e) => {
            tracing::error!(error = %e, "OTLP write task failed");
            Err(("internal", ApiError::internal(format!("internal error: {e}"))))
        }
    }
}

#[cfg(test)]
mod tests {
    use cairn_protocols::otlp::proto::*;
    use prost::Message;

    use crate::test_util::*;

    const T: u64 = 1_700_000_000_000_000_000;
    const PB: (&str, &str) = ("content-type", "application/x-protobuf");

    fn number(v: f64) -> NumberDataPoint {
        NumberDataPoint {
            attributes: vec![KeyValue::string("http.method", "GET")],
            time_unix_nano: T,
            value: Some(number_data_point::Value::AsDouble(v)),
            ..Default::default()
        }
    }

    fn request(metrics: Vec<Metric>) -> Vec<u8> {
        ExportMetricsServiceRequest {
            resource_metrics: vec![ResourceMetrics {
                resource: Some(Resource {
                    attributes: vec![
                        KeyValue::string("service.name", "api"),
                        KeyValue::string("service.instance.id", "i-1"),
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
        .encode_to_vec()
    }

    fn sum(name: &str, temporality: AggregationTemporality) -> Metric {
        Metric {
            name: name.into(),
            description: "Requests served.".into(),
            unit: "{request}".into(),
            data: Some(metric::Data::Sum(Sum {
                data_points: vec![number(3.0)],
                aggregation_temporality: temporality as i32,
                is_monotonic: true,
            })),
            ..Default::default()
        }
    }

    /// A response with its raw body (protobuf is not text).
    struct Reply {
        status: u16,
        content_type: String,
        body: Vec<u8>,
    }

    impl Reply {
        fn error_status(&self) -> Status {
            assert_eq!(self.content_type, "application/x-protobuf");
            Status::decode(self.body.as_slice()).unwrap()
        }
    }

    async fn post(app: &TestApp, path: &str, headers: &[(&str, &str)], body: Vec<u8>) -> Reply {
        use tower::ServiceExt;
        let mut req = axum::http::Request::post(path);
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        let resp = crate::router(app.state.clone())
            .oneshot(req.body(axum::body::Body::from(body)).unwrap())
            .await
            .unwrap();
        let status = resp.status().as_u16();
        let content_type = resp
            .headers()
            .get("content-type")
            .map(|v| v.to_str().unwrap().to_string())
            .unwrap_or_default();
        let body = axum::body::to_bytes(resp.into_body(), usize::MAX)
            .await
            .unwrap()
            .to_vec();
        Reply {
            status,
            content_type,
            body,
        }
    }

    #[tokio::test]
    async fn stores_counters_under_both_paths_and_answers_an_empty_response() {
        for path in [
            "/opentelemetry/v1/metrics",
            "/api/v1/otlp/v1/metrics",
            "/prometheus/api/v1/otlp/v1/metrics",
        ] {
            let app = TestApp::new();
            let resp = post(
                &app,
                path,
                &[PB],
                request(vec![sum("http.requests", AggregationTemporality::Cumulative)]),
            )
            .await;
            assert_eq!((resp.status, resp.body.as_slice()), (200, &[][..]));
            assert_eq!(resp.content_type, "application/x-protobuf");
            app.get("/api/v1/export?match[]={job=\"api\"}").await.check(
                200,
                "{\"metric\":{\"__name__\":\"http_requests_total\",\"http_method\":\"GET\",\"instance\":\"i-1\",\"job\":\"api\"},\"values\":[3],\"timestamps\":[1700000000000]}\n",
            );
            app.get("/api/v1/metadata?metric=http_requests_total").await.check(
                200,
                r#"{"status":"success","data":{"http_requests_total":[{"type":"counter","help":"Requests served.","unit":"{request}"}]}}"#,
            );
            assert_eq!(app.state.metrics().ingest_samples(crate::ingest::Protocol::Otlp), 1);
        }
    }

    fn explicit_histogram() -> Metric {
        Metric {
            name: "rpc.latency".into(),
            unit: "s".into(),
            data: Some(metric::Data::Histogram(Histogram {
                data_points: vec![HistogramDataPoint {
                    time_unix_nano: T,
                    count: 3,
                    sum: Some(2.5),
                    bucket_counts: vec![1, 2, 0],
                    explicit_bounds: vec![0.5, 1.0],
                    ..Default::default()
                }],
                aggregation_temporality: AggregationTemporality::Cumulative as i32,
            })),
            ..Default::default()
        }
    }

    #[tokio::test]
    async fn explicit_bucket_histograms_are_native_only_when_configured() {
        let classic = TestApp::new();
        let nhcb = TestApp::with_config(crate::ApiConfig {
            otlp: crate::OtlpOptions {
                convert_histograms_to_nhcb: true,
            },
            ..crate::ApiConfig::default()
        });
        for app in [&classic, &nhcb] {
            let resp = post(
                app,
                "/api/v1/otlp/v1/metrics",
                &[PB],
                request(vec![explicit_histogram()]),
            )
            .await;
            assert_eq!(resp.status, 200);
        }
        classic.get("/api/v1/label/__name__/values").await.check(
            200,
            r#"{"status":"success","data":["rpc_latency_seconds_bucket","rpc_latency_seconds_count","rpc_latency_seconds_sum"]}"#,
        );
        nhcb.get("/api/v1/label/__name__/values")
            .await
            .check(200, r#"{"status":"success","data":["rpc_latency_seconds"]}"#);
        let export = nhcb.get("/api/v1/export?match[]=rpc_latency_seconds").await;
        assert!(
            export.body.contains(r#""schema":-53,"count":3,"sum":2.5"#)
                && export.body.contains(r#""custom_values":[0.5,1]"#),
            "{}",
            export.body
        );
    }

    #[tokio::test]
    async fn partial_rejections_are_reported_and_counted() {
        let app = TestApp::new();
        let resp = post(
            &app,
            "/opentelemetry/v1/metrics",
            &[PB],
            request(vec![
                sum("ok", AggregationTemporality::Cumulative),
                sum("per.interval", AggregationTemporality::Delta),
            ]),
        )
        .await;
        assert_eq!(resp.status, 200);
        let parsed = ExportMetricsServiceResponse::decode(resp.body.as_slice()).unwrap();
        let partial = parsed.partial_success.unwrap();
        assert_eq!(partial.rejected_data_points, 1);
        assert!(
            partial.error_message.contains("\"per.interval\" has delta temporality"),
            "{partial:?}"
        );
        app.get("/api/v1/export?match[]=ok_total").await.check(
            200,
            "{\"metric\":{\"__name__\":\"ok_total\",\"http_method\":\"GET\",\"instance\":\"i-1\",\"job\":\"api\"},\"values\":[3],\"timestamps\":[1700000000000]}\n",
        );
        let metrics = app.get("/metrics").await.body;
        assert!(
            metrics.contains("protocol=\"otlp\",reason=\"delta_temporality\"} 1"),
            "{metrics}"
        );
    }

    #[tokio::test]
    async fn a_request_with_nothing_storable_is_a_400_status() {
        let app = TestApp::new();
        let resp = post(
            &app,
            "/opentelemetry/v1/metrics",
            &[PB],
            request(vec![sum("d", AggregationTemporality::Delta)]),
        )
        .await;
        assert_eq!(resp.status, 400);
        let s = resp.error_status();
        assert_eq!(s.code, 3);
        assert!(
            s.message.starts_with("rejected 1 data points: 1 delta_temporality"),
            "{s:?}"
        );
        // An empty request is fine and stores nothing.
        app.post_raw("/opentelemetry/v1/metrics", &[PB], vec![])
            .await
            .check(200, "");
        app.get("/api/v1/export?match[]={__name__=~\".+\"}")
            .await
            .check(200, "");
    }

    type BadCase<'a> = (Vec<(&'a str, &'a str)>, Vec<u8>, u16, &'a str);

    #[tokio::test]
    async fn refuses_bad_requests_with_status_bodies() {
        let app = TestApp::new();
        let body = request(vec![sum("x", AggregationTemporality::Cumulative)]);
        // (headers, body, status, message prefix)
        let cases: [BadCase<'_>; 5] = [
            (
                vec![("content-type", "text/plain")],
                body.clone(),
                415,
                "unsupported Content-Type \"text/plain\"",
            ),
            (vec![], body.clone(), 415, "unsupported Content-Type \"\""),
            (
                vec![PB, ("content-encoding", "br")],
                body.clone(),
                415,
                "unsupported content encoding \"br\"",
            ),
            (
                vec![PB, ("content-encoding", "gzip")],
                body.clone(),
                400,
                "gzip decompression failed",
            ),
            (
                vec![PB],
                b"\x0a\x09garbage".to_vec(),
                400,
                "malformed protobuf in export request",
            ),
        ];
        for (headers, body, code, message) in cases {
            let resp = post(&app, "/opentelemetry/v1/metrics", &headers, body).await;
            let s = resp.error_status();
            assert_eq!(resp.status, code, "{s:?}");
            assert!(s.message.starts_with(message), "{s:?}");
            assert_eq!(s.code, 3);
        }
        // Parameters on the media type are fine.
        app.post_raw(
            "/opentelemetry/v1/metrics",
            &[("content-type", "Application/X-Protobuf; charset=utf-8")],
            body,
        )
        .await
        .check(200, "");
        let metrics = app.get("/metrics").await.body;
        assert!(
            metrics.contains(
                "cairn_ingest_requests_rejected_total{protocol=\"otlp\",reason=\"unsupported_media_type\"} 2"
            ),
            "{metrics}"
        );
        assert!(
            metrics.contains("protocol=\"otlp\",reason=\"bad_protobuf\"} 1"),
            "{metrics}"
        );
        app.get("/opentelemetry/v1/metrics").await.check_status(405);
    }

    #[tokio::test]
    async fn otlp_json_is_answered_in_json() {
        let app = TestApp::new();
        let json = ("content-type", "application/json");
        let body = r#"{"resourceMetrics":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"web"}}]},
            "scopeMetrics":[{"metrics":[
              {"name":"up.time","unit":"s","gauge":{"dataPoints":[{"timeUnixNano":"1700000000000000000","asDouble":12.5}]}},
              {"name":"d","sum":{"aggregationTemporality":1,"dataPoints":[{"asInt":"1"}]}}]}]}]}"#;
        let resp = post(&app, "/api/v1/otlp/v1/metrics", &[json], body.as_bytes().to_vec()).await;
        assert_eq!(resp.status, 200);
        assert_eq!(resp.content_type, "application/json");
        let v: serde_json::Value = serde_json::from_slice(&resp.body).unwrap();
        assert_eq!(v["partialSuccess"]["rejectedDataPoints"], "1");
        app.get("/api/v1/export?match[]=up_time_seconds").await.check(
            200,
            "{\"metric\":{\"__name__\":\"up_time_seconds\",\"job\":\"web\"},\"values\":[12.5],\"timestamps\":[1700000000000]}\n",
        );
        let resp = post(
            &app,
            "/opentelemetry/v1/metrics",
            &[json],
            b"{\"resourceMetrics\":7}".to_vec(),
        )
        .await;
        assert_eq!((resp.status, resp.content_type.as_str()), (400, "application/json"));
        let v: serde_json::Value = serde_json::from_slice(&resp.body).unwrap();
        assert_eq!(v["code"], 3);
        assert_eq!(
            v["message"],
            "malformed OTLP/JSON in request: resourceMetrics must be an array"
        );
    }

    #[tokio::test]
    async fn oversized_bodies_are_413() {
        let app = TestApp::with_config(crate::ApiConfig {
            max_request_body_bytes: 16,
            ..Default::default()
        });
        let resp = post(&app, "/opentelemetry/v1/metrics", &[PB], vec![0u8; 1024]).await;
        assert_eq!(resp.status, 413);
        assert_eq!(
            resp.error_status().message,
            "request body too large: the limit is 16 bytes"
        );
    }
}
