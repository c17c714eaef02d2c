//! The `alerting` section: where alerts go and how they are relabelled.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::discovery::ServiceDiscoveryConfigs;
use crate::duration::Duration;
use crate::http_client::HttpClientConfig;
use crate::relabel::RelabelConfig;
use crate::serde_util::null_as_default;

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AlertingConfig {
    #[serde(skip_serializing_if = "Vec::is_empty", deserialize_with = "null_as_default")]
    pub alert_relabel_configs: Vec<RelabelConfig>,
    /// Read by the loader (each entry has inline HTTP client keys).
    #[serde(skip_serializing_if = "Vec::is_empty", skip_deserializing)]
    pub alertmanagers: Vec<AlertmanagerConfig>,
}

/// The Alertmanager API version; Prometheus 3 speaks only v2.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum AlertmanagerApiVersion {
    #[default]
    V2,
}

impl Serialize for AlertmanagerApiVersion {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str("v2")
    }
}

impl<'de> Deserialize<'de> for AlertmanagerApiVersion {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        match text.as_str() {
            "v2" => Ok(Self::V2),
            "v1" => Err(serde::de::Error::custom(
                "alertmanager api v1 is no longer supported, use v2",
            )),
            _ => Err(serde::de::Error::custom(format!(
                "expected Alertmanager api version to be one of [v2] but got {text:?}"
            ))),
        }
    }
}

/// One group of Alertmanagers discovered and addressed the same way.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AlertmanagerConfig {
    /// `http` or `https` by convention; any string is accepted, as in Prometheus.
    #[serde(deserialize_with = "crate::serde_util::scalar_string")]
    pub scheme: String,
    #[serde(deserialize_with = "null_as_default")]
    pub path_prefix: String,
    pub timeout: Duration,
    pub api_version: AlertmanagerApiVersion,
    #[serde(skip_serializing_if = "Vec::is_empty", deserialize_with = "null_as_default")]
    pub relabel_configs: Vec<RelabelConfig>,
    #[serde(skip_serializing_if = "Vec::is_empty", deserialize_with = "null_as_default")]
    pub alert_relabel_configs: Vec<RelabelConfig>,
    #[serde(skip_deserializing, flatten)]
    pub http_client: HttpClientConfig,
    #[serde(skip_deserializing, flatten)]
    pub service_discovery: ServiceDiscoveryConfigs,
}

pub const DEFAULT_ALERTMANAGER_TIMEOUT: Duration = Duration::from_secs(10);

impl Default for AlertmanagerConfig {
    fn default() -> Self {
        Self {
            scheme: "http".to_string(),
            path_prefix: String::new(),
            timeout: DEFAULT_ALERTMANAGER_TIMEOUT,
            api_version: AlertmanagerApiVersion::V2,
            relabel_configs: Vec::new(),
            alert_relabel_configs: Vec::new(),
            http_client: HttpClientConfig::default(),
            service_discovery: ServiceDiscoveryConfigs::default(),
        }
    }
}
