use std::io::Write;

use cairn_model::{Labels, Sample, stale_nan};
use proptest::prelude::*;

use crate::test_util::*;

fn gzip(body: &[u8]) -> Vec<u8> {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(body).unwrap();
    gz.finish().unwrap()
}

const EXPORTED: &str = concat!(
    "{\"metric\":{\"__name__\":\"up\",\"job\":\"a\"},\"values\":[1,null,\"NaN\",\"+Inf\",\"-Inf\",-0.125,0.0000001,0.30000000000000004],\"timestamps\":[1000,2000,3000,4000,5000,6000,7000,8000]}\n",
    "{\"metric\":{\"__name__\":\"up\",\"job\":\"a\"},\"histograms\":[{\"schema\":3,\"count\":7,\"sum\":0.30000000000000004,\"zero_threshold\":0.001,\"zero_count\":1,\"positive\":[[-2,1],[5,4]],\"negative\":[[1,1]]},{\"schema\":-53,\"count\":2.5,\"sum\":\"NaN\",\"positive\":[[0,0.5],[2,2]],\"custom_values\":[0.1,1],\"reset_hint\":\"gauge\"}],\"timestamps\":[9000,10000]}\n",
    "{\"metric\":{\"__name__\":\"up\",\"job\":\"b\"},\"values\":[123456789012345680000],\"timestamps\":[-1000]}\n",
);

#[tokio::test]
async fn json_lines_export_reimports_bit_for_bit() {
    let app = TestApp::new();
    app.post_raw("/api/v1/import", &[], EXPORTED.as_bytes().to_vec())
        .await
        .check(204, "");
    let exported = app.get("/api/v1/export?match[]=up").await;
    exported.check(200, EXPORTED);
    // Into a second instance, gzipped, under the /prometheus prefix.
    let other = TestApp::new();
    other
        .post_raw(
            "/prometheus/api/v1/import",
            &[("content-encoding", "gzip")],
            gzip(exported.body.as_bytes()),
        )
        .await
        .check(204, "");
    other.get("/api/v1/export?match[]=up").await.check(200, EXPORTED);
    assert_eq!(
        other.state.metrics().ingest_samples(crate::ingest::Protocol::JsonLines),
        11
    );
}

#[tokio::test]
async fn json_lines_store_good_lines_and_name_the_first_bad_one() {
    let app = TestApp::new();
    let body = "{\"metric\":{\"__name__\":\"m\"},\"values\":[1],\"timestamps\":[1000]}\n{oops\n\n{\"metric\":{\"a\":\"b\"},\"values\":[1,2],\"timestamps\":[1]}\n";
    app.post_raw("/api/v1/import?extra_label=env=prod", &[], body.as_bytes().to_vec())
        .await
        .check_error(
            400,
            "bad_data",
            "2 bad lines skipped (1 samples stored); first error at line 2: invalid JSON: key must be a string at line 1 column 2",
        );
    app.get("/api/v1/export?match[]=m").await.check(
        200,
        "{\"metric\":{\"__name__\":\"m\",\"env\":\"prod\"},\"values\":[1],\"timestamps\":[1000]}\n",
    );
    let metrics = app.get("/metrics").await.body;
    assert!(
        metrics.contains("cairn_ingest_samples_rejected_total{protocol=\"json_lines\",reason=\"bad_line\"} 2"),
        "{metrics}"
    );
}

#[tokio::test]
async fn whole_body_failures_store_nothing() {
    let app = TestApp::new();
    app.post_raw("/api/v1/import", &[("content-encoding", "gzip")], b"not gzip".to_vec())
        .await
        .check_status(400);
    app.post_raw("/api/v1/import", &[("content-encoding", "br")], b"x".to_vec())
        .await
        .check_status(415);
    app.post_raw("/api/v1/import?extra_label=novalue", &[], EXPORTED.as_bytes().to_vec())
        .await
        .check_error(400, "bad_data", "invalid extra_label \"novalue\": want name=value");
    app.post_raw("/api/v1/import/csv", &[], b"1,2".to_vec())
        .await
        .check_error(400, "bad_data", "missing format query arg");
    app.get("/api/v1/import").await.check_status(405);
    app.post_raw("/api/v1/import", &[], Vec::new()).await.check(204, "");
    app.get("/api/v1/export?match[]=up").await.check(200, "");
    // Over the decompressed limit.
    let small = TestApp::with_config(crate::ApiConfig {
        remote_write_limits: cairn_protocols::DecodeLimits {
            max_decompressed_bytes: 100,
            ..Default::default()
        },
        ..Default::default()
    });
    small
        .post_raw(
            "/api/v1/import",
            &[("content-encoding", "gzip")],
            gzip(EXPORTED.as_bytes()),
        )
        .await
        .check_error(400, "bad_data", "body decompresses to more than the 100-byte limit");
}

#[tokio::test]
async fn prometheus_text_with_metadata_timestamp_and_job_path() {
    let app = TestApp::new();
    let body =
        "# HELP temp Room temperature.\n# TYPE temp gauge\ntemp{room=\"a\\\"b\"} 21.5\ntemp{room=\"c\"} 19 5000\n";
    app.post_raw("/api/v1/import/prometheus?timestamp=1.5", &[], body.as_bytes().to_vec())
        .await
        .check(204, "");
    app.get("/api/v1/export?match[]=temp").await.check(
        200,
        concat!(
            "{\"metric\":{\"__name__\":\"temp\",\"room\":\"a\\\"b\"},\"values\":[21.5],\"timestamps\":[1500]}\n",
            "{\"metric\":{\"__name__\":\"temp\",\"room\":\"c\"},\"values\":[19],\"timestamps\":[5000]}\n",
        ),
    );
    app.get("/api/v1/metadata").await.check(
        200,
        r#"{"status":"success","data":{"temp":[{"type":"gauge","help":"Room temperature.","unit":""}]}}"#,
    );
    app.post_raw(
        "/api/v1/import/prometheus/metrics/job/backup/instance/db1?timestamp=1700000000000",
        &[],
        b"last_run 7\n".to_vec(),
    )
    .await
    .check(204, "");
    app.get("/api/v1/export?match[]=last_run").await.check(
        200,
        "{\"metric\":{\"__name__\":\"last_run\",\"instance\":\"db1\",\"job\":\"backup\"},\"values\":[7],\"timestamps\":[1700000000000]}\n",
    );
    // OpenMetrics by content type: seconds.
    app.post_raw(
        "/api/v1/import/prometheus",
        &[("content-type", "application/openmetrics-text; version=1.0.0")],
        b"om_total 3 1.5\n".to_vec(),
    )
    .await
    .check(204, "");
    app.get("/api/v1/export?match[]=om_total").await.check(
        200,
        "{\"metric\":{\"__name__\":\"om_total\"},\"values\":[3],\"timestamps\":[1500]}\n",
    );
    app.post_raw("/api/v1/import/prometheus/metrics/job/x/odd", &[], b"a 1\n".to_vec())
        .await
        .check_status(400);
    app.post_raw("/api/v1/import/prometheus?timestamp=yesterday", &[], b"a 1\n".to_vec())
        .await
        .check_status(400);
    app.post_raw("/api/v1/import/prometheus", &[], b"a 1 1000\nb{ 2\n".to_vec())
        .await
        .check_error(
            400,
            "bad_data",
            "1 bad lines skipped (1 samples stored); first error at line 2: invalid label name at \"2\"",
        );
    app.get("/api/v1/export?match[]=a").await.check(
        200,
        "{\"metric\":{\"__name__\":\"a\"},\"values\":[1],\"timestamps\":[1000]}\n",
    );
}

#[tokio::test]
async fn csv_import() {
    let app = TestApp::new();
    app.post_raw(
        "/api/v1/import/csv?format=2:metric:ask,3:metric:bid,1:label:ticker,4:time:unix_s&extra_label=src=csv",
        &[("content-encoding", "gzip")],
        gzip(b"GOOG,1.23,4.56,1\nMSFT,3.21,,2\n"),
    )
    .await
    .check(204, "");
    app.get("/api/v1/export?match[]={src=\"csv\"}").await.check(
        200,
        concat!(
            "{\"metric\":{\"__name__\":\"ask\",\"src\":\"csv\",\"ticker\":\"GOOG\"},\"values\":[1.23],\"timestamps\":[1000]}\n",
            "{\"metric\":{\"__name__\":\"ask\",\"src\":\"csv\",\"ticker\":\"MSFT\"},\"values\":[3.21],\"timestamps\":[2000]}\n",
            "{\"metric\":{\"__name__\":\"bid\",\"src\":\"csv\",\"ticker\":\"GOOG\"},\"values\":[4.56],\"timestamps\":[1000]}\n",
        ),
    );
    app.post_raw(
        "/api/v1/import/csv?format=1:metric:m,1:time:custom:x",
        &[],
        b"1\n".to_vec(),
    )
    .await
    .check_status(400);
}

fn sample_value() -> impl Strategy<Value = f64> {
    prop_oneof![
        any::<f64>(),
        Just(stale_nan()),
        Just(f64::NAN),
        Just(f64::INFINITY),
        Just(f64::NEG_INFINITY),
        Just(-0.0),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    /// Whatever is stored exports to lines that import back into the same
    /// export, byte for byte (stale markers, NaN, infinities and every f64).
    #[test]
    fn export_import_export_is_identical(
        series in proptest::collection::vec(
            ("[a-z_]{1,8}", "\\PC{1,8}", proptest::collection::btree_map(-1_000_000i64..1_000_000, sample_value(), 1..20)),
            1..5,
        ),
    ) {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async {
            let source = TestApp::new();
            {
                let mut app = cairn_storage::Appendable::appender(&source.storage);
                for (name, job, samples) in &series {
                    let labels = Labels::from_pairs([("__name__", name.as_str()), ("job", job.as_str())]);
                    let samples: Vec<Sample> = samples.iter().map(|(&t, &v)| Sample::new(t, v)).collect();
                    app.append(&labels, &samples).unwrap();
                }
                app.commit().unwrap();
            }
            let first = source.get("/api/v1/export?match[]={__name__=~\".+\"}").await;
            first.check_status(200);
            let target = TestApp::new();
            target.post_raw("/api/v1/import", &[], first.body.clone().into_bytes()).await.check(204, "");
            target.get("/api/v1/export?match[]={__name__=~\".+\"}").await.check(200, &first.body);
        });
    }
}
