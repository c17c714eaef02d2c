//! Scraping a synthetic exporter into MemStorage.

use std::sync::Arc;
use std::time::Duration;

use crate::support::{Exporter, Exposition, dump, job, wait_until};
use cairn_scrape::{Health, ScrapeManager, ScrapeOptions};
use cairn_storage::MemStorage;

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
async fn scrapes_series_with_target_labels_and_report_series() {
    let exporter = Exporter::start(Exposition::text(
        "# HELP temp Temperature.\n# TYPE temp gauge\ntemp{room=\"a\"} 21.5\ntemp{room=\"b\"} 19\n",
    ))
    .await;
    let storage = MemStorage::new();
    let m = manager(&storage);
    m.apply(vec![job("node", &[exporter.address()], 150)]).await.unwrap();
    wait_until(5, "two scrapes", || {
        dump(&storage, "up").values().next().is_some_and(|s| s.len() >= 2)
    })
    .await;

    let inst = exporter.address();
    let temps = dump(&storage, "temp");
    let a = &temps[&format!(r#"temp{{instance="{inst}", job="node", room="a"}}"#)];
    assert!(a.len() >= 2 && a.iter().all(|(_, v)| *v == Some(21.5)));
    let up = dump(&storage, "up|scrape_.*");
    let key = |n: &str| format!(r#"{n}{{instance="{inst}", job="node"}}"#);
    assert_eq!(up[&key("up")][0].1, Some(1.0));
    assert_eq!(up[&key("scrape_samples_scraped")][0].1, Some(2.0));
    assert_eq!(up[&key("scrape_samples_post_metric_relabeling")][0].1, Some(2.0));
    assert_eq!(up[&key("scrape_series_added")][0].1, Some(2.0));
    assert_eq!(up[&key("scrape_series_added")][1].1, Some(0.0));
    assert!(up[&key("scrape_duration_seconds")][0].1.unwrap() > 0.0);
    // Samples and report series of one scrape share its timestamp, and scrapes are an interval apart.
    let (t0, t1) = (a[0].0, a[1].0);
    assert_eq!(up[&key("up")][0].0, t0);
    assert!((t1 - t0 - 150).abs() <= 60, "interval {}", t1 - t0);

    let req = exporter.requests.lock()[0].clone();
    assert!(
        req["accept"]
            .to_str()
            .unwrap()
            .starts_with("application/openmetrics-text;version=1.0.0")
    );
    assert_eq!(req["accept-encoding"], "gzip");
    assert_eq!(req["x-prometheus-scrape-timeout-seconds"], "0.12");
    assert!(req["user-agent"].to_str().unwrap().starts_with("Cairn/"));

    let targets = m.active_targets();
    let t = &targets["node"][0];
    assert_eq!(t.status().health, Health::Up);
    let meta = t.metadata();
    assert_eq!(meta.len(), 1);
    assert_eq!(
        (meta[0].family.as_str(), meta[0].help.as_str()),
        ("temp", "Temperature.")
    );
    m.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_series_that_disappears_gets_a_stale_marker() {
    let exporter = Exporter::start(Exposition::text("a 1\nb 2\n")).await;
    let storage = MemStorage::new();
    let m = manager(&storage);
    m.apply(vec![job("j", &[exporter.address()], 100)]).await.unwrap();
    wait_until(5, "first scrape", || !dump(&storage, "b").is_empty()).await;
    exporter.set_body("a 1\n");
    wait_until(5, "stale b", || {
        dump(&storage, "b")
            .values()
            .next()
            .is_some_and(|s| s.last().unwrap().1.is_none())
    })
    .await;
    let b = dump(&storage, "b").into_values().next().unwrap();
    let a = dump(&storage, "a").into_values().next().unwrap();
    let stale_t = b.last().unwrap().0;
    // The marker carries the timestamp of the scrape that missed the series.
    assert!(a.iter().any(|(t, v)| *t == stale_t && *v == Some(1.0)));
    // One marker only: later scrapes do not repeat it.
    tokio::time::sleep(Duration::from_millis(350)).await;
    let b2 = dump(&storage, "b").into_values().next().unwrap();
    assert_eq!(b2.iter().filter(|(_, v)| v.is_none()).count(), 1);
    m.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_scrape_marks_everything_stale_and_reports_down() {
    let exporter = Exporter::start(Exposition::text("a 1\nb 2\n")).await;
    let storage = MemStorage::new();
    let m = manager(&storage);
    m.apply(vec![job("j", &[exporter.address()], 100)]).await.unwrap();
    wait_until(5, "first scrape", || !dump(&storage, "a").is_empty()).await;
    exporter.set(Exposition {
        status: 500,
        ..Exposition::text("oops")
    });
    wait_until(5, "down", || {
        dump(&storage, "up")
            .values()
            .next()
            .is_some_and(|s| s.last().unwrap().1 == Some(0.0))
    })
    .await;
    for name in ["a", "b"] {
        let s = dump(&storage, name).into_values().next().unwrap();
        assert_eq!(s.last().unwrap().1, None, "{name} stale");
    }
    let t = &m.active_targets()["j"][0];
    let status = t.status();
    assert_eq!(status.health, Health::Down);
    assert_eq!(
        status.last_error.as_deref(),
        Some("server returned HTTP status 500 Internal Server Error")
    );
    let samples = dump(&storage, "scrape_samples_scraped").into_values().next().unwrap();
    assert_eq!(samples.last().unwrap().1, Some(0.0));
    m.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_removed_target_gets_stale_markers_after_two_intervals() {
    let exporter = Exporter::start(Exposition::text("a 1\n")).await;
    let storage = MemStorage::new();
    let m = manager(&storage);
    m.apply(vec![job("j", &[exporter.address()], 100)]).await.unwrap();
    wait_until(5, "first scrape", || !dump(&storage, "a").is_empty()).await;
    m.apply(vec![]).await.unwrap();
    assert!(m.active_targets().is_empty());
    wait_until(5, "stale a", || {
        dump(&storage, "a")
            .values()
            .next()
            .is_some_and(|s| s.last().unwrap().1.is_none())
    })
    .await;
    let up = dump(&storage, "up").into_values().next().unwrap();
    assert_eq!(up.last().unwrap().1, None, "the report series go stale too");
    let a = dump(&storage, "a").into_values().next().unwrap();
    let last_real = a[a.len() - 2].0;
    let stale = a.last().unwrap().0;
    assert!(
        stale > last_real && stale - last_real <= 300,
        "marker at the first missed scrape"
    );
    m.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn honor_labels_decides_conflicts() {
    let exporter = Exporter::start(Exposition::text("m{job=\"inner\",instance=\"x\"} 1\n")).await;
    let storage = MemStorage::new();
    let m = manager(&storage);
    let mut honoring = job("honoring", &[exporter.address()], 100);
    honoring.honor_labels = true;
    let plain = job("plain", &[exporter.address()], 100);
    m.apply(vec![honoring, plain]).await.unwrap();
    wait_until(5, "both", || dump(&storage, "m").len() == 2).await;
    let keys: Vec<String> = dump(&storage, "m").into_keys().collect();
    let inst = exporter.address();
    assert!(
        keys.contains(&r#"m{instance="x", job="inner"}"#.to_string()),
        "{keys:?}"
    );
    assert!(
        keys.contains(&format!(
            r#"m{{exported_instance="x", exported_job="inner", instance="{inst}", job="plain"}}"#
        )),
        "{keys:?}"
    );
    m.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn honor_labels_lets_an_empty_exposed_label_remove_the_targets() {
    let exporter = Exporter::start(Exposition::text(
        "m{job=\"\",env=\"empty-job\"} 2\nm{instance=\"\",env=\"empty-instance\"} 3\nm{env=\"none\"} 4\n",
    ))
    .await;
    let storage = MemStorage::new();
    let m = manager(&storage);
    let mut honoring = job("honoring", &[exporter.address()], 100);
    honoring.honor_labels = true;
    let plain = job("plain", &[exporter.address()], 100);
    m.apply(vec![honoring, plain]).await.unwrap();
    wait_until(5, "both", || dump(&storage, "m").len() == 6).await;
    let mut keys: Vec<String> = dump(&storage, "m").into_keys().collect();
    keys.sort();
    let inst = exporter.address();
    let mut want = vec![
        format!(r#"m{{env="empty-job", instance="{inst}"}}"#),
        r#"m{env="empty-instance", job="honoring"}"#.to_string(),
        format!(r#"m{{env="none", instance="{inst}", job="honoring"}}"#),
        format!(r#"m{{env="empty-job", instance="{inst}", job="plain"}}"#),
        format!(r#"m{{env="empty-instance", instance="{inst}", job="plain"}}"#),
        format!(r#"m{{env="none", instance="{inst}", job="plain"}}"#),
    ];
    want.sort();
    assert_eq!(keys, want);
    m.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sample_limit_fails_the_whole_scrape() {
    let exporter = Exporter::start(Exposition::text("a 1\n")).await;
    let storage = MemStorage::new();
    let m = manager(&storage);
    let mut j = job("j", &[exporter.address()], 100);
    j.sample_limit = 2;
    m.apply(vec![j]).await.unwrap();
    wait_until(5, "first scrape", || !dump(&storage, "a").is_empty()).await;
    exporter.set_body("a 1\nb 2\nc 3\n");
    wait_until(5, "down", || {
        dump(&storage, "up")
            .values()
            .next()
            .is_some_and(|s| s.last().unwrap().1 == Some(0.0))
    })
    .await;
    assert!(
        dump(&storage, "b|c").is_empty(),
        "nothing of the failed scrape is stored"
    );
    let status = m.active_targets()["j"][0].status();
    assert_eq!(status.last_error.as_deref(), Some("sample limit exceeded"));
    let scraped = dump(&storage, "scrape_samples_scraped").into_values().next().unwrap();
    assert_eq!(scraped.last().unwrap().1, Some(3.0));
    // `a` was appended before the limit was hit: it stays tracked, so no marker (as in Prometheus).
    let a = dump(&storage, "a").into_values().next().unwrap();
    assert!(a.iter().all(|(_, v)| v.is_some()));
    let metrics = m.metrics();
    assert!(metrics.scrapes_exceeded_sample_limit_total >= 1);
    assert_eq!(metrics.scrapes_exceeded_body_size_limit_total, 0);
    assert_eq!(metrics.scrape_pools_total, 1);
    let pool = &metrics.pools[0];
    assert_eq!((pool.job.as_str(), pool.targets, pool.discovered_targets), ("j", 1, 1));
    assert!(pool.syncs_total >= 1 && pool.sync_length.count == pool.syncs_total);
    let (interval, between) = &metrics.interval_length[0];
    assert_eq!(interval, "100ms");
    assert!(between.count >= 1, "intervals are measured from the second scrape on");
    let median = between.quantiles[2].1;
    assert!((0.05..0.5).contains(&median), "{median}");
    m.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn explicit_timestamps_are_honored_and_not_marked_stale() {
    let exporter = Exporter::start(Exposition::text("ts 5 1000\nplain 1\n")).await;
    let storage = MemStorage::new();
    let m = manager(&storage);
    let mut honoring = job("h", &[exporter.address()], 100);
    honoring.metric_relabel = cairn_scrape::Relabeling::new(|l| {
        let mut l = l.clone();
        l.set("via", "h");
        Some(l)
    });
    let mut ignoring = job("i", &[exporter.address()], 100);
    ignoring.honor_timestamps = false;
    m.apply(vec![honoring, ignoring]).await.unwrap();
    wait_until(5, "scrapes", || dump(&storage, "ts").len() == 2).await;
    exporter.set_body("plain 1\n");
    wait_until(5, "plain again", || dump(&storage, "up").values().all(|s| s.len() >= 4)).await;
    let ts = dump(&storage, "ts");
    let (honored, ignored): (Vec<_>, Vec<_>) = ts.iter().partition(|(k, _)| k.contains("via=\"h\""));
    assert_eq!(honored[0].1, &vec![(1000, Some(5.0))], "own timestamp, never stale");
    assert!(ignored[0].1.iter().all(|(t, _)| *t > 1_000_000));
    assert_eq!(ignored[0].1.last().unwrap().1, None);
    m.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_target_times_out_without_delaying_others() {
    let slow = Exporter::start(Exposition {
        delay: Duration::from_millis(1500),
        ..Exposition::text("s 1\n")
    })
    .await;
    let fast = Exporter::start(Exposition::text("f 1\n")).await;
    let storage = MemStorage::new();
    let m = manager(&storage);
    m.apply(vec![job("j", &[slow.address(), fast.address()], 150)])
        .await
        .unwrap();
    wait_until(5, "fast scraped 4 times", || {
        dump(&storage, "f").values().next().is_some_and(|s| s.len() >= 4)
    })
    .await;
    assert!(dump(&storage, "s").is_empty());
    let targets = &m.active_targets()["j"];
    let slow_target = targets.iter().find(|t| t.url().contains(&slow.address())).unwrap();
    wait_until(5, "slow down", || slow_target.status().health == Health::Down).await;
    assert!(slow_target.status().last_error.unwrap().contains("deadline exceeded"));
    m.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reload_keeps_unchanged_jobs_and_caches() {
    let exporter = Exporter::start(Exposition::text("a 1\n")).await;
    let storage = MemStorage::new();
    let m = manager(&storage);
    m.apply(vec![job("j", &[exporter.address()], 100)]).await.unwrap();
    wait_until(5, "first scrape", || !dump(&storage, "a").is_empty()).await;
    let before = m.active_targets()["j"][0].clone();
    m.apply(vec![job("j", &[exporter.address()], 100)]).await.unwrap();
    assert!(
        Arc::ptr_eq(&before, &m.active_targets()["j"][0]),
        "same job, same target"
    );
    // A new sample limit restarts the loop with its cache: no staleness
    // marker, and the series is not counted as added again.
    let mut limited = job("j", &[exporter.address()], 100);
    limited.sample_limit = 100;
    limited.fingerprint.push_str("/limit");
    m.apply(vec![limited]).await.unwrap();
    tokio::time::sleep(Duration::from_millis(700)).await;
    let a = dump(&storage, "a").into_values().next().unwrap();
    assert!(a.iter().all(|(_, v)| v.is_some()), "no stale marker across the reload");
    let added = dump(&storage, "scrape_series_added").into_values().next().unwrap();
    assert_eq!(added.iter().filter(|(_, v)| *v == Some(1.0)).count(), 1);
    let metrics = m.metrics();
    assert_eq!(metrics.scrape_pool_reloads_total, 1, "only the changed job reloads");
    assert_eq!(metrics.reload_length.len(), 1);
    assert_eq!(metrics.reload_length[0].1.count, 1);
    // A removed job's figures go with it.
    m.apply(vec![]).await.unwrap();
    assert!(m.metrics().pools.is_empty());
    m.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn target_relabelling_drops_targets_and_reports_them() {
    let e1 = Exporter::start(Exposition::text("a 1\n")).await;
    let e2 = Exporter::start(Exposition::text("a 2\n")).await;
    let storage = MemStorage::new();
    let m = manager(&storage);
    let mut j = job("j", &[e1.address(), e2.address()], 100);
    let drop_addr = e2.address();
    j.relabel = cairn_scrape::Relabeling::new(move |l| {
        if l.get("__address__") == Some(drop_addr.as_str()) {
            return None;
        }
        let mut l = l.clone();
        l.set("team", "core");
        Some(l)
    });
    m.apply(vec![j]).await.unwrap();
    wait_until(5, "scrape", || !dump(&storage, "a").is_empty()).await;
    assert_eq!(dump(&storage, "a").len(), 1);
    assert!(dump(&storage, "a").keys().next().unwrap().contains("team=\"core\""));
    assert_eq!(m.dropped_target_counts()["j"], 1);
    assert_eq!(
        m.dropped_targets()["j"][0].discovered_labels().get("__address__"),
        Some(e2.address().as_str())
    );
    assert_eq!(e2.request_count(), 0);
    m.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn target_limit_fails_every_scrape_of_the_pool() {
    let e1 = Exporter::start(Exposition::text("a 1\n")).await;
    let e2 = Exporter::start(Exposition::text("a 2\n")).await;
    let storage = MemStorage::new();
    let m = manager(&storage);
    let mut j = job("j", &[e1.address(), e2.address()], 100);
    j.target_limit = 1;
    m.apply(vec![j]).await.unwrap();
    wait_until(5, "reports", || dump(&storage, "up").len() == 2).await;
    assert!(dump(&storage, "up").values().all(|s| s[0].1 == Some(0.0)));
    assert!(dump(&storage, "a").is_empty());
    let err = m.active_targets()["j"][0].status().last_error.unwrap();
    assert_eq!(err, "target_limit exceeded (number of targets: 2, limit: 1)");
    assert_eq!(
        e1.request_count() + e2.request_count(),
        0,
        "no request while over the limit"
    );
    let metrics = m.metrics();
    assert!(metrics.scrape_pool_exceeded_target_limit_total >= 1);
    assert_eq!((metrics.pools[0].targets, metrics.pools[0].target_limit), (2, 1));
    m.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_target_is_down_with_gos_wording() {
    let storage = MemStorage::new();
    let m = manager(&storage);
    m.apply(vec![job("j", &["127.0.0.1:1".to_string()], 100)])
        .await
        .unwrap();
    wait_until(5, "report", || !dump(&storage, "up").is_empty()).await;
    let up = dump(&storage, "up").into_values().next().unwrap();
    assert_eq!(up[0].1, Some(0.0));
    let t = &m.active_targets()["j"][0];
    wait_until(5, "status", || t.status().health == Health::Down).await;
    let err = t.status().last_error.unwrap();
    assert!(err.starts_with("Get \"http://127.0.0.1:1/metrics\": "), "{err}");
    m.shutdown().await;
}
