//! Reads one series' samples from all the places they may be (parts of
//! several partitions, unflushed rows) as a time-ordered stream of blocks.

use std::sync::Arc;

use cairn_storage::{SampleBlock, SampleBlocks, StorageError};

use crate::part::{BlockRef, Part, ReadBuffer};

/// A time range `[mint, maxt]` of deleted samples.
pub type Deleted = (i64, i64);

/// Where a run of samples comes from. Sources of one partition carry a
/// precedence: when two hold the same timestamp, the higher one (newer write) wins.
pub enum Source {
    Block {
        part: Arc<Part>,
        block: BlockRef,
        /// Deleted ranges that apply to this block.
        deleted: Vec<Deleted>,
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
            },
        }
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

/// Yields the merged samples of one series in `[mint, maxt]`, one block per
/// group of time-overlapping sources (usually one source per block).
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
}

impl SeriesReader {
    pub fn new(mut sources: Vec<Ranked>, mint: i64, maxt: i64) -> Self {
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
        }
    }

    /// Decodes the next non-empty group into `ts`/`vs`; false at the end.
    fn fill(&mut self) -> Result<bool, StorageError> {
        while self.pos < self.sources.len() {
            let start = self.pos;
            let mut group_maxt = self.sources[start].maxt;
            let mut end = start + 1;
            while end < self.sources.len() && self.sources[end].mint <= group_maxt {
                group_maxt = group_maxt.max(self.sources[end].maxt);
                end += 1;
            }
            self.pos = end;
            self.ts.clear();
            self.vs.clear();
            if end - start == 1 {
                let (ts, vs) = (&mut self.ts, &mut self.vs);
                decode(&self.sources, start, &mut self.buf, ts, vs)?;
            } else {
                self.merge_group(start, end)?;
            }
            self.clip();
            if self.start < self.ts.len() {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// Overlapping sources: the newest write wins per timestamp.
    fn merge_group(&mut self, start: usize, end: usize) -> Result<(), StorageError> {
        let mut all: Vec<(i64, u64, f64)> = Vec::new();
        let (mut ts, mut vs) = (Vec::new(), Vec::new());
        for i in start..end {
            ts.clear();
            vs.clear();
            decode(&self.sources, i, &mut self.buf, &mut ts, &mut vs)?;
            let precedence = self.sources[i].precedence;
            all.extend(ts.iter().zip(&vs).map(|(&t, &v)| (t, precedence, v)));
        }
        all.sort_by_key(|&(t, p, _)| (t, p));
        for (i, &(t, _, v)) in all.iter().enumerate() {
            let newest_for_t = all.get(i + 1).is_none_or(|next| next.0 != t);
            if newest_for_t {
                self.ts.push(t);
                self.vs.push(v);
            }
        }
        Ok(())
    }

    /// Limits the decoded group to `[mint, maxt]`.
    fn clip(&mut self) {
        let (mint, maxt) = (self.mint, self.maxt);
        self.start = 0;
        if self.ts.first().is_some_and(|&t| t >= mint) && self.ts.last().is_some_and(|&t| t <= maxt) {
            return;
        }
        let hi = self.ts.partition_point(|&t| t <= maxt);
        self.ts.truncate(hi);
        self.vs.truncate(hi);
        self.start = self.ts.partition_point(|&t| t < mint);
    }

    /// Whether any sample remains; a block decoded ahead is kept for `next_block`.
    pub fn has_samples(&mut self) -> Result<bool, StorageError> {
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
        Source::Block { part, block, deleted } => {
            // Only the blocks up to the next source from elsewhere: when
            // parts overlap in time their blocks alternate, and reading past
            // that source would be evicted before use.
            let ahead = sources[i + 1..].iter().map_while(|s| match &s.source {
                Source::Block { part: p, block, .. } if Arc::ptr_eq(p, part) => Some(block),
                _ => None,
            });
            part.read_block_buffered(block, ahead, buf, ts, vs)?;
            if !deleted.is_empty() {
                let mut keep = 0;
                for i in 0..ts.len() {
                    if !deleted.iter().any(|&(lo, hi)| ts[i] >= lo && ts[i] <= hi) {
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
}
