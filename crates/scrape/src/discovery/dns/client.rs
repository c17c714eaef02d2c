//! The DNS client of DNS SD, following Prometheus' `discovery/dns`:
//! each name of the search list is asked of each server in resolv.conf's
//! order; a server's answer counts only if it is NOERROR or NXDOMAIN, and
//! the first NOERROR answer of any name wins. If every name got NXDOMAIN the
//! lookup succeeds with no records; if some name got no usable answer from
//! any server it fails, so the caller keeps what it had.
//!
//! hickory-proto encodes and decodes the messages. Its resolver
//! (hickory-resolver) is not used: it orders servers by their past
//! latency, retries and caches, and treats NXDOMAIN and search domains its
//! own way, so its targets would differ from Prometheus' for the same
//! resolv.conf.

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use hickory_proto::op::{Edns, Message, Query, ResponseCode};
use hickory_proto::rr::{Name, Record, RecordType};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpStream, UdpSocket};

use super::resolv_conf::ResolvConf;

/// How long one server may take to answer (miekg/dns' default, which Prometheus keeps).
const EXCHANGE_TIMEOUT: Duration = Duration::from_secs(2);
/// The UDP payload size advertised with EDNS(0).
const EDNS_PAYLOAD: u16 = 4096;
/// The largest message without EDNS(0).
const MIN_MESSAGE: usize = 512;

/// The answer records for `name`; empty when every search name is NXDOMAIN.
pub(crate) async fn lookup(conf: &ResolvConf, name: &str, record_type: RecordType) -> Result<Vec<Record>, String> {
    let mut all_answered = true;
    for fqdn in conf.name_list(name) {
        match lookup_from_any_server(conf, &fqdn, record_type).await {
            Ok(message) => {
                if let Some(records) = answer_records(message) {
                    return Ok(records);
                }
            }
            Err(_) => all_answered = false,
        }
    }
    if all_answered {
        Ok(Vec::new())
    } else {
        Err(format!(
            "could not resolve {name:?}: all servers responded with errors to at least one search domain"
        ))
    }
}

/// The records a lookup takes from an answer: those of a NOERROR one;
/// `None` for NXDOMAIN, which tries the next search name.
pub(crate) fn answer_records(message: Message) -> Option<Vec<Record>> {
    (message.metadata.response_code == ResponseCode::NoError).then_some(message.answers)
}

/// The first NOERROR or NXDOMAIN answer for `fqdn`, asking servers in order.
async fn lookup_from_any_server(conf: &ResolvConf, fqdn: &str, record_type: RecordType) -> Result<Message, String> {
    for server in &conf.servers {
        match ask(server, conf.port, fqdn, record_type).await {
            Ok(m) if matches!(m.metadata.response_code, ResponseCode::NoError | ResponseCode::NXDomain) => {
                return Ok(m);
            }
            Ok(m) => {
                tracing::warn!(server = %server, name = %fqdn, rcode = %m.metadata.response_code, "DNS resolution failed");
            }
            Err(e) => tracing::warn!(server = %server, name = %fqdn, err = %e, "DNS resolution failed"),
        }
    }
    Err(format!("could not resolve {fqdn}: no servers returned a viable answer"))
}

/// One question to one server: over UDP with EDNS(0), again over TCP
/// without it if the answer was truncated.
async fn ask(server: &str, port: u16, fqdn: &str, record_type: RecordType) -> Result<Message, String> {
    let ip: IpAddr = server
        .parse()
        .map_err(|_| format!("nameserver {server:?} is not an IP address"))?;
    let addr = SocketAddr::new(ip, port);
    let name = Name::from_ascii(fqdn).map_err(|e| format!("invalid name {fqdn:?}: {e}"))?;
    let mut query = Message::query();
    query.metadata.recursion_desired = true;
    query.add_query(Query::query(name, record_type));
    let plain = query.clone();
    let mut edns = Edns::new();
    edns.set_max_payload(EDNS_PAYLOAD);
    query.set_edns(edns);

    let answer = tokio::time::timeout(EXCHANGE_TIMEOUT, exchange_udp(addr, &query))
        .await
        .map_err(|_| "i/o timeout".to_string())??;
    if !answer.metadata.truncation {
        return Ok(answer);
    }
    let answer = tokio::time::timeout(EXCHANGE_TIMEOUT, exchange_tcp(addr, &plain))
        .await
        .map_err(|_| "i/o timeout".to_string())??;
    if answer.metadata.truncation {
        return Err("got truncated message on TCP".into());
    }
    Ok(answer)
}

async fn exchange_udp(addr: SocketAddr, query: &Message) -> Result<Message, String> {
    let local: SocketAddr = if addr.is_ipv4() {
        ([0, 0, 0, 0], 0).into()
    } else {
        ([0u16; 8], 0).into()
    };
    let socket = UdpSocket::bind(local).await.map_err(|e| e.to_string())?;
    // Connected, so an unreachable port fails at once rather than at the timeout.
    socket.connect(addr).await.map_err(|e| e.to_string())?;
    socket
        .send(&query.to_vec().map_err(|e| e.to_string())?)
        .await
        .map_err(|e| e.to_string())?;
    let mut buf = vec![0u8; usize::from(EDNS_PAYLOAD).max(MIN_MESSAGE)];
    loop {
        let n = socket.recv(&mut buf).await.map_err(|e| e.to_string())?;
        let answer = Message::from_vec(buf.get(..n).unwrap_or_default()).map_err(|e| e.to_string())?;
        // A late answer to an earlier question has another id: wait on.
        if answer.metadata.id == query.metadata.id {
            return Ok(answer);
        }
    }
}

async fn exchange_tcp(addr: SocketAddr, query: &Message) -> Result<Message, String> {
    let mut stream = TcpStream::connect(addr).await.map_err(|e| e.to_string())?;
    let bytes = query.to_vec().map_err(|e| e.to_string())?;
    let len = u16::try_from(bytes.len()).map_err(|_| "query too long".to_string())?;
    let mut framed = len.to_be_bytes().to_vec();
    framed.extend_from_slice(&bytes);
    stream.write_all(&framed).await.map_err(|e| e.to_string())?;
    let mut len = [0u8; 2];
    stream.read_exact(&mut len).await.map_err(|e| e.to_string())?;
    let mut buf = vec![0u8; usize::from(u16::from_be_bytes(len))];
    stream.read_exact(&mut buf).await.map_err(|e| e.to_string())?;
    let answer = Message::from_vec(&buf).map_err(|e| e.to_string())?;
    if answer.metadata.id != query.metadata.id {
        return Err("id mismatch".into());
    }
    Ok(answer)
}

/// A name in presentation form as miekg/dns writes it (so as Prometheus'
/// labels show it): a dot after every label, `\` before the characters
/// that would be read otherwise, `\DDD` (decimal) for the unprintable.
pub(crate) fn presentation(name: &Name) -> String {
    let mut out = String::new();
    for label in name.iter() {
        for &b in label {
            match b {
                b'.' | b' ' | b'\'' | b'@' | b';' | b'(' | b')' | b'"' | b'\\' => {
                    out.push('\\');
                    out.push(char::from(b));
                }
                b if !(b' '..=b'~').contains(&b) => out.push_str(&format!("\\{b:03}")),
                b => out.push(char::from(b)),
            }
        }
        out.push('.');
    }
    if out.is_empty() {
        out.push('.');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dns_presentation_escapes_as_miekg_does() {
        let check = |labels: &[&[u8]], want: &str| {
            let name = Name::from_labels(labels.iter().copied()).unwrap();
            assert_eq!(presentation(&name), want);
        };
        check(&[b"node1", b"cairn", b"test"], "node1.cairn.test.");
        check(&[b"_scrape", b"_tcp", b"x"], "_scrape._tcp.x.");
        check(&[b"a.b", b"c"], r"a\.b.c.");
        check(&[b"a b@c", b"d"], r"a\ b\@c.d.");
        check(&[b"-x*", b"y"], "-x*.y.");
        check(&[b"\x01\x7f\xff"], r"\001\127\255.");
        check(&[], ".");
    }

    /// A server that answers every question with bytes that are no DNS
    /// message, then one whose answer has another id; both must fail the
    /// lookup (after their timeout for the second) without panicking.
    #[tokio::test]
    async fn dns_garbage_and_foreign_answers_fail_the_lookup() {
        let socket = UdpSocket::bind("127.0.0.1:0").await.unwrap();
        let port = socket.local_addr().unwrap().port();
        let server = tokio::spawn(async move {
            let mut buf = [0u8; 1024];
            let (n, from) = socket.recv_from(&mut buf).await.unwrap();
            assert!(n > 12);
            socket.send_to(b"\x12\x34garbage", from).await.unwrap();
            let (n, from) = socket.recv_from(&mut buf).await.unwrap();
            // The question's bytes with another id and the response bit set.
            let mut reply = buf[..n].to_vec();
            reply[0] ^= 0xff;
            reply[2] |= 0x80;
            socket.send_to(&reply, from).await.unwrap();
        });
        let conf = ResolvConf {
            servers: vec!["127.0.0.1".into()],
            port,
            ..ResolvConf::default()
        };
        let err = lookup(&conf, "a.test.", RecordType::A).await.unwrap_err();
        assert!(err.contains("all servers responded with errors"), "{err}");
        let started = std::time::Instant::now();
        assert!(lookup(&conf, "a.test.", RecordType::A).await.is_err());
        assert!(started.elapsed() >= EXCHANGE_TIMEOUT);
        server.await.unwrap();
    }

    #[tokio::test]
    async fn dns_no_servers_or_a_hostname_server_fail_the_lookup() {
        let none = ResolvConf::default();
        assert!(lookup(&none, "a", RecordType::SRV).await.is_err());
        let named = ResolvConf {
            servers: vec!["dns.example".into()],
            ..ResolvConf::default()
        };
        assert!(lookup(&named, "a", RecordType::SRV).await.is_err());
    }
}
