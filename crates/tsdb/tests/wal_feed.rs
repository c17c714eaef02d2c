//! The WAL read back as a feed (what remote write forwards): records in
//! commit order with their series' labels, across flushes while a hold
//! keeps the segments, across a restart, and gaps reported when segments
//! are lost.

use cairn_model::{Labels, Sample};
use cairn_storage::Appendable;
use cairn_tsdb::{TailEvent, Tsdb, WalPosition, WalTail};

use crate::common::{config, yesterday_noon};

fn series(i: usize) -> Labels {
    Labels::from_pairs([("__name__", "m"), ("i", &i.to_string())])
}

/// One commit of `n` series with one sample each at `t`, valued `t + i`.
fn write(db: &Tsdb, n: usize, t: i64) {
    let mut app = db.appender();
    for i in 0..n {
        app.append(&series(i), &[Sample::new(t, (t + i as i64) as f64)])
            .unwrap();
    }
    app.commit().unwrap();
}

/// Samples read: series, timestamp, value.
type Read = Vec<(Labels, i64, f64)>;
/// Gaps reported: from, to.
type Gaps = Vec<(WalPosition, WalPosition)>;

/// Every sample the tail reads until the end, and the gaps it reports.
fn drain(db: &Tsdb, tail: &mut WalTail) -> (Read, Gaps) {
    let (mut samples, mut lost) = (Vec::new(), Vec::new());
    let (mut payload, mut scratch) = (Vec::new(), Vec::new());
    loop {
        match db.read_wal(tail, &mut payload).unwrap() {
            TailEvent::Record { .. } => {
                for day in Tsdb::decode_wal_record(&payload, &mut scratch).unwrap() {
                    for &(id, t, v) in &day.samples {
                        let labels = match day.labelled.get(id as usize) {
                            Some(encoded) => Some(encoded.decode()),
                            None => day
                                .new_series
                                .iter()
                                .find(|(new, _)| *new == id)
                                .map(|(_, l)| l.clone())
                                .or_else(|| db.series_labels(day.day, id)),
                        }
                        .expect("every series of a kept day has its labels");
                        samples.push((labels, t, v));
                    }
                }
            }
            TailEvent::End => return (samples, lost),
            TailEvent::Lost { from, to, .. } => lost.push((from, to)),
        }
    }
}

fn expected(n: usize, times: &[i64]) -> Vec<(Labels, i64, f64)> {
    times
        .iter()
        .flat_map(|&t| (0..n).map(move |i| (series(i), t, (t + i as i64) as f64)))
        .collect()
}

#[test]
fn a_tail_reads_what_is_committed_after_its_start_with_labels() {
    let dir = tempfile::tempdir().unwrap();
    let db = Tsdb::open(config(dir.path())).unwrap();
    let t0 = yesterday_noon();
    write(&db, 3, t0);
    let mut tail = WalTail::new(db.wal_end());
    assert_eq!(drain(&db, &mut tail), (vec![], vec![]));
    write(&db, 3, t0 + 1000);
    write(&db, 4, t0 + 2000);
    let (got, lost) = drain(&db, &mut tail);
    assert!(lost.is_empty());
    let mut want = expected(3, &[t0 + 1000]);
    want.extend(expected(4, &[t0 + 2000]));
    assert_eq!(
        got, want,
        "series created before the tail started get their labels from the index"
    );
}

#[test]
fn a_hold_keeps_flushed_segments_for_the_tail_and_lets_them_go_once_passed() {
    let dir = tempfile::tempdir().unwrap();
    let db = Tsdb::open(config(dir.path())).unwrap();
    let t0 = yesterday_noon();
    let start = db.wal_end();
    db.hold_wal("queue", start.segment).unwrap();
    let mut tail = WalTail::new(start);
    let times: Vec<i64> = (0..5).map(|k| t0 + k * 1000).collect();
    for &t in &times {
        write(&db, 2, t);
        db.flush().unwrap();
    }
    let retired = dir.path().join("wal/retired");
    assert_eq!(
        std::fs::read_dir(&retired).unwrap().count(),
        5,
        "each flushed segment is retired, not deleted"
    );
    let (got, lost) = drain(&db, &mut tail);
    assert!(lost.is_empty());
    assert_eq!(got, expected(2, &times));
    db.hold_wal("queue", tail.position().segment).unwrap();
    assert_eq!(
        std::fs::read_dir(&retired).unwrap().count(),
        0,
        "passed segments are deleted"
    );
    db.retain_wal_holds(&[]).unwrap();
    assert_eq!(db.wal_hold("queue"), None);
}

#[test]
fn a_hold_and_its_segments_survive_a_crash_and_are_not_replayed_twice() {
    let dir = tempfile::tempdir().unwrap();
    let t0 = yesterday_noon();
    let start = {
        let db = Tsdb::open(config(dir.path())).unwrap();
        let start = db.wal_end();
        db.hold_wal("queue", start.segment).unwrap();
        write(&db, 2, t0);
        db.flush().unwrap();
        write(&db, 2, t0 + 1000);
        std::mem::forget(db);
        start
    };
    std::fs::remove_file(dir.path().join("LOCK")).ok();
    let db = Tsdb::open(config(dir.path())).unwrap();
    assert_eq!(db.wal_hold("queue"), Some(start.segment));
    let mut tail = WalTail::new(start);
    let (got, lost) = drain(&db, &mut tail);
    assert!(lost.is_empty());
    assert_eq!(
        got,
        expected(2, &[t0, t0 + 1000]),
        "the retired and the replayed segment both read"
    );
    write(&db, 1, t0 + 2000);
    let (got, _) = drain(&db, &mut tail);
    assert_eq!(got, expected(1, &[t0 + 2000]));
}

#[test]
fn segments_past_the_backlog_bound_are_deleted_and_the_tail_reports_the_gap() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = config(dir.path());
    c.wal_max_retained_bytes = 1;
    let db = Tsdb::open(c).unwrap();
    let t0 = yesterday_noon();
    let start = db.wal_end();
    db.hold_wal("queue", start.segment).unwrap();
    let mut tail = WalTail::new(start);
    write(&db, 2, t0);
    db.flush().unwrap();
    write(&db, 2, t0 + 1000);
    let (got, lost) = drain(&db, &mut tail);
    assert_eq!(lost.len(), 1, "the deleted segment is reported: {lost:?}");
    assert_eq!(lost[0].0, start);
    assert_eq!(got, expected(2, &[t0 + 1000]), "reading goes on after the gap");
}

#[test]
fn an_engine_that_keeps_no_samples_feeds_the_wal_labelled_records_and_indexes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = config(dir.path());
    c.keep_samples = false;
    let db = Tsdb::open(c.clone()).unwrap();
    let t0 = yesterday_noon();
    let start = db.wal_end();
    db.hold_wal("agent", start.segment).unwrap();
    write(&db, 3, t0);
    db.flush().unwrap();
    write(&db, 3, t0 + 1000);
    let everything = [cairn_model::Matcher::equal("__name__", "m")];
    let nothing_known =
        |db: &Tsdb| cairn_storage::conformance::read(db, &everything, i64::MIN / 2, i64::MAX / 2).is_empty();
    assert!(nothing_known(&db), "no series is indexed, no sample kept");
    let mut tail = WalTail::new(start);
    let (got, lost) = drain(&db, &mut tail);
    assert!(lost.is_empty());
    assert_eq!(got, expected(3, &[t0, t0 + 1000]));
    // Every record carries its series' labels, so a restart needs no index,
    // and replay builds none.
    drop(db);
    let db = Tsdb::open(c).unwrap();
    assert!(nothing_known(&db), "replay skips labelled records");
    let mut tail = WalTail::new(start);
    write(&db, 3, t0 + 2000);
    let (got, lost) = drain(&db, &mut tail);
    assert!(lost.is_empty());
    assert_eq!(got, expected(3, &[t0, t0 + 1000, t0 + 2000]));
}
