//! Remote write 1.0 requests built of pieces made apart.
//!
//! A `WriteRequest`'s series are repeated field 1, so series encoded apart
//! and concatenated are one request. Snappy's block format is a length and
//! then elements whose copies reach back only into output of the same
//! block, so the elements of blocks compressed apart, concatenated under
//! the sum of their lengths, decode to their bytes concatenated. Together:
//! a scrape encoded and compressed once, when it is made durable, is sent
//! as it is, in whatever request it ends up.

use cairn_codec::varint::get_uvarint;

/// A request body being built of snappy blocks and uncompressed series.
#[derive(Debug, Default)]
pub struct SnappyBody {
    /// The uncompressed length of everything pushed.
    raw_len: usize,
    /// The pushed blocks' elements, concatenated.
    elements: Vec<u8>,
    /// Where uncompressed pushes are compressed.
    scratch: Vec<u8>,
}

impl SnappyBody {
    pub fn is_empty(&self) -> bool {
        self.raw_len == 0
    }

    /// The uncompressed length so far.
    pub fn raw_len(&self) -> usize {
        self.raw_len
    }

    /// Adds a snappy block (its uncompressed bytes being series fields).
    pub fn push_block(&mut self, block: &[u8]) -> Result<(), &'static str> {
        let (len, elements) = split_block(block)?;
        self.raw_len += len;
        self.elements.extend_from_slice(elements);
        Ok(())
    }

    /// Adds uncompressed series fields, compressing them.
    pub fn push_raw(&mut self, raw: &[u8]) -> Result<(), &'static str> {
        if raw.is_empty() {
            return Ok(());
        }
        let mut scratch = std::mem::take(&mut self.scratch);
        let pushed =
            snappy_block(raw, &mut scratch).and_then(|n| self.push_block(scratch.get(..n).unwrap_or_default()));
        self.scratch = scratch;
        pushed
    }

    /// The body: one snappy block of everything pushed. The builder is empty after.
    pub fn take(&mut self) -> Vec<u8> {
        let mut body = Vec::with_capacity(self.elements.len() + 10);
        prost::encoding::encode_varint(self.raw_len as u64, &mut body);
        body.extend_from_slice(&self.elements);
        self.elements.clear();
        self.raw_len = 0;
        body
    }
}

/// Compresses `raw` into one snappy block at the start of `out`, which
/// grows as needed and is never shrunk (so a buffer compressed into again
/// and again is not zeroed each time); the block's length.
pub fn snappy_block(raw: &[u8], out: &mut Vec<u8>) -> Result<usize, &'static str> {
    let max = snap::raw::max_compress_len(raw.len());
    if out.len() < max {
        out.resize(max, 0);
    }
    snap::raw::Encoder::new()
        .compress(raw, out)
        .map_err(|_| "too large for a snappy block")
}

/// Decompresses a snappy block into `dst` (replacing what it held), up to `max` bytes.
pub fn unsnappy_block(block: &[u8], max: usize, dst: &mut Vec<u8>) -> Result<(), &'static str> {
    let len = snap::raw::decompress_len(block).map_err(|_| "bad snappy block")?;
    if len > max {
        return Err("snappy block too large");
    }
    dst.clear();
    dst.resize(len, 0);
    match snap::raw::Decoder::new().decompress(block, dst) {
        Ok(n) if n == len => Ok(()),
        _ => Err("bad snappy block"),
    }
}

/// A snappy block's uncompressed length and its elements.
fn split_block(block: &[u8]) -> Result<(usize, &[u8]), &'static str> {
    let (len, elements) = get_uvarint(block).map_err(|_| "bad snappy block length")?;
    usize::try_from(len)
        .map(|len| (len, elements))
        .map_err(|_| "bad snappy block length")
}

/// One series field of a request: the whole field (key and length
/// included), its label fields, and its one sample's time and kind.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SeriesField<'a> {
    pub field: &'a [u8],
    /// The `TimeSeries`' label fields (as [`super::encode_label_pairs`] writes them).
    pub labels: &'a [u8],
    /// The time of its last sample or histogram.
    pub t: i64,
    pub histogram: bool,
}

/// The series fields of uncompressed request bytes, in order; an error
/// ends it, naming what was malformed.
pub fn series_fields(pb: &[u8]) -> impl Iterator<Item = Result<SeriesField<'_>, &'static str>> {
    let mut rest = pb;
    let mut failed = false;
    std::iter::from_fn(move || {
        if rest.is_empty() || failed {
            return None;
        }
        let next = next_series(rest);
        match next {
            Ok((field, after)) => {
                rest = after;
                Some(Ok(field))
            }
            Err(e) => {
                failed = true;
                Some(Err(e))
            }
        }
    })
}

fn next_series(src: &[u8]) -> Result<(SeriesField<'_>, &[u8]), &'static str> {
    let (key, body, rest) = length_delimited(src)?;
    if key != KEY_SERIES {
        return Err("not a series field");
    }
    let field = src.get(..src.len() - rest.len()).ok_or("bad series field")?;
    let mut inner = body;
    let mut labels_end = 0;
    let (mut t, mut histogram) = (None, false);
    while !inner.is_empty() {
        let (key, value, after) = length_delimited(inner)?;
        match key {
            KEY_LABEL if t.is_none() && !histogram => labels_end = body.len() - after.len(),
            KEY_SAMPLE => t = Some(varint_field(value, KEY_SAMPLE_TIME)?),
            KEY_HISTOGRAM => {
                t = Some(varint_field(value, KEY_HISTOGRAM_TIME)?);
                histogram = true;
            }
            _ => {}
        }
        inner = after;
    }
    let series = SeriesField {
        field,
        labels: body.get(..labels_end).ok_or("bad label fields")?,
        t: t.ok_or("a series without a sample")?,
        histogram,
    };
    Ok((series, rest))
}

const KEY_SERIES: u64 = 0x0a;
const KEY_LABEL: u64 = 0x0a;
const KEY_SAMPLE: u64 = 0x12;
const KEY_HISTOGRAM: u64 = 0x22;
const KEY_SAMPLE_TIME: u64 = 0x10;
const KEY_HISTOGRAM_TIME: u64 = 15 << 3;

/// A length-delimited field: its key, its bytes and what follows it.
fn length_delimited(src: &[u8]) -> Result<(u64, &[u8], &[u8]), &'static str> {
    let (key, rest) = get_uvarint(src).map_err(|_| "bad field key")?;
    if key & 7 != 2 {
        return Err("a field that is not length-delimited");
    }
    let (len, rest) = get_uvarint(rest).map_err(|_| "bad field length")?;
    let len = usize::try_from(len).map_err(|_| "bad field length")?;
    if len > rest.len() {
        return Err("a field longer than its message");
    }
    let (value, rest) = rest.split_at(len);
    Ok((key, value, rest))
}

/// The value of the varint field `want` in a message (0, protobuf's
/// default, when absent), skipping the other fields.
fn varint_field(mut msg: &[u8], want: u64) -> Result<i64, &'static str> {
    let mut found = 0;
    while !msg.is_empty() {
        let (key, rest) = get_uvarint(msg).map_err(|_| "bad field key")?;
        msg = match key & 7 {
            0 => {
                let (v, rest) = get_uvarint(rest).map_err(|_| "bad varint")?;
                if key == want {
                    found = v as i64;
                }
                rest
            }
            1 => rest.get(8..).ok_or("a truncated fixed64")?,
            5 => rest.get(4..).ok_or("a truncated fixed32")?,
            2 => {
                let (len, rest) = get_uvarint(rest).map_err(|_| "bad field length")?;
                let len = usize::try_from(len).map_err(|_| "bad field length")?;
                rest.get(len..).ok_or("a field longer than its message")?
            }
            _ => return Err("a field of an unknown wire type"),
        };
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use cairn_model::{Histogram, HistogramSample, Labels, Sample};
    use proptest::prelude::*;

    use super::*;
    use crate::DecodeLimits;
    use crate::remote_write::{ContentEncoding, decode_write_request, encode_labels, encode_series};

    /// One series field per (name, t, value), histograms where asked.
    fn fields(series: &[(String, i64, f64, bool)]) -> Vec<Vec<u8>> {
        series
            .iter()
            .map(|(name, t, v, histogram)| {
                let mut labels = Vec::new();
                encode_labels(
                    &Labels::from_pairs([("__name__", name.as_str()), ("i", "x")]),
                    &mut labels,
                );
                let mut field = Vec::new();
                if *histogram {
                    let h = HistogramSample {
                        t: *t,
                        h: Arc::new(Histogram {
                            count: 3.0,
                            sum: if v.is_nan() { 1.0 } else { *v },
                            zero_count: 3.0,
                            zero_threshold: 0.001,
                            ..Histogram::default()
                        }),
                    };
                    encode_series(&labels, &[], &[h], &mut field);
                } else {
                    encode_series(&labels, &[Sample::new(*t, *v)], &[], &mut field);
                }
                field
            })
            .collect()
    }

    fn series() -> impl Strategy<Value = Vec<(String, i64, f64, bool)>> {
        proptest::collection::vec(
            (
                "[a-z]{1,8}",
                -5i64..1_900_000_000_000,
                any::<f64>(),
                prop::bool::weighted(0.2),
            ),
            0..40,
        )
    }

    proptest! {
        /// Whatever the cut into pieces and which are compressed apart, the
        /// body decodes to every series in order.
        #[test]
        fn pieces_make_one_request(series in series(), cuts in proptest::collection::vec(any::<(u8, bool)>(), 0..8)) {
            let fields = fields(&series);
            let whole: Vec<u8> = fields.concat();
            let mut body = SnappyBody::default();
            let mut from = 0;
            for (cut, compressed) in cuts {
                let to = (from + cut as usize % 6).min(fields.len());
                let piece = fields[from..to].concat();
                if compressed {
                    let mut block = Vec::new();
                    let n = snappy_block(&piece, &mut block).unwrap();
                    block.truncate(n);
                    body.push_block(&block).unwrap();
                } else {
                    body.push_raw(&piece).unwrap();
                }
                from = to;
            }
            body.push_raw(&fields[from..].concat()).unwrap();
            prop_assert_eq!(body.raw_len(), whole.len());
            let body = body.take();
            let mut raw = Vec::new();
            unsnappy_block(&body, usize::MAX, &mut raw).unwrap();
            prop_assert_eq!(&raw, &whole);
            let decoded = decode_write_request(&body, ContentEncoding::Snappy, &DecodeLimits::default()).unwrap();
            let expected = decode_write_request(&whole, ContentEncoding::Identity, &DecodeLimits::default()).unwrap();
            prop_assert_eq!(decoded.to_series(), expected.to_series());
        }

        /// The walk finds each field whole, its labels and its sample's time and kind.
        #[test]
        fn the_walk_finds_every_series(series in series()) {
            let fields = fields(&series);
            let whole = fields.concat();
            let walked: Vec<SeriesField<'_>> = series_fields(&whole).collect::<Result<_, _>>().unwrap();
            prop_assert_eq!(walked.len(), series.len());
            for ((w, field), (name, t, _, histogram)) in walked.iter().zip(&fields).zip(&series) {
                prop_assert_eq!(w.field, field.as_slice());
                let mut labels = Vec::new();
                encode_labels(&Labels::from_pairs([("__name__", name.as_str()), ("i", "x")]), &mut labels);
                prop_assert_eq!(w.labels, labels.as_slice());
                prop_assert_eq!((w.t, w.histogram), (*t, *histogram));
            }
        }

        /// Bytes that are not series end the walk with an error, never a panic.
        #[test]
        fn garbage_is_an_error(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
            let _ = series_fields(&bytes).count();
            let mut out = Vec::new();
            let _ = unsnappy_block(&bytes, 1 << 20, &mut out);
            let _ = SnappyBody::default().push_block(&bytes);
        }
    }

    #[test]
    fn a_block_larger_than_allowed_is_refused() {
        let mut block = Vec::new();
        let n = snappy_block(&[7u8; 1000], &mut block).unwrap();
        block.truncate(n);
        let mut out = Vec::new();
        assert_eq!(unsnappy_block(&block, 999, &mut out), Err("snappy block too large"));
        assert_eq!(unsnappy_block(&block, 1000, &mut out), Ok(()));
        assert_eq!(out, vec![7u8; 1000]);
    }
}
