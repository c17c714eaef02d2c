//! A long range query cut over the nodes of a cluster, as Mimir's
//! query-frontend splits by interval and shards by series: each part is the
//! same query over its own run of steps, or over its own shard of the
//! series, evaluated on its own node, and the parts' series are joined by
//! labels. The engine says whether and where a query may be cut
//! (`Parsed::split_over`, by the rule it splits over its own threads with;
//! `Parsed::shard_by`, an aggregation's groups kept whole in one shard), so
//! the joined answer is the whole evaluation's.
//!
//! This node evaluates the first part; each peer one other. A part a peer
//! does not answer (down, or an answer that is not a float matrix) is
//! evaluated here instead: a peer's failure costs time, never the answer.
//! The limits (samples, series, timeout) apply to each part.

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::http::{HeaderMap, HeaderValue};
use axum::response::Response;
use cairn_http::peers::{PeerKind, Peers, peer_headers};
use cairn_http::{ApiError, AppState, Params, invalid_param, read_options, run_blocking};
use cairn_model::Labels;
use cairn_promql::{Engine, QueryResult, QueryStats, RangeSeries, Value};
use cairn_storage::{Shard, ShardBy, ShardView, TenantScope};

use crate::{CancelOnDrop, Request, evaluate, parse_range};

/// On a split answer: how many parts it was joined from.
pub const PARTS_HEADER: &str = "x-cairn-query-parts";

/// One part of a query cut over several nodes.
#[derive(Debug, Clone)]
enum Cut {
    /// Its steps from `start` to `end`.
    Time(i64, i64),
    /// The series of one shard.
    Series(Shard),
}

/// Query parameters that ask a node for one shard of a query's series (in
/// a peer request): `cairn_shard=<index>/<count>`, `cairn_shard_by=by|without`
/// and one `cairn_shard_label` per grouping label.
const SHARD_PARAM: &str = "cairn_shard";
const SHARD_BY_PARAM: &str = "cairn_shard_by";
const SHARD_LABEL_PARAM: &str = "cairn_shard_label";
/// More shards than nodes would ever be: a count past it is refused.
const MAX_SHARDS: usize = 1 << 16;

/// The answer of a range query split over this node and its peers, or
/// `None` when it is not split (see [`evaluate_split`]).
pub(crate) async fn answer(
    state: &AppState,
    scope: &TenantScope,
    engine: &Engine,
    params: &Params,
    headers: &HeaderMap,
    peers: &Arc<dyn Peers>,
) -> Result<Option<Response>, ApiError> {
    let started = std::time::Instant::now();
    let Some(split) = evaluate_split(state, scope, engine, params, headers, peers).await? else {
        return Ok(None);
    };
    let took = crate::stats_requested(params).then(|| started.elapsed());
    let parts = split.results.len();
    let mut response = run_blocking(move || {
        let mut joined = join(split.results);
        joined.warnings.extend(split.warnings);
        Ok(crate::render(joined, None, took))
    })
    .await?;
    mark_parts(&mut response, parts);
    Ok(Some(response))
}

/// The results of the parts a range query was cut into, to be joined,
/// and the warnings of the reads done here.
pub(crate) struct Split {
    pub results: Vec<QueryResult>,
    pub warnings: Vec<String>,
}

/// Says on `response` how many parts it was joined from.
pub(crate) fn mark_parts(response: &mut Response, parts: usize) {
    if let Ok(n) = HeaderValue::from_str(&parts.to_string()) {
        response.headers_mut().insert(PARTS_HEADER, n);
    }
}

/// A range query evaluated in parts over this node and its peers, or
/// `None` when it is not split (too short or not cut by either rule, or a
/// `limit`). A query is cut by time where the engine allows, else by
/// series where it allows that.
pub(crate) async fn evaluate_split(
    state: &AppState,
    scope: &TenantScope,
    engine: &Engine,
    params: &Params,
    headers: &HeaderMap,
    peers: &Arc<dyn Peers>,
) -> Result<Option<Split>, ApiError> {
    let request = Request::new(state, scope);
    let (parsed, limit) = parse_range(engine, params, &request)?;
    let peer_count = peers.count(PeerKind::Query);
    if peer_count == 0 || limit.is_some() {
        return Ok(None);
    }
    let cuts: Vec<Cut> = if let Some(parts) = parsed.split_over(peer_count + 1) {
        parts.into_iter().map(|(start, end)| Cut::Time(start, end)).collect()
    } else if let Some(by) = parsed.shard_by() {
        let count = peer_count + 1;
        (0..count)
            .map(|index| {
                Cut::Series(Shard {
                    index,
                    count,
                    by: Some(by.clone()),
                })
            })
            .collect()
    } else {
        return Ok(None);
    };
    let _guard = CancelOnDrop(request.cancel.clone());
    let forwarded = peer_headers(headers);
    let asked: Vec<_> = cuts
        .iter()
        .enumerate()
        .skip(1)
        .map(|(i, cut)| {
            let params = cut_params(params, cut);
            // A part may take as long as the whole query may.
            let timeout = engine.options().timeout;
            tokio::spawn(peers.get(
                PeerKind::Query,
                i - 1,
                "/api/v1/query_range",
                params,
                forwarded.clone(),
                timeout,
            ))
        })
        .collect();
    let options = read_options(params)?;
    let mut results = vec![evaluate_cut(engine, state, scope, params, &request, &options, &cuts[0]).await?];
    // Peers' answers are read, and the whole one written, off the async
    // workers: either can be megabytes of JSON.
    for (call, cut) in asked.into_iter().zip(&cuts[1..]) {
        let answered = match call.await {
            Ok(Ok((200, body))) => run_blocking(move || Ok(matrix_of(&body))).await?,
            _ => None,
        };
        let result = match answered {
            Some(r) => r,
            None => evaluate_cut(engine, state, scope, params, &request, &options, cut).await?,
        };
        results.push(result);
    }
    Ok(Some(Split {
        results,
        warnings: options.warnings.take(),
    }))
}

/// Evaluates one part here.
async fn evaluate_cut(
    engine: &Engine,
    state: &AppState,
    scope: &TenantScope,
    params: &Params,
    request: &Request,
    options: &cairn_storage::ReadOptions,
    cut: &Cut,
) -> Result<QueryResult, ApiError> {
    let (part, _) = parse_range(engine, &params_of(&cut_params(params, cut)), request)?;
    let storage: Arc<dyn cairn_storage::Queryable> = state.reader_with(scope, options)?;
    let storage = match cut {
        Cut::Time(..) => storage,
        Cut::Series(shard) => Arc::new(ShardView::new(storage, shard.clone())),
    };
    let slot = state.query_gate().admit().await?;
    evaluate(part, storage, slot, |result| result).await
}

/// The shard of its series a part request asks for, if any.
pub(crate) fn requested_shard(params: &Params) -> Result<Option<Shard>, ApiError> {
    let Some(shard) = params.get(SHARD_PARAM) else {
        return Ok(None);
    };
    let invalid = || invalid_param(SHARD_PARAM, format!("{shard:?} is not <index>/<count>"));
    let (index, count) = shard.split_once('/').ok_or_else(invalid)?;
    let (index, count): (usize, usize) = (
        index.parse().map_err(|_| invalid())?,
        count.parse().map_err(|_| invalid())?,
    );
    if index >= count || count > MAX_SHARDS {
        return Err(invalid());
    }
    let names = params
        .get_all(SHARD_LABEL_PARAM)
        .into_iter()
        .map(String::from)
        .collect();
    let by = match params.get(SHARD_BY_PARAM) {
        Some("by") => ShardBy::Labels(names),
        Some("without") => ShardBy::AllBut(names),
        other => {
            return Err(invalid_param(
                SHARD_BY_PARAM,
                format!("{other:?} is neither by nor without"),
            ));
        }
    };
    Ok(Some(Shard {
        index,
        count,
        by: Some(Arc::new(by)),
    }))
}

/// `params` as the part `cut` asks for them.
fn cut_params(params: &Params, cut: &Cut) -> Vec<(String, String)> {
    match cut {
        Cut::Time(start, end) => {
            let mut out: Vec<(String, String)> = params
                .pairs()
                .iter()
                .filter(|(k, _)| k != "start" && k != "end")
                .cloned()
                .collect();
            for (name, t) in [("start", *start), ("end", *end)] {
                let mut s = String::new();
                crate::push_ts(&mut s, t);
                out.push((name.into(), s));
            }
            out
        }
        Cut::Series(shard) => {
            // A client's own shard parameters must not stand before ours.
            let mut out: Vec<(String, String)> = params
                .pairs()
                .iter()
                .filter(|(k, _)| ![SHARD_PARAM, SHARD_BY_PARAM, SHARD_LABEL_PARAM].contains(&k.as_str()))
                .cloned()
                .collect();
            out.push((SHARD_PARAM.into(), format!("{}/{}", shard.index, shard.count)));
            let (kind, names) = match shard.by.as_deref() {
                Some(ShardBy::AllBut(names)) => ("without", names.as_slice()),
                Some(ShardBy::Labels(names)) => ("by", names.as_slice()),
                None => ("without", &[][..]),
            };
            out.push((SHARD_BY_PARAM.into(), kind.into()));
            out.extend(names.iter().map(|n| (SHARD_LABEL_PARAM.to_string(), n.clone())));
            out
        }
    }
}

/// `params` with the bounds `start` and `end` (ms) in place of their own.
pub(crate) fn with_bounds(params: &Params, start: i64, end: i64) -> Params {
    params_of(&cut_params(params, &Cut::Time(start, end)))
}

fn params_of(pairs: &[(String, String)]) -> Params {
    let mut p = Params::default();
    for (k, v) in pairs {
        p.push(k.clone(), v.clone());
    }
    p
}

/// A peer's answer as a result, if it is a successful matrix of floats
/// (histograms are evaluated here: their JSON is not read back).
fn matrix_of(body: &[u8]) -> Option<QueryResult> {
    let v: serde_json::Value = serde_json::from_slice(body).ok()?;
    if v["status"] != "success" || v["data"]["resultType"] != "matrix" {
        return None;
    }
    let mut series = Vec::new();
    for s in v["data"]["result"].as_array()? {
        if s.get("histograms").is_some() {
            return None;
        }
        let mut pairs = Vec::new();
        for (name, value) in s["metric"].as_object()? {
            pairs.push(cairn_model::Label::new(name.as_str(), value.as_str()?));
        }
        let metric = Labels::new(pairs).ok()?;
        let mut floats = Vec::new();
        for point in s["values"].as_array().map(Vec::as_slice).unwrap_or_default() {
            let t = (point[0].as_f64()? * 1000.0).round() as i64;
            floats.push(cairn_model::Sample::new(t, go_float(point[1].as_str()?)?));
        }
        series.push(RangeSeries {
            metric,
            floats,
            histograms: Vec::new(),
        });
    }
    let strings = |key: &str| -> Option<Vec<String>> {
        match v.get(key) {
            None => Some(Vec::new()),
            Some(list) => list.as_array()?.iter().map(|s| s.as_str().map(String::from)).collect(),
        }
    };
    // The peer's stats, when the request (forwarded as it came) asked for them.
    let samples = &v["data"]["stats"]["samples"];
    let count = |key: &str| samples[key].as_u64().unwrap_or(0) as usize;
    Some(QueryResult {
        value: Value::Matrix(series),
        warnings: strings("warnings")?,
        infos: strings("infos")?,
        stats: QueryStats {
            samples_read: count("totalQueryableSamples"),
            peak_samples: count("peakSamples"),
        },
    })
}

/// A value as Prometheus writes it (Go's shortest form, which parses back
/// to the same float).
fn go_float(s: &str) -> Option<f64> {
    match s {
        "NaN" => Some(f64::NAN),
        "+Inf" => Some(f64::INFINITY),
        "-Inf" => Some(f64::NEG_INFINITY),
        _ => s.parse().ok(),
    }
}

/// The parts' results as one: each series' points in part (step) order,
/// series by labels as a range query orders them, each annotation once.
pub(crate) fn join(parts: Vec<QueryResult>) -> QueryResult {
    let mut series: BTreeMap<Labels, RangeSeries> = BTreeMap::new();
    let (mut warnings, mut infos) = (Vec::<String>::new(), Vec::<String>::new());
    let mut stats = QueryStats::default();
    for part in parts {
        stats.absorb(part.stats);
        if let Value::Matrix(m) = part.value {
            for s in m {
                match series.get_mut(&s.metric) {
                    Some(joined) => {
                        joined.floats.extend(s.floats);
                        joined.histograms.extend(s.histograms);
                    }
                    None => {
                        series.insert(s.metric.clone(), s);
                    }
                }
            }
        }
        for (into, from) in [(&mut warnings, part.warnings), (&mut infos, part.infos)] {
            for a in from {
                if !into.contains(&a) {
                    into.push(a);
                }
            }
        }
    }
    QueryResult {
        value: Value::Matrix(series.into_values().collect()),
        warnings,
        infos,
        stats,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cairn_model::Sample;

    fn result(series: &[(&str, &[(i64, f64)])], warnings: &[&str]) -> QueryResult {
        QueryResult {
            value: Value::Matrix(
                series
                    .iter()
                    .map(|(name, points)| RangeSeries {
                        metric: Labels::from_pairs([("__name__", *name)]),
                        floats: points.iter().map(|&(t, v)| Sample::new(t, v)).collect(),
                        histograms: Vec::new(),
                    })
                    .collect(),
            ),
            warnings: warnings.iter().map(|w| w.to_string()).collect(),
            infos: Vec::new(),
            stats: QueryStats::default(),
        }
    }

    #[test]
    fn parts_join_by_series_in_step_order_with_each_warning_once() {
        let joined = join(vec![
            result(&[("b", &[(1, 1.0)]), ("c", &[(2, 2.0)])], &["w"]),
            result(&[("a", &[(3, 3.0)]), ("b", &[(4, 4.0)])], &["w", "x"]),
        ]);
        assert_eq!(
            joined,
            result(
                &[("a", &[(3, 3.0)]), ("b", &[(1, 1.0), (4, 4.0)]), ("c", &[(2, 2.0)])],
                &["w", "x"]
            )
        );
    }

    #[test]
    fn a_shard_travels_in_a_parts_parameters() {
        let mut params = Params::default();
        params.push("query", "sum by (a) (m)");
        for by in [
            ShardBy::Labels(vec!["a".into(), "b,c".into()]),
            ShardBy::AllBut(Vec::new()),
        ] {
            let shard = Shard {
                index: 2,
                count: 3,
                by: Some(Arc::new(by)),
            };
            let sent = params_of(&cut_params(&params, &Cut::Series(shard.clone())));
            assert_eq!(requested_shard(&sent).unwrap(), Some(shard));
            assert_eq!(sent.get("query"), Some("sum by (a) (m)"));
        }
        assert_eq!(requested_shard(&params).unwrap(), None);
        for bad in ["3/3", "x", "1/"] {
            let mut p = Params::default();
            p.push(SHARD_PARAM, bad);
            p.push(SHARD_BY_PARAM, "by");
            assert!(requested_shard(&p).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_peers_matrix_reads_back_exactly() {
        let original = result(
            &[("m", &[(1_000, 0.1), (1_500, f64::INFINITY), (2_001, -3e-300)])],
            &["w"],
        );
        let body = crate::render_body(original.clone(), None, None);
        assert_eq!(matrix_of(body.as_bytes()), Some(original));
        let nan = crate::render_body(result(&[("m", &[(5, f64::NAN)])], &[]), None, None);
        let Some(QueryResult {
            value: Value::Matrix(m),
            ..
        }) = matrix_of(nan.as_bytes())
        else {
            panic!("{nan}");
        };
        assert!(m[0].floats[0].v.is_nan());
        assert_eq!(matrix_of(br#"{"status":"error"}"#), None);
        let histograms =
            r#"{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"histograms":[]}]}}"#;
        assert_eq!(matrix_of(histograms.as_bytes()), None, "histograms are evaluated here");
    }
}
