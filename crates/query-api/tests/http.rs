use std::sync::Arc;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use cairn_http::{ApiConfig, AppState};
use cairn_model::{Labels, Sample, stale_nan};
use cairn_storage::{Appendable, MemStorage};
use tower::ServiceExt;

fn app() -> axum::Router {
    app_with(cairn_query_api::EngineOptions::default())
}

fn app_with(options: cairn_query_api::EngineOptions) -> axum::Router {
    let mem = MemStorage::new();
    let mut a = mem.appender();
    let l = Labels::from_pairs([("__name__", "up"), ("job", "a")]);
    a.append(
        &l,
        &[
            Sample::new(0, 1.0),
            Sample::new(60_000, 0.0000001),
            Sample::new(120_000, stale_nan()),
        ],
    )
    .unwrap();
    a.commit().unwrap();
    let state = AppState::new(
        Arc::new(cairn_storage::MemTenants::with_default(mem)),
        ApiConfig::default(),
    );
    cairn_http::router_with(state, cairn_query_api::routes(options))
}

async fn send(req: Request<Body>) -> (StatusCode, String) {
    send_to(app(), req).await
}

async fn send_to(app: axum::Router, req: Request<Body>) -> (StatusCode, String) {
    let resp = app.oneshot(req).await.unwrap();
    let status = resp.status();
    let body = axum::body::to_bytes(resp.into_body(), usize::MAX).await.unwrap();
    (status, String::from_utf8(body.to_vec()).unwrap())
}

async fn get(uri: &str) -> (StatusCode, String) {
    send(Request::get(uri).body(Body::empty()).unwrap()).await
}

#[tokio::test]
async fn instant_query_vector() {
    let (s, b) = get("/api/v1/query?query=up&time=60").await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(
        b,
        r#"{"status":"success","data":{"resultType":"vector","result":[{"metric":{"__name__":"up","job":"a"},"value":[60,"1e-07"]}]}}"#
    );
    // Stale marker ends the series.
    let (_, b) = get("/prometheus/api/v1/query?query=up&time=150.5").await;
    assert_eq!(b, r#"{"status":"success","data":{"resultType":"vector","result":[]}}"#);
}

#[tokio::test]
async fn scalar_and_string() {
    // Scalars and strings carry their time as a plain JSON number (Go's
    // encoding of float64), unlike samples' fixed three decimals.
    let (_, b) = get("/api/v1/query?query=1%2B1&time=1.5").await;
    assert_eq!(
        b,
        r#"{"status":"success","data":{"resultType":"scalar","result":[1.5,"2"]}}"#
    );
    let (_, b) = get("/api/v1/query?query=%22x%22&time=2.25").await;
    assert_eq!(
        b,
        r#"{"status":"success","data":{"resultType":"string","result":[2.25,"x"]}}"#
    );
    let (_, b) = get("/api/v1/query?query=%22x%22&time=2").await;
    assert_eq!(
        b,
        r#"{"status":"success","data":{"resultType":"string","result":[2,"x"]}}"#
    );
}

#[tokio::test]
async fn range_query_post_form() {
    let req = Request::post("/api/v1/query_range")
        .header("content-type", "application/x-www-form-urlencoded")
        .body(Body::from("query=up*2&start=0&end=120&step=1m"))
        .unwrap();
    let (s, b) = send(req).await;
    assert_eq!(s, StatusCode::OK, "{b}");
    assert_eq!(
        b,
        r#"{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"job":"a"},"values":[[0,"2"],[60,"2e-07"]]}]}}"#
    );
}

#[tokio::test]
async fn errors() {
    let (s, b) = get("/api/v1/query?query=sum(").await;
    assert_eq!(s, StatusCode::BAD_REQUEST, "{b}");
    assert!(
        b.starts_with(r#"{"status":"error","errorType":"bad_data","error":"invalid parameter \"query\""#),
        "{b}"
    );
    let (s, b) = get("/api/v1/query_range?query=up&start=0&end=100000&step=1").await;
    assert_eq!(s, StatusCode::BAD_REQUEST, "{b}");
    assert!(b.contains("11,000 points"), "{b}");
    let (s, _) = get("/api/v1/query_range?query=up&start=10&end=0&step=1").await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
    let (s, b) = get("/api/v1/query?query=up%20%2B%20on()%20group_left%20up&time=0").await;
    assert_eq!(s, StatusCode::OK, "{b}");
}

#[tokio::test]
async fn format() {
    let (s, b) = get("/api/v1/format_query?query=sum%20by(job)(up)").await;
    assert_eq!(s, StatusCode::OK);
    assert!(b.starts_with(r#"{"status":"success","data":"sum by"#), "{b}");
}

#[tokio::test]
async fn engine_options_are_applied() {
    let get_with = |options, uri: &str| send_to(app_with(options), Request::get(uri).body(Body::empty()).unwrap());
    let few_samples = cairn_query_api::EngineOptions {
        max_samples: 1,
        ..Default::default()
    };
    let (s, b) = get_with(few_samples, "/api/v1/query?query=count_over_time(up[2m])&time=60").await;
    assert_eq!(
        (s, b.as_str()),
        (
            StatusCode::UNPROCESSABLE_ENTITY,
            r#"{"status":"error","errorType":"execution","error":"query processing would load too many samples into memory in query execution"}"#
        )
    );
    let no_series = cairn_query_api::EngineOptions {
        max_series: 0,
        ..Default::default()
    };
    let (s, _) = get_with(no_series, "/api/v1/query?query=up&time=60").await;
    assert_eq!(s, StatusCode::OK);
    let short_lookback = cairn_query_api::EngineOptions {
        lookback_delta: std::time::Duration::from_secs(30),
        ..Default::default()
    };
    let (_, b) = get_with(short_lookback, "/api/v1/query?query=up&time=100").await;
    assert_eq!(b, r#"{"status":"success","data":{"resultType":"vector","result":[]}}"#);
    let no_time = cairn_query_api::EngineOptions {
        timeout: std::time::Duration::ZERO,
        ..Default::default()
    };
    let (s, b) = get_with(no_time, "/api/v1/query?query=up&time=60").await;
    assert_eq!(
        (s, b.as_str()),
        (
            StatusCode::SERVICE_UNAVAILABLE,
            r#"{"status":"error","errorType":"timeout","error":"query timed out in expression evaluation"}"#
        )
    );
}

#[tokio::test]
async fn parse_query() {
    let (s, b) = get("/api/v1/parse_query?query=up%7Bjob%3D%22a%22%7D").await;
    assert_eq!(
        (s, b.as_str()),
        (
            StatusCode::OK,
            r#"{"status":"success","data":{"anchored":false,"matchers":[{"name":"job","type":"=","value":"a"},{"name":"__name__","type":"=","value":"up"}],"name":"up","offset":0,"offsetExpr":null,"smoothed":false,"startOrEnd":null,"timestamp":null,"type":"vectorSelector"}}"#
        )
    );
    let req = Request::post("/prometheus/api/v1/parse_query")
        .header("content-type", "application/x-www-form-urlencoded")
        .body(Body::from("query=-1"))
        .unwrap();
    let (s, b) = send(req).await;
    assert_eq!(
        (s, b.as_str()),
        (
            StatusCode::OK,
            r#"{"status":"success","data":{"type":"numberLiteral","val":"-1"}}"#
        )
    );
    let (s, b) = get("/api/v1/parse_query?query=sum(").await;
    assert_eq!(s, StatusCode::BAD_REQUEST, "{b}");
    assert!(
        b.starts_with(r#"{"status":"error","errorType":"bad_data","error":"invalid parameter \"query\""#),
        "{b}"
    );
}

#[tokio::test]
async fn features_are_answered_by_the_engine() {
    let (s, b) = get("/api/v1/features").await;
    assert_eq!(s, StatusCode::OK);
    let v: serde_json::Value = serde_json::from_str(&b).unwrap();
    let d = &v["data"];
    assert_eq!(d["promql_functions"]["rate"], true);
    assert_eq!(d["promql_functions"]["mad_over_time"], true);
    assert_eq!(d["promql_functions"]["info"], true);
    assert_eq!(d["promql_functions"]["histogram_quantiles"], true);
    assert_eq!(d["promql_functions"]["start_timestamp"], false);
    assert_eq!(d["promql_operators"]["limitk"], true);
    assert_eq!(d["promql_operators"]["</"], true);
    assert_eq!(d["promql"]["anchored"], true);
    assert_eq!(d["promql"]["smoothed"], true);
    assert_eq!(d["api"]["remote_write_receiver"], true);
    assert_eq!(d["tsdb"]["native_histograms"], true);
    assert_eq!(d["promql"]["fill_left"], true);
}

/// With every query slot taken and no queue, a query is refused at once
/// with a retryable 503; a malformed one is still a 400 (checked before
/// waiting); once the slot is free, queries run again and leave none held.
#[tokio::test]
async fn queries_past_the_admission_are_refused_with_503() {
    let mem = MemStorage::new();
    let state = AppState::new(
        Arc::new(cairn_storage::MemTenants::with_default(mem)),
        ApiConfig {
            query_admission: cairn_http::AdmissionConfig {
                max_concurrency: 1,
                max_queue_length: 0,
                max_queue_wait: std::time::Duration::from_secs(60),
            },
            ..ApiConfig::default()
        },
    );
    let gate = state.query_gate().clone();
    let app = cairn_http::router_with(state, cairn_query_api::routes(Default::default()));
    let held = gate.admit().await.unwrap();
    for uri in [
        "/api/v1/query?query=1",
        "/api/v1/query_range?query=1&start=0&end=60&step=15",
    ] {
        let resp = app
            .clone()
            .oneshot(Request::get(uri).body(Body::empty()).unwrap())
            .await
            .unwrap();
        assert_eq!(resp.status(), StatusCode::SERVICE_UNAVAILABLE, "{uri}");
        assert_eq!(resp.headers()["retry-after"], "5");
        let body = axum::body::to_bytes(resp.into_body(), usize::MAX).await.unwrap();
        let body = String::from_utf8(body.to_vec()).unwrap();
        assert!(body.contains(r#""errorType":"unavailable""#), "{body}");
        assert!(body.contains("too many concurrent queries"), "{body}");
    }
    let (s, _) = send_to(
        app.clone(),
        Request::get("/api/v1/query?query=sum(").body(Body::empty()).unwrap(),
    )
    .await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
    drop(held);
    let (s, _) = send_to(app, Request::get("/api/v1/query?query=1").body(Body::empty()).unwrap()).await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!((gate.running(), gate.waiting()), (0, 0));
}

/// A range query answered twice over a window moved on, through the
/// results cache and with `nocache=1`.
async fn cached_and_not(app: &axum::Router, query: &str, start: i64, end: i64) -> (Option<i64>, String, String) {
    let uri = |extra: &str| {
        format!(
            "/api/v1/query_range?query={}&start={}&end={}&step=60{extra}",
            query.replace('+', "%2B").replace(' ', "+"),
            start / 1000,
            end / 1000
        )
    };
    let resp = app
        .clone()
        .oneshot(Request::get(uri("")).body(Body::empty()).unwrap())
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    let cached = resp
        .headers()
        .get(cairn_query_api::CACHED_STEPS_HEADER)
        .map(|v| v.to_str().unwrap().parse().unwrap());
    let body = axum::body::to_bytes(resp.into_body(), usize::MAX).await.unwrap();
    let (_, uncached) = send_to(
        app.clone(),
        Request::get(uri("&nocache=1")).body(Body::empty()).unwrap(),
    )
    .await;
    (cached, String::from_utf8(body.to_vec()).unwrap(), uncached)
}

#[tokio::test]
async fn range_queries_reuse_settled_steps_until_settled_data_changes() {
    use cairn_storage::Admin;
    let now = cairn_http::now_ms() / 60_000 * 60_000;
    let base = now - 2 * 3600 * 1000;
    let mem = MemStorage::new();
    let mut a = mem.appender();
    for (job, slope) in [("a", 1.0), ("b", 3.0)] {
        let l = Labels::from_pairs([("__name__", "c"), ("job", job)]);
        let samples: Vec<Sample> = (0..)
            .map(|i| base + i * 15_000)
            .take_while(|&t| t < now)
            .map(|t| Sample::new(t, (t - base) as f64 / 1000.0 * slope))
            .collect();
        a.append(&l, &samples).unwrap();
    }
    a.commit().unwrap();
    let state = AppState::new(
        Arc::new(cairn_storage::MemTenants::with_default(mem.clone())),
        ApiConfig::default(),
    );
    let app = cairn_http::router_with(state, cairn_query_api::routes(Default::default()));
    let (start, end) = (base + 30 * 60_000, now - 60_000);
    for query in ["rate(c[5m])", "sum by (job) (c offset 2m)", "max(c) - min(c)"] {
        let (cached, first, uncached) = cached_and_not(&app, query, start, end).await;
        assert_eq!(cached, Some(0), "{query}");
        assert_eq!(first, uncached, "{query}");
        // A dashboard's refresh: the window moved on by a step.
        let (cached, moved, uncached) = cached_and_not(&app, query, start + 60_000, end + 60_000).await;
        assert!(cached.unwrap() > 60, "{query}: {cached:?}");
        assert_eq!(moved, uncached, "{query}");
    }

    // A backfilled sample in the kept steps' past: nothing kept is used.
    let mut a = mem.appender();
    a.append(
        &Labels::from_pairs([("__name__", "c"), ("job", "a")]),
        &[Sample::new(base + 50 * 60_000 + 7_000, 1e6)],
    )
    .unwrap();
    a.commit().unwrap();
    let (cached, body, uncached) = cached_and_not(&app, "rate(c[5m])", start + 60_000, end + 60_000).await;
    assert_eq!(cached, Some(0));
    assert_eq!(body, uncached);
    assert!(
        body.contains("1e+06") || body.contains("3333"),
        "the backfilled sample counts"
    );
    let (cached, _, _) = cached_and_not(&app, "rate(c[5m])", start + 60_000, end + 60_000).await;
    assert!(cached.unwrap() > 60);

    // A delete: nothing kept is used, and the answer lacks the series.
    let matchers = [cairn_model::Matcher::new(cairn_model::MatchOp::Equal, "job", "b").unwrap()];
    mem.delete_series(&matchers, i64::MIN, i64::MAX).unwrap();
    let (cached, body, uncached) = cached_and_not(&app, "rate(c[5m])", start + 60_000, end + 60_000).await;
    assert_eq!(cached, Some(0));
    assert_eq!(body, uncached);
    assert!(!body.contains(r#""job":"b""#));

    // Steps not answered from their own data are never kept.
    let (cached, body, uncached) = cached_and_not(&app, "c @ end()", start, end).await;
    assert_eq!((cached, body), (None, uncached));

    let (_, metrics) = send_to(app.clone(), Request::get("/metrics").body(Body::empty()).unwrap()).await;
    assert!(metrics.contains("cairn_results_cache_hits_total 4\n"), "{metrics}");
    assert!(
        metrics.contains("cairn_results_cache_invalidations_total 2\n"),
        "{metrics}"
    );
}
