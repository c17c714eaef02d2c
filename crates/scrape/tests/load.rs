//! Many targets with many series each: every target scraped every interval.

use std::sync::Arc;
use std::time::Instant;

use crate::support::{Exporter, Exposition, dump, job, wait_until};
use cairn_scrape::{ScrapeManager, ScrapeOptions};
use cairn_storage::MemStorage;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twenty_targets_of_a_thousand_series_keep_their_interval() {
    let mut body = String::from("# TYPE load gauge\n");
    for i in 0..1000 {
        body.push_str(&format!("load{{series=\"{i}\",kind=\"synthetic\"}} {i}\n"));
    }
    let mut addresses = Vec::new();
    let mut exporters = Vec::new();
    for _ in 0..20 {
        let e = Exporter::start(Exposition::text(&body)).await;
        addresses.push(e.address());
        exporters.push(e);
    }
    let storage = MemStorage::new();
    let m = ScrapeManager::new(Arc::new(storage.clone()), ScrapeOptions::default());
    let started = Instant::now();
    m.apply(vec![job("load", &addresses, 1000)]).await.unwrap();
    wait_until(20, "three scrapes of every target", || {
        exporters.iter().all(|e| e.request_count() >= 3)
    })
    .await;
    let elapsed = started.elapsed();
    // Start offsets spread the first scrapes over one interval; then one per interval.
    assert!(elapsed.as_millis() < 4_500, "{elapsed:?}");
    let durations = dump(&storage, "scrape_duration_seconds");
    assert_eq!(durations.len(), 20);
    let worst = durations.values().flatten().filter_map(|(_, v)| *v).fold(0.0, f64::max);
    eprintln!("slowest scrape: {worst:.3}s");
    assert!(worst < 1.0, "a scrape took {worst}s");
    let added = dump(&storage, "scrape_series_added");
    assert!(added.values().all(|s| s[0].1 == Some(1000.0) && s[1].1 == Some(0.0)));
    m.shutdown().await;
}
