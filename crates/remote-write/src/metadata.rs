//! Metric metadata (type, help, unit of each metric family the scrapes
//! found) sent to a remote write 1.0 receiver every `send_interval`, in
//! requests of at most `max_samples_per_send` entries, as Prometheus'
//! metadata watcher sends it.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use cairn_protocols::MetricMetadata;
use cairn_protocols::remote_write::encode_write_request;
use tokio::sync::watch;

use crate::metrics::{QueueMetrics, add};
use crate::send::{Backoff, Outcome, Sender};

/// Where the metadata comes from: what the scrapes found, now.
pub type MetadataSource = Arc<dyn Fn() -> Vec<MetricMetadata> + Send + Sync>;

pub(crate) struct MetadataLoop {
    pub source: MetadataSource,
    pub sender: Arc<Sender>,
    pub interval: Duration,
    pub max_per_send: usize,
    pub backoff: Backoff,
    pub metrics: Arc<QueueMetrics>,
    pub queue: String,
}

impl MetadataLoop {
    pub(crate) async fn run(self, mut stop: watch::Receiver<bool>) {
        loop {
            tokio::select! {
                biased;
                _ = stop.changed() => return,
                _ = tokio::time::sleep(self.interval) => {}
            }
            let mut all = (self.source)();
            all.sort_by(|a, b| a.metric_family_name.cmp(&b.metric_family_name));
            all.dedup_by(|a, b| a.metric_family_name == b.metric_family_name);
            for chunk in all.chunks(self.max_per_send.max(1)) {
                let mut body = Vec::new();
                if let Err(e) = encode_write_request(&[], chunk, &mut body) {
                    tracing::error!(queue = %self.queue, err = %e, "cannot encode metadata");
                    continue;
                }
                let n = chunk.len() as u64;
                let len = body.len() as u64;
                let outcome = self
                    .sender
                    .send_with_retries(Bytes::from(body), self.backoff, &mut stop, |reason, _| {
                        add(&self.metrics.metadata_retried, n);
                        tracing::warn!(queue = %self.queue, reason, "failed to send metadata, retrying");
                    })
                    .await;
                match outcome {
                    Outcome::Delivered { .. } => {
                        add(&self.metrics.metadata, n);
                        add(&self.metrics.metadata_bytes, len);
                    }
                    Outcome::Refused(reason) => {
                        add(&self.metrics.metadata_failed, n);
                        tracing::error!(queue = %self.queue, reason, "non-recoverable error sending metadata");
                    }
                    Outcome::Stopped => return,
                }
            }
        }
    }
}
