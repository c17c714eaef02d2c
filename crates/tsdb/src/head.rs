//! The head: a partition's newest committed samples, before they are
//! compressed into a part.
//!
//! Rows are appended in commit order into fixed-size chunks (an append never
//! moves a row), and each row links to the previous row of its series; a
//! table indexed by the series' local number (its dense number in the
//! partition index) holds each series' newest row. A query reads a series'
//! fresh samples by walking its chain, so its cost follows that series'
//! samples, not every unflushed row of the partition.
//!
//! A *generation* is the rows appended between two seals. Sealing closes the
//! open generation (nothing is appended to it after), compresses it while
//! queries keep reading it, and drops it once its part is installed. A
//! snapshot keeps the generations it saw with their lengths at that moment:
//! rows are in commit order, so everything it must not see lies past them.

use std::sync::Arc;

use parking_lot::RwLock;

use crate::part::{BlockEncoding, Part, PartWriter};
use cairn_storage::StorageError;

/// A committed sample as a commit or the WAL gives it to a partition.
#[derive(Debug, Clone, Copy)]
pub struct Row {
    pub id: u64,
    /// The series' local number, or [`UNKNOWN_LOCAL`] when the caller has
    /// not looked it up (a new series, WAL replay): the partition does then.
    pub local: u32,
    pub t: i64,
    pub v: f64,
}

pub const UNKNOWN_LOCAL: u32 = u32::MAX;

/// No row: the end of a chain, or a series without rows in a generation.
const NONE: u32 = u32::MAX;
const CHUNK_ROWS: usize = 4096;
/// Positions are u32 and [`NONE`] is not one.
const MAX_GENERATION_ROWS: usize = NONE as usize;

#[derive(Debug, Clone, Copy)]
struct HeadRow {
    local: u32,
    /// Position of the series' previous row in the generation, or [`NONE`].
    prev: u32,
    t: i64,
    v: f64,
}

#[derive(Default)]
struct GenerationRows {
    chunks: Vec<Vec<HeadRow>>,
    len: usize,
    /// Position of each series' newest row, by local number; [`NONE`] if none.
    newest: Vec<u32>,
    min_seq: u64,
    max_seq: u64,
}

impl GenerationRows {
    fn row(&self, pos: u32) -> &HeadRow {
        let pos = pos as usize;
        &self.chunks[pos / CHUNK_ROWS][pos % CHUNK_ROWS]
    }

    fn push(&mut self, local: u32, t: i64, v: f64) {
        let l = local as usize;
        if l >= self.newest.len() {
            self.newest.resize(l + 1, NONE);
        }
        if self.chunks.last().is_none_or(|c| c.len() == CHUNK_ROWS) {
            self.chunks.push(Vec::with_capacity(CHUNK_ROWS));
        }
        let pos = self.len as u32;
        let prev = std::mem::replace(&mut self.newest[l], pos);
        if let Some(chunk) = self.chunks.last_mut() {
            chunk.push(HeadRow { local, prev, t, v });
        }
        self.len += 1;
    }

    /// Appends the rows of each of `locals` at positions below `visible` to
    /// its `out`, oldest commit first. A series' rows lie far apart (every
    /// other series' rows of a scrape come between), so each is a cache
    /// miss: the chains of several series are walked in lockstep, so their
    /// misses overlap instead of following one another.
    fn series_into(&self, locals: &[u32], visible: usize, mint: i64, maxt: i64, out: &mut [Vec<(i64, f64)>]) {
        const LANES: usize = 16;
        for (locals, out) in locals.chunks(LANES).zip(out.chunks_mut(LANES)) {
            let mut pos = [NONE; LANES];
            let mut start = [0; LANES];
            for (k, (&local, out)) in locals.iter().zip(out.iter()).enumerate() {
                pos[k] = self.newest.get(local as usize).copied().unwrap_or(NONE);
                start[k] = out.len();
            }
            let mut walking = true;
            while walking {
                walking = false;
                for (p, out) in pos.iter_mut().zip(out.iter_mut()) {
                    if *p == NONE {
                        continue;
                    }
                    walking = true;
                    let r = self.row(*p);
                    if (*p as usize) < visible && r.t >= mint && r.t <= maxt {
                        out.push((r.t, r.v));
                    }
                    *p = r.prev;
                }
            }
            for (out, start) in out.iter_mut().zip(start) {
                out[start..].reverse();
            }
        }
    }
}

/// Rows appended between two seals.
#[derive(Default)]
pub struct Generation {
    rows: RwLock<GenerationRows>,
}

impl Generation {
    fn with_series(series: usize) -> Self {
        Self {
            rows: RwLock::new(GenerationRows {
                newest: Vec::with_capacity(series),
                ..GenerationRows::default()
            }),
        }
    }

    fn len(&self) -> usize {
        self.rows.read().len
    }
}

/// A partition's unflushed rows: the open generation commits append to and
/// the closed ones being sealed. Lives under the partition's head lock.
#[derive(Default)]
pub struct Head {
    open: Arc<Generation>,
    /// Closed generations whose part is not installed yet, oldest first.
    sealing: Vec<Arc<Generation>>,
}

/// A point-in-time view of a [`Head`]: later appends are not seen.
#[derive(Clone, Default)]
pub struct HeadSnapshot {
    /// Oldest first, each with its length when the snapshot was taken.
    generations: Vec<(Arc<Generation>, usize)>,
}

/// Closed generations taken by [`Head::begin_seal`], oldest first.
pub struct Sealing {
    generations: Vec<Arc<Generation>>,
}

impl Head {
    /// Rows not yet in a part, including those being sealed.
    pub fn len(&self) -> usize {
        self.sealing.iter().map(|g| g.len()).sum::<usize>() + self.open.len()
    }

    /// Rows appended since the last seal began.
    pub fn unsealed_len(&self) -> usize {
        self.open.len()
    }

    /// Bytes held: rows and the newest-row tables.
    pub fn memory_bytes(&self) -> usize {
        self.sealing
            .iter()
            .chain([&self.open])
            .map(|g| {
                let rows = g.rows.read();
                rows.len * size_of::<HeadRow>() + rows.newest.len() * size_of::<u32>()
            })
            .sum()
    }

    /// Appends the rows of commit `seq`, each with its series' local number.
    pub fn extend(&mut self, seq: u64, rows: impl ExactSizeIterator<Item = (u32, i64, f64)>) {
        if rows.len() == 0 {
            return;
        }
        if self.open.len() + rows.len() > MAX_GENERATION_ROWS {
            self.close_open();
        }
        let mut open = self.open.rows.write();
        if open.len == 0 {
            open.min_seq = seq;
        }
        open.max_seq = seq;
        for (local, t, v) in rows {
            open.push(local, t, v);
        }
    }

    fn close_open(&mut self) {
        let series = self.open.rows.read().newest.len();
        let closed = std::mem::replace(&mut self.open, Arc::new(Generation::with_series(series)));
        self.sealing.push(closed);
    }

    pub fn snapshot(&self) -> HeadSnapshot {
        HeadSnapshot {
            generations: self
                .sealing
                .iter()
                .chain([&self.open])
                .map(|g| (g.clone(), g.len()))
                .filter(|(_, len)| *len > 0)
                .collect(),
        }
    }

    /// Closes the open generation; returns every closed generation (those
    /// of an earlier seal that failed first). They stay visible to
    /// snapshots until [`Self::end_seal`]. `None` if there is nothing to seal.
    pub fn begin_seal(&mut self) -> Option<Sealing> {
        if self.open.len() > 0 {
            self.close_open();
        }
        (!self.sealing.is_empty()).then(|| Sealing {
            generations: self.sealing.clone(),
        })
    }

    /// Forgets the generations of `sealed`: their part is installed.
    pub fn end_seal(&mut self, sealed: &Sealing) {
        self.sealing
            .retain(|g| !sealed.generations.iter().any(|s| Arc::ptr_eq(s, g)));
    }
}

impl HeadSnapshot {
    /// The samples in `[mint, maxt]` of each series in `locals`, in that
    /// order: sorted by time, the newest write winning per timestamp.
    pub fn series(&self, locals: &[u32], mint: i64, maxt: i64) -> Vec<Vec<(i64, f64)>> {
        // Commits wait while a generation is read: let them in between batches.
        const BATCH: usize = 1024;
        let mut out = vec![Vec::new(); locals.len()];
        for (generation, visible) in &self.generations {
            for (locals, out) in locals.chunks(BATCH).zip(out.chunks_mut(BATCH)) {
                generation.rows.read().series_into(locals, *visible, mint, maxt, out);
            }
        }
        for samples in &mut out {
            newest_per_timestamp(samples);
        }
        out
    }
}

/// Sorts one series' samples (in commit order) by time, keeping only the
/// last written of each timestamp.
fn newest_per_timestamp(samples: &mut Vec<(i64, f64)>) {
    let kept = newest_per_timestamp_in_place(samples);
    samples.truncate(kept);
}

/// [`newest_per_timestamp`] within a slice: the kept samples move to its
/// front; returns how many there are.
fn newest_per_timestamp_in_place(samples: &mut [(i64, f64)]) -> usize {
    if samples.is_sorted_by(|a, b| a.0 < b.0) {
        return samples.len();
    }
    // Stable: equal timestamps stay in commit order.
    samples.sort_by_key(|s| s.0);
    let mut kept = 0;
    for i in 0..samples.len() {
        if samples.get(i + 1).is_some_and(|next| next.0 == samples[i].0) {
            continue;
        }
        samples[kept] = samples[i];
        kept += 1;
    }
    kept
}

/// Samples a seal groups by series at once. A full head holds tens of
/// megabytes of rows; copying them all out grouped by series doubled the
/// head's memory at every seal (the process's peak RSS under live
/// ingestion). Slices bound that copy, for one more sequential pass over the
/// rows per slice.
const SEAL_SLICE_ROWS: usize = 1 << 19;

impl Sealing {
    /// Sorts and compresses the rows into an in-memory part. `ids` gives the
    /// series id of each local number in its argument (parts are ordered by id).
    pub fn to_part(&self, ids: impl FnOnce(&[u32]) -> Vec<u64>) -> Result<Part, StorageError> {
        self.to_part_in_slices(ids, SEAL_SLICE_ROWS)
    }

    /// [`Self::to_part`], grouping the series' rows (in id order) about
    /// `slice_rows` at a time: per slice, one stable counting pass over the
    /// rows in commit order scatters that slice's rows straight into place
    /// (a comparison sort of a seal's rows cost a tenth of ingest CPU).
    fn to_part_in_slices(&self, ids: impl FnOnce(&[u32]) -> Vec<u64>, slice_rows: usize) -> Result<Part, StorageError> {
        let guards: Vec<_> = self.generations.iter().map(|g| g.rows.read()).collect();
        let gens: Vec<&GenerationRows> = guards.iter().map(|g| &**g).collect();
        let min_seq = gens.iter().filter(|g| g.len > 0).map(|g| g.min_seq).min().unwrap_or(0);
        let max_seq = gens.iter().map(|g| g.max_seq).max().unwrap_or(0);
        let all_rows = || gens.iter().flat_map(|g| g.chunks.iter().flatten());
        let series = gens.iter().map(|g| g.newest.len()).max().unwrap_or(0);
        // Per-series arrays span every series of the partition (millions),
        // so they hold u32s: a seal's rows per series fit, and this memory
        // comes on top of the head's at every seal.
        let mut count = vec![0u32; series];
        for r in all_rows() {
            count[r.local as usize] += 1;
        }
        // (id, local, rows) of the series with rows, in id order.
        let mut order: Vec<(u64, u32, u32)> = {
            let locals: Vec<u32> = (0..series as u32).filter(|&l| count[l as usize] > 0).collect();
            ids(&locals)
                .into_iter()
                .zip(locals)
                .map(|(id, local)| (id, local, count[local as usize]))
                .collect()
        };
        order.sort_unstable_by_key(|&(id, ..)| id);
        let total: usize = order.iter().map(|&(.., rows)| rows as usize).sum();
        // In-memory parts are short-lived: a memory merge or the flush re-encodes them.
        let mut w = PartWriter::new(Vec::with_capacity(total * 3), min_seq, max_seq)
            .map_err(mem_io)?
            .with_encoding(BlockEncoding::Fast);
        // Where the next row of each series of the slice goes (the counts'
        // memory, which `order` now carries); OUTSIDE for the other series.
        const OUTSIDE: u32 = u32::MAX;
        let mut next = count;
        next.fill(OUTSIDE);
        let mut rows: Vec<(i64, f64)> = Vec::new();
        let (mut ts, mut vs) = (Vec::new(), Vec::new());
        let mut from = 0;
        while from < order.len() {
            let (mut to, mut n) = (from, 0usize);
            while to < order.len() && (to == from || n + order[to].2 as usize <= slice_rows) {
                next[order[to].1 as usize] = n as u32;
                n += order[to].2 as usize;
                to += 1;
            }
            rows.clear();
            rows.resize(n, (0, 0.0));
            for r in all_rows() {
                let slot = &mut next[r.local as usize];
                if *slot != OUTSIDE {
                    rows[*slot as usize] = (r.t, r.v);
                    *slot += 1;
                }
            }
            let mut start = 0;
            for &(id, local, count) in &order[from..to] {
                let end = start + count as usize;
                next[local as usize] = OUTSIDE;
                let kept = newest_per_timestamp_in_place(&mut rows[start..end]);
                ts.clear();
                vs.clear();
                ts.extend(rows[start..start + kept].iter().map(|s| s.0));
                vs.extend(rows[start..start + kept].iter().map(|s| s.1));
                w.add_series(id, &ts, &vs).map_err(mem_io)?;
                start = end;
            }
            from = to;
        }
        w.finish_in_memory()
    }
}

fn mem_io(e: std::io::Error) -> StorageError {
    StorageError::io("encode", "<memory part>")(e)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use proptest::prelude::*;

    use super::*;

    fn append(head: &mut Head, seq: u64, rows: &[(u32, i64)]) {
        head.extend(seq, rows.iter().map(|&(l, t)| (l, t, seq as f64)));
    }

    fn visible(snap: &HeadSnapshot, local: u32) -> Vec<(i64, f64)> {
        snap.series(&[local], i64::MIN, i64::MAX).remove(0)
    }

    /// Ids that sort in the reverse of local numbers, to show parts follow ids.
    fn ids(locals: &[u32]) -> Vec<u64> {
        locals.iter().map(|&l| 1000 - u64::from(l)).collect()
    }

    fn part_series(part: &Part) -> Vec<(u64, Vec<(i64, f64)>)> {
        let mut out: Vec<(u64, Vec<(i64, f64)>)> = Vec::new();
        for block in part.blocks() {
            let (mut ts, mut vs) = (Vec::new(), Vec::new());
            part.read_block(&block, &mut ts, &mut vs).unwrap();
            if out.last().is_none_or(|(id, _)| *id != block.id) {
                out.push((block.id, Vec::new()));
            }
            out.last_mut().unwrap().1.extend(ts.into_iter().zip(vs));
        }
        out
    }

    #[test]
    fn rows_being_sealed_stay_visible_until_the_seal_ends() {
        let mut head = Head::default();
        append(&mut head, 1, &(0..3000).map(|t| (1, t)).collect::<Vec<_>>());
        let sealing = head.begin_seal().unwrap();
        assert_eq!((head.len(), head.unsealed_len()), (3000, 0));
        append(&mut head, 2, &[(1, 5000)]);
        assert_eq!(visible(&head.snapshot(), 1).len(), 3001);
        let part = sealing.to_part(ids).unwrap();
        assert_eq!((part.meta().min_seq, part.meta().max_seq), (1, 1));
        head.end_seal(&sealing);
        assert_eq!(visible(&head.snapshot(), 1), vec![(5000, 2.0)]);
        assert_eq!(head.len(), 1);
    }

    #[test]
    fn a_snapshot_does_not_see_later_commits() {
        let mut head = Head::default();
        append(&mut head, 1, &[(0, 10), (1, 10)]);
        let before = head.snapshot();
        append(&mut head, 2, &[(0, 20), (1, 10)]);
        // Also across a seal: the snapshot keeps the generation it saw.
        let sealing = head.begin_seal().unwrap();
        append(&mut head, 3, &[(0, 30)]);
        head.end_seal(&sealing);
        assert_eq!(visible(&before, 0), vec![(10, 1.0)]);
        assert_eq!(visible(&before, 1), vec![(10, 1.0)]);
        assert_eq!(visible(&head.snapshot(), 0), vec![(30, 3.0)]);
    }

    #[test]
    fn a_failed_seal_is_retried_with_the_newer_rows() {
        let mut head = Head::default();
        append(&mut head, 1, &[(1, 10)]);
        head.begin_seal().unwrap();
        // No end_seal: the part was never installed.
        append(&mut head, 2, &[(1, 20)]);
        let again = head.begin_seal().unwrap();
        let part = again.to_part(ids).unwrap();
        assert_eq!((part.meta().min_seq, part.meta().max_seq), (1, 2));
        assert_eq!(part_series(&part), vec![(999, vec![(10, 1.0), (20, 2.0)])]);
        assert_eq!(visible(&head.snapshot(), 1), vec![(10, 1.0), (20, 2.0)]);
        head.end_seal(&again);
        assert!(head.begin_seal().is_none());
    }

    #[test]
    fn a_seal_that_began_earlier_leaves_later_generations() {
        let mut head = Head::default();
        append(&mut head, 1, &[(0, 10)]);
        let first = head.begin_seal().unwrap();
        append(&mut head, 2, &[(0, 20)]);
        head.close_open();
        head.end_seal(&first);
        assert_eq!(visible(&head.snapshot(), 0), vec![(20, 2.0)]);
        assert_eq!(head.len(), 1);
    }

    #[test]
    fn rows_fill_chunks_across_commits() {
        let mut head = Head::default();
        let mut want = Vec::new();
        // Commits of odd sizes straddle chunk boundaries in every way.
        for (seq, n) in [(1, 4000), (2, 96), (3, 1), (4, 9000), (5, 0), (6, 4095)] {
            let rows: Vec<(u32, i64)> = (0..n).map(|i| (7, want.len() as i64 + i)).collect();
            want.extend(rows.iter().map(|&(_, t)| (t, seq as f64)));
            append(&mut head, seq, &rows);
        }
        assert_eq!(head.len(), want.len());
        assert_eq!(visible(&head.snapshot(), 7), want);
        assert!(visible(&head.snapshot(), 6).is_empty());
        assert!(visible(&head.snapshot(), 100).is_empty());
    }

    #[test]
    fn reads_are_cut_to_the_range() {
        let mut head = Head::default();
        append(&mut head, 1, &[(3, 10), (3, 20), (3, 30), (3, 40)]);
        let got = head.snapshot().series(&[3, 3], 20, 30);
        assert_eq!(got, vec![vec![(20, 1.0), (30, 1.0)]; 2]);
    }

    /// One step of a head's life in the model test.
    #[derive(Debug, Clone)]
    enum Step {
        /// A commit of (series, timestamp) rows.
        Commit(Vec<(u32, i64)>),
        Snapshot,
        BeginSeal,
        EndSeal,
    }

    fn step() -> impl Strategy<Value = Step> {
        prop_oneof![
            6 => proptest::collection::vec((0u32..6, 0i64..40), 0..12).prop_map(Step::Commit),
            2 => Just(Step::Snapshot),
            1 => Just(Step::BeginSeal),
            1 => Just(Step::EndSeal),
        ]
    }

    /// What each series holds after `commits`: per timestamp the newest write.
    fn model(commits: &[(u64, Vec<(u32, i64)>)]) -> BTreeMap<u32, BTreeMap<i64, f64>> {
        let mut m: BTreeMap<u32, BTreeMap<i64, f64>> = BTreeMap::new();
        for (seq, rows) in commits {
            for &(l, t) in rows {
                m.entry(l).or_default().insert(t, *seq as f64);
            }
        }
        m
    }

    proptest! {
        /// Every snapshot reads exactly the commits before it (minus those
        /// whose seal ended before it), and a seal's part holds exactly its rows.
        #[test]
        fn snapshots_and_seals_match_a_model(
            steps in proptest::collection::vec(step(), 1..60),
            slice_rows in prop_oneof![Just(1usize), 2usize..20, Just(SEAL_SLICE_ROWS)],
        ) {
            let mut head = Head::default();
            // Commits still in the head, and those in the seal in progress.
            let mut in_head: Vec<(u64, Vec<(u32, i64)>)> = Vec::new();
            let mut sealing: Option<(Sealing, usize)> = None;
            let mut snaps = Vec::new();
            let mut seq = 0;
            for s in steps {
                match s {
                    Step::Commit(rows) => {
                        seq += 1;
                        append(&mut head, seq, &rows);
                        if !rows.is_empty() {
                            in_head.push((seq, rows));
                        }
                    }
                    Step::Snapshot => snaps.push((head.snapshot(), model(&in_head))),
                    Step::BeginSeal => {
                        if let Some(s) = head.begin_seal() {
                            sealing = Some((s, in_head.len()));
                        }
                    }
                    Step::EndSeal => {
                        if let Some((s, n)) = sealing.take() {
                            let part = s.to_part_in_slices(ids, slice_rows).unwrap();
                            let want: Vec<(u64, Vec<(i64, f64)>)> = model(&in_head[..n])
                                .into_iter()
                                .rev()
                                .map(|(l, m)| (1000 - u64::from(l), m.into_iter().collect()))
                                .collect();
                            prop_assert_eq!(part_series(&part), want);
                            head.end_seal(&s);
                            in_head.drain(..n);
                        }
                    }
                }
            }
            snaps.push((head.snapshot(), model(&in_head)));
            for (snap, want) in snaps {
                // Repeated past one lockstep group of chains, and one never written.
                let locals: Vec<u32> = (0..7).rev().cycle().take(23).chain([100]).collect();
                for (l, got) in locals.iter().zip(snap.series(&locals, i64::MIN, i64::MAX)) {
                    let want: Vec<(i64, f64)> =
                        want.get(l).map(|m| m.iter().map(|(&t, &v)| (t, v)).collect()).unwrap_or_default();
                    prop_assert_eq!(got, want, "series {}", l);
                }
            }
        }
    }
}
