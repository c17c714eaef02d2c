//! Prometheus' configuration file (`prometheus.yml`): its model with
//! Prometheus' defaults, strict loading and validation, the effective
//! configuration as YAML, and the relabelling engine.
//!
//! Cairn accepts what Prometheus 3 accepts for the parts it implements
//! (static, file and HTTP service discovery; scraping; rules; Alertmanager;
//! remote write) and refuses at startup, by name, every key it does not
//! implement, rather than ignoring it.

pub mod alerting;
mod config;
pub mod discovery;
pub mod duration;
mod error;
pub mod global;
mod go_regex;
pub mod http_client;
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
pub use discovery::{FileSdConfig, HttpSdConfig, ServiceDiscoveryConfigs, StaticConfig};
pub use duration::Duration;
pub use error::ConfigError;
pub use global::GlobalConfig;
pub use http_client::{Authorization, BasicAuth, HttpClientConfig, HttpHeader, TlsConfig, TlsVersion};
pub use names::NameValidationScheme;
pub use relabel::{LabelsBuilder, RelabelAction, RelabelConfig, RelabelRegex};
pub use remote_write::{MetadataConfig, QueueConfig, RemoteWriteConfig};
pub use scrape::{ScrapeConfig, ScrapeProtocol};
pub use secret::Secret;
pub use size::ByteSize;
pub use validate::{check_target_address, glob};
