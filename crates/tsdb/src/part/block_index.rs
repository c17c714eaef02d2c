//! A part's block index (docs/format/part.md): entries packed as varints in
//! groups of [`GROUP`], the same bytes in a part file (format 2) and in
//! memory, about a third of the 48 bytes a format-1 file spends per entry. A
//! search finds the group by its first series id and unpacks from the start
//! of the group holding the series' first block; a [`BlockCursor`] walking
//! ascending ids unpacks each entry once.
//!
//! Entry `i` is packed relative to entry `i - 1` of its group (the first of a
//! group relative to zeros): id delta (uvarint; ids ascend), mint − previous
//! maxt and maxt − mint (zigzag varints, wrapping), len, count (uvarints), crc
//! (u32 LE). Offsets are not stored: blocks lie back to back in index order,
//! so each starts where the previous ends.

use cairn_codec::varint::{get_uvarint, put_uvarint, zigzag_decode, zigzag_encode};

use super::reader::BlockRef;
use super::{ENTRY_BYTES, MAGIC};

/// Entries per group: a jump to a series far ahead unpacks from a group's
/// start to the series (half a group on average, a whole one more when the
/// series may begin in the group before), memory per group is 20 bytes.
const GROUP: usize = 8;

pub struct BlockIndex {
    /// Series id of each group's first entry.
    first_ids: Vec<u64>,
    /// Per group: where its entries start in `packed`, and the file offset of
    /// its first block.
    groups: Vec<(u32, u64)>,
    packed: Vec<u8>,
    len: usize,
}

fn le_u64(e: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(e[at..at + 8].try_into().unwrap_or_default())
}

fn le_u32(e: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(e[at..at + 4].try_into().unwrap_or_default())
}

impl BlockIndex {
    /// Packs the file's index entries (`ENTRY_BYTES` each) in one piece.
    #[cfg(test)]
    pub fn build(entries: &[u8], index_offset: u64) -> Result<Self, &'static str> {
        if !entries.len().is_multiple_of(ENTRY_BYTES) {
            return Err("index size mismatch");
        }
        let mut builder = BlockIndexBuilder::new(entries.len() / ENTRY_BYTES);
        for e in entries.chunks_exact(ENTRY_BYTES) {
            builder.push_v1(e)?;
        }
        builder.finish(index_offset)
    }

    pub fn len(&self) -> usize {
        self.len
    }

    /// Bytes the index holds on the heap.
    pub fn heap_bytes(&self) -> usize {
        self.packed.len() + self.first_ids.len() * 8 + self.groups.len() * size_of::<(u32, u64)>()
    }

    /// A format-2 part's index: `packed` holds `entries` entries whose blocks
    /// lie back to back from the end of the magic up to `index_offset`. Each
    /// entry is unpacked once, to find the groups and check that ids ascend.
    pub fn from_packed(packed: Vec<u8>, entries: u64, index_offset: u64) -> Result<Self, &'static str> {
        // An entry takes at least 9 bytes, so a damaged count cannot make
        // this reserve more than the bytes allow.
        let groups = (packed.len() / 9)
            .min(usize::try_from(entries).unwrap_or(usize::MAX))
            .div_ceil(GROUP);
        let mut index = BlockIndex {
            first_ids: Vec::with_capacity(groups),
            groups: Vec::with_capacity(groups),
            packed: Vec::new(),
            len: 0,
        };
        let (mut src, mut offset, mut prev_id, mut prev_maxt) = (&packed[..], MAGIC.len() as u64, 0, 0);
        for i in 0..entries {
            let first_of_group = i.is_multiple_of(GROUP as u64);
            let at = u32::try_from(packed.len() - src.len()).map_err(|_| "block index over 4 GiB")?;
            let (base_id, base_maxt) = if first_of_group { (0, 0) } else { (prev_id, prev_maxt) };
            let (b, rest) = unpack(src, base_id, base_maxt, offset).ok_or("malformed index entry")?;
            if i > 0 && b.id < prev_id {
                return Err("index entries out of series order");
            }
            if first_of_group {
                index.first_ids.push(b.id);
                index.groups.push((at, offset));
            }
            offset = offset
                .checked_add(u64::from(b.byte_len()))
                .ok_or("block out of bounds")?;
            (src, prev_id, prev_maxt) = (rest, b.id, b.maxt);
            index.len += 1;
        }
        if !src.is_empty() {
            return Err("index size mismatch");
        }
        if offset != index_offset {
            return Err("blocks do not end where the index starts");
        }
        index.packed = packed;
        Ok(index)
    }

    /// Entries from the start of group `g` on, in order.
    fn iter_group(&self, g: usize) -> Entries<'_> {
        Entries {
            index: self,
            next: g * GROUP,
            src: &[],
            offset: 0,
            prev_id: 0,
            prev_maxt: 0,
        }
    }

    /// Entries from `i` on, in order.
    pub fn iter_from(&self, i: usize) -> impl Iterator<Item = BlockRef> + '_ {
        self.iter_group(i / GROUP).skip(i % GROUP)
    }

    /// Entries of series `id`, in time order.
    #[cfg(test)]
    pub fn series(&self, id: u64) -> Vec<BlockRef> {
        let mut out = Vec::new();
        self.cursor().series(id, |b| out.push(b));
        out
    }

    /// A cursor for series looked up in ascending id order.
    pub fn cursor(&self) -> BlockCursor<'_> {
        BlockCursor {
            entries: self.iter_group(0),
            peeked: None,
        }
    }

    /// The last group at or after `from` whose first id is below `id`, given
    /// that group `from`'s is: a gallop, then a binary search in its window.
    fn last_group_below(&self, from: usize, id: u64) -> usize {
        let ids = &self.first_ids[from..];
        let mut bound = 1;
        while bound < ids.len() && ids[bound] < id {
            bound *= 2;
        }
        let (lo, hi) = (bound / 2, (bound + 1).min(ids.len()));
        from + lo + ids[lo..hi].partition_point(|&f| f < id) - 1
    }
}

/// Packs index entries one at a time, rejecting ids out of order and blocks
/// that do not lie back to back from the end of the magic up to the index: a
/// part writer feeds it each block it writes, and opening a format-1 part
/// feeds it that file's 48-byte entries a bounded read at a time (checksum
/// verified by the caller).
pub struct BlockIndexBuilder {
    index: BlockIndex,
    /// Where the next entry's block must start.
    offset: u64,
    prev_id: u64,
    prev_maxt: i64,
}

impl BlockIndexBuilder {
    /// A builder for about `entries` entries.
    pub fn new(entries: usize) -> Self {
        Self {
            index: BlockIndex {
                first_ids: Vec::with_capacity(entries.div_ceil(GROUP)),
                groups: Vec::with_capacity(entries.div_ceil(GROUP)),
                packed: Vec::with_capacity(entries * 16),
                len: 0,
            },
            offset: MAGIC.len() as u64,
            prev_id: 0,
            prev_maxt: 0,
        }
    }

    /// Adds the next entry of a format-1 index (`ENTRY_BYTES` bytes).
    pub fn push_v1(&mut self, e: &[u8]) -> Result<(), &'static str> {
        if e.len() != ENTRY_BYTES {
            return Err("index size mismatch");
        }
        if le_u64(e, 24) != self.offset {
            return Err("blocks are not stored back to back in index order");
        }
        self.push(BlockRef::new(
            le_u64(e, 0),
            le_u64(e, 8) as i64,
            le_u64(e, 16) as i64,
            self.offset,
            le_u32(e, 32),
            le_u32(e, 36),
            le_u32(e, 40),
        ))
    }

    /// Adds the next block, which starts where the previous one ends (its
    /// own offset is not looked at).
    pub fn push(&mut self, b: BlockRef) -> Result<(), &'static str> {
        let index = &mut self.index;
        if index.len > 0 && b.id < self.prev_id {
            return Err("index entries out of series order");
        }
        // Deltas restart at each group.
        let (base_id, base_maxt) = if index.len.is_multiple_of(GROUP) {
            let at = u32::try_from(index.packed.len()).map_err(|_| "block index over 4 GiB")?;
            index.first_ids.push(b.id);
            index.groups.push((at, self.offset));
            (0, 0)
        } else {
            (self.prev_id, self.prev_maxt)
        };
        self.offset = self
            .offset
            .checked_add(u64::from(b.byte_len()))
            .ok_or("block out of bounds")?;
        let p = &mut index.packed;
        put_uvarint(p, b.id - base_id);
        put_uvarint(p, zigzag_encode(b.mint.wrapping_sub(base_maxt)));
        put_uvarint(p, zigzag_encode(b.maxt.wrapping_sub(b.mint)));
        put_uvarint(p, u64::from(b.byte_len()));
        put_uvarint(p, u64::from(b.count));
        p.extend_from_slice(&b.crc().to_le_bytes());
        (self.prev_id, self.prev_maxt) = (b.id, b.maxt);
        index.len += 1;
        Ok(())
    }

    /// Where the next block starts.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// The entries packed so far, as a part file stores them.
    pub fn packed(&self) -> &[u8] {
        &self.index.packed
    }

    /// The packed index, if the blocks end where the index starts (at `index_offset`).
    pub fn finish(mut self, index_offset: u64) -> Result<BlockIndex, &'static str> {
        if self.offset != index_offset {
            return Err("blocks do not end where the index starts");
        }
        self.index.packed.shrink_to_fit();
        Ok(self.index)
    }
}

/// Walks a block index forward for series looked up in ascending id order.
/// Entries are unpacked once each while the series asked for are close
/// together (a metric's series are neighbours: see `series_hash`); a series
/// further ahead is reached by a search over the groups' first ids, which
/// unpacks nothing, from where the cursor stands.
pub struct BlockCursor<'a> {
    entries: Entries<'a>,
    /// The first entry unpacked past the last series asked for.
    peeked: Option<BlockRef>,
}

impl BlockCursor<'_> {
    /// Calls `f` with each block of series `id`, in time order. `id` must not
    /// be below the one of the previous call.
    pub fn series(&mut self, id: u64, mut f: impl FnMut(BlockRef)) {
        let index = self.entries.index;
        // The group holding the next entry not yet consumed.
        let at = (self.entries.next - usize::from(self.peeked.is_some())) / GROUP;
        if index.first_ids.get(at + 1).is_some_and(|&first| first < id) {
            // The series' first block lies in a later group than the next.
            self.entries = index.iter_group(index.last_group_below(at + 1, id));
            self.peeked = None;
        }
        loop {
            let Some(block) = self.peeked.take().or_else(|| self.entries.next()) else {
                return;
            };
            if block.id > id {
                self.peeked = Some(block);
                return;
            }
            if block.id == id {
                f(block);
            }
        }
    }
}

pub struct Entries<'a> {
    index: &'a BlockIndex,
    next: usize,
    src: &'a [u8],
    offset: u64,
    prev_id: u64,
    prev_maxt: i64,
}

impl Entries<'_> {
    fn unpack(&mut self) -> Option<BlockRef> {
        let (block, rest) = unpack(self.src, self.prev_id, self.prev_maxt, self.offset)?;
        self.src = rest;
        self.offset = self.offset.wrapping_add(u64::from(block.byte_len()));
        (self.prev_id, self.prev_maxt) = (block.id, block.maxt);
        Some(block)
    }
}

/// Unpacks the entry at the start of `src`, which follows one of series
/// `prev_id` ending at `prev_maxt` (zeros for a group's first) and whose block
/// starts at `offset`; returns it and the bytes after it.
fn unpack(src: &[u8], prev_id: u64, prev_maxt: i64, offset: u64) -> Option<(BlockRef, &[u8])> {
    let (id_delta, r) = get_uvarint(src).ok()?;
    let (mint_delta, r) = get_uvarint(r).ok()?;
    let (span, r) = get_uvarint(r).ok()?;
    let (len, r) = get_uvarint(r).ok()?;
    let (count, r) = get_uvarint(r).ok()?;
    let (crc, r) = r.split_first_chunk::<4>()?;
    let mint = prev_maxt.wrapping_add(zigzag_decode(mint_delta));
    let block = BlockRef::new(
        prev_id.wrapping_add(id_delta),
        mint,
        mint.wrapping_add(zigzag_decode(span)),
        offset,
        u32::try_from(len).ok()?,
        u32::try_from(count).ok()?,
        u32::from_le_bytes(*crc),
    );
    Some((block, r))
}

impl Iterator for Entries<'_> {
    type Item = BlockRef;

    fn next(&mut self) -> Option<BlockRef> {
        if self.next >= self.index.len {
            return None;
        }
        if self.next.is_multiple_of(GROUP) {
            // A new group restarts the deltas.
            (self.prev_id, self.prev_maxt) = (0, 0);
            if let Some(&(at, offset)) = self.index.groups.get(self.next / GROUP) {
                self.src = self.index.packed.get(at as usize..).unwrap_or_default();
                self.offset = offset;
            }
        }
        self.next += 1;
        self.unpack()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Raw 48-byte entries for `(id, mint, maxt, len, count, crc)`, back to back.
    fn raw(entries: &[(u64, i64, i64, u32, u32, u32)]) -> Vec<u8> {
        let mut out = Vec::new();
        let mut offset = MAGIC.len() as u64;
        for &(id, mint, maxt, len, count, crc) in entries {
            out.extend_from_slice(&id.to_le_bytes());
            out.extend_from_slice(&mint.to_le_bytes());
            out.extend_from_slice(&maxt.to_le_bytes());
            out.extend_from_slice(&offset.to_le_bytes());
            out.extend_from_slice(&len.to_le_bytes());
            out.extend_from_slice(&count.to_le_bytes());
            out.extend_from_slice(&crc.to_le_bytes());
            out.extend_from_slice(&0u32.to_le_bytes());
            offset += u64::from(len);
        }
        out
    }

    proptest::proptest! {
        #[test]
        fn packed_index_yields_every_entry_and_finds_every_series(
            mut entries in proptest::collection::vec(
                (0u64..40, proptest::num::i64::ANY, proptest::num::i64::ANY, 0u32..5000, proptest::num::u32::ANY,
                 proptest::num::u32::ANY),
                0..200,
            ),
            big_ids in proptest::bool::ANY,
        ) {
            if big_ids {
                for e in &mut entries {
                    e.0 = e.0.wrapping_mul(0x9e37_79b9_7f4a_7c15) | (1 << 63);
                }
            }
            entries.sort_by_key(|e| e.0);
            let bytes = raw(&entries);
            let end = MAGIC.len() as u64 + entries.iter().map(|e| u64::from(e.3)).sum::<u64>();
            let index = BlockIndex::build(&bytes, end).unwrap();
            proptest::prop_assert_eq!(index.len(), entries.len());
            let mut offset = MAGIC.len() as u64;
            let want: Vec<BlockRef> = entries
                .iter()
                .map(|&(id, mint, maxt, len, count, crc)| {
                    let b = BlockRef::new(id, mint, maxt, offset, len, count, crc);
                    offset += u64::from(len);
                    b
                })
                .collect();
            let got: Vec<BlockRef> = index.iter_from(0).collect();
            proptest::prop_assert_eq!(&got, &want);
            // A part file stores the packed bytes; reading them back finds
            // the same groups.
            let reread = BlockIndex::from_packed(index.packed.clone(), entries.len() as u64, end).unwrap();
            proptest::prop_assert_eq!(&reread.first_ids, &index.first_ids);
            proptest::prop_assert_eq!(&reread.groups, &index.groups);
            proptest::prop_assert_eq!(reread.iter_from(0).collect::<Vec<_>>(), want.clone());
            if !entries.is_empty() {
                let n = entries.len() as u64;
                let mut cut = index.packed.clone();
                cut.pop();
                proptest::prop_assert!(BlockIndex::from_packed(cut, n, end).is_err());
                proptest::prop_assert!(BlockIndex::from_packed(index.packed.clone(), n - 1, end).is_err());
                proptest::prop_assert!(BlockIndex::from_packed(index.packed.clone(), n + 1, end).is_err());
                proptest::prop_assert!(BlockIndex::from_packed(index.packed.clone(), n, end + 1).is_err());
            }
            for start in [1, 15, 16, 17, 40] {
                let tail: Vec<BlockRef> = index.iter_from(start).collect();
                proptest::prop_assert_eq!(&tail[..], want.get(start..).unwrap_or_default());
            }
            for probe in want.iter().map(|b| b.id).chain([0, 7, u64::MAX]) {
                let found: Vec<BlockRef> = index.series(probe);
                let expected: Vec<BlockRef> = want.iter().filter(|b| b.id == probe).copied().collect();
                proptest::prop_assert_eq!(found, expected);
            }
            // Ascending searches sharing one cursor find what fresh ones do,
            // whichever ids are skipped between them.
            let mut probes: Vec<u64> = want.iter().map(|b| b.id).chain([0, 7, u64::MAX]).collect();
            probes.sort_unstable();
            probes.dedup();
            for keep_every in [1, 2, 3, 9, 17] {
                let mut cursor = index.cursor();
                for &probe in probes.iter().step_by(keep_every) {
                    let mut found = Vec::new();
                    cursor.series(probe, |b| found.push(b));
                    let expected: Vec<BlockRef> = want.iter().filter(|b| b.id == probe).copied().collect();
                    proptest::prop_assert_eq!(found, expected);
                }
            }
        }
    }

    #[test]
    fn gaps_and_descending_ids_are_rejected() {
        let two = raw(&[(1, 0, 1, 10, 1, 0), (2, 0, 1, 10, 1, 0)]);
        assert!(BlockIndex::build(&two, 28).is_ok());
        assert!(BlockIndex::build(&two, 29).is_err(), "a gap before the index");
        let mut gap = two;
        gap[ENTRY_BYTES + 24] += 1;
        assert!(BlockIndex::build(&gap, 29).is_err());
        assert!(BlockIndex::build(&raw(&[(2, 0, 1, 10, 1, 0), (1, 0, 1, 10, 1, 0)]), 28).is_err());
        assert!(BlockIndex::build(&[0; ENTRY_BYTES - 1], 8).is_err());
        assert!(BlockIndex::build(&[], 8).unwrap().series(0).is_empty());
        assert!(BlockIndex::from_packed(Vec::new(), 0, 8).unwrap().series(0).is_empty());
        // Packed ids can only go down by wrapping around.
        let wrapped = BlockIndex::build(&raw(&[(u64::MAX, 0, 1, 10, 1, 0), (u64::MAX, 0, 1, 10, 1, 0)]), 28).unwrap();
        let mut packed = wrapped.packed.clone();
        assert_eq!(packed[18], 0, "the second entry's id delta");
        packed[18] = 1;
        assert_eq!(
            BlockIndex::from_packed(packed, 2, 28).err(),
            Some("index entries out of series order")
        );
        // A footer's count far beyond the bytes reserves nothing for it.
        assert!(BlockIndex::from_packed(wrapped.packed, u64::MAX, 28).is_err());
    }
}
