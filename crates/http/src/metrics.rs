//! Self-monitoring: HTTP and remote-write counters kept here, storage stats and
//! process figures, all rendered at `/metrics`.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use axum::Extension;
use axum::extract::{MatchedPath, Request, State};
use axum::http::header;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use cairn_storage::{ObjectStoreStats, RefusalReason, StorageStats, TenantId};
use parking_lot::Mutex;
use serde::Serialize;

use crate::auth::Caller;
use crate::exposition::{CONTENT_TYPE, Exposition};
use crate::ingest::Protocol;
use crate::{AppState, process};

/// Upper bounds (seconds) of the request duration histogram.
const DURATION_BUCKETS: [f64; 13] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
];

#[derive(Debug, Default, Clone)]
struct Histogram {
    /// Non-cumulative counts per bucket; the last slot is `+Inf`.
    buckets: [u64; DURATION_BUCKETS.len() + 1],
    sum: f64,
    count: u64,
}

impl Histogram {
    fn observe(&mut self, v: f64) {
        let i = DURATION_BUCKETS
            .iter()
            .position(|&b| v <= b)
            .unwrap_or(DURATION_BUCKETS.len());
        self.buckets[i] += 1;
        self.sum += v;
        self.count += 1;
    }
}

/// Counters the HTTP layer keeps itself.
#[derive(Debug, Default)]
pub struct HttpMetrics {
    requests: Mutex<BTreeMap<(String, u16), u64>>,
    durations: Mutex<BTreeMap<String, Histogram>>,
    ingest: Mutex<BTreeMap<Protocol, IngestCounters>>,
    /// CPU time of decoding and storing writes, every protocol together.
    ingest_cpu_nanos: AtomicU64,
}

/// What each protocol ingested and refused.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct IngestionStatus {
    pub protocols: Vec<ProtocolIngestion>,
    /// CPU time of decoding and storing writes, every protocol together.
    pub cpu_seconds: f64,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ProtocolIngestion {
    pub protocol: &'static str,
    pub samples: u64,
    pub series: u64,
    pub samples_rejected: BTreeMap<&'static str, u64>,
    pub requests_rejected: BTreeMap<&'static str, u64>,
}

/// Per-protocol ingestion counters.
#[derive(Debug, Default)]
struct IngestCounters {
    samples: u64,
    series: u64,
    samples_rejected: BTreeMap<&'static str, u64>,
    requests_rejected: BTreeMap<&'static str, u64>,
}

impl HttpMetrics {
    pub fn new() -> Self {
        Self::default()
    }

    /// Records one finished request.
    pub fn observe_request(&self, handler: &str, code: u16, seconds: f64) {
        *self.requests.lock().entry((handler.to_string(), code)).or_default() += 1;
        self.durations
            .lock()
            .entry(handler.to_string())
            .or_default()
            .observe(seconds);
    }

    /// Runs `f`, the decoding and storing of one write, counting the CPU
    /// time it takes on this thread as ingestion's: with the process total
    /// and storage's maintenance time, this splits CPU into ingest and queries.
    pub fn measure_ingest<T>(&self, f: impl FnOnce() -> T) -> T {
        let cpu = cpu_time::ThreadTime::now();
        let out = f();
        self.ingest_cpu_nanos
            .fetch_add(cpu.elapsed().as_nanos() as u64, Ordering::Relaxed);
        out
    }

    /// Records samples and series entries a request of `protocol` stored.
    pub fn ingest_accepted(&self, protocol: Protocol, samples: u64, series: u64) {
        let mut ingest = self.ingest.lock();
        let c = ingest.entry(protocol).or_default();
        c.samples += samples;
        c.series += series;
    }

    /// Records samples of `protocol` that were dropped, by reason: storage's
    /// (e.g. out of retention) or the protocol's (e.g. a string field).
    pub fn ingest_samples_rejected(&self, protocol: Protocol, reason: &'static str, samples: u64) {
        *self
            .ingest
            .lock()
            .entry(protocol)
            .or_default()
            .samples_rejected
            .entry(reason)
            .or_default() += samples;
    }

    /// Records a request (or connection line batch) of `protocol` answered with an error.
    pub fn ingest_request_rejected(&self, protocol: Protocol, reason: &'static str) {
        *self
            .ingest
            .lock()
            .entry(protocol)
            .or_default()
            .requests_rejected
            .entry(reason)
            .or_default() += 1;
    }

    /// Samples accepted through `protocol` so far.
    pub fn ingest_samples(&self, protocol: Protocol) -> u64 {
        self.ingest.lock().get(&protocol).map_or(0, |c| c.samples)
    }

    /// Every protocol's ingestion so far, as `/api/v1/status/ingestion` shows it.
    pub fn ingestion(&self) -> IngestionStatus {
        let protocols = self
            .ingest
            .lock()
            .iter()
            .map(|(protocol, c)| ProtocolIngestion {
                protocol: protocol.as_str(),
                samples: c.samples,
                series: c.series,
                samples_rejected: c.samples_rejected.clone(),
                requests_rejected: c.requests_rejected.clone(),
            })
            .collect();
        IngestionStatus {
            protocols,
            cpu_seconds: self.ingest_cpu_nanos.load(Ordering::Relaxed) as f64 / 1e9,
        }
    }

    fn render(&self, e: &mut Exposition) {
        e.family(
            "cairn_http_requests_total",
            "HTTP requests by handler and status code.",
            "counter",
        );
        for ((handler, code), n) in self.requests.lock().iter() {
            let code = code.to_string();
            e.sample(
                "cairn_http_requests_total",
                &[("handler", handler), ("code", &code)],
                *n as f64,
            );
        }
        e.family(
            "cairn_http_request_duration_seconds",
            "HTTP request latency by handler.",
            "histogram",
        );
        for (handler, h) in self.durations.lock().iter() {
            let mut cumulative = 0;
            for (i, n) in h.buckets.iter().enumerate() {
                cumulative += n;
                let le = DURATION_BUCKETS
                    .get(i)
                    .map_or_else(|| "+Inf".to_string(), ToString::to_string);
                e.sample(
                    "cairn_http_request_duration_seconds_bucket",
                    &[("handler", handler), ("le", &le)],
                    cumulative as f64,
                );
            }
            e.sample(
                "cairn_http_request_duration_seconds_sum",
                &[("handler", handler)],
                h.sum,
            );
            e.sample(
                "cairn_http_request_duration_seconds_count",
                &[("handler", handler)],
                h.count as f64,
            );
        }
        let ingest = self.ingest.lock();
        let families: [(&str, &str); 2] = [
            ("cairn_ingest_samples_total", "Samples stored, by protocol."),
            ("cairn_ingest_series_total", "Series entries received, by protocol."),
        ];
        for (i, (name, help)) in families.into_iter().enumerate() {
            e.family(name, help, "counter");
            for (protocol, c) in ingest.iter() {
                let v = if i == 0 { c.samples } else { c.series };
                e.sample(name, &[("protocol", protocol.as_str())], v as f64);
            }
        }
        e.single(
            "cairn_ingest_cpu_seconds_total",
            "CPU time spent decoding and storing writes.",
            "counter",
            self.ingest_cpu_nanos.load(Ordering::Relaxed) as f64 / 1e9,
        );
        let name = "cairn_ingest_samples_rejected_total";
        e.family(name, "Samples dropped, by protocol and reason.", "counter");
        for (protocol, c) in ingest.iter() {
            for (reason, n) in &c.samples_rejected {
                e.sample(name, &[("protocol", protocol.as_str()), ("reason", reason)], *n as f64);
            }
        }
        let name = "cairn_ingest_requests_rejected_total";
        e.family(
            name,
            "Write requests answered with an error, by protocol and reason.",
            "counter",
        );
        for (protocol, c) in ingest.iter() {
            for (reason, n) in &c.requests_rejected {
                e.sample(name, &[("protocol", protocol.as_str()), ("reason", reason)], *n as f64);
            }
        }
    }
}

fn render_storage(e: &mut Exposition, s: &StorageStats) {
    e.single(
        "cairn_storage_samples_ingested_total",
        "Samples stored.",
        "counter",
        s.samples_ingested_total as f64,
    );
    e.family(
        "cairn_storage_samples_rejected_total",
        "Samples storage dropped, by reason.",
        "counter",
    );
    for (reason, n) in &s.samples_rejected_total {
        e.sample(
            "cairn_storage_samples_rejected_total",
            &[("reason", reason.as_str())],
            *n as f64,
        );
    }
    let counters: [(&str, &str, u64); 4] = [
        (
            "cairn_storage_series_created_total",
            "Series created.",
            s.series_created_total,
        ),
        ("cairn_storage_merges_total", "Part merges completed.", s.merges_total),
        (
            "cairn_storage_merged_bytes_total",
            "Bytes written by merges.",
            s.merged_bytes_total,
        ),
        (
            "cairn_storage_flushes_total",
            "Flushes of in-memory data to parts.",
            s.flushes_total,
        ),
    ];
    for (name, help, v) in counters {
        e.single(name, help, "counter", v as f64);
    }
    e.single(
        "cairn_storage_maintenance_cpu_seconds_total",
        "CPU time of background seals, flushes, merges and retention.",
        "counter",
        s.maintenance_cpu_seconds_total,
    );
    let gauges: [(&str, &str, u64); 6] = [
        (
            "cairn_storage_active_series",
            "Series with recent samples.",
            s.active_series,
        ),
        ("cairn_storage_head_samples", "Samples held in memory.", s.head_samples),
        ("cairn_storage_bytes", "Bytes of data on disk.", s.storage_bytes),
        ("cairn_storage_wal_bytes", "Bytes of write-ahead log.", s.wal_bytes),
        ("cairn_storage_parts", "Data parts on disk.", s.parts),
        ("cairn_storage_partitions", "Time partitions on disk.", s.partitions),
    ];
    for (name, help, v) in gauges {
        e.single(name, help, "gauge", v as f64);
    }
    render_write_health(e, s);
    if !s.quarantined_files_total.is_empty() {
        let name = "cairn_storage_quarantined_files_total";
        e.family(name, "Damaged files moved into the quarantine, by kind.", "counter");
        for (kind, n) in &s.quarantined_files_total {
            e.sample(name, &[("kind", kind)], *n as f64);
        }
    }
    if let Some(o) = &s.object_store {
        render_object_store(e, o);
    }
}

/// Whether writes are taken, and the disk failures behind a refusal.
fn render_write_health(e: &mut Exposition, s: &StorageStats) {
    let name = "cairn_storage_writes_refused";
    e.family(
        name,
        "1 while writes are refused for this reason (each clears by itself), else 0.",
        "gauge",
    );
    let refused = s.write_refusal.as_ref().map(|r| r.reason);
    for reason in RefusalReason::ALL {
        let v = if refused == Some(reason) { 1.0 } else { 0.0 };
        e.sample(name, &[("reason", reason.as_str())], v);
    }
    let name = "cairn_storage_write_errors_total";
    e.family(
        name,
        "Failed disk writes of storage, by what was being written (each is retried).",
        "counter",
    );
    for (op, n) in &s.write_errors_total {
        e.sample(name, &[("operation", op.as_str())], *n as f64);
    }
    if let Some(free) = s.free_disk_bytes {
        e.single(
            "cairn_storage_free_disk_bytes",
            "Bytes free to Cairn on the data directory's filesystem.",
            "gauge",
            free as f64,
        );
    }
}

/// Each tenant's own figures, labelled with its id.
fn render_tenants(e: &mut Exposition, per_tenant: &[(TenantId, StorageStats)]) {
    type Family = (&'static str, &'static str, &'static str, fn(&StorageStats) -> u64);
    let families: [Family; 3] = [
        (
            "cairn_tenant_active_series",
            "Series with samples today, by tenant.",
            "gauge",
            |s| s.active_series,
        ),
        (
            "cairn_tenant_samples_ingested_total",
            "Samples stored, by tenant.",
            "counter",
            |s| s.samples_ingested_total,
        ),
        (
            "cairn_tenant_storage_bytes",
            "Bytes of the tenant's data on local disk.",
            "gauge",
            |s| s.storage_bytes,
        ),
    ];
    for (name, help, kind, value) in families {
        e.family(name, help, kind);
        for (id, s) in per_tenant {
            e.sample(name, &[("tenant", id.as_str())], value(s) as f64);
        }
    }
}

fn render_object_store(e: &mut Exposition, o: &ObjectStoreStats) {
    type ByOperation<'a> = &'a [(&'static str, u64)];
    let by_op: [(&str, &str, ByOperation); 2] = [
        (
            "cairn_object_store_requests_total",
            "Requests to the bucket, by operation.",
            &o.requests_total,
        ),
        (
            "cairn_object_store_request_failures_total",
            "Requests to the bucket that failed after their retries, by operation.",
            &o.request_failures_total,
        ),
    ];
    for (name, help, values) in by_op {
        e.family(name, help, "counter");
        for (op, n) in values {
            e.sample(name, &[("operation", op)], *n as f64);
        }
    }
    let counters: [(&str, &str, u64); 7] = [
        (
            "cairn_object_store_read_bytes_total",
            "Bytes read from the bucket.",
            o.read_bytes_total,
        ),
        (
            "cairn_object_store_written_bytes_total",
            "Bytes written to the bucket.",
            o.written_bytes_total,
        ),
        (
            "cairn_object_store_cache_hits_total",
            "Chunks of bucket objects read from the disk cache.",
            o.cache_hits_total,
        ),
        (
            "cairn_object_store_cache_misses_total",
            "Chunks of bucket objects the disk cache lacked.",
            o.cache_misses_total,
        ),
        (
            "cairn_object_store_uploaded_parts_total",
            "Parts uploaded to the bucket.",
            o.uploaded_parts_total,
        ),
        (
            "cairn_object_store_uploaded_bytes_total",
            "Bytes of parts uploaded to the bucket.",
            o.uploaded_bytes_total,
        ),
        (
            "cairn_object_store_upload_failures_total",
            "Upload rounds that failed (retried with backoff).",
            o.upload_failures_total,
        ),
    ];
    for (name, help, v) in counters {
        e.single(name, help, "counter", v as f64);
    }
    let gauges: [(&str, &str, u64); 4] = [
        (
            "cairn_object_store_cache_bytes",
            "Bytes held in the disk cache of bucket reads.",
            o.cache_bytes,
        ),
        (
            "cairn_object_store_cache_max_bytes",
            "The disk cache's bound (--storage.cache.max-bytes).",
            o.cache_max_bytes,
        ),
        (
            "cairn_object_store_upload_backlog_parts",
            "Parts on disk waiting for upload to the bucket.",
            o.upload_backlog_parts,
        ),
        (
            "cairn_object_store_upload_backlog_bytes",
            "Bytes of the parts on disk waiting for upload.",
            o.upload_backlog_bytes,
        ),
    ];
    for (name, help, v) in gauges {
        e.single(name, help, "gauge", v as f64);
    }
}

/// `GET /metrics`: HTTP, storage and process metrics in the text format.
pub async fn metrics_handler(
    State(state): State<AppState>,
    caller: Option<Extension<Caller>>,
    peers: Option<Extension<std::sync::Arc<dyn crate::peers::Peers>>>,
) -> Response {
    let per_tenant = match tenant_stats(&state).await {
        Ok(s) => s,
        Err(e) => return e.into_response(),
    };
    let mut stats = StorageStats::default();
    for (_, s) in &per_tenant {
        stats.add(s);
    }
    let mut e = Exposition::new();
    state.metrics().render(&mut e);
    state.query_gate().render(&mut e);
    state.results_cache().render(&mut e);
    render_storage(&mut e, &stats);
    // Each tenant's own series only for those the caller may read.
    let shown = |t: &TenantId| may_see(caller.as_ref(), t);
    let visible: Vec<(TenantId, StorageStats)> = per_tenant.into_iter().filter(|(t, _)| shown(t)).collect();
    render_tenants(&mut e, &visible);
    e.family(
        "cairn_tenant_limit_refusals_total",
        "Requests refused for being over a tenant's limit, by tenant and limit.",
        "counter",
    );
    for ((tenant, limit), n) in state.limits().refused().into_iter().filter(|((t, _), _)| shown(t)) {
        e.sample(
            "cairn_tenant_limit_refusals_total",
            &[("tenant", tenant.as_str()), ("limit", limit)],
            n as f64,
        );
    }
    if let Some(m) = state.monitoring() {
        m.render_metrics(&mut e);
    }
    if let Some(Extension(peers)) = peers {
        peers.render_metrics(&mut e);
    }
    process::render(&mut e);
    ([(header::CONTENT_TYPE, CONTENT_TYPE)], e.finish()).into_response()
}

/// Every open tenant's storage figures.
pub async fn tenant_stats(state: &AppState) -> Result<Vec<(TenantId, StorageStats)>, crate::ApiError> {
    let tenants = state.tenants().clone();
    crate::run_blocking(move || {
        let ids = tenants.list();
        Ok(ids
            .into_iter()
            .filter_map(|id| Some((id.clone(), tenants.get(&id).ok()??.stats())))
            .collect())
    })
    .await
}

/// Whether a caller may see a tenant's own figures: those it may read.
pub fn may_see(caller: Option<&Extension<Caller>>, tenant: &TenantId) -> bool {
    caller.is_none_or(|Extension(c)| c.may_read(tenant))
}

/// Middleware counting requests and their latency per route.
pub async fn track(State(state): State<AppState>, req: Request, next: Next) -> Response {
    let handler = req
        .extensions()
        .get::<MatchedPath>()
        .map(|p| {
            let p = p.as_str();
            p.strip_prefix("/prometheus").unwrap_or(p).to_string()
        })
        .unwrap_or_else(|| "unmatched".to_string());
    let start = Instant::now();
    let resp = next.run(req).await;
    state
        .metrics()
        .observe_request(&handler, resp.status().as_u16(), start.elapsed().as_secs_f64());
    resp
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use crate::test_util::*;

    /// Checks the text format: every sample line is `name{labels} value`, and
    /// every sample belongs to a family with both HELP and TYPE.
    fn check_exposition(text: &str) -> BTreeSet<String> {
        let sample = regex::Regex::new(
            r#"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{([a-zA-Z_][a-zA-Z0-9_]*="(\\.|[^"\\])*"(,[a-zA-Z_][a-zA-Z0-9_]*="(\\.|[^"\\])*")*)?\})? (NaN|[+-]Inf|-?[0-9.e+-]+)$"#,
        )
        .unwrap();
        let mut help = BTreeSet::new();
        let mut types = BTreeSet::new();
        let mut samples = BTreeSet::new();
        for line in text.lines() {
            if let Some(rest) = line.strip_prefix("# HELP ") {
                help.insert(rest.split(' ').next().unwrap().to_string());
            } else if let Some(rest) = line.strip_prefix("# TYPE ") {
                let mut parts = rest.split(' ');
                let name = parts.next().unwrap().to_string();
                let kind = parts.next().unwrap();
                assert!(
                    ["counter", "gauge", "histogram", "summary", "untyped"].contains(&kind),
                    "{line}"
                );
                assert!(types.insert(name), "duplicate TYPE: {line}");
            } else {
                let caps = sample
                    .captures(line)
                    .unwrap_or_else(|| panic!("bad sample line: {line:?}"));
                samples.insert(caps[1].to_string());
            }
        }
        assert_eq!(help, types, "every family needs HELP and TYPE");
        for name in &samples {
            let family = ["_bucket", "_sum", "_count"]
                .iter()
                .find_map(|s| name.strip_suffix(s).filter(|f| types.contains(*f)))
                .unwrap_or(name);
            assert!(types.contains(family), "{name} has no TYPE");
        }
        samples
    }

    #[tokio::test]
    async fn metrics_are_valid_exposition() {
        let app = TestApp::new();
        app.write(&[("up", "a", &[(1000, 1.0)])]);
        app.get("/api/v1/labels").await.check_status(200);
        app.get("/api/v1/series").await.check_status(400);
        let resp = app.get("/metrics").await;
        resp.check_status(200);
        assert_eq!(resp.content_type(), "text/plain; version=0.0.4; charset=utf-8");
        let names = check_exposition(&resp.body);
        for name in [
            "cairn_http_requests_total",
            "cairn_http_request_duration_seconds_bucket",
            "cairn_storage_active_series",
            "cairn_storage_samples_ingested_total",
            "process_resident_memory_bytes",
            "process_cpu_seconds_total",
            "process_open_fds",
            "process_start_time_seconds",
        ] {
            assert!(names.contains(name), "{name} missing in\n{}", resp.body);
        }
        assert!(
            resp.body
                .contains(r#"cairn_http_requests_total{handler="/api/v1/labels",code="200"} 1"#)
        );
        assert!(
            resp.body
                .contains(r#"cairn_http_requests_total{handler="/api/v1/series",code="400"} 1"#)
        );
        assert!(
            resp.body
                .contains(r#"cairn_http_request_duration_seconds_bucket{handler="/api/v1/labels",le="+Inf"} 1"#)
        );
        assert!(resp.body.contains("cairn_storage_active_series 1\n"));
        // Prefixed paths count under the same handler.
        app.get("/prometheus/api/v1/labels").await.check_status(200);
        let body = app.get("/metrics").await.body;
        assert!(body.contains(r#"cairn_http_requests_total{handler="/api/v1/labels",code="200"} 2"#));
    }
}
