//! A synthetic exporter served inside the test, and readers of MemStorage.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::IntoResponse;
use cairn_model::{MatchOp, Matcher, is_stale_nan};
use cairn_scrape::JobSettings;
use cairn_scrape::discovery::{LabelSet, SdConfig, TargetGroup};
use cairn_storage::{MemStorage, Queryable, SelectHints};
use parking_lot::Mutex;

/// What the exporter answers next.
#[derive(Clone)]
pub struct Exposition {
    pub body: String,
    pub content_type: String,
    pub status: u16,
    pub delay: Duration,
}

impl Exposition {
    pub fn text(body: &str) -> Self {
        Self {
            body: body.into(),
            content_type: "text/plain; version=0.0.4".into(),
            status: 200,
            delay: Duration::ZERO,
        }
    }
}

#[derive(Clone)]
pub struct Exporter {
    pub addr: SocketAddr,
    pub next: Arc<Mutex<Exposition>>,
    pub requests: Arc<Mutex<Vec<HeaderMap>>>,
}

impl Exporter {
    pub async fn start(exposition: Exposition) -> Self {
        let next = Arc::new(Mutex::new(exposition));
        let requests = Arc::new(Mutex::new(Vec::new()));
        let app = axum::Router::new()
            .route("/metrics", axum::routing::get(serve))
            .with_state((next.clone(), requests.clone()));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        Self { addr, next, requests }
    }

    pub fn address(&self) -> String {
        self.addr.to_string()
    }

    pub fn set(&self, e: Exposition) {
        *self.next.lock() = e;
    }

    pub fn set_body(&self, body: &str) {
        self.next.lock().body = body.into();
    }

    pub fn request_count(&self) -> usize {
        self.requests.lock().len()
    }
}

type Shared = (Arc<Mutex<Exposition>>, Arc<Mutex<Vec<HeaderMap>>>);

async fn serve(State((next, requests)): State<Shared>, headers: HeaderMap) -> impl IntoResponse {
    requests.lock().push(headers);
    let e = next.lock().clone();
    if !e.delay.is_zero() {
        tokio::time::sleep(e.delay).await;
    }
    let mut h = HeaderMap::new();
    if !e.content_type.is_empty() {
        h.insert(header::CONTENT_TYPE, e.content_type.parse().unwrap());
    }
    (StatusCode::from_u16(e.status).unwrap(), h, e.body)
}

/// A job scraping `targets` statically every `interval_ms`.
pub fn job(name: &str, targets: &[String], interval_ms: u64) -> JobSettings {
    let mut j = JobSettings::new(name);
    j.scrape_interval = Duration::from_millis(interval_ms);
    j.scrape_timeout = Duration::from_millis(interval_ms * 8 / 10);
    j.discovery = vec![SdConfig::Static(vec![TargetGroup::from_addresses(
        "",
        targets.iter().cloned(),
        LabelSet::new(),
    )])];
    j.fingerprint = format!("{name}/{targets:?}/{interval_ms}");
    j.cache_fingerprint = format!("{name}/{targets:?}");
    j
}

/// Float samples (stale markers as `None`) of every series whose name matches `name_re`.
pub fn dump(storage: &MemStorage, name_re: &str) -> BTreeMap<String, Vec<(i64, Option<f64>)>> {
    let q = storage.querier(i64::MIN / 2, i64::MAX / 2).unwrap();
    let m = Matcher::new(MatchOp::RegexMatch, "__name__", name_re).unwrap();
    let mut out = BTreeMap::new();
    for s in q.select(&SelectHints::default(), &[m]).unwrap() {
        let mut s = s.unwrap();
        let (mut ts, mut vs) = (Vec::new(), Vec::new());
        let r = s.samples.read_into(&mut ts, &mut vs).unwrap();
        let samples = ts[r.clone()]
            .iter()
            .zip(&vs[r])
            .map(|(&t, &v)| (t, if is_stale_nan(v) { None } else { Some(v) }))
            .collect();
        out.insert(s.labels.to_string(), samples);
    }
    out
}

/// Waits until `cond` holds (checked every 20 ms), failing after `secs` seconds.
pub async fn wait_until(secs: u64, what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(secs);
    while !cond() {
        assert!(tokio::time::Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
