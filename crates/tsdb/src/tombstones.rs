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

fn encode(tombs: &[Tombstone]) -> Vec<u8> {
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
    buf
}

/// Replaces the file with `tombs` (atomically): what is kept of a damaged one.
pub fn rewrite(dir: &Path, tombs: &[Tombstone]) -> Result<(), StorageError> {
    crate::index::write_atomically(&dir.join(FILE), &encode(tombs))
}

/// Appends tombstones and fsyncs them.
pub fn append(dir: &Path, tombs: &[Tombstone]) -> Result<(), StorageError> {
    let path = dir.join(FILE);
    let buf = encode(tombs);
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

/// Loads the tombstones of a partition directory, leaving out the records
/// that fail their checksum (other than a torn last one); the reason, if
/// any did.
pub fn load_lenient(dir: &Path) -> Result<(Vec<Tombstone>, Option<String>), StorageError> {
    let path = dir.join(FILE);
    let bytes = match fs::read(&path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok((Vec::new(), None)),
        Err(e) => return Err(StorageError::io("read", &path)(e)),
    };
    let (tombs, damaged) = decode_records(&bytes);
    let reason = (!damaged.is_empty()).then(|| {
        let offsets: Vec<String> = damaged.iter().map(|i| (i * RECORD_BYTES).to_string()).collect();
        format!(
            "{} tombstone record(s) failed their checksum, at offset(s) {}; their deletions are undone",
            damaged.len(),
            offsets.join(", ")
        )
    });
    Ok((tombs, reason))
}

/// The records of a tombstone file that check, and the numbers of those
/// that do not. A torn last record (a crash before the delete was
/// acknowledged) is neither.
fn decode_records(bytes: &[u8]) -> (Vec<Tombstone>, Vec<usize>) {
    let (mut out, mut damaged) = (Vec::new(), Vec::new());
    let whole = bytes.len() / RECORD_BYTES;
    for (i, rec) in bytes.chunks_exact(RECORD_BYTES).enumerate() {
        match decode_record(rec) {
            Some(t) => out.push(t),
            None if i + 1 == whole && bytes.len() == whole * RECORD_BYTES => {}
            None => damaged.push(i),
        }
    }
    (out, damaged)
}

fn decode_record(rec: &[u8]) -> Option<Tombstone> {
    let word = |at: usize| Some(u64::from_le_bytes(*rec.get(at..at + 8)?.first_chunk::<8>()?));
    let crc = u32::from_le_bytes(*rec.get(32..36)?.first_chunk::<4>()?);
    if crc != cairn_codec::crc32c(rec.get(..32)?) {
        return None;
    }
    Some(Tombstone {
        seq: word(0)?,
        id: word(8)?,
        mint: word(16)? as i64,
        maxt: word(24)? as i64,
    })
}

/// Decodes a tombstone file. A torn last record (a crash before the delete
/// was acknowledged) is ignored; a bad checksum elsewhere is corruption.
pub fn decode(bytes: &[u8]) -> Result<Vec<Tombstone>, String> {
    let (tombs, damaged) = decode_records(bytes);
    match damaged.first() {
        None => Ok(tombs),
        Some(i) => Err(format!(
            "tombstone record {i} checksum mismatch at offset {}",
            i * RECORD_BYTES
        )),
    }
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

    #[test]
    fn a_damaged_record_is_left_out_and_the_others_kept() {
        let dir = tempfile::tempdir().unwrap();
        let tombs: Vec<Tombstone> = (1..=3)
            .map(|seq| Tombstone {
                seq,
                id: seq * 10,
                mint: 0,
                maxt: 5,
            })
            .collect();
        append(dir.path(), &tombs).unwrap();
        let path = dir.path().join(FILE);
        let mut bytes = fs::read(&path).unwrap();
        bytes[RECORD_BYTES + 9] ^= 0x40;
        fs::write(&path, &bytes).unwrap();
        assert!(load(dir.path()).unwrap_err().to_string().contains("offset 36"));
        let (kept, reason) = load_lenient(dir.path()).unwrap();
        assert_eq!(kept, vec![tombs[0], tombs[2]]);
        assert!(reason.unwrap().contains("offset(s) 36"));
        rewrite(dir.path(), &kept).unwrap();
        assert_eq!(load(dir.path()).unwrap(), kept);
    }
}
