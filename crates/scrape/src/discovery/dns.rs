//! DNS SD (`dns_sd_configs`), as Prometheus' `discovery/dns` does it: every
//! refresh interval (and once at the start) each name is looked up, all at
//! once, reading resolv.conf anew each time. A name that resolves gives one
//! group, its source the name, with a target per SRV, MX, NS, A or AAAA
//! answer record; a name whose lookup fails gives no group, so the targets it
//! last gave stay. Lookups and failed lookups are counted.

mod client;
mod resolv_conf;

use std::net::Ipv6Addr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use cairn_config::DnsRecordType;
use hickory_proto::rr::{RData, Record, RecordType};
use tokio::sync::mpsc;
use tokio::task::JoinSet;

use super::{ADDRESS_LABEL, LabelSet, TargetGroup};
use crate::metrics::{DiscoveryCounters, inc};
pub use resolv_conf::ResolvConf;

pub const NAME_LABEL: &str = "__meta_dns_name";
pub const SRV_TARGET_LABEL: &str = "__meta_dns_srv_record_target";
pub const SRV_PORT_LABEL: &str = "__meta_dns_srv_record_port";
pub const MX_TARGET_LABEL: &str = "__meta_dns_mx_record_target";
pub const NS_TARGET_LABEL: &str = "__meta_dns_ns_record_target";

/// Refreshing more often than this would be a busy loop, not discovery.
const MIN_REFRESH_INTERVAL: Duration = Duration::from_secs(1);

/// What one `dns_sd_configs` entry asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DnsQuery {
    pub names: Vec<String>,
    pub record_type: DnsRecordType,
    /// The port of A, AAAA, MX and NS targets.
    pub port: i64,
}

/// Where the resolver's settings come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolverSource {
    pub resolv_conf: PathBuf,
    /// The servers' port (53 outside tests).
    pub port: u16,
}

impl Default for ResolverSource {
    fn default() -> Self {
        Self {
            resolv_conf: PathBuf::from("/etc/resolv.conf"),
            port: 53,
        }
    }
}

pub(super) async fn run(
    query: DnsQuery,
    refresh_interval: Duration,
    resolver: ResolverSource,
    counters: Arc<DiscoveryCounters>,
    tx: mpsc::Sender<Vec<TargetGroup>>,
) {
    let query = Arc::new(query);
    loop {
        let groups = refresh(&query, &resolver, &counters).await;
        if tx.send(groups).await.is_err() {
            return;
        }
        tokio::time::sleep(refresh_interval.max(MIN_REFRESH_INTERVAL)).await;
    }
}

/// The groups of the names that resolved.
pub(super) async fn refresh(
    query: &Arc<DnsQuery>,
    resolver: &ResolverSource,
    counters: &DiscoveryCounters,
) -> Vec<TargetGroup> {
    let mut lookups = JoinSet::new();
    for name in query.names.iter().cloned() {
        let query = query.clone();
        let resolver = resolver.clone();
        lookups.spawn(async move {
            let records = lookup(&resolver, &name, query.record_type).await;
            (name, records)
        });
    }
    let mut groups = Vec::new();
    while let Some(done) = lookups.join_next().await {
        let Ok((name, records)) = done else {
            continue;
        };
        inc(&counters.dns_lookups);
        match records {
            Ok(records) => groups.push(TargetGroup {
                targets: targets(&records, &name, query.port),
                source: name,
                labels: LabelSet::new(),
            }),
            Err(e) => {
                inc(&counters.dns_lookup_failures);
                tracing::error!(err = %e, "Error refreshing DNS targets");
            }
        }
    }
    groups
}

async fn lookup(resolver: &ResolverSource, name: &str, record_type: DnsRecordType) -> Result<Vec<Record>, String> {
    // A few hundred bytes from a local file: read in place, like the SD files are.
    let text =
        std::fs::read_to_string(&resolver.resolv_conf).map_err(|e| format!("could not load resolv.conf: {e}"))?;
    let mut conf = ResolvConf::parse(&text);
    conf.port = resolver.port;
    client::lookup(&conf, name, wire_type(record_type)).await
}

fn wire_type(t: DnsRecordType) -> RecordType {
    match t {
        DnsRecordType::Srv => RecordType::SRV,
        DnsRecordType::A => RecordType::A,
        DnsRecordType::Aaaa => RecordType::AAAA,
        DnsRecordType::Mx => RecordType::MX,
        DnsRecordType::Ns => RecordType::NS,
    }
}

/// One target per usable answer record (CNAMEs that lead to them are
/// skipped, anything else is logged and skipped), whatever type was asked.
fn targets(records: &[Record], name: &str, port: i64) -> Vec<LabelSet> {
    let mut out = Vec::new();
    for record in records {
        let mut labels = LabelSet::new();
        let address = match &record.data {
            RData::SRV(srv) => {
                let target = client::presentation(&srv.target);
                let address = join_host_port(target.trim_end_matches('.'), srv.port);
                labels.insert(SRV_TARGET_LABEL.into(), target);
                labels.insert(SRV_PORT_LABEL.into(), srv.port.to_string());
                address
            }
            RData::MX(mx) => {
                let target = client::presentation(&mx.exchange);
                let address = join_host_port(target.trim_end_matches('.'), port);
                labels.insert(MX_TARGET_LABEL.into(), target);
                address
            }
            RData::NS(ns) => {
                let target = client::presentation(&ns.0);
                let address = join_host_port(target.trim_end_matches('.'), port);
                labels.insert(NS_TARGET_LABEL.into(), target);
                address
            }
            RData::A(a) => join_host_port(&a.0.to_string(), port),
            RData::AAAA(aaaa) => join_host_port(&go_ipv6(aaaa.0), port),
            RData::CNAME(_) => continue,
            other => {
                tracing::warn!(record = %other, "Invalid record");
                continue;
            }
        };
        labels.insert(ADDRESS_LABEL.into(), address);
        labels.insert(NAME_LABEL.into(), name.to_string());
        out.push(labels);
    }
    out
}

/// The targets one DNS answer, given as the bytes a server sent, yields
/// for `name`: the path from a DNS server's bytes to targets, for fuzzing.
pub fn targets_from_answer(message: &[u8], name: &str, port: i64) -> Result<Vec<LabelSet>, String> {
    let message = hickory_proto::op::Message::from_vec(message).map_err(|e| e.to_string())?;
    Ok(client::answer_records(message).map_or_else(Vec::new, |records| targets(&records, name, port)))
}

/// `host:port`, bracketing a host with a colon (Go's `net.JoinHostPort`).
fn join_host_port(host: &str, port: impl std::fmt::Display) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// An IPv6 address as Go writes it: IPv4-mapped ones in dotted IPv4 form.
fn go_ipv6(ip: Ipv6Addr) -> String {
    match ip.to_ipv4_mapped() {
        Some(v4) => v4.to_string(),
        None => ip.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use hickory_proto::rr::rdata::{A, AAAA, CNAME, MX, NS, SRV, TXT};
    use hickory_proto::rr::{Name, RData};

    use super::*;

    fn record(data: RData) -> Record {
        Record::from_rdata(Name::from_ascii("q.test.").unwrap(), 60, data)
    }

    fn name(text: &str) -> Name {
        Name::from_ascii(text).unwrap()
    }

    fn labels(pairs: &[(&str, &str)]) -> LabelSet {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn dns_targets_carry_prometheus_labels() {
        let records = [
            record(RData::SRV(SRV::new(0, 10, 9100, name("node1.cairn.test.")))),
            record(RData::SRV(SRV::new(0, 10, 9101, Name::root()))),
            record(RData::MX(MX::new(10, name("mx1.cairn.test.")))),
            record(RData::NS(NS(name("ns1.cairn.test.")))),
            record(RData::A(A::new(127, 0, 0, 11))),
            record(RData::AAAA(AAAA("::1".parse().unwrap()))),
            record(RData::AAAA(AAAA("::ffff:127.0.0.12".parse().unwrap()))),
            record(RData::AAAA(AAAA("2001:db8:0:0:1:0:0:1".parse().unwrap()))),
            record(RData::CNAME(CNAME(name("x.cairn.test.")))),
            record(RData::TXT(TXT::new(vec!["x".into()]))),
        ];
        let got = targets(&records, "web", 80);
        let want = [
            labels(&[
                ("__address__", "node1.cairn.test:9100"),
                (NAME_LABEL, "web"),
                (SRV_TARGET_LABEL, "node1.cairn.test."),
                (SRV_PORT_LABEL, "9100"),
            ]),
            labels(&[
                ("__address__", ":9101"),
                (NAME_LABEL, "web"),
                (SRV_TARGET_LABEL, "."),
                (SRV_PORT_LABEL, "9101"),
            ]),
            labels(&[
                ("__address__", "mx1.cairn.test:80"),
                (NAME_LABEL, "web"),
                (MX_TARGET_LABEL, "mx1.cairn.test."),
            ]),
            labels(&[
                ("__address__", "ns1.cairn.test:80"),
                (NAME_LABEL, "web"),
                (NS_TARGET_LABEL, "ns1.cairn.test."),
            ]),
            labels(&[("__address__", "127.0.0.11:80"), (NAME_LABEL, "web")]),
            labels(&[("__address__", "[::1]:80"), (NAME_LABEL, "web")]),
            labels(&[("__address__", "127.0.0.12:80"), (NAME_LABEL, "web")]),
            labels(&[("__address__", "[2001:db8::1:0:0:1]:80"), (NAME_LABEL, "web")]),
        ];
        assert_eq!(got, want);
        assert_eq!(targets(&[], "web", 80), Vec::<LabelSet>::new());
        assert_eq!(
            targets(&[record(RData::A(A::new(127, 0, 0, 1)))], "a", -1)[0]["__address__"],
            "127.0.0.1:-1"
        );
    }

    /// A failed lookup gives no group for its name (so the manager keeps the
    /// name's last targets) and is counted; one that fails at once for want
    /// of resolv.conf needs no network.
    #[tokio::test]
    async fn dns_failed_lookups_give_no_group_and_are_counted() {
        let dir = tempfile::tempdir().unwrap();
        let query = Arc::new(DnsQuery {
            names: vec!["a".into(), "b".into()],
            record_type: DnsRecordType::Srv,
            port: 0,
        });
        let counters = DiscoveryCounters::default();
        let missing = ResolverSource {
            resolv_conf: dir.path().join("resolv.conf"),
            port: 53,
        };
        assert!(refresh(&query, &missing, &counters).await.is_empty());
        assert_eq!(counters.dns_lookups(), 2);
        assert_eq!(counters.dns_lookup_failures(), 2);

        std::fs::write(dir.path().join("resolv.conf"), "search x.test\n").unwrap();
        assert!(refresh(&query, &missing, &counters).await.is_empty());
        assert_eq!(counters.dns_lookups(), 4);
        assert_eq!(counters.dns_lookup_failures(), 4);
    }

    proptest::proptest! {
        /// Whatever addresses and ports an answer's A, AAAA and SRV
        /// records hold, sent as bytes they become the targets the records
        /// themselves give; bytes past the message's end are an error or
        /// the same answer, never a panic.
        #[test]
        fn dns_answers_read_from_bytes_give_their_records_targets(
            answers in proptest::collection::vec(
                (0u8..3, proptest::array::uniform16(proptest::prelude::any::<u8>()), proptest::prelude::any::<u16>()),
                0..8,
            ),
            port in 0i64..65536,
            tail in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..4),
        ) {
            let records: Vec<Record> = answers
                .iter()
                .map(|(kind, bytes, srv_port)| match kind {
                    0 => record(RData::A(A::new(bytes[0], bytes[1], bytes[2], bytes[3]))),
                    1 => record(RData::AAAA(AAAA(std::net::Ipv6Addr::from(*bytes)))),
                    _ => record(RData::SRV(SRV::new(0, 0, *srv_port, name(&format!("h{}.cairn.test.", bytes[0]))))),
                })
                .collect();
            let mut message = hickory_proto::op::Message::response(7, hickory_proto::op::OpCode::Query);
            message.add_answers(records.clone());
            let mut bytes = message.to_vec().unwrap();
            proptest::prop_assert_eq!(targets_from_answer(&bytes, "q.test", port), Ok(targets(&records, "q.test", port)));
            bytes.extend_from_slice(&tail);
            if let Ok(got) = targets_from_answer(&bytes, "q.test", port) {
                proptest::prop_assert_eq!(got, targets(&records, "q.test", port));
            }
        }
    }
}
