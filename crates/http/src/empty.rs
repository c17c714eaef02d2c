//! Valid, empty answers for Prometheus endpoints whose features Cairn does
//! not have (exemplars, notifications, relabel steps) or, for targets and
//! Alertmanagers, runs only with `--config.file` (monitoring.rs), so Grafana
//! and other clients work unchanged. Parameters are validated as Prometheus
//! validates them.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use promql_parser::parser::Expr;
use promql_parser::util::{ExprVisitor, walk_expr};
use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::json;

use crate::{ApiError, MAX_TIME, MIN_TIME, Params, Success, time_param};

/// `GET /api/v1/targets`: no active or dropped targets. As Prometheus,
/// `droppedTargetCounts` is `{}` when dropped targets are shown (`state`
/// absent, `any` or `dropped`), else `null`.
pub async fn targets(params: Params) -> Success<impl Serialize> {
    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    struct TargetDiscovery {
        active_targets: [(); 0],
        dropped_targets: [(); 0],
        dropped_target_counts: Option<BTreeMap<String, usize>>,
    }
    let state = params.get("state").unwrap_or("").to_ascii_lowercase();
    let show_dropped = matches!(state.as_str(), "" | "any" | "dropped");
    Success::new(TargetDiscovery {
        active_targets: [],
        dropped_targets: [],
        dropped_target_counts: show_dropped.then(BTreeMap::new),
    })
}

/// `GET /api/v1/alertmanagers`.
pub async fn alertmanagers() -> Success<impl Serialize> {
    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    struct AlertmanagerDiscovery {
        active_alertmanagers: [(); 0],
        dropped_alertmanagers: [(); 0],
    }
    Success::new(AlertmanagerDiscovery {
        active_alertmanagers: [],
        dropped_alertmanagers: [],
    })
}

/// `GET|POST /api/v1/query_exemplars`: `[]` (Cairn stores no exemplars yet)
/// after Prometheus' checks; 204 when the query has no selector, as Prometheus.
pub async fn query_exemplars(params: Params) -> Result<Response, ApiError> {
    let start = time_param(&params, "start", MIN_TIME)?;
    let end = time_param(&params, "end", MAX_TIME)?;
    if end < start {
        return Err(ApiError::bad_data("end timestamp must not be before start timestamp"));
    }
    let expr = cairn_promql::parse(params.get("query").unwrap_or("")).map_err(|e| ApiError::bad_data(e.to_string()))?;
    if !has_selector(&expr) {
        return Ok(StatusCode::NO_CONTENT.into_response());
    }
    Ok(Success::new(json!([])).into_response())
}

fn has_selector(expr: &Expr) -> bool {
    struct Find(bool);
    impl ExprVisitor for Find {
        type Error = std::convert::Infallible;
        fn pre_visit(&mut self, e: &Expr) -> Result<bool, Self::Error> {
            if matches!(e, Expr::VectorSelector(_) | Expr::MatrixSelector(_)) {
                self.0 = true;
                return Ok(false);
            }
            Ok(true)
        }
    }
    let mut f = Find(false);
    let _ = walk_expr(&mut f, expr);
    f.0
}

/// `GET /api/v1/targets/relabel_steps`: Prometheus' errors for a missing
/// parameter, and for the pool, which cannot exist without scraping.
pub async fn targets_relabel_steps(params: Params) -> Result<Success<serde_json::Value>, ApiError> {
    let pool = params
        .get("scrapePool")
        .filter(|p| !p.is_empty())
        .ok_or_else(|| ApiError::bad_data("no scrapePool parameter provided"))?;
    let labels = params
        .get("labels")
        .filter(|l| !l.is_empty())
        .ok_or_else(|| ApiError::bad_data("no labels parameter provided"))?;
    serde_json::from_str::<BTreeMap<String, String>>(labels)
        .map_err(|e| ApiError::bad_data(format!("error parsing labels: {e}")))?;
    Err(ApiError::bad_data(format!(
        "error retrieving scrape config: scrape pool {pool:?} not found"
    )))
}

/// `GET /api/v1/notifications`: `[]`.
pub async fn notifications() -> Success<serde_json::Value> {
    Success::new(json!([]))
}

/// `GET /api/v1/notifications/live`: a server-sent event stream that stays
/// open and, Cairn raising no notifications yet, sends none.
pub async fn notifications_live() -> Response {
    struct Silent;
    impl futures_core::Stream for Silent {
        type Item = Result<axum::body::Bytes, std::convert::Infallible>;
        fn poll_next(
            self: std::pin::Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
        ) -> std::task::Poll<Option<Self::Item>> {
            // Never ready: the stream ends when the client goes away.
            std::task::Poll::Pending
        }
    }
    (
        [
            (axum::http::header::CONTENT_TYPE, "text/event-stream"),
            (axum::http::header::CACHE_CONTROL, "no-cache"),
        ],
        axum::body::Body::from_stream(Silent),
    )
        .into_response()
}

/// `GET|POST /api/v1/search/*`: Prometheus' answer with its search API off
/// (its default), which Cairn does not have.
pub async fn search_disabled() -> ApiError {
    ApiError::new(crate::ErrorType::Unavailable, "search API disabled")
}

#[cfg(test)]
mod tests {
    use crate::test_util::*;

    #[tokio::test]
    async fn rules_and_alerts() {
        let app = TestApp::new();
        for path in [
            "/api/v1/rules",
            "/prometheus/api/v1/rules",
            "/api/v1/rules?type=alert&match[]=up",
        ] {
            app.get(path)
                .await
                .check(200, r#"{"status":"success","data":{"groups":[]}}"#);
        }
        app.get("/api/v1/rules?type=x").await.check_error(
            400,
            "bad_data",
            r#"invalid parameter "type": not supported value "x""#,
        );
        app.get("/api/v1/alerts")
            .await
            .check(200, r#"{"status":"success","data":{"alerts":[]}}"#);
    }

    #[tokio::test]
    async fn targets_and_alertmanagers() {
        let app = TestApp::new();
        app.get("/api/v1/targets").await.check(
            200,
            r#"{"status":"success","data":{"activeTargets":[],"droppedTargets":[],"droppedTargetCounts":{}}}"#,
        );
        app.get("/api/v1/targets?state=active").await.check(
            200,
            r#"{"status":"success","data":{"activeTargets":[],"droppedTargets":[],"droppedTargetCounts":null}}"#,
        );
        app.get("/prometheus/api/v1/alertmanagers").await.check(
            200,
            r#"{"status":"success","data":{"activeAlertmanagers":[],"droppedAlertmanagers":[]}}"#,
        );
    }

    #[tokio::test]
    async fn exemplars() {
        let app = TestApp::new();
        let empty = r#"{"status":"success","data":[]}"#;
        app.get("/api/v1/query_exemplars?query=rate(http_requests_total[5m])&start=0&end=60")
            .await
            .check(200, empty);
        app.post_form("/prometheus/api/v1/query_exemplars", "query=up")
            .await
            .check(200, empty);
        app.get("/api/v1/query_exemplars?query=1%2B1").await.check(204, "");
        app.get("/api/v1/query_exemplars?query=up&start=10&end=5")
            .await
            .check_error(400, "bad_data", "end timestamp must not be before start timestamp");
        app.get("/api/v1/query_exemplars?query=up&start=x").await.check_error(
            400,
            "bad_data",
            r#"invalid parameter "start": Invalid time value for 'start': cannot parse "x" to a valid timestamp"#,
        );
        let resp = app.get("/api/v1/query_exemplars?query=sum(").await;
        resp.check_status(400);
        assert!(resp.body.contains(r#""errorType":"bad_data""#), "{}", resp.body);
    }

    #[tokio::test]
    async fn scrape_pools_target_metadata_relabel_steps_and_notifications() {
        let app = TestApp::new();
        app.get("/api/v1/scrape_pools")
            .await
            .check(200, r#"{"status":"success","data":{"scrapePools":[]}}"#);
        for path in [
            "/api/v1/targets/metadata",
            "/api/v1/targets/metadata?match_target={job=\"x\"}&metric=up&limit=5",
        ] {
            app.get(path).await.check(200, r#"{"status":"success","data":[]}"#);
        }
        app.get("/api/v1/targets/metadata?limit=x")
            .await
            .check_error(400, "bad_data", "limit must be a number");
        app.get("/api/v1/targets/metadata?match_target={")
            .await
            .check_status(400);
        app.get("/api/v1/targets/relabel_steps")
            .await
            .check_error(400, "bad_data", "no scrapePool parameter provided");
        app.get("/api/v1/targets/relabel_steps?scrapePool=x").await.check_error(
            400,
            "bad_data",
            "no labels parameter provided",
        );
        app.get("/api/v1/targets/relabel_steps?scrapePool=x&labels={}")
            .await
            .check_error(
                400,
                "bad_data",
                r#"error retrieving scrape config: scrape pool "x" not found"#,
            );
        app.get("/api/v1/notifications")
            .await
            .check(200, r#"{"status":"success","data":[]}"#);
        let live = app.request(
            axum::http::Request::get("/api/v1/notifications/live")
                .body(axum::body::Body::empty())
                .unwrap(),
        );
        let open = tokio::time::timeout(std::time::Duration::from_millis(200), live).await;
        assert!(open.is_err(), "the event stream stays open");
        app.get("/api/v1/search/metric_names")
            .await
            .check_error(503, "unavailable", "search API disabled");
    }
}
