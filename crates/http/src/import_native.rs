//! `POST /api/v1/import/native`: VictoriaMetrics' native format
//! ([`cairn_protocols::vm_native`]), as `vmctl vm-native` and
//! VictoriaMetrics' `/api/v1/export/native` send it.
//!
//! A migration sends one body of any size, so the body is read as a stream
//! and stored in batches as it arrives: memory stays flat and there is no
//! body limit. Takes `extra_label` and gzip, deflate or zstd bodies, as the
//! other imports do.
//!
//! Answers: 204 when every block was stored. A block whose labels are
//! refused is skipped and the rest stored; then 400 names how many were
//! skipped and the first reason. A stream that breaks (cut short, corrupt
//! framing or encoding) stops there: what came before it is stored, and the
//! 400 says how much.

use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use cairn_model::Label;
use cairn_protocols::WriteBatch;
use cairn_protocols::text_import::{decompressing_reader, finish_labels, parse_extra_labels};
use cairn_protocols::vm_native::NativeReader;
use cairn_storage::TenantId;

use crate::body_stream::{BodyReader, read_blocking};
use crate::import::{body_refusal, query_params, refuse};
use crate::ingest::{Protocol, Refusal, store_batch, write_tenant};
use crate::{ApiError, AppState};

/// Samples gathered before they are stored as one commit.
const BATCH_SAMPLES: usize = 64 * 1024;
/// Largest zstd window a streamed body may use.
const ZSTD_WINDOW_LOG: u32 = 27;

pub async fn import_native(State(state): State<AppState>, req: Request) -> Response {
    match handle(&state, req).await {
        Ok(()) => StatusCode::NO_CONTENT.into_response(),
        Err(refusal) => refuse(&state, Protocol::VmNative, refusal),
    }
}

async fn handle(state: &AppState, req: Request) -> Result<(), Refusal> {
    let params = query_params(&req);
    let extra = parse_extra_labels(params.get_all("extra_label")).map_err(body_refusal)?;
    let tenant = write_tenant(req.headers())?;
    let encoding = req
        .headers()
        .get(header::CONTENT_ENCODING)
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
    let state = state.clone();
    let body = req.into_body();
    read_blocking(body, move |reader| {
        let metrics = state.metrics().clone();
        metrics.measure_ingest(|| import(&state, &tenant, encoding.as_deref(), &extra, reader))
    })
    .await
    .map_err(|e| ("internal", e))?
}

/// Reads blocks and stores them batch by batch.
fn import(
    state: &AppState,
    tenant: &TenantId,
    encoding: Option<&str>,
    extra: &[Label],
    body: &mut BodyReader,
) -> Result<(), Refusal> {
    let limits = state.config().remote_write_limits;
    let (_, plain) = decompressing_reader(body, encoding, ZSTD_WINDOW_LOG).map_err(body_refusal)?;
    let mut stored = 0usize;
    let mut skipped = Skipped::default();
    let mut batch = WriteBatch::default();
    let store = |batch: &mut WriteBatch, stored: &mut usize| -> Result<(), Refusal> {
        store_batch(state, tenant, Protocol::VmNative, batch)?;
        *stored += batch.sample_count();
        *batch = WriteBatch::default();
        Ok(())
    };
    let broken = |e: cairn_protocols::vm_native::NativeError, stored: usize| {
        (
            "bad_data",
            ApiError::bad_data(format!("{e} ({stored} samples stored before it)")),
        )
    };
    let mut reader = NativeReader::new(plain).map_err(|e| broken(e, 0))?;
    loop {
        let block = match reader.next_block() {
            Ok(Some(block)) => block,
            Ok(None) => break,
            Err(e) => {
                store(&mut batch, &mut stored)?;
                return Err(broken(e, stored));
            }
        };
        if block.samples.is_empty() {
            continue;
        }
        match finish_labels(block.labels, extra, &limits) {
            Ok(labels) => batch.push(&labels, &block.samples),
            Err(reason) => skipped.add(reason),
        }
        if batch.sample_count() >= BATCH_SAMPLES {
            store(&mut batch, &mut stored)?;
        }
    }
    store(&mut batch, &mut stored)?;
    skipped.into_result(state, stored)
}

/// Blocks refused for their labels.
#[derive(Default)]
struct Skipped {
    count: usize,
    first: Option<String>,
}

impl Skipped {
    fn add(&mut self, reason: String) {
        self.count += 1;
        self.first.get_or_insert(reason);
    }

    fn into_result(self, state: &AppState, stored: usize) -> Result<(), Refusal> {
        let Some(first) = self.first else { return Ok(()) };
        state
            .metrics()
            .ingest_samples_rejected(Protocol::VmNative, "bad_line", self.count as u64);
        Err((
            "bad_lines",
            ApiError::bad_data(format!(
                "{} blocks skipped ({stored} samples stored); first error: {first}",
                self.count
            )),
        ))
    }
}

#[cfg(test)]
mod tests;
