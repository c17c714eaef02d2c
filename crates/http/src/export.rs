//! `GET|POST /api/v1/export`: raw samples as JSON lines, compatible with
//! VictoriaMetrics' export (and so its `/api/v1/import`):
//!
//! ```text
//! {"metric":{"__name__":"up","job":"x"},"values":[1,2.5],"timestamps":[1700000000000,1700000015000]}
//! ```
//!
//! Special values: VictoriaMetrics writes a staleness marker as JSON `null`
//! (and its importer reads `null` back as a staleness marker), so we do the
//! same. VictoriaMetrics drops other NaNs at ingestion and would print
//! `NaN`/`Inf` bare, which is not JSON; we keep every line valid JSON by
//! writing a non-stale NaN as the string `"NaN"` and infinities as `"+Inf"` /
//! `"-Inf"`, the spelling the Prometheus API uses for sample values.
//!
//! Native histograms, which VictoriaMetrics' format has no room for, get a
//! line of their own per series after its float line, in the form
//! [`cairn_protocols::histogram_json`] describes; `/api/v1/import` reads it
//! back exactly.
//!
//! The body is streamed ([`crate::body_stream`]) in chunks of about
//! `export_chunk_bytes`.

use std::io::Write;

use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use cairn_model::{HistogramSample, is_stale_nan};
use cairn_protocols::{histogram_json, vm_native};
use cairn_storage::{SelectHints, StorageError, TenantScope};

use crate::body_stream::{ChunkSink, stream_blocking};
use crate::merged_series::MergedSeries;
use crate::{ApiError, AppState, LabelsJson, MAX_TIME, Params, Tenant, parse_match_params, time_range};

pub async fn export(
    State(state): State<AppState>,
    Tenant(scope): Tenant,
    params: Params,
) -> Result<Response, ApiError> {
    respond(
        &state,
        &scope,
        &params,
        "export",
        "application/stream+json",
        |series, _, sink| stream(series, sink),
    )
    .await
}

/// `GET|POST /api/v1/export/native`: the same series in VictoriaMetrics'
/// native format ([`cairn_protocols::vm_native`]), which `vmctl vm-native`
/// and VictoriaMetrics' `/api/v1/import/native` read. The format has no room
/// for native histograms or for NaNs other than staleness markers: they are
/// left out, and how many is logged.
pub async fn export_native(
    State(state): State<AppState>,
    Tenant(scope): Tenant,
    params: Params,
) -> Result<Response, ApiError> {
    respond(
        &state,
        &scope,
        &params,
        "native export",
        "VictoriaMetrics/native",
        stream_native,
    )
    .await
}

/// Writes the selected series, given the request's time range, as one format.
type WriteBody = fn(MergedSeries, (i64, i64), &mut ChunkSink) -> Result<(), StorageError>;

/// Selects the series of `match[]` in the request's time range and streams
/// them as `write` writes them, given the range.
async fn respond(
    state: &AppState,
    scope: &TenantScope,
    params: &Params,
    what: &'static str,
    content_type: &'static str,
    write: WriteBody,
) -> Result<Response, ApiError> {
    let selectors = params.get_all("match[]");
    if selectors.is_empty() {
        return Err(ApiError::bad_data("no match[] parameter provided"));
    }
    let (start, end) = time_range(params, state.default_start(), MAX_TIME)?;
    let sets = parse_match_params(&selectors)?;
    let storage = state.reader(scope)?;
    // The slot is held until the last chunk is written.
    let slot = state.query_gate().admit().await?;
    let body = stream_blocking(
        what,
        state.config().export_chunk_bytes,
        move || {
            let series = MergedSeries::select(&*storage, start, end, &SelectHints::default(), &sets)?;
            Ok((series, slot))
        },
        move |(series, _slot), sink| write(series, (start, end), sink).map_err(|e| e.to_string()),
    )
    .await?;
    Ok(([(header::CONTENT_TYPE, content_type)], body).into_response())
}

/// Writes the time range, then each series as native blocks.
fn stream_native(series: MergedSeries, (start, end): (i64, i64), sink: &mut ChunkSink) -> Result<(), StorageError> {
    vm_native::write_header(&mut sink.buf, start, end);
    let mut values = Vec::new();
    let mut timestamps = Vec::new();
    let (mut nans, mut histograms) = (0, 0);
    for s in series {
        let mut s = s?;
        values.clear();
        timestamps.clear();
        while let Some(block) = s.samples.next_block()? {
            timestamps.extend_from_slice(block.ts);
            values.extend_from_slice(block.vs);
        }
        nans += vm_native::write_series(&mut sink.buf, &s.labels, &timestamps, &values);
        histograms += s.histograms.len();
        if !sink.flush_if_full() {
            return Ok(());
        }
    }
    if nans + histograms > 0 {
        tracing::warn!(
            nans,
            histograms,
            "native export left out samples VictoriaMetrics' format cannot hold"
        );
    }
    Ok(())
}

/// Writes each series as one JSON line. Returns early and quietly when the
/// client went away.
fn stream(series: MergedSeries, sink: &mut ChunkSink) -> Result<(), StorageError> {
    let mut values = Vec::new();
    let mut timestamps = Vec::new();
    for s in series {
        let mut s = s?;
        values.clear();
        timestamps.clear();
        while let Some(block) = s.samples.next_block()? {
            timestamps.extend_from_slice(block.ts);
            values.extend_from_slice(block.vs);
        }
        // VictoriaMetrics skips series without samples in range.
        if !timestamps.is_empty() {
            write_line(&mut sink.buf, &s.labels, &values, &timestamps);
        }
        if !s.histograms.is_empty() {
            write_histogram_line(&mut sink.buf, &s.labels, &s.histograms);
        }
        if !sink.flush_if_full() {
            return Ok(());
        }
    }
    Ok(())
}

/// One export line, newline included.
pub(crate) fn write_line(buf: &mut Vec<u8>, labels: &cairn_model::Labels, values: &[f64], timestamps: &[i64]) {
    buf.extend_from_slice(b"{\"metric\":");
    // Serialising strings into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut *buf, &LabelsJson(labels));
    buf.extend_from_slice(b",\"values\":[");
    for (i, &v) in values.iter().enumerate() {
        if i > 0 {
            buf.push(b',');
        }
        write_value(buf, v);
    }
    write_timestamps(buf, timestamps.iter().copied());
}

/// One line of a series' histogram samples, newline included.
fn write_histogram_line(buf: &mut Vec<u8>, labels: &cairn_model::Labels, samples: &[HistogramSample]) {
    buf.extend_from_slice(b"{\"metric\":");
    let _ = serde_json::to_writer(&mut *buf, &LabelsJson(labels));
    buf.extend_from_slice(b",\"histograms\":[");
    for (i, s) in samples.iter().enumerate() {
        if i > 0 {
            buf.push(b',');
        }
        histogram_json::write_histogram(buf, &s.h);
    }
    write_timestamps(buf, samples.iter().map(|s| s.t));
}

/// Closes a line's values with its timestamps and the newline.
fn write_timestamps(buf: &mut Vec<u8>, timestamps: impl Iterator<Item = i64>) {
    buf.extend_from_slice(b"],\"timestamps\":[");
    for (i, t) in timestamps.enumerate() {
        if i > 0 {
            buf.push(b',');
        }
        let _ = write!(buf, "{t}");
    }
    buf.extend_from_slice(b"]}\n");
}

/// A sample value: a staleness marker as `null`, as VictoriaMetrics writes
/// it; any other number as histograms' numbers are written.
fn write_value(buf: &mut Vec<u8>, v: f64) {
    if is_stale_nan(v) {
        buf.extend_from_slice(b"null");
    } else {
        histogram_json::write_number(buf, v);
    }
}

#[cfg(test)]
mod tests {
    use crate::test_util::*;
    use cairn_model::stale_nan;

    #[tokio::test]
    async fn export_lines() {
        let app = TestApp::new();
        app.write(&[
            ("up", "x", &[(1_700_000_000_000, 1.0), (1_700_000_015_000, 2.5)]),
            (
                "up",
                "y",
                &[
                    (1000, stale_nan()),
                    (2000, f64::NAN),
                    (3000, f64::INFINITY),
                    (4000, f64::NEG_INFINITY),
                    (5000, -0.125),
                ],
            ),
            ("other", "x", &[(1000, 1e21)]),
        ]);
        let x = r#"{"metric":{"__name__":"up","job":"x"},"values":[1,2.5],"timestamps":[1700000000000,1700000015000]}"#;
        let y = r#"{"metric":{"__name__":"up","job":"y"},"values":[null,"NaN","+Inf","-Inf",-0.125],"timestamps":[1000,2000,3000,4000,5000]}"#;
        let other =
            r#"{"metric":{"__name__":"other","job":"x"},"values":[1000000000000000000000],"timestamps":[1000]}"#;
        let resp = app.get("/api/v1/export?match[]=up").await;
        resp.check(200, &format!("{x}\n{y}\n"));
        assert_eq!(resp.content_type(), "application/stream+json");
        // Union of overlapping selectors, sorted and deduplicated.
        app.post_form(
            "/prometheus/api/v1/export",
            "match[]=up&match[]={job=\"x\"}&match[]=up{job=\"y\"}",
        )
        .await
        .check(200, &format!("{other}\n{x}\n{y}\n"));
        // Time range.
        app.get("/api/v1/export?match[]=up&start=2&end=3")
            .await
            .check(
                200,
                "{\"metric\":{\"__name__\":\"up\",\"job\":\"y\"},\"values\":[\"NaN\",\"+Inf\"],\"timestamps\":[2000,3000]}\n",
            );
        app.get("/api/v1/export?match[]=nothing").await.check(200, "");
        // Every line is valid JSON.
        let body = app.get("/api/v1/export?match[]={job=~\".%2B\"}").await.body;
        for line in body.lines() {
            serde_json::from_str::<serde_json::Value>(line).expect(line);
        }
    }

    #[tokio::test]
    async fn histograms_get_a_line_of_their_own() {
        use cairn_model::{Histogram, HistogramSample, Labels, Sample};
        use cairn_storage::Appendable;
        let app = TestApp::new();
        let labels = Labels::from_pairs([("__name__", "rpc_seconds")]);
        let h = Histogram {
            schema: 3,
            count: 12.0,
            sum: 4.5,
            zero_threshold: 0.001,
            zero_count: 2.0,
            positive: vec![(0, 4.0), (3, 6.0)],
            ..Histogram::default()
        };
        let mut appender = app.storage.appender();
        appender.append(&labels, &[Sample::new(1000, 1.0)]).unwrap();
        appender
            .append_histograms(
                &labels,
                &[HistogramSample::new(2000, h.clone()), HistogramSample::new(3000, h)],
            )
            .unwrap();
        appender.commit().unwrap();
        let one = r#"{"schema":3,"count":12,"sum":4.5,"zero_threshold":0.001,"zero_count":2,"positive":[[0,4],[3,6]]}"#;
        app.get("/api/v1/export?match[]=rpc_seconds").await.check(
            200,
            &format!(
                "{}\n{}\n",
                r#"{"metric":{"__name__":"rpc_seconds"},"values":[1],"timestamps":[1000]}"#,
                format_args!(
                    r#"{{"metric":{{"__name__":"rpc_seconds"}},"histograms":[{one},{one}],"timestamps":[2000,3000]}}"#
                )
            ),
        );
    }

    #[tokio::test]
    async fn export_streams_in_chunks() {
        let app = TestApp::with_config(crate::ApiConfig {
            export_chunk_bytes: 16,
            ..Default::default()
        });
        let samples: Vec<(i64, f64)> = (0..1000).map(|i| (i * 1000, i as f64)).collect();
        let series: Vec<(String, Vec<(i64, f64)>)> = (0..50).map(|i| (format!("job{i:02}"), samples.clone())).collect();
        let refs: Vec<TestSeries<'_>> = series.iter().map(|(j, s)| ("m", j.as_str(), s.as_slice())).collect();
        app.write(&refs);
        let body = app.get("/api/v1/export?match[]=m").await.body;
        let lines: Vec<&str> = body.lines().collect();
        assert_eq!(lines.len(), 50);
        assert!(lines[49].starts_with(r#"{"metric":{"__name__":"m","job":"job49"}"#));
    }

    #[tokio::test]
    async fn export_errors() {
        let app = TestApp::new();
        app.get("/api/v1/export")
            .await
            .check_error(400, "bad_data", "no match[] parameter provided");
        app.get("/api/v1/export?match[]=up{").await.check_status(400);
        app.get("/api/v1/export?match[]=up&end=bad").await.check_status(400);
    }
}
