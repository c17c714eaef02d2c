//! The scrape loops' own HTTP/1.1 client. A loop keeps one connection to
//! its target from scrape to scrape and reads each response straight into
//! the body's buffer: an idle target costs its socket, not a pooled
//! connection's task, channel and read buffer. Jobs with a proxy go through
//! reqwest instead (client.rs).

use std::future::Future;
use std::io;
use std::sync::Arc;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;

use crate::scrape_loop::BODY_SIZE_LIMIT;

/// Redirects followed before a scrape fails, as Go's client.
const MAX_REDIRECTS: usize = 10;
/// The most a response's status line and headers may take.
const MAX_HEAD_BYTES: usize = 64 << 10;
/// The most a body's announced length reserves up front; a longer body
/// grows its buffer as it arrives.
pub(crate) const MAX_ANNOUNCED_BYTES: usize = 16 << 20;
const READ_CHUNK: usize = 16 << 10;
/// The most a body's read asks for at once: the room read into is zeroed
/// first, which must stay small beside what a read brings.
const MAX_DIRECT_READ: usize = 64 << 10;
const UNEXPECTED_EOF: &str = "unexpected EOF";

/// A job's client: TLS settings and whether redirects are followed.
pub(crate) struct DirectClient {
    tls: TlsConnector,
    follow_redirects: bool,
}

/// One loop's connection, kept while the target keeps it open.
pub(crate) struct Connection {
    to: Endpoint,
    stream: Stream,
}

/// One loop's exchanges with its target: the connection, and its request,
/// sent again as it is while the URL and the credentials stay the same.
#[derive(Default)]
pub(crate) struct Session {
    pub conn: Option<Connection>,
    request: Option<Request>,
}

/// A GET as it is sent, with what it was built from.
struct Request {
    url: String,
    credentials: Vec<(String, String)>,
    /// Every header, the credentials last.
    headers: Vec<(String, String)>,
    at: url::Url,
    to: Endpoint,
    bytes: Vec<u8>,
}

#[derive(Clone, PartialEq, Eq)]
struct Endpoint {
    tls: bool,
    host: String,
    port: u16,
}

enum Stream {
    Plain(TcpStream),
    Tls(Box<TlsStream<TcpStream>>),
}

/// What an exchange reads from and writes to: a connection, or bytes in
/// memory ([`read_response`]).
trait Transport {
    async fn read(&mut self, buf: &mut [u8]) -> io::Result<usize>;
    async fn write_all(&mut self, buf: &[u8]) -> io::Result<()>;
}

impl Transport for Stream {
    async fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Self::Plain(s) => s.read(buf).await,
            Self::Tls(s) => s.read(buf).await,
        }
    }

    async fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        match self {
            Self::Plain(s) => s.write_all(buf).await,
            Self::Tls(s) => {
                s.write_all(buf).await?;
                s.flush().await
            }
        }
    }
}

/// A response given whole, handed out `step` bytes per read.
struct InMemory<'a> {
    bytes: &'a [u8],
    step: usize,
}

impl Transport for InMemory<'_> {
    async fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.step.min(buf.len()).min(self.bytes.len());
        buf[..n].copy_from_slice(&self.bytes[..n]);
        self.bytes = &self.bytes[n..];
        Ok(n)
    }

    async fn write_all(&mut self, _: &[u8]) -> io::Result<()> {
        Ok(())
    }
}

/// What a scrape reads from `bytes` as a target's answer, the bytes
/// arriving `step` at a time: the status and body, or why the response is
/// refused. For the fuzz target and tests: the same code as a scrape's.
pub fn read_response(bytes: &[u8], step: usize, limit: u64) -> Result<(u16, Vec<u8>), String> {
    let mut transport = InMemory {
        bytes,
        step: step.max(1),
    };
    let exchange = std::pin::pin!(exchange(Some(&mut transport), b"", limit));
    // Reads from memory never wait, so one poll finishes the exchange.
    match exchange.poll(&mut std::task::Context::from_waker(std::task::Waker::noop())) {
        std::task::Poll::Ready(Ok(read)) => Ok((read.response.status, read.response.body)),
        std::task::Poll::Ready(Err(Failure::BeforeResponse(why) | Failure::After(why))) => Err(why),
        std::task::Poll::Pending => Err("an in-memory read waited".into()),
    }
}

/// A response with status 200 or another the caller reports.
pub(crate) struct Response {
    pub status: u16,
    pub content_type: String,
    pub gzip: bool,
    pub body: Vec<u8>,
}

/// How an exchange failed: before the response began (a kept connection
/// the target had closed, worth one retry on a new one) or after.
enum Failure {
    BeforeResponse(String),
    After(String),
}

impl DirectClient {
    pub fn new(tls: rustls::ClientConfig, follow_redirects: bool) -> Self {
        Self {
            tls: TlsConnector::from(Arc::new(tls)),
            follow_redirects,
        }
    }

    /// GETs `url` over the session's connection (opening or replacing it
    /// as needed) with `headers` and then `credentials`; the body is cut off
    /// at `limit` bytes unless gzipped. The request is built again only when
    /// `url` or `credentials` change. Errors read as Go's client words them,
    /// after `Get "<url>": `.
    pub async fn get(
        &self,
        session: &mut Session,
        url: &str,
        headers: impl FnOnce() -> Vec<(String, String)>,
        credentials: Vec<(String, String)>,
        limit: u64,
    ) -> Result<Response, String> {
        let fail = |why: String| format!("Get {url:?}: {why}");
        let Session { conn, request: built } = session;
        let first = match built.take() {
            Some(r) if r.url == url && r.credentials == credentials => built.insert(r),
            _ => {
                let at = url::Url::parse(url).map_err(|e| fail(e.to_string()))?;
                let to = endpoint(&at).map_err(fail)?;
                let mut headers = headers();
                headers.extend(credentials.iter().cloned());
                built.insert(Request {
                    url: url.to_string(),
                    credentials,
                    bytes: request(&at, &headers),
                    headers,
                    to,
                    at,
                })
            }
        };
        let mut redirected: Option<(url::Url, Endpoint, Vec<u8>)> = None;
        for _ in 0..=MAX_REDIRECTS {
            let (at, to, bytes) = match &redirected {
                Some((at, to, bytes)) => (at, to, bytes),
                None => (&first.at, &first.to, &first.bytes),
            };
            let response = self
                .get_once(conn, to, bytes, limit)
                .await
                .map_err(|why| if why == BODY_SIZE_LIMIT { why } else { fail(why) })?;
            match response.location {
                Some(location) if self.follow_redirects && is_redirect(response.response.status) => {
                    let at = at
                        .join(&location)
                        .map_err(|e| fail(format!("bad Location header: {e}")))?;
                    let to = endpoint(&at).map_err(fail)?;
                    let bytes = request(&at, &first.headers);
                    redirected = Some((at, to, bytes));
                }
                _ => return Ok(response.response),
            }
        }
        Err(fail(format!("stopped after {MAX_REDIRECTS} redirects")))
    }

    async fn get_once(
        &self,
        conn: &mut Option<Connection>,
        to: &Endpoint,
        request: &[u8],
        limit: u64,
    ) -> Result<Read, String> {
        let reused = conn.as_ref().is_some_and(|c| c.to == *to);
        if !reused {
            *conn = None;
            *conn = Some(self.connect(to).await?);
        }
        let mut result = exchange(conn.as_mut().map(|c| &mut c.stream), request, limit).await;
        if reused && matches!(result, Err(Failure::BeforeResponse(_))) {
            *conn = Some(self.connect(to).await?);
            result = exchange(conn.as_mut().map(|c| &mut c.stream), request, limit).await;
        }
        match result {
            Ok(read) => {
                if !read.keep_alive {
                    *conn = None;
                }
                Ok(read)
            }
            Err(Failure::BeforeResponse(why) | Failure::After(why)) => {
                *conn = None;
                Err(why)
            }
        }
    }

    async fn connect(&self, to: &Endpoint) -> Result<Connection, String> {
        let address = format!("{}:{}", to.host, to.port);
        let tcp = TcpStream::connect((to.host.trim_start_matches('[').trim_end_matches(']'), to.port))
            .await
            .map_err(|e| format!("dial tcp {address}: connect: {}", go_error(&e)))?;
        let _ = tcp.set_nodelay(true);
        let stream = if to.tls {
            let name = rustls::pki_types::ServerName::try_from(
                to.host.trim_start_matches('[').trim_end_matches(']').to_string(),
            )
            .map_err(|e| format!("invalid server name {:?}: {e}", to.host))?;
            let tls = self
                .tls
                .connect(name, tcp)
                .await
                .map_err(|e| format!("tls: {}", go_error(&e)))?;
            Stream::Tls(Box::new(tls))
        } else {
            Stream::Plain(tcp)
        };
        Ok(Connection { to: to.clone(), stream })
    }
}

fn is_redirect(status: u16) -> bool {
    matches!(status, 301 | 302 | 303 | 307 | 308)
}

/// An I/O error as Go prints the system's: lower case, no error number.
fn go_error(e: &io::Error) -> String {
    match e.kind() {
        io::ErrorKind::ConnectionRefused => "connection refused".into(),
        io::ErrorKind::ConnectionReset => "connection reset by peer".into(),
        io::ErrorKind::TimedOut => "i/o timeout".into(),
        _ => e.to_string(),
    }
}

fn endpoint(url: &url::Url) -> Result<Endpoint, String> {
    let tls = match url.scheme() {
        "http" => false,
        "https" => true,
        other => return Err(format!("unsupported protocol scheme {other:?}")),
    };
    let host = url.host_str().ok_or("no host in request URL")?.to_string();
    let port = url.port_or_known_default().unwrap_or(if tls { 443 } else { 80 });
    Ok(Endpoint { tls, host, port })
}

/// The request's bytes: a GET with `Host` and `headers`.
fn request(url: &url::Url, headers: &[(String, String)]) -> Vec<u8> {
    let mut path = url.path().to_string();
    if let Some(query) = url.query() {
        path.push('?');
        path.push_str(query);
    }
    let host = match url.port() {
        Some(port) => format!("{}:{port}", url.host_str().unwrap_or_default()),
        None => url.host_str().unwrap_or_default().to_string(),
    };
    let mut out = format!("GET {path} HTTP/1.1\r\nHost: {host}\r\n");
    for (name, value) in headers {
        out.push_str(name);
        out.push_str(": ");
        out.push_str(value);
        out.push_str("\r\n");
    }
    out.push_str("\r\n");
    out.into_bytes()
}

/// A response read whole, with what decides about its connection.
struct Read {
    response: Response,
    location: Option<String>,
    keep_alive: bool,
}

/// Framing of a body.
enum Framing {
    Length(usize),
    Chunked,
    UntilClose,
}

/// Bytes read from a stream and not consumed yet.
struct Incoming<'s, T> {
    stream: &'s mut T,
    buf: Vec<u8>,
    at: usize,
}

impl<T: Transport> Incoming<'_, T> {
    fn pending(&self) -> &[u8] {
        &self.buf[self.at..]
    }

    /// Reads more; false at the end of the stream.
    async fn fill(&mut self) -> io::Result<bool> {
        if self.at > 0 && self.at == self.buf.len() {
            self.buf.clear();
            self.at = 0;
        }
        let len = self.buf.len();
        self.buf.resize(len + READ_CHUNK, 0);
        let n = self.stream.read(&mut self.buf[len..]).await;
        self.buf.truncate(len + *n.as_ref().unwrap_or(&0));
        Ok(n? > 0)
    }

    /// Moves the next `n` bytes into `body`, refusing a body of `limit`
    /// bytes or more. What is not pending yet is read straight into `body`:
    /// at once what its room holds (an announced length reserves it),
    /// from [`READ_CHUNK`] to [`MAX_DIRECT_READ`] bytes.
    async fn move_into(&mut self, mut n: usize, body: &mut Vec<u8>, limit: u64) -> Result<(), Failure> {
        while n > 0 {
            let pending = self.pending().len().min(n);
            let moved = if pending > 0 {
                body.extend_from_slice(&self.pending()[..pending]);
                self.at += pending;
                pending
            } else {
                let start = body.len();
                let room = (body.capacity() - start).clamp(READ_CHUNK, MAX_DIRECT_READ);
                body.resize(start + n.min(room), 0);
                let read = self.stream.read(&mut body[start..]).await;
                body.truncate(start + *read.as_ref().unwrap_or(&0));
                match read.map_err(|e| Failure::After(go_error(&e)))? {
                    0 => return Err(Failure::After(UNEXPECTED_EOF.into())),
                    read => read,
                }
            };
            n -= moved;
            if body.len() as u64 >= limit {
                return Err(Failure::After(BODY_SIZE_LIMIT.into()));
            }
        }
        Ok(())
    }

    /// One line without its CRLF.
    async fn line(&mut self) -> Result<String, String> {
        loop {
            if let Some(end) = self.pending().windows(2).position(|w| w == b"\r\n") {
                let line = String::from_utf8_lossy(&self.pending()[..end]).into_owned();
                self.at += end + 2;
                return Ok(line);
            }
            if self.pending().len() > MAX_HEAD_BYTES {
                return Err("malformed chunked encoding".into());
            }
            if !self.fill().await.map_err(|e| go_error(&e))? {
                return Err(UNEXPECTED_EOF.into());
            }
        }
    }
}

async fn exchange<T: Transport>(stream: Option<&mut T>, request: &[u8], limit: u64) -> Result<Read, Failure> {
    let Some(stream) = stream else {
        return Err(Failure::BeforeResponse("no connection".into()));
    };
    stream
        .write_all(request)
        .await
        .map_err(|e| Failure::BeforeResponse(go_error(&e)))?;
    let mut incoming = Incoming {
        stream,
        buf: Vec::with_capacity(READ_CHUNK),
        at: 0,
    };
    let head = read_head(&mut incoming).await?;
    let framing = head.framing;
    let mut body = Vec::with_capacity(match framing {
        Framing::Length(n) => n.min(MAX_ANNOUNCED_BYTES),
        _ => 0,
    });
    // A gzipped body is limited once inflated.
    let limit = if head.gzip { u64::MAX } else { limit };
    let mut keep_alive = head.keep_alive;
    match framing {
        Framing::Length(len) => incoming.move_into(len, &mut body, limit).await?,
        Framing::Chunked => loop {
            let line = incoming.line().await.map_err(Failure::After)?;
            let size = line.split(';').next().unwrap_or_default().trim();
            let len =
                usize::from_str_radix(size, 16).map_err(|_| Failure::After("malformed chunked encoding".into()))?;
            if len == 0 {
                // Trailers, then the empty line.
                while !incoming.line().await.map_err(Failure::After)?.is_empty() {}
                break;
            }
            incoming.move_into(len, &mut body, limit).await?;
            if !incoming.line().await.map_err(Failure::After)?.is_empty() {
                return Err(Failure::After("malformed chunked encoding".into()));
            }
        },
        Framing::UntilClose => {
            keep_alive = false;
            match incoming.move_into(usize::MAX, &mut body, limit).await {
                Err(Failure::After(e)) if e == UNEXPECTED_EOF => {}
                other => other?,
            }
        }
    }
    // Bytes beyond the response mean the connection is out of step.
    keep_alive &= incoming.pending().is_empty();
    Ok(Read {
        response: Response {
            status: head.status,
            content_type: head.content_type,
            gzip: head.gzip,
            body,
        },
        location: head.location,
        keep_alive,
    })
}

struct Head {
    status: u16,
    content_type: String,
    gzip: bool,
    location: Option<String>,
    framing: Framing,
    keep_alive: bool,
}

/// Reads the status line and headers (skipping informational responses),
/// leaving what follows them pending.
async fn read_head<T: Transport>(incoming: &mut Incoming<'_, T>) -> Result<Head, Failure> {
    let mut answered = false;
    loop {
        match parse_head(incoming.pending()).map_err(Failure::After)? {
            Some((len, None)) => incoming.at += len,
            Some((len, Some(head))) => {
                incoming.at += len;
                return Ok(head);
            }
            None => {
                if incoming.pending().len() > MAX_HEAD_BYTES {
                    return Err(Failure::After("malformed HTTP response: headers too long".into()));
                }
                let more = incoming.fill().await.map_err(|e| {
                    if answered {
                        Failure::After(go_error(&e))
                    } else {
                        Failure::BeforeResponse(go_error(&e))
                    }
                })?;
                if !more {
                    return Err(if answered || !incoming.pending().is_empty() {
                        Failure::After(UNEXPECTED_EOF.into())
                    } else {
                        Failure::BeforeResponse("EOF".into())
                    });
                }
                answered = true;
            }
        }
    }
}

/// A head at the start of `bytes`: `None` while incomplete, else its length
/// and the head, `None` for an informational response to skip. Kept out of
/// [`read_head`] so the parser's header table is not part of a loop's
/// future.
fn parse_head(bytes: &[u8]) -> Result<Option<(usize, Option<Head>)>, String> {
    let mut headers = [httparse::EMPTY_HEADER; 64];
    let mut parsed = httparse::Response::new(&mut headers);
    let status = parsed
        .parse(bytes)
        .map_err(|e| format!("malformed HTTP response: {e}"))?;
    let httparse::Status::Complete(len) = status else {
        return Ok(None);
    };
    let code = parsed.code.unwrap_or(0);
    if (100..200).contains(&code) && code != 101 {
        return Ok(Some((len, None)));
    }
    let header = |name: &str| {
        parsed
            .headers
            .iter()
            .find(|h| h.name.eq_ignore_ascii_case(name))
            .map(|h| String::from_utf8_lossy(h.value).trim().to_string())
    };
    let chunked = header("transfer-encoding").is_some_and(|v| v.to_ascii_lowercase().ends_with("chunked"));
    let framing = match header("content-length") {
        // These never have a body, whatever their headers say.
        _ if code == 204 || code == 304 => Framing::Length(0),
        _ if chunked => Framing::Chunked,
        Some(n) => Framing::Length(n.parse().map_err(|_| format!("bad Content-Length {n:?}"))?),
        None => Framing::UntilClose,
    };
    let close = header("connection").is_some_and(|v| v.eq_ignore_ascii_case("close"));
    Ok(Some((
        len,
        Some(Head {
            status: code,
            content_type: header("content-type").unwrap_or_default(),
            gzip: header("content-encoding").is_some_and(|v| v.eq_ignore_ascii_case("gzip")),
            location: header("location"),
            framing,
            keep_alive: parsed.version == Some(1) && !close,
        }),
    )))
}

#[cfg(test)]
mod tests;
