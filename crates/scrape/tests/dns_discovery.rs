//! DNS service discovery against Debian's dnsmasq on a loopback port: the
//! manager publishes a group per name; when dnsmasq stops, and when a
//! server answering garbage takes its place, the groups stay as they were
//! and the failed lookups are counted. tests/dns_sd.rs compares the labels
//! with Prometheus' on port 53.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use cairn_config::DnsRecordType;
use cairn_scrape::discovery::dns::{DnsQuery, ResolverSource};
use cairn_scrape::discovery::{DiscoveryManager, DiscoveryOptions, SdConfig, TargetGroup};

const DNSMASQ: &str = "/usr/sbin/dnsmasq";

struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_udp_port() -> u16 {
    let socket = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    socket.local_addr().unwrap().port()
}

fn addresses(groups: &[TargetGroup]) -> Vec<(String, String)> {
    let mut out: Vec<_> = groups
        .iter()
        .flat_map(|g| g.targets.iter().map(|t| (g.source.clone(), t["__address__"].clone())))
        .collect();
    out.sort();
    out
}

/// Whether something on `127.0.0.1:port` answers a DNS question.
fn answers(port: u16) -> bool {
    let socket = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    socket.set_read_timeout(Some(Duration::from_millis(200))).unwrap();
    let query = b"\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x03web\x05cairn\x04test\x00\x00\x01\x00\x01";
    socket.send_to(query, ("127.0.0.1", port)).is_ok() && socket.recv(&mut [0u8; 512]).is_ok()
}

async fn wait_for(what: &str, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !f() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// dnsmasq serving the test's records on a free port of its own. A port
/// found free may be taken before dnsmasq binds it, and dnsmasq then exits:
/// it is started again on another.
async fn start_dnsmasq(dir: &Path) -> (Killed, u16) {
    for _ in 0..5 {
        let port = free_udp_port();
        let conf = dir.join("dnsmasq.conf");
        std::fs::write(
            &conf,
            format!(
                "port={port}\nlisten-address=127.0.0.1\nbind-interfaces\nno-resolv\nno-hosts\nno-poll\n\
                 local=/cairn.test/\npid-file=\nuser=root\n\
                 srv-host=_s._tcp.cairn.test,node1.cairn.test,9101,0,10\n\
                 host-record=web.cairn.test,127.0.0.31\nhost-record=web.cairn.test,127.0.0.32\n"
            ),
        )
        .unwrap();
        let mut dnsmasq = Killed(
            Command::new(DNSMASQ)
                .arg("--keep-in-foreground")
                .arg(format!("--conf-file={}", conf.display()))
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap(),
        );
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if answers(port) {
                return (dnsmasq, port);
            }
            if dnsmasq.0.try_wait().unwrap().is_some() {
                break;
            }
            assert!(Instant::now() < deadline, "timed out waiting for dnsmasq");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    panic!("dnsmasq exited at start on five ports in a row");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dns_sd_keeps_targets_while_servers_fail() {
    if !Path::new(DNSMASQ).is_file() {
        assert!(std::env::var_os("CI").is_none(), "dnsmasq missing under CI");
        println!("SKIPPED: dnsmasq not installed (apt-get install dnsmasq-base)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (dnsmasq, port) = start_dnsmasq(dir.path()).await;
    // A dead server first: it is skipped, as in Prometheus.
    let resolv_conf = dir.path().join("resolv.conf");
    std::fs::write(
        &resolv_conf,
        "nameserver 127.0.0.2\nnameserver 127.0.0.1\nsearch cairn.test\n",
    )
    .unwrap();
    let options = DiscoveryOptions {
        resolver: ResolverSource { resolv_conf, port },
        ..DiscoveryOptions::default()
    };
    let sd_config = |names: &[&str], record_type, port| SdConfig::Dns {
        query: DnsQuery {
            names: names.iter().map(|n| n.to_string()).collect(),
            record_type,
            port,
        },
        refresh_interval: Duration::from_secs(1),
    };
    let sd = DiscoveryManager::start(
        &[
            sd_config(&["_s._tcp.cairn.test"], DnsRecordType::Srv, 0),
            sd_config(&["web"], DnsRecordType::A, 80),
        ],
        &options,
    );
    let want = vec![
        ("_s._tcp.cairn.test".to_string(), "node1.cairn.test:9101".to_string()),
        ("web".to_string(), "127.0.0.31:80".to_string()),
        ("web".to_string(), "127.0.0.32:80".to_string()),
    ];
    wait_for("the first lookups", || addresses(&sd.groups()) == want).await;
    let counters = options.counters.clone();
    assert_eq!(counters.dns_lookup_failures(), 0);

    drop(dnsmasq);
    let failed = counters.dns_lookup_failures();
    wait_for("failures counted", || counters.dns_lookup_failures() >= failed + 4).await;
    assert_eq!(addresses(&sd.groups()), want, "a failed lookup keeps the targets");

    // A server that answers garbage in dnsmasq's place.
    let socket = Arc::new(tokio::net::UdpSocket::bind(("127.0.0.1", port)).await.unwrap());
    let junk = tokio::spawn(async move {
        let mut buf = [0u8; 1500];
        while let Ok((n, from)) = socket.recv_from(&mut buf).await {
            let mut reply = buf[..n.min(6)].to_vec();
            reply.extend_from_slice(b"\xff\xffnot a dns message");
            let _ = socket.send_to(&reply, from).await;
        }
    });
    let failed = counters.dns_lookup_failures();
    let lookups = counters.dns_lookups();
    wait_for("garbage counted", || counters.dns_lookup_failures() >= failed + 4).await;
    assert!(counters.dns_lookups() >= lookups + 4);
    assert_eq!(addresses(&sd.groups()), want, "garbage keeps the targets");
    junk.abort();
}
