//! What one scrape job needs, resolved from its configuration: the scrape
//! pools and discovery read these, never the YAML model, so that the
//! configuration crate's types stay at one seam (`JobSettings::from_config`).

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use cairn_model::Labels;

use crate::discovery::SdConfig;

/// Relabelling of one label set: `None` drops it. Built from a job's
/// `relabel_configs` or `metric_relabel_configs`.
#[derive(Clone, Default)]
pub struct Relabeling(Option<Arc<RelabelFn>>);

type RelabelFn = dyn Fn(&Labels) -> Option<Labels> + Send + Sync;

impl Relabeling {
    /// No rules: every label set kept as it is.
    pub fn none() -> Self {
        Self(None)
    }

    pub fn new(f: impl Fn(&Labels) -> Option<Labels> + Send + Sync + 'static) -> Self {
        Self(Some(Arc::new(f)))
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_none()
    }

    pub fn apply(&self, labels: Labels) -> Option<Labels> {
        match &self.0 {
            None => Some(labels),
            Some(f) => f(&labels),
        }
    }
}

impl fmt::Debug for Relabeling {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.0.is_some() {
            "Relabeling(rules)"
        } else {
            "Relabeling(none)"
        })
    }
}

/// A secret given inline or read from a file at each use (Prometheus re-reads
/// `*_file` secrets for every request, so rotated credentials take effect).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Secret {
    Inline(String),
    File(PathBuf),
}

impl Secret {
    pub fn read(&self) -> std::io::Result<String> {
        match self {
            Self::Inline(s) => Ok(s.clone()),
            Self::File(p) => Ok(std::fs::read_to_string(p)?.trim().to_string()),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BasicAuth {
    pub username: Secret,
    pub password: Option<Secret>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Authorization {
    /// `Bearer` unless configured otherwise.
    pub kind: String,
    pub credentials: Option<Secret>,
}

/// Bytes given inline (PEM) or a file read when the client is built.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PemSource {
    Inline(String),
    File(PathBuf),
}

impl PemSource {
    pub fn read(&self) -> std::io::Result<Vec<u8>> {
        match self {
            Self::Inline(s) => Ok(s.as_bytes().to_vec()),
            Self::File(p) => std::fs::read(p),
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TlsSettings {
    pub ca: Option<PemSource>,
    pub cert: Option<PemSource>,
    pub key: Option<PemSource>,
    /// The name the server's certificate must carry instead of the target's host.
    pub server_name: Option<String>,
    pub insecure_skip_verify: bool,
}

/// Prometheus' `http_client_config`, the part Cairn implements.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpSettings {
    pub basic_auth: Option<BasicAuth>,
    pub authorization: Option<Authorization>,
    pub tls: TlsSettings,
    pub follow_redirects: bool,
    pub proxy_url: Option<String>,
}

impl Default for HttpSettings {
    fn default() -> Self {
        Self {
            basic_auth: None,
            authorization: None,
            tls: TlsSettings::default(),
            follow_redirects: true,
            proxy_url: None,
        }
    }
}

/// The formats a scrape asks for, in the order of `scrape_protocols`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScrapeProtocol {
    PrometheusProto,
    OpenMetricsText1_0_0,
    OpenMetricsText0_0_1,
    PrometheusText1_0_0,
    PrometheusText0_0_4,
}

impl ScrapeProtocol {
    /// The media type offered in `Accept`.
    pub fn media_type(self) -> &'static str {
        match self {
            Self::PrometheusProto => {
                "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited"
            }
            Self::OpenMetricsText1_0_0 => "application/openmetrics-text;version=1.0.0",
            Self::OpenMetricsText0_0_1 => "application/openmetrics-text;version=0.0.1",
            Self::PrometheusText1_0_0 => "text/plain;version=1.0.0",
            Self::PrometheusText0_0_4 => "text/plain;version=0.0.4",
        }
    }

    /// Prometheus 3's default `scrape_protocols`.
    pub fn defaults() -> Vec<Self> {
        vec![
            Self::OpenMetricsText1_0_0,
            Self::OpenMetricsText0_0_1,
            Self::PrometheusText1_0_0,
            Self::PrometheusText0_0_4,
        ]
    }
}

/// `Accept` as Prometheus builds it: each protocol with a falling `q`, the
/// newer text formats with the name escaping scheme, then `*/*`.
pub fn accept_header(protocols: &[ScrapeProtocol], escaping: &str) -> String {
    let mut weight = 5 + 1;
    let mut parts = Vec::with_capacity(protocols.len() + 1);
    for p in protocols {
        let mut v = p.media_type().to_string();
        if matches!(
            p,
            ScrapeProtocol::PrometheusText1_0_0 | ScrapeProtocol::OpenMetricsText1_0_0
        ) {
            v.push_str(";escaping=");
            v.push_str(escaping);
        }
        v.push_str(&format!(";q=0.{weight}"));
        parts.push(v);
        weight -= 1;
    }
    parts.push(format!("*/*;q=0.{weight}"));
    parts.join(",")
}

/// One scrape job, resolved.
#[derive(Debug, Clone)]
pub struct JobSettings {
    pub job_name: String,
    pub scrape_interval: Duration,
    pub scrape_timeout: Duration,
    pub metrics_path: String,
    pub scheme: String,
    /// URL parameters; the first value of each is also a `__param_<name>` label.
    pub params: BTreeMap<String, Vec<String>>,
    pub honor_labels: bool,
    pub honor_timestamps: bool,
    pub track_timestamps_staleness: bool,
    /// Zero means no limit, for all limits.
    pub sample_limit: usize,
    pub target_limit: usize,
    pub label_limit: usize,
    pub label_name_length_limit: usize,
    pub label_value_length_limit: usize,
    pub body_size_limit: u64,
    pub keep_dropped_targets: usize,
    pub scrape_protocols: Vec<ScrapeProtocol>,
    /// The `Accept` header sent (see [`accept_header`]).
    pub accept: String,
    /// The media type of a response whose `Content-Type` is missing or unknown;
    /// without one such a scrape fails.
    pub fallback_protocol: Option<ScrapeProtocol>,
    pub enable_compression: bool,
    pub scrape_native_histograms: bool,
    pub always_scrape_classic_histograms: bool,
    pub convert_classic_histograms_to_nhcb: bool,
    pub relabel: Relabeling,
    pub metric_relabel: Relabeling,
    pub http: HttpSettings,
    pub discovery: Vec<SdConfig>,
    /// Identifies the job's whole configuration: two jobs with equal
    /// fingerprints scrape identically (a reload leaves such a pool alone).
    pub fingerprint: String,
    /// The configuration without the settings that do not change what a scrape
    /// stores (interval, timeout, sample limit, HTTP client): when only those
    /// change, a reload keeps the loops' series caches and staleness state.
    pub cache_fingerprint: String,
}

impl JobSettings {
    /// A job with Prometheus' defaults (1m interval, 10s timeout, `/metrics`, http).
    pub fn new(job_name: &str) -> Self {
        let protocols = ScrapeProtocol::defaults();
        Self {
            job_name: job_name.to_string(),
            scrape_interval: Duration::from_secs(60),
            scrape_timeout: Duration::from_secs(10),
            metrics_path: "/metrics".into(),
            scheme: "http".into(),
            params: BTreeMap::new(),
            honor_labels: false,
            honor_timestamps: true,
            track_timestamps_staleness: false,
            sample_limit: 0,
            target_limit: 0,
            label_limit: 0,
            label_name_length_limit: 0,
            label_value_length_limit: 0,
            body_size_limit: 0,
            keep_dropped_targets: 0,
            accept: accept_header(&protocols, "underscores"),
            scrape_protocols: protocols,
            fallback_protocol: None,
            enable_compression: true,
            scrape_native_histograms: false,
            always_scrape_classic_histograms: false,
            convert_classic_histograms_to_nhcb: false,
            relabel: Relabeling::none(),
            metric_relabel: Relabeling::none(),
            http: HttpSettings::default(),
            discovery: Vec::new(),
            fingerprint: String::new(),
            cache_fingerprint: String::new(),
        }
    }

    /// Whether a reload may keep the loops' caches (see `cache_fingerprint`).
    pub(crate) fn cache_reusable(&self, other: &JobSettings) -> bool {
        !self.cache_fingerprint.is_empty() && self.cache_fingerprint == other.cache_fingerprint
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accept_header_matches_prometheus_defaults() {
        let h = accept_header(&ScrapeProtocol::defaults(), "underscores");
        assert_eq!(
            h,
            "application/openmetrics-text;version=1.0.0;escaping=underscores;q=0.6,\
             application/openmetrics-text;version=0.0.1;q=0.5,\
             text/plain;version=1.0.0;escaping=underscores;q=0.4,\
             text/plain;version=0.0.4;q=0.3,*/*;q=0.2"
        );
    }
}
