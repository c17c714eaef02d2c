//! `POST|PUT /api/v1/admin/tsdb/delete_series` and `/api/v1/admin/tsdb/snapshot`.

use axum::extract::State;
use axum::http::StatusCode;

use std::hash::BuildHasher;
use std::time::{SystemTime, UNIX_EPOCH};

use cairn_model::civil::civil_from_days;
use serde::Serialize;

use crate::{
    ApiError, AppState, MAX_TIME, MIN_TIME, Params, Success, Tenant, parse_bool, parse_match_params, run_blocking,
    time_range,
};

/// Deletes samples of every series matching any `match[]` in `[start, end]`
/// (default: all time). 204 on success, like Prometheus.
pub async fn delete_series(
    State(state): State<AppState>,
    Tenant(scope): Tenant,
    params: Params,
) -> Result<StatusCode, ApiError> {
    let selectors = params.get_all("match[]");
    if selectors.is_empty() {
        return Err(ApiError::bad_data("no match[] parameter provided"));
    }
    let (start, end) = time_range(&params, MIN_TIME, MAX_TIME)?;
    let sets = parse_match_params(&selectors)?;
    scope.only()?;
    let storage = state.reader(&scope)?;
    run_blocking(move || {
        for set in &sets {
            storage.delete_series(set, start, end)?;
        }
        Ok(())
    })
    .await?;
    Ok(StatusCode::NO_CONTENT)
}

#[derive(Serialize)]
pub struct SnapshotCreated {
    name: String,
}

/// Puts a consistent, hard-linked copy of every tenant's data in
/// `snapshots/<name>/` of the data directory and answers its name.
/// `skip_head=true` leaves out what is still in memory.
pub async fn snapshot(State(state): State<AppState>, params: Params) -> Result<Success<SnapshotCreated>, ApiError> {
    let skip_head = match params.get("skip_head") {
        Some(v) => {
            parse_bool(v).ok_or_else(|| ApiError::bad_data(format!("unable to parse boolean skip_head {v:?}")))?
        }
        None => false,
    };
    let name = snapshot_name(SystemTime::now());
    let tenants = state.tenants().clone();
    let name = run_blocking(move || Ok(tenants.snapshot(&name, skip_head).map(|_| name)?)).await?;
    Ok(Success::new(SnapshotCreated { name }))
}

/// `<UTC time as 20060102T150405Z>-<16 random hex digits>`, as Prometheus
/// names snapshots: sortable by time, unique among snapshots taken at once.
fn snapshot_name(now: SystemTime) -> String {
    let since_epoch = now.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = since_epoch.as_secs() as i64;
    let (year, month, day) = civil_from_days(secs.div_euclid(86_400));
    let of_day = secs.rem_euclid(86_400);
    let random = std::collections::hash_map::RandomState::new().hash_one(since_epoch.as_nanos());
    format!(
        "{year:04}{month:02}{day:02}T{:02}{:02}{:02}Z-{random:016x}",
        of_day / 3600,
        of_day / 60 % 60,
        of_day % 60
    )
}

#[cfg(test)]
mod tests {
    use crate::test_util::*;

    #[tokio::test]
    async fn delete_series_removes_matching_data() {
        let app = TestApp::new();
        app.write(&[("up", "a", &[(1000, 1.0), (2000, 2.0)]), ("up", "b", &[(1000, 1.0)])]);
        app.post_form("/api/v1/admin/tsdb/delete_series", "match[]=up{job=\"a\"}&start=1.5")
            .await
            .check(204, "");
        app.get("/api/v1/export?match[]=up").await.check(
            200,
            "{\"metric\":{\"__name__\":\"up\",\"job\":\"a\"},\"values\":[1],\"timestamps\":[1000]}\n\
                 {\"metric\":{\"__name__\":\"up\",\"job\":\"b\"},\"values\":[1],\"timestamps\":[1000]}\n",
        );
        app.put_form("/prometheus/api/v1/admin/tsdb/delete_series", "match[]=up")
            .await
            .check(204, "");
        app.get("/api/v1/series?match[]=up")
            .await
            .check(200, r#"{"status":"success","data":[]}"#);
    }

    #[tokio::test]
    async fn delete_series_errors() {
        let app = TestApp::new();
        app.post_form("/api/v1/admin/tsdb/delete_series", "").await.check_error(
            400,
            "bad_data",
            "no match[] parameter provided",
        );
        app.post_form("/api/v1/admin/tsdb/delete_series", "match[]=up{")
            .await
            .check_status(400);
        app.get("/api/v1/admin/tsdb/delete_series?match[]=up")
            .await
            .check_status(405);
    }

    #[tokio::test]
    async fn snapshot_answers_errors_and_methods() {
        let app = TestApp::new();
        // The in-memory test storage has no directory to snapshot.
        app.post_form("/api/v1/admin/tsdb/snapshot", "").await.check_error(
            400,
            "bad_data",
            "invalid argument: snapshots are not supported by this storage (in cluster mode, snapshot each node)",
        );
        app.post_form("/api/v1/admin/tsdb/snapshot", "skip_head=maybe")
            .await
            .check_status(400);
        app.get("/api/v1/admin/tsdb/snapshot").await.check_status(405);
    }

    #[test]
    fn snapshot_names_sort_by_time() {
        let at = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_512_940_344);
        let name = super::snapshot_name(at);
        assert_eq!(&name[..17], "20171210T211224Z-");
        assert_eq!(name.len(), 33);
        assert!(name[17..].bytes().all(|b| b.is_ascii_hexdigit()));
    }
}
