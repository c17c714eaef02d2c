//! OpenTSDB's HTTP write endpoint, `POST /api/put` (also under
//! `/opentsdb/`): one data point object or an array of them, gzip, deflate
//! or zstd by `Content-Encoding` (see `cairn_protocols::opentsdb`).
//!
//! Answers as OpenTSDB 2.x does: 204 when every point was stored; with
//! `?summary`, `{"success":n,"failed":m}`, and with `?details` also
//! `"errors":[{"datapoint":{...},"error":"..."}]`, status 200 when nothing
//! failed and 400 otherwise. Without either, failed points give a 400 in
//! Prometheus' error envelope naming the first. The good points of a body
//! are stored whatever happens to the bad ones. Points that storage drops
//! (out of retention, too far in the future) count as failed, without an
//! `errors` entry.

use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use cairn_protocols::opentsdb::{PutResult, decode_put};
use serde_json::json;

use crate::import::{decode_and_store, query_params, refuse};
use crate::ingest::{Protocol, Refusal, store_batch};
use crate::{ApiError, AppState};

pub async fn put(State(state): State<AppState>, req: Request) -> Response {
    let params = query_params(&req);
    // Flags: present at all (`?details`, no value) counts.
    let details = !params.get_all("details").is_empty();
    let summary = details || !params.get_all("summary").is_empty();
    match ingest(&state, req).await {
        Err(refusal) => refuse(&state, Protocol::OpenTsdb, refusal),
        Ok((result, dropped)) => {
            // Points storage dropped did not succeed either.
            let failed = result.import.bad_lines + dropped;
            let success = result.success.saturating_sub(dropped);
            if result.import.bad_lines > 0 {
                state
                    .metrics()
                    .ingest_samples_rejected(Protocol::OpenTsdb, "bad_line", result.import.bad_lines as u64);
            }
            if result.import.bad_lines > 0 && result.errors.is_empty() {
                // The body as a whole was not data points (not JSON, say).
                let message = result.import.first_error.map(|e| e.reason).unwrap_or_default();
                return refuse(&state, Protocol::OpenTsdb, ("bad_data", ApiError::bad_data(message)));
            }
            if summary {
                let status = if failed == 0 {
                    StatusCode::OK
                } else {
                    StatusCode::BAD_REQUEST
                };
                let mut body = json!({ "success": success, "failed": failed });
                if details {
                    body["errors"] = result
                        .errors
                        .into_iter()
                        .map(|(datapoint, error)| json!({ "datapoint": datapoint, "error": error }))
                        .collect();
                }
                return (status, axum::Json(body)).into_response();
            }
            match result.import.error_message() {
                None => StatusCode::NO_CONTENT.into_response(),
                Some(message) => refuse(&state, Protocol::OpenTsdb, ("bad_lines", ApiError::bad_data(message))),
            }
        }
    }
}

/// Decodes and stores a body; returns the decoded points and how many of
/// them storage dropped (out of retention, too far in the future).
async fn ingest(state: &AppState, req: Request) -> Result<(PutResult, usize), Refusal> {
    decode_and_store(
        state,
        req,
        |plain, limits| Ok(decode_put(plain, limits)),
        |state, tenant, result| {
            let report = store_batch(state, tenant, Protocol::OpenTsdb, &result.import.batch)?;
            Ok((result, report.rejected_total() as usize))
        },
    )
    .await
}

#[cfg(test)]
mod tests {
    use crate::test_util::*;

    const ONE: &str =
        r#"{"metric":"sys.cpu.nice","timestamp":1700000000,"value":18,"tags":{"host":"web01","dc":"lga"}}"#;
    const POINTS: &str = r#"[
        {"metric":"sys.cpu.nice","timestamp":1700000000,"value":18,"tags":{"host":"web01","dc":"lga"}},
        {"metric":"sys.cpu.nice","timestamp":1700000001000,"value":"9","tags":{"host":"web02","dc":"lga"}},
        {"metric":"sys.cpu.nice","timestamp":1700000000,"value":"NaN","tags":{"host":"web03"}}
    ]"#;

    #[tokio::test]
    async fn put_stores_good_points_and_answers_per_mode() {
        let app = TestApp::new();
        app.post("/api/put", ONE).await.check(204, "");
        app.post("/api/put?details", POINTS).await.check(
            400,
            r#"{"errors":[{"datapoint":{"metric":"sys.cpu.nice","tags":{"host":"web03"},"timestamp":1700000000,"value":"NaN"},"error":"invalid value \"NaN\""}],"failed":1,"success":2}"#,
        );
        app.post("/opentsdb/api/put?summary", POINTS)
            .await
            .check(400, r#"{"failed":1,"success":2}"#);
        app.post("/api/put", POINTS).await.check_error(
            400,
            "bad_data",
            "1 bad lines skipped (2 samples stored); first error at line 3: invalid value \"NaN\"",
        );
        app.post("/api/put?summary", "[]")
            .await
            .check(200, r#"{"failed":0,"success":0}"#);
        app.get("/api/v1/export?match[]={__name__=\"sys.cpu.nice\"}&start=0").await.check(
            200,
            concat!(
                r#"{"metric":{"__name__":"sys.cpu.nice","dc":"lga","host":"web01"},"values":[18],"timestamps":[1700000000000]}"#,
                "\n",
                r#"{"metric":{"__name__":"sys.cpu.nice","dc":"lga","host":"web02"},"values":[9],"timestamps":[1700000001000]}"#,
                "\n"
            ),
        );
    }

    #[tokio::test]
    async fn bodies_that_are_not_data_points_are_400() {
        let app = TestApp::new();
        app.post("/api/put?details", "{not json").await.check_status(400);
        app.post_raw("/api/put", &[("content-encoding", "br")], b"x".to_vec())
            .await
            .check_status(415);
    }
}
