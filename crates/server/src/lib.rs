//! Puts Cairn together: opens the embedded TSDB (replaying its WAL while the
//! HTTP API already answers `/-/ready` with 503), serves the Prometheus API
//! over it, and on shutdown stops accepting requests and flushes storage.

mod opening;

use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::Context;
use cairn_http::{ApiConfig, AppState};
use cairn_tsdb::Tsdb;

use crate::opening::OpeningStorage;

pub use cairn_http::parse_duration;
pub use cairn_query_api::EngineOptions;

/// Everything the binary configures.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    pub listen_addr: SocketAddr,
    pub storage: cairn_tsdb::Config,
    pub api: ApiConfig,
    /// PromQL engine limits and defaults (timeout, samples, series, lookback).
    pub engine: EngineOptions,
}

/// Serves until `shutdown` resolves, then flushes storage and returns.
pub async fn run(
    config: ServerConfig,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let listener = tokio::net::TcpListener::bind(config.listen_addr)
        .await
        .with_context(|| format!("cannot listen on {}", config.listen_addr))?;
    tracing::info!(addr = %listener.local_addr()?, "listening");

    let storage = Arc::new(OpeningStorage::default());
    let state = AppState::new(storage.clone(), config.api.clone());
    state.set_ready(false);
    let app = cairn_http::router_with(state.clone(), cairn_query_api::routes(config.engine.clone()));
    let server = tokio::spawn(async move { axum::serve(listener, app).with_graceful_shutdown(shutdown).await });

    let path = config.storage.path.clone();
    let started = std::time::Instant::now();
    let db = tokio::task::spawn_blocking(move || Tsdb::open(config.storage))
        .await
        .context("storage open task failed")?
        .with_context(|| format!("cannot open storage at {}", path.display()))?;
    let db = Arc::new(db);
    storage.set(db.clone());
    state.set_ready(true);
    tracing::info!(path = %path.display(), elapsed_ms = started.elapsed().as_millis() as u64, "storage ready");

    let served = server.await.context("server task failed")?;
    state.set_ready(false);
    tracing::info!("shutting down: flushing storage");
    tokio::task::spawn_blocking(move || db.close())
        .await
        .context("storage close task failed")?
        .context("cannot flush storage on shutdown")?;
    served.context("server failed")
}

/// Resolves on SIGINT or SIGTERM.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {},
        _ = term => {},
    }
}
