//! The endpoints of what the server runs from a Prometheus configuration
//! file (`--config.file`): scrape targets and pools, their metadata, rules,
//! alerts, Alertmanagers, and the reload. The server plugs a [`Monitoring`]
//! into the state once storage is open; until then, and without a
//! configuration file, they answer as [`crate::empty`] does.
//!
//! In a cluster each node scrapes and evaluates its share: targets, rules
//! and alerts are every node's own part joined (a node that does not answer
//! is named in a warning).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::SystemTime;

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use cairn_model::Matcher;
use cairn_protocols::MetricMetadata;
use serde_json::{Value, json};

use crate::peers::{PeerKind, Peers, ask_every_peer};
use crate::{
    ApiError, AppState, Exposition, Params, Success, empty, invalid_param, parse_match_params, parse_selector,
};

/// Scraping, rules and notifications as the API shows them.
pub trait Monitoring: Send + Sync {
    /// `/api/v1/targets`' data; `state` is `active`, `dropped`, `any` or none.
    fn targets(&self, state: Option<&str>, scrape_pool: Option<&str>) -> Value;
    /// The configured scrape pools (jobs), sorted.
    fn scrape_pools(&self) -> Vec<String>;
    /// `/api/v1/targets/metadata`'s data.
    fn targets_metadata(&self, match_target: &[Matcher], metric: Option<&str>, limit: Option<usize>) -> Value;
    /// The metric metadata scrapes reported, for `/api/v1/metadata`.
    fn scraped_metadata(&self) -> Vec<MetricMetadata>;
    /// `/api/v1/rules`' data: every group `filter` keeps, ordered by file
    /// then name (pages are cut from the cluster's list).
    fn rules(&self, filter: &RuleFilter) -> Value;
    /// `/api/v1/alerts`' data.
    fn alerts(&self) -> Value;
    /// `/api/v1/alertmanagers`' data.
    fn alertmanagers(&self) -> Value;
    /// The configuration as `/api/v1/status/config` shows it.
    fn config_yaml(&self) -> String;
    /// Reads the configuration file again and applies it, or keeps the
    /// running configuration and says why not.
    fn reload(&self) -> Pin<Box<dyn Future<Output = Result<(), String>> + Send + 'static>>;
    /// How the last (re)load of the configuration went.
    fn reload_status(&self) -> ReloadStatus;
    /// Prometheus' own metrics of configuration reloads, scraping, rules
    /// and notifications, for `/metrics`.
    fn render_metrics(&self, e: &mut Exposition);
}

/// The outcome of the last configuration (re)load, as Prometheus' runtime
/// information and `prometheus_config_last_reload_*` report it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReloadStatus {
    /// Whether the last attempt applied the file.
    pub successful: bool,
    /// When a load last succeeded.
    pub last_success: SystemTime,
}

/// What `/api/v1/rules` asks for.
#[derive(Debug, Default)]
pub struct RuleFilter {
    /// `type`: only alerting (`Some(true)`) or recording rules.
    pub alerting: Option<bool>,
    pub rule_names: Vec<String>,
    pub rule_groups: Vec<String>,
    pub files: Vec<String>,
    /// `match[]`: rules whose labels match any of these selectors.
    pub matchers: Vec<Vec<Matcher>>,
    pub exclude_alerts: bool,
}

/// `group_limit`: at most this many groups, from the one `group_next_token` names.
struct GroupPage {
    limit: usize,
    next_token: Option<String>,
}

fn monitoring(state: &AppState) -> Option<Arc<dyn Monitoring>> {
    state.monitoring()
}

/// The other nodes of a cluster, when there are.
type PeersExtension = Option<axum::Extension<Arc<dyn Peers>>>;

/// Every peer's answer to `path` with the client's `params`, and warnings
/// naming those that did not answer.
async fn peers_data(
    peers: PeersExtension,
    headers: &HeaderMap,
    path: &'static str,
    params: Vec<(String, String)>,
    what: &str,
) -> (Vec<Value>, Vec<String>) {
    let peers = peers.map(|axum::Extension(p)| p);
    let mut data = Vec::new();
    let mut warnings = Vec::new();
    for answer in ask_every_peer(peers.as_ref(), headers, PeerKind::Any, path, params).await {
        match answer {
            Ok(d) => data.push(d),
            Err(e) => warnings.push(format!("the {what} of a node are missing: {e}")),
        }
    }
    (data, warnings)
}

/// `list`'s array `key`, with the peers' arrays `key` appended.
fn join_arrays(list: &mut Value, key: &str, peers: Vec<Value>) {
    if let Some(all) = list.get_mut(key).and_then(Value::as_array_mut) {
        for mut peer in peers {
            if let Some(items) = peer.get_mut(key).and_then(Value::as_array_mut) {
                all.append(items);
            }
        }
    }
}

/// `GET /api/v1/targets`. In a cluster, the active targets are every
/// node's; each node drops the same targets, so those are this one's.
pub async fn targets(
    State(state): State<AppState>,
    peers: PeersExtension,
    headers: HeaderMap,
    params: Params,
) -> Response {
    let Some(m) = monitoring(&state) else {
        return empty::targets(params).await.into_response();
    };
    let mut data = m.targets(params.get("state"), params.get("scrapePool"));
    let (others, warnings) = peers_data(peers, &headers, "/api/v1/targets", params.pairs().to_vec(), "targets").await;
    if !others.is_empty() {
        join_arrays(&mut data, "activeTargets", others);
        if let Some(active) = data.get_mut("activeTargets").and_then(Value::as_array_mut) {
            let key = |t: &Value| {
                (
                    t["scrapePool"].to_string(),
                    t["scrapeUrl"].to_string(),
                    t["labels"].to_string(),
                )
            };
            active.sort_by_key(key);
        }
    }
    Success::with_warnings(data, warnings).into_response()
}

/// `GET /api/v1/scrape_pools`.
pub async fn scrape_pools(State(state): State<AppState>) -> Success<Value> {
    let pools = monitoring(&state).map(|m| m.scrape_pools()).unwrap_or_default();
    Success::new(json!({ "scrapePools": pools }))
}

/// `GET /api/v1/targets/metadata`, after Prometheus' checks of `limit` and `match_target`.
pub async fn targets_metadata(State(state): State<AppState>, params: Params) -> Result<Success<Value>, ApiError> {
    let limit = match params.get("limit") {
        Some(l) => match l.parse::<i64>() {
            Ok(l) if l < 0 => None,
            Ok(l) => Some(l as usize),
            Err(_) => return Err(ApiError::bad_data("limit must be a number")),
        },
        None => None,
    };
    let matchers = match params.get("match_target").filter(|t| !t.is_empty()) {
        Some(target) => {
            let mut sets = parse_selector(target).map_err(|e| invalid_param("match_target", e.message))?;
            sets.pop().unwrap_or_default()
        }
        None => Vec::new(),
    };
    Ok(Success::new(match monitoring(&state) {
        Some(m) => m.targets_metadata(&matchers, params.get("metric"), limit),
        None => json!([]),
    }))
}

/// `GET /api/v1/rules` with Prometheus' filters; in a cluster, every
/// node's groups, paged together.
pub async fn rules(
    State(state): State<AppState>,
    peers: PeersExtension,
    headers: HeaderMap,
    params: Params,
) -> Result<Success<Value>, ApiError> {
    let alerting = match params.get("type").map(str::to_ascii_lowercase).as_deref() {
        None | Some("") => None,
        Some("alert") => Some(true),
        Some("record") => Some(false),
        Some(t) => return Err(invalid_param("type", format!("not supported value {t:?}"))),
    };
    let exclude_alerts = match params.get("exclude_alerts").unwrap_or("") {
        "" => false,
        v => crate::params::parse_bool(v).ok_or_else(|| {
            invalid_param(
                "exclude_alerts",
                format!("strconv.ParseBool: parsing {v:?}: invalid syntax"),
            )
        })?,
    };
    let group_limit = match params.get("group_limit").filter(|v| !v.is_empty()) {
        Some(v) => match v.parse::<i64>() {
            Ok(n) if n > 0 => Some(n as usize),
            _ => {
                return Err(invalid_param("group_limit", "group_limit needs to be greater than 0"));
            }
        },
        None => None,
    };
    let group_next_token = params
        .get("group_next_token")
        .filter(|t| !t.is_empty())
        .map(str::to_string);
    if group_next_token.is_some() && group_limit.is_none() {
        return Err(invalid_param(
            "group_next_token",
            "group_limit needs to be present in order to paginate over the groups",
        ));
    }
    let filter = RuleFilter {
        alerting,
        rule_names: params.get_all("rule_name[]").into_iter().map(str::to_string).collect(),
        rule_groups: params.get_all("rule_group[]").into_iter().map(str::to_string).collect(),
        files: params.get_all("file[]").into_iter().map(str::to_string).collect(),
        matchers: parse_match_params(&params.get_all("match[]"))?,
        exclude_alerts,
    };
    let page = group_limit.map(|limit| GroupPage {
        limit,
        next_token: group_next_token,
    });
    let Some(m) = monitoring(&state) else {
        return Ok(Success::new(json!({ "groups": [] })));
    };
    let mut data = m.rules(&filter);
    // The peers' whole lists: the page is cut from all of them.
    let unpaged = params
        .pairs()
        .iter()
        .filter(|(k, _)| k != "group_limit" && k != "group_next_token")
        .cloned()
        .collect();
    let (others, warnings) = peers_data(peers, &headers, "/api/v1/rules", unpaged, "rules").await;
    if !others.is_empty() {
        join_arrays(&mut data, "groups", others);
        if let Some(groups) = data.get_mut("groups").and_then(Value::as_array_mut) {
            groups.sort_by_key(|g| (g["file"].to_string(), g["name"].to_string()));
        }
    }
    if let Some(page) = page {
        paginate_groups(&mut data, &page)?;
    }
    Ok(Success::with_warnings(data, warnings))
}

/// Cuts `data`'s groups to one page, adding the next page's token when
/// groups remain.
fn paginate_groups(data: &mut Value, page: &GroupPage) -> Result<(), ApiError> {
    let Some(groups) = data.get_mut("groups").and_then(Value::as_array_mut) else {
        return Ok(());
    };
    if let Some(token) = &page.next_token {
        let start = groups
            .iter()
            .position(|g| &group_token(g) == token)
            .ok_or_else(|| invalid_param("group_next_token", "invalid group_next_token"))?;
        groups.drain(..start);
    }
    let next = groups.get(page.limit).map(group_token);
    groups.truncate(page.limit);
    if let (Some(next), Some(obj)) = (next, data.as_object_mut()) {
        obj.insert("groupNextToken".into(), Value::String(next));
    }
    Ok(())
}

/// An opaque, stable token naming a group for pagination.
fn group_token(group: &Value) -> String {
    let (file, name) = (
        group["file"].as_str().unwrap_or(""),
        group["name"].as_str().unwrap_or(""),
    );
    format!(
        "{:016x}",
        xxhash_rust::xxh3::xxh3_64(format!("{file};{name}").as_bytes())
    )
}

/// `GET /api/v1/alerts`; in a cluster, every node's.
pub async fn alerts(State(state): State<AppState>, peers: PeersExtension, headers: HeaderMap) -> Success<Value> {
    let Some(m) = monitoring(&state) else {
        return Success::new(json!({ "alerts": [] }));
    };
    let mut data = m.alerts();
    let (others, warnings) = peers_data(peers, &headers, "/api/v1/alerts", Vec::new(), "alerts").await;
    join_arrays(&mut data, "alerts", others);
    Success::with_warnings(data, warnings)
}

/// `GET /api/v1/alertmanagers`.
pub async fn alertmanagers(State(state): State<AppState>) -> Response {
    match monitoring(&state) {
        Some(m) => Success::new(m.alertmanagers()).into_response(),
        None => empty::alertmanagers().await.into_response(),
    }
}

/// `POST|PUT /-/reload`: only with the lifecycle API on, as Prometheus.
pub async fn reload(State(state): State<AppState>) -> Response {
    if !state.config().enable_lifecycle {
        return (StatusCode::FORBIDDEN, "Lifecycle API is not enabled.").into_response();
    }
    let Some(m) = monitoring(&state) else {
        return (StatusCode::OK, "").into_response();
    };
    match m.reload().await {
        Ok(()) => (StatusCode::OK, "").into_response(),
        Err(e) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("failed to reload config: {e}\n"),
        )
            .into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn groups(names: &[(&str, &str)]) -> Value {
        let groups: Vec<Value> = names.iter().map(|(f, n)| json!({ "file": f, "name": n })).collect();
        json!({ "groups": groups })
    }

    fn names(data: &Value) -> Vec<String> {
        let groups = data["groups"].as_array().unwrap();
        groups.iter().map(|g| g["name"].as_str().unwrap().to_string()).collect()
    }

    #[test]
    fn groups_are_paged_by_tokens_naming_the_next_group() {
        let all = groups(&[("a.yml", "g1"), ("a.yml", "g2"), ("b.yml", "g3")]);
        let mut page1 = all.clone();
        paginate_groups(
            &mut page1,
            &GroupPage {
                limit: 2,
                next_token: None,
            },
        )
        .unwrap();
        assert_eq!(names(&page1), ["g1", "g2"]);
        let next = page1["groupNextToken"].as_str().map(str::to_string);
        assert!(next.is_some());
        let mut page2 = all.clone();
        paginate_groups(
            &mut page2,
            &GroupPage {
                limit: 2,
                next_token: next,
            },
        )
        .unwrap();
        assert_eq!(names(&page2), ["g3"]);
        assert!(page2.get("groupNextToken").is_none(), "the last page names no next one");
        let mut bad = all.clone();
        let e = paginate_groups(
            &mut bad,
            &GroupPage {
                limit: 1,
                next_token: Some("nope".into()),
            },
        );
        assert!(e.is_err());
    }

    #[test]
    fn the_peers_lists_are_appended() {
        let mut mine = json!({ "alerts": [{ "a": 1 }] });
        join_arrays(
            &mut mine,
            "alerts",
            vec![json!({ "alerts": [{ "a": 2 }] }), json!({ "alerts": [] })],
        );
        assert_eq!(mine, json!({ "alerts": [{ "a": 1 }, { "a": 2 }] }));
    }
}
