//! Prometheus' query endpoints over [`cairn_promql`]:
//! `/api/v1/query`, `/api/v1/query_range` (GET and form POST),
//! `/api/v1/format_query`, `/api/v1/parse_query` and `/api/v1/explain`.
//!
//! Mounted by `cairn-server` with `cairn_http::router_with(state, routes())`,
//! so the paths also work under `/prometheus` and get request metrics.
//! Responses are written by hand to match Prometheus' JSON byte for byte:
//! timestamps as `sec.mmm` numbers and values as strings formatted like Go's
//! `strconv.FormatFloat(v, 'f' or 'e', -1, 64)`.

mod ast_json;
mod cached;
mod features;
mod split;

use std::fmt::Write as _;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Extension, Router};
use cairn_http::{
    ApiError, AppState, ErrorType, Params, QuerySlot, Tenant, format_value, invalid_param, limit_param, parse_duration,
    read_options, run_blocking, run_inline, time_param,
};
use cairn_model::Labels;
use cairn_promql::{Engine, ErrorKind, Parsed, QueryError, QueryOptions, QueryResult, QueryStats, SampleValue, Value};
use cairn_storage::{Queryable, TenantScope};

pub use cached::CACHED_STEPS_HEADER;
pub use cairn_promql::{EngineOptions, StepSplit};
pub use split::PARTS_HEADER;

/// The query routes, for [`cairn_http::router_with`], evaluating with an
/// engine built from `options` (limits, timeout, lookback).
pub fn routes(options: EngineOptions) -> Router<AppState> {
    Router::new()
        .route("/api/v1/query", get(query).post(query))
        .route("/api/v1/query_range", get(query_range).post(query_range))
        .route("/api/v1/format_query", get(format_query).post(format_query))
        .route("/api/v1/parse_query", get(parse_query).post(parse_query))
        .route("/api/v1/explain", get(explain).post(explain))
        .route("/api/v1/features", get(features::features))
        .layer(Extension(Arc::new(Engine::new(options))))
}

type SharedEngine = Extension<Arc<Engine>>;

/// Sets the cancel flag when dropped, i.e. when the client goes away and
/// axum drops the handler future.
struct CancelOnDrop(Arc<AtomicBool>);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

fn query_error(e: QueryError) -> ApiError {
    let kind = match e.kind() {
        ErrorKind::BadData => ErrorType::BadData,
        ErrorKind::Execution => ErrorType::Execution,
        ErrorKind::Timeout => ErrorType::Timeout,
        ErrorKind::Canceled => ErrorType::Canceled,
        ErrorKind::Unavailable => ErrorType::Unavailable,
        ErrorKind::Internal => ErrorType::Internal,
    };
    ApiError::new(kind, e.to_string())
}

fn duration_param(params: &Params, name: &str) -> Result<Option<Duration>, ApiError> {
    match params.get(name) {
        None => Ok(None),
        Some(v) => {
            let ms = parse_duration(v).map_err(|e| invalid_param(name, e))?;
            if ms < 0 {
                return Err(invalid_param(name, format!("cannot parse {v:?} to a valid duration")));
            }
            Ok(Some(Duration::from_millis(ms as u64)))
        }
    }
}

/// Per-query options; a `timeout` parameter can only shorten the engine's
/// timeout, and the tenants' limits lower its sample and series limits.
fn query_options(engine: &Engine, params: &Params, request: &Request) -> Result<QueryOptions, ApiError> {
    let timeout = duration_param(params, "timeout")?.map(|t| t.min(engine.options().timeout));
    Ok(QueryOptions {
        lookback_delta: duration_param(params, "lookback_delta")?.filter(|d| !d.is_zero()),
        timeout,
        cancel: Some(request.cancel.clone()),
        max_samples: request.max_samples,
        max_series: request.max_series,
    })
}

/// Plans and runs a query, then `encode`s its result where it was
/// evaluated: on the query threads ([`QuerySlot::run`]), so that encoding a
/// big answer neither stalls an async worker nor outranks ingestion. One
/// whose shape allows an inline plan is planned right on this async worker
/// and, if the plan is inline, evaluated there too, as that costs less than
/// the hand-offs to the query threads and back.
///
/// `slot` is the query's admission ([`cairn_http::QueryGate`]): it goes
/// with the work, encoding included, so a query whose client left holds it
/// until its evaluation sees the cancel flag and stops.
async fn evaluate<T: Send + 'static>(
    parsed: Parsed,
    storage: Arc<dyn Queryable>,
    slot: QuerySlot,
    encode: impl FnOnce(QueryResult) -> T + Send + 'static,
) -> Result<T, ApiError> {
    if !parsed.may_be_inline() {
        return slot
            .run(move || {
                let prepared = parsed.plan(storage.as_ref()).map_err(query_error)?;
                Ok(encode(prepared.run(storage.as_ref()).map_err(query_error)?))
            })
            .await;
    }
    let prepared = run_inline(|| parsed.plan(storage.as_ref()).map_err(query_error))?;
    let inline = prepared.is_inline();
    let f = move || Ok(encode(prepared.run(storage.as_ref()).map_err(query_error)?));
    if inline {
        let _held = slot;
        run_inline(f)
    } else {
        slot.run(f).await
    }
}

/// What parses one query endpoint's parameters.
type ParseParams = fn(&Engine, &Params, &Request) -> Result<(Parsed, Option<usize>), ApiError>;

/// What a query's options take from beyond its parameters.
struct Request {
    cancel: Arc<AtomicBool>,
    /// The tenants' limits (a federated query takes the lowest of them).
    max_samples: Option<usize>,
    max_series: Option<usize>,
}

impl Request {
    fn new(state: &AppState, scope: &TenantScope) -> Self {
        let limits = state.limits().current();
        let lowest = |of: fn(&cairn_http::Limits) -> usize| {
            scope
                .tenants()
                .iter()
                .map(|t| of(limits.of(t)))
                .filter(|&m| m > 0)
                .min()
        };
        Self {
            cancel: Arc::new(AtomicBool::new(false)),
            max_samples: lowest(|l| l.max_query_samples),
            max_series: lowest(|l| l.max_query_series),
        }
    }
}

/// Answers a query endpoint whose parameters `parse` reads.
async fn answer(
    state: AppState,
    scope: &TenantScope,
    engine: &Engine,
    params: &Params,
    parse: ParseParams,
    shard: Option<cairn_storage::Shard>,
) -> Result<Response, ApiError> {
    let request = Request::new(&state, scope);
    let (parsed, limit) = parse(engine, params, &request)?;
    let _guard = CancelOnDrop(request.cancel);
    let options = read_options(params)?;
    let storage: Arc<dyn Queryable> = state.reader_with(scope, &options)?;
    let storage = match shard {
        Some(shard) => Arc::new(cairn_storage::ShardView::new(storage, shard)),
        None => storage,
    };
    // Parameters and parse errors are answered before waiting for a slot.
    let slot = state.query_gate().admit().await?;
    let started = Instant::now();
    let (warnings, stats) = (options.warnings.clone(), stats_requested(params));
    let encode = move |mut res: QueryResult| {
        let took = stats.then(|| started.elapsed());
        res.warnings.extend(warnings.take());
        render_body(res, limit, took)
    };
    Ok(json(evaluate(parsed, storage, slot, encode).await?))
}

async fn query(
    State(state): State<AppState>,
    Tenant(scope): Tenant,
    Extension(engine): SharedEngine,
    params: Params,
) -> Result<Response, ApiError> {
    answer(state, &scope, &engine, &params, parse_instant, None).await
}

async fn query_range(
    State(state): State<AppState>,
    Tenant(scope): Tenant,
    Extension(engine): SharedEngine,
    peers: Option<Extension<Arc<dyn cairn_http::peers::Peers>>>,
    headers: axum::http::HeaderMap,
    params: Params,
) -> Result<Response, ApiError> {
    if cairn_http::peers::is_peer_request(&headers) {
        let shard = split::requested_shard(&params)?;
        return answer(state, &scope, &engine, &params, parse_range, shard).await;
    }
    let split_over = peers.as_ref().map(|Extension(peers)| (&headers, peers));
    if let Some(cached) = cached::answer(&state, &scope, &engine, &params, split_over).await? {
        return Ok(cached);
    }
    if let Some(Extension(peers)) = peers
        && let Some(split) = split::answer(&state, &scope, &engine, &params, &headers, &peers).await?
    {
        return Ok(split);
    }
    answer(state, &scope, &engine, &params, parse_range, None).await
}

/// The plan of a query (an instant query at `time`, or a range query with
/// `start`, `end` and `step`) as text: where and how each part would run,
/// over the data stored now. Not a Prometheus endpoint.
async fn explain(
    State(state): State<AppState>,
    Tenant(scope): Tenant,
    Extension(engine): SharedEngine,
    params: Params,
) -> Result<Response, ApiError> {
    let parse: ParseParams = if params.get("step").is_some() {
        parse_range
    } else {
        parse_instant
    };
    let (parsed, _) = parse(&engine, &params, &Request::new(&state, &scope))?;
    let storage = state.reader(&scope)?;
    let plan = run_blocking(move || {
        parsed
            .plan(storage.as_ref())
            .map(|p| p.to_string())
            .map_err(query_error)
    })
    .await?;
    let mut body = String::from(r#"{"status":"success","data":{"plan":"#);
    push_json_str(&mut body, &plan);
    body.push_str("}}");
    Ok(json(body))
}

/// Parses the instant query of a request's parameters; with its `limit`.
/// (Parameters are checked in Prometheus' order, which picks the error.)
fn parse_instant(engine: &Engine, params: &Params, request: &Request) -> Result<(Parsed, Option<usize>), ApiError> {
    let expr = params.get("query").unwrap_or("");
    let t = time_param(params, "time", cairn_http::now_ms())?;
    let limit = limit_param(params)?;
    let qo = query_options(engine, params, request)?;
    let parsed = engine.parse_instant(expr, t, &qo).map_err(query_error)?;
    Ok((parsed, limit))
}

/// Parses the range query of a request's parameters; with its `limit`.
fn parse_range(engine: &Engine, params: &Params, request: &Request) -> Result<(Parsed, Option<usize>), ApiError> {
    let expr = params.get("query").unwrap_or("");
    let start = time_param_required(params, "start")?;
    let end = time_param_required(params, "end")?;
    if end < start {
        return Err(invalid_param("end", "end timestamp must not be before start time"));
    }
    let step = match params.get("step") {
        None => return Err(invalid_param("step", "cannot parse \"\" to a valid duration")),
        Some(v) => parse_duration(v).map_err(|e| invalid_param("step", e))?,
    };
    if step <= 0 {
        return Err(invalid_param(
            "step",
            "zero or negative query resolution step widths are not accepted. Try a positive integer",
        ));
    }
    if (end - start) / step >= 11_000 {
        return Err(ApiError::bad_data(
            "exceeded maximum resolution of 11,000 points per timeseries. Try decreasing the query resolution (?step=XX)",
        ));
    }
    let limit = limit_param(params)?;
    let qo = query_options(engine, params, request)?;
    let parsed = engine.parse_range(expr, start, end, step, &qo).map_err(query_error)?;
    Ok((parsed, limit))
}

fn time_param_required(params: &Params, name: &str) -> Result<i64, ApiError> {
    if params.get(name).is_none() {
        return Err(invalid_param(name, "cannot parse \"\" to a valid timestamp"));
    }
    time_param(params, name, 0)
}

async fn format_query(params: Params) -> Result<Response, ApiError> {
    let expr = params.get("query").unwrap_or("");
    let ast = cairn_promql::parse(expr).map_err(query_error)?;
    let mut body = String::from(r#"{"status":"success","data":"#);
    push_json_str(&mut body, &ast.prettify());
    body.push('}');
    Ok(json(body))
}

/// The AST as JSON, in `promql-parser`'s rendering of Prometheus'
/// `translateAST` shape (`{"type":"vectorSelector","name":"up",...}`). Known
/// differences from Prometheus 3: selectors list only non-name matchers, and
/// the newer `offsetExpr`/`rangeExpr`/`anchored`/`smoothed` fields are absent
/// (`ast_json.rs` adds them).
async fn parse_query(params: Params) -> Result<Response, ApiError> {
    let expr = params.get("query").unwrap_or("");
    let ast = cairn_promql::parse(expr).map_err(query_error)?;
    // Through `Value` (sorted maps), so keys come out sorted as Go's maps do.
    let data = serde_json::to_value(&ast)
        .and_then(|mut v| {
            ast_json::to_prometheus(&mut v);
            serde_json::to_string(&v)
        })
        .map_err(|e| ApiError::internal(format!("cannot encode AST: {e}")))?;
    Ok(json(format!(r#"{{"status":"success","data":{data}}}"#)))
}

fn json(body: String) -> Response {
    (StatusCode::OK, [(header::CONTENT_TYPE, "application/json")], body).into_response()
}

/// Whether the request asks for the query's stats (`stats=<anything>`, as Prometheus).
fn stats_requested(params: &Params) -> bool {
    params.get("stats").is_some_and(|s| !s.is_empty())
}

/// Renders a query result as Prometheus does; with its stats when `took`
/// (the evaluation's time) is given.
pub fn render(res: QueryResult, limit: Option<usize>, took: Option<Duration>) -> Response {
    json(render_body(res, limit, took))
}

/// The JSON body of a successful query.
pub fn render_body(mut res: QueryResult, limit: Option<usize>, took: Option<Duration>) -> String {
    if let Some(limit) = limit {
        let truncated = match &mut res.value {
            Value::Vector(v) if v.len() > limit => {
                v.truncate(limit);
                true
            }
            Value::Matrix(m) if m.len() > limit => {
                m.truncate(limit);
                true
            }
            _ => false,
        };
        if truncated {
            res.warnings.push("results truncated due to limit".into());
        }
    }
    let mut b = String::with_capacity(256);
    b.push_str(r#"{"status":"success","data":{"resultType":""#);
    b.push_str(res.value.type_name());
    b.push_str(r#"","result":"#);
    match &res.value {
        Value::Scalar { t, v } => push_scalar(&mut b, *t, *v),
        Value::String { t, s } => {
            // Like a scalar's, the time is a plain JSON number.
            b.push('[');
            cairn_model::go_float::push_plain(&mut b, *t as f64 / 1000.0);
            b.push(',');
            push_json_str(&mut b, s);
            b.push(']');
        }
        Value::Vector(v) => {
            b.push('[');
            for (i, s) in v.iter().enumerate() {
                if i > 0 {
                    b.push(',');
                }
                b.push_str(r#"{"metric":"#);
                push_labels(&mut b, &s.metric);
                match &s.value {
                    SampleValue::Float(f) => {
                        b.push_str(r#","value":["#);
                        push_ts(&mut b, s.t);
                        b.push(',');
                        push_quoted_value(&mut b, *f);
                        b.push(']');
                    }
                    SampleValue::Histogram(h) => {
                        b.push_str(r#","histogram":["#);
                        push_ts(&mut b, s.t);
                        b.push(',');
                        push_histogram(&mut b, h);
                        b.push(']');
                    }
                }
                b.push('}');
            }
            b.push(']');
        }
        Value::Matrix(m) => {
            b.push('[');
            for (i, s) in m.iter().enumerate() {
                if i > 0 {
                    b.push(',');
                }
                b.push_str(r#"{"metric":"#);
                push_labels(&mut b, &s.metric);
                if !s.floats.is_empty() {
                    b.push_str(r#","values":["#);
                    for (j, p) in s.floats.iter().enumerate() {
                        if j > 0 {
                            b.push(',');
                        }
                        b.push('[');
                        push_ts(&mut b, p.t);
                        b.push(',');
                        push_quoted_value(&mut b, p.v);
                        b.push(']');
                    }
                    b.push(']');
                }
                if !s.histograms.is_empty() {
                    b.push_str(r#","histograms":["#);
                    for (j, hs) in s.histograms.iter().enumerate() {
                        if j > 0 {
                            b.push(',');
                        }
                        b.push('[');
                        push_ts(&mut b, hs.t);
                        b.push(',');
                        push_histogram(&mut b, &hs.h);
                        b.push(']');
                    }
                    b.push(']');
                }
                b.push('}');
            }
            b.push(']');
        }
    }
    if let Some(took) = took {
        push_stats(&mut b, &res.stats, took);
    }
    b.push('}');
    if !res.warnings.is_empty() {
        b.push_str(r#","warnings":"#);
        push_str_array(&mut b, &res.warnings);
    }
    if !res.infos.is_empty() {
        b.push_str(r#","infos":"#);
        push_str_array(&mut b, &res.infos);
    }
    b.push('}');
    b
}

/// Prometheus' `stats` object: the evaluation's time, and the samples it
/// read and held at most (Cairn counts each raw sample read once per selector;
/// Prometheus counts a sample once per step whose window holds it).
fn push_stats(b: &mut String, stats: &QueryStats, took: Duration) {
    let seconds = took.as_secs_f64();
    let _ = write!(
        b,
        r#","stats":{{"timings":{{"evalTotalTime":{seconds},"execTotalTime":{seconds}}},"samples":{{"totalQueryableSamples":{},"peakSamples":{}}}}}"#,
        stats.samples_read, stats.peak_samples
    );
}

fn push_str_array(b: &mut String, items: &[String]) {
    b.push('[');
    for (i, s) in items.iter().enumerate() {
        if i > 0 {
            b.push(',');
        }
        push_json_str(b, s);
    }
    b.push(']');
}

fn push_json_str(b: &mut String, s: &str) {
    match serde_json::to_string(s) {
        Ok(j) => b.push_str(&j),
        Err(_) => b.push_str("\"\""),
    }
}

fn push_labels(b: &mut String, l: &Labels) {
    b.push('{');
    for (i, lab) in l.iter().enumerate() {
        if i > 0 {
            b.push(',');
        }
        push_json_str(b, &lab.name);
        b.push(':');
        push_json_str(b, &lab.value);
    }
    b.push('}');
}

fn push_histogram(b: &mut String, h: &cairn_model::Histogram) {
    b.push_str(r#"{"count":""#);
    b.push_str(&format_value(h.count));
    b.push_str(r#"","sum":""#);
    b.push_str(&format_value(h.sum));
    b.push('"');
    // Empty buckets are left out, as Prometheus does.
    let mut first = true;
    for bucket in h.buckets().into_iter().filter(|b| b.count != 0.0) {
        b.push_str(if first { r#","buckets":["# } else { "," });
        first = false;
        let _ = write!(
            b,
            r#"[{},"{}","{}","{}"]"#,
            bucket.boundary_rule(),
            format_value(bucket.lower),
            format_value(bucket.upper),
            format_value(bucket.count)
        );
    }
    if !first {
        b.push(']');
    }
    b.push('}');
}

/// Prometheus' `marshalTimestamp`: seconds with up to three decimals, no trailing-zero trimming.
fn push_ts(b: &mut String, t: i64) {
    let mut t = t;
    if t < 0 {
        b.push('-');
        t = t.wrapping_neg();
    }
    // i64::MIN stays negative after wrapping_neg: format it as unsigned.
    let t = t as u64;
    b.push_str(itoa::Buffer::new().format(t / 1000));
    let frac = t % 1000;
    if frac != 0 {
        let digits = [
            b'0' + (frac / 100) as u8,
            b'0' + (frac / 10 % 10) as u8,
            b'0' + (frac % 10) as u8,
        ];
        b.push('.');
        b.push_str(std::str::from_utf8(&digits).unwrap_or("000"));
    }
}

/// A scalar result as Prometheus writes it (`promql.Scalar`'s own JSON, not
/// the sample codec): the time as a JSON number of seconds (`1.5`, `1`),
/// the value always in Go's `'f'` form (`"0.000000001"`, never `"1e-09"`).
fn push_scalar(b: &mut String, t: i64, v: f64) {
    b.push('[');
    cairn_model::go_float::push_plain(b, t as f64 / 1000.0);
    b.push_str(",\"");
    b.push_str(&cairn_model::go_float::format_f(v));
    b.push_str("\"]");
}

fn push_quoted_value(b: &mut String, v: f64) {
    b.push('"');
    cairn_http::push_value(b, v);
    b.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_format_like_prometheus() {
        let f = |t| {
            let mut s = String::new();
            push_ts(&mut s, t);
            s
        };
        assert_eq!(f(1_500), "1.500");
        assert_eq!(f(1_005), "1.005");
        assert_eq!(f(-1_050), "-1.050");
        assert_eq!(f(1_000), "1");
    }

    #[test]
    fn scalars_are_written_as_prometheus_writes_them() {
        let scalar = |t: i64, v: f64| {
            let mut b = String::new();
            push_scalar(&mut b, t, v);
            b
        };
        // Go's 'f' form at every magnitude, where sample values switch to 'e'.
        assert_eq!(scalar(1_500, 1e-9), r#"[1.5,"0.000000001"]"#);
        assert_eq!(scalar(1_000, 1e21), r#"[1,"1000000000000000000000"]"#);
        assert_eq!(scalar(1_795_952_661_500, 0.5), r#"[1795952661.5,"0.5"]"#);
        assert_eq!(scalar(-2_250, -1.25e-7), r#"[-2.25,"-0.000000125"]"#);
        assert_eq!(scalar(0, f64::NAN), r#"[0,"NaN"]"#);
        assert_eq!(scalar(0, f64::INFINITY), r#"[0,"+Inf"]"#);
        assert_eq!(scalar(0, f64::NEG_INFINITY), r#"[0,"-Inf"]"#);
    }

    #[test]
    fn renders_vector() {
        let res = QueryResult {
            value: Value::Vector(vec![cairn_promql::InstantSample {
                metric: Labels::from_pairs([("__name__", "up"), ("job", "a")]),
                t: 1_000,
                value: SampleValue::Float(1.0),
            }]),
            warnings: vec![],
            infos: vec![],
            stats: QueryStats {
                samples_read: 12,
                peak_samples: 3,
            },
        };
        let with_stats = render_body(res.clone(), None, Some(Duration::from_millis(1500)));
        assert!(
            with_stats.contains(r#","stats":{"timings":{"evalTotalTime":1.5,"execTotalTime":1.5},"samples":{"totalQueryableSamples":12,"peakSamples":3}}}"#),
            "{with_stats}"
        );
        assert_eq!(
            render_body(res, None, None),
            r#"{"status":"success","data":{"resultType":"vector","result":[{"metric":{"__name__":"up","job":"a"},"value":[1,"1"]}]}}"#
        );
    }
}
