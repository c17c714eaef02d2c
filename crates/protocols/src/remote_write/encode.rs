//! Builds request bodies as Prometheus sends them: a protobuf
//! `WriteRequest`, snappy block-compressed (or zstd, or identity).

use std::collections::HashMap;

use cairn_model::{EncodedLabels, HistogramSample, Labels, Sample, WireLabels, put_wire_label};
use prost::encoding::{encode_varint, encoded_len_varint};

use super::histogram::to_proto;
use super::{ContentEncoding, proto_v2};
use crate::{MetricMetadata, SeriesSamples};

/// Why a request could not be encoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum EncodeError {
    /// Snappy's block format cannot hold more than about 4 GiB.
    #[error("encoded request is {0} bytes, too large for snappy")]
    TooLarge(usize),
    #[error("{encoding} compression failed: {reason}")]
    Compress { encoding: ContentEncoding, reason: String },
}

/// Appends a snappy-compressed `WriteRequest` to `dst`, exactly as
/// Prometheus sends it (`Content-Encoding: snappy`).
///
/// Labels go out in `Labels`' canonical (sorted) order; proto3 defaults
/// (empty strings, zero timestamps, a `+0.0` value) are omitted as protobuf
/// encoders do. Native histograms go out as integer histograms when their
/// counts allow, else as float ones. Unlike Prometheus' encoder, a `-0.0` value is written rather
/// than omitted, so it survives the round trip bit-exact.
pub fn encode_write_request(
    series: &[SeriesSamples],
    metadata: &[MetricMetadata],
    dst: &mut Vec<u8>,
) -> Result<(), EncodeError> {
    encode_write_request_with(series, metadata, ContentEncoding::Snappy, dst)
}

/// Like [`encode_write_request`], compressed as `encoding` says.
pub fn encode_write_request_with(
    series: &[SeriesSamples],
    metadata: &[MetricMetadata],
    encoding: ContentEncoding,
    dst: &mut Vec<u8>,
) -> Result<(), EncodeError> {
    if encoding == ContentEncoding::Identity {
        encode_protobuf(series, metadata, dst);
        return Ok(());
    }
    let mut pb = Vec::new();
    encode_protobuf(series, metadata, &mut pb);
    compress(&pb, encoding, dst)
}

/// Appends a remote write 2.0 `Request` (one symbols table, labels as
/// references into it, no metadata), compressed as `encoding` says; sent
/// with `Content-Type: application/x-protobuf;proto=io.prometheus.write.v2.Request`.
/// Encoded by prost, which (like Prometheus' encoder) omits a zero value,
/// so a `-0.0` sample arrives as `+0.0`.
pub fn encode_write_request_v2(
    series: &[SeriesSamples],
    encoding: ContentEncoding,
    dst: &mut Vec<u8>,
) -> Result<(), EncodeError> {
    // The spec reserves symbol 0 for the empty string.
    let mut symbols = vec![String::new()];
    let mut index: HashMap<String, u32> = HashMap::from([(String::new(), 0)]);
    let mut request = proto_v2::Request {
        symbols: Vec::new(),
        timeseries: Vec::with_capacity(series.len()),
    };
    for s in series {
        let mut labels_refs = Vec::with_capacity(2 * s.labels.len());
        for l in &s.labels {
            for x in [&l.name, &l.value] {
                let i = match index.get(x.as_str()) {
                    Some(&i) => i,
                    None => {
                        let i = symbols.len() as u32;
                        symbols.push(x.to_string());
                        index.insert(x.to_string(), i);
                        i
                    }
                };
                labels_refs.push(i);
            }
        }
        let samples = s
            .samples
            .iter()
            .map(|x| proto_v2::Sample {
                value: x.v,
                timestamp: x.t,
                start_timestamp: 0,
            })
            .collect();
        request.timeseries.push(proto_v2::TimeSeries {
            labels_refs,
            samples,
            histograms: s.histograms.iter().map(to_proto).collect(),
            ..Default::default()
        });
    }
    request.symbols = symbols;
    compress(&prost::Message::encode_to_vec(&request), encoding, dst)
}

/// Appends `pb`, a whole request, compressed as `encoding` says.
pub fn compress(pb: &[u8], encoding: ContentEncoding, dst: &mut Vec<u8>) -> Result<(), EncodeError> {
    let failed = |reason: String| EncodeError::Compress { encoding, reason };
    match encoding {
        ContentEncoding::Snappy => {
            let max = snap::raw::max_compress_len(pb.len());
            if max == 0 {
                return Err(EncodeError::TooLarge(pb.len()));
            }
            let start = dst.len();
            dst.resize(start + max, 0);
            let out = dst.get_mut(start..).unwrap_or_default();
            let n = snap::raw::Encoder::new()
                .compress(pb, out)
                .map_err(|e| failed(e.to_string()))?;
            dst.truncate(start + n);
        }
        ContentEncoding::Zstd => {
            let out = zstd::bulk::compress(pb, zstd::DEFAULT_COMPRESSION_LEVEL).map_err(|e| failed(e.to_string()))?;
            dst.extend_from_slice(&out);
        }
        ContentEncoding::Identity => dst.extend_from_slice(pb),
    }
    Ok(())
}

// Field keys: (field number << 3) | wire type.
const KEY_1_LEN: u8 = 0x0a;
const KEY_2_LEN: u8 = 0x12;
const KEY_3_LEN: u8 = 0x1a;
const KEY_4_LEN: u8 = 0x22;
const KEY_5_LEN: u8 = 0x2a;
const KEY_1_FIXED64: u8 = 0x09;
const KEY_1_VARINT: u8 = 0x08;
const KEY_2_VARINT: u8 = 0x10;

/// Appends the uncompressed `WriteRequest`.
fn encode_protobuf(series: &[SeriesSamples], metadata: &[MetricMetadata], dst: &mut Vec<u8>) {
    let mut labels = Vec::new();
    for s in series {
        labels.clear();
        encode_labels(&s.labels, &mut labels);
        encode_series(&labels, &s.samples, &s.histograms, dst);
    }
    for m in metadata {
        let kind = super::proto::MetricType::from(m.metric_type) as u64;
        let len = if kind == 0 { 0 } else { 1 + encoded_len_varint(kind) }
            + str_len(&m.metric_family_name)
            + str_len(&m.help)
            + str_len(&m.unit);
        dst.push(KEY_3_LEN);
        encode_varint(len as u64, dst);
        if kind != 0 {
            dst.push(KEY_1_VARINT);
            encode_varint(kind, dst);
        }
        put_str(KEY_2_LEN, &m.metric_family_name, dst);
        put_str(KEY_4_LEN, &m.help, dst);
        put_str(KEY_5_LEN, &m.unit, dst);
    }
}

/// Appends `labels` as the label fields of a remote write 1.0 `TimeSeries`,
/// for [`encode_series`]: a sender that sends a series again and again
/// encodes its labels once.
pub fn encode_labels(labels: &Labels, dst: &mut Vec<u8>) {
    encode_label_pairs(labels.iter().map(|l| (l.name.as_bytes(), l.value.as_bytes())), dst);
}

/// [`encode_labels`] of labels given as `(name, value)` pairs of UTF-8
/// text, in order.
pub fn encode_label_pairs<'a>(pairs: impl IntoIterator<Item = (&'a [u8], &'a [u8])>, dst: &mut Vec<u8>) {
    for (name, value) in pairs {
        put_wire_label(name, value, dst);
    }
}

/// Appends one `TimeSeries` of a remote write 1.0 `WriteRequest` (its field
/// 1): the labels [`encode_labels`] encoded, then the samples and
/// histograms. Requests built of these are compressed by [`compress`].
pub fn encode_series(labels: &[u8], samples: &[Sample], histograms: &[HistogramSample], dst: &mut Vec<u8>) {
    let histograms: Vec<Vec<u8>> = histograms
        .iter()
        .map(|h| prost::Message::encode_to_vec(&to_proto(h)))
        .collect();
    let len = labels.len()
        + samples
            .iter()
            .map(|smp| {
                let n = sample_len(smp);
                1 + encoded_len_varint(n as u64) + n
            })
            .sum::<usize>()
        + histograms
            .iter()
            .map(|h| 1 + encoded_len_varint(h.len() as u64) + h.len())
            .sum::<usize>();
    dst.reserve(len + 6);
    dst.push(KEY_1_LEN);
    encode_varint(len as u64, dst);
    dst.extend_from_slice(labels);
    for smp in samples {
        put_sample(smp, dst);
    }
    for h in &histograms {
        dst.push(KEY_4_LEN);
        encode_varint(h.len() as u64, dst);
        dst.extend_from_slice(h);
    }
}

/// [`encode_series`] of one float sample under the labels of a canonical
/// encoding, written in one pass with no label fields in between: the
/// forwarding path of every scraped sample.
pub fn encode_float_series(labels: EncodedLabels<'_>, sample: &Sample, dst: &mut Vec<u8>) {
    let start = dst.len();
    if put_short_series(labels, sample, dst) {
        return;
    }
    dst.truncate(start);
    let labels_len: usize = labels
        .raw_pairs()
        .map(|(name, value)| {
            let n = bytes_len(name) + bytes_len(value);
            1 + encoded_len_varint(n as u64) + n
        })
        .sum();
    put_series_head(labels_len, sample, dst);
    encode_label_pairs(labels.raw_pairs(), dst);
    put_sample(sample, dst);
}

/// [`encode_series`] of one float sample under labels already in remote
/// write's form: the labels are copied as they are.
pub fn encode_wire_series(labels: WireLabels<'_>, sample: &Sample, dst: &mut Vec<u8>) {
    put_series_head(labels.as_bytes().len(), sample, dst);
    dst.extend_from_slice(labels.as_bytes());
    put_sample(sample, dst);
}

/// The key and length of a `TimeSeries` of labels `labels_len` long and
/// one float sample.
fn put_series_head(labels_len: usize, sample: &Sample, dst: &mut Vec<u8>) {
    let n = sample_len(sample);
    let len = labels_len + 1 + encoded_len_varint(n as u64) + n;
    dst.reserve(len + 11);
    dst.push(KEY_1_LEN);
    put_varint(len, dst);
}

/// [`encode_float_series`] of a canonical encoding whose count, names and
/// values are all under 128 bytes long (as nearly all are), and whose pairs
/// each make a `Label` under 128 bytes: each string with its one length
/// byte is then a `bytes` field of remote write's `Label` but for the
/// field's key, and is copied as it is. Every pair then grows by the same
/// four bytes (two keys, the `Label`'s key and length), so the series'
/// length is known before its labels are read, and they are read once.
/// False for any other encoding, with part of the series written.
fn put_short_series(labels: EncodedLabels<'_>, sample: &Sample, dst: &mut Vec<u8>) -> bool {
    let Some((&count, mut rest)) = labels.as_bytes().split_first() else {
        return false;
    };
    if count >= 0x80 {
        return false;
    }
    put_series_head(rest.len() + 4 * usize::from(count), sample, dst);
    for _ in 0..count {
        let (Some(name), Some(value)) = (short_string(&mut rest), short_string(&mut rest)) else {
            return false;
        };
        // An empty string is a field left out, not one to copy.
        if name.len() < 2 || value.len() < 2 {
            return false;
        }
        let Ok(label_len @ 0..0x80) = u8::try_from(2 + name.len() + value.len()) else {
            return false;
        };
        dst.extend_from_slice(&[KEY_1_LEN, label_len, KEY_1_LEN]);
        dst.extend_from_slice(name);
        dst.push(KEY_2_LEN);
        dst.extend_from_slice(value);
    }
    if !rest.is_empty() {
        return false;
    }
    put_sample(sample, dst);
    true
}

/// A string under 128 bytes long with its length byte, taken off `rest`.
fn short_string<'a>(rest: &mut &'a [u8]) -> Option<&'a [u8]> {
    let len = usize::from(*rest.first()?);
    if len >= 0x80 || len >= rest.len() {
        return None;
    }
    let (string, tail) = rest.split_at(len + 1);
    *rest = tail;
    Some(string)
}

/// One `Sample` field of a `TimeSeries`, proto3 defaults omitted.
fn put_sample(s: &Sample, dst: &mut Vec<u8>) {
    dst.push(KEY_2_LEN);
    put_varint(sample_len(s), dst);
    if s.v.to_bits() != 0 {
        dst.push(KEY_1_FIXED64);
        dst.extend_from_slice(&s.v.to_le_bytes());
    }
    if s.t != 0 {
        dst.push(KEY_2_VARINT);
        encode_varint(s.t as u64, dst);
    }
}

/// A length as a varint, the usual one byte without a call.
#[inline]
fn put_varint(v: usize, dst: &mut Vec<u8>) {
    match u8::try_from(v) {
        Ok(b) if b < 0x80 => dst.push(b),
        _ => encode_varint(v as u64, dst),
    }
}

/// Encoded length of a bytes field, omitted when empty.
fn bytes_len(b: &[u8]) -> usize {
    if b.is_empty() {
        0
    } else {
        1 + encoded_len_varint(b.len() as u64) + b.len()
    }
}

fn put_str(key: u8, s: &str, dst: &mut Vec<u8>) {
    if !s.is_empty() {
        dst.push(key);
        encode_varint(s.len() as u64, dst);
        dst.extend_from_slice(s.as_bytes());
    }
}

/// Encoded length of a string field, omitted when empty.
fn str_len(s: &str) -> usize {
    if s.is_empty() {
        0
    } else {
        1 + encoded_len_varint(s.len() as u64) + s.len()
    }
}

fn sample_len(s: &Sample) -> usize {
    let v = if s.v.to_bits() != 0 { 9 } else { 0 };
    let t = if s.t != 0 {
        1 + encoded_len_varint(s.t as u64)
    } else {
        0
    };
    v + t
}
