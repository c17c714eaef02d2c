//! The cluster's guarantees checked on a history, under a nemesis: three
//! `cairn` nodes (RF 3), each in a network namespace of its own, etcd on the
//! bridge. Clients write and read through random nodes while the nemesis,
//! one fault at a time, cuts a node off, pauses one (SIGSTOP), kills one
//! (-9, then restarts it), cuts two off (a majority of every series' owners)
//! or restarts etcd. Every operation is recorded with its outcome, and the
//! checker verifies:
//! - every acknowledged sample is read back from every node once all is healed;
//! - no read returns a sample that was never written;
//! - a read that claims to be complete (no partial-response warning) holds
//!   every sample acknowledged before it began, in the window it reads;
//! - a read that answers while a quorum of every series' owners is
//!   reachable does not claim to be partial: only one through a node under
//!   a fault itself (or just after it) or during a fault of two nodes may.
//!
//! Each read is checked as it completes, against the writes invoked so far,
//! and keeps its samples only when it broke a guarantee: a soak's reads
//! would otherwise hold every sample once per read. Most reads look at the
//! last minutes; every tenth reads the whole run.
//!
//! A failing history is saved as JSON (the path is printed);
//! `CAIRN_HISTORY_REPLAY=<file>` checks it again without a cluster.
//! `CAIRN_HISTORY_SECS` sets how long the nemesis runs (the soak:
//! docs/cluster.md). Needs root for the namespaces (CI runs as root).

use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::common::etcd::Etcd;
use crate::common::netns::{Bridge, Namespace};
use crate::common::{Server, http_client, now_ms, series};

/// Series written, per writer.
const SERIES: usize = 4;
const WRITERS: usize = 2;
const READERS: usize = 2;
/// How far back most reads look.
const RECENT_WINDOW_S: i64 = 300;
/// How far back every tenth read and the final reads look: further than any run.
const WHOLE_WINDOW_S: i64 = 7 * 86_400;
/// A write's timestamp is taken before it is invoked: how much earlier, at most.
const WRITE_SKEW_MS: i64 = 60_000;

/// A sample as a read returns it: series, timestamp, value's bits.
type Returned = (String, i64, u64);

/// One write: one sample of one series, through one node.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Write {
    series: String,
    t: i64,
    v: f64,
    node: usize,
    invoked_ms: i64,
    /// `i64::MAX` while no answer came.
    completed_ms: i64,
    acknowledged: bool,
}

/// The writes in the order they were invoked, found by sample.
#[derive(Debug, Default, Deserialize)]
#[serde(from = "Vec<Write>")]
struct Writes {
    list: Vec<Write>,
    by_sample: HashMap<(String, i64), usize>,
}

impl From<Vec<Write>> for Writes {
    fn from(list: Vec<Write>) -> Self {
        let mut writes = Writes::default();
        for w in list {
            writes.invoke(w);
        }
        writes
    }
}

impl Serialize for Writes {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.list.serialize(serializer)
    }
}

impl Writes {
    /// Records a write about to be sent; its index.
    fn invoke(&mut self, write: Write) -> usize {
        self.by_sample.insert((write.series.clone(), write.t), self.list.len());
        self.list.push(write);
        self.list.len() - 1
    }

    /// Every acknowledged write whose sample a read at `at_ms` over
    /// `window_s` must hold when it began at `invoked_ms`.
    fn owed_to(&self, invoked_ms: i64, at_ms: i64, window_s: i64) -> impl Iterator<Item = &Write> {
        let from = at_ms - window_s * 1000;
        // Invocation order is timestamp order but for the skew.
        self.list
            .iter()
            .rev()
            .take_while(move |w| w.t > from - WRITE_SKEW_MS)
            .filter(move |w| w.acknowledged && w.completed_ms < invoked_ms && w.t > from && w.t <= at_ms)
    }
}

/// One read of every series through one node: what it returned, and whether
/// it said the answer may be partial.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Read {
    node: usize,
    invoked_ms: i64,
    completed_ms: i64,
    /// The read's time: it sees samples in `(at - window, at]`.
    at_ms: i64,
    window_s: i64,
    /// `None`: no answer (an error status or none at all).
    returned: Option<usize>,
    partial: bool,
    /// What it returned, kept only when it broke a guarantee.
    samples: Option<BTreeSet<Returned>>,
}

/// A fault and when it began and ended (`i64::MAX` while it lasts).
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Fault {
    what: String,
    /// The nodes it cut off, paused or killed (none: etcd's restart).
    #[serde(default)]
    nodes: Vec<usize>,
    from_ms: i64,
    to_ms: i64,
}

/// How long after its own fault a node may still answer partially: it
/// starts again, registers and reconnects to its peers.
const RECOVERY_MS: i64 = 10_000;

impl Fault {
    /// Whether `read` may be partial for this fault: the read went through
    /// a node under it, or it took two of every series' three owners away.
    fn excuses(&self, read: &Read) -> bool {
        let overlaps = self.from_ms <= read.completed_ms && read.invoked_ms - RECOVERY_MS <= self.to_ms;
        overlaps && (self.nodes.len() >= 2 || self.nodes.contains(&read.node))
    }
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct History {
    writes: Writes,
    reads: Vec<Read>,
    faults: Vec<Fault>,
    /// What each node returned once everything was healed.
    final_reads: Vec<Read>,
    /// What the checks as reads completed found.
    violations: Vec<String>,
}

/// Every violation of the guarantees by `read`, which returned `samples`,
/// under `faults`.
fn check_read(writes: &Writes, faults: &[Fault], read: &Read, samples: &BTreeSet<Returned>) -> Vec<String> {
    let mut violations = Vec::new();
    for (series, t, bits) in samples {
        let written = writes.by_sample.get(&(series.clone(), *t)).map(|&i| &writes.list[i]);
        if !written.is_some_and(|w| w.v.to_bits() == *bits && w.invoked_ms <= read.completed_ms) {
            violations.push(format!(
                "a read through node {} at {} returned {series} @{t} = {}, which was never written",
                read.node,
                read.invoked_ms,
                f64::from_bits(*bits)
            ));
        }
    }
    if read.partial {
        if !faults.iter().any(|f| f.excuses(read)) {
            violations.push(format!(
                "a read through node {} begun at {} was marked partial while a quorum of every series' owners was \
                 reachable",
                read.node, read.invoked_ms
            ));
        }
        return violations;
    }
    for w in writes.owed_to(read.invoked_ms, read.at_ms, read.window_s) {
        if !samples.contains(&(w.series.clone(), w.t, w.v.to_bits())) {
            violations.push(format!(
                "a read through node {} begun at {} (not marked partial) misses {} @{} = {}, acknowledged by node \
                 {} at {}",
                read.node, read.invoked_ms, w.series, w.t, w.v, w.node, w.completed_ms
            ));
        }
    }
    violations
}

/// Checks `read` of `samples` and records it in `history`, with its samples
/// when it broke a guarantee.
fn record(history: &mut History, mut read: Read, samples: Option<BTreeSet<Returned>>, is_final: bool) {
    let violations = match &samples {
        Some(samples) => check_read(&history.writes, &history.faults, &read, samples),
        None => Vec::new(),
    };
    if is_final && (samples.is_none() || read.partial) {
        history
            .violations
            .push(format!("node {} gave no complete answer after healing", read.node));
    }
    if !violations.is_empty() {
        read.samples = samples;
        history.violations.extend(violations);
    }
    match is_final {
        true => history.final_reads.push(read),
        false => history.reads.push(read),
    }
}

/// Every violation in a saved history, checked again: the reads that kept
/// their samples, and the final reads' completeness.
fn check_again(history: &History) -> Vec<String> {
    let mut violations = Vec::new();
    for r in history.reads.iter().chain(&history.final_reads) {
        if let Some(samples) = &r.samples {
            violations.extend(check_read(&history.writes, &history.faults, r, samples));
        }
    }
    for r in &history.final_reads {
        if r.returned.is_none() || r.partial {
            violations.push(format!("node {} gave no complete answer after healing", r.node));
        }
    }
    violations
}

/// The cluster under test, each node in its namespace.
struct Nodes {
    etcd: Mutex<Etcd>,
    nodes: Vec<Mutex<Server>>,
    namespaces: Vec<Namespace>,
    _bridge: Bridge,
    _dirs: Vec<tempfile::TempDir>,
}

impl Nodes {
    fn start() -> Option<Self> {
        let mut bridge = Bridge::create()?;
        let etcd = Etcd::start_on(&bridge.gateway())?;
        let endpoint = etcd.endpoint();
        let mut nodes = Vec::new();
        let mut namespaces = Vec::new();
        let mut dirs = Vec::new();
        for i in 0..3u8 {
            let ns = bridge.add_namespace(i);
            let dir = tempfile::tempdir().expect("tempdir");
            let id = format!("node-{i}");
            let args = [
                "--cluster.etcd-endpoints",
                &endpoint,
                "--cluster.node-id",
                &id,
                "--cluster.lease-ttl",
                "2s",
                "--cluster.peer-timeout",
                "2s",
            ];
            let mut node = Server::new(dir.path(), &args);
            node.host = ns.addr.clone();
            node.command_prefix = ns.exec_prefix();
            node.restart();
            nodes.push(Mutex::new(node));
            namespaces.push(ns);
            dirs.push(dir);
        }
        Some(Self {
            etcd: Mutex::new(etcd),
            nodes,
            namespaces,
            _bridge: bridge,
            _dirs: dirs,
        })
    }

    fn url(&self, node: usize) -> String {
        self.nodes[node].lock().expect("node").url()
    }

    /// Waits until every node sees the three alive and has caught up.
    fn wait_healed(&self) {
        let deadline = Instant::now() + Duration::from_secs(60);
        for i in 0..self.nodes.len() {
            loop {
                let ring: Value = http_client(Duration::from_secs(3))
                    .get(format!("{}/internal/cluster/v1/ring", self.url(i)))
                    .send()
                    .and_then(|r| r.json())
                    .unwrap_or_default();
                let alive = ring["members"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter(|m| m["alive"] == true)
                    .count();
                if alive == 3 && ring["caught_up"] == true {
                    break;
                }
                assert!(Instant::now() < deadline, "node {i} did not heal: {ring}");
                std::thread::sleep(Duration::from_millis(200));
            }
        }
    }

    /// One fault on a random node (or etcd), for a few seconds, then
    /// healed; recorded in `history` from when it begins.
    fn fault(&self, n: u64, history: &Mutex<History>) {
        let node = (n as usize * 7 + 1) % self.nodes.len();
        // Two owners of every series away: writes fail, reads are partial.
        let other = (node + 1) % self.nodes.len();
        let hold = Duration::from_millis(4_000 + (n % 4) * 1_000);
        let (what, nodes) = match n % 5 {
            0 => (format!("node {node} cut off"), vec![node]),
            1 => (format!("node {node} paused"), vec![node]),
            2 => (format!("node {node} killed and restarted"), vec![node]),
            3 => (format!("nodes {node} and {other} cut off"), vec![node, other]),
            _ => ("etcd restarted".to_string(), Vec::new()),
        };
        let index = {
            let mut history = history.lock().expect("history");
            history.faults.push(Fault {
                what,
                nodes,
                from_ms: now_ms(),
                to_ms: i64::MAX,
            });
            history.faults.len() - 1
        };
        match n % 5 {
            0 => {
                self.namespaces[node].cut();
                std::thread::sleep(hold);
                self.namespaces[node].heal();
            }
            1 => {
                self.nodes[node].lock().expect("node").signal("-STOP");
                std::thread::sleep(hold);
                self.nodes[node].lock().expect("node").signal("-CONT");
            }
            2 => {
                let mut server = self.nodes[node].lock().expect("node");
                server.kill9();
                std::thread::sleep(hold);
                server.restart();
            }
            3 => {
                self.namespaces[node].cut();
                self.namespaces[other].cut();
                std::thread::sleep(hold * 2);
                self.namespaces[node].heal();
                self.namespaces[other].heal();
            }
            _ => {
                let mut etcd = self.etcd.lock().expect("etcd");
                etcd.stop();
                std::thread::sleep(hold);
                etcd.restart();
            }
        }
        let mut history = history.lock().expect("history");
        let fault = &mut history.faults[index];
        fault.to_ms = now_ms();
        println!("{} ({} ms)", fault.what, fault.to_ms - fault.from_ms);
    }
}

/// A read of every series through `node` at `at_ms`, over `window_s`; what
/// it returned.
fn read(
    http: &reqwest::blocking::Client,
    base: &str,
    node: usize,
    at_ms: i64,
    window_s: i64,
    partial_ok: bool,
) -> (Read, Option<BTreeSet<Returned>>) {
    let invoked_ms = now_ms();
    let mut params = vec![
        ("query", format!("hist[{window_s}s]")),
        ("time", format!("{:.3}", at_ms as f64 / 1000.0)),
    ];
    if partial_ok {
        params.push(("partial_response", "true".into()));
    }
    let answer = http.get(format!("{base}/api/v1/query")).query(&params).send();
    let body: Option<Value> = answer
        .ok()
        .filter(|r| r.status().is_success())
        .and_then(|r| r.json().ok());
    let partial = body.as_ref().is_some_and(|b| {
        b["warnings"]
            .as_array()
            .is_some_and(|w| w.iter().any(|w| w.as_str().is_some_and(|w| w.contains("partial"))))
    });
    let samples = body.map(|b| {
        let mut out = BTreeSet::new();
        for s in b["data"]["result"].as_array().into_iter().flatten() {
            let name = s["metric"]["s"].as_str().unwrap_or_default().to_string();
            for p in s["values"].as_array().into_iter().flatten() {
                let t = (p[0].as_f64().unwrap_or_default() * 1000.0).round() as i64;
                let v: f64 = p[1].as_str().and_then(|v| v.parse().ok()).unwrap_or(f64::NAN);
                out.insert((name.clone(), t, v.to_bits()));
            }
        }
        out
    });
    let read = Read {
        node,
        invoked_ms,
        completed_ms: now_ms(),
        at_ms,
        window_s,
        returned: samples.as_ref().map(BTreeSet::len),
        partial,
        samples: None,
    };
    (read, samples)
}

/// Runs writers, readers and the nemesis on `nodes` for `secs`; the history.
fn run(nodes: &Arc<Nodes>, secs: u64) -> History {
    let history = Arc::new(Mutex::new(History::default()));
    let stop = Arc::new(AtomicBool::new(false));
    let op = Arc::new(AtomicU64::new(1));
    let mut clients = Vec::new();
    for w in 0..WRITERS {
        let (nodes, history, stop, op) = (nodes.clone(), history.clone(), stop.clone(), op.clone());
        clients.push(std::thread::spawn(move || {
            let http = http_client(Duration::from_secs(5));
            let mut last_t = [0i64; SERIES];
            let mut n = w;
            while !stop.load(Ordering::Relaxed) {
                n += 1;
                let k = n % SERIES;
                let node = (n * 5 + w) % 3;
                let t = now_ms().max(last_t[k] + 1);
                last_t[k] = t;
                let v = op.fetch_add(1, Ordering::Relaxed) as f64;
                let name = format!("w{w}s{k}");
                let body = crate::common::encode(
                    &[series(&[("__name__", "hist"), ("s", &name)], &[(t, v)])],
                    cairn_protocols::remote_write::ContentEncoding::Snappy,
                );
                let index = history.lock().expect("history").writes.invoke(Write {
                    series: name,
                    t,
                    v,
                    node,
                    invoked_ms: now_ms(),
                    completed_ms: i64::MAX,
                    acknowledged: false,
                });
                let answer = http
                    .post(format!("{}/api/v1/write", nodes.url(node)))
                    .header("Content-Encoding", "snappy")
                    .header("Content-Type", "application/x-protobuf")
                    .body(body)
                    .send();
                let acknowledged = answer.is_ok_and(|r| r.status().is_success());
                let mut history = history.lock().expect("history");
                let write = &mut history.writes.list[index];
                write.completed_ms = now_ms();
                write.acknowledged = acknowledged;
                drop(history);
                std::thread::sleep(Duration::from_millis(30));
            }
        }));
    }
    for r in 0..READERS {
        let (nodes, history, stop) = (nodes.clone(), history.clone(), stop.clone());
        clients.push(std::thread::spawn(move || {
            // Short: a read of a node cut off must not hold the reader for
            // the whole of a fault.
            let http = http_client(Duration::from_millis(2_500));
            let mut n = r;
            while !stop.load(Ordering::Relaxed) {
                n += 1;
                let node = (n * 7 + r) % 3;
                let base = nodes.url(node);
                let window_s = if n % 10 == 0 { WHOLE_WINDOW_S } else { RECENT_WINDOW_S };
                let (read, samples) = read(&http, &base, node, now_ms(), window_s, true);
                record(&mut history.lock().expect("history"), read, samples, false);
                std::thread::sleep(Duration::from_millis(150));
            }
        }));
    }
    // The nemesis: a fault every 15 s, from 5 s in.
    let started = Instant::now();
    std::thread::sleep(Duration::from_secs(5));
    let mut faults = 0;
    while started.elapsed() < Duration::from_secs(secs) {
        nodes.fault(faults, &history);
        faults += 1;
        let next = Duration::from_secs(5 + 15 * faults);
        std::thread::sleep(next.saturating_sub(started.elapsed()));
    }
    stop.store(true, Ordering::Relaxed);
    for c in clients {
        c.join().expect("client");
    }
    nodes.wait_healed();
    let http = http_client(Duration::from_secs(30));
    let at = now_ms();
    let mut history = std::mem::take(&mut *history.lock().expect("history"));
    for i in 0..3 {
        let (read, samples) = read(&http, &nodes.url(i), i, at, WHOLE_WINDOW_S, false);
        record(&mut history, read, samples, true);
    }
    history
}

#[test]
fn the_cluster_keeps_its_guarantees_under_partitions_pauses_kills_and_etcd_restarts() {
    if let Ok(path) = std::env::var("CAIRN_HISTORY_REPLAY") {
        let history: History =
            serde_json::from_str(&std::fs::read_to_string(&path).expect("history file")).expect("a saved history");
        let violations = check_again(&history);
        assert!(violations.is_empty(), "{}", violations.join("\n"));
        return;
    }
    let secs = std::env::var("CAIRN_HISTORY_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(150);
    let Some(nodes) = Nodes::start() else { return };
    let nodes = Arc::new(nodes);
    nodes.wait_healed();
    let history = run(&nodes, secs);
    let acknowledged = history.writes.list.iter().filter(|w| w.acknowledged).count();
    let partial = history.reads.iter().filter(|r| r.partial).count();
    let unanswered = history.reads.iter().filter(|r| r.returned.is_none()).count();
    println!(
        "{} faults; {} writes, {acknowledged} acknowledged; {} reads, {partial} marked partial, {unanswered} unanswered",
        history.faults.len(),
        history.writes.list.len(),
        history.reads.len()
    );
    let violations = &history.violations;
    if !violations.is_empty() {
        let path = std::env::temp_dir().join(format!("cairn-history-{}.json", now_ms()));
        std::fs::write(&path, serde_json::to_vec(&history).expect("history json")).expect("save the history");
        let shown: Vec<&String> = violations.iter().take(20).collect();
        panic!(
            "{} violations (history saved at {}; CAIRN_HISTORY_REPLAY={} checks it again):\n{}",
            violations.len(),
            path.display(),
            path.display(),
            shown.iter().map(|s| s.as_str()).collect::<Vec<_>>().join("\n")
        );
    }
    assert!(acknowledged > 100, "too few writes acknowledged: {acknowledged}");
    assert!(history.faults.len() >= 5, "too few faults: every kind at least once");
    assert!(partial > 0, "no read was partial, though two nodes were cut off");
}

mod checker {
    use super::*;

    fn write(t: i64, v: f64, acknowledged: bool, completed_ms: i64) -> Write {
        Write {
            series: "a".into(),
            t,
            v,
            node: 0,
            invoked_ms: completed_ms - 1,
            completed_ms,
            acknowledged,
        }
    }

    /// A read at `invoked_ms` of the last `window_s` that returned `samples`.
    fn read_of(samples: &[(i64, f64)], invoked_ms: i64, window_s: i64, partial: bool) -> (Read, BTreeSet<Returned>) {
        let read = Read {
            node: 1,
            invoked_ms,
            completed_ms: invoked_ms + 1,
            at_ms: invoked_ms,
            window_s,
            returned: Some(samples.len()),
            partial,
            samples: None,
        };
        let samples = samples
            .iter()
            .map(|&(t, v)| ("a".to_string(), t, v.to_bits()))
            .collect();
        (read, samples)
    }

    fn violations(writes: &Writes, samples: &[(i64, f64)], invoked_ms: i64, partial: bool) -> usize {
        let (read, samples) = read_of(samples, invoked_ms, 1, partial);
        // Node 1 (the one read through) cut off from 30 to 45.
        let faults = [fault(&[1], 30, 45)];
        check_read(writes, &faults, &read, &samples).len()
    }

    fn fault(nodes: &[usize], from_ms: i64, to_ms: i64) -> Fault {
        Fault {
            what: "a fault".into(),
            nodes: nodes.to_vec(),
            from_ms,
            to_ms,
        }
    }

    #[test]
    fn a_read_may_be_partial_only_under_its_own_nodes_fault_or_two_nodes() {
        let writes = Writes::default();
        let partial_read_at = |invoked_ms: i64, faults: &[Fault]| {
            let (read, samples) = read_of(&[], invoked_ms, 1, true);
            check_read(&writes, faults, &read, &samples).len()
        };
        let at = 100_000;
        assert_eq!(partial_read_at(at, &[]), 1, "nothing wrong, yet partial");
        assert_eq!(
            partial_read_at(at, &[fault(&[1], at - 5, at + 5)]),
            0,
            "its own node under a fault"
        );
        assert_eq!(
            partial_read_at(at, &[fault(&[0], at - 5, at + 5)]),
            1,
            "another node under a fault"
        );
        assert_eq!(partial_read_at(at, &[fault(&[], at - 5, at + 5)]), 1, "etcd restarting");
        assert_eq!(
            partial_read_at(at, &[fault(&[0, 2], at - 5, at + 5)]),
            0,
            "two nodes cut off"
        );
        assert_eq!(
            partial_read_at(at, &[fault(&[1], at - RECOVERY_MS + 5, at - RECOVERY_MS + 10)]),
            0,
            "just after its own node's fault"
        );
        assert_eq!(
            partial_read_at(at, &[fault(&[1], at - 3 * RECOVERY_MS, at - 2 * RECOVERY_MS)]),
            1,
            "long after its own node's fault"
        );
        assert_eq!(
            partial_read_at(at, &[fault(&[1], at - 5, i64::MAX)]),
            0,
            "a fault still on"
        );
    }

    #[test]
    fn the_checker_finds_each_kind_of_violation() {
        let writes = Writes::from(vec![write(1, 1.0, true, 10), write(2, 2.0, false, 20)]);
        assert_eq!(violations(&writes, &[(1, 1.0)], 15, false), 0);
        assert_eq!(violations(&writes, &[(1, 1.0), (2, 2.0)], 25, false), 0);
        // A lost acknowledged write, unmarked.
        assert_eq!(violations(&writes, &[], 40, false), 1);
        // Marked partial: allowed.
        assert_eq!(violations(&writes, &[], 40, true), 0);
        // A value no one wrote, a value other than the one written, and a
        // sample returned before its write was invoked.
        assert_eq!(violations(&writes, &[(1, 1.0), (3, 3.0)], 50, false), 1);
        assert_eq!(violations(&writes, &[(1, 7.0)], 50, false), 2);
        assert_eq!(violations(&writes, &[(2, 2.0)], 5, false), 1);
        // Before the write completed, missing it is fine.
        assert_eq!(violations(&writes, &[], 5, false), 0);
    }

    #[test]
    fn a_read_owes_only_the_acknowledged_samples_of_its_window() {
        let writes = Writes::from(
            (1..=100)
                .map(|s| write(s * 1000, s as f64, true, s * 1000 + 5))
                .collect::<Vec<_>>(),
        );
        // Ten seconds back from 100 s: samples 91 to 100.
        let (read, _) = read_of(&[], 100_010, 10, false);
        let owed: Vec<i64> = writes
            .owed_to(read.invoked_ms, read.at_ms, read.window_s)
            .map(|w| w.t)
            .collect();
        assert_eq!(owed, (91..=100).rev().map(|s| s * 1000).collect::<Vec<_>>());
        let (read, _) = read_of(&[], 100_010, WHOLE_WINDOW_S, false);
        assert_eq!(writes.owed_to(read.invoked_ms, read.at_ms, read.window_s).count(), 100);
    }

    #[test]
    fn a_saved_history_is_checked_again_alike() {
        let mut history = History {
            writes: Writes::from(vec![write(1, 1.0, true, 10)]),
            ..History::default()
        };
        let (read, samples) = read_of(&[], 40, 1, false);
        record(&mut history, read, Some(samples), false);
        let (read, samples) = read_of(&[(1, 1.0)], 50, 1, false);
        record(&mut history, read, Some(samples), true);
        assert_eq!(history.violations.len(), 1, "{:?}", history.violations);
        assert!(
            history.reads[0].samples.is_some(),
            "a read that broke a guarantee keeps its samples"
        );
        assert!(
            history.final_reads[0].samples.is_none(),
            "a read that kept them keeps none"
        );
        let saved = serde_json::to_string(&history).expect("json");
        let again: History = serde_json::from_str(&saved).expect("history");
        assert_eq!(check_again(&again), history.violations);
    }
}
