//! Sequence numbers: each commit, replayed WAL record and delete takes the
//! next one, and the parts made of their rows are named after them. A
//! number is never handed out twice, not even across a crash after the
//! parts holding the highest ones were dropped (a day past retention, parts
//! a compactor's copy retired): whoever noted "every row from here on is at
//! or above n" (a compaction job) must find the rows a replay restores
//! there.
//!
//! The highest number handed out is not written at every commit. A limit is
//! reserved ahead in `<storage.path>/SEQUENCE` (docs/format/wal.md), and a
//! number at or above it is handed out only once a higher limit is on disk;
//! a restart resumes at the limit.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use cairn_storage::StorageError;
use parking_lot::Mutex;

use crate::index::write_atomically;

/// How far ahead of the numbers handed out the limit is reserved.
const RESERVED_AHEAD: u64 = 1 << 20;
/// Where a restart resumes when the file is damaged: beyond any limit a
/// reservation could have reached.
const PAST_A_DAMAGED_LIMIT: u64 = 1 << 40;

pub(crate) struct Sequence {
    next: AtomicU64,
    /// No number at or above this was handed out; the file holds it.
    limit: Mutex<u64>,
    path: PathBuf,
    ahead: u64,
}

impl Sequence {
    /// Resumes above `floor` (the highest number the parts on disk and in
    /// the bucket carry) and above the limit reserved in `root`.
    pub fn open(root: &Path, floor: u64) -> Self {
        Self::open_reserving(root, floor, RESERVED_AHEAD)
    }

    fn open_reserving(root: &Path, floor: u64, ahead: u64) -> Self {
        let path = root.join("SEQUENCE");
        let next = match read_limit(&path) {
            Ok(limit) => limit.unwrap_or(0).max(floor + 1),
            Err(reason) => {
                tracing::error!(
                    path = %path.display(),
                    reason,
                    "the sequence limit is unreadable: resuming far beyond any number handed out"
                );
                floor + 1 + PAST_A_DAMAGED_LIMIT
            }
        };
        Self {
            next: AtomicU64::new(next),
            // Nothing reserved by this process yet: the first number taken
            // writes a limit.
            limit: Mutex::new(next),
            path,
            ahead,
        }
    }

    /// The number the next one taken will be.
    pub fn peek(&self) -> u64 {
        self.next.load(Ordering::Acquire)
    }

    /// The next number; an error when a new limit cannot be written (and
    /// then nothing may be written under the number).
    pub fn take(&self) -> Result<u64, StorageError> {
        let seq = self.next.fetch_add(1, Ordering::AcqRel);
        let mut limit = self.limit.lock();
        if seq >= *limit {
            let reserved = seq + 1 + self.ahead;
            let mut bytes = reserved.to_le_bytes().to_vec();
            bytes.extend_from_slice(&cairn_codec::crc32c(&reserved.to_le_bytes()).to_le_bytes());
            write_atomically(&self.path, &bytes)?;
            *limit = reserved;
        }
        Ok(seq)
    }
}

/// The limit the file holds: `None` when there is no file, an error when it
/// is damaged.
fn read_limit(path: &Path) -> Result<Option<u64>, String> {
    let bytes = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e.to_string()),
    };
    let (Some(limit), Some(crc)) = (bytes.get(..8), bytes.get(8..12)) else {
        return Err(format!("{} bytes, not 12", bytes.len()));
    };
    if bytes.len() != 12 || cairn_codec::crc32c(limit).to_le_bytes() != crc {
        return Err("checksum mismatch".into());
    }
    let mut value = [0; 8];
    value.copy_from_slice(limit);
    Ok(Some(u64::from_le_bytes(value)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_handed_out_before_a_crash_are_never_handed_out_again() {
        let dir = tempfile::tempdir().unwrap();
        let mut highest = 0;
        // Each run takes some numbers and crashes: the floor the parts give
        // may be anything below what was handed out, even nothing.
        for (run, taken) in [3u64, 4, 5, 9, 1, 12, 0, 7].into_iter().enumerate() {
            let floor = if run % 2 == 0 { 0 } else { highest / 2 };
            let sequence = Sequence::open_reserving(dir.path(), floor, 4);
            for _ in 0..taken {
                let seq = sequence.take().unwrap();
                assert!(seq > highest, "run {run}: {seq} after {highest}");
                highest = seq;
            }
        }
    }

    #[test]
    fn it_resumes_above_the_parts_and_a_damaged_limit_skips_far_ahead() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(Sequence::open_reserving(dir.path(), 41, 4).take().unwrap(), 42);
        // The limit on disk is 47: parts above it win.
        assert_eq!(Sequence::open_reserving(dir.path(), 99, 4).take().unwrap(), 100);
        let sequence = Sequence::open_reserving(dir.path(), 0, 4);
        assert_eq!(sequence.peek(), 105, "the limit the run before reserved");
        for damage in [vec![1, 2, 3], {
            let mut bytes = std::fs::read(dir.path().join("SEQUENCE")).unwrap();
            bytes[0] ^= 1;
            bytes
        }] {
            std::fs::write(dir.path().join("SEQUENCE"), damage).unwrap();
            assert_eq!(
                Sequence::open_reserving(dir.path(), 7, 4).peek(),
                8 + PAST_A_DAMAGED_LIMIT
            );
        }
    }
}
