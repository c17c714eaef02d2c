//! Bodies streamed between the connection and the blocking pool, through a
//! bounded channel, so memory stays flat whatever their size.
//!
//! Responses ([`stream_blocking`]): a blocking task opens what it will walk
//! (an error there is still a proper error response), then writes the body
//! into a [`ChunkSink`], which hands chunks to the connection. A client that
//! disconnects, or reads nothing for [`SEND_TIMEOUT`], stops the walk (and
//! frees what it holds: a blocking thread, a remote-read slot).
//!
//! Requests ([`read_blocking`]): a blocking task reads the body as a
//! [`std::io::Read`] while the connection's task feeds it. A client that
//! sends nothing for [`SEND_TIMEOUT`] gets the read failed.

use std::io::{self, Read};
use std::pin::Pin;
use std::task::{Context, Poll};

use axum::body::{Body, Bytes};
use futures_core::Stream;
use tokio::sync::{mpsc, oneshot};

use crate::ApiError;

/// Chunks in flight between the writer and the connection.
const CHANNEL_DEPTH: usize = 8;

/// How long the writer waits for the connection to take a chunk.
pub(crate) const SEND_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);

type Chunk = Result<Bytes, std::io::Error>;

/// The response body: chunks from the blocking writer.
struct ChunkStream(mpsc::Receiver<Chunk>);

impl Stream for ChunkStream {
    type Item = Chunk;
    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Chunk>> {
        self.0.poll_recv(cx)
    }
}

/// Where a streamed body is written: append to [`Self::buf`], then call
/// [`Self::flush_if_full`].
pub(crate) struct ChunkSink {
    tx: mpsc::Sender<Chunk>,
    runtime: tokio::runtime::Handle,
    pub buf: Vec<u8>,
    chunk_bytes: usize,
}

impl ChunkSink {
    /// Hands what `buf` holds to the connection once it reaches the chunk
    /// size. False when the client has gone away: the writer should stop.
    pub fn flush_if_full(&mut self) -> bool {
        self.buf.len() < self.chunk_bytes || self.flush()
    }

    fn flush(&mut self) -> bool {
        let chunk = std::mem::replace(&mut self.buf, Vec::with_capacity(self.chunk_bytes + 1024));
        self.send(Ok(Bytes::from(chunk)))
    }

    /// False when the client is gone or took nothing for [`SEND_TIMEOUT`].
    fn send(&self, chunk: Chunk) -> bool {
        let sent = self
            .runtime
            .block_on(tokio::time::timeout(SEND_TIMEOUT, self.tx.send(chunk)));
        matches!(sent, Ok(Ok(())))
    }
}

/// Runs `open`, then `write` with what it opened, on the blocking pool, and
/// returns the body `write` produces as it goes. An error from `open` is
/// returned instead of a body; one from `write` comes too late for a status
/// code, so it aborts the body, and the client sees a broken transfer rather
/// than a silently short one. `what` names the body in the log.
pub(crate) async fn stream_blocking<S>(
    what: &'static str,
    chunk_bytes: usize,
    open: impl FnOnce() -> Result<S, ApiError> + Send + 'static,
    write: impl FnOnce(S, &mut ChunkSink) -> Result<(), String> + Send + 'static,
) -> Result<Body, ApiError>
where
    S: Send + 'static,
{
    let chunk_bytes = chunk_bytes.max(1);
    let (tx, rx) = mpsc::channel(CHANNEL_DEPTH);
    let (ready_tx, ready_rx) = oneshot::channel();
    let runtime = tokio::runtime::Handle::current();
    tokio::task::spawn_blocking(move || {
        let opened = match open() {
            Ok(s) => {
                let _ = ready_tx.send(Ok(()));
                s
            }
            Err(e) => {
                let _ = ready_tx.send(Err(e));
                return;
            }
        };
        let mut sink = ChunkSink {
            tx,
            runtime,
            buf: Vec::with_capacity(chunk_bytes + 1024),
            chunk_bytes,
        };
        let written = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| write(opened, &mut sink)))
            .unwrap_or_else(|_| Err("the writer panicked".to_string()));
        match written {
            Ok(()) => {
                if !sink.buf.is_empty() {
                    sink.flush();
                }
            }
            Err(e) => {
                tracing::error!(error = %e, "{what} failed mid-stream");
                sink.send(Err(std::io::Error::other(e)));
            }
        }
    });
    match ready_rx.await {
        Ok(Ok(())) => Ok(Body::from_stream(ChunkStream(rx))),
        Ok(Err(e)) => Err(e),
        Err(_) => Err(ApiError::internal(format!("{what} task ended unexpectedly"))),
    }
}

/// A request body as a blocking reader, fed by [`read_blocking`].
pub(crate) struct BodyReader {
    rx: mpsc::Receiver<Chunk>,
    current: Bytes,
}

impl Read for BodyReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        while self.current.is_empty() {
            match self.rx.blocking_recv() {
                Some(chunk) => self.current = chunk?,
                None => return Ok(0),
            }
        }
        let n = buf.len().min(self.current.len());
        buf.get_mut(..n)
            .unwrap_or_default()
            .copy_from_slice(self.current.get(..n).unwrap_or_default());
        self.current = self.current.slice(n..);
        Ok(n)
    }
}

/// Runs `read` on the blocking pool with `body` as a [`BodyReader`], and
/// returns what it returns. Reading stops early, and the rest of the body
/// is left unread, when `read` returns first.
pub(crate) async fn read_blocking<T: Send + 'static>(
    body: Body,
    read: impl FnOnce(&mut BodyReader) -> T + Send + 'static,
) -> Result<T, ApiError> {
    let (tx, rx) = mpsc::channel(CHANNEL_DEPTH);
    let task = tokio::task::spawn_blocking(move || {
        let mut reader = BodyReader {
            rx,
            current: Bytes::new(),
        };
        read(&mut reader)
    });
    let mut stream = body.into_data_stream();
    loop {
        let next = std::future::poll_fn(|cx| Pin::new(&mut stream).poll_next(cx));
        let chunk = match tokio::time::timeout(SEND_TIMEOUT, next).await {
            Ok(Some(chunk)) => chunk.map_err(io::Error::other),
            Ok(None) => break,
            Err(_) => Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!("the client sent nothing for {} s", SEND_TIMEOUT.as_secs()),
            )),
        };
        let failed = chunk.is_err();
        // A send fails once the reader has stopped.
        if tx.send(chunk).await.is_err() || failed {
            break;
        }
    }
    drop(tx);
    task.await.map_err(|e| {
        tracing::error!(error = %e, "body reader failed");
        ApiError::internal(format!("internal error: {e}"))
    })
}
