//! A byte flipped in each kind of file: `check_dir` names exactly that
//! file, the engine opens without it (moved into `quarantine/`, counted)
//! and serves the rest of the data unchanged; a damaged block of a part
//! loses that block only, and the reads that miss it say so.

use std::path::{Path, PathBuf};

use cairn_model::histogram::ResetHint;
use cairn_model::{Histogram, HistogramSample, Labels, Matcher, Sample};
use cairn_storage::conformance::read;
use cairn_storage::{Admin, Appendable, Querier, Queryable, ReadWarnings, SelectHints, collect_samples};
use cairn_tsdb::check::{check_dir, is_intact_copy};
use cairn_tsdb::{Config, Day, Part, Tsdb};

use crate::common::{HOUR, config, now, yesterday_noon};

type Data = Vec<(Labels, Vec<Sample>)>;

fn series(day: &str, i: usize) -> Labels {
    Labels::from_pairs([("__name__", "m"), ("day", day), ("i", &i.to_string())])
}

fn write(db: &Tsdb, day: &str, n: usize, start: i64) {
    let mut app = db.appender();
    for i in 0..n {
        let samples: Vec<Sample> = (0..20)
            .map(|k| Sample::new(start + k * 15_000, (i * 100) as f64 + k as f64))
            .collect();
        app.append(&series(day, i), &samples).unwrap();
    }
    app.commit().unwrap();
}

fn all(db: &dyn Queryable) -> Data {
    read(db, &[Matcher::equal("__name__", "m")], i64::MIN / 2, i64::MAX / 2)
}

fn of_day(data: &Data, day: &str) -> Data {
    data.iter()
        .filter(|(l, _)| l.get("day") == Some(day))
        .cloned()
        .collect()
}

/// Two days ("a": yesterday, "b": today), each flushed to a part and an
/// index segment. Returns the days' starts.
fn two_days(c: &Config) -> (i64, i64) {
    let b = yesterday_noon();
    let a = b - 24 * HOUR;
    let db = Tsdb::open(c.clone()).unwrap();
    write(&db, "a", 4, a);
    write(&db, "b", 4, b);
    db.close().unwrap();
    (a, b)
}

fn day_dir(root: &Path, t: i64) -> PathBuf {
    root.join("partitions").join(Day::of(t).to_string())
}

fn file_in(dir: &Path, prefix: &str, suffix: &str) -> PathBuf {
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy();
            name.starts_with(prefix) && name.ends_with(suffix)
        })
        .collect();
    found.sort();
    assert_eq!(found.len(), 1, "one {prefix}*{suffix} in {}: {found:?}", dir.display());
    found.remove(0)
}

fn flip(path: &Path, at: usize) {
    let mut bytes = std::fs::read(path).unwrap();
    bytes[at] ^= 0x5a;
    std::fs::write(path, bytes).unwrap();
}

/// `check_dir` finds exactly `path` damaged.
fn assert_checked_damaged(root: &Path, path: &Path) {
    let report = check_dir(root).unwrap();
    let damaged: Vec<&Path> = report.damaged.iter().map(|d| d.path.as_path()).collect();
    assert_eq!(damaged, vec![path], "{report:?}");
}

/// `path` is in the quarantine with its reason, and counted once as `kind`.
fn assert_quarantined(db: &Tsdb, root: &Path, path: &Path, kind: &str) {
    let moved = root.join("quarantine").join(path.strip_prefix(root).unwrap());
    assert!(moved.is_file(), "{} quarantined", moved.display());
    let mut note = moved.into_os_string();
    note.push(".reason");
    assert!(std::fs::read_to_string(note).unwrap().contains("reason: "));
    let counts = db.stats().quarantined_files_total;
    for (k, n) in counts {
        assert_eq!(n, u64::from(k == kind), "{k}");
    }
}

#[test]
fn a_clean_directory_checks_clean() {
    let dir = tempfile::tempdir().unwrap();
    two_days(&config(dir.path()));
    let report = check_dir(dir.path()).unwrap();
    assert!(report.is_clean(), "{report:?}");
    assert_eq!(report.checked["part"], 2);
    assert_eq!(report.checked["index"], 2);
    assert!(report.summary().contains("0 damaged"), "{}", report.summary());
}

#[test]
fn a_part_with_a_damaged_footer_is_quarantined_at_open() {
    let dir = tempfile::tempdir().unwrap();
    let c = config(dir.path());
    let (a, _) = two_days(&c);
    let before = all(&Tsdb::open(c.clone()).unwrap());
    let part = file_in(&day_dir(dir.path(), a), "part-", ".cpart");
    let len = std::fs::metadata(&part).unwrap().len() as usize;
    flip(&part, len - 20);
    assert_checked_damaged(dir.path(), &part);
    let db = Tsdb::open(c).unwrap();
    assert_quarantined(&db, dir.path(), &part, "part");
    assert_eq!(all(&db), of_day(&before, "b"));
    assert!(check_dir(dir.path()).unwrap().is_clean());
}

/// `n` series of day `t` over `hours` hours at one sample a minute, so each
/// has a block per two hours (apart by a second, so none shares another's
/// timestamps), committed in one batch.
fn write_blocks(db: &Tsdb, t: i64, n: usize, hours: i64) {
    let mut app = db.appender();
    for i in 0..n {
        let samples: Vec<Sample> = (0..hours * 60)
            .map(|k| Sample::new(t + i as i64 * 1000 + k * 60_000, (i * 10_000) as f64 + k as f64))
            .collect();
        app.append(&series("a", i), &samples).unwrap();
    }
    app.commit().unwrap();
}

/// Everything a read sees, and the warnings it gives.
fn read_warned(db: &Tsdb) -> (Data, Vec<String>) {
    let warnings = ReadWarnings::default();
    let q = db.querier_warning(i64::MIN / 2, i64::MAX / 2, Some(warnings.clone()));
    let mut data: Data = q
        .select(&SelectHints::default(), &[Matcher::equal("__name__", "m")])
        .unwrap()
        .map(|s| {
            let mut s = s.unwrap();
            let samples = collect_samples(s.samples.as_mut()).unwrap();
            (s.labels, samples)
        })
        .collect();
    data.sort_by(|a, b| a.0.cmp(&b.0));
    (data, warnings.take())
}

/// The block in the middle of `part`'s file, and a byte in it flipped.
fn damage_a_middle_block(part: &Path) -> cairn_tsdb::BlockRef {
    let blocks: Vec<_> = Part::open(part).unwrap().blocks().collect();
    let b = blocks[blocks.len() / 2];
    flip(part, (b.start() + u64::from(b.byte_len()) / 2) as usize);
    b
}

/// What a read sees once block `b` is lost: exactly one series misses
/// exactly the samples of `b`'s time range, every other sample is there,
/// and one warning names that series, how many samples, and the part.
fn assert_only_lost(before: &Data, (after, warnings): &(Data, Vec<String>), b: &cairn_tsdb::BlockRef, part: &Path) {
    assert_eq!(before.len(), after.len(), "no series lost whole");
    let differing: Vec<_> = before.iter().zip(after).filter(|(x, y)| x != y).collect();
    assert_eq!(differing.len(), 1, "one series differs");
    let ((labels, all), (same_labels, left)) = differing[0];
    assert_eq!(labels, same_labels);
    let expected: Vec<Sample> = all.iter().filter(|s| s.t < b.mint || s.t > b.maxt).copied().collect();
    assert_eq!(left, &expected, "{labels} misses exactly the block's range");
    assert_eq!(all.len() - left.len(), b.count as usize);
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    let w = &warnings[0];
    assert!(w.contains(&labels.to_string()), "{w}");
    assert!(w.contains(&format!("{} samples", b.count)), "{w}");
    assert!(w.contains(&part.display().to_string()), "{w}");
}

fn assert_nothing_quarantined(db: &Tsdb) {
    for (kind, n) in db.stats().quarantined_files_total {
        assert_eq!(n, 0, "{kind}");
    }
}

#[test]
fn a_damaged_block_loses_its_series_time_range_only_and_answers_say_so() {
    let dir = tempfile::tempdir().unwrap();
    let c = config(dir.path());
    let t = yesterday_noon();
    let db = Tsdb::open(c.clone()).unwrap();
    write_blocks(&db, t, 5, 8);
    db.flush().unwrap();
    let before = all(&db);
    let part = file_in(&day_dir(dir.path(), t), "part-", ".cpart");
    let settled = db.settled_changes().unwrap();
    // The open file sees the change.
    let b = damage_a_middle_block(&part);
    assert_checked_damaged(dir.path(), &part);
    // A read that cannot say what it misses fails, naming the part.
    let failed = db
        .querier(i64::MIN / 2, i64::MAX / 2)
        .unwrap()
        .select(&SelectHints::default(), &[Matcher::equal("__name__", "m")])
        .unwrap()
        .map(|s| collect_samples(s?.samples.as_mut()))
        .find_map(Result::err)
        .expect("a read of the damaged block without warnings fails");
    assert!(failed.to_string().contains(&part.display().to_string()), "{failed}");
    assert_only_lost(&before, &read_warned(&db), &b, &part);
    // What reads answer changed, as after a delete: cached answers go.
    assert_ne!(db.settled_changes().unwrap(), settled);
    // Merges leave the part as it is: its lost block stays known.
    db.maintain().unwrap();
    db.compact().unwrap();
    assert_nothing_quarantined(&db);
    assert!(part.is_file());
    assert_only_lost(&before, &read_warned(&db), &b, &part);
    drop(db);
    let db = Tsdb::open(c.clone()).unwrap();
    assert_only_lost(&before, &read_warned(&db), &b, &part);
    // A repair rewrites the part without the block and records the loss:
    // the directory checks clean, and answers still name what is missing.
    assert_eq!(db.repair().unwrap(), (1, u64::from(b.count)));
    assert!(check_dir(dir.path()).unwrap().is_clean());
    assert_eq!(all(&db), read_warned(&db).0, "reads without warnings no longer fail");
    assert_repaired(&before, &read_warned(&db), &b);
    assert_eq!(db.repair().unwrap(), (0, 0));
    drop(db);
    let db = Tsdb::open(c).unwrap();
    assert_repaired(&before, &read_warned(&db), &b);
    db.compact().unwrap();
    assert_repaired(&before, &read_warned(&db), &b);
}

/// After a repair dropped block `b`: the same samples as before it, and a
/// warning naming the repair instead of the part.
fn assert_repaired(before: &Data, read: &(Data, Vec<String>), b: &cairn_tsdb::BlockRef) {
    let (after, warnings) = read;
    let differing: Vec<_> = before.iter().zip(after).filter(|(x, y)| x != y).collect();
    assert_eq!((before.len(), differing.len()), (after.len(), 1));
    let (labels, all) = &differing[0].0;
    let expected: Vec<Sample> = all.iter().filter(|s| s.t < b.mint || s.t > b.maxt).copied().collect();
    assert_eq!(&differing[0].1.1, &expected);
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    let w = &warnings[0];
    assert!(
        w.contains(&labels.to_string()) && w.contains(&format!("{} samples", b.count)),
        "{w}"
    );
    assert!(w.contains("repair"), "{w}");
}

#[test]
fn a_merge_meeting_a_damaged_block_leaves_that_part_unmerged_and_merges_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let c = config(dir.path());
    let t = yesterday_noon();
    let db = Tsdb::open(c.clone()).unwrap();
    write_blocks(&db, t, 3, 4);
    db.flush().unwrap();
    write_blocks(&db, t + 4 * HOUR, 3, 2);
    db.flush().unwrap();
    write_blocks(&db, t + 6 * HOUR, 3, 2);
    db.flush().unwrap();
    let before = all(&db);
    let mut parts: Vec<PathBuf> = std::fs::read_dir(day_dir(dir.path(), t))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "cpart"))
        .collect();
    parts.sort();
    assert_eq!(parts.len(), 3);
    let b = damage_a_middle_block(&parts[0]);
    // No read has met the damage yet: the merge does, and writes nothing.
    db.compact().unwrap();
    assert_nothing_quarantined(&db);
    assert_only_lost(&before, &read_warned(&db), &b, &parts[0]);
    // The next round merges the parts after it.
    db.compact().unwrap();
    assert!(parts[0].is_file());
    assert_eq!(db.parts().unwrap().len(), 2);
    assert_only_lost(&before, &read_warned(&db), &b, &parts[0]);
}

#[test]
fn a_damaged_index_segment_loses_its_series_and_replay_skips_their_rows() {
    let dir = tempfile::tempdir().unwrap();
    let c = config(dir.path());
    let (a, b) = two_days(&c);
    let db = Tsdb::open(c.clone()).unwrap();
    let before = all(&db);
    // Rows of day a's known series: their WAL record carries no labels.
    write(&db, "a", 4, a + HOUR);
    std::mem::forget(db);
    std::fs::remove_file(dir.path().join("LOCK")).unwrap();
    let segment = file_in(&day_dir(dir.path(), a), "index-", ".cidx");
    flip(&segment, 20);
    assert_checked_damaged(dir.path(), &segment);
    let db = Tsdb::open(c).unwrap();
    assert_quarantined(&db, dir.path(), &segment, "index");
    assert_eq!(all(&db), of_day(&before, "b"));
    // Series of day a written again are found again, in the new rows.
    write(&db, "a", 1, b - HOUR);
    assert_eq!(all(&db).len(), 5);
}

#[test]
fn a_damaged_tombstone_undoes_that_deletion_only() {
    let dir = tempfile::tempdir().unwrap();
    let c = config(dir.path());
    let (_, b) = two_days(&c);
    let dir_b = day_dir(dir.path(), b);
    let expected = {
        let db = Tsdb::open(c.clone()).unwrap();
        let before = all(&db);
        db.delete_series(
            &[Matcher::equal("i", "1"), Matcher::equal("day", "b")],
            i64::MIN / 2,
            i64::MAX / 2,
        )
        .unwrap();
        db.delete_series(
            &[Matcher::equal("i", "2"), Matcher::equal("day", "b")],
            i64::MIN / 2,
            i64::MAX / 2,
        )
        .unwrap();
        let deleted = |l: &Labels| l.get("day") == Some("b") && l.get("i") == Some("2");
        let left: Data = before.into_iter().filter(|(l, _)| !deleted(l)).collect();
        assert_eq!(all(&db).len(), 6);
        left
    };
    let log = dir_b.join("tombstones.log");
    flip(&log, 10);
    assert_checked_damaged(dir.path(), &log);
    let db = Tsdb::open(c.clone()).unwrap();
    assert_eq!(all(&db), expected);
    let copy = dir
        .path()
        .join("quarantine")
        .join(log.strip_prefix(dir.path()).unwrap());
    assert!(copy.is_file());
    assert_eq!(db.stats().quarantined_files_total[2], ("tombstones", 1));
    drop(db);
    // The file kept is whole again.
    assert!(check_dir(dir.path()).unwrap().is_clean());
    assert_eq!(all(&Tsdb::open(c).unwrap()), expected);
}

fn histogram(k: usize) -> Histogram {
    Histogram {
        schema: 0,
        reset_hint: ResetHint::NotReset,
        count: k as f64 + 2.0,
        sum: 3.5,
        zero_threshold: 1e-128,
        zero_count: 1.0,
        positive: vec![(1, k as f64 + 1.0)],
        negative: Vec::new(),
        custom_bounds: None,
    }
}

#[test]
fn a_damaged_histogram_file_leaves_its_samples_out_without_failing_reads() {
    let dir = tempfile::tempdir().unwrap();
    let c = config(dir.path());
    let (_, b) = two_days(&c);
    {
        let db = Tsdb::open(c.clone()).unwrap();
        let mut app = db.appender();
        let hs: Vec<HistogramSample> = (0..5)
            .map(|k| HistogramSample::new(b + k as i64 * 15_000, histogram(k)))
            .collect();
        app.append_histograms(&Labels::from_pairs([("__name__", "h")]), &hs)
            .unwrap();
        app.commit().unwrap();
        db.close().unwrap();
    }
    let before = all(&Tsdb::open(c.clone()).unwrap());
    let file = file_in(&day_dir(dir.path(), b), "hist-", ".chist");
    flip(&file, 10);
    assert_checked_damaged(dir.path(), &file);
    let db = Tsdb::open(c).unwrap();
    assert_quarantined(&db, dir.path(), &file, "histograms");
    assert_eq!(all(&db), before);
    let got = read(&db, &[Matcher::equal("__name__", "h")], i64::MIN / 2, i64::MAX / 2);
    assert!(got.is_empty(), "{got:?}");
}

#[test]
fn a_damaged_wal_segment_before_the_last_is_quarantined_and_the_rest_replayed() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = config(dir.path());
    // A segment per commit.
    c.wal_segment_bytes = 1;
    let t = now() - HOUR;
    let db = Tsdb::open(c.clone()).unwrap();
    for i in 0..3 {
        let mut app = db.appender();
        app.append(&series("b", i), &[Sample::new(t, i as f64)]).unwrap();
        app.commit().unwrap();
    }
    let before = all(&db);
    std::mem::forget(db);
    std::fs::remove_file(dir.path().join("LOCK")).unwrap();
    let wal = dir.path().join("wal");
    let mut segments: Vec<PathBuf> = std::fs::read_dir(&wal)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| std::fs::metadata(p).unwrap().len() > 0)
        .collect();
    segments.sort();
    assert_eq!(segments.len(), 3);
    flip(&segments[0], 12);
    assert_checked_damaged(dir.path(), &segments[0]);
    let db = Tsdb::open(c).unwrap();
    assert_quarantined(&db, dir.path(), &segments[0], "wal");
    assert_eq!(all(&db), before[1..].to_vec());
}

#[test]
fn a_tenants_files_are_checked_and_quarantined_in_its_own_directory() {
    let dir = tempfile::tempdir().unwrap();
    two_days(&config(dir.path()));
    let tenant = dir.path().join("tenants").join("team-a");
    let c = config(&tenant);
    let (a, _) = two_days(&c);
    let segment = file_in(&day_dir(&tenant, a), "index-", ".cidx");
    flip(&segment, 20);
    assert_checked_damaged(dir.path(), &segment);
    let report = check_dir(dir.path()).unwrap();
    assert_eq!(report.checked["part"], 4);
    let db = Tsdb::open(c).unwrap();
    assert_quarantined(&db, &tenant, &segment, "index");
    assert!(!dir.path().join("quarantine").exists());
}

#[test]
fn an_intact_copy_of_a_damaged_part_is_told_from_other_parts() {
    let dir = tempfile::tempdir().unwrap();
    let c = config(dir.path());
    let t = yesterday_noon();
    let db = Tsdb::open(c).unwrap();
    write_blocks(&db, t, 3, 4);
    db.flush().unwrap();
    let part = file_in(&day_dir(dir.path(), t), "part-", ".cpart");
    let copies = tempfile::tempdir().unwrap();
    let intact = copies.path().join("intact.cpart");
    std::fs::copy(&part, &intact).unwrap();
    write_blocks(&db, t + 4 * HOUR, 3, 1);
    db.flush().unwrap();
    let other = std::fs::read_dir(day_dir(dir.path(), t))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "cpart") && *p != part)
        .unwrap();
    drop(db);
    damage_a_middle_block(&part);
    let damaged_copy = copies.path().join("damaged.cpart");
    std::fs::copy(&part, &damaged_copy).unwrap();
    assert!(is_intact_copy(&intact, &part));
    assert!(!is_intact_copy(&other, &part), "another part");
    assert!(!is_intact_copy(&damaged_copy, &part), "the same damage");
    assert!(!is_intact_copy(&dir.path().join("missing.cpart"), &part));
    // A part whose footer is damaged cannot be compared block by block: a
    // copy of the same name and size that checks whole is taken.
    let footer_damaged = copies.path().join("footer.cpart");
    std::fs::copy(&intact, &footer_damaged).unwrap();
    let len = std::fs::metadata(&footer_damaged).unwrap().len() as usize;
    flip(&footer_damaged, len - 20);
    assert!(is_intact_copy(&intact, &footer_damaged));
    assert!(!is_intact_copy(&damaged_copy, &footer_damaged));
}

/// Through the tenants' seam, as the HTTP API reads: a read that gives no
/// warnings fails on a damaged block; one that does answers without it and
/// says so.
#[test]
fn a_read_without_warnings_fails_on_a_damaged_block_and_one_with_them_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let t = yesterday_noon();
    let settings: cairn_tsdb::SettingsOf = std::sync::Arc::new(|_| cairn_tsdb::TenantSettings::default());
    let tenants = cairn_tsdb::TsdbTenants::open(config(dir.path()), settings).unwrap();
    let (_, db) = tenants.engines().remove(0);
    write_blocks(&db, t, 3, 4);
    db.flush().unwrap();
    let part = file_in(&day_dir(dir.path(), t), "part-", ".cpart");
    damage_a_middle_block(&part);
    let tenants: std::sync::Arc<dyn cairn_storage::Tenants> = tenants;
    let scope = cairn_storage::TenantScope::parse(None).unwrap();
    let read = |storage: std::sync::Arc<dyn cairn_storage::Storage>| -> Result<usize, cairn_storage::StorageError> {
        let q = storage.querier(i64::MIN / 2, i64::MAX / 2)?;
        let mut n = 0;
        for s in q.select(&SelectHints::default(), &[Matcher::equal("__name__", "m")])? {
            n += collect_samples(s?.samples.as_mut())?.len();
        }
        Ok(n)
    };
    let failed = read(tenants.reader(&scope).unwrap()).unwrap_err();
    assert!(failed.to_string().contains(&part.display().to_string()), "{failed}");
    let options = cairn_storage::ReadOptions::default();
    let n = read(tenants.reader_with(&scope, &options).unwrap()).unwrap();
    assert!(n < 3 * 4 * 60, "{n}");
    assert_eq!(options.warnings.take().len(), 1);
}
