//! The write-ahead log: segmented, checksummed records of committed batches.
//!
//! Format (docs/format/wal.md): a directory of segment files named by a
//! 20-digit sequence number; each record is `len: u32 LE | crc32c: u32 LE |
//! payload`. A record is handed to the OS in one `write` before the commit
//! returns, so it survives a crash of the process; fsync follows per
//! [`WalSync`](crate::WalSync). Replay stops at a torn tail of the last
//! segment and truncates it; a damaged earlier segment is replayed up to the
//! damage and quarantined, the rest of it lost and counted, never silent.

mod holds;
pub mod record;
pub mod tail;

use std::fs::{self, File, OpenOptions};
use std::io::{BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use cairn_storage::{StorageError, WalReplay};
use parking_lot::{Condvar, Mutex};

use crate::quarantine::{FileKind, Quarantine};

const HEADER_BYTES: usize = 8;
/// No single record may exceed this; larger lengths mean corruption.
pub const MAX_RECORD_BYTES: usize = 1 << 30;

pub struct Wal {
    dir: PathBuf,
    segment_bytes: u64,
    sync_every_commit: bool,
    active: Mutex<Segment>,
    /// The active segment's number, read without the commit path's lock.
    active_seq: AtomicU64,
    holds: Mutex<holds::Holds>,
    /// Records appended since the log was opened, raised under `active`'s
    /// lock; readers at the end wait on `appended` for it to move.
    appends: AtomicU64,
    appended: Condvar,
}

struct Segment {
    seq: u64,
    file: File,
    bytes: u64,
    needs_sync: bool,
    /// Set when a failed write left bytes that could not be cut off yet:
    /// records appended after them would be lost at replay, so none are
    /// until cutting them off succeeds (the filesystem writable again).
    torn: bool,
}

fn segment_path(dir: &Path, seq: u64) -> PathBuf {
    dir.join(format!("{seq:020}.wal"))
}

/// Sequence numbers of the segments in `dir`, ascending.
pub fn list_segments(dir: &Path) -> Result<Vec<u64>, StorageError> {
    let mut seqs = Vec::new();
    for entry in fs::read_dir(dir).map_err(StorageError::io("list", dir))? {
        let entry = entry.map_err(StorageError::io("list", dir))?;
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if let Some(seq) = name.strip_suffix(".wal").and_then(|s| s.parse().ok()) {
            seqs.push(seq);
        }
    }
    seqs.sort_unstable();
    Ok(seqs)
}

impl Wal {
    /// Opens the log for appending to a fresh segment after every existing
    /// one and numbered above `above`; existing segments are left for
    /// [`replay`] and [`Wal::remove_before`].
    pub fn open(dir: &Path, segment_bytes: u64, sync_every_commit: bool, above: u64) -> Result<Self, StorageError> {
        fs::create_dir_all(dir).map_err(StorageError::io("create", dir))?;
        let next = list_segments(dir)?.last().map_or(1, |s| s + 1).max(above + 1);
        let active = Segment::create(dir, next)?;
        Ok(Self {
            dir: dir.to_path_buf(),
            segment_bytes,
            sync_every_commit,
            active: Mutex::new(active),
            active_seq: AtomicU64::new(next),
            holds: Mutex::new(holds::Holds::open(dir, u64::MAX)?),
            appends: AtomicU64::new(0),
            appended: Condvar::new(),
        })
    }

    /// Appends one record. On return the bytes are in the OS (and on disk, if
    /// syncing every commit).
    #[cfg(test)]
    pub fn append(&self, payload: &[u8]) -> Result<(), StorageError> {
        self.append_framed(&frame(|dst| dst.extend_from_slice(payload)))
    }

    /// Appends a record built by [`frame`], in one `write`.
    pub fn append_framed(&self, frame: &[u8]) -> Result<(), StorageError> {
        let mut seg = self.active.lock();
        seg.mend(&self.dir)?;
        if seg.bytes > 0 && seg.bytes + frame.len() as u64 > self.segment_bytes {
            let next = seg.seq + 1;
            seg.sync(&self.dir)?;
            *seg = Segment::create(&self.dir, next)?;
        }
        let path = segment_path(&self.dir, seg.seq);
        if let Err(e) = seg.file.write_all(frame) {
            // A partial record followed by whole ones would make replay stop
            // at the partial one: cut it off before anything else is appended.
            seg.torn = seg.file.set_len(seg.bytes).is_err();
            return Err(StorageError::io("append to", &path)(e));
        }
        seg.bytes += frame.len() as u64;
        seg.needs_sync = true;
        let synced = if self.sync_every_commit {
            seg.sync(&self.dir)
        } else {
            Ok(())
        };
        self.appends.fetch_add(1, Ordering::Release);
        drop(seg);
        self.appended.notify_all();
        synced
    }

    /// Records appended so far: a reader takes this before it reads, and
    /// waits with it when it finds the end ([`Wal::wait_for_append`]).
    pub fn appends(&self) -> u64 {
        self.appends.load(Ordering::Acquire)
    }

    /// Waits until a record is appended after [`Wal::appends`] returned
    /// `seen`, [`Wal::wake_readers`] is called, or `timeout` passes.
    pub fn wait_for_append(&self, seen: u64, timeout: std::time::Duration) {
        let mut seg = self.active.lock();
        if self.appends.load(Ordering::Acquire) == seen {
            self.appended.wait_for(&mut seg, timeout);
        }
    }

    /// Ends every [`Wal::wait_for_append`] now (a reader stopping).
    pub fn wake_readers(&self) {
        let _seg = self.active.lock();
        self.appended.notify_all();
    }

    /// fsyncs the active segment if anything was written since the last sync.
    pub fn sync(&self) -> Result<(), StorageError> {
        self.active.lock().sync(&self.dir)
    }

    /// Starts a new segment and returns its sequence number: every record
    /// appended before the call is in an older segment.
    pub fn rotate(&self) -> Result<u64, StorageError> {
        let mut seg = self.active.lock();
        seg.mend(&self.dir)?;
        seg.sync(&self.dir)?;
        let next = seg.seq + 1;
        *seg = Segment::create(&self.dir, next)?;
        self.active_seq.store(next, Ordering::Release);
        Ok(next)
    }

    /// Deletes segments older than `seq` (their contents are on disk in
    /// parts); those a hold still needs are retired instead.
    pub fn remove_before(&self, seq: u64) -> Result<(), StorageError> {
        let holds = self.holds.lock();
        let oldest_held = holds.oldest();
        for s in list_segments(&self.dir)?.into_iter().filter(|&s| s < seq) {
            if s >= oldest_held {
                holds.retire(&self.dir, s)?;
            } else {
                let path = segment_path(&self.dir, s);
                fs::remove_file(&path).map_err(StorageError::io("remove", &path))?;
            }
        }
        holds.delete_passed()
    }

    /// Bounds the bytes of retired segments (see holds.rs).
    pub fn set_max_retired_bytes(&self, max: u64) -> Result<(), StorageError> {
        let mut holds = self.holds.lock();
        holds.max_retired_bytes = max;
        holds.delete_passed()
    }

    /// Keeps segments from `segment` on for the reader `name`, until moved
    /// on by another call or dropped by [`Wal::retain_holds`].
    pub fn hold(&self, name: &str, segment: u64) -> Result<(), StorageError> {
        self.holds.lock().set(name, segment)
    }

    /// The segment `name` holds, if it has a hold.
    pub fn held(&self, name: &str) -> Option<u64> {
        self.holds.lock().get(name)
    }

    /// Drops the holds not named in `keep`.
    pub fn retain_holds(&self, keep: &[String]) -> Result<(), StorageError> {
        self.holds.lock().retain(keep)
    }

    /// Where segment `seq` is now: in the log, retired, or gone.
    pub fn segment_file(&self, seq: u64) -> Option<PathBuf> {
        let live = segment_path(&self.dir, seq);
        if live.is_file() {
            return Some(live);
        }
        let retired = segment_path(self.holds.lock().retired_dir(), seq);
        // Retired between the two looks: it is in the retired directory now.
        retired
            .is_file()
            .then_some(retired)
            .or_else(|| live.is_file().then_some(live))
    }

    /// The first segment after `seq` that still exists, live or retired.
    pub fn next_segment(&self, seq: u64) -> Result<Option<u64>, StorageError> {
        let retired = self.holds.lock().retired_dir().to_path_buf();
        let mut found = list_segments(&self.dir)?.into_iter().find(|&s| s > seq);
        if retired.is_dir() {
            let older = list_segments(&retired)?.into_iter().find(|&s| s > seq);
            found = match (found, older) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
        }
        Ok(found)
    }

    /// The end of the log now: where the next record will start.
    pub fn end(&self) -> tail::WalPosition {
        let seg = self.active.lock();
        tail::WalPosition {
            segment: seg.seq,
            offset: seg.bytes,
        }
    }

    /// The segment appended to now.
    pub fn active_segment(&self) -> u64 {
        self.active_seq.load(Ordering::Acquire)
    }

    /// Total bytes of all segments on disk, retired ones included.
    pub fn disk_bytes(&self) -> u64 {
        let live: u64 = fs::read_dir(&self.dir)
            .map(|rd| {
                rd.filter_map(|e| e.ok()?.metadata().ok())
                    .filter(|m| m.is_file())
                    .map(|m| m.len())
                    .sum()
            })
            .unwrap_or(0);
        live + self.holds.lock().retired_bytes()
    }
}

impl Segment {
    fn create(dir: &Path, seq: u64) -> Result<Self, StorageError> {
        let path = segment_path(dir, seq);
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(StorageError::io("create", &path))?;
        sync_dir(dir)?;
        Ok(Self {
            seq,
            file,
            bytes: 0,
            needs_sync: false,
            torn: false,
        })
    }

    /// Cuts off the torn record a failed write left, if one is left, or
    /// fails: nothing may follow it, neither a record nor a newer segment
    /// (replay would stop at it). Tried again at every append, so the log
    /// mends itself once the filesystem takes writes again.
    fn mend(&mut self, dir: &Path) -> Result<(), StorageError> {
        if !self.torn {
            return Ok(());
        }
        let path = segment_path(dir, self.seq);
        match self.file.set_len(self.bytes) {
            Ok(()) => {
                tracing::info!(path = %path.display(), "cut off the torn record of a failed write");
                self.torn = false;
                Ok(())
            }
            Err(e) => {
                let reason = format!("an earlier failed write left a torn record that cannot be cut off yet: {e}");
                Err(StorageError::io("append to", path)(std::io::Error::new(
                    e.kind(),
                    reason,
                )))
            }
        }
    }

    fn sync(&mut self, dir: &Path) -> Result<(), StorageError> {
        if self.needs_sync {
            self.file
                .sync_data()
                .map_err(StorageError::io("sync", segment_path(dir, self.seq)))?;
            self.needs_sync = false;
        }
        Ok(())
    }
}

/// A whole record: `encode` writes the payload after room for the header,
/// which is filled in afterwards, so a commit can frame its record (and
/// checksum it) before taking the commit lock, without copying the payload.
pub fn frame(encode: impl FnOnce(&mut Vec<u8>)) -> Vec<u8> {
    let mut buf = vec![0u8; HEADER_BYTES];
    encode(&mut buf);
    let (header, payload) = buf.split_at_mut(HEADER_BYTES);
    header[..4].copy_from_slice(&(payload.len() as u32).to_le_bytes());
    header[4..].copy_from_slice(&cairn_codec::crc32c(payload).to_le_bytes());
    buf
}

/// fsyncs a directory so a created, renamed or removed entry is durable.
pub fn sync_dir(dir: &Path) -> Result<(), StorageError> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(StorageError::io("sync directory", dir))
}

/// Reads every record of the segments in `dir` with sequence below `until`,
/// in order, calling `apply(segment_seq, payload)` and reporting each
/// segment to `progress` as it starts. A torn or corrupt tail in the last
/// segment is truncated away (a crash mid-write; a copy goes to the
/// quarantine when whole records follow the damage, which no torn write
/// leaves); an earlier segment damaged is read up to the damage and moved
/// into the quarantine, the records after it lost.
pub fn replay(
    dir: &Path,
    until: u64,
    progress: &WalReplay,
    quarantine: &Quarantine,
    mut apply: impl FnMut(u64, &[u8]) -> Result<(), StorageError>,
) -> Result<(), StorageError> {
    let segments: Vec<u64> = list_segments(dir)?.into_iter().filter(|&s| s < until).collect();
    if let (Some(&first), Some(&last)) = (segments.first(), segments.last()) {
        progress.start(first, last);
    }
    for (i, &seq) in segments.iter().enumerate() {
        progress.at(seq);
        let is_last = i + 1 == segments.len();
        let path = segment_path(dir, seq);
        let file = File::open(&path).map_err(StorageError::io("open", &path))?;
        let file_len = file.metadata().map_err(StorageError::io("stat", &path))?.len();
        let mut reader = BufReader::with_capacity(1 << 20, file);
        let mut offset: u64 = 0;
        let mut payload = Vec::new();
        loop {
            let (reason, whole) = match read_record(&mut reader, file_len.saturating_sub(offset), &mut payload) {
                Ok(Some(())) => match apply(seq, &payload) {
                    // `apply` names the directory for a record that passed
                    // its checksum but does not decode: damage here too.
                    Err(StorageError::Corrupt { path: named, reason }) if named == dir => (reason, true),
                    applied => {
                        applied?;
                        offset += (HEADER_BYTES + payload.len()) as u64;
                        continue;
                    }
                },
                Ok(None) => break,
                Err(RecordError::Io(e)) => return Err(StorageError::io("read", &path)(e)),
                Err(RecordError::Damaged(reason)) => (reason.to_string(), reason == CHECKSUM_MISMATCH),
            };
            let lost = file_len - offset;
            if is_last {
                tracing::warn!(path = %path.display(), offset, reason, "truncating torn WAL tail");
                if whole && offset + scan_whole_record(&path, offset)? < file_len {
                    let why = format!("{reason} at offset {offset}, followed by more records; {lost} bytes lost");
                    quarantine.copy(&path, FileKind::Wal, &why)?;
                }
                let f = OpenOptions::new()
                    .write(true)
                    .open(&path)
                    .map_err(StorageError::io("open", &path))?;
                f.set_len(offset).map_err(StorageError::io("truncate", &path))?;
                f.sync_all().map_err(StorageError::io("sync", &path))?;
            } else {
                tracing::error!(
                    path = %path.display(),
                    offset,
                    lost_bytes = lost,
                    reason,
                    "damaged WAL segment: the samples of its records from the damage on are lost"
                );
                let why = format!("{reason} at offset {offset}; {lost} bytes of records after it not replayed");
                quarantine.take(&path, FileKind::Wal, &why)?;
            }
            break;
        }
    }
    Ok(())
}

/// Reads every record of the segment at `path` without changing it,
/// handing each payload to `check`. Returns the records read; an error
/// names the damage and its offset. A record cut short at the end of the
/// `last` segment is a torn write (replay truncates it), not damage.
pub fn check_segment(
    path: &Path,
    last: bool,
    mut check: impl FnMut(&[u8]) -> Result<(), String>,
) -> Result<u64, String> {
    let file = File::open(path).map_err(|e| format!("cannot open: {e}"))?;
    let file_len = file.metadata().map_err(|e| format!("cannot stat: {e}"))?.len();
    let mut reader = BufReader::with_capacity(1 << 20, file);
    let (mut offset, mut records) = (0u64, 0u64);
    let mut payload = Vec::new();
    loop {
        match read_record(&mut reader, file_len.saturating_sub(offset), &mut payload) {
            Ok(Some(())) => {
                check(&payload).map_err(|reason| format!("record at offset {offset}: {reason}"))?;
                offset += (HEADER_BYTES + payload.len()) as u64;
                records += 1;
            }
            Ok(None) => return Ok(records),
            Err(RecordError::Io(e)) => return Err(format!("cannot read at offset {offset}: {e}")),
            Err(RecordError::Damaged(reason)) if last && reason != CHECKSUM_MISMATCH => return Ok(records),
            Err(RecordError::Damaged(_))
                if last && scan_whole_record(path, offset).is_ok_and(|len| offset + len >= file_len) =>
            {
                return Ok(records);
            }
            Err(RecordError::Damaged(reason)) => return Err(format!("{reason} at offset {offset}")),
        }
    }
}

const CHECKSUM_MISMATCH: &str = "record checksum mismatch";

/// The length of the whole record at `offset` of `path` (header and
/// payload), whose checksum failed.
fn scan_whole_record(path: &Path, offset: u64) -> Result<u64, StorageError> {
    use std::os::unix::fs::FileExt;
    let file = File::open(path).map_err(StorageError::io("open", path))?;
    let mut header = [0u8; 4];
    file.read_exact_at(&mut header, offset)
        .map_err(StorageError::io("read", path))?;
    Ok(HEADER_BYTES as u64 + u64::from(u32::from_le_bytes(header)))
}

enum RecordError {
    Io(std::io::Error),
    /// Bytes that are not a whole, valid record: a torn write or corruption.
    Damaged(&'static str),
}

/// Reads one record into `payload`. `Ok(None)` at a clean end of file.
/// `remaining` is the file's length after the record start: it bounds the
/// allocation, so a corrupt length cannot make replay allocate gigabytes.
fn read_record(r: &mut impl Read, remaining: u64, payload: &mut Vec<u8>) -> Result<Option<()>, RecordError> {
    use RecordError::Damaged;
    let mut header = [0u8; HEADER_BYTES];
    match read_full(r, &mut header).map_err(RecordError::Io)? {
        0 => return Ok(None),
        HEADER_BYTES => {}
        _ => return Err(Damaged("truncated record header")),
    }
    let [l0, l1, l2, l3, c0, c1, c2, c3] = header;
    let len = u32::from_le_bytes([l0, l1, l2, l3]) as usize;
    let crc = u32::from_le_bytes([c0, c1, c2, c3]);
    if len > MAX_RECORD_BYTES {
        return Err(Damaged("record length out of range"));
    }
    if (HEADER_BYTES + len) as u64 > remaining {
        return Err(Damaged("truncated record"));
    }
    payload.resize(len, 0);
    if read_full(r, payload).map_err(RecordError::Io)? != len {
        return Err(Damaged("truncated record"));
    }
    if cairn_codec::crc32c(payload) != crc {
        return Err(Damaged(CHECKSUM_MISMATCH));
    }
    Ok(Some(()))
}

/// Like `read_exact`, but reports how much was read before end of file.
fn read_full(r: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

#[cfg(test)]
mod tests;
