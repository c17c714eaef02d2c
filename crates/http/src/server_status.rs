//! `/api/v1/status/flags`, `/api/v1/status/config` and
//! `/api/v1/status/runtimeinfo` in Prometheus' shapes, from the
//! [`StatusInfo`](crate::StatusInfo) the binary hands in.

use std::collections::BTreeMap;

use axum::extract::State;
use serde::Serialize;

use crate::{AppState, Success, format_rfc3339};

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
    Success::new(ConfigBody {
        yaml: state.config().status.config_yaml.clone(),
    })
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
    Success::new(RuntimeInfo {
        start_time: started.clone(),
        cwd: std::env::current_dir()
            .map(|d| d.display().to_string())
            .unwrap_or_default(),
        hostname: hostname(),
        server_time: format_rfc3339(std::time::SystemTime::now()),
        reload_config_success: true,
        last_config_time: started,
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
}
