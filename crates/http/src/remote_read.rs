//! `POST /api/v1/read`: Prometheus remote read, so a Prometheus server (its
//! `remote_read`) or a migration tool can read what Cairn stores. Each query
//! of the request selects the series matching its matchers and their samples
//! in `[start, end]` (both inclusive), as Prometheus' own handler does.
//!
//! Two answers, negotiated by the request's accepted types in its order:
//! - samples: one snappy-compressed `ReadResponse`, built whole, so bounded
//!   by [`ApiConfig::remote_read_sample_limit`](crate::ApiConfig) per query
//!   (400 `exceeded sample limit (N)` past it, Prometheus' words);
//! - streamed XOR chunks: frames of one series each, a series cut into
//!   several frames past [`ApiConfig::remote_read_max_bytes_in_frame`](crate::ApiConfig),
//!   written as the series are read ([`crate::body_stream`]), so memory is
//!   bounded by a frame whatever the read's size. Series come sorted by
//!   labels, as the streamed type requires. As with Prometheus' own server,
//!   a Prometheus client takes each frame for a series of its own, so the
//!   frame size should stay above what one series of a read holds.
//!
//! Native histograms are in the samples answer (counted toward its limit as
//! samples are, as Prometheus counts them); the streamed answer carries a
//! series' float samples only, as Cairn writes no histogram chunks yet.
//!
//! At most `remote_read_concurrency` reads run at once (0: no limit), as
//! Prometheus' `--storage.remote.read-concurrent-limit`; others wait for
//! one. A read then takes a query slot like any expensive read
//! ([`crate::admission`]: a bounded queue, 503 past it). Errors use the
//! API's JSON envelope; a Prometheus client reports the body's text.

use axum::body::Bytes;
use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use cairn_model::{Labels, Matcher};
use cairn_protocols::remote_read::{self, QueryResult, ReadResponse, ResponseType, SeriesFrames};
use cairn_protocols::remote_write::histogram_to_proto;
use cairn_protocols::remote_write::proto::{Label, Sample, TimeSeries};
use cairn_storage::{Querier, SelectHints, SeriesSet, Storage, StorageError};

use crate::body_stream::{ChunkSink, stream_blocking};
use crate::{ApiError, AppState, Tenant};

/// One query of a read request, checked.
struct ReadQuery {
    start: i64,
    end: i64,
    matchers: Vec<Matcher>,
}

pub async fn remote_read(
    State(state): State<AppState>,
    Tenant(scope): Tenant,
    body: Bytes,
) -> Result<Response, ApiError> {
    let bad = |e: remote_read::BadReadRequest| ApiError::bad_data(e.0);
    let request = remote_read::decode_request(&body).map_err(bad)?;
    let response_type = request.response_type().map_err(bad)?;
    let queries = request
        .queries
        .iter()
        .map(|q| {
            Ok(ReadQuery {
                start: q.start_timestamp_ms,
                end: q.end_timestamp_ms,
                matchers: q.matchers().map_err(bad)?,
            })
        })
        .collect::<Result<Vec<_>, ApiError>>()?;
    let permit = state
        .remote_read_slots()
        .clone()
        .acquire_owned()
        .await
        .map_err(|_| ApiError::internal("remote read slots closed"))?;
    let storage = state.reader(&scope)?;
    // Held until the answer is built, or streamed to its last frame.
    let slot = state.query_gate().admit().await?;
    let config = state.config();
    match response_type {
        ResponseType::Samples => {
            let limit = config.remote_read_sample_limit;
            let body = slot
                .run(move || {
                    let _permit = permit;
                    samples_response(&*storage, &queries, limit)
                })
                .await?;
            Ok((
                [
                    (header::CONTENT_TYPE, remote_read::SAMPLES_CONTENT_TYPE),
                    (header::CONTENT_ENCODING, "snappy"),
                ],
                body,
            )
                .into_response())
        }
        ResponseType::StreamedXorChunks => {
            let frame_bytes = config.remote_read_max_bytes_in_frame;
            let body = stream_blocking(
                "remote read",
                frame_bytes,
                move || {
                    let selected = select_all(&*storage, &queries)?;
                    Ok((selected, permit, slot))
                },
                move |(selected, _permit, _slot), sink| {
                    stream_chunks(selected, frame_bytes, sink).map_err(|e| e.to_string())
                },
            )
            .await?;
            Ok(([(header::CONTENT_TYPE, remote_read::STREAMED_CONTENT_TYPE)], body).into_response())
        }
    }
}

/// The series of one query, with the querier they are read through (kept
/// alive as long as they are).
struct Selected {
    series: SeriesSet,
    _querier: Box<dyn Querier>,
}

/// Each query's series, selected now so that a bad selector is an error
/// response rather than a broken stream.
fn select_all(storage: &dyn Storage, queries: &[ReadQuery]) -> Result<Vec<Selected>, StorageError> {
    queries
        .iter()
        .map(|q| {
            let querier = storage.querier(q.start, q.end)?;
            let series = querier.select(&SelectHints::default(), &q.matchers)?;
            Ok(Selected {
                series,
                _querier: querier,
            })
        })
        .collect()
}

fn labels_of(labels: &Labels) -> Vec<Label> {
    labels
        .iter()
        .map(|l| Label {
            name: l.name.to_string(),
            value: l.value.to_string(),
        })
        .collect()
}

/// The samples answer, snappy-compressed; 400 once one query's result would
/// hold more than `limit` samples (0: no limit).
fn samples_response(storage: &dyn Storage, queries: &[ReadQuery], limit: usize) -> Result<Vec<u8>, ApiError> {
    let mut response = ReadResponse::default();
    for selected in select_all(storage, queries)? {
        // Counted per query, as Prometheus does.
        let mut count = 0usize;
        let mut result = QueryResult::default();
        for s in selected.series {
            let mut s = s?;
            let mut samples = Vec::new();
            let mut add = |n: usize| {
                count += n;
                if limit > 0 && count > limit {
                    return Err(ApiError::bad_data(format!("exceeded sample limit ({limit})")));
                }
                Ok(())
            };
            add(s.histograms.len())?;
            while let Some(block) = s.samples.next_block()? {
                add(block.ts.len())?;
                samples.extend(
                    block
                        .ts
                        .iter()
                        .zip(block.vs)
                        .map(|(&timestamp, &value)| Sample { value, timestamp }),
                );
            }
            if !samples.is_empty() || !s.histograms.is_empty() {
                result.timeseries.push(TimeSeries {
                    labels: labels_of(&s.labels),
                    samples,
                    histograms: s.histograms.iter().map(histogram_to_proto).collect(),
                    ..Default::default()
                });
            }
        }
        response.results.push(result);
    }
    Ok(remote_read::encode_samples_response(&response))
}

/// Writes one frame per series (more when its chunks pass `frame_bytes`),
/// query by query. Stops quietly when the client went away.
fn stream_chunks(selected: Vec<Selected>, frame_bytes: usize, sink: &mut ChunkSink) -> Result<(), StorageError> {
    for (query_index, selected) in selected.into_iter().enumerate() {
        for s in selected.series {
            let mut s = s?;
            let mut frames = SeriesFrames::new(labels_of(&s.labels), query_index, frame_bytes);
            while let Some(block) = s.samples.next_block()? {
                if frames.push(block.ts, block.vs, &mut sink.buf) && !sink.flush_if_full() {
                    return Ok(());
                }
            }
            frames.finish(&mut sink.buf);
            if !sink.flush_if_full() {
                return Ok(());
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use cairn_model::stale_nan;
    use cairn_protocols::remote_read::{
        LabelMatcher, MatcherType, Query, ReadRequest, ReadResponse, ResponseType, read_frame,
    };
    use prost::Message;

    use crate::test_util::*;

    type Got = Vec<(Vec<(String, String)>, Vec<(i64, u64)>)>;

    fn eq(name: &str, value: &str) -> LabelMatcher {
        LabelMatcher {
            r#type: MatcherType::Eq as i32,
            name: name.into(),
            value: value.into(),
        }
    }

    fn re(name: &str, value: &str) -> LabelMatcher {
        LabelMatcher {
            r#type: MatcherType::Re as i32,
            name: name.into(),
            value: value.into(),
        }
    }

    fn body(queries: Vec<(i64, i64, Vec<LabelMatcher>)>, types: &[ResponseType]) -> Vec<u8> {
        let req = ReadRequest {
            queries: queries
                .into_iter()
                .map(|(start, end, matchers)| Query {
                    start_timestamp_ms: start,
                    end_timestamp_ms: end,
                    matchers,
                    hints: None,
                })
                .collect(),
            accepted_response_types: types.iter().map(|&t| t as i32).collect(),
        };
        snap::raw::Encoder::new().compress_vec(&req.encode_to_vec()).unwrap()
    }

    async fn read(app: &TestApp, body: Vec<u8>) -> TestResponse {
        app.post_raw(
            "/api/v1/read",
            &[
                ("content-type", "application/x-protobuf"),
                ("content-encoding", "snappy"),
            ],
            body,
        )
        .await
    }

    /// A remote read is an expensive read: refused (503) while the query
    /// slots are taken and their queue is full, in either answer type.
    #[tokio::test]
    async fn a_remote_read_waits_for_a_query_slot() {
        let app = TestApp::with_config(crate::ApiConfig {
            query_admission: crate::AdmissionConfig {
                max_concurrency: 1,
                max_queue_length: 0,
                max_queue_wait: std::time::Duration::from_secs(60),
            },
            ..crate::ApiConfig::default()
        });
        app.write(&[("up", "a", &[(1000, 1.0)])]);
        let query = || vec![(0, 2000, vec![eq("__name__", "up")])];
        let taken = app.state.query_gate().admit().await.unwrap();
        for types in [[ResponseType::Samples], [ResponseType::StreamedXorChunks]] {
            let r = read(&app, body(query(), &types)).await;
            r.check_status(503);
            assert!(r.body.contains(r#""errorType":"unavailable""#), "{}", r.body);
        }
        drop(taken);
        let r = read(&app, body(query(), &[ResponseType::Samples])).await;
        r.check_status(200);
        assert_eq!(sampled(&r)[0].len(), 1);
        let r = read(&app, body(query(), &[ResponseType::StreamedXorChunks])).await;
        r.check_status(200);
        assert_eq!(streamed(&r, 1).0[0].len(), 1);
        assert_eq!(app.state.query_gate().running(), 0);
    }

    fn labels(ls: &[cairn_protocols::remote_write::proto::Label]) -> Vec<(String, String)> {
        ls.iter().map(|l| (l.name.clone(), l.value.clone())).collect()
    }

    /// Per query: series with their samples (value bits).
    fn sampled(resp: &TestResponse) -> Vec<Got> {
        assert_eq!(resp.content_type(), "application/x-protobuf");
        assert_eq!(resp.headers["content-encoding"], "snappy");
        let raw = snap::raw::Decoder::new().decompress_vec(&resp.raw).unwrap();
        ReadResponse::decode(raw.as_slice())
            .unwrap()
            .results
            .iter()
            .map(|r| {
                r.timeseries
                    .iter()
                    .map(|ts| {
                        let samples = ts.samples.iter().map(|s| (s.timestamp, s.value.to_bits())).collect();
                        (labels(&ts.labels), samples)
                    })
                    .collect()
            })
            .collect()
    }

    /// Per query: its series, each with `(first time, samples)` of every
    /// chunk (the chunks' bytes are the codec's, tested there and by
    /// Prometheus in tests/prometheus_remote_read.rs); and the frame count.
    fn streamed(resp: &TestResponse, queries: usize) -> (Vec<Got>, usize) {
        assert_eq!(
            resp.content_type(),
            "application/x-streamed-protobuf; proto=prometheus.ChunkedReadResponse"
        );
        let mut out: Vec<Got> = vec![Vec::new(); queries];
        let (mut stream, mut frames) = (resp.raw.as_slice(), 0);
        while !stream.is_empty() {
            let (frame, rest) = read_frame(stream).unwrap();
            assert_eq!(frame.chunked_series.len(), 1, "one series per frame");
            let series = &frame.chunked_series[0];
            let q = &mut out[frame.query_index as usize];
            let key = labels(&series.labels);
            // A series cut into several frames comes in consecutive frames.
            if q.last().is_none_or(|(k, _)| *k != key) {
                q.push((key, Vec::new()));
            }
            let samples = &mut q.last_mut().unwrap().1;
            for c in &series.chunks {
                let n = u16::from_be_bytes([c.data[0], c.data[1]]) as usize;
                assert!(n > 0 && n <= 120);
                samples.push((c.min_time_ms, n as u64));
            }
            frames += 1;
            stream = rest;
        }
        (out, frames)
    }

    fn app() -> TestApp {
        let app = TestApp::with_config(crate::ApiConfig {
            remote_read_sample_limit: 100,
            remote_read_max_bytes_in_frame: 64,
            ..Default::default()
        });
        let long: Vec<(i64, f64)> = (0..300).map(|i| (i * 1000, i as f64 * 1.5)).collect();
        app.write(&[
            ("up", "a", &[(1000, 1.0), (2000, stale_nan()), (3000, f64::NAN)]),
            ("up", "b", &[(1000, 0.0), (5000, -2.5)]),
            ("long", "a", &long),
        ]);
        app
    }

    #[tokio::test]
    async fn samples_answer_each_query_in_order_within_its_range() {
        let app = app();
        let resp = read(
            &app,
            body(
                vec![
                    (0, 10_000, vec![eq("__name__", "up")]),
                    (2000, 2000, vec![re("job", "a|b")]),
                    (0, 10_000, vec![eq("__name__", "nothing")]),
                ],
                &[],
            ),
        )
        .await;
        resp.check_status(200);
        let name = |m: &str, j: &str| {
            vec![
                ("__name__".to_string(), m.to_string()),
                ("job".to_string(), j.to_string()),
            ]
        };
        let got = sampled(&resp);
        assert_eq!(
            got[0],
            vec![
                (
                    name("up", "a"),
                    vec![
                        (1000, 1f64.to_bits()),
                        (2000, stale_nan().to_bits()),
                        (3000, f64::NAN.to_bits())
                    ]
                ),
                (
                    name("up", "b"),
                    vec![(1000, 0f64.to_bits()), (5000, (-2.5f64).to_bits())]
                ),
            ]
        );
        // Both ends inclusive; series without samples in range are left out.
        assert_eq!(
            got[1],
            vec![
                (name("long", "a"), vec![(2000, 3f64.to_bits())]),
                (name("up", "a"), vec![(2000, stale_nan().to_bits())]),
            ]
        );
        assert!(got[2].is_empty());
    }

    #[tokio::test]
    async fn streamed_chunks_hold_the_samples_in_frames_of_the_budget() {
        let app = app();
        let queries = vec![
            (0, 400_000, vec![eq("__name__", "long")]),
            (0, 10_000, vec![eq("__name__", "up")]),
        ];
        let resp = read(
            &app,
            body(queries, &[ResponseType::StreamedXorChunks, ResponseType::Samples]),
        )
        .await;
        resp.check_status(200);
        let (got, frames) = streamed(&resp, 2);
        // 300 samples: chunks of 120, 120 and 60, a frame each at a 64-byte budget.
        assert_eq!(got[0].len(), 1);
        assert_eq!(got[0][0].1, vec![(0, 120), (120_000, 120), (240_000, 60)]);
        assert_eq!(got[1].len(), 2);
        assert_eq!(got[1][1].1, vec![(1000, 2)]);
        assert_eq!(frames, 5);
    }

    #[tokio::test]
    async fn limits_and_bad_requests_get_prometheus_words() {
        let app = app();
        read(
            &app,
            body(vec![(0, 400_000, vec![re("job", ".+")])], &[ResponseType::Samples]),
        )
        .await
        .check_error(400, "bad_data", "exceeded sample limit (100)");
        // The limit is per query: two queries of 60 samples each pass.
        let sixty = vec![eq("__name__", "long")];
        read(
            &app,
            body(vec![(0, 59_000, sixty.clone()), (60_000, 119_000, sixty)], &[]),
        )
        .await
        .check_status(200);
        // Streamed reads are bounded by frame, not by samples.
        read(
            &app,
            body(
                vec![(0, 400_000, vec![re("job", ".+")])],
                &[ResponseType::StreamedXorChunks],
            ),
        )
        .await
        .check_status(200);
        read(&app, b"not snappy".to_vec()).await.check_status(400);
        let unknown = ReadRequest {
            queries: vec![],
            accepted_response_types: vec![5],
        };
        let resp = read(
            &app,
            snap::raw::Encoder::new()
                .compress_vec(&unknown.encode_to_vec())
                .unwrap(),
        )
        .await;
        resp.check_status(400);
        assert!(
            resp.body
                .contains("server does not support any of the requested response types")
        );
        read(&app, body(vec![(0, 1, vec![re("job", "(")])], &[]))
            .await
            .check_status(400);
    }

    #[tokio::test]
    async fn samples_answer_carries_native_histograms_beside_floats() {
        use cairn_model::histogram::{Histogram, HistogramSample};
        use cairn_storage::Appendable;
        let app = app();
        let h = |count: f64| Histogram {
            schema: 2,
            count,
            sum: count * 0.5,
            positive: vec![(1, count - 1.0), (4, 1.0)],
            ..Histogram::default()
        };
        let labels = cairn_model::Labels::from_pairs([("__name__", "rpc_seconds"), ("job", "a")]);
        let mut w = app.storage.appender();
        w.append(&labels, &[cairn_model::Sample::new(500, 7.0)]).unwrap();
        w.append_histograms(
            &labels,
            &[HistogramSample::new(1000, h(3.0)), HistogramSample::new(2000, h(5.0))],
        )
        .unwrap();
        w.commit().unwrap();
        let resp = read(
            &app,
            body(
                vec![(0, 10_000, vec![eq("__name__", "rpc_seconds")])],
                &[ResponseType::Samples],
            ),
        )
        .await;
        resp.check_status(200);
        let raw = snap::raw::Decoder::new().decompress_vec(&resp.raw).unwrap();
        let answer = ReadResponse::decode(raw.as_slice()).unwrap();
        let series = &answer.results[0].timeseries;
        assert_eq!(series.len(), 1);
        assert_eq!(series[0].samples.len(), 1);
        // Read back as a remote write of the same series would be.
        let rewritten = cairn_protocols::remote_write::proto::WriteRequest {
            timeseries: series.clone(),
            ..Default::default()
        };
        let batch = cairn_protocols::remote_write::decode_write_request(
            &rewritten.encode_to_vec(),
            cairn_protocols::remote_write::ContentEncoding::Identity,
            &cairn_protocols::DecodeLimits::default(),
        )
        .unwrap();
        let histograms: Vec<_> = batch
            .series()
            .flat_map(|s| s.histograms().to_vec())
            .map(|s| (s.t, s.h.count, s.h.positive.clone()))
            .collect();
        assert_eq!(
            histograms,
            vec![
                (1000, 3.0, vec![(1, 2.0), (4, 1.0)]),
                (2000, 5.0, vec![(1, 4.0), (4, 1.0)])
            ]
        );
        // Histograms count toward the sample limit as Prometheus counts them.
        let many: Vec<HistogramSample> = (0..100).map(|i| HistogramSample::new(10_000 + i, h(3.0))).collect();
        let mut w = app.storage.appender();
        w.append_histograms(&labels, &many).unwrap();
        w.commit().unwrap();
        read(
            &app,
            body(
                vec![(0, 20_000, vec![eq("__name__", "rpc_seconds")])],
                &[ResponseType::Samples],
            ),
        )
        .await
        .check_error(400, "bad_data", "exceeded sample limit (100)");
    }
}
