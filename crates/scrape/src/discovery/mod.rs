//! Service discovery: static lists, files (`file_sd_configs`), HTTP
//! endpoints (`http_sd_configs`), DNS records (`dns_sd_configs`) and
//! Kubernetes objects (`kubernetes_sd_configs`), merged per job by a [`DiscoveryManager`]
//! that publishes every change on a watch channel. Scrape pools use it, and
//! so can Alertmanager discovery.

pub mod dns;
mod file;
mod group;
mod http;
pub mod kubernetes;
mod manager;

use std::time::Duration;

pub use group::{ADDRESS_LABEL, LabelSet, TargetGroup, parse_json_groups, parse_yaml_groups};
pub use manager::{DiscoveryManager, DiscoveryOptions};

use crate::settings::HttpSettings;

/// The label naming the file a file SD target came from.
pub const FILEPATH_LABEL: &str = "__meta_filepath";
/// The label naming the URL an HTTP SD target came from.
pub const URL_LABEL: &str = "__meta_url";

/// One discovery mechanism of a job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SdConfig {
    /// `static_configs`: the groups as configured (their sources are set by the manager).
    Static(Vec<TargetGroup>),
    /// `file_sd_configs`: globs of `.json`, `.yml` or `.yaml` files.
    File {
        files: Vec<String>,
        refresh_interval: Duration,
    },
    /// `http_sd_configs`.
    Http {
        url: String,
        refresh_interval: Duration,
        http: Box<HttpSettings>,
    },
    /// `dns_sd_configs`.
    Dns {
        query: dns::DnsQuery,
        refresh_interval: Duration,
    },
    /// `kubernetes_sd_configs`.
    Kubernetes(Box<kubernetes::KubernetesSd>),
}
