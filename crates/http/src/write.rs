//! `POST /api/v1/write`: Prometheus remote write 1.0.
//!
//! Answers: 204 once every float sample is durable (or counted as dropped by
//! storage, e.g. out of retention); 400 for a body the decoder refuses (its
//! message), or after storing the floats when the request also carried native
//! histograms, which Cairn cannot store yet (a 400 makes senders drop rather
//! than retry, and the message says why); 413 for an oversized body; 415 for
//! an unknown `Content-Encoding` or a remote write 2.0 body; storage errors by
//! their kind, so `Unavailable` (503) makes senders retry.

use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use cairn_protocols::remote_write::{ContentEncoding, decode_write_request};

use crate::ingest::{Protocol, Refusal, record_refusal, store_batch};
use crate::{ApiError, AppState, ErrorType, read_body};

pub async fn remote_write(State(state): State<AppState>, req: Request) -> Response {
    match handle(&state, req).await {
        Ok(()) => StatusCode::NO_CONTENT.into_response(),
        Err(refusal) => {
            record_refusal(&state, Protocol::RemoteWrite, &refusal);
            refusal.1.into_response()
        }
    }
}

async fn handle(state: &AppState, req: Request) -> Result<(), Refusal> {
    let content_type = req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    if content_type.contains("io.prometheus.write.v2.Request") {
        return Err((
            "unsupported_protocol",
            ApiError::new(
                ErrorType::UnsupportedMediaType,
                "remote write 2.0 is not supported; send remote write 1.0 (prometheus.WriteRequest)",
            ),
        ));
    }
    let encoding_header = match req.headers().get(header::CONTENT_ENCODING) {
        None => None,
        Some(v) => Some(v.to_str().map_err(|_| {
            (
                "unsupported_encoding",
                ApiError::new(ErrorType::UnsupportedMediaType, "Content-Encoding is not valid ASCII"),
            )
        })?),
    };
    let encoding = ContentEncoding::from_header(encoding_header).map_err(|e| {
        (
            "unsupported_encoding",
            ApiError::new(ErrorType::UnsupportedMediaType, e.to_string()),
        )
    })?;
    let body = read_body(req, state).await.map_err(|e| ("too_large", e))?;
    let state = state.clone();
    let limits = state.config().remote_write_limits;
    let joined = tokio::task::spawn_blocking(move || -> Result<(), Refusal> {
        let batch = decode_write_request(&body, encoding, &limits)
            .map_err(|e| ("bad_data", ApiError::bad_data(e.to_string())))?;
        drop(body);
        store_batch(&state, Protocol::RemoteWrite, &batch)?;
        if batch.histograms_rejected > 0 {
            return Err((
                "native_histograms",
                ApiError::bad_data(format!(
                    "native histograms are not supported yet: {} histogram samples were rejected \
                     ({} float samples were stored)",
                    batch.histograms_rejected,
                    batch.sample_count()
                )),
            ));
        }
        Ok(())
    })
    .await;
    match joined {
        Ok(r) => r,
        Err(e) => {
            tracing::error!(error = %e, "remote write task failed");
            Err(("internal", ApiError::internal(format!("internal error: {e}"))))
        }
    }
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
                "application/x-protobuf;proto=io.prometheus.write.v2.Request",
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
    async fn native_histograms_are_refused_loudly() {
        let req = proto::WriteRequest {
            timeseries: vec![
                proto::TimeSeries {
                    labels: vec![proto::Label {
                        name: "__name__".into(),
                        value: "h".into(),
                    }],
                    histograms: vec![proto::Histogram {
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
        .check_error(
            400,
            "bad_data",
            "native histograms are not supported yet: 1 histogram samples were rejected (1 float samples were stored)",
        );
        app.get("/api/v1/export?match[]=f").await.check(
            200,
            "{\"metric\":{\"__name__\":\"f\"},\"values\":[2],\"timestamps\":[1000]}\n",
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
