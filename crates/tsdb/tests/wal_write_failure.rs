//! A commit whose WAL write fails (disk full, file size limit) reports the
//! failure, leaves no partial record behind, and later commits survive a
//! restart. Its own test binary: the file size limit it sets is per process.

#![cfg(target_os = "linux")]

use cairn_model::{Labels, Matcher, Sample};
use cairn_storage::conformance::read;
use cairn_storage::{Admin, Appendable, Queryable};
use cairn_tsdb::{Config, Tsdb};

mod common;
use common::now;

#[allow(unsafe_code)]
mod limit {
    use std::ffi::c_int;

    const RLIMIT_FSIZE: c_int = 1;
    const SIGXFSZ: c_int = 25;
    const SIG_IGN: usize = 1;

    #[repr(C)]
    struct Rlimit {
        cur: u64,
        max: u64,
    }

    unsafe extern "C" {
        fn setrlimit(resource: c_int, limit: *const Rlimit) -> c_int;
        fn getrlimit(resource: c_int, limit: *mut Rlimit) -> c_int;
        fn signal(signum: c_int, handler: usize) -> usize;
    }

    /// Limits the size of files this process writes to `bytes`: a write
    /// crossing it is cut short, then fails with EFBIG (instead of SIGXFSZ).
    pub fn file_size(bytes: u64) {
        // SAFETY: plain system calls on values owned here.
        unsafe {
            signal(SIGXFSZ, SIG_IGN);
            let mut l = Rlimit { cur: 0, max: 0 };
            assert_eq!(getrlimit(RLIMIT_FSIZE, &mut l), 0);
            l.cur = bytes.min(l.max);
            assert_eq!(setrlimit(RLIMIT_FSIZE, &l), 0);
        }
    }

    pub fn unlimited_file_size() {
        // SAFETY: as above.
        unsafe {
            let mut l = Rlimit { cur: 0, max: 0 };
            assert_eq!(getrlimit(RLIMIT_FSIZE, &mut l), 0);
            l.cur = l.max;
            assert_eq!(setrlimit(RLIMIT_FSIZE, &l), 0);
        }
    }
}

/// One commit of 20 series × 10 samples, values tagged with `batch`.
fn write(db: &Tsdb, batch: usize, start: i64) -> Result<(), cairn_storage::StorageError> {
    let mut app = db.appender();
    for i in 0..20 {
        let labels = Labels::from_pairs([("__name__", "m"), ("i", &i.to_string())]);
        let samples: Vec<Sample> = (0..10)
            .map(|k| Sample::new(start + (batch * 10 + k) as i64 * 1000, batch as f64))
            .collect();
        app.append(&labels, &samples)?;
    }
    app.commit().map(|_| ())
}

/// The batches whose samples are stored, from the values they carry.
fn stored_batches(db: &dyn Queryable) -> Vec<usize> {
    let series = read(db, &[Matcher::equal("__name__", "m")], i64::MIN / 2, i64::MAX / 2);
    let mut batches: Vec<usize> = series
        .iter()
        .flat_map(|(_, samples)| samples.iter().map(|s| s.v as usize))
        .collect();
    batches.sort_unstable();
    batches.dedup();
    batches
}

#[test]
fn failed_wal_write_leaves_no_partial_record() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = Config::new(dir.path());
    config.background = false;
    let start = now() - 3_600_000;
    let db = Tsdb::open(config.clone()).unwrap();
    write(&db, 0, start).unwrap();

    // Room for a few more commits, then a write cut short.
    let wal_bytes = db.stats().wal_bytes;
    limit::file_size(wal_bytes * 3 + wal_bytes / 2);
    let mut ok = vec![0];
    let mut failed = Vec::new();
    for batch in 1..8 {
        match write(&db, batch, start) {
            Ok(()) => ok.push(batch),
            Err(_) => failed.push(batch),
        }
    }
    assert!(!failed.is_empty(), "the file size limit made a commit fail");
    assert_eq!(stored_batches(&db), ok, "a failed commit is not visible");

    // Once there is room again, commits succeed and are replayed after the
    // failed one's bytes, which were cut off.
    limit::unlimited_file_size();
    write(&db, 9, start).unwrap();
    ok.push(9);
    std::mem::forget(db);
    std::fs::remove_file(dir.path().join("LOCK")).ok();
    let db = Tsdb::open(config).unwrap();
    assert_eq!(stored_batches(&db), ok);
}
