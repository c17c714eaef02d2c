//! Cairn's Prometheus-compatible HTTP API over axum.
//!
//! [`router`] serves remote write, the series/labels metadata endpoints,
//! metric metadata (from remote write), VictoriaMetrics-style export, TSDB
//! status, flags/config/runtime info, admin deletes, health checks, `/metrics`,
//! and empty answers for rules, alerts, targets, alertmanagers and exemplars;
//! each path also under a `/prometheus` prefix. Other crates (the
//! PromQL engine) add their own endpoints with [`router_with`], reusing the
//! helpers exported here: the error envelope ([`ApiError`]), the success
//! envelope ([`Success`]), parameters ([`Params`], [`parse_time`],
//! [`parse_match_params`], ...) and [`run_blocking`] for storage calls.

mod admin;
pub mod admission;
pub mod auth;
mod body_stream;
mod cors;
mod empty;
mod error;
mod export;
mod exposition;
mod federate;
mod health;
mod import;
mod import_native;
mod influx;
pub mod ingest;
mod limits;
mod merged_series;
mod metadata;
mod metrics;
pub mod monitoring;
mod opentsdb;
mod otlp;
mod params;
pub mod peers;
mod process;
mod remote_read;
mod response;
pub mod results_cache;
mod selector;
mod series;
mod server_status;
mod status;
mod storage_status;
pub mod tcp;
mod tenant;
#[cfg(test)]
mod test_util;
mod ui;
mod write;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::SystemTime;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::routing::{get, post};
use cairn_storage::{Tenants, WalReplay};

pub use cairn_protocols::DecodeLimits;
pub use cairn_protocols::otlp::Options as OtlpOptions;

pub use admission::{AdmissionConfig, QueryGate, QuerySlot};
pub use auth::{Access, Auth, WebConfig};
pub use error::{ApiError, ErrorType, storage_error};
pub use exposition::Exposition;
pub use limits::{Limits, LimitsState, TenantLimits};
pub use metadata::{MetadataEntry, MetadataStore};
pub use metrics::HttpMetrics;
pub use monitoring::{Monitoring, ReloadStatus, RuleFilter};
pub use params::{
    MAX_TIME, MIN_TIME, Params, format_build_date, format_duration, format_rfc3339, invalid_param, limit_param,
    parse_bool, parse_date, parse_duration, parse_time, read_body, read_options, time_param, time_range,
    unescape_label_name,
};
pub use response::{LabelsJson, Success, format_value, json_response, push_value};
pub use results_cache::{CacheKey, CachedSteps, ResultsCache};
pub use selector::{parse_match_params, parse_selector};
pub use server_status::PROMETHEUS_API_VERSION;
pub use tenant::{TENANT_HEADER, Tenant, TenantMetadata};

/// Tunables of the HTTP API.
#[derive(Debug, Clone)]
pub struct ApiConfig {
    /// Largest accepted request body (compressed, for remote write); 413 past it.
    /// Default 64 MiB.
    pub max_request_body_bytes: usize,
    /// Bounds on remote-write bodies after decompression and on their labels.
    /// Default: [`DecodeLimits::default`] (64 MiB decompressed, 256 labels per
    /// series, 1 KiB names, 16 KiB values).
    pub remote_write_limits: DecodeLimits,
    /// Remote-write bodies up to this size are decoded and stored on the
    /// runtime worker that read them, bigger ones on the blocking pool.
    /// Default 1 MiB; 0 (everything on the pool) when a commit waits for an
    /// fsync, which must not hold a runtime worker.
    pub inline_write_max_body_bytes: usize,
    /// Limit applied to `/api/v1/series` when the request gives none
    /// (a warning is added when it truncates). Default `None`: unlimited, as Prometheus.
    pub default_series_limit: Option<usize>,
    /// Limit applied to `/api/v1/labels` and `/api/v1/label/{name}/values` when
    /// the request gives none. Default `None`.
    pub default_label_limit: Option<usize>,
    /// How far back series/labels/values/export/status look when no `start`
    /// is given, in ms. Default `None`: the whole time range, as Prometheus.
    pub metadata_lookback_ms: Option<i64>,
    /// Size at which the export stream hands a chunk to the connection. Default 64 KiB.
    pub export_chunk_bytes: usize,
    /// What the status endpoints report (flags, config, retention). Default empty.
    pub status: StatusInfo,
    /// Most samples one remote read answered with raw samples may return
    /// (400 past it); 0: no limit. Default 50,000,000, as Prometheus.
    pub remote_read_sample_limit: usize,
    /// Remote reads served at once; more wait for a slot. 0: no limit. Default 10.
    pub remote_read_concurrency: usize,
    /// Size past which a streamed remote read cuts a series into another
    /// frame. Default 1 MiB.
    pub remote_read_max_bytes_in_frame: usize,
    /// How far back `/federate` looks for a series' newest sample, in ms:
    /// the server sets it from the engine's lookback delta. Default 5 minutes.
    pub lookback_delta_ms: i64,
    /// How OTLP metrics become series (e.g. explicit-bucket histograms as
    /// native histograms with custom buckets). Default: as Prometheus does.
    pub otlp: OtlpOptions,
    /// Whether `POST /-/reload` works (`--web.enable-lifecycle`). Default off, as Prometheus.
    pub enable_lifecycle: bool,
    /// Where the API and the web UI are served besides `/` and `/prometheus`
    /// (`--web.route-prefix`, e.g. `/cairn`). Default "": nowhere else.
    pub route_prefix: String,
    /// The path browsers reach the route prefix under when a reverse proxy
    /// in front changes it (the path of `--web.external-url`). Default `None`.
    pub external_path: Option<String>,
    /// How many expensive reads run at once and how many wait
    /// (`--query.max-concurrency`, ...; see [`admission`]).
    pub query_admission: AdmissionConfig,
    /// The range query results cache's bound in bytes; 0 turns it off.
    /// Default 64 MiB.
    pub results_cache_max_bytes: usize,
    /// Agent mode (`--agent`): samples are forwarded, not kept, so every
    /// read route answers 503 `unavailable`, as Prometheus' agent does.
    pub agent: bool,
}

/// The process' configuration as `/api/v1/status/*` report it.
#[derive(Debug, Clone, Default)]
pub struct StatusInfo {
    /// `/api/v1/status/flags`: flag name (without `--`) → effective value.
    pub flags: BTreeMap<String, String>,
    /// `/api/v1/status/config`: the effective configuration as YAML.
    pub config_yaml: String,
    /// `storageRetention` of `/api/v1/status/runtimeinfo`, e.g. `31d`.
    pub storage_retention: String,
    /// What `/api/v1/status/buildinfo` reports of the build.
    pub build: BuildInfo,
}

/// The build of the running binary (its `build.rs` finds these).
#[derive(Debug, Clone, Default)]
pub struct BuildInfo {
    /// Cairn's own version, e.g. `0.1.0`.
    pub version: String,
    /// Git commit.
    pub revision: String,
    pub branch: String,
    /// `user@host` that built it.
    pub build_user: String,
    /// `YYYYMMDD-HH:MM:SS`, UTC ([`format_build_date`]).
    pub build_date: String,
    /// The compiler, e.g. `rustc 1.95.0 (...)`.
    pub rustc: String,
}

impl Default for ApiConfig {
    fn default() -> Self {
        Self {
            max_request_body_bytes: 64 << 20,
            remote_write_limits: DecodeLimits::default(),
            otlp: OtlpOptions::default(),
            enable_lifecycle: false,
            route_prefix: String::new(),
            agent: false,
            external_path: None,
            inline_write_max_body_bytes: 1 << 20,
            default_series_limit: None,
            default_label_limit: None,
            metadata_lookback_ms: None,
            export_chunk_bytes: 64 << 10,
            status: StatusInfo::default(),
            remote_read_sample_limit: 50_000_000,
            remote_read_concurrency: 10,
            remote_read_max_bytes_in_frame: 1 << 20,
            lookback_delta_ms: 5 * 60 * 1000,
            query_admission: AdmissionConfig::default(),
            results_cache_max_bytes: 64 << 20,
        }
    }
}

/// Everything handlers share. Cheap to clone.
#[derive(Clone)]
pub struct AppState {
    tenants: Arc<dyn Tenants>,
    ready: Arc<AtomicBool>,
    config: Arc<ApiConfig>,
    metrics: Arc<HttpMetrics>,
    tenant_metadata: Arc<TenantMetadata>,
    limits: Arc<LimitsState>,
    auth: auth::SharedAuth,
    started: SystemTime,
    remote_read_slots: Arc<tokio::sync::Semaphore>,
    wal_replay: Arc<WalReplay>,
    monitoring: Arc<std::sync::OnceLock<Arc<dyn Monitoring>>>,
    query_gate: Arc<QueryGate>,
    results_cache: Arc<ResultsCache>,
}

impl AppState {
    /// A state over every tenant's storage; it starts ready (see [`AppState::set_ready`]).
    pub fn new(tenants: Arc<dyn Tenants>, config: ApiConfig) -> Self {
        Self {
            tenants,
            ready: Arc::new(AtomicBool::new(true)),
            remote_read_slots: Arc::new(tokio::sync::Semaphore::new(match config.remote_read_concurrency {
                0 => tokio::sync::Semaphore::MAX_PERMITS,
                n => n,
            })),
            wal_replay: Arc::default(),
            monitoring: Arc::default(),
            query_gate: Arc::new(QueryGate::new(config.query_admission)),
            results_cache: Arc::new(ResultsCache::new(config.results_cache_max_bytes)),
            config: Arc::new(config),
            metrics: Arc::new(HttpMetrics::new()),
            tenant_metadata: Arc::default(),
            limits: Arc::default(),
            auth: None,
            started: SystemTime::now(),
        }
    }

    pub fn tenants(&self) -> &Arc<dyn Tenants> {
        &self.tenants
    }

    /// The same state, with access control by `auth`.
    pub fn with_auth(self, auth: Option<Auth>) -> Self {
        Self {
            auth: auth.map(Arc::new),
            ..self
        }
    }

    /// The same state, running admitted queries on `threads`
    /// ([`QuerySlot::run`]).
    pub fn with_query_threads(self, threads: Arc<rayon::ThreadPool>) -> Self {
        Self {
            query_gate: Arc::new(QueryGate::new(self.config.query_admission).with_threads(threads)),
            ..self
        }
    }

    /// Access control; `None`: every request is let through.
    pub fn auth(&self) -> Option<&Arc<Auth>> {
        self.auth.as_ref()
    }

    /// Each tenant's limits and what they refused.
    pub fn limits(&self) -> &Arc<LimitsState> {
        &self.limits
    }

    pub fn config(&self) -> &ApiConfig {
        &self.config
    }

    /// The same state, reporting the progress of this WAL replay.
    pub fn with_wal_replay(self, wal_replay: Arc<WalReplay>) -> Self {
        Self { wal_replay, ..self }
    }

    /// Plugs in what the server runs from `--config.file` (once).
    pub fn set_monitoring(&self, monitoring: Arc<dyn Monitoring>) {
        let _ = self.monitoring.set(monitoring);
    }

    pub fn monitoring(&self) -> Option<Arc<dyn Monitoring>> {
        self.monitoring.get().cloned()
    }

    pub fn wal_replay(&self) -> &WalReplay {
        &self.wal_replay
    }

    /// Slots of the remote reads that may run at once.
    pub(crate) fn remote_read_slots(&self) -> &Arc<tokio::sync::Semaphore> {
        &self.remote_read_slots
    }

    /// Admission of expensive reads: take a slot with [`QueryGate::admit`]
    /// before the work and hold it until the work ends.
    pub fn query_gate(&self) -> &Arc<QueryGate> {
        &self.query_gate
    }

    /// The range query results cache.
    pub fn results_cache(&self) -> &Arc<ResultsCache> {
        &self.results_cache
    }

    pub fn metrics(&self) -> &Arc<HttpMetrics> {
        &self.metrics
    }

    /// When this state was created (the server's start time).
    pub fn started(&self) -> SystemTime {
        self.started
    }

    /// Whether `/-/ready` answers 200 (true) or 503 (false), e.g. false while
    /// shutting down so load balancers drain the instance.
    pub fn set_ready(&self, ready: bool) {
        self.ready.store(ready, Ordering::Release);
    }

    pub fn is_ready(&self) -> bool {
        self.ready.load(Ordering::Acquire)
    }

    /// The flag itself, for code that owns the lifecycle.
    pub fn ready_flag(&self) -> Arc<AtomicBool> {
        Arc::clone(&self.ready)
    }

    /// Default `start` for metadata endpoints: [`MIN_TIME`], or now minus
    /// the configured lookback.
    pub fn default_start(&self) -> i64 {
        match self.config.metadata_lookback_ms {
            Some(lookback) => now_ms().saturating_sub(lookback).max(MIN_TIME),
            None => MIN_TIME,
        }
    }
}

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// Runs short synchronous work right here, on the async worker: for work
/// that costs less than the hand-offs of [`run_blocking`]. As there, a
/// panic in `f` becomes a 500.
pub fn run_inline<T>(f: impl FnOnce() -> Result<T, ApiError>) -> Result<T, ApiError> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_or_else(|_| {
        tracing::error!("inline API work panicked");
        Err(ApiError::internal(
            "internal error: the request's evaluation panicked".to_string(),
        ))
    })
}

/// Runs synchronous storage work on the blocking pool, so fsyncs and long
/// scans never stall the async workers. A panic in `f` becomes a 500.
pub async fn run_blocking<T, F>(f: F) -> Result<T, ApiError>
where
    F: FnOnce() -> Result<T, ApiError> + Send + 'static,
    T: Send + 'static,
{
    match tokio::task::spawn_blocking(f).await {
        Ok(r) => r,
        Err(e) => {
            tracing::error!(error = %e, "blocking API task failed");
            Err(ApiError::internal(format!("internal error: {e}")))
        }
    }
}

/// The built-in API routes, unprefixed and without middleware, by what
/// they need of a caller once access control is on ([`auth::Access`]).
pub fn api_routes() -> Vec<(Access, Router<AppState>)> {
    let write = Router::new()
        .route("/api/v1/write", post(write::remote_write))
        .route("/opentelemetry/v1/metrics", post(otlp::otlp_metrics))
        .route("/api/v1/otlp/v1/metrics", post(otlp::otlp_metrics))
        .route("/api/v1/import", post(import::import_json))
        .route("/write", post(influx::write_v1))
        .route("/api/v2/write", post(influx::write_v2))
        .route("/influx/write", post(influx::write_v1))
        .route("/influx/api/v2/write", post(influx::write_v2))
        .route("/api/put", post(opentsdb::put))
        .route("/opentsdb/api/put", post(opentsdb::put))
        .route("/api/v1/import/prometheus", post(import::import_prometheus))
        .route(
            "/api/v1/import/prometheus/metrics/job/{*rest}",
            post(import::import_prometheus_job).put(import::import_prometheus_job),
        )
        .route("/api/v1/import/csv", post(import::import_csv))
        .route("/api/v1/import/native", post(import_native::import_native));
    let read = Router::new()
        .route("/api/v1/read", post(remote_read::remote_read))
        .route("/query", get(influx::query).post(influx::query))
        .route("/influx/query", get(influx::query).post(influx::query))
        .route("/api/v1/series", get(series::series).post(series::series))
        .route("/api/v1/labels", get(series::labels).post(series::labels))
        .route("/api/v1/label/{name}/values", get(series::label_values))
        .route("/api/v1/export", get(export::export).post(export::export))
        .route(
            "/api/v1/export/native",
            get(export::export_native).post(export::export_native),
        )
        .route("/federate", get(federate::federate).post(federate::federate))
        .route("/api/v1/metadata", get(metadata::metadata))
        .route("/api/v1/status/tsdb", get(status::tsdb_status))
        .route("/api/v1/status/tsdb/blocks", get(server_status::tsdb_blocks))
        .route(
            "/api/v1/query_exemplars",
            get(empty::query_exemplars).post(empty::query_exemplars),
        );
    let status = Router::new()
        .route("/ping", get(influx::ping))
        .route("/influx/ping", get(influx::ping))
        .route("/api/v1/status/flags", get(server_status::flags))
        .route("/api/v1/status/config", get(server_status::config))
        .route("/api/v1/status/runtimeinfo", get(server_status::runtime_info))
        .route("/api/v1/status/buildinfo", get(server_status::build_info))
        .route("/api/v1/status/walreplay", get(server_status::wal_replay))
        .route("/api/v1/status/storage", get(storage_status::storage))
        .route("/api/v1/status/ingestion", get(storage_status::ingestion))
        .route("/api/v1/scrape_pools", get(monitoring::scrape_pools))
        .route("/api/v1/targets/metadata", get(monitoring::targets_metadata))
        .route("/api/v1/targets/relabel_steps", get(empty::targets_relabel_steps))
        .route("/api/v1/notifications", get(empty::notifications))
        .route("/api/v1/notifications/live", get(empty::notifications_live))
        .route(
            "/api/v1/search/{kind}",
            get(empty::search_disabled).post(empty::search_disabled),
        )
        .route("/api/v1/rules", get(monitoring::rules))
        .route("/api/v1/alerts", get(monitoring::alerts))
        .route("/api/v1/targets", get(monitoring::targets))
        .route("/api/v1/alertmanagers", get(monitoring::alertmanagers))
        .route("/metrics", get(metrics::metrics_handler))
        .merge(ui::page_routes());
    let admin = Router::new()
        .route(
            "/api/v1/admin/tsdb/delete_series",
            post(admin::delete_series).put(admin::delete_series),
        )
        .route("/-/reload", post(monitoring::reload).put(monitoring::reload))
        .route(
            "/api/v1/admin/tsdb/snapshot",
            post(admin::snapshot).put(admin::snapshot),
        );
    let open = Router::new()
        .route("/-/healthy", get(health::healthy))
        .route("/-/ready", get(health::ready))
        // VictoriaMetrics' liveness path, which vmctl checks before importing.
        .route("/health", get(import::vm_health))
        .merge(ui::asset_routes());
    vec![
        (Access::Write, write),
        (Access::Read, read),
        (Access::Status, status),
        (Access::Admin, admin),
        (Access::Open, open),
    ]
}

/// What a read gets in agent mode.
async fn refuse_in_agent_mode(_: axum::extract::Request, _: axum::middleware::Next) -> axum::response::Response {
    axum::response::IntoResponse::into_response(ApiError::unavailable(
        "unavailable in agent mode: samples are forwarded with remote_write, not kept (--agent)",
    ))
}

/// The full API: [`api_routes`] at `/`, under `/prometheus` and the route prefix, with request
/// metrics, the body limit and the JSON 404/405 fallbacks.
pub fn router(state: AppState) -> Router {
    router_with(state, Router::new())
}

/// [`router`] plus `extra` routes (e.g. `/api/v1/query` from the PromQL
/// crate), which get the same prefix, metrics, limits and fallbacks, and
/// need what a read does.
pub fn router_with(state: AppState, extra: Router<AppState>) -> Router {
    let mut routes = Router::new();
    for (access, group) in api_routes().into_iter().chain([(Access::Read, extra)]) {
        if !group.has_routes() {
            continue;
        }
        let gate = auth::Gate {
            state: state.clone(),
            access,
        };
        let group = if access == Access::Read && state.config.agent {
            group.route_layer(axum::middleware::from_fn(refuse_in_agent_mode))
        } else {
            group
        };
        routes = routes.merge(group.route_layer(axum::middleware::from_fn_with_state(gate, auth::check)));
    }
    let mut router = Router::new().merge(routes.clone()).nest("/prometheus", routes.clone());
    let route_prefix = state.config.route_prefix.as_str();
    if !route_prefix.is_empty() && route_prefix != "/prometheus" {
        router = router.nest(route_prefix, routes);
    }
    router
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .route_layer(axum::middleware::from_fn_with_state(state.clone(), metrics::track))
        .layer(DefaultBodyLimit::max(state.config.max_request_body_bytes))
        .layer(axum::middleware::from_fn(cors::cors))
        .with_state(state)
}

async fn not_found(
    axum::extract::State(state): axum::extract::State<AppState>,
    uri: axum::http::Uri,
) -> axum::response::Response {
    if let Some(redirect) = ui::prefix_root_redirect(&state, &uri) {
        return redirect;
    }
    axum::response::IntoResponse::into_response(ApiError::not_found(format!("no such endpoint: {}", uri.path())))
}

async fn method_not_allowed(method: axum::http::Method, uri: axum::http::Uri) -> ApiError {
    ApiError::new(
        ErrorType::MethodNotAllowed,
        format!("method {method} not allowed for {}", uri.path()),
    )
}

#[cfg(test)]
mod tests {
    use crate::test_util::*;

    #[test]
    fn a_panic_inline_is_a_500_not_a_dropped_connection() {
        let err = super::run_inline(|| -> Result<(), super::ApiError> { panic!("bug") }).unwrap_err();
        assert_eq!(err.status().as_u16(), 500);
        assert_eq!(super::run_inline(|| Ok(7)), Ok(7));
    }

    #[tokio::test]
    async fn unknown_paths_are_404_envelopes() {
        let app = TestApp::new();
        app.get("/api/v1/nope")
            .await
            .check_error(404, "not_found", "no such endpoint: /api/v1/nope");
        app.get("/prometheus/nope")
            .await
            .check_error(404, "not_found", "no such endpoint: /prometheus/nope");
    }

    #[tokio::test]
    async fn wrong_method_is_405_envelope() {
        let app = TestApp::new();
        app.post_form("/api/v1/label/job/values", "").await.check_error(
            405,
            "method_not_allowed",
            "method POST not allowed for /api/v1/label/job/values",
        );
    }

    /// The label calls Grafana makes: `__name__` values with a time range
    /// (GET only, as Prometheus), series with `match[]` by GET and POST.
    #[tokio::test]
    async fn grafana_label_and_series_calls() {
        let app = TestApp::new();
        app.write(&[("up", "a", &[(1000, 1.0)]), ("node_load1", "b", &[(5000, 1.0)])]);
        for prefix in ["", "/prometheus"] {
            app.get(&format!("{prefix}/api/v1/label/__name__/values?start=0&end=10"))
                .await
                .check(200, r#"{"status":"success","data":["node_load1","up"]}"#);
            app.get(&format!("{prefix}/api/v1/label/__name__/values?start=0&end=2"))
                .await
                .check(200, r#"{"status":"success","data":["up"]}"#);
            app.get(&format!(
                "{prefix}/api/v1/label/__name__/values?match[]={{job=\"b\"}}&start=0&end=10"
            ))
            .await
            .check(200, r#"{"status":"success","data":["node_load1"]}"#);
            let up = r#"{"status":"success","data":[{"__name__":"up","job":"a"}]}"#;
            app.get(&format!("{prefix}/api/v1/series?match[]=up&start=0&end=10"))
                .await
                .check(200, up);
            app.post_form(&format!("{prefix}/api/v1/series"), "match%5B%5D=up&start=0&end=10")
                .await
                .check(200, up);
            app.post_form(&format!("{prefix}/api/v1/labels"), "match%5B%5D=up&start=0&end=10")
                .await
                .check(200, r#"{"status":"success","data":["__name__","job"]}"#);
        }
    }

    #[tokio::test]
    async fn extra_routes_get_prefix_and_metrics() {
        use axum::routing::get;
        let app = TestApp::new();
        let extra = axum::Router::new().route("/api/v1/query", get(|| async { "q" }));
        let router = crate::router_with(app.state.clone(), extra);
        let app = app.with_router(router);
        app.get("/api/v1/query").await.check(200, "q");
        app.get("/prometheus/api/v1/query").await.check(200, "q");
        let metrics = app.get("/metrics").await.body;
        assert!(
            metrics.contains(r#"cairn_http_requests_total{handler="/api/v1/query",code="200"} 2"#),
            "{metrics}"
        );
    }
}
