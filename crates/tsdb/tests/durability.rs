//! Restart, flush, merge, delete and retention behaviour of the engine.

use std::time::Duration;

use cairn_model::{Labels, Matcher, Sample};
use cairn_storage::conformance::read;
use cairn_storage::{Admin, Appendable, Queryable};
use cairn_tsdb::Tsdb;

use crate::common::{DAY, HOUR, config, now, settled_changes, yesterday_noon};

fn series(i: usize) -> Labels {
    Labels::from_pairs([("__name__", "m"), ("i", &i.to_string())])
}

/// Writes `n` series × `per` samples at 15 s spacing from `start`.
fn write(db: &Tsdb, n: usize, per: usize, start: i64) {
    let mut app = db.appender();
    for i in 0..n {
        let samples: Vec<Sample> = (0..per)
            .map(|k| Sample::new(start + k as i64 * 15_000, (i * 1000 + k) as f64))
            .collect();
        app.append(&series(i), &samples).unwrap();
    }
    app.commit().unwrap();
}

fn all(db: &dyn Queryable) -> Vec<(Labels, Vec<Sample>)> {
    read(db, &[Matcher::equal("__name__", "m")], i64::MIN / 2, i64::MAX / 2)
}

#[test]
fn tsdb_data_survives_reopen_from_wal_only() {
    let dir = tempfile::tempdir().unwrap();
    let start = now() - 2 * HOUR;
    let before = {
        let db = Tsdb::open(config(dir.path())).unwrap();
        write(&db, 50, 20, start);
        let got = all(&db);
        // Simulate a crash: no flush, no close.
        std::mem::forget(db);
        got
    };
    assert_eq!(before.len(), 50);
    // The forgotten instance still holds the lock file; a crashed process would not.
    std::fs::remove_file(dir.path().join("LOCK")).ok();
    let db = Tsdb::open(config(dir.path())).unwrap();
    assert_eq!(all(&db), before);
}

#[test]
fn tsdb_data_survives_flush_merge_and_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let start = now() - 20 * HOUR;
    let mut c = config(dir.path());
    c.max_rows_per_buffer = 100;
    c.seal_rows_per_series = 0;
    let expected = {
        let db = Tsdb::open(c.clone()).unwrap();
        for round in 0..30 {
            write(&db, 20, 10, start + round * 150_000);
            db.flush().unwrap();
            db.maintain().unwrap();
        }
        let got = all(&db);
        assert!(db.stats().merges_total > 0, "merges ran");
        assert!(
            db.stats().parts <= 16,
            "merges bound the part count: {}",
            db.stats().parts
        );
        db.close().unwrap();
        got
    };
    assert_eq!(expected.len(), 20);
    assert_eq!(expected[0].1.len(), 300);
    let db = Tsdb::open(c).unwrap();
    assert_eq!(all(&db), expected);
    db.compact().unwrap();
    assert_eq!(all(&db), expected);
}

#[test]
fn tsdb_merges_young_flush_parts_as_they_come() {
    let dir = tempfile::tempdir().unwrap();
    let db = Tsdb::open(config(dir.path())).unwrap();
    // A flush a minute, as during live ingestion, of that minute's samples,
    // from the start of an hour so that the minutes stay in one day.
    let start = (now() - 2 * HOUR) / HOUR * HOUR;
    for minute in 0..12 {
        write(&db, 20, 4, start + minute * 60_000);
        db.flush().unwrap();
        db.maintain().unwrap();
        // Ten minutes of samples make a young part; the eleventh minute starts the next.
        let parts = if minute < 10 { 1 } else { 2 };
        assert_eq!(db.stats().parts, parts, "after minute {minute}");
    }
    let got = all(&db);
    assert_eq!(got.len(), 20);
    assert!(
        got.iter().all(|(_, samples)| samples.len() == 48),
        "every minute's samples, once"
    );
    assert!(got.iter().all(|(_, samples)| samples.is_sorted_by_key(|s| s.t)));
}

#[test]
fn tsdb_backfill_across_days_and_overwrites_merge_newest_wins() {
    let dir = tempfile::tempdir().unwrap();
    let db = Tsdb::open(config(dir.path())).unwrap();
    let base = now() - 72 * HOUR;
    write(&db, 3, 400, base); // spans ~1.7 h
    db.flush().unwrap();
    // Overwrite one timestamp of series 0 after the flush, and backfill two days earlier.
    let mut app = db.appender();
    app.append(
        &series(0),
        &[Sample::new(base, -1.0), Sample::new(base - 48 * HOUR, 7.0)],
    )
    .unwrap();
    app.commit().unwrap();
    let got = all(&db);
    assert_eq!(got[0].1[0], Sample::new(base - 48 * HOUR, 7.0));
    assert_eq!(got[0].1[1], Sample::new(base, -1.0));
    assert_eq!(got[0].1.len(), 401);
    db.flush().unwrap();
    db.compact().unwrap();
    assert_eq!(all(&db), got);
}

/// A client that retries a commit (it timed out, or the reply was lost)
/// writes the same samples again: each is stored once, in the head, in parts
/// and after replaying both copies from the WAL.
#[test]
fn tsdb_retried_commit_stores_each_sample_once() {
    let dir = tempfile::tempdir().unwrap();
    let start = now() - 3 * HOUR;
    let once = {
        let db = Tsdb::open(config(dir.path())).unwrap();
        write(&db, 5, 40, start);
        all(&db)
    };
    std::fs::remove_file(dir.path().join("LOCK")).ok();
    let db = Tsdb::open(config(dir.path())).unwrap();
    write(&db, 5, 40, start);
    assert_eq!(all(&db), once, "retried in the head");
    std::mem::forget(db);
    std::fs::remove_file(dir.path().join("LOCK")).ok();
    let db = Tsdb::open(config(dir.path())).unwrap();
    assert_eq!(all(&db), once, "both copies replayed from the WAL");
    write(&db, 5, 40, start);
    db.flush().unwrap();
    db.compact().unwrap();
    assert_eq!(all(&db), once, "retried into parts");
}

#[test]
fn tsdb_a_repeated_select_sees_series_added_deleted_and_rewritten_since() {
    // Selections are kept per partition between selects of the same matchers.
    let dir = tempfile::tempdir().unwrap();
    let db = Tsdb::open(config(dir.path())).unwrap();
    let start = now() - HOUR;
    let instances = |db: &Tsdb| -> Vec<String> {
        all(db)
            .into_iter()
            .map(|(l, _)| l.get("i").unwrap().to_string())
            .collect()
    };
    write(&db, 3, 2, start);
    assert_eq!(instances(&db), ["0", "1", "2"]);
    write(&db, 5, 2, start + 60_000);
    assert_eq!(instances(&db), ["0", "1", "2", "3", "4"]);
    db.delete_series(&[Matcher::equal("i", "1")], i64::MIN, i64::MAX)
        .unwrap();
    assert_eq!(instances(&db), ["0", "2", "3", "4"]);
    write(&db, 2, 1, start + 120_000);
    assert_eq!(instances(&db), ["0", "1", "2", "3", "4"], "written after the delete");
    let q = db.querier(i64::MIN / 2, i64::MAX / 2).unwrap();
    assert_eq!(q.series_upper_bound(&[Matcher::equal("__name__", "m")]).unwrap(), 5);
}

#[test]
fn tsdb_delete_survives_reopen_and_compaction_reclaims_space() {
    let dir = tempfile::tempdir().unwrap();
    let start = now() - 3 * HOUR;
    {
        let db = Tsdb::open(config(dir.path())).unwrap();
        write(&db, 10, 200, start);
        db.delete_series(&[Matcher::equal("i", "3")], i64::MIN, i64::MAX)
            .unwrap();
        assert_eq!(all(&db).len(), 9);
        db.close().unwrap();
    }
    let db = Tsdb::open(config(dir.path())).unwrap();
    let got = all(&db);
    assert_eq!(got.len(), 9);
    assert!(got.iter().all(|(l, _)| l.get("i") != Some("3")));
    let q = db.querier(i64::MIN / 2, i64::MAX / 2).unwrap();
    assert!(!q.label_values("i", &[], None).unwrap().contains(&"3".to_string()));
    let before = db.stats().storage_bytes;
    db.delete_series(&[Matcher::equal("__name__", "m")], i64::MIN, i64::MAX)
        .unwrap();
    db.compact().unwrap();
    assert!(all(&db).is_empty());
    assert!(db.stats().storage_bytes < before, "space reclaimed");
}

#[test]
fn tsdb_rejects_samples_outside_retention_and_drops_old_partitions() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = config(dir.path());
    c.retention = Duration::from_secs(2 * 86_400);
    let db = Tsdb::open(c.clone()).unwrap();
    let mut app = db.appender();
    app.append(
        &series(0),
        &[Sample::new(now() - 10 * 24 * HOUR, 1.0), Sample::new(now(), 2.0)],
    )
    .unwrap();
    let report = app.commit().unwrap();
    assert_eq!(report.samples_accepted, 1);
    assert_eq!(report.rejected_total(), 1);
    drop(db);
    // A partition from before the retention window is dropped on open.
    let old_day = cairn_tsdb::Day::of(now() - 10 * 24 * HOUR).to_string();
    std::fs::create_dir_all(dir.path().join("partitions").join(&old_day)).unwrap();
    let db = Tsdb::open(c).unwrap();
    assert!(!dir.path().join("partitions").join(old_day).exists());
    assert_eq!(all(&db).len(), 1);
}

#[test]
fn tsdb_second_open_of_same_directory_fails_clearly() {
    let dir = tempfile::tempdir().unwrap();
    let _db = Tsdb::open(config(dir.path())).unwrap();
    let err = Tsdb::open(config(dir.path())).err().expect("second open must fail");
    assert!(err.to_string().contains("in use"), "{err}");
}

#[test]
fn tsdb_corrupt_part_is_quarantined_at_open() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = Tsdb::open(config(dir.path())).unwrap();
        write(&db, 2, 10, now() - HOUR);
        db.close().unwrap();
    }
    let part = walk(dir.path())
        .into_iter()
        .find(|p| p.extension().is_some_and(|e| e == "cpart"))
        .unwrap();
    let mut bytes = std::fs::read(&part).unwrap();
    let n = bytes.len();
    bytes[n - 20] ^= 0xff;
    std::fs::write(&part, bytes).unwrap();
    let db = Tsdb::open(config(dir.path())).unwrap();
    assert!(all(&db).is_empty());
    assert!(!part.exists());
    let moved = dir
        .path()
        .join("quarantine")
        .join(part.strip_prefix(dir.path()).unwrap());
    assert!(moved.exists());
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

/// Found by `tsdb_agrees_with_reference_model`: compacting a lone part wrote
/// its output under the input's name and then deleted it as an input.
#[test]
fn regress_compacting_single_part_with_tombstone_keeps_its_data() {
    let dir = tempfile::tempdir().unwrap();
    let t = now() - HOUR;
    let db = Tsdb::open(config(dir.path())).unwrap();
    let mut app = db.appender();
    app.append(&series(0), &[Sample::new(t, 1.0)]).unwrap();
    app.commit().unwrap();
    db.delete_series(&[Matcher::equal("i", "0")], t + 1, t + 1).unwrap();
    db.compact().unwrap();
    drop(db);
    let db = Tsdb::open(config(dir.path())).unwrap();
    assert_eq!(all(&db), vec![(series(0), vec![Sample::new(t, 1.0)])]);
}

/// Replay flushes to parts whenever in-memory data passes the limit, so a
/// long WAL cannot run recovery out of memory.
#[test]
fn tsdb_wal_replay_flushes_as_it_goes() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = config(dir.path());
    c.max_rows_per_buffer = 500;
    c.seal_rows_per_series = 0;
    let start = now() - 5 * HOUR;
    let before = {
        let db = Tsdb::open(c.clone()).unwrap();
        for round in 0..20 {
            write(&db, 50, 40, start + round * 40 * 15_000);
        }
        let got = all(&db);
        std::mem::forget(db); // a crash: nothing flushed, everything in the WAL
        got
    };
    std::fs::remove_file(dir.path().join("LOCK")).ok();
    // Written under the default bound, replayed under a small one.
    c.max_in_memory_bytes = 16 << 10;
    let db = Tsdb::open(c).unwrap();
    // One flush closes every open; more than one means replay flushed mid-way.
    assert!(
        db.stats().flushes_total > 2,
        "flushes during replay: {}",
        db.stats().flushes_total
    );
    assert_eq!(all(&db), before);
    assert_eq!(before[0].1.len(), 800);
}

/// Deleted samples are merged away by background maintenance alone, once
/// the partition is idle, and stay deleted after a restart.
#[test]
fn tsdb_background_maintenance_reclaims_deleted_space() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = config(dir.path());
    c.idle_merge_after = Duration::ZERO;
    let db = Tsdb::open(c.clone()).unwrap();
    write(&db, 20, 500, now() - 4 * HOUR);
    db.flush().unwrap();
    db.maintain().unwrap(); // a single part, no deletes: nothing to do
    let before = db.stats().storage_bytes;
    db.delete_series(
        &[Matcher::new(cairn_model::MatchOp::RegexMatch, "i", "1.*").unwrap()],
        i64::MIN,
        i64::MAX,
    )
    .unwrap();
    db.maintain().unwrap();
    let after = db.stats().storage_bytes;
    assert!(after < before, "space reclaimed in the background: {after} >= {before}");
    let merges = db.stats().merges_total;
    db.maintain().unwrap();
    assert_eq!(
        db.stats().merges_total,
        merges,
        "applied deletes do not trigger merges again"
    );
    drop(db);
    let db = Tsdb::open(c).unwrap();
    assert_eq!(all(&db).len(), 9, "series 1 and 10..19 stay deleted");
}

#[test]
fn rows_a_replay_restores_are_numbered_above_every_number_handed_out_before_the_crash() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = config(dir.path());
    c.retention = Duration::from_secs(10 * 86_400);
    let (recent, fresh, old) = (yesterday_noon(), yesterday_noon() - 2 * DAY, yesterday_noon() - 8 * DAY);
    let db = Tsdb::open(c.clone()).unwrap();
    write(&db, 5, 10, recent);
    db.flush().unwrap();
    // The highest numbers go to a backfilled day, which then falls out of
    // retention: no part left carries them.
    for round in 0..20 {
        write(&db, 5, 1, old + round * 60_000);
    }
    db.flush().unwrap();
    db.set_retention(Duration::from_secs(5 * 86_400));
    db.maintain().unwrap();
    assert!(
        db.local_min_seq(cairn_tsdb::Day::of(old)).is_none(),
        "the backfilled day is gone"
    );
    let handed_out = db.next_seq();
    write(&db, 5, 10, fresh);
    let before = all(&db);
    std::mem::forget(db);
    std::fs::remove_file(dir.path().join("LOCK")).ok();

    let db = Tsdb::open(c).unwrap();
    assert_eq!(all(&db), before, "the replay restores the rows");
    db.flush().unwrap();
    let fresh_min = db.local_min_seq(cairn_tsdb::Day::of(fresh)).unwrap();
    assert!(
        fresh_min >= handed_out,
        "replayed rows numbered {fresh_min}, below {handed_out} handed out before the crash"
    );
}

#[test]
fn settled_data_changes_are_counted_once_visible_and_fresh_writes_are_not() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = config(dir.path());
    c.retention = Duration::from_secs(10 * 86_400);
    let db = Tsdb::open(c).unwrap();
    let count = || settled_changes(&db);
    let at_open = count();
    // Fresh samples, in order: a cache may not keep them anyway.
    write(&db, 3, 2, now() - 60_000);
    write(&db, 3, 1, now());
    assert_eq!(count(), at_open);
    // A backfill, even of one sample, is a change, visible once counted.
    write(&db, 1, 1, now() - HOUR);
    assert_eq!(count(), at_open.wrapping_add(1));
    assert!(all(&db).iter().any(|(_, s)| s.iter().any(|s| s.t < now() - HOUR / 2)));
    db.delete_series(&[Matcher::equal("i", "2")], i64::MIN / 2, i64::MAX / 2)
        .unwrap();
    assert_eq!(count(), at_open.wrapping_add(2));
    // Retention changed, and the days it drops.
    write(&db, 1, 1, yesterday_noon() - 8 * DAY);
    assert_eq!(count(), at_open.wrapping_add(3));
    db.set_retention(Duration::from_secs(5 * 86_400));
    db.maintain().unwrap();
    let moved = count().wrapping_sub(at_open);
    assert!(moved >= 5, "moved by {moved}");
}
