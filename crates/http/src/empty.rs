//! Valid, empty answers for Prometheus endpoints whose features Cairn does
//! not have yet (rules, alerts, scrape targets, alertmanagers, exemplars), so
//! Grafana and other clients work unchanged. Parameters are validated as
//! Prometheus validates them.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use promql_parser::parser::{self, Expr};
use promql_parser::util::{ExprVisitor, walk_expr};
use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::json;

use crate::{ApiError, MAX_TIME, MIN_TIME, Params, Success, invalid_param, parse_match_params, time_param};

/// `GET /api/v1/rules`: `{"groups":[]}`. `type` must be `alert` or `record`
/// if given; `match[]` must parse.
pub async fn rules(params: Params) -> Result<Success<serde_json::Value>, ApiError> {
    if let Some(t) = params.get("type") {
        let t = t.to_ascii_lowercase();
        if t != "alert" && t != "record" {
            return Err(invalid_param("type", format!("not supported value {t:?}")));
        }
    }
    parse_match_params(&params.get_all("match[]"))?;
    Ok(Success::new(json!({ "groups": [] })))
}

/// `GET /api/v1/alerts`: `{"alerts":[]}`.
pub async fn alerts() -> Success<serde_json::Value> {
    Success::new(json!({ "alerts": [] }))
}

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
    let expr = parser::parse(params.get("query").unwrap_or("")).map_err(ApiError::bad_data)?;
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
}
