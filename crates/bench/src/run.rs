//! `cairn bench run`: writes a [`Workload`] over remote write (in real time
//! at the scrape rate, or as a backfill as fast as the target accepts) while
//! evaluating rule expressions as instant queries, and reports what the
//! target did.
//!
//! Threads: one producer generates and encodes requests (routing each target
//! to one sender so its samples arrive in time order), `concurrency` senders
//! post them, one query thread runs the read load, and one sampler prints
//! progress and samples the target process once a second.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::Context;
use cairn_model::Labels;
use cairn_protocols::SeriesSamples;

use crate::fleet::{Fleet, FleetConfig};
use crate::histogram::Histogram;
use crate::processes::Processes;
use crate::procfs;
use crate::query::{
    INGEST_CPU_METRICS, PEER_FRAME_BYTES, PEER_WRITE_FRAME_BYTES, QueryClient, QueryKind, READ_FAN_OUT_INGESTERS,
    READ_FAN_OUTS,
};
use crate::report::{
    GeneratorReport, LatencyReport, QueryClassReport, QueryReport, Report, TargetReport, TimelinePoint, WorkloadReport,
};
use crate::rules::Rule;
use crate::sender::{Access, Client, Outcome, WireProtocol};
use crate::stages::StageClock;
use crate::trace::Trace;
use crate::workload::{Stage, Workload, WorkloadConfig};

/// Everything `cairn bench run` needs.
#[derive(Debug, Clone)]
pub struct RunConfig {
    /// Name of the target in reports (e.g. `cairn`, `victoriametrics`).
    pub name: String,
    pub write_url: String,
    /// Base URL of the Prometheus query API; no read load without it.
    pub query_url: Option<String>,
    pub targets: usize,
    pub interval: Duration,
    pub jitter: Duration,
    pub churn_percent: f64,
    pub churn_interval: Duration,
    pub replicas: usize,
    /// Tenants the targets are spread over (target `t` is tenant `t % tenants`'s).
    pub tenants: usize,
    /// Real-time run length (ignored with stages, whose sum is the length).
    pub duration: Duration,
    /// Backfill this span ending now, as fast as the target accepts.
    pub backfill: Option<Duration>,
    pub stages: Vec<Stage>,
    /// End the ramp at the first stage not kept up with.
    pub stop_when_behind: bool,
    pub reset_every: Duration,
    pub query_interval: Duration,
    pub rules: Vec<Rule>,
    /// Dashboard range queries over this window (none when `None`).
    pub range_window: Option<Duration>,
    pub access: Access,
    /// Remote write 1.0 or 2.0.
    pub protocol: WireProtocol,
    pub concurrency: usize,
    /// Samples per remote-write request (vmagent and Prometheus send ≤ 10k
    /// in real time; a backfill sends a target's series for several scrapes).
    pub batch_samples: usize,
    pub job: String,
    pub seed: u64,
    /// Target processes to sample (CPU, RSS: summed) and their data
    /// directories (disk: summed); several for the nodes of a cluster.
    pub processes: Processes,
    pub data_dirs: Vec<PathBuf>,
    /// Print the live progress line on stderr.
    pub progress: bool,
    /// A trace file instead of the embedded one.
    pub trace: Option<PathBuf>,
}

impl Default for RunConfig {
    fn default() -> Self {
        Self {
            name: "target".into(),
            write_url: String::new(),
            query_url: None,
            targets: 100,
            interval: Duration::from_secs(15),
            jitter: Duration::from_millis(20),
            churn_percent: 0.0,
            churn_interval: Duration::from_secs(600),
            replicas: 1,
            tenants: 1,
            duration: Duration::from_secs(300),
            backfill: None,
            stages: Vec::new(),
            stop_when_behind: false,
            reset_every: Duration::from_secs(6 * 3600),
            query_interval: Duration::from_secs(15),
            rules: Vec::new(),
            range_window: None,
            access: Access::default(),
            protocol: WireProtocol::V1,
            concurrency: 4,
            batch_samples: 10_000,
            job: "node_exporter".into(),
            seed: 1,
            processes: Processes::default(),
            data_dirs: Vec::new(),
            progress: true,
            trace: None,
        }
    }
}

/// One encoded request waiting for a sender.
struct Job {
    body: Vec<u8>,
    samples: u64,
    /// Index of its tenant.
    tenant: usize,
}

impl RunConfig {
    /// The access of tenant `i`'s requests: the configured one, naming the
    /// tenant when the targets are spread over several.
    pub(crate) fn tenant_access(&self, i: usize) -> Access {
        let mut access = self.access.clone();
        if self.tenants > 1 {
            access.headers.push(("X-Scope-OrgID".into(), format!("bench-{i}")));
        }
        access
    }
}

/// Counters shared by all threads.
#[derive(Default)]
struct Shared {
    generated: AtomicU64,
    delivered: AtomicU64,
    failed_samples: AtomicU64,
    requests_ok: AtomicU64,
    requests_failed: AtomicU64,
    retries: AtomicU64,
    bytes: AtomicU64,
    queued: AtomicI64,
    /// Newest data timestamp handed to the senders (ms).
    data_time: AtomicI64,
    /// Largest lag of the producer behind the scrape schedule (ms).
    max_lag_ms: AtomicI64,
    behind_warnings: AtomicU64,
    stop: AtomicBool,
    write_latency: Mutex<Histogram>,
    errors: Mutex<Vec<String>>,
    queries: Mutex<Vec<QueryStats>>,
    query_rounds: AtomicU64,
    query_rounds_late: AtomicU64,
    stages: StageClock,
}

struct QueryStats {
    name: String,
    kind: QueryKind,
    expr: String,
    latency: Histogram,
    errors: u64,
    /// Answers that said they may miss data.
    partial: u64,
    last_error: Option<String>,
    last_series: usize,
}

impl QueryStats {
    fn new(name: &str, kind: QueryKind, expr: &str) -> Self {
        Self {
            name: name.to_string(),
            kind,
            expr: expr.to_string(),
            latency: Histogram::default(),
            errors: 0,
            partial: 0,
            last_error: None,
            last_series: 0,
        }
    }
}

pub(crate) fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

fn note_error(shared: &Shared, msg: String) {
    if let Ok(mut e) = shared.errors.lock()
        && e.len() < 20
    {
        e.push(msg);
    }
}

/// Runs the benchmark and returns its report.
pub fn run(cfg: &RunConfig) -> anyhow::Result<Report> {
    anyhow::ensure!(cfg.concurrency > 0, "--concurrency must be at least 1");
    anyhow::ensure!(cfg.replicas > 0, "--replicas must be at least 1");
    anyhow::ensure!(!cfg.interval.is_zero(), "--scrape-interval must be positive");
    let trace = Arc::new(match &cfg.trace {
        Some(p) => Trace::load(p)?,
        None => Trace::embedded()?,
    });
    let max_targets = cfg.stages.iter().map(|s| s.targets).max().unwrap_or(cfg.targets).max(1);
    let span = match (cfg.backfill, cfg.stages.is_empty()) {
        (Some(b), _) => b,
        (None, false) => cfg.stages.iter().map(|s| s.duration).sum(),
        (None, true) => cfg.duration,
    };
    let interval_ms = cfg.interval.as_millis() as i64;
    let now = now_ms();
    let start_ms = match cfg.backfill {
        // Whole scrape intervals ending one interval ago, so every sample is in the past.
        Some(_) => (now - span.as_millis() as i64 - interval_ms).div_euclid(interval_ms) * interval_ms,
        // Real time starts at the next grid point, so no scrape is late at the start.
        None => (now.div_euclid(interval_ms) + 1) * interval_ms,
    };
    let end_ms = start_ms + span.as_millis() as i64;
    let fleet = Fleet::new(
        trace.clone(),
        FleetConfig {
            targets: max_targets,
            start_ms,
            interval_ms,
            jitter_ms: cfg.jitter.as_millis() as i64,
            job: cfg.job.clone(),
            seed: cfg.seed,
        },
    );
    let workload = Arc::new(Workload::new(
        fleet,
        WorkloadConfig {
            churn_percent: cfg.churn_percent,
            churn_interval_ms: cfg.churn_interval.as_millis() as i64,
            replicas: cfg.replicas,
            reset_every_ms: cfg.reset_every.as_millis() as i64,
            stages: cfg.stages.clone(),
        },
    ));

    let mut shared = Shared::default();
    if cfg.backfill.is_none() {
        shared.stages = StageClock::new(&cfg.stages, start_ms);
    }
    let shared = Arc::new(shared);
    shared.data_time.store(start_ms, Ordering::Relaxed);
    {
        let mut q = shared.queries.lock().map_err(|_| anyhow::anyhow!("poisoned"))?;
        for r in &cfg.rules {
            q.push(QueryStats::new(&r.name, QueryKind::Instant, &r.expr));
        }
        if cfg.range_window.is_some() {
            for (name, expr) in crate::query::DASHBOARD_QUERIES {
                q.push(QueryStats::new(name, QueryKind::Range, expr));
            }
        }
    }

    let tck = procfs::clk_tck();
    let own_pid = std::process::id();
    let own_cpu0 = procfs::cpu_seconds(own_pid, tck).unwrap_or(0.0);
    let target_cpu0 = cfg.processes.cpu_seconds(tck);
    let self_metrics = match &cfg.query_url {
        Some(url) => Some(QueryClient::new(url, cfg.access.clone())?),
        None => None,
    };
    // Ingest CPU, bytes between nodes, of which writes.
    let counters = || match &self_metrics {
        Some(client) => client.self_metrics([
            INGEST_CPU_METRICS,
            PEER_FRAME_BYTES,
            PEER_WRITE_FRAME_BYTES,
            READ_FAN_OUTS,
            READ_FAN_OUT_INGESTERS,
        ]),
        None => Vec::new(),
    };
    let counters0 = counters();
    let started = Instant::now();

    let mut client = Client::new(cfg.write_url.clone())?;
    client.protocol = cfg.protocol;
    // Tenants' clients share the connection pool and the turn over the URLs.
    let clients: Vec<Client> = (0..cfg.tenants)
        .map(|i| {
            let mut c = client.clone();
            c.access = cfg.tenant_access(i);
            c
        })
        .collect();
    let (senders, receivers): (Vec<SyncSender<Job>>, Vec<Receiver<Job>>) =
        (0..cfg.concurrency).map(|_| sync_channel::<Job>(4)).unzip();

    let timeline = std::thread::scope(|scope| -> anyhow::Result<Vec<TimelinePoint>> {
        let mut workers = Vec::new();
        for rx in receivers {
            let (clients, shared) = (clients.clone(), shared.clone());
            workers.push(scope.spawn(move || send_loop(&clients, &rx, &shared)));
        }
        let querier = match &cfg.query_url {
            Some(url) if !cfg.rules.is_empty() || cfg.range_window.is_some() => {
                let qcs = (0..cfg.tenants)
                    .map(|i| QueryClient::new(url, cfg.tenant_access(i)))
                    .collect::<anyhow::Result<Vec<_>>>()?;
                let shared = shared.clone();
                let realtime = cfg.backfill.is_none();
                Some(scope.spawn(move || query_loop(&qcs, cfg, realtime, &shared)))
            }
            _ => None,
        };
        let sampler = {
            let shared = shared.clone();
            scope.spawn(move || sample_loop(cfg, &shared, tck, started))
        };
        let produced = produce(cfg, &workload, &senders, &shared, start_ms, end_ms);
        drop(senders);
        for w in workers {
            w.join().map_err(|_| anyhow::anyhow!("sender thread panicked"))?;
        }
        shared.stop.store(true, Ordering::Relaxed);
        if let Some(q) = querier {
            q.join().map_err(|_| anyhow::anyhow!("query thread panicked"))?;
        }
        let timeline = sampler.join().map_err(|_| anyhow::anyhow!("sampler thread panicked"))?;
        produced?;
        Ok(timeline)
    })?;

    let elapsed = started.elapsed().as_secs_f64();
    let own_cpu = procfs::cpu_seconds(own_pid, tck).unwrap_or(0.0) - own_cpu0;
    let delivered = shared.delivered.load(Ordering::Relaxed);
    let generated = shared.generated.load(Ordering::Relaxed);
    let write_latency = shared
        .write_latency
        .lock()
        .map(|h| LatencyReport::of(&h))
        .unwrap_or_default();
    let queries = shared
        .queries
        .lock()
        .map(|q| {
            q.iter()
                .map(|s| QueryReport {
                    name: s.name.clone(),
                    kind: s.kind.as_str().to_string(),
                    expr: s.expr.clone(),
                    count: s.latency.count(),
                    errors: s.errors,
                    partial: s.partial,
                    latency_ms: LatencyReport::of(&s.latency),
                    last_error: s.last_error.clone(),
                    last_series: s.last_series,
                })
                .collect::<Vec<_>>()
        })
        .unwrap_or_default();
    let (all_queries, query_classes) = shared.queries.lock().map(|q| latency_by_class(&q)).unwrap_or_default();
    let [ingest_cpu, peer_bytes, peer_write_bytes, fan_outs, fan_out_ingesters] =
        crate::query::counters_growth(&counters0, &counters());
    let read_fan_out = fan_out_ingesters
        .zip(fan_outs)
        .filter(|&(_, reads)| reads > 0.0)
        .map(|(asked, reads)| asked / reads);
    let per_sample = |bytes: Option<f64>| bytes.filter(|_| delivered > 0).map(|b| b / delivered as f64);
    let peer_bytes_per_sample = per_sample(peer_bytes);
    let peer_write_bytes_per_sample = per_sample(peer_write_bytes);
    let target = cfg.processes.pids().first().map(|&pid| {
        let cpu = cfg.processes.cpu_seconds(tck).zip(target_cpu0).map(|(a, b)| a - b);
        let peak_rss = timeline.iter().filter_map(|p| p.target_rss_bytes).max();
        let per_million = |c: Option<f64>| c.filter(|_| delivered > 0).map(|c| c / (delivered as f64 / 1e6));
        TargetReport {
            pid,
            cpu_seconds: cpu,
            cpu_seconds_per_million_samples: per_million(cpu),
            ingest_cpu_seconds: ingest_cpu,
            ingest_cpu_seconds_per_million_samples: per_million(ingest_cpu),
            query_cpu_seconds_per_million_samples: per_million(cpu.zip(ingest_cpu).map(|(c, i)| (c - i).max(0.0))),
            rss_peak_bytes: peak_rss,
            rss_last_bytes: timeline.iter().rev().find_map(|p| p.target_rss_bytes),
            disk_last_bytes: procfs::du_bytes_of(&cfg.data_dirs),
            disk_bytes_per_sample: procfs::du_bytes_of(&cfg.data_dirs)
                .filter(|_| delivered > 0)
                .map(|d| d as f64 / delivered as f64),
            peer_bytes_per_sample,
            peer_write_bytes_per_sample,
            read_fan_out,
        }
    });
    let stages = shared.stages.report(&cfg.stages, cfg.interval);
    Ok(Report {
        name: cfg.name.clone(),
        write_url: cfg.write_url.clone(),
        query_url: cfg.query_url.clone(),
        mode: if cfg.backfill.is_some() { "backfill" } else { "realtime" }.into(),
        workload: WorkloadReport {
            targets: max_targets,
            series_per_target: trace.series_count(),
            active_series: max_targets * trace.series_count() * cfg.replicas,
            scrape_interval_s: cfg.interval.as_secs_f64(),
            churn_percent: cfg.churn_percent,
            churn_interval_s: cfg.churn_interval.as_secs_f64(),
            replicas: cfg.replicas,
            stages: cfg
                .stages
                .iter()
                .map(|s| format!("{}:{}s", s.targets, s.duration.as_secs()))
                .collect(),
            data_span_s: span.as_secs_f64(),
            data_start_ms: start_ms,
            data_end_ms: end_ms,
            query_interval_s: cfg.query_interval.as_secs_f64(),
            rules: cfg.rules.len(),
            remote_write_protocol: cfg.protocol.as_str().to_string(),
            concurrency: cfg.concurrency,
            batch_samples: cfg.batch_samples,
        },
        elapsed_s: elapsed,
        samples_generated: generated,
        samples_delivered: delivered,
        samples_failed: shared.failed_samples.load(Ordering::Relaxed),
        samples_per_second: delivered as f64 / elapsed.max(1e-9),
        requests: shared.requests_ok.load(Ordering::Relaxed) + shared.requests_failed.load(Ordering::Relaxed),
        requests_rejected: shared.requests_failed.load(Ordering::Relaxed),
        retries: shared.retries.load(Ordering::Relaxed),
        bytes_sent: shared.bytes.load(Ordering::Relaxed),
        write_latency_ms: write_latency,
        query_latency_ms: LatencyReport::of(&all_queries),
        query_errors: queries.iter().map(|q| q.errors).sum(),
        query_partial: queries.iter().map(|q| q.partial).sum(),
        query_rounds: shared.query_rounds.load(Ordering::Relaxed),
        query_rounds_late: shared.query_rounds_late.load(Ordering::Relaxed),
        queries,
        query_classes,
        generator: GeneratorReport {
            cpu_seconds: own_cpu,
            cpu_percent: 100.0 * own_cpu / elapsed.max(1e-9),
            max_lag_s: shared.max_lag_ms.load(Ordering::Relaxed) as f64 / 1000.0,
            behind_warnings: shared.behind_warnings.load(Ordering::Relaxed),
        },
        target,
        timeline,
        capacity_targets: crate::stages::capacity(&stages),
        stages,
        errors: shared.errors.lock().map(|e| e.clone()).unwrap_or_default(),
        faults: Vec::new(),
        samples_read_back: None,
    })
}

/// The labels of one target identity and replica, with their generation.
type CachedLabels = (u64, Vec<Labels>);

/// Generates every scrape of `[start_ms, end_ms)` and hands the encoded
/// requests to the senders: in real time as each scrape falls due, or for a
/// backfill in windows of several scrapes, as fast as the senders drain.
fn produce(
    cfg: &RunConfig,
    w: &Workload,
    senders: &[SyncSender<Job>],
    shared: &Shared,
    start_ms: i64,
    end_ms: i64,
) -> anyhow::Result<()> {
    let targets = w.fleet.targets();
    let interval_ms = cfg.interval.as_millis() as i64;
    let mut next_k = vec![0u64; targets];
    let mut label_cache: Vec<Vec<Option<CachedLabels>>> = vec![vec![None; cfg.replicas]; targets];
    // One batch per sender and tenant: a request holds one tenant's series.
    let tenants = cfg.tenants.max(1);
    let mut batches: Vec<Vec<SeriesSamples>> = vec![Vec::new(); senders.len() * tenants];
    let mut batch_samples = vec![0usize; senders.len() * tenants];
    // Backfill windows: enough scrapes that one target's request is near the batch size.
    let per_request = (cfg.batch_samples / w.fleet.series_per_target().max(1)).max(1) as i64;
    let backfill_window = per_request * interval_ms;
    let mut window_end = start_ms;
    let mut last_warning = Instant::now() - Duration::from_secs(60);
    let past_capacity = || cfg.stop_when_behind && shared.stages.now().is_some_and(|s| !s.kept_up(cfg.interval));
    while window_end < end_ms && !shared.stop.load(Ordering::Relaxed) && !past_capacity() {
        window_end = if cfg.backfill.is_some() {
            (window_end + backfill_window).min(end_ms)
        } else {
            // Real time: wait for the next tick, then send everything due.
            std::thread::sleep(Duration::from_millis(200));
            (now_ms() + 1).min(end_ms)
        };
        let mut oldest_due = i64::MAX;
        for t in 0..targets {
            let worker = t % senders.len();
            let batch = worker * tenants + t % tenants;
            loop {
                let k0 = next_k[t];
                let g0 = w.fleet.grid_point(t, k0);
                if g0 >= window_end {
                    break;
                }
                // A run of scrapes in one generation, within the window, all active or all not.
                let active = t < w.active_targets(g0);
                let generation = w.generation(t, g0);
                let mut k1 = k0 + 1;
                while w.fleet.grid_point(t, k1) < window_end
                    && w.generation(t, w.fleet.grid_point(t, k1)) == generation
                    && (t < w.active_targets(w.fleet.grid_point(t, k1))) == active
                {
                    k1 += 1;
                }
                next_k[t] = k1;
                if !active {
                    continue;
                }
                oldest_due = oldest_due.min(g0);
                for (r, cached) in label_cache[t].iter_mut().enumerate() {
                    if cached.as_ref().is_none_or(|(g, _)| *g != generation) {
                        *cached = Some((generation, w.labels(t, generation, r)));
                    }
                    let labels = cached.as_ref().map(|(_, l)| l.as_slice()).unwrap_or_default();
                    let series = w.samples(t, r, labels, k0, k1);
                    batch_samples[batch] += series.iter().map(|s| s.samples.len()).sum::<usize>();
                    batches[batch].extend(series);
                    if batch_samples[batch] >= cfg.batch_samples {
                        flush(
                            cfg.protocol,
                            (&mut batches[batch], &mut batch_samples[batch]),
                            (&senders[worker], t % tenants),
                            shared,
                        )?;
                    }
                }
            }
        }
        for (i, (batch, samples)) in batches.iter_mut().zip(&mut batch_samples).enumerate() {
            flush(
                cfg.protocol,
                (batch, samples),
                (&senders[i / tenants], i % tenants),
                shared,
            )?;
        }
        shared.data_time.store(window_end, Ordering::Relaxed);
        if cfg.backfill.is_none() && oldest_due != i64::MAX {
            // Behind schedule: scrapes handed over more than one interval after they fell due.
            let lag = now_ms() - oldest_due;
            shared.max_lag_ms.fetch_max(lag, Ordering::Relaxed);
            if let Some(stage) = shared.stages.now() {
                stage.max_lag_ms.fetch_max(lag, Ordering::Relaxed);
            }
            if lag > interval_ms {
                shared.behind_warnings.fetch_add(1, Ordering::Relaxed);
                if last_warning.elapsed() > Duration::from_secs(10) {
                    last_warning = Instant::now();
                    eprintln!(
                        "\nwarning: generator is {:.1} s behind the scrape schedule (target too slow or --concurrency too low)",
                        lag as f64 / 1000.0
                    );
                }
            }
        }
    }
    Ok(())
}

/// Sends a batch (its series and their sample count) to a sender, as its
/// tenant's (the sender and the tenant's index).
fn flush(
    protocol: WireProtocol,
    (batch, samples): (&mut Vec<SeriesSamples>, &mut usize),
    (tx, tenant): (&SyncSender<Job>, usize),
    shared: &Shared,
) -> anyhow::Result<()> {
    if batch.is_empty() {
        return Ok(());
    }
    let body = protocol.encode(batch)?;
    let n = *samples as u64;
    batch.clear();
    *samples = 0;
    shared.generated.fetch_add(n, Ordering::Relaxed);
    if let Some(stage) = shared.stages.now() {
        stage.generated.fetch_add(n, Ordering::Relaxed);
    }
    shared.queued.fetch_add(1, Ordering::Relaxed);
    tx.send(Job {
        body,
        samples: n,
        tenant,
    })
    .context("sender threads stopped")?;
    Ok(())
}

/// Sends jobs, each with its tenant's client.
fn send_loop(clients: &[Client], rx: &Receiver<Job>, shared: &Shared) {
    while let Ok(job) = rx.recv() {
        shared.queued.fetch_sub(1, Ordering::Relaxed);
        let t0 = Instant::now();
        let outcome = clients[job.tenant].post(&job.body);
        let took = t0.elapsed();
        shared.bytes.fetch_add(job.body.len() as u64, Ordering::Relaxed);
        match outcome {
            Outcome::Ok { retries } => {
                shared.retries.fetch_add(u64::from(retries), Ordering::Relaxed);
                shared.requests_ok.fetch_add(1, Ordering::Relaxed);
                shared.delivered.fetch_add(job.samples, Ordering::Relaxed);
                if let Some(stage) = shared.stages.now() {
                    stage.delivered.fetch_add(job.samples, Ordering::Relaxed);
                }
                if let Ok(mut h) = shared.write_latency.lock() {
                    h.record(took);
                }
            }
            Outcome::Failed {
                retries,
                status,
                message,
            } => {
                shared.retries.fetch_add(u64::from(retries), Ordering::Relaxed);
                shared.requests_failed.fetch_add(1, Ordering::Relaxed);
                shared.failed_samples.fetch_add(job.samples, Ordering::Relaxed);
                if let Some(stage) = shared.stages.now() {
                    stage.failed.fetch_add(job.samples, Ordering::Relaxed);
                }
                let status = status.map_or("connection".to_string(), |s| s.to_string());
                note_error(shared, format!("write {status}: {}", message.trim()));
            }
        }
    }
}

/// Latency of all queries together and of each class with any queries.
fn latency_by_class(queries: &[QueryStats]) -> (Histogram, Vec<QueryClassReport>) {
    let mut all = Histogram::default();
    let mut classes = Vec::new();
    for kind in QueryKind::ALL {
        let (mut latency, mut errors) = (Histogram::default(), 0);
        for s in queries.iter().filter(|s| s.kind == kind) {
            latency.merge(&s.latency);
            errors += s.errors;
        }
        all.merge(&latency);
        if latency.count() + errors > 0 {
            classes.push(QueryClassReport {
                class: kind.class().to_string(),
                errors,
                latency_ms: LatencyReport::of(&latency),
            });
        }
    }
    (all, classes)
}

/// Runs the rules and dashboards every query interval, each round as one
/// tenant's (`qcs`: a client per tenant), in turn.
fn query_loop(qcs: &[QueryClient], cfg: &RunConfig, realtime: bool, shared: &Shared) {
    let mut next = Instant::now();
    let mut round = 0usize;
    // At least one whole round runs, even when a fast backfill finishes first,
    // so every rule gets a latency figure.
    let mut completed = 0u64;
    let done = |completed: u64| completed > 0 && shared.stop.load(Ordering::Relaxed);
    while !done(completed) {
        if Instant::now() < next {
            std::thread::sleep(Duration::from_millis(50));
            continue;
        }
        next += cfg.query_interval;
        let qc = &qcs[round % qcs.len()];
        round += 1;
        // Real time evaluates at "now"; a backfill at the newest data written.
        let at_ms = if realtime {
            now_ms()
        } else {
            shared.data_time.load(Ordering::Relaxed)
        };
        let n = shared.queries.lock().map(|q| q.len()).unwrap_or(0);
        for i in 0..n {
            if done(completed) {
                return;
            }
            let Some((kind, expr)) = shared
                .queries
                .lock()
                .ok()
                .and_then(|q| q.get(i).map(|s| (s.kind, s.expr.clone())))
            else {
                continue;
            };
            let t0 = Instant::now();
            let answer = match kind {
                QueryKind::Instant => qc.instant(&expr, at_ms),
                QueryKind::Range => {
                    let window = cfg.range_window.unwrap_or(Duration::from_secs(3600)).as_millis() as i64;
                    let step = (window / 240).max(cfg.interval.as_millis() as i64);
                    // On the step's grid, as Grafana aligns a panel's range.
                    let end = at_ms.div_euclid(step) * step;
                    qc.range(&expr, end - window, end, step)
                }
            };
            let took = t0.elapsed();
            let result = answer.and_then(|a| a.series());
            if let Ok(mut q) = shared.queries.lock()
                && let Some(s) = q.get_mut(i)
            {
                match result {
                    Ok(answered) => {
                        s.latency.record(took);
                        if let Some(stage) = shared.stages.now() {
                            stage.record_query(took);
                        }
                        s.last_series = answered.series;
                        s.partial += u64::from(answered.partial);
                    }
                    Err(e) => {
                        s.errors += 1;
                        s.last_error = Some(e.to_string());
                    }
                }
            }
        }
        completed += 1;
        shared.query_rounds.fetch_add(1, Ordering::Relaxed);
        let stage = shared.stages.now();
        if let Some(stage) = stage {
            stage.query_rounds.fetch_add(1, Ordering::Relaxed);
        }
        if Instant::now() > next {
            shared.query_rounds_late.fetch_add(1, Ordering::Relaxed);
            if let Some(stage) = stage {
                stage.query_rounds_late.fetch_add(1, Ordering::Relaxed);
            }
            next = Instant::now();
        }
    }
}

/// Once a second: a progress line and a timeline point (until `stop`).
fn sample_loop(cfg: &RunConfig, shared: &Shared, tck: u64, started: Instant) -> Vec<TimelinePoint> {
    let mut points = Vec::new();
    let mut last_delivered = 0;
    let mut last_t = 0.0;
    let mut last_cpu = cfg.processes.cpu_seconds(tck);
    let mut tick = 0u64;
    loop {
        let stop = shared.stop.load(Ordering::Relaxed);
        if !stop {
            std::thread::sleep(Duration::from_millis(250));
            tick += 1;
            if !tick.is_multiple_of(4) {
                continue;
            }
        }
        let t = started.elapsed().as_secs_f64();
        let delivered = shared.delivered.load(Ordering::Relaxed);
        let rate = (delivered - last_delivered) as f64 / (t - last_t).max(1e-9);
        let cpu = cfg.processes.cpu_seconds(tck);
        let cpu_percent = cpu.zip(last_cpu).map(|(a, b)| 100.0 * (a - b) / (t - last_t).max(1e-9));
        let rss = cfg.processes.rss_bytes();
        // du walks the directory: every 5 s is plenty.
        let disk = Some(&cfg.data_dirs)
            .filter(|_| points.len() % 5 == 0 || stop)
            .and_then(|d| procfs::du_bytes_of(d));
        let (q50, q99) = shared
            .queries
            .lock()
            .map(|q| {
                let mut h = Histogram::default();
                for s in q.iter() {
                    h.merge(&s.latency);
                }
                (h.quantile_ms(0.5), h.quantile_ms(0.99))
            })
            .unwrap_or_default();
        let qerr: u64 = shared
            .queries
            .lock()
            .map(|q| q.iter().map(|s| s.errors).sum())
            .unwrap_or(0);
        let point = TimelinePoint {
            t_s: t,
            samples_delivered: delivered,
            samples_per_second: rate,
            queue: shared.queued.load(Ordering::Relaxed).max(0) as u64,
            write_errors: shared.requests_failed.load(Ordering::Relaxed),
            query_errors: qerr,
            query_p99_ms: q99,
            target_cpu_percent: cpu_percent,
            target_rss_bytes: rss,
            disk_bytes: disk,
        };
        if cfg.progress {
            let mut line = format!(
                "\r[{:>6.1}s] sent {:>11} samples  {:>9.0}/s  errors {}  retries {}  queue {:>3}  query p50 {:.1} ms p99 {:.1} ms (errors {})",
                t,
                delivered,
                rate,
                point.write_errors,
                shared.retries.load(Ordering::Relaxed),
                point.queue,
                q50,
                q99,
                qerr
            );
            if let Some(c) = cpu_percent {
                line.push_str(&format!("  target cpu {c:.0}%"));
            }
            if let Some(r) = rss {
                line.push_str(&format!(" rss {} MB", r >> 20));
            }
            eprint!("{line}\x1b[K");
        }
        points.push(point);
        last_delivered = delivered;
        last_t = t;
        last_cpu = cpu;
        if stop {
            if cfg.progress {
                eprintln!();
            }
            return points;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tenants_are_named_by_header_only_when_there_are_several() {
        let one = RunConfig::default();
        assert!(one.tenant_access(0).headers.is_empty());
        let several = RunConfig {
            tenants: 3,
            ..RunConfig::default()
        };
        assert_eq!(
            several.tenant_access(2).headers,
            [("X-Scope-OrgID".to_string(), "bench-2".to_string())]
        );
    }
}
