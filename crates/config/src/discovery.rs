//! The service discovery mechanisms Cairn supports: static targets, files and HTTP.

use cairn_model::Labels;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::duration::Duration;
use crate::http_client::HttpClientConfig;
use crate::serde_util::null_as_default;

/// A fixed group of targets sharing labels (`static_configs` entry).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct StaticConfig {
    /// `host:port` addresses, each becoming one target's `__address__`.
    #[serde(deserialize_with = "null_as_default")]
    pub targets: Vec<String>,
    #[serde(
        skip_serializing_if = "Labels::is_empty",
        serialize_with = "serialize_labels",
        deserialize_with = "deserialize_labels"
    )]
    pub labels: Labels,
}

/// Targets read from JSON or YAML files matching globs, re-read on change
/// and every `refresh_interval`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FileSdConfig {
    #[serde(deserialize_with = "null_as_default")]
    pub files: Vec<String>,
    pub refresh_interval: Duration,
}

pub const DEFAULT_FILE_SD_REFRESH_INTERVAL: Duration = Duration::from_secs(300);
pub const DEFAULT_HTTP_SD_REFRESH_INTERVAL: Duration = Duration::from_secs(60);

impl Default for FileSdConfig {
    fn default() -> Self {
        Self {
            files: Vec::new(),
            refresh_interval: DEFAULT_FILE_SD_REFRESH_INTERVAL,
        }
    }
}

/// Targets fetched as JSON from `url` every `refresh_interval`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct HttpSdConfig {
    #[serde(deserialize_with = "null_as_default")]
    pub url: String,
    pub refresh_interval: Duration,
    /// Read from the keys beside `url` (inline, as in Prometheus) by the loader.
    #[serde(skip_deserializing, flatten)]
    pub http_client: HttpClientConfig,
}

impl Default for HttpSdConfig {
    fn default() -> Self {
        Self {
            url: String::new(),
            refresh_interval: DEFAULT_HTTP_SD_REFRESH_INTERVAL,
            http_client: HttpClientConfig::default(),
        }
    }
}

/// Where a scrape job or Alertmanager list finds its targets.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct ServiceDiscoveryConfigs {
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub static_configs: Vec<StaticConfig>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub file_sd_configs: Vec<FileSdConfig>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub http_sd_configs: Vec<HttpSdConfig>,
}

/// The label sets as a YAML mapping of name to value.
pub(crate) fn serialize_labels<S: Serializer>(labels: &Labels, serializer: S) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeMap;
    let mut map = serializer.serialize_map(Some(labels.len()))?;
    for l in labels.iter() {
        map.serialize_entry(l.name.as_str(), l.value.as_str())?;
    }
    map.end()
}

/// A YAML mapping of label name to value; names must be non-empty.
pub(crate) fn deserialize_labels<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Labels, D::Error> {
    use crate::serde_util::ScalarString;
    let map = Option::<std::collections::BTreeMap<ScalarString, ScalarString>>::deserialize(deserializer)?
        .unwrap_or_default();
    if map.contains_key(&ScalarString::default()) {
        return Err(serde::de::Error::custom("\"\" is not a valid label name"));
    }
    Labels::new(
        map.into_iter()
            .map(|(n, v)| cairn_model::Label::new(n.0, v.0))
            .collect(),
    )
    .map_err(serde::de::Error::custom)
}
