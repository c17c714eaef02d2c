//! The hot path: body → decompressed bytes → [`WriteBatch`].
//!
//! The protobuf is walked by hand (our own key/varint readers, prost's
//! `skip_field` for unknown fields) rather than decoded into
//! [`proto`](super::proto) structs first: label names and values
//! stay borrowed from the body and are validated, canonicalised and written
//! into the batch's flat label buffer (no `String` per label); samples are
//! read straight into [`Sample`]; exemplars are counted, not built. Native
//! histograms, rare and small beside float samples, are decoded by prost
//! ([`proto::Histogram`]) one at a time. The prost structs remain the schema
//! of record and the tests check this walker against them.

use std::borrow::Cow;
use std::io::Read;

use cairn_model::{HistogramSample, LabelError, METRIC_NAME, Sample, stale_nan};
use prost::encoding::{DecodeContext, WireType, skip_field};

use super::histogram::{Decoded, from_proto};
use super::{ContentEncoding, DecodeError, InvalidSeriesReason, proto};
use crate::histogram::{HistogramError, max_message_len};
use crate::{DecodeLimits, InvalidHistograms, WriteBatch};

/// No snappy block expands more than ~22×: its densest element, a copy with
/// a 2-byte offset, is 3 bytes for at most 64. A body declaring more is
/// corrupt, refused before its output buffer is allocated.
const SNAPPY_MAX_RATIO: usize = 32;

/// Decodes one remote write 1.0 request body.
///
/// `encoding` comes from [`ContentEncoding::from_header`]. See the
/// [module docs](super) for what is kept, skipped and rejected.
pub fn decode_write_request(
    body: &[u8],
    encoding: ContentEncoding,
    limits: &DecodeLimits,
) -> Result<WriteBatch, DecodeError> {
    let raw = decompress(body, encoding, limits.max_decompressed_bytes)?;
    decode_protobuf(&raw, limits)
}

pub(super) fn decompress(body: &[u8], encoding: ContentEncoding, limit: usize) -> Result<Cow<'_, [u8]>, DecodeError> {
    let too_large = |size: Option<u64>| DecodeError::TooLarge { encoding, limit, size };
    let failed = |reason: String| DecodeError::Decompress { encoding, reason };
    match encoding {
        ContentEncoding::Identity => {
            if body.len() > limit {
                return Err(too_large(Some(body.len() as u64)));
            }
            Ok(Cow::Borrowed(body))
        }
        ContentEncoding::Snappy => {
            let len = snap::raw::decompress_len(body).map_err(|e| failed(e.to_string()))?;
            if len > limit {
                return Err(too_large(Some(len as u64)));
            }
            if len > body.len().saturating_mul(SNAPPY_MAX_RATIO) {
                return Err(failed(format!(
                    "declared length {len} is impossible for a {}-byte body",
                    body.len()
                )));
            }
            let mut out = vec![0; len];
            let n = snap::raw::Decoder::new()
                .decompress(body, &mut out)
                .map_err(|e| failed(e.to_string()))?;
            out.truncate(n);
            Ok(Cow::Owned(out))
        }
        ContentEncoding::Zstd => {
            let mut out = Vec::new();
            // A frame that declares its size lets us refuse early and
            // allocate once; the bounded read below is the real guard.
            if let Ok(Some(size)) = zstd::zstd_safe::get_frame_content_size(body) {
                if size > limit as u64 {
                    return Err(too_large(Some(size)));
                }
                out.reserve_exact(size as usize);
            }
            let mut decoder = zstd::stream::read::Decoder::with_buffer(body).map_err(|e| failed(e.to_string()))?;
            // No window needs to exceed the output limit; without this a
            // 20-byte frame can make the decoder allocate 128 MiB.
            decoder
                .window_log_max(window_log_for(limit))
                .map_err(|e| failed(e.to_string()))?;
            decoder
                .take(limit as u64 + 1)
                .read_to_end(&mut out)
                .map_err(|e| failed(e.to_string()))?;
            if out.len() > limit {
                return Err(too_large(None));
            }
            Ok(Cow::Owned(out))
        }
    }
}

/// The largest zstd window accepted: enough for `limit` bytes, and never
/// below 8 MiB (2^23), the widest window zstd's levels 1–19 pick for input
/// of unknown size, so ordinary streaming senders always fit.
fn window_log_for(limit: usize) -> u32 {
    let log = usize::BITS - limit.saturating_sub(1).leading_zeros();
    log.clamp(23, 31)
}

#[cfg(test)]
pub(super) fn window_log_for_test(limit: usize) -> u32 {
    window_log_for(limit)
}

/// A protobuf framing error from prost's primitives or our own checks.
enum WireError {
    Prost(prost::DecodeError),
    Truncated,
    InvalidVarint,
    InvalidWireType(u64),
    InvalidTag(u64),
    WrongWireType { tag: u32, got: WireType },
}

impl From<prost::DecodeError> for WireError {
    fn from(e: prost::DecodeError) -> Self {
        Self::Prost(e)
    }
}

impl WireError {
    fn at(self, at: impl FnOnce() -> String) -> DecodeError {
        let reason = match self {
            Self::Prost(e) => {
                let s = e.to_string();
                match s.strip_prefix("failed to decode Protobuf message: ") {
                    Some(rest) => rest.to_string(),
                    None => s,
                }
            }
            Self::Truncated => "length runs past the end of the message".to_string(),
            Self::InvalidVarint => "invalid varint".to_string(),
            Self::InvalidWireType(w) => format!("invalid wire type value: {w}"),
            Self::InvalidTag(key) => format!("invalid field key {key}"),
            Self::WrongWireType { tag, got } => {
                format!("field {tag} has wire type {got:?}, want LengthDelimited")
            }
        };
        DecodeError::BadProtobuf { at: at(), reason }
    }
}

/// Reads a base-128 varint. Written here rather than taken from prost so the
/// one-byte case (every key, most lengths) inlines into the loops below.
#[inline(always)]
fn decode_varint(buf: &mut &[u8]) -> Result<u64, WireError> {
    if let Some((&b, rest)) = buf.split_first()
        && b < 0x80
    {
        *buf = rest;
        return Ok(u64::from(b));
    }
    decode_varint_slow(buf)
}

#[inline(never)]
fn decode_varint_slow(buf: &mut &[u8]) -> Result<u64, WireError> {
    let mut value = 0u64;
    for (i, &b) in buf.iter().enumerate().take(10) {
        value |= u64::from(b & 0x7f) << (7 * i);
        if b < 0x80 {
            // The tenth byte holds only the top bit of a u64.
            if i == 9 && b > 1 {
                return Err(WireError::InvalidVarint);
            }
            *buf = buf.get(i + 1..).unwrap_or_default();
            return Ok(value);
        }
    }
    Err(WireError::InvalidVarint)
}

/// Reads a field key: (field number, wire type).
#[inline(always)]
fn decode_key(buf: &mut &[u8]) -> Result<(u32, WireType), WireError> {
    let key = decode_varint(buf)?;
    let wt = WireType::try_from(key & 7).map_err(|_| WireError::InvalidWireType(key & 7))?;
    // Field numbers run from 1 to 2^29 - 1, so a key fits in a u32.
    let tag = u32::try_from(key).map_err(|_| WireError::InvalidTag(key))? >> 3;
    if tag == 0 {
        return Err(WireError::InvalidTag(key));
    }
    Ok((tag, wt))
}

/// Splits one length-delimited field's payload off `buf`.
#[inline]
fn length_delimited<'a>(tag: u32, wt: WireType, buf: &mut &'a [u8]) -> Result<&'a [u8], WireError> {
    if wt != WireType::LengthDelimited {
        return Err(WireError::WrongWireType { tag, got: wt });
    }
    let len = decode_varint(buf)?;
    let len = usize::try_from(len).map_err(|_| WireError::Truncated)?;
    let (payload, rest) = buf.split_at_checked(len).ok_or(WireError::Truncated)?;
    *buf = rest;
    Ok(payload)
}

/// Per-request scratch reused across series, borrowing from the body.
struct Scratch<'a> {
    labels: Vec<(&'a [u8], &'a [u8])>,
    pairs: Vec<(&'a str, &'a str)>,
    samples: Vec<Sample>,
    histograms: Vec<HistogramSample>,
    /// Histogram staleness markers among `samples`.
    stale_markers: usize,
}

fn decode_protobuf(mut buf: &[u8], limits: &DecodeLimits) -> Result<WriteBatch, DecodeError> {
    let mut batch = WriteBatch::default();
    let mut scratch = Scratch {
        labels: Vec::new(),
        pairs: Vec::new(),
        samples: Vec::new(),
        histograms: Vec::new(),
        stale_markers: 0,
    };
    let mut series_index = 0usize;
    let mut meta_index = 0usize;
    while !buf.is_empty() {
        let (tag, wt) = decode_key(&mut buf).map_err(|e| e.at(|| "write request".into()))?;
        match tag {
            1 => {
                let msg = length_delimited(tag, wt, &mut buf).map_err(|e| e.at(|| format!("series {series_index}")))?;
                decode_series(msg, series_index, limits, &mut scratch, &mut batch)?;
                series_index += 1;
            }
            3 => {
                let at = || format!("metadata {meta_index}");
                let msg = length_delimited(tag, wt, &mut buf).map_err(|e| e.at(at))?;
                let m =
                    <proto::MetricMetadata as prost::Message>::decode(msg).map_err(|e| WireError::from(e).at(at))?;
                batch.metadata.push(m.into());
                meta_index += 1;
            }
            _ => skip_field(wt, tag, &mut buf, DecodeContext::default())
                .map_err(|e| WireError::from(e).at(|| "write request".into()))?,
        }
    }
    Ok(batch)
}

fn decode_series<'a>(
    mut msg: &'a [u8],
    index: usize,
    limits: &DecodeLimits,
    scratch: &mut Scratch<'a>,
    batch: &mut WriteBatch,
) -> Result<(), DecodeError> {
    scratch.labels.clear();
    scratch.samples.clear();
    scratch.histograms.clear();
    scratch.stale_markers = 0;
    let mut label_count = 0usize;
    let mut histogram_count = 0usize;
    let series_at = || format!("series {index}");
    let whole = msg;
    // End of the run of label fields at the start of the message, as
    // Prometheus writes them: one UTF-8 check of that run covers every label
    // string in it (tags and lengths below 128 are ASCII). Labels elsewhere
    // are checked one by one.
    let mut label_run_end = 0;
    while !msg.is_empty() {
        let field_start = whole.len() - msg.len();
        let (tag, wt) = decode_key(&mut msg).map_err(|e| e.at(series_at))?;
        match tag {
            1 => {
                let at = || format!("series {index} label {label_count}");
                let field = length_delimited(tag, wt, &mut msg).map_err(|e| e.at(at))?;
                if label_run_end == field_start {
                    label_run_end = whole.len() - msg.len();
                }
                let pair = decode_label(field).map_err(|e| e.at(at))?;
                // Keep counting past the limit so framing errors still win,
                // but never hold more than the limit.
                if label_count < limits.max_labels_per_series {
                    scratch.labels.push(pair);
                }
                label_count += 1;
            }
            2 => {
                let at = || format!("series {index} sample {}", scratch.samples.len());
                let field = length_delimited(tag, wt, &mut msg).map_err(|e| e.at(at))?;
                let sample = decode_sample(field).map_err(|e| e.at(at))?;
                scratch.samples.push(sample);
            }
            3 => {
                length_delimited(tag, wt, &mut msg).map_err(|e| e.at(series_at))?;
                batch.exemplars_dropped += 1;
            }
            4 => {
                let n = histogram_count;
                let at = || format!("series {index} histogram {n}");
                let field = length_delimited(tag, wt, &mut msg).map_err(|e| e.at(at))?;
                histogram_count += 1;
                let decoded = if field.len() > max_message_len(limits.max_histogram_buckets) {
                    Err(HistogramError::TooLarge {
                        len: field.len(),
                        limit: limits.max_histogram_buckets,
                    })
                } else {
                    let h =
                        <proto::Histogram as prost::Message>::decode(field).map_err(|e| WireError::from(e).at(at))?;
                    from_proto(&h, limits.max_histogram_buckets)
                };
                keep_histogram(decoded, scratch, &mut batch.histograms_invalid, &at);
            }
            _ => {
                skip_field(wt, tag, &mut msg, DecodeContext::default()).map_err(|e| WireError::from(e).at(series_at))?
            }
        }
    }
    if scratch.samples.is_empty() && scratch.histograms.is_empty() {
        return Ok(());
    }
    let invalid = |reason| DecodeError::InvalidSeries { index, reason };
    if label_count > limits.max_labels_per_series {
        return Err(invalid(InvalidSeriesReason::TooManyLabels {
            limit: limits.max_labels_per_series,
        }));
    }
    let checked = whole.get(..label_run_end).and_then(|run| std::str::from_utf8(run).ok());
    push_series(
        &scratch.labels,
        checked,
        &scratch.samples,
        &scratch.histograms,
        limits,
        &mut scratch.pairs,
        batch,
    )
    .map_err(invalid)?;
    for _ in 0..scratch.stale_markers {
        batch.count_histogram_stale_marker();
    }
    Ok(())
}

/// Puts a decoded histogram message where it belongs: the series'
/// histograms, a float stale NaN for a staleness marker, or the count of
/// refused ones. `at` names it for the refusal message.
fn keep_histogram(
    decoded: Result<Decoded, HistogramError>,
    scratch: &mut Scratch<'_>,
    invalid: &mut InvalidHistograms,
    at: &dyn Fn() -> String,
) {
    match decoded {
        Ok(Decoded::Histogram(h)) => scratch.histograms.push(h),
        Ok(Decoded::Stale(t)) => {
            scratch.samples.push(Sample::new(t, stale_nan()));
            scratch.stale_markers += 1;
        }
        Err(e) => invalid.add(|| format!("{}: {e}", at())),
    }
}

/// `part` as a `&str` taken from `checked` (text already validated as UTF-8)
/// when it lies inside it on character boundaries: no second validation.
fn within<'a>(checked: Option<&'a str>, part: &'a [u8]) -> Option<&'a str> {
    let checked = checked?;
    let start = (part.as_ptr() as usize).checked_sub(checked.as_ptr() as usize)?;
    checked.get(start..start.checked_add(part.len())?)
}

/// `prometheus.Label`: returns (name, value) as borrowed bytes. As protobuf
/// requires, a repeated field's last occurrence wins.
#[inline]
fn decode_label(mut msg: &[u8]) -> Result<(&[u8], &[u8]), WireError> {
    let (mut name, mut value): (&[u8], &[u8]) = (&[], &[]);
    while !msg.is_empty() {
        let (tag, wt) = decode_key(&mut msg)?;
        match tag {
            1 => name = length_delimited(tag, wt, &mut msg)?,
            2 => value = length_delimited(tag, wt, &mut msg)?,
            _ => skip_field(wt, tag, &mut msg, DecodeContext::default())?,
        }
    }
    Ok((name, value))
}

/// `prometheus.Sample`: `double value = 1; int64 timestamp = 2;`.
#[inline]
fn decode_sample(mut msg: &[u8]) -> Result<Sample, WireError> {
    let mut sample = Sample::new(0, 0.0);
    while !msg.is_empty() {
        let (tag, wt) = decode_key(&mut msg)?;
        match (tag, wt) {
            (1, WireType::SixtyFourBit) => {
                let (bytes, rest) = msg.split_first_chunk::<8>().ok_or(WireError::Truncated)?;
                sample.v = f64::from_le_bytes(*bytes);
                msg = rest;
            }
            // int64 is a plain (not zigzag) varint; negative values use all 10 bytes.
            (2, WireType::Varint) => sample.t = decode_varint(&mut msg)? as i64,
            (1 | 2, got) => return Err(WireError::WrongWireType { tag, got }),
            _ => skip_field(wt, tag, &mut msg, DecodeContext::default())?,
        }
    }
    Ok(sample)
}

/// Validates borrowed label pairs and adds the series to `batch` under its
/// canonical label set, allocating nothing per label. Returns the metric
/// name. `checked` is text known to be UTF-8 that may hold the labels (then
/// they are not checked again); `pairs` is scratch space.
pub(super) fn push_series<'a>(
    raw: &[(&'a [u8], &'a [u8])],
    checked: Option<&'a str>,
    samples: &[Sample],
    histograms: &[HistogramSample],
    limits: &DecodeLimits,
    pairs: &mut Vec<(&'a str, &'a str)>,
    batch: &mut WriteBatch,
) -> Result<&'a str, InvalidSeriesReason> {
    pairs.clear();
    for (position, &(name, value)) in raw.iter().enumerate() {
        if name.len() > limits.max_label_name_len {
            return Err(InvalidSeriesReason::LabelNameTooLong {
                name: evidence(name),
                len: name.len(),
                limit: limits.max_label_name_len,
            });
        }
        if value.len() > limits.max_label_value_len {
            return Err(InvalidSeriesReason::LabelValueTooLong {
                name: evidence(name),
                len: value.len(),
                limit: limits.max_label_value_len,
            });
        }
        let name = match within(checked, name) {
            Some(name) => name,
            None => std::str::from_utf8(name).map_err(|_| InvalidSeriesReason::NonUtf8LabelName { position })?,
        };
        let value = match within(checked, value) {
            Some(value) => value,
            None => std::str::from_utf8(value).map_err(|_| InvalidSeriesReason::NonUtf8LabelValue {
                name: evidence(name.as_bytes()),
            })?,
        };
        pairs.push((name, value));
    }
    batch.push_pairs(pairs, samples, histograms).map_err(|e| match e {
        LabelError::DuplicateName(n) => InvalidSeriesReason::DuplicateLabelName(evidence(n.as_bytes())),
        LabelError::EmptyName => InvalidSeriesReason::EmptyLabelName,
        other => InvalidSeriesReason::Labels(other),
    })?;
    // `pairs` is canonical now: sorted, no empty values.
    let name = match pairs.binary_search_by(|(n, _)| (*n).cmp(METRIC_NAME)) {
        Ok(i) => pairs.get(i).map(|(_, v)| *v),
        Err(_) => None,
    };
    match name {
        Some(name) => Ok(name),
        None => {
            batch.pop();
            Err(if pairs.is_empty() {
                InvalidSeriesReason::NoLabels
            } else {
                InvalidSeriesReason::NoMetricName
            })
        }
    }
}

/// A label name fit for an error message: lossy UTF-8, at most 64 chars.
fn evidence(name: &[u8]) -> String {
    String::from_utf8_lossy(name).chars().take(64).collect()
}
