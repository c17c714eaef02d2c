//! Where a queue is in the WAL, durably: per shard, how far its samples
//! have been delivered, and the batch in flight (so that after a crash the
//! first batch is sent again exactly as it was; see queue.rs).
//!
//! Two slots written in turn (`positions.0`, `positions.1`), each
//! `crc32c: u32 LE | generation: u64 LE | shards: u32 LE | shard*` with
//! `shard := done:pos | in_flight:u8 | pos` and
//! `pos := segment:u64 LE | offset:u64 LE | skip:u32 LE`. A write is in the
//! OS before the send it announces, so it survives kill -9; the slot with
//! the highest generation that checks wins (a torn write leaves the other).

use std::fs::{self, File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::Path;

use cairn_tsdb::WalPosition;

/// A place in one shard's share of the WAL: the record at `at`, after
/// that shard's first `skip` samples of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct ShardPosition {
    pub at: WalPosition,
    pub skip: u32,
}

impl ShardPosition {
    pub fn record_start(at: WalPosition) -> Self {
        Self { at, skip: 0 }
    }
}

/// One shard's progress.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ShardState {
    /// Every sample of this shard before this is delivered (or given up).
    pub done: ShardPosition,
    /// The end of the batch being sent, if one is.
    pub in_flight: Option<ShardPosition>,
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Positions {
    pub shards: Vec<ShardState>,
}

impl Positions {
    /// All `n` shards at `at`.
    pub fn at(at: WalPosition, n: usize) -> Self {
        Self {
            shards: vec![
                ShardState {
                    done: ShardPosition::record_start(at),
                    in_flight: None,
                };
                n
            ],
        }
    }

    /// Where reading must start for every shard to find its next sample.
    pub fn oldest(&self) -> WalPosition {
        self.shards.iter().map(|s| s.done.at).min().unwrap_or_default()
    }
}

const POS_BYTES: usize = 20;
const SHARD_BYTES: usize = 2 * POS_BYTES + 1;
const HEADER_BYTES: usize = 16;

/// The two slots of a queue's positions.
pub struct PositionsFile {
    slots: [File; 2],
    generation: u64,
    buf: Vec<u8>,
}

impl PositionsFile {
    /// Opens (creating) the slots in `dir` and reads the newest that checks.
    pub fn open(dir: &Path) -> std::io::Result<(Self, Option<Positions>)> {
        fs::create_dir_all(dir)?;
        let paths = [dir.join("positions.0"), dir.join("positions.1")];
        let open = |p: &Path| {
            OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .open(p)
        };
        let slots = [open(&paths[0])?, open(&paths[1])?];
        let mut best: Option<(u64, Positions)> = None;
        for path in &paths {
            let bytes = fs::read(path)?;
            if let Some((generation, positions)) = decode(&bytes)
                && best.as_ref().is_none_or(|(g, _)| generation > *g)
            {
                best = Some((generation, positions));
            }
        }
        let generation = best.as_ref().map_or(0, |(g, _)| *g);
        Ok((
            Self {
                slots,
                generation,
                buf: Vec::new(),
            },
            best.map(|(_, p)| p),
        ))
    }

    /// Writes `positions` over the older slot.
    pub fn write(&mut self, positions: &Positions) -> std::io::Result<()> {
        self.generation += 1;
        encode(self.generation, positions, &mut self.buf);
        let slot = (self.generation % 2) as usize;
        self.slots[slot].write_all_at(&self.buf, 0)?;
        let len = self.buf.len() as u64;
        if self.slots[slot].metadata()?.len() != len {
            self.slots[slot].set_len(len)?;
        }
        Ok(())
    }
}

fn put_pos(p: &ShardPosition, out: &mut Vec<u8>) {
    out.extend_from_slice(&p.at.segment.to_le_bytes());
    out.extend_from_slice(&p.at.offset.to_le_bytes());
    out.extend_from_slice(&p.skip.to_le_bytes());
}

fn encode(generation: u64, positions: &Positions, out: &mut Vec<u8>) {
    out.clear();
    out.extend_from_slice(&[0; 4]);
    out.extend_from_slice(&generation.to_le_bytes());
    out.extend_from_slice(&(positions.shards.len() as u32).to_le_bytes());
    for s in &positions.shards {
        put_pos(&s.done, out);
        match &s.in_flight {
            Some(p) => {
                out.push(1);
                put_pos(p, out);
            }
            None => {
                out.push(0);
                put_pos(&ShardPosition::default(), out);
            }
        }
    }
    let crc = cairn_codec::crc32c(&out[4..]);
    out[..4].copy_from_slice(&crc.to_le_bytes());
}

/// A slot's generation and positions, if it is whole and checks.
fn decode(bytes: &[u8]) -> Option<(u64, Positions)> {
    let crc = u32::from_le_bytes(bytes.get(..4)?.try_into().ok()?);
    let body = bytes.get(4..)?;
    if body.len() < HEADER_BYTES - 4 || cairn_codec::crc32c(body) != crc {
        return None;
    }
    let generation = u64::from_le_bytes(body.get(..8)?.try_into().ok()?);
    let n = u32::from_le_bytes(body.get(8..12)?.try_into().ok()?) as usize;
    let shards = body.get(12..)?;
    if shards.len() != n.checked_mul(SHARD_BYTES)? {
        return None;
    }
    let pos = |b: &[u8]| -> Option<ShardPosition> {
        Some(ShardPosition {
            at: WalPosition {
                segment: u64::from_le_bytes(b.get(..8)?.try_into().ok()?),
                offset: u64::from_le_bytes(b.get(8..16)?.try_into().ok()?),
            },
            skip: u32::from_le_bytes(b.get(16..20)?.try_into().ok()?),
        })
    };
    let states = shards
        .chunks_exact(SHARD_BYTES)
        .map(|c| {
            Some(ShardState {
                done: pos(c.get(..POS_BYTES)?)?,
                in_flight: match c.get(POS_BYTES)? {
                    0 => None,
                    1 => Some(pos(c.get(POS_BYTES + 1..)?)?),
                    _ => return None,
                },
            })
        })
        .collect::<Option<Vec<_>>>()?;
    Some((generation, Positions { shards: states }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pos(segment: u64, offset: u64, skip: u32) -> ShardPosition {
        ShardPosition {
            at: WalPosition { segment, offset },
            skip,
        }
    }

    fn sample() -> Positions {
        Positions {
            shards: vec![
                ShardState {
                    done: pos(3, 100, 0),
                    in_flight: Some(pos(3, 900, 7)),
                },
                ShardState {
                    done: pos(2, 0, 5),
                    in_flight: None,
                },
            ],
        }
    }

    #[test]
    fn positions_round_trip_and_the_newest_slot_wins() {
        let dir = tempfile::tempdir().unwrap();
        let (mut file, none) = PositionsFile::open(dir.path()).unwrap();
        assert_eq!(none, None);
        file.write(&Positions::at(WalPosition { segment: 1, offset: 0 }, 4))
            .unwrap();
        file.write(&sample()).unwrap();
        let (_, read) = PositionsFile::open(dir.path()).unwrap();
        assert_eq!(read, Some(sample()));
        assert_eq!(read.unwrap().oldest(), WalPosition { segment: 2, offset: 0 });
    }

    #[test]
    fn a_torn_slot_leaves_the_other() {
        let dir = tempfile::tempdir().unwrap();
        let (mut file, _) = PositionsFile::open(dir.path()).unwrap();
        file.write(&sample()).unwrap();
        file.write(&Positions::at(WalPosition { segment: 9, offset: 0 }, 1))
            .unwrap();
        let newest = dir.path().join("positions.0");
        for cut in 0..fs::read(&newest).unwrap().len() {
            let mut bytes = fs::read(&newest).unwrap();
            bytes.truncate(cut);
            let dir2 = tempfile::tempdir().unwrap();
            fs::write(dir2.path().join("positions.0"), &bytes).unwrap();
            fs::copy(dir.path().join("positions.1"), dir2.path().join("positions.1")).unwrap();
            let (_, read) = PositionsFile::open(dir2.path()).unwrap();
            assert_eq!(read, Some(sample()), "cut at {cut}");
        }
    }

    #[test]
    fn garbage_slots_read_as_nothing() {
        for bytes in [vec![], vec![0u8; 3], vec![0xff; 64], vec![0; 16]] {
            assert_eq!(decode(&bytes), None);
        }
    }
}
