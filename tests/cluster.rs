//! Cluster mode with real processes: `cairn` nodes, a real etcd (Debian's
//! etcd-server), `cairn bench` writing and querying through every node, and
//! a probe writer that records exactly which samples were acknowledged so
//! the test can check that none is lost or doubled. Network partitions use
//! network namespaces (root only; skipped elsewhere, failed under CI).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::common::etcd::Etcd;
use crate::common::netns::Bridge;
use crate::common::s3proxy::{ACCESS_KEY_ID, BUCKET, S3Proxy, SECRET_ACCESS_KEY};
use crate::common::{Client, Server, http_client, now_ms, series};
use serde_json::Value;

/// Probe series written on every round.
const PROBE_SERIES: usize = 8;

/// A cluster under test: etcd and its nodes, each over a directory of its own.
struct TestCluster {
    etcd: Etcd,
    nodes: Vec<Server>,
    dirs: Vec<tempfile::TempDir>,
    rf: usize,
    /// The nodes' `--cluster.secret-file` contents, if they have one.
    secret: Option<String>,
}

impl TestCluster {
    /// `n` nodes on loopback with replication factor `rf`, all in the
    /// ring; `None` when etcd is missing.
    fn start(n: usize, rf: usize) -> Option<Self> {
        let mut cluster = Self::empty(Etcd::start()?, rf);
        for _ in 0..n {
            cluster.add_node("127.0.0.1", Vec::new(), &[]);
        }
        cluster.wait_alive(n);
        Some(cluster)
    }

    fn empty(etcd: Etcd, rf: usize) -> Self {
        Self {
            etcd,
            nodes: Vec::new(),
            dirs: Vec::new(),
            rf,
            secret: None,
        }
    }

    /// Starts one more node, listening on `host`, run under `prefix`.
    fn add_node(&mut self, host: &str, prefix: Vec<String>, extra: &[&str]) {
        let id = format!("node-{}", self.nodes.len());
        self.add_node_as(&id, host, prefix, extra);
    }

    /// [`Self::add_node`], with the node id given.
    fn add_node_as(&mut self, id: &str, host: &str, prefix: Vec<String>, extra: &[&str]) {
        let dir = tempfile::tempdir().expect("tempdir");
        let (rf, etcd) = (self.rf.to_string(), self.etcd.endpoint());
        let mut args = vec![
            "--cluster.etcd-endpoints",
            &etcd,
            "--cluster.node-id",
            id,
            "--cluster.replication-factor",
            &rf,
            "--cluster.lease-ttl",
            "2s",
            "--cluster.peer-timeout",
            "2s",
        ];
        args.extend_from_slice(extra);
        let mut server = Server::new(dir.path(), &args);
        server.host = host.into();
        server.command_prefix = prefix;
        server.restart();
        self.nodes.push(server);
        self.dirs.push(dir);
    }

    /// Every node in the ring, as `node` sees it: `(id, alive)`.
    fn members(&self, node: usize) -> Vec<(String, bool)> {
        self.ring(node)["members"]
            .as_array()
            .expect("members")
            .iter()
            .map(|m| (m["id"].as_str().unwrap().to_string(), m["alive"] == true))
            .collect()
    }

    fn urls(&self) -> Vec<String> {
        self.nodes.iter().filter(|n| n.is_running()).map(|n| n.url()).collect()
    }

    /// The ring as `node` sees it.
    fn ring(&self, node: usize) -> Value {
        let mut request =
            http_client(Duration::from_secs(5)).get(format!("{}/internal/cluster/v1/ring", self.nodes[node].url()));
        if let Some(secret) = &self.secret {
            request = request.header(cairn_cluster::SECRET_HEADER, secret);
        }
        let r = request.send().expect("ring");
        r.json().expect("ring json")
    }

    /// Waits until every running node sees `n` ingesters alive, each at
    /// the address it listens on now.
    fn wait_alive(&self, n: usize) {
        let deadline = Instant::now() + Duration::from_secs(30);
        for (i, node) in self.nodes.iter().enumerate() {
            if !node.is_running() {
                continue;
            }
            loop {
                let ring = self.ring(i);
                // Alive at the address it has now (a restart takes a new port).
                let current = |m: &Value| {
                    let addr = format!("/{}", m["addr"].as_str().unwrap_or_default());
                    self.nodes.iter().any(|n| n.is_running() && n.url().ends_with(&addr))
                };
                let alive = ring["members"]
                    .as_array()
                    .expect("members")
                    .iter()
                    .filter(|m| m["alive"] == true && m["ingester"] == true && current(m))
                    .count();
                if alive == n {
                    break;
                }
                assert!(
                    Instant::now() < deadline,
                    "node {i} sees {alive} alive, not {n}: {ring}"
                );
                std::thread::sleep(Duration::from_millis(100));
            }
        }
    }

    /// Stops the load; checks that the bench saw no failure and that every
    /// node answers every acknowledged probe write. The probe's start and
    /// acknowledged rounds, for further checks.
    fn finish_load(&self, probe: Probe, bench: Bench) -> (i64, Vec<i64>) {
        let start_ms = probe.start_ms;
        let acked = probe.finish();
        bench.finish();
        for url in self.urls() {
            Probe::verify(start_ms, &acked, &Client::new(url), &[]);
        }
        (start_ms, acked)
    }

    fn wait_caught_up(&self, node: usize) {
        let deadline = Instant::now() + Duration::from_secs(60);
        while self.ring(node)["caught_up"] != true {
            assert!(
                Instant::now() < deadline,
                "node {node} did not catch up:\n{}",
                self.nodes[node].log()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

/// Writes rounds of [`PROBE_SERIES`] samples through the nodes in turn,
/// and records which rounds were acknowledged.
struct Probe {
    urls: Arc<Mutex<Vec<String>>>,
    acked: Arc<Mutex<Vec<i64>>>,
    refused: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
    start_ms: i64,
}

const PROBE_STEP_MS: i64 = 100;

impl Probe {
    fn start(urls: Vec<String>) -> Self {
        let urls = Arc::new(Mutex::new(urls));
        let acked = Arc::new(Mutex::new(Vec::new()));
        let refused = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let start_ms = now_ms() - 60_000;
        let thread = {
            let (urls, acked, refused, stop) = (urls.clone(), acked.clone(), refused.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut round = 0i64;
                while !stop.load(Ordering::Relaxed) {
                    let targets = urls.lock().unwrap().clone();
                    let url = &targets[round as usize % targets.len()];
                    let t = start_ms + round * PROBE_STEP_MS;
                    let batch: Vec<_> = (0..PROBE_SERIES)
                        .map(|s| series(&[("__name__", "probe"), ("s", &s.to_string())], &[(t, round as f64)]))
                        .collect();
                    match Client::new(url.clone()).try_write(&batch) {
                        Ok(r) if r.status == 204 => acked.lock().unwrap().push(round),
                        _ => {
                            refused.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                    round += 1;
                    std::thread::sleep(Duration::from_millis(20));
                }
            })
        };
        Self {
            urls,
            acked,
            refused,
            stop,
            thread: Some(thread),
            start_ms,
        }
    }

    fn set_urls(&self, urls: Vec<String>) {
        *self.urls.lock().unwrap() = urls;
    }

    /// Stops writing; the acknowledged rounds.
    fn finish(mut self) -> Vec<i64> {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.take().unwrap().join().unwrap();
        let acked = self.acked.lock().unwrap().clone();
        assert!(acked.len() > 50, "too few acknowledged rounds: {}", acked.len());
        println!(
            "probe: {} rounds acknowledged, {} refused",
            acked.len(),
            self.refused.load(Ordering::Relaxed)
        );
        acked
    }

    /// Checks, through `client`'s range queries, that every acknowledged
    /// round is stored, in each probe series once. `params` are added to
    /// the query (e.g. `partial_response`).
    fn verify(start_ms: i64, acked: &[i64], client: &Client, params: &[(&str, &str)]) {
        let last = *acked.last().expect("acknowledged rounds");
        let (start, end) = (
            crate::common::ms_to_param(start_ms),
            crate::common::ms_to_param(start_ms + last * PROBE_STEP_MS),
        );
        let step = format!("{}", PROBE_STEP_MS as f64 / 1000.0);
        let mut query = vec![("query", "probe"), ("start", &start), ("end", &end), ("step", &step)];
        query.extend_from_slice(params);
        let r = client.get_query("/api/v1/query_range", &query);
        assert_eq!(r.status, 200, "query_range: {}", r.body);
        let result = r.json()["data"]["result"].as_array().expect("matrix").clone();
        assert_eq!(result.len(), PROBE_SERIES, "one series per probe series, each once");
        for series in &result {
            // At the step of a round the value is the round's own sample
            // (an earlier one would carry an earlier round's number).
            let by_t: BTreeMap<i64, f64> = series["values"]
                .as_array()
                .expect("values")
                .iter()
                .map(|p| {
                    let t = (p[0].as_f64().unwrap() * 1000.0).round() as i64;
                    (t, p[1].as_str().unwrap().parse().unwrap())
                })
                .collect();
            for &round in acked {
                let t = start_ms + round * PROBE_STEP_MS;
                assert_eq!(
                    by_t.get(&t),
                    Some(&(round as f64)),
                    "acknowledged round {round} missing from {} read through {}",
                    series["metric"],
                    client.base
                );
            }
        }
    }
}

/// `cairn bench run` against the nodes, in the background.
struct Bench {
    child: Child,
    report: PathBuf,
    _dir: tempfile::TempDir,
}

impl Bench {
    fn start(urls: &[String], duration: &str) -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let report = dir.path().join("report.json");
        let writes: Vec<String> = urls.iter().map(|u| format!("{u}/api/v1/write")).collect();
        let child = Command::new(env!("CARGO_BIN_EXE_cairn"))
            .args([
                "bench",
                "run",
                "--name",
                "cluster",
                "--targets",
                "10",
                "--scrape-interval",
                "2s",
            ])
            .args([
                "--query-interval",
                "2s",
                "--concurrency",
                "2",
                "--quiet",
                "--duration",
                duration,
            ])
            .arg("--write-url")
            .arg(writes.join(","))
            .arg("--query-url")
            .arg(urls.join(","))
            .arg("--report-json")
            .arg(&report)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn cairn bench");
        Self {
            child,
            report,
            _dir: dir,
        }
    }

    /// Waits for the run and checks that every sample was delivered and every query answered.
    fn finish(mut self) {
        let status = self.child.wait().expect("bench wait");
        assert!(status.success(), "cairn bench failed: {status}");
        let report: Value =
            serde_json::from_str(&std::fs::read_to_string(&self.report).expect("report")).expect("report json");
        println!(
            "bench: {} samples delivered, {} retries, {} query rounds",
            report["samples_delivered"], report["retries"], report["query_rounds"]
        );
        assert!(report["samples_delivered"].as_u64().unwrap() > 0);
        assert_eq!(report["samples_failed"], 0, "bench writes failed: {}", report["errors"]);
        let failed: Vec<&Value> = report["queries"]
            .as_array()
            .expect("queries")
            .iter()
            .filter(|q| q["errors"] != 0)
            .collect();
        assert!(failed.is_empty(), "bench queries failed: {failed:?}");
    }
}

/// `rounds` times, on each of `urls`: the probe's series are all there,
/// with no error and no partial-response warning.
fn assert_complete_reads(urls: &[String], rounds: usize) {
    for _ in 0..rounds {
        for url in urls {
            let c = Client::new(url.clone());
            assert_eq!(count(&c, "count(probe)"), Ok(PROBE_SERIES as f64), "via {url}");
        }
        std::thread::sleep(Duration::from_millis(300));
    }
}

/// Series frames crossed between the nodes compressed. Uncompressed, a
/// sample takes 16 bytes and its series' labels about 100 more in a write
/// (one sample a series), which a select answer spreads over a few samples.
fn assert_compressed_frames(cluster: &TestCluster) {
    for (route, limit) in [("write", 32.0), ("select", 10.0)] {
        let (mut bytes, mut samples) = (0.0, 0.0);
        for node in cluster.nodes.iter().filter(|n| n.is_running()) {
            let of = |name: &str| {
                node.client()
                    .metric(&format!("{name}{{route=\"{route}\"}}"))
                    .unwrap_or_else(|| panic!("no {name} on {}", node.url()))
            };
            bytes += of("cairn_cluster_frame_bytes_total");
            samples += of("cairn_cluster_frame_samples_total");
        }
        let per_sample = bytes / samples;
        println!("{route}: {samples} samples between nodes in {bytes} bytes, {per_sample:.2} bytes a sample");
        assert!(samples > 0.0, "no {route} frames counted");
        assert!(per_sample < limit, "{route} frames take {per_sample:.2} bytes a sample");
    }
    // Storing peers' writes counts as ingestion's CPU.
    let store_cpu: f64 = cluster
        .nodes
        .iter()
        .filter(|n| n.is_running())
        .filter_map(|n| n.client().metric("cairn_cluster_peer_write_cpu_seconds_total"))
        .sum();
    assert!(store_cpu > 0.0, "no CPU counted for storing peers' writes");
}

fn count(client: &Client, query: &str) -> Result<f64, String> {
    let r = client.get_query("/api/v1/query", &[("query", query)]);
    if r.status != 200 {
        return Err(r.body);
    }
    let v = r.json();
    if v.get("warnings").is_some() {
        return Err(format!("warnings: {}", v["warnings"]));
    }
    Ok(v["data"]["result"][0]["value"][1]
        .as_str()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0.0))
}

#[test]
fn a_killed_ingester_loses_no_acknowledged_write_and_catches_up() {
    let Some(mut cluster) = TestCluster::start(3, 3) else {
        return;
    };
    let bench = Bench::start(&cluster.urls(), "25s");
    let probe = Probe::start(cluster.urls());
    std::thread::sleep(Duration::from_secs(4));

    cluster.nodes[1].kill9();
    probe.set_urls(cluster.urls());
    // With one of three owners down every read is still complete, on every node.
    assert_complete_reads(&cluster.urls(), 10);

    cluster.nodes[1].restart();
    probe.set_urls(cluster.urls());
    cluster.wait_alive(3);
    cluster.wait_caught_up(1);
    std::thread::sleep(Duration::from_secs(2));
    let (start_ms, acked) = cluster.finish_load(probe, bench);
    assert_compressed_frames(&cluster);

    // The node that was down caught up: alone, it holds every acknowledged write.
    cluster.nodes[0].kill9();
    cluster.nodes[2].kill9();
    let alone = cluster.nodes[1].client();
    let r = alone.get_query("/api/v1/query", &[("query", "count(probe)")]);
    assert_eq!(r.status, 503, "two of three owners down: not complete ({})", r.body);
    Probe::verify(start_ms, &acked, &alone, &[("partial_response", "true")]);
}

#[test]
fn a_partitioned_node_takes_no_share_and_writes_keep_their_quorum() {
    let Some(mut bridge) = Bridge::create() else { return };
    let Some(etcd) = Etcd::start_on(&bridge.gateway()) else {
        return;
    };
    let mut cluster = TestCluster::empty(etcd, 3);
    let gateway = bridge.gateway();
    cluster.add_node(&gateway, Vec::new(), &[]);
    cluster.add_node(&gateway, Vec::new(), &[]);
    let island = bridge.add_namespace(2);
    cluster.add_node(&island.addr, island.exec_prefix(), &[]);
    cluster.wait_alive(3);
    // Clients on the majority's side of the partition.
    let majority: Vec<String> = cluster.urls()[..2].to_vec();
    let bench = Bench::start(&majority, "25s");
    let probe = Probe::start(majority.clone());
    std::thread::sleep(Duration::from_secs(3));

    island.cut();
    // The island's lease runs out; it stays a member (its share is not
    // given to anyone), counted as down.
    let deadline = Instant::now() + Duration::from_secs(20);
    while cluster.members(0)
        != [
            ("node-0".into(), true),
            ("node-1".into(), true),
            ("node-2".into(), false),
        ]
    {
        assert!(Instant::now() < deadline, "ring: {:?}", cluster.members(0));
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_complete_reads(&majority, 5);
    // The island cannot acknowledge a write by itself: no quorum there.
    let refused = Command::new("ip")
        .args([
            "netns",
            "exec",
            &island.name,
            "curl",
            "-s",
            "-m",
            "20",
            "-o",
            "/dev/null",
            "-w",
            "%{http_code}",
        ])
        .args([
            "--data-binary",
            "probe_island 1",
            &format!("{}/api/v1/import/prometheus", cluster.nodes[2].url()),
        ])
        .output()
        .expect("curl in the namespace");
    assert_eq!(String::from_utf8_lossy(&refused.stdout), "503", "a write on the island");
    std::thread::sleep(Duration::from_secs(2));

    island.heal();
    cluster.wait_alive(3);
    cluster.wait_caught_up(2);
    let (start_ms, acked) = cluster.finish_load(probe, bench);
    // The island caught up on what was written while it was cut off.
    println!("{}", cluster.nodes[2].log());
    cluster.nodes[0].kill9();
    cluster.nodes[1].kill9();
    Probe::verify(
        start_ms,
        &acked,
        &cluster.nodes[2].client(),
        &[("partial_response", "true")],
    );
}

#[test]
fn nodes_join_and_leave_while_writes_and_reads_go_on() {
    let Some(mut cluster) = TestCluster::start(3, 3) else {
        return;
    };
    // The load goes to the nodes that stay: the first one is killed and
    // restarted to leave, and a request to it meanwhile fails to connect.
    let bench = Bench::start(&cluster.urls()[1..], "30s");
    let probe = Probe::start(cluster.urls());
    std::thread::sleep(Duration::from_secs(3));
    let ring_reads = |cluster: &TestCluster| [1, 2].map(|node| cluster.ring(node)["ring_reads"].as_u64());

    // A fourth node takes a share of the ring; reads stay complete.
    let reads_before = ring_reads(&cluster);
    cluster.add_node("127.0.0.1", Vec::new(), &["--cluster.leave-on-shutdown"]);
    cluster.wait_alive(4);
    // The others saw it through their watch on etcd, not by reading the ring again.
    assert_eq!(ring_reads(&cluster), reads_before);
    probe.set_urls(cluster.urls());
    assert_complete_reads(&cluster.urls(), 5);

    // The first node leaves for good: it hands its series to their owners.
    cluster.nodes[0].extra_args.push("--cluster.leave-on-shutdown".into());
    let node0 = cluster.nodes.remove(0);
    let mut node0 = node0;
    let leaving = std::thread::spawn(move || {
        // Restarted with the flag (a leave is decided at shutdown).
        node0.kill9();
        node0.restart();
        node0.terminate(Duration::from_secs(60));
        node0
    });
    let node0 = leaving.join().expect("leave");
    println!("{}", node0.log());
    assert!(!node0.log().contains("handoff failed"), "{}", node0.log());
    probe.set_urls(cluster.urls());
    let deadline = Instant::now() + Duration::from_secs(20);
    while cluster.members(0).len() != 3 {
        assert!(Instant::now() < deadline, "ring: {:?}", cluster.members(0));
        std::thread::sleep(Duration::from_millis(100));
    }
    cluster.wait_alive(3);
    assert_complete_reads(&cluster.urls(), 5);

    cluster.finish_load(probe, bench);
}

/// The members of `tenant`'s shard of `size` among ingesters `ids`, as
/// every node computes it.
fn shard_of(ids: &[String], tenant: &str, size: usize) -> Vec<String> {
    let members = ids
        .iter()
        .map(|id| cairn_cluster::ring::Member {
            id: id.clone(),
            addr: String::new(),
            zone: String::new(),
            ingester: true,
            compactor: false,
            queries: true,
            monitors_from_ms: None,
            state: cairn_cluster::ring::NodeState::Active,
            reads_compressed_frames: true,
        })
        .collect();
    let ring = Arc::new(cairn_cluster::ring::Ring::new(members, &[], false));
    let shard = ring.for_tenant(tenant, size);
    (0..ring.members().len())
        .filter(|&i| shard.has_tokens(i))
        .map(|i| ring.member(i).id.clone())
        .collect()
}

/// The ingesters a node's reads asked per read since `before` (a
/// `(reads, ingesters)` pair of its counters).
fn fan_out_since(client: &Client, before: (f64, f64)) -> f64 {
    let reads = client.metric("cairn_cluster_read_fan_outs_total").unwrap_or(0.0) - before.0;
    let asked = client
        .metric("cairn_cluster_read_fan_out_ingesters_total")
        .unwrap_or(0.0)
        - before.1;
    assert!(reads > 0.0, "no reads fanned out");
    asked / reads
}

fn fan_out_counters(client: &Client) -> (f64, f64) {
    (
        client.metric("cairn_cluster_read_fan_outs_total").unwrap_or(0.0),
        client
            .metric("cairn_cluster_read_fan_out_ingesters_total")
            .unwrap_or(0.0),
    )
}

#[test]
fn a_tenants_series_and_reads_stay_on_its_shard_and_survive_a_shard_change() {
    let Some(etcd) = Etcd::start() else {
        return;
    };
    let tenant = cairn_storage::TenantId::default_tenant();
    let limits = tempfile::NamedTempFile::new().expect("limits file");
    std::fs::write(limits.path(), format!("tenants:\n  {tenant}:\n    shard_size: 3\n")).expect("limits");
    let limits_path = limits.path().display().to_string();
    let flags = ["--tenants.limits-file", limits_path.as_str()];
    let mut cluster = TestCluster::empty(etcd, 3);
    for _ in 0..5 {
        cluster.add_node("127.0.0.1", Vec::new(), &flags);
    }
    cluster.wait_alive(5);
    let ids: Vec<String> = (0..5).map(|i| format!("node-{i}")).collect();
    let shard = shard_of(&ids, tenant.as_str(), 3);
    assert_eq!(shard.len(), 3);

    let probe = Probe::start(cluster.urls());
    std::thread::sleep(Duration::from_secs(3));
    // Only the shard registered as holding the tenant's series, and only
    // its members took peers' writes.
    let holders = |cluster: &TestCluster| -> Vec<String> {
        let ring = cluster.ring(0);
        let held = ring["holders"][tenant.as_str()].as_array().cloned().unwrap_or_default();
        held.iter().map(|v| v.as_str().unwrap().to_string()).collect()
    };
    assert_eq!(holders(&cluster), shard);
    for (i, id) in ids.iter().enumerate() {
        let body = cluster.nodes[i].client().get("/metrics").body;
        let written = body
            .lines()
            .find_map(|l| l.strip_prefix("cairn_cluster_frame_samples_total{route=\"write\"} "))
            .and_then(|v| v.trim().parse::<f64>().ok())
            .unwrap_or(0.0);
        assert_eq!(
            written > 0.0,
            shard.contains(id),
            "{id}: {written} samples from peers' writes"
        );
    }
    // Reads through every node ask the shard only.
    for node in &cluster.nodes {
        let client = node.client();
        let before = fan_out_counters(&client);
        for _ in 0..3 {
            assert!(count(&client, "count(probe)").is_ok());
        }
        assert_eq!(fan_out_since(&client, before), 3.0);
    }

    // A sixth ingester that enters the shard pushes one member out; that
    // member keeps what it stored and reads still ask it.
    let joiner = (5..200)
        .map(|i| format!("node-{i}"))
        .find(|id| {
            let mut all = ids.clone();
            all.push(id.clone());
            shard_of(&all, tenant.as_str(), 3).contains(id)
        })
        .expect("an id that enters the shard");
    let mut all = ids.clone();
    all.push(joiner.clone());
    let new_shard = shard_of(&all, tenant.as_str(), 3);
    let pushed_out: Vec<&String> = shard.iter().filter(|id| !new_shard.contains(id)).collect();
    assert_eq!(pushed_out.len(), 1, "{shard:?} -> {new_shard:?}");
    cluster.add_node_as(&joiner, "127.0.0.1", Vec::new(), &flags);
    cluster.wait_alive(6);
    probe.set_urls(cluster.urls());
    std::thread::sleep(Duration::from_secs(3));
    let mut want: Vec<String> = shard.iter().chain([&joiner]).cloned().collect();
    want.sort();
    assert_eq!(holders(&cluster), want);
    let client = cluster.nodes[0].client();
    let before = fan_out_counters(&client);
    assert!(count(&client, "count(probe)").is_ok());
    assert_eq!(
        fan_out_since(&client, before),
        4.0,
        "the new shard and the member it pushed out"
    );

    let start_ms = probe.start_ms;
    let acked = probe.finish();
    for url in cluster.urls() {
        Probe::verify(start_ms, &acked, &Client::new(url), &[]);
    }
}

#[test]
fn an_ingester_holding_none_of_a_tenants_series_drops_its_holder_key_and_takes_it_again_on_write() {
    let Some(etcd) = Etcd::start() else {
        return;
    };
    let mut cluster = TestCluster::empty(etcd, 3);
    for _ in 0..3 {
        cluster.add_node("127.0.0.1", Vec::new(), &["--cluster.compaction-interval", "1s"]);
    }
    cluster.wait_alive(3);
    let holders = |cluster: &TestCluster| -> Vec<String> {
        let held = cluster.ring(0)["holders"]["team-h"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        held.iter().map(|v| v.as_str().unwrap().to_string()).collect()
    };
    let wait_for = |cluster: &TestCluster, want: &[&str]| {
        let deadline = Instant::now() + Duration::from_secs(20);
        while holders(cluster) != want {
            assert!(
                Instant::now() < deadline,
                "holders {:?}, want {want:?}; node-0: {}",
                holders(cluster),
                cluster.nodes[0].log()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    };
    let client = Client::for_tenant(cluster.nodes[0].url(), "team-h");
    let write = |t: i64| client.write(&[series(&[("__name__", "held"), ("s", "1")], &[(t, 1.0)])]);
    write(now_ms());
    wait_for(&cluster, &["node-0", "node-1", "node-2"]);
    // Other tenants' data (the default tenant's) does not keep it.
    Client::new(cluster.nodes[0].url()).write(&[series(&[("__name__", "other")], &[(now_ms(), 1.0)])]);

    // Nothing of the tenant left to read anywhere: every node drops its key.
    let r = client.post_form("/api/v1/admin/tsdb/delete_series", &[("match[]", "{__name__=~\".+\"}")]);
    assert_eq!(r.status, 204, "{}", r.body);
    wait_for(&cluster, &[]);

    // The next write registers the owners again, before they store it.
    write(now_ms());
    wait_for(&cluster, &["node-0", "node-1", "node-2"]);
    assert_eq!(count(&client, "count(held)"), Ok(1.0));
}

#[test]
fn the_cluster_keeps_serving_while_etcd_restarts() {
    let Some(mut cluster) = TestCluster::start(3, 3) else {
        return;
    };
    let bench = Bench::start(&cluster.urls(), "25s");
    let probe = Probe::start(cluster.urls());
    std::thread::sleep(Duration::from_secs(3));

    cluster.etcd.stop();
    // Longer than the leases: the nodes go on with the last ring they read.
    for _ in 0..4 {
        assert_complete_reads(&cluster.urls(), 2);
        std::thread::sleep(Duration::from_secs(1));
    }
    cluster.etcd.restart();
    let deadline = Instant::now() + Duration::from_secs(30);
    for node in 0..3 {
        while cluster.ring(node)["registered"] != true {
            assert!(Instant::now() < deadline, "node {node} did not register again");
            std::thread::sleep(Duration::from_millis(100));
        }
    }
    cluster.wait_alive(3);
    assert_complete_reads(&cluster.urls(), 3);
    // Each node's watch broke with etcd and was started again over a new read.
    for node in 0..3 {
        assert!(
            cluster.ring(node)["ring_reads"].as_u64() > Some(1),
            "{}",
            cluster.ring(node)
        );
    }

    cluster.finish_load(probe, bench);
}

#[test]
fn ha_pairs_are_deduplicated_and_fail_over() {
    let Some(etcd) = Etcd::start() else { return };
    let mut cluster = TestCluster::empty(etcd, 3);
    for _ in 0..3 {
        cluster.add_node(
            "127.0.0.1",
            Vec::new(),
            &["--cluster.ha-tracker", "--cluster.ha-failover-timeout", "3s"],
        );
    }
    cluster.wait_alive(3);
    // Two Prometheus replicas of one cluster, each writing through a node of its own.
    let (a, b) = (cluster.nodes[0].client(), cluster.nodes[1].client());
    let sample = |replica: &str, t: i64, v: f64| {
        series(
            &[
                ("__name__", "ha_metric"),
                ("cluster", "eu1"),
                ("__replica__", replica),
                ("job", "node"),
            ],
            &[(t, v)],
        )
    };
    let t0 = now_ms() - 120_000;
    for k in 0..20 {
        a.write(&[sample("a", t0 + k * 1000, 1.0)]);
        b.write(&[sample("b", t0 + k * 1000 + 500, 2.0)]);
    }
    let stored = |c: &Client| -> Vec<(i64, f64)> {
        let exported = c.export(&["ha_metric"], Some((t0 - 1, now_ms())));
        assert_eq!(exported.len(), 1, "one series, without the replica label: {exported:?}");
        assert_eq!(
            exported[0].labels,
            crate::common::lmap(&[("__name__", "ha_metric"), ("cluster", "eu1"), ("job", "node")])
        );
        exported[0].samples.iter().map(|s| (s.t, s.v)).collect()
    };
    let first = stored(&cluster.nodes[2].client());
    assert_eq!(first.len(), 20, "only the elected replica's samples: {first:?}");
    assert!(
        first.iter().all(|&(_, v)| v == 1.0),
        "replica a was elected first: {first:?}"
    );
    let rejected = b.get("/metrics").body;
    assert!(
        rejected
            .lines()
            .any(|l| l.contains("reason=\"ha_replica\"") && !l.ends_with(" 0")),
        "the dropped samples are counted"
    );

    // Replica a goes silent; after the failover timeout replica b is elected.
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut k = 20;
    loop {
        b.write(&[sample("b", t0 + k * 1000 + 500, 2.0)]);
        k += 1;
        if stored(&cluster.nodes[2].client()).iter().any(|&(_, v)| v == 2.0) {
            break;
        }
        assert!(Instant::now() < deadline, "replica b was never elected");
        std::thread::sleep(Duration::from_millis(200));
    }
    let after = stored(&cluster.nodes[0].client());
    assert!(after[..20].iter().all(|&(_, v)| v == 1.0), "the past is kept as it was");
}

/// The flags of a node whose cluster shares a bucket in the S3 server at
/// `endpoint`, with every interval short.
fn shared_bucket_args(endpoint: &str) -> Vec<String> {
    [
        "--storage.object-store.url",
        &format!("s3://{BUCKET}/cluster"),
        "--storage.object-store.endpoint",
        endpoint,
        "--storage.object-store.region",
        "us-east-1",
        "--storage.object-store.access-key-id",
        ACCESS_KEY_ID,
        "--storage.object-store.secret-access-key",
        SECRET_ACCESS_KEY,
        "--storage.settle-time",
        "1s",
        "--storage.flush-interval",
        "1s",
        "--storage.object-store.refresh-interval",
        "1s",
        "--cluster.compaction-interval",
        "1s",
    ]
    .map(String::from)
    .to_vec()
}

/// The bucket of [`shared_bucket_args`], as the test reads it.
fn shared_bucket(endpoint: &str) -> Arc<cairn_bucket::Bucket> {
    Arc::new(
        cairn_bucket::Bucket::open(
            &cairn_bucket::BucketConfig {
                endpoint: Some(endpoint.to_string()),
                region: Some("us-east-1".into()),
                access_key_id: Some(ACCESS_KEY_ID.into()),
                secret_access_key: Some(SECRET_ACCESS_KEY.into()),
                ..cairn_bucket::BucketConfig::new(format!("s3://{BUCKET}/cluster"))
            },
            tempfile::tempdir().unwrap().path(),
            0,
        )
        .unwrap(),
    )
}

/// Waits until each of the first `ingesters` nodes uploaded a part of each of `days`.
fn wait_for_uploads(bucket: &cairn_bucket::Bucket, cluster: &TestCluster, ingesters: usize, days: &[cairn_tsdb::Day]) {
    let deadline = Instant::now() + Duration::from_secs(90);
    for node in 0..ingesters {
        let prefix = format!("nodes/node-{node}");
        while parts_of(bucket, &prefix, days)
            .iter()
            .map(|p| p.key.split('/').find_map(cairn_tsdb::Day::parse))
            .collect::<std::collections::BTreeSet<_>>()
            .len()
            < days.len()
        {
            assert!(
                Instant::now() < deadline,
                "node {node} did not upload every day:\n{}",
                cluster.nodes[node].log()
            );
            std::thread::sleep(Duration::from_millis(250));
        }
    }
}

/// The parts of `days` below `prefix` of the bucket.
fn parts_of(bucket: &cairn_bucket::Bucket, prefix: &str, days: &[cairn_tsdb::Day]) -> Vec<cairn_bucket::ObjectInfo> {
    let dates: Vec<String> = days.iter().map(ToString::to_string).collect();
    bucket
        .list(prefix)
        .unwrap()
        .into_iter()
        .filter(|o| o.key.ends_with(".cpart") && dates.iter().any(|d| o.key.contains(&format!("/{d}/"))))
        .collect()
}

/// The samples the parts of `days` below `prefix` hold, all told.
fn samples_in(bucket: &Arc<cairn_bucket::Bucket>, prefix: &str, days: &[cairn_tsdb::Day]) -> u64 {
    parts_of(bucket, prefix, days)
        .into_iter()
        .map(|object| {
            cairn_tsdb::Part::open_object(bucket.clone(), object)
                .unwrap()
                .meta()
                .samples
        })
        .sum()
}

#[test]
fn compactors_share_the_days_and_one_killed_mid_job_leaves_each_sample_once() {
    let Some(server) = S3Proxy::start() else {
        return;
    };
    let Some(etcd) = Etcd::start() else { return };
    let mut cluster = TestCluster::empty(etcd, 2);
    let endpoint = server.endpoint();
    let bucket_args = shared_bucket_args(&endpoint);
    let bucket_args: Vec<&str> = bucket_args.iter().map(String::as_str).collect();
    for _ in 0..2 {
        cluster.add_node("127.0.0.1", Vec::new(), &bucket_args);
    }
    cluster.wait_alive(2);
    let mut compactor_args = bucket_args.clone();
    compactor_args.extend(["--cluster.role", "compact"]);
    cluster.add_node_as("compactor-a", "127.0.0.1", Vec::new(), &compactor_args);
    cluster.add_node_as("compactor-b", "127.0.0.1", Vec::new(), &compactor_args);
    let (a, b) = (2, 3);
    let compactors = ["compactor-a", "compactor-b"];
    for node in [a, b] {
        let deadline = Instant::now() + Duration::from_secs(30);
        while compactors
            .iter()
            .any(|c| !cluster.members(node).contains(&(c.to_string(), true)))
        {
            assert!(Instant::now() < deadline, "the compactors do not see each other");
            std::thread::sleep(Duration::from_millis(100));
        }
    }
    // Days that are over, each its own compaction job.
    const DAYS: i64 = 16;
    const SERIES: i64 = 40;
    const PER_DAY: i64 = 720;
    let today = now_ms() / 86_400_000;
    let days: Vec<cairn_tsdb::Day> = (2..2 + DAYS)
        .map(|d| cairn_tsdb::Day::of((today - d) * 86_400_000))
        .collect();
    let writer = cluster.nodes[0].client();
    let write = |days: &[cairn_tsdb::Day]| {
        for day in days {
            let batch: Vec<_> = (0..SERIES)
                .map(|s| {
                    let samples: Vec<(i64, f64)> = (0..PER_DAY)
                        .map(|k| (day.mint() + k * 120_000, (s * 10_000 + k) as f64))
                        .collect();
                    series(&[("__name__", "compacted_days"), ("s", &s.to_string())], &samples)
                })
                .collect();
            writer.write(&batch);
        }
    };
    let bucket = shared_bucket(&endpoint);
    // Waits until the bucket holds each sample of `days` once, in the
    // compactors' copies, and no replica of them.
    let compacted = |cluster: &TestCluster, days: &[cairn_tsdb::Day]| {
        let expected = (days.len() as i64 * SERIES * PER_DAY) as u64;
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            let (left, stored) = (
                parts_of(&bucket, "nodes", days).len(),
                samples_in(&bucket, "compactors", days),
            );
            if left == 0 && stored == expected {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "{left} replica parts left, {stored} samples compacted of {expected}:\n{}\n{}",
                cluster.nodes[a].log(),
                cluster.nodes[b].log()
            );
            std::thread::sleep(Duration::from_millis(250));
        }
    };

    // The first half: the two compactors share the days out, each sample
    // kept once.
    let (first, second) = days.split_at(DAYS as usize / 2);
    write(first);
    compacted(&cluster, first);
    for compactor in compactors {
        assert!(
            !parts_of(&bucket, &format!("compactors/{compactor}"), first).is_empty(),
            "{compactor} compacted none of the first days"
        );
    }

    // The second half, two days at a time: as soon as a compactor has
    // begun a day, it is killed, at once or a little later (wherever its
    // job then is), and comes back only once its lease has run out, so the
    // other takes the day over from there.
    let busy = |server: &Server| {
        let log = server.log();
        let last = |line: &str| log.rfind(line).map(|i| i + 1).unwrap_or(0);
        last("began compacting a day") > last("compacted a day").max(last("compacting a day failed"))
    };
    let mut killed_mid_job = 0;
    for (wave, after_ms) in second.chunks(2).zip([0, 20, 50, 90]) {
        write(wave);
        wait_for_uploads(&bucket, &cluster, 2, wave);
        let deadline = Instant::now() + Duration::from_secs(60);
        while !parts_of(&bucket, "nodes", wave).is_empty() {
            assert!(Instant::now() < deadline, "the days were not compacted");
            let Some(node) = [a, b].into_iter().find(|&n| busy(&cluster.nodes[n])) else {
                std::thread::sleep(Duration::from_millis(2));
                continue;
            };
            if after_ms == 0 {
                cluster.nodes[node].signal("-STOP");
                killed_mid_job += usize::from(busy(&cluster.nodes[node]));
            } else {
                std::thread::sleep(Duration::from_millis(after_ms));
            }
            cluster.nodes[node].kill9();
            std::thread::sleep(Duration::from_secs(3));
            cluster.nodes[node].restart();
            break;
        }
        compacted(&cluster, wave);
    }
    assert!(
        killed_mid_job > 0,
        "no compactor was ever caught in the middle of a job"
    );

    // However the jobs were cut, the bucket ends up holding each sample
    // once (the first days' copies untouched), and the nodes' replicas are dropped.
    compacted(&cluster, &days);
    let end = crate::common::ms_to_param(days[0].maxt());
    for node in 0..4 {
        let r = cluster.nodes[node].client().get_query(
            "/api/v1/query",
            &[
                ("query", &format!("count_over_time(compacted_days[{}d])", DAYS + 1)),
                ("time", &end),
            ],
        );
        assert_eq!(r.status, 200, "{}", r.body);
        let result = r.json()["data"]["result"].as_array().unwrap().clone();
        assert_eq!(result.len(), SERIES as usize, "node {node}: {}", r.body);
        for series in result {
            assert_eq!(
                series["value"][1],
                (DAYS * PER_DAY).to_string(),
                "node {node}: {series}"
            );
        }
    }
}

#[test]
fn settled_days_go_to_the_shared_bucket_and_the_compactor_keeps_them_once() {
    let Some(server) = S3Proxy::start() else {
        return;
    };
    let Some(etcd) = Etcd::start() else { return };
    let mut cluster = TestCluster::empty(etcd, 3);
    let endpoint = server.endpoint();
    let bucket_args = shared_bucket_args(&endpoint);
    let bucket_args: Vec<&str> = bucket_args.iter().map(String::as_str).collect();
    for _ in 0..3 {
        cluster.add_node("127.0.0.1", Vec::new(), &bucket_args);
    }
    cluster.wait_alive(3);
    // Two days ago: a day that is over, so it settles and goes to the bucket.
    let day = (now_ms() / 86_400_000 - 2) * 86_400_000;
    let batch: Vec<_> = (0..20)
        .map(|s| {
            let samples: Vec<(i64, f64)> = (0..100).map(|k| (day + k * 60_000, (s * 1000 + k) as f64)).collect();
            series(&[("__name__", "settled"), ("s", &s.to_string())], &samples)
        })
        .collect();
    cluster.nodes[0].client().write(&batch);

    // Each node uploads its own replica under a prefix of its own.
    let bucket = shared_bucket(&endpoint);
    wait_for_uploads(&bucket, &cluster, 3, &[cairn_tsdb::Day::of(day)]);
    let want = |c: &Client, params: &[(&str, &str)]| {
        let (start, end) = (
            crate::common::ms_to_param(day),
            crate::common::ms_to_param(day + 99 * 60_000),
        );
        let mut q = vec![("query", "settled"), ("start", &start), ("end", &end), ("step", "60")];
        q.extend_from_slice(params);
        let r = c.get_query("/api/v1/query_range", &q);
        assert_eq!(r.status, 200, "{}", r.body);
        let result = r.json()["data"]["result"].as_array().unwrap().clone();
        assert_eq!(result.len(), 20);
        for series in result {
            let values = series["values"].as_array().unwrap();
            assert_eq!(values.len(), 100, "{}", series["metric"]);
        }
    };
    want(&cluster.nodes[1].client(), &[]);

    // A node that lost its disk comes back from its prefix of the bucket.
    cluster.nodes[2].kill9();
    want(&cluster.nodes[0].client(), &[]);
    for entry in std::fs::read_dir(cluster.dirs[2].path()).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            std::fs::remove_dir_all(path).unwrap();
        } else {
            std::fs::remove_file(path).unwrap();
        }
    }
    cluster.nodes[2].restart();
    cluster.wait_alive(3);
    cluster.nodes[0].kill9();
    cluster.nodes[1].kill9();
    want(&cluster.nodes[2].client(), &[("partial_response", "true")]);

    // The compactor merges the three replicas into one copy, and the nodes
    // then drop theirs: the bucket holds each sample once.
    cluster.nodes[0].restart();
    cluster.nodes[1].restart();
    cluster.wait_alive(3);
    let mut compactor_args = bucket_args.to_vec();
    compactor_args.extend(["--cluster.role", "compact"]);
    cluster.add_node("127.0.0.1", Vec::new(), &compactor_args);
    let days = [cairn_tsdb::Day::of(day)];
    let deadline = Instant::now() + Duration::from_secs(90);
    while !parts_of(&bucket, "nodes", &days).is_empty() || parts_of(&bucket, "compactors", &days).is_empty() {
        assert!(
            Instant::now() < deadline,
            "the replicas were not compacted:\n{}",
            cluster.nodes[3].log()
        );
        std::thread::sleep(Duration::from_millis(250));
    }
    assert_eq!(samples_in(&bucket, "compactors", &days), 20 * 100, "each sample once");
    for node in 0..4 {
        want(&cluster.nodes[node].client(), &[]);
    }
    // A node back from an empty disk reads the old day from the compacted copy.
    cluster.nodes[1].kill9();
    std::fs::remove_dir_all(cluster.dirs[1].path()).unwrap();
    std::fs::create_dir_all(cluster.dirs[1].path()).unwrap();
    cluster.nodes[1].restart();
    cluster.wait_alive(3);
    want(&cluster.nodes[1].client(), &[]);
    // A delete reaches the compacted copy too.
    let r = cluster.nodes[0]
        .client()
        .post_form("/api/v1/admin/tsdb/delete_series", &[("match[]", r#"settled{s="0"}"#)]);
    assert_eq!(
        r.status,
        204,
        "{}\n{}",
        r.body,
        (0..4).map(|n| cluster.nodes[n].log()).collect::<Vec<_>>().join("\n")
    );
    let at = crate::common::ms_to_param(day + 50 * 60_000);
    for node in 0..4 {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let r = cluster.nodes[node]
                .client()
                .get_query("/api/v1/query", &[("query", "count(settled)"), ("time", &at)]);
            if r.json()["data"]["result"][0]["value"][1] == "19" {
                break;
            }
            assert!(Instant::now() < deadline, "node {node}: {}", r.body);
            std::thread::sleep(Duration::from_millis(250));
        }
    }
}

#[test]
fn roles_split_routing_from_storing_and_long_queries_over_query_nodes() {
    let Some(etcd) = Etcd::start() else { return };
    let mut cluster = TestCluster::empty(etcd, 2);
    cluster.add_node("127.0.0.1", Vec::new(), &["--cluster.role", "ingest"]);
    cluster.add_node("127.0.0.1", Vec::new(), &["--cluster.role", "ingest"]);
    cluster.add_node("127.0.0.1", Vec::new(), &["--cluster.role", "write"]);
    cluster.add_node("127.0.0.1", Vec::new(), &["--cluster.role", "query"]);
    cluster.wait_alive(2);
    let t = now_ms() - 10_000;
    cluster.nodes[2]
        .client()
        .write(&[series(&[("__name__", "routed"), ("via", "writer")], &[(t, 42.0)])]);
    let reader = cluster.nodes[3].client();
    assert_eq!(count(&reader, "sum(routed)"), Ok(42.0));
    // Routing nodes are members without a share: they store nothing. A
    // node sees the others' registrations as its watch delivers them.
    let routing = |ring: &Value| {
        ring["members"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["ingester"] == false)
            .count()
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let ring = cluster.ring(3);
        if routing(&ring) == 2 {
            break;
        }
        assert!(Instant::now() < deadline, "{ring}");
        std::thread::sleep(Duration::from_millis(100));
    }
    for node in [2, 3] {
        let stored = std::fs::read_dir(cluster.dirs[node].path()).unwrap().count();
        assert_eq!(stored, 0, "node {node} has no engine, so no files");
    }

    // A long range query is cut over the query nodes, by time or by
    // series, and the joined answer is the whole evaluation's, byte for byte.
    cluster.add_node("127.0.0.1", Vec::new(), &["--cluster.role", "query"]);
    let now = now_ms() / 60_000 * 60_000;
    let history: Vec<_> = (0..6)
        .map(|s| {
            let samples: Vec<(i64, f64)> = (0..=288)
                .map(|k| {
                    (
                        now - 48 * 3_600_000 + k * 600_000,
                        (k * (s + 1)) as f64 + 0.1 * s as f64,
                    )
                })
                .collect();
            series(
                &[
                    ("__name__", "split_counter"),
                    ("s", &s.to_string()),
                    ("g", &(s % 2).to_string()),
                ],
                &samples,
            )
        })
        .collect();
    cluster.nodes[2].client().write(&history);
    let (start, end) = (
        crate::common::ms_to_param(now - 48 * 3_600_000),
        crate::common::ms_to_param(now),
    );
    let http = http_client(Duration::from_secs(30));
    let ask = |query: &str, whole: bool| {
        let mut request = http
            .get(format!("{}/api/v1/query_range", cluster.nodes[3].url()))
            .query(&[("query", query), ("start", &start), ("end", &end), ("step", "300")]);
        if whole {
            request = request.header("x-cairn-peer-request", "1");
        }
        let response = request.send().unwrap();
        let parts = response
            .headers()
            .get("x-cairn-query-parts")
            .map(|v| v.to_str().unwrap().to_string());
        (parts, response.text().unwrap())
    };
    // The last is too short against its window to cut by time: it is cut
    // by series, each node summing whole groups.
    for query in [
        "rate(split_counter[30m])",
        "sum by (g) (rate(split_counter[30m]))",
        "split_counter * 2",
        "sum by (g) (rate(split_counter[2h]))",
    ] {
        let deadline = Instant::now() + Duration::from_secs(10);
        let (parts, split) = loop {
            let (parts, body) = ask(query, false);
            if parts.is_some() || Instant::now() > deadline {
                break (parts, body);
            }
            // Until node 3 has read the new query node from the ring.
            std::thread::sleep(Duration::from_millis(200));
        };
        assert_eq!(parts.as_deref(), Some("2"), "{query}: {split}");
        let (none, whole) = ask(query, true);
        assert_eq!(none, None);
        assert!(whole.contains("\"result\":[{"), "{query}: {whole}");
        assert_eq!(split, whole, "{query}");
    }
    // The second part of each was evaluated by the other query node.
    let asked = cluster.nodes[4]
        .client()
        .metric(r#"cairn_http_requests_total{handler="/api/v1/query_range",code="200"}"#);
    assert!(asked >= Some(4.0), "{asked:?}");
    // An aggregation over another keeps the order of its input: never cut.
    let (parts, _) = ask("sum(sum by (g) (rate(split_counter[30m])))", false);
    assert_eq!(parts, None);

    // What only the receiving node keeps (metric metadata) and what is
    // counted over every series (the TSDB status) answer for the cluster.
    let metadata = cairn_protocols::MetricMetadata {
        metric_family_name: "split_counter".into(),
        metric_type: cairn_protocols::MetricType::Counter,
        help: "Counts for the split test.".into(),
        unit: String::new(),
    };
    let mut body = Vec::new();
    cairn_protocols::remote_write::encode_write_request_with(
        &[],
        &[metadata],
        cairn_protocols::remote_write::ContentEncoding::Snappy,
        &mut body,
    )
    .unwrap();
    assert_eq!(cluster.nodes[2].client().post_write(body, Some("snappy")).status, 204);
    for node in [0, 3, 4] {
        let r = cluster.nodes[node]
            .client()
            .get("/api/v1/metadata?metric=split_counter");
        assert_eq!(
            r.json()["data"]["split_counter"][0]["help"],
            "Counts for the split test.",
            "node {node}: {}",
            r.body
        );
    }
    let status = cluster.nodes[3].client().get("/api/v1/status/tsdb").json();
    assert_eq!(
        status["data"]["headStats"]["numSeries"], 7,
        "6 split_counter and 1 routed: {status}"
    );
    // With an ingester down at RF 2 the series stay complete; with both, a
    // partial answer is allowed only when asked for, and says what is missing.
    cluster.nodes[0].kill9();
    cluster.nodes[1].kill9();
    let series = |params: &str| {
        cluster.nodes[3]
            .client()
            .get(&format!("/api/v1/series?match[]=split_counter{params}"))
    };
    series("").assert_error(503, "unavailable");
    let partial = series("&partial_response=true").json();
    assert_eq!(partial["data"], serde_json::json!([]), "{partial}");
    assert!(
        partial["warnings"][0].as_str().unwrap().contains("partial response"),
        "{partial}"
    );
    cluster.nodes[0].restart();
    cluster.nodes[1].restart();
    cluster.wait_alive(2);
    // A delete through any node reaches every replica.
    let r = reader.post_form("/api/v1/admin/tsdb/delete_series", &[("match[]", "routed")]);
    assert_eq!(r.status, 204, "{}", r.body);
    for node in [0, 1, 2, 3, 4] {
        assert_eq!(
            count(&cluster.nodes[node].client(), "count(routed)"),
            Ok(0.0),
            "node {node}"
        );
    }
}

/// A body of series frames, as a node sends its peers: one sample each.
fn frames_of(names: &[&str], t: i64) -> Vec<u8> {
    let mut writer = cairn_cluster::wire::FramesWriter::default();
    for name in names {
        let mut labels = Vec::new();
        cairn_model::encode_canonical(&mut vec![("__name__", *name)], &mut labels).expect("labels");
        writer.push(&labels, &[t], &[1.0]);
    }
    writer.finish()
}

#[test]
fn peer_frames_truncated_oversized_or_without_the_secret_are_refused_counted_and_never_applied() {
    let Some(etcd) = Etcd::start() else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    let secret = dir.path().join("secret");
    std::fs::write(&secret, "s3cret").expect("secret");
    let secret = secret.to_str().expect("utf-8 path");
    let mut cluster = TestCluster::empty(etcd, 3);
    cluster.secret = Some("s3cret".into());
    for _ in 0..3 {
        // Peers' bodies may be 8 times this: 32 KiB.
        let extra = ["--cluster.secret-file", secret, "--http.max-request-body-bytes", "4096"];
        cluster.add_node("127.0.0.1", Vec::new(), &extra);
    }
    cluster.wait_alive(3);
    let node = cluster.nodes[0].url();
    let http = http_client(Duration::from_secs(10));
    let post = |body: Vec<u8>, secret: Option<&str>| {
        let mut request = http.post(format!("{node}/internal/cluster/v1/write")).body(body);
        if let Some(s) = secret {
            request = request.header(cairn_cluster::SECRET_HEADER, s);
        }
        request.send().expect("post").status().as_u16()
    };
    let t = now_ms();
    assert_eq!(post(frames_of(&["forged"], t), None), 401, "no secret");
    assert_eq!(post(frames_of(&["forged"], t), Some("guess")), 401, "a wrong secret");
    let whole = frames_of(&["truncated_a", "truncated_b"], t);
    assert_eq!(
        post(whole[..whole.len() - 3].to_vec(), Some("s3cret")),
        400,
        "a truncated body"
    );
    assert_eq!(post(b"not frames at all".to_vec(), Some("s3cret")), 400, "garbage");
    let names: Vec<String> = (0..2000).map(|i| format!("oversized_{i:04}")).collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    assert_eq!(post(frames_of(&names, t), Some("s3cret")), 413, "over the body limit");
    assert_eq!(post(frames_of(&["accepted"], t), Some("s3cret")), 200, "a peer's write");

    // Every other internal route refuses a request without the secret, and
    // those that read a body refuse one they cannot read: a delete among them.
    let delete_all = format!(
        r#"{{"mint":0,"maxt":{},"matchers":[{{"name":"__name__","op":"=~","value":".+"}}]}}"#,
        t + 1_000
    );
    let routes = [
        "select",
        "label_names",
        "label_values",
        "delete",
        "settle_writes",
        "tenants",
    ];
    for route in routes {
        let send = |body: &str, secret: Option<&str>| {
            let mut request = http
                .post(format!("{node}/internal/cluster/v1/{route}"))
                .body(body.to_string());
            if let Some(s) = secret {
                request = request.header(cairn_cluster::SECRET_HEADER, s);
            }
            request.send().expect("post").status().as_u16()
        };
        assert_eq!(send(&delete_all, None), 401, "{route} without the secret");
        if !matches!(route, "settle_writes" | "tenants") {
            assert_eq!(send("{not json", Some("s3cret")), 400, "{route} of garbage");
        }
    }
    let ring = http
        .get(format!("{node}/internal/cluster/v1/ring"))
        .send()
        .expect("ring");
    assert_eq!(ring.status().as_u16(), 401, "the ring without the secret");

    // None of the refused bodies left a sample, not even the truncated
    // body's whole first frame; the accepted one did.
    let client = Client::new(node.clone());
    let stored = |selector: &str| client.series(&[selector]).len();
    assert_eq!(stored(r#"{__name__=~"forged|truncated_.+|oversized_.+"}"#), 0);
    assert_eq!(stored("accepted"), 1);
    let refused = |reason: &str| {
        let metrics = client.get("/metrics").body;
        let line = format!("cairn_cluster_peer_requests_refused_total{{reason=\"{reason}\"}} ");
        metrics
            .lines()
            .find_map(|l| l.strip_prefix(&line))
            .and_then(|v| v.trim().parse::<f64>().ok())
    };
    assert_eq!(refused("no_secret"), Some(2.0 + 7.0));
    assert_eq!(refused("malformed"), Some(2.0 + 4.0));
    assert_eq!(refused("too_large"), Some(1.0));
}
