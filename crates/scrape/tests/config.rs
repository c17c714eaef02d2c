//! Jobs from a prometheus.yml: relabelling, params, credentials, gzip,
//! body size limit and content types.

use std::io::Write;
use std::sync::Arc;
use std::time::Duration;

use crate::support::{Exporter, Exposition, dump, wait_until};
use axum::http::{HeaderMap, header};
use cairn_config::Config;
use cairn_scrape::{ScrapeManager, ScrapeOptions};
use cairn_storage::MemStorage;
use parking_lot::Mutex;

fn manager(storage: &MemStorage) -> ScrapeManager {
    ScrapeManager::new(
        Arc::new(storage.clone()),
        ScrapeOptions {
            skip_offset: true,
            ..Default::default()
        },
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_configured_job_relabels_sends_params_and_credentials() {
    let exporter = Exporter::start(Exposition::text("keep_me{a=\"1\"} 1\ndrop_me 2\n")).await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("password"), "s3cret\n").unwrap();
    let yaml = format!(
        r#"
global:
  scrape_interval: 100ms
  scrape_timeout: 80ms
scrape_configs:
  - job_name: configured
    params:
      module: [m1]
    basic_auth:
      username: user
      password_file: password
    http_headers:
      X-Extra:
        values: [one]
    static_configs:
      - targets: ['{addr}']
        labels:
          env: test
    relabel_configs:
      - source_labels: [env]
        target_label: environment
      - regex: env
        action: labeldrop
    metric_relabel_configs:
      - source_labels: [__name__]
        regex: drop_me
        action: drop
"#,
        addr = exporter.address()
    );
    let config = Config::parse(&yaml, dir.path()).unwrap();
    let storage = MemStorage::new();
    let m = manager(&storage);
    m.apply_config(&config).await.unwrap();
    wait_until(5, "scrape", || !dump(&storage, "keep_me").is_empty()).await;
    let keys: Vec<String> = dump(&storage, "keep_me|drop_me").into_keys().collect();
    assert_eq!(
        keys,
        vec![format!(
            r#"keep_me{{a="1", environment="test", instance="{}", job="configured"}}"#,
            exporter.address()
        )]
    );
    let post = dump(&storage, "scrape_samples_post_metric_relabeling")
        .into_values()
        .next()
        .unwrap();
    assert_eq!(post[0].1, Some(1.0));
    let scraped = dump(&storage, "scrape_samples_scraped").into_values().next().unwrap();
    assert_eq!(scraped[0].1, Some(2.0));

    let req: HeaderMap = exporter.requests.lock()[0].clone();
    // "user:s3cret" in base64.
    assert_eq!(req[header::AUTHORIZATION], "Basic dXNlcjpzM2NyZXQ=");
    assert_eq!(req.get("x-extra").map(|v| v.to_str().unwrap()), Some("one"), "{req:?}");
    let t = &m.active_targets()["configured"][0];
    assert_eq!(t.url(), format!("http://{}/metrics?module=m1", exporter.address()));

    // The same configuration again leaves the target alone.
    m.apply_config(&Config::parse(&yaml, dir.path()).unwrap())
        .await
        .unwrap();
    assert!(Arc::ptr_eq(t, &m.active_targets()["configured"][0]));
    m.shutdown().await;
}

async fn serve_once(
    headers: Arc<Mutex<Vec<HeaderMap>>>,
    body: Vec<u8>,
    extra: Vec<(header::HeaderName, &'static str)>,
) -> String {
    let app = axum::Router::new().route(
        "/metrics",
        axum::routing::get(move |h: HeaderMap| {
            let (headers, body, extra) = (headers.clone(), body.clone(), extra.clone());
            async move {
                headers.lock().push(h);
                let mut out = HeaderMap::new();
                for (k, v) in extra {
                    out.insert(k, v.parse().unwrap());
                }
                (out, body)
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    addr.to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gzip_bodies_size_limits_and_content_types() {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(b"zipped 7\n").unwrap();
    let zipped = serve_once(
        Arc::default(),
        gz.finish().unwrap(),
        vec![
            (header::CONTENT_ENCODING, "gzip"),
            (header::CONTENT_TYPE, "text/plain; version=0.0.4"),
        ],
    )
    .await;
    let big = serve_once(
        Arc::default(),
        "big 1\n".repeat(100).into_bytes(),
        vec![(header::CONTENT_TYPE, "text/plain")],
    )
    .await;
    let untyped = serve_once(Arc::default(), b"untyped 1\n".to_vec(), vec![]).await;
    let with_fallback = serve_once(Arc::default(), b"fallback 1\n".to_vec(), vec![]).await;
    let yaml = format!(
        r#"
global:
  scrape_interval: 100ms
  scrape_timeout: 80ms
scrape_configs:
  - job_name: zipped
    extra_scrape_metrics: true
    sample_limit: 10
    static_configs: [{{targets: ['{zipped}']}}]
  - job_name: big
    body_size_limit: 100B
    extra_scrape_metrics: true
    static_configs: [{{targets: ['{big}']}}]
  - job_name: untyped
    static_configs: [{{targets: ['{untyped}']}}]
  - job_name: fallback
    fallback_scrape_protocol: PrometheusText0.0.4
    static_configs: [{{targets: ['{with_fallback}']}}]
"#
    );
    let config = Config::parse(&yaml, std::path::Path::new(".")).unwrap();
    let storage = MemStorage::new();
    let m = manager(&storage);
    m.apply_config(&config).await.unwrap();
    wait_until(5, "all scraped", || dump(&storage, "up").len() == 4).await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(dump(&storage, "zipped").into_values().next().unwrap()[0].1, Some(7.0));
    assert_eq!(dump(&storage, "fallback").into_values().next().unwrap()[0].1, Some(1.0));
    assert!(dump(&storage, "big|untyped").is_empty());
    let targets = m.active_targets();
    let error = |job: &str| targets[job][0].status().last_error.unwrap_or_default();
    assert_eq!(error("big"), "body size limit exceeded");
    assert_eq!(
        error("untyped"),
        // axum labels a byte body application/octet-stream.
        "received unsupported Content-Type \"application/octet-stream\" and no fallback_scrape_protocol specified for target"
    );
    assert_eq!(error("zipped"), "");
    let last = |name: &str, job: &str| {
        dump(&storage, name)
            .into_iter()
            .find(|(k, _)| k.contains(&format!("job=\"{job}\"")))
            .unwrap()
            .1[0]
            .1
    };
    assert_eq!(last("scrape_body_size_bytes", "zipped"), Some(9.0), "uncompressed size");
    assert_eq!(last("scrape_body_size_bytes", "big"), Some(-1.0));
    assert_eq!(last("scrape_sample_limit", "zipped"), Some(10.0));
    assert_eq!(last("scrape_timeout_seconds", "zipped"), Some(0.08));
    assert!(
        dump(&storage, "scrape_timeout_seconds")
            .keys()
            .all(|k| !k.contains("untyped"))
    );
    m.shutdown().await;
}
