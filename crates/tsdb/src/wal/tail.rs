//! Following the WAL from a position, as a remote-write queue does: whole
//! records in order, across segments live or retired, waiting at the end
//! of the active one. A record being written is not yet whole to a reader
//! (its bytes show as the write copies them); it is read once it is.

use std::fs::File;
use std::os::unix::fs::FileExt;

use cairn_storage::StorageError;

use super::{HEADER_BYTES, MAX_RECORD_BYTES, Wal};

/// A place in the WAL: the start of a record, or the end of the log.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct WalPosition {
    pub segment: u64,
    pub offset: u64,
}

/// What [`WalTail::next`] found.
#[derive(Debug, PartialEq, Eq)]
pub enum TailEvent {
    /// A whole record, its payload in the buffer; `at` is where it starts.
    Record { at: WalPosition },
    /// Nothing more yet: the end of the active segment.
    End,
    /// Records from `from` on up to `to` could not be read: the segments
    /// were deleted (the backlog bound) or damaged. Reading goes on at `to`.
    Lost {
        from: WalPosition,
        to: WalPosition,
        reason: String,
    },
}

/// A reader of the WAL from a position on.
pub struct WalTail {
    at: WalPosition,
    file: Option<(u64, File)>,
}

impl WalTail {
    pub fn new(from: WalPosition) -> Self {
        Self { at: from, file: None }
    }

    /// The position of the next record to read.
    pub fn position(&self) -> WalPosition {
        self.at
    }

    /// The next record of `wal`, into `payload`.
    pub fn next(&mut self, wal: &Wal, payload: &mut Vec<u8>) -> Result<TailEvent, StorageError> {
        loop {
            let file = match &self.file {
                Some((seq, file)) if *seq == self.at.segment => file,
                _ => match wal.segment_file(self.at.segment) {
                    Some(path) => {
                        let file = File::open(&path).map_err(StorageError::io("open", &path))?;
                        &self.file.insert((self.at.segment, file)).1
                    }
                    None => {
                        if self.at.segment >= wal.active_segment() {
                            // Not created yet (a position past a restart's new segment numbering is
                            // found by `next_segment` below once it exists).
                            if let Some(next) = wal.next_segment(self.at.segment)? {
                                self.at = WalPosition {
                                    segment: next,
                                    offset: 0,
                                };
                                continue;
                            }
                            return Ok(TailEvent::End);
                        }
                        return self.skip_to_next(wal, "the segment was deleted before it was read".into());
                    }
                },
            };
            let complete = self.at.segment < wal.active_segment();
            let len = file
                .metadata()
                .map_err(StorageError::io("stat WAL segment", format!("{}", self.at.segment)))?
                .len();
            match read_at(file, self.at.offset, len, payload) {
                Ok(Some(record_len)) => {
                    let at = self.at;
                    self.at.offset += record_len;
                    return Ok(TailEvent::Record { at });
                }
                Ok(None) if !complete => return Ok(TailEvent::End),
                Ok(None) => {
                    // The writer moved on after our look at the length: read once more.
                    let len = file.metadata().map_or(len, |m| m.len());
                    if self.at.offset >= len {
                        match wal.next_segment(self.at.segment)? {
                            Some(next) => {
                                self.at = WalPosition {
                                    segment: next,
                                    offset: 0,
                                };
                                continue;
                            }
                            None => return Ok(TailEvent::End),
                        }
                    }
                    if let Ok(Some(record_len)) = read_at(file, self.at.offset, len, payload) {
                        let at = self.at;
                        self.at.offset += record_len;
                        return Ok(TailEvent::Record { at });
                    }
                    return self.skip_to_next(wal, "a damaged or torn record".into());
                }
                Err(reason) if complete => return self.skip_to_next(wal, reason.into()),
                // Bytes of the active segment that do not check may be a write in progress.
                Err(_) => return Ok(TailEvent::End),
            }
        }
    }

    fn skip_to_next(&mut self, wal: &Wal, reason: String) -> Result<TailEvent, StorageError> {
        let from = self.at;
        let next = wal.next_segment(from.segment)?.unwrap_or_else(|| wal.active_segment());
        self.at = WalPosition {
            segment: next,
            offset: 0,
        };
        self.file = None;
        Ok(TailEvent::Lost {
            from,
            to: self.at,
            reason,
        })
    }
}

/// Reads the record at `offset` of a file `len` bytes long: its length with
/// the header, `None` if it is not all there, an error if it is damaged.
fn read_at(file: &File, offset: u64, len: u64, payload: &mut Vec<u8>) -> Result<Option<u64>, &'static str> {
    let mut header = [0u8; HEADER_BYTES];
    if offset + HEADER_BYTES as u64 > len || file.read_exact_at(&mut header, offset).is_err() {
        return Ok(None);
    }
    let [l0, l1, l2, l3, c0, c1, c2, c3] = header;
    let record_len = u32::from_le_bytes([l0, l1, l2, l3]) as usize;
    if record_len > MAX_RECORD_BYTES {
        return Err("record length out of range");
    }
    let end = offset + (HEADER_BYTES + record_len) as u64;
    if end > len {
        return Ok(None);
    }
    payload.resize(record_len, 0);
    if file.read_exact_at(payload, offset + HEADER_BYTES as u64).is_err() {
        return Ok(None);
    }
    if cairn_codec::crc32c(payload) != u32::from_le_bytes([c0, c1, c2, c3]) {
        return Err("record checksum mismatch");
    }
    Ok(Some(end - offset))
}
