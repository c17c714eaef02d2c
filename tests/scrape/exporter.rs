//! A synthetic exporter for the scrape differential test: a few targets,
//! each its own listener, whose exposition the test moves through phases
//! (series change value, appear and disappear; a target starts failing).
//! Every scrape of a target in one phase returns the same body, so
//! scrapers that scrape at different moments store the same values.

use std::net::TcpListener;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// What the test can change while the targets are being scraped.
pub struct Exporter {
    phase: Arc<AtomicUsize>,
    pub addrs: Vec<String>,
    _runtime: tokio::runtime::Runtime,
}

impl Exporter {
    /// Starts `targets` targets on loopback ports.
    pub fn start(targets: usize) -> Self {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("runtime");
        let phase = Arc::new(AtomicUsize::new(0));
        // The timestamped series' first timestamp.
        let base_ms = now_ms() / 1000 * 1000;
        let listeners: Vec<TcpListener> = (0..targets)
            .map(|_| {
                let l = TcpListener::bind("127.0.0.1:0").expect("bind");
                l.set_nonblocking(true).expect("nonblocking");
                l
            })
            .collect();
        let addrs: Vec<String> = listeners
            .iter()
            .map(|l| l.local_addr().expect("addr").to_string())
            .collect();
        // HTTP service discovery (on every target): the last target, with a label.
        let sd = serde_json::json!([{"targets": [addrs[targets - 1]], "labels": {"sd": "http"}}]).to_string();
        for (target, l) in listeners.into_iter().enumerate() {
            let phase = phase.clone();
            let sd = sd.clone();
            runtime.spawn(async move {
                let l = tokio::net::TcpListener::from_std(l).expect("listener");
                let app = axum::Router::new()
                    .route(
                        "/metrics",
                        axum::routing::get(move |q: axum::extract::Query<Vec<(String, String)>>| {
                            let p = phase.load(Ordering::SeqCst);
                            async move { body(target, p, base_ms, &q.0) }
                        }),
                    )
                    .route(
                        "/sd",
                        axum::routing::get(move || async move {
                            ([(axum::http::header::CONTENT_TYPE, "application/json")], sd)
                        }),
                    );
                let _ = axum::serve(l, app).await;
            });
        }
        Self {
            phase,
            addrs,
            _runtime: runtime,
        }
    }

    pub fn set_phase(&self, p: usize) {
        self.phase.store(p, Ordering::SeqCst);
    }
}

pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// Target 0 fails from phase 3 on.
pub const FAILING_TARGET: usize = 0;
pub const FAILS_FROM_PHASE: usize = 3;

fn body(target: usize, phase: usize, base_ms: i64, params: &[(String, String)]) -> axum::response::Response {
    use axum::response::IntoResponse;
    if target == FAILING_TARGET && phase >= FAILS_FROM_PHASE {
        return (axum::http::StatusCode::SERVICE_UNAVAILABLE, "down for the test\n").into_response();
    }
    let p = phase as f64;
    let t = target as f64;
    let mut b = String::new();
    b.push_str("# HELP test_requests_total Requests served.\n# TYPE test_requests_total counter\n");
    b.push_str(&format!(
        "test_requests_total{{code=\"200\",path=\"/a\"}} {}\n",
        100.0 * t + 10.0 * (p + 1.0)
    ));
    b.push_str(&format!(
        "test_requests_total{{code=\"500\",path=\"/a\"}} {}\n",
        1.0 + p
    ));
    b.push_str("# HELP test_temperature_celsius A gauge.\n# TYPE test_temperature_celsius gauge\n");
    b.push_str(&format!("test_temperature_celsius{{room=\"kitchen\"}} {}\n", 21.5 - p));
    if phase == 0 {
        // Gone from phase 1 on: a staleness marker follows.
        b.push_str("test_temperature_celsius{room=\"Hall\"} -3e-2\n");
    } else {
        b.push_str("test_temperature_celsius{room=\"cellar\"} 12\n");
    }
    b.push_str("# HELP test_latency_seconds A classic histogram.\n# TYPE test_latency_seconds histogram\n");
    for (le, n) in [("0.1", 3.0), ("1", 5.0), ("+Inf", 6.0)] {
        b.push_str(&format!("test_latency_seconds_bucket{{le=\"{le}\"}} {}\n", n + p));
    }
    b.push_str(&format!(
        "test_latency_seconds_sum {}\ntest_latency_seconds_count {}\n",
        2.5 + p,
        6.0 + p
    ));
    b.push_str("# HELP test_rpc_seconds A summary.\n# TYPE test_rpc_seconds summary\n");
    b.push_str(&format!(
        "test_rpc_seconds{{quantile=\"0.5\"}} 0.2\ntest_rpc_seconds{{quantile=\"0.99\"}} {}\n",
        0.9 + p / 10.0
    ));
    b.push_str("test_rpc_seconds_sum 3\ntest_rpc_seconds_count 7\n");
    // Labels a scrape job also sets: honor_labels decides who wins.
    b.push_str("# TYPE test_conflict gauge\n");
    b.push_str("test_conflict{job=\"exporter-job\",instance=\"exporter-instance\",env=\"prod\"} 1\n");
    b.push_str("test_conflict{job=\"\",env=\"empty-job\"} 2\n");
    // Explicit timestamps: one new one per phase.
    b.push_str("# TYPE test_timestamped gauge\n");
    b.push_str(&format!(
        "test_timestamped {} {}\n",
        5.0 + p,
        base_ms + phase as i64 * 1000
    ));
    b.push_str("# TYPE test_special untyped\n");
    b.push_str("test_special{text=\"quote\\\" backslash\\\\ newline\\n\"} NaN\n");
    b.push_str("test_special{text=\"inf\"} +Inf\n");
    b.push_str("test_special{text=\"neg\"} -Inf\n");
    b.push_str("test_special{text=\"tiny\"} 1.5e-300\n");
    b.push_str(&format!(
        "test_mixed_Case_name{{UPPER=\"Value\",lower=\"x{target}\"}} {t}\n"
    ));
    for (k, v) in params {
        b.push_str(&format!("test_param{{name=\"{k}\",value=\"{v}\"}} 1\n"));
    }
    if phase >= 2 {
        b.push_str("# TYPE test_new_series gauge\ntest_new_series 7\n");
    }
    (
        [(
            axum::http::header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        b,
    )
        .into_response()
}
