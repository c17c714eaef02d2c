//! End-to-end tests of the real `cairn` binary over HTTP: remote write in,
//! series/labels/values/export out, errors, deletes, `/metrics`, restarts and
//! backfill.

use std::time::Duration;

use crate::common::*;
use cairn_model::stale_nan;
use cairn_protocols::remote_write::ContentEncoding;

const MIN: i64 = 60_000;
const DAY: i64 = 86_400_000;

/// A recent, second-aligned base timestamp well inside retention.
fn base() -> i64 {
    (now_ms() - 60 * MIN) / 1000 * 1000
}

#[test]
fn write_then_every_read_api_matches_exactly() {
    let srv = Server::start();
    let c = srv.client();
    let t0 = base();
    // Labels deliberately unsorted, with an empty-valued label (dropped).
    let body = encode_raw(&[
        (
            vec![
                ("job", "api"),
                ("__name__", "http_requests_total"),
                ("instance", "h1"),
                ("empty", ""),
            ],
            vec![(t0, 1.0), (t0 + 15_000, 2.5), (t0 + 30_000, stale_nan())],
        ),
        (
            vec![("instance", "h2"), ("job", "api"), ("__name__", "http_requests_total")],
            vec![(t0, 1e21), (t0 + 15_000, -0.125), (t0 + 30_000, f64::INFINITY)],
        ),
        (
            vec![("__name__", "up"), ("job", "api"), ("instance", "h1")],
            vec![(t0, 1.0)],
        ),
        (
            vec![("__name__", "up"), ("job", "db"), ("zone", "z\"1\\n")],
            vec![(t0, 0.0)],
        ),
    ]);
    let r = c.post_write(body, Some("snappy"));
    assert_eq!((r.status, r.body.as_str()), (204, ""));
    // The same series again in yet another label order: same identity.
    c.write(&[]); // an empty request is fine too
    let r = c.post_write(
        encode_raw(&[(
            vec![("instance", "h1"), ("__name__", "http_requests_total"), ("job", "api")],
            vec![(t0 + 45_000, 4.0)],
        )]),
        None,
    );
    assert_eq!(r.status, 204, "{}", r.body);

    // /api/v1/series: sorted, canonical, deduplicated across selectors.
    let sel = r#"{job="api"}"#;
    let got = c.series(&[sel, "http_requests_total"]);
    assert_eq!(
        got,
        vec![
            lmap(&[("__name__", "http_requests_total"), ("instance", "h1"), ("job", "api")]),
            lmap(&[("__name__", "http_requests_total"), ("instance", "h2"), ("job", "api")]),
            lmap(&[("__name__", "up"), ("instance", "h1"), ("job", "api")]),
        ]
    );
    // Exact body, key order included.
    let raw = c.get_query("/api/v1/series", &[("match[]", "http_requests_total")]);
    assert_eq!(
        raw.body,
        r#"{"status":"success","data":[{"__name__":"http_requests_total","instance":"h1","job":"api"},{"__name__":"http_requests_total","instance":"h2","job":"api"}]}"#
    );
    // Labels and values.
    assert_eq!(c.labels(&[]), ["__name__", "instance", "job", "zone"]);
    assert_eq!(c.labels(&[r#"{job="api"}"#]), ["__name__", "instance", "job"]);
    assert_eq!(c.label_values("__name__", &[]), ["http_requests_total", "up"]);
    assert_eq!(c.label_values("instance", &[]), ["h1", "h2"]);
    assert_eq!(c.label_values("job", &["up"]), ["api", "db"]);
    assert_eq!(c.label_values("zone", &[]), ["z\"1\\n"]);
    assert!(c.label_values("empty", &[]).is_empty());
    assert!(c.label_values("nope", &[]).is_empty());

    // Export: one line per series in label order, values bit-exact.
    let exp = c.export(&[r#"{__name__=~".+"}"#], None);
    let labels: Vec<_> = exp.iter().map(|e| e.labels.clone()).collect();
    assert_eq!(
        labels,
        vec![
            lmap(&[("__name__", "http_requests_total"), ("instance", "h1"), ("job", "api")]),
            lmap(&[("__name__", "http_requests_total"), ("instance", "h2"), ("job", "api")]),
            lmap(&[("__name__", "up"), ("instance", "h1"), ("job", "api")]),
            lmap(&[("__name__", "up"), ("job", "db"), ("zone", "z\"1\\n")]),
        ]
    );
    assert_samples_eq(
        &exp[0].samples,
        &[
            (t0, 1.0),
            (t0 + 15_000, 2.5),
            (t0 + 30_000, stale_nan()),
            (t0 + 45_000, 4.0),
        ],
        "h1",
    );
    assert_samples_eq(
        &exp[1].samples,
        &[(t0, 1e21), (t0 + 15_000, -0.125), (t0 + 30_000, f64::INFINITY)],
        "h2",
    );
    assert_samples_eq(&exp[2].samples, &[(t0, 1.0)], "up h1");
    assert_samples_eq(&exp[3].samples, &[(t0, 0.0)], "up db");
    // The stale marker is `null` on the wire.
    let body = c
        .get_query(
            "/api/v1/export",
            &[("match[]", r#"http_requests_total{instance="h1"}"#)],
        )
        .body;
    assert_eq!(
        body,
        format!(
            "{{\"metric\":{{\"__name__\":\"http_requests_total\",\"instance\":\"h1\",\"job\":\"api\"}},\
             \"values\":[1,2.5,null,4],\"timestamps\":[{},{},{},{}]}}\n",
            t0,
            t0 + 15_000,
            t0 + 30_000,
            t0 + 45_000
        )
    );
    // A time range cuts samples; series without samples in range are left out.
    let exp = c.export(&["http_requests_total"], Some((t0 + 10_000, t0 + 30_000)));
    assert_eq!(exp.len(), 2);
    assert_samples_eq(
        &exp[0].samples,
        &[(t0 + 15_000, 2.5), (t0 + 30_000, stale_nan())],
        "h1 range",
    );
    assert!(c.export(&["up"], Some((t0 + 1, t0 + 30_000))).is_empty());
    // The /prometheus prefix serves the same.
    let prefixed = c.get_query("/prometheus/api/v1/label/instance/values", &[]);
    assert_eq!(prefixed.body, r#"{"status":"success","data":["h1","h2"]}"#);
    // The plan of a query over the data stored now: a few series, so inline.
    let (start, end) = ((t0 / 1000).to_string(), (t0 / 1000 + 60).to_string());
    let q = "sum by (job) (rate(http_requests_total[1m]))";
    let range = [
        ("query", q),
        ("start", start.as_str()),
        ("end", end.as_str()),
        ("step", "15"),
    ];
    let plan = c.get_query("/api/v1/explain", &range).json();
    let text = plan["data"]["plan"].as_str().unwrap_or_default();
    for line in [
        "range query",
        "(5 steps)",
        "inline (on the caller's thread)",
        // Folded or not depends on the machine's cores (plan/decide.rs).
        "sum by (job): ",
        "    http_requests_total, range 1m: at most 2 series, 1 shard(s)",
    ] {
        assert!(text.contains(line), "{line:?} not in\n{text}");
    }
    let instant = c
        .get_query("/api/v1/explain", &[("query", "up == 1"), ("time", end.as_str())])
        .json();
    let text = instant["data"]["plan"].as_str().unwrap_or_default();
    assert!(text.starts_with("instant query at "), "{text}");
    c.get_query("/api/v1/explain", &[("query", "sum(")])
        .assert_error(400, "bad_data");
}

#[test]
fn encodings_and_refusals() {
    let srv = Server::start();
    let c = srv.client();
    let t0 = base();
    let one = |job: &str, v: f64| vec![series(&[("__name__", "enc"), ("job", job)], &[(t0, v)])];
    for (job, encoding, header) in [
        ("snappy", ContentEncoding::Snappy, Some("snappy")),
        ("default", ContentEncoding::Snappy, None),
        ("zstd", ContentEncoding::Zstd, Some("zstd")),
        ("identity", ContentEncoding::Identity, Some("identity")),
        ("upper", ContentEncoding::Zstd, Some("ZSTD")),
    ] {
        let r = c.post_write(encode(&one(job, 1.5), encoding), header);
        assert_eq!(r.status, 204, "{job}: {}", r.body);
    }
    let good = |c: &Client| {
        c.export(&["enc"], None)
            .into_iter()
            .map(|e| (e.labels["job"].clone(), e.samples.len()))
            .collect::<Vec<_>>()
    };
    let want: Vec<(String, usize)> = ["default", "identity", "snappy", "upper", "zstd"]
        .iter()
        .map(|j| (j.to_string(), 1))
        .collect();
    assert_eq!(good(&c), want);

    // Unknown encodings: 415 with the error envelope.
    for enc in ["gzip", "br", "deflate"] {
        let r = c.post_write(encode(&one("bad-enc", 1.0), ContentEncoding::Snappy), Some(enc));
        r.assert_error(415, "bad_data");
    }
    // Garbage: 400 bad_data.
    let r = c.post_write(b"\xff\xff\xff\xffnot a write request".to_vec(), Some("snappy"));
    r.assert_error(400, "bad_data");
    let r = c.post_write(b"\x0a\x05garb".to_vec(), Some("identity"));
    r.assert_error(400, "bad_data");
    // A snappy body announced as zstd.
    let r = c.post_write(encode(&one("mislabelled", 1.0), ContentEncoding::Snappy), Some("zstd"));
    r.assert_error(400, "bad_data");
    // Duplicate label names: 400, and the whole request is refused.
    let r = c.post_write(
        encode_raw(&[
            (vec![("__name__", "enc"), ("job", "dup-ok")], vec![(t0, 1.0)]),
            (vec![("__name__", "enc"), ("job", "a"), ("job", "b")], vec![(t0, 1.0)]),
        ]),
        None,
    );
    r.assert_error(400, "bad_data");
    assert!(r.body.contains("duplicate label name"), "{}", r.body);
    // No metric name: 400.
    let r = c.post_write(encode_raw(&[(vec![("job", "noname")], vec![(t0, 1.0)])]), None);
    r.assert_error(400, "bad_data");
    // Nothing from a refused request was stored.
    assert_eq!(good(&c), want);
    assert!(c.series(&[r#"{job=~"dup-ok|noname|mislabelled|bad-enc"}"#]).is_empty());
    // A protobuf message type Cairn does not know is refused with 415.
    let r = c
        .http
        .post(format!("{}/api/v1/write", c.base))
        .header(
            "Content-Type",
            "application/x-protobuf;proto=io.prometheus.write.v3.Request",
        )
        .body(encode(&one("v2", 1.0), ContentEncoding::Snappy))
        .send()
        .expect("send");
    assert_eq!(r.status().as_u16(), 415);
    // Other API errors use the same envelope.
    c.get("/api/v1/export").assert_error(400, "bad_data");
    c.get_query("/api/v1/series", &[("match[]", "up{")])
        .assert_error(400, "bad_data");
    c.get("/api/v1/nope").assert_error(404, "not_found");
}

#[test]
fn delete_series_removes_from_every_api_and_survives_restart() {
    let mut srv = Server::start();
    let c = srv.client();
    let t0 = base();
    c.write(&[
        series(
            &[("__name__", "up"), ("job", "a"), ("only_a", "yes")],
            &[(t0, 1.0), (t0 + 1000, 2.0)],
        ),
        series(&[("__name__", "up"), ("job", "b")], &[(t0, 3.0)]),
        series(&[("__name__", "gone"), ("job", "a")], &[(t0, 4.0)]),
    ]);
    let r = c.post_form(
        "/api/v1/admin/tsdb/delete_series",
        &[("match[]", r#"up{job="a"}"#), ("match[]", "gone")],
    );
    assert_eq!(r.status, 204, "{}", r.body);
    let check = |c: &Client, when: &str| {
        assert_eq!(
            c.series(&[r#"{__name__=~".+"}"#]),
            vec![lmap(&[("__name__", "up"), ("job", "b")])],
            "{when}"
        );
        assert_eq!(c.labels(&[]), ["__name__", "job"], "{when}");
        assert_eq!(c.label_values("job", &[]), ["b"], "{when}");
        assert_eq!(c.label_values("__name__", &[]), ["up"], "{when}");
        assert!(c.label_values("only_a", &[]).is_empty(), "{when}");
        let exp = c.export(&[r#"{__name__=~".+"}"#], None);
        assert_eq!(exp.len(), 1, "{when}: {exp:?}");
        assert_samples_eq(&exp[0].samples, &[(t0, 3.0)], when);
    };
    check(&c, "after delete");
    srv.kill9();
    srv.restart();
    check(&srv.client(), "after kill -9 and restart");
    let status = srv.terminate(Duration::from_secs(30));
    assert!(status.success(), "{status}");
    srv.restart();
    check(&srv.client(), "after SIGTERM and restart");
    // Writing the deleted series again brings it back with only new samples.
    let c = srv.client();
    c.write(&[series(&[("__name__", "gone"), ("job", "a")], &[(t0 + 5000, 5.0)])]);
    let exp = c.export(&["gone"], None);
    assert_eq!(exp.len(), 1);
    assert_samples_eq(&exp[0].samples, &[(t0 + 5000, 5.0)], "rewritten");
}

#[test]
fn metrics_count_ingested_samples() {
    let srv = Server::start();
    let c = srv.client();
    assert_eq!(c.metric("cairn_storage_samples_ingested_total"), Some(0.0));
    let t0 = base();
    let mut total = 0;
    for round in 0..5i64 {
        let batch: Vec<_> = (0..10)
            .map(|i| {
                let samples: Vec<(i64, f64)> = (0..=round).map(|k| (t0 + round * 1000 + k, i as f64)).collect();
                total += samples.len();
                series(&[("__name__", "m"), ("i", &i.to_string())], &samples)
            })
            .collect();
        c.write(&batch);
    }
    assert_eq!(total, 150);
    assert_eq!(c.metric("cairn_storage_samples_ingested_total"), Some(total as f64));
    // Refused requests do not count.
    let r = c.post_write(b"garbage".to_vec(), Some("identity"));
    assert_eq!(r.status, 400);
    assert_eq!(c.metric("cairn_storage_samples_ingested_total"), Some(total as f64));
    let m = c.get("/metrics");
    assert!(
        m.body.contains("# TYPE cairn_storage_samples_ingested_total counter"),
        "{}",
        m.body
    );
    assert_eq!(c.metric("cairn_storage_series_created_total"), Some(10.0), "{}", m.body);
}

#[test]
fn graceful_restart_keeps_all_data() {
    let mut srv = Server::start();
    let c = srv.client();
    let t0 = base();
    for b in 0..10i64 {
        let batch: Vec<_> = (0..100)
            .map(|i| {
                let samples: Vec<(i64, f64)> = (0..10)
                    .map(|k| {
                        let t = t0 + (b * 10 + k) * 1000;
                        (t, (i * 7919 + t) as f64 / 8.0)
                    })
                    .collect();
                series(
                    &[("__name__", "restart_test"), ("series", &format!("s{i:03}"))],
                    &samples,
                )
            })
            .collect();
        c.write(&batch);
    }
    c.write(&[series(
        &[("__name__", "stale_one")],
        &[(t0, 1.0), (t0 + 1, stale_nan())],
    )]);
    let before = c.export(&[r#"{__name__=~".+"}"#], None);
    assert_eq!(before.len(), 101);
    assert!(
        before
            .iter()
            .all(|e| e.samples.len() == 100 || e.labels["__name__"] == "stale_one")
    );

    let status = srv.terminate(Duration::from_secs(60));
    assert!(status.success(), "exit status {status}; log:\n{}", srv.log());
    assert!(srv.log().contains("flushing storage"), "log:\n{}", srv.log());
    srv.restart();
    let c = srv.client();
    let after = c.export(&[r#"{__name__=~".+"}"#], None);
    assert_eq!(before.len(), after.len());
    for (b, a) in before.iter().zip(&after) {
        assert_eq!(b.labels, a.labels);
        assert_eq!(b.samples, a.samples, "{:?}", b.labels);
    }
    // The flushed data is in parts on disk, listed in Prometheus' block shape.
    let blocks = c.get("/api/v1/status/tsdb/blocks").json();
    let blocks = blocks["data"]["blocks"].as_array().expect("blocks").clone();
    assert!(!blocks.is_empty());
    let samples: u64 = blocks.iter().map(|b| b["stats"]["numSamples"].as_u64().unwrap()).sum();
    assert_eq!(samples, 100 * 100 + 2);
    for b in &blocks {
        let name = b["ulid"].as_str().unwrap();
        assert!(srv.data_dir.join(name).is_file(), "{name} is a part file");
        assert_eq!(b["inMemory"], false);
        assert!(
            b["minTime"].as_i64().unwrap() >= t0 && b["maxTime"].as_i64().unwrap() > b["minTime"].as_i64().unwrap()
        );
        assert!(b["stats"]["numSeries"].as_u64().unwrap() >= 1);
        assert!(b["stats"]["numChunks"].as_u64().unwrap() >= b["stats"]["numSeries"].as_u64().unwrap());
    }
    // And again, after more writes, with a kill -9 this time.
    c.write(&[series(&[("__name__", "stale_one")], &[(t0 + 2, 7.0)])]);
    srv.kill9();
    srv.restart();
    // The last write was replayed from the log, whose segments the status
    // reports, the last one replayed being the current.
    let replay = srv.client().get("/api/v1/status/walreplay").json();
    let (min, max) = (
        replay["data"]["min"].as_u64().unwrap(),
        replay["data"]["max"].as_u64().unwrap(),
    );
    assert!(min >= 1 && max >= min, "{replay}");
    assert_eq!(replay["data"]["current"].as_u64(), Some(max), "{replay}");
    let exp = srv.client().export(&["stale_one"], None);
    assert_samples_eq(
        &exp[0].samples,
        &[(t0, 1.0), (t0 + 1, stale_nan()), (t0 + 2, 7.0)],
        "stale_one",
    );
}

#[test]
fn backfill_of_old_samples_is_accepted_and_readable() {
    let mut srv = Server::start();
    let c = srv.client();
    let now = now_ms() / 1000 * 1000;
    let ages = [3 * DAY, 10 * DAY, 29 * DAY, DAY + 5 * MIN];
    let samples: Vec<(i64, f64)> = {
        let mut v: Vec<(i64, f64)> = ages.iter().map(|a| (now - a, (a / MIN) as f64)).collect();
        v.sort_by_key(|s| s.0);
        v
    };
    // Sent newest first, one request per sample, to another series in one go.
    for &(t, v) in samples.iter().rev() {
        c.write(&[series(&[("__name__", "backfill"), ("job", "one")], &[(t, v)])]);
    }
    c.write(&[series(&[("__name__", "backfill"), ("job", "bulk")], &samples)]);
    let check = |c: &Client, when: &str| {
        let exp = c.export(&["backfill"], None);
        assert_eq!(exp.len(), 2, "{when}: {exp:?}");
        for e in &exp {
            assert_samples_eq(&e.samples, &samples, &format!("{when} {:?}", e.labels));
        }
        // Range reads over old days.
        let exp = c.export(&[r#"backfill{job="bulk"}"#], Some((now - 11 * DAY, now - 2 * DAY)));
        assert_samples_eq(&exp[0].samples, &[samples[1], samples[2]], when);
        assert_eq!(c.series(&["backfill"]).len(), 2, "{when}");
    };
    check(&c, "before restart");
    // Out of retention (default 31d): acknowledged but dropped.
    c.write(&[series(&[("__name__", "ancient")], &[(now - 40 * DAY, 1.0)])]);
    assert!(c.export(&["ancient"], None).is_empty());
    srv.kill9();
    srv.restart();
    check(&srv.client(), "after kill -9");
    let status = srv.terminate(Duration::from_secs(60));
    assert!(status.success());
    srv.restart();
    check(&srv.client(), "after SIGTERM");
}

/// Deeply nested queries: up to the depth limit they are answered, past it
/// refused with 400; the server never overflows its stack (Prometheus has
/// no limit, but a query past it is no dashboard's).
#[test]
fn deep_queries_are_answered_or_refused_never_fatal() {
    let srv = Server::start();
    let c = srv.client();
    let n = 990;
    let nested = |open: &str, inner: &str, close: &str| format!("{}{inner}{}", open.repeat(n), close.repeat(n));
    for query in [
        nested("(", "1", ")"),
        nested("abs(", "vector(1)", ")"),
        nested("sum(", "vector(1)", ")"),
        vec!["1"; n].join("+"),
        "-".repeat(n) + "1",
    ] {
        for path in ["/api/v1/query", "/api/v1/query_range"] {
            let r = c.post_form(
                path,
                &[("query", &query), ("start", "0"), ("end", "600"), ("step", "60")],
            );
            assert_eq!(r.status, 200, "{path} {}…: {}", &query[..20], r.body);
        }
    }
    for query in [
        nested("(", "1", ")").repeat(6),
        vec!["1"; 5000].join("+"),
        "(".repeat(100_000),
    ] {
        let r = c.post_form("/api/v1/query", &[("query", &query)]);
        assert_eq!(r.status, 400, "{}…: {}", &query[..20], r.body);
    }
    // Still serving.
    assert_eq!(c.post_form("/api/v1/query", &[("query", "1")]).status, 200);
}

/// A dashboard refreshing a sliding window: the second query reuses the
/// settled steps of the first, with the same answer as `nocache=1`, until
/// a backfill or a delete changes settled data.
#[test]
fn range_queries_reuse_settled_steps_until_a_backfill_or_delete() {
    let srv = Server::start();
    let c = srv.client();
    let now = now_ms() / MIN * MIN;
    let t0 = now - 3 * 60 * MIN;
    c.write(&two_request_counters(t0, now));
    let range = |query: &str, start: i64, nocache: bool| {
        let (start, end) = (ms_to_param(start), ms_to_param(start + 2 * 60 * MIN));
        let mut params = vec![("query", query), ("start", &start), ("end", &end), ("step", "60")];
        if nocache {
            params.push(("nocache", "1"));
        }
        let r = c.get_query("/api/v1/query_range", &params);
        assert_eq!(r.status, 200, "{query}: {}", r.body);
        r.body
    };
    let hits = || c.metric("cairn_results_cache_hits_total").unwrap_or(0.0);
    let invalidations = || c.metric("cairn_results_cache_invalidations_total").unwrap_or(0.0);
    let queries = ["sum by (job) (rate(requests_total[5m]))", "requests_total offset -1m"];
    let start = t0 + 30 * MIN;
    for query in queries {
        let first = range(query, start, false);
        assert_eq!(first, range(query, start, true), "{query}");
        let before = hits();
        for refresh in 1..=3 {
            let moved = range(query, start + refresh * MIN, false);
            assert_eq!(
                moved,
                range(query, start + refresh * MIN, true),
                "{query}, refresh {refresh}"
            );
        }
        assert_eq!(hits(), before + 3.0, "{query}");
    }

    // A backfilled sample among the kept steps: the next answer has it.
    let (hits_before, invalidations_before) = (hits(), invalidations());
    c.write(&[series(
        &[("__name__", "requests_total"), ("job", "c")],
        &[(t0 + 60 * MIN, 1.0), (t0 + 61 * MIN, 100.0)],
    )]);
    let query = queries[0];
    let answer = range(query, start + 3 * MIN, false);
    assert_eq!(answer, range(query, start + 3 * MIN, true));
    assert!(answer.contains(r#""job":"c""#), "{answer}");
    assert_eq!((hits(), invalidations()), (hits_before, invalidations_before + 1.0));

    let r = c.post_form("/api/v1/admin/tsdb/delete_series", &[("match[]", r#"{job="b"}"#)]);
    assert_eq!(r.status, 204, "{}", r.body);
    let answer = range(query, start + 3 * MIN, false);
    assert_eq!(answer, range(query, start + 3 * MIN, true));
    assert!(!answer.contains(r#""job":"b""#), "{answer}");
    assert_eq!(invalidations(), invalidations_before + 2.0);
}
