//! The service discovery mechanisms Cairn supports: static targets, files,
//! HTTP, DNS and Kubernetes (its settings in [`crate::kubernetes_sd`]).

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

/// Targets from DNS records of `names`, looked up every `refresh_interval`
/// (`dns_sd_configs` entry). Checked as Prometheus checks it when loading.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DnsSdConfig {
    #[serde(deserialize_with = "null_as_default")]
    pub names: Vec<String>,
    #[serde(skip_serializing_if = "Duration::is_zero")]
    pub refresh_interval: Duration,
    /// `SRV`, `A`, `AAAA`, `MX` or `NS`, in any case; kept as written.
    #[serde(rename = "type", deserialize_with = "crate::serde_util::scalar_string")]
    pub record_type: String,
    /// The port of every target; SRV records carry their own, so it is ignored for them.
    #[serde(deserialize_with = "null_as_default")]
    pub port: i64,
}

pub const DEFAULT_DNS_SD_REFRESH_INTERVAL: Duration = Duration::from_secs(30);

impl Default for DnsSdConfig {
    fn default() -> Self {
        Self {
            names: Vec::new(),
            refresh_interval: DEFAULT_DNS_SD_REFRESH_INTERVAL,
            record_type: "SRV".to_string(),
            port: 0,
        }
    }
}

/// The DNS record types DNS SD asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DnsRecordType {
    Srv,
    A,
    Aaaa,
    Mx,
    Ns,
}

impl DnsSdConfig {
    /// The record type, or Prometheus' message for a type it does not know.
    pub fn parsed_type(&self) -> Result<DnsRecordType, String> {
        match self.record_type.to_uppercase().as_str() {
            "SRV" => Ok(DnsRecordType::Srv),
            "A" => Ok(DnsRecordType::A),
            "AAAA" => Ok(DnsRecordType::Aaaa),
            "MX" => Ok(DnsRecordType::Mx),
            "NS" => Ok(DnsRecordType::Ns),
            _ => Err(format!("invalid DNS-SD records type {}", self.record_type)),
        }
    }

    /// Prometheus' checks, with its messages.
    pub fn validate(&self) -> Result<(), String> {
        if self.names.is_empty() {
            return Err("DNS-SD config must contain at least one SRV record name".into());
        }
        if self.parsed_type()? != DnsRecordType::Srv && self.port == 0 {
            return Err("a port is required in DNS-SD configs for all record types except SRV".into());
        }
        Ok(())
    }
}

/// Where a scrape job or Alertmanager list finds its targets. Written in
/// Prometheus' order: the mechanisms by name, static lists last.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct ServiceDiscoveryConfigs {
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub dns_sd_configs: Vec<DnsSdConfig>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub file_sd_configs: Vec<FileSdConfig>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub http_sd_configs: Vec<HttpSdConfig>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub kubernetes_sd_configs: Vec<crate::kubernetes_sd::KubernetesSdConfig>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub static_configs: Vec<StaticConfig>,
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

#[cfg(test)]
mod tests {
    use super::*;

    fn check(yaml: &str, want: Result<(), &str>) {
        let config: DnsSdConfig = serde_yaml_ng::from_str(yaml).unwrap();
        assert_eq!(config.validate(), want.map_err(String::from), "{yaml}");
    }

    #[test]
    fn dns_sd_config_is_checked_as_prometheus_checks_it() {
        check("names: [_x._tcp.example.org]", Ok(()));
        check("names: [_x._tcp.example.org]\nport: 80", Ok(()));
        check("names: [a.example.org]\ntype: a\nport: 80", Ok(()));
        check("names: [a.example.org]\ntype: AAAA\nport: 80", Ok(()));
        check("names: [a.example.org]\ntype: Mx\nport: 25", Ok(()));
        check("names: [a.example.org]\ntype: NS\nport: 53", Ok(()));
        check(
            "names: []",
            Err("DNS-SD config must contain at least one SRV record name"),
        );
        check(
            "refresh_interval: 1m",
            Err("DNS-SD config must contain at least one SRV record name"),
        );
        for t in ["A", "AAAA", "MX", "ns"] {
            check(
                &format!("names: [a.example.org]\ntype: {t}"),
                Err("a port is required in DNS-SD configs for all record types except SRV"),
            );
        }
        check("names: [a]\ntype: TXT\nport: 1", Err("invalid DNS-SD records type TXT"));
        check("names: [a]\ntype:\nport: 1", Err("invalid DNS-SD records type "));
    }

    #[test]
    fn dns_sd_config_defaults_and_round_trip() {
        let config: DnsSdConfig = serde_yaml_ng::from_str("names: [a]").unwrap();
        assert_eq!(config.refresh_interval, DEFAULT_DNS_SD_REFRESH_INTERVAL);
        assert_eq!(config.record_type, "SRV");
        assert_eq!(config.port, 0);
        let yaml = serde_yaml_ng::to_string(&config).unwrap();
        assert_eq!(yaml, "names:\n- a\nrefresh_interval: 30s\ntype: SRV\nport: 0\n");
        assert!(serde_yaml_ng::from_str::<DnsSdConfig>("names: [a]\nbogus: 1").is_err());
    }
}
