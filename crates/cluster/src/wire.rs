//! What nodes send each other: series with their samples (a write to an
//! owner, a select's answer), and the small JSON requests around them.
//!
//! Series frames: `"CSF1"`, then per series a uvarint length and the labels
//! in their canonical `Labels::encode` form, a uvarint sample count, and
//! the samples as little-endian `i64` timestamps then `f64` values. A body
//! that carries native histograms starts with `"CSF2"` instead, and each
//! frame then ends with a uvarint histogram count and the histograms
//! ([`put_histogram`]); a body without any stays `"CSF1"`, which nodes of
//! earlier versions read. The decoder takes bytes from the network and
//! returns errors, never panics.

use std::sync::Arc;

use cairn_codec::varint::{zigzag_decode, zigzag_encode};
use cairn_model::histogram::{Histogram, HistogramSample, ResetHint};
use cairn_model::{EncodedLabels, MatchOp, Matcher, Sample};
use cairn_storage::{CommitReport, RejectReason, SelectHints, Shard, ShardBy, StorageError};
use serde::{Deserialize, Serialize};

const MAGIC: &[u8; 4] = b"CSF1";
const MAGIC_WITH_HISTOGRAMS: &[u8; 4] = b"CSF2";

/// Builds a body of series frames.
#[derive(Debug, Clone)]
pub struct FramesWriter {
    buf: Vec<u8>,
    series: usize,
    /// The histograms of the frames that have any, encoded, by the offset
    /// in `buf` where their frame ends: [`Self::finish`] splices them in.
    histograms: Vec<(usize, Vec<u8>)>,
}

impl Default for FramesWriter {
    fn default() -> Self {
        Self {
            buf: MAGIC.to_vec(),
            series: 0,
            histograms: Vec::new(),
        }
    }
}

impl FramesWriter {
    /// A series with float and histogram samples.
    pub fn push_with_histograms(&mut self, encoded_labels: &[u8], ts: &[i64], vs: &[f64], hs: &[HistogramSample]) {
        self.push(encoded_labels, ts, vs);
        if !hs.is_empty() {
            let mut section = Vec::new();
            put_uvarint(&mut section, hs.len() as u64);
            for h in hs {
                put_histogram(&mut section, h);
            }
            self.histograms.push((self.buf.len(), section));
        }
    }

    pub fn push(&mut self, encoded_labels: &[u8], ts: &[i64], vs: &[f64]) {
        debug_assert_eq!(ts.len(), vs.len());
        put_uvarint(&mut self.buf, encoded_labels.len() as u64);
        self.buf.extend_from_slice(encoded_labels);
        put_uvarint(&mut self.buf, ts.len() as u64);
        self.buf.reserve(ts.len() * 16);
        for t in ts {
            self.buf.extend_from_slice(&t.to_le_bytes());
        }
        for v in vs {
            self.buf.extend_from_slice(&v.to_le_bytes());
        }
        self.series += 1;
    }

    pub fn push_samples(&mut self, encoded_labels: &[u8], samples: &[Sample]) {
        let (ts, vs): (Vec<i64>, Vec<f64>) = samples.iter().map(|s| (s.t, s.v)).unzip();
        self.push(encoded_labels, &ts, &vs);
    }

    pub fn series(&self) -> usize {
        self.series
    }

    pub fn finish(self) -> Vec<u8> {
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

/// The length of the float frame at the start of `rest`, `None` at the end.
fn frame_length(rest: &[u8]) -> Option<usize> {
    let mut r = rest;
    let labels = take_uvarint(&mut r).ok()?;
    take(&mut r, labels).ok()?;
    let n = take_uvarint(&mut r).ok()?;
    let header = rest.len() - r.len();
    Some(header + usize::try_from(n).ok()?.checked_mul(16)?)
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
    ts: &'a [u8],
    vs: &'a [u8],
    /// The series' histogram samples, decoded with the frame (few series
    /// have any).
    pub histograms: Vec<HistogramSample>,
}

impl Frame<'_> {
    pub fn len(&self) -> usize {
        self.ts.len() / 8
    }

    /// No float and no histogram samples.
    pub fn is_empty(&self) -> bool {
        self.ts.is_empty() && self.histograms.is_empty()
    }

    /// Appends the samples' timestamps and values to `ts` and `vs`.
    pub fn read_into(&self, ts: &mut Vec<i64>, vs: &mut Vec<f64>) {
        ts.extend(self.ts.chunks_exact(8).map(|c| i64::from_le_bytes(word(c))));
        vs.extend(self.vs.chunks_exact(8).map(|c| f64::from_le_bytes(word(c))));
    }

    pub fn samples_into(&self, out: &mut Vec<Sample>) {
        out.clear();
        out.extend(
            self.ts
                .chunks_exact(8)
                .zip(self.vs.chunks_exact(8))
                .map(|(t, v)| Sample::new(i64::from_le_bytes(word(t)), f64::from_le_bytes(word(v)))),
        );
    }
}

fn word(c: &[u8]) -> [u8; 8] {
    let mut w = [0u8; 8];
    w.copy_from_slice(c);
    w
}

/// The frames of a body, in order; an error ends the iteration.
pub fn frames(body: &[u8]) -> Result<impl Iterator<Item = Result<Frame<'_>, StorageError>>, StorageError> {
    let (mut rest, with_histograms) = if let Some(rest) = body.strip_prefix(MAGIC.as_slice()) {
        (rest, false)
    } else if let Some(rest) = body.strip_prefix(MAGIC_WITH_HISTOGRAMS.as_slice()) {
        (rest, true)
    } else {
        return Err(malformed("no frame header"));
    };
    let mut failed = false;
    Ok(std::iter::from_fn(move || {
        if rest.is_empty() || failed {
            return None;
        }
        let frame = next_frame(&mut rest, with_histograms);
        failed = frame.is_err();
        Some(frame)
    }))
}

fn next_frame<'a>(rest: &mut &'a [u8], with_histograms: bool) -> Result<Frame<'a>, StorageError> {
    let len = take_uvarint(rest)?;
    let labels = take(rest, len)?;
    let labels = EncodedLabels::new(labels).map_err(|e| malformed(&format!("labels: {e}")))?;
    let n = take_uvarint(rest)?;
    let bytes = n.checked_mul(8).ok_or_else(|| malformed("sample count overflows"))?;
    let ts = take(rest, bytes)?;
    let vs = take(rest, bytes)?;
    let mut histograms = Vec::new();
    if with_histograms {
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
        ts,
        vs,
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
        let got: Vec<_> = frames(&body).unwrap().collect::<Result<_, _>>().unwrap();
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].labels.as_bytes(), &a[..]);
        let (mut ts, mut vs) = (Vec::new(), Vec::new());
        got[0].read_into(&mut ts, &mut vs);
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
        let got: Vec<_> = frames(&body).unwrap().collect::<Result<_, _>>().unwrap();
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
            for b in [&body, &with_magic, &with_histograms] {
                if let Ok(it) = frames(b) {
                    for f in it.take(1000).flatten() {
                        let (mut ts, mut vs) = (Vec::new(), Vec::new());
                        f.read_into(&mut ts, &mut vs);
                        prop_assert_eq!(ts.len(), vs.len());
                    }
                }
            }
        }
    }
}
