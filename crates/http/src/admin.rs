//! `POST|PUT /api/v1/admin/tsdb/delete_series`.

use axum::extract::State;
use axum::http::StatusCode;

use crate::{ApiError, AppState, MAX_TIME, MIN_TIME, Params, Tenant, parse_match_params, run_blocking, time_range};

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
}
