//! Reads one series' samples from all the places they may be (parts of
//! several partitions, unflushed rows) as a time-ordered stream of blocks.

use std::ops::Range;
use std::sync::Arc;
use std::time::UNIX_EPOCH;

use cairn_model::Labels;
use cairn_model::civil::format_rfc3339_millis;
use cairn_storage::{ReadWarnings, SampleBlock, SampleBlocks, StorageError};

use crate::part::{BlockRef, LostBlock, Part, ReadBuffer, SharedRead};

/// A time range `[mint, maxt]` of deleted samples.
pub type Deleted = (i64, i64);

/// Whether a sample at `t` is hidden by one of `deleted`.
fn is_deleted(deleted: &[Deleted], t: i64) -> bool {
    deleted.iter().any(|&(lo, hi)| (lo..=hi).contains(&t))
}

/// Where a run of samples comes from. Sources of one partition carry a
/// precedence: when two hold the same timestamp, the higher one (newer write) wins.
pub enum Source {
    Block {
        part: Arc<Part>,
        block: BlockRef,
        /// Deleted ranges that apply to this block.
        deleted: Vec<Deleted>,
        /// Bytes of a file part read once for the blocks of several series.
        shared: Option<Arc<SharedRead>>,
    },
    Rows(Vec<(i64, f64)>),
}

pub struct Ranked {
    pub mint: i64,
    pub maxt: i64,
    pub precedence: u64,
    pub source: Source,
}

impl Ranked {
    /// A block of `part`; its precedence is the part's newest write sequence.
    pub fn block(part: &Arc<Part>, block: BlockRef, deleted: Vec<Deleted>) -> Self {
        Self {
            mint: block.mint,
            maxt: block.maxt,
            precedence: part.meta().max_seq,
            source: Source::Block {
                part: part.clone(),
                block,
                deleted,
                shared: None,
            },
        }
    }

    /// Whether deletions hide some of its samples.
    fn has_deletions(&self) -> bool {
        matches!(&self.source, Source::Block { deleted, .. } if !deleted.is_empty())
    }

    /// Whether it certainly holds a sample in `[mint, maxt]`, known without
    /// decoding: its first or last sample (`mint`/`maxt` are those samples'
    /// times) is in the range and no deletion hides it. A newer source may
    /// overwrite that sample's value, never remove its timestamp.
    fn surely_has_samples_in(&self, mint: i64, maxt: i64) -> bool {
        let deleted: &[Deleted] = match &self.source {
            Source::Block { deleted, .. } => deleted,
            Source::Rows(_) => &[],
        };
        let visible = |t: i64| (mint..=maxt).contains(&t) && !is_deleted(deleted, t);
        visible(self.mint) || visible(self.maxt)
    }

    pub fn rows(precedence: u64, rows: Vec<(i64, f64)>) -> Option<Self> {
        let (mint, maxt) = (rows.first()?.0, rows.last()?.0);
        Some(Self {
            mint,
            maxt,
            precedence,
            source: Source::Rows(rows),
        })
    }
}

/// Keeps, of one series' sources, only the one holding its newest sample
/// at or before `maxt`, when that is certain without decoding: the source
/// ending last (the newest write among those ending together) ends by `maxt`
/// and has no deletions, so its last sample is that sample. Otherwise keeps
/// them all.
pub fn keep_newest_source(sources: &mut Vec<Ranked>, maxt: i64) {
    let Some((newest, source)) = sources.iter().enumerate().max_by_key(|(_, s)| (s.maxt, s.precedence)) else {
        return;
    };
    if source.maxt <= maxt && !source.has_deletions() {
        sources.swap(0, newest);
        sources.truncate(1);
    }
}

/// Where a read says which of a series' samples are lost to damage: its
/// warnings, and the series' canonical labels (decoded only then).
pub struct LossReport {
    pub warnings: ReadWarnings,
    pub arena: Arc<Vec<u8>>,
    pub labels: Range<usize>,
}

impl LossReport {
    fn report(&self, part: &Part, lost: &LostBlock) {
        let series = Labels::decode(&self.arena[self.labels.clone()])
            .map_or_else(|_| format!("#{:016x}", lost.id), |(l, _)| l.to_string());
        let why = format!("a block of {} is damaged ({})", part.name().display(), lost.reason);
        self.warnings
            .push(lost_samples_warning(&series, lost.samples, lost.mint, lost.maxt, &why));
    }
}

/// The warning of a read that misses `samples` samples of `series` over
/// `[mint, maxt]`, and `why`.
pub fn lost_samples_warning(series: &str, samples: u32, mint: i64, maxt: i64, why: &str) -> String {
    let at = |ms: i64| {
        let since = std::time::Duration::from_millis(ms.unsigned_abs());
        let t = if ms < 0 {
            UNIX_EPOCH.checked_sub(since)
        } else {
            UNIX_EPOCH.checked_add(since)
        };
        t.map_or_else(|| ms.to_string(), format_rfc3339_millis)
    };
    format!(
        "{samples} samples of {series} from {} to {} are lost: {why}",
        at(mint),
        at(maxt)
    )
}

/// Yields the merged samples of one series in `[mint, maxt]`, one block per
/// group of time-overlapping sources (usually one source per block). A
/// block found damaged fails the read, or, given `losses`, is left out and
/// said so there.
pub struct SeriesReader {
    sources: Vec<Ranked>,
    pos: usize,
    mint: i64,
    maxt: i64,
    ts: Vec<i64>,
    vs: Vec<f64>,
    /// Where the samples in `[mint, maxt]` start in `ts`/`vs`: a block
    /// reaching back before `mint` is skipped into, not shifted down.
    start: usize,
    /// `ts`/`vs` hold a decoded block not yet returned.
    pending: bool,
    /// Blocks read ahead from a file part.
    buf: ReadBuffer,
    losses: Option<LossReport>,
}

impl SeriesReader {
    pub fn new(sources: Vec<Ranked>, mint: i64, maxt: i64) -> Self {
        Self::reporting_losses(sources, mint, maxt, None)
    }

    pub fn reporting_losses(mut sources: Vec<Ranked>, mint: i64, maxt: i64, losses: Option<LossReport>) -> Self {
        sources.sort_by_key(|s| (s.mint, s.precedence));
        Self {
            sources,
            pos: 0,
            mint,
            maxt,
            ts: Vec::new(),
            vs: Vec::new(),
            start: 0,
            pending: false,
            buf: ReadBuffer::default(),
            losses,
        }
    }

    /// Decodes `sources[i]` into `ts`/`vs`. A block found damaged adds
    /// nothing and is reported when losses are; otherwise it fails the read.
    fn decode(&mut self, i: usize, ts: &mut Vec<i64>, vs: &mut Vec<f64>) -> Result<(), StorageError> {
        let (t0, v0) = (ts.len(), vs.len());
        let Err(e) = decode(&self.sources, i, &mut self.buf, ts, vs) else {
            return Ok(());
        };
        let (Some(losses), Source::Block { part, block, .. }) = (&self.losses, &self.sources[i].source) else {
            return Err(e);
        };
        let Some(lost) = part.lost_block(block) else {
            return Err(e);
        };
        ts.truncate(t0);
        vs.truncate(v0);
        losses.report(part, &lost);
        Ok(())
    }

    /// Decodes the next non-empty group into `ts`/`vs`; false at the end.
    fn fill(&mut self) -> Result<bool, StorageError> {
        let (mut ts, mut vs) = (std::mem::take(&mut self.ts), std::mem::take(&mut self.vs));
        ts.clear();
        vs.clear();
        let filled = self.fill_into(&mut ts, &mut vs);
        (self.ts, self.vs) = (ts, vs);
        match filled? {
            Some(start) => {
                self.start = start;
                Ok(true)
            }
            None => Ok(false),
        }
    }

    /// Appends the next group with samples in `[mint, maxt]` to `ts`/`vs`
    /// and returns where those samples start (they run to the end: samples
    /// after `maxt` are cut off, those before `mint` left in front); `None`
    /// at the end.
    fn fill_into(&mut self, ts: &mut Vec<i64>, vs: &mut Vec<f64>) -> Result<Option<usize>, StorageError> {
        while self.pos < self.sources.len() {
            let start = self.pos;
            let mut group_maxt = self.sources[start].maxt;
            let mut end = start + 1;
            while end < self.sources.len() && self.sources[end].mint <= group_maxt {
                group_maxt = group_maxt.max(self.sources[end].maxt);
                end += 1;
            }
            self.pos = end;
            let base = ts.len();
            if end - start == 1 {
                self.decode(start, ts, vs)?;
            } else {
                self.merge_group(start, end, ts, vs)?;
            }
            let hi = base + ts[base..].partition_point(|&t| t <= self.maxt);
            ts.truncate(hi);
            vs.truncate(hi);
            let lo = base + ts[base..].partition_point(|&t| t < self.mint);
            if lo < hi {
                return Ok(Some(lo));
            }
            ts.truncate(base);
            vs.truncate(base);
        }
        Ok(None)
    }

    /// Overlapping sources: the newest write wins per timestamp.
    fn merge_group(
        &mut self,
        start: usize,
        end: usize,
        out_ts: &mut Vec<i64>,
        out_vs: &mut Vec<f64>,
    ) -> Result<(), StorageError> {
        let mut all: Vec<(i64, u64, f64)> = Vec::new();
        let (mut ts, mut vs) = (Vec::new(), Vec::new());
        for i in start..end {
            ts.clear();
            vs.clear();
            self.decode(i, &mut ts, &mut vs)?;
            let precedence = self.sources[i].precedence;
            all.extend(ts.iter().zip(&vs).map(|(&t, &v)| (t, precedence, v)));
        }
        all.sort_by_key(|&(t, p, _)| (t, p));
        for (i, &(t, _, v)) in all.iter().enumerate() {
            let newest_for_t = all.get(i + 1).is_none_or(|next| next.0 != t);
            if newest_for_t {
                out_ts.push(t);
                out_vs.push(v);
            }
        }
        Ok(())
    }

    /// Whether any sample remains. Decodes (and keeps for `next_block`) the
    /// next block only when the sources' bounds cannot tell: deletions, or
    /// blocks reaching past both ends of the range.
    pub fn has_samples(&mut self) -> Result<bool, StorageError> {
        let untouched = self.pos == 0 && !self.pending;
        if untouched
            && self
                .sources
                .iter()
                .any(|s| s.surely_has_samples_in(self.mint, self.maxt))
        {
            return Ok(true);
        }
        if !self.pending {
            self.pending = self.fill()?;
        }
        Ok(self.pending)
    }
}

/// Decodes `sources[i]`; a block of a file part reads the blocks of the same
/// part that come right after it among the sources along with it, when they
/// follow it on disk.
fn decode(
    sources: &[Ranked],
    i: usize,
    buf: &mut ReadBuffer,
    ts: &mut Vec<i64>,
    vs: &mut Vec<f64>,
) -> Result<(), StorageError> {
    match &sources[i].source {
        Source::Rows(rows) => {
            ts.extend(rows.iter().map(|r| r.0));
            vs.extend(rows.iter().map(|r| r.1));
        }
        Source::Block {
            part,
            block,
            deleted,
            shared,
        } => {
            let base = ts.len();
            if let Some(shared) = shared {
                part.read_block_shared(block, shared, ts, vs)?;
            } else {
                // Only the blocks up to the next source from elsewhere: when
                // parts overlap in time their blocks alternate, and reading
                // past that source would be evicted before use.
                let ahead = sources[i + 1..].iter().map_while(|s| match &s.source {
                    Source::Block { part: p, block, .. } if Arc::ptr_eq(p, part) => Some(block),
                    _ => None,
                });
                part.read_block_buffered(block, ahead, buf, ts, vs)?;
            }
            if !deleted.is_empty() {
                // Only this block's samples: what `ts`/`vs` held before may
                // come from newer parts the deletions do not apply to.
                let mut keep = base;
                for i in base..ts.len() {
                    if !is_deleted(deleted, ts[i]) {
                        ts[keep] = ts[i];
                        vs[keep] = vs[i];
                        keep += 1;
                    }
                }
                ts.truncate(keep);
                vs.truncate(keep);
            }
        }
    }
    Ok(())
}

impl SampleBlocks for SeriesReader {
    fn next_block(&mut self) -> Result<Option<SampleBlock<'_>>, StorageError> {
        if !self.pending && !self.fill()? {
            return Ok(None);
        }
        self.pending = false;
        Ok(Some(SampleBlock {
            ts: &self.ts[self.start..],
            vs: &self.vs[self.start..],
        }))
    }

    /// Decodes every group straight into the caller's columns.
    fn read_into(&mut self, ts: &mut Vec<i64>, vs: &mut Vec<f64>) -> Result<Range<usize>, StorageError> {
        ts.clear();
        vs.clear();
        let mut first = None;
        if self.pending {
            self.pending = false;
            ts.extend_from_slice(&self.ts[self.start..]);
            vs.extend_from_slice(&self.vs[self.start..]);
            first = Some(0);
        }
        loop {
            let base = ts.len();
            let Some(start) = self.fill_into(ts, vs)? else {
                break;
            };
            // Groups follow each other in time and an earlier one reached
            // `mint`, so only the first can reach back before it.
            debug_assert!(first.is_none() || start == base, "a later group starts before mint");
            first.get_or_insert(start);
        }
        Ok(first.unwrap_or(0)..ts.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reader(rows: &[(i64, f64)], mint: i64, maxt: i64) -> SeriesReader {
        SeriesReader::new(Ranked::rows(1, rows.to_vec()).into_iter().collect(), mint, maxt)
    }

    #[test]
    fn a_source_with_an_end_in_the_range_has_samples_without_decoding() {
        let rows = [(10, 1.0), (100, 2.0)];
        for (mint, maxt) in [(5, 10), (100, 200), (0, 1000)] {
            let mut r = reader(&rows, mint, maxt);
            assert!(r.has_samples().unwrap());
            assert!(!r.pending, "[{mint}, {maxt}] decided by the bounds");
        }
    }

    #[test]
    fn a_source_reaching_past_both_ends_is_decoded_to_tell() {
        let mut empty = reader(&[(10, 1.0), (100, 2.0)], 50, 60);
        assert!(!empty.has_samples().unwrap());
        assert!(empty.next_block().unwrap().is_none());

        let mut inside = reader(&[(10, 1.0), (55, 3.0), (100, 2.0)], 50, 60);
        assert!(inside.has_samples().unwrap());
        let block = inside.next_block().unwrap().unwrap();
        assert_eq!((block.ts, block.vs), (&[55][..], &[3.0][..]));
    }
}
