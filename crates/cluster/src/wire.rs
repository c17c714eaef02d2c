//! What nodes send each other: series with their samples (a write to an
//! owner, a select's answer), and the small JSON requests around them.
//!
//! Series frames come in three forms, named by a body's first four bytes;
//! each frame starts with a uvarint length and the labels in their
//! canonical `Labels::encode` form, then a uvarint sample count:
//! - `"CSF1"`: the samples as little-endian `i64` timestamps then `f64`
//!   values;
//! - `"CSF2"`: as `"CSF1"`, and each frame ends with a uvarint histogram
//!   count and the histograms ([`put_histogram`]);
//! - `"CSF3"`, compressed: the rest of the body is one Snappy block (the
//!   raw format, without framing), and in it each frame's sample count is
//!   followed by a uvarint byte length, then the timestamps and the values
//!   as `cairn_codec` blocks (delta-of-delta, Gorilla XOR), then the
//!   histograms as in `"CSF2"`. Snappy shrinks the labels, which repeat
//!   from series to series; the codec's blocks shrink the samples.
//!
//! A node says which forms it reads: in its member record for writes
//! ([`crate::ring::Member::reads_compressed_frames`]), in a select request
//! for the answer ([`SelectRequest::compressed`]); to nodes of earlier
//! versions it writes the first two forms. The decoder takes bytes from
//! the network and returns errors, never panics.

use std::sync::Arc;

use cairn_codec::varint::{zigzag_decode, zigzag_encode};
use cairn_model::histogram::{Histogram, HistogramSample, ResetHint};
use cairn_model::{EncodedLabels, MatchOp, Matcher, Sample};
use cairn_storage::{CommitReport, RejectReason, SelectHints, Shard, ShardBy, StorageError};
use serde::{Deserialize, Serialize};

const MAGIC: &[u8; 4] = b"CSF1";
const MAGIC_WITH_HISTOGRAMS: &[u8; 4] = b"CSF2";
const MAGIC_COMPRESSED: &[u8; 4] = b"CSF3";

/// Builds a body of series frames.
#[derive(Debug, Clone)]
pub struct FramesWriter {
    buf: Vec<u8>,
    series: usize,
    samples: u64,
    compressed: bool,
    /// Where a compressed frame's blocks are encoded before their length is known.
    scratch: Vec<u8>,
    /// The histograms of the frames that have any, encoded, by the offset
    /// in `buf` where their frame ends: [`Self::finish`] splices them in
    /// (uncompressed forms only).
    histograms: Vec<(usize, Vec<u8>)>,
}

impl Default for FramesWriter {
    /// The uncompressed forms, which every version reads.
    fn default() -> Self {
        Self::new(false)
    }
}

impl FramesWriter {
    /// The compressed form, or the uncompressed ones.
    pub fn new(compressed: bool) -> Self {
        Self {
            buf: if compressed { MAGIC_COMPRESSED } else { MAGIC }.to_vec(),
            series: 0,
            samples: 0,
            compressed,
            scratch: Vec::new(),
            histograms: Vec::new(),
        }
    }

    /// A series with float and histogram samples.
    pub fn push_with_histograms(&mut self, encoded_labels: &[u8], ts: &[i64], vs: &[f64], hs: &[HistogramSample]) {
        self.push_floats(encoded_labels, ts, vs);
        self.samples += hs.len() as u64;
        if self.compressed {
            put_histograms(&mut self.buf, hs);
        } else if !hs.is_empty() {
            let mut section = Vec::new();
            put_histograms(&mut section, hs);
            self.histograms.push((self.buf.len(), section));
        }
    }

    pub fn push(&mut self, encoded_labels: &[u8], ts: &[i64], vs: &[f64]) {
        self.push_with_histograms(encoded_labels, ts, vs, &[]);
    }

    fn push_floats(&mut self, encoded_labels: &[u8], ts: &[i64], vs: &[f64]) {
        debug_assert_eq!(ts.len(), vs.len());
        put_uvarint(&mut self.buf, encoded_labels.len() as u64);
        self.buf.extend_from_slice(encoded_labels);
        put_uvarint(&mut self.buf, ts.len() as u64);
        self.series += 1;
        self.samples += ts.len() as u64;
        if self.compressed {
            self.scratch.clear();
            cairn_codec::encode_timestamps_fast(&mut self.scratch, ts);
            cairn_codec::encode_values_fast(&mut self.scratch, vs);
            put_uvarint(&mut self.buf, self.scratch.len() as u64);
            self.buf.extend_from_slice(&self.scratch);
            return;
        }
        self.buf.reserve(ts.len() * 16);
        for t in ts {
            self.buf.extend_from_slice(&t.to_le_bytes());
        }
        for v in vs {
            self.buf.extend_from_slice(&v.to_le_bytes());
        }
    }

    pub fn push_samples(&mut self, encoded_labels: &[u8], samples: &[Sample]) {
        let (ts, vs): (Vec<i64>, Vec<f64>) = samples.iter().map(|s| (s.t, s.v)).unzip();
        self.push(encoded_labels, &ts, &vs);
    }

    pub fn series(&self) -> usize {
        self.series
    }

    /// Float and histogram samples pushed so far.
    pub fn samples(&self) -> u64 {
        self.samples
    }

    pub fn finish(self) -> Vec<u8> {
        if self.compressed {
            return seal(self.buf.get(MAGIC_COMPRESSED.len()..).unwrap_or_default());
        }
        if self.histograms.is_empty() {
            return self.buf;
        }
        // Every frame gets its histogram count: 0 where it has none. The
        // frames are walked by their own lengths, all written here.
        let extra: usize = self.histograms.iter().map(|(_, h)| h.len()).sum();
        let mut out = Vec::with_capacity(self.buf.len() + extra + self.series);
        out.extend_from_slice(MAGIC_WITH_HISTOGRAMS);
        let mut with = self.histograms.iter().peekable();
        let mut rest = self.buf.get(MAGIC.len()..).unwrap_or_default();
        let mut at = MAGIC.len();
        while let Some(len) = frame_length(rest) {
            let (frame, tail) = rest.split_at(len.min(rest.len()));
            out.extend_from_slice(frame);
            at += frame.len();
            match with.next_if(|(end, _)| *end == at) {
                Some((_, section)) => out.extend_from_slice(section),
                None => out.push(0),
            }
            rest = tail;
        }
        out
    }
}

/// A compressed body of `frames` (their bytes without the magic).
fn seal(frames: &[u8]) -> Vec<u8> {
    let at = MAGIC_COMPRESSED.len();
    let mut out = MAGIC_COMPRESSED.to_vec();
    out.resize(at + snap::raw::max_compress_len(frames.len()), 0);
    // Only fails on input over 2^32 bytes, which no body reaches.
    let written = snap::raw::Encoder::new().compress(frames, &mut out[at..]).unwrap_or(0);
    out.truncate(at + written);
    out
}

/// The length of the float frame at the start of `rest`, `None` at the end.
fn frame_length(rest: &[u8]) -> Option<usize> {
    let mut r = rest;
    let labels = take_uvarint(&mut r).ok()?;
    take(&mut r, labels).ok()?;
    let n = take_uvarint(&mut r).ok()?;
    let header = rest.len() - r.len();
    Some(header + usize::try_from(n).ok()?.checked_mul(16)?)
}

/// A frame's histogram section: their count, then each.
fn put_histograms(out: &mut Vec<u8>, hs: &[HistogramSample]) {
    put_uvarint(out, hs.len() as u64);
    for h in hs {
        put_histogram(out, h);
    }
}

/// One histogram sample: its `i64` timestamp, the schema as a zig-zag
/// varint, the reset hint as a byte, count, sum, zero threshold and zero
/// count as `f64`s, the positive then the negative buckets (a uvarint
/// count, then per bucket its index as a zig-zag varint and its count as
/// an `f64`), and the custom bounds (a uvarint count, then `f64`s). Every
/// number little-endian.
fn put_histogram(out: &mut Vec<u8>, s: &HistogramSample) {
    let h = &s.h;
    out.extend_from_slice(&s.t.to_le_bytes());
    put_uvarint(out, zigzag_encode(i64::from(h.schema)));
    out.push(h.reset_hint.code());
    for v in [h.count, h.sum, h.zero_threshold, h.zero_count] {
        out.extend_from_slice(&v.to_le_bytes());
    }
    for side in [&h.positive, &h.negative] {
        put_uvarint(out, side.len() as u64);
        for &(idx, c) in side {
            put_uvarint(out, zigzag_encode(i64::from(idx)));
            out.extend_from_slice(&c.to_le_bytes());
        }
    }
    let bounds = h.custom_bounds.as_deref();
    put_uvarint(out, bounds.map_or(0, |b| b.len() as u64 + 1));
    for b in bounds.unwrap_or_default() {
        out.extend_from_slice(&b.to_le_bytes());
    }
}

fn take_histogram(rest: &mut &[u8]) -> Result<HistogramSample, StorageError> {
    let t = i64::from_le_bytes(word(take(rest, 8)?));
    let schema = i32::try_from(zigzag_decode(take_uvarint(rest)?)).map_err(|_| malformed("schema out of range"))?;
    let reset_hint = match take(rest, 1)? {
        &[code] if code <= 3 => ResetHint::from_code(i64::from(code)),
        _ => return Err(malformed("unknown reset hint")),
    };
    let mut float = || take(rest, 8).map(|b| f64::from_le_bytes(word(b)));
    let (count, sum, zero_threshold, zero_count) = (float()?, float()?, float()?, float()?);
    let mut sides = [Vec::new(), Vec::new()];
    for side in &mut sides {
        let n = take_uvarint(rest)?;
        // Each bucket takes at least 9 bytes: no allocation beyond the body.
        if n > (rest.len() / 9) as u64 {
            return Err(malformed("bucket count past the end"));
        }
        side.reserve(n as usize);
        for _ in 0..n {
            let idx = i32::try_from(zigzag_decode(take_uvarint(rest)?))
                .map_err(|_| malformed("bucket index out of range"))?;
            side.push((idx, f64::from_le_bytes(word(take(rest, 8)?))));
        }
    }
    let custom_bounds = match take_uvarint(rest)? {
        0 => None,
        n => {
            let bytes = take(
                rest,
                (n - 1)
                    .checked_mul(8)
                    .ok_or_else(|| malformed("bound count overflows"))?,
            )?;
            Some(bytes.chunks_exact(8).map(|c| f64::from_le_bytes(word(c))).collect())
        }
    };
    let [positive, negative] = sides;
    let h = Histogram {
        schema,
        reset_hint,
        count,
        sum,
        zero_threshold,
        zero_count,
        positive,
        negative,
        custom_bounds,
    };
    h.validate().map_err(|e| malformed(&e.to_string()))?;
    Ok(HistogramSample::new(t, h))
}

/// One decoded series of a body of frames; its slices borrow the body.
pub struct Frame<'a> {
    pub labels: EncodedLabels<'a>,
    samples: FrameSamples<'a>,
    /// The series' histogram samples, decoded with the frame (few series
    /// have any).
    pub histograms: Vec<HistogramSample>,
}

enum FrameSamples<'a> {
    Raw {
        ts: &'a [u8],
        vs: &'a [u8],
    },
    /// `count` samples in two `cairn_codec` blocks, decoded on demand.
    Compressed {
        count: usize,
        blocks: &'a [u8],
    },
}

impl Frame<'_> {
    /// Its float samples.
    pub fn len(&self) -> usize {
        match self.samples {
            FrameSamples::Raw { ts, .. } => ts.len() / 8,
            FrameSamples::Compressed { count, .. } => count,
        }
    }

    /// No float and no histogram samples.
    pub fn is_empty(&self) -> bool {
        self.len() == 0 && self.histograms.is_empty()
    }

    /// Appends the samples' timestamps and values to `ts` and `vs`; on
    /// error both are left as they were.
    pub fn read_into(&self, ts: &mut Vec<i64>, vs: &mut Vec<f64>) -> Result<(), StorageError> {
        match self.samples {
            FrameSamples::Raw { ts: t, vs: v } => {
                ts.extend(t.chunks_exact(8).map(|c| i64::from_le_bytes(word(c))));
                vs.extend(v.chunks_exact(8).map(|c| f64::from_le_bytes(word(c))));
                Ok(())
            }
            FrameSamples::Compressed { count, blocks } => {
                let (t0, v0) = (ts.len(), vs.len());
                let decoded = cairn_codec::decode_timestamps(blocks, ts)
                    .and_then(|rest| cairn_codec::decode_values(rest, vs))
                    .map_err(|e| malformed(&e.to_string()))
                    .and_then(
                        |rest| match rest.is_empty() && ts.len() - t0 == count && vs.len() - v0 == count {
                            true => Ok(()),
                            false => Err(malformed("compressed samples disagree with their count")),
                        },
                    );
                if decoded.is_err() {
                    ts.truncate(t0);
                    vs.truncate(v0);
                }
                decoded
            }
        }
    }
}

/// Reads frames' float samples as [`Sample`]s, into buffers it keeps from
/// one frame to the next.
#[derive(Debug, Default)]
pub struct SampleReader {
    samples: Vec<Sample>,
    ts: Vec<i64>,
    vs: Vec<f64>,
}

impl SampleReader {
    /// The float samples of `frame`, valid until the next read.
    pub fn read(&mut self, frame: &Frame) -> Result<&[Sample], StorageError> {
        self.samples.clear();
        if let FrameSamples::Raw { ts, vs } = frame.samples {
            // The write path's common case: no columns in between.
            let pairs = ts.chunks_exact(8).zip(vs.chunks_exact(8));
            let samples = pairs.map(|(t, v)| Sample::new(i64::from_le_bytes(word(t)), f64::from_le_bytes(word(v))));
            self.samples.extend(samples);
            return Ok(&self.samples);
        }
        self.ts.clear();
        self.vs.clear();
        frame.read_into(&mut self.ts, &mut self.vs)?;
        let samples = self.ts.iter().zip(&self.vs).map(|(&t, &v)| Sample::new(t, v));
        self.samples.extend(samples);
        Ok(&self.samples)
    }
}

fn word(c: &[u8]) -> [u8; 8] {
    let mut w = [0u8; 8];
    w.copy_from_slice(c);
    w
}

/// A body of series frames, opened: [`Frames::iter`] reads them.
pub struct Frames<'a> {
    bytes: std::borrow::Cow<'a, [u8]>,
    form: Form,
}

/// Opens a body of frames: checks its form and, compressed, decompresses it.
pub fn frames(body: &[u8]) -> Result<Frames<'_>, StorageError> {
    let (rest, form) = if let Some(rest) = body.strip_prefix(MAGIC.as_slice()) {
        (rest, Form::Raw)
    } else if let Some(rest) = body.strip_prefix(MAGIC_WITH_HISTOGRAMS.as_slice()) {
        (rest, Form::RawWithHistograms)
    } else if let Some(rest) = body.strip_prefix(MAGIC_COMPRESSED.as_slice()) {
        (rest, Form::Compressed)
    } else {
        return Err(malformed("no frame header"));
    };
    let bytes = match form {
        Form::Compressed => std::borrow::Cow::Owned(decompress(rest)?),
        _ => std::borrow::Cow::Borrowed(rest),
    };
    Ok(Frames { bytes, form })
}

/// A Snappy block, decompressed. Its stated length is checked first: no
/// valid block expands more than 32-fold (a copy op of 2 bytes yields at
/// most 64), so a larger claim is refused before anything is allocated.
fn decompress(block: &[u8]) -> Result<Vec<u8>, StorageError> {
    let len = snap::raw::decompress_len(block).map_err(|e| malformed(&format!("snappy: {e}")))?;
    if len > block.len().saturating_mul(32) {
        return Err(malformed("snappy block claims more than it can hold"));
    }
    snap::raw::Decoder::new()
        .decompress_vec(block)
        .map_err(|e| malformed(&format!("snappy: {e}")))
}

impl Frames<'_> {
    /// The frames, in order; an error ends the iteration.
    pub fn iter(&self) -> impl Iterator<Item = Result<Frame<'_>, StorageError>> {
        let (mut rest, form) = (&self.bytes[..], self.form);
        let mut failed = false;
        std::iter::from_fn(move || {
            if rest.is_empty() || failed {
                return None;
            }
            let frame = next_frame(&mut rest, form);
            failed = frame.is_err();
            Some(frame)
        })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Form {
    Raw,
    RawWithHistograms,
    Compressed,
}

/// The most float samples a frame's blocks can hold: a constant block
/// holds up to `cairn_codec`'s longest constant run in a few bytes, any
/// other takes at least a bit a sample. A count beyond it is a lie,
/// refused before anything is allocated for it.
fn most_samples(blocks: &[u8]) -> u64 {
    (1 << 16).max(8 * blocks.len() as u64)
}

fn next_frame<'a>(rest: &mut &'a [u8], form: Form) -> Result<Frame<'a>, StorageError> {
    let len = take_uvarint(rest)?;
    let labels = take(rest, len)?;
    let labels = EncodedLabels::new(labels).map_err(|e| malformed(&format!("labels: {e}")))?;
    let n = take_uvarint(rest)?;
    let samples = if form == Form::Compressed {
        let len = take_uvarint(rest)?;
        let blocks = take(rest, len)?;
        if n > most_samples(blocks) {
            return Err(malformed("sample count past what the blocks hold"));
        }
        FrameSamples::Compressed {
            count: n as usize,
            blocks,
        }
    } else {
        let bytes = n.checked_mul(8).ok_or_else(|| malformed("sample count overflows"))?;
        FrameSamples::Raw {
            ts: take(rest, bytes)?,
            vs: take(rest, bytes)?,
        }
    };
    let mut histograms = Vec::new();
    if form != Form::Raw {
        let n = take_uvarint(rest)?;
        // Each histogram takes at least 44 bytes: no allocation beyond the body.
        if n > (rest.len() / 44) as u64 {
            return Err(malformed("histogram count past the end"));
        }
        histograms.reserve(n as usize);
        for _ in 0..n {
            histograms.push(take_histogram(rest)?);
        }
    }
    Ok(Frame {
        labels,
        samples,
        histograms,
    })
}

fn take<'a>(rest: &mut &'a [u8], n: u64) -> Result<&'a [u8], StorageError> {
    let n = usize::try_from(n).map_err(|_| malformed("length overflows"))?;
    if rest.len() < n {
        return Err(malformed("frame cut short"));
    }
    let (head, tail) = rest.split_at(n);
    *rest = tail;
    Ok(head)
}

fn take_uvarint(rest: &mut &[u8]) -> Result<u64, StorageError> {
    let mut value = 0u64;
    for shift in (0..64).step_by(7) {
        let (&b, tail) = rest.split_first().ok_or_else(|| malformed("varint cut short"))?;
        *rest = tail;
        value |= u64::from(b & 0x7f) << shift;
        if b < 0x80 {
            return Ok(value);
        }
    }
    Err(malformed("varint too long"))
}

fn put_uvarint(dst: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        dst.push((v as u8) | 0x80);
        v >>= 7;
    }
    dst.push(v as u8);
}

fn malformed(why: &str) -> StorageError {
    StorageError::InvalidArgument(format!("malformed series frames from a peer: {why}"))
}

/// What an owner stored of a write, as it answers.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WriteAnswer {
    pub samples_accepted: u64,
    /// Of those, histogram samples (absent from the answers of earlier versions).
    #[serde(default)]
    pub histograms_accepted: u64,
    pub series_created: u64,
    pub out_of_retention: u64,
    pub too_far_in_future: u64,
    pub series_limit: u64,
}

impl From<&CommitReport> for WriteAnswer {
    fn from(r: &CommitReport) -> Self {
        let of = |reason| r.samples_rejected.get(&reason).copied().unwrap_or(0);
        Self {
            samples_accepted: r.samples_accepted,
            histograms_accepted: r.histograms_accepted,
            series_created: r.series_created,
            out_of_retention: of(RejectReason::OutOfRetention),
            too_far_in_future: of(RejectReason::TooFarInFuture),
            series_limit: of(RejectReason::SeriesLimit),
        }
    }
}

impl WriteAnswer {
    pub fn add(&mut self, o: &WriteAnswer) {
        self.samples_accepted += o.samples_accepted;
        self.histograms_accepted += o.histograms_accepted;
        self.series_created += o.series_created;
        self.out_of_retention += o.out_of_retention;
        self.too_far_in_future += o.too_far_in_future;
        self.series_limit += o.series_limit;
    }

    /// These counts (summed over replicas) scaled to one copy of each sample.
    pub fn per_copy(&self, copies: f64) -> CommitReport {
        let scale = |n: u64| (n as f64 / copies).round() as u64;
        let mut report = CommitReport {
            samples_accepted: scale(self.samples_accepted),
            histograms_accepted: scale(self.histograms_accepted),
            series_created: scale(self.series_created),
            ..CommitReport::default()
        };
        for (reason, n) in [
            (RejectReason::OutOfRetention, self.out_of_retention),
            (RejectReason::TooFarInFuture, self.too_far_in_future),
            (RejectReason::SeriesLimit, self.series_limit),
        ] {
            if n > 0 {
                report.samples_rejected.insert(reason, scale(n));
            }
        }
        report
    }
}

/// A select, a label listing or a delete sent to an ingester.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct SelectRequest {
    pub mint: i64,
    pub maxt: i64,
    pub matchers: Vec<WireMatcher>,
    #[serde(default)]
    pub labels_only: bool,
    #[serde(default)]
    pub newest_only: bool,
    #[serde(default)]
    pub limit: Option<usize>,
    #[serde(default)]
    pub shard: Option<WireShard>,
    #[serde(default)]
    pub step_ms: Option<i64>,
    #[serde(default)]
    pub range_ms: Option<i64>,
    #[serde(default)]
    pub func: Option<String>,
    /// For a label-values listing: whose values.
    #[serde(default)]
    pub label_name: Option<String>,
    /// Only the series this node owns, as the answering node's ring says (a
    /// catch-up's).
    #[serde(default)]
    pub owned_by: Option<String>,
    /// The asking node reads compressed frames (earlier versions do not say).
    #[serde(default)]
    pub compressed: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WireMatcher {
    pub name: String,
    /// `=`, `!=`, `=~` or `!~`.
    pub op: String,
    pub value: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WireShard {
    pub index: usize,
    pub count: usize,
    #[serde(default)]
    pub by: Option<Vec<String>>,
    #[serde(default)]
    pub without: Option<Vec<String>>,
}

impl SelectRequest {
    pub fn new(mint: i64, maxt: i64, hints: &SelectHints, matchers: &[Matcher]) -> Self {
        Self {
            mint,
            maxt,
            matchers: matchers
                .iter()
                .map(|m| WireMatcher {
                    name: m.name.clone(),
                    op: op_text(m.op).into(),
                    value: m.value.clone(),
                })
                .collect(),
            labels_only: hints.labels_only,
            newest_only: hints.newest_only,
            limit: hints.limit,
            shard: hints.shard.as_ref().map(|s| WireShard {
                index: s.index,
                count: s.count,
                by: match s.by.as_deref() {
                    Some(ShardBy::Labels(l)) => Some(l.clone()),
                    _ => None,
                },
                without: match s.by.as_deref() {
                    Some(ShardBy::AllBut(l)) => Some(l.clone()),
                    _ => None,
                },
            }),
            step_ms: hints.step_ms,
            range_ms: hints.range_ms,
            func: hints.func.clone(),
            label_name: None,
            owned_by: None,
            compressed: true,
        }
    }

    pub fn hints(&self) -> SelectHints {
        SelectHints {
            labels_only: self.labels_only,
            limit: self.limit,
            step_ms: self.step_ms,
            func: self.func.clone(),
            range_ms: self.range_ms,
            shard: self.shard.as_ref().map(|s| Shard {
                index: s.index,
                count: s.count,
                by: match (&s.by, &s.without) {
                    (Some(by), _) => Some(Arc::new(ShardBy::Labels(by.clone()))),
                    (None, Some(without)) => Some(Arc::new(ShardBy::AllBut(without.clone()))),
                    (None, None) => None,
                },
            }),
            newest_only: self.newest_only,
        }
    }

    pub fn matchers(&self) -> Result<Vec<Matcher>, StorageError> {
        self.matchers
            .iter()
            .map(|m| {
                let op = match m.op.as_str() {
                    "=" => MatchOp::Equal,
                    "!=" => MatchOp::NotEqual,
                    "=~" => MatchOp::RegexMatch,
                    "!~" => MatchOp::RegexNoMatch,
                    other => {
                        return Err(StorageError::InvalidArgument(format!(
                            "unknown matcher operator {other:?}"
                        )));
                    }
                };
                Matcher::new(op, &m.name, &m.value).map_err(|e| StorageError::InvalidArgument(e.to_string()))
            })
            .collect()
    }
}

fn op_text(op: MatchOp) -> &'static str {
    match op {
        MatchOp::Equal => "=",
        MatchOp::NotEqual => "!=",
        MatchOp::RegexMatch => "=~",
        MatchOp::RegexNoMatch => "!~",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cairn_model::Labels;
    use proptest::prelude::*;

    fn encoded(pairs: &[(&str, &str)]) -> Vec<u8> {
        let mut out = Vec::new();
        Labels::from_pairs(pairs.iter().copied()).encode(&mut out);
        out
    }

    #[test]
    fn frames_round_trip() {
        let a = encoded(&[("__name__", "up"), ("job", "a")]);
        let b = encoded(&[("__name__", "up"), ("job", "b")]);
        let mut w = FramesWriter::default();
        w.push(&a, &[1, 2], &[1.5, f64::NAN]);
        w.push(&b, &[], &[]);
        assert_eq!(w.series(), 2);
        let body = w.finish();
        let opened = frames(&body).unwrap();
        let got: Vec<_> = opened.iter().collect::<Result<_, _>>().unwrap();
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].labels.as_bytes(), &a[..]);
        let (mut ts, mut vs) = (Vec::new(), Vec::new());
        got[0].read_into(&mut ts, &mut vs).unwrap();
        assert_eq!(ts, [1, 2]);
        assert_eq!(vs[0], 1.5);
        assert!(vs[1].is_nan());
        assert!(got[1].is_empty());
    }

    #[test]
    fn histograms_make_a_body_of_the_second_form_and_come_back() {
        use cairn_model::histogram::CUSTOM_BUCKETS_SCHEMA;
        let a = encoded(&[("__name__", "rpc"), ("job", "a")]);
        let b = encoded(&[("__name__", "up"), ("job", "b")]);
        let c = encoded(&[("__name__", "rpc"), ("job", "c")]);
        let exponential = Histogram {
            schema: -2,
            reset_hint: ResetHint::Gauge,
            count: 9.0,
            sum: -1.5,
            zero_threshold: 0.001,
            zero_count: 1.0,
            positive: vec![(-3, 2.0), (7, 4.0)],
            negative: vec![(1, 2.0)],
            custom_bounds: None,
        };
        let custom = Histogram {
            schema: CUSTOM_BUCKETS_SCHEMA,
            count: 3.0,
            sum: 2.0,
            positive: vec![(0, 1.0), (2, 2.0)],
            custom_bounds: Some([0.5, 1.0].into()),
            ..Histogram::default()
        };
        let hs = [HistogramSample::new(10, exponential), HistogramSample::new(20, custom)];
        let mut w = FramesWriter::default();
        w.push_with_histograms(&a, &[5], &[1.0], &hs);
        w.push(&b, &[1], &[2.0]);
        w.push_with_histograms(&c, &[], &[], &hs[1..]);
        let body = w.finish();
        assert_eq!(&body[..4], MAGIC_WITH_HISTOGRAMS);
        let opened = frames(&body).unwrap();
        let got: Vec<_> = opened.iter().collect::<Result<_, _>>().unwrap();
        assert_eq!(got.len(), 3);
        assert_eq!(got[0].labels.as_bytes(), &a[..]);
        assert_eq!((got[0].len(), &got[0].histograms[..]), (1, &hs[..]));
        assert_eq!((got[1].len(), got[1].histograms.len()), (1, 0));
        assert_eq!(got[2].labels.as_bytes(), &c[..]);
        assert_eq!((got[2].len(), &got[2].histograms[..]), (0, &hs[1..]));
        // Without histograms, the first form, which earlier versions read.
        let mut w = FramesWriter::default();
        w.push_with_histograms(&b, &[1], &[2.0], &[]);
        assert_eq!(&w.finish()[..4], MAGIC);
    }

    /// Encoded labels, timestamps, values and histograms.
    type TestSeries = (Vec<u8>, Vec<i64>, Vec<f64>, Vec<HistogramSample>);

    /// Some series of each kind a body carries: empty, regular, jittered,
    /// NaNs and stale markers, with and without histograms.
    fn mixed_series() -> Vec<TestSeries> {
        let h = Histogram {
            schema: 1,
            count: 4.0,
            sum: 3.0,
            positive: vec![(0, 1.0), (3, 3.0)],
            ..Histogram::default()
        };
        let regular: Vec<i64> = (0..240).map(|i| 1_700_000_000_000 + i * 15_000).collect();
        let jittered: Vec<i64> = regular
            .iter()
            .enumerate()
            .map(|(i, t)| t + (i as i64 * 7919) % 23)
            .collect();
        let counter: Vec<f64> = (0..240).map(|i| f64::from(i) * 1.5).collect();
        let mut odd = counter.clone();
        odd[3] = f64::NAN;
        odd[7] = f64::from_bits(cairn_model::STALE_NAN_BITS);
        odd[9] = -0.0;
        vec![
            (encoded(&[("__name__", "empty")]), vec![], vec![], vec![]),
            (
                encoded(&[("__name__", "regular")]),
                regular.clone(),
                counter.clone(),
                vec![],
            ),
            (encoded(&[("__name__", "odd")]), jittered, odd, vec![]),
            (
                encoded(&[("__name__", "both")]),
                vec![5],
                vec![1.0],
                vec![HistogramSample::new(10, h)],
            ),
            (encoded(&[("__name__", "constant")]), regular, vec![1.0; 240], vec![]),
        ]
    }

    #[test]
    fn compressed_frames_carry_every_sample_bit_for_bit_in_a_fraction_of_the_bytes() {
        let series = mixed_series();
        let mut bodies = [FramesWriter::new(false), FramesWriter::new(true)];
        for w in &mut bodies {
            for (labels, ts, vs, hs) in &series {
                w.push_with_histograms(labels, ts, vs, hs);
            }
        }
        assert_eq!(bodies[0].samples(), bodies[1].samples());
        let [raw, compressed] = bodies.map(FramesWriter::finish);
        assert_eq!(&compressed[..4], MAGIC_COMPRESSED);
        assert!(
            compressed.len() * 4 < raw.len(),
            "{} vs {} bytes",
            compressed.len(),
            raw.len()
        );
        for body in [&raw, &compressed] {
            let opened = frames(body).unwrap();
            let got: Vec<_> = opened.iter().collect::<Result<_, _>>().unwrap();
            assert_eq!(got.len(), series.len());
            for (frame, (labels, ts, vs, hs)) in got.iter().zip(&series) {
                assert_eq!(frame.labels.as_bytes(), &labels[..]);
                assert_eq!(frame.len(), ts.len());
                let (mut t, mut v) = (vec![-1], vec![-1.0]);
                frame.read_into(&mut t, &mut v).unwrap();
                assert_eq!(&t[1..], &ts[..]);
                let bits = |v: &[f64]| v.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
                assert_eq!(bits(&v[1..]), bits(vs));
                assert_eq!(&frame.histograms, hs);
            }
        }
        // A reader of both forms, from one frame to the next, gives each
        // frame's samples alone.
        let mut reader = SampleReader::default();
        for body in [&raw, &compressed, &raw] {
            for (frame, (_, ts, vs, _)) in frames(body).unwrap().iter().zip(&series) {
                let samples = reader.read(&frame.unwrap()).unwrap();
                let want: Vec<(i64, u64)> = ts.iter().zip(vs).map(|(&t, v)| (t, v.to_bits())).collect();
                let got: Vec<(i64, u64)> = samples.iter().map(|s| (s.t, s.v.to_bits())).collect();
                assert_eq!(got, want);
            }
        }
    }

    #[test]
    fn a_compressed_frame_that_lies_about_its_count_is_refused() {
        let labels = encoded(&[("__name__", "up")]);
        let mut w = FramesWriter::new(true);
        w.push(&labels, &[1, 2, 3], &[1.0, 2.0, 3.0]);
        let plain = w.buf[MAGIC_COMPRESSED.len()..].to_vec();
        // The count follows the labels; claim one sample more, then far more.
        let at = 1 + labels.len();
        for count in [4u8, 0x7f] {
            let mut lying = plain.clone();
            lying[at] = count;
            let body = seal(&lying);
            let opened = frames(&body).unwrap();
            let frame = opened.iter().next().unwrap().unwrap();
            let (mut ts, mut vs) = (Vec::new(), Vec::new());
            assert!(frame.read_into(&mut ts, &mut vs).is_err());
            assert!(ts.is_empty() && vs.is_empty());
        }
        let mut huge = plain[..at].to_vec();
        put_uvarint(&mut huge, u64::MAX / 2);
        huge.extend_from_slice(&plain[at + 1..]);
        let body = seal(&huge);
        assert!(frames(&body).unwrap().iter().next().unwrap().is_err());
    }

    #[test]
    fn a_snappy_block_that_claims_more_than_it_can_hold_is_refused() {
        let mut body = MAGIC_COMPRESSED.to_vec();
        put_uvarint(&mut body, 1 << 40);
        body.extend_from_slice(&[0; 16]);
        assert!(frames(&body).is_err());
        let mut cut = seal(&[7; 1000]);
        cut.truncate(cut.len() - 1);
        assert!(frames(&cut).is_err());
    }

    #[test]
    fn select_requests_keep_their_hints() {
        let hints = SelectHints {
            limit: Some(3),
            shard: Some(Shard {
                index: 1,
                count: 4,
                by: Some(Arc::new(ShardBy::AllBut(vec!["pod".into()]))),
            }),
            newest_only: true,
            ..SelectHints::default()
        };
        let m = [Matcher::new(MatchOp::RegexMatch, "job", "a.*").unwrap()];
        let req: SelectRequest =
            serde_json::from_str(&serde_json::to_string(&SelectRequest::new(1, 2, &hints, &m)).unwrap()).unwrap();
        let back = req.hints();
        assert_eq!(back.shard, hints.shard);
        assert_eq!((back.limit, back.newest_only), (Some(3), true));
        assert_eq!(req.matchers().unwrap()[0].to_string(), m[0].to_string());
    }

    proptest! {
        #[test]
        fn any_bytes_decode_without_panicking(body in proptest::collection::vec(any::<u8>(), 0..256)) {
            let mut with_magic = MAGIC.to_vec();
            with_magic.extend_from_slice(&body);
            let mut with_histograms = MAGIC_WITH_HISTOGRAMS.to_vec();
            with_histograms.extend_from_slice(&body);
            let mut compressed = MAGIC_COMPRESSED.to_vec();
            compressed.extend_from_slice(&body);
            // Valid Snappy around arbitrary frames, so their parser is reached.
            let sealed = seal(&body);
            for b in [&body, &with_magic, &with_histograms, &compressed, &sealed] {
                if let Ok(body) = frames(b) {
                    for f in body.iter().take(1000).flatten() {
                        let (mut ts, mut vs) = (Vec::new(), Vec::new());
                        if f.read_into(&mut ts, &mut vs).is_ok() {
                            prop_assert_eq!((ts.len(), vs.len()), (f.len(), f.len()));
                        } else {
                            prop_assert!(ts.is_empty() && vs.is_empty());
                        }
                    }
                }
            }
        }
    }
}
