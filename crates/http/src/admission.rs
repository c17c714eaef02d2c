//! Query admission: at most `max_concurrency` expensive reads (PromQL
//! queries, series, labels with matchers, federate, export, remote read)
//! run at once;
//! the next ones wait in a bounded FIFO queue for a bounded time, and past
//! either bound are refused at once with a retryable 503. A storm of
//! dashboard queries then costs a bounded amount of CPU and memory, and its
//! excess fails fast instead of piling up until the process runs out of
//! memory.
//!
//! Rule evaluation runs its own engine on its own tasks (cairn-rules), so
//! it never waits here behind HTTP queries.
//!
//! Admitted work runs with [`QuerySlot::run`]: on the query threads when
//! the server gave the gate some ([`QueryGate::with_threads`]), which run
//! below ingestion's priority, so a storm of heavy queries, their encoding
//! included, takes the CPU that ingestion and rule evaluation leave. The
//! slot lives as long as the work it admits, so a query whose client went
//! away holds its slot until its evaluation notices the cancel flag and
//! stops.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::ApiError;
use crate::exposition::Exposition;

/// Bounds of [`QueryGate`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AdmissionConfig {
    /// Queries running at once (`--query.max-concurrency`); 0: no limit.
    /// Default 20, as Prometheus.
    pub max_concurrency: usize,
    /// Queries waiting for a slot at most (`--query.max-queue-length`);
    /// one more is refused at once. Default 100.
    pub max_queue_length: usize,
    /// Longest wait for a slot (`--query.max-queue-wait`). Default 10 s.
    pub max_queue_wait: Duration,
}

impl Default for AdmissionConfig {
    fn default() -> Self {
        Self {
            max_concurrency: 20,
            max_queue_length: 100,
            max_queue_wait: Duration::from_secs(10),
        }
    }
}

/// Why a query was refused without running.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Refusal {
    QueueFull,
    QueueTimeout,
}

/// The slots of the queries that may run at once and their queue.
#[derive(Debug)]
pub struct QueryGate {
    config: AdmissionConfig,
    /// Fair: waiters get freed permits in arrival order.
    slots: Arc<Semaphore>,
    running: AtomicUsize,
    waiting: AtomicUsize,
    admitted: AtomicU64,
    refused_queue_full: AtomicU64,
    refused_queue_timeout: AtomicU64,
    /// Where admitted work runs; the blocking pool when `None`.
    threads: Option<Arc<rayon::ThreadPool>>,
}

/// A running query's slot; dropping it lets the next one in.
#[derive(Debug)]
pub struct QuerySlot {
    _permit: OwnedSemaphorePermit,
    gate: Arc<QueryGate>,
}

impl Drop for QuerySlot {
    fn drop(&mut self) {
        self.gate.running.fetch_sub(1, Ordering::Relaxed);
    }
}

impl QuerySlot {
    /// Runs the admitted work `f`, holding the slot until it is done: on
    /// the gate's query threads, from the blocking pool (so that the async
    /// workers never wait for it). `f` must not wait on anything but CPU
    /// and storage (a client, say), as the query threads are few. A panic
    /// in `f` becomes a 500.
    pub async fn run<T, F>(self, f: F) -> Result<T, ApiError>
    where
        F: FnOnce() -> Result<T, ApiError> + Send + 'static,
        T: Send + 'static,
    {
        crate::run_blocking(move || match &self.gate.threads {
            Some(threads) => threads.install(f),
            None => f(),
        })
        .await
    }
}

/// Counts a waiter for as long as it waits (also when its client goes
/// away and the waiting future is dropped).
struct Waiting<'a>(&'a AtomicUsize);

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

impl QueryGate {
    pub fn new(config: AdmissionConfig) -> Self {
        let permits = match config.max_concurrency {
            0 => Semaphore::MAX_PERMITS,
            n => n,
        };
        Self {
            config,
            slots: Arc::new(Semaphore::new(permits)),
            running: AtomicUsize::new(0),
            waiting: AtomicUsize::new(0),
            admitted: AtomicU64::new(0),
            refused_queue_full: AtomicU64::new(0),
            refused_queue_timeout: AtomicU64::new(0),
            threads: None,
        }
    }

    /// The same gate, running admitted work on `threads`.
    pub fn with_threads(self, threads: Arc<rayon::ThreadPool>) -> Self {
        Self {
            threads: Some(threads),
            ..self
        }
    }

    pub fn config(&self) -> AdmissionConfig {
        self.config
    }

    /// Waits for a slot: at once when one is free, else in the queue for
    /// at most `max_queue_wait`; a 503 `unavailable` when the queue is full
    /// or the wait is over.
    pub async fn admit(self: &Arc<Self>) -> Result<QuerySlot, ApiError> {
        if let Ok(permit) = Arc::clone(&self.slots).try_acquire_owned() {
            return Ok(self.slot(permit));
        }
        let queued = self.waiting.fetch_add(1, Ordering::Relaxed);
        let waiting = Waiting(&self.waiting);
        if queued >= self.config.max_queue_length {
            drop(waiting);
            return Err(self.refuse(Refusal::QueueFull));
        }
        let acquired = tokio::time::timeout(self.config.max_queue_wait, Arc::clone(&self.slots).acquire_owned()).await;
        drop(waiting);
        match acquired {
            Ok(Ok(permit)) => Ok(self.slot(permit)),
            // The semaphore is never closed.
            Ok(Err(_)) | Err(_) => Err(self.refuse(Refusal::QueueTimeout)),
        }
    }

    fn slot(self: &Arc<Self>, permit: OwnedSemaphorePermit) -> QuerySlot {
        self.running.fetch_add(1, Ordering::Relaxed);
        self.admitted.fetch_add(1, Ordering::Relaxed);
        QuerySlot {
            _permit: permit,
            gate: Arc::clone(self),
        }
    }

    fn refuse(&self, why: Refusal) -> ApiError {
        let c = &self.config;
        match why {
            Refusal::QueueFull => {
                self.refused_queue_full.fetch_add(1, Ordering::Relaxed);
                ApiError::unavailable(format!(
                    "too many concurrent queries: {} running and {} waiting (--query.max-concurrency, --query.max-queue-length)",
                    c.max_concurrency, c.max_queue_length
                ))
            }
            Refusal::QueueTimeout => {
                self.refused_queue_timeout.fetch_add(1, Ordering::Relaxed);
                ApiError::unavailable(format!(
                    "too many concurrent queries: no query slot free within {}s (--query.max-concurrency={}, --query.max-queue-wait)",
                    c.max_queue_wait.as_secs_f64(),
                    c.max_concurrency
                ))
            }
        }
    }

    /// Queries running now.
    pub fn running(&self) -> usize {
        self.running.load(Ordering::Relaxed)
    }

    /// Queries waiting for a slot now.
    pub fn waiting(&self) -> usize {
        self.waiting.load(Ordering::Relaxed)
    }

    pub(crate) fn render(&self, e: &mut Exposition) {
        e.single(
            "prometheus_engine_queries",
            "The current number of queries being executed or waiting.",
            "gauge",
            (self.running() + self.waiting()) as f64,
        );
        e.single(
            "prometheus_engine_queries_concurrent_max",
            "The max number of concurrent queries.",
            "gauge",
            match self.config.max_concurrency {
                0 => -1.0,
                n => n as f64,
            },
        );
        e.single(
            "cairn_query_queue_length",
            "Queries waiting for a slot to run (--query.max-concurrency).",
            "gauge",
            self.waiting() as f64,
        );
        e.single(
            "cairn_query_admitted_total",
            "Queries admitted to run, right away or after waiting.",
            "counter",
            self.admitted.load(Ordering::Relaxed) as f64,
        );
        let name = "cairn_query_refused_total";
        e.family(
            name,
            "Queries refused with 503 without running: the queue was full, or no slot freed up in time.",
            "counter",
        );
        e.sample(
            name,
            &[("reason", "queue_full")],
            self.refused_queue_full.load(Ordering::Relaxed) as f64,
        );
        e.sample(
            name,
            &[("reason", "queue_timeout")],
            self.refused_queue_timeout.load(Ordering::Relaxed) as f64,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    fn gate(max_concurrency: usize, max_queue_length: usize, wait_ms: u64) -> Arc<QueryGate> {
        Arc::new(QueryGate::new(AdmissionConfig {
            max_concurrency,
            max_queue_length,
            max_queue_wait: Duration::from_millis(wait_ms),
        }))
    }

    /// Admitted work runs on the gate's query threads, holding its slot
    /// until it is done; a panic in it is a 500 and frees the slot.
    #[tokio::test]
    async fn admitted_work_runs_on_the_query_threads_holding_its_slot() {
        let threads = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .thread_name(|i| format!("query-test-{i}"))
            .build()
            .unwrap();
        let g = Arc::new(
            QueryGate::new(AdmissionConfig {
                max_concurrency: 1,
                ..AdmissionConfig::default()
            })
            .with_threads(Arc::new(threads)),
        );
        let seen = Arc::clone(&g);
        let (thread, running) = g
            .admit()
            .await
            .unwrap()
            .run(move || Ok((std::thread::current().name().map(str::to_string), seen.running())))
            .await
            .unwrap();
        assert_eq!(thread.as_deref(), Some("query-test-0"));
        assert_eq!(running, 1);
        assert_eq!(g.running(), 0);

        let err = g
            .admit()
            .await
            .unwrap()
            .run(|| -> Result<(), ApiError> { panic!("a bug in a query") })
            .await
            .unwrap_err();
        assert_eq!(err.status().as_u16(), 500);
        assert_eq!(g.running(), 0);
    }

    #[tokio::test]
    async fn a_full_queue_refuses_at_once() {
        let g = gate(1, 1, 60_000);
        let running = g.admit().await.unwrap();
        let waiter = {
            let g = Arc::clone(&g);
            tokio::spawn(async move { g.admit().await.map(|_| ()) })
        };
        while g.waiting() == 0 {
            tokio::task::yield_now().await;
        }
        let started = Instant::now();
        let err = g.admit().await.unwrap_err();
        assert!(started.elapsed() < Duration::from_millis(100));
        assert_eq!(err.status().as_u16(), 503);
        assert!(err.to_string().contains("too many concurrent queries"), "{err}");
        assert_eq!((g.running(), g.waiting()), (1, 1));
        drop(running);
        waiter.await.unwrap().unwrap();
        assert_eq!((g.running(), g.waiting()), (0, 0));
    }

    #[tokio::test]
    async fn a_waiter_is_refused_after_the_queue_wait() {
        let g = gate(1, 10, 50);
        let _running = g.admit().await.unwrap();
        let started = Instant::now();
        let err = g.admit().await.unwrap_err();
        let waited = started.elapsed();
        assert!(
            waited >= Duration::from_millis(50) && waited < Duration::from_secs(2),
            "{waited:?}"
        );
        assert_eq!(err.status().as_u16(), 503);
        assert_eq!(g.waiting(), 0);
        let mut e = Exposition::new();
        g.render(&mut e);
        let text = e.finish();
        assert!(
            text.contains("cairn_query_refused_total{reason=\"queue_timeout\"} 1"),
            "{text}"
        );
        assert!(text.contains("prometheus_engine_queries 1"), "{text}");
        assert!(text.contains("prometheus_engine_queries_concurrent_max 1"), "{text}");
    }

    #[tokio::test]
    async fn slots_go_to_waiters_in_arrival_order() {
        let g = gate(1, 10, 60_000);
        let first = g.admit().await.unwrap();
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        for i in 0..3 {
            let (waiter, tx) = (Arc::clone(&g), tx.clone());
            tokio::spawn(async move {
                let slot = waiter.admit().await.unwrap();
                tx.send(i).unwrap();
                tokio::time::sleep(Duration::from_millis(5)).await;
                drop(slot);
            });
            while g.waiting() < i + 1 {
                tokio::task::yield_now().await;
            }
        }
        drop(first);
        let mut order = Vec::new();
        for _ in 0..3 {
            order.push(rx.recv().await.unwrap());
        }
        assert_eq!(order, [0, 1, 2]);
    }

    #[tokio::test]
    async fn a_client_gone_while_waiting_leaves_the_queue() {
        let g = gate(1, 1, 60_000);
        let _running = g.admit().await.unwrap();
        let waiter = {
            let g = Arc::clone(&g);
            tokio::spawn(async move { g.admit().await.map(|_| ()) })
        };
        while g.waiting() == 0 {
            tokio::task::yield_now().await;
        }
        waiter.abort();
        let _ = waiter.await;
        assert_eq!(g.waiting(), 0);
    }

    #[tokio::test]
    async fn zero_means_no_limit() {
        let g = gate(0, 0, 0);
        let slots: Vec<_> = futures_admit(&g, 1000).await;
        assert_eq!(g.running(), slots.len());
    }

    /// The expensive reads wait for a slot; the cheap ones (labels without
    /// `match[]`) do not.
    #[tokio::test]
    async fn expensive_reads_are_refused_while_the_slots_are_taken() {
        use crate::test_util::TestApp;
        let app = TestApp::with_config(crate::ApiConfig {
            query_admission: AdmissionConfig {
                max_concurrency: 1,
                max_queue_length: 0,
                max_queue_wait: Duration::from_secs(60),
            },
            ..crate::ApiConfig::default()
        });
        app.write(&[("up", "a", &[(1000, 1.0)])]);
        let taken = app.state.query_gate().admit().await.unwrap();
        for path in [
            "/api/v1/series?match[]=up",
            "/api/v1/labels?match[]=up",
            "/api/v1/label/job/values?match[]=up",
            "/federate?match[]=up",
            "/api/v1/export?match[]=up",
        ] {
            let r = app.get(path).await;
            r.check_status(503);
            assert!(r.body.contains(r#""errorType":"unavailable""#), "{path}: {}", r.body);
            assert_eq!(
                r.headers.get("retry-after").map(|v| v.to_str().unwrap()),
                Some("5"),
                "{path}"
            );
        }
        app.get("/api/v1/labels").await.check_status(200);
        app.get("/api/v1/label/job/values").await.check_status(200);
        drop(taken);
        app.get("/api/v1/series?match[]=up").await.check_status(200);
        assert_eq!(app.state.query_gate().running(), 0);
        let metrics = app.get("/metrics").await.body;
        assert!(
            metrics.contains("cairn_query_refused_total{reason=\"queue_full\"} 5"),
            "{metrics}"
        );
    }

    async fn futures_admit(g: &Arc<QueryGate>, n: usize) -> Vec<QuerySlot> {
        let mut out = Vec::new();
        for _ in 0..n {
            out.push(g.admit().await.unwrap());
        }
        out
    }
}
