//! One `scrape_configs` entry: a job, its targets and how to scrape them.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::discovery::ServiceDiscoveryConfigs;
use crate::duration::Duration;
use crate::http_client::HttpClientConfig;
use crate::names::NameValidationScheme;
use crate::relabel::RelabelConfig;
use crate::serde_util::null_as_default;
use crate::size::ByteSize;

/// An exposition format a scrape may ask for in its `Accept` header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ScrapeProtocol {
    PrometheusProto,
    PrometheusText0_0_4,
    PrometheusText1_0_0,
    OpenMetricsText0_0_1,
    OpenMetricsText1_0_0,
}

impl ScrapeProtocol {
    pub const ALL: [ScrapeProtocol; 5] = [
        Self::OpenMetricsText0_0_1,
        Self::OpenMetricsText1_0_0,
        Self::PrometheusProto,
        Self::PrometheusText0_0_4,
        Self::PrometheusText1_0_0,
    ];

    /// The order Prometheus negotiates in by default.
    pub const DEFAULT: [ScrapeProtocol; 4] = [
        Self::OpenMetricsText1_0_0,
        Self::OpenMetricsText0_0_1,
        Self::PrometheusText1_0_0,
        Self::PrometheusText0_0_4,
    ];

    /// The default order when native histograms are scraped: protobuf first.
    pub const PROTO_FIRST: [ScrapeProtocol; 5] = [
        Self::PrometheusProto,
        Self::OpenMetricsText1_0_0,
        Self::OpenMetricsText0_0_1,
        Self::PrometheusText1_0_0,
        Self::PrometheusText0_0_4,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::PrometheusProto => "PrometheusProto",
            Self::PrometheusText0_0_4 => "PrometheusText0.0.4",
            Self::PrometheusText1_0_0 => "PrometheusText1.0.0",
            Self::OpenMetricsText0_0_1 => "OpenMetricsText0.0.1",
            Self::OpenMetricsText1_0_0 => "OpenMetricsText1.0.0",
        }
    }

    /// The media type with parameters this protocol is requested as.
    pub fn header_media_type(self) -> &'static str {
        match self {
            Self::PrometheusProto => {
                "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited"
            }
            Self::PrometheusText0_0_4 => "text/plain;version=0.0.4",
            Self::PrometheusText1_0_0 => "text/plain;version=1.0.0",
            Self::OpenMetricsText0_0_1 => "application/openmetrics-text;version=0.0.1",
            Self::OpenMetricsText1_0_0 => "application/openmetrics-text;version=1.0.0",
        }
    }

    /// Parses a protocol name (case-sensitive, as in Prometheus).
    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|p| p.as_str() == text)
    }
}

impl fmt::Display for ScrapeProtocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for ScrapeProtocol {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for ScrapeProtocol {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        Self::parse(&text).ok_or_else(|| {
            let supported: Vec<&str> = Self::ALL.iter().map(|p| p.as_str()).collect();
            serde::de::Error::custom(format!(
                "unknown scrape protocol {text}, supported: [{}]",
                supported.join(" ")
            ))
        })
    }
}

/// One scrape job. After loading, every field inherited from `global` is
/// filled in (intervals, limits, protocols, histogram options).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ScrapeConfig {
    #[serde(deserialize_with = "crate::serde_util::scalar_string")]
    pub job_name: String,
    #[serde(deserialize_with = "crate::serde_util::go_bool")]
    pub honor_labels: bool,
    #[serde(deserialize_with = "crate::serde_util::go_bool")]
    pub honor_timestamps: bool,
    #[serde(deserialize_with = "crate::serde_util::go_bool")]
    pub track_timestamps_staleness: bool,
    #[serde(skip_serializing_if = "BTreeMap::is_empty", deserialize_with = "null_as_default")]
    pub params: BTreeMap<String, Vec<String>>,
    /// Zero while parsing means "from global".
    pub scrape_interval: Duration,
    /// Zero while parsing means "from global", capped at the interval.
    pub scrape_timeout: Duration,
    /// Empty while parsing means "by default"; see [`ScrapeProtocol::DEFAULT`].
    #[serde(deserialize_with = "null_as_default")]
    pub scrape_protocols: Vec<ScrapeProtocol>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[serde(deserialize_with = "deserialize_fallback_protocol")]
    pub fallback_scrape_protocol: Option<ScrapeProtocol>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[serde(deserialize_with = "crate::serde_util::go_opt_bool")]
    pub scrape_native_histograms: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[serde(deserialize_with = "crate::serde_util::go_opt_bool")]
    pub always_scrape_classic_histograms: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[serde(deserialize_with = "crate::serde_util::go_opt_bool")]
    pub convert_classic_histograms_to_nhcb: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[serde(deserialize_with = "crate::serde_util::go_opt_bool")]
    pub extra_scrape_metrics: Option<bool>,
    #[serde(deserialize_with = "null_as_default")]
    pub metrics_path: String,
    /// `http` or `https` by convention; Prometheus accepts any string here
    /// (it becomes the `__scheme__` label, which relabelling may change).
    #[serde(deserialize_with = "crate::serde_util::scalar_string")]
    pub scheme: String,
    #[serde(deserialize_with = "crate::serde_util::go_bool")]
    pub enable_compression: bool,
    #[serde(skip_serializing_if = "String::is_empty", deserialize_with = "null_as_default")]
    pub scrape_failure_log_file: String,
    /// Zero means no limit.
    #[serde(skip_serializing_if = "ByteSize::is_zero")]
    pub body_size_limit: ByteSize,
    #[serde(skip_serializing_if = "is_zero")]
    #[serde(deserialize_with = "crate::serde_util::go_uint")]
    pub sample_limit: u64,
    #[serde(skip_serializing_if = "is_zero")]
    #[serde(deserialize_with = "crate::serde_util::go_uint")]
    pub target_limit: u64,
    #[serde(skip_serializing_if = "is_zero")]
    #[serde(deserialize_with = "crate::serde_util::go_uint")]
    pub label_limit: u64,
    #[serde(skip_serializing_if = "is_zero")]
    #[serde(deserialize_with = "crate::serde_util::go_uint")]
    pub label_name_length_limit: u64,
    #[serde(skip_serializing_if = "is_zero")]
    #[serde(deserialize_with = "crate::serde_util::go_uint")]
    pub label_value_length_limit: u64,
    #[serde(skip_serializing_if = "is_zero")]
    #[serde(deserialize_with = "crate::serde_util::go_uint")]
    pub keep_dropped_targets: u64,
    #[serde(skip_serializing_if = "is_zero")]
    #[serde(deserialize_with = "crate::serde_util::go_uint")]
    pub native_histogram_bucket_limit: u64,
    #[serde(skip_serializing_if = "is_zero_f64")]
    pub native_histogram_min_bucket_factor: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[serde(deserialize_with = "crate::names::deserialize_optional_scheme")]
    pub metric_name_validation_scheme: Option<NameValidationScheme>,
    #[serde(skip_serializing_if = "String::is_empty", deserialize_with = "null_as_default")]
    pub metric_name_escaping_scheme: String,
    /// Read from the keys of the same mapping by the loader (inline, as in Prometheus).
    #[serde(skip_deserializing, flatten)]
    pub http_client: HttpClientConfig,
    /// Read by the loader from `static_configs`, `file_sd_configs` and `http_sd_configs`.
    #[serde(skip_deserializing, flatten)]
    pub service_discovery: ServiceDiscoveryConfigs,
    #[serde(skip_serializing_if = "Vec::is_empty", deserialize_with = "null_as_default")]
    pub relabel_configs: Vec<RelabelConfig>,
    #[serde(skip_serializing_if = "Vec::is_empty", deserialize_with = "null_as_default")]
    pub metric_relabel_configs: Vec<RelabelConfig>,
}

/// An empty `fallback_scrape_protocol` means none, as in Prometheus.
fn deserialize_fallback_protocol<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<ScrapeProtocol>, D::Error> {
    match Option::<String>::deserialize(deserializer)?.as_deref() {
        None | Some("") => Ok(None),
        Some(text) => ScrapeProtocol::deserialize(serde::de::value::StrDeserializer::<D::Error>::new(text)).map(Some),
    }
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}

fn is_zero_f64(v: &f64) -> bool {
    *v == 0.0
}

impl Default for ScrapeConfig {
    fn default() -> Self {
        Self {
            job_name: String::new(),
            honor_labels: false,
            honor_timestamps: true,
            track_timestamps_staleness: false,
            params: BTreeMap::new(),
            scrape_interval: Duration::ZERO,
            scrape_timeout: Duration::ZERO,
            scrape_protocols: Vec::new(),
            fallback_scrape_protocol: None,
            scrape_native_histograms: None,
            always_scrape_classic_histograms: None,
            convert_classic_histograms_to_nhcb: None,
            extra_scrape_metrics: None,
            metrics_path: "/metrics".to_string(),
            scheme: "http".to_string(),
            enable_compression: true,
            scrape_failure_log_file: String::new(),
            body_size_limit: ByteSize::default(),
            sample_limit: 0,
            target_limit: 0,
            label_limit: 0,
            label_name_length_limit: 0,
            label_value_length_limit: 0,
            keep_dropped_targets: 0,
            native_histogram_bucket_limit: 0,
            native_histogram_min_bucket_factor: 0.0,
            metric_name_validation_scheme: None,
            metric_name_escaping_scheme: String::new(),
            http_client: HttpClientConfig::default(),
            service_discovery: ServiceDiscoveryConfigs::default(),
            relabel_configs: Vec::new(),
            metric_relabel_configs: Vec::new(),
        }
    }
}

impl ScrapeConfig {
    pub fn scrape_native_histograms_enabled(&self) -> bool {
        self.scrape_native_histograms == Some(true)
    }

    pub fn always_scrape_classic_histograms_enabled(&self) -> bool {
        self.always_scrape_classic_histograms == Some(true)
    }

    pub fn convert_classic_histograms_to_nhcb_enabled(&self) -> bool {
        self.convert_classic_histograms_to_nhcb == Some(true)
    }

    pub fn extra_scrape_metrics_enabled(&self) -> bool {
        self.extra_scrape_metrics == Some(true)
    }

    /// The name validation scheme in force for this job (filled by validation).
    pub fn name_validation(&self) -> NameValidationScheme {
        self.metric_name_validation_scheme.unwrap_or_default()
    }
}
