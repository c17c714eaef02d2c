//! The endpoints of what the server runs from a Prometheus configuration
//! file (`--config.file`): scrape targets and pools, their metadata, rules,
//! alerts, Alertmanagers, and the reload. The server plugs a [`Monitoring`]
//! into the state once storage is open; until then, and without a
//! configuration file, they answer as [`crate::empty`] does.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::SystemTime;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use cairn_model::Matcher;
use cairn_protocols::MetricMetadata;
use serde_json::{Value, json};

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
    /// `/api/v1/rules`' data.
    fn rules(&self, filter: &RuleFilter) -> Result<Value, String>;
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
    /// `group_limit`: at most this many groups, with a token for the next.
    pub group_limit: Option<usize>,
    pub group_next_token: Option<String>,
}

fn monitoring(state: &AppState) -> Option<Arc<dyn Monitoring>> {
    state.monitoring()
}

/// `GET /api/v1/targets`.
pub async fn targets(State(state): State<AppState>, params: Params) -> Response {
    match monitoring(&state) {
        Some(m) => Success::new(m.targets(params.get("state"), params.get("scrapePool"))).into_response(),
        None => empty::targets(params).await.into_response(),
    }
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

/// `GET /api/v1/rules` with Prometheus' filters.
pub async fn rules(State(state): State<AppState>, params: Params) -> Result<Success<Value>, ApiError> {
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
        group_limit,
        group_next_token,
    };
    match monitoring(&state) {
        Some(m) => m
            .rules(&filter)
            .map(Success::new)
            .map_err(|e| invalid_param("group_next_token", e)),
        None => Ok(Success::new(json!({ "groups": [] }))),
    }
}

/// `GET /api/v1/alerts`.
pub async fn alerts(State(state): State<AppState>) -> Success<Value> {
    Success::new(match monitoring(&state) {
        Some(m) => m.alerts(),
        None => json!({ "alerts": [] }),
    })
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
