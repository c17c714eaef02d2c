//! `GET /api/v1/status/tsdb`: cardinality statistics in Prometheus' shape,
//! with VictoriaMetrics' parameters (`topN`, `date`, `match[]`,
//! `focusLabel`) and its extra lists.

use axum::extract::State;
use cairn_storage::{CardinalityQuery, TsdbStatus};
use serde::Serialize;

use crate::{
    ApiError, AppState, MAX_TIME, Params, Success, Tenant, parse_date, parse_match_params, run_blocking, time_range,
};

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct HeadStats {
    num_series: u64,
    num_label_pairs: u64,
    chunk_count: u64,
    min_time: i64,
    max_time: i64,
}

#[derive(Serialize)]
struct Stat {
    name: String,
    value: u64,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct StatusBody {
    head_stats: HeadStats,
    series_count_by_metric_name: Vec<Stat>,
    label_value_count_by_label_name: Vec<Stat>,
    memory_in_bytes_by_label_name: Vec<Stat>,
    series_count_by_label_value_pair: Vec<Stat>,
    // VictoriaMetrics' additions.
    total_series: u64,
    total_label_value_pairs: u64,
    series_count_by_label_name: Vec<Stat>,
    series_count_by_focus_label_value: Vec<Stat>,
}

fn stats(list: Vec<(String, u64)>) -> Vec<Stat> {
    list.into_iter().map(|(name, value)| Stat { name, value }).collect()
}

impl From<TsdbStatus> for StatusBody {
    fn from(s: TsdbStatus) -> Self {
        Self {
            head_stats: HeadStats {
                num_series: s.num_series,
                num_label_pairs: s.num_label_pairs,
                chunk_count: 0,
                // An empty head reports MaxInt64/MinInt64 in Prometheus.
                min_time: s.min_time.unwrap_or(i64::MAX),
                max_time: s.max_time.unwrap_or(i64::MIN),
            },
            series_count_by_metric_name: stats(s.series_count_by_metric_name),
            label_value_count_by_label_name: stats(s.label_value_count_by_label_name),
            memory_in_bytes_by_label_name: Vec::new(),
            series_count_by_label_value_pair: stats(s.series_count_by_label_value_pair),
            total_series: s.num_series,
            total_label_value_pairs: s.num_label_pairs,
            series_count_by_label_name: stats(s.series_count_by_label_name),
            series_count_by_focus_label_value: stats(s.series_count_by_focus_label_value),
        }
    }
}

/// `limit` (or VictoriaMetrics' `topN`; default 10, must be positive) cuts
/// each top list. The range is `date=YYYY-MM-DD` (one UTC day, as
/// VictoriaMetrics) or `start`/`end` (default: all time). `match[]` keeps
/// the series one of its selectors matches; `focusLabel` counts series by
/// that label's values.
pub async fn tsdb_status(
    State(state): State<AppState>,
    Tenant(scope): Tenant,
    params: Params,
) -> Result<Success<impl Serialize>, ApiError> {
    let limit = match params.get("limit").or_else(|| params.get("topN")) {
        None => 10,
        Some(v) => v
            .parse::<usize>()
            .ok()
            .filter(|&n| n > 0)
            .ok_or_else(|| ApiError::bad_data("limit must be a positive number"))?,
    };
    let (start, end) = match params.get("date") {
        Some(d) => {
            parse_date(d).ok_or_else(|| crate::invalid_param("date", format!("cannot parse {d:?} as YYYY-MM-DD")))?
        }
        None => time_range(&params, state.default_start(), MAX_TIME)?,
    };
    let query = CardinalityQuery {
        selectors: parse_match_params(&params.get_all("match[]"))?,
        focus_label: params.get("focusLabel").filter(|l| !l.is_empty()).map(String::from),
        ..CardinalityQuery::all(start, end, limit)
    };
    scope.only()?;
    let storage = state.reader(&scope)?;
    let status = run_blocking(move || Ok(storage.tsdb_status(&query)?)).await?;
    Ok(Success::new(StatusBody::from(status)))
}

#[cfg(test)]
mod tests {
    use crate::test_util::*;

    #[tokio::test]
    async fn tsdb_status_shape() {
        let app = TestApp::new();
        app.write(&[
            ("up", "a", &[(1000, 1.0)]),
            ("up", "b", &[(1000, 1.0)]),
            ("x", "a", &[(5000, 1.0)]),
        ]);
        let expected = r#"{"status":"success","data":{"headStats":{"numSeries":3,"numLabelPairs":4,"chunkCount":0,"minTime":9223372036854775807,"maxTime":-9223372036854775808},"seriesCountByMetricName":[{"name":"up","value":2},{"name":"x","value":1}],"labelValueCountByLabelName":[{"name":"__name__","value":2},{"name":"job","value":2}],"memoryInBytesByLabelName":[],"seriesCountByLabelValuePair":[{"name":"__name__=up","value":2},{"name":"job=a","value":2},{"name":"__name__=x","value":1},{"name":"job=b","value":1}],"totalSeries":3,"totalLabelValuePairs":4,"seriesCountByLabelName":[{"name":"__name__","value":3},{"name":"job","value":3}],"seriesCountByFocusLabelValue":[]}}"#;
        app.get("/api/v1/status/tsdb").await.check(200, expected);
        let limited = r#"{"status":"success","data":{"headStats":{"numSeries":2,"numLabelPairs":3,"chunkCount":0,"minTime":9223372036854775807,"maxTime":-9223372036854775808},"seriesCountByMetricName":[{"name":"up","value":2}],"labelValueCountByLabelName":[{"name":"job","value":2}],"memoryInBytesByLabelName":[],"seriesCountByLabelValuePair":[{"name":"__name__=up","value":2}],"totalSeries":2,"totalLabelValuePairs":3,"seriesCountByLabelName":[{"name":"__name__","value":2}],"seriesCountByFocusLabelValue":[]}}"#;
        app.get("/prometheus/api/v1/status/tsdb?limit=1&end=2")
            .await
            .check(200, limited);
        app.get("/api/v1/status/tsdb?date=1970-01-01&limit=1")
            .await
            .check_status(200);
    }

    /// VictoriaMetrics' parameters: `topN`, `match[]` (any of several) and `focusLabel`.
    #[tokio::test]
    async fn tsdb_status_selectors_and_focus_label() {
        let app = TestApp::new();
        app.write(&[
            ("up", "a", &[(1000, 1.0)]),
            ("up", "b", &[(1000, 1.0)]),
            ("x", "a", &[(1000, 1.0)]),
            ("y", "c", &[(1000, 1.0)]),
        ]);
        let body = app
            .get("/api/v1/status/tsdb?topN=5&match[]={job=%22a%22}&match[]=y&focusLabel=job")
            .await
            .body;
        let v: serde_json::Value = serde_json::from_str(&body).unwrap();
        let data = &v["data"];
        assert_eq!(data["totalSeries"], 3, "{body}");
        assert_eq!(data["headStats"]["numSeries"], 3, "{body}");
        assert_eq!(
            data["seriesCountByFocusLabelValue"],
            serde_json::json!([{"name": "a", "value": 2}, {"name": "c", "value": 1}]),
            "{body}"
        );
        app.get("/api/v1/status/tsdb?match[]=up{").await.check_status(400);
    }

    #[tokio::test]
    async fn tsdb_status_bad_params() {
        let app = TestApp::new();
        for q in ["limit=0", "limit=x", "limit=-3"] {
            app.get(&format!("/api/v1/status/tsdb?{q}")).await.check_error(
                400,
                "bad_data",
                "limit must be a positive number",
            );
        }
        app.get("/api/v1/status/tsdb?date=yesterday").await.check_status(400);
        app.get("/api/v1/status/tsdb?start=foo").await.check_status(400);
    }
}
