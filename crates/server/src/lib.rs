//! Puts Cairn together: opens the embedded TSDB (replaying its WAL while the
//! HTTP API already answers `/-/ready` with 503), serves the Prometheus API
//! over it, and on shutdown stops accepting requests and flushes storage.

pub mod check;
mod compaction;
mod limits;
mod memory;
mod monitoring;
mod opening;
mod peers;
mod self_metrics;
mod serve;
mod tls;

use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::Context;
use cairn_http::tcp::{LineProtocol, serve_lines};
use cairn_http::{ApiConfig, AppState};
use cairn_tsdb::TsdbTenants;

use crate::opening::OpeningTenants;

pub use cairn_http::parse_duration;
pub use cairn_notifier::NotifierOptions;
pub use cairn_query_api::{EngineOptions, StepSplit};
pub use monitoring::{MonitoringConfig, check_config};
pub use serve::HttpTimeouts;

/// Everything the binary configures.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    pub listen_addr: SocketAddr,
    pub storage: cairn_tsdb::Config,
    pub api: ApiConfig,
    /// PromQL engine limits and defaults (timeout, samples, series, lookback).
    pub engine: EngineOptions,
    /// Graphite plaintext over TCP; off when `None`.
    pub graphite_listen_addr: Option<SocketAddr>,
    /// OpenTSDB telnet `put` over TCP; off when `None`.
    pub opentsdb_listen_addr: Option<SocketAddr>,
    /// The tenants' limits, reloaded when the file changes (limits.rs).
    pub limits_file: Option<std::path::PathBuf>,
    /// TLS and access control (`--web.config.file`).
    pub web: cairn_http::WebConfig,
    /// Cluster mode; a single node when `None`.
    pub cluster: Option<cairn_cluster::ClusterConfig>,
    /// Scraping, rules and alerting from a Prometheus configuration file
    /// (`--config.file`); none when `None`.
    pub monitoring: Option<MonitoringConfig>,
    /// How long the server waits on slow or idle clients.
    pub http_timeouts: HttpTimeouts,
    /// How much lower than ingestion the API's queries run (a Linux nice
    /// increment; rules keep the engine's own threads and priority).
    pub query_nice: i32,
}

/// Serves until `shutdown` resolves, then flushes storage and returns.
pub async fn run(
    config: ServerConfig,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    memory::tune_allocator();
    memory::spawn_trimmer();
    let auth = cairn_http::Auth::new(&config.web).map_err(|e| anyhow::anyhow!("web configuration: {e}"))?;
    if auth.is_some() && (config.graphite_listen_addr.is_some() || config.opentsdb_listen_addr.is_some()) {
        anyhow::bail!(
            "the Graphite and OpenTSDB telnet listeners carry no credentials: they cannot run with authentication on"
        );
    }
    if let (Some(cluster), Some(monitoring)) = (&config.cluster, &config.monitoring) {
        if monitoring.agent {
            anyhow::bail!("--agent runs on a single node: it forwards what its own WAL holds");
        }
        if cluster.role == cairn_cluster::Role::Compact {
            anyhow::bail!("the compactor does not scrape or evaluate rules: give --config.file to the other nodes");
        }
    }
    if let Some(cluster) = &config.cluster
        && auth.is_some()
        && cluster.secret.is_none()
    {
        anyhow::bail!(
            "with authentication on, the nodes of a cluster must share a secret (--cluster.secret-file): \
             otherwise anyone could write through a node's internal routes"
        );
    }
    if let Some(m) = &config.monitoring {
        // A bad configuration stops the start before anything listens.
        check_config(&m.config_file)
            .map_err(anyhow::Error::msg)
            .with_context(|| format!("cannot load --config.file {}", m.config_file.display()))?;
    }
    let tls = config
        .web
        .tls_server_config
        .as_ref()
        .map(tls::server_config)
        .transpose()?;
    let listener = tokio::net::TcpListener::bind(config.listen_addr)
        .await
        .with_context(|| format!("cannot listen on {}", config.listen_addr))?;
    tracing::info!(addr = %listener.local_addr()?, "listening");
    // Bound before storage opens, so a taken port fails the start at once.
    let mut line_listeners = Vec::new();
    for (addr, protocol) in [
        (config.graphite_listen_addr, LineProtocol::Graphite),
        (config.opentsdb_listen_addr, LineProtocol::OpenTsdbTelnet),
    ] {
        if let Some(addr) = addr {
            let l = tokio::net::TcpListener::bind(addr)
                .await
                .with_context(|| format!("cannot listen for {protocol:?} on {addr}"))?;
            tracing::info!(addr = %l.local_addr()?, ?protocol, "listening");
            line_listeners.push((l, protocol));
        }
    }
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let shutdown = async move {
        shutdown.await;
        let _ = stop_tx.send(true);
    };

    let opening = Arc::new(OpeningTenants::default());
    let cluster = match &config.cluster {
        Some(c) => {
            let mut c = c.clone();
            if let Some(tls) = &config.web.tls_server_config {
                // Peers serve HTTPS as this node does, under certificates of one CA.
                let ca = c.tls_ca_file.clone().or_else(|| tls.client_ca_file.clone()).context(
                    "with tls_server_config, the nodes of a cluster speak HTTPS to each other: \
                     give --cluster.tls-ca-file, the CA that signed their certificates",
                )?;
                c.peer_tls = Some(tls::peer_client_config(tls, &ca)?);
            }
            Some(cairn_cluster::Cluster::start(c)?)
        }
        None => None,
    };
    // What the API serves: this node's engine, or the cluster through it.
    let tenants: Arc<dyn cairn_storage::Tenants> = match &cluster {
        Some(cluster) => Arc::new(cairn_cluster::ClusterTenants::new(cluster.clone())),
        None => opening.clone(),
    };
    let role = config.cluster.as_ref().map(|c| c.role);
    let compacts = role == Some(cairn_cluster::Role::Compact);
    // Whether this node opens an engine: a single node, an ingester, or the
    // compactor (whose engine keeps the compacted copy of old days).
    let stores = role.is_none_or(|r| r.stores()) || compacts;
    let mut api = config.api.clone();
    // What an ingester's engine takes inline (peers' writes, below).
    let inline_commit_max_body_bytes = api.inline_write_max_body_bytes;
    if cluster.is_some() {
        // A cluster write waits for its owners over the network: never on
        // an async worker, which the owners' answers themselves may need.
        api.inline_write_max_body_bytes = 0;
    }
    api.status.config_yaml = config_yaml(&config);
    api.status.storage_retention = cairn_http::format_duration(ms(config.storage.retention));
    api.lookback_delta_ms = ms(config.engine.lookback_delta);
    let query_threads = query_threads(config.query_nice)?;
    let state = AppState::new(tenants, api)
        .with_wal_replay(config.storage.wal_replay.clone())
        .with_auth(auth)
        .with_query_threads(Arc::clone(&query_threads));
    if let Some(path) = &config.limits_file {
        state.limits().set(limits::load(path)?);
    }
    if let Some(cluster) = &cluster {
        // Before the first request is routed.
        cluster.set_shard_sizes(limits::shard_sizes(state.limits().current()));
    }
    state.set_ready(false);
    let mut app = cairn_http::router_with(
        state.clone(),
        cairn_query_api::routes(EngineOptions {
            pool: Some(query_threads),
            ..config.engine.clone()
        }),
    );
    if let Some(cluster) = &cluster {
        let peers: Arc<dyn cairn_http::peers::Peers> = Arc::new(peers::ClusterPeers(cluster.clone()));
        app = app.layer(axum::Extension(peers));
        app = app.merge(cairn_cluster::routes(
            cluster.clone(),
            internal_body_limit(&config),
            inline_commit_max_body_bytes,
        ));
    }
    // A node scaling down leaves the ring before it stops serving, so
    // peers stop sending it writes first.
    let leaving = cluster.clone().filter(|c| c.config().leave_on_shutdown);
    let shutdown = async move {
        shutdown.await;
        if let Some(cluster) = leaving {
            let _ = tokio::task::spawn_blocking(move || cluster.leave()).await;
        }
    };
    let timeouts = config.http_timeouts;
    let server = match tls {
        Some(tls) => {
            let listener = tls::TlsListener::new(listener, tls)?;
            tokio::spawn(serve::serve(listener, app, timeouts, shutdown))
        }
        None => tokio::spawn(serve::serve(listener, app, timeouts, shutdown)),
    };

    let db = if stores {
        let path = config.storage.path.clone();
        let started = std::time::Instant::now();
        let settings = limits::settings(state.limits().current());
        let mut storage_config = config.storage.clone();
        if compacts {
            // It writes whole days that are over: they go to the bucket at once.
            storage_config.idle_merge_after = std::time::Duration::ZERO;
        }
        let db = tokio::task::spawn_blocking(move || TsdbTenants::open(storage_config, settings))
            .await
            .context("storage open task failed")?
            .with_context(|| format!("cannot open storage at {}", path.display()))?;
        opening.set(db.clone());
        if let Some(cluster) = &cluster {
            cluster.set_local(db.clone());
        }
        tracing::info!(path = %path.display(), elapsed_ms = started.elapsed().as_millis() as u64, "storage ready");
        Some(db)
    } else {
        None
    };
    if let Some(file) = config.limits_file.clone() {
        let enforcers = limits::Enforcers {
            tenants: db.clone(),
            cluster: cluster.clone(),
        };
        tokio::spawn(limits::reload_on_change(file, state.limits().clone(), enforcers));
    }
    let compaction = match &cluster {
        Some(cluster) => {
            let settings = limits::settings(state.limits().current());
            Some(compaction::start(cluster, &config, db.as_ref(), settings).await?)
        }
        None => None,
    };
    let monitoring = match &config.monitoring {
        Some(m) => {
            let running = monitoring::Running::start(
                m.clone(),
                state.tenants().clone(),
                config.engine.clone(),
                config.listen_addr,
                // A cluster node's engine holds replicas of its share of
                // every node's writes: not what a receiver should get.
                db.as_ref().filter(|_| cluster.is_none()).map(|db| db.default_engine()),
                cluster.as_ref(),
            )
            .await?;
            state.set_monitoring(Arc::new(monitoring::Shown(running.clone())));
            Some((running.clone(), tokio::spawn(reload_on_sighup(running))))
        }
        None => None,
    };
    state.set_ready(true);
    tokio::task::spawn_blocking(|| match memory::release_startup_code() {
        Ok(bytes) => tracing::debug!(bytes, "start-up code released"),
        Err(error) => tracing::debug!(%error, "start-up code kept resident"),
    });
    // TCP senders cannot retry a refused line, so they wait for storage.
    let line_tasks: Vec<_> = line_listeners
        .into_iter()
        .map(|(l, protocol)| tokio::spawn(serve_lines(l, state.clone(), protocol, stop_rx.clone())))
        .collect();

    let served = server.await.context("server task failed")?;
    state.set_ready(false);
    for task in line_tasks {
        // A failed listener must not skip the flush below.
        if let Err(e) = task.await {
            tracing::error!(error = %e, "line protocol listener failed");
        }
    }
    if let Some((running, sighup)) = monitoring {
        sighup.abort();
        running.stop().await;
    }
    if let Some(compaction) = compaction {
        tokio::task::spawn_blocking(move || compaction.stop())
            .await
            .context("compaction stop task failed")?;
    }
    if let Some(db) = db {
        tracing::info!("shutting down: flushing storage");
        tokio::task::spawn_blocking(move || db.close())
            .await
            .context("storage close task failed")?
            .context("cannot flush storage on shutdown")?;
    }
    if let Some(cluster) = cluster {
        tokio::task::spawn_blocking(move || cluster.stop())
            .await
            .context("cluster deregistration task failed")?;
    }
    served.context("server failed")
}

/// Peers forward whole write requests, uncompressed: the internal routes
/// take bodies several times the public limit.
fn internal_body_limit(config: &ServerConfig) -> usize {
    config.api.max_request_body_bytes.saturating_mul(8)
}

fn ms(d: std::time::Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

/// The effective configuration as YAML, for `/api/v1/status/config`.
/// Cairn is configured by flags only; this mirrors them by section.
/// The threads the API's queries run on (as many as cores), `nice` lower
/// than the rest of the process, so that a storm of heavy queries takes the
/// CPU that ingestion and rule evaluation leave. Rules keep the engine's
/// own threads.
fn query_threads(nice: i32) -> anyhow::Result<Arc<rayon::ThreadPool>> {
    let pool = rayon::ThreadPoolBuilder::new()
        .thread_name(|i| format!("cairn-query-{i}"))
        .start_handler(move |_| {
            if nice > 0 {
                cairn_tsdb::lower_own_priority(nice);
            }
        })
        .build()
        .context("start the query threads")?;
    Ok(Arc::new(pool))
}

pub fn config_yaml(config: &ServerConfig) -> String {
    use std::fmt::Write as _;
    // JSON strings are valid YAML double-quoted scalars.
    let q = |s: &str| serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into());
    let d = |d: std::time::Duration| cairn_http::format_duration(ms(d));
    let st = &config.storage;
    let fsync = match st.wal_sync {
        cairn_tsdb::WalSync::EveryCommit => "0s".to_string(),
        cairn_tsdb::WalSync::Interval(i) => d(i),
    };
    let e = &config.engine;
    let mut y = String::new();
    let _ = write!(
        y,
        "storage:\n  path: {}\n  retention: {}\n  wal_fsync_interval: {}\n  flush_interval: {}\n  \
         max_in_memory_bytes: {}\n  min_free_disk_bytes: {}\n\
         http:\n  listen_addr: {}\n  max_request_body_bytes: {}\n\
         query:\n  timeout: {}\n  max_samples: {}\n  max_series: {}\n  lookback_delta: {}\n",
        q(&st.path.display().to_string()),
        d(st.retention),
        fsync,
        d(st.flush_interval),
        st.max_in_memory_bytes,
        st.min_free_disk_bytes,
        q(&config.listen_addr.to_string()),
        config.api.max_request_body_bytes,
        d(e.timeout),
        e.max_samples,
        e.max_series,
        d(e.lookback_delta),
    );
    y
}

/// Reloads the configuration on each SIGHUP, as Prometheus does.
async fn reload_on_sighup(running: Arc<monitoring::Running>) {
    #[cfg(unix)]
    {
        let Ok(mut hup) = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup()) else {
            return;
        };
        while hup.recv().await.is_some() {
            if let Err(e) = running.reload().await {
                tracing::error!(error = %e, "error reloading the configuration: the running one stays");
            }
        }
    }
    #[cfg(not(unix))]
    std::future::pending::<()>().await;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_yaml_mirrors_the_flags() {
        let config = ServerConfig {
            listen_addr: "127.0.0.1:9090".parse().unwrap(),
            storage: cairn_tsdb::Config::new("/data/cairn"),
            api: ApiConfig::default(),
            engine: EngineOptions::default(),
            graphite_listen_addr: None,
            opentsdb_listen_addr: None,
            limits_file: None,
            web: cairn_http::WebConfig::default(),
            cluster: None,
            monitoring: None,
            http_timeouts: HttpTimeouts::default(),
            query_nice: 0,
        };
        assert_eq!(
            config_yaml(&config),
            "storage:\n  path: \"/data/cairn\"\n  retention: 31d\n  wal_fsync_interval: 1s\n  flush_interval: 1m\n  \
             max_in_memory_bytes: 536870912\n  min_free_disk_bytes: 67108864\n\
             http:\n  listen_addr: \"127.0.0.1:9090\"\n  max_request_body_bytes: 67108864\n\
             query:\n  timeout: 2m\n  max_samples: 50000000\n  max_series: 1000000\n  lookback_delta: 5m\n"
        );
    }
}
