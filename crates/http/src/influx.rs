//! InfluxDB's write API, so Telegraf and other Influx clients write to Cairn
//! unchanged (also under `/influx/`, as VictoriaMetrics serves it):
//!
//! - `POST /write` (1.x): `db` becomes the `db` label, `precision` (default
//!   ns) is the timestamp unit, `rp`, `u`, `p` and `consistency` are ignored.
//! - `POST /api/v2/write` (2.x): `precision` as above; `org` and `bucket` are
//!   accepted and ignored (VictoriaMetrics adds no label for them either).
//! - `GET|HEAD /ping` → 204, as InfluxDB answers health checks.
//! - `/query` answers `CREATE DATABASE` (a no-op: a database is only a
//!   label here), which Telegraf sends at startup; other InfluxQL is refused.
//!
//! Bodies: line protocol (see `cairn_protocols::influx`), gzip, deflate or
//! zstd by `Content-Encoding`. Answers follow the import rules: 204 when all
//! lines were stored, 400 naming the bad lines after storing the good ones.
//! String fields are skipped and counted under
//! `cairn_ingest_samples_rejected_total{protocol="influx",reason="string_field"}`.

use axum::extract::{Request, State};
use axum::http::{HeaderName, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use cairn_protocols::influx::{self, InfluxOptions, Precision};
use cairn_protocols::text_import::BodyError;

use crate::import::{query_params, respond};
use crate::ingest::Protocol;
use crate::{ApiError, AppState, Params, now_ms, read_body};

/// The version `/ping` reports: Cairn's, so clients that print it tell the
/// truth about what they talk to.
const VERSION_HEADER: &str = concat!("cairn-", env!("CARGO_PKG_VERSION"));

pub async fn write_v1(State(state): State<AppState>, req: Request) -> Response {
    let params = query_params(&req);
    let db = params.get("db").map(str::to_string);
    write(state, req, params, db).await
}

pub async fn write_v2(State(state): State<AppState>, req: Request) -> Response {
    let params = query_params(&req);
    write(state, req, params, None).await
}

async fn write(state: AppState, req: Request, params: Params, db: Option<String>) -> Response {
    let precision = params.get("precision").unwrap_or_default().to_string();
    respond(
        &state,
        Protocol::Influx,
        req,
        move |extra_labels| {
            let precision = Precision::parse(&precision).ok_or_else(|| {
                BodyError::BadFormat(format!("invalid precision {precision:?}: want ns, us, ms, s, m or h"))
            })?;
            let opts = InfluxOptions {
                precision,
                db,
                extra_labels,
                now_ms: now_ms(),
            };
            Ok(Box::new(move |body, limits| {
                Ok(influx::decode_influx(body, &opts, limits))
            }))
        },
        &params,
    )
    .await
}

pub async fn ping() -> Response {
    (
        StatusCode::NO_CONTENT,
        [(
            HeaderName::from_static("x-influxdb-version"),
            HeaderValue::from_static(VERSION_HEADER),
        )],
    )
        .into_response()
}

/// `GET|POST /query?q=...`: only `CREATE DATABASE` succeeds. A GET without
/// `q` is a browser opening the web UI's query page.
pub async fn query(State(state): State<AppState>, req: Request) -> Response {
    let mut params = query_params(&req);
    if req.method() == axum::http::Method::GET && params.get("q").is_none() {
        let path = req
            .extensions()
            .get::<axum::extract::OriginalUri>()
            .map_or_else(|| req.uri().path().to_string(), |uri| uri.path().to_string());
        return crate::ui::page_at(&state, &path);
    }
    let is_form = req
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"application/x-www-form-urlencoded"));
    if is_form {
        match read_body(req, &state).await {
            Ok(body) => params.extend_encoded(&body),
            Err(e) => return e.into_response(),
        }
    }
    let q = params.get("q").unwrap_or_default();
    let statements: Vec<&str> = q.split(';').map(str::trim).filter(|s| !s.is_empty()).collect();
    let creates_only = !statements.is_empty()
        && statements.iter().all(|s| {
            let words: Vec<&str> = s.split_ascii_whitespace().take(2).collect();
            words.len() == 2 && words[0].eq_ignore_ascii_case("CREATE") && words[1].eq_ignore_ascii_case("DATABASE")
        });
    if !creates_only {
        return ApiError::bad_data(format!(
            "InfluxQL is not supported (only CREATE DATABASE, a no-op); query with PromQL at /api/v1/query: {:?}",
            q.chars().take(128).collect::<String>()
        ))
        .into_response();
    }
    let results: Vec<serde_json::Value> = (0..statements.len())
        .map(|i| serde_json::json!({ "statement_id": i }))
        .collect();
    axum::Json(serde_json::json!({ "results": results })).into_response()
}

#[cfg(test)]
mod tests {
    use crate::test_util::*;

    #[tokio::test]
    async fn v1_write_with_db_and_precision() {
        let app = TestApp::new();
        app.post(
            "/write?db=telegraf&precision=s",
            "cpu,host=a usage=1.5,idle=2i 1700000000\n",
        )
        .await
        .check(204, "");
        app.get("/api/v1/export?match[]={db=\"telegraf\"}").await.check(
            200,
            concat!(
                r#"{"metric":{"__name__":"cpu_idle","db":"telegraf","host":"a"},"values":[2],"timestamps":[1700000000000]}"#,
                "\n",
                r#"{"metric":{"__name__":"cpu_usage","db":"telegraf","host":"a"},"values":[1.5],"timestamps":[1700000000000]}"#,
                "\n"
            ),
        );
    }

    #[tokio::test]
    async fn v2_write_ignores_org_and_bucket_and_prefix_works() {
        let app = TestApp::new();
        for path in ["/api/v2/write", "/influx/api/v2/write"] {
            app.post(&format!("{path}?org=o&bucket=b&precision=ms"), "m v=1 1000\n")
                .await
                .check(204, "");
        }
        app.get("/api/v1/series?match[]=m_v")
            .await
            .check(200, r#"{"status":"success","data":[{"__name__":"m_v"}]}"#);
    }

    #[tokio::test]
    async fn bad_lines_and_string_fields() {
        let app = TestApp::new();
        app.post("/write", "m v=1 1000000\nm v=oops 1000000\nlog msg=\"x\" 1000000\n")
            .await
            .check_error(
                400,
                "bad_data",
                "1 bad lines skipped (1 samples stored); first error at line 2: field \"v\": invalid value \"oops\"",
            );
        let metrics = app.get("/metrics").await.body;
        for want in [
            r#"cairn_ingest_samples_rejected_total{protocol="influx",reason="string_field"} 1"#,
            r#"cairn_ingest_samples_rejected_total{protocol="influx",reason="bad_line"} 1"#,
            r#"cairn_ingest_samples_total{protocol="influx"} 1"#,
        ] {
            assert!(metrics.contains(want), "{want} in\n{metrics}");
        }
        app.post("/write?precision=d", "m v=1").await.check_error(
            400,
            "bad_data",
            "invalid precision \"d\": want ns, us, ms, s, m or h",
        );
    }

    #[tokio::test]
    async fn ping_and_query() {
        let app = TestApp::new();
        let pong = app.get("/ping").await;
        assert_eq!(pong.status, 204);
        app.post_form("/query", "q=CREATE+DATABASE+telegraf")
            .await
            .check(200, r#"{"results":[{"statement_id":0}]}"#);
        app.get("/query?q=create%20database%20x%3B%20CREATE%20DATABASE%20y")
            .await
            .check(200, r#"{"results":[{"statement_id":0},{"statement_id":1}]}"#);
        let refused = app.get("/query?q=SELECT%20*%20FROM%20cpu").await;
        assert_eq!(refused.status, 400);
    }
}
