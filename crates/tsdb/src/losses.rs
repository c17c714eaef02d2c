//! Samples lost to damage for good: per-partition, append-only, checksummed
//! records. A part block that failed its checksum is known only while its
//! part holds it; a repair that rewrites the part without the block first
//! records the loss here, so answers go on naming what is missing.

use std::fs::{self, OpenOptions};
use std::io::Write;
use std::path::Path;

use cairn_storage::StorageError;

pub const FILE: &str = "losses.log";
/// `id | mint | maxt | samples: u32 | crc32c: u32`, little-endian.
const RECORD_BYTES: usize = 32;

/// One series' samples over `[mint, maxt]`, lost when a damaged block was
/// dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Loss {
    pub id: u64,
    pub mint: i64,
    pub maxt: i64,
    pub samples: u32,
}

impl Loss {
    pub fn overlaps(&self, mint: i64, maxt: i64) -> bool {
        self.maxt >= mint && self.mint <= maxt
    }
}

/// Appends `losses` and fsyncs them.
pub fn append(dir: &Path, losses: &[Loss]) -> Result<(), StorageError> {
    let path = dir.join(FILE);
    let mut buf = Vec::with_capacity(losses.len() * RECORD_BYTES);
    for l in losses {
        let start = buf.len();
        buf.extend_from_slice(&l.id.to_le_bytes());
        buf.extend_from_slice(&l.mint.to_le_bytes());
        buf.extend_from_slice(&l.maxt.to_le_bytes());
        buf.extend_from_slice(&l.samples.to_le_bytes());
        let crc = cairn_codec::crc32c(&buf[start..]);
        buf.extend_from_slice(&crc.to_le_bytes());
    }
    let mut f = OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .map_err(StorageError::io("open", &path))?;
    f.write_all(&buf)
        .and_then(|()| f.sync_all())
        .map_err(StorageError::io("append to", &path))?;
    crate::wal::sync_dir(dir)
}

/// The losses of a partition directory. Records that fail their checksum
/// are left out and logged (a torn last one, from a crash before the
/// repair went on, silently): what they named is then lost unnamed.
pub fn load(dir: &Path) -> Result<Vec<Loss>, StorageError> {
    let path = dir.join(FILE);
    let bytes = match fs::read(&path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(StorageError::io("read", &path)(e)),
    };
    let (losses, damaged) = decode_records(&bytes);
    if !damaged.is_empty() {
        tracing::error!(path = %path.display(), records = ?damaged, "loss records failed their checksum");
    }
    Ok(losses)
}

/// Decodes a losses file; an error names the first damaged record.
pub fn decode(bytes: &[u8]) -> Result<Vec<Loss>, String> {
    let (losses, damaged) = decode_records(bytes);
    match damaged.first() {
        None => Ok(losses),
        Some(i) => Err(format!(
            "loss record {i} checksum mismatch at offset {}",
            i * RECORD_BYTES
        )),
    }
}

/// The records that check, and the numbers of those that do not; a torn
/// last record is neither.
fn decode_records(bytes: &[u8]) -> (Vec<Loss>, Vec<usize>) {
    let (mut out, mut damaged) = (Vec::new(), Vec::new());
    for (i, rec) in bytes.chunks_exact(RECORD_BYTES).enumerate() {
        match decode_record(rec) {
            Some(l) => out.push(l),
            None => damaged.push(i),
        }
    }
    (out, damaged)
}

fn decode_record(rec: &[u8]) -> Option<Loss> {
    let word = |at: usize| Some(u64::from_le_bytes(*rec.get(at..at + 8)?.first_chunk::<8>()?));
    let crc = u32::from_le_bytes(*rec.get(28..32)?.first_chunk::<4>()?);
    if crc != cairn_codec::crc32c(rec.get(..28)?) {
        return None;
    }
    Some(Loss {
        id: word(0)?,
        mint: word(8)? as i64,
        maxt: word(16)? as i64,
        samples: u32::from_le_bytes(*rec.get(24..28)?.first_chunk::<4>()?),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn loss(id: u64) -> Loss {
        Loss {
            id,
            mint: -5,
            maxt: 7_200_000,
            samples: 120,
        }
    }

    #[test]
    fn losses_round_trip_and_a_torn_tail_is_ignored() {
        let dir = tempfile::tempdir().unwrap();
        assert!(load(dir.path()).unwrap().is_empty());
        append(dir.path(), &[loss(1), loss(2)]).unwrap();
        append(dir.path(), &[loss(3)]).unwrap();
        assert_eq!(load(dir.path()).unwrap(), vec![loss(1), loss(2), loss(3)]);
        let path = dir.path().join(FILE);
        let bytes = fs::read(&path).unwrap();
        fs::write(&path, &bytes[..bytes.len() - 3]).unwrap();
        assert_eq!(load(dir.path()).unwrap(), vec![loss(1), loss(2)]);
        assert!(decode(&fs::read(&path).unwrap()).is_ok());
    }

    #[test]
    fn a_damaged_record_is_left_out_and_named() {
        let dir = tempfile::tempdir().unwrap();
        append(dir.path(), &[loss(1), loss(2), loss(3)]).unwrap();
        let path = dir.path().join(FILE);
        let mut bytes = fs::read(&path).unwrap();
        bytes[RECORD_BYTES + 3] ^= 0x10;
        fs::write(&path, &bytes).unwrap();
        assert_eq!(load(dir.path()).unwrap(), vec![loss(1), loss(3)]);
        assert!(decode(&bytes).unwrap_err().contains("offset 32"));
    }

    proptest::proptest! {
        #[test]
        fn any_bytes_decode_or_fail_cleanly(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..200)) {
            let _ = decode(&bytes);
        }

        #[test]
        fn what_is_appended_loads_back(raw in proptest::collection::vec(proptest::prelude::any::<(u64, i64, i64, u32)>(), 0..20)) {
            let dir = tempfile::tempdir().unwrap();
            let losses: Vec<Loss> = raw.into_iter().map(|(id, mint, maxt, samples)| Loss { id, mint, maxt, samples }).collect();
            append(dir.path(), &losses).unwrap();
            proptest::prop_assert_eq!(load(dir.path()).unwrap(), losses);
        }
    }
}
