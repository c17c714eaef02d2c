//! DNS service discovery against Prometheus 3.14: Debian's dnsmasq serves
//! SRV, A, AAAA (one IPv4-mapped), MX, NS and CNAME records of a test zone
//! on port 53 of a loopback address; Cairn and Prometheus run with the same
//! configuration, each in its own mount namespace where /etc/resolv.conf
//! names a dead server first and dnsmasq second, with a search domain. Both
//! must discover the same targets (before and after relabelling), follow a
//! change of the records, keep their targets and count failed lookups while
//! dnsmasq is down, and refuse a bad `dns_sd_configs` on reload by name.
//!
//! Needs root (for `unshare --mount` and port 53); CI runs as root.

use std::collections::BTreeMap;
use std::net::UdpSocket;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::peers::{self, Prometheus, in_ci};
use crate::common::{Client, Server};
use serde_json::Value;

const REFRESH: &str = "2s";

/// The zone before the change.
const RECORDS_BEFORE: &str = "\
srv-host=_scrape._tcp.cairn.test,node1.cairn.test,9101,0,10
srv-host=_scrape._tcp.cairn.test,node2.cairn.test,9102,0,10
host-record=node1.cairn.test,127.0.0.21
host-record=node2.cairn.test,127.0.0.22
host-record=web.cairn.test,127.0.0.31
host-record=web.cairn.test,127.0.0.32
host-record=web6.cairn.test,::1
host-record=web6.cairn.test,::ffff:127.0.0.33
cname=alias.cairn.test,web.cairn.test
mx-host=mail.cairn.test,mx1.cairn.test,10
mx-host=mail.cairn.test,mx2.cairn.test,20
";

/// The zone after the change: a SRV target replaced, an address moved, an
/// AAAA, an MX removed, an NS added.
const RECORDS_AFTER: &str = "\
srv-host=_scrape._tcp.cairn.test,node1.cairn.test,9101,0,10
srv-host=_scrape._tcp.cairn.test,node3.cairn.test,9103,0,10
host-record=node1.cairn.test,127.0.0.21
host-record=node3.cairn.test,127.0.0.23
host-record=web.cairn.test,127.0.0.35
host-record=web.cairn.test,127.0.0.32
host-record=web6.cairn.test,::1
cname=alias.cairn.test,web.cairn.test
mx-host=mail.cairn.test,mx1.cairn.test,10
";

const NS_BEFORE: &[&str] = &["ns1.cairn.test", "ns2.cairn.test"];
const NS_AFTER: &[&str] = &["ns1.cairn.test", "ns2.cairn.test", "ns3.cairn.test"];

fn config(bad: bool) -> String {
    let ns_type = if bad { "TXT" } else { "NS" };
    format!(
        r#"global:
  scrape_interval: 1m
alerting:
  alertmanagers:
    - dns_sd_configs:
        - {{names: [web.cairn.test], type: A, port: 9093, refresh_interval: {REFRESH}}}
scrape_configs:
  - job_name: srv
    dns_sd_configs:
      - names: [_scrape._tcp.cairn.test, _scrape._tcp]
        refresh_interval: {REFRESH}
    relabel_configs:
      - {{source_labels: [__meta_dns_srv_record_target], regex: '(.+)\.', target_label: srv_host}}
      - {{source_labels: [__meta_dns_srv_record_port], target_label: srv_port}}
      - {{source_labels: [__meta_dns_name], target_label: dns_name}}
  - job_name: a
    dns_sd_configs:
      - {{names: [web.cairn.test, alias, nothere.cairn.test], type: a, port: 9201, refresh_interval: {REFRESH}}}
    relabel_configs:
      - {{source_labels: [__address__], regex: '127\.0\.0\.32:.*', action: drop}}
      - {{source_labels: [__meta_dns_name], target_label: dns_name}}
  - job_name: aaaa
    dns_sd_configs:
      - {{names: [web6.cairn.test], type: AAAA, port: 9202, refresh_interval: {REFRESH}}}
  - job_name: mx
    dns_sd_configs:
      - {{names: [mail.cairn.test], type: MX, port: 9203, refresh_interval: {REFRESH}}}
    relabel_configs:
      - {{source_labels: [__meta_dns_mx_record_target], target_label: mx}}
  - job_name: ns
    dns_sd_configs:
      - {{names: [zone.cairn.test], type: {ns_type}, port: 9204, refresh_interval: {REFRESH}}}
    relabel_configs:
      - {{source_labels: [__meta_dns_ns_record_target], target_label: ns}}
"#
    )
}

/// A name in DNS wire format, as hex for dnsmasq's `dns-rr`.
fn wire_hex(name: &str) -> String {
    let mut out = String::new();
    for label in name.split('.') {
        out.push_str(&format!("{:02x}", label.len()));
        out.extend(label.bytes().map(|b| format!("{b:02x}")));
    }
    out + "00"
}

/// dnsmasq serving the zone on port 53 of one loopback address, killed however the test ends.
struct Dnsmasq {
    child: Option<Child>,
    bin: PathBuf,
    addr: String,
    dir: tempfile::TempDir,
}

impl Dnsmasq {
    fn new(bin: PathBuf, addr: &str) -> Self {
        Self {
            child: None,
            bin,
            addr: addr.to_string(),
            dir: tempfile::tempdir().expect("tempdir"),
        }
    }

    /// (Re)starts with `records` and NS records for `ns`, and waits until it answers.
    fn start(&mut self, records: &str, ns: &[&str]) {
        self.stop();
        let mut conf = format!(
            "port=53\nlisten-address={}\nbind-interfaces\nno-resolv\nno-hosts\nno-poll\n\
             local=/cairn.test/\npid-file=\nuser=root\n{records}",
            self.addr
        );
        for name in ns {
            conf.push_str(&format!("dns-rr=zone.cairn.test,2,{}\n", wire_hex(name)));
        }
        let path = self.dir.path().join("dnsmasq.conf");
        std::fs::write(&path, conf).expect("write dnsmasq.conf");
        let log = self.dir.path().join("dnsmasq.log");
        let child = Command::new(&self.bin)
            .arg("--keep-in-foreground")
            .arg(format!("--conf-file={}", path.display()))
            .arg(format!("--log-facility={}", log.display()))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start dnsmasq");
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(10);
        while !answers(&self.addr) {
            assert!(
                Instant::now() < deadline,
                "dnsmasq does not answer on {}:53:\n{}",
                self.addr,
                std::fs::read_to_string(&log).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Drop for Dnsmasq {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Whether a server on `addr:53` answers a question for `node1.cairn.test`.
fn answers(addr: &str) -> bool {
    let Ok(socket) = UdpSocket::bind("127.0.0.1:0") else {
        return false;
    };
    let _ = socket.set_read_timeout(Some(Duration::from_millis(200)));
    let mut query = vec![0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0];
    for label in ["node1", "cairn", "test"] {
        query.push(label.len() as u8);
        query.extend_from_slice(label.as_bytes());
    }
    query.extend_from_slice(&[0, 0, 1, 0, 1]);
    if socket.send_to(&query, (addr, 53)).is_err() {
        return false;
    }
    let mut buf = [0u8; 512];
    socket.recv(&mut buf).is_ok_and(|n| n > 12 && buf[..2] == [0x12, 0x34])
}

/// Two loopback addresses whose port 53 is free: one for dnsmasq, one left dead.
fn free_dns_addresses() -> (String, String) {
    let base = 10 + std::process::id() % 200;
    let free: Vec<String> = (0..40)
        .map(|i| format!("127.0.53.{}", (base + i) % 250 + 2))
        .filter(|a| UdpSocket::bind((a.as_str(), 53)).is_ok())
        .take(2)
        .collect();
    assert_eq!(free.len(), 2, "no free port 53 on 127.0.53.0/24");
    (free[0].clone(), free[1].clone())
}

/// The command prefix that runs a program with `resolv_conf` as its /etc/resolv.conf.
fn with_resolv_conf(resolv_conf: &Path) -> Vec<String> {
    [
        "unshare",
        "--mount",
        "--propagation",
        "private",
        "sh",
        "-c",
        r#"mount --bind "$0" /etc/resolv.conf && exec "$@""#,
    ]
    .iter()
    .map(|s| s.to_string())
    .chain([resolv_conf.display().to_string()])
    .collect()
}

/// Whether this process may make mount namespaces (root); under CI it must.
fn can_unshare() -> bool {
    let ok = Command::new("unshare")
        .args(["--mount", "true"])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        assert!(!in_ci(), "unshare --mount fails under CI");
        println!("SKIPPED: unshare --mount needs root");
    }
    ok
}

type Labels = BTreeMap<String, String>;

fn label_map(v: &Value) -> Labels {
    v.as_object()
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
                .collect()
        })
        .unwrap_or_default()
}

/// Active targets as (pool, discovered labels, labels), and dropped ones'
/// discovered labels, sorted.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Targets {
    active: Vec<(String, Labels, Labels)>,
    dropped: Vec<Labels>,
}

fn targets(c: &Client) -> Targets {
    let r = c.get("/api/v1/targets");
    assert_eq!(r.status, 200, "{}", r.body);
    let data = r.json()["data"].clone();
    let mut active: Vec<_> = data["activeTargets"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .map(|t| {
            (
                t["scrapePool"].as_str().unwrap_or_default().to_string(),
                label_map(&t["discoveredLabels"]),
                label_map(&t["labels"]),
            )
        })
        .collect();
    active.sort();
    let mut dropped: Vec<_> = data["droppedTargets"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .map(|t| label_map(&t["discoveredLabels"]))
        .collect();
    dropped.sort();
    Targets { active, dropped }
}

fn alertmanagers(c: &Client) -> Vec<String> {
    let r = c.get("/api/v1/alertmanagers");
    let mut urls: Vec<String> = r.json()["data"]["activeAlertmanagers"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .filter_map(|a| a["url"].as_str().map(String::from))
        .collect();
    urls.sort();
    urls
}

fn counter(c: &Client, name: &str) -> f64 {
    let body = c.get("/metrics").body;
    body.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.trim().parse().ok())
        .unwrap_or_else(|| panic!("{name} missing from /metrics"))
}

fn has(t: &Targets, pool: &str, label: &str, value: &str) -> bool {
    t.active
        .iter()
        .any(|(p, d, _)| p == pool && d.get(label).is_some_and(|v| v == value))
}

/// Waits (bounded) until both agree and `done` holds for them; returns them.
fn converge(cairn: &Client, prom: &Client, what: &str, done: impl Fn(&Targets) -> bool) -> Targets {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let (c, p) = (targets(cairn), targets(prom));
        if c == p && done(&c) {
            return c;
        }
        if Instant::now() > deadline {
            assert_eq!(c, p, "{what}: Cairn (left) and Prometheus (right) differ");
            panic!("{what}: not reached:\n{c:#?}");
        }
        std::thread::sleep(Duration::from_millis(250));
    }
}

#[test]
fn dns_sd_matches_prometheus() {
    let Some(dnsmasq_bin) = peers::require("dnsmasq", "dnsmasq-base") else {
        return;
    };
    let Some(prometheus_bin) = peers::prometheus_3() else {
        return;
    };
    if !can_unshare() {
        return;
    }
    let (dns_addr, dead_addr) = free_dns_addresses();
    let mut dnsmasq = Dnsmasq::new(dnsmasq_bin, &dns_addr);
    dnsmasq.start(RECORDS_BEFORE, NS_BEFORE);

    let dir = tempfile::tempdir().expect("tempdir");
    let resolv_conf = dir.path().join("resolv.conf");
    std::fs::write(
        &resolv_conf,
        format!("nameserver {dead_addr}\nnameserver {dns_addr}\nsearch cairn.test\noptions ndots:1\n"),
    )
    .expect("write resolv.conf");
    let config_path = dir.path().join("prometheus.yml");
    std::fs::write(&config_path, config(false)).expect("write config");

    // Prometheus through a wrapper that enters the namespace first.
    let wrapper = dir.path().join("prometheus-in-ns.sh");
    let prefix = with_resolv_conf(&resolv_conf);
    let quoted: Vec<String> = prefix
        .iter()
        .map(|a| format!("'{}'", a.replace('\'', r"'\''")))
        .collect();
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\nexec {} '{}' \"$@\"\n",
            quoted.join(" "),
            prometheus_bin.display()
        ),
    )
    .expect("write wrapper");
    Command::new("chmod").arg("+x").arg(&wrapper).status().expect("chmod");
    let prometheus = Prometheus::start(&wrapper, &config(false), &["--web.enable-lifecycle"]);
    let prom = Client::new(prometheus.url());

    let data_dir = tempfile::tempdir().expect("tempdir");
    let config_arg = config_path.display().to_string();
    let mut server = Server::new(
        data_dir.path(),
        &["--config.file", &config_arg, "--web.enable-lifecycle"],
    );
    server.command_prefix = prefix;
    server.restart();
    let cairn = server.client();

    // Every record type, through the search domain and past the dead server.
    let before = converge(&cairn, &prom, "the first discovery", |t| {
        t.active.len() == 12 && has(t, "ns", "__meta_dns_ns_record_target", "ns2.cairn.test.")
    });
    for (pool, label, value) in [
        ("srv", "__meta_dns_srv_record_target", "node2.cairn.test."),
        ("srv", "__meta_dns_name", "_scrape._tcp"),
        ("srv", "__address__", "node1.cairn.test:9101"),
        ("a", "__meta_dns_name", "alias"),
        ("aaaa", "__address__", "[::1]:9202"),
        ("aaaa", "__address__", "127.0.0.33:9202"),
        ("mx", "__meta_dns_mx_record_target", "mx2.cairn.test."),
        ("ns", "__address__", "ns1.cairn.test:9204"),
    ] {
        assert!(has(&before, pool, label, value), "{pool} {label}={value}:\n{before:#?}");
    }
    assert!(!before.dropped.is_empty(), "the relabelling drops 127.0.0.32");
    let am = alertmanagers(&cairn);
    assert_eq!(am, alertmanagers(&prom));
    assert_eq!(am.len(), 2, "{am:?}");

    // New records: both follow within a few refresh intervals.
    dnsmasq.start(RECORDS_AFTER, NS_AFTER);
    let after = converge(&cairn, &prom, "the changed records", |t| {
        has(t, "srv", "__meta_dns_srv_record_target", "node3.cairn.test.")
            && !has(t, "srv", "__meta_dns_srv_record_target", "node2.cairn.test.")
            && has(t, "ns", "__meta_dns_ns_record_target", "ns3.cairn.test.")
            && !has(t, "mx", "__meta_dns_mx_record_target", "mx2.cairn.test.")
            && !has(t, "aaaa", "__address__", "127.0.0.33:9202")
            && has(t, "a", "__address__", "127.0.0.35:9201")
    });
    assert_ne!(before, after);

    // dnsmasq down: the targets stay and failed lookups are counted.
    let failures = "prometheus_sd_dns_lookup_failures_total";
    let lookups = "prometheus_sd_dns_lookups_total";
    let (cairn_failed, prom_failed) = (counter(&cairn, failures), counter(&prom, failures));
    let cairn_lookups = counter(&cairn, lookups);
    dnsmasq.stop();
    let deadline = Instant::now() + Duration::from_secs(30);
    while counter(&cairn, failures) < cairn_failed + 10.0 || counter(&prom, failures) < prom_failed + 10.0 {
        assert!(Instant::now() < deadline, "failed lookups not counted");
        std::thread::sleep(Duration::from_millis(250));
    }
    assert!(counter(&cairn, lookups) >= cairn_lookups + 10.0);
    // Past Prometheus' five-second batching of discovery updates.
    std::thread::sleep(Duration::from_secs(6));
    assert_eq!(targets(&cairn), after, "Cairn kept its targets");
    assert_eq!(targets(&prom), after, "Prometheus kept its targets");

    // A bad dns_sd_configs is refused on reload by both; the targets stay.
    std::fs::write(&config_path, config(true)).expect("write config");
    std::fs::write(prometheus.config_path(), config(true)).expect("write config");
    for (who, c) in [("cairn", &cairn), ("prometheus", &prom)] {
        let r = c.post_form("/-/reload", &[]);
        assert_eq!(r.status, 500, "{who}: {}", r.body);
        assert!(r.body.contains("invalid DNS-SD records type TXT"), "{who}: {}", r.body);
    }
    assert_eq!(targets(&cairn), after);
}
