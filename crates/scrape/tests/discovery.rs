//! File and HTTP service discovery feeding scrape pools.

use std::sync::Arc;
use std::time::Duration;

use crate::support::{Exporter, Exposition, dump, job, wait_until};
use axum::http::{StatusCode, header};
use cairn_scrape::discovery::{DiscoveryManager, DiscoveryOptions, SdConfig};
use cairn_scrape::settings::HttpSettings;
use cairn_scrape::{ScrapeManager, ScrapeOptions};
use cairn_storage::MemStorage;
use parking_lot::Mutex;

fn fast_discovery() -> DiscoveryOptions {
    DiscoveryOptions {
        file_poll_interval: Duration::from_millis(50),
        ..DiscoveryOptions::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn file_sd_follows_file_changes_and_keeps_groups_of_a_bad_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("targets.yml");
    std::fs::write(&path, "- targets: ['a:1', 'b:2']\n  labels:\n    env: prod\n").unwrap();
    let glob = dir.path().join("*.yml").to_string_lossy().into_owned();
    let options = fast_discovery();
    let sd = DiscoveryManager::start(
        &[SdConfig::File {
            files: vec![glob],
            refresh_interval: Duration::from_secs(300),
        }],
        &options,
    );
    let mut rx = sd.subscribe();
    let addresses = |groups: &[cairn_scrape::discovery::TargetGroup]| -> Vec<String> {
        groups
            .iter()
            .flat_map(|g| g.targets.iter().map(|t| t["__address__"].clone()))
            .collect()
    };
    tokio::time::timeout(Duration::from_secs(5), rx.wait_for(|g| !g.is_empty()))
        .await
        .unwrap()
        .unwrap();
    let groups = sd.groups();
    assert_eq!(addresses(&groups), vec!["a:1", "b:2"]);
    assert_eq!(groups[0].labels["env"], "prod");
    assert_eq!(groups[0].labels["__meta_filepath"], path.to_string_lossy());

    std::fs::write(&path, "- targets: ['c:3']\n").unwrap();
    tokio::time::timeout(Duration::from_secs(5), rx.wait_for(|g| addresses(g) == vec!["c:3"]))
        .await
        .unwrap()
        .unwrap();

    std::fs::write(&path, "- targets: ['c:3']\n  unknown_field: 1\n").unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        addresses(&sd.groups()),
        vec!["c:3"],
        "a bad file keeps its last good groups"
    );
    assert!(
        options.counters.file_read_errors() >= 1,
        "the bad file counts as a read error"
    );
    assert_eq!(options.counters.http_failures(), 0);

    std::fs::remove_file(&path).unwrap();
    tokio::time::timeout(Duration::from_secs(5), rx.wait_for(|g| g.is_empty()))
        .await
        .unwrap()
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn file_sd_targets_are_scraped() {
    let exporter = Exporter::start(Exposition::text("x 1\n")).await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.json");
    std::fs::write(
        &path,
        format!(r#"[{{"targets":["{}"],"labels":{{"zone":"z1"}}}}]"#, exporter.address()),
    )
    .unwrap();
    let storage = MemStorage::new();
    let m = ScrapeManager::new(
        Arc::new(storage.clone()),
        ScrapeOptions {
            skip_offset: true,
            discovery: fast_discovery(),
            ..Default::default()
        },
    );
    let mut j = job("files", &[], 100);
    j.discovery = vec![SdConfig::File {
        files: vec![dir.path().join("*.json").to_string_lossy().into_owned()],
        refresh_interval: Duration::from_secs(300),
    }];
    m.apply(vec![j]).await.unwrap();
    wait_until(5, "scraped", || !dump(&storage, "x").is_empty()).await;
    let key = dump(&storage, "x").into_keys().next().unwrap();
    assert!(key.contains(r#"zone="z1""#) && !key.contains("__meta"), "{key}");
    let t = &m.active_targets()["files"][0];
    assert_eq!(
        t.discovered_labels().get("__meta_filepath"),
        Some(path.to_string_lossy().as_ref())
    );

    std::fs::write(&path, "[]").unwrap();
    wait_until(5, "target gone", || m.active_targets()["files"].is_empty()).await;
    m.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_sd_checks_the_response_and_keeps_the_last_good_groups() {
    let answer = Arc::new(Mutex::new((
        200u16,
        "application/json".to_string(),
        r#"[{"targets":["h:1"],"labels":{"a":"b"}}]"#.to_string(),
    )));
    let seen_headers = Arc::new(Mutex::new(Vec::new()));
    let (a2, h2) = (answer.clone(), seen_headers.clone());
    let app = axum::Router::new().route(
        "/sd",
        axum::routing::get(move |headers: axum::http::HeaderMap| {
            let (a, h) = (a2.clone(), h2.clone());
            async move {
                h.lock().push(headers);
                let (status, ct, body) = a.lock().clone();
                (
                    StatusCode::from_u16(status).unwrap(),
                    [(header::CONTENT_TYPE, ct)],
                    body,
                )
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let url = format!("http://{addr}/sd");
    let sd = DiscoveryManager::start(
        &[SdConfig::Http {
            url: url.clone(),
            refresh_interval: Duration::from_millis(100),
            http: Box::new(HttpSettings::default()),
        }],
        &fast_discovery(),
    );
    let mut rx = sd.subscribe();
    tokio::time::timeout(Duration::from_secs(5), rx.wait_for(|g| !g.is_empty()))
        .await
        .unwrap()
        .unwrap();
    let g = sd.groups();
    assert_eq!(g[0].targets[0]["__address__"], "h:1");
    assert_eq!(g[0].labels["__meta_url"], url);
    assert_eq!(g[0].source, format!("{url}:0"));
    let h = seen_headers.lock()[0].clone();
    assert_eq!(h["accept"], "application/json");
    assert_eq!(h["x-prometheus-refresh-interval-seconds"], "0.1");

    // A wrong content type or status keeps the last good groups.
    answer.lock().1 = "text/plain".into();
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(sd.groups()[0].targets[0]["__address__"], "h:1");
    *answer.lock() = (
        200,
        "application/json; charset=utf-8".into(),
        r#"[{"targets":["h:2"]},{"targets":["h:3"]}]"#.into(),
    );
    tokio::time::timeout(Duration::from_secs(5), rx.wait_for(|g| g.len() == 2))
        .await
        .unwrap()
        .unwrap();
    // Fewer groups than before: the missing sources are emptied.
    answer.lock().2 = r#"[{"targets":["h:4"]}]"#.into();
    tokio::time::timeout(
        Duration::from_secs(5),
        rx.wait_for(|g| g.len() == 1 && g[0].targets[0]["__address__"] == "h:4"),
    )
    .await
    .unwrap()
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reload_that_changes_file_sd_keeps_targets_found_again() {
    let exporter = Exporter::start(Exposition::text("x 1\n")).await;
    let dir = tempfile::tempdir().unwrap();
    for name in ["a.json", "b.json"] {
        std::fs::write(
            dir.path().join(name),
            format!(r#"[{{"targets":["{}"]}}]"#, exporter.address()),
        )
        .unwrap();
    }
    let storage = MemStorage::new();
    let m = ScrapeManager::new(
        Arc::new(storage.clone()),
        ScrapeOptions {
            skip_offset: true,
            discovery: fast_discovery(),
            ..Default::default()
        },
    );
    let with_file = |file: &str| {
        let mut j = job("files", &[], 100);
        j.discovery = vec![SdConfig::File {
            files: vec![dir.path().join(file).to_string_lossy().into_owned()],
            refresh_interval: Duration::from_secs(300),
        }];
        j.fingerprint = file.to_string();
        j.cache_fingerprint = file.to_string();
        j
    };
    m.apply(vec![with_file("a.json")]).await.unwrap();
    wait_until(5, "scraped", || !dump(&storage, "x").is_empty()).await;
    m.apply(vec![with_file("b.json")]).await.unwrap();
    tokio::time::sleep(Duration::from_millis(600)).await;
    let x = dump(&storage, "x").into_values().next().unwrap();
    assert!(
        x.iter().all(|(_, v)| v.is_some()),
        "the target never left: no staleness marker"
    );
    assert_eq!(m.active_targets()["files"].len(), 1);
    m.shutdown().await;
}
