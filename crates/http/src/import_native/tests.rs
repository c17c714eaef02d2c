use axum::body::Body;
use axum::http::Request;
use cairn_model::{Labels, stale_nan};
use cairn_protocols::vm_native;

use crate::test_util::*;

/// A native stream of the given series, each `(name, job, samples)`.
fn stream(series: &[TestSeries<'_>], min_t: i64, max_t: i64) -> Vec<u8> {
    let mut out = Vec::new();
    vm_native::write_header(&mut out, min_t, max_t);
    for (name, job, samples) in series {
        let labels = Labels::from_pairs([("__name__", *name), ("job", *job)]);
        let ts: Vec<i64> = samples.iter().map(|s| s.0).collect();
        let vs: Vec<f64> = samples.iter().map(|s| s.1).collect();
        vm_native::write_series(&mut out, &labels, &ts, &vs);
    }
    out
}

#[tokio::test]
async fn native_export_reimports_exactly() {
    let app = TestApp::new();
    let many: Vec<(i64, f64)> = (0..20_000).map(|i| (i * 1000, (i % 977) as f64 * 0.25)).collect();
    app.write(&[
        (
            "up",
            "a",
            &[
                (1000, 1.0),
                (2000, stale_nan()),
                (3000, -0.125),
                (4000, 0.1 + 0.2),
                (5000, f64::INFINITY),
            ],
        ),
        ("up", "b", &many),
        ("other", "c", &[(1000, 7.0)]),
    ]);
    let exported = app.get("/api/v1/export/native?match[]=up&start=0&end=100000").await;
    exported.check_status(200);
    assert_eq!(exported.content_type(), "VictoriaMetrics/native");
    let other = TestApp::new();
    other
        .post_raw("/api/v1/import/native", &[], exported.raw.clone())
        .await
        .check(204, "");
    // The JSON export shows every bit, staleness markers included.
    let there = other.get("/api/v1/export?match[]={__name__=~\".%2B\"}").await.body;
    let here = app.get("/api/v1/export?match[]=up&start=0&end=100000").await.body;
    assert_eq!(there, here);
    assert!(
        there.contains("[1,null,-0.125,0.30000000000000004,\"+Inf\"]"),
        "{there}"
    );
    assert_eq!(
        other.state.metrics().ingest_samples(crate::ingest::Protocol::VmNative),
        20_005
    );
}

#[tokio::test]
async fn the_time_range_and_extra_labels_apply() {
    let app = TestApp::new();
    let body = stream(&[("m", "a", &[(1000, 1.0), (2000, 2.0), (3000, 3.0)])], 2000, 3000);
    app.post_raw("/api/v1/import/native?extra_label=dc=x&extra_label=job=z", &[], body)
        .await
        .check(204, "");
    app.get("/api/v1/export?match[]=m").await.check(
        200,
        "{\"metric\":{\"__name__\":\"m\",\"dc\":\"x\",\"job\":\"z\"},\"values\":[2,3],\"timestamps\":[2000,3000]}\n",
    );
}

#[tokio::test]
async fn compressed_bodies_stream_in() {
    let app = TestApp::new();
    let body = stream(&[("m", "a", &[(1000, 1.5)])], 0, 10_000);
    let zstd = zstd::bulk::compress(&body, 3).unwrap();
    app.post_raw("/api/v1/import/native", &[("content-encoding", "zstd")], zstd)
        .await
        .check(204, "");
    app.get("/api/v1/export?match[]=m").await.check(
        200,
        "{\"metric\":{\"__name__\":\"m\",\"job\":\"a\"},\"values\":[1.5],\"timestamps\":[1000]}\n",
    );
    app.post_raw("/api/v1/import/native", &[("content-encoding", "br")], Vec::new())
        .await
        .check_status(415);
}

#[tokio::test]
async fn a_broken_stream_keeps_what_came_before_and_says_so() {
    let app = TestApp::new();
    let body = stream(&[("m", "a", &[(1000, 1.0)]), ("m", "b", &[(1000, 2.0)])], 0, 10_000);
    // Cut inside the second block.
    let cut = body.len() - 3;
    let resp = app.post_raw("/api/v1/import/native", &[], body[..cut].to_vec()).await;
    resp.check_status(400);
    assert!(resp.body.contains("(1 samples stored before it)"), "{}", resp.body);
    assert!(app.get("/api/v1/export?match[]=m").await.body.contains("\"job\":\"a\""));
    // No time range at all.
    app.post_raw("/api/v1/import/native", &[], vec![1, 2, 3])
        .await
        .check_error(
            400,
            "bad_data",
            "invalid native data: cannot read the time range: failed to fill whole buffer (0 samples stored before it)",
        );
}

#[tokio::test]
async fn blocks_with_bad_labels_are_skipped_and_counted() {
    let app = TestApp::with_config(crate::ApiConfig {
        remote_write_limits: cairn_protocols::DecodeLimits {
            max_label_value_len: 4,
            ..Default::default()
        },
        ..Default::default()
    });
    let body = stream(
        &[("m", "long-value", &[(1000, 1.0)]), ("m", "ok", &[(1000, 2.0)])],
        0,
        10_000,
    );
    let resp = app.post_raw("/api/v1/import/native", &[], body).await;
    resp.check_error(
        400,
        "bad_data",
        "1 blocks skipped (1 samples stored); first error: value of label \"job\" has 10 bytes, over the limit of 4",
    );
    assert!(
        app.get("/api/v1/export?match[]=m")
            .await
            .body
            .contains("\"job\":\"ok\"")
    );
}

#[tokio::test]
async fn a_body_larger_than_the_request_limit_streams_in() {
    let app = TestApp::with_config(crate::ApiConfig {
        max_request_body_bytes: 1024,
        ..Default::default()
    });
    let samples: Vec<(i64, f64)> = (0..50_000)
        .map(|i| (i * 1000, (i * 7919 % 1000) as f64 / 8.0))
        .collect();
    let body = stream(&[("m", "a", &samples)], 0, i64::MAX);
    assert!(body.len() > 1024);
    // Sent in small chunks, as a migration streams it.
    let chunks: Vec<Result<Vec<u8>, std::io::Error>> = body.chunks(100).map(|c| Ok(c.to_vec())).collect();
    let req = Request::post("/api/v1/import/native")
        .body(Body::from_stream(ready_chunks(chunks)))
        .unwrap();
    app.request(req).await.check(204, "");
    let exported = app.get("/api/v1/export?match[]=m&start=0").await.body;
    let line: serde_json::Value = serde_json::from_str(exported.trim()).unwrap();
    assert_eq!(line["values"].as_array().unwrap().len(), 50_000);
}

/// A stream of ready chunks.
fn ready_chunks(
    chunks: Vec<Result<Vec<u8>, std::io::Error>>,
) -> impl futures_core::Stream<Item = Result<Vec<u8>, std::io::Error>> + Send {
    struct Ready(std::vec::IntoIter<Result<Vec<u8>, std::io::Error>>);
    impl futures_core::Stream for Ready {
        type Item = Result<Vec<u8>, std::io::Error>;
        fn poll_next(
            mut self: std::pin::Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
        ) -> std::task::Poll<Option<Self::Item>> {
            std::task::Poll::Ready(self.0.next())
        }
    }
    Ready(chunks.into_iter())
}

#[tokio::test]
async fn export_native_errors_and_left_out_values() {
    let app = TestApp::new();
    app.get("/api/v1/export/native")
        .await
        .check_error(400, "bad_data", "no match[] parameter provided");
    app.write(&[("m", "a", &[(1000, f64::NAN), (2000, 1.0)])]);
    let exported = app.get("/api/v1/export/native?match[]=m&start=0&end=10").await;
    let mut reader = vm_native::NativeReader::new(exported.raw.as_slice()).unwrap();
    assert_eq!(reader.time_range(), (0, 10_000));
    let block = reader.next_block().unwrap().unwrap();
    assert_eq!(block.samples, [cairn_model::Sample::new(2000, 1.0)]);
    assert!(reader.next_block().unwrap().is_none());
}
