//! Metric metadata (type, help, unit) learnt from remote write, and
//! `GET /api/v1/metadata`, which Grafana uses for metric hints.
//!
//! Prometheus answers from its scrape targets; Cairn answers from what remote
//! write senders reported, kept in memory (lost on restart; senders resend
//! metadata periodically, Prometheus every minute by default); in a cluster,
//! from what every node was sent.

use std::collections::BTreeMap;
use std::sync::Arc;

use cairn_protocols::{MetricMetadata, MetricType};
use parking_lot::RwLock;
use serde::Serialize;
use serde::ser::SerializeStruct;

use crate::peers::{PeerKind, Peers, ask_every_peer};
use crate::{ApiError, AppState, Params, Success, Tenant};

/// Most distinct (type, help, unit) entries kept per metric family; a new one
/// past this evicts the oldest.
pub const MAX_ENTRIES_PER_METRIC: usize = 8;
/// Most metric families kept; metadata of further families is ignored.
pub const MAX_METRIC_FAMILIES: usize = 100_000;

/// One distinct description of a metric family.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetadataEntry {
    pub metric_type: MetricType,
    pub help: String,
    pub unit: String,
}

impl Serialize for MetadataEntry {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut s = serializer.serialize_struct("Metadata", 3)?;
        s.serialize_field("type", self.metric_type.as_str())?;
        s.serialize_field("help", &self.help)?;
        s.serialize_field("unit", &self.unit)?;
        s.end()
    }
}

/// In-memory metadata by metric family name, filled by the remote-write
/// handler. Distinct entries per family are kept in arrival order.
#[derive(Debug, Default)]
pub struct MetadataStore {
    families: RwLock<BTreeMap<String, Vec<MetadataEntry>>>,
}

impl MetadataStore {
    pub fn new() -> Self {
        Self::default()
    }

    /// Records what a sender reported. Entries already known are no-ops (a
    /// read lock only, as senders repeat the same metadata every interval).
    pub fn record(&self, metadata: &[MetricMetadata]) {
        let fresh: Vec<&MetricMetadata> = {
            let families = self.families.read();
            metadata
                .iter()
                .filter(|m| !m.metric_family_name.is_empty())
                .filter(|m| {
                    !families
                        .get(&m.metric_family_name)
                        .is_some_and(|entries| entries.iter().any(|e| same(e, m)))
                })
                .collect()
        };
        if fresh.is_empty() {
            return;
        }
        let mut families = self.families.write();
        for m in fresh {
            let full = families.len() >= MAX_METRIC_FAMILIES;
            let entries = match families.get_mut(&m.metric_family_name) {
                Some(entries) => entries,
                None if full => continue,
                None => families.entry(m.metric_family_name.clone()).or_default(),
            };
            if entries.iter().any(|e| same(e, m)) {
                continue;
            }
            if entries.len() >= MAX_ENTRIES_PER_METRIC {
                entries.remove(0);
            }
            entries.push(MetadataEntry {
                metric_type: m.metric_type,
                help: m.help.clone(),
                unit: m.unit.clone(),
            });
        }
    }

    /// Families (sorted by name) with their entries: only `metric` if given;
    /// at most `limit` families and `limit_per_metric` entries each.
    pub fn list(
        &self,
        metric: Option<&str>,
        limit: Option<usize>,
        limit_per_metric: Option<usize>,
    ) -> BTreeMap<String, Vec<MetadataEntry>> {
        let families = self.families.read();
        let per = |entries: &Vec<MetadataEntry>| -> Vec<MetadataEntry> {
            entries
                .iter()
                .take(limit_per_metric.unwrap_or(usize::MAX))
                .cloned()
                .collect()
        };
        let limit = limit.unwrap_or(usize::MAX);
        match metric {
            Some(name) => families
                .get_key_value(name)
                .filter(|_| limit > 0)
                .map(|(k, v)| (k.clone(), per(v)))
                .into_iter()
                .collect(),
            None => families.iter().take(limit).map(|(k, v)| (k.clone(), per(v))).collect(),
        }
    }
}

impl MetadataStore {
    /// Adds `other`'s entries (a federated read's tenants together).
    pub fn absorb(&self, other: &MetadataStore) {
        let theirs = other.families.read();
        let mut mine = self.families.write();
        for (name, entries) in theirs.iter() {
            let into = mine.entry(name.clone()).or_default();
            for e in entries {
                if !into.contains(e) {
                    into.push(e.clone());
                }
            }
        }
    }
}

fn same(e: &MetadataEntry, m: &MetricMetadata) -> bool {
    e.metric_type == m.metric_type && e.help == m.help && e.unit == m.unit
}

/// A Go `strconv.Atoi` parameter: `None` when absent.
fn int_param(params: &Params, name: &str) -> Result<Option<i64>, ApiError> {
    params
        .get(name)
        .map(|v| {
            v.parse::<i64>()
                .map_err(|_| ApiError::bad_data(format!("{name} must be a number")))
        })
        .transpose()
}

/// `GET /api/v1/metadata`: `{"up":[{"type":"gauge","help":"...","unit":""}]}`.
/// `metric` selects one family; `limit` (negative: no limit, `0`: none) caps
/// the number of families, `limit_per_metric` (`> 0`) the entries of each.
/// In a cluster, each node keeps what the writes it received reported: the
/// answer joins every node's (a node that does not answer is named in a
/// warning).
pub async fn metadata(
    axum::extract::State(state): axum::extract::State<AppState>,
    Tenant(scope): Tenant,
    peers: Option<axum::Extension<Arc<dyn Peers>>>,
    headers: axum::http::HeaderMap,
    params: Params,
) -> Result<Success<BTreeMap<String, Vec<MetadataEntry>>>, ApiError> {
    let limit = int_param(&params, "limit")?.and_then(|l| usize::try_from(l).ok());
    let per_metric = int_param(&params, "limit_per_metric")?
        .filter(|&l| l > 0)
        .and_then(|l| usize::try_from(l).ok());
    let metric = params.get("metric");
    let mut store = state.metadata_of(&scope);
    // Scrapes write to the default tenant: their metadata is its too.
    if let Some(m) = state.monitoring()
        && scope.only().is_ok_and(|t| t.is_default())
    {
        let joined = MetadataStore::new();
        joined.absorb(&store);
        joined.record(&m.scraped_metadata());
        store = Arc::new(joined);
    }
    let mut warnings = Vec::new();
    let params = metric
        .map(|m| ("metric".to_string(), m.to_string()))
        .into_iter()
        .collect();
    let peers = peers.map(|axum::Extension(p)| p);
    let answers = ask_every_peer(peers.as_ref(), &headers, PeerKind::Any, "/api/v1/metadata", params).await;
    if !answers.is_empty() {
        let joined = MetadataStore::new();
        joined.absorb(&store);
        for answer in answers {
            match answer.and_then(|data| families_of(&data).ok_or_else(|| "an unreadable answer".to_string())) {
                Ok(families) => joined.record(&families),
                Err(e) => warnings.push(format!("the metadata of a node is missing: {e}")),
            }
        }
        store = Arc::new(joined);
    }
    Ok(Success::with_warnings(store.list(metric, limit, per_metric), warnings))
}

/// A peer's answer as the metadata it reported.
fn families_of(data: &serde_json::Value) -> Option<Vec<MetricMetadata>> {
    let mut out = Vec::new();
    for (name, entries) in data.as_object()? {
        for e in entries.as_array()? {
            out.push(MetricMetadata {
                metric_family_name: name.clone(),
                metric_type: MetricType::from_name(e["type"].as_str()?)?,
                help: e["help"].as_str()?.to_string(),
                unit: e["unit"].as_str()?.to_string(),
            });
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_util::*;

    fn md(name: &str, t: MetricType, help: &str, unit: &str) -> MetricMetadata {
        MetricMetadata {
            metric_family_name: name.into(),
            metric_type: t,
            help: help.into(),
            unit: unit.into(),
        }
    }

    fn app() -> TestApp {
        let app = TestApp::new();
        app.state
            .metadata_for_writes(&cairn_storage::TenantId::default_tenant())
            .record(&[
                md("up", MetricType::Gauge, "Target is up.", ""),
                md("http_requests_total", MetricType::Counter, "Requests.", ""),
                md("up", MetricType::Gauge, "Target is up.", ""),
                md("node_memory_bytes", MetricType::Gauge, "Memory.", "bytes"),
                md("http_requests_total", MetricType::Counter, "All requests.", ""),
                md("", MetricType::Gauge, "nameless", ""),
            ]);
        app
    }

    const UP: &str = r#""up":[{"type":"gauge","help":"Target is up.","unit":""}]"#;
    const HTTP: &str = r#""http_requests_total":[{"type":"counter","help":"Requests.","unit":""},{"type":"counter","help":"All requests.","unit":""}]"#;
    const MEM: &str = r#""node_memory_bytes":[{"type":"gauge","help":"Memory.","unit":"bytes"}]"#;

    fn ok(data: &str) -> String {
        format!(r#"{{"status":"success","data":{{{data}}}}}"#)
    }

    #[tokio::test]
    async fn lists_distinct_entries_by_family() {
        let app = app();
        let all = ok(&format!("{HTTP},{MEM},{UP}"));
        app.get("/api/v1/metadata").await.check(200, &all);
        app.get("/prometheus/api/v1/metadata").await.check(200, &all);
        app.get("/api/v1/metadata?limit=-1").await.check(200, &all);
        app.get("/api/v1/metadata?metric=up").await.check(200, &ok(UP));
        app.get("/api/v1/metadata?metric=nope").await.check(200, &ok(""));
        app.get("/api/v1/metadata?limit=2")
            .await
            .check(200, &ok(&format!("{HTTP},{MEM}")));
        app.get("/api/v1/metadata?limit=0").await.check(200, &ok(""));
        app.get("/api/v1/metadata?metric=http_requests_total&limit_per_metric=1")
            .await
            .check(
                200,
                &ok(r#""http_requests_total":[{"type":"counter","help":"Requests.","unit":""}]"#),
            );
        app.get("/api/v1/metadata?limit_per_metric=0").await.check(200, &all);
    }

    #[tokio::test]
    async fn bad_limits() {
        let app = app();
        app.get("/api/v1/metadata?limit=x")
            .await
            .check_error(400, "bad_data", "limit must be a number");
        app.get("/api/v1/metadata?limit_per_metric=1.5").await.check_error(
            400,
            "bad_data",
            "limit_per_metric must be a number",
        );
    }

    #[test]
    fn entries_per_family_are_bounded() {
        let store = MetadataStore::new();
        for i in 0..MAX_ENTRIES_PER_METRIC + 2 {
            store.record(&[md("m", MetricType::Counter, &format!("v{i}"), "")]);
        }
        let list = store.list(None, None, None);
        let helps: Vec<&str> = list["m"].iter().map(|e| e.help.as_str()).collect();
        assert_eq!(helps.len(), MAX_ENTRIES_PER_METRIC);
        assert_eq!(helps[0], "v2");
        assert_eq!(
            helps[MAX_ENTRIES_PER_METRIC - 1],
            format!("v{}", MAX_ENTRIES_PER_METRIC + 1)
        );
    }
}
