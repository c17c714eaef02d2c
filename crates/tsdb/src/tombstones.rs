//! Deletions: per-partition, append-only, checksummed records.
//!
//! A tombstone hides samples of one series in `[mint, maxt]` written at or
//! before sequence `seq`; later writes of the same series stay visible.
//! Merges drop the hidden samples, reclaiming their space.

use std::fs::{self, OpenOptions};
use std::io::Write;
use std::path::Path;

use cairn_storage::StorageError;

pub const FILE: &str = "tombstones.log";
/// The newest tombstone sequence number whose samples are merged out of all
/// disk parts: `seq: u64 LE | crc32c: u32 LE`.
pub const APPLIED_FILE: &str = "tombstones.applied";
const RECORD_BYTES: usize = 36;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tombstone {
    pub seq: u64,
    pub id: u64,
    pub mint: i64,
    pub maxt: i64,
}

/// Appends tombstones and fsyncs them.
pub fn append(dir: &Path, tombs: &[Tombstone]) -> Result<(), StorageError> {
    let path = dir.join(FILE);
    let mut buf = Vec::with_capacity(tombs.len() * RECORD_BYTES);
    for t in tombs {
        let start = buf.len();
        buf.extend_from_slice(&t.seq.to_le_bytes());
        buf.extend_from_slice(&t.id.to_le_bytes());
        buf.extend_from_slice(&t.mint.to_le_bytes());
        buf.extend_from_slice(&t.maxt.to_le_bytes());
        let crc = cairn_codec::crc32c(&buf[start..]);
        buf.extend_from_slice(&crc.to_le_bytes());
    }
    let mut f = OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .map_err(StorageError::io("open", &path))?;
    let len = f.metadata().map_err(StorageError::io("stat", &path))?.len();
    if let Err(e) = f.write_all(&buf).and_then(|()| f.sync_all()) {
        // Records appended after a torn one would read as corruption: cut
        // the failed append off (the deletion is refused and may be retried).
        let _ = f.set_len(len);
        return Err(StorageError::io("append to", &path)(e));
    }
    crate::wal::sync_dir(dir)
}

/// Records that tombstones up to `seq` are merged out (atomically replaced).
pub fn store_applied(dir: &Path, seq: u64) -> Result<(), StorageError> {
    let mut buf = seq.to_le_bytes().to_vec();
    let crc = cairn_codec::crc32c(&buf);
    buf.extend_from_slice(&crc.to_le_bytes());
    crate::index::write_atomically(&dir.join(APPLIED_FILE), &buf)
}

/// The value [`store_applied`] last wrote, 0 if never.
pub fn load_applied(dir: &Path) -> Result<u64, StorageError> {
    let path = dir.join(APPLIED_FILE);
    let bytes = match fs::read(&path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(StorageError::io("read", &path)(e)),
    };
    let seq = bytes.first_chunk::<8>().map(|b| u64::from_le_bytes(*b));
    let crc = bytes
        .get(8..12)
        .and_then(|b| b.first_chunk::<4>())
        .map(|b| u32::from_le_bytes(*b));
    match (seq, crc) {
        (Some(seq), Some(crc)) if bytes.len() == 12 && crc == cairn_codec::crc32c(&bytes[..8]) => Ok(seq),
        _ => Err(StorageError::Corrupt {
            path,
            reason: "malformed applied-tombstone marker".into(),
        }),
    }
}

/// Loads all tombstones of a partition directory.
pub fn load(dir: &Path) -> Result<Vec<Tombstone>, StorageError> {
    let path = dir.join(FILE);
    let bytes = match fs::read(&path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(StorageError::io("read", &path)(e)),
    };
    decode(&bytes).map_err(|reason| StorageError::Corrupt { path, reason })
}

/// Decodes a tombstone file. A torn last record (a crash before the delete
/// was acknowledged) is ignored; a bad checksum elsewhere is corruption.
pub fn decode(bytes: &[u8]) -> Result<Vec<Tombstone>, String> {
    let mut out = Vec::new();
    let whole = bytes.len() / RECORD_BYTES;
    for (i, rec) in bytes.chunks_exact(RECORD_BYTES).enumerate() {
        let word = |at: usize| {
            rec.get(at..at + 8)
                .and_then(|b| b.first_chunk::<8>())
                .map(|b| u64::from_le_bytes(*b))
        };
        let crc = rec
            .get(32..36)
            .and_then(|b| b.first_chunk::<4>())
            .map(|b| u32::from_le_bytes(*b));
        if crc != Some(cairn_codec::crc32c(rec.get(..32).unwrap_or_default())) {
            if i + 1 == whole && bytes.len() == whole * RECORD_BYTES {
                break;
            }
            return Err(format!("tombstone record {i} checksum mismatch"));
        }
        if let (Some(seq), Some(id), Some(mint), Some(maxt)) = (word(0), word(8), word(16), word(24)) {
            out.push(Tombstone {
                seq,
                id,
                mint: mint as i64,
                maxt: maxt as i64,
            });
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tombstones_round_trip_and_ignore_torn_tail() {
        let dir = tempfile::tempdir().unwrap();
        let a = Tombstone {
            seq: 5,
            id: 9,
            mint: -1,
            maxt: 100,
        };
        append(dir.path(), &[a]).unwrap();
        append(dir.path(), &[Tombstone { seq: 6, ..a }]).unwrap();
        assert_eq!(load(dir.path()).unwrap().len(), 2);
        let path = dir.path().join(FILE);
        let bytes = fs::read(&path).unwrap();
        fs::write(&path, &bytes[..bytes.len() - 3]).unwrap();
        assert_eq!(load(dir.path()).unwrap(), vec![a]);
    }
}
