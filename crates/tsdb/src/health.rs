//! Whether the engine takes writes, and why not when it does not: free disk
//! space against the reserve, failures of the write-ahead log, and
//! in-memory data against its bound (flushes failing or slower than
//! ingestion). Each refusal clears by itself once its cause is gone: the
//! reserve is looked at again, the next append tried, the next flush run.

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use cairn_storage::{RefusalReason, StorageError, WriteOperation, WriteRefusal};
use parking_lot::{Condvar, Mutex};

pub(crate) struct WriteHealth {
    /// Writes are refused while fewer bytes than this are free (0: never).
    min_free_bytes: u64,
    /// Free bytes at the last look; `u64::MAX` until the first.
    free_bytes: AtomicU64,
    /// The last WAL append's failure, until an append succeeds.
    wal_fault: Mutex<Option<WriteRefusal>>,
    /// Whether `wal_fault` is set: commits look here, not at the lock.
    wal_faulty: AtomicBool,
    /// The last flush's failure, until a flush succeeds.
    flush_fault: Mutex<Option<String>>,
    errors: [AtomicU64; WriteOperation::ALL.len()],
    /// In-memory bytes as the last commit left them: admission looks here
    /// first, and sums the partitions only when this is over the bound.
    memory_seen: AtomicU64,
    /// Flush attempts so far; writers held back by memory wait for the next.
    flushes: Mutex<u64>,
    flushed: Condvar,
}

impl WriteHealth {
    pub fn new(min_free_bytes: u64) -> Self {
        Self {
            min_free_bytes,
            free_bytes: AtomicU64::new(u64::MAX),
            wal_fault: Mutex::new(None),
            wal_faulty: AtomicBool::new(false),
            flush_fault: Mutex::new(None),
            errors: Default::default(),
            memory_seen: AtomicU64::new(0),
            flushes: Mutex::new(0),
            flushed: Condvar::new(),
        }
    }

    /// Looks at the free space of `dir`'s filesystem again.
    pub fn check_free_space(&self, dir: &Path) {
        match free_bytes(dir) {
            Ok(free) => self.free_bytes.store(free, Ordering::Relaxed),
            Err(e) => tracing::warn!(path = %dir.display(), error = %e, "could not read the free disk space"),
        }
    }

    pub fn free_bytes(&self) -> Option<u64> {
        Some(self.free_bytes.load(Ordering::Relaxed)).filter(|&b| b != u64::MAX)
    }

    fn low_space(&self, dir: &Path) -> Option<WriteRefusal> {
        let free = self.free_bytes.load(Ordering::Relaxed);
        (free < self.min_free_bytes).then(|| WriteRefusal {
            reason: RefusalReason::LowDiskSpace,
            message: format!(
                "only {free} bytes are free on the filesystem of {}, under the reserve of {} \
                 (--storage.min-free-disk-bytes); writes resume once space is freed",
                dir.display(),
                self.min_free_bytes
            ),
        })
    }

    /// Records how a WAL append went.
    pub fn record_wal_append(&self, result: &Result<(), StorageError>) {
        match result {
            Ok(()) => {
                if self.wal_faulty.load(Ordering::Relaxed) {
                    *self.wal_fault.lock() = None;
                    self.wal_faulty.store(false, Ordering::Relaxed);
                    tracing::info!("the write-ahead log takes appends again");
                }
            }
            Err(e) => {
                self.count_error(WriteOperation::WalAppend);
                *self.wal_fault.lock() = Some(WriteRefusal {
                    reason: reason_of(e),
                    message: format!("the write-ahead log cannot be appended to: {}", full_message(e)),
                });
                self.wal_faulty.store(true, Ordering::Relaxed);
            }
        }
    }

    /// Records how a flush went and wakes the writers waiting for one.
    pub fn record_flush(&self, result: &Result<(), StorageError>) {
        let mut fault = self.flush_fault.lock();
        match result {
            Ok(()) => {
                if fault.take().is_some() {
                    tracing::info!("flushes succeed again");
                }
            }
            Err(e) => {
                self.count_error(WriteOperation::Flush);
                *fault = Some(full_message(e));
            }
        }
        drop(fault);
        *self.flushes.lock() += 1;
        self.flushed.notify_all();
    }

    /// Records the in-memory bytes a commit left.
    pub fn note_memory(&self, bytes: u64) {
        self.memory_seen.store(bytes, Ordering::Relaxed);
    }

    pub fn count_error(&self, op: WriteOperation) {
        self.errors[op as usize].fetch_add(1, Ordering::Relaxed);
    }

    pub fn errors(&self) -> Vec<(WriteOperation, u64)> {
        WriteOperation::ALL
            .iter()
            .map(|&op| (op, self.errors[op as usize].load(Ordering::Relaxed)))
            .collect()
    }

    /// Why writes are refused now, given in-memory data of `memory` bytes
    /// against a bound of `max`.
    pub fn refusal(&self, dir: &Path, memory: u64, max: u64) -> Option<WriteRefusal> {
        self.low_space(dir)
            .or_else(|| self.wal_fault.lock().clone())
            .or_else(|| (memory > max).then(|| self.memory_refusal(memory, max)))
    }

    fn memory_refusal(&self, memory: u64, max: u64) -> WriteRefusal {
        let mut message = format!(
            "in-memory data ({memory} bytes) is over its bound (--storage.max-in-memory-bytes={max}): \
             storage cannot absorb writes this fast"
        );
        if let Some(fault) = &*self.flush_fault.lock() {
            message.push_str("; flushes to disk are failing: ");
            message.push_str(fault);
        }
        WriteRefusal {
            reason: RefusalReason::MemoryFull,
            message,
        }
    }

    /// Admits a commit or refuses it with a retryable error: under the
    /// reserve of free space (looked at again, so writes resume as soon as
    /// space is freed), or while in-memory data stays over `max` for
    /// `stall` (flushes are asked for with `nudge` and waited for).
    /// WAL faults are not refused here: the commit's append is the retry.
    pub fn admit(
        &self,
        dir: &Path,
        memory: impl Fn() -> u64,
        max: u64,
        stall: Duration,
        nudge: impl Fn(),
    ) -> Result<(), StorageError> {
        if self.low_space(dir).is_some() {
            self.check_free_space(dir);
            if let Some(refusal) = self.low_space(dir) {
                return Err(StorageError::Unavailable(refusal.message));
            }
        }
        if self.memory_seen.load(Ordering::Relaxed) <= max {
            return Ok(());
        }
        let mut used = memory();
        if used <= max {
            return Ok(());
        }
        let deadline = Instant::now() + stall;
        let mut flushes = self.flushes.lock();
        while used > max {
            nudge();
            if self.flushed.wait_until(&mut flushes, deadline).timed_out() {
                used = memory();
                if used > max {
                    return Err(StorageError::Unavailable(self.memory_refusal(used, max).message));
                }
                break;
            }
            used = memory();
        }
        Ok(())
    }
}

fn reason_of(e: &StorageError) -> RefusalReason {
    match e {
        StorageError::Io { source, .. } => RefusalReason::of_io(source.kind()),
        _ => RefusalReason::IoError,
    }
}

/// The error with its cause (an I/O error's own text is its source's).
fn full_message(e: &StorageError) -> String {
    match e {
        StorageError::Io { source, .. } => format!("{e}: {source}"),
        _ => e.to_string(),
    }
}

/// Bytes an unprivileged process may still write on `dir`'s filesystem.
fn free_bytes(dir: &Path) -> std::io::Result<u64> {
    let st = rustix::fs::statvfs(dir)?;
    Ok(st.f_bavail.saturating_mul(st.f_frsize))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn full() -> StorageError {
        StorageError::io("append to", "/d/wal/1.wal")(std::io::Error::from(std::io::ErrorKind::StorageFull))
    }

    #[test]
    fn a_wal_fault_refuses_until_an_append_succeeds() {
        let h = WriteHealth::new(0);
        let dir = Path::new("/d");
        assert_eq!(h.refusal(dir, 0, 10), None);
        h.record_wal_append(&Err(full()));
        let r = h.refusal(dir, 0, 10).unwrap();
        assert_eq!(r.reason, RefusalReason::DiskFull);
        assert!(r.message.contains("/d/wal/1.wal"), "{}", r.message);
        h.record_wal_append(&Ok(()));
        assert_eq!(h.refusal(dir, 0, 10), None);
        assert_eq!(h.errors()[WriteOperation::WalAppend as usize].1, 1);
    }

    #[test]
    fn memory_over_its_bound_names_a_failing_flush() {
        let h = WriteHealth::new(0);
        let dir = Path::new("/d");
        h.record_flush(&Err(full()));
        let r = h.refusal(dir, 11, 10).unwrap();
        assert_eq!(r.reason, RefusalReason::MemoryFull);
        assert!(r.message.contains("flushes to disk are failing"), "{}", r.message);
        h.record_flush(&Ok(()));
        assert!(!h.refusal(dir, 11, 10).unwrap().message.contains("failing"));
        assert_eq!(h.refusal(dir, 10, 10), None);
    }

    #[test]
    fn admission_waits_for_a_flush_that_makes_room_and_refuses_when_none_does() {
        let h = std::sync::Arc::new(WriteHealth::new(0));
        let dir = Path::new("/d");
        let memory = std::sync::Arc::new(AtomicU64::new(20));
        let (h2, m2) = (h.clone(), memory.clone());
        let flusher = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            m2.store(5, Ordering::Relaxed);
            h2.record_flush(&Ok(()));
        });
        let load = || memory.load(Ordering::Relaxed);
        h.note_memory(20);
        h.admit(dir, load, 10, Duration::from_secs(30), || {}).unwrap();
        flusher.join().unwrap();
        memory.store(20, Ordering::Relaxed);
        let started = Instant::now();
        let err = h.admit(dir, load, 10, Duration::from_millis(50), || {}).unwrap_err();
        assert!(started.elapsed() >= Duration::from_millis(50));
        assert_eq!(err.kind(), cairn_storage::ErrorKind::Unavailable);
        assert!(err.to_string().contains("max-in-memory-bytes"), "{err}");
    }

    #[test]
    fn under_the_free_space_reserve_writes_are_refused_and_resume_when_it_is_met() {
        let dir = tempfile::tempdir().unwrap();
        let h = WriteHealth::new(u64::MAX - 1);
        h.check_free_space(dir.path());
        assert!(h.free_bytes().is_some());
        let err = h.admit(dir.path(), || 0, 10, Duration::ZERO, || {}).unwrap_err();
        assert!(err.to_string().contains("--storage.min-free-disk-bytes"), "{err}");
        assert_eq!(
            h.refusal(dir.path(), 0, 10).map(|r| r.reason),
            Some(RefusalReason::LowDiskSpace)
        );
        let roomy = WriteHealth::new(1);
        roomy.check_free_space(dir.path());
        roomy.admit(dir.path(), || 0, 10, Duration::ZERO, || {}).unwrap();
    }
}
