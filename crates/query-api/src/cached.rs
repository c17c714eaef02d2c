//! Range queries answered with the results cache
//! ([`cairn_http::ResultsCache`]): the steps of an identical query (same
//! expression, parameters and step grid) kept from before are reused, and
//! only the steps after them are evaluated. A dashboard refreshing a
//! sliding window then evaluates only its newest steps.
//!
//! Only settled steps are kept: those whose data ([`Parsed::steps_reach_ahead`]
//! past the step) is older than [`cairn_storage::SETTLED_AFTER_MS`], which
//! only an out-of-order or backfilled write, a delete or retention changes.
//! Storage counts each such change ([`cairn_storage::Queryable::settled_changes`]),
//! and kept steps are used only at the count they were computed at. Queries
//! whose steps are not answered from the data around each alone (`@`,
//! `start()`, `end()`, ...) are not cached, nor those with `limit` or
//! `stats`, nor any request with `nocache=1`, as VictoriaMetrics.
//!
//! In a cluster the cache lives on the node a query reaches, and the count
//! is the cluster's (the ingesters' and the compacted days').

use std::sync::Arc;

use axum::http::HeaderMap;
use axum::response::Response;
use cairn_http::peers::Peers;
use cairn_http::{AppState, CacheKey, CachedSteps, Params, read_options, run_blocking};
use cairn_promql::{Engine, QueryResult, RangeSeries, Value};
use cairn_storage::TenantScope;

use crate::split::{self, join, with_bounds};
use crate::{CancelOnDrop, Request, evaluate, parse_range};

/// On a range query's answer: how many of its steps came from the cache.
pub const CACHED_STEPS_HEADER: &str = "x-cairn-cached-steps";

/// The answer of a range query through the cache, or `None` when the
/// query is not one the cache takes.
///
/// The steps not kept are cut over `peers` as any range query is, where
/// they are long enough ([`split::evaluate_split`]).
pub(crate) async fn answer(
    state: &AppState,
    scope: &TenantScope,
    engine: &Engine,
    params: &Params,
    peers: Option<(&HeaderMap, &Arc<dyn Peers>)>,
) -> Result<Option<Response>, cairn_http::ApiError> {
    let cache = state.results_cache();
    let asked_not_to = params.get("nocache").is_some_and(|v| v == "1" || v == "true");
    if !cache.is_enabled() || asked_not_to || crate::stats_requested(params) {
        return Ok(None);
    }
    let request = Request::new(state, scope);
    let (parsed, limit) = parse_range(engine, params, &request)?;
    let (start, end, step) = parsed.bounds();
    let (Some(ahead), None) = (parsed.steps_reach_ahead(), limit) else {
        return Ok(None);
    };
    let options = read_options(params)?;
    let storage = state.reader_with(scope, &options)?;
    // Read before anything is evaluated: a change landing meanwhile moves
    // it past what the kept steps are stored under. Off the async workers:
    // a cluster asks its ingesters.
    let counted = storage.clone();
    let Some(settled_changes) = run_blocking(move || Ok(counted.settled_changes())).await? else {
        return Ok(None);
    };
    let _guard = CancelOnDrop(request.cancel.clone());
    let key = key_of(scope, params, start, step);
    let kept = cache
        .get(&key, settled_changes)
        .filter(|c| c.start <= start && start <= c.end);
    let mut parts = Vec::new();
    let mut fresh_from = start;
    let mut reused = 0;
    if let Some(kept) = &kept {
        let series = steps_between(&kept.series, start, end);
        reused = (kept.end.min(end) - start) / step + 1;
        parts.push(QueryResult {
            value: Value::Matrix(series),
            warnings: kept.warnings.clone(),
            infos: kept.infos.clone(),
            stats: Default::default(),
        });
        fresh_from = kept.end + step;
    }
    let mut split_warnings = Vec::new();
    let mut split_parts = None;
    if fresh_from <= end {
        let fresh_params = with_bounds(params, fresh_from, end);
        let split = match peers {
            Some((headers, peers)) => {
                split::evaluate_split(state, scope, engine, &fresh_params, headers, peers).await?
            }
            None => None,
        };
        if let Some(split) = split {
            split_parts = Some(split.results.len());
            parts.extend(split.results);
            split_warnings = split.warnings;
        } else {
            let (fresh, _) = parse_range(engine, &fresh_params, &request)?;
            let slot = state.query_gate().admit().await?;
            parts.push(evaluate(fresh, storage, slot, |r| r).await?);
        }
    }
    let mut read_warnings = options.warnings.take();
    read_warnings.extend(split_warnings);
    let settled_end = last_step_before(
        start,
        step,
        cairn_storage::settled_before(cairn_http::now_ms()).saturating_sub(ahead),
    )
    .min(end);
    let cache = cache.clone();
    let mut response = run_blocking(move || {
        let mut joined = join(parts);
        joined.warnings.extend(read_warnings);
        let mut seen = std::collections::HashSet::new();
        joined.warnings.retain(|w| seen.insert(w.clone()));
        if let Value::Matrix(series) = &joined.value
            && settled_end >= start
        {
            cache.put(
                key,
                CachedSteps {
                    start,
                    end: settled_end,
                    series: steps_between(series, start, settled_end),
                    warnings: joined.warnings.clone(),
                    infos: joined.infos.clone(),
                    settled_changes,
                },
            );
        }
        Ok(crate::render(joined, None, None))
    })
    .await?;
    if let Ok(n) = axum::http::HeaderValue::from_str(&reused.to_string()) {
        response.headers_mut().insert(CACHED_STEPS_HEADER, n);
    }
    if let Some(n) = split_parts {
        split::mark_parts(&mut response, n);
    }
    Ok(Some(response))
}

/// The cache key of a range query: its tenants, its parameters but the
/// bounds (and `nocache`), and its step grid.
fn key_of(scope: &TenantScope, params: &Params, start: i64, step: i64) -> CacheKey {
    let tenants: Vec<&str> = scope.tenants().iter().map(|t| t.as_str()).collect();
    let mut params: Vec<(String, String)> = params
        .pairs()
        .iter()
        .filter(|(k, _)| !matches!(k.as_str(), "start" | "end" | "nocache"))
        .cloned()
        .collect();
    params.sort();
    CacheKey {
        tenants: tenants.join(","),
        params,
        step,
        phase: start.rem_euclid(step),
    }
}

/// The last step on the grid of `start` and `step` at or before `t`.
fn last_step_before(start: i64, step: i64, t: i64) -> i64 {
    if t < start {
        return start - step;
    }
    start + (t - start) / step * step
}

/// `series` with only their points from `from` to `to`; those left
/// without any are left out.
fn steps_between(series: &[RangeSeries], from: i64, to: i64) -> Vec<RangeSeries> {
    series
        .iter()
        .filter_map(|s| {
            let floats = points_between(&s.floats, |p| p.t, from, to);
            let histograms = points_between(&s.histograms, |p| p.t, from, to);
            (!floats.is_empty() || !histograms.is_empty()).then(|| RangeSeries {
                metric: s.metric.clone(),
                floats: floats.to_vec(),
                histograms: histograms.to_vec(),
            })
        })
        .collect()
}

/// The run of `points` (in step order) from `from` to `to`.
fn points_between<T>(points: &[T], t: impl Fn(&T) -> i64, from: i64, to: i64) -> &[T] {
    let first = points.partition_point(|p| t(p) < from);
    let end = points.partition_point(|p| t(p) <= to).max(first);
    &points[first..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_settled_step_lies_on_the_grid() {
        assert_eq!(last_step_before(1000, 100, 1000), 1000);
        assert_eq!(last_step_before(1000, 100, 1099), 1000);
        assert_eq!(last_step_before(1000, 100, 1100), 1100);
        assert_eq!(last_step_before(1000, 100, 999), 900);
    }

    #[test]
    fn points_between_take_the_run_within_both_bounds() {
        let t = |p: &i64| *p;
        let points = [10, 20, 30, 40];
        assert_eq!(points_between(&points, t, 20, 30), [20, 30]);
        assert_eq!(points_between(&points, t, 15, 35), [20, 30]);
        assert_eq!(points_between(&points, t, 0, 100), points);
        assert!(points_between(&points, t, 41, 100).is_empty());
        assert!(points_between(&points, t, 31, 29).is_empty());
    }
}
