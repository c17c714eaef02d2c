//! `/api/v1/status/storage` and `/api/v1/status/ingestion`: what `/metrics`
//! counts of storage and ingestion, as JSON for the web UI's status pages.
//! Cairn's own endpoints; Prometheus has no equivalent.

use std::collections::BTreeMap;

use axum::Extension;
use axum::extract::State;
use cairn_storage::{ObjectStoreStats, StorageStats};
use serde::Serialize;

use crate::auth::Caller;
use crate::metrics::{IngestionStatus, may_see, tenant_stats};
use crate::{ApiError, AppState, Success};

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct StorageFigures {
    active_series: u64,
    head_samples: u64,
    storage_bytes: u64,
    wal_bytes: u64,
    parts: u64,
    partitions: u64,
    samples_ingested: u64,
    samples_rejected: BTreeMap<&'static str, u64>,
    series_created: u64,
    merges: u64,
    merged_bytes: u64,
    flushes: u64,
    maintenance_cpu_seconds: f64,
    object_store: Option<ObjectStoreFigures>,
    /// Why writes are refused now (`null` while they are taken).
    write_refusal: Option<RefusalFigures>,
    free_disk_bytes: Option<u64>,
    write_errors: BTreeMap<&'static str, u64>,
}

#[derive(Serialize)]
struct RefusalFigures {
    reason: &'static str,
    message: String,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ObjectStoreFigures {
    requests: BTreeMap<&'static str, u64>,
    request_failures: BTreeMap<&'static str, u64>,
    read_bytes: u64,
    written_bytes: u64,
    cache_hits: u64,
    cache_misses: u64,
    cache_bytes: u64,
    cache_max_bytes: u64,
    upload_backlog_parts: u64,
    upload_backlog_bytes: u64,
    uploaded_parts: u64,
    uploaded_bytes: u64,
    upload_failures: u64,
}

impl From<&StorageStats> for StorageFigures {
    fn from(s: &StorageStats) -> Self {
        Self {
            active_series: s.active_series,
            head_samples: s.head_samples,
            storage_bytes: s.storage_bytes,
            wal_bytes: s.wal_bytes,
            parts: s.parts,
            partitions: s.partitions,
            samples_ingested: s.samples_ingested_total,
            samples_rejected: s
                .samples_rejected_total
                .iter()
                .map(|(reason, n)| (reason.as_str(), *n))
                .collect(),
            series_created: s.series_created_total,
            merges: s.merges_total,
            merged_bytes: s.merged_bytes_total,
            flushes: s.flushes_total,
            maintenance_cpu_seconds: s.maintenance_cpu_seconds_total,
            object_store: s.object_store.as_ref().map(ObjectStoreFigures::from),
            write_refusal: s.write_refusal.as_ref().map(|r| RefusalFigures {
                reason: r.reason.as_str(),
                message: r.message.clone(),
            }),
            free_disk_bytes: s.free_disk_bytes,
            write_errors: s.write_errors_total.iter().map(|(op, n)| (op.as_str(), *n)).collect(),
        }
    }
}

impl From<&ObjectStoreStats> for ObjectStoreFigures {
    fn from(o: &ObjectStoreStats) -> Self {
        Self {
            requests: o.requests_total.iter().copied().collect(),
            request_failures: o.request_failures_total.iter().copied().collect(),
            read_bytes: o.read_bytes_total,
            written_bytes: o.written_bytes_total,
            cache_hits: o.cache_hits_total,
            cache_misses: o.cache_misses_total,
            cache_bytes: o.cache_bytes,
            cache_max_bytes: o.cache_max_bytes,
            upload_backlog_parts: o.upload_backlog_parts,
            upload_backlog_bytes: o.upload_backlog_bytes,
            uploaded_parts: o.uploaded_parts_total,
            uploaded_bytes: o.uploaded_bytes_total,
            upload_failures: o.upload_failures_total,
        }
    }
}

#[derive(Serialize)]
struct TenantFigures {
    tenant: String,
    #[serde(flatten)]
    figures: StorageFigures,
}

#[derive(Serialize)]
struct StorageStatus {
    totals: StorageFigures,
    tenants: Vec<TenantFigures>,
}

/// `GET /api/v1/status/storage`: the totals of every tenant, and each tenant
/// the caller may read on its own.
pub async fn storage(
    State(state): State<AppState>,
    caller: Option<Extension<Caller>>,
) -> Result<Success<impl Serialize>, ApiError> {
    let per_tenant = tenant_stats(&state).await?;
    let mut totals = StorageStats::default();
    for (_, s) in &per_tenant {
        totals.add(s);
    }
    let tenants = per_tenant
        .iter()
        .filter(|(t, _)| may_see(caller.as_ref(), t))
        .map(|(t, s)| TenantFigures {
            tenant: t.as_str().to_string(),
            figures: s.into(),
        })
        .collect();
    Ok(Success::new(StorageStatus {
        totals: (&totals).into(),
        tenants,
    }))
}

/// `GET /api/v1/status/ingestion`: per protocol, what was stored and refused.
pub async fn ingestion(State(state): State<AppState>) -> Success<IngestionStatus> {
    Success::new(state.metrics().ingestion())
}

#[cfg(test)]
mod tests {
    use crate::test_util::*;

    #[tokio::test]
    async fn storage_figures_follow_writes() {
        let app = TestApp::new();
        app.write(&[("up", "a", &[(1000, 1.0), (2000, 1.0)]), ("up", "b", &[(1000, 0.0)])]);
        let resp = app.get("/api/v1/status/storage").await;
        assert_eq!(resp.status, 200, "{}", resp.body);
        let body: serde_json::Value = serde_json::from_str(&resp.body).unwrap();
        let totals = &body["data"]["totals"];
        // The reference storage counts what it holds (the engine counts more).
        assert_eq!(totals["headSamples"], 3, "{body}");
        assert_eq!(totals["activeSeries"], 2, "{body}");
        let tenants = body["data"]["tenants"].as_array().unwrap();
        assert_eq!(tenants.len(), 1, "{body}");
        assert_eq!(tenants[0]["headSamples"], 3, "{body}");
    }

    #[tokio::test]
    async fn ingestion_counts_each_protocol_and_its_refusals() {
        let app = TestApp::new();
        app.post("/api/v1/import/prometheus", "m{a=\"1\"} 1 1000\nm{a=\"2\"} 2 1000\n")
            .await
            .check_status(204);
        app.post("/api/v1/write", "not snappy").await.check_status(400);
        let resp = app.get("/api/v1/status/ingestion").await;
        let body: serde_json::Value = serde_json::from_str(&resp.body).unwrap();
        let protocols = body["data"]["protocols"].as_array().unwrap();
        let of = |name: &str| protocols.iter().find(|p| p["protocol"] == name).cloned();
        let text = of("prometheus_text").expect("the text import is counted");
        assert_eq!(text["samples"], 2, "{body}");
        let rw = of("remote_write").expect("the refused remote write is counted");
        assert_eq!(rw["samples"], 0);
        let refused: u64 = rw["requestsRejected"]
            .as_object()
            .unwrap()
            .values()
            .filter_map(|n| n.as_u64())
            .sum();
        assert_eq!(refused, 1, "{body}");
    }
}
