//! Tenants through the real binary: `X-Scope-OrgID` on every write and read
//! endpoint, no request of one tenant seeing another's data, federated
//! reads (`a|b`), and tenants that survive a restart.

use std::collections::BTreeSet;
use std::time::Duration;

use crate::common::{Client, Server, ms_to_param, series};
use serde_json::Value;

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

/// Writes, through `client`, `up{job=<job>}` and a metric named after the tenant.
fn write_tenant(client: &Client, tenant: &str, t: i64) {
    let samples: Vec<(i64, f64)> = (0..10).map(|k| (t - 10_000 * (10 - k), k as f64)).collect();
    client.write(&[
        series(&[("__name__", "up"), ("job", tenant)], &samples),
        series(&[("__name__", &format!("only_{tenant}")), ("job", tenant)], &samples),
    ]);
}

/// The `job` values of a query's result.
fn jobs(resp: &crate::common::Resp) -> BTreeSet<String> {
    assert_eq!(resp.status, 200, "{}", resp.body);
    resp.json()["data"]["result"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["metric"]["job"].as_str().unwrap_or_default().to_string())
        .collect()
}

fn set(items: &[&str]) -> BTreeSet<String> {
    items.iter().map(|s| s.to_string()).collect()
}

#[test]
fn no_endpoint_of_one_tenant_sees_another_tenants_data() {
    let mut server = Server::start();
    let t = now();
    let time = ms_to_param(t);
    let clients: Vec<(&str, Client)> = vec![
        ("anonymous", server.client()),
        ("team-a", Client::for_tenant(server.url(), "team-a")),
        ("team-b", Client::for_tenant(server.url(), "team-b")),
    ];
    for (tenant, client) in &clients {
        write_tenant(client, tenant, t);
    }
    // Other write paths name their tenant the same way.
    let import = clients[1]
        .1
        .http
        .post(format!("{}/api/v1/import", server.url()))
        .body(format!(
            r#"{{"metric":{{"__name__":"imported","job":"team-a"}},"values":[1],"timestamps":[{t}]}}"#
        ))
        .send()
        .unwrap();
    assert_eq!(import.status().as_u16(), 204);

    for (tenant, client) in &clients {
        let others: Vec<&str> = clients.iter().map(|(t, _)| *t).filter(|t| t != tenant).collect();
        let instant = client.get_query("/api/v1/query", &[("query", "up"), ("time", &time)]);
        assert_eq!(jobs(&instant), set(&[tenant]), "{tenant}: instant query");
        let range = client.get_query(
            "/api/v1/query_range",
            &[
                ("query", "sum by (job) (up)"),
                ("start", &ms_to_param(t - 60_000)),
                ("end", &time),
                ("step", "15"),
            ],
        );
        assert_eq!(jobs(&range), set(&[tenant]), "{tenant}: range query");
        for other in &others {
            let theirs = client.get_query("/api/v1/query", &[("query", &format!("only_{other}")), ("time", &time)]);
            assert!(jobs(&theirs).is_empty(), "{tenant} sees only_{other}");
        }
        let names: BTreeSet<String> = client
            .series(&[r#"{__name__=~".+"}"#])
            .into_iter()
            .map(|s| s["__name__"].clone())
            .collect();
        let mut want = set(&["up", &format!("only_{tenant}")]);
        if *tenant == "team-a" {
            want.insert("imported".into());
        }
        assert_eq!(names, want, "{tenant}: series");
        assert_eq!(
            client.label_values("job", &[]),
            vec![tenant.to_string()],
            "{tenant}: label values"
        );
        let labels = client.labels(&[]);
        assert_eq!(labels, ["__name__", "job"], "{tenant}: label names");
        let exported: BTreeSet<String> = client
            .export(&[r#"{__name__=~".+"}"#], None)
            .into_iter()
            .map(|e| e.labels["job"].clone())
            .collect();
        assert_eq!(exported, set(&[tenant]), "{tenant}: export");
        let federated = client.get_query("/federate", &[("match[]", "up")]);
        assert_eq!(federated.status, 200);
        assert!(
            federated.body.contains(&format!("job=\"{tenant}\"")),
            "{}",
            federated.body
        );
        for other in &others {
            assert!(
                !federated.body.contains(&format!("job=\"{other}\"")),
                "{tenant} federates {other}"
            );
        }
        let status = client.get("/api/v1/status/tsdb");
        assert_eq!(status.status, 200, "{}", status.body);
        let metrics: BTreeSet<String> = status.json()["data"]["seriesCountByMetricName"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["name"].as_str().unwrap().to_string())
            .collect();
        assert!(metrics.contains(&format!("only_{tenant}")), "{tenant}: {metrics:?}");
        assert!(
            others.iter().all(|o| !metrics.contains(&format!("only_{o}"))),
            "{tenant}: {metrics:?}"
        );
    }

    // A delete acts for its tenant only.
    let deleted = clients[1]
        .1
        .post_form("/api/v1/admin/tsdb/delete_series", &[("match[]", "up")]);
    assert_eq!(deleted.status, 204, "{}", deleted.body);
    for (tenant, client) in &clients {
        let up = client.get_query("/api/v1/query", &[("query", "up"), ("time", &time)]);
        let want = if *tenant == "team-a" { set(&[]) } else { set(&[tenant]) };
        assert_eq!(jobs(&up), want, "{tenant} after team-a's delete");
    }

    // Tenants are kept across a restart.
    assert!(server.terminate(Duration::from_secs(30)).success());
    server.restart();
    let b = Client::for_tenant(server.url(), "team-b");
    assert_eq!(
        jobs(&b.get_query("/api/v1/query", &[("query", "up"), ("time", &time)])),
        set(&["team-b"])
    );
    let metrics = server.client().get("/metrics").body;
    assert!(
        metrics.contains(r#"cairn_tenant_active_series{tenant="team-b"} 2"#),
        "{metrics}"
    );
}

#[test]
fn a_federated_read_answers_several_tenants_labelled_with_their_ids() {
    let server = Server::start();
    let t = now();
    let time = ms_to_param(t);
    for tenant in ["a", "b", "c"] {
        write_tenant(&Client::for_tenant(server.url(), tenant), tenant, t);
    }
    let fed = Client::for_tenant(server.url(), "a|b");
    let r = fed.get_query(
        "/api/v1/query",
        &[("query", "sum by (__tenant_id__) (up)"), ("time", &time)],
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let tenants: BTreeSet<String> = r.json()["data"]["result"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["metric"]["__tenant_id__"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(tenants, set(&["a", "b"]));
    let only_b = fed.get_query(
        "/api/v1/query",
        &[("query", r#"up{__tenant_id__="b"}"#), ("time", &time)],
    );
    assert_eq!(jobs(&only_b), set(&["b"]));
    assert_eq!(fed.label_values("__tenant_id__", &[]), ["a", "b"]);
    // Writes and deletes act for one tenant.
    let refused = fed.try_write(&[series(&[("__name__", "x")], &[(t, 1.0)])]).unwrap();
    assert_eq!(refused.status, 400, "{}", refused.body);
    let refused = fed.post_form("/api/v1/admin/tsdb/delete_series", &[("match[]", "up")]);
    assert_eq!(refused.status, 400, "{}", refused.body);
}

#[test]
fn a_malformed_tenant_header_is_refused_in_the_prometheus_envelope() {
    let server = Server::start();
    for bad in ["a/b", "..", "a||b"] {
        let client = Client::for_tenant(server.url(), bad);
        let r = client.get_query("/api/v1/query", &[("query", "up")]);
        r.assert_error(400, "bad_data");
        let v: Value = r.json();
        assert!(v["error"].as_str().unwrap().contains("tenant"), "{v}");
        let w = client
            .try_write(&[series(&[("__name__", "x")], &[(now(), 1.0)])])
            .unwrap();
        assert_eq!(w.status, 400, "{}", w.body);
    }
}

fn write_status(client: &Client, series_list: &[cairn_protocols::SeriesSamples]) -> (u16, String) {
    let r = client.try_write(series_list).expect("write");
    (r.status, r.body)
}

#[test]
fn each_tenant_is_held_to_its_limits_and_a_changed_file_is_reloaded() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("limits.yaml");
    let limits = |small_series: u64| {
        format!(
            "defaults:\n  max_query_series: 0\n\
             tenants:\n  small:\n    max_active_series: {small_series}\n    ingestion_rate: 100\n    ingestion_burst: 100\n\
             \x20 narrow:\n    max_query_series: 1\n\
             \x20 short:\n    retention: 1d\n"
        )
    };
    std::fs::write(&file, limits(3)).unwrap();
    let server = Server::start_with(&["--tenants.limits-file", file.to_str().unwrap()]);
    let t = now();
    let one = |name: &str| series(&[("__name__", name)], &[(t, 1.0)]);

    // Series: 3 of 5 new series are stored, and the answer says which limit.
    let small = Client::for_tenant(server.url(), "small");
    let batch: Vec<_> = (0..5).map(|i| one(&format!("m{i}"))).collect();
    let (status, body) = write_status(&small, &batch);
    assert_eq!(status, 429, "{body}");
    assert!(
        body.contains("max_active_series") && body.contains("too_many_requests"),
        "{body}"
    );
    let stored = small.get_query(
        "/api/v1/query",
        &[("query", r#"count({__name__=~"m.+"})"#), ("time", &ms_to_param(t))],
    );
    assert_eq!(stored.json()["data"]["result"][0]["value"][1], "3", "{}", stored.body);
    // Existing series go on.
    assert_eq!(write_status(&small, &batch[..3]).0, 204);

    // Rate: 100 samples a second, 100 at once.
    let burst: Vec<(i64, f64)> = (0..150).map(|k| (t - k * 1000, k as f64)).collect();
    let (status, body) = write_status(&small, &[series(&[("__name__", "m0")], &burst)]);
    assert_eq!(status, 429, "{body}");
    assert!(body.contains("ingestion rate"), "{body}");

    // Query series.
    let narrow = Client::for_tenant(server.url(), "narrow");
    narrow.write(&[one("a"), one("b")]);
    let r = narrow.get_query(
        "/api/v1/query",
        &[("query", r#"{__name__=~"a|b"}"#), ("time", &ms_to_param(t))],
    );
    r.assert_error(422, "execution");
    let r = narrow.get_query("/api/v1/query", &[("query", "a"), ("time", &ms_to_param(t))]);
    assert_eq!(r.status, 200, "{}", r.body);

    // Retention: the short tenant keeps a day, the default tenant 31.
    let old = t - 3 * 86_400_000;
    for client in [Client::for_tenant(server.url(), "short"), server.client()] {
        client.write(&[series(&[("__name__", "old")], &[(old, 1.0)])]);
    }
    let kept = |client: &Client| client.export(&["old"], Some((old - 1000, old + 1000))).len();
    assert_eq!(kept(&Client::for_tenant(server.url(), "short")), 0);
    assert_eq!(kept(&server.client()), 1);

    let metrics = server.client().get("/metrics").body;
    for limit in ["max_active_series", "ingestion_rate"] {
        let line = format!("cairn_tenant_limit_refusals_total{{tenant=\"small\",limit=\"{limit}\"}} 1");
        assert!(metrics.contains(&line), "{line} in {metrics}");
    }

    // A bad edit is refused and the limits stay; a good one takes over.
    std::fs::write(&file, "tenants:\n  small:\n    max_series: 10\n").unwrap();
    std::thread::sleep(Duration::from_secs(12));
    assert_eq!(write_status(&small, &[one("m7")]).0, 429);
    std::fs::write(&file, limits(10)).unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        std::thread::sleep(Duration::from_millis(500));
        let (status, body) = write_status(&small, &[one("m8")]);
        if status == 204 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the new limit never took over: {body}"
        );
    }
}

#[test]
fn a_write_may_not_create_tenants_beyond_the_bound() {
    let server = Server::start_with(&["--tenants.max", "2"]);
    let one = [series(&[("__name__", "x")], &[(now(), 1.0)])];
    assert_eq!(
        Client::for_tenant(server.url(), "a").try_write(&one).unwrap().status,
        204
    );
    let refused = Client::for_tenant(server.url(), "b").try_write(&one).unwrap();
    assert_eq!(refused.status, 422, "{}", refused.body);
    assert!(refused.body.contains("--tenants.max"), "{}", refused.body);
    // Tenants that exist go on.
    assert_eq!(
        Client::for_tenant(server.url(), "a").try_write(&one).unwrap().status,
        204
    );
    server.client().write(&one);
}
