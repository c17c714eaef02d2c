//! The metadata endpoints: `/api/v1/series`, `/api/v1/labels` and
//! `/api/v1/label/{name}/values`.

use std::collections::BTreeSet;

use axum::extract::rejection::PathRejection;
use axum::extract::{Path, State};
use cairn_model::{Labels, Matcher};
use cairn_storage::SelectHints;
use serde::Serialize;
use serde::ser::SerializeSeq;

use crate::{
    ApiError, AppState, LabelsJson, MAX_TIME, Params, Success, Tenant, limit_param, parse_match_params, read_options,
    run_blocking, time_range, unescape_label_name,
};

/// The warning Prometheus adds when a `limit` cut the result.
pub const TRUNCATED_WARNING: &str = "results truncated due to limit";

/// A list of label sets serialised as label objects.
pub struct LabelSets(pub Vec<Labels>);

impl Serialize for LabelSets {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(Some(self.0.len()))?;
        for l in &self.0 {
            seq.serialize_element(&LabelsJson(l))?;
        }
        seq.end()
    }
}

/// What every metadata endpoint reads from its parameters.
struct MetadataRequest {
    sets: Vec<Vec<Matcher>>,
    start: i64,
    end: i64,
    limit: Option<usize>,
}

fn metadata_request(
    state: &AppState,
    params: &Params,
    require_match: bool,
    default_limit: Option<usize>,
) -> Result<MetadataRequest, ApiError> {
    let selectors = params.get_all("match[]");
    if require_match && selectors.is_empty() {
        return Err(ApiError::bad_data("no match[] parameter provided"));
    }
    let (start, end) = time_range(params, state.default_start(), MAX_TIME)?;
    let limit = limit_param(params)?.or(default_limit);
    let sets = parse_match_params(&selectors)?;
    Ok(MetadataRequest {
        sets,
        start,
        end,
        limit,
    })
}

/// Cuts `items` to `limit`, returning the truncation warning if it did.
fn truncate<T>(items: &mut Vec<T>, limit: Option<usize>) -> Vec<String> {
    match limit {
        Some(limit) if items.len() > limit => {
            items.truncate(limit);
            vec![TRUNCATED_WARNING.to_string()]
        }
        _ => Vec::new(),
    }
}

/// Runs a names or values lookup: one with `match[]` selects series, as a
/// query does, so it is admitted and runs as one ([`crate::QuerySlot::run`]);
/// one without reads the index only and is cheap.
async fn run_lookup<T, F>(state: &AppState, matched: bool, f: F) -> Result<T, ApiError>
where
    F: FnOnce() -> Result<T, ApiError> + Send + 'static,
    T: Send + 'static,
{
    if !matched {
        return run_blocking(f).await;
    }
    state.query_gate().admit().await?.run(f).await
}

/// `GET|POST /api/v1/series`: label sets of series matching any `match[]`
/// with samples in `[start, end]`, sorted and deduplicated.
pub async fn series(
    State(state): State<AppState>,
    Tenant(scope): Tenant,
    params: Params,
) -> Result<Success<LabelSets>, ApiError> {
    let req = metadata_request(&state, &params, true, state.config().default_series_limit)?;
    let options = read_options(&params)?;
    let storage = state.reader_with(&scope, &options)?;
    let slot = state.query_gate().admit().await?;
    slot.run(move || {
        let querier = storage.querier(req.start, req.end)?;
        let hints = SelectHints {
            labels_only: true,
            // One more than asked, to know whether the result was truncated.
            limit: req.limit.map(|l| l.saturating_add(1)),
            ..SelectHints::default()
        };
        // Each select is sorted and unique; only several `match[]` need merging.
        let mut list: Vec<Labels> = Vec::new();
        for set in &req.sets {
            for s in querier.select(&hints, set)? {
                list.push(s?.labels);
            }
        }
        if req.sets.len() > 1 {
            list.sort_unstable();
            list.dedup();
        }
        let mut warnings = truncate(&mut list, req.limit);
        warnings.extend(options.warnings.take());
        Ok(Success::with_warnings(LabelSets(list), warnings))
    })
    .await
}

/// `GET|POST /api/v1/labels`: sorted label names, of all series or of those
/// matching any `match[]`.
pub async fn labels(
    State(state): State<AppState>,
    Tenant(scope): Tenant,
    params: Params,
) -> Result<Success<Vec<String>>, ApiError> {
    let req = metadata_request(&state, &params, false, state.config().default_label_limit)?;
    let options = read_options(&params)?;
    let storage = state.reader_with(&scope, &options)?;
    run_lookup(&state, !req.sets.is_empty(), move || {
        let querier = storage.querier(req.start, req.end)?;
        let fetch = req.limit.map(|l| l.saturating_add(1));
        let mut names = if req.sets.is_empty() {
            querier.label_names(&[], fetch)?
        } else {
            let mut all = BTreeSet::new();
            for set in &req.sets {
                all.extend(querier.label_names(set, fetch)?);
            }
            all.into_iter().collect()
        };
        let mut warnings = truncate(&mut names, req.limit);
        warnings.extend(options.warnings.take());
        Ok(Success::with_warnings(names, warnings))
    })
    .await
}

/// `GET /api/v1/label/{name}/values`: sorted values of one label. `name` may
/// use Prometheus 3's `U__` escaping for UTF-8 names.
pub async fn label_values(
    State(state): State<AppState>,
    Tenant(scope): Tenant,
    path: Result<Path<String>, PathRejection>,
    params: Params,
) -> Result<Success<Vec<String>>, ApiError> {
    let Path(raw) = path.map_err(|e| ApiError::bad_data(e.body_text()))?;
    let name = unescape_label_name(&raw);
    if name.is_empty() {
        return Err(ApiError::bad_data(format!("invalid label name: {name:?}")));
    }
    let req = metadata_request(&state, &params, false, state.config().default_label_limit)?;
    let options = read_options(&params)?;
    let storage = state.reader_with(&scope, &options)?;
    run_lookup(&state, !req.sets.is_empty(), move || {
        let querier = storage.querier(req.start, req.end)?;
        let fetch = req.limit.map(|l| l.saturating_add(1));
        let mut values = if req.sets.is_empty() {
            querier.label_values(&name, &[], fetch)?
        } else {
            let mut all = BTreeSet::new();
            for set in &req.sets {
                all.extend(querier.label_values(&name, set, fetch)?);
            }
            all.into_iter().collect()
        };
        let mut warnings = truncate(&mut values, req.limit);
        warnings.extend(options.warnings.take());
        Ok(Success::with_warnings(values, warnings))
    })
    .await
}

#[cfg(test)]
mod tests {
    use crate::test_util::*;

    fn app() -> TestApp {
        let app = TestApp::new();
        app.write(&[
            ("up", "a", &[(1000, 1.0)]),
            ("up", "b", &[(2000, 1.0)]),
            ("node_cpu", "a", &[(3000, 1.0)]),
        ]);
        app
    }

    const UP_A: &str = r#"{"__name__":"up","job":"a"}"#;
    const UP_B: &str = r#"{"__name__":"up","job":"b"}"#;
    const CPU_A: &str = r#"{"__name__":"node_cpu","job":"a"}"#;

    fn ok(data: &str) -> String {
        format!(r#"{{"status":"success","data":{data}}}"#)
    }

    #[tokio::test]
    async fn series_get_and_post() {
        let app = app();
        let all = ok(&format!("[{CPU_A},{UP_A},{UP_B}]"));
        app.get("/api/v1/series?match[]=up&match[]={__name__=~\"node_.*\"}")
            .await
            .check(200, &all);
        app.post_form(
            "/api/v1/series",
            "match%5B%5D=up&match%5B%5D=%7B__name__%3D~%22node_.*%22%7D",
        )
        .await
        .check(200, &all);
        app.get("/prometheus/api/v1/series?match[]=up{job=\"b\"}")
            .await
            .check(200, &ok(&format!("[{UP_B}]")));
        // Overlapping selectors are deduplicated.
        app.get("/api/v1/series?match[]=up&match[]={job=\"a\"}")
            .await
            .check(200, &all);
        app.get("/api/v1/series?match[]=up&start=1.5&end=2")
            .await
            .check(200, &ok(&format!("[{UP_B}]")));
        app.get("/api/v1/series?match[]=up&start=1970-01-01T00:00:01.5Z&end=1970-01-01T01:00:02%2B01:00")
            .await
            .check(200, &ok(&format!("[{UP_B}]")));
        app.get("/api/v1/series?match[]=nothing").await.check(200, &ok("[]"));
    }

    #[tokio::test]
    async fn series_limit_warns() {
        let app = app();
        app.get("/api/v1/series?match[]={job=~\".%2B\"}&limit=2").await.check(
            200,
            &format!(r#"{{"status":"success","data":[{CPU_A},{UP_A}],"warnings":["results truncated due to limit"]}}"#),
        );
        app.get("/api/v1/series?match[]={job=~\".%2B\"}&limit=3")
            .await
            .check(200, &ok(&format!("[{CPU_A},{UP_A},{UP_B}]")));
    }

    #[tokio::test]
    async fn series_errors() {
        let app = app();
        app.get("/api/v1/series")
            .await
            .check_error(400, "bad_data", "no match[] parameter provided");
        app.get("/api/v1/series?match[]=up{").await.check_status(400);
        app.get("/api/v1/series?match[]=rate(up[5m])").await.check_status(400);
        app.get("/api/v1/series?match[]={job=~\".*\"}").await.check_status(400);
        app.get("/api/v1/series?match[]=up&start=foo").await.check_error(
            400,
            "bad_data",
            r#"invalid parameter "start": Invalid time value for 'start': cannot parse "foo" to a valid timestamp"#,
        );
        app.get("/api/v1/series?match[]=up&start=2&end=1").await.check_error(
            400,
            "bad_data",
            r#"invalid parameter "end": end timestamp must not be before start time"#,
        );
        app.get("/api/v1/series?match[]=up&limit=-1").await.check_status(400);
    }

    #[tokio::test]
    async fn labels_endpoint() {
        let app = app();
        app.get("/api/v1/labels").await.check(200, &ok(r#"["__name__","job"]"#));
        app.post_form("/api/v1/labels", "match[]=up&limit=1").await.check(
            200,
            r#"{"status":"success","data":["__name__"],"warnings":["results truncated due to limit"]}"#,
        );
        app.get("/prometheus/api/v1/labels?match[]=nothing")
            .await
            .check(200, &ok("[]"));
        app.get("/api/v1/labels?match[]=%7B").await.check_status(400);
    }

    #[tokio::test]
    async fn label_values_endpoint() {
        let app = app();
        app.get("/api/v1/label/__name__/values")
            .await
            .check(200, &ok(r#"["node_cpu","up"]"#));
        app.get("/api/v1/label/job/values?match[]=node_cpu")
            .await
            .check(200, &ok(r#"["a"]"#));
        app.get("/api/v1/label/job/values?match[]=up&match[]=node_cpu")
            .await
            .check(200, &ok(r#"["a","b"]"#));
        app.get("/api/v1/label/job/values?limit=1").await.check(
            200,
            r#"{"status":"success","data":["a"],"warnings":["results truncated due to limit"]}"#,
        );
        app.get("/prometheus/api/v1/label/missing/values")
            .await
            .check(200, &ok("[]"));
        // U__ escaping: U__jo_62_ is "job".
        app.get("/api/v1/label/U__jo_62_/values")
            .await
            .check(200, &ok(r#"["a","b"]"#));
        app.get("/api/v1/label/job/values?start=x").await.check_status(400);
    }
}
