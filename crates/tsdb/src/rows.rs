//! The newest committed samples of a partition, unsorted, before they are
//! compressed into a part.
//!
//! Rows live in chunks that are frozen once full, so a query's snapshot
//! shares frozen chunks and copies at most one small tail chunk.
//!
//! Sealing happens in two steps so that compression runs without the lock:
//! [`RowBuffer::begin_seal`] moves the rows aside (still visible to
//! snapshots), the caller compresses them, and [`RowBuffer::end_seal`] drops
//! them once the part that holds them is installed.

use std::sync::Arc;

use crate::part::{BlockEncoding, Part, PartWriter};
use cairn_storage::StorageError;

#[derive(Debug, Clone, Copy)]
pub struct Row {
    pub id: u64,
    pub t: i64,
    pub v: f64,
}

const CHUNK_ROWS: usize = 1024;

#[derive(Default)]
pub struct RowBuffer {
    frozen: Vec<Arc<Vec<Row>>>,
    tail: Vec<Row>,
    len: usize,
    /// Sequence numbers of the commits whose rows are in `frozen` and `tail`.
    pub min_seq: u64,
    pub max_seq: u64,
    /// Rows being compressed into a part (older than `frozen` and `tail`).
    sealing: Option<SealingRows>,
}

/// Rows taken by [`RowBuffer::begin_seal`], in commit order.
#[derive(Clone)]
pub struct SealingRows {
    chunks: Vec<Arc<Vec<Row>>>,
    len: usize,
    min_seq: u64,
    max_seq: u64,
}

/// A point-in-time copy of a [`RowBuffer`]: later appends are not seen.
#[derive(Clone, Default)]
pub struct RowsSnapshot {
    chunks: Vec<Arc<Vec<Row>>>,
}

impl RowBuffer {
    /// Rows not yet in a part, including those being sealed.
    pub fn len(&self) -> usize {
        self.len + self.sealing.as_ref().map_or(0, |s| s.len)
    }

    /// Rows appended since the last seal began.
    pub fn unsealed_len(&self) -> usize {
        self.len
    }

    /// Appends the rows of commit `seq`.
    pub fn extend(&mut self, seq: u64, mut rows: &[Row]) {
        if rows.is_empty() {
            return;
        }
        if self.len == 0 {
            self.min_seq = seq;
        }
        self.max_seq = seq;
        self.len += rows.len();
        while !rows.is_empty() {
            if self.tail.capacity() == 0 {
                self.tail.reserve_exact(CHUNK_ROWS);
            }
            let (now, rest) = rows.split_at(rows.len().min(CHUNK_ROWS - self.tail.len()));
            self.tail.extend_from_slice(now);
            rows = rest;
            if self.tail.len() == CHUNK_ROWS {
                self.frozen.push(Arc::new(std::mem::take(&mut self.tail)));
            }
        }
    }

    pub fn snapshot(&self) -> RowsSnapshot {
        let mut chunks = self.sealing.as_ref().map_or_else(Vec::new, |s| s.chunks.clone());
        chunks.extend(self.frozen.iter().cloned());
        if !self.tail.is_empty() {
            chunks.push(Arc::new(self.tail.clone()));
        }
        RowsSnapshot { chunks }
    }

    /// Moves every row aside for sealing; they stay visible to snapshots
    /// until [`Self::end_seal`]. Rows of an earlier seal that failed are
    /// taken again, ahead of the new ones. `None` if there is nothing to seal.
    pub fn begin_seal(&mut self) -> Option<SealingRows> {
        if self.len > 0 {
            if !self.tail.is_empty() {
                self.frozen.push(Arc::new(std::mem::take(&mut self.tail)));
            }
            let chunks = std::mem::take(&mut self.frozen);
            let (len, min_seq, max_seq) = (self.len, self.min_seq, self.max_seq);
            self.len = 0;
            match &mut self.sealing {
                Some(s) => {
                    s.chunks.extend(chunks);
                    s.len += len;
                    s.max_seq = max_seq;
                }
                None => {
                    self.sealing = Some(SealingRows {
                        chunks,
                        len,
                        min_seq,
                        max_seq,
                    })
                }
            }
        }
        self.sealing.clone()
    }

    /// Forgets the rows of the seal in progress: their part is installed.
    pub fn end_seal(&mut self) {
        self.sealing = None;
    }
}

impl SealingRows {
    /// Sorts and compresses the rows into an in-memory part.
    pub fn to_part(&self) -> Result<Part, StorageError> {
        let chunks: Vec<&[Row]> = self.chunks.iter().map(|c| c.as_slice()).collect();
        let bytes = rows_to_part(&chunks, self.min_seq, self.max_seq)?;
        Part::from_bytes(bytes)
    }
}

/// Encodes rows (chunks in commit order) as a part; for a repeated
/// (series, t) the last row wins.
pub fn rows_to_part(chunks: &[&[Row]], min_seq: u64, max_seq: u64) -> Result<Vec<u8>, StorageError> {
    let rows = sorted_rows(chunks);
    // In-memory parts are short-lived: a memory merge or the flush re-encodes them.
    let mut w = PartWriter::new(Vec::with_capacity(rows.len() * 3), min_seq, max_seq)
        .map_err(mem_io)?
        .with_encoding(BlockEncoding::Fast);
    let (mut ts, mut vs) = (Vec::new(), Vec::new());
    let mut i = 0;
    while i < rows.len() {
        let id = rows[i].id;
        ts.clear();
        vs.clear();
        while i < rows.len() && rows[i].id == id {
            let r = rows[i];
            if ts.last() == Some(&r.t) {
                if let Some(last) = vs.last_mut() {
                    *last = r.v;
                }
            } else {
                ts.push(r.t);
                vs.push(r.v);
            }
            i += 1;
        }
        w.add_series(id, &ts, &vs).map_err(mem_io)?;
    }
    Ok(w.finish().map_err(mem_io)?.0)
}

/// The rows of `chunks` (in commit order) sorted by (series, time), keeping
/// commit order among equal keys so the last of a repeated (series, t) is
/// the newest write.
///
/// Series ids are spread by their hash, so one stable counting pass on the
/// id's high bits leaves buckets of a few rows, each then sorted on its own:
/// a general comparison sort of a seal's rows was a tenth of ingest CPU.
/// Clustered ids (a narrow range) just make bigger buckets. The pass
/// scatters straight from the chunks, so a seal allocates and faults in one
/// buffer of its rows, not two.
fn sorted_rows(chunks: &[&[Row]]) -> Vec<Row> {
    const MIN_BUCKETED: usize = 4096;
    const ROWS_PER_BUCKET: usize = 8;
    let key = |r: &Row| (r.id, r.t);
    let len: usize = chunks.iter().map(|c| c.len()).sum();
    let rows = || chunks.iter().flat_map(|c| c.iter());
    if len < MIN_BUCKETED {
        let mut sorted: Vec<Row> = rows().copied().collect();
        sorted.sort_by_key(key);
        return sorted;
    }
    let (lo, hi) = rows().fold((u64::MAX, u64::MIN), |(lo, hi), r| (lo.min(r.id), hi.max(r.id)));
    let bucket_bits = (len / ROWS_PER_BUCKET).next_power_of_two().trailing_zeros().min(20);
    let span_bits = u64::BITS - (hi - lo).leading_zeros();
    let shift = span_bits.saturating_sub(bucket_bits);
    let bucket = |r: &Row| ((r.id - lo) >> shift) as usize;
    // starts[b] = first position of bucket b once scattered.
    let mut starts = vec![0usize; (1 << bucket_bits) + 1];
    for r in rows() {
        starts[bucket(r) + 1] += 1;
    }
    for i in 1..starts.len() {
        starts[i] += starts[i - 1];
    }
    let mut sorted = vec![Row { id: 0, t: 0, v: 0.0 }; len];
    let mut next = starts.clone();
    for r in rows() {
        let b = bucket(r);
        sorted[next[b]] = *r;
        next[b] += 1;
    }
    for w in starts.windows(2) {
        if w[1] - w[0] > 1 {
            sorted[w[0]..w[1]].sort_by_key(key);
        }
    }
    sorted
}

fn mem_io(e: std::io::Error) -> StorageError {
    StorageError::io("encode", "<memory part>")(e)
}

impl RowsSnapshot {
    /// Rows of the given series in `[mint, maxt]`, sorted by time, newest
    /// write winning per timestamp; grouped by series id.
    pub fn collect(
        &self,
        wanted: &std::collections::HashSet<u64>,
        mint: i64,
        maxt: i64,
    ) -> std::collections::HashMap<u64, Vec<(i64, f64)>> {
        let mut out: std::collections::HashMap<u64, Vec<(i64, f64)>> = std::collections::HashMap::new();
        for c in &self.chunks {
            for r in c.iter() {
                if r.t >= mint && r.t <= maxt && wanted.contains(&r.id) {
                    out.entry(r.id).or_default().push((r.t, r.v));
                }
            }
        }
        for samples in out.values_mut() {
            samples.sort_by_key(|s| s.0);
            // Keep the last of each run of equal timestamps: the newest write.
            let mut kept: Vec<(i64, f64)> = Vec::with_capacity(samples.len());
            for &s in samples.iter() {
                match kept.last_mut() {
                    Some(last) if last.0 == s.0 => *last = s,
                    _ => kept.push(s),
                }
            }
            *samples = kept;
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    fn row(t: i64) -> Row {
        Row { id: 1, t, v: t as f64 }
    }

    fn visible(buf: &RowBuffer) -> Vec<i64> {
        let wanted: HashSet<u64> = [1].into();
        let got = buf.snapshot().collect(&wanted, i64::MIN, i64::MAX);
        got.get(&1).map_or_else(Vec::new, |s| s.iter().map(|p| p.0).collect())
    }

    #[test]
    fn rows_being_sealed_stay_visible_until_the_seal_ends() {
        let mut buf = RowBuffer::default();
        buf.extend(1, &(0..3000).map(row).collect::<Vec<_>>());
        let sealing = buf.begin_seal().unwrap();
        assert_eq!((buf.len(), buf.unsealed_len()), (3000, 0));
        buf.extend(2, &[row(5000)]);
        assert_eq!(visible(&buf).len(), 3001);
        let part = sealing.to_part().unwrap();
        assert_eq!((part.meta().min_seq, part.meta().max_seq), (1, 1));
        buf.end_seal();
        assert_eq!(visible(&buf), vec![5000]);
        assert_eq!(buf.len(), 1);
    }

    proptest::proptest! {
        #[test]
        fn sorted_rows_is_a_stable_sort_by_series_and_time(
            ids in proptest::collection::vec(proptest::prelude::any::<u64>(), 1..64),
            picks in proptest::collection::vec((0usize..64, 0i64..50), 4096..6000),
            narrow in proptest::prelude::any::<bool>(),
        ) {
            let rows: Vec<Row> = picks
                .iter()
                .enumerate()
                .map(|(i, &(k, t))| {
                    let id = ids[k % ids.len()];
                    Row { id: if narrow { id % 3 } else { id }, t, v: i as f64 }
                })
                .collect();
            let mut want = rows.clone();
            want.sort_by_key(|r| (r.id, r.t));
            // Split into uneven chunks, as a seal's are.
            let (a, rest) = rows.split_at(rows.len() / 3);
            let (b, c) = rest.split_at(rest.len() / 5);
            let got = sorted_rows(&[a, b, &[], c]);
            let bits = |rs: &[Row]| rs.iter().map(|r| (r.id, r.t, r.v.to_bits())).collect::<Vec<_>>();
            proptest::prop_assert_eq!(bits(&got), bits(&want));
        }
    }

    #[test]
    fn extend_fills_chunks_across_commits() {
        let mut buf = RowBuffer::default();
        let mut want = Vec::new();
        // Commits of odd sizes straddle chunk boundaries in every way.
        for (seq, n) in [(1, 1000), (2, 24), (3, 1), (4, 3000), (5, 0), (6, 1023)] {
            let rows: Vec<Row> = (0..n).map(|i| row(want.len() as i64 + i)).collect();
            want.extend(rows.iter().map(|r| r.t));
            buf.extend(seq, &rows);
        }
        assert_eq!(buf.len(), want.len());
        assert!(buf.frozen.iter().all(|c| c.len() == CHUNK_ROWS));
        assert_eq!((buf.min_seq, buf.max_seq), (1, 6));
        assert_eq!(visible(&buf), want);
    }

    #[test]
    fn a_failed_seal_is_retried_with_the_newer_rows() {
        let mut buf = RowBuffer::default();
        buf.extend(1, &[row(10)]);
        buf.begin_seal().unwrap();
        // No end_seal: the part was never installed.
        buf.extend(2, &[row(20)]);
        let again = buf.begin_seal().unwrap();
        let part = again.to_part().unwrap();
        assert_eq!((part.meta().min_seq, part.meta().max_seq), (1, 2));
        assert_eq!(visible(&buf), vec![10, 20]);
        buf.end_seal();
        assert!(buf.begin_seal().is_none());
    }
}
