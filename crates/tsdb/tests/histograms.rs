//! Native histogram samples through the engine's layers: WAL replay after
//! a crash, flushes, merges, compaction, deletes and retention.

use std::time::Duration;

use cairn_model::histogram::ResetHint;
use cairn_model::{Histogram, HistogramSample, Labels, Matcher, Sample};
use cairn_storage::{Admin, Appendable, Queryable, RejectReason, SelectHints, collect_samples};
use cairn_tsdb::{Config, Tsdb};

use crate::common::{DAY, HOUR, config, now, settled_changes};

fn series(i: usize) -> Labels {
    Labels::from_pairs([("__name__", "h"), ("i", &i.to_string())])
}

/// A schema 3 histogram of series `i` after `k` scrapes, 30 buckets.
fn histogram(i: usize, k: usize) -> Histogram {
    let positive: Vec<(i32, f64)> = (0..30)
        .map(|b| (b + i as i32, (k * (1 + b as usize % 5)) as f64))
        .collect();
    let count = positive.iter().map(|b| b.1).sum::<f64>() + k as f64;
    Histogram {
        schema: 3,
        reset_hint: ResetHint::NotReset,
        count,
        sum: count * 0.37,
        zero_threshold: 1e-128,
        zero_count: k as f64,
        positive,
        negative: vec![(-2, k as f64)],
        custom_bounds: None,
    }
}

/// Writes `n` series × `per` histogram samples at 15 s spacing from
/// `start`, scrape numbers from `k0`, one commit.
fn write(db: &Tsdb, n: usize, per: usize, start: i64, k0: usize) {
    let mut app = db.appender();
    for i in 0..n {
        let hs: Vec<HistogramSample> = (0..per)
            .map(|k| HistogramSample::new(start + (k0 + k) as i64 * 15_000, histogram(i, k0 + k)))
            .collect();
        app.append_histograms(&series(i), &hs).unwrap();
    }
    let report = app.commit().unwrap();
    assert_eq!(report.histograms_accepted, (n * per) as u64);
}

type Read = Vec<(Labels, Vec<Sample>, Vec<HistogramSample>)>;

fn all(db: &dyn Queryable) -> Read {
    let q = db.querier(i64::MIN / 2, i64::MAX / 2).unwrap();
    q.select(&SelectHints::default(), &[Matcher::equal("__name__", "h")])
        .unwrap()
        .map(|s| {
            let mut s = s.unwrap();
            (s.labels, collect_samples(s.samples.as_mut()).unwrap(), s.histograms)
        })
        .collect()
}

fn reopen_after_crash(db: Tsdb, c: &Config) -> Tsdb {
    // A crash: nothing flushed or closed. The forgotten instance still
    // holds the lock file; a crashed process would not.
    std::mem::forget(db);
    std::fs::remove_file(c.path.join("LOCK")).ok();
    Tsdb::open(c.clone()).unwrap()
}

#[test]
fn tsdb_committed_histograms_survive_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    let c = config(dir.path());
    let start = now() - 2 * HOUR;
    let db = Tsdb::open(c.clone()).unwrap();
    for round in 0..5 {
        write(&db, 10, 8, start, round * 8);
    }
    // One series also has floats, one histogram is replaced by a float.
    let mut app = db.appender();
    app.append(&series(0), &[Sample::new(start - 1000, 1.0), Sample::new(start, 2.0)])
        .unwrap();
    app.commit().unwrap();
    let before = all(&db);
    assert_eq!(before.len(), 10);
    assert_eq!(before[0].1.len(), 2);
    assert_eq!(before[0].2.len(), 39);
    assert_eq!(before[1].2.len(), 40);
    let db = reopen_after_crash(db, &c);
    assert_eq!(all(&db), before);
    // Replay flushed everything: a second crash finds it in the parts.
    let db = reopen_after_crash(db, &c);
    assert_eq!(all(&db), before);
}

#[test]
fn tsdb_histograms_survive_flushes_merges_compaction_and_crashes() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = config(dir.path());
    c.max_rows_per_buffer = 50;
    c.seal_rows_per_series = 0;
    let start = now() - 20 * HOUR;
    let mut db = Tsdb::open(c.clone()).unwrap();
    for round in 0..12 {
        write(&db, 6, 10, start, round * 10);
        if round % 3 == 2 {
            db = reopen_after_crash(db, &c);
        } else {
            db.flush().unwrap();
            db.maintain().unwrap();
        }
    }
    let expected = all(&db);
    assert_eq!(expected.len(), 6);
    assert_eq!(expected[0].2.len(), 120);
    assert_eq!(
        expected[0].2[7],
        HistogramSample::new(start + 7 * 15_000, histogram(0, 7))
    );
    db.compact().unwrap();
    assert_eq!(all(&db), expected);
    db.close().unwrap();
    drop(db);
    let db = Tsdb::open(c.clone()).unwrap();
    assert_eq!(all(&db), expected);

    // A delete hides histograms in parts, also after compaction and reopen.
    db.delete_series(&[Matcher::equal("i", "0")], start, start + 50 * 15_000)
        .unwrap();
    db.compact().unwrap();
    let mut want = expected.clone();
    want[0].2.retain(|h| h.t > start + 50 * 15_000);
    assert_eq!(all(&db), want);
    db.close().unwrap();
    drop(db);
    assert_eq!(all(&Tsdb::open(c).unwrap()), want);
}

#[test]
fn tsdb_histograms_span_days_and_respect_retention() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = config(dir.path());
    c.retention = Duration::from_secs(3 * 86_400);
    let db = Tsdb::open(c.clone()).unwrap();
    let yesterday = now() - DAY;
    let mut app = db.appender();
    let hs = vec![
        HistogramSample::new(now() - 10 * DAY, histogram(0, 1)),
        HistogramSample::new(yesterday, histogram(0, 2)),
        HistogramSample::new(now(), histogram(0, 3)),
        HistogramSample::new(now() + 10 * DAY, histogram(0, 4)),
    ];
    app.append_histograms(&series(0), &hs).unwrap();
    let report = app.commit().unwrap();
    assert_eq!(report.histograms_accepted, 2);
    assert_eq!(report.samples_rejected.get(&RejectReason::OutOfRetention), Some(&1));
    assert_eq!(report.samples_rejected.get(&RejectReason::TooFarInFuture), Some(&1));
    db.flush().unwrap();
    let got = all(&db);
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].2, hs[1..3].to_vec());
}

/// Background threads off, a day settled as soon as nothing is written to
/// it, and a bucket in a directory.
fn bucket_config(data: &std::path::Path, bucket: &std::path::Path) -> Config {
    let mut c = config(data);
    c.idle_merge_after = Duration::ZERO;
    c.object_store = Some(cairn_tsdb::BucketConfig::new(format!("file://{}", bucket.display())));
    c
}

fn settle(db: &Tsdb) {
    db.flush().unwrap();
    db.maintain().unwrap();
    db.upload().unwrap();
}

#[test]
fn tsdb_histograms_of_settled_days_are_served_from_the_bucket() {
    let bucket = tempfile::tempdir().unwrap();
    let today = now() / DAY * DAY;
    let (d1, d2) = (today - 4 * DAY, today - 3 * DAY);
    let wdir = tempfile::tempdir().unwrap();
    let writer = Tsdb::open(bucket_config(wdir.path(), bucket.path())).unwrap();
    write(&writer, 3, 20, d1 + 1000, 0);
    settle(&writer);
    let day1 = all(&writer);
    assert_eq!(day1.len(), 3);
    // A node that lost its disk, and a read-only one, see them.
    let lost = tempfile::tempdir().unwrap();
    assert_eq!(
        all(&Tsdb::open(bucket_config(lost.path(), bucket.path())).unwrap()),
        day1
    );
    let rdir = tempfile::tempdir().unwrap();
    let mut ro = bucket_config(rdir.path(), bucket.path());
    ro.read_only = true;
    let reader = Tsdb::open(ro).unwrap();
    assert_eq!(all(&reader), day1);
    // A refresh that finds nothing new changes nothing.
    let before = settled_changes(&reader);
    reader.refresh().unwrap();
    assert_eq!(settled_changes(&reader), before);
    // The writer uploads another day; the reader follows on refresh, a
    // change of settled data it counts.
    write(&writer, 3, 20, d2 + 1000, 0);
    settle(&writer);
    reader.refresh().unwrap();
    assert_ne!(settled_changes(&reader), before);
    let both = all(&writer);
    assert_eq!(both[0].2.len(), 40);
    assert_eq!(all(&reader), both);
}

fn puts(db: &Tsdb) -> u64 {
    let stats = db.stats().object_store.expect("a bucket");
    stats
        .requests_total
        .iter()
        .find(|(op, _)| *op == "put")
        .map_or(0, |r| r.1)
}

/// Late writes and a delete change a day after its upload: the writer
/// uploads the changed files (and only those) and a read-only instance
/// follows; files unchanged since their upload are not uploaded again.
#[test]
fn tsdb_a_day_changed_after_its_upload_reaches_the_bucket_and_its_readers() {
    let bucket = tempfile::tempdir().unwrap();
    let day = now() / DAY * DAY - 4 * DAY;
    let wdir = tempfile::tempdir().unwrap();
    let writer = Tsdb::open(bucket_config(wdir.path(), bucket.path())).unwrap();
    write(&writer, 3, 20, day + 1000, 0);
    settle(&writer);
    let rdir = tempfile::tempdir().unwrap();
    let mut ro = bucket_config(rdir.path(), bucket.path());
    ro.read_only = true;
    let reader = Tsdb::open(ro).unwrap();
    assert_eq!(all(&reader), all(&writer));

    let uploaded = puts(&writer);
    settle(&writer);
    assert_eq!(puts(&writer), uploaded, "nothing changed, nothing uploaded");

    write(&writer, 3, 10, day + 1000, 20);
    writer
        .delete_series(&[Matcher::equal("i", "1")], day, day + DAY - 1)
        .unwrap();
    settle(&writer);
    assert!(puts(&writer) > uploaded);
    let changed = all(&writer);
    assert_eq!(changed.len(), 2);
    assert_eq!(changed[0].2.len(), 30);
    let before = settled_changes(&reader);
    reader.refresh().unwrap();
    assert_eq!(all(&reader), changed);
    assert_ne!(settled_changes(&reader), before, "the day changed in the bucket");
    // A reader opened afresh downloads the same.
    let fresh = tempfile::tempdir().unwrap();
    let mut ro = bucket_config(fresh.path(), bucket.path());
    ro.read_only = true;
    assert_eq!(all(&Tsdb::open(ro).unwrap()), changed);
}

#[test]
fn tsdb_histogram_files_of_flushes_after_a_reopen_keep_earlier_ones() {
    let dir = tempfile::tempdir().unwrap();
    let c = config(dir.path());
    let start = now() - 3 * HOUR;
    for round in 0..4 {
        // Each round: an open, histograms of known series (no new index
        // segment), a flush and a close.
        let db = Tsdb::open(c.clone()).unwrap();
        write(&db, 2, 5, start, round * 5);
        db.close().unwrap();
        drop(db);
        // After a clean close the WAL holds nothing to replay; without it
        // the next open numbers segments from what the partitions name.
        std::fs::remove_dir_all(dir.path().join("wal")).unwrap();
    }
    let db = Tsdb::open(c).unwrap();
    let got = all(&db);
    assert_eq!(got.len(), 2);
    assert_eq!(got[1].2.len(), 20);
    assert_eq!(
        got[1].2[12],
        HistogramSample::new(start + 12 * 15_000, histogram(1, 12))
    );
}

/// Flushes only add histogram files, so neither they nor a restart's
/// replay wait for a merge; the merge round then merges them, and every
/// body reads the same before, after and across a reopen.
#[test]
fn tsdb_histogram_files_flushes_add_are_merged_by_the_merge_round() {
    let dir = tempfile::tempdir().unwrap();
    let c = config(dir.path());
    let start = crate::common::yesterday_noon();
    let day = dir
        .path()
        .join("partitions")
        .join(cairn_tsdb::Day::of(start).to_string());
    let files = || {
        std::fs::read_dir(&day)
            .unwrap()
            .filter(|e| e.as_ref().unwrap().file_name().to_string_lossy().ends_with(".chist"))
            .count()
    };
    let db = Tsdb::open(c.clone()).unwrap();
    for round in 0..12 {
        write(&db, 3, 5, start, round * 5);
        db.flush().unwrap();
    }
    assert_eq!(files(), 12);
    // A crash before the next flush: the replay's flush adds a file.
    write(&db, 3, 5, start, 60);
    let want = all(&db);
    assert_eq!(want[2].2.len(), 65);
    let db = reopen_after_crash(db, &c);
    assert_eq!(files(), 13);
    assert_eq!(all(&db), want);
    db.maintain().unwrap();
    assert!(files() < 13, "{} files after a merge round", files());
    assert_eq!(all(&db), want);
    db.close().unwrap();
    drop(db);
    assert_eq!(all(&Tsdb::open(c).unwrap()), want);
}
