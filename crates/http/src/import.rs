//! VictoriaMetrics-compatible imports:
//!
//! - `POST /api/v1/import`: JSON lines, as `/api/v1/export` writes them
//!   (what `vmctl` sends when it migrates data).
//! - `POST /api/v1/import/prometheus`: Prometheus text exposition or
//!   OpenMetrics; `timestamp` sets the time of samples without one (integer
//!   ms as VictoriaMetrics, or float seconds / RFC 3339; default now);
//!   also at `/api/v1/import/prometheus/metrics/job/<job>/<label>/<value>...`
//!   (Pushgateway-style paths: the path's labels are added to every series).
//! - `POST /api/v1/import/csv?format=...`: CSV, see `cairn_protocols::csv`.
//!
//! All take `extra_label=name=value` (repeatable; replaces a sent label of
//! the same name) and gzip, deflate or zstd bodies by `Content-Encoding`.
//!
//! Answers: 204 when every line was stored; when some lines are bad, the
//! good ones are stored and the answer is 400 with the number of bad lines
//! and the first error with its line number (bad lines are also counted in
//! `cairn_ingest_samples_rejected_total{reason="bad_line"}`); 400 with
//! nothing stored for a body that cannot be read as a whole (corrupt gzip,
//! bad `format`, too large after decompression); 413 past the body limit;
//! 415 for an unknown `Content-Encoding`.

use axum::extract::{Path, Request, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use cairn_model::Label;
use cairn_protocols::text_import::{BodyError, ImportResult, decompress_body, parse_extra_labels};
use cairn_protocols::{DecodeLimits, ErrorKind, json_lines, prom_text};

use crate::ingest::{Protocol, Refusal, record_refusal, store_batch, write_tenant};
use crate::{ApiError, AppState, ErrorType, Params, now_ms, parse_time, read_body};
use cairn_storage::TenantId;

/// Turns a decompressed body into lines, given the request's parameters.
pub(crate) type Decode = Box<dyn FnOnce(&[u8], &DecodeLimits) -> Result<ImportResult, BodyError> + Send>;

/// `GET /health`: VictoriaMetrics' liveness answer, which `vmctl` checks
/// before it imports.
pub async fn vm_health() -> &'static str {
    "OK"
}

pub async fn import_json(State(state): State<AppState>, req: Request) -> Response {
    let params = query_params(&req);
    respond(
        &state,
        Protocol::JsonLines,
        req,
        |extra| {
            Ok(Box::new(move |body, limits| {
                Ok(json_lines::decode_json_lines(body, &extra, limits))
            }))
        },
        &params,
    )
    .await
}

pub async fn import_prometheus(State(state): State<AppState>, req: Request) -> Response {
    prometheus(state, req, Vec::new()).await
}

/// Pushgateway-style path: `metrics/job/<job>{/<name>/<value>}`.
pub async fn import_prometheus_job(State(state): State<AppState>, Path(rest): Path<String>, req: Request) -> Response {
    match path_labels(&rest) {
        Ok(labels) => prometheus(state, req, labels).await,
        Err(message) => refuse(
            &state,
            Protocol::PrometheusText,
            ("bad_data", ApiError::bad_data(message)),
        ),
    }
}

pub async fn import_csv(State(state): State<AppState>, req: Request) -> Response {
    let params = query_params(&req);
    let format = params.get("format").map(str::to_string);
    respond(
        &state,
        Protocol::Csv,
        req,
        move |extra| {
            let format = format.ok_or_else(|| BodyError::BadFormat("missing format query arg".into()))?;
            let columns = cairn_protocols::csv::parse_format(&format)?;
            let now = now_ms();
            Ok(Box::new(move |body, limits| {
                Ok(cairn_protocols::csv::decode_csv(body, &columns, &extra, now, limits))
            }))
        },
        &params,
    )
    .await
}

async fn prometheus(state: AppState, req: Request, path_labels: Vec<Label>) -> Response {
    let params = query_params(&req);
    let openmetrics = req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.contains("openmetrics"));
    let default_t = match params.get("timestamp").map(parse_default_time).transpose() {
        Ok(t) => t.unwrap_or_else(now_ms),
        Err(e) => {
            return refuse(
                &state,
                Protocol::PrometheusText,
                (
                    "bad_data",
                    ApiError::bad_data(format!("invalid parameter \"timestamp\": {e}")),
                ),
            );
        }
    };
    respond(
        &state,
        Protocol::PrometheusText,
        req,
        move |extra| {
            let mut extra_labels = path_labels;
            for l in extra {
                extra_labels.retain(|p| p.name != l.name);
                extra_labels.push(l);
            }
            let opts = prom_text::PromTextOptions {
                default_t,
                extra_labels,
                openmetrics,
            };
            Ok(Box::new(move |body, limits| {
                Ok(prom_text::decode_prom_text(body, &opts, limits))
            }))
        },
        &params,
    )
    .await
}

/// Integer milliseconds (VictoriaMetrics), else float seconds or RFC 3339.
fn parse_default_time(s: &str) -> Result<i64, String> {
    if let Ok(ms) = s.parse::<i64>()
        && ms.unsigned_abs() >= 100_000_000_000
    {
        return Ok(ms);
    }
    parse_time(s)
}

fn path_labels(rest: &str) -> Result<Vec<Label>, String> {
    let parts: Vec<&str> = rest.split('/').collect();
    if parts.len() % 2 != 1 || parts.iter().any(|p| p.is_empty()) {
        return Err(format!("want metrics/job/<job>{{/<label>/<value>}}, got job/{rest}"));
    }
    let mut labels = vec![Label::new("job", parts.first().copied().unwrap_or_default())];
    for pair in parts.get(1..).unwrap_or_default().chunks(2) {
        if let [name, value] = pair {
            if name.contains('@') {
                return Err(format!("encoded label {name:?} in the path is not supported"));
            }
            labels.retain(|l| l.name != *name);
            labels.push(Label::new(*name, *value));
        }
    }
    Ok(labels)
}

pub(crate) fn query_params(req: &Request) -> Params {
    Params::from_query(req.uri().query().unwrap_or(""))
}

pub(crate) fn refuse(state: &AppState, protocol: Protocol, refusal: Refusal) -> Response {
    record_refusal(state, protocol, &refusal);
    refusal.1.into_response()
}

pub(crate) async fn respond(
    state: &AppState,
    protocol: Protocol,
    req: Request,
    make: impl FnOnce(Vec<Label>) -> Result<Decode, BodyError>,
    params: &Params,
) -> Response {
    match handle(state, protocol, req, make, params).await {
        Ok(()) => StatusCode::NO_CONTENT.into_response(),
        Err(refusal) => refuse(state, protocol, refusal),
    }
}

pub(crate) fn body_refusal(e: BodyError) -> Refusal {
    let kind = if e.kind() == ErrorKind::UnsupportedEncoding {
        ErrorType::UnsupportedMediaType
    } else {
        ErrorType::BadData
    };
    (e.reason(), ApiError::new(kind, e.to_string()))
}

async fn handle(
    state: &AppState,
    protocol: Protocol,
    req: Request,
    make: impl FnOnce(Vec<Label>) -> Result<Decode, BodyError>,
    params: &Params,
) -> Result<(), Refusal> {
    let extra = parse_extra_labels(params.get_all("extra_label")).map_err(body_refusal)?;
    let decode = make(extra).map_err(body_refusal)?;
    decode_and_store(
        state,
        req,
        move |plain, limits| decode(plain, limits).map_err(body_refusal),
        move |state, tenant, result| {
            store_batch(state, tenant, protocol, &result.batch)?;
            if result.string_values_skipped > 0 {
                state
                    .metrics()
                    .ingest_samples_rejected(protocol, "string_field", result.string_values_skipped as u64);
            }
            if let Some(message) = result.error_message() {
                state
                    .metrics()
                    .ingest_samples_rejected(protocol, "bad_line", result.bad_lines as u64);
                return Err(("bad_lines", ApiError::bad_data(message)));
            }
            Ok(())
        },
    )
    .await
}

/// The body path every decoded (non-remote-write) ingestion shares: read the
/// body within the request limit, then on the blocking pool decompress it by
/// `Content-Encoding` within the decoded limit, `decode` it, free the raw
/// bytes, and `store` the result.
pub(crate) async fn decode_and_store<D, T>(
    state: &AppState,
    req: Request,
    decode: impl FnOnce(&[u8], &DecodeLimits) -> Result<D, Refusal> + Send + 'static,
    store: impl FnOnce(&AppState, &TenantId, D) -> Result<T, Refusal> + Send + 'static,
) -> Result<T, Refusal>
where
    T: Send + 'static,
{
    let tenant = write_tenant(req.headers())?;
    let encoding = req
        .headers()
        .get(header::CONTENT_ENCODING)
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
    let body = read_body(req, state).await.map_err(|e| ("too_large", e))?;
    let state = state.clone();
    let limits = state.config().remote_write_limits;
    let joined = tokio::task::spawn_blocking(move || -> Result<T, Refusal> {
        let metrics = state.metrics().clone();
        metrics.measure_ingest(|| {
            let plain =
                decompress_body(&body, encoding.as_deref(), limits.max_decompressed_bytes).map_err(body_refusal)?;
            let decoded = decode(&plain, &limits)?;
            // The raw and decompressed bytes are not needed while storing.
            drop(plain);
            drop(body);
            store(&state, &tenant, decoded)
        })
    })
    .await;
    joined.unwrap_or_else(|e| {
        tracing::error!(error = %e, "ingestion task failed");
        Err(("internal", ApiError::internal(format!("internal error: {e}"))))
    })
}

#[cfg(test)]
mod tests;
