//! `remote_write`: forwarding what Cairn stored to other systems, as
//! Prometheus does. One queue per configured receiver follows the WAL
//! (every acknowledged write is in it) from a durable position, so the
//! forwarding survives restarts and kill -9, and a receiver that is down
//! gets its backlog once it is back (the WAL segments it needs are held
//! for it, within `--storage.wal-max-retained-bytes`).
//!
//! - agent.rs: agent mode's scrapes, written as the requests that send them;
//! - queue.rs: the reader, the shards, batching, retries, resharding;
//! - positions.rs: where each shard's delivery stands, on disk;
//! - series.rs: external labels, `write_relabel_configs`, encoded labels;
//! - send.rs: one request and what its answer means, and retries;
//! - metadata.rs: metric metadata sent every `send_interval`;
//! - metrics.rs: the `prometheus_remote_storage_*` figures.

mod agent;
mod metadata;
mod metrics;
mod positions;
mod queue;
mod send;
mod series;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use cairn_config::{Config, RemoteWriteConfig};
use cairn_model::Labels;
use cairn_tsdb::Tsdb;
use parking_lot::Mutex;

pub use agent::ForwardAppendable;
pub use metadata::MetadataSource;
pub use metrics::{BATCH_DURATION_BUCKETS, QueueFigures};
pub use queue::QueueSettings;

use metrics::QueueMetrics;
use queue::{Queue, QueueParts};
use send::{Protocol, Sender};
use series::SeriesCache;

/// The queues of one engine's `remote_write` receivers.
pub struct RemoteWrite {
    db: Arc<Tsdb>,
    dir: PathBuf,
    running: Mutex<BTreeMap<String, Running>>,
    metadata: Mutex<Option<MetadataSource>>,
    forward: Arc<ForwardAppendable>,
}

struct Running {
    /// What it was started from: a reload that changes neither keeps it.
    config: RemoteWriteConfig,
    external_labels: Labels,
    url: String,
    settings: QueueSettings,
    metrics: Arc<QueueMetrics>,
    queue: Queue,
}

impl RemoteWrite {
    /// Queues over `db`'s WAL; their positions live in its directory.
    pub fn new(db: Arc<Tsdb>) -> Self {
        let dir = db.path().join("remote_write");
        Self {
            forward: Arc::new(ForwardAppendable::new(db.clone())),
            db,
            dir,
            running: Mutex::default(),
            metadata: Mutex::default(),
        }
    }

    /// Where agent mode's scrapes go: written as the queues send them,
    /// with the configuration's external labels.
    pub fn scrape_appendable(&self) -> Arc<ForwardAppendable> {
        self.forward.clone()
    }

    /// Where queues that send metadata get it; queues started after the call use it.
    pub fn set_metadata_source(&self, source: MetadataSource) {
        *self.metadata.lock() = Some(source);
    }

    /// Starts, restarts and stops queues to match `config`. A receiver
    /// removed from it loses its position and the WAL held for it.
    pub async fn apply(&self, config: &Config) -> Result<(), String> {
        let wanted: Vec<(String, &RemoteWriteConfig)> = queue_names(&config.remote_write)
            .into_iter()
            .zip(&config.remote_write)
            .collect();
        let external = &config.global.external_labels;
        self.forward.set_external_labels(external.clone());
        let stale: Vec<Running> = {
            let mut running = self.running.lock();
            let unchanged = |name: &String, r: &Running| {
                wanted
                    .iter()
                    .any(|(n, rw)| n == name && **rw == r.config && *external == r.external_labels)
            };
            let names: Vec<String> = running
                .iter()
                .filter(|(name, r)| !unchanged(name, r))
                .map(|(name, _)| name.clone())
                .collect();
            names.iter().filter_map(|name| running.remove(name)).collect()
        };
        if !stale.is_empty() {
            tokio::task::spawn_blocking(move || {
                for r in stale {
                    r.queue.stop();
                }
            })
            .await
            .map_err(|e| format!("stopping remote write queues: {e}"))?;
        }
        let names: Vec<String> = wanted.iter().map(|(n, _)| n.clone()).collect();
        self.forget_all_but(&names)?;
        let mut errors = Vec::new();
        for (name, rw) in wanted {
            if self.running.lock().contains_key(&name) {
                continue;
            }
            match self.start(&name, rw, external) {
                Ok(r) => {
                    self.running.lock().insert(name, r);
                }
                Err(e) => errors.push(format!("remote_write {name:?}: {e}")),
            }
        }
        if errors.is_empty() {
            Ok(())
        } else {
            Err(errors.join("; "))
        }
    }

    fn start(&self, name: &str, rw: &RemoteWriteConfig, external: &Labels) -> Result<Running, String> {
        let http = cairn_scrape::http_settings(&rw.http_client);
        let client = cairn_scrape::client::build_client(&http)?;
        let q = &rw.queue_config;
        let settings = QueueSettings {
            name: name.to_string(),
            min_shards: q.min_shards as usize,
            max_shards: q.max_shards as usize,
            capacity: q.capacity as usize,
            max_samples_per_send: q.max_samples_per_send as usize,
            batch_send_deadline: q.batch_send_deadline.as_std(),
            min_backoff: q.min_backoff.as_std(),
            max_backoff: q.max_backoff.as_std(),
            sample_age_limit: q.sample_age_limit.as_std(),
            metadata_interval: rw
                .metadata_config
                .send
                .then(|| rw.metadata_config.send_interval.as_std())
                .filter(|i| !i.is_zero()),
            metadata_max_per_send: rw.metadata_config.max_samples_per_send as usize,
        };
        let sender = Sender {
            client,
            url: rw.url.clone(),
            http,
            headers: rw.headers.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
            timeout: rw.remote_timeout.as_std(),
            protocol: if rw.protobuf_message == cairn_config::remote_write::REMOTE_WRITE_V2_MESSAGE {
                Protocol::V2
            } else {
                Protocol::V1
            },
            retry_on_429: q.retry_on_http_429,
        };
        let metrics = Arc::new(QueueMetrics::default());
        let protocol = sender.protocol;
        let parts = QueueParts {
            settings: settings.clone(),
            sender,
            cache: SeriesCache::new(external.clone(), rw.write_relabel_configs.clone(), protocol),
            metrics: metrics.clone(),
            metadata: self.metadata.lock().clone(),
        };
        let queue = Queue::start(
            self.db.clone(),
            &self.queue_dir(name),
            parts,
            tokio::runtime::Handle::current(),
        )?;
        tracing::info!(queue = name, url = %rw.url, "remote write queue started");
        Ok(Running {
            config: rw.clone(),
            external_labels: external.clone(),
            url: rw.url.clone(),
            settings,
            metrics,
            queue,
        })
    }

    /// Drops the positions and WAL holds of queues not named.
    fn forget_all_but(&self, names: &[String]) -> Result<(), String> {
        self.db.retain_wal_holds(names).map_err(|e| e.to_string())?;
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return Ok(());
        };
        let keep: Vec<String> = names.iter().map(|n| dir_name(n)).collect();
        for entry in entries.flatten() {
            let file_name = entry.file_name().to_string_lossy().to_string();
            if !keep.contains(&file_name) {
                std::fs::remove_dir_all(entry.path())
                    .map_err(|e| format!("removing {}: {e}", entry.path().display()))?;
            }
        }
        Ok(())
    }

    fn queue_dir(&self, name: &str) -> PathBuf {
        self.dir.join(dir_name(name))
    }

    /// Every queue's figures now.
    pub fn figures(&self) -> Vec<QueueFigures> {
        self.running
            .lock()
            .iter()
            .map(|(name, r)| {
                let mut f = r.metrics.figures(name, &r.url);
                f.shards_min = r.settings.min_shards as u64;
                f.shards_max = r.settings.max_shards as u64;
                f.shard_capacity = r.settings.capacity as u64;
                f
            })
            .collect()
    }

    /// Stops every queue; what is not delivered yet is sent after the next start.
    pub async fn stop(&self) {
        let all: Vec<Running> = std::mem::take(&mut *self.running.lock()).into_values().collect();
        let _ = tokio::task::spawn_blocking(move || {
            for r in all {
                r.queue.stop();
            }
        })
        .await;
    }
}

/// Each queue's name: its `name`, or six hex digits of its URL's hash,
/// followed by `-2`, `-3`, ... for the second and later unnamed queues of one
/// URL. Stable across restarts, so a queue finds its positions again.
fn queue_names(configs: &[RemoteWriteConfig]) -> Vec<String> {
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    configs
        .iter()
        .map(|rw| {
            if !rw.name.is_empty() {
                return rw.name.clone();
            }
            let base = format!("{:06x}", xxhash_rust::xxh3::xxh3_64(rw.url.as_bytes()) >> 40);
            let n = seen.entry(base.clone()).or_insert(0);
            *n += 1;
            if *n == 1 { base } else { format!("{base}-{n}") }
        })
        .collect()
}

/// A queue's directory name: its name in hex, valid whatever the name.
fn dir_name(name: &str) -> String {
    name.bytes().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unnamed_queues_of_one_url_get_names_of_their_own() {
        let rw = |url: &str, name: &str| RemoteWriteConfig {
            url: url.into(),
            name: name.into(),
            ..RemoteWriteConfig::default()
        };
        let names = queue_names(&[
            rw("http://a/w", ""),
            rw("http://b/w", ""),
            rw("http://a/w", ""),
            rw("http://a/w", "mine"),
        ]);
        assert_eq!(names[0].len(), 6);
        assert_ne!(names[0], names[1]);
        assert_eq!(names[2], format!("{}-2", names[0]));
        assert_eq!(names[3], "mine");
        assert_eq!(
            queue_names(&[rw("http://a/w", "")])[0],
            names[0],
            "the same name at every start"
        );
    }
}
