//! Commits against in-memory data at its bound: each waits for a flush to
//! make room, is refused for retry when none does, and is taken again once
//! one has.

use std::time::Duration;

use cairn_model::{Labels, Matcher, Sample};
use cairn_storage::conformance::read;
use cairn_storage::{Admin, Appendable, ErrorKind, RefusalReason, StorageError};
use cairn_tsdb::Tsdb;

use crate::common::{HOUR, config, now};

fn commit(db: &Tsdb, batch: i64, start: i64) -> Result<(), StorageError> {
    let mut app = db.appender();
    for i in 0..100 {
        let labels = Labels::from_pairs([("__name__", "m"), ("i", &i.to_string())]);
        let samples: Vec<Sample> = (0..10)
            .map(|k| Sample::new(start + (batch * 10 + k) * 1_000, (batch * 10 + k) as f64))
            .collect();
        app.append(&labels, &samples)?;
    }
    app.commit().map(|_| ())
}

#[test]
fn commits_over_the_memory_bound_are_refused_until_a_flush_makes_room() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = config(dir.path());
    c.max_in_memory_bytes = 256 << 10;
    c.max_write_stall = Duration::from_millis(50);
    c.min_free_disk_bytes = 0;
    let db = Tsdb::open(c).unwrap();
    let start = now() - HOUR;
    let mut batch = 0;
    let refused = loop {
        assert!(batch < 10_000, "in-memory data never reached its bound");
        match commit(&db, batch, start) {
            Ok(()) => batch += 1,
            Err(e) => break e,
        }
    };
    assert_eq!(refused.kind(), ErrorKind::Unavailable, "{refused}");
    assert!(refused.to_string().contains("max-in-memory-bytes"), "{refused}");
    let refusal = db.stats().write_refusal.expect("a refusal while over the bound");
    assert_eq!(refusal.reason, RefusalReason::MemoryFull);

    db.flush().unwrap();
    assert_eq!(db.stats().write_refusal, None);
    commit(&db, batch, start).unwrap();
    let stored = read(&db, &[Matcher::equal("__name__", "m")], start, start + 2 * HOUR);
    assert_eq!(stored.len(), 100);
    assert!(stored.iter().all(|(_, s)| s.len() as i64 == (batch + 1) * 10));
}
