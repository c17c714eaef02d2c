//! One receiver's queue. A reader thread follows the WAL from the queue's
//! positions, resolves each sample's series and hands it to the shard its
//! series hashes to; each shard (a task) batches, sends and retries, so a
//! series' samples arrive in order. Shards change in number with the
//! backlog: the reader drains them all to one WAL position first. Forward
//! batches (agent mode's scrapes) travel as the snappy blocks they were
//! written as, whenever they can (forward.rs).
//!
//! After a crash a queue starts again where each shard's delivery stood,
//! and a shard's first batch is the batch that was in flight, cut where it
//! was cut: a receiver that took it before the crash sees the same
//! samples again (duplicates it ignores, or an out-of-order refusal of
//! that batch alone), never a mix that would make it refuse new samples.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use cairn_model::{Histogram, HistogramSample, Sample};
use cairn_protocols::SeriesSamples;
use cairn_protocols::remote_write::{ContentEncoding, SnappyBody, encode_series, encode_write_request_v2};
use cairn_tsdb::{TailEvent, Tsdb, WalPosition, WalTail};
use parking_lot::Mutex;
use tokio::runtime::Handle;
use tokio::sync::{mpsc, watch};

use crate::metadata::{MetadataLoop, MetadataSource};
use crate::metrics::{QueueMetrics, add, raise};
use crate::positions::{Positions, PositionsFile, ShardPosition};
use crate::send::{Backoff, Outcome, Protocol, Sender};
use crate::series::{Resolved, Series, SeriesCache};

mod forward;

use forward::{ForwardPart, TakeForward};

/// A queue's settings, from its `remote_write` entry.
#[derive(Debug, Clone)]
pub struct QueueSettings {
    /// The queue's name: its `name`, or one derived from its URL.
    pub name: String,
    pub min_shards: usize,
    pub max_shards: usize,
    /// Samples a shard holds before the reader waits for it.
    pub capacity: usize,
    pub max_samples_per_send: usize,
    pub batch_send_deadline: Duration,
    pub min_backoff: Duration,
    pub max_backoff: Duration,
    /// Samples older than this when sent are dropped (zero: none are).
    pub sample_age_limit: Duration,
    /// How often metadata is sent, if it is (remote write 1.0 only).
    pub metadata_interval: Option<Duration>,
    pub metadata_max_per_send: usize,
}

/// How often the reader looks at the shards' number.
const RESHARD_INTERVAL: Duration = Duration::from_secs(10);
/// How often positions are written when only their delivery moved, and
/// idle shards are told how far the WAL has been read.
const MARK_INTERVAL: Duration = Duration::from_secs(1);

enum Value {
    Float(f64),
    Histogram(Arc<Histogram>),
}

struct Item {
    series: Series,
    t: i64,
    value: Value,
    /// The record it is in, and how many of its shard's samples precede it there.
    pos: ShardPosition,
}

/// A shard's samples of one record (or none), and the WAL position after it.
struct Chunk {
    items: Vec<Item>,
    forward: Option<ForwardPart>,
    end: WalPosition,
}

impl Chunk {
    fn mark(end: WalPosition) -> Self {
        Self {
            items: Vec::new(),
            forward: None,
            end,
        }
    }
}

/// Positions and their file, shared by the reader and the shards.
struct Progress {
    positions: Positions,
    file: PositionsFile,
    dirty: bool,
}

struct Shared {
    settings: QueueSettings,
    sender: Arc<Sender>,
    metrics: Arc<QueueMetrics>,
    progress: Mutex<Progress>,
    /// When a send last failed, for resharding, which waits for health.
    last_failure: Mutex<Option<Instant>>,
    /// Samples delivered and the nanoseconds their sends took, since the last look.
    sent_samples: AtomicU64,
    send_nanos: AtomicU64,
    stop: watch::Receiver<bool>,
}

impl Shared {
    /// Records the end of the batch about to be sent, durably enough for
    /// kill -9, before it is sent.
    fn begin(&self, shard: usize, end: ShardPosition) {
        let mut p = self.progress.lock();
        let Progress { positions, file, dirty } = &mut *p;
        if let Some(s) = positions.shards.get_mut(shard) {
            s.in_flight = Some(end);
        }
        match file.write(positions) {
            Ok(()) => *dirty = false,
            Err(e) => tracing::error!(queue = %self.settings.name, err = %e, "cannot write remote write positions"),
        }
    }

    /// A shard's samples before `end` are delivered or given up.
    fn finish(&self, shard: usize, end: ShardPosition) {
        let mut p = self.progress.lock();
        if let Some(s) = p.positions.shards.get_mut(shard) {
            s.done = s.done.max(end);
            s.in_flight = None;
        }
        p.dirty = true;
    }

    fn persist_if_dirty(&self) -> WalPosition {
        let mut p = self.progress.lock();
        let Progress { positions, file, dirty } = &mut *p;
        if *dirty {
            match file.write(positions) {
                Ok(()) => *dirty = false,
                Err(e) => tracing::error!(queue = %self.settings.name, err = %e, "cannot write remote write positions"),
            }
        }
        positions.oldest()
    }
}

/// What a queue is made of.
pub struct QueueParts {
    pub settings: QueueSettings,
    pub sender: Sender,
    pub cache: SeriesCache,
    pub metrics: Arc<QueueMetrics>,
    /// Where metadata comes from, if the queue sends it.
    pub metadata: Option<MetadataSource>,
}

/// A running queue. [`Queue::stop`] ends it; its positions stay for the next start.
pub struct Queue {
    db: Arc<Tsdb>,
    stop_tx: watch::Sender<bool>,
    stopping: Arc<AtomicBool>,
    reader: Option<JoinHandle<()>>,
    shared: Arc<Shared>,
}

impl Queue {
    /// Starts following the WAL of `db` where the positions in `dir` say,
    /// or at its end for a queue new there.
    pub fn start(db: Arc<Tsdb>, dir: &std::path::Path, parts: QueueParts, rt: Handle) -> Result<Self, String> {
        let QueueParts {
            settings,
            sender,
            cache,
            metrics,
            metadata,
        } = parts;
        let (mut file, saved) = PositionsFile::open(dir)
            .map_err(|e| format!("opening remote write positions in {}: {e}", dir.display()))?;
        let positions = match saved {
            Some(p) if !p.shards.is_empty() => p,
            _ => {
                // Held before the position is taken, so no flush can delete it in between.
                db.hold_wal(&settings.name, db.wal_end().segment)
                    .map_err(|e| e.to_string())?;
                Positions::at(db.wal_end(), settings.min_shards.max(1))
            }
        };
        db.hold_wal(&settings.name, positions.oldest().segment)
            .map_err(|e| e.to_string())?;
        file.write(&positions)
            .map_err(|e| format!("writing remote write positions in {}: {e}", dir.display()))?;
        let (stop_tx, stop) = watch::channel(false);
        let sender = Arc::new(sender);
        if let (Some(source), Some(interval), Protocol::V1) = (metadata, settings.metadata_interval, sender.protocol) {
            let task = MetadataLoop {
                source,
                sender: sender.clone(),
                interval,
                max_per_send: settings.metadata_max_per_send,
                backoff: Backoff {
                    min: settings.min_backoff,
                    max: settings.max_backoff,
                },
                metrics: metrics.clone(),
                queue: settings.name.clone(),
            };
            rt.spawn(task.run(stop.clone()));
        }
        let shared = Arc::new(Shared {
            settings,
            sender,
            metrics,
            progress: Mutex::new(Progress {
                positions,
                file,
                dirty: false,
            }),
            last_failure: Mutex::new(None),
            sent_samples: AtomicU64::new(0),
            send_nanos: AtomicU64::new(0),
            stop,
        });
        let stopping = Arc::new(AtomicBool::new(false));
        let reader = {
            let (db, shared, stopping) = (db.clone(), shared.clone(), stopping.clone());
            std::thread::Builder::new()
                .name("cairn-remote-write".into())
                .spawn(move || Reader::new(db, shared, cache, rt, stopping).run())
                .map_err(|e| format!("starting the remote write reader: {e}"))?
        };
        Ok(Self {
            db,
            stop_tx,
            stopping,
            reader: Some(reader),
            shared,
        })
    }

    /// Stops reading and sending, and waits for the reader thread to end;
    /// a batch in flight is sent again by the next start.
    pub fn stop(mut self) {
        self.stopping.store(true, Ordering::Release);
        self.db.wake_wal_readers();
        let _ = self.stop_tx.send(true);
        if let Some(reader) = self.reader.take() {
            reader.thread().unpark();
            let _ = reader.join();
        }
        self.shared.persist_if_dirty();
    }
}

struct ShardHandle {
    tx: mpsc::Sender<Chunk>,
    task: tokio::task::JoinHandle<()>,
    /// Whether a chunk went to it since the last marks.
    fed: bool,
}

struct Reader {
    db: Arc<Tsdb>,
    shared: Arc<Shared>,
    cache: SeriesCache,
    rt: Handle,
    stopping: Arc<AtomicBool>,
    shards: Vec<ShardHandle>,
    /// Samples read since the last reshard check.
    read_samples: u64,
    in_rate: Option<f64>,
    held_segment: u64,
    /// Where records are decompressed, reused.
    scratch: Vec<u8>,
    /// How long records are gathered once the end of the WAL was reached.
    gather: Duration,
}

impl Reader {
    fn new(db: Arc<Tsdb>, shared: Arc<Shared>, cache: SeriesCache, rt: Handle, stopping: Arc<AtomicBool>) -> Self {
        let gather = (shared.settings.batch_send_deadline / 10).clamp(Duration::from_millis(5), MARK_INTERVAL / 2);
        Self {
            db,
            shared,
            cache,
            rt,
            stopping,
            shards: Vec::new(),
            read_samples: 0,
            in_rate: None,
            held_segment: 0,
            scratch: Vec::new(),
            gather,
        }
    }

    fn run(mut self) {
        let start = self.shared.progress.lock().positions.clone();
        let mut tail = WalTail::new(start.oldest());
        self.spawn_shards(&start);
        let mut payload = Vec::new();
        let (mut last_marks, mut last_reshard) = (Instant::now(), Instant::now());
        let mut marked = None;
        while !self.stopping.load(Ordering::Acquire) {
            // Taken before reading, so a record appended after the read
            // found the end does not wait for the next one.
            let appends = self.db.wal_appends();
            let event = match self.db.read_wal(&mut tail, &mut payload) {
                Ok(event) => event,
                Err(e) => {
                    tracing::error!(queue = %self.shared.settings.name, err = %e, "cannot read the WAL for remote write");
                    std::thread::sleep(Duration::from_secs(1));
                    continue;
                }
            };
            match event {
                TailEvent::Record { at } => {
                    if !self.dispatch(at, tail.position(), &payload) {
                        break;
                    }
                }
                TailEvent::End => {
                    if marked != Some(tail.position()) {
                        self.mark_all(tail.position());
                        marked = Some(tail.position());
                        last_marks = Instant::now();
                    }
                    self.keep_positions();
                    self.db.wait_for_wal(appends, MARK_INTERVAL);
                    // Records land a commit at a time: gathering them for a
                    // moment wakes this thread and the shards once for many,
                    // a delay well inside the batch deadline. Stopping unparks.
                    if self.db.wal_appends() != appends {
                        std::thread::park_timeout(self.gather);
                    }
                }
                TailEvent::Lost { from, to, reason } => {
                    add(&self.shared.metrics.wal_gaps, 1);
                    tracing::error!(
                        queue = %self.shared.settings.name,
                        from = ?from,
                        to = ?to,
                        reason,
                        "WAL records lost before remote write read them: their samples are not forwarded"
                    );
                }
            }
            if last_marks.elapsed() >= MARK_INTERVAL {
                self.mark_unfed(tail.position());
                last_marks = Instant::now();
                self.keep_positions();
            }
            if last_reshard.elapsed() >= RESHARD_INTERVAL {
                let elapsed = last_reshard.elapsed();
                last_reshard = Instant::now();
                let desired = self.desired_shards(elapsed);
                if desired != self.shards.len() && !self.reshard(desired, tail.position()) {
                    break;
                }
            }
        }
        let _ = self.stop_shards();
    }

    /// Hands one record's samples to their shards; false when stopping.
    fn dispatch(&mut self, at: WalPosition, end: WalPosition, payload: &[u8]) -> bool {
        match Tsdb::forward_batch(payload) {
            Ok(Some(batch)) => return self.dispatch_forward(at, end, batch),
            Ok(None) => {}
            Err(reason) => return self.lost(at, &reason),
        }
        let record = match Tsdb::decode_wal_record(payload, &mut self.scratch) {
            Ok(r) => r,
            Err(reason) => return self.lost(at, &reason),
        };
        let n = self.shards.len();
        let mut per_shard: Vec<Vec<Item>> = (0..n).map(|_| Vec::new()).collect();
        let (mut dropped, mut dropped_histograms, mut highest) = (0, 0, i64::MIN);
        for day in &record {
            // A labelled record's series, each resolved once for its rows.
            let labelled: Vec<Resolved> = self.cache.resolve_labelled(&day.labelled);
            let floats = day.samples.iter().map(|&(id, t, v)| (id, t, Value::Float(v)));
            let histograms = day
                .histograms
                .iter()
                .map(|(id, t, h)| (*id, *t, Value::Histogram(h.clone())));
            for (id, t, value) in floats.chain(histograms) {
                let resolved = if day.labelled.is_empty() {
                    self.cache.resolve(&self.db, day.day, id, &day.new_series)
                } else {
                    labelled.get(id as usize).cloned().unwrap_or(Resolved::Unknown)
                };
                match resolved {
                    Resolved::Send(series, hash) => {
                        let shard = (hash % n as u64) as usize;
                        let items = &mut per_shard[shard];
                        let pos = ShardPosition {
                            at,
                            skip: items.len() as u32,
                        };
                        highest = highest.max(t);
                        items.push(Item { series, t, value, pos });
                    }
                    Resolved::Dropped | Resolved::Unknown => match value {
                        Value::Float(_) => dropped += 1,
                        Value::Histogram(_) => dropped_histograms += 1,
                    },
                }
            }
        }
        let metrics = &self.shared.metrics;
        add(&metrics.samples_dropped, dropped);
        add(&metrics.histograms_dropped, dropped_histograms);
        if highest > 0 {
            raise(&metrics.highest_read_ms, highest as u64);
        }
        for (shard, items) in per_shard.into_iter().enumerate() {
            if !items.is_empty() && !self.feed(shard, items, None, end) {
                return false;
            }
        }
        true
    }

    /// Hands a shard its part of a record; false when stopping.
    fn feed(&mut self, shard: usize, items: Vec<Item>, forward: Option<ForwardPart>, end: WalPosition) -> bool {
        let count = items.len() as u64 + forward.as_ref().map_or(0, |f| u64::from(f.series));
        self.read_samples += count;
        add(&self.shared.metrics.pending, count);
        let handle = &mut self.shards[shard];
        handle.fed = true;
        handle.tx.blocking_send(Chunk { items, forward, end }).is_ok()
    }

    /// A record that cannot be read: counted and logged, its samples not
    /// forwarded. Always true: the queue goes on.
    fn lost(&self, at: WalPosition, reason: &str) -> bool {
        add(&self.shared.metrics.wal_gaps, 1);
        tracing::error!(queue = %self.shared.settings.name, at = ?at, reason, "undecodable WAL record: its samples are not forwarded");
        true
    }

    /// Tells every shard the WAL has been read up to `end`.
    fn mark_all(&mut self, end: WalPosition) {
        for handle in &mut self.shards {
            let _ = handle.tx.try_send(Chunk::mark(end));
            handle.fed = false;
        }
    }

    /// Tells the shards that got nothing lately how far the WAL has been
    /// read, so their positions (and the segments held for them) move on.
    fn mark_unfed(&mut self, end: WalPosition) {
        for handle in &mut self.shards {
            if !handle.fed {
                let _ = handle.tx.try_send(Chunk::mark(end));
            }
            handle.fed = false;
        }
    }

    /// Writes moved positions and lets go of the segments every shard has passed.
    fn keep_positions(&mut self) {
        let oldest = self.shared.persist_if_dirty();
        if oldest.segment != self.held_segment {
            match self.db.hold_wal(&self.shared.settings.name, oldest.segment) {
                Ok(()) => self.held_segment = oldest.segment,
                Err(e) => tracing::error!(queue = %self.shared.settings.name, err = %e, "cannot move the WAL hold"),
            }
        }
    }

    fn spawn_shards(&mut self, positions: &Positions) {
        let per_shard = (self.shared.settings.capacity / self.shared.settings.max_samples_per_send.max(1)).max(2);
        self.shards = positions
            .shards
            .iter()
            .enumerate()
            .map(|(index, state)| {
                let (tx, rx) = mpsc::channel(per_shard);
                let task = self
                    .rt
                    .spawn(run_shard(index, rx, state.done, state.in_flight, self.shared.clone()));
                ShardHandle { tx, task, fed: false }
            })
            .collect();
        self.shared
            .metrics
            .shards
            .store(self.shards.len() as u64, Ordering::Relaxed);
    }

    /// Closes every shard's channel and waits for them to send what they
    /// hold; false if stopped meanwhile.
    fn stop_shards(&mut self) -> bool {
        let tasks: Vec<_> = self.shards.drain(..).map(|h| h.task).collect();
        for task in tasks {
            let _ = self.rt.block_on(task);
        }
        !self.stopping.load(Ordering::Acquire)
    }

    /// Drains every shard at `at`, then starts `n` of them there.
    fn reshard(&mut self, n: usize, at: WalPosition) -> bool {
        tracing::info!(queue = %self.shared.settings.name, from = self.shards.len(), to = n, "remote write resharding");
        self.mark_all(at);
        for handle in &self.shards {
            // Blocking: every shard must learn it has everything before `at`.
            if handle.tx.blocking_send(Chunk::mark(at)).is_err() {
                return false;
            }
        }
        if !self.stop_shards() {
            return false;
        }
        let positions = Positions::at(at, n);
        {
            let mut p = self.shared.progress.lock();
            p.positions = positions.clone();
            p.dirty = true;
        }
        self.keep_positions();
        self.spawn_shards(&positions);
        true
    }

    /// As Prometheus sizes its shards: the send time the incoming samples
    /// need per second, plus a twentieth of the backlog, within 30 % of the
    /// current number left as it is; no change while sends fail.
    fn desired_shards(&mut self, elapsed: Duration) -> usize {
        let settings = &self.shared.settings;
        let current = self.shards.len();
        let rate = self.read_samples as f64 / elapsed.as_secs_f64().max(1e-3);
        self.read_samples = 0;
        let in_rate = match self.in_rate {
            Some(previous) => 0.2 * rate + 0.8 * previous,
            None => rate,
        };
        self.in_rate = Some(in_rate);
        let sent = self.shared.sent_samples.swap(0, Ordering::Relaxed);
        let nanos = self.shared.send_nanos.swap(0, Ordering::Relaxed);
        let metrics = &self.shared.metrics;
        let failing = self
            .shared
            .last_failure
            .lock()
            .is_some_and(|t| t.elapsed() < 2 * RESHARD_INTERVAL);
        if sent == 0 || failing {
            metrics.shards_desired.store(current as u64, Ordering::Relaxed);
            return current;
        }
        let time_per_sample = nanos as f64 / 1e9 / sent as f64;
        let lag = (metrics.highest_read_ms.load(Ordering::Relaxed) as f64
            - metrics.highest_sent_ms.load(Ordering::Relaxed) as f64)
            / 1000.0;
        let backlog = lag.max(0.0) * in_rate;
        let desired = time_per_sample * (in_rate + 0.05 * backlog);
        metrics.shards_desired.store(desired.ceil() as u64, Ordering::Relaxed);
        let n = current as f64;
        if desired > n * 0.7 && desired < n * 1.3 {
            return current;
        }
        (desired.ceil() as usize).clamp(settings.min_shards.max(1), settings.max_shards.max(1))
    }
}

/// What a shard is about to send.
struct Batch {
    items: Vec<Item>,
    /// Forward parts taken whole: their snappy blocks.
    blocks: SnappyBody,
    /// Forwarded series taken one by one: their fields, uncompressed.
    fields: Vec<u8>,
    /// Forwarded series in `blocks` and `fields`, and how many are histograms.
    forwarded: u64,
    forwarded_histograms: u64,
    /// Forwarded series left out as older than the queue's age limit.
    too_old: u64,
    too_old_histograms: u64,
    /// The greatest time of the forwarded series.
    highest: i64,
}

impl Batch {
    fn new(capacity: usize) -> Self {
        Self {
            items: Vec::with_capacity(capacity),
            blocks: SnappyBody::default(),
            fields: Vec::new(),
            forwarded: 0,
            forwarded_histograms: 0,
            too_old: 0,
            too_old_histograms: 0,
            highest: i64::MIN,
        }
    }

    /// Its samples, sent or left out: what counts against
    /// `max_samples_per_send` and leaves `pending` once it is over.
    fn len(&self) -> usize {
        self.items.len() + (self.forwarded + self.too_old + self.too_old_histograms) as usize
    }

    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// One shard: batches its samples in WAL order and sends each batch until
/// it is delivered or refused. Ends when its channel closes (after sending
/// what it holds) or the queue stops.
async fn run_shard(
    index: usize,
    mut rx: mpsc::Receiver<Chunk>,
    done: ShardPosition,
    mut cut_at: Option<ShardPosition>,
    shared: Arc<Shared>,
) {
    let settings = &shared.settings;
    let mut stop = shared.stop.clone();
    let mut batch = Batch::new(settings.max_samples_per_send);
    let mut batch_end = done;
    let mut deadline: Option<tokio::time::Instant> = None;
    let mut scratch = Vec::new();
    loop {
        let next = tokio::select! {
            biased;
            _ = stop.changed() => return,
            chunk = rx.recv() => chunk,
            _ = sleep_until(deadline) => {
                if !send_batch(&shared, index, &mut batch, batch_end).await {
                    return;
                }
                deadline = None;
                continue;
            }
        };
        let Some(chunk) = next else {
            if !batch.is_empty() {
                send_batch(&shared, index, &mut batch, batch_end).await;
            }
            return;
        };
        for item in chunk.items {
            if item.pos < done {
                // Delivered before the restart.
                shared.metrics.pending.fetch_sub(1, Ordering::Relaxed);
                continue;
            }
            batch_end = ShardPosition {
                at: item.pos.at,
                skip: item.pos.skip + 1,
            };
            batch.items.push(item);
            if batch.len() >= settings.max_samples_per_send || cut_at.is_some_and(|c| batch_end >= c) {
                if !send_batch(&shared, index, &mut batch, batch_end).await {
                    return;
                }
                cut_at = None;
                deadline = None;
            }
        }
        if let Some(part) = chunk.forward {
            let taking = TakeForward {
                shared: &shared,
                index,
                done,
                cut_at: &mut cut_at,
                batch: &mut batch,
                batch_end: &mut batch_end,
                scratch: &mut scratch,
            };
            match taking.take(part).await {
                None => return,
                Some(true) => deadline = None,
                Some(false) => {}
            }
        }
        let end = ShardPosition::record_start(chunk.end);
        if end > batch_end {
            if batch.is_empty() {
                if end > done {
                    shared.finish(index, end);
                }
            } else {
                batch_end = end;
            }
        }
        if cut_at.is_some_and(|c| batch_end >= c) {
            cut_at = None;
            if !batch.is_empty() {
                if !send_batch(&shared, index, &mut batch, batch_end).await {
                    return;
                }
                deadline = None;
            }
        }
        if !batch.is_empty() && deadline.is_none() {
            deadline = Some(tokio::time::Instant::now() + settings.batch_send_deadline);
        }
    }
}

async fn sleep_until(deadline: Option<tokio::time::Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d).await,
        None => std::future::pending().await,
    }
}

/// Sends `batch` (emptying it) until it is delivered or refused; false
/// if the queue stopped first (the batch is sent again after a restart).
async fn send_batch(shared: &Shared, index: usize, batch: &mut Batch, end: ShardPosition) -> bool {
    let settings = &shared.settings;
    let metrics = &shared.metrics;
    let count = batch.len() as u64;
    shared.begin(index, end);
    let items = std::mem::take(&mut batch.items);
    let mut fields = std::mem::take(&mut batch.fields);
    let mut forwarded = std::mem::replace(batch, Batch::new(items.capacity()));
    let encoded = encode(&items, shared.sender.protocol, settings.sample_age_limit, &mut fields).and_then(|e| {
        match shared.sender.protocol {
            Protocol::V1 => forwarded.blocks.push_raw(&fields).map_err(str::to_string)?,
            Protocol::V2 => {}
        }
        Ok(e)
    });
    let Encoded {
        samples,
        histograms,
        too_old,
        too_old_histograms,
        highest,
    } = match encoded {
        Ok(e) => e,
        Err(reason) => {
            tracing::error!(queue = %settings.name, reason, "cannot encode a remote write request: its samples are not forwarded");
            add(&metrics.samples_failed, count);
            metrics.pending.fetch_sub(count, Ordering::Relaxed);
            shared.finish(index, end);
            return true;
        }
    };
    let body = match shared.sender.protocol {
        Protocol::V1 => Bytes::from(forwarded.blocks.take()),
        Protocol::V2 => Bytes::from(fields),
    };
    let samples = samples + forwarded.forwarded - forwarded.forwarded_histograms;
    let histograms = histograms + forwarded.forwarded_histograms;
    let highest = highest.max(forwarded.highest);
    add(&metrics.samples_dropped, too_old + forwarded.too_old);
    add(
        &metrics.histograms_dropped,
        too_old_histograms + forwarded.too_old_histograms,
    );
    if samples + histograms > 0 {
        let mut stop = shared.stop.clone();
        let backoff = Backoff {
            min: settings.min_backoff,
            max: settings.max_backoff,
        };
        let outcome = shared
            .sender
            .send_with_retries(body.clone(), backoff, &mut stop, |reason, wait| {
                *shared.last_failure.lock() = Some(Instant::now());
                add(&metrics.samples_retried, samples);
                add(&metrics.histograms_retried, histograms);
                tracing::warn!(queue = %settings.name, reason, retry_in = ?wait, "failed to send a remote write batch, retrying");
            })
            .await;
        match outcome {
            Outcome::Delivered { took } => {
                metrics.observe_batch(took.as_secs_f64());
                add(&metrics.samples, samples);
                add(&metrics.histograms, histograms);
                add(&metrics.bytes, body.len() as u64);
                raise(&metrics.highest_sent_ms, highest.max(0) as u64);
                shared.sent_samples.fetch_add(samples + histograms, Ordering::Relaxed);
                shared.send_nanos.fetch_add(took.as_nanos() as u64, Ordering::Relaxed);
            }
            Outcome::Refused(reason) => {
                tracing::error!(queue = %settings.name, reason, samples, histograms, "non-recoverable error sending a remote write batch: its samples are dropped");
                add(&metrics.samples_failed, samples);
                add(&metrics.histograms_failed, histograms);
            }
            Outcome::Stopped => return false,
        }
    }
    metrics.pending.fetch_sub(count, Ordering::Relaxed);
    shared.finish(index, end);
    true
}

struct Encoded {
    samples: u64,
    histograms: u64,
    too_old: u64,
    too_old_histograms: u64,
    highest: i64,
}

/// The least time a sample sent now may have.
fn oldest_sent(age_limit: Duration) -> i64 {
    if age_limit.is_zero() {
        i64::MIN
    } else {
        let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
        now.saturating_sub(age_limit).as_millis() as i64
    }
}

/// Items' samples grouped by series, in order, appended to `body`: for
/// remote write 1.0 as uncompressed series fields, for 2.0 as the whole
/// compressed request.
fn encode(items: &[Item], protocol: Protocol, age_limit: Duration, body: &mut Vec<u8>) -> Result<Encoded, String> {
    let oldest = oldest_sent(age_limit);
    let mut out = Encoded {
        samples: 0,
        histograms: 0,
        too_old: 0,
        too_old_histograms: 0,
        highest: i64::MIN,
    };
    // Each series' samples together, in the order of its first one, without
    // a vector per series: its group's number per item, then a stable sort.
    let mut groups: Vec<&Series> = Vec::new();
    let mut index: HashMap<*const (), u32, foldhash::fast::RandomState> = HashMap::default();
    let mut kept: Vec<(u32, u32)> = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        if item.t < oldest {
            match &item.value {
                Value::Float(_) => out.too_old += 1,
                Value::Histogram(_) => out.too_old_histograms += 1,
            }
            continue;
        }
        let g = *index.entry(item.series.identity()).or_insert_with(|| {
            groups.push(&item.series);
            groups.len() as u32 - 1
        });
        kept.push((g, i as u32));
    }
    kept.sort_by_key(|&(g, _)| g);
    let mut floats: Vec<Sample> = Vec::with_capacity(kept.len());
    let mut histograms: Vec<HistogramSample> = Vec::new();
    // Per group, the end of its floats and of its histograms.
    let mut ends: Vec<(usize, usize)> = Vec::with_capacity(groups.len());
    for run in kept.chunk_by(|a, b| a.0 == b.0) {
        for &(_, i) in run {
            let item = &items[i as usize];
            out.highest = out.highest.max(item.t);
            match &item.value {
                Value::Float(v) => floats.push(Sample::new(item.t, *v)),
                Value::Histogram(h) => histograms.push(HistogramSample {
                    t: item.t,
                    h: h.clone(),
                }),
            }
        }
        ends.push((floats.len(), histograms.len()));
    }
    out.samples = floats.len() as u64;
    out.histograms = histograms.len() as u64;
    let grouped = groups
        .iter()
        .zip(&ends)
        .scan((0, 0), |starts, (series, &(f_end, h_end))| {
            let (f_start, h_start) = std::mem::replace(starts, (f_end, h_end));
            Some((*series, &floats[f_start..f_end], &histograms[h_start..h_end]))
        });
    match protocol {
        Protocol::V1 => {
            for (series, samples, histograms) in grouped {
                if let Series::Encoded(labels) = series {
                    encode_series(labels.bytes(), samples, histograms, body);
                }
            }
        }
        Protocol::V2 => {
            let series: Vec<SeriesSamples> = grouped
                .filter_map(|(series, samples, histograms)| match series {
                    Series::Labels(labels) => Some(SeriesSamples {
                        labels: (**labels).clone(),
                        samples: samples.to_vec(),
                        histograms: histograms.to_vec(),
                    }),
                    Series::Encoded(_) => None,
                })
                .collect();
            encode_write_request_v2(&series, ContentEncoding::Snappy, body).map_err(|e| e.to_string())?;
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use cairn_model::Labels;
    use cairn_protocols::DecodeLimits;
    use cairn_protocols::remote_write::decode_write_request;

    use super::*;

    fn series(name: &str) -> Series {
        let mut labels = Vec::new();
        cairn_protocols::remote_write::encode_labels(&Labels::from_pairs([("__name__", name)]), &mut labels);
        Series::Encoded(labels.into())
    }

    #[test]
    fn a_batch_groups_each_series_samples_in_order_of_first_appearance() {
        let [a, b, c] = ["a", "b", "c"].map(series);
        let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis() as i64;
        let item = |s: &Series, t: i64| Item {
            series: s.clone(),
            t,
            value: Value::Float(t as f64),
            pos: ShardPosition {
                at: WalPosition { segment: 0, offset: 0 },
                skip: 0,
            },
        };
        let old = now - 3_600_000;
        let items = [
            item(&b, now + 3),
            item(&a, now + 1),
            item(&c, old),
            item(&b, now + 1),
            item(&a, now + 2),
            item(&b, now + 2),
            item(&c, now),
        ];
        let mut pb = Vec::new();
        let encoded = encode(&items, Protocol::V1, Duration::from_secs(60), &mut pb).unwrap();
        assert_eq!((encoded.samples, encoded.too_old, encoded.highest), (6, 1, now + 3));
        let batch = decode_write_request(&pb, ContentEncoding::Identity, &DecodeLimits::default()).unwrap();
        let got: Vec<(String, Vec<i64>)> = batch
            .to_series()
            .into_iter()
            .map(|s| {
                let name = s.labels.metric_name().unwrap_or_default().to_string();
                (name, s.samples.iter().map(|x| x.t - now).collect())
            })
            .collect();
        let want = [("b", vec![3, 1, 2]), ("a", vec![1, 2]), ("c", vec![0])];
        assert_eq!(got, want.map(|(n, ts)| (n.to_string(), ts)));
    }
}
