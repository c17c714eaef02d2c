//! The routes peers call on an ingester: its own engine, never the ring
//! (a write sent here is stored here; a select reads only what is here).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use axum::Router;
use axum::body::Bytes;
use axum::extract::DefaultBodyLimit;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use cairn_storage::{ErrorKind, StorageError, TenantId, TenantScope, Tenants};

use crate::node::Cluster;
use crate::wire::{FramesWriter, SampleReader, SelectRequest, WriteAnswer, frames};

/// Carries the cluster's shared secret on every peer request.
pub const SECRET_HEADER: &str = "x-cairn-cluster-secret";

/// Every internal route lives under this prefix.
const PREFIX: &str = "/internal/cluster/v1/";

pub(crate) fn path(route: &str) -> String {
    format!("{PREFIX}{route}")
}

/// The internal routes of an ingester over its engine; bodies up to
/// `max_body_bytes`. Writes of at most `inline_write_max_body_bytes` are
/// stored on the async worker that read them (a commit that does not wait
/// for an fsync is shorter than two thread hand-offs); larger ones on the
/// blocking pool.
pub fn routes(cluster: Arc<Cluster>, max_body_bytes: usize, inline_write_max_body_bytes: usize) -> Router {
    let inline = InlineWrites(inline_write_max_body_bytes);
    Router::new()
        .route(
            &path("write"),
            post(move |state, headers, body| write(state, headers, body, inline)),
        )
        .route(&path("select"), post(select))
        .route(&path("label_names"), post(labels))
        .route(&path("label_values"), post(labels))
        .route(&path("delete"), post(delete))
        .route(&path("settle_writes"), post(settle_writes))
        .route(&path("settled_changes"), post(settled_changes))
        .route(&path("ring"), axum::routing::get(ring))
        .route(&path("tenants"), post(tenants))
        .layer(DefaultBodyLimit::max(max_body_bytes))
        .layer(axum::middleware::map_response_with_state(
            cluster.clone(),
            count_refusal,
        ))
        .with_state(cluster)
}

/// Peer requests refused, by why: counted, as none of them is applied.
#[derive(Debug, Default)]
pub(crate) struct RefusedPeerRequests {
    no_secret: AtomicU64,
    too_large: AtomicU64,
    malformed: AtomicU64,
}

impl RefusedPeerRequests {
    /// `(reason, count)` for each reason.
    pub(crate) fn counts(&self) -> [(&'static str, u64); 3] {
        [
            ("no_secret", self.no_secret.load(Ordering::Relaxed)),
            ("too_large", self.too_large.load(Ordering::Relaxed)),
            ("malformed", self.malformed.load(Ordering::Relaxed)),
        ]
    }
}

/// Series frames this node took from peers' writes and sent in answer to
/// their selects: bytes as they crossed the network, and the samples in them.
#[derive(Debug, Default)]
pub(crate) struct FrameTraffic {
    write_bytes: AtomicU64,
    write_samples: AtomicU64,
    select_bytes: AtomicU64,
    select_samples: AtomicU64,
    /// CPU time spent storing peers' writes: ingestion, though no client's
    /// write reached this node.
    store_cpu_nanos: AtomicU64,
}

impl FrameTraffic {
    pub(crate) fn store_cpu_seconds(&self) -> f64 {
        self.store_cpu_nanos.load(Ordering::Relaxed) as f64 / 1e9
    }

    /// `(route, bytes, samples)` for the write and the select route.
    pub(crate) fn counts(&self) -> [(&'static str, u64, u64); 2] {
        let load = |c: &AtomicU64| c.load(Ordering::Relaxed);
        [
            ("write", load(&self.write_bytes), load(&self.write_samples)),
            ("select", load(&self.select_bytes), load(&self.select_samples)),
        ]
    }
}

/// Counts a refusal by its status: without the secret (401), over the
/// body limit (413), or unreadable (400).
async fn count_refusal(State(cluster): State<Arc<Cluster>>, response: Response) -> Response {
    let refused = &cluster.refused_peer_requests;
    let counter = match response.status() {
        StatusCode::UNAUTHORIZED => Some(&refused.no_secret),
        StatusCode::PAYLOAD_TOO_LARGE => Some(&refused.too_large),
        StatusCode::BAD_REQUEST => Some(&refused.malformed),
        _ => None,
    };
    if let Some(c) = counter {
        c.fetch_add(1, Ordering::Relaxed);
    }
    response
}

struct Failure(StatusCode, String);

impl IntoResponse for Failure {
    fn into_response(self) -> Response {
        (self.0, self.1).into_response()
    }
}

impl From<StorageError> for Failure {
    fn from(e: StorageError) -> Self {
        let status = match e.kind() {
            ErrorKind::BadData => StatusCode::BAD_REQUEST,
            ErrorKind::Execution => StatusCode::UNPROCESSABLE_ENTITY,
            ErrorKind::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
            ErrorKind::Internal => StatusCode::INTERNAL_SERVER_ERROR,
        };
        Failure(status, e.to_string())
    }
}

/// Refuses a request without the cluster's secret, when it has one.
fn check_secret(cluster: &Cluster, headers: &HeaderMap) -> Result<(), Failure> {
    let Some(secret) = &cluster.config.secret else {
        return Ok(());
    };
    let given = headers.get(SECRET_HEADER).map(|v| v.as_bytes());
    if !given.is_some_and(|given| same_bytes(given, secret.as_bytes())) {
        return Err(Failure(
            StatusCode::UNAUTHORIZED,
            "a peer request without the cluster's secret".into(),
        ));
    }
    Ok(())
}

/// Whether `a` and `b` are equal, in a time that does not tell how much of
/// them is (a secret guessed byte by byte).
fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |diff, (x, y)| diff | (x ^ y)) == 0
}

/// The engine and tenant a peer's request is for, once its secret checks.
fn local_for(cluster: &Cluster, headers: &HeaderMap) -> Result<(Arc<dyn Tenants>, TenantId), Failure> {
    check_secret(cluster, headers)?;
    let local = cluster
        .local()
        .ok_or_else(|| Failure(StatusCode::SERVICE_UNAVAILABLE, "this node stores no data (yet)".into()))?;
    let tenant = TenantScope::parse(headers.get("X-Scope-OrgID").and_then(|v| v.to_str().ok()))?;
    Ok((local, tenant.only()?.clone()))
}

async fn blocking<T: Send + 'static>(f: impl FnOnce() -> Result<T, Failure> + Send + 'static) -> Result<T, Failure> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| Failure(StatusCode::INTERNAL_SERVER_ERROR, format!("task failed: {e}")))?
}

/// Bodies up to this many bytes are written inline.
#[derive(Clone, Copy)]
struct InlineWrites(usize);

async fn write(
    State(cluster): State<Arc<Cluster>>,
    headers: HeaderMap,
    body: Bytes,
    inline: InlineWrites,
) -> Result<Response, Failure> {
    let (local, tenant) = local_for(&cluster, &headers)?;
    let holding = cluster.hold(&tenant).await?;
    let bytes = body.len() as u64;
    let measured = cluster.clone();
    let store_measured = move || {
        let cpu = cpu_time::ThreadTime::now();
        let stored = store(local.as_ref(), &tenant, &body);
        drop(holding);
        let nanos = cpu.elapsed().as_nanos() as u64;
        measured
            .frame_traffic
            .store_cpu_nanos
            .fetch_add(nanos, Ordering::Relaxed);
        stored
    };
    let (answer, samples) = if bytes as usize <= inline.0 {
        store_measured()?
    } else {
        blocking(move || Ok(store_measured()?)).await?
    };
    let traffic = &cluster.frame_traffic;
    traffic.write_bytes.fetch_add(bytes, Ordering::Relaxed);
    traffic.write_samples.fetch_add(samples, Ordering::Relaxed);
    Ok(axum::Json(answer).into_response())
}

/// Stores a body of series frames in this node's engine; also returns how
/// many samples the body held.
pub(crate) fn store(local: &dyn Tenants, tenant: &TenantId, body: &[u8]) -> Result<(WriteAnswer, u64), StorageError> {
    let storage = local.get_or_create(tenant)?;
    let mut appender = storage.appender();
    let mut reader = SampleReader::default();
    let mut held = 0;
    for frame in frames(body)?.iter() {
        let frame = frame?;
        let samples = reader.read(&frame)?;
        held += (samples.len() + frame.histograms.len()) as u64;
        appender.append_series(frame.labels, samples, &frame.histograms)?;
    }
    Ok((WriteAnswer::from(&appender.commit()?), held))
}

async fn select(State(cluster): State<Arc<Cluster>>, headers: HeaderMap, body: Bytes) -> Result<Response, Failure> {
    let (local, tenant) = local_for(&cluster, &headers)?;
    let request: SelectRequest = json(&body)?;
    let answering = cluster.clone();
    let frames = blocking(move || {
        let owner = request
            .owned_by
            .as_deref()
            .map(|id| Owner::new(&answering, &tenant, id));
        let keep = |labels: &[u8]| owner.as_ref().is_none_or(|o| o.owns(labels));
        Ok(select_where(
            local.as_ref(),
            &tenant,
            &request,
            request.compressed,
            keep,
        )?)
    })
    .await?;
    let traffic = &cluster.frame_traffic;
    traffic.select_samples.fetch_add(frames.samples(), Ordering::Relaxed);
    let body = frames.finish();
    traffic.select_bytes.fetch_add(body.len() as u64, Ordering::Relaxed);
    Ok(body.into_response())
}

/// Which series a node owns, by this node's ring.
struct Owner {
    ring: Arc<crate::ring::Ring>,
    tenant: TenantId,
    /// `None`: the node is not in this ring (yet): every series may be its.
    index: Option<usize>,
    replication_factor: usize,
}

impl Owner {
    fn new(cluster: &Cluster, tenant: &TenantId, id: &str) -> Self {
        let ring = cluster.ring_for(tenant);
        let index = ring.members().iter().position(|m| m.id == id);
        Self {
            ring,
            tenant: tenant.clone(),
            index,
            replication_factor: cluster.config.replication_factor,
        }
    }

    fn owns(&self, labels: &[u8]) -> bool {
        let Some(index) = self.index else { return true };
        let mut owners = Vec::new();
        let hash = crate::ring::series_hash(self.tenant.as_str(), labels);
        self.ring.owners(hash, self.replication_factor, &mut owners);
        owners.contains(&index)
    }
}

/// A select over this node's engine, as series frames (uncompressed: they
/// stay in this process).
pub(crate) fn select_here(
    local: &dyn Tenants,
    tenant: &TenantId,
    request: &SelectRequest,
) -> Result<Vec<u8>, StorageError> {
    Ok(select_where(local, tenant, request, false, |_| true)?.finish())
}

/// A select of the series whose labels (encoded) `keep` takes.
fn select_where(
    local: &dyn Tenants,
    tenant: &TenantId,
    request: &SelectRequest,
    compressed: bool,
    keep: impl Fn(&[u8]) -> bool,
) -> Result<FramesWriter, StorageError> {
    let mut out = FramesWriter::new(compressed);
    let Some(storage) = local.get(tenant)? else {
        return Ok(out);
    };
    let matchers = request.matchers()?;
    let querier = storage.querier(request.mint, request.maxt)?;
    let (mut ts, mut vs, mut labels) = (Vec::new(), Vec::new(), Vec::new());
    for series in querier.select(&request.hints(), &matchers)? {
        let mut series = series?;
        labels.clear();
        series.labels.encode(&mut labels);
        if !keep(&labels) {
            continue;
        }
        let (range, histograms) = if request.labels_only {
            (0..0, &[][..])
        } else {
            (series.samples.read_into(&mut ts, &mut vs)?, &series.histograms[..])
        };
        out.push_with_histograms(&labels, &ts[range.clone()], &vs[range], histograms);
    }
    Ok(out)
}

/// Label names, or with `label_name` the values of that label.
async fn labels(State(cluster): State<Arc<Cluster>>, headers: HeaderMap, body: Bytes) -> Result<Response, Failure> {
    let (local, tenant) = local_for(&cluster, &headers)?;
    let request: SelectRequest = json(&body)?;
    let names = blocking(move || Ok(labels_here(local.as_ref(), &tenant, &request)?)).await?;
    Ok(axum::Json(names).into_response())
}

/// Label names, or with `label_name` that label's values, in this node's engine.
pub(crate) fn labels_here(
    local: &dyn Tenants,
    tenant: &TenantId,
    request: &SelectRequest,
) -> Result<Vec<String>, StorageError> {
    let Some(storage) = local.get(tenant)? else {
        return Ok(Vec::new());
    };
    let matchers = request.matchers()?;
    let querier = storage.querier(request.mint, request.maxt)?;
    match &request.label_name {
        Some(name) => querier.label_values(name, &matchers, request.limit),
        None => querier.label_names(&matchers, request.limit),
    }
}

async fn delete(State(cluster): State<Arc<Cluster>>, headers: HeaderMap, body: Bytes) -> Result<Response, Failure> {
    let (local, tenant) = local_for(&cluster, &headers)?;
    let request: SelectRequest = json(&body)?;
    blocking(move || Ok(delete_here(local.as_ref(), &tenant, &request)?)).await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// Answers once every write this node was sending to owners has arrived.
async fn settle_writes(State(cluster): State<Arc<Cluster>>, headers: HeaderMap) -> Result<Response, Failure> {
    check_secret(&cluster, &headers)?;
    cluster.writes_in_flight.settle().await;
    Ok(StatusCode::NO_CONTENT.into_response())
}

async fn settled_changes(State(cluster): State<Arc<Cluster>>, headers: HeaderMap) -> Result<Response, Failure> {
    let (local, tenant) = local_for(&cluster, &headers)?;
    let count = blocking(move || Ok(settled_changes_here(local.as_ref(), &tenant)?)).await?;
    Ok(axum::Json(count).into_response())
}

/// This node's count of changes to the tenant's settled data
/// ([`cairn_storage::Queryable::settled_changes`]), 0 while it stores none
/// of the tenant's series.
pub(crate) fn settled_changes_here(local: &dyn Tenants, tenant: &TenantId) -> Result<Option<u64>, StorageError> {
    Ok(match local.get(tenant)? {
        Some(storage) => storage.settled_changes(),
        None => Some(0),
    })
}

/// Deletes in this node's engine.
pub(crate) fn delete_here(local: &dyn Tenants, tenant: &TenantId, request: &SelectRequest) -> Result<(), StorageError> {
    if let Some(storage) = local.get(tenant)? {
        storage.delete_series(&request.matchers()?, request.mint, request.maxt)?;
    }
    Ok(())
}

/// The tenants this node stores.
async fn tenants(State(cluster): State<Arc<Cluster>>, headers: HeaderMap) -> Result<Response, Failure> {
    let (local, _) = local_for(&cluster, &headers)?;
    let ids: Vec<String> = local.list().iter().map(|t| t.to_string()).collect();
    Ok(axum::Json(ids).into_response())
}

/// The ring as this node sees it: each member and whether it is alive.
async fn ring(State(cluster): State<Arc<Cluster>>, headers: HeaderMap) -> Result<Response, Failure> {
    check_secret(&cluster, &headers)?;
    let ring = cluster.ring();
    let owners = cluster.work_changes().borrow().clone();
    let monitoring = owners.ids(crate::node::now_ms());
    let members: Vec<serde_json::Value> = ring
        .members()
        .iter()
        .enumerate()
        .map(|(i, m)| {
            serde_json::json!({
                "id": m.id, "addr": m.addr, "zone": m.zone, "ingester": m.ingester, "compactor": m.compactor, "queries": m.queries,
                "state": m.state, "alive": ring.is_alive(i),
                // Whether it takes a share of the scrape targets and rule groups now.
                "monitoring": monitoring.contains(&m.id.as_str()),
            })
        })
        .collect();
    Ok(axum::Json(serde_json::json!({
        "members": members,
        "registered": cluster.registered(),
        "lease_current": cluster.lease_current(),
        "fenced": cluster.fenced.load(Ordering::Acquire),
        "caught_up": cluster.caught_up(),
        "ring_reads": cluster.ring_reads.load(Ordering::Relaxed),
        // By tenant: the members registered as holding some of its series.
        "holders": ring.holders(),
    }))
    .into_response())
}

fn json<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, Failure> {
    serde_json::from_slice(body).map_err(|e| Failure(StatusCode::BAD_REQUEST, format!("unreadable request: {e}")))
}
