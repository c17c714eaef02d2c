//! `remote_write` entries: where and how samples are forwarded.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::duration::Duration;
use crate::http_client::HttpClientConfig;
use crate::relabel::RelabelConfig;
use crate::serde_util::null_as_default;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RemoteWriteConfig {
    #[serde(deserialize_with = "null_as_default")]
    pub url: String,
    pub remote_timeout: Duration,
    #[serde(skip_serializing_if = "BTreeMap::is_empty", deserialize_with = "null_as_default")]
    pub headers: BTreeMap<String, String>,
    #[serde(skip_serializing_if = "Vec::is_empty", deserialize_with = "null_as_default")]
    pub write_relabel_configs: Vec<RelabelConfig>,
    #[serde(skip_serializing_if = "String::is_empty", deserialize_with = "null_as_default")]
    pub name: String,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    #[serde(deserialize_with = "crate::serde_util::go_bool")]
    pub send_exemplars: bool,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    #[serde(deserialize_with = "crate::serde_util::go_bool")]
    pub send_native_histograms: bool,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    #[serde(deserialize_with = "crate::serde_util::go_bool")]
    pub round_robin_dns: bool,
    /// `prometheus.WriteRequest` (remote write 1.0) unless set to the 2.0 message.
    #[serde(skip_serializing_if = "String::is_empty", deserialize_with = "null_as_default")]
    pub protobuf_message: String,
    pub queue_config: QueueConfig,
    pub metadata_config: MetadataConfig,
    #[serde(skip_deserializing, flatten)]
    pub http_client: HttpClientConfig,
}

pub const DEFAULT_REMOTE_TIMEOUT: Duration = Duration::from_secs(30);
pub const REMOTE_WRITE_V1_MESSAGE: &str = "prometheus.WriteRequest";
pub const REMOTE_WRITE_V2_MESSAGE: &str = "io.prometheus.write.v2.Request";

impl Default for RemoteWriteConfig {
    fn default() -> Self {
        Self {
            url: String::new(),
            remote_timeout: DEFAULT_REMOTE_TIMEOUT,
            headers: BTreeMap::new(),
            write_relabel_configs: Vec::new(),
            name: String::new(),
            send_exemplars: false,
            send_native_histograms: false,
            round_robin_dns: false,
            protobuf_message: REMOTE_WRITE_V1_MESSAGE.to_string(),
            queue_config: QueueConfig::default(),
            metadata_config: MetadataConfig::default(),
            http_client: HttpClientConfig::remote_write_default(),
        }
    }
}

/// How samples are buffered, batched, sharded and retried.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct QueueConfig {
    #[serde(deserialize_with = "crate::serde_util::go_uint")]
    pub capacity: u64,
    #[serde(deserialize_with = "crate::serde_util::go_uint")]
    pub max_shards: u64,
    #[serde(deserialize_with = "crate::serde_util::go_uint")]
    pub min_shards: u64,
    #[serde(deserialize_with = "crate::serde_util::go_uint")]
    pub max_samples_per_send: u64,
    pub batch_send_deadline: Duration,
    pub min_backoff: Duration,
    pub max_backoff: Duration,
    #[serde(rename = "retry_on_http_429", skip_serializing_if = "std::ops::Not::not")]
    #[serde(deserialize_with = "crate::serde_util::go_bool")]
    pub retry_on_http_429: bool,
    #[serde(skip_serializing_if = "Duration::is_zero")]
    pub sample_age_limit: Duration,
}

impl QueueConfig {
    /// Checks the queue settings as Prometheus does.
    pub fn validate(&self) -> Result<(), &'static str> {
        if self.max_shards == 0 {
            return Err("remote write queue max_shards must be positive");
        }
        if self.min_shards == 0 {
            return Err("remote write queue min_shards must be positive");
        }
        if self.min_shards > self.max_shards {
            return Err("remote write queue min_shards must not be greater than max_shards");
        }
        if self.max_samples_per_send == 0 {
            return Err("remote write queue max_samples_per_send must be positive");
        }
        if self.capacity == 0 {
            return Err("remote write queue capacity must be positive");
        }
        if self.max_backoff < self.min_backoff {
            return Err("remote write queue max_backoff must not be less than min_backoff");
        }
        Ok(())
    }
}

impl Default for QueueConfig {
    fn default() -> Self {
        Self {
            capacity: 10_000,
            max_shards: 50,
            min_shards: 1,
            max_samples_per_send: 2_000,
            batch_send_deadline: Duration::from_secs(5),
            min_backoff: Duration::from_millis(30),
            max_backoff: Duration::from_secs(5),
            retry_on_http_429: false,
            sample_age_limit: Duration::ZERO,
        }
    }
}

/// Whether and how often metric metadata is sent along.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MetadataConfig {
    #[serde(deserialize_with = "crate::serde_util::go_bool")]
    pub send: bool,
    pub send_interval: Duration,
    #[serde(deserialize_with = "crate::serde_util::go_uint")]
    pub max_samples_per_send: u64,
}

impl Default for MetadataConfig {
    fn default() -> Self {
        Self {
            send: true,
            send_interval: Duration::from_secs(60),
            max_samples_per_send: 2_000,
        }
    }
}
