//! The read side: Prometheus HTTP API instant and range queries.

use std::time::Duration;

use crate::sender::Access;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueryKind {
    Instant,
    Range,
}

impl QueryKind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Instant => "instant",
            Self::Range => "range",
        }
    }

    /// The class of read load it stands for: rules evaluate instant
    /// queries, dashboard panels range queries.
    pub fn class(self) -> &'static str {
        match self {
            Self::Instant => "alert rules",
            Self::Range => "dashboards",
        }
    }

    pub const ALL: [QueryKind; 2] = [Self::Instant, Self::Range];
}

/// Self-metrics in which Cairn reports the CPU time of ingestion (decoding
/// and storing writes, and the background work they cause); the rest of its
/// CPU time is the read load's.
pub const INGEST_CPU_METRICS: &[&str] = &[
    "cairn_ingest_cpu_seconds_total",
    "cairn_storage_maintenance_cpu_seconds_total",
    "cairn_cluster_peer_write_cpu_seconds_total",
];

/// Self-metrics in which a Cairn cluster's nodes count the bytes of series
/// frames they send each other: writes to the owners, and select answers.
pub const PEER_FRAME_BYTES: &[&str] = &["cairn_cluster_frame_bytes_total"];
pub const PEER_WRITE_FRAME_BYTES: &[&str] = &["cairn_cluster_frame_bytes_total{route=\"write\"}"];
/// Reads a Cairn node fanned out to the ingesters, and the ingesters they asked.
pub const READ_FAN_OUTS: &[&str] = &["cairn_cluster_read_fan_outs_total"];
pub const READ_FAN_OUT_INGESTERS: &[&str] = &["cairn_cluster_read_fan_out_ingesters_total"];

/// Range queries of a node_exporter dashboard (the panels of a typical
/// "Node Exporter Full" board), run over the `--range-window`.
pub const DASHBOARD_QUERIES: &[(&str, &str)] = &[
    (
        "dashboard:cpu_busy",
        r#"100 * (1 - avg by (instance) (rate(node_cpu_seconds_total{mode="idle"}[5m])))"#,
    ),
    (
        "dashboard:memory_used",
        "node_memory_MemTotal_bytes - node_memory_MemAvailable_bytes",
    ),
    (
        "dashboard:network_rx",
        r#"sum by (instance) (rate(node_network_receive_bytes_total{device!="lo"}[5m]))"#,
    ),
    (
        "dashboard:disk_io",
        "sum by (instance) (rate(node_disk_io_time_seconds_total[5m]))",
    ),
    ("dashboard:load1_top10", "topk(10, node_load1)"),
];

#[derive(Debug, thiserror::Error)]
pub enum QueryError {
    #[error("http: {0}")]
    Http(#[from] reqwest::Error),
    #[error("status {status}: {body}")]
    Status { status: u16, body: String },
    #[error("bad response: {0}")]
    Body(String),
}

/// A blocking client of `/api/v1/query` and `/api/v1/query_range`.
#[derive(Clone)]
pub struct QueryClient {
    http: reqwest::blocking::Client,
    /// Queries go to these in turn (the nodes of a cluster).
    bases: std::sync::Arc<[String]>,
    next: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    access: Access,
}

impl QueryClient {
    /// A client of `base`, or of several comma-separated base URLs in turn.
    pub fn new(base: &str, access: Access) -> anyhow::Result<Self> {
        Ok(Self {
            http: reqwest::blocking::Client::builder()
                .timeout(Duration::from_secs(60))
                .build()?,
            bases: crate::sender::split_urls(base),
            next: Default::default(),
            access,
        })
    }

    fn base(&self) -> &str {
        let i = self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        &self.bases[i % self.bases.len()]
    }

    /// Runs an instant query at `at_ms`.
    pub fn instant(&self, expr: &str, at_ms: i64) -> Result<Answer, QueryError> {
        let time = format!("{:.3}", at_ms as f64 / 1000.0);
        self.fetch("/api/v1/query", &[("query", expr), ("time", &time)])
    }

    /// Runs a range query.
    pub fn range(&self, expr: &str, start_ms: i64, end_ms: i64, step_ms: i64) -> Result<Answer, QueryError> {
        let (s, e, st) = (
            format!("{:.3}", start_ms as f64 / 1000.0),
            format!("{:.3}", end_ms as f64 / 1000.0),
            format!("{:.3}", step_ms as f64 / 1000.0),
        );
        self.fetch(
            "/api/v1/query_range",
            &[("query", expr), ("start", &s), ("end", &e), ("step", &st)],
        )
    }

    /// How many samples the system holds with timestamps in
    /// `[start_ms, end_ms]`, counted by the system itself, one metric name
    /// at a time (without its name, a range function's series of two names
    /// may collide, which PromQL refuses).
    pub fn samples_stored(&self, start_ms: i64, end_ms: i64) -> Result<u64, QueryError> {
        let (start, end) = (
            format!("{:.3}", start_ms as f64 / 1000.0),
            format!("{:.3}", end_ms as f64 / 1000.0),
        );
        let names = self.get_json("/api/v1/label/__name__/values", &[("start", &start), ("end", &end)])?;
        let names = names
            .as_array()
            .ok_or_else(|| QueryError::Body(format!("not a list: {names}")))?;
        // `count_over_time` looks at `(end - window, end]`.
        let window_s = (end_ms - start_ms) / 1000 + 1;
        let mut total = 0;
        for name in names.iter().filter_map(|n| n.as_str()) {
            let quoted = name.replace('\\', r"\\").replace('"', r#"\""#);
            let expr = format!(r#"sum(count_over_time({{__name__="{quoted}"}}[{window_s}s]))"#);
            let data = self.instant(&expr, end_ms)?.data()?;
            total += match data["result"][0]["value"][1].as_str().map(str::parse::<f64>) {
                Some(Ok(n)) => n as u64,
                None if data["result"].as_array().is_some_and(Vec::is_empty) => 0,
                _ => return Err(QueryError::Body(format!("not a count: {data}"))),
            };
        }
        Ok(total)
    }

    /// Any GET returning the Prometheus envelope; the `data` value as JSON.
    pub fn get_json(&self, path: &str, params: &[(&str, &str)]) -> Result<serde_json::Value, QueryError> {
        self.fetch(path, params)?.data()
    }

    /// Sends a GET and reads its whole body.
    fn fetch(&self, path: &str, params: &[(&str, &str)]) -> Result<Answer, QueryError> {
        // A node that cannot be reached is skipped, as a load balancer in
        // front of a cluster would; an answer of any status is final.
        let mut attempt = 0;
        let resp = loop {
            let sent = self
                .access
                .apply(self.http.get(format!("{}{path}", self.base())).query(params))
                .send();
            match sent {
                Err(e) if e.is_connect() && attempt + 1 < self.bases.len() => attempt += 1,
                sent => break sent?,
            }
        };
        let status = resp.status().as_u16();
        Ok(Answer {
            status,
            body: resp.text()?,
        })
    }

    /// For each node (base URL) and each group of metric names, the sum of
    /// their samples on the node's `/metrics` page (`None` when it exposes
    /// none of them, or did not answer): figures only some targets give.
    pub fn self_metrics<const N: usize>(&self, groups: [&[&str]; N]) -> Vec<[Option<f64>; N]> {
        let pages = self.bases.iter().map(|base| {
            self.access
                .apply(self.http.get(format!("{base}/metrics")))
                .send()
                .and_then(|r| r.text())
                .ok()
        });
        pages
            .map(|page| groups.map(|names| sum_of_metrics(page.as_deref()?, names)))
            .collect()
    }
}

/// How much each group of counters grew from `before` to `after` (as
/// [`QueryClient::self_metrics`] gives them), summed over the nodes: a
/// node that restarted in between counts from zero, so its growth before
/// the restart is missing. `None` when a node lacks a reading.
pub fn counters_growth<const N: usize>(before: &[[Option<f64>; N]], after: &[[Option<f64>; N]]) -> [Option<f64>; N] {
    std::array::from_fn(|i| {
        let mut total = (before.len() == after.len() && !after.is_empty()).then_some(0.0);
        for (b, a) in before.iter().zip(after) {
            let grew = a[i].zip(b[i]).map(|(a, b)| if a >= b { a - b } else { a });
            total = total.zip(grew).map(|(t, g)| t + g);
        }
        total
    })
}

/// A query's answer with its body read in full. A query's latency is
/// measured up to here, as `cairn-query-bench` does: parsing the answer is
/// the client's own work (a JSON tree of every point of a fleet-wide range
/// query), the same whichever database answered.
pub struct Answer {
    status: u16,
    body: String,
}

impl Answer {
    /// The `data` value of a successful Prometheus envelope.
    pub fn data(self) -> Result<serde_json::Value, QueryError> {
        Ok(self.envelope()?["data"].take())
    }

    /// The whole envelope of a successful answer.
    fn envelope(self) -> Result<serde_json::Value, QueryError> {
        if !(200..300).contains(&self.status) {
            return Err(QueryError::Status {
                status: self.status,
                body: self.body.chars().take(300).collect(),
            });
        }
        let v: serde_json::Value = serde_json::from_str(&self.body).map_err(|e| QueryError::Body(e.to_string()))?;
        if v["status"] != "success" {
            return Err(QueryError::Body(self.body.chars().take(300).collect()));
        }
        Ok(v)
    }

    /// The number of result series, and whether the answer says it may
    /// miss some.
    pub fn series(self) -> Result<Answered, QueryError> {
        let mut v: serde_json::Value = self.envelope()?;
        let partial = is_partial(&v);
        let series = v["data"].take()["result"].as_array().map_or(0, Vec::len);
        Ok(Answered { series, partial })
    }
}

/// What a successful query returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Answered {
    pub series: usize,
    /// The database said the answer may miss data: VictoriaMetrics'
    /// `isPartial`, or a warning of a partial response (Cairn, Thanos).
    pub partial: bool,
}

/// Whether a Prometheus envelope says its answer may be incomplete.
fn is_partial(envelope: &serde_json::Value) -> bool {
    let warned = envelope["warnings"]
        .as_array()
        .is_some_and(|w| w.iter().any(|w| w.as_str().is_some_and(|w| w.contains("partial"))));
    envelope["isPartial"] == true || warned
}

/// The sum of the samples of `names` in a text exposition, `None` if absent.
/// The sum of the samples of the named metrics; a name with labels
/// (`a_total{x="y"}`) names that one series, as the exposition spells it.
fn sum_of_metrics(text: &str, names: &[&str]) -> Option<f64> {
    let mut found = None;
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let Some((series, value)) = line.rsplit_once(' ') else {
            continue;
        };
        let name = series.split(['{', ' ']).next().unwrap_or("");
        if (names.contains(&name) || names.contains(&series))
            && let Ok(v) = value.parse::<f64>()
        {
            *found.get_or_insert(0.0) += v;
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_partial_answer_is_told_from_a_complete_one() {
        let answer = |body: &str| Answer {
            status: 200,
            body: body.to_string(),
        };
        let result = r#""data":{"resultType":"vector","result":[{"metric":{},"value":[1,"1"]}]}"#;
        let complete = answer(&format!(r#"{{"status":"success",{result}}}"#));
        assert_eq!(
            complete.series().unwrap(),
            Answered {
                series: 1,
                partial: false
            }
        );
        let vm = answer(&format!(r#"{{"status":"success","isPartial":true,{result}}}"#));
        assert!(vm.series().unwrap().partial);
        let warned = r#""warnings":["partial response: 1 of 3 ingesters did not answer"]"#;
        let cairn = answer(&format!(r#"{{"status":"success",{warned},{result}}}"#));
        assert!(cairn.series().unwrap().partial);
        let other = answer(&format!(
            r#"{{"status":"success","warnings":["something else"],{result}}}"#
        ));
        assert!(!other.series().unwrap().partial);
        assert!(answer(r#"{"status":"error","error":"x"}"#).series().is_err());
    }

    #[test]
    fn counters_grow_per_node_and_a_restarted_node_counts_from_zero() {
        let before = [[Some(10.0), Some(1.0)], [Some(20.0), None]];
        let after = [[Some(15.0), Some(3.0)], [Some(4.0), None]];
        // The second node restarted: 4 since then.
        assert_eq!(counters_growth(&before, &after), [Some(9.0), None]);
        assert_eq!(counters_growth(&before, &after[..1]), [None, None]);
        assert_eq!(counters_growth::<1>(&[], &[]), [None]);
    }

    #[test]
    fn sums_the_samples_of_the_named_metrics() {
        let text = "# HELP a_total x\n# TYPE a_total counter\na_total 1.5\nb_total{x=\"y z\"} 2\nab_total 100\nc 7\n";
        assert_eq!(sum_of_metrics(text, &["a_total", "b_total"]), Some(3.5));
        assert_eq!(sum_of_metrics(text, &["c"]), Some(7.0));
        assert_eq!(sum_of_metrics(text, &["d_total"]), None);
        assert_eq!(sum_of_metrics(text, &["b_total{x=\"y z\"}"]), Some(2.0));
        assert_eq!(sum_of_metrics(text, &["b_total{x=\"z\"}"]), None);
    }
}
