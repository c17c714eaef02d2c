//! Merges of a partition's histogram files: which files a merge takes,
//! and a series' bodies merged a block per file at a time.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashSet};
use std::fs;
use std::path::{Path, PathBuf};

use cairn_codec::HistogramValue;
use cairn_storage::StorageError;
use parking_lot::RwLock;

use super::file::{Encoded, FileWriter, write_file};
use super::{BLOCK_SAMPLES, Block, HistogramStore};
use crate::quarantine::{FileKind, Quarantine};

impl HistogramStore {
    /// Rewrites the newest files (see [`merge_from`]) as one under the
    /// newest one's name (replaced atomically; it then holds what they do,
    /// newest body winning, less the bodies of the series `dead` names, of
    /// the ids it is given: the partition's deleted ones; it is called
    /// without the lock), then removes the others. A crash in between
    /// leaves files the merged one overrides. Flushes go on meanwhile:
    /// their files are newer than every merged one and stay after it.
    /// Merges must not overlap (the caller's partition serialises them). A
    /// block that does not decode is left out and its file copied to the
    /// quarantine; returns whether any was.
    pub fn merge_files(
        lock: &RwLock<Self>,
        dir: &Path,
        dead: impl FnOnce(&[u64]) -> HashSet<u64>,
        quarantine: &Quarantine,
    ) -> Result<bool, StorageError> {
        // Where each series' blocks in the merged files lie: the merge then
        // reads and writes a block at a time, without the lock.
        let (mut series, merged) = {
            let store = lock.read();
            let sizes: Vec<u64> = store.files.iter().map(|f| f.len).collect();
            if sizes.len() < 2 {
                return Ok(false);
            }
            let merged = store.files[merge_from(&sizes)..].to_vec();
            let first = merged[0].seq;
            let mut series: Vec<(u64, Vec<Block>)> = store
                .flushed
                .iter()
                .map(|(&id, blocks)| (id, blocks.iter().filter(|b| b.file.seq >= first).cloned().collect()))
                .filter(|(_, blocks): &(u64, Vec<Block>)| !blocks.is_empty())
                .collect();
            series.sort_unstable_by_key(|&(id, _)| id);
            (series, merged)
        };
        let ids: Vec<u64> = series.iter().map(|&(id, _)| id).collect();
        let dead = dead(&ids);
        series.retain(|(id, _)| !dead.contains(id));
        let (first, newest) = (merged[0].seq, merged[merged.len() - 1].seq);
        let damaged: RefCell<BTreeMap<PathBuf, String>> = RefCell::default();
        let write = |w: &mut FileWriter<'_>| {
            for (id, blocks) in &series {
                merge_series(w, *id, blocks, &damaged)?;
            }
            Ok(())
        };
        // Damaged files are copied before the merged file replaces the newest.
        let (file, entries) = write_file(dir, newest, write, || {
            for (path, reason) in damaged.borrow().iter() {
                quarantine.copy(path, FileKind::Histograms, reason)?;
            }
            Ok(())
        })?;
        {
            let mut store = lock.write();
            let was_merged = |seq: u64| (first..=newest).contains(&seq);
            store.flushed.retain(|_, blocks| {
                blocks.retain(|b| !was_merged(b.file.seq));
                !blocks.is_empty()
            });
            store.files.retain(|f| !was_merged(f.seq));
            store.attach(file, entries);
        }
        for f in &merged[..merged.len() - 1] {
            fs::remove_file(&f.path).map_err(StorageError::io("remove merged histogram file", &f.path))?;
        }
        crate::wal::sync_dir(dir)?;
        Ok(!damaged.into_inner().is_empty())
    }
}

/// Where the files a merge rewrites begin, given the files' sizes oldest
/// first: the newest two, and each older file no larger than the newer
/// ones taken. Files then grow by about doubling, so a body is rewritten a
/// few times a day rather than at every merge, and a merge leaves at most
/// as many files as it found less one.
fn merge_from(sizes: &[u64]) -> usize {
    let mut from = sizes.len().saturating_sub(2);
    let mut taken: u64 = sizes[from..].iter().sum();
    while from > 0 && sizes[from - 1] <= taken {
        from -= 1;
        taken += sizes[from];
    }
    from
}

/// Writes series `id`'s histograms of `blocks` (oldest file first, each
/// file's by time) merged by timestamp, the newest file's body winning,
/// in blocks of [`BLOCK_SAMPLES`]. Holds one decoded block per file and
/// the block being made. A block that does not decode is left out and
/// its file noted in `damaged`.
fn merge_series(
    w: &mut FileWriter<'_>,
    id: u64,
    blocks: &[Block],
    damaged: &RefCell<BTreeMap<PathBuf, String>>,
) -> Result<(), StorageError> {
    let mut files: Vec<FileBodies> = blocks
        .chunk_by(|a, b| a.file.seq == b.file.seq)
        .map(|blocks| FileBodies {
            blocks,
            ts: Vec::new(),
            hs: Vec::new(),
            at: 0,
        })
        .collect();
    let (mut ts, mut hs) = (Vec::with_capacity(BLOCK_SAMPLES), Vec::with_capacity(BLOCK_SAMPLES));
    loop {
        // The earliest timestamp a file holds next, and the newest file holding it.
        let mut next: Option<(i64, usize)> = None;
        for (i, f) in files.iter_mut().enumerate() {
            if let Some(t) = f.peek(id, damaged)?
                && next.is_none_or(|(earliest, _)| t <= earliest)
            {
                next = Some((t, i));
            }
        }
        let Some((t, newest)) = next else { break };
        let winner = &mut files[newest];
        let h = std::mem::take(&mut winner.hs[winner.at]);
        for f in &mut files {
            while f.peek(id, damaged)? == Some(t) {
                f.at += 1;
            }
        }
        // A file's blocks out of order (written so by no version) cannot
        // make the merged block's timestamps go back.
        if ts.last().is_some_and(|&last| t <= last) {
            continue;
        }
        ts.push(t);
        hs.push(h);
        if ts.len() == BLOCK_SAMPLES {
            w.add(&Encoded::new(id, &ts, &hs))?;
            ts.clear();
            hs.clear();
        }
    }
    if !ts.is_empty() {
        w.add(&Encoded::new(id, &ts, &hs))?;
    }
    Ok(())
}

/// One series' bodies in one file, decoded a block at a time for a merge.
struct FileBodies<'a> {
    blocks: &'a [Block],
    ts: Vec<i64>,
    hs: Vec<HistogramValue>,
    /// The next body of the decoded block.
    at: usize,
}

impl FileBodies<'_> {
    /// The timestamp of the next body, decoding the next block when the
    /// last is used up; `None` once all are.
    fn peek(&mut self, id: u64, damaged: &RefCell<BTreeMap<PathBuf, String>>) -> Result<Option<i64>, StorageError> {
        while self.at == self.ts.len() {
            let Some((block, rest)) = self.blocks.split_first() else {
                return Ok(None);
            };
            self.blocks = rest;
            self.at = 0;
            (self.ts, self.hs) = match block.decode(id) {
                Ok(decoded) => decoded,
                Err(StorageError::Corrupt { path, reason }) => {
                    damaged.borrow_mut().entry(path).or_insert(reason);
                    (Vec::new(), Vec::new())
                }
                Err(e) => return Err(e),
            };
        }
        Ok(Some(self.ts[self.at]))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, HashSet};
    use std::fs;
    use std::sync::Arc;

    use cairn_model::Histogram;
    use parking_lot::RwLock;

    use super::super::file::{decode_file, file_name};
    use super::super::tests::h;
    use super::super::{BLOCK_SAMPLES, HistogramStore, MAX_FILES};
    use super::merge_from;
    use crate::quarantine::Quarantine;

    fn none_dead(_: &[u64]) -> HashSet<u64> {
        HashSet::new()
    }

    #[test]
    fn a_merge_takes_the_newest_files_and_the_older_ones_no_larger_than_those() {
        assert_eq!(merge_from(&[100, 10, 10, 1, 1]), 3);
        assert_eq!(merge_from(&[100, 1, 1, 1, 1, 1, 1, 1, 1]), 1);
        assert_eq!(merge_from(&[8, 1, 1, 1, 1, 1, 1, 1, 1]), 0);
        assert_eq!(merge_from(&[4, 2, 1, 1]), 0);
        assert_eq!(merge_from(&[1, 5, 5]), 0);
        assert_eq!(merge_from(&[50, 5, 5]), 1);
    }

    /// Flushes and merges of thousands of bodies per series: blocks stay
    /// within [`BLOCK_SAMPLES`], later writes of a timestamp win through
    /// every merge, the file count stays bounded, and a reload reads the same.
    #[test]
    fn series_of_many_bodies_merge_block_by_block_newest_winning() {
        let dir = tempfile::tempdir().unwrap();
        let quarantine = Quarantine::new(dir.path());
        let store = RwLock::new(HistogramStore::default());
        let mut want: BTreeMap<(u64, i64), Arc<Histogram>> = BTreeMap::new();
        for seq in 1..=40u64 {
            // Each flush writes 700 new timestamps and rewrites 300 older ones.
            let first = (seq as i64 - 1) * 700;
            for t in (first - 300).max(0)..first + 700 {
                for id in [5, 9] {
                    let body = h((seq * 100_000 + t as u64 + id) as f64);
                    store.write().insert(id, t, body.clone());
                    want.insert((id, t), body);
                }
            }
            HistogramStore::flush(&store, dir.path(), seq).unwrap();
            if store.read().wants_merge() {
                HistogramStore::merge_files(&store, dir.path(), none_dead, &quarantine).unwrap();
            }
            assert!(store.read().files.len() <= MAX_FILES);
        }
        let sizes: Vec<u64> = store.read().files.iter().map(|f| f.len).collect();
        assert!(
            sizes.len() > 1,
            "the oldest, largest file outlives later merges: {sizes:?}"
        );
        for s in [&*store.read(), &HistogramStore::load(dir.path()).unwrap()] {
            for id in [5, 9] {
                let got: Vec<(i64, Arc<Histogram>)> = s.read(id, 0, i64::MAX).unwrap().into_iter().collect();
                let expected: Vec<(i64, Arc<Histogram>)> = want
                    .range((id, 0)..=(id, i64::MAX))
                    .map(|(&(_, t), h)| (t, h.clone()))
                    .collect();
                assert_eq!(got.len(), expected.len());
                assert!(got == expected, "series {id} differs after merges");
                assert_eq!(s.read(id, 10_000, 10_009).unwrap().len(), 10);
            }
            for blocks in s.flushed.values() {
                for b in blocks {
                    let (ts, _) = b.decode(0).unwrap();
                    assert!(ts.len() <= BLOCK_SAMPLES && ts.windows(2).all(|w| w[0] < w[1]));
                    assert_eq!((ts[0], ts[ts.len() - 1]), (b.mint, b.maxt));
                }
            }
        }
    }
    #[test]
    fn files_past_the_limit_merge_into_one_keeping_the_newest_bodies_of_live_series() {
        let dir = tempfile::tempdir().unwrap();
        let store = RwLock::new(HistogramStore::default());
        for seq in 1..=(MAX_FILES as u64 + 1) {
            store.write().insert(1, 10, h(seq as f64));
            store.write().insert(2, seq as i64, h(seq as f64));
            store.write().insert(3, seq as i64, h(seq as f64));
            HistogramStore::flush(&store, dir.path(), seq).unwrap();
        }
        assert!(store.read().wants_merge());
        // Series 3 is deleted by the time the files merge.
        let dead = |ids: &[u64]| ids.iter().copied().filter(|&id| id == 3).collect();
        assert!(!HistogramStore::merge_files(&store, dir.path(), dead, &Quarantine::new(dir.path())).unwrap());
        assert!(!store.read().wants_merge());
        let files = fs::read_dir(dir.path()).unwrap().count();
        assert_eq!(files, 1);
        for s in [&*store.read(), &HistogramStore::load(dir.path()).unwrap()] {
            assert_eq!(
                s.read(1, 0, 100).unwrap().into_values().collect::<Vec<_>>(),
                vec![h(9.0)]
            );
            assert_eq!(s.read(2, 0, 100).unwrap().len(), MAX_FILES + 1);
            assert!(!s.has(3));
        }
    }

    #[test]
    fn a_merge_of_the_files_leaves_out_blocks_that_do_not_decode_and_quarantines_their_file() {
        let dir = tempfile::tempdir().unwrap();
        let quarantine = Quarantine::new(dir.path());
        let store = RwLock::new(HistogramStore::default());
        for seq in 1..=MAX_FILES as u64 {
            store.write().insert(1, seq as i64, h(seq as f64));
            store.write().insert(2, seq as i64, h(seq as f64));
            HistogramStore::flush(&store, dir.path(), seq).unwrap();
        }
        // Series 1's block of the second file rots after it was loaded.
        let path = dir.path().join(file_name(2));
        let bytes = fs::read(&path).unwrap();
        let entries = decode_file(&bytes).unwrap();
        let block = entries.iter().find(|e| e.id == 1).unwrap().bytes.clone();
        let mut rotten = bytes.clone();
        rotten[block.start as usize..block.end as usize].fill(0xff);
        fs::write(&path, &rotten).unwrap();
        assert!(store.read().read(1, 0, 100).is_err());
        store.write().insert(2, 100, h(100.0));
        HistogramStore::flush(&store, dir.path(), 100).unwrap();
        let lost = HistogramStore::merge_files(&store, dir.path(), none_dead, &quarantine).unwrap();
        assert!(lost);
        assert_eq!(
            fs::read(dir.path().join("quarantine").join(file_name(2))).unwrap(),
            rotten
        );
        assert_eq!(quarantine.counts()[3], ("histograms", 1));
        let kept: Vec<i64> = store.read().read(1, 0, 100).unwrap().into_keys().collect();
        assert_eq!(kept, [1, 3, 4, 5, 6, 7, 8]);
        assert_eq!(store.read().read(2, 0, 100).unwrap().len(), MAX_FILES + 1);
    }

    /// A flush that lands while a merge writes its file stays the newest:
    /// its bodies win over the merged ones, in memory and after a reload.
    #[test]
    fn a_flush_during_a_merge_keeps_its_file_after_the_merged_one() {
        let dir = tempfile::tempdir().unwrap();
        let store = RwLock::new(HistogramStore::default());
        for seq in 1..=MAX_FILES as u64 + 1 {
            store.write().insert(1, 10, h(seq as f64));
            store.write().insert(2, seq as i64, h(seq as f64));
            HistogramStore::flush(&store, dir.path(), seq).unwrap();
        }
        // Called by the merge after it took the files it merges, without the lock.
        let flush_meanwhile = |_: &[u64]| {
            store.write().insert(1, 10, h(100.0));
            store.write().insert(2, 100, h(100.0));
            HistogramStore::flush(&store, dir.path(), 100).unwrap();
            HashSet::new()
        };
        HistogramStore::merge_files(&store, dir.path(), flush_meanwhile, &Quarantine::new(dir.path())).unwrap();
        let seqs: Vec<u64> = store.read().files.iter().map(|f| f.seq).collect();
        assert_eq!(seqs, [MAX_FILES as u64 + 1, 100]);
        for s in [&*store.read(), &HistogramStore::load(dir.path()).unwrap()] {
            assert_eq!(
                s.read(1, 0, 100).unwrap().into_values().collect::<Vec<_>>(),
                vec![h(100.0)]
            );
            assert_eq!(s.read(2, 0, 100).unwrap().len(), MAX_FILES + 2);
            for blocks in s.flushed.values() {
                assert!(blocks.windows(2).all(|w| w[0].file.seq <= w[1].file.seq));
            }
        }
    }
}
