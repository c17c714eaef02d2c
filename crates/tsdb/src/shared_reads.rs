//! Reads shared by the series of one select. Parts keep blocks in series id
//! order and a metric's series have neighbouring ids (`index::series_hash`),
//! so the blocks a selector needs from one stored part (file or object) lie in one region with
//! small gaps (series it filters out). Reading each series' blocks on its own
//! costs a system call per series and part; here the region is cut into a
//! few ranges, each read once when the first of its blocks is decoded and
//! shared by the readers of all of them (series are read in label order, not
//! in id order, so a range is kept until its last series has been read).
//! A merge, which takes every block of its inputs in order, reads each
//! input a megabyte at a time the same way ([`SequentialReads`]).

use std::sync::Arc;

use crate::part::{Part, SharedRead};
use crate::series_reader::{Ranked, Source};

/// Blocks at most this far apart are read together: the bytes between
/// cost less to copy than another call.
const MAX_GAP: u64 = 4 << 10;
/// Longest shared read.
const MAX_READ: u64 = 1 << 20;
/// Bytes one select may hold in shared reads; the blocks of a select
/// that needs more are read per series, as they are streamed.
pub const SELECT_BUDGET: u64 = 32 << 20;

/// Gives the blocks of stored part `part` among `sources` (one list per
/// series, the series in ascending id order) shared reads, within what is
/// left of `budget`.
pub fn share_part_reads(part: &Arc<Part>, sources: &mut [Vec<Ranked>], budget: &mut u64) {
    if !part.is_stored() {
        return;
    }
    // Blocks of this part, in offset order: series come in id order, and
    // each series' blocks in time order, which is their order in the part.
    let mut blocks: Vec<(usize, usize, u64, u64)> = Vec::new();
    for (s, list) in sources.iter().enumerate() {
        for (i, ranked) in list.iter().enumerate() {
            if let Source::Block { part: p, block, .. } = &ranked.source
                && Arc::ptr_eq(p, part)
            {
                blocks.push((s, i, block.start(), block.end()));
            }
        }
    }
    let mut at = 0;
    while at < blocks.len() {
        let (_, _, start, mut end) = blocks[at];
        let mut next = at + 1;
        while let Some(&(_, _, s, e)) = blocks.get(next) {
            if s < end || s - end > MAX_GAP || e - start > MAX_READ {
                break;
            }
            end = e;
            next += 1;
        }
        // A lone block gains nothing from sharing.
        if next - at > 1 {
            if end - start > *budget {
                return;
            }
            *budget -= end - start;
            let shared = Arc::new(SharedRead::new(part, start, end));
            for &(s, i, _, _) in &blocks[at..next] {
                if let Source::Block { shared: slot, .. } = &mut sources[s][i].source {
                    *slot = Some(shared.clone());
                }
            }
        }
        at = next;
    }
}

/// Shared reads of stored parts whose blocks are all taken in offset order, as
/// a merge takes them: each read covers the next [`MAX_READ`] bytes of its
/// part, so a merge costs a system call per megabyte of input rather than
/// one per series and part.
pub struct SequentialReads {
    current: Vec<Option<Arc<SharedRead>>>,
    read_bytes: u64,
}

impl SequentialReads {
    /// For `parts` inputs, each named by its position.
    pub fn new(parts: usize) -> Self {
        Self::with_read_bytes(parts, MAX_READ)
    }

    fn with_read_bytes(parts: usize, read_bytes: u64) -> Self {
        Self {
            current: vec![None; parts],
            read_bytes,
        }
    }

    /// Gives `ranked`, a block of input `input`, the read covering it,
    /// starting the next read of that part if the current one ends before it.
    pub fn share(&mut self, input: usize, ranked: &mut Ranked) {
        let Source::Block {
            part, block, shared, ..
        } = &mut ranked.source
        else {
            return;
        };
        if !part.is_stored() {
            return;
        }
        let current = &mut self.current[input];
        if !current.as_ref().is_some_and(|read| read.covers(block)) {
            let end = (block.start() + self.read_bytes)
                .min(part.size_bytes())
                .max(block.end());
            *current = Some(Arc::new(SharedRead::new(part, block.start(), end)));
        }
        *shared = current.clone();
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use cairn_storage::SampleBlocks;

    use super::*;
    use crate::part::PartWriter;
    use crate::partition::sources_of;
    use crate::series_reader::SeriesReader;

    /// A file part of 3,000 series (ids 0..3000), series `id` holding
    /// `id % 7 + 1` samples in each of two block windows.
    fn file_part(dir: &std::path::Path) -> Arc<Part> {
        let mut w = PartWriter::new(Vec::new(), 1, 2).unwrap();
        for id in 0..3000u64 {
            let n = id % 7 + 1;
            let ts: Vec<i64> = (0..n as i64)
                .flat_map(|i| [i * 1000, crate::part::BLOCK_SPAN_MS + i * 1000])
                .collect::<std::collections::BTreeSet<_>>()
                .into_iter()
                .collect();
            let vs: Vec<f64> = ts.iter().map(|&t| (id * 1_000_000) as f64 + t as f64).collect();
            w.add_series(id, &ts, &vs).unwrap();
        }
        let path = dir.join("p.cpart");
        std::fs::write(&path, w.finish().unwrap().0).unwrap();
        Arc::new(Part::open(&path).unwrap())
    }

    fn read_all(sources: Vec<Vec<Ranked>>) -> Vec<Vec<(i64, u64)>> {
        // Read in an order unlike the id order, as label order would be.
        let mut out: Vec<(usize, Vec<(i64, u64)>)> = sources
            .into_iter()
            .enumerate()
            .rev()
            .map(|(i, s)| {
                let (mut ts, mut vs) = (Vec::new(), Vec::new());
                let range = SeriesReader::new(s, i64::MIN, i64::MAX)
                    .read_into(&mut ts, &mut vs)
                    .unwrap();
                (
                    i,
                    ts[range.clone()]
                        .iter()
                        .zip(&vs[range])
                        .map(|(&t, v)| (t, v.to_bits()))
                        .collect(),
                )
            })
            .collect();
        out.sort_by_key(|(i, _)| *i);
        out.into_iter().map(|(_, s)| s).collect()
    }

    /// Shared reads of `ids` within `budget`: the sources, the distinct
    /// reads, how many blocks have one, and the bytes used.
    fn plan(part: &Arc<Part>, ids: &[u64], budget: u64) -> (Vec<Vec<Ranked>>, usize, usize, u64) {
        let parts = [part.clone()];
        let mut cursors = vec![part.block_cursor()];
        let mut sources: Vec<Vec<Ranked>> = ids
            .iter()
            .map(|&id| {
                let mut sources = Vec::new();
                sources_of(
                    &parts,
                    &mut cursors,
                    id,
                    i64::MIN,
                    i64::MAX,
                    &HashMap::new(),
                    &mut sources,
                );
                sources
            })
            .collect();
        let mut left = budget;
        share_part_reads(part, &mut sources, &mut left);
        let mut reads: Vec<*const SharedRead> = sources
            .iter()
            .flatten()
            .filter_map(|r| match &r.source {
                Source::Block { shared: Some(s), .. } => Some(Arc::as_ptr(s)),
                _ => None,
            })
            .collect();
        let shared_blocks = reads.len();
        reads.dedup();
        (sources, reads.len(), shared_blocks, budget - left)
    }

    #[test]
    fn shared_reads_yield_what_reads_per_series_do() {
        let dir = tempfile::tempdir().unwrap();
        let part = file_part(dir.path());
        let ids = |step| (0..3000).step_by(step).collect::<Vec<u64>>();
        let plain = |step| plan(&part, &ids(step), 0).0;
        let blocks = |sources: &Vec<Vec<Ranked>>| sources.iter().map(Vec::len).sum::<usize>();

        // Neighbours, or small gaps between them: one read for all.
        for step in [1, 3] {
            let (shared, reads, shared_blocks, _) = plan(&part, &ids(step), SELECT_BUDGET);
            assert_eq!((reads, shared_blocks), (1, blocks(&shared)));
            assert_eq!(read_all(shared), read_all(plain(step)));
        }
        // Gaps too wide to read across: a read per series (two blocks each).
        let (shared, reads, _, used) = plan(&part, &ids(1000), SELECT_BUDGET);
        assert_eq!(reads, 3);
        assert_eq!(read_all(shared), read_all(plain(1000)));
        // A budget for some of them: the rest read per series.
        let (shared, reads, shared_blocks, within) = plan(&part, &ids(1000), used / 2);
        assert!(
            reads > 0 && reads < 3 && within <= used / 2,
            "{reads} reads, {within} bytes"
        );
        assert!(shared_blocks < blocks(&shared));
        assert_eq!(read_all(shared), read_all(plain(1000)));
        // No budget: no shared read.
        assert_eq!(plan(&part, &ids(1), 0).1, 0);
    }

    #[test]
    fn sequential_reads_cover_a_part_in_consecutive_reads() {
        let dir = tempfile::tempdir().unwrap();
        let part = file_part(dir.path());
        const READ: u64 = 4096;
        let mut reads = SequentialReads::with_read_bytes(1, READ);
        let mut sources: Vec<Vec<Ranked>> = Vec::new();
        let mut distinct: Vec<Arc<SharedRead>> = Vec::new();
        let mut ids: Vec<u64> = Vec::new();
        for block in part.blocks() {
            let mut ranked = Ranked::block(&part, block, Vec::new());
            reads.share(0, &mut ranked);
            let Source::Block { shared: Some(read), .. } = &ranked.source else {
                panic!("a block of a file part without a read");
            };
            assert!(read.covers(&block));
            if !distinct.last().is_some_and(|last| Arc::ptr_eq(last, read)) {
                distinct.push(read.clone());
            }
            // Blocks come in id order: a new id starts the next series.
            if ids.last() != Some(&block.id) {
                ids.push(block.id);
                sources.push(Vec::new());
            }
            sources.last_mut().unwrap().push(ranked);
        }
        // Each read but the last spans READ bytes, and blocks never straddle two.
        let expected = part.size_bytes().div_ceil(READ) as usize;
        assert!(
            distinct.len() > 1 && distinct.len() <= expected + part.block_count() / 100,
            "{} reads of {} bytes",
            distinct.len(),
            part.size_bytes()
        );
        assert_eq!(ids, (0..3000).collect::<Vec<u64>>());
        assert_eq!(read_all(sources), read_all(plan(&part, &ids, 0).0));
    }

    #[test]
    fn memory_parts_are_left_alone() {
        let mut w = PartWriter::new(Vec::new(), 1, 2).unwrap();
        for id in 0..10u64 {
            w.add_series(id, &[1, 2], &[1.0, 2.0]).unwrap();
        }
        let part = Arc::new(Part::from_bytes(w.finish().unwrap().0).unwrap());
        let ids: Vec<u64> = (0..10).collect();
        assert_eq!(plan(&part, &ids, SELECT_BUDGET).1, 0);
    }
}
