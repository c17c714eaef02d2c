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

/// The label that holds an Alertmanager's alerts path before relabelling.
pub const ALERTS_PATH_LABEL: &str = "__alerts_path__";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alerting_alerts_path_joins_prefix() {
        let with = |prefix: &str| AlertmanagerConfig {
            path_prefix: prefix.to_string(),
            ..AlertmanagerConfig::default()
        };
        assert_eq!(with("").alerts_path(), "/api/v2/alerts");
        assert_eq!(with("/am").alerts_path(), "/am/api/v2/alerts");
        assert_eq!(with("am/").alerts_path(), "/am/api/v2/alerts");
        assert_eq!(with("/a/../b//c").alerts_path(), "/b/c/api/v2/alerts");
    }
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

impl AlertmanagerConfig {
    /// The URL path alerts are posted to: `/<path_prefix>/api/v2/alerts`,
    /// cleaned as Go's `path.Join` does. It starts as the `__alerts_path__`
    /// label of each discovered Alertmanager, which relabelling may change.
    pub fn alerts_path(&self) -> String {
        let joined = format!("/{}/api/v2/alerts", self.path_prefix);
        let mut parts: Vec<&str> = Vec::new();
        for part in joined.split('/') {
            match part {
                "" | "." => {}
                ".." => {
                    parts.pop();
                }
                p => parts.push(p),
            }
        }
        format!("/{}", parts.join("/"))
    }
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
