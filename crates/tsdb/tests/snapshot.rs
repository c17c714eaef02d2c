//! Snapshots: a consistent, hard-linked copy that opens as a data directory.

use std::os::unix::fs::MetadataExt;

use cairn_model::{Labels, Matcher, Sample};
use cairn_storage::conformance::read;
use cairn_storage::{Admin, Appendable, Queryable};
use cairn_tsdb::Tsdb;

use crate::common::{HOUR, config, now};

fn write(db: &Tsdb, series: usize, start: i64) {
    let mut app = db.appender();
    for i in 0..series {
        let labels = Labels::from_pairs([("__name__", "m"), ("i", &i.to_string())]);
        let samples: Vec<Sample> = (0..30)
            .map(|k| Sample::new(start + k * 15_000, (i as i64 * 100 + k) as f64))
            .collect();
        app.append(&labels, &samples).unwrap();
    }
    app.commit().unwrap();
}

fn all(db: &dyn Queryable) -> Vec<(Labels, Vec<Sample>)> {
    read(db, &[Matcher::equal("__name__", "m")], i64::MIN / 2, i64::MAX / 2)
}

fn files_under(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(files_under(&path));
        } else {
            out.push(path);
        }
    }
    out
}

#[test]
fn snapshot_holds_acknowledged_writes_links_parts_and_opens() {
    let dir = tempfile::tempdir().unwrap();
    let db = Tsdb::open(config(dir.path())).unwrap();
    write(&db, 20, now() - 30 * HOUR);
    db.flush().unwrap();
    // Still in memory (and the WAL) at snapshot time: the snapshot flushes it.
    write(&db, 30, now() - HOUR);
    let expected = all(&db);
    let dest = tempfile::tempdir().unwrap().path().join("snap");
    db.snapshot(&dest, false).unwrap();
    // Writes after the snapshot do not reach it, and tombstones are copied, not shared.
    write(&db, 40, now() - HOUR / 2);
    db.delete_series(&[Matcher::equal("i", "0")], i64::MIN / 2, i64::MAX / 2)
        .unwrap();
    db.flush().unwrap();

    let parts: Vec<_> = files_under(&dest)
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "cpart"))
        .collect();
    assert!(parts.len() >= 2, "{parts:?}");
    for part in &parts {
        assert!(
            std::fs::metadata(part).unwrap().nlink() >= 2
                || !dir.path().join(part.strip_prefix(&dest).unwrap()).exists()
        );
    }
    assert!(!dest.join("wal").exists());
    let copy = Tsdb::open(config(&dest)).unwrap();
    assert_eq!(all(&copy), expected);
}

#[test]
fn snapshot_skipping_the_head_holds_only_flushed_data() {
    let dir = tempfile::tempdir().unwrap();
    let db = Tsdb::open(config(dir.path())).unwrap();
    write(&db, 10, now() - 30 * HOUR);
    db.flush().unwrap();
    let flushed = all(&db);
    write(&db, 10, now() - HOUR);
    let dest = tempfile::tempdir().unwrap().path().join("snap");
    db.snapshot(&dest, true).unwrap();
    let copy = Tsdb::open(config(&dest)).unwrap();
    assert_eq!(all(&copy), flushed);
}
