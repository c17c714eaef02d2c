//! One Alertmanager's queue and the task that empties it, batch by batch.
//!
//! Each Alertmanager has its own queue, so a slow or unreachable one never
//! holds back the others. A full queue drops its oldest alerts: the newest
//! state of an alert is the one worth delivering.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::sync::Notify;

use crate::alert::Alert;
use crate::metrics::Metrics;

/// How a send loop delivers and how much it holds.
#[derive(Debug, Clone)]
pub(crate) struct LoopOptions {
    pub queue_capacity: usize,
    pub max_batch_size: usize,
    pub timeout: Duration,
    pub drain_on_shutdown: bool,
}

pub(crate) struct SendLoop {
    url: String,
    queue: Mutex<VecDeque<Alert>>,
    work: Notify,
    stopped: tokio::sync::watch::Sender<bool>,
    options: LoopOptions,
    client: reqwest::Client,
    metrics: Arc<Metrics>,
}

impl SendLoop {
    /// Starts the loop on the current runtime.
    pub fn start(url: String, client: reqwest::Client, options: LoopOptions, metrics: Arc<Metrics>) -> Arc<Self> {
        let (stopped, _) = tokio::sync::watch::channel(false);
        let l = Arc::new(Self {
            url,
            queue: Mutex::new(VecDeque::new()),
            work: Notify::new(),
            stopped,
            options,
            client,
            metrics,
        });
        tokio::spawn(l.clone().run());
        l
    }

    pub fn add(&self, alerts: &[Alert]) {
        if *self.stopped.borrow() {
            return;
        }
        let cap = self.options.queue_capacity;
        let mut q = self.queue.lock();
        let skip = alerts.len().saturating_sub(cap);
        let overflow = (q.len() + alerts.len() - skip).saturating_sub(cap);
        q.drain(..overflow);
        q.extend(alerts[skip..].iter().cloned());
        let dropped = skip + overflow;
        if dropped > 0 {
            tracing::warn!(alertmanager = %self.url, dropped, "alert notification queue full, dropping the oldest alerts");
            self.metrics.dropped(&self.url, dropped as u64);
        }
        drop(q);
        self.work.notify_one();
    }

    pub fn queue_len(&self) -> usize {
        self.queue.lock().len()
    }

    /// Stops the loop; with draining on, what is queued is sent first.
    pub async fn stop(&self) {
        self.stopped.send_replace(true);
        self.work.notify_one();
        if self.options.drain_on_shutdown {
            while self.queue_len() > 0 {
                self.send_one_batch().await;
            }
        } else {
            let left = std::mem::take(&mut *self.queue.lock()).len();
            self.metrics.dropped(&self.url, left as u64);
        }
        self.metrics.forget(&self.url);
    }

    async fn run(self: Arc<Self>) {
        let mut stopped = self.stopped.subscribe();
        loop {
            if *stopped.borrow() {
                return;
            }
            tokio::select! {
                _ = self.work.notified() => {}
                _ = stopped.changed() => return,
            }
            while self.queue_len() > 0 && !*stopped.borrow() {
                self.send_one_batch().await;
            }
        }
    }

    fn next_batch(&self) -> Vec<Alert> {
        let mut q = self.queue.lock();
        let n = q.len().min(self.options.max_batch_size);
        q.drain(..n).collect()
    }

    async fn send_one_batch(&self) {
        let batch = self.next_batch();
        if batch.is_empty() {
            return;
        }
        let started = std::time::Instant::now();
        match self.post(&batch).await {
            Ok(()) => self.metrics.sent(&self.url, batch.len() as u64, started.elapsed()),
            Err(e) => {
                tracing::error!(alertmanager = %self.url, count = batch.len(), error = %e, "error sending alerts");
                self.metrics.failed(&self.url, batch.len() as u64);
            }
        }
    }

    async fn post(&self, alerts: &[Alert]) -> Result<(), String> {
        let body = serde_json::to_vec(alerts).map_err(|e| e.to_string())?;
        let response = self
            .client
            .post(&self.url)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .timeout(self.options.timeout)
            .body(body)
            .send()
            .await
            .map_err(|e| e.to_string())?;
        let status = response.status();
        if !status.is_success() {
            return Err(format!("bad response status {status}"));
        }
        Ok(())
    }
}
