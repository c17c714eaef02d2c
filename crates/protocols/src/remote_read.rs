//! Prometheus remote read (`prompb/remote.proto`), the server side: the
//! request a Prometheus `remote_read` client sends, and the two answers it
//! accepts, one snappy-compressed [`ReadResponse`] of raw samples, or a
//! stream of [`ChunkedReadResponse`] frames of XOR chunks ([`put_frame`];
//! [`read_frame`] reads them back, as a client does).
//!
//! Messages are hand-written for prost; labels and samples are remote
//! write's ([`crate::remote_write::proto`]).

use cairn_model::{MatchOp, Matcher};

use crate::remote_write::proto::{Label, TimeSeries};

/// A read request Cairn cannot serve: malformed, too large, or asking for
/// what it does not offer. Answered with 400 and this text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct BadReadRequest(pub String);

/// Largest read request once decompressed: Prometheus' own bound. (The
/// compressed body is bounded by the HTTP layer's body limit.)
pub const MAX_REQUEST_BYTES: usize = 32 << 20;

/// `prometheus.ReadRequest`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ReadRequest {
    #[prost(message, repeated, tag = "1")]
    pub queries: Vec<Query>,
    #[prost(enumeration = "ResponseType", repeated, tag = "2")]
    pub accepted_response_types: Vec<i32>,
}

/// `prometheus.ReadRequest.ResponseType`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
#[repr(i32)]
pub enum ResponseType {
    /// One snappy-compressed [`ReadResponse`].
    Samples = 0,
    /// Delimited [`ChunkedReadResponse`] frames, one series' chunks each.
    StreamedXorChunks = 1,
}

/// `prometheus.Query`: series matching all `matchers`, samples in
/// `[start_timestamp_ms, end_timestamp_ms]`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Query {
    #[prost(int64, tag = "1")]
    pub start_timestamp_ms: i64,
    #[prost(int64, tag = "2")]
    pub end_timestamp_ms: i64,
    #[prost(message, repeated, tag = "3")]
    pub matchers: Vec<LabelMatcher>,
    #[prost(message, optional, tag = "4")]
    pub hints: Option<ReadHints>,
}

/// `prometheus.LabelMatcher`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct LabelMatcher {
    #[prost(enumeration = "MatcherType", tag = "1")]
    pub r#type: i32,
    #[prost(string, tag = "2")]
    pub name: String,
    #[prost(string, tag = "3")]
    pub value: String,
}

/// `prometheus.LabelMatcher.Type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
#[repr(i32)]
pub enum MatcherType {
    Eq = 0,
    Neq = 1,
    Re = 2,
    Nre = 3,
}

/// `prometheus.ReadHints`: what the client's query will do with the data.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ReadHints {
    #[prost(int64, tag = "1")]
    pub step_ms: i64,
    #[prost(string, tag = "2")]
    pub func: String,
    #[prost(int64, tag = "3")]
    pub start_ms: i64,
    #[prost(int64, tag = "4")]
    pub end_ms: i64,
    #[prost(string, repeated, tag = "5")]
    pub grouping: Vec<String>,
    #[prost(bool, tag = "6")]
    pub by: bool,
    #[prost(int64, tag = "7")]
    pub range_ms: i64,
}

/// `prometheus.ReadResponse`: one result per query, in request order.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ReadResponse {
    #[prost(message, repeated, tag = "1")]
    pub results: Vec<QueryResult>,
}

/// `prometheus.QueryResult`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct QueryResult {
    #[prost(message, repeated, tag = "1")]
    pub timeseries: Vec<TimeSeries>,
}

/// `prometheus.ChunkedReadResponse`: chunks of series of query `query_index`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ChunkedReadResponse {
    #[prost(message, repeated, tag = "1")]
    pub chunked_series: Vec<ChunkedSeries>,
    #[prost(int64, tag = "2")]
    pub query_index: i64,
}

/// `prometheus.ChunkedSeries`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ChunkedSeries {
    #[prost(message, repeated, tag = "1")]
    pub labels: Vec<Label>,
    #[prost(message, repeated, tag = "2")]
    pub chunks: Vec<Chunk>,
}

/// `prometheus.Chunk`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Chunk {
    #[prost(int64, tag = "1")]
    pub min_time_ms: i64,
    #[prost(int64, tag = "2")]
    pub max_time_ms: i64,
    #[prost(enumeration = "ChunkEncoding", tag = "3")]
    pub r#type: i32,
    #[prost(bytes = "vec", tag = "4")]
    pub data: Vec<u8>,
}

/// `prometheus.Chunk.Encoding`, the values Cairn writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
#[repr(i32)]
pub enum ChunkEncoding {
    Unknown = 0,
    Xor = 1,
}

/// Content type of a [`ResponseType::Samples`] answer (snappy-encoded).
pub const SAMPLES_CONTENT_TYPE: &str = "application/x-protobuf";
/// Content type of a [`ResponseType::StreamedXorChunks`] answer.
pub const STREAMED_CONTENT_TYPE: &str = "application/x-streamed-protobuf; proto=prometheus.ChunkedReadResponse";

/// Decodes a snappy-compressed read request, refusing one that would
/// decompress past [`MAX_REQUEST_BYTES`].
pub fn decode_request(body: &[u8]) -> Result<ReadRequest, BadReadRequest> {
    let bad = BadReadRequest;
    let len = snap::raw::decompress_len(body).map_err(|e| bad(format!("snappy: {e}")))?;
    if len > MAX_REQUEST_BYTES {
        return Err(bad(format!(
            "snappy: decoded length {len} exceeds limit {MAX_REQUEST_BYTES}"
        )));
    }
    let raw = snap::raw::Decoder::new()
        .decompress_vec(body)
        .map_err(|e| bad(format!("snappy: {e}")))?;
    prost::Message::decode(raw.as_slice()).map_err(|e| bad(format!("decoding read request: {e}")))
}

impl ReadRequest {
    /// The first accepted type Cairn serves, as Prometheus negotiates it:
    /// none listed means samples.
    pub fn response_type(&self) -> Result<ResponseType, BadReadRequest> {
        if self.accepted_response_types.is_empty() {
            return Ok(ResponseType::Samples);
        }
        self.accepted_response_types
            .iter()
            .find_map(|&t| ResponseType::try_from(t).ok())
            .ok_or_else(|| {
                BadReadRequest(format!(
                    "server does not support any of the requested response types: {:?}; supported: [SAMPLES STREAMED_XOR_CHUNKS]",
                    self.accepted_response_types
                ))
            })
    }
}

impl Query {
    /// The query's matchers, as Cairn's. A regex that does not compile or an
    /// unknown matcher type is a bad request.
    pub fn matchers(&self) -> Result<Vec<Matcher>, BadReadRequest> {
        self.matchers
            .iter()
            .map(|m| {
                let op = match MatcherType::try_from(m.r#type) {
                    Ok(MatcherType::Eq) => MatchOp::Equal,
                    Ok(MatcherType::Neq) => MatchOp::NotEqual,
                    Ok(MatcherType::Re) => MatchOp::RegexMatch,
                    Ok(MatcherType::Nre) => MatchOp::RegexNoMatch,
                    Err(_) => return Err(BadReadRequest(format!("invalid matcher type {}", m.r#type))),
                };
                Matcher::new(op, m.name.as_str(), m.value.as_str()).map_err(|e| BadReadRequest(e.to_string()))
            })
            .collect()
    }
}

/// Encodes a samples answer: the response, snappy-compressed.
pub fn encode_samples_response(response: &ReadResponse) -> Vec<u8> {
    let raw = prost::Message::encode_to_vec(response);
    // Compressing a buffer in memory fails only past snappy's 4 GiB bound,
    // which the sample limit keeps far away; an empty body would then read
    // as a corrupt answer, never as an empty one.
    snap::raw::Encoder::new().compress_vec(&raw).unwrap_or_default()
}

/// Appends one frame of a streamed answer: the message's length (uvarint),
/// its CRC-32C (u32 big-endian), then the message.
pub fn put_frame(out: &mut Vec<u8>, response: &ChunkedReadResponse) {
    let message = prost::Message::encode_to_vec(response);
    cairn_codec::varint::put_uvarint(out, message.len() as u64);
    out.extend_from_slice(&cairn_codec::crc32c(&message).to_be_bytes());
    out.extend_from_slice(&message);
}

/// A frame of a streamed answer that [`read_frame`] cannot read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("bad frame: {0}")]
pub struct BadFrame(pub String);

/// Reads the first frame of a streamed answer ([`put_frame`]'s form): its
/// message, and the bytes after the frame.
pub fn read_frame(stream: &[u8]) -> Result<(ChunkedReadResponse, &[u8]), BadFrame> {
    let bad = |what: &str| BadFrame(what.to_string());
    let (len, rest) = cairn_codec::varint::get_uvarint(stream).map_err(|_| bad("truncated length"))?;
    let (crc, rest) = rest.split_first_chunk::<4>().ok_or_else(|| bad("truncated checksum"))?;
    let len = usize::try_from(len).ok().filter(|&len| len <= rest.len());
    let (message, rest) = rest.split_at(len.ok_or_else(|| bad("truncated message"))?);
    if u32::from_be_bytes(*crc) != cairn_codec::crc32c(message) {
        return Err(bad("checksum mismatch"));
    }
    let response = prost::Message::decode(message).map_err(|e| BadFrame(format!("message: {e}")))?;
    Ok((response, rest))
}

/// Samples per XOR chunk, as Prometheus cuts its head chunks.
pub const CHUNK_SAMPLES: usize = 120;

/// One series of a streamed answer, written as its samples arrive: cut into
/// XOR chunks of [`CHUNK_SAMPLES`], the chunks into frames of about
/// `frame_bytes` (labels included; a frame may pass it by one chunk, as
/// Prometheus' do). Every frame repeats the series' labels.
pub struct SeriesFrames {
    labels: Vec<Label>,
    query_index: i64,
    /// Bytes of chunks a frame takes before it is cut.
    budget: usize,
    chunks: Vec<Chunk>,
    chunk_bytes: usize,
    ts: Vec<i64>,
    vs: Vec<f64>,
}

impl SeriesFrames {
    pub fn new(labels: Vec<Label>, query_index: usize, frame_bytes: usize) -> Self {
        let label_bytes: usize = labels.iter().map(prost::Message::encoded_len).sum();
        Self {
            labels,
            query_index: query_index as i64,
            budget: frame_bytes.saturating_sub(label_bytes),
            chunks: Vec::new(),
            chunk_bytes: 0,
            ts: Vec::with_capacity(CHUNK_SAMPLES),
            vs: Vec::with_capacity(CHUNK_SAMPLES),
        }
    }

    /// Adds the next samples (ascending, after those added before), and
    /// appends to `out` the frames they fill. Returns whether it appended any.
    pub fn push(&mut self, ts: &[i64], vs: &[f64], out: &mut Vec<u8>) -> bool {
        let mut framed = false;
        for (t, v) in ts.chunks(CHUNK_SAMPLES).zip(vs.chunks(CHUNK_SAMPLES)) {
            self.ts.extend_from_slice(t);
            self.vs.extend_from_slice(v);
            if self.ts.len() >= CHUNK_SAMPLES {
                framed |= self.cut_chunk(CHUNK_SAMPLES, out);
            }
        }
        framed
    }

    /// Appends the frame of what is left, if anything is.
    pub fn finish(mut self, out: &mut Vec<u8>) {
        if !self.ts.is_empty() {
            self.cut_chunk(self.ts.len(), out);
        }
        if !self.chunks.is_empty() {
            self.put(out);
        }
    }

    /// Encodes the first `n` pending samples as a chunk; frames the chunks
    /// when they reach the budget.
    fn cut_chunk(&mut self, n: usize, out: &mut Vec<u8>) -> bool {
        let (ts, vs) = (
            self.ts.get(..n).unwrap_or_default(),
            self.vs.get(..n).unwrap_or_default(),
        );
        let chunk = Chunk {
            min_time_ms: ts.first().copied().unwrap_or_default(),
            max_time_ms: ts.last().copied().unwrap_or_default(),
            r#type: ChunkEncoding::Xor as i32,
            data: cairn_codec::encode_xor_chunk(ts, vs),
        };
        self.ts.drain(..n);
        self.vs.drain(..n);
        self.chunk_bytes += prost::Message::encoded_len(&chunk);
        self.chunks.push(chunk);
        if self.chunk_bytes < self.budget {
            return false;
        }
        self.put(out);
        true
    }

    fn put(&mut self, out: &mut Vec<u8>) {
        let response = ChunkedReadResponse {
            chunked_series: vec![ChunkedSeries {
                labels: self.labels.clone(),
                chunks: std::mem::take(&mut self.chunks),
            }],
            query_index: self.query_index,
        };
        put_frame(out, &response);
        self.chunk_bytes = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use prost::Message;

    fn request(queries: Vec<Query>, types: &[ResponseType]) -> Vec<u8> {
        let req = ReadRequest {
            queries,
            accepted_response_types: types.iter().map(|&t| t as i32).collect(),
        };
        snap::raw::Encoder::new().compress_vec(&req.encode_to_vec()).unwrap()
    }

    fn matcher(t: MatcherType, name: &str, value: &str) -> LabelMatcher {
        LabelMatcher {
            r#type: t as i32,
            name: name.into(),
            value: value.into(),
        }
    }

    #[test]
    fn a_request_decodes_with_its_matchers_and_negotiated_type() {
        let query = Query {
            start_timestamp_ms: 1,
            end_timestamp_ms: 2,
            matchers: vec![
                matcher(MatcherType::Eq, "__name__", "up"),
                matcher(MatcherType::Neq, "job", "x"),
                matcher(MatcherType::Re, "instance", "a.*"),
                matcher(MatcherType::Nre, "zone", "b|c"),
            ],
            hints: None,
        };
        let req = decode_request(&request(vec![query], &[ResponseType::StreamedXorChunks])).unwrap();
        assert_eq!(req.response_type().unwrap(), ResponseType::StreamedXorChunks);
        let ms = req.queries[0].matchers().unwrap();
        let ops: Vec<MatchOp> = ms.iter().map(|m| m.op).collect();
        assert_eq!(
            ops,
            [
                MatchOp::Equal,
                MatchOp::NotEqual,
                MatchOp::RegexMatch,
                MatchOp::RegexNoMatch
            ]
        );
        assert!(ms[2].matches("abc") && !ms[2].matches("xabc"), "regexes are anchored");
        let plain = decode_request(&request(vec![], &[])).unwrap();
        assert_eq!(plain.response_type().unwrap(), ResponseType::Samples);
    }

    proptest::proptest! {
        #[test]
        fn arbitrary_bodies_decode_or_fail_cleanly(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..512)) {
            let compressed = snap::raw::Encoder::new().compress_vec(&bytes).unwrap();
            for body in [&bytes[..], &compressed[..]] {
                if let Ok(req) = decode_request(body) {
                    let _ = req.response_type();
                    for q in &req.queries {
                        let _ = q.matchers();
                    }
                    let again = snap::raw::Encoder::new().compress_vec(&req.encode_to_vec()).unwrap();
                    proptest::prop_assert_eq!(decode_request(&again).unwrap(), req);
                }
            }
        }
    }

    #[test]
    fn unknown_response_types_are_skipped_and_none_known_is_an_error() {
        let req = ReadRequest {
            queries: vec![],
            accepted_response_types: vec![7, ResponseType::Samples as i32],
        };
        assert_eq!(req.response_type().unwrap(), ResponseType::Samples);
        let req = ReadRequest {
            queries: vec![],
            accepted_response_types: vec![7],
        };
        let err = req.response_type().unwrap_err();
        assert!(
            err.0
                .contains("server does not support any of the requested response types")
        );
    }

    #[test]
    fn bad_bodies_matchers_and_oversized_requests_are_bad_requests() {
        assert!(decode_request(b"not snappy").unwrap_err().0.starts_with("snappy"));
        let not_proto = snap::raw::Encoder::new().compress_vec(&[0xff; 16]).unwrap();
        assert!(
            decode_request(&not_proto)
                .unwrap_err()
                .0
                .starts_with("decoding read request")
        );
        // A snappy header announcing more than the limit is refused before
        // anything is decompressed.
        let mut huge = Vec::new();
        let mut len = MAX_REQUEST_BYTES as u64 + 1;
        while len >= 0x80 {
            huge.push(len as u8 | 0x80);
            len >>= 7;
        }
        huge.push(len as u8);
        let err = decode_request(&huge).unwrap_err();
        assert!(err.0.contains("exceeds limit"), "{err}");
        let bad_regex = Query {
            matchers: vec![matcher(MatcherType::Re, "a", "(")],
            ..Default::default()
        };
        assert!(bad_regex.matchers().is_err());
        let bad_type = Query {
            matchers: vec![LabelMatcher {
                r#type: 9,
                name: "a".into(),
                value: "b".into(),
            }],
            ..Default::default()
        };
        assert!(bad_type.matchers().unwrap_err().0.contains("invalid matcher type 9"));
    }

    #[test]
    fn frames_carry_length_and_big_endian_crc32c() {
        let resp = ChunkedReadResponse {
            chunked_series: vec![ChunkedSeries {
                labels: vec![Label {
                    name: "a".into(),
                    value: "b".repeat(200),
                }],
                chunks: vec![],
            }],
            query_index: 3,
        };
        let mut out = Vec::new();
        put_frame(&mut out, &resp);
        put_frame(&mut out, &resp);
        let message = resp.encode_to_vec();
        assert!(message.len() > 127, "a two-byte length");
        let frame_len = 2 + 4 + message.len();
        assert_eq!(out.len(), 2 * frame_len);
        let (mut len, mut shift, mut at) = (0usize, 0, 0);
        loop {
            let b = out[at];
            len |= usize::from(b & 0x7f) << shift;
            shift += 7;
            at += 1;
            if b < 0x80 {
                break;
            }
        }
        assert_eq!(len, message.len());
        let crc = u32::from_be_bytes(out[at..at + 4].try_into().unwrap());
        assert_eq!(crc, cairn_codec::crc32c(&message));
        let back = ChunkedReadResponse::decode(&out[at + 4..frame_len]).unwrap();
        assert_eq!(back, resp);
    }

    /// A stream's frames, each read and checked by [`read_frame`].
    fn frames(mut stream: &[u8]) -> Vec<ChunkedReadResponse> {
        let mut out = Vec::new();
        while !stream.is_empty() {
            let (frame, rest) = read_frame(stream).unwrap();
            out.push(frame);
            stream = rest;
        }
        out
    }

    proptest::proptest! {
        /// Frames read back as written; any cut or flipped byte is an error, not a panic.
        #[test]
        fn frames_round_trip_and_damage_is_refused(
            values in proptest::collection::vec("[a-z]{0,300}", 1..4),
            index in 0i64..5,
            cut in proptest::prelude::any::<proptest::sample::Index>(),
            flip in proptest::prelude::any::<proptest::sample::Index>(),
        ) {
            let resp = |value: &str| ChunkedReadResponse {
                chunked_series: vec![ChunkedSeries {
                    labels: vec![Label { name: "a".into(), value: value.into() }],
                    chunks: vec![],
                }],
                query_index: index,
            };
            let written: Vec<_> = values.iter().map(|v| resp(v)).collect();
            let mut stream = Vec::new();
            for r in &written {
                put_frame(&mut stream, r);
            }
            proptest::prop_assert_eq!(&frames(&stream), &written);
            let (first, rest) = read_frame(&stream).unwrap();
            let first_len = stream.len() - rest.len();
            proptest::prop_assert!(read_frame(&stream[..cut.index(first_len)]).is_err());
            let mut damaged = stream[..first_len].to_vec();
            damaged[flip.index(first_len)] ^= 0x10;
            // CRC-32C catches every one-bit flip of the message; a flipped
            // checksum or length frames bytes it does not match.
            proptest::prop_assert!(read_frame(&damaged).is_err());
            proptest::prop_assert_eq!(&first, &written[0]);
        }
    }

    fn labels() -> Vec<Label> {
        vec![Label {
            name: "__name__".into(),
            value: "up".into(),
        }]
    }

    #[test]
    fn a_series_is_cut_into_chunks_of_120_samples_and_frames_of_the_budget() {
        let ts: Vec<i64> = (0..1000).map(|i| i * 15_000).collect();
        let vs: Vec<f64> = (0..1000).map(|i| (i * i) as f64 * 0.37).collect();
        // Samples arrive in uneven blocks.
        let mut out = Vec::new();
        let mut frames_out = SeriesFrames::new(labels(), 2, 200);
        let mut pushed_frames = false;
        for (t, v) in ts.chunks(77).zip(vs.chunks(77)) {
            pushed_frames |= frames_out.push(t, v, &mut out);
        }
        frames_out.finish(&mut out);
        assert!(pushed_frames, "a 200-byte budget is passed before the end");
        let got = frames(&out);
        assert!(got.len() > 1);
        let mut chunks = Vec::new();
        for f in &got {
            assert_eq!(f.query_index, 2);
            assert_eq!(f.chunked_series.len(), 1);
            assert_eq!(f.chunked_series[0].labels, labels());
            chunks.extend(f.chunked_series[0].chunks.iter().cloned());
        }
        assert_eq!(chunks.len(), 1000usize.div_ceil(CHUNK_SAMPLES));
        let mut at = 0;
        for c in &chunks {
            assert_eq!(c.r#type, ChunkEncoding::Xor as i32);
            let n = usize::from(u16::from_be_bytes([c.data[0], c.data[1]]));
            assert_eq!(n, CHUNK_SAMPLES.min(1000 - at));
            assert_eq!((c.min_time_ms, c.max_time_ms), (ts[at], ts[at + n - 1]));
            assert_eq!(c.data, cairn_codec::encode_xor_chunk(&ts[at..at + n], &vs[at..at + n]));
            at += n;
        }
        // A large budget keeps the whole series in one frame.
        let mut one = Vec::new();
        let mut series = SeriesFrames::new(labels(), 0, 1 << 20);
        assert!(!series.push(&ts, &vs, &mut one));
        series.finish(&mut one);
        let got = frames(&one);
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].chunked_series[0].chunks, chunks);
    }

    #[test]
    fn a_series_without_samples_has_no_frame() {
        let mut out = Vec::new();
        SeriesFrames::new(labels(), 0, 100).finish(&mut out);
        assert!(out.is_empty());
    }

    #[test]
    fn a_samples_response_is_snappy_compressed_protobuf() {
        let resp = ReadResponse {
            results: vec![QueryResult { timeseries: vec![] }],
        };
        let raw = snap::raw::Decoder::new()
            .decompress_vec(&encode_samples_response(&resp))
            .unwrap();
        assert_eq!(ReadResponse::decode(raw.as_slice()).unwrap(), resp);
    }
}
