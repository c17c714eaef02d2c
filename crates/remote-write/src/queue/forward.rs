//! Forward batches (agent mode's scrapes) on their way out: the reader
//! hands a batch whole to a single shard, splits its series by label hash
//! between several, or decodes them for a queue that relabels or speaks
//! remote write 2.0; a shard takes a part whole into its batch as its
//! snappy block when it can, and series by series when the part must be
//! cut (a restart's delivered series, the in-flight batch's cut, the age
//! limit, a part larger than a batch).

use std::sync::atomic::Ordering;

use cairn_protocols::DecodeLimits;
use cairn_protocols::remote_write::{ContentEncoding, decode_write_request, series_fields, unsnappy_block};
use cairn_tsdb::{ForwardBatch, WalPosition};

use super::{Batch, Item, Reader, Shared, Value, oldest_sent, send_batch};
use crate::metrics::{add, raise};
use crate::positions::ShardPosition;
use crate::series::Resolved;

/// A shard's series of a forward batch (agent mode's scrapes), sent as
/// they are: series `k` of the part is at `ShardPosition { at, skip: k }`.
pub(super) struct ForwardPart {
    /// The batch's own snappy block, or, once the batch is split between
    /// shards, uncompressed series fields.
    pub(super) bytes: Vec<u8>,
    pub(super) compressed: bool,
    pub(super) series: u32,
    pub(super) histograms: u32,
    pub(super) min_t: i64,
    pub(super) max_t: i64,
    pub(super) at: WalPosition,
}

/// The most a forward batch is decompressed to.
pub(super) const MAX_FORWARD_BATCH_BYTES: usize = 1 << 30;
impl Reader {
    /// Hands a forward batch to the shards: whole to the only one, split by
    /// series when there are more, decoded into samples when the queue
    /// relabels or speaks remote write 2.0.
    pub(super) fn dispatch_forward(&mut self, at: WalPosition, end: WalPosition, batch: ForwardBatch<'_>) -> bool {
        raise(&self.shared.metrics.highest_read_ms, batch.max_t.max(0) as u64);
        if !self.cache.sends_as_written() {
            return self.dispatch_decoded(at, end, batch);
        }
        let part = |bytes: Vec<u8>, compressed: bool, series: u32, histograms: u32| ForwardPart {
            bytes,
            compressed,
            series,
            histograms,
            min_t: batch.min_t,
            max_t: batch.max_t,
            at,
        };
        if self.shards.len() == 1 {
            let whole = part(batch.block.to_vec(), true, batch.series, batch.histograms);
            return self.feed(0, Vec::new(), Some(whole), end);
        }
        if let Err(reason) = unsnappy_block(batch.block, MAX_FORWARD_BATCH_BYTES, &mut self.scratch) {
            return self.lost(at, reason);
        }
        let n = self.shards.len();
        let mut parts: Vec<ForwardPart> = (0..n).map(|_| part(Vec::new(), false, 0, 0)).collect();
        for field in series_fields(&self.scratch) {
            let field = match field {
                Ok(f) => f,
                Err(reason) => return self.lost(at, reason),
            };
            let shard = (xxhash_rust::xxh3::xxh3_64(field.labels) % n as u64) as usize;
            let p = &mut parts[shard];
            p.bytes.extend_from_slice(field.field);
            p.series += 1;
            p.histograms += u32::from(field.histogram);
        }
        for (shard, p) in parts.into_iter().enumerate() {
            if p.series > 0 && !self.feed(shard, Vec::new(), Some(p), end) {
                return false;
            }
        }
        true
    }

    /// A forward batch's samples as items, for a queue that relabels them
    /// or sends remote write 2.0.
    fn dispatch_decoded(&mut self, at: WalPosition, end: WalPosition, batch: ForwardBatch<'_>) -> bool {
        if let Err(reason) = unsnappy_block(batch.block, MAX_FORWARD_BATCH_BYTES, &mut self.scratch) {
            return self.lost(at, reason);
        }
        let limits = DecodeLimits {
            max_decompressed_bytes: MAX_FORWARD_BATCH_BYTES,
            max_labels_per_series: usize::MAX,
            max_label_name_len: usize::MAX,
            max_label_value_len: usize::MAX,
            max_histogram_buckets: usize::MAX,
        };
        let decoded = match decode_write_request(&self.scratch, ContentEncoding::Identity, &limits) {
            Ok(d) => d,
            Err(e) => return self.lost(at, &e.to_string()),
        };
        let n = self.shards.len();
        let mut per_shard: Vec<Vec<Item>> = (0..n).map(|_| Vec::new()).collect();
        let (mut dropped, mut dropped_histograms) = (0, 0);
        for series in decoded.series() {
            let floats = series.samples().iter().map(|s| (s.t, Value::Float(s.v)));
            let histograms = series.histograms().iter().map(|h| (h.t, Value::Histogram(h.h.clone())));
            let values: Vec<(i64, Value)> = floats.chain(histograms).collect();
            match self.cache.resolve_forwarded(series.labels()) {
                Resolved::Send(s, hash) => {
                    let items = &mut per_shard[(hash % n as u64) as usize];
                    for (t, value) in values {
                        let pos = ShardPosition {
                            at,
                            skip: items.len() as u32,
                        };
                        items.push(Item {
                            series: s.clone(),
                            t,
                            value,
                            pos,
                        });
                    }
                }
                Resolved::Dropped | Resolved::Unknown => {
                    for (_, value) in values {
                        match value {
                            Value::Float(_) => dropped += 1,
                            Value::Histogram(_) => dropped_histograms += 1,
                        }
                    }
                }
            }
        }
        add(&self.shared.metrics.samples_dropped, dropped);
        add(&self.shared.metrics.histograms_dropped, dropped_histograms);
        for (shard, items) in per_shard.into_iter().enumerate() {
            if !items.is_empty() && !self.feed(shard, items, None, end) {
                return false;
            }
        }
        true
    }
}

/// A shard taking a forward part into its batch.
pub(super) struct TakeForward<'a> {
    pub(super) shared: &'a Shared,
    pub(super) index: usize,
    /// What was delivered before the restart.
    pub(super) done: ShardPosition,
    pub(super) cut_at: &'a mut Option<ShardPosition>,
    pub(super) batch: &'a mut Batch,
    pub(super) batch_end: &'a mut ShardPosition,
    pub(super) scratch: &'a mut Vec<u8>,
}

impl TakeForward<'_> {
    /// Adds the part's series not yet delivered to the batch, sending each
    /// batch they fill or that ends at the cut: whole, as their block, when
    /// the part fits a batch, is not cut and none is too old. Whether it sent; `None` if
    /// the queue stopped.
    pub(super) async fn take(self, part: ForwardPart) -> Option<bool> {
        let Self {
            shared,
            index,
            done,
            cut_at,
            batch,
            batch_end,
            scratch,
        } = self;
        let max = shared.settings.max_samples_per_send;
        let n = part.series;
        let at = |skip: u32| ShardPosition { at: part.at, skip };
        let from = if n == 0 || at(n - 1) < done {
            n
        } else if at(0) < done {
            done.skip
        } else {
            0
        };
        shared.metrics.pending.fetch_sub(u64::from(from), Ordering::Relaxed);
        if from == n {
            return Some(false);
        }
        let mut sent = false;
        let oldest = oldest_sent(shared.settings.sample_age_limit);
        let cut_inside = cut_at.is_some_and(|c| at(from) < c && c < at(n));
        let whole = part.compressed && from == 0 && !cut_inside && part.min_t >= oldest && n as usize <= max;
        if whole && n as usize > max - batch.len().min(max) {
            // Sent without it, so that it goes whole in the next batch.
            if !send_batch(shared, index, batch, *batch_end).await {
                return None;
            }
            sent = true;
        }
        if whole {
            if let Err(reason) = batch.blocks.push_block(&part.bytes) {
                forward_lost(shared, part.at, n, reason);
                return Some(sent);
            }
            batch.forwarded += u64::from(n);
            batch.forwarded_histograms += u64::from(part.histograms);
            batch.highest = batch.highest.max(part.max_t);
            *batch_end = at(n);
            if batch.len() < max && !cut_at.is_some_and(|c| *batch_end >= c) {
                return Some(sent);
            }
            *cut_at = None;
            return send_batch(shared, index, batch, *batch_end).await.then_some(true);
        }
        let fields: &[u8] = if part.compressed {
            if let Err(reason) = unsnappy_block(&part.bytes, MAX_FORWARD_BATCH_BYTES, scratch) {
                forward_lost(shared, part.at, n - from, reason);
                return Some(sent);
            }
            scratch
        } else {
            &part.bytes
        };
        for (k, field) in (0..n).zip(series_fields(fields)).skip(from as usize) {
            let field = match field {
                Ok(f) => f,
                Err(reason) => {
                    forward_lost(shared, part.at, n - k, reason);
                    break;
                }
            };
            if field.t < oldest {
                match field.histogram {
                    true => batch.too_old_histograms += 1,
                    false => batch.too_old += 1,
                }
            } else {
                batch.fields.extend_from_slice(field.field);
                batch.forwarded += 1;
                batch.forwarded_histograms += u64::from(field.histogram);
                batch.highest = batch.highest.max(field.t);
            }
            *batch_end = at(k + 1);
            if batch.len() >= max || cut_at.is_some_and(|c| *batch_end >= c) {
                *cut_at = None;
                if !send_batch(shared, index, batch, *batch_end).await {
                    return None;
                }
                sent = true;
            }
        }
        Some(sent)
    }
}

/// Forwarded series that cannot be read: counted and logged, not sent.
fn forward_lost(shared: &Shared, at: WalPosition, series: u32, reason: &str) {
    add(&shared.metrics.wal_gaps, 1);
    shared.metrics.pending.fetch_sub(u64::from(series), Ordering::Relaxed);
    tracing::error!(queue = %shared.settings.name, at = ?at, reason, "undecodable forward batch: its samples are not forwarded");
}
