//! The HTTP server loop: accepts connections and serves the API on each,
//! with the timeouts that keep slow or idle clients from holding
//! connections, tasks and buffers forever (`--http.read-timeout`,
//! `--http.write-timeout`):
//!
//! - a request's headers must arrive within the read timeout of the
//!   connection's start or of the end of the last request in flight, or
//!   the connection is closed ([`activity`]; HTTP/1 also by hyper's header
//!   read timer), so an idle connection is closed after as long; a
//!   request's body must arrive within the read timeout of its headers
//!   ([`DeadlineBody`]): a client trickling bytes (slowloris) is cut off,
//!   over HTTP/1 and HTTP/2 alike;
//! - a response write that makes no progress for the write timeout (the
//!   client stopped reading and its socket buffer is full) fails and closes
//!   the connection ([`WriteStallGuard`]); a slow reader that keeps reading
//!   is served to the end.
//!
//! On shutdown the loop stops accepting, lets each connection finish its
//! request in flight and waits for all of them, as `axum::serve` did.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::serve::Listener;
use http_body::{Body, Frame, SizeHint};
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::GracefulShutdown;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::{Instant, Sleep};
use tower::ServiceExt;

mod activity;
use activity::{Activity, InFlight};

/// How long the server waits on a client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HttpTimeouts {
    /// Longest a request's headers (from the connection's start or the
    /// previous response) and then its body may take to arrive. Zero: no
    /// limit. Default 5 minutes, as Prometheus' `--web.read-timeout`.
    pub read: Duration,
    /// Longest a response write may wait for the client to read. Zero: no
    /// limit. Default 1 minute.
    pub write: Duration,
}

impl Default for HttpTimeouts {
    fn default() -> Self {
        Self {
            read: Duration::from_secs(300),
            write: Duration::from_secs(60),
        }
    }
}

/// Serves `app` on every connection `listener` accepts until `shutdown`
/// resolves, then waits for the open connections to finish.
pub async fn serve<L>(
    mut listener: L,
    app: Router,
    timeouts: HttpTimeouts,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> io::Result<()>
where
    L: Listener,
{
    let mut builder = auto::Builder::new(TokioExecutor::new());
    let read = (!timeouts.read.is_zero()).then_some(timeouts.read);
    builder.http1().timer(TokioTimer::new()).header_read_timeout(read);
    builder.http2().timer(TokioTimer::new());
    let graceful = GracefulShutdown::new();
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let (io, _) = tokio::select! {
            accepted = listener.accept() => accepted,
            () = &mut shutdown => break,
        };
        let io = TokioIo::new(WriteStallGuard::new(io, timeouts.write));
        let app = app.clone();
        let activity = Activity::new();
        let service = hyper::service::service_fn({
            let activity = activity.clone();
            move |req: hyper::Request<Incoming>| {
                let in_flight = activity.begin();
                let req = req.map(|body| DeadlineBody::new(body, read));
                let response = app.clone().oneshot(req);
                async move {
                    let response = response.await?;
                    Ok::<_, std::convert::Infallible>(response.map(|body| TrackedBody {
                        body,
                        _in_flight: in_flight,
                    }))
                }
            }
        });
        let connection = graceful.watch(builder.serve_connection(io, service).into_owned());
        tokio::spawn(async move {
            let idle = async {
                match read {
                    Some(limit) => activity.idle_for(limit).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                served = connection => if let Err(e) = served {
                    tracing::debug!(error = %e, "connection closed with an error");
                },
                () = idle => tracing::debug!("closed a connection without a request in flight for --http.read-timeout"),
            }
        });
    }
    drop(listener);
    graceful.shutdown().await;
    Ok(())
}

/// A request body that fails once its deadline passes before it has all
/// arrived.
pub struct DeadlineBody<B> {
    inner: B,
    deadline: Option<Pin<Box<Sleep>>>,
}

impl<B> DeadlineBody<B> {
    /// `timeout` counts from now; `None`: no deadline.
    pub fn new(inner: B, timeout: Option<Duration>) -> Self {
        Self {
            inner,
            deadline: timeout.map(|t| Box::pin(tokio::time::sleep_until(Instant::now() + t))),
        }
    }
}

/// What a request body reading past its deadline fails with.
#[derive(Debug)]
pub struct BodyTimeout;

impl std::fmt::Display for BodyTimeout {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the request body did not arrive within --http.read-timeout")
    }
}

impl std::error::Error for BodyTimeout {}

impl<B> Body for DeadlineBody<B>
where
    B: Body<Data = Bytes> + Unpin,
    B::Error: Into<axum::BoxError>,
{
    type Data = Bytes;
    type Error = axum::BoxError;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        if let Poll::Ready(frame) = Pin::new(&mut self.inner).poll_frame(cx) {
            return Poll::Ready(frame.map(|f| f.map_err(Into::into)));
        }
        let expired = self.deadline.as_mut().is_some_and(|d| d.as_mut().poll(cx).is_ready());
        if expired {
            return Poll::Ready(Some(Err(BodyTimeout.into())));
        }
        Poll::Pending
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// A response body that keeps its request in flight until it is written
/// (or dropped with its connection).
struct TrackedBody {
    body: axum::body::Body,
    _in_flight: InFlight,
}

impl Body for TrackedBody {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

/// A connection whose writes fail once one has waited `timeout` for the
/// client to take bytes.
pub struct WriteStallGuard<T> {
    inner: T,
    timeout: Option<Duration>,
    stalled: Option<Pin<Box<Sleep>>>,
}

impl<T> WriteStallGuard<T> {
    /// `timeout` zero: no limit.
    pub fn new(inner: T, timeout: Duration) -> Self {
        Self {
            inner,
            timeout: (!timeout.is_zero()).then_some(timeout),
            stalled: None,
        }
    }

    /// Turns a write's outcome into the guard's: progress ends the stall,
    /// and a stall that lasted the timeout becomes an error.
    fn watch<R>(&mut self, cx: &mut Context<'_>, polled: Poll<io::Result<R>>) -> Poll<io::Result<R>> {
        if polled.is_ready() {
            self.stalled = None;
            return polled;
        }
        let Some(timeout) = self.timeout else {
            return Poll::Pending;
        };
        let stalled = self
            .stalled
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(timeout)));
        if stalled.as_mut().poll(cx).is_ready() {
            return Poll::Ready(Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "the client did not read the response within --http.write-timeout",
            )));
        }
        Poll::Pending
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for WriteStallGuard<T> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for WriteStallGuard<T> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.inner).poll_write(cx, buf);
        self.watch(cx, polled)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        self.watch(cx, polled)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let polled = Pin::new(&mut self.inner).poll_flush(cx);
        self.watch(cx, polled)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let polled = Pin::new(&mut self.inner).poll_shutdown(cx);
        self.watch(cx, polled)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::routing::{get, post};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::{TcpListener, TcpStream};

    /// A server of a small API with `timeouts`; its address and its stop.
    async fn start(timeouts: HttpTimeouts) -> (std::net::SocketAddr, tokio::sync::oneshot::Sender<()>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let app = Router::new()
            .route("/ok", get(|| async { "ok" }))
            .route("/echo", post(|body: Bytes| async move { body.len().to_string() }))
            .route("/big", get(|| async { vec![b'x'; 64 << 20] }))
            .route(
                "/slow",
                get(|| async {
                    tokio::time::sleep(Duration::from_millis(900)).await;
                    "slow"
                }),
            );
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        tokio::spawn(serve(listener, app, timeouts, async move {
            let _ = stopped.await;
        }));
        (addr, stop)
    }

    fn timeouts(read_ms: u64, write_ms: u64) -> HttpTimeouts {
        HttpTimeouts {
            read: Duration::from_millis(read_ms),
            write: Duration::from_millis(write_ms),
        }
    }

    /// Reads until the server closes the connection (or 10 s pass).
    async fn read_to_close(s: &mut TcpStream) -> (Vec<u8>, Duration) {
        let started = std::time::Instant::now();
        let mut got = Vec::new();
        let read = tokio::time::timeout(Duration::from_secs(10), s.read_to_end(&mut got)).await;
        assert!(read.is_ok(), "the server kept the connection open");
        (got, started.elapsed())
    }

    #[tokio::test]
    async fn headers_trickled_slower_than_the_read_timeout_are_cut_off() {
        let (addr, _stop) = start(timeouts(300, 60_000)).await;
        let mut s = TcpStream::connect(addr).await.unwrap();
        let started = std::time::Instant::now();
        // One byte every 50 ms: each read makes progress, the whole never arrives.
        let request = b"GET /ok HTTP/1.1\r\nHost: x\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n\r\n";
        for b in request {
            if s.write_all(&[*b]).await.is_err() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
            if started.elapsed() > Duration::from_secs(3) {
                panic!("the server still reads a trickled request after 3 s");
            }
        }
        let (got, _) = read_to_close(&mut s).await;
        assert!(!got.starts_with(b"HTTP/1.1 200"), "{}", String::from_utf8_lossy(&got));
        assert!(started.elapsed() < Duration::from_secs(3));
    }

    #[tokio::test]
    async fn a_body_trickled_slower_than_the_read_timeout_fails() {
        let (addr, _stop) = start(timeouts(300, 60_000)).await;
        let mut s = TcpStream::connect(addr).await.unwrap();
        s.write_all(b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n")
            .await
            .unwrap();
        let started = std::time::Instant::now();
        for _ in 0..100 {
            if s.write_all(b"a").await.is_err() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
            if started.elapsed() > Duration::from_secs(1) {
                break;
            }
        }
        let (got, _) = read_to_close(&mut s).await;
        let text = String::from_utf8_lossy(&got);
        assert!(!text.starts_with("HTTP/1.1 200"), "{text}");
        assert!(started.elapsed() < Duration::from_secs(3));
    }

    /// A request in flight keeps its connection open past the read timeout.
    #[tokio::test]
    async fn a_response_slower_than_the_read_timeout_is_still_written() {
        let (addr, _stop) = start(timeouts(300, 60_000)).await;
        let mut s = TcpStream::connect(addr).await.unwrap();
        s.write_all(b"GET /slow HTTP/1.1\r\nHost: x\r\n\r\n").await.unwrap();
        let (got, _) = read_to_close(&mut s).await;
        let text = String::from_utf8_lossy(&got);
        assert!(text.starts_with("HTTP/1.1 200") && text.ends_with("slow"), "{text}");
    }

    #[tokio::test]
    async fn a_connection_that_sends_nothing_is_closed() {
        let (addr, _stop) = start(timeouts(300, 60_000)).await;
        let mut s = TcpStream::connect(addr).await.unwrap();
        let (got, idle) = read_to_close(&mut s).await;
        assert!(got.is_empty() || !got.starts_with(b"HTTP/1.1 200"));
        assert!(idle < Duration::from_secs(3), "{idle:?}");
    }

    /// An HTTP/2 client (prior knowledge) that sends its preface, then a
    /// request's HEADERS frame a byte at a time.
    #[tokio::test]
    async fn http2_headers_trickled_slower_than_the_read_timeout_are_cut_off() {
        let (addr, _stop) = start(timeouts(300, 60_000)).await;
        let mut s = TcpStream::connect(addr).await.unwrap();
        s.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n").await.unwrap();
        // An empty SETTINGS frame.
        s.write_all(&[0, 0, 0, 4, 0, 0, 0, 0, 0]).await.unwrap();
        // HEADERS of stream 1, END_HEADERS | END_STREAM, with a 64-byte
        // literal header the frame never finishes sending.
        let mut block = vec![0x82, 0x86, 0x84, 0x41, 0x01, b'x', 0x00, 0x01, b'y', 0x40];
        block.extend(std::iter::repeat_n(b'a', 64));
        let mut frame = vec![0, 0, block.len() as u8, 1, 5, 0, 0, 0, 1];
        frame.extend(block);
        let started = std::time::Instant::now();
        for b in frame {
            if s.write_all(&[b]).await.is_err() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
            if started.elapsed() > Duration::from_secs(3) {
                panic!("the server still reads a trickled HTTP/2 request after 3 s");
            }
        }
        read_to_close(&mut s).await;
        assert!(started.elapsed() < Duration::from_secs(3));
    }

    #[tokio::test]
    async fn an_idle_keep_alive_connection_is_closed() {
        let (addr, _stop) = start(timeouts(300, 60_000)).await;
        let mut s = TcpStream::connect(addr).await.unwrap();
        s.write_all(b"GET /ok HTTP/1.1\r\nHost: x\r\n\r\n").await.unwrap();
        let mut buf = [0u8; 1024];
        let n = s.read(&mut buf).await.unwrap();
        assert!(buf[..n].starts_with(b"HTTP/1.1 200"));
        let (rest, idle) = read_to_close(&mut s).await;
        assert!(rest.is_empty() || !rest.starts_with(b"HTTP/1.1 200"));
        assert!(
            idle >= Duration::from_millis(250) && idle < Duration::from_secs(3),
            "{idle:?}"
        );
    }

    #[tokio::test]
    async fn a_prompt_client_is_served_on_one_connection() {
        let (addr, _stop) = start(timeouts(300, 300)).await;
        let mut s = TcpStream::connect(addr).await.unwrap();
        for _ in 0..3 {
            s.write_all(b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello")
                .await
                .unwrap();
            let mut buf = [0u8; 1024];
            let n = s.read(&mut buf).await.unwrap();
            let text = String::from_utf8_lossy(&buf[..n]);
            assert!(
                text.starts_with("HTTP/1.1 200") && text.ends_with("\r\n\r\n5"),
                "{text}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    #[tokio::test]
    async fn a_client_that_stops_reading_is_cut_off() {
        let (addr, _stop) = start(timeouts(60_000, 300)).await;
        // The kernel's socket buffers on loopback (a few MB) are far below
        // the 64 MiB answer.
        let mut s = TcpStream::connect(addr).await.unwrap();
        s.write_all(b"GET /big HTTP/1.1\r\nHost: x\r\n\r\n").await.unwrap();
        // Read nothing for a while: the server's write stalls, then fails.
        tokio::time::sleep(Duration::from_secs(2)).await;
        let started = std::time::Instant::now();
        let mut got = 0usize;
        let mut buf = vec![0u8; 1 << 20];
        loop {
            match tokio::time::timeout(Duration::from_secs(10), s.read(&mut buf)).await {
                Ok(Ok(0)) | Ok(Err(_)) => break,
                Ok(Ok(n)) => got += n,
                Err(_) => panic!("the server kept a stalled connection open"),
            }
        }
        assert!(got < 64 << 20, "the whole answer arrived: {got} bytes");
        assert!(started.elapsed() < Duration::from_secs(10));
    }

    #[tokio::test]
    async fn shutdown_waits_for_the_request_in_flight() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let app = Router::new().route(
            "/slow",
            get(|| async {
                tokio::time::sleep(Duration::from_millis(300)).await;
                "done"
            }),
        );
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let server = tokio::spawn(serve(listener, app, HttpTimeouts::default(), async move {
            let _ = stopped.await;
        }));
        let mut s = TcpStream::connect(addr).await.unwrap();
        s.write_all(b"GET /slow HTTP/1.1\r\nHost: x\r\n\r\n").await.unwrap();
        tokio::time::sleep(Duration::from_millis(50)).await;
        stop.send(()).unwrap();
        let (got, _) = read_to_close(&mut s).await;
        let text = String::from_utf8_lossy(&got);
        assert!(text.starts_with("HTTP/1.1 200") && text.ends_with("done"), "{text}");
        server.await.unwrap().unwrap();
        assert!(TcpStream::connect(addr).await.is_err());
    }
}
