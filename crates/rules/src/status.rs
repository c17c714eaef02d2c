//! Snapshots of groups, rules and alerts for the API, and their JSON as
//! Prometheus' `/api/v1/rules` and `/api/v1/alerts` write them.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime};

use serde_json::{Map, Value as Json, json};

use crate::alert::{AlertState, ns_to_system_time, system_time_to_ns};
use crate::file::RuleKind;
use crate::group::{Group, RuleHealth};

#[derive(Debug, Clone, PartialEq)]
pub struct GroupStatus {
    pub name: String,
    pub file: String,
    pub interval: Duration,
    pub query_offset: Duration,
    pub limit: usize,
    pub rules: Vec<RuleStatus>,
    pub evaluation_time: Duration,
    pub last_evaluation: Option<SystemTime>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct RuleStatus {
    pub name: String,
    pub alerting: bool,
    pub query: String,
    /// `for`.
    pub duration: Duration,
    pub keep_firing_for: Duration,
    pub labels: BTreeMap<String, String>,
    pub annotations: BTreeMap<String, String>,
    pub health: RuleHealth,
    pub last_error: Option<String>,
    pub evaluation_time: Duration,
    pub last_evaluation: Option<SystemTime>,
    /// Alerting rules: the highest state of its alerts (`inactive` when none).
    pub state: AlertState,
    /// Alerting rules: pending and firing alerts (not resolved ones).
    pub alerts: Vec<AlertStatus>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct AlertStatus {
    pub labels: BTreeMap<String, String>,
    pub annotations: BTreeMap<String, String>,
    pub state: AlertState,
    pub active_at: SystemTime,
    pub keep_firing_since: Option<SystemTime>,
    pub value: f64,
}

pub(crate) fn group_status(g: &Group) -> GroupStatus {
    let rules = g
        .rules
        .iter()
        .map(|r| {
            let mut alerts: Vec<AlertStatus> = r
                .active
                .values()
                .filter(|a| a.resolved_at.is_none())
                .map(|a| AlertStatus {
                    labels: a
                        .labels
                        .iter()
                        .map(|l| (l.name.to_string(), l.value.to_string()))
                        .collect(),
                    annotations: a.annotations.clone(),
                    state: a.state,
                    active_at: ns_to_system_time(a.active_at),
                    keep_firing_since: a.keep_firing_since.map(ns_to_system_time),
                    value: a.value,
                })
                .collect();
            alerts.sort_by(|a, b| a.labels.cmp(&b.labels));
            let state = r.active.values().map(|a| a.state).max().unwrap_or(AlertState::Inactive);
            RuleStatus {
                name: r.spec.name().to_string(),
                alerting: matches!(r.spec.kind, RuleKind::Alert(_)),
                query: r.spec.query.clone(),
                duration: r.spec.for_duration,
                keep_firing_for: r.spec.keep_firing_for,
                labels: r
                    .spec
                    .labels
                    .iter()
                    .filter(|(_, v)| !v.is_empty())
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect(),
                annotations: r.spec.annotations.clone(),
                health: r.health,
                last_error: r.last_error.clone(),
                evaluation_time: r.evaluation_time,
                last_evaluation: r.last_evaluation,
                state,
                alerts,
            }
        })
        .collect();
    GroupStatus {
        name: g.spec.name.clone(),
        file: g.spec.file.clone(),
        interval: g.interval,
        query_offset: g.query_offset,
        limit: g.spec.limit,
        rules,
        evaluation_time: g.evaluation_time,
        last_evaluation: g.last_evaluation,
    }
}

/// Go's `time.Time` in RFC 3339 with nanoseconds (the zero time when never set).
pub fn rfc3339_nano(t: Option<SystemTime>) -> String {
    let Some(t) = t else {
        return "0001-01-01T00:00:00Z".into();
    };
    let ns = system_time_to_ns(t);
    let secs = ns.div_euclid(1_000_000_000);
    let nanos = ns.rem_euclid(1_000_000_000);
    let (y, m, d) = cairn_model::civil::civil_from_days(secs.div_euclid(86_400));
    let sod = secs.rem_euclid(86_400);
    let mut out = format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}",
        sod / 3600,
        sod / 60 % 60,
        sod % 60
    );
    if nanos != 0 {
        out.push('.');
        out.push_str(format!("{nanos:09}").trim_end_matches('0'));
    }
    out.push('Z');
    out
}

fn go_float_e(v: f64) -> String {
    let mut s = String::new();
    cairn_model::go_float::push_go_sci(&mut s, v);
    s
}

fn alert_json(a: &AlertStatus) -> Json {
    let mut m = Map::new();
    m.insert("labels".into(), json!(a.labels));
    m.insert("annotations".into(), json!(a.annotations));
    m.insert("state".into(), json!(a.state.as_str()));
    m.insert("activeAt".into(), json!(rfc3339_nano(Some(a.active_at))));
    if let Some(k) = a.keep_firing_since {
        m.insert("keepFiringSince".into(), json!(rfc3339_nano(Some(k))));
    }
    m.insert("value".into(), json!(go_float_e(a.value)));
    Json::Object(m)
}

fn rule_json(r: &RuleStatus) -> Json {
    let mut m = Map::new();
    if r.alerting {
        m.insert("state".into(), json!(r.state.as_str()));
    }
    m.insert("name".into(), json!(r.name));
    m.insert("query".into(), json!(r.query));
    if r.alerting {
        m.insert("duration".into(), go_seconds(r.duration));
        m.insert("keepFiringFor".into(), go_seconds(r.keep_firing_for));
    }
    m.insert("labels".into(), json!(r.labels));
    if r.alerting {
        m.insert("annotations".into(), json!(r.annotations));
        m.insert("alerts".into(), Json::Array(r.alerts.iter().map(alert_json).collect()));
    }
    m.insert("health".into(), json!(r.health.as_str()));
    if let Some(e) = &r.last_error {
        m.insert("lastError".into(), json!(e));
    }
    m.insert("evaluationTime".into(), go_seconds(r.evaluation_time));
    m.insert("lastEvaluation".into(), json!(rfc3339_nano(r.last_evaluation)));
    m.insert("type".into(), json!(if r.alerting { "alerting" } else { "recording" }));
    Json::Object(m)
}

/// The `data` of `/api/v1/rules`: `{"groups": [...]}`.
/// Seconds as Go's encoding/json writes a float64: whole numbers without `.0`.
fn go_seconds(d: Duration) -> Json {
    let s = d.as_secs_f64();
    if s.fract() == 0.0 && s < 9_007_199_254_740_992.0 {
        json!(s as u64)
    } else {
        json!(s)
    }
}

pub fn rules_json(groups: &[GroupStatus]) -> Json {
    let groups: Vec<Json> = groups
        .iter()
        .map(|g| {
            json!({
                "name": g.name,
                "file": g.file,
                "rules": g.rules.iter().map(rule_json).collect::<Vec<_>>(),
                "interval": go_seconds(g.interval),
                "limit": g.limit,
                "evaluationTime": go_seconds(g.evaluation_time),
                "lastEvaluation": rfc3339_nano(g.last_evaluation),
            })
        })
        .collect();
    json!({ "groups": groups })
}

/// The `data` of `/api/v1/alerts`: `{"alerts": [...]}`.
pub fn alerts_json(alerts: &[AlertStatus]) -> Json {
    json!({ "alerts": alerts.iter().map(alert_json).collect::<Vec<_>>() })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_are_written_as_go_writes_a_float64() {
        assert_eq!(go_seconds(Duration::from_secs(60)).to_string(), "60");
        assert_eq!(go_seconds(Duration::ZERO).to_string(), "0");
        assert_eq!(go_seconds(Duration::from_millis(1500)).to_string(), "1.5");
        assert_eq!(go_seconds(Duration::from_micros(123)).to_string(), "0.000123");
    }
}
