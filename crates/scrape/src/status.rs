//! The JSON `data` of `/api/v1/targets`, `/api/v1/targets/metadata` and
//! `/api/v1/metadata` as Prometheus answers them (the caller wraps it in the
//! API's success envelope).

use std::collections::{BTreeMap, BTreeSet};
use std::time::{SystemTime, UNIX_EPOCH};

use cairn_model::{Labels, Matcher};
use serde_json::{Map, Value, json};

use crate::manager::ScrapeManager;
use crate::target::{SCRAPE_INTERVAL_LABEL, SCRAPE_TIMEOUT_LABEL};

/// How this server is reached from outside, for targets' `globalUrl`.
#[derive(Debug, Clone)]
pub struct GlobalUrlOptions {
    /// The address the server listens on (`host:port`).
    pub listen_address: String,
    /// The external URL's host (`host[:port]`) and scheme.
    pub host: String,
    pub scheme: String,
}

fn labels_json(labels: &Labels) -> Value {
    let mut m = Map::new();
    for l in labels.iter() {
        m.insert(l.name.to_string(), Value::String(l.value.to_string()));
    }
    Value::Object(m)
}

/// Go's `time.Time` in JSON (RFC 3339 with nanoseconds, trailing zeros cut), in UTC.
pub fn go_time_json(t: SystemTime) -> String {
    let Ok(d) = t.duration_since(UNIX_EPOCH) else {
        return "0001-01-01T00:00:00Z".into();
    };
    if d.is_zero() {
        return "0001-01-01T00:00:00Z".into();
    }
    let secs = d.as_secs() as i64;
    let (y, mo, day) = cairn_model::civil::civil_from_days(secs.div_euclid(86_400));
    let rem = secs.rem_euclid(86_400);
    let mut out = format!(
        "{y:04}-{mo:02}-{day:02}T{:02}:{:02}:{:02}",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    );
    let nanos = d.subsec_nanos();
    if nanos > 0 {
        let frac = format!("{nanos:09}");
        out.push('.');
        out.push_str(frac.trim_end_matches('0'));
    }
    out.push('Z');
    out
}

fn split_host_port(hostport: &str) -> (String, String) {
    if let Some(rest) = hostport.strip_prefix('[')
        && let Some((host, port)) = rest.split_once(']')
    {
        return (host.to_string(), port.strip_prefix(':').unwrap_or("").to_string());
    }
    match hostport.rsplit_once(':') {
        Some((h, p)) if !h.contains(':') => (h.to_string(), p.to_string()),
        _ => (hostport.to_string(), String::new()),
    }
}

fn join_host_port(host: &str, port: &str) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// Prometheus' `globalUrl`: a target on localhost is named by the external host.
pub fn global_url(scrape_url: &str, opts: &GlobalUrlOptions) -> String {
    let Some((scheme, rest)) = scrape_url.split_once("://") else {
        return scrape_url.to_string();
    };
    let (hostport, path) = match rest.find(['/', '?']) {
        Some(i) => rest.split_at(i),
        None => (rest, ""),
    };
    let (host, port) = split_host_port(hostport);
    if !["127.0.0.1", "localhost", "::1"].contains(&host.as_str()) {
        return scrape_url.to_string();
    }
    let (_, own_port) = split_host_port(&opts.listen_address);
    if port == own_port {
        return format!("{}://{}{path}", opts.scheme, opts.host);
    }
    let (external_host, _) = split_host_port(&opts.host);
    let new_host = if port.is_empty() {
        external_host
    } else {
        join_host_port(&external_host, &port)
    };
    format!("{scheme}://{new_host}{path}")
}

impl ScrapeManager {
    /// `/api/v1/targets`'s data. `state` is `active`, `dropped`, `any` or
    /// empty (case-insensitive); `scrape_pool` limits the lists to one pool.
    pub fn targets_json(&self, state: Option<&str>, scrape_pool: Option<&str>, global: &GlobalUrlOptions) -> Value {
        let state = state.unwrap_or("").to_ascii_lowercase();
        let show_active = matches!(state.as_str(), "" | "any" | "active");
        let show_dropped = matches!(state.as_str(), "" | "any" | "dropped");
        let pool_wanted = |p: &str| scrape_pool.is_none_or(|w| w.is_empty() || w == p);
        let mut active = Vec::new();
        if show_active {
            for (pool, targets) in self.active_targets() {
                if !pool_wanted(&pool) {
                    continue;
                }
                for t in targets {
                    let status = t.status();
                    active.push(json!({
                        "discoveredLabels": labels_json(&t.discovered_labels()),
                        "labels": labels_json(&t.labels()),
                        "scrapePool": pool,
                        "scrapeUrl": t.url(),
                        "globalUrl": global_url(t.url(), global),
                        "lastError": status.last_error.unwrap_or_default(),
                        "lastScrape": go_time_json(status.last_scrape),
                        "lastScrapeDuration": status.last_scrape_duration.as_secs_f64(),
                        "health": status.health.as_str(),
                        "scrapeInterval": t.get(SCRAPE_INTERVAL_LABEL),
                        "scrapeTimeout": t.get(SCRAPE_TIMEOUT_LABEL),
                    }));
                }
            }
        }
        let mut dropped = Vec::new();
        let mut counts = Value::Null;
        if show_dropped {
            counts = json!(self.dropped_target_counts());
            for (pool, targets) in self.dropped_targets() {
                if !pool_wanted(&pool) {
                    continue;
                }
                for t in targets {
                    dropped
                        .push(json!({ "discoveredLabels": labels_json(&t.discovered_labels()), "scrapePool": pool }));
                }
            }
        }
        json!({ "activeTargets": active, "droppedTargets": dropped, "droppedTargetCounts": counts })
    }

    /// `/api/v1/targets/metadata`'s data: per active target matching
    /// `match_target`, its families' metadata (or only `metric`'s), at most
    /// `limit` entries.
    pub fn targets_metadata_json(&self, match_target: &[Matcher], metric: Option<&str>, limit: Option<usize>) -> Value {
        let metric = metric.filter(|m| !m.is_empty());
        let mut out = Vec::new();
        'pools: for targets in self.active_targets().into_values() {
            for t in targets {
                if limit.is_some_and(|l| out.len() >= l) {
                    break 'pools;
                }
                let labels = t.labels();
                if !match_target
                    .iter()
                    .all(|m| m.matches(labels.get(&m.name).unwrap_or("")))
                {
                    continue;
                }
                match metric {
                    None => {
                        for md in t.metadata() {
                            out.push(json!({
                                "target": labels_json(&labels),
                                "metric": md.family,
                                "type": md.metric_type.as_str(),
                                "help": md.help,
                                "unit": md.unit,
                            }));
                        }
                    }
                    Some(name) => {
                        if let Some(md) = t.metadata_of(name) {
                            out.push(json!({
                                "target": labels_json(&labels),
                                "type": md.metric_type.as_str(),
                                "help": md.help,
                                "unit": md.unit,
                            }));
                        }
                    }
                }
            }
        }
        Value::Array(out)
    }

    /// `/api/v1/metadata`'s data from the scraped targets: per family, its
    /// distinct metadata; `limit` families, `limit_per_metric` entries each.
    pub fn metadata_json(&self, metric: Option<&str>, limit: Option<usize>, limit_per_metric: Option<usize>) -> Value {
        let metric = metric.filter(|m| !m.is_empty());
        let mut families: BTreeMap<String, BTreeSet<(String, String, String)>> = BTreeMap::new();
        for targets in self.active_targets().into_values() {
            for t in targets {
                let mds = match metric {
                    None => t.metadata(),
                    Some(name) => t.metadata_of(name).into_iter().collect(),
                };
                for md in mds {
                    let set = families.entry(md.family.clone()).or_default();
                    if limit_per_metric.is_some_and(|l| l > 0 && set.len() >= l) {
                        continue;
                    }
                    set.insert((md.metric_type.as_str().to_string(), md.help, md.unit));
                }
            }
        }
        let mut out = Map::new();
        for (name, set) in families {
            if limit.is_some_and(|l| out.len() >= l) {
                break;
            }
            let entries: Vec<Value> = set
                .into_iter()
                .map(|(t, h, u)| json!({ "type": t, "help": h, "unit": u }))
                .collect();
            out.insert(name, Value::Array(entries));
        }
        Value::Object(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn go_time_json_matches_go() {
        assert_eq!(go_time_json(UNIX_EPOCH), "0001-01-01T00:00:00Z");
        let t = UNIX_EPOCH + Duration::new(1_484_662_064, 723_715_405);
        assert_eq!(go_time_json(t), "2017-01-17T14:07:44.723715405Z");
        assert_eq!(
            go_time_json(UNIX_EPOCH + Duration::from_millis(1_484_662_064_500)),
            "2017-01-17T14:07:44.5Z"
        );
    }

    #[test]
    fn global_url_renames_localhost() {
        let opts = GlobalUrlOptions {
            listen_address: "0.0.0.0:9090".into(),
            host: "prom.example:9090".into(),
            scheme: "https".into(),
        };
        assert_eq!(
            global_url("http://localhost:9090/metrics", &opts),
            "https://prom.example:9090/metrics"
        );
        assert_eq!(
            global_url("http://127.0.0.1:9100/metrics", &opts),
            "http://prom.example:9100/metrics"
        );
        assert_eq!(
            global_url("http://node:9100/metrics", &opts),
            "http://node:9100/metrics"
        );
    }
}
