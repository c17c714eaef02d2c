use std::sync::Arc;
use std::time::{Duration, SystemTime};

use axum::Json;
use axum::extract::State;
use axum::routing::post;
use parking_lot::Mutex;

use super::*;

/// An Alertmanager stand-in that records every request's alerts.
#[derive(Clone, Default)]
struct Received(Arc<Mutex<Vec<Vec<serde_json::Value>>>>);

impl Received {
    fn alerts(&self) -> Vec<serde_json::Value> {
        self.0.lock().iter().flatten().cloned().collect()
    }

    fn requests(&self) -> usize {
        self.0.lock().len()
    }
}

async fn start_receiver(path: &'static str) -> (String, Received) {
    let received = Received::default();
    let app = axum::Router::new()
        .route(
            path,
            post(
                |State(r): State<Received>, Json(body): Json<Vec<serde_json::Value>>| async move {
                    r.0.lock().push(body);
                },
            ),
        )
        .with_state(received.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    tokio::spawn(async move { axum::serve(listener, app).await });
    (addr, received)
}

fn config(yaml: &str) -> Config {
    Config::parse(yaml, std::path::Path::new("/")).unwrap()
}

fn client(_: &cairn_config::HttpClientConfig) -> Result<reqwest::Client, String> {
    // In a workspace build reqwest has rustls without a provider: install ring's, as the server does.
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder().build().map_err(|e| e.to_string())
}

fn alert(name: &str, instance: &str) -> Alert {
    Alert {
        labels: Labels::from_pairs([("alertname", name), ("instance", instance)]),
        annotations: Labels::from_pairs([("summary", "s")]),
        starts_at: SystemTime::now(),
        ends_at: None,
        generator_url: "http://cairn/graph".into(),
    }
}

async fn eventually(what: &str, mut f: impl FnMut() -> bool) {
    for _ in 0..200 {
        if f() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("timed out waiting for {what}");
}

#[tokio::test]
async fn alerts_get_external_labels_and_relabelling_then_reach_each_alertmanager() {
    let (a, got_a) = start_receiver("/api/v2/alerts").await;
    let (b, got_b) = start_receiver("/prefix/api/v2/alerts").await;
    let n = Notifier::new(NotifierOptions::default());
    let cfg = config(&format!(
        "global:\n  external_labels:\n    region: eu\n    instance: ext\n\
         alerting:\n  alert_relabel_configs:\n    - source_labels: [alertname]\n      regex: Drop.*\n      action: drop\n\
         \x20 alertmanagers:\n    - static_configs:\n        - targets: ['{a}']\n\
         \x20   - path_prefix: /prefix\n      static_configs:\n        - targets: ['{b}']\n\
         \x20     alert_relabel_configs:\n        - target_label: via\n          replacement: b\n"
    ));
    n.apply_config(&cfg, &client).unwrap();
    n.sync("config-0", vec![Labels::from_pairs([("__address__", a.as_str())])]);
    n.sync("config-1", vec![Labels::from_pairs([("__address__", b.as_str())])]);
    let (active, dropped) = n.alertmanagers();
    let mut expected = vec![
        format!("http://{a}/api/v2/alerts"),
        format!("http://{b}/prefix/api/v2/alerts"),
    ];
    expected.sort();
    assert_eq!(active, expected, "sorted");
    assert!(dropped.is_empty());

    n.send(vec![alert("HighLoad", "host:9100"), alert("DropMe", "host:9100")]);
    eventually("both Alertmanagers", || {
        got_a.alerts().len() == 1 && got_b.alerts().len() == 1
    })
    .await;
    let from_a = &got_a.alerts()[0];
    assert_eq!(
        from_a["labels"],
        serde_json::json!({"alertname": "HighLoad", "instance": "host:9100", "region": "eu"}),
        "external labels fill only what the alert lacks"
    );
    assert_eq!(from_a["annotations"], serde_json::json!({"summary": "s"}));
    assert_eq!(
        got_b.alerts()[0]["labels"]["via"],
        "b",
        "the set's own alert relabelling"
    );
    assert!(got_a.alerts()[0]["labels"].get("via").is_none());

    let stats = n.stats();
    let to_a = &stats[&format!("http://{a}/api/v2/alerts")].0;
    assert_eq!((to_a.sent, to_a.errors, to_a.dropped), (1, 0, 0));
    let latency = to_a.latency.as_ref().expect("a latency summary after a send");
    assert_eq!(latency.count, 1);
    assert_eq!(
        latency.quantiles.iter().map(|q| q.0).collect::<Vec<_>>(),
        [0.5, 0.9, 0.99]
    );
    assert!(latency.quantiles.iter().all(|q| q.1 >= 0.0));
    n.stop().await;
}

#[tokio::test]
async fn large_sends_go_out_in_batches() {
    let (a, got) = start_receiver("/api/v2/alerts").await;
    let n = Notifier::new(NotifierOptions::default());
    n.apply_config(
        &config("alerting:\n  alertmanagers:\n    - static_configs: [{targets: []}]\n"),
        &client,
    )
    .unwrap();
    n.sync("config-0", vec![Labels::from_pairs([("__address__", a.as_str())])]);
    let alerts: Vec<Alert> = (0..600).map(|i| alert("A", &format!("h{i}"))).collect();
    n.send(alerts);
    eventually("600 alerts", || got.alerts().len() == 600).await;
    assert!(got.requests() >= 3, "at most 256 alerts per request");
    assert!(got.0.lock().iter().all(|r| r.len() <= 256));
    n.stop().await;
}

#[tokio::test]
async fn a_full_queue_drops_the_oldest_alerts() {
    // Nobody listens: the send loop fails and the queue fills.
    let n = Notifier::new(NotifierOptions {
        queue_capacity: 3,
        max_batch_size: 256,
        drain_on_shutdown: false,
    });
    n.apply_config(
        &config("alerting:\n  alertmanagers:\n    - timeout: 100ms\n      static_configs: [{targets: []}]\n"),
        &client,
    )
    .unwrap();
    n.sync("config-0", vec![Labels::from_pairs([("__address__", "127.0.0.1:1")])]);
    let url = "http://127.0.0.1:1/api/v2/alerts".to_string();
    let set = n.shared.state.lock().sets["config-0"]
        .queue_lengths()
        .collect::<Vec<_>>();
    assert_eq!(set, vec![(url.clone(), 0)]);
    // Straight into the loop's queue, before its task runs.
    let l = n.shared.state.lock().sets["config-0"].send_loop(&url).unwrap();
    l.add(&(0..5).map(|i| alert("A", &format!("h{i}"))).collect::<Vec<_>>());
    assert!(l.queue_len() <= 3);
    assert!(n.stats()[&url].0.dropped >= 2, "two alerts beyond the capacity");
    eventually("the failed send to be counted", || n.stats()[&url].0.errors >= 1).await;
    let s = n.stats()[&url].0.clone();
    assert_eq!(s.sent, 0);
    assert_eq!(s.dropped, 2 + s.errors, "a failed send drops what it carried");
    assert!(s.latency.is_none(), "only successful sends are timed");
    n.stop().await;
}

#[tokio::test]
async fn relabelling_drops_alertmanagers_and_reload_keeps_unchanged_sets() {
    let (a, _got) = start_receiver("/api/v2/alerts").await;
    let n = Notifier::new(NotifierOptions::default());
    let yaml = "alerting:\n  alertmanagers:\n    - static_configs: [{targets: []}]\n      relabel_configs:\n        - source_labels: [__address__]\n          regex: '.*:1'\n          action: drop\n";
    n.apply_config(&config(yaml), &client).unwrap();
    n.sync(
        "config-0",
        vec![
            Labels::from_pairs([("__address__", a.as_str())]),
            Labels::from_pairs([("__address__", "10.0.0.1:1")]),
        ],
    );
    let (active, dropped) = n.alertmanagers();
    assert_eq!(active, vec![format!("http://{a}/api/v2/alerts")]);
    assert_eq!(dropped, vec!["http://10.0.0.1:1/api/v2/alerts".to_string()]);

    // The same configuration again: the set keeps its Alertmanagers.
    n.apply_config(&config(yaml), &client).unwrap();
    assert_eq!(n.alertmanagers().0.len(), 1);
    // Another one: it starts over, waiting for discovery.
    n.apply_config(
        &config("alerting:\n  alertmanagers:\n    - static_configs: [{targets: []}]\n"),
        &client,
    )
    .unwrap();
    assert!(n.alertmanagers().0.is_empty());
    n.stop().await;
}
