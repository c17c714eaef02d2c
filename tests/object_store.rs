//! The object-storage tier against a real S3-compatible server (S3Proxy,
//! `tests/common/s3proxy.rs`) and, beside it, a `file://` bucket: settled
//! days uploaded and read back by range through the cache, a node that lost
//! its disk, a read-only second instance, retention and deletes in the
//! bucket, a failing bucket, and a missing or corrupt object.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::common::s3proxy::{ACCESS_KEY_ID, BUCKET, S3Proxy, SECRET_ACCESS_KEY};
use cairn_bucket::{Bucket, BucketConfig, ObjectInfo};
use cairn_model::{Labels, Matcher, Sample};
use cairn_storage::conformance::read;
use cairn_storage::{Admin, Appendable, ObjectStoreStats, Queryable, SelectHints, StorageError, collect_samples};
use cairn_tsdb::{Config, Day, Tsdb};

const DAY: i64 = 86_400_000;

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

/// Midnight (UTC) `days` days ago.
fn day_start(days: i64) -> i64 {
    (now() / DAY - days) * DAY
}

/// A bucket under test: a directory, or a prefix of the S3 server's bucket.
struct Store {
    url: String,
    endpoint: Option<String>,
    _dir: Option<tempfile::TempDir>,
}

impl Store {
    fn dir() -> Self {
        let dir = tempfile::tempdir().unwrap();
        Self {
            url: format!("file://{}", dir.path().display()),
            endpoint: None,
            _dir: Some(dir),
        }
    }

    fn s3(server: &S3Proxy, prefix: &str) -> Self {
        Self {
            url: format!("s3://{BUCKET}/{prefix}"),
            endpoint: Some(server.endpoint()),
            _dir: None,
        }
    }

    fn config(&self) -> BucketConfig {
        BucketConfig {
            endpoint: self.endpoint.clone(),
            region: Some("us-east-1".into()),
            access_key_id: Some(ACCESS_KEY_ID.into()),
            secret_access_key: Some(SECRET_ACCESS_KEY.into()),
            request_timeout: Duration::from_secs(5),
            max_retries: 1,
            ..BucketConfig::new(&self.url)
        }
    }

    /// A client of its own, without cache, to look at the bucket.
    fn inspect(&self) -> Bucket {
        let cache = tempfile::tempdir().unwrap();
        Bucket::open(&self.config(), cache.path(), 0).unwrap()
    }

    fn objects(&self) -> Vec<ObjectInfo> {
        self.inspect().list("partitions").unwrap()
    }

    fn parts(&self) -> Vec<ObjectInfo> {
        self.objects()
            .into_iter()
            .filter(|o| o.key.ends_with(".cpart"))
            .collect()
    }
}

/// The stores every scenario runs against: a directory always, S3Proxy
/// when it is built (always under CI), each with the server that serves it.
fn stores(prefix: &str) -> Vec<(Store, Option<S3Proxy>)> {
    let mut out = vec![(Store::dir(), None)];
    if let Some(server) = S3Proxy::start() {
        out.push((Store::s3(&server, prefix), Some(server)));
    }
    out
}

/// Background threads off (the test drives flushes, merges and uploads), a
/// day settled as soon as nothing is written to it.
fn config(data: &Path, store: &Store) -> Config {
    let mut c = Config::new(data);
    c.background = false;
    c.idle_merge_after = Duration::ZERO;
    c.object_store = Some(store.config());
    c
}

/// [`config`] with the background threads on, fast: flushes, merges and
/// upload rounds every few tens of ms, retries backing off from 100 ms.
fn live_config(data: &Path, store: &Store) -> Config {
    let mut c = config(data, store);
    c.background = true;
    c.maintenance_interval = Duration::from_millis(20);
    c.flush_interval = Duration::from_millis(100);
    c.upload_min_backoff = Duration::from_millis(100);
    c.upload_max_backoff = Duration::from_millis(300);
    c
}

fn labels(metric: usize, i: usize) -> Labels {
    Labels::from_pairs([("__name__", &format!("m_{metric}")), ("i", &i.to_string())])
}

fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// `metrics` × `series` series of `samples` samples 10 s apart from `start`.
fn write(db: &Tsdb, metrics: usize, series: usize, samples: usize, start: i64) {
    let mut app = db.appender();
    for m in 0..metrics {
        for i in 0..series {
            // Gauges of 3 decimals that do not repeat: parts about as
            // compressible as real ones.
            let s: Vec<Sample> = (0..samples)
                .map(|k| {
                    let v = splitmix64(((m as u64) << 40) | ((i as u64) << 20) | k as u64) % 1_000_000;
                    Sample::new(start + k as i64 * 10_000, v as f64 / 1000.0)
                })
                .collect();
            app.append(&labels(m, i), &s).unwrap();
        }
    }
    app.commit().unwrap();
}

fn metric(db: &dyn Queryable, m: usize, day: i64) -> Vec<(Labels, Vec<Sample>)> {
    read(db, &[Matcher::equal("__name__", format!("m_{m}"))], day, day + DAY - 1)
}

/// Flushes, merges what is settled and uploads it.
fn settle(db: &Tsdb) {
    db.flush().unwrap();
    db.maintain().unwrap();
    db.upload().unwrap();
}

fn bucket_stats(db: &Tsdb) -> ObjectStoreStats {
    db.stats().object_store.expect("a bucket")
}

/// Requests of operation `op` (get, put, list, delete) made so far.
fn requests(s: &ObjectStoreStats, op: &str) -> u64 {
    s.requests_total.iter().find(|(o, _)| *o == op).map_or(0, |(_, n)| *n)
}

fn gets(s: &ObjectStoreStats) -> u64 {
    requests(s, "get")
}

fn local_parts(data: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for day in std::fs::read_dir(data.join("partitions")).unwrap() {
        for f in std::fs::read_dir(day.unwrap().path()).unwrap() {
            let p = f.unwrap().path();
            if p.extension().is_some_and(|e| e == "cpart") {
                out.push(p);
            }
        }
    }
    out
}

#[test]
fn settled_days_move_to_the_bucket_and_cold_queries_read_only_their_ranges() {
    for (store, _server) in stores("cold") {
        let data = tempfile::tempdir().unwrap();
        let day = day_start(3);
        let expected = {
            let db = Tsdb::open(config(data.path(), &store)).unwrap();
            write(&db, 100, 100, 360, day + 3_600_000);
            // Today's data stays on disk.
            write(&db, 1, 10, 10, now() - 60_000);
            settle(&db);
            let stats = bucket_stats(&db);
            assert_eq!(stats.uploaded_parts_total, 1, "{}", store.url);
            assert_eq!(stats.upload_backlog_parts, 0);
            (0..100).map(|m| metric(&db, m, day)).collect::<Vec<_>>()
        };
        assert_eq!(expected[42].len(), 100);
        assert_eq!(expected[42][5].1.len(), 360);
        let parts = store.parts();
        assert_eq!(parts.len(), 1, "{parts:?}");
        let part_bytes = parts[0].size;
        assert!(
            store.objects().iter().any(|o| o.key.contains("/index-")),
            "the day's index segments are uploaded with it"
        );
        assert_eq!(local_parts(data.path()).len(), 1, "only today's part is on disk");

        // Cold: nothing cached. Opening reads the part's footer and index.
        std::fs::remove_dir_all(data.path().join("cache")).unwrap();
        let db = Tsdb::open(config(data.path(), &store)).unwrap();
        let opened = bucket_stats(&db);
        let got = metric(&db, 42, day);
        let cold = bucket_stats(&db);
        assert_eq!(got, expected[42]);
        let (requests, bytes) = (
            gets(&cold) - gets(&opened),
            cold.read_bytes_total - opened.read_bytes_total,
        );
        println!(
            "{}: a cold query of 1 metric of 100 read {bytes} bytes in {requests} ranged GETs of a {part_bytes}-byte part",
            store.url
        );
        assert!((1..=4).contains(&requests), "{requests} GETs");
        assert!(
            bytes * 20 < part_bytes,
            "{bytes} bytes read of a {part_bytes}-byte part"
        );
        // Warm: from the cache, no request.
        assert_eq!(metric(&db, 42, day), expected[42]);
        let warm = bucket_stats(&db);
        assert_eq!(gets(&warm), gets(&cold));
        assert!(warm.cache_hits_total > cold.cache_hits_total);
        // Every other metric reads back the same too.
        for (m, want) in expected.iter().enumerate().step_by(9) {
            assert_eq!(&metric(&db, m, day), want, "m_{m}");
        }
        assert!(bucket_stats(&db).cache_bytes <= 16 << 20);
    }
}

#[test]
fn a_node_that_lost_its_disk_serves_the_bucket_data() {
    for (store, _server) in stores("lost-disk") {
        let day = day_start(2);
        let data = tempfile::tempdir().unwrap();
        let before = {
            let db = Tsdb::open(config(data.path(), &store)).unwrap();
            write(&db, 3, 20, 100, day + 1000);
            settle(&db);
            (0..3).map(|m| metric(&db, m, day)).collect::<Vec<_>>()
        };
        // The disk is gone: a new, empty data directory.
        let data = tempfile::tempdir().unwrap();
        {
            let db = Tsdb::open(config(data.path(), &store)).unwrap();
            for (m, want) in before.iter().enumerate() {
                assert_eq!(&metric(&db, m, day), want, "{}", store.url);
            }
            // New series for the same day (a backfill): their index segment
            // must not replace the one the bucket holds.
            let mut app = db.appender();
            app.append(&labels(9, 0), &[Sample::new(day + 5000, 1.5)]).unwrap();
            app.commit().unwrap();
            settle(&db);
        }
        let segments = store
            .objects()
            .into_iter()
            .filter(|o| o.key.contains("/index-"))
            .count();
        assert_eq!(segments, 2, "{}", store.url);
        let data = tempfile::tempdir().unwrap();
        let db = Tsdb::open(config(data.path(), &store)).unwrap();
        for (m, want) in before.iter().enumerate() {
            assert_eq!(&metric(&db, m, day), want);
        }
        assert_eq!(
            metric(&db, 9, day),
            vec![(labels(9, 0), vec![Sample::new(day + 5000, 1.5)])]
        );
    }
}

#[test]
fn a_read_only_instance_serves_uploaded_data_and_follows_the_writer() {
    for (store, _server) in stores("read-only") {
        let (d1, d2) = (day_start(4), day_start(3));
        let (wdir, rdir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let writer = Tsdb::open(config(wdir.path(), &store)).unwrap();
        write(&writer, 2, 10, 50, d1 + 1000);
        settle(&writer);
        let mut ro_config = config(rdir.path(), &store);
        ro_config.read_only = true;
        let reader = Tsdb::open(ro_config).unwrap();
        assert_eq!(metric(&reader, 0, d1), metric(&writer, 0, d1), "{}", store.url);
        assert_eq!(metric(&reader, 0, d1).len(), 10);
        let mut app = reader.appender();
        app.append(&labels(0, 0), &[Sample::new(now(), 1.0)]).unwrap();
        let refused = app.commit().unwrap_err();
        assert!(matches!(refused, StorageError::Unavailable(_)), "{refused}");
        assert!(reader.delete_series(&[Matcher::equal("i", "1")], d1, d1 + DAY).is_err());

        // The writer uploads another day, and deletes a series of the first.
        write(&writer, 2, 10, 50, d2 + 1000);
        writer
            .delete_series(&[Matcher::equal("i", "3")], d1, d1 + DAY - 1)
            .unwrap();
        settle(&writer);
        assert_eq!(metric(&reader, 0, d2), vec![]);
        reader.refresh().unwrap();
        assert_eq!(metric(&reader, 0, d2), metric(&writer, 0, d2));
        let after_delete = metric(&writer, 0, d1);
        assert_eq!(after_delete.len(), 9);
        assert_eq!(metric(&reader, 0, d1), after_delete);
        assert_eq!(store.parts().len(), 2, "the delete's rewrite replaced the day's part");
    }
}

#[test]
fn uploads_at_once_from_two_threads_keep_every_part() {
    let store = Store::dir();
    let data = tempfile::tempdir().unwrap();
    let db = Tsdb::open(config(data.path(), &store)).unwrap();
    let days: Vec<i64> = (2..12).map(day_start).collect();
    for &day in &days {
        write(&db, 1, 20, 50, day + 1000);
    }
    db.flush().unwrap();
    db.maintain().unwrap();
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| db.upload().unwrap());
        }
    });
    assert_eq!(store.parts().len(), days.len(), "every day's part is in the bucket");
    for &day in &days {
        assert_eq!(metric(&db, 0, day).len(), 20);
    }
    let reopened = {
        drop(db);
        Tsdb::open(config(data.path(), &store)).unwrap()
    };
    for &day in &days {
        assert_eq!(metric(&reopened, 0, day).len(), 20, "read back from the bucket");
    }
}

#[test]
fn uploaded_parts_are_retired_only_as_named() {
    let store = Store::dir();
    let data = tempfile::tempdir().unwrap();
    let day = day_start(3);
    let db = Tsdb::open(config(data.path(), &store)).unwrap();
    write(&db, 1, 10, 50, day + 1000);
    settle(&db);
    let uploaded = db.uploaded_parts();
    let parts = uploaded.get(&Day::of(day)).expect("the day is in the bucket").clone();
    assert_eq!(parts.len(), 1);
    assert!(db.is_uploaded(Day::of(day)));
    // A backfill: the day holds a local part again.
    write(&db, 1, 1, 5, day + 3_600_000);
    db.flush().unwrap();
    assert!(!db.is_uploaded(Day::of(day)));

    // Another version of the part is not the one named.
    let rewritten = vec![ObjectInfo {
        version: "another".into(),
        ..parts[0].clone()
    }];
    assert_eq!(db.retire_uploaded(Day::of(day), &rewritten).unwrap(), 0);
    assert_eq!(metric(&db, 0, day).len(), 10);
    assert_eq!(db.retire_uploaded(Day::of(day), &parts).unwrap(), 1);
    assert!(store.parts().is_empty(), "the retired part left the bucket");
    // What is left of the day is the backfill, kept on disk.
    let left = metric(&db, 0, day);
    assert_eq!(left.len(), 1);
    assert_eq!(left[0].1.len(), 5);
    assert!(db.uploaded_parts().is_empty());
}

#[test]
fn retention_and_deletes_reach_the_bucket() {
    for (store, _server) in stores("retention") {
        let (old, recent) = (day_start(10), day_start(2));
        let data = tempfile::tempdir().unwrap();
        {
            let db = Tsdb::open(config(data.path(), &store)).unwrap();
            write(&db, 2, 10, 50, old + 1000);
            write(&db, 2, 10, 50, recent + 1000);
            settle(&db);
            db.delete_series(&[Matcher::equal("i", "4")], recent, recent + DAY - 1)
                .unwrap();
            // The compaction that applies the delete rewrites the bucket's part.
            db.maintain().unwrap();
            db.upload().unwrap();
        }
        let days = |store: &Store| {
            let mut days: Vec<String> = store
                .objects()
                .iter()
                .map(|o| o.key.split('/').nth(1).unwrap().to_string())
                .collect();
            days.dedup();
            days
        };
        assert_eq!(days(&store).len(), 2, "{}", store.url);
        // A restart with a shorter retention drops the old day from the bucket.
        let data = tempfile::tempdir().unwrap();
        let mut c = config(data.path(), &store);
        c.retention = Duration::from_secs(5 * 86_400);
        let db = Tsdb::open(c).unwrap();
        assert_eq!(days(&store).len(), 1, "{:?}", store.objects());
        // The deleted series is gone from the bucket's copy, not only hidden.
        let got = metric(&db, 0, recent);
        assert_eq!(got.len(), 9);
        assert!(got.iter().all(|(l, _)| l.get("i") != Some("4")));
        assert_eq!(metric(&db, 0, old), vec![]);
    }
}

#[test]
fn a_missing_or_corrupt_object_fails_only_the_queries_of_its_data() {
    for (store, _server) in stores("damage") {
        let (d1, d2, d3) = (day_start(5), day_start(4), day_start(3));
        let data = tempfile::tempdir().unwrap();
        {
            let db = Tsdb::open(config(data.path(), &store)).unwrap();
            for d in [d1, d2, d3] {
                write(&db, 1, 10, 50, d + 1000);
            }
            settle(&db);
        }
        let mut c = config(data.path(), &store);
        c.cache_max_bytes = 0;
        let db = Tsdb::open(c).unwrap();
        let parts = store.parts();
        assert_eq!(parts.len(), 3);
        let inspect = store.inspect();
        inspect.delete(&parts[0].key).unwrap();
        // The first block's bytes changed: it fails its checksum.
        let mut damaged = inspect.get(&parts[1].key).unwrap().to_vec();
        for b in &mut damaged[8..24] {
            *b ^= 0x5a;
        }
        inspect.put(&parts[1].key, damaged).unwrap();
        let select = |day: i64| -> Result<usize, StorageError> {
            let q = db.querier(day, day + DAY - 1)?;
            let mut n = 0;
            for series in q.select(&SelectHints::default(), &[Matcher::equal("__name__", "m_0")])? {
                n += collect_samples(series?.samples.as_mut())?.len();
            }
            Ok(n)
        };
        let missing = select(d1).unwrap_err().to_string();
        assert!(missing.contains(&parts[0].key), "{missing}");
        let corrupt = select(d2).unwrap_err().to_string();
        assert!(
            corrupt.contains(&parts[1].key) && corrupt.contains("checksum"),
            "{corrupt}"
        );
        assert_eq!(select(d3).unwrap(), 500, "{}", store.url);
    }
}

/// Waits until `done` holds, up to `timeout`.
fn wait_for(what: &str, timeout: Duration, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_bucket_that_goes_down_never_blocks_ingestion_and_its_backlog_drains() {
    let Some(mut server) = S3Proxy::start() else {
        return;
    };
    let store = Store::s3(&server, "faults");
    let day = day_start(2);
    let data = tempfile::tempdir().unwrap();
    let mut c = live_config(data.path(), &store);
    let expected = {
        let db = Tsdb::open(c.clone()).unwrap();
        server.stop();
        write(&db, 5, 20, 100, day + 1000);
        wait_for("a failed upload", Duration::from_secs(60), || {
            let s = bucket_stats(&db);
            s.upload_failures_total >= 2 && s.upload_backlog_parts == 1
        });
        // Ingestion and queries go on meanwhile.
        for round in 0..5 {
            let started = Instant::now();
            write(&db, 1, 5, 1, now() - 1000 + round);
            assert!(
                started.elapsed() < Duration::from_secs(1),
                "a write waited for the bucket"
            );
        }
        assert_eq!(metric(&db, 3, day).len(), 20);
        assert!(bucket_stats(&db).upload_backlog_bytes > 0);
        server.restart();
        wait_for("the backlog to drain", Duration::from_secs(60), || {
            let s = bucket_stats(&db);
            s.upload_backlog_parts == 0 && s.uploaded_parts_total == 1
        });
        (0..5).map(|m| metric(&db, m, day)).collect::<Vec<_>>()
    };
    // Nothing lost: a new disk finds all of it in the bucket.
    let data = tempfile::tempdir().unwrap();
    c.path = data.path().to_path_buf();
    c.background = false;
    let db = Tsdb::open(c).unwrap_or_else(|e| panic!("{e}: {}", server.log()));
    for (m, want) in expected.iter().enumerate() {
        assert_eq!(&metric(&db, m, day), want);
    }
}

#[test]
fn a_server_uploads_and_a_read_only_server_answers_from_the_bucket() {
    let Some(server) = S3Proxy::start() else {
        return;
    };
    let endpoint = server.endpoint();
    let url = format!("s3://{BUCKET}/servers");
    let bucket_flags = [
        "--storage.object-store.url",
        &url,
        "--storage.object-store.endpoint",
        &endpoint,
        "--storage.object-store.region",
        "us-east-1",
        "--storage.object-store.access-key-id",
        ACCESS_KEY_ID,
        "--storage.object-store.secret-access-key",
        SECRET_ACCESS_KEY,
    ];
    let mut writer_flags = bucket_flags.to_vec();
    writer_flags.extend(["--storage.settle-time", "0s", "--storage.flush-interval", "1s"]);
    let writer = crate::common::Server::start_with(&writer_flags);
    let day = day_start(2);
    let samples: Vec<(i64, f64)> = (0..60).map(|k| (day + 3_600_000 + k * 15_000, k as f64)).collect();
    let client = writer.client();
    client.write(&[
        crate::common::series(&[("__name__", "up"), ("job", "a")], &samples),
        crate::common::series(&[("__name__", "up"), ("job", "b")], &samples),
    ]);
    wait_for("the upload", Duration::from_secs(90), || {
        client.metric("cairn_object_store_uploaded_parts_total") == Some(1.0)
    });
    let flags = client.get("/api/v1/status/flags").json();
    assert_eq!(flags["data"]["storage.object-store.secret-access-key"], "<secret>");

    let mut reader_flags = bucket_flags.to_vec();
    reader_flags.extend(["--storage.read-only", "--storage.object-store.refresh-interval", "1s"]);
    let reader = crate::common::Server::start_with(&reader_flags);
    let query = [
        ("query", "sum by (job) (up)"),
        ("start", &crate::common::ms_to_param(day + 3_600_000)),
        ("end", &crate::common::ms_to_param(day + 3_600_000 + 59 * 15_000)),
        ("step", "60"),
    ];
    let from_writer = client.get_query("/api/v1/query_range", &query);
    let from_reader = reader.client().get_query("/api/v1/query_range", &query);
    assert_eq!(from_reader.status, 200, "{}", from_reader.body);
    assert_eq!(from_reader.json()["data"], from_writer.json()["data"]);
    assert_eq!(from_reader.json()["data"]["result"].as_array().unwrap().len(), 2);
    let refused = reader
        .client()
        .try_write(&[crate::common::series(&[("__name__", "x")], &[(now(), 1.0)])])
        .unwrap();
    assert_eq!(refused.status, 503, "{}", refused.body);
    let metrics = reader.client().get("/metrics").body;
    assert!(
        metrics.contains("cairn_object_store_requests_total{operation=\"get\"}"),
        "{metrics}"
    );
}

#[test]
fn each_tenant_keeps_its_days_under_its_own_prefix_and_comes_back_from_the_bucket() {
    use cairn_storage::{TenantId, Tenants};
    use cairn_tsdb::{TenantSettings, TsdbTenants};
    for (store, _server) in stores("tenants") {
        let day = day_start(2);
        let settings = || -> cairn_tsdb::SettingsOf { std::sync::Arc::new(|_: &TenantId| TenantSettings::default()) };
        let (a, b) = (TenantId::new("team-a").unwrap(), TenantId::new("team-b").unwrap());
        let data = tempfile::tempdir().unwrap();
        let expected = {
            let tenants = TsdbTenants::open(config(data.path(), &store), settings()).unwrap();
            for (i, id) in [&a, &b].into_iter().enumerate() {
                let storage = tenants.get_or_create(id).unwrap();
                let mut app = storage.appender();
                app.append(&labels(i, 0), &[Sample::new(day + 1000, i as f64)]).unwrap();
                app.commit().unwrap();
            }
            for (_, engine) in tenants.engines() {
                settle(&engine);
            }
            let got = metric(&*tenants.get(&a).unwrap().unwrap(), 0, day);
            tenants.close().unwrap();
            got
        };
        assert_eq!(expected.len(), 1);
        let keys: Vec<String> = store
            .inspect()
            .list("tenants")
            .unwrap()
            .into_iter()
            .map(|o| o.key)
            .collect();
        assert!(
            keys.iter().any(|k| k.starts_with("tenants/team-a/partitions/")),
            "{keys:?}"
        );
        assert!(
            keys.iter().any(|k| k.starts_with("tenants/team-b/partitions/")),
            "{keys:?}"
        );
        // A new disk finds both tenants in the bucket, each with its own data.
        let data = tempfile::tempdir().unwrap();
        let tenants = TsdbTenants::open(config(data.path(), &store), settings()).unwrap();
        let listed = tenants.list();
        assert!(listed.contains(&a) && listed.contains(&b), "{listed:?}");
        assert_eq!(metric(&*tenants.get(&a).unwrap().unwrap(), 0, day), expected);
        assert_eq!(metric(&*tenants.get(&b).unwrap().unwrap(), 0, day), vec![]);
        assert_eq!(metric(&*tenants.get(&b).unwrap().unwrap(), 1, day).len(), 1);
        tenants.close().unwrap();
        // So does a read-only instance, which creates none.
        let replica = tempfile::tempdir().unwrap();
        let mut c = config(replica.path(), &store);
        c.read_only = true;
        let tenants = TsdbTenants::open(c, settings()).unwrap();
        assert_eq!(metric(&*tenants.get(&a).unwrap().unwrap(), 0, day), expected);
        assert!(tenants.get_or_create(&TenantId::new("team-c").unwrap()).is_err());
        tenants.close().unwrap();
    }
}

#[test]
fn a_bucket_stopped_in_the_middle_of_an_upload_loses_nothing() {
    let Some(mut server) = S3Proxy::start() else {
        return;
    };
    let store = Store::s3(&server, "mid-upload");
    let data = tempfile::tempdir().unwrap();
    let mut c = live_config(data.path(), &store);
    let db = Tsdb::open(c.clone()).unwrap();
    let puts = |db: &Tsdb| requests(&bucket_stats(db), "put");
    // An upload round puts the day's index segment, then its part (about
    // 10 MB here): the bucket is stopped as soon as the first put is done,
    // while the part is on its way. A round that wins the race is tried
    // again with another day.
    let mut days = Vec::new();
    for attempt in 0..3 {
        let day = day_start(4 - attempt);
        days.push(day);
        let before = puts(&db);
        write(&db, 100, 100, 360, day + 3_600_000);
        let deadline = Instant::now() + Duration::from_secs(60);
        while puts(&db) == before {
            assert!(Instant::now() < deadline, "no upload started");
            std::thread::sleep(Duration::from_millis(1));
        }
        server.stop();
        let s = bucket_stats(&db);
        if s.uploaded_parts_total == attempt as u64 {
            println!("the bucket stopped in the middle of round {}", attempt + 1);
            break;
        }
        assert!(attempt < 2, "every round finished its upload before the bucket stopped");
        server.restart();
        wait_for("the part's upload", Duration::from_secs(60), || {
            bucket_stats(&db).upload_backlog_parts == 0
        });
    }
    wait_for("a failed upload", Duration::from_secs(60), || {
        let s = bucket_stats(&db);
        s.upload_failures_total >= 1 && s.upload_backlog_parts == 1
    });
    let day = *days.last().unwrap();
    assert_eq!(metric(&db, 7, day).len(), 100, "the part is still served from disk");
    server.restart();
    wait_for("the backlog to drain", Duration::from_secs(60), || {
        bucket_stats(&db).upload_backlog_parts == 0
    });
    let expected: Vec<_> = days.iter().map(|&d| metric(&db, 7, d)).collect();
    db.close().unwrap();
    drop(db);
    // A new disk finds every day whole in the bucket.
    let data = tempfile::tempdir().unwrap();
    c.path = data.path().to_path_buf();
    c.background = false;
    let db = Tsdb::open(c).unwrap();
    for (d, want) in days.iter().zip(&expected) {
        assert_eq!(&metric(&db, 7, *d), want);
        assert_eq!(want.len(), 100);
    }
}
