//! The storage conformance suite over the embedded engine, in several
//! configurations that force data through every layer (rows, in-memory
//! parts, disk parts).

use cairn_tsdb::{Config, Tsdb};

fn config(dir: &std::path::Path) -> Config {
    let mut c = Config::new(dir);
    c.background = false;
    // Conformance data uses timestamps near the epoch.
    c.retention = std::time::Duration::from_secs(100 * 365 * 86_400);
    c
}

#[test]
fn tsdb_passes_conformance_with_row_buffers() {
    let dirs = std::cell::RefCell::new(Vec::new());
    cairn_storage::conformance::run_all(|| {
        let dir = tempfile::tempdir().unwrap();
        let db = Tsdb::open(config(dir.path())).unwrap();
        dirs.borrow_mut().push(dir);
        db
    });
}

#[test]
fn tsdb_passes_conformance_with_tiny_buffers() {
    let dirs = std::cell::RefCell::new(Vec::new());
    cairn_storage::conformance::run_all(|| {
        let dir = tempfile::tempdir().unwrap();
        let mut c = config(dir.path());
        // Every commit seals its rows into an in-memory part.
        c.max_rows_per_buffer = 1;
        c.seal_rows_per_series = 0;
        let db = Tsdb::open(c).unwrap();
        dirs.borrow_mut().push(dir);
        db
    });
}
