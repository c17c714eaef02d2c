//! `POST /api/v1/write`: Prometheus remote write 1.0 and 2.0.
//!
//! Answers: 204 once every sample, float or native histogram, is durable (or
//! counted as dropped by storage, e.g. out of retention); 400 for a body the
//! decoder refuses (its message), or after storing the rest when some native
//! histograms were invalid (as Prometheus answers a partly bad request: a 400
//! makes senders drop rather than retry, and the message names the first
//! refused histogram and why); 413 for an oversized body; 415 for
//! an unknown `Content-Encoding` or an unknown `proto` in the `Content-Type`;
//! storage errors by their kind, so `Unavailable` (503) makes senders retry.
//!
//! Remote write 2.0 (`Content-Type: application/x-protobuf;proto=
//! io.prometheus.write.v2.Request`) is answered the same way, plus the
//! `X-Prometheus-Remote-Write-{Samples,Histograms,Exemplars}-Written`
//! headers on every answer after the protocol is known. 1.0 stays the
//! default when no `proto` is given.

use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use cairn_protocols::WriteBatch;
use cairn_protocols::remote_write::{
    ContentEncoding, DecodeError, PROTO_V2, decode_write_request, decode_write_request_v2,
};

use crate::ingest::{Protocol, Refusal, record_refusal, store_batch, write_tenant};
use crate::{ApiError, AppState, ErrorType, read_body};
use cairn_storage::TenantId;

/// The remote write 2.0 response headers: what was written, on success and
/// on refusal alike, as the 2.0 spec requires.
pub const SAMPLES_WRITTEN: &str = "x-prometheus-remote-write-samples-written";
pub const HISTOGRAMS_WRITTEN: &str = "x-prometheus-remote-write-histograms-written";
pub const EXEMPLARS_WRITTEN: &str = "x-prometheus-remote-write-exemplars-written";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Version {
    V1,
    V2,
}

pub async fn remote_write(State(state): State<AppState>, req: Request) -> Response {
    let version = match version_of(&req) {
        Ok(v) => v,
        Err(refusal) => {
            record_refusal(&state, Protocol::RemoteWrite, &refusal);
            return refusal.1.into_response();
        }
    };
    let protocol = match version {
        Version::V1 => Protocol::RemoteWrite,
        Version::V2 => Protocol::RemoteWrite2,
    };
    let (result, written) = handle(&state, req, version).await;
    let mut resp = match result {
        Ok(()) => StatusCode::NO_CONTENT.into_response(),
        Err(refusal) => {
            record_refusal(&state, protocol, &refusal);
            refusal.1.into_response()
        }
    };
    if version == Version::V2 {
        let headers = resp.headers_mut();
        headers.insert(SAMPLES_WRITTEN, HeaderValue::from(written.samples));
        headers.insert(HISTOGRAMS_WRITTEN, HeaderValue::from(written.histograms));
        // Exemplars are accepted and counted, never stored.
        headers.insert(EXEMPLARS_WRITTEN, HeaderValue::from(0u64));
    }
    resp
}

/// 1.0 unless the `Content-Type`'s `proto` parameter names 2.0; 415 for
/// any other `proto`.
fn version_of(req: &Request) -> Result<Version, Refusal> {
    let content_type = req
        .headers()
        .get(header::CONTENT_TYPE)
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
        .unwrap_or_default();
    let proto = content_type.split(';').skip(1).find_map(|param| {
        let (k, v) = param.split_once('=')?;
        k.trim()
            .eq_ignore_ascii_case("proto")
            .then(|| v.trim().trim_matches('"').to_string())
    });
    match proto.as_deref() {
        None | Some("prometheus.WriteRequest") => Ok(Version::V1),
        Some(PROTO_V2) => Ok(Version::V2),
        Some(other) => Err((
            "unsupported_protocol",
            ApiError::new(
                ErrorType::UnsupportedMediaType,
                format!(
                    "unsupported remote write protobuf {:?}: want prometheus.WriteRequest or {PROTO_V2}",
                    other.chars().take(64).collect::<String>()
                ),
            ),
        )),
    }
}

/// What a request stored, for the 2.0 headers.
#[derive(Debug, Clone, Copy, Default)]
struct Written {
    /// Float samples (histogram staleness markers not among them).
    samples: u64,
    /// Native histogram samples, staleness markers included.
    histograms: u64,
}

/// Stores what the body holds; returns the outcome and what was written.
async fn handle(state: &AppState, req: Request, version: Version) -> (Result<(), Refusal>, Written) {
    let tenant = match write_tenant(req.headers()) {
        Ok(t) => t,
        Err(refusal) => return (Err(refusal), Written::default()),
    };
    let encoding_header = match req.headers().get(header::CONTENT_ENCODING) {
        None => None,
        Some(v) => match v.to_str() {
            Ok(v) => Some(v.to_string()),
            Err(_) => {
                return (
                    Err((
                        "unsupported_encoding",
                        ApiError::new(ErrorType::UnsupportedMediaType, "Content-Encoding is not valid ASCII"),
                    )),
                    Written::default(),
                );
            }
        },
    };
    let encoding = match ContentEncoding::from_header(encoding_header.as_deref()) {
        Ok(e) => e,
        Err(e) => {
            return (
                Err((
                    "unsupported_encoding",
                    ApiError::new(ErrorType::UnsupportedMediaType, e.to_string()),
                )),
                Written::default(),
            );
        }
    };
    let body = match read_body(req, state).await {
        Ok(b) => b,
        Err(e) => return (Err(("too_large", e)), Written::default()),
    };
    // Small bodies are decoded and stored on the runtime worker that read
    // them; bigger ones go to the blocking pool so that one huge request cannot
    // hold a worker for long (Prometheus' and vmagent's requests are 10-500 KB).
    // The pool's hand-off there and back costs context switches per request
    // that showed in ingest CPU (docs/benchmarks.md). The work does not
    // wait on I/O (the commit lock is held for one `write(2)`; the server turns
    // inlining off when commits fsync), and running on the workers bounds
    // concurrent decodes by the cores, as VictoriaMetrics'
    // `-maxConcurrentInserts` does.
    if body.len() <= state.config().inline_write_max_body_bytes {
        return decode_and_store(state, &tenant, &body, version, encoding);
    }
    let state = state.clone();
    match tokio::task::spawn_blocking(move || decode_and_store(&state, &tenant, &body, version, encoding)).await {
        Ok(r) => r,
        Err(e) => {
            tracing::error!(error = %e, "remote write task failed");
            (
                Err(("internal", ApiError::internal(format!("internal error: {e}")))),
                Written::default(),
            )
        }
    }
}

/// Decodes and stores one request.
fn decode_and_store(
    state: &AppState,
    tenant: &TenantId,
    body: &[u8],
    version: Version,
    encoding: ContentEncoding,
) -> (Result<(), Refusal>, Written) {
    state
        .metrics()
        .measure_ingest(|| decode_and_store_measured(state, tenant, body, version, encoding))
}

fn decode_and_store_measured(
    state: &AppState,
    tenant: &TenantId,
    body: &[u8],
    version: Version,
    encoding: ContentEncoding,
) -> (Result<(), Refusal>, Written) {
    let limits = state.config().remote_write_limits;
    let decoded: Result<WriteBatch, DecodeError> = match version {
        Version::V1 => decode_write_request(body, encoding, &limits),
        Version::V2 => decode_write_request_v2(body, encoding, &limits),
    };
    let batch = match decoded {
        Ok(b) => b,
        Err(e) => return (Err(("bad_data", ApiError::bad_data(e.to_string()))), Written::default()),
    };
    let protocol = match version {
        Version::V1 => Protocol::RemoteWrite,
        Version::V2 => Protocol::RemoteWrite2,
    };
    let report = match store_batch(state, tenant, protocol, &batch) {
        Ok(r) => r,
        Err(refusal) => return (Err(refusal), Written::default()),
    };
    let stale_markers = batch.histogram_stale_markers() as u64;
    let written = Written {
        samples: report
            .samples_accepted
            .saturating_sub(report.histograms_accepted + stale_markers),
        histograms: report.histograms_accepted + stale_markers,
    };
    if batch.exemplars_dropped > 0 {
        state
            .metrics()
            .ingest_samples_rejected(protocol, "exemplar_not_stored", batch.exemplars_dropped as u64);
    }
    let invalid = &batch.histograms_invalid;
    if !invalid.is_empty() {
        state
            .metrics()
            .ingest_samples_rejected(protocol, "invalid_histogram", invalid.count as u64);
        return (
            Err((
                "invalid_histogram",
                ApiError::bad_data(format!(
                    "{} invalid native histogram samples were refused, the rest of the request was stored; \
                     the first: {}",
                    invalid.count,
                    invalid.first.as_deref().unwrap_or("?")
                )),
            )),
            written,
        );
    }
    (Ok(()), written)
}

#[cfg(test)]
mod tests {
    use cairn_model::{Labels, Sample, stale_nan};
    use cairn_protocols::SeriesSamples;
    use cairn_protocols::remote_write::{ContentEncoding, encode_write_request_with, proto};
    use prost::Message;

    use crate::test_util::*;

    fn body(encoding: ContentEncoding) -> Vec<u8> {
        let series = vec![
            SeriesSamples::new(
                Labels::from_pairs([("__name__", "up"), ("job", "a")]),
                vec![Sample::new(1000, 1.0), Sample::new(2000, stale_nan())],
            ),
            SeriesSamples::new(
                Labels::from_pairs([("__name__", "up"), ("job", "b")]),
                vec![Sample::new(1000, 0.5)],
            ),
        ];
        let mut out = Vec::new();
        encode_write_request_with(&series, &[], encoding, &mut out).unwrap();
        out
    }

    const STORED: &str = "{\"metric\":{\"__name__\":\"up\",\"job\":\"a\"},\"values\":[1,null],\"timestamps\":[1000,2000]}\n\
                          {\"metric\":{\"__name__\":\"up\",\"job\":\"b\"},\"values\":[0.5],\"timestamps\":[1000]}\n";

    #[tokio::test]
    async fn round_trips_every_encoding() {
        for (encoding, header) in [
            (ContentEncoding::Snappy, None),
            (ContentEncoding::Snappy, Some("snappy")),
            (ContentEncoding::Zstd, Some("zstd")),
            (ContentEncoding::Identity, Some("identity")),
        ] {
            let app = TestApp::new();
            let mut headers = vec![("content-type", "application/x-protobuf")];
            headers.extend(header.map(|h| ("content-encoding", h)));
            let path = if header == Some("zstd") {
                "/prometheus/api/v1/write"
            } else {
                "/api/v1/write"
            };
            app.post_raw(path, &headers, body(encoding)).await.check(204, "");
            app.get("/api/v1/export?match[]=up").await.check(200, STORED);
            assert_eq!(
                app.state.metrics().ingest_samples(crate::ingest::Protocol::RemoteWrite),
                3
            );
        }
    }

    #[tokio::test]
    async fn stores_a_body_too_big_to_decode_inline() {
        let pad = "x".repeat(400);
        let series: Vec<SeriesSamples> = (0..3000)
            .map(|i| {
                SeriesSamples::new(
                    Labels::from_pairs([("__name__", "big"), ("i", &format!("{i}{pad}"))]),
                    vec![Sample::new(1000, i as f64)],
                )
            })
            .collect();
        let mut out = Vec::new();
        encode_write_request_with(&series, &[], ContentEncoding::Identity, &mut out).unwrap();
        assert!(
            out.len() > crate::ApiConfig::default().inline_write_max_body_bytes,
            "{} bytes",
            out.len()
        );
        let app = TestApp::new();
        app.post_raw("/api/v1/write", &[("content-encoding", "identity")], out)
            .await
            .check(204, "");
        assert_eq!(
            app.state.metrics().ingest_samples(crate::ingest::Protocol::RemoteWrite),
            3000
        );
        // Decoding and storing 3,000 series took CPU time, counted as ingestion's.
        let metrics = app.get("/metrics").await.body;
        let ingest_cpu: f64 = metrics
            .lines()
            .find_map(|l| l.strip_prefix("cairn_ingest_cpu_seconds_total "))
            .and_then(|v| v.parse().ok())
            .expect("cairn_ingest_cpu_seconds_total");
        assert!(ingest_cpu > 0.0, "{ingest_cpu}");
    }

    #[tokio::test]
    async fn stores_on_the_blocking_pool_when_inlining_is_off() {
        let app = TestApp::with_config(crate::ApiConfig {
            inline_write_max_body_bytes: 0,
            ..crate::ApiConfig::default()
        });
        app.post_raw("/api/v1/write", &[], body(ContentEncoding::Snappy))
            .await
            .check(204, "");
        app.get("/api/v1/export?match[]=up").await.check(200, STORED);
    }

    #[tokio::test]
    async fn metadata_is_served_from_remote_write() {
        use cairn_protocols::{MetricMetadata, MetricType};
        let app = TestApp::new();
        let md = |name: &str, t, help: &str| MetricMetadata {
            metric_family_name: name.into(),
            metric_type: t,
            help: help.into(),
            unit: String::new(),
        };
        let mut out = Vec::new();
        encode_write_request_with(
            &[],
            &[
                md("up", MetricType::Gauge, "1 if the target is up."),
                md("http_requests", MetricType::Counter, "Requests."),
            ],
            ContentEncoding::Snappy,
            &mut out,
        )
        .unwrap();
        app.post_raw("/api/v1/write", &[], out.clone()).await.check(204, "");
        // A resend changes nothing.
        app.post_raw("/api/v1/write", &[], out).await.check(204, "");
        app.get("/api/v1/metadata").await.check(
            200,
            r#"{"status":"success","data":{"http_requests":[{"type":"counter","help":"Requests.","unit":""}],"up":[{"type":"gauge","help":"1 if the target is up.","unit":""}]}}"#,
        );
    }

    #[tokio::test]
    async fn refuses_bad_requests() {
        let app = TestApp::new();
        app.post_raw(
            "/api/v1/write",
            &[("content-encoding", "gzip")],
            body(ContentEncoding::Snappy),
        )
        .await
        .check_status(415);
        app.post_raw(
            "/api/v1/write",
            &[(
                "content-type",
                "application/x-protobuf;proto=io.prometheus.write.v3.Request",
            )],
            body(ContentEncoding::Snappy),
        )
        .await
        .check_status(415);
        let garbage = app
            .post_raw("/api/v1/write", &[], b"\xff\xff\xff\xffgarbage".to_vec())
            .await;
        garbage.check_status(400);
        assert!(garbage.body.contains("\"errorType\":\"bad_data\""), "{}", garbage.body);
        app.post_raw(
            "/api/v1/write",
            &[("content-encoding", "identity")],
            b"\x0a\x05garb".to_vec(),
        )
        .await
        .check_status(400);
        // A snappy body announced as zstd does not decompress.
        app.post_raw(
            "/api/v1/write",
            &[("content-encoding", "zstd")],
            body(ContentEncoding::Snappy),
        )
        .await
        .check_status(400);
        app.get("/api/v1/write").await.check_status(405);
        // Nothing was stored by any of them.
        app.get("/api/v1/export?match[]=up").await.check(200, "");
        let metrics = app.get("/metrics").await.body;
        assert!(
            metrics.contains(
                "cairn_ingest_requests_rejected_total{protocol=\"remote_write\",reason=\"unsupported_encoding\"} 1"
            ),
            "{metrics}"
        );
        assert!(
            metrics.contains("cairn_ingest_requests_rejected_total{protocol=\"remote_write\",reason=\"bad_data\"} 3")
        );
    }

    #[tokio::test]
    async fn native_histograms_are_stored_beside_floats() {
        let req = proto::WriteRequest {
            timeseries: vec![
                proto::TimeSeries {
                    labels: vec![proto::Label {
                        name: "__name__".into(),
                        value: "h".into(),
                    }],
                    histograms: vec![proto::Histogram {
                        count: Some(proto::histogram::Count::CountFloat(2.5)),
                        sum: 4.0,
                        schema: -53,
                        positive_spans: vec![proto::BucketSpan { offset: 0, length: 2 }],
                        positive_counts: vec![0.5, 2.0],
                        custom_values: vec![1.0],
                        timestamp: 1000,
                        ..Default::default()
                    }],
                    ..Default::default()
                },
                proto::TimeSeries {
                    labels: vec![proto::Label {
                        name: "__name__".into(),
                        value: "f".into(),
                    }],
                    samples: vec![proto::Sample {
                        value: 2.0,
                        timestamp: 1000,
                    }],
                    ..Default::default()
                },
            ],
            metadata: vec![],
        };
        let app = TestApp::new();
        app.post_raw(
            "/api/v1/write",
            &[("content-encoding", "identity")],
            req.encode_to_vec(),
        )
        .await
        .check(204, "");
        app.get("/api/v1/export?match[]=f").await.check(
            200,
            "{\"metric\":{\"__name__\":\"f\"},\"values\":[2],\"timestamps\":[1000]}\n",
        );
        app.get("/api/v1/export?match[]=h").await.check(
            200,
            "{\"metric\":{\"__name__\":\"h\"},\"histograms\":[{\"schema\":-53,\"count\":2.5,\"sum\":4,\"positive\":[[0,0.5],[1,2]],\"custom_values\":[1]}],\"timestamps\":[1000]}\n",
        );
    }

    #[tokio::test]
    async fn oversized_body_is_413() {
        let app = TestApp::with_config(crate::ApiConfig {
            max_request_body_bytes: 16,
            ..Default::default()
        });
        app.post_raw("/api/v1/write", &[], vec![0u8; 1024]).await.check_error(
            413,
            "bad_data",
            "request body too large: the limit is 16 bytes",
        );
        app.post_form("/api/v1/series", &"match[]=up&".repeat(10))
            .await
            .check_status(413);
    }
}

#[cfg(test)]
mod v2_tests {
    use cairn_model::stale_nan;
    use cairn_protocols::remote_write::proto_v2::*;
    use prost::Message;

    use super::{EXEMPLARS_WRITTEN, HISTOGRAMS_WRITTEN, SAMPLES_WRITTEN};
    use crate::test_util::*;

    const V2: &str = "application/x-protobuf;proto=io.prometheus.write.v2.Request";

    fn series(refs: Vec<u32>, samples: Vec<(i64, f64)>) -> TimeSeries {
        TimeSeries {
            labels_refs: refs,
            samples: samples
                .into_iter()
                .map(|(t, v)| Sample {
                    value: v,
                    timestamp: t,
                    start_timestamp: 0,
                })
                .collect(),
            ..Default::default()
        }
    }

    fn request(timeseries: Vec<TimeSeries>) -> Vec<u8> {
        let req = Request {
            symbols: [
                "",
                "__name__",
                "up",
                "job",
                "a",
                "Whether the target is up.",
                "trace_id",
                "t1",
            ]
            .map(String::from)
            .to_vec(),
            timeseries,
        };
        snap::raw::Encoder::new().compress_vec(&req.encode_to_vec()).unwrap()
    }

    fn written(resp: &TestResponse) -> (String, String, String) {
        let h = |name: &str| {
            resp.headers
                .get(name)
                .map(|v| v.to_str().unwrap().to_string())
                .unwrap_or_else(|| "missing".into())
        };
        (h(SAMPLES_WRITTEN), h(HISTOGRAMS_WRITTEN), h(EXEMPLARS_WRITTEN))
    }

    #[tokio::test]
    async fn stores_samples_metadata_and_answers_written_headers() {
        let app = TestApp::new();
        let mut up = series(vec![1, 2, 3, 4], vec![(1000, 1.0), (2000, stale_nan())]);
        up.metadata = Some(Metadata {
            r#type: 2,
            help_ref: 5,
            unit_ref: 0,
        });
        up.exemplars = vec![Exemplar {
            labels_refs: vec![6, 7],
            value: 1.0,
            timestamp: 1000,
        }];
        up.created_timestamp = 500;
        let resp = app
            .post_raw(
                "/api/v1/write",
                &[("content-type", V2), ("content-encoding", "snappy")],
                request(vec![up]),
            )
            .await;
        resp.check(204, "");
        assert_eq!(written(&resp), ("2".into(), "0".into(), "0".into()));
        app.get("/api/v1/export?match[]=up").await.check(
            200,
            "{\"metric\":{\"__name__\":\"up\",\"job\":\"a\"},\"values\":[1,null],\"timestamps\":[1000,2000]}\n",
        );
        app.get("/api/v1/metadata").await.check(
            200,
            r#"{"status":"success","data":{"up":[{"type":"gauge","help":"Whether the target is up.","unit":""}]}}"#,
        );
        let metrics = app.get("/metrics").await.body;
        assert!(
            metrics.contains(
                "cairn_ingest_samples_rejected_total{protocol=\"remote_write_2\",reason=\"exemplar_not_stored\"} 1"
            ),
            "{metrics}"
        );
        // A 1.0 request without proto still works and gets no 2.0 headers.
        let v1 = app
            .post_raw(
                "/api/v1/write",
                &[
                    ("content-type", "application/x-protobuf"),
                    ("content-encoding", "identity"),
                ],
                Vec::new(),
            )
            .await;
        v1.check(204, "");
        assert_eq!(written(&v1).0, "missing");
    }

    fn histogram(t: i64, schema: i32, deltas: Vec<i64>) -> Histogram {
        let mut level = 0i64;
        let count: u64 = deltas
            .iter()
            .map(|d| {
                level += d;
                level as u64
            })
            .sum();
        Histogram {
            count: Some(histogram::Count::CountInt(count)),
            sum: 1.5,
            schema,
            positive_spans: vec![BucketSpan {
                offset: 0,
                length: deltas.len() as u32,
            }],
            positive_deltas: deltas,
            timestamp: t,
            ..Default::default()
        }
    }

    #[tokio::test]
    async fn histograms_are_stored_and_counted_in_the_headers() {
        let app = TestApp::new();
        let mut h = series(vec![1, 2], vec![]);
        h.histograms = vec![histogram(1000, 0, vec![1, 1]), histogram(2000, 0, vec![2, 1])];
        let resp = app
            .post_raw(
                "/api/v1/write",
                &[("content-type", V2)],
                request(vec![series(vec![1, 2, 3, 4], vec![(1000, 3.0)]), h]),
            )
            .await;
        resp.check(204, "");
        assert_eq!(written(&resp), ("1".into(), "2".into(), "0".into()));
        let body = app.get("/api/v1/export?match[]=up").await.body;
        assert!(
            body.contains(r#""histograms":[{"schema":0,"count":3,"sum":1.5,"positive":[[0,1],[1,2]]},{"schema":0,"count":5,"sum":1.5,"positive":[[0,2],[1,3]]}],"timestamps":[1000,2000]"#),
            "{body}"
        );
    }

    #[tokio::test]
    async fn invalid_histograms_are_refused_after_storing_the_rest_with_honest_headers() {
        let app = TestApp::new();
        let mut h = series(vec![1, 2], vec![]);
        h.histograms = vec![histogram(1000, 0, vec![1]), histogram(2000, 10_000, vec![1])];
        let resp = app
            .post_raw(
                "/api/v1/write",
                &[("content-type", V2)],
                request(vec![series(vec![1, 2, 3, 4], vec![(1000, 3.0)]), h]),
            )
            .await;
        assert_eq!(resp.status, 400, "{}", resp.body);
        assert!(
            resp.body.contains("1 invalid native histogram samples were refused") && resp.body.contains("schema 10000"),
            "{}",
            resp.body
        );
        assert_eq!(written(&resp), ("1".into(), "1".into(), "0".into()));
        let body = app.get("/api/v1/export?match[]=up").await.body;
        assert!(body.contains(r#""values":[3],"timestamps":[1000]"#), "{body}");
        assert!(
            body.contains(r#""timestamps":[1000]}"#) && body.contains("histograms"),
            "{body}"
        );
    }

    #[tokio::test]
    async fn bad_references_are_400_and_unknown_protos_415() {
        let app = TestApp::new();
        let resp = app
            .post_raw(
                "/api/v1/write",
                &[("content-type", V2)],
                request(vec![series(vec![1, 99], vec![(1, 1.0)])]),
            )
            .await;
        resp.check_error(
            400,
            "bad_data",
            "malformed protobuf in series 0: symbol reference 99 is outside the 8-entry symbols table",
        );
        assert_eq!(written(&resp), ("0".into(), "0".into(), "0".into()));
        let resp = app
            .post_raw(
                "/api/v1/write",
                &[(
                    "content-type",
                    "application/x-protobuf; proto=\"io.prometheus.write.v9.Request\"",
                )],
                Vec::new(),
            )
            .await;
        resp.check_status(415);
        app.get("/api/v1/export?match[]=up").await.check(200, "");
    }
}
