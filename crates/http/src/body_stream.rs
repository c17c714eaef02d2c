//! Response bodies written on the blocking pool and streamed as they grow:
//! a blocking task opens what it will walk (an error there is still a proper
//! error response), then writes the body into a [`ChunkSink`], which hands
//! chunks to the connection through a bounded channel. Memory stays flat
//! whatever the body's size, and a client that disconnects, or reads
//! nothing for [`SEND_TIMEOUT`], stops the walk (and frees what it holds:
//! a blocking thread, a remote-read slot).

use std::pin::Pin;
use std::task::{Context, Poll};

use axum::body::{Body, Bytes};
use tokio::sync::{mpsc, oneshot};

use crate::ApiError;

/// Chunks in flight between the writer and the connection.
const CHANNEL_DEPTH: usize = 8;

/// How long the writer waits for the connection to take a chunk.
pub(crate) const SEND_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);

type Chunk = Result<Bytes, std::io::Error>;

/// The response body: chunks from the blocking writer.
struct ChunkStream(mpsc::Receiver<Chunk>);

impl futures_core::Stream for ChunkStream {
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
