//! Native histograms scraped over protobuf, under Prometheus' bucket limit.

use std::sync::Arc;

use crate::support::{dump, job, wait_until};
use axum::http::header;
use cairn_model::{MatchOp, Matcher};
use cairn_protocols::exposition::ScrapeFormat;
use cairn_protocols::exposition::proto::{BucketSpan, Histogram, Metric, MetricFamily, MetricType};
use cairn_scrape::{ScrapeManager, ScrapeOptions};
use cairn_storage::{MemStorage, Queryable, SelectHints};
use prost::Message;

fn body() -> Vec<u8> {
    let family = MetricFamily {
        name: "latency_seconds".into(),
        help: "Latency.".into(),
        r#type: MetricType::Histogram as i32,
        metric: vec![Metric {
            histogram: Some(Histogram {
                sample_count: 6,
                sample_sum: 9.5,
                schema: 1,
                zero_threshold: 0.001,
                positive_span: vec![BucketSpan { offset: 0, length: 4 }],
                // Counts 1, 2, 2, 1 as deltas.
                positive_delta: vec![1, 1, 0, -1],
                ..Default::default()
            }),
            ..Default::default()
        }],
        unit: String::new(),
    };
    let mut out = Vec::new();
    family.encode_length_delimited(&mut out).unwrap();
    out
}

async fn serve(body: Vec<u8>) -> String {
    let app = axum::Router::new().route(
        "/metrics",
        axum::routing::get(move || {
            let body = body.clone();
            async move {
                (
                    [(
                        header::CONTENT_TYPE,
                        "application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; encoding=delimited",
                    )],
                    body,
                )
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    addr
}

fn histograms(storage: &MemStorage, job: &str) -> Vec<cairn_model::HistogramSample> {
    let q = storage.querier(0, i64::MAX / 2).unwrap();
    let matchers = [
        Matcher::equal("__name__", "latency_seconds"),
        Matcher::new(MatchOp::Equal, "job", job).unwrap(),
    ];
    q.select(&SelectHints::default(), &matchers)
        .unwrap()
        .flat_map(|s| s.unwrap().histograms)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn native_histograms_are_stored_and_limited() {
    let addr = serve(body()).await;
    let native = |name: &str| {
        let mut j = job(name, std::slice::from_ref(&addr), 100);
        j.scrape_native_histograms = true;
        j.scrape_protocols = ScrapeFormat::proto_first_defaults().to_vec();
        j.accept = ScrapeFormat::accept_header(&j.scrape_protocols);
        j
    };
    let plain = native("plain");
    let mut limited = native("limited");
    limited.native_histogram_bucket_limit = 2;
    let mut classic_only = native("classic_only");
    classic_only.scrape_native_histograms = false;
    let storage = MemStorage::new();
    let m = ScrapeManager::new(
        Arc::new(storage.clone()),
        ScrapeOptions {
            skip_offset: true,
            ..Default::default()
        },
    );
    m.apply(vec![plain, limited, classic_only]).await.unwrap();
    wait_until(5, "scrapes", || dump(&storage, "up").len() == 3).await;
    wait_until(5, "histograms", || {
        !histograms(&storage, "plain").is_empty() && !histograms(&storage, "limited").is_empty()
    })
    .await;
    let h = &histograms(&storage, "plain")[0].h;
    assert_eq!((h.schema, h.count, h.sum), (1, 6.0, 9.5));
    assert_eq!(h.positive, vec![(0, 1.0), (1, 2.0), (2, 2.0), (3, 1.0)]);
    let l = &histograms(&storage, "limited")[0].h;
    assert!(l.schema < 1 && l.positive.len() <= 2, "resolution lowered: {l:?}");
    assert_eq!(l.count, 6.0);
    // Without native histograms the family is read as classic series only.
    assert!(histograms(&storage, "classic_only").is_empty());
    let up = dump(&storage, "up");
    assert!(up.values().all(|s| s[0].1 == Some(1.0)), "{up:?}");
    m.shutdown().await;
}
