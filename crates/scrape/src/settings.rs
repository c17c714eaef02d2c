//! What one scrape job needs, resolved from its configuration: the scrape
//! pools and discovery read these, never the YAML model, so that the
//! configuration crate's types stay at one seam (`JobSettings::from_config`).

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use cairn_model::Labels;
use cairn_protocols::exposition::ScrapeFormat;

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
    /// Lowest and highest TLS versions as `(1, 2)` for TLS 1.2; rustls
    /// speaks 1.2 and 1.3 only.
    pub min_version: Option<(u8, u8)>,
    pub max_version: Option<(u8, u8)>,
}

/// Prometheus' `http_client_config`, the part Cairn implements.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpSettings {
    pub basic_auth: Option<BasicAuth>,
    pub authorization: Option<Authorization>,
    pub tls: TlsSettings,
    pub follow_redirects: bool,
    pub proxy_url: Option<String>,
    /// Hosts reached without the proxy (comma-separated, as `NO_PROXY`).
    pub no_proxy: String,
    /// Use the `HTTP_PROXY`/`HTTPS_PROXY`/`NO_PROXY` environment variables.
    pub proxy_from_environment: bool,
    /// `http_headers`: each header's values, files read at each request.
    pub headers: Vec<(String, Vec<Secret>)>,
}

impl Default for HttpSettings {
    fn default() -> Self {
        Self {
            basic_auth: None,
            authorization: None,
            tls: TlsSettings::default(),
            follow_redirects: true,
            proxy_url: None,
            no_proxy: String::new(),
            proxy_from_environment: false,
            headers: Vec::new(),
        }
    }
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
    pub scrape_protocols: Vec<ScrapeFormat>,
    /// The `Accept` header sent ([`ScrapeFormat::accept_header_with_escaping`]).
    pub accept: String,
    /// The format of a response whose `Content-Type` is missing or unknown;
    /// without one such a scrape fails.
    pub fallback_protocol: Option<ScrapeFormat>,
    /// Metric and label names must be Prometheus' legacy names
    /// (`metric_name_validation_scheme: legacy`).
    pub legacy_name_validation: bool,
    pub enable_compression: bool,
    /// Most buckets of a native histogram; more lower its resolution, and one
    /// that cannot fit fails the scrape. Zero: no limit.
    pub native_histogram_bucket_limit: usize,
    /// Highest schema stored (from `native_histogram_min_bucket_factor`).
    pub native_histogram_max_schema: i32,
    /// Also report `scrape_timeout_seconds`, `scrape_sample_limit` and `scrape_body_size_bytes`.
    pub extra_scrape_metrics: bool,
    pub scrape_native_histograms: bool,
    pub always_scrape_classic_histograms: bool,
    pub convert_classic_histograms_to_nhcb: bool,
    pub relabel: Relabeling,
    pub metric_relabel: Relabeling,
    pub http: HttpSettings,
    pub discovery: Vec<SdConfig>,
    /// The configuration this was resolved from: a reload leaves a pool whose
    /// configuration is equal alone.
    pub source: Option<Arc<cairn_config::ScrapeConfig>>,
    /// Without a `source`: identifies the job's whole configuration; two
    /// jobs with equal non-empty fingerprints scrape identically.
    pub fingerprint: String,
    /// The configuration without the settings that do not change what a scrape
    /// stores (interval, timeout, sample limit, HTTP client): when only those
    /// change, a reload keeps the loops' series caches and staleness state.
    pub cache_fingerprint: String,
}

impl JobSettings {
    /// A job with Prometheus' defaults (1m interval, 10s timeout, `/metrics`, http).
    pub fn new(job_name: &str) -> Self {
        let protocols = ScrapeFormat::defaults().to_vec();
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
            accept: ScrapeFormat::accept_header(&protocols),
            scrape_protocols: protocols,
            fallback_protocol: None,
            legacy_name_validation: false,
            enable_compression: true,
            native_histogram_bucket_limit: 0,
            native_histogram_max_schema: 8,
            extra_scrape_metrics: false,
            scrape_native_histograms: false,
            always_scrape_classic_histograms: false,
            convert_classic_histograms_to_nhcb: false,
            relabel: Relabeling::none(),
            metric_relabel: Relabeling::none(),
            http: HttpSettings::default(),
            discovery: Vec::new(),
            source: None,
            fingerprint: String::new(),
            cache_fingerprint: String::new(),
        }
    }

    /// Whether `other` is the same configuration (a reload keeps the pool as it is).
    pub(crate) fn same_config(&self, other: &JobSettings) -> bool {
        match (&self.source, &other.source) {
            (Some(a), Some(b)) => a == b,
            _ => !self.fingerprint.is_empty() && self.fingerprint == other.fingerprint,
        }
    }

    /// Whether a reload may keep the loops' caches: nothing changed but the
    /// interval, timeout, sample limit or HTTP client.
    pub(crate) fn cache_reusable(&self, other: &JobSettings) -> bool {
        match (&self.source, &other.source) {
            (Some(a), Some(b)) => {
                let zero = |c: &cairn_config::ScrapeConfig| {
                    let mut c = c.clone();
                    c.scrape_interval = Default::default();
                    c.scrape_timeout = Default::default();
                    c.sample_limit = 0;
                    c.http_client = Default::default();
                    c
                };
                zero(a) == zero(b)
            }
            _ => !self.cache_fingerprint.is_empty() && self.cache_fingerprint == other.cache_fingerprint,
        }
    }
}
