//! A cluster doing Prometheus' job: three `cairn` nodes (etcd, RF 3) started
//! from one `prometheus.yml` share its scrape targets and rule groups, each
//! done by one node at a time, and a node killed with -9 has its share taken
//! over by the others within about one interval, alert state included. The
//! targets count the scrapes they get; a real Alertmanager (Debian's) takes
//! the alerts and tells a webhook.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::common::etcd::Etcd;
use crate::common::exposition_target::ExpositionTarget;
use crate::common::netns::Bridge;
use crate::common::peers::{Alertmanager, require};
use crate::common::three_nodes::ThreeNodes;
use crate::common::{Server, http_client, now_ms};
use crate::rules::{files, webhook};
use serde_json::Value;

const TARGETS: usize = 9;
const GROUPS: usize = 6;
const INTERVAL_MS: i64 = 4_000;

/// Targets on loopback ports, each serving one gauge (and `cm_transient`
/// while `transient` holds) and noting when it was scraped.
struct Targets {
    targets: Vec<ExpositionTarget>,
    transient: Arc<AtomicBool>,
}

impl Targets {
    fn start() -> Self {
        Self::start_on("127.0.0.1")
    }

    /// [`Self::start`] on `host`.
    fn start_on(host: &str) -> Self {
        let transient = Arc::new(AtomicBool::new(true));
        let targets = (0..TARGETS)
            .map(|i| {
                let transient = transient.clone();
                ExpositionTarget::start(host, move |_| {
                    let mut body = format!("# TYPE cm_value gauge\ncm_value {}\n", i + 1);
                    if transient.load(Ordering::SeqCst) {
                        body.push_str("cm_transient 1\n");
                    }
                    body
                })
            })
            .collect();
        Self { targets, transient }
    }

    /// When target `i` was scraped, from `since` on.
    fn scrapes_since(&self, i: usize, since: i64) -> Vec<i64> {
        self.targets[i].answered().into_iter().filter(|&t| t >= since).collect()
    }
}

fn prometheus_yml(targets: &Targets, rules: &std::path::Path, alertmanagers: &[String]) -> String {
    let targets: Vec<String> = targets.targets.iter().map(|t| format!("'{}'", t.addr)).collect();
    let alertmanagers: Vec<String> = alertmanagers.iter().map(|a| format!("'{a}'")).collect();
    format!(
        "global:\n  scrape_interval: {INTERVAL_MS}ms\n  evaluation_interval: {INTERVAL_MS}ms\n\
         rule_files: ['{}']\n\
         alerting:\n  alertmanagers:\n    - static_configs:\n        - targets: [{}]\n\
         scrape_configs:\n  - job_name: cm\n    static_configs:\n      - targets: [{}]\n",
        rules.display(),
        alertmanagers.join(", "),
        targets.join(", ")
    )
}

/// Groups of one recording rule and one alert each; the alerts fire after
/// `for` and stay firing.
fn rules_yml() -> String {
    let mut y = String::from("groups:\n");
    for g in 0..GROUPS {
        y.push_str(&format!(
            "  - name: g{g}\n    rules:\n      - record: cm:g{g}:sum\n        expr: sum(cm_value)\n      \
             - alert: CmAlert{g}\n        expr: sum(cm_value) > {g}\n        for: 6s\n        \
             labels:\n          group: g{g}\n"
        ));
    }
    y
}

/// A GET of the API's `path`, as a peer would ask it (this node's own part
/// only) when `local`.
fn api(node: &Server, path: &str, local: bool) -> Value {
    let mut request = http_client(Duration::from_secs(10)).get(format!("{}{path}", node.url()));
    if local {
        request = request.header("x-cairn-peer-request", "1");
    }
    let body: Value = request.send().expect("api request").json().expect("api json");
    assert_eq!(body["status"], "success", "{path}: {body}");
    body["data"].clone()
}

/// The scrape URLs node `node` scrapes itself.
fn own_targets(node: &Server) -> BTreeSet<String> {
    api(node, "/api/v1/targets?state=active", true)["activeTargets"]
        .as_array()
        .expect("activeTargets")
        .iter()
        .map(|t| t["scrapeUrl"].as_str().expect("scrapeUrl").to_string())
        .collect()
}

/// The rule groups node `node` evaluates itself.
fn own_groups(node: &Server) -> BTreeSet<String> {
    api(node, "/api/v1/rules", true)["groups"]
        .as_array()
        .expect("groups")
        .iter()
        .map(|g| g["name"].as_str().expect("name").to_string())
        .collect()
}

/// `ALERTS_FOR_STATE` by alert name (the time each alert became active), as `node` reads it.
fn for_states(node: &Server) -> BTreeMap<String, f64> {
    let data = api(node, "/api/v1/query?query=ALERTS_FOR_STATE", false);
    data["result"]
        .as_array()
        .expect("result")
        .iter()
        .map(|s| {
            let name = s["metric"]["alertname"].as_str().expect("alertname").to_string();
            let v: f64 = s["value"][1].as_str().expect("value").parse().expect("number");
            (name, v)
        })
        .collect()
}

/// Checks that `node` lists every target, group and alert of the cluster,
/// and pages the groups of all nodes together.
fn assert_cluster_wide_lists(node: &Server) {
    let targets = api(node, "/api/v1/targets", false);
    let active = targets["activeTargets"].as_array().expect("activeTargets");
    assert_eq!(active.len(), TARGETS, "{targets}");
    assert!(active.iter().all(|t| t["health"] == "up"), "{targets}");
    let rules = api(node, "/api/v1/rules", false);
    let names: Vec<&str> = rules["groups"]
        .as_array()
        .expect("groups")
        .iter()
        .map(|g| g["name"].as_str().expect("name"))
        .collect();
    let want: Vec<String> = (0..GROUPS).map(|g| format!("g{g}")).collect();
    assert_eq!(names, want, "every group, in order");
    let alerts = api(node, "/api/v1/alerts", false);
    assert_eq!(alerts["alerts"].as_array().expect("alerts").len(), GROUPS, "{alerts}");
    let page1 = api(node, "/api/v1/rules?group_limit=4", false);
    assert_eq!(page1["groups"].as_array().expect("groups").len(), 4);
    let token = page1["groupNextToken"].as_str().expect("a next page");
    let page2 = api(
        node,
        &format!("/api/v1/rules?group_limit=4&group_next_token={token}"),
        false,
    );
    let rest: Vec<&str> = page2["groups"]
        .as_array()
        .expect("groups")
        .iter()
        .map(|g| g["name"].as_str().expect("name"))
        .collect();
    assert_eq!(rest, ["g4", "g5"]);
}

/// Checks that every target was scraped once per interval since `since`:
/// never twice in one interval, and never more than `max_gap` apart.
fn assert_scraped_once_per_interval(targets: &Targets, since: i64, max_gap: i64, what: &str) {
    let mut widest = 0;
    for i in 0..TARGETS {
        let times = targets.scrapes_since(i, since);
        assert!(times.len() >= 2, "{what}: target {i} scraped {} times", times.len());
        widest = times.windows(2).map(|p| p[1] - p[0]).max().unwrap_or(0).max(widest);
        for pair in times.windows(2) {
            let gap = pair[1] - pair[0];
            assert!(
                gap >= INTERVAL_MS / 2,
                "{what}: target {i} scraped twice within {gap} ms ({times:?})"
            );
            assert!(
                gap <= max_gap,
                "{what}: target {i} not scraped for {gap} ms ({times:?})"
            );
        }
    }
    println!("{what}: every target scraped once per interval, at most {widest} ms apart");
}

/// Checks that `up` of every target is 1 and its samples since `since` are
/// at most two intervals apart: a move misses at most one scrape.
fn assert_up_missed_at_most_one_scrape(node: &Server, since: i64) {
    let window_s = (now_ms() - since) / 1000;
    let up = api(node, &format!("/api/v1/query?query=up[{window_s}s]"), false);
    let series = up["result"].as_array().expect("result");
    assert_eq!(series.len(), TARGETS, "{up}");
    for s in series {
        let times: Vec<f64> = s["values"]
            .as_array()
            .expect("values")
            .iter()
            .map(|v| {
                assert_eq!(v[1], "1", "{s}");
                v[0].as_f64().expect("time")
            })
            .collect();
        let widest = times.windows(2).map(|p| p[1] - p[0]).fold(0.0, f64::max);
        assert!(
            widest <= (2 * INTERVAL_MS + INTERVAL_MS / 10) as f64 / 1000.0,
            "up of {} missed more than one scrape ({widest} s apart)",
            s["metric"]["instance"]
        );
    }
}

/// Waits until `check` holds, for at most `timeout`.
fn wait_until(timeout: Duration, what: &str, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    while !check() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn a_cluster_scrapes_each_target_once_and_fires_each_alert_once_through_a_kill() {
    let Some(am_bin) = require("prometheus-alertmanager", "prometheus-alertmanager") else {
        return;
    };
    let hook = webhook::Webhook::start();
    let am = Alertmanager::start(&am_bin, &files::alertmanager_yml(&hook.url));
    // Beside the real Alertmanager, every node's alerts as sent: the real
    // one merges an alert sent by two nodes.
    let sent = webhook::Webhook::start();
    let targets = Targets::start();
    let dir = tempfile::tempdir().expect("tempdir");
    let rules = dir.path().join("rules.yml");
    std::fs::write(&rules, rules_yml()).expect("rules");
    let config = dir.path().join("prometheus.yml");
    std::fs::write(
        &config,
        prometheus_yml(&targets, &rules, &[format!("127.0.0.1:{}", am.port), sent.addr.clone()]),
    )
    .expect("config");

    // A moved alert fires on at once though its `for` is shorter than the
    // (default) grace period: a move is not an outage. Every evaluation of
    // a firing alert sends it, so the sends show who evaluates each group.
    let Some(mut cluster) = ThreeNodes::monitoring(&config, &["--rules.alert.resend-delay", "1s"]) else {
        return;
    };
    let nodes = &mut cluster.nodes;

    // Every target and group has one node once the three see each other,
    // the same in two looks a second apart (a node may still be giving its
    // work up). Targets hash by their random ports, so a node may own none.
    let mut last_shares = Vec::new();
    wait_until(Duration::from_secs(30), "the work to be shared by three nodes", || {
        std::thread::sleep(Duration::from_millis(800));
        let shares: Vec<_> = nodes.iter().map(|n| (own_targets(n), own_groups(n))).collect();
        let targets: usize = shares.iter().map(|(t, _)| t.len()).sum();
        let groups: usize = shares.iter().map(|(_, g)| g.len()).sum();
        let settled = targets == TARGETS && groups == GROUPS && shares == last_shares;
        last_shares = shares;
        settled
    });
    let shared_since = now_ms();
    let all_groups: BTreeSet<String> = nodes.iter().flat_map(own_groups).collect();
    assert_eq!(all_groups.len(), GROUPS, "each group on one node");
    let all_targets: BTreeSet<String> = nodes.iter().flat_map(own_targets).collect();
    assert_eq!(all_targets.len(), TARGETS, "each target on one node");

    // Every alert fires (its `for` passed), once.
    wait_until(Duration::from_secs(40), "every alert to fire", || {
        let firing = for_states(&nodes[0]).len();
        let am_alerts: Vec<Value> = http_client(Duration::from_secs(5))
            .get(format!("{}/api/v2/alerts", am.url()))
            .send()
            .and_then(|r| r.json())
            .unwrap_or_default();
        firing == GROUPS && am_alerts.len() == GROUPS
    });
    assert_scraped_once_per_interval(&targets, shared_since, INTERVAL_MS * 3 / 2, "three nodes");
    for node in nodes.iter() {
        assert_cluster_wide_lists(node);
    }
    // Each recording rule was evaluated by one node: one sample per interval.
    let window_s = 3 * INTERVAL_MS / 1000;
    for g in 0..GROUPS {
        let q = format!("/api/v1/query?query=count_over_time(cm:g{g}:sum[{window_s}s])");
        let n: f64 = api(&nodes[0], &q, false)["result"][0]["value"][1]
            .as_str()
            .expect("count")
            .parse()
            .expect("number");
        assert!(n <= 3.0, "group g{g} wrote {n} samples in three intervals");
    }

    // Kill the node with the most work, of those with targets and groups
    // if any has both; the others take it over.
    let victim = (0..3)
        .max_by_key(|&i| {
            let (t, g) = (own_targets(&nodes[i]).len(), own_groups(&nodes[i]).len());
            (t > 0 && g > 0, t + g)
        })
        .expect("a node");
    let moved_targets = own_targets(&nodes[victim]);
    let moved_groups = own_groups(&nodes[victim]);
    let states_before = for_states(&nodes[(victim + 1) % 3]);
    println!(
        "killing node {victim}: it scrapes {} targets and evaluates groups {moved_groups:?}",
        moved_targets.len()
    );
    nodes[victim].kill9();
    let killed_at = now_ms();
    // Every target stops exposing `cm_transient` as its node dies.
    targets.transient.store(false, Ordering::SeqCst);
    let survivors: Vec<usize> = (0..3).filter(|&i| i != victim).collect();
    wait_until(Duration::from_secs(20), "the survivors to take the work over", || {
        let targets: usize = survivors.iter().map(|&i| own_targets(&nodes[i]).len()).sum();
        let groups: usize = survivors.iter().map(|&i| own_groups(&nodes[i]).len()).sum();
        targets == TARGETS && groups == GROUPS
    });
    // Three intervals more, with two moved groups evaluating (and restoring).
    std::thread::sleep(Duration::from_millis(3 * INTERVAL_MS as u64));
    // A target of the victim misses at most the scrape during the detection
    // of its death (the lease's 2 s and a ring refresh).
    let max_gap = 2 * INTERVAL_MS + 1_000;
    assert_scraped_once_per_interval(&targets, shared_since, max_gap, "through the kill");
    assert_up_missed_at_most_one_scrape(&nodes[survivors[0]], shared_since);
    // The moved targets' `cm_transient` went stale at their new node's first
    // scrape, as the others' did at their own node's: none is left.
    let transient = api(&nodes[survivors[0]], "/api/v1/query?query=cm_transient", false);
    assert_eq!(
        transient["result"].as_array().map(Vec::len),
        Some(0),
        "series gone across a move are marked stale: {transient}"
    );
    assert_cluster_wide_lists(&nodes[survivors[0]]);
    let states_after = for_states(&nodes[survivors[0]]);
    assert_eq!(
        states_after, states_before,
        "the alerts of the groups moved ({moved_groups:?}) keep the time they became active"
    );
    assert!(!moved_targets.is_empty(), "the victim scraped targets");

    // Each alert was notified firing once and never resolved.
    let notifications = hook.received();
    let mut firing: BTreeMap<String, usize> = BTreeMap::new();
    for n in &notifications {
        for a in n["alerts"].as_array().expect("alerts") {
            let name = a["labels"]["alertname"].as_str().expect("alertname").to_string();
            assert_eq!(a["status"], "firing", "{name} resolved: {n}");
            *firing.entry(name).or_default() += 1;
        }
    }
    assert_eq!(firing.len(), GROUPS, "every alert notified: {firing:?}");
    assert!(firing.values().all(|&n| n == 1), "each alert notified once: {firing:?}");

    // The victim comes back and takes its share again.
    nodes[victim].restart();
    wait_until(Duration::from_secs(30), "the victim to take its share back", || {
        own_targets(&nodes[victim]) == moved_targets && own_groups(&nodes[victim]) == moved_groups
    });
    let back_at = now_ms();
    std::thread::sleep(Duration::from_millis(3 * INTERVAL_MS as u64));
    assert_scraped_once_per_interval(&targets, back_at, INTERVAL_MS * 3 / 2, "after the return");
    assert_scraped_once_per_interval(&targets, shared_since, max_gap, "the whole run, hand-back included");
    assert!(killed_at < back_at);
    assert_each_alert_sent_by_one_node_at_a_time(&sent, max_gap);
}

/// Checks what the nodes sent (as [`webhook::Webhook`] kept it), each alert
/// at every evaluation once it fires: always firing, never by two nodes in
/// one interval, and never `max_gap` apart.
fn assert_each_alert_sent_by_one_node_at_a_time(sent: &webhook::Webhook, max_gap: i64) {
    let mut by_alert: BTreeMap<String, Vec<(i64, String)>> = BTreeMap::new();
    for (at, body) in sent.received_at() {
        for a in body.as_array().expect("an Alertmanager API body") {
            let name = a["labels"]["alertname"].as_str().expect("alertname").to_string();
            let ends = a["endsAt"].as_str().expect("endsAt");
            assert!(
                ends > a["startsAt"].as_str().expect("startsAt"),
                "{name} sent resolved: {a}"
            );
            // The sender's external URL: its own address.
            let sender = a["generatorURL"].as_str().expect("generatorURL");
            let sender = sender.split("/graph").next().unwrap_or_default().to_string();
            by_alert.entry(name).or_default().push((at, sender));
        }
    }
    assert_eq!(by_alert.len(), GROUPS, "every alert sent: {by_alert:?}");
    for (name, sends) in &by_alert {
        for pair in sends.windows(2) {
            let ((t0, a), (t1, b)) = (&pair[0], &pair[1]);
            assert!(
                a == b || t1 - t0 >= INTERVAL_MS / 2,
                "{name} sent by {a} and by {b} {} ms apart: {sends:?}",
                t1 - t0
            );
            assert!(t1 - t0 <= max_gap, "{name} not sent for {} ms: {sends:?}", t1 - t0);
        }
    }
    let senders: BTreeSet<&str> = by_alert.values().flatten().map(|(_, s)| s.as_str()).collect();
    println!("alerts sent by {} nodes, each by one at a time", senders.len());
}

/// Whether `node` gave its share up for being cut off from etcd.
fn fenced(node: &Server) -> bool {
    let ring: Value = http_client(Duration::from_secs(5))
        .get(format!("{}/internal/cluster/v1/ring", node.url()))
        .send()
        .and_then(|r| r.json())
        .unwrap_or_default();
    ring["fenced"] == true
}

#[test]
fn a_node_cut_off_from_etcd_gives_its_targets_up_while_the_others_scrape_them() {
    // etcd on an address of its own, so that one node alone can lose it.
    let Some(mut bridge) = Bridge::create() else {
        return;
    };
    let etcd_host = bridge.add_address(0);
    let Some(etcd) = Etcd::start_on(&etcd_host) else {
        return;
    };
    let namespaces: Vec<_> = (0..3).map(|i| bridge.add_namespace(i)).collect();
    let targets = Targets::start_on(&bridge.gateway());
    let dir = tempfile::tempdir().expect("tempdir");
    let rules = dir.path().join("rules.yml");
    std::fs::write(&rules, "groups: []\n").expect("rules");
    let config = dir.path().join("prometheus.yml");
    // No Alertmanager answers there; none is needed.
    let unused_alertmanager = format!("{}:9", bridge.gateway());
    std::fs::write(&config, prometheus_yml(&targets, &rules, &[unused_alertmanager])).expect("config");
    let config = config.to_str().expect("utf-8 path");
    let cluster = ThreeNodes::start_over(etcd, &namespaces, &["--config.file", config]);
    cluster.wait_monitoring();
    let nodes = &cluster.nodes;
    let mut last_shares = Vec::new();
    wait_until(
        Duration::from_secs(30),
        "the targets to be shared by three nodes",
        || {
            std::thread::sleep(Duration::from_millis(800));
            let shares: Vec<_> = nodes.iter().map(own_targets).collect();
            let settled = shares.iter().map(BTreeSet::len).sum::<usize>() == TARGETS && shares == last_shares;
            last_shares = shares;
            settled
        },
    );
    let victim = (0..3).max_by_key(|&i| own_targets(&nodes[i]).len()).expect("a node");
    let its_targets = own_targets(&nodes[victim]);
    assert!(!its_targets.is_empty(), "a node scrapes targets");
    let others: Vec<usize> = (0..3).filter(|&i| i != victim).collect();

    // Cut off from etcd, not from the other nodes or the targets: once its
    // lease lapses the others take its targets, and it stops scraping them.
    namespaces[victim].block(&etcd_host);
    let cut_at = now_ms();
    wait_until(Duration::from_secs(20), "the others to take the targets over", || {
        others.iter().map(|&i| own_targets(&nodes[i]).len()).sum::<usize>() == TARGETS
    });
    wait_until(
        Duration::from_secs(20),
        "the cut-off node to give its targets up",
        || fenced(&nodes[victim]) && own_targets(&nodes[victim]).is_empty(),
    );
    let fenced_at = now_ms();
    println!(
        "node {victim} cut off from etcd: its {} targets moved, and it gave them up {} ms after the cut",
        its_targets.len(),
        fenced_at - cut_at
    );
    std::thread::sleep(Duration::from_millis(3 * INTERVAL_MS as u64));
    assert_scraped_once_per_interval(&targets, fenced_at, INTERVAL_MS * 3 / 2, "while one node is cut off");
    // Through the cut: the node gives up as its lease lapses, when the
    // others take over; their clocks may overlap by a scrape, not more.
    for i in 0..TARGETS {
        let times = targets.scrapes_since(i, cut_at - INTERVAL_MS);
        let doubled = times.windows(2).filter(|p| p[1] - p[0] < INTERVAL_MS / 2).count();
        let widest = times.windows(2).map(|p| p[1] - p[0]).max().unwrap_or(0);
        assert!(
            doubled <= 1,
            "target {i} scraped twice {doubled} times through the cut: {times:?}"
        );
        assert!(
            widest <= 2 * INTERVAL_MS + 1_000,
            "target {i} not scraped for {widest} ms: {times:?}"
        );
    }

    // etcd back: it registers again and takes its targets back.
    namespaces[victim].unblock(&etcd_host);
    wait_until(Duration::from_secs(30), "the node to take its targets back", || {
        !fenced(&nodes[victim]) && own_targets(&nodes[victim]) == its_targets
    });
    let back_at = now_ms();
    std::thread::sleep(Duration::from_millis(3 * INTERVAL_MS as u64));
    assert_scraped_once_per_interval(&targets, back_at, INTERVAL_MS * 3 / 2, "after etcd came back");
}
