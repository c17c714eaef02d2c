//! The `global` section: defaults for every job and rule group, and external labels.

use cairn_model::Labels;
use serde::{Deserialize, Serialize};

use crate::discovery::{deserialize_labels, serialize_labels};
use crate::duration::Duration;
use crate::names::NameValidationScheme;
use crate::scrape::ScrapeProtocol;
use crate::serde_util::null_as_default;
use crate::size::ByteSize;

pub const DEFAULT_SCRAPE_INTERVAL: Duration = Duration::from_secs(60);
pub const DEFAULT_SCRAPE_TIMEOUT: Duration = Duration::from_secs(10);
pub const DEFAULT_EVALUATION_INTERVAL: Duration = Duration::from_secs(60);

/// Intervals read as zero when left out and are filled in by validation, so
/// a `scrape_interval` below 10s also lowers the default `scrape_timeout`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default = "GlobalConfig::unset", deny_unknown_fields)]
pub struct GlobalConfig {
    pub scrape_interval: Duration,
    pub scrape_timeout: Duration,
    /// Empty means each job picks its default from `scrape_native_histograms`.
    #[serde(skip_serializing_if = "Vec::is_empty", deserialize_with = "null_as_default")]
    pub scrape_protocols: Vec<ScrapeProtocol>,
    pub evaluation_interval: Duration,
    pub rule_query_offset: Duration,
    #[serde(
        skip_serializing_if = "Labels::is_empty",
        serialize_with = "serialize_labels",
        deserialize_with = "deserialize_labels"
    )]
    pub external_labels: Labels,
    #[serde(skip_serializing_if = "String::is_empty", deserialize_with = "null_as_default")]
    pub query_log_file: String,
    #[serde(skip_serializing_if = "String::is_empty", deserialize_with = "null_as_default")]
    pub scrape_failure_log_file: String,
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
    pub metric_name_validation_scheme: NameValidationScheme,
    #[serde(skip_serializing_if = "String::is_empty", deserialize_with = "null_as_default")]
    pub metric_name_escaping_scheme: String,
    #[serde(deserialize_with = "crate::serde_util::go_bool")]
    pub scrape_native_histograms: bool,
    #[serde(deserialize_with = "crate::serde_util::go_bool")]
    pub convert_classic_histograms_to_nhcb: bool,
    #[serde(deserialize_with = "crate::serde_util::go_bool")]
    pub always_scrape_classic_histograms: bool,
    #[serde(deserialize_with = "crate::serde_util::go_bool")]
    pub extra_scrape_metrics: bool,
}

impl GlobalConfig {
    /// The defaults with the intervals not yet decided, as parsing starts from.
    fn unset() -> Self {
        Self {
            scrape_interval: Duration::ZERO,
            scrape_timeout: Duration::ZERO,
            evaluation_interval: Duration::ZERO,
            ..Self::default()
        }
    }
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}

impl Default for GlobalConfig {
    fn default() -> Self {
        Self {
            scrape_interval: DEFAULT_SCRAPE_INTERVAL,
            scrape_timeout: DEFAULT_SCRAPE_TIMEOUT,
            scrape_protocols: Vec::new(),
            evaluation_interval: DEFAULT_EVALUATION_INTERVAL,
            rule_query_offset: Duration::ZERO,
            external_labels: Labels::empty(),
            query_log_file: String::new(),
            scrape_failure_log_file: String::new(),
            body_size_limit: ByteSize::default(),
            sample_limit: 0,
            target_limit: 0,
            label_limit: 0,
            label_name_length_limit: 0,
            label_value_length_limit: 0,
            keep_dropped_targets: 0,
            metric_name_validation_scheme: NameValidationScheme::Utf8,
            metric_name_escaping_scheme: String::new(),
            scrape_native_histograms: false,
            convert_classic_histograms_to_nhcb: false,
            always_scrape_classic_histograms: false,
            extra_scrape_metrics: false,
        }
    }
}
