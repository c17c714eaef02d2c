//! Ingestion, flushes, merges and queries at the same time: every query must
//! see whole commits (a consistent snapshot), never a torn or shrinking view.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use cairn_model::{Labels, Matcher, Sample};
use cairn_storage::conformance::read;
use cairn_storage::{Appendable, Queryable};
use cairn_tsdb::{Config, Tsdb};

const SERIES: usize = 40;
const COMMITS: i64 = 400;
/// Series `gone` is deleted whole every this many commits, the last time
/// this many commits before the end.
const DELETE_EVERY: i64 = 100;
const KEPT_AFTER_LAST_DELETE: i64 = 50;

#[test]
fn tsdb_queries_see_whole_commits_while_flushing_and_merging() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = Config::new(dir.path());
    c.max_rows_per_buffer = 97; // seal often, at odd points inside commits
    c.seal_rows_per_series = 0;
    // The background threads also flush, merge and sample memory, racing
    // the explicit calls below (this found a lock-order deadlock once).
    c.flush_interval = std::time::Duration::from_millis(30);
    c.maintenance_interval = std::time::Duration::from_millis(10);
    c.wal_sync = cairn_tsdb::WalSync::Interval(std::time::Duration::from_millis(10));
    let db = Arc::new(Tsdb::open(c).unwrap());
    let start = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
        - 3_600_000;
    let done = Arc::new(AtomicBool::new(false));
    let labels: Vec<Labels> = (0..SERIES)
        .map(|i| Labels::from_pairs([("__name__", "c"), ("i", &i.to_string())]))
        .collect();

    let gone = Labels::from_pairs([("__name__", "gone")]);
    let writer = {
        let (db, done, labels, gone) = (db.clone(), done.clone(), labels.clone(), gone.clone());
        std::thread::spawn(move || {
            for k in 0..COMMITS {
                // Each commit writes sample k of every series.
                let mut app = db.appender();
                for l in &labels {
                    app.append(l, &[Sample::new(start + k * 1000, k as f64)]).unwrap();
                }
                app.append(&gone, &[Sample::new(start + k * 1000, k as f64)]).unwrap();
                app.commit().unwrap();
                // Deletes race the flushes and merges too.
                if k % DELETE_EVERY == DELETE_EVERY - 1 - KEPT_AFTER_LAST_DELETE {
                    cairn_storage::Admin::delete_series(
                        db.as_ref(),
                        &[Matcher::equal("__name__", "gone")],
                        i64::MIN / 2,
                        i64::MAX / 2,
                    )
                    .unwrap();
                }
            }
            done.store(true, Ordering::Release);
        })
    };
    // Flushes and disk merges take different locks and run on different
    // threads in the engine, so they race each other here too.
    let flusher = {
        let (db, done) = (db.clone(), done.clone());
        std::thread::spawn(move || {
            while !done.load(Ordering::Acquire) {
                db.flush().unwrap();
                std::hint::black_box(cairn_storage::Admin::stats(db.as_ref()));
            }
        })
    };
    let merger = {
        let (db, done) = (db.clone(), done.clone());
        std::thread::spawn(move || {
            while !done.load(Ordering::Acquire) {
                db.maintain().unwrap();
                db.compact().unwrap();
            }
        })
    };
    let mut last_seen = 0;
    let mut reads = 0;
    while !done.load(Ordering::Acquire) || reads == 0 {
        let got = read(
            db.as_ref() as &dyn Queryable,
            &[Matcher::equal("__name__", "c")],
            i64::MIN / 2,
            i64::MAX / 2,
        );
        reads += 1;
        if got.is_empty() {
            continue;
        }
        assert_eq!(got.len(), SERIES, "a commit's series appear together");
        let n = got[0].1.len();
        for (l, samples) in &got {
            assert_eq!(
                samples.len(),
                n,
                "series {l} torn: every series must hold the same commits"
            );
            for (k, s) in samples.iter().enumerate() {
                assert_eq!(*s, Sample::new(start + k as i64 * 1000, k as f64));
            }
        }
        assert!(n >= last_seen, "visible data never shrinks ({n} < {last_seen})");
        last_seen = n;
    }
    writer.join().unwrap();
    flusher.join().unwrap();
    merger.join().unwrap();
    let all = |db: &Tsdb, name: &str| {
        read(
            db as &dyn Queryable,
            &[Matcher::equal("__name__", name)],
            i64::MIN / 2,
            i64::MAX / 2,
        )
    };
    let got = all(&db, "c");
    assert_eq!(got.len(), SERIES);
    assert!(got.iter().all(|(_, s)| s.len() == COMMITS as usize));
    assert!(reads > 1);
    let kept: Vec<Sample> = (COMMITS - KEPT_AFTER_LAST_DELETE..COMMITS)
        .map(|k| Sample::new(start + k * 1000, k as f64))
        .collect();
    let left = vec![(gone, kept)];
    assert_eq!(all(&db, "gone"), left, "what the last delete left");

    // The part files left by racing flushes, merges and deletes hold the same data.
    let path = db.path().to_path_buf();
    Arc::into_inner(db).unwrap().close().unwrap();
    let reopened = Tsdb::open(Config::new(&path)).unwrap();
    assert_eq!(all(&reopened, "c"), got);
    assert_eq!(all(&reopened, "gone"), left);
}
