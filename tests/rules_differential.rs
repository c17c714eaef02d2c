//! Differential test of rules and alerts (issue #24): Cairn and Prometheus
//! 3.14 (`../shared/peers/`, the oracle) read the same rule file (the
//! benchmark's node_exporter alerts with `for:` shortened, plus recording
//! rules and templated alerts of our own, tests/rules/files.rs) at the same
//! path, so every server evaluates each group at the same timestamps (the
//! test checks it, and changes the data where no group evaluates soon).
//! (Debian's Prometheus 2.42 is not compared: it places a group's
//! evaluations at another offset in the interval than 3.14 does, so no
//! evaluation timestamp is shared.) The data changes once a second
//! (tests/rules/data.rs): two replayed node_exporter targets and a node
//! whose values change in phases, so alerts go pending, fire, change
//! labels, keep firing and resolve. It reaches two pairs of servers:
//! - remote-written into a Prometheus and one Cairn node;
//! - scraped, from one target per node (tests/rules/targets.rs, the
//!   samples timestamped so that every scraper stores the same ones), by a
//!   Prometheus and a cluster of three Cairn nodes (etcd, RF 3) started
//!   from the same `prometheus.yml`, whose nodes share the targets and the
//!   rule groups (issue #56).
//!
//! All notify one real Alertmanager, told apart by the external label
//! `replica`.
//!
//! Each Cairn is compared with the Prometheus fed as it is: every raw
//! sample the rules wrote (recording rules, `ALERTS`, `ALERTS_FOR_STATE`;
//! exact timestamps and values, staleness markers included) through remote
//! read; `/api/v1/rules` and `/api/v1/alerts` field by field (evaluation
//! times aside) in a calm phase; and what Alertmanager got from each
//! replica: the alerts its API showed during the run, and the
//! notifications its webhook sent (firing and resolved, with start and end
//! times), for the alerts that became active in the compared window.
//!
//! Without the peers the test prints `SKIPPED` and passes, unless `CI` is
//! set, where that is a failure.

use crate::rules::{data, files, targets, webhook};

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::common::peers::{Alertmanager, Prometheus, prometheus_3, require};
use crate::common::raw_read::{self, RawSeries};
use crate::common::three_nodes::ThreeNodes;
use crate::common::*;
use cairn_protocols::remote_write::ContentEncoding;
use serde_json::Value;

const STALE_BITS: u64 = 0x7ff0_0000_0000_0002;
/// The names the rules write.
const RULE_OUTPUT: &str = "ALERTS|ALERTS_FOR_STATE|rulesdiff:.+|instance:.+|job:.+";
/// The rule groups of the rule file.
const GROUPS: usize = 2;
/// How long after an evaluation the data may change.
const AFTER_EVALUATION_MS: i64 = 20;
/// How often the scraping servers scrape: the data must be scraped within
/// this after it changes, and evaluated after that.
const SCRAPE_INTERVAL_MS: i64 = 250;

/// One server evaluating the rules.
struct Replica {
    name: &'static str,
    url: String,
    /// The replica (a Prometheus fed the same way) this one must equal.
    oracle: Option<usize>,
}

type Labels = BTreeMap<String, String>;

/// Each rule group's evaluation phase on a server (ms in the second), from
/// the timestamps of its heartbeat rule, once every group has evaluated
/// twice.
fn evaluation_phases(url: &str) -> Option<BTreeMap<String, i64>> {
    let since = now_ms() - 60_000;
    let heartbeats = raw_read::read(url, "rulesdiff:heartbeat", true, since, now_ms() + 60_000);
    let phases: BTreeMap<String, i64> = heartbeats
        .iter()
        .filter(|(_, samples)| samples.len() >= 2)
        .map(|(l, samples)| (l["group"].clone(), samples[samples.len() - 1].0.rem_euclid(1000)))
        .collect();
    (phases.len() == GROUPS).then_some(phases)
}

/// Where in the second the data changes: at the start of the longest
/// stretch without an evaluation (a little after one, for the evaluation
/// running late). Returns that phase and how long after it the next
/// evaluation comes (ms).
fn change_phase(evaluations: impl Iterator<Item = i64>) -> (i64, i64) {
    let mut phases: Vec<i64> = evaluations.collect();
    phases.sort_unstable();
    let gaps = phases.iter().enumerate().map(|(i, &p)| {
        let next = phases.get(i + 1).copied().unwrap_or(phases[0] + 1000);
        (next - p, p)
    });
    let (gap, after) = gaps.max().expect("a group");
    ((after + AFTER_EVALUATION_MS) % 1000, gap - AFTER_EVALUATION_MS)
}

fn show_value(v: f64) -> String {
    if v.to_bits() == STALE_BITS {
        "stale".into()
    } else {
        format!("{v:?}")
    }
}

/// Every difference between two replicas' raw rule output, one per line.
fn raw_differences(got: &RawSeries, want: &RawSeries) -> Vec<String> {
    let shaped = |s: &RawSeries| -> BTreeMap<Labels, Vec<(i64, String)>> {
        s.iter()
            .map(|(l, v)| (l.clone(), v.iter().map(|&(t, v)| (t, show_value(v))).collect()))
            .collect()
    };
    let (got, want) = (shaped(got), shaped(want));
    let mut out = Vec::new();
    for (l, w) in &want {
        match got.get(l) {
            None => out.push(format!("missing series {l:?}")),
            Some(g) if g != w => {
                let first = g
                    .iter()
                    .zip(w)
                    .position(|(a, b)| a != b)
                    .unwrap_or(g.len().min(w.len()));
                out.push(format!(
                    "{l:?}: {} samples, want {}; first difference at #{first}:\n    got  {:?}\n    want {:?}",
                    g.len(),
                    w.len(),
                    &g[first.min(g.len())..(first + 4).min(g.len())],
                    &w[first.min(w.len())..(first + 4).min(w.len())],
                ))
            }
            Some(_) => {}
        }
    }
    for l in got.keys().filter(|l| !want.contains_key(*l)) {
        out.push(format!("unexpected series {l:?}"));
    }
    out
}

/// Each alert's states over time from its `ALERTS` series, for the log:
/// at a timestamp where one state's series ends (a staleness marker) and
/// another's starts, the new state counts.
fn transitions(raw: &RawSeries) -> BTreeMap<String, Vec<String>> {
    let mut by_alert: BTreeMap<String, BTreeMap<i64, String>> = BTreeMap::new();
    for (l, samples) in raw
        .iter()
        .filter(|(l, _)| l.get("__name__").is_some_and(|n| n == "ALERTS"))
    {
        let mut key = l.clone();
        let state = key.remove("alertstate").unwrap_or_default();
        key.remove("__name__");
        let entry = by_alert.entry(format!("{key:?}")).or_default();
        for &(t, v) in samples {
            if v.to_bits() != STALE_BITS {
                entry.insert(t, state.clone());
            } else {
                entry.entry(t).or_insert_with(|| "inactive".into());
            }
        }
    }
    by_alert
        .into_iter()
        .map(|(k, v)| {
            let mut states: Vec<String> = Vec::new();
            for s in v.into_values() {
                if states.last() != Some(&s) {
                    states.push(s);
                }
            }
            (k, states)
        })
        .collect()
}

/// An API answer with the fields that depend on the moment removed, and
/// numbers compared as JSON numbers (Prometheus writes `1`, serde `1.0`).
fn without_times(mut v: Value) -> Value {
    fn strip(v: &mut Value) {
        match v {
            Value::Number(n) => {
                if let Some(f) = n.as_f64().and_then(serde_json::Number::from_f64) {
                    *n = f;
                }
            }
            Value::Object(m) => {
                // Prometheus lists a rule's alerts in map order: no order.
                if let Some(Value::Array(a)) = m.get_mut("alerts") {
                    a.sort_by_key(|x| x["labels"].to_string());
                }
                m.remove("evaluationTime");
                m.remove("lastEvaluation");
                m.values_mut().for_each(strip);
            }
            Value::Array(a) => a.iter_mut().for_each(strip),
            _ => {}
        }
    }
    strip(&mut v);
    v
}

/// Each group's last evaluation (Unix ms) on one server.
type Evaluated = BTreeMap<String, i64>;

/// Every replica's `/api/v1/rules` and `/api/v1/alerts` (evaluation times
/// aside), each taken once its groups' last evaluations are those
/// scheduled at `slots` (group → Unix ms), and before `deadline` (Unix ms,
/// the next evaluation). Else what each replica last showed.
fn snapshot(
    replicas: &[Replica],
    slots: &BTreeMap<String, i64>,
    deadline: i64,
) -> Result<Vec<(Value, Value)>, Vec<Evaluated>> {
    let results: Vec<Result<(Value, Value), Evaluated>> = std::thread::scope(|s| {
        let fetches: Vec<_> = replicas
            .iter()
            .map(|r| s.spawn(|| snapshot_one(&r.url, slots, deadline)))
            .collect();
        fetches.into_iter().map(|f| f.join().expect("snapshot")).collect()
    });
    if results.iter().all(Result::is_ok) {
        Ok(results.into_iter().flatten().collect())
    } else {
        Err(results.into_iter().map(|r| r.err().unwrap_or_default()).collect())
    }
}

/// One server's part of [`snapshot`]: its alerts are read between two
/// reads of its rules that both show the evaluations of `slots`, so they
/// are those evaluations' too.
fn snapshot_one(url: &str, slots: &BTreeMap<String, i64>, deadline: i64) -> Result<(Value, Value), Evaluated> {
    let evaluated = |rules: &Value| -> Evaluated {
        rules["data"]["groups"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|g| {
                let at = g["lastEvaluation"].as_str().and_then(cairn_model::civil::parse_rfc3339);
                (
                    g["name"].as_str().unwrap_or_default().to_string(),
                    at.unwrap_or(i64::MIN),
                )
            })
            .collect()
    };
    // An evaluation is stamped at its slot or a little after it (slots are
    // known to the millisecond).
    let shows_slots = |e: &Evaluated| {
        e.len() == slots.len()
            && e.iter()
                .zip(slots)
                .all(|((ge, te), (gs, ts))| ge == gs && (-1..files::EVALUATION_INTERVAL_MS / 2).contains(&(te - ts)))
    };
    loop {
        let rules = api(url, "/api/v1/rules");
        let before = evaluated(&rules);
        if shows_slots(&before) {
            let alerts = api(url, "/api/v1/alerts");
            let rules = api(url, "/api/v1/rules");
            if now_ms() < deadline && shows_slots(&evaluated(&rules)) {
                return Ok((without_times(rules), sorted_alerts(without_times(alerts))));
            }
        }
        if now_ms() >= deadline {
            return Err(before);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `/api/v1/alerts` with its alerts in label order.
fn sorted_alerts(mut v: Value) -> Value {
    if let Some(a) = v["data"]["alerts"].as_array_mut() {
        a.sort_by_key(|x| x["labels"].to_string());
    }
    v
}

/// The paths where two JSON values differ, with both sides.
fn json_differences(path: &str, got: &Value, want: &Value, out: &mut Vec<String>) {
    match (got, want) {
        (Value::Object(g), Value::Object(w)) => {
            let keys: BTreeSet<&String> = g.keys().chain(w.keys()).collect();
            for k in keys {
                json_differences(
                    &format!("{path}.{k}"),
                    g.get(k).unwrap_or(&Value::Null),
                    w.get(k).unwrap_or(&Value::Null),
                    out,
                );
            }
        }
        (Value::Array(g), Value::Array(w)) if g.len() == w.len() => {
            for (i, (g, w)) in g.iter().zip(w).enumerate() {
                json_differences(&format!("{path}[{i}]"), g, w, out);
            }
        }
        _ if got != want => out.push(format!("{path}:\n    got  {got}\n    want {want}")),
        _ => {}
    }
}

fn api(url: &str, path: &str) -> Value {
    let r = Client::new(url.to_string()).get(path);
    assert_eq!(r.status, 200, "{url}{path}: {}", r.body);
    r.json()
}

/// What Alertmanager showed of one replica: alert labels (without
/// `replica`) → the `(startsAt, "state since startsAt annotations")` seen.
type AmSeen = BTreeMap<String, BTreeMap<String, BTreeSet<(i64, String)>>>;

/// An alert's `startsAt` in Unix milliseconds.
fn starts_at(alert: &Value) -> i64 {
    let text = alert["startsAt"].as_str().unwrap_or_default();
    cairn_model::civil::parse_rfc3339(text).unwrap_or_else(|| panic!("startsAt {text:?}"))
}

/// What one replica's alerts showed in Alertmanager, for the alerts that
/// became active by `until` (evaluations after the compared window go on
/// while the run winds down, and are compared nowhere else).
fn started_by(
    seen: Option<&BTreeMap<String, BTreeSet<(i64, String)>>>,
    until: i64,
) -> BTreeMap<String, BTreeSet<String>> {
    seen.into_iter()
        .flatten()
        .filter_map(|(alert, states)| {
            let shown: BTreeSet<String> = states
                .iter()
                .filter(|(t, _)| *t <= until)
                .map(|(_, s)| s.clone())
                .collect();
            (!shown.is_empty()).then(|| (alert.clone(), shown))
        })
        .collect()
}

fn replica_and_key(labels: &Value) -> (String, String) {
    let mut l: Labels = serde_json::from_value(labels.clone()).expect("labels");
    let replica = l.remove("replica").unwrap_or_default();
    (replica, format!("{l:?}"))
}

fn poll_alertmanager(am: &str, seen: &Mutex<AmSeen>) {
    let r = Client::new(am.to_string()).get("/api/v2/alerts");
    if r.status != 200 {
        return;
    }
    let mut seen = seen.lock().expect("lock");
    for a in r.json().as_array().into_iter().flatten() {
        let (replica, key) = replica_and_key(&a["labels"]);
        let what = format!("{} since {} {}", a["status"]["state"], a["startsAt"], a["annotations"]);
        seen.entry(replica)
            .or_default()
            .entry(key)
            .or_default()
            .insert((starts_at(a), what));
    }
}

/// The webhook's notifications per replica: alert → its distinct
/// `(status, startsAt, endsAt when resolved, annotations)` in order, for
/// the alerts that became active by `until`.
fn notifications(bodies: &[Value], until: i64) -> BTreeMap<String, BTreeMap<String, Vec<String>>> {
    let mut out: BTreeMap<String, BTreeMap<String, Vec<String>>> = BTreeMap::new();
    for body in bodies {
        for a in body["alerts"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|a| starts_at(a) <= until)
        {
            let (replica, key) = replica_and_key(&a["labels"]);
            let resolved = a["status"] == "resolved";
            let what = format!(
                "{} since {}{} {}",
                a["status"],
                a["startsAt"],
                if resolved {
                    format!(" until {}", a["endsAt"])
                } else {
                    String::new()
                },
                a["annotations"]
            );
            let seq = out.entry(replica).or_default().entry(key).or_default();
            if !seq.contains(&what) {
                seq.push(what);
            }
        }
    }
    out
}

/// Lines that differ between two maps of printable values.
fn map_differences<V: std::fmt::Debug + PartialEq>(
    got: &BTreeMap<String, V>,
    want: &BTreeMap<String, V>,
) -> Vec<String> {
    let mut out = Vec::new();
    for (k, w) in want {
        match got.get(k) {
            None => out.push(format!("missing {k}: want {w:?}")),
            Some(g) if g != w => out.push(format!("{k}:\n    got  {g:?}\n    want {w:?}")),
            Some(_) => {}
        }
    }
    for (k, g) in got.iter().filter(|(k, _)| !want.contains_key(*k)) {
        out.push(format!("unexpected {k}: {g:?}"));
    }
    out
}

#[test]
fn cairn_evaluates_rules_as_prometheus_does() {
    let Some(prom3_bin) = prometheus_3() else { return };
    let Some(am_bin) = require("prometheus-alertmanager", "prometheus-alertmanager") else {
        return;
    };
    let began = Instant::now();
    let dir = tempfile::tempdir().expect("tempdir");
    let rule_file = dir.path().join("rules.yml");
    std::fs::write(&rule_file, files::rules()).expect("rules");

    let hook = webhook::Webhook::start();
    let mut am = Alertmanager::start(&am_bin, &files::alertmanager_yml(&hook.url));
    let am_addr = format!("127.0.0.1:{}", am.port);
    let config = |replica: &str| files::prometheus_yml(&rule_file, &am_addr, replica);

    // The remote-written pair: Prometheus and one Cairn node.
    let receiver = ["--web.enable-remote-write-receiver"];
    let mut prom3 = Prometheus::start(&prom3_bin, &config("prom"), &receiver);
    let cairn_config = dir.path().join("cairn.yml");
    std::fs::write(&cairn_config, config("cairn")).expect("cairn config");
    let cairn = Server::start_with(&["--config.file", cairn_config.to_str().expect("utf-8 path")]);

    // The scraping pair: Prometheus and a cluster, scraping the same targets.
    let data = data::Data::new(2);
    let targets = targets::Targets::start(&data.instances());
    let scraped: Vec<(String, String)> = targets.addrs.iter().cloned().zip(data.instances()).collect();
    let scraping = |replica: &str| {
        format!(
            "{}{}",
            config(replica),
            files::scrape_configs(data::JOB, SCRAPE_INTERVAL_MS as u64, &scraped)
        )
    };
    let mut prom3_scraping = Prometheus::start(&prom3_bin, &scraping("promscrape"), &[]);
    let cluster_config = dir.path().join("cluster.yml");
    std::fs::write(&cluster_config, scraping("cluster")).expect("cluster config");
    let Some(cluster) = ThreeNodes::monitoring(&cluster_config, &[]) else {
        return;
    };

    let replicas = [
        Replica {
            name: "prom",
            url: prom3.url(),
            oracle: None,
        },
        Replica {
            name: "promscrape",
            url: prom3_scraping.url(),
            oracle: None,
        },
        Replica {
            name: "cairn",
            url: cairn.url(),
            oracle: Some(0),
        },
        // Read from one node; the nodes share the targets and the groups.
        Replica {
            name: "cluster",
            url: cluster.nodes[0].url(),
            oracle: Some(1),
        },
    ];

    // Every server must evaluate each group in the same phase before data flows.
    let deadline = Instant::now() + Duration::from_secs(30);
    let phases = loop {
        let phases: Vec<Option<BTreeMap<String, i64>>> = replicas.iter().map(|r| evaluation_phases(&r.url)).collect();
        if phases.iter().all(Option::is_some) {
            let want = phases[0].clone().expect("oracle phases");
            for (r, p) in replicas.iter().zip(&phases) {
                assert_eq!(
                    p.as_ref(),
                    Some(&want),
                    "{} evaluates its groups at these ms in the second, Prometheus at {want:?}",
                    r.name
                );
            }
            break want;
        }
        assert!(
            Instant::now() < deadline,
            "not every server evaluates the rules: {phases:?}\nCairn's log:\n{}",
            cairn.log()
        );
        std::thread::sleep(Duration::from_millis(500));
    };
    let (change, quiet) = change_phase(phases.values().copied());
    assert!(
        quiet >= SCRAPE_INTERVAL_MS + 200,
        "the groups evaluate at {phases:?}: no time to scrape a change between them"
    );

    for node in &cluster.nodes {
        let local = Client::with_headers(node.url(), &[("x-cairn-peer-request", "1")]);
        let names = |path: &str, list: &str, field: &str| -> Vec<String> {
            local.get(path).json()["data"][list]
                .as_array()
                .into_iter()
                .flatten()
                .map(|g| g[field].to_string())
                .collect()
        };
        println!(
            "cluster node {} evaluates {:?} and scrapes {:?}",
            node.url(),
            names("/api/v1/rules", "groups", "name"),
            names("/api/v1/targets", "activeTargets", "scrapeUrl"),
        );
    }

    // Alertmanager's API, watched through the run.
    let am_seen = Arc::new(Mutex::new(AmSeen::new()));
    let stop = Arc::new(AtomicBool::new(false));
    let poller = {
        let (url, seen, stop) = (am.url(), Arc::clone(&am_seen), Arc::clone(&stop));
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                poll_alertmanager(&url, &seen);
                std::thread::sleep(Duration::from_millis(300));
            }
        })
    };

    let written: Vec<Client> = [&replicas[0], &replicas[2]]
        .iter()
        .map(|r| Client::new(r.url.clone()))
        .collect();
    let sleep_until = |t: i64| {
        let wait = t - now_ms();
        if wait > 0 {
            std::thread::sleep(Duration::from_millis(wait as u64));
        }
    };
    // Batch k is stamped T_k, when no group evaluates for `quiet` ms: it is
    // remote-written then, and served for scraping from then on, so every
    // scraper stores it (and any staleness marker it causes) after the
    // evaluations before T_k and before the ones after.
    let first = (now_ms() / 1000 + 2) * 1000 + change;
    let batches = data::PHASES * data::PHASE_LEN;
    let snapshot_at = 4 * data::PHASE_LEN + 2;
    let late_after = quiet - SCRAPE_INTERVAL_MS - 100;
    let mut late = Vec::new();
    let mut snapshots: Vec<(Value, Value)> = Vec::new();
    let mut unmatched_snapshots = Vec::new();
    for k in 0..batches {
        let t = first + k as i64 * 1000;
        let batch = data.batch(k, t);
        sleep_until(t);
        targets.publish(&batch);
        let body = encode(&batch, ContentEncoding::Snappy);
        for c in &written {
            let r = c.post_write(body.clone(), Some("snappy"));
            assert!(
                r.status == 204 || r.status == 200,
                "{} refused a write: {}",
                c.base,
                r.body
            );
        }
        let lateness = now_ms() - t;
        if lateness > late_after {
            late.push((k, lateness));
        }
        if k >= snapshot_at && snapshots.is_empty() {
            // Away from the evaluations on either side, each server once it
            // shows the evaluations before the change (a server may still
            // be evaluating: a loaded machine, a cluster's remote selects),
            // and before the next evaluation; if one never does, again
            // after the next change.
            let slots: BTreeMap<String, i64> = phases
                .iter()
                .map(|(group, phase)| {
                    (
                        group.clone(),
                        t - (change - phase).rem_euclid(files::EVALUATION_INTERVAL_MS),
                    )
                })
                .collect();
            sleep_until(t + quiet / 4);
            match snapshot(&replicas, &slots, t + quiet) {
                Ok(taken) => snapshots = taken,
                Err(evaluated) => unmatched_snapshots.push((k, evaluated)),
            }
        }
    }
    let last = first + (batches as i64 - 1) * 1000;
    // Let the last evaluation and notifications happen.
    std::thread::sleep(Duration::from_millis(2500));
    stop.store(true, Ordering::Relaxed);
    poller.join().expect("poller");
    prom3.assert_running();
    prom3_scraping.assert_running();
    am.assert_running();
    assert!(
        !snapshots.is_empty(),
        "some server never showed the evaluations before a change in time for a snapshot of \
         /api/v1/rules and /api/v1/alerts (batch, each server's groups' last evaluations): \
         {unmatched_snapshots:?}"
    );
    let late_note = if late.is_empty() {
        String::new()
    } else {
        format!("\n(batches written too late to be evaluated reliably: {late:?})")
    };

    // Rule output, without the external label remote read adds.
    let window = (first - 1000, last + quiet);
    let read = |url: &str| -> RawSeries {
        raw_read::read(url, RULE_OUTPUT, true, window.0, window.1)
            .into_iter()
            .map(|(mut l, v)| {
                l.remove("replica");
                (l, v)
            })
            .collect()
    };
    let am_seen = am_seen.lock().expect("lock").clone();
    let notified = notifications(&hook.received(), window.1);
    let mut wanted = BTreeMap::new();
    for oracle in replicas.iter().filter(|r| r.oracle.is_none()) {
        let want = read(&oracle.url);
        assert!(want.len() > 20, "{} wrote only {} rule series", oracle.name, want.len());
        let want_states = transitions(&want);
        println!("{}:", oracle.name);
        for (name, states) in &want_states {
            println!("  {name}: {}", states.join(" → "));
        }
        for expected in [
            "FilesystemAlmostFull",
            "HostOutOfMemory",
            "HostOomKillDetected",
            "CpuBusy",
            "FewNodes",
        ] {
            assert!(
                want_states.keys().any(|k| k.contains(&format!("\"{expected}\""))),
                "the data never raised {expected} in {}: {want_states:?}",
                oracle.name
            );
        }
        assert!(
            want_states
                .values()
                .any(|s| s.len() >= 3 && s[..3] == ["pending", "firing", "inactive"]),
            "no alert went pending → firing → resolved in {}: {want_states:?}",
            oracle.name
        );
        let want_notified = notified.get(oracle.name).cloned().unwrap_or_default();
        assert!(
            want_notified
                .values()
                .any(|v| v.iter().any(|s| s.starts_with("\"resolved\""))),
            "Alertmanager notified no resolution from {}: {want_notified:?}",
            oracle.name
        );
        wanted.insert(oracle.name, want);
    }

    let mut failures = Vec::new();
    for (i, subject) in replicas.iter().enumerate() {
        let Some(o) = subject.oracle else { continue };
        let oracle = &replicas[o];
        let mut report = Vec::new();
        let raw = raw_differences(&read(&subject.url), &wanted[oracle.name]);
        if !raw.is_empty() {
            report.push(format!("rule output ({} series):\n{}", raw.len(), raw.join("\n")));
        }
        let (rules, alerts) = &snapshots[i];
        for (what, got, want) in [
            ("/api/v1/rules", rules, &snapshots[o].0),
            ("/api/v1/alerts", alerts, &snapshots[o].1),
        ] {
            let mut diff = Vec::new();
            json_differences(what, got, want, &mut diff);
            if !diff.is_empty() {
                report.push(diff.join("\n"));
            }
        }
        let am = map_differences(
            &started_by(am_seen.get(subject.name), window.1),
            &started_by(am_seen.get(oracle.name), window.1),
        );
        if !am.is_empty() {
            report.push(format!("Alertmanager's alerts:\n{}", am.join("\n")));
        }
        let no_notifications = BTreeMap::new();
        let hooked = map_differences(
            notified.get(subject.name).unwrap_or(&no_notifications),
            notified.get(oracle.name).unwrap_or(&no_notifications),
        );
        if !hooked.is_empty() {
            report.push(format!("Alertmanager's notifications:\n{}", hooked.join("\n")));
        }
        if !report.is_empty() {
            failures.push(format!(
                "{} differs from Prometheus 3.14 ({}):\n{}",
                subject.name,
                oracle.name,
                report.join("\n\n")
            ));
        }
    }
    println!(
        "compared {} and {} rule series, {} alert states seen in Alertmanager, {} notified, in {:?}",
        wanted["prom"].len(),
        wanted["promscrape"].len(),
        am_seen.values().map(BTreeMap::len).sum::<usize>(),
        notified.values().map(BTreeMap::len).sum::<usize>(),
        began.elapsed()
    );
    assert!(failures.is_empty(), "{}{late_note}", failures.join("\n\n"));
}
