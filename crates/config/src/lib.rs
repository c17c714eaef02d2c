//! Prometheus' configuration file (`prometheus.yml`): its model with
//! Prometheus' defaults, strict loading and validation, the effective
//! configuration as YAML, and the relabelling engine.
//!
//! Cairn accepts what Prometheus 3 accepts for the parts it implements
//! (static, file, HTTP, DNS and Kubernetes service discovery; scraping; rules; Alertmanager;
//! remote write) and refuses at startup, by name, every key it does not
//! implement, rather than ignoring it.
//!
//! Entry points: [`Config::load`] / [`Config::parse`] (validated, defaults
//! and `global` inheritance filled in, relative paths resolved),
//! [`Config::all_scrape_configs`] (with `scrape_config_files`),
//! [`Config::rule_file_paths`], [`Config::to_yaml`] (what
//! `/api/v1/status/config` shows), and [`relabel::process`] /
//! [`relabel::process_builder`] for relabelling.
//!
//! YAML is read the way Go's decoder reads it, since that is what
//! Prometheus users write against: any scalar where a string is expected,
//! `yes`/`no`/`on`/`off` booleans, `null` as the zero value, merge keys.

pub mod alerting;
mod config;
pub mod discovery;
pub mod duration;
mod error;
pub mod global;
mod go_regex;
pub mod http_client;
pub mod kubernetes_sd;
mod load;
pub mod names;
mod paths;
pub mod relabel;
pub mod remote_write;
pub mod scrape;
pub mod secret;
mod serde_util;
pub mod size;
mod validate;

pub use alerting::{AlertingConfig, AlertmanagerApiVersion, AlertmanagerConfig};
pub use config::Config;
pub use discovery::{DnsRecordType, DnsSdConfig, FileSdConfig, HttpSdConfig, ServiceDiscoveryConfigs, StaticConfig};
pub use duration::{Duration, DurationError};
pub use error::ConfigError;
pub use global::GlobalConfig;
pub use http_client::{Authorization, BasicAuth, HttpClientConfig, HttpHeader, TlsConfig, TlsVersion};
pub use kubernetes_sd::{AttachMetadata, KubernetesSdConfig, KubernetesSelector, NamespaceDiscovery};
pub use names::NameValidationScheme;
pub use relabel::{LabelsBuilder, RelabelAction, RelabelConfig, RelabelRegex};
pub use remote_write::{MetadataConfig, QueueConfig, RemoteWriteConfig};
pub use scrape::{ScrapeConfig, ScrapeProtocol};
pub use secret::Secret;
pub use size::ByteSize;
pub use validate::{check_target_address, glob};
