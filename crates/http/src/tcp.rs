//! Line protocols over plain TCP, each on its own opt-in port: Graphite
//! plaintext (Carbon's port 2003) and OpenTSDB's telnet `put` (port 4242).
//!
//! A connection is read in chunks; every run of complete lines that a read
//! completes is decoded and stored as one commit through the same
//! [`store_batch`] path as HTTP writes, so a line is durable once the next
//! read starts. TCP has no acknowledgement: a line is lost only if the
//! process dies between receiving it and that commit, as with any receiver
//! of these protocols. OpenTSDB clients get an error line back for each bad
//! `put` (as OpenTSDB answers); Graphite has no way to answer, so bad lines
//! are only counted (`cairn_ingest_samples_rejected_total{reason="bad_line"}`)
//! and logged at debug level.
//!
//! On shutdown the listener stops accepting, each connection reads what the
//! kernel already holds for it, stores the complete lines and closes, and
//! [`serve_lines`] returns once all are done.

use std::net::SocketAddr;
use std::time::Duration;

use cairn_protocols::opentsdb::{TelnetReply, decode_telnet};
use cairn_protocols::{graphite, text_import::ImportResult};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinSet;

use crate::AppState;
use crate::ingest::{Protocol, record_refusal, store_batch};
use cairn_storage::TenantId;

/// Which protocol a TCP listener speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineProtocol {
    Graphite,
    OpenTsdbTelnet,
}

impl LineProtocol {
    fn protocol(self) -> Protocol {
        match self {
            Self::Graphite => Protocol::Graphite,
            Self::OpenTsdbTelnet => Protocol::OpenTsdb,
        }
    }
}

/// Buffer space added before each read (a read takes what the socket holds,
/// up to the buffer's spare capacity, so one commit holds about this much).
const READ_CHUNK: usize = 256 << 10;
/// A connection that sends this much without a newline is cut off.
const MAX_LINE: usize = 1 << 20;
/// Error lines written back per chunk at most, so a flood of bad input
/// cannot make Cairn write as much as it reads.
const MAX_REPLIES: usize = 100;
/// After this long at shutdown, a warning names connections still storing.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(10);
/// At shutdown, a connection reads on until its client pauses this long…
const DRAIN_IDLE: Duration = Duration::from_millis(20);
/// …or for this long at most.
const DRAIN_READ: Duration = Duration::from_secs(1);
/// How long a client may take to accept an answer.
const REPLY_TIMEOUT: Duration = Duration::from_secs(10);

/// Accepts connections until `shutdown` turns true, then waits for every
/// connection to store its complete lines.
pub async fn serve_lines(
    listener: TcpListener,
    state: AppState,
    protocol: LineProtocol,
    mut shutdown: watch::Receiver<bool>,
) {
    let mut connections = JoinSet::new();
    let for_connections = shutdown.clone();
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((socket, peer)) => {
                    let state = state.clone();
                    let shutdown = for_connections.clone();
                    connections.spawn(async move {
                        if let Err(e) = connection(socket, &state, protocol, shutdown).await {
                            tracing::debug!(%peer, error = %e, "line protocol connection ended");
                        }
                    });
                }
                Err(e) => {
                    // Out of file descriptors and the like: back off, keep serving.
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            },
            () = stopped(&mut shutdown) => break,
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
    // New connections are refused from here on, not accepted and then reset.
    drop(listener);
    // Every connection ends promptly once stopped (reads are cancelled,
    // replies time out), so wait for all of them: a store still running
    // must finish before the caller closes storage.
    let drain = async { while connections.join_next().await.is_some() {} };
    tokio::pin!(drain);
    if tokio::time::timeout(DRAIN_TIMEOUT, &mut drain).await.is_err() {
        tracing::warn!(
            protocol = protocol.protocol().as_str(),
            "connections still storing after {DRAIN_TIMEOUT:?}; waiting"
        );
        drain.await;
    }
}

/// Resolves once shutdown is signalled (or its sender is gone).
async fn stopped(shutdown: &mut watch::Receiver<bool>) {
    let _ = shutdown.wait_for(|stop| *stop).await;
}

async fn connection(
    mut socket: TcpStream,
    state: &AppState,
    protocol: LineProtocol,
    mut shutdown: watch::Receiver<bool>,
) -> std::io::Result<()> {
    let peer: Option<SocketAddr> = socket.peer_addr().ok();
    let mut buf: Vec<u8> = Vec::with_capacity(READ_CHUNK);
    loop {
        buf.reserve(READ_CHUNK);
        // Bytes before this were searched for a newline already.
        let searched = buf.len();
        let (eof, stopping) = tokio::select! {
            read = socket.read_buf(&mut buf) => (read? == 0, false),
            () = stopped(&mut shutdown) => {
                // Store what the kernel already holds for us, then close.
                let closed_by_client = drain_ready(&mut socket, &mut buf).await?;
                (true, !closed_by_client)
            }
        };
        // At the end of the stream a last line needs no newline; on
        // shutdown a partial line of a client still sending is dropped.
        let cut = if eof && !stopping {
            buf.len()
        } else {
            buf.get(searched..)
                .and_then(|new| new.iter().rposition(|&b| b == b'\n'))
                .map_or(0, |i| searched + i + 1)
        };
        if cut > 0 {
            let rest = buf.split_off(cut);
            let lines = std::mem::replace(&mut buf, rest);
            let replies = ingest(state, protocol, lines).await;
            if !replies.is_empty() {
                reply(&mut socket, &replies).await?;
            }
        } else if buf.len() > MAX_LINE {
            if protocol == LineProtocol::OpenTsdbTelnet {
                reply(&mut socket, b"put: line too long\n").await?;
            }
            state
                .metrics()
                .ingest_request_rejected(protocol.protocol(), "too_large");
            tracing::debug!(?peer, "line longer than {MAX_LINE} bytes; closing the connection");
            return Ok(());
        }
        if eof {
            return Ok(());
        }
    }
}

/// Reads what the client already sent: until it pauses for [`DRAIN_IDLE`]
/// (tokio only learns of waiting bytes from its reactor, so a
/// non-waiting read could miss them), at most [`DRAIN_READ`] in all.
/// Returns whether the client closed the stream meanwhile.
async fn drain_ready(socket: &mut TcpStream, buf: &mut Vec<u8>) -> std::io::Result<bool> {
    let deadline = tokio::time::Instant::now() + DRAIN_READ;
    while buf.len() < MAX_LINE && tokio::time::Instant::now() < deadline {
        buf.reserve(READ_CHUNK);
        match tokio::time::timeout(DRAIN_IDLE, socket.read_buf(buf)).await {
            Ok(Ok(0)) => return Ok(true),
            Err(_) => break,
            Ok(Ok(_)) => {}
            Ok(Err(e)) => return Err(e),
        }
    }
    Ok(false)
}

/// Writes an answer; a client that does not read it within
/// [`REPLY_TIMEOUT`] is disconnected rather than left to stall the connection.
async fn reply(socket: &mut TcpStream, bytes: &[u8]) -> std::io::Result<()> {
    tokio::time::timeout(REPLY_TIMEOUT, socket.write_all(bytes))
        .await
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::TimedOut, "client does not read replies"))?
}

/// Decodes and stores one run of complete lines; returns what to write back.
async fn ingest(state: &AppState, protocol: LineProtocol, lines: Vec<u8>) -> Vec<u8> {
    let state = state.clone();
    let joined = tokio::task::spawn_blocking(move || {
        let metrics = state.metrics().clone();
        metrics.measure_ingest(|| ingest_lines(&state, protocol, &lines))
    });
    joined.await.unwrap_or_else(|e| {
        tracing::error!(error = %e, "line protocol task failed");
        Vec::new()
    })
}

/// Decodes and stores `lines`, returning the replies.
fn ingest_lines(state: &AppState, protocol: LineProtocol, lines: &[u8]) -> Vec<u8> {
    let limits = state.config().remote_write_limits;
    let (result, replies) = match protocol {
        LineProtocol::Graphite => (graphite::decode_graphite(lines, crate::now_ms(), &limits), Vec::new()),
        LineProtocol::OpenTsdbTelnet => {
            let r = decode_telnet(lines, &limits);
            (r.import, r.replies)
        }
    };
    let mut out = Vec::new();
    for reply in replies.iter().take(MAX_REPLIES) {
        match reply {
            TelnetReply::Error(e) => out.extend_from_slice(e.as_bytes()),
            TelnetReply::Version => {
                out.extend_from_slice(concat!("cairn ", env!("CARGO_PKG_VERSION"), " (OpenTSDB put)").as_bytes())
            }
        }
        out.push(b'\n');
    }
    if let Err(message) = store(state, protocol.protocol(), &result)
        && protocol == LineProtocol::OpenTsdbTelnet
    {
        out.extend_from_slice(format!("put: {message}\n").as_bytes());
    }
    out
}

fn store(state: &AppState, protocol: Protocol, result: &ImportResult) -> Result<(), String> {
    if let Some(first) = &result.first_error {
        state
            .metrics()
            .ingest_samples_rejected(protocol, "bad_line", result.bad_lines as u64);
        tracing::debug!(protocol = protocol.as_str(), bad_lines = result.bad_lines, %first, "bad lines skipped");
    }
    // A TCP line has no headers: the default tenant's.
    store_batch(state, &TenantId::default_tenant(), protocol, &result.batch)
        .map(|_| ())
        .map_err(|refusal| {
            record_refusal(state, protocol, &refusal);
            refusal.1.to_string()
        })
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
    use tokio::net::{TcpListener, TcpStream};
    use tokio::sync::watch;

    use super::*;
    use crate::test_util::*;

    async fn start(
        app: &TestApp,
        protocol: LineProtocol,
    ) -> (SocketAddr, watch::Sender<bool>, tokio::task::JoinHandle<()>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (tx, rx) = watch::channel(false);
        let task = tokio::spawn(serve_lines(listener, app.state.clone(), protocol, rx));
        (addr, tx, task)
    }

    async fn export(app: &TestApp, selector: &str) -> String {
        app.get(&format!("/api/v1/export?match[]={selector}&start=0"))
            .await
            .body
    }

    #[tokio::test]
    async fn graphite_lines_split_across_reads_are_stored() {
        let app = TestApp::new();
        let (addr, stop, task) = start(&app, LineProtocol::Graphite).await;
        let mut c = TcpStream::connect(addr).await.unwrap();
        c.write_all(b"a.b.c;host=x 1.5 1700000000\na.b.").await.unwrap();
        c.flush().await.unwrap();
        tokio::time::sleep(Duration::from_millis(50)).await;
        c.write_all(b"c;host=x 2.5 1700000010\nbad line\nlast 7 1700000000")
            .await
            .unwrap();
        drop(c);
        // Closing the connection stores the last line without a newline.
        for _ in 0..100 {
            if export(&app, "last").await.contains("[7]") {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert_eq!(
            export(&app, "{host=\"x\"}").await,
            r#"{"metric":{"__name__":"a.b.c","host":"x"},"values":[1.5,2.5],"timestamps":[1700000000000,1700000010000]}"#
                .to_string()
                + "\n"
        );
        let metrics = app.get("/metrics").await.body;
        assert!(
            metrics.contains(r#"cairn_ingest_samples_rejected_total{protocol="graphite",reason="bad_line"} 1"#),
            "{metrics}"
        );
        stop.send(true).unwrap();
        task.await.unwrap();
    }

    #[tokio::test]
    async fn opentsdb_telnet_answers_errors_and_version() {
        let app = TestApp::new();
        let (addr, stop, task) = start(&app, LineProtocol::OpenTsdbTelnet).await;
        let c = TcpStream::connect(addr).await.unwrap();
        let (r, mut w) = c.into_split();
        w.write_all(b"put sys.load 1700000000 0.5 host=a\nput sys.load x 1\nversion\n")
            .await
            .unwrap();
        let mut lines = BufReader::new(r).lines();
        assert_eq!(
            lines.next_line().await.unwrap().unwrap(),
            "put: invalid timestamp \"x\""
        );
        assert!(lines.next_line().await.unwrap().unwrap().starts_with("cairn "));
        assert_eq!(
            export(&app, "{__name__=\"sys.load\"}").await,
            r#"{"metric":{"__name__":"sys.load","host":"a"},"values":[0.5],"timestamps":[1700000000000]}"#.to_string()
                + "\n"
        );
        // Shutdown ends the open connection and returns.
        stop.send(true).unwrap();
        tokio::time::timeout(Duration::from_secs(5), task)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(lines.next_line().await.unwrap(), None);
    }

    #[tokio::test]
    async fn lines_received_before_shutdown_are_stored() {
        let app = TestApp::new();
        let (addr, stop, task) = start(&app, LineProtocol::Graphite).await;
        let mut c = TcpStream::connect(addr).await.unwrap();
        c.write_all(b"first 1 1700000000\n").await.unwrap();
        for _ in 0..100 {
            if export(&app, "first").await.contains("[1]") {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        // Sent, then shutdown at once: the lines are in the kernel, not yet read.
        let mut body = Vec::new();
        for i in 0..2000 {
            body.extend_from_slice(format!("late;i={i} 2 1700000000\n").as_bytes());
        }
        // The last line has no newline, but the client closes: it counts.
        body.extend_from_slice(b"lastline 3 1700000000");
        c.write_all(&body).await.unwrap();
        c.shutdown().await.unwrap();
        stop.send(true).unwrap();
        task.await.unwrap();
        assert!(export(&app, "lastline").await.contains("[3]"));
        let stored = app.get("/api/v1/series?match[]=late").await.body;
        assert_eq!(
            stored.matches("\"late\"").count(),
            2000,
            "{}",
            &stored[..stored.len().min(300)]
        );
        // The listener is closed: new connections are refused.
        assert!(TcpStream::connect(addr).await.is_err());
    }

    #[tokio::test]
    async fn an_endless_line_closes_the_connection() {
        let app = TestApp::new();
        let (addr, stop, task) = start(&app, LineProtocol::OpenTsdbTelnet).await;
        let mut c = TcpStream::connect(addr).await.unwrap();
        // The server may close (and reset) before it has read everything.
        let _ = c.write_all(&vec![b'x'; MAX_LINE + READ_CHUNK]).await;
        let mut sink = Vec::new();
        let closed = tokio::time::timeout(Duration::from_secs(10), c.read_to_end(&mut sink)).await;
        assert!(closed.is_ok(), "the connection stayed open");
        let metrics = app.get("/metrics").await.body;
        assert!(
            metrics.contains(r#"cairn_ingest_requests_rejected_total{protocol="opentsdb",reason="too_large"} 1"#),
            "{metrics}"
        );
        stop.send(true).unwrap();
        task.await.unwrap();
    }
}
