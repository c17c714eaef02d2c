//! The JSON of /api/v1/targets and the metadata endpoints.

use std::sync::Arc;

use crate::support::{Exporter, Exposition, dump, job, wait_until};
use cairn_model::Matcher;
use cairn_scrape::{GlobalUrlOptions, ScrapeManager, ScrapeOptions};
use cairn_storage::MemStorage;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn targets_and_metadata_json_look_like_prometheus() {
    let exporter = Exporter::start(Exposition::text(
        "# HELP reqs Requests.\n# TYPE reqs counter\nreqs_total 3\n# TYPE temp gauge\ntemp 1\n",
    ))
    .await;
    let storage = MemStorage::new();
    let m = ScrapeManager::new(
        Arc::new(storage.clone()),
        ScrapeOptions {
            skip_offset: true,
            ..Default::default()
        },
    );
    let mut dropping = job("other", &["gone:1".to_string()], 100);
    dropping.relabel = cairn_scrape::Relabeling::new(|_| None);
    m.apply(vec![job("node", &[exporter.address()], 100), dropping])
        .await
        .unwrap();
    wait_until(5, "scrape", || !dump(&storage, "temp").is_empty()).await;

    let global = GlobalUrlOptions {
        listen_address: "0.0.0.0:9090".into(),
        host: "cairn.example:9090".into(),
        scheme: "http".into(),
    };
    let all = m.targets_json(None, None, &global);
    let active = all["activeTargets"].as_array().unwrap();
    assert_eq!(active.len(), 1);
    let t = &active[0];
    let inst = exporter.address();
    assert_eq!(t["labels"], serde_json::json!({ "instance": inst, "job": "node" }));
    assert_eq!(t["discoveredLabels"]["__address__"], inst);
    assert_eq!(t["discoveredLabels"]["__scrape_interval__"], "100ms");
    assert_eq!(t["scrapePool"], "node");
    assert_eq!(t["scrapeUrl"], format!("http://{inst}/metrics"));
    assert_eq!(
        t["globalUrl"],
        format!("http://cairn.example:{}/metrics", exporter.addr.port())
    );
    assert_eq!(t["health"], "up");
    assert_eq!(t["lastError"], "");
    assert_eq!(t["scrapeInterval"], "100ms");
    assert_eq!(t["scrapeTimeout"], "80ms");
    assert!(t["lastScrape"].as_str().unwrap().ends_with('Z'));
    assert!(t["lastScrapeDuration"].as_f64().unwrap() > 0.0);
    assert_eq!(all["droppedTargets"][0]["scrapePool"], "other");
    assert_eq!(all["droppedTargets"][0]["discoveredLabels"]["__address__"], "gone:1");
    assert_eq!(all["droppedTargetCounts"], serde_json::json!({ "node": 0, "other": 1 }));

    let active_only = m.targets_json(Some("Active"), None, &global);
    assert_eq!(active_only["droppedTargets"], serde_json::json!([]));
    assert_eq!(active_only["droppedTargetCounts"], serde_json::Value::Null);
    let other_pool = m.targets_json(None, Some("other"), &global);
    assert_eq!(other_pool["activeTargets"], serde_json::json!([]));

    let md = m.targets_metadata_json(&[Matcher::equal("job", "node")], None, None);
    let md = md.as_array().unwrap();
    assert_eq!(md.len(), 2);
    assert_eq!(md[0]["metric"], "reqs");
    assert_eq!(md[0]["type"], "counter");
    assert_eq!(md[0]["help"], "Requests.");
    assert_eq!(md[0]["target"]["job"], "node");
    let one = m.targets_metadata_json(&[], Some("temp"), None);
    assert_eq!(
        one,
        serde_json::json!([{ "target": { "instance": inst, "job": "node" }, "type": "gauge", "help": "", "unit": "" }])
    );
    assert_eq!(
        m.targets_metadata_json(&[Matcher::equal("job", "x")], None, None),
        serde_json::json!([])
    );
    // As in Prometheus, the limit is checked per target: a target's entries come whole.
    assert_eq!(m.targets_metadata_json(&[], None, Some(1)).as_array().unwrap().len(), 2);
    assert_eq!(m.targets_metadata_json(&[], None, Some(0)), serde_json::json!([]));

    let all_md = m.metadata_json(None, None, None);
    assert_eq!(
        all_md["temp"],
        serde_json::json!([{ "type": "gauge", "help": "", "unit": "" }])
    );
    assert_eq!(m.metadata_json(None, Some(1), None).as_object().unwrap().len(), 1);
    m.shutdown().await;
}
