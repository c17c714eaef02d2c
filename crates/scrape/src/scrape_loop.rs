//! One target's scrape loop: Prometheus' start offset, ticks aligned to it,
//! the HTTP request, one storage commit per scrape (samples, staleness
//! markers, report series), and the staleness markers written after the loop
//! stops for good.

use std::io::Read;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use cairn_model::{Labels, stale_nan};
use cairn_storage::Appendable;
use parking_lot::Mutex;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::append::{AppendCounts, append_empty, append_report, append_scraped, report_labels};
use crate::cache::ScrapeCache;
use crate::client::{ScrapeClient, credential_headers};
use crate::exposition::{parse_body, parse_options};
use crate::http1::{MAX_ANNOUNCED_BYTES, Response, Session};
use crate::metrics::{ScrapeMetrics, inc};
use crate::settings::JobSettings;
use crate::target::{Health, ScrapeStatus, Target};

/// A scrape time within this much of the aligned tick is moved onto it
/// (at most 1% of the interval), so that timestamps compress well.
const TIMESTAMP_TOLERANCE: Duration = Duration::from_millis(2);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Signal {
    Run,
    /// The target is gone: stop, then write staleness markers.
    Stop,
    /// A reload replaces the loop and takes its cache: no staleness markers.
    Handover,
    /// The process stops: no staleness markers, in-flight scrapes abandoned.
    Shutdown,
}

/// What a loop needs besides its target.
pub(crate) struct LoopContext {
    pub job: Arc<JobSettings>,
    pub client: ScrapeClient,
    pub storage: Arc<dyn Appendable>,
    pub offset_seed: u64,
    /// Start at once rather than at the target's offset (tests).
    pub skip_offset: bool,
    /// The newest scrape time (ms) of any loop of this target, shared with
    /// the loop that replaces this one: its end-of-run markers are skipped
    /// when a newer loop has already scraped after them.
    pub last_scrape_ms: Arc<AtomicI64>,
    pub forced_error: Arc<Mutex<Option<String>>>,
    /// Becomes true when the process stops (no staleness markers then).
    pub shutdown: watch::Receiver<bool>,
    pub metrics: Arc<ScrapeMetrics>,
    /// Set for a loop whose target another process may have scraped until
    /// now: its last scrape becomes this loop's previous one.
    pub inherit_from: Option<Arc<dyn cairn_storage::Queryable>>,
}

pub(crate) struct LoopHandle {
    signal: watch::Sender<Signal>,
    pub forced_error: Arc<Mutex<Option<String>>>,
    task: JoinHandle<Option<ScrapeCache>>,
}

impl LoopHandle {
    pub fn start(target: Arc<Target>, ctx: LoopContext, cache: ScrapeCache) -> Self {
        let (signal, rx) = watch::channel(Signal::Run);
        let forced_error = ctx.forced_error.clone();
        *target.metadata.lock() = cache.metadata.clone();
        let task = tokio::spawn(run(target, ctx, cache, rx));
        Self {
            signal,
            forced_error,
            task,
        }
    }

    /// Stops the loop; staleness markers follow in the background.
    pub fn stop(self) {
        let _ = self.signal.send(Signal::Stop);
    }

    pub fn shutdown(self) {
        let _ = self.signal.send(Signal::Shutdown);
        self.task.abort();
    }

    /// Asks the loop to stop after its in-flight scrape and keep its cache.
    pub fn begin_handover(&self) {
        let _ = self.signal.send(Signal::Handover);
    }

    /// Waits for the loop that [`LoopHandle::begin_handover`] stopped and takes its cache.
    pub async fn hand_over(self) -> Option<ScrapeCache> {
        let _ = self.signal.send(Signal::Handover);
        self.task.await.ok().flatten()
    }
}

struct LoopState {
    cache: ScrapeCache,
    parse_options: cairn_protocols::exposition::ParseOptions,
    report_labels: Vec<Labels>,
    target_labels: Labels,
}

async fn run(
    target: Arc<Target>,
    ctx: LoopContext,
    cache: ScrapeCache,
    mut signal: watch::Receiver<Signal>,
) -> Option<ScrapeCache> {
    let (interval, timeout) = target.interval_and_timeout(&ctx.job);
    let target_labels = target.labels();
    let mut state = Some(LoopState {
        parse_options: parse_options(&target, &ctx.job),
        report_labels: report_labels(&target_labels, ctx.job.extra_scrape_metrics),
        target_labels,
        cache,
    });
    // Before the offset's wait, so the first scrape keeps its place; given
    // up after half an interval, so it is at most one slot late.
    if let (Some(queryable), Some(state)) = (ctx.inherit_from.clone(), state.as_mut()) {
        let (target_labels, report) = (state.target_labels.clone(), state.report_labels.clone());
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default()
            .as_millis() as i64;
        let read = tokio::task::spawn_blocking(move || {
            crate::inherit::last_scraped(queryable.as_ref(), &target_labels, &report, interval, now)
        });
        match tokio::time::timeout(interval / 2, read).await {
            Ok(Ok(Ok(series))) => state.cache.inherit(series),
            Ok(Ok(Err(e))) => tracing::warn!(
                target = %target.url(), err = %e,
                "reading the previous owner's last scrape failed: no staleness markers for what it wrote"
            ),
            Ok(Err(e)) => tracing::warn!(err = %e, "reading the previous owner's last scrape failed"),
            Err(_) => tracing::warn!(
                target = %target.url(),
                "reading the previous owner's last scrape took too long: no staleness markers for what it wrote"
            ),
        }
    }
    let offset = if ctx.skip_offset {
        Duration::ZERO
    } else {
        target.offset(interval, ctx.offset_seed, SystemTime::now())
    };
    if !offset.is_zero() {
        let interrupted = tokio::select! {
            _ = tokio::time::sleep(offset) => false,
            _ = signal.changed() => true,
        };
        if interrupted {
            let how = *signal.borrow();
            return finish(how, &target, &ctx, state, None, interval, signal).await;
        }
    }
    let mut ticker = tokio::time::interval(interval);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    ticker.tick().await;
    let mut aligned = SystemTime::now();
    let tolerance = (interval / 100).min(TIMESTAMP_TOLERANCE);
    let mut last_scrape: Option<SystemTime> = None;
    let interval_length = ctx.metrics.interval_length(interval);
    let mut last_start: Option<Instant> = None;
    let mut session = Session::default();
    loop {
        if *signal.borrow() != Signal::Run {
            break;
        }
        let mut scrape_time = SystemTime::now();
        while scrape_time.duration_since(aligned).unwrap_or_default() >= interval {
            aligned += interval;
        }
        if scrape_time.duration_since(aligned).unwrap_or_default() <= tolerance {
            scrape_time = aligned;
        }
        let started = Instant::now();
        if let Some(last) = last_start {
            interval_length.observe(started.duration_since(last).as_secs_f64());
        }
        last_start = Some(started);
        // A forced error (target_limit exceeded) fails the scrape without a request.
        let forced = ctx.forced_error.lock().clone();
        let fetched = match &forced {
            Some(e) => Err(e.clone()),
            None => tokio::select! {
                // Boxed: the request's state exists only while it is made, not in every idle loop.
                f = Box::pin(fetch(&target, &ctx, timeout, &mut session)) => f,
                _ = wait_for(&mut signal, Signal::Shutdown) => return None,
            },
        };
        let mut s = state.take()?;
        if !ctx.storage.commit_may_wait() {
            // Parsing and a commit that never waits (agent mode's): done here
            // rather than paying two thread wakeups to hand them off.
            process(
                &mut s,
                &target,
                &ctx.job,
                &*ctx.storage,
                &ctx.metrics,
                fetched,
                forced,
                scrape_time,
                started,
                timeout,
            );
        } else {
            let target = target.clone();
            let (job, storage, metrics) = (ctx.job.clone(), ctx.storage.clone(), ctx.metrics.clone());
            let processed = tokio::task::spawn_blocking(move || {
                process(
                    &mut s,
                    &target,
                    &job,
                    &*storage,
                    &metrics,
                    fetched,
                    forced,
                    scrape_time,
                    started,
                    timeout,
                );
                s
            })
            .await;
            let Ok(processed) = processed else { return None };
            s = processed;
        }
        state = Some(s);
        ctx.last_scrape_ms.fetch_max(millis(scrape_time), Ordering::Relaxed);
        last_scrape = Some(scrape_time);
        // A stop that came during the scrape (whose signal the wait above saw).
        if *signal.borrow() != Signal::Run {
            break;
        }
        let stop = tokio::select! {
            _ = ticker.tick() => false,
            changed = signal.changed() => changed.is_err() || *signal.borrow() != Signal::Run,
        };
        if stop {
            break;
        }
    }
    let how = *signal.borrow();
    finish(how, &target, &ctx, state, last_scrape, interval, signal).await
}

async fn wait_for(signal: &mut watch::Receiver<Signal>, wanted: Signal) {
    loop {
        if *signal.borrow_and_update() == wanted {
            return;
        }
        if signal.changed().await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}

/// After the loop: hand the cache over, or wait two intervals and a tenth
/// (the target may come back and scrape again meanwhile) and mark everything
/// it last stored stale at the time of the first missed scrape.
async fn finish(
    how: Signal,
    target: &Arc<Target>,
    ctx: &LoopContext,
    state: Option<LoopState>,
    last_scrape: Option<SystemTime>,
    interval: Duration,
    mut signal: watch::Receiver<Signal>,
) -> Option<ScrapeCache> {
    let state = state?;
    match how {
        Signal::Handover => return Some(state.cache),
        Signal::Shutdown | Signal::Run => return None,
        Signal::Stop => {}
    }
    last_scrape?;
    let wait = async {
        tokio::time::sleep(interval).await;
        let stale_time = SystemTime::now();
        tokio::time::sleep(interval + interval / 10).await;
        stale_time
    };
    let mut shutdown = ctx.shutdown.clone();
    let stale_time = tokio::select! {
        t = wait => t,
        _ = wait_for(&mut signal, Signal::Shutdown) => return None,
        _ = shutdown.wait_for(|s| *s) => return None,
    };
    let stale_ms = millis(stale_time);
    if ctx.last_scrape_ms.load(Ordering::Relaxed) >= stale_ms {
        return None;
    }
    let storage = ctx.storage.clone();
    let target = target.clone();
    let _ = tokio::task::spawn_blocking(move || {
        let mut state = state;
        let mut app = storage.appender();
        let result = append_empty(&mut state.cache, &mut *app, stale_ms)
            .and_then(|()| append_report(&mut *app, &state.report_labels, stale_ms, &[stale_nan(); 8]));
        match result {
            Ok(()) => {
                if let Err(e) = app.commit() {
                    tracing::warn!(target = %target.url(), err = %e, "Stale commit failed");
                }
            }
            Err(e) => {
                app.rollback();
                tracing::warn!(target = %target.url(), err = %e, "Stale append failed");
            }
        }
    })
    .await;
    None
}

fn millis(t: SystemTime) -> i64 {
    t.duration_since(UNIX_EPOCH).map(|d| d.as_millis() as i64).unwrap_or(0)
}

/// A fetched body and its content type, or why the scrape failed.
type Fetched = Result<(Vec<u8>, String), String>;

async fn fetch(target: &Target, ctx: &LoopContext, timeout: Duration, session: &mut Session) -> Fetched {
    let job = &ctx.job;
    let headers = || {
        vec![
            ("Accept".to_string(), job.accept.clone()),
            (
                "Accept-Encoding".to_string(),
                if job.enable_compression { "gzip" } else { "identity" }.to_string(),
            ),
            ("User-Agent".to_string(), crate::USER_AGENT.to_string()),
            (
                "X-Prometheus-Scrape-Timeout-Seconds".to_string(),
                crate::seconds_text(timeout),
            ),
        ]
    };
    // Read at every scrape: a credentials file may change.
    let credentials = credential_headers(&job.http)?;
    let limit = if job.body_size_limit == 0 {
        u64::MAX
    } else {
        job.body_size_limit
    };
    let response = match &ctx.client {
        ScrapeClient::Direct(client) => {
            let get = client.get(session, target.url(), headers, credentials, limit);
            match tokio::time::timeout(timeout, get).await {
                Ok(response) => response?,
                Err(_) => {
                    // A request cut off midway leaves the connection out of step.
                    session.conn = None;
                    return Err(format!("Get {:?}: context deadline exceeded", target.url()));
                }
            }
        }
        ScrapeClient::Pooled(client) => {
            let mut all = headers();
            all.extend(credentials);
            fetch_pooled(client, target.url(), &all, timeout, limit).await?
        }
    };
    if response.status != 200 {
        let status = reqwest::StatusCode::from_u16(response.status).unwrap_or(reqwest::StatusCode::BAD_GATEWAY);
        return Err(format!("server returned HTTP status {}", crate::status_text(status)));
    }
    if !response.gzip {
        return Ok((response.body, response.content_type));
    }
    let mut body = Vec::new();
    flate2::read::GzDecoder::new(response.body.as_slice())
        .take(limit)
        .read_to_end(&mut body)
        .map_err(|e| e.to_string())?;
    if body.len() as u64 >= limit {
        return Err(BODY_SIZE_LIMIT.into());
    }
    Ok((body, response.content_type))
}

/// One request through reqwest (jobs with a proxy).
async fn fetch_pooled(
    client: &reqwest::Client,
    url: &str,
    headers: &[(String, String)],
    timeout: Duration,
    limit: u64,
) -> Result<Response, String> {
    let mut req = client.get(url).timeout(timeout);
    for (name, value) in headers {
        req = req.header(name.as_str(), value.as_str());
    }
    let mut resp = req.send().await.map_err(|e| describe(&e, url))?;
    let status = resp.status().as_u16();
    let gzip = resp
        .headers()
        .get("content-encoding")
        .is_some_and(|v| v.as_bytes() == b"gzip");
    let content_type = resp
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    // One allocation when the target says how long the body is.
    let announced = resp
        .content_length()
        .unwrap_or(0)
        .min(limit)
        .min(MAX_ANNOUNCED_BYTES as u64);
    let mut body = Vec::with_capacity(announced as usize);
    while let Some(chunk) = resp.chunk().await.map_err(|e| describe(&e, url))? {
        body.extend_from_slice(&chunk);
        if !gzip && body.len() as u64 >= limit {
            return Err(BODY_SIZE_LIMIT.into());
        }
    }
    Ok(Response {
        status,
        content_type,
        gzip,
        body,
    })
}

pub(crate) const BODY_SIZE_LIMIT: &str = "body size limit exceeded";

/// A request error worded like Go's client errors: `Get "<url>": <why>`.
fn describe(e: &reqwest::Error, url: &str) -> String {
    if e.is_timeout() {
        return format!("Get {url:?}: context deadline exceeded");
    }
    let mut why = String::new();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        if !why.is_empty() {
            why.push_str(": ");
        }
        why.push_str(&s.to_string());
        source = s.source();
    }
    if why.is_empty() {
        why = e.to_string();
    }
    format!("Get {url:?}: {why}")
}

/// Appends one scrape's result, reports it and commits: one commit per scrape.
#[allow(clippy::too_many_arguments)]
fn process(
    state: &mut LoopState,
    target: &Target,
    job: &JobSettings,
    storage: &dyn Appendable,
    metrics: &ScrapeMetrics,
    fetched: Fetched,
    forced_error: Option<String>,
    scrape_time: SystemTime,
    started: Instant,
    timeout: Duration,
) {
    let t = millis(scrape_time);
    let now_ms = millis(SystemTime::now());
    // The uncompressed body size; -1 when it was over body_size_limit.
    let body_bytes = match &fetched {
        Ok((body, _)) => body.len() as f64,
        Err(e) if e == BODY_SIZE_LIMIT => {
            inc(&metrics.exceeded_body_size_limit);
            -1.0
        }
        Err(_) => 0.0,
    };
    let mut app = storage.appender();
    let mut counts = AppendCounts::default();
    let mut scrape_error: Option<String> = None;
    let mut append_error: Option<String> = None;
    match (forced_error, fetched) {
        (Some(forced), _) => {
            scrape_error = Some(forced);
            append_error = append_empty(&mut state.cache, &mut *app, t).err();
        }
        (None, Err(e)) => {
            scrape_error = Some(e);
            append_error = append_empty(&mut state.cache, &mut *app, t).err();
        }
        (None, Ok((body, _))) if body.is_empty() => {
            append_error = append_empty(&mut state.cache, &mut *app, t).err();
        }
        (None, Ok((body, content_type))) => {
            let parsed = parse_body(
                &body,
                &content_type,
                job,
                &state.parse_options,
                &state.cache,
                &state.target_labels,
            );
            let result = match parsed {
                Ok(mut scraped) => {
                    let (c, result) = append_scraped(
                        &mut state.cache,
                        &mut *app,
                        &mut scraped,
                        &state.target_labels,
                        job,
                        t,
                        now_ms,
                    );
                    counts = c;
                    result
                }
                Err(e) => Err(e),
            };
            match result {
                Ok(()) => {}
                Err(e) => {
                    app.rollback();
                    app = storage.appender();
                    if let Err(e2) = append_empty(&mut state.cache, &mut *app, t) {
                        tracing::warn!(target = %target.url(), err = %e2, "Append failed");
                    }
                    scrape_error = Some(e);
                }
            }
        }
    }
    if let Some(e) = append_error {
        tracing::warn!(target = %target.url(), err = %e, "Append failed");
        app.rollback();
        app = storage.appender();
    }
    let duration = started.elapsed();
    let up = if scrape_error.is_none() { 1.0 } else { 0.0 };
    *target.status.lock() = ScrapeStatus {
        health: if scrape_error.is_none() {
            Health::Up
        } else {
            Health::Down
        },
        last_error: scrape_error.clone(),
        last_scrape: scrape_time,
        last_scrape_duration: duration,
    };
    let values = [
        up,
        duration.as_secs_f64(),
        counts.total as f64,
        counts.added as f64,
        counts.series_added as f64,
        timeout.as_secs_f64(),
        job.sample_limit as f64,
        body_bytes,
    ];
    if let Err(e) = append_report(&mut *app, &state.report_labels, t, &values) {
        tracing::warn!(target = %target.url(), err = %e, "Appending scrape report failed");
        app.rollback();
        return;
    }
    let report = app.commit();
    count_append(metrics, &counts, report.as_ref().ok());
    if std::mem::take(&mut state.cache.forced_flushes) > 0 {
        inc(&metrics.cache_flush_forced);
    }
    if let Err(e) = report {
        tracing::error!(target = %target.url(), err = %e, "Scrape commit failed");
    }
}

/// What one scrape's append and commit add to the pool-wide counters.
fn count_append(metrics: &ScrapeMetrics, counts: &AppendCounts, report: Option<&cairn_storage::CommitReport>) {
    let add = |c: &std::sync::atomic::AtomicU64, n: u64| {
        if n > 0 {
            c.fetch_add(n, Ordering::Relaxed);
        }
    };
    add(&metrics.exceeded_sample_limit, u64::from(counts.sample_limit_hit));
    add(&metrics.exceeded_bucket_limit, u64::from(counts.bucket_limit_hit));
    add(&metrics.exceeded_label_limits, u64::from(counts.label_limit_hit));
    add(&metrics.sample_duplicate, counts.duplicates as u64);
    // Storage refuses samples outside the time it accepts (retention, too
    // far ahead), Prometheus' out-of-bounds; it takes any order.
    let refused = report.map_or(0, |r| {
        r.samples_rejected
            .iter()
            .filter(|(reason, _)| {
                matches!(
                    reason,
                    cairn_storage::RejectReason::OutOfRetention | cairn_storage::RejectReason::TooFarInFuture
                )
            })
            .map(|(_, n)| *n)
            .sum()
    });
    add(&metrics.sample_out_of_bounds, counts.out_of_bounds as u64 + refused);
}
