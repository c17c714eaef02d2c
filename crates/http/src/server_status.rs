//! `/api/v1/status/flags`, `/api/v1/status/config`,
//! `/api/v1/status/runtimeinfo`, `/api/v1/status/walreplay` and
//! `/api/v1/status/tsdb/blocks` in Prometheus' shapes, from the
//! [`StatusInfo`](crate::StatusInfo) the binary hands in and from storage.

use std::collections::BTreeMap;

use axum::extract::State;
use serde::Serialize;

use crate::{ApiError, AppState, Success, Tenant, format_rfc3339, run_blocking};

/// `GET /api/v1/status/flags`: `{"flag.name":"value",...}`, every value a string.
pub async fn flags(State(state): State<AppState>) -> Success<BTreeMap<String, String>> {
    Success::new(state.config().status.flags.clone())
}

#[derive(Serialize)]
struct ConfigBody {
    yaml: String,
}

/// `GET /api/v1/status/config`: `{"yaml":"..."}`.
pub async fn config(State(state): State<AppState>) -> Success<impl Serialize> {
    // With a Prometheus configuration file, that file is the configuration.
    let yaml = match state.monitoring() {
        Some(m) => m.config_yaml(),
        None => state.config().status.config_yaml.clone(),
    };
    Success::new(ConfigBody { yaml })
}

/// Prometheus' `RuntimeInfo`. Go-specific fields get their nearest meaning:
/// `goroutineCount` is the number of OS threads, `GOMAXPROCS` the available
/// parallelism, `GOMEMLIMIT` "no limit" (`math.MaxInt64`), `GOGC`/`GODEBUG` empty.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct RuntimeInfo {
    start_time: String,
    #[serde(rename = "CWD")]
    cwd: String,
    hostname: String,
    server_time: String,
    reload_config_success: bool,
    last_config_time: String,
    corruption_count: i64,
    goroutine_count: usize,
    #[serde(rename = "GOMAXPROCS")]
    gomaxprocs: usize,
    #[serde(rename = "GOMEMLIMIT")]
    gomemlimit: i64,
    #[serde(rename = "GOGC")]
    gogc: String,
    #[serde(rename = "GODEBUG")]
    godebug: String,
    storage_retention: String,
}

/// `GET /api/v1/status/runtimeinfo`.
pub async fn runtime_info(State(state): State<AppState>) -> Success<impl Serialize> {
    let started = format_rfc3339(state.started());
    // Without a configuration file, the start is the only configuration load.
    let (reload_config_success, last_config_time) = match state.monitoring() {
        Some(m) => {
            let r = m.reload_status();
            (r.successful, format_rfc3339(r.last_success))
        }
        None => (true, started.clone()),
    };
    Success::new(RuntimeInfo {
        start_time: started,
        cwd: std::env::current_dir()
            .map(|d| d.display().to_string())
            .unwrap_or_default(),
        hostname: hostname(),
        server_time: format_rfc3339(std::time::SystemTime::now()),
        reload_config_success,
        last_config_time,
        corruption_count: 0,
        goroutine_count: thread_count(),
        gomaxprocs: std::thread::available_parallelism().map_or(1, |n| n.get()),
        gomemlimit: i64::MAX,
        gogc: String::new(),
        godebug: String::new(),
        storage_retention: state.config().status.storage_retention.clone(),
    })
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .ok()
        .filter(|h| !h.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_default()
}

/// Threads of this process (Linux `/proc/self/status`; 0 elsewhere).
fn thread_count() -> usize {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Threads:"))
                .and_then(|n| n.trim().parse().ok())
        })
        .unwrap_or(0)
}

/// The version of Prometheus whose API Cairn answers as: clients such as
/// Grafana read `version` to choose which endpoints to use, and the
/// compliance suite and the differential tests run against this release.
pub const PROMETHEUS_API_VERSION: &str = "3.14.0";

/// Prometheus' build information, `version` being the API's (see
/// [`PROMETHEUS_API_VERSION`]); `goVersion` holds the Rust compiler's, and
/// `cairnVersion` Cairn's own version. No `features` map: Grafana would take
/// Cairn for Mimir.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct BuildInfoBody {
    version: &'static str,
    revision: String,
    branch: String,
    build_user: String,
    build_date: String,
    go_version: String,
    cairn_version: String,
}

/// `GET /api/v1/status/buildinfo`.
pub async fn build_info(State(state): State<AppState>) -> Success<impl Serialize> {
    let b = state.config().status.build.clone();
    Success::new(BuildInfoBody {
        version: PROMETHEUS_API_VERSION,
        revision: b.revision,
        branch: b.branch,
        build_user: b.build_user,
        build_date: b.build_date,
        go_version: b.rustc,
        cairn_version: b.version,
    })
}

/// `GET /api/v1/status/walreplay`: the segments of the write-ahead log the
/// opening storage replays and the one it is at (all zero on a new data
/// directory).
pub async fn wal_replay(State(state): State<AppState>) -> Success<serde_json::Value> {
    let st = state.wal_replay().status();
    Success::new(serde_json::json!({ "min": st.min, "max": st.max, "current": st.current }))
}

/// One entry of `/api/v1/status/tsdb/blocks`: Prometheus' block metadata
/// for a Cairn part. `ulid` is the part's name, `maxTime` exclusive (the
/// newest sample's time + 1) as a block's is, `version` the part format's;
/// `bytes` and `inMemory` are Cairn's.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Block {
    ulid: String,
    min_time: i64,
    max_time: i64,
    stats: BlockStats,
    version: u32,
    bytes: u64,
    in_memory: bool,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct BlockStats {
    num_samples: u64,
    num_series: u64,
    num_chunks: u64,
}

/// `GET /api/v1/status/tsdb/blocks`: every stored part.
pub async fn tsdb_blocks(
    State(state): State<AppState>,
    Tenant(scope): Tenant,
) -> Result<Success<impl Serialize>, ApiError> {
    scope.only()?;
    let storage = state.reader(&scope)?;
    let parts = run_blocking(move || Ok(storage.parts()?)).await?;
    let blocks: Vec<Block> = parts
        .into_iter()
        .map(|p| Block {
            ulid: p.name,
            min_time: p.min_time,
            max_time: p.max_time.saturating_add(1),
            stats: BlockStats {
                num_samples: p.samples,
                num_series: p.series,
                num_chunks: p.blocks,
            },
            version: p.format,
            bytes: p.bytes,
            in_memory: p.in_memory,
        })
        .collect();
    Ok(Success::new(serde_json::json!({ "blocks": blocks })))
}

#[cfg(test)]
mod tests {
    use crate::test_util::*;
    use crate::{ApiConfig, StatusInfo};

    fn app() -> TestApp {
        TestApp::with_config(ApiConfig {
            status: StatusInfo {
                flags: [("query.timeout", "2m"), ("storage.path", "data")]
                    .into_iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
                config_yaml: "query:\n  timeout: 2m\n".into(),
                storage_retention: "31d".into(),
                build: crate::BuildInfo {
                    version: "0.1.0".into(),
                    revision: "abc123".into(),
                    branch: "main".into(),
                    build_user: "ci@host".into(),
                    build_date: "20261126-18:00:00".into(),
                    rustc: "rustc 1.95.0".into(),
                },
            },
            ..ApiConfig::default()
        })
    }

    #[tokio::test]
    async fn flags_and_config() {
        let app = app();
        app.get("/api/v1/status/flags").await.check(
            200,
            r#"{"status":"success","data":{"query.timeout":"2m","storage.path":"data"}}"#,
        );
        app.get("/prometheus/api/v1/status/config")
            .await
            .check(200, r#"{"status":"success","data":{"yaml":"query:\n  timeout: 2m\n"}}"#);
    }

    #[tokio::test]
    async fn runtime_info() {
        let app = app();
        let resp = app.get("/api/v1/status/runtimeinfo").await;
        resp.check_status(200);
        let v: serde_json::Value = serde_json::from_str(&resp.body).unwrap();
        assert_eq!(v["status"], "success");
        let d = v["data"].as_object().unwrap();
        let keys: Vec<&str> = d.keys().map(String::as_str).collect();
        let mut want = vec![
            "startTime",
            "CWD",
            "hostname",
            "serverTime",
            "reloadConfigSuccess",
            "lastConfigTime",
            "corruptionCount",
            "goroutineCount",
            "GOMAXPROCS",
            "GOMEMLIMIT",
            "GOGC",
            "GODEBUG",
            "storageRetention",
        ];
        want.sort_unstable();
        let mut keys_sorted = keys.clone();
        keys_sorted.sort_unstable();
        assert_eq!(keys_sorted, want);
        assert_eq!(d["reloadConfigSuccess"], true);
        assert_eq!(d["corruptionCount"], 0);
        assert_eq!(d["GOGC"], "");
        assert_eq!(d["GODEBUG"], "");
        assert_eq!(d["GOMEMLIMIT"], i64::MAX);
        assert_eq!(d["storageRetention"], "31d");
        assert_eq!(d["startTime"], d["lastConfigTime"]);
        assert!(d["GOMAXPROCS"].as_u64().unwrap() >= 1);
        let start = d["startTime"].as_str().unwrap();
        assert!(start.ends_with('Z') && start.len() >= 20, "{start}");
        assert!(d["goroutineCount"].is_u64());
    }

    #[tokio::test]
    async fn build_info_reports_the_api_version_and_the_build() {
        // Grafana needs a version of at least 2.24.0 for its cheap label
        // endpoints, and must not see a `features` map.
        for path in ["/api/v1/status/buildinfo", "/prometheus/api/v1/status/buildinfo"] {
            app().get(path).await.check(
                200,
                r#"{"status":"success","data":{"version":"3.14.0","revision":"abc123","branch":"main","buildUser":"ci@host","buildDate":"20261126-18:00:00","goVersion":"rustc 1.95.0","cairnVersion":"0.1.0"}}"#,
            );
        }
    }

    #[tokio::test]
    async fn wal_replay_reports_its_progress_and_blocks_list_parts() {
        let replay = std::sync::Arc::new(cairn_storage::WalReplay::default());
        let mut app = app();
        app.state = app.state.clone().with_wal_replay(replay.clone());
        let router = crate::router(app.state.clone());
        let app = app.with_router(router);
        app.get("/api/v1/status/walreplay")
            .await
            .check(200, r#"{"status":"success","data":{"current":0,"max":0,"min":0}}"#);
        replay.start(3, 9);
        replay.at(5);
        app.get("/api/v1/status/walreplay")
            .await
            .check(200, r#"{"status":"success","data":{"current":5,"max":9,"min":3}}"#);
        // The reference store keeps no parts (the engine's are listed in
        // tests/http_api.rs).
        app.get("/api/v1/status/tsdb/blocks")
            .await
            .check(200, r#"{"status":"success","data":{"blocks":[]}}"#);
    }
}
