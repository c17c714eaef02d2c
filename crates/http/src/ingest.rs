//! The one path from a decoded [`WriteBatch`] to storage, shared by every
//! ingestion protocol (HTTP endpoints and TCP listeners alike), so that
//! commit semantics, metadata and self-metrics are the same whichever
//! protocol a sample arrived by.

use axum::http::HeaderMap;
use cairn_protocols::WriteBatch;
use cairn_storage::{CommitReport, ErrorKind, RejectReason, StorageError, TenantId};

use crate::{ApiError, AppState, storage_error};

/// The protocols Cairn ingests; the `protocol` label of the ingest metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Protocol {
    RemoteWrite,
    RemoteWrite2,
    Influx,
    OpenTsdb,
    Graphite,
    PrometheusText,
    JsonLines,
    Csv,
    Otlp,
    VmNative,
}

impl Protocol {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::RemoteWrite => "remote_write",
            Self::RemoteWrite2 => "remote_write_2",
            Self::Influx => "influx",
            Self::OpenTsdb => "opentsdb",
            Self::Graphite => "graphite",
            Self::PrometheusText => "prometheus_text",
            Self::JsonLines => "json_lines",
            Self::Csv => "csv",
            Self::Otlp => "otlp",
            Self::VmNative => "vm_native",
        }
    }
}

/// A refused request: the metrics reason and the answer.
pub type Refusal = (&'static str, ApiError);

/// Appends `batch` as one commit (all of it becomes visible and durable
/// together, or none of it), records its metadata and counts it under
/// `protocol`. Blocking: call it from [`crate::run_blocking`] or a blocking
/// thread. On error nothing of the batch is stored.
pub fn store_batch(
    state: &AppState,
    tenant: &TenantId,
    protocol: Protocol,
    batch: &WriteBatch,
) -> Result<CommitReport, Refusal> {
    if !batch.is_empty() {
        state
            .limits()
            .admit_write(tenant, (batch.sample_count() + batch.histogram_count()) as u64)
            .map_err(|e| ("ingestion_rate", e))?;
    }
    // The tenant exists (or may be created) before anything is kept for it.
    let storage = state.tenants().get_or_create(tenant).map_err(storage_refusal)?;
    state.metadata_for_writes(tenant).record(&batch.metadata);
    if batch.is_empty() {
        return Ok(CommitReport::default());
    }
    let mut app = storage.appender();
    for s in batch.series() {
        // An error drops `app`, which rolls the batch back.
        app.append_series(s.encoded_labels(), s.samples(), s.histograms())
            .map_err(storage_refusal)?;
    }
    let report = app.commit().map_err(storage_refusal)?;
    let metrics = state.metrics();
    metrics.ingest_accepted(protocol, report.samples_accepted, batch.series_count() as u64);
    for (reason, n) in &report.samples_rejected {
        metrics.ingest_samples_rejected(protocol, reason.as_str(), *n);
    }
    if let Some(&refused) = report.samples_rejected.get(&RejectReason::SeriesLimit) {
        let max = state.limits().current().of(tenant).max_active_series;
        let message = format!(
            "tenant {tenant} is at its limit of {max} active series (max_active_series): \
             {refused} samples of new series refused, the rest stored"
        );
        return Err((
            "series_limit",
            state.limits().refuse(tenant, "max_active_series", message),
        ));
    }
    Ok(report)
}

/// The one tenant a write is for: `X-Scope-OrgID` (no header: the default tenant).
pub fn write_tenant(headers: &HeaderMap) -> Result<TenantId, Refusal> {
    let scope = crate::tenant::scope_of(headers).map_err(|e| ("bad_tenant", e))?;
    scope.only().cloned().map_err(|e| ("bad_tenant", storage_error(&e)))
}

/// Counts a refused request under `protocol` and logs refusals that are not
/// the sender's fault.
pub fn record_refusal(state: &AppState, protocol: Protocol, refusal: &Refusal) {
    let (reason, err) = refusal;
    state.metrics().ingest_request_rejected(protocol, reason);
    if err.kind != crate::ErrorType::BadData {
        tracing::warn!(protocol = protocol.as_str(), reason, error = %err, "write refused");
    }
}

fn storage_refusal(e: StorageError) -> Refusal {
    let reason = match e.kind() {
        ErrorKind::BadData => "storage_bad_data",
        ErrorKind::Execution => "storage_limit",
        ErrorKind::Unavailable => "storage_unavailable",
        ErrorKind::Internal => "storage_internal",
    };
    (reason, storage_error(&e))
}
